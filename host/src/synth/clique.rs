//! Cliques: sets of attributes, and the cell order of their tables.

use super::SynthError;

/// A set of attribute indices, kept sorted and free of duplicates.
///
/// The cells of a table over a clique are ordered **row-major with the first
/// (smallest) attribute most significant**: over attributes `a < b` with sizes
/// `s_a, s_b`, the cell of values `(v_a, v_b)` is `v_a·s_b + v_b`
/// ([`Clique::cell_index`]). (This is the transpose of
/// [`Domain`](crate::data::Domain)'s universe order, whose attribute 0 is the
/// least significant digit.)
///
/// ```
/// use privq_host::synth::Clique;
/// let c = Clique::new([2, 0])?;
/// assert_eq!(c.attributes(), &[0, 2]);
/// let sizes = [2, 5, 3];
/// assert_eq!(c.cells(&sizes)?, 6);
/// // record (1, 4, 2): attribute 0 = 1, attribute 2 = 2 → cell 1·3 + 2
/// assert_eq!(c.cell_of_record(&sizes, &[1, 4, 2])?, 5);
/// # Ok::<(), privq_host::synth::SynthError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Clique(Vec<usize>);

impl Clique {
    /// A clique from attribute indices in any order; a repeated index is an error.
    pub fn new(attributes: impl IntoIterator<Item = usize>) -> Result<Self, SynthError> {
        let mut v: Vec<usize> = attributes.into_iter().collect();
        v.sort_unstable();
        if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
            return Err(SynthError::DuplicateAttribute(w[0]));
        }
        Ok(Clique(v))
    }

    /// The empty clique (its marginal is the total).
    pub fn empty() -> Self {
        Clique(Vec::new())
    }

    /// From an already sorted, duplicate-free vector (internal use).
    pub(crate) fn from_sorted(v: Vec<usize>) -> Self {
        debug_assert!(v.windows(2).all(|w| w[0] < w[1]));
        Clique(v)
    }

    /// The attributes, increasing.
    pub fn attributes(&self) -> &[usize] {
        &self.0
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty clique.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when attribute `a` is in the clique.
    pub fn contains(&self, a: usize) -> bool {
        self.0.binary_search(&a).is_ok()
    }

    /// True when every attribute of `self` is in `other`.
    pub fn is_subset(&self, other: &Clique) -> bool {
        self.0.iter().all(|a| other.contains(*a))
    }

    /// The attributes in both.
    pub fn intersection(&self, other: &Clique) -> Clique {
        Clique(
            self.0
                .iter()
                .copied()
                .filter(|a| other.contains(*a))
                .collect(),
        )
    }

    /// The attributes in either.
    pub fn union(&self, other: &Clique) -> Clique {
        let mut v: Vec<usize> = self.0.iter().chain(other.0.iter()).copied().collect();
        v.sort_unstable();
        v.dedup();
        Clique(v)
    }

    /// Checks that every attribute is below `sizes.len()`.
    pub fn check(&self, sizes: &[usize]) -> Result<(), SynthError> {
        match self.0.last() {
            Some(&a) if a >= sizes.len() => Err(SynthError::AttributeOutOfRange {
                attribute: a,
                attributes: sizes.len(),
            }),
            _ => Ok(()),
        }
    }

    /// The number of cells of a table over the clique: the product of its
    /// attributes' sizes (1 for the empty clique), overflow-checked.
    pub fn cells(&self, sizes: &[usize]) -> Result<usize, SynthError> {
        self.check(sizes)?;
        self.0
            .iter()
            .try_fold(1usize, |acc, &a| acc.checked_mul(sizes[a]))
            .ok_or(SynthError::TooManyCells)
    }

    /// Like [`Clique::cells`], in `u128` (saturating): for pricing models.
    pub fn cells_u128(&self, sizes: &[usize]) -> u128 {
        self.0.iter().fold(1u128, |acc, &a| {
            acc.saturating_mul(sizes.get(a).copied().unwrap_or(0) as u128)
        })
    }

    /// The sizes of the clique's attributes, in clique order.
    pub fn shape(&self, sizes: &[usize]) -> Vec<usize> {
        self.0.iter().map(|&a| sizes[a]).collect()
    }

    /// The cell index of the clique values `values` (one per attribute of the
    /// clique, in clique order).
    pub fn cell_index(&self, sizes: &[usize], values: &[usize]) -> Result<usize, SynthError> {
        self.check(sizes)?;
        if values.len() != self.0.len() {
            return Err(SynthError::TableLength {
                expected: self.0.len(),
                got: values.len(),
            });
        }
        let mut idx = 0usize;
        for (&a, &v) in self.0.iter().zip(values) {
            if v >= sizes[a] {
                return Err(SynthError::AttributeOutOfRange {
                    attribute: v,
                    attributes: sizes[a],
                });
            }
            idx = idx
                .checked_mul(sizes[a])
                .and_then(|i| i.checked_add(v))
                .ok_or(SynthError::TooManyCells)?;
        }
        Ok(idx)
    }

    /// The cell of a full record (one value index per attribute of the domain):
    /// the index to increment when computing this clique's marginal from data.
    pub fn cell_of_record(&self, sizes: &[usize], record: &[usize]) -> Result<usize, SynthError> {
        if record.len() != sizes.len() {
            return Err(SynthError::TableLength {
                expected: sizes.len(),
                got: record.len(),
            });
        }
        let vals: Vec<usize> = self.0.iter().map(|&a| record[a]).collect();
        self.cell_index(sizes, &vals)
    }

    /// The clique values of cell `index` (inverse of [`Clique::cell_index`]).
    pub fn cell_values(&self, sizes: &[usize], mut index: usize) -> Vec<usize> {
        let mut out = vec![0; self.0.len()];
        for (k, &a) in self.0.iter().enumerate().rev() {
            out[k] = index % sizes[a];
            index /= sizes[a];
        }
        out
    }
}

impl std::fmt::Display for Clique {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}
