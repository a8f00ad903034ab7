//! # cint: the command line, kept thin
//!
//! Parses arguments, loads the scenario (`cint-scenario`, or a fio job file
//! through `cint-lab`), dispatches to an engine, prints with the
//! `cint-report` sinks; `sweep`, `plot` and `calibrate` are the
//! researcher's workflow of `cint-lab` (docs/WORKFLOW.md). The engines are
//! passed in as plain functions so tests can drive every path with a fake
//! engine.
//!
//! Exit status: 0 on success; 2 with one line on stderr for a bad argument,
//! an invalid scenario or fio file, a file that cannot be plotted, an
//! output path that cannot be written (checked before anything runs), or
//! an engine that refuses to run (e.g. the emulator on a one-core
//! machine); 1 with one line for an internal failure (an engine bug: a
//! panic, a violated run-time invariant).

#![warn(missing_docs)]

mod fio_out;
mod input;
mod interrupt;
mod output;
mod ray;
mod trace;
mod vhost;
mod workflow;

use std::ffi::OsString;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use cint_report::{LatencyHistogram, RunResult};
use cint_scenario::Scenario;
use clap::{Args, Parser, Subcommand};

pub use crate::fio_out::fio_json;
pub use crate::input::{Loaded, Source, SourceText};
pub use crate::workflow::{parse_vary, run_point, sweep_points};

/// Success.
pub const EXIT_OK: i32 = 0;
/// An internal failure: an engine bug or an unwritable output.
pub const EXIT_INTERNAL: i32 = 1;
/// A bad argument, an invalid scenario, or an engine refusing to run.
pub const EXIT_USAGE: i32 = 2;

/// A sweep stopped by Ctrl-C after writing the points that finished (the
/// shell's convention for SIGINT, 128 + 2).
pub const EXIT_INTERRUPTED: i32 = 130;

/// An engine: runs every strategy of a scenario, or says why it cannot.
pub type EngineFn = fn(&Scenario) -> Result<RunResult, EngineError>;

/// Why an engine gave no result, from `cint-report`: a refused input
/// (exit 2) or an engine bug such as a violated run-time invariant (exit
/// 1, as the help says), told apart by its kind.
pub use cint_report::{EngineError, ErrorKind};

/// An engine's completion inter-arrival probe (the `GapProbe` contract of
/// `cint-lab`): runs the first strategy and returns the time between
/// successive completion postings on each queue.
pub type GapFn = fn(&Scenario) -> Result<LatencyHistogram, EngineError>;

/// The engines the commands dispatch to.
#[derive(Clone, Copy)]
pub struct Engines {
    /// `cint sim`, and `sweep` / `calibrate` without `--emu`.
    pub sim: EngineFn,
    /// `cint emu`, and `sweep` / `calibrate` with `--emu`.
    pub emu: EngineFn,
    /// The simulator's inter-arrival probe, for `cint calibrate`.
    pub sim_gaps: GapFn,
}

impl Engines {
    /// The real engines: `cint-sim` and `cint-emu`.
    pub fn real() -> Engines {
        Engines {
            // The simulator's error is already the engines' one type; the
            // emulator keeps a richer one for its library API and says
            // which kind each variant is.
            sim: cint_sim::run,
            emu: |s| cint_emu::run(s).map_err(EngineError::from),
            sim_gaps: cint_sim::completion_gaps,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "cint",
    version,
    about = "Compare interrupt-coalescing strategies (none, NVMe aggregation, adaptive, \
             calibrated interrupts, vIC, polling) on the same workloads",
    long_about = "Compare interrupt-coalescing strategies on the same workloads.\n\n\
                  A scenario file (TOML) names a device, a host, jobs, and the strategies to \
                  compare; every strategy runs on identical jobs. A fio job file can stand in \
                  for the scenario (--fio JOB.fio), or a fio command line (--fio-cmd ...).\n\n  \
                  cint sim   SCENARIO.toml              simulate (deterministic, seconds, no hardware)\n  \
                  cint emu   SCENARIO.toml              emulate on real cores, threads and wake-ups\n  \
                  cint check SCENARIO.toml              validate and print the resolved scenario\n  \
                  cint sim --fio JOB.fio --device p3700 run a fio job file (none, adaptive, cinterrupts)\n  \
                  cint sim --fio-cmd fio --name=a ...   run a fio command line (the rest of the line)\n  \
                  cint sweep SCENARIO.toml --vary KEY=V1,V2   every value on every strategy, JSON lines\n  \
                  cint plot  FILE -o DIR                 charts of a result (--json) or a sweep file\n  \
                  cint calibrate --device optane-p4800x  recommend delta and thr for a device\n  \
                  cint vhost --socket S --image F        a vhost-user-blk disk for a real guest (docs/VHOST.md)\n\n\
                  Results print as a table, or as one JSON document with --json; --plot DIR \
                  also draws them; --fio-json DIR writes fio's json+, one file per strategy. \
                  Exit status 0 on success, 2 with a one-line message for bad input (an \
                  unwritable output path included), 1 for an internal error (an engine bug, \
                  such as a violated invariant)."
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
    /// Serve a virtio-blk disk to a vhost-user front end, interrupts decided by a policy
    Vhost(vhost::VhostArgs),
    /// Validate the scenario and print it resolved: defaults and profiles filled in
    Check {
        #[command(flatten)]
        input: Input,
    },
    /// Run the cross product of --vary values, every point on every strategy, in parallel (Ctrl-C: stop, write the finished points, exit 130)
    Sweep(workflow::SweepCmd),
    /// Draw PNG and SVG charts of a result document or a sweep file
    Plot(workflow::PlotCmd),
    /// Recommend delta and thr for a device (the cinterrupts paper's method)
    Calibrate(workflow::CalibrateCmd),
}

#[derive(Args)]
struct Input {
    /// The scenario file (TOML); or give --fio JOB.fio
    #[arg(required_unless_present_any = ["fio", "trace", "fio_cmd"], conflicts_with_all = ["fio", "fio_cmd"])]
    scenario: Option<PathBuf>,
    /// A fio job file to run instead of a scenario; its warnings go to stderr
    #[arg(long, value_name = "JOB.fio", conflicts_with_all = ["trace", "fio_cmd"])]
    fio: Option<PathBuf>,
    /// A fio command line to run instead of a scenario: everything after it (the word fio optional), e.g. --fio-cmd fio --name=a --rw=randread --bs=4k; give cint's own options before it
    #[arg(long = "fio-cmd", value_name = "FIO_ARGS", num_args = 1.., allow_hyphen_values = true, conflicts_with = "trace")]
    fio_cmd: Vec<String>,
    #[command(flatten)]
    trace: trace::TraceArgs,
    /// Device profile for --fio and --fio-cmd: optane-p4800x (default), p3700, optane-900p
    #[arg(long, value_name = "PROFILE")]
    device: Option<String>,
    /// Host profile for --fio and --fio-cmd: xeon-e5-2660v4 (default), xeon-e3-1230v5
    #[arg(long, value_name = "PROFILE")]
    host: Option<String>,
    /// Strategy kinds for --fio and --fio-cmd (default: none adaptive cinterrupts at the device's reference delta and thr)
    #[arg(long = "strategy", value_name = "KIND", num_args = 1.., value_delimiter = ',')]
    strategies: Vec<String>,
    /// Override a key by dotted path, e.g. job.async.iodepth=64 or strategy.cint.delta=4us
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

impl Input {
    fn source(&self) -> Result<Source<'_>, Failure> {
        if self.trace.trace.is_some() {
            let given = [
                ("--device", self.device.is_some()),
                ("--host", self.host.is_some()),
                ("--strategy", !self.strategies.is_empty()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, present)| *present) {
                return Err(usage(format!(
                    "cint: {flag} applies to --fio and --fio-cmd only; a trace replays on the \
                     scenario's (or the built-in) device, host and strategies: use --set"
                )));
            }
            return Ok(Source::Trace {
                scenario: self.scenario.as_deref(),
                args: &self.trace,
            });
        }
        Source::new(
            self.scenario.as_ref(),
            self.fio.as_ref(),
            &self.fio_cmd,
            self.device.as_deref(),
            self.host.as_deref(),
            &self.strategies,
        )
        .map_err(usage)
    }
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
    /// Also draw the charts (PNG and SVG) into this directory
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Also write fio's JSON (json+, as fio 3.33 prints it) into this directory, one STRATEGY.json per strategy, for fio's own tools
    #[arg(long = "fio-json", value_name = "DIR")]
    fio_json: Option<PathBuf>,
}

/// Runs the command line `args` (program name first); returns the exit
/// status. Everything for the user goes to `out`, diagnostics to `err`.
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    match dispatch(args, engines, out, err) {
        Ok(()) => EXIT_OK,
        Err(Failure { status, message }) => {
            // An empty message: a child process has said it already.
            if !message.is_empty() {
                let _ = writeln!(err, "{}", one_line(&message));
            }
            status
        }
    }
}

/// Why a command failed: its exit status and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// [`EXIT_USAGE`], [`EXIT_INTERNAL`] or [`EXIT_INTERRUPTED`].
    pub status: i32,
    /// The message; [`Failure::line`] is what the command prints.
    pub message: String,
}

impl Failure {
    /// The message as the command prints it: one line.
    pub fn line(&self) -> String {
        one_line(&self.message)
    }
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

/// The failure for an error of `kind`: exit 2 for refused input, 1 for
/// an engine bug.
fn failure_of(kind: ErrorKind, message: String) -> Failure {
    match kind {
        ErrorKind::Input => usage(message),
        ErrorKind::Internal => internal(message),
    }
}

fn dispatch(
    args: impl IntoIterator<Item = OsString>,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
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
                    "cint: missing command: sim, emu, check, sweep, plot, calibrate or vhost \
                     (see cint --help)",
                ));
            }
            // Clap's own text spans several lines; the contract is one. Keep
            // what precedes the usage summary (a missing argument is named
            // on the line after the message), without the tips.
            let text = e.to_string();
            let what: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect();
            let what = what.join(" ");
            if e.kind() == ErrorKind::MissingRequiredArgument && what.ends_with("<SCENARIO>") {
                // The one input missing is named by every way to give it.
                return Err(usage(
                    "cint: give a scenario file, --fio JOB.fio, --fio-cmd FIO_ARGS or --trace \
                     FILE (see cint --help)",
                ));
            }
            let what = what.strip_prefix("error: ").unwrap_or(&what);
            return Err(usage(format!("cint: {what} (see cint --help)")));
        }
    };
    match cli.command {
        Command::Check { input } => {
            let scenario = load(&input, err)?;
            // One rule for what runs: what the simulator would refuse is
            // refused here, with the line `cint sim` gives.
            cint_sim::check(&scenario)
                .map_err(|e| failure_of(e.kind, engine_message(&scenario, "simulator", &e)))?;
            let text = format!(
                "# {}: valid; resolved with every default and profile field\n{}",
                scenario.source,
                cint_scenario::to_toml(&scenario)
            );
            write_out(out, &text)
        }
        Command::Sim { run, seed } => {
            let mut scenario = load(&run.input, err)?;
            if let Some(seed) = seed {
                scenario.seed = seed;
            }
            execute(&scenario, "simulator", engines.sim, &run, out, err)
        }
        Command::Emu { run } => {
            let scenario = load(&run.input, err)?;
            execute(&scenario, "emulator", engines.emu, &run, out, err)
        }
        Command::Sweep(cmd) => workflow::sweep(&cmd, engines, out, err),
        Command::Plot(cmd) => workflow::plot(&cmd, out),
        Command::Calibrate(cmd) => workflow::calibrate(&cmd, engines, out, err),
        Command::Vhost(args) => vhost::run(args),
    }
}

/// Loads the scenario; an import's warnings go to `err`, one line each.
fn load(input: &Input, err: &mut dyn Write) -> Result<Scenario, Failure> {
    let Loaded { scenario, warnings } = input.source()?.load(&input.sets).map_err(usage)?;
    for w in &warnings {
        let _ = writeln!(err, "{}", one_line(w));
    }
    Ok(scenario)
}

/// The text of a caught panic.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `f`, turning a panic into the internal-error failure: an engine
/// bug must not become a stack trace on the user's terminal.
fn guarded<T>(engine_name: &str, f: impl FnOnce() -> T) -> Result<T, Failure> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        internal(format!(
            "cint: internal error in the {engine_name} (please report): {}",
            panic_text(payload.as_ref())
        ))
    })
}

fn execute(
    scenario: &Scenario,
    engine_name: &str,
    engine: EngineFn,
    args: &RunArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Failure> {
    if let Some(dir) = &args.out {
        output::check_dir("--out", dir)?;
    }
    if let Some(dir) = &args.plot {
        output::check_dir("--plot", dir)?;
    }
    if let Some(dir) = &args.fio_json {
        output::check_dir("--fio-json", dir)?;
        fio_out::check_names(scenario)?;
    }
    let result = run_engine(scenario, engine_name, engine)?;
    let json = result_json(&result, engine_name)?;
    let table = cint_report::to_table(&result);
    if let Some(dir) = &args.out {
        write_file(dir, "result.json", &json)?;
        write_file(dir, "result.txt", &table)?;
    }
    if let Some(dir) = &args.plot {
        let written = cint_lab::plot::plot_result(&result, &cint_lab::plot::PlotArgs::new(dir))
            .map_err(|e| internal(format!("cint: plotting into {}: {e}", dir.display())))?;
        report_written(err, &written);
    }
    if let Some(dir) = &args.fio_json {
        let written = fio_out::write_all(dir, scenario, &result)?;
        let _ = writeln!(
            err,
            "cint: wrote {} fio JSON files into {}",
            written.len(),
            dir.display()
        );
    }
    write_out(out, if args.json { &json } else { &table })
}

/// Runs `engine` (named `engine_name` in messages: "simulator",
/// "emulator") on `scenario` as `cint sim` and `cint emu` do: a refusal is
/// a usage failure, an engine bug (a panic included) an internal one,
/// with the commands' messages.
pub fn run_engine(
    scenario: &Scenario,
    engine_name: &str,
    engine: EngineFn,
) -> Result<RunResult, Failure> {
    guarded(engine_name, || engine(scenario))?.map_err(|e| {
        let message = engine_message(scenario, engine_name, &e);
        match e.kind {
            ErrorKind::Internal => {
                internal(format!("{message} (an internal error: please report)"))
            }
            ErrorKind::Input => usage(message),
        }
    })
}

/// An engine's error in one line: a refusal of a scenario key where the
/// key was written (`file:line: key: ...`, as the loader says it), any
/// other `file: engine: ...`.
pub(crate) fn engine_message(scenario: &Scenario, engine_name: &str, e: &EngineError) -> String {
    match (&e.key, e.kind) {
        (Some(key), ErrorKind::Input) => scenario.refusal(key, &e.message).to_string(),
        _ => format!("{}: {engine_name}: {e}", scenario.source),
    }
}

/// The JSON result document of `--json`; a document that cannot be
/// written (a non-finite number) is an internal failure.
pub fn result_json(result: &RunResult, engine_name: &str) -> Result<String, Failure> {
    cint_report::to_json(result)
        .map_err(|e| internal(format!("cint: internal error in the {engine_name}: {e}")))
}

/// One line on stderr naming what was written, so stdout stays the result.
fn report_written(err: &mut dyn Write, files: &[PathBuf]) {
    let Some(first) = files.first() else {
        return;
    };
    let dir = first.parent().unwrap_or(Path::new("."));
    let _ = writeln!(
        err,
        "cint: wrote {} files into {}",
        files.len(),
        dir.display()
    );
}

fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), Failure> {
    let path = dir.join(name);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|e| output::write_error(&path, e))
}

fn write_out(out: &mut dyn Write, text: &str) -> Result<(), Failure> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| internal(format!("cint: cannot write to stdout: {e}")))
}

fn one_line(message: &str) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    // A control character quoted from the input (a NUL in a trace's
    // field) would reach the terminal raw: it is shown escaped.
    if line.chars().any(|c| c.is_control() && c != '\t') {
        line.chars()
            .map(|c| match c {
                '\t' => c.to_string(),
                c if c.is_control() => c.escape_default().to_string(),
                c => c.to_string(),
            })
            .collect()
    } else {
        line
    }
}
