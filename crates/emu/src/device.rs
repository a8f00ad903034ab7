//! The device core: one thread, pinned to its own core, that never sleeps.
//! Each pass it takes new submissions from every client's ring, tells the
//! queue's policy, starts the request on the backend, collects finished
//! requests, posts their completions, asks the policy whether to interrupt,
//! and fires the policy's timers when their deadline has passed.

use std::collections::VecDeque;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use cint_policy::{AnyPolicy, Decision, Nanos, Policy};

use crate::backend::{Backend, Finished};
use crate::ring::{Consumer, Producer};
use crate::shared::{
    Accepted, Channel, CqEntry, DeliveredBy, Delivery, Queue, QueueMode, Shared, SubmitEntry,
    MAX_QUEUE_DEPTH, RESULT_CANCELLED,
};
use crate::sys;

/// A client's channel as the device core holds it: the ends of its rings
/// that the device owns.
struct DeviceChannel {
    channel: Arc<Channel>,
    sq: Consumer<SubmitEntry>,
    /// Where the device delivers straight to the client: its delivery
    /// ring on a polled queue, its poll ring on an interrupt-driven one
    /// (for the requests submitted as polled).
    dq: Option<Producer<Delivery>>,
}

/// The device side of one interrupt-driven queue's completion queue.
pub(crate) struct DeviceCq {
    tx: Producer<CqEntry>,
    /// Entries ever posted: the completion queue's tail position.
    posted: u64,
    /// Completions waiting for room in the completion queue, in order.
    held: VecDeque<Finished>,
    /// The head doorbell value at which a queue-full interrupt was last
    /// raised, so that a stall raises one interrupt, not one per pass.
    raised_at_head: Option<u64>,
}

impl DeviceCq {
    pub fn new(tx: Producer<CqEntry>) -> Self {
        DeviceCq {
            tx,
            posted: 0,
            held: VecDeque::with_capacity(MAX_QUEUE_DEPTH),
            raised_at_head: None,
        }
    }
}

/// The device core's private state.
pub(crate) struct DeviceCore {
    shared: Arc<Shared>,
    backend: Backend,
    /// One per queue; `None` in poll mode.
    policies: Vec<Option<AnyPolicy>>,
    /// One per queue; `None` in poll mode.
    cqs: Vec<Option<DeviceCq>>,
    /// Indexed by channel index: channels are adopted in order.
    channels: Vec<DeviceChannel>,
    finished: Vec<Finished>,
    /// Queues that accepted a submission in this pass.
    submitted: Vec<bool>,
    /// When the periodic opportunity tick fires next.
    next_tick: Nanos,
    /// Shutting down: completions are posted without asking the policy
    /// (the final full interrupt delivers them all).
    quiet: bool,
}

/// Period of the device's "monitor tick": policies that may hold
/// completions without a deadline (vIC) get a chance to deliver at least
/// this often, as a virtual machine monitor's periodic timer gives them
/// (1-10 ms in the vIC paper; the short end here).
pub const OPPORTUNITY_TICK: Nanos = 1_000_000;

impl DeviceCore {
    pub fn new(
        shared: Arc<Shared>,
        backend: Backend,
        policies: Vec<Option<AnyPolicy>>,
        cqs: Vec<Option<DeviceCq>>,
    ) -> Self {
        let queues = policies.len();
        DeviceCore {
            shared,
            backend,
            policies,
            cqs,
            channels: Vec::with_capacity(64),
            finished: Vec::with_capacity(4096),
            submitted: vec![false; queues],
            next_tick: sys::now() + OPPORTUNITY_TICK,
            quiet: false,
        }
    }

    /// Runs until the owner sets `stopping`, then completes or cancels
    /// every request and tells every handler to finish.
    pub fn run(mut self) {
        loop {
            let stopping = self.shared.stopping.load(Ordering::Acquire);
            self.pass(sys::now());
            if stopping {
                break;
            }
            std::hint::spin_loop();
        }
        self.shut_down();
    }

    /// One pass over every source of work.
    fn pass(&mut self, mut now: Nanos) {
        self.adopt_new_channels();
        let mut took = false;
        for i in 0..self.channels.len() {
            while let Some(entry) = self.channels[i].sq.pop() {
                // A request arrives when the device core takes it, not when
                // its pass began: a pass the host interrupted (its virtual
                // CPU descheduled) would start the request's service
                // before it was submitted, and it would complete sooner
                // than the device can.
                let at = sys::now();
                took = true;
                let channel = &self.channels[i].channel;
                let queue = channel.queue;
                // A polled request never reaches the policy: it has no
                // interrupt to decide.
                let seq = match &mut self.policies[queue as usize] {
                    Some(policy) if !entry.polled => policy.on_submit(at, entry.hint),
                    _ => 0,
                };
                let request = Accepted {
                    channel: channel.index,
                    queue,
                    seq,
                    entry,
                };
                self.submitted[queue as usize] = true;
                self.backend.submit(request, at, &mut self.finished);
            }
        }
        // The rest of the pass runs no earlier than its last arrival, so
        // that the policy never sees time go back.
        if took {
            now = sys::now();
        }
        self.backend.poll(now, &mut self.finished);
        self.post_finished(now);
        let tick = now >= self.next_tick;
        if tick {
            self.next_tick = now + OPPORTUNITY_TICK;
        }
        for (index, slot) in self.policies.iter_mut().enumerate() {
            if let Some(policy) = slot {
                if policy.next_deadline().is_some_and(|d| d <= now) {
                    fire(&self.shared, index, policy.on_timer(now));
                }
                // A submission is a guest exit: the monitor runs then, and
                // on its periodic tick.
                if tick || self.submitted[index] {
                    fire(&self.shared, index, policy.on_opportunity(now));
                }
            }
            self.submitted[index] = false;
        }
    }

    fn adopt_new_channels(&mut self) {
        let registered = self.shared.registered.load(Ordering::Acquire);
        while self.channels.len() < registered {
            let Some(channel) = self.shared.channel(self.channels.len() as u32) else {
                break;
            };
            // Only the device core takes a submission ring's consumer, once
            // per channel, so the hand-off always has it.
            let Some(sq) = channel.sq_rx.take() else {
                break;
            };
            let poll = matches!(
                self.shared
                    .queues
                    .get(channel.queue as usize)
                    .map(|q| q.mode),
                Some(QueueMode::Poll)
            );
            let dq = if poll {
                channel.dq_tx.take()
            } else {
                channel.poll_tx.take()
            };
            self.channels.push(DeviceChannel {
                channel: Arc::clone(channel),
                sq,
                dq,
            });
        }
    }

    fn post_finished(&mut self, now: Nanos) {
        self.flush_held(now);
        for k in 0..self.finished.len() {
            let (request, result) = self.finished[k];
            self.post(request, result, now);
        }
        self.finished.clear();
    }

    /// Posts one completion where its queue's reader finds it.
    fn post(&mut self, request: Accepted, result: i64, now: Nanos) {
        let queue_index = request.queue as usize;
        let queue = &self.shared.queues[queue_index];
        queue.completions.fetch_add(1, Ordering::Relaxed);
        self.shared
            .device_completions
            .fetch_add(1, Ordering::Relaxed);
        if result == RESULT_CANCELLED {
            self.shared.cancelled.fetch_add(1, Ordering::Relaxed);
        }
        match queue.mode {
            QueueMode::Poll => self.post_direct(request, result, now),
            QueueMode::Interrupt(_) if request.entry.polled => {
                self.post_direct(request, result, now)
            }
            QueueMode::Interrupt(_) => {
                let Some(cq) = &mut self.cqs[queue_index] else {
                    return;
                };
                if cq.held.is_empty() && has_room(cq, queue_head(queue)) {
                    self.post_cq(request, result, now);
                } else {
                    // Behind completions held for room: in order, as far
                    // as the room goes now.
                    cq.held.push_back((request, result));
                    self.flush_queue(queue_index, now);
                }
            }
        }
    }

    /// Posts a polled completion straight to its client, who finds it by
    /// polling (no interrupt).
    fn post_direct(&mut self, request: Accepted, result: i64, now: Nanos) {
        let Some(dc) = self.channels.get_mut(request.channel as usize) else {
            return;
        };
        let Some(dq) = &mut dc.dq else {
            return;
        };
        push_spinning(
            dq,
            Delivery {
                slot: request.entry.slot,
                generation: request.entry.generation,
                result,
                by: DeliveredBy::Poll,
                posted_at: now,
            },
        );
        // A hybrid poller or a library client may block instead of
        // spinning; waking costs nothing when nobody sleeps.
        dc.channel.waiter.notify();
    }

    /// Posts held completions, oldest first, as far as the completion
    /// queue has room.
    fn flush_held(&mut self, now: Nanos) {
        for index in 0..self.cqs.len() {
            self.flush_queue(index, now);
        }
    }

    /// Posts queue `index`'s held completions, oldest first, as far as
    /// its completion queue has room.
    fn flush_queue(&mut self, index: usize, now: Nanos) {
        while let Some(cq) = &mut self.cqs[index] {
            if cq.held.is_empty() {
                break;
            }
            // One load of the head for both the test and the stall: the
            // handler may move it between two, and a stall raised at a
            // head that left room would be a full interrupt nobody
            // needed, reaping entries ahead of their own interrupts.
            let head = queue_head(&self.shared.queues[index]);
            if !has_room(cq, head) {
                stalled(cq, &self.shared, index, head);
                break;
            }
            let Some((request, result)) = cq.held.pop_front() else {
                break;
            };
            self.post_cq(request, result, now);
        }
    }

    /// Writes a completion-queue entry (the queue has room) and asks the
    /// policy whether to interrupt.
    fn post_cq(&mut self, request: Accepted, result: i64, now: Nanos) {
        let queue_index = request.queue as usize;
        let Some(cq) = &mut self.cqs[queue_index] else {
            return;
        };
        push_spinning(
            &mut cq.tx,
            CqEntry {
                channel: request.channel,
                slot: request.entry.slot,
                generation: request.entry.generation,
                hint: request.entry.hint,
                result,
                posted_at: now,
            },
        );
        cq.posted += 1;
        if self.quiet {
            return;
        }
        if let Some(policy) = &mut self.policies[queue_index] {
            let decision = policy.on_complete(now, request.seq, request.entry.hint);
            fire(&self.shared, queue_index, decision);
        }
    }

    fn shut_down(mut self) {
        // Pairs with the fence in `Client::submit`: a client that pushed
        // before this point is drained below; one that pushes later sees
        // `stopping` and waits for the seal to learn its request's fate.
        fence(Ordering::SeqCst);
        self.adopt_new_channels();
        for dc in &mut self.channels {
            while let Some(entry) = dc.sq.pop() {
                let request = Accepted {
                    channel: dc.channel.index,
                    queue: dc.channel.queue,
                    seq: 0,
                    entry,
                };
                self.finished.push((request, RESULT_CANCELLED));
            }
            dc.channel.sealed_at.store(dc.sq.popped(), Ordering::SeqCst);
        }
        self.backend.shutdown(&mut self.finished);
        // Cancelled requests were never submitted to the policy (seq 0) or
        // were; either way the final full interrupt below delivers them, so
        // the policy is not consulted any more.
        self.quiet = true;
        self.post_finished(sys::now());
        // Completions held for room must be posted before the final
        // interrupt: the handler is still serving the queue-full
        // interrupts that make room.
        while self
            .cqs
            .iter()
            .any(|cq| cq.as_ref().is_some_and(|cq| !cq.held.is_empty()))
        {
            self.flush_held(sys::now());
            std::hint::spin_loop();
        }
        for queue in &self.shared.queues {
            queue.finish();
        }
    }
}

/// True if the completion queue has a free position at doorbell `head`:
/// the device may post only while fewer than `MAX_QUEUE_DEPTH` positions
/// separate its tail from the handler's head.
fn has_room(cq: &DeviceCq, head: u64) -> bool {
    cq.posted.wrapping_sub(head) < MAX_QUEUE_DEPTH as u64
}

/// The handler's head doorbell as the device reads it.
fn queue_head(queue: &Queue) -> u64 {
    queue.cq_head.load(Ordering::Acquire)
}

/// The completion queue is full at doorbell `head`: ask the handler for a
/// full reap, once per head value.
///
/// The window fills only when urgent-only interrupts reaped entries past
/// one that no interrupt reaps yet (its head cannot pass an unreaped
/// entry) while the policy holds that entry back. A full reap releases
/// every position, so one interrupt per stall suffices; raising again only
/// after the head has moved keeps a stall from becoming a storm.
fn stalled(cq: &mut DeviceCq, shared: &Shared, index: usize, head: u64) {
    if cq.raised_at_head != Some(head) {
        cq.raised_at_head = Some(head);
        shared.raise_queue_full(index);
    }
}

/// Acts on a policy's decision for queue `index`.
fn fire(shared: &Shared, index: usize, decision: Decision) {
    if let Some(irq) = decision.irq() {
        shared.raise(index, irq);
    }
}

/// Pushes into a ring whose capacity covers every request in flight, so
/// this only spins if a reader is momentarily behind.
fn push_spinning<T: Copy>(ring: &mut Producer<T>, value: T) {
    let mut value = value;
    while let Err(back) = ring.push(value) {
        value = back;
        std::hint::spin_loop();
    }
}
