//! Links the firmware for the QEMU machine of its target (see `build-support/`).
include!("build-support/cortex_m_link.rs");

fn main() {
    configure_cortex_m_link(std::path::Path::new("memory"), &["defmt.x"]);
}
