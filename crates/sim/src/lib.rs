//! # cint-sim: a discrete-event simulator of interrupt strategies
//!
//! Answers "what would strategy X do to workload Y on device Z and host H"
//! in seconds and deterministically (docs/MODEL.md). One [`run`] simulates every
//! strategy of a scenario on identical jobs and returns the same
//! [`RunResult`] the emulator produces, with `substrate = "sim"`.
//!
//! The machine is modelled by mechanisms only: CPU time on kernel paths,
//! threads blocking and waking under a CFS-like scheduler, interrupts
//! preempting threads, a device with parallel units and a FIFO. Interrupt
//! decisions come from `cint-policy`, the same code a device or hypervisor
//! would run. Nothing looks at a strategy's or a scenario's name.
//!
//! Layers: [`engine`] (clock, event queue, random streams), `device`
//! (queues, units, service times, policies), `host` (cores, scheduler,
//! interrupt handlers), `workload` (what threads do), `metrics` (the
//! result), `invariants` (checked while running).

#![warn(missing_docs)]

mod apps;
mod device;
pub mod engine;
mod gaps;
mod host;
mod invariants;
mod metrics;
mod virt;
mod workload;
mod world;

use cint_report::{RunResult, CINT_VERSION};
use cint_scenario::{Scenario, Strategy};

pub use gaps::completion_gaps;

/// Why a simulation could not run: an inconsistent scenario the validator
/// let through ([`SimError::input`]), or an invariant violated while
/// running ([`SimError::internal`]: a simulator bug, reported instead of a
/// wrong result). The engines' one error type, under the simulator's name.
pub type SimError = cint_report::EngineError;

/// `strategy` cannot be built from its parameters (`why`): refused at its
/// table, `strategy.NAME`.
pub(crate) fn strategy_refused(strategy: &Strategy, why: impl std::fmt::Display) -> SimError {
    SimError::input_at(format!("strategy.{}", strategy.name), why.to_string())
}

/// How every run-time invariant violation's message starts.
pub(crate) const INVARIANT_VIOLATED: &str = "invariant violated";

/// Work done by a run, for speed measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Events processed, all strategies together.
    pub events: u64,
    /// I/Os completed in the measured windows, all strategies together.
    pub ios: u64,
}

/// Refuses, with the line [`run`] would give, whatever the simulator
/// cannot run, without simulating anything: `cint check` calls it so that
/// a scenario it accepts is one `cint sim` runs.
pub fn check(scenario: &Scenario) -> Result<(), SimError> {
    require_strategies(scenario)?;
    for strategy in &scenario.strategies {
        world::World::new(scenario, strategy)?;
    }
    Ok(())
}

fn require_strategies(scenario: &Scenario) -> Result<(), SimError> {
    if scenario.strategies.is_empty() {
        return Err(SimError::input(format!(
            "{}: the scenario has no strategy",
            scenario.source
        )));
    }
    Ok(())
}

/// Jobs whose `direct = false` the model does not honour: io_uring's
/// buffered requests run as direct I/O
/// ([`cint_scenario::model::IoJob::through_page_cache`]), and the result
/// must say so rather than pass its figures off as buffered ones.
fn buffered_async_notes(scenario: &Scenario) -> Vec<String> {
    scenario
        .jobs
        .iter()
        .filter_map(|job| match &job.work {
            cint_scenario::Work::Io(io) if !io.direct && !io.through_page_cache() => Some(format!(
                "job '{}': direct = false is modelled as direct I/O on io_uring: the page \
                     cache serves psync, pvsync2 and libaio calls only (Linux 5.1 on completes \
                     a cached io_uring read inside the submission and hands the others to \
                     io_uring's workers)",
                job.name
            )),
            _ => None,
        })
        .collect()
}

/// A run that wrote to a device whose vendor sheet acknowledges a write
/// far sooner than the model's write timing says why its write latencies
/// are too high at low load: the drive's power-protected write buffer is
/// not modelled, and the model times each write by its flash back end.
fn write_buffer_note(scenario: &Scenario, wrote: bool) -> Option<String> {
    let device = &scenario.device;
    let sheet = device.write_latency_sheet?.0;
    let page = device::transfer_time(4096, device.write.bandwidth);
    let modelled = device.write.base.0 + page;
    (wrote && modelled > 2 * sheet).then(|| {
        format!(
            "device {}: a 4 KiB write takes {:.1} us here unloaded (write.base and its \
             transfer: the flash back end, so that writes keep the sheet's sustained rate), \
             where the vendor sheet acknowledges one at queue depth 1 in {:.1} us from the \
             drive's power-protected buffer, which the model does not have: write latencies \
             at low load are too high, write throughput under load is the sheet's",
            device.model,
            modelled as f64 / 1e3,
            sheet as f64 / 1e3
        )
    })
}

/// Runs every strategy of the scenario on the simulator.
pub fn run(scenario: &Scenario) -> Result<RunResult, SimError> {
    run_with_stats(scenario).map(|(result, _)| result)
}

/// [`run`], also reporting how much simulation work it took.
pub fn run_with_stats(scenario: &Scenario) -> Result<(RunResult, RunStats), SimError> {
    require_strategies(scenario)?;
    let mut stats = RunStats::default();
    let mut results = Vec::with_capacity(scenario.strategies.len());
    let mut notes = buffered_async_notes(scenario);
    notes.extend(workload::sqpoll_shared_core_notes(scenario));
    notes.extend(cint_scenario::shape::flow_waiting_weight_notes(scenario));
    // Under `run_to_end` each strategy's run ends with its last job: the
    // run measured as long as the longest of them.
    let mut measured = 0;
    let mut wrote = false;
    for strategy in &scenario.strategies {
        let world = world::World::new(scenario, strategy)?;
        let run = world.run(strategy)?;
        notes.extend(run.notes);
        wrote |= run.wrote;
        stats.events += run.events;
        stats.ios += run.result.jobs.iter().map(|j| j.ios).sum::<u64>();
        measured = measured.max(run.measured);
        results.push(run.result);
    }
    notes.extend(write_buffer_note(scenario, wrote));
    let result = RunResult {
        cint_version: CINT_VERSION.to_string(),
        scenario: scenario.name.clone(),
        substrate: "sim".to_string(),
        device: scenario.device.model.clone(),
        host: scenario.host.model.clone(),
        seed: scenario.seed,
        duration_ns: if scenario.run_to_end {
            measured.max(1)
        } else {
            scenario.duration
        },
        results,
        notes,
    };
    Ok((result, stats))
}
