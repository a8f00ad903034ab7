//! The C ABI seen from C: the committed header matches a fresh cbindgen
//! run, and `examples/cinterrupts_queue.c`, compiled with the system C
//! compiler against that header and this crate's static library, passes
//! its checks.

use std::path::Path;
use std::process::Command;

use cint_c_abi_testing::{assert_header_current, compile_c_example, static_lib};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn header_is_current() {
    assert_header_current(
        &Path::new(env!("OUT_DIR")).join("cint_policy.h"),
        &crate_dir().join("include/cint_policy.h"),
    );
}

#[test]
fn c_program_drives_a_cinterrupts_queue() {
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cinterrupts_queue");
    compile_c_example(
        &crate_dir().join("examples/cinterrupts_queue.c"),
        &crate_dir().join("include"),
        &static_lib("cint-policy-ffi"),
        &exe,
    );
    let output = Command::new(&exe).output().expect("run the C example");
    assert!(
        output.status.success(),
        "C example failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("all checks passed"));
}
