//! The simulator against a hand-specialised loop doing the same work
//! (issue #20; the loop is `reference/mod.rs`):
//!
//! `cargo bench -p cint-sim --bench vs_reference`
//!
//! On the shipped `async-batch` under `adaptive` (6 us / 32), one
//! simulated second, it first checks that the loop's counters equal the
//! simulator's exactly (I/Os, interrupts, events, CPU time, context
//! switches, wake-ups, every latency figure), then times, alternating in
//! this one process, `cint-sim` through its library API, the loop with
//! histograms and the loop without, `CINT_BENCH_PAIRS` rounds (7 by
//! default), and prints medians: ns per simulated I/O, events per second,
//! simulated I/Os per second and the simulator's cost over the loop's.
//! Medians of alternating rounds, because the machines this runs on are
//! shared: a separate run's absolute time means little. Each round is
//! timed by the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which
//! leaves out the time other processes had the core; the wall-clock
//! ratio is printed too.
//!
//! Then the cost per I/O by component, measured by replaying each part of
//! the run alone, in the same process: the queue (the loop's exact
//! sequence of schedules and pops through the simulator's `EventQueue`,
//! the pipe's transfer ends through its in-order lane as the simulator
//! schedules them, and through the loop's own), the histograms (the run's latencies into
//! cint-report's HdrHistogram and fio's three), the jitter (the same
//! number of Box-Muller draws from a ChaCha8 stream, rounded as the
//! device model does). The rest of each total is dispatch and the model
//! itself.
//!
//! Last, the other shapes: `sync-qd1`, `mixed` and `many-cores` (64 cores,
//! 64 jobs) as shipped, each timed alternately with the loop as a
//! yardstick: ns per simulated I/O and its ratio to the loop's.

mod reference;

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use cint_report::{FioHistogram, LatencyHistogram};
use cint_scenario::{load_file, Scenario};
use rand::Rng;

use reference::{Pending, Reference, IN_ORDER, POP};

fn scenario(name: &str, sets: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.toml"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_file(&path, &sets).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    })
}

fn sim(sc: &Scenario) -> (cint_report::RunResult, cint_sim::RunStats) {
    cint_sim::run_with_stats(sc).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    })
}

fn reference(sc: &Scenario, histograms: bool) -> Reference {
    Reference::new(sc, histograms).unwrap_or_else(|e| {
        eprintln!("the reference loop: {e}");
        std::process::exit(1);
    })
}

/// The calling thread's CPU time in seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID is available on Linux");
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Seconds of this thread's CPU time `f` takes.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let (cpu, (_, out)) = timed_both(f);
    (cpu, out)
}

/// CPU seconds and wall seconds `f` takes.
fn timed_both<T>(f: impl FnOnce() -> T) -> (f64, (f64, T)) {
    let (cpu, wall) = (thread_cpu_s(), Instant::now());
    let out = f();
    (thread_cpu_s() - cpu, (wall.elapsed().as_secs_f64(), out))
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn pairs() -> usize {
    std::env::var("CINT_BENCH_PAIRS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(7)
}

/// Replays a queue trace through the simulator's event queue.
fn replay_sim_queue(ops: &[u64]) -> u64 {
    let mut q = cint_sim::engine::EventQueue::with_capacity(64);
    let mut sum = 0u64;
    for &op in ops {
        if op == POP {
            if let Some((at, e)) = q.pop_before(u64::MAX) {
                sum = sum.wrapping_add(at ^ u64::from(e));
            }
        } else if op & IN_ORDER != 0 {
            let at = op & !IN_ORDER;
            q.schedule_in_order(at, black_box(at as u32));
        } else {
            q.schedule(op, black_box(op as u32));
        }
    }
    sum
}

/// Replays a queue trace through the loop's queue.
fn replay_loop_queue(ops: &[u64]) -> u64 {
    let mut q = Pending::new();
    let mut sum = 0u64;
    for &op in ops {
        if op == POP {
            if let Some((at, e)) = q.pop_before(u64::MAX) {
                sum = sum.wrapping_add(at ^ u64::from(e));
            }
        } else {
            let at = op & !IN_ORDER;
            q.push(at, black_box(at as u32));
        }
    }
    sum
}

fn replay_histograms(lats: &[(u64, u64, u64)]) -> u64 {
    let mut hist = LatencyHistogram::new();
    let (mut lat, mut slat, mut clat) = (
        FioHistogram::new(),
        FioHistogram::new(),
        FioHistogram::new(),
    );
    for &(l, s, c) in lats {
        hist.record(l);
        lat.record(l);
        slat.record(s);
        clat.record(c);
    }
    hist.len() + lat.len() + slat.len() + clat.len()
}

fn replay_jitter(n: u64) -> u64 {
    let mut rng = cint_sim::engine::stream_rng(1, cint_sim::engine::DEVICE_STREAM_BASE);
    let mut sum = 0u64;
    for _ in 0..n {
        let u1: f64 = rng.gen::<f64>();
        let u2: f64 = rng.gen::<f64>();
        let normal = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let t = 3790.0 + 450.0 * black_box(normal);
        sum = sum.wrapping_add(if t <= 0.0 { 0 } else { t.round() as u64 });
    }
    sum
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is ignored.
    let n = pairs();
    let mut sc = scenario("async-batch", &["duration=1s", "warmup=0ms"]);
    sc.strategies.retain(|s| s.name == "adaptive");
    let (result, stats) = sim(&sc);
    let (outcome, trace) = reference(&sc, true).run_traced();
    let mismatches = outcome.mismatches(&result, stats.events);
    if !mismatches.is_empty() {
        eprintln!("the reference loop disagrees with cint-sim:");
        for m in &mismatches {
            eprintln!("  {m}");
        }
        std::process::exit(1);
    }
    let ios = outcome.ios as f64;
    println!(
        "async-batch, adaptive (6 us / 32), 1 simulated s on {}: {} I/Os, {} interrupts, {} events; \
         the loop's counters equal cint-sim's",
        sc.device.model, outcome.ios, outcome.interrupts, outcome.events
    );

    let (mut t_sim, mut t_loop, mut t_bare, mut ratio, mut ratio_bare, mut ratio_wall) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        let (a, (wa, (r, _))) = timed_both(|| sim(&sc));
        let (b, (wb, o)) = timed_both(|| reference(&sc, true).run());
        let (c, o2) = timed(|| reference(&sc, false).run());
        ratio_wall.push(wa / wb);
        assert_eq!(r.results[0].jobs[0].ios, o.ios);
        assert_eq!(o.events, o2.events);
        t_sim.push(a);
        t_loop.push(b);
        t_bare.push(c);
        ratio.push(a / b);
        ratio_bare.push(a / c);
    }
    let events = outcome.events as f64;
    println!("{n} alternating rounds, medians of the thread's CPU time:");
    println!(
        "  {:<32} {:>8} {:>10} {:>16}",
        "", "ns/I/O", "M events/s", "M sim. I/Os/s"
    );
    for (name, times) in [
        ("cint-sim", &mut t_sim),
        ("the loop, with histograms", &mut t_loop),
        ("the loop, without histograms", &mut t_bare),
    ] {
        let t = median(times);
        println!(
            "  {:<32} {:>8.1} {:>10.1} {:>16.2}",
            name,
            t / ios * 1e9,
            events / t / 1e6,
            ios / t / 1e6
        );
    }
    let r = median(&mut ratio);
    println!(
        "  cint-sim / the loop with histograms: {r:.2}x ({}); without histograms: {:.2}x; \
         by wall-clock time: {:.2}x",
        if r <= 1.25 {
            "meets <= 1.25x"
        } else {
            "MISSES <= 1.25x"
        },
        median(&mut ratio_bare),
        median(&mut ratio_wall)
    );

    // Components, each replayed alone.
    let (mut q_sim, mut q_loop, mut h, mut j) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        q_sim.push(timed(|| black_box(replay_sim_queue(&trace.queue_ops))).0);
        q_loop.push(timed(|| black_box(replay_loop_queue(&trace.queue_ops))).0);
        h.push(timed(|| black_box(replay_histograms(&trace.latencies))).0);
        j.push(timed(|| black_box(replay_jitter(outcome.ios))).0);
    }
    let per_io = |xs: &mut Vec<f64>| median(xs) / ios * 1e9;
    let (qs, ql, hs, js) = (
        per_io(&mut q_sim),
        per_io(&mut q_loop),
        per_io(&mut h),
        per_io(&mut j),
    );
    let total_sim = median(&mut t_sim) / ios * 1e9;
    let total_loop = median(&mut t_loop) / ios * 1e9;
    println!(
        "ns per I/O by component (each part of the run replayed alone, {} queue operations, \
         {} latencies, {} draws; the rest is dispatch and the model):",
        trace.queue_ops.len(),
        trace.latencies.len(),
        outcome.ios
    );
    println!(
        "  {:<12} {:>8} {:>8} {:>10} {:>8} {:>8}",
        "", "queue", "hist.", "jitter", "rest", "total"
    );
    println!(
        "  {:<12} {:>8.1} {:>8.1} {:>10.1} {:>8.1} {:>8.1}",
        "cint-sim",
        qs,
        hs,
        js,
        total_sim - qs - hs - js,
        total_sim
    );
    println!(
        "  {:<12} {:>8.1} {:>8.1} {:>10.1} {:>8.1} {:>8.1}",
        "the loop",
        ql,
        hs,
        js,
        total_loop - ql - hs - js,
        total_loop
    );

    // The other shapes, against the loop as a yardstick.
    println!("other shapes, as shipped (all their strategies), alternating with the loop:");
    for name in ["sync-qd1", "mixed", "many-cores"] {
        let other = scenario(name, &[]);
        let (mut t, mut yard) = (vec![], vec![]);
        let mut work = (0, 0);
        for _ in 0..n.div_ceil(2) {
            yard.push(timed(|| reference(&sc, true).run()).0 / ios);
            let (s, (_, st)) = timed(|| sim(&other));
            work = (st.ios, st.events);
            t.push(s);
        }
        let per = median(&mut t) / work.0.max(1) as f64;
        println!(
            "  {:<10} {:>9} I/Os {:>9} events: {:>6.1} ns/I/O, {:>5.1} M events/s, {:.2}x the loop's ns/I/O",
            name,
            work.0,
            work.1,
            per * 1e9,
            work.1 as f64 / median(&mut t) / 1e6,
            per / median(&mut yard)
        );
    }
}
