//! What the importer tells the user: the error that refuses a file and the
//! warnings it collects, both naming the file and, when one line is to
//! blame, the line.

use std::fmt;

/// Why a fio file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioError {
    /// The file (or `<string>`).
    pub file: String,
    /// 1-based line, when one line is to blame.
    pub line: Option<usize>,
    /// What is wrong, one line.
    pub message: String,
}

impl FioError {
    /// An error that one line of `file` is to blame for.
    pub(super) fn at_line(file: &str, line: usize, message: String) -> FioError {
        FioError {
            file: file.into(),
            line: Some(line),
            message,
        }
    }

    /// An error about `file` as a whole (or about the arguments it was
    /// imported with).
    pub(super) fn whole_file(file: &str, message: String) -> FioError {
        FioError {
            file: file.into(),
            line: None,
            message,
        }
    }
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for FioError {}

/// The file being imported and the warnings gathered so far, so every
/// stage words its errors and warnings the same way.
pub(super) struct Diagnostics<'a> {
    file: &'a str,
    warnings: Vec<String>,
}

impl<'a> Diagnostics<'a> {
    pub(super) fn new(file: &'a str) -> Diagnostics<'a> {
        Diagnostics {
            file,
            warnings: Vec::new(),
        }
    }

    /// The file's name as messages give it.
    pub(super) fn file(&self) -> &'a str {
        self.file
    }

    pub(super) fn err(&self, line: usize, message: String) -> FioError {
        FioError::at_line(self.file, line, message)
    }

    pub(super) fn err_file(&self, message: String) -> FioError {
        FioError::whole_file(self.file, message)
    }

    pub(super) fn warn(&mut self, line: usize, message: String) {
        self.warnings
            .push(format!("{}:{}: warning: {}", self.file, line, message));
    }

    /// An error about job `job`, at `line`: `job 'NAME': WHAT`.
    pub(super) fn job_err(&self, job: &str, line: usize, what: impl fmt::Display) -> FioError {
        self.err(line, format!("job '{job}': {what}"))
    }

    /// A warning about job `job`, at `line`: `job 'NAME': WHAT`.
    pub(super) fn job_warn(&mut self, job: &str, line: usize, what: impl fmt::Display) {
        self.warn(line, format!("job '{job}': {what}"));
    }

    pub(super) fn into_warnings(self) -> Vec<String> {
        self.warnings
    }
}
