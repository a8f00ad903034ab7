//! The controller's transfer pipe (docs/MODEL.md, "Device model";
//! docs/HOST-COSTS.md, "The shared controller"): transfers in progress
//! take 4 KiB pages in turn, so a small transfer waits for a page of each
//! large one, not for a whole one; the pipe still never moves more than
//! the device's bandwidth, and both directions share it.

use cint_report::RunResult;
use cint_scenario::Scenario;

/// A 4 KiB reader and a large-request job (`big_rw`, `big_bs`), each
/// synchronous on a core of its own, under `binding` units.
fn mix(big_rw: &str, big_bs: &str, binding: &str) -> (Scenario, RunResult) {
    let text = format!(
        r#"
name = "pipe-mix"
duration = "50ms"
warmup = "5ms"
[device]
model = "optane-900p"
unit_binding = "{binding}"
[host]
cores = 2
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "small"
engine = "psync"
rw = "randread"
bs = "4k"
cpus = [0]
[[job]]
name = "big"
engine = "psync"
rw = "{big_rw}"
bs = "{big_bs}"
cpus = [1]
"#
    );
    let sc = cint_scenario::load_str(&text, "pipe-mix.toml", &[]).expect("valid scenario");
    let r = cint_sim::run(&sc).expect("runs");
    (sc, r)
}

/// Fraction of the measured window the jobs' transfers took on the pipe.
fn pipe_share(sc: &Scenario, r: &RunResult, big_write: bool) -> f64 {
    let jobs = &r.results[0].jobs;
    let read_bw = sc.device.read.bandwidth as f64;
    let big_bw = if big_write {
        sc.device.write.bandwidth
    } else {
        sc.device.read.bandwidth
    } as f64;
    // Bytes per second over bytes per second of the pipe: seconds of
    // pipe per second.
    jobs[0].bw_bytes as f64 / read_bw + jobs[1].bw_bytes as f64 / big_bw
}

#[test]
fn small_reads_pass_large_ones_on_the_pipe_pooled_or_striped() {
    for binding in ["pooled", "striped"] {
        let (sc, r) = mix("randread", "1m", binding);
        let jobs = &r.results[0].jobs;
        let (small, big) = (jobs[0].iops, jobs[1].iops);
        // Served whole in arrival order, each 4 KiB read waited behind a
        // 1 MiB transfer (about 420 us on this device) and the two jobs
        // ran in lockstep, 2 270 each a second.
        assert!(
            small > 20.0 * big,
            "{binding}: {small} small reads/s against {big} large"
        );
        // The large reads still keep the pipe nearly busy, and the two
        // together never take more of it than the time that passed.
        let share = pipe_share(&sc, &r, false);
        assert!(
            (0.85..=1.0).contains(&share),
            "{binding}: the jobs' transfers took {share} of the pipe"
        );
        // A small read waits for at most a page of the large transfer
        // (1.6 us) besides its own media access and the host's path.
        let mean_us = jobs[0].lat_ns.mean / 1e3;
        assert!(mean_us < 20.0, "{binding}: small reads take {mean_us} us");
    }
}

#[test]
fn a_large_writes_data_does_not_hold_small_reads_back_and_shares_the_budget() {
    let (sc, r) = mix("randwrite", "1m", "pooled");
    let jobs = &r.results[0].jobs;
    let (small, big) = (jobs[0].iops, jobs[1].iops);
    assert!(big > 100.0, "the writes progress: {big}/s");
    assert!(
        small > 20.0 * big,
        "{small} small reads/s against {big} large writes"
    );
    // Reads and writes share one pipe: their transfer times add up to at
    // most the window.
    let share = pipe_share(&sc, &r, true);
    assert!(share <= 1.0, "the mix took {share} of the pipe");
}
