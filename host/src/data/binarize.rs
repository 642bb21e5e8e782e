//! One-hot binarization of a categorical or binned dataset: one binary attribute
//! per (attribute, value), named `attr=value`, so that conjunction releases
//! (thesis Chapter 6) can run on non-binary tables. The new domain depends on the
//! public domain only.

use super::{CountHistogram, DataError, Dataset, Domain, MemoryCap};

/// The binary domain of [`binarize`]: attribute `a` with values `v_0, …, v_{m−1}`
/// becomes the m binary attributes `a=v_0`, …, `a=v_{m−1}`, in the domain's order
/// (a bin `[lo, hi)` is named `a=[lo..hi)`, any comma in a value becomes `..`).
pub fn binarized_domain(domain: &Domain) -> Result<Domain, DataError> {
    let mut names = Vec::new();
    for a in domain.attributes() {
        for v in 0..a.size() {
            let label = a.label(v).ok_or_else(|| {
                DataError::InvalidDomain(format!("attribute {} has no value {v}", a.name()))
            })?;
            // Commas separate attributes in a query's set: a bin `[lo,hi)` is
            // named `[lo..hi)`.
            names.push(format!("{}={}", a.name(), label.replace(',', "..")));
        }
    }
    Domain::binary(names)
}

/// The dataset with every record one-hot encoded over [`binarized_domain`]: a
/// record with value `v` of attribute `a` has `a=v` set and every other `a=·`
/// clear. Counts move cell by cell (a record's new cell depends on its old cell
/// only), so the neighbour relation of the original is kept. At most `cap` memory
/// for the `2^d` cells.
///
/// ```
/// use privq_host::data::{Attribute, Dataset, Domain, MemoryCap, CountHistogram, binarize};
/// let domain = Domain::new(vec![Attribute::categorical("size", ["S", "M", "L"])?])?;
/// let counts = CountHistogram::from_counts(vec![5, 0, 2], MemoryCap::default())?;
/// let ds = Dataset { name: "t".into(), domain, counts };
/// let b = binarize(&ds, MemoryCap::default())?;
/// assert_eq!(b.domain.attributes()[2].name(), "size=L");
/// assert_eq!(b.counts.total(), 7);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
pub fn binarize(ds: &Dataset, cap: MemoryCap) -> Result<Dataset, DataError> {
    let domain = binarized_domain(&ds.domain)?;
    let d = domain.dims();
    if d >= usize::BITS as usize {
        return Err(DataError::UniverseTooLarge {
            cells: u64::MAX,
            bytes: u64::MAX,
            cap: 0,
        });
    }
    cap.check(domain.size(), 8)?;
    let mut out = vec![0u64; domain.size()];
    let offsets: Vec<usize> = ds
        .domain
        .attributes()
        .iter()
        .scan(0usize, |at, a| {
            let start = *at;
            *at += a.size();
            Some(start)
        })
        .collect();
    let mut bits = vec![0usize; d];
    for (cell, &c) in ds.counts.counts().iter().enumerate() {
        if c == 0 {
            continue;
        }
        bits.iter_mut().for_each(|b| *b = 0);
        for (attr, &v) in ds.domain.decode(cell).iter().enumerate() {
            bits[offsets[attr] + v] = 1;
        }
        let target = domain.encode(&bits)?;
        out[target] = out[target]
            .checked_add(c)
            .ok_or_else(|| DataError::InvalidValue("the counts overflow u64".into()))?;
    }
    Ok(Dataset {
        name: ds.name.clone(),
        domain,
        counts: CountHistogram::from_counts(out, cap)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Attribute;

    /// Two attributes (binary `smoker`, three sizes): each record lands in the
    /// cell with exactly its two indicators set.
    #[test]
    fn records_land_on_their_indicators() {
        let domain = Domain::new(vec![
            Attribute::binary("smoker"),
            Attribute::categorical("size", ["S", "M", "L"]).unwrap(),
        ])
        .unwrap();
        let mut counts = vec![0u64; 6];
        counts[domain.encode(&[1, 2]).unwrap()] = 4; // smoker=1, size=L
        counts[domain.encode(&[0, 0]).unwrap()] = 3; // smoker=0, size=S
        let ds = Dataset {
            name: "t".into(),
            domain,
            counts: CountHistogram::from_counts(counts, MemoryCap::default()).unwrap(),
        };
        let b = binarize(&ds, MemoryCap::default()).unwrap();
        let names: Vec<&str> = b.domain.attributes().iter().map(|a| a.name()).collect();
        assert_eq!(
            names,
            ["smoker=0", "smoker=1", "size=S", "size=M", "size=L"]
        );
        assert_eq!(b.counts.len(), 32);
        assert_eq!(b.counts.total(), 7);
        let at = |bits: [usize; 5]| b.counts.counts()[b.domain.encode(&bits).unwrap()];
        assert_eq!(at([0, 1, 0, 0, 1]), 4);
        assert_eq!(at([1, 0, 1, 0, 0]), 3);
    }

    #[test]
    fn a_huge_binarized_universe_is_an_error() {
        let values: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        let domain = Domain::new(vec![Attribute::categorical("x", values).unwrap()]).unwrap();
        let ds = Dataset {
            name: "t".into(),
            counts: CountHistogram::from_counts(vec![1; 40], MemoryCap::default()).unwrap(),
            domain,
        };
        assert!(binarize(&ds, MemoryCap::default()).is_err());
    }
}
