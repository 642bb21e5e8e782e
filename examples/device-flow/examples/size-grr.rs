//! Size measurement: the documented path with GRR, without frames (see `common`).
#![cfg_attr(target_os = "none", no_std, no_main)]

mod common;

use core::hint::black_box;
use privq_core::local::Grr;

fn period() -> Result<usize, privq_core::Error> {
    common::period::<_, false>(|eps| Grr::new(eps, common::BINS))
}

#[cfg(target_os = "none")]
#[cortex_m_rt::entry]
fn main() -> ! {
    black_box(period().is_ok());
    loop {
        core::hint::spin_loop();
    }
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    let len = black_box(period()).expect("the documented path runs on the host");
    println!("{len} bytes");
}
