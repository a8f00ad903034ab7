//! Typed errors of the back end, split by who is to blame: the user's
//! command line (exit status 2) or the back end itself (exit status 1).

use std::fmt;

/// Why the back end could not start or had to stop.
#[derive(Debug)]
pub enum VhostError {
    /// A command-line value is wrong: the message names the option.
    BadInput(String),
    /// Something the user could not have prevented failed.
    Internal(String),
}

impl VhostError {
    /// The process exit status for this error: 2 for bad input, 1 otherwise.
    pub fn exit_status(&self) -> i32 {
        match self {
            VhostError::BadInput(_) => 2,
            VhostError::Internal(_) => 1,
        }
    }

    pub(crate) fn bad(message: impl Into<String>) -> Self {
        VhostError::BadInput(message.into())
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        VhostError::Internal(message.into())
    }
}

impl fmt::Display for VhostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VhostError::BadInput(m) | VhostError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for VhostError {}
