//! Scenario builders shared by the simulator's tests and benchmark, so they
//! do not depend on the scenario files' parser.
#![allow(dead_code)]

use cint_policy::{Nanos, MS, US};
use cint_scenario::{DeviceProfile, Engine, Job, Scenario, Strategy, Work};
use cint_test_support::scenario as support;

// Each test binary uses its own subset.
#[allow(unused_imports)]
pub use cint_test_support::scenario::{
    adaptive, cinterrupts as cint, cinterrupts_with as cint_with, cpu_job, hipri, io_job, none,
    nvme, strategy,
};

/// A 50 ms scenario named `test` on the built-in `device`.
pub fn scenario(device: &str, strategies: Vec<Strategy>, jobs: Vec<Job>) -> Scenario {
    support::scenario(
        "test",
        DeviceProfile::builtin(device).expect("built-in device"),
        strategies,
        jobs,
        50 * MS,
    )
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

pub const OPTANE_DELTA: Nanos = 6 * US;
