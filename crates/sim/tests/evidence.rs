//! The measurements behind host costs (docs/evidence/, quoted in
//! docs/HOST-COSTS.md) stay runnable: the C program compiles without a
//! warning and runs to its fit, and fio accepts and runs the job file.
//! What they print is not checked: a time on a shared machine is not a
//! test, and the figures in the docs say where and when they were taken.

use std::path::{Path, PathBuf};
use std::process::Command;

fn evidence(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/evidence")
        .join(name)
}

#[test]
fn the_io_getevents_measurement_compiles_and_runs() {
    let dir = cint_test_support::temp_dir("evidence");
    let exe = dir.path().join("io_getevents_per_event");
    let cc = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(evidence("io_getevents_per_event.c"))
        .output()
        .expect("a C compiler (cc) is a prerequisite, as for the C ABI examples");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&exe).output().expect("runs");
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        out.lines().filter(|l| l.contains(" events: mean ")).count(),
        7,
        "{out}"
    );
    assert!(out.contains("ns per event"), "{out}");
}

#[test]
fn fio_runs_the_generator_split_job_file() {
    let fio = Command::new("fio")
        .arg("--number_ios=2000")
        .arg("--output-format=terse")
        .arg(evidence("fio-generator-split.fio"))
        .output();
    let Ok(out) = fio else {
        cint_test_support::skip::missing("fio not found (install it with .ci/deps/fio.sh)");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Terse output: one line per job, its name third.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.split(';').nth(2) == Some("split")),
        "{text}"
    );
}
