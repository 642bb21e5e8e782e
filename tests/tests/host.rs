//! Host side of the shared checks: one libtest `#[test]` per check of `privq_tests::CHECKS`
//! (the same code the QEMU suites run), plus host-only checks of the test machinery.

use privq_tests::check::{Check, Runner};
use privq_tests::{CHECKS, known_answer};

/// Runs the registered check called `name` and panics with its failure.
fn run(name: &str) {
    let check: &Check = CHECKS
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check named {name}"));
    if let Err(failure) = (check.run)() {
        panic!("{name}: {failure}");
    }
}

macro_rules! host_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { run(stringify!($name)); })*

        #[test]
        fn every_check_has_a_host_test() {
            let names = [$(stringify!($name)),*];
            for c in CHECKS {
                assert!(names.contains(&c.name), "{} has no host test", c.name);
            }
        }
    };
}

host_tests!(
    known_answer_digest,
    known_answer_discrete_gaussian,
    known_answer_unary_encoding,
    bad_input_epsilon,
    bad_input_sampler_parameters,
    bad_input_gaussian_parameters,
    bad_input_fixed_point_and_grid,
    bad_input_histogram,
    grid_release_lattice,
    chi2_uniform_below_10,
    chi2_bernoulli_rational,
    chi2_bernoulli_exp,
    chi2_oue_report_eps_1_d_64,
    chi2_unary_report_oue_3_2_sue_1,
    chi2_discrete_laplace_t_1_2,
    chi2_discrete_laplace_t_1,
    chi2_discrete_laplace_t_10_3,
    chi2_discrete_laplace_t_1000,
    chi2_discrete_gaussian_sigma2_10_3,
    chi2_discrete_gaussian_sigma2_2500,
    chi2_bounded_laplace_t_1,
    chi2_bounded_laplace_t_10_3,
    chi2_bounded_laplace_t_1000,
);

#[test]
fn print_known_answer_digest() {
    let (digest, errors) = known_answer::digest();
    println!("known-answer digest: {digest:#018x} ({errors} errors)");
    let (digest, errors) = known_answer::gaussian_digest();
    println!("discrete Gaussian digest: {digest:#018x} ({errors} errors)");
    let (digest, errors) = known_answer::unary_digest();
    println!("unary encoding digest: {digest:#018x} ({errors} errors)");
}

#[test]
fn runner_counts_and_rejects_empty_runs() {
    let mut out = String::new();
    let runner = Runner::new(&mut out);
    assert!(!runner.finish(), "a run with no test must fail");
    assert!(out.contains("0 passed, 0 failed"));

    let mut out = String::new();
    let mut runner = Runner::new(&mut out);
    runner.run("good", || Ok(()));
    runner.run("bad", || privq_tests::check::expect_eq("x", 1, 2));
    assert!(!runner.finish());
    assert!(out.contains("test good ... ok"));
    assert!(out.contains("test bad ... FAILED"));
    assert!(out.lines().any(|l| l == "1 passed, 1 failed"));
}

#[test]
fn chi_square_critical_values_have_tail_about_1e7() {
    // Tails from privq_host::stats (checked against mpmath there); P[χ²₁ > 10.828] ≈ 0.001.
    let p = privq_host::stats::gamma_q(0.5, 10.828 / 2.0);
    assert!((p - 0.001).abs() < 1e-6, "{p}");
    for (df, x) in privq_tests::distribution::CHI2_CRITICAL_1E7 {
        let tail = privq_host::stats::gamma_q(f64::from(df) / 2.0, x / 2.0);
        assert!(
            tail < 1e-6,
            "df {df}: P[chi2 > {x}] = {tail} is not below 1e-6"
        );
        assert!(
            tail > 0.9e-7,
            "df {df}: P[chi2 > {x}] = {tail} (too strict a constant)"
        );
    }
}

#[test]
fn chi_square_detects_a_wrong_scale() {
    use privq_core::sample::DiscreteLaplace;
    use privq_tests::distribution::{Cells, chi_square, laplace_below};
    // Samples of scale 1 judged against the pmf of scale 10/9 (11% off) must fail.
    let d = DiscreteLaplace::new(1, 1).unwrap();
    let mut rng = privq_tests::rng::chacha(77);
    let cells = Cells {
        lo: -5,
        width: 1,
        count: 11,
    };
    let outcome = chi_square(
        "wrong scale",
        20_000,
        cells,
        || d.sample(&mut rng),
        |x| laplace_below(10, 9, x),
    );
    assert!(outcome.is_err(), "a wrong pmf passed: {outcome:?}");
}
