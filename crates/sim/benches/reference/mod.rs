//! The reference of issue #20: a hand-specialised event loop for one
//! shape of scenario, the shipped `async-batch` (one core, one libaio
//! thread, batches of at most 16 random reads, one interrupt-driven
//! queue), doing the same work as `cint-sim` with everything else taken
//! out:
//!
//! - the device queue's ChaCha8 stream and the same Box-Muller draw per
//!   media access, on `parallel_units` units with a FIFO in front and one
//!   controller pipe;
//! - the queue's `AnyPolicy`, consulted and re-armed at the same points;
//! - the thread's bursts (user-side preparation, the `io_submit` call with
//!   its plug and doorbell, `io_getevents` with its sleep, recheck and
//!   hand-out, the generator's per-completion work), with interrupts that
//!   preempt a burst and resume it afterwards, the context switch back to
//!   the thread after it slept, and the core's time split into thread,
//!   interrupt time;
//! - cint-report's histograms: the job's HdrHistogram and fio's three
//!   (slat, clat, lat) for the read direction.
//!
//! What it leaves out is what this shape never uses: a scheduler with
//! competitors, tag waits, overflowing completion queues, writes, polling,
//! rate limits, fio's shaping and flow options, warm-up, groups, the
//! run-time invariant checks. Its event queue is an unsorted array of the
//! few pending events, the minimum found by a
//! linear scan, keyed like the simulator's by (time, insertion order), so
//! that ties break the same way.
//!
//! Its counters must equal the simulator's exactly (I/Os, interrupts,
//! events, CPU time, latency): `Outcome::matches` checks that, and the
//! benchmark refuses to time a loop that disagrees.

use std::collections::VecDeque;

use cint_policy::hints::{self, BatchPosition, IoCall, IoContext, RwFlags};
use cint_policy::reap::CompletionQueue;
use cint_policy::{AnyPolicy, Hint, Irq, Nanos, Policy, Seq};
use cint_report::{FioDirection, FioHistogram, LatencyHistogram, RunResult};
use cint_scenario::profiles::JitterKind;
use cint_scenario::{CompletionMode, Engine, IoShape, Rw, Scenario, Work};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// None of fio's shaping, schedule or flow options that act on a run.
fn no_shaping(s: &IoShape) -> bool {
    s.bssplit.is_empty()
        && s.bsrange.is_none()
        && s.rate.is_none()
        && !s.barrier_last
        && s.thinktime == 0
        && s.number_ios.is_none()
        && s.io_size.is_none()
        && s.fsync == 0
        && s.fdatasync == 0
        && s.flow == 0
        && s.exitall.is_none()
        && s.steady.is_none()
}

/// The loop's events (the simulator's, less those this shape never has).
#[derive(Clone, Copy, Debug)]
enum Ev {
    UnitDone(u32),
    DeviceDone(u32),
    PolicyTimer,
    IrqArrive(Irq),
    CoreDone(u64),
}

/// A pop in a [`Trace`]'s queue operations (any other value is a push at
/// that instant).
pub const POP: Nanos = Nanos::MAX;

/// Marks a push in a [`Trace`] of an event the simulator schedules in
/// order (the pipe's transfer ends); instants stay far below this bit.
pub const IN_ORDER: Nanos = 1 << 62;

/// What a run did, kept to replay its parts in isolation: the queue's
/// operations in order and each I/O's (lat, slat, clat).
#[derive(Default)]
pub struct Trace {
    pub queue_ops: Vec<Nanos>,
    pub latencies: Vec<(Nanos, Nanos, Nanos)>,
}

/// Pending events, unsorted; (time, insertion order) picks the next.
pub struct Pending<E> {
    items: Vec<(u128, E)>,
    seq: u64,
}

impl<E> Pending<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Pending {
            items: Vec::with_capacity(64),
            seq: 0,
        }
    }

    /// Schedules `ev` at `at`.
    pub fn push(&mut self, at: Nanos, ev: E) {
        self.items
            .push(((u128::from(at) << 64) | u128::from(self.seq), ev));
        self.seq += 1;
    }

    /// The earliest event if it is before `end`.
    pub fn pop_before(&mut self, end: Nanos) -> Option<(Nanos, E)> {
        let mut best = 0;
        let mut key = *self.items.first().map(|(k, _)| k)?;
        for (i, &(k, _)) in self.items.iter().enumerate().skip(1) {
            if k < key {
                key = k;
                best = i;
            }
        }
        let at = (key >> 64) as Nanos;
        if at >= end {
            return None;
        }
        Some((at, self.items.swap_remove(best).1))
    }
}

/// What the thread does when its burst ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    Issue,
    Prepared,
    Doorbell,
    GetEvents,
    Recheck,
    Handed,
}

#[derive(Clone, Copy, Default)]
struct Req {
    issued: Nanos,
    submitted: Nanos,
    seq: Seq,
    hint: Hint,
}

/// Costs of the host profile the loop uses, in ns.
struct Costs {
    submit_entry: Nanos,
    per_request: Nanos,
    getevents_entry: Nanos,
    getevents_event: Nanos,
    return_to_user: Nanos,
    user_issue: Nanos,
    user_reap: Nanos,
    irq_fixed: Nanos,
    irq_reap_entry: Nanos,
    wakeup: Nanos,
    context_switch: Nanos,
    context_switch_idle: Nanos,
}

/// What a run of the loop produced, in the simulator's terms.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    /// I/Os handed to the application.
    pub ios: u64,
    /// Device interrupts.
    pub interrupts: u64,
    /// Events popped before the end.
    pub events: u64,
    /// The thread's CPU time and its user part.
    pub cpu_ns: u64,
    pub usr_ns: u64,
    /// The core's busy time (thread and interrupt handlers).
    pub busy_ns: u64,
    /// Context switches and wake-ups of the thread.
    pub ctx_switches: u64,
    pub wakeups: u64,
    /// The job's latency summary and fio's read direction.
    pub lat: cint_report::LatencyStats,
    pub read: FioDirection,
}

impl Outcome {
    /// Where the loop and the simulator's result (one strategy, one job)
    /// disagree, field by field; empty if they agree exactly.
    pub fn mismatches(&self, sim: &RunResult, sim_events: u64) -> Vec<String> {
        let s = &sim.results[0];
        let j = &s.jobs[0];
        let fio = j.fio.as_ref().expect("the simulator fills fio's data");
        let window = sim.duration_ns as f64;
        let mut out = Vec::new();
        let mut check = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what}: loop {a}, cint-sim {b}"));
            }
        };
        check("ios", self.ios.to_string(), j.ios.to_string());
        check(
            "interrupts",
            self.interrupts.to_string(),
            s.interrupts.to_string(),
        );
        check("events", self.events.to_string(), sim_events.to_string());
        check(
            "thread cpu ns",
            self.cpu_ns.to_string(),
            (fio.usr_ns + fio.sys_ns).to_string(),
        );
        check("usr ns", self.usr_ns.to_string(), fio.usr_ns.to_string());
        check(
            "core cpu_util",
            (self.busy_ns as f64 / window).to_string(),
            s.cpu_util.to_string(),
        );
        check(
            "context switches",
            self.ctx_switches.to_string(),
            j.context_switches.to_string(),
        );
        check("wakeups", self.wakeups.to_string(), j.wakeups.to_string());
        check(
            "lat_ns",
            format!("{:?}", self.lat),
            format!("{:?}", j.lat_ns),
        );
        check(
            "fio read",
            format!("{:?}", self.read),
            format!("{:?}", fio.read),
        );
        out
    }
}

/// The loop's whole state.
pub struct Reference {
    now: Nanos,
    end: Nanos,
    pending: Pending<Ev>,
    events: u64,
    trace: Option<Trace>,
    costs: Costs,
    // Device.
    rng: ChaCha8Rng,
    read_base: Nanos,
    read_bandwidth: u64,
    spread: f64,
    irq_latency: Nanos,
    free_units: u32,
    fifo: VecDeque<u32>,
    pipe_free_at: Nanos,
    bs: u64,
    policy: AnyPolicy,
    armed: Option<Nanos>,
    cq: Box<CompletionQueue<4096>>,
    tags: u32,
    reqs: Vec<Req>,
    // The thread.
    batch_max: u32,
    min_nr_max: u32,
    max_events: u32,
    direct: bool,
    free_slots: Vec<u32>,
    batch: Vec<u32>,
    ready: VecDeque<u32>,
    in_flight: u32,
    prepared: u32,
    min_nr: u32,
    handing: u32,
    blocked: bool,
    on_core: bool,
    ran_before: bool,
    left: Nanos,
    then: Then,
    user_left: Nanos,
    // The core.
    seg_start: Option<(Nanos, bool)>,
    token: u64,
    irq_pending: VecDeque<Irq>,
    wake_pending: bool,
    // Measurements.
    record: bool,
    out_ios: u64,
    interrupts: u64,
    cpu_ns: u64,
    usr_ns: u64,
    busy_ns: u64,
    ctx_switches: u64,
    wakeups: u64,
    hist: LatencyHistogram,
    slat: FioHistogram,
    clat: FioHistogram,
    lat: FioHistogram,
}

impl Reference {
    /// The loop for `sc`'s first strategy, or why this shape is not one it
    /// specialises. `histograms`: record latencies (the simulator always
    /// does; without them the loop shows what they cost).
    pub fn new(sc: &Scenario, histograms: bool) -> Result<Reference, String> {
        let strategy = sc.strategies.first().ok_or("no strategy")?;
        let CompletionMode::Interrupt(cfg) = strategy.mode else {
            return Err("the loop specialises an interrupt strategy".into());
        };
        let [job] = &sc.jobs[..] else {
            return Err("the loop specialises one job".into());
        };
        let Work::Io(io) = &job.work else {
            return Err("the loop specialises an I/O job".into());
        };
        let h = &sc.host;
        let d = &sc.device;
        let shape = [
            ("engine = \"libaio\"", io.engine == Engine::Libaio),
            ("rw = \"randread\"", io.rw == Rw::RandRead),
            ("3 <= batch <= 16", (3..=16).contains(&io.batch)),
            ("iodepth a multiple of batch", io.iodepth % io.batch == 0),
            (
                "batch_complete_min = batch_complete_max = batch",
                io.batch_complete_min == io.batch && io.batch_complete_max == io.batch,
            ),
            (
                "iodepth <= the device's queue_depth",
                io.iodepth <= d.queue_depth,
            ),
            ("no hint, rate, think time or shaping", {
                io.hint.is_none()
                    && io.rate_iops.is_none()
                    && io.think == 0
                    && !io.gtod_reduce
                    && no_shaping(&io.shape)
            }),
            ("one thread on cpu 0 for the whole run", {
                job.numjobs == 1 && job.cpu == 0 && job.runtime.is_none()
            }),
            ("one core, no cost spread, IRQ time accounting", {
                h.cores == 1 && h.cost_spread == 0.0 && h.irq_time_accounting
            }),
            ("no warm-up", sc.warmup == 0),
            ("normal jitter", d.jitter == JitterKind::Normal),
        ];
        if let Some((what, _)) = shape.iter().find(|(_, ok)| !ok) {
            return Err(format!("the loop specialises {what}"));
        }
        let issue = ((h.user_per_io.0 as f64) * h.user_issue_share).round() as Nanos;
        let issue = issue.min(h.user_per_io.0);
        let costs = Costs {
            submit_entry: h.syscall.0 + h.aio_submit_call.0,
            per_request: h.aio_submit_iocb.0 + h.direct_io.0 + h.block_submit.0,
            getevents_entry: h.syscall.0 + h.aio_getevents_call.0,
            getevents_event: h.aio_getevents_event.0,
            return_to_user: h.return_to_user.0,
            user_issue: issue,
            user_reap: h.user_per_io.0 - issue,
            irq_fixed: h.irq_fixed.0,
            irq_reap_entry: h.irq_reap_entry.0,
            wakeup: h.wakeup.0,
            context_switch: h.context_switch.0,
            context_switch_idle: h.context_switch_idle.0,
        };
        let depth = io.iodepth;
        let min_nr = io.batch;
        Ok(Reference {
            now: 0,
            end: sc.duration,
            pending: Pending::new(),
            events: 0,
            trace: None,
            costs,
            rng: cint_sim::engine::stream_rng(sc.seed, cint_sim::engine::DEVICE_STREAM_BASE),
            read_base: d.read.base.0,
            read_bandwidth: d.read.bandwidth,
            spread: d.jitter_spread.0 as f64,
            irq_latency: d.irq_latency.0,
            free_units: d.parallel_units,
            fifo: VecDeque::with_capacity(depth as usize),
            pipe_free_at: 0,
            bs: io.bs,
            policy: cfg.build(0).map_err(|e| e.to_string())?,
            armed: None,
            cq: Box::new(CompletionQueue::new()),
            tags: d.queue_depth,
            reqs: vec![Req::default(); depth as usize],
            batch_max: io.batch,
            min_nr_max: min_nr,
            max_events: io.batch,
            direct: io.direct,
            free_slots: (0..depth).rev().collect(),
            batch: Vec::with_capacity(depth as usize),
            ready: VecDeque::with_capacity(depth as usize),
            in_flight: 0,
            prepared: 0,
            min_nr: 1,
            handing: 0,
            blocked: false,
            on_core: false,
            ran_before: false,
            left: 0,
            then: Then::Issue,
            user_left: 0,
            seg_start: None,
            token: 0,
            irq_pending: VecDeque::with_capacity(64),
            wake_pending: false,
            record: histograms,
            out_ios: 0,
            interrupts: 0,
            cpu_ns: 0,
            usr_ns: 0,
            busy_ns: 0,
            ctx_switches: 0,
            wakeups: 0,
            hist: LatencyHistogram::new(),
            slat: FioHistogram::new(),
            clat: FioHistogram::new(),
            lat: FioHistogram::new(),
        })
    }

    /// Runs to the end, keeping a [`Trace`] of what it did.
    pub fn run_traced(mut self) -> (Outcome, Trace) {
        self.trace = Some(Trace::default());
        self.dispatch();
        while let Some((at, ev)) = self.pending.pop_before(self.end) {
            self.now = at;
            self.events += 1;
            if let Some(t) = self.trace.as_mut() {
                t.queue_ops.push(POP);
            }
            self.handle(ev);
        }
        let trace = self.trace.take().unwrap_or_default();
        (self.finish(), trace)
    }

    /// Runs to the end and returns the counters.
    pub fn run(mut self) -> Outcome {
        self.dispatch();
        while let Some((at, ev)) = self.pending.pop_before(self.end) {
            self.now = at;
            self.events += 1;
            self.handle(ev);
        }
        self.finish()
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::UnitDone(r) => self.on_unit_done(r),
            Ev::DeviceDone(r) => self.on_device_done(r),
            Ev::PolicyTimer => self.on_policy_timer(),
            Ev::IrqArrive(irq) => self.on_irq(irq),
            Ev::CoreDone(token) => self.on_core_done(token),
        }
    }

    fn finish(mut self) -> Outcome {
        self.now = self.now.max(self.end);
        self.charge();
        let mut read = FioDirection {
            ios: self.out_ios,
            bytes: self.out_ios * self.bs,
            slat: self.slat.summary(),
            clat: self.clat.summary(),
            lat: self.lat.summary(),
        };
        if !self.record {
            read = FioDirection::default();
        }
        Outcome {
            ios: self.out_ios,
            interrupts: self.interrupts,
            events: self.events,
            cpu_ns: self.cpu_ns,
            usr_ns: self.usr_ns,
            busy_ns: self.busy_ns,
            ctx_switches: self.ctx_switches,
            wakeups: self.wakeups,
            lat: self.hist.stats(),
            read,
        }
    }

    fn push(&mut self, at: Nanos, ev: Ev) {
        if let Some(t) = self.trace.as_mut() {
            let lane = if matches!(ev, Ev::DeviceDone(_)) {
                IN_ORDER
            } else {
                0
            };
            t.queue_ops.push(at | lane);
        }
        self.pending.push(at, ev);
    }

    // ---- the core ----

    /// Charges the running segment up to now.
    fn charge(&mut self) {
        let Some((start, irq)) = self.seg_start.as_mut() else {
            return;
        };
        let elapsed = self.now - *start;
        *start = self.now;
        self.busy_ns += elapsed;
        if *irq || !self.on_core {
            return;
        }
        self.cpu_ns += elapsed;
        // The burst's user part is its last `user_left` ns.
        let kernel_first = self.left.saturating_sub(self.user_left);
        let user = elapsed.saturating_sub(kernel_first).min(self.user_left);
        self.user_left -= user;
        self.usr_ns += user;
        self.left = self.left.saturating_sub(elapsed);
    }

    /// Starts the next work on the core: an interrupt handler, else the
    /// thread's burst or its continuation.
    fn dispatch(&mut self) {
        loop {
            if self.seg_start.is_some() {
                return;
            }
            if let Some(irq) = self.irq_pending.pop_front() {
                self.start_irq(irq);
                return;
            }
            if !self.on_core {
                if self.blocked {
                    return;
                }
                // Picked: a switch to it (back to it after it slept).
                self.on_core = true;
                self.ctx_switches += 1;
                self.left += if self.ran_before {
                    self.costs.context_switch_idle
                } else {
                    self.costs.context_switch
                };
                self.ran_before = true;
            }
            if self.left == 0 {
                self.cont(self.then);
                continue;
            }
            self.token += 1;
            self.seg_start = Some((self.now, false));
            self.push(self.now + self.left, Ev::CoreDone(self.token));
            return;
        }
    }

    fn on_core_done(&mut self, token: u64) {
        if token != self.token {
            return;
        }
        self.charge();
        let Some((_, irq)) = self.seg_start.take() else {
            return;
        };
        if irq {
            // The handler returns: its wake-up takes effect.
            if std::mem::take(&mut self.wake_pending) && self.blocked {
                self.blocked = false;
                self.wakeups += 1;
                self.left = 0;
                self.then = Then::Recheck;
            }
        } else {
            self.left = 0;
        }
        self.dispatch();
    }

    fn on_irq(&mut self, irq: Irq) {
        self.interrupts += 1;
        self.irq_pending.push_back(irq);
        if matches!(self.seg_start, Some((_, false))) {
            self.charge();
            self.seg_start = None;
            self.token += 1;
        }
        self.dispatch();
    }

    /// The device interrupt's handler: reaps, hands out, frees tags.
    fn start_irq(&mut self, irq: Irq) {
        let ready = &mut self.ready;
        let n = self.cq.reap(irq, |tag, _| ready.push_back(tag as u32)) as u64;
        self.tags += n as u32;
        let wakes = u64::from(n > 0 && self.blocked && !self.wake_pending);
        if wakes > 0 {
            self.wake_pending = true;
        }
        let cost = self.costs.irq_fixed + n * self.costs.irq_reap_entry + wakes * self.costs.wakeup;
        self.token += 1;
        self.seg_start = Some((self.now, true));
        self.push(self.now + cost, Ev::CoreDone(self.token));
    }

    // ---- the thread ----

    fn burst(&mut self, left: Nanos, then: Then) {
        self.left = left;
        self.then = then;
    }

    fn block(&mut self) {
        self.blocked = true;
        self.on_core = false;
    }

    fn cont(&mut self, then: Then) {
        match then {
            Then::Issue | Then::Prepared => self.submit_or_reap(),
            Then::Doorbell => self.doorbell(),
            Then::GetEvents => {
                if self.ready.len() as u32 >= self.min_nr {
                    self.hand_ready(0);
                } else {
                    self.block();
                }
            }
            Then::Recheck => {
                if self.ready.len() as u32 >= self.min_nr {
                    self.hand_ready(self.costs.return_to_user);
                } else {
                    self.block();
                }
            }
            Then::Handed => self.handed(),
        }
    }

    fn submit_or_reap(&mut self) {
        let k = self.batch_max.min(self.free_slots.len() as u32);
        if k == 0 {
            self.min_nr = self.min_nr_max.min(self.in_flight);
            self.burst(self.costs.getevents_entry, Then::GetEvents);
            return;
        }
        let missing = k.saturating_sub(self.prepared);
        if missing > 0 && self.costs.user_issue > 0 {
            self.prepared = k;
            let left = u64::from(missing) * self.costs.user_issue;
            self.burst(left, Then::Prepared);
            self.user_left = left;
            return;
        }
        self.prepared = self.prepared.saturating_sub(k);
        for i in 0..k {
            let r = self.free_slots.pop().expect("k free slots");
            let ctx = IoContext {
                blocking_fd: false,
                o_direct: self.direct,
                rw_flags: RwFlags::EMPTY,
                ms_sync: false,
                batch: BatchPosition { index: i, len: k },
            };
            let req = &mut self.reqs[r as usize];
            req.hint = hints::request_hint(IoCall::IoSubmit, &ctx);
            req.issued = self.now;
            self.batch.push(r);
            self.in_flight += 1;
        }
        // One plug (at most 16 requests), tags from a pool deeper than
        // the job's depth.
        self.tags -= k;
        let cost = self.costs.submit_entry + u64::from(k) * self.costs.per_request;
        self.burst(cost, Then::Doorbell);
    }

    fn doorbell(&mut self) {
        for i in 0..self.batch.len() {
            let r = self.batch[i];
            self.submit_to_device(r);
        }
        for &r in &self.batch {
            self.reqs[r as usize].submitted = self.now;
        }
        self.batch.clear();
        self.submit_or_reap();
    }

    fn hand_ready(&mut self, extra: Nanos) {
        let n = (self.ready.len() as u32).min(self.max_events);
        self.handing = n;
        self.burst(
            extra + u64::from(n) * self.costs.getevents_event,
            Then::Handed,
        );
    }

    fn handed(&mut self) {
        let n = std::mem::take(&mut self.handing);
        for _ in 0..n {
            let r = self.ready.pop_front().expect("handing what is ready");
            self.free_slots.push(r);
            self.in_flight -= 1;
            self.out_ios += 1;
            if self.record {
                let req = self.reqs[r as usize];
                let lat = self.now - req.issued;
                if let Some(t) = self.trace.as_mut() {
                    t.latencies
                        .push((lat, req.submitted - req.issued, self.now - req.submitted));
                }
                self.hist.record(lat);
                self.lat.record(lat);
                self.slat.record(req.submitted - req.issued);
                self.clat.record(self.now - req.submitted);
            }
        }
        let per_io = self.costs.user_reap;
        if per_io > 0 && n > 0 {
            let left = per_io * u64::from(n);
            self.burst(left, Then::Issue);
            self.user_left = left;
        } else {
            self.submit_or_reap();
        }
    }

    // ---- the device ----

    fn submit_to_device(&mut self, r: u32) {
        let req = &mut self.reqs[r as usize];
        req.seq = self.policy.on_submit(self.now, req.hint);
        self.arm_policy_timer();
        if self.free_units > 0 {
            self.free_units -= 1;
            self.start_media(r);
        } else {
            self.fifo.push_back(r);
        }
    }

    fn start_media(&mut self, r: u32) {
        // Box-Muller, one normal per access, as the simulator draws it.
        let u1: f64 = self.rng.gen::<f64>();
        let u2: f64 = self.rng.gen::<f64>();
        let normal = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let t = self.read_base as f64 + self.spread * normal;
        let t = if t <= 0.0 { 0 } else { t.round() as Nanos };
        self.push(self.now + t, Ev::UnitDone(r));
    }

    fn on_unit_done(&mut self, r: u32) {
        match self.fifo.pop_front() {
            Some(next) => self.start_media(next),
            None => self.free_units += 1,
        }
        let ns = self.bs * 1_000_000_000 / self.read_bandwidth;
        let end = self.pipe_free_at.max(self.now) + ns;
        self.pipe_free_at = end;
        self.push(end, Ev::DeviceDone(r));
    }

    fn on_device_done(&mut self, r: u32) {
        let req = self.reqs[r as usize];
        if self.cq.post(u64::from(r), req.hint).is_err() {
            panic!("the loop's shape never fills the completion queue");
        }
        let decision = self.policy.on_complete(self.now, req.seq, req.hint);
        self.act_on(decision.irq());
        self.arm_policy_timer();
    }

    fn act_on(&mut self, irq: Option<Irq>) {
        if let Some(irq) = irq {
            self.push(self.now + self.irq_latency, Ev::IrqArrive(irq));
        }
    }

    fn arm_policy_timer(&mut self) {
        let Some(deadline) = self.policy.next_deadline() else {
            return;
        };
        if self.armed.is_none_or(|a| deadline < a) {
            self.armed = Some(deadline);
            self.push(deadline, Ev::PolicyTimer);
        }
    }

    fn on_policy_timer(&mut self) {
        if self.armed != Some(self.now) {
            return;
        }
        self.armed = None;
        if self.policy.next_deadline().is_some_and(|d| d <= self.now) {
            let decision = self.policy.on_timer(self.now);
            self.act_on(decision.irq());
        }
        self.arm_policy_timer();
    }
}
