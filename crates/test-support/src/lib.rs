//! # cint-test-support: what the test suites share
//!
//! What every crate's tests needed and each wrote for itself:
//! - [`process::Watched`]: a child process polled against a deadline, and
//!   killed and reaped when dropped, so neither a hang nor a failed
//!   assertion leaves a process behind;
//! - [`temp_dir`]: a fresh directory removed when dropped (the `tempfile`
//!   crate's);
//! - [`skip`]: the one rule for a test whose prerequisite is missing: say
//!   so where it is seen, and fail instead when `CI` is set;
//! - [`scenario`]: scenario builders for the engines' tests, so they do not
//!   depend on the scenario files' parser;
//! - [`energy`]: what a physical core's energy result must say of its
//!   hardware threads;
//! - [`latency`]: what a job's latency summary must say of itself;
//! - [`rng::Rng`]: the deterministic generator of the generative tests.
//!
//! Not published: only the workspace's tests and test harnesses use it.

#![warn(missing_docs)]

pub mod energy;
pub mod latency;
pub mod process;
pub mod rng;
pub mod scenario;
pub mod skip;

pub use tempfile::TempDir;

use std::path::Path;

/// A fresh, empty directory named after `tag` (so a leftover one says which
/// test made it), removed with its contents when dropped.
pub fn temp_dir(tag: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("cint-{tag}-"))
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temporary directory for {tag}: {e}"))
}

/// Files in a test's directory, named as command lines take them.
pub trait DirFiles {
    /// Writes `text` to `name` in the directory (creating the folders on
    /// the way); returns the file's path as text.
    fn write(&self, name: &str, text: &str) -> String;
    /// The path of `name` in the directory, as text.
    fn arg(&self, name: &str) -> String;
}

impl<D: AsRef<Path>> DirFiles for D {
    fn write(&self, name: &str, text: &str) -> String {
        let path = self.as_ref().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("creating {}: {e}", parent.display()));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path.display().to_string()
    }

    fn arg(&self, name: &str) -> String {
        self.as_ref().join(name).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_directory_holds_files_and_goes_away() {
        let dir = temp_dir("support");
        let root = dir.path().to_path_buf();
        assert!(root
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("cint-support-"));
        let file = dir.write("a/b.txt", "text");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "text");
        assert_eq!(dir.arg("a/b.txt"), file);
        drop(dir);
        assert!(!root.exists());
    }
}
