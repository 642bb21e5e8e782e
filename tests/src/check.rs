//! A check is a named function returning `Ok(())` or a [`Failure`]; a [`Runner`] runs
//! checks, prints `test NAME ... ok` lines and the closing `N passed, N failed` line.

use core::fmt::{self, Write};

use privq_core::Error;

/// Result of one check.
pub type Outcome = Result<(), Failure>;

/// Why a check failed. Every variant names what was being checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Failure {
    /// A computed integer differs from the expected one.
    Mismatch {
        /// What was compared.
        what: &'static str,
        /// The computed value.
        got: i128,
        /// The expected value.
        want: i128,
    },
    /// A statistic exceeded its critical value.
    Statistic {
        /// Which statistic.
        what: &'static str,
        /// Its value.
        value: f64,
        /// The critical value it must stay below.
        limit: f64,
    },
    /// The core returned an error where a value was expected.
    Unexpected {
        /// The operation.
        what: &'static str,
        /// The error it returned.
        error: Error,
    },
    /// The core returned a value, or the wrong error, where an error was expected.
    WrongError {
        /// The operation.
        what: &'static str,
        /// The error returned (`None`: it succeeded).
        got: Option<Error>,
        /// The expected error.
        want: Error,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Mismatch { what, got, want } => {
                write!(f, "{what}: got {got} (0x{got:x}), want {want} (0x{want:x})")
            }
            Failure::Statistic { what, value, limit } => {
                write!(f, "{what}: {value} is not below the critical value {limit}")
            }
            Failure::Unexpected { what, error } => write!(f, "{what}: unexpected error {error:?}"),
            Failure::WrongError { what, got, want } => {
                write!(f, "{what}: got {got:?}, want Err({want:?})")
            }
        }
    }
}

/// Fails with [`Failure::Mismatch`] unless `got == want`.
pub fn expect_eq(what: &'static str, got: impl Into<i128>, want: impl Into<i128>) -> Outcome {
    let (got, want) = (got.into(), want.into());
    if got == want {
        Ok(())
    } else {
        Err(Failure::Mismatch { what, got, want })
    }
}

/// Unwraps a core result, turning an error into [`Failure::Unexpected`].
pub fn expect_ok<T>(what: &'static str, result: privq_core::Result<T>) -> Result<T, Failure> {
    result.map_err(|error| Failure::Unexpected { what, error })
}

/// Fails with [`Failure::WrongError`] unless `result` is exactly `Err(want)`.
pub fn expect_err<T>(what: &'static str, result: privq_core::Result<T>, want: Error) -> Outcome {
    match result {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(Failure::WrongError {
            what,
            got: Some(e),
            want,
        }),
        Ok(_) => Err(Failure::WrongError {
            what,
            got: None,
            want,
        }),
    }
}

/// A named check.
#[derive(Clone, Copy)]
pub struct Check {
    /// Printed in the `test NAME ... ok` line.
    pub name: &'static str,
    /// Runs the check.
    pub run: fn() -> Outcome,
}

/// Runs checks, reports each on `out` and counts passes and failures.
///
/// Output lines follow libtest's form (`test NAME ... ok` / `... FAILED`), and
/// [`Runner::finish`] prints the closing `N passed, N failed` line.
pub struct Runner<W: Write> {
    out: W,
    passed: u32,
    failed: u32,
}

impl<W: Write> Runner<W> {
    /// A runner printing to `out`.
    pub fn new(out: W) -> Self {
        Runner {
            out,
            passed: 0,
            failed: 0,
        }
    }

    /// The output sink (for extra report lines such as measurements).
    pub fn out(&mut self) -> &mut W {
        &mut self.out
    }

    /// Runs one check and prints its result line.
    pub fn run(&mut self, name: &str, check: impl FnOnce() -> Outcome) {
        // Printing is best effort: a broken sink must not turn a pass into a panic.
        // The name goes out first, so a hang or crash shows which check it was.
        let _ = write!(self.out, "test {name} ... ");
        match check() {
            Ok(()) => {
                self.passed += 1;
                let _ = writeln!(self.out, "ok");
            }
            Err(failure) => {
                self.failed += 1;
                let _ = writeln!(self.out, "FAILED\n    {failure}");
            }
        }
    }

    /// Runs every check of a list.
    pub fn run_all(&mut self, checks: &[Check]) {
        for check in checks {
            self.run(check.name, check.run);
        }
    }

    /// Checks that passed so far.
    pub fn passed(&self) -> u32 {
        self.passed
    }

    /// Checks that failed so far.
    pub fn failed(&self) -> u32 {
        self.failed
    }

    /// Prints `N passed, N failed` and returns whether the run succeeded: no failure
    /// **and** at least one check ran (an empty run is a failure).
    pub fn finish(mut self) -> bool {
        let _ = writeln!(self.out, "{} passed, {} failed", self.passed, self.failed);
        if self.passed + self.failed == 0 {
            let _ = writeln!(self.out, "error: no test ran");
        }
        self.failed == 0 && self.passed > 0
    }
}
