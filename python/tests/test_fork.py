"""An in-memory Accountant does not survive a fork: in the child it refuses every
charge (each copy could otherwise spend the whole budget); a budget file's keeps
working, since the file is charged under its lock by every process."""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from fractions import Fraction

import pandas as pd
import pytest

import privq
from privq import _privq

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") and not sys.platform.startswith("linux"),  # Linux: always run
    reason="this platform has no os.fork",
)


@pytest.fixture
def df(data):
    return pd.DataFrame(data)


def in_child(body) -> dict:
    """Run ``body()`` in a forked child; its dict (or the error it raised) back."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fork in a process with threads, Polars' fork warning
        pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's cleanup
        code = 0
        try:
            try:
                result = {"ok": body()}
            except BaseException as e:
                result = {"error": type(e).__name__, "message": str(e),
                          "trace": traceback.format_exc()}
            os.write(write, json.dumps(result, default=str).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(b"".join(chunks))


def test_an_in_memory_accountant_refuses_every_charge_in_a_forked_child(df, domain):
    for acct in (privq.Accountant(epsilon=2, delta=1e-6), privq.Accountant.zcdp(rho=1, delta=1e-6)):
        def charge():
            privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1)
            return str(acct.spent)

        got = in_child(charge)
        assert got.get("error") == "PrivqError", got
        assert "fork" in got["message"] and "budget_file" in got["message"]
        # The parent's budget is whole, and it still charges here.
        assert acct.ledger().num_rows == 0
        privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1)
        assert acct.ledger().num_rows == 1


def test_the_extension_class_alone_refuses_in_a_forked_child(df, domain):
    # Made without the package's fork registry: refused by the process id check in Rust.
    inner = _privq.Accountant(2, 1e-6, None)
    acct = privq.Accountant.__new__(privq.Accountant)
    acct._inner = inner
    got = in_child(lambda: privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1))
    assert got.get("error") == "PrivqError" and "fork" in got["message"], got
    assert inner.spent()["epsilon"] is None


def test_a_budget_file_accountant_is_shared_across_a_fork(df, domain, tmp_path):
    path = tmp_path / "budget.json"
    acct = privq.Accountant(epsilon="3/2", delta=1e-6, budget_file=path)
    got = in_child(lambda: privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1).shape)
    assert "ok" in got, got
    assert acct.spent.epsilon == 1, "the child's charge is in the file"
    with pytest.raises(privq.BudgetExceeded):
        privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=2)
    privq.synthesize(df, domain, epsilon="1/2", accountant=acct, seed=2)
    assert acct.spent.epsilon == Fraction(3, 2)
