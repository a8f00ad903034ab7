//! The C ABI seen from C: the committed header matches a fresh cbindgen
//! run, and `examples/cinterrupts_queue.c`, compiled with the system C
//! compiler against that header and this crate's static library, passes
//! its checks.

use std::path::{Path, PathBuf};
use std::process::Command;

const HEADER: &str = "include/cint_policy.h";

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The static library cargo built for this test run. Integration tests
/// live in `<target>/<profile>/deps/`; cargo writes the library there and
/// copies it to `<target>/<profile>/`, whatever `CARGO_TARGET_DIR` is.
fn static_lib() -> PathBuf {
    let name = if cfg!(windows) {
        "cint_policy_ffi.lib"
    } else {
        "libcint_policy_ffi.a"
    };
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("test binary has a directory");
    [deps.join(name), deps.join("..").join(name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found next to {}", exe.display()))
}

#[test]
fn header_is_current() {
    let fresh_path = Path::new(env!("OUT_DIR")).join("cint_policy.h");
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
fn c_program_drives_a_cinterrupts_queue() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let exe = out_dir.join("cinterrupts_queue");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut compile = Command::new(&cc);
    compile
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("examples/cinterrupts_queue.c"))
        .arg(static_lib())
        .arg("-o")
        .arg(&exe);
    // The Rust standard library inside the static library needs these.
    if cfg!(target_os = "linux") {
        compile.args(["-lpthread", "-ldl", "-lm", "-lrt"]);
    } else if cfg!(target_os = "macos") {
        compile.args(["-framework", "Security", "-lm"]);
    }
    let status = compile
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "compiling the C example failed");
    let output = Command::new(&exe).output().expect("run the C example");
    assert!(
        output.status.success(),
        "C example failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("all checks passed"));
}
