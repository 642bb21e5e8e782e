#!/usr/bin/env python3
"""Aggregation throughput of the pure-LDP Python library (pip install pure-ldp),
for the side-by-side numbers printed by `cargo bench -p privq-host --bench ldp`.

Workload (same as the Rust bench): d = 1024 items, epsilon = 1, items drawn from
Zipf(1.1). Reports are privatised first (not timed); the timed part is feeding
every report to the server's `aggregate` and computing the estimates once, on
one thread (pure-LDP is single-threaded Python over numpy), so the numbers compare
with privq's one-core column.
Prints one JSON object: {"oue": reports_per_s, "olh": ..., "hr": ..., "n": {...},
"versions": {"pure-ldp": ..., "numpy": ..., "python": ...}}.

Usage: python3 tools/pure_ldp_bench.py [--n-oue 100000] [--n-olh 2000] [--n-hr 200000]
"""
import argparse
import importlib.metadata
import json
import platform
import random
import time

from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
from pure_ldp.frequency_oracles.hadamard_response import HadamardResponseClient, HadamardResponseServer

D = 1024
EPS = 1.0


def items(n, seed):
    rng = random.Random(seed)
    weights = [1.0 / (r ** 1.1) for r in range(1, D + 1)]
    # pure-LDP items are 1-based
    return [i + 1 for i in rng.choices(range(D), weights=weights, k=n)]


def timed_aggregate(server, reports):
    start = time.perf_counter()
    for r in reports:
        server.aggregate(r)
    server.estimate(1, suppress_warnings=True)  # forces the estimate computation
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-oue", type=int, default=100_000)
    ap.add_argument("--n-olh", type=int, default=2_000)
    ap.add_argument("--n-hr", type=int, default=200_000)
    a = ap.parse_args()
    out = {"n": {}}

    client = UEClient(epsilon=EPS, d=D, use_oue=True)
    reports = [client.privatise(x) for x in items(a.n_oue, 1)]
    out["oue"] = a.n_oue / timed_aggregate(UEServer(epsilon=EPS, d=D, use_oue=True), reports)
    out["n"]["oue"] = a.n_oue

    client = LHClient(epsilon=EPS, d=D, use_olh=True)
    reports = [client.privatise(x) for x in items(a.n_olh, 2)]
    out["olh"] = a.n_olh / timed_aggregate(LHServer(epsilon=EPS, d=D, use_olh=True), reports)
    out["n"]["olh"] = a.n_olh

    server = HadamardResponseServer(EPS, D)
    client = HadamardResponseClient(EPS, D, server.get_hash_funcs())
    reports = [client.privatise(x) for x in items(a.n_hr, 3)]
    out["hr"] = a.n_hr / timed_aggregate(server, reports)
    out["n"]["hr"] = a.n_hr

    out["versions"] = {
        "pure-ldp": importlib.metadata.version("pure-ldp"),
        "numpy": importlib.metadata.version("numpy"),
        "python": platform.python_version(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
