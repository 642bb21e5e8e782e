//! Mistake-bounded learners for convex Lipschitz functions (Section 3.2).
//!
//! [`Learner1d`] is Figure 1: the hypothesis is the upper envelope of tangent lines
//! `Ĝ(t) = max_k (a_k t + b_k)`, starting from the line 0; on a mistake at `t*` it adds
//! the (possibly noisy) tangent at `t*`. With an exact oracle it makes at most
//! `3/√α₁` updates on a 1-Lipschitz convex function over `[0, 1]` (Lemma 3.2); with an
//! `α₁/4`-noisy oracle `O(1/√α₁)` (Lemma 3.3). [`DecomposedLearner`] runs one learner
//! per coordinate (Lemma 3.4).

use serde::{Deserialize, Serialize};

/// One tangent line `a·t + b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Slope, in `[−1, 1]`.
    pub a: f64,
    /// Intercept.
    pub b: f64,
}

/// The 1-D learner of Figure 1 on `[0, width]`.
///
/// ```
/// use privq_host::distance::learner::Learner1d;
/// let g = |t: f64| (t - 0.3).abs(); // convex, 1-Lipschitz
/// let dg = |t: f64| if t < 0.3 { -1.0 } else { 1.0 };
/// let mut learner = Learner1d::new(1.0);
/// let alpha1 = 0.01;
/// // Exact oracle: update on every query where the hypothesis is off by > α₁.
/// for k in 0..=1000 {
///     let t = k as f64 / 1000.0;
///     if (learner.predict(t) - g(t)).abs() > alpha1 {
///         learner.update(t, g(t), dg(t));
///     }
/// }
/// assert!(learner.updates() as f64 <= Learner1d::mistake_bound(alpha1));
/// # let _ = dg;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learner1d {
    width: f64,
    lines: Vec<Line>,
}

impl Learner1d {
    /// A learner on `[0, width]` with the initial hypothesis 0 (`a₀ = b₀ = 0`).
    pub fn new(width: f64) -> Self {
        Learner1d {
            width,
            lines: vec![Line { a: 0.0, b: 0.0 }],
        }
    }

    /// Lemma 3.2's bound `3/√α₁` on the number of updates with an exact oracle.
    pub fn mistake_bound(alpha1: f64) -> f64 {
        3.0 / alpha1.sqrt()
    }

    /// The exact-oracle bound `√(2w/α₁) + 1` on `[0, w]` (the proof of Lemma 3.2 with
    /// `(G'(x_T) − G'(x_1))(x_T − x_1) ≤ 2w`).
    pub fn mistake_bound_on(width: f64, alpha1: f64) -> f64 {
        (2.0 * width / alpha1).sqrt() + 1.0
    }

    /// The hypothesis `Ĝ(t)`.
    pub fn predict(&self, t: f64) -> f64 {
        self.lines
            .iter()
            .map(|l| l.a * t + l.b)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Adds the tangent at `t` with (noisy) value and slope. Post-processing keeps the
    /// hypothesis 1-Lipschitz and in range: the slope is clamped to `[−1, 1]` and the
    /// value to `[0, width]` (privq's addition to Figure 1, `docs/src/distance.md`).
    pub fn update(&mut self, t: f64, value: f64, slope: f64) {
        let a = if slope.is_finite() {
            slope.clamp(-1.0, 1.0)
        } else {
            0.0
        };
        let v = if value.is_finite() {
            value.clamp(0.0, self.width)
        } else {
            0.0
        };
        self.lines.push(Line { a, b: v - a * t });
    }

    /// Updates so far (lines beyond the initial one).
    pub fn updates(&self) -> usize {
        self.lines.len() - 1
    }

    /// The domain width.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// The lines of the envelope.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }
}

/// Lemma 3.4: one [`Learner1d`] per coordinate, hypothesis `F̂(y) = Σ_i F̂^{(i)}(y_i)`.
///
/// ```
/// use privq_host::distance::learner::DecomposedLearner;
/// let mut l = DecomposedLearner::new(&[0.5, 0.5]);
/// assert_eq!(l.predict(&[0.1, 0.2]), 0.0);
/// l.update_coordinate(0, 0.1, 0.2, -1.0);
/// assert!((l.predict(&[0.1, 0.2]) - 0.2).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecomposedLearner {
    coords: Vec<Learner1d>,
}

impl DecomposedLearner {
    /// One learner per scaled width.
    pub fn new(widths: &[f64]) -> Self {
        DecomposedLearner {
            coords: widths.iter().map(|&w| Learner1d::new(w)).collect(),
        }
    }

    /// From already-trained 1-D learners.
    pub fn from_coordinates(coords: Vec<Learner1d>) -> Self {
        DecomposedLearner { coords }
    }

    /// `F̂(y)` for a scaled query, clamped to `[0, 1]`.
    pub fn predict(&self, y: &[f64]) -> f64 {
        self.coords
            .iter()
            .zip(y)
            .map(|(l, &t)| l.predict(t))
            .sum::<f64>()
            .clamp(0.0, 1.0)
    }

    /// `F̂^{(i)}(t)`.
    pub fn predict_coordinate(&self, i: usize, t: f64) -> f64 {
        self.coords.get(i).map_or(0.0, |l| l.predict(t))
    }

    /// Adds a tangent to coordinate `i`'s learner.
    pub fn update_coordinate(&mut self, i: usize, t: f64, value: f64, slope: f64) {
        if let Some(l) = self.coords.get_mut(i) {
            l.update(t, value, slope);
        }
    }

    /// The per-coordinate learners.
    pub fn coordinates(&self) -> &[Learner1d] {
        &self.coords
    }

    /// Total updates over all coordinates.
    pub fn updates(&self) -> usize {
        self.coords.iter().map(Learner1d::updates).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::{BoxDomain, Columns};
    use proptest::prelude::*;

    /// Runs Figure 1 with an exact oracle over the query sequence; returns updates.
    fn run_exact(g: impl Fn(f64) -> (f64, f64), queries: &[f64], alpha1: f64) -> usize {
        let mut l = Learner1d::new(1.0);
        for &t in queries {
            let (v, s) = g(t);
            if (l.predict(t) - v).abs() > alpha1 {
                l.update(t, v, s);
            }
        }
        // After the pass, the learner is accurate on every query seen.
        for &t in queries {
            assert!((l.predict(t) - g(t).0).abs() <= alpha1 + 1e-12);
        }
        l.updates()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Lemma 3.2 on F^{(1)} of random data (convex, 1-Lipschitz), adversarially
        /// ordered random queries, exact oracle: at most 3/√α₁ updates.
        #[test]
        fn lemma_3_2_mistake_bound_on_random_data(
            data in proptest::collection::vec(0.0f64..=1.0, 1..60),
            queries in proptest::collection::vec(0.0f64..=1.0, 1..400),
            alpha1 in 0.001f64..0.5,
        ) {
            let pts: Vec<Vec<f64>> = data.iter().map(|&x| vec![x]).collect();
            let cols = Columns::new(&BoxDomain::unit_cube(1).unwrap(), &pts).unwrap();
            let g = |t: f64| (cols.value(0, t), cols.slope(0, t));
            let updates = run_exact(g, &queries, alpha1);
            prop_assert!(updates as f64 <= Learner1d::mistake_bound(alpha1),
                "{updates} updates > 3/sqrt({alpha1})");
        }

        /// The same bound on random max-of-lines convex 1-Lipschitz functions, with
        /// queries on a fine grid (the worst case for the envelope).
        #[test]
        fn lemma_3_2_mistake_bound_on_random_envelopes(
            lines in proptest::collection::vec((-1.0f64..=1.0, 0.0f64..=1.0), 1..20),
            alpha1 in 0.001f64..0.5,
            seed in 0u64..1000,
        ) {
            let g = |t: f64| {
                let mut best = (f64::NEG_INFINITY, 0.0);
                for &(a, c) in &lines {
                    // The line through (c, 0) with slope a.
                    let v = a * (t - c);
                    if v > best.0 { best = (v, a); }
                }
                best
            };
            let mut queries: Vec<f64> = (0..=2000).map(|k| k as f64 / 2000.0).collect();
            // A seeded shuffle: the bound holds for every order.
            let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            for i in (1..queries.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                queries.swap(i, (s >> 33) as usize % (i + 1));
            }
            // Shift so the minimum is 0: with slope ≤ 1 the range is then within [0, 1].
            let shift = -queries.iter().map(|&t| g(t).0).fold(f64::INFINITY, f64::min);
            let gs = |t: f64| { let (v, d) = g(t); (v + shift, d) };
            let updates = run_exact(gs, &queries, alpha1);
            prop_assert!(updates as f64 <= Learner1d::mistake_bound(alpha1));
        }
    }

    #[test]
    fn noisy_slopes_and_values_are_clamped() {
        let mut l = Learner1d::new(0.5);
        l.update(0.2, 9.0, -7.0);
        assert_eq!(l.lines()[1], Line { a: -1.0, b: 0.7 });
        l.update(0.2, f64::NAN, f64::INFINITY);
        assert_eq!(l.updates(), 2);
        assert!(Learner1d::mistake_bound_on(1.0, 0.01) < Learner1d::mistake_bound(0.01));
    }
}
