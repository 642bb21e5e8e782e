//! The exponential-mechanism mapping of thesis §8.5 (Def 8.5.1), corrected for
//! TYPO-27 (`docs/src/corrections.md`).

use super::{FairnessError, Mapping};
use crate::dx::FiniteMetric;

/// The scale that makes the mapping provably (D_∞, d)-Lipschitz (the default).
pub const LIPSCHITZ_SCALE: f64 = 2.0;

/// The thesis-literal scale of Def 8.5.1. Lemma 8.5.2 claims (D_∞, d)-Lipschitz,
/// but the normaliser `Z_x` moves too: only `D_∞ ≤ 2d` holds.
pub const THESIS_SCALE: f64 = 1.0;

/// The largest `d/scale` the exponential mapping accepts: `e^{−700} ≈ 10⁻³⁰⁴` is
/// still a normal f64 (the smallest normal is `e^{−708.4}`), so no weight underflows.
pub const MAX_EXPONENT: f64 = 700.0;

/// `E: V → Δ(V)`, `E(x)(y) = e^{−d(x,y)/scale} / Z_x` (Def 8.5.1 with a scale).
///
/// With `scale = 2` both the numerator and `Z_x` move by at most `e^{d(x,x')/2}`
/// between x and x', so `D_∞(E(x), E(x')) ≤ d(x, x')`. With `scale = 1` (the
/// thesis' choice) only `≤ 2 d(x, x')` holds. Cost O(|V|²).
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{Divergence, LIPSCHITZ_SCALE, exponential_mapping};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [2.5]], 1.0)?;
/// let e = exponential_mapping(&d, LIPSCHITZ_SCALE)?;
/// assert!(e.lipschitz_ratio(&d, Divergence::Inf) <= 1.0 + 1e-12);
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
pub fn exponential_mapping(metric: &FiniteMetric, scale: f64) -> Result<Mapping, FairnessError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(FairnessError::InvalidParameter(format!(
            "scale must be positive and finite, got {scale}"
        )));
    }
    let n = metric.len();
    // e^{−d/scale} underflows (to a subnormal, then 0) once d/scale exceeds ~708:
    // far individuals would then get exactly 0 instead of a tiny positive weight,
    // the computed mapping degenerates (to the identity at worst, D_∞ = ∞) and the
    // Lipschitz bound no longer holds for it. Refuse rather than release it.
    let worst = (0..n)
        .flat_map(|x| metric.row(x).iter().copied())
        .filter(|d| d.is_finite())
        .fold(0.0f64, f64::max)
        / scale;
    if worst > MAX_EXPONENT {
        return Err(FairnessError::InvalidParameter(format!(
            "the largest finite distance is {worst:.1} times the scale {scale}, more than \
             {MAX_EXPONENT}: the weights exp(-d/scale) underflow in floating point and the \
             computed mapping would not be Lipschitz (use a larger scale or rescale the \
             distances)"
        )));
    }
    let mut probs = Vec::with_capacity(n * n);
    for x in 0..n {
        // d(x, x) = 0 is the row's minimum: e^{−d/scale} ≤ 1, no overflow.
        let row: Vec<f64> = metric.row(x).iter().map(|d| (-d / scale).exp()).collect();
        let z: f64 = row.iter().sum();
        probs.extend(row.iter().map(|w| w / z));
    }
    Ok(Mapping::from_solution(n, n, &probs))
}

/// The natural loss of a mapping `V → Δ(V)`: `E_{x∼V} E_{y∼μ_x} d(x, y)`, uniform
/// over V (`+∞` if some mass sits at infinite distance).
pub fn expected_distance(metric: &FiniteMetric, mapping: &Mapping) -> Result<f64, FairnessError> {
    let n = metric.len();
    if mapping.individuals() != n || mapping.outcomes() != n {
        return Err(FairnessError::Dimension(format!(
            "a mapping V → Δ(V) on {n} individuals needs {n} × {n} entries"
        )));
    }
    let total: f64 = (0..n)
        .map(|x| {
            mapping
                .row(x)
                .iter()
                .zip(metric.row(x))
                .filter(|(p, _)| **p > 0.0)
                .map(|(p, d)| p * d)
                .sum::<f64>()
        })
        .sum();
    Ok(total / n as f64)
}
