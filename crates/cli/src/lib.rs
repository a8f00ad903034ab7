//! # cint: the command line, kept thin
//!
//! Parses arguments, loads the scenario (`cint-scenario`), dispatches to an
//! engine, prints with the `cint-report` sinks. The engines are passed in
//! as plain functions so tests can drive every path with a fake engine.
//!
//! Exit status: 0 on success; 2 with one line on stderr for a bad argument,
//! an invalid scenario, or an engine that refuses to run (e.g. the
//! emulator on a one-core machine); 1 with one line for an internal
//! failure (an engine bug, an output file that cannot be written).

#![warn(missing_docs)]

use std::ffi::OsString;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use cint_report::RunResult;
use cint_scenario::Scenario;
use clap::{Args, Parser, Subcommand};

/// Success.
pub const EXIT_OK: i32 = 0;
/// An internal failure: an engine bug or an unwritable output.
pub const EXIT_INTERNAL: i32 = 1;
/// A bad argument, an invalid scenario, or an engine refusing to run.
pub const EXIT_USAGE: i32 = 2;

/// An engine: runs every strategy of a scenario, or says why it cannot.
pub type EngineFn = fn(&Scenario) -> Result<RunResult, String>;

/// The engines `sim` and `emu` dispatch to.
#[derive(Clone, Copy)]
pub struct Engines {
    /// `cint sim`.
    pub sim: EngineFn,
    /// `cint emu`.
    pub emu: EngineFn,
}

#[derive(Parser)]
#[command(
    name = "cint",
    version,
    about = "Compare interrupt-coalescing strategies (none, NVMe aggregation, adaptive, \
             calibrated interrupts, vIC, polling) on the same workloads",
    long_about = "Compare interrupt-coalescing strategies on the same workloads.\n\n\
                  A scenario file (TOML) names a device, a host, jobs, and the strategies to \
                  compare; every strategy runs on identical jobs.\n\n  \
                  cint sim   SCENARIO.toml   simulate (deterministic, seconds, no hardware)\n  \
                  cint emu   SCENARIO.toml   emulate on real cores, threads and wake-ups\n  \
                  cint check SCENARIO.toml   validate and print the resolved scenario\n\n\
                  Results print as a table, or as one JSON document with --json. \
                  Exit status 0 on success, 2 with a one-line message for bad input."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate every strategy of the scenario (deterministic for a seed)
    Sim {
        #[command(flatten)]
        run: RunArgs,
        /// Seed of the simulation's random generator (overrides `seed`)
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
    },
    /// Emulate every strategy of the scenario on real threads and cores
    Emu {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Validate the scenario and print it resolved: defaults and profiles filled in
    Check {
        #[command(flatten)]
        input: Input,
    },
}

#[derive(Args)]
struct Input {
    /// The scenario file (TOML)
    scenario: PathBuf,
    /// Override a key by dotted path, e.g. job.async.iodepth=64 or strategy.cint.delta=4us
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    input: Input,
    /// Print exactly one JSON document on stdout instead of the table
    #[arg(long)]
    json: bool,
    /// Also write result.json and result.txt (the table) into this directory
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Runs the command line `args` (program name first); returns the exit
/// status. Everything for the user goes to `out`, diagnostics to `err`.
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    match dispatch(args, engines, out) {
        Ok(()) => EXIT_OK,
        Err(Failure { status, message }) => {
            let _ = writeln!(err, "{}", one_line(&message));
            status
        }
    }
}

struct Failure {
    status: i32,
    message: String,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        status: EXIT_USAGE,
        message: message.into(),
    }
}

fn internal(message: impl Into<String>) -> Failure {
    Failure {
        status: EXIT_INTERNAL,
        message: message.into(),
    }
}

fn dispatch(
    args: impl IntoIterator<Item = OsString>,
    engines: &Engines,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                return write_out(out, &e.to_string());
            }
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand
            ) {
                return Err(usage(
                    "cint: missing command: sim, emu or check (see cint --help)",
                ));
            }
            // Clap's own text spans several lines; the contract is one.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            return Err(usage(format!("cint: {first} (see cint --help)")));
        }
    };
    match cli.command {
        Command::Check { input } => {
            let scenario = load(&input)?;
            let text = format!(
                "# {}: valid; resolved with every default and profile field\n{}",
                scenario.source,
                cint_scenario::to_toml(&scenario)
            );
            write_out(out, &text)
        }
        Command::Sim { run, seed } => {
            let mut scenario = load(&run.input)?;
            if let Some(seed) = seed {
                scenario.seed = seed;
            }
            execute(&scenario, "simulator", engines.sim, &run, out)
        }
        Command::Emu { run } => {
            let scenario = load(&run.input)?;
            execute(&scenario, "emulator", engines.emu, &run, out)
        }
    }
}

fn load(input: &Input) -> Result<Scenario, Failure> {
    cint_scenario::load_file(&input.scenario, &input.sets).map_err(|e| usage(e.to_string()))
}

fn execute(
    scenario: &Scenario,
    engine_name: &str,
    engine: EngineFn,
    args: &RunArgs,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    // An engine bug must not become a stack trace on the user's terminal.
    let result = match catch_unwind(AssertUnwindSafe(|| engine(scenario))) {
        Ok(Ok(r)) => r,
        Ok(Err(message)) => {
            return Err(usage(format!(
                "{}: {engine_name}: {message}",
                scenario.source
            )))
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            return Err(internal(format!(
                "cint: internal error in the {engine_name} (please report): {what}"
            )));
        }
    };
    let json = cint_report::to_json(&result)
        .map_err(|e| internal(format!("cint: internal error in the {engine_name}: {e}")))?;
    let table = cint_report::to_table(&result);
    if let Some(dir) = &args.out {
        write_file(dir, "result.json", &json)?;
        write_file(dir, "result.txt", &table)?;
    }
    write_out(out, if args.json { &json } else { &table })
}

fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), Failure> {
    let path = dir.join(name);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|e| internal(format!("cint: cannot write {}: {e}", path.display())))
}

fn write_out(out: &mut dyn Write, text: &str) -> Result<(), Failure> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| internal(format!("cint: cannot write to stdout: {e}")))
}

fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
