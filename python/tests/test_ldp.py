"""privq.ldp: device reports from Python. The bytes and the estimates are the
program's (`privq ldp simulate` / `privq ldp aggregate`) for the same inputs, and
bad input is refused with the right exception."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import warnings

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq
from privq import ldp

WEIGHTS = [50, 0, 20, 130, 7, 1, 40, 2]


def run(privq_bin, *args):
    out = subprocess.run([str(privq_bin), "ldp", *args], capture_output=True, check=False)
    return out


def cli_estimates(privq_bin, campaign_file, reports_file, *extra):
    out = run(privq_bin, "aggregate", "--campaign", str(campaign_file), "--input",
              str(reports_file), "--format", "csv", *extra)
    assert out.returncode == 0, out.stderr.decode()
    return list(csv.DictReader(io.StringIO(out.stdout.decode())))


@pytest.mark.parametrize("mechanism", ["oue", "grr", "olh", "hr"])
def test_same_bytes_and_estimates_as_the_program(privq_bin, tmp_path, mechanism):
    weights = tmp_path / "weights.txt"
    weights.write_text("\n".join(map(str, WEIGHTS)) + "\n")
    reports_file, campaign_file = tmp_path / "r.pqr", tmp_path / "c.json"
    out = run(privq_bin, "simulate", "--mechanism", mechanism, "--epsilon", "1/2",
              "--domain", "8", "--devices", str(sum(WEIGHTS)), "--weights", str(weights),
              "--seed", "7", "--output", str(reports_file), "--campaign", str(campaign_file))
    assert out.returncode == 0, out.stderr.decode()
    campaign = ldp.Campaign.load(campaign_file)
    assert campaign == ldp.Campaign(mechanism, epsilon=0.5, domain=8)
    # The devices in the program's order (by item) with the same seed: the same bytes.
    values = [item for item, w in enumerate(WEIGHTS) for _ in range(w)]
    assert ldp.simulate(values, campaign, seed=7) == reports_file.read_bytes()

    for post in ["none", "simplex"]:
        expected = cli_estimates(privq_bin, campaign_file, reports_file, "--post", post)
        for source in [reports_file, str(reports_file), reports_file.read_bytes()]:
            got = ldp.aggregate(source, campaign, post=post, output="arrow").to_pylist()
            assert len(got) == len(expected) == 8
            for g, e in zip(got, expected):
                assert g["group"] == e["group"] and g["item"] == int(e["item"])
                for k in ["estimate", "std_error", "ci_low", "ci_high", "post_processed"]:
                    assert g[k] == float(e[k]), (k, g, e)  # bit for bit
                assert g["reports"] == sum(WEIGHTS)


def test_output_kinds_and_dtypes():
    campaign = ldp.Campaign("grr", epsilon=1, domain=3)
    reports = ldp.simulate(pa.array([0, 1, 2] * 30), campaign, seed=2)
    frame = ldp.aggregate(reports, campaign)
    assert isinstance(frame, pd.DataFrame)
    assert str(frame["item"].dtype) == "int64" and str(frame["estimate"].dtype) == "float64"
    assert isinstance(ldp.aggregate(reports, campaign, output="polars"), pl.DataFrame)
    assert isinstance(ldp.aggregate(reports, campaign, output="arrow"), pa.Table)
    # Values from pandas, Polars, NumPy and lists are the same devices.
    import numpy as np

    for values in [pd.Series([0, 1, 2] * 30), pl.Series([0, 1, 2] * 30),
                   np.array([0, 1, 2] * 30, dtype=np.int32), [0, 1, 2] * 30,
                   pa.chunked_array([[0, 1, 2] * 10, [0, 1, 2] * 20])]:
        assert ldp.simulate(values, campaign, seed=2) == reports
    # Several inputs are read in order, like several --input files.
    both = ldp.aggregate([reports, reports], campaign, output="arrow")
    assert both.column("reports")[0].as_py() == 180


def test_the_default_seed_is_the_operating_systems():
    campaign = ldp.Campaign("oue", epsilon=1, domain=16)
    values = list(range(16)) * 8
    assert ldp.simulate(values, campaign) != ldp.simulate(values, campaign)


def test_a_rejected_frame_is_counted_and_warned_or_refused():
    campaign = ldp.Campaign("oue", epsilon=1, domain=8)
    reports = ldp.simulate(list(range(8)) * 20, campaign, seed=4)
    truncated = reports[:-3]
    with pytest.warns(ldp.ReportsRejectedWarning, match="truncated"):
        est = ldp.aggregate(truncated, campaign, output="arrow")
    assert est.column("reports")[0].as_py() == 159
    with pytest.raises(ldp.ReportError, match="truncated"):
        ldp.aggregate(truncated, campaign, strict=True)
    # Garbage in the middle: skipped, the reports around it still count.
    spliced = reports[:200] + b"\xff" * 37 + reports[200:]
    with pytest.warns(ldp.ReportsRejectedWarning):
        ldp.aggregate(spliced, campaign)


@pytest.mark.parametrize(
    "hostile",
    [
        b"",
        b"\x00",
        bytes(range(256)) * 4,
        b"PRIVQ" * 100,
    ],
)
def test_nothing_usable_is_a_report_error(hostile):
    campaign = ldp.Campaign("oue", epsilon=1, domain=8)
    with pytest.raises(ldp.ReportError) as info:
        ldp.aggregate(hostile, campaign)
    assert isinstance(info.value, privq.PrivqError) and isinstance(info.value, ValueError)


def test_reports_of_another_campaign_are_rejected():
    theirs = ldp.Campaign("oue", epsilon=2, domain=8)
    ours = ldp.Campaign("oue", epsilon=1, domain=8)
    reports = ldp.simulate([1, 2, 3] * 10, theirs, seed=1)
    with pytest.raises(ldp.ReportError, match="no usable report"):
        ldp.aggregate(reports, ours)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(mechanism="oue", epsilon=0, domain=8), ValueError, "epsilon"),
        (dict(mechanism="oue", epsilon=-1, domain=8), ValueError, "epsilon"),
        (dict(mechanism="oue", epsilon="0/3", domain=8), ValueError, "epsilon"),
        (dict(mechanism="oue", epsilon=float("nan"), domain=8), ValueError, "finite"),
        (dict(mechanism="oue", epsilon=True, domain=8), TypeError, "bool"),
        (dict(mechanism="laplace", epsilon=1, domain=8), ValueError, "unknown mechanism"),
        (dict(mechanism="oue", epsilon=1), ValueError, "domain"),
        (dict(mechanism="oue", epsilon=1, domain=8, queries=["9-3"]), ValueError, "quer"),
        (dict(mechanism="oue", epsilon=1, domain=8, queries=[]), ValueError, "quer"),
        (dict(mechanism="oue", epsilon=1, domain=1_000_000), ValueError, "domain"),
        (dict(mechanism="oue", epsilon=1, domain=500_000, memory_mib=1), ValueError, "MiB"),
        (dict(mechanism="oue", epsilon=1, domain=8.0), TypeError, "domain"),
    ],
)
def test_bad_campaigns(kwargs, error, match):
    with pytest.raises(error, match=match):
        ldp.Campaign(**kwargs)


def test_a_campaign_file_round_trips_and_bad_ones_are_refused():
    c = ldp.Campaign("grr", epsilon="3/4", domain=5, queries=[0, "2-3"])
    assert ldp.Campaign.from_json(c.to_json()) == c
    assert json.loads(c.to_json())["queries"] == [0, "2-3"]
    with pytest.raises(ValueError, match="campaign"):
        ldp.Campaign.from_json("{not json")
    with pytest.raises(ValueError, match="unknown"):
        ldp.Campaign.from_json('{"mechanism": "oue", "epsilon": "1", "domain": 4, "x": 1}')


@pytest.mark.parametrize(
    "values, error, match",
    [
        ([0, 8], ValueError, "values\\[1\\] = 8"),
        ([-1], ValueError, "values\\[0\\] = -1"),
        ([0, None], ValueError, "missing"),
        ([0.5, 1.0], TypeError, "integers"),
        (["a"], TypeError, "integers"),
        ([2**63], ValueError, "beyond"),
        ([0, 2**64], ValueError, "beyond 64 bits"),
        (pa.array([2**63], type=pa.uint64()), ValueError, "int64"),
    ],
)
def test_bad_values(values, error, match):
    campaign = ldp.Campaign("oue", epsilon=1, domain=8)
    with pytest.raises(error, match=match):
        ldp.simulate(values, campaign, seed=1)


def test_bad_arguments():
    campaign = ldp.Campaign("oue", epsilon=1, domain=8)
    with pytest.raises(ValueError, match="mean"):
        ldp.simulate([1], ldp.Campaign("1bitmean", epsilon=1, bound=10), seed=1)
    with pytest.raises(ValueError, match="query 0"):
        ldp.simulate([1], ldp.Campaign("oue", epsilon=1, domain=8, queries=[3]), seed=1)
    with pytest.raises(ValueError, match="seed"):
        ldp.simulate([1], campaign, seed=-1)
    reports = ldp.simulate([1, 2], campaign, seed=1)
    with pytest.raises(ValueError, match="confidence"):
        ldp.aggregate(reports, campaign, confidence=1.0)
    with pytest.raises(ValueError, match="post"):
        ldp.aggregate(reports, campaign, post="round")
    with pytest.raises(TypeError):
        ldp.aggregate(reports, "oue")
    with pytest.raises(TypeError):
        ldp.aggregate([reports, 3], campaign)
    with pytest.raises(FileNotFoundError):
        ldp.aggregate("/nonexistent/reports.pqr", campaign)


def test_an_empty_fleet_gives_a_report_file_with_no_reports():
    campaign = ldp.Campaign("oue", epsilon=1, domain=8)
    reports = ldp.simulate([], campaign, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ldp.ReportError):
            ldp.aggregate(reports, campaign)
