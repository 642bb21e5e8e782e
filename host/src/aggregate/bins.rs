//! Histograms: a group key derived from a numeric column by public bin edges.

use std::fmt;

use super::AggregateError;

/// Public bin edges over a numeric column: a histogram is a count (or any other
/// aggregate) per bin, so a [`Binning`] is a *derived group key* of a
/// [`Query`](super::Query) ([`Query::bin`](super::Query::bin); in SQL
/// `BIN(temp, -20, 0, 20, 50)`).
///
/// Edges `e₀ < e₁ < … < e_k` (at least two, finite, strictly increasing, at most
/// [`Binning::MAX_BINS`] bins) make `k` bins: `[e_i, e_{i+1})`, the last one closed
/// `[e_{k−1}, e_k]`. A value outside `[e₀, e_k]` is **clamped** into the first or the
/// last bin, as [`Bounds`](super::Bounds) clamp a value into its range: no row is
/// dropped for lying outside the edges, and no row's bin depends on anything but its
/// own value. Values and edges are compared as `f64` (both read with correct
/// rounding, so a value written like an edge falls in the bin that edge opens): the
/// bin is a deterministic function of the row, like any other group key, and decides
/// no noise.
///
/// A bin's label is its interval as written from the edges alone (Rust's shortest
/// round-trip form of each `f64`): `"[-20, 0)"`, …, `"[20, 50]"`. The labels are
/// public, so with public groups every bin is released (a bin without rows gets a
/// noisy zero).
///
/// ```
/// use privq_host::aggregate::Binning;
/// let b = Binning::new("temp", &[-20.0, 0.0, 20.0, 50.0])?;
/// assert_eq!(b.labels(), ["[-20, 0)", "[0, 20)", "[20, 50]"]);
/// assert_eq!(b.bin(-3.5), 0);
/// assert_eq!(b.bin(0.0), 1); // a bin holds its left edge
/// assert_eq!(b.bin(50.0), 2); // the last bin is closed
/// assert_eq!((b.bin(-1e9), b.bin(1e9)), (0, 2)); // clamped, never dropped
/// assert!(Binning::new("temp", &[0.0, 0.0, 1.0]).is_err());
/// # Ok::<(), privq_host::aggregate::AggregateError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Binning {
    column: String,
    edges: Vec<f64>,
    labels: Vec<String>,
}

impl Binning {
    /// The most bins one binning may declare (10 000; edges: one more). Checked
    /// before any label is built, so a runaway edge list is refused cheaply.
    pub const MAX_BINS: usize = 10_000;

    /// Bins of `column` between `edges` (see the type's docs for what is refused).
    pub fn new(column: impl Into<String>, edges: &[f64]) -> Result<Self, AggregateError> {
        let column = column.into();
        let refuse = |reason: String| {
            Err(AggregateError::InvalidBins {
                column: column.clone(),
                reason,
            })
        };
        if edges.len() < 2 {
            return refuse(format!(
                "a histogram needs at least two edges (one bin), got {}",
                edges.len()
            ));
        }
        if edges.len() - 1 > Self::MAX_BINS {
            return refuse(format!(
                "{} bins is more than the {} a histogram may have",
                edges.len() - 1,
                Self::MAX_BINS
            ));
        }
        if let Some((i, e)) = edges.iter().enumerate().find(|(_, e)| !e.is_finite()) {
            return refuse(format!("edge {} is {e}, not a finite number", i + 1));
        }
        if let Some(i) = (1..edges.len()).find(|&i| edges[i] <= edges[i - 1]) {
            return refuse(format!(
                "the edges must be strictly increasing: edge {} ({}) is not above edge {} ({})",
                i + 1,
                edges[i],
                i,
                edges[i - 1]
            ));
        }
        let last = edges.len() - 2;
        let labels = edges
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                // `-0` reads as `0`: the label names the interval, not the sign bit.
                let (a, b) = (w[0] + 0.0, w[1] + 0.0);
                if i == last {
                    format!("[{a}, {b}]")
                } else {
                    format!("[{a}, {b})")
                }
            })
            .collect();
        Ok(Binning {
            column,
            edges: edges.to_vec(),
            labels,
        })
    }

    /// The numeric column binned.
    pub fn column(&self) -> &str {
        &self.column
    }

    /// The edges, strictly increasing.
    pub fn edges(&self) -> &[f64] {
        &self.edges
    }

    /// The number of bins (edges − 1).
    pub fn bins(&self) -> usize {
        self.labels.len()
    }

    /// The bins' labels, in edge order.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The bin of a finite value `x` (0-based): the `i` with `e_i ≤ x < e_{i+1}`, the
    /// last bin for `x = e_k`, and clamped into the first or last bin outside.
    pub fn bin(&self, x: f64) -> usize {
        // Edges at or below x; x < e₀ (or NaN, which the table never holds) gives 0.
        let at_or_below = self.edges.partition_point(|&e| e <= x);
        at_or_below.saturating_sub(1).min(self.bins() - 1)
    }
}

impl fmt::Display for Binning {
    /// `BIN(column, e₀, …, e_k)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BIN({}", self.column)?;
        for e in &self.edges {
            write!(f, ", {}", e + 0.0)?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_half_open_with_the_last_closed_and_outliers_clamped() {
        let b = Binning::new("x", &[0.0, 0.1, 0.5, 2.0]).unwrap();
        assert_eq!(b.labels(), ["[0, 0.1)", "[0.1, 0.5)", "[0.5, 2]"]);
        let cases = [
            (-1e300, 0),
            (-0.0, 0),
            (0.0, 0),
            (0.099_999, 0),
            ("0.1".parse().unwrap(), 1),
            (0.499, 1),
            (0.5, 2),
            (2.0, 2),
            (2.000_001, 2),
            (f64::MAX, 2),
        ];
        for (x, bin) in cases {
            assert_eq!(b.bin(x), bin, "{x}");
        }
        assert_eq!(b.to_string(), "BIN(x, 0, 0.1, 0.5, 2)");
        let one = Binning::new("x", &[-0.0, 1.0]).unwrap();
        assert_eq!(one.labels(), ["[0, 1]"]);
        assert_eq!((one.bin(-5.0), one.bin(5.0)), (0, 0));
    }

    #[test]
    fn malformed_edges_are_refused_by_name() {
        let many: Vec<f64> = (0..=Binning::MAX_BINS + 1).map(|i| i as f64).collect();
        let cases: [(&[f64], &str); 7] = [
            (&[], "at least two edges"),
            (&[1.0], "at least two edges"),
            (&[0.0, f64::NAN], "edge 2 is NaN"),
            (&[f64::NEG_INFINITY, 0.0], "edge 1 is -inf"),
            (&[0.0, 2.0, 1.0], "edge 3 (1) is not above edge 2 (2)"),
            (&[0.0, 1.0, 1.0], "strictly increasing"),
            (&many, "more than the 10000"),
        ];
        for (edges, needle) in cases {
            let e = Binning::new("temp", edges).unwrap_err();
            assert!(matches!(e, AggregateError::InvalidBins { .. }), "{e:?}");
            let text = e.to_string();
            assert!(
                text.contains(needle) && text.contains("\"temp\""),
                "{edges:?}: {text}"
            );
        }
        let most: Vec<f64> = (0..=Binning::MAX_BINS).map(|i| i as f64).collect();
        assert_eq!(Binning::new("t", &most).unwrap().bins(), Binning::MAX_BINS);
    }
}
