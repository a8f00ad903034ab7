//! The one error type of scenario loading: a one-line message naming the
//! file, the line (or the `--set` argument) and the dotted key.

use core::fmt;

/// Where an offending value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A 1-based line of the scenario file.
    Line(usize),
    /// A `--set KEY=VALUE` argument, as the user typed it.
    Set(String),
    /// The file as a whole (it could not be read).
    File,
}

/// Why a scenario was refused.
///
/// Displays as one line, e.g.
/// `scenarios/x.toml:14: job.async.iodepth: must be at least 1 (got 0)`, or
/// `scenarios/x.toml: --set job.async.iodepth=0: job.async.iodepth: ...`
/// when the value came from the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file name (or `<string>`).
    pub source: String,
    /// The line or `--set` argument.
    pub origin: Origin,
    /// Dotted key, e.g. `job.async.iodepth`; empty when no key applies.
    pub key: String,
    /// What is wrong, without the location.
    pub message: String,
}

impl ScenarioError {
    /// The 1-based line, when the error points into the file.
    pub fn line(&self) -> Option<usize> {
        match self.origin {
            Origin::Line(n) => Some(n),
            _ => None,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::Line(n) => write!(f, "{}:{n}: ", self.source)?,
            Origin::Set(arg) => write!(f, "{}: --set {arg}: ", self.source)?,
            Origin::File => write!(f, "{}: ", self.source)?,
        }
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        // Messages from serde or the TOML parser may span lines; the
        // contract is one line per error.
        let mut first = true;
        for part in self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            if !first {
                f.write_str(" ")?;
            }
            f.write_str(part)?;
            first = false;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}
