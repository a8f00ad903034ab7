//! `--trace FILE`: a block trace replayed as the workload (docs/TRACES.md),
//! on a scenario file's device, host and strategies (the trace replaces
//! its jobs) or on the built-in defaults.

use std::path::{Path, PathBuf};

use cint_scenario::trace::{trace_job, Options, Placement, TraceMode};
use cint_scenario::{Scenario, Work, DEFAULT_DEVICE, DEFAULT_HOST};

use cint_scenario::toml_string;
use clap::{Args, ValueEnum};

/// How the trace is replayed (`--trace-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// At the trace's timestamps, scaled by --trace-speed.
    Open,
    /// --trace-depth requests in flight per thread, in trace order.
    Closed,
}

/// The trace flags of `sim`, `emu`, `check` and `sweep`.
#[derive(Args, Clone, Debug, Default)]
pub struct TraceArgs {
    /// Replay this block trace (fio iolog v2/v3, blktrace v7/v8, MSR CSV) as the workload: alone, on the built-in device, host and strategies, or in place of the given scenario's jobs (docs/TRACES.md)
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// open: at the trace's timestamps (default); closed: --trace-depth in flight, in trace order
    #[arg(
        long = "trace-mode",
        value_enum,
        value_name = "MODE",
        requires = "trace"
    )]
    pub mode: Option<ModeArg>,
    /// Open loop: replay this many times faster than the trace (default 1)
    #[arg(long = "trace-speed", value_name = "FACTOR", requires = "trace")]
    pub speed: Option<f64>,
    /// Requests in flight per thread at most (default 32)
    #[arg(long = "trace-depth", value_name = "N", requires = "trace")]
    pub depth: Option<u32>,
    /// iolog, blktrace or msr (default: detected from the content)
    #[arg(long = "trace-format", value_name = "FORMAT", requires = "trace")]
    pub format: Option<String>,
    /// Replay a request that ends beyond the device at its offset modulo the capacity, instead of refusing the trace
    #[arg(long = "trace-wrap", requires = "trace")]
    pub wrap: bool,
}

/// Time measured after an open-loop replay's last release, for a replay
/// on the defaults: the last requests' completions.
const TAIL: u64 = 10_000_000;

impl TraceArgs {
    /// The replay options, or the one-line refusal of a bad flag.
    fn options(&self) -> Result<Options, String> {
        let format = match &self.format {
            Some(f) => Some(
                f.parse()
                    .map_err(|e| format!("cint: --trace-format: {e}"))?,
            ),
            None => None,
        };
        let mode = match (self.mode, self.speed) {
            (Some(ModeArg::Closed), Some(_)) => {
                return Err("cint: --trace-speed applies to --trace-mode open only".into())
            }
            (Some(ModeArg::Closed), None) => TraceMode::Closed,
            (_, speed) => {
                let s = speed.unwrap_or(1.0);
                if !(1e-6..=1e6).contains(&s) {
                    return Err(format!(
                        "cint: --trace-speed must be from 0.000001 to 1000000 (got {s})"
                    ));
                }
                TraceMode::Open {
                    speed_ppm: ((s * 1e6).round() as u64).max(1),
                }
            }
        };
        let depth = self
            .depth
            .unwrap_or(cint_scenario::trace::DEFAULT_TRACE_DEPTH);
        if depth == 0 || u64::from(depth) > cint_scenario::MAX_QUEUE_DEPTH {
            return Err(format!(
                "cint: --trace-depth must be from 1 to {} (got {depth})",
                cint_scenario::MAX_QUEUE_DEPTH
            ));
        }
        Ok(Options {
            format,
            mode,
            depth,
            wrap: self.wrap,
            placement: Placement::Trace,
        })
    }

    /// The replay's keys of a job (`trace = FILE` and the flags given),
    /// for a trace replayed on the built-in defaults: the scenario parser
    /// then reads the job, its `--set job.trace.KEY` included, as it reads
    /// a trace job of a file.
    fn job_keys(&self, path: &Path) -> String {
        let mut keys = format!("trace = {}\n", toml_string(&path.to_string_lossy()));
        if let Some(mode) = self.mode {
            let mode = if mode == ModeArg::Closed {
                "closed"
            } else {
                "open"
            };
            keys.push_str(&format!("trace_mode = \"{mode}\"\n"));
        }
        if let Some(speed) = self.speed {
            keys.push_str(&format!("trace_speed = {speed:?}\n"));
        }
        if let Some(depth) = self.depth {
            keys.push_str(&format!("trace_depth = {depth}\n"));
        }
        if let Some(format) = &self.format {
            keys.push_str(&format!("trace_format = {}\n", toml_string(format)));
        }
        if self.wrap {
            keys.push_str("trace_wrap = true\n");
        }
        keys
    }

    /// Loads the scenario (`scenario`, or the built-in defaults) with
    /// `sets`, and puts the trace's job in place of its jobs; the trace
    /// job takes the engine, hint and flags of the first I/O job it
    /// replaces.
    pub fn load(&self, scenario: Option<&Path>, sets: &[String]) -> Result<Scenario, String> {
        let Some(path) = &self.trace else {
            return Err("cint: no --trace given".into());
        };
        let opts = self.options()?;
        let (mut sc, job) = match scenario {
            Some(file) => {
                let sc = cint_scenario::load_file(file, sets).map_err(|e| e.to_string())?;
                let Some(base) = sc.jobs.iter().find(|j| matches!(j.work, Work::Io(_))) else {
                    return Err(format!(
                        "{}: --trace replaces the scenario's I/O jobs, and it has none",
                        sc.source
                    ));
                };
                let job = trace_job(base, path, &opts, &sc.device, &sc.host)
                    .map_err(|e| format!("cint: --trace {e}"))?;
                (sc, job)
            }
            None => {
                // The generated scenario names the file in a TOML string.
                if path.to_str().is_none() {
                    return Err(format!(
                        "cint: --trace {}: the path is not UTF-8, which a scenario's trace key \
                         cannot hold: rename the file, or give a scenario file beside --trace",
                        path.display()
                    ));
                }
                let name = path
                    .file_stem()
                    .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
                let text = default_text(&name, &self.job_keys(path));
                let mut sc = cint_scenario::load_str(&text, "--trace", sets).map_err(|mut e| {
                    // A line of the text above is none of the user's: the
                    // key and the message say what was refused.
                    if matches!(e.origin, cint_scenario::Origin::Line(_)) {
                        e.origin = cint_scenario::Origin::File;
                    }
                    e.to_string()
                })?;
                let job = sc.jobs.remove(0);
                (sc, job)
            }
        };
        let duration_set = sets
            .iter()
            .any(|s| cint_scenario::set_key(s).as_deref() == Some("duration"));
        if scenario.is_none() && !duration_set {
            if let Work::Io(io) = &job.work {
                if let Some(tr) = io
                    .shape
                    .trace
                    .as_ref()
                    .filter(|tr| tr.mode != TraceMode::Closed)
                {
                    let last = tr
                        .threads
                        .iter()
                        .filter_map(|t| t.ios.last())
                        .map(|x| x.at)
                        .max()
                        .unwrap_or(0);
                    sc.duration = (last + TAIL).min(cint_scenario::MAX_RUN_TIME);
                }
            }
        }
        sc.jobs = vec![job];
        Ok(sc)
    }
}

/// The scenario a trace replays on without a scenario file: the default
/// device and host, no warm-up (the trace starts at once), the three
/// strategies of a fio import, and the trace's job with `job_keys`,
/// whose keys `--set job.trace.KEY=...` may change.
fn default_text(name: &str, job_keys: &str) -> String {
    let quoted = toml_string(name);
    format!(
        "name = {quoted}\nwarmup = \"0s\"\n[device]\nmodel = \"{DEFAULT_DEVICE}\"\n\
         [host]\nmodel = \"{DEFAULT_HOST}\"\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[strategy]]\nname = \"adaptive\"\nkind = \"adaptive\"\n\
         [[strategy]]\nname = \"cinterrupts\"\nkind = \"cinterrupts\"\n\
         [[job]]\nname = \"trace\"\n{job_keys}"
    )
}
