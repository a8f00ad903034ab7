//! Interrupt delivery on an application core.
//!
//! The emulated interrupt is a handler thread pinned to the application
//! core at real-time priority (`SCHED_FIFO`), blocked on a futex. The
//! device core latches the interrupt's kind in the queue's `pending` word
//! and wakes the handler (the inter-processor interrupt). Being real-time,
//! the handler preempts whatever runs on that core, as an interrupt does;
//! it reaps the completion queue with the driver's OOO rules
//! ([`cint_policy::reap::CompletionQueue`]: everything for a full IRQ,
//! only Urgent entries for an urgent-only IRQ, never an entry twice), hands
//! each completion to the thread that submitted it, wakes those threads
//! and blocks again. Interrupts raised while the handler runs stay latched
//! and are handled on its next pass, as a real interrupt controller does.
//!
//! When the application core is idle, the device core may deliver the
//! interrupt to a thread blocked in a wait there instead
//! ([`crate::idle`]); that thread runs the same pass
//! ([`handle_on_waiter`]). The handler's state is behind a lock so that
//! passes never overlap, whoever runs them.

use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cint_policy::reap::CompletionQueue;
use cint_policy::{Hint, Irq};

use crate::activity::ThreadState;
use crate::ring::{Consumer, Producer};
use crate::shared::{
    Channel, CqEntry, DeliveredBy, Delivery, Shared, IRQ_FINISH, IRQ_FULL, MAX_CLIENTS,
    MAX_QUEUE_DEPTH,
};
use crate::sys;

/// Real-time priority of the handlers: above every normal thread, below
/// the kernel's own real-time threads (50 and up).
pub const HANDLER_PRIORITY: i32 = 40;

/// The handler's view of one queue: the completion ring's reading end, the
/// completion-queue model with its reaped bits, the entries it holds
/// (indexed by position) and the delivery rings of the queue's clients.
pub(crate) struct HandlerState {
    cq: Consumer<CqEntry>,
    model: Box<CompletionQueue<MAX_QUEUE_DEPTH>>,
    entries: Box<[Option<CqEntry>]>,
    next_position: u64,
    out: Outbox,
}

/// A client's channel as its queue's handler holds it: how to wake the
/// client, and the producer end of its delivery ring.
type Adopted = (Arc<Channel>, Producer<Delivery>);

/// Where the handler delivers: the delivery rings of its queue's clients.
struct Outbox {
    /// Indexed by channel index (`MAX_CLIENTS` of them); a channel is
    /// adopted when its first completion arrives (it registered before
    /// submitting it).
    channels: Box<[Option<Adopted>]>,
    /// Channels that got a delivery in this pass (each notified once).
    touched: Vec<u32>,
    touched_flag: Box<[bool]>,
    /// Completions delivered in this pass: the driver tags they free.
    freed: u32,
}

impl HandlerState {
    /// The state of a handler reading completion ring `cq`.
    pub(crate) fn new(cq: Consumer<CqEntry>) -> Self {
        HandlerState {
            cq,
            model: Box::new(CompletionQueue::new()),
            entries: vec![None; MAX_QUEUE_DEPTH].into_boxed_slice(),
            next_position: 0,
            out: Outbox {
                channels: (0..MAX_CLIENTS).map(|_| None).collect(),
                touched: Vec::with_capacity(64),
                touched_flag: vec![false; MAX_CLIENTS].into_boxed_slice(),
                freed: 0,
            },
        }
    }
}

/// The handler state of queue `index`, locked. `None` for a queue
/// without a handler (poll mode).
fn lock_state(shared: &Shared, index: usize) -> Option<MutexGuard<'_, HandlerState>> {
    let state: &Mutex<HandlerState> = shared.queues.get(index)?.handler.get()?;
    // A pass that panicked left the state as consistent as any pass
    // boundary: every entry is either in the model or delivered.
    Some(
        state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    )
}

/// Runs the handler thread of queue `index` until the device finishes.
pub(crate) fn run_handler(shared: Arc<Shared>, index: usize) {
    serve(&shared, index);
    crate::activity::detach();
}

/// The handler's loop: a pass per wake-up, a last one when the device
/// finished.
fn serve(shared: &Shared, index: usize) {
    let queue = &shared.queues[index];
    loop {
        let bits = wait_for_irq(shared, index);
        let finished = queue.finished.load(Ordering::SeqCst);
        let Some(mut state) = lock_state(shared, index) else {
            return;
        };
        pass(shared, index, bits, finished, &mut state);
        if finished {
            // Entries posted after the flag was read are impossible: the
            // device sets it after its last post.
            drain_ring(shared, &mut state);
            deliver(shared, index, Irq::Full, &mut state);
            return;
        }
    }
}

/// The handler's pass, run by a thread that an interrupt claimed while it
/// waited on the idle application core (see [`crate::idle`]). The
/// interrupt may meanwhile have been taken by the handler thread (it was
/// on its way to sleep); then there is nothing to do.
pub(crate) fn handle_on_waiter(shared: &Shared, index: usize) {
    let Some(mut state) = lock_state(shared, index) else {
        return;
    };
    let queue = &shared.queues[index];
    // The device's final wake-up (IRQ_FINISH) stays for the handler
    // thread: it must not go back to sleep on a word a waiter cleared.
    let bits = queue.pending.fetch_and(IRQ_FINISH, Ordering::SeqCst) & !IRQ_FINISH;
    if bits != 0 {
        let finished = queue.finished.load(Ordering::SeqCst);
        pass(shared, index, bits, finished, &mut state);
    }
}

/// One pass for the latched `bits`: everything posted so far enters the
/// model, then the reap of a full or an urgent-only interrupt.
fn pass(shared: &Shared, index: usize, bits: u32, finished: bool, state: &mut HandlerState) {
    drain_ring(shared, state);
    let irq = if bits & IRQ_FULL != 0 || finished {
        Irq::Full
    } else {
        Irq::UrgentOnly
    };
    deliver(shared, index, irq, state);
}

/// Blocks until an interrupt is latched or the device finished
/// (`IRQ_FINISH`), then takes every latched bit.
fn wait_for_irq(shared: &Shared, index: usize) -> u32 {
    let queue = &shared.queues[index];
    loop {
        let bits = queue.pending.swap(0, Ordering::SeqCst);
        if bits != 0 {
            return bits;
        }
        queue.handler_sleeping.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        crate::activity::enter(ThreadState::Idle);
        if queue.pending.load(Ordering::SeqCst) == 0 && sys::futex_wait(&queue.pending, 0) {
            queue.handler_wakeups.fetch_add(1, Ordering::Relaxed);
        }
        // Running again; the runner hands the clocks over after the
        // handler started, so it joins them at a wake-up.
        match queue.activity.get() {
            Some(clocks) if !crate::activity::attached() => crate::activity::attach(clocks.clone()),
            _ => crate::activity::enter(ThreadState::Busy),
        }
        queue.handler_sleeping.store(0, Ordering::SeqCst);
    }
}

/// Moves posted entries from the shared ring into the model.
fn drain_ring(shared: &Shared, state: &mut HandlerState) {
    while let Some(entry) = state.cq.pop() {
        let position = state.next_position;
        // The device posts only while fewer than MAX_QUEUE_DEPTH positions
        // separate its tail from the head this handler published (its
        // queue-full rule), so the model always has room. Should that rule
        // ever be broken, delivering the entry now beats losing it.
        if state.model.post(position, entry.hint).is_err() {
            state.out.push(shared, entry, DeliveredBy::FullIrq);
            continue;
        }
        state.entries[(position % MAX_QUEUE_DEPTH as u64) as usize] = Some(entry);
        state.next_position += 1;
    }
}

/// The handler proper: reap by the OOO rules, deliver, ring the head
/// doorbell, wake.
fn deliver(shared: &Shared, index: usize, irq: Irq, state: &mut HandlerState) {
    let by = DeliveredBy::from_irq(irq);
    let HandlerState {
        model,
        entries,
        next_position,
        out,
        ..
    } = state;
    model.reap(irq, |position, _hint: Hint| {
        let slot = (position % MAX_QUEUE_DEPTH as u64) as usize;
        if let Some(entry) = entries[slot].take() {
            out.push(shared, entry, by);
        }
    });
    // Released positions are the device's again (the doorbell write).
    let head = *next_position - model.occupied() as u64;
    shared.queues[index].cq_head.store(head, Ordering::Release);
    // The handler completes the requests: their tags are free, as
    // blk_mq_free_request frees them in the interrupt's path.
    shared.free_tags(index, std::mem::take(&mut out.freed), true);
    out.notify_touched();
}

impl Outbox {
    /// Hands one completion to its client's delivery ring.
    fn push(&mut self, shared: &Shared, entry: CqEntry, by: DeliveredBy) {
        let index = entry.channel as usize;
        let Some(adopted) = self.channels.get_mut(index) else {
            return;
        };
        if adopted.is_none() {
            // The client registered (publishing its channel) before it
            // submitted this request, and only this handler delivers on
            // its queue, so the channel and its producer are there.
            let Some(channel) = shared.channel(entry.channel) else {
                return;
            };
            let Some(dq) = channel.dq_tx.take() else {
                return;
            };
            *adopted = Some((Arc::clone(channel), dq));
        }
        let Some((_, dq)) = adopted else {
            return;
        };
        let mut delivery = Delivery {
            slot: entry.slot,
            generation: entry.generation,
            result: entry.result,
            by,
            posted_at: entry.posted_at,
        };
        // The delivery ring holds every request the client may have in
        // flight.
        while let Err(back) = dq.push(delivery) {
            delivery = back;
            std::hint::spin_loop();
        }
        self.freed += 1;
        if let Some(flag) = self.touched_flag.get_mut(index) {
            if !*flag {
                *flag = true;
                self.touched.push(entry.channel);
            }
        }
    }

    /// Wakes every client that got a delivery in this pass, once.
    fn notify_touched(&mut self) {
        for &channel in self.touched.iter() {
            self.touched_flag[channel as usize] = false;
            if let Some(Some((ch, _))) = self.channels.get(channel as usize) {
                ch.waiter.notify();
            }
        }
        self.touched.clear();
    }
}
