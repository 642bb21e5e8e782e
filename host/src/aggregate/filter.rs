//! Row filters (`WHERE`): a condition on each row's own fields, applied before
//! contribution bounding.
//!
//! A filter looks at one row at a time, so two tables that differ in one unit's
//! rows still differ in (a subset of) that unit's rows after it: filtering changes
//! no sensitivity and costs nothing.

use std::fmt;

/// A literal a column is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// Text, compared with the field exactly (after trimming spaces).
    Text(String),
    /// A number, compared with the field read as a number.
    Number(f64),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// `=`
    Eq,
    /// `<>` / `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

/// A condition on one row.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Both hold.
    And(Box<Filter>, Box<Filter>),
    /// Either holds.
    Or(Box<Filter>, Box<Filter>),
    /// It does not hold.
    Not(Box<Filter>),
    /// `column OP literal`.
    Compare {
        /// The column.
        column: String,
        /// The operator.
        op: Compare,
        /// The literal.
        value: Literal,
    },
    /// `column IN (…)`: equal to one of the literals.
    In {
        /// The column.
        column: String,
        /// The literals.
        values: Vec<Literal>,
    },
    /// `column IS NULL`: the field is empty.
    IsEmpty(String),
}

/// The deepest [`Filter`] a plan accepts (`AND`, `OR` and `NOT` nest one level
/// each): deep enough for any hand-written `WHERE`, and shallow enough that every
/// engine evaluates it and a plan carrying it decodes on a Ballista executor
/// (whose JSON reader stops at 128 levels; a filter level takes two there).
pub const MAX_FILTER_DEPTH: usize = 48;

impl Filter {
    /// The filter's depth: 1 for a comparison, one more per enclosing `AND`,
    /// `OR` or `NOT` (computed without recursion).
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1)];
        while let Some((f, d)) = stack.pop() {
            deepest = deepest.max(d);
            match f {
                Filter::And(a, b) | Filter::Or(a, b) => {
                    stack.push((a, d + 1));
                    stack.push((b, d + 1));
                }
                Filter::Not(a) => stack.push((a, d + 1)),
                Filter::Compare { .. } | Filter::In { .. } | Filter::IsEmpty(_) => {}
            }
        }
        deepest
    }

    /// Every column the filter reads, in first-use order.
    pub fn columns(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<String>) {
        match self {
            Filter::And(a, b) | Filter::Or(a, b) => {
                a.collect(out);
                b.collect(out);
            }
            Filter::Not(a) => a.collect(out),
            Filter::Compare { column, .. }
            | Filter::In { column, .. }
            | Filter::IsEmpty(column) => {
                if !out.contains(column) {
                    out.push(column.clone());
                }
            }
        }
    }

    /// Evaluates the filter on a row; `field(column)` gives a field's trimmed text.
    /// The row is kept only when the filter is true; as in SQL, an empty field
    /// (`NULL`) compared with anything, or a field that is not a number compared
    /// with a number, is *unknown*, and so is `NOT` of unknown, so such a row is
    /// kept by no comparison and no negation of one (`AND` and `OR` follow SQL's
    /// three-valued logic). Never an error: a refusal that depends on one row's
    /// field would tell whoever wrote the filter about that row.
    pub(super) fn holds<'r>(&self, field: &dyn Fn(&str) -> &'r str) -> bool {
        self.truth(field) == Some(true)
    }

    /// The filter's truth on a row (`None`: unknown).
    fn truth<'r>(&self, field: &dyn Fn(&str) -> &'r str) -> Option<bool> {
        match self {
            Filter::And(a, b) => match a.truth(field) {
                Some(false) => Some(false),
                x => match (x, b.truth(field)) {
                    (_, Some(false)) => Some(false),
                    (Some(true), y) => y,
                    _ => None,
                },
            },
            Filter::Or(a, b) => match a.truth(field) {
                Some(true) => Some(true),
                x => match (x, b.truth(field)) {
                    (_, Some(true)) => Some(true),
                    (Some(false), y) => y,
                    _ => None,
                },
            },
            Filter::Not(a) => a.truth(field).map(|t| !t),
            Filter::IsEmpty(column) => Some(field(column).is_empty()),
            Filter::In { column, values } => {
                let text = field(column);
                let mut unknown = false;
                for v in values {
                    match equal(text, v) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                (!unknown).then_some(false)
            }
            Filter::Compare { column, op, value } => {
                let text = field(column);
                match (op, value) {
                    (Compare::Eq, v) => equal(text, v),
                    (Compare::NotEq, v) => equal(text, v).map(|e| !e),
                    (op, Literal::Number(x)) => {
                        let y = number(text)?;
                        Some(match op {
                            Compare::Lt => y < *x,
                            Compare::LtEq => y <= *x,
                            Compare::Gt => y > *x,
                            _ => y >= *x,
                        })
                    }
                    (op, Literal::Text(t)) => {
                        if text.is_empty() {
                            return None;
                        }
                        let ord = text.cmp(t.as_str());
                        Some(match op {
                            Compare::Lt => ord.is_lt(),
                            Compare::LtEq => ord.is_le(),
                            Compare::Gt => ord.is_gt(),
                            _ => ord.is_ge(),
                        })
                    }
                }
            }
        }
    }
}

/// The field as a number (`None`: not a number, or NaN).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|y| !y.is_nan())
}

/// Whether the field equals the literal (`None`, SQL's unknown: an empty field, or
/// a number literal and a field that is not a number).
fn equal(text: &str, value: &Literal) -> Option<bool> {
    match value {
        _ if text.is_empty() => None,
        Literal::Text(t) => Some(text == t),
        Literal::Number(x) => number(text).map(|y| y == *x),
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lit = |v: &Literal| match v {
            Literal::Text(t) => format!("'{}'", t.replace('\'', "''")),
            Literal::Number(x) => x.to_string(),
        };
        match self {
            Filter::And(a, b) => write!(f, "({a} AND {b})"),
            Filter::Or(a, b) => write!(f, "({a} OR {b})"),
            Filter::Not(a) => write!(f, "NOT {a}"),
            Filter::IsEmpty(c) => write!(f, "{c} IS NULL"),
            Filter::In { column, values } => {
                let v: Vec<String> = values.iter().map(lit).collect();
                write!(f, "{column} IN ({})", v.join(", "))
            }
            Filter::Compare { column, op, value } => {
                let op = match op {
                    Compare::Eq => "=",
                    Compare::NotEq => "<>",
                    Compare::Lt => "<",
                    Compare::LtEq => "<=",
                    Compare::Gt => ">",
                    Compare::GtEq => ">=",
                };
                write!(f, "{column} {op} {}", lit(value))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_on_text_and_numbers() {
        let row = |c: &str| -> &'static str {
            match c {
                "region" => "north",
                "temp" => "21.5",
                "note" => "",
                _ => "abc",
            }
        };
        let cmp = |column: &str, op, value| Filter::Compare {
            column: column.into(),
            op,
            value,
        };
        let north = cmp("region", Compare::Eq, Literal::Text("north".into()));
        let warm = cmp("temp", Compare::Gt, Literal::Number(20.0));
        assert!(north.holds(&row));
        assert!(Filter::And(Box::new(north.clone()), Box::new(warm.clone())).holds(&row));
        assert!(!Filter::Not(Box::new(warm)).holds(&row));
        assert!(Filter::IsEmpty("note".into()).holds(&row));
        let in_list = Filter::In {
            column: "temp".into(),
            values: vec![Literal::Number(3.0), Literal::Number(21.5)],
        };
        assert!(in_list.holds(&row));
        // A number against text: unknown, so false under every operator.
        for op in [Compare::Lt, Compare::Eq, Compare::NotEq, Compare::GtEq] {
            assert!(!cmp("other", op, Literal::Number(1.0)).holds(&row));
        }
        assert_eq!(
            Filter::Or(Box::new(north), Box::new(in_list)).columns(),
            ["region", "temp"]
        );
    }
    /// SQL's three-valued logic: an empty field, or a field that is not a number
    /// compared with a number, is unknown, and neither a comparison nor its
    /// negation keeps the row; `AND` and `OR` decide when one side does.
    #[test]
    fn unknown_is_kept_by_no_comparison_and_no_negation() {
        let cmp = |column: &str, op, value| Filter::Compare {
            column: column.into(),
            op,
            value,
        };
        let not = |f: &Filter| Filter::Not(Box::new(f.clone()));
        let and = |a: &Filter, b: &Filter| Filter::And(Box::new(a.clone()), Box::new(b.clone()));
        let or = |a: &Filter, b: &Filter| Filter::Or(Box::new(a.clone()), Box::new(b.clone()));
        let twenty = cmp("temp", Compare::Eq, Literal::Number(20.0));
        let not_twenty = cmp("temp", Compare::NotEq, Literal::Number(20.0));
        let cold = cmp("temp", Compare::Lt, Literal::Number(100.0));
        let north = cmp("region", Compare::Eq, Literal::Text("north".into()));
        let south = cmp("region", Compare::Eq, Literal::Text("south".into()));
        let listed = Filter::In {
            column: "region".into(),
            values: vec![Literal::Number(1.0), Literal::Text("north".into())],
        };
        let kept = |f: &Filter, temp: &'static str, region: &'static str| {
            f.holds(&|c: &str| if c == "temp" { temp } else { region })
        };
        for temp in ["", "NaN", "abc"] {
            for f in [&twenty, &not_twenty, &cold] {
                assert!(!kept(f, temp, "north"), "{f} on {temp:?}");
                assert!(!kept(&not(f), temp, "north"), "NOT {f} on {temp:?}");
            }
            // Unknown AND false is false, so its negation keeps the row; unknown
            // OR true is true.
            assert!(kept(&not(&and(&cold, &south)), temp, "north"));
            assert!(!kept(&not(&and(&cold, &north)), temp, "north"));
            assert!(kept(&or(&cold, &north), temp, "north"));
            assert!(!kept(&not(&or(&cold, &south)), temp, "north"));
        }
        // `<>` and `NOT =` keep the same rows whatever the field.
        for temp in ["", "NaN", "abc", "20", "-inf", "21"] {
            assert_eq!(
                kept(&not_twenty, temp, "x"),
                kept(&not(&twenty), temp, "x"),
                "{temp:?}"
            );
        }
        assert!(kept(&not_twenty, "-inf", "x") && !kept(&not_twenty, "20", "x"));
        // An empty field is NULL for text too; IS NULL finds it.
        for f in [&north, &south, &listed] {
            assert!(!kept(f, "1", "") && !kept(&not(f), "1", ""), "{f}");
        }
        assert!(kept(&Filter::IsEmpty("region".into()), "1", ""));
        // IN: true when one literal matches; unknown (not false) when none does
        // and one cannot be compared.
        assert!(kept(&listed, "1", "north"));
        assert!(!kept(&not(&listed), "1", "south"));
        let texts = Filter::In {
            column: "region".into(),
            values: vec![Literal::Text("north".into())],
        };
        assert!(kept(&not(&texts), "1", "south"));
    }
}
