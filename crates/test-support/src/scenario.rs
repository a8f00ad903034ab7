//! Scenario builders for the engines' tests (the simulator's and the
//! emulator's build the same strategies, jobs and scenarios), so those
//! tests do not depend on the scenario files' parser.

use cint_policy::config::{AdaptiveParams, CinterruptsParams, NvmeParams};
use cint_policy::{Nanos, PolicyConfig, MS};
use cint_scenario::{
    CompletionMode, DeviceProfile, EmuConfig, Engine, HostProfile, HybridSleep, IoJob, Job, Rw,
    Scenario, Strategy, Work,
};

/// The host every test scenario runs on.
pub const HOST: &str = "xeon-e5-2660v4";

/// A scenario named `name` with seed 1 and 5 ms of warm-up.
pub fn scenario(
    name: &str,
    device: DeviceProfile,
    strategies: Vec<Strategy>,
    jobs: Vec<Job>,
    duration: Nanos,
) -> Scenario {
    Scenario {
        name: name.into(),
        source: "<test>".into(),
        seed: 1,
        duration,
        warmup: 5 * MS,
        run_to_end: false,
        device,
        host: HostProfile::builtin(HOST).expect("built-in host"),
        strategies,
        jobs,
        emu: EmuConfig::default(),
        virt: Default::default(),
        apps: Default::default(),
        sched_groups: Default::default(),
        origins: Default::default(),
    }
}

/// A strategy named `name`; under polling, what it does not poll
/// completes with an interrupt per request.
pub fn strategy(name: &str, mode: CompletionMode) -> Strategy {
    Strategy {
        name: name.into(),
        mode,
        interrupts: PolicyConfig::None,
    }
}

/// `none`: an interrupt per completion.
pub fn none() -> Strategy {
    strategy("none", CompletionMode::Interrupt(PolicyConfig::None))
}

/// `adaptive` at `delta` and `thr`.
pub fn adaptive(delta: Nanos, thr: u32) -> Strategy {
    strategy(
        "adaptive",
        CompletionMode::Interrupt(PolicyConfig::Adaptive(AdaptiveParams { delta, thr })),
    )
}

/// NVMe aggregation at `time` and `thr`, named `name`.
pub fn nvme(name: &str, time: Nanos, thr: u32) -> Strategy {
    strategy(
        name,
        CompletionMode::Interrupt(PolicyConfig::Nvme(NvmeParams {
            thr,
            time,
            coalescing_disabled: false,
        })),
    )
}

/// `cinterrupts` (named `cint`) on `adaptive` at `delta` and `thr`.
pub fn cinterrupts(delta: Nanos, thr: u32) -> Strategy {
    cinterrupts_with(CinterruptsParams::with_adaptive(delta, thr))
}

/// `cinterrupts` (named `cint`) with every parameter given.
pub fn cinterrupts_with(p: CinterruptsParams) -> Strategy {
    strategy(
        "cint",
        CompletionMode::Interrupt(PolicyConfig::Cinterrupts(p)),
    )
}

/// Polling.
pub fn poll() -> Strategy {
    strategy("poll", CompletionMode::Poll)
}

/// Hybrid polling with `sleep`.
pub fn hybrid(sleep: HybridSleep) -> Strategy {
    strategy("hybrid", CompletionMode::HybridPoll(sleep))
}

/// One 4 KiB random-read job on application core 0: `iodepth` in flight,
/// `batch` per submission, from `complete` up to `complete` per reap.
pub fn io_job(name: &str, engine: Engine, iodepth: u32, batch: u32, complete: u32) -> Job {
    Job {
        name: name.into(),
        cpu: 0,
        cpus: Vec::new(),
        numjobs: 1,
        runtime: None,
        work: Work::Io(IoJob {
            engine,
            rw: Rw::RandRead,
            bs: 4096,
            iodepth,
            batch,
            batch_complete_min: complete,
            batch_complete_max: complete,
            iodepth_low: iodepth,
            hint: None,
            nowait: false,
            hipri: false,
            direct: true,
            fadvise_hint: true,
            gtod_reduce: false,
            offload: false,
            sqpoll: None,
            rate_iops: None,
            think: 0,
            size: 1 << 30,
            rwmixread: 100,
            shape: Default::default(),
        }),
        schedule: Default::default(),
        guest: None,
    }
}

/// `job` with fio's `hipri`: its requests may be polled. Only pvsync2 and
/// io_uring jobs can be (Linux polls per request), which the assertion
/// keeps a test from building anything else.
pub fn hipri(mut job: Job) -> Job {
    if let Work::Io(io) = &mut job.work {
        assert!(matches!(io.engine, Engine::Pvsync2 | Engine::IoUring));
        io.hipri = true;
    }
    job
}

/// The threads that run `job`'s work, whose CPU its figures count: each
/// of its `numjobs`, with an offloaded one's `iodepth` workers and an
/// SQ-polled ring's SQ thread.
pub fn job_threads(job: &Job) -> u32 {
    let per_thread = job.io().map_or(1, |io| {
        1 + if io.offload { io.iodepth } else { 0 } + u32::from(io.sqpoll.is_some())
    });
    per_thread * job.numjobs
}

/// A CPU-bound job (`kind = "cpu"`) on application core 0.
pub fn cpu_job(name: &str) -> Job {
    Job {
        name: name.into(),
        cpu: 0,
        cpus: Vec::new(),
        numjobs: 1,
        runtime: None,
        work: Work::Cpu,
        schedule: Default::default(),
        guest: None,
    }
}

/// fio's think time as scenario keys, drawn as both random-scenario
/// generators draw it: the think time (1 to 50 us), its busy part and
/// the requests between pauses. Returns the think time, which the
/// simulator's generator derives further keys from without drawing, and
/// the lines.
pub fn drawn_think_time(rng: &mut crate::rng::Rng) -> (u64, String) {
    let think = 1 + rng.below(50);
    let lines = format!(
        "thinktime = \"{think}us\"\nthinktime_spin = \"{}us\"\nthinktime_blocks = {}\n",
        rng.below(think + 1),
        1 + rng.below(8)
    );
    (think, lines)
}

/// `text`, a scenario's TOML, with the lines `add` gives for a table
/// (each `[[...]]` block, as its text, the table's header first) after
/// that table's own: how the random-scenario generators lay a drawn key
/// onto the jobs they drew before.
pub fn with_lines_after_tables(text: &str, mut add: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len() + 128);
    for (i, block) in text.split("[[").enumerate() {
        if i > 0 {
            out.push_str("[[");
        }
        out.push_str(block);
        if let Some(lines) = add(block) {
            if !block.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&lines);
        }
    }
    out
}

/// `text`, a scenario's TOML, with `percent` of its queueing jobs' full
/// queues drained to a low mark before they refill (fio's
/// `iodepth_low`): a mark from 1 to the job's depth, as both
/// random-scenario generators draw it. Offloaded jobs, which never wait
/// for a full queue, get none.
pub fn with_low_marks(rng: &mut crate::rng::Rng, text: &str, percent: u64) -> String {
    with_lines_after_tables(text, |block| {
        let queueing =
            block.contains("engine = \"libaio\"") || block.contains("engine = \"io_uring\"");
        let depth = block
            .lines()
            .find_map(|l| l.strip_prefix("iodepth = "))
            .and_then(|d| d.trim().parse::<u64>().ok());
        let (Some(depth), true) = (depth, queueing && block.starts_with("job]]\n")) else {
            return None;
        };
        if block.contains("submit_mode = \"offload\"") || !rng.chance(percent) {
            return None;
        }
        Some(format!("iodepth_low = {}\n", 1 + rng.below(depth)))
    })
}

/// `text`, a scenario's TOML, with `percent` of its I/O jobs bounded by
/// fio's `max_latency`, as both random-scenario generators draw it: from
/// a bound most requests go past to one none does, now and then on one
/// direction only. Offloaded jobs and jobs under `gtod_reduce`, which
/// the loader refuses it beside, get none.
pub fn with_latency_bounds(rng: &mut crate::rng::Rng, text: &str, percent: u64) -> String {
    let refused = ["submit_mode = \"offload\"", "gtod_reduce = true"];
    with_lines_after_tables(text, |block| {
        let io_job = block.starts_with("job]]\n") && block.contains("engine = ");
        if !io_job || refused.iter().any(|r| block.contains(r)) || !rng.chance(percent) {
            return None;
        }
        let bound = rng.pick(&["5us", "20us", "100us", "1ms", "50ms"]);
        let bound = match rng.below(4) {
            0 => format!("{bound},"),
            1 => format!(",{bound}"),
            _ => bound.to_string(),
        };
        Some(format!("max_latency = \"{bound}\"\n"))
    })
}

/// `text`, a scenario's TOML, with `percent` of its queueing jobs' reap
/// calls made not to wait (fio's `iodepth_batch_complete_min=0`), half of
/// them reaping after every submission (`batch_complete_max = 0`), the
/// rest up to a drawn bound, as both random-scenario generators draw it.
/// Only jobs that give `batch_complete_min` and not its maximum, and are
/// not offloaded, are drawn.
pub fn with_reaps_without_waiting(rng: &mut crate::rng::Rng, text: &str, percent: u64) -> String {
    let mut out = String::with_capacity(text.len() + 128);
    for (i, block) in text.split("[[").enumerate() {
        if i > 0 {
            out.push_str("[[");
        }
        let depth = block
            .lines()
            .find_map(|l| l.strip_prefix("iodepth = "))
            .and_then(|d| d.trim().parse::<u64>().ok());
        let drawn = block.starts_with("job]]\n")
            && block.contains("batch_complete_min = ")
            && !block.contains("batch_complete_max = ")
            && !block.contains("submit_mode = \"offload\"");
        let (Some(depth), true) = (depth, drawn) else {
            out.push_str(block);
            continue;
        };
        if !rng.chance(percent) {
            out.push_str(block);
            continue;
        }
        let most = if rng.chance(50) {
            0
        } else {
            1 + rng.below(depth)
        };
        for line in block.split_inclusive('\n') {
            if line.starts_with("batch_complete_min = ") {
                out.push_str("batch_complete_min = 0\n");
                out.push_str(&format!("batch_complete_max = {most}\n"));
            } else {
                out.push_str(line);
            }
        }
    }
    out
}
