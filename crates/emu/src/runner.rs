//! `cint emu`: every strategy of a scenario, in turn, on the same jobs,
//! measured on real threads.
//!
//! CPU mapping: the device core is `[emu] device_core`, or else the last
//! CPU this process may use; application core `i` of the scenario is the
//! `i`-th remaining allowed CPU. On a 2-CPU machine: application core 0 is
//! CPU 0 and the device core is CPU 1.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use cint_policy::Nanos;
use cint_report::{
    FioDirection, FioHistogram, FioJobData, FioSync, JobResult, LatencyHistogram, RunResult,
    StrategyResult, CINT_VERSION,
};
use cint_scenario::units::format_ms as ms;
use cint_scenario::{Backend as BackendKind, CompletionMode, Job, Scenario, Strategy};

use crate::activity::{CoreClocks, CoreGroup, CoreReading};
use crate::backend::{BackendConfig, FileSource};
use crate::client::Client;
use crate::emulator::{
    DeviceConfig, DeviceStats, Emulator, Occupant, PendingOccupant, QueueConfig,
};
use crate::energy::{CpuTime, Overlap, PhysicalCore};
use crate::error::{unsupported, EmuError};
use crate::idle_watch::{IdleWatch, ProfileState};
use crate::offload::{Dispatch, OffloadPool};
use crate::replay::TraceCursor;
use crate::select::ThreadSelect;
use crate::shared::{QueueMode, MAX_CLIENTS, MAX_QUEUE_DEPTH};
use crate::sqpoll::{RingHandle, SqRing};
use crate::sys;
use crate::workload::{run_thread, Control, OffloadRole, SqRole, Stage, ThreadOutcome, ThreadPlan};

/// What the emulator measured beyond the result document, for tests and
/// diagnostics.
#[derive(Clone, Debug)]
pub struct RunDetail {
    /// The result document.
    pub result: RunResult,
    /// One per strategy, in scenario order.
    pub strategies: Vec<StrategyDetail>,
}

/// Per-strategy details.
#[derive(Clone, Debug, Default)]
pub struct StrategyDetail {
    /// Strategy name.
    pub name: String,
    /// Interrupts over the whole run, warm-up included.
    pub irqs_total: u64,
    /// Completions the device posted over the whole run.
    pub completions_total: u64,
    /// Interrupts over the whole run that found their core idle and were
    /// handled by the thread waiting there (`[emu] idle_delivery`).
    pub waiter_irqs_total: u64,
    /// Times over the whole run a handler thread slept and was woken.
    pub handler_wakeups_total: u64,
    /// Handlers that ran at real-time priority.
    pub realtime_handlers: usize,
    /// Interrupt handler threads, one per queue.
    pub handlers: usize,
    /// Measured window, in nanoseconds of the clock.
    pub window_ns: Nanos,
    /// One per job, in scenario order.
    pub jobs: Vec<JobDetail>,
    /// Why the energy figures are the model's only (no readable RAPL),
    /// when the scenario has power data.
    pub energy_note: Option<String>,
    /// Under `mode-select`: what its threads learnt of the idle states
    /// their waits reached, or why they could not.
    pub idle_note: Option<String>,
    /// Each application CPU (the scenario's number) and the share of the
    /// window its real CPU was not idle (what the energy model starts
    /// from).
    pub cpu_busy: Vec<(u32, f64)>,
}

/// Per-job details, all threads of the job together.
#[derive(Clone, Debug, Default)]
pub struct JobDetail {
    /// Job name.
    pub name: String,
    /// Requests submitted over the whole run.
    pub submitted: u64,
    /// Requests handed back over the whole run.
    pub completed: u64,
    /// Failed requests.
    pub errors: u64,
    /// The first failure, for the error message.
    pub first_error: Option<String>,
    /// Deliveries matching no request in flight (duplicates): must be 0.
    pub strays: u64,
    /// Completions delivered by a full IRQ.
    pub by_full_irq: u64,
    /// Completions delivered by an urgent-only IRQ.
    pub by_urgent_irq: u64,
    /// Completions found by polling.
    pub by_poll: u64,
    /// Under `mode-select`: the modes its threads chose over the whole
    /// run (per request for a synchronous job, per wait for io_uring).
    pub modes: crate::select::ModeCounts,
    /// Voluntary context switches in the measured window.
    pub voluntary_switches: u64,
    /// Involuntary context switches in the measured window.
    pub involuntary_switches: u64,
    /// CPU time in the measured window.
    pub cpu_ns: u64,
    /// Times the job's threads were woken in the measured window.
    pub wakeups: u64,
    /// When it started, and its measured window's start and end, from the
    /// run's start (`None`: it did not start before the run ended).
    pub span: Option<(Nanos, Nanos, Nanos)>,
    /// When the first and the last completion it counted came into a
    /// thread's hand, in nanoseconds from the run's window start (signed,
    /// so that one counted before the window would show): never outside
    /// the window.
    pub counted_span: Option<(i64, i64)>,
    /// The rate floors its threads missed (`at` from the run's start),
    /// each of which ended its thread.
    pub floors_missed: Vec<cint_scenario::rate_floor::Missed>,
    /// The completions past the job's `max_latency` (`at` from the run's
    /// start), each of which ended its thread.
    pub latency_exceeded: Vec<cint_scenario::max_latency::Exceeded>,
    /// Under `latency_target`: each thread's search, as the run left it.
    pub searches: Vec<cint_scenario::depth_search::DepthSearch>,
    /// Under `ss`: when the job's steady state was attained, or that it
    /// was not, in the simulator's words.
    pub steady_note: Option<String>,
    /// Its requests still waiting when the run's window closed.
    pub unfinished: cint_scenario::unfinished::Unfinished,
    /// Where it ended within its warm-up, so that its figures are its
    /// whole life's: its start, its end and when its warm-up was to end,
    /// and when the run's window opened (`None`: the run ended within
    /// its warm-up too), from the run's start.
    pub ended_in_warmup: Option<((Nanos, Nanos, Nanos), Option<Nanos>)>,
}

/// Runs every strategy of the scenario on the emulator. Fails if any
/// request of any job failed (a short read, an `errno`): figures of
/// failing I/O would look like figures of I/O.
pub fn run(scenario: &Scenario) -> Result<RunResult, EmuError> {
    let detail = run_detailed(scenario)?;
    for strategy in &detail.strategies {
        if let Some(job) = strategy.jobs.iter().find(|j| j.errors > 0) {
            return Err(EmuError::RequestsFailed {
                job: format!("{} (strategy {})", job.name, strategy.name),
                failed: job.errors,
                first: job.first_error.clone().unwrap_or_else(|| "unknown".into()),
            });
        }
    }
    Ok(detail.result)
}

/// The first job key the emulator's threads do not honour, so that it is
/// refused by name rather than silently ignored, with why and what to do.
fn unhonoured_key(scenario: &Scenario) -> Option<(String, &'static str, &'static str)> {
    for (j, job) in scenario.jobs.iter().enumerate() {
        let refusal = if scenario.sched_groups.of_job(j).is_some() {
            Some((
                "sched_group",
                "CFS task groups are modelled by the simulator only: the emulator does not put \
                 its threads in cgroups (use cint sim, or remove the key)",
            ))
        } else if job.io().is_some_and(|io| io.through_page_cache()) {
            // The simulator runs such a job through its page cache; the
            // emulator's threads would issue it as direct I/O.
            Some((
                "direct",
                "a buffered job (direct = false, fio's default direct=0) goes through the page \
                 cache, which the simulator models and the emulator does not: use cint sim, or \
                 direct = true (fio: direct=1)",
            ))
        } else {
            None
        };
        if let Some((key, why)) = refusal {
            return Some((job.name.clone(), key, why));
        }
    }
    None
}

/// More I/O threads than a device takes clients ([`MAX_CLIENTS`]): each
/// thread of an I/O job has one, each worker of an offloaded job's
/// thread one more, and an SQ-polled ring's SQ thread one. Refused by the
/// key of the job that asks for the most.
fn too_many_clients(scenario: &Scenario) -> Option<EmuError> {
    let per_job = |job: &cint_scenario::Job| {
        job.io().map_or(0, |io| {
            let workers = if io.offload { io.iodepth as usize } else { 0 };
            let sq_thread = usize::from(io.sqpoll.is_some());
            job.numjobs as usize * (1 + workers + sq_thread)
        })
    };
    let total: usize = scenario.jobs.iter().map(per_job).sum();
    if total <= MAX_CLIENTS {
        return None;
    }
    let job = scenario.jobs.iter().max_by_key(|j| per_job(j))?;
    let key = if job.io().is_some_and(|io| io.offload) {
        "iodepth"
    } else {
        "numjobs"
    };
    Some(unsupported(
        format!("job.{}.{key}", job.name),
        format!(
            "the jobs' threads need {total} clients of the device, and the emulator's takes at \
             most {MAX_CLIENTS} (a thread each, one more per worker of an offloaded job's \
             thread, iodepth of them, and one per SQ thread); cint sim runs more"
        ),
    ))
}

/// Two application cores on one of the device's queues (`device.queues`
/// fewer than the cores, which blk-mq then maps core `c` to queue
/// `c % queues`): the simulator shares the queue, its policy and its
/// interrupt between them; the emulator gives each core a queue of its
/// own, so it refuses rather than run a device with more queues than it
/// has.
fn shared_queue(scenario: &Scenario) -> Option<EmuError> {
    let pairs = scenario.device.queue_pairs(scenario.host.cores);
    let used = used_cores(scenario);
    let (a, b) = used.iter().enumerate().find_map(|(i, &a)| {
        used[i + 1..]
            .iter()
            .find(|&&b| a as usize % pairs == b as usize % pairs)
            .map(|&b| (a, b))
    })?;
    Some(unsupported(
        "device.queues",
        format!(
            "puts cores {a} and {b} on one queue: the device has {pairs}, and blk-mq maps \
             core c to queue c mod {pairs}; the emulator gives each application core a queue \
             of its own (cint sim shares them): use one queue per core (queues = 0) or jobs \
             on fewer cores"
        ),
    ))
}

/// A polling strategy beside an I/O job that Linux would not poll: the
/// simulator completes such a job by interrupts, the emulator cannot mix
/// the two on one queue, so it refuses rather than poll what Linux would
/// not.
fn unpolled_job(scenario: &Scenario) -> Option<(String, String)> {
    use cint_scenario::{CompletionMode, Engine, Work};
    let strategy = scenario
        .strategies
        .iter()
        .find(|s| matches!(s.mode, CompletionMode::Poll | CompletionMode::HybridPoll(_)))?;
    let job = scenario.jobs.iter().find(|job| match &job.work {
        Work::Io(io) => !(io.hipri && matches!(io.engine, Engine::Pvsync2 | Engine::IoUring)),
        Work::Cpu => false,
    })?;
    Some((strategy.name.clone(), job.name.clone()))
}

/// Refuses, by the key that asks for it, what the emulator does not run
/// (the simulator models it): guests, application programs, keys its
/// threads do not honour, a selector with nothing to choose, unpolled
/// jobs under polling, shared queues, more clients or a deeper queue
/// than its device takes.
fn refuse_what_the_emulator_does_not_run(scenario: &Scenario) -> Result<(), EmuError> {
    // Guests need a hypervisor model (docs/VIRT.md): only the simulator
    // has one.
    if let Some(g) = scenario.virt.guests.first() {
        return Err(unsupported(
            format!("guest.{}", g.name),
            "the emulator runs no virtual machines (the hypervisor, its monitors and guests \
             are modelled by cint sim only)",
        ));
    }
    // Nothing on the emulator's cores is a guest with a time slice, so
    // vic-sched would run as plain vic: refused, as the simulator does.
    if let Some(s) = scenario.strategies.iter().find(|s| {
        matches!(
            s.mode,
            cint_scenario::CompletionMode::Interrupt(cint_policy::PolicyConfig::VicSched(_))
        )
    }) {
        return Err(unsupported(
            format!("strategy.{}.kind", s.name),
            "\"vic-sched\" needs a guest's scheduling state (run state, slice end), and no \
             guest runs on the emulator's cores; use \"vic\"",
        ));
    }
    if let Some(app) = scenario.apps.programs.first() {
        return Err(unsupported(
            format!("app.{}", app.name),
            "application programs ([[app]]) are modelled by the simulator only; the emulator \
             does not run them (use cint sim)",
        ));
    }
    // Refused before any strategy runs: a mode-select strategy without
    // the power data its selector decides from.
    for strategy in &scenario.strategies {
        crate::select::build(scenario, strategy)?;
    }
    if let Some((job, key, why)) = unhonoured_key(scenario) {
        return Err(unsupported(format!("job.{job}.{key}"), why));
    }
    // An SQ-polled ring's thread spins on its completions and its SQ
    // thread submits them all alike: no selector chooses how either waits.
    if let (Some(strategy), Some(job)) = (
        scenario
            .strategies
            .iter()
            .find(|s| matches!(s.mode, cint_scenario::CompletionMode::ModeSelect)),
        scenario
            .jobs
            .iter()
            .find(|j| j.io().is_some_and(|io| io.sqpoll.is_some())),
    ) {
        return Err(unsupported(
            format!("strategy.{}.kind", strategy.name),
            format!(
                "job '{}' is SQ-polled (sqpoll = true): its thread spins on its completion ring \
                 and its SQ thread submits every request alike, so the emulator has no wait \
                 for mode-select to choose; run it with cint sim",
                job.name
            ),
        ));
    }
    if let Some((strategy, job)) = unpolled_job(scenario) {
        return Err(unsupported(
            format!("strategy.{strategy}.kind"),
            format!(
                "job '{job}' is not polled (only pvsync2 and io_uring jobs with hipri = true \
                 are): Linux polls per request, the emulator polls whole queues; give the job \
                 hipri = true, or run it with cint sim, which completes it by interrupts"
            ),
        ));
    }
    if let Some(refusal) = shared_queue(scenario) {
        return Err(refusal);
    }
    if let Some(refusal) = too_many_clients(scenario) {
        return Err(refusal);
    }
    if scenario.device.queue_depth as usize > MAX_QUEUE_DEPTH {
        return Err(unsupported(
            "device.queue_depth",
            format!(
                "the emulator's queues hold at most {MAX_QUEUE_DEPTH} requests, the device's \
                 tags; cint sim runs deeper queues"
            ),
        ));
    }
    Ok(())
}

/// The run's notes: handlers without real-time priority, idle delivery,
/// groups, missed floors, latency-target searches, idle jobs, short
/// windows, `gtod_reduce`, shared SQ-thread cores, flows held by jobs
/// yet to start, steady states and energy.
fn run_notes(
    scenario: &Scenario,
    layout: &CpuLayout,
    (results, details): (&[StrategyResult], &[StrategyDetail]),
) -> Vec<String> {
    let mut notes: Vec<String> = details
        .iter()
        .filter(|d| d.realtime_handlers < d.handlers)
        .map(|d| {
            format!(
                "strategy '{}': {} of {} interrupt handlers ran without real-time priority \
                 (emu.realtime = \"prefer\" and SCHED_FIFO was refused), so interrupt \
                 delivery waited for the ordinary scheduler and latencies are inflated",
                d.name,
                d.handlers - d.realtime_handlers,
                d.handlers
            )
        })
        .collect();
    notes.extend(details.iter().filter_map(|d| d.idle_note.clone()));
    notes.extend(group_notes(scenario, details));
    // A job that ended within its warm-up, as the simulator says it.
    for (r, d) in results.iter().zip(details) {
        let jobs = scenario.jobs.iter().zip(&r.jobs).zip(&d.jobs);
        for ((spec, job), j) in jobs {
            if let Some((life, run_window)) = j.ended_in_warmup {
                // A CPU-bound job makes no request.
                let ios = spec.io().map(|_| job.ios);
                notes.push(cint_scenario::staging::ended_in_warmup_note(
                    &d.name, &j.name, life, ios, run_window,
                ));
            }
        }
    }
    // The simulator's notes, their clock counting from the run's start.
    for d in details {
        for job in &d.jobs {
            for m in &job.floors_missed {
                notes.push(m.note(&d.name, &job.name));
            }
            for e in &job.latency_exceeded {
                notes.push(e.note(&d.name, &job.name));
            }
        }
    }
    notes.extend(search_notes(scenario, details));
    notes.extend(idle_job_notes(scenario, details));
    // A window short against a job's slowest requests: those it drained
    // after the close, against those its result counted.
    notes.extend(results.iter().zip(details).flat_map(|(r, d)| {
        r.jobs.iter().zip(&d.jobs).filter_map(|(job, j)| {
            j.unfinished
                .note(&d.name, &j.name, job.ios, job.lat_ns.mean)
        })
    }));
    notes.extend(gtod_reduce_notes(scenario));
    // An SQ thread beside another thread of its core spins through its
    // slices: the simulator's note, for the same mechanism, measured.
    notes.extend(cint_scenario::sqpoll::shared_core_notes(scenario));
    notes.extend(cint_scenario::shape::flow_waiting_weight_notes(scenario));
    notes.extend(
        details
            .iter()
            .flat_map(|d| d.jobs.iter().filter_map(|j| j.steady_note.clone())),
    );
    // One meter for the machine: said once, not per strategy.
    if let Some(note) = details.iter().find_map(|d| d.energy_note.clone()) {
        notes.push(note);
    }
    if let Some(note) = crate::energy::siblings_note(
        scenario,
        &crate::activity::core_groups(scenario, &layout.app),
    ) {
        notes.push(note);
    }
    notes
}

/// Like [`run`], with the details tests check. Failed requests do not
/// make it fail: they are counted in [`JobDetail::errors`].
pub fn run_detailed(scenario: &Scenario) -> Result<RunDetail, EmuError> {
    refuse_what_the_emulator_does_not_run(scenario)?;
    let layout = CpuLayout::for_scenario(scenario)?;
    // fio's sleep granularity, measured once, as fio measures it before
    // its jobs, and before any device core spins: measured beside one
    // (the coordinator is not pinned), a `nanosleep` of 1 us could wait
    // for its time slice, and a rate-limited thread would then spin
    // through its sleeps (a first strategy once held its core at 96%).
    let granularity = crate::workload::sleep_granularity();
    let mut results = Vec::with_capacity(scenario.strategies.len());
    let mut details = Vec::with_capacity(scenario.strategies.len());
    for (index, strategy) in scenario.strategies.iter().enumerate() {
        let (result, detail) =
            run_strategy(scenario, &layout, (strategy, index as u64), granularity)?;
        results.push(result);
        details.push(detail);
    }
    let notes = run_notes(scenario, &layout, (&results, &details));
    Ok(RunDetail {
        result: RunResult {
            cint_version: CINT_VERSION.to_string(),
            scenario: scenario.name.clone(),
            substrate: "emu".into(),
            device: scenario.device.model.clone(),
            host: scenario.host.model.clone(),
            seed: scenario.seed,
            // Under `run_to_end`, as the simulator: what the longest
            // strategy's run measured.
            duration_ns: if scenario.run_to_end {
                details.iter().map(|d| d.window_ns).max().unwrap_or(1)
            } else {
                scenario.duration
            },
            results,
            notes,
        },
        strategies: details,
    })
}

/// I/O jobs that completed nothing in their measured window, each with
/// what its threads did over the run, so that a zero in the table comes
/// with what was measured rather than alone (the simulator's note names
/// the mechanism; the emulator knows its threads' counts and CPU time,
/// not what else the machine ran). A job that never started, or whose
/// window has no length, has its group's note instead.
fn idle_job_notes(scenario: &Scenario, details: &[StrategyDetail]) -> Vec<String> {
    let mut notes = Vec::new();
    for d in details {
        for (job, detail) in scenario.jobs.iter().zip(&d.jobs) {
            let Some((_, from, to)) = detail.span else {
                continue;
            };
            // One that ended within its warm-up has its own note.
            let counted = detail.counted_span.is_some() || detail.ended_in_warmup.is_some();
            if job.io().is_none() || to <= from || counted {
                continue;
            }
            let ran = format!(
                "they ran for {} of its {}",
                ms(detail.cpu_ns),
                ms(to - from)
            );
            let what = match (detail.submitted, detail.completed) {
                (0, _) => format!("its threads submitted no request in the whole run, and {ran}"),
                (n, 0) => {
                    format!("its threads submitted {n} requests and got none back, and {ran}")
                }
                (n, c) => format!(
                    "its threads got {c} of their {n} requests back in the whole run, none within \
                     the window, and {ran}"
                ),
            };
            notes.push(format!(
                "strategy '{}': job '{}' completed no I/O in its measured window: {what}",
                d.name, job.name
            ));
        }
    }
    notes
}

/// fio's `gtod_reduce` tells the simulator's generator to spend less CPU
/// per I/O on time stamps (the host's `user_per_io_gtod_reduce` for
/// `user_per_io`); the emulator's threads are not fio's generator and
/// take the time stamps their latencies need, so the key changes nothing
/// they do, and the result says so rather than claim it.
fn gtod_reduce_notes(scenario: &Scenario) -> Vec<String> {
    scenario
        .jobs
        .iter()
        .filter(|job| job.io().is_some_and(|io| io.gtod_reduce))
        .map(|job| {
            format!(
                "job '{}': gtod_reduce changes nothing the emulator's threads do: they take \
                 the time stamps their latencies need (cint sim spends the host's \
                 user_per_io_gtod_reduce per I/O for it, fio's saving)",
                job.name
            )
        })
        .collect()
}

/// The simulator's note for each job with a latency target under each
/// strategy: the depth each thread settled on, or why it did not.
fn search_notes(scenario: &Scenario, details: &[StrategyDetail]) -> Vec<String> {
    let mut notes = Vec::new();
    for d in details {
        for (job, detail) in scenario.jobs.iter().zip(&d.jobs) {
            if let Some(target) = job.io().and_then(|io| io.shape.latency_target.as_ref()) {
                notes.push(cint_scenario::depth_search::note(
                    &d.name,
                    &job.name,
                    target,
                    &detail.searches,
                ));
            }
        }
    }
    notes
}

/// The application cores the scenario's jobs use, each once, in order.
fn used_cores(scenario: &Scenario) -> Vec<u32> {
    let mut used: Vec<u32> = scenario.jobs.iter().flat_map(job_cpus).collect();
    used.sort_unstable();
    used.dedup();
    used
}

/// The application cores of `job`'s threads (its `cpus`, or its `cpu`),
/// and of their SQ threads (its `sqpoll_cpu`).
fn job_cpus(job: &Job) -> Vec<u32> {
    let mut cpus = thread_cpus(job);
    cpus.extend(sq_thread_cpu(job));
    cpus
}

/// The application cores of `job`'s own threads (its `cpus`, or its
/// `cpu`).
fn thread_cpus(job: &Job) -> Vec<u32> {
    match job.cpus.is_empty() {
        true => vec![job.cpu],
        false => job.cpus.clone(),
    }
}

/// The core `job`'s SQ threads are pinned to, where it names one.
fn sq_thread_cpu(job: &Job) -> Option<u32> {
    job.io().and_then(|io| io.sqpoll).and_then(|sq| sq.cpu)
}

/// Which real CPU plays which role.
struct CpuLayout {
    device: u32,
    /// Real CPU of each application core used by a job, by app core index.
    app: Vec<(u32, u32)>,
}

impl CpuLayout {
    fn for_scenario(scenario: &Scenario) -> Result<CpuLayout, EmuError> {
        let allowed = sys::allowed_cpus().map_err(EmuError::Pinning)?;
        let used = used_cores(scenario);
        let highest = used.last().copied().unwrap_or(0) as usize;
        if allowed.len() < 2 || allowed.len() < highest + 2 {
            return Err(Self::too_few_cores(scenario, highest, allowed.len()));
        }
        let device = match scenario.emu.device_core {
            Some(cpu) if allowed.contains(&cpu) => cpu,
            Some(cpu) => {
                return Err(EmuError::Pinning(format!(
                    "device_core {cpu} is not available to this process (allowed: {allowed:?})"
                )))
            }
            None => *allowed.last().unwrap_or(&0),
        };
        let rest: Vec<u32> = allowed.iter().copied().filter(|&c| c != device).collect();
        let mut app = Vec::with_capacity(used.len());
        for core in used {
            match rest.get(core as usize) {
                Some(&real) => app.push((core, real)),
                None => {
                    return Err(EmuError::NotEnoughCores {
                        needed: core as usize + 2,
                        available: allowed.len(),
                    })
                }
            }
        }
        Ok(CpuLayout { device, app })
    }

    /// The refusal of a scenario whose jobs reach application core
    /// `highest` where this process may use `available` CPUs: by the key
    /// of the first job that reaches it, so that the command line names
    /// its line, and with the way out.
    fn too_few_cores(scenario: &Scenario, highest: usize, available: usize) -> EmuError {
        let needed = highest + 2;
        let job = scenario
            .jobs
            .iter()
            .find(|job| job_cpus(job).iter().any(|&c| c as usize == highest));
        match job {
            Some(job) if available >= 2 => {
                let highest_is = |c: &u32| *c as usize == highest;
                let key = if !thread_cpus(job).iter().any(highest_is) {
                    // Only its SQ threads' core reaches that far.
                    "sqpoll_cpu"
                } else if job.cpus.is_empty() {
                    "cpu"
                } else {
                    "cpus"
                };
                let room = match available - 2 {
                    0 => "core 0".to_string(),
                    last => format!("cores 0 to {last}"),
                };
                unsupported(
                    format!("job.{}.{key}", job.name),
                    format!(
                        "reaches application core {highest}: with its device core the \
                         emulator needs {needed} cores, and this process may use \
                         {available}; put the jobs on {room} (`cpu` or `cpus` in a scenario, \
                         `cpus_allowed` in a fio job file)"
                    ),
                )
            }
            _ => EmuError::NotEnoughCores { needed, available },
        }
    }

    fn queue_of(&self, app_core: u32) -> Option<usize> {
        self.app.iter().position(|&(core, _)| core == app_core)
    }
}

/// Holds job threads until every one is pinned and ready.
#[derive(Default)]
struct StartGate {
    ready: AtomicUsize,
    failed: std::sync::Mutex<Option<String>>,
    /// 0: wait, 1: go, 2: abort; the waiters sleep on `opened` until it
    /// changes. They used to look every 50 us: with the window opening
    /// before the gate (a run without a warm-up), each look was a
    /// context switch counted in the window, thousands of them while the
    /// coordinator read the threads' `/proc` entries (an offloaded job's
    /// 33 threads at 47 requests a second showed 144 switches a request).
    state: std::sync::Mutex<u8>,
    opened: std::sync::Condvar,
}

impl StartGate {
    fn wait_for_go(&self) -> bool {
        let Ok(state) = self.state.lock() else {
            return false;
        };
        match self.opened.wait_while(state, |s| *s == 0) {
            Ok(state) => *state == 1,
            Err(_) => false,
        }
    }

    fn fail(&self, message: String) {
        if let Ok(mut slot) = self.failed.lock() {
            slot.get_or_insert(message);
        }
    }

    fn failure(&self) -> Option<String> {
        self.failed.lock().ok().and_then(|slot| slot.clone())
    }

    fn open(&self, go: bool) {
        if let Ok(mut state) = self.state.lock() {
            *state = if go { 1 } else { 2 };
        }
        self.opened.notify_all();
    }
}

/// What the coordinator needs to sample one thread at the window edges.
#[derive(Default)]
struct ThreadProbe {
    tid: AtomicI32,
    /// The thread's CPU-time clock, readable from the coordinator.
    clock: OnceLock<libc::clockid_t>,
    /// What the thread measured of itself as it finished: a sample taken
    /// after it exited (a job with a `runtime` shorter than the run) uses
    /// this, as its clock and `/proc` entry are gone.
    last: Mutex<Option<ThreadSample>>,
    /// Under a warm-up: the thread's counters when its job started its
    /// work, which its figures count from if it ends within its warm-up.
    started: Mutex<Option<ThreadSample>>,
    /// For a job that starts after the run: the thread's counters when
    /// its job's own window opened, which its figures count from.
    opened: Mutex<Option<ThreadSample>>,
    /// For a job with a `runtime`: the thread's counters when its job's
    /// thread acted on its end, which its figures count to.
    closed: Mutex<Option<ThreadSample>>,
}

impl ThreadProbe {
    /// Called by the thread itself when it starts.
    fn register(&self) {
        self.tid.store(sys::gettid(), Ordering::Release);
        if let Some(clock) = sys::own_cpu_clock() {
            let _ = self.clock.set(clock);
        }
    }

    /// Called by the thread itself as it finishes.
    fn finish(&self) {
        // The CPU clock before the `/proc` read, which takes tens of
        // microseconds of this thread's time after its work.
        let cpu_ns = sys::thread_cpu_time();
        let switches = sys::own_switches();
        let (usr_ns, sys_ns) = proc_user_system(sys::gettid()).unwrap_or_default();
        let sample = ThreadSample {
            cpu_ns,
            voluntary: switches.voluntary,
            involuntary: switches.involuntary,
            usr_ns,
            sys_ns,
        };
        if let Ok(mut last) = self.last.lock() {
            *last = Some(sample);
        }
    }

    /// Notes the counters of a job thread and its helpers (`group`) as
    /// its job starts its work, read by the job's thread (a helper not
    /// registered yet counts from its creation), as at an opening edge.
    fn note_started(group: &[Arc<ThreadProbe>]) {
        Self::note(group, true, |p| &p.started);
    }

    /// The thread's counters over its whole life in its job, for a job
    /// that ended within its warm-up: from its job's start (its creation
    /// where it was not noted then) to its finish.
    fn over_life(&self) -> (ThreadSample, ThreadSample) {
        let finished = noted_or(&self.last, ThreadSample::default());
        (noted_or(&self.started, ThreadSample::default()), finished)
    }

    /// Notes the counters of a job thread and its helpers (`group`) as
    /// its job's own window opens, read by the job's thread: the `/proc`
    /// reads first, then the CPU clocks, so that the reads, tens of
    /// microseconds each, do not count as the window's (as at the run's
    /// opening edge, [`sample_edge`]).
    fn note_opened(group: &[Arc<ThreadProbe>]) {
        Self::note(group, true, |p| &p.opened);
    }

    /// Notes the counters of a job thread and its helpers (`group`) as
    /// the job's thread acts on its `runtime`'s end: the CPU clocks
    /// first, then the `/proc` reads (as at the run's closing edge,
    /// [`sample_edge`]).
    fn note_closed(group: &[Arc<ThreadProbe>]) {
        Self::note(group, false, |p| &p.closed);
    }

    /// Samples `group` as at a window's edge (`opening` or closing,
    /// [`sample_probes`]) into the slot `slot` picks in each probe.
    fn note(
        group: &[Arc<ThreadProbe>],
        opening: bool,
        slot: impl Fn(&ThreadProbe) -> &Mutex<Option<ThreadSample>>,
    ) {
        let probes: Vec<&ThreadProbe> = group.iter().map(|p| &**p).collect();
        for (probe, sample) in probes.iter().zip(sample_probes(&probes, opening)) {
            if let Ok(mut noted) = slot(probe).lock() {
                *noted = Some(sample);
            }
        }
    }

    /// Where the thread's counts in its job's window end: its counters as
    /// its job's thread acted on its `runtime`'s end, or else at the
    /// run's closing edge (or its exit).
    fn counted_to(&self, run_window: ThreadSample) -> ThreadSample {
        noted_or(&self.closed, run_window)
    }

    /// Where the thread's counts in its job's window start from: its
    /// counters as its job's own window opened, or else at the run's.
    fn counted_from(&self, run_window: ThreadSample) -> ThreadSample {
        noted_or(&self.opened, run_window)
    }

    /// The thread's CPU time now (read from another thread), `None` once
    /// it has exited.
    fn cpu_now(&self) -> Option<u64> {
        self.clock.get().and_then(|&clock| sys::read_clock(clock))
    }

    /// The thread's counters, with `cpu_ns` its CPU time as read by
    /// [`ThreadProbe::cpu_now`]; what it measured of itself as it
    /// finished if it has exited.
    fn sample(&self, cpu_ns: Option<u64>) -> ThreadSample {
        let tid = self.tid.load(Ordering::Acquire);
        match cpu_ns {
            Some(cpu_ns) => {
                let (voluntary, involuntary) = proc_switches(tid).unwrap_or_default();
                let (usr_ns, sys_ns) = proc_user_system(tid).unwrap_or_default();
                ThreadSample {
                    cpu_ns,
                    voluntary,
                    involuntary,
                    usr_ns,
                    sys_ns,
                }
            }
            None => self
                .last
                .lock()
                .ok()
                .and_then(|last| *last)
                .unwrap_or_default(),
        }
    }
}

/// The sample noted in `slot`, or else `otherwise`.
fn noted_or(slot: &Mutex<Option<ThreadSample>>, otherwise: ThreadSample) -> ThreadSample {
    slot.lock()
        .ok()
        .and_then(|noted| *noted)
        .unwrap_or(otherwise)
}

/// The tracked threads' counters at one edge of the window. Their CPU
/// clocks are read together on the window's side of the `/proc` reads
/// (after them where the window opens, before them where it closes):
/// each `/proc` read takes tens of microseconds, hundreds when this
/// thread is preempted, which read in turn with the clocks would count
/// in the threads' CPU time as if it were the window's.
fn sample_edge(tracked: &[Tracked], opening: bool) -> Vec<ThreadSample> {
    let probes: Vec<&ThreadProbe> = tracked.iter().map(|t| &*t.probe).collect();
    sample_probes(&probes, opening)
}

/// The counters of `probes` at a window's edge, their CPU clocks read
/// together on the window's side of the `/proc` reads ([`sample_edge`]'s
/// rule, which a job's own edges follow too).
fn sample_probes(probes: &[&ThreadProbe], opening: bool) -> Vec<ThreadSample> {
    let clocks = || -> Vec<Option<u64>> { probes.iter().map(|p| p.cpu_now()).collect() };
    if opening {
        let mut samples: Vec<ThreadSample> = probes.iter().map(|p| p.sample(p.cpu_now())).collect();
        for (sample, cpu) in samples.iter_mut().zip(clocks()) {
            if let Some(cpu) = cpu {
                sample.cpu_ns = cpu;
            }
        }
        samples
    } else {
        let cpus = clocks();
        probes
            .iter()
            .zip(cpus)
            .map(|(p, cpu)| p.sample(cpu))
            .collect()
    }
}

/// A thread's identity for window accounting.
struct Tracked {
    job: Option<usize>,
    probe: Arc<ThreadProbe>,
}

#[derive(Clone, Copy, Default)]
struct ThreadSample {
    cpu_ns: u64,
    voluntary: u64,
    involuntary: u64,
    /// The kernel's user and system time of the thread (what
    /// `getrusage` reports: its exact CPU time split in the proportion of
    /// the user and system ticks it was seen in), ns.
    usr_ns: u64,
    sys_ns: u64,
}

/// User and system time of thread `tid` of this process, ns: fields 14
/// and 15 of `/proc/self/task/TID/stat`, in clock ticks.
fn proc_user_system(tid: i32) -> Option<(u64, u64)> {
    if tid <= 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields are
    // counted after its closing one (field 3 is the first there).
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ns_per_tick = 1_000_000_000 / u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some((utime * ns_per_tick, stime * ns_per_tick))
}

/// Voluntary and involuntary context switches of thread `tid` of this
/// process: the counters `getrusage(RUSAGE_THREAD)` reports, read from
/// `/proc` because getrusage only reports the calling thread.
fn proc_switches(tid: i32) -> Option<(u64, u64)> {
    if tid <= 0 {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    let (mut voluntary, mut involuntary) = (0, 0);
    for line in status.lines() {
        let value = |l: &str| {
            l.split(':')
                .nth(1)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        if line.starts_with("voluntary_ctxt_switches") {
            voluntary = value(line);
        } else if line.starts_with("nonvoluntary_ctxt_switches") {
            involuntary = value(line);
        }
    }
    Some((voluntary, involuntary))
}

/// What every job thread needs to know about the device it submits to.
struct Target {
    /// Bytes a request may address: the file's size, else the profile's capacity.
    span: u64,
    /// Whether requests carry real buffers (io_uring moves data).
    needs_buffers: bool,
    /// The file `fsync` and `fdatasync` sync: the io_uring backend's.
    sync_path: Option<String>,
}

/// A trace whose requests reach past what the backend holds (the
/// io_uring backend's file) is refused by name: the load checked it
/// against the device's capacity, and a real file would cut it short.
fn refuse_trace_past(scenario: &Scenario, target: &Target) -> Result<(), EmuError> {
    for job in &scenario.jobs {
        let Some(trace) = job.io().and_then(|io| io.shape.trace.as_ref()) else {
            continue;
        };
        let reach = crate::replay::reach(trace);
        if reach > target.span {
            return Err(unsupported(
                format!("job.{}.trace", job.name),
                format!(
                    "the trace reaches byte {reach}, past the {} bytes the emulator's backend \
                     holds (its file): give the backend a file that large, or replay on the \
                     synthetic device",
                    target.span
                ),
            ));
        }
    }
    Ok(())
}

/// Runs one strategy: starts the device, its job threads, measures the
/// window, and sums what was measured.
fn run_strategy(
    scenario: &Scenario,
    layout: &CpuLayout,
    (strategy, strategy_index): (&Strategy, u64),
    sleep_granularity: Nanos,
) -> Result<(StrategyResult, StrategyDetail), EmuError> {
    let (config, target) = device_config(scenario, layout, strategy, strategy_index)?;
    refuse_trace_past(scenario, &target)?;
    let selector = crate::select::build(scenario, strategy)?;
    let emulator = Emulator::start(config)?;
    // The device's queue depth is the block layer's tags, as the
    // simulator keeps them: submitters beyond them wait for one.
    emulator.limit_tags(scenario.device.queue_depth)?;
    let threads: Vec<usize> = scenario.jobs.iter().map(|j| j.numjobs as usize).collect();
    let stages = stages(scenario);
    let group_of = stages.iter().map(|s| s.map_or(0, |s| s.group)).collect();
    let steady: Vec<_> = scenario
        .jobs
        .iter()
        .map(|job| job.io().and_then(|io| io.shape.steady))
        .collect();
    let control = Arc::new(Control::new(&threads, group_of, &steady));
    let clocks = CoreClocks::new(crate::activity::core_groups(scenario, &layout.app));
    for queue in 0..layout.app.len() {
        if let Some(pair) = clocks.for_queue(queue) {
            emulator.report_activity(queue, pair);
        }
    }
    let threads = JobThreads {
        strategy,
        control: &control,
        target: &target,
        selector,
        host_in_flight: Arc::default(),
        clocks: &clocks,
        stages: &stages,
        sleep_granularity,
    };
    let StartedThreads {
        mut tracked,
        handles,
        gate,
    } = start_job_threads(scenario, layout, &emulator, &threads)?;
    tracked.extend(handler_threads(&emulator));
    let window = measure(
        scenario,
        layout,
        (&emulator, &gate),
        &control,
        (&tracked, &clocks),
    );
    let outcomes = join_job_threads(
        scenario,
        handles,
        drain_patience(scenario, strategy),
        &|| emulator.completions_posted(),
    );
    let final_stats = emulator.shutdown()?;
    let outcomes = outcomes?;
    let (mut result, mut detail) = summarise(
        scenario,
        (layout, clocks.groups()),
        strategy,
        &tracked,
        (&outcomes, &stages),
        &window,
        &final_stats,
    );
    // A job that never started has its group's note instead.
    for ((job, detail), j) in scenario.jobs.iter().zip(&mut detail.jobs).zip(0..) {
        if detail.span.is_some() {
            detail.steady_note = control.steady_note(j, &strategy.name, &job.name);
        }
    }
    for (j, job) in result.jobs.iter_mut().enumerate() {
        if let Some(fio) = &mut job.fio {
            fio.steadystate = control.steady_fio(j);
        }
    }
    Ok((result, detail))
}

/// The device for one strategy: its queues on the application cores, its
/// backend, and the span requests address.
fn device_config(
    scenario: &Scenario,
    layout: &CpuLayout,
    strategy: &Strategy,
    strategy_index: u64,
) -> Result<(DeviceConfig, Target), EmuError> {
    let mode = match strategy.mode {
        CompletionMode::Interrupt(p) => QueueMode::Interrupt(p),
        // The strategy's `interrupts` policy (`none` by default) for the
        // requests not submitted as polled; the polled ones bypass it (a
        // queue with poll queues beside it, as Linux sets one up).
        CompletionMode::ModeSelect => QueueMode::Interrupt(strategy.interrupts),
        CompletionMode::Poll | CompletionMode::HybridPoll(_) => QueueMode::Poll,
    };
    let backend = match scenario.emu.backend {
        BackendKind::Synthetic => BackendConfig::Synthetic {
            profile: scenario.device.clone(),
            seed: scenario.seed ^ strategy_index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        },
        BackendKind::IoUring => match &scenario.emu.path {
            Some(path) => BackendConfig::IoUring {
                file: FileSource::Path(path.clone()),
            },
            None => {
                return Err(EmuError::Config(
                    "[emu] backend = \"io_uring\" needs [emu] path".into(),
                ))
            }
        },
    };
    let span = match &backend {
        BackendConfig::IoUring {
            file: FileSource::Path(path),
        } => std::fs::metadata(path)
            .map_err(|e| EmuError::Backend(format!("cannot stat {path}: {e}")))?
            .len(),
        _ => scenario.device.capacity.0,
    };
    let needs_buffers = matches!(backend, BackendConfig::IoUring { .. });
    let config = DeviceConfig {
        device_cpu: layout.device,
        queues: layout
            .app
            .iter()
            .map(|&(_, real)| QueueConfig {
                app_cpu: real,
                mode,
            })
            .collect(),
        backend,
        realtime: scenario.emu.realtime,
        idle_delivery: scenario.emu.idle_delivery,
    };
    let sync_path = match &config.backend {
        BackendConfig::IoUring {
            file: FileSource::Path(path),
        } => Some(path.clone()),
        _ => None,
    };
    Ok((
        config,
        Target {
            span,
            needs_buffers,
            sync_path,
        },
    ))
}

/// A job thread and the job it belongs to.
type JobThread = (usize, JoinHandle<Result<ThreadOutcome, EmuError>>);

/// What every job thread of one strategy's run shares.
struct JobThreads<'a> {
    strategy: &'a Strategy,
    control: &'a Arc<Control>,
    target: &'a Target,
    /// Under `mode-select`: the selector each I/O thread starts from.
    selector: Option<cint_policy::mode_select::ModeSelect>,
    /// Requests in flight on the host, all threads (what the selector
    /// is told).
    host_in_flight: Arc<std::sync::atomic::AtomicU64>,
    /// Where SMT siblings both run threads: the clocks they report their
    /// states to.
    clocks: &'a CoreClocks,
    /// Each job's start, where it does not start with the run.
    stages: &'a [Option<Stage>],
    /// fio's sleep granularity, measured before the threads start.
    sleep_granularity: Nanos,
}

/// Spawns every job's threads, each pinned to its core, and lets them go
/// together once all are ready; if one cannot start (a client refused, a
/// pinning or spawn failure), none runs, all are joined, and the error
/// is returned.
fn start_job_threads(
    scenario: &Scenario,
    layout: &CpuLayout,
    emulator: &Emulator,
    threads: &JobThreads<'_>,
) -> Result<StartedThreads, EmuError> {
    let control = threads.control;
    let start = sys::now();
    control.run_start.store(start, Ordering::Relaxed);
    let thread_count: usize = scenario.jobs.iter().map(|j| j.numjobs as usize).sum();
    let gate = Arc::new(StartGate::default());
    let mut tracked = Vec::new();
    let mut handles = Vec::with_capacity(thread_count);
    let mut failure: Option<EmuError> = None;

    let flows = crate::flow::flows_of(scenario);
    'jobs: for (job_index, job) in scenario.jobs.iter().enumerate() {
        for thread in 0..job.numjobs {
            let place = ThreadPlace {
                job_index,
                thread,
                flow: &flows[job_index],
            };
            let mut specs = match thread_specs(scenario, layout, emulator, threads, place) {
                Ok(specs) => specs,
                Err(e) => {
                    failure = Some(e);
                    break 'jobs;
                }
            };
            let probes: Vec<Arc<ThreadProbe>> = specs
                .iter()
                .map(|_| Arc::new(ThreadProbe::default()))
                .collect();
            // Under a warm-up a job's thread notes its counters and its
            // helpers' as it starts, for a job that ends within it.
            if scenario.warmup > 0 {
                let group = probes.clone();
                specs[0].0.plan.on_start =
                    Some(Arc::new(move || ThreadProbe::note_started(&group)));
            }
            // A staged job's thread notes its own counters and its
            // helpers' (SQ thread, workers) as its window opens: its
            // figures count from there, as its requests do, where the
            // run's window would count its warm-up too.
            if threads.stages[job_index].is_some() {
                let group = probes.clone();
                specs[0].0.plan.on_window =
                    Some(Arc::new(move || ThreadProbe::note_opened(&group)));
            }
            // A job with a runtime ends its window when its threads have
            // drained their requests after it, as fio's runtime ends.
            if job.runtime.is_some() {
                let group = probes.clone();
                specs[0].0.plan.on_stop = Some(Arc::new(move || ThreadProbe::note_closed(&group)));
            }
            for ((spec, queue), probe) in specs.into_iter().zip(probes) {
                tracked.push(Tracked {
                    job: Some(job_index),
                    probe: Arc::clone(&probe),
                });
                let spawned = spawn_job_thread(
                    spec,
                    (layout.app[queue].1, threads.clocks.for_queue(queue)),
                    probe,
                    (Arc::clone(control), Arc::clone(&gate)),
                );
                match spawned {
                    Ok(h) => handles.push((job_index, h)),
                    Err(e) => {
                        failure = Some(EmuError::Thread(e.to_string()));
                        break 'jobs;
                    }
                }
            }
        }
    }
    while failure.is_none() && gate.ready.load(Ordering::SeqCst) < handles.len() {
        sys::sleep_ns(50_000);
    }
    if failure.is_none() {
        failure = gate.failure().map(EmuError::Pinning);
    }
    if let Some(e) = failure {
        gate.open(false);
        for (_, handle) in handles {
            let _ = handle.join();
        }
        return Err(e);
    }
    // Every thread is pinned and waiting: `measure` lets them go.
    Ok(StartedThreads {
        tracked,
        handles,
        gate,
    })
}

/// Where one thread of a job stands: its job, its number in the job and
/// the job's flow.
#[derive(Clone, Copy)]
struct ThreadPlace<'a> {
    job_index: usize,
    thread: u32,
    flow: &'a Option<(Arc<crate::flow::Flow>, u32, Nanos)>,
}

/// The threads one thread of a job runs as, each with the queue of the
/// core it runs on: the thread itself; its SQ thread where its ring is
/// SQ-polled; its workers where it offloads. Each gets its client here,
/// in that order; a refusal drops those already taken.
fn thread_specs(
    scenario: &Scenario,
    layout: &CpuLayout,
    emulator: &Emulator,
    threads: &JobThreads<'_>,
    place: ThreadPlace<'_>,
) -> Result<Vec<(ThreadSpec, usize)>, EmuError> {
    let ThreadPlace {
        job_index, thread, ..
    } = place;
    let job = &scenario.jobs[job_index];
    let JobThreads {
        strategy, target, ..
    } = *threads;
    let Some(queue) = layout.queue_of(job.thread_cpu(thread)) else {
        return Err(EmuError::Internal(format!("job {} has no queue", job.name)));
    };
    let real_cpu = layout.app[queue].1;
    let io = job.io().cloned();
    // An offloaded job's thread hands its requests to `iodepth`
    // workers of its own, each at depth 1; it submits none itself.
    let pool = io
        .as_ref()
        .filter(|io| io.offload)
        .map(|io| Arc::new(OffloadPool::new(io.iodepth.max(1) as usize)));
    let client_depth = |io: &cint_scenario::IoJob| {
        if io.engine.is_sync() || pool.is_some() {
            1
        } else {
            (io.iodepth.max(1) as usize).min(MAX_QUEUE_DEPTH)
        }
    };
    let client = match &io {
        Some(io) => Some(emulator.client(queue, client_depth(io))?),
        None => None,
    };
    // A CPU-bound thread runs on its core while it burns:
    // interrupts there must preempt it, never wait for it. One that
    // starts with the run counts from before the run starts, so
    // that no I/O thread's first interrupt finds the core idle
    // before it; one of a later group or delayed, from its start.
    let occupant = match (&io, threads.stages[job_index]) {
        (Some(_), _) => Ok((None, None)),
        (None, None) => emulator.occupant(queue).map(|o| (Some(o), None)),
        (None, Some(_)) => emulator.occupant_later(queue).map(|o| (None, Some(o))),
    };
    let (occupant, occupant_later) = occupant?;
    let plan = |offload: Option<OffloadRole>, occupant: Option<PendingOccupant>| ThreadPlan {
        job: job_index,
        io: io.clone(),
        mode: strategy.mode,
        runtime: measured_runtime(job, scenario.warmup),
        runtime_in_warmup: job.runtime.filter(|&r| r <= scenario.warmup),
        stage: threads.stages[job_index],
        window_from: None,
        sync_path: target.sync_path.clone(),
        flow: place.flow.clone(),
        span: io.as_ref().map_or(0, |io| {
            let largest = cint_scenario::shape::largest_block(&io.shape, io.bs);
            io.size.min(target.span).max(largest)
        }),
        needs_buffers: target.needs_buffers,
        seed: scenario.seed ^ ((job_index as u64) << 32) ^ u64::from(thread),
        ramp: scenario.warmup > 0,
        select: threads.selector.zip(io.as_ref()).map(|(selector, io)| {
            let open_idle = || IdleWatch::open(real_cpu, &profile_idle_states(scenario));
            ThreadSelect::new(selector, io, Arc::clone(&threads.host_in_flight), open_idle)
        }),
        trace: io
            .as_ref()
            .and_then(|io| io.shape.trace.as_ref())
            .map(|tr| TraceCursor::new(tr, thread as usize)),
        occupant,
        offload,
        sleep_granularity: threads.sleep_granularity,
        sqpoll: None,
        on_start: None,
        on_window: None,
        on_stop: None,
    };
    // Each thread to spawn, and the queue of the core it runs on.
    let mut specs = vec![(
        ThreadSpec {
            name: format!("cint-job-{}-{thread}", job.name),
            plan: plan(
                pool.clone()
                    .map(|pool| OffloadRole::Main(Dispatch::new(pool))),
                occupant_later,
            ),
            client,
            occupant,
        },
        queue,
    )];
    // An SQ-polled ring's thread fills it; its SQ thread, on
    // `sqpoll_cpu` or else the same core, submits through a client
    // of its own, on that core's queue.
    if let Some(io) = io.as_ref().filter(|io| io.sqpoll.is_some()) {
        let sq_core = cint_scenario::sqpoll::submitting_core(scenario, job, thread);
        let Some(sq_queue) = layout.queue_of(sq_core) else {
            return Err(EmuError::Internal(format!(
                "job {}'s SQ thread has no queue on core {sq_core}",
                job.name
            )));
        };
        let ring = Arc::new(SqRing::default());
        specs[0].0.plan.sqpoll = Some(SqRole::Ring(RingHandle {
            ring: Arc::clone(&ring),
        }));
        let client = emulator.client(sq_queue, client_depth(io))?;
        let mut sq = plan(None, None);
        sq.select = None;
        sq.sqpoll = Some(SqRole::SqThread(ring));
        specs.push((
            ThreadSpec {
                name: format!("cint-sq-{}-{thread}", job.name),
                plan: sq,
                client: Some(client),
                occupant: None,
            },
            sq_queue,
        ));
    }
    if let (Some(pool), Some(io)) = (&pool, &io) {
        // The selector is per thread: the workers' decide for the
        // requests they run; the main thread runs none.
        specs[0].0.plan.select = None;
        for w in 0..pool.depth() {
            let client = emulator.client(queue, client_depth(io))?;
            specs.push((
                ThreadSpec {
                    name: format!("cint-job-{}-{thread}-w{w}", job.name),
                    plan: plan(Some(OffloadRole::Worker(Arc::clone(pool), w)), None),
                    client: Some(client),
                    occupant: None,
                },
                queue,
            ));
        }
    }
    Ok(specs)
}

/// One job thread to spawn: its name, plan, client and, for a CPU-bound
/// thread that starts with the run, its place among what runs on its
/// core.
struct ThreadSpec {
    name: String,
    plan: ThreadPlan,
    client: Option<Client>,
    occupant: Option<Occupant>,
}

/// Spawns the thread of `spec`: it registers its probe, pins itself to
/// `real_cpu` and reports to `activity`'s clocks, waits at the gate,
/// then runs its plan.
fn spawn_job_thread(
    spec: ThreadSpec,
    (real_cpu, activity): (u32, Option<crate::activity::ClockPair>),
    probe: Arc<ThreadProbe>,
    (control, gate): (Arc<Control>, Arc<StartGate>),
) -> std::io::Result<JoinHandle<Result<ThreadOutcome, EmuError>>> {
    let ThreadSpec {
        name,
        plan,
        client,
        occupant,
    } = spec;
    std::thread::Builder::new()
        .name(name)
        .spawn(move || -> Result<ThreadOutcome, EmuError> {
            probe.register();
            let pinned = sys::pin_to(real_cpu);
            if let Err(e) = &pinned {
                gate.fail(e.clone());
            }
            gate.ready.fetch_add(1, Ordering::SeqCst);
            if !gate.wait_for_go() {
                return Ok(ThreadOutcome::default());
            }
            pinned.map_err(EmuError::Pinning)?;
            if let Some(clocks) = activity {
                crate::activity::attach(clocks);
            }
            let outcome = run_thread(plan, client, &control);
            crate::activity::detach();
            drop(occupant);
            probe.finish();
            Ok(outcome)
        })
}

/// The job threads, pinned and waiting at their gate.
struct StartedThreads {
    tracked: Vec<Tracked>,
    handles: Vec<JobThread>,
    gate: Arc<StartGate>,
}

/// The device's interrupt handler threads, tracked for the window's CPU
/// time and context switches like the job threads.
fn handler_threads(emulator: &Emulator) -> Vec<Tracked> {
    emulator
        .handler_threads()
        .into_iter()
        .map(|(tid, clock)| {
            let probe = ThreadProbe {
                tid: AtomicI32::new(tid),
                ..Default::default()
            };
            if let Some(clock) = clock {
                let _ = probe.clock.set(clock);
            }
            Tracked {
                job: None,
                probe: Arc::new(probe),
            }
        })
        .collect()
}

/// What the measurement window saw: the machine's, the device's and every
/// tracked thread's counters at its two ends.
struct Window {
    usage_before: sys::CpuUsage,
    usage_after: sys::CpuUsage,
    energy_before: crate::energy::EnergySnapshot,
    energy_after: crate::energy::EnergySnapshot,
    /// The SMT siblings' clocks, per physical core.
    activity_before: Vec<CoreReading>,
    activity_after: Vec<CoreReading>,
    stats_before: DeviceStats,
    stats_after: DeviceStats,
    samples_before: Vec<ThreadSample>,
    samples_after: Vec<ThreadSample>,
    /// When it began (the clock's instant).
    start: Nanos,
    /// When the job threads' completions began to count: `start`, except
    /// where the run ended within its warm-up and its window is its
    /// whole span.
    counting_from: Nanos,
    /// The run's start, the instant the threads' `runtime`s count from.
    run_start: Nanos,
    /// When the job threads were let go: the start of a job that starts
    /// with the run.
    released: Nanos,
    /// The scenario's warm-up.
    warmup: Nanos,
    /// Its length, ns (at least 1).
    ns: u64,
}

/// The machine's, the device's and the tracked threads' counters at a
/// window's opening edge.
struct Opening {
    energy: crate::energy::EnergySnapshot,
    usage: sys::CpuUsage,
    samples: Vec<ThreadSample>,
    activity: Vec<CoreReading>,
    stats: DeviceStats,
}

impl Opening {
    /// Reads them, the fast counters next to the edge and the `/proc`
    /// reads before them.
    fn read(
        app_cpus: &[u32],
        emulator: &Emulator,
        (tracked, clocks): (&[Tracked], &CoreClocks),
    ) -> Opening {
        let energy = crate::energy::snapshot(app_cpus);
        let usage = sys::cpu_usage();
        let samples = sample_edge(tracked, true);
        let activity = clocks.read();
        let stats = emulator.stats();
        Opening {
            energy,
            usage,
            samples,
            activity,
            stats,
        }
    }
}

/// Waits until every job thread has ended, at most `most`: whether they
/// have.
fn wait_for_every_thread(scenario: &Scenario, control: &Control, most: Nanos) -> bool {
    let threads: usize = scenario.jobs.iter().map(|j| j.numjobs as usize).sum();
    let most = std::time::Duration::from_nanos(most);
    // A poisoned count is a panicked thread's, found when it is joined:
    // wait the whole time then.
    match control.ended.lock() {
        Ok(ended) => control
            .ended_changed
            .wait_timeout_while(ended, most, |ended| *ended < threads)
            .is_ok_and(|(ended, _)| *ended >= threads),
        Err(_) => {
            sys::sleep_ns(most.as_nanos() as Nanos);
            false
        }
    }
}

/// Waits out the warm-up, then measures for the scenario's duration (under
/// `run_to_end`, until every job thread has ended, at most that long) and
/// tells the job threads to stop.
fn measure(
    scenario: &Scenario,
    layout: &CpuLayout,
    (emulator, gate): (&Emulator, &StartGate),
    control: &Control,
    (tracked, clocks): (&[Tracked], &CoreClocks),
) -> Window {
    let app_cpus: Vec<u32> = layout.app.iter().map(|&(_, real)| real).collect();
    let open = || Opening::read(&app_cpus, emulator, (tracked, clocks));
    // Without a warm-up the window opens before the threads go, so that it
    // counts their first requests (taking the samples below takes a
    // while, hundreds of microseconds of /proc, in which a thread let go
    // first completed requests the window then missed). A run that ends
    // with its jobs may end within its warm-up: its window is then its
    // whole span, as the simulator's, read from before the threads go.
    let mut whole_run = None;
    let mut released = None;
    if scenario.warmup > 0 {
        let at_release = scenario.run_to_end.then(open);
        released = Some(sys::now());
        gate.open(true);
        if scenario.run_to_end {
            if wait_for_every_thread(scenario, control, scenario.warmup) {
                whole_run = at_release;
            }
        } else {
            sys::sleep_ns(scenario.warmup);
        }
    }
    let ended_in_warmup = whole_run.is_some();
    let opening = whole_run.unwrap_or_else(open);
    let window_start = control.open_window();
    let released = released.unwrap_or_else(|| {
        gate.open(true);
        window_start
    });
    if scenario.run_to_end {
        wait_for_every_thread(scenario, control, scenario.duration);
    } else {
        sys::sleep_ns(scenario.duration);
    }
    let activity_after = clocks.read();
    // The window closes before its closing samples are taken: those take
    // hundreds of microseconds of /proc (more when this thread is
    // preempted), in which the threads completed requests that used to
    // be counted against a window that had ended, so a device-bound job
    // could show more than the device's bandwidth.
    let window_end = control.close_window();
    let start = if ended_in_warmup {
        released
    } else {
        window_start
    };
    let ns = window_end.saturating_sub(start).max(1);
    // Sample before stopping: a stopped thread's clock and /proc entry
    // disappear.
    let stats_after = emulator.stats();
    let samples_after = sample_edge(tracked, false);
    let usage_after = sys::cpu_usage();
    let energy_after = crate::energy::snapshot(&app_cpus);
    control.stop();
    Window {
        usage_before: opening.usage,
        usage_after,
        energy_before: opening.energy,
        energy_after,
        activity_before: opening.activity,
        activity_after,
        stats_before: opening.stats,
        stats_after,
        samples_before: opening.samples,
        samples_after,
        start,
        counting_from: window_start,
        run_start: control.run_start.load(Ordering::Relaxed),
        released,
        warmup: scenario.warmup,
        ns,
    }
}

/// How long the job threads may drain without a request completing
/// before the run is declared stuck: a minute, plus the longest one
/// request of the scenario takes alone on the synthetic device (its
/// media time, its largest transfer, a trace's included, and twenty
/// jitter spreads), plus the longest the strategy's timers hold a
/// completion after the last one is posted. A drain takes what the
/// requests in flight take, milliseconds on the profiled devices, but a
/// scenario may make one request take an hour, or hold completions as
/// long.
fn drain_patience(scenario: &Scenario, strategy: &Strategy) -> std::time::Duration {
    let device = &scenario.device;
    let largest = scenario
        .jobs
        .iter()
        .filter_map(|job| job.io())
        .map(|io| match &io.shape.trace {
            // A trace's requests have the sizes it recorded.
            Some(trace) => crate::replay::largest(trace),
            None => cint_scenario::shape::largest_block(&io.shape, io.bs),
        })
        .max()
        .unwrap_or(0);
    let alone = |op: &cint_scenario::profiles::OpTiming| {
        let transfer = match op.bandwidth {
            0 => 0,
            bw => (u128::from(largest) * 1_000_000_000 / u128::from(bw)) as Nanos,
        };
        op.base.0.saturating_add(transfer)
    };
    let request = alone(&device.read)
        .max(alone(&device.write))
        .saturating_add(device.jitter_spread.0.saturating_mul(20));
    let hold = longest_hold(&strategy.interrupts);
    std::time::Duration::from_secs(60)
        + std::time::Duration::from_nanos(request.saturating_add(hold))
}

/// The longest a policy's timers keep a posted completion once no other
/// is posted: adaptive's `delta` from the last completion, NVMe's
/// aggregation time, and under cinterrupts also the storm guard's gap
/// between two hint-triggered interrupts. vIC has no timer: a held
/// completion goes with a later one, and each one once the commands in
/// flight fall below its threshold.
fn longest_hold(config: &cint_policy::PolicyConfig) -> Nanos {
    use cint_policy::PolicyConfig;
    match config {
        PolicyConfig::None | PolicyConfig::Vic(_) | PolicyConfig::VicSched(_) => 0,
        PolicyConfig::Nvme(p) => p.time,
        PolicyConfig::Adaptive(p) => p.delta,
        PolicyConfig::Cinterrupts(p) => p.adaptive.delta.max(
            p.max_irq_rate
                .map_or(0, |rate| cint_policy::SEC / rate.max(1)),
        ),
    }
}

/// Every job thread's outcome, per job; the last thread's error if one
/// failed or panicked. Threads still running once `progress` (the
/// requests completed so far) has not moved for `patience` make it an
/// internal error naming their jobs, where waiting for them hung the run
/// without a word (a thread left asleep for a driver tag by a pool that
/// never woke it did).
fn join_job_threads(
    scenario: &Scenario,
    handles: Vec<JobThread>,
    patience: std::time::Duration,
    progress: &dyn Fn() -> u64,
) -> Result<Vec<Vec<ThreadOutcome>>, EmuError> {
    let mut seen = progress();
    let mut until = std::time::Instant::now() + patience;
    while handles.iter().any(|(_, h)| !h.is_finished()) {
        let now = progress();
        if now != seen {
            seen = now;
            until = std::time::Instant::now() + patience;
        } else if std::time::Instant::now() >= until {
            let mut stuck: Vec<&str> = handles
                .iter()
                .filter(|(_, h)| !h.is_finished())
                .filter_map(|(j, _)| scenario.jobs.get(*j).map(|job| job.name.as_str()))
                .collect();
            let threads = stuck.len();
            stuck.dedup();
            return Err(EmuError::Internal(format!(
                "{threads} thread(s) of job(s) '{}' had not finished draining after the run's \
                 end, and no request had completed for {} s: the emulator stopped making \
                 progress",
                stuck.join("', '"),
                patience.as_secs()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut outcomes: Vec<Vec<ThreadOutcome>> = scenario.jobs.iter().map(|_| Vec::new()).collect();
    let mut thread_error = None;
    for (job_index, handle) in handles {
        match handle.join() {
            Ok(Ok(outcome)) => outcomes[job_index].push(outcome),
            Ok(Err(e)) => thread_error = Some(e),
            Err(_) => thread_error = Some(EmuError::Internal("a job thread panicked".into())),
        }
    }
    match thread_error {
        Some(e) => Err(e),
        None => Ok(outcomes),
    }
}

/// The strategy's result and detail from what its threads and the window
/// measured.
fn summarise(
    scenario: &Scenario,
    (layout, groups): (&CpuLayout, &[CoreGroup]),
    strategy: &Strategy,
    tracked: &[Tracked],
    (outcomes, stages): (&[Vec<ThreadOutcome>], &[Option<Stage>]),
    window: &Window,
    final_stats: &DeviceStats,
) -> (StrategyResult, StrategyDetail) {
    let window_ns = window.ns;
    let window_s = window_ns as f64 / 1e9;
    let (samples_before, samples_after) = (&window.samples_before, &window.samples_after);
    let (stats_before, stats_after) = (&window.stats_before, &window.stats_after);
    let mut total_switches = 0;
    for k in 0..tracked.len() {
        let before = samples_before[k];
        let after = samples_after[k];
        let switches = after.voluntary.saturating_sub(before.voluntary)
            + after.involuntary.saturating_sub(before.involuntary);
        total_switches += switches;
    }
    let (jobs, job_details): (Vec<JobResult>, Vec<JobDetail>) = scenario
        .jobs
        .iter()
        .enumerate()
        .map(|(job_index, job)| {
            summarise_job(
                job_index,
                job,
                tracked,
                &outcomes[job_index],
                window,
                stages[job_index].is_some(),
                measured_runtime(job, scenario.warmup),
            )
        })
        .unzip();
    let interrupts = stats_after.total_irqs() - stats_before.total_irqs();
    // Job threads' wake-ups plus the handlers': a handler is a thread on
    // the application core too, woken by every interrupt that finds it
    // asleep.
    let handler_wakeups = stats_after.handler_wakeups.iter().sum::<u64>()
        - stats_before.handler_wakeups.iter().sum::<u64>();
    let wakeups = job_details.iter().map(|j| j.wakeups).sum::<u64>() + handler_wakeups;
    let urgent = stats_after.total_urgent_irqs() - stats_before.total_urgent_irqs();
    let cpu_busy: Vec<(u32, f64)> = layout
        .app
        .iter()
        .map(|&(app, real)| {
            (
                app,
                sys::busy_fraction(&window.usage_before, &window.usage_after, real),
            )
        })
        .collect();
    let cpu_util = if cpu_busy.is_empty() {
        0.0
    } else {
        cpu_busy.iter().map(|c| c.1).sum::<f64>() / cpu_busy.len() as f64
    };
    let energy = energy_figures(scenario, (layout, groups), outcomes, window);
    let (energy_j, energy, energy_note) = match energy {
        Some((j, e, note)) => (Some(j), Some(e), note),
        None => (None, None, None),
    };
    let result = StrategyResult {
        strategy: strategy.name.clone(),
        kind: strategy.kind().to_string(),
        interrupts,
        interrupts_per_s: interrupts as f64 / window_s,
        urgent_interrupts: urgent,
        cpu_util,
        context_switches: total_switches,
        wakeups,
        energy_j,
        energy,
        virt: None,
        jobs,
    };
    let detail = StrategyDetail {
        name: strategy.name.clone(),
        irqs_total: final_stats.total_irqs(),
        completions_total: final_stats.total_completions(),
        waiter_irqs_total: final_stats.waiter_irqs.iter().sum(),
        handler_wakeups_total: final_stats.handler_wakeups.iter().sum(),
        realtime_handlers: final_stats.realtime_handlers,
        handlers: final_stats.handlers,
        window_ns,
        jobs: job_details,
        energy_note,
        idle_note: idle_watch_note(&strategy.name, outcomes),
        cpu_busy,
    };
    (result, detail)
}

/// The host profile's idle states, in its table's order (none without
/// power data).
fn profile_idle_states(scenario: &Scenario) -> Vec<ProfileState<'_>> {
    scenario.host.power.as_ref().map_or(Vec::new(), |p| {
        p.idle_states
            .iter()
            .map(|s| ProfileState {
                name: s.name.as_str(),
                polling: s.polling,
            })
            .collect()
    })
}

/// Under `mode-select`, what its threads' idle watches saw
/// (`crate::idle_watch`): the first reason one could not watch, or how
/// many waits were looked at and how many of them taught the selector
/// their state.
fn idle_watch_note(strategy: &str, outcomes: &[Vec<ThreadOutcome>]) -> Option<String> {
    let watches: Vec<&Result<(u64, u64), String>> = outcomes
        .iter()
        .flatten()
        .filter_map(|o| o.idle_watch.as_ref())
        .collect();
    if watches.is_empty() {
        return None;
    }
    if let Some(Err(why)) = watches.iter().find(|w| w.is_err()) {
        return Some(format!(
            "strategy '{strategy}': mode-select cannot see which idle state its waits reach \
             ({why}), so it predicts the state from the governor's rule"
        ));
    }
    let (sampled, observed) = watches
        .iter()
        .filter_map(|w| w.as_ref().ok())
        .fold((0, 0), |(s, o), (ws, wo)| (s + ws, o + wo));
    Some(format!(
        "strategy '{strategy}': mode-select looked at cpuidle's counters around {sampled} of \
         its waits (one in {}) and learnt the idle state reached from {observed}; the rest \
         did not block, blocked more than once, shared the CPU or ended in two deeper states",
        crate::idle_watch::OBSERVE_EVERY
    ))
}

/// The power model applied to each application CPU's measured busy and
/// idle time and its threads' spinning, combined per physical core where
/// SMT siblings both ran threads (`crate::energy`, `crate::activity`).
fn energy_figures(
    scenario: &Scenario,
    (layout, groups): (&CpuLayout, &[CoreGroup]),
    outcomes: &[Vec<ThreadOutcome>],
    window: &Window,
) -> Option<(f64, cint_report::EnergyResult, Option<String>)> {
    let cpus: Vec<CpuTime> = layout
        .app
        .iter()
        .map(|&(app, real)| {
            let busy = sys::busy_fraction(&window.usage_before, &window.usage_after, real);
            let spin_ns = scenario
                .jobs
                .iter()
                .zip(outcomes)
                .flat_map(|(job, threads)| {
                    (0..)
                        .zip(threads)
                        .filter(move |&(n, _)| job.thread_cpu(n) == app)
                })
                .map(|(_, o)| o.spin_ns)
                .sum();
            CpuTime {
                cpu: app,
                busy_ns: (busy * window.ns as f64) as u64,
                spin_ns,
            }
        })
        .collect();
    let mut cores = Vec::with_capacity(groups.len());
    for (k, group) in groups.iter().enumerate() {
        let before = window.activity_before.get(k).cloned().flatten();
        let after = window.activity_after.get(k).cloned().flatten();
        match before.zip(after) {
            Some(((core0, cpus0), (core1, cpus1))) => cores.push(PhysicalCore {
                core: group.core,
                cpus: group.cpus.iter().map(|&(_, queue)| queue).collect(),
                overlap: Some(Overlap {
                    cpus_active_ns: cpus1
                        .iter()
                        .zip(&cpus0)
                        .map(|(a, b)| a.since(b).active_ns())
                        .sum(),
                    core: core1.since(&core0),
                }),
            }),
            // Untracked siblings each count as a core (the note says so).
            None if group.cpus.len() > 1 => {
                cores.extend(group.cpus.iter().map(|&(cpu, queue)| PhysicalCore {
                    core: cpu,
                    cpus: vec![queue],
                    overlap: None,
                }));
            }
            None => cores.push(PhysicalCore {
                core: group.core,
                cpus: group.cpus.iter().map(|&(_, queue)| queue).collect(),
                overlap: None,
            }),
        }
    }
    let bytes = outcomes.iter().flatten().map(|o| o.bytes).sum();
    crate::energy::model(
        scenario,
        &cpus,
        &cores,
        (&window.energy_before, &window.energy_after),
        window.ns,
        bytes,
    )
}

/// Per strategy, when each job of each group ran, as the simulator says
/// it, for a run whose jobs start in turn (groups or start delays).
fn group_notes(scenario: &Scenario, details: &[StrategyDetail]) -> Vec<String> {
    let order = cint_scenario::staging::group_order(scenario);
    if !cint_scenario::staging::staged(scenario, &order) {
        return Vec::new();
    }
    let mut notes = Vec::new();
    for d in details {
        for &g in &order {
            let spans: Vec<cint_scenario::staging::JobSpan<'_>> = scenario
                .jobs
                .iter()
                .zip(&d.jobs)
                .filter(|(job, _)| job.schedule.group == g)
                .map(|(job, jd)| cint_scenario::staging::JobSpan {
                    name: &job.name,
                    ran: jd.span,
                })
                .collect();
            notes.push(cint_scenario::staging::group_note(&d.name, g, &spans));
        }
        if order.len() > 1 {
            notes.push(cint_scenario::staging::groups_in_turn_note(&d.name));
        }
    }
    notes
}

/// When each job starts, if not with the run: a later group's, or one
/// with a `startdelay`.
fn stages(scenario: &Scenario) -> Vec<Option<Stage>> {
    let order = cint_scenario::staging::group_order(scenario);
    scenario
        .jobs
        .iter()
        .map(|job| {
            let group = order.partition_point(|&g| g < job.schedule.group);
            (group > 0 || job.schedule.startdelay > 0).then_some(Stage {
                group,
                startdelay: job.schedule.startdelay,
                warmup: scenario.warmup,
            })
        })
        .collect()
}

/// What a job measures of its `runtime`: the part after its warm-up. A
/// job's `runtime` counts from its start, the run's warm-up included
/// (docs/SCENARIO-KEYS.md, the simulator's `stop_at`), and each of its
/// threads counts the rest from when it first sees its window, so that a
/// warm-up that ran over (the coordinator's sleep) shortens no window.
fn measured_runtime(job: &Job, warmup: Nanos) -> Option<Nanos> {
    job.runtime.map(|r| r.saturating_sub(warmup))
}

/// A job's own measured window, from the run's window's start, and when
/// it started and what it measured, from the run's start.
struct JobWindow {
    from: Nanos,
    to: Nanos,
    /// When the job started, and its window's two edges; none for a
    /// staged job none of whose threads started.
    span: Option<(Nanos, Nanos, Nanos)>,
}

/// The window job `job` measured over, from its threads' outcomes in the
/// run's `window` (`staged`: it does not start with the run).
fn job_window(
    runtime: Option<Nanos>,
    outcomes: &[ThreadOutcome],
    window: &Window,
    staged: bool,
) -> JobWindow {
    // The job's own window, as the simulator measures it: its threads
    // stop at its `runtime` after the warm-up (a staged job's counts from
    // its own start), or end when its `io_size` is done. Its threads, not
    // their helpers (offload workers, SQ threads), which end with them.
    let threads = || outcomes.iter().filter(|o| !o.helper);
    let ended = threads()
        .map(|o| o.ended_at)
        .collect::<Option<Vec<Nanos>>>()
        .and_then(|at| at.into_iter().max())
        .map(|at| at.saturating_sub(window.start));
    // A staged job's window starts at its own start and warm-up (a job
    // that never started has none).
    let from = outcomes
        .iter()
        .filter_map(|o| o.window_from)
        .min()
        .map_or(0, |at| at.saturating_sub(window.start))
        .min(window.ns);
    // Its end: when its threads ended by themselves (their size, a floor,
    // another's exitall: earlier than a runtime the import may also have
    // given them as a bound), else its runtime's, else the run's; never
    // before its start (a job that ended in its own warm-up has a window
    // of no length, where its note read "from 6.372 ms to 6.152 ms").
    // A thread acts on its runtime's end between its waits, and then
    // drains its requests in flight, as fio does: its window runs until
    // it has (an SQ-polled ring's thread spinning for completions its SQ
    // thread, on its core, submits only when the scheduler lets it once
    // came back 7 ms late), and one the run's end found still draining
    // until that, as the simulator's thread exits only once its loop has
    // reaped them.
    let finished = threads()
        .map(|o| o.ended_at.or(o.stopped_at))
        .collect::<Option<Vec<Nanos>>>()
        .map(|at| {
            at.into_iter()
                .max()
                .map_or(0, |at| at.saturating_sub(window.start))
        });
    let to = match (ended, runtime) {
        (Some(ended), _) => ended,
        (None, Some(r)) => finished.map_or(window.ns, |at| from.saturating_add(r).max(at)),
        (None, None) => window.ns,
    }
    .clamp(from, window.ns);
    // When it started and what it measured, from the run's start (the
    // instant the runtimes count from); a staged job none of whose
    // threads started has no span.
    let since_run = |at: Nanos| at.saturating_sub(window.run_start);
    let started = if staged {
        outcomes
            .iter()
            .filter_map(|o| o.started_at)
            .min()
            .map(since_run)
    } else {
        Some(0)
    };
    let span = started.map(|at| {
        (
            at,
            since_run(window.start + from),
            since_run(window.start + to),
        )
    });
    JobWindow { from, to, span }
}

/// When job threads of `outcomes` began to count their completions:
/// the run's window's opening, or a staged job's own start plus warm-up
/// where that is later (as `Control::counted_span` counts them).
fn job_counting_from(outcomes: &[ThreadOutcome], window: &Window) -> Nanos {
    outcomes
        .iter()
        .filter_map(|o| o.window_from)
        .min()
        .map_or(window.counting_from, |from| from.max(window.counting_from))
}

/// The start and end, on this process's clock, of a job whose threads
/// all ended before it began to count (by its size, a count, a floor:
/// within its warm-up), or whose `runtime` ends within its warm-up
/// (`runtime_in_warmup`: its threads never measure, wherever the clock
/// puts their last request); `None` for any other (`staged`: it did not
/// start with the run).
fn life_within_warmup(
    outcomes: &[ThreadOutcome],
    window: &Window,
    (staged, runtime_in_warmup): (bool, bool),
) -> Option<(Nanos, Nanos)> {
    let end = outcomes
        .iter()
        .filter(|o| !o.helper)
        .map(|o| o.ended_at.or(o.stopped_at))
        .collect::<Option<Vec<Nanos>>>()?
        .into_iter()
        .max()?;
    if !runtime_in_warmup && end >= job_counting_from(outcomes, window) {
        return None;
    }
    let start = if staged {
        outcomes.iter().filter_map(|o| o.started_at).min()?
    } else {
        window.released
    };
    Some((start, end.max(start)))
}

/// One job's result and detail: its threads' outcomes merged, and their
/// CPU time and context switches over the window.
fn summarise_job(
    job_index: usize,
    job: &Job,
    tracked: &[Tracked],
    outcomes: &[ThreadOutcome],
    window: &Window,
    staged: bool,
    runtime: Option<Nanos>,
) -> (JobResult, JobDetail) {
    let JobWindow { from, to, span } = job_window(runtime, outcomes, window, staged);
    // A job that ended within its warm-up reports its whole life, as fio
    // does: what its threads tallied before its window, over its span.
    let life = life_within_warmup(outcomes, window, (staged, runtime == Some(0)));
    let since_run = |at: Nanos| at.saturating_sub(window.run_start);
    let span = life.map_or(span, |(start, end)| {
        Some((since_run(start), since_run(start), since_run(end)))
    });
    let window_ns = life
        .map_or(to.saturating_sub(from), |(start, end)| {
            end.saturating_sub(start)
        })
        .max(1);
    // An instant from the window's start, signed: the two's-complement
    // difference of two instants of one clock, which are far closer than
    // 2^63 ns.
    let from_window = |at: Nanos| at.wrapping_sub(window.start) as i64;
    let window_s = window_ns as f64 / 1e9;
    let mut hist = LatencyHistogram::new();
    let mut by_direction = [FioHistogram::new(), FioHistogram::new()];
    let mut dir_bytes = [0u64; 2];
    let mut sync_hist = FioHistogram::new();
    let (mut sync_ios, mut fsync_ios) = (0, 0);
    let (mut usr_ns, mut sys_ns) = (0, 0);
    let mut detail = JobDetail {
        name: job.name.clone(),
        span,
        counted_span: outcomes
            .iter()
            .filter_map(|o| o.counted_span)
            .reduce(|(f1, l1), (f2, l2)| (f1.min(f2), l1.max(l2)))
            .map(|(first, last)| (from_window(first), from_window(last))),
        ..Default::default()
    };
    let (mut ios, mut bytes) = (0, 0);
    let mut warmup = cint_report::WarmupTally::default();
    let mut modes: Option<cint_report::ModeChoices> = None;
    for o in outcomes {
        warmup.merge(&o.warmup);
        if let Some(m) = &o.measured_modes {
            modes.get_or_insert_with(Default::default).merge(m);
        }
        hist.merge(&o.hist);
        for (d, od) in o.by_direction.iter().enumerate() {
            by_direction[d].merge(&od.hist);
            dir_bytes[d] += od.bytes;
        }
        ios += o.ios;
        bytes += o.bytes;
        sync_hist.merge(&o.sync_hist);
        sync_ios += o.sync_ios;
        fsync_ios += o.fsync_ios;
        detail.submitted += o.submitted;
        detail.completed += o.completed;
        detail.errors += o.errors;
        detail.strays += o.strays;
        detail.by_full_irq += o.by_full;
        detail.by_urgent_irq += o.by_urgent;
        detail.by_poll += o.by_poll;
        detail.modes.merge(&o.modes);
        detail.wakeups += o.wakeups;
        detail.unfinished.merge(&o.unfinished);
        if detail.first_error.is_none() {
            detail.first_error.clone_from(&o.first_error);
        }
        detail.searches.extend(o.search);
        if let Some(m) = o.floor_missed {
            detail
                .floors_missed
                .push(cint_scenario::rate_floor::Missed {
                    at: m.at.saturating_sub(window.run_start),
                    ..m
                });
        }
        if let Some(e) = o.latency_exceeded {
            detail
                .latency_exceeded
                .push(cint_scenario::max_latency::Exceeded {
                    at: e.at.saturating_sub(window.run_start),
                    ..e
                });
        }
    }
    // A job whose window has no length (it did not start before the
    // run's end) used no CPU in it: over a window of no length it read
    // as thousands of percent. One that ended within its warm-up counts
    // its threads' whole lives, as its requests.
    let measured = to > from || life.is_some();
    for (k, t) in tracked.iter().enumerate() {
        if measured && t.job == Some(job_index) {
            let (b, a) = match life {
                Some(_) => t.probe.over_life(),
                None => (
                    t.probe.counted_from(window.samples_before[k]),
                    t.probe.counted_to(window.samples_after[k]),
                ),
            };
            detail.cpu_ns += a.cpu_ns.saturating_sub(b.cpu_ns);
            usr_ns += a.usr_ns.saturating_sub(b.usr_ns);
            sys_ns += a.sys_ns.saturating_sub(b.sys_ns);
            detail.voluntary_switches += a.voluntary.saturating_sub(b.voluntary);
            detail.involuntary_switches += a.involuntary.saturating_sub(b.involuntary);
        }
    }
    let mut read = direction(&by_direction[0], dir_bytes[0]);
    let mut write = direction(&by_direction[1], dir_bytes[1]);
    let mut syncs = FioSync {
        ios: sync_ios,
        fsync_ios,
        lat: sync_hist.summary(),
    };
    if let Some((start, end)) = life {
        // Nothing of it was counted in a window: its tallies are all.
        (ios, bytes) = (warmup.total_ios(), warmup.total_bytes());
        [read, write] = warmup.directions();
        syncs = warmup.syncs();
        // When its warm-up was to end: its own start's plus the warm-up
        // (a staged job's window), or the run's.
        let warmup_end = outcomes
            .iter()
            .filter_map(|o| o.window_from)
            .min()
            .unwrap_or(window.released.saturating_add(window.warmup));
        let run_window = (window.start == window.counting_from).then(|| since_run(window.start));
        detail.ended_in_warmup = Some((
            (since_run(start), since_run(end), since_run(warmup_end)),
            run_window,
        ));
    }
    let result = JobResult {
        name: job.name.clone(),
        ios,
        iops: ios as f64 / window_s,
        bw_bytes: (bytes as f64 / window_s) as u64,
        cpu_util: detail.cpu_ns as f64 / window_ns as f64,
        context_switches: detail.voluntary_switches + detail.involuntary_switches,
        wakeups: detail.wakeups,
        lat_ns: hist.stats(),
        // The emulator's submission is a ring write, not a system
        // call: fio's slat is not measured, and clat is lat.
        fio: Some(FioJobData {
            threads: job.numjobs,
            runtime_ns: window_ns,
            usr_ns,
            sys_ns,
            read,
            write,
            sync: syncs.clone(),
            error: cint_scenario::depth_search::job_errno(
                !detail.floors_missed.is_empty(),
                !detail.latency_exceeded.is_empty(),
                &detail.searches,
            ),
            // The job's probe is the run's, filled in once its threads
            // have ended (`run_strategy`).
            steadystate: None,
        }),
        trace: trace_replay(job, outcomes),
        sync: cint_report::SyncCalls::from_fio(syncs.ios, &syncs.lat, window_s),
        modes,
    };
    (result, detail)
}

/// A trace job's entry of the result: its threads' replays together.
fn trace_replay(job: &Job, outcomes: &[ThreadOutcome]) -> Option<cint_report::TraceReplay> {
    let trace = job.io()?.shape.trace.as_ref()?;
    let mut measure = cint_report::TraceMeasure::default();
    for o in outcomes {
        if let Some(m) = &o.trace {
            measure.merge(m);
        }
    }
    Some(measure.replay(trace))
}

/// One direction of a job in fio's terms, from its latency histogram.
fn direction(hist: &FioHistogram, bytes: u64) -> FioDirection {
    let lat = hist.summary();
    FioDirection {
        ios: hist.len(),
        bytes,
        slat: Default::default(),
        clat: lat.clone(),
        lat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of `ns` from 10 ms into the run, with one tracked thread
    /// of job 0 that used 3.7 us of CPU between the window's samples.
    fn window_of_one_thread(ns: u64) -> (Window, Vec<Tracked>) {
        let sample = |cpu_ns| ThreadSample {
            cpu_ns,
            ..ThreadSample::default()
        };
        let window = Window {
            usage_before: sys::CpuUsage::default(),
            usage_after: sys::CpuUsage::default(),
            energy_before: crate::energy::snapshot(&[]),
            energy_after: crate::energy::snapshot(&[]),
            activity_before: Vec::new(),
            activity_after: Vec::new(),
            stats_before: DeviceStats::default(),
            stats_after: DeviceStats::default(),
            samples_before: vec![sample(1_000)],
            samples_after: vec![sample(4_700)],
            start: 10_000_000,
            counting_from: 10_000_000,
            run_start: 0,
            released: 0,
            warmup: 10_000_000,
            ns,
        };
        let tracked = vec![Tracked {
            job: Some(0),
            probe: Arc::new(ThreadProbe::default()),
        }];
        (window, tracked)
    }

    /// A thread that never finishes its drain makes the run an internal
    /// error naming its job, once no request has completed for the
    /// patience, where the join waited for ever; threads that finish are
    /// joined as before, and a drain whose requests keep completing is
    /// waited for however long it takes.
    #[test]
    fn a_thread_stuck_past_the_drain_deadline_is_an_error_naming_its_job() {
        use cint_test_support::scenario::{io_job, none, scenario};
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::time::{Duration, Instant};
        let device = cint_scenario::DeviceProfile::builtin("optane-p4800x").expect("built in");
        let jobs = vec![
            io_job("quick", cint_scenario::Engine::Libaio, 4, 1, 1),
            io_job("stuck", cint_scenario::Engine::Libaio, 4, 1, 1),
        ];
        let sc = scenario("drain", device, vec![none()], jobs, 10 * cint_policy::MS);
        let patience = Duration::from_millis(50);
        let held_for = |wait: Duration| -> JobThread {
            (
                1,
                std::thread::spawn(move || {
                    std::thread::sleep(wait);
                    Ok(ThreadOutcome::default())
                }),
            )
        };
        let quick = || -> JobThread { (0, std::thread::spawn(|| Ok(ThreadOutcome::default()))) };
        let started = Instant::now();
        let Err(EmuError::Internal(message)) = join_job_threads(
            &sc,
            vec![quick(), held_for(Duration::from_secs(2))],
            patience,
            &|| 7,
        ) else {
            panic!("a stuck thread is an internal error");
        };
        let waited = started.elapsed();
        assert!(
            waited >= patience && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert!(
            message.starts_with("1 thread(s) of job(s) 'stuck' had not finished draining"),
            "{message}"
        );
        // Completions every few milliseconds: a drain four times the
        // patience long is a slow one, not a stuck one.
        let completed = AtomicU64::new(0);
        let progress = || {
            std::thread::sleep(Duration::from_millis(2));
            completed.fetch_add(1, Ordering::Relaxed)
        };
        let outcomes = join_job_threads(
            &sc,
            vec![quick(), held_for(4 * patience)],
            patience,
            &progress,
        )
        .expect("a drain that progresses is waited for");
        assert_eq!((outcomes[0].len(), outcomes[1].len()), (1, 1));
    }

    /// The patience grows with what one request may take alone and with
    /// how long the strategy holds a completion, so that a device or a
    /// policy slow by the scenario's choice is not taken for a stuck run.
    #[test]
    fn the_drain_waits_for_the_slowest_request_and_the_longest_hold() {
        use cint_policy::{PolicyConfig, SEC};
        use cint_test_support::scenario::{io_job, none, scenario};
        let mut device = cint_scenario::DeviceProfile::builtin("optane-p4800x").expect("built in");
        device.jitter_spread = cint_scenario::units::Duration(0);
        device.write.base = cint_scenario::units::Duration(90 * SEC);
        device.read.bandwidth = 1 << 20;
        let mut job = io_job("slow", cint_scenario::Engine::Libaio, 4, 1, 1);
        if let cint_scenario::Work::Io(io) = &mut job.work {
            io.bs = 64 << 20;
        }
        let mut strategy = none();
        let mut sc = scenario("slow", device, vec![strategy.clone()], vec![job], SEC);
        // A 64 MiB read at 1 MiB/s: 64 s of transfer beyond its media
        // time; the 90 s write is longer still.
        let base = drain_patience(&sc, &strategy).as_secs();
        assert_eq!(base, 60 + 90, "{base}");
        sc.device.write.base = cint_scenario::units::Duration(0);
        let read = drain_patience(&sc, &strategy).as_secs();
        assert_eq!(read, 60 + 64, "{read}");
        strategy.interrupts = PolicyConfig::Adaptive(cint_policy::config::AdaptiveParams {
            delta: 100 * SEC,
            thr: 32,
        });
        assert_eq!(drain_patience(&sc, &strategy).as_secs(), 60 + 64 + 100);
        // A trace's requests, 16 KiB at most here, at 1 KiB/s.
        let trace = format!(
            "{}/../../scenarios/traces/fio-2jobs.iolog",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = format!(
            "name = \"t\"\n[device]\nmodel = \"optane-p4800x\"\nread.bandwidth = 1024\n\
             write.bandwidth = 1024\njitter_spread = 0\n[[strategy]]\nname = \"none\"\n\
             kind = \"none\"\n[[job]]\nname = \"replay\"\ntrace = \"{trace}\"\n"
        );
        let sc = cint_scenario::load_str(&text, "trace.toml", &[]).expect("valid");
        let replay = drain_patience(&sc, &sc.strategies[0]).as_secs();
        assert_eq!(replay, 60 + 16, "{replay}");
    }

    #[test]
    fn a_job_that_ended_before_its_window_reports_its_whole_life() {
        let job =
            cint_test_support::scenario::io_job("trace", cint_scenario::Engine::Libaio, 4, 1, 1);
        let (window, tracked) = window_of_one_thread(20_000_000);
        let ended = |at| ThreadOutcome {
            ended_at: Some(at),
            ..ThreadOutcome::default()
        };
        // Its thread ended in the warm-up, before the window opened: its
        // figures are its whole life's, from its release (at 0 here) to
        // its end, its CPU from its samples at its start and its finish
        // (over the window, of no length, it read as 370 600% once).
        let cpu = |cpu_ns| {
            Some(ThreadSample {
                cpu_ns,
                ..ThreadSample::default()
            })
        };
        *tracked[0].probe.started.lock().expect("probe") = cpu(500);
        *tracked[0].probe.last.lock().expect("probe") = cpu(2_500);
        let (result, detail) =
            summarise_job(0, &job, &tracked, &[ended(8_000_000)], &window, false, None);
        assert_eq!(detail.cpu_ns, 2_000);
        assert!(
            (result.cpu_util - 2_000.0 / 8e6).abs() < 1e-12,
            "{}",
            result.cpu_util
        );
        assert_eq!(
            detail.ended_in_warmup,
            Some(((0, 8_000_000, 10_000_000), Some(10_000_000)))
        );
        // Ended 5 ms into the window, the same CPU is over those 5 ms.
        let (result, _) = summarise_job(
            0,
            &job,
            &tracked,
            &[ended(15_000_000)],
            &window,
            false,
            None,
        );
        assert!(
            (result.cpu_util - 3_700.0 / 5e6).abs() < 1e-12,
            "{}",
            result.cpu_util
        );
        // A later job that ended in its own warm-up: its window, from its
        // start plus the warm-up, has no length, never a negative one.
        let staged = ThreadOutcome {
            window_from: Some(12_000_000),
            ..ended(11_000_000)
        };
        let w = job_window(None, &[staged], &window, true);
        assert_eq!((w.from, w.to), (2_000_000, 2_000_000));
    }

    #[test]
    fn a_thread_burning_cpu_shows_user_and_system_time() {
        let tid = sys::gettid();
        let (u0, s0) = proc_user_system(tid).expect("readable");
        // Burn 200 ms of this thread's own CPU time (not wall time): the
        // kernel sees it running on about 20 of its 100 Hz ticks.
        let start = sys::thread_cpu_time();
        let mut x = 1u64;
        // Reading a thread's CPU clock is a system call: look rarely.
        while sys::thread_cpu_time() - start < 200_000_000 {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let (u1, s1) = proc_user_system(tid).expect("readable");
        let burnt = (u1 - u0) + (s1 - s0);
        assert!(burnt >= 100_000_000, "{burnt} ns of user + system time");
        assert!(u1 - u0 > s1 - s0, "a loop in user mode");
        assert_eq!(proc_user_system(0), None);
    }

    /// Two job threads on scenario CPUs 0 and 4 of `xeon-e3-1230v5`, one
    /// core's two hardware threads, run through the whole measurement
    /// path, on the first two real CPUs (`CpuLayout::for_scenario` would
    /// want six CPUs for scenario CPU 4; the merge does not care which
    /// real CPUs they are). Real-time handlers are preferred, not required:
    /// the merge does not need them.
    #[test]
    fn sibling_cpus_report_one_core_between_their_busier_cpu_and_their_sum() {
        let Ok(allowed) = sys::allowed_cpus() else {
            return;
        };
        // Two application CPUs and the device's: more than CI's two.
        if allowed.len() < 3 {
            cint_test_support::skip::not_here("needs 3 CPUs: two siblings and the device's");
            return;
        }
        let text = "name = \"smt\"\nduration = \"30ms\"\nwarmup = \"5ms\"\n\
                    [device]\nmodel = \"optane-900p\"\n[host]\nmodel = \"xeon-e3-1230v5\"\n\
                    [emu]\nrealtime = \"prefer\"\n\
                    [[strategy]]\nname = \"interrupt\"\nkind = \"none\"\n\
                    [[strategy]]\nname = \"poll\"\nkind = \"poll\"\n\
                    [[job]]\nname = \"a\"\nengine = \"pvsync2\"\nhipri = true\ncpu = 0\n\
                    [[job]]\nname = \"b\"\nengine = \"pvsync2\"\nhipri = true\ncpu = 4\n";
        let sc = cint_scenario::load_str(text, "smt.toml", &[]).expect("valid");
        let layout = CpuLayout {
            device: allowed[allowed.len() - 1],
            app: vec![(0, allowed[0]), (4, allowed[1])],
        };
        let host = sc.host.power.as_ref().expect("power data");
        let granularity = crate::workload::sleep_granularity();
        for (index, strategy) in sc.strategies.iter().enumerate() {
            let (result, detail) =
                run_strategy(&sc, &layout, (strategy, index as u64), granularity).expect("runs");
            let e = result.energy.as_ref().expect("energy");
            assert_eq!(e.cores.len(), 1, "{e:?}");
            assert_eq!(e.cores[0].core, 0);
            cint_test_support::energy::assert_core_between_its_threads(
                &strategy.name,
                &e.cores[0],
                &detail.cpu_busy,
            );
            let share = |n: &str| {
                e.cores[0]
                    .residency
                    .iter()
                    .filter(|r| r.state == n)
                    .map(|r| r.share)
                    .sum::<f64>()
            };
            let shares: f64 = e.cores[0].residency.iter().map(|r| r.share).sum();
            assert!((shares - 1.0).abs() < 1e-6, "{shares}");
            let window_s = detail.window_ns as f64 / 1e9;
            let floor = host.base_w * window_s;
            let ceiling = (host.base_w + host.uncore_w + host.core_busy_w) * window_s + e.device_j;
            let joules = result.energy_j.expect("energy_j");
            assert!(joules > floor && joules <= ceiling + 1e-9, "{joules} J");
            if strategy.name == "poll" {
                assert!(share("spin") > 0.1, "poll spins {}", share("spin"));
            } else {
                assert_eq!(share("spin"), 0.0);
            }
        }
    }
}
