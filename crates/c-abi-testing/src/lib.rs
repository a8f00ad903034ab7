//! # cint-c-abi-testing: what every C ABI crate's tests check
//!
//! `cint-policy-ffi` and `cint-emu-ffi` each commit a cbindgen header and a
//! C example. Their tests check the same two things, with the helpers here:
//! the committed header equals the one `build.rs` just generated
//! ([`assert_header_current`]), and the example compiles with the system C
//! compiler against that header and the crate's static library
//! ([`compile_c_example`], [`static_lib`]) and then passes its own checks.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The static library `lib<crate>.a` that cargo built for the calling test
/// binary. Integration tests live in `<target>/<profile>/deps/`; cargo
/// writes the library there or in `<target>/<profile>/`. Its name carries
/// no hash only because the crate also builds a `cdylib` and no crate
/// depends on it: a plain `staticlib` depended upon gets a hashed name.
pub fn static_lib(crate_name: &str) -> PathBuf {
    let name = format!("lib{}.a", crate_name.replace('-', "_"));
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("test binary has a directory");
    [deps.join(&name), deps.join("..").join(&name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found next to {}", exe.display()))
}

/// Fails unless the committed header `committed` equals `generated` (the
/// copy `build.rs` wrote into `OUT_DIR`). With `CINT_BLESS_HEADER` set it
/// first overwrites the committed copy, to refresh it after an ABI change.
pub fn assert_header_current(generated: &Path, committed: &Path) {
    let fresh = std::fs::read_to_string(generated).expect("build.rs generated the header");
    if std::env::var_os("CINT_BLESS_HEADER").is_some() {
        std::fs::write(committed, &fresh).expect("header is writable");
    }
    let current = std::fs::read_to_string(committed).unwrap_or_default();
    assert!(
        current == fresh,
        "{} is stale: rerun the test with CINT_BLESS_HEADER=1 and commit it",
        committed.display()
    );
}

/// Compiles the C program `source` with `$CC` (default `cc`) as strict
/// C11 with warnings as errors, against the headers in `include` and the
/// static library `lib`, into `exe`.
pub fn compile_c_example(source: &Path, include: &Path, lib: &Path, exe: &Path) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut compile = Command::new(&cc);
    compile
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include)
        .arg(source)
        .arg(lib)
        .arg("-o")
        .arg(exe);
    // The Rust standard library inside the static library needs these.
    if cfg!(target_os = "linux") {
        compile.args(["-lpthread", "-ldl", "-lm", "-lrt"]);
    } else if cfg!(target_os = "macos") {
        compile.args(["-framework", "Security", "-lm"]);
    }
    let status = compile
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "compiling {} failed", source.display());
}
