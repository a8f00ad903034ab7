//! The one rule for a test that cannot run here.
//!
//! Two cases, told apart by whether CI can be expected to have what is
//! missing:
//! - [`missing`]: a prerequisite CI provides (two CPUs, a tool that
//!   `.ci/deps` installs). Outside CI the test skips, loudly; with `CI` set
//!   it fails, so a CI machine that lost the prerequisite cannot turn the
//!   test into a silent pass.
//! - [`not_here`]: a property of the machine or container that a correct
//!   CI machine may lack (the kernel refusing `SCHED_FIFO`, a filesystem
//!   without `O_DIRECT`). The test checks the behaviour "where the system
//!   allows it", so it skips, loudly, even in CI.
//!
//! Loudly means straight to the process's standard error, not through
//! `eprintln!`: the test harness captures `eprintln!` of a passing test and
//! shows it to nobody, but not a direct write. Every skip line starts with
//! `SKIPPED`, so `cargo test 2>&1 | grep SKIPPED` lists them all.

use std::io::Write as _;

/// Whether `CI` is set to something other than empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// A prerequisite CI provides is missing: fails the test under `CI`;
/// elsewhere writes `SKIPPED: <test>: <what>` where it is seen. The caller
/// returns from the test after it.
///
/// # Panics
/// With `CI` set, always: CI must run the test.
pub fn missing(what: &str) {
    let test = current_test();
    if in_ci() {
        panic!("{test}: {what}, and CI must run this test");
    }
    announce(&format!("SKIPPED: {test}: {what} (with CI set this fails)"));
}

/// The machine does not allow what the test checks, and a correct CI
/// machine may not either: writes `SKIPPED: <test>: <why>` where it is
/// seen, in CI too. The caller returns from the test after it.
pub fn not_here(why: &str) {
    announce(&format!(
        "SKIPPED: {}: {why} (not required of CI)",
        current_test()
    ));
}

/// Whether `have` CPUs are at least the `need`ed ones; if not, the rule
/// of [`missing`] (CI machines have two).
pub fn cpus(have: usize, need: usize) -> bool {
    if have < need {
        missing(&format!("needs {need} CPUs, this process may use {have}"));
    }
    have >= need
}

/// The test's name: the harness names each test's thread after it.
fn current_test() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_string(),
        _ => "a test".to_string(),
    }
}

/// Straight to the file descriptor, past the harness's capture.
fn announce(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "\n*** {line} ***");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_cpus_is_no_skip() {
        assert!(cpus(2, 2));
        assert!(cpus(4, 1));
    }

    #[test]
    fn the_skip_names_the_test() {
        assert_eq!(current_test(), "skip::tests::the_skip_names_the_test");
    }
}
