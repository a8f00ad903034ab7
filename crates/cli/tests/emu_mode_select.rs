//! `cint emu` of a `mode-select` scenario, end to end: the real binary,
//! a real (short) emulator run, its JSON result read back. Invariants
//! only, no timing: the run shares a two-core machine with everything
//! else.

mod common;

use cint_test_support::{skip, temp_dir, DirFiles};
use common::cint_in;

const SCENARIO: &str = r#"
name = "emu-select"
duration = "50ms"
warmup = "5ms"
[device]
model = "optane-900p"
[host]
model = "xeon-e3-1230v5"
[[strategy]]
name = "select"
kind = "mode-select"
[[strategy]]
name = "irq"
kind = "none"
[[job]]
name = "small"
engine = "pvsync2"
hipri = true
direct = true
rw = "randread"
bs = "4k"
[[job]]
name = "large"
engine = "pvsync2"
hipri = true
direct = true
rw = "randread"
bs = "256k"
"#;

#[test]
fn cint_emu_runs_mode_select_and_reports_sane_fields() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !skip::cpus(cpus, 2) {
        return;
    }
    let dir = temp_dir("emu-select");
    dir.write("s.toml", SCENARIO);
    let o = cint_in(dir.path(), &["emu", "s.toml", "--json"]);
    assert_eq!(o.status, 0, "stderr: {}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("a JSON result");
    assert_eq!(doc["substrate"], "emu");
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    let select = &results[0];
    assert_eq!(select["strategy"], "select");
    assert_eq!(select["kind"], "mode-select");
    let mut ios = 0;
    for job in select["jobs"].as_array().expect("jobs") {
        let n = job["ios"].as_u64().expect("ios");
        assert!(n > 0, "{job}");
        ios += n;
        let mean = job["lat_ns"]["mean"].as_f64().expect("mean latency");
        let max = job["lat_ns"]["max"].as_f64().expect("max latency");
        assert!(mean > 0.0 && mean <= max, "{job}");
        assert!(job["iops"].as_f64().expect("iops") > 0.0, "{job}");
    }
    // (Thousands on an idle machine; how many is the machine's business.)
    assert!(ios > 0);
    // Interrupts only for the requests that asked for one: at most one
    // per completed request (per completion under `none`), plus those of
    // the requests completing at the window's edges.
    let interrupts = select["interrupts"].as_u64().expect("interrupts");
    assert!(interrupts <= ios + ios / 100 + 2, "{interrupts} for {ios}");
    let util = select["cpu_util"].as_f64().expect("cpu_util");
    assert!((0.0..=1.0 + 1e-9).contains(&util), "{util}");
    let energy = &select["energy"];
    assert!(energy["power_w"].as_f64().expect("power") > 0.0, "{energy}");
    assert!(
        energy["bytes_per_joule"].as_f64().expect("B/J") > 0.0,
        "{energy}"
    );
    // The other strategy ran as before, one interrupt per completion.
    assert_eq!(results[1]["kind"], "none");
    assert!(results[1]["interrupts"].as_u64().expect("interrupts") > 0);
}
