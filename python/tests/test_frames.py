"""Round trips: pandas, Polars, PyArrow and any Arrow stream come back as what went
in, with the same column names, order and types."""

from __future__ import annotations

import threading

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq

from conftest import SPEC, rows


def released_values_are_in_the_domain(table: pa.Table, domain: privq.Domain) -> None:
    for name in domain.columns:
        column = table.column(name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        values = {str(v) for v in column.to_pylist()}
        allowed = set(domain.values(name))
        if domain.kind(name) == "binned":
            # Rounded down in an integer column.
            allowed |= {str(int(float(v))) for v in allowed}
        assert values <= allowed, (name, values - allowed)


def test_the_installed_wheel_is_tested():
    assert "site-packages" in privq.__file__, privq.__file__
    assert privq._privq.__file__.endswith(".abi3.so"), privq._privq.__file__


def test_pandas_round_trip(data, domain):
    df = pd.DataFrame({"smoker": data["smoker"], "city": data["city"], "age": data["age"]})
    df["city"] = df["city"].astype("category")
    df["age"] = df["age"].astype("int32")
    out = privq.synthesize(df, domain, epsilon=1, seed=1)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["smoker", "city", "age"]
    assert out.dtypes.to_dict() == {
        "smoker": df.dtypes["smoker"],
        "city": out.dtypes["city"],
        "age": df.dtypes["age"],
    }
    assert isinstance(out.dtypes["city"], pd.CategoricalDtype)
    assert list(out["city"].cat.categories) == ["Oslo", "Rome", "Lima"]
    assert len(out) > 200  # n is private: the model's noisy total of 300
    released_values_are_in_the_domain(pa.Table.from_pandas(out), domain)


def test_pandas_strings_and_nullable_integers(data, domain):
    df = pd.DataFrame(data).astype({"city": "string", "smoker": "Int64"})
    out = privq.synthesize(df, domain, epsilon=1, seed=2, neighbours="replace")
    assert out.dtypes.to_dict() == df.dtypes.to_dict()
    assert len(out) == len(df)  # n public under replace-one neighbours


def test_polars_round_trip(data, domain):
    df = pl.DataFrame(data).with_columns(
        pl.col("city").cast(pl.Categorical), pl.col("smoker").cast(pl.Int8)
    )
    out = privq.synthesize(df, domain, epsilon=1, seed=3)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == df.columns
    assert out.dtypes == df.dtypes
    released_values_are_in_the_domain(out.to_arrow(), domain)


def test_pyarrow_round_trip(data, domain):
    table = pa.table(
        {
            "age": pa.array(data["age"], pa.int64()),
            "city": pa.array(data["city"], pa.large_string()).dictionary_encode(),
            "smoker": pa.array([bool(s) for s in data["smoker"]], pa.bool_()),
        }
    )
    out = privq.synthesize(table, domain, epsilon=1, seed=4)
    assert isinstance(out, pa.Table)
    assert out.schema.names == table.schema.names
    assert [f.type for f in out.schema] == [f.type for f in table.schema]
    released_values_are_in_the_domain(
        out.set_column(2, "smoker", out.column("smoker").cast(pa.int8())), domain
    )


def test_any_arrow_stream_and_chunked_columns(data, domain):
    table = pa.table(data)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=70))
    assert chunked.column(0).num_chunks > 1

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return chunked.__arrow_c_stream__(requested_schema)

    a = privq.synthesize(Stream(), domain, epsilon=1, seed=5)
    b = privq.synthesize(table, domain, epsilon=1, seed=5)
    assert isinstance(a, pa.Table)
    assert a.equals(b), "chunks and the stream protocol change nothing"


def test_a_float_column_keeps_bin_midpoints(data, domain):
    df = pd.DataFrame(data).astype({"age": "float64"})
    out = privq.synthesize(df, domain, epsilon=1, seed=6)
    assert out.dtypes["age"] == "float64"
    assert set(out["age"]) <= {9.0, 41.5, 92.5}


def test_the_same_seed_gives_the_same_release_and_no_seed_draws_fresh(data, domain):
    df = pd.DataFrame(data)
    a = privq.synthesize(df, domain, epsilon=1, seed=11)
    b = privq.synthesize(df, domain, epsilon=1, seed=11)
    pd.testing.assert_frame_equal(a, b)
    with pytest.warns(privq.SeedWarning):
        privq.synthesize(df, domain, epsilon=1, seed=11)
    fresh = [privq.synthesize(df, domain, epsilon=1) for _ in range(2)]
    assert not fresh[0].equals(fresh[1]), "the OS's entropy, not a fixed seed"


def test_releases_run_in_threads(data, domain):
    """The GIL is released during a release: two threads run side by side and both
    give what they give alone."""
    df = pd.DataFrame(data)
    alone = [privq.synthesize(df, domain, epsilon=1, seed=s) for s in (21, 22)]
    results = {}

    def run(s):
        results[s] = privq.synthesize(df, domain, epsilon=1, seed=s)

    threads = [threading.Thread(target=run, args=(s,)) for s in (21, 22)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s, expected in zip((21, 22), alone):
        pd.testing.assert_frame_equal(results[s], expected)


def test_empty_data_runs_under_add_remove(domain):
    df = pd.DataFrame(rows(0)).astype({"age": "int64", "smoker": "int64", "city": "str"})
    out = privq.synthesize(df, domain, epsilon=1, seed=7)
    assert list(out.columns) == list(df.columns)
    with pytest.raises(ValueError, match="no records"):
        privq.synthesize(df, domain, epsilon=1, seed=7, neighbours="replace")
