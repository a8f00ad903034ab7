//! Block-trace replay in the simulator (docs/TRACES.md): open loop issues
//! each request a constant host path after its scaled trace time however
//! long the trace (no drift), closed loop keeps its depth, the hint rules
//! apply per engine, the trace's own latencies are reported as they are,
//! and the same seed and trace give the same bytes.

use std::path::Path;

use cint_report::RunResult;
use cint_trace::encode::{self, Io};

/// A trace of `n` 4 KiB reads every `gap_ns`, the MSR response time of
/// each `latency_ns`.
fn even(n: u64, gap_ns: u64, latency_ns: u64) -> Vec<Io> {
    (0..n)
        .map(|i| Io {
            time: i * gap_ns,
            offset: i * 4096,
            bytes: 4096,
            write: false,
            stream: 0,
            cpu: 0,
            done: Some(i * gap_ns + latency_ns),
        })
        .collect()
}

fn run(dir: &Path, name: &str, bytes: &[u8], job: &str, duration: &str) -> RunResult {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let text = format!(
        "name = \"replay\"\nduration = \"{duration}\"\n[host]\ncores = 2\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[strategy]]\nname = \"cint\"\nkind = \"cinterrupts\"\n\
         [[job]]\nname = \"t\"\ntrace = {:?}\n{job}",
        path.display().to_string()
    );
    let sc = cint_scenario::load_str(&text, "replay.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn open_loop_issues_on_time_however_long_the_trace() {
    let dir = cint_test_support::temp_dir("trace-replay");
    let mut lags = Vec::new();
    for (n, speed) in [(1_000u64, "1"), (20_000, "1"), (20_000, "2")] {
        // 50 us apart: the thread is idle at every release.
        let iolog = encode::iolog_v3(&even(n, 50_000, 0));
        let job = format!("trace_speed = {speed}\n");
        let r = run(dir.path(), "even.iolog", iolog.as_bytes(), &job, "1100ms");
        for s in &r.results {
            let rep = s.jobs[0].trace.as_ref().expect("the replay's report");
            assert_eq!((rep.issued, rep.requests), (n, n));
            assert_eq!(s.jobs[0].ios, n, "every request measured");
            let lag = rep
                .issue_lag_ns
                .as_ref()
                .expect("open loop reports its lag");
            lags.push((lag.min, lag.max));
        }
    }
    // The host's path from the timer's interrupt to the submission call
    // is the whole lag, the same at the 20,000th request as at the first
    // few: nothing accumulates along the trace. (The very first request
    // is issued by a thread already on its core, without a wake-up.)
    let (_, max) = lags[0];
    assert!(max > 0 && max < 5_000, "lag {lags:?}");
    for &(min, m) in &lags {
        assert_eq!(m, max, "lags {lags:?}");
        assert!(max - min <= 200, "lags {lags:?}");
    }
}

#[test]
fn closed_loop_keeps_its_depth_in_order() {
    let dir = cint_test_support::temp_dir("trace-replay");
    // Released all at once: only the depth limits the replay.
    let iolog = encode::iolog_v3(&even(4_000, 0, 0));
    let mut iops = Vec::new();
    for depth in [1, 8] {
        let job = format!("trace_mode = \"closed\"\ntrace_depth = {depth}\n");
        let r = run(dir.path(), "burst.iolog", iolog.as_bytes(), &job, "20ms");
        let j = &r.results[0].jobs[0];
        let rep = j.trace.as_ref().unwrap();
        assert_eq!(rep.mode, "closed");
        assert!(rep.issue_lag_ns.is_none());
        iops.push(j.iops);
    }
    // The device has parallel units to spare: eight in flight serve
    // more than twice the requests of one (the one core's submission and
    // reaping path is then the limit).
    assert!(iops[1] > 2.0 * iops[0], "{iops:?}");
}

#[test]
fn hints_follow_the_engine_of_each_call() {
    let dir = cint_test_support::temp_dir("trace-replay");
    let iolog = encode::iolog_v3(&even(500, 40_000, 0));
    for (engine, urgent) in [("psync", true), ("pvsync2", true), ("libaio", false)] {
        let job = format!("engine = \"{engine}\"\n");
        let r = run(dir.path(), "h.iolog", iolog.as_bytes(), &job, "25ms");
        let cint = &r.results[1];
        assert!(cint.interrupts > 0);
        // A blocking read is Urgent (docs/ALGORITHMS.md section 5): its
        // interrupt is immediate; io_submit's requests are not.
        let expect = if urgent { cint.interrupts } else { 0 };
        assert_eq!(cint.urgent_interrupts, expect, "{engine}");
    }
}

#[test]
fn the_traces_own_latencies_are_reported_beside_the_models() {
    let dir = cint_test_support::temp_dir("trace-replay");
    let csv = encode::msr_csv(&even(300, 30_000, 123_400));
    let r = run(dir.path(), "l.csv", csv.as_bytes(), "", "20ms");
    for s in &r.results {
        let j = &s.jobs[0];
        let own = j.trace.as_ref().unwrap().trace_lat_ns.as_ref().unwrap();
        assert_eq!(own.n, j.ios);
        // The histogram keeps three significant digits.
        assert!((own.mean - 123_400.0).abs() < 130.0, "{own:?}");
        assert!(j.lat_ns.mean < 50_000.0, "the simulated Optane is faster");
    }
    // blktrace's C events: Q to C.
    let blk = encode::blktrace(&even(300, 30_000, 77_000), 8, true, 8);
    let r = run(dir.path(), "l.blk", &blk, "cpu = 0\n", "20ms");
    let own = r.results[0].jobs[0].trace.as_ref().unwrap();
    assert_eq!(own.format, "blktrace v8");
    let mean = own.trace_lat_ns.as_ref().unwrap().mean;
    assert!((mean - 77_000.0).abs() < 80.0, "{mean}");
}

#[test]
fn same_seed_same_trace_same_bytes() {
    let dir = cint_test_support::temp_dir("trace-replay");
    let mut ios = even(2_000, 7_000, 20_000);
    for (i, io) in ios.iter_mut().enumerate() {
        io.stream = (i % 3) as u32;
        io.write = i % 4 == 0;
        io.bytes = 512 * (1 + (i as u32 * 7) % 32);
    }
    let blk = encode::blktrace(&ios, 7, false, 0);
    let job = "cpus = [0, 1]\n";
    let a = run(dir.path(), "d.blk", &blk, job, "15ms");
    let b = run(dir.path(), "d.blk", &blk, job, "15ms");
    assert_eq!(
        cint_report::to_json(&a).unwrap(),
        cint_report::to_json(&b).unwrap()
    );
}

#[test]
fn syncs_and_trims_the_model_cannot_replay_are_reported() {
    let dir = cint_test_support::temp_dir("trace-dropped");
    let mut iolog = encode::iolog_v3(&even(100, 50_000, 0));
    iolog.push_str("5001 dev0 sync 0 0\n5002 dev0 trim 0 4096\n5003 dev0 datasync 0 0\n");
    let r = run(dir.path(), "mixed.iolog", iolog.as_bytes(), "", "10ms");
    let rep = r.results[0].jobs[0]
        .trace
        .as_ref()
        .expect("the replay's report");
    assert_eq!((rep.syncs_not_replayed, rep.trims_not_replayed), (2, 1));
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"syncs_not_replayed\":2"), "{json}");
    // A trace of reads and writes only says nothing of them.
    let plain = run(
        dir.path(),
        "plain.iolog",
        encode::iolog_v3(&even(10, 50_000, 0)).as_bytes(),
        "",
        "10ms",
    );
    let json = serde_json::to_string(&plain).unwrap();
    assert!(!json.contains("not_replayed"), "{json}");
}
