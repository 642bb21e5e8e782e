"""MWEM from Python: the release `privq synth --mechanism mwem` makes, through the
same library entry point, for the same data, domain and seed."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import polars as pl
import pytest

import privq

from conftest import SPEC


def cli_mwem(privq_bin, tmp_path, df, spec, *extra):
    csv = tmp_path / "in.csv"
    df.to_csv(csv, index=False)
    path = tmp_path / "domain.json"
    path.write_text(json.dumps(spec))
    cli = subprocess.run(
        [str(privq_bin), "synth", "--mechanism", "mwem", "--input", str(csv),
         "--domain", str(path), *extra],
        capture_output=True, text=True, check=False,
    )
    assert cli.returncode == 0, cli.stderr
    out = tmp_path / "cli.csv"
    out.write_text(cli.stdout)
    return pd.read_csv(out, dtype={"city": "str"}).astype(df.dtypes.to_dict())


@pytest.mark.parametrize("seed", [3, 11])
def test_same_output_as_the_program(data, privq_bin, tmp_path, seed):
    df = pd.DataFrame(data).astype({"age": "float64"})
    from_cli = cli_mwem(privq_bin, tmp_path, df, SPEC, "--epsilon", "1/2",
                        "--workload", "marginals:2", "--seed", str(seed))
    domain = privq.Domain(SPEC)
    out = privq.synthesize(df, domain, epsilon=0.5, mechanism="mwem",
                           workload="marginals:2", seed=seed)
    assert len(out) == len(df)  # n public under replace-one
    pd.testing.assert_frame_equal(out, from_cli)
    polars = privq.synthesize(pl.from_pandas(df), domain, epsilon="1/2", mechanism="mwem",
                              workload="marginals:2", seed=seed)
    assert isinstance(polars, pl.DataFrame)
    pd.testing.assert_frame_equal(polars.to_pandas(), from_cli, check_dtype=False)


def test_binary_default_workload_and_rounds_match_the_program(privq_bin, tmp_path):
    df = pd.DataFrame({f"a{i}": [(r * (i + 3)) % 5 % 2 for r in range(200)] for i in range(5)})
    spec = {c: 2 for c in df.columns}
    from_cli = cli_mwem(privq_bin, tmp_path, df, spec, "--epsilon", "1", "--rounds", "7",
                        "--records", "150", "--seed", "2")
    out = privq.synthesize(df, privq.Domain(spec), epsilon=1, mechanism="mwem", rounds=7,
                           rows=150, seed=2)
    assert len(out) == 150
    pd.testing.assert_frame_equal(out, from_cli)


def test_charged_pure_epsilon_before_it_runs(data, domain):
    df = pd.DataFrame(data)
    budget = privq.Accountant(epsilon="3/4")
    privq.synthesize(df, domain, epsilon=0.5, mechanism="mwem", workload="marginals:2",
                     accountant=budget, seed=1)
    assert budget.spent.epsilon == 0.5
    ledger = budget.ledger().to_pylist()
    assert [r["label"] for r in ledger] == ["privq.synthesize (mwem)"]
    assert ledger[0]["neighbours"] == "replace" and ledger[0]["delta"] == 0
    with pytest.raises(privq.BudgetExceeded, match="nothing"):
        privq.synthesize(df, domain, epsilon=0.5, mechanism="mwem", workload="marginals:2",
                         accountant=budget)
    assert budget.spent.epsilon == 0.5 and len(budget.ledger()) == 1
    # An accountant bound to add/remove (an adaptive release) refuses MWEM's relation.
    bound = privq.Accountant(epsilon=5, delta=1e-6)
    privq.synthesize(df, domain, epsilon=1, accountant=bound, seed=1)
    with pytest.raises(privq.PrivqError):
        privq.synthesize(df, domain, epsilon=1, mechanism="mwem", workload="marginals:2",
                         accountant=bound)
    assert len(bound.ledger()) == 1


def test_a_budget_file_is_charged(data, domain, tmp_path):
    path = tmp_path / "budget.json"
    budget = privq.Accountant(epsilon=1, budget_file=path)
    privq.synthesize(pd.DataFrame(data), domain, epsilon=0.5, mechanism="mwem",
                     workload="marginals:2", accountant=budget, seed=4)
    assert privq.Accountant(budget_file=path).spent.epsilon == 0.5


@pytest.mark.parametrize(
    "kwargs, error, needle",
    [
        (dict(epsilon=0), ValueError, "epsilon"),
        (dict(epsilon=1, neighbours="add-remove"), ValueError, "replace-one"),
        (dict(epsilon=1, workload="parity:2"), ValueError, "binary"),
        (dict(epsilon=1, workload="cliques:2"), ValueError, "workload"),
        (dict(epsilon=1, rounds=0), ValueError, "rounds"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_charged(data, domain, kwargs, error, needle):
    budget = privq.Accountant(epsilon=10)
    with pytest.raises(error, match=needle):
        privq.synthesize(pd.DataFrame(data), domain, mechanism="mwem", accountant=budget, **kwargs)
    assert len(budget.ledger()) == 0


def test_bad_data_is_refused_before_anything_is_charged(data, domain):
    budget = privq.Accountant(epsilon=10)
    bad = pd.DataFrame(data)
    bad.loc[3, "city"] = "Paris"
    with pytest.raises(ValueError, match="Paris"):
        privq.synthesize(bad, domain, epsilon=1, mechanism="mwem", workload="marginals:2",
                         accountant=budget)
    with pytest.raises(ValueError):
        privq.synthesize(pd.DataFrame(data).iloc[:0], domain, epsilon=1, mechanism="mwem",
                         workload="marginals:2", accountant=budget)
    assert len(budget.ledger()) == 0


def test_the_release_s_details_and_fit_sample(data, domain):
    df = pd.DataFrame(data)
    budget = privq.Accountant(epsilon=1)
    result = privq.synthesize(df, domain, epsilon=0.5, mechanism="mwem", workload="marginals:2",
                              rounds=6, seed=5, accountant=budget, return_result=True)
    assert result.mechanism == "mwem" and result.epsilon == privq.Accountant(epsilon=0.5).budget.epsilon
    assert result.delta == 0 and result.rho is None and result.rows == len(df)
    m = result.measurements
    assert list(m.columns) == ["step", "query", "value", "noise_scale"]
    assert 1 <= len(m) <= 6 and list(m["step"]) == list(range(1, len(m) + 1))
    assert (m["noise_scale"] > 0).all()
    assert "MWEM" in result.report_html()
    plain = privq.synthesize(df, domain, epsilon=0.5, mechanism="mwem", workload="marginals:2",
                             rounds=6, seed=5)
    pd.testing.assert_frame_equal(result.data, plain)
    # fit charges once; sample is free and reads no data.
    synth = privq.Synthesizer.create("mwem", epsilon=0.5, domain=domain, workload="marginals:2",
                                     accountant=budget, rounds=6)
    synth.fit(df)
    assert budget.spent.epsilon == 1
    more = synth.sample(2000, seed=3)
    assert len(more) == 2000 and list(more.columns) == list(df.columns)
    pd.testing.assert_frame_equal(more, synth.sample(2000, seed=3))
    assert set(more["city"]) <= {"Oslo", "Rome", "Lima"}
    assert budget.spent.epsilon == 1 and len(budget.ledger()) == 2
    with pytest.raises(privq.BudgetExceeded):
        synth.fit(df)
    with pytest.raises(ValueError, match="replace-one"):
        privq.Synthesizer.create("mwem", epsilon=1, domain=domain, neighbours="add-remove")
    with pytest.raises(ValueError, match="rounds"):
        privq.Synthesizer.create("adaptive", epsilon=1, domain=domain, rounds=3)
