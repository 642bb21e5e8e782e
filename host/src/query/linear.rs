//! Linear queries `f ∈ [0,1]^N` over a universe, with fast special forms.

use std::sync::Arc;

use crate::data::{DataError, Domain};

/// One attribute's allowed value range inside a [`Query::Box`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttrRange {
    /// Index stride of the attribute in the domain.
    pub stride: usize,
    /// Number of values of the attribute.
    pub radix: usize,
    /// Smallest allowed value index.
    pub lo: usize,
    /// Largest allowed value index (inclusive).
    pub hi: usize,
}

/// A linear query `f ∈ [0,1]^N`: `f(x) = ⟨f, x⟩`.
///
/// On a normalized histogram this is a statistical query (sensitivity `1/n`); on
/// counts a 0/1 query is a counting query (sensitivity 1). The special forms are
/// evaluated from the cell index without storing `N` values.
///
/// ```
/// use privq_host::data::Domain;
/// use privq_host::query::Query;
/// let d = Domain::binary(["a", "b", "c"])?;
/// let parity = Query::parity(&d, &[0, 2])?;       // a ⊕ c even
/// let conj = Query::conjunction(&d, &[0, 1])?;    // a ∧ b
/// assert_eq!(parity.value(0b101), 1.0);
/// assert_eq!(parity.value(0b001), 0.0);
/// assert_eq!(conj.value(0b011), 1.0);
/// let x = vec![1.0 / 8.0; 8];
/// assert_eq!(conj.evaluate(&x), 0.25);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// Explicit values `f[u] ∈ [0,1]` (validated on construction).
    Dense(Arc<[f64]>),
    /// Binary domains: `f[u] = 1` iff `Σ_{i∈S} u_i` is even, `S` = the set bits of
    /// `mask` (the parity query `Q_w` of thesis §5.3).
    Parity {
        /// The attribute set `S` as a bit mask.
        mask: usize,
    },
    /// Binary domains: `f[u] = 1` iff the bits of `u` under `mask` equal `pattern`:
    /// a monotone conjunction (`pattern = mask`) or a marginal cell.
    BitPattern {
        /// The attributes tested.
        mask: usize,
        /// Their required values.
        pattern: usize,
    },
    /// Any domain: `f[u] = 1` iff every listed attribute's value index lies in its
    /// range — marginal cells (`lo = hi`) and range queries.
    Box(Arc<[AttrRange]>),
}

impl Query {
    /// A dense query; every entry must be in `[0,1]` and finite.
    pub fn dense(values: Vec<f64>) -> Result<Self, DataError> {
        if values.is_empty() {
            return Err(DataError::EmptyData);
        }
        if values.iter().any(|v| !(0.0..=1.0).contains(v)) {
            return Err(DataError::InvalidValue(
                "a linear query's entries must lie in [0, 1]".into(),
            ));
        }
        Ok(Query::Dense(values.into()))
    }

    /// The parity query on attribute set `attrs` of a binary domain.
    pub fn parity(domain: &Domain, attrs: &[usize]) -> Result<Self, DataError> {
        Ok(Query::Parity {
            mask: binary_mask(domain, attrs)?,
        })
    }

    /// The monotone conjunction `∧_{i∈attrs} u_i` of a binary domain.
    pub fn conjunction(domain: &Domain, attrs: &[usize]) -> Result<Self, DataError> {
        let mask = binary_mask(domain, attrs)?;
        Ok(Query::BitPattern {
            mask,
            pattern: mask,
        })
    }

    /// The marginal cell "attribute `attrs[j]` has value `values[j]` for all j", on any
    /// domain (a k-way marginal is the set of all such cells for k attributes).
    pub fn marginal_cell(
        domain: &Domain,
        attrs: &[usize],
        values: &[usize],
    ) -> Result<Self, DataError> {
        if attrs.len() != values.len() {
            return Err(DataError::LengthMismatch {
                expected: attrs.len(),
                got: values.len(),
            });
        }
        let ranges: Vec<(usize, usize, usize)> =
            attrs.iter().zip(values).map(|(&a, &v)| (a, v, v)).collect();
        Self::box_query(domain, &ranges)
    }

    /// The range query `lo ≤ value(attr) ≤ hi` (value indices, e.g. bins).
    pub fn range(domain: &Domain, attr: usize, lo: usize, hi: usize) -> Result<Self, DataError> {
        Self::box_query(domain, &[(attr, lo, hi)])
    }

    /// A conjunction of value ranges `(attribute, lo, hi)`.
    pub fn box_query(domain: &Domain, ranges: &[(usize, usize, usize)]) -> Result<Self, DataError> {
        let mut out = Vec::with_capacity(ranges.len());
        for &(attr, lo, hi) in ranges {
            let a = domain.attribute(attr).ok_or_else(|| {
                DataError::InvalidValue(format!("the domain has no attribute number {attr}"))
            })?;
            if lo > hi || hi >= a.size() {
                return Err(DataError::UnknownValue {
                    attribute: a.name().to_string(),
                    value: format!("{lo}..={hi}"),
                    line: 0,
                });
            }
            out.push(AttrRange {
                stride: domain.strides()[attr],
                radix: a.size(),
                lo,
                hi,
            });
        }
        Ok(Query::Box(out.into()))
    }

    /// `f[u]`.
    #[inline]
    pub fn value(&self, u: usize) -> f64 {
        match self {
            Query::Dense(v) => v.get(u).copied().unwrap_or(0.0),
            _ => {
                if self.indicator(u) {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }

    /// `f[u] = 1` for the 0/1 forms (for `Dense`: `f[u] ≥ 1/2`).
    #[inline]
    pub fn indicator(&self, u: usize) -> bool {
        match self {
            Query::Dense(v) => v.get(u).is_some_and(|&x| x >= 0.5),
            Query::Parity { mask } => (u & mask).count_ones() & 1 == 0,
            Query::BitPattern { mask, pattern } => u & mask == *pattern,
            Query::Box(r) => r.iter().all(|a| {
                let v = u / a.stride % a.radix;
                a.lo <= v && v <= a.hi
            }),
        }
    }

    /// True when every `f[u]` is 0 or 1 (a counting query on counts).
    pub fn is_boolean(&self) -> bool {
        match self {
            Query::Dense(v) => v.iter().all(|&x| x == 0.0 || x == 1.0),
            _ => true,
        }
    }

    /// `⟨f, x⟩` for any non-negative vector `x` (a distribution or weights).
    pub fn evaluate(&self, x: &[f64]) -> f64 {
        match self {
            Query::Dense(v) => v.iter().zip(x).map(|(a, b)| a * b).sum(),
            Query::Parity { mask } => {
                let m = *mask;
                x.iter()
                    .enumerate()
                    .map(|(u, &p)| {
                        if (u & m).count_ones() & 1 == 0 {
                            p
                        } else {
                            0.0
                        }
                    })
                    .sum()
            }
            _ => x
                .iter()
                .enumerate()
                .filter(|&(u, _)| self.indicator(u))
                .map(|(_, &p)| p)
                .sum(),
        }
    }

    /// The exact answer on integer counts, for 0/1 queries (`None` for fractional
    /// dense queries or on overflow).
    pub fn count(&self, counts: &[u64]) -> Option<u64> {
        if !self.is_boolean() {
            return None;
        }
        counts
            .iter()
            .enumerate()
            .filter(|&(u, _)| self.indicator(u))
            .try_fold(0u64, |s, (_, &c)| s.checked_add(c))
    }

    /// Checks that the query fits a universe of `cells` cells.
    pub fn check_universe(&self, cells: usize) -> Result<(), DataError> {
        let ok = match self {
            Query::Dense(v) => v.len() == cells,
            Query::Parity { mask } | Query::BitPattern { mask, .. } => {
                cells.is_power_of_two() && *mask < cells
            }
            Query::Box(r) => r
                .iter()
                .all(|a| a.stride.checked_mul(a.radix).is_some_and(|s| s <= cells)),
        };
        if ok {
            Ok(())
        } else {
            Err(DataError::InvalidValue(format!(
                "the query does not fit a universe of {cells} cells"
            )))
        }
    }
}

fn binary_mask(domain: &Domain, attrs: &[usize]) -> Result<usize, DataError> {
    if !domain.is_binary() {
        return Err(DataError::InvalidDomain(
            "parity and conjunction queries need a binary domain".into(),
        ));
    }
    let mut mask = 0usize;
    for &a in attrs {
        if a >= domain.dims() {
            return Err(DataError::InvalidValue(format!(
                "the domain has no attribute number {a}"
            )));
        }
        mask |= 1 << a;
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_agree_with_dense() {
        let d = Domain::new(vec![
            crate::data::Attribute::binary("a"),
            crate::data::Attribute::categorical("b", ["x", "y", "z"]).unwrap(),
        ])
        .unwrap();
        let q = Query::range(&d, 1, 1, 2).unwrap();
        let dense: Vec<f64> = (0..6).map(|u| q.value(u)).collect();
        assert_eq!(dense, vec![0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
        let c = Query::marginal_cell(&d, &[0, 1], &[1, 2]).unwrap();
        assert_eq!(
            (0..6).filter(|&u| c.indicator(u)).collect::<Vec<_>>(),
            vec![5]
        );
        let x = [0.1, 0.2, 0.3, 0.1, 0.2, 0.1];
        let qd = Query::dense(dense).unwrap();
        assert!((q.evaluate(&x) - qd.evaluate(&x)).abs() < 1e-15);
        assert_eq!(q.count(&[1, 2, 3, 4, 5, 6]), Some(18));
        assert!(Query::parity(&d, &[0]).is_err());
        assert!(Query::range(&d, 1, 2, 3).is_err());
        assert!(Query::dense(vec![1.5]).is_err());
    }
}
