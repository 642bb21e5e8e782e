"""The release's details (privq.Synthesis) and SmartNoise's shape
(privq.Synthesizer): fit charges once, sample is post-processing."""

from __future__ import annotations

import html.parser

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq


def test_return_result_keeps_the_table_and_adds_the_details(data, domain):
    df = pd.DataFrame(data)
    plain = privq.synthesize(df, domain, epsilon=1, seed=3)
    result = privq.synthesize(df, domain, epsilon=1, seed=3, return_result=True)
    assert isinstance(result, privq.Synthesis)
    # The same release: the table is what synthesize returns by default.
    pd.testing.assert_frame_equal(result.data, plain)
    assert result.rows == len(plain)
    m = result.measurements
    assert isinstance(m, pd.DataFrame)
    assert list(m.columns) == [
        "round", "marginal", "attributes", "cells", "sigma", "rho", "select_epsilon",
        "candidates", "annealed",
    ]
    # The one-way marginals first (round 0, no selection), then selected ones.
    one_way = m[m["round"] == 0]
    assert sorted(one_way["marginal"]) == sorted(domain.columns)
    assert one_way["select_epsilon"].isna().all()
    assert (m["sigma"] > 0).all()
    assert set(m.loc[m["round"] > 0, "attributes"]) <= {1, 2, 3}
    assert list(one_way["cells"]) == [domain.sizes[domain.columns.index(c)] for c in one_way["marginal"]]
    # The release's own ledger: every charge, ρ exact, stamped.
    ledger = result.ledger
    assert len(ledger) >= len(m)
    assert ledger["time"].notna().all()
    assert result.rho is not None and result.rho > 0
    assert 0 < result.epsilon <= 1


def test_details_come_in_the_input_kind(data, domain):
    out = privq.synthesize(pl.DataFrame(data), domain, epsilon=1, seed=2, return_result=True)
    assert isinstance(out.data, pl.DataFrame)
    assert isinstance(out.measurements, pl.DataFrame)
    assert isinstance(out.ledger, pl.DataFrame)
    arrow = privq.synthesize(pa.table(data), domain, epsilon=1, seed=2, return_result=True)
    assert isinstance(arrow.measurements, pa.Table)


class _Parser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list = []
        self.attrs: list = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)


def test_report_html_is_self_contained(data, domain):
    result = privq.synthesize(pd.DataFrame(data), domain, epsilon=1, seed=4, return_result=True)
    page = result.report_html()
    assert page.startswith("<!DOCTYPE html>")
    p = _Parser()
    p.feed(page)
    assert "table" in p.tags and "script" not in p.tags
    # No external asset: no src or href anywhere.
    assert not [a for a in p.attrs if a[0] in ("src", "href")]
    for column in domain.columns:
        assert column in page
    assert str(result.rho) in page


def test_sampling_more_is_free_and_does_not_read_the_data(data, domain):
    df = pd.DataFrame(data)
    budget = privq.Accountant(epsilon=1, delta=1e-6)
    synth = privq.Synthesizer.create("adaptive", epsilon=1, domain=domain, accountant=budget, seed=6)
    with pytest.raises(privq.PrivqError, match="not fitted"):
        synth.sample(10)
    assert synth.fit(df) is synth
    assert budget.spent.epsilon == 1
    charges = len(budget.ledger())
    # The data is gone: sampling works from the model alone.
    del df
    big = synth.sample(5000, seed=1)
    again = synth.sample(5000, seed=1)
    assert len(big) == 5000
    pd.testing.assert_frame_equal(big, again)
    assert list(big.columns) == ["city", "age", "smoker"]
    assert str(big["age"].dtype) == "int64"
    assert set(big["city"]) <= {"Oslo", "Rome", "Lima"}
    assert len(synth.sample(0)) == 0
    # Nothing more charged, however much is sampled.
    assert budget.spent.epsilon == 1 and len(budget.ledger()) == charges
    # The fitted synthesizer keeps no reference to the private table.
    assert not any(isinstance(v, pd.DataFrame) for v in vars(synth).values())
    assert not any(
        isinstance(v, (pd.DataFrame, pa.Table)) and v is not synth.result.data
        for v in vars(synth.result).values()
    )


def test_fitting_again_is_a_new_release_and_is_charged(data, domain):
    budget = privq.Accountant(epsilon="3/2", delta=1e-6)
    synth = privq.Synthesizer.create("adaptive", epsilon=1, domain=domain, accountant=budget)
    out = synth.fit_sample(pd.DataFrame(data))
    assert len(out) > 100 and budget.spent.epsilon == 1
    before = synth.sample(3)
    with pytest.raises(privq.BudgetExceeded):
        synth.fit(pd.DataFrame(data))
    # Refused: nothing charged, the fitted model kept.
    assert budget.spent.epsilon == 1
    assert len(synth.sample(3)) == len(before)


def test_fit_sample_equals_synthesize_for_the_same_seed(data, domain):
    df = pd.DataFrame(data)
    synth = privq.Synthesizer.create("adaptive", epsilon=1, domain=domain, seed=9)
    pd.testing.assert_frame_equal(
        synth.fit_sample(df), privq.synthesize(df, domain, epsilon=1, seed=9)
    )


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"epsilon": 0}, ValueError),
        ({"epsilon": -1}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
    ],
)
def test_bad_parameters_refused_at_fit(data, domain, kwargs, error):
    synth = privq.Synthesizer.create("adaptive", domain=domain, **kwargs)
    with pytest.raises(error):
        synth.fit(pd.DataFrame(data))


def test_bad_arguments_refused_at_create(domain):
    with pytest.raises(ValueError, match="mechanism"):
        privq.Synthesizer.create("aim", epsilon=1, domain=domain)
    with pytest.raises(TypeError, match="Domain"):
        privq.Synthesizer.create("adaptive", epsilon=1, domain={"a": 2})
    with pytest.raises(TypeError):
        privq.Synthesizer()
    with pytest.raises(TypeError):
        privq.Synthesis()


def test_sample_refuses_bad_counts(data, domain):
    synth = privq.Synthesizer.create("adaptive", epsilon=1, domain=domain, seed=1)
    synth.fit(pd.DataFrame(data))
    for n in (-1, 1.5, True):
        with pytest.raises(ValueError):
            synth.sample(n)
    with pytest.raises(ValueError, match="MiB"):
        synth.sample(10**12)


def test_private_binning_samples_spread_over_the_grid():
    # An attribute declared by its bounds only: the release chooses bins
    # privately; more rows are spread within the chosen bins, as the release's.
    df = pd.DataFrame({"age": [(i * 37) % 90 for i in range(400)], "s": [i % 2 for i in range(400)]})
    domain = privq.Domain({"attributes": [{"name": "age", "bounds": [0, 90], "integer": True},
                                          {"name": "s", "values": ["0", "1"]}]})
    synth = privq.Synthesizer.create("adaptive", epsilon=2, domain=domain, seed=4).fit(df)
    more = synth.sample(300, seed=2)
    assert len(more) == 300
    assert more["age"].between(0, 90).all()
    assert more["age"].nunique() > 5


def test_a_time_budget_is_checked_before_the_charge_and_spends_the_same(data, domain):
    df = pd.DataFrame(data)
    budget = privq.Accountant(epsilon=5, delta=1e-6)
    for bad in (0, -1.0, float("nan"), float("inf"), 1e300):
        with pytest.raises(ValueError, match="time budget must be a positive number"):
            privq.synthesize(df, domain, epsilon=1, accountant=budget, time_budget=bad)
        with pytest.raises(ValueError, match="time budget must be a positive number"):
            privq.plan_synthesis(df, domain, epsilon=1, time_budget=bad)
    for bad in ("1", True):
        with pytest.raises(ValueError, match="time_budget"):
            privq.synthesize(df, domain, epsilon=1, accountant=budget, time_budget=bad)
    with pytest.raises(ValueError, match="time_budget"):
        privq.Synthesizer.create("mwem", epsilon=1, domain=domain, time_budget=1)
    assert budget.spent.epsilon == 0
    # A budget shorter than any fit: one round after the one-way marginals,
    # charged in full, exactly as without a budget.
    quick = privq.synthesize(
        df, domain, epsilon=1, accountant=budget, time_budget=1e-9, return_result=True
    )
    assert quick.measurements["round"].max() == 1
    assert budget.spent.epsilon == 1
    synth = privq.Synthesizer.create(
        "adaptive", epsilon=1, domain=domain, accountant=budget, time_budget=1e-9
    )
    synth.fit(df)
    assert synth.result.measurements["round"].max() == 1
    assert budget.spent.epsilon == 2
    assert privq.plan_synthesis(df, domain, epsilon=1, time_budget=2.5).epsilon == 1
