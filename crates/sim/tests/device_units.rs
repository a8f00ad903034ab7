//! How requests find a parallel unit (`device.unit_binding`,
//! docs/MODEL.md): pooled units take any waiting request; striped units
//! each serve only the requests bound to them, so requests in flight
//! collide and the rate climbs with the depth instead of stopping at a
//! knee.

use cint_report::RunResult;

const READER: &str = r#"
name = "units"
duration = "50ms"
warmup = "5ms"
[device]
model = "optane-p4800x"
# Slow media on few units: the device, not the host, sets the rate.
parallel_units = 4
read.base = "20us"
[host]
cores = 2
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "reader"
engine = "libaio"
rw = "randread"
bs = "4k"
iodepth = 1
cpus = [0, 1]
numjobs = 2
"#;

fn run(sets: &[&str]) -> RunResult {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = cint_scenario::load_str(READER, "units.toml", &sets).expect("valid scenario");
    cint_sim::run(&sc).expect("runs")
}

fn iops(binding: &str, depth: u32) -> f64 {
    run(&[
        &format!("device.unit_binding={binding}"),
        &format!("job.reader.iodepth={depth}"),
    ])
    .results[0]
        .total_iops()
}

#[test]
fn one_request_per_unit_never_waits_whatever_the_binding() {
    // One request in flight never waits, wherever it is bound.
    let json = |binding: &str| {
        let r = run(&[
            &format!("device.unit_binding={binding}"),
            "job.reader.numjobs=1",
            "job.reader.cpus=[0]",
        ]);
        serde_json::to_string(&r).expect("serialises")
    };
    assert_eq!(json("pooled"), json("striped"));
}

#[test]
fn striped_units_collide_below_saturation_and_reach_the_same_ceiling() {
    // Eight requests in flight on four units: pooled, the units are the
    // bound (4 / 20 us = 200K); striped, some wait at a busy unit while
    // another idles.
    let (pooled, striped) = (iops("pooled", 4), iops("striped", 4));
    assert!(pooled > 0.98 * 200_000.0, "{pooled}");
    assert!(striped < 0.9 * pooled, "{striped} vs {pooled}");
    // The rate climbs with the depth ...
    let by_depth: Vec<f64> = [1, 2, 4, 32].iter().map(|&d| iops("striped", d)).collect();
    assert!(by_depth.windows(2).all(|w| w[1] > w[0]), "{by_depth:?}");
    // ... towards the units' ceiling, never above it.
    assert!(
        by_depth[3] > 0.95 * pooled && by_depth[3] <= pooled,
        "{by_depth:?}"
    );
}

#[test]
fn striped_binding_is_seeded() {
    let a = run(&["device.unit_binding=striped", "job.reader.iodepth=4"]);
    let b = run(&["device.unit_binding=striped", "job.reader.iodepth=4"]);
    let c = run(&[
        "device.unit_binding=striped",
        "job.reader.iodepth=4",
        "seed=2",
    ]);
    let text = |r: &RunResult| serde_json::to_string(r).expect("serialises");
    assert_eq!(text(&a), text(&b));
    assert_ne!(text(&a), text(&c));
}
