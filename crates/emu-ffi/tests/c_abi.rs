//! The C ABI seen from C: the committed header matches a fresh cbindgen
//! run, and `examples/c_client.c`, compiled with the system C compiler
//! against that header and this crate's static library, passes its checks.

use std::path::Path;
use std::process::Command;

use cint_c_abi_testing::{assert_header_current, compile_c_example, static_lib};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn header_is_current() {
    assert_header_current(
        &Path::new(env!("OUT_DIR")).join("cint_emu.h"),
        &crate_dir().join("include/cint_emu.h"),
    );
}

#[test]
fn c_program_submits_with_hints_and_waits() {
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    if cpus.len() < 2 {
        eprintln!(
            "skipped: the emulator needs 2 CPUs, this process has {}",
            cpus.len()
        );
        return;
    }
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cint_emu_c_client");
    compile_c_example(
        &crate_dir().join("examples/c_client.c"),
        &crate_dir().join("include"),
        &static_lib("cint-emu-ffi"),
        &exe,
    );
    let out = Command::new(&exe)
        .arg(cpus.last().expect("a cpu").to_string())
        .arg(cpus[0].to_string())
        .output()
        .expect("example runs");
    assert!(
        out.status.success(),
        "example failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok:"));
}
