//! Private binning of numeric attributes declared by their bounds only
//! ([`Attribute::bounded`]): the bins are chosen from the data by a charged
//! mechanism, so the synthetic table can hold numbers where the curator knows
//! only a range.
//!
//! **Mechanism.** Each such attribute has a public grid of at most
//! [`GRID_CELLS`](crate::data::GRID_CELLS) cells fixed by its bounds (values
//! outside are clamped into the end cells). The histograms of all `c` bounded
//! attributes on their grids are measured **once**, side by side, with the exact
//! discrete Gaussian (Canonne, Kamath, Steinke, "The discrete Gaussian for
//! differential privacy", NeurIPS 2020). Everything after is post-processing of
//! the noisy counts: a count below `2σ` counts as empty (if that leaves nothing,
//! the counts clamped at 0 are used), the counts are cumulated, and the grid is
//! cut after the first cell where the cumulative count reaches `q/k` of the
//! total, for `q = 1, …, k−1` (`k` the attribute's `bins`): equal-mass bins,
//! equal cuts merged, so the edges strictly increase and the bounds' grid ends are
//! always edges. With a noisy total of zero the attribute gets one bin.
//!
//! **Privacy.** One record contributes exactly one cell to each of the `c` grid
//! histograms (its clamped value's cell). Under add/remove-one neighbours the
//! concatenated vector changes by one in `c` coordinates, ℓ2² = `c`; under
//! replace-one, by −1 and +1 in at most `2c` coordinates, ℓ2² ≤ `2c`. The discrete
//! Gaussian with σ² = Δ₂²/(2ρ) on that vector is ρ-zCDP (CKS20, Thm. 14), and
//! the edges, the records' remapping into the chosen bins (a fixed cell → bin map
//! given the released edges, so neighbours stay neighbours), and the release
//! written from them are post-processing. The cost [`Cost::Zcdp`] is charged to
//! the run's one accountant before any noise is drawn; ρ-zCDP costs add, so the
//! whole run stays within its ρ (Bun and Steinke, "Concentrated differential
//! privacy", TCC 2016, Lemma 2.3). [`synthesize`](super::release::synthesize)
//! spends the public share [`BINNING_SHARE`] of the run's ρ here and the rest on
//! the adaptive marginals.
//!
//! ```
//! use privq_host::accountant::Accountant;
//! use privq_host::contract::Neighbours;
//! use privq_host::data::{Domain, Records};
//! use privq_host::synth::bins::PrivateBinning;
//! use privq_host::{Rho, seeded_rng};
//! let domain = Domain::from_json(
//!     r#"{"attributes": [{"name": "age", "bounds": [0, 99], "bins": 4, "integer": true}]}"#,
//! )?;
//! let csv: String = std::iter::once("age".to_string())
//!     .chain((0..2000).map(|i| (i % 100).to_string()))
//!     .collect::<Vec<_>>()
//!     .join("\n");
//! let records = Records::from_csv(csv.as_bytes(), &domain, &Default::default())?;
//! let binning = PrivateBinning::new(&domain, Neighbours::Replace, Rho::new(1, 1)?)?;
//! let mut acct = Accountant::zcdp(Rho::new(1, 1)?, 1e-6)?;
//! let out = binning.release(&records, &domain, &mut acct, &mut seeded_rng(1))?;
//! let age = out.domain.attribute(0).unwrap();
//! assert!(age.size() <= 4 && !age.needs_bins());
//! assert_eq!(acct.remaining_rho(), None); // the whole ρ = 1 was charged
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use privq_core::Rho;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::SigmaSquared;

use crate::accountant::{Accountant, Cost};
use crate::central::{DiscreteGaussian, MechanismError};
use crate::contract::{Mechanism, Neighbours};
use crate::data::{Attribute, AttributeKind, DataError, Domain, Records};

/// The share `(p, q)` of a synthetic-data run's ρ spent on private binning when
/// the domain has attributes declared by their bounds only: `ρ·p/q`, rounded
/// down to a dyadic fraction. Public, fixed.
pub const BINNING_SHARE: (u64, u64) = (1, 20);

/// Why private binning failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BinningError {
    /// The domain or the records do not fit.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The noise could not be built, or the accountant refused (nothing sampled).
    #[error("private binning: {0}")]
    Mechanism(#[from] MechanismError),
    /// No attribute of the domain is declared by its bounds only.
    #[error("private binning: no attribute is declared by its bounds only")]
    NothingToBin,
}

/// The private binning of a domain's bounded attributes (see the module docs).
#[derive(Debug, Clone)]
pub struct PrivateBinning {
    neighbours: Neighbours,
    attributes: Vec<usize>,
    mech: DiscreteGaussian,
}

/// What [`PrivateBinning::release`] returns.
#[derive(Debug, Clone)]
pub struct Binned {
    /// The domain with the chosen bins (public from here on).
    pub domain: Domain,
    /// The records mapped into the chosen bins.
    pub records: Records,
    /// For each binned attribute (by position), the grid edges cut at.
    pub cuts: Vec<(usize, Vec<usize>)>,
}

impl PrivateBinning {
    /// Binning for every attribute of `domain` that [`Attribute::needs_bins`],
    /// at cost ρ under `neighbours`.
    pub fn new(domain: &Domain, neighbours: Neighbours, rho: Rho) -> Result<Self, BinningError> {
        let attributes: Vec<usize> = (0..domain.dims())
            .filter(|&i| domain.attribute(i).is_some_and(Attribute::needs_bins))
            .collect();
        if attributes.is_empty() {
            return Err(BinningError::NothingToBin);
        }
        let mech = DiscreteGaussian::histograms(neighbours, attributes.len(), rho)?;
        Ok(PrivateBinning {
            neighbours,
            attributes,
            mech,
        })
    }

    /// The binning share of a run's ρ ([`BINNING_SHARE`]).
    pub fn share_of(rho: Rho) -> Result<Rho, BinningError> {
        let (p, q) = BINNING_SHARE;
        super::adaptive::rho_scaled(rho, p, q)
            .map_err(|e| BinningError::Mechanism(MechanismError::InvalidParameter(e.to_string())))
    }

    /// Its cost, known before it runs: ρ-zCDP.
    pub fn cost(&self) -> Cost {
        self.mech.cost()
    }

    /// The positions of the attributes it bins.
    pub fn attributes(&self) -> &[usize] {
        &self.attributes
    }

    /// σ² of the noise on every grid count.
    pub fn sigma_squared(&self) -> SigmaSquared {
        self.mech.sigma_squared()
    }

    /// The counts below this are treated as empty: the smallest integer `t` with
    /// `t ≥ 2σ` (exact integer arithmetic on σ²; public).
    pub fn floor(&self) -> i64 {
        let s = self.sigma_squared();
        let (num, den) = (u128::from(s.num()) * 4, u128::from(s.den()));
        let mut t = (num / den).isqrt();
        while t * t * den < num {
            t += 1;
        }
        i64::try_from(t).unwrap_or(i64::MAX)
    }

    /// Charges `accountant` with [`PrivateBinning::cost`], then measures the grid
    /// histograms and chooses the bins; a refused charge samples nothing.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        records: &Records,
        domain: &Domain,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Binned, BinningError> {
        // Everything checked before the charge: the grids are the domain's.
        let mut counts = Vec::new();
        let mut sizes = Vec::with_capacity(self.attributes.len());
        for &a in &self.attributes {
            let attr = domain
                .attribute(a)
                .filter(|x| x.needs_bins())
                .ok_or_else(|| {
                    DataError::InvalidDomain(format!(
                        "attribute number {a} is not declared by its bounds only in this domain"
                    ))
                })?;
            let hist = records.marginal(&[a], domain)?;
            sizes.push((a, attr.size()));
            counts.extend(hist);
        }
        let label = format!(
            "private binning ({} numeric attribute{}, {})",
            self.attributes.len(),
            if self.attributes.len() == 1 { "" } else { "s" },
            self.mech.label()
        );
        let receipt = accountant
            .charge_as(self.neighbours, &label, self.cost())
            .map_err(MechanismError::Budget)?;
        let noisy = self.mech.release_paid(&counts[..], receipt, rng)?;
        let floor = self.floor();
        let mut cuts = Vec::with_capacity(sizes.len());
        let mut start = 0;
        for (a, size) in sizes {
            let bins = domain
                .attribute(a)
                .and_then(Attribute::bounds)
                .map_or(1, |b| b.bins());
            cuts.push((a, equal_mass_cuts(&noisy[start..start + size], bins, floor)));
            start += size;
        }
        let mut attrs: Vec<Attribute> = domain.attributes().to_vec();
        for (a, c) in &cuts {
            attrs[*a] = attrs[*a].with_bins(c)?;
        }
        let binned = Domain::new(attrs)?;
        let records = rebin(records, domain, &binned)?;
        Ok(Binned {
            domain: binned,
            records,
            cuts,
        })
    }
}

/// The cuts (grid edge numbers, from 0 to `noisy.len()`, strictly increasing) of
/// equal-mass bins of the noisy grid counts `noisy`: counts below `floor` count as
/// empty (all of them: the counts clamped at 0 instead), and the grid is cut after
/// the first cell where the cumulative count reaches `q/bins` of the total,
/// `q = 1, …, bins−1`; a cell holding at least `1/bins` of the total on its own is
/// also cut before, so it is a bin of its own. At most `bins` cuts after cells
/// and as many before the (at most `bins`) heavy cells: at most `2·bins` bins
/// (`[0, 5, 0, 5, 0]` in 2 bins gives 4). Integer arithmetic only; post-processing.
///
/// ```
/// use privq_host::synth::bins::equal_mass_cuts;
/// assert_eq!(equal_mass_cuts(&[5, 5, 5, 5], 2, 0), vec![0, 2, 4]);
/// assert_eq!(equal_mass_cuts(&[100, -3, 0, 1, 0, 2], 4, 3), vec![0, 1, 6]);
/// // The spike in cell 2 gets a bin of its own.
/// assert_eq!(equal_mass_cuts(&[5, 5, 90, 5, 5], 4, 0), vec![0, 2, 3, 5]);
/// assert_eq!(equal_mass_cuts(&[0, -1, 0], 8, 1), vec![0, 3]);
/// ```
pub fn equal_mass_cuts(noisy: &[i64], bins: usize, floor: i64) -> Vec<usize> {
    let g = noisy.len();
    let kept = |min: i64| -> Vec<u128> {
        noisy
            .iter()
            .map(|&y| if y >= min.max(1) { y as u128 } else { 0 })
            .collect()
    };
    let mut mass = kept(floor);
    if mass.iter().all(|&m| m == 0) {
        mass = kept(1);
    }
    let total: u128 = mass.iter().sum();
    let k = bins.max(1) as u128;
    let mut cuts = vec![0];
    if total > 0 {
        let (mut cum, mut q) = (0u128, 1u128);
        for (j, m) in mass.iter().enumerate() {
            cum += m;
            // A cell that holds a bin's worth on its own (a spike: 40 hours a
            // week, a gain of 0) is a bin of its own: cut before it too.
            if m * k >= total && j > 0 && cuts.last() != Some(&j) {
                cuts.push(j);
            }
            while q < k && cum * k >= q * total {
                if j + 1 < g && cuts.last() != Some(&(j + 1)) {
                    cuts.push(j + 1);
                }
                q += 1;
            }
        }
    }
    if g > 0 {
        cuts.push(g);
    }
    cuts
}

/// A bounded attribute's grid cells' edges and its chosen bins' edges.
type GridAndBins<'d> = (&'d [privq_core::Fixed], &'d [privq_core::Fixed]);

/// For one attribute of a domain before (`from`) and after (`to`) the private
/// binning: its public grid cells' edges and the chosen bins' edges when `to`
/// holds bins chosen on `from`'s grid, `None` when the attribute is unchanged,
/// and an error when they differ otherwise.
fn chosen_bins<'d>(
    from: &'d Attribute,
    to: &'d Attribute,
) -> Result<Option<GridAndBins<'d>>, DataError> {
    let same_grid = from.bounds().map(|x| x.grid()) == to.bounds().map(|x| x.grid());
    match (from.kind(), to.kind()) {
        (AttributeKind::Binned(grid), AttributeKind::Binned(edges))
            if from.needs_bins() && to.bounds().is_some() && !to.needs_bins() && same_grid =>
        {
            Ok(Some((grid, edges)))
        }
        _ if from == to => Ok(None),
        _ => Err(DataError::InvalidDomain(format!(
            "attribute {:?} differs between the two domains other than by chosen bins",
            from.name()
        ))),
    }
}

/// Synthetic `rows` over `released` (some bounded attributes binned privately)
/// moved onto the public grids of `grid` (the same domain before the binning):
/// each such attribute's bin is replaced by one of the bin's grid cells drawn
/// uniformly at random (exact integer sampling), so the values written spread
/// evenly over the bin's grid cells instead of piling on one value (no data is
/// read: not the input's distribution within the bin). Every other
/// attribute is kept. Post-processing of the release: no data is read.
///
/// ```
/// use privq_host::data::Domain;
/// use privq_host::synth::bins::spread;
/// use privq_host::seeded_rng;
/// let grid = Domain::from_json(r#"{"attributes": [{"name": "age", "bounds": [0, 9], "integer": true}]}"#)?;
/// let released = Domain::new(vec![grid.attribute(0).unwrap().with_bins(&[0, 3, 10])?])?;
/// let rows = spread(&[vec![0], vec![1]], &released, &grid, &mut seeded_rng(1))?;
/// assert!(rows[0][0] < 3 && (3..10).contains(&rows[1][0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spread<R: Rng + ?Sized>(
    rows: &[Vec<usize>],
    released: &Domain,
    grid: &Domain,
    rng: &mut R,
) -> Result<Vec<Vec<usize>>, DataError> {
    if released.dims() != grid.dims() {
        return Err(DataError::LengthMismatch {
            expected: grid.dims(),
            got: released.dims(),
        });
    }
    // Per attribute: for each released bin, its grid cells a..z (None: kept).
    let mut ranges: Vec<Option<Vec<(usize, usize)>>> = Vec::with_capacity(grid.dims());
    for (a, b) in grid.attributes().iter().zip(released.attributes()) {
        ranges.push(chosen_bins(a, b)?.map(|(cells, edges)| {
            let at = |e: &privq_core::Fixed| cells.partition_point(|g| g < e);
            edges.windows(2).map(|w| (at(&w[0]), at(&w[1]))).collect()
        }));
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut r = row.clone();
        for (v, range) in r.iter_mut().zip(&ranges) {
            if let Some(range) = range {
                let &(lo, hi) = range.get(*v).ok_or_else(|| {
                    DataError::InvalidValue(format!("value index {v} is not a released bin"))
                })?;
                let k = privq_core::sample::uniform_below(hi.saturating_sub(lo).max(1) as u64, rng)
                    .map_err(|e| DataError::InvalidValue(e.to_string()))?;
                *v = lo + k as usize;
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// `records` over `from` mapped into `to`, where `to` is `from` with some
/// bounded attributes' bins chosen ([`Attribute::with_bins`]): each such
/// attribute's grid cell goes to the chosen bin that holds it; every other
/// column is kept. A fixed, record-by-record map given the two (public) domains.
pub fn rebin(records: &Records, from: &Domain, to: &Domain) -> Result<Records, DataError> {
    if from.dims() != to.dims() {
        return Err(DataError::LengthMismatch {
            expected: from.dims(),
            got: to.dims(),
        });
    }
    let mut columns = Vec::with_capacity(from.dims());
    for (i, (a, b)) in from.attributes().iter().zip(to.attributes()).enumerate() {
        let column = records.column(i).unwrap_or(&[]);
        // Grid cell j = [grid[j], grid[j+1]) lies in the chosen bin whose lower
        // edge is the last edge ≤ grid[j].
        let map: Option<Vec<u32>> = chosen_bins(a, b)?.map(|(grid, edges)| {
            grid.iter()
                .take(grid.len() - 1)
                .map(|g| edges.partition_point(|e| e <= g).saturating_sub(1) as u32)
                .collect()
        });
        columns.push(match map {
            None => column.to_vec(),
            Some(m) => column.iter().map(|&v| m[v as usize]).collect(),
        });
    }
    Records::from_columns(columns, to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::CsvColumns;
    use crate::seeded_rng;
    use privq_core::rand_core::Rng;

    fn domain(spec: &str) -> Domain {
        Domain::from_json(spec).unwrap()
    }

    fn age_domain() -> Domain {
        domain(
            r#"{"attributes": [{"name": "age", "bounds": [17, 90], "bins": 8, "integer": true},
                               {"name": "pay", "bounds": [0, 1], "bins": 4},
                               {"name": "sex", "values": ["f", "m"]}]}"#,
        )
    }

    fn records(domain: &Domain, rows: usize) -> Records {
        let mut csv = String::from("age,pay,sex\n");
        for i in 0..rows {
            let age = 17 + (i * 7919) % 74;
            let pay = ((i * 31) % 1000) as f64 / 1000.0;
            csv.push_str(&format!(
                "{age},{pay},{}\n",
                if i % 3 == 0 { "f" } else { "m" }
            ));
        }
        Records::from_csv(csv.as_bytes(), domain, &CsvColumns::new()).unwrap()
    }

    #[test]
    fn cuts_rise_strictly_and_keep_both_ends() {
        let d = age_domain();
        let r = records(&d, 3000);
        let rho = Rho::new(1, 10).unwrap();
        let b = PrivateBinning::new(&d, Neighbours::AddRemove, rho).unwrap();
        assert_eq!(b.attributes(), &[0, 1]);
        for seed in 0..20 {
            let mut acct = Accountant::zcdp(rho, 1e-6).unwrap();
            let out = b.release(&r, &d, &mut acct, &mut seeded_rng(seed)).unwrap();
            for (a, cuts) in &out.cuts {
                let grid = d.attribute(*a).unwrap().size();
                assert_eq!((cuts[0], *cuts.last().unwrap()), (0, grid));
                assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
                let attr = out.domain.attribute(*a).unwrap();
                assert!(attr.size() <= 2 * attr.bounds().unwrap().bins());
                assert!(!attr.needs_bins());
                // The bounds are the outer edges.
                let AttributeKind::Binned(edges) = attr.kind() else {
                    panic!("not binned")
                };
                assert_eq!(edges[0], attr.bounds().unwrap().lo());
            }
            // Roughly equal mass: 8 bins of 3000 uniform-ish ages, none empty.
            assert!(out.domain.attribute(0).unwrap().size() >= 6);
            assert_eq!(out.records.len(), 3000);
            assert_eq!(out.records.column(2), r.column(2));
            // Every released value of a bin lies in the bin and is an integer.
            let age = out.domain.attribute(0).unwrap();
            for i in 0..age.size() {
                let text = age.value_text(i).unwrap();
                assert!(text.parse::<i32>().is_ok(), "{text}");
                assert_eq!(age.index_of(&text), Some(i), "{text}");
            }
        }
    }

    #[test]
    fn all_equal_and_empty_columns_get_few_bins() {
        let d = age_domain();
        let csv = format!("age,pay,sex\n{}", "40,0.5,f\n".repeat(500));
        let r = Records::from_csv(csv.as_bytes(), &d, &CsvColumns::new()).unwrap();
        let rho = Rho::new(1, 10).unwrap();
        let b = PrivateBinning::new(&d, Neighbours::Replace, rho).unwrap();
        let mut acct = Accountant::zcdp(rho, 1e-6).unwrap();
        let out = b.release(&r, &d, &mut acct, &mut seeded_rng(3)).unwrap();
        // All the mass in one cell: at most the cell's bin and the two sides.
        let age = out.domain.attribute(0).unwrap();
        assert!(age.size() <= 3, "{:?}", age.kind());
        let v = out.records.column(0).unwrap()[0] as usize;
        assert_eq!(age.index_of("40"), Some(v));
        // Empty data (add/remove): only noise, still a valid binning.
        let empty = Records::from_csv("age,pay,sex\n".as_bytes(), &d, &CsvColumns::new()).unwrap();
        let b = PrivateBinning::new(&d, Neighbours::AddRemove, rho).unwrap();
        let mut acct = Accountant::zcdp(rho, 1e-6).unwrap();
        let out = b
            .release(&empty, &d, &mut acct, &mut seeded_rng(4))
            .unwrap();
        assert!(out.records.is_empty());
        assert!(out.domain.attribute(1).unwrap().size() >= 1);
        assert_eq!(equal_mass_cuts(&[], 4, 1), vec![0]);
        assert_eq!(equal_mass_cuts(&[-5, -1, 0], 4, 1), vec![0, 3]);
    }

    #[test]
    fn charges_exactly_before_sampling_and_refuses_without_budget() {
        let d = age_domain();
        let r = records(&d, 200);
        let rho = Rho::new(1, 20).unwrap();
        let b = PrivateBinning::new(&d, Neighbours::Replace, rho).unwrap();
        // Two histograms under replace-one: Δ₂² = 4, σ² = 4/(2ρ) = 40.
        assert_eq!(b.sigma_squared().to_f64(), 40.0);
        assert_eq!(b.floor(), 13); // ⌈2·√40⌉ = ⌈12.65⌉
        assert_eq!(b.cost(), Cost::Zcdp(rho));
        let mut acct = Accountant::zcdp(Rho::new(1, 10).unwrap(), 1e-6).unwrap();
        b.release(&r, &d, &mut acct, &mut seeded_rng(1)).unwrap();
        assert_eq!(acct.spent_rho(), Some(rho));
        assert_eq!(acct.ledger().len(), 1);
        assert!(
            acct.ledger_text()
                .contains("private binning (2 numeric attributes")
        );
        // Too little budget: refused, nothing charged, no randomness drawn.
        let mut poor = Accountant::zcdp(Rho::new(1, 40).unwrap(), 1e-6).unwrap();
        let mut rng = seeded_rng(9);
        let err = b.release(&r, &d, &mut poor, &mut rng).unwrap_err();
        assert!(
            matches!(err, BinningError::Mechanism(MechanismError::Budget(_))),
            "{err}"
        );
        assert!(poor.ledger().is_empty());
        assert_eq!(rng.next_u64(), seeded_rng(9).next_u64());
        // A domain with nothing to bin.
        assert!(matches!(
            PrivateBinning::new(&domain(r#"{"a": 2}"#), Neighbours::Replace, rho),
            Err(BinningError::NothingToBin)
        ));
        // Records over another domain are refused before the charge.
        let other = domain(
            r#"{"attributes": [{"name": "age", "values": ["1"]}, {"name": "pay", "values": ["1"]}, {"name": "sex", "values": ["f"]}]}"#,
        );
        let mut acct = Accountant::zcdp(rho, 1e-6).unwrap();
        assert!(
            b.release(&r, &other, &mut acct, &mut seeded_rng(1))
                .is_err()
        );
        assert!(acct.ledger().is_empty());
    }

    /// `synthesize` bins first with its share, runs the rest on the chosen bins,
    /// and spreads each written value over its row's bin.
    #[test]
    fn synthesize_bins_first_and_spreads_within_the_bins() {
        use crate::synth::adaptive::MarginalWorkload;
        use crate::synth::release::{SynthRequest, synthesize};
        let d = age_domain();
        let r = records(&d, 1500);
        let workload = MarginalWorkload::all_k_way(&d, 2).unwrap();
        let request = SynthRequest::new(
            privq_core::Epsilon::new(2, 1).unwrap(),
            1e-9,
            Neighbours::Replace,
        )
        .unwrap();
        let plan = request.plan(&r, &d, &workload).unwrap();
        let budget = request.accountant().unwrap().rho_budget().unwrap();
        let share = PrivateBinning::share_of(budget).unwrap();
        assert_eq!(plan.binning_rho, Some(share));
        let out = synthesize(&r, &d, &workload, &request, &mut seeded_rng(4), &mut |_| {}).unwrap();
        assert_eq!(out.binning_rho, Some(share));
        assert!(
            out.accountant
                .ledger_text()
                .lines()
                .next()
                .unwrap()
                .contains("private binning")
        );
        // Exactly within the budget (Rho compares as exact fractions).
        let spent = out.accountant.spent_rho().unwrap();
        assert!(spent <= budget, "{spent:?} > {budget:?}");
        assert!(spent.to_f64() > 0.99 * budget.to_f64());
        let spread = out.spread.as_ref().unwrap();
        assert_eq!(spread.len(), out.rows.len());
        let back = rebin(
            &Records::from_columns(
                (0..3)
                    .map(|a| spread.iter().map(|x| x[a] as u32).collect())
                    .collect(),
                &d,
            )
            .unwrap(),
            &d,
            &out.domain,
        )
        .unwrap();
        for (i, row) in out.rows.iter().enumerate() {
            for (a, &v) in row.iter().enumerate() {
                assert_eq!(back.column(a).unwrap()[i] as usize, v);
            }
        }
        // Spread: more distinct ages written than bins chosen.
        let mut ages: Vec<usize> = spread.iter().map(|x| x[0]).collect();
        ages.sort_unstable();
        ages.dedup();
        assert!(ages.len() > out.domain.attribute(0).unwrap().size());
        // Without bounded attributes nothing changes.
        let plain = domain(r#"{"attributes": [{"name": "sex", "values": ["f", "m"]}]}"#);
        let pr = Records::from_columns(vec![vec![0, 1, 1]], &plain).unwrap();
        let w = MarginalWorkload::all_k_way(&plain, 1).unwrap();
        let out = synthesize(&pr, &plain, &w, &request, &mut seeded_rng(4), &mut |_| {}).unwrap();
        assert!(out.spread.is_none() && out.binning_rho.is_none() && out.domain == plain);
    }

    #[test]
    fn the_share_is_a_twentieth_rounded_down() {
        let share = PrivateBinning::share_of(Rho::new(1, 2).unwrap()).unwrap();
        assert!(share.to_f64() <= 0.025 && share.to_f64() > 0.0249);
    }
}
