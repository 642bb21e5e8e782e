//! Result tables on standard output, as CSV (the default) or JSON (`--format json`):
//! one writer so every command that prints rows of results offers both, with the
//! same column names.

use std::io::Write;

use super::CliError;

/// How results are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// CSV with a header row.
    #[default]
    Csv,
    /// A JSON array with one object per row, keyed by the CSV column names.
    Json,
}

/// The `--format` option.
#[derive(Debug, Clone, clap::Args)]
pub struct FormatArg {
    /// Results as `csv` (a header row, then one line per result) or `json` (an array
    /// of objects keyed by the same column names; non-finite numbers are null).
    #[arg(long, value_enum, default_value = "csv")]
    pub format: Format,
}

/// One value of a result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A number (printed with `num` in CSV; shortest round-trip form in JSON).
    Num(f64),
    /// A count or index.
    Int(u64),
    /// An exact decimal, e.g. a fixed-point release: written as is in both forms.
    Exact(String),
    /// Text.
    Text(String),
}

impl Cell {
    fn csv(&self) -> String {
        match self {
            Cell::Num(x) => super::num(*x),
            Cell::Int(i) => i.to_string(),
            Cell::Exact(s) | Cell::Text(s) => s.clone(),
        }
    }

    fn json(&self) -> String {
        match self {
            Cell::Num(x) if x.is_finite() => {
                serde_json::Number::from_f64(*x).map_or_else(|| "null".into(), |n| n.to_string())
            }
            Cell::Num(_) => "null".into(),
            Cell::Int(i) => i.to_string(),
            Cell::Exact(s) => s.clone(),
            Cell::Text(s) => json_string(s),
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

/// Writes `rows` under `columns` in `format`. Rows are written as they come, so a
/// caller that must not print partial results computes them all first.
pub fn write_rows<'a>(
    format: Format,
    columns: &[&str],
    rows: impl IntoIterator<Item = &'a [Cell]>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    match format {
        Format::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(columns)?;
            for row in rows {
                w.write_record(row.iter().map(Cell::csv))?;
            }
            w.flush()?;
        }
        Format::Json => {
            let keys: Vec<String> = columns.iter().map(|c| json_string(c)).collect();
            write!(out, "[")?;
            for (i, row) in rows.into_iter().enumerate() {
                let fields: Vec<String> = keys
                    .iter()
                    .zip(row)
                    .map(|(k, v)| format!("{k}: {}", v.json()))
                    .collect();
                let sep = if i == 0 { "" } else { "," };
                write!(out, "{sep}\n  {{{}}}", fields.join(", "))?;
            }
            writeln!(out, "\n]")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(rows: &[Vec<Cell>]) -> (String, serde_json::Value) {
        let cols = ["query", "answer", "note"];
        let mut csv = Vec::new();
        write_rows(Format::Csv, &cols, rows.iter().map(|r| &r[..]), &mut csv).unwrap();
        let mut json = Vec::new();
        write_rows(Format::Json, &cols, rows.iter().map(|r| &r[..]), &mut json).unwrap();
        let json = serde_json::from_slice(&json).expect("valid JSON");
        (String::from_utf8(csv).unwrap(), json)
    }

    #[test]
    fn csv_and_json_carry_the_same_rows() {
        let rows = vec![
            vec![Cell::Int(0), Cell::Num(0.25), Cell::Text("a, \"b\"".into())],
            vec![
                Cell::Int(1),
                Cell::Exact("-3.5".into()),
                Cell::Text("c".into()),
            ],
            vec![
                Cell::Int(2),
                Cell::Num(f64::INFINITY),
                Cell::Text(String::new()),
            ],
        ];
        let (csv, json) = both(&rows);
        assert_eq!(
            csv,
            "query,answer,note\n0,0.25,\"a, \"\"b\"\"\"\n1,-3.5,c\n2,inf,\n"
        );
        assert_eq!(json[0]["answer"], 0.25);
        assert_eq!(json[0]["note"], "a, \"b\"");
        assert_eq!(json[1]["answer"], -3.5);
        assert!(json[2]["answer"].is_null());
        assert_eq!(json.as_array().unwrap().len(), 3);
    }

    #[test]
    fn no_rows_is_an_empty_array() {
        let (csv, json) = both(&[]);
        assert_eq!(csv, "query,answer,note\n");
        assert_eq!(json, serde_json::json!([]));
    }
}
