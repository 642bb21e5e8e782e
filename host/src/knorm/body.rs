//! The body `K = F·B₁ᴺ` of a query matrix and its Minkowski gauge (thesis §3.1,
//! Def 3.3.1).

use std::collections::HashSet;

use super::KnormError;
use crate::lp::{LinearProgram, LpOutcome, Relation};

/// The largest `d·N` a [`Body`] accepts (2²² entries: 64 MiB for the two copies of
/// the matrix). It also keeps the exact answer `F·x` inside `i128` for any `u64`
/// counts (entries ≤ 2³² in fixed point times counts < 2⁶⁴, summed over ≤ 2²² columns).
pub const MAX_ENTRIES: usize = 1 << 22;

/// The fixed-point unit the matrix is stored on: entries are rounded to the
/// nearest multiple of 2⁻³², a public preprocessing of `F`.
pub(crate) const F_FRAC_BITS: u32 = 32;

/// The largest `d` for which [`Body::new`] looks for the cube shape (`2^(d−1)`
/// sign classes are collected).
const MAX_CUBE_DETECT: usize = 24;

/// Which body `K = F·B₁ᴺ` is, when it is one of the two with a closed-form gauge
/// and an exact uniform sampler (thesis §3.3, Fact 3.2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `K = B₁ᵈ`: every column has ℓ1 norm ≤ 1 and each `±eᵢ` is a column
    /// (e.g. `F = I`). Gauge `‖v‖₁`.
    CrossPolytope,
    /// `K = B∞ᵈ`: every `s ∈ {−1, 1}ᵈ` is a column up to sign (possible when
    /// `d ≤ log₂ N + 1`). Gauge `‖v‖∞`.
    Cube,
    /// Any other body: the gauge is an LP.
    General,
}

/// A `d × N` query matrix `F` with entries in `[−1, 1]` and its body
/// `K = F·B₁ᴺ`, the symmetric convex hull of the columns `±F·ⱼ` (thesis §3.1).
///
/// Entries are stored on the 2⁻³² grid (rounded to nearest; ±1 and 0 are exact), so
/// that `F·x` can be computed exactly in integers; the body, its gauge and every
/// mechanism built on it use the stored matrix.
///
/// ```
/// use privq_host::knorm::{Body, Shape};
///
/// let identity = Body::identity(3)?;
/// assert_eq!(identity.shape(), Shape::CrossPolytope);
/// assert_eq!(identity.gauge(&[0.5, -0.25, 0.0])?, 0.75);
///
/// // A body with no closed form: the gauge is the LP min{‖x‖₁ : Fx = v}.
/// let f = Body::from_rows(&[vec![1.0, 0.5], vec![0.5, 1.0]])?;
/// assert_eq!(f.shape(), Shape::General);
/// assert!((f.gauge(&[1.5, 1.5])? - 2.0).abs() < 1e-9); // col₀ + col₁
/// assert!(f.contains(&[0.5, 0.5])?);
/// assert!(!f.contains(&[1.0, -1.0])?);
/// # Ok::<(), privq_host::knorm::KnormError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Body {
    d: usize,
    n: usize,
    /// Row-major `d × N`, on the 2⁻³² grid.
    f: Vec<f64>,
    /// The same entries times 2³².
    fq: Vec<i64>,
    shape: Shape,
}

impl Body {
    /// The body of the matrix with the given rows (`d` rows of `N` entries each),
    /// with its shape detected.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self, KnormError> {
        let mut body = Self::general(rows)?;
        body.shape = body.detect_shape();
        Ok(body)
    }

    /// Like [`Body::from_rows`], but never uses a closed form: every gauge and chord
    /// goes through the LP. For tests and benchmarks of the general path on bodies
    /// whose gauge is known.
    pub fn general(rows: &[Vec<f64>]) -> Result<Self, KnormError> {
        let d = rows.len();
        let n = rows.first().map_or(0, Vec::len);
        if d == 0 || n == 0 {
            return Err(KnormError::Empty);
        }
        if d > n {
            return Err(KnormError::MoreQueriesThanColumns { d, n });
        }
        let entries = d.saturating_mul(n);
        if entries > MAX_ENTRIES {
            return Err(KnormError::TooLarge {
                entries,
                cap: MAX_ENTRIES,
            });
        }
        let mut f = Vec::with_capacity(entries);
        let mut fq = Vec::with_capacity(entries);
        let unit = (1u64 << F_FRAC_BITS) as f64;
        for (i, row) in rows.iter().enumerate() {
            if row.len() != n {
                return Err(KnormError::Ragged {
                    row: i,
                    expected: n,
                    got: row.len(),
                });
            }
            for (j, &a) in row.iter().enumerate() {
                if a.is_nan() || !(-1.0..=1.0).contains(&a) {
                    return Err(KnormError::EntryOutOfRange {
                        row: i,
                        col: j,
                        value: a,
                    });
                }
                // |a|·2³² ≤ 2³², so the rounded value is an exact i64 and f64.
                let q = (a * unit).round();
                fq.push(q as i64);
                f.push(q / unit);
            }
        }
        Ok(Body {
            d,
            n,
            f,
            fq,
            shape: Shape::General,
        })
    }

    /// `F = I_d`: `K = B₁ᵈ` (thesis §3.3; `N = d`, no padding).
    pub fn identity(d: usize) -> Result<Self, KnormError> {
        let rows: Vec<Vec<f64>> = (0..d)
            .map(|i| (0..d).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        Self::from_rows(&rows)
    }

    /// The `d × 2ᵈ` matrix whose columns are all of `{−1, 1}ᵈ`: `K = B∞ᵈ`
    /// (thesis Fact 3.2.5). `d` is capped at 20.
    pub fn hypercube(d: usize) -> Result<Self, KnormError> {
        if d > 20 {
            return Err(KnormError::TooLarge {
                entries: usize::MAX,
                cap: MAX_ENTRIES,
            });
        }
        let rows: Vec<Vec<f64>> = (0..d)
            .map(|i| {
                (0..1usize << d)
                    .map(|s| if s >> i & 1 == 1 { 1.0 } else { -1.0 })
                    .collect()
            })
            .collect();
        Self::from_rows(&rows)
    }

    fn detect_shape(&self) -> Shape {
        let cols = || (0..self.n).map(|j| (0..self.d).map(move |i| (i, j)));
        let at = |(i, j): (usize, usize)| self.f.get(i * self.n + j).copied().unwrap_or(0.0);
        // Cross-polytope: all columns in B₁ᵈ, and every ±eᵢ present.
        let mut units = vec![false; self.d];
        let mut in_l1 = true;
        for col in cols() {
            let col: Vec<f64> = col.map(at).collect();
            let l1: f64 = col.iter().map(|a| a.abs()).sum();
            if l1 > 1.0 {
                in_l1 = false;
                break;
            }
            let nonzero: Vec<usize> = (0..self.d).filter(|&i| col[i] != 0.0).collect();
            if let [i] = nonzero[..]
                && col[i].abs() == 1.0
            {
                units[i] = true;
            }
        }
        if in_l1 && units.iter().all(|&u| u) {
            return Shape::CrossPolytope;
        }
        // Cube: every sign class {s, −s} of {−1, 1}ᵈ among the columns.
        if self.d <= MAX_CUBE_DETECT {
            let mut classes = HashSet::new();
            for col in cols() {
                let col: Vec<f64> = col.map(at).collect();
                if col.iter().all(|a| a.abs() == 1.0) {
                    let mask = col
                        .iter()
                        .enumerate()
                        .fold(0u32, |m, (i, &a)| if a > 0.0 { m | 1 << i } else { m });
                    // Normalise the class by the sign of the first coordinate.
                    let mask = if mask & 1 == 1 {
                        !mask & ((1u64 << self.d) - 1) as u32
                    } else {
                        mask
                    };
                    classes.insert(mask);
                }
            }
            if classes.len() == 1usize << (self.d - 1) {
                return Shape::Cube;
            }
        }
        Shape::General
    }

    /// The number of queries (rows) d.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// The number of columns N (the histogram's length).
    pub fn columns(&self) -> usize {
        self.n
    }

    /// The detected shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Entry `(i, j)` of the stored matrix.
    pub fn entry(&self, i: usize, j: usize) -> Option<f64> {
        if i < self.d && j < self.n {
            self.f.get(i * self.n + j).copied()
        } else {
            None
        }
    }

    fn check_len(&self, v: &[f64]) -> Result<(), KnormError> {
        if v.len() != self.d {
            return Err(KnormError::DimensionMismatch {
                expected: self.d,
                got: v.len(),
            });
        }
        if v.iter().any(|a| !a.is_finite()) {
            return Err(KnormError::NonFinite);
        }
        Ok(())
    }

    /// The Minkowski gauge `‖v‖_K = inf{r ≥ 0 : v ∈ rK}` (thesis §3.1): `‖v‖₁` on the
    /// cross-polytope, `‖v‖∞` on the cube, otherwise `1/max{t : t·v ∈ K}` by the
    /// chord LP (the value of [`Body::gauge_lp`]). `+∞` outside `range(F)`.
    pub fn gauge(&self, v: &[f64]) -> Result<f64, KnormError> {
        self.check_len(v)?;
        match self.shape {
            Shape::CrossPolytope => Ok(v.iter().map(|a| a.abs()).sum()),
            Shape::Cube => Ok(v.iter().fold(0.0, |m: f64, a| m.max(a.abs()))),
            // ‖v‖_K = 1/max{t : t·v ∈ K} (0 for v = 0, +∞ outside range(F)), by
            // the dense chord simplex; the LP when it fails.
            Shape::General => {
                match super::chord::ray_exit(&self.f, self.d, self.n, &zeros(self.d), v) {
                    Some(t) if t > 0.0 => Ok(1.0 / t),
                    Some(_) => Ok(f64::INFINITY),
                    None => self.gauge_lp(v),
                }
            }
        }
    }

    /// The gauge by linear programming, whatever the shape:
    /// `‖v‖_K = min{‖x‖₁ : Fx = v}`, with `x = x⁺ − x⁻`, `x± ≥ 0` (2N variables, d
    /// equality rows); `+∞` when the LP is infeasible (`v ∉ range(F)`).
    pub fn gauge_lp(&self, v: &[f64]) -> Result<f64, KnormError> {
        self.check_len(v)?;
        let n = self.n;
        let mut lp = LinearProgram::new(vec![1.0; 2 * n]);
        for (i, &vi) in v.iter().enumerate() {
            lp.add_row(&self.signed_row(i), Relation::Eq, vi)?;
        }
        match lp.solve()? {
            LpOutcome::Optimal { value, .. } => Ok(value.max(0.0)),
            LpOutcome::Infeasible => Ok(f64::INFINITY),
            LpOutcome::Unbounded => Err(KnormError::Lp(crate::lp::LpError::Solver(
                "a gauge LP cannot be unbounded (its objective is ≥ 0)".into(),
            ))),
        }
    }

    /// Row i of `[F, −F]` as LP coefficients over `(x⁺, x⁻)`, zeros left out.
    fn signed_row(&self, i: usize) -> Vec<(usize, f64)> {
        let n = self.n;
        let row = self.f.get(i * n..(i + 1) * n).unwrap_or(&[]);
        row.iter()
            .enumerate()
            .filter(|(_, a)| **a != 0.0)
            .flat_map(|(j, &a)| [(j, a), (n + j, -a)])
            .collect()
    }

    /// Membership: `v ∈ K ⇔ ‖v‖_K ≤ 1`.
    pub fn contains(&self, v: &[f64]) -> Result<bool, KnormError> {
        Ok(self.gauge(v)? <= 1.0)
    }

    /// The largest `t ≥ 0` with `z + t·u ∈ K` (one end of a hit-and-run chord), for
    /// `z ∈ K` and `u ≠ 0`. Closed form on the cube; bisection on the ℓ1 gauge for
    /// the cross-polytope; on a general body the LP
    /// `max t` s.t. `F(x⁺ − x⁻) − t·u = z`, `Σ(x⁺ + x⁻) ≤ 1` (hit-and-run, privq's
    /// practical substitute for thesis §3.7's walk), solved by a dense revised simplex
    /// sized for its d + 1 rows, with the general LP layer as the fallback.
    pub fn ray_exit(&self, z: &[f64], u: &[f64]) -> Result<f64, KnormError> {
        self.check_len(z)?;
        self.check_len(u)?;
        match self.shape {
            Shape::Cube => Ok(z
                .iter()
                .zip(u)
                .filter(|(_, ui)| **ui != 0.0)
                .map(|(zi, ui)| ((ui.signum() - zi) / ui).max(0.0))
                .fold(f64::INFINITY, f64::min)),
            Shape::CrossPolytope => {
                // g(t) = ‖z + t u‖₁ is convex with g(0) ≤ 1 and g(t) ≥ t‖u‖₁ − 1.
                let g = |t: f64| -> f64 { z.iter().zip(u).map(|(a, b)| (a + t * b).abs()).sum() };
                let norm_u: f64 = u.iter().map(|a| a.abs()).sum();
                if norm_u == 0.0 {
                    return Ok(f64::INFINITY);
                }
                let (mut lo, mut hi) = (0.0, 2.0 / norm_u);
                for _ in 0..64 {
                    let mid = 0.5 * (lo + hi);
                    if g(mid) <= 1.0 { lo = mid } else { hi = mid }
                }
                Ok(lo)
            }
            Shape::General => match super::chord::ray_exit(&self.f, self.d, self.n, z, u) {
                Some(t) => Ok(t),
                None => self.ray_exit_lp(z, u),
            },
        }
    }

    /// [`Body::ray_exit`] on a general body through the general LP layer (the
    /// fallback of the dense simplex of `chord`, and its reference in tests).
    pub(crate) fn ray_exit_lp(&self, z: &[f64], u: &[f64]) -> Result<f64, KnormError> {
        self.check_len(z)?;
        self.check_len(u)?;
        let n = self.n;
        let t = 2 * n;
        let mut objective = vec![0.0; 2 * n + 1];
        if let Some(c) = objective.get_mut(t) {
            *c = -1.0;
        }
        let mut lp = LinearProgram::new(objective);
        for (i, (&zi, &ui)) in z.iter().zip(u).enumerate() {
            let mut row = self.signed_row(i);
            if ui != 0.0 {
                row.push((t, -ui));
            }
            lp.add_row(&row, Relation::Eq, zi)?;
        }
        let budget: Vec<(usize, f64)> = (0..2 * n).map(|j| (j, 1.0)).collect();
        lp.add_row(&budget, Relation::Le, 1.0)?;
        match lp.solve()? {
            LpOutcome::Optimal { x, .. } => Ok(x.get(t).copied().unwrap_or(0.0)),
            // z slightly outside K by round-off: the chord has length 0.
            LpOutcome::Infeasible => Ok(0.0),
            LpOutcome::Unbounded => Ok(f64::INFINITY),
        }
    }

    /// `Σᵢ ‖eᵢ‖_K`, the constant that bounds the K-norm of a snapping error
    /// (`‖e‖_K ≤ Σ|eᵢ|·‖eᵢ‖_K`): `d` on the two exact shapes, otherwise d LPs.
    /// A basis vector outside `range(F)` is [`KnormError::RankDeficient`].
    pub(crate) fn basis_gauge_sum(&self) -> Result<f64, KnormError> {
        match self.shape {
            Shape::CrossPolytope | Shape::Cube => Ok(self.d as f64),
            Shape::General => {
                let mut total = 0.0;
                for i in 0..self.d {
                    let mut e = vec![0.0; self.d];
                    if let Some(ei) = e.get_mut(i) {
                        *ei = 1.0;
                    }
                    let g = self.gauge_lp(&e)?;
                    if !g.is_finite() {
                        return Err(KnormError::RankDeficient { basis: i });
                    }
                    total += g;
                }
                Ok(total)
            }
        }
    }

    /// `F·x` exactly, in units of 2⁻³² (entries ≤ 2³² in magnitude times counts
    /// < 2⁶⁴, summed over N ≤ 2²² columns: below 2¹¹⁸, so `i128` never overflows).
    pub(crate) fn answer_fixed(&self, counts: &[u64]) -> Vec<i128> {
        (0..self.d)
            .map(|i| {
                let row = self.fq.get(i * self.n..(i + 1) * self.n).unwrap_or(&[]);
                row.iter()
                    .zip(counts)
                    .map(|(&a, &x)| i128::from(a) * i128::from(x))
                    .fold(0i128, i128::wrapping_add)
            })
            .collect()
    }

    /// `F·x` for a release by another mechanism (e.g. vector Laplace): the exact
    /// integer answer of the stored F (entries on the 2⁻³² grid, each within 2⁻³³ of
    /// the given one), clamped to `±2³¹` and then rounded once to `f64` — a
    /// deterministic, monotone function of the exact answer, within `2⁻²³` of it per
    /// coordinate. Neighbouring inputs' answers therefore differ in ℓ1 by at most the
    /// exact sensitivity of F plus `d·2⁻²⁰` (the grid of F and the two roundings);
    /// add that to the sensitivity. Unlike [`Body::answer`], no sum is taken in
    /// floating point, so huge counts cannot cancel into a larger gap.
    pub fn answer_for_release(&self, counts: &[u64]) -> Result<Vec<f64>, KnormError> {
        if counts.len() != self.n {
            return Err(KnormError::DimensionMismatch {
                expected: self.n,
                got: counts.len(),
            });
        }
        let limit = 1i128 << (31 + F_FRAC_BITS);
        let unit = 1.0 / (1u64 << F_FRAC_BITS) as f64;
        Ok(self
            .answer_fixed(counts)
            .into_iter()
            .map(|a| a.clamp(-limit, limit) as f64 * unit)
            .collect())
    }

    /// `F·x` in floating point (for reports and tests; releases use the exact form).
    pub fn answer(&self, x: &[f64]) -> Result<Vec<f64>, KnormError> {
        if x.len() != self.n {
            return Err(KnormError::DimensionMismatch {
                expected: self.n,
                got: x.len(),
            });
        }
        Ok((0..self.d)
            .map(|i| {
                let row = self.f.get(i * self.n..(i + 1) * self.n).unwrap_or(&[]);
                row.iter().zip(x).map(|(a, b)| a * b).sum()
            })
            .collect())
    }
}

fn zeros(d: usize) -> Vec<f64> {
    vec![0.0; d]
}
