"""The auditor's adaptive-marginals case through the Python API: on the case's own
neighbouring tables (20 × (0, 0) + 10 × (1, 1), and the same plus one (1, 0)),
privq.synthesize releases exactly what `privq synth` releases for the same seed, on
both sides. The auditor runs the library function both front ends call
(`adaptive_marginals`) on this pair, at ρ = 1 and T = 4 (`privq audit
adaptive-marginals`: empirical ε below the exact-profile claim, and a twin with
half the noise flagged), so what it measures is what Python releases: the binding
adds no dependence on the data of its own, and the same seed gives the same rows
from either front end."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

import privq


def pair(side: str) -> pd.DataFrame:
    a = [0] * 20 + [1] * 10
    b = list(a)
    if side == "D'":
        a.append(1)
        b.append(0)
    return pd.DataFrame({"a": a, "b": b})


@pytest.mark.parametrize("side", ["D", "D'"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_audit_pair_releases_what_the_program_releases(privq_bin, tmp_path, side, seed):
    df = pair(side)
    csv = tmp_path / "pair.csv"
    df.to_csv(csv, index=False)
    spec = tmp_path / "domain.json"
    spec.write_text(json.dumps({"a": 2, "b": 2}))
    cli = subprocess.run(
        [
            str(privq_bin), "synth", "--mechanism", "adaptive", "--input", str(csv),
            "--domain", str(spec), "--epsilon", "1", "--delta", "1e-9",
            "--workload", "marginals:2", "--seed", str(seed),
        ],
        capture_output=True, text=True, check=False,
    )
    assert cli.returncode == 0, cli.stderr
    out = tmp_path / "cli.csv"
    out.write_text(cli.stdout)
    from_cli = pd.read_csv(out).astype(df.dtypes.to_dict())
    from_python = privq.synthesize(
        df, privq.Domain(spec), epsilon=1, delta=1e-9, workload="marginals:2", seed=seed
    )
    pd.testing.assert_frame_equal(from_python, from_cli)


def test_the_pair_differs_by_one_record():
    d, d2 = pair("D"), pair("D'")
    assert len(d2) == len(d) + 1
    assert d2.iloc[-1].tolist() == [1, 0]
    pd.testing.assert_frame_equal(d2.iloc[:-1], d)
