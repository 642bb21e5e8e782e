#!/usr/bin/env python3
"""Side-by-side benchmark of private synthetic data: privq against AIM and MST.

Run through tools/synth-bench, which prepares the Python environment. For every
dataset, epsilon and seed it runs each mechanism, times it (wall clock), and
reports the mean total-variation distance (TV of a marginal = 1/2 sum |p - q|)
over all 2-way and all 3-way marginals, of the released model (where the mechanism
exposes one) and of the synthetic records. One table at the end, and a JSON file
with every run.

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


def tv(x, y):
    return 0.5 * np.abs(x / x.sum() - y / y.sum()).sum()


def mean_tv(data, other, k):
    cliques = list(itertools.combinations(data.domain.attrs, k))
    return float(np.mean([tv(data.project(c).datavector(), other.project(c).datavector())
                          for c in cliques]))


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


def load(name, data_dir, tmp):
    """An mbi Dataset and the privq arguments for the same data."""
    if name == "nltcs":
        csv = os.path.join(data_dir, "nltcs.csv")
        with open(csv) as f:
            header = f.readline().strip().split(",")
        domain = os.path.join(tmp, "nltcs-domain.json")
        with open(domain, "w") as f:
            json.dump({h: 2 for h in header}, f)
        return read_dataset(csv, domain), ["--input", csv, "--domain", "binary"]
    if name == "adult":
        csv = os.path.join(data_dir, "adult", "adult.csv")
        domain = os.path.join(data_dir, "adult", "adult-domain.json")
        return read_dataset(csv, domain), ["--input", csv, "--domain", domain]
    sys.exit(f"synth-bench: unknown dataset {name!r} (nltcs, adult)")


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


def run_privq(privq, data, args, eps, delta, seed, tmp):
    """privq synth --compare. Its wall time is the release's own time, which privq reports
    under --compare (reading the input to writing the records); the process time (which
    also counts the compare, a diagnostic that is slow on Adult) is the second value."""
    out = os.path.join(tmp, "privq-synth.csv")
    cmd = [privq, "synth", *args, "--epsilon", str(eps), "--delta", str(delta),
           "--seed", str(seed), "--compare", "--output", out]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    process = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    m = re.search(r"the release took ([0-9.]+) s", proc.stderr)
    if m is None:
        print("synth-bench: privq did not report the release's time; "
              "using the process's wall time", flush=True)
    wall = float(m.group(1)) if m else process
    model = {}
    for k, m in re.findall(r"mean (\d)-way TV over \d+ marginals: model ([0-9.]+)", proc.stderr):
        model[int(k)] = float(m)
    import pandas as pd
    synth = make_dataset(pd.read_csv(out), data.domain)
    return wall, process, model.get(2), model.get(3), synth


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


def run_one(spec):
    """One run in this (child) process: spec is a JSON object; the row is written to spec["out"]."""
    mbi2_compat()
    with tempfile.TemporaryDirectory() as tmp:
        data, privq_args = load(spec["dataset"], spec["data"], tmp)
        mech, eps, delta, seed = spec["mechanism"], spec["epsilon"], spec["delta"], spec["seed"]
        row = {}
        if mech == "privq":
            wall, process, m2, m3, synth = run_privq(spec["privq"], data, privq_args, eps,
                                                      delta, seed, tmp)
            row.update(model_tv2=m2, model_tv3=m3, process_wall_s=process)
        elif mech == "aim":
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
    with open(spec["out"], "w") as f:
        json.dump(row, f)


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


def print_table(rows, order, this_run):
    def fmt(v, spec):
        return "—" if v is None else format(v, spec)

    def origin(r):
        return "this run" if r.get("run_at") == this_run else f"earlier run ({r.get('run_at', '?')})"

    def rank(m):
        return order.index(m) if m in order else len(order)

    print("| dataset | ε | mechanism | from | runs | wall time (s) | model 2-way TV "
          "| model 3-way TV | sample 2-way TV | sample 3-way TV |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for r in rows:
        status = r.get("status", "ok")
        key = (r["dataset"], r["epsilon"], r["mechanism"], r.get("run_at"),
               status if status == "ok" else f"{status}-{r['seed']}")
        groups.setdefault(key, []).append(r)
    for key in sorted(groups, key=lambda k: (k[0], k[1], rank(k[2]), k[3] or "", k[4])):
        rs = groups[key]
        head = f"| {key[0]} | {key[1]:g} | {key[2]} | {origin(rs[0])} | {len(rs)}"
        status = rs[0].get("status", "ok")
        if status == "timeout":
            r = rs[0]
            note = f"did not finish in {r['timeout_s']:.0f} s (seed {r['seed']})"
            if r.get("aim_rounds_done") is not None:
                note += f"; {r['aim_rounds_done']} AIM rounds done"
                if r.get("aim_mean_round_s"):
                    note += f", {r['aim_mean_round_s']:.0f} s/round"
            print(f"{head} | {note} | — | — | — | — |")
            continue
        if status == "skipped":
            print(f"{head} | not run: {rs[0]['reason']} (seed {rs[0]['seed']}) | — | — | — | — |")
            continue
        if status == "error":
            print(f"{head} | error (seed {rs[0]['seed']}) | — | — | — | — |")
            continue

        def mean(field):
            vals = [r[field] for r in rs if r.get(field) is not None]
            return float(np.mean(vals)) if vals else None
        walls = ", ".join(f"{r['wall_s']:.1f}" for r in sorted(rs, key=lambda r: r["seed"]))
        print(f"{head} | {fmt(mean('wall_s'), '.1f')} ({walls}) "
              f"| {fmt(mean('model_tv2'), '.4f')} | {fmt(mean('model_tv3'), '.4f')} "
              f"| {fmt(mean('sample_tv2'), '.4f')} | {fmt(mean('sample_tv3'), '.4f')} |")


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
    p.add_argument("--mechanisms-to-run", default="privq,aim,mst")
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
    for m in which:
        if m not in ("privq", "aim", "mst"):
            sys.exit(f"synth-bench: unknown mechanism {m!r} (privq, aim, mst)")
    if a.mechanisms is None and set(which) - {"privq"}:
        sys.exit("synth-bench: --mechanisms DIR is needed for aim and mst "
                 "(or pass --mechanisms-to-run privq)")
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

    plan = [(name, eps, int(seed), mech)
            for name in a.datasets.split(",")
            for eps in [float(e) for e in a.epsilons.split(",")]
            for seed in seeds_for.get(name, a.seeds).split(",")
            for mech in which]
    if a.order == "mechanism":
        plan.sort(key=lambda t: which.index(t[3]))  # stable: keeps dataset, epsilon, seed order
    with tempfile.TemporaryDirectory() as tmp:
        for name, eps, seed, mech in plan:
            timeout = caps.get((name, mech), a.timeout)
            left = None if stop_at is None else stop_at - time.time()
            if left is not None and (timeout is None or left < timeout):
                timeout = max(left, 0)
            print(f"synth-bench: {name} eps={eps} seed={seed} {mech}"
                  + (f" (cap {timeout:.0f} s)" if timeout else "") + " ...",
                  file=sys.stderr, flush=True)
            spec = {"dataset": name, "data": a.data, "privq": a.privq,
                    "mechanisms": a.mechanisms, "mechanism": mech,
                    "epsilon": eps, "delta": a.delta, "seed": seed,
                    "aim_full_joint_max_cells": a.aim_full_joint_max_cells}
            row = {"dataset": name, "epsilon": eps, "delta": a.delta, "seed": seed,
                   "mechanism": mech, "run_at": run_at}
            if mech == "aim":
                row["aim_full_joint_max_cells"] = a.aim_full_joint_max_cells
            if timeout == 0:
                row.update(status="skipped", reason=f"--stop-at {a.stop_at} passed")
            else:
                row.update(run_child(spec, timeout, tmp))
            row["env"] = env
            rows[:] = [r for r in rows if (r["dataset"], r["epsilon"], r["seed"],
                       r["mechanism"]) != (name, eps, seed, mech)]
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "env"}),
                  file=sys.stderr, flush=True)
            save()  # after every run, so an interrupted benchmark keeps its rows
    save()
    print_table(rows, ["privq", "aim", "mst"], run_at)


if __name__ == "__main__":
    main()
