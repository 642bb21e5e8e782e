//! The exact solution of §4.2's relaxed multi-query problem
//! `min_c Σ c_k²  s.t.  Σ_k ΔQ_k(p)/c_k ≤ d(p)`, convex in `r_k = 1/c_k`
//! (an exact solver the paper does not give; `docs/src/dx.md`, "Beyond the
//! paper"), so PSA's gap to the optimum can be reported.
//!
//! Method: cutting planes over the pair constraints `b_p·r ≤ 1`
//! (`b_pk = ΔQ_k(p)/d(p)`), each restricted problem solved by a log-barrier
//! Newton method in the K variables. The restricted optimum is a lower bound and
//! the final iterate, scaled to satisfy every pair, an upper bound; both are
//! reported.

use super::DxError;
use super::psa::{PairTable, Selection, psa_table};

/// Which convex objective in `r = 1/c` is minimised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Objective {
    /// `‖c‖₂² = Σ r_k⁻²` (the l2² objective of §4.2).
    #[default]
    SumOfSquares,
    /// `−Σ ln r_k` (maximises the geometric-mean improvement factor).
    GeometricMean,
}

/// The relaxed optimum.
#[derive(Debug, Clone, PartialEq)]
pub struct Optimum {
    /// Feasible scales attaining `upper` (0 for constant rows).
    pub scales: Vec<f64>,
    /// The objective of `scales`.
    pub upper: f64,
    /// A certified lower bound on the optimum.
    pub lower: f64,
    /// Pair constraints used by the final restricted problem.
    pub constraints: usize,
    /// Cutting-plane rounds.
    pub rounds: usize,
}

impl Optimum {
    /// `(upper − lower)/upper`.
    pub fn relative_gap(&self) -> f64 {
        (self.upper - self.lower) / self.upper
    }
}

fn value(obj: Objective, r: &[f64]) -> f64 {
    match obj {
        Objective::SumOfSquares => r.iter().map(|v| v.powi(-2)).sum(),
        Objective::GeometricMean => -r.iter().map(|v| v.ln()).sum::<f64>(),
    }
}

/// Solves the relaxed problem for the active (non-constant) rows of `table`.
///
/// ```
/// use privq_host::dx::{FiniteMetric, Queries, optimum, psa};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
/// let q = Queries::new(vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]])?;
/// let t = psa::PairTable::new(&d, &q)?;
/// let opt = optimum::relaxed_optimum(&t, optimum::Objective::SumOfSquares)?;
/// let psa = psa::psa_table(&t)?;
/// assert!(opt.upper <= psa.objective() * (1.0 + 1e-9));
/// assert!(opt.relative_gap() < 1e-8);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
pub fn relaxed_optimum(table: &PairTable, obj: Objective) -> Result<Optimum, DxError> {
    let start: Selection = psa_table(table)?;
    let idx: Vec<usize> = (0..table.queries())
        .filter(|&k| start.scales[k] > 0.0)
        .collect();
    let kk = idx.len();
    if kk == 0 {
        return Ok(Optimum {
            scales: start.scales,
            upper: 0.0,
            lower: 0.0,
            constraints: 0,
            rounds: 0,
        });
    }
    // Normalised constraint rows over the active queries.
    let b: Vec<f64> = (0..table.len())
        .flat_map(|p| {
            let (_, d, dq) = table.pair(p);
            idx.iter().map(move |&k| dq[k] / d)
        })
        .collect();
    let row = |p: usize| &b[p * kk..(p + 1) * kk];
    let dot = |p: usize, r: &[f64]| row(p).iter().zip(r).map(|(a, v)| a * v).sum::<f64>();
    // Start: PSA's r halved (strictly feasible), constraints = the most loaded pairs.
    let mut r: Vec<f64> = idx.iter().map(|&k| 0.5 / start.scales[k]).collect();
    let mut set: Vec<usize> = Vec::new();
    let add_top = |set: &mut Vec<usize>, r: &[f64], count: usize| {
        let mut load: Vec<(f64, usize)> = (0..table.len()).map(|p| (dot(p, r), p)).collect();
        let count = count.min(load.len());
        if count == 0 {
            return;
        }
        load.select_nth_unstable_by(count - 1, |a, b| b.0.total_cmp(&a.0));
        for &(_, p) in &load[..count] {
            if !set.contains(&p) {
                set.push(p);
            }
        }
    };
    for k in 0..kk {
        let mut e = vec![0.0; kk];
        e[k] = 1.0;
        add_top(&mut set, &e, 3);
    }
    add_top(&mut set, &r, 4 * kk + 8);
    let mut lower = 0.0;
    for round in 1..=60 {
        let rows: Vec<&[f64]> = set.iter().map(|&p| row(p)).collect();
        let gap = barrier(&rows, &mut r, obj)?;
        lower = value(obj, &r) - gap;
        let rho = (0..table.len()).map(|p| dot(p, &r)).fold(0.0, f64::max);
        if rho <= 1.0 || round == 60 {
            let scaled: Vec<f64> = r.iter().map(|v| v / rho.max(1.0)).collect();
            let mut scales = vec![0.0; table.queries()];
            for (&k, &v) in idx.iter().zip(&scaled) {
                scales[k] = 1.0 / v;
            }
            let upper = value(obj, &scaled);
            return Ok(Optimum {
                scales,
                upper,
                lower: lower.min(upper),
                constraints: set.len(),
                rounds: round,
            });
        }
        add_top(&mut set, &r, 2 * kk + 8);
        r.iter_mut().for_each(|v| *v /= rho * 1.001);
    }
    Err(DxError::NotConverged { lower })
}

/// Minimises `obj(r)` s.t. `a·r ≤ 1` for the given rows, from a strictly feasible
/// `r`, by the log-barrier method; returns the final duality-gap bound `m/t`.
fn barrier(rows: &[&[f64]], r: &mut [f64], obj: Objective) -> Result<f64, DxError> {
    let k = r.len();
    let m = rows.len() as f64;
    let mut t = (m / value(obj, r).abs().max(1e-300)).max(1.0);
    loop {
        for _ in 0..200 {
            let slack: Vec<f64> = rows
                .iter()
                .map(|a| 1.0 - a.iter().zip(r.iter()).map(|(x, y)| x * y).sum::<f64>())
                .collect();
            let mut g = vec![0.0; k];
            let mut h = vec![0.0; k * k];
            for i in 0..k {
                let (g0, h0) = match obj {
                    Objective::SumOfSquares => (-2.0 * r[i].powi(-3), 6.0 * r[i].powi(-4)),
                    Objective::GeometricMean => (-1.0 / r[i], r[i].powi(-2)),
                };
                g[i] = t * g0;
                h[i * k + i] = t * h0;
            }
            for (a, &s) in rows.iter().zip(&slack) {
                for i in 0..k {
                    g[i] += a[i] / s;
                    for j in 0..k {
                        h[i * k + j] += a[i] * a[j] / (s * s);
                    }
                }
            }
            let step = solve_spd(&h, &g, k).ok_or(DxError::SingularHessian)?;
            let decrement: f64 = step.iter().zip(&g).map(|(a, b)| a * b).sum();
            if decrement < 1e-14 {
                break;
            }
            let phi = |r: &[f64]| -> f64 {
                let mut v = t * value(obj, r);
                for a in rows {
                    let s = 1.0 - a.iter().zip(r).map(|(x, y)| x * y).sum::<f64>();
                    if s <= 0.0 {
                        return f64::INFINITY;
                    }
                    v -= s.ln();
                }
                v
            };
            let base = phi(r);
            let mut alpha = 1.0;
            let mut next = r.to_vec();
            loop {
                for i in 0..k {
                    next[i] = r[i] - alpha * step[i];
                }
                if next.iter().all(|&v| v > 0.0) && phi(&next) <= base - 0.25 * alpha * decrement {
                    break;
                }
                alpha *= 0.5;
                if alpha < 1e-20 {
                    break;
                }
            }
            if alpha < 1e-20 {
                break;
            }
            r.copy_from_slice(&next);
        }
        let gap = m / t;
        if gap <= 1e-11 * value(obj, r).abs().max(1e-300) || t > 1e30 {
            return Ok(gap);
        }
        t *= 20.0;
    }
}

/// Solves `H x = g` for a symmetric positive definite `H` (Cholesky).
fn solve_spd(h: &[f64], g: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..=i {
            let mut s = h[i * k + j];
            for p in 0..j {
                s -= l[i * k + p] * l[j * k + p];
            }
            if i == j {
                if s <= 0.0 {
                    return None;
                }
                l[i * k + i] = s.sqrt();
            } else {
                l[i * k + j] = s / l[j * k + j];
            }
        }
    }
    let mut y = vec![0.0; k];
    for i in 0..k {
        y[i] = (g[i] - (0..i).map(|p| l[i * k + p] * y[p]).sum::<f64>()) / l[i * k + i];
    }
    let mut x = vec![0.0; k];
    for i in (0..k).rev() {
        x[i] = (y[i] - (i + 1..k).map(|p| l[p * k + i] * x[p]).sum::<f64>()) / l[i * k + i];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dx::{FiniteMetric, Queries};
    use rand_core::Rng;

    #[test]
    fn beats_psa_and_is_feasible_on_random_instances() {
        let mut rng = crate::seeded_rng(21);
        let mut u = || rng.next_u32() as f64 / 4294967296.0;
        let pts: Vec<[f64; 2]> = (0..30).map(|_| [100.0 * u(), 100.0 * u()]).collect();
        let metric = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        for binary in [false, true] {
            for kq in [2, 5] {
                let rows = (0..kq)
                    .map(|_| {
                        (0..30)
                            .map(|_| if binary { u().round() } else { u() })
                            .collect()
                    })
                    .collect();
                let t = PairTable::new(&metric, &Queries::new(rows).unwrap()).unwrap();
                let opt = relaxed_optimum(&t, Objective::SumOfSquares).unwrap();
                let psa = psa_table(&t).unwrap();
                assert!(t.worst_ratio(&opt.scales) <= 1.0);
                assert!(
                    opt.upper <= psa.objective() * (1.0 + 1e-9),
                    "{} vs {}",
                    opt.upper,
                    psa.objective()
                );
                assert!(opt.relative_gap() < 1e-8, "gap {}", opt.relative_gap());
                let geo = relaxed_optimum(&t, Objective::GeometricMean).unwrap();
                assert!(t.worst_ratio(&geo.scales) <= 1.0);
            }
        }
    }

    #[test]
    fn single_query_optimum_is_the_closed_form() {
        let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).unwrap();
        let t = PairTable::new(&d, &Queries::new(vec![vec![0.0, 1.0, 3.0]]).unwrap()).unwrap();
        let opt = relaxed_optimum(&t, Objective::SumOfSquares).unwrap();
        assert!((opt.scales[0] - 1.0).abs() < 1e-9, "{:?}", opt.scales);
    }
}
