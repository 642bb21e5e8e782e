//! The SQL subset of `privq sql`, parsed with the `sqlparser` crate (the parser
//! DataFusion uses) into a [`Query`].
//!
//! ```sql
//! SELECT region, COUNT(*) AS n, SUM(kwh), AVG(temp), MEDIAN(temp), QUANTILE(temp, 0.9)
//! FROM readings
//! GROUP BY region
//! ```
//!
//! A histogram groups by a bin of a numeric column over literal edges ([`Binning`]):
//!
//! ```sql
//! SELECT region, BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) FROM readings
//! GROUP BY region, band            -- or GROUP BY region, BIN(temp, -20, 0, 20, 50)
//! ```
//!
//! `BIN(column, e₀, e₁, …)` is a group-by key: in `SELECT` it must also be in
//! `GROUP BY` (by its alias, or written again with the same column and edges); a
//! `GROUP BY` name that is a `BIN` alias of the select list means that bin, whatever
//! the table's columns are called. Without an alias the key is named as written
//! (`BIN(temp, -20, 0, 20, 50)`).
//!
//! One table; bare columns in the select list must be group-by columns (the
//! release lists every group-by column first, whether selected or not, then the
//! aggregates in order);
//! `BIN(x, e₀, e₁, …)` keys with literal edges; aggregates over a column name: `COUNT(*)`, `SUM(x)`, `AVG(x)`, `VARIANCE(x)`,
//! `STDDEV(x)` (population forms), `MEDIAN(x)`,
//! `QUANTILE(x, q)`; `WHERE` with comparisons of a column and a literal, `BETWEEN`,
//! `IN`, `IS [NOT] NULL`, `AND`, `OR`, `NOT`. Anything else — joins, subqueries, `HAVING`,
//! `ORDER BY`, `LIMIT`, `DISTINCT`, expressions inside an aggregate, window
//! functions — is refused with a message naming it.

use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    SelectItem, SetExpr, Statement, TableFactor, UnaryOperator, Value,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use super::AggregateError;
use super::bins::Binning;
use super::filter::{Compare, Filter, Literal};
use super::plan::{Aggregate, Query};

/// A parsed query and the table it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlQuery {
    /// The table named in `FROM`.
    pub table: String,
    /// The group-by columns and aggregates.
    pub query: Query,
}

fn refuse<T>(what: impl Into<String>) -> Result<T, AggregateError> {
    Err(AggregateError::Sql(what.into()))
}

/// Parses one `SELECT … FROM table [GROUP BY …]` of the supported subset.
///
/// ```
/// use privq_host::aggregate::{Aggregate, parse_sql};
/// let q = parse_sql("SELECT region, COUNT(*) AS n, AVG(temp) FROM r GROUP BY region")?;
/// assert_eq!(q.table, "r");
/// assert_eq!(q.query.group_by(), ["region"]);
/// assert_eq!(q.query.aggregates()[1].0, "AVG(temp)");
/// assert_eq!(q.query.aggregates()[1].1, Aggregate::Mean("temp".into()));
/// assert!(parse_sql("SELECT COUNT(*) FROM r HAVING COUNT(*) > 3").is_err());
/// # Ok::<(), privq_host::aggregate::AggregateError>(())
/// ```
pub fn parse_sql(sql: &str) -> Result<SqlQuery, AggregateError> {
    let statements =
        Parser::parse_sql(&GenericDialect {}, sql).map_err(AggregateError::SqlSyntax)?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return refuse(format!(
            "expected one SELECT statement, got {} statement(s){}",
            statements.len(),
            if statements.len() == 1 {
                " that is not a SELECT"
            } else {
                ""
            }
        ));
    };
    if query.with.is_some() {
        return refuse("WITH (common table expressions) is not supported");
    }
    if query.order_by.is_some() {
        return refuse("ORDER BY is not supported (groups come in key order)");
    }
    if query.limit_clause.is_some() || query.fetch.is_some() {
        return refuse("LIMIT/FETCH is not supported");
    }
    if !query.locks.is_empty()
        || query.for_clause.is_some()
        || query.settings.is_some()
        || query.format_clause.is_some()
        || !query.pipe_operators.is_empty()
    {
        return refuse("only SELECT … FROM … GROUP BY … is supported");
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(s) => s,
        SetExpr::SetOperation { op, .. } => return refuse(format!("{op} is not supported")),
        SetExpr::Query(_) => return refuse("a parenthesised subquery is not supported"),
        _ => return refuse("only SELECT … FROM … GROUP BY … is supported"),
    };
    if select.distinct.is_some() {
        return refuse("DISTINCT is not supported");
    }
    if select.top.is_some() {
        return refuse("TOP is not supported");
    }
    if select.into.is_some() {
        return refuse("SELECT INTO is not supported");
    }
    if select.prewhere.is_some() {
        return refuse("PREWHERE is not supported (use WHERE)");
    }
    if select.having.is_some() {
        return refuse("HAVING is not supported (it would filter on private values)");
    }
    if select.qualify.is_some() || !select.named_window.is_empty() {
        return refuse("window functions are not supported");
    }
    if !select.lateral_views.is_empty()
        || !select.connect_by.is_empty()
        || !select.cluster_by.is_empty()
        || !select.distribute_by.is_empty()
        || !select.sort_by.is_empty()
        || select.exclude.is_some()
        || select.select_modifiers.is_some()
        || select.value_table_mode.is_some()
        || !select.optimizer_hints.is_empty()
    {
        return refuse("only SELECT … FROM … GROUP BY … is supported");
    }
    let mut prefixes: Vec<String> = Vec::new();
    let table = match select.from.as_slice() {
        [one] if !one.joins.is_empty() => return refuse("joins are not supported"),
        [one] => match &one.relation {
            TableFactor::Table {
                name,
                alias,
                args: None,
                with_hints,
                version: None,
                with_ordinality: false,
                partitions,
                json_path: None,
                sample: None,
                index_hints,
            } if with_hints.is_empty() && partitions.is_empty() && index_hints.is_empty() => {
                if let Some(a) = alias {
                    if !a.columns.is_empty() {
                        return refuse("renaming a table's columns is not supported");
                    }
                    prefixes.push(a.name.value.clone());
                }
                prefixes.push(name.to_string());
                name.to_string()
            }
            TableFactor::Table { .. } => {
                return refuse(
                    "table modifiers (TABLESAMPLE, PARTITION, hints, versions) are not supported",
                );
            }
            TableFactor::Derived { .. } => {
                return refuse("a subquery in FROM is not supported");
            }
            other => return refuse(format!("FROM {other} is not a table name")),
        },
        [] => return refuse("the query names no table (FROM is missing)"),
        _ => return refuse("more than one table in FROM (a join) is not supported"),
    };
    // The histogram keys of the select list: (name, binning); and its plain columns.
    let mut selected_bins: Vec<(String, Binning)> = Vec::new();
    let mut selected_columns: Vec<String> = Vec::new();
    for item in &select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            _ => continue,
        };
        match expr {
            Expr::Function(f) if is_bin(f) => {
                let b = binning(f, &prefixes)?;
                let name = alias.unwrap_or_else(|| expr.to_string());
                if selected_bins.iter().any(|(n, _)| *n == name) {
                    return refuse(format!(
                        "two BIN(...) keys of SELECT are named {name}: give each its own alias"
                    ));
                }
                selected_bins.push((name, b));
            }
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                if let Ok(c) = column_name(expr, "SELECT", &prefixes) {
                    selected_columns.push(c);
                }
            }
            _ => {}
        }
    }
    // A BIN's alias must not be a column's name too: `GROUP BY name` would mean the
    // bin, silently, where the column may have been meant.
    if let Some((name, _)) = selected_bins
        .iter()
        .find(|(n, _)| selected_columns.contains(n))
    {
        return refuse(format!(
            "the BIN(...) alias {name} is also a selected column: choose another alias"
        ));
    }
    let mut bins: Vec<(String, Binning)> = Vec::new();
    let group_by: Vec<String> = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
            let mut names = Vec::with_capacity(exprs.len());
            for e in exprs {
                let bin = match e {
                    // A BIN written out: named as in the select list, if it is there.
                    Expr::Function(f) if is_bin(f) => {
                        let b = binning(f, &prefixes)?;
                        let name = selected_bins
                            .iter()
                            .find(|(_, s)| *s == b)
                            .map_or_else(|| e.to_string(), |(n, _)| n.clone());
                        Some((name, b))
                    }
                    // The alias of a BIN of the select list.
                    Expr::Identifier(i) => {
                        selected_bins.iter().find(|(n, _)| *n == i.value).cloned()
                    }
                    _ => None,
                };
                match bin {
                    Some((name, b)) => {
                        names.push(name.clone());
                        bins.push((name, b));
                    }
                    None => {
                        let c = column_name(e, "GROUP BY", &prefixes)?;
                        if selected_bins.iter().any(|(n, _)| *n == c) {
                            return refuse(format!(
                                "GROUP BY {e}: {c} is also the alias of a BIN(...) of SELECT: \
                                 choose another alias"
                            ));
                        }
                        names.push(c);
                    }
                }
            }
            names
        }
        _ => return refuse("GROUP BY ALL and GROUP BY modifiers are not supported"),
    };
    if let Some(c) = group_by
        .iter()
        .enumerate()
        .find_map(|(i, c)| group_by[..i].contains(c).then_some(c))
    {
        return refuse(format!("GROUP BY names {c} twice"));
    }
    let mut aggregates = Vec::new();
    for item in &select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            _ => return refuse(format!("{item} is not supported (name the columns)")),
        };
        match expr {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                let c = column_name(expr, "SELECT", &prefixes)?;
                if !group_by.contains(&c) {
                    return refuse(format!(
                        "{c} is neither aggregated nor in GROUP BY (a bare value would \
                         release a row)"
                    ));
                }
                if alias.is_some() {
                    return refuse(format!("renaming the group-by column {c} is not supported"));
                }
            }
            Expr::Function(f) if is_bin(f) => {
                let name = alias.unwrap_or_else(|| expr.to_string());
                if !bins.iter().any(|(n, _)| *n == name) {
                    return refuse(format!(
                        "{expr} is a histogram key: add it to GROUP BY (by its alias, or \
                         written the same)"
                    ));
                }
            }
            Expr::Function(f) => {
                let aggregate = aggregate(f, &prefixes)?;
                aggregates.push((alias.unwrap_or_else(|| expr.to_string()), aggregate));
            }
            other => {
                return refuse(format!(
                    "{other} is not supported: select group-by columns and aggregates"
                ));
            }
        }
    }
    if aggregates.is_empty() {
        return refuse("the query has no aggregate (COUNT, SUM, AVG, MEDIAN, QUANTILE)");
    }
    let mut query = Query::from_parts(group_by, aggregates);
    query.bins = bins.into_iter().collect();
    if let Some(condition) = &select.selection {
        query = query.with_filter(filter(condition, &prefixes)?);
    }
    Ok(SqlQuery { table, query })
}

/// A `WHERE` condition: comparisons of a column with a literal (`=`, `<>`, `<`,
/// `<=`, `>`, `>=`, `BETWEEN`, `IN (…)`, `IS [NOT] NULL`) joined by `AND`, `OR`, `NOT`.
fn filter(expr: &Expr, prefixes: &[String]) -> Result<Filter, AggregateError> {
    let boxed = |e: &Expr| filter(e, prefixes).map(Box::new);
    match expr {
        Expr::Nested(e) => filter(e, prefixes),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(Filter::Not(boxed(expr)?)),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => Ok(Filter::And(boxed(left)?, boxed(right)?)),
            BinaryOperator::Or => Ok(Filter::Or(boxed(left)?, boxed(right)?)),
            _ => {
                let op = match op {
                    BinaryOperator::Eq => Compare::Eq,
                    BinaryOperator::NotEq => Compare::NotEq,
                    BinaryOperator::Lt => Compare::Lt,
                    BinaryOperator::LtEq => Compare::LtEq,
                    BinaryOperator::Gt => Compare::Gt,
                    BinaryOperator::GtEq => Compare::GtEq,
                    _ => {
                        return refuse(format!("WHERE {expr}: the operator {op} is not supported"));
                    }
                };
                // `10 < temp` reads as `temp > 10`.
                let (column, value, op) = match (left.as_ref(), right.as_ref()) {
                    (Expr::Identifier(_) | Expr::CompoundIdentifier(_), _) => (left, right, op),
                    (_, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) => {
                        let flipped = match op {
                            Compare::Lt => Compare::Gt,
                            Compare::LtEq => Compare::GtEq,
                            Compare::Gt => Compare::Lt,
                            Compare::GtEq => Compare::LtEq,
                            other => other,
                        };
                        (right, left, flipped)
                    }
                    _ => (left, right, op),
                };
                let value = literal(value, expr)?;
                if matches!(value, Literal::Text(_)) && !matches!(op, Compare::Eq | Compare::NotEq)
                {
                    return refuse(format!(
                        "WHERE {expr}: <, <=, > and >= compare numbers; write the number \
                         unquoted ('quoted' text is compared only with = and <>)"
                    ));
                }
                Ok(Filter::Compare {
                    column: column_name(column, "WHERE", prefixes)?,
                    op,
                    value,
                })
            }
        },
        Expr::Between {
            expr: e,
            negated,
            low,
            high,
        } => {
            let column = column_name(e, "WHERE", prefixes)?;
            for bound in [low, high] {
                if matches!(literal(bound, expr)?, Literal::Text(_)) {
                    return refuse(format!(
                        "WHERE {expr}: BETWEEN compares numbers; write the bounds unquoted \
                         ('quoted' text is compared only with = and <>)"
                    ));
                }
            }
            let range = Filter::And(
                Box::new(Filter::Compare {
                    column: column.clone(),
                    op: Compare::GtEq,
                    value: literal(low, expr)?,
                }),
                Box::new(Filter::Compare {
                    column,
                    op: Compare::LtEq,
                    value: literal(high, expr)?,
                }),
            );
            Ok(if *negated {
                Filter::Not(Box::new(range))
            } else {
                range
            })
        }
        Expr::InList {
            expr: e,
            list,
            negated,
        } => {
            let within = Filter::In {
                column: column_name(e, "WHERE", prefixes)?,
                values: list
                    .iter()
                    .map(|v| literal(v, expr))
                    .collect::<Result<_, _>>()?,
            };
            Ok(if *negated {
                Filter::Not(Box::new(within))
            } else {
                within
            })
        }
        Expr::IsNull(e) => Ok(Filter::IsEmpty(column_name(e, "WHERE", prefixes)?)),
        Expr::IsNotNull(e) => Ok(Filter::Not(Box::new(Filter::IsEmpty(column_name(
            e, "WHERE", prefixes,
        )?)))),
        other => refuse(format!(
            "WHERE {other}: only comparisons of a column with a literal, BETWEEN, IN, IS NULL, \
             AND, OR and NOT are supported"
        )),
    }
}

fn is_bin(f: &Function) -> bool {
    f.name.to_string().eq_ignore_ascii_case("BIN")
}

/// `BIN(column, e₀, e₁, …)`: a column name and at least two literal, finite,
/// strictly increasing edges.
fn binning(f: &Function, prefixes: &[String]) -> Result<Binning, AggregateError> {
    if f.over.is_some()
        || f.filter.is_some()
        || !f.within_group.is_empty()
        || f.null_treatment.is_some()
        || !matches!(f.parameters, FunctionArguments::None)
    {
        return refuse(format!(
            "{f}: BIN takes a column and its edges, nothing else"
        ));
    }
    let args = match &f.args {
        FunctionArguments::List(list)
            if list.duplicate_treatment.is_none() && list.clauses.is_empty() =>
        {
            &list.args
        }
        _ => return refuse(format!("{f}: write BIN(column, e0, e1, ...)")),
    };
    if args.len() < 3 {
        return refuse(format!(
            "{f}: BIN needs a column and at least two edges (one bin), e.g. BIN(x, 0, 10, 20)"
        ));
    }
    if args.len() - 1 > Binning::MAX_BINS + 1 {
        return refuse(format!(
            "{f}: {} edges is more than the {} a histogram may have",
            args.len() - 1,
            Binning::MAX_BINS + 1
        ));
    }
    let column = match &args[0] {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => column_name(e, "BIN", prefixes)?,
        _ => return refuse(format!("{f}: the first argument must be a column name")),
    };
    let mut edges = Vec::with_capacity(args.len() - 1);
    for (i, a) in args[1..].iter().enumerate() {
        let edge = match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => number_literal(e),
            _ => None,
        };
        match edge {
            Some(Ok(x)) => edges.push(x),
            Some(Err(Bad::NotFinite(text))) => {
                return refuse(format!(
                    "BIN({column}, …): edge {} ({text}) is not a finite number",
                    i + 1
                ));
            }
            Some(Err(Bad::Long(text))) => {
                return refuse(format!(
                    "BIN({column}, …): edge {} ({text}) is a long literal: write the plain \
                     number",
                    i + 1
                ));
            }
            None => {
                return refuse(format!(
                    "BIN({column}, …): edge {} ({a}) must be a number literal (the edges are \
                     public, never computed from the data)",
                    i + 1
                ));
            }
        }
    }
    Binning::new(column, &edges)
}

/// Why a number literal is not an edge, with its text.
enum Bad {
    /// Not a finite `f64`.
    NotFinite(String),
    /// A long literal (`10L`).
    Long(String),
}

/// A number literal, optionally negated: `None` when `e` is not one, `Err` when it
/// is not a finite `f64` or is a long literal (`10L`).
fn number_literal(e: &Expr) -> Option<Result<f64, Bad>> {
    let (text, negate, long) = match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, long) => (n.as_str(), false, *long),
            _ => return None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, long) => (n.as_str(), true, *long),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    if long {
        // `10L`: a long-integer literal (some dialects' suffix), not a plain number.
        return Some(Err(Bad::Long(e.to_string())));
    }
    Some(match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(if negate { -x } else { x }),
        _ => Err(Bad::NotFinite(e.to_string())),
    })
}

/// A number or a quoted string (`-3`, `2.5`, `'north'`).
fn literal(expr: &Expr, whole: &Expr) -> Result<Literal, AggregateError> {
    let number = |text: &str, negate: bool| match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Literal::Number(if negate { -x } else { x })),
        _ => refuse(format!("WHERE {whole}: {text} is not a finite number")),
    };
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => number(n, false),
            Value::SingleQuotedString(t) if t.is_empty() => refuse(format!(
                "WHERE {whole}: an empty field is NULL, which no comparison matches: write \
                 `column IS NULL` (or IS NOT NULL)"
            )),
            Value::SingleQuotedString(t) => Ok(Literal::Text(t.clone())),
            _ => refuse(format!("WHERE {whole}: {v} is not a number or a 'string'")),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: inner,
        } => match inner.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => number(n, true),
                _ => refuse(format!("WHERE {whole}: -{v} is not a number")),
            },
            _ => refuse(format!("WHERE {whole}: compare a column with a literal")),
        },
        _ => refuse(format!(
            "WHERE {whole}: compare a column with a literal (a number or a 'string'), \
             column on the left"
        )),
    }
}

/// A plain column name (`region`, or `t.region` with `t` the table or its alias).
fn column_name(expr: &Expr, clause: &str, prefixes: &[String]) -> Result<String, AggregateError> {
    match expr {
        Expr::Identifier(i) => Ok(i.value.clone()),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            if prefixes.contains(&parts[0].value) {
                Ok(parts[1].value.clone())
            } else {
                refuse(format!(
                    "{clause} {expr}: {} names no table of the query",
                    parts[0]
                ))
            }
        }
        other => refuse(format!(
            "{clause} {other}: only plain column names are supported"
        )),
    }
}

fn aggregate(f: &Function, prefixes: &[String]) -> Result<Aggregate, AggregateError> {
    let name = f.name.to_string().to_ascii_uppercase();
    if f.over.is_some() {
        return refuse(format!("{f}: window functions are not supported"));
    }
    if f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
        return refuse(format!(
            "{f}: FILTER, WITHIN GROUP and null treatments are not supported"
        ));
    }
    if !matches!(f.parameters, FunctionArguments::None) {
        return refuse(format!("{f}: parametric aggregates are not supported"));
    }
    let args = match &f.args {
        FunctionArguments::List(list) => {
            if list.duplicate_treatment.is_some() {
                return refuse(format!(
                    "{f}: DISTINCT/ALL inside an aggregate is not supported"
                ));
            }
            if !list.clauses.is_empty() {
                return refuse(format!(
                    "{f}: clauses inside an aggregate are not supported"
                ));
            }
            &list.args
        }
        FunctionArguments::None => return refuse(format!("{f} needs arguments")),
        FunctionArguments::Subquery(_) => {
            return refuse(format!("{f}: subqueries are not supported"));
        }
    };
    let column = |i: usize| -> Result<String, AggregateError> {
        match args.get(i) {
            Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(e))) => column_name(e, &name, prefixes),
            _ => refuse(format!("{f}: argument {} must be a column name", i + 1)),
        }
    };
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            refuse(format!("{f} takes {n} argument(s), got {}", args.len()))
        }
    };
    match name.as_str() {
        "COUNT" => match args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => Ok(Aggregate::Count),
            _ => refuse(format!(
                "{f}: only COUNT(*) is supported (rows with a missing value are refused, so \
                 COUNT(column) would count the same rows)"
            )),
        },
        "SUM" => arity(1).and(Ok(Aggregate::Sum(column(0)?))),
        "AVG" | "MEAN" => arity(1).and(Ok(Aggregate::Mean(column(0)?))),
        "VARIANCE" | "VAR_POP" => arity(1).and(Ok(Aggregate::Variance(column(0)?))),
        "STDDEV" | "STDDEV_POP" => arity(1).and(Ok(Aggregate::StdDev(column(0)?))),
        "VAR_SAMP" | "STDDEV_SAMP" => refuse(format!(
            "{f}: the sample (n − 1) forms are not supported; VARIANCE and STDDEV are the \
             population forms"
        )),
        "MEDIAN" => {
            arity(1)?;
            Aggregate::quantile(column(0)?, 0.5)
        }
        "QUANTILE" | "PERCENTILE" => {
            arity(2)?;
            let q = match args.get(1) {
                Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) => {
                    match &v.value {
                        Value::Number(n, _) => n.parse::<f64>().ok(),
                        _ => None,
                    }
                }
                _ => None,
            };
            match q {
                Some(q) => Aggregate::quantile(column(0)?, q),
                None => refuse(format!("{f}: the level must be a number between 0 and 1")),
            }
        }
        "MIN" | "MAX" => refuse(format!(
            "{f}: MIN and MAX are not supported (one row decides them); use QUANTILE(x, 0.01) \
             or QUANTILE(x, 0.99)"
        )),
        _ => refuse(format!(
            "{name} is not a supported aggregate (COUNT(*), SUM, AVG, VARIANCE, STDDEV, MEDIAN, QUANTILE)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subset_parses() {
        let q = parse_sql(
            "select t.region, readings.year, count(*) as n, sum(kwh), avg(temp) mean_t, median(temp), \
             quantile(temp, 0.9) from readings t group by region, year",
        )
        .unwrap();
        assert_eq!(q.table, "readings");
        assert_eq!(q.query.group_by(), ["region", "year"]);
        let names: Vec<&str> = q
            .query
            .aggregates()
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "n",
                "sum(kwh)",
                "mean_t",
                "median(temp)",
                "quantile(temp, 0.9)"
            ]
        );
        assert_eq!(
            q.query.aggregates()[4].1,
            Aggregate::Quantile {
                column: "temp".into(),
                level: 9000
            }
        );
        let q = parse_sql("SELECT COUNT(*) FROM r").unwrap();
        assert!(q.query.group_by().is_empty());
        let q = parse_sql(
            "SELECT COUNT(*) FROM r WHERE (region = 'north' OR region IN ('east', 'west')) \
             AND temp BETWEEN -5 AND 30.5 AND NOT note IS NULL AND r.year <> 2020",
        )
        .unwrap();
        assert_eq!(
            q.query.filter().unwrap().to_string(),
            "((((region = 'north' OR region IN ('east', 'west')) AND (temp >= -5 AND temp <= \
             30.5)) AND NOT note IS NULL) AND year <> 2020)"
        );
    }

    #[test]
    fn histogram_bins_are_group_keys() {
        let bands = Binning::new("temp", &[-20.0, 0.0, 20.0, 50.0]).unwrap();
        // By alias, written out again (named by the alias), or only in GROUP BY.
        for sql in [
            "SELECT region, BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) FROM r \
             GROUP BY region, band",
            "SELECT region, bin(r.temp, -20, 0.0, 2e1, 50) AS band, COUNT(*) FROM r \
             GROUP BY region, BIN(temp, -20, 0, 20, 50)",
        ] {
            let q = parse_sql(sql).unwrap().query;
            assert_eq!(q.group_by(), ["region", "band"], "{sql}");
            assert_eq!(q.binning("band"), Some(&bands), "{sql}");
            assert_eq!(q.binning("region"), None);
            assert!(q.value_columns().is_empty(), "{sql}");
        }
        let q = parse_sql("SELECT COUNT(*) FROM r GROUP BY BIN(temp, -20, 0, 20, 50)")
            .unwrap()
            .query;
        assert_eq!(q.group_by(), ["BIN(temp, -20, 0, 20, 50)"]);
        assert_eq!(q.binning("BIN(temp, -20, 0, 20, 50)"), Some(&bands));
        // A histogram and a mean of the binned column by band.
        let q = parse_sql("SELECT BIN(temp, 0, 10) AS b, COUNT(*), AVG(temp) FROM r GROUP BY b")
            .unwrap()
            .query;
        assert_eq!(q.value_columns(), ["temp"]);
    }

    #[test]
    fn malformed_bins_are_refused_by_name() {
        let cases = [
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0, x)",
                "edge 2 (x) must be a number literal",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0, 1 + 1)",
                "must be a number literal",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0, '5')",
                "must be a number literal",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0, 1e999)",
                "edge 2 (1e999) is not a finite number",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 5, 1)",
                "strictly increasing",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0, 1, 1)",
                "strictly increasing",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0)",
                "at least two edges",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp + 1, 0, 1)",
                "only plain column names",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(3, 0, 1)",
                "only plain column names",
            ),
            (
                "SELECT BIN(temp, 0, 1) AS b, COUNT(*) FROM r",
                "add it to GROUP BY",
            ),
            (
                "SELECT BIN(temp, 0, 1) AS b, COUNT(*) FROM r GROUP BY BIN(temp, 0, 2)",
                "add it to GROUP BY",
            ),
            (
                "SELECT SUM(BIN(temp, 0, 1)) FROM r",
                "only plain column names",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY b, BIN(t, 0, 1) AS b",
                "cannot parse",
            ),
            (
                "SELECT BIN(t, 0, 1) AS b, COUNT(*) FROM r GROUP BY b, BIN(t, 0, 1)",
                "twice",
            ),
            // Two BINs under one alias (GROUP BY b would take the first).
            (
                "SELECT BIN(temp, 0, 10) AS b, BIN(temp, 0, 5, 10) AS b, COUNT(*) FROM r \
                 GROUP BY b",
                "two BIN(...) keys of SELECT are named b",
            ),
            // A BIN aliased as a selected column (GROUP BY region would take the bin).
            (
                "SELECT region, BIN(temp, 0, 10, 20) AS region, COUNT(*) FROM r \
                 GROUP BY region",
                "the BIN(...) alias region is also a selected column",
            ),
            // ... or as another group-by column.
            (
                "SELECT BIN(temp, 0, 10, 20) AS region, COUNT(*) FROM r \
                 GROUP BY region, r.region",
                "GROUP BY r.region: region is also the alias of a BIN(...)",
            ),
            // A long literal (`10L`) as an edge.
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, 0, 10L)",
                "edge 2 (10L) is a long literal",
            ),
            (
                "SELECT COUNT(*) FROM r GROUP BY BIN(temp, -10L, 0)",
                "edge 1 (-10L) is a long literal",
            ),
        ];
        for (sql, needle) in cases {
            match parse_sql(sql) {
                Ok(q) => panic!("{sql}: accepted as {q:?}"),
                Err(e) => assert!(e.to_string().contains(needle), "{sql}: {e}"),
            }
        }
        let many: Vec<String> = (0..=Binning::MAX_BINS + 1).map(|i| i.to_string()).collect();
        let sql = format!(
            "SELECT COUNT(*) FROM r GROUP BY BIN(t, {})",
            many.join(", ")
        );
        let e = parse_sql(&sql).unwrap_err().to_string();
        assert!(e.contains("10002 edges is more than the 10001"), "{e}");
    }

    #[test]
    fn everything_else_is_refused_by_name() {
        let cases = [
            ("SELECT COUNT(*) FROM a JOIN b ON a.x = b.x", "joins"),
            ("SELECT COUNT(*) FROM a, b", "more than one table"),
            ("SELECT COUNT(*) FROM (SELECT * FROM a) s", "subquery"),
            ("SELECT COUNT(*) FROM a WHERE x > y", "literal"),
            ("SELECT COUNT(*) FROM a WHERE x > '10'", "compare numbers"),
            ("SELECT COUNT(*) FROM a WHERE x = ''", "IS NULL"),
            ("SELECT COUNT(*) FROM a WHERE x IN ('a', '')", "IS NULL"),
            (
                "SELECT COUNT(*) FROM a WHERE x BETWEEN 'a' AND 'm'",
                "BETWEEN compares numbers",
            ),
            (
                "SELECT COUNT(*) FROM a WHERE x LIKE 'a%'",
                "only comparisons",
            ),
            (
                "SELECT COUNT(*) FROM a WHERE x + 1 > 2",
                "only plain column names",
            ),
            (
                "SELECT COUNT(*) FROM a WHERE x IN (SELECT y FROM b)",
                "only comparisons",
            ),
            (
                "SELECT g, COUNT(*) FROM a GROUP BY g HAVING COUNT(*) > 5",
                "HAVING",
            ),
            (
                "SELECT g, COUNT(*) FROM a GROUP BY g ORDER BY g",
                "ORDER BY",
            ),
            ("SELECT COUNT(*) FROM a LIMIT 3", "LIMIT"),
            ("SELECT DISTINCT g, COUNT(*) FROM a GROUP BY g", "DISTINCT"),
            ("SELECT SUM(x + 1) FROM a", "only plain column names"),
            ("SELECT SUM(DISTINCT x) FROM a", "DISTINCT"),
            ("SELECT COUNT(x) FROM a", "only COUNT(*)"),
            ("SELECT MAX(x) FROM a", "MIN and MAX"),
            ("SELECT CORR(x, y) FROM a", "not a supported aggregate"),
            ("SELECT VAR_SAMP(x) FROM a", "population"),
            (
                "SELECT x, COUNT(*) FROM a",
                "neither aggregated nor in GROUP BY",
            ),
            ("SELECT g FROM a GROUP BY g", "no aggregate"),
            ("SELECT QUANTILE(x, 2) FROM a", "between 0 and 1"),
            ("SELECT QUANTILE(x, y) FROM a", "level must be a number"),
            ("SELECT COUNT(*) OVER () FROM a", "window"),
            (
                "SELECT COUNT(*) FROM a UNION SELECT COUNT(*) FROM b",
                "UNION",
            ),
            ("SELECT * FROM a", "not supported"),
            ("DELETE FROM a", "not a SELECT"),
            ("SELECT COUNT(*) FROM a; SELECT 1", "2 statement(s)"),
            ("SELEC COUNT(*)", "cannot parse"),
            ("SELECT COUNT(*)", "FROM is missing"),
            ("SELECT g, COUNT(*) FROM a GROUP BY g, g", "twice"),
            (
                "SELECT COUNT(*) FROM a TABLESAMPLE BERNOULLI (10)",
                "modifiers",
            ),
            ("SELECT zz.g, COUNT(*) FROM a GROUP BY g", "names no table"),
            ("SELECT QUANTILE(x, 0.99999) FROM a", "four decimals"),
        ];
        for (sql, needle) in cases {
            match parse_sql(sql) {
                Ok(q) => panic!("{sql}: accepted as {q:?}"),
                Err(e) => assert!(e.to_string().contains(needle), "{sql}: {e}"),
            }
        }
    }
}
