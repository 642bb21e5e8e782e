//! A private-statistics request as a front end states it: the SQL text, the tables
//! it was given, the privacy unit, bounds and keys per column, δ and ε. Every check
//! of how these options fit the query is made here, so `privq sql` and
//! `privq.sql` refuse the same requests with the same reasons.

use privq_core::Epsilon;

use crate::accountant::{BudgetFile, BudgetFileError, BudgetStatus, Cap, RunCost};

use super::{AggregateError, Bounds, Contribution, Groups, Neighbours, Plan, parse_sql};

/// The most combinations of public keys a request may list.
pub const MAX_KEY_COMBINATIONS: usize = 1_000_000;

/// A δ above this is large: a group held by one unit is released with probability
/// up to δ ([`Plan::warnings`]).
pub const LARGE_DELTA: f64 = 1e-3;

/// One public key of `column`, as a plan holds it: not empty, and trimmed as a
/// row's key is. [`SqlRequest::build`] checks each value it is given (trimmed)
/// and [`PlanBuilder::build`](super::PlanBuilder::build) each key of every plan,
/// so a plan rebuilt from a spec ([`PlanSpec`](super::PlanSpec), e.g. decoded
/// from a cluster's payload) is held to the same rules.
pub(super) fn check_key(column: &str, key: &str) -> Result<(), AggregateError> {
    if key.trim().is_empty() {
        return Err(AggregateError::EmptyKey(column.to_string()));
    }
    if key.trim().len() != key.len() {
        return Err(AggregateError::UntrimmedKey {
            column: column.to_string(),
            key: key.to_string(),
        });
    }
    Ok(())
}

/// At most [`MAX_KEY_COMBINATIONS`] combinations of public keys (shared as
/// [`check_key`] is).
pub(super) fn check_key_combinations(n: usize) -> Result<(), AggregateError> {
    if n > MAX_KEY_COMBINATIONS {
        return Err(AggregateError::TooManyKeys {
            max: MAX_KEY_COMBINATIONS,
        });
    }
    Ok(())
}

/// Bounds only for a column an aggregate reads (`read`, the query's value
/// columns); shared as [`check_key`] is.
pub(super) fn check_bounds_read(column: &str, read: &[String]) -> Result<(), AggregateError> {
    if read.iter().any(|c| c == column) {
        return Ok(());
    }
    let read = if read.is_empty() {
        "no column".to_string()
    } else {
        read.iter()
            .map(|c| format!("{c:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(AggregateError::BoundsNotAggregated {
        column: column.to_string(),
        read,
    })
}

/// A `SELECT` over one table with the options that make it a [`Plan`].
///
/// ```
/// use privq_host::aggregate::SqlRequest;
/// use privq_host::Epsilon;
///
/// let plan = SqlRequest::new("SELECT region, COUNT(*) FROM readings GROUP BY region")?
///     .tables(["readings"])
///     .privacy_unit("device", 1, 10)
///     .keys("region", ["north", "south"])
///     .build(Epsilon::new(1, 1)?)?;
/// assert_eq!(plan.columns().unit.as_deref(), Some("device"));
/// // Keys for a column the query does not group by: refused, naming the option.
/// let e = SqlRequest::new("SELECT region, COUNT(*) FROM readings GROUP BY region")?
///     .tables(["readings"])
///     .keys("city", ["a"])
///     .build(Epsilon::new(1, 1)?)
///     .unwrap_err();
/// assert_eq!(e.option(), Some("keys"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SqlRequest {
    parsed: super::SqlQuery,
    tables: Vec<String>,
    unit: Option<String>,
    max_groups: u32,
    max_rows: u32,
    bounds: Vec<(String, Bounds)>,
    keys: Vec<(String, Vec<String>)>,
    delta: Option<f64>,
    neighbours: Neighbours,
    confidence: f64,
    candidates: u32,
    drop_invalid: bool,
    header: Option<Vec<String>>,
}

impl SqlRequest {
    /// Parses the query (the supported subset, see [`parse_sql`]); the defaults are
    /// the program's: no privacy unit (each row its own unit), one group and one row
    /// per unit, add/remove neighbours, 95% confidence, 1 000 quantile steps.
    pub fn new(query: &str) -> Result<Self, AggregateError> {
        Ok(SqlRequest {
            parsed: parse_sql(query)?,
            tables: Vec::new(),
            unit: None,
            max_groups: 1,
            max_rows: 1,
            bounds: Vec::new(),
            keys: Vec::new(),
            delta: None,
            neighbours: Neighbours::AddRemove,
            confidence: 0.95,
            candidates: 1000,
            drop_invalid: false,
            header: None,
        })
    }

    /// The columns the table has (its header or schema: names only, public), so
    /// that [`SqlRequest::build`] reports a column the query or the privacy unit
    /// names and the table lacks as [`AggregateError::MissingColumn`] first,
    /// before any other check of the request (a misspelt column is not reported
    /// as a column without bounds). Bounds for a column the query does not read
    /// stay [`AggregateError::BoundsNotAggregated`].
    pub fn header(mut self, columns: Vec<String>) -> Self {
        self.header = Some(columns);
        self
    }

    /// Every column the request reads, in first-use order: the privacy unit, the
    /// group-by columns (a histogram's source column), the aggregated columns and
    /// the filter's.
    pub fn named_columns(&self) -> Vec<String> {
        let query = &self.parsed.query;
        let mut out: Vec<String> = Vec::new();
        let mut add = |c: &str| {
            if !out.iter().any(|o| o == c) {
                out.push(c.to_string());
            }
        };
        if let Some(u) = &self.unit {
            add(u);
        }
        for g in query.group_by() {
            add(query.binning(g).map_or(g.as_str(), |b| b.column()));
        }
        for v in query.value_columns() {
            add(&v);
        }
        if let Some(f) = query.filter() {
            for c in f.columns() {
                add(&c);
            }
        }
        out
    }

    /// The table the query reads (its `FROM`).
    pub fn table(&self) -> &str {
        &self.parsed.table
    }

    /// The names of the tables the caller has: the query's must be one of them.
    pub fn tables<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tables.extend(names.into_iter().map(Into::into));
        self
    }

    /// The privacy-unit column and what one unit may contribute: at most
    /// `max_groups` groups and `max_rows` rows per group.
    pub fn privacy_unit(
        mut self,
        column: impl Into<String>,
        max_groups: u32,
        max_rows: u32,
    ) -> Self {
        self.unit = Some(column.into());
        self.max_groups = max_groups;
        self.max_rows = max_rows;
        self
    }

    /// Contribution limits without a unit column: refused by [`SqlRequest::build`]
    /// unless both are 1 (a front end passes its options through unchanged).
    pub fn limits(mut self, max_groups: u32, max_rows: u32) -> Self {
        self.max_groups = max_groups;
        self.max_rows = max_rows;
        self
    }

    /// The public range of an aggregated column.
    pub fn bounds(mut self, column: impl Into<String>, bounds: Bounds) -> Self {
        self.bounds.push((column.into(), bounds));
        self
    }

    /// The public keys of a plain group-by column (the groups are every combination
    /// of the columns' keys).
    pub fn keys<I, S>(mut self, column: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keys
            .push((column.into(), values.into_iter().map(Into::into).collect()));
        self
    }

    /// Select the groups privately, with this δ, instead of listing keys.
    pub fn delta(mut self, delta: f64) -> Self {
        self.delta = Some(delta);
        self
    }

    /// The neighbour relation (default: add/remove one unit).
    pub fn neighbours(mut self, neighbours: Neighbours) -> Self {
        self.neighbours = neighbours;
        self
    }

    /// The confidence level of the intervals (default 0.95).
    pub fn confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// The steps between a quantile's candidates (default 1 000).
    pub fn quantile_candidates(mut self, steps: u32) -> Self {
        self.candidates = steps;
        self
    }

    /// Drop invalid rows instead of refusing the table.
    pub fn drop_invalid(mut self, drop: bool) -> Self {
        self.drop_invalid = drop;
        self
    }

    /// Checks the options against the query and each other, then builds the plan at
    /// total budget ε. Nothing is read or charged.
    pub fn build(self, epsilon: Epsilon) -> Result<Plan, AggregateError> {
        let SqlRequest { parsed, .. } = &self;
        if !self.tables.contains(&parsed.table) {
            return Err(AggregateError::UnknownTable {
                table: parsed.table.clone(),
                given: self.tables.clone(),
            });
        }
        if let Some(header) = &self.header
            && let Some(column) = self
                .named_columns()
                .into_iter()
                .find(|c| !header.contains(c))
        {
            return Err(AggregateError::MissingColumn {
                column,
                available: header.clone(),
            });
        }
        let query = &parsed.query;
        let mut builder = Plan::builder(query.clone())
            .neighbours(self.neighbours)
            .confidence(self.confidence)
            .quantile_candidates(self.candidates)
            .drop_invalid(self.drop_invalid);
        match &self.unit {
            Some(unit) => {
                builder = builder.privacy_unit(
                    unit.clone(),
                    Contribution::new(self.max_groups, self.max_rows)?,
                );
            }
            None if self.max_groups != 1 || self.max_rows != 1 => {
                return Err(AggregateError::LimitsWithoutUnit);
            }
            None => {}
        }
        let read = query.value_columns();
        for (i, (column, bounds)) in self.bounds.iter().enumerate() {
            if self.bounds[..i].iter().any(|(c, _)| c == column) {
                return Err(AggregateError::Twice {
                    option: "bounds",
                    column: column.clone(),
                });
            }
            check_bounds_read(column, &read)?;
            builder = builder.bounds(column.clone(), *bounds);
        }
        let group_by = query.group_by();
        // The group-by columns whose keys are listed: a histogram's come from its edges.
        let plain: Vec<&String> = group_by
            .iter()
            .filter(|g| query.binning(g).is_none())
            .collect();
        match (self.keys.is_empty(), self.delta) {
            (false, Some(_)) => return Err(AggregateError::KeysAndDelta),
            // Without a GROUP BY the builder refuses it (NothingToSelect).
            (true, Some(delta)) => builder = builder.groups(Groups::Private { delta }),
            (false, None) => {
                let mut lists: Vec<Option<&Vec<String>>> = vec![None; plain.len()];
                for (column, values) in &self.keys {
                    if query.binning(column).is_some() {
                        return Err(AggregateError::KeysForBins(column.clone()));
                    }
                    let Some(i) = plain.iter().position(|g| *g == column) else {
                        return Err(AggregateError::KeysNotGrouped(column.clone()));
                    };
                    if lists[i].is_some() {
                        return Err(AggregateError::Twice {
                            option: "keys",
                            column: column.clone(),
                        });
                    }
                    if values.is_empty() {
                        return Err(AggregateError::EmptyKey(column.clone()));
                    }
                    for v in values {
                        check_key(column, v.trim())?;
                    }
                    lists[i] = Some(values);
                }
                let mut keys: Vec<Vec<String>> = vec![Vec::new()];
                for (column, list) in plain.iter().zip(&lists) {
                    let list = list.ok_or_else(|| AggregateError::MissingKeys {
                        columns: vec![column.to_string()],
                        listed: true,
                    })?;
                    // Before the product is built.
                    check_key_combinations(keys.len().saturating_mul(list.len()))?;
                    keys = keys
                        .iter()
                        .flat_map(|k| {
                            list.iter().map(move |v| {
                                let mut k = k.clone();
                                k.push(v.trim().to_string());
                                k
                            })
                        })
                        .collect();
                }
                builder = builder.groups(Groups::Public(keys));
            }
            (true, None) if !plain.is_empty() => {
                return Err(AggregateError::MissingKeys {
                    columns: plain.iter().map(|g| g.to_string()).collect(),
                    listed: false,
                });
            }
            (true, None) => {}
        }
        builder.build(epsilon)
    }
}

impl Plan {
    /// Charges a session accountant (shared by several releases) the plan's whole
    /// cost, before the release: a refused charge leaves the session unchanged. A
    /// session with no charges yet is bound to the plan's neighbour relation; one
    /// holding charges under no relation refuses. The charge is stated for the
    /// plan's privacy unit ([`Plan::privacy_unit`]), so a session holding charges
    /// for another unit (one record, or another column) refuses it
    /// ([`AccountantError::UnitMismatch`](crate::accountant::AccountantError::UnitMismatch)).
    /// The release itself then runs under a fresh [`Plan::accountant`].
    pub fn charge_to(
        &self,
        session: &mut crate::accountant::Accountant,
        label: &str,
    ) -> Result<crate::accountant::Receipt, AggregateError> {
        Ok(session.charge_binding_for_unit(
            self.neighbours(),
            self.privacy_unit(),
            label,
            self.cost(),
        )?)
    }

    /// Charges the budget file at `path` the plan's whole cost, before the release,
    /// stated under the plan's relation and for its privacy unit
    /// ([`BudgetFile::charge_unit`](crate::accountant::BudgetFile::charge_unit)): a
    /// file holding charges for another unit refuses it. Every front end charges a
    /// budget file for a plan through this.
    pub fn charge_budget_file(
        &self,
        path: &std::path::Path,
        cap: Option<Cap>,
        label: &str,
    ) -> Result<BudgetStatus, BudgetFileError> {
        let run = RunCost::new(self.cost())?;
        BudgetFile::charge_unit(
            path,
            cap,
            &run,
            label,
            Some(self.neighbours()),
            self.privacy_unit(),
        )
    }

    /// What a curator should hear before the release, in words: no privacy unit
    /// (every row is then its own unit), a large δ (above [`LARGE_DELTA`]).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.privacy_unit().is_none() {
            out.push(
                "without a privacy unit every row is its own unit; if a person or device can \
                 have several rows, name its column as the privacy unit (privq sql \
                 --privacy-unit, privq.sql(privacy_unit=...)), or the guarantee protects single \
                 rows only"
                    .to_string(),
            );
        }
        if let crate::accountant::Cost::Approximate { delta, .. } = self.cost()
            && delta > LARGE_DELTA
        {
            out.push(format!(
                "δ = {delta} is large: a group held by one unit is released with probability \
                 up to δ (1e-6 or smaller is usual)"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY: &str = "SELECT region, COUNT(*), AVG(temp) FROM t GROUP BY region";

    fn eps() -> Epsilon {
        Epsilon::new(1, 1).unwrap()
    }

    fn base(query: &str) -> SqlRequest {
        SqlRequest::new(query)
            .unwrap()
            .tables(["t"])
            .bounds("temp", "0:40".parse().unwrap())
    }

    #[test]
    fn a_well_formed_request_builds() {
        let plan = base(QUERY)
            .privacy_unit("device", 2, 3)
            .keys("region", ["north", "south"])
            .build(eps())
            .unwrap();
        assert_eq!(plan.contribution(), Contribution::new(2, 3).unwrap());
        assert!(plan.warnings().is_empty());
        let plan = base(QUERY).delta(0.01).build(eps()).unwrap();
        let warnings = plan.warnings();
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("every row is its own unit"));
        assert!(warnings[1].contains("is large"));
    }

    #[test]
    fn a_session_refuses_plans_for_another_privacy_unit() {
        use crate::accountant::{Accountant, AccountantError};
        let device = base(QUERY)
            .privacy_unit("device", 2, 3)
            .keys("region", ["north"])
            .build(eps())
            .unwrap();
        let rows = base(QUERY).keys("region", ["north"]).build(eps()).unwrap();
        let mut session = Accountant::pure(Epsilon::new(5, 1).unwrap());
        device.charge_to(&mut session, "device").unwrap();
        assert_eq!(session.privacy_unit(), Some(Some("device")));
        let e = rows.charge_to(&mut session, "rows").unwrap_err();
        assert!(
            matches!(
                &e,
                AggregateError::Budget(AccountantError::UnitMismatch { bound: Some(b), stated: None, .. })
                    if b == "device"
            ),
            "{e}"
        );
        assert!(e.to_string().contains("different units"), "{e}");
        // A per-record charge by any mechanism is refused too.
        let cost = crate::accountant::Cost::Pure(eps());
        assert!(
            session
                .charge_as(Neighbours::AddRemove, "record", cost)
                .is_err()
        );
        assert_eq!(session.ledger().len(), 1);
        device.charge_to(&mut session, "device again").unwrap();

        // The other order: a session of per-record charges refuses a unit's plan.
        let mut session = Accountant::pure(Epsilon::new(5, 1).unwrap());
        session.bind(Neighbours::AddRemove);
        session
            .charge_as(Neighbours::AddRemove, "record", cost)
            .unwrap();
        rows.charge_to(&mut session, "rows").unwrap();
        assert_eq!(session.privacy_unit(), Some(None));
        assert!(device.charge_to(&mut session, "device").is_err());
        assert_eq!(session.ledger().len(), 2);

        // An unbound session holding charges stated under no relation refuses.
        let mut session = Accountant::pure(Epsilon::new(5, 1).unwrap());
        session.charge("by hand", cost).unwrap();
        assert!(matches!(
            device.charge_to(&mut session, "device"),
            Err(AggregateError::Budget(
                AccountantError::UnboundCharges { .. }
            ))
        ));
        assert_eq!(session.ledger().len(), 1);
        assert_eq!(session.neighbours(), None);
    }

    #[test]
    fn a_budget_file_is_charged_for_the_plan_s_unit() {
        use crate::accountant::{BudgetFile, BudgetFileError, Cap};
        let dir = std::env::temp_dir().join(format!("privq-plan-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("budget.json");
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(dir.join("budget.json.lock"));
        let device = base(QUERY)
            .privacy_unit("device", 2, 3)
            .keys("region", ["north"])
            .build(eps())
            .unwrap();
        let rows = base(QUERY).keys("region", ["north"]).build(eps()).unwrap();
        let cap = Cap::new(Epsilon::new(5, 1).unwrap(), 0.0).unwrap();
        device
            .charge_budget_file(&path, Some(cap), "device")
            .unwrap();
        let e = rows.charge_budget_file(&path, None, "rows").unwrap_err();
        assert!(matches!(e, BudgetFileError::UnitMismatch { .. }), "{e}");
        let file = BudgetFile::read(&path).unwrap();
        assert_eq!(file.charges().len(), 1);
        assert_eq!(file.charges()[0].unit.as_deref(), Some("device"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refusals_name_the_option_and_the_problem() {
        let bins = "SELECT region, BIN(temp, 0, 10, 40) AS band, COUNT(*), SUM(temp) FROM t \
                    GROUP BY region, band";
        let cases: Vec<(SqlRequest, &str, &str)> = vec![
            (
                SqlRequest::new(QUERY).unwrap().tables(["u"]),
                "table",
                "reads table \"t\"",
            ),
            (
                base(QUERY).limits(1, 5).keys("region", ["a"]),
                "privacy-unit",
                "unit",
            ),
            (
                base(QUERY).bounds("temp", "0:1".parse().unwrap()),
                "bounds",
                "\"temp\" is given twice",
            ),
            (
                base(QUERY).bounds("region", "0:1".parse().unwrap()),
                "bounds",
                "aggregates no column \"region\"",
            ),
            (
                base(QUERY).keys("region", ["a"]).delta(1e-6),
                "delta",
                "not both",
            ),
            (
                SqlRequest::new("SELECT COUNT(*) FROM t")
                    .unwrap()
                    .tables(["t"])
                    .delta(1e-6),
                "delta",
                "no GROUP BY",
            ),
            (
                base(bins).keys("band", ["a"]),
                "keys",
                "\"band\" is a histogram (BIN)",
            ),
            (
                base(QUERY).keys("city", ["a"]),
                "keys",
                "does not group by \"city\"",
            ),
            (
                base(QUERY).keys("region", ["a"]).keys("region", ["b"]),
                "keys",
                "\"region\" is given twice",
            ),
            (base(QUERY).keys("region", ["a", ""]), "keys", "empty value"),
            (
                base(QUERY).keys("region", Vec::<String>::new()),
                "keys",
                "empty value",
            ),
            (base(QUERY), "keys", "needs its groups"),
            (base(bins), "keys", "grouping by region needs its groups"),
            (
                SqlRequest::new("SELECT a, b, COUNT(*) FROM t GROUP BY a, b")
                    .unwrap()
                    .tables(["t"])
                    .keys("a", ["x"]),
                "keys",
                "no keys for group-by column \"b\"",
            ),
        ];
        for (request, option, needle) in cases {
            let e = request.build(eps()).unwrap_err();
            assert_eq!(e.option(), Some(option), "{e}");
            assert!(e.to_string().contains(needle), "{needle}: {e}");
        }
        // The product of the key lists is capped before it is built.
        let many: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
        let e = SqlRequest::new("SELECT a, b, COUNT(*) FROM t GROUP BY a, b")
            .unwrap()
            .tables(["t"])
            .keys("a", many.clone())
            .keys("b", many)
            .build(eps())
            .unwrap_err();
        assert!(
            matches!(e, AggregateError::TooManyKeys { max: 1_000_000 }),
            "{e}"
        );
        // The plan's own checks still apply.
        let e = base(QUERY).delta(2.0).build(eps()).unwrap_err();
        assert!(e.to_string().contains("δ"), "{e}");
    }

    #[test]
    fn a_column_the_header_lacks_is_reported_before_its_bounds() {
        // Without the header, a misspelt aggregated column reads as unbounded.
        let q = "SELECT region, AVG(tmp) FROM t GROUP BY region";
        let e = base(q).keys("region", ["n"]).build(eps()).unwrap_err();
        assert!(
            matches!(e, AggregateError::BoundsNotAggregated { .. }),
            "{e}"
        );
        let header = vec!["region".to_string(), "temp".to_string()];
        let e = base(q)
            .keys("region", ["n"])
            .header(header.clone())
            .build(eps())
            .unwrap_err();
        assert!(
            matches!(&e, AggregateError::MissingColumn { column, .. } if column == "tmp"),
            "{e}"
        );
        let e = base(QUERY)
            .privacy_unit("device", 1, 1)
            .header(header.clone())
            .build(eps())
            .unwrap_err();
        assert!(
            matches!(&e, AggregateError::MissingColumn { column, .. } if column == "device"),
            "{e}"
        );
        let plan = base(QUERY)
            .keys("region", ["n"])
            .header(header)
            .build(eps())
            .unwrap();
        assert_eq!(plan.aggregates().len(), 2);
    }

    #[test]
    fn a_plan_describes_its_measurements() {
        let plan = base(QUERY)
            .privacy_unit("device", 1, 3)
            .keys("region", ["north", "south"])
            .build(eps())
            .unwrap();
        let m = plan.measurements();
        let kinds: Vec<&str> = m.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, ["count", "centred sum"]);
        let half = Epsilon::new(1, 2).unwrap();
        assert!(m.iter().all(|m| m.epsilon == half));
        // A count: 3 rows per unit (add/remove), scale 3 / (1/2) = 6.
        assert_eq!((m[0].sensitivity, m[0].noise_scale), (3.0, 6.0));
        assert_eq!(m[1].column.as_deref(), Some("temp"));
        // The centred sum: 3 rows of at most half the bounds' width (20) each.
        assert!(m[1].sensitivity >= 60.0 && m[1].sensitivity < 61.0, "{m:?}");
        assert!((m[1].noise_scale - 2.0 * m[1].sensitivity).abs() < 1e-9);
    }
}
