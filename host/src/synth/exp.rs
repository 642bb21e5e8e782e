//! `eˣ` for the estimator's inner loops, written so a loop over a table
//! compiles to vector instructions (no call, no branch: the two range checks are
//! selects).
//!
//! The model fits exponentiate every cell of every clique table at each
//! mirror-descent step (belief propagation's `exp(θ − max)`), so `exp` was a third
//! of a synthetic-data run's time through the C library's scalar call. This is
//! the textbook method (Cody and Waite's argument reduction; Muller, *Elementary
//! Functions*, 3rd ed., Section 11.3): `x = k·ln 2 + r` with `k` the nearest
//! integer to `x / ln 2` and `|r| ≤ ln 2 / 2`, then `eˣ = 2ᵏ · eʳ`, with `eʳ` from
//! its Taylor polynomial of degree 13 (truncation error below 5·10⁻¹⁸ relative),
//! evaluated by Estrin's scheme (Knuth, *TAOCP* vol. 2, Section 4.6.4),
//! and `2ᵏ` built from its exponent bits. Only what the model is fitted with
//! changes; nothing here touches released noise (the fits are post-processing).

const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// ln 2 split in two: the high part has 21 trailing zero bits, so `k · LN2_HI` is
/// exact for every `|k| < 2¹¹`.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// 1.5 · 2⁵²: adding it rounds to the nearest integer (ties to even) and leaves
/// that integer in the low bits of the sum.
const ROUND: f64 = 6_755_399_441_055_744.0;
/// Below this, `eˣ` (< 3.4·10⁻³⁰⁸) is returned as 0: `2ᵏ` stays a normal number.
const LOWEST: f64 = -708.0;
/// Above this, `eˣ` is returned as +∞ (`2ᵏ` would need the exponent of ∞).
const HIGHEST: f64 = 709.0;

/// `eˣ` within a few units in the last place for `−708 ≤ x ≤ 709`; 0 below
/// (where `eˣ < 3.4·10⁻³⁰⁸`, so sums relative to a maximum lose nothing a
/// `f64` holds), +∞ above, NaN for NaN.
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    // Clamped so that 2ᵏ's exponent field never wraps (NaN stays NaN).
    let xc = if x > HIGHEST { 710.0 } else { x };
    let t = xc * LOG2_E + ROUND;
    let k = t - ROUND;
    let r = (xc - k * LN2_HI) - k * LN2_LO;
    // eʳ = Σ_{j ≤ 13} rʲ/j! by Estrin's scheme (pairs, then powers r², r⁴, r⁸): the
    // same polynomial as Horner's rule in a dependency chain of 8 operations, not 26.
    let c = |j: u32| 1.0 / (1..=j).map(f64::from).product::<f64>();
    let pair = |j: u32| c(j) + c(j + 1) * r;
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let low = (pair(0) + pair(2) * r2) + (pair(4) + pair(6) * r2) * r4;
    let high = (pair(8) + pair(10) * r2) + pair(12) * r4;
    let er = low + high * r8;
    // The low 12 bits of t's mantissa are k (two's complement): shifted into the
    // exponent field and biased, they are the bits of 2ᵏ (+∞ for k = 1024).
    let two_k = f64::from_bits((t.to_bits() << 52).wrapping_add(1023 << 52));
    let y = er * two_k;
    // Zero below the range, as a mask, so loops over tables stay branch-free.
    let keep = 0u64.wrapping_sub(u64::from(x >= LOWEST || x.is_nan()));
    f64::from_bits(y.to_bits() & keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    fn uniform(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// Units in the last place between `a` and the C library's `eˣ`, `b`.
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn agrees_with_the_c_library_to_two_ulps() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut worst = 0;
        for i in 0..1_000_000 {
            // Half the points in the range the fits use most, [−40, 0].
            let x = if i % 2 == 0 {
                uniform(&mut rng, -40.0, 0.0)
            } else {
                uniform(&mut rng, LOWEST, HIGHEST)
            };
            let d = ulps(exp(x), x.exp());
            worst = worst.max(d);
            assert!(
                d <= 2,
                "exp({x}) = {} against {}: {d} ulps",
                exp(x),
                x.exp()
            );
        }
        assert!(
            worst >= 1,
            "never differs from the C library: not exercised"
        );
    }

    #[test]
    fn is_exact_at_zero_and_close_where_the_reduction_switches() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        // Multiples of ln 2 (r ≈ 0) and the midpoints between them, where k changes.
        for k in -2042i32..=2044 {
            let x = f64::from(k) * std::f64::consts::LN_2 / 2.0;
            for x in [x.next_down(), x, x.next_up()] {
                assert!(ulps(exp(x), x.exp()) <= 2, "exp({x})");
            }
        }
    }

    #[test]
    fn flushes_below_the_range_overflows_above_and_keeps_nan() {
        assert!(exp(-708.0) > 0.0 && exp(-708.0).is_normal());
        assert_eq!(exp(-708.000_001), 0.0);
        assert_eq!(exp(-1e300), 0.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(exp(709.0).is_finite());
        assert_eq!(exp(709.5), f64::INFINITY);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert!(exp(f64::NAN).is_nan());
    }
}
