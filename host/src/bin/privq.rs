//! The `privq` program. See `privq --help`.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use privq_host::cli::{Cli, CliError, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    let mut stderr = io::stderr();
    let result = run(cli, &mut stdin, &mut stdout, &mut stderr);
    let flushed = stdout.flush();
    match (result, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        // An outcome (e.g. rejected reports) has been reported by the command itself.
        (Err(e @ CliError::Outcome(_)), _) => ExitCode::from(e.exit_code()),
        (Err(e), _) => {
            let _ = writeln!(stderr, "privq: error: {e}");
            ExitCode::from(e.exit_code())
        }
        (Ok(()), Err(e)) => {
            let _ = writeln!(stderr, "privq: error: writing output: {e}");
            ExitCode::from(2)
        }
    }
}
