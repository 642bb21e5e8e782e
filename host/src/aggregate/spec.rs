//! A plan as the inputs it was built from ([`PlanSpec`]), in a form that
//! serializes: what an engine on another machine rebuilds the plan from,
//! validated again by [`PlanBuilder::build`] on arrival.

use std::collections::BTreeMap;

use privq_core::{Epsilon, Fixed};
use serde::{Deserialize, Serialize};

use super::{
    Aggregate, AggregateError, Binning, Bounds, Compare, Contribution, Filter, Groups, Literal,
    Neighbours, Plan, PlanBuilder, Query,
};

/// The inputs a [`Plan`] was built from: the query (group-by keys, histogram
/// bins, aggregates, filter), the privacy unit and its limits, the neighbour
/// relation, the bounds, the groups as listed (public keys without their bins,
/// or δ), the confidence, the quantile steps, `drop_invalid` and ε. Every
/// value is public.
///
/// It serializes (serde) with every float as its IEEE-754 bit pattern, so a
/// spec rebuilds exactly the same plan; deserializing refuses unknown fields,
/// and [`PlanSpec::build`] checks everything again as [`PlanBuilder::build`]
/// does (the bounds, the bins' edges, the limits and ε through their own
/// constructors). A spec read from untrusted bytes is a request, never a
/// validated plan, until it is built.
///
/// ```
/// use privq_host::aggregate::{Plan, PlanSpec, SqlRequest};
/// use privq_host::Epsilon;
///
/// let plan = SqlRequest::new("SELECT region, AVG(temp) FROM t WHERE temp > 0 GROUP BY region")?
///     .tables(["t"])
///     .privacy_unit("device", 2, 3)
///     .bounds("temp", "-20:50".parse()?)
///     .keys("region", ["north", "south"])
///     .build(Epsilon::new(1, 2)?)?;
/// let json = serde_json::to_string(&plan.spec())?;
/// let again: PlanSpec = serde_json::from_str(&json)?;
/// assert_eq!(again.build()?.spec(), plan.spec());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    group_by: Vec<String>,
    bins: Vec<BinSpec>,
    aggregates: Vec<(String, AggregateSpec)>,
    filter: Option<FilterSpec>,
    unit: Option<String>,
    max_groups: u32,
    max_rows: u32,
    neighbours: NeighboursSpec,
    /// Each bounded column and its bounds' fixed-point bit patterns.
    bounds: Vec<(String, i64, i64)>,
    groups: Option<GroupsSpec>,
    /// The confidence level's bit pattern.
    confidence: u64,
    candidates: u32,
    drop_invalid: bool,
    epsilon: (u64, u64),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BinSpec {
    key: String,
    column: String,
    /// The edges' bit patterns.
    edges: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
enum AggregateSpec {
    Count,
    Sum(String),
    Mean(String),
    Variance(String),
    StdDev(String),
    Quantile { column: String, level: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum NeighboursSpec {
    AddRemove,
    Replace,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
enum GroupsSpec {
    Public(Vec<Vec<String>>),
    /// δ's bit pattern.
    Private(u64),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
enum LiteralSpec {
    Text(String),
    /// The number's bit pattern.
    Number(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum CompareSpec {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
enum FilterSpec {
    And(Box<FilterSpec>, Box<FilterSpec>),
    Or(Box<FilterSpec>, Box<FilterSpec>),
    Not(Box<FilterSpec>),
    Compare {
        column: String,
        op: CompareSpec,
        value: LiteralSpec,
    },
    In {
        column: String,
        values: Vec<LiteralSpec>,
    },
    IsEmpty(String),
}

fn invalid(what: String) -> AggregateError {
    AggregateError::InvalidParameter(format!("plan spec: {what}"))
}

impl LiteralSpec {
    fn of(l: &Literal) -> Self {
        match l {
            Literal::Text(t) => LiteralSpec::Text(t.clone()),
            Literal::Number(x) => LiteralSpec::Number(x.to_bits()),
        }
    }
    fn literal(&self) -> Result<Literal, AggregateError> {
        Ok(match self {
            LiteralSpec::Text(t) => Literal::Text(t.clone()),
            LiteralSpec::Number(b) => {
                let x = f64::from_bits(*b);
                if !x.is_finite() {
                    return Err(invalid("a filter's number is not finite".into()));
                }
                Literal::Number(x)
            }
        })
    }
}

impl CompareSpec {
    fn of(c: Compare) -> Self {
        match c {
            Compare::Eq => CompareSpec::Eq,
            Compare::NotEq => CompareSpec::NotEq,
            Compare::Lt => CompareSpec::Lt,
            Compare::LtEq => CompareSpec::LtEq,
            Compare::Gt => CompareSpec::Gt,
            Compare::GtEq => CompareSpec::GtEq,
        }
    }
    fn compare(self) -> Compare {
        match self {
            CompareSpec::Eq => Compare::Eq,
            CompareSpec::NotEq => Compare::NotEq,
            CompareSpec::Lt => Compare::Lt,
            CompareSpec::LtEq => Compare::LtEq,
            CompareSpec::Gt => Compare::Gt,
            CompareSpec::GtEq => Compare::GtEq,
        }
    }
}

impl FilterSpec {
    fn of(f: &Filter) -> Self {
        match f {
            Filter::And(a, b) => FilterSpec::And(Box::new(Self::of(a)), Box::new(Self::of(b))),
            Filter::Or(a, b) => FilterSpec::Or(Box::new(Self::of(a)), Box::new(Self::of(b))),
            Filter::Not(a) => FilterSpec::Not(Box::new(Self::of(a))),
            Filter::Compare { column, op, value } => FilterSpec::Compare {
                column: column.clone(),
                op: CompareSpec::of(*op),
                value: LiteralSpec::of(value),
            },
            Filter::In { column, values } => FilterSpec::In {
                column: column.clone(),
                values: values.iter().map(LiteralSpec::of).collect(),
            },
            Filter::IsEmpty(c) => FilterSpec::IsEmpty(c.clone()),
        }
    }
    fn filter(&self) -> Result<Filter, AggregateError> {
        Ok(match self {
            FilterSpec::And(a, b) => Filter::And(Box::new(a.filter()?), Box::new(b.filter()?)),
            FilterSpec::Or(a, b) => Filter::Or(Box::new(a.filter()?), Box::new(b.filter()?)),
            FilterSpec::Not(a) => Filter::Not(Box::new(a.filter()?)),
            FilterSpec::Compare { column, op, value } => Filter::Compare {
                column: column.clone(),
                op: op.compare(),
                value: value.literal()?,
            },
            FilterSpec::In { column, values } => Filter::In {
                column: column.clone(),
                values: values
                    .iter()
                    .map(LiteralSpec::literal)
                    .collect::<Result<_, _>>()?,
            },
            FilterSpec::IsEmpty(c) => Filter::IsEmpty(c.clone()),
        })
    }
}

impl PlanSpec {
    /// The inputs of `builder` at budget `epsilon`.
    pub(super) fn of(builder: &PlanBuilder, epsilon: Epsilon) -> PlanSpec {
        let q = &builder.query;
        PlanSpec {
            group_by: q.group_by().to_vec(),
            bins: q
                .bins
                .iter()
                .map(|(key, b)| BinSpec {
                    key: key.clone(),
                    column: b.column().to_string(),
                    edges: b.edges().iter().map(|x| x.to_bits()).collect(),
                })
                .collect(),
            aggregates: q
                .aggregates()
                .iter()
                .map(|(n, a)| {
                    let a = match a {
                        Aggregate::Count => AggregateSpec::Count,
                        Aggregate::Sum(c) => AggregateSpec::Sum(c.clone()),
                        Aggregate::Mean(c) => AggregateSpec::Mean(c.clone()),
                        Aggregate::Variance(c) => AggregateSpec::Variance(c.clone()),
                        Aggregate::StdDev(c) => AggregateSpec::StdDev(c.clone()),
                        Aggregate::Quantile { column, level } => AggregateSpec::Quantile {
                            column: column.clone(),
                            level: *level,
                        },
                    };
                    (n.clone(), a)
                })
                .collect(),
            filter: q.filter().map(FilterSpec::of),
            unit: builder.unit.clone(),
            max_groups: builder.contribution.max_groups(),
            max_rows: builder.contribution.max_rows(),
            neighbours: match builder.neighbours {
                Neighbours::AddRemove => NeighboursSpec::AddRemove,
                Neighbours::Replace => NeighboursSpec::Replace,
            },
            bounds: builder
                .bounds
                .iter()
                .map(|(c, b)| (c.clone(), b.lo().to_bits(), b.hi().to_bits()))
                .collect(),
            groups: builder.groups.as_ref().map(|g| match g {
                Groups::Public(keys) => GroupsSpec::Public(keys.clone()),
                Groups::Private { delta } => GroupsSpec::Private(delta.to_bits()),
            }),
            confidence: builder.confidence.to_bits(),
            candidates: builder.candidates,
            drop_invalid: builder.drop_invalid,
            epsilon: (epsilon.num(), epsilon.den()),
        }
    }

    /// The plan, checked as [`PlanBuilder::build`] checks one (and each bound,
    /// binning, limit and ε through its constructor).
    pub fn build(&self) -> Result<Plan, AggregateError> {
        let aggregates = self
            .aggregates
            .iter()
            .map(|(n, a)| {
                let a = match a {
                    AggregateSpec::Count => Aggregate::Count,
                    AggregateSpec::Sum(c) => Aggregate::Sum(c.clone()),
                    AggregateSpec::Mean(c) => Aggregate::Mean(c.clone()),
                    AggregateSpec::Variance(c) => Aggregate::Variance(c.clone()),
                    AggregateSpec::StdDev(c) => Aggregate::StdDev(c.clone()),
                    AggregateSpec::Quantile { column, level } => Aggregate::Quantile {
                        column: column.clone(),
                        level: *level,
                    },
                };
                (n.clone(), a)
            })
            .collect();
        let mut query = Query::from_parts(self.group_by.clone(), aggregates);
        let mut bins = BTreeMap::new();
        for b in &self.bins {
            if !self.group_by.contains(&b.key) {
                return Err(invalid(format!("bins for {:?}, not a group-by key", b.key)));
            }
            let edges: Vec<f64> = b.edges.iter().map(|&e| f64::from_bits(e)).collect();
            if bins
                .insert(b.key.clone(), Binning::new(b.column.clone(), &edges)?)
                .is_some()
            {
                return Err(invalid(format!("bins for {:?} twice", b.key)));
            }
        }
        query.bins = bins;
        if let Some(f) = &self.filter {
            query = query.with_filter(f.filter()?);
        }
        let mut builder = Plan::builder(query)
            .neighbours(match self.neighbours {
                NeighboursSpec::AddRemove => Neighbours::AddRemove,
                NeighboursSpec::Replace => Neighbours::Replace,
            })
            .confidence(f64::from_bits(self.confidence))
            .quantile_candidates(self.candidates)
            .drop_invalid(self.drop_invalid);
        let contribution = Contribution::new(self.max_groups, self.max_rows)?;
        match &self.unit {
            Some(unit) => builder = builder.privacy_unit(unit.clone(), contribution),
            None if contribution != Contribution::per_row() => {
                return Err(AggregateError::LimitsWithoutUnit);
            }
            None => {}
        }
        for (i, (column, lo, hi)) in self.bounds.iter().enumerate() {
            if self.bounds[..i].iter().any(|(c, _, _)| c == column) {
                return Err(invalid(format!("bounds for {column:?} twice")));
            }
            let b = Bounds::new(Fixed::from_bits(*lo), Fixed::from_bits(*hi))?;
            builder = builder.bounds(column.clone(), b);
        }
        if let Some(g) = &self.groups {
            builder = builder.groups(match g {
                GroupsSpec::Public(keys) => Groups::Public(keys.clone()),
                GroupsSpec::Private(delta) => Groups::Private {
                    delta: f64::from_bits(*delta),
                },
            });
        }
        builder.build(Epsilon::new(self.epsilon.0, self.epsilon.1)?)
    }
}

impl Plan {
    /// The inputs this plan was built from (see [`PlanSpec`]).
    pub fn spec(&self) -> PlanSpec {
        (*self.spec).clone()
    }
}
