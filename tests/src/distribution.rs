//! Exact-distribution checks: chi-square goodness of fit of seeded samples against the
//! exact pmf, small enough (10⁴–2·10⁴ samples per case) to run on a Cortex-M0 in QEMU.
//!
//! Samples are counted in cells `(−∞, lo)`, `[lo + i·w, lo + (i+1)·w)` for `i < count`,
//! and `[lo + count·w, ∞)`. Expected counts come from the exact CDF (floating point is
//! fine here: it only judges the samples, it never decides noise). The statistic is
//! compared with the upper 10⁻⁷ quantile of χ² with (non-empty cells − 1) degrees of
//! freedom, so a correct sampler fails a case with probability about 10⁻⁷ (< 10⁻⁶).
//! Cells are chosen so every expected count is at least about 20.

use privq_core::local::{UeVariant, UnaryEncoding};
use privq_core::sample::{
    BoundedDiscreteLaplace, DiscreteGaussian, DiscreteLaplace, SigmaSquared, bernoulli,
    bernoulli_exp, uniform_below,
};

use crate::check::{Failure, Outcome, expect_ok};
use crate::rng::chacha;
use privq_core::{Epsilon, Result};

/// Upper 10⁻⁷ quantiles of χ²: `(degrees of freedom, x)` with `P[χ²_df > x] = 10⁻⁷`.
/// (Verified on the host by `tests/host.rs` with an independent incomplete-gamma routine.)
pub const CHI2_CRITICAL_1E7: [(u32, f64); 8] = [
    (1, 28.373),
    (6, 43.337),
    (9, 50.171),
    (10, 52.309),
    (12, 56.433),
    (25, 80.365),
    (36, 98.557),
    (42, 108.028),
];

/// Most cells a case may use.
const MAX_CELLS: usize = 64;

/// The cells of a case (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Cells {
    /// Lower edge of the first inner cell.
    pub lo: i64,
    /// Width of each inner cell.
    pub width: i64,
    /// Number of inner cells (two tail cells are added).
    pub count: usize,
}

impl Cells {
    /// The cell of value `x`.
    fn index(&self, x: i64) -> usize {
        if x < self.lo {
            return 0;
        }
        let i = (x - self.lo) / self.width;
        (i as usize).min(self.count) + 1
    }

    /// The lower edge of cell `i ≥ 1`.
    fn lower_edge(&self, i: usize) -> i64 {
        self.lo + (i as i64 - 1) * self.width
    }
}

/// The critical value for `df` degrees of freedom, if tabulated.
pub fn critical_value(df: u32) -> Option<f64> {
    CHI2_CRITICAL_1E7
        .iter()
        .find(|&&(d, _)| d == df)
        .map(|&(_, x)| x)
}

/// Draws `n` samples, counts them in `cells` and compares with `P[X < x] = below(x)`.
pub fn chi_square(
    what: &'static str,
    n: u32,
    cells: Cells,
    mut sample: impl FnMut() -> Result<i64>,
    below: impl Fn(i64) -> f64,
) -> Outcome {
    let total = cells.count + 2;
    if total > MAX_CELLS {
        return Err(Failure::Mismatch {
            what: "too many chi-square cells",
            got: total as i128,
            want: MAX_CELLS as i128,
        });
    }
    let mut observed = [0u32; MAX_CELLS];
    for _ in 0..n {
        let x = expect_ok(what, sample())?;
        if let Some(o) = observed.get_mut(cells.index(x)) {
            *o += 1;
        }
    }
    let mut statistic = 0.0;
    let mut nonempty = 0u32;
    let mut lower = 0.0;
    for (i, &o) in observed.iter().enumerate().take(total) {
        let upper = if i + 1 == total {
            1.0
        } else {
            below(cells.lower_edge(i + 1))
        };
        let expected = f64::from(n) * (upper - lower);
        lower = upper;
        if expected <= 0.0 {
            if o != 0 {
                // A value the distribution can never produce.
                return Err(Failure::Statistic {
                    what,
                    value: f64::INFINITY,
                    limit: 0.0,
                });
            }
            continue;
        }
        nonempty += 1;
        let d = f64::from(o) - expected;
        statistic += d * d / expected;
    }
    let df = nonempty.saturating_sub(1);
    let Some(limit) = critical_value(df) else {
        return Err(Failure::Mismatch {
            what: "no tabulated chi-square critical value for this df",
            got: i128::from(df),
            want: 0,
        });
    };
    if statistic < limit {
        Ok(())
    } else {
        Err(Failure::Statistic {
            what,
            value: statistic,
            limit,
        })
    }
}

/// `P[X < x]` for the discrete Laplace distribution of scale `num/den`.
pub fn laplace_below(num: u64, den: u64, x: i64) -> f64 {
    let q = libm::exp(-(den as f64) / (num as f64));
    // P[X ≥ k] = P[X ≤ −k] = q^k / (1 + q) for k ≥ 1; P[X < x] = P[X ≥ 1 − x] for x ≤ 0.
    if x <= 0 {
        libm::pow(q, (1 - x) as f64) / (1.0 + q)
    } else {
        1.0 - libm::pow(q, x as f64) / (1.0 + q)
    }
}

/// Discrete Laplace (exact sampler) at scale `num/den` against its pmf.
fn exact_laplace(what: &'static str, num: u64, den: u64, n: u32, cells: Cells) -> Outcome {
    let d = expect_ok(what, DiscreteLaplace::new(num, den))?;
    let mut rng = chacha(0xd15c_0000 + num * 31 + den);
    chi_square(
        what,
        n,
        cells,
        || d.sample(&mut rng),
        |x| laplace_below(num, den, x),
    )
}

/// Discrete Laplace (bounded-work sampler) at scale `num/den` against its pmf.
fn bounded_laplace(what: &'static str, num: u64, den: u64, n: u32, cells: Cells) -> Outcome {
    let d = expect_ok(what, BoundedDiscreteLaplace::new(num, den))?;
    let mut rng = chacha(0xb0d_0000 + num * 31 + den);
    chi_square(
        what,
        n,
        cells,
        || d.sample(&mut rng),
        |x| laplace_below(num, den, x),
    )
}

const fn unit_cells(lo: i64, count: usize) -> Cells {
    Cells {
        lo,
        width: 1,
        count,
    }
}

/// Discrete Laplace, scale 1/2, 2·10⁴ samples.
pub fn laplace_half() -> Outcome {
    exact_laplace("discrete Laplace t=1/2", 1, 2, 20_000, unit_cells(-2, 5))
}

/// Discrete Laplace, scale 1, 2·10⁴ samples.
pub fn laplace_one() -> Outcome {
    exact_laplace("discrete Laplace t=1", 1, 1, 20_000, unit_cells(-5, 11))
}

/// Discrete Laplace, scale 10/3, 2·10⁴ samples.
pub fn laplace_ten_thirds() -> Outcome {
    exact_laplace(
        "discrete Laplace t=10/3",
        10,
        3,
        20_000,
        unit_cells(-20, 41),
    )
}

/// Discrete Laplace, scale 1000, 2·10⁴ samples in cells 250 wide.
pub fn laplace_thousand() -> Outcome {
    let cells = Cells {
        lo: -3000,
        width: 250,
        count: 24,
    };
    exact_laplace("discrete Laplace t=1000", 1000, 1, 20_000, cells)
}

/// Bounded-work discrete Laplace, scale 1, 10⁴ samples.
pub fn bounded_one() -> Outcome {
    bounded_laplace(
        "bounded discrete Laplace t=1",
        1,
        1,
        10_000,
        unit_cells(-4, 9),
    )
}

/// Bounded-work discrete Laplace, scale 10/3, 10⁴ samples.
pub fn bounded_ten_thirds() -> Outcome {
    let cells = unit_cells(-17, 35);
    bounded_laplace("bounded discrete Laplace t=10/3", 10, 3, 10_000, cells)
}

/// Bounded-work discrete Laplace, scale 1000, 10⁴ samples in cells 250 wide.
pub fn bounded_thousand() -> Outcome {
    let cells = Cells {
        lo: -3000,
        width: 250,
        count: 24,
    };
    bounded_laplace("bounded discrete Laplace t=1000", 1000, 1, 10_000, cells)
}

/// `P[X < x]` for the discrete Gaussian with σ² = `num/den`: weights
/// `exp(−k²/(2σ²))` summed over `|k| ≤ 8σ + 8` (the rest is below 10⁻¹³).
pub fn gaussian_below(num: u64, den: u64, x: i64) -> f64 {
    let s2 = num as f64 / den as f64;
    let k_max = (8.0 * libm::sqrt(s2)) as i64 + 8;
    let w = |k: i64| libm::exp(-((k * k) as f64) / (2.0 * s2));
    let (mut below, mut total) = (0.0, 0.0);
    for k in -k_max..=k_max {
        let wk = w(k);
        total += wk;
        if k < x {
            below += wk;
        }
    }
    below / total
}

/// Discrete Gaussian (exact sampler) with σ² = `num/den` against its pmf.
fn exact_gaussian(what: &'static str, num: u64, den: u64, n: u32, cells: Cells) -> Outcome {
    let s2 = expect_ok(what, SigmaSquared::new(num, den))?;
    let d = expect_ok(what, DiscreteGaussian::new(s2))?;
    let mut rng = chacha(0x6a55_0000 + num * 31 + den);
    chi_square(
        what,
        n,
        cells,
        || d.sample(&mut rng),
        |x| gaussian_below(num, den, x),
    )
}

/// Discrete Gaussian, σ² = 10/3, 2·10⁴ samples.
pub fn gaussian_ten_thirds() -> Outcome {
    exact_gaussian(
        "discrete Gaussian sigma2=10/3",
        10,
        3,
        20_000,
        unit_cells(-5, 11),
    )
}

/// Discrete Gaussian, σ² = 2500 (σ = 50), 2·10⁴ samples in cells 20 wide.
pub fn gaussian_fifty() -> Outcome {
    let cells = Cells {
        lo: -110,
        width: 20,
        count: 11,
    };
    exact_gaussian("discrete Gaussian sigma2=2500", 2500, 1, 20_000, cells)
}

/// `P[X < x]` of a 0/1 variable that is 1 with probability `p`.
fn bit_below(p: f64, x: i64) -> f64 {
    match x {
        ..=0 => 0.0,
        1 => 1.0 - p,
        _ => 1.0,
    }
}

/// Bernoulli(1/3) and Bernoulli(999/1000), 2·10⁴ samples each.
pub fn bernoulli_rational() -> Outcome {
    for (what, p, q) in [
        ("Bernoulli(1/3)", 1u64, 3u64),
        ("Bernoulli(999/1000)", 999, 1000),
    ] {
        let mut rng = chacha(0xbe_0000 + p * 1009 + q);
        let sample = || bernoulli(p, q, &mut rng).map(i64::from);
        let prob = p as f64 / q as f64;
        chi_square(what, 20_000, unit_cells(0, 2), sample, |x| {
            bit_below(prob, x)
        })?;
    }
    Ok(())
}

/// Bernoulli(e^{−1}) and Bernoulli(e^{−7/3}), 2·10⁴ samples each.
pub fn bernoulli_exponential() -> Outcome {
    for (what, p, q) in [
        ("Bernoulli(exp(-1))", 1u64, 1u64),
        ("Bernoulli(exp(-7/3))", 7, 3),
    ] {
        let mut rng = chacha(0xbe_e000 + p * 1009 + q);
        let sample = || bernoulli_exp(p, q, &mut rng).map(i64::from);
        let prob = libm::exp(-(p as f64) / q as f64);
        chi_square(what, 20_000, unit_cells(0, 2), sample, |x| {
            bit_below(prob, x)
        })?;
    }
    Ok(())
}

/// `P[Binomial(n, p) = k]`, by the ratio of successive terms.
fn binomial_pmf(n: u32, p: f64, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let mut pmf = libm::pow(1.0 - p, f64::from(n));
    for j in 0..k {
        pmf *= f64::from(n - j) / f64::from(j + 1) * p / (1.0 - p);
    }
    pmf
}

/// A unary-encoding report as one number: `2·(noise bits set) + (true bit)`. Given the
/// item, the exact law is `2·Binomial(d − 1, q) + Bernoulli(p_true)` when every bit is
/// independent with its exact probability, so the test judges the true bit's
/// probability, the noise bits' probability and their independence at once.
fn unary_report(
    what: &'static str,
    variant: UeVariant,
    (num, den): (u64, u64),
    d: u32,
    cells: Cells,
) -> Outcome {
    let ue = expect_ok(
        what,
        Epsilon::new(num, den).and_then(|e| UnaryEncoding::new(variant, e, d)),
    )?;
    let mut rng = chacha(0x0e_0000 + num * 1009 + den * 31 + u64::from(d));
    let e = libm::exp(num as f64 / den as f64);
    let (p_true, q) = match variant {
        // OUE: ½ for the true bit, 1/(e^ε + 1) for the others.
        UeVariant::Optimized => (0.5, 1.0 / (e + 1.0)),
        // SUE: e^{ε/2}/(e^{ε/2} + 1) and its complement.
        UeVariant::Symmetric => {
            let h = libm::sqrt(e);
            (h / (h + 1.0), 1.0 / (h + 1.0))
        }
    };
    let mut k = 0u32;
    let sample = || {
        k += 1;
        let x = (k * 7) % d;
        let mut bits = [0u8; 16];
        ue.randomize_into(x, &mut rng, &mut bits)?;
        let mut noise = 0i64;
        let mut truth = 0i64;
        for i in 0..d {
            let set = bits
                .get((i / 8) as usize)
                .is_some_and(|b| b >> (i % 8) & 1 == 1);
            match (set, i == x) {
                (true, true) => truth = 1,
                (true, false) => noise += 1,
                _ => {}
            }
        }
        Ok(2 * noise + truth)
    };
    let below = |v: i64| {
        let mut total = 0.0;
        for n in 0..d {
            for t in 0..2 {
                if 2 * i64::from(n) + t < v {
                    let pt = if t == 1 { p_true } else { 1.0 - p_true };
                    total += binomial_pmf(d - 1, q, n) * pt;
                }
            }
        }
        total
    };
    chi_square(what, 20_000, cells, sample, below)
}

/// OUE, ε = 1, 64 items (the firmware's report), 2·10⁴ reports.
pub fn oue_report_bits() -> Outcome {
    unary_report(
        "OUE eps=1 d=64: 2*(noise ones) + true bit",
        UeVariant::Optimized,
        (1, 1),
        64,
        unit_cells(22, 24),
    )
}

/// OUE, ε = 3/2 (whole and fractional part of the exponent), 20 items, and SUE,
/// ε = 1 (coins at ε/2), 16 items; 2·10⁴ reports each.
pub fn unary_report_bits_other_eps() -> Outcome {
    unary_report(
        "OUE eps=3/2 d=20: 2*(noise ones) + true bit",
        UeVariant::Optimized,
        (3, 2),
        20,
        unit_cells(2, 11),
    )?;
    unary_report(
        "SUE eps=1 d=16: 2*(noise ones) + true bit",
        UeVariant::Symmetric,
        (1, 1),
        16,
        unit_cells(6, 11),
    )
}

/// Uniform on `[0, 10)`, 2·10⁴ samples.
pub fn uniform_ten() -> Outcome {
    let mut rng = chacha(0x0a1f);
    let sample = || uniform_below(10, &mut rng).map(|x| x as i64);
    let below = |x: i64| x.clamp(0, 10) as f64 / 10.0;
    chi_square(
        "uniform_below(10)",
        20_000,
        unit_cells(0, 10),
        sample,
        below,
    )
}
