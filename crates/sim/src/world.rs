//! The simulated machine for one strategy: device, host cores, threads and
//! their requests, all in index-addressed slabs sized at set-up so that the
//! steady state allocates nothing. The behaviour lives in [`crate::device`],
//! [`crate::host`] and [`crate::workload`]; this module builds the world,
//! runs the event loop and hands the result to [`crate::metrics`].

use std::collections::VecDeque;

use cint_policy::hybrid_poll::SleepEstimator;
use cint_policy::{Hint, Nanos, Policy, PolicyConfig, Seq};
use cint_report::StrategyResult;
use cint_scenario::depth_search::DepthSearch;
use cint_scenario::steady::SteadyProbe;
use cint_scenario::unfinished::Unfinished;
use cint_scenario::units::format_ms;
use cint_scenario::{CompletionMode, HybridSleep, IoJob, Scenario, Strategy, Work};
use rand_chacha::ChaCha8Rng;

use crate::device::{Device, HwQueue};
use crate::engine::{
    stream_rng, Event, EventQueue, HOST_CORE_STREAM_BASE, HOST_THREAD_STREAM_BASE,
};
use crate::gaps::GapLog;
use crate::host::spread::CostSpread;
use crate::host::{Core, HostCosts};
use crate::invariants::Invariants;
use crate::metrics::{Counters, JobStats};
use crate::workload::{Flows, Groups, Program, ThreadCounts, ThreadShape};
use crate::SimError;
use crate::INVARIANT_VIOLATED;

/// Where a request is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReqState {
    /// The slot is free: not issued.
    Free,
    /// In the submission path of its thread, not at the device yet.
    Submitting,
    /// At the device (waiting for a unit or being serviced).
    InDevice,
    /// Its completion entry is posted (or waits to be posted) in the CQ.
    Posted,
    /// Reaped by the driver and handed to its thread's completion list.
    Delivered,
}

/// One request slot; each thread owns `iodepth` of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    pub thread: u32,
    pub queue: u32,
    pub bytes: u64,
    pub write: bool,
    pub hint: Hint,
    pub seq: Seq,
    /// System call entry.
    pub issued: Nanos,
    /// How long before its system call fio started it, where its latency
    /// is measured from: 0, or for an offloaded request the wait from the
    /// main thread's hand-off (crate::workload's offload). 32 bits keep a
    /// request in one 64-byte cache line.
    pub waited: u32,
    /// Its submission call returned (fio's issue time for asynchronous
    /// engines: submission latency ends here).
    pub submitted: Nanos,
    /// Reached the device (submission doorbell).
    pub dispatched: Nanos,
    /// Completion entry posted.
    pub posted_at: Nanos,
    pub state: ReqState,
    /// Its thread polls for it (a poll queue, no interrupt); else an
    /// interrupt queue's policy delivers it.
    pub polled: bool,
}

// A request fits one 64-byte cache line: every event of an I/O touches it.
const _: () = assert!(std::mem::size_of::<Request>() <= 64);

impl Request {
    /// Its total latency if it is in hand at `now` (fio's `lat`: from
    /// where fio started it, [`Request::waited`] before its call).
    #[inline]
    pub(crate) fn latency_at(&self, now: Nanos) -> Nanos {
        now - self.issued + Nanos::from(self.waited)
    }

    /// A free slot of thread `thread` on device queue `queue`.
    pub(crate) fn free(thread: u32, queue: u32, polled: bool) -> Request {
        Request {
            thread,
            queue,
            bytes: 0,
            write: false,
            hint: Hint::Unmarked,
            seq: 0,
            issued: 0,
            waited: 0,
            submitted: 0,
            dispatched: 0,
            posted_at: 0,
            state: ReqState::Free,
            polled,
        }
    }
}

/// CFS state of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunState {
    /// Owns its core (possibly interrupted by an IRQ right now).
    Running,
    /// On its core's run queue.
    Runnable,
    /// Sleeping until woken.
    Blocked,
}

/// What a blocked thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not waiting.
    Nothing,
    /// A synchronous call waits for its one request.
    Sync,
    /// libaio `io_getevents`: woken by every delivery (Linux 5.0 fs/aio.c).
    AioEvents { min_nr: u32 },
    /// io_uring wait: woken only once `min_nr` completions are ready.
    UringEvents { min_nr: u32 },
    /// A timed sleep (a trace's pacing, flow control, a job's start).
    Sleep,
    /// fio's `nanosleep` in its think time or rate limiter
    /// ([`crate::workload`]'s `fio_sleep`).
    FioSleep,
    /// An offload worker asleep on its condition variable, waiting for a
    /// request.
    OffloadIdle,
    /// An offloaded job's main thread waiting for a free io_u.
    OffloadFree,
    /// An SQ thread asleep after its idle time (`IORING_SQ_NEED_WAKEUP`).
    SqIdle,
    /// Hybrid polling's sleep before spinning for `need` completions.
    HybridSleep { need: u32 },
    /// A submission call sleeps for a driver tag (blk-mq).
    Tag,
    /// The job's runtime is over.
    Exited,
    /// In the page cache, for one of its own requests: a buffered read
    /// for its read-ahead, the flusher for a free request slot.
    PageCache,
    /// In the page cache, for a timer or a kick: a writer's throttle
    /// pause, the flusher between runs.
    PageCacheTimer,
    /// An application thread (crate::apps) waits: for its own request's
    /// completion, or to be woken by another of its program's threads.
    AppIo,
}

/// What a thread does with its core once it has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activity {
    /// `left` ns of CPU, then the continuation.
    Burst { left: Nanos, then: Cont },
    /// A completion poll loop until `need` of its requests are posted.
    Spin { need: u32 },
    /// A busy loop that never ends (`kind = "cpu"`).
    Busy,
}

/// Where a thread's program resumes after a CPU burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cont {
    /// Top of the I/O loop: submit or reap.
    Issue,
    /// The generator prepared the requests it is about to submit: submit
    /// them (the loop's checks already ran).
    Prepared,
    /// The kernel paths of the submission call's current plug are done:
    /// the plug is flushed, and its requests reach the device.
    Doorbell,
    /// The submission call goes on with its next requests (after a tag
    /// wait, or after its entry).
    SubmitNext,
    /// A reap call entered the kernel (libaio) or looks at the CQ ring.
    GetEvents,
    /// A libaio waiter woke up and re-checks its event count.
    GetEventsRecheck,
    /// A reap call timed out: hand out whatever is ready.
    GetEventsTimeout,
    /// io_uring: enter the kernel to wait.
    UringWait,
    /// A reap call that returns at once came back: call again, or hand
    /// out what is in (`Program::reap_spins`).
    ReapCallReturned,
    /// The reap call returns: completions are in the application's hand.
    Handed,
    /// A poll loop found its completions: move them to the ready list.
    PollReaped,
    /// Hybrid polling armed its timer: go to sleep.
    HybridArm,
    /// A trace's pacing armed the sleep timer: sleep until its next
    /// request is released.
    RateSleepArmed,
    /// A reap call armed its timeout at the trace's next release: wait
    /// for events or the timeout.
    RateWaitArmed,
    /// Resume a poll loop after a context switch.
    Spin(u32),
    /// Resume a busy loop after a context switch.
    Busy,
    /// A timed pause armed its timer (fio's flow control): sleep this
    /// long, then back to the top of the loop.
    Nap(Nanos),
    /// fio's `usec_sleep` of this long, then the top of the loop (think
    /// time after its spin).
    FioSleep(Nanos),
    /// fio's `nanosleep` armed its timer: sleep this long and the slack.
    FioNanosleep(Nanos),
    /// fio's `nanosleep` returned: measure, and sleep the rest or go on.
    FioSleepReturn,
    /// An offloaded job's main thread prepared a request: hand it off.
    OffloadHandOff,
    /// It entered `FUTEX_WAIT` for a free io_u.
    OffloadWaitFree,
    /// An offload worker entered `FUTEX_WAIT` for a request.
    OffloadSleep,
    /// An SQ thread woke from its idle sleep: its loop goes on.
    SqWoken,
    /// A buffered call or the flusher goes on (crate::host::pagecache).
    PageCache,
    /// An `fsync` or `fdatasync` returns: its latency is taken, then the
    /// top of the I/O loop.
    SyncReturn,
    /// A throttled writer armed its pause timer: sleep until this instant.
    PageCacheSleep(Nanos),
    /// An application thread goes on (crate::apps).
    App,
    /// An application thread armed a sleep timer: sleep until then.
    AppSleep(Nanos),
}

/// A simulated application thread.
#[derive(Debug)]
pub(crate) struct Thread {
    pub job: u32,
    pub core: u32,
    pub prog: Program,
    pub rng: ChaCha8Rng,
    /// Draws for the spread of this thread's CPU costs.
    pub cost_rng: ChaCha8Rng,
    pub run: RunState,
    pub wait: Wait,
    pub act: Activity,
    pub vruntime: u64,
    /// Its CFS task group (`sched_group`), if not the root group.
    pub sched_group: Option<u16>,
    /// Its run time since it started (`sum_exec_runtime`), which its
    /// slices count by. Unlike `counts`, the warm-up's end does not reset
    /// it: reset, a thread running across that end had its slice's run
    /// time wrap below zero, and lost its core at the next tick.
    pub sum_exec: u64,
    /// `sum_exec` when it last got the CPU (`prev_sum_exec_runtime`): its
    /// slice counts the run time since.
    pub prev_sum_exec: u64,
    /// What it counted since the run's window opened (the warm-up's end
    /// resets it): its CPU time, switches and wake-ups.
    pub counts: ThreadCounts,
    /// User-mode work left at the end of the current burst (think time).
    pub user_left: Nanos,
    /// Request slots not in use.
    pub free_slots: Vec<u32>,
    /// Request slots of a buffered thread's `fsync`, which writes back
    /// its file's dirty pages as many requests as they make, whatever the
    /// job's depth (crate::host::pagecache); they take `free_slots`' place
    /// while the call runs.
    pub fsync_slots: Vec<u32>,
    /// Requests of the submission call in progress.
    pub batch: Vec<u32>,
    /// How many of `batch` reached the device so far.
    pub batch_sent: u32,
    /// How many of `batch` the current plug holds (their kernel paths are
    /// the running burst).
    pub plugged: u32,
    /// Its requests are polled (a polling strategy and a job that can poll).
    pub polls: bool,
    /// A poll loop that spins for a tag resumes the submission call.
    pub resume_submit: bool,
    /// Hybrid polling: when the poll loop last began looking at the CQ
    /// after not looking (the hybrid sleep's end, or its skip). An entry
    /// posted before it is first seen then.
    pub polling_since: Nanos,
    /// Size and direction (true: a write) of the request it issued last:
    /// the request a synchronous poller sleeps for.
    pub last_issued: (u64, bool),
    /// Woken from a tag wait: if the tag went to someone else, it sleeps
    /// again at the head of the waiters.
    pub tag_retry: bool,
    /// Completions delivered to the thread, not yet handed to the app.
    pub ready: VecDeque<u32>,
    /// Poll modes: own completions posted in the CQ, not yet reaped.
    pub posted: VecDeque<u32>,
    /// Requests issued and not yet handed to the application.
    pub in_flight: u32,
    /// Requests the generator has prepared (its issue-side user work is
    /// done) that no submission call has taken yet.
    pub prepared: u32,
    /// Events the current reap call hands out.
    pub handing: u32,
    /// `min_nr` of the reap call in progress.
    pub min_nr: u32,
    /// The `min_nr` of each reap call of a wait that began on a full
    /// queue and goes on to the job's `iodepth_low` (fio's
    /// `wait_for_completions`); 0: no such wait.
    pub drain_min: u32,
    /// Rate limiting: the next request may be issued at this instant.
    pub next_issue_at: Nanos,
    /// Supersedes stale sleep/timeout timers.
    pub timer_token: u64,
    /// Already on an IRQ's wake list.
    pub wake_listed: bool,
    /// The pending wake-up comes from a timer, not a completion.
    pub woken_by_timer: bool,
    /// Hybrid polling: this thread's io_uring estimator or a fixed sleep.
    pub estimator: SleepEstimator,
    /// `mode-select`: how the thread waits for its current request.
    pub choice: cint_policy::mode_select::CompletionChoice,
    /// `mode-select`: its CPU's wake-ups from idle when the thread began
    /// its current wait ([`World::power_wakes`]).
    pub choice_wakes: u32,
    /// `mode-select`: no other thread wanted the core when the current
    /// wait's mode was chosen, so the choice read the estimates.
    pub choice_alone: bool,
}

impl Thread {
    /// A runnable thread of `job` (its `n`-th) on `core` that has not run
    /// yet, with no request slots: its random streams are
    /// `(job << 16) | n` and the host's `HOST_THREAD_STREAM_BASE` beside.
    pub(crate) fn fresh(
        seed: u64,
        (job, n): (u32, u32),
        core: u32,
        prog: Program,
        act: Activity,
        estimator: SleepEstimator,
    ) -> Thread {
        let stream = (u64::from(job) << 16) | u64::from(n);
        Thread {
            job,
            core,
            prog,
            rng: stream_rng(seed, stream),
            cost_rng: stream_rng(seed, HOST_THREAD_STREAM_BASE | stream),
            run: RunState::Runnable,
            wait: Wait::Nothing,
            act,
            vruntime: 0,
            sched_group: None,
            sum_exec: 0,
            prev_sum_exec: 0,
            counts: ThreadCounts::default(),
            user_left: 0,
            free_slots: Vec::new(),
            fsync_slots: Vec::new(),
            batch: Vec::new(),
            batch_sent: 0,
            plugged: 0,
            polls: false,
            resume_submit: false,
            polling_since: 0,
            last_issued: (0, false),
            tag_retry: false,
            ready: VecDeque::new(),
            posted: VecDeque::new(),
            in_flight: 0,
            prepared: 0,
            handing: 0,
            min_nr: 1,
            drain_min: 0,
            next_issue_at: 0,
            timer_token: 0,
            wake_listed: false,
            woken_by_timer: false,
            estimator,
            choice: cint_policy::mode_select::CompletionChoice::Poll,
            choice_wakes: 0,
            choice_alone: false,
        }
    }
}

/// One strategy's run: its entry of the result document, the events it
/// took, its notes, and how long it measured (to its duration's end, or
/// to its last job's end under `run_to_end`).
#[derive(Debug)]
pub(crate) struct StrategyRun {
    pub result: StrategyResult,
    pub events: u64,
    pub notes: Vec<String>,
    pub measured: Nanos,
    /// Whether the device was given a write.
    pub wrote: bool,
}

/// The machine running one strategy.
pub(crate) struct World<'a> {
    pub sc: &'a Scenario,
    pub mode: CompletionMode,
    pub events: EventQueue<Event>,
    pub end: Nanos,
    pub measuring: bool,
    pub window_start: Nanos,
    pub costs: HostCosts,
    /// The host's cost spread; `None` for exact costs.
    pub spread: Option<CostSpread>,
    /// The host kernel's `CONFIG_IRQ_TIME_ACCOUNTING`.
    pub irq_time_accounting: bool,
    /// io_uring waiters wake at every completing interrupt, the kernel
    /// posting its events by task work (`host.uring_task_work`).
    pub uring_task_work: bool,
    pub device: Device,
    pub queues: Vec<HwQueue>,
    pub cores: Vec<Core>,
    pub threads: Vec<Thread>,
    pub reqs: Vec<Request>,
    pub jobs: Vec<JobStats>,
    pub counters: Counters,
    /// Linux block-layer hybrid polling statistics (per device).
    pub block_estimator: SleepEstimator,
    pub check: Invariants,
    /// Completion posting times, recorded only by [`crate::completion_gaps`].
    pub gap_log: Option<&'a mut GapLog>,
    /// Per-thread counters of fio's request-shaping options.
    pub shaping: Vec<ThreadShape>,
    /// fio's rate limiter of each rate-limited thread.
    pub pacers: crate::workload::rate::Pacers,
    /// fio's floor on the rate of each thread that has one.
    pub floors: crate::workload::min_rate::Floors,
    /// The threads their job's `max_latency` ended.
    pub latency_bounds: crate::workload::max_latency::LatencyBounds,
    /// Where random jobs' requests land, for the jobs whose offsets
    /// decide something (`crate::workload::offsets`).
    pub offsets: crate::workload::offsets::Offsets,
    /// Start delays and groups run one after another.
    pub groups: Groups,
    /// fio's flow control between jobs.
    pub flows: Flows,
    /// fio's steady-state detection, per job.
    pub steady: Vec<SteadyProbe>,
    /// Submitters a freed tag wakes (reused buffer).
    pub woken: Vec<u32>,
    /// fio's latency-target search, per thread.
    pub searches: Vec<DepthSearch>,
    /// fio's offloaded submission: each pool's main thread and workers.
    pub offload: crate::workload::Offloads,
    /// io_uring's SQ-polled rings (workload/sqpoll.rs).
    pub sqpoll: crate::workload::SqPolls,
    /// The energy model, when the host and the device have power data.
    pub power: Option<Box<crate::host::power::PowerModel>>,
    /// Hardware threads sharing physical cores, when the host has SMT.
    pub smt: Option<crate::host::smt::SmtModel>,
    /// Block-trace replay: each trace job thread's place in its stream.
    pub replay: crate::workload::Replay,
    /// The virtual-machine layer, when the scenario has guests.
    pub virt: Option<Box<crate::virt::Virt>>,
    /// The page caches (the host's, each guest's) and their flushers,
    /// when a job does buffered I/O.
    pub page_cache: Option<Box<crate::host::pagecache::Buffered>>,
    /// Application programs (`[[app]]`).
    pub apps: Option<Box<crate::apps::Apps>>,
    /// CFS task groups, when a thread is in one (`crate::host::group`).
    pub task_groups: Option<Box<crate::host::group::TaskGroups>>,
    /// The `mode-select` strategy's selector (docs/ALGORITHMS.md section 10).
    pub selector: Option<cint_policy::mode_select::ModeSelect>,
}

impl<'a> World<'a> {
    /// Builds the machine for `strategy`; every thread starts runnable at 0.
    pub(crate) fn new(sc: &'a Scenario, strategy: &Strategy) -> Result<World<'a>, SimError> {
        let cores_n = sc.host.cores.max(1) as usize;
        let queues_n = sc.device.queue_pairs(sc.host.cores);
        let used = used_queues(sc, queues_n);
        refuse_unmodelled(sc, strategy)?;
        let mut queues = build_queues(sc, strategy, &used)?;
        let device = Device::new(&sc.device, sc.seed)?;
        let mut cores: Vec<Core> = (0..cores_n)
            .map(|c| Core::new(stream_rng(sc.seed, HOST_CORE_STREAM_BASE + c as u64)))
            .collect();
        let mut threads = Vec::new();
        let mut reqs = Vec::new();
        let mut in_flight_per_queue = vec![0u64; queues_n];
        let mut jobs = Vec::with_capacity(sc.jobs.len());
        for (j, job) in sc.jobs.iter().enumerate() {
            jobs.push(JobStats::new(&job.name));
            add_job_threads(
                sc,
                strategy.mode,
                j,
                &mut JobBuild {
                    cores: &mut cores,
                    threads: &mut threads,
                    reqs: &mut reqs,
                    in_flight_per_queue: &mut in_flight_per_queue,
                },
            )?;
        }
        // Every thread starts from the same estimator, a value each
        // keeps and updates as its own.
        let estimator = sleep_estimator(strategy.mode);
        let apps = crate::apps::Apps::build(
            sc,
            strategy,
            &mut threads,
            &mut reqs,
            &mut cores,
            queues_n,
            estimator,
        );
        let flushers = crate::host::pagecache::add_flushers(
            sc,
            &mut threads,
            &mut reqs,
            &mut cores,
            queues_n,
            estimator,
        )?;
        reserve_handler_buffers(&mut cores, &threads, &in_flight_per_queue, queues_n);
        let end = sc.warmup.saturating_add(sc.duration);
        let capacity = 64 + 4 * reqs.len() + 4 * threads.len();
        let shaping = vec![ThreadShape::default(); threads.len()];
        let reqs_n = reqs.len();
        let threads_jobs: Vec<u32> = threads.iter().map(|t| t.job).collect();
        let offload = crate::workload::Offloads::new(&threads);
        let sqpoll = crate::workload::SqPolls::new(&threads);
        let placement: Vec<(u32, usize)> = threads
            .iter()
            .map(|t| (t.job, t.core as usize % queues_n))
            .collect();
        let virt =
            crate::virt::Virt::new(sc, strategy, queues_n, &placement, reqs.len())?.map(Box::new);
        if let Some(v) = &virt {
            route_guest_queues(v, &mut queues);
        }
        let threads_cores: Vec<u32> = threads.iter().map(|t| t.core).collect();
        let pacers = crate::workload::rate::Pacers::new(sc, &threads);
        let floors = crate::workload::min_rate::Floors::new(sc, &threads);
        let searches = threads
            .iter()
            .map(|t| DepthSearch::new(t.prog.iodepth))
            .collect();
        let costs = HostCosts::from_profile(&sc.host)?;
        let selector = crate::workload::select::build(sc, strategy)?;
        let mut world = World {
            sc,
            mode: strategy.mode,
            events: EventQueue::with_capacity(capacity),
            end,
            measuring: sc.warmup == 0,
            window_start: 0,
            costs,
            spread: CostSpread::new(sc.host.cost_spread),
            irq_time_accounting: sc.host.irq_time_accounting,
            uring_task_work: sc.host.uring_task_work,
            device,
            queues,
            cores,
            threads,
            reqs,
            jobs,
            counters: Counters::default(),
            block_estimator: estimator,
            check: Invariants::default(),
            gap_log: None,
            shaping,
            pacers,
            floors,
            latency_bounds: Default::default(),
            offsets: crate::workload::offsets::Offsets::new(sc, &threads_jobs),
            groups: Groups::new(sc),
            flows: Flows::new(sc, &threads_jobs),
            steady: sc
                .jobs
                .iter()
                .map(|job| SteadyProbe::new(job.io().and_then(|io| io.shape.steady)))
                .collect(),
            woken: Vec::new(),
            searches,
            offload,
            sqpoll,
            power: crate::host::power::PowerModel::new(sc, &threads_cores),
            smt: crate::host::smt::SmtModel::new(&sc.host)?,
            replay: crate::workload::Replay::new(sc, &threads_jobs, reqs_n),
            virt,
            page_cache: crate::host::pagecache::Buffered::new(sc, &threads_jobs, &flushers),
            apps,
            task_groups: crate::host::group::TaskGroups::new(sc, cores_n),
            selector,
        };
        world.stage_jobs();
        world.enqueue_grouped();
        Ok(world)
    }

    /// The current simulated time.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.events.now()
    }

    /// Runs to the end of the measured window and summarises it.
    pub(crate) fn run(mut self, strategy: &Strategy) -> Result<StrategyRun, SimError> {
        if self.sc.warmup > 0 {
            self.events.schedule(self.sc.warmup, Event::WarmupEnd);
        }
        self.virt_start();
        for c in 0..self.cores.len() {
            self.dispatch(c);
        }
        // Without the energy model there is no polling limit to offer:
        // the queue's own pop, with nothing to compare beside it.
        if self.power.is_some() {
            self.run_events::<true>();
        } else {
            self.run_events::<false>();
        }
        self.note_time_violation();
        self.events.advance_to(self.end);
        self.settle_all();
        self.check_core_time();
        self.check_request_accounting();
        self.power_finish();
        self.check_page_cache();
        if let Some(msg) = self.check.violation() {
            return Err(SimError::internal(format!(
                "{INVARIANT_VIOLATED} ({}, strategy '{}'): {msg}",
                self.sc.name, strategy.name
            )));
        }
        let events = self.events.processed();
        let mut notes = self.held_at_end(strategy);
        notes.extend(self.page_cache_notes(strategy));
        notes.extend(self.app_notes(strategy));
        Ok(StrategyRun {
            result: self.summarise(strategy),
            events,
            notes,
            measured: self.now().saturating_sub(self.window_start),
            wrote: self.device.wrote(),
        })
    }

    /// The event loop to the end of the window or the first broken
    /// invariant: the queue's events and the energy model's polling
    /// limits, which wait outside the queue.
    fn run_events<const POWER: bool>(&mut self) {
        let mut last = 0;
        loop {
            let next = if POWER {
                let (key, limit) = self.next_poll_limit();
                self.events.pop_before_or(self.end, key, limit)
            } else {
                self.events.pop_before(self.end)
            };
            let Some((at, event)) = next else {
                break;
            };
            if at < last {
                self.check
                    .fail(format!("time went back from {last} to {at}"));
            }
            last = at;
            self.handle(event);
            self.note_time_violation();
            if self.check.failed() {
                break;
            }
        }
    }

    /// Runs one event.
    #[inline(always)]
    fn handle(&mut self, event: Event) {
        match event {
            Event::DataIn { req } => self.on_data_in(req),
            Event::UnitDone { req } => self.on_unit_done(req),
            Event::DeviceDone { req } => self.on_device_done(req),
            Event::PolicyTimer { queue } => self.on_policy_timer(queue as usize),
            Event::IrqArrive { queue, irq } => self.on_irq_arrive(queue as usize, irq),
            Event::CoreDone { core, token } => self.on_core_done(core as usize, token),
            Event::ThreadTimer { thread, token } => self.on_thread_timer(thread, token),
            Event::SliceCheck { core, token } => self.on_slice_check(core as usize, token),
            Event::WarmupEnd => self.on_warmup_end(),
            Event::Wake { thread } => self.wake(thread as usize, None),
            Event::CpuJobEnd { thread } => self.on_cpu_job_end(thread as usize),
            Event::JobWindowOpens { job } => self.on_job_window_opens(job as usize),
            Event::Virt { guest, what } => self.on_virt_event(guest as usize, what),
            Event::PollLimit { cpu } => self.on_poll_limit(cpu as usize),
        }
    }

    /// Completions the device posted that no interrupt delivered by the
    /// end of the run, per queue: how many and since when, where the
    /// oldest waited at least 1% of the measured window (1 ms at least). Holding them is
    /// legitimate policy behaviour (QD1 with `thr` above the requests in
    /// flight and a long `delta`), but the threads waiting on them made no
    /// progress meanwhile, so the result must say so rather than show
    /// bare zeros. A queue whose policy has no deadline left would hold
    /// them for ever: that is the liveness report.
    fn held_at_end(&self, strategy: &Strategy) -> Vec<String> {
        let now = self.now();
        let mut held: Vec<(u64, Nanos)> = vec![(0, Nanos::MAX); self.queues.len()];
        // Polled completions wait for their own thread's poll loop, not for
        // the queue's policy: they have a note of their own.
        let mut polled = (0u64, Nanos::MAX);
        // Guests' completions wait for their hypervisor's mechanisms,
        // which have notes of their own (crate::virt).
        let guests = |q: u32| {
            self.virt
                .as_ref()
                .is_some_and(|v| v.guest_of_queue(q as usize).is_some())
        };
        for r in self
            .reqs
            .iter()
            .filter(|r| r.state == ReqState::Posted && !guests(r.queue))
        {
            let q = if r.polled {
                &mut polled
            } else {
                &mut held[r.queue as usize]
            };
            q.0 += 1;
            q.1 = q.1.min(r.posted_at);
        }
        // Coalescing always holds a few completions for a moment; only a
        // hold that is long against the run is worth a word.
        let window = now.saturating_sub(self.window_start);
        let notable = (window / 100).max(1_000_000);
        let mut notes = self.idle_jobs(strategy);
        notes.extend(self.short_window_jobs(strategy));
        notes.extend(self.unpolled_jobs(strategy));
        notes.extend(self.depth_search_notes(&strategy.name));
        notes.extend(self.steady_notes(&strategy.name));
        notes.extend(self.floor_notes(&strategy.name));
        notes.extend(self.latency_bound_notes(&strategy.name));
        notes.extend(self.group_notes(&strategy.name));
        notes.extend(self.virt_held_notes(&strategy.name, notable));
        if polled.0 > 0 && now.saturating_sub(polled.1) >= notable {
            notes.push(format!(
                "strategy '{}': {} polled completion{} waited for their threads' poll loops at \
                 the end of the run, the oldest for {}: a poll loop reaps only its own \
                 requests, and only while its thread has the core",
                strategy.name,
                polled.0,
                if polled.0 == 1 { "" } else { "s" },
                format_ms(now.saturating_sub(polled.1))
            ));
        }
        notes.extend(
            held.iter()
                .enumerate()
                .filter(|(_, &(n, since))| n > 0 && now.saturating_sub(since) >= notable)
                .map(|(q, &(n, since))| {
                    let waited = format_ms(now.saturating_sub(since));
                    let next = match self.queues[q]
                        .policy
                        .as_ref()
                        .and_then(|p| p.next_deadline())
                    {
                        Some(at) => format!(
                            "its policy's next deadline is {} after the end",
                            format_ms(at.saturating_sub(now))
                        ),
                        None => "its policy has no deadline left, so no future event could \
                             deliver them (the run stopped making progress there)"
                            .to_string(),
                    };
                    format!(
                        "strategy '{}': queue {q} held {n} posted completion{} undelivered at the \
                     end of the run, the oldest for {waited}; the threads waiting on them made \
                     no progress meanwhile; {next}",
                        strategy.name,
                        if n == 1 { "" } else { "s" },
                    )
                }),
        );
        notes
    }

    /// Under a polling strategy, the I/O jobs whose requests cannot be
    /// polled and completed by interrupts instead: the table's row for
    /// them is an interrupt row, and says so.
    fn unpolled_jobs(&self, strategy: &Strategy) -> Vec<String> {
        if matches!(strategy.mode, CompletionMode::Interrupt(_)) {
            return Vec::new();
        }
        self.sc
            .jobs
            .iter()
            .filter(|job| matches!(job.work, Work::Io(_)) && !job_polls(strategy.mode, job))
            .map(|job| {
                let why = match &job.work {
                    Work::Io(io) if io.hipri && !io.direct => {
                        "hipri applies to direct I/O only: Linux ignores RWF_HIPRI on a buffered \
                         call, and io_uring refuses IORING_SETUP_IOPOLL without O_DIRECT"
                    }
                    _ => {
                        "only pvsync2 and io_uring jobs with hipri = true can: RWF_HIPRI, \
                         IORING_SETUP_IOPOLL"
                    }
                };
                format!(
                    "strategy '{}': job '{}' does not poll ({why}); its requests completed by \
                     interrupts under kind \"{}\"",
                    strategy.name,
                    job.name,
                    strategy.interrupts.kind()
                )
            })
            .collect()
    }

    /// Whether job `j` is an I/O job measured to the run's end: a job that
    /// never started, or ended before its window, has its own note
    /// (crate::workload::groups) instead of the notes on what it measured.
    fn measured_io_job(&self, j: usize) -> bool {
        matches!(self.sc.jobs[j].work, Work::Io(_))
            && self.groups.started(j)
            && !self.groups.ended(j)
    }

    /// I/O jobs whose window is short against their slowest requests
    /// ([`cint_scenario::unfinished`]): the requests still in flight at
    /// the window's end, each one's wait counted to it.
    fn short_window_jobs(&self, strategy: &Strategy) -> Vec<String> {
        let windows: Vec<(Nanos, Nanos)> =
            (0..self.jobs.len()).map(|j| self.job_window(j)).collect();
        let mut waiting = vec![Unfinished::default(); self.jobs.len()];
        for r in self.reqs.iter().filter(|r| r.state != ReqState::Free) {
            let j = self.threads[r.thread as usize].job as usize;
            // An application's threads and a guest kernel's have
            // operations, or no job of their own.
            let (Some(&(from, to)), Some(w)) = (windows.get(j), waiting.get_mut(j)) else {
                continue;
            };
            if r.issued < to && self.measured_io_job(j) {
                w.add(to - r.issued.max(from));
            }
        }
        self.jobs
            .iter()
            .zip(&waiting)
            .filter_map(|(stats, w)| {
                w.note(
                    &strategy.name,
                    &stats.name,
                    stats.ios,
                    stats.hist.histogram().mean(),
                )
            })
            .collect()
    }

    /// I/O jobs that completed nothing in the measured window, each with
    /// where its oldest request is, so a zero in the table comes with its
    /// mechanism (a device queue too long for the window, a starved core,
    /// a held completion) rather than alone.
    fn idle_jobs(&self, strategy: &Strategy) -> Vec<String> {
        let now = self.now();
        let mut notes = Vec::new();
        for (j, stats) in self.jobs.iter().enumerate() {
            if stats.ios > 0 || !self.measured_io_job(j) {
                continue;
            }
            let oldest = self
                .reqs
                .iter()
                .filter(|r| r.state != ReqState::Free)
                .filter(|r| self.threads[r.thread as usize].job as usize == j)
                .min_by_key(|r| r.issued);
            let why = match oldest {
                None => format!(
                    "its threads issued no request that could complete: core {} was busy \
                     with other work",
                    self.sc.thread_core(&self.sc.jobs[j], 0)
                ),
                Some(r) => {
                    let age = format_ms(now.saturating_sub(r.issued));
                    let place = match r.state {
                        ReqState::InDevice => format!(
                            "is still in the device ({} requests of all jobs wait for one of \
                             its {} parallel units)",
                            self.device.fifo.len(),
                            self.sc.device.parallel_units
                        ),
                        ReqState::Posted => {
                            "is posted, waiting for an interrupt the policy has not raised"
                                .to_string()
                        }
                        ReqState::Submitting
                            if self.threads[r.thread as usize].wait == Wait::Tag =>
                        {
                            let q = &self.queues[r.queue as usize];
                            format!(
                                "waits in its submission call for a driver tag of device queue \
                                 {} ({} threads asleep for one)",
                                r.queue,
                                q.tags[usize::from(r.polled)].waiting()
                            )
                        }
                        ReqState::Submitting => {
                            "is still in its thread's submission path".to_string()
                        }
                        ReqState::Delivered | ReqState::Free => {
                            let th = &self.threads[r.thread as usize];
                            if th.wait == Wait::Tag {
                                "was delivered, but its thread sleeps for a driver tag in a \
                                 submission call"
                                    .to_string()
                            } else if !th.free_slots.is_empty()
                                && !th.prog.engine.is_sync()
                                && self.flow_held(r.thread as usize)
                            {
                                "was delivered, but its thread is still filling its queue (fio \
                                 reaps once all of iodepth is in flight) and its flow holds it \
                                 back: it is ahead of its share, and without flow_sleep fio's \
                                 loop looks again without reaping, until the flow's other \
                                 threads have issued theirs"
                                    .to_string()
                            } else if !th.free_slots.is_empty() && !th.prog.engine.is_sync() {
                                "was delivered, but its thread is still filling its queue (fio \
                                 reaps once all of iodepth is in flight)"
                                    .to_string()
                            } else {
                                "was delivered but its thread has not run to take it".to_string()
                            }
                        }
                    };
                    format!("its oldest request, issued {age} before the end, {place}")
                }
            };
            notes.push(format!(
                "strategy '{}': job '{}' completed no I/O in the measured window: {why}",
                strategy.name, stats.name
            ));
        }
        notes
    }

    /// Moves a time violation of the event queue into the run's invariants.
    fn note_time_violation(&mut self) {
        if let Some(msg) = self.events.violation() {
            if !self.check.failed() {
                self.check.fail(msg.to_string());
            }
        }
    }

    fn on_warmup_end(&mut self) {
        self.settle_all();
        self.check_core_time();
        self.power_restart();
        let now = self.now();
        self.window_start = now;
        self.device.restart_account(now);
        self.measuring = true;
        self.counters = Counters::default();
        for core in &mut self.cores {
            core.reset_counters();
        }
        self.keep_counts_before_run_window();
        for t in &mut self.threads {
            t.counts = ThreadCounts::default();
        }
        for j in &mut self.jobs {
            j.reset();
        }
        self.trace_reset();
        if let Some(v) = self.virt.as_mut() {
            v.counters = Default::default();
        }
        self.app_reset();
    }

    /// Brings every core's time accounting up to now.
    fn settle_all(&mut self) {
        for c in 0..self.cores.len() {
            self.charge(c);
            let now = self.now();
            self.cores[c].settle_idle(now);
        }
    }

    fn check_core_time(&mut self) {
        if let Some(msg) = self.device.capability_violation() {
            self.check.fail(msg);
        }
        let elapsed = self.now() - self.window_start;
        for (c, core) in self.cores.iter().enumerate() {
            let total = core.irq_ns + core.thread_ns + core.idle_ns;
            if total != elapsed {
                self.check.fail(format!(
                    "core {c}: busy {} + idle {} = {total} ns, elapsed {elapsed} ns",
                    core.irq_ns + core.thread_ns,
                    core.idle_ns
                ));
            }
        }
        let per_thread: u64 = self.threads.iter().map(|t| t.counts.cpu_ns).sum();
        // Threads own their segments' time, and without interrupt time
        // accounting also the handlers' time that preempted them.
        let per_core: u64 = self
            .cores
            .iter()
            .map(|c| c.thread_ns + c.irq_charged_ns)
            .sum();
        if per_thread != per_core {
            self.check.fail(format!(
                "thread CPU time {per_thread} ns differs from cores' thread time {per_core} ns \
                 (interrupt time charged to threads included)"
            ));
        }
    }

    fn check_request_accounting(&mut self) {
        let outstanding = self
            .reqs
            .iter()
            .filter(|r| r.state != ReqState::Free)
            .count() as u64;
        let in_flight: u64 = self.threads.iter().map(|t| u64::from(t.in_flight)).sum();
        if outstanding != in_flight {
            self.check.fail(format!(
                "{outstanding} request slots in use but threads count {in_flight} in flight"
            ));
        }
        self.check.check_totals(outstanding);
        // Every tag in use belongs to a request at the device or in a
        // plug about to be flushed: none leaks, none is shared.
        let tags: u64 = self
            .queues
            .iter()
            .flat_map(|q| q.tags.iter())
            .map(|p| u64::from(p.in_use()))
            .sum();
        let holders = self
            .reqs
            .iter()
            .filter(|r| matches!(r.state, ReqState::InDevice | ReqState::Posted))
            .count() as u64
            + self
                .threads
                .iter()
                .map(|t| u64::from(t.plugged))
                .sum::<u64>();
        if tags != holders {
            self.check.fail(format!(
                "{tags} driver tags in use, but {holders} requests at the device or in a plug"
            ));
        }
        // A thread asleep for a tag when no tag is in use and none of the
        // woken is still to try again would sleep for ever: no completion
        // is left to free one (the pool once stranded a woken thread so).
        for (q, queue) in self.queues.iter().enumerate() {
            for pool in &queue.tags {
                if pool.strands_a_waiter() {
                    self.check.fail(format!(
                        "{} threads asleep for a driver tag of device queue {q}, whose tags are \
                         all free",
                        pool.waiting()
                    ));
                }
            }
        }
    }
}

/// Which of the device's `queues_n` queues something submits to: an I/O
/// job's threads, the page cache's flushers or an application's threads
/// (the others get no completion queue).
fn used_queues(sc: &Scenario, queues_n: usize) -> Vec<bool> {
    let mut used = vec![false; queues_n];
    for job in &sc.jobs {
        if matches!(job.work, Work::Io(_)) {
            for n in 0..job.numjobs {
                used[crate::workload::submitting_core(sc, job, n) as usize % queues_n] = true;
            }
        }
    }
    for q in crate::host::pagecache::flusher_queues(sc, queues_n) {
        used[q] = true;
    }
    for q in crate::apps::queues_used(sc, queues_n) {
        used[q] = true;
    }
    used
}

/// The device's queues, each with its own instance of the strategy's
/// interrupt policy and its own random stream.
fn build_queues(
    sc: &Scenario,
    strategy: &Strategy,
    used: &[bool],
) -> Result<Vec<HwQueue>, SimError> {
    // Under a polling strategy, the requests it does not poll complete on
    // the interrupt queue under its named policy.
    let cfg = match strategy.mode {
        CompletionMode::Interrupt(cfg) => cfg,
        _ => strategy.interrupts,
    };
    let mut queues = Vec::with_capacity(used.len());
    for (q, &used) in used.iter().enumerate() {
        let policy = cfg
            .build(0)
            .map_err(|e| crate::strategy_refused(strategy, e))?;
        let rng = stream_rng(sc.seed, crate::engine::DEVICE_STREAM_BASE + q as u64);
        queues.push(HwQueue::new(
            Some(policy),
            q as u32,
            rng,
            used,
            sc.device.queue_depth,
        ));
    }
    Ok(queues)
}

/// How a thread estimates its sleep before a hybrid poll under `mode`.
fn sleep_estimator(mode: CompletionMode) -> SleepEstimator {
    match mode {
        CompletionMode::HybridPoll(HybridSleep::Fixed(ns)) => SleepEstimator::Fixed(ns),
        CompletionMode::HybridPoll(HybridSleep::Min) => SleepEstimator::uring_hybrid(),
        _ => SleepEstimator::block_adaptive(),
    }
}

/// What [`add_job_threads`] adds to: the cores' run queues, the threads,
/// the request slots, and the requests each queue may have in flight.
struct JobBuild<'b> {
    cores: &'b mut [Core],
    threads: &'b mut Vec<Thread>,
    reqs: &'b mut Vec<Request>,
    in_flight_per_queue: &'b mut [u64],
}

/// Adds job `j`'s threads, each runnable on its core with a slot per
/// request it may have in flight.
fn add_job_threads(
    sc: &Scenario,
    mode: CompletionMode,
    j: usize,
    to: &mut JobBuild<'_>,
) -> Result<(), SimError> {
    let job = &sc.jobs[j];
    let (cores_n, queues_n) = (to.cores.len(), to.in_flight_per_queue.len());
    if let Some(cpu) = job
        .cpus
        .iter()
        .chain([&job.cpu])
        .map(|&c| match job.guest {
            // A vCPU's physical core (the loader checked both).
            Some(_) => sc.thread_core(job, c),
            None => c,
        })
        .find(|&c| c as usize >= cores_n)
    {
        return Err(SimError::input_at(
            format!("job.{}.cpu", job.name),
            format!("cpu {cpu} is beyond the host's {cores_n} cores"),
        ));
    }
    let prog = Program::from_job(job)?;
    let depth = match &job.work {
        Work::Io(io) => io.iodepth.max(1),
        Work::Cpu => 0,
    };
    let polls = job_polls(mode, job);
    let workers = crate::workload::offload_workers(job);
    // An offloaded job's threads hand their requests to workers, which
    // hold the slots.
    let depth = if workers > 0 { 0 } else { depth };
    for n in 0..job.numjobs {
        // fio's cpus_allowed_policy=split: thread n on the n-th core of
        // the list, round robin; else every thread on `cpu`.
        let core = sc.thread_core(job, n) as usize;
        // An SQ-polled ring's requests go to its SQ thread's queue.
        let queue = crate::workload::submitting_core(sc, job, n) as usize % queues_n;
        to.in_flight_per_queue[queue] += u64::from(depth.max(workers));
        let tid = to.threads.len() as u32;
        let mut free_slots = Vec::with_capacity(depth as usize);
        for _ in 0..depth {
            free_slots.push(to.reqs.len() as u32);
            to.reqs.push(Request::free(tid, queue as u32, polls));
        }
        // Slots are taken from the end; keep ids ascending in use.
        free_slots.reverse();
        let act = match job.work {
            Work::Io(_) => Activity::Burst {
                left: 0,
                then: Cont::Issue,
            },
            Work::Cpu => Activity::Busy,
        };
        to.threads.push(Thread {
            sched_group: sc.sched_groups.of_job(j).map(|g| g as u16),
            free_slots,
            batch: Vec::with_capacity(depth as usize),
            polls,
            ready: VecDeque::with_capacity(depth as usize),
            posted: VecDeque::with_capacity(depth as usize),
            ..Thread::fresh(
                sc.seed,
                (j as u32, n),
                core as u32,
                prog,
                act,
                sleep_estimator(mode),
            )
        });
        to.cores[core].rq.push(tid);
        for w in 0..workers {
            add_offload_worker(sc, mode, (j, n, w), core, to);
        }
        if let Work::Io(IoJob {
            sqpoll: Some(sq), ..
        }) = &job.work
        {
            let sq_core = sq.cpu.map_or(core, |c| c as usize);
            add_sq_thread(sc, mode, (j, n), sq_core, to);
        }
    }
    Ok(())
}

/// Worker `w` of thread `n` of job `j`, an offloaded job (fio's
/// rate-submit.c): a thread of the job on its core with one request slot,
/// created by the job's thread, so after it in the thread list, where
/// [`crate::workload::Offloads::new`] finds it. Its draws (the spread of
/// its costs) come from a stream of its own.
fn add_offload_worker(
    sc: &Scenario,
    mode: CompletionMode,
    (j, n, w): (usize, u32, u32),
    core: usize,
    to: &mut JobBuild<'_>,
) {
    let job = &sc.jobs[j];
    let polls = job_polls(mode, job);
    let queue = core % to.in_flight_per_queue.len();
    let tid = to.threads.len() as u32;
    let slot = to.reqs.len() as u32;
    to.reqs.push(Request::free(tid, queue as u32, polls));
    let Some(dispatcher) = to.threads.iter().rev().find(|t| t.job == j as u32) else {
        return;
    };
    let prog = dispatcher.prog.offload_worker();
    let stream =
        OFFLOAD_WORKER_STREAM_BASE | ((j as u64) << 29) | (u64::from(n) << 17) | u64::from(w);
    push_helper_thread(sc, mode, (j, n), (core, prog, stream), vec![slot], to);
}

/// The SQ thread of thread `n` of job `j`, whose ring is SQ-polled
/// (workload/sqpoll.rs): a kernel thread on `core`, after the ring's
/// thread in the thread list, where [`crate::workload::SqPolls::new`]
/// finds it. It holds no request slot (the ring's thread does), and its
/// draws come from a stream of its own.
fn add_sq_thread(
    sc: &Scenario,
    mode: CompletionMode,
    (j, n): (usize, u32),
    core: usize,
    to: &mut JobBuild<'_>,
) {
    let Some(submitter) = to.threads.iter().rev().find(|t| t.job == j as u32) else {
        return;
    };
    let prog = submitter.prog.sq_thread();
    let stream = SQ_THREAD_STREAM_BASE | ((j as u64) << 17) | u64::from(n);
    push_helper_thread(sc, mode, (j, n), (core, prog, stream), Vec::new(), to);
}

/// A helper of thread `n` of job `j` (an offload worker, an SQ thread):
/// runnable on `core` with its program, its request `slots` (and room
/// for as many in each of its lists), and its draws from `stream`, a
/// stream of its own apart from the jobs' threads.
fn push_helper_thread(
    sc: &Scenario,
    mode: CompletionMode,
    (j, n): (usize, u32),
    (core, prog, stream): (usize, Program, u64),
    slots: Vec<u32>,
    to: &mut JobBuild<'_>,
) {
    let depth = slots.len();
    let tid = to.threads.len() as u32;
    let mut th = Thread {
        sched_group: sc.sched_groups.of_job(j).map(|g| g as u16),
        free_slots: slots,
        batch: Vec::with_capacity(depth),
        polls: job_polls(mode, &sc.jobs[j]),
        ready: VecDeque::with_capacity(depth),
        posted: VecDeque::with_capacity(depth),
        ..Thread::fresh(
            sc.seed,
            (j as u32, n),
            core as u32,
            prog,
            Activity::Burst {
                left: 0,
                then: Cont::Issue,
            },
            sleep_estimator(mode),
        )
    };
    th.rng = stream_rng(sc.seed, stream);
    th.cost_rng = stream_rng(sc.seed, HOST_THREAD_STREAM_BASE | stream);
    to.threads.push(th);
    to.cores[core].rq.push(tid);
}

/// Streams of SQ threads, `SQ_THREAD_STREAM_BASE | (job << 17) | thread`,
/// apart from the jobs' own threads and the offload workers'.
const SQ_THREAD_STREAM_BASE: u64 = 1 << 47;

/// Streams of offload workers, `OFFLOAD_WORKER_STREAM_BASE | (job << 29)
/// | (thread << 17) | worker` (at most 4 096 threads and 65 536 workers a
/// job), apart from the jobs' own threads.
const OFFLOAD_WORKER_STREAM_BASE: u64 = 1 << 46;

/// Sizes the handlers' buffers to what a core's handlers can see, so
/// that a host of many cores does not reserve for every thread on every
/// core, and the steady state still never grows them: a core's timer
/// handler wakes its own threads, and its device handler (the core of
/// queue `c`) the threads submitting to that queue.
fn reserve_handler_buffers(
    cores: &mut [Core],
    threads: &[Thread],
    in_flight_per_queue: &[u64],
    queues_n: usize,
) {
    let mut wakeable = vec![0usize; cores.len()];
    for th in threads {
        wakeable[th.core as usize] += 1;
        wakeable[th.core as usize % queues_n] += 1;
    }
    for (c, core) in cores.iter_mut().enumerate() {
        let queue_reqs = in_flight_per_queue.get(c).map_or(0, |&n| n as usize);
        core.reaped.reserve(queue_reqs.min(crate::device::CQ_SLOTS));
        core.wake_list.reserve(wakeable[c]);
    }
}

/// A guest's device queue is the physical adapter's: it interrupts the
/// hypervisor's core at every completion, and the guest's own policy
/// decides its virtual interrupts.
fn route_guest_queues(virt: &crate::virt::Virt, queues: &mut [HwQueue]) {
    for (q, queue) in queues.iter_mut().enumerate() {
        if let Some(g) = virt.guest_of_queue(q) {
            queue.core = virt.guests[g].vmk_core;
            queue.policy = Some(cint_policy::AnyPolicy::None(
                cint_policy::none::NoCoalescing::new(),
            ));
        }
    }
}

/// What the simulator cannot run whatever the jobs: `cint check` refuses
/// it with the same line as `cint sim` (one rule for what runs).
fn refuse_unmodelled(sc: &Scenario, strategy: &Strategy) -> Result<(), SimError> {
    if sc.virt.hypervisor.is_some() {
        // The host's threads beside guests are vCPUs and monitors, whose
        // scheduling the virtual-machine layer owns (docs/VIRT.md).
        if let Some(j) = (0..sc.jobs.len()).find(|&j| sc.sched_groups.of_job(j).is_some()) {
            return Err(SimError::input_at(
                format!("job.{}.sched_group", sc.jobs[j].name),
                "task groups beside a [hypervisor] are not modelled: the host's CFS there \
                 schedules vCPUs, whose groups the virtual-machine layer does not have",
            ));
        }
        return Ok(());
    }
    // vic-sched decides from the guest's run state and slice end, which
    // only the virtual-machine layer (docs/VIRT.md) gives; on bare metal,
    // run silently, it would be vic under another name.
    let vic_sched = |mode| matches!(mode, CompletionMode::Interrupt(PolicyConfig::VicSched(_)));
    if vic_sched(strategy.mode) || matches!(strategy.interrupts, PolicyConfig::VicSched(_)) {
        return Err(SimError::input_at(
            format!("strategy.{}.kind", strategy.name),
            "\"vic-sched\" needs a guest's scheduling state (run state, slice end), which \
             only a [hypervisor] with guests gives it; use \"vic\" on bare metal, or embed \
             vic-sched through cint-policy (Rust or C ABI) where the guest's schedule is known",
        ));
    }
    Ok(())
}

/// Whether `job`'s requests are polled under `mode`: Linux polls per
/// request, only those marked `RWF_HIPRI` (pvsync2) or submitted to an
/// io_uring set up with `IORING_SETUP_IOPOLL` (fio's `hipri` on either).
pub(crate) fn job_polls(mode: CompletionMode, job: &cint_scenario::Job) -> bool {
    let polling = matches!(
        mode,
        CompletionMode::Poll | CompletionMode::HybridPoll(_) | CompletionMode::ModeSelect
    );
    polling
        && matches!(&job.work, Work::Io(io) if io.hipri && io.direct
            && matches!(io.engine, cint_scenario::Engine::Pvsync2 | cint_scenario::Engine::IoUring))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_scheduled_in_the_past_fails_the_run() {
        let text = "name = \"t\"\nduration = \"1ms\"\n\
                    [[strategy]]\nname = \"n\"\nkind = \"none\"\n\
                    [[job]]\nname = \"a\"\n";
        let sc = cint_scenario::load_str(text, "t.toml", &[]).expect("valid");
        let strategy = &sc.strategies[0];
        let mut w = World::new(&sc, strategy).expect("builds");
        w.events.schedule(500, Event::WarmupEnd);
        assert!(w.events.pop_before(1_000).is_some());
        // A stale instant, as a bug computing a deadline from an old
        // time would produce.
        w.events.schedule(100, Event::WarmupEnd);
        let err = w.run(strategy).expect_err("the violation is reported");
        assert!(
            err.message.contains("invariant violated") && err.message.contains("backwards"),
            "{err}"
        );
        assert!(err.is_internal(), "a violated invariant is a simulator bug");
    }
}
