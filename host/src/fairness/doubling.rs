//! The metric side of §8.5: doubling dimension (Def 8.5.3), well-separation
//! (Def 8.5.4), and the ε-net extension of Remark 8.5.6 for metrics that are not
//! well separated.

use super::{FairnessError, Mapping, exponential_mapping};
use crate::dx::FiniteMetric;

/// The largest metric [`doubling_dimension`] examines (its work grows like
/// `n³·log(diameter / min distance)`).
pub const MAX_DOUBLING_POINTS: usize = 400;

/// An upper estimate of the doubling dimension (Def 8.5.3): over the balls
/// `B(x, R)` at every point and at radii `R` on a doubling ladder from the smallest
/// to the largest distance, the greedy `R/2`-net of the ball is a cover by balls of
/// radius `R/2`, so `k = ⌈log₂ max |cover|⌉` bounds the dimension from above (the
/// exact minimum cover is NP-hard; the greedy net is within a constant factor of the
/// dimension).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Doubling {
    /// `⌈log₂ max |cover|⌉`.
    pub dimension: u32,
    /// The largest cover found.
    pub cover: usize,
    /// Its ball: the centre and the radius.
    pub ball: (usize, f64),
}

/// Estimates the doubling dimension of a metric of at most
/// [`MAX_DOUBLING_POINTS`] points (a typed error beyond).
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::doubling_dimension;
/// // 9 points on a line: dimension 1 or 2 (greedy covers are not minimal).
/// let line: Vec<[f64; 1]> = (0..9).map(|i| [i as f64]).collect();
/// let d = FiniteMetric::euclidean(&line, 1.0)?;
/// assert!(doubling_dimension(&d)?.dimension <= 2);
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
pub fn doubling_dimension(metric: &FiniteMetric) -> Result<Doubling, FairnessError> {
    let n = metric.len();
    if n > MAX_DOUBLING_POINTS {
        return Err(FairnessError::InvalidParameter(format!(
            "{n} points: the doubling-dimension estimate takes at most {MAX_DOUBLING_POINTS}"
        )));
    }
    let positive = (0..n)
        .flat_map(|x| (0..n).map(move |y| (x, y)))
        .filter(|&(x, y)| x != y);
    let (lo, hi) = positive.fold((f64::INFINITY, 0.0f64), |(lo, hi), (x, y)| {
        let d = metric.get(x, y);
        (lo.min(d), if d.is_finite() { hi.max(d) } else { hi })
    });
    let mut best = Doubling {
        dimension: 0,
        cover: 1,
        ball: (0, 0.0),
    };
    if n < 2 || !lo.is_finite() {
        return Ok(best);
    }
    let mut radius = lo;
    while radius <= 2.0 * hi {
        for x in 0..n {
            let ball: Vec<usize> = (0..n).filter(|&y| metric.get(x, y) <= radius).collect();
            let cover = greedy_net(metric, &ball, radius / 2.0).len();
            if cover > best.cover {
                best = Doubling {
                    dimension: (cover as f64).log2().ceil() as u32,
                    cover,
                    ball: (x, radius),
                };
            }
        }
        radius *= 2.0;
    }
    Ok(best)
}

/// A greedy `r`-net of `points`: pairwise more than `r` apart, and every point within
/// `r` of one of them (taken in order, so the result is deterministic).
fn greedy_net(metric: &FiniteMetric, points: &[usize], r: f64) -> Vec<usize> {
    let mut net: Vec<usize> = Vec::new();
    for &p in points {
        if net.iter().all(|&c| metric.get(p, c) > r) {
            net.push(p);
        }
    }
    net
}

/// Whether `|B(x, ε)| = 1` for every x: no two points within `epsilon`
/// (Def 8.5.4, closed balls).
pub fn is_well_separated(metric: &FiniteMetric, epsilon: f64) -> bool {
    let n = metric.len();
    (0..n).all(|x| (0..n).all(|y| x == y || metric.get(x, y) > epsilon))
}

/// The exponential mapping through an `ε`-net (Remark 8.5.6): a greedy ε-net `V′`
/// (points pairwise more than ε apart, so well separated), every x sent to its
/// nearest net point `π(x)` (ties to the earliest), then to
/// `E(π(x))` with weights `e^{−d/scale}` over `V′`. Outcomes are the points of V
/// (zero off the net). Since `d(π(x), π(x′)) ≤ d(x, x′) + 2ε`, the mapping is
/// (D_∞, d + 2ε)-Lipschitz with `scale = 2`, and each individual's expected
/// distance exceeds its net point's by at most ε.
///
/// Returns the mapping and the net.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{Divergence, net_mapping};
/// let pts: Vec<[f64; 1]> = (0..20).map(|i| [i as f64 * 0.05]).collect();
/// let d = FiniteMetric::euclidean(&pts, 1.0)?;
/// let (m, net) = net_mapping(&d, 0.2, 2.0)?;
/// assert!(net.len() < 20);
/// // D_∞ ≤ d + 2ε for every pair.
/// for x in 0..20 {
///     for y in 0..20 {
///         assert!(Divergence::Inf.between(m.row(x), m.row(y)) <= d.get(x, y) + 0.4 + 1e-9);
///     }
/// }
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
pub fn net_mapping(
    metric: &FiniteMetric,
    epsilon: f64,
    scale: f64,
) -> Result<(Mapping, Vec<usize>), FairnessError> {
    if !(epsilon >= 0.0 && epsilon.is_finite()) {
        return Err(FairnessError::InvalidParameter(format!(
            "the net radius epsilon = {epsilon} must be finite and non-negative"
        )));
    }
    let n = metric.len();
    let all: Vec<usize> = (0..n).collect();
    let net = greedy_net(metric, &all, epsilon);
    let sub: Vec<f64> = net
        .iter()
        .flat_map(|&a| net.iter().map(move |&b| metric.get(a, b)))
        .collect();
    let on_net = FiniteMetric::from_matrix(net.len(), sub)?;
    let inner = exponential_mapping(&on_net, scale)?;
    let mut probs = vec![0.0; n * n];
    for x in 0..n {
        let nearest = (0..net.len())
            .min_by(|&i, &j| metric.get(x, net[i]).total_cmp(&metric.get(x, net[j])))
            .unwrap_or(0);
        for (j, &p) in inner.row(nearest).iter().enumerate() {
            probs[x * n + net[j]] = p;
        }
    }
    Ok((Mapping::from_solution(n, n, &probs), net))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairness::{Divergence, expected_distance};

    fn grid(side: usize, k: usize) -> FiniteMetric {
        let pts: Vec<Vec<f64>> = (0..side.pow(k as u32))
            .map(|i| {
                (0..k)
                    .map(|j| ((i / side.pow(j as u32)) % side) as f64)
                    .collect()
            })
            .collect();
        FiniteMetric::euclidean(&pts, 1.0).unwrap()
    }

    #[test]
    fn dimension_grows_with_the_grid_dimension_not_its_size() {
        let line = doubling_dimension(&grid(30, 1)).unwrap().dimension;
        let plane = doubling_dimension(&grid(12, 2)).unwrap().dimension;
        assert!(line <= 2, "line {line}");
        assert!(plane > line && plane <= 4, "plane {plane}, line {line}");
        assert_eq!(
            doubling_dimension(&grid(60, 1)).unwrap().dimension,
            line,
            "a longer line has the same dimension"
        );
        // A star-like uniform metric (all distances 1): every ball of radius ≥ 1 is
        // everything and needs n half-balls.
        let uniform = FiniteMetric::from_matrix(
            16,
            (0..256)
                .map(|i| if i / 16 == i % 16 { 0.0 } else { 1.0 })
                .collect(),
        )
        .unwrap();
        assert_eq!(doubling_dimension(&uniform).unwrap().dimension, 4);
        let big = grid(21, 2);
        assert!(doubling_dimension(&big).is_err());
    }

    #[test]
    fn net_mapping_is_lipschitz_up_to_two_epsilon_and_costs_at_most_epsilon_more() {
        // 1-d points 0.05 apart: not well separated at 0.2, the net is.
        let pts: Vec<[f64; 1]> = (0..40).map(|i| [i as f64 * 0.05]).collect();
        let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        let eps = 0.2;
        assert!(!is_well_separated(&d, eps));
        let (m, net) = net_mapping(&d, eps, 2.0).unwrap();
        let dr = &d;
        let sub: Vec<f64> = net
            .iter()
            .flat_map(|&a| net.iter().map(move |&b| dr.get(a, b)))
            .collect();
        let on_net = FiniteMetric::from_matrix(net.len(), sub).unwrap();
        assert!(is_well_separated(&on_net, eps));
        for x in 0..40 {
            assert!((m.row(x).iter().sum::<f64>() - 1.0).abs() < 1e-12);
            for y in 0..40 {
                let div = Divergence::Inf.between(m.row(x), m.row(y));
                assert!(div <= d.get(x, y) + 2.0 * eps + 1e-9, "{x} {y}: {div}");
            }
        }
        // Loss: d(x, y) ≤ d(x, π(x)) + d(π(x), y), so at most ε more than the worst
        // net point's own expected distance.
        let e = exponential_mapping(&on_net, 2.0).unwrap();
        let worst = (0..net.len())
            .map(|c| {
                (0..net.len())
                    .map(|j| e.row(c)[j] * on_net.get(c, j))
                    .sum::<f64>()
            })
            .fold(0.0, f64::max);
        let loss = expected_distance(&d, &m).unwrap();
        assert!(loss <= worst + eps + 1e-9, "{loss} vs {worst}");
        assert!(net_mapping(&d, -1.0, 2.0).is_err());
    }
}
