//! Post-processing of frequency estimates (free of privacy cost).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How to post-process a vector of unbiased frequency estimates. Every option is a
/// function of the released estimates only, so it costs no privacy; all but
/// `None` trade the unbiasedness for lower error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PostProcess {
    /// Keep the unbiased estimates.
    #[default]
    None,
    /// Clamp each estimate to `[0, 1]`.
    Clip,
    /// Replace negative estimates by 0.
    NonNegative,
    /// Euclidean projection onto the probability simplex
    /// `{f : f ≥ 0, Σ f = 1}` (the closest distribution in L2).
    Simplex,
}

impl PostProcess {
    /// Applies the post-processing to `f`.
    pub fn apply(self, f: &[f64]) -> Vec<f64> {
        match self {
            PostProcess::None => f.to_vec(),
            PostProcess::Clip => f.iter().map(|x| x.clamp(0.0, 1.0)).collect(),
            PostProcess::NonNegative => f.iter().map(|x| x.max(0.0)).collect(),
            PostProcess::Simplex => project_to_simplex(f),
        }
    }
}

impl FromStr for PostProcess {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(PostProcess::None),
            "clip" => Ok(PostProcess::Clip),
            "nonneg" | "non-negative" => Ok(PostProcess::NonNegative),
            "simplex" => Ok(PostProcess::Simplex),
            _ => Err(format!(
                "unknown post-processing {s:?} (none, clip, nonneg, simplex)"
            )),
        }
    }
}

/// Euclidean projection onto the probability simplex: `max(f − θ, 0)` with the
/// threshold `θ` chosen so the result sums to 1 (sort-based, O(d log d)).
pub fn project_to_simplex(f: &[f64]) -> Vec<f64> {
    if f.is_empty() {
        return Vec::new();
    }
    let mut sorted: Vec<f64> = f
        .iter()
        .map(|x| if x.is_finite() { *x } else { 0.0 })
        .collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut cumulative = 0.0;
    let mut theta = 0.0;
    for (i, &u) in sorted.iter().enumerate() {
        cumulative += u;
        let t = (cumulative - 1.0) / (i as f64 + 1.0);
        if u - t > 0.0 {
            theta = t;
        }
    }
    f.iter().map(|x| (x - theta).max(0.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplex_projection_properties() {
        let p = project_to_simplex(&[0.5, 0.7, -0.2, 0.1]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(p.iter().all(|&x| x >= 0.0));
        assert!((p[1] - p[0] - 0.2).abs() < 1e-12);
        // A point already on the simplex is unchanged.
        let q = project_to_simplex(&[0.25, 0.75]);
        assert!((q[0] - 0.25).abs() < 1e-12 && (q[1] - 0.75).abs() < 1e-12);
        assert_eq!(
            PostProcess::Clip.apply(&[-1.0, 2.0, 0.5]),
            vec![0.0, 1.0, 0.5]
        );
        assert_eq!(
            "simplex".parse::<PostProcess>().unwrap(),
            PostProcess::Simplex
        );
    }
}
