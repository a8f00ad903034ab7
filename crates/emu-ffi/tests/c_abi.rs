//! The C ABI seen from C: the committed header matches a fresh cbindgen
//! run, and `examples/c_client.c`, compiled with the system C compiler
//! against that header and this crate's static library, passes its checks.

use std::path::{Path, PathBuf};
use std::process::Command;

const HEADER: &str = "include/cint_emu.h";

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The static library cargo built for this test run. Integration tests
/// live in `<target>/<profile>/deps/`; cargo writes the library there and
/// copies it to `<target>/<profile>/` (no crate depends on this one, so
/// its name carries no hash).
fn static_lib() -> PathBuf {
    let name = "libcint_emu_ffi.a";
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("test binary has a directory");
    [deps.join(name), deps.join("..").join(name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found next to {}", exe.display()))
}

#[test]
fn header_is_current() {
    let fresh_path = Path::new(env!("OUT_DIR")).join("cint_emu.h");
    let fresh = std::fs::read_to_string(&fresh_path).expect("build.rs generated the header");
    let committed_path = crate_dir().join(HEADER);
    if std::env::var_os("CINT_BLESS_HEADER").is_some() {
        std::fs::write(&committed_path, &fresh).expect("header is writable");
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{HEADER} is stale: rerun with CINT_BLESS_HEADER=1 and commit it"
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
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("examples/c_client.c"))
        .arg(static_lib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .status()
        .expect("a C compiler runs");
    assert!(status.success(), "{cc} failed to build the example");
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
