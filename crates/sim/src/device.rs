//! The NVMe device: queue pairs, internal parallel units with a FIFO in
//! front of them, one controller transfer pipe that both directions share,
//! per-operation service times with seeded jitter, completion posting and
//! each queue's interrupt policy.
//!
//! A request reaches the device when its submission path ends (the
//! doorbell): the queue's policy sees `on_submit`. Its time in the device
//! has two parts. The media access, `base(op) + jitter`, holds one of
//! `parallel_units` units: pooled, the first free unit in arrival order;
//! striped, the unit the request is bound to on arrival, drawn from the
//! device's own stream (where its address lands), in arrival order among
//! the requests bound to it. The data transfer,
//! `size / bandwidth(op)`, goes through the controller's one transfer
//! pipe whatever its direction ([`cint_scenario::pipe`], shared with the
//! emulator): the transfers in progress take one 4 KiB page each in turn
//! (the NVMe memory page Linux sets, which PRP entries describe), so a
//! 4 KiB read waits for a page of each large transfer ahead, not for all
//! of it, and a single-page transfer with nothing longer in progress
//! crosses whole in arrival order, as every transfer did before
//! 2026-11-27 (then a 4 KiB read beside 1 MiB ones waited a whole 1 MiB
//! transfer, and the two ran in lockstep). Whole transfers' ends go to the
//! event queue's in-order lane at arrival; of the round, only the next
//! end is an event, scheduled again when an arrival moves it. The
//! controller's DMA engine and command processing serve both directions,
//! so a mix of reads and writes shares one budget of time, and the
//! device never moves more than its capability for the mix (the time
//! fractions `bytes_r / bandwidth_r + bytes_w / bandwidth_w` add up to at
//! most the elapsed time; docs/HOST-COSTS.md, "The shared controller").
//! Before, each direction had a pipe of its own, and a random read/write
//! mix moved up to 1.6 times the device's sequential read bandwidth,
//! against vendor sheets that rate a 70/30 mix below either direction
//! alone. A read's media access comes first and its data then
//! crosses the pipe; a write's data crosses the pipe first (the controller
//! fetches it) and the media access follows. Its completion entry is then
//! posted to its queue's CQ and the policy sees `on_complete`; a decision
//! to fire becomes an interrupt on the queue's core `irq_latency` later.
//! In polled modes no policy runs: the entry is left for the poll loop.

use std::collections::VecDeque;

use cint_policy::reap::CompletionQueue;
use cint_policy::{AnyPolicy, Decision, Nanos, Policy};
use cint_scenario::pipe::{TransferPipe, PIPE_PAGE_BYTES};
use cint_scenario::profiles::JitterKind;
use cint_scenario::{DeviceProfile, UnitBinding};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::engine::{stream_rng, Event, DEVICE_UNITS_STREAM};
use crate::world::{ReqState, World};
use crate::SimError;
use cint_scenario::tags::TagPool;

/// Completion-queue slots the driver model keeps. A queue holds at most
/// `queue_depth` requests in flight, but entries reaped out of order keep
/// their slot until the head passes them; entries that do not fit wait in
/// the device (as a real controller stalls on a full CQ).
pub(crate) const CQ_SLOTS: usize = 4096;

/// Longest service time: far beyond any run (runs last at most two hours,
/// warm-up included) and far from overflowing when added to the clock.
const MAX_SERVICE: Nanos = 1 << 60;

/// Per-operation service parameters in integer form.
#[derive(Clone, Copy, Debug)]
struct OpCost {
    base: Nanos,
    bandwidth: u64,
}

/// Striped units (`UnitBinding::Striped`): each request waits for the
/// one unit it is bound to.
#[derive(Debug)]
struct StripedUnits {
    busy: Vec<bool>,
    /// Per unit, the requests bound to it that wait, in arrival order.
    waiting: Vec<VecDeque<u32>>,
    /// Per request slot, its unit while it holds or waits for one.
    unit_of: Vec<u32>,
    /// Binds requests to units: a stream of its own, so that a profile's
    /// binding leaves every other draw (media times, the workloads') as it was.
    rng: ChaCha8Rng,
}

/// The device-wide part: parallel units and their FIFO, and the
/// controller's transfer pipe.
#[derive(Debug)]
pub(crate) struct Device {
    free_units: u32,
    units: u32,
    pub(crate) fifo: VecDeque<u32>,
    /// `Some` when requests are bound to units; then `free_units` stays
    /// 0 and `fifo` empty.
    striped: Option<Box<StripedUnits>>,
    /// The controller's pipe (both directions): whole single-page
    /// transfers in arrival order, longer ones page by page in turn.
    pipe: TransferPipe<u32>,
    /// The events scheduled for ends of the pipe's round, (instant,
    /// request): an arrival that moves the round's next end leaves the
    /// earlier event behind, and this tells a due one from a superseded
    /// one (and from a whole transfer's in-order end).
    round_events: Vec<(Nanos, u32)>,
    /// Time of one full page on the pipe per direction (read, write).
    page_ns: [Nanos; 2],
    /// Transfer time the pipe has been given since `busy_since`, for the
    /// capability invariant.
    pipe_busy: Nanos,
    busy_since: Nanos,
    read: OpCost,
    write: OpCost,
    /// The last transfer size seen per direction (read, write) and its
    /// time on the pipe: requests mostly repeat a size, and the 128-bit
    /// division is then done once per size, not once per request.
    last_transfer: [(u64, Nanos); 2],
    jitter: JitterKind,
    spread: f64,
    irq_latency: Nanos,
}

impl Device {
    /// The device of profile `p` in a run seeded with `seed`.
    pub(crate) fn new(p: &DeviceProfile, seed: u64) -> Result<Self, SimError> {
        if p.parallel_units == 0 {
            return Err(SimError::input_at(
                "device.parallel_units",
                format!("must be at least 1 (device '{}')", p.model),
            ));
        }
        if p.read.bandwidth == 0 || p.write.bandwidth == 0 {
            return Err(SimError::input(format!(
                "device '{}': bandwidth must be positive",
                p.model
            )));
        }
        let striped = p.unit_binding == UnitBinding::Striped;
        Ok(Device {
            free_units: if striped { 0 } else { p.parallel_units },
            units: p.parallel_units,
            fifo: VecDeque::with_capacity(p.queue_depth as usize),
            striped: striped.then(|| {
                Box::new(StripedUnits {
                    busy: vec![false; p.parallel_units as usize],
                    waiting: vec![VecDeque::new(); p.parallel_units as usize],
                    unit_of: Vec::new(),
                    rng: stream_rng(seed, DEVICE_UNITS_STREAM),
                })
            }),
            pipe: TransferPipe::new(),
            round_events: Vec::new(),
            page_ns: [
                transfer_time(PIPE_PAGE_BYTES, p.read.bandwidth),
                transfer_time(PIPE_PAGE_BYTES, p.write.bandwidth),
            ],
            pipe_busy: 0,
            busy_since: 0,
            read: OpCost {
                base: p.read.base.0,
                bandwidth: p.read.bandwidth,
            },
            write: OpCost {
                base: p.write.base.0,
                bandwidth: p.write.bandwidth,
            },
            // Zero bytes take zero time: a valid entry to start from.
            last_transfer: [(0, 0); 2],
            jitter: p.jitter,
            spread: p.jitter_spread.0 as f64,
            irq_latency: p.irq_latency.0,
        })
    }

    /// Media time of one request (it holds a parallel unit meanwhile),
    /// drawn from the queue's stream.
    fn media_time(&self, write: bool, rng: &mut ChaCha8Rng) -> Nanos {
        let op = if write { self.write } else { self.read };
        let jitter = sample_jitter(self.jitter, self.spread, rng);
        let t = op.base.min(MAX_SERVICE) as f64 + jitter;
        if t <= 0.0 {
            0
        } else {
            (t.round() as Nanos).min(MAX_SERVICE)
        }
    }

    /// Queues request `r`'s transfer of `bytes` on the controller's pipe
    /// at `now`: its end when it crosses whole (in arrival order), `None`
    /// when it joined the round (whose next end then changed).
    #[inline(always)]
    fn transfer(&mut self, now: Nanos, r: u32, bytes: u64, write: bool) -> Option<Nanos> {
        let last = &mut self.last_transfer[usize::from(write)];
        if last.0 != bytes {
            let op = if write { self.write } else { self.read };
            *last = (bytes, transfer_time(bytes, op.bandwidth));
        }
        let ns = last.1;
        self.pipe_busy = self.pipe_busy.saturating_add(ns);
        let page_ns = self.page_ns[usize::from(write)];
        self.pipe.add(now, r, bytes, ns, page_ns)
    }

    /// Binds request `r` to a striped unit: true when that unit is free
    /// and its media access starts now, false when it waits for the unit.
    /// Out of line: pooled devices, the common case, never come here.
    #[inline(never)]
    fn bind_striped(&mut self, r: u32) -> bool {
        let Some(st) = self.striped.as_deref_mut() else {
            return false;
        };
        let u = st.rng.gen_range(0..st.busy.len());
        // Request slots are added as threads and guests are built.
        if st.unit_of.len() <= r as usize {
            st.unit_of.resize(r as usize + 1, 0);
        }
        st.unit_of[r as usize] = u as u32;
        if st.busy[u] {
            st.waiting[u].push_back(r);
            false
        } else {
            st.busy[u] = true;
            true
        }
    }

    /// Request `r`'s striped unit is done with it: the next request bound
    /// to that unit, if one waits (the unit stays busy with it).
    #[inline(never)]
    fn next_striped(&mut self, r: u32) -> Option<u32> {
        let st = self.striped.as_deref_mut()?;
        let u = st.unit_of[r as usize] as usize;
        let next = st.waiting[u].pop_front();
        st.busy[u] = next.is_some();
        next
    }

    /// Whether any write's data has crossed the pipe in this run.
    pub(crate) fn wrote(&self) -> bool {
        self.last_transfer[1].0 != 0
    }

    /// Restarts the capability account at `now` (the measured window's
    /// start): transfers already queued count from here.
    pub(crate) fn restart_account(&mut self, now: Nanos) {
        self.busy_since = now;
        self.pipe_busy = self.pipe.free_at().saturating_sub(now);
    }

    /// The device's capability, checked while running: the transfer time
    /// given to the pipe since the account started fits between then and
    /// the end of the last queued transfer, and no more units are busy
    /// than exist. A violation is a device model that moves more than the
    /// device can for its mix of directions.
    pub(crate) fn capability_violation(&self) -> Option<String> {
        let span = self.pipe.free_at().saturating_sub(self.busy_since);
        if self.pipe_busy > span {
            return Some(format!(
                "the device's pipe was given {} ns of transfers in {span} ns: it moved more \
                 than its capability for the mix",
                self.pipe_busy
            ));
        }
        if self.free_units > self.units {
            return Some(format!(
                "{} parallel units free of {}",
                self.free_units, self.units
            ));
        }
        if let Some(st) = &self.striped {
            if let Some(u) = (0..st.busy.len()).find(|&u| !st.busy[u] && !st.waiting[u].is_empty())
            {
                return Some(format!(
                    "striped unit {u} is free with {} requests waiting for it",
                    st.waiting[u].len()
                ));
            }
        }
        None
    }
}

/// Time on the pipe of `bytes` at `bandwidth` bytes/s, at most
/// `MAX_SERVICE` (the run ends long before).
pub(crate) fn transfer_time(bytes: u64, bandwidth: u64) -> Nanos {
    cint_scenario::profiles::transfer_ns(bytes, bandwidth).min(MAX_SERVICE)
}

/// Jitter in ns: zero-mean for `normal` and `lognormal` (the latter with a
/// right tail), a non-negative delay of mean `spread` for `exponential`.
fn sample_jitter(kind: JitterKind, spread: f64, rng: &mut ChaCha8Rng) -> f64 {
    if spread <= 0.0 {
        return 0.0;
    }
    match kind {
        JitterKind::None => 0.0,
        JitterKind::Normal => spread * standard_normal(rng),
        JitterKind::Lognormal => {
            // A log-normal variable with mean and standard deviation both
            // `spread` (sigma^2 = ln 2), shifted to mean zero.
            let sigma = std::f64::consts::LN_2.sqrt();
            let mu = spread.ln() - sigma * sigma / 2.0;
            (mu + sigma * standard_normal(rng)).exp() - spread
        }
        JitterKind::Exponential => {
            let u: f64 = rng.gen::<f64>();
            -spread * (1.0 - u).ln()
        }
    }
}

/// Box-Muller; one normal per call keeps the stream position simple.
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.gen::<f64>();
    let u2: f64 = rng.gen::<f64>();
    let r = (-2.0 * (1.0 - u1).ln()).sqrt();
    r * (std::f64::consts::TAU * u2).cos()
}

/// One submission/completion queue pair.
pub(crate) struct HwQueue {
    /// The interrupt policy; `None` in polled modes.
    pub policy: Option<AnyPolicy>,
    /// The completion queue; `None` on a queue no job uses (a core
    /// without I/O threads), so that a host of many idle cores does not
    /// cost a CQ's memory each.
    pub cq: Option<Box<CompletionQueue<CQ_SLOTS>>>,
    /// Completions waiting for a free CQ slot.
    pub overflow: VecDeque<u32>,
    /// The instant a `PolicyTimer` is scheduled for, if any.
    pub armed: Option<Nanos>,
    /// The core its interrupt vector targets.
    pub core: u32,
    /// Driver tags of the interrupt queue and of its poll queue (Linux
    /// 5.0's `poll_queues`: polled requests go to queues of their own, with
    /// tags of their own), indexed by `Request::polled`.
    pub tags: [TagPool; 2],
    rng: ChaCha8Rng,
}

impl HwQueue {
    /// A queue pair targeting `core`; `used`: some job submits to it.
    pub(crate) fn new(
        policy: Option<AnyPolicy>,
        core: u32,
        rng: ChaCha8Rng,
        used: bool,
        depth: u32,
    ) -> Self {
        HwQueue {
            policy,
            cq: used.then(|| Box::new(CompletionQueue::new())),
            overflow: VecDeque::new(),
            armed: None,
            core,
            tags: [TagPool::new(depth), TagPool::new(depth)],
            rng,
        }
    }
}

impl World<'_> {
    /// The request reaches the device.
    pub(crate) fn submit_to_device(&mut self, r: u32) {
        // A guest's request goes to its hypervisor first (crate::virt).
        if self.virt.is_some() && self.virt_divert(r) {
            return;
        }
        self.enter_device(r);
    }

    /// The request reaches the device itself.
    pub(crate) fn enter_device(&mut self, r: u32) {
        let now = self.now();
        let req = &mut self.reqs[r as usize];
        let q = req.queue as usize;
        if let Some(policy) = self.queues[q].policy.as_mut() {
            req.seq = policy.on_submit(now, req.hint);
        }
        req.state = ReqState::InDevice;
        req.dispatched = now;
        let (write, bytes) = (req.write, req.bytes);
        self.check.issued += 1;
        self.arm_policy_timer(q);
        if write {
            match self.device.transfer(now, r, bytes, true) {
                // Whole transfers end in the order the pipe takes them.
                Some(at) => self.events.schedule_in_order(at, Event::DataIn { req: r }),
                None => self.arm_pipe_round(),
            }
        } else {
            self.enter_units(r);
        }
    }

    /// A write's data has crossed the pipe: its media access may start.
    pub(crate) fn on_data_in(&mut self, r: u32) {
        if self.transfer_ended(r) {
            self.enter_units(r);
        }
    }

    /// Schedules the event of the pipe round's next end, unless one is
    /// already scheduled for it.
    #[inline(never)]
    fn arm_pipe_round(&mut self) {
        let Some((at, r)) = self.device.pipe.next_end() else {
            return;
        };
        if self.device.round_events.contains(&(at, r)) {
            return;
        }
        self.device.round_events.push((at, r));
        let event = if self.reqs[r as usize].write {
            Event::DataIn { req: r }
        } else {
            Event::DeviceDone { req: r }
        };
        self.events.schedule(at, event);
    }

    /// Whether request `r`'s pipe event now ends its transfer: always
    /// while nothing is in the round (a whole transfer's in-order end),
    /// else as [`World::pipe_round_end`] finds.
    #[inline(always)]
    fn transfer_ended(&mut self, r: u32) -> bool {
        self.device.round_events.is_empty() || self.pipe_round_end(r)
    }

    /// Whether request `r`'s pipe event now ends its transfer: a whole
    /// transfer's does; a round end's does if it is still the round's next
    /// end (an arrival since may have moved it), and then the round moves
    /// on. False for a superseded one, which is dropped.
    #[inline(never)]
    fn pipe_round_end(&mut self, r: u32) -> bool {
        let now = self.now();
        let Some(i) = self.device.round_events.iter().position(|&e| e == (now, r)) else {
            return true;
        };
        self.device.round_events.swap_remove(i);
        if self.device.pipe.next_end() != Some((now, r)) {
            return false;
        }
        self.device.pipe.finish(now);
        self.arm_pipe_round();
        // The pipe serves without a pause while transfers are in the
        // round: its last one ends when the FIFO would have ended it.
        if !self.device.pipe.is_sharing() && self.device.pipe.free_at() != now {
            let free_at = self.device.pipe.free_at();
            self.check.fail(format!(
                "the pipe's round ended at {now} ns, its transfers' time ends at {free_at} ns"
            ));
        }
        true
    }

    /// The request takes a free parallel unit or waits for one.
    fn enter_units(&mut self, r: u32) {
        // A striped device keeps `free_units` at 0 and its FIFO empty, so
        // the pooled paths test for stripes only where they would wait.
        if self.device.free_units > 0 {
            self.device.free_units -= 1;
            self.start_media(r);
        } else if self.device.striped.is_none() {
            self.device.fifo.push_back(r);
        } else if self.device.bind_striped(r) {
            self.start_media(r);
        }
    }

    fn start_media(&mut self, r: u32) {
        let now = self.now();
        let req = self.reqs[r as usize];
        let rng = &mut self.queues[req.queue as usize].rng;
        let t = self.device.media_time(req.write, rng);
        self.events.schedule(now + t, Event::UnitDone { req: r });
    }

    /// A media access ends: the unit goes to the next waiting request; a
    /// read's data now crosses the pipe, a write is complete.
    #[inline(always)]
    pub(crate) fn on_unit_done(&mut self, r: u32) {
        match self.device.fifo.pop_front() {
            Some(next) => self.start_media(next),
            None if self.device.striped.is_none() => self.device.free_units += 1,
            None => {
                if let Some(next) = self.device.next_striped(r) {
                    self.start_media(next);
                }
            }
        }
        let req = self.reqs[r as usize];
        if req.write {
            self.post_completion(r);
        } else {
            match self.device.transfer(self.now(), r, req.bytes, false) {
                Some(at) => self
                    .events
                    .schedule_in_order(at, Event::DeviceDone { req: r }),
                None => self.arm_pipe_round(),
            }
        }
    }

    /// A read's data reached the host: its completion is posted.
    #[inline(always)]
    pub(crate) fn on_device_done(&mut self, r: u32) {
        if self.transfer_ended(r) {
            self.post_completion(r);
        }
    }

    #[inline(always)]
    fn post_completion(&mut self, r: u32) {
        let now = self.now();
        let req = &mut self.reqs[r as usize];
        if req.state != ReqState::InDevice {
            let state = req.state;
            self.check.fail(format!(
                "request {r} completed by the device in state {state:?}"
            ));
            return;
        }
        req.state = ReqState::Posted;
        req.posted_at = now;
        let q = req.queue as usize;
        let polled = req.polled;
        self.note_posting(q);
        self.select_record(r);
        self.power_device_done(r);
        if polled {
            self.post_for_poller(r);
            return;
        }
        if !self.queues[q].overflow.is_empty() {
            self.queues[q].overflow.push_back(r);
            return;
        }
        self.post_to_cq(q, r);
    }

    /// Posts the entry and lets the policy decide. False if the CQ is full.
    fn post_to_cq(&mut self, q: usize, r: u32) -> bool {
        let now = self.now();
        let req = self.reqs[r as usize];
        let queue = &mut self.queues[q];
        let Some(cq) = queue.cq.as_mut() else {
            self.check.fail(format!(
                "request {r} completed on queue {q}, which has no CQ"
            ));
            return true;
        };
        if cq.post(u64::from(r), req.hint).is_err() {
            queue.overflow.push_back(r);
            return false;
        }
        let decision = match queue.policy.as_mut() {
            Some(p) => p.on_complete(now, req.seq, req.hint),
            None => Decision::Hold,
        };
        self.act_on(q, decision);
        self.arm_policy_timer(q);
        true
    }

    /// After a reap: post what waited for a slot, oldest first.
    pub(crate) fn drain_overflow(&mut self, q: usize) {
        while let Some(&r) = self.queues[q].overflow.front() {
            self.queues[q].overflow.pop_front();
            if !self.post_to_cq(q, r) {
                // It went back to the end; keep the order by rotating.
                if let Some(back) = self.queues[q].overflow.pop_back() {
                    self.queues[q].overflow.push_front(back);
                }
                break;
            }
        }
    }

    fn act_on(&mut self, q: usize, decision: Decision) {
        if let Some(irq) = decision.irq() {
            let at = self.now() + self.device.irq_latency;
            self.events.schedule(
                at,
                Event::IrqArrive {
                    queue: q as u32,
                    irq,
                },
            );
        }
    }

    /// Makes sure the policy is consulted at its next deadline.
    fn arm_policy_timer(&mut self, q: usize) {
        let queue = &mut self.queues[q];
        let Some(deadline) = queue.policy.as_ref().and_then(|p| p.next_deadline()) else {
            return;
        };
        if queue.armed.is_none_or(|a| deadline < a) {
            queue.armed = Some(deadline);
            self.events
                .schedule(deadline, Event::PolicyTimer { queue: q as u32 });
        }
    }

    #[inline(always)]
    pub(crate) fn on_policy_timer(&mut self, q: usize) {
        let now = self.now();
        let queue = &mut self.queues[q];
        if queue.armed != Some(now) {
            // Superseded by an earlier timer that already ran.
            return;
        }
        queue.armed = None;
        let Some(policy) = queue.policy.as_mut() else {
            return;
        };
        if policy.next_deadline().is_some_and(|d| d <= now) {
            let decision = policy.on_timer(now);
            self.act_on(q, decision);
        }
        self.arm_policy_timer(q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stream_rng;

    fn mean_and_sd(kind: JitterKind) -> (f64, f64) {
        let mut rng = stream_rng(1, 1);
        let n = 20_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| sample_jitter(kind, 1000.0, &mut rng))
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn jitter_has_the_documented_mean_and_spread() {
        let (m, sd) = mean_and_sd(JitterKind::Normal);
        assert!(m.abs() < 30.0 && (sd - 1000.0).abs() < 40.0, "{m} {sd}");
        let (m, sd) = mean_and_sd(JitterKind::Lognormal);
        assert!(m.abs() < 40.0 && (sd - 1000.0).abs() < 100.0, "{m} {sd}");
        let (m, _) = mean_and_sd(JitterKind::Exponential);
        assert!((m - 1000.0).abs() < 40.0, "{m}");
        assert_eq!(mean_and_sd(JitterKind::None), (0.0, 0.0));
    }
}
