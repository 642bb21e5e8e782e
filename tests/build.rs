//! Links the on-target suites exactly like the firmware (shared memory layouts and helper).
include!("../firmware/build-support/bare_metal_link.rs");

fn main() {
    configure_bare_metal_link(std::path::Path::new("../firmware/memory"), &[]);
}
