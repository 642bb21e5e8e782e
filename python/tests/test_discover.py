"""Private domain discovery from Python: `privq domain discover`'s release, charged
before anything is sampled, refused past the budget with nothing released."""

from __future__ import annotations

import subprocess

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq


def table(n: int = 600) -> pd.DataFrame:
    cities = ["Oslo", "Rome", "Lima", "Oslo", "Rome", "Oslo"]
    return pd.DataFrame({
        "city": [cities[i % 6] for i in range(n)] + ["Atlantis"],  # one rare value
        "smoker": [i % 2 for i in range(n)] + [1],
        "band": [f"b{i % 4}" for i in range(n)] + ["b9"],
    })


@pytest.mark.parametrize("seed, neighbours", [(1, "add-remove"), (7, "replace")])
def test_same_domain_as_the_program(privq_bin, tmp_path, seed, neighbours):
    df = table()
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    cli = subprocess.run(
        [str(privq_bin), "domain", "discover", "--input", str(csv), "--epsilon", "1/2",
         "--delta", "1e-6", "--neighbours", neighbours, "--seed", str(seed)],
        capture_output=True, text=True, check=False,
    )
    assert cli.returncode == 0, cli.stderr
    from_cli = privq.Domain.from_json(cli.stdout)
    for frame in (df, pl.from_pandas(df), pa.Table.from_pandas(df, preserve_index=False)):
        found = privq.discover_domain(frame, epsilon="1/2", delta=1e-6, neighbours=neighbours,
                                      seed=seed)
        assert found == from_cli
    assert found.columns == ["city", "smoker", "band"]
    # Frequent values kept, the value of one record not (δ = 1e-6).
    assert "Oslo" in found.values("city") and "Atlantis" not in found.values("city")
    assert found.values("smoker") == ["0", "1"] and "b9" not in found.values("band")


def test_charged_before_sampling_and_refused_past_the_budget():
    budget = privq.Accountant(epsilon=1, delta=1e-5)
    privq.discover_domain(table(), epsilon=0.75, delta=1e-6, accountant=budget, seed=2)
    assert budget.spent.epsilon == 0.75 and budget.spent.delta == 1e-6
    ledger = budget.ledger().to_pylist()
    assert [r["label"] for r in ledger] == ["privq.discover_domain"]
    assert ledger[0]["neighbours"] == "add-remove"
    with pytest.raises(privq.BudgetExceeded, match="nothing"):
        privq.discover_domain(table(), epsilon=0.5, accountant=budget, seed=2)
    # Refused: nothing charged, nothing released.
    assert budget.spent.epsilon == 0.75 and len(budget.ledger()) == 1
    # δ past the budget: the amounts are stated.
    tight = privq.Accountant(epsilon=5, delta=1e-7)
    with pytest.raises(privq.BudgetExceeded, match="needs δ = 1e-6"):
        privq.discover_domain(table(), epsilon=1, delta=1e-6, accountant=tight)
    assert len(tight.ledger()) == 0


def test_discovery_and_synthesis_share_one_accountant():
    budget = privq.Accountant(epsilon=2, delta=1e-5)
    df = table()
    domain = privq.discover_domain(df, epsilon=0.5, accountant=budget, seed=3)
    # The rare value is not in the domain: drop its rows, then release over it.
    keep = df[df["city"].isin(domain.values("city")) & df["band"].isin(domain.values("band"))]
    out = privq.synthesize(keep.astype({"smoker": "str"}), domain, epsilon=1, accountant=budget,
                           seed=3)
    assert list(out.columns) == ["city", "smoker", "band"]
    assert budget.spent.epsilon == 1.5 and len(budget.ledger()) == 2


def test_a_budget_file_is_charged(tmp_path):
    path = tmp_path / "budget.json"
    budget = privq.Accountant(epsilon=1, delta=1e-5, budget_file=path)
    privq.discover_domain(table(), epsilon=0.5, accountant=budget, seed=4)
    assert privq.Accountant(budget_file=path).spent.epsilon == 0.5
    with pytest.raises(privq.BudgetExceeded):
        privq.discover_domain(table(), epsilon=0.75, accountant=budget, seed=4)
    assert privq.Accountant(budget_file=path).spent.epsilon == 0.5


@pytest.mark.parametrize(
    "kwargs, error, needle",
    [
        (dict(epsilon=0), ValueError, "epsilon"),
        (dict(epsilon=-1), ValueError, "epsilon"),
        (dict(epsilon=float("nan")), ValueError, "finite"),
        (dict(epsilon=1, delta=0), ValueError, "delta"),
        (dict(epsilon=1, delta=1.5), ValueError, "delta"),
        (dict(epsilon=1, neighbours="sideways"), ValueError, "neighbours"),
        (dict(epsilon=1, accountant="budget"), TypeError, "Accountant"),
    ],
)
def test_bad_parameters_are_refused_before_anything_is_charged(kwargs, error, needle):
    with pytest.raises(error, match=needle):
        privq.discover_domain(table(), **kwargs)


def test_nothing_kept_is_an_error_after_the_charge():
    budget = privq.Accountant(epsilon=1, delta=1e-5)
    tiny = pd.DataFrame({"a": ["x", "y", "z"]})
    with pytest.raises(privq.PrivqError, match="a"):
        privq.discover_domain(tiny, epsilon=0.5, accountant=budget, seed=1)
    # The data were looked at: the charge stands.
    assert budget.spent.epsilon == 0.5
