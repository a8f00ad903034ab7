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
        Ok(Timer {
            // SAFETY: the descriptor was just created and nothing else owns it.
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

/// Hands every queued submission entry to the kernel. `io_uring_enter`
/// may take fewer than are queued: it stops at the first entry that fails
/// to start (which completes at once with its error) and leaves the rest
/// in the ring, where they wait for the next `enter`. A worker that called
/// it only when it had pushed something new would leave them there while
/// the guest waits on them, so the ring itself, not a count of pushes,
/// says when everything is in. Interrupted calls are retried; `EAGAIN` and
/// `EBUSY` (completions must be reaped first) leave the rest for the next
/// call, which every event handler makes after reaping.
pub fn submit_all(ring: &mut io_uring::IoUring) -> io::Result<()> {
    while !ring.submission().is_empty() {
        match ring.submit() {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EAGAIN)
                    || e.raw_os_error() == Some(libc::EBUSY) =>
            {
                return Ok(())
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, squeue, IoUring};

    /// An entry that fails to start stops the kernel's pass over the ring;
    /// the entries behind it are still submitted, each exactly once.
    #[test]
    fn entries_behind_one_that_fails_to_start_are_submitted_too() {
        let Ok(mut ring) = IoUring::new(8) else {
            eprintln!("io_uring unavailable: test skipped");
            return;
        };
        // A no-op asking for a provided buffer, which no-ops cannot take:
        // refused when the kernel prepares it.
        let refused = opcode::Nop::new()
            .build()
            .flags(squeue::Flags::BUFFER_SELECT)
            .user_data(1);
        for entry in [
            refused,
            opcode::Nop::new().build().user_data(2),
            opcode::Nop::new().build().user_data(3),
        ] {
            // SAFETY: no-ops reference no memory.
            unsafe { ring.submission().push(&entry) }.expect("room in the ring");
        }
        submit_all(&mut ring).expect("submits");
        assert!(ring.submission().is_empty(), "entries left in the ring");
        let mut seen: Vec<(u64, i32)> = Vec::new();
        for _ in 0..100 {
            seen.extend(ring.completion().map(|c| (c.user_data(), c.result())));
            if seen.len() >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        seen.sort_unstable();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(
            seen[0].1 < 0,
            "the refused entry completes with an error: {seen:?}"
        );
        assert_eq!((seen[1].1, seen[2].1), (0, 0), "{seen:?}");
    }
}
