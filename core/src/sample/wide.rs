//! 256-bit products and quotients, and Q126 fixed-point bounds on exp(−x), integer-only.
//!
//! Used to precompute the thresholds of the bounded-work sampler (each constant is
//! known to lie in an interval `[lo, hi]` of width a few units of 2⁻¹²⁶), and by the
//! discrete Gaussian for exact exponents `c²/B` whose numerator leaves `u128`.

/// `1.0` in Q126 fixed point.
pub(crate) const ONE: u128 = 1 << 126;

const LOW64: u128 = u64::MAX as u128;

/// A 256-bit unsigned integer as (high, low) halves; ordered lexicographically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct U256 {
    pub hi: u128,
    pub lo: u128,
}

impl U256 {
    /// `self <= other` as 1 or 0, computed with bit operations only (see [`lt_bit`]).
    #[inline(always)]
    pub(crate) fn le_bit(self, other: U256) -> u128 {
        let gt_hi = lt_bit(other.hi, self.hi);
        let lt_hi = lt_bit(self.hi, other.hi);
        let eq_hi = 1 ^ (gt_hi | lt_hi);
        1 ^ (gt_hi | (eq_hi & lt_bit(other.lo, self.lo)))
    }

    /// `self + x` (wrapping at 2²⁵⁶, which callers rule out).
    #[inline(always)]
    pub(crate) fn add_u128(self, x: u128) -> U256 {
        let lo = self.lo.wrapping_add(x);
        U256 {
            hi: self.hi.wrapping_add(lt_bit(lo, x)),
            lo,
        }
    }
}

impl U256 {
    /// Zero.
    pub(crate) const ZERO: U256 = U256 { hi: 0, lo: 0 };

    /// `self − 1`, or `None` at zero.
    pub(crate) fn checked_dec(self) -> Option<U256> {
        match (self.hi, self.lo) {
            (0, 0) => None,
            (hi, 0) => Some(U256 {
                hi: hi - 1,
                lo: u128::MAX,
            }),
            (hi, lo) => Some(U256 { hi, lo: lo - 1 }),
        }
    }
}

/// Greatest common divisor of 128-bit integers (Euclid); `gcd(0, b) = b`.
pub(crate) fn gcd128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `(⌊n/d⌋, n mod d)` for `d ≥ 1`, by binary long division (256 shift-and-subtract
/// steps: slow, for rare paths only). `None` when `d = 0`.
pub(crate) fn div_rem(n: U256, d: u128) -> Option<(U256, u128)> {
    if d == 0 {
        return None;
    }
    let mut q = U256::ZERO;
    let mut r: u128 = 0;
    for i in (0..256u32).rev() {
        let bit = if i >= 128 {
            (n.hi >> (i - 128)) & 1
        } else {
            (n.lo >> i) & 1
        };
        // r < d before the shift, so 2r + bit < 2d: one subtraction restores r < d.
        // `carry` is the bit shifted out of u128 (then 2r + bit ≥ 2¹²⁸ > d).
        let carry = r >> 127;
        r = (r << 1) | bit;
        if carry == 1 || r >= d {
            r = r.wrapping_sub(d);
            if i >= 128 {
                q.hi |= 1 << (i - 128);
            } else {
                q.lo |= 1 << i;
            }
        }
    }
    Some((q, r))
}

/// `1` if `x < y`, else `0`: the borrow of `x − y` (Hacker's Delight §2-13), with bit
/// operations only. Comparisons that produce a `bool` compile to conditional branches
/// on Thumb-1 (Cortex-M0 has no conditional select), which made the bounded sampler's
/// instruction count depend on its digits; `black_box` keeps LLVM from turning the
/// 0/1 result back into such a comparison.
#[inline(always)]
pub(crate) fn lt_bit(x: u128, y: u128) -> u128 {
    core::hint::black_box(((!x & y) | ((!x | y) & x.wrapping_sub(y))) >> 127)
}

/// The full 256-bit product `a · b`.
#[inline(always)]
pub(crate) fn mul(a: u128, b: u128) -> U256 {
    let (a1, a0) = (a >> 64, a & LOW64);
    let (b1, b0) = (b >> 64, b & LOW64);
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 64) + (p01 & LOW64) + (p10 & LOW64);
    U256 {
        hi: p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64),
        lo: (p00 & LOW64) | (mid << 64),
    }
}

/// `⌊a·b / 2¹²⁶⌋` (`round_up = false`) or `⌈a·b / 2¹²⁶⌉`, for `a, b ≤ 2¹²⁷`.
pub(crate) fn mul_q(a: u128, b: u128, round_up: bool) -> u128 {
    let p = mul(a, b);
    let q = (p.hi << 2) | (p.lo >> 126);
    let rem = p.lo & (ONE - 1);
    q + u128::from(round_up && rem != 0)
}

/// `⌊r · 2¹²⁶ / b⌋` for `r < b`, `b < 2⁶⁴` (so the result is below 2¹²⁶).
fn frac_q(r: u128, b: u128) -> u128 {
    let qa = (r << 64) / b;
    let ra = (r << 64) % b;
    (qa << 62) + (ra << 62) / b
}

/// Bounds on `exp(−f)` for `f ∈ [f_lo, f_hi] ⊂ [0, 1]` (Q126), by the alternating
/// Taylor series with directed rounding; 40 terms leave a tail below 2⁻¹⁶⁰ (one unit).
fn exp_neg_unit(f_lo: u128, f_hi: u128) -> (u128, u128) {
    // Σ_{k≤40} (−1)^k f^k/k! with the even terms rounded one way and the odd terms
    // the other, so the sum is an upper (`up`) or lower bound of the truncated series.
    let series = |f: u128, up: bool| -> i128 {
        let (mut even, mut odd) = (ONE, ONE);
        let mut sum = ONE as i128;
        for k in 1..=40u128 {
            even = mul_q(even, f, up);
            even = if up { even.div_ceil(k) } else { even / k };
            odd = mul_q(odd, f, !up);
            odd = if up { odd / k } else { odd.div_ceil(k) };
            if k % 2 == 0 {
                sum += even as i128;
            } else {
                sum -= odd as i128;
            }
        }
        sum
    };
    // exp(−f) decreases in f: the upper bound is taken at f_lo, the lower at f_hi.
    let hi = series(f_lo, true) + 1;
    let lo = series(f_hi, false) - 1;
    let clamp = |x: i128| x.clamp(0, ONE as i128) as u128;
    (clamp(lo), clamp(hi))
}

/// Bounds `(lo, hi)` in Q126 with `lo ≤ exp(−a/b) ≤ hi`, for `b ≥ 1`, `b < 2⁶⁴`.
pub(crate) fn exp_neg(a: u128, b: u64) -> (u128, u128) {
    let b = u128::from(b.max(1));
    let n = a / b;
    let r = a % b;
    let f = frac_q(r, b);
    // f ≤ r/b < f + 2⁻¹²⁶.
    let (mut lo, mut hi) = exp_neg_unit(f, f + u128::from(r != 0));
    let (e_lo, e_hi) = exp_neg_unit(ONE, ONE);
    // Multiply by exp(−1)^n with binary exponentiation, rounding outward.
    let (mut base_lo, mut base_hi) = (e_lo, e_hi);
    let mut n = n;
    while n > 0 {
        if n & 1 == 1 {
            lo = mul_q(lo, base_lo, false);
            hi = mul_q(hi, base_hi, true);
        }
        base_lo = mul_q(base_lo, base_lo, false);
        base_hi = mul_q(base_hi, base_hi, true);
        n >>= 1;
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_f64(x: u128) -> f64 {
        x as f64 / ONE as f64
    }

    #[test]
    fn mul_matches_u128_when_small() {
        assert_eq!(mul(3, 5), U256 { hi: 0, lo: 15 });
        let m = mul(u128::MAX, u128::MAX);
        // (2^128 − 1)² = 2^256 − 2^129 + 1.
        assert_eq!(m.lo, 1);
        assert_eq!(m.hi, u128::MAX - 1);
        assert_eq!(mul(1 << 100, 1 << 100).le_bit(mul(1 << 101, 1 << 100)), 1);
        assert_eq!(mul(1 << 101, 1 << 100).le_bit(mul(1 << 100, 1 << 100)), 0);
        let x = U256 { hi: 5, lo: 9 };
        assert_eq!(x.le_bit(x), 1);
        assert_eq!(x.le_bit(U256 { hi: 5, lo: 8 }), 0);
        assert_eq!(x.le_bit(U256 { hi: 6, lo: 0 }), 1);
        for (a, b) in [
            (0u128, 0u128),
            (0, 1),
            (1, 0),
            (u128::MAX, 0),
            (0, u128::MAX),
            (1 << 127, 3),
        ] {
            assert_eq!(lt_bit(a, b), u128::from(a < b), "{a} < {b}");
        }
    }

    #[test]
    fn long_division_matches_u128_and_reconstructs() {
        for (n, d) in [
            (0u128, 1u128),
            (17, 5),
            (u128::MAX, 3),
            (u128::MAX, u128::MAX),
            (1 << 100, (1 << 64) + 7),
        ] {
            let (q, r) = div_rem(U256 { hi: 0, lo: n }, d).unwrap();
            assert_eq!((q, r), (U256 { hi: 0, lo: n / d }, n % d), "{n}/{d}");
        }
        assert_eq!(div_rem(U256 { hi: 1, lo: 0 }, 0), None);
        // (2¹²⁸ − 1)² / (2¹²⁸ − 1) = 2¹²⁸ − 1, remainder 0.
        let (q, r) = div_rem(mul(u128::MAX, u128::MAX), u128::MAX).unwrap();
        assert_eq!(
            (q, r),
            (
                U256 {
                    hi: 0,
                    lo: u128::MAX
                },
                0
            )
        );
        // a·b + c with c < b divides back to (a, c), with the top bit of b set.
        let (a, b, c) = (
            0x1234_5678_9abc_def0_1122_3344_5566_7788u128,
            u128::MAX - 5,
            99,
        );
        let (q, r) = div_rem(mul(a, b).add_u128(c), b).unwrap();
        assert_eq!((q, r), (U256 { hi: 0, lo: a }, c));
        let (q, r) = div_rem(U256 { hi: 5, lo: 3 }, 2).unwrap();
        assert_eq!(
            q,
            U256 {
                hi: 2,
                lo: (1 << 127) + 1
            }
        );
        assert_eq!(r, 1);
        assert_eq!(U256::ZERO.checked_dec(), None);
        assert_eq!(
            U256 { hi: 1, lo: 0 }.checked_dec(),
            Some(U256 {
                hi: 0,
                lo: u128::MAX
            })
        );
        assert_eq!(
            U256 { hi: 1, lo: 9 }.checked_dec(),
            Some(U256 { hi: 1, lo: 8 })
        );
    }

    #[test]
    fn exp_bounds_bracket_libm() {
        for (a, b) in [
            (0u128, 1u64),
            (1, 1),
            (1, 3),
            (7, 2),
            (46, 1),
            (1000, 7),
            (5, 1000),
        ] {
            let (lo, hi) = exp_neg(a, b);
            let want = (-(a as f64) / b as f64).exp();
            assert!(lo <= hi);
            assert!(hi - lo < 64, "width {} for {a}/{b}", hi - lo);
            let tol = want * 1e-14 + 1e-30;
            assert!(
                to_f64(lo) <= want + tol && to_f64(hi) >= want - tol,
                "{a}/{b}"
            );
        }
        assert_eq!(exp_neg(0, 5), (ONE - 1, ONE));
    }
}
