"""Review 2 and the new user's trial: what a fitted release keeps, seeds,
stamps, discovery's refusals, budget files, missing values and messages."""

from __future__ import annotations

import warnings

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq

RARE = "Zanzibar"


def _leaks(obj, needle, seen=None, path="obj"):
    """Paths inside ``obj`` (attributes, containers, Arrow schemas and their
    metadata, pandas/Polars types) where ``needle`` appears."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    found = []
    if isinstance(obj, pa.Schema):
        if obj.metadata:
            found.append(f"{path}.metadata")
        for f in obj:
            if f.metadata:
                found.append(f"{path}.{f.name}.metadata")
        text = obj.to_string(show_schema_metadata=True, show_field_metadata=True)
        return found + ([path] if needle in text or "num_categories" in text else [])
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += _leaks(k, needle, seen, f"{path}[key]")
            found += _leaks(v, needle, seen, f"{path}[{k!r}]")
        return found
    if isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            found += _leaks(v, needle, seen, f"{path}[{i}]")
        return found
    if isinstance(obj, (pd.DataFrame, pl.DataFrame, pa.Table)):
        # The released rows and details are public; they hold domain values only.
        return found + ([path] if needle in str(obj) else [])
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        for k, v in vars(obj).items():
            found += _leaks(v, needle, seen, f"{path}.{k}")
    if hasattr(obj, "categories"):
        found += [path] if needle in repr(list(obj.categories)) else []
    return found + ([path] if needle in repr(obj) else [])


def test_a_fitted_synthesizer_keeps_no_category_of_the_private_table(data, domain):
    df = pd.DataFrame(data)
    # A categorical built from a larger private table: it lists a rare value no
    # released row holds, and pandas' schema metadata counts its categories.
    df["city"] = pd.Categorical(df["city"], categories=["Lima", "Oslo", "Rome", RARE])
    synth = privq.Synthesizer.create("adaptive", epsilon=1, domain=domain)
    synth.fit(df)
    assert _leaks(synth, RARE) == []
    shape = synth.result._shape
    assert shape.schema.metadata is None
    assert shape.types["city"] == "category"
    out = synth.sample(20)
    assert str(out["city"].dtype) == "category"
    assert RARE not in list(out["city"].cat.categories)


def test_a_fitted_polars_enum_keeps_its_kind_not_its_categories(data, domain):
    df = pl.DataFrame(data).with_columns(
        pl.col("city").cast(pl.Enum(["Lima", "Oslo", "Rome", RARE]))
    )
    synth = privq.Synthesizer.create("adaptive", epsilon=1, domain=domain).fit(df)
    assert _leaks(synth, RARE) == []
    assert synth.result._shape.types["city"] == "Enum"


@pytest.mark.parametrize("mechanism", ["adaptive", "mwem"])
def test_fits_of_one_seeded_synthesizer_draw_different_noise(data, domain, mechanism):
    """Two fits under one seed must not share noise: their difference would be
    released without any. The first fit stays what synthesize(seed=) gives."""
    df = pd.DataFrame(data)
    if mechanism == "mwem":
        df = pd.DataFrame({
            "smoker": df["smoker"],
            "old": (df["age"] > 40).astype(int),
            "oslo": (df["city"] == "Oslo").astype(int),
        })
        domain = privq.Domain({"smoker": 2, "old": 2, "oslo": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        synth = privq.Synthesizer.create(mechanism, epsilon=1, domain=domain, seed=11)
        first = synth.fit_sample(df)
        second = synth.fit_sample(df)
        plain = privq.synthesize(df, domain, epsilon=1, seed=11, mechanism=mechanism)
    pd.testing.assert_frame_equal(first, plain)
    assert not first.equals(second)


def test_discovery_leaves_out_a_column_that_kept_nothing_with_a_warning():
    df = pd.DataFrame({"city": ["Oslo", "Rome"] * 300, "age": list(range(600))})
    budget = privq.Accountant(epsilon=2, delta=1e-5)
    with pytest.warns(UserWarning, match="'age'.*bounds") as record:
        d = privq.discover_domain(df, epsilon=1, accountant=budget)
    assert "--domain" not in str(record[0].message)
    assert d.columns == ["city"]
    assert sorted(d.values("city")) == ["Oslo", "Rome"]
    with pytest.raises(privq.PrivqError, match="no value of any attribute.*charged") as e:
        privq.discover_domain(df[["age"]], epsilon=1, accountant=budget)
    assert "--domain" not in str(e.value)
    assert budget.spent.epsilon == 2


def test_discovery_refuses_nulls_and_duplicate_names_before_the_charge():
    budget = privq.Accountant(epsilon=2, delta=1e-5)
    df = pd.DataFrame({"city": ["Oslo"] * 300 + [None]})
    with pytest.raises(ValueError, match=r'column "city", row 300: missing value'):
        privq.discover_domain(df, epsilon=1, accountant=budget)
    twice = pa.table([pa.array(["a"] * 300), pa.array(["b"] * 300)], names=["x", "x"])
    with pytest.raises(ValueError, match="appears twice"):
        privq.discover_domain(twice, epsilon=1, accountant=budget)
    assert budget.spent.epsilon == 0
    assert budget.ledger().empty if hasattr(budget.ledger(), "empty") else not budget.ledger()


def test_synthesize_refuses_a_null_even_where_the_domain_lists_the_empty_text():
    domain = privq.Domain({"attributes": [{"name": "a", "values": ["", "x"]}]})
    budget = privq.Accountant(epsilon=2, delta=1e-5)
    df = pd.DataFrame({"a": ["x", None, ""] * 50})
    with pytest.raises(ValueError, match=r'column "a", row 1: missing value'):
        privq.synthesize(df, domain, epsilon=1, accountant=budget)
    assert budget.spent.epsilon == 0


def test_discovery_info_charges_come_from_the_real_charge():
    df = pd.DataFrame({"city": ["Oslo", "Rome"] * 300})
    budget = privq.Accountant(epsilon=2, delta=1e-5)
    from privq import _privq
    from privq._frames import to_columns

    _t, _k, columns = to_columns(df, None)
    _d, info = _privq._discover_domain(columns, 1, 1e-6, "add-remove", budget._inner, None)
    assert len(info["charges"]) == 1


def test_version_and_exception_modules():
    import importlib.metadata

    assert privq.__version__ == importlib.metadata.version("privq")
    assert privq.BudgetExceeded.__module__ == "privq"
    assert privq.PrivqError.__module__ == "privq"
    assert "_privq" not in repr(privq.BudgetExceeded)


def test_delta_refusal_names_the_default_and_prints_zero_plainly():
    df = pd.DataFrame({"city": ["Oslo", "Rome"] * 300})
    budget = privq.Accountant(epsilon=2, delta=1e-7)
    with pytest.raises(privq.BudgetExceeded) as e:
        privq.discover_domain(df, epsilon=1, accountant=budget)
    text = str(e.value)
    assert "default" in text and "delta=" in text
    assert "0e0" not in text and "of which 0 is spent" in text


def test_relation_mismatch_says_how_to_fix():
    df = pd.DataFrame({"a": [0, 1] * 100, "b": [1, 1] * 100, "c": [0, 0] * 100})
    domain = privq.Domain({"a": 2, "b": 2, "c": 2})
    budget = privq.Accountant(epsilon=3, delta=1e-6)
    privq.synthesize(df, domain, epsilon=1, accountant=budget)
    with pytest.raises(privq.PrivqError, match='separate Accountant.*neighbours="replace"'):
        privq.synthesize(df, domain, epsilon=1, mechanism="mwem", accountant=budget)
