//! All-or-nothing outputs and the rendering of intake results.
//!
//! [`AtomicFile`] writes to a temporary file in the destination's directory
//! and renames it over the destination only on [`commit`](AtomicFile::commit);
//! dropped uncommitted, it removes the temporary file, so a failed command
//! leaves an existing output untouched and no partial file behind.
//! [`Destination`] adds `-` for standard output.
//!
//! Rendering never prints an undefined (non-finite) estimate as a number: it
//! prints `undefined` (table, CSV) or `null` (JSON).

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::campaign::Campaign;
use super::decode::RejectReason;
use super::intake::{GroupEstimates, IntakeStats, Outcome};

/// A file written in full or not at all.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file `.<name>.<pid>.tmp` next to `dest`.
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = dest.with_file_name(tmp_name);
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            tmp,
            file: Some(BufWriter::new(file)),
        })
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(f) = self.file.take() {
            let f = f.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
        }
        fs::rename(&self.tmp, &self.dest)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("file already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Where an output goes: `-` is standard output, anything else an [`AtomicFile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// A file, written atomically.
    File(PathBuf),
}

impl Destination {
    /// `-` → standard output.
    pub fn from_path(p: &Path) -> Destination {
        if p.as_os_str() == "-" {
            Destination::Stdout
        } else {
            Destination::File(p.to_path_buf())
        }
    }

    /// Writes everything `body` produces to the destination; a file appears
    /// only if `body` and the write succeed.
    pub fn write_with<E: From<io::Error>>(
        &self,
        stdout: &mut dyn Write,
        body: impl FnOnce(&mut dyn Write) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Destination::Stdout => {
                body(stdout)?;
                stdout.flush()?;
                Ok(())
            }
            Destination::File(p) => {
                let mut f = AtomicFile::create(p)?;
                body(&mut f)?;
                f.commit()?;
                Ok(())
            }
        }
    }

    /// For messages.
    pub fn display(&self) -> String {
        match self {
            Destination::Stdout => "standard output".into(),
            Destination::File(p) => p.display().to_string(),
        }
    }
}

/// The JSON document of `privq ldp aggregate --format json`.
#[derive(Debug, Serialize)]
pub struct IntakeReport<'a> {
    /// The campaign.
    pub campaign: &'a Campaign,
    /// How the run ended.
    pub outcome: Outcome,
    /// Its exit code.
    pub exit_code: u8,
    /// Everything read.
    pub stats: &'a IntakeStats,
    /// One entry per query group.
    pub groups: &'a [GroupEstimates],
}

fn num(x: f64, width: usize, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:>width$.prec$}")
    } else {
        format!("{:>width$}", "undefined")
    }
}

fn csv_num(x: f64) -> String {
    if x.is_finite() {
        x.to_string()
    } else {
        "undefined".into()
    }
}

/// A human-readable table of every group.
pub fn write_table(
    groups: &[GroupEstimates],
    confidence: f64,
    out: &mut dyn Write,
) -> io::Result<()> {
    for g in groups {
        writeln!(out, "# {} — {} reports", g.label, g.n)?;
        if let (Some(f), Some(pp)) = (&g.frequencies, &g.post_processed) {
            let interval = format!("{:.0}% interval", confidence * 100.0);
            writeln!(
                out,
                "{:>6} {:>10} {:>10} {:>22} {:>10}",
                "item", "estimate", "std.err", interval, "post"
            )?;
            for (i, (e, p)) in f.items.iter().zip(pp).enumerate() {
                writeln!(
                    out,
                    "{i:>6} {} {} [{}, {}] {}",
                    num(e.value, 10, 5),
                    num(e.std_error(), 10, 5),
                    num(e.ci_low, 9, 5),
                    num(e.ci_high, 9, 5),
                    num(*p, 10, 5)
                )?;
            }
        }
        if let Some(m) = &g.mean {
            let e = m.estimate;
            writeln!(
                out,
                "mean {} ± {} ({:.0}% interval [{}, {}])",
                num(e.value, 0, 6),
                num(e.ci_high - e.value, 0, 6),
                confidence * 100.0,
                num(e.ci_low, 0, 6),
                num(e.ci_high, 0, 6)
            )?;
        }
    }
    Ok(())
}

/// CSV: one row per (group, item), and one `mean` row per mean group.
pub fn write_csv(groups: &[GroupEstimates], out: &mut dyn Write) -> Result<(), csv::Error> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "group",
        "item",
        "estimate",
        "std_error",
        "ci_low",
        "ci_high",
        "post_processed",
    ])?;
    for g in groups {
        if let (Some(f), Some(pp)) = (&g.frequencies, &g.post_processed) {
            for (i, (e, p)) in f.items.iter().zip(pp).enumerate() {
                w.write_record([
                    g.label.clone(),
                    i.to_string(),
                    csv_num(e.value),
                    csv_num(e.std_error()),
                    csv_num(e.ci_low),
                    csv_num(e.ci_high),
                    csv_num(*p),
                ])?;
            }
        }
        if let Some(m) = &g.mean {
            let e = m.estimate;
            w.write_record([
                g.label.clone(),
                "mean".into(),
                csv_num(e.value),
                csv_num(e.std_error()),
                csv_num(e.ci_low),
                csv_num(e.ci_high),
                String::new(),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

/// The summary lines for standard error: counts, rejections by reason, the
/// first problems with their offsets, and undefined groups.
pub fn write_summary(
    stats: &IntakeStats,
    groups: &[GroupEstimates],
    outcome: Outcome,
    err: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        err,
        "privq: {} input(s), {} file(s), {} bytes, {} frames: {} reports aggregated, {} frames rejected, {} bytes skipped",
        stats.inputs,
        stats.files,
        stats.bytes,
        stats.frames,
        stats.accepted,
        stats.rejected.total(),
        stats.skipped_bytes
    )?;
    for class in RejectReason::ALL {
        let c = stats.rejected.get(class);
        if c > 0 {
            writeln!(err, "privq:   {c} × {class} ({})", class.name())?;
        }
    }
    for p in &stats.problems {
        writeln!(err, "privq:   at {p}")?;
    }
    if stats.unlisted_problems > 0 {
        writeln!(
            err,
            "privq:   … and {} more problems",
            stats.unlisted_problems
        )?;
    }
    for g in groups.iter().filter(|g| g.undefined) {
        writeln!(
            err,
            "privq: warning: {}: some estimates are undefined (not finite)",
            g.label
        )?;
    }
    if outcome != Outcome::Complete {
        writeln!(
            err,
            "privq: warning: {outcome} (exit code {})",
            outcome.exit_code()
        )?;
    }
    Ok(())
}
