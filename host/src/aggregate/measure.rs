//! The noisy measurements behind the aggregates, and their intervals.
//!
//! Every measurement is a vector over the released groups. One unit changes, under
//! add/remove, at most `g` groups by at most `r` rows each (the [`Contribution`]
//! limits), so:
//!
//! * counts move by at most `g·r` in ℓ1;
//! * clamped grid sums by at most `g·r·M` grid steps, `M` the largest |value|;
//! * centred sums (`x − midpoint`) by at most `g·r·H`, `H` the half width;
//! * centred sums of squares by at most `g·r·H²`;
//! * a quantile score `−|D·#{x ≤ c} − Q·n|` (q = Q/D) of one group by at most
//!   `D·r`, in at most `g` groups.
//!
//! Replace-one is a removal and an addition: every bound doubles
//! ([`Neighbours::histogram_l1`]). Counts and sums get discrete Laplace noise of
//! scale ℓ1/ε; each group's quantile is report noisy max with discrete Laplace
//! noise of scale `2·D·r·g·Δ/ε` on the integer scores (non-monotone scores need the
//! factor 2; see `central::noisy_max` for the discrete argument).

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::AggregateError;
use super::bounding::Contribution;
use super::bounds::Bounds;
use crate::contract::Neighbours;

/// The denominator of quantile levels: q is read to four decimals.
pub(super) const LEVEL_DEN: u64 = 10_000;

/// One noisy measurement over all released groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Measure {
    /// Bounded rows per group.
    Count,
    /// The clamped grid sum of a value column (index into the table's values).
    Sum(usize),
    /// The clamped grid sum of `x − midpoint`.
    CentredSum(usize),
    /// The clamped grid sum of `(x − midpoint)²`.
    CentredSquares(usize),
    /// The quantile `level/LEVEL_DEN` of a value column.
    Quantile(usize, u64),
}

/// The ℓ1 sensitivity of a count or sum measurement, or the noise scale's
/// numerator of a quantile (in units of the score), from public parameters only.
pub(super) fn noise_for(
    measure: Measure,
    bounds: &[Bounds],
    limits: Contribution,
    neighbours: Neighbours,
    epsilon: Epsilon,
) -> Result<DiscreteLaplace, AggregateError> {
    let l1 = sensitivity_steps(measure, bounds, limits, neighbours)?;
    let noise = DiscreteLaplace::for_sensitivity(l1, epsilon)?;
    if noise.scale_num() as f64 / noise.scale_den() as f64 > MAX_SCALE {
        return Err(AggregateError::InvalidParameter(format!(
            "the noise scale would exceed 2^50 (sensitivity {l1} at ε = {epsilon}): narrow the \
             bounds, lower the contribution limits or raise ε"
        )));
    }
    Ok(noise)
}

/// The ℓ1 sensitivity of `measure` in its units (grid steps, squared grid steps
/// for the centred squares, score units for a quantile), from public parameters.
pub(super) fn sensitivity_steps(
    measure: Measure,
    bounds: &[Bounds],
    limits: Contribution,
    neighbours: Neighbours,
) -> Result<u64, AggregateError> {
    let per_unit = limits
        .rows_per_unit()
        .checked_mul(neighbours.histogram_l1())
        .ok_or(privq_core::Error::Overflow)?;
    let steps = match measure {
        Measure::Count => 1,
        Measure::Sum(c) => bounds[c].max_abs_steps(),
        Measure::CentredSum(c) => bounds[c].half_width_steps(),
        Measure::CentredSquares(c) => bounds[c]
            .half_width_steps()
            .checked_pow(2)
            .ok_or(privq_core::Error::Overflow)?,
        // 2·D·r·g·Δ: the 2 of report noisy max over non-monotone scores.
        Measure::Quantile(..) => 2 * LEVEL_DEN,
    };
    Ok(per_unit
        .checked_mul(steps)
        .ok_or(privq_core::Error::Overflow)?)
}

/// The half width `k` (in the noise's units) of the interval `[x − k, x + k]` that
/// holds the true value with probability at least `confidence`: the smallest `k`
/// with `P[|Z| > k] = 2q^{k+1}/(1+q) ≤ 1 − confidence`, `q = e^{−1/t}`.
pub(super) fn half_width(noise: &DiscreteLaplace, confidence: f64) -> f64 {
    let t = noise.scale_num() as f64 / noise.scale_den() as f64;
    let alpha = 1.0 - confidence;
    // ln q = −1/t exactly; 1 + q = 2 − (1 − q) without cancellation.
    let one_plus_q = 2.0 + (-1.0 / t).exp_m1();
    let tail = |k: f64| 2.0 * (-(k + 1.0) / t).exp() / one_plus_q;
    let mut k = (t * (2.0 / (alpha * one_plus_q)).ln() - 1.0)
        .ceil()
        .max(0.0);
    // Rounding can leave k one step off either way; the scale is capped (see
    // MAX_SCALE), so k is far below 2⁵³ and each step is exact.
    if k > 0.0 && tail(k - 1.0) <= alpha {
        k -= 1.0;
    }
    if tail(k) > alpha {
        k += 1.0;
    }
    k
}

/// The largest noise scale (in grid steps or score units) a plan may deploy: far
/// beyond any useful release, and small enough that no draw overflows `i64` in
/// practice and interval arithmetic stays exact in `f64`.
pub(super) const MAX_SCALE: f64 = (1u64 << 50) as f64;

/// Report noisy max over the candidates of one group: the grid point (in steps)
/// whose score `−|D·#{x ≤ c} − Q·n|` plus noise is largest, the first on ties.
/// `at_candidate[j]` counts the group's clamped values whose smallest candidate at
/// or above them is `candidates[j]` (empty: no value), so `#{x ≤ c_j}` is a prefix
/// sum.
pub(super) fn noisy_quantile<R: Rng + CryptoRng + ?Sized>(
    at_candidate: &[u64],
    level: u64,
    candidates: &[i64],
    noise: &DiscreteLaplace,
    rng: &mut R,
) -> Result<i64, AggregateError> {
    let n: i128 = at_candidate.iter().map(|&k| i128::from(k)).sum();
    let target = i128::from(level) * n;
    let mut below = 0i128;
    let mut best: Option<(i128, i64)> = None;
    for (j, &c) in candidates.iter().enumerate() {
        below += at_candidate.get(j).map_or(0, |&k| i128::from(k));
        let score = -(i128::from(LEVEL_DEN) * below - target).abs();
        let noisy = score + i128::from(noise.sample(rng)?);
        if best.is_none_or(|(b, _)| noisy > b) {
            best = Some((noisy, c));
        }
    }
    Ok(best.map_or(0, |(_, c)| c))
}

/// `count + 1` candidate grid points spread evenly over the bounds (fewer when the
/// bounds hold fewer grid points), ascending.
pub(super) fn candidates(bounds: &Bounds, count: u32) -> Vec<i64> {
    let (lo, hi) = bounds.step_range();
    let span = i128::from(hi - lo);
    let count = i128::from(count).min(span).max(1);
    (0..=count)
        .map(|j| lo + (j * span / count) as i64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_width_is_the_exact_tail_quantile() {
        // Scale 1: q = e^{-1}; P[|Z| > k] = 2e^{-(k+1)}/(1 + e^{-1}).
        let noise = DiscreteLaplace::new(1, 1).unwrap();
        let k = half_width(&noise, 0.95);
        let tail = |k: f64| 2.0 * (-(k + 1.0)).exp() / (1.0 + (-1.0f64).exp());
        assert!(tail(k) <= 0.05 && tail(k - 1.0) > 0.05, "{k}");
        assert_eq!(k, 3.0);
        // Large scale: close to the continuous t·ln(1/α).
        let noise = DiscreteLaplace::new(1000, 1).unwrap();
        let k = half_width(&noise, 0.95);
        assert!((k - 1000.0 * 20f64.ln()).abs() < 2.0, "{k}");
    }

    #[test]
    fn sensitivities_follow_the_limits_and_the_relation() {
        let b: Bounds = "-20:50".parse().unwrap(); // steps -320..800, mid 240
        let limits = Contribution::new(2, 3).unwrap();
        let eps = Epsilon::new(1, 1).unwrap();
        let scale = |m, n| {
            let d = noise_for(m, &[b], limits, n, eps).unwrap();
            d.scale_num() / d.scale_den()
        };
        assert_eq!(scale(Measure::Count, Neighbours::AddRemove), 6);
        assert_eq!(scale(Measure::Count, Neighbours::Replace), 12);
        assert_eq!(scale(Measure::Sum(0), Neighbours::AddRemove), 6 * 800);
        assert_eq!(
            scale(Measure::CentredSum(0), Neighbours::AddRemove),
            6 * 560
        );
        assert_eq!(
            scale(Measure::Quantile(0, 5000), Neighbours::Replace),
            12 * 20_000
        );
    }

    #[test]
    fn candidates_cover_the_bounds() {
        let b: Bounds = "0:1".parse().unwrap();
        let c = candidates(&b, 4);
        assert_eq!(c, vec![0, 256, 512, 768, 1024]);
        assert_eq!(candidates(&b, 100_000).len(), 1025);
    }

    #[test]
    fn a_clear_median_wins() {
        // 0..=1000 at candidates 0, 250, …: 1 value at 0, then 250 per candidate.
        let cands = [0, 250, 500, 750, 1000];
        let mut at = [0u64; 5];
        for x in 0..1001 {
            at[super::super::totals::candidate_bucket(&cands, x)] += 1;
        }
        assert_eq!(at, [1, 250, 250, 250, 250]);
        let noise = DiscreteLaplace::new(1, 1).unwrap();
        let m = noisy_quantile(&at, 5000, &cands, &noise, &mut crate::seeded_rng(3)).unwrap();
        assert_eq!(m, 500);
        let m = noisy_quantile(&at, 9000, &cands, &noise, &mut crate::seeded_rng(3)).unwrap();
        assert_eq!(m, 1000);
    }
}
