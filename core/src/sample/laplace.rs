use rand_core::Rng;

use super::IntegerNoise;
use super::bernoulli::{
    FACTORIAL, bernoulli_exp_minus_one, bernoulli_exp_minus_one_from, bernoulli_exp_unit,
};
use super::uniform::uniform_below;
use crate::epsilon::{Epsilon, gcd};
use crate::error::{Error, Result};

/// The discrete Laplace distribution `P[k] ∝ exp(−|k|/t)` on the integers, with an
/// exact rational scale `t = num/den`, sampled exactly
/// (Canonne–Kamath–Steinke 2020, Algorithm 2).
///
/// Its variance is `2e^{−1/t}/(1−e^{−1/t})²`; adding it to an integer query of
/// sensitivity Δ with `t = Δ/ε` gives ε-differential privacy.
///
/// ```
/// use privq_core::{Epsilon, sample::DiscreteLaplace};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
///
/// let mut rng = ChaCha12::from_seed([42; 32]); // tests only: a device seeds from its TRNG
/// // A count with sensitivity 1 released at ε = 1/2: scale 2.
/// let noise = DiscreteLaplace::for_sensitivity(1, Epsilon::new(1, 2)?)?;
/// assert_eq!((noise.scale_num(), noise.scale_den()), (2, 1));
/// let noisy_count = 130 + noise.sample(&mut rng)?;
/// # let _ = noisy_count;
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DiscreteLaplace {
    num: u64,
    den: u64,
}

impl DiscreteLaplace {
    /// Scale `t = num/den`; errors when it is zero or has a zero denominator.
    pub fn new(num: u64, den: u64) -> Result<Self> {
        if den == 0 {
            return Err(Error::ZeroDenominator);
        }
        if num == 0 {
            return Err(Error::ScaleZero);
        }
        let g = gcd(num, den);
        Ok(DiscreteLaplace {
            num: num / g,
            den: den / g,
        })
    }

    /// Scale `Δ/ε` for an integer-valued query with sensitivity `Δ`.
    pub fn for_sensitivity(sensitivity: u64, epsilon: Epsilon) -> Result<Self> {
        if sensitivity == 0 {
            return Err(Error::SensitivityNotPositive);
        }
        let num = u128::from(sensitivity) * u128::from(epsilon.den());
        let den = u128::from(epsilon.num());
        let g = u128::from(gcd(sensitivity, epsilon.num()));
        let num = u64::try_from(num / g).map_err(|_| Error::Overflow)?;
        let den = u64::try_from(den / g).map_err(|_| Error::Overflow)?;
        Self::new(num, den)
    }

    /// Numerator of the scale `t`.
    pub const fn scale_num(&self) -> u64 {
        self.num
    }

    /// Denominator of the scale `t`.
    pub const fn scale_den(&self) -> u64 {
        self.den
    }

    /// Draws one value, exactly from the distribution.
    ///
    /// Expected work is constant in the scale; errors only with
    /// [`Error::Overflow`] when a value would not fit in `i64`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i64> {
        // CKS20 Algorithm 2 with t = num, s = den: X = U + t·V has P[X = x] ∝ exp(−x/t),
        // and Y = ⌊X/s⌋ is geometric with P[Y ≥ y] = exp(−y·s/t).
        let t = self.num;
        let s = u128::from(self.den);
        loop {
            let u = uniform_below(t, rng)?;
            if !bernoulli_exp_unit(u, t, rng)? {
                continue;
            }
            // V: the number of successes of Bernoulli(e⁻¹) before the first failure. The
            // first trial's uniform draw also supplies the sign: W uniform in [0, 2·8!)
            // splits into an independent fair bit and a uniform draw in [0, 8!).
            let w = uniform_below(2 * u64::from(FACTORIAL), rng)?;
            let negative = w & 1 == 1;
            let mut success = bernoulli_exp_minus_one_from((w >> 1) as u32, rng)?;
            let mut v: u64 = 0;
            while success {
                v = v.checked_add(1).ok_or(Error::Overflow)?;
                success = bernoulli_exp_minus_one(rng)?;
            }
            let x = u128::from(u) + u128::from(t) * u128::from(v);
            // ⌊x/s⌋, without a 128-bit division in the common cases.
            let y = match u64::try_from(x) {
                Ok(x) if self.den == 1 => u128::from(x),
                Ok(x) => u128::from(x / self.den),
                Err(_) => x / s,
            };
            if negative && y == 0 {
                continue;
            }
            let y = i64::try_from(y).map_err(|_| Error::Overflow)?;
            return Ok(if negative { -y } else { y });
        }
    }

    /// The variance `2e^{−1/t}/(1−e^{−1/t})²` (floating point; for error bars only).
    pub fn variance(&self) -> f64 {
        let q = libm::exp(-(self.den as f64) / (self.num as f64));
        2.0 * q / ((1.0 - q) * (1.0 - q))
    }
}

impl IntegerNoise for DiscreteLaplace {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i64> {
        DiscreteLaplace::sample(self, rng)
    }

    fn delta_log2(&self) -> Option<i32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn constructor_validates() {
        assert_eq!(DiscreteLaplace::new(0, 1), Err(Error::ScaleZero));
        assert_eq!(DiscreteLaplace::new(1, 0), Err(Error::ZeroDenominator));
        let eps = Epsilon::new(1, 3).unwrap();
        assert_eq!(
            DiscreteLaplace::for_sensitivity(0, eps),
            Err(Error::SensitivityNotPositive)
        );
        let d = DiscreteLaplace::for_sensitivity(4, Epsilon::new(2, 3).unwrap()).unwrap();
        assert_eq!((d.scale_num(), d.scale_den()), (6, 1));
        assert_eq!(
            DiscreteLaplace::for_sensitivity(u64::MAX, Epsilon::new(1, u64::MAX).unwrap()),
            Err(Error::Overflow)
        );
    }

    #[test]
    fn mean_near_zero_and_variance_matches() {
        let mut rng = ChaCha12Rng::seed_from_u64(9);
        let d = DiscreteLaplace::new(5, 2).unwrap();
        let n = 200_000;
        let (mut s, mut s2) = (0f64, 0f64);
        for _ in 0..n {
            let x = d.sample(&mut rng).unwrap() as f64;
            s += x;
            s2 += x * x;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!(
            (var / d.variance() - 1.0).abs() < 0.03,
            "var {var} vs {}",
            d.variance()
        );
    }
}
