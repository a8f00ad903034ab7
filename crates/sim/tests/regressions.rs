//! Regressions of runs that once stalled or aborted on valid input (issue
//! #10). Each scenario is written as a user would write it, and each test
//! asserts progress over the whole measured window, not only a clean exit.

use cint_report::RunResult;

fn sim(text: &str, sets: &[&str]) -> RunResult {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = cint_scenario::load_str(text, "regression.toml", &sets).expect("valid scenario");
    cint_sim::run(&sc).expect("the simulator runs a valid scenario")
}

/// io_uring's wait looks at the completion ring before it sleeps: a
/// completion posted while the call was being entered is not lost.
#[test]
fn io_uring_at_depth_two_keeps_completing_for_the_whole_run() {
    const URING: &str = r#"
name = "uring-qd2"
warmup = "0ns"
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "ring"
engine = "io_uring"
rw = "randread"
iodepth = 2
batch = 2
"#;
    let short = sim(URING, &["duration=50ms"]);
    let long = sim(URING, &["duration=200ms"]);
    let (a, b) = (short.results[0].jobs[0].ios, long.results[0].jobs[0].ios);
    // Two requests in flight on a ~10 us device: well over 100 K IOPS.
    assert!(
        short.results[0].jobs[0].iops > 100_000.0,
        "{a} I/Os in 50 ms"
    );
    // Steady: four times the window, four times the I/Os (it used to stop
    // after about 20 ms, so the long run did no more than the short one).
    let ratio = b as f64 / a as f64;
    assert!(
        (3.8..=4.2).contains(&ratio),
        "{a} I/Os in 50 ms, {b} in 200 ms"
    );
}

/// A competitor that arrives after the running thread outlived the
/// shortened slice ends the slice now, not in the past.
#[test]
fn many_large_sync_readers_beside_a_busy_loop_run_to_the_end() {
    const SLICE: &str = r#"
name = "slice-end"
duration = "100ms"
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "big"
engine = "psync"
rw = "read"
bs = "1m"
numjobs = 6
[[job]]
name = "spin"
kind = "cpu"
"#;
    let r = sim(SLICE, &[]);
    let s = &r.results[0];
    assert!(
        s.jobs[0].ios > 100,
        "the readers progress: {}",
        s.jobs[0].ios
    );
    assert!(
        s.jobs[1].cpu_util > 0.5,
        "the busy loop gets the core the readers leave"
    );
}

/// vic-sched without guests to take a schedule from would be vic under
/// another name: it is refused with the reason instead.
#[test]
fn vic_sched_is_refused_until_guests_are_modelled_never_run_as_vic() {
    const VIC_SCHED: &str = r#"
name = "vic-sched"
duration = "10ms"
[[strategy]]
name = "sched"
kind = "vic-sched"
[[job]]
name = "aio"
engine = "libaio"
iodepth = 16
"#;
    let sc = cint_scenario::load_str(VIC_SCHED, "v.toml", &[]).expect("valid scenario");
    let e = cint_sim::run(&sc).expect_err("refused");
    assert!(e.to_string().contains("vic-sched"), "{e}");
    assert!(e.to_string().contains("scheduling state"), "{e}");
    assert!(!e.is_internal(), "a refusal of the input, exit 2");
    let vic = VIC_SCHED.replace("kind = \"vic-sched\"", "kind = \"vic\"");
    let sc = cint_scenario::load_str(&vic, "v.toml", &[]).expect("valid scenario");
    assert!(cint_sim::run(&sc).is_ok(), "plain vic runs");
}

/// A policy may legitimately hold a completion past the end of the run
/// (QD1, `thr` above the requests in flight, a long `delta`); the result
/// then says which queue held how many and for how long, instead of
/// showing bare zeros.
#[test]
fn completions_held_past_the_end_are_reported_not_shown_as_bare_zeros() {
    const HELD: &str = r#"
name = "held"
duration = "50ms"
[[strategy]]
name = "none"
kind = "none"
[[strategy]]
name = "long"
kind = "adaptive"
delta = "1s"
thr = 4
[[job]]
name = "qd1"
engine = "psync"
rw = "randread"
"#;
    let r = sim(HELD, &[]);
    assert!(r.results[0].jobs[0].ios > 1_000, "none progresses");
    assert_eq!(r.results[1].jobs[0].ios, 0, "the held read never returns");
    assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
    let (job, queue) = (&r.notes[0], &r.notes[1]);
    assert!(
        job.starts_with("strategy 'long': job 'qd1' completed no I/O")
            && job.contains("is posted, waiting for an interrupt"),
        "{job}"
    );
    assert!(
        queue.contains("strategy 'long': queue 0 held 1 posted completion"),
        "{queue}"
    );
    assert!(queue.contains("next deadline is"), "{queue}");
    let table = cint_report::to_table(&r);
    assert!(table.contains("note: strategy 'long'"), "{table}");
    // A short hold of ordinary coalescing is not worth a note.
    let quick = sim(HELD, &["strategy.long.delta=6us"]);
    assert!(quick.notes.is_empty(), "{:?}", quick.notes);
}

/// A rate-limited thread with every request in flight has nothing to
/// submit when its next token comes: it waits for completions, it does not
/// spin on the core.
#[test]
fn a_rate_limited_thread_with_a_full_queue_sleeps_instead_of_spinning() {
    const RATE: &str = r#"
name = "rate-full"
duration = "50ms"
[device]
model = "p3700"
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "w"
engine = "libaio"
rw = "write"
bs = "1m"
iodepth = 4
rate_iops = 100000
"#;
    let r = sim(RATE, &[]);
    let job = &r.results[0].jobs[0];
    assert!(job.ios > 0, "it progresses");
    assert!(
        job.cpu_util < 0.2,
        "it waits, not spins: {} of the core",
        job.cpu_util
    );
}

/// fio commits a partial batch before it waits for completions
/// (ioengines.c): a job whose batch is its whole depth keeps submitting
/// what its free slots allow. It used to wait for a full batch of free
/// slots that only its own held completions could free, and with a long
/// `delta` both it and a synchronous job on its core stalled.
#[test]
fn a_batch_as_deep_as_the_queue_is_submitted_in_part_and_both_jobs_progress() {
    const BATCH: &str = r#"
name = "batch-stall"
duration = "50ms"
[[strategy]]
name = "adaptive"
kind = "adaptive"
delta = "1s"
thr = 4
[[job]]
name = "aio"
engine = "libaio"
rw = "randread"
iodepth = 512
batch = 512
batch_complete_min = 1
[[job]]
name = "sync"
engine = "psync"
rw = "randread"
"#;
    let r = sim(BATCH, &[]);
    let s = &r.results[0];
    assert!(
        s.jobs[0].ios > 1_000,
        "the batch job progresses: {}",
        s.jobs[0].ios
    );
    assert!(
        s.jobs[1].ios > 100,
        "the sync job progresses: {}",
        s.jobs[1].ios
    );
}

/// A reap call hands out at most `batch_complete_max` events, by default
/// `batch_complete_min` as in fio; a larger maximum lets one call take
/// more, so fewer calls are made for the same completions.
#[test]
fn batch_complete_max_bounds_the_events_one_reap_call_hands_out() {
    const REAP: &str = r#"
name = "reap-max"
duration = "20ms"
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "aio"
engine = "libaio"
rw = "randread"
iodepth = 64
batch = 8
batch_complete_min = 1
"#;
    let one = sim(REAP, &[]);
    let many = sim(REAP, &["job.aio.batch_complete_max=64"]);
    let (a, b) = (&one.results[0].jobs[0], &many.results[0].jobs[0]);
    assert!(a.ios > 1_000 && b.ios > 1_000, "{} {}", a.ios, b.ios);
    // One event per call costs a system call per completion: more CPU per
    // I/O than reaping everything that is ready at once.
    let cpu_per_io = |j: &cint_report::JobResult| j.cpu_util / j.ios as f64;
    assert!(
        cpu_per_io(a) > cpu_per_io(b),
        "max 1: {} per IO, max 64: {} per IO",
        cpu_per_io(a),
        cpu_per_io(b)
    );
}

/// The transfer rate is device-wide: 1 MiB sequential reads at depth 32
/// on a p3700 move its 2.8 GB/s, not 34 parallel units times 2.8 GB/s
/// (about 70 GB/s before the pipe was shared).
#[test]
fn large_reads_at_depth_move_the_devices_bandwidth_not_a_multiple_of_it() {
    const SEQ: &str = r#"
name = "seq-1m"
duration = "50ms"
[device]
model = "p3700"
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "seq"
engine = "libaio"
rw = "read"
bs = "1m"
iodepth = 32
batch = 8
"#;
    let r = sim(SEQ, &[]);
    let bw = r.results[0].jobs[0].bw_bytes as f64;
    assert!(
        (2.5e9..=2.85e9).contains(&bw),
        "{bw} B/s against the profile's 2.8 GB/s"
    );
}

/// Issue #18's fuzz46: an io_uring job that does not poll, under
/// hybrid-poll, once left posted completions with nobody to deliver them
/// (the run held them to its end and said so). Linux polls per request:
/// those requests complete by interrupts under the strategy's named
/// interrupt policy, for the whole window.
#[test]
fn unpolled_jobs_under_hybrid_poll_complete_by_interrupts_for_the_whole_run() {
    const FUZZ46: &str = r#"
name = "fuzz46"
seed = 8606581131532109638
duration = "37ms"
warmup = "0s"
[device]
model = "optane-p4800x"
jitter = "exponential"
parallel_units = 2
[host]
model = "xeon-e5-2660v4"
cores = 2
[[strategy]]
name = "s0-none"
kind = "none"
[[strategy]]
name = "s1-hybrid-poll"
kind = "hybrid-poll"
sleep = "9620ns"
[[job]]
name = "j0"
engine = "io_uring"
rw = "randrw"
bs = 4096
iodepth = 256
batch = 52
batch_complete_min = 1
cpu = 0
numjobs = 2
rate_iops = 518143
rwmixread = 67
[[job]]
name = "j1"
engine = "libaio"
rw = "randrw"
bs = 16384
iodepth = 2
batch = 2
batch_complete_min = 2
cpu = 1
numjobs = 2
rwmixread = 80
[[job]]
name = "j2"
engine = "psync"
rw = "read"
bs = 131072
iodepth = 1
batch = 1
batch_complete_min = 1
cpu = 1
numjobs = 2
[[job]]
name = "j3"
engine = "pvsync2"
rw = "read"
bs = 512
iodepth = 817
batch = 221
batch_complete_min = 1
cpu = 1
numjobs = 1
hint = "urgent"
rate_iops = 1000
"#;
    let short = sim(FUZZ46, &[]);
    let long = sim(FUZZ46, &["duration=111ms"]);
    for r in [&short, &long] {
        for s in &r.results {
            for job in &s.jobs {
                assert!(job.ios > 0, "{} {}: no progress", s.strategy, job.name);
            }
        }
        assert!(
            !r.notes
                .iter()
                .any(|n| n.contains("no progress") || n.contains("held")),
            "{:?}",
            r.notes
        );
    }
    // The rate-capped pvsync2 job (1 000 IO/s) keeps its rate three times
    // as long: it did not stop part-way.
    let rate = |r: &RunResult| r.results[1].jobs[3].ios;
    let ratio = rate(&long) as f64 / rate(&short) as f64;
    assert!((2.8..=3.2).contains(&ratio), "{ratio}");
}
