//! Block-trace replay on the emulator's threads (docs/TRACES.md), by the
//! simulator's rules: every request of each stream once, in trace order,
//! with its size and direction; closed loop at its depth, open loop not
//! before its release; the replay's entry of the result as the
//! simulator's.

mod common;

use cint_policy::{MS, US};
use cint_trace::encode::{self, Io};
use common::*;

/// `n` requests `gap_ns` apart over two streams, alternating: reads of
/// 4 KiB and writes of 8 KiB, the trace's own latency 100 us each.
fn mixed(n: u64, gap_ns: u64) -> Vec<Io> {
    (0..n)
        .map(|i| Io {
            time: i * gap_ns,
            offset: i * 8192,
            bytes: if i % 2 == 0 { 4096 } else { 8192 },
            write: i % 2 == 1,
            stream: (i % 4 >= 2) as u32,
            cpu: 0,
            done: Some(i * gap_ns + 100 * US),
        })
        .collect()
}

/// The emulator's run of trace `ios` (an MSR CSV, which carries the
/// latencies) with `extra` job keys, on a fast device without jitter.
fn replay(ios: &[Io], extra: &str, duration: &str) -> cint_emu::RunDetail {
    let dir = cint_test_support::temp_dir("emu-trace");
    let path = dir.path().join("t.csv");
    std::fs::write(&path, encode::msr_csv(ios)).expect("write the trace");
    let text = format!(
        "name = \"replay\"\nduration = \"{duration}\"\nwarmup = \"0ns\"\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[job]]\nname = \"t\"\ntrace = {:?}\n{extra}",
        path.display().to_string()
    );
    let mut sc =
        cint_scenario::load_str(&text, "replay.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    sc.device = device(10 * US, 4);
    cint_emu::run_detailed(&sc).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn closed_loop_issues_every_request_once_with_its_size_and_direction() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let ios = mixed(400, 0);
    let d = replay(&ios, "trace_mode = \"closed\"\ntrace_depth = 4\n", "300ms");
    let job = &d.result.results[0].jobs[0];
    let rep = job.trace.as_ref().expect("the replay's entry");
    assert_eq!((rep.mode.as_str(), rep.depth), ("closed", 4));
    assert_eq!((rep.issued, rep.requests), (400, 400));
    let detail = &d.strategies[0].jobs[0];
    assert_eq!((detail.submitted, detail.completed), (400, 400));
    assert_eq!(detail.strays, 0);
    // Each direction's bytes are the trace's: 200 reads of 4 KiB, 200
    // writes of 8 KiB, split over the two streams' threads.
    let fio = job.fio.as_ref().expect("fio's figures");
    assert_eq!(fio.threads, 2);
    assert_eq!((fio.read.ios, fio.read.bytes), (200, 200 * 4096));
    assert_eq!((fio.write.ios, fio.write.bytes), (200, 200 * 8192));
    // The trace's own latencies are reported beside the emulator's.
    let own = rep.trace_lat_ns.as_ref().expect("the trace's latencies");
    assert_eq!(own.n, 400);
    assert!((own.mean - 100_000.0).abs() < 1_000.0, "{}", own.mean);
    assert!(rep.issue_lag_ns.is_none(), "closed loop has no releases");
}

#[test]
fn open_loop_issues_no_request_before_its_release() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // 60 requests 2 ms apart: the last is released 118 ms after the
    // job's start, so the job cannot end before then, however fast the
    // device; every request is measured, with its issue lag.
    let ios = mixed(60, 2 * MS);
    let d = replay(&ios, "", "400ms");
    let job = &d.result.results[0].jobs[0];
    let rep = job.trace.as_ref().expect("the replay's entry");
    assert_eq!((rep.mode.as_str(), rep.speed), ("open", Some(1.0)));
    assert_eq!((rep.issued, job.ios), (60, 60));
    assert!(rep.issue_lag_ns.is_some(), "open loop reports its lag");
    // Its end, from the run's start, which is no later than the job's.
    let (_, _, end) = d.strategies[0].jobs[0].span.expect("it ran");
    assert!(
        end >= 118 * MS,
        "the replay ended {} ms in, before its last release",
        end / MS
    );
    assert!(end < 390 * MS, "it ended with its trace");
}
