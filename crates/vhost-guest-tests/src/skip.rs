//! When an end-to-end test may skip: outside CI, a missing QEMU, kernel,
//! busybox or back end is a loud skip; with `CI` set it is a failure.

use crate::backend::BackendKind;
use crate::error::Error;
use crate::run::Prerequisites;
use std::io::Write as _;

/// Whether `CI` is set to something other than empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The prerequisites, or `None` (after saying so on stderr) when the test
/// may skip. Panics on any other error, and on a missing piece under CI.
pub fn prerequisites(backend: Result<BackendKind, Error>) -> Option<Prerequisites> {
    match backend.and_then(Prerequisites::find) {
        Ok(pre) => Some(pre),
        Err(Error::Missing(what)) if !in_ci() => {
            // Straight to stderr: the test harness captures `eprintln!` of
            // passing tests, and a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED: guest end-to-end test needs {what}; run `bash .ci/deps/qemu-guest.sh` (with CI set this fails) ***\n"
            );
            None
        }
        Err(e) => panic!("guest end-to-end prerequisites: {e}"),
    }
}
