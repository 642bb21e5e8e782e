"""Threads sharing one Accountant: a run waiting (without the GIL) for a budget
file's lock holds nothing another thread needs, so threads that synthesize on one
accountant while another reads it all finish; the file is charged exactly the sum
of the accepted runs, and the others raise BudgetExceeded."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pandas as pd

import privq

TIMEOUT = 300  # seconds: a deadlock fails the test instead of hanging the suite


def _run_threads(df, domain, acct):
    stop = threading.Event()
    reads = []

    def reader():
        while not stop.is_set():
            reads.append(acct.spent.epsilon)
            acct.remaining
            acct.ledger()

    def run(i):
        try:
            privq.synthesize(df, domain, epsilon="1/2", accountant=acct, seed=i)
            return "accepted"
        except privq.BudgetExceeded:
            return "refused"

    watcher = threading.Thread(target=reader, daemon=True)
    watcher.start()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(run, i) for i in range(6)]
        outcomes = [f.result(timeout=TIMEOUT) for f in futures]
    stop.set()
    watcher.join(timeout=TIMEOUT)
    assert not watcher.is_alive()
    assert reads, "the reader ran"
    return outcomes


def test_threads_share_a_budget_file_accountant(data, domain, tmp_path):
    df = pd.DataFrame(data)
    acct = privq.Accountant(epsilon=2, delta=1e-6, budget_file=tmp_path / "budget.json")
    outcomes = _run_threads(df, domain, acct)
    accepted = outcomes.count("accepted")
    assert accepted == 4 and outcomes.count("refused") == 2, outcomes
    assert acct.spent.epsilon == Fraction(1, 2) * accepted
    assert len(acct.ledger()) == accepted


def test_threads_share_an_in_memory_accountant(data, domain):
    df = pd.DataFrame(data)
    acct = privq.Accountant(epsilon=2, delta=1e-6)
    outcomes = _run_threads(df, domain, acct)
    accepted = outcomes.count("accepted")
    assert accepted == 4 and outcomes.count("refused") == 2, outcomes
    assert acct.spent.epsilon == Fraction(1, 2) * accepted
    assert len(acct.ledger()) == accepted
