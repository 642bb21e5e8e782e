//! Where a release's universe comes from ([`DomainSource`]), and private domain
//! discovery: choosing each attribute's values with differentially private
//! partition selection.
//!
//! The domain is **public input** by default: a JSON spec, or all-binary columns
//! named by the CSV header (the header is schema; the values are not read). Loading
//! records for a release without one is refused with [`DataError::DomainRequired`].
//!
//! Discovery is opt-in. For every attribute it counts each value that occurs, adds
//! exact discrete Laplace noise (Canonne–Kamath–Steinke 2020) and keeps the values
//! whose noisy count reaches a threshold τ (Korolova, Kenthapadi, Mishra, Ntoulas,
//! "Releasing search queries and clicks privately", WWW 2009; Desfontaines, Voss,
//! Gipson, Mandayam, "Differentially private partition selection", PoPETs 2022).
//!
//! **Privacy.** One record contributes one value to every attribute, so over all
//! `d` attributes the vector of counts changes by `d · Δ` in ℓ1, where `Δ` is the
//! histogram sensitivity of the declared [`Neighbours`] (1 for add/remove, 2 for
//! replace-one: one count down, one up). The noise scale is `d·Δ/ε`. A value that
//! exists in only one of two neighbours (at most one per attribute and side) has
//! count 1 there and survives when `Z ≥ τ − 1`; τ is the smallest integer with
//! `d · P[Z ≥ τ − 1] ≤ δ`. Outside that event the release is a post-processing of
//! the noisy counts of the values both neighbours hold, which is ε-DP, so the
//! whole step is (ε, δ)-DP and a value held by a single record survives with
//! probability at most δ/d. Discovery therefore makes a run (ε, δ)-DP rather than
//! pure ε-DP; its cost is a [`Cost::Approximate`] charged to the run's one
//! [`Accountant`] before any noise is drawn.
//!
//! Records whose value was not kept are mapped to the attribute's first kept value
//! (a fixed record-by-record map given the released domain, so neighbours stay
//! neighbours and n is unchanged). Numeric attributes are treated as categories
//! here: for ordered values with bins, give the bins in a public `--domain` spec.
//!
//! ```
//! use privq_host::accountant::Accountant;
//! use privq_host::contract::Neighbours;
//! use privq_host::data::{CsvColumns, Discovery, ValueCounts};
//! use privq_host::{seeded_rng, Epsilon};
//! let mut csv = String::from("color\n");
//! csv.push_str(&"red\n".repeat(500));
//! csv.push_str("mauve\n"); // one record: survives with probability ≤ δ
//! let counts = ValueCounts::from_csv(csv.as_bytes(), &CsvColumns::new())?;
//! let d = Discovery::new(Neighbours::Replace, Epsilon::new(1, 1)?, 1e-6, 1)?;
//! let mut acct = Accountant::approximate(Epsilon::new(1, 1)?, 1e-6)?;
//! let domain = d.release(&counts, &mut acct, &mut seeded_rng(1))?;
//! assert_eq!(domain.attribute(0).unwrap().size(), 1);
//! assert_eq!(acct.spent_delta(), 1e-6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::columns::{CsvColumns, header};
use super::domain::{Attribute, Domain};
use super::error::DataError;
use super::histogram::MemoryCap;
use super::load::{Dataset, Unknown, load_csv};
use super::records::DictionaryColumn;
use crate::accountant::{Accountant, AccountantError, Cost, Receipt};
use crate::contract::Neighbours;

/// Why discovery (or loading under a [`DomainSource`]) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// Reading or loading the data failed (including [`DataError::DomainRequired`]).
    #[error(transparent)]
    Data(#[from] DataError),
    /// The accountant refused the charge (nothing was sampled), or a receipt was short.
    #[error("domain discovery: {0}")]
    Budget(#[from] AccountantError),
    /// The noise could not be built or sampled (e.g. the scale overflows).
    #[error("domain discovery noise: {0}")]
    Noise(#[from] privq_core::Error),
    /// δ is not in (0, 1).
    #[error("domain discovery needs a delta in (0, 1), got {0}")]
    InvalidDelta(f64),
    /// There are no attributes to discover.
    #[error("domain discovery: no attributes")]
    NoAttributes,
    /// The threshold does not fit in an integer (δ is absurdly small).
    #[error("domain discovery: the threshold overflows (delta too small)")]
    ThresholdOverflow,
    /// No value of this attribute survived: the domain would be empty.
    #[error(
        "domain discovery kept no value of attribute {attribute:?}; give more discovery budget, \
         or a public --domain"
    )]
    NothingKept {
        /// The attribute.
        attribute: String,
    },
}

/// The private input of discovery: for every attribute, how many records hold
/// each value that occurs.
#[derive(Debug, Clone)]
pub struct ValueCounts {
    names: Vec<String>,
    counts: Vec<BTreeMap<String, u64>>,
}

impl ValueCounts {
    /// Counts the values of every column except those `columns` declares; with a
    /// declared count column each row is a cell with that many records.
    pub fn from_csv<R: Read>(reader: R, columns: &CsvColumns) -> Result<Self, DataError> {
        let mut rdr = csv::Reader::from_reader(reader);
        let header = header(&mut rdr)?;
        let names = columns.attributes(&header)?;
        let positions: Vec<usize> = names
            .iter()
            .filter_map(|n| header.iter().position(|h| h == n))
            .collect();
        let count_col = columns
            .count_column()
            .and_then(|c| header.iter().position(|h| h == c));
        let mut counts = vec![BTreeMap::new(); names.len()];
        for (row, rec) in rdr.records().enumerate() {
            let rec = rec?;
            let weight = match count_col {
                Some(c) => {
                    let text = rec.get(c).unwrap_or("").trim();
                    text.parse::<u64>().map_err(|_| DataError::BadCount {
                        line: row + 2,
                        text: text.to_string(),
                    })?
                }
                None => 1,
            };
            let values = positions.iter().map(|&p| rec.get(p).unwrap_or(""));
            // A row of weight 0 holds no record: it must not make its values
            // candidates (the layout of a count table is not data).
            if weight == 0 {
                continue;
            }
            for (map, value) in counts.iter_mut().zip(values) {
                let c: &mut u64 = map.entry(value.trim().to_string()).or_insert(0);
                *c = c.saturating_add(weight);
            }
        }
        Ok(ValueCounts { names, counts })
    }

    /// Counts the values of a table in dictionary form (a front end's DataFrame),
    /// as [`ValueCounts::from_csv`] counts the same table written as CSV: each
    /// value as its text, trimmed; a missing value as the empty text. Every column
    /// is an attribute, and every row one record. Columns of different lengths,
    /// or a code past its column's dictionary, are refused.
    pub fn from_dictionary_columns(columns: &[DictionaryColumn]) -> Result<Self, DataError> {
        let rows = columns.first().map_or(0, |c| c.codes().len());
        // Refused here, before any charge: a domain cannot name one attribute twice.
        for (i, column) in columns.iter().enumerate() {
            if columns[..i].iter().any(|c| c.name() == column.name()) {
                return Err(DataError::InvalidDomain(format!(
                    "the attribute name {:?} appears twice",
                    column.name()
                )));
            }
        }
        let mut names = Vec::with_capacity(columns.len());
        let mut counts = Vec::with_capacity(columns.len());
        for column in columns {
            if column.codes().len() != rows {
                return Err(DataError::LengthMismatch {
                    expected: rows,
                    got: column.codes().len(),
                });
            }
            let mut per_code = vec![0u64; column.values().len()];
            for (row, &code) in column.codes().iter().enumerate() {
                if let Some(None) = column.values().get(code as usize) {
                    return Err(DataError::MissingValue {
                        attribute: column.name().to_string(),
                        line: row + 2,
                    });
                }
                let slot = per_code.get_mut(code as usize).ok_or_else(|| {
                    DataError::InvalidValue(format!(
                        "column {:?}: code {code} is not a position in its dictionary of {} \
                         values",
                        column.name(),
                        column.values().len()
                    ))
                })?;
                *slot += 1;
            }
            let mut map = BTreeMap::new();
            for (value, &n) in column.values().iter().zip(&per_code) {
                if n == 0 {
                    continue;
                }
                let text = value.as_deref().unwrap_or("").trim().to_string();
                let c: &mut u64 = map.entry(text).or_insert(0);
                *c = c.saturating_add(n);
            }
            names.push(column.name().to_string());
            counts.push(map);
        }
        Ok(ValueCounts { names, counts })
    }

    /// The attribute names (the header, public).
    pub fn attributes(&self) -> &[String] {
        &self.names
    }
}

/// DP partition selection over every attribute's values (see the module docs).
#[derive(Debug, Clone)]
pub struct Discovery {
    neighbours: Neighbours,
    epsilon: Epsilon,
    delta: f64,
    attributes: usize,
    noise: DiscreteLaplace,
    threshold: i64,
}

impl Discovery {
    /// Validates the parameters for `attributes` attributes under `neighbours` and
    /// calibrates the noise scale `d·Δ/ε` and the threshold τ.
    pub fn new(
        neighbours: Neighbours,
        epsilon: Epsilon,
        delta: f64,
        attributes: usize,
    ) -> Result<Self, DiscoveryError> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(DiscoveryError::InvalidDelta(delta));
        }
        if attributes == 0 {
            return Err(DiscoveryError::NoAttributes);
        }
        let d = attributes as u64;
        let l1 = d
            .checked_mul(neighbours.histogram_l1())
            .ok_or(DiscoveryError::ThresholdOverflow)?;
        let noise = DiscreteLaplace::for_sensitivity(l1, epsilon)?;
        // P[Z ≥ k] = q^k / (1 + q) for k ≥ 0, with q = e^{−1/t}, t = scale. A value
        // held by one record only (count 1) survives when Z ≥ τ − 1; there are at
        // most d such values, so τ is the smallest integer with
        // d · P[Z ≥ τ − 1] ≤ δ.
        let inv_scale = noise.scale_den() as f64 / noise.scale_num() as f64;
        let q = (-inv_scale).exp();
        let per_value = delta / attributes as f64;
        let tail = |k: f64| (-inv_scale * k).exp() / (1.0 + q);
        let mut k = ((1.0 / (per_value * (1.0 + q))).ln() / inv_scale)
            .ceil()
            .max(0.0);
        // Float rounding must only make τ larger (safer). Beyond 2⁵³, k + 1 = k in
        // f64: the threshold no longer fits, and the loop would not end.
        let limit = (1u64 << 53) as f64;
        while k.is_finite() && k < limit && tail(k) > per_value * (1.0 - 1e-12) {
            k += 1.0;
        }
        let tau = k + 1.0;
        if !tau.is_finite() || tau > limit {
            return Err(DiscoveryError::ThresholdOverflow);
        }
        Ok(Discovery {
            neighbours,
            epsilon,
            delta,
            attributes,
            noise,
            threshold: tau as i64,
        })
    }

    /// The cost of one discovery, known before it runs: (ε, δ).
    pub fn cost(&self) -> Cost {
        Cost::Approximate {
            epsilon: self.epsilon,
            delta: self.delta,
        }
    }

    /// The neighbour relation the guarantee is stated for.
    pub fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// A fresh accountant for one discovery: budget exactly [`Discovery::cost`],
    /// bound to [`Discovery::neighbours`]. Kept by the caller, so a discovery that
    /// is charged and then keeps nothing still has its spend on record.
    pub fn accountant(&self) -> Result<Accountant, AccountantError> {
        Accountant::exactly_for(self.cost(), self.neighbours)
    }

    /// The threshold τ a noisy count must reach.
    pub fn threshold(&self) -> i64 {
        self.threshold
    }

    /// The noise added to every count (scale `d·Δ/ε`).
    pub fn noise(&self) -> DiscreteLaplace {
        self.noise
    }

    /// Charges a front end's session accountant [`Discovery::cost`] under
    /// [`Discovery::neighbours`] through [`Accountant::charge_binding`] (binding an
    /// unbound, empty session to them; refusing one bound to another relation, or
    /// unbound but holding charges), for
    /// [`Discovery::release_paid`] with the receipt; a refused charge samples
    /// nothing.
    pub fn charge_to(
        &self,
        session: &mut Accountant,
        label: &str,
    ) -> Result<Receipt, DiscoveryError> {
        Ok(session.charge_binding(self.neighbours, label, self.cost())?)
    }

    /// Charges `accountant` with [`Discovery::cost`], then selects the values;
    /// a refused charge samples nothing.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &ValueCounts,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Domain, DiscoveryError> {
        let receipt = accountant.charge_as(
            self.neighbours,
            &format!(
                "domain discovery ({} attributes, threshold {})",
                self.attributes, self.threshold
            ),
            self.cost(),
        )?;
        self.release_paid(counts, receipt, rng)
    }

    /// Selects the values with a receipt that paid for them.
    pub fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &ValueCounts,
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Domain, DiscoveryError> {
        receipt.check_covers(&self.cost(), self.neighbours)?;
        if counts.names.len() != self.attributes {
            return Err(DataError::LengthMismatch {
                expected: self.attributes,
                got: counts.names.len(),
            }
            .into());
        }
        let mut attrs = Vec::with_capacity(self.attributes);
        for (name, kept) in self.select(counts, rng)? {
            if kept.is_empty() {
                return Err(DiscoveryError::NothingKept { attribute: name });
            }
            attrs.push(Attribute::categorical(name, kept)?);
        }
        Ok(Domain::new(attrs)?)
    }

    /// [`Discovery::release_paid`] for a front end that keeps what survived: the
    /// same selection (for the same rng, the same values), but an attribute that
    /// kept no value is left out of the domain and named in
    /// [`PartialDomain::nothing_kept`] instead of refusing the whole release
    /// (which, after the charge, would throw the other attributes' values away).
    pub fn release_paid_partial<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &ValueCounts,
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<PartialDomain, DiscoveryError> {
        receipt.check_covers(&self.cost(), self.neighbours)?;
        let mut attrs = Vec::with_capacity(self.attributes);
        let mut nothing_kept = Vec::new();
        for (name, kept) in self.select(counts, rng)? {
            if kept.is_empty() {
                nothing_kept.push(name);
            } else {
                attrs.push(Attribute::categorical(name, kept)?);
            }
        }
        let domain = if attrs.is_empty() {
            None
        } else {
            Some(Domain::new(attrs)?)
        };
        Ok(PartialDomain {
            domain,
            nothing_kept,
        })
    }

    /// Every attribute's values whose noisy count reaches the threshold (paid for
    /// by the caller).
    fn select<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &ValueCounts,
        rng: &mut R,
    ) -> Result<Vec<(String, Vec<String>)>, DiscoveryError> {
        if counts.names.len() != self.attributes {
            return Err(DataError::LengthMismatch {
                expected: self.attributes,
                got: counts.names.len(),
            }
            .into());
        }
        let mut out = Vec::with_capacity(self.attributes);
        for (name, values) in counts.names.iter().zip(&counts.counts) {
            let mut kept = Vec::new();
            for (value, &c) in values {
                let c = i64::try_from(c).unwrap_or(i64::MAX);
                if c.saturating_add(self.noise.sample(rng)?) >= self.threshold {
                    kept.push(value.clone());
                }
            }
            out.push((name.clone(), kept));
        }
        Ok(out)
    }
}

/// What [`Discovery::release_paid_partial`] released: the domain of the
/// attributes that kept at least one value (`None` when none did), and the names
/// of those that kept none, in the table's order.
#[derive(Debug, Clone)]
pub struct PartialDomain {
    /// The attributes that kept a value, with the values they kept.
    pub domain: Option<Domain>,
    /// The attributes that kept no value (left out of `domain`).
    pub nothing_kept: Vec<String>,
}

/// Where the universe of a release comes from.
#[derive(Debug, Clone)]
pub enum DomainSource {
    /// A public domain (e.g. [`Domain::from_json`] of a spec).
    Public(Domain),
    /// Every column except `count` is a binary `0`/`1` attribute; only the header
    /// is read to name them.
    BinaryHeader,
    /// Private discovery at (ε, δ) under the given neighbour relation.
    Discover {
        /// The neighbour relation of the run.
        neighbours: Neighbours,
        /// ε of discovery.
        epsilon: Epsilon,
        /// δ of discovery.
        delta: f64,
    },
}

/// What discovery released, for the run's summary.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// Its cost (already charged).
    pub cost: Cost,
    /// The threshold τ used.
    pub threshold: i64,
    /// Values kept per attribute.
    pub values_per_attribute: Vec<usize>,
}

/// A dataset loaded for a release, and what discovery (if any) released.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The data under the public or discovered domain.
    pub dataset: Dataset,
    /// Present when the domain was discovered privately.
    pub discovered: Option<Discovered>,
}

/// Loads a CSV file, its columns read as `columns` declares, for a release under
/// `source`; `None` is refused with
/// [`DataError::DomainRequired`]. Discovery charges `accountant` before it samples.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::data::{open_dataset, CsvColumns, DataError, DiscoveryError, MemoryCap};
/// use privq_host::{seeded_rng, Epsilon};
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let (columns, cap) = (CsvColumns::new(), MemoryCap::default());
/// let err = open_dataset("any.csv".as_ref(), None, &columns, &mut acct, &mut seeded_rng(1), cap)
///     .unwrap_err();
/// assert!(matches!(err, DiscoveryError::Data(DataError::DomainRequired { discovery: true })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_dataset<R: Rng + CryptoRng + ?Sized>(
    path: &Path,
    source: Option<&DomainSource>,
    columns: &CsvColumns,
    accountant: &mut Accountant,
    rng: &mut R,
    cap: MemoryCap,
) -> Result<Opened, DiscoveryError> {
    let source = source.ok_or(DataError::DomainRequired { discovery: true })?;
    let dataset = match source {
        DomainSource::Public(domain) => {
            Dataset::from_csv_with_domain(path, domain.clone(), columns, cap)?
        }
        DomainSource::BinaryHeader => Dataset::binary_from_header(path, columns, cap)?,
        DomainSource::Discover {
            neighbours,
            epsilon,
            delta,
        } => {
            let text = std::fs::read_to_string(path).map_err(DataError::from)?;
            let counts = ValueCounts::from_csv(text.as_bytes(), columns)?;
            let discovery = Discovery::new(*neighbours, *epsilon, *delta, counts.names.len())?;
            let domain = discovery.release(&counts, accountant, rng)?;
            let hist = load_csv(text.as_bytes(), &domain, columns, Unknown::MapToFirst, cap)?;
            // After the discovery charge, and only where n is public: under
            // add/remove an empty table is a dataset like any other (see
            // `load_records`).
            if hist.total() == 0 && neighbours.n_is_public() {
                return Err(DataError::EmptyData.into());
            }
            let discovered = Discovered {
                cost: discovery.cost(),
                threshold: discovery.threshold(),
                values_per_attribute: domain.attributes().iter().map(Attribute::size).collect(),
            };
            return Ok(Opened {
                dataset: Dataset {
                    name: super::load::file_name(path),
                    domain,
                    counts: hist,
                },
                discovered: Some(discovered),
            });
        }
    };
    Ok(Opened {
        dataset,
        discovered: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    fn eps(n: u64, d: u64) -> Epsilon {
        Epsilon::new(n, d).unwrap()
    }

    /// Review rev1: a session holding a charge stated under no relation is
    /// refused, not charged and left unbound.
    #[test]
    fn charge_to_refuses_an_unbound_session_with_charges() {
        let mut session = Accountant::approximate(eps(3, 1), 1e-5).unwrap();
        session
            .charge("relation-less", Cost::Pure(eps(1, 2)))
            .unwrap();
        let disc = Discovery::new(Neighbours::AddRemove, eps(1, 2), 1e-6, 2).unwrap();
        assert!(matches!(
            disc.charge_to(&mut session, "discovery"),
            Err(DiscoveryError::Budget(
                AccountantError::UnboundCharges { .. }
            ))
        ));
        assert_eq!(session.ledger().len(), 1);
        assert_eq!(session.neighbours(), None);
        let mut empty = Accountant::approximate(eps(3, 1), 1e-5).unwrap();
        disc.charge_to(&mut empty, "discovery").unwrap();
        assert_eq!(empty.neighbours(), Some(Neighbours::AddRemove));
    }

    fn table(rare: bool) -> String {
        let mut s = String::from("city,smoker\n");
        for i in 0..400 {
            s.push_str(if i % 2 == 0 { "Oslo," } else { "Rome," });
            s.push_str(if i % 3 == 0 { "1\n" } else { "0\n" });
        }
        if rare {
            s.push_str("Lima,1\n");
        }
        s
    }

    /// A table in dictionary form is counted as the same table written as CSV:
    /// trimmed texts, an empty text as CSV's empty field, unused dictionary
    /// entries not candidates; then the same seed keeps the same values. A missing
    /// value (`None`, a null) and a name given twice are refused, before any charge.
    #[test]
    fn dictionary_columns_count_as_their_csv() {
        let csv = "city,smoker\nOslo,1\nRome,0\nOslo,\n Oslo,1\n";
        let from_csv = ValueCounts::from_csv(csv.as_bytes(), &CsvColumns::new()).unwrap();
        let text = |v: &[Option<&str>]| v.iter().map(|s| s.map(String::from)).collect();
        let columns = [
            DictionaryColumn::new(
                "city",
                text(&[Some("Oslo"), Some("Rome"), Some("Lima"), Some(" Oslo")]),
                vec![0, 1, 0, 3],
            ),
            DictionaryColumn::new(
                "smoker",
                text(&[Some("1"), Some("0"), Some("")]),
                vec![0, 1, 2, 0],
            ),
        ];
        let from_table = ValueCounts::from_dictionary_columns(&columns).unwrap();
        assert_eq!(from_table.names, from_csv.names);
        assert_eq!(from_table.counts, from_csv.counts);
        let short = [
            columns[0].clone(),
            DictionaryColumn::new("smoker", text(&[Some("1")]), vec![0]),
        ];
        assert!(ValueCounts::from_dictionary_columns(&short).is_err());
        let bad = [DictionaryColumn::new("a", text(&[Some("x")]), vec![1])];
        assert!(ValueCounts::from_dictionary_columns(&bad).is_err());
        let null = [DictionaryColumn::new(
            "a",
            text(&[Some("x"), None]),
            vec![0, 0, 1],
        )];
        assert!(matches!(
            ValueCounts::from_dictionary_columns(&null),
            Err(DataError::MissingValue { attribute, line: 4 }) if attribute == "a"
        ));
        // An unused null entry is never looked at.
        let unused = [DictionaryColumn::new(
            "a",
            text(&[Some("x"), None]),
            vec![0],
        )];
        assert!(ValueCounts::from_dictionary_columns(&unused).is_ok());
        let twice = [columns[0].clone(), columns[0].clone()];
        assert!(matches!(
            ValueCounts::from_dictionary_columns(&twice),
            Err(DataError::InvalidDomain(m)) if m.contains("appears twice")
        ));
    }

    /// An attribute that keeps no value is named, not a refusal of the others;
    /// the selection is release_paid's for the same rng.
    #[test]
    fn release_paid_partial_keeps_the_attributes_that_kept_a_value() {
        let text = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect();
        let n = 2000;
        let columns = [
            DictionaryColumn::new(
                "city",
                text(&["Oslo", "Rome"]),
                (0..n).map(|i| i % 2).collect(),
            ),
            DictionaryColumn::new(
                "age",
                text(
                    &(0..n)
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>(),
                ),
                (0..n).collect(),
            ),
        ];
        let counts = ValueCounts::from_dictionary_columns(&columns).unwrap();
        let disc = Discovery::new(Neighbours::AddRemove, eps(1, 1), 1e-6, 2).unwrap();
        let mut acc = disc.accountant().unwrap();
        let receipt = disc.charge_to(&mut acc, "d").unwrap();
        assert!(matches!(
            disc.release_paid(&counts, receipt, &mut seeded_rng(3)),
            Err(DiscoveryError::NothingKept { attribute }) if attribute == "age"
        ));
        let mut acc = disc.accountant().unwrap();
        let receipt = disc.charge_to(&mut acc, "d").unwrap();
        let partial = disc
            .release_paid_partial(&counts, receipt, &mut seeded_rng(3))
            .unwrap();
        assert_eq!(partial.nothing_kept, vec!["age".to_string()]);
        let domain = partial.domain.unwrap();
        assert_eq!(domain.dims(), 1);
        assert_eq!(domain.attributes()[0].name(), "city");
        assert_eq!(domain.attributes()[0].size(), 2);
        // Nothing kept anywhere: no domain, every name.
        let rare = ValueCounts::from_dictionary_columns(&columns[1..]).unwrap();
        let one = Discovery::new(Neighbours::AddRemove, eps(1, 1), 1e-6, 1).unwrap();
        let mut acc = one.accountant().unwrap();
        let receipt = one.charge_to(&mut acc, "d").unwrap();
        let none = one
            .release_paid_partial(&rare, receipt, &mut seeded_rng(3))
            .unwrap();
        assert!(none.domain.is_none());
        assert_eq!(none.nothing_kept, vec!["age".to_string()]);
    }

    #[test]
    fn rare_values_survive_at_most_at_rate_delta_frequent_ones_survive() {
        // δ = 0.05 so that the rate is measurable in 4000 runs.
        let delta = 0.05;
        let d = Discovery::new(Neighbours::Replace, eps(1, 1), delta, 2).unwrap();
        // Scale d·Δ/ε = 2·2/1 = 4.
        assert_eq!((d.noise().scale_num(), d.noise().scale_den()), (4, 1));
        let counts = ValueCounts::from_csv(table(true).as_bytes(), &CsvColumns::new()).unwrap();
        let runs = 4000;
        let (mut rare, mut frequent) = (0, 0);
        for seed in 0..runs {
            let mut acct = Accountant::approximate(eps(1, 1), delta).unwrap();
            let dom = d
                .release(&counts, &mut acct, &mut seeded_rng(seed))
                .unwrap();
            let city = dom.attribute(0).unwrap();
            rare += usize::from(city.index_of("Lima").is_some());
            frequent +=
                usize::from(city.index_of("Oslo").is_some() && city.index_of("Rome").is_some());
            assert_eq!(dom.attribute(1).unwrap().size(), 2);
        }
        assert_eq!(frequent, runs as usize);
        // P[survive] ≤ δ/(1+e)·e^{1/4}·… well below δ; 3 sd above δ·runs would be 241.
        let rate = rare as f64 / runs as f64;
        assert!(rate <= delta, "rare value kept in {rare} of {runs} runs");
    }

    #[test]
    fn a_tiny_epsilon_is_a_typed_error_not_an_endless_loop() {
        let tiny = Epsilon::new(1, 1 << 50).unwrap();
        assert!(matches!(
            Discovery::new(Neighbours::Replace, tiny, 1e-6, 1),
            Err(DiscoveryError::ThresholdOverflow)
        ));
    }

    #[test]
    fn threshold_is_calibrated_exactly() {
        for (nb, d, e, delta) in [
            (Neighbours::Replace, 16, eps(1, 4), 1e-6),
            (Neighbours::AddRemove, 3, eps(1, 1), 1e-9),
            (Neighbours::Replace, 1, eps(2, 1), 0.1),
        ] {
            let disc = Discovery::new(nb, e, delta, d).unwrap();
            let t = disc.noise().scale_num() as f64 / disc.noise().scale_den() as f64;
            assert_eq!(t, (d as u64 * nb.histogram_l1()) as f64 / e.to_f64());
            let q = (-1.0 / t).exp();
            let tail = |k: i64| q.powi(k as i32) / (1.0 + q);
            let tau = disc.threshold();
            // A count-1 value survives when Z ≥ τ − 1: d of them at most.
            assert!(d as f64 * tail(tau - 1) <= delta, "{tau}");
            assert!(
                tau == 1 || d as f64 * tail(tau - 2) > delta * (1.0 - 1e-9),
                "{tau} not minimal"
            );
        }
    }

    #[test]
    fn charges_before_sampling_and_refuses_bad_parameters() {
        let counts = ValueCounts::from_csv(table(false).as_bytes(), &CsvColumns::new()).unwrap();
        let d = Discovery::new(Neighbours::Replace, eps(1, 2), 1e-6, 2).unwrap();
        let mut acct = Accountant::approximate(eps(1, 1), 1e-6).unwrap();
        d.release(&counts, &mut acct, &mut seeded_rng(3)).unwrap();
        assert_eq!(acct.ledger().len(), 1);
        assert!(
            acct.ledger_text()
                .contains("domain discovery (2 attributes")
        );
        assert!(
            acct.ledger_text().contains("ε = 1/2, δ = 1e-6"),
            "{}",
            acct.ledger_text()
        );
        // A pure budget cannot pay δ: refused, nothing recorded.
        let mut pure = Accountant::pure(eps(1, 1));
        assert!(matches!(
            d.release(&counts, &mut pure, &mut seeded_rng(3)),
            Err(DiscoveryError::Budget(AccountantError::DeltaExceeded))
        ));
        assert!(pure.ledger().is_empty());
        for bad in [0.0, 1.0, -1e-6, f64::NAN] {
            assert!(matches!(
                Discovery::new(Neighbours::Replace, eps(1, 1), bad, 2),
                Err(DiscoveryError::InvalidDelta(_))
            ));
        }
        assert!(matches!(
            Discovery::new(Neighbours::Replace, eps(1, 1), 1e-6, 0),
            Err(DiscoveryError::NoAttributes)
        ));
        assert!(matches!(
            Discovery::new(Neighbours::Replace, eps(1, 1), 1e-300, 1 << 40),
            Err(DiscoveryError::ThresholdOverflow | DiscoveryError::Noise(_))
        ));
        // Too little budget for 400 records: nothing kept is a typed error.
        let tiny = Discovery::new(Neighbours::Replace, eps(1, 1000), 1e-9, 2).unwrap();
        let mut acct = Accountant::approximate(eps(1, 1), 1e-6).unwrap();
        assert!(matches!(
            tiny.release(&counts, &mut acct, &mut seeded_rng(1)),
            Err(DiscoveryError::NothingKept { .. })
        ));
    }

    #[test]
    fn open_refuses_a_missing_domain_and_maps_dropped_values() {
        let dir = std::env::temp_dir().join(format!("privq-discover-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        std::fs::write(&path, table(true)).unwrap();
        let mut acct = Accountant::approximate(eps(1, 1), 1e-6).unwrap();
        let mut rng = seeded_rng(5);
        let cap = MemoryCap::default();
        let err =
            open_dataset(&path, None, &CsvColumns::new(), &mut acct, &mut rng, cap).unwrap_err();
        assert!(matches!(
            err,
            DiscoveryError::Data(DataError::DomainRequired { discovery: true })
        ));
        let text = err.to_string();
        assert!(
            text.contains("--domain FILE")
                && text.contains("--domain binary")
                && text.contains("--discover-domain"),
            "{text}"
        );
        assert!(acct.ledger().is_empty());
        let source = DomainSource::Discover {
            neighbours: Neighbours::Replace,
            epsilon: eps(1, 2),
            delta: 1e-6,
        };
        let opened = open_dataset(
            &path,
            Some(&source),
            &CsvColumns::new(),
            &mut acct,
            &mut rng,
            cap,
        )
        .unwrap();
        let found = opened.discovered.unwrap();
        assert_eq!(found.values_per_attribute, [2, 2]);
        // n is unchanged: the Lima record is counted under the first kept city.
        assert_eq!(opened.dataset.counts.total(), 401);
        assert_eq!(acct.ledger().len(), 1);
        let _ = std::fs::remove_dir_all(dir);
    }
}
