//! Set functions for the decomposition: coverage (disjunctions over a dataset,
//! Lemma 6.4.1) and graph cuts (§6.4.1). Both are exact oracles; a private release
//! puts noise on top of them.

use super::decompose::{DecomposeError, SetFunction};

/// `f(S) = (1/n)·|{x ∈ D : x_i = 1 for some i ∈ S}|`: the monotone disjunction `d_S`
/// on a dataset of records over `d` binary attributes (a monotone submodular
/// coverage function with values in [0, 1]). Conjunctions are `c_S(D) = 1 − f(S)`
/// on the negated records ([`Coverage::negated`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    d: u32,
    records: Vec<(u64, u64)>,
    n: u64,
}

impl Coverage {
    /// From `(record as a bit mask, count)` pairs over `d ≤ 64` attributes.
    pub fn new(d: u32, records: &[(u64, u64)]) -> Result<Self, DecomposeError> {
        if d == 0 || d > 64 {
            return Err(DecomposeError::InvalidParameter(format!(
                "d = {d}: 1 to 64 attributes are supported"
            )));
        }
        let wide = |m: u64| d < 64 && m >> d != 0;
        if let Some((m, _)) = records.iter().find(|(m, _)| wide(*m)) {
            return Err(DecomposeError::InvalidParameter(format!(
                "record {m:#b} has bits beyond d = {d}"
            )));
        }
        let n = records.iter().map(|&(_, c)| c).sum::<u64>();
        if n == 0 {
            return Err(DecomposeError::InvalidParameter("no records".into()));
        }
        Ok(Coverage {
            d,
            records: records.iter().copied().filter(|&(_, c)| c > 0).collect(),
            n,
        })
    }

    /// From counts over `{0,1}^d` (cell index = record), e.g. a binary histogram.
    pub fn from_counts(counts: &[u64]) -> Result<Self, DecomposeError> {
        let cells = counts.len();
        if !cells.is_power_of_two() || cells < 2 {
            return Err(DecomposeError::InvalidParameter(format!(
                "{cells} cells: a binary universe has 2^d ≥ 2 cells"
            )));
        }
        let records: Vec<(u64, u64)> = counts
            .iter()
            .enumerate()
            .map(|(u, &c)| (u as u64, c))
            .collect();
        Self::new(cells.trailing_zeros(), &records)
    }

    /// The same records with every attribute flipped: its `1 − f(S)` is the
    /// monotone conjunction `c_S` on the original records.
    pub fn negated(&self) -> Self {
        let all = if self.d == 64 {
            u64::MAX
        } else {
            (1u64 << self.d) - 1
        };
        Coverage {
            d: self.d,
            records: self.records.iter().map(|&(m, c)| (!m & all, c)).collect(),
            n: self.n,
        }
    }

    /// `E_S[f(S ∪ forced)]` for S drawn from the product distribution with
    /// `P[i ∈ S] = p[i]` on the `free` elements (all others out): exactly
    /// `1 − (1/n)·Σ_x 1[x ∩ forced = ∅]·Π_{i ∈ free, x_i = 1}(1 − p_i)` — the closed
    /// form that replaces Monte Carlo for disjunctions (one statistical query).
    pub fn product_mean(&self, forced: u64, free: u64, p: &[f64]) -> f64 {
        let missed: f64 = self
            .records
            .iter()
            .filter(|(m, _)| m & forced == 0)
            .map(|&(m, c)| {
                let hit = m & free;
                let stay: f64 = (0..self.d)
                    .filter(|&i| hit >> i & 1 == 1)
                    .map(|i| 1.0 - p[i as usize])
                    .product();
                c as f64 * stay
            })
            .sum();
        1.0 - missed / self.n as f64
    }
}

impl SetFunction for Coverage {
    fn ground(&self) -> u32 {
        self.d
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        let hit: u64 = self
            .records
            .iter()
            .filter(|(m, _)| m & set != 0)
            .map(|&(_, c)| c)
            .sum();
        Ok(hit as f64 / self.n as f64)
    }
}

/// The (directed) cut function `f(S) = |{(u, v) ∈ E : u ∈ S, v ∉ S}| / E_max` of a
/// graph on `|V| ≤ 64` vertices, normalised by a public bound `E_max ≥ |E|`
/// (TYPO-19): submodular, non-monotone, values in [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    vertices: u32,
    edges: Vec<(u32, u32)>,
    e_max: u64,
}

impl Cut {
    /// A graph with `vertices` vertices and `edges` (no self-loops), normalised by
    /// `e_max ≥ |E|`.
    pub fn new(vertices: u32, edges: &[(u32, u32)], e_max: u64) -> Result<Self, DecomposeError> {
        if vertices == 0 || vertices > 64 {
            return Err(DecomposeError::InvalidParameter(format!(
                "{vertices} vertices: 1 to 64 are supported"
            )));
        }
        if let Some(&(u, v)) = edges
            .iter()
            .find(|&&(u, v)| u >= vertices || v >= vertices || u == v)
        {
            return Err(DecomposeError::InvalidParameter(format!(
                "edge ({u}, {v}) is a self-loop or names a vertex beyond {vertices}"
            )));
        }
        if (edges.len() as u64) > e_max || e_max == 0 {
            return Err(DecomposeError::InvalidParameter(format!(
                "E_max = {e_max} must be at least |E| = {} and positive",
                edges.len()
            )));
        }
        Ok(Cut {
            vertices,
            edges: edges.to_vec(),
            e_max,
        })
    }
}

impl SetFunction for Cut {
    fn ground(&self) -> u32 {
        self.vertices
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        let cut = self
            .edges
            .iter()
            .filter(|&&(u, v)| set >> u & 1 == 1 && set >> v & 1 == 0)
            .count();
        Ok(cut as f64 / self.e_max as f64)
    }
}
