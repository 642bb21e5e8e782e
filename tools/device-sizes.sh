#!/usr/bin/env bash
# Flash cost of privq-core's documented device path (the crate-level quick start) on
# thumbv6m and thumbv7em: the size-measurement images of examples/device-flow (an
# independent crate on privq-core's public API), each path linked alone by cortex-m-rt with
# --gc-sections in the `firmware` profile (opt-level "z", LTO, one codegen unit), measured
# with llvm-size. Prints the rustc version and two Markdown tables (both in docs/src/devices.md): the whole path,
# and each component's marginal cost, the difference between two images of the path cut
# after one more stage (examples/device-flow/examples/common: runtime, ChaCha12, integer
# binning, randomizer payload, report header, ledger in flash, upload frame). Code that two
# components share counts for the first in that order.
#
#   tools/device-sizes.sh            # build and print the table
#   tools/device-sizes.sh --check    # and fail if the thumbv6m images exceed the budgets
#                                    # (12 KiB per report without frames, 16 KiB with frames)
#                                    # or if any image links a panic or `core::fmt` symbol
#
# Environment: CARGO_TARGET_DIR (default target/device-flow, shared with test-all's
# device-flow step).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[[ ${1:-} == --check ]] && check=1

host=$(rustc -vV | sed -n 's/^host: //p')
bin="$(rustc --print sysroot)/lib/rustlib/$host/bin"
size_tool=$bin/llvm-size
[[ -x $size_tool && -x $bin/llvm-nm ]] || {
  echo "llvm-size/llvm-nm not found in $bin (rustup component add llvm-tools)" >&2
  exit 4
}
# Panic and `core::fmt` symbols (as test-all.sh's firmware-panics step): a reachable panic
# links `core::fmt` (1-2 KB on the M0).
panic_re='core::fmt|core::panicking|panic_fmt|panic_bounds_check|slice_index|slice_(start|end)_index|div_by_zero|rem_by_zero|unwrap_failed|expect_failed|len_mismatch'
target_dir=${CARGO_TARGET_DIR:-target/device-flow}
examples=(size-oue size-grr size-oue-frame size-grr-frame)
labels=("OUE report" "GRR report" "OUE report + upload frame" "GRR report + upload frame")
# The per-component images: each is the one before it plus one component.
stages=(size-runtime size-rng size-bins size-oue-payload size-grr-payload size-oue-encoded
  size-grr-encoded)
# label | image | the image it adds to
components=(
  "runtime (cortex-m-rt start-up, vector table; not privq-core)|size-runtime|"
  "\`rng::ChaCha12\` (seeded, drawing words)|size-rng|size-runtime"
  "of which compiler-builtins' memcpy/memset (every later component uses them)|builtins:size-rng|builtins:size-runtime"
  "\`histogram::IntegerBins\` + \`Histogram<64>\` + the modal bin|size-bins|size-rng"
  "\`local::UnaryEncoding\` (OUE, 64 bins): the payload|size-oue-payload|size-bins"
  "\`local::Grr\` (64 items): the payload|size-grr-payload|size-bins"
  "report header (\`report\`), with OUE|size-oue-encoded|size-oue-payload"
  "report header (\`report\`), with GRR|size-grr-encoded|size-grr-payload"
  "\`ledger::Ledger\` on \`flash_store::FlashStore\`, with OUE|size-oue|size-oue-encoded"
  "\`ledger::Ledger\` on \`flash_store::FlashStore\`, with GRR|size-grr|size-grr-encoded"
  "upload frame (\`UploadCounters\`, \`upload::Outbox\`, HMAC-SHA-256), with OUE|size-oue-frame|size-oue"
  "upload frame (\`UploadCounters\`, \`upload::Outbox\`, HMAC-SHA-256), with GRR|size-grr-frame|size-grr"
)
targets=(thumbv6m-none-eabi thumbv7em-none-eabihf)
declare -A flash
for t in "${targets[@]}"; do
  # One cargo run per target links every image (in parallel).
  cargo build --manifest-path examples/device-flow/Cargo.toml --locked --target-dir "$target_dir" \
    --profile firmware --target "$t" $(printf -- '--example %s ' "${examples[@]}" "${stages[@]}") >&2
  for e in "${examples[@]}" "${stages[@]}"; do
    # Berkeley format: text (code + rodata + vectors), data, bss; flash = text + data.
    read -r text data _ < <("$size_tool" -B "$target_dir/$t/firmware/examples/$e" | tail -n1)
    flash[$t:$e]=$((text + data))
    # compiler-builtins' memcpy/memset, by symbol size.
    sum=0
    for hex in $("$bin/llvm-nm" --print-size --demangle "$target_dir/$t/firmware/examples/$e" |
      awk '$4 ~ /^(__aeabi_mem|compiler_builtins::mem::|mem(cpy|set|move)$)/ { print $2 }'); do
      sum=$((sum + 16#$hex))
    done
    flash[$t:builtins:$e]=$sum
  done
done

# The compiler the figures come from (a newer rustc or LLVM moves them by tens of bytes).
echo "Measured with $(rustc --version) (privq-core features flash-ledger, compact-sha)."
echo
echo "| Documented path (ε = 1, 64 bins, ledger in flash) | thumbv6m (Cortex-M0) | thumbv7em (Cortex-M4F) |"
echo "|---|---:|---:|"
for i in "${!examples[@]}"; do
  e=${examples[$i]}
  printf '| %s | %s B | %s B |\n' "${labels[$i]}" "${flash[thumbv6m-none-eabi:$e]}" \
    "${flash[thumbv7em-none-eabihf:$e]}"
done
echo
echo "| Component (what it adds to the path before it) | thumbv6m (Cortex-M0) | thumbv7em (Cortex-M4F) |"
echo "|---|---:|---:|"
for c in "${components[@]}"; do
  IFS='|' read -r label e base <<<"$c"
  row="| $label |"
  for t in "${targets[@]}"; do
    b=0
    [[ -n $base ]] && b=${flash[$t:$base]}
    row+=" $((flash[$t:$e] - b)) B |"
  done
  echo "$row"
done

rc=0
if ((check)); then
  for t in "${targets[@]}"; do
    for e in "${examples[@]}"; do
      panics=$("$bin/llvm-nm" --demangle --defined-only "$target_dir/$t/firmware/examples/$e" |
        cut -d' ' -f3- | grep -E "$panic_re" || true)
      if [[ -n $panics ]]; then
        echo "device-sizes: $e on $t links panic/core::fmt symbols:" >&2
        echo "$panics" >&2
        rc=5
      fi
    done
  done
  for e in "${examples[@]}"; do
    budget=12288
    [[ $e == *-frame ]] && budget=16384
    v=${flash[thumbv6m-none-eabi:$e]}
    if ((v > budget)); then
      echo "device-sizes: $e on thumbv6m is $v B of flash, over its budget of $budget B" >&2
      rc=5
    fi
  done
fi
exit $rc
