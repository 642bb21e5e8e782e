//! The exact 1-D reduction of problem (8) for SmallDB and MWEM (§3.3–3.4; privq's
//! addition, `docs/src/dx.md`, "Beyond the paper"): for a fixed `c` the best
//! `q̃ = c·q'` is the McShane extension with error
//! `δ*_q(c) = max_p (|q_i − q_j| − c·d(p))⁺/2`, so (8) becomes
//! `min_{c>0} n·max_q δ*_q(c) + h(c)` with `h` concave — minimised exactly over the
//! breakpoints of a piecewise-linear upper envelope.

use super::{DxError, FiniteMetric, Queries};

/// Lines `y = α − β·c` (`β ≥ 0`) whose upper envelope with 0 is
/// `E(c) = max(0, max_l α_l − β_l·c)`.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    lines: Vec<(f64, f64)>,
}

impl Envelope {
    /// From `(α, β)` pairs (lines with `β = ∞` are dropped: they vanish for c > 0).
    pub fn new(lines: impl IntoIterator<Item = (f64, f64)>) -> Self {
        Envelope {
            lines: lines
                .into_iter()
                .filter(|l| l.1.is_finite() && l.0 > 0.0)
                .collect(),
        }
    }

    /// `E(c)`.
    pub fn eval(&self, c: f64) -> f64 {
        self.lines
            .iter()
            .map(|&(a, b)| a - b * c)
            .fold(0.0, f64::max)
    }

    /// `E(0⁺) = max α`.
    pub fn at_zero(&self) -> f64 {
        self.lines.iter().map(|l| l.0).fold(0.0, f64::max)
    }

    /// The breakpoints `c > 0` of the envelope (including where it reaches 0), by
    /// the convex-hull trick in `O(L log L)`.
    pub fn breakpoints(&self) -> Vec<f64> {
        // Slopes m = −β ascending; the zero line has the largest slope.
        let mut lines: Vec<(f64, f64)> = self.lines.iter().map(|&(a, b)| (-b, a)).collect();
        lines.push((0.0, 0.0));
        lines.sort_by(|x, y| x.0.total_cmp(&y.0).then(y.1.total_cmp(&x.1)));
        lines.dedup_by(|x, y| x.0 == y.0);
        let cross = |l1: (f64, f64), l2: (f64, f64)| (l1.1 - l2.1) / (l2.0 - l1.0);
        let mut hull: Vec<(f64, f64)> = Vec::new();
        for l in lines {
            while hull.len() >= 2 {
                let (l1, l2) = (hull[hull.len() - 2], hull[hull.len() - 1]);
                if cross(l1, l) <= cross(l1, l2) {
                    hull.pop();
                } else {
                    break;
                }
            }
            hull.push(l);
        }
        hull.windows(2)
            .map(|w| cross(w[0], w[1]))
            .filter(|&c| c > 0.0)
            .collect()
    }

    /// `argmin_{c ≥ 0} w·E(c) + h(c)` for concave `h` with `h(0) = 0`: the minimum of
    /// a concave function on each linear piece is at an end, so only `0⁺` and the
    /// breakpoints are candidates. Returns `(c*, value)`.
    pub fn minimize(&self, w: f64, h: impl Fn(f64) -> f64) -> (f64, f64) {
        let mut best = (0.0, w * self.at_zero());
        for c in self.breakpoints() {
            let v = w * self.eval(c) + h(c);
            if v < best.1 {
                best = (c, v);
            }
        }
        best
    }
}

/// The best `L`-Lipschitz (w.r.t. `metric`) ℓ∞ approximation of `q`: the error
/// `δ* = max_p (|q_i − q_j| − L·d(p))⁺/2` and the McShane extension
/// `q̃_i = min_j (q_j + δ* + L·d(i, j))`.
pub fn best_lipschitz(metric: &FiniteMetric, q: &[f64], l: f64) -> (f64, Vec<f64>) {
    let n = q.len();
    let term = |i: usize, j: usize| {
        let d = metric.get(i, j);
        if d.is_infinite() {
            f64::INFINITY
        } else {
            l * d
        }
    };
    let mut delta: f64 = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            delta = delta.max(((q[i] - q[j]).abs() - term(i, j)) / 2.0);
        }
    }
    let ext = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| q[j] + delta + term(i, j))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    (delta, ext)
}

/// Which mechanism's objective (8) is minimised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Problem8 {
    /// SmallDB: `h(c) = (c·n²·γ)^{1/3}`, `γ = 16 ln N ln|Q| + 4 ln(1/β)`.
    SmallDb {
        /// Failure probability β.
        beta: f64,
    },
    /// MWEM: `h(c) = (20/5^{2/3})(n² ln N ln|Q|)^{1/3}·c^{1/3}`.
    Mwem,
}

/// The exact solution of (8).
#[derive(Debug, Clone, PartialEq)]
pub struct Reduction {
    /// The scalar `c*` (0 means "answer constants", the limit `c → 0⁺`).
    pub c: f64,
    /// The effective queries `Q̃ = c·Q'` (McShane extensions).
    pub q_eff: Queries,
    /// `Q' = Q̃/c` (None when `c = 0`).
    pub q_prime: Option<Queries>,
    /// The objective value at `c*`.
    pub objective: f64,
}

/// Solves (8) exactly for `Q` over `metric` with `n` records.
///
/// ```
/// use privq_host::dx::{FiniteMetric, Queries, lipschitz};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [2.0], [3.0]], 1.0)?;
/// let q = Queries::new(vec![vec![0.0, 0.0, 1.0, 1.0]])?;
/// let r = lipschitz::solve_problem8(&d, &q, 1000.0, lipschitz::Problem8::Mwem)?;
/// // Never worse than answering the midrange constant (c → 0⁺): n·max|q_i − q_j|/2.
/// assert!(r.c >= 0.0 && r.objective <= 500.0);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
pub fn solve_problem8(
    metric: &FiniteMetric,
    q: &Queries,
    n: f64,
    problem: Problem8,
) -> Result<Reduction, DxError> {
    q.check_universe(metric)?;
    if n.is_nan() || n <= 0.0 {
        return Err(DxError::InvalidValue(format!(
            "n must be positive, got {n}"
        )));
    }
    let nn = metric.len() as f64;
    let lq = (q.rows().max(2) as f64).ln();
    let h: Box<dyn Fn(f64) -> f64> = match problem {
        Problem8::SmallDb { beta } => {
            if !(beta > 0.0 && beta < 1.0) {
                return Err(DxError::InvalidValue(format!(
                    "beta must be in (0,1), got {beta}"
                )));
            }
            let gamma = 16.0 * nn.ln() * lq + 4.0 * (1.0 / beta).ln();
            Box::new(move |c: f64| (c * n * n * gamma).cbrt())
        }
        Problem8::Mwem => {
            let kappa = 20.0 / 5f64.powf(2.0 / 3.0) * (n * n * nn.ln() * lq).cbrt();
            Box::new(move |c: f64| kappa * c.cbrt())
        }
    };
    let env = Envelope::new(metric.finite_pairs().map(|(i, j, d)| {
        let a = (0..q.rows())
            .map(|k| q.pair_diff(k, i, j))
            .fold(0.0, f64::max);
        (a / 2.0, d / 2.0)
    }));
    let (c, objective) = env.minimize(n, &h);
    let rows: Vec<Vec<f64>> = (0..q.rows())
        .map(|k| best_lipschitz(metric, q.row(k), c).1)
        .collect();
    let q_eff = Queries::new(rows)?;
    let q_prime = if c > 0.0 {
        Some(q_eff.scale_rows(&vec![1.0 / c; q.rows()])?)
    } else {
        None
    };
    Ok(Reduction {
        c,
        q_eff,
        q_prime,
        objective,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dx::check::check_lipschitz;

    #[test]
    fn mcshane_attains_delta_and_is_lipschitz() {
        let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0], [4.0]], 1.0).unwrap();
        let q = [0.0, 5.0, 1.0, 2.0];
        let (delta, ext) = best_lipschitz(&d, &q, 1.0);
        assert!((delta - 2.0).abs() < 1e-12); // (5 − 1)/2 on pair (0, 1)
        for i in 0..4 {
            assert!((ext[i] - q[i]).abs() <= delta + 1e-12);
            for j in 0..4 {
                assert!((ext[i] - ext[j]).abs() <= d.get(i, j) + 1e-12);
            }
        }
    }

    #[test]
    fn breakpoint_minimum_matches_a_dense_scan() {
        let pts: Vec<[f64; 1]> = [0.0, 0.7, 1.9, 3.2, 3.5, 6.0]
            .iter()
            .map(|&v| [v])
            .collect();
        let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        let q = Queries::new(vec![
            vec![0.0, 1.0, 0.2, 0.9, 0.0, 1.0],
            vec![1.0, 1.0, 0.0, 0.0, 0.5, 0.5],
        ])
        .unwrap();
        for problem in [Problem8::Mwem, Problem8::SmallDb { beta: 0.05 }] {
            let r = solve_problem8(&d, &q, 50.0, problem).unwrap();
            let env = Envelope::new(d.finite_pairs().map(|(i, j, dd)| {
                (
                    (0..2).map(|k| q.pair_diff(k, i, j)).fold(0.0, f64::max) / 2.0,
                    dd / 2.0,
                )
            }));
            let f = |c: f64| {
                let h = match problem {
                    Problem8::Mwem => {
                        20.0 / 5f64.powf(2.0 / 3.0)
                            * (2500.0 * 6f64.ln() * 2f64.ln()).cbrt()
                            * c.cbrt()
                    }
                    Problem8::SmallDb { beta } => {
                        (c * 2500.0 * (16.0 * 6f64.ln() * 2f64.ln() + 4.0 * (1.0 / beta).ln()))
                            .cbrt()
                    }
                };
                50.0 * env.eval(c) + h
            };
            let scan = (1..20000)
                .map(|s| f(s as f64 * 1e-4))
                .fold(f64::INFINITY, f64::min);
            assert!(r.objective <= scan + 1e-9, "{} vs scan {scan}", r.objective);
            if let Some(qp) = &r.q_prime {
                assert!(check_lipschitz(&d, qp).unwrap().worst <= 1.0 + 1e-9);
            }
        }
    }
}
