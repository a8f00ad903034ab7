//! Where a scenario comes from: a TOML scenario file, or a fio job file
//! imported by `cint-lab` with a device, a host and strategies chosen on
//! the command line.

use std::path::{Path, PathBuf};

use cint_lab::fio::{self, FioArgs};
use cint_scenario::profiles::{DEVICE_MODELS, HOST_MODELS};
use cint_scenario::strategy::KINDS;
use cint_scenario::{Scenario, Strategy};
use cint_scenario::{DEFAULT_DEVICE, DEFAULT_HOST};

/// A scenario ready to run and the warnings its import produced.
pub(crate) struct Loaded {
    pub scenario: Scenario,
    pub warnings: Vec<String>,
}

/// The source of a scenario.
pub(crate) enum Source<'a> {
    /// A TOML scenario file.
    Toml(&'a Path),
    /// A fio job file and what to build around its jobs.
    Fio {
        path: &'a Path,
        device: &'a str,
        host: &'a str,
        kinds: &'a [String],
    },
}

impl<'a> Source<'a> {
    /// Picks the source from the parsed arguments; clap has already made
    /// sure exactly one of `scenario` and `fio` is given.
    pub fn new(
        scenario: Option<&'a PathBuf>,
        fio: Option<&'a PathBuf>,
        device: Option<&'a str>,
        host: Option<&'a str>,
        kinds: &'a [String],
    ) -> Result<Source<'a>, String> {
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
                        "cint: {flag} applies to --fio job files only; {} is a scenario file: \
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
            _ => Err("cint: give a scenario file or --fio JOB.fio (see cint --help)".into()),
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
                check_model("--device", device, DEVICE_MODELS)?;
                check_model("--host", host, HOST_MODELS)?;
                let strategies = if kinds.is_empty() {
                    None
                } else {
                    Some(strategies_of_kinds(kinds, device)?)
                };
                let args = FioArgs {
                    strategies,
                    sets: sets.to_vec(),
                    ..FioArgs::new(device, host)
                };
                fio::import_file(path, &args)
                    .map(|i| Loaded {
                        scenario: i.scenario,
                        warnings: i.warnings,
                    })
                    .map_err(|e| e.to_string())
            }
        }
    }
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
        toml_string(device)
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
            toml_string(kind)
        ));
    }
    text.push_str("[[job]]\nname = \"placeholder\"\n");
    cint_scenario::load_str(&text, "--strategy", &[])
        .map(|s| s.strategies)
        .map_err(|e| e.to_string())
}

/// A TOML basic string: JSON's escaping is valid TOML.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
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
