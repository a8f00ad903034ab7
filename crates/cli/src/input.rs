//! Where a scenario comes from: a TOML scenario file, or a fio job file
//! imported by `cint-lab` with a device, a host and strategies chosen on
//! the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cint_lab::fio::{self, FioArgs};
use cint_scenario::profiles::{DEVICE_MODELS, HOST_MODELS};
use cint_scenario::strategy::KINDS;
use cint_scenario::{Scenario, Strategy};
use cint_scenario::{DEFAULT_DEVICE, DEFAULT_HOST};
use serde::{Deserialize, Serialize};

/// A scenario ready to run and the warnings its import produced.
pub struct Loaded {
    /// The scenario.
    pub scenario: Scenario,
    /// The fio import's warnings, one line each.
    pub warnings: Vec<String>,
}

/// The source of a scenario.
pub enum Source<'a> {
    /// A TOML scenario file.
    Toml(&'a Path),
    /// A fio job file and what to build around its jobs.
    Fio {
        /// The job file.
        path: &'a Path,
        /// Device profile.
        device: &'a str,
        /// Host profile.
        host: &'a str,
        /// Strategy kinds; empty: the import's default.
        kinds: &'a [String],
    },
    /// A fio command line and what to build around its jobs.
    FioCmd {
        /// fio's arguments (the program's name optional).
        argv: &'a [String],
        /// Device profile.
        device: &'a str,
        /// Host profile.
        host: &'a str,
        /// Strategy kinds; empty: the import's default.
        kinds: &'a [String],
    },
    /// A block trace replayed on a scenario file's device, host and
    /// strategies, or on the defaults.
    Trace {
        /// The scenario file whose jobs the trace replaces, if any.
        scenario: Option<&'a Path>,
        /// The trace and how to replay it.
        args: &'a crate::trace::TraceArgs,
    },
}

impl<'a> Source<'a> {
    /// Picks the source from the parsed arguments; clap has already made
    /// sure exactly one of `scenario` and `fio` is given.
    pub fn new(
        scenario: Option<&'a PathBuf>,
        fio: Option<&'a PathBuf>,
        fio_cmd: &'a [String],
        device: Option<&'a str>,
        host: Option<&'a str>,
        kinds: &'a [String],
    ) -> Result<Source<'a>, String> {
        if !fio_cmd.is_empty() {
            return Ok(Source::FioCmd {
                argv: fio_cmd,
                device: device.unwrap_or(DEFAULT_DEVICE),
                host: host.unwrap_or(DEFAULT_HOST),
                kinds,
            });
        }
        match (scenario, fio) {
            (Some(path), None) => {
                // A TOML scenario names its own device, host and strategies;
                // a flag that would be ignored is refused, never dropped.
                let given = [
                    ("--device", device.is_some(), "device.model"),
                    ("--host", host.is_some(), "host.model"),
                    ("--strategy", !kinds.is_empty(), "strategy.NAME.kind"),
                ];
                if let Some((flag, _, key)) = given.iter().find(|(_, present, _)| *present) {
                    return Err(format!(
                        "cint: {flag} applies to --fio and --fio-cmd only; {} is a scenario file: \
                         use --set {key}=... to change it",
                        path.display()
                    ));
                }
                Ok(Source::Toml(path))
            }
            (None, Some(path)) => Ok(Source::Fio {
                path,
                device: device.unwrap_or(DEFAULT_DEVICE),
                host: host.unwrap_or(DEFAULT_HOST),
                kinds,
            }),
            _ => Err(
                "cint: give a scenario file, --fio JOB.fio or --fio-cmd FIO_ARGS (see cint --help)"
                    .into(),
            ),
        }
    }

    /// Loads the scenario with `sets` applied after the file's own values.
    pub fn load(&self, sets: &[String]) -> Result<Loaded, String> {
        match *self {
            Source::Toml(path) => cint_scenario::load_file(path, sets)
                .map(|scenario| Loaded {
                    scenario,
                    warnings: Vec::new(),
                })
                .map_err(|e| e.to_string()),
            Source::Fio {
                path,
                device,
                host,
                kinds,
            } => {
                let args = fio_args(device, host, kinds, sets)?;
                fio::import_file(path, &args)
                    .map(Loaded::from)
                    .map_err(|e| e.to_string())
            }
            Source::FioCmd {
                argv,
                device,
                host,
                kinds,
            } => load_command_line(argv, device, host, kinds, sets),
            Source::Trace { scenario, args } => args.load(scenario, sets).map(|scenario| Loaded {
                scenario,
                warnings: Vec::new(),
            }),
        }
    }

    /// The file's text with what loading it needs, read once: it loads
    /// as [`Source::load`] does, in this process or in another one on
    /// another machine.
    pub fn to_text(&self) -> Result<SourceText, String> {
        // Loading first reports an unreadable or invalid file with the
        // message `load` gives it.
        self.load(&[])?;
        match *self {
            Source::Trace { .. } => Err(
                "cint: --trace runs in this process only: to replay a trace elsewhere, name it \
                 in a scenario job (trace = \"FILE\")"
                    .into(),
            ),
            Source::Toml(path) => Ok(SourceText::Toml {
                name: path.display().to_string(),
                text: read(path)?,
            }),
            Source::Fio {
                path,
                device,
                host,
                kinds,
            } => Ok(SourceText::Fio {
                file: path.display().to_string(),
                stem: path.file_stem().map(|s| s.to_string_lossy().into_owned()),
                text: read(path)?,
                device: device.into(),
                host: host.into(),
                kinds: kinds.to_vec(),
                // fio's ${VAR} reads the environment of the process that
                // loads the file: this one's, wherever it is loaded.
                vars: std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                    .collect(),
            }),
            Source::FioCmd {
                argv,
                device,
                host,
                kinds,
            } => Ok(SourceText::FioCmd {
                argv: argv.to_vec(),
                device: device.into(),
                host: host.into(),
                kinds: kinds.to_vec(),
            }),
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

/// A scenario as text, with what loading it needs: a TOML scenario, or a
/// fio job file with the device, host and strategies to build around it.
/// Owned, plain and serializable, so it can travel to another process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SourceText {
    /// A TOML scenario; `name` is the file name its messages give.
    Toml {
        /// The name messages give the scenario (its path, or `<string>`).
        name: String,
        /// The TOML text.
        text: String,
    },
    /// A fio job file.
    Fio {
        /// The file name messages give.
        file: String,
        /// The scenario's name: the file's stem.
        stem: Option<String>,
        /// The job file's text.
        text: String,
        /// Device profile.
        device: String,
        /// Host profile.
        host: String,
        /// Strategy kinds; empty: the import's default.
        kinds: Vec<String>,
        /// Values of fio's `${VAR}`.
        vars: BTreeMap<String, String>,
    },
    /// A fio command line.
    FioCmd {
        /// fio's arguments.
        argv: Vec<String>,
        /// Device profile.
        device: String,
        /// Host profile.
        host: String,
        /// Strategy kinds; empty: the import's default.
        kinds: Vec<String>,
    },
}

impl SourceText {
    /// Loads the scenario with `sets` applied after the text's own
    /// values: the same scenario and the same messages as
    /// [`Source::load`] on the file the text was read from.
    pub fn load(&self, sets: &[String]) -> Result<Loaded, String> {
        match self {
            SourceText::Toml { name, text } => cint_scenario::load_str(text, name, sets)
                .map(|scenario| Loaded {
                    scenario,
                    warnings: Vec::new(),
                })
                .map_err(|e| e.to_string()),
            SourceText::Fio {
                file,
                stem,
                text,
                device,
                host,
                kinds,
                vars,
            } => {
                let args = FioArgs {
                    name: stem.clone(),
                    vars: Some(vars.clone()),
                    ..fio_args(device, host, kinds, sets)?
                };
                fio::import_str(text, file, &args)
                    .map(Loaded::from)
                    .map_err(|e| e.to_string())
            }
            SourceText::FioCmd {
                argv,
                device,
                host,
                kinds,
            } => load_command_line(argv, device, host, kinds, sets),
        }
    }
}

/// A fio command line imported on `device` and `host` with the
/// strategies of `kinds` and `sets`.
fn load_command_line(
    argv: &[String],
    device: &str,
    host: &str,
    kinds: &[String],
    sets: &[String],
) -> Result<Loaded, String> {
    let args = fio_args(device, host, kinds, sets)?;
    fio::import_command_line(argv, &args)
        .map(Loaded::from)
        .map_err(|e| e.to_string())
}

impl From<fio::FioImport> for Loaded {
    fn from(i: fio::FioImport) -> Loaded {
        Loaded {
            scenario: i.scenario,
            warnings: i.warnings,
        }
    }
}

/// What the fio import of a job file is given: the profiles (checked),
/// the strategies of `kinds` (or the import's default) and `sets`.
fn fio_args(
    device: &str,
    host: &str,
    kinds: &[String],
    sets: &[String],
) -> Result<FioArgs, String> {
    check_model("--device", device, DEVICE_MODELS)?;
    check_model("--host", host, HOST_MODELS)?;
    let strategies = if kinds.is_empty() {
        None
    } else {
        Some(strategies_of_kinds(kinds, device)?)
    };
    Ok(FioArgs {
        strategies,
        sets: sets.to_vec(),
        ..FioArgs::new(device, host)
    })
}

fn check_model(flag: &str, name: &str, known: &[&str]) -> Result<(), String> {
    if known.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "{flag} {name}: unknown profile (known: {})",
            known.join(", ")
        ))
    }
}

/// One strategy per kind, named after it, with the defaults a scenario
/// file would give it on this device (e.g. `adaptive` at the profile's
/// reference `delta` and `thr`). Going through the scenario parser keeps
/// those defaults in one place.
pub(crate) fn strategies_of_kinds(kinds: &[String], device: &str) -> Result<Vec<Strategy>, String> {
    let mut text = format!(
        "name = \"strategies\"\n[device]\nmodel = {}\n",
        cint_scenario::toml_string(device)
    );
    for (i, kind) in kinds.iter().enumerate() {
        if !KINDS.iter().any(|(k, _)| k == kind) {
            let known: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
            return Err(format!(
                "--strategy {kind}: unknown strategy kind (known: {})",
                known.join(", ")
            ));
        }
        if kinds[..i].contains(kind) {
            return Err(format!("--strategy {kind}: given twice"));
        }
        text.push_str(&format!(
            "[[strategy]]\nname = {0}\nkind = {0}\n",
            cint_scenario::toml_string(kind)
        ));
    }
    text.push_str("[[job]]\nname = \"placeholder\"\n");
    cint_scenario::load_str(&text, "--strategy", &[])
        .map(|s| s.strategies)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cint_policy::PolicyConfig;
    use cint_scenario::CompletionMode;

    #[test]
    fn kinds_get_the_device_reference_parameters() {
        let s = strategies_of_kinds(&["none".into(), "adaptive".into()], "p3700").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].name, "adaptive");
        match s[1].mode {
            CompletionMode::Interrupt(PolicyConfig::Adaptive(p)) => {
                assert_eq!((p.delta, p.thr), (15_000, 32));
            }
            ref other => panic!("adaptive became {other:?}"),
        }
    }

    #[test]
    fn unknown_and_repeated_kinds_are_named() {
        let e = strategies_of_kinds(&["fast\"".into()], "p3700").unwrap_err();
        assert!(e.starts_with("--strategy fast\": unknown strategy kind (known: none"));
        let e = strategies_of_kinds(&["none".into(), "none".into()], "p3700").unwrap_err();
        assert_eq!(e, "--strategy none: given twice");
    }
}
