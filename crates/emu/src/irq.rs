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

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use cint_policy::reap::CompletionQueue;
use cint_policy::{Hint, Irq};

use crate::shared::{
    CqEntry, DeliveredBy, Delivery, Shared, IRQ_FULL, MAX_CLIENTS, MAX_QUEUE_DEPTH,
};
use crate::sys;

/// Real-time priority of the handlers: above every normal thread, below
/// the kernel's own real-time threads (50 and up).
pub const HANDLER_PRIORITY: i32 = 40;

/// The handler's view of one queue: the completion-queue model with its
/// reaped bits, and the entries it holds, indexed by position.
struct HandlerState {
    model: Box<CompletionQueue<MAX_QUEUE_DEPTH>>,
    entries: Box<[Option<CqEntry>]>,
    next_position: u64,
    /// Channels that got a delivery in this pass (each notified once).
    touched: Vec<u32>,
    touched_flag: Box<[bool]>,
}

/// Runs the handler of queue `index` until the device finishes.
pub(crate) fn run_handler(shared: Arc<Shared>, index: usize) {
    let queue = &shared.queues[index];
    queue.handler_tid.store(sys::gettid(), Ordering::Release);
    let mut state = HandlerState {
        model: Box::new(CompletionQueue::new()),
        entries: vec![None; MAX_QUEUE_DEPTH].into_boxed_slice(),
        next_position: 0,
        touched: Vec::with_capacity(64),
        touched_flag: vec![false; MAX_CLIENTS].into_boxed_slice(),
    };
    loop {
        let bits = wait_for_irq(&shared, index);
        let finished = queue.finished.load(Ordering::SeqCst);
        drain_ring(&shared, index, &mut state);
        let irq = if bits & IRQ_FULL != 0 || finished {
            Irq::Full
        } else {
            Irq::UrgentOnly
        };
        deliver(&shared, irq, &mut state);
        if finished {
            // Entries posted after the flag was read are impossible: the
            // device sets it after its last post.
            drain_ring(&shared, index, &mut state);
            deliver(&shared, Irq::Full, &mut state);
            return;
        }
    }
}

/// Blocks until an interrupt is latched, then takes every latched bit.
fn wait_for_irq(shared: &Shared, index: usize) -> u32 {
    let queue = &shared.queues[index];
    loop {
        let bits = queue.pending.swap(0, Ordering::SeqCst);
        if bits != 0 {
            return bits;
        }
        queue.handler_sleeping.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if queue.pending.load(Ordering::SeqCst) == 0 {
            sys::futex_wait(&queue.pending, 0);
        }
        queue.handler_sleeping.store(0, Ordering::SeqCst);
    }
}

/// Moves posted entries from the shared ring into the model.
fn drain_ring(shared: &Shared, index: usize, state: &mut HandlerState) {
    let queue = &shared.queues[index];
    while let Some(entry) = queue.cq.pop() {
        let position = state.next_position;
        // The model never holds more than MAX_QUEUE_DEPTH entries because
        // clients reserve their slots against that bound.
        if state.model.post(position, entry.hint).is_err() {
            debug_assert!(false, "completion queue model overflow");
            deliver_one(shared, state, entry, DeliveredBy::FullIrq);
            continue;
        }
        state.entries[(position % MAX_QUEUE_DEPTH as u64) as usize] = Some(entry);
        state.next_position += 1;
    }
}

/// The handler proper: reap by the OOO rules, deliver, wake.
fn deliver(shared: &Shared, irq: Irq, state: &mut HandlerState) {
    let by = DeliveredBy::from_irq(irq);
    let HandlerState {
        model,
        entries,
        touched,
        touched_flag,
        ..
    } = state;
    model.reap(irq, |position, _hint: Hint| {
        let slot = (position % MAX_QUEUE_DEPTH as u64) as usize;
        if let Some(entry) = entries[slot].take() {
            push_delivery(shared, entry, by, touched, touched_flag);
        }
    });
    for &channel in touched.iter() {
        touched_flag[channel as usize] = false;
        if let Some(ch) = shared.channel(channel) {
            ch.waiter.notify();
        }
    }
    touched.clear();
}

fn deliver_one(shared: &Shared, state: &mut HandlerState, entry: CqEntry, by: DeliveredBy) {
    push_delivery(
        shared,
        entry,
        by,
        &mut state.touched,
        &mut state.touched_flag,
    );
}

fn push_delivery(
    shared: &Shared,
    entry: CqEntry,
    by: DeliveredBy,
    touched: &mut Vec<u32>,
    touched_flag: &mut [bool],
) {
    let Some(channel) = shared.channel(entry.channel) else {
        return;
    };
    let mut delivery = Delivery {
        slot: entry.slot,
        generation: entry.generation,
        result: entry.result,
        by,
    };
    // The delivery ring holds every request the client may have in flight.
    while let Err(back) = channel.dq.push(delivery) {
        delivery = back;
        std::hint::spin_loop();
    }
    if let Some(flag) = touched_flag.get_mut(entry.channel as usize) {
        if !*flag {
            *flag = true;
            touched.push(entry.channel);
        }
    }
}
