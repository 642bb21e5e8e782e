//! Size measurement: ChaCha12, integer binning into a histogram and the modal bin (see `common`).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[macro_use]
mod common;

use privq_core::local::Grr;

size_image!(|eps| Grr::new(eps, common::BINS), upto = BINS);
