//! Scenario builders shared by the simulator's tests and benchmark, so they
//! do not depend on the scenario files' parser.
#![allow(dead_code)]

use cint_policy::config::{AdaptiveParams, CinterruptsParams, NvmeParams};
use cint_policy::{Nanos, PolicyConfig, MS, US};
use cint_scenario::{
    CompletionMode, DeviceProfile, EmuConfig, Engine, HostProfile, IoJob, Job, Rw, Scenario,
    Strategy, Work,
};

pub fn scenario(device: &str, strategies: Vec<Strategy>, jobs: Vec<Job>) -> Scenario {
    Scenario {
        name: "test".into(),
        source: "<test>".into(),
        seed: 1,
        duration: 50 * MS,
        warmup: 5 * MS,
        device: DeviceProfile::builtin(device).expect("built-in device"),
        host: HostProfile::builtin("xeon-e5-2660v4").expect("built-in host"),
        strategies,
        jobs,
        emu: EmuConfig::default(),
    }
}

pub fn strategy(name: &str, mode: CompletionMode) -> Strategy {
    Strategy {
        name: name.into(),
        mode,
        interrupts: PolicyConfig::None,
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

pub fn cint(delta: Nanos, thr: u32) -> Strategy {
    cint_with(CinterruptsParams::with_adaptive(delta, thr))
}

pub fn cint_with(p: CinterruptsParams) -> Strategy {
    strategy(
        "cint",
        CompletionMode::Interrupt(PolicyConfig::Cinterrupts(p)),
    )
}

pub fn io_job(name: &str, engine: Engine, iodepth: u32, batch: u32, min: u32) -> Job {
    Job {
        name: name.into(),
        cpu: 0,
        numjobs: 1,
        runtime: None,
        work: Work::Io(IoJob {
            engine,
            rw: Rw::RandRead,
            bs: 4096,
            iodepth,
            batch,
            batch_complete_min: min,
            batch_complete_max: min,
            hint: None,
            nowait: false,
            hipri: false,
            direct: true,
            gtod_reduce: false,
            rate_iops: None,
            think: 0,
            size: 1 << 30,
            rwmixread: 100,
            shape: Default::default(),
        }),
        schedule: Default::default(),
    }
}

/// A job whose requests may be polled (fio's `hipri`): pvsync2 and
/// io_uring jobs only, as Linux polls per request.
pub fn hipri(mut job: Job) -> Job {
    if let Work::Io(io) = &mut job.work {
        assert!(matches!(io.engine, Engine::Pvsync2 | Engine::IoUring));
        io.hipri = true;
    }
    job
}

/// One thread of blocking 4 KiB `preadv2(RWF_HIPRI)` reads: the job that
/// polls under a polling strategy (Table 2's polling column).
pub fn preadv2_hipri(name: &str) -> Job {
    hipri(io_job(name, Engine::Pvsync2, 1, 1, 1))
}

pub fn psync(name: &str) -> Job {
    io_job(name, Engine::Psync, 1, 1, 1)
}

pub fn libaio(name: &str, iodepth: u32, batch: u32, min: u32) -> Job {
    io_job(name, Engine::Libaio, iodepth, batch, min)
}

/// The libaio job of the cinterrupts artifact's `fig5` run
/// (`scenarios/mixed-fig5.toml`): iodepth 16, one request per `io_submit`,
/// 1 to 16 events per `io_getevents`, no hint, `gtod_reduce`.
pub fn fig5_libaio(name: &str) -> Job {
    let mut job = libaio(name, 16, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.batch_complete_max = 16;
        io.hint = Some(cint_policy::Hint::Unmarked);
        io.gtod_reduce = true;
    }
    job
}

pub fn cpu_job(name: &str) -> Job {
    Job {
        name: name.into(),
        cpu: 0,
        numjobs: 1,
        runtime: None,
        work: Work::Cpu,
        schedule: Default::default(),
    }
}

pub const OPTANE_DELTA: Nanos = 6 * US;
