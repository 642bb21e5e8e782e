#!/usr/bin/env python3
"""COUNT, SUM and AVG by group at epsilon 1: pandas, privq.sql, `privq sql`, diffprivlib and OpenDP.

A benchmark, not a test. It generates a synthetic table from a fixed seed — N rows in
shuffled order, N/10 privacy units of 10 rows each, all of a unit's rows in one of G
groups (unit u in group u*7919 mod G), a value x uniform on [-10, 110) with two
decimals, bounds 0:100 (so about a sixth of the values are clamped) — the shape of
privq's Rust bench (`host/benches/aggregate.rs`), but drawn with NumPy, so not the same
rows. On it, `COUNT(*)`, `SUM(x)`, `AVG(x)` by group with public keys, at epsilon 1:

* pandas: a plain groupby of the clamped values (the non-private baseline and truth);
* privq.sql on the pandas DataFrame (privacy unit `unit`, max_groups 1, max_rows 10);
* the `privq sql` program on the same data written to a CSV file (the process timed);
* diffprivlib: `count_nonzero`, `sum` and `mean` per group (epsilon 1/3 each) through a
  pandas groupby. It has no privacy unit and no contribution bounding: its guarantee
  is per row (per unit of 10 rows it is 10x weaker); its sum and mean add float
  Laplace noise, and its mean takes the group's size as public (scale (hi-lo)/(n*eps));
* OpenDP's Polars front end: the unit as identifier, `truncate_per_group(10)` and
  `truncate_num_groups(2)` (which keeps one group per unit, but is accounted as two:
  see run_opendp), `len` and a clamped `sum` (epsilon 1/2 each) joined with the public
  keys; the mean is sum / count (post-processing). OpenDP 0.16's Polars plugin needs
  Polars 1.36.1 in the environment (diffprivlib 0.6.6 fails to import with scikit-learn
  1.9.1; 1.5.2 works); OpenDP takes no seed.

Each is timed as the median of --repeats runs after a warm-up run. Accuracy: the mean
absolute error of the per-group means against the true clamped means (a group whose
release has no mean is counted and left out), and the share of groups whose reported
95 % interval for the mean holds the true mean (privq only; the others report none).

    pip install diffprivlib==0.6.6 scikit-learn==1.5.2 opendp==0.16.0 polars==1.36.1
    python python/bench/aggregate_vs_peers.py --privq-bin target/debug/privq \\
        --rows 100000,1000000 --groups 1000 --extra 1000000:10 --json /tmp/aggregate_vs_peers.json

A missing peer (diffprivlib, opendp, or the program for `cli`) is an error unless
`--skip PEER` names it. The CSV file goes to a temporary directory, removed at the end.
Seeds make the noise removable: benchmarks only.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import privq

PEERS = ("cli", "diffprivlib", "opendp")
OPENDP_PHASES: list = []  # (release, collect) seconds of each OpenDP run
ROWS_PER_UNIT = 10
LO, HI = 0.0, 100.0
EPSILON = 1
QUERY = "SELECT region, COUNT(*) AS n, SUM(x) AS sum_x, AVG(x) AS mean_x FROM t GROUP BY region"


def generate(rows: int, groups: int, seed: int) -> pd.DataFrame:
    """The synthetic table: columns unit (text), region (text), x (float)."""
    rng = np.random.default_rng(seed)
    units = rng.permutation(np.arange(rows, dtype=np.int64) // ROWS_PER_UNIT)
    region = units * 7919 % groups
    x = (rng.integers(0, 12_000, rows) - 1_000) / 100.0
    return pd.DataFrame(
        {
            "unit": pd.array([f"u{u}" for u in units], dtype="str"),
            "region": pd.array([f"g{k}" for k in region], dtype="str"),
            "x": x,
        }
    )


def timed(fn, repeats: int):
    """Warm-up, then `repeats` timed runs: (median seconds, every time, last result)."""
    out = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def run_pandas(df):
    g = df.assign(x=df["x"].clip(LO, HI)).groupby("region", sort=False)["x"]
    return g.agg(["count", "sum", "mean"]).rename(columns={"count": "n", "sum": "sum_x", "mean": "mean_x"})


def run_privq(df, keys, seed):
    return privq.sql(
        QUERY,
        {"t": df},
        epsilon=EPSILON,
        privacy_unit="unit",
        max_groups=1,
        max_rows=ROWS_PER_UNIT,
        bounds={"x": (LO, HI)},
        keys={"region": keys},
        seed=seed,
    ).set_index("region")


def run_cli(binary, csv_path, keys, seed):
    cmd = [
        binary, "sql", QUERY, "--table", f"t={csv_path}", "--privacy-unit", "unit",
        "--max-groups", "1", "--max-rows", str(ROWS_PER_UNIT), "--bounds", f"x={LO:g}:{HI:g}",
        "--keys", "region=" + ",".join(keys), "--epsilon", str(EPSILON), "--seed", str(seed),
        "--format", "csv",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"privq sql failed ({done.returncode}): {done.stderr.strip()}")
    return pd.read_csv(io.StringIO(done.stdout), dtype={"region": str}).set_index("region")


def run_diffprivlib(df, seed):
    import diffprivlib as dpl

    rng = np.random.RandomState(seed)
    acc = dpl.BudgetAccountant()  # unlimited; a fresh one per run, not the global default
    e = EPSILON / 3
    out = {}
    for key, x in df.groupby("region", sort=False)["x"]:
        v = x.to_numpy()
        # count_nonzero over ones: over x it would miss the rows where x == 0.
        n = dpl.tools.count_nonzero(np.ones_like(v), epsilon=e, random_state=rng, accountant=acc)
        s = dpl.tools.sum(v, epsilon=e, bounds=(LO, HI), random_state=rng, accountant=acc)
        m = dpl.tools.mean(v, epsilon=e, bounds=(LO, HI), random_state=rng, accountant=acc)
        out[key] = (n, s, m)
    return pd.DataFrame.from_dict(out, orient="index", columns=["n", "sum_x", "mean_x"])


def run_opendp(df, keys):
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    data = pl.from_pandas(df).lazy()
    context = dp.Context.compositor(
        data=data,
        privacy_unit=dp.unit_of(contributions=1, identifier="unit"),
        privacy_loss=dp.loss_of(epsilon=float(EPSILON)),
        split_evenly_over=1,
        margins=[dp.polars.Margin(by=["region"], invariant="keys", max_length=len(df), max_groups=len(keys))],
    )
    query = (
        context.query()
        .truncate_per_group(ROWS_PER_UNIT, by=["region"])
        # OpenDP 0.16 keeps the groups whose Polars dense rank (1-based) is below k, so
        # k = 1 keeps none: k = 2 keeps one group per unit (privq's limit) but is
        # accounted as two, which doubles OpenDP's noise here. keep="first": the default
        # ("sample") ranks a struct that Polars 1.36 rejects (duplicate field names).
        .truncate_num_groups(2, by=["region"], keep="first")
        .group_by("region")
        .agg(pl.len().dp.noise().alias("n"), pl.col("x").fill_null(0.0).dp.sum((LO, HI)).alias("sum_x"))
        .with_keys(pl.DataFrame({"region": keys}))
    )
    # release() resolves the measurement (a search for the noise scale that meets the
    # budget) and collect() runs it on the data: timed apart, for the report.
    t0 = time.perf_counter()
    released = query.release()
    t1 = time.perf_counter()
    out = released.collect().to_pandas().set_index("region")
    OPENDP_PHASES.append((t1 - t0, time.perf_counter() - t1))
    out["mean_x"] = (out["sum_x"] / out["n"].where(out["n"] > 0)).clip(LO, HI)
    return out


def accuracy(release, truth):
    """(MAE of the per-group means, groups without a mean, interval coverage or None)."""
    r = release.reindex(truth.index)
    est = pd.to_numeric(r["mean_x"], errors="coerce")
    ok = est.notna()
    mae = float((est[ok] - truth["mean_x"][ok]).abs().mean())
    cover = None
    if "mean_x_lo" in r.columns:
        t = truth["mean_x"]
        cover = float(((r["mean_x_lo"] <= t) & (t <= r["mean_x_hi"])).mean())
    return mae, int((~ok).sum()), cover


def loadavg():
    return Path("/proc/loadavg").read_text().split()[0]


def check_peers(skip, binary):
    missing = []
    if "cli" not in skip and not (binary and os.access(binary, os.X_OK)):
        missing.append(f"cli (no executable program at {binary!r}; --privq-bin or $PRIVQ_BIN)")
    for mod in ("diffprivlib", "opendp"):
        if mod in skip:
            continue
        try:
            __import__(mod)
        except ImportError as e:
            missing.append(f"{mod} ({e})")
    if "opendp" not in skip and not missing:
        import opendp
        import polars

        if polars.__version__ != "1.36.1":
            missing.append(f"opendp (OpenDP {opendp.__version__}'s Polars plugin needs polars 1.36.1, found {polars.__version__})")
    return missing


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="A missing peer is an error unless --skip names it. See the module docstring for what each case does.",
    )
    p.add_argument("--rows", default="100000,1000000", help="comma-separated table sizes N (default %(default)s)")
    p.add_argument("--groups", type=int, default=1000, help="groups G for every N (default %(default)s)")
    p.add_argument("--extra", default="", help="extra N:G runs, comma-separated (e.g. 1000000:10)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs after the warm-up (default %(default)s)")
    p.add_argument("--seed", type=int, default=29, help="seed of the table and of privq's and diffprivlib's noise")
    p.add_argument("--privq-bin", default=os.environ.get("PRIVQ_BIN", "target/debug/privq"), help="the privq program (default $PRIVQ_BIN or %(default)s)")
    p.add_argument("--skip", action="append", default=[], choices=PEERS, help="leave out a peer (repeatable)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = p.parse_args()

    missing = check_peers(set(args.skip), args.privq_bin)
    if missing:
        for m in missing:
            print(f"missing peer: {m}", file=sys.stderr)
        print("install it or pass --skip PEER", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore", privq.SeedWarning)

    runs = [(int(n), args.groups) for n in args.rows.split(",") if n]
    for item in filter(None, args.extra.split(",")):
        n, g = item.split(":")
        runs.append((int(n), int(g)))

    versions = {"python": sys.version.split()[0], "pandas": pd.__version__, "numpy": np.__version__}
    for dist in ("privq", "diffprivlib", "opendp", "polars", "scikit-learn"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    meta = {"loadavg_start": loadavg(), "cpus": os.cpu_count(), "versions": versions, "seed": args.seed,
            "epsilon": EPSILON, "repeats": args.repeats, "privq_bin": args.privq_bin}
    print(f"load average (1 min) at start: {meta['loadavg_start']}; versions: {versions}", flush=True)

    results = []
    tmp = Path(tempfile.mkdtemp(prefix="privq-bench-"))
    try:
        for n, g in runs:
            df = generate(n, g, args.seed)
            keys = [f"g{k}" for k in range(g)]
            base_t, base_all, truth = timed(lambda: run_pandas(df), args.repeats)
            truth = truth.reindex(keys)

            def add(method, t, all_t, out, note=""):
                mae, no_mean, cover = accuracy(out, truth) if out is not None else (0.0, 0, None)
                row = {"rows": n, "groups": g, "method": method, "seconds": t, "times": all_t,
                       "ratio": t / base_t, "mae_mean": mae, "groups_without_mean": no_mean,
                       "coverage_mean": cover, "note": note}
                results.append(row)
                print(f"  N={n} G={g} {method}: {t:.4f} s ({t / base_t:.1f}x), MAE {mae:.3g}"
                      + (f", coverage {cover:.1%}" if cover is not None else ""), flush=True)

            add("pandas groupby (non-private)", base_t, base_all, None, "clamped; the truth")
            t, all_t, out = timed(lambda: run_privq(df, keys, args.seed), args.repeats)
            add("privq.sql (pandas DataFrame)", t, all_t, out, "per unit: 1 group, 10 rows")
            if "cli" not in args.skip:
                csv = tmp / "t.csv"
                df.to_csv(csv, index=False)
                t, all_t, out = timed(lambda: run_cli(args.privq_bin, csv, keys, args.seed), args.repeats)
                add("`privq sql` program (CSV file, process)", t, all_t, out, "per unit; includes start-up and CSV parse")
                same = np.allclose(out["mean_x"].reindex(keys).to_numpy(), run_privq(df, keys, args.seed)["mean_x"].reindex(keys).to_numpy(), equal_nan=True)
                results[-1]["same_as_python"] = bool(same)
            if "diffprivlib" not in args.skip:
                t, all_t, out = timed(lambda: run_diffprivlib(df, args.seed), args.repeats)
                add("diffprivlib (per group)", t, all_t, out, "per row, not per unit; float Laplace")
            if "opendp" not in args.skip:
                OPENDP_PHASES.clear()
                t, all_t, out = timed(lambda: run_opendp(df, keys), args.repeats)
                phases = OPENDP_PHASES[1:]  # after the warm-up
                resolve = statistics.median(p[0] for p in phases)
                collect = statistics.median(p[1] for p in phases)
                add("OpenDP (Polars, identifier + truncation)", t, all_t, out,
                    f"per unit, accounted as 2 groups; no seed; resolve {resolve:.2f} s + data {collect:.2f} s")
                results[-1]["opendp_resolve_seconds"] = resolve
                results[-1]["opendp_collect_seconds"] = collect
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta["loadavg_end"] = loadavg()

    print()
    print(f"epsilon {EPSILON}, seed {args.seed}, median of {args.repeats} after a warm-up; "
          f"load average {meta['loadavg_start']} -> {meta['loadavg_end']}; {meta['cpus']} CPUs")
    print()
    print("| N | G | method | wall time | / pandas | MAE of group means | privq 95 % interval coverage | guarantee |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        cover = f"{r['coverage_mean']:.1%}" if r["coverage_mean"] is not None else "—"
        mae = "0 (truth)" if r["method"].startswith("pandas") else f"{r['mae_mean']:.3g}"
        if r["groups_without_mean"]:
            mae += f" ({r['groups_without_mean']} groups without a mean)"
        print(f"| {r['rows']:,} | {r['groups']:,} | {r['method']} | {r['seconds'] * 1000:.1f} ms | "
              f"{r['ratio']:.1f}× | {mae} | {cover} | {r['note']} |")
    same = [r.get("same_as_python") for r in results if "same_as_python" in r]
    if same:
        print(f"\n`privq sql` released the same means as privq.sql for the same seed: {all(same)}")
    print("\ndiffprivlib has no contribution bounding: its epsilon is per row, so per privacy unit "
          "(10 rows) it is 10 times weaker; its sum and mean add float Laplace noise (not exact "
          "sampling), and its mean treats the group's row count as public.")
    print("OpenDP: truncate_num_groups(2) keeps one group per unit but is accounted as two "
          "(0.16 keeps dense ranks below k, and Polars ranks from 1), doubling its noise.")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
