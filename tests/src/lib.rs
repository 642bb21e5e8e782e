//! # privq-tests
//!
//! The checks privq runs both on the host and on Cortex-M targets in QEMU.
//! This library is `#![no_std]` and allocation-free, so the very same code runs under
//! `cargo test -p privq-tests` (host, `tests/host.rs`) and inside the bare-metal suite
//! `tests/on_target.rs` (Cortex-M0 `microbit`, M3 `lm3s6965evb`, M4F `mps2-an386`):
//!
//! * [`known_answer`]: a seeded ChaCha12 drives every core sampler; the FNV-1a digest of
//!   all outputs must be bit-identical on the host and every target;
//! * [`distribution`]: chi-square goodness of fit against the exact pmf;
//! * [`bad_input`]: typed errors, never a panic;
//! * [`mechanism`]: grid Laplace releases stay on the input-independent lattice;
//! * [`cost`]: per-call cost grouped by returned value (measured on target).
//!
//! [`CHECKS`] lists the portable checks; [`check::Runner`] prints libtest-style lines and
//! the closing `N passed, N failed`.
#![no_std]

pub mod bad_input;
pub mod check;
pub mod cost;
pub mod distribution;
pub mod fnv;
pub mod known_answer;
pub mod mechanism;
pub mod rng;

use check::Check;

/// Every portable check, in the order the on-target suite runs them.
pub const CHECKS: &[Check] = &[
    Check {
        name: "known_answer_digest",
        run: known_answer::check,
    },
    Check {
        name: "known_answer_discrete_gaussian",
        run: known_answer::check_gaussian,
    },
    Check {
        name: "known_answer_unary_encoding",
        run: known_answer::check_unary,
    },
    Check {
        name: "bad_input_epsilon",
        run: bad_input::epsilon,
    },
    Check {
        name: "bad_input_sampler_parameters",
        run: bad_input::sampler_parameters,
    },
    Check {
        name: "bad_input_gaussian_parameters",
        run: bad_input::gaussian_parameters,
    },
    Check {
        name: "bad_input_fixed_point_and_grid",
        run: bad_input::fixed_point_and_grid,
    },
    Check {
        name: "bad_input_histogram",
        run: bad_input::histogram,
    },
    Check {
        name: "grid_release_lattice",
        run: mechanism::grid_lattice,
    },
    Check {
        name: "chi2_uniform_below_10",
        run: distribution::uniform_ten,
    },
    Check {
        name: "chi2_bernoulli_rational",
        run: distribution::bernoulli_rational,
    },
    Check {
        name: "chi2_bernoulli_exp",
        run: distribution::bernoulli_exponential,
    },
    Check {
        name: "chi2_oue_report_eps_1_d_64",
        run: distribution::oue_report_bits,
    },
    Check {
        name: "chi2_unary_report_oue_3_2_sue_1",
        run: distribution::unary_report_bits_other_eps,
    },
    Check {
        name: "chi2_discrete_laplace_t_1_2",
        run: distribution::laplace_half,
    },
    Check {
        name: "chi2_discrete_laplace_t_1",
        run: distribution::laplace_one,
    },
    Check {
        name: "chi2_discrete_laplace_t_10_3",
        run: distribution::laplace_ten_thirds,
    },
    Check {
        name: "chi2_discrete_laplace_t_1000",
        run: distribution::laplace_thousand,
    },
    Check {
        name: "chi2_discrete_gaussian_sigma2_10_3",
        run: distribution::gaussian_ten_thirds,
    },
    Check {
        name: "chi2_discrete_gaussian_sigma2_2500",
        run: distribution::gaussian_fifty,
    },
    Check {
        name: "chi2_bounded_laplace_t_1",
        run: distribution::bounded_one,
    },
    Check {
        name: "chi2_bounded_laplace_t_10_3",
        run: distribution::bounded_ten_thirds,
    },
    Check {
        name: "chi2_bounded_laplace_t_1000",
        run: distribution::bounded_thousand,
    },
];
