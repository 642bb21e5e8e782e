#!/usr/bin/env python3
"""Side-by-side benchmark of private synthetic data: privq against AIM and MST.

Run through tools/synth-bench, which prepares the Python environment. For every
dataset, epsilon and seed it runs each mechanism, times it (wall clock), and
reports the mean total-variation distance (TV of a marginal = 1/2 sum |p - q|)
over all 2-way and all 3-way marginals, of the released model (where the mechanism
exposes one) and of the synthetic records. One table at the end, and a JSON file
with every run. Two non-private references can run as rows too: bootstrap (a
resample of the true records) and independent (each column from its true one-way
marginal). privq and the references need numpy and pandas only; mbi is imported
for AIM and MST alone. --scale K,... runs privq and the references on the records
repeated K times as well (cost growth: rows, wall time, privq's peak memory).

Every run is a child process (this script with --run-one), so a run can be given a
wall-clock cap (--timeout): a run that does not finish in time is killed and
reported as "did not finish in N s" (for AIM, with the rounds it completed), and
the other runs go on. --merge-json FILE re-runs only the mechanisms named in
--mechanisms-to-run and keeps every other row of FILE (for example, refresh the
privq rows against the same AIM rows); the table marks the rows that come from an
earlier run, with that run's date.
"""

import argparse
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

import numpy as np

MBI_MECHANISMS = ("aim", "mst")
BASELINES = ("bootstrap", "independent")  # not private: references that read the true data
MECHANISMS = ("privq",) + MBI_MECHANISMS + BASELINES
DATASETS = ("nltcs", "adult")
GNU_TIME = "/usr/bin/time"


def tv(x, y):
    return 0.5 * np.abs(x / x.sum() - y / y.sum()).sum()


def mean_tv(data, other, k):
    cliques = list(itertools.combinations(data.domain.attrs, k))
    return float(np.mean([tv(data.project(c).datavector(), other.project(c).datavector())
                          for c in cliques]))


class Records:
    """Records over a finite domain, counted with numpy alone (no mbi): the privq, bootstrap
    and independent rows use this, so they run in a plain numpy + pandas environment.
    columns: attribute -> 1-d integer array; domain: attribute -> number of values (ordered).
    A marginal's counts are np.bincount of the mixed-radix index of its attributes' values
    over every cell of the marginal, the same vector (up to cell order, which TV ignores)
    as mbi's Dataset.project(clique).datavector()."""

    def __init__(self, columns, domain, what="records"):
        self.domain = dict(domain)
        self.columns = {}
        for a, size in self.domain.items():
            if a not in columns:
                raise ValueError(f"{what}: no column {a!r}")
            col = np.asarray(columns[a])
            if col.dtype.kind not in "iu":
                raise ValueError(f"{what}: column {a!r} is not integer-valued ({col.dtype})")
            col = col.astype(np.int64, copy=False)
            if col.size and (col.min() < 0 or col.max() >= size):
                raise ValueError(f"{what}: column {a!r} has values outside 0..{size - 1}")
            self.columns[a] = col
        self.rows = len(next(iter(self.columns.values()))) if self.columns else 0

    @classmethod
    def from_frame(cls, df, domain, what="records"):
        return cls({a: df[a].to_numpy() for a in domain if a in df.columns}, domain, what)

    def counts(self, clique):
        index = np.zeros(self.rows, dtype=np.int64)
        cells = 1
        for a in clique:
            index *= self.domain[a]
            index += self.columns[a]
            cells *= self.domain[a]
        return np.bincount(index, minlength=cells)


def mean_tv_records(data, other, k, cache=None):
    """mean_tv of two Records over the same domain, with numpy alone: TV = 1/2 sum |p - q|
    over every cell of each k-way marginal (normalised counts), averaged over all k-way
    marginals. cache (a dict) keeps data's marginals between calls."""
    cache = {} if cache is None else cache
    tvs = []
    for c in itertools.combinations(data.domain, k):
        if c not in cache:
            cache[c] = data.counts(c)
        tvs.append(tv(cache[c], other.counts(c)))
    return float(np.mean(tvs))


def mbi_version():
    """The installed mbi's version as a tuple of ints, e.g. (2, 0, 0)."""
    from importlib.metadata import version
    return tuple(int(x) for x in re.findall(r"\d+", version("mbi"))[:3])


def make_dataset(df, domain):
    """An mbi Dataset of a pandas DataFrame's columns over an mbi Domain. mbi 1.x takes the
    DataFrame itself; mbi 2.x takes a dict of 1-d integer arrays (and has no Dataset.load)."""
    from mbi import Dataset
    if mbi_version() >= (2,):
        return Dataset({a: df[a].to_numpy(dtype=np.int64) for a in domain.attrs}, domain)
    return Dataset(df[list(domain.attrs)], domain)


def read_dataset(csv, domain_json):
    """Dataset.load of mbi 1.x, for either version: the CSV's columns named in the domain
    file (a JSON object, attribute -> number of values)."""
    import pandas as pd
    from mbi import Domain
    with open(domain_json) as f:
        domain = Domain.fromdict(json.load(f))
    return make_dataset(pd.read_csv(csv, usecols=list(domain.attrs)), domain)


def dataset_files(name, data_dir, tmp):
    """The CSV of a dataset, its domain file (a JSON object, attribute -> number of values,
    as mbi reads it) and privq's --domain argument for it."""
    if name == "nltcs":
        csv = os.path.join(data_dir, "nltcs.csv")
        with open(csv) as f:
            header = f.readline().strip().split(",")
        domain = os.path.join(tmp, "nltcs-domain.json")
        with open(domain, "w") as f:
            json.dump({h: 2 for h in header}, f)
        return csv, domain, "binary"
    if name == "adult":
        domain = os.path.join(data_dir, "adult", "adult-domain.json")
        return os.path.join(data_dir, "adult", "adult.csv"), domain, domain
    sys.exit(f"synth-bench: unknown dataset {name!r} ({', '.join(DATASETS)})")


def load(name, data_dir, tmp):
    """An mbi Dataset and the privq arguments for the same data."""
    csv, domain, privq_domain = dataset_files(name, data_dir, tmp)
    return read_dataset(csv, domain), ["--input", csv, "--domain", privq_domain]


def load_records(name, data_dir, tmp):
    """The dataset as Records (numpy, no mbi), its CSV and privq's --domain argument."""
    import pandas as pd
    csv, domain_json, privq_domain = dataset_files(name, data_dir, tmp)
    with open(domain_json) as f:
        domain = json.load(f)
    data = Records.from_frame(pd.read_csv(csv, usecols=list(domain)), domain, csv)
    return data, csv, privq_domain


def replicate_csv(csv, k, out):
    """Writes the CSV's records k times over (one header) to out: the same data, k times
    the rows, with exactly the same normalised marginals."""
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"the scale must be a positive integer (got {k!r})")
    with open(csv, "rb") as f:
        header = f.readline()
        body = f.read()
    if body and not body.endswith(b"\n"):
        body += b"\n"
    with open(out, "wb") as f:
        f.write(header)
        for _ in range(k):
            f.write(body)
    return out


def mbi2_compat():
    """Run the newest mechanisms/ folder we have (github.com/ryan112358/mbi at 361705d,
    written against mbi 1.3) and this script on mbi 2.0.0, which renamed two things it
    uses: Domain.attrs is Domain.attributes, and estimate(..., potentials=P) (AIM's warm
    start) is estimate(..., warm_start=P), which takes the same CliqueVector. Alias the old
    names to the new ones (a no-op where the old names exist)."""
    import inspect
    from mbi import Domain, estimation
    if not hasattr(Domain, "attrs"):
        Domain.attrs = property(lambda self: self.attributes)
    est = getattr(getattr(estimation, "Estimator", None), "estimate", None)
    if est is None:  # mbi 1.0.0: estimators are functions (estimation.mirror_descent)
        return
    params = inspect.signature(est).parameters
    if "potentials" in params or "warm_start" not in params \
            or getattr(est, "_synth_bench_compat", False):
        return

    def estimate(self, *args, potentials=None, **kwargs):
        if potentials is not None and kwargs.get("warm_start") is None:
            kwargs["warm_start"] = potentials
        return est(self, *args, **kwargs)
    estimate._synth_bench_compat = True
    estimation.Estimator.estimate = estimate


def peak_timer():
    """GNU time's command line for a command's peak resident set, or None without it.
    Not os.wait4 on privq started from here: Linux counts in a child's ru_maxrss the
    memory of the process it was started from (this one, with Python and the data
    loaded: ~80 MB, more than privq's own on Adult), while the child of GNU time starts
    from GNU time's ~2 MB."""
    try:
        ok = subprocess.run([GNU_TIME, "-f", "%M", "-o", os.devnull, "true"],
                            capture_output=True).returncode == 0
    except OSError:
        ok = False
    return [GNU_TIME, "-f", "%M", "-o"] if ok else None


def run_privq(privq, args, domain, eps, delta, seed, tmp, timer):
    """privq synth --compare. Its wall time is the release's own time, which privq reports
    under --compare (reading the input to writing the records); the process time (which
    also counts the compare, a diagnostic that is slow on Adult) is the second value. With
    timer (peak_timer()), the process's peak resident memory in MB (it includes the
    compare's)."""
    import pandas as pd
    out = os.path.join(tmp, "privq-synth.csv")
    peak_file = os.path.join(tmp, "privq-peak-kib")
    cmd = [privq, "synth", *args, "--epsilon", str(eps), "--delta", str(delta),
           "--seed", str(seed), "--compare", "--output", out]
    start = time.perf_counter()
    proc = subprocess.run((timer + [peak_file] if timer else []) + cmd,
                          capture_output=True, text=True)
    process = time.perf_counter() - start
    stderr = proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{stderr}")
    peak_mb = None
    if timer:
        with open(peak_file) as f:
            peak_mb = int(f.read().split()[-1]) / 1024  # GNU time's %M is in KiB
    m = re.search(r"the release took ([0-9.]+) s", stderr)
    if m is None:
        print("synth-bench: privq did not report the release's time; "
              "using the process's wall time", flush=True)
    wall = float(m.group(1)) if m else process
    model, own = {}, {}
    for k, mv, sv in re.findall(r"mean (\d)-way TV over \d+ marginals: model ([0-9.]+)"
                                r"(?:, synthetic records ([0-9.]+))?", stderr):
        model[int(k)] = float(mv)
        if sv:
            own[int(k)] = float(sv)
    synth = Records.from_frame(pd.read_csv(out), domain, "privq's synthetic records")
    return {"wall_s": wall, "process_wall_s": process, "peak_rss_mb": peak_mb,
            "model_tv2": model.get(2), "model_tv3": model.get(3),
            "privq_compare_sample_tv2": own.get(2),
            "privq_compare_sample_tv3": own.get(3)}, synth


def bootstrap(data, n, seed):
    """The bootstrap floor (not private): n records drawn uniformly with replacement from
    the true records. On k copies of the data this is the same as drawing from one copy."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, data.rows, size=n)
    return Records({a: c[pick] for a, c in data.columns.items()}, data.domain)


def independent(data, n, seed):
    """The independent-columns baseline (not private): each column drawn on its own, n
    values, from its true one-way marginal."""
    rng = np.random.default_rng(seed)
    cols = {}
    for a, size in data.domain.items():
        p = np.bincount(data.columns[a], minlength=size) / data.rows
        cols[a] = rng.choice(size, size=n, p=p)
    return Records(cols, data.domain)


def run_aim(mechanisms, data, eps, delta, seed, full_joint_max_cells=0):
    """AIM as in mechanisms/aim.py. With full_joint_max_cells >= the domain's size, each
    round's selection step reads every candidate's estimated marginal off the model's
    full joint (computed once per round) instead of one inference per candidate: the same
    numbers (the model's exact marginals), far faster on a small domain such as NLTCS
    (2^16 cells); this is how the AIM figures of specs/synthetic-data-sota.md were made."""
    sys.path.insert(0, mechanisms)
    from aim import AIM
    cls = AIM
    if data.domain.size() <= full_joint_max_cells:
        class AIMFullJoint(AIM):
            def worst_approximated(self, candidates, answers, model, eps, sigma):
                joint = model.project(tuple(model.domain.attrs))

                class Joint:
                    domain = model.domain

                    @staticmethod
                    def project(cl):
                        return joint.project(cl)
                return AIM.worst_approximated(self, candidates, answers, Joint, eps, sigma)
        cls = AIMFullJoint
        print(f"synth-bench: AIM selection from the full joint ({data.domain.size()} cells)",
              flush=True)
    np.random.seed(seed)
    workload = [(c, 1.0) for c in itertools.combinations(data.domain.attrs, 3)]
    start = time.perf_counter()
    model, synth = cls(eps, delta, max_model_size=80).run(data, workload)
    wall = time.perf_counter() - start
    return wall, model, synth


def run_mst(mechanisms, data, eps, delta, seed):
    sys.path.insert(0, mechanisms)
    from mst import MST
    np.random.seed(seed)
    start = time.perf_counter()
    synth = MST(data, eps, delta)
    wall = time.perf_counter() - start
    return wall, synth


def run_records(spec, tmp):
    """privq, bootstrap or independent, on the dataset's records k = spec["scale"] times
    over, measured with numpy alone (mbi is not imported). The TV is against the data
    itself: k copies of it have exactly its normalised marginals."""
    mech, eps, delta, seed = spec["mechanism"], spec["epsilon"], spec["delta"], spec["seed"]
    scale = spec.get("scale", 1)
    data, csv, privq_domain = load_records(spec["dataset"], spec["data"], tmp)
    n = data.rows * scale
    if mech == "privq":
        if scale != 1:
            csv = replicate_csv(csv, scale, os.path.join(tmp, f"{spec['dataset']}-x{scale}.csv"))
        row, synth = run_privq(spec["privq"], ["--input", csv, "--domain", privq_domain],
                               data.domain, eps, delta, seed, tmp, spec.get("peak_timer"))
    elif mech in BASELINES:
        start = time.perf_counter()
        synth = {"bootstrap": bootstrap, "independent": independent}[mech](data, n, seed)
        row = {"wall_s": time.perf_counter() - start, "model_tv2": None, "model_tv3": None}
    else:
        raise ValueError(f"unknown mechanism {mech!r}")
    cache = {}
    row.update(rows=n, synthetic_rows=synth.rows,
               sample_tv2=mean_tv_records(data, synth, 2, cache),
               sample_tv3=mean_tv_records(data, synth, 3, cache))
    return row


def run_one(spec):
    """One run in this (child) process: spec is a JSON object; the row is written to spec["out"].
    Only AIM and MST import mbi."""
    with tempfile.TemporaryDirectory() as tmp:
        if spec["mechanism"] not in MBI_MECHANISMS:
            row = run_records(spec, tmp)
        else:
            row = run_mbi(spec, tmp)
    with open(spec["out"], "w") as f:
        json.dump(row, f)


def run_mbi(spec, tmp):
    """AIM or MST, measured with mbi."""
    mbi2_compat()
    data, _ = load(spec["dataset"], spec["data"], tmp)
    mech, eps, delta, seed = spec["mechanism"], spec["epsilon"], spec["delta"], spec["seed"]
    row = {}
    if mech == "aim":
        wall, model, synth = run_aim(spec["mechanisms"], data, eps, delta, seed,
                                     spec.get("aim_full_joint_max_cells", 0))
        print(f"synth-bench: AIM done in {wall:.1f} s, computing TV", flush=True)
        # The model's marginals: on a small domain from its full joint, computed once.
        # (mbi 2.0.0 answers each other marginal by a jitted variable elimination, one
        # compilation per clique: the 680 of NLTCS ran out of memory after a 3 GB AIM.)
        if data.domain.size() <= max(spec.get("aim_full_joint_max_cells", 0), 0) \
                and data.domain.size() <= 1 << 20:
            joint = model.project(tuple(data.domain.attrs))
            attrs = list(joint.domain.attrs)
            values = np.asarray(joint.datavector(flatten=False))

            class Marginal:
                def __init__(self, cl):
                    cl = list(cl)
                    rest = tuple(i for i, a in enumerate(attrs) if a not in cl)
                    kept = [a for a in attrs if a in cl]
                    self.v = values.sum(axis=rest).transpose([kept.index(a) for a in cl])

                def datavector(self):
                    return self.v.reshape(-1)

            class Joint:
                project = Marginal
            model = Joint
        row.update(model_tv2=mean_tv(data, model, 2), model_tv3=mean_tv(data, model, 3))
    elif mech == "mst":
        wall, synth = run_mst(spec["mechanisms"], data, eps, delta, seed)
        row.update(model_tv2=None, model_tv3=None)
    else:
        raise ValueError(f"unknown mechanism {mech!r}")
    row.update(wall_s=wall, sample_tv2=mean_tv(data, synth, 2),
               sample_tv3=mean_tv(data, synth, 3))
    return row


def run_child(spec, timeout, tmp):
    """Runs one benchmark run in a child process, streaming its output (time-stamped) to
    stderr. Returns the row's result fields, with status "ok", "timeout" or "error"."""
    spec = dict(spec, out=os.path.join(tmp, "row.json"))
    if os.path.exists(spec["out"]):
        os.remove(spec["out"])
    cmd = [sys.executable, "-u", os.path.abspath(__file__), "--run-one", json.dumps(spec)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    # AIM prints "Budget Used" once per round: keep when each round started.
    rounds, tail, timed_out, aim_wall = [], [], False, []
    import threading

    def pump():
        for line in proc.stdout:
            now = time.monotonic() - start
            if line.startswith("Budget Used"):
                rounds.append(now)
            m = re.match(r"synth-bench: AIM done in ([0-9.]+) s", line)
            if m:
                aim_wall.append(float(m.group(1)))
            tail.append(line.rstrip())
            del tail[:-20]
            print(f"  [{now:8.1f} s] {line.rstrip()}", file=sys.stderr, flush=True)
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    reader.join(5)
    elapsed = time.monotonic() - start
    if timed_out:
        res = {"status": "timeout", "timeout_s": timeout, "elapsed_s": elapsed}
        if spec["mechanism"] == "aim":
            # rounds[i] is when round i+1 started; the rounds completed are those whose
            # successor started.
            done = max(len(rounds) - 1, 0)
            res.update(aim_rounds_started=len(rounds), aim_rounds_done=done,
                       aim_first_round_at_s=rounds[0] if rounds else None,
                       aim_mean_round_s=((rounds[-1] - rounds[0]) / done) if done else None)
        res["log_tail"] = tail[-5:]
        return res
    if proc.returncode != 0 or not os.path.exists(spec["out"]):
        res = {"status": "error", "returncode": proc.returncode, "elapsed_s": elapsed,
               "log_tail": tail[-10:]}
        if spec["mechanism"] == "aim":  # AIM itself may have finished (the TV failed)
            res.update(aim_rounds=len(rounds), aim_wall_s=aim_wall[0] if aim_wall else None)
        return res
    with open(spec["out"]) as f:
        res = json.load(f)
    res.update(status="ok", elapsed_s=elapsed)
    if spec["mechanism"] == "aim":
        res["aim_rounds"] = len(rounds)
    return res


def versions(privq):
    """What produced the rows: the Python packages, and the privq binary."""
    out = {"python": sys.version.split()[0]}
    for pkg in ("mbi", "jax", "jaxlib", "numpy", "pandas", "scipy", "chex", "optax"):
        try:
            from importlib.metadata import version
            out[pkg] = version(pkg)
        except Exception:
            out[pkg] = None
    if privq and os.path.exists(privq):
        st = os.stat(privq)
        out["privq_binary"] = os.path.abspath(privq)
        out["privq_binary_mtime"] = datetime.fromtimestamp(
            st.st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        out["git_head"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except OSError:
        pass
    return out


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def print_table(rows, order, this_run):
    def origin(r):
        return "this run" if r.get("run_at") == this_run else f"earlier run ({r.get('run_at', '?')})"

    def rank(m):
        return order.index(m) if m in order else len(order)

    print("| dataset | ε | mechanism | rows | from | runs | wall time (s) | peak memory (MB) "
          "| model 2-way TV | model 3-way TV | sample 2-way TV | sample 3-way TV |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for r in rows:
        status = r.get("status", "ok")
        key = (r["dataset"], r["epsilon"], r["mechanism"], r.get("scale", 1), r.get("run_at"),
               status if status == "ok" else f"{status}-{r['seed']}")
        groups.setdefault(key, []).append(r)
    none = "| — " * 5 + "|"

    def sort_key(k):
        return (k[0], float("inf") if k[1] is None else k[1], rank(k[2]), k[3], k[4] or "", k[5])
    for key in sorted(groups, key=sort_key):
        rs = groups[key]
        dataset, eps, mech, scale = key[:4]
        n = next((r["rows"] for r in rs if r.get("rows") is not None), None)
        size = ("—" if n is None else f"{n:,}") + (f" ({scale}×)" if scale != 1 else "")
        head = (f"| {dataset} | {'—' if eps is None else format(eps, 'g')} "
                f"| {mech}{' †' if mech in BASELINES else ''} | {size} | {origin(rs[0])} "
                f"| {len(rs)}")
        status = rs[0].get("status", "ok")
        if status == "timeout":
            r = rs[0]
            note = f"did not finish in {r['timeout_s']:.0f} s (seed {r['seed']})"
            if r.get("aim_rounds_done") is not None:
                note += f"; {r['aim_rounds_done']} AIM rounds done"
                if r.get("aim_mean_round_s"):
                    note += f", {r['aim_mean_round_s']:.0f} s/round"
            print(f"{head} | {note} {none}")
            continue
        if status == "skipped":
            print(f"{head} | not run: {rs[0]['reason']} (seed {rs[0]['seed']}) {none}")
            continue
        if status == "error":
            print(f"{head} | error (seed {rs[0]['seed']}) {none}")
            continue

        def mean(field):
            vals = [r[field] for r in rs if r.get(field) is not None]
            return float(np.mean(vals)) if vals else None
        walls = ", ".join(f"{r['wall_s']:.1f}" for r in sorted(rs, key=lambda r: r["seed"]))
        peaks = [r["peak_rss_mb"] for r in rs if r.get("peak_rss_mb") is not None]
        print(f"{head} | {fmt(mean('wall_s'), '.1f')} ({walls}) "
              f"| {fmt(max(peaks) if peaks else None, '.0f')} "
              f"| {fmt(mean('model_tv2'), '.4f')} | {fmt(mean('model_tv3'), '.4f')} "
              f"| {fmt(mean('sample_tv2'), '.4f')} | {fmt(mean('sample_tv3'), '.4f')} |")
    if any(r["mechanism"] in BASELINES for r in rows):
        print("\n† Not private: a reference that reads the true records (bootstrap: a resample "
              "with replacement; independent: each column drawn from its true one-way "
              "marginal), so ε does not apply.")
    print("\nWall time: the mean over the seeds (each seed's in brackets); for privq the "
          "release's own time. Peak memory: the largest peak resident set of the privq "
          "process over the seeds, by GNU time's %M (it includes --compare's).")


def print_cost_growth(rows, this_run):
    """For privq on each dataset and epsilon run at two or more scales in this run: the
    least-squares line wall time = a + b * rows over every run, and the ratio of the mean
    wall time at the largest scale to that at the smallest, against the ratio of rows."""
    groups = {}
    for r in rows:
        if r["mechanism"] == "privq" and r.get("run_at") == this_run \
                and r.get("status", "ok") == "ok" and r.get("rows"):
            groups.setdefault((r["dataset"], r["epsilon"]), []).append(r)
    for (dataset, eps), rs in sorted(groups.items()):
        scales = sorted({r.get("scale", 1) for r in rs})
        if len(scales) < 2:
            continue
        x = np.array([r["rows"] for r in rs], dtype=float)
        y = np.array([r["wall_s"] for r in rs], dtype=float)
        b, a = np.polyfit(x, y, 1)
        worst = float(np.max(np.abs(y - (a + b * x))))

        def at(k, field="wall_s"):
            vals = [r[field] for r in rs if r.get("scale", 1) == k and r.get(field) is not None]
            return float(np.mean(vals)) if vals else None
        lo, hi = scales[0], scales[-1]
        ratio = at(hi) / at(lo) if at(lo) else None
        line = (f"Cost growth, privq on {dataset} at ε = {eps:g} ({len(rs)} runs at "
                + ", ".join(f"{k}×" for k in scales) + "): wall time ≈ a + b·rows with "
                f"a = {a:.2f} s, b = {b * 1e6:.3f} µs per row (least squares; largest "
                f"residual {worst:.2f} s"
                + ("; two scales, so the line is exact" if len(scales) == 2 else "") + "). "
                f"time({hi}×) / time({lo}×) = {fmt(ratio, '.2f')}, against {hi / lo:g} "
                "for time proportional to the rows.")
        plo, phi = at(lo, "peak_rss_mb"), at(hi, "peak_rss_mb")
        if plo and phi:
            line += f" Peak memory {plo:.0f} MB at {lo}×, {phi:.0f} MB at {hi}×."
        print("\n" + line)


def parse_list(what, text, kind):
    """A comma-separated list of numbers, or exit with a message naming what is wrong."""
    out = []
    for item in text.split(","):
        try:
            out.append(kind(item.strip()))
        except ValueError:
            sys.exit(f"synth-bench: {what}: {item.strip()!r} is not "
                     + ("an integer" if kind is int else "a number"))
    return out


def parse_scales(text):
    """--scale: distinct positive integers, in the order given."""
    scales = []
    for item in text.split(","):
        item = item.strip()
        if not re.fullmatch(r"[0-9]+", item) or int(item) < 1:
            sys.exit(f"synth-bench: --scale takes positive integers (how many times the "
                     f"records are repeated), e.g. 1,4,16,64; got {item!r}")
        if int(item) not in scales:
            scales.append(int(item))
    return scales


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--run-one":
        run_one(json.loads(sys.argv[2]))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--privq", required=True, help="path of the privq binary (release build)")
    p.add_argument("--mechanisms", help="the mechanisms/ folder of the private-pgm repository "
                   "(aim.py, mst.py, cdp2adp.py, mechanism.py); without it only privq runs")
    p.add_argument("--data", required=True, help="the directory holding nltcs.csv and adult/")
    p.add_argument("--datasets", default="nltcs,adult")
    p.add_argument("--epsilons", default="0.1,1,10")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--mechanisms-to-run", default="privq,aim,mst",
                   help="comma-separated, of " + ", ".join(MECHANISMS) + ". bootstrap and "
                   "independent are non-private references (a resample of the true records; "
                   "each column drawn from its true one-way marginal), run once per dataset, "
                   "seed and scale. Without aim and mst, mbi is not needed")
    p.add_argument("--scale", default="1", metavar="K,K,...",
                   help="cost growth: run privq and the baselines on the dataset's records "
                   "repeated K times (positive integers, e.g. 1,4,16,64; default 1). AIM and "
                   "MST run at 1 only")
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument("--timeout", type=float, default=None,
                   help="wall-clock cap in seconds on each run (default: none); a run that "
                   "exceeds it is killed and reported as not finished")
    p.add_argument("--timeout-for", action="append", default=[], metavar="DATASET:MECH=SECONDS",
                   help="a cap for one dataset and mechanism only (repeatable), e.g. "
                   "adult:aim=2700; overrides --timeout")
    p.add_argument("--seeds-for", action="append", default=[], metavar="DATASET=SEEDS",
                   help="seeds for one dataset only (repeatable), e.g. adult=0; overrides --seeds")
    p.add_argument("--stop-at", metavar="UTC",
                   help="a UTC time (e.g. 2026-11-25T02:30:00Z): each run's cap is cut to the "
                   "time left before it, and runs not started by then are recorded as skipped")
    p.add_argument("--aim-full-joint-max-cells", type=int, default=0, metavar="N",
                   help="on a domain of at most N cells, AIM's selection reads the candidates' "
                   "marginals off the model's full joint, once per round (same result, faster; "
                   "default 0: stock AIM). 65536 covers NLTCS")
    p.add_argument("--order", choices=["dataset", "mechanism"], default="dataset",
                   help="loop order: dataset (dataset, epsilon, seed, mechanism) or mechanism "
                   "(mechanism, dataset, epsilon, seed: every cheap mechanism before AIM)")
    p.add_argument("--json", default=None,
                   help="where to write every run (default synth-bench.json, or the "
                   "--merge-json file)")
    p.add_argument("--merge-json", metavar="FILE",
                   help="start from the rows of FILE: the runs done now replace the rows of "
                   "FILE with the same dataset, epsilon, seed and mechanism; every other row "
                   "is kept (and marked as from an earlier run in the table)")
    a = p.parse_args()

    which = [m for m in a.mechanisms_to_run.split(",") if m]
    if not which:
        sys.exit("synth-bench: --mechanisms-to-run names no mechanism")
    for m in which:
        if m not in MECHANISMS:
            sys.exit(f"synth-bench: unknown mechanism {m!r} ({', '.join(MECHANISMS)})")
    if a.mechanisms is None and set(which) & set(MBI_MECHANISMS):
        sys.exit("synth-bench: --mechanisms DIR is needed for aim and mst "
                 "(or pass --mechanisms-to-run privq,bootstrap,independent)")
    scales = parse_scales(a.scale)
    epsilons = parse_list("--epsilons", a.epsilons, float)
    if "aim" in which:
        # JAX compiles a kernel per marginal shape and maps memory for each: on Adult,
        # AIM exhausted Linux's default 65 530 map areas within its first rounds and
        # aborted ("LLVM ERROR: Unable to allocate section memory").
        try:
            maps = int(open("/proc/sys/vm/max_map_count").read())
        except (OSError, ValueError):
            maps = None
        if maps is not None and maps < 262144:
            print(f"synth-bench: warning: vm.max_map_count is {maps}; AIM (JAX) may abort on "
                  "large domains with 'Cannot allocate memory'. Raise it with "
                  "`sysctl -w vm.max_map_count=1048576`.", file=sys.stderr)
    caps = {}
    seeds_for = dict(t.split("=", 1) for t in a.seeds_for)
    stop_at = None
    if a.stop_at:
        stop_at = datetime.fromisoformat(a.stop_at.replace("Z", "+00:00")).timestamp()
    for t in a.timeout_for:
        k, _, v = t.partition("=")
        caps[tuple(k.split(":"))] = float(v)
    datasets = [d for d in a.datasets.split(",") if d]
    for name in datasets:
        if name not in DATASETS:
            sys.exit(f"synth-bench: unknown dataset {name!r} ({', '.join(DATASETS)})")
    # The baselines spend no budget: one run per dataset, scale and seed, with epsilon None.
    # AIM and MST run on the data as it is (scale 1) only.
    plan = [(name, scale, eps, seed, mech)
            for name in datasets
            for scale in scales
            for eps in epsilons + [None]
            for seed in parse_list(f"the seeds of {name}", seeds_for.get(name, a.seeds), int)
            for mech in which
            if (eps is None) == (mech in BASELINES)
            and (scale == 1 or mech not in MBI_MECHANISMS)]
    if not plan:
        sys.exit("synth-bench: nothing to run (AIM and MST run at --scale 1 only)")
    if scales != [1] and set(which) & set(MBI_MECHANISMS):
        print("synth-bench: note: AIM and MST run at --scale 1 only", file=sys.stderr)
    if a.order == "mechanism":
        plan.sort(key=lambda t: which.index(t[4]))  # stable: keeps the other order
    timer = peak_timer() if "privq" in which else None
    if "privq" in which and timer is None:
        print(f"synth-bench: warning: no GNU time at {GNU_TIME}: privq's peak memory is not "
              "measured", file=sys.stderr)
    out_json = a.json or a.merge_json or "synth-bench.json"
    rows = []
    if a.merge_json:
        with open(a.merge_json) as f:
            rows = json.load(f)
    run_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    env = versions(a.privq)
    env["mechanisms"] = os.path.abspath(a.mechanisms) if a.mechanisms else None
    print(f"synth-bench: run at {run_at}, {json.dumps(env)}", file=sys.stderr, flush=True)

    def save():
        with open(out_json, "w") as f:
            json.dump(rows, f, indent=1)

    with tempfile.TemporaryDirectory() as tmp:
        for name, scale, eps, seed, mech in plan:
            timeout = caps.get((name, mech), a.timeout)
            left = None if stop_at is None else stop_at - time.time()
            if left is not None and (timeout is None or left < timeout):
                timeout = max(left, 0)
            print(f"synth-bench: {name} x{scale} "
                  + ("non-private" if eps is None else f"eps={eps}") + f" seed={seed} {mech}"
                  + (f" (cap {timeout:.0f} s)" if timeout else "") + " ...",
                  file=sys.stderr, flush=True)
            spec = {"dataset": name, "data": a.data, "privq": a.privq,
                    "mechanisms": a.mechanisms, "mechanism": mech, "scale": scale,
                    "epsilon": eps, "delta": a.delta, "seed": seed,
                    "aim_full_joint_max_cells": a.aim_full_joint_max_cells,
                    "peak_timer": timer}
            row = {"dataset": name, "epsilon": eps, "delta": a.delta, "seed": seed,
                   "mechanism": mech, "scale": scale, "run_at": run_at}
            if mech == "aim":
                row["aim_full_joint_max_cells"] = a.aim_full_joint_max_cells
            if timeout == 0:
                row.update(status="skipped", reason=f"--stop-at {a.stop_at} passed")
            else:
                row.update(run_child(spec, timeout, tmp))
            row["env"] = env
            rows[:] = [r for r in rows if (r["dataset"], r["epsilon"], r["seed"],
                       r["mechanism"], r.get("scale", 1)) != (name, eps, seed, mech, scale)]
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "env"}),
                  file=sys.stderr, flush=True)
            save()  # after every run, so an interrupted benchmark keeps its rows
    save()
    print_table(rows, list(MECHANISMS), run_at)
    print_cost_growth(rows, run_at)


if __name__ == "__main__":
    main()
