//! `cint sweep --ray ADDRESS`: the sweep runs on a Ray cluster through
//! the Python package `cinterrupts` (docs/PYTHON.md), which ships the
//! points to Ray as tasks; this binary only starts it, with the same
//! arguments. Python is needed for this flag alone.

use std::ffi::OsString;
use std::process::{Command, Stdio};

use crate::workflow::SweepCmd;
use crate::{usage, Failure, EXIT_INTERNAL, EXIT_INTERRUPTED};

/// The Python interpreter to run: `CINT_PYTHON` if set, else `python3`.
const PYTHON_ENV: &str = "CINT_PYTHON";

/// What to install, for the messages of a missing Python or package.
const INSTALL: &str = "cint: --ray runs the sweep through the Python package cinterrupts \
                       (Python 3.9 or newer, with Ray): install it with `pip install ./python` \
                       from the repository (docs/PYTHON.md)";

/// Runs `python -m cinterrupts sweep` with the command's arguments; its
/// exit status becomes ours, and its messages are already on stderr.
pub(crate) fn sweep(cmd: &SweepCmd, address: &str) -> Result<(), Failure> {
    let python = std::env::var_os(PYTHON_ENV).unwrap_or_else(|| "python3".into());
    let shown = python.to_string_lossy().into_owned();
    // Finding the package costs no import of Ray or of the package.
    let probe = Command::new(&python)
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('cinterrupts') else 3)",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match probe {
        Err(e) => return Err(usage(format!("{INSTALL}; cannot run {shown}: {e}"))),
        Ok(status) if status.code() == Some(3) => {
            return Err(usage(format!(
                "{INSTALL}; {shown} has no cinterrupts package"
            )))
        }
        Ok(status) if !status.success() => {
            return Err(usage(format!(
                "{INSTALL}; {shown} failed to start ({status})"
            )))
        }
        Ok(_) => {}
    }
    let mut child = Command::new(&python);
    child
        .args(["-m", "cinterrupts", "sweep"])
        .args(python_args(cmd, address));
    // Ctrl-C reaches the whole foreground process group: the Python
    // sweep stops and writes its finished points, we wait for it.
    let sigint = crate::interrupt::CatchSigint::install();
    let status = child
        .status()
        .map_err(|e| usage(format!("{INSTALL}; cannot run {shown}: {e}")));
    drop(sigint);
    let status = status?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(Failure {
            status: code,
            message: String::new(),
        }),
        None => {
            use std::os::unix::process::ExitStatusExt;
            let signal = status.signal().unwrap_or(0);
            Err(Failure {
                status: if signal == libc::SIGINT {
                    EXIT_INTERRUPTED
                } else {
                    EXIT_INTERNAL
                },
                message: format!("cint: {shown} -m cinterrupts sweep ended by signal {signal}"),
            })
        }
    }
}

/// `cint sweep`'s arguments as `python -m cinterrupts sweep` takes them
/// (the same names).
fn python_args(cmd: &SweepCmd, address: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let input = &cmd.input;
    if let Some(path) = &input.scenario {
        args.push(path.into());
    }
    let mut flag = |name: &str, value: OsString| {
        args.push(name.into());
        args.push(value);
    };
    if let Some(path) = &input.fio {
        flag("--fio", path.into());
    }
    if let Some(device) = &input.device {
        flag("--device", device.into());
    }
    if let Some(host) = &input.host {
        flag("--host", host.into());
    }
    if !input.strategies.is_empty() {
        flag("--strategy", input.strategies.join(",").into());
    }
    for set in &input.sets {
        flag("--set", set.into());
    }
    for vary in &cmd.vary {
        flag("--vary", vary.into());
    }
    if let Some(path) = &cmd.out {
        flag("--out", path.into());
    }
    if let Some(path) = &cmd.csv {
        flag("--csv", path.into());
    }
    flag("--ray", address.into());
    // Last: everything after it is the command line.
    if !input.fio_cmd.is_empty() {
        args.push("--fio-cmd".into());
        args.extend(input.fio_cmd.iter().map(OsString::from));
    }
    args
}
