//! Queries, plans (a query with everything its guarantee depends on) and releases.

use std::collections::{BTreeMap, HashMap};

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::AggregateError;
use super::bins::Binning;
use super::bounding::{BoundingKey, Contribution, Keep, bound_in_ranges, bound_into};
use super::bounds::{Bounds, Stepper};
use super::filter::{Filter, MAX_FILTER_DEPTH};
use super::measure::{self, LEVEL_DEN, Measure};
use super::spec::PlanSpec;
use super::table::{Columns, Table};
use super::totals::{ColumnTotals, GroupTotals, candidate_bucket};
use crate::accountant::{Accountant, Cost};
use crate::contract::Neighbours;
use crate::data::Discovery;

/// One aggregate of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aggregate {
    /// The number of rows (after contribution bounding).
    Count,
    /// The sum of a column's clamped values.
    Sum(String),
    /// The mean of a column's clamped values.
    Mean(String),
    /// The population variance of a column's clamped values.
    Variance(String),
    /// The population standard deviation of a column's clamped values.
    StdDev(String),
    /// The `q`-quantile of a column, q = `level`/10 000 (four decimals).
    Quantile {
        /// The column.
        column: String,
        /// q·10 000, at most 10 000.
        level: u64,
    },
}

impl Aggregate {
    /// The quantile of `column` at `q ∈ [0, 1]`, given to at most four decimals.
    pub fn quantile(column: impl Into<String>, q: f64) -> Result<Self, AggregateError> {
        if !(0.0..=1.0).contains(&q) {
            return Err(AggregateError::InvalidParameter(format!(
                "a quantile level must be between 0 and 1, got {q}"
            )));
        }
        let scaled = q * LEVEL_DEN as f64;
        if (scaled - scaled.round()).abs() > 1e-6 {
            return Err(AggregateError::InvalidParameter(format!(
                "a quantile level has at most four decimals, got {q}"
            )));
        }
        Ok(Aggregate::Quantile {
            column: column.into(),
            level: (q * LEVEL_DEN as f64).round() as u64,
        })
    }

    fn column(&self) -> Option<&str> {
        match self {
            Aggregate::Count => None,
            Aggregate::Sum(c)
            | Aggregate::Mean(c)
            | Aggregate::Variance(c)
            | Aggregate::StdDev(c)
            | Aggregate::Quantile { column: c, .. } => Some(c),
        }
    }
}

/// The most steps between a quantile's candidates
/// ([`PlanBuilder::quantile_candidates`]): each candidate holds a count per
/// group, so the number is bounded before anything is allocated.
pub const MAX_QUANTILE_CANDIDATES: u32 = 1_000_000;

/// Group-by keys, named aggregates, and optionally a row filter.
///
/// A group-by key is a column's text, or a histogram bin derived from a numeric
/// column by public edges ([`Query::bin`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    group_by: Vec<String>,
    /// The binned keys among `group_by`, by name.
    pub(super) bins: BTreeMap<String, Binning>,
    aggregates: Vec<(String, Aggregate)>,
    filter: Option<Filter>,
}

impl Query {
    /// A query grouping by `group_by` (none: the whole table is one group).
    pub fn new<G, A>(group_by: G, aggregates: A) -> Self
    where
        G: IntoIterator,
        G::Item: Into<String>,
        A: IntoIterator<Item = (&'static str, Aggregate)>,
    {
        Query {
            group_by: group_by.into_iter().map(Into::into).collect(),
            bins: BTreeMap::new(),
            aggregates: aggregates
                .into_iter()
                .map(|(n, a)| (n.to_string(), a))
                .collect(),
            filter: None,
        }
    }

    /// The same query grouped also by a histogram: a group-by key called `name`
    /// (after the keys so far) whose value is the label of the bin of
    /// `binning`'s column that a row's value falls in (a histogram is then
    /// `COUNT(*)` by that key). Its keys are public — every bin, from the edges —
    /// so with public groups the other keys are listed and every bin comes with
    /// each of them; a row's bin is part of its group, so the contribution limits
    /// count (key, bin) pairs as groups.
    ///
    /// ```
    /// use privq_host::aggregate::{Aggregate, Binning, Query};
    /// let q = Query::new(["region"], [("n", Aggregate::Count)])
    ///     .bin("band", Binning::new("temp", &[-20.0, 0.0, 20.0, 50.0])?);
    /// assert_eq!(q.group_by(), ["region", "band"]);
    /// assert_eq!(q.binning("band").map(|b| b.bins()), Some(3));
    /// assert!(q.binning("region").is_none());
    /// # Ok::<(), privq_host::aggregate::AggregateError>(())
    /// ```
    pub fn bin(mut self, name: impl Into<String>, binning: Binning) -> Self {
        let name = name.into();
        self.group_by.push(name.clone());
        self.bins.insert(name, binning);
        self
    }

    /// The binning of group-by key `name`, if it is a histogram's.
    pub fn binning(&self, name: &str) -> Option<&Binning> {
        self.bins.get(name)
    }

    /// The same query over the rows `filter` accepts (`WHERE`).
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// The row filter, if any.
    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// The numeric columns the aggregates read (each needs bounds), in first-use
    /// order.
    pub fn value_columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, a) in &self.aggregates {
            if let Some(c) = a.column()
                && !out.iter().any(|o| o == c)
            {
                out.push(c.to_string());
            }
        }
        out
    }

    /// A query from owned parts.
    pub fn from_parts(group_by: Vec<String>, aggregates: Vec<(String, Aggregate)>) -> Self {
        Query {
            group_by,
            bins: BTreeMap::new(),
            aggregates,
            filter: None,
        }
    }

    /// The group-by keys: columns, and the names of binned keys ([`Query::bin`]).
    pub fn group_by(&self) -> &[String] {
        &self.group_by
    }

    /// The aggregates and their output names.
    pub fn aggregates(&self) -> &[(String, Aggregate)] {
        &self.aggregates
    }
}

/// Which groups a release reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Groups {
    /// Public keys, one value per group-by column each: released in this order,
    /// with noisy zeros for a key the data lacks. Rows with other keys are set
    /// aside before bounding (how many there are is not released).
    Public(Vec<Vec<String>>),
    /// Keys selected privately: a key is released when its number of units plus
    /// discrete Laplace noise reaches a threshold τ, so a key held by few units
    /// appears with probability at most δ.
    Private {
        /// δ of the selection.
        delta: f64,
    },
}

impl Groups {
    /// Public keys from anything listing lists of strings.
    pub fn public<K, V>(keys: K) -> Self
    where
        K: IntoIterator<Item = V>,
        V: IntoIterator,
        V::Item: Into<String>,
    {
        Groups::Public(
            keys.into_iter()
                .map(|k| k.into_iter().map(Into::into).collect())
                .collect(),
        )
    }
}

/// Builds a [`Plan`] (see [`Plan::builder`]).
#[derive(Debug, Clone)]
pub struct PlanBuilder {
    pub(super) query: Query,
    pub(super) unit: Option<String>,
    pub(super) contribution: Contribution,
    pub(super) neighbours: Neighbours,
    pub(super) bounds: BTreeMap<String, Bounds>,
    pub(super) groups: Option<Groups>,
    pub(super) confidence: f64,
    pub(super) candidates: u32,
    pub(super) drop_invalid: bool,
}

impl PlanBuilder {
    /// The privacy-unit column and how much one unit may contribute. Without it,
    /// every row is its own unit (one row, one group).
    pub fn privacy_unit(mut self, column: impl Into<String>, limits: Contribution) -> Self {
        self.unit = Some(column.into());
        self.contribution = limits;
        self
    }

    /// The neighbour relation (default: add/remove one unit).
    pub fn neighbours(mut self, neighbours: Neighbours) -> Self {
        self.neighbours = neighbours;
        self
    }

    /// The public bounds of a numeric column.
    pub fn bounds(mut self, column: impl Into<String>, bounds: Bounds) -> Self {
        self.bounds.insert(column.into(), bounds);
        self
    }

    /// Which groups are released (needed when the query groups by anything).
    pub fn groups(mut self, groups: Groups) -> Self {
        self.groups = Some(groups);
        self
    }

    /// Drop rows with an empty unit or a value that is not a finite number instead
    /// of refusing the table ([`Columns::drop_invalid`]).
    pub fn drop_invalid(mut self, drop: bool) -> Self {
        self.drop_invalid = drop;
        self
    }

    /// The confidence level of the intervals (default 0.95).
    pub fn confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// The number of steps between the candidates of a quantile (default 1 000:
    /// 1 001 candidates spread evenly over the column's bounds; at most
    /// [`MAX_QUANTILE_CANDIDATES`]).
    pub fn quantile_candidates(mut self, steps: u32) -> Self {
        self.candidates = steps;
        self
    }

    /// Validates the plan at total budget ε (plus δ for private groups).
    pub fn build(self, epsilon: Epsilon) -> Result<Plan, AggregateError> {
        let spec = Box::new(PlanSpec::of(&self, epsilon));
        let query = self.query;
        if query.aggregates.is_empty() {
            return Err(AggregateError::InvalidParameter(
                "the query has no aggregate (COUNT, SUM, AVG, VARIANCE, STDDEV, QUANTILE)".into(),
            ));
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(AggregateError::InvalidParameter(format!(
                "the confidence level must be strictly between 0 and 1, got {}",
                self.confidence
            )));
        }
        if self.candidates == 0 || self.candidates > MAX_QUANTILE_CANDIDATES {
            return Err(AggregateError::InvalidParameter(format!(
                "a quantile needs between 1 and {MAX_QUANTILE_CANDIDATES} steps between \
                 candidates, got {}",
                self.candidates
            )));
        }
        if let Some(depth) = query.filter.as_ref().map(Filter::depth)
            && depth > MAX_FILTER_DEPTH
        {
            return Err(AggregateError::InvalidParameter(format!(
                "the WHERE clause nests {depth} levels of AND, OR and NOT; at most \
                 {MAX_FILTER_DEPTH} are accepted"
            )));
        }
        let mut names: Vec<&str> = Vec::new();
        for name in query.group_by.iter().map(String::as_str) {
            if names.contains(&name) {
                return Err(AggregateError::InvalidParameter(format!(
                    "the group-by key {name:?} is named twice"
                )));
            }
            names.push(name);
        }
        // The keys read from a column (the binned ones come from their edges).
        let plain: Vec<&str> = query
            .group_by
            .iter()
            .filter(|g| !query.bins.contains_key(*g))
            .map(String::as_str)
            .collect();
        for (name, _) in &query.aggregates {
            if names.contains(&name.as_str()) {
                return Err(AggregateError::InvalidParameter(format!(
                    "the output column {name:?} is named twice"
                )));
            }
            names.push(name);
        }
        // An interval's bounds are output columns too (`NAME_lo`, `NAME_hi`).
        let mut columns: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        for (name, aggregate) in &query.aggregates {
            if matches!(aggregate, Aggregate::Quantile { .. }) {
                continue;
            }
            for bound in [format!("{name}_lo"), format!("{name}_hi")] {
                if columns.contains(&bound) {
                    return Err(AggregateError::InvalidParameter(format!(
                        "the output column {bound:?} (a bound of {name:?}'s interval) is named \
                         twice"
                    )));
                }
                columns.push(bound);
            }
        }
        let groups = match (self.groups, query.group_by.is_empty()) {
            (Some(Groups::Private { .. }), true) => return Err(AggregateError::NothingToSelect),
            // Keys without a GROUP BY (as `SqlRequest` refuses them; a decoded plan
            // may carry them): only the one empty key is the query's single group.
            (Some(Groups::Public(keys)), true) if !(keys.len() == 1 && keys[0].is_empty()) => {
                return Err(AggregateError::InvalidParameter(
                    "public keys for a query without GROUP BY".into(),
                ));
            }
            (_, true) => Groups::Public(vec![Vec::new()]),
            // Only histogram keys: every group is public, from the edges.
            (None, false) if plain.is_empty() => Groups::Public(with_bins(&query, vec![vec![]])?),
            (None, false) => {
                return Err(AggregateError::InvalidParameter(format!(
                    "grouping by {} needs its groups: list the public keys, or select them \
                     privately with a δ",
                    plain.join(", ")
                )));
            }
            (Some(Groups::Public(keys)), false) => {
                if keys.is_empty() {
                    return Err(AggregateError::InvalidParameter("no public key".into()));
                }
                super::request::check_key_combinations(keys.len())?;
                if let Some(k) = keys.iter().find(|k| k.len() != plain.len()) {
                    let binned = if query.bins.is_empty() {
                        String::new()
                    } else {
                        " (a histogram's bins are not listed: they come from its edges)".into()
                    };
                    return Err(AggregateError::InvalidParameter(format!(
                        "the public key {k:?} has {} value(s), the query groups by {} column(s){binned}",
                        k.len(),
                        plain.len()
                    )));
                }
                for k in &keys {
                    for (key, column) in k.iter().zip(&plain) {
                        super::request::check_key(column, key)?;
                    }
                }
                let mut seen = std::collections::HashSet::new();
                if let Some(k) = keys.iter().find(|k| !seen.insert(*k)) {
                    return Err(AggregateError::InvalidParameter(format!(
                        "the public key {k:?} is listed twice"
                    )));
                }
                Groups::Public(with_bins(&query, keys)?)
            }
            // Only histogram keys: every bin is public, selecting them would spend
            // budget (and δ) for nothing and drop bins a public release keeps.
            (Some(Groups::Private { .. }), false) if plain.is_empty() => {
                return Err(AggregateError::PrivateBins {
                    keys: query.group_by.clone(),
                });
            }
            (Some(Groups::Private { delta }), false) => {
                if !(delta > 0.0 && delta < 1.0) {
                    return Err(AggregateError::InvalidParameter(format!(
                        "δ must be strictly between 0 and 1, got {delta}"
                    )));
                }
                Groups::Private { delta }
            }
        };
        let contribution = match self.unit {
            Some(_) => self.contribution,
            None => Contribution::per_row(),
        };
        let read = query.value_columns();
        for column in self.bounds.keys() {
            super::request::check_bounds_read(column, &read)?;
        }
        // The value columns, in first-use order, each with its bounds.
        let mut values: Vec<String> = Vec::new();
        for (_, a) in &query.aggregates {
            if let Some(c) = a.column() {
                if !self.bounds.contains_key(c) {
                    return Err(AggregateError::Unbounded(c.to_string()));
                }
                if !values.iter().any(|v| v == c) {
                    values.push(c.to_string());
                }
            }
        }
        let bounds: Vec<Bounds> = values.iter().map(|c| self.bounds[c]).collect();
        let index = |c: &str| values.iter().position(|v| v == c).unwrap_or(0);
        let mut measures: Vec<Measure> = Vec::new();
        let mut need = |m: Measure| {
            if !measures.contains(&m) {
                measures.push(m);
            }
        };
        for (_, a) in &query.aggregates {
            match a {
                Aggregate::Count => need(Measure::Count),
                Aggregate::Sum(c) => need(Measure::Sum(index(c))),
                Aggregate::Mean(c) => {
                    need(Measure::Count);
                    need(Measure::CentredSum(index(c)));
                }
                Aggregate::Variance(c) | Aggregate::StdDev(c) => {
                    need(Measure::Count);
                    need(Measure::CentredSum(index(c)));
                    need(Measure::CentredSquares(index(c)));
                }
                Aggregate::Quantile { column, level } => {
                    if *level > LEVEL_DEN {
                        return Err(AggregateError::InvalidParameter(format!(
                            "a quantile level must be at most 1, got {}",
                            *level as f64 / LEVEL_DEN as f64
                        )));
                    }
                    need(Measure::Quantile(index(column), *level))
                }
            }
        }
        let shares = measures.len() as u64 + u64::from(matches!(groups, Groups::Private { .. }));
        let share = epsilon.checked_div_int(shares)?;
        let noise = measures
            .iter()
            .map(|&m| measure::noise_for(m, &bounds, contribution, self.neighbours, share))
            .collect::<Result<Vec<_>, _>>()?;
        let selection = match groups {
            Groups::Private { delta } => Some(Discovery::new(
                self.neighbours,
                share,
                delta,
                contribution.max_groups() as usize,
            )?),
            Groups::Public(_) => None,
        };
        Ok(Plan {
            query,
            columns: Columns {
                unit: self.unit,
                group_by: Vec::new(),
                bins: BTreeMap::new(),
                values,
                filter: None,
                drop_invalid: self.drop_invalid,
            },
            contribution,
            neighbours: self.neighbours,
            bounds,
            groups,
            epsilon,
            share,
            measures,
            noise,
            selection,
            confidence: self.confidence,
            candidates: self.candidates,
            spec,
        })
        .map(|mut p| {
            p.columns.group_by = p.query.group_by.clone();
            p.columns.bins = p.query.bins.clone();
            p.columns.filter = p.query.filter.clone();
            p
        })
    }
}

/// One noisy measurement of a [`Plan`] ([`Plan::measurements`]): what it
/// measures and its noise, from public parameters only. The floats are for
/// reports; the noise drawn is the plan's exact discrete Laplace.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlannedMeasurement {
    /// `"count"` (bounded rows per group), `"sum"`, `"centred sum"` (of the value
    /// minus its bounds' midpoint), `"centred squares"` or `"quantile"`.
    pub kind: &'static str,
    /// The value column (`None` for the count).
    pub column: Option<String>,
    /// A quantile's level in `[0, 1]`.
    pub level: Option<f64>,
    /// ε of this measurement (the budget split evenly).
    pub epsilon: Epsilon,
    /// Its ℓ1 sensitivity over one privacy unit, in the measurement's units
    /// (rows for a count, the column's units for a sum, their square for the
    /// centred squares, score units for a quantile), rounded up to the grid.
    pub sensitivity: f64,
    /// The noise's scale (sensitivity / ε) in the same units.
    pub noise_scale: f64,
}

/// How loose one released quantile may be ([`Plan::quantile_notes`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QuantileNote {
    /// The quantile's output name.
    pub name: String,
    /// [`Plan::quantile_rank_errors`]'s bound: with probability at least the
    /// plan's confidence, the released value's rank among its group's bounded
    /// values is within this many ranks of the best candidate's.
    pub ranks: f64,
    /// When the query also has `COUNT(*)`: how many released groups have a noisy
    /// count below `2 · ranks`, where the bound is over half the group and the
    /// released value may lie anywhere between the bounds. `None` without a count
    /// (the release holds nothing public to compare with).
    pub loose_groups: Option<usize>,
}

/// A validated query with everything its guarantee depends on (see the module
/// docs). Built with [`Plan::builder`]; released with [`Plan::release`].
#[derive(Debug, Clone)]
pub struct Plan {
    query: Query,
    columns: Columns,
    contribution: Contribution,
    neighbours: Neighbours,
    bounds: Vec<Bounds>,
    groups: Groups,
    epsilon: Epsilon,
    share: Epsilon,
    measures: Vec<Measure>,
    noise: Vec<DiscreteLaplace>,
    selection: Option<Discovery>,
    confidence: f64,
    candidates: u32,
    /// The inputs the plan was built from ([`Plan::spec`]).
    pub(super) spec: Box<PlanSpec>,
}

impl Plan {
    /// Starts a plan for `query`: add the privacy unit, bounds and groups, then
    /// [`PlanBuilder::build`].
    pub fn builder(query: Query) -> PlanBuilder {
        PlanBuilder {
            query,
            unit: None,
            contribution: Contribution::per_row(),
            neighbours: Neighbours::AddRemove,
            bounds: BTreeMap::new(),
            groups: None,
            confidence: 0.95,
            candidates: 1000,
            drop_invalid: false,
        }
    }

    /// The query's aggregates and their output names, in the release's order
    /// (a front end types a count's column as an integer: its release is one).
    pub fn aggregates(&self) -> &[(String, Aggregate)] {
        self.query.aggregates()
    }

    /// The columns a [`Table`] for this plan must be read with.
    pub fn columns(&self) -> Columns {
        self.columns.clone()
    }

    /// The whole cost: ε, plus δ when groups are selected privately.
    pub fn cost(&self) -> Cost {
        match &self.groups {
            Groups::Private { delta } => Cost::Approximate {
                epsilon: self.epsilon,
                delta: *delta,
            },
            Groups::Public(_) => Cost::Pure(self.epsilon),
        }
    }

    /// The privacy unit the guarantee protects: `None` for one record (every row
    /// is its own unit), `Some(column)` for the units `column` names.
    pub fn privacy_unit(&self) -> Option<&str> {
        self.columns.unit.as_deref()
    }

    /// The neighbour relation of the guarantee.
    pub fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// The contribution limits in force (one row per unit without a unit column).
    pub fn contribution(&self) -> Contribution {
        self.contribution
    }

    /// ε of each measurement (and of the group selection): the budget split evenly.
    pub fn epsilon_share(&self) -> Epsilon {
        self.share
    }

    /// The noise of measurement `m`, if the plan takes it (tests read its scale).
    #[cfg(test)]
    pub(super) fn noise_of(&self, m: Measure) -> Option<&DiscreteLaplace> {
        self.measures
            .iter()
            .position(|x| *x == m)
            .map(|j| &self.noise[j])
    }

    /// Every noisy measurement the release takes, in order, described from the
    /// plan's public parameters only (a dry run: nothing is read or charged).
    /// The private selection of groups, when there is one, is not a measurement
    /// here: its ε is [`Plan::epsilon_share`] and its threshold
    /// [`Plan::threshold`].
    pub fn measurements(&self) -> Vec<PlannedMeasurement> {
        let values = &self.columns.values;
        self.measures
            .iter()
            .zip(&self.noise)
            .map(|(&m, noise)| {
                let scale_steps = noise.scale_num() as f64 / noise.scale_den() as f64;
                let (kind, column, level, unit) = match m {
                    Measure::Count => ("count", None, None, 1.0),
                    Measure::Sum(c) => ("sum", Some(c), None, self.grid(c)),
                    Measure::CentredSum(c) => ("centred sum", Some(c), None, self.grid(c)),
                    Measure::CentredSquares(c) => {
                        ("centred squares", Some(c), None, self.grid(c).powi(2))
                    }
                    Measure::Quantile(c, level) => (
                        "quantile",
                        Some(c),
                        Some(level as f64 / LEVEL_DEN as f64),
                        1.0,
                    ),
                };
                let sensitivity =
                    measure::sensitivity_steps(m, &self.bounds, self.contribution, self.neighbours)
                        .unwrap_or(0);
                PlannedMeasurement {
                    kind,
                    column: column.and_then(|c| values.get(c).cloned()),
                    level,
                    epsilon: self.share,
                    sensitivity: sensitivity as f64 * unit,
                    noise_scale: scale_steps * unit,
                }
            })
            .collect()
    }

    /// The grid step of value column `c` (`2^grid_exp`).
    fn grid(&self, c: usize) -> f64 {
        self.bounds.get(c).map_or(1.0, |b| 2f64.powi(b.grid_exp()))
    }

    /// The selection threshold τ on noisy unit counts, for private groups.
    pub fn threshold(&self) -> Option<i64> {
        self.selection.as_ref().map(Discovery::threshold)
    }

    /// A fresh accountant for one release: budget exactly [`Plan::cost`], bound to
    /// the plan's relation.
    pub fn accountant(&self) -> Result<Accountant, AggregateError> {
        Ok(Accountant::exactly_for(self.cost(), self.neighbours)?)
    }

    /// Releases the query on `table` under a fresh [`Plan::accountant`] and returns
    /// the release with the accountant (its ledger).
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        table: &Table,
        rng: &mut R,
    ) -> Result<(Release, Accountant), AggregateError> {
        let mut accountant = self.accountant()?;
        let release = self.release_charged(table, &mut accountant, rng)?;
        Ok((release, accountant))
    }

    /// Checks, before anything is charged, that `table` was read for this plan and
    /// holds at least one row (an empty input is the curator's input error; a
    /// refusal is not a release, see [`Table`]). [`Plan::release_charged`] calls it
    /// first; a front end that charges a budget file first calls it before that.
    pub fn check_table(&self, table: &Table) -> Result<(), AggregateError> {
        if table.columns() != &self.columns {
            return Err(AggregateError::InvalidParameter(
                "the table was not read with this plan's columns (Plan::columns)".into(),
            ));
        }
        if table.is_empty() {
            return Err(AggregateError::EmptyTable);
        }
        Ok(())
    }

    /// Draws the bounding key ([`BoundingKey`]) from `rng`, bounds the table and
    /// takes its exact totals ([`Plan::totals`]), then releases them
    /// ([`Plan::release_totals`]: every measurement charged before any noise is
    /// drawn; a refused charge samples nothing).
    pub fn release_charged<R: Rng + CryptoRng + ?Sized>(
        &self,
        table: &Table,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Release, AggregateError> {
        self.check_table(table)?;
        let key = BoundingKey::draw(rng);
        let totals = self.totals(table, &key);
        self.release_totals(totals, accountant, rng)
    }

    /// The exact totals of every group after contribution bounding with `key`:
    /// what an engine must compute for [`Plan::release_totals`] (in no particular
    /// order). With public groups, rows of unlisted keys are set aside before
    /// bounding; a group no unit keeps a row in is absent.
    pub fn totals(&self, table: &Table, key: &BoundingKey) -> Vec<GroupTotals> {
        self.totals_in(table, key, None)
    }

    /// [`Plan::totals`], the units bounded in `ranges` ranges (`None`: as many as
    /// [`bound_into`] chooses; with a unit column only).
    pub(super) fn totals_in(
        &self,
        table: &Table,
        key: &BoundingKey,
        ranges: Option<usize>,
    ) -> Vec<GroupTotals> {
        let keys = table.key_values();
        let admit: Vec<bool> = match &self.groups {
            Groups::Public(list) => {
                let listed: std::collections::HashSet<&Vec<String>> = list.iter().collect();
                keys.iter().map(|k| listed.contains(k)).collect()
            }
            Groups::Private { .. } => vec![true; keys.len()],
        };
        let candidates: Vec<Option<Vec<i64>>> = (0..self.bounds.len())
            .map(|c| self.quantile_candidates(c))
            .collect();
        let mut sums = Sums::new(self, table, &candidates);
        let admit = |k: u32| admit[k as usize];
        match ranges {
            Some(r) if table.columns().unit.is_some() => {
                bound_in_ranges(table, admit, self.contribution, key, &mut sums, r)
            }
            _ => bound_into(table, admit, self.contribution, key, &mut sums),
        }
        sums.into_totals(keys)
    }

    /// The public keys (with every bin), when groups are public: only their rows
    /// enter bounding, rows of other keys are set aside first.
    pub fn public_keys(&self) -> Option<&[Vec<String>]> {
        match &self.groups {
            Groups::Public(list) => Some(list),
            Groups::Private { .. } => None,
        }
    }

    /// Value `x` of value column `c` (an index into `Plan::columns().values`)
    /// clamped into its bounds and snapped to their grid, in grid steps.
    pub fn value_steps(&self, c: usize, x: f64) -> i64 {
        self.bounds[c].steps(x)
    }

    /// The query's group-by keys.
    pub(super) fn key_columns(&self) -> &[String] {
        self.query.group_by()
    }

    /// The bounds of value column `c`.
    pub(super) fn value_bounds(&self, c: usize) -> &Bounds {
        &self.bounds[c]
    }

    /// The midpoint of value column `c`'s bounds, in grid steps.
    pub fn mid_steps(&self, c: usize) -> i64 {
        self.bounds[c].mid_steps()
    }

    /// How far from its quantile each released quantile may be, in ranks: for each
    /// `MEDIAN`/`QUANTILE` aggregate (by its output name, in the query's order), the
    /// `R` such that, with probability at least the plan's confidence, the released
    /// candidate's rank among its group's bounded values is no further from `q·n`
    /// than the best candidate's plus `R`: twice the half width of all the
    /// candidates' score noises at once (a union bound), in ranks. The best
    /// candidate's own distance depends on the data: values that tie, or fall
    /// between candidates, leave every candidate of a gap the same score. From public
    /// parameters only. When `R` is comparable to a group's rows the released value
    /// may lie anywhere between the bounds.
    ///
    /// ```
    /// use privq_host::Epsilon;
    /// use privq_host::aggregate::SqlRequest;
    /// let plan = SqlRequest::new("SELECT MEDIAN(temp) AS m FROM t")?
    ///     .tables(["t"])
    ///     .bounds("temp", "-20:50".parse()?)
    ///     .build(Epsilon::new(1, 1)?)?;
    /// let [(name, ranks)] = &plan.quantile_rank_errors()[..] else { panic!() };
    /// assert_eq!(name, "m");
    /// assert!(*ranks > 10.0 && *ranks < 100.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quantile_rank_errors(&self) -> Vec<(String, f64)> {
        let values = &self.columns.values;
        self.query
            .aggregates
            .iter()
            .filter_map(|(name, aggregate)| {
                let Aggregate::Quantile { column, level } = aggregate else {
                    return None;
                };
                let c = values.iter().position(|v| v == column)?;
                let j = self
                    .measures
                    .iter()
                    .position(|m| *m == Measure::Quantile(c, *level))?;
                let m = measure::candidates(&self.bounds[c], self.candidates)
                    .len()
                    .max(1);
                let each = 1.0 - (1.0 - self.confidence) / m as f64;
                let k = measure::half_width(&self.noise[j], each);
                Some((name.clone(), 2.0 * k / LEVEL_DEN as f64))
            })
            .collect()
    }

    /// [`Plan::quantile_rank_errors`] beside `release` (this plan's): for each
    /// quantile, its rank bound and how many groups have a noisy count too small
    /// for it (computed from the released counts only, so it costs no privacy).
    ///
    /// ```
    /// use privq_host::{Epsilon, aggregate::{Plan, SqlRequest, Table}};
    /// let plan = SqlRequest::new("SELECT COUNT(*) AS n, MEDIAN(temp) AS m FROM t")?
    ///     .tables(["t"])
    ///     .bounds("temp", "-20:50".parse()?)
    ///     .build(Epsilon::new(1, 1)?)?;
    /// let table = Table::from_csv("temp\n12\n14\n".as_bytes(), &plan.columns(), 10)?;
    /// let (release, _) = plan.release(&table, &mut privq_host::seeded_rng(1))?;
    /// let [note] = &plan.quantile_notes(&release)[..] else { panic!() };
    /// // Two rows are far fewer than the bound's ranks: that group's median is loose.
    /// assert_eq!((note.name.as_str(), note.loose_groups), ("m", Some(1)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quantile_notes(&self, release: &Release) -> Vec<QuantileNote> {
        let count = self
            .query
            .aggregates
            .iter()
            .position(|(_, a)| matches!(a, Aggregate::Count));
        self.quantile_rank_errors()
            .into_iter()
            .map(|(name, ranks)| QuantileNote {
                loose_groups: count.map(|c| {
                    release
                        .rows()
                        .iter()
                        .filter(|row| {
                            row.estimates()
                                .get(c)
                                .is_some_and(|e| e.value() < 2.0 * ranks)
                        })
                        .count()
                }),
                name,
                ranks,
            })
            .collect()
    }

    /// The candidates (grid steps, ascending) of the quantiles of value column `c`,
    /// when the plan has one.
    pub fn quantile_candidates(&self, c: usize) -> Option<Vec<i64>> {
        self.measures
            .iter()
            .any(|m| matches!(*m, Measure::Quantile(q, _) if q == c))
            .then(|| measure::candidates(&self.bounds[c], self.candidates))
    }

    /// Checks the shape of totals an engine computed (a key of the query's
    /// columns, given once; one entry per value column, with the candidates of
    /// its quantile), as [`Plan::release_totals`] does first: a front end that
    /// charges a budget file before the release calls it before that.
    pub fn check_totals(&self, groups: &[GroupTotals]) -> Result<(), AggregateError> {
        let candidates: Vec<Option<Vec<i64>>> = (0..self.bounds.len())
            .map(|c| self.quantile_candidates(c))
            .collect();
        let mut seen = std::collections::HashSet::new();
        for g in groups {
            let shape_ok = g.key.len() == self.query.group_by.len()
                && g.columns.len() == self.bounds.len()
                && g.columns
                    .iter()
                    .zip(&candidates)
                    .all(|(t, c)| t.at_candidate.len() == c.as_ref().map_or(0, Vec::len))
                && seen.insert(&g.key);
            if !shape_ok {
                return Err(AggregateError::InvalidParameter(format!(
                    "the totals of group {:?} do not fit the plan (or are given twice)",
                    g.key
                )));
            }
        }
        Ok(())
    }

    /// The release from exact bounded totals, whichever engine computed them: the
    /// one function that decides what is released. Checks the totals' shape,
    /// charges `accountant` with the whole cost (tried on a copy first, so a
    /// budget that cannot pay for everything pays for nothing), then selects
    /// private groups from the units per key, then draws every measurement's noise,
    /// in a fixed order: groups in release order (the public list; private keys in
    /// key order, a histogram's bins in edge order), whatever order `groups` came in.
    pub fn release_totals<R: Rng + CryptoRng + ?Sized>(
        &self,
        mut groups: Vec<GroupTotals>,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Release, AggregateError> {
        self.check_totals(&groups)?;
        let candidates: Vec<Option<Vec<i64>>> = (0..self.bounds.len())
            .map(|c| self.quantile_candidates(c))
            .collect();
        let unit = match &self.columns.unit {
            Some(u) => format!("unit {u:?}"),
            None => "unit = row".into(),
        };
        accountant
            .clone()
            .charge_as(self.neighbours, "the whole query", self.cost())?;
        let mut receipts = Vec::new();
        if let Some(selection) = &self.selection {
            receipts.push(accountant.charge_as(
                self.neighbours,
                &format!(
                    "group selection ({unit}, threshold {})",
                    selection.threshold()
                ),
                selection.cost(),
            )?);
        }
        for m in &self.measures {
            let label = match *m {
                Measure::Count => format!("count by group ({unit})"),
                Measure::Sum(c) => format!("sum of {} ({unit})", self.columns.values[c]),
                Measure::CentredSum(c) => {
                    format!("centred sum of {} ({unit})", self.columns.values[c])
                }
                Measure::CentredSquares(c) => {
                    format!(
                        "centred sum of squares of {} ({unit})",
                        self.columns.values[c]
                    )
                }
                Measure::Quantile(c, l) => format!(
                    "quantile {} of {} ({unit})",
                    l as f64 / LEVEL_DEN as f64,
                    self.columns.values[c]
                ),
            };
            receipts.push(accountant.charge_as(self.neighbours, &label, Cost::Pure(self.share))?);
        }
        // The released groups: indices into `groups` (None: a public key the data
        // lacks), and their keys.
        let (released, keys): (Vec<Option<usize>>, Vec<Vec<String>>) = match &self.groups {
            Groups::Public(list) => {
                let ids: HashMap<&Vec<String>, usize> = groups
                    .iter()
                    .enumerate()
                    .map(|(i, g)| (&g.key, i))
                    .collect();
                (
                    list.iter().map(|k| ids.get(k).copied()).collect(),
                    list.clone(),
                )
            }
            Groups::Private { .. } => {
                let selection = self.selection.as_ref().ok_or_else(|| {
                    AggregateError::InvalidParameter("private groups without a selection".into())
                })?;
                groups.retain(|g| g.units > 0);
                self.sort_keys(&mut groups);
                let noise = selection.noise();
                let mut kept = Vec::new();
                for (i, g) in groups.iter().enumerate() {
                    let units = i64::try_from(g.units).unwrap_or(i64::MAX);
                    if units.saturating_add(noise.sample(rng)?) >= selection.threshold() {
                        kept.push(i);
                    }
                }
                let keys = kept.iter().map(|&i| groups[i].key.clone()).collect();
                (kept.into_iter().map(Some).collect(), keys)
            }
        };
        // Each measurement over the released groups, in grid steps (counts: rows).
        let none = ColumnTotals::default();
        let mut values: Vec<Vec<i128>> = Vec::with_capacity(self.measures.len());
        for (m, noise) in self.measures.iter().zip(&self.noise) {
            let mut column = Vec::with_capacity(released.len());
            for g in &released {
                let group = g.map(|g| &groups[g]);
                let t = |c: usize| group.map_or(&none, |g| &g.columns[c]);
                let exact = match *m {
                    Measure::Count => i128::from(group.map_or(0, |g| g.rows)),
                    Measure::Sum(c) => t(c).sum,
                    Measure::CentredSum(c) => t(c).centred,
                    Measure::CentredSquares(c) => t(c).squares,
                    Measure::Quantile(c, level) => {
                        let cands = candidates[c].as_deref().unwrap_or(&[]);
                        let q =
                            measure::noisy_quantile(&t(c).at_candidate, level, cands, noise, rng)?;
                        column.push(i128::from(q));
                        continue;
                    }
                };
                column.push(exact + i128::from(noise.sample(rng)?));
            }
            values.push(column);
        }
        drop(receipts);
        Ok(self.assemble(&keys, &values))
    }

    /// Sorts groups into key order, a histogram's bins in edge order.
    fn sort_keys(&self, groups: &mut [GroupTotals]) {
        let ranks: Vec<Option<HashMap<&str, usize>>> = self
            .query
            .group_by
            .iter()
            .map(|g| {
                self.query.bins.get(g).map(|b| {
                    b.labels()
                        .iter()
                        .enumerate()
                        .map(|(i, l)| (l.as_str(), i))
                        .collect()
                })
            })
            .collect();
        groups.sort_by(|a, b| {
            a.key
                .iter()
                .zip(&b.key)
                .zip(&ranks)
                .map(|((x, y), rank)| match rank {
                    Some(r) => r.get(x.as_str()).cmp(&r.get(y.as_str())).then(x.cmp(y)),
                    None => x.cmp(y),
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }

    /// The released table from the noisy measurements (post-processing only).
    fn assemble(&self, keys: &[Vec<String>], values: &[Vec<i128>]) -> Release {
        let at = |m: Measure| self.measures.iter().position(|x| *x == m).unwrap_or(0);
        let mut rows = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let key = key.clone();
            let mut estimates = Vec::new();
            for (_, a) in &self.query.aggregates {
                let col = |c: &str| self.columns.values.iter().position(|v| v == c).unwrap_or(0);
                let estimate = match a {
                    Aggregate::Count => {
                        let j = at(Measure::Count);
                        let n = values[j][i] as f64;
                        let k = measure::half_width(&self.noise[j], self.confidence);
                        Estimate::new(n, Some((n - k, n + k)))
                    }
                    Aggregate::Sum(c) => {
                        let c = col(c);
                        let j = at(Measure::Sum(c));
                        let b = &self.bounds[c];
                        let s = values[j][i] as f64;
                        let k = measure::half_width(&self.noise[j], self.confidence);
                        Estimate::new(b.value(s), Some((b.value(s - k), b.value(s + k))))
                    }
                    Aggregate::Mean(c) => {
                        let c = col(c);
                        let b = &self.bounds[c];
                        let (jn, js) = (at(Measure::Count), at(Measure::CentredSum(c)));
                        mean(
                            b,
                            values[jn][i],
                            values[js][i],
                            &self.noise[jn],
                            &self.noise[js],
                            self.confidence,
                        )
                    }
                    Aggregate::Variance(c) | Aggregate::StdDev(c) => {
                        let c = col(c);
                        let b = &self.bounds[c];
                        let n = values[at(Measure::Count)][i];
                        let s1 = values[at(Measure::CentredSum(c))][i];
                        let s2 = values[at(Measure::CentredSquares(c))][i];
                        let noise = [
                            &self.noise[at(Measure::Count)],
                            &self.noise[at(Measure::CentredSum(c))],
                            &self.noise[at(Measure::CentredSquares(c))],
                        ];
                        let var = variance(b, n, s1, s2, noise, self.confidence);
                        if matches!(a, Aggregate::StdDev(_)) {
                            // The root is increasing: the interval's image holds
                            // the standard deviation exactly when the variance's
                            // holds the variance.
                            let (lo, hi) = var.interval.unwrap_or_default();
                            Estimate::new(var.value.sqrt(), Some((lo.sqrt(), hi.sqrt())))
                        } else {
                            var
                        }
                    }
                    Aggregate::Quantile { column, level } => {
                        let c = col(column);
                        let b = &self.bounds[c];
                        let j = at(Measure::Quantile(c, *level));
                        Estimate::new(b.value(values[j][i] as f64), None)
                    }
                };
                estimates.push(estimate);
            }
            rows.push(ReleasedRow { key, estimates });
        }
        Release {
            group_by: self.query.group_by.clone(),
            names: self
                .query
                .aggregates
                .iter()
                .map(|(n, _)| n.clone())
                .collect(),
            intervals: self
                .query
                .aggregates
                .iter()
                .map(|(_, a)| !matches!(a, Aggregate::Quantile { .. }))
                .collect(),
            counts: self
                .query
                .aggregates
                .iter()
                .map(|(_, a)| matches!(a, Aggregate::Count))
                .collect(),
            rows,
            threshold: self.threshold(),
        }
    }
}

/// The exact totals of every group key of a table, added up row by row as
/// bounding keeps them (the [`Keep`] of [`Plan::totals`]): counts and sums in
/// vectors indexed by the interned key.
struct Sums<'a> {
    /// Each value column's values, its grid and its midpoint in steps.
    columns: Vec<(&'a [f64], Stepper, i64)>,
    candidates: &'a [Option<Vec<i64>>],
    units: Vec<u64>,
    rows: Vec<u64>,
    /// Σ s and Σ (s − m)² of key `k` and column `c` at `k · columns + c` (Σ (s − m)
    /// is Σ s − rows · m).
    sums: Vec<(i128, i128)>,
    /// The candidate counts of key `k` and column `c` at `k · columns + c` (empty
    /// without quantiles; each allocated at its first row).
    buckets: Vec<Vec<u64>>,
}

impl<'a> Sums<'a> {
    fn new(plan: &Plan, table: &'a Table, candidates: &'a [Option<Vec<i64>>]) -> Self {
        let keys = table.key_values().len();
        let columns: Vec<(&[f64], Stepper, i64)> = plan
            .bounds
            .iter()
            .enumerate()
            .map(|(c, b)| (table.values(c), b.stepper(), b.mid_steps()))
            .collect();
        let cells = keys * columns.len();
        Sums {
            candidates,
            units: vec![0; keys],
            rows: vec![0; keys],
            sums: vec![(0, 0); cells],
            buckets: if candidates.iter().any(Option::is_some) {
                vec![Vec::new(); cells]
            } else {
                Vec::new()
            },
            columns,
        }
    }

    /// The totals of every key with a unit, in key order.
    fn into_totals(self, keys: &[Vec<String>]) -> Vec<GroupTotals> {
        let width = self.columns.len();
        let mut buckets = self.buckets;
        let mut out = Vec::new();
        for (k, key) in keys.iter().enumerate() {
            if self.units[k] == 0 {
                continue;
            }
            let rows = self.rows[k];
            let columns = (0..width)
                .map(|c| {
                    let at = k * width + c;
                    let (sum, squares) = self.sums[at];
                    let mid = self.columns[c].2;
                    ColumnTotals {
                        sum,
                        centred: sum - i128::from(rows) * i128::from(mid),
                        squares,
                        at_candidate: match &self.candidates[c] {
                            Some(cands) if buckets[at].is_empty() => vec![0; cands.len()],
                            Some(_) => std::mem::take(&mut buckets[at]),
                            None => Vec::new(),
                        },
                    }
                })
                .collect();
            out.push(GroupTotals {
                key: key.clone(),
                units: self.units[k],
                rows,
                columns,
            });
        }
        out
    }
}

impl Keep for Sums<'_> {
    #[inline]
    fn row(&mut self, key: u32, row: u32) {
        let (k, r) = (key as usize, row as usize);
        self.rows[k] += 1;
        let width = self.columns.len();
        for (c, &(x, stepper, mid)) in self.columns.iter().enumerate() {
            let s = stepper.steps(x[r]);
            let d = i128::from(s) - i128::from(mid);
            let cell = &mut self.sums[k * width + c];
            cell.0 += i128::from(s);
            cell.1 += d * d;
            if let Some(cands) = &self.candidates[c] {
                let counts = &mut self.buckets[k * width + c];
                if counts.is_empty() {
                    *counts = vec![0; cands.len()];
                }
                if let Some(n) = counts.get_mut(candidate_bucket(cands, s)) {
                    *n += 1;
                }
            }
        }
    }

    fn unit(&mut self, key: u32) {
        self.units[key as usize] += 1;
    }

    fn fork(&self) -> Self {
        Sums {
            columns: self.columns.clone(),
            candidates: self.candidates,
            units: vec![0; self.units.len()],
            rows: vec![0; self.rows.len()],
            sums: vec![(0, 0); self.sums.len()],
            buckets: vec![Vec::new(); self.buckets.len()],
        }
    }

    fn join(&mut self, other: Self) {
        for (a, b) in self.units.iter_mut().zip(other.units) {
            *a += b;
        }
        for (a, b) in self.rows.iter_mut().zip(other.rows) {
            *a += b;
        }
        for (a, b) in self.sums.iter_mut().zip(other.sums) {
            a.0 += b.0;
            a.1 += b.1;
        }
        for (a, b) in self.buckets.iter_mut().zip(other.buckets) {
            if a.is_empty() {
                *a = b;
            } else {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
            }
        }
    }
}

/// The most public groups a plan lists (the listed keys times the bins).
const MAX_PUBLIC_GROUPS: u64 = 1_000_000;

/// The public keys with every combination of the query's bins inserted at their
/// keys' positions: for each listed key (values of the columns that are not binned,
/// in order), every bin in edge order, the last binned key varying fastest. The
/// count is checked against [`MAX_PUBLIC_GROUPS`] before anything is built.
fn with_bins(query: &Query, keys: Vec<Vec<String>>) -> Result<Vec<Vec<String>>, AggregateError> {
    if query.bins.is_empty() {
        return Ok(keys);
    }
    let slots: Vec<Option<&Binning>> = query.group_by.iter().map(|g| query.bins.get(g)).collect();
    let per_key = slots
        .iter()
        .flatten()
        .fold(1u64, |n, b| n.saturating_mul(b.bins() as u64));
    let groups = per_key.saturating_mul(keys.len() as u64);
    if groups > MAX_PUBLIC_GROUPS {
        return Err(AggregateError::TooManyGroups {
            groups,
            max: MAX_PUBLIC_GROUPS,
        });
    }
    let mut out = Vec::with_capacity(groups as usize);
    for key in &keys {
        for mut combination in 0..per_key {
            let mut full = vec![String::new(); slots.len()];
            // Mixed radix, the last binned key the fastest digit.
            for (slot, b) in full.iter_mut().zip(&slots).rev() {
                if let Some(b) = b {
                    let n = b.bins() as u64;
                    *slot = b.labels()[(combination % n) as usize].clone();
                    combination /= n;
                }
            }
            let mut values = key.iter();
            for (slot, b) in full.iter_mut().zip(&slots) {
                if b.is_none() {
                    *slot = values.next().cloned().unwrap_or_default();
                }
            }
            out.push(full);
        }
    }
    Ok(out)
}

/// The mean from a noisy count `n` and a noisy centred sum `s` (grid steps):
/// `mid + s/max(n, 1)`, clamped into the bounds. Its interval's half width is
/// `√(k_s² + (m·k_n)²)/n`, with `k_s` and `k_n` the exact half widths of the sum's
/// and the count's noise at `confidence` and `m` the centred mean: exact when the
/// sum's noise dominates (the usual case), conservative otherwise. With a noisy
/// count below 1 the mean is the midpoint and the interval the whole range.
fn mean(
    b: &Bounds,
    n: i128,
    s: i128,
    count_noise: &DiscreteLaplace,
    sum_noise: &DiscreteLaplace,
    confidence: f64,
) -> Estimate {
    let (lo, hi) = b.step_range();
    let (lo, hi) = (lo as f64, hi as f64);
    let mid = b.mid_steps() as f64;
    if n < 1 {
        return Estimate::new(b.value(mid), Some((b.value(lo), b.value(hi))));
    }
    let n = n as f64;
    let m = s as f64 / n;
    let value = (mid + m).clamp(lo, hi);
    let k_s = measure::half_width(sum_noise, confidence);
    let k_n = measure::half_width(count_noise, confidence);
    let half = k_s.hypot(m * k_n) / n;
    let (a, c) = ((value - half).clamp(lo, hi), (value + half).clamp(lo, hi));
    Estimate::new(b.value(value), Some((b.value(a), b.value(c))))
}

/// The population variance from a noisy count `n`, centred sum `s1` and centred
/// sum of squares `s2` (grid steps): `s2/n − (s1/n)²`, clamped into
/// `[0, (width/2)²]` (the largest variance of values within the bounds), in the
/// column's units squared. `noise` holds the three measurements' noise, in that
/// order.
///
/// Its interval is the delta method's with exact half widths, as for the mean:
/// the variance moves by `1/n` per unit of `s2`, by `−2m/n` per unit of `s1` and
/// by `(2m² − s2/n)/n` per unit of `n` (`m = s1/n`, all at the noisy values), so
/// the half width is `√(k₂² + (2m·k₁)² + ((2m² − s2/n)·k_n)²)/n` with `k₂`, `k₁`,
/// `k_n` the exact half widths of the three noises at `confidence`; clamped
/// into the same range. With a noisy count below 1 the variance is 0 and the
/// interval the whole range.
fn variance(
    b: &Bounds,
    n: i128,
    s1: i128,
    s2: i128,
    noise: [&DiscreteLaplace; 3],
    confidence: f64,
) -> Estimate {
    let (lo, hi) = b.step_range();
    let half = (hi - lo) as f64 / 2.0;
    let top = half * half;
    let unit = 2f64.powi(2 * b.grid_exp());
    if n < 1 {
        return Estimate::new(0.0, Some((0.0, top * unit)));
    }
    let n = n as f64;
    let m = s1 as f64 / n;
    let q = s2 as f64 / n;
    let var = (q - m * m).clamp(0.0, top);
    let [k_n, k_1, k_2] = noise.map(|z| measure::half_width(z, confidence));
    let width = k_2.hypot(2.0 * m * k_1).hypot((2.0 * m * m - q) * k_n) / n;
    let (a, c) = ((var - width).clamp(0.0, top), (var + width).clamp(0.0, top));
    Estimate::new(var * unit, Some((a * unit, c * unit)))
}

/// One released value and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    value: f64,
    interval: Option<(f64, f64)>,
}

impl Estimate {
    fn new(value: f64, interval: Option<(f64, f64)>) -> Self {
        Estimate { value, interval }
    }

    /// The released value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The interval at the plan's confidence (`None` for a quantile).
    pub fn interval(&self) -> Option<(f64, f64)> {
        self.interval
    }
}

/// One released group.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleasedRow {
    key: Vec<String>,
    estimates: Vec<Estimate>,
}

impl ReleasedRow {
    /// The group's key, one value per group-by column.
    pub fn key(&self) -> &[String] {
        &self.key
    }

    /// One estimate per aggregate of the query, in order.
    pub fn estimates(&self) -> &[Estimate] {
        &self.estimates
    }
}

/// What a query releases.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    group_by: Vec<String>,
    names: Vec<String>,
    intervals: Vec<bool>,
    counts: Vec<bool>,
    rows: Vec<ReleasedRow>,
    threshold: Option<i64>,
}

impl Release {
    /// The group-by columns.
    pub fn group_by(&self) -> &[String] {
        &self.group_by
    }

    /// The aggregates' output names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether each aggregate's estimates carry an interval (all but quantiles
    /// do), known even when no group is released.
    pub fn has_interval(&self) -> &[bool] {
        &self.intervals
    }

    /// The released groups.
    pub fn rows(&self) -> &[ReleasedRow] {
        &self.rows
    }

    /// The selection threshold, when groups were selected privately.
    pub fn threshold(&self) -> Option<i64> {
        self.threshold
    }

    /// The release as a table's columns, named and ordered as `privq sql` prints them: the
    /// group-by columns (text), then each aggregate and, where it has one, its
    /// interval's bounds `NAME_lo` and `NAME_hi`. A count is an integer column
    /// (its release is one: the kept rows plus integer noise); every other
    /// estimate and every interval bound is a float.
    ///
    /// ```
    /// use privq_host::{Epsilon, aggregate::{ReleasedValues, SqlRequest, Table}};
    /// let plan = SqlRequest::new("SELECT region, COUNT(*) AS n FROM t GROUP BY region")?
    ///     .tables(["t"])
    ///     .keys("region", ["north"])
    ///     .build(Epsilon::new(1, 1)?)?;
    /// let table = Table::from_csv("region\nnorth\n".as_bytes(), &plan.columns(), 10)?;
    /// let (release, _) = plan.release(&table, &mut privq_host::seeded_rng(1))?;
    /// let columns = release.columns();
    /// let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    /// assert_eq!(names, ["region", "n", "n_lo", "n_hi"]);
    /// assert!(matches!(columns[1].values, ReleasedValues::Int(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn columns(&self) -> Vec<ReleasedColumn> {
        let mut out: Vec<ReleasedColumn> = self
            .group_by
            .iter()
            .enumerate()
            .map(|(k, name)| ReleasedColumn {
                name: name.clone(),
                values: ReleasedValues::Text(self.rows.iter().map(|r| r.key[k].clone()).collect()),
            })
            .collect();
        for (i, name) in self.names.iter().enumerate() {
            let floats = |f: &dyn Fn(&Estimate) -> f64| -> Vec<f64> {
                self.rows.iter().map(|r| f(&r.estimates[i])).collect()
            };
            let values = floats(&|e| e.value());
            let ints = self.counts[i]
                .then(|| {
                    values
                        .iter()
                        .map(|&v| whole_number(v))
                        .collect::<Option<Vec<_>>>()
                })
                .flatten();
            out.push(ReleasedColumn {
                name: name.clone(),
                values: ints.map_or(ReleasedValues::Float(values), ReleasedValues::Int),
            });
            if self.intervals[i] {
                let bound = |hi: bool| {
                    floats(&|e| {
                        e.interval()
                            .map_or(f64::NAN, |(lo, h)| if hi { h } else { lo })
                    })
                };
                out.push(ReleasedColumn {
                    name: format!("{name}_lo"),
                    values: ReleasedValues::Float(bound(false)),
                });
                out.push(ReleasedColumn {
                    name: format!("{name}_hi"),
                    values: ReleasedValues::Float(bound(true)),
                });
            }
        }
        out
    }
}

/// `x` as an integer when it is a whole number held exactly (below 9·10¹⁵ in
/// magnitude): how a count, or a sum on a coarse grid, is written.
///
/// ```
/// use privq_host::aggregate::whole_number;
/// assert_eq!(whole_number(12.0), Some(12));
/// assert_eq!(whole_number(12.5), None);
/// ```
pub fn whole_number(x: f64) -> Option<i64> {
    (x.fract() == 0.0 && x.abs() < 9.0e15).then_some(x as i64)
}

/// One column of a [`Release`] as a table ([`Release::columns`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReleasedColumn {
    /// The column's name.
    pub name: String,
    /// Its values, one per released group.
    pub values: ReleasedValues,
}

/// The values of a [`ReleasedColumn`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReleasedValues {
    /// A group-by column.
    Text(Vec<String>),
    /// A count.
    Int(Vec<i64>),
    /// Any other estimate, or an interval's bound.
    Float(Vec<f64>),
}
