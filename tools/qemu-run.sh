#!/usr/bin/env bash
# Cargo runner for privq's bare-metal ELFs (on-target test suites and the firmware) in QEMU.
#
# usage (from .cargo/config.toml): qemu-run.sh <qemu-system-xxx> <machine> <cpu> <elf> [args...]
#   ELF with a defmt #[global_logger] -> semihosting stdout piped through defmt-print
#   otherwise                         -> plain QEMU, semihosting text straight to stdout
# RISC-V (qemu-system-riscv32, machine virt) boots with `-bios none`: no firmware in front,
# the ELF's entry runs first in machine mode, as on an MCU.
# Semihosting stderr is QEMU's stderr, unchanged (the firmware's raw-report lines).
# Extra arguments become the guest's semihosting command line (after the ELF name), e.g.
# `cargo fw-m0 -- fleet=7 device=3`; the test suites ignore them (they run whole).
#
# QEMU runs with `-icount shift=N` (default 10, env QEMU_ICOUNT_SHIFT): each instruction
# advances virtual time by exactly 2^N ns, so SysTick readings count instructions
# deterministically (the on-target cost measurements rely on it).
#
# Exit status: the guest's semihosting exit code (0 = pass); 124 on timeout (env QEMU_TIMEOUT,
# default 300 s); 127 when qemu or defmt-print is missing.
set -uo pipefail

if (($# < 4)); then
  echo "usage: $0 <qemu-system-xxx> <machine> <cpu> <elf> [args...]" >&2
  exit 2
fi
qemu_bin=$1 machine=$2 cpu=$3 elf=$4
timeout_s=${QEMU_TIMEOUT:-300}
shift_n=${QEMU_ICOUNT_SHIFT:-10}

if ! command -v "$qemu_bin" >/dev/null; then
  echo "qemu-run: $qemu_bin not found (install qemu-system-arm / qemu-system-riscv; see tools/test-all.sh)" >&2
  exit 127
fi

shift 4
# QEMU option values escape a comma by doubling it.
semihosting="enable=on,target=native,arg=${elf//,/,,}"
for a in "$@"; do
  semihosting+=",arg=${a//,/,,}"
done

bios=()
if [[ $qemu_bin == qemu-system-riscv* ]]; then
  bios=(-bios none)
fi

qemu=(timeout "$timeout_s" "$qemu_bin" -machine "$machine" -cpu "$cpu" "${bios[@]}"
  -nographic -monitor none -serial null
  -icount "shift=$shift_n,sleep=off"
  -semihosting-config "$semihosting" -kernel "$elf")

# No `grep -q`: it would close the pipe early, readelf would die of SIGPIPE and under
# pipefail the check would flip at random.
has_symbol() { readelf -sW "$elf" 2>/dev/null | grep -w "$1" >/dev/null; }

if has_symbol _defmt_acquire; then
  if ! command -v defmt-print >/dev/null; then
    echo "qemu-run: defmt-print not found (cargo install --locked defmt-print@1.2.0)" >&2
    exit 127
  fi
  "${qemu[@]}" | defmt-print -e "$elf" --log-format '{L:<5} {s}'
  status=("${PIPESTATUS[@]}")
  rc=${status[0]}
  # A decoder failure must not pass silently.
  if ((rc == 0 && status[1] != 0)); then
    echo "qemu-run: defmt-print failed with status ${status[1]}" >&2
    rc=${status[1]}
  fi
else
  "${qemu[@]}"
  rc=$?
fi
if ((rc == 124)); then
  echo "qemu-run: TIMEOUT after ${timeout_s}s: $elf" >&2
fi
exit "$rc"
