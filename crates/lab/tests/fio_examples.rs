//! fio's own example job files (Debian's `fio-examples` package, installed
//! by `.ci/deps/fio-examples.sh`): every one that uses a block engine
//! (psync, sync, pvsync, pvsync2, libaio, io_uring, or none) goes through
//! the import. At least two thirds must import and run in the simulator,
//! and every refusal must be one of the reasons listed here: what a
//! block-device model cannot be, or an unset `${VAR}`. A new kind of
//! refusal fails the test, so it cannot creep in unnoticed.
//!
//! Under `CI=true` a missing package is a failure; elsewhere the test says
//! loudly that it skipped.

use std::path::{Path, PathBuf};

use cint_lab::fio::{import_file, FioArgs};

/// Where Debian's fio-examples package puts the job files.
const EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// Engines of a block-device model.
const BLOCK_ENGINES: &[&str] = &["psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring"];

/// Accepted reasons for a refusal: (what the message contains, why).
const ALLOWED_REFUSALS: &[(&str, &str)] = &[
    ("zoned block devices are not modelled", "zoned devices"),
    (
        "nothing to verify",
        "data verification: the model moves no data",
    ),
    ("the model has no trims", "trims"),
    ("io_uring_cmd", "passthrough commands"),
    (
        "is not set (fio takes it from the environment)",
        "an unset ${VAR}",
    ),
];

fn engines_of(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.find([';', '#']).map_or(l, |i| &l[..i]))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == "ioengine")
        .map(|(_, v)| v.trim().to_string())
        .collect()
}

fn block_engine_examples(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            engines_of(&text)
                .iter()
                .all(|e| BLOCK_ENGINES.contains(&e.as_str()))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn two_thirds_of_fios_block_engine_examples_run_and_refusals_have_allowed_reasons() {
    let dir = Path::new(EXAMPLES);
    if !dir.is_dir() {
        cint_test_support::skip::missing(&format!(
            "{EXAMPLES} is missing (install Debian's fio-examples package, or run \
             bash .ci/deps/fio-examples.sh); fio's examples were not checked"
        ));
        return;
    }
    let files = block_engine_examples(dir);
    assert!(
        files.len() >= 30,
        "only {} block-engine examples found in {EXAMPLES}",
        files.len()
    );
    // Variables come from an empty environment, not the test's.
    let args = FioArgs {
        vars: Some(Default::default()),
        // Short runs: the test checks that each file runs, not its figures.
        sets: vec!["duration=2ms".into(), "warmup=0ms".into()],
        ..FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
    };
    let mut ran = Vec::new();
    let mut refused = Vec::new();
    for path in &files {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        match import_file(path, &args) {
            Ok(imported) => {
                for w in &imported.warnings {
                    assert!(!w.contains('\n'), "{name}: a warning of one line: {w}");
                }
                let result = cint_sim::run(&imported.scenario)
                    .unwrap_or_else(|e| panic!("{name} imports but does not run: {e}"));
                assert_eq!(result.results.len(), imported.scenario.strategies.len());
                ran.push(name);
            }
            Err(e) => {
                let message = e.to_string();
                assert!(!message.contains('\n'), "{name}: one line: {message}");
                assert!(
                    message.starts_with(&path.display().to_string()),
                    "{name}: the message names the file: {message}"
                );
                let reason = ALLOWED_REFUSALS
                    .iter()
                    .find(|(needle, _)| message.contains(needle))
                    .unwrap_or_else(|| {
                        panic!("{name} is refused for a reason not allowed: {message}")
                    });
                refused.push(format!("{name}: {}", reason.1));
            }
        }
    }
    eprintln!(
        "fio examples: {} of {} block-engine files run; refused: {refused:#?}",
        ran.len(),
        files.len()
    );
    assert!(
        ran.len() * 3 >= files.len() * 2,
        "only {} of {} run (refused: {refused:#?})",
        ran.len(),
        files.len()
    );
}

/// `fio --showcmd FILE`'s command line as arguments. fio writes the
/// options unquoted, so a word that does not start with `--` belongs to
/// the value before it (`--description=Sequential fill phase`).
fn showcmd(path: &Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("fio")
        .arg("--showcmd")
        .arg(path)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut argv: Vec<String> = Vec::new();
    for word in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        match argv.last_mut() {
            Some(last) if !word.starts_with("--") => {
                last.push(' ');
                last.push_str(word);
            }
            _ => argv.push(word.to_string()),
        }
    }
    Some(argv)
}

/// Whether a `[global]` section of the file sets `name=`.
fn names_in_global(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut in_global = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_global = line == "[global]";
        } else if in_global && line.starts_with("name") && line.contains('=') {
            return true;
        }
    }
    false
}

#[test]
fn each_example_as_fio_writes_it_out_on_a_command_line_imports_alike() {
    let dir = Path::new(EXAMPLES);
    if !dir.is_dir()
        || std::process::Command::new("fio")
            .arg("--version")
            .output()
            .is_err()
    {
        cint_test_support::skip::missing(&format!(
            "fio or {EXAMPLES} is missing (bash .ci/deps/fio.sh and .ci/deps/fio-examples.sh)"
        ));
        return;
    }
    let args = FioArgs {
        vars: Some(Default::default()),
        ..FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
    };
    let mut compared = 0;
    for path in block_engine_examples(dir) {
        let Ok(from_file) = import_file(&path, &args) else {
            continue;
        };
        if names_in_global(&path) {
            // fio writes a [global] name= as a --name=, which on a command
            // line starts a job: fio's own round trip changes the file.
            continue;
        }
        let Some(argv) = showcmd(&path) else {
            continue;
        };
        let from_cmd = cint_lab::fio::import_command_line(&argv, &args)
            .unwrap_or_else(|e| panic!("{}: {argv:?}: {e}", path.display()));
        assert_eq!(
            from_cmd.scenario.jobs,
            from_file.scenario.jobs,
            "{}",
            path.display()
        );
        assert_eq!(from_cmd.scenario.duration, from_file.scenario.duration);
        assert_eq!(from_cmd.warnings.len(), from_file.warnings.len());
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} examples compared");
}
