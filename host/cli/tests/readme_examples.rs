//! Every `privq …` command line in the ```sh blocks of the README and of the book
//! (`docs/src`, in the order of its `SUMMARY.md`), run with the built binary in one
//! scratch directory: it must exit 0, and where a ```text block right after the
//! ```sh block shows output, the last command's output must contain those lines in
//! that order (`...` stands for lines left out). A `cat > FILE <<'EOF'` here-document
//! in a ```sh block writes FILE, as it would for a reader following along.
//!
//! `cargo run --release -p privq --` is read as `privq`. Commands are run by
//! `sh -c` with the binary first on `PATH`, so pipes and redirections work as in
//! the README. The scratch directory holds the inputs the README refers to
//! (`points.csv`, `queries.csv`, `people.csv`) and `../shared/data` (a link to the
//! repository's shared data, when it is present).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The only README commands not run, and why: each takes minutes. Kept short and
/// checked against the README, so an entry cannot outlive its example.
const SKIPPED: &[(&str, &str)] = &[
    (
        "privq experiment mwem",
        "the full thesis protocol, about 10 minutes",
    ),
    ("privq experiment distance", "the error-vs-n grid, minutes"),
];

/// One example: its command line, and the output lines the README shows for it.
#[derive(Debug)]
struct Example {
    command: String,
    shown: Vec<String>,
}

/// The README's shell examples that run `privq`.
fn examples(readme: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut lines = readme.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() != "```sh" {
            continue;
        }
        let mut block = Vec::new();
        for l in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            block.push(l.to_string());
        }
        let mut found = Vec::new();
        let mut rest = Vec::new();
        let mut block = block.into_iter();
        while let Some(l) = block.next() {
            let Some(delim) = heredoc(&l) else {
                rest.push(l);
                continue;
            };
            // Commands before the here-document run first.
            found.extend(
                joined(&std::mem::take(&mut rest))
                    .iter()
                    .filter_map(|c| command(c))
                    .map(|command| Example {
                        command,
                        shown: Vec::new(),
                    }),
            );
            let mut command = l.clone();
            for body in block.by_ref() {
                command.push('\n');
                command.push_str(&body);
                if body.trim() == delim {
                    break;
                }
            }
            found.push(Example {
                command,
                shown: Vec::new(),
            });
        }
        found.extend(
            joined(&rest)
                .iter()
                .filter_map(|c| command(c))
                .map(|command| Example {
                    command,
                    shown: Vec::new(),
                }),
        );
        // A ```text block right after (blank lines allowed) shows the last command's output.
        while lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
        if lines.peek().is_some_and(|l| l.trim() == "```text") {
            lines.next();
            let shown: Vec<String> = lines
                .by_ref()
                .take_while(|l| l.trim() != "```")
                .map(str::to_string)
                .collect();
            if let Some(last) = found.last_mut() {
                last.shown = shown;
            }
        }
        out.append(&mut found);
    }
    out
}

/// The delimiter of a `cat > FILE <<'EOF'` line.
fn heredoc(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("cat > ")?;
    let (_, delim) = rest.split_once(" <<")?;
    Some(delim.trim().trim_matches('\'').to_string())
}

/// The README followed by the book's chapters in the order of `docs/src/SUMMARY.md`.
fn documents() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let src = root.join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    for chapter in summary.split("](").skip(1) {
        let name = &chapter[..chapter.find(')').unwrap()];
        text.push('\n');
        text.push_str(
            &std::fs::read_to_string(src.join(name)).unwrap_or_else(|e| panic!("{name}: {e}")),
        );
    }
    text
}

/// Lines with `\` continuations joined.
fn joined(block: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in block {
        match l.trim_end().strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(l);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    out
}

/// The shell command of a line that runs `privq` (comments dropped), if it does.
fn command(line: &str) -> Option<String> {
    let line = line.replace("cargo run --release -p privq --", "privq");
    let code = match line.find(" #") {
        Some(i) => &line[..i],
        None => line.as_str(),
    }
    .trim();
    let runs_privq = code.starts_with("privq ") || code.contains("| privq ");
    runs_privq.then(|| code.to_string())
}

fn skipped(command: &str) -> Option<&'static str> {
    SKIPPED
        .iter()
        .find(|(c, _)| command == *c)
        .map(|(_, why)| *why)
}

/// A scratch tree `root/work` (the working directory) and `root/shared/data`.
fn scratch() -> (PathBuf, bool) {
    let root = std::env::temp_dir().join(format!("privq-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let shared = privq_host::data::shared_data_dir("README examples on ../shared/data");
    if let Some(data) = &shared {
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::os::unix::fs::symlink(data.canonicalize().unwrap(), root.join("shared/data")).unwrap();
    }
    write_inputs(&work);
    (work, shared.is_some())
}

/// The input files the README's examples name.
fn write_inputs(work: &Path) {
    let mut points = String::from("x,y\n");
    let mut people = String::from("age,city,smoker\n");
    for i in 0..5000usize {
        let (u, v) = (
            (i * 7919 % 2000) as f64 / 2000.0,
            (i * 31 % 97) as f64 / 96.0,
        );
        points.push_str(&format!("{},{}\n", u * u, v));
        let city = ["Oslo", "Rome", "Lima"][i % 3];
        people.push_str(&format!("{},{city},{}\n", 20 + i % 5 * 10, i % 2));
    }
    std::fs::write(work.join("points.csv"), points).unwrap();
    std::fs::write(work.join("queries.csv"), "x,y\n0.5,0.5\n0,0\n1,1\n").unwrap();
    std::fs::write(work.join("people.csv"), people).unwrap();
}

/// `shown` (less `...` lines) appears in `output`, in order.
fn shows(output: &str, shown: &[String]) -> Result<(), String> {
    let mut lines = output.lines();
    for want in shown.iter().filter(|l| l.trim() != "...") {
        if !lines.any(|l| l == want) {
            return Err(format!("missing (in order): {want:?}"));
        }
    }
    Ok(())
}

#[test]
fn the_readme_examples_run_and_print_what_the_readme_shows() {
    let all = examples(&documents());
    assert!(all.len() >= 10, "too few examples found: {all:#?}");
    for (c, _) in SKIPPED {
        assert!(
            all.iter().any(|e| e.command == *c),
            "skip-list entry {c:?} is not a README example any more"
        );
    }
    assert!(SKIPPED.len() <= 2, "the skip list must stay small");
    assert!(
        all.iter().any(|e| !e.shown.is_empty()),
        "no example with shown output found"
    );
    let (work, shared) = scratch();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_privq")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    for e in &all {
        if let Some(why) = skipped(&e.command) {
            eprintln!("skipped (listed): {} — {why}", e.command);
            continue;
        }
        if !shared && e.command.contains("../shared/data") {
            eprintln!("skipped (no ../shared/data): {}", e.command);
            continue;
        }
        let started = std::time::Instant::now();
        let o = Command::new("sh")
            .args(["-c", &e.command])
            .current_dir(&work)
            .env("PATH", &path)
            .output()
            .unwrap();
        // With --nocapture (or on failure): which example took the time.
        eprintln!("{:7.2} s  {}", started.elapsed().as_secs_f64(), e.command);
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        if !o.status.success() {
            failures.push(format!("{}: {}\n{err}", e.command, o.status));
        } else if let Err(why) = shows(&format!("{out}{err}"), &e.shown) {
            failures.push(format!(
                "{}: output differs from the README: {why}",
                e.command
            ));
        }
    }
    let _ = std::fs::remove_dir_all(work.parent().unwrap());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_extraction_reads_continuations_pipes_and_comments() {
    let md = "x\n```sh\nprivq a --b \\\n    --c d   # note\necho 'q' | privq pmw\ntools/x.sh\n```\n\n```text\nout\n...\n```\n";
    let ex = examples(md);
    assert_eq!(ex.len(), 2, "{ex:?}");
    let doc = "```sh\nprivq x\ncat > d.json <<'EOF'\n{\"a\": 2}\nEOF\nprivq y\n```\n";
    let heredoc = examples(doc);
    let commands: Vec<&str> = heredoc.iter().map(|e| e.command.as_str()).collect();
    assert_eq!(
        commands,
        [
            "privq x",
            "cat > d.json <<'EOF'\n{\"a\": 2}\nEOF",
            "privq y"
        ]
    );
    assert_eq!(ex[0].command, "privq a --b      --c d");
    assert_eq!(ex[1].command, "echo 'q' | privq pmw");
    assert_eq!(ex[1].shown, ["out", "..."]);
    assert!(shows("a\nout\nb\n", &ex[1].shown).is_ok());
    assert!(shows("a\nb\n", &ex[1].shown).is_err());
}
