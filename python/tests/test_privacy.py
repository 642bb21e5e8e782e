"""Bad input and budgets: the right exception, and nothing charged or released."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq


@pytest.fixture
def df(data):
    return pd.DataFrame(data)


def untouched(acct: privq.Accountant) -> None:
    assert acct.spent.epsilon == 0
    assert acct.ledger().num_rows == 0


@pytest.mark.parametrize(
    "epsilon, match",
    [
        (0, "zero|positive"),
        (0.0, "zero|positive"),
        (-1, "positive|negative"),
        (-0.5, "positive|negative"),
        (math.nan, "finite"),
        (math.inf, "finite"),
        ("nan", "finite"),
        ("abc", "parse"),
        ("1/0", "denominator"),
    ],
)
def test_bad_epsilon_is_a_value_error_and_charges_nothing(df, domain, epsilon, match):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    with pytest.raises(ValueError, match=match):
        privq.synthesize(df, domain, epsilon=epsilon, accountant=acct, seed=1)
    untouched(acct)
    with pytest.raises(ValueError):
        privq.Accountant(epsilon=epsilon)


def test_epsilon_is_exact(df, domain):
    assert privq.Accountant(epsilon=0.1).budget.epsilon == Fraction(1, 10)
    assert privq.Accountant(epsilon="1/3").budget.epsilon == Fraction(1, 3)
    assert privq.Accountant(epsilon=Fraction(2, 7)).budget.epsilon == Fraction(2, 7)
    assert privq.Accountant(epsilon=Decimal("0.25")).budget.epsilon == Fraction(1, 4)
    assert privq.Accountant(epsilon=1e-7).budget.epsilon == Fraction(1, 10**7)
    with pytest.raises(TypeError):
        privq.Accountant(epsilon=True)
    acct = privq.Accountant(epsilon="3/10", delta=1e-6)
    privq.synthesize(df, domain, epsilon=0.1, accountant=acct, seed=1)
    privq.synthesize(df, domain, epsilon="1/5", accountant=acct, seed=1)
    assert acct.spent.epsilon == Fraction(3, 10), "0.1 + 1/5 is exactly 3/10"
    assert acct.remaining.epsilon == 0


@pytest.mark.parametrize("delta", [0.0, -1e-9, 1.0, math.nan])
def test_bad_delta_is_a_value_error(df, domain, delta):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    with pytest.raises(ValueError, match="δ|delta"):
        privq.synthesize(df, domain, epsilon=1, delta=delta, accountant=acct)
    untouched(acct)


def test_unknown_and_missing_columns(df, domain):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    with pytest.raises(ValueError, match='"id"'):
        privq.synthesize(df.assign(id=range(len(df))), domain, epsilon=1, accountant=acct)
    with pytest.raises(ValueError, match='no column "smoker"'):
        privq.synthesize(df.drop(columns="smoker"), domain, epsilon=1, accountant=acct)
    untouched(acct)


def test_a_value_outside_the_domain_names_column_row_and_value(df, domain):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    bad = df.copy()
    bad.loc[17, "city"] = "Paris"
    with pytest.raises(ValueError, match=r'column "city", row 17: the value "Paris" is not in the domain'):
        privq.synthesize(bad, domain, epsilon=1, accountant=acct)
    smoker = pl.DataFrame(df).with_columns(pl.col("smoker").replace(1, 2))
    with pytest.raises(ValueError, match=r'column "smoker", row \d+: the value "2"'):
        privq.synthesize(smoker, domain, epsilon=1, accountant=acct)
    # pandas stores a missing float as NaN, which Arrow reads as null: a missing value.
    missing = df.astype({"age": "float64"})
    missing.loc[3, "age"] = math.nan
    with pytest.raises(ValueError, match=r'column "age", row 3: missing value'):
        privq.synthesize(missing, domain, epsilon=1, accountant=acct)
    # A real NaN (or infinity) in an Arrow float column is not a number to bin.
    ages = [float(a) for a in df["age"]]
    ages[4] = math.inf
    table = pa.table({"city": df["city"], "age": ages, "smoker": df["smoker"]})
    with pytest.raises(ValueError, match=r'column "age", row 4: inf is not a finite number'):
        privq.synthesize(table, domain, epsilon=1, accountant=acct)
    null = df.astype({"city": "str"})
    null.loc[5, "city"] = None
    with pytest.raises(ValueError, match=r'column "city", row 5: missing value'):
        privq.synthesize(null, domain, epsilon=1, accountant=acct)
    untouched(acct)


def test_a_column_type_that_cannot_hold_the_domain_is_refused_first(df):
    domain = privq.Domain({"attributes": [
        {"name": "city", "values": ["Oslo", "Rome", "Lima"]},
        {"name": "age", "edges": [0, 18, 65, 120]},
        {"name": "smoker", "values": ["0", "1", "unknown"]},
    ]})
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    with pytest.raises(ValueError, match="smoker"):
        privq.synthesize(df, domain, epsilon=1, accountant=acct)
    untouched(acct)


def test_bad_parameters(df, domain):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    for kwargs in [
        {"mechanism": "mwem"},
        {"workload": "parity:3"},
        {"workload": "marginals:0"},
        {"workload": "marginals:4"},
        {"neighbours": "swap"},
        {"seed": -1},
        {"rows": -5},
    ]:
        with pytest.raises(ValueError):
            privq.synthesize(df, domain, epsilon=1, accountant=acct, **kwargs)
    with pytest.raises(TypeError):
        privq.synthesize(df, json.loads(json.dumps({"a": 2})), epsilon=1)
    with pytest.raises(TypeError):
        privq.synthesize([1, 2, 3], domain, epsilon=1)
    untouched(acct)


def test_an_accountant_shared_by_two_calls_refuses_past_its_cap(df, domain):
    acct = privq.Accountant(epsilon=1.5, delta=1e-6)
    privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1)
    assert acct.spent == privq.Budget(Fraction(1), 1e-9, None)
    with pytest.raises(privq.BudgetExceeded, match="nothing was charged"):
        privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=2)
    assert isinstance(privq.BudgetExceeded("x"), privq.PrivqError)
    assert acct.spent.epsilon == 1 and acct.ledger().num_rows == 1
    privq.synthesize(df, domain, epsilon=0.5, accountant=acct, seed=3)
    assert acct.remaining.epsilon == 0
    ledger = acct.ledger().to_pandas()
    assert list(ledger["epsilon"]) == ["1", "1/2"]
    assert list(ledger["label"]) == ["privq.synthesize (adaptive)"] * 2
    assert list(ledger["neighbours"]) == ["add-remove"] * 2


def test_a_pure_accountant_has_no_delta_for_an_approximate_release(df, domain):
    acct = privq.Accountant(epsilon=5)
    with pytest.raises(privq.BudgetExceeded, match="delta=0 takes pure"):
        privq.synthesize(df, domain, epsilon=1, accountant=acct)
    untouched(acct)


def test_a_zcdp_accountant_adds_rho_exactly(df, domain):
    one = privq.Accountant.zcdp(rho=1, delta=1e-6)
    privq.synthesize(df, domain, epsilon=1, delta=1e-9, accountant=one, seed=1)
    run_rho = one.spent.rho
    assert 0 < run_rho < Fraction(1, 10)
    two = privq.Accountant.zcdp(rho=2 * run_rho, delta=1e-6)
    privq.synthesize(df, domain, epsilon=1, accountant=two, seed=1)
    privq.synthesize(df, domain, epsilon=1, accountant=two, seed=2)
    assert two.remaining.rho == 0
    with pytest.raises(privq.BudgetExceeded):
        privq.synthesize(df, domain, epsilon=1, accountant=two, seed=3)
    assert two.ledger().num_rows == 2
    with pytest.raises(ValueError):
        privq.Accountant.zcdp(rho=0, delta=1e-6)
    with pytest.raises(ValueError):
        privq.Accountant.zcdp(rho=1, delta=0)


def test_relations_do_not_mix(df, domain):
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1, neighbours="replace")
    with pytest.raises(privq.PrivqError, match="bound"):
        privq.synthesize(df, domain, epsilon=1, accountant=acct, seed=1)
    assert acct.spent.epsilon == 1


def test_a_budget_file_survives_a_new_accountant(df, domain, tmp_path):
    path = tmp_path / "budget.json"
    first = privq.Accountant(epsilon="3/2", delta=1e-6, budget_file=path)
    # Created with its Accountant: the cap is on disk before the first charge.
    assert first.spent.epsilon == 0 and json.loads(path.read_text())["charges"] == []
    privq.synthesize(df, domain, epsilon=1, accountant=first, seed=1)
    stored = json.loads(path.read_text())
    assert stored["format"] == "privq-budget" and len(stored["charges"]) == 1

    # A new process would do exactly this: the file's cap and charges hold.
    again = privq.Accountant(budget_file=str(path))
    assert again.budget.epsilon == Fraction(3, 2)
    assert again.spent.epsilon == 1
    assert again.ledger().column("label").to_pylist() == ["privq.synthesize (adaptive)"]
    with pytest.raises(privq.BudgetExceeded):
        privq.synthesize(df, domain, epsilon=1, accountant=again, seed=2)
    assert json.loads(path.read_text()) == stored, "a refused charge writes nothing"
    privq.synthesize(df, domain, epsilon=0.5, accountant=again, seed=3)
    assert first.spent.epsilon == Fraction(3, 2), "both read the same file"
    assert first.remaining.epsilon == 0

    with pytest.raises(ValueError, match="cap"):
        privq.Accountant(epsilon=2, delta=1e-6, budget_file=path)
    with pytest.raises(ValueError, match="does not exist"):
        privq.Accountant(budget_file=tmp_path / "none.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(privq.PrivqError, match="not a privq budget file"):
        privq.Accountant(budget_file=tmp_path / "other.json")


@pytest.mark.parametrize(
    "values", [["0", "1", "2"], ["1", "2"], ["no", "yes"], ["0"], ["false", "true"]]
)
def test_a_bool_column_needs_the_values_0_and_1(df, values):
    domain = privq.Domain({"attributes": [
        {"name": "city", "values": ["Oslo", "Rome", "Lima"]},
        {"name": "age", "edges": [0, 18, 65, 120]},
        {"name": "smoker", "values": values},
    ]})
    acct = privq.Accountant(epsilon=5, delta=1e-6)
    flags = df.assign(smoker=df["smoker"].astype(bool))
    for frame in (flags, pl.from_pandas(flags), pa.Table.from_pandas(flags, preserve_index=False)):
        with pytest.raises(ValueError, match="'smoker'.*boolean"):
            privq.synthesize(frame, domain, epsilon=1, accountant=acct, seed=1)
    untouched(acct)


def test_a_bool_column_with_0_and_1_round_trips(df):
    for values in (["0", "1"], ["1", "0"]):
        domain = privq.Domain({"attributes": [
            {"name": "city", "values": ["Oslo", "Rome", "Lima"]},
            {"name": "age", "edges": [0, 18, 65, 120]},
            {"name": "smoker", "values": values},
        ]})
        flags = df.assign(smoker=df["smoker"].astype(bool))
        out = privq.synthesize(flags, domain, epsilon=1, seed=1, neighbours="replace")
        assert out["smoker"].dtype == bool
        assert out["smoker"].any() and not out["smoker"].all()


def _columns(df, domain):
    from privq._frames import to_columns

    return to_columns(df, domain)[2]


def test_the_internal_release_returns_n_only_when_it_is_public(df, domain):
    args = (None, None, 1)  # rows, accountant, seed
    _, info, fitted = privq._privq._synthesize(
        _columns(df, domain), domain._inner, 1, 1e-9, None, "add-remove", *args
    )
    assert "records_in" not in info, "n is private under add/remove neighbours"
    # The fitted model offers sampling only: nothing of the table or its n.
    assert [a for a in dir(fitted) if not a.startswith("_")] == ["sample"]
    _, info, _ = privq._privq._synthesize(
        _columns(df, domain), domain._inner, 1, 1e-9, None, "replace", *args
    )
    assert info["records_in"] == len(df)


def test_numpy_numbers_are_read_exactly(df, domain):
    np = pytest.importorskip("numpy")
    assert privq.Accountant(epsilon=np.float64(0.1)).budget.epsilon == Fraction(1, 10)
    assert privq.Accountant(epsilon=np.float64(1e-7)).budget.epsilon == Fraction(1, 10**7)
    assert privq.Accountant(epsilon=np.int64(3)).budget.epsilon == 3
    # A float32 is the double it holds, exactly (not 1/10).
    f32 = privq.Accountant(epsilon=np.float32(0.1)).budget.epsilon
    assert f32 == Fraction(float(np.float32(0.1)).__repr__())
    assert privq.Accountant.zcdp(rho=np.float64(0.5), delta=np.float64(1e-6)).budget.rho == Fraction(1, 2)
    # The extension module reads a float subclass by float.__repr__, not its own repr.
    assert privq._privq.Accountant(np.float64(0.1), 0.0, None).budget()["epsilon"] == (1, 10)
    acct = privq.Accountant(epsilon="3/10", delta=np.float64(1e-6))
    privq.synthesize(df, domain, epsilon=np.float64(0.1), delta=np.float64(1e-9), accountant=acct, seed=1)
    privq.synthesize(df, domain, epsilon=np.float64(0.2), accountant=acct, seed=1)
    assert acct.spent.epsilon == Fraction(3, 10)
    for bad, exc in [
        (np.bool_(True), TypeError),
        (np.float64("nan"), ValueError),
        (np.float64("inf"), ValueError),
        (np.float64(0), ValueError),
        (np.float64(-0.5), ValueError),
        (np.int64(0), ValueError),
        (np.int64(-1), ValueError),
    ]:
        with pytest.raises(exc):
            privq.Accountant(epsilon=bad)
        with pytest.raises(exc):
            privq.synthesize(df, domain, epsilon=bad, accountant=acct, seed=1)
        with pytest.raises(exc):
            privq.Accountant.zcdp(rho=bad, delta=1e-6)
    with pytest.raises(TypeError):
        privq.synthesize(df, domain, epsilon=1, delta=np.bool_(False), accountant=acct)
    assert acct.ledger().num_rows == 2
