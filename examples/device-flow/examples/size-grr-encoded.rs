//! Size measurement: up to the GRR report (header and payload; no ledger) (see `common`).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[macro_use]
mod common;

use privq_core::local::Grr;

size_image!(|eps| Grr::new(eps, common::BINS), upto = REPORT);
