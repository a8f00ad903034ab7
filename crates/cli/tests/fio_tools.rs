//! `cint sim --fio-json`: fio's own post-processing tools, unchanged, read
//! our documents. fio's `fio_jsonplus_clat2csv` (Debian's fio package)
//! turns the json+ bins into CSV rows whose counts must be our histogram
//! counts; fio-plot (PyPI) must draw charts from them without an error.
//!
//! The tools come from `.ci/deps/fio.sh` and `.ci/deps/fio-plot.sh`.
//! Without them the tests say so loudly and pass, except under `CI`,
//! where a missing tool is a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cint_test_support::process::output_within;
use cint_test_support::{skip, temp_dir, TempDir};

use serde_json::Value;

/// A libaio job mixing reads and writes, and a psync reader, on one core:
/// both directions, slat and no slat, a think time for user CPU.
const SCENARIO: &str = "name = \"fio-tools\"\nseed = 3\nduration = \"20ms\"\nwarmup = \"2ms\"\n\
    [host]\ncores = 1\n\
    [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
    [[strategy]]\nname = \"cint 6us\"\nkind = \"cinterrupts\"\ndelta = \"6us\"\n\
    [[job]]\nname = \"mixed\"\nengine = \"libaio\"\nrw = \"randrw\"\nrwmixread = 70\n\
    iodepth = 8\nbatch = 4\nbatch_complete_min = 4\nthink = \"2us\"\n\
    [[job]]\nname = \"reader\"\nengine = \"psync\"\nrw = \"randread\"\n";

/// `None` (after a loud message) when a tool is missing outside CI.
fn require(tool: &str, found: Option<PathBuf>) -> Option<PathBuf> {
    if found.is_some() {
        return found;
    }
    skip::missing(&format!(
        "{tool} not found: install it with .ci/deps/fio.sh and .ci/deps/fio-plot.sh \
         (or point CINT_FIO_JSONPLUS_CLAT2CSV / CINT_FIO_PLOT at it)"
    ));
    None
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

/// The virtual environment `.ci/deps/fio-plot.sh` makes (the same
/// defaults: `CINT_TOOLS_DIR`, else `HOME`'s cache, `/root` without `HOME`).
fn tools_venv() -> Option<PathBuf> {
    let base = std::env::var_os("CINT_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            Path::new(&home).join(".cache/cint-tools")
        });
    let dir = base.join("fio-plot");
    dir.join("bin/python").is_file().then_some(dir)
}

fn clat2csv() -> Option<PathBuf> {
    std::env::var_os("CINT_FIO_JSONPLUS_CLAT2CSV")
        .map(PathBuf::from)
        .or_else(|| on_path("fio_jsonplus_clat2csv"))
}

fn fio_plot() -> Option<PathBuf> {
    std::env::var_os("CINT_FIO_PLOT")
        .map(PathBuf::from)
        .or_else(|| {
            tools_venv()
                .map(|d| d.join("bin/fio-plot"))
                .filter(|f| f.is_file())
        })
        .or_else(|| on_path("fio-plot"))
}

/// The Python that runs fio's script: the tools' environment (it has
/// `six`, which the script imports), else the system's.
fn python() -> PathBuf {
    tools_venv().map_or_else(|| PathBuf::from("python3"), |d| d.join("bin/python"))
}

/// Runs a command to its end (two minutes at most), returning its
/// standard output; panics with its standard error on failure.
fn run(cmd: &mut Command) -> String {
    let what = format!("{cmd:?}");
    let out = output_within(&what, cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

struct Run {
    dir: TempDir,
    /// `cint sim --json` document.
    result: Value,
}

fn simulate(tag: &str) -> Run {
    let dir = temp_dir(&format!("fio-tools-{tag}"));
    let file = dir.path().join("s.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = run(Command::new(env!("CARGO_BIN_EXE_cint"))
        .env("SOURCE_DATE_EPOCH", "1795511306")
        .arg("sim")
        .arg(&file)
        .arg("--json")
        .arg("--fio-json")
        .arg(dir.path().join("fio")));
    Run {
        dir,
        result: serde_json::from_str(&out).expect("one JSON document"),
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn fio_jsonplus_clat2csv_reads_our_bins_back() {
    let Some(script) = require("fio_jsonplus_clat2csv", clat2csv()) else {
        return;
    };
    let r = simulate("csv");
    for (s, stem) in [(0, "none"), (1, "cint_6us")] {
        let json_path = r.dir.path().join("fio").join(format!("{stem}.json"));
        let doc = read_json(&json_path);
        let stub = r.dir.path().join(format!("{stem}.csv"));
        run(Command::new(python())
            .arg(&script)
            .arg(&json_path)
            .arg(&stub));
        let validated = run(Command::new(python())
            .arg(&script)
            .arg(&json_path)
            .arg(&stub)
            .arg("--validate"));
        assert_eq!(validated.matches("validated").count(), 2, "{validated}");
        for (j, job) in doc["jobs"].as_array().unwrap().iter().enumerate() {
            let csv =
                std::fs::read_to_string(r.dir.path().join(format!("{stem}_job{j}.csv"))).unwrap();
            let counts = csv_counts(&csv);
            let ours = &r.result["results"][s]["jobs"][j];
            assert_eq!(job["jobname"], ours["name"]);
            // Every completed I/O is in the CSV once per latency kind, in
            // its direction, and the directions add up to the result's
            // I/O count.
            let ios = ours["ios"].as_u64().unwrap();
            assert!(ios > 0, "job {j} of strategy {s} completed I/O");
            let by = |col: &str| counts.get(col).copied().unwrap_or(0);
            assert_eq!(by("read_clat_ns") + by("write_clat_ns"), ios);
            assert_eq!(by("read_lat_ns") + by("write_lat_ns"), ios);
            for dir in ["read", "write"] {
                let n = job[dir]["total_ios"].as_u64().unwrap();
                assert_eq!(by(&format!("{dir}_clat_ns")), n, "{dir} clat");
                assert_eq!(by(&format!("{dir}_lat_ns")), n, "{dir} lat");
                assert_eq!(job[dir]["clat_ns"]["N"].as_u64(), Some(n));
            }
            let engine = job["job options"]["ioengine"].as_str().unwrap();
            if engine == "libaio" {
                assert!(by("read_clat_ns") > 0 && by("write_clat_ns") > 0, "mixed");
                assert_eq!(by("read_slat_ns") + by("write_slat_ns"), ios, "slat");
                assert!(
                    job["usr_cpu"].as_f64().unwrap() > 0.0,
                    "think time is user CPU"
                );
            } else {
                assert_eq!(by("read_slat_ns") + by("write_slat_ns"), 0, "sync: no slat");
                assert_eq!(by("write_clat_ns"), 0, "a reader");
            }
            assert!(job["sys_cpu"].as_f64().unwrap() > 0.0);
        }
    }
}

/// Sum of each `<dir>_<kind>_count` column of fio_jsonplus_clat2csv's CSV,
/// keyed `<dir>_<kind>` (e.g. `read_clat_ns`).
fn csv_counts(csv: &str) -> BTreeMap<String, u64> {
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    let mut sums = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        for (col, cell) in header.iter().zip(line.split(',')) {
            let Some(key) = col.strip_suffix("_count") else {
                continue;
            };
            if let Ok(n) = cell.trim().parse::<u64>() {
                *sums.entry(key.to_string()).or_insert(0) += n;
            }
        }
    }
    sums
}

#[test]
fn fio_plot_draws_our_documents() {
    let Some(plot) = require("fio-plot", fio_plot()) else {
        return;
    };
    let r = simulate("plot");
    // fio-plot reads every JSON file of a directory; one strategy's.
    let input = r.dir.path().join("plot-input");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(r.dir.path().join("fio/none.json"), input.join("none.json")).unwrap();
    for (flag, name) in [("-l", "bars.png"), ("-H", "histogram.png")] {
        let png = r.dir.path().join(name);
        run(Command::new(&plot)
            .current_dir(r.dir.path())
            .arg("-i")
            .arg(&input)
            .args([
                "-T", "cint", flag, "-d", "8", "-n", "1", "-r", "randrw", "-f", "read",
            ])
            .arg("-o")
            .arg(&png));
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG"), "{name} is a PNG");
        assert!(bytes.len() > 10_000, "{name} has a chart in it");
    }
}

/// Needs no tool: the same seed, scenario and `SOURCE_DATE_EPOCH` give
/// the same bytes, and an unwritable directory is refused before the run.
#[test]
fn fio_documents_are_reproducible_and_their_directory_is_checked_first() {
    let a = simulate("same-a");
    let b = simulate("same-b");
    for stem in ["none", "cint_6us"] {
        let read =
            |r: &Run| std::fs::read(r.dir.path().join("fio").join(format!("{stem}.json"))).unwrap();
        assert_eq!(read(&a), read(&b), "{stem}.json differs between two runs");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_cint"))
        .arg("sim")
        .arg(a.dir.path().join("s.toml"))
        .args(["--fio-json", "/proc/cint-no-such-dir"])
        .output()
        .expect("the binary runs");
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("cint: --fio-json /proc/cint-no-such-dir: cannot write there"));
    assert!(o.stdout.is_empty(), "nothing ran");
    // Two strategies that would write the same file.
    let clash = a.dir.path().join("clash.toml");
    std::fs::write(
        &clash,
        SCENARIO.replace("name = \"none\"", "name = \"cint_6us\""),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cint"))
        .arg("sim")
        .arg(&clash)
        .arg("--fio-json")
        .arg(a.dir.path().join("clash"))
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("would both be written to cint_6us.json"),
        "{stderr}"
    );
    assert!(!a.dir.path().join("clash").exists(), "nothing ran");
}
