//! Output paths are checked before any work runs: a sweep or a long
//! simulation must not finish only to find it cannot write its result. An
//! unwritable path is the user's input, so it exits 2 like any bad option.

use std::fs::{self, OpenOptions};
use std::path::Path;

use crate::{usage, Failure};

/// Makes sure `dir` can be created and written, leaving nothing behind:
/// a probe file goes into `dir` if it exists, else into its nearest
/// existing ancestor (where the run would create it).
pub(crate) fn check_dir(flag: &str, dir: &Path) -> Result<(), Failure> {
    let refuse = |e: std::io::Error| {
        usage(format!(
            "cint: {flag} {}: cannot write there: {e}",
            dir.display()
        ))
    };
    let existing = dir
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    if !existing.is_dir() {
        return Err(refuse(std::io::Error::other(format!(
            "{} is not a directory",
            existing.display()
        ))));
    }
    let probe = existing.join(format!(".cint-write-check-{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|_| fs::remove_file(&probe))
        .map_err(refuse)
}

/// Makes sure the file `path` can be written (creating its parent
/// directory), without changing a file that is already there.
pub(crate) fn check_file(flag: &str, path: &Path) -> Result<(), Failure> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    parent
        .map_or(Ok(()), fs::create_dir_all)
        .and_then(|()| {
            let existed = path.exists();
            OpenOptions::new().append(true).create(true).open(path)?;
            if !existed {
                fs::remove_file(path)?;
            }
            Ok(())
        })
        .map_err(|e| {
            usage(format!(
                "cint: {flag} {}: cannot write there: {e}",
                path.display()
            ))
        })
}

/// A write after the run failed anyway (the disk filled, the directory
/// went away): still the output path's fault, so status 2.
pub(crate) fn write_error(path: &Path, e: std::io::Error) -> Failure {
    usage(format!("cint: cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritable_places_are_refused_with_the_flag() {
        let e = check_dir("--out", Path::new("/proc/cint-no-such-dir")).unwrap_err();
        assert!(e
            .message
            .starts_with("cint: --out /proc/cint-no-such-dir: cannot write there"));
        let e = check_file("--csv", Path::new("/proc/version/x.csv")).unwrap_err();
        assert!(e.message.contains("--csv"), "{}", e.message);
        let dir = std::env::temp_dir().join(format!("cint-output-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        check_dir("--out", &dir).expect("a temp dir is writable");
        assert!(!dir.exists(), "the check creates nothing");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sub/points.csv");
        check_file("--csv", &file).expect("a new file is writable");
        assert!(!file.exists(), "the check leaves no empty file behind");
        fs::remove_dir_all(dir).unwrap();
    }
}
