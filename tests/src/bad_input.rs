//! Bad input: every invalid parameter or value returns its typed error, never a panic.
//!
//! On a target a panic ends the whole suite through the panic handler with a non-zero
//! exit status, so these checks also show that nothing here panics.

use privq_core::histogram::{Histogram, IntegerBins, OutOfRange};
use privq_core::sample::{
    BoundedDiscreteLaplace, DiscreteGaussian, DiscreteLaplace, SigmaSquared, bernoulli,
    bernoulli_exp, uniform_below,
};
use privq_core::{Epsilon, Error, Fixed, GridGaussian, GridLaplace, Rho, laplace_on_grid};

use crate::check::{Outcome, expect_err, expect_ok};
use crate::rng::chacha;

/// ε = 0, negative, NaN, ±∞, too small, too large, unparsable.
pub fn epsilon() -> Outcome {
    expect_err("Epsilon::new(0, 1)", Epsilon::new(0, 1), Error::EpsilonZero)?;
    expect_err(
        "Epsilon::new(1, 0)",
        Epsilon::new(1, 0),
        Error::ZeroDenominator,
    )?;
    let from = Epsilon::from_f64;
    expect_err("Epsilon::from_f64(0)", from(0.0), Error::EpsilonZero)?;
    expect_err(
        "Epsilon::from_f64(-0.5)",
        from(-0.5),
        Error::EpsilonNegative,
    )?;
    expect_err(
        "Epsilon::from_f64(NaN)",
        from(f64::NAN),
        Error::EpsilonNotFinite,
    )?;
    expect_err(
        "Epsilon::from_f64(inf)",
        from(f64::INFINITY),
        Error::EpsilonNotFinite,
    )?;
    expect_err(
        "Epsilon::from_f64(-inf)",
        from(f64::NEG_INFINITY),
        Error::EpsilonNotFinite,
    )?;
    expect_err(
        "Epsilon::from_f64(1e-300)",
        from(1e-300),
        Error::EpsilonTooSmall,
    )?;
    expect_err(
        "Epsilon::from_f64(1e30)",
        from(1e30),
        Error::EpsilonTooLarge,
    )?;
    expect_err(
        "\"-1\".parse::<Epsilon>()",
        "-1".parse::<Epsilon>(),
        Error::EpsilonNegative,
    )?;
    expect_err(
        "\"nan\".parse::<Epsilon>()",
        "nan".parse::<Epsilon>(),
        Error::EpsilonNotFinite,
    )?;
    expect_err(
        "\"x\".parse::<Epsilon>()",
        "x".parse::<Epsilon>(),
        Error::Parse,
    )?;
    Ok(())
}

/// Zero and overflowing noise scales, bad probabilities, empty ranges.
pub fn sampler_parameters() -> Outcome {
    let mut rng = chacha(1);
    expect_err(
        "DiscreteLaplace::new(0, 1)",
        DiscreteLaplace::new(0, 1),
        Error::ScaleZero,
    )?;
    expect_err(
        "DiscreteLaplace::new(1, 0)",
        DiscreteLaplace::new(1, 0),
        Error::ZeroDenominator,
    )?;
    let eps = expect_ok("Epsilon::new(1, u64::MAX)", Epsilon::new(1, u64::MAX))?;
    expect_err(
        "DiscreteLaplace::for_sensitivity overflow",
        DiscreteLaplace::for_sensitivity(u64::MAX, eps),
        Error::Overflow,
    )?;
    expect_err(
        "DiscreteLaplace::for_sensitivity(0, ε)",
        DiscreteLaplace::for_sensitivity(0, eps),
        Error::SensitivityNotPositive,
    )?;
    expect_err(
        "Bounded::new(0, 1)",
        BoundedDiscreteLaplace::new(0, 1),
        Error::ScaleZero,
    )?;
    expect_err(
        "Bounded::new(MAX, 1)",
        BoundedDiscreteLaplace::new(u64::MAX, 1),
        Error::Overflow,
    )?;
    expect_err(
        "uniform_below(0)",
        uniform_below(0, &mut rng),
        Error::EmptyRange,
    )?;
    expect_err(
        "bernoulli(3, 2)",
        bernoulli(3, 2, &mut rng),
        Error::ProbabilityAboveOne,
    )?;
    expect_err(
        "bernoulli(1, 0)",
        bernoulli(1, 0, &mut rng),
        Error::ZeroDenominator,
    )?;
    expect_err(
        "bernoulli_exp(1, 0)",
        bernoulli_exp(1, 0, &mut rng),
        Error::ZeroDenominator,
    )?;
    Ok(())
}

/// Discrete Gaussian and ρ: σ² = 0, zero denominators, ρ = 0 or negative, parameters
/// beyond the sampler's 128-bit range, zero sensitivities, bad grids.
pub fn gaussian_parameters() -> Outcome {
    expect_err(
        "SigmaSquared(0, 1)",
        SigmaSquared::new(0, 1),
        Error::ScaleZero,
    )?;
    expect_err(
        "SigmaSquared(1, 0)",
        SigmaSquared::new(1, 0),
        Error::ZeroDenominator,
    )?;
    let huge = expect_ok("SigmaSquared(MAX, 1)", SigmaSquared::new(u64::MAX, 1))?;
    expect_err(
        "DiscreteGaussian σ² = 2⁶⁴ − 1",
        DiscreteGaussian::new(huge),
        Error::Overflow,
    )?;
    expect_err("Rho::new(0, 1)", Rho::new(0, 1), Error::RhoZero)?;
    expect_err("Rho::new(1, 0)", Rho::new(1, 0), Error::ZeroDenominator)?;
    expect_err("Rho::from_f64(-1)", Rho::from_f64(-1.0), Error::RhoInvalid)?;
    expect_err(
        "Rho::from_f64(NaN)",
        Rho::from_f64(f64::NAN),
        Error::RhoInvalid,
    )?;
    let rho = expect_ok("Rho::new(1, 2)", Rho::new(1, 2))?;
    expect_err(
        "DiscreteGaussian::for_sensitivity(0, ρ)",
        DiscreteGaussian::for_sensitivity(0, rho),
        Error::SensitivityNotPositive,
    )?;
    let tiny = expect_ok("Rho::new(1, MAX)", Rho::new(1, u64::MAX))?;
    expect_err(
        "DiscreteGaussian::for_sensitivity(MAX, tiny ρ)",
        DiscreteGaussian::for_sensitivity(u64::MAX, tiny),
        Error::Overflow,
    )?;
    expect_err(
        "GridGaussian(Δ = 0)",
        GridGaussian::new(Fixed::ZERO, rho),
        Error::SensitivityNotPositive,
    )?;
    expect_err(
        "GridGaussian grid 2^40",
        GridGaussian::with_grid(Fixed::ONE, rho, 40),
        Error::GridOutOfRange,
    )?;
    Ok(())
}

/// Values outside the fixed-point range, bad sensitivities and grids.
pub fn fixed_point_and_grid() -> Outcome {
    let mut rng = chacha(2);
    expect_err(
        "Fixed::from_f64(3e9)",
        Fixed::from_f64(3e9),
        Error::OutOfRange,
    )?;
    expect_err(
        "Fixed::from_f64(NaN)",
        Fixed::from_f64(f64::NAN),
        Error::OutOfRange,
    )?;
    expect_err(
        "\"2147483648\" as Fixed",
        "2147483648".parse::<Fixed>(),
        Error::OutOfRange,
    )?;
    expect_err("\"12x\" as Fixed", "12x".parse::<Fixed>(), Error::Parse)?;
    let one = Fixed::from_bits(1);
    expect_err(
        "Fixed::MAX + tiny",
        Fixed::MAX.checked_add(one),
        Error::OutOfRange,
    )?;
    expect_err("Fixed::pow2(31)", Fixed::pow2(31), Error::GridOutOfRange)?;
    let eps = expect_ok("Epsilon::new(1, 2)", Epsilon::new(1, 2))?;
    expect_err(
        "GridLaplace::new(Δ = 0)",
        GridLaplace::new(Fixed::ZERO, eps),
        Error::SensitivityNotPositive,
    )?;
    expect_err(
        "GridLaplace::new(Δ = -1)",
        GridLaplace::new(Fixed::from_int(-1), eps),
        Error::SensitivityNotPositive,
    )?;
    expect_err(
        "GridLaplace::with_grid(k = 40)",
        GridLaplace::with_grid(Fixed::ONE, eps, 40),
        Error::GridOutOfRange,
    )?;
    expect_err(
        "laplace_on_grid(Δ = 0)",
        laplace_on_grid(Fixed::ONE, Fixed::ZERO, eps, &mut rng),
        Error::SensitivityNotPositive,
    )?;
    Ok(())
}

/// Histogram bins out of range, empty ranges, rejected readings, uneven integer bins.
pub fn histogram() -> Outcome {
    let mut cat = expect_ok("categorical", Histogram::<4>::categorical())?;
    expect_err(
        "record_index(4) of 4 bins",
        cat.record_index(4),
        Error::BinOutOfRange,
    )?;
    expect_err(
        "record_index(usize::MAX)",
        cat.record_index(usize::MAX),
        Error::BinOutOfRange,
    )?;
    expect_err(
        "record(value) on categorical",
        cat.record(Fixed::ONE),
        Error::BinOutOfRange,
    )?;
    expect_err(
        "Histogram::<0>",
        Histogram::<0>::categorical(),
        Error::EmptyRange,
    )?;
    let (lo, hi) = (Fixed::from_int(0), Fixed::from_int(10));
    expect_err(
        "equal_width(hi, lo)",
        Histogram::<4>::equal_width(hi, lo, OutOfRange::Reject),
        Error::EmptyRange,
    )?;
    let mut h = expect_ok(
        "equal_width",
        Histogram::<4>::equal_width(lo, hi, OutOfRange::Reject),
    )?;
    expect_err("record(hi) with Reject", h.record(hi), Error::OutOfRange)?;
    expect_err(
        "record(MIN) with Reject",
        h.record(Fixed::MIN),
        Error::OutOfRange,
    )?;
    let other = expect_ok("categorical", Histogram::<4>::categorical())?;
    expect_err(
        "merge different binnings",
        h.merge(&other),
        Error::BinningMismatch,
    )?;
    expect_err(
        "IntegerBins::new(8, 8)",
        IntegerBins::<4>::new(8, 8),
        Error::EmptyRange,
    )?;
    expect_err(
        "IntegerBins::<3>::new(0, 8)",
        IntegerBins::<3>::new(0, 8),
        Error::UnevenBins,
    )?;
    expect_err(
        "IntegerBins::<0>::new(0, 8)",
        IntegerBins::<0>::new(0, 8),
        Error::EmptyRange,
    )?;
    Ok(())
}
