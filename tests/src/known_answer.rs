//! Bit-identical output on every target: one seeded ChaCha12 drives every core sampler,
//! and a 64-bit FNV-1a digest of all outputs must equal [`KNOWN_ANSWER_DIGEST`] on the
//! host and on the Cortex-M0, M3 and M4F alike.
//!
//! Every output is fed to the digest, including errors (as their text), so any change
//! of a sampler's result, its consumption of random words or its error behaviour on any
//! target changes the digest.

use core::fmt::Write;

use privq_core::histogram::{Histogram, OutOfRange};
use privq_core::local::{UeVariant, UnaryEncoding};
use privq_core::sample::{
    BoundedDiscreteLaplace, DiscreteGaussian, DiscreteLaplace, SigmaSquared, bernoulli,
    bernoulli_exp, uniform_below,
};
use privq_core::{Epsilon, Error, Fixed, GridGaussian, GridLaplace, Result, Rho};

use crate::check::{Outcome, expect_eq};
use crate::fnv::Fnv1a64;
use crate::rng::{Chacha, SplitMix64, chacha};

/// The digest every target must reproduce (computed once on the host, then fixed).
///
/// A change in a core sampler that changes its outputs or its use of random words
/// changes this digest. When that change is intended, print the new value with
/// `cargo test -p privq-tests --test host print_known_answer_digest -- --nocapture`,
/// put it here, and run the QEMU suites (`tools/test-all.sh`): every target must agree.
pub const KNOWN_ANSWER_DIGEST: u64 = 0x720b_3cbc_3c8a_4886;

/// Seed of the known-answer ChaCha12 stream (tests only).
pub const SEED: u64 = 0x7072_6976_715f_6b61; // "privq_ka"

/// Discrete Laplace scales `num/den` exercised by the known-answer stream.
pub const LAPLACE_SCALES: [(u64, u64); 4] = [(1, 2), (1, 1), (10, 3), (1000, 1)];

/// The digest of the discrete Gaussian stream ([`gaussian_digest`]), which every target
/// must reproduce; kept apart from [`KNOWN_ANSWER_DIGEST`] so the older samplers' digest
/// is unchanged. Print it with
/// `cargo test -p privq-tests --test host print_known_answer_digest -- --nocapture`.
pub const GAUSSIAN_DIGEST: u64 = 0xd3a7_8718_74c6_c4c3;

/// Seed of the discrete Gaussian known-answer stream (tests only).
pub const GAUSSIAN_SEED: u64 = 0x7072_6976_715f_6467; // "privq_dg"

/// σ² = `num/den` of the discrete Gaussian stream: σ = ½, √(10/3), 50, 1000, and
/// σ² = 2⁴⁰/3, whose acceptance exponents take the 128- and 256-bit paths.
pub const GAUSSIAN_SIGMA2: [(u64, u64); 5] =
    [(1, 4), (10, 3), (2500, 1), (1_000_000, 1), (1 << 40, 3)];

/// Samples per σ² in the discrete Gaussian stream.
pub const GAUSSIAN_SAMPLES: usize = 256;

/// Runs the discrete Gaussian stream: [`GAUSSIAN_SAMPLES`] samples per σ² of
/// [`GAUSSIAN_SIGMA2`], then grid Gaussian releases; returns the digest and the number
/// of calls that errored (none should).
pub fn gaussian_digest() -> (u64, u32) {
    let mut rng = chacha(GAUSSIAN_SEED);
    let mut h = Stream::default();
    for (num, den) in GAUSSIAN_SIGMA2 {
        match SigmaSquared::new(num, den).and_then(DiscreteGaussian::new) {
            Ok(g) => {
                h.digest.u64(g.laplace_scale());
                for _ in 0..GAUSSIAN_SAMPLES {
                    h.feed(g.sample(&mut rng), Fnv1a64::i64);
                }
            }
            Err(e) => h.error(e),
        }
    }
    // ρ = 1/2 for a count, and ρ = 0.0123 as an f64 (σ² rounded up to the grid).
    for (sensitivity, rho) in [
        (Fixed::ONE, Rho::new(1, 2)),
        (Fixed::from_int(3), Rho::from_f64(0.0123)),
    ] {
        let mech = match rho.and_then(|r| GridGaussian::new(sensitivity, r)) {
            Ok(m) => m,
            Err(e) => {
                h.error(e);
                continue;
            }
        };
        let s2 = mech.noise().sigma_squared();
        h.digest.u64(s2.num());
        h.digest.u64(s2.den());
        for v in [Fixed::from_int(-3), Fixed::ZERO, Fixed::MAX] {
            h.feed(mech.release(v, &mut rng), |h, x| h.i64(x.to_bits()));
        }
    }
    (h.digest.finish(), h.errors)
}

/// The check: no call of the Gaussian stream errored and its digest equals
/// [`GAUSSIAN_DIGEST`].
pub fn check_gaussian() -> Outcome {
    let (digest, errors) = gaussian_digest();
    expect_eq(
        "calls of the Gaussian known-answer stream that errored",
        errors,
        0,
    )?;
    expect_eq(
        "FNV-1a digest of the discrete Gaussian stream (if its output changed on purpose, \
         update GAUSSIAN_DIGEST in tests/src/known_answer.rs)",
        digest,
        GAUSSIAN_DIGEST,
    )
}

/// The digest of the unary-encoding stream ([`unary_digest`]): OUE and SUE reports,
/// bit for bit, which every target must reproduce; kept apart from
/// [`KNOWN_ANSWER_DIGEST`] so the samplers' digest is unchanged. Print it with
/// `cargo test -p privq-tests --test host print_known_answer_digest -- --nocapture`.
pub const UNARY_DIGEST: u64 = 0x55dc_1279_47b8_960c;

/// Seed of the unary-encoding known-answer stream (tests only).
pub const UNARY_SEED: u64 = 0x7072_6976_715f_7565; // "privq_ue"

/// `(variant, ε numerator, ε denominator, d)` of the unary-encoding stream: the
/// firmware's OUE over 64 items at ε = 1, an exponent with whole and fractional parts,
/// a tiny ε whose coins run the plain loop from the first step, and SUE.
pub const UNARY_CASES: [(UeVariant, u64, u64, u32); 5] = [
    (UeVariant::Optimized, 1, 1, 64),
    (UeVariant::Optimized, 7, 3, 13),
    (UeVariant::Optimized, 1, 1000, 16),
    (UeVariant::Symmetric, 1, 1, 64),
    (UeVariant::Symmetric, 5, 1, 9),
];

/// Runs the unary-encoding stream: 64 reports per case of [`UNARY_CASES`] (items
/// `17·k mod d`), every byte fed to the digest; returns the digest and the errors.
///
/// The words come from [`SplitMix64`] (ChaCha12's own output is pinned by the other
/// digests): a second generator type shows that the coins' words are read the same
/// way whatever the generator.
pub fn unary_digest() -> (u64, u32) {
    let mut rng = SplitMix64::new(UNARY_SEED);
    let mut h = Stream::default();
    for (variant, num, den, d) in UNARY_CASES {
        let ue = match Epsilon::new(num, den).and_then(|e| UnaryEncoding::new(variant, e, d)) {
            Ok(ue) => ue,
            Err(e) => {
                h.error(e);
                continue;
            }
        };
        for k in 0..64u32 {
            let mut bits = [0u8; 8];
            let r = ue.randomize_into((17 * k) % d, &mut rng, &mut bits);
            h.feed(r, |h, ()| h.bytes(&bits));
        }
    }
    (h.digest.finish(), h.errors)
}

/// The check: no call of the unary-encoding stream errored and its digest equals
/// [`UNARY_DIGEST`].
pub fn check_unary() -> Outcome {
    let (digest, errors) = unary_digest();
    expect_eq(
        "calls of the unary-encoding known-answer stream that errored",
        errors,
        0,
    )?;
    expect_eq(
        "FNV-1a digest of the unary-encoding stream (if its output changed on purpose, \
         update UNARY_DIGEST in tests/src/known_answer.rs)",
        digest,
        UNARY_DIGEST,
    )
}

/// Runs the whole known-answer stream: returns its digest and how many calls errored
/// (none should: every input of the stream is valid).
pub fn digest() -> (u64, u32) {
    let mut rng = chacha(SEED);
    let mut h = Stream::default();
    uniform(&mut rng, &mut h);
    bernoullis(&mut rng, &mut h);
    laplaces(&mut rng, &mut h);
    grid_releases(&mut rng, &mut h);
    histograms(&mut rng, &mut h);
    (h.digest.finish(), h.errors)
}

/// The check: no call errored and the digest equals [`KNOWN_ANSWER_DIGEST`].
pub fn check() -> Outcome {
    let (digest, errors) = digest();
    expect_eq("calls of the known-answer stream that errored", errors, 0)?;
    expect_eq(
        "FNV-1a digest of all sampler outputs (if a core sampler's output changed on \
         purpose, update KNOWN_ANSWER_DIGEST in tests/src/known_answer.rs)",
        digest,
        KNOWN_ANSWER_DIGEST,
    )
}

/// The digest being built, and the errors seen.
#[derive(Default)]
struct Stream {
    digest: Fnv1a64,
    errors: u32,
}

impl Stream {
    /// Feeds a result that must be `Ok` (an error is fed too, and counted).
    fn feed<T>(&mut self, r: Result<T>, value: impl FnOnce(&mut Fnv1a64, T)) {
        if r.is_err() {
            self.errors += 1;
        }
        self.feed_any(r, value);
    }

    /// Feeds a result that may be an error by design (e.g. a rejected reading):
    /// values as themselves, errors as a marker byte plus their text.
    fn feed_any<T>(&mut self, r: Result<T>, value: impl FnOnce(&mut Fnv1a64, T)) {
        match r {
            Ok(v) => {
                self.digest.bytes(&[0]);
                value(&mut self.digest, v);
            }
            Err(e) => {
                self.digest.bytes(&[1]);
                let _ = write!(self.digest, "{e}");
            }
        }
    }

    /// Feeds an error of a constructor.
    fn error(&mut self, e: Error) {
        self.feed::<()>(Err(e), |_, ()| ());
    }
}

fn uniform(rng: &mut Chacha, h: &mut Stream) {
    for n in [
        1u64,
        2,
        3,
        7,
        10,
        1000,
        (1 << 32) + 1,
        u64::MAX - 1,
        u64::MAX,
    ] {
        for _ in 0..16 {
            h.feed(uniform_below(n, rng), Fnv1a64::u64);
        }
    }
}

fn bernoullis(rng: &mut Chacha, h: &mut Stream) {
    for (p, q) in [(0u64, 5u64), (1, 3), (2, 7), (5, 5), (999, 1000)] {
        for _ in 0..32 {
            h.feed(bernoulli(p, q, rng), Fnv1a64::bool);
        }
    }
    for (p, q) in [(0u64, 1u64), (1, 1), (1, 2), (3, 2), (7, 3), (10, 1)] {
        for _ in 0..32 {
            h.feed(bernoulli_exp(p, q, rng), Fnv1a64::bool);
        }
    }
}

fn laplaces(rng: &mut Chacha, h: &mut Stream) {
    for (num, den) in LAPLACE_SCALES {
        match DiscreteLaplace::new(num, den) {
            Ok(d) => {
                for _ in 0..64 {
                    h.feed(d.sample(rng), Fnv1a64::i64);
                }
            }
            Err(e) => h.error(e),
        }
        match BoundedDiscreteLaplace::new(num, den) {
            Ok(b) => {
                h.digest.u64(b.bits() as u64);
                for _ in 0..16 {
                    h.feed(b.sample(rng), Fnv1a64::i64);
                }
            }
            Err(e) => h.error(e),
        }
    }
}

fn grid_releases(rng: &mut Chacha, h: &mut Stream) {
    let values = [
        Fixed::from_bits(102_005_473_280), // 23.75
        Fixed::from_int(-3),
        Fixed::ZERO,
        Fixed::from_bits(1),
        Fixed::MAX,
        Fixed::MIN,
    ];
    let mechanisms = [
        (Fixed::ONE, Epsilon::new(1, 2)),
        (Fixed::from_int(3), Epsilon::new(1, 10)),
        (Fixed::from_bits(1 << 30), Epsilon::new(2, 1)), // Δ = 1/4
    ];
    for (sensitivity, epsilon) in mechanisms {
        let mech = epsilon.and_then(|eps| GridLaplace::new(sensitivity, eps));
        let mech = match mech {
            Ok(m) => m,
            Err(e) => {
                h.error(e);
                continue;
            }
        };
        h.digest.u64(mech.grid_exp() as u64);
        h.digest.u64(mech.sensitivity_steps());
        for v in values {
            h.feed(mech.release(v, rng), |h, x| h.i64(x.to_bits()));
        }
        match mech.with_noise(BoundedDiscreteLaplace::new) {
            Ok(bounded) => {
                for v in values {
                    h.feed(bounded.release(v, rng), |h, x| h.i64(x.to_bits()));
                }
            }
            Err(e) => h.error(e),
        }
    }
}

fn histograms(rng: &mut Chacha, h: &mut Stream) {
    let lo = Fixed::from_int(-10);
    let hi = Fixed::from_int(30);
    for outside in [OutOfRange::Tally, OutOfRange::Clamp, OutOfRange::Reject] {
        let mut hist = match Histogram::<8>::equal_width(lo, hi, outside) {
            Ok(hist) => hist,
            Err(e) => {
                h.error(e);
                continue;
            }
        };
        for _ in 0..64 {
            // Readings in [-20, 40): about a quarter fall outside the range.
            let reading = uniform_below(60 << 8, rng)
                .map(|x| Fixed::from_bits(((x as i64) << 24) - (20i64 << 32)));
            let Ok(reading) = reading else {
                return h.feed(reading, |_, _| ());
            };
            // With `Reject`, out-of-range readings are errors by design.
            let recorded = hist.record(reading);
            h.feed_any(recorded, |h, bin| h.u64(bin.map_or(u64::MAX, |b| b as u64)));
        }
        for &c in hist.counts() {
            h.digest.u64(u64::from(c));
        }
        h.digest.u64(u64::from(hist.underflow()));
        h.digest.u64(u64::from(hist.overflow()));
    }
    let mut cat = match Histogram::<5>::categorical() {
        Ok(cat) => cat,
        Err(e) => return h.error(e),
    };
    for _ in 0..64 {
        let index = match uniform_below(6, rng) {
            Ok(i) => i as usize,
            Err(e) => return h.error(e),
        };
        // Index 5 of 5 bins is rejected by design.
        h.feed_any(cat.record_index(index), |_, ()| ());
    }
    for &c in cat.counts() {
        h.digest.u64(u64::from(c));
    }
}
