//! When an end-to-end test may skip: outside CI, a missing QEMU, kernel,
//! busybox or back end is a loud skip; with `CI` set it is a failure.

use crate::backend::BackendKind;
use crate::error::Error;
use crate::run::Prerequisites;

pub use cint_test_support::skip::in_ci;

/// The prerequisites, or `None` (after saying so on stderr) when the test
/// may skip. Panics on any other error, and on a missing piece under CI.
pub fn prerequisites(backend: Result<BackendKind, Error>) -> Option<Prerequisites> {
    match backend.and_then(Prerequisites::find) {
        Ok(pre) => Some(pre),
        Err(Error::Missing(what)) => {
            cint_test_support::skip::missing(&format!(
                "guest end-to-end test needs {what}; run `bash .ci/deps/qemu-guest.sh`"
            ));
            None
        }
        Err(e) => panic!("guest end-to-end prerequisites: {e}"),
    }
}
