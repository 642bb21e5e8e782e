"""privq.sql: private statistics by group from Python, with the program's checks
and, for the same data and seed, exactly the program's numbers."""

from __future__ import annotations

import io
import subprocess
import warnings

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq

QUERY = (
    "SELECT region, COUNT(*) AS n, SUM(temp) AS total, AVG(temp), "
    "QUANTILE(temp, 0.5) AS med FROM readings WHERE temp > -5 GROUP BY region"
)


def readings(n: int = 600) -> pd.DataFrame:
    regions = ["north", "south", "east"]
    return pd.DataFrame(
        {
            "device": [f"d{i % 150}" for i in range(n)],
            "region": [regions[(i * 7) % 3] for i in range(n)],
            "temp": [((i * 37) % 80) / 4 - 10 for i in range(n)],
        }
    )


def run(df, **kw):
    args = dict(
        epsilon=1,
        privacy_unit="device",
        max_groups=2,
        max_rows=3,
        bounds={"temp": (-20, 50)},
        keys={"region": ["north", "south", "west"]},
        seed=7,
    )
    args.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        warnings.filterwarnings("ignore", "without a privacy unit", UserWarning)
        return privq.sql(QUERY, {"readings": df}, **args)


# Every row its own unit: one row, one group.
PER_ROW = dict(privacy_unit=None, max_groups=1, max_rows=1)


def test_same_numbers_as_the_program(privq_bin, tmp_path):
    df = readings()
    csv = tmp_path / "readings.csv"
    df.to_csv(csv, index=False)
    cli = subprocess.run(
        [
            str(privq_bin), "sql", QUERY, "--table", f"readings={csv}",
            "--privacy-unit", "device", "--max-groups", "2", "--max-rows", "3",
            "--bounds", "temp=-20:50", "--keys", "region=north,south,west",
            "--epsilon", "1", "--seed", "7",
        ],
        capture_output=True, text=True, check=False,
    )
    assert cli.returncode == 0, cli.stderr
    from_cli = pd.read_csv(io.StringIO(cli.stdout), dtype={"region": "str"})
    out = run(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(from_cli.columns) == [
        "region", "n", "n_lo", "n_hi", "total", "total_lo", "total_hi",
        "AVG(temp)", "AVG(temp)_lo", "AVG(temp)_hi", "med",
    ]
    assert list(out["region"]) == ["north", "south", "west"]
    for c in out.columns[1:]:
        assert list(out[c]) == list(from_cli[c].astype("float64")), c
    # Private group selection: the same groups and numbers too.
    cli = subprocess.run(
        [
            str(privq_bin), "sql", QUERY, "--table", f"readings={csv}",
            "--privacy-unit", "device", "--bounds", "temp=-20:50",
            "--delta", "1e-6", "--epsilon", "2", "--seed", "3",
        ],
        capture_output=True, text=True, check=False,
    )
    assert cli.returncode == 0, cli.stderr
    from_cli = pd.read_csv(io.StringIO(cli.stdout), dtype={"region": "str"})
    out = run(df, keys=None, delta=1e-6, epsilon=2, seed=3, max_groups=1, max_rows=1)
    assert list(out["region"]) == list(from_cli["region"])
    for c in out.columns[1:]:
        assert list(out[c]) == list(from_cli[c].astype("float64")), c


def test_pandas_polars_and_arrow_inputs_give_the_same_release():
    df = readings()
    from_pandas = run(df)
    from_polars = run(pl.from_pandas(df))
    from_arrow = run(pa.Table.from_pandas(df, preserve_index=False))
    # Each input kind gets its kind back; counts are integers (their release is one).
    assert isinstance(from_polars, pl.DataFrame) and isinstance(from_arrow, pa.Table)
    assert from_polars.to_dicts() == from_arrow.to_pylist()
    assert from_polars.schema["n"] == pl.Int64 and from_polars.schema["total"] == pl.Float64
    assert from_arrow.schema.field("n").type == pa.int64()
    assert str(from_pandas["n"].dtype) == "int64" and str(from_pandas["n_lo"].dtype) == "float64"
    pd.testing.assert_frame_equal(from_arrow.to_pandas(), from_pandas)
    # Categorical group-by columns read as their values.
    categorical = run(df.astype({"region": "category"}))
    pd.testing.assert_frame_equal(categorical, from_pandas)
    polars_categorical = run(pl.from_pandas(df).with_columns(pl.col("region").cast(pl.Categorical)))
    assert polars_categorical.equals(from_polars)
    # A histogram: its bins need no keys. Without a privacy unit the library's
    # note is a warning.
    with warnings.catch_warnings(), pytest.warns(UserWarning, match="every row is its own unit"):
        warnings.simplefilter("ignore", privq.SeedWarning)
        out = privq.sql(
            "SELECT BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) AS n FROM r GROUP BY band",
            {"r": df}, epsilon=1, seed=1,
        )
    assert list(out["band"]) == ["[-20, 0)", "[0, 20)", "[20, 50]"]


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"bounds": {"temp": (-20, 50), "humidity": (0, 1)}}, "aggregates no column \"humidity\""),
        ({"keys": {"city": ["a"]}}, "does not group by \"city\""),
        ({"keys": {"region": ["a", ""]}}, "empty value"),
        ({"keys": None}, "needs its groups"),
        ({"delta": 1e-6}, "not both"),
        ({"privacy_unit": None}, "privacy_unit"),
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": -1}, "epsilon"),
        ({"bounds": {}}, "has no bounds"),
        ({"privacy_unit": "person"}, "no column \"person\""),
    ],
)
def test_bad_requests_are_refused_before_anything_is_spent(kw, needle):
    accountant = privq.Accountant(epsilon=5)
    with pytest.raises(ValueError, match=None) as e:
        run(readings(), accountant=accountant, **kw)
    assert needle in str(e.value), str(e.value)
    assert accountant.spent.epsilon == 0


def test_bad_tables_and_values_are_refused():
    df = readings()
    with pytest.raises(ValueError, match="reads table \"readings\""):
        privq.sql(QUERY, {"other": df}, epsilon=1)
    bad = df.copy()
    bad.loc[5, "temp"] = float("nan")
    with pytest.raises(ValueError, match=r"column \"temp\", row 5: missing or not a number"):
        run(bad)
    # Polars keeps NaN a float: not finite.
    with pytest.raises(ValueError, match=r"column \"temp\", row 5: not a finite number"):
        run(pl.from_pandas(df).with_columns(
            pl.when(pl.int_range(pl.len()) == 5).then(float("nan")).otherwise(pl.col("temp"))
            .alias("temp")
        ))
    # drop_invalid drops the row instead.
    assert len(run(bad, drop_invalid=True)) == 3
    with pytest.raises(ValueError, match="is a histogram"):
        privq.sql(
            "SELECT region, BIN(temp, 0, 10, 40) AS band, COUNT(*) FROM r GROUP BY region, band",
            {"r": df}, epsilon=1, keys={"band": ["a"], "region": ["north"]},
        )
    with pytest.raises(ValueError, match="SQL"):
        privq.sql("SELECT * FROM r", {"r": df}, epsilon=1)


def test_budget_exhausted_releases_nothing_and_spends_nothing():
    accountant = privq.Accountant(epsilon="3/2")
    out = run(readings(), accountant=accountant)
    assert len(out) == 3
    assert accountant.spent.epsilon == 1
    with pytest.raises(privq.BudgetExceeded):
        run(readings(), accountant=accountant)
    assert accountant.spent.epsilon == 1
    assert len(accountant.ledger()) == 1


def test_one_accountant_for_sql_and_synthesize(data, domain):
    # Both protect one record: their costs add up in one accountant.
    accountant = privq.Accountant(epsilon=2, delta=1e-6)
    run(readings(), **PER_ROW, accountant=accountant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        privq.synthesize(pd.DataFrame(data), domain, epsilon=0.5, delta=1e-9,
                         accountant=accountant, seed=1)
        with pytest.raises(privq.BudgetExceeded):
            privq.synthesize(pd.DataFrame(data), domain, epsilon=0.6, delta=1e-9,
                             accountant=accountant, seed=2)
    spent = accountant.spent
    assert spent.epsilon == pytest.approx(1.5)
    with pytest.raises(privq.BudgetExceeded):
        run(readings(), **PER_ROW, accountant=accountant)
    assert accountant.spent == spent
    assert accountant.ledger().column("privacy_unit").to_pylist() == [None, None]


def test_an_accountant_refuses_releases_for_another_privacy_unit(data, domain):
    # A device with k rows costs k times a row's ε: per-device and per-record
    # releases do not add up in one budget, in either order.
    accountant = privq.Accountant(epsilon=5, delta=1e-6)
    run(readings(), accountant=accountant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        with pytest.raises(privq.PrivqError, match="different units"):
            privq.synthesize(pd.DataFrame(data), domain, epsilon=0.5, delta=1e-9,
                             accountant=accountant, seed=1)
    with pytest.raises(privq.PrivqError, match="privacy unit \"device\""):
        run(readings(), **PER_ROW, accountant=accountant)
    assert accountant.ledger().column("privacy_unit").to_pylist() == ["device"]
    assert accountant.spent.epsilon == 1

    rows = privq.Accountant(epsilon=5, delta=1e-6)
    run(readings(), **PER_ROW, accountant=rows)
    with pytest.raises(privq.PrivqError, match="different units"):
        run(readings(), accountant=rows)
    assert len(rows.ledger()) == 1


def test_a_budget_file_refuses_releases_for_another_privacy_unit(privq_bin, tmp_path):
    path = tmp_path / "budget.json"
    accountant = privq.Accountant(epsilon=5, budget_file=path)
    run(readings(), accountant=accountant)
    with pytest.raises(privq.PrivqError, match="different units"):
        run(readings(), **PER_ROW, accountant=accountant)
    assert accountant.ledger().column("privacy_unit").to_pylist() == ["device"]
    # The program reads the unit the same way.
    csv = tmp_path / "readings.csv"
    readings().to_csv(csv, index=False)
    base = [
        str(privq_bin), "sql", "SELECT region, COUNT(*) AS n FROM readings GROUP BY region",
        "--table", f"readings={csv}", "--keys", "region=north", "--epsilon", "1",
        "--budget-file", str(path),
    ]
    assert subprocess.run(base, capture_output=True).returncode != 0
    unit = ["--privacy-unit", "device", "--max-rows", "3"]
    assert subprocess.run(base + unit, capture_output=True).returncode == 0
    assert len(accountant.ledger()) == 2


def test_a_budget_file_is_charged_like_the_program(tmp_path):
    path = tmp_path / "budget.json"
    accountant = privq.Accountant(epsilon="3/2", budget_file=path)
    run(readings(), accountant=accountant)
    assert path.exists()
    with pytest.raises(privq.BudgetExceeded):
        run(readings(), accountant=accountant)


def test_the_seed_warns_and_randomness_is_the_default():
    with pytest.warns(privq.SeedWarning):
        privq.sql(QUERY, {"readings": readings()}, epsilon=1, privacy_unit="device",
                  bounds={"temp": (-20, 50)}, keys={"region": ["north"]}, seed=1)
    a = privq.sql(QUERY, {"readings": readings()}, epsilon=1, privacy_unit="device",
                  bounds={"temp": (-20, 50)}, keys={"region": ["north"]})
    assert list(a.columns)[:2] == ["region", "n"]


def test_a_large_delta_is_warned_about():
    with pytest.warns(UserWarning, match="is large"):
        run(readings(), keys=None, delta=0.01, max_groups=1, max_rows=1)


def counts(query, df, **kw):
    """A noisy count by group (ε = 10: noise of a few units) as {key: n}."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "without a privacy unit", UserWarning)
        out = privq.sql(query, {"t": df}, epsilon=10, seed=3, **kw)
    out = pa.table(out) if not isinstance(out, pa.Table) else out
    key = out.column_names[0]
    return dict(zip(out.column(key).to_pylist(), out.column("n").to_pylist()))


def test_keys_are_read_with_the_column_s_type():
    df = readings()
    df["hot"] = df.temp > 5
    df["floor"] = (df.index % 3).astype(float)
    df["day"] = pd.to_datetime("2020-01-01") + pd.to_timedelta(df.index % 2, unit="D")
    hot = "SELECT hot, COUNT(*) AS n FROM t GROUP BY hot"
    true_count = int(df.hot.sum())
    # A bool key is the data's text for a bool ("true"), as is the text itself.
    by_bool = counts(hot, df, keys={"hot": [True, False]})
    assert by_bool == counts(hot, df, keys={"hot": ["true", "false"]})
    assert abs(by_bool["true"] - true_count) < 10 and abs(by_bool["false"] - (600 - true_count)) < 10
    # An int key in a float column is that float.
    by_floor = counts("SELECT floor, COUNT(*) AS n FROM t GROUP BY floor", df, keys={"floor": [0, 1, 2]})
    assert sorted(by_floor) == ["0.0", "1.0", "2.0"]
    assert all(abs(n - 200) < 10 for n in by_floor.values())
    # A timestamp key is the data's text for that timestamp.
    days = list(pd.to_datetime(["2020-01-01", "2020-01-02"]))
    by_day = counts("SELECT day, COUNT(*) AS n FROM t GROUP BY day", df, keys={"day": days})
    assert all(abs(n - 300) < 10 for n in by_day.values())
    # Polars reads the same.
    assert counts(hot, pl.from_pandas(df), keys={"hot": [True, False]}) == by_bool


@pytest.mark.parametrize(
    "column, key, needle",
    [
        ("hot", None, "None"),
        ("hot", 1, "type bool"),
        ("floor", True, "type double"),
        ("region", 3, "type (large_)?string"),
        ("floor", "zero", None),
    ],
)
def test_keys_that_do_not_fit_the_column_are_refused(column, key, needle):
    df = readings()
    df["hot"] = df.temp > 5
    df["floor"] = (df.index % 3).astype(float)
    query = f"SELECT {column}, COUNT(*) AS n FROM t GROUP BY {column}"
    if needle is None:
        # A text is taken as it is (as the program's --keys): a key no row has.
        assert counts(query, df, keys={column: [key]}).keys() == {key}
        return
    accountant = privq.Accountant(epsilon=20)
    with pytest.raises(ValueError, match=needle):
        counts(query, df, keys={column: [key]}, accountant=accountant)
    assert len(accountant.ledger()) == 0


def test_a_count_of_rows_reads_no_column():
    df = readings()
    for table in (df, pl.from_pandas(df), pa.Table.from_pandas(df, preserve_index=False)):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "without a privacy unit", UserWarning)
            out = privq.sql("SELECT COUNT(*) AS n FROM t", {"t": table}, epsilon=10, seed=3)
        assert abs(pa.table(out).column("n")[0].as_py() - 600) < 10


def test_a_one_shot_stream_is_read_once():
    table = pa.Table.from_pandas(readings(), preserve_index=False)
    stream = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert run(stream).equals(run(table))


def test_minus_zero_and_zero_are_one_unit():
    # -0.0 == 0.0: in a float unit column they are one unit (as in pandas' groupby).
    df = pd.DataFrame({"u": [0.0, -0.0] * 50, "r": ["a"] * 100})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        out = privq.sql(
            "SELECT r, COUNT(*) AS n FROM t GROUP BY r", {"t": df}, epsilon=10,
            privacy_unit="u", max_rows=1, keys={"r": ["a"]}, seed=3,
        )
    # One unit contributing one row: a count near 1, not 2.
    assert abs(out["n"][0] - 1) < 3


def test_a_delta_refusal_states_the_amounts():
    # Private group selection needs δ; the accountant has less left than asked.
    accountant = privq.Accountant(epsilon=10, delta=1e-7)
    with pytest.raises(privq.BudgetExceeded) as refused:
        run(readings(), keys=None, delta=1e-6, accountant=accountant)
    message = str(refused.value)
    assert "needs δ = 1e-6" in message and "δ = 1e-7" in message and "remaining" in message
    assert "nothing was charged or released" in message
    assert accountant.ledger().num_rows == 0
    pure = privq.Accountant(epsilon=10)
    with pytest.raises(privq.BudgetExceeded, match="delta=0 takes pure"):
        run(readings(), keys=None, delta=1e-6, accountant=pure)


def test_an_in_memory_ledger_has_the_time_of_each_charge():
    accountant = privq.Accountant(epsilon=3)
    run(readings(), accountant=accountant)
    run(readings(), accountant=accountant)
    times = accountant.ledger().column("time").to_pylist()
    assert len(times) == 2 and all(t is not None for t in times)
    # UTC, as a budget file stamps its charges: YYYY-MM-DDTHH:MM:SSZ.
    assert all(len(t) == 20 and t.endswith("Z") and t[10] == "T" for t in times)
    assert times[0] <= times[1]


def test_columns_of_numbers_release_what_their_texts_release():
    # A column read only as numbers (aggregated, or binned) goes over as float64
    # buffers, not texts: the release is the one its texts give, for floats, for
    # integers, with missing values dropped, from sliced and chunked Arrow tables.
    n = 600
    big = 2**53
    df = pd.DataFrame(
        {
            "device": [f"d{i % 150}" for i in range(n)],
            "region": [["north", "south", "east"][(i * 7) % 3] for i in range(n)],
            "temp": [None if i % 97 == 5 else ((i * 37) % 80) / 4 - 10.1 + (-0.0 if i % 2 else 0.0)
                     for i in range(n)],
            "k": [(i * 7919) % 1000 - 500 for i in range(n)],
        }
    )
    as_text = df.assign(
        temp=[None if pd.isna(x) else repr(float(x) + 0.0) for x in df["temp"]],
        k=[str(x) for x in df["k"]],
    )
    query = (
        "SELECT region, COUNT(*) AS n, SUM(temp) AS s, AVG(k) AS ak, QUANTILE(temp, 0.5) AS q "
        "FROM readings GROUP BY region"
    )
    kw = dict(bounds={"temp": (-20, 50), "k": (-400, 400)}, drop_invalid=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        expected = privq.sql(query, {"readings": as_text}, epsilon=1, privacy_unit="device",
                             max_groups=2, max_rows=3, keys={"region": ["north", "south", "west"]},
                             seed=7, **kw)
        table = pa.Table.from_pandas(df, preserve_index=False)
        chunked = pa.concat_tables([table.slice(0, 211), table.slice(211)])
        for frame in (df, pl.from_pandas(df), chunked, table.slice(0)):
            got = privq.sql(query, {"readings": frame}, epsilon=1, privacy_unit="device",
                            max_groups=2, max_rows=3, keys={"region": ["north", "south", "west"]},
                            seed=7, **kw)
            got = got if isinstance(got, pd.DataFrame) else (
                got.to_pandas() if isinstance(got, pl.DataFrame) else got.to_pandas())
            pd.testing.assert_frame_equal(got, expected)
        # A slice that starts inside the table: the same as its rows given alone.
        part = table.slice(97, 400)
        alone = pa.Table.from_pandas(as_text.iloc[97:497].reset_index(drop=True), preserve_index=False)
        args = dict(epsilon=1, privacy_unit="device", max_groups=2, max_rows=3,
                    keys={"region": ["north", "south", "west"]}, seed=7, **kw)
        assert privq.sql(query, {"readings": part}, **args).equals(
            privq.sql(query, {"readings": alone}, **args))
        # A binned key reads numbers too; WHERE on the same column reads its text.
        binned = "SELECT BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) AS n FROM r GROUP BY band"
        where = "SELECT region, SUM(temp) AS s FROM r WHERE temp > 0 GROUP BY region"
        for q in (binned, where):
            a = dict(epsilon=1, seed=3, drop_invalid=True, privacy_unit="device",
                     **({"bounds": {"temp": (-20, 50)}, "keys": {"region": ["north"]}}
                        if q is where else {}))
            assert privq.sql(q, {"r": df}, **a).equals(privq.sql(q, {"r": as_text}, **a))
    # Integers past 2**53 (outside any bounds, but a binned key's or a clamped
    # value's): pyarrow's unsafe cast rounds as Python's float() of the decimal
    # text (correctly rounded, ties to even), as the library parses that text.
    ints = [big + 1, big + 3, -(big + 5), 2**63 - 1, 2**64 - 1]
    for t in (pa.int64(), pa.uint64()):
        xs = [x for x in ints if (x >= 0 or t == pa.int64()) and x < (2**63 if t == pa.int64() else 2**64)]
        cast = pa.array(xs, t).cast(pa.float64(), safe=False).to_pylist()
        assert cast == [float(str(x)) for x in xs]


def test_a_cast_arrow_lacks_falls_back_to_texts(monkeypatch):
    # float16 has no cast to float64 before pyarrow 16: the column then goes as its
    # texts, which read the same.
    import privq._frames as frames

    df = pd.DataFrame({"device": ["a", "b", "c", "a"], "x": pd.array([0.1, 2.0, 3.5, 7.0], "float16")})
    q = "SELECT COUNT(*) AS n, SUM(x) AS s FROM t"
    kw = dict(epsilon=1, privacy_unit="device", max_rows=2, bounds={"x": (0, 10)}, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        expected = privq.sql(q, {"t": pa.table({"device": df["device"], "x": pa.array(df["x"])})}, **kw)

        real = frames.pc.cast

        def no_cast(array, target_type=None, *args, **kwargs):
            if array.type == pa.float16() and target_type == pa.float64():
                raise pa.ArrowNotImplementedError("Unsupported cast from halffloat to double")
            return real(array, target_type, *args, **kwargs)

        monkeypatch.setattr(frames.pc, "cast", no_cast)
        got = privq.sql(q, {"t": pa.table({"device": df["device"], "x": pa.array(df["x"])})}, **kw)
    assert got.equals(expected)


def test_bytes_under_a_missing_value_are_not_read():
    # Arrow lets a null slot keep any bytes; only present values must be UTF-8.
    raw = pa.array([b"\xff\xfe", b"ok", b"u2"], pa.binary())
    units = pa.compute.if_else(pa.array([False, True, True]), raw, pa.scalar(None, pa.binary()))
    table = pa.table({"id": units.cast(pa.string()), "x": [1.0, 2.0, 3.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privq.SeedWarning)
        out = privq.sql("SELECT COUNT(*) AS n FROM t", {"t": table}, epsilon=1,
                        privacy_unit="id", drop_invalid=True, seed=2)
    assert out.num_rows == 1


def test_a_quantile_loose_in_some_groups_is_warned_about():
    # 600 rows over 150 devices: each group's median is chosen among 1 001
    # candidates from a few hundred rows, far fewer than twice its rank bound.
    with pytest.warns(privq.AccuracyWarning,
                      match=r"^med: in 3 of 3 group\(s\) the released value's rank bound \(±\d+ "
                            r"rows at confidence 0\.95\) is over half the noisy count"):
        run(readings())
    # The same query on many rows, at a large ε: the bound is a small part of each
    # group, and nothing is said.
    with warnings.catch_warnings():
        warnings.simplefilter("error", privq.AccuracyWarning)
        out = run(readings(60_000), epsilon=100, quantile_candidates=100,
                  keys={"region": ["north", "south", "east"]})
    assert list(out["region"]) == ["north", "south", "east"]
    # Without COUNT(*) the release holds no count to compare with: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", privq.AccuracyWarning)
        warnings.simplefilter("ignore", privq.SeedWarning)
        privq.sql("SELECT MEDIAN(temp) AS m FROM r", {"r": readings()}, epsilon=1,
                  privacy_unit="device", bounds={"temp": (-20, 50)}, seed=1)
