//! The researcher's workflow on the command line: `sweep`, `plot` and
//! `calibrate`, each a thin layer over `cint-lab` (docs/WORKFLOW.md).

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use cint_lab::calibrate::{CalibrateArgs, CalibrateError, DEFAULT_THR};
use cint_lab::plot::{self, Format, PlotArgs, PlotInput};
use cint_lab::sweep::{
    self, Progress, ScenarioLoader, Sweep, SweepArgs, SweepError, SweepPoint, Vary,
};
use cint_report::{EngineError, ErrorKind, LatencyHistogram, RunResult};
use cint_scenario::units::parse_duration;
use cint_scenario::{Scenario, DEFAULT_HOST};
use clap::Args;

use crate::output;
use crate::ray;
use crate::{
    failure_of, internal, one_line, panic_text, report_written, usage, write_out, Engines, Failure,
    Input,
};

/// Runs engine calls from any thread and remembers the first panic, so a
/// bug inside a sweep or a calibration is reported as one (internal-error)
/// line rather than tearing down the worker threads.
struct Guard {
    engine_name: &'static str,
    panic: Mutex<Option<String>>,
}

impl Guard {
    fn new(engine_name: &'static str) -> Guard {
        Guard {
            engine_name,
            panic: Mutex::new(None),
        }
    }

    fn call<T>(&self, f: impl FnOnce() -> Result<T, EngineError>) -> Result<T, EngineError> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
            let text = panic_text(payload.as_ref());
            if let Ok(mut first) = self.panic.lock() {
                first.get_or_insert_with(|| text.clone());
            }
            Err(EngineError::internal(format!(
                "internal error in the {}: {text}",
                self.engine_name
            )))
        })
    }

    /// The failure for `message`, an error of `kind`: the panic's own line
    /// if an engine panicked, else by the kind (exit 1 for an engine bug,
    /// 2 for a refusal or bad input).
    fn failure(&self, message: String, kind: ErrorKind) -> Failure {
        match self.panic.lock().ok().and_then(|p| p.clone()) {
            Some(text) => internal(format!(
                "cint: internal error in the {} (please report): {text}",
                self.engine_name
            )),
            None => failure_of(kind, message),
        }
    }
}

fn engine_of(engines: &Engines, emu: bool) -> (crate::EngineFn, &'static str) {
    if emu {
        (engines.emu, "emulator")
    } else {
        (engines.sim, "simulator")
    }
}

/// `cint sweep`.
#[derive(Args)]
pub(crate) struct SweepCmd {
    #[command(flatten)]
    pub(crate) input: Input,
    /// KEY=V1,V2,... with the keys and values of --set; repeat for a cross product
    /// (the first --vary varies slowest)
    #[arg(long, value_name = "KEY=V1,V2,...", required = true)]
    pub(crate) vary: Vec<String>,
    /// Run the points on the emulator (one at a time unless --jobs says otherwise)
    #[arg(long)]
    pub(crate) emu: bool,
    /// Worker threads (default: one per core; 1 with --emu). The output does not depend on it
    #[arg(long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Write the JSON lines here instead of stdout
    #[arg(long, value_name = "FILE.jsonl")]
    pub(crate) out: Option<PathBuf>,
    /// Also write a CSV (the varied keys, then the same columns)
    #[arg(long, value_name = "FILE.csv")]
    pub(crate) csv: Option<PathBuf>,
    /// Also draw the sweep charts (PNG and SVG) into this directory
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// Run the points on the Ray cluster at ADDRESS (host:port, ray://host:port, or
    /// `local` for a Ray started for this sweep) through the Python package cinterrupts
    /// (docs/PYTHON.md); the output is the same
    #[arg(long, value_name = "ADDRESS", conflicts_with_all = ["emu", "jobs", "plot", "energy_map"])]
    pub(crate) ray: Option<String>,
    /// Also write the energy winner map (winners.csv, .png, .svg) into this directory: the
    /// mode with the most bytes per joule per request size (a varied job.NAME.bs) and
    /// thread count (a varied job.NAME.numjobs), a tie where the other varied keys (seeds)
    /// do not separate the top two (t-test, p > 0.05); and strategies.csv, every strategy
    /// of every tile against the best of the others
    #[arg(long, value_name = "DIR")]
    pub(crate) energy_map: Option<PathBuf>,
}

/// The varied keys of an energy map: one ending in `.bs`, one in
/// `.numjobs`.
fn energy_map_keys(keys: &[String]) -> Result<(String, String), Failure> {
    let find = |suffix: &str| {
        let found: Vec<&String> = keys.iter().filter(|k| k.ends_with(suffix)).collect();
        match found.as_slice() {
            [one] => Ok(one.to_string()),
            _ => Err(usage(format!(
                "cint: --energy-map needs exactly one --vary key ending in {suffix} (got {})",
                found.len()
            ))),
        }
    };
    Ok((find(".bs")?, find(".numjobs")?))
}

pub(crate) fn sweep(
    cmd: &SweepCmd,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Failure> {
    let vary = parse_vary(&cmd.vary)?;
    let workers = match cmd.jobs {
        Some(0) => return Err(usage("cint: --jobs must be at least 1")),
        Some(n) => n,
        // The emulator measures real time: parallel points would steal
        // each other's cores.
        None if cmd.emu => 1,
        None => 0,
    };
    let source = cmd.input.source()?;
    if let Some(address) = &cmd.ray {
        return ray::sweep(cmd, address);
    }
    for (flag, path) in [("--out", &cmd.out), ("--csv", &cmd.csv)] {
        if let Some(path) = path {
            output::check_file(flag, path)?;
        }
    }
    if let Some(dir) = &cmd.plot {
        output::check_dir("--plot", dir)?;
    }
    let map_keys = match &cmd.energy_map {
        Some(dir) => {
            output::check_dir("--energy-map", dir)?;
            let keys: Vec<String> = vary.iter().map(|v| v.key.clone()).collect();
            Some(energy_map_keys(&keys)?)
        }
        None => None,
    };
    // Loading once up front reports a broken file without a point prefix,
    // and an import's warnings once rather than once per point.
    let base = source.load(&cmd.input.sets).map_err(usage)?;
    for w in &base.warnings {
        let _ = writeln!(err, "{}", one_line(w));
    }
    // Each point is refused as `cint check` refuses it, before any runs:
    // what the simulator cannot run is bad input of that point.
    let emu = cmd.emu;
    let loader = |sets: &[String]| {
        let scenario = source.load(sets)?.scenario;
        match cint_sim::check(&scenario) {
            Err(e) if !emu && e.kind == ErrorKind::Input => {
                Err(crate::engine_message(&scenario, "simulator", &e))
            }
            _ => Ok(scenario),
        }
    };
    let keys: Vec<String> = vary.iter().map(|v| v.key.clone()).collect();
    let args = SweepArgs {
        vary,
        sets: cmd.input.sets.clone(),
        workers,
        progress: Progress::Auto,
    };
    let sigint = crate::interrupt::CatchSigint::install();
    let never = std::sync::atomic::AtomicBool::new(false);
    let stop = sigint.as_ref().map_or(&never, |s| s.flag());
    // Every point is appended to FILE.partial as it finishes, so a sweep
    // that is killed, or that fails at a later point, loses nothing that
    // ran; the ordered FILE replaces it at the end.
    let partial = match &cmd.out {
        Some(path) => {
            let partial = partial_path(path);
            let file =
                std::fs::File::create(&partial).map_err(|e| output::write_error(&partial, e))?;
            Some((partial, std::sync::Mutex::new(file)))
        }
        None => None,
    };
    let finished = |point: &SweepPoint| {
        if let Some((_, file)) = &partial {
            let one = Sweep {
                keys: keys.clone(),
                points: vec![point.clone()],
                interrupted: false,
                total_points: 1,
            };
            let mut lines = Vec::new();
            if one.write_jsonl(&mut lines).is_ok() {
                if let Ok(mut file) = file.lock() {
                    // Best effort: the ordered file at the end is the result.
                    let _ = std::io::Write::write_all(&mut *file, &lines);
                }
            }
        }
    };
    let kept = partial.as_ref().map_or(String::new(), |(p, _)| {
        format!(" (the points that finished are in {})", p.display())
    });
    let result = match sweep_points(&loader, engines, cmd.emu, &args, stop, &finished, &kept) {
        Ok(result) => result,
        Err(failure) => {
            // A sweep that failed before any point finished (a point that
            // does not load fails them all first) leaves no empty file.
            if let Some((path, _)) = &partial {
                if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
                    let _ = std::fs::remove_file(path);
                }
            }
            return Err(failure);
        }
    };

    let mut jsonl = Vec::new();
    result
        .write_jsonl(&mut jsonl)
        .map_err(|e| internal(e.to_string()))?;
    let rows = result.rows().len();
    if let Some(path) = &cmd.csv {
        let mut csv = Vec::new();
        result
            .write_csv(&mut csv)
            .map_err(|e| internal(e.to_string()))?;
        write_path(path, &csv)?;
        let _ = writeln!(err, "cint: wrote {} ({rows} rows)", path.display());
    }
    if let Some(dir) = &cmd.plot {
        let written = plot::plot_sweep(&result.rows(), &PlotArgs::new(dir))
            .map_err(|e| internal(format!("cint: plotting into {}: {e}", dir.display())))?;
        report_written(err, &written);
    }
    if let (Some(dir), Some((size, threads))) = (&cmd.energy_map, &map_keys) {
        let rows = result.rows();
        let refused = |e| usage(format!("cint: --energy-map: {e}"));
        let tiles = cint_lab::energy_map::winner_map(&rows, size, threads).map_err(refused)?;
        let standings = cint_lab::energy_map::standings(&rows, size, threads).map_err(refused)?;
        let written = cint_lab::energy_map::write_map(dir, &tiles, &standings)
            .map_err(|e| internal(format!("cint: drawing into {}: {e}", dir.display())))?;
        report_written(err, &written);
    }
    match &cmd.out {
        Some(path) => {
            write_path(path, &jsonl)?;
            let _ = writeln!(err, "cint: wrote {} ({rows} rows)", path.display());
            Ok(())
        }
        // JSON lines on stdout unless the CSV was the only output asked for.
        None if cmd.csv.is_none() => write_out(out, &String::from_utf8_lossy(&jsonl)),
        None => Ok(()),
    }?;
    drop(sigint);
    if let Some((path, _)) = &partial {
        let _ = std::fs::remove_file(path);
    }
    if result.interrupted {
        return Err(Failure {
            status: crate::EXIT_INTERRUPTED,
            message: format!(
                "cint: sweep interrupted: {} of {} points finished, and are written",
                result.points.len(),
                result.total_points
            ),
        });
    }
    Ok(())
}

/// The `--vary KEY=V1,V2,...` arguments, or the usage failure naming the
/// first bad one.
pub fn parse_vary(args: &[String]) -> Result<Vec<Vary>, Failure> {
    args.iter()
        .map(|v| v.parse::<Vary>())
        .collect::<Result<Vec<_>, SweepError>>()
        .map_err(|e| usage(e.to_string()))
}

/// Runs a sweep as `cint sweep` does, on the simulator or (`emu`) the
/// emulator: every point loaded by `loader` first, then run in parallel;
/// see [`sweep::run_sweep_until`] for `stop` and `finished`. A failure
/// carries the command's message, with `kept` appended (where the
/// finished points are) if any point finished.
pub fn sweep_points(
    loader: &dyn ScenarioLoader,
    engines: &Engines,
    emu: bool,
    args: &SweepArgs,
    stop: &AtomicBool,
    finished: &(dyn Fn(&SweepPoint) + Sync),
    kept: &str,
) -> Result<Sweep, Failure> {
    let (engine, engine_name) = engine_of(engines, emu);
    let guard = Guard::new(engine_name);
    let runner = |s: &Scenario| guard.call(|| engine(s));
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let counted = |point: &SweepPoint| {
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        finished(point);
    };
    sweep::run_sweep_until(loader, &runner, args, stop, &counted).map_err(|e| {
        // Where the finished points are, if any finished.
        let kept = if ran.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            kept
        } else {
            ""
        };
        match e {
            SweepError::Io(_) => internal(format!("{e}{kept}")),
            other => guard.failure(format!("{other}{kept}"), other.kind()),
        }
    })
}

/// Runs one sweep point (`point`, its scenario loaded) on the simulator
/// or (`emu`) the emulator, as [`sweep_points`] runs each: the result
/// without its fio data, or the failure [`sweep_points`] would report
/// for this point. For front ends that run a sweep's points elsewhere.
pub fn run_point(
    engines: &Engines,
    emu: bool,
    point: &[(String, String)],
    scenario: &Scenario,
) -> Result<RunResult, Failure> {
    let (engine, engine_name) = engine_of(engines, emu);
    let guard = Guard::new(engine_name);
    guard
        .call(|| engine(scenario))
        .map(|mut result| {
            result.drop_fio_data();
            result
        })
        .map_err(|error| {
            let e = SweepError::Run {
                point: sweep::describe(point),
                error,
            };
            guard.failure(e.to_string(), e.kind())
        })
}

/// Where a sweep's points go while it runs: FILE.partial beside FILE.
fn partial_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    name.into()
}

fn write_path(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    parent
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, bytes))
        .map_err(|e| output::write_error(path, e))
}

/// `cint plot`.
#[derive(Args)]
pub(crate) struct PlotCmd {
    /// A result document (cint sim --json, result.json) or a sweep file (JSON lines or CSV)
    file: PathBuf,
    /// Directory to write the charts into (created if missing)
    #[arg(short = 'o', long = "out-dir", value_name = "DIR", required = true)]
    out_dir: PathBuf,
    /// Strategy the ratios above the bars are relative to (default: the first)
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Image formats (default: png,svg)
    #[arg(long, value_name = "FORMAT", value_delimiter = ',', value_parser = ["png", "svg"])]
    format: Vec<String>,
}

pub(crate) fn plot(cmd: &PlotCmd, out: &mut dyn Write) -> Result<(), Failure> {
    let input = plot::read_input(&cmd.file).map_err(|e| usage(e.to_string()))?;
    output::check_dir("--out-dir", &cmd.out_dir)?;
    let mut args = PlotArgs::new(&cmd.out_dir);
    args.baseline = cmd.baseline.clone();
    if !cmd.format.is_empty() {
        args.formats = cmd
            .format
            .iter()
            .map(|f| if f == "svg" { Format::Svg } else { Format::Png })
            .collect();
    }
    let written = match &input {
        PlotInput::Run(doc) => {
            if let Some(b) = &args.baseline {
                if !doc.results.iter().any(|s| &s.strategy == b) {
                    let known: Vec<&str> =
                        doc.results.iter().map(|s| s.strategy.as_str()).collect();
                    return Err(usage(format!(
                        "cint: --baseline {b}: not a strategy of {} (strategies: {})",
                        cmd.file.display(),
                        known.join(", ")
                    )));
                }
            }
            plot::plot_run(doc, &args)
        }
        PlotInput::Sweep(rows) => {
            if let Some(b) = &args.baseline {
                return Err(usage(format!(
                    "cint: --baseline {b}: {} is a sweep, whose charts draw each strategy's \
                     own figures, not ratios to one (--baseline applies to a result document)",
                    cmd.file.display()
                )));
            }
            plot::plot_sweep(rows, &args)
        }
    }
    .map_err(|e| internal(format!("cint: plotting {}: {e}", cmd.file.display())))?;
    let list: String = written
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    write_out(out, &list)
}

/// `cint calibrate`.
#[derive(Args)]
pub(crate) struct CalibrateCmd {
    /// Device profile: optane-p4800x, p3700, optane-900p, cached-array
    #[arg(long, value_name = "PROFILE", required = true)]
    device: String,
    /// Host profile (one application core is used)
    #[arg(long, value_name = "PROFILE", default_value = DEFAULT_HOST)]
    host: String,
    /// Sweep thr on the emulator (inter-arrival times still come from the simulator's model)
    #[arg(long)]
    emu: bool,
    /// Draw the inter-arrival CDF and the thr sweep (PNG and SVG) into this directory
    /// [default: out/calibrate-PROFILE]
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Do not draw the plots
    #[arg(long, conflicts_with = "plot")]
    no_plot: bool,
    /// Use this delta (e.g. 6us) instead of measuring one: sweeps thr only
    #[arg(long, value_name = "DURATION")]
    delta: Option<String>,
    /// Percentile of the inter-arrival time delta is read at, 90 to 99
    #[arg(long, value_name = "P", default_value_t = 99.0)]
    percentile: f64,
    /// Plateau: thr values within this percentage of the best IOPS
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    tolerance: f64,
    /// thr values to sweep, increasing, each 1 to 256 [default: 1,2,4,8,12,16,24,32,48,64,96,128,192,256]
    #[arg(long, value_name = "T1,T2,...", value_delimiter = ',')]
    thr: Vec<u32>,
    /// Requests per submission and per reap in the batched workload
    #[arg(long, value_name = "N", default_value_t = 16)]
    batch: u32,
    /// Measured time of every run
    #[arg(long, value_name = "DURATION", default_value = "100ms")]
    duration: String,
    /// Warm-up of every run
    #[arg(long, value_name = "DURATION", default_value = "10ms")]
    warmup: String,
    /// Seed of every run
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
}

fn duration_flag(flag: &str, text: &str) -> Result<u64, Failure> {
    parse_duration(text).map_err(|e| usage(format!("cint: --{flag}: {e}")))
}

pub(crate) fn calibrate(
    cmd: &CalibrateCmd,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Failure> {
    let mut args = CalibrateArgs::new(&cmd.device, &cmd.host);
    args.percentile = cmd.percentile;
    args.tolerance = cmd.tolerance / 100.0;
    args.thr_values = if cmd.thr.is_empty() {
        DEFAULT_THR.to_vec()
    } else {
        cmd.thr.clone()
    };
    args.batch = cmd.batch;
    args.duration = duration_flag("duration", &cmd.duration)?;
    args.warmup = duration_flag("warmup", &cmd.warmup)?;
    args.seed = cmd.seed;
    args.delta = cmd
        .delta
        .as_deref()
        .map(|d| duration_flag("delta", d))
        .transpose()?;
    // The plots are part of the evidence, so they are drawn unless asked
    // not to; the default directory is per device, so calibrating two
    // devices keeps both sets.
    args.plot = (!cmd.no_plot).then(|| {
        let dir = cmd
            .plot
            .clone()
            .unwrap_or_else(|| default_plot_dir(&cmd.device));
        PlotArgs::new(&dir)
    });
    if let Some(plot) = &args.plot {
        output::check_dir("--plot", &plot.out_dir)?;
    }
    if cmd.emu && args.delta.is_none() {
        let _ = writeln!(
            err,
            "cint: calibrate --emu: thr is swept on the emulator; the inter-arrival times \
             (and so delta) come from the simulator's device model, as the emulator does not \
             record completion posting times"
        );
    }
    let (engine, engine_name) = engine_of(engines, cmd.emu);
    let gaps = engines.sim_gaps;
    let probe_guard = Guard::new("simulator");
    let run_guard = Guard::new(engine_name);
    let probe =
        |s: &Scenario| -> Result<LatencyHistogram, EngineError> { probe_guard.call(|| gaps(s)) };
    let runner = |s: &Scenario| -> Result<RunResult, EngineError> { run_guard.call(|| engine(s)) };
    let calibration =
        cint_lab::calibrate::calibrate(&probe, &runner, &args).map_err(|e| match e {
            CalibrateError::Plot(_) => internal(e.to_string()),
            CalibrateError::Probe { .. } => probe_guard.failure(e.to_string(), e.kind()),
            _ => run_guard.failure(e.to_string(), e.kind()),
        })?;
    report_written(err, &calibration.plots);
    write_out(out, &calibration.report())
}

/// Where `cint calibrate` draws without `--plot`: `out/calibrate-DEVICE`
/// under the working directory (`/out` is ignored by git).
fn default_plot_dir(device: &str) -> PathBuf {
    Path::new("out").join(format!("calibrate-{device}"))
}
