//! fio's two offloaded example job files (Debian's `fio-examples`
//! package, installed by `.ci/deps/fio-examples.sh`) through `cint emu`,
//! end to end: the import, the emulator's worker threads, the JSON
//! result. Invariants only, with room for a loaded two-core machine: each
//! strategy completes requests, no faster than the job's rate, and at a
//! good share of it.

mod common;

use std::path::Path;

use cint_test_support::skip;
use common::cint_in;

/// Where Debian's fio-examples package puts the job files.
const EXAMPLES: &str = "/usr/share/doc/fio/examples";

#[test]
fn fios_offloaded_examples_run_on_the_emulator_at_their_rate() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !skip::cpus(cpus, 2) {
        return;
    }
    let dir = Path::new(EXAMPLES);
    if !dir.is_dir() {
        skip::missing(&format!(
            "{EXAMPLES} is missing (install Debian's fio-examples package, or run \
             bash .ci/deps/fio-examples.sh); fio's offloaded examples were not emulated"
        ));
        return;
    }
    // fixed-rate-submission: 1 000 requests a second; the Poisson one, 50
    // (a 400 ms run sees about 20 of them).
    for (file, rate, duration) in [
        ("fixed-rate-submission.fio", 1_000.0, "200ms"),
        ("poisson-rate-submission.fio", 50.0, "400ms"),
    ] {
        let path = dir.join(file);
        let o = cint_in(
            Path::new("."),
            &[
                "emu",
                "--fio",
                path.to_str().expect("a UTF-8 path"),
                "--set",
                &format!("duration={duration}"),
                "--set",
                "warmup=0ms",
                "--json",
            ],
        );
        assert_eq!(o.status, 0, "{file}: {}", o.stderr);
        assert!(!o.stderr.contains("panicked"), "{file}: {}", o.stderr);
        let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("a JSON result");
        assert_eq!(doc["substrate"], "emu");
        let results = doc["results"].as_array().expect("results");
        assert_eq!(results.len(), 3, "{file}: none, adaptive and cinterrupts");
        for r in results {
            let job = &r["jobs"][0];
            let iops = job["iops"].as_f64().expect("iops");
            assert!(job["ios"].as_u64().expect("ios") > 0, "{file}: {job}");
            // A Poisson process's count over a short window spreads by its
            // square root (about 20 requests here): twice its mean bounds
            // it; the fixed rate's schedule, a request's worth.
            let most = if rate < 100.0 {
                rate * 2.0
            } else {
                rate * 1.05
            };
            assert!(
                iops <= most && iops >= rate / 3.0,
                "{file}, {}: {iops} requests a second at a rate of {rate}",
                r["strategy"]
            );
        }
    }
}
