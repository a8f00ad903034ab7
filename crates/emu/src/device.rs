//! The device core: one thread, pinned to its own core, that never sleeps.
//! Each pass it takes new submissions from every client's ring, tells the
//! queue's policy, starts the request on the backend, collects finished
//! requests, posts their completions, asks the policy whether to interrupt,
//! and fires the policy's timers when their deadline has passed.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use cint_policy::{AnyPolicy, Decision, Nanos, Policy};

use crate::backend::{Backend, Finished};
use crate::shared::{
    Accepted, Channel, CqEntry, DeliveredBy, Delivery, QueueMode, Shared, RESULT_CANCELLED,
};
use crate::sys;

/// The device core's private state.
pub(crate) struct DeviceCore {
    shared: Arc<Shared>,
    backend: Backend,
    /// One per queue; `None` in poll mode.
    policies: Vec<Option<AnyPolicy>>,
    channels: Vec<Arc<Channel>>,
    finished: Vec<Finished>,
    /// Queues that accepted a submission in this pass.
    submitted: Vec<bool>,
    /// When the periodic opportunity tick fires next.
    next_tick: Nanos,
}

/// Period of the device's "monitor tick": policies that may hold
/// completions without a deadline (vIC) get a chance to deliver at least
/// this often, as a virtual machine monitor's periodic timer gives them
/// (1-10 ms in the vIC paper; the short end here).
pub const OPPORTUNITY_TICK: Nanos = 1_000_000;

impl DeviceCore {
    pub fn new(shared: Arc<Shared>, backend: Backend, policies: Vec<Option<AnyPolicy>>) -> Self {
        let queues = policies.len();
        DeviceCore {
            shared,
            backend,
            policies,
            channels: Vec::with_capacity(64),
            finished: Vec::with_capacity(4096),
            submitted: vec![false; queues],
            next_tick: sys::now() + OPPORTUNITY_TICK,
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
    fn pass(&mut self, now: Nanos) {
        self.adopt_new_channels();
        for i in 0..self.channels.len() {
            while let Some(entry) = self.channels[i].sq.pop() {
                let channel = &self.channels[i];
                let queue = channel.queue;
                let seq = match &mut self.policies[queue as usize] {
                    Some(policy) => policy.on_submit(now, entry.hint),
                    None => 0,
                };
                let request = Accepted {
                    channel: channel.index,
                    queue,
                    seq,
                    entry,
                };
                self.submitted[queue as usize] = true;
                self.backend.submit(request, now, &mut self.finished);
            }
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
            match self.shared.channel(self.channels.len() as u32) {
                Some(channel) => self.channels.push(Arc::clone(channel)),
                None => break,
            }
        }
    }

    fn post_finished(&mut self, now: Nanos) {
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
            QueueMode::Poll => {
                let Some(channel) = self.shared.channel(request.channel) else {
                    return;
                };
                push_spinning(
                    &channel.dq,
                    Delivery {
                        slot: request.entry.slot,
                        generation: request.entry.generation,
                        result,
                        by: DeliveredBy::Poll,
                    },
                );
                // A hybrid poller or a library client may block instead
                // of spinning; waking costs nothing when nobody sleeps.
                channel.waiter.notify();
            }
            QueueMode::Interrupt(_) => {
                push_spinning(
                    &queue.cq,
                    CqEntry {
                        channel: request.channel,
                        slot: request.entry.slot,
                        generation: request.entry.generation,
                        hint: request.entry.hint,
                        result,
                    },
                );
                if let Some(policy) = &mut self.policies[queue_index] {
                    let decision = policy.on_complete(now, request.seq, request.entry.hint);
                    fire(&self.shared, queue_index, decision);
                }
            }
        }
    }

    fn shut_down(mut self) {
        // Pairs with the fence in `Client::submit`: a client that pushed
        // before this point is drained below; one that pushes later sees
        // `stopping` and waits for the seal to learn its request's fate.
        fence(Ordering::SeqCst);
        self.adopt_new_channels();
        for i in 0..self.channels.len() {
            let channel = Arc::clone(&self.channels[i]);
            while let Some(entry) = channel.sq.pop() {
                let request = Accepted {
                    channel: channel.index,
                    queue: channel.queue,
                    seq: 0,
                    entry,
                };
                self.finished.push((request, RESULT_CANCELLED));
            }
            channel
                .sealed_at
                .store(channel.sq.popped(), Ordering::SeqCst);
        }
        self.backend.shutdown(&mut self.finished);
        // Cancelled requests were never submitted to the policy (seq 0) or
        // were; either way the final full interrupt below delivers them, so
        // the policy is not consulted any more.
        for k in 0..self.finished.len() {
            let (request, result) = self.finished[k];
            self.post_without_policy(request, result);
        }
        self.finished.clear();
        for queue in &self.shared.queues {
            queue.finish();
        }
    }

    fn post_without_policy(&mut self, request: Accepted, result: i64) {
        let saved = self.policies[request.queue as usize].take();
        self.post(request, result, sys::now());
        self.policies[request.queue as usize] = saved;
    }
}

/// Acts on a policy's decision for queue `index`.
fn fire(shared: &Shared, index: usize, decision: Decision) {
    if let Some(irq) = decision.irq() {
        shared.queues[index].raise(irq);
    }
}

/// Pushes into a ring whose capacity covers every request in flight, so
/// this only spins if a reader is momentarily behind.
fn push_spinning<T: Copy>(ring: &crate::ring::Ring<T>, value: T) {
    let mut value = value;
    while let Err(back) = ring.push(value) {
        value = back;
        std::hint::spin_loop();
    }
}
