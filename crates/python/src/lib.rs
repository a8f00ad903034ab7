//! # cint-python: the native half of the Python package `cinterrupts`
//!
//! Built by maturin from `python/` into `cinterrupts._native`; the public
//! API, its type hints and its documentation are the Python half
//! (`python/cinterrupts/`, docs/PYTHON.md). Everything here goes through
//! the `cint` command's own library (scenario loading, `--set`, the
//! engines, sweep points, CSV rows, messages) so that Python and the
//! command line give the same bytes and the same one-line errors, and
//! through the policy library's C ABI for [`policy::Policy`], so that
//! Python gets the C ABI's decisions and checks.
//!
//! The GIL is released while an engine runs. A scenario travels between
//! processes (to Ray workers) as a plain tuple, [`SourceState`].

#![warn(missing_docs)]

mod mode_select;
mod policy;
mod run;
mod sweep;

use cint::{Failure, Loaded, SourceText, EXIT_INTERNAL};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    cinterrupts,
    InputError,
    PyException,
    "Bad input: a scenario, a key, a value or an argument the command line would refuse with \
     exit status 2; the message is the command line's one line."
);
create_exception!(
    cinterrupts,
    InternalError,
    PyException,
    "An internal error (an engine bug) the command line would report with exit status 1."
);

/// A scenario as it travels between processes (to Ray workers): a
/// [`SourceText`] in JSON, opaque to Python.
pub(crate) type SourceState = String;

/// The Python exception of a command-line failure: internal (exit 1) or
/// bad input (anything else), with the command's one line.
pub(crate) fn failure_err(f: Failure) -> PyErr {
    if f.status == EXIT_INTERNAL {
        InternalError::new_err(f.line())
    } else {
        InputError::new_err(f.line())
    }
}

/// Bad input, with a message that may span lines made one.
pub(crate) fn input_err(message: impl AsRef<str>) -> PyErr {
    InputError::new_err(
        message
            .as_ref()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

pub(crate) fn to_state(text: SourceText) -> PyResult<SourceState> {
    serde_json::to_string(&text)
        .map_err(|e| InternalError::new_err(format!("a scenario source as JSON: {e}")))
}

pub(crate) fn from_state(state: SourceState) -> PyResult<SourceText> {
    serde_json::from_str(&state).map_err(|e| {
        InternalError::new_err(format!("a scenario source that does not read back: {e}"))
    })
}

/// Loads `source` with `sets`, as the command line loads its scenario.
pub(crate) fn load(source: &SourceText, sets: &[String]) -> PyResult<Loaded> {
    source.load(sets).map_err(input_err)
}

/// Reads a scenario file (TOML, or a fio job file with `fio`) once, as
/// `cint` would load it with `SCENARIO` or `--fio FILE --device --host
/// --strategy`; the command line's message if it cannot be loaded.
#[pyfunction]
#[pyo3(signature = (path, fio, device=None, host=None, strategies=Vec::new()))]
fn read_source(
    path: std::path::PathBuf,
    fio: bool,
    device: Option<String>,
    host: Option<String>,
    strategies: Vec<String>,
) -> PyResult<SourceState> {
    let (scenario, fio_path) = if fio {
        (None, Some(&path))
    } else {
        (Some(&path), None)
    };
    let profiles = (device.as_deref(), host.as_deref(), strategies.as_slice());
    source_state(scenario, fio_path, &[], profiles)
}

/// The source `cint` would build from these arguments, read once.
fn source_state(
    scenario: Option<&std::path::PathBuf>,
    fio: Option<&std::path::PathBuf>,
    fio_cmd: &[String],
    (device, host, strategies): (Option<&str>, Option<&str>, &[String]),
) -> PyResult<SourceState> {
    let source =
        cint::Source::new(scenario, fio, fio_cmd, device, host, strategies).map_err(input_err)?;
    to_state(source.to_text().map_err(input_err)?)
}

/// A fio command line (`["fio", "--name=a", "--rw=randread", ...]`, the
/// program's name optional), as `cint --fio-cmd` reads it with `--device
/// --host --strategy`; its message if it cannot be loaded.
#[pyfunction]
#[pyo3(signature = (argv, device=None, host=None, strategies=Vec::new()))]
fn command_line_source(
    argv: Vec<String>,
    device: Option<String>,
    host: Option<String>,
    strategies: Vec<String>,
) -> PyResult<SourceState> {
    if argv.is_empty() {
        return Err(input_err(
            "a fio command line: no argument (give fio's options, e.g. --name=a)",
        ));
    }
    let profiles = (device.as_deref(), host.as_deref(), strategies.as_slice());
    source_state(None, None, &argv, profiles)
}

/// A TOML scenario given as text; its messages name it `<string>`.
#[pyfunction]
fn toml_source(text: String) -> PyResult<SourceState> {
    to_state(SourceText::Toml {
        name: "<string>".into(),
        text,
    })
}

/// The resolved scenario: `(text, json, warnings)`, the text as `cint
/// check` prints it and the same scenario as a JSON object.
#[pyfunction]
fn check(source: SourceState, sets: Vec<String>) -> PyResult<(String, String, Vec<String>)> {
    let Loaded { scenario, warnings } = load(&from_state(source)?, &sets)?;
    let toml_text = cint_scenario::to_toml(&scenario);
    let text = format!(
        "# {}: valid; resolved with every default and profile field\n{toml_text}",
        scenario.source
    );
    let value: toml::Value = toml::from_str(&toml_text).map_err(|e| {
        InternalError::new_err(format!("the resolved scenario does not read back: {e}"))
    })?;
    let json = serde_json::to_string(&value)
        .map_err(|e| InternalError::new_err(format!("the resolved scenario as JSON: {e}")))?;
    Ok((text, json, warnings))
}

/// The version of the Rust crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The native half of `cinterrupts`; use the package, not this module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(read_source, m)?)?;
    m.add_function(wrap_pyfunction!(toml_source, m)?)?;
    m.add_function(wrap_pyfunction!(command_line_source, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    run::register(m)?;
    sweep::register(m)?;
    policy::register(m)?;
    mode_select::register(m)?;
    Ok(())
}
