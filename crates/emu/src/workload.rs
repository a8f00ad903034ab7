//! The scenario's jobs as application threads: synchronous engines block
//! on one request at a time, asynchronous ones keep `iodepth` requests in
//! flight in batches, pollers spin, hybrid pollers sleep then spin,
//! `mode-select` threads wait each way as their selector chooses
//! ([`crate::select`]), and `kind = "cpu"` jobs burn CPU.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use cint_policy::hints::{request_hint, BatchPosition, IoCall, IoContext, RwFlags};
use cint_policy::hybrid_poll::{Direction, SleepEstimator};
use cint_policy::mode_select::CompletionChoice;
use cint_policy::{Hint, Nanos};
use cint_report::{FioHistogram, LatencyHistogram, TraceMeasure, WarmupTally};
use cint_scenario::depth_search::{DepthSearch, Step};
use cint_scenario::offsets::RandomOffsets;
use cint_scenario::passes::{LoopTop, PassEnd, PassSyncs};
use cint_scenario::rate::Pacer;
use cint_scenario::rate_floor::{Floor, Missed};
use cint_scenario::steady::SteadyProbe;
use cint_scenario::unfinished::Unfinished;
use cint_scenario::{CompletionMode, Engine, HybridSleep, IoJob, LatencyTarget, Rw, SteadyState};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::activity::ThreadState;
use crate::buf::IoBuf;
use crate::client::{Client, Completion, Request, WaitMode};
use crate::emulator::PendingOccupant;
use crate::error::EmuError;
use crate::offload::{Dispatch, Handed, OffloadPool};
use crate::replay::TraceCursor;
use crate::select::{ModeCounts, ThreadSelect};
use crate::shared::{DeliveredBy, Op};
use crate::sqpoll::{Committed, RingHandle, SqRing};
use crate::sys;

/// What a thread's seed is salted with for its offsets' stream.
const OFFSET_STREAM: u64 = 0x6f66_6673_6574_7321;

/// Run phases, shared by the coordinator and every job thread.
pub(crate) const PHASE_WARMUP: u8 = 0;
pub(crate) const PHASE_MEASURE: u8 = 1;
pub(crate) const PHASE_STOP: u8 = 2;
/// The measured window is over, but the threads run on while the
/// coordinator takes its closing samples (their clocks and `/proc`
/// entries go with them): what they reap now is not counted.
pub(crate) const PHASE_CLOSED: u8 = 3;

/// A window edge not yet known.
const UNKNOWN_EDGE: Nanos = Nanos::MAX;
/// A window edge the coordinator is setting: it has marked the edge and
/// is reading the clock for it.
const SETTING_EDGE: Nanos = Nanos::MAX - 1;

/// Sets a window edge to the instant `clock` reads, marking it as being
/// set first. A thread that then finds the edge still unknown loaded it
/// before the mark, so it took its completions in hand before that
/// instant; one that finds the mark waits the few nanoseconds to the
/// value. Without the mark, an edge read from the clock and stored after
/// a thread looked (the coordinator preempted between the two) let that
/// thread count, as inside the window, a completion it took in hand
/// after the close, or leave out one it took after the open.
fn set_edge(edge: &AtomicU64, clock: impl FnOnce() -> Nanos) -> Nanos {
    edge.store(SETTING_EDGE, Ordering::SeqCst);
    let at = clock();
    edge.store(at, Ordering::SeqCst);
    at
}

/// A window edge as [`set_edge`] leaves it: its instant, or
/// [`UNKNOWN_EDGE`] before the coordinator began to set it.
fn read_edge(edge: &AtomicU64) -> Nanos {
    loop {
        let at = edge.load(Ordering::SeqCst);
        if at != SETTING_EDGE {
            return at;
        }
        // The coordinator is not pinned: it may wait on this very CPU.
        std::thread::yield_now();
    }
}

/// What every job thread shares with the coordinator.
pub(crate) struct Control {
    pub phase: AtomicU8,
    /// The measured window's edges ([`UNKNOWN_EDGE`] until set): a
    /// completion counts when its thread had it in hand between them,
    /// whichever phase the thread saw when it accounted for it, so a reap
    /// made before the window opened, or before it closed, is counted by
    /// when it was made rather than by when it was accounted.
    window_open: AtomicU64,
    window_close: AtomicU64,
    /// Job threads that have ended (their job's size done, their
    /// `runtime` over, or told to stop), for a run that ends with its
    /// last job (`run_to_end`).
    pub ended: Mutex<usize>,
    /// Told each time a thread ends.
    pub ended_changed: Condvar,
    /// Each job's threads still running, and its group's place in the
    /// run's order of groups.
    live: Vec<AtomicUsize>,
    group_of: Vec<usize>,
    /// Each group's threads still running.
    group_live: Vec<AtomicUsize>,
    /// The group running now (fio's `stonewall`: a group starts when the
    /// one before has ended), and a signal when it moves on.
    group_now: Mutex<usize>,
    group_changed: Condvar,
    /// A job of the group with fio's `exitall` (`exit_what=group`) has
    /// ended: the group's I/O jobs end.
    exit_group: Vec<AtomicBool>,
    /// A job with `exitall` and `exit_what=all` has ended: every I/O job
    /// ends and no later group starts.
    halted: AtomicBool,
    /// The run's start, the instant the threads' `runtime`s count from.
    pub run_start: AtomicU64,
    /// Each job's start: when its first thread started (`u64::MAX`
    /// before), from which its steady-state seconds and a trace's
    /// releases count.
    job_start: Vec<AtomicU64>,
    /// Each job's steady-state detection (fio's `ss`), shared by its
    /// threads.
    steady: Vec<JobSteady>,
}

/// A job's steady-state detection (`cint_scenario::steady`, the
/// simulator's rule), fed by every thread of the job.
struct JobSteady {
    probe: Mutex<SteadyProbe>,
    /// The job has a rule (nothing is locked for one without).
    active: bool,
    /// The criterion was met: the job's threads end.
    met: AtomicBool,
}

impl Control {
    /// The control of a run whose jobs have `threads` threads each, the
    /// `j`th job in the `group_of[j]`th group of the run's order and with
    /// steady-state rule `steady[j]`.
    pub(crate) fn new(
        threads: &[usize],
        group_of: Vec<usize>,
        steady: &[Option<SteadyState>],
    ) -> Control {
        let groups = group_of.iter().max().map_or(0, |&g| g + 1);
        let mut group_live = vec![0; groups];
        for (&n, &g) in threads.iter().zip(&group_of) {
            group_live[g] += n;
        }
        Control {
            phase: AtomicU8::new(PHASE_WARMUP),
            window_open: AtomicU64::new(UNKNOWN_EDGE),
            window_close: AtomicU64::new(UNKNOWN_EDGE),
            ended: Mutex::new(0),
            ended_changed: Condvar::new(),
            live: threads.iter().map(|&n| AtomicUsize::new(n)).collect(),
            group_of,
            group_live: group_live.into_iter().map(AtomicUsize::new).collect(),
            group_now: Mutex::new(0),
            group_changed: Condvar::new(),
            exit_group: (0..groups).map(|_| AtomicBool::new(false)).collect(),
            halted: AtomicBool::new(false),
            run_start: AtomicU64::new(0),
            job_start: threads.iter().map(|_| AtomicU64::new(u64::MAX)).collect(),
            steady: steady
                .iter()
                .map(|&rule| JobSteady {
                    probe: Mutex::new(SteadyProbe::new(rule)),
                    active: rule.is_some(),
                    met: AtomicBool::new(false),
                })
                .collect(),
        }
    }

    /// The measured window opens now; returns the instant.
    pub(crate) fn open_window(&self) -> Nanos {
        self.open_window_by(sys::now)
    }

    /// The measured window opens at the instant `clock` reads.
    fn open_window_by(&self, clock: impl FnOnce() -> Nanos) -> Nanos {
        let at = set_edge(&self.window_open, clock);
        self.phase.store(PHASE_MEASURE, Ordering::SeqCst);
        at
    }

    /// The measured window closes now; returns the instant.
    pub(crate) fn close_window(&self) -> Nanos {
        self.close_window_by(sys::now)
    }

    /// The measured window closes at the instant `clock` reads.
    fn close_window_by(&self, clock: impl FnOnce() -> Nanos) -> Nanos {
        let at = set_edge(&self.window_close, clock);
        self.phase.store(PHASE_CLOSED, Ordering::SeqCst);
        at
    }

    /// The span of the measured window a thread of `plan` counts the
    /// completions in that it took in hand before this call: none while
    /// the window has not opened, nor ever for a thread whose runtime
    /// ends within its warm-up, and from a staged job's own window
    /// start where that is later. It does not depend on the phase the
    /// thread saw: a completion counts by when it was taken in hand, not
    /// by when it was accounted, so one taken just before an edge and
    /// accounted just after falls on its own side. The close is
    /// [`UNKNOWN_EDGE`] until the coordinator began to set it, and every
    /// completion the thread holds was then in hand before it.
    fn counted_span(&self, plan: &ThreadPlan) -> Option<(Nanos, Nanos)> {
        let open = read_edge(&self.window_open);
        // A thread whose runtime ends within its warm-up counts nothing
        // in a window, what it drains after the opening included.
        if open == UNKNOWN_EDGE || plan.runtime_in_warmup.is_some() {
            return None;
        }
        let from = plan.window_from.map_or(open, |from| from.max(open));
        Some((from, read_edge(&self.window_close)))
    }

    /// A thread of job `job` starts at `now`: the job's start, which its
    /// first thread set.
    fn job_started(&self, job: usize, now: Nanos) -> Nanos {
        let Some(start) = self.job_start.get(job) else {
            return now;
        };
        match start.compare_exchange(u64::MAX, now, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => now,
            Err(first) => first,
        }
    }

    /// Whether job `job` has a steady-state rule.
    fn has_steady(&self, job: usize) -> bool {
        self.steady.get(job).is_some_and(|s| s.active)
    }

    /// `requests` of `bytes` in all of job `job` completed at `now`; a
    /// met criterion ends the job.
    fn steady_sample(&self, job: usize, now: Nanos, requests: u64, bytes: u64) {
        let Some(s) = self.steady.get(job).filter(|s| s.active) else {
            return;
        };
        let start = self.job_start[job].load(Ordering::SeqCst);
        if start == u64::MAX {
            return;
        }
        // A poisoned probe is a panicked thread's, which the coordinator
        // reports when it joins it.
        let Ok(mut probe) = s.probe.lock() else {
            return;
        };
        if probe.completed(now.saturating_sub(start), requests, bytes) {
            s.met.store(true, Ordering::SeqCst);
        }
    }

    /// Job `job`'s steady-state note (none without a rule), once its
    /// threads have ended.
    pub(crate) fn steady_note(&self, job: usize, strategy: &str, name: &str) -> Option<String> {
        let s = self.steady.get(job).filter(|s| s.active)?;
        s.probe.lock().ok()?.note(strategy, name)
    }

    /// Job `job`'s steady state in fio's terms (none without a rule).
    pub(crate) fn steady_fio(&self, job: usize) -> Option<cint_report::FioSteadyState> {
        let s = self.steady.get(job).filter(|s| s.active)?;
        let probe = s.probe.lock().ok()?;
        cint_report::FioSteadyState::of(&probe)
    }

    /// Job `job` reached its steady state: its threads end.
    fn steady_met(&self, job: usize) -> bool {
        self.steady
            .get(job)
            .is_some_and(|s| s.met.load(Ordering::Relaxed))
    }

    /// Whether another job's `exitall` told job `job`'s threads to end.
    fn told_to_exit(&self, job: usize) -> bool {
        self.halted.load(Ordering::Relaxed)
            || self
                .group_of
                .get(job)
                .and_then(|&g| self.exit_group.get(g))
                .is_some_and(|e| e.load(Ordering::Relaxed))
    }

    /// A thread of job `job` has ended. The job's last, with `exitall`,
    /// ends the others of its group or of the run (fio's `exitall`); a
    /// group's last starts the next group.
    fn job_thread_ended(&self, job: usize, exitall: Option<cint_scenario::ExitScope>) {
        let left = |l: Option<&AtomicUsize>| {
            l.map_or(0, |l| l.fetch_sub(1, Ordering::SeqCst).saturating_sub(1))
        };
        let group = self.group_of.get(job).copied().unwrap_or(0);
        if left(self.live.get(job)) == 0 {
            match exitall {
                Some(cint_scenario::ExitScope::All) => {
                    let held = self.group_now.lock();
                    self.halted.store(true, Ordering::SeqCst);
                    drop(held);
                    self.group_changed.notify_all();
                }
                Some(cint_scenario::ExitScope::Group) => {
                    if let Some(e) = self.exit_group.get(group) {
                        e.store(true, Ordering::SeqCst);
                    }
                }
                None => {}
            }
        }
        if left(self.group_live.get(group)) == 0 {
            if let Ok(mut now) = self.group_now.lock() {
                *now = (*now).max(group + 1);
            }
            self.group_changed.notify_all();
        }
        self.thread_ended();
    }

    /// The run is over: every job thread stops, and those still waiting
    /// for their group or their delay are told.
    pub(crate) fn stop(&self) {
        // Under the lock a waiter holds between its look and its wait, so
        // that none misses the signal.
        let held = self.group_now.lock();
        self.phase.store(PHASE_STOP, Ordering::SeqCst);
        drop(held);
        self.group_changed.notify_all();
    }

    /// Whether the run ended or an `exitall` halted it.
    fn stopped(&self) -> bool {
        self.phase.load(Ordering::SeqCst) == PHASE_STOP || self.halted.load(Ordering::SeqCst)
    }

    /// Waits until group `group` runs, and then `delay` more (a job's
    /// `startdelay`); false if the run ended first (or an `exitall`
    /// halted it). Each change of group, the run's end and a halt signal
    /// the waiters: nothing polls.
    fn wait_to_start(&self, group: usize, delay: Nanos) -> bool {
        let Ok(mut now) = self.group_now.lock() else {
            return false;
        };
        while *now < group && !self.stopped() {
            now = match self.group_changed.wait(now) {
                Ok(now) => now,
                Err(_) => return false,
            };
        }
        let until = sys::now().saturating_add(delay);
        loop {
            if self.stopped() {
                return false;
            }
            let left = until.saturating_sub(sys::now());
            if left == 0 {
                return true;
            }
            now = match self
                .group_changed
                .wait_timeout(now, std::time::Duration::from_nanos(left))
            {
                Ok((now, _)) => now,
                Err(_) => return false,
            };
        }
    }

    /// A job thread has ended.
    fn thread_ended(&self) {
        // A poisoned count is a panicked thread's: the coordinator finds
        // that thread's failure when it joins it.
        if let Ok(mut ended) = self.ended.lock() {
            *ended += 1;
        }
        self.ended_changed.notify_all();
    }
}

/// When a job that does not start with the run starts, and its window.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stage {
    /// Its group's place in the run's order of groups.
    pub group: usize,
    /// fio's `startdelay`, from its group's start.
    pub startdelay: Nanos,
    /// The run's warm-up, which the job has from its own start.
    pub warmup: Nanos,
}

/// One job thread's task.
pub(crate) struct ThreadPlan {
    /// The thread's job, by its index in the scenario.
    pub job: usize,
    pub io: Option<IoJob>,
    pub mode: CompletionMode,
    /// What the job measures of its `runtime` (the part after the
    /// warm-up): a thread stops (an I/O thread submitting) that long
    /// after it first saw its measured window.
    pub runtime: Option<Nanos>,
    /// A `runtime` that ends within the warm-up (at most as long): a
    /// thread stops that long after its job's start (a CPU-bound one
    /// after its own), as the simulator's and fio's threads stop, never
    /// measures, and its job reports its whole life; where it is set, the
    /// thread does not also stop by `runtime`.
    pub runtime_in_warmup: Option<Nanos>,
    /// A job that does not start with the run: its group's place in the
    /// run's order and its `startdelay`, and what its own window is
    /// counted by.
    pub stage: Option<Stage>,
    /// A staged job's window: from its start and warm-up (set when it
    /// starts).
    pub window_from: Option<Nanos>,
    /// The job's place in a flow (fio's `flow`): the flow, the job's
    /// weight and its `flow_sleep`.
    pub flow: Option<(std::sync::Arc<crate::flow::Flow>, u32, Nanos)>,
    /// The file a job's `fsync` and `fdatasync` calls sync: the io_uring
    /// backend's (a real flush where its device has a write cache);
    /// `None`, an empty in-memory file (the synthetic device has none).
    pub sync_path: Option<String>,
    /// Bytes of the device the offsets range over.
    pub span: u64,
    pub needs_buffers: bool,
    pub seed: u64,
    /// The run has a warm-up (fio's `ramp_time`): its end resets the
    /// rate's schedule and the `number_ios` count, as fio's does.
    pub ramp: bool,
    /// Under `mode-select`: the thread's selector.
    pub select: Option<ThreadSelect>,
    /// A trace job's thread: its stream of the trace.
    pub trace: Option<TraceCursor>,
    /// A CPU-bound thread of a later group or with a start delay: its
    /// place among what runs on its core, taken while it burns (its
    /// interrupts there must preempt it), not while it waits to start.
    pub occupant: Option<PendingOccupant>,
    /// Its part in an offloaded job (fio's `io_submit_mode=offload`).
    pub offload: Option<OffloadRole>,
    /// fio's sleep granularity, measured before the threads started
    /// ([`sleep_granularity`]).
    pub sleep_granularity: Nanos,
    /// Its part in an SQ-polled ring (io_uring's `IORING_SETUP_SQPOLL`).
    pub sqpoll: Option<SqRole>,
    /// Under a warm-up: called once, as the job's thread starts its work
    /// (after its group and delay), to note its counters and its
    /// helpers' (a job that ends within its warm-up reports its whole
    /// life).
    pub on_start: Option<WindowHook>,
    /// For a job that starts after the run: called once, when the thread
    /// first sees its own window, to note its counters and its helpers'
    /// (its job's CPU time and switches count from there, as its
    /// requests do).
    pub on_window: Option<WindowHook>,
    /// For a job with a `runtime`: called once, when the thread has
    /// drained its requests after its end, to note its counters and its
    /// helpers' (its job's window ends there, as fio's runtime does).
    pub on_stop: Option<WindowHook>,
}

/// What a job's thread calls at an edge of its own window: as it first
/// sees it (a job that starts after the run), and as it has drained its
/// requests after its `runtime`'s end.
pub(crate) type WindowHook = Arc<dyn Fn() + Send + Sync>;

/// A thread's part in an SQ-polled ring ([`crate::sqpoll`]).
pub(crate) enum SqRole {
    /// The job's thread, which fills the ring and spins on its
    /// completions.
    Ring(RingHandle),
    /// The ring's SQ thread.
    SqThread(Arc<SqRing>),
}

/// A thread's part in an offloaded job ([`crate::offload`]).
pub(crate) enum OffloadRole {
    /// The job's thread: it issues, hands each request to a worker, and
    /// reaps nothing.
    Main(Dispatch),
    /// Worker `index` of the pool: it runs what it is handed, one request
    /// at a time, and measures it.
    Worker(Arc<OffloadPool>, usize),
}

/// What one job thread measured (requests completed in the measured
/// window, plus totals for the exactly-once checks).
#[derive(Default)]
pub(crate) struct ThreadOutcome {
    pub hist: LatencyHistogram,
    pub ios: u64,
    pub bytes: u64,
    pub submitted: u64,
    pub completed: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub strays: u64,
    pub by_full: u64,
    pub by_urgent: u64,
    pub by_poll: u64,
    /// Times the thread blocked and was woken in the measured window: by
    /// a delivery (futex) or at the end of its own timed sleep (hybrid
    /// polling, rate pacing).
    pub wakeups: u64,
    /// The measured window's I/Os by direction (reads, writes), latency
    /// in fio's buckets, for fio's JSON output.
    pub by_direction: [DirectionOutcome; 2],
    /// Time spent spinning in completion poll loops during the measured
    /// window, ns (the energy model's `spin`).
    pub spin_ns: u64,
    /// Under `mode-select`: the modes chosen over the whole run.
    pub modes: ModeCounts,
    /// Under `mode-select`: the modes chosen in the measured window.
    pub measured_modes: Option<ModeCounts>,
    /// Under `mode-select`: the waits whose idle state was looked at and
    /// of them those whose state was learnt, or why none could be.
    pub idle_watch: Option<Result<(u64, u64), String>>,
    /// When the thread ended by its size (its `io_size` or `number_ios`
    /// issued and every request back), or a CPU-bound one by its
    /// `runtime`, or by missing its rate's floor.
    pub ended_at: Option<Nanos>,
    /// When an I/O thread, past its `runtime`'s end (which its loop
    /// looks at between its waits), had drained its requests in flight:
    /// its job's window ends there, as fio's runtime ends after
    /// `cleanup_pending_aio`, however late that was (an SQ-polled ring's
    /// thread spinning for completions that its SQ thread, on the same
    /// core, submits only when the scheduler lets it run once came back
    /// 7 ms late).
    pub stopped_at: Option<Nanos>,
    /// A helper of a job's thread (an offload worker, an SQ thread), not
    /// one of the job's threads: its job's window is theirs.
    pub helper: bool,
    /// `fsync` and `fdatasync` calls in the measured window, the `fsync`
    /// ones among them, and their latencies.
    pub sync_ios: u64,
    pub fsync_ios: u64,
    pub sync_hist: FioHistogram,
    /// A staged job's thread: when it started (`None`: the run ended
    /// first) and when its window began.
    pub started_at: Option<Nanos>,
    pub window_from: Option<Nanos>,
    /// The rate's floor (`ratemin`, `rate_iops_min`) the thread missed,
    /// which ended it as fio ends it (`at` on this process's clock).
    pub floor_missed: Option<Missed>,
    /// The completion past the job's `max_latency` that ended the thread
    /// as fio ends it (`at` on this process's clock).
    pub latency_exceeded: Option<cint_scenario::max_latency::Exceeded>,
    /// Its latency-target search, as the run left it.
    pub search: Option<DepthSearch>,
    /// A trace job's thread: what its replay measured.
    pub trace: Option<TraceMeasure>,
    /// When the first and the last completion it counted came into its
    /// hand (this process's clock): never outside the window.
    pub counted_span: Option<(Nanos, Nanos)>,
    /// Its requests still waiting when the window closed, which it took
    /// in hand while draining after it.
    pub unfinished: Unfinished,
    /// What it completed before its job's window opened: a job that
    /// ends within its warm-up reports it, as fio does.
    pub warmup: WarmupTally,
}

impl ThreadOutcome {
    /// Counts a failure of the job's; the run reports the first.
    pub(crate) fn fail(&mut self, e: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e);
        }
    }
}

/// One direction's I/Os in the measured window.
#[derive(Default)]
pub(crate) struct DirectionOutcome {
    /// Latency from submission to completion in hand.
    pub hist: FioHistogram,
    pub bytes: u64,
}

/// Runs one job thread to completion.
pub(crate) fn run_thread(
    plan: ThreadPlan,
    client: Option<Client>,
    control: &Control,
) -> ThreadOutcome {
    if let Some(SqRole::SqThread(ring)) = &plan.sqpoll {
        // Not a thread of its job's count either: its ring's thread is.
        let ring = Arc::clone(ring);
        let measuring = || in_window(&plan, control.phase.load(Ordering::Relaxed));
        return match client {
            Some(client) => ThreadOutcome {
                helper: true,
                ..crate::sqpoll::run_sq_thread(client, &ring, measuring)
            },
            None => ThreadOutcome::default(),
        };
    }
    if matches!(plan.offload, Some(OffloadRole::Worker(..))) {
        // A worker is none of its job's threads: its main thread waits to
        // start, and ends, for it.
        return match (plan.io.clone(), client) {
            (Some(io), Some(client)) => ThreadOutcome {
                helper: true,
                ..IoThread::new(plan, io, client).run_worker(control)
            },
            _ => ThreadOutcome::default(),
        };
    }
    let job = plan.job;
    let exitall = plan.io.as_ref().and_then(|io| io.shape.exitall);
    let mut plan = plan;
    let mut staged = None;
    if let Some(stage) = plan.stage {
        // Blocked until its group and delay: idle to the energy model's
        // clocks, as a thread asleep is.
        crate::activity::enter(ThreadState::Idle);
        let started = control.wait_to_start(stage.group, stage.startdelay);
        crate::activity::enter(ThreadState::Busy);
        if !started {
            control.job_thread_ended(job, None);
            return ThreadOutcome::default();
        }
        let started = sys::now();
        let from = started.saturating_add(stage.warmup);
        plan.window_from = Some(from);
        staged = Some((started, from));
    }
    if let Some(hook) = &plan.on_start {
        hook();
    }
    let mut outcome = match (plan.io.clone(), client) {
        (Some(io), Some(client)) => IoThread::new(plan, io, client).run(control),
        // A CPU-bound job has no loop to leave: another's exitall leaves
        // it running, as the simulator does.
        _ => {
            let occupant = plan.occupant.take().map(PendingOccupant::arrive);
            let ended_at = burn_cpu(&plan, control);
            drop(occupant);
            ThreadOutcome {
                ended_at,
                ..ThreadOutcome::default()
            }
        }
    };
    if let Some((started, from)) = staged {
        outcome.started_at = Some(started);
        outcome.window_from = Some(from);
    }
    control.job_thread_ended(job, exitall);
    outcome
}

/// Whether a thread of `plan` is in its measured window, in run phase
/// `phase`: the run's window, and a staged job's own from its start and
/// warm-up (the clock is read only for that one, as this runs at every
/// pass of a thread's loop).
fn in_window(plan: &ThreadPlan, phase: u8) -> bool {
    // A thread whose runtime ends within its warm-up never measures: its
    // job reports its whole life, even where its last request comes back
    // after the window opened.
    phase == PHASE_MEASURE
        && plan.runtime_in_warmup.is_none()
        && plan.window_from.is_none_or(|from| sys::now() >= from)
}

/// Burns CPU until told to stop, or until its `runtime` is over, counted
/// from when it first saw the measured window as an I/O thread counts
/// it (from its start where the runtime ends within the warm-up): then
/// when that was.
fn burn_cpu(plan: &ThreadPlan, control: &Control) -> Option<Nanos> {
    let mut x = plan.seed | 1;
    let mut stop_at = plan.runtime_in_warmup.map(|r| sys::now().saturating_add(r));
    loop {
        let phase = control.phase.load(Ordering::Relaxed);
        if phase == PHASE_STOP {
            return None;
        }
        let now = sys::now();
        if stop_at.is_none() && in_window(plan, phase) {
            if let Some(hook) = &plan.on_window {
                hook();
            }
            stop_at = plan.runtime.map(|r| now.saturating_add(r));
        }
        if stop_at.is_some_and(|t| now >= t) {
            if let Some(hook) = &plan.on_stop {
                hook();
            }
            return Some(now);
        }
        for _ in 0..256 {
            // xorshift: work the optimiser cannot remove.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
    }
}

struct IoThread {
    plan: ThreadPlan,
    io: IoJob,
    client: Client,
    rng: ChaCha8Rng,
    /// A random job's offsets where fio's random map cuts its requests
    /// short, or, on a real file, a distribution other than uniform
    /// places them (`cint_scenario::offsets`, the simulator's rule).
    offsets: Option<RandomOffsets>,
    /// A sequential job's next offset, in bytes.
    next_offset: u64,
    /// The pass over the file (`pass_size`) `next_offset` runs in.
    offsets_pass: u64,
    /// The job's rate caps and their schedules (fio's rate limiter, as
    /// the simulator paces by it).
    pacer: Option<Pacer>,
    /// When the single schedule lets the next request go (a job capped
    /// per direction keeps its schedules in `pacer`).
    next_issue_at: Nanos,
    /// The job's floor on the rate and what it has completed.
    floor: Option<Floor>,
    /// When the thread first saw the measured window (fio's counters
    /// start there, and a floor is judged two seconds on).
    measured_from: Option<Nanos>,
    /// When it stops submitting: its `runtime` after that.
    stop_at: Option<Nanos>,
    /// What fio's `fsync` and `fdatasync` decide by: writes issued, those
    /// before the ramp's end, whether the last call was a sync (none
    /// again until a request completed) and the pass over the file the
    /// thread is in, and the file synced.
    writes_issued: u64,
    writes_base: u64,
    syncs: PassSyncs,
    sync_file: Option<std::fs::File>,
    /// Its place in a flow.
    flow: Option<crate::flow::FlowPlace>,
    /// fio's latency-target search, as the simulator's threads run it:
    /// the target and this thread's search for the deepest queue that
    /// meets it.
    search: Option<(LatencyTarget, DepthSearch)>,
    /// A trace job's thread: its stream and what it measured.
    trace: Option<TraceCursor>,
    /// The requests of the batch being submitted (kept for the next).
    batch: Vec<(Op, u64, u64)>,
    /// Bytes and requests issued since the thread started.
    bytes_issued: u64,
    requests_issued: u64,
    /// Requests submitted before `number_ios` counts (at the ramp's end).
    counted_from: u64,
    /// The largest request the job may issue (`bs`, or its split's or
    /// range's largest): each buffer's size.
    largest: u64,
    buffers: Vec<IoBuf>,
    estimator: Option<SleepEstimator>,
    select: Option<ThreadSelect>,
    /// The direction of the request submitted last: a wait's sleep is
    /// that request's class's (Linux 5.0's `blk_mq_poll_nsecs` reads the
    /// request it polls for), whatever the job's `rw`.
    last_op: Op,
    /// The size of the request submitted last: its class, as `last_op`.
    last_len: u64,
    wait_mode: WaitMode,
    out: ThreadOutcome,
    done: Vec<Completion>,
    user_data: u64,
    /// Timed sleeps so far (each ends in a wake-up by the timer).
    sleeps: u64,
    /// fio's sleep granularity ([`sleep_granularity`]).
    granularity: Nanos,
    /// The think time's counters when it was last looked at or taken:
    /// requests submitted (`user_data`) at the last look, completions and
    /// submissions when the last think time began, and when.
    think_checked: u64,
    think_completed: u64,
    think_issued: u64,
    last_think: Nanos,
    /// Wake-ups already attributed to a phase.
    woken_before: u64,
    /// Its part in an offloaded job.
    offload: Option<OffloadRole>,
    /// A worker's: the start its main thread stamped on the request it
    /// runs, which that request's latency counts from.
    handed_at: Option<Nanos>,
    /// Times it slept on its offload pool's condition variable and was
    /// woken (a `FUTEX_WAKE`).
    pool_wakeups: u64,
    /// The SQ-polled ring it fills, and its entries committed and not yet
    /// reaped.
    ring: Option<RingHandle>,
    ring_out: usize,
}

impl IoThread {
    fn new(mut plan: ThreadPlan, io: IoJob, client: Client) -> Self {
        let (wait_mode, estimator) = match plan.mode {
            // mode-select's waits follow its choices (`IoThread::wait`).
            CompletionMode::Interrupt(_) | CompletionMode::ModeSelect => (WaitMode::Block, None),
            CompletionMode::Poll => (WaitMode::Spin, None),
            CompletionMode::HybridPoll(sleep) => (
                WaitMode::Spin,
                Some(match sleep {
                    HybridSleep::Adaptive => SleepEstimator::block_adaptive(),
                    HybridSleep::Min => SleepEstimator::uring_hybrid(),
                    HybridSleep::Fixed(ns) => SleepEstimator::Fixed(ns),
                }),
            ),
        };
        let depth = match &plan.offload {
            Some(OffloadRole::Main(dispatch)) => dispatch.pool.depth(),
            _ => client.depth(),
        };
        // A trace thread's requests are its stream's, whatever the job's
        // `bs`.
        let largest = match &plan.trace {
            Some(trace) => trace.largest().max(1),
            None => cint_scenario::shape::largest_block(&io.shape, io.bs),
        };
        let io_bs = io.bs;
        let pacer = Pacer::of_job(&io);
        let flow = plan.flow.take().map(crate::flow::FlowPlace::new);
        let granularity = plan.sleep_granularity;
        let ring = match plan.sqpoll.take() {
            Some(SqRole::Ring(handle)) => Some(handle),
            _ => None,
        };
        let offload = plan.offload.take();
        let floor = Floor::of_job(&io);
        let search = io
            .shape
            .latency_target
            .map(|target| (target, DepthSearch::new(depth as u32)));
        // An offloaded job's main thread hands its requests on bare: each
        // worker submits with a buffer of its own.
        let main_of_offload = matches!(plan.offload, Some(OffloadRole::Main(_)));
        let buffers = if plan.needs_buffers && !main_of_offload {
            (0..depth).map(|_| IoBuf::new(largest as usize)).collect()
        } else {
            Vec::new()
        };
        // Their own stream, so that the sizes and directions draw as they
        // do without. On a real file (requests with buffers) a skewed
        // distribution places them too.
        let stream = ChaCha8Rng::seed_from_u64(plan.seed ^ OFFSET_STREAM);
        let offsets = if plan.needs_buffers {
            RandomOffsets::on_a_file(&io, plan.span, stream)
        } else {
            RandomOffsets::new(&io, plan.span, stream)
        };
        IoThread {
            rng: ChaCha8Rng::seed_from_u64(plan.seed),
            offsets,
            select: plan.select.take(),
            trace: plan.trace.take(),
            plan,
            io,
            client,
            next_offset: 0,
            offsets_pass: 0,
            pacer,
            next_issue_at: 0,
            floor,
            measured_from: None,
            stop_at: None,
            writes_issued: 0,
            writes_base: 0,
            syncs: PassSyncs::default(),
            sync_file: None,
            flow,
            search,
            batch: Vec::with_capacity(depth),
            bytes_issued: 0,
            requests_issued: 0,
            counted_from: 0,
            largest,
            buffers,
            estimator,
            last_op: Op::Read,
            last_len: io_bs,
            wait_mode,
            out: ThreadOutcome::default(),
            done: Vec::with_capacity(depth),
            user_data: 0,
            sleeps: 0,
            granularity,
            think_checked: 0,
            think_completed: 0,
            think_issued: 0,
            last_think: 0,
            woken_before: 0,
            offload,
            handed_at: None,
            pool_wakeups: 0,
            ring,
            ring_out: 0,
        }
    }

    /// Requests out now: in flight through its client, for a main
    /// thread of an offloaded job handed to its workers and not yet done,
    /// for an SQ-polled ring's thread committed and not yet reaped.
    fn in_flight(&self) -> usize {
        match &self.offload {
            Some(OffloadRole::Main(d)) => d.pool.in_use(),
            _ if self.ring.is_some() => self.ring_out,
            _ => self.client.in_flight(),
        }
    }

    /// Requests it may have out: its client's depth, or its pool's io_us.
    fn depth(&self) -> usize {
        match &self.offload {
            Some(OffloadRole::Main(d)) => d.pool.depth(),
            _ => self.client.depth(),
        }
    }

    fn is_main_of_offload(&self) -> bool {
        matches!(self.offload, Some(OffloadRole::Main(_)))
    }

    /// Whether fio's think check comes after the request's wait: a
    /// synchronous call returns with its request complete (fio 3.33: the
    /// sync engine's io_u completes in `td_io_queue`, before do_io's
    /// `handle_thinktime`), so the check counts it. Checked before the
    /// wait, the first request was not yet counted and a second went out
    /// before the first pause. An offloaded main thread's requests
    /// complete in its workers, and it checks after handing each on.
    fn thinks_after_its_call(&self) -> bool {
        self.io.engine.is_sync() && !self.is_main_of_offload()
    }

    fn run(mut self, control: &Control) -> ThreadOutcome {
        if self.io.shape.syncs() {
            self.open_sync_file();
        }
        let started = sys::now();
        let job_start = control.job_started(self.plan.job, started);
        if let Some(trace) = &mut self.trace {
            trace.start_at(job_start);
        }
        if let Some(r) = self.plan.runtime_in_warmup {
            self.stop_at = Some(job_start.saturating_add(r));
        }
        self.restart_rate(started);
        self.last_think = started;
        let depth = self.depth();
        let batch = (self.io.batch as usize).clamp(1, depth);
        let min_events = (self.io.batch_complete_min as usize).clamp(1, depth);
        // io_getevents' max_nr: fio's iodepth_batch_complete_max (the
        // validator keeps it within batch_complete_min ..= iodepth).
        let max_events = (self.io.batch_complete_max as usize).clamp(min_events, depth);
        let each_pass = self.io.reaps_each_submission();
        let reaps = Reaps {
            min_events,
            max_events,
            low_water: (self.io.iodepth_low as usize).clamp(1, depth),
        };
        // fio restarts its rate's schedule when its ramp ends
        // (libfio.c `reset_all_stats`).
        let mut ramped = false;
        loop {
            let phase = control.phase.load(Ordering::Relaxed);
            let measuring = self.measuring(control);
            if measuring {
                self.see_window(&mut ramped);
            }
            // Ended before the run: by its size, its floor, or another
            // job's exitall. Its window ends where it drains.
            let ended_otherwise = self.floor_missed()
                || self.out.latency_exceeded.is_some()
                || self.search_over()
                || control.steady_met(self.plan.job)
                || control.told_to_exit(self.plan.job);
            // The clock is read only for a thread with a runtime.
            let over_at = self.stop_at.and_then(|t| {
                let now = sys::now();
                (now >= t).then_some(now)
            });
            let going_on = !ended_otherwise && over_at.is_none() && phase != PHASE_STOP;
            if going_on
                && self.io.shape.pass_size.is_some()
                && self.pass_end_held(control, measuring)
            {
                continue;
            }
            let ended_early = self.job_done() || ended_otherwise;
            // Past its runtime, the thread drains what it has in flight
            // (fio's `cleanup_pending_aio`), and its job's window ends
            // when it has, below.
            let runtime_over = over_at.is_some() && phase != PHASE_STOP;
            let stopping = phase == PHASE_STOP || over_at.is_some() || ended_early;
            if let Some(select) = &mut self.select {
                select.measuring = measuring;
            }
            let mut sync_next = false;
            // A sync due after a batch it cut: fio's engine answers busy
            // with the sync holding an io_u, reaps first, then syncs.
            let mut sync_reap = false;
            if !stopping {
                if self.schedule_wait(control, max_events) {
                    continue;
                }
                if self.in_flight() < depth && self.sync_if_due(measuring) {
                    continue;
                }
                if self.search_holds(control, max_events) {
                    continue;
                }
                let depth = self.search_depth(depth);
                if self.io.engine.is_sync() {
                    if self.flow_wait(control, max_events) {
                        continue;
                    }
                    // Inline, nothing is in flight here; an offloaded
                    // job's main thread hands one on while an io_u is free.
                    if self.in_flight() < depth {
                        self.submit_batch(1);
                    }
                } else {
                    // What the rate lets go now, at most a batch at a time,
                    // each submission call a pass of fio's loop for its
                    // flow control.
                    let mut due = self.requests_due();
                    while due > 0 && self.in_flight() < depth && !self.issue_paused() {
                        if self.flow_wait(control, max_events) {
                            break;
                        }
                        let room = depth - self.in_flight();
                        let n = batch.min(room).min(due);
                        // fio's `io_in_polling`: a pass of its loop queues
                        // one request, then reaps (below).
                        let n = if each_pass { n.min(1) } else { n };
                        self.submit_batch(n);
                        due -= n;
                        if each_pass {
                            break;
                        }
                        // fio looks for the sync due as it takes each
                        // slot: a batch it ended is reaped first (below),
                        // as the simulator does; after a whole batch the
                        // loop's top makes it.
                        if self.syncs.reaps_before_sync() {
                            sync_reap = true;
                            break;
                        }
                        if self.sync_is_due() {
                            sync_next = true;
                            break;
                        }
                    }
                }
                if !self.thinks_after_its_call() && self.think_wait(control, max_events) {
                    continue;
                }
                if sync_next {
                    continue;
                }
            }
            if self.in_flight() == 0 {
                if stopping {
                    if runtime_over && self.out.stopped_at.is_none() {
                        self.out.stopped_at = Some(sys::now());
                        if let Some(hook) = self.plan.on_stop.take() {
                            hook();
                        }
                    }
                    if ended_early {
                        let now = sys::now();
                        self.out.ended_at = Some(now);
                        if let Some(OffloadRole::Main(d)) = &mut self.offload {
                            d.ended_early = Some(now);
                        }
                    }
                    break;
                }
                continue;
            }
            if self.is_main_of_offload() {
                self.wait_for_io_u(stopping);
                self.account(control);
                continue;
            }
            self.reap_at_loop_end(control, stopping, sync_reap, reaps);
            if !stopping && self.thinks_after_its_call() {
                self.think_wait(control, max_events);
            }
        }
        if let Some(f) = self.flow.take() {
            f.leave();
        }
        self.finish()
    }

    /// The wait at the bottom of the thread's loop: everything back when
    /// `stopping` (fio's `cleanup_pending_aio`), its request for a
    /// synchronous engine, else between `reaps`' bounds (fio's
    /// `iodepth_batch_complete_min` and `_max`). On a full queue (the
    /// sync's io_u included, where `sync_reap`: a sync due after a batch
    /// it cut) it reaps call after call until at most the job's
    /// `iodepth_low` are out (backend.c `wait_for_completions`), as the
    /// simulator's wait does (`World::begin_drain`).
    fn reap_at_loop_end(
        &mut self,
        control: &Control,
        stopping: bool,
        sync_reap: bool,
        reaps: Reaps,
    ) {
        let (want, most) = if stopping {
            // Draining at the end: every request comes back, however
            // many calls that takes.
            (self.in_flight(), usize::MAX)
        } else if self.io.engine.is_sync() {
            (1, 1)
        } else {
            (reaps.min_events, reaps.max_events)
        };
        let depth = self.depth();
        let full = self.in_flight() + usize::from(sync_reap) >= depth;
        let drains = !stopping && full && reaps.low_water < depth;
        loop {
            let measuring = self.measuring(control);
            let spun = self.wait(want, most);
            if measuring {
                self.out.spin_ns += spun;
            }
            self.account(control);
            if !drains || self.in_flight() <= reaps.low_water {
                break;
            }
        }
    }

    /// The thread is in its measured window: the first time, its
    /// `runtime` starts there, and fio's ramp ends (`ramped`: it has), so
    /// its rate's schedule restarts and `number_ios` and the syncs count
    /// again (libfio.c `reset_all_stats`).
    fn see_window(&mut self, ramped: &mut bool) {
        if self.measured_from.is_none() {
            if let Some(hook) = &self.plan.on_window {
                hook();
            }
            let now = sys::now();
            self.measured_from = Some(now);
            // A thread whose runtime ends within its warm-up never gets
            // here (`in_window`).
            self.stop_at = self.plan.runtime.map(|r| now.saturating_add(r));
        }
        if !*ramped && self.plan.ramp {
            *ramped = true;
            self.restart_rate(sys::now());
            // fio counts `number_ios` again from the end of its ramp,
            // those in flight then included (backend.c
            // `exceeds_number_ios`), and those this thread measured since
            // the window opened: fio resets at the first of them, as the
            // simulator counts.
            self.counted_from = self
                .requests_issued
                .saturating_sub(self.in_flight() as u64 + self.out.ios);
            self.writes_base = self.writes_issued;
        }
    }

    /// What the thread measured, with what its parts kept to the end.
    fn finish(mut self) -> ThreadOutcome {
        self.out.strays = self.client.strays();
        self.out.search = self.search.map(|(_, search)| search);
        self.out.trace = self.trace.take().map(|t| t.measure);
        if let Some(select) = &self.select {
            self.out.modes = select.counts;
            self.out.measured_modes = Some(select.measured);
            self.out.idle_watch = select.idle_report();
        }
        // A main thread's pool, and a ring's, close here, once it has left
        // its loop.
        drop(self.offload.take());
        drop(self.ring.take());
        self.out
    }

    /// Submits up to `n` requests, fewer where the job's `io_size` or
    /// `number_ios` is issued first (fio looks before each request): the
    /// batch's hints know how many it holds.
    fn submit_batch(&mut self, n: usize) {
        // Drawn first, into a buffer kept from batch to batch, so that
        // the submission path allocates nothing.
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        while batch.len() < n && !self.issue_paused() {
            let request = self.next_request();
            self.bytes_issued += request.2;
            self.requests_issued += 1;
            let write = request.0 == Op::Write;
            self.writes_issued += u64::from(write);
            batch.push(request);
            // A sync due after this write ends the batch here
            // (cint_scenario::passes::PassSyncs::sync_ends_batch).
            let writes = self.writes_issued - self.writes_base;
            if write && batch.len() < n && self.syncs.sync_ends_batch(&self.io.shape, writes) {
                break;
            }
        }
        let n = batch.len();
        for (index, &(op, offset, len)) in batch.iter().enumerate() {
            self.pace(op, len);
            self.last_op = op;
            self.last_len = len;
            let hint = self.hint(op, index as u32, n as u32);
            let buf = self.buffers.pop();
            self.user_data += 1;
            let request = Request {
                op,
                offset,
                len: len as u32,
                hint,
                buf,
                user_data: self.user_data,
            };
            let submitted = match &self.offload {
                Some(OffloadRole::Main(d)) => {
                    d.pool.hand(Handed {
                        request,
                        start: sys::now(),
                        window_from: self.plan.window_from,
                    });
                    Ok(())
                }
                _ => match &self.ring {
                    Some(handle) => {
                        handle.ring.commit(Committed {
                            request,
                            at: sys::now(),
                        });
                        self.ring_out += 1;
                        Ok(())
                    }
                    None => self.submit_request(request, len, op),
                },
            };
            match submitted {
                Ok(()) => self.out.submitted += 1,
                Err(e) => {
                    self.out.fail(e.to_string());
                    // Its buffer was dropped with the request; keep the pool
                    // full for the next one.
                    if self.plan.needs_buffers {
                        self.buffers.push(IoBuf::new(self.largest as usize));
                    }
                    break;
                }
            }
        }
        self.batch = batch;
    }

    /// Submits `request` (`len` bytes, `op`) through the client: polled
    /// or not, as the thread's selector chooses where it has one.
    fn submit_request(&mut self, request: Request, len: u64, op: Op) -> Result<(), EmuError> {
        let submitted = match &mut self.select {
            Some(select) => {
                if select.choose_for_request(&self.client, len, op) {
                    self.client.submit_polled(request)
                } else {
                    self.client.submit(request)
                }
            }
            None => self.client.submit(request),
        };
        if submitted.is_ok() {
            if let Some(select) = &self.select {
                select.submitted();
            }
        }
        submitted
    }

    /// The job has issued what it was to (fio's loop stops before the
    /// next request): its `io_size` (`io_issue_bytes_exceeded`, counted
    /// from the thread's start, ramp included, as fio counts it), or its
    /// `number_ios` (`exceeds_number_ios`: completed and in flight, since
    /// the end of the ramp).
    fn job_done(&self) -> bool {
        let shape = &self.io.shape;
        self.trace.as_ref().is_some_and(|t| t.left() == 0)
            || shape.io_size.is_some_and(|b| self.bytes_issued >= b)
            || shape
                .number_ios
                .is_some_and(|n| self.requests_issued - self.counted_from >= n)
    }

    /// Opens the file the job's syncs sync ([`ThreadPlan::sync_path`]); a
    /// failure is the job's error, as a failed request's.
    fn open_sync_file(&mut self) {
        let opened = match &self.plan.sync_path {
            Some(path) => {
                std::fs::File::open(path).map_err(|e| format!("opening {path} for fsync: {e}"))
            }
            None => sys::empty_file().map_err(|e| format!("memfd_create for fsync: {e}")),
        };
        match opened {
            Ok(file) => self.sync_file = Some(file),
            Err(e) => self.out.fail(e),
        }
    }

    /// The thread issues no more for now: its job is done, or its pass
    /// over the file is ([`PassSyncs::issue_limit`]).
    fn issue_paused(&self) -> bool {
        self.job_done()
            || self
                .syncs
                .issue_limit(&self.io.shape)
                .is_some_and(|limit| self.bytes_issued >= limit)
    }

    /// fio's sync before the thread's next requests
    /// ([`PassSyncs::sync_due`], as the simulator looks at the top of
    /// each pass): when due, and a request is left, the thread makes the
    /// call. True when it did.
    fn sync_if_due(&mut self, measuring: bool) -> bool {
        let writes = self.writes_issued - self.writes_base;
        match self.syncs.sync_due(&self.io.shape, writes) {
            Some(datasync) if !self.issue_paused() => self.make_sync(datasync, measuring),
            _ => false,
        }
    }

    /// Whether a sync falls due before the thread's next request.
    fn sync_is_due(&self) -> bool {
        let writes = self.writes_issued - self.writes_base;
        self.syncs.sync_due(&self.io.shape, writes).is_some() && !self.issue_paused()
    }

    /// The end of one of the thread's passes over its file (`pass_size`,
    /// crate `cint_scenario::passes`): the sync fio makes after the
    /// pass's last write where its loop goes on, then the wait for what
    /// is in flight, then the next pass. True when it synced or waited.
    fn pass_end_held(&mut self, control: &Control, measuring: bool) -> bool {
        let top = LoopTop {
            bytes: self.bytes_issued,
            writes: self.writes_issued - self.writes_base,
            issued: self.requests_issued - self.counted_from,
            slot_free: self.in_flight() < self.depth(),
            in_flight: self.in_flight() as u32,
        };
        let sync_engine = self.io.engine.is_sync();
        match self
            .syncs
            .at_pass_end(&self.io.shape, (self.io.size, self.io.bs), sync_engine, top)
        {
            Some(PassEnd::Sync(datasync)) => self.make_sync(datasync, measuring),
            Some(PassEnd::Drain) => {
                let spun = self.wait(self.in_flight(), usize::MAX);
                if self.measuring(control) {
                    self.out.spin_ns += spun;
                }
                self.account(control);
                true
            }
            None => false,
        }
    }

    /// Makes an `fsync` (or `fdatasync`) of the job's file and measures
    /// it as fio does (its `sync` figures, where the pass is
    /// `measuring`). False when the thread has no file to sync.
    fn make_sync(&mut self, datasync: bool, measuring: bool) -> bool {
        let Some(file) = &self.sync_file else {
            return false;
        };
        let from = sys::now();
        let synced = if datasync {
            file.sync_data()
        } else {
            file.sync_all()
        };
        let took = sys::now().saturating_sub(from);
        self.syncs.synced();
        if let Err(e) = synced {
            self.out.fail(format!(
                "{}: {e}",
                if datasync { "fdatasync" } else { "fsync" }
            ));
        }
        if measuring {
            self.out.sync_ios += 1;
            self.out.fsync_ios += u64::from(!datasync);
            self.out.sync_hist.record(took);
        } else {
            // Read only for a job that ended before its window opened,
            // all of whose calls came before it.
            self.out.warmup.sync(datasync);
        }
        true
    }

    /// fio's flow control at a pass from which a request may go (not with
    /// the queue full): ahead of its share, the thread reaps what it has
    /// in flight and sleeps `flow_sleep`, or without one looks again.
    /// True when it held.
    fn flow_wait(&mut self, control: &Control, most: usize) -> bool {
        if self.in_flight() >= self.depth() {
            return false;
        }
        let Some(flow) = &mut self.flow else {
            return false;
        };
        if !flow.holds() {
            return false;
        }
        let sleep = flow.sleep;
        if sleep > 0 {
            self.quiesce(control, most);
            self.pause(sleep);
        } else {
            std::hint::spin_loop();
        }
        true
    }

    /// Whether what completes now counts ([`in_window`]).
    fn measuring(&self, control: &Control) -> bool {
        in_window(&self.plan, control.phase.load(Ordering::Relaxed))
    }

    /// fio's `check_min_rate` at the top of a pass of the loop: whether
    /// the thread missed its rate's floor, now or before (it then ends).
    fn floor_missed(&mut self) -> bool {
        if self.out.floor_missed.is_some() {
            return true;
        }
        let (Some(floor), Some(from)) = (&mut self.floor, self.measured_from) else {
            return false;
        };
        self.out.floor_missed = floor.check(sys::now(), from);
        self.out.floor_missed.is_some()
    }

    /// The rate's schedules start over at `now` (the thread's start, and
    /// the end of its ramp, as fio's `reset_all_stats` restarts them).
    fn restart_rate(&mut self, now: Nanos) {
        if let Some(p) = &mut self.pacer {
            p.start_from(&mut self.next_issue_at, now, true);
        }
    }

    /// Requests the rate lets go now: all those behind the schedule (fio
    /// keeps no cap on the backlog).
    fn requests_due(&self) -> usize {
        let now = sys::now();
        let rate = match &self.pacer {
            Some(p) => match p.tokens(self.next_issue_at, now) {
                u32::MAX => usize::MAX,
                n => n as usize,
            },
            None => usize::MAX,
        };
        let released = self.trace.as_ref().map_or(usize::MAX, |t| t.due(now));
        rate.min(released)
    }

    /// fio's rate check before a request (fio 3.33, io_u.c `rate_ddir`):
    /// ahead of its schedule, the thread reaps every request in flight
    /// (`io_u_quiesce`: reap calls for at least one event, until none is
    /// left, each taking at most `most`, fio's `iodepth_batch_complete_max`),
    /// then sleeps what it was ahead by when it looked, however long the
    /// reaping took (`usec_sleep`). A trace replayed open loop is paced by
    /// its releases the same way (the simulator's rule; a trace job has no
    /// rate). True when it did; the loop then looks again.
    fn schedule_wait(&mut self, control: &Control, most: usize) -> bool {
        let now = sys::now();
        let ahead = match self.ahead_of_rate(now) {
            Some(ahead_by) => Some(ahead_by),
            None => self.trace.as_ref().and_then(|t| t.ahead_by(now)),
        };
        let Some(ahead_by) = ahead else {
            return false;
        };
        self.quiesce(control, most);
        self.usec_sleep(ahead_by);
        true
    }

    /// How long the thread is ahead of its rate at `now`, if it is. Per
    /// direction, the look settles the next request's direction, as
    /// fio's `rate_ddir` does: the drawn one when behind, the other when
    /// that is behind, else the nearer of the two after the sleep.
    fn ahead_of_rate(&mut self, now: Nanos) -> Option<Nanos> {
        let pacer = self.pacer.as_mut()?;
        let (rng, rwmixread) = (&mut self.rng, self.io.rwmixread);
        pacer.ahead_by(self.next_issue_at, now, || draw_write(rng, rwmixread))
    }

    /// Whether the next request of a job that reads and writes is a
    /// write, drawn by `rwmixread`.
    fn draw_write(&mut self) -> bool {
        draw_write(&mut self.rng, self.io.rwmixread)
    }

    /// fio's think time (fio 3.33, backend.c `handle_thinktime`), looked at
    /// once after the thread submitted: after `thinktime_blocks` requests
    /// completed (or submitted, `thinktime_blocks_type=issue`) since the
    /// last, or `thinktime_iotime` and the think time itself since it
    /// began, the thread reaps what it has in flight, spins
    /// `thinktime_spin`, and sleeps the rest with fio's sleep. The counts
    /// are stamped before the reap, so what it takes counts towards the
    /// next. True when it paused.
    fn think_wait(&mut self, control: &Control, most: usize) -> bool {
        let shape = &self.io.shape;
        let (think, spin) = (shape.thinktime, shape.thinktime_spin);
        if think == 0 || self.user_data == self.think_checked {
            return false;
        }
        self.think_checked = self.user_data;
        let counted = if shape.thinktime_issue {
            self.user_data - self.think_issued
        } else {
            self.out.completed - self.think_completed
        };
        let now = sys::now();
        let blocks = shape.thinktime_blocks.max(1);
        let by_count = blocks != u32::MAX && counted >= u64::from(blocks);
        let by_time = shape.thinktime_iotime > 0
            && now.saturating_sub(self.last_think) >= shape.thinktime_iotime + think;
        if !by_count && !by_time {
            return false;
        }
        let (completed, issued) = (self.out.completed, self.user_data);
        self.quiesce(control, most);
        sys::spin_until(sys::now() + spin);
        self.usec_sleep(think.saturating_sub(spin));
        self.think_completed = completed;
        self.think_issued = issued;
        self.last_think = now;
        // fio's rate_ign_think: the rate's schedule moves on by the think
        // time, less one request's share when that is shorter.
        if let Some(p) = self.pacer.as_mut().filter(|_| self.io.shape.rate_ign_think) {
            p.ignore_think(&mut self.next_issue_at, think);
        }
        true
    }

    /// fio's `io_u_quiesce`: reap calls for at least one event each, at
    /// most `most`, until nothing is in flight.
    fn quiesce(&mut self, control: &Control, most: usize) {
        // An offloaded job's main thread has nothing to reap: its workers
        // do, and fio does not quiesce it.
        while !self.is_main_of_offload() && self.in_flight() > 0 {
            let measuring = self.measuring(control);
            let spun = self.wait(1, most);
            if measuring {
                self.out.spin_ns += spun;
            }
            self.account(control);
        }
    }

    /// An offloaded job's main thread reaps nothing, its workers do: it
    /// sleeps for a free io_u when all are out, and at its end until none
    /// is (fio's `__get_io_u` waits on `free_cond`; its workqueue's exit
    /// flushes). Meanwhile it does not run on its core.
    fn wait_for_io_u(&mut self, draining: bool) {
        let Some(OffloadRole::Main(d)) = &self.offload else {
            return;
        };
        let pool = Arc::clone(&d.pool);
        let below = if draining { 1 } else { pool.depth() };
        if pool.in_use() < below {
            return;
        }
        crate::activity::enter(ThreadState::Idle);
        let slept = self.client.away(|| pool.wait_until_below(below));
        crate::activity::enter(ThreadState::Busy);
        self.pool_wakeups += u64::from(slept);
    }

    /// A worker of an offloaded job (fio's `io_workqueue_fn`): takes each
    /// request its main thread hands it, sleeping while there is none,
    /// runs it through the job's engine at depth 1, measures it from the
    /// main thread's start stamp, and frees its io_u; ends when the main
    /// thread has left and nothing is left for it.
    fn run_worker(mut self, control: &Control) -> ThreadOutcome {
        let Some(OffloadRole::Worker(pool, index)) = &self.offload else {
            return self.out;
        };
        let (pool, index) = (Arc::clone(pool), *index);
        loop {
            crate::activity::enter(ThreadState::Idle);
            let (handed, slept) = self.client.away(|| pool.take(index));
            crate::activity::enter(ThreadState::Busy);
            self.pool_wakeups += u64::from(slept);
            let Some(Handed {
                mut request,
                start,
                window_from,
            }) = handed
            else {
                break;
            };
            self.plan.window_from = window_from;
            self.handed_at = Some(start);
            let measuring = self.measuring(control);
            if let Some(select) = &mut self.select {
                select.measuring = measuring;
            }
            let (op, len) = (request.op, u64::from(request.len));
            self.last_op = op;
            self.last_len = len;
            request.buf = self.buffers.pop();
            match self.submit_request(request, len, op) {
                Ok(()) => {
                    while self.done.is_empty() && self.client.in_flight() > 0 {
                        let measuring = self.measuring(control);
                        let spun = self.wait(1, 1);
                        if measuring {
                            self.out.spin_ns += spun;
                        }
                    }
                    self.account(control);
                }
                Err(e) => {
                    self.out.fail(e.to_string());
                    if self.plan.needs_buffers {
                        self.buffers.push(IoBuf::new(self.largest as usize));
                    }
                }
            }
            pool.free_one();
        }
        self.out.ended_at = pool.ended_early();
        self.finish()
    }

    /// The latency-target search's look at the top of the loop
    /// (`cint_scenario::depth_search`): true when it held the thread,
    /// to wait for its requests in flight after a change of depth, or
    /// because the search is over.
    fn search_holds(&mut self, control: &Control, most: usize) -> bool {
        let in_flight = self.in_flight() as u32;
        let Some((target, search)) = &mut self.search else {
            return false;
        };
        match search.step(target, sys::now(), in_flight) {
            Step::Run => false,
            Step::Quiesce => {
                self.quiesce(control, most);
                true
            }
            Step::End => true,
        }
    }

    /// The search has ended the thread: at the depth it settled on, or
    /// at a late request at depth 1 (fio's `lat_fatal`).
    fn search_over(&self) -> bool {
        self.search
            .as_ref()
            .is_some_and(|(_, search)| search.outcome().is_some())
    }

    /// The depth the thread may keep in flight: its queue's, or less
    /// where its latency-target search says so.
    fn search_depth(&self, depth: usize) -> usize {
        match &self.search {
            Some((_, search)) => depth.min(search.depth() as usize),
            None => depth,
        }
    }

    /// Sleeps `ns` in `nanosleep` with nothing of its own in flight (a
    /// rate's, a think time's or a flow's pause, after a reap of all):
    /// idle to the energy model's clocks and, to its core's idle tracker,
    /// not running, so that an interrupt for another thread there may find
    /// the core idle, as Linux's would; one wake-up, by the timer. Until
    /// 2026-11-29 such a thread counted as running through its sleeps, and
    /// its neighbours' interrupts all went through the handler thread.
    fn pause(&mut self, ns: Nanos) {
        crate::activity::enter(ThreadState::Idle);
        self.client.away(|| sys::sleep_ns(ns));
        crate::activity::enter(ThreadState::Busy);
        self.sleeps += 1;
    }

    /// fio's `usec_sleep` (time.c): under its granularity a spin on the
    /// clock; otherwise `nanosleep` for the wait less the granularity, then
    /// round again with what is left.
    fn usec_sleep(&mut self, mut left: Nanos) {
        loop {
            if left < self.granularity {
                sys::spin_until(sys::now() + left);
                return;
            }
            let from = sys::now();
            self.pause(left - self.granularity);
            let slept = sys::now().saturating_sub(from);
            if slept >= left {
                return;
            }
            left -= slept;
        }
    }

    /// Moves the rate's schedule by a request of `len` bytes in
    /// direction `op`.
    fn pace(&mut self, op: Op, len: u64) {
        if let Some(p) = &mut self.pacer {
            p.advance(&mut self.next_issue_at, op == Op::Write, len, &mut self.rng);
        }
    }

    /// The next request: its direction, offset and size. Sizes are drawn
    /// as the simulator draws them (`bssplit`, `bsrange`); a random job's
    /// offsets too where they decide something (`offsets`); otherwise
    /// offsets are whole `bs` (the smallest size) from the span's start,
    /// a random one moved back where the request would pass the span's
    /// end, a sequential one back to the start.
    fn next_request(&mut self) -> (Op, u64, u64) {
        if let Some(request) = self.trace.as_mut().and_then(TraceCursor::take) {
            return request;
        }
        let bs = self.io.bs.max(1);
        let (op, random) = match self.io.rw {
            Rw::Read => (Op::Read, false),
            Rw::Write => (Op::Write, false),
            Rw::RandRead => (Op::Read, true),
            Rw::RandWrite => (Op::Write, true),
            Rw::RandRw => (self.mixed_direction(), true),
            Rw::ReadWrite => (self.mixed_direction(), false),
        };
        let write = op == Op::Write;
        let shape = &self.io.shape;
        let room = self.syncs.room_in_pass(shape, self.bytes_issued, !random);
        let len =
            cint_scenario::shape::draw_block_size_within(shape, bs, write, room, &mut self.rng);
        if let (true, Some(offsets)) = (random, self.offsets.as_mut()) {
            let (shape, rng) = (&self.io.shape, &mut self.rng);
            let (offset, len) = offsets.place(write, len, || {
                cint_scenario::shape::draw_block_size(shape, bs, write, rng)
            });
            return (op, offset, len);
        }
        // The span holds at least the largest request (`runner`).
        let last_start = self.plan.span.saturating_sub(len) / bs * bs;
        let offset = if random {
            let blocks = (self.plan.span / bs).max(1);
            (self.rng.gen_range(0..blocks) * bs).min(last_start)
        } else {
            // Each pass over the file starts at its start (libfio.c
            // `clear_io_state`), as the offsets wrap at its end.
            let pass = self.syncs.pass();
            if self.next_offset > last_start || pass != self.offsets_pass {
                self.next_offset = 0;
                self.offsets_pass = pass;
            }
            let at = self.next_offset;
            self.next_offset += len;
            at
        };
        (op, offset, len)
    }

    /// The direction of a mixed job's next request: drawn by `rwmixread`;
    /// under caps per direction, the one the last look settled, else drawn
    /// and settled as a look would (a later request of the same batch),
    /// but never held back: the count of requests due bounded the batch.
    fn mixed_direction(&mut self) -> Op {
        let (rng, rwmixread) = (&mut self.rng, self.io.rwmixread);
        let paced = self
            .pacer
            .as_mut()
            .and_then(|p| p.next_direction(sys::now(), || draw_write(rng, rwmixread)));
        let write = paced.unwrap_or_else(|| self.draw_write());
        if write {
            Op::Write
        } else {
            Op::Read
        }
    }

    fn hint(&self, op: Op, index: u32, len: u32) -> Hint {
        let marked = cint_scenario::shape::batch_hint(&self.io.shape, self.io.engine, index, len);
        if let Some(hint) = marked.or(self.io.hint) {
            return hint;
        }
        let write = op == Op::Write;
        let (call, rw_flags) = match self.io.engine {
            Engine::Psync => (
                if write { IoCall::Pwrite } else { IoCall::Pread },
                RwFlags::EMPTY,
            ),
            Engine::Pvsync2 => (
                if write {
                    IoCall::Pwritev2
                } else {
                    IoCall::Preadv2
                },
                if self.io.nowait {
                    RwFlags::NOWAIT
                } else {
                    RwFlags::EMPTY
                },
            ),
            Engine::Libaio => (IoCall::IoSubmit, RwFlags::EMPTY),
            Engine::IoUring => (IoCall::IoUringBatch, RwFlags::EMPTY),
        };
        let ctx = IoContext {
            blocking_fd: true,
            o_direct: self.io.direct,
            rw_flags,
            ms_sync: false,
            batch: BatchPosition { index, len },
        };
        request_hint(call, &ctx)
    }

    /// One reap call: waits for at least `want` completions and takes at
    /// most `most` (the rest stay delivered for the next call). Returns
    /// how long it spun.
    fn wait(&mut self, want: usize, most: usize) -> Nanos {
        if self.ring.is_some() {
            return self.spin_on_ring(want, most);
        }
        let op = self.last_op;
        if let Some(select) = &mut self.select {
            // What is in already needs no wait, so no choice (the
            // simulator's choices are per wait too).
            let have = self.client.reap_at_most(most, &mut self.done);
            if have >= want {
                return 0;
            }
            let (want, most) = (want - have, most - have);
            let began = self.client.wakeups() + self.sleeps;
            let spun = match select.choose_for_wait(&self.client, self.last_len, op) {
                CompletionChoice::Poll => self.spin_for(want, most),
                CompletionChoice::Sleep(ns) => self.sleep_then_spin(ns, want, most),
                CompletionChoice::Interrupt => {
                    self.client
                        .wait_between(want, most, WaitMode::Block, &mut self.done);
                    0
                }
            };
            let ended = self.client.wakeups() + self.sleeps;
            if let Some(select) = &mut self.select {
                select.wait_ended(self.last_len, op, (began, ended));
            }
            return spun;
        }
        if let Some(estimator) = &mut self.estimator {
            // Hybrid polling: sleep for the estimate, then spin.
            let dir = match op {
                Op::Read => Direction::Read,
                Op::Write => Direction::Write,
            };
            let sleep = estimator.sleep_for(sys::now(), self.last_len, dir);
            return self.sleep_then_spin(sleep, want, most);
        }
        match self.wait_mode {
            WaitMode::Spin => self.spin_for(want, most),
            // fio's `iodepth_batch_complete_min=0`: its engine's calls
            // return at once and it calls again until an event is in, busy
            // in the kernel (no poll loop) while the interrupts deliver.
            WaitMode::Block if self.io.reaps_without_waiting() => {
                self.client
                    .wait_between(want, most, WaitMode::Spin, &mut self.done);
                0
            }
            WaitMode::Block => {
                self.client
                    .wait_between(want, most, WaitMode::Block, &mut self.done);
                0
            }
        }
    }

    /// An SQ-polled ring's thread waits for `want` completions (at most
    /// what it has out) by spinning on its completion ring in user space,
    /// as fio does, then takes up to `most` into its hand. Returns how
    /// long it spun.
    fn spin_on_ring(&mut self, want: usize, most: usize) -> Nanos {
        let Some(handle) = &self.ring else {
            return 0;
        };
        let ring = Arc::clone(&handle.ring);
        let want = want.min(self.ring_out);
        let from = sys::now();
        crate::activity::enter(ThreadState::Spin);
        while ring.ready() < want {
            std::hint::spin_loop();
        }
        let before = self.done.len();
        let n = ring.reap(most, &mut self.done);
        let now = sys::now();
        crate::activity::enter(ThreadState::Busy);
        for c in &mut self.done[before..] {
            c.in_hand = now;
        }
        self.ring_out -= n;
        now.saturating_sub(from)
    }

    /// Sleeps `sleep` unless `want` completions are already in, then
    /// spins for the rest (hybrid polling). Returns how long it spun.
    fn sleep_then_spin(&mut self, sleep: Nanos, want: usize, most: usize) -> Nanos {
        // Completions the call already took stay in `done` before these.
        let before = self.done.len();
        if sleep > 0 && self.client.reap_at_most(most, &mut self.done) < want {
            // Counted as running through the sleep, unlike a pause: the
            // thread waits for its own requests, and `mode-select`'s
            // neighbours must count it as wanting the core, as the
            // simulator's rule does.
            crate::activity::enter(ThreadState::Idle);
            sys::sleep_ns(sleep);
            crate::activity::enter(ThreadState::Busy);
            self.sleeps += 1;
        }
        let have = self.done.len() - before;
        if have >= want {
            return 0;
        }
        self.spin_for(want - have, most - have)
    }

    /// Spins until `want` completions are in, taking at most `most`.
    /// Returns how long it spun.
    fn spin_for(&mut self, want: usize, most: usize) -> Nanos {
        let from = sys::now();
        crate::activity::enter(ThreadState::Spin);
        self.client
            .wait_between(want, most, WaitMode::Spin, &mut self.done);
        crate::activity::enter(ThreadState::Busy);
        sys::now().saturating_sub(from)
    }

    fn account(&mut self, control: &Control) {
        let phase = control.phase.load(Ordering::SeqCst);
        let measuring = in_window(&self.plan, phase);
        let counted = control.counted_span(&self.plan);
        // Wake-ups since the last pass: the client's futex wake-ups and
        // this thread's timed sleeps, attributed to the window by the
        // phase when they are accounted (a wake-up carries no instant; at
        // most one pass's at each edge falls on the wrong side).
        let woken = self.client.wakeups() + self.sleeps + self.pool_wakeups;
        if measuring {
            self.out.wakeups += woken - self.woken_before;
        }
        self.woken_before = woken;
        // A completion since the last sync lets the next one fall due.
        if !self.done.is_empty() {
            self.syncs.completed();
        }
        // When these completions were reaped, for the latency-target
        // search and the steady state: read only where one runs, as this
        // runs at every reap.
        let steady = control.has_steady(self.plan.job);
        let now = if self.search.is_some() || steady {
            sys::now()
        } else {
            0
        };
        // A worker's requests count from the start its main thread
        // stamped on them, the wait for a worker included (fio's).
        let handed_at = self.handed_at;
        let (mut reaped, mut reaped_bytes) = (0, 0);
        for c in self.done.drain(..) {
            let latency = handed_at.map_or_else(|| c.latency(), |at| c.in_hand.saturating_sub(at));
            self.out.completed += 1;
            reaped += 1;
            reaped_bytes += u64::from(c.len);
            if let Some((target, search)) = &mut self.search {
                search.completion(target, c.latency(), now);
            }
            match c.by {
                DeliveredBy::FullIrq => self.out.by_full += 1,
                DeliveredBy::UrgentIrq => self.out.by_urgent += 1,
                DeliveredBy::Poll => self.out.by_poll += 1,
            }
            if let Some(select) = &mut self.select {
                select.completed(u64::from(c.len), c.op, c.posted.saturating_sub(c.submitted));
            }
            if let Some(estimator) = &mut self.estimator {
                let dir = match c.op {
                    Op::Read => Direction::Read,
                    Op::Write => Direction::Write,
                };
                estimator.record(c.in_hand, u64::from(c.len), dir, c.latency());
            }
            let in_window = counted.is_some_and(|(from, to)| (from..=to).contains(&c.in_hand));
            // Issued before the window closed and in hand after it: a
            // request the window ended on, which waited from its call (or
            // the window's start) to the close.
            let start = handed_at.unwrap_or(c.submitted);
            if let Some((from, to)) = counted.filter(|&(_, to)| to != UNKNOWN_EDGE) {
                if c.in_hand > to && start < to && from < to {
                    self.out.unfinished.add(to - start.max(from));
                }
            }
            match c.result {
                Ok(bytes) => {
                    if in_window {
                        if let Some(floor) = &mut self.floor {
                            floor.sample(c.op == Op::Write, u64::from(bytes));
                        }
                        // fio's max_latency: the first completion past
                        // its bound ends the thread.
                        if self.out.latency_exceeded.is_none() {
                            self.out.latency_exceeded = self
                                .io
                                .shape
                                .max_latency
                                .and_then(|m| m.check(c.op == Op::Write, latency, c.in_hand));
                        }
                        if let Some(trace) = &mut self.trace {
                            // A trace thread's requests carry their place
                            // in its stream plus one (`submit_batch`).
                            trace.measured(c.user_data.saturating_sub(1) as usize, c.submitted);
                        }
                        self.out.ios += 1;
                        self.out.bytes += u64::from(bytes);
                        self.out.counted_span = Some(match self.out.counted_span {
                            None => (c.in_hand, c.in_hand),
                            Some((first, last)) => (first.min(c.in_hand), last.max(c.in_hand)),
                        });
                        self.out.hist.record(latency);
                        let dir = &mut self.out.by_direction[usize::from(c.op == Op::Write)];
                        dir.hist.record(latency);
                        dir.bytes += u64::from(bytes);
                    } else if counted.is_none_or(|(from, _)| c.in_hand < from) {
                        self.out.warmup.request(c.op == Op::Write, u64::from(bytes));
                    }
                }
                Err(e) => self.out.fail(e.to_string()),
            }
            if let Some(buf) = c.buf {
                self.buffers.push(buf);
            }
            if self.io.think > 0 {
                sys::spin_until(sys::now() + self.io.think);
            }
        }
        if steady && reaped > 0 {
            control.steady_sample(self.plan.job, now, reaped, reaped_bytes);
        }
    }
}

/// Whether a request of a job that reads and writes `rwmixread` percent
/// reads is a write.
fn draw_write(rng: &mut ChaCha8Rng, rwmixread: u8) -> bool {
    rng.gen_range(0..100u8) >= rwmixread
}

/// fio's sleep granularity as fio measures it at start (fio 3.33,
/// `fio_time_init`): the longest of ten `nanosleep` calls of 1 us. The
/// coordinator measures it once per run, before any device core spins,
/// as fio does once before its jobs: measured by each thread as it
/// started, beside its neighbours starting on the same core, it came out
/// at up to 5 ms where it is 70 us (thirty-two workers of an offloaded
/// job), and a thread paced by its rate then spun through every sleep.
pub(crate) fn sleep_granularity() -> Nanos {
    (0..10)
        .map(|_| {
            let from = sys::now();
            sys::sleep_ns(1_000);
            sys::now().saturating_sub(from)
        })
        .max()
        .unwrap_or(0)
}

/// How a thread's loop reaps: fio's `iodepth_batch_complete_min` and
/// `_max`, and its `iodepth_low`, each within the thread's depth.
#[derive(Clone, Copy)]
struct Reaps {
    min_events: usize,
    max_events: usize,
    low_water: usize,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cint_policy::{PolicyConfig, MS};

    use super::*;
    use crate::activity::{ActivityClock, ClockPair};

    /// A CPU-bound thread of job 1, in the group after job 0's, with a
    /// runtime of `runtime`.
    fn later_cpu_thread(runtime: Nanos) -> ThreadPlan {
        ThreadPlan {
            job: 1,
            io: None,
            mode: CompletionMode::Interrupt(PolicyConfig::None),
            runtime: Some(runtime),
            runtime_in_warmup: None,
            stage: Some(Stage {
                group: 1,
                startdelay: 0,
                warmup: 0,
            }),
            window_from: None,
            flow: None,
            sync_path: None,
            span: 0,
            needs_buffers: false,
            seed: 1,
            ramp: false,
            select: None,
            trace: None,
            occupant: None,
            offload: None,
            sleep_granularity: 0,
            sqpoll: None,
            on_start: None,
            on_window: None,
            on_stop: None,
        }
    }

    #[test]
    fn completions_count_by_when_they_were_in_hand_not_by_the_phase_seen() {
        let control = Control::new(&[1], vec![0], &[None]);
        let mut plan = later_cpu_thread(MS);
        plan.window_from = None;
        assert_eq!(control.counted_span(&plan), None);
        // While the coordinator reads the clock for an edge, a thread
        // that looks finds the edge being set, not unknown.
        control.open_window_by(|| {
            assert_eq!(control.window_open.load(Ordering::SeqCst), SETTING_EDGE);
            1_000
        });
        // A thread that sees the window open counts from its opening
        // instant, not from when it looked.
        assert_eq!(control.counted_span(&plan), Some((1_000, UNKNOWN_EDGE)));
        // A staged job counts from its own start, never before the run's.
        plan.window_from = Some(1_500);
        assert_eq!(control.counted_span(&plan), Some((1_500, UNKNOWN_EDGE)));
        plan.window_from = Some(500);
        assert_eq!(control.counted_span(&plan), Some((1_000, UNKNOWN_EDGE)));
        // Once closed, what was in hand before the close still counts,
        // also after the run stopped.
        control.close_window_by(|| 9_000);
        assert_eq!(control.counted_span(&plan), Some((1_000, 9_000)));
        control.stop();
        assert_eq!(control.counted_span(&plan), Some((1_000, 9_000)));
    }

    #[test]
    fn a_thread_that_finds_an_edge_being_set_waits_for_its_instant() {
        let control = Arc::new(Control::new(&[1], vec![0], &[None]));
        control.open_window_by(|| 1_000);
        let plan = later_cpu_thread(MS);
        let (marked_tx, marked_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let closer = {
            let control = Arc::clone(&control);
            std::thread::spawn(move || {
                control.close_window_by(|| {
                    marked_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    7_000
                })
            })
        };
        marked_rx.recv().unwrap();
        let looker = {
            let control = Arc::clone(&control);
            std::thread::spawn(move || control.counted_span(&plan))
        };
        // The looker cannot return while the edge is being set.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!looker.is_finished());
        release_tx.send(()).unwrap();
        assert_eq!(closer.join().unwrap(), 7_000);
        assert_eq!(looker.join().unwrap(), Some((1_000, 7_000)));
    }

    #[test]
    fn a_thread_waiting_for_its_group_is_idle_on_its_clocks() {
        // The power model merges SMT siblings from these clocks: a thread
        // blocked until its group starts must not count as running (it
        // did for the whole wait before 2026-11-29).
        let control = Arc::new(Control::new(&[1, 1], vec![0, 1], &[None, None]));
        control.phase.store(PHASE_MEASURE, Ordering::SeqCst);
        let origin = sys::now();
        let pair: ClockPair = (
            Arc::new(ActivityClock::new(origin)),
            Arc::new(ActivityClock::new(origin)),
        );
        let (clocks, thread_control) = (pair.clone(), Arc::clone(&control));
        let thread = std::thread::spawn(move || {
            crate::activity::attach(clocks);
            let outcome = run_thread(later_cpu_thread(2 * MS), None, &thread_control);
            crate::activity::detach();
            outcome
        });
        std::thread::sleep(std::time::Duration::from_millis(40));
        // Job 0's one thread ends: group 1 starts, burns its 2 ms, ends.
        control.job_thread_ended(0, None);
        let outcome = thread.join().expect("the thread ends");
        assert!(outcome.ended_at.is_some(), "it ran its runtime");
        let times = pair.0.read(sys::now);
        assert!(
            times.busy_ns < 30 * MS,
            "busy {} us of a 40 ms wait and a 2 ms burn",
            times.busy_ns / 1_000
        );
        assert!(times.busy_ns >= 2 * MS, "busy {} us", times.busy_ns / 1_000);
    }
}
