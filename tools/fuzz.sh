#!/usr/bin/env sh
# Fuzzes every parser of untrusted bytes with libFuzzer (cargo fuzz), RUNS inputs per
# target (default 10^7), and prints executions and findings per target.
#
#   tools/fuzz.sh [RUNS] [TARGET ...]
#
# FUZZ_MAX_TIME=<seconds> also caps each target's time (0 = no cap; the SQLite-backed
# targets run at a few thousand inputs per second). cargo-fuzz needs nightly flags;
# RUSTC_BOOTSTRAP=1 enables them on the stable toolchain. Install it once with
# `cargo install cargo-fuzz`. Seeds are written by the `seeds` binary; the corpora,
# crash artifacts (fuzz/artifacts/<target>/) and logs (fuzz/logs/) are not committed.
set -eu
RUNS=${1:-10000000}
[ "$#" -gt 0 ] && shift
TARGETS=${*:-"report_decode frame_open report_file store_load collector_http parquet_footer"}
MAX_TIME=${FUZZ_MAX_TIME:-0}
cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1
# SQLite databases of the store targets: a tmpfs keeps their fsyncs cheap.
if [ -z "${PRIVQ_FUZZ_DIR:-}" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then PRIVQ_FUZZ_DIR=/dev/shm/privq-fuzz; else PRIVQ_FUZZ_DIR=${TMPDIR:-/tmp}/privq-fuzz; fi
fi
export PRIVQ_FUZZ_DIR
mkdir -p logs "$PRIVQ_FUZZ_DIR"
# No sanitizer: the parsers are safe Rust; libFuzzer still catches panics
# (overflow checks are on: cargo fuzz builds with debug assertions), hangs and OOM.
cargo fuzz build -s none
cargo fuzz run -s none seeds -- -runs=0 >/dev/null 2>&1
status=0
for t in $TARGETS; do
    log="logs/$t.log"
    if cargo fuzz run -s none "$t" -- -runs="$RUNS" -max_total_time="$MAX_TIME" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        found=none
    else
        found="CRASH: see $log and fuzz/artifacts/$t/"
        status=1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    echo "$t: ${execs:-?} executions (${secs:-?}/s), findings: $found"
done
rm -rf "$PRIVQ_FUZZ_DIR"
exit $status
