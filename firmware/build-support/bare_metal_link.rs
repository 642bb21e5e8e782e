// Linker set-up shared by `firmware/build.rs` and `tests/build.rs` through `include!`,
// so both crates pick the same memory layout for the same QEMU machine.

/// Configures the link of a bare-metal build (Cortex-M with cortex-m-rt, RISC-V with
/// riscv-rt); does nothing for other targets (host builds of the same crate must stay
/// untouched).
///
/// * copies `memory/<machine>.x` (from `memory_dir`) into `OUT_DIR` as `memory.x`, where
///   the runtime crate's `link.x` finds it; the machine is the QEMU board that emulates
///   the target;
/// * passes `-Tlink.x` and each of `extra_scripts` (e.g. `defmt.x`) to this package only.
fn configure_bare_metal_link(memory_dir: &std::path::Path, extra_scripts: &[&str]) {
    println!("cargo:rerun-if-changed={}", memory_dir.display());
    let target = std::env::var("TARGET").unwrap_or_default();
    let machine = match target.as_str() {
        "thumbv6m-none-eabi" => "microbit",
        "thumbv7m-none-eabi" => "lm3s6965evb",
        "thumbv7em-none-eabihf" | "thumbv7em-none-eabi" => "mps2-an386",
        "riscv32imc-unknown-none-elf" | "riscv32imac-unknown-none-elf" => "virt-riscv32",
        t if t.starts_with("thumbv") || t.starts_with("riscv") => {
            panic!("no QEMU machine / memory.x known for target {t}")
        }
        _ => return,
    };
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = memory_dir.join(format!("{machine}.x"));
    std::fs::copy(&source, out.join("memory.x"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", source.display()));
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=--nmagic");
    println!("cargo:rustc-link-arg=-Tlink.x");
    for script in extra_scripts {
        println!("cargo:rustc-link-arg=-T{script}");
    }
}
