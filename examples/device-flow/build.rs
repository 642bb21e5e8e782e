//! Links the size-measurement examples for bare-metal Cortex-M (cortex-m-rt's `link.x` and
//! a `memory.x`); host builds and the library are left alone.
use std::{env, fs, path::PathBuf};

fn main() {
    let memory = match env::var("TARGET").unwrap_or_default().as_str() {
        // nRF51822-class Cortex-M0 (as the project's QEMU microbit machine).
        "thumbv6m-none-eabi" => {
            "MEMORY { FLASH : ORIGIN = 0x0, LENGTH = 256K\n RAM : ORIGIN = 0x20000000, LENGTH = 16K }\n"
        }
        t if t.starts_with("thumbv") => {
            "MEMORY { FLASH : ORIGIN = 0x0, LENGTH = 1024K\n RAM : ORIGIN = 0x20000000, LENGTH = 128K }\n"
        }
        _ => return,
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), memory).expect("write memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-examples=--nmagic");
    println!("cargo:rustc-link-arg-examples=-Tlink.x");
    println!("cargo:rerun-if-changed=build.rs");
}
