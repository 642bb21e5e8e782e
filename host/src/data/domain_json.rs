//! Writing a domain back as the JSON spec [`Domain::from_json`] reads, and the
//! template `privq domain init` writes from a header.

use serde_json::json;

/// One attribute of a spec on one line: `{"name": …, "values"|"edges": […]}`.
fn line(name: &str, key: &str, list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|v| json!(v).to_string()).collect();
    format!(
        "  {{\"name\": {}, \"{key}\": [{}]}}",
        json!(name),
        items.join(", ")
    )
}

use super::domain::{AttributeKind, Domain};

/// The marker a template puts where the curator must fill in public facts;
/// [`Domain::from_json`] refuses a spec that still holds it.
pub const PLACEHOLDER: &str = "TODO:";

impl Domain {
    /// The domain as the JSON spec [`Domain::from_json`] reads (the
    /// `{"attributes": [...]}` form), one attribute per line.
    ///
    /// ```
    /// use privq_host::data::Domain;
    /// let text = r#"{"attributes": [{"name": "age", "edges": ["0", "18.5", "120"]},
    ///                               {"name": "city", "values": ["Oslo", "Rome"]}]}"#;
    /// let d = Domain::from_json(text)?;
    /// assert_eq!(Domain::from_json(&d.to_json())?, d);
    /// let b = Domain::from_json(r#"{"attributes": [{"name": "age", "bounds": [17, 90], "integer": true}]}"#)?;
    /// assert_eq!(Domain::from_json(&b.to_json())?, b);
    /// # Ok::<(), privq_host::data::DataError>(())
    /// ```
    pub fn to_json(&self) -> String {
        let lines: Vec<String> = self
            .attributes()
            .iter()
            .map(|a| match (a.kind(), a.bounds()) {
                (_, Some(b)) if a.needs_bins() => format!(
                    "  {{\"name\": {}, \"bounds\": [{}, {}], \"bins\": {}, \"integer\": {}}}",
                    json!(a.name()),
                    json!(b.lo().to_string()),
                    json!(b.hi().to_string()),
                    b.bins(),
                    b.integer()
                ),
                (AttributeKind::Categorical(values), _) => line(a.name(), "values", values),
                (AttributeKind::Binned(edges), _) => {
                    let edges: Vec<String> = edges.iter().map(|e| e.to_string()).collect();
                    line(a.name(), "edges", &edges)
                }
            })
            .collect();
        format!("{{\"attributes\": [\n{}\n]}}\n", lines.join(",\n"))
    }
}

/// A domain template for the columns `names`: the names only, with placeholders
/// for the public facts (bin edges for the columns in `numeric`, category lists
/// for the others). It reads nothing but the names, so it reveals nothing about
/// the values; [`Domain::from_json`] refuses it until every placeholder is
/// replaced.
///
/// ```
/// use privq_host::data::{domain_template, Domain};
/// let t = domain_template(&["age".into(), "city".into()], &["age".into()]);
/// assert!(t.contains(r#"{"name": "age", "edges": ["#));
/// assert!(Domain::from_json(&t).is_err());
/// ```
pub fn domain_template(names: &[String], numeric: &[String]) -> String {
    let lines: Vec<String> = names
        .iter()
        .map(|name| {
            if numeric.contains(name) {
                let edges = [
                    format!("{PLACEHOLDER} lowest value"),
                    format!("{PLACEHOLDER} bin edges, increasing"),
                    format!("{PLACEHOLDER} highest value"),
                ];
                line(name, "edges", &edges)
            } else {
                let values = [format!("{PLACEHOLDER} every possible value of {name}")];
                line(name, "values", &values)
            }
        })
        .collect();
    format!("{{\"attributes\": [\n{}\n]}}\n", lines.join(",\n"))
}
