//! Ctrl-C during a sweep: the first SIGINT asks the sweep to stop starting
//! points, so the finished ones are still written; a second one kills the
//! process as usual (the handler resets itself when it runs).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The SIGINT handler, installed while this value lives.
pub(crate) struct CatchSigint {
    previous: libc::sigaction,
}

impl CatchSigint {
    /// Installs the handler; `None` if the system refused (the sweep then
    /// runs as before: Ctrl-C ends it, losing the unwritten points).
    pub(crate) fn install() -> Option<Self> {
        INTERRUPTED.store(false, Ordering::SeqCst);
        // SAFETY: a zeroed sigaction is a valid value (no handler, empty
        // mask, no flags) that we fill in before use.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        // SAFETY: as above.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live, initialised sigaction values;
        // the handler only stores to an atomic.
        let rc = unsafe { libc::sigaction(libc::SIGINT, &action, &mut previous) };
        (rc == 0).then_some(CatchSigint { previous })
    }

    /// Set once a SIGINT arrived.
    pub(crate) fn flag(&self) -> &'static AtomicBool {
        &INTERRUPTED
    }
}

impl Drop for CatchSigint {
    fn drop(&mut self) {
        // SAFETY: restores the disposition saved by `install`.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.previous, std::ptr::null_mut());
        }
    }
}
