use rand_core::Rng;

use super::IntegerNoise;
use super::bernoulli::{bernoulli_exp, bernoulli_exp_wide};
use super::laplace::DiscreteLaplace;
use super::wide::{U256, div_rem, gcd128, mul};
use crate::epsilon::gcd;
use crate::error::{Error, Result};
use crate::rho::Rho;

/// The variance parameter σ² > 0 of a discrete Gaussian, as an exact reduced fraction
/// `num/den`.
///
/// ```
/// use privq_core::sample::SigmaSquared;
/// let s = SigmaSquared::new(9, 4)?; // σ = 3/2
/// assert_eq!((s.num(), s.den()), (9, 4));
/// assert_eq!(SigmaSquared::new(0, 1).unwrap_err(), privq_core::Error::ScaleZero);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SigmaSquared {
    num: u64,
    den: u64,
}

impl SigmaSquared {
    /// σ² = `num/den`; errors on a zero denominator ([`Error::ZeroDenominator`]) or a
    /// zero σ² ([`Error::ScaleZero`]).
    pub fn new(num: u64, den: u64) -> Result<Self> {
        if den == 0 {
            return Err(Error::ZeroDenominator);
        }
        if num == 0 {
            return Err(Error::ScaleZero);
        }
        let g = gcd(num, den);
        Ok(SigmaSquared {
            num: num / g,
            den: den / g,
        })
    }

    /// Numerator of the reduced fraction.
    pub const fn num(&self) -> u64 {
        self.num
    }

    /// Denominator of the reduced fraction.
    pub const fn den(&self) -> u64 {
        self.den
    }

    /// The nearest `f64`, for error bars and reports only.
    pub fn to_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// `⌊σ⌋`, exactly: the largest `k` with `k² ≤ num/den`, i.e. `isqrt(⌊num/den⌋)`.
    pub fn floor_sigma(&self) -> u64 {
        (self.num / self.den).isqrt()
    }
}

/// The discrete Gaussian `N_ℤ(0, σ²)`: `P[X = x] ∝ exp(−x²/(2σ²))` on the integers, for
/// an exact rational σ², sampled exactly (Canonne–Kamath–Steinke 2020, Algorithm 3).
///
/// Each round draws `Y` discrete Laplace with scale `t = ⌊σ⌋ + 1` and accepts it with
/// probability `exp(−(|Y| − σ²/t)²/(2σ²))` (CKS20 §5.3); the exponent is the exact
/// rational `(|Y|·d·t − n)² / (2·n·d·t²)` for σ² = n/d, decided by the exact
/// Bernoulli(e^{−γ}) of CKS20 Algorithm 1 — no floating point anywhere. Adding it to an
/// integer query of ℓ2 sensitivity Δ is ρ-zCDP with ρ = Δ²/(2σ²) (CKS20 Thm. 14).
///
/// Parameters are limited so that every intermediate value fits 128 bits for every
/// `Y` the Laplace sampler can return: `d·t < 2⁶⁴` and `2·n·d·t² < 2¹²⁸` (with
/// `d = 1` this allows σ up to about 2³¹); larger ones are refused with
/// [`Error::Overflow`] at construction, never during sampling.
///
/// ```
/// use privq_core::{Rho, sample::{DiscreteGaussian, SigmaSquared}};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
///
/// let mut rng = ChaCha12::from_seed([7; 32]); // tests only: a device seeds from its TRNG
/// let noise = DiscreteGaussian::new(SigmaSquared::new(9, 1)?)?; // σ = 3
/// assert_eq!(noise.laplace_scale(), 4); // t = ⌊σ⌋ + 1
/// let noisy_count = 130 + noise.sample(&mut rng)?;
/// # let _ = noisy_count;
/// // A count (Δ = 1) at ρ = 1/2 needs σ² = Δ²/(2ρ) = 1.
/// let unit = DiscreteGaussian::for_sensitivity(1, Rho::new(1, 2)?)?;
/// assert_eq!(unit.sigma_squared(), SigmaSquared::new(1, 1)?);
/// assert_eq!(unit.rho_for(1)?, Rho::new(1, 2)?);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DiscreteGaussian {
    sigma2: SigmaSquared,
    /// Discrete Laplace of scale `t = ⌊σ⌋ + 1`.
    laplace: DiscreteLaplace,
    /// `d·t`.
    dt: u64,
    /// `2·n·d·t²`, the denominator of the acceptance exponent.
    exp_den: u128,
}

impl DiscreteGaussian {
    /// The discrete Gaussian with variance parameter σ². Errors with
    /// [`Error::Overflow`] outside the supported range (see the type docs).
    pub fn new(sigma2: SigmaSquared) -> Result<Self> {
        let (n, d) = (sigma2.num, sigma2.den);
        // n/d < 2⁶⁴, so ⌊σ⌋ < 2³² and t ≤ 2³².
        let t = sigma2.floor_sigma() + 1;
        let laplace = DiscreteLaplace::new(t, 1)?;
        let dt = d.checked_mul(t).ok_or(Error::Overflow)?;
        let exp_den = (2 * u128::from(n))
            .checked_mul(u128::from(t))
            .and_then(|x| x.checked_mul(u128::from(dt)))
            .ok_or(Error::Overflow)?;
        Ok(DiscreteGaussian {
            sigma2,
            laplace,
            dt,
            exp_den,
        })
    }

    /// The discrete Gaussian for an integer query of ℓ2 sensitivity Δ at ρ-zCDP:
    /// σ² = Δ²/(2ρ) (CKS20 Thm. 14). σ² is exact when the sampler supports it;
    /// otherwise it is rounded **up** to the finest multiple of 2⁻ᵏ (k ≤ 62) it
    /// supports — more noise, so the release is still ρ-zCDP (σ² ≥ Δ²/(2ρ) exactly).
    pub fn for_sensitivity(sensitivity: u64, rho: Rho) -> Result<Self> {
        if sensitivity == 0 {
            return Err(Error::SensitivityNotPositive);
        }
        Self::for_squared(u128::from(sensitivity) * u128::from(sensitivity), rho)
    }

    /// As [`for_sensitivity`](Self::for_sensitivity) for a vector query given its
    /// squared ℓ2 sensitivity Δ₂² (an integer even when Δ₂ is not, e.g. Δ₂² = 2 for a
    /// histogram under replace-one neighbours): σ² = Δ₂²/(2ρ), noise added to each
    /// coordinate independently (CKS20 Thm. 15).
    pub fn for_l2_squared(l2_squared: u64, rho: Rho) -> Result<Self> {
        if l2_squared == 0 {
            return Err(Error::SensitivityNotPositive);
        }
        Self::for_squared(u128::from(l2_squared), rho)
    }

    /// σ² = `s2`/(2ρ), exact or rounded up (see [`for_sensitivity`](Self::for_sensitivity)).
    fn for_squared(s2: u128, rho: Rho) -> Result<Self> {
        // σ² = N/M with N = Δ²·ρ_den < 2¹⁹², M = 2·ρ_num < 2⁶⁵.
        let big_n = mul(s2, u128::from(rho.den()));
        let m = 2 * u128::from(rho.num());
        let (_, n_mod_m) = div_rem(big_n, m).ok_or(Error::ZeroDenominator)?;
        let g = gcd128(n_mod_m, m);
        let (reduced, _) = div_rem(big_n, g).ok_or(Error::ZeroDenominator)?;
        let m = m / g;
        if let (0, Ok(num), Ok(den)) = (reduced.hi, u64::try_from(reduced.lo), u64::try_from(m)) {
            match SigmaSquared::new(num, den).and_then(Self::new) {
                Err(Error::Overflow) => {}
                other => return other,
            }
        }
        for k in (0..=62u32).rev() {
            let (q, r) = div_rem(shl(reduced, k), m).ok_or(Error::ZeroDenominator)?;
            let up = if r == 0 { q } else { q.add_u128(1) };
            let Ok(num) = u64::try_from(up.lo) else {
                continue;
            };
            if up.hi != 0 {
                continue;
            }
            match SigmaSquared::new(num, 1 << k).and_then(Self::new) {
                Err(Error::Overflow) => {}
                other => return other,
            }
        }
        Err(Error::Overflow)
    }

    /// The variance parameter σ².
    pub const fn sigma_squared(&self) -> SigmaSquared {
        self.sigma2
    }

    /// The scale `t = ⌊σ⌋ + 1` of the discrete Laplace proposals.
    pub const fn laplace_scale(&self) -> u64 {
        self.laplace.scale_num()
    }

    /// ρ = Δ²/(2σ²) of adding this noise to a query of ℓ2 sensitivity `sensitivity`
    /// (CKS20 Thm. 14): exact when it fits a 64-bit fraction, else rounded up.
    pub fn rho_for(&self, sensitivity: u64) -> Result<Rho> {
        if sensitivity == 0 {
            return Err(Error::SensitivityNotPositive);
        }
        let s2 = u128::from(sensitivity) * u128::from(sensitivity);
        // Δ²·d/(2n): reduce by gcd(Δ², 2n) first so the product stays in u128.
        let two_n = 2 * u128::from(self.sigma2.num);
        let g = gcd128(s2, two_n);
        let num = (s2 / g)
            .checked_mul(u128::from(self.sigma2.den))
            .ok_or(Error::Overflow)?;
        Rho::from_ratio_ceil(num, two_n / g)
    }

    /// Draws one value, exactly from `N_ℤ(0, σ²)`.
    ///
    /// Each round accepts with probability about 0.76 for large σ (so ≈ 1.3 rounds)
    /// and above 0.45 for every σ (computed from the acceptance probability
    /// `Σ_y P[Y = y]·exp(−(|y| − σ²/t)²/(2σ²))`). Errors only when a Laplace proposal
    /// would not fit `i64` ([`Error::Overflow`], probability below `e^{−2⁶³/t}`).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i64> {
        let n = u128::from(self.sigma2.num);
        loop {
            let y = self.laplace.sample(rng)?;
            // |y| ≤ 2⁶³ and d·t < 2⁶⁴: the product fits u128.
            let c = (u128::from(y.unsigned_abs()) * u128::from(self.dt)).abs_diff(n);
            if self.accept(c, rng)? {
                return Ok(y);
            }
        }
    }

    /// Bernoulli(exp(−c²/B)) with `B = 2·n·d·t²`: the 64-bit sampler when `c²` and `B`
    /// fit `u64`, else the exponent split into whole and fractional parts in 128/256 bits.
    #[inline]
    fn accept<R: Rng + ?Sized>(&self, c: u128, rng: &mut R) -> Result<bool> {
        let b = self.exp_den;
        if let (Ok(c), Ok(b)) = (u32::try_from(c), u64::try_from(b)) {
            let c = u64::from(c);
            return bernoulli_exp(c * c, b, rng);
        }
        let (whole, rem) = match u64::try_from(c) {
            Ok(c) => {
                let c2 = u128::from(c) * u128::from(c);
                let whole = c2.checked_div(b).ok_or(Error::ZeroDenominator)?;
                let rem = c2.checked_rem(b).ok_or(Error::ZeroDenominator)?;
                (U256 { hi: 0, lo: whole }, rem)
            }
            Err(_) => div_rem(mul(c, c), b).ok_or(Error::ZeroDenominator)?,
        };
        bernoulli_exp_wide(whole, rem, b, rng)
    }

    /// The variance `Σ x²·P[X = x]` (floating point; for error bars only). It is below
    /// σ² and within a factor `1 − 4π²σ²/(e^{4π²σ²} − 1)` of it (CKS20 §2.4), so for
    /// σ² ≥ 4 it equals σ² in `f64`; smaller σ² are summed over the pmf.
    pub fn variance(&self) -> f64 {
        let s2 = self.sigma2.to_f64();
        if s2 >= 4.0 {
            return s2;
        }
        let (mut mass, mut second) = (1.0, 0.0);
        for k in 1..=64i32 {
            let w = libm::exp(-f64::from(k * k) / (2.0 * s2));
            mass += 2.0 * w;
            second += 2.0 * w * f64::from(k * k);
        }
        second / mass
    }
}

impl IntegerNoise for DiscreteGaussian {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i64> {
        DiscreteGaussian::sample(self, rng)
    }

    fn delta_log2(&self) -> Option<i32> {
        None
    }
}

/// `x · 2^k` for `k < 128` (bits shifted out of 256 are dropped; callers keep `x` small).
fn shl(x: U256, k: u32) -> U256 {
    if k == 0 {
        return x;
    }
    U256 {
        hi: (x.hi << k) | (x.lo >> (128 - k)),
        lo: x.lo << k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn constructors_validate() {
        assert_eq!(SigmaSquared::new(0, 1), Err(Error::ScaleZero));
        assert_eq!(SigmaSquared::new(1, 0), Err(Error::ZeroDenominator));
        let s = SigmaSquared::new(10, 4).unwrap();
        assert_eq!((s.num(), s.den()), (5, 2));
        assert_eq!(s.floor_sigma(), 1); // √2.5 ≈ 1.58
        assert_eq!(SigmaSquared::new(9, 1).unwrap().floor_sigma(), 3);
        assert_eq!(SigmaSquared::new(899_999, 100).unwrap().floor_sigma(), 94);
        assert_eq!(SigmaSquared::new(1, 4).unwrap().floor_sigma(), 0);
        // σ² = 2⁶⁴ − 1: 2·n·d·t² ≈ 2¹²⁹ does not fit.
        assert_eq!(
            DiscreteGaussian::new(SigmaSquared::new(u64::MAX, 1).unwrap()),
            Err(Error::Overflow)
        );
        // σ² ≈ 2 with d = 2⁶³: t = 2 and d·t = 2⁶⁴.
        assert_eq!(
            DiscreteGaussian::new(SigmaSquared::new(u64::MAX, 1 << 63).unwrap()),
            Err(Error::Overflow)
        );
        let rho = Rho::new(1, 2).unwrap();
        assert_eq!(
            DiscreteGaussian::for_sensitivity(0, rho),
            Err(Error::SensitivityNotPositive)
        );
        assert_eq!(
            DiscreteGaussian::for_l2_squared(0, rho),
            Err(Error::SensitivityNotPositive)
        );
        // Δ₂² = 2 at ρ = 1/2: σ² = 2.
        let g = DiscreteGaussian::for_l2_squared(2, rho).unwrap();
        assert_eq!(g.sigma_squared(), SigmaSquared::new(2, 1).unwrap());
        let g = DiscreteGaussian::new(SigmaSquared::new(1, 1).unwrap()).unwrap();
        assert_eq!(g.rho_for(0), Err(Error::SensitivityNotPositive));
    }

    #[test]
    fn sensitivity_and_rho_round_trip() {
        let rho = |n, d| Rho::new(n, d).unwrap();
        let g = DiscreteGaussian::for_sensitivity(3, rho(1, 8)).unwrap();
        assert_eq!(g.sigma_squared(), SigmaSquared::new(36, 1).unwrap());
        assert_eq!(g.laplace_scale(), 7);
        assert_eq!(g.rho_for(3).unwrap(), rho(1, 8));
        assert_eq!(g.rho_for(6).unwrap(), rho(1, 2));
        // ρ from an f64 (denominator 2⁵⁵…): σ² = Δ²/(2ρ) is not supported exactly
        // and is rounded up; the resulting ρ′ never exceeds the request.
        let r = Rho::from_f64(0.0123).unwrap();
        let g = DiscreteGaussian::for_sensitivity(1, r).unwrap();
        assert!(g.rho_for(1).unwrap() <= r);
        let rel = g.rho_for(1).unwrap().to_f64() / r.to_f64();
        assert!(rel > 1.0 - 1e-9, "{rel}");
    }

    #[test]
    fn wide_and_narrow_acceptance_agree() {
        // σ² = 2⁴⁰/3 has B = 2·n·d·t² ≈ 2⁸¹ ≥ 2⁶⁴: exp(−c²/B) for c = 2⁴⁰ + 1 takes the
        // 128-bit path (c² ≥ 2⁶⁴), with probability ≈ e^{−1/2}.
        let g = DiscreteGaussian::new(SigmaSquared::new(1 << 40, 3).unwrap()).unwrap();
        assert!(g.exp_den > u128::from(u64::MAX));
        let mut rng = ChaCha12Rng::seed_from_u64(11);
        let c = (1u128 << 40) + 1;
        let n = 50_000;
        let hits = (0..n).filter(|_| g.accept(c, &mut rng).unwrap()).count();
        let p = (-((c * c) as f64) / g.exp_den as f64).exp();
        let want = n as f64 * p;
        let tol = 5.0 * (want * (1.0 - p)).sqrt();
        assert!((hits as f64 - want).abs() < tol, "{hits} vs {want}");
        // c ≥ 2⁶⁴ goes through 256-bit division; its probability is ~0 here.
        assert!(!g.accept(1 << 100, &mut rng).unwrap());
    }

    #[test]
    fn variance_is_below_sigma_squared_and_matches_for_large_sigma() {
        let v = |n, d| {
            DiscreteGaussian::new(SigmaSquared::new(n, d).unwrap())
                .unwrap()
                .variance()
        };
        assert_eq!(v(9, 1), 9.0);
        // σ² = 1/4: Σ k² e^{−2k²} / Σ e^{−2k²} = 0.21501… (terms k ≤ 2 suffice to 10⁻⁶).
        let small = v(1, 4);
        let e = |x: f64| x.exp();
        let by_hand = 2.0 * (e(-2.0) + 4.0 * e(-8.0)) / (1.0 + 2.0 * (e(-2.0) + e(-8.0)));
        assert!(
            small < 0.25 && (small - by_hand).abs() < 1e-6,
            "{small} vs {by_hand}"
        );
        assert!((v(1, 1) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn samples_are_symmetric_with_variance_sigma_squared() {
        let g = DiscreteGaussian::new(SigmaSquared::new(25, 1).unwrap()).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(3);
        let n = 100_000;
        let (mut s, mut s2) = (0f64, 0f64);
        for _ in 0..n {
            let x = g.sample(&mut rng).unwrap() as f64;
            s += x;
            s2 += x * x;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        assert!(mean.abs() < 0.1, "{mean}");
        assert!((var / 25.0 - 1.0).abs() < 0.03, "{var}");
    }
}
