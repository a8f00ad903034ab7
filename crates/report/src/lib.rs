//! # cint-report: one result type for every engine, and its output sinks
//!
//! The simulator and the emulator both produce a [`RunResult`]; the sinks
//! ([`json`], [`table`]) print it. Field names follow fio where fio has one
//! (SCENARIO.md, "Result format"). This is a public contract: fields are
//! added, never renamed or removed.

#![warn(missing_docs)]

pub mod json;
pub mod latency;
pub mod table;
#[cfg(test)]
mod testdata;

pub use json::{to_json, NonFiniteError};
pub use latency::{LatencyHistogram, LatencyStats};
pub use table::to_table;

use serde::Serialize;

/// The version written into every result document.
pub const CINT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One run of a scenario: every strategy on the same jobs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    /// `cint_version`.
    pub cint_version: String,
    /// The scenario's `name`.
    pub scenario: String,
    /// `"sim"` or `"emu"`.
    pub substrate: String,
    /// Device profile name.
    pub device: String,
    /// Host profile name.
    pub host: String,
    /// The seed used.
    pub seed: u64,
    /// Measured time (after warm-up).
    pub duration_ns: u64,
    /// One entry per strategy, in scenario order.
    pub results: Vec<StrategyResult>,
    /// What a reader must know about how these numbers were obtained, one
    /// sentence each (for example: the emulator's interrupt handlers ran
    /// without real-time priority). Absent when there is nothing to say.
    /// An extension of SCENARIO.md's format.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The outcome of one strategy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StrategyResult {
    /// Strategy `name`.
    pub strategy: String,
    /// Strategy `kind`.
    pub kind: String,
    /// Interrupts fired, of all kinds.
    pub interrupts: u64,
    /// Interrupts per second of measured time.
    pub interrupts_per_s: f64,
    /// Urgent-only (out-of-order) interrupts.
    pub urgent_interrupts: u64,
    /// Busy fraction of the application cores (mean over cores).
    pub cpu_util: f64,
    /// Context switches on the application cores.
    pub context_switches: u64,
    /// Threads woken on the application cores (a blocked thread made
    /// runnable by a completion, a timer or another thread). An extension
    /// of SCENARIO.md's format.
    pub wakeups: u64,
    /// Energy in joules when an energy model is configured.
    pub energy_j: Option<f64>,
    /// One entry per job, in scenario order.
    pub jobs: Vec<JobResult>,
}

/// The outcome of one job (all its threads together).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobResult {
    /// Job `name`.
    pub name: String,
    /// I/Os completed in the measured time.
    pub ios: u64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: u64,
    /// Share of its core this job's threads got.
    pub cpu_util: f64,
    /// Context switches of this job's threads.
    pub context_switches: u64,
    /// Times this job's threads were woken from a block (an extension of
    /// SCENARIO.md's format).
    pub wakeups: u64,
    /// Latency per I/O, issue to completion in hand.
    pub lat_ns: LatencyStats,
}

impl StrategyResult {
    /// Total I/Os per second over all jobs.
    pub fn total_iops(&self) -> f64 {
        self.jobs.iter().map(|j| j.iops).sum()
    }
}
