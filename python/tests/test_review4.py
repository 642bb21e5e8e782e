"""A hostile review of the Python additions: a budget file's path, links and
delta; sql's dry run on a declared schema only; MWEM's Ctrl-C message; an
impossible memory_mib; a bounds entry naming a missing column."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pytest

import privq

DF = pd.DataFrame({"x": [0, 1] * 50})


def spend(acct, eps="1/2"):
    privq.discover_domain(DF, epsilon=eps, accountant=acct, seed=1)


def charges(path):
    with open(path) as f:
        return [(c["epsilon"]["num"], c["epsilon"]["den"]) for c in json.load(f)["charges"]]


# ---- H1 / L1: a relative path, a deleted file and lock ----


def test_a_relative_budget_file_stays_the_same_file_after_chdir(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    acct = privq.Accountant(epsilon=1, delta=1e-3, budget_file="budget.json")
    spend(acct)
    monkeypatch.chdir(tmp_path / "b")
    spend(acct)
    with pytest.raises(privq.BudgetExceeded):
        spend(acct)
    assert charges(tmp_path / "a" / "budget.json") == [(1, 2), (1, 2)]
    assert not (tmp_path / "b" / "budget.json").exists()
    assert "budget.json" in repr(acct) and str(tmp_path / "a") in repr(acct)


def test_a_budget_file_deleted_with_its_lock_is_not_started_afresh(tmp_path):
    path = tmp_path / "c.json"
    acct = privq.Accountant(epsilon=1, delta=1e-3, budget_file=path)
    spend(acct)
    spend(acct)
    path.unlink()
    (tmp_path / "c.json.lock").unlink()
    with pytest.raises(privq.PrivqError, match="no longer exists .* afresh"):
        spend(acct)
    assert not path.exists()


# ---- L2: a hard link is not a second budget ----


@pytest.mark.skipif(sys.platform == "win32", reason="hard links counted on Unix")
def test_a_hard_linked_budget_file_is_refused(tmp_path):
    path = tmp_path / "d.json"
    acct = privq.Accountant(epsilon=1, delta=1e-3, budget_file=path)
    os.link(path, tmp_path / "d2.json")
    with pytest.raises(privq.PrivqError, match="2 hard links"):
        privq.Accountant(budget_file=tmp_path / "d2.json")
    with pytest.raises(privq.PrivqError, match="2 hard links"):
        spend(acct)
    assert charges(path) == []


# ---- L7: delta given with an existing file; no lock left by a refusal ----


def test_a_delta_other_than_the_files_is_refused(tmp_path):
    path = tmp_path / "e.json"
    privq.Accountant(epsilon=1, delta=1e-3, budget_file=path)
    with pytest.raises(ValueError, match="delta is not 0.5"):
        privq.Accountant(budget_file=path, delta=0.5)
    with pytest.raises(ValueError, match="delta is not 0:"):
        privq.Accountant(budget_file=path, delta=0)
    assert privq.Accountant(budget_file=path, delta=1e-3).budget.delta == 1e-3
    assert privq.Accountant(budget_file=path).budget.delta == 1e-3
    assert privq.Accountant(epsilon=1).budget.delta == 0.0


def test_a_refused_accountant_leaves_no_lock_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        privq.Accountant(budget_file=tmp_path / "nope.json")
    assert list(tmp_path.iterdir()) == []


# ---- M4: sql's dry run reads the declared schema only ----

Q = "SELECT region, COUNT(*) AS n FROM t GROUP BY region"


def test_a_dry_run_leaves_a_stream_unread_for_the_real_call():
    tbl = pa.table({"region": ["north", "south"] * 50})
    reader = pa.RecordBatchReader.from_batches(tbl.schema, tbl.to_batches())
    acct = privq.Accountant(epsilon=3)
    keys = {"region": ["north", "south"]}
    plan = privq.sql(Q, {"t": reader}, epsilon=1, keys=keys, dry_run=True, accountant=acct)
    assert plan["accepted"] is True and acct.spent.epsilon == 0
    with pytest.warns(UserWarning, match="privacy unit"):
        out = privq.sql(Q, {"t": reader}, epsilon=1, keys=keys, accountant=acct)
    assert out["region"].to_pylist() == ["north", "south"] and acct.spent.epsilon == 1
    assert 50 - 30 < out["n"][0].as_py() < 50 + 30


def test_a_dry_run_never_converts_values():
    for vals in ([1, 2] * 50, [1, 2.5] * 50, [1, "x"] * 50):
        df = pd.DataFrame({"region": pd.Series(vals, dtype=object)})
        plan = privq.sql(Q, {"t": df}, epsilon=1, keys={"region": [1, 2]}, dry_run=True)
        assert [m["measurement"] for m in plan["measurements"]] == ["count"]
    # A declared type still checks the keys, without a value read.
    df = pd.DataFrame({"region": [1, 2] * 50})
    with pytest.raises(ValueError, match="not a value of the column's type"):
        privq.sql(Q, {"t": df}, epsilon=1, keys={"region": [True]}, dry_run=True)
    with pytest.raises(ValueError, match="has no column"):
        privq.sql(Q, {"t": df.rename(columns={"region": "r"})}, epsilon=1,
                  keys={"region": [1]}, dry_run=True)


# ---- L4: a memory cap above the machine's memory ----


def test_a_histogram_the_machine_cannot_hold_is_a_memory_error(tmp_path):
    # In a child process: before the fix the allocation aborted the interpreter.
    code = (
        "import privq, pandas as pd\n"
        "dom = privq.Domain({f'c{i}': 2 for i in range(50)})\n"
        "df = pd.DataFrame({f'c{i}': [0] * 50 for i in range(50)})\n"
        "acct = privq.Accountant(epsilon=5)\n"
        "try:\n"
        "    privq.synthesize(df, dom, epsilon=1, mechanism='mwem', workload='parity:1',\n"
        "                     rounds=5, memory_mib=2**40, accountant=acct)\n"
        "except MemoryError as e:\n"
        "    print('MemoryError', e)\n"
        "print('spent', acct.spent.epsilon)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "MemoryError" in out.stdout and "could not be allocated" in out.stdout, out.stdout
    assert "nothing was charged" in out.stdout
    assert out.stdout.strip().endswith("spent 0")


# ---- L7: a bounds entry for a column the query does not aggregate ----


def test_bounds_for_a_column_not_aggregated_name_what_the_query_reads():
    df = pd.DataFrame({"region": ["a", "b"] * 10, "temp": [1.0] * 20})
    q = "SELECT region, AVG(temp) AS m FROM t GROUP BY region"
    # Whether or not the table has the column, as docs/src/python.md says.
    for other, table in [("tmp", df), ("tmp", df.assign(tmp=1.0))]:
        with pytest.raises(ValueError, match=r'aggregates no column "tmp" .* it reads "temp"'):
            privq.sql(q, {"t": table}, epsilon=1, keys={"region": ["a"]},
                      bounds={"temp": (0, 1), other: (0, 1)}, dry_run=True)
