#!/usr/bin/env bash
# Mean total-variation distance over all 3-way marginals between NLTCS and
# synthetic NLTCS from `privq synth` (MWEM, parity:3 workload, epsilon 1),
# for 5 fixed seeds: one line per seed, then the mean.
#
# Usage: tools/synth-tv.sh [PRIVQ_BINARY] [-- extra synth options]
#   PRIVQ_BINARY  default: target/debug/privq (built with cargo build -p privq --bin privq)
#   extra options are passed to `privq synth`; default: --domain binary
#   DATA=path/to/nltcs.csv overrides the input (default ../shared/data/nltcs.csv,
#   i.e. /work/shared/data/nltcs.csv from the repository root).
# Example (the behaviour before public domains, when the domain was inferred):
#   tools/synth-tv.sh /tmp/privq-old --
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/privq}
shift || true
if [ "${1:-}" = "--" ]; then shift; extra=("$@"); else extra=(--domain binary); fi
data=${DATA:-../shared/data/nltcs.csv}
[ -f "$data" ] || { echo "synth-tv: $data is absent" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for seed in 1 2 3 4 5; do
  "$bin" synth --mechanism mwem --input "$data" --epsilon 1 --workload parity:3 --seed "$seed" \
    "${extra[@]}" --output "$tmp/s$seed.csv" 2>"$tmp/log$seed" \
    || { cat "$tmp/log$seed" >&2; exit 1; }
done
python3 - "$data" "$tmp" <<'PY'
import csv, itertools, sys
from collections import Counter

def cells(path):
    with open(path) as f:
        rows = csv.reader(f)
        header = next(rows)
        c = Counter(tuple(int(v) for v in r) for r in rows)
    return header, c

def marginals(c, d):
    n = sum(c.values())
    out = {}
    for t in itertools.combinations(range(d), 3):
        m = Counter()
        for cell, k in c.items():
            m[(cell[t[0]], cell[t[1]], cell[t[2]])] += k
        out[t] = {k: v / n for k, v in m.items()}
    return out

header, real = cells(sys.argv[1])
d = len(header)
mr = marginals(real, d)
tvs = []
for seed in range(1, 6):
    h2, syn = cells(f"{sys.argv[2]}/s{seed}.csv")
    assert h2 == header, (h2, header)
    ms = marginals(syn, d)
    per = [0.5 * sum(abs(mr[t].get(k, 0.0) - ms[t].get(k, 0.0)) for k in set(mr[t]) | set(ms[t])) for t in mr]
    tv = sum(per) / len(per)
    tvs.append(tv)
    print(f"seed {seed}: mean TV over {len(per)} 3-way marginals = {tv:.4f}")
print(f"mean over 5 seeds: {sum(tvs) / len(tvs):.4f}")
PY
