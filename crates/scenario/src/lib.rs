//! # cint-scenario: the scenario file, the one input of `cint sim` and `cint emu`
//!
//! [`load_file`] / [`load_str`] parse a TOML scenario (docs/SCENARIO.md), apply
//! `--set` overrides, resolve built-in device and host profiles and
//! validate everything, producing one [`Scenario`] that both engines run.
//! Every refusal is a [`ScenarioError`] naming the file, the line and the
//! key. [`to_toml`] writes a resolved scenario back (what `cint check`
//! prints). Every key, its default and its range: docs/SCENARIO-KEYS.md.

#![warn(missing_docs)]

pub mod app;
pub mod depth_search;
pub mod distribution;
pub mod emu_config;
mod error;
pub mod job;
mod load;
pub mod max_latency;
pub mod mode_select;
pub mod model;
pub mod offsets;
mod origins;
mod overlay;
pub mod page_cache;
pub mod passes;
pub mod pipe;
mod power;
pub mod profiles;
pub mod rate;
pub mod rate_floor;
pub mod render;
pub mod sched_group;
mod section;
mod set;
pub mod shape;
pub mod smt;
pub mod sqpoll;
pub mod staging;
pub mod steady;
pub mod strategy;
pub mod tags;
pub mod trace;
mod tree;
pub mod unfinished;
pub mod units;
pub mod virt;
mod wording;
pub mod zipf;

pub use error::{Origin, ScenarioError};
pub use load::{
    load_file, load_str, past_an_hour, DEFAULT_DEVICE, DEFAULT_DURATION, DEFAULT_HOST,
    DEFAULT_SEED, DEFAULT_WARMUP, MAX_CORES, MAX_PARALLEL_UNITS, MAX_QUEUE_DEPTH, MAX_RUN_TIME,
};
pub use origins::KeyOrigins;
pub use render::{to_toml, toml_string};
pub use set::set_key;
pub use virt::{Guest, Hypervisor, HypervisorProfile, Virt};

pub use emu_config::{Backend, EmuConfig};
pub use model::{
    passes_page_cache, BsShare, CompletionMode, DirectionRates, Distribution, Engine, ExitScope,
    HybridSleep, IoJob, IoShape, Job, LatencyTarget, MinRate, RandomMap, RateUnit, Rw, Scenario,
    Schedule, SqPoll, SteadyMetric, SteadyState, Strategy, SyncWrites, Work, Zone,
};
pub use profiles::{
    DevicePower, DeviceProfile, Governor, HostPower, HostProfile, IdleState, UnitBinding,
};
pub use smt::Smt;

/// The one I/O job of a minimal scenario whose `[[job]]` holds `keys`,
/// resolved as a file's would be: for the crate's tests of job rules.
#[cfg(test)]
pub(crate) fn test_io_job(keys: &str) -> IoJob {
    let text = format!(
        "name = \"t\"\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[job]]\nname = \"j\"\n{keys}\n"
    );
    let sc = load_str(&text, "t.toml", &[]).expect("a valid scenario");
    match sc.jobs.into_iter().next().map(|j| j.work) {
        Some(Work::Io(io)) => io,
        _ => unreachable!("an I/O job"),
    }
}
