"""The binding changes nothing: for the same data, domain and seed, privq.synthesize
releases exactly what `privq synth --mechanism adaptive --seed S` prints."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import polars as pl
import pytest

import privq

from conftest import SPEC


@pytest.mark.parametrize("seed, neighbours", [(5, "add-remove"), (8, "replace")])
def test_same_output_as_the_program(data, privq_bin, tmp_path, seed, neighbours):
    # A float column binned (both write the midpoints), strings, integers.
    df = pd.DataFrame(data).astype({"age": "float64"})
    csv = tmp_path / "people.csv"
    df.to_csv(csv, index=False)
    spec = tmp_path / "domain.json"
    spec.write_text(json.dumps(SPEC))
    cli = subprocess.run(
        [
            str(privq_bin), "synth", "--mechanism", "adaptive", "--input", str(csv),
            "--domain", str(spec), "--epsilon", "0.7", "--delta", "1e-8",
            "--neighbours", neighbours, "--workload", "marginals:2", "--seed", str(seed),
        ],
        capture_output=True, text=True, check=False,
    )
    assert cli.returncode == 0, cli.stderr
    out_path = tmp_path / "cli.csv"
    out_path.write_text(cli.stdout)
    from_cli = pd.read_csv(out_path, dtype={"city": "str"}).astype(df.dtypes.to_dict())

    domain = privq.Domain(spec)
    from_python = privq.synthesize(
        df, domain, epsilon=0.7, delta=1e-8, neighbours=neighbours,
        workload="marginals:2", seed=seed,
    )
    assert len(from_python) > 100
    pd.testing.assert_frame_equal(from_python, from_cli)
    # Polars in, the same rows out.
    from_polars = privq.synthesize(
        pl.from_pandas(df), domain, epsilon="7/10", delta=1e-8, neighbours=neighbours,
        workload="marginals:2", seed=seed,
    )
    pd.testing.assert_frame_equal(from_polars.to_pandas(), from_cli, check_dtype=False)
