#!/usr/bin/env python3
"""Side-by-side benchmark of private synthetic data: privq against AIM and MST.

Run through tools/synth-bench, which prepares the Python environment. For every
dataset, epsilon and seed it runs each mechanism, times it (wall clock), and
reports the mean total-variation distance (TV of a marginal = 1/2 sum |p - q|)
over all 2-way and all 3-way marginals, of the released model (where the mechanism
exposes one) and of the synthetic records. One table at the end, and a JSON file
with every run.
"""

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def tv(x, y):
    return 0.5 * np.abs(x / x.sum() - y / y.sum()).sum()


def mean_tv(data, other, k):
    cliques = list(itertools.combinations(data.domain.attrs, k))
    return float(np.mean([tv(data.project(c).datavector(), other.project(c).datavector())
                          for c in cliques]))


def load(name, data_dir, tmp):
    """An mbi Dataset and the privq arguments for the same data."""
    from mbi import Dataset
    if name == "nltcs":
        csv = os.path.join(data_dir, "nltcs.csv")
        with open(csv) as f:
            header = f.readline().strip().split(",")
        domain = os.path.join(tmp, "nltcs-domain.json")
        with open(domain, "w") as f:
            json.dump({h: 2 for h in header}, f)
        return Dataset.load(csv, domain), ["--input", csv, "--domain", "binary"]
    if name == "adult":
        csv = os.path.join(data_dir, "adult", "adult.csv")
        domain = os.path.join(data_dir, "adult", "adult-domain.json")
        return Dataset.load(csv, domain), ["--input", csv, "--domain", domain]
    sys.exit(f"synth-bench: unknown dataset {name!r} (nltcs, adult)")


def run_privq(privq, data, args, eps, delta, seed, tmp):
    from mbi import Dataset
    out = os.path.join(tmp, "privq-synth.csv")
    cmd = [privq, "synth", *args, "--epsilon", str(eps), "--delta", str(delta),
           "--seed", str(seed), "--compare", "--output", out]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    model = {}
    for k, m in re.findall(r"mean (\d)-way TV over \d+ marginals: model ([0-9.]+)", proc.stderr):
        model[int(k)] = float(m)
    import pandas as pd
    df = pd.read_csv(out)
    synth = Dataset(df[list(data.domain.attrs)], data.domain)
    return wall, model.get(2), model.get(3), synth


def run_aim(mechanisms, data, eps, delta, seed):
    sys.path.insert(0, mechanisms)
    from aim import AIM
    np.random.seed(seed)
    workload = [(c, 1.0) for c in itertools.combinations(data.domain.attrs, 3)]
    start = time.perf_counter()
    model, synth = AIM(eps, delta, max_model_size=80).run(data, workload)
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


def main():
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
    p.add_argument("--json", default="synth-bench.json", help="where to write every run")
    a = p.parse_args()

    which = a.mechanisms_to_run.split(",")
    if a.mechanisms is None and set(which) - {"privq"}:
        sys.exit("synth-bench: --mechanisms DIR is needed for aim and mst "
                 "(or pass --mechanisms-to-run privq)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.datasets.split(","):
            data, privq_args = load(name, a.data, tmp)
            for eps in [float(e) for e in a.epsilons.split(",")]:
                for seed in [int(s) for s in a.seeds.split(",")]:
                    for mech in which:
                        print(f"synth-bench: {name} eps={eps} seed={seed} {mech} ...",
                              file=sys.stderr, flush=True)
                        row = {"dataset": name, "epsilon": eps, "seed": seed, "mechanism": mech}
                        if mech == "privq":
                            wall, m2, m3, synth = run_privq(a.privq, data, privq_args, eps,
                                                            a.delta, seed, tmp)
                            row.update(model_tv2=m2, model_tv3=m3)
                        elif mech == "aim":
                            wall, model, synth = run_aim(a.mechanisms, data, eps, a.delta, seed)
                            row.update(model_tv2=mean_tv(data, model, 2),
                                       model_tv3=mean_tv(data, model, 3))
                        elif mech == "mst":
                            wall, synth = run_mst(a.mechanisms, data, eps, a.delta, seed)
                            row.update(model_tv2=None, model_tv3=None)
                        else:
                            sys.exit(f"synth-bench: unknown mechanism {mech!r}")
                        row.update(wall_s=wall, sample_tv2=mean_tv(data, synth, 2),
                                   sample_tv3=mean_tv(data, synth, 3))
                        rows.append(row)
                        print(json.dumps(row), file=sys.stderr, flush=True)
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)

    def fmt(v, spec):
        return "—" if v is None else format(v, spec)

    print("| dataset | ε | mechanism | runs | wall time (s) | model 2-way TV | model 3-way TV "
          "| sample 2-way TV | sample 3-way TV |")
    print("|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["dataset"], r["epsilon"], r["mechanism"]) for r in rows},
                  key=lambda k: (k[0], k[1], which.index(k[2])))
    for key in keys:
        rs = [r for r in rows if (r["dataset"], r["epsilon"], r["mechanism"]) == key]

        def mean(field):
            vals = [r[field] for r in rs if r[field] is not None]
            return float(np.mean(vals)) if vals else None
        print(f"| {key[0]} | {key[1]:g} | {key[2]} | {len(rs)} | {fmt(mean('wall_s'), '.2f')} "
              f"| {fmt(mean('model_tv2'), '.4f')} | {fmt(mean('model_tv3'), '.4f')} "
              f"| {fmt(mean('sample_tv2'), '.4f')} | {fmt(mean('sample_tv3'), '.4f')} |")


if __name__ == "__main__":
    main()
