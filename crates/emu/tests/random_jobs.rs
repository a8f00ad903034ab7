//! Random valid fio-like scenarios on the emulator's real threads: every
//! key the emulator runs by the simulator's rules (rates and their
//! processes, think time, syncs, flows, counts and sizes, groups, start
//! delays, `exitall`, latency targets, block traces, CPU-bound jobs among
//! them, sizes of several kinds over small files under fio's random map
//! and its alternatives, fewer driver tags than requests, fio's offloaded
//! submission, io_uring's SQ polling, fio's `iodepth_low`, `max_latency`
//! and reap calls that do not wait), several at once.
//! Whatever the mix, each run ends, each request comes back once (no
//! stray, none failed on the synthetic device), a job sized by
//! `number_ios` issues no more, and a trace issues no more than it holds.
//! Every key drawn is one the emulator runs: none is refused.
//!
//! `CINT_EMU_FUZZ_SEED` picks the first seed (default 1) and
//! `CINT_EMU_FUZZ_CASES` how many (default 24: a few seconds).

mod common;

use std::fmt::Write as _;

use cint_scenario::job::{ENGINES, HINTS, RWS};
use cint_test_support::rng::Rng;
use common::*;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A small block trace for a trace job: `n` requests over one or two
/// streams, 4 KiB to 16 KiB, a few microseconds apart.
fn trace_file(d: &mut Rng, dir: &std::path::Path, i: usize) -> String {
    let n = 20 + d.below(200);
    let gap = d.below(40_000);
    let ios: Vec<cint_trace::encode::Io> = (0..n)
        .map(|k| cint_trace::encode::Io {
            time: k * gap,
            offset: d.below(1 << 16) * 4096,
            bytes: 4096 << d.below(3),
            write: d.chance(30),
            stream: (k % 2) as u32 * u32::from(d.chance(50)),
            cpu: 0,
            done: None,
        })
        .collect();
    let path = dir.join(format!("t{i}.iolog"));
    std::fs::write(&path, cint_trace::encode::iolog_v3(&ios)).expect("write the trace");
    path.display().to_string()
}

/// One job, on CPU 0 (this machine has one application core beside the
/// device's).
/// With `groups`, the jobs run in turn (each its own group), each ended by
/// a runtime.
fn job(d: &mut Rng, i: usize, groups: bool, dir: &std::path::Path, out: &mut String) {
    let _ = write!(out, "[[job]]\nname = \"j{i}\"\ncpu = 0\n");
    if groups {
        let _ = writeln!(out, "group = {i}\nruntime = \"{}ms\"", 2 + d.below(8));
    } else if d.chance(20) {
        let _ = writeln!(out, "runtime = \"{}ms\"", 2 + d.below(20));
    }
    // A CPU-bound job beside the I/O ones, delayed, or in any group (one
    // before the last ends by its runtime, which every job of a run in
    // groups has).
    if i > 0 && d.chance(10) {
        let _ = writeln!(out, "kind = \"cpu\"");
        if !groups && d.chance(50) {
            let _ = writeln!(out, "startdelay = \"{}ms\"", d.below(5));
        }
        return;
    }
    if d.chance(10) {
        let mode = d.pick(&["open", "closed"]);
        let _ = writeln!(
            out,
            "trace = {:?}\ntrace_mode = \"{mode}\"",
            trace_file(d, dir, i)
        );
        if mode == "closed" {
            let _ = writeln!(
                out,
                "trace_depth = {}\nengine = \"libaio\"",
                1 + d.below(16)
            );
        }
        return;
    }
    let engine = d.pick(ENGINES);
    let rw = d.pick(RWS);
    let writes = rw != "read" && rw != "randread";
    // Sizes of several kinds, over a small file now and then, so that
    // fio's random map cuts requests and starts its passes again
    // (`cint_scenario::offsets`).
    let split = d.chance(15);
    let _ = writeln!(
        out,
        "engine = \"{engine}\"\nrw = \"{rw}\"\nbs = \"{}\"\nnumjobs = {}",
        if split {
            "4k"
        } else {
            d.pick(&["4k", "16k", "64k"])
        },
        1 + d.below(2)
    );
    if split {
        let _ = writeln!(out, "bssplit = \"4k/50:16k/30:64k/20\"");
    }
    if d.chance(15) {
        let _ = writeln!(out, "size = \"{}MiB\"", 1 + d.below(8));
    }
    if d.chance(10) {
        let _ = writeln!(out, "norandommap = true");
    } else if d.chance(10) {
        let _ = writeln!(out, "random_generator = \"lfsr\"");
    } else if d.chance(10) {
        let dist = d.pick(&["zipf:1.2", "pareto:0.3", "normal:20", "zoned:60/10:40/90"]);
        let _ = writeln!(out, "random_distribution = \"{dist}\"");
    }
    let asynchronous = matches!(engine, "libaio" | "io_uring");
    // fio's offload takes no io_uring, batches, think time, syncs, flows
    // or latency target (the loader refuses them beside it).
    let mut offloadable = engine != "io_uring";
    if asynchronous {
        let iodepth = 1 + d.below(32);
        let (batch, complete_min) = (1 + d.below(iodepth), 1 + d.below(iodepth));
        offloadable &= batch == 1 && complete_min == 1;
        let _ = writeln!(
            out,
            "iodepth = {iodepth}\nbatch = {batch}\nbatch_complete_min = {complete_min}"
        );
        if d.chance(15) {
            let _ = writeln!(out, "barrier_last = true");
        }
    }
    if d.chance(20) {
        let _ = writeln!(out, "hint = \"{}\"", d.pick(HINTS));
    }
    if d.chance(5) {
        let _ = writeln!(out, "gtod_reduce = true");
    }
    if d.chance(20) {
        let _ = writeln!(out, "rate_iops = {}", 2_000 + d.below(60_000));
        if d.chance(30) {
            let _ = writeln!(out, "rate_process = \"poisson\"");
        }
    } else if d.chance(10) {
        let _ = writeln!(out, "rate = \"{}m\"", 10 + d.below(300));
    }
    if d.chance(10) {
        out.push_str(&cint_test_support::scenario::drawn_think_time(d).1);
        offloadable = false;
    }
    if writes && engine != "io_uring" && d.chance(15) {
        let key = d.pick(&["fsync", "fdatasync"]);
        let _ = writeln!(out, "{key} = {}", 1 + d.below(8));
        offloadable = false;
    }
    if d.chance(15) {
        let _ = writeln!(out, "number_ios = {}", 1 + d.below(2_000));
    } else if d.chance(10) {
        let blocks = 1 + d.below(64);
        let _ = writeln!(out, "io_size = \"{}k\"", 64 * blocks);
        // Now and then in four passes over the file (no draw of its own,
        // so the rest of the seed's job is unchanged).
        if blocks % 4 == 0 {
            let _ = writeln!(out, "pass_size = \"{}k\"", 16 * blocks);
            offloadable = false;
            // fio's byte limit past the passes' bytes, now and then.
            if blocks % 8 == 0 {
                let _ = writeln!(out, "byte_limit = \"{}k\"", 64 * blocks + 64);
            }
        }
    }
    let mut flows = false;
    if d.chance(10) {
        let _ = writeln!(out, "flow = {}", 1 + d.below(4));
        offloadable = false;
        flows = true;
    }
    if d.chance(10) {
        let _ = writeln!(out, "startdelay = \"{}ms\"", d.below(5));
    }
    if d.chance(10) {
        let _ = writeln!(out, "exitall = \"{}\"", d.pick(&["group", "all"]));
    }
    if asynchronous && d.chance(10) {
        let _ = writeln!(
            out,
            "latency_target = \"{}us\"\nlatency_window = \"{}us\"\nlatency_percentile = {}",
            20 + d.below(2_000),
            d.below(3_000),
            d.pick(&["50", "99", "100"])
        );
        offloadable = false;
    }
    // io_uring's SQ polling (not beside a flow): the ring's SQ thread on
    // the same core.
    if engine == "io_uring" && !flows && d.chance(15) {
        let _ = writeln!(out, "sqpoll = true");
    }
    // fio's offload: the job's threads hand their requests to workers
    // of their own (a synchronous job then has `iodepth` of them too).
    if offloadable && d.chance(20) {
        let _ = writeln!(out, "submit_mode = \"offload\"");
        if !asynchronous {
            let _ = writeln!(out, "iodepth = {}", 1 + d.below(8));
        }
    }
}

fn scenario(seed: u64, dir: &std::path::Path) -> String {
    let mut d = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut out = format!(
        "name = \"emu-random-{seed}\"\nseed = {seed}\nduration = \"{}ms\"\nwarmup = \"{}ms\"\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n",
        15 + d.below(20),
        d.below(3)
    );
    let second = d.pick(&["adaptive", "cinterrupts"]);
    let _ = writeln!(
        out,
        "[[strategy]]\nname = \"{second}\"\nkind = \"{second}\"\ndelta = \"{}us\"\nthr = {}",
        1 + d.below(20),
        1 + d.below(64)
    );
    // Now and then fewer driver tags than the jobs keep in flight, so
    // that submitters wait for them.
    if d.chance(20) {
        let _ = writeln!(
            out,
            "[device]\nmodel = \"optane-p4800x\"\nqueue_depth = {}",
            1 + d.below(16)
        );
    }
    let groups = d.chance(20);
    let jobs = 1 + d.below(3) as usize;
    for i in 0..jobs {
        job(&mut d, i, groups, dir, &mut out);
    }
    // fio's iodepth_low, from a generator of its own.
    let mut marks = Rng::new(seed.wrapping_mul(0x5851_f42d_4c95_7f2d));
    out = cint_test_support::scenario::with_low_marks(&mut marks, &out, 25);
    // fio's max_latency, from one more.
    let mut bounds = Rng::new(seed.wrapping_mul(0x2c1b_3c6d_a3f1_9e55));
    out = cint_test_support::scenario::with_latency_bounds(&mut bounds, &out, 10);
    // Reap calls that do not wait, from one more.
    let mut reaps = Rng::new(seed.wrapping_mul(0x9ddf_ea08_eb38_2d69));
    out = cint_test_support::scenario::with_reaps_without_waiting(&mut reaps, &out, 15);
    out
}

/// What must hold of a run the emulator accepted.
fn check(seed: u64, text: &str, d: &cint_emu::RunDetail, sc: &cint_scenario::Scenario) {
    for s in &d.strategies {
        for (job, detail) in sc.jobs.iter().zip(&s.jobs) {
            let at = format!(
                "seed {seed}, strategy {}, job {}:\n{text}",
                s.name, job.name
            );
            assert_eq!(detail.submitted, detail.completed, "lost or extra: {at}");
            assert_eq!(detail.strays, 0, "duplicated completion: {at}");
            assert_eq!(detail.errors, 0, "{:?}: {at}", detail.first_error);
            let cint_scenario::Work::Io(io) = &job.work else {
                continue;
            };
            // The requests the window ended on: at most what the job's
            // threads hold in flight (a trace replays at its own depth),
            // each waiting no longer than the window.
            let waiting = detail.unfinished;
            if io.shape.trace.is_none() {
                let most = u64::from(cint_test_support::scenario::job_threads(job))
                    * u64::from(io.iodepth.max(1));
                assert!(waiting.count <= most, "{waiting:?} > {most}: {at}");
            }
            assert!(waiting.oldest <= s.window_ns, "{waiting:?}: {at}");
            assert!(
                waiting.waited <= waiting.count * s.window_ns,
                "{waiting:?}: {at}"
            );
            if let (Some(n), 0) = (io.shape.number_ios, sc.warmup) {
                let most = n * u64::from(job.numjobs);
                assert!(
                    detail.submitted <= most,
                    "{} > {most}: {at}",
                    detail.submitted
                );
            }
        }
    }
    for r in &d.result.results {
        for (job, result) in sc.jobs.iter().zip(&r.jobs) {
            assert!(result.iops.is_finite() && result.iops >= 0.0, "seed {seed}");
            // One latency a request counted, the mean between the
            // extremes, the percentiles in order.
            // Its threads' CPU over its own window: at most all of each
            // (a thread, an offloaded one's workers, an SQ thread), give
            // or take the clocks' reads, on a window long enough to tell
            // (a job that stopped late once showed 650% of its two).
            let threads = cint_test_support::scenario::job_threads(job);
            let window_s = if result.ios > 0 {
                result.ios as f64 / result.iops
            } else {
                0.0
            };
            assert!(
                window_s < 0.001 || result.cpu_util <= 1.1 * f64::from(threads),
                "seed {seed}, job {}: {} of its {threads} threads' time over {window_s} s\n{text}",
                job.name,
                result.cpu_util
            );
            cint_test_support::latency::assert_consistent(
                &result.lat_ns,
                cint_test_support::latency::samples_expected(
                    &d.result.notes,
                    &r.strategy,
                    &job.name,
                    result.ios,
                ),
                format_args!("seed {seed}, job {}\n{text}", job.name),
            );
            if let Some(t) = &result.trace {
                assert!(t.issued <= t.requests, "seed {seed}, job {}", job.name);
            }
        }
    }
}

#[test]
fn random_jobs_end_and_bring_every_request_back_once() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let first = env("CINT_EMU_FUZZ_SEED", 1);
    let cases = env("CINT_EMU_FUZZ_CASES", 24);
    let dir = cint_test_support::temp_dir("emu-random");
    for seed in first..first + cases {
        let text = scenario(seed, dir.path());
        let sc = cint_scenario::load_str(&text, "random.toml", &[]).unwrap_or_else(|e| {
            panic!("seed {seed}: the generator wrote an invalid scenario: {e}\n{text}")
        });
        // Every key drawn is one the emulator runs: a refusal is a
        // regression, as is any other failure.
        match cint_emu::run_detailed(&sc) {
            Ok(d) => check(seed, &text, &d, &sc),
            Err(e) => panic!("seed {seed}: {e}\n{text}"),
        }
    }
    let drawn: Vec<String> = (first..first + 2_000)
        .map(|seed| scenario(seed, dir.path()))
        .collect();
    let with = |what: &str| drawn.iter().filter(|s| s.contains(what)).count();
    // Offloaded and SQ-polled jobs do come up: 12% and 5.7% of the
    // scenarios have one (seeds 1 to 2 000), counted over 2 000 drawn, not
    // run, from the first seed; each bound is about 4.5 standard
    // deviations below.
    for (what, key, least) in [
        ("offload a job", "submit_mode = \"offload\"", 170),
        ("SQ-poll a ring", "sqpoll = true", 65),
    ] {
        let count = with(key);
        assert!(count >= least, "{count} of 2 000 scenarios {what}");
    }
}
