//! Links the on-target suites exactly like the firmware (shared memory layouts and helper).
include!("../firmware/build-support/cortex_m_link.rs");

fn main() {
    configure_cortex_m_link(std::path::Path::new("../firmware/memory"), &[]);
}
