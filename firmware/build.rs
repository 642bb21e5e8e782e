//! Links the firmware for the QEMU machine of its target (see `build-support/`).
include!("build-support/bare_metal_link.rs");

fn main() {
    configure_bare_metal_link(std::path::Path::new("memory"), &["defmt.x"]);
}
