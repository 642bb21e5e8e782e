#!/usr/bin/env python3
"""privq.synthesize against `privq synth` on the same data and seed.

A benchmark, not a test: it runs the release once per dataset from Python and
once from the command line, asserts that both release the same rows, and prints
the wall times and the binding's overhead (the DataFrame in and out: the
conversion to the dictionary columns Rust reads, and back to a DataFrame) as a
share of the Python call.

    PRIVQ_BIN=target/debug/privq python python/bench/synth_vs_cli.py \
        --data ../shared/data --datasets adult,nltcs --epsilon 1 --seed 0

The data are read from --data (or $PRIVQ_DATA): adult/adult.csv with
adult/adult-domain.json, and nltcs.csv (binary). Nothing is written outside a
temporary directory. Seeds make the noise removable: benchmarks only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

import privq
from privq import _frames, _privq


def datasets(root: Path) -> dict:
    """name -> (csv path, domain spec)."""
    out = {}
    adult = root / "adult" / "adult.csv"
    if adult.is_file():
        spec = json.loads((root / "adult" / "adult-domain.json").read_text())
        out["adult"] = (adult, spec)
    nltcs = root / "nltcs.csv"
    if nltcs.is_file():
        header = nltcs.read_text().splitlines()[0].split(",")
        out["nltcs"] = (nltcs, {c: 2 for c in header})
    return out


def staged(df, domain, epsilon, seed):
    """privq.synthesize's stages, timed: DataFrame in, the release (Rust), DataFrame out."""
    t0 = time.perf_counter()
    table, kind, columns = _frames.to_columns(df, domain)
    shape = _frames.shape_of(table, kind, df)
    t1 = time.perf_counter()
    out, _info, _fitted = _privq._synthesize(
        columns, domain._inner, epsilon, 1e-9, None, "add-remove", None, None, seed
    )
    t2 = time.perf_counter()
    data = _frames.from_shape(out, shape, domain)
    t3 = time.perf_counter()
    return data, (t1 - t0, t2 - t1, t3 - t2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.environ.get("PRIVQ_DATA", "../shared/data"))
    p.add_argument("--privq-bin", default=os.environ.get("PRIVQ_BIN", "target/debug/privq"))
    p.add_argument("--datasets", default="adult,nltcs")
    p.add_argument("--epsilon", default="1")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    found = datasets(Path(args.data))
    names = [n for n in args.datasets.split(",") if n]
    missing = [n for n in names if n not in found]
    if missing:
        print(f"no data for {missing} under {args.data} (set --data or PRIVQ_DATA)", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore", privq.SeedWarning)
    print(f"privq.synthesize vs privq synth, epsilon {args.epsilon}, delta 1e-9, seed {args.seed}")
    print(f"{'dataset':8} {'rows':>6} {'cli s':>7} {'python s':>9} {'rust s':>7} "
          f"{'in s':>6} {'out s':>6} {'overhead':>9}  identical")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            csv, spec = found[name]
            domain_path = Path(tmp) / f"{name}-domain.json"
            domain_path.write_text(json.dumps(spec))
            out_path = Path(tmp) / f"{name}-cli.csv"
            t = time.perf_counter()
            cli = subprocess.run(
                [args.privq_bin, "synth", "--input", str(csv), "--domain", str(domain_path),
                 "--epsilon", args.epsilon, "--delta", "1e-9", "--seed", str(args.seed),
                 "--output", str(out_path)],
                capture_output=True, text=True, check=False,
            )
            cli_s = time.perf_counter() - t
            if cli.returncode != 0:
                print(cli.stderr, file=sys.stderr)
                return 1
            df = pd.read_csv(csv)
            domain = privq.Domain(spec)
            t = time.perf_counter()
            whole = privq.synthesize(df, domain, epsilon=args.epsilon, delta=1e-9, seed=args.seed)
            python_s = time.perf_counter() - t
            data, (t_in, t_rust, t_out) = staged(df, domain, args.epsilon, args.seed)
            from_cli = pd.read_csv(out_path).astype(df.dtypes.to_dict())
            pd.testing.assert_frame_equal(whole, data)
            pd.testing.assert_frame_equal(whole, from_cli)
            overhead = (t_in + t_out) / (t_in + t_rust + t_out)
            print(f"{name:8} {len(df):>6} {cli_s:>7.2f} {python_s:>9.2f} {t_rust:>7.2f} "
                  f"{t_in:>6.3f} {t_out:>6.3f} {overhead:>8.2%}  yes ({len(whole)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
