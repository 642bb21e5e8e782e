use rand_core::Rng;

use super::IntegerNoise;
use super::wide::{ONE, U256, exp_neg, mul};
use crate::epsilon::gcd;
use crate::error::{Error, Result};

/// Most bits a geometric magnitude may have (so differences fit in `i64`).
const MAX_BITS: usize = 62;

/// `log2` of the δ this sampler is guaranteed to stay under.
const DELTA_LOG2: i32 = -64;

/// Discrete Laplace `P[k] ∝ exp(−|k|/t)` with a **fixed amount of work per sample**.
///
/// The exact sampler ([`DiscreteLaplace`](super::DiscreteLaplace)) runs rejection
/// loops whose length correlates with the value it returns, which leaks that value
/// through timing. This sampler always does the same operations in the same order:
///
/// * a discrete Laplace value is the difference `G₁ − G₂` of two independent geometric
///   variables with `P[G ≥ g] = q^g`, `q = e^{−1/t}`;
/// * the binary digits of a geometric variable are independent: digit `j` is 1 with
///   probability `q^{2^j}/(1+q^{2^j})`; so each `G` is `J` independent biased bits,
///   `J` fixed by the scale (`2^J ≥ 47t`, so `P[G ≥ 2^J] ≤ 2⁻⁶⁷`);
/// * each bit compares a uniform 128-bit number `u` with the threshold, whose exact
///   value is bracketed in 126-bit fixed point (integer arithmetic at construction).
///   When `[u, u+1)·2⁻¹²⁸` straddles the bracket the bit is undecided and the sample
///   fails with [`Error::IterationBudgetExhausted`] — after the same work as always.
///
/// A returned value equals an exact draw except with probability δ ≤ 2⁻⁶⁴ (truncation
/// plus undecided bits, checked at construction); a mechanism using it is
/// (ε, δ)-differentially private with that δ, reported by [`delta_log2`](Self::delta_log2).
///
/// ```
/// use privq_core::sample::BoundedDiscreteLaplace;
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let noise = BoundedDiscreteLaplace::new(10, 1)?; // scale t = 10
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let x = noise.sample(&mut rng)?;
/// assert_eq!(noise.delta_log2(), -64);
/// assert_eq!(noise.bits(), 9); // 2^9 = 512 ≥ 47·10
/// # let _ = x;
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BoundedDiscreteLaplace {
    num: u64,
    den: u64,
    bits: usize,
    /// Per digit j: bounds on r_j = q^{2^j} in Q126, so the digit is 1 w.p. r_j/(1+r_j).
    lo: [u128; MAX_BITS],
    hi: [u128; MAX_BITS],
}

impl BoundedDiscreteLaplace {
    /// Scale `t = num/den`. Errors on a zero scale or denominator, and with
    /// [`Error::Overflow`] when `t` is so large that samples could exceed 62 bits.
    pub fn new(num: u64, den: u64) -> Result<Self> {
        if den == 0 {
            return Err(Error::ZeroDenominator);
        }
        if num == 0 {
            return Err(Error::ScaleZero);
        }
        let g = gcd(num, den);
        let (num, den) = (num / g, den / g);
        // Smallest J with 2^J·den ≥ 47·num, so q^{2^J} = e^{−2^J/t} ≤ e^{−47} < 2⁻⁶⁷.
        let target = 47 * u128::from(num);
        let mut bits = 1usize;
        while (u128::from(den) << bits) < target {
            bits += 1;
            if bits > MAX_BITS {
                return Err(Error::Overflow);
            }
        }
        // Filled in place: the tables are 2 KB, and a copy of them on a 16 KiB part's stack
        // (built in locals, then moved into the value and its `Result`) overflowed the
        // on-target suite on Cortex-M0 once the compiler inlined the constructor.
        let mut out = BoundedDiscreteLaplace {
            num,
            den,
            bits,
            lo: [0u128; MAX_BITS],
            hi: [0u128; MAX_BITS],
        };
        let mut undecided_units: u128 = 0;
        for (j, (l, h)) in out
            .lo
            .iter_mut()
            .zip(out.hi.iter_mut())
            .take(bits)
            .enumerate()
        {
            // r_j = exp(−2^j · den / num).
            let (a, b) = (u128::from(den) << j, num);
            (*l, *h) = exp_neg(a, b);
            // An undecided bit needs u in a window of (h − l)/ONE·2¹²⁸ + 1 values.
            undecided_units += (*h - *l) * 4 + 2;
        }
        // Two geometrics: truncation ≤ 2·2⁻⁶⁷; undecided ≤ 2·units·2⁻¹²⁸. Require the sum
        // below 2⁻⁶⁴ (units ≤ 2⁶² suffices by a wide margin; in practice units < 2⁹).
        if undecided_units > (1u128 << 62) {
            return Err(Error::Overflow);
        }
        Ok(out)
    }

    /// Numerator of the scale `t`.
    pub const fn scale_num(&self) -> u64 {
        self.num
    }

    /// Denominator of the scale `t`.
    pub const fn scale_den(&self) -> u64 {
        self.den
    }

    /// Binary digits per geometric magnitude (the fixed work is `2·bits` digit draws).
    pub const fn bits(&self) -> usize {
        self.bits
    }

    /// `log2` of the bound on δ: always `-64`.
    pub const fn delta_log2(&self) -> i32 {
        DELTA_LOG2
    }

    /// Draws one value with input-independent work: `4·bits` 64-bit random words and the
    /// same arithmetic every time. Fails (rarely; see the type docs) with
    /// [`Error::IterationBudgetExhausted`].
    #[inline(never)]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i64> {
        let (g1, f1) = self.geometric(rng);
        let (g2, f2) = self.geometric(rng);
        if f1 | f2 {
            return Err(Error::IterationBudgetExhausted);
        }
        // Both are below 2^62: the difference fits.
        Ok(g1 as i64 - g2 as i64)
    }

    /// One geometric magnitude and its "undecided" flag, digit by digit, branch-free.
    #[inline(always)]
    fn geometric<R: Rng + ?Sized>(&self, rng: &mut R) -> (u64, bool) {
        let mut value: u64 = 0;
        let mut undecided: u128 = 0;
        let digits = self.lo.iter().zip(&self.hi).take(self.bits).enumerate();
        for (j, (&l, &h)) in digits {
            let u = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
            // Digit is 1 iff U < r/(1+r) for U ∈ [u, u+1)·2⁻¹²⁸.
            // Surely 1: (u+1)(ONE + l) ≤ l·2¹²⁸.  Surely 0: u(ONE + h) ≥ h·2¹²⁸.
            let one_plus_l = ONE + l;
            let surely_one = mul(u, one_plus_l)
                .add_u128(one_plus_l)
                .le_bit(U256 { hi: l, lo: 0 });
            let surely_zero = U256 { hi: h, lo: 0 }.le_bit(mul(u, ONE + h));
            value |= (surely_one as u64) << j;
            undecided |= 1 ^ (surely_one | surely_zero);
        }
        (value, undecided != 0)
    }
}

impl IntegerNoise for BoundedDiscreteLaplace {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i64> {
        BoundedDiscreteLaplace::sample(self, rng)
    }

    fn delta_log2(&self) -> Option<i32> {
        Some(DELTA_LOG2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn digit_count_follows_scale() {
        assert_eq!(BoundedDiscreteLaplace::new(1, 2).unwrap().bits(), 5); // 32 ≥ 23.5
        assert_eq!(BoundedDiscreteLaplace::new(1, 1).unwrap().bits(), 6); // 64 ≥ 47
        assert_eq!(BoundedDiscreteLaplace::new(1000, 1).unwrap().bits(), 16);
        assert_eq!(
            BoundedDiscreteLaplace::new(0, 1).unwrap_err(),
            Error::ScaleZero
        );
        assert_eq!(
            BoundedDiscreteLaplace::new(u64::MAX, 1).unwrap_err(),
            Error::Overflow
        );
    }

    #[test]
    fn digit_thresholds_are_tight() {
        let s = BoundedDiscreteLaplace::new(7, 3).unwrap();
        for j in 0..s.bits() {
            assert!(s.hi[j] - s.lo[j] < 64);
        }
    }

    #[test]
    fn symmetric_and_unit_variance_scale() {
        let s = BoundedDiscreteLaplace::new(3, 1).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(5);
        let n = 100_000;
        let mut sum = 0i64;
        for _ in 0..n {
            sum += s.sample(&mut rng).unwrap();
        }
        assert!((sum as f64 / n as f64).abs() < 0.05);
    }
}
