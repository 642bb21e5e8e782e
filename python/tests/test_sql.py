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
    assert isinstance(from_polars, pa.Table) and isinstance(from_arrow, pa.Table)
    assert from_polars.equals(from_arrow)
    pd.testing.assert_frame_equal(from_arrow.to_pandas(), from_pandas)
    # Categorical group-by columns read as their values.
    categorical = run(df.astype({"region": "category"}))
    pd.testing.assert_frame_equal(categorical, from_pandas)
    polars_categorical = run(pl.from_pandas(df).with_columns(pl.col("region").cast(pl.Categorical)))
    assert polars_categorical.equals(from_arrow)
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
