#!/usr/bin/env bash
# Per-call x86 instruction counts of the discrete Laplace samplers, by returned value.
#
#   tools/sampler-cost.sh [--check] [--release] [--calls N] [SCALE...]
#
# Runs host/examples/sampler_cost.rs under `valgrind --tool=callgrind`, collecting only
# inside the #[inline(never)] wrappers around one sample (`cost_probe_bounded`,
# `cost_probe_exact`) and dumping a profile after every call, so each dump holds exactly
# one call's instructions. The RNG cost is made constant per word (see the example's
# docs: ChaCha block refills happen between calls, outside the measured wrappers).
#
# Prints, per scale, the instruction count per call of the bounded-work sampler and of
# the exact sampler, grouped by the value each call returned.
#
#   --check   exit 1 unless every bounded-work call at a scale costs the same number of
#             instructions (so the count cannot depend on the returned value), and the
#             measurement itself looks sound (one dump per call, nonzero counts).
#   --release measure the release build (opt-level 3, LTO) instead of the dev profile
#             (opt-level 2, already built by `cargo test`, so the default is quick).
#   --calls N calls per sampler and scale (default 1000).
#   SCALE...  integer noise scales t (default: 1 10 1000).
#
# Needs valgrind (apt-get install valgrind). Exits 2 when it cannot measure.
set -euo pipefail

check=0
profile=()
calls=1000
scales=()
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check=1 ;;
        --release) profile=(--release) ;;
        --calls) calls="${2:?--calls needs a number}"; shift ;;
        -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "sampler-cost: unknown option $1" >&2; exit 2 ;;
        *) scales+=("$1") ;;
    esac
    shift
done
[ ${#scales[@]} -gt 0 ] || scales=(1 10 1000)

if ! command -v valgrind >/dev/null 2>&1; then
    echo "sampler-cost: valgrind is not installed (apt-get install valgrind); cannot measure" >&2
    exit 2
fi

cd "$(dirname "$0")/.."

# Build the example and find its executable from cargo's JSON messages. The package
# selection and features can be set with SAMPLER_COST_CARGO_ARGS (tools/test-all.sh passes
# its host build's, so the example reuses that build).
read -r -a select <<<"${SAMPLER_COST_CARGO_ARGS:--p privq-host}"
exe=$(cargo build -q "${profile[@]}" "${select[@]}" --example sampler_cost \
    --message-format=json-render-diagnostics \
    | grep '"name":"sampler_cost"' | grep -o '"executable":"[^"]*"' | tail -n1 | cut -d'"' -f4) || true
if [ -z "$exe" ] || [ ! -x "$exe" ]; then
    echo "sampler-cost: could not build host/examples/sampler_cost.rs" >&2
    exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
    --toggle-collect='*cost_probe_*' \
    --dump-after='sampler_cost::cost_probe_bounded' \
    --dump-after='sampler_cost::cost_probe_exact' \
    "$exe" "$calls" "${scales[@]}" >"$work/calls.txt" 2>"$work/valgrind.log"; then
    echo "sampler-cost: valgrind failed:" >&2
    tail -n 20 "$work/valgrind.log" >&2
    exit 2
fi

# One line per dump: part number and instruction count (the final dump at program exit
# is the remainder outside any probe and is not numbered among the calls).
find "$work" -name 'cg.out.*' -print0 | xargs -0 awk '
    /^part:/ { part = $2 }
    /^summary:/ { print part, $2 }
' | sort -n >"$work/dumps.txt"

profile_name=${profile[0]:-}
profile_name=${profile_name#--}
awk -v check="$check" -v profile="${profile_name:-dev}" '
    # Per-value rows for |v| <= 4, decades beyond; bkey orders the rows.
    function bucket(v,   a, lo, label) {
        a = v < 0 ? -v : v
        if (a <= 4) { bkey[v ""] = v; return v "" }
        lo = a <= 9 ? 5 : a <= 99 ? 10 : a <= 999 ? 100 : 1000
        if (lo == 1000) label = v < 0 ? "..-1000" : "1000.."
        if (lo == 5) label = v < 0 ? "-9..-5" : "5..9"
        if (lo == 10) label = v < 0 ? "-99..-10" : "10..99"
        if (lo == 100) label = v < 0 ? "-999..-100" : "100..999"
        bkey[label] = v < 0 ? -lo : lo
        return label
    }
    FNR == NR { ir[$1] = $2; ndumps++; next }
    {
        n++
        sampler = $1; t = $2; v = $3
        if (!(n in ir)) { missing++; next }
        c = ir[n]
        if (c <= 0) zero++
        k = sampler SUBSEP t
        if (!(k in calls)) { lo[k] = c; hi[k] = c }
        calls[k]++; sum[k] += c
        if (c < lo[k]) lo[k] = c
        if (c > hi[k]) hi[k] = c
        if (!((k, c) in seen)) { seen[k, c] = 1; distinct[k]++ }
        if (!((k, v) in vseen)) { vseen[k, v] = 1; values[k]++ }
        if (sampler == "bounded" && v == -9223372036854775808) undecided[k]++
        b = bucket(v)
        kb = sampler SUBSEP t SUBSEP b
        if (!(kb in bcalls)) { blo[kb] = c; bhi[kb] = c }
        bcalls[kb]++
        if (c < blo[kb]) blo[kb] = c
        if (c > bhi[kb]) bhi[kb] = c
        if (!((t, b) in rowseen)) { rowseen[t, b] = 1; rows[t] = rows[t] " " b }
        if (!(t in tseen)) { tseen[t] = 1; scales[++nscales] = t }
    }
    function range(l, h) { return l == h ? sprintf("%d", l) : sprintf("%d..%d", l, h) }
    END {
        printf "Instructions per call (x86-64, callgrind, %s profile), %d calls per sampler and scale\n\n", profile, calls["bounded" SUBSEP scales[1]]
        printf "%-8s %6s %6s %7s %12s %12s %10s %9s\n", "sampler", "scale", "calls", "values", "min Ir", "max Ir", "mean Ir", "distinct"
        for (i = 1; i <= nscales; i++) {
            t = scales[i]
            split("bounded exact", names, " ")
            for (j = 1; j <= 2; j++) {
                k = names[j] SUBSEP t
                printf "%-8s %6s %6d %7d %12d %12d %10.1f %9d\n", names[j], t, calls[k], values[k], lo[k], hi[k], sum[k] / calls[k], distinct[k]
            }
        }
        for (i = 1; i <= nscales; i++) {
            t = scales[i]
            printf "\nscale %s, by returned value:\n", t
            printf "  %-10s %8s %-16s %8s %-16s\n", "value", "bounded", "Ir per call", "exact", "Ir per call"
            m = split(substr(rows[t], 2), bs, " ")
            # Sort the value buckets numerically (insertion sort; a few dozen rows).
            for (p = 2; p <= m; p++) {
                x = bs[p]; q = p - 1
                while (q >= 1 && bkey[bs[q]] > bkey[x]) { bs[q + 1] = bs[q]; q-- }
                bs[q + 1] = x
            }
            for (p = 1; p <= m; p++) {
                kb = "bounded" SUBSEP t SUBSEP bs[p]; ke = "exact" SUBSEP t SUBSEP bs[p]
                if (kb in bcalls) { nb = bcalls[kb]; rb = range(blo[kb], bhi[kb]) } else { nb = 0; rb = "-" }
                if (ke in bcalls) { ne = bcalls[ke]; re = range(blo[ke], bhi[ke]) } else { ne = 0; re = "-" }
                printf "  %-10s %8d %-16s %8d %-16s\n", bs[p], nb, rb, ne, re
            }
        }
        bad = 0
        if (ndumps != n) { printf "\nFAIL: %d profile dumps for %d calls\n", ndumps, n; bad = 1 }
        if (zero > 0) { printf "\nFAIL: %d calls measured 0 instructions\n", zero; bad = 1 }
        for (i = 1; i <= nscales; i++) {
            k = "bounded" SUBSEP scales[i]
            if (distinct[k] != 1) {
                printf "\nFAIL: bounded sampler at scale %s: %d different per-call counts (%d..%d)\n", scales[i], distinct[k], lo[k], hi[k]
                bad = 1
            } else if (values[k] < 2) {
                printf "\nFAIL: bounded sampler at scale %s returned only one value; nothing to compare\n", scales[i]
                bad = 1
            }
            if (undecided[k] > 0) printf "\nnote: %d undecided bounded draws at scale %s\n", undecided[k], scales[i]
        }
        if (!bad) printf "\nOK: every bounded-work call costs the same at each scale, whatever it returns.\n"
        if (check && bad) exit 1
    }
' "$work/dumps.txt" "$work/calls.txt"
