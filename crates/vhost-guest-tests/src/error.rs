//! Why a guest run could not be made or did not finish.

use std::path::PathBuf;

/// The errors of building and running a guest.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A prerequisite is not installed (QEMU, the kernel package, busybox,
    /// a C compiler, the `cint` binary): the test may skip on it outside CI.
    #[error("missing prerequisite: {0}")]
    Missing(String),
    /// A file or process operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or program involved.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A step ran but did not succeed (compiler, back end, QEMU, the
    /// guest's output).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// An I/O error on `path` while doing `what`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
