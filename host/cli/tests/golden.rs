//! Behaviour pinned: the seeded commands of `tests/golden/commands.txt` (every
//! subcommand of the default build) must print, write and exit exactly as recorded in
//! `tests/golden/expected/NAME.txt` — standard output, standard error (but for timing
//! lines), every file the command writes (text, or the length and a hash for binary
//! files) and the exit code.
//!
//! A change that means to alter an output re-records them:
//! `PRIVQ_BLESS=1 cargo test -p privq --test golden`, then review the diff.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// One line of `commands.txt`.
struct Case {
    name: String,
    args: Vec<String>,
    stdin: Option<String>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(golden_dir().join("commands.txt")).unwrap();
    let mut cases: Vec<Case> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, rest) = line.split_once(": ").expect("`NAME: ARGUMENTS`");
        let (rest, stdin) = match rest.split_once(" < ") {
            Some((args, file)) => (args, Some(file.trim().to_string())),
            None => (rest, None),
        };
        assert!(
            cases.iter().all(|c| c.name != name),
            "duplicate case name {name}"
        );
        cases.push(Case {
            name: name.to_string(),
            args: rest.split_whitespace().map(String::from).collect(),
            stdin,
        });
    }
    cases
}

/// FNV-1a, 64 bits: identifies a binary output in the record.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Standard error without the lines that report a duration (`… 0.03 s`).
fn without_timings(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| {
            let Some(head) = l.strip_suffix(" s") else {
                return true;
            };
            !head.ends_with(|c: char| c.is_ascii_digit())
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn record(work: &Path, case: &Case) -> String {
    let before = snapshot(work);
    let stdin = match &case.stdin {
        Some(f) => Stdio::from(std::fs::File::open(work.join(f)).unwrap()),
        None => Stdio::null(),
    };
    let out = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(&case.args)
        .current_dir(work)
        .stdin(stdin)
        .env_remove("CI")
        .output()
        .unwrap();
    let mut text = format!("$ privq {}", case.args.join(" "));
    if let Some(f) = &case.stdin {
        write!(text, " < {f}").unwrap();
    }
    write!(text, "\nexit: {:?}\n", out.status.code()).unwrap();
    text.push_str("--- stdout\n");
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    text.push_str("--- stderr\n");
    text.push_str(&without_timings(&String::from_utf8_lossy(&out.stderr)));
    for (name, bytes) in snapshot(work) {
        if before.get(&name) == Some(&bytes) {
            continue;
        }
        match std::str::from_utf8(&bytes) {
            Ok(s) => write!(text, "--- file {name}\n{s}").unwrap(),
            Err(_) => writeln!(
                text,
                "--- file {name}: binary, {} bytes, fnv1a-64 {:016x}",
                bytes.len(),
                fnv1a(&bytes)
            )
            .unwrap(),
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

/// The first line where `got` and `want` differ, for the failure message.
fn first_difference(got: &str, want: &str) -> String {
    let (g, w): (Vec<_>, Vec<_>) = (got.lines().collect(), want.lines().collect());
    let i = (0..g.len().max(w.len()))
        .find(|&i| g.get(i) != w.get(i))
        .unwrap_or(0);
    format!(
        "line {}:\n  recorded: {}\n  now:      {}",
        i + 1,
        w.get(i).unwrap_or(&"(end)"),
        g.get(i).unwrap_or(&"(end)")
    )
}

#[test]
fn seeded_commands_print_and_write_what_was_recorded() {
    let golden = golden_dir();
    let expected = golden.join("expected");
    let bless = std::env::var_os("PRIVQ_BLESS").is_some();
    let work = std::env::temp_dir().join(format!("privq-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    for e in std::fs::read_dir(golden.join("inputs")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), work.join(e.file_name())).unwrap();
    }
    let cases = cases();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    if bless {
        let _ = std::fs::remove_dir_all(&expected);
        std::fs::create_dir_all(&expected).unwrap();
    }
    let mut failures = Vec::new();
    for case in &cases {
        let got = record(&work, case);
        let path = expected.join(format!("{}.txt", case.name));
        if bless {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == got => {}
            Ok(want) => failures.push(format!("{}: {}", case.name, first_difference(&got, &want))),
            Err(e) => failures.push(format!("{}: no record {} ({e})", case.name, path.display())),
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    // A record without a command is stale.
    for e in std::fs::read_dir(&expected).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let stem = name.trim_end_matches(".txt");
        if !cases.iter().any(|c| c.name == stem) {
            failures.push(format!("{name}: a record for no command in commands.txt"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} commands differ from their record (re-record on purpose with \
         PRIVQ_BLESS=1 cargo test -p privq --test golden):\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
