"""privq.plan_synthesis: the library's dry run. It states what synthesize would
cost and do, charges nothing, samples nothing, and refuses what synthesize
refuses."""

from __future__ import annotations

import json
from fractions import Fraction

import pandas as pd
import pytest

import privq


def test_the_plan_is_what_the_release_costs(data, domain):
    df = pd.DataFrame(data)
    basic = privq.Accountant(epsilon=3, delta=1e-6)
    plan = privq.plan_synthesis(df, domain, epsilon="7/10", delta=1e-8, accountant=basic,
                                workload="marginals:2")
    assert basic.spent.epsilon == 0 and len(basic.ledger()) == 0, "planning charged nothing"
    assert plan.epsilon == Fraction(7, 10) and plan.delta == 1e-8
    assert plan.neighbours == "add-remove"
    assert (plan.rounds, plan.one_way_rounds, plan.max_rounds) == (48, 3, 192)
    assert plan.candidates == 6  # the 2-way marginals of 3 attributes and their 1-way ones
    assert plan.rows is None, "under add/remove the number of rows is hidden"
    assert plan.accepted is True and plan.charge is not None
    assert 0 < plan.measure_rho < plan.rho and plan.select_epsilon > 0
    privq.synthesize(df, domain, epsilon="7/10", delta=1e-8, accountant=basic,
                     workload="marginals:2", seed=3)
    assert basic.spent.epsilon == plan.epsilon
    assert basic.ledger().column("cost").to_pylist() == [plan.charge]
    # A zCDP session is charged exactly the plan's ρ.
    z = privq.Accountant.zcdp(rho=plan.rho, delta=1e-6)
    zplan = privq.plan_synthesis(df, domain, epsilon="7/10", delta=1e-8, accountant=z,
                                 workload="marginals:2")
    assert zplan.accepted is True and zplan.rho == plan.rho
    privq.synthesize(df, domain, epsilon="7/10", delta=1e-8, accountant=z,
                     workload="marginals:2", seed=4)
    assert z.spent.rho == plan.rho and z.remaining.rho == 0


def test_rows_are_known_only_where_they_are_public(data, domain):
    df = pd.DataFrame(data)
    assert privq.plan_synthesis(df, domain, epsilon=1, neighbours="replace").rows == len(df)
    assert privq.plan_synthesis(df, domain, epsilon=1, rows=17).rows == 17
    assert privq.plan_synthesis(df, domain, epsilon=1).rows is None


def test_a_plan_past_the_budget_says_so_and_the_release_is_refused(data, domain):
    df = pd.DataFrame(data)
    acct = privq.Accountant(epsilon=1, delta=1e-6)
    assert privq.plan_synthesis(df, domain, epsilon=2, accountant=acct).accepted is False
    with pytest.raises(privq.BudgetExceeded):
        privq.synthesize(df, domain, epsilon=2, accountant=acct, seed=1)
    # A pure accountant has no δ for this (ε, δ) release.
    pure = privq.Accountant(epsilon=5)
    assert privq.plan_synthesis(df, domain, epsilon=1, accountant=pure).accepted is False


def test_a_budget_file_is_not_asked_and_not_written(data, domain, tmp_path):
    path = tmp_path / "budget.json"
    acct = privq.Accountant(epsilon=2, delta=1e-6, budget_file=path)
    plan = privq.plan_synthesis(pd.DataFrame(data), domain, epsilon=1, accountant=acct)
    assert (plan.charge, plan.accepted) == (None, None)
    # The file was made with its Accountant, with no charge; the plan adds none.
    assert json.loads(path.read_text())["charges"] == []


@pytest.mark.parametrize(
    "change, error",
    [
        (dict(epsilon=0), ValueError),
        (dict(epsilon=-1), ValueError),
        (dict(epsilon=float("nan")), ValueError),
        (dict(delta=0.0), ValueError),
        (dict(delta=True), TypeError),
        (dict(workload="marginals:9"), ValueError),
        (dict(workload="parity"), ValueError),
        (dict(neighbours="bounded"), ValueError),
        (dict(mechanism="mwem"), ValueError),
        (dict(rows=-1), ValueError),
        (dict(accountant="lots"), TypeError),
    ],
)
def test_bad_input_is_refused_as_synthesize_refuses_it(data, domain, change, error):
    df = pd.DataFrame(data)
    args = dict(epsilon=1) | change
    with pytest.raises(error):
        privq.plan_synthesis(df, domain, **args)
    with pytest.raises(error):
        privq.synthesize(df, domain, **args)


def test_bad_data_is_refused_before_anything_is_charged(data, domain):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    bad = pd.DataFrame(data | {"city": ["Paris"] + data["city"][1:]})
    with pytest.raises(ValueError, match="Paris"):
        privq.plan_synthesis(bad, domain, epsilon=1, accountant=acct)
    extra = pd.DataFrame(data | {"zip": [1] * len(data["city"])})
    with pytest.raises(ValueError, match="zip"):
        privq.plan_synthesis(extra, domain, epsilon=1, accountant=acct)
    empty = pd.DataFrame(data).iloc[:0]
    with pytest.raises(ValueError):
        privq.plan_synthesis(empty, domain, epsilon=1, neighbours="replace")
    assert privq.plan_synthesis(empty, domain, epsilon=1).rows is None
    assert acct.spent.epsilon == 0


def test_the_plan_states_round_zeros_rhos_and_the_binning(data, domain):
    df = pd.DataFrame(data)
    plan = privq.plan_synthesis(df, domain, epsilon=1, workload="marginals:2")
    # One ρ per attribute, in the domain's order, within round 0's cap of max(d, T//4) rounds.
    assert plan.one_way_rhos is not None and len(plan.one_way_rhos) == plan.one_way_rounds == 3
    assert all(isinstance(r, Fraction) and r > 0 for r in plan.one_way_rhos)
    assert sum(plan.one_way_rhos) <= max(3, plan.rounds // 4) * plan.measure_rho
    assert plan.binning_rho is None, "no attribute is declared by its bounds only"
    # An attribute declared by its bounds only is binned privately first: its size, and
    # so round 0's shares, are known only after the binning.
    spec = {"attributes": [
        {"name": "city", "values": ["Oslo", "Rome", "Lima"]},
        {"name": "age", "bounds": [0, 120], "bins": 4},
        {"name": "smoker", "values": ["0", "1"]},
    ]}
    binned = privq.plan_synthesis(df, privq.Domain(spec), epsilon=1, workload="marginals:2")
    assert binned.one_way_rhos is None
    assert isinstance(binned.binning_rho, Fraction) and 0 < binned.binning_rho < binned.rho
