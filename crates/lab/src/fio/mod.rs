//! fio job files as scenarios.
//!
//! fio users already have job files; this module turns one into a
//! [`Scenario`] on a chosen device and host profile so the same workload
//! can be compared across interrupt strategies.
//!
//! The INI dialect is fio's: `[global]` and job sections, `key=value` or a
//! bare flag (`direct`), `;` and `#` comments (from the first `;` or `#`
//! anywhere on a line to its end, as fio cuts them), and inheritance: a
//! job starts from every `[global]` option written above it. fio's
//! defaults apply (`rw=read`, `bs=4k`, `iodepth=1`, `ioengine=psync`,
//! `direct=0`).
//!
//! What each option becomes (modelled as a scenario key, warned as
//! meaningless in a model, or refused by name) is documented in
//! docs/FIO.md, the contract this module keeps. In short: the engine,
//! pattern and depth options map onto the job's keys; request shaping
//! (`bssplit`, `bsrange`, `rate`, `rate_process`, `thinktime`,
//! `number_ios`, `size`/`io_size` x `loops` without `time_based`, `flow`,
//! `exitall`, `ss`, the patched fio's `barrier`) onto `IoShape`; groups
//! (`stonewall`, `wait_for`) and `startdelay` onto the job's `Schedule`;
//! `${VAR}` is expanded from the environment (or [`FioArgs::vars`]).
//!
//! An option that would change what is measured but has no model is an
//! error naming the file, the line and the option; an option with no
//! meaning in a model (`filename`, `description`, ...) is a one-line
//! warning.
//!
//! The import runs in stages, one module each: `jobfile` reads the INI
//! text into sections, `job` folds each job section and the `[global]`
//! options above it into what the job asks for (each option's treatment is
//! the table in `options`, its value syntax in `values`), and
//! `to_scenario` maps the jobs onto a scenario (`schedule` for when they
//! run, `shape` for their request shaping), which is then written as TOML
//! and loaded back so it passes the scenario parser's own validation.

use std::collections::BTreeMap;
use std::path::Path;

use cint_policy::Nanos;
use cint_scenario::{Scenario, Strategy};

mod cmdline;
mod diag;
mod job;
mod jobfile;
mod options;
mod schedule;
mod shape;
#[cfg(test)]
mod test_support;
mod to_scenario;
mod values;

pub use cmdline::COMMAND_LINE;
pub use diag::FioError;

use diag::Diagnostics;

/// What to build around the jobs of a fio file.
#[derive(Clone, Debug, PartialEq)]
pub struct FioArgs {
    /// Built-in device profile name.
    pub device: String,
    /// Built-in host profile name.
    pub host: String,
    /// Strategies to compare; `None`: `none`, `adaptive` and `cinterrupts`
    /// at the device profile's reference `delta` and `thr` (or `poll` when
    /// every job sets `hipri`).
    pub strategies: Option<Vec<Strategy>>,
    /// Seed of the simulator's generator.
    pub seed: u64,
    /// Measured time when the file gives no `runtime`.
    pub default_duration: Nanos,
    /// Scenario name; `None`: the file's stem.
    pub name: Option<String>,
    /// `--set KEY=VALUE` overrides, applied to the imported scenario with
    /// the scenario parser's own rules (e.g. `duration=50ms`).
    pub sets: Vec<String>,
    /// Values of fio's `${VAR}`; `None`: the process environment.
    pub vars: Option<BTreeMap<String, String>>,
}

impl FioArgs {
    /// The reference device and host of the cinterrupts paper, default
    /// strategies, seed 1, 200 ms when the file has no `runtime`.
    pub fn new(device: &str, host: &str) -> FioArgs {
        FioArgs {
            device: device.into(),
            host: host.into(),
            strategies: None,
            seed: 1,
            default_duration: 200_000_000,
            name: None,
            sets: Vec::new(),
            vars: None,
        }
    }
}

/// A fio file turned into a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct FioImport {
    /// The scenario, ready to run.
    pub scenario: Scenario,
    /// One line per ignored option or default taken, naming file and line.
    pub warnings: Vec<String>,
}

/// Reads and imports a fio job file.
pub fn import_file(path: &Path, args: &FioArgs) -> Result<FioImport, FioError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| FioError::whole_file(&file, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        FioError::at_line(&file, line, format!("not UTF-8 text (byte {at})"))
    })?;
    let mut args = args.clone();
    if args.name.is_none() {
        args.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    }
    import_str(&text, &file, &args)
}

/// Imports fio job-file text; `file` names it in messages.
pub fn import_str(text: &str, file: &str, args: &FioArgs) -> Result<FioImport, FioError> {
    let sections = jobfile::parse(text, file, args.vars.as_ref())?;
    import_sections(sections, Diagnostics::new(file), args)
}

/// Imports a fio command line (`fio --name=a --rw=read ...`, the program's
/// name optional), which fio reads as the job file it writes out
/// (docs/FIO.md, "Reading the file"). Messages name it [`COMMAND_LINE`] and
/// give an argument's position as its line. Without [`FioArgs::name`] the
/// scenario is named `fio`.
pub fn import_command_line(argv: &[String], args: &FioArgs) -> Result<FioImport, FioError> {
    let mut diag = Diagnostics::new(COMMAND_LINE);
    let sections = cmdline::sections(argv, &mut diag)?;
    let mut args = args.clone();
    args.name.get_or_insert_with(|| "fio".into());
    import_sections(sections, diag, &args)
}

/// The import from the sections on, whichever way they were written.
fn import_sections(
    sections: Vec<jobfile::Section>,
    mut diag: Diagnostics<'_>,
    args: &FioArgs,
) -> Result<FioImport, FioError> {
    let file = diag.file();
    let specs = job::job_specs(sections, &mut diag)?;
    let lines: Vec<_> = specs.iter().map(job::JobSpec::key_lines).collect();
    let built = to_scenario::build(specs, args, &mut diag)?;
    let mut scenario = to_scenario::revalidate(&built, file, &args.sets, &lines)?;
    // An engine's refusal names a key: it is found at the job file's
    // line, not the rendering's.
    scenario.origins.keep_sets_only();
    for (job, keys) in scenario.jobs.iter().zip(&lines) {
        for &job::KeyLine { key, line, .. } in keys {
            let key = match key {
                "" => format!("job.{}", job.name),
                _ => format!("job.{}.{key}", job.name),
            };
            scenario
                .origins
                .set_if_absent(&key, cint_scenario::Origin::Line(line));
        }
    }
    Ok(FioImport {
        scenario,
        warnings: diag.into_warnings(),
    })
}
