"""privq.count/sum/mean/variance/quantile/histogram: one-aggregate queries of
privq.sql, written for the user — the same release for the same seed."""

from __future__ import annotations

import warnings

import pandas as pd
import polars as pl
import pytest

import privq


@pytest.fixture
def readings() -> pd.DataFrame:
    n = 600
    return pd.DataFrame(
        {
            "device": [f"d{i % 90}" for i in range(n)],
            "the region": ["north" if i % 3 else "south" for i in range(n)],
            'odd "name"': [float((i * 37) % 61) - 10.0 for i in range(n)],
        }
    )


KEYS = {"the region": ["north", "south"]}
COMMON = dict(privacy_unit="device", max_groups=2, max_rows=3, keys=KEYS, epsilon=1, seed=4)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        warnings.filterwarnings("ignore", "without a privacy unit", UserWarning)
        yield


def by_sql(df, select, **options):
    query = f'SELECT "the region", {select} FROM t GROUP BY "the region"'
    return privq.sql(query, {"t": df}, **options)


@pytest.mark.parametrize(
    "call, select, bounds",
    [
        (lambda df, **o: privq.count(df, **o), 'COUNT(*) AS "count"', None),
        (lambda df, **o: privq.sum(df, 'odd "name"', **o), 'SUM("odd ""name""") AS "sum"', (-10, 50)),
        (lambda df, **o: privq.mean(df, 'odd "name"', **o), 'AVG("odd ""name""") AS "mean"', (-10, 50)),
        (
            lambda df, **o: privq.variance(df, 'odd "name"', **o),
            'VARIANCE("odd ""name""") AS "variance"',
            (-10, 50),
        ),
        (
            lambda df, **o: privq.quantile(df, 'odd "name"', 0.25, **o),
            'QUANTILE("odd ""name""", 0.25) AS "quantile"',
            (-10, 50),
        ),
    ],
)
def test_each_statistic_is_its_sql_query(readings, call, select, bounds):
    extra = {} if bounds is None else {"bounds": bounds}
    got = call(readings, by="the region", **extra, **COMMON)
    want = by_sql(
        readings, select, **({} if bounds is None else {"bounds": {'odd "name"': bounds}}), **COMMON
    )
    pd.testing.assert_frame_equal(got, want)
    assert list(got["the region"]) == ["north", "south"]


def test_a_histogram_is_a_count_by_bin(readings):
    edges = [-10, 0.5, 20, 50]
    got = privq.histogram(readings, 'odd "name"', edges, by="the region", **COMMON)
    want = privq.sql(
        'SELECT "the region", BIN("odd ""name""", -10, 0.5, 20, 50) AS "bin", COUNT(*) AS "count" '
        'FROM t GROUP BY "the region", "bin"',
        {"t": readings},
        **COMMON,
    )
    pd.testing.assert_frame_equal(got, want)
    assert list(got["bin"]) == ["[-10, 0.5)", "[0.5, 20)", "[20, 50]"] * 2
    # Without groups: every bin, in edge order; an edge written with an exponent
    # in Python reaches the query as a plain literal.
    alone = privq.histogram(readings, 'odd "name"', [-1e1, 1e-3, 5e1], epsilon=1, seed=1)
    assert list(alone["bin"]) == ["[-10, 0.001)", "[0.001, 50]"]


def test_polars_in_polars_out_and_no_group(readings):
    out = privq.mean(pl.from_pandas(readings), 'odd "name"', bounds=(-10, 50), epsilon=1, seed=2)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == ["mean", "mean_lo", "mean_hi"]


def test_bad_calls_are_refused_and_charge_nothing(readings):
    budget = privq.Accountant(epsilon=1, delta=1e-6)
    with pytest.raises(TypeError, match="bounds"):
        privq.mean(readings, 'odd "name"', epsilon=1, accountant=budget)
    with pytest.raises(ValueError, match="bounds"):
        privq.sum(readings, 'odd "name"', bounds=None, epsilon=1, accountant=budget)
    with pytest.raises(ValueError, match="no column"):
        privq.mean(readings, "nope", bounds=(0, 1), epsilon=1, accountant=budget)
    with pytest.raises(ValueError, match="finite"):
        privq.histogram(readings, 'odd "name"', [0, float("nan")], epsilon=1, accountant=budget)
    with pytest.raises(ValueError, match="at least two"):
        privq.histogram(readings, 'odd "name"', [0], epsilon=1, accountant=budget)
    with pytest.raises(TypeError, match="column name"):
        privq.mean(readings, 3, bounds=(0, 1), epsilon=1, accountant=budget)
    with pytest.raises(ValueError, match="by"):
        privq.count(readings, by=[], epsilon=1, accountant=budget)
    with pytest.raises(ValueError):
        privq.quantile(readings, 'odd "name"', 1.5, bounds=(0, 1), epsilon=1, accountant=budget)
    assert budget.spent.epsilon == 0


def test_one_accountant_pays_for_every_statistic_and_refuses_past_it(readings):
    budget = privq.Accountant(epsilon=1, delta=1e-6)
    privq.count(readings, epsilon=0.5, accountant=budget)
    privq.mean(readings, 'odd "name"', bounds=(-10, 50), epsilon=0.5, accountant=budget)
    with pytest.raises(privq.BudgetExceeded):
        privq.count(readings, epsilon=0.1, accountant=budget)
    assert budget.spent.epsilon == 1


def test_the_builtin_sum_is_not_shadowed():
    # privq.sum is the private sum; Python's own still works inside the package.
    assert privq.sum is not sum
    assert sum([1, 2]) == 3
