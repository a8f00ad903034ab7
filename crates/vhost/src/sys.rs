//! Thin wrappers over the Linux calls the workers need: the clock and a
//! non-blocking timerfd (the one of `vmm-sys-util` blocks on read, and a
//! re-armed timer whose readiness epoll already reported would then hang
//! the worker).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::OnceLock;
use std::time::Instant;

use cint_policy::Nanos;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds on the monotonic clock since the back end started: the
/// policies' clock.
pub fn now() -> Nanos {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as Nanos
}

/// A one-shot monotonic timer whose expiry makes its descriptor readable.
#[derive(Debug)]
pub struct Timer {
    fd: File,
}

impl Timer {
    /// A disarmed timer.
    pub fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create takes no pointers; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and nothing else owns it.
        Ok(Timer {
            fd: unsafe { File::from_raw_fd(fd) },
        })
    }

    /// Expires `after` nanoseconds from now (at least 1 ns: zero would
    /// disarm), or never with `None`.
    pub fn set(&self, after: Option<Nanos>) -> io::Result<()> {
        let value = match after {
            Some(ns) => {
                let ns = ns.max(1);
                libc::timespec {
                    tv_sec: (ns / 1_000_000_000) as libc::time_t,
                    tv_nsec: (ns % 1_000_000_000) as libc::c_long,
                }
            }
            None => libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // SAFETY: both pointers are valid for the call (the old value is
        // not asked for); the descriptor is a timerfd we own.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Consumes an expiry, if any (never blocks).
    pub fn consume(&self) {
        let mut ticks = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer we own; a
        // non-blocking timerfd returns EAGAIN when nothing expired, which
        // is fine to ignore.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), ticks.as_mut_ptr().cast(), ticks.len()) };
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Logs at most a few lines per second per source, and says how many it
/// dropped, so that a hostile guest cannot flood the host's log.
#[derive(Debug, Default)]
pub struct LogLimiter {
    window_start: Nanos,
    in_window: u32,
    dropped: u64,
}

/// Lines per second a [`LogLimiter`] lets through.
const LINES_PER_SECOND: u32 = 5;

impl LogLimiter {
    /// Logs `line` to stderr unless the budget of this second is spent.
    pub fn log(&mut self, now: Nanos, line: impl FnOnce() -> String) {
        if now.saturating_sub(self.window_start) >= 1_000_000_000 {
            if self.dropped > 0 {
                eprintln!("cint vhost: ({} similar lines not shown)", self.dropped);
            }
            self.window_start = now;
            self.in_window = 0;
            self.dropped = 0;
        }
        if self.in_window < LINES_PER_SECOND {
            self.in_window += 1;
            eprintln!("cint vhost: {}", line());
        } else {
            self.dropped += 1;
        }
    }
}
