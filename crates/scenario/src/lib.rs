//! # cint-scenario: the scenario file, the one input of `cint sim` and `cint emu`
//!
//! [`load_file`] / [`load_str`] parse a TOML scenario (SCENARIO.md), apply
//! `--set` overrides, resolve built-in device and host profiles and
//! validate everything, producing one [`Scenario`] that both engines run.
//! Every refusal is a [`ScenarioError`] naming the file, the line and the
//! key.

#![warn(missing_docs)]

pub mod emu_config;
pub mod model;
pub mod profiles;
pub mod units;

pub use emu_config::{Backend, EmuConfig};
pub use model::{
    CompletionMode, Engine, HybridSleep, IoJob, Job, Rw, Scenario, Strategy, Work,
};
pub use profiles::{DeviceProfile, HostProfile};
