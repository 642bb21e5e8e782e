//! The cases of the `aggregate` bench timed once each (or `--repeats R` times), for
//! tables too large for criterion's ten or more samples per case: the same
//! synthetic table, plans and non-private baselines (`shared/aggregate.rs`, which
//! both include), without criterion.
//!
//! ```text
//! cargo bench -p privq-host --bench aggregate_once -- --rows 100000000
//! cargo bench -p privq-host --bench aggregate_once -- --rows 10000000 --repeats 3
//! cargo bench -p privq-host --bench aggregate_once -- --rows 100000000 --csv-file /tmp/t.csv
//! cargo bench -p privq-host --features bench-opendp --bench aggregate_once  # with OpenDP
//! ```
//!
//! `--rows N` (or `PRIVQ_BENCH_ROWS`; `1e8` is accepted) defaults to 10⁶ (10⁴ when
//! run by `cargo test --benches`, a smoke test). It prints to standard output one
//! Markdown table: for each case the wall time (the median of the repeats, and their
//! range), its ratio to the `baseline_csv` case (loading) or to the `baseline_hashmap`
//! and `baseline_vec` cases (releasing), measured in the same run, and the peak
//! resident memory of the process during the case (`VmHWM` of `/proc/self/status`,
//! reset before each case through `/proc/self/clear_refs`; it includes the data held
//! across cases). Progress, the load average (`/proc/loadavg`) at the start and the
//! end, and the memory estimate go to standard error.
//!
//! Before allocating, it estimates the memory the run needs from the row count
//! ([`BYTES_PER_ROW`], [`CSV_BYTES_PER_ROW`]) and compares it with `MemAvailable` of
//! `/proc/meminfo` (and the cgroup's limit, if any). The CSV text is held in memory
//! when everything fits; when only the columns fit, it is written to a temporary file
//! and each load streams it from there (`--csv-file PATH` chooses the file and keeps
//! it; `--csv-in-memory` insists on memory); when neither fits, it refuses. Time and
//! memory of one run at 10⁸ rows: see the book, private statistics, "Speed".

use std::fs::File;
use std::hint::black_box;
use std::io::{self, BufWriter, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use privq_host::aggregate::{Groups, Table};
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

#[path = "shared/aggregate.rs"]
mod shared;
use shared::{
    CSV_BYTES_PER_ROW, baseline_csv, baseline_hashmap, baseline_sorted, baseline_sorted_packed,
    baseline_vec, generate, generate_into, plan, public_keys,
};

/// Estimated peak bytes per row besides the CSV text: the generated columns (16), the
/// loaded table's columns with a `Vec`'s worst growth slack (2 × 16), the unit
/// interning while loading (about 8 per row at 10 rows a unit) and a margin (8). The
/// largest scratch of a case (`baseline_sorted_packed`, 16) comes after the table is
/// dropped. Measured peaks: 0.60 GiB at 10⁷ rows and 5.85 GiB at 10⁸ with the CSV
/// text in memory (about 63 bytes a row in all, against 64 + 24 estimated).
const BYTES_PER_ROW: usize = 64;

/// What the command line asks for.
struct Args {
    rows: usize,
    repeats: usize,
    csv_file: Option<PathBuf>,
    csv_in_memory: bool,
}

fn parse_count(s: &str) -> Option<usize> {
    let s = s.replace('_', "");
    if let Some((m, e)) = s.split_once(['e', 'E']) {
        let (m, e): (usize, u32) = (m.parse().ok()?, e.parse().ok()?);
        return m.checked_mul(10usize.checked_pow(e)?);
    }
    s.parse().ok()
}

fn args() -> Args {
    let mut args = Args {
        rows: 0,
        repeats: 1,
        csv_file: None,
        csv_in_memory: false,
    };
    let mut rows = std::env::var("PRIVQ_BENCH_ROWS")
        .ok()
        .map(|s| parse_count(&s).expect("PRIVQ_BENCH_ROWS: a row count"));
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let mut bench = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match a.as_str() {
            "--bench" => bench = true,
            "--rows" => rows = Some(parse_count(&value("--rows")).expect("--rows: a row count")),
            "--repeats" => {
                args.repeats = parse_count(&value("--repeats")).expect("--repeats: a count")
            }
            "--csv-file" => args.csv_file = Some(value("--csv-file").into()),
            "--csv-in-memory" => args.csv_in_memory = true,
            other => panic!(
                "unknown argument {other:?} (--rows N, --repeats R, --csv-file PATH, --csv-in-memory)"
            ),
        }
    }
    args.rows = rows.unwrap_or(if bench { 1_000_000 } else { 10_000 });
    assert!(
        args.rows > 0 && args.repeats > 0,
        "--rows and --repeats: at least 1"
    );
    args
}

/// A field of `/proc/meminfo` or `/proc/self/status`, in bytes (the files give kB).
fn proc_kb(file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The memory this process may still take: `MemAvailable`, or less if a cgroup
/// limit leaves less.
fn available_bytes() -> u64 {
    let meminfo = proc_kb("/proc/meminfo", "MemAvailable").expect("MemAvailable in /proc/meminfo");
    let cgroup = (|| {
        let max: u64 = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let current: u64 = std::fs::read_to_string("/sys/fs/cgroup/memory.current")
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Some(max.saturating_sub(current))
    })();
    cgroup.map_or(meminfo, |c| c.min(meminfo))
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Resets the peak resident size (`VmHWM`) to the current one; false where the
/// kernel does not allow it (the peaks are then cumulative).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn peak() -> u64 {
    proc_kb("/proc/self/status", "VmHWM").unwrap_or(0)
}

/// Progress lines on standard error, stamped with the time since the start.
struct Log(Instant);

impl Log {
    fn line(&self, text: &str) {
        eprintln!("[{:8.1} s] {text}", self.0.elapsed().as_secs_f64());
    }
}

/// A reader that reports every 256 MiB read (a load's progress).
struct Counted<'a, R> {
    inner: R,
    read: u64,
    log: &'a Log,
    what: &'a str,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let before = self.read;
        self.read += n as u64;
        if before >> 28 != self.read >> 28 {
            self.log.line(&format!(
                "  {}: {:.2} GiB of CSV read",
                self.what,
                gib(self.read)
            ));
        }
        Ok(n)
    }
}

/// Where the CSV text is.
enum Csv {
    Memory(String),
    File { path: PathBuf, keep: bool },
}

impl Csv {
    fn reader<'a>(&'a self, log: &'a Log, what: &'a str) -> Counted<'a, Box<dyn Read + 'a>> {
        let inner: Box<dyn Read + 'a> = match self {
            Csv::Memory(text) => Box::new(text.as_bytes()),
            Csv::File { path, .. } => Box::new(File::open(path).expect("the CSV file opens")),
        };
        Counted {
            inner,
            read: 0,
            log,
            what,
        }
    }
}

impl Drop for Csv {
    fn drop(&mut self) {
        if let Csv::File { path, keep: false } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Seconds to three significant digits.
fn secs(t: f64) -> String {
    let decimals = if t > 0.0 {
        (2 - t.log10().floor() as i32).clamp(0, 6) as usize
    } else {
        3
    };
    format!("{t:.decimals$}")
}

/// One case's measurements.
struct Case {
    name: &'static str,
    times: Vec<Duration>,
    peak: u64,
}

impl Case {
    fn median(&self) -> f64 {
        let mut t: Vec<f64> = self.times.iter().map(Duration::as_secs_f64).collect();
        t.sort_by(f64::total_cmp);
        let m = t.len() / 2;
        if t.len() % 2 == 1 {
            t[m]
        } else {
            (t[m - 1] + t[m]) / 2.0
        }
    }
}

/// Runs `f` `repeats` times (dropping each result but the last outside the timing),
/// returning the last result and the case's times and peak memory.
fn run<T>(log: &Log, name: &'static str, repeats: usize, mut f: impl FnMut() -> T) -> (T, Case) {
    let mut times = Vec::with_capacity(repeats);
    let mut last = None;
    let mut peak_bytes = 0;
    for r in 0..repeats {
        drop(last.take());
        reset_peak();
        log.line(&format!("{name}: run {} of {repeats}", r + 1));
        let start = Instant::now();
        let out = black_box(f());
        let t = start.elapsed();
        peak_bytes = peak_bytes.max(peak());
        log.line(&format!(
            "{name}: {:.3} s, peak RSS {:.2} GiB",
            t.as_secs_f64(),
            gib(peak())
        ));
        times.push(t);
        last = Some(out);
    }
    let case = Case {
        name,
        times,
        peak: peak_bytes,
    };
    (last.expect("at least one repeat"), case)
}

fn main() {
    let args = args();
    let n = args.rows;
    let log = Log(Instant::now());
    let load_start = load_average();
    log.line(&format!("rows {n}, repeats {}", args.repeats));
    log.line(&format!("load average at the start: {load_start}"));

    // Memory: refuse before allocating anything large.
    let available = available_bytes();
    let columns_bytes = (n as u64).saturating_mul(BYTES_PER_ROW as u64);
    let csv_bytes = (n as u64).saturating_mul(CSV_BYTES_PER_ROW as u64);
    let in_memory = args.csv_file.is_none() && columns_bytes + csv_bytes <= available;
    log.line(&format!(
        "memory: estimate {:.2} GiB with the CSV text in memory, {:.2} GiB with it in a file; \
         available {:.2} GiB",
        gib(columns_bytes + csv_bytes),
        gib(columns_bytes),
        gib(available)
    ));
    let needed = if in_memory || args.csv_in_memory {
        columns_bytes + csv_bytes
    } else {
        columns_bytes
    };
    if needed > available {
        eprintln!(
            "refused: {n} rows need about {:.2} GiB ({BYTES_PER_ROW} bytes a row{}), \
             but only {:.2} GiB is available (MemAvailable, /proc/meminfo); use fewer rows{}",
            gib(needed),
            if needed > columns_bytes {
                format!(" and {CSV_BYTES_PER_ROW} of CSV text")
            } else {
                String::new()
            },
            gib(available),
            if args.csv_in_memory {
                " or drop --csv-in-memory"
            } else {
                ""
            }
        );
        std::process::exit(2);
    }

    // The table.
    reset_peak();
    let progress = |phase: &str, done: usize| log.line(&format!("generate: {phase} {done}/{n}"));
    let start = Instant::now();
    let (data, csv) = if in_memory || args.csv_in_memory {
        log.line("generate: CSV text in memory");
        let (data, text) = generate(n, progress);
        (data, Csv::Memory(text))
    } else {
        let (path, keep) = match &args.csv_file {
            Some(p) => (p.clone(), true),
            None => (
                std::env::temp_dir()
                    .join(format!("privq-aggregate-once-{}.csv", std::process::id())),
                false,
            ),
        };
        log.line(&format!(
            "generate: CSV text to {} (streamed by each load)",
            path.display()
        ));
        let mut file = BufWriter::with_capacity(
            1 << 20,
            File::create(&path).expect("the CSV file is created"),
        );
        let csv = Csv::File { path, keep };
        let data = generate_into(n, &mut file, progress).expect("writing the CSV file");
        drop(file);
        (data, csv)
    };
    let generate = Case {
        name: "generate (not a case: the table, its CSV text and columns)",
        times: vec![start.elapsed()],
        peak: peak(),
    };
    log.line(&format!("generate: {:.1} s", generate.median()));

    let public = plan(public_keys());
    let private = plan(Groups::Private { delta: 1e-6 });
    let columns = public.columns();
    assert_eq!(columns, private.columns());
    let mut cases = vec![];

    // Loading, from the CSV text.
    let (by_text, case) = run(&log, "baseline_csv", args.repeats, || {
        baseline_csv(csv.reader(&log, "baseline_csv"))
    });
    cases.push(case);
    let (table, case) = run(&log, "privq_from_csv", args.repeats, || {
        Table::from_csv(csv.reader(&log, "privq_from_csv"), &columns, usize::MAX)
            .expect("the synthetic table loads")
    });
    cases.push(case);
    drop(csv);
    assert_eq!(table.rows(), data.rows);

    // Releasing, from rows in memory.
    let mut rng = ChaCha12Rng::seed_from_u64(2);
    let (released, case) = run(&log, "privq_public", args.repeats, || {
        public.release(&table, &mut rng).expect("released")
    });
    cases.push(case);
    let mut rng = ChaCha12Rng::seed_from_u64(3);
    let (_, case) = run(&log, "privq_private", args.repeats, || {
        private.release(&table, &mut rng).expect("released")
    });
    cases.push(case);
    drop(table);
    let (truth, case) = run(&log, "baseline_vec", args.repeats, || {
        baseline_vec(&data.keys, &data.x)
    });
    cases.push(case);
    let (by_map, case) = run(&log, "baseline_hashmap", args.repeats, || {
        baseline_hashmap(&data.keys, &data.x)
    });
    cases.push(case);
    let (sorted, case) = run(&log, "baseline_sorted", args.repeats, || {
        baseline_sorted(&data.units, &data.keys, &data.x)
    });
    cases.push(case);
    let (packed, case) = run(&log, "baseline_sorted_packed", args.repeats, || {
        baseline_sorted_packed(&data.units, &data.keys, &data.x)
    });
    cases.push(case);
    #[cfg(feature = "bench-opendp")]
    {
        let od = shared::opendp_case::OpenDp::build();
        let (_, case) = run(&log, "opendp", args.repeats, || {
            od.release(&data.keys, &data.x)
        });
        cases.push(case);
    }

    // Sanity, outside the timing: every baseline agrees, and privq's count of a group
    // is near the true one (its noise scale is 30 rows here).
    assert_eq!(truth.iter().map(|s| s.0).sum::<u64>(), n as u64);
    let k = 7 % truth.len();
    assert_eq!(by_map[&(k as u32)].0, truth[k].0);
    assert_eq!(sorted[k].0, truth[k].0);
    assert_eq!(packed[k].0, truth[k].0);
    assert_eq!(by_text[&format!("g{k}")].0, truth[k].0);
    let row = &released.0.rows()[k];
    assert_eq!(row.key(), [format!("g{k}")]);
    assert!((row.estimates()[0].value() - truth[k].0 as f64).abs() < 1_000.0);
    drop(data);

    let time = |name: &str| {
        cases
            .iter()
            .find(|c| c.name == name)
            .map(Case::median)
            .expect("a case")
    };
    let (csv_base, map_base, vec_base) = (
        time("baseline_csv"),
        time("baseline_hashmap"),
        time("baseline_vec"),
    );
    println!(
        "| rows | case | wall s{} | / `baseline_csv` | / `baseline_hashmap` | / `baseline_vec` | peak RSS GiB |",
        if args.repeats > 1 {
            format!(" (median of {}; range)", args.repeats)
        } else {
            String::new()
        }
    );
    println!("|---|---|---|---|---|---|---|");
    let wall = |c: &Case| {
        let t = c.median();
        if c.times.len() > 1 {
            let min = c.times.iter().min().expect("times").as_secs_f64();
            let max = c.times.iter().max().expect("times").as_secs_f64();
            format!("{} ({}–{})", secs(t), secs(min), secs(max))
        } else {
            secs(t)
        }
    };
    println!(
        "| {n} | {} | {} | | | | {:.2} |",
        generate.name,
        wall(&generate),
        gib(generate.peak)
    );
    for (i, c) in cases.iter().enumerate() {
        let t = c.median();
        let ratios = if i < 2 {
            format!("{:.2}× | |", t / csv_base)
        } else {
            format!("| {:.2}× | {:.1}×", t / map_base, t / vec_base)
        };
        println!(
            "| {n} | {} | {} | {ratios} | {:.2} |",
            c.name,
            wall(c),
            gib(c.peak)
        );
    }
    let both = time("privq_from_csv") + time("privq_public");
    println!(
        "| {n} | privq load + public release | {} | {:.2}× | | | |",
        secs(both),
        both / csv_base
    );
    let peak_all = cases
        .iter()
        .map(|c| c.peak)
        .chain([generate.peak])
        .max()
        .unwrap_or(0);
    log.line(&format!(
        "done in {:.1} s; peak RSS {:.2} GiB (estimate {:.2} GiB){}",
        log.0.elapsed().as_secs_f64(),
        gib(peak_all),
        gib(needed),
        if reset_peak() {
            ""
        } else {
            " (VmHWM could not be reset: peaks are cumulative)"
        }
    ));
    log.line(&format!("load average at the start: {load_start}"));
    log.line(&format!("load average at the end:   {}", load_average()));
}
