"""The rest of issue 30: a budget file created with its Accountant, MWEM's
arguments checked at create (and its memory cap), the cast-to-int hint, privq.sql's
column check and dry run, concise ldp messages, Ctrl-C in MWEM."""

from __future__ import annotations

import _thread
import json
import re
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import privq
from privq import ldp

# ---- 2. the budget file, created with its Accountant ----


def test_the_budget_file_is_created_with_the_accountant(tmp_path):
    path = tmp_path / "budget.json"
    privq.Accountant(epsilon="3/2", delta=1e-6, budget_file=path)
    assert path.is_file(), "the file exists before any charge"
    data = json.loads(path.read_text())
    assert data["charges"] == []
    # Another process opens it without repeating the cap.
    code = (
        "import privq, sys; a = privq.Accountant(budget_file=sys.argv[1]); "
        "print(a.budget.epsilon, a.budget.delta, a.spent.epsilon)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3/2", "1e-06", "0"]
    # The same cap again is fine; another is refused, the file unchanged.
    privq.Accountant(epsilon=Fraction(3, 2), delta=1e-6, budget_file=path)
    before = path.read_bytes()
    for eps, delta in [(2, 1e-6), ("3/2", 0.0)]:
        with pytest.raises(ValueError, match="has the cap .* fixed when its file is created"):
            privq.Accountant(epsilon=eps, delta=delta, budget_file=path)
    assert path.read_bytes() == before


def test_a_missing_budget_file_without_a_cap_is_refused(tmp_path):
    path = tmp_path / "none.json"
    with pytest.raises(ValueError, match="does not exist: give epsilon"):
        privq.Accountant(budget_file=path)
    assert not path.exists()
    with pytest.raises(ValueError, match="epsilon"):
        privq.Accountant(epsilon=0, budget_file=path)
    assert not path.exists()
    not_ours = tmp_path / "other.json"
    not_ours.write_text('{"hello": 1}')
    with pytest.raises(privq.PrivqError, match="budget file"):
        privq.Accountant(epsilon=1, budget_file=not_ours)
    assert not_ours.read_text() == '{"hello": 1}'


def test_a_deleted_budget_file_is_not_started_afresh(tmp_path):
    path = tmp_path / "budget.json"
    privq.Accountant(epsilon=1, budget_file=path)
    path.unlink()
    with pytest.raises(privq.PrivqError, match="missing|deleted|gone"):
        privq.Accountant(epsilon=1, budget_file=path)


# ---- 3. MWEM's workload and memory cap at create ----

BINARY = privq.Domain({"a": 2, "b": 2, "c": 2})


def test_mwem_checks_its_workload_at_create():
    city = privq.Domain({"city": 3, "smoker": 2})
    with pytest.raises(ValueError, match="needs a binary"):
        privq.Synthesizer.create("mwem", epsilon=1, domain=city)
    with pytest.raises(ValueError, match="needs a binary"):
        privq.Synthesizer.create("mwem", epsilon=1, domain=city, workload="conjunctions:2")
    with pytest.raises(ValueError, match="MWEM answers"):
        privq.Synthesizer.create("mwem", epsilon=1, domain=BINARY, workload="wide:2")
    with pytest.raises(ValueError, match="workload"):
        privq.Synthesizer.create("mwem", epsilon=1, domain=BINARY, workload="marginals:0")
    privq.Synthesizer.create("mwem", epsilon=1, domain=city, workload="marginals:2")
    privq.Synthesizer.create("mwem", epsilon=1, domain=BINARY)


def test_mwem_takes_a_memory_cap():
    df = pd.DataFrame({"a": [0, 1] * 20, "b": [1, 1, 0, 0] * 10, "c": [0] * 40})
    s = privq.Synthesizer.create("mwem", epsilon=1, domain=BINARY, seed=1, memory_mib=1)
    out = s.fit_sample(df)
    assert len(out) == 40 and list(out.columns) == ["a", "b", "c"]
    same = privq.synthesize(df, BINARY, epsilon=1, mechanism="mwem", seed=1, memory_mib=1)
    assert same.equals(out)
    # 1 MiB holds 2^17 cells of 8 bytes at most: a domain past it is refused, uncharged.
    big = privq.Domain({f"x{i}": 2 for i in range(18)})
    acct = privq.Accountant(epsilon=1)
    wide = pd.DataFrame({f"x{i}": [0, 1] for i in range(18)})
    with pytest.raises(ValueError, match="MiB|memory"):
        privq.synthesize(wide, big, epsilon=1, mechanism="mwem", memory_mib=1, accountant=acct,
                         workload="marginals:1")
    assert acct.spent.epsilon == 0
    with pytest.raises(ValueError, match="rows = .*memory_mib"):
        privq.synthesize(df, BINARY, epsilon=1, mechanism="mwem", memory_mib=1, rows=200_000)
    with pytest.raises(ValueError, match="n = .*memory_mib"):
        s.sample(100_000)
    for bad in [0, -1, 1.5, True]:
        with pytest.raises(ValueError, match="memory_mib"):
            privq.Synthesizer.create("mwem", epsilon=1, domain=BINARY, memory_mib=bad)
    with pytest.raises(ValueError, match="memory_mib: MWEM's"):
        privq.synthesize(df, BINARY, epsilon=1, memory_mib=64)


# ---- 4. a float column of whole numbers: cast it ----


def test_a_float_column_of_whole_numbers_says_cast_it():
    domain = privq.Domain({"attributes": [{"name": "age", "values": ["30", "40"]},
                                          {"name": "smoker", "values": ["0", "1"]}]})
    df = pd.DataFrame({"age": [30.0, 40.0] * 20, "smoker": [0, 1] * 20})
    acct = privq.Accountant(epsilon=1, delta=1e-6)
    with pytest.raises(ValueError) as info:
        privq.synthesize(df, domain, epsilon=1, accountant=acct)
    message = str(info.value)
    assert "'age'" in message or '"age"' in message
    assert "float64" in message and 'df["age"].astype("int64")' in message, message
    assert acct.spent.epsilon == 0
    # Polars users get theirs too, and the cast works.
    with pytest.raises(ValueError, match=r'pl.col\("age"\).cast\(pl.Int64\)'):
        privq.synthesize(pl.from_pandas(df), domain, epsilon=1)
    df["age"] = df["age"].astype("int64")
    privq.synthesize(df, domain, epsilon=1, seed=2)
    # A value that is not a whole float gets the plain message.
    df2 = pd.DataFrame({"age": [30.5, 40.0], "smoker": [0, 1]})
    with pytest.raises(ValueError, match="is not in the domain$"):
        privq.synthesize(df2, domain, epsilon=1)


# ---- 5. privq.sql: unknown columns first; the dry run ----

READINGS = pd.DataFrame({
    "device": [f"d{i % 50}" for i in range(200)],
    "region": ["north", "south"] * 100,
    "temp": [float(i % 30) for i in range(200)],
})


def test_sql_reports_an_unknown_column_before_its_bounds():
    cases = [
        ("SELECT AVG(tmp) AS m FROM r", {}, "tmp"),
        ("SELECT regoin, COUNT(*) AS n FROM r GROUP BY regoin", {}, "regoin"),
        ("SELECT COUNT(*) AS n FROM r WHERE tmp > 3", {}, "tmp"),
        ("SELECT COUNT(*) AS n FROM r", {"privacy_unit": "dev"}, "dev"),
    ]
    for query, kwargs, column in cases:
        with pytest.raises(ValueError, match=f"no column '{column}'|no column \"{column}\"") as info:
            privq.sql(query, {"r": READINGS}, epsilon=1, **kwargs)
        assert "bounds" not in str(info.value).split("(")[0], str(info.value)
        assert "device, region, temp" in str(info.value)


def test_sql_dry_run_states_the_plan_without_reading_or_charging():
    acct = privq.Accountant(epsilon=1)
    # Values that would be refused if they were read: the dry run does not read them.
    unread = READINGS.assign(temp=[float("nan")] * 200)
    plan = privq.sql(
        "SELECT region, COUNT(*) AS n, AVG(temp) AS t, QUANTILE(temp, 0.5) AS q FROM r "
        "GROUP BY region",
        {"r": unread}, epsilon=1, privacy_unit="device", max_rows=2,
        bounds={"temp": (0, 40)}, keys={"region": ["north", "south"]}, accountant=acct,
        dry_run=True,
    )
    assert acct.spent.epsilon == 0 and len(acct.ledger()) == 0
    assert plan["epsilon"] == 1 and plan["epsilon_share"] == Fraction(1, 3)
    assert plan["delta"] == 0 and plan["groups"] == "public" and plan["threshold"] is None
    assert plan["privacy_unit"] == "device" and (plan["max_groups"], plan["max_rows"]) == (1, 2)
    assert plan["neighbours"] == "add-remove" and plan["accepted"] is True
    assert plan["aggregates"] == [("n", "COUNT(*)"), ("t", "AVG(temp)"),
                                  ("q", "QUANTILE(temp, 0.5)")]
    kinds = [(m["measurement"], m["column"], m["level"]) for m in plan["measurements"]]
    assert kinds == [("count", None, None), ("centred sum", "temp", None),
                     ("quantile", "temp", 0.5)]
    assert plan["measurements"][0]["noise_scale"] == 6.0  # 2 rows / (1/3)
    assert all(m["epsilon"] == Fraction(1, 3) for m in plan["measurements"])
    assert plan["warnings"] == []
    [(name, ranks)] = plan["quantile_rank_errors"]
    assert name == "q" and 0 < ranks < 10_000, plan["quantile_rank_errors"]
    # Privately selected groups: δ, a threshold, the selection's share; a
    # budget too small is said, not charged.
    small = privq.Accountant(epsilon="1/2", delta=1e-5)
    plan = privq.sql("SELECT region, COUNT(*) AS n FROM r GROUP BY region", {"r": READINGS},
                     epsilon=1, delta=1e-6, accountant=small, dry_run=True)
    assert plan["groups"] == "private" and plan["threshold"] > 0
    assert plan["epsilon_share"] == Fraction(1, 2) and plan["delta"] == 1e-6
    assert plan["accepted"] is False and small.spent.epsilon == 0
    assert plan["warnings"], "no privacy unit: the release would warn"
    # A bad request is refused as the release refuses it.
    with pytest.raises(ValueError, match="no bounds"):
        privq.sql("SELECT AVG(temp) AS t FROM r", {"r": READINGS}, epsilon=1, dry_run=True)
    with pytest.raises(ValueError, match="no column"):
        privq.sql("SELECT AVG(x) AS t FROM r", {"r": READINGS}, epsilon=1, dry_run=True)


# ---- 6. concise ldp messages ----


def test_ldp_messages_are_one_sentence():
    with pytest.raises(ValueError) as info:
        ldp.Campaign("oue", epsilon=0, domain=8)
    assert str(info.value).startswith("campaign epsilon: ")
    assert "epsilon: epsilon:" not in str(info.value), str(info.value)
    with pytest.raises(ValueError) as info:
        ldp.Campaign.from_json("{not json")
    assert str(info.value).startswith("campaign: not a valid campaign file"), str(info.value)
    c = ldp.Campaign("oue", epsilon=1, domain=8)
    reports = ldp.simulate(list(range(8)) * 5, c, seed=1)
    for bad in [b"", reports[:-3] + b"", b"\xff" * 50]:
        try:
            with warnings_as_errors():
                ldp.aggregate(bad, c, strict=True)
        except ldp.ReportError as e:
            message = str(e)
            assert "\n" not in message and "privq:" not in message, message
            assert "report(s) aggregated" in message, message
            assert e.summary.startswith("privq:")
        else:
            raise AssertionError("no error")
    with pytest.warns(ldp.ReportsRejectedWarning) as record:
        ldp.aggregate(reports[:-3], c)
    message = str(record[0].message)
    assert "\n" not in message and message.startswith("some frames were rejected"), message
    assert "first problem at reports[0]: byte" in message, message


class warnings_as_errors:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


# ---- 7. Ctrl-C stops MWEM ----


def test_ctrl_c_interrupts_mwem():
    attrs = 16
    domain = privq.Domain({f"a{j}": 2 for j in range(attrs)})
    n = 2000
    df = pd.DataFrame({f"a{j}": [(i >> (j % 11)) & 1 for i in range(n)] for j in range(attrs)})
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    acct = privq.Accountant(epsilon=3)
    fired = threading.Event()

    def interrupt():
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(0.5, interrupt)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            privq.synthesize(df, domain, epsilon=1, mechanism="mwem", rounds=100_000,
                             workload="marginals:2", accountant=acct)
            fired.wait(5)
            time.sleep(1)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    stopped = time.monotonic() - started
    last = info.traceback[-1]
    assert Path(str(last.path)).name == "__init__.py" and "_synthesize_mwem" in str(
        last.statement
    ), "the release finished before the interrupt: make it longer"
    assert stopped < 10, f"MWEM took {stopped:.1f} s to stop"
    assert acct.spent.epsilon == 1, "the charge made before the run is kept"
    message = str(info.value)
    assert re.search(r"stopped \(Ctrl-C\) before round \d+: nothing was released", message)
    assert "charge stays spent" in message
    assert isinstance(info.value.__cause__, KeyboardInterrupt)
    assert len(acct.ledger()) == 1
