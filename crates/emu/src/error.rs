//! The emulator's errors: one line each, because the CLI prints them as is.
//! Each has a [`kind`](EmuError::kind): every one is a refusal of the
//! input or of the machine (exit status 2) except [`EmuError::Internal`],
//! an emulator bug (exit status 1).

use std::fmt;

use cint_report::{EngineError, ErrorKind};

/// Why the emulator could not start, run or accept a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmuError {
    /// The machine lacks the cores the run needs (one device core plus one
    /// per application core).
    NotEnoughCores {
        /// Cores the run needs.
        needed: usize,
        /// Cores this process may use.
        available: usize,
    },
    /// A thread could not be pinned to its core.
    Pinning(String),
    /// The configuration or scenario asks for something the emulator cannot do.
    Config(String),
    /// A key of the scenario asks for what the emulator does not run (a
    /// strategy kind, a guest, an app, a job's key): the command line
    /// names the line where it was written.
    Unsupported {
        /// The dotted scenario key, e.g. `strategy.sched.kind`.
        key: String,
        /// Why, without the key.
        message: String,
    },
    /// The backend could not be set up (file, io_uring).
    Backend(String),
    /// A thread could not be created.
    Thread(String),
    /// The emulated device is shutting down or gone.
    ShutDown,
    /// Every request slot of the client is in use.
    Busy,
    /// The system refused real-time priority for the interrupt handlers
    /// and the configuration requires it ([`Realtime::Require`]).
    ///
    /// [`Realtime::Require`]: crate::Realtime::Require
    NoRealtime(String),
    /// Requests of a job failed during a run, so its figures would describe
    /// failures, not I/O.
    RequestsFailed {
        /// The job.
        job: String,
        /// Its failed requests (submissions refused and completions with
        /// an error).
        failed: u64,
        /// The first failure.
        first: String,
    },
    /// A thread of the emulator panicked (a bug; the message says where).
    Internal(String),
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::NotEnoughCores { needed, available } => write!(
                f,
                "emulator needs {needed} cores (one device core plus the application cores) \
                 but this process may use {available}"
            ),
            EmuError::Pinning(m) => write!(f, "emulator cannot pin a thread: {m}"),
            EmuError::Config(m) => write!(f, "emulator configuration: {m}"),
            EmuError::Unsupported { key, message } => write!(f, "{key}: {message}"),
            EmuError::Backend(m) => write!(f, "emulator backend: {m}"),
            EmuError::Thread(m) => write!(f, "emulator cannot start a thread: {m}"),
            EmuError::ShutDown => f.write_str("emulated device is shut down"),
            EmuError::Busy => f.write_str("every request slot of this client is in flight"),
            EmuError::NoRealtime(why) => write!(
                f,
                "emulator interrupt handlers need real-time priority: {why}; \
                 grant CAP_SYS_NICE (or an RLIMIT_RTPRIO of at least {}), or accept \
                 distorted figures with [emu] realtime = \"prefer\" \
                 (library: DeviceConfig::realtime = Realtime::Prefer)",
                crate::irq::HANDLER_PRIORITY
            ),
            EmuError::RequestsFailed { job, failed, first } => write!(
                f,
                "emulator job {job}: {failed} request(s) failed, the first with: {first}"
            ),
            EmuError::Internal(m) => write!(f, "emulator internal error: {m}"),
        }
    }
}

impl std::error::Error for EmuError {}

/// [`EmuError::Unsupported`] of `key`.
pub(crate) fn unsupported(key: impl Into<String>, message: impl Into<String>) -> EmuError {
    EmuError::Unsupported {
        key: key.into(),
        message: message.into(),
    }
}

impl EmuError {
    /// Refused input (the scenario, the machine, a library call out of
    /// turn), or an emulator bug.
    pub fn kind(&self) -> ErrorKind {
        match self {
            EmuError::Internal(_) => ErrorKind::Internal,
            EmuError::NotEnoughCores { .. }
            | EmuError::Pinning(_)
            | EmuError::Config(_)
            | EmuError::Unsupported { .. }
            | EmuError::Backend(_)
            | EmuError::Thread(_)
            | EmuError::ShutDown
            | EmuError::Busy
            | EmuError::NoRealtime(_)
            | EmuError::RequestsFailed { .. } => ErrorKind::Input,
        }
    }
}

/// The engines' one error type, for callers that run either engine.
impl From<EmuError> for EngineError {
    fn from(e: EmuError) -> EngineError {
        match e {
            EmuError::Unsupported { key, message } => EngineError::input_at(key, message),
            e => EngineError {
                kind: e.kind(),
                key: None,
                message: e.to_string(),
            },
        }
    }
}

/// Why one request failed. Delivered with its completion, never as a hang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoError {
    /// The operating system refused or failed the request (`errno`).
    Os(i32),
    /// Fewer bytes than asked were transferred (a read at or beyond the end
    /// of a file transfers 0).
    Short {
        /// Bytes transferred.
        done: u32,
        /// Bytes asked for.
        wanted: u32,
    },
    /// The device shut down before executing the request.
    Cancelled,
    /// The device gave up waiting for the kernel to finish the request
    /// (io_uring, at shutdown). The kernel may still write its buffer, so
    /// the buffer was leaked, not handed back: [`Completion::buf`] is
    /// `None`, and a C caller's buffer must never be freed or reused.
    ///
    /// [`Completion::buf`]: crate::Completion::buf
    Abandoned,
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Os(errno) => write!(
                f,
                "I/O failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            IoError::Short { done, wanted } => {
                write!(f, "short transfer: {done} of {wanted} bytes")
            }
            IoError::Cancelled => f.write_str("request cancelled by device shutdown"),
            IoError::Abandoned => f.write_str(
                "request abandoned at shutdown while the kernel still held it (buffer leaked)",
            ),
        }
    }
}

impl std::error::Error for IoError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_emulator_bug_is_internal() {
        let bug = EngineError::from(EmuError::Internal("a job thread panicked".into()));
        assert_eq!(bug.kind, ErrorKind::Internal);
        assert_eq!(
            bug.message,
            "emulator internal error: a job thread panicked"
        );
        let refused = EngineError::from(EmuError::NotEnoughCores {
            needed: 2,
            available: 1,
        });
        assert_eq!(refused.kind, ErrorKind::Input);
        assert!(
            refused.message.starts_with("emulator needs 2 cores"),
            "the message is the emulator's own: {}",
            refused.message
        );
    }
}
