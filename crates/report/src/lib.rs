//! # cint-report: one result type for every engine, and its output sinks
//!
//! The simulator and the emulator both produce a [`RunResult`]; the sinks
//! ([`json`], [`table`]) print it. Field names follow fio where fio has one
//! (docs/SCENARIO.md, "Result format"). This is a public contract: fields are
//! added, never renamed or removed. An engine that gives no result says
//! why with an [`EngineError`]: a refused input or an engine bug.

#![warn(missing_docs)]

mod energy_table;
pub mod error;
pub mod fio_hist;
pub mod fio_json;
pub mod json;
pub mod latency;
mod modes_table;
pub mod sync;
pub mod table;
#[cfg(test)]
mod testdata;
pub mod trace;
mod virt_table;
mod warmup;

pub use energy_table::ENERGY_LEGEND;
pub use error::{EngineError, ErrorKind};
pub use fio_hist::{FioHistogram, FioLatency};
pub use fio_json::{to_fio_json, FioJobOptions, FioRunInfo, FIO_DEFAULT_PERCENTILES};
pub use json::{to_json, NonFiniteError};
pub use latency::{LatencyHistogram, LatencyStats};
pub use sync::SyncCalls;
pub use table::to_table;
pub use trace::{IssueLag, TraceMeasure, TraceReplay};
pub use warmup::WarmupTally;

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
    /// An extension of docs/SCENARIO.md's format.
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
    /// of docs/SCENARIO.md's format.
    pub wakeups: u64,
    /// Energy in joules when an energy model is configured.
    pub energy_j: Option<f64>,
    /// The rest of the energy model's figures, with `energy_j`; absent
    /// (not even `null`) when no energy model is configured, so that runs
    /// without one print what they always printed. An extension of
    /// docs/SCENARIO.md's format (docs/ENERGY.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyResult>,
    /// What the virtual-machine layer did, when the scenario has guests;
    /// absent (not even `null`) otherwise, so that bare-metal runs print
    /// what they always printed (docs/VIRT.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virt: Option<VirtResult>,
    /// One entry per job, in scenario order.
    pub jobs: Vec<JobResult>,
}

/// The virtual-machine layer's figures for one strategy (docs/VIRT.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VirtResult {
    /// Virtual interrupts injected into the guests per second.
    pub virtual_interrupts_per_s: f64,
    /// Inter-processor interrupts from hypervisor cores to guests' cores
    /// per second.
    pub ipis_per_s: f64,
    /// Every core's CPU cycles spent for the guests' I/O (the I/O jobs'
    /// threads, the monitors' and the guests' handlers, the hypervisor
    /// cores), per guest I/O, at the hypervisor profile's clock.
    pub cycles_per_io: f64,
    /// The mean delivery ratio the guests' vIC policies chose, over their
    /// completions (1 under a strategy other than vic and vic-sched,
    /// whose coalescing shows in the virtual interrupts instead).
    pub delivery_ratio: f64,
    /// Guest I/Os completed per second.
    pub guest_iops: f64,
    /// Xen-like hypervisors: from the front end's ring push to the
    /// upcall that reaps the response, over the guests' requests; absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontend_lat_ns: Option<LatencyStats>,
    /// KVM-like hypervisors: the back end's calls and their delivery;
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kvm: Option<KvmResult>,
}

/// What became of the vhost-user back end's calls (KVM-like, docs/VIRT.md),
/// per second of the measured window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvmResult {
    /// Calls the back end's interrupt policy wanted.
    pub wanted_per_s: f64,
    /// Wanted calls the driver's `used_event` suppressed (EVENT_IDX).
    pub event_idx_suppressed_per_s: f64,
    /// Posted interrupts a running vCPU took without an exit.
    pub running_per_s: f64,
    /// Posted interrupts that found the vCPU halted but still inside its
    /// halt-polling window: no wake-up.
    pub halt_polled_per_s: f64,
    /// Posted interrupts that woke a blocked vCPU.
    pub wakeups_per_s: f64,
    /// Posted interrupts held while the vCPU was preempted, until it ran.
    pub preempted_per_s: f64,
}

/// What the energy model found for one strategy (docs/ENERGY.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnergyResult {
    /// Where the figures come from: the model (`"model"`), or a meter.
    pub source: String,
    /// The cpuidle governor that chose the idle states.
    pub governor: String,
    /// Mean system power over the measured time, watts.
    pub power_w: f64,
    /// Bytes the workload moved (its jobs' reads and writes, its
    /// applications' operations) per joule of system energy.
    pub bytes_per_joule: f64,
    /// Platform base power's share, joules.
    pub base_j: f64,
    /// Uncore energy (while any core was in C0), joules.
    pub uncore_j: f64,
    /// The device's energy, joules.
    pub device_j: f64,
    /// One entry per application core.
    pub cores: Vec<CoreEnergy>,
    /// The package energy a meter measured over the same window (RAPL,
    /// `cint emu` where the machine exposes it), joules; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_package_j: Option<f64>,
}

/// One core's energy and where its time went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreEnergy {
    /// Core number.
    pub core: u32,
    /// The core's energy (its states and its idle-state exits), joules.
    pub energy_j: f64,
    /// Its mean power, watts.
    pub power_w: f64,
    /// Time per state: `busy` (running a thread), `spin` (a completion
    /// poll loop), `irq` (interrupt handlers), then each idle state.
    pub residency: Vec<StateResidency>,
}

/// Time a core spent in one state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateResidency {
    /// `busy`, `spin`, `irq` or the idle state's name.
    pub state: String,
    /// Share of the measured time, 0 to 1.
    pub share: f64,
    /// Times the core entered the state (idle states; 0 for the others).
    pub entries: u64,
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
    /// Share of its core this job's threads got, over the job's own
    /// measured window (as its rates are).
    pub cpu_util: f64,
    /// Context switches of this job's threads.
    pub context_switches: u64,
    /// Times this job's threads were woken from a block (an extension of
    /// docs/SCENARIO.md's format).
    pub wakeups: u64,
    /// Latency per I/O, issue to completion in hand.
    pub lat_ns: LatencyStats,
    /// What fio's JSON output needs beyond this summary (per-direction
    /// histograms, submission latency, user and system CPU), when the
    /// engine measured it. Not written into the result document; read by
    /// [`fio_json`].
    #[serde(skip)]
    pub fio: Option<FioJobData>,
    /// The job's trace replay, for a job that replays a block trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceReplay>,
    /// The job's `fsync` and `fdatasync` calls, for a job that made any
    /// (an extension of docs/SCENARIO.md's format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncCalls>,
    /// Under a `mode-select` strategy: how the job's requests chose to
    /// complete in the measured time (an extension of docs/SCENARIO.md's
    /// format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modes: Option<ModeChoices>,
}

/// How many times a job's threads chose each completion mode under
/// `mode-select` (docs/ALGORITHMS.md section 10): per request for a
/// synchronous engine, per wait for an `IORING_SETUP_IOPOLL` ring (which
/// can only sleep or spin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ModeChoices {
    /// Spin from submission on (classic polling).
    pub poll: u64,
    /// A timed sleep, then a spin (hybrid polling).
    pub sleep: u64,
    /// Sleep until the interrupt.
    pub interrupt: u64,
}

impl ModeChoices {
    /// Counts one `choice`.
    pub fn count(&mut self, choice: cint_policy::mode_select::CompletionChoice) {
        use cint_policy::mode_select::CompletionChoice;
        match choice {
            CompletionChoice::Poll => self.poll += 1,
            CompletionChoice::Sleep(_) => self.sleep += 1,
            CompletionChoice::Interrupt => self.interrupt += 1,
        }
    }

    /// All choices.
    pub fn total(&self) -> u64 {
        self.poll + self.sleep + self.interrupt
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &ModeChoices) {
        self.poll += other.poll;
        self.sleep += other.sleep;
        self.interrupt += other.interrupt;
    }
}

/// One job's measurements in fio's terms (`cint-report`'s
/// [`fio_json`] sink turns them into fio's JSON).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioJobData {
    /// Threads of the job (`numjobs`): fio's CPU percentages are per
    /// thread.
    pub threads: u32,
    /// Time the measurements cover, ns (the measured window).
    pub runtime_ns: u64,
    /// CPU time of the job's threads in user mode (application work such
    /// as think time and busy loops), ns.
    pub usr_ns: u64,
    /// CPU time of the job's threads in the kernel (system calls,
    /// submission and reaping paths, polling, context switches), ns.
    pub sys_ns: u64,
    /// Reads.
    pub read: FioDirection,
    /// Writes.
    pub write: FioDirection,
    /// `fsync` and `fdatasync` calls (fio's `sync` section).
    pub sync: FioSync,
    /// fio's errno for the job: 0, `EIO` (5) when a thread missed its
    /// `ratemin` or `rate_iops_min`, `ETIMEDOUT` (110) when a completion of
    /// one went past its `max_latency` or one missed its `latency_target`
    /// at depth 1 (fio's `td_verror`).
    pub error: i32,
    /// fio's `steadystate` object, for a job with `ss`.
    pub steadystate: Option<FioSteadyState>,
}

/// A job's steady state in fio's terms (stat.c `show_thread_status_json`):
/// its rule, whether it was attained, the last full window's judgement,
/// and the window's samples, one a second, oldest first, zeros where it
/// had not filled.
#[derive(Clone, Debug, PartialEq)]
pub struct FioSteadyState {
    /// The rule as fio prints it: `iops:10.000000%`, `bw_slope:0.500000`.
    pub ss: String,
    /// The window, whole seconds.
    pub duration: u64,
    /// The criterion was met (and the job ended there).
    pub attained: bool,
    /// The last full window's criterion, with `%` where the rule has it.
    pub criterion: String,
    /// The last full window's largest deviation from its mean (0 under a
    /// slope rule).
    pub max_deviation: f64,
    /// The last full window's least-squares slope (0 under a deviation
    /// rule).
    pub slope: f64,
    /// Requests completed in each second of the window.
    pub iops: Vec<u64>,
    /// Bytes completed in each second of the window.
    pub bw: Vec<u64>,
}

impl FioSteadyState {
    /// fio's object for a job whose steady state `probe` judged (none
    /// without a rule).
    pub fn of(probe: &cint_scenario::steady::SteadyProbe) -> Option<FioSteadyState> {
        use cint_scenario::SteadyMetric;
        let rule = probe.rule()?;
        let duration = (rule.dur / cint_policy::SEC).max(1);
        let percent = if rule.percent { "%" } else { "" };
        let metric = match rule.metric {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
        };
        let slope = if rule.slope { "_slope" } else { "" };
        let judged = probe.judged().unwrap_or_default();
        // fio's arrays hold `duration` entries, zero until written.
        let column = |f: fn(&cint_scenario::steady::Second) -> u64| -> Vec<u64> {
            let mut v: Vec<u64> = probe.window().iter().map(f).collect();
            v.resize(duration as usize, 0);
            v
        };
        Some(FioSteadyState {
            ss: format!("{metric}{slope}:{:.6}{percent}", rule.limit),
            duration,
            attained: probe.attained_at().is_some(),
            criterion: format!("{:.6}{percent}", judged.criterion),
            max_deviation: judged.max_deviation,
            slope: judged.slope,
            iops: column(|s| s.requests),
            bw: column(|s| s.bytes),
        })
    }
}

/// A job's `fsync` and `fdatasync` calls in fio's terms: how many, and
/// their latencies from the call's entry to its return.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioSync {
    /// Calls completed.
    pub ios: u64,
    /// The `fsync` calls among them: fio 3.33's JSON `total_ios` counts
    /// only these (`total_io_u[DDIR_SYNC]`), where its latencies count
    /// `fdatasync` calls too.
    pub fsync_ios: u64,
    /// Their latencies.
    pub lat: FioLatency,
}

/// One direction of one job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioDirection {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes they moved.
    pub bytes: u64,
    /// Submission latency (fio's slat: from the request's preparation to
    /// the return of the submission call). No samples for synchronous
    /// engines, where fio does not measure it either.
    pub slat: FioLatency,
    /// Completion latency (fio's clat: from the submission to the
    /// completion in the application's hand).
    pub clat: FioLatency,
    /// Total latency (fio's lat: slat + clat).
    pub lat: FioLatency,
}

impl RunResult {
    /// Drops every job's [`FioJobData`] (some kilobytes of histogram per
    /// job), where no fio document will be written from this result: a
    /// sweep that keeps every point in memory.
    pub fn drop_fio_data(&mut self) {
        for job in self.results.iter_mut().flat_map(|s| s.jobs.iter_mut()) {
            job.fio = None;
        }
    }
}

impl StrategyResult {
    /// Total I/Os per second over all jobs.
    pub fn total_iops(&self) -> f64 {
        self.jobs.iter().map(|j| j.iops).sum()
    }
}
