//! The curator's data model: domains of named attributes, CSV loading, dense
//! histograms with a memory cap, and relative entropy.
//!
//! A release's domain is public input ([`DomainSource`]): a JSON spec, or binary
//! columns named by the header. Nothing here infers it from the values; the only
//! data-dependent domain is [`Discovery`], a charged (ε, δ) mechanism.
//!
//! ```
//! use privq_host::data::{load_records, kl, CsvColumns, Domain, MemoryCap};
//! let domain = Domain::binary(["smoke", "mental"])?;
//! let table = "smoke,mental,count\n0,0,5\n0,1,3\n1,0,0\n1,1,2\n";
//! let columns = CsvColumns::new().count("count");
//! let counts = load_records(table.as_bytes(), &domain, &columns, MemoryCap::default())?;
//! let x = counts.normalized()?;
//! assert_eq!(counts.total(), 10);
//! assert_eq!(kl(x.probabilities(), x.probabilities()), 0.0);
//! # Ok::<(), privq_host::data::DataError>(())
//! ```

mod binarize;
mod columns;
mod discover;
mod divergence;
mod domain;
mod domain_json;
mod error;
mod histogram;
mod load;
mod records;

pub use binarize::{binarize, binarized_domain};
pub use columns::CsvColumns;
pub use discover::{
    Discovered, Discovery, DiscoveryError, DomainSource, Opened, PartialDomain, ValueCounts,
    open_dataset,
};
pub use divergence::{kl, relative_entropy};
pub use domain::{Attribute, AttributeKind, BinOutput, Bounds, DEFAULT_BINS, Domain, GRID_CELLS};
pub use domain_json::{PLACEHOLDER, domain_template};
pub use error::DataError;
pub use histogram::{CountHistogram, Distribution, MemoryCap};
pub use load::{Dataset, attribute_names, load_records, write_records, write_rows};
pub use records::{DictionaryColumn, Records};

/// The declared layout of the benchmark tables of Hardt's thesis (Table 5.1):
/// `mildew`, `czech` and `rochdale` are count tables whose `count` column says how
/// many records each row stands for; `nltcs` (and any other name) has one row per
/// record.
pub fn shared_table(name: &str) -> CsvColumns {
    match name {
        "mildew" | "czech" | "rochdale" => CsvColumns::new().count("count"),
        _ => CsvColumns::new(),
    }
}

/// `text` for an error message: at most 60 characters, the rest counted, so a
/// hostile or mistaken value of megabytes does not flood the terminal.
pub(crate) fn shorten(text: &str) -> std::borrow::Cow<'_, str> {
    const KEEP: usize = 60;
    match text.char_indices().nth(KEEP) {
        None => text.into(),
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()).into(),
    }
}

/// The benchmark data directory `../shared/data` for tests, or `None` (with a
/// SKIPPED line) when it is absent. With the environment variable `CI` set an
/// absent directory fails the test instead: tests cannot pass by skipping.
#[doc(hidden)]
pub fn shared_data_dir(what: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    if dir.exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is absent and CI is set: {what} cannot be skipped",
        dir.display()
    );
    eprintln!("SKIPPED: {} is absent ({what})", dir.display());
    None
}
