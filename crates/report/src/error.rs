//! Why an engine gave no result: the one error type every engine returns
//! (the simulator, the emulator, the lab's workflow over either), so the
//! command line can tell a refused input (exit status 2) from an engine bug
//! (exit status 1) by its kind, never by its wording.

use std::fmt;

/// Who is at fault when an engine gives no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input asks for what the engine cannot do (an inconsistent
    /// scenario, too few cores for the emulator, a file the backend cannot
    /// open): the user can fix it. The command line exits 2.
    Input,
    /// The engine caught itself in a bug (a violated run-time invariant, a
    /// thread that panicked): nothing the user did. The command line
    /// exits 1 and asks for a report.
    Internal,
}

/// An engine's error: a [`kind`](ErrorKind) and one line for the user.
///
/// Lives beside [`RunResult`](crate::RunResult) because it is the other
/// outcome of a run, and because every engine and the command line
/// already depend on this crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    /// Refused input or engine bug.
    pub kind: ErrorKind,
    /// The scenario's dotted key at fault (`strategy.vs.kind`), when one
    /// is: the command line names its line, as the loader does
    /// (`Scenario::refusal` in cint-scenario).
    pub key: Option<String>,
    /// What went wrong, for the user, without the key.
    pub message: String,
}

impl EngineError {
    /// The input is refused (the command line exits 2).
    pub fn input(message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Input,
            key: None,
            message: message.into(),
        }
    }

    /// The input is refused because of the value of `key`, a dotted key
    /// of the scenario (the command line exits 2 and names its line).
    pub fn input_at(key: impl Into<String>, message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Input,
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// An engine bug (the command line exits 1).
    pub fn internal(message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Internal,
            key: None,
            message: message.into(),
        }
    }

    /// Whether this is an engine bug rather than a refused input.
    pub fn is_internal(&self) -> bool {
        self.kind == ErrorKind::Internal
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_comes_from_the_constructor_not_the_words() {
        let bug = EngineError::internal("job 'a': bs must be positive");
        let refusal = EngineError::input("invariant violated (x): time went backwards");
        assert!(bug.is_internal());
        assert!(!refusal.is_internal());
        assert_eq!(refusal.kind, ErrorKind::Input);
        assert_eq!(bug.to_string(), "job 'a': bs must be positive");
        let keyed = EngineError::input_at("strategy.a.kind", "not here");
        assert_eq!(keyed.to_string(), "strategy.a.kind: not here");
        assert_eq!(keyed.key.as_deref(), Some("strategy.a.kind"));
    }
}
