//! What the binary's test files share: `cint` run as a process.

use std::path::Path;
use std::process::Command;

/// A finished `cint` process: its exit status and its output.
pub struct Out {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args` in `dir` (relative paths in `args`, and
/// what it writes under the working directory, are `dir`'s).
pub fn cint_in(dir: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_cint"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs");
    Out {
        status: o.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(o.stdout).expect("utf8 stdout"),
        stderr: String::from_utf8(o.stderr).expect("utf8 stderr"),
    }
}
