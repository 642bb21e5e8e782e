//! Domain compression of the adaptive-marginals run (MST's: McKenna, Miklau,
//! Sheldon, "Winning the NIST Contest: A scalable and general approach to
//! differentially private synthetic data", JPC 2021, Section 4.1).
//!
//! After the one-way marginals are measured, every value of an attribute whose
//! **noisy** count is below a public threshold (a multiple of that measurement's
//! σ) is merged with the attribute's other such values into one value, when at
//! least two are below it. The rest of the run measures and models the
//! compressed attributes: a 100-value attribute with a long tail of rare values
//! (Adult's capital-gain, capital-loss, hours-per-week) becomes a handful of
//! values, so the marginals that hold it have far fewer cells and far less noise
//! in all.
//!
//! The released model is expanded back to the original values: a merged value's
//! mass is split among its members in proportion to their noisy one-way counts
//! (clamped at 0, plus ½ so every member stays possible), independently of every
//! other attribute (`Model::expand`).
//!
//! **Privacy.** The compression, the records' remapping (a fixed value → value
//! map once the noisy counts are out, so neighbouring inputs stay neighbours, with
//! the same sensitivity), the compressed one-way measurements (sums of released
//! noisy counts) and the expansion read only the noisy one-way marginals and
//! public parameters: post-processing of measurements already charged.

use super::estimate::Expansion;
use super::{Clique, Measurement, Model, SynthError};
use crate::data::{Attribute, DataError, Domain, Records};

/// Pseudo-count added to every member's noisy count when a merged value is split.
const SPLIT_PRIOR: f64 = 0.5;

/// One merged attribute: where each original value goes and its share there.
#[derive(Debug, Clone, PartialEq)]
struct Merge {
    /// Original value → compressed value (kept values first, in order; the merged
    /// value last).
    to: Vec<u32>,
    /// Per original value, the log of its share of its compressed value (0 for a
    /// kept value).
    log_share: Vec<f64>,
}

/// A compression of a domain's attributes, chosen from noisy one-way counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Compression {
    original: Vec<usize>,
    sizes: Vec<usize>,
    merges: Vec<Option<Merge>>,
}

impl Compression {
    /// The compression of attributes with noisy one-way counts `noisy[a]` (one per
    /// value of attribute `a`): attribute `a`'s values with a count below
    /// `threshold[a]` are merged into one when there are at least two of them.
    pub fn from_noisy(noisy: &[Vec<f64>], threshold: &[f64]) -> Compression {
        let mut sizes = Vec::with_capacity(noisy.len());
        let mut merges = Vec::with_capacity(noisy.len());
        for (y, &t) in noisy.iter().zip(threshold) {
            let small = y.iter().filter(|&&v| v < t).count();
            if small < 2 {
                sizes.push(y.len());
                merges.push(None);
                continue;
            }
            let kept = y.len() - small;
            let group: f64 = y
                .iter()
                .filter(|&&v| v < t)
                .map(|&v| v.max(0.0) + SPLIT_PRIOR)
                .sum();
            let mut next = 0u32;
            let (mut to, mut log_share) = (Vec::with_capacity(y.len()), Vec::new());
            for &v in y {
                if v < t {
                    to.push(kept as u32);
                    log_share.push(((v.max(0.0) + SPLIT_PRIOR) / group).ln());
                } else {
                    to.push(next);
                    log_share.push(0.0);
                    next += 1;
                }
            }
            sizes.push(kept + 1);
            merges.push(Some(Merge { to, log_share }));
        }
        Compression {
            original: noisy.iter().map(Vec::len).collect(),
            sizes,
            merges,
        }
    }

    /// True when no attribute is merged.
    pub fn is_identity(&self) -> bool {
        self.merges.iter().all(Option::is_none)
    }

    /// The compressed attribute sizes.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The original attribute sizes.
    pub fn original_sizes(&self) -> &[usize] {
        &self.original
    }

    /// Attribute `a`'s map from original to compressed values (None when kept).
    pub fn value_map(&self, a: usize) -> Option<&[u32]> {
        self.merges.get(a)?.as_ref().map(|m| m.to.as_slice())
    }

    /// The compressed domain (a merged attribute keeps its name, its values are
    /// indices) and `records` mapped into it, value by value.
    pub fn records(
        &self,
        records: &Records,
        domain: &Domain,
    ) -> Result<(Records, Domain), DataError> {
        let mut attributes = Vec::with_capacity(domain.dims());
        let mut columns = Vec::with_capacity(domain.dims());
        for (a, (attr, merge)) in domain.attributes().iter().zip(&self.merges).enumerate() {
            let column = records.column(a).unwrap_or(&[]);
            match merge {
                None => {
                    attributes.push(attr.clone());
                    columns.push(column.to_vec());
                }
                Some(m) => {
                    attributes.push(Attribute::categorical(
                        attr.name(),
                        (0..self.sizes[a]).map(|v| v.to_string()),
                    )?);
                    columns.push(column.iter().map(|&v| m.to[v as usize]).collect());
                }
            }
        }
        let domain = Domain::new(attributes)?;
        Ok((Records::from_columns(columns, &domain)?, domain))
    }

    /// A one-way measurement of attribute `a` over the original values,
    /// compressed: a merged value's count is the sum of its k members' noisy
    /// counts, so its noise has variance k·σ² (σ is kept and the cell gets
    /// variance multiple k, which weights it by 1/k in the fit: MST's 1/√k row
    /// scaling, McKenna, Miklau, Sheldon 2021, Section 4.1). Nothing new is
    /// measured.
    pub fn one_way(&self, m: &Measurement) -> Result<Measurement, SynthError> {
        let a = match m.clique.attributes() {
            [a] => *a,
            _ => return Ok(m.clone()),
        };
        match self.merges.get(a) {
            Some(Some(merge)) => {
                // `Measurement`'s fields are public: a hand-built one is checked
                // before it is indexed by the merge map.
                m.validate(0, None)?;
                if m.values.len() != merge.to.len() {
                    return Err(SynthError::MeasurementLength {
                        index: 0,
                        expected: merge.to.len(),
                        got: m.values.len(),
                    });
                }
                let mut values = vec![0.0; self.sizes[a]];
                let mut variance = vec![0.0; self.sizes[a]];
                for (v, &y) in m.values.iter().enumerate() {
                    let to = merge.to[v] as usize;
                    values[to] += y;
                    variance[to] += m.variance_multiple(v);
                }
                Measurement::with_cell_variance(m.clique.clone(), values, m.sigma, variance)
            }
            _ => Ok(m.clone()),
        }
    }

    /// `model` (over the compressed sizes) expanded to the original values.
    pub fn expand(&self, model: &Model) -> Result<Model, SynthError> {
        let maps: Vec<Option<Expansion<'_>>> = self
            .merges
            .iter()
            .map(|m| {
                m.as_ref().map(|m| Expansion {
                    to: &m.to,
                    log_share: &m.log_share,
                })
            })
            .collect();
        model.expand(&self.original, &maps)
    }

    /// The cells of `clique` over the original sizes (for pricing a model that
    /// will be expanded).
    pub fn original_cells(&self, clique: &Clique) -> u128 {
        clique.cells_u128(&self.original)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{FitOptions, Total, fit};

    #[test]
    fn merges_values_below_the_threshold() {
        let noisy = vec![
            vec![500.0, 3.0, -7.0, 400.0, 10.0],
            vec![100.0, 5.0],
            vec![1.0, 2.0],
        ];
        let c = Compression::from_noisy(&noisy, &[50.0, 50.0, 50.0]);
        // Attribute 0: values 1, 2, 4 merged into value 2; attribute 1 has only one
        // small value (kept as is); attribute 2 collapses to one value.
        assert_eq!(c.sizes(), &[3, 2, 1]);
        assert_eq!(c.value_map(0), Some(&[0, 2, 2, 1, 2][..]));
        assert_eq!(c.value_map(1), None);
        assert_eq!(c.value_map(2), Some(&[0, 0][..]));
        assert!(!c.is_identity());
        let m = Measurement::new(Clique::new([0]).unwrap(), noisy[0].clone(), 7.0).unwrap();
        let m = c.one_way(&m).unwrap();
        assert_eq!(m.values, vec![500.0, 400.0, 6.0]);
        assert_eq!(m.sigma, 7.0);
        // The merged value sums three noisy counts: variance 3σ².
        assert_eq!(m.cell_variance, Some(vec![1.0, 1.0, 3.0]));
    }

    #[test]
    fn a_hand_built_measurement_is_checked_before_it_is_compressed() {
        let c = Compression::from_noisy(&[vec![60.0, 10.0, 15.0, 15.0]], &[20.0]);
        let clique = Clique::new([0]).unwrap();
        // Per-cell variances of the wrong length (fields are public: no constructor ran).
        let m = Measurement {
            clique: clique.clone(),
            values: vec![60.0, 10.0, 15.0, 15.0],
            sigma: 1.0,
            cell_variance: Some(vec![1.0]),
            groups: None,
        };
        assert!(matches!(
            c.one_way(&m),
            Err(SynthError::InvalidCellVariance { .. })
        ));
        // More cells than the attribute has values.
        let m = Measurement::new(clique.clone(), vec![1.0; 5], 1.0).unwrap();
        assert!(matches!(
            c.one_way(&m),
            Err(SynthError::MeasurementLength {
                expected: 4,
                got: 5,
                ..
            })
        ));
        let m = Measurement::new(clique, vec![1.0; 3], 1.0).unwrap();
        assert!(matches!(
            c.one_way(&m),
            Err(SynthError::MeasurementLength {
                expected: 4,
                got: 3,
                ..
            })
        ));
    }

    #[test]
    fn merged_value_is_fitted_by_its_variance() {
        // Attribute 0's values 1, 2, 3 merge (noisy 10, 15, 15 < 20): the compressed
        // one-way is [60, 40], the merged cell the sum of 3 noisy counts (variance
        // 3σ²). A second, plain measurement of the same marginal says [50, 50].
        let c = Compression::from_noisy(&[vec![60.0, 10.0, 15.0, 15.0]], &[20.0]);
        assert_eq!(c.sizes(), &[2]);
        let one = Measurement::new(Clique::new([0]).unwrap(), vec![60.0, 10.0, 15.0, 15.0], 1.0);
        let one = c.one_way(&one.unwrap()).unwrap();
        assert_eq!(one.values, vec![60.0, 40.0]);
        let other = Measurement::new(Clique::new([0]).unwrap(), vec![50.0, 50.0], 1.0).unwrap();
        let model = fit(
            c.sizes(),
            &[one, other],
            Total::Known(100.0),
            &FitOptions::default(),
        )
        .unwrap();
        let m = model.marginal(&Clique::new([0]).unwrap()).unwrap();
        // With x = count of value 0 (and 100 − x merged), the loss is
        // (x − 60)² + (60 − x)²/3 + 2(x − 50)², minimal at x = 54. Weighting the
        // merged cell as if its noise were σ gives 2(x − 60)² + 2(x − 50)², x = 55.
        assert!((m[0] - 54.0).abs() < 0.05, "{m:?}");
        assert!((m[1] - 46.0).abs() < 0.05, "{m:?}");
    }

    #[test]
    fn records_map_value_by_value() {
        let domain = Domain::new(vec![
            Attribute::categorical("a", ["x", "y", "z", "w"]).unwrap(),
            Attribute::categorical("b", ["p", "q"]).unwrap(),
        ])
        .unwrap();
        let records =
            Records::from_columns(vec![vec![0, 1, 2, 3, 3], vec![0, 1, 0, 1, 1]], &domain).unwrap();
        let c =
            Compression::from_noisy(&[vec![0.0, 90.0, 1.0, 80.0], vec![2.0, 3.0]], &[10.0, 1.0]);
        let (r, d) = c.records(&records, &domain).unwrap();
        assert_eq!(d.attributes()[0].size(), 3);
        assert_eq!(d.attributes()[1].size(), 2);
        assert_eq!(r.column(0).unwrap(), &[2, 0, 2, 1, 1]);
        assert_eq!(r.column(1).unwrap(), &[0, 1, 0, 1, 1]);
    }

    #[test]
    fn expansion_splits_merged_mass_by_noisy_shares() {
        // Attribute 0 (4 values): values 0 and 2 merged, noisy counts 1.5 and -3
        // (shares (1.5 + ½) : (0 + ½) = 4 : 1).
        let c = Compression::from_noisy(
            &[vec![1.5, 90.0, -3.0, 80.0], vec![50.0, 60.0]],
            &[10.0, 10.0],
        );
        assert_eq!(c.sizes(), &[3, 2]);
        let y = Measurement::new(
            Clique::new([0, 1]).unwrap(),
            vec![10.0, 20.0, 30.0, 10.0, 5.0, 25.0],
            1.0,
        )
        .unwrap();
        let model = fit(c.sizes(), &[y], Total::Known(100.0), &FitOptions::default()).unwrap();
        // Queried before the expansion: the expanded model must not keep the
        // compressed model's probability tables.
        let small = model.marginal(&Clique::new([0, 1]).unwrap()).unwrap();
        let big = c.expand(&model).unwrap();
        assert_eq!(big.sizes(), &[4, 2]);
        let full = big.marginal(&Clique::new([0, 1]).unwrap()).unwrap();
        // Kept values 1 and 3 are compressed values 0 and 1; the merged value 2.
        for b in 0..2 {
            assert!((full[2 + b] - small[b]).abs() < 1e-6);
            assert!((full[6 + b] - small[2 + b]).abs() < 1e-6);
            assert!((full[b] - 0.8 * small[4 + b]).abs() < 1e-6);
            assert!((full[4 + b] - 0.2 * small[4 + b]).abs() < 1e-6);
        }
        let one = big.marginal(&Clique::new([1]).unwrap()).unwrap();
        let one_small = model.marginal(&Clique::new([1]).unwrap()).unwrap();
        assert!((one[0] - one_small[0]).abs() < 1e-6);
        assert!((big.total() - 100.0).abs() < 1e-6);
        // Sampling reads the expanded model: rows over the original values.
        let rows = big
            .sample_rows_rounded(1000, &mut crate::seeded_rng(3))
            .unwrap();
        assert!(rows.iter().all(|r| r[0] < 4 && r[1] < 2));
    }
}
