//! Size measurement: up to the OUE payload (no header, no ledger) (see `common`).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[macro_use]
mod common;

use privq_core::local::{UeVariant, UnaryEncoding};

size_image!(
    |eps| UnaryEncoding::new(UeVariant::Optimized, eps, common::BINS),
    upto = RANDOMIZER
);
