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

/// The temporary files of the [`AtomicFile`]s not yet committed or dropped, for
/// [`remove_pending_temporaries`].
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn pending(f: impl FnOnce(&mut Vec<PathBuf>)) {
    if let Ok(mut list) = PENDING.lock() {
        f(&mut list);
    }
}

/// Private temporary directories in use (a Ballista executor's work directory),
/// for [`remove_pending_temporaries`].
static PENDING_DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn pending_dirs(f: impl FnOnce(&mut Vec<PathBuf>)) {
    if let Ok(mut list) = PENDING_DIRS.lock() {
        f(&mut list);
    }
}

/// Registers a private temporary directory whose contents
/// [`remove_pending_temporaries`] removes, until [`forget_temporary_dir`] (its
/// owner removes it itself when it is done).
pub fn track_temporary_dir(path: &Path) {
    pending_dirs(|list| list.push(path.to_path_buf()));
}

/// Unregisters a directory of [`track_temporary_dir`].
pub fn forget_temporary_dir(path: &Path) {
    pending_dirs(|list| list.retain(|p| p != path));
}

/// How often [`remove_pending_temporaries`] empties a directory that threads
/// still running may be writing into (and re-creating subdirectories of).
const DIR_EMPTYING_PASSES: u32 = 20;

/// Removes the temporary file of every [`AtomicFile`] still open and empties
/// every directory of [`track_temporary_dir`]: for a program interrupted by a
/// signal (its destructors do not run), so that Ctrl-C leaves no stray
/// temporary file. A directory's contents are removed again while they reappear
/// (threads of the interrupted work may still be writing), a bounded number of
/// times; the directory itself is kept, empty. Removing it would let such a
/// thread re-create it under the same name with the default mode (other users
/// could read what it writes next), or write into a directory another user made
/// under that name in the meantime; kept, anything written after the last pass
/// stays inside a directory its owner made private.
pub fn remove_pending_temporaries() {
    pending(|list| {
        for tmp in list.drain(..) {
            let _ = fs::remove_file(tmp);
        }
    });
    pending_dirs(|list| {
        for dir in list.drain(..) {
            for _ in 0..DIR_EMPTYING_PASSES {
                if empty_dir(&dir) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    });
}

/// Removes everything in `dir` (links not followed), keeping `dir`; true when
/// it was already empty (or is gone).
fn empty_dir(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return true;
    };
    let mut empty = true;
    for entry in entries.flatten() {
        empty = false;
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let _ = if is_dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
    empty
}

/// A file written in full or not at all: a temporary file beside the destination,
/// renamed into place by [`AtomicFile::commit`]. A destination that is (or links
/// to) a character device, FIFO or socket — `/dev/null`, `/dev/stdout`, a
/// terminal, a pipe — is written in place instead, since it cannot be replaced
/// (and must not be: as root, a rename would swap the device node for a plain
/// file). A symbolic link to anything else is itself replaced, never followed: a
/// link planted in the output's directory cannot redirect the write onto another
/// file.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    /// The temporary file; `None` when writing in place.
    tmp: Option<PathBuf>,
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file `.<name>.<pid>.tmp` next to `dest`, or opens a
    /// character device, FIFO or socket such as `/dev/null` in place.
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        let dest = dest.to_path_buf();
        if fs::metadata(&dest).is_ok_and(|m| is_stream(&m.file_type())) {
            let file = fs::OpenOptions::new().write(true).open(&dest)?;
            return Ok(AtomicFile {
                dest,
                tmp: None,
                file: Some(BufWriter::new(file)),
            });
        }
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
        pending(|list| list.push(tmp.clone()));
        Ok(AtomicFile {
            dest,
            tmp: Some(tmp),
            file: Some(BufWriter::new(file)),
        })
    }

    /// Flushes, syncs and renames the file into place (a special file: flushes).
    pub fn commit(mut self) -> io::Result<()> {
        let Some(f) = self.file.take() else {
            return Ok(());
        };
        let f = f.into_inner().map_err(|e| e.into_error())?;
        if let Some(tmp) = &self.tmp {
            f.sync_all()?;
            fs::rename(tmp, &self.dest)?;
            pending(|list| list.retain(|p| p != tmp));
            // In place: nothing left for `drop` to remove.
            self.tmp = None;
        }
        Ok(())
    }
}

/// A destination written in place: a character device, FIFO or socket (never a
/// block device, which holds a file system).
#[cfg(unix)]
fn is_stream(t: &fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    t.is_char_device() || t.is_fifo() || t.is_socket()
}

#[cfg(not(unix))]
fn is_stream(_: &fs::FileType) -> bool {
    false
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
    /// An uncommitted (or failed) file leaves no temporary file behind.
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(&tmp);
            pending(|list| list.retain(|p| p != &tmp));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ldp::aggregate::{FrequencyEstimates, ReportKind};
    use crate::ldp::estimate::{Estimate, PureProtocol};

    #[test]
    fn emptying_a_work_directory_keeps_it_and_follows_no_link() {
        let root = std::env::temp_dir().join(format!("privq-empty-dir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let (dir, outside) = (root.join("work"), root.join("outside"));
        fs::create_dir_all(dir.join("job/1/2")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(dir.join("job/1/2/data.arrow"), b"rows").unwrap();
        fs::write(dir.join("top"), b"rows").unwrap();
        fs::write(outside.join("keep"), b"not ours").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        assert!(!empty_dir(&dir), "it held entries");
        assert!(dir.is_dir(), "the directory itself is kept");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        assert!(
            outside.join("keep").is_file(),
            "a link is removed, not followed"
        );
        assert!(empty_dir(&dir), "now empty");
        assert!(
            empty_dir(&root.join("gone")),
            "a missing directory is empty"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    fn nan_group() -> GroupEstimates {
        let kind = ReportKind {
            mechanism: 2,
            epsilon_num: 710,
            epsilon_den: 1,
            param: 2,
            query: 0,
            g: 0,
        };
        let nan = Estimate::normal(f64::NAN, f64::NAN, 0.95);
        let ok = Estimate::normal(0.5, 0.01, 0.95);
        GroupEstimates {
            label: kind.to_string(),
            kind,
            n: 3,
            frequencies: Some(FrequencyEstimates {
                kind,
                n: 3,
                confidence: 0.95,
                protocol: PureProtocol {
                    p: f64::NAN,
                    q: 0.0,
                },
                items: vec![nan, ok],
            }),
            post_processed: Some(vec![f64::INFINITY, 0.5]),
            mean: None,
            undefined: true,
        }
    }

    #[test]
    fn undefined_estimates_are_never_printed_as_numbers() {
        let g = [nan_group()];
        let mut table = Vec::new();
        write_table(&g, 0.95, &mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains("undefined"), "{table}");
        assert!(table.contains("0.50000"), "{table}");
        let mut csv = Vec::new();
        write_csv(&g, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        for text in [&table, &csv] {
            let lower = text.to_lowercase();
            assert!(!lower.contains("nan") && !lower.contains("inf"), "{text}");
        }
        let mut err = Vec::new();
        let stats = IntakeStats::default();
        write_summary(&stats, &g, Outcome::Undefined, &mut err).unwrap();
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("some estimates are undefined"), "{err}");
        assert!(err.contains("exit code 5"), "{err}");
    }

    #[test]
    fn atomic_file_leaves_nothing_unless_committed() {
        let dir = std::env::temp_dir().join(format!("privq-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("out.bin");
        std::fs::write(&dest, b"old").unwrap();
        {
            let mut f = AtomicFile::create(&dest).unwrap();
            f.write_all(b"partial").unwrap();
        } // dropped: not committed
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        let entries = std::fs::read_dir(&dir).unwrap().count();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(entries, 1);
    }

    #[test]
    fn streams_are_written_in_place_and_other_links_replaced() {
        // /dev/null stays a device: nothing renamed over it.
        let mut f = AtomicFile::create(Path::new("/dev/null")).unwrap();
        f.write_all(b"gone").unwrap();
        f.commit().unwrap();
        assert!(!fs::metadata("/dev/null").unwrap().is_file());
        // A link to a regular file is replaced, never followed: its target is
        // untouched, whatever a planted link points at.
        let dir = std::env::temp_dir().join(format!("privq-atomic-link-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (target, link) = (dir.join("target.txt"), dir.join("link.txt"));
        fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut f = AtomicFile::create(&link).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_file());
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        // A link to a device is written through (like /dev/stdout).
        let null = dir.join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        let mut f = AtomicFile::create(&null).unwrap();
        f.write_all(b"gone").unwrap();
        f.commit().unwrap();
        assert!(
            fs::symlink_metadata(&null)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Dropped uncommitted: no temporary file left.
        drop(AtomicFile::create(&dir.join("never.txt")).unwrap());
        let entries = fs::read_dir(&dir).unwrap().count();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(entries, 3);
    }
}
