//! Ctrl-C during a sweep: the first SIGINT asks the sweep to stop starting
//! points, so the finished ones are still written; a second one kills the
//! process as usual. Copies of the first that arrive with it are one
//! interrupt, not two: `timeout -s INT` signals the process and then its
//! process group, and a terminal's Ctrl-C reaches the group, so one
//! request to stop can come twice within microseconds, where no hand
//! presses Ctrl-C twice within [`SAME_INTERRUPT_NS`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// When the first SIGINT came, on the monotonic clock; 0 before it.
static FIRST_AT_NS: AtomicU64 = AtomicU64::new(0);

/// SIGINTs this close to the first are copies of it.
const SAME_INTERRUPT_NS: u64 = 50_000_000;

/// The monotonic clock in nanoseconds; `clock_gettime` is
/// async-signal-safe (POSIX.1-2008, signal-safety(7)).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec; CLOCK_MONOTONIC exists on
    // every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

extern "C" fn on_sigint(_: libc::c_int) {
    // Only atomics, clock_gettime, sigaction and raise: all
    // async-signal-safe.
    // The first one's time is set before it counts as an interrupt, in
    // one step: two copies can run their handlers at once, on two
    // threads, and the second must find the first's time, never none.
    let now = monotonic_ns().max(1);
    match FIRST_AT_NS.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            INTERRUPTED.store(true, Ordering::SeqCst);
            return;
        }
        Err(first) if now.saturating_sub(first) < SAME_INTERRUPT_NS => return,
        Err(_) => {}
    }
    // A second Ctrl-C: end the process as SIGINT's default action does.
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask; restoring
    // the default and raising the signal again are async-signal-safe.
    unsafe {
        let default: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGINT, &default, std::ptr::null_mut());
        libc::raise(libc::SIGINT);
    }
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
        FIRST_AT_NS.store(0, Ordering::SeqCst);
        // SAFETY: a zeroed sigaction is a valid value (no handler, empty
        // mask, no flags) that we fill in before use.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: as above.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live, initialised sigaction values;
        // the handler is async-signal-safe.
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
