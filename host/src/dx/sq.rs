//! Statistical queries (Appendix C): the universe-map mechanism (12), the
//! Theorem 10 check and the separable solver of problem (14); the closed form for
//! ±1 attributes is in `docs/src/dx.md` ("Beyond the paper").

use super::lipschitz::{Envelope, best_lipschitz};
use super::{DxError, DxLaplace, FiniteMetric, Queries};

/// Mechanism (12) `Z = c ⊙ q(x') + Y` for a statistical query averaged over `n`
/// rows, given the effective per-element values `ṽ(u) = c ⊙ q(u')` (`effective[u]`,
/// length k) and `c`. It is the d_X Laplace mechanism on the histogram with
/// `Q̃_{k,u} = ṽ_k(u)/n`, so Theorem 10 is Theorem 1's check on that matrix.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::dx::{FiniteMetric, sq};
/// use privq_host::{Epsilon, seeded_rng};
/// let d = FiniteMetric::euclidean(&[[-1.0], [1.0]], 0.1)?; // d(−1, +1) = 0.2
/// // n = 100: the ±1 closed form of (14) gives c = 2/(n·ε) = 0.1 and u' = u·n·ε/2, i.e. ṽ = u.
/// let mech = sq::universe_map_mechanism(&d, &[vec![-1.0], vec![1.0]], &[0.1], 100)?;
/// let mut accountant = Accountant::pure(Epsilon::new(1, 4)?); // charges d = 0.2, rounded up to 2⁻²⁰
/// let z = mech.release(&[30, 70], &mut accountant, &mut seeded_rng(1))?; // mean 0.4 plus noise
/// assert_eq!(z.len(), 1);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
pub fn universe_map_mechanism(
    metric: &FiniteMetric,
    effective: &[Vec<f64>],
    c: &[f64],
    n: u64,
) -> Result<DxLaplace, DxError> {
    if effective.len() != metric.len() || n == 0 || effective.iter().any(|v| v.len() != c.len()) {
        return Err(DxError::Dimension(
            "one k-vector per universe element, k scales, n ≥ 1".into(),
        ));
    }
    let nf = n as f64;
    let rows = (0..c.len())
        .map(|k| effective.iter().map(|v| v[k] / nf).collect())
        .collect();
    DxLaplace::new(metric, Queries::new(rows)?, c.to_vec())
}

/// One coordinate's solution of (14).
#[derive(Debug, Clone, PartialEq)]
pub struct Coordinate {
    /// The noise scale `c_i*` (0: answer the constant, no noise).
    pub c: f64,
    /// Effective values `c_i·u'_i(a)` per value `a` (constant when `c = 0`).
    pub effective: Vec<f64>,
    /// `u'_i(a)` (None when `c = 0`).
    pub mapped: Option<Vec<f64>>,
    /// The objective `max_a |c u'(a) − a| + c`.
    pub objective: f64,
}

/// Solves (14) for one coordinate with values `values` and metric `d_i` over them:
/// `min_{c, u'} max_a |c·u'_a − a| + c` s.t. `|u'_a − u'_b| ≤ n·d_i(a, b)`. For
/// fixed `c` the inner problem is a Lipschitz approximation with error `δ*(c)`, and
/// `δ*(c) + c` is convex piecewise-linear, so the envelope breakpoints are exact.
pub fn solve_coordinate(values: &[f64], d_i: &FiniteMetric, n: u64) -> Result<Coordinate, DxError> {
    if values.len() != d_i.len() || n == 0 || values.iter().any(|v| !v.is_finite()) {
        return Err(DxError::Dimension(
            "one finite value per metric element and n ≥ 1".into(),
        ));
    }
    let nf = n as f64;
    let env = Envelope::new(
        d_i.finite_pairs()
            .map(|(a, b, d)| ((values[a] - values[b]).abs() / 2.0, nf * d / 2.0)),
    );
    let (c, objective) = env.minimize(1.0, |c| c);
    let (_, effective) = best_lipschitz(d_i, values, c * nf);
    let mapped = (c > 0.0).then(|| effective.iter().map(|v| v / c).collect());
    Ok(Coordinate {
        c,
        effective,
        mapped,
        objective,
    })
}

/// The separable relaxation (14) of a d-way marginal on `X = Π X_i` with
/// `d_X = Σ_i d_i`: one independent problem per coordinate.
pub fn solve_separable(
    coords: &[(Vec<f64>, FiniteMetric)],
    n: u64,
) -> Result<Vec<Coordinate>, DxError> {
    coords
        .iter()
        .map(|(v, d)| solve_coordinate(v, d, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dx::check::check_statistical;
    use crate::seeded_rng;

    /// Problem (14)'s closed form (privq's derivation, `docs/src/dx.md`):
    /// X_i = {−1, +1}, d_i = ε·[·]: c* = 2/(nε) if nε ≥ 2 else 0, and
    /// the optimum is min(1, 2/(nε)).
    #[test]
    fn plus_minus_one_closed_form() {
        for (n, eps) in [(100u64, 0.1), (1000, 0.05), (10, 0.1), (4, 0.25), (7, 1.0)] {
            let d = FiniteMetric::per_element(&[eps / 2.0, eps / 2.0]).unwrap();
            let sol = solve_coordinate(&[-1.0, 1.0], &d, n).unwrap();
            let ne = n as f64 * eps;
            let want_c = if ne >= 2.0 { 2.0 / ne } else { 0.0 };
            assert!((sol.c - want_c).abs() < 1e-12, "n={n} eps={eps}: {}", sol.c);
            assert!((sol.objective - (2.0 / ne).min(1.0)).abs() < 1e-12);
            if let Some(m) = &sol.mapped {
                assert!((m[1] - ne / 2.0).abs() < 1e-9 && (m[0] + ne / 2.0).abs() < 1e-9);
                let mapped: Vec<Vec<f64>> = m.iter().map(|&v| vec![v]).collect();
                assert!(check_statistical(&d, &mapped, n).unwrap().worst <= 1.0 + 1e-12);
            }
        }
    }

    #[test]
    fn marginal_release_checks_theorem10() {
        let d = FiniteMetric::per_element(&[0.05, 0.05]).unwrap();
        let sol = solve_separable(&[(vec![-1.0, 1.0], d.clone())], 100).unwrap();
        let eff: Vec<Vec<f64>> = sol[0].effective.iter().map(|&v| vec![v]).collect();
        let mech = universe_map_mechanism(&d, &eff, &[sol[0].c], 100).unwrap();
        assert!((mech.scale(0) - 0.2).abs() < 0.002);
        assert_eq!(mech.sample(&[50, 50], &mut seeded_rng(0)).unwrap().len(), 1);
        // Too little noise for the mapped values: refused.
        assert!(universe_map_mechanism(&d, &eff, &[0.1], 100).is_err());
    }
}
