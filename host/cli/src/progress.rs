//! Progress for long-running subcommands: a bar with an ETA on a terminal's
//! standard error, and a plain line at most every 10 seconds (position and
//! elapsed time) when standard error is a file or a pipe, so a log shows progress
//! too.
//!
//! **Not private.** The position, rate, ETA and elapsed time depend on the
//! private data (how many records are read, how soon a run stops) and are covered
//! by no stated cost: they are for the curator, on standard error, never part of a
//! release.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain progress line is written when standard error is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// A progress display of `total` steps.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    /// When the last plain line was written (`None`: on a terminal, none are).
    last_line: Option<Mutex<Instant>>,
}

/// A progress bar of `total` steps labelled `what`.
pub fn bar(total: u64, what: &str) -> Progress {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {msg:<18} [{bar:40}] {pos}/{len} ({eta} left)")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    let now = Instant::now();
    let last_line = bar.is_hidden().then(|| Mutex::new(now));
    Progress {
        bar,
        started: now,
        last_line,
    }
}

impl Progress {
    /// Advances by `delta` steps.
    pub fn inc(&self, delta: u64) {
        self.bar.inc(delta);
        self.plain_line();
    }

    /// Sets the position.
    pub fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
        self.plain_line();
    }

    /// Sets the number of steps.
    pub fn set_length(&self, len: u64) {
        self.bar.set_length(len);
    }

    /// Sets the label.
    pub fn set_message(&self, what: String) {
        self.bar.set_message(what);
    }

    /// True when no bar is drawn (standard error is not a terminal).
    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// Removes the bar.
    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }

    /// Off a terminal: `privq: WHAT POS/LEN, N s` at most every [`PLAIN_EVERY`].
    fn plain_line(&self) {
        let Some(last) = &self.last_line else { return };
        let Ok(mut last) = last.lock() else { return };
        if last.elapsed() < PLAIN_EVERY {
            return;
        }
        *last = Instant::now();
        let len = self
            .bar
            .length()
            .map_or_else(String::new, |l| format!("/{l}"));
        eprintln!(
            "privq: {} {}{len}, {:.0} s",
            self.bar.message(),
            self.bar.position(),
            self.started.elapsed().as_secs_f64()
        );
    }
}
