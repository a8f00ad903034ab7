//! Scenario builders and a lock that keeps emulator tests from running at
//! once (each spins a device core; two would fight for the same CPU).

#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use cint_policy::config::{AdaptiveParams, CinterruptsParams};
use cint_policy::{Hint, Nanos, PolicyConfig, MS, US};
use cint_scenario::profiles::{JitterKind, OpTiming};
use cint_scenario::units::Duration;
use cint_scenario::{
    CompletionMode, DeviceProfile, EmuConfig, Engine, HostProfile, HybridSleep, IoJob, Job, Rw,
    Scenario, Strategy, Work,
};

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the machine's device core for one test.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Emulator threads alive in this process. They are all named `cint-*`;
/// counting every thread would count other tests' threads too.
pub fn emulator_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("cint-"))
        .count()
}

/// True when the machine can run the emulator (2 CPUs or more); prints why
/// not otherwise.
pub fn can_emulate() -> bool {
    let n = cint_emu::sys::allowed_cpus().map(|c| c.len()).unwrap_or(0);
    if n < 2 {
        eprintln!("skipped: the emulator needs 2 CPUs, this process has {n}");
    }
    n >= 2
}

/// A fast synthetic device without jitter: `service` per request.
pub fn device(service: Nanos, units: u32) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("optane-p4800x").expect("built-in profile");
    p.parallel_units = units;
    p.jitter = JitterKind::None;
    p.read = OpTiming {
        base: Duration(service),
        bandwidth: 0,
    };
    p.write = p.read.clone();
    p
}

pub fn strategy(name: &str, mode: CompletionMode) -> Strategy {
    Strategy {
        name: name.into(),
        mode,
    }
}

pub fn none() -> Strategy {
    strategy("none", CompletionMode::Interrupt(PolicyConfig::None))
}

pub fn adaptive(delta: Nanos, thr: u32) -> Strategy {
    strategy(
        "adaptive",
        CompletionMode::Interrupt(PolicyConfig::Adaptive(AdaptiveParams { delta, thr })),
    )
}

pub fn cinterrupts(delta: Nanos, thr: u32) -> Strategy {
    strategy(
        "cint",
        CompletionMode::Interrupt(PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(
            delta, thr,
        ))),
    )
}

pub fn poll() -> Strategy {
    strategy("poll", CompletionMode::Poll)
}

pub fn hybrid(sleep: HybridSleep) -> Strategy {
    strategy("hybrid", CompletionMode::HybridPoll(sleep))
}

pub fn io_job(name: &str, engine: Engine, iodepth: u32, batch: u32, numjobs: u32) -> Job {
    Job {
        name: name.into(),
        cpu: 0,
        numjobs,
        runtime: None,
        work: Work::Io(IoJob {
            engine,
            rw: Rw::RandRead,
            bs: 4096,
            iodepth,
            batch,
            batch_complete_min: batch,
            hint: None,
            nowait: false,
            direct: true,
            rate_iops: None,
            think: 0,
            size: 1 << 30,
            rwmixread: 100,
        }),
    }
}

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
        device,
        host: HostProfile::builtin("xeon-e5-2660v4").expect("built-in profile"),
        strategies,
        jobs,
        emu: EmuConfig::default(),
    }
}

pub const DEFAULT_DELTA: Nanos = 6 * US;
pub const URGENT: Hint = Hint::Urgent;
