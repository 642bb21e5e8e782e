//! Parameter selection for the d_X Laplace mechanism under `c ⊙ Q' = Q` (§4.1–4.2,
//! Algorithm 3): the single-query closed form, Strategies 1 and 2, Strategy 3 = PSA
//! (Algorithm 3 with privq's handling of its degenerate cases, each iteration
//! computed in closed form; `docs/src/dx.md`, "PSA as implemented"), and
//! improvement factors.

use super::check::ratio;
use super::{DxError, FiniteMetric, Queries, baseline_scale};

/// Relative clamp of saturated pairs after PSA's step 4 (privq's convention,
/// `docs/src/dx.md`).
const SATURATION_TOL: f64 = 1e-12;

/// Pair-major table of `|Q_{k,i} − Q_{k,j}|` over the pairs with finite budget.
#[derive(Debug, Clone)]
pub struct PairTable {
    k: usize,
    pairs: Vec<(usize, usize)>,
    d: Vec<f64>,
    delta: Vec<f64>,
}

impl PairTable {
    /// Builds the table (`O(K·N²)` memory) for `Q` on `metric`.
    pub fn new(metric: &FiniteMetric, q: &Queries) -> Result<Self, DxError> {
        q.check_universe(metric)?;
        let k = q.rows();
        let mut t = PairTable {
            k,
            pairs: Vec::new(),
            d: Vec::new(),
            delta: Vec::new(),
        };
        for (i, j, d) in metric.finite_pairs() {
            t.pairs.push((i, j));
            t.d.push(d);
            t.delta.extend((0..k).map(|r| q.pair_diff(r, i, j)));
        }
        Ok(t)
    }

    /// The number of queries `K`.
    pub fn queries(&self) -> usize {
        self.k
    }

    /// The number of constrained pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether no pair is constrained.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Pair `p`'s `(i, j)`, budget and per-query differences.
    pub fn pair(&self, p: usize) -> ((usize, usize), f64, &[f64]) {
        (
            self.pairs[p],
            self.d[p],
            &self.delta[p * self.k..(p + 1) * self.k],
        )
    }

    /// `max_p |ΔQ_k(p)| / d(p)` per query: the whole-budget single-query scales.
    pub fn single_scales(&self) -> Vec<f64> {
        let mut c = vec![0.0f64; self.k];
        for p in 0..self.len() {
            let (_, d, dq) = self.pair(p);
            for (ck, &a) in c.iter_mut().zip(dq) {
                *ck = ck.max(ratio(a, d));
            }
        }
        c
    }

    /// Theorem 1's worst ratio `max_p Σ_k ΔQ_k(p)/c_k / d(p)` for `c ⊙ Q' = Q`.
    pub fn worst_ratio(&self, c: &[f64]) -> f64 {
        (0..self.len())
            .map(|p| {
                let (_, d, dq) = self.pair(p);
                ratio(dq.iter().zip(c).map(|(&a, &ck)| ratio(a, ck)).sum(), d)
            })
            .fold(0.0, f64::max)
    }
}

/// A parameter set: noise scales `c` with `Q' = Q/c` (so `Q̃ = Q`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// `c_k` (0 for a constant query, answered without noise).
    pub scales: Vec<f64>,
    /// Iterations of PSA including the final one that finds `T = 0` (1 otherwise).
    pub iterations: usize,
}

impl Selection {
    /// `‖c‖₂²`, the relaxed l2² objective of §4.2.
    pub fn objective(&self) -> f64 {
        self.scales.iter().map(|c| c * c).sum()
    }
}

/// Raises `c` by a few ulps until `ratio(c) ≤ 1` (round-off must always err on the
/// side of more noise; `docs/src/dx.md`).
fn guard(mut c: Vec<f64>, ratio: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    for _ in 0..64 {
        let rho = ratio(&c);
        if rho <= 1.0 || !rho.is_finite() {
            break;
        }
        c.iter_mut()
            .for_each(|v| *v *= rho * (1.0 + 4.0 * f64::EPSILON));
    }
    c
}

fn finite(c: Vec<f64>, iterations: usize) -> Result<Selection, DxError> {
    if let Some(k) = c.iter().position(|v| !v.is_finite()) {
        return Err(DxError::InfiniteNoise { query: k });
    }
    Ok(Selection {
        scales: c,
        iterations,
    })
}

/// The single-query closed form `c = max_{i≠j} |q_i − q_j| / d(i, j)` (§4.1).
///
/// ```
/// use privq_host::dx::{FiniteMetric, psa};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
/// assert_eq!(psa::single_query_scale(&d, &[0.0, 1.0, 3.0])?, 1.0);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
pub fn single_query_scale(metric: &FiniteMetric, q: &[f64]) -> Result<f64, DxError> {
    if q.len() != metric.len() || q.iter().any(|v| !v.is_finite()) {
        return Err(DxError::Dimension(
            "a finite query over the metric's universe is needed".into(),
        ));
    }
    let mut c: f64 = 0.0;
    for i in 0..q.len() {
        let row = metric.row(i);
        for j in i + 1..q.len() {
            c = c.max(ratio((q[i] - q[j]).abs(), row[j]));
        }
    }
    if !c.is_finite() {
        return Err(DxError::InfiniteNoise { query: 0 });
    }
    let worst = |c: &[f64]| {
        let mut w: f64 = 0.0;
        for i in 0..q.len() {
            for j in i + 1..q.len() {
                w = w.max(ratio(ratio((q[i] - q[j]).abs(), c[0]), metric.get(i, j)));
            }
        }
        w
    };
    Ok(guard(vec![c], worst)[0])
}

/// Strategy 1: `c_k = K·max_p ΔQ_k(p)/d(p)` (the budget split equally).
pub fn strategy1(table: &PairTable) -> Result<Selection, DxError> {
    let k = table.queries() as f64;
    let c = table.single_scales().into_iter().map(|c| c * k).collect();
    finite(guard(c, |c| table.worst_ratio(c)), 1)
}

/// Strategy 2: every `c_k = max_p ‖ΔQ(p)‖₁/d(p)` (one scale for all components).
pub fn strategy2(table: &PairTable) -> Result<Selection, DxError> {
    let c = (0..table.len())
        .map(|p| {
            let (_, d, dq) = table.pair(p);
            ratio(dq.iter().sum(), d)
        })
        .fold(0.0, f64::max);
    finite(guard(vec![c; table.queries()], |c| table.worst_ratio(c)), 1)
}

/// Strategy 3: PSA (Algorithm 3) on `metric` and `Q`. See [`psa_table`].
pub fn psa(metric: &FiniteMetric, q: &Queries) -> Result<Selection, DxError> {
    psa_table(&PairTable::new(metric, q)?)
}

/// PSA (Algorithm 3) with privq's conventions (`docs/src/dx.md`, "PSA as
/// implemented"), each iteration computed by the closed form
/// `c_k = c'_k·max_{p: ΔQ_k(p)>0} S(p)/d(p)` (steps 2 and 3 combined): constant rows
/// get `c = 0`; a query whose separating pair is exhausted is blocked; saturated
/// residues are clamped to 0; at most `K + 1` iterations; a final guard rescales
/// `c` if round-off left the Theorem 1 ratio above 1.
pub fn psa_table(t: &PairTable) -> Result<Selection, DxError> {
    let kq = t.queries();
    let single = t.single_scales();
    let mut active: Vec<bool> = single.iter().map(|&c| c > 0.0).collect();
    let mut acc = vec![0.0f64; kq];
    let mut d = t.d.clone();
    let mut cprime = vec![0.0f64; kq];
    let mut c = vec![0.0f64; kq];
    let mut s = vec![0.0f64; t.len()];
    let mut iterations = 0;
    while iterations < kq + 1 {
        iterations += 1;
        // Step 1, with blocking of exhausted queries.
        cprime.iter_mut().for_each(|v| *v = 0.0);
        for p in 0..t.len() {
            let (_, _, dq) = t.pair(p);
            for k in (0..kq).filter(|&k| active[k]) {
                cprime[k] = cprime[k].max(ratio(dq[k], d[p]));
            }
        }
        for k in 0..kq {
            if active[k] && cprime[k].is_infinite() {
                active[k] = false;
            }
        }
        if !active.iter().any(|&a| a) {
            break;
        }
        // Steps 2–3 in closed form.
        for (p, sp) in s.iter_mut().enumerate() {
            let (_, _, dq) = t.pair(p);
            *sp = (0..kq)
                .filter(|&k| active[k])
                .map(|k| dq[k] / cprime[k])
                .sum();
        }
        c.iter_mut().for_each(|v| *v = 0.0);
        for p in 0..t.len() {
            let (_, _, dq) = t.pair(p);
            let load = ratio(s[p], d[p]);
            for k in (0..kq).filter(|&k| active[k] && dq[k] > 0.0) {
                c[k] = c[k].max(load);
            }
        }
        for k in (0..kq).filter(|&k| active[k]) {
            c[k] *= cprime[k];
        }
        // Step 4 with the saturation clamp; step 5.
        for p in 0..t.len() {
            let (_, d0, dq) = t.pair(p);
            let used: f64 = (0..kq).filter(|&k| active[k]).map(|k| dq[k] / c[k]).sum();
            d[p] -= used;
            if d[p] <= SATURATION_TOL * d0 {
                d[p] = 0.0;
            }
        }
        for k in (0..kq).filter(|&k| active[k]) {
            acc[k] += 1.0 / c[k];
        }
    }
    let mut out: Vec<f64> = acc
        .iter()
        .zip(&single)
        .map(|(&r, &c1)| if c1 == 0.0 { 0.0 } else { 1.0 / r })
        .collect();
    out = guard(out, |c| t.worst_ratio(c));
    finite(out, iterations)
}

/// The single-query improvement factor `(Δ^q_1/ε)/c` with `ε = min d` (§4.1);
/// `+∞` for `c = 0` (privq's convention for a query that needs no noise;
/// `docs/src/dx.md`).
pub fn improvement_factor(baseline: f64, c: f64) -> f64 {
    if c == 0.0 {
        f64::INFINITY
    } else {
        baseline / c
    }
}

/// `IF(Q) = (Π_k (Δ^Q_1/ε)/c_k)^{1/K}`, the geometric-mean improvement (§4.2).
pub fn improvement_factor_multi(
    metric: &FiniteMetric,
    q: &Queries,
    c: &[f64],
) -> Result<f64, DxError> {
    let b = baseline_scale(metric, q)?;
    let k = c.len() as f64;
    Ok((c
        .iter()
        .map(|&ck| improvement_factor(b, ck).ln())
        .sum::<f64>()
        / k)
        .exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> FiniteMetric {
        FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).unwrap()
    }

    fn q(rows: &[&[f64]]) -> Queries {
        Queries::new(rows.iter().map(|r| r.to_vec()).collect()).unwrap()
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "{a:?} vs {b:?}");
        }
    }

    /// Hand-computed vectors (Algorithm 3 worked by hand on three points on a line at
    /// 0, 1 and 3): PSA c, iterations, Strategy 1 and 2 c, IFs.
    #[test]
    fn psa_vectors() {
        use std::f64::consts::SQRT_2;
        type Row<'a> = (
            &'a [&'a [f64]],
            &'a [f64],
            usize,
            &'a [f64],
            &'a [f64],
            [f64; 3],
        );
        let cases: [Row; 5] = [
            (
                &[&[1.0, 0.0, 0.0], &[0.0, 0.0, 1.0]],
                &[1.0, 0.5],
                2,
                &[2.0, 1.0],
                &[1.0, 1.0],
                [SQRT_2, 2.0, 2.0 * SQRT_2],
            ),
            (
                &[&[1.0, 0.0, 0.0], &[0.0, 1.0, 0.0], &[0.0, 0.0, 1.0]],
                &[2.0, 2.0, 2.0 / 3.0],
                3,
                &[3.0, 3.0, 1.5],
                &[2.0, 2.0, 2.0],
                [0.8399, 1.0, 1.4422],
            ),
            (
                &[&[1.0, 1.0, 0.0], &[0.0, 1.0, 1.0]],
                &[0.5, 1.0],
                2,
                &[1.0, 2.0],
                &[1.0, 1.0],
                [SQRT_2, 2.0, 2.0 * SQRT_2],
            ),
            (
                &[&[0.0, 1.0, 3.0]],
                &[1.0],
                2,
                &[1.0],
                &[1.0],
                [3.0, 3.0, 3.0],
            ),
            (
                &[&[1.0, 0.0, 0.0], &[2.0, 0.0, 0.0]],
                &[2.0, 4.0],
                2,
                &[2.0, 4.0],
                &[3.0, 3.0],
                [1.0607, 1.0, 1.0607],
            ),
        ];
        for (rows, c3, iters, c1, c2, ifs) in cases {
            let m = q(rows);
            let t = PairTable::new(&line(), &m).unwrap();
            let s3 = psa_table(&t).unwrap();
            close(&s3.scales, c3);
            assert_eq!(s3.iterations, iters);
            let s1 = strategy1(&t).unwrap();
            close(&s1.scales, c1);
            let s2 = strategy2(&t).unwrap();
            close(&s2.scales, c2);
            for (s, want) in [s1, s2, s3].iter().zip(ifs) {
                let got = improvement_factor_multi(&line(), &m, &s.scales).unwrap();
                assert!((got - want).abs() < 1e-4, "IF {got} vs {want}");
                assert!(t.worst_ratio(&s.scales) <= 1.0);
            }
        }
    }

    /// The literal Algorithm 3 (K × P tensor d^k) agrees with the closed form.
    #[test]
    fn literal_tensor_version_agrees() {
        use rand_core::Rng;
        let mut rng = crate::seeded_rng(5);
        let pts: Vec<[f64; 2]> = (0..12)
            .map(|_| [rng.next_u32() as f64 / 4e7, rng.next_u32() as f64 / 4e7])
            .collect();
        let metric = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        for binary in [false, true] {
            let rows: Vec<Vec<f64>> = (0..4)
                .map(|_| {
                    (0..12)
                        .map(|_| {
                            let u = rng.next_u32() as f64 / 4294967296.0;
                            if binary { u.round() } else { u }
                        })
                        .collect()
                })
                .collect();
            let m = Queries::new(rows).unwrap();
            let t = PairTable::new(&metric, &m).unwrap();
            close(&psa_table(&t).unwrap().scales, &literal_psa(&t));
        }
    }

    fn literal_psa(t: &PairTable) -> Vec<f64> {
        let kq = t.queries();
        let mut d = t.d.clone();
        let mut r = vec![0.0; kq];
        let single = t.single_scales();
        let mut live: Vec<bool> = single.iter().map(|&c| c > 0.0).collect();
        for _ in 0..=kq {
            let mut cp = vec![0.0f64; kq];
            for p in 0..t.len() {
                for k in 0..kq {
                    if live[k] {
                        cp[k] = cp[k].max(ratio(t.pair(p).2[k], d[p]));
                    }
                }
            }
            for k in 0..kq {
                if cp[k].is_infinite() {
                    live[k] = false;
                }
            }
            if !live.contains(&true) {
                break;
            }
            let mut c = vec![0.0f64; kq];
            for p in 0..t.len() {
                let dq = t.pair(p).2;
                let s: f64 = (0..kq).filter(|&l| live[l]).map(|l| dq[l] / cp[l]).sum();
                for k in (0..kq).filter(|&k| live[k]) {
                    let dk = if s == 0.0 {
                        0.0
                    } else {
                        d[p] * (dq[k] / cp[k]) / s
                    };
                    c[k] = c[k].max(ratio(dq[k], dk));
                }
            }
            for p in 0..t.len() {
                let dq = t.pair(p).2;
                d[p] -= (0..kq)
                    .filter(|&k| live[k])
                    .map(|k| dq[k] / c[k])
                    .sum::<f64>();
                if d[p] <= SATURATION_TOL * t.d[p] {
                    d[p] = 0.0;
                }
            }
            for k in (0..kq).filter(|&k| live[k]) {
                r[k] += 1.0 / c[k];
            }
        }
        r.iter()
            .zip(&single)
            .map(|(&x, &s)| if s == 0.0 { 0.0 } else { 1.0 / x })
            .collect()
    }

    #[test]
    fn constant_rows_and_uniform_metric() {
        // d ≡ ε recovers the standard Laplace scale Δ^Q_1/ε under Strategy 2.
        let d = FiniteMetric::per_element(&[0.25; 4]).unwrap();
        let m = q(&[&[0.0, 1.0, 0.5, 0.2], &[1.0, 0.0, 0.0, 0.3], &[0.7; 4]]);
        let t = PairTable::new(&d, &m).unwrap();
        let s2 = strategy2(&t).unwrap();
        let base = baseline_scale(&d, &m).unwrap();
        close(&s2.scales, &[base; 3]);
        let s3 = psa_table(&t).unwrap();
        assert_eq!(s3.scales[2], 0.0);
        assert!(improvement_factor(1.0, 0.0).is_infinite());
        assert_eq!(single_query_scale(&d, &[0.0, 1.0, 0.0, 0.0]).unwrap(), 2.0);
        assert!(matches!(
            single_query_scale(&d, &[0.0, f64::MAX, -f64::MAX, 0.0]),
            Err(DxError::InfiniteNoise { .. })
        ));
    }

    /// The paper's Example 1 (§3; ε0 = 0.1, ε1 = 1): exact scales for the min and max
    /// variants of eq. (3), and the baseline 10.
    #[test]
    fn example1_scales() {
        use crate::dx::Combine;
        let elements: Vec<Vec<usize>> = (0..8)
            .map(|i| vec![(i >> 2) & 1, (i >> 1) & 1, i & 1])
            .collect();
        let budgets = vec![vec![1.0, 1.0], vec![0.1, 1.0], vec![1.0, 1.0]];
        let dmin = FiniteMetric::attribute_budget(&elements, &budgets, Combine::Min).unwrap();
        let dmax = FiniteMetric::attribute_budget(&elements, &budgets, Combine::Max).unwrap();
        let cases: [(&[f64], f64); 5] = [
            (&[0., 0., 1., 1., 0., 0., 1., 1.], 10.0), // (N)
            (&[1., 1., 1., 1., 0., 0., 0., 0.], 1.0),  // (M)
            (&[1., 1., 0., 0., 1., 1., 0., 0.], 10.0), // (Y)
            (&[1., 0., 1., 0., 0., 0., 0., 0.], 1.0),  // (MA)
            (&[1., 0., 0., 0., 0., 0., 0., 0.], 10.0), // (MYA)
        ];
        for (qv, want) in cases {
            assert!((single_query_scale(&dmin, qv).unwrap() - want).abs() < 1e-12);
            assert!((single_query_scale(&dmax, qv).unwrap() - 1.0).abs() < 1e-12);
            let b = baseline_scale(&dmin, &Queries::new(vec![qv.to_vec()]).unwrap()).unwrap();
            assert!((b - 10.0).abs() < 1e-12);
        }
        // With ε1 = ∞ non-sensitive queries become noiseless (c = 0).
        let inf = vec![
            vec![f64::INFINITY; 2],
            vec![0.1, f64::INFINITY],
            vec![f64::INFINITY; 2],
        ];
        let dinf = FiniteMetric::attribute_budget(&elements, &inf, Combine::Min).unwrap();
        assert_eq!(
            single_query_scale(&dinf, &[1., 1., 1., 1., 0., 0., 0., 0.]).unwrap(),
            0.0
        );
        assert!(
            (single_query_scale(&dinf, &[0., 0., 1., 1., 0., 0., 1., 1.]).unwrap() - 10.0).abs()
                < 1e-12
        );
    }
}
