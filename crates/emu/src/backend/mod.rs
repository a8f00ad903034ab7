//! Request executors run by the device core: [`synthetic`] times requests
//! from a device profile by spinning on the clock; [`uring`] performs them
//! on a real file with io_uring.

pub mod synthetic;
pub mod uring;

use std::os::fd::RawFd;

use cint_policy::Nanos;
use cint_scenario::DeviceProfile;

use crate::error::EmuError;
use crate::shared::Accepted;

/// Which executor the emulated device uses.
#[derive(Clone, Debug, PartialEq)]
pub enum BackendConfig {
    /// Service times from `profile`, jitter drawn from a generator seeded
    /// with `seed`. No data moves.
    Synthetic {
        /// Device profile (timings, parallel units, jitter).
        profile: DeviceProfile,
        /// Seed of the jitter generator.
        seed: u64,
    },
    /// O_DIRECT reads and writes through io_uring.
    IoUring {
        /// The file or block device.
        file: FileSource,
    },
}

/// Where the io_uring backend's file comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileSource {
    /// Opened read-write with `O_DIRECT` by the device, closed at shutdown.
    Path(String),
    /// A descriptor the caller owns and keeps open (or not: closing it
    /// makes requests fail with `EBADF`, never hang).
    Fd(RawFd),
}

/// A request the backend finished: bytes transferred or `-errno`.
pub(crate) type Finished = (Accepted, i64);

/// The backend the device core drives.
pub(crate) enum Backend {
    Synthetic(synthetic::Synthetic),
    IoUring(uring::Uring),
}

impl Backend {
    /// Builds the backend for at most `capacity` requests in flight.
    pub fn new(
        config: &BackendConfig,
        capacity: usize,
        hooks: uring::UringHooks,
    ) -> Result<Backend, EmuError> {
        Ok(match config {
            BackendConfig::Synthetic { profile, seed } => {
                Backend::Synthetic(synthetic::Synthetic::new(profile, *seed, capacity)?)
            }
            BackendConfig::IoUring { file } => {
                Backend::IoUring(uring::Uring::new(file, capacity, hooks)?)
            }
        })
    }

    /// Starts a request at `now`.
    pub fn submit(&mut self, request: Accepted, now: Nanos, done: &mut Vec<Finished>) {
        match self {
            Backend::Synthetic(s) => s.submit(request, now),
            Backend::IoUring(u) => u.submit(request, done),
        }
    }

    /// Collects requests finished by `now`.
    pub fn poll(&mut self, now: Nanos, done: &mut Vec<Finished>) {
        match self {
            Backend::Synthetic(s) => s.poll(now, done),
            Backend::IoUring(u) => u.poll(done),
        }
    }

    /// Ends every request in flight: the synthetic device cancels them; the
    /// io_uring backend waits for the kernel (whose buffers they use).
    pub fn shutdown(&mut self, done: &mut Vec<Finished>) {
        match self {
            Backend::Synthetic(s) => s.cancel_all(done),
            Backend::IoUring(u) => u.wait_all(done),
        }
    }
}
