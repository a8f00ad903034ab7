//! Generates the C header with cbindgen into `$OUT_DIR/cint_emu.h`. The
//! committed copy in `include/` is what C users and the example compile
//! against; the test `header_is_current` fails when the two differ (run it
//! with `CINT_BLESS_HEADER=1` to refresh the committed copy).

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is valid");
    let bindings = cbindgen::Builder::new()
        .with_src(crate_dir.join("src/lib.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen can parse src/lib.rs");
    bindings.write_to_file(out_dir.join("cint_emu.h"));
}
