//! Estimates with variances and confidence intervals.

use std::cell::Cell;

use serde::{Deserialize, Serialize};

use crate::stats::normal_isf;

/// One estimated quantity with its variance and a two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The (unbiased, before post-processing) estimate.
    pub value: f64,
    /// Its variance: the exact formula of the mechanism, with the unknown true
    /// value replaced by the clipped estimate.
    pub variance: f64,
    /// Lower end of the confidence interval.
    pub ci_low: f64,
    /// Upper end of the confidence interval.
    pub ci_high: f64,
}

impl Estimate {
    /// `value ± z·√variance` (normal approximation) at two-sided `confidence`.
    pub fn normal(value: f64, variance: f64, confidence: f64) -> Estimate {
        Estimate::with_z(value, variance, z_value(confidence))
    }

    /// `value ± z·√variance` for a quantile `z` from [`z_value`]: computing it once
    /// for many estimates saves a quantile inversion (about a hundred tail
    /// evaluations) per estimate.
    pub fn with_z(value: f64, variance: f64, z: f64) -> Estimate {
        let half = z * variance.max(0.0).sqrt();
        Estimate {
            value,
            variance,
            ci_low: value - half,
            ci_high: value + half,
        }
    }

    /// `√variance`.
    pub fn std_error(&self) -> f64 {
        self.variance.max(0.0).sqrt()
    }

    /// Whether `truth` lies in the confidence interval.
    pub fn covers(&self, truth: f64) -> bool {
        self.ci_low <= truth && truth <= self.ci_high
    }
}

/// The two-sided normal quantile `z` with `P[|Z| ≤ z] = confidence`.
///
/// The inversion takes about 40 µs; the last confidence asked for on each thread
/// is remembered, since callers ask for one confidence many times (one estimate
/// per group).
pub fn z_value(confidence: f64) -> f64 {
    thread_local! {
        static LAST: Cell<Option<(u64, f64)>> = const { Cell::new(None) };
    }
    let key = confidence.to_bits();
    if let Some((k, z)) = LAST.get()
        && k == key
    {
        return z;
    }
    let c = confidence.clamp(1e-12, 1.0 - 1e-16);
    let z = normal_isf((1.0 - c) / 2.0);
    LAST.set(Some((key, z)));
    z
}

/// The probabilities of a pure frequency protocol: a report supports the true item
/// with `p` and any other item with `q` (Wang et al. 2017).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PureProtocol {
    /// `P[support | true item]`.
    pub p: f64,
    /// `P[support | other item]`.
    pub q: f64,
}

impl PureProtocol {
    /// Unbiased frequency from `support` out of `n` reports: `(C/n − q)/(p − q)`.
    pub fn frequency(&self, support: f64, n: f64) -> f64 {
        (support / n - self.q) / (self.p - self.q)
    }

    /// The exact variance of the frequency estimate at true frequency `f`:
    /// `q(1−q)/(n(p−q)²) + f(1−p−q)/(n(p−q))`.
    pub fn variance(&self, f: f64, n: f64) -> f64 {
        let d = self.p - self.q;
        self.q * (1.0 - self.q) / (n * d * d) + f * (1.0 - self.p - self.q) / (n * d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_value_is_the_quantile_for_each_confidence_in_turn() {
        for c in [0.95, 0.95, 0.9, 0.95, f64::NAN, 0.99, 0.99] {
            let want = normal_isf((1.0 - c.clamp(1e-12, 1.0 - 1e-16)) / 2.0);
            assert_eq!(z_value(c).to_bits(), want.to_bits(), "confidence {c}");
        }
        assert!((z_value(0.95) - 1.959963984540054).abs() < 1e-12);
    }
}
