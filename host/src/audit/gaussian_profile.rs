//! The exact privacy profile of discrete Gaussian measurements, for judging the
//! ρ-zCDP cases tightly: a claim converted from ρ by a general zCDP → (ε, δ) bound
//! is loose for a mechanism that is one (or a few) discrete Gaussian
//! measurement(s), so a case judged against it would let noise too small by ×2
//! pass.
//!
//! For neighbours whose answers differ by an integer vector `s` and the noise
//! `Z ~ N_ℤ(0, σ²)^k` (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for
//! Differential Privacy", Def. 1), the privacy loss of an output `y + Z` is
//! `L = (‖s‖² − 2⟨s, Z⟩)/(2σ²)`, and the mechanism is (ε, δ(ε))-DP with exactly
//! `δ(ε) = E[(1 − e^{ε − L})₊]` (Balle & Wang 2018, Thm. 5, the privacy profile);
//! for one coordinate this is CKS20 Thm. 7,
//! `δ(ε) = P[Y > εσ²/Δ − Δ/2] − e^ε·P[Y > εσ²/Δ + Δ/2]`, `Y ~ N_ℤ(0, σ²)`.
//! [`DiscreteGaussianProfile`] sums the distribution of `⟨s, Z⟩` exactly over a
//! support that leaves out less than 10⁻⁴⁰ of the mass (f64 sums of positive
//! terms), and inverts δ(ε) by bisection, rounding ε up.
//!
//! A pure ε₀-DP step composed with it (an exponential-mechanism selection) is
//! dominated by randomized response with ε₀ (Kairouz, Oh, Viswanath 2015, Thm. 2.2;
//! Dong, Roth, Su 2022, "Gaussian Differential Privacy", Prop. 2.4 and Thm. 3.2 for
//! adaptive composition of tradeoff functions), so composing its privacy-loss
//! distribution with that of randomized response is a valid profile of the whole.
//!
//! Floating point is fine here: the profile decides a claim the auditor checks,
//! never what noise a release gets.

use super::AuditError;

/// The privacy-loss distribution of a composition of discrete Gaussian
/// measurements (and optionally pure steps), as atoms `(loss, probability)` under
/// the first dataset. Symmetric in the two datasets (the discrete Gaussian is
/// symmetric), so one direction is the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscreteGaussianProfile {
    atoms: Vec<(f64, f64)>,
}

/// `N_ℤ(0, σ²)` on `[−k, k]` (its mass outside is below 10⁻⁴⁰ for the `k` chosen),
/// as probabilities indexed by `y + k`.
fn discrete_gaussian_pmf(sigma_squared: f64) -> (i64, Vec<f64>) {
    // With t = 14σ + 2 and Z = Σ_y e^{−y²/(2σ²)} ≥ max(1, √(2π)·σ − 1):
    // P[|Y| > t] ≤ 2·e^{−t²/(2σ²)}/((1 − e^{−t/σ²})·Z) (successive terms shrink by
    // at least e^{−t/σ²}), and 1/(1 − e^{−t/σ²}) ≤ 1 + σ²/t grows like σ/14 while Z
    // grows like 2.5σ: about e^{−98}/17 ≈ 1.5·10⁻⁴⁴ for large σ (σ² = 10⁸ too; the
    // bound without Z would wrongly grow like σ², 5·10⁻³⁵ there), ≪ 10⁻⁴⁰ for every
    // σ ≥ 1/4; for small σ the +2 alone leaves e^{−2/σ²}.
    let k = (14.0 * sigma_squared.sqrt()).ceil() as i64 + 2;
    let weights: Vec<f64> = (-k..=k)
        .map(|y| (-((y * y) as f64) / (2.0 * sigma_squared)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    (k, weights.into_iter().map(|w| w / total).collect())
}

impl DiscreteGaussianProfile {
    /// The profile of releasing `k = shifts.len()` counts with independent
    /// `N_ℤ(0, σ²)` noise each, on neighbours whose counts differ by `shifts`.
    /// Refuses σ² ≤ 0, an empty or all-zero shift, or shifts above 10⁴.
    pub fn new(sigma_squared: f64, shifts: &[i64]) -> Result<Self, AuditError> {
        if !(sigma_squared.is_finite() && sigma_squared > 0.0 && sigma_squared <= 1e8) {
            return Err(AuditError::InvalidCase(format!(
                "sigma^2 = {sigma_squared} is not in (0, 1e8]"
            )));
        }
        if shifts.iter().all(|&s| s == 0) || shifts.iter().any(|s| s.abs() > 10_000) {
            return Err(AuditError::InvalidCase(format!(
                "shifts {shifts:?}: none nonzero, or one above 10^4"
            )));
        }
        let (k, pmf) = discrete_gaussian_pmf(sigma_squared);
        // The distribution of S = ⟨s, Z⟩ on [−off, off], indexed by S + off.
        let mut off = 0i64;
        let mut dist = vec![1.0f64];
        for &s in shifts.iter().filter(|&&s| s != 0) {
            let reach = s.abs() * k;
            let mut next = vec![0.0f64; dist.len() + 2 * reach as usize];
            for (i, &p) in dist.iter().enumerate() {
                if p == 0.0 {
                    continue;
                }
                for (j, &q) in pmf.iter().enumerate() {
                    let at = i as i64 + s * (j as i64 - k) + reach;
                    next[at as usize] += p * q;
                }
            }
            off += reach;
            dist = next;
        }
        let norm2: i64 = shifts.iter().map(|s| s * s).sum();
        let atoms = dist
            .into_iter()
            .enumerate()
            .filter(|&(_, p)| p > 0.0)
            .map(|(i, p)| {
                let s = i as i64 - off;
                ((norm2 - 2 * s) as f64 / (2.0 * sigma_squared), p)
            })
            .collect();
        Ok(DiscreteGaussianProfile { atoms })
    }

    /// The profile of this composed with a pure `epsilon0`-DP step (through the
    /// randomized response with `epsilon0` that dominates it).
    pub fn with_pure_step(&self, epsilon0: f64) -> Self {
        let keep = 1.0 / (1.0 + (-epsilon0).exp());
        let atoms = self
            .atoms
            .iter()
            .flat_map(|&(l, p)| [(l + epsilon0, p * keep), (l - epsilon0, p * (1.0 - keep))])
            .collect();
        DiscreteGaussianProfile { atoms }
    }

    /// The profile of this and `other` composed (independent mechanisms, or
    /// measurements at different σ²): the privacy losses add, so the atoms are
    /// the pairwise sums, with the products of their probabilities.
    pub fn compose(&self, other: &Self) -> Self {
        let atoms = self
            .atoms
            .iter()
            .flat_map(|&(l, p)| other.atoms.iter().map(move |&(m, q)| (l + m, p * q)))
            .filter(|&(_, p)| p > 0.0)
            .collect();
        DiscreteGaussianProfile { atoms }
    }

    /// `δ(ε) = E[(1 − e^{ε − L})₊]`: the smallest δ for which the measurements are
    /// (ε, δ)-DP (up to the f64 evaluation of the sum).
    pub fn delta(&self, epsilon: f64) -> f64 {
        self.atoms
            .iter()
            .filter(|&&(l, _)| l > epsilon)
            .map(|&(l, p)| -p * (epsilon - l).exp_m1())
            .sum()
    }

    /// The smallest ε with `δ(ε) ≤ delta`, by bisection on the decreasing δ(ε),
    /// returned from the upper end of the bracket and raised by 10⁻⁹ (so never
    /// below the exact value by more than the sums' rounding). Refuses δ outside
    /// (0, 1).
    pub fn epsilon(&self, delta: f64) -> Result<f64, AuditError> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(AuditError::InvalidCase(format!(
                "delta = {delta} is not in (0, 1)"
            )));
        }
        if self.delta(0.0) <= delta {
            return Ok(0.0);
        }
        let mut hi = 1.0;
        while self.delta(hi) > delta {
            hi *= 2.0;
            if hi > 1e6 {
                return Err(AuditError::InvalidCase(format!(
                    "no epsilon below 1e6 reaches delta = {delta}"
                )));
            }
        }
        let mut lo = 0.0;
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if self.delta(mid) > delta {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(hi + 1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::zcdp_epsilon;

    /// CKS20 Thm. 7 for one coordinate, from the tails of `N_ℤ(0, σ²)`.
    fn theorem_7(sigma_squared: f64, sens: i64, eps: f64) -> f64 {
        let (k, pmf) = discrete_gaussian_pmf(sigma_squared);
        let tail = |t: f64| -> f64 {
            (-k..=k)
                .zip(&pmf)
                .filter(|&(y, _)| y as f64 > t)
                .map(|(_, p)| p)
                .sum()
        };
        let d = sens as f64;
        tail(eps * sigma_squared / d - d / 2.0)
            - eps.exp() * tail(eps * sigma_squared / d + d / 2.0)
    }

    #[test]
    fn one_coordinate_matches_theorem_7() {
        for (s2, sens) in [(2.0, 1), (4.0, 1), (0.5, 1), (9.0, 2), (30.0, 3)] {
            let p = DiscreteGaussianProfile::new(s2, &[sens]).unwrap();
            for eps in [0.0, 0.1, 0.37, 1.0, 2.5, 4.0] {
                let (a, b) = (p.delta(eps), theorem_7(s2, sens, eps));
                assert!(
                    (a - b).abs() < 1e-14 + 1e-10 * b,
                    "{s2} {sens} {eps}: {a} {b}"
                );
            }
        }
    }

    #[test]
    fn at_large_sigma_it_is_the_continuous_gaussian() {
        // μ = Δ/σ = 1, ε = 1: Φ(−1/2) − e·Φ(−3/2) = 0.3085375 − 2.7182818·0.0668072
        // = 0.1269377 (Balle & Wang 2018, Thm. 8). δ(ε) = E[(1 − e^{ε−L})₊] is a
        // continuous function of the loss, so the lattice sum is close to the
        // integral.
        let p = DiscreteGaussianProfile::new(1e6, &[1000]).unwrap();
        let d = p.delta(1.0);
        assert!((d - 0.126_937_7).abs() < 1e-5, "{d}");
        // Two coordinates shifted by 100 each at σ² = 2·10⁴ are again μ = 1.
        let q = DiscreteGaussianProfile::new(2e4, &[100, -100]).unwrap();
        assert!(
            (q.delta(1.0) - 0.126_937_7).abs() < 1e-4,
            "{}",
            q.delta(1.0)
        );
    }

    #[test]
    fn composing_is_measuring_together() {
        // Two measurements at the same σ², composed, are the two-coordinate
        // profile; composing with a pure step commutes.
        let one = DiscreteGaussianProfile::new(2.0, &[1]).unwrap();
        let two = DiscreteGaussianProfile::new(2.0, &[1, 1]).unwrap();
        let composed = one.compose(&one);
        for eps in [0.0, 0.5, 1.0, 2.0] {
            let (a, b) = (composed.delta(eps), two.delta(eps));
            assert!((a - b).abs() < 1e-12, "{eps}: {a} {b}");
        }
        let wider = DiscreteGaussianProfile::new(5.0, &[1]).unwrap();
        let (x, y) = (
            one.compose(&wider).with_pure_step(0.3),
            one.with_pure_step(0.3).compose(&wider),
        );
        for eps in [0.0, 0.7, 1.5] {
            assert!((x.delta(eps) - y.delta(eps)).abs() < 1e-12);
        }
        // More loss than either part alone.
        assert!(x.epsilon(1e-3).unwrap() > one.epsilon(1e-3).unwrap());
    }

    #[test]
    fn delta_and_epsilon_are_monotone_and_inverse() {
        let p = DiscreteGaussianProfile::new(2.0, &[1, -1]).unwrap();
        let mut last = p.delta(0.0);
        // δ(0) is the total variation distance, below 1.
        assert!(last > 0.0 && last < 1.0);
        for i in 1..60 {
            let d = p.delta(f64::from(i) * 0.1);
            assert!(d <= last && d >= 0.0);
            last = d;
        }
        let mut last_eps = f64::INFINITY;
        for delta in [1e-9, 1e-6, 1e-3, 1e-2, 0.1] {
            let e = p.epsilon(delta).unwrap();
            assert!(e < last_eps);
            assert!(p.delta(e) <= delta && p.delta(e - 1e-6) > delta);
            last_eps = e;
        }
        // More noise, less loss.
        let wider = DiscreteGaussianProfile::new(8.0, &[1, -1]).unwrap();
        assert!(wider.epsilon(1e-3).unwrap() < p.epsilon(1e-3).unwrap());
        assert!(p.epsilon(0.0).is_err() && p.epsilon(1.0).is_err());
        assert!(DiscreteGaussianProfile::new(2.0, &[0, 0]).is_err());
        assert!(DiscreteGaussianProfile::new(0.0, &[1]).is_err());
    }

    #[test]
    fn it_is_tighter_than_the_zcdp_conversion_and_below_it_never() {
        // σ² = Δ₂²/(2ρ): the histogram cases' parameters.
        for (s2, shifts, rho) in [
            (2.0, &[1i64, -1][..], 0.5),
            (4.0, &[1][..], 0.125),
            (1.0, &[2][..], 2.0),
        ] {
            let exact = DiscreteGaussianProfile::new(s2, shifts)
                .unwrap()
                .epsilon(1e-3)
                .unwrap();
            let cks = zcdp_epsilon(rho, 1e-3).unwrap();
            assert!(exact < cks, "{s2} {shifts:?}: {exact} vs {cks}");
        }
        // ρ = 1/2 on two coordinates at δ = 10⁻³: the exact profile's ε against
        // CKS20 Cor. 13's 3.537.
        let e = DiscreteGaussianProfile::new(2.0, &[1, -1])
            .unwrap()
            .epsilon(1e-3)
            .unwrap();
        assert!((e - 3.128).abs() < 0.005, "{e}");
    }

    #[test]
    fn a_pure_step_composes_as_randomized_response() {
        // A Gaussian too wide to matter (σ² = 10⁸, Δ = 1) composed with RR(ε₀):
        // δ(ε₀) ≈ 0 and δ(0) ≈ (e^{ε₀} − 1)/(e^{ε₀} + 1), the RR's TV distance.
        let e0 = 0.7f64;
        let p = DiscreteGaussianProfile::new(1e8, &[1])
            .unwrap()
            .with_pure_step(e0);
        assert!(p.delta(e0 + 1e-3) < 1e-6);
        let tv = (e0.exp() - 1.0) / (e0.exp() + 1.0);
        assert!((p.delta(0.0) - tv).abs() < 1e-3, "{}", p.delta(0.0));
        // Composing only adds loss.
        let g = DiscreteGaussianProfile::new(2.0, &[1]).unwrap();
        assert!(g.with_pure_step(0.3).epsilon(1e-3).unwrap() > g.epsilon(1e-3).unwrap());
    }
}
