//! The application side of the emulated device: one [`Client`] per thread,
//! with its own submission ring, delivery ring and request slots.

use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, OnceLock};

use cint_policy::{Hint, Nanos};

use crate::buf::IoBuf;
use crate::error::{EmuError, IoError};
use crate::irq;
use crate::ring::{self, Consumer, Producer};
use crate::shared::{
    Channel, DeliveredBy, Delivery, Handoff, Op, Shared, SubmitEntry, MAX_QUEUE_DEPTH,
    RESULT_ABANDONED, RESULT_CANCELLED,
};
use crate::sys;

/// One request to submit.
#[derive(Debug)]
pub struct Request {
    /// Read or write.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Bytes to transfer.
    pub len: u32,
    /// The interrupt hint the request carries to the device's policy.
    pub hint: Hint,
    /// Data buffer (needed by the io_uring backend, at least `len` bytes;
    /// ignored by the synthetic one). Handed back with the completion.
    pub buf: Option<IoBuf>,
    /// Caller's tag, returned with the completion.
    pub user_data: u64,
}

/// A 4 KiB unmarked read at offset 0 tagged `user_data`, for unit tests.
#[cfg(test)]
pub(crate) fn test_read(user_data: u64) -> Request {
    Request {
        op: Op::Read,
        offset: 0,
        len: 4096,
        hint: Hint::Unmarked,
        buf: None,
        user_data,
    }
}

/// A finished request, in the submitter's hands.
#[derive(Debug)]
pub struct Completion {
    /// The request's `user_data`.
    pub user_data: u64,
    /// Bytes transferred, or why the request failed.
    pub result: Result<u32, IoError>,
    /// Read or write.
    pub op: Op,
    /// Bytes asked for.
    pub len: u32,
    /// The hint it carried.
    pub hint: Hint,
    /// Clock at submission.
    pub submitted: Nanos,
    /// Clock when the submitter took it from its delivery ring.
    pub in_hand: Nanos,
    /// Clock when the device posted it: `posted - submitted` is the
    /// device's time as the submitter's host sees it, whichever way the
    /// completion then travelled.
    pub posted: Nanos,
    /// How it got here.
    pub by: DeliveredBy,
    /// The request's buffer, if it had one.
    pub buf: Option<IoBuf>,
}

impl Completion {
    /// Submission to completion in hand.
    pub fn latency(&self) -> Nanos {
        self.in_hand.saturating_sub(self.submitted)
    }
}

/// How a client waits for completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Block until the interrupt handler (or, in poll mode, the device)
    /// delivers.
    Block,
    /// Spin on the delivery ring; never sleep.
    Spin,
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    busy: bool,
    user_data: u64,
    submitted: Nanos,
    op: Option<Op>,
    len: u32,
    hint: Hint,
    buf: Option<IoBuf>,
    /// Submitted as polled on an interrupt-driven queue: its completion
    /// comes through the poll ring.
    polled: bool,
}

/// A thread's connection to the emulated device. Not `Sync`: one thread
/// submits and reaps through it (it may move between threads).
pub struct Client {
    shared: Arc<Shared>,
    channel: Arc<Channel>,
    /// This client's ends of its rings: it alone submits and reaps.
    sq: Producer<SubmitEntry>,
    dq: Consumer<Delivery>,
    /// The poll ring: completions of requests submitted as polled on an
    /// interrupt-driven queue, posted by the device core itself.
    poll_dq: Consumer<Delivery>,
    /// The queue interrupts (else it only polls).
    interrupt_queue: bool,
    /// Requests in flight whose completion comes through `poll_dq`.
    polled_in_flight: usize,
    /// Times a blocking wait slept and was woken.
    wakeups: u64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    in_flight: usize,
    /// Completions this client's submission polled for while its queue's
    /// tags were all taken (its own polled requests held some): handed
    /// out by the next reap, first.
    stash: Vec<Completion>,
    /// Deliveries that matched no request in flight (must stay 0).
    strays: u64,
}

impl Client {
    pub(crate) fn register(
        shared: &Arc<Shared>,
        queue: usize,
        depth: usize,
    ) -> Result<Client, EmuError> {
        let Some(q) = shared.queues.get(queue) else {
            return Err(EmuError::Config(format!(
                "queue {queue} does not exist ({} queues)",
                shared.queues.len()
            )));
        };
        if depth == 0 || depth > MAX_QUEUE_DEPTH {
            return Err(EmuError::Config(format!(
                "client depth {depth} is out of range 1..={MAX_QUEUE_DEPTH}"
            )));
        }
        let _guard = shared
            .register_lock
            .lock()
            .map_err(|_| EmuError::Internal("client registry lock poisoned".into()))?;
        if shared.stopping.load(Ordering::SeqCst) {
            return Err(EmuError::ShutDown);
        }
        let reserved = q.reserved.load(Ordering::Relaxed);
        // With driver tags no more than they are in flight at once, so the
        // completion ring bounds only the tags (`Emulator::limit_tags`).
        if q.tags.get().is_none() && reserved + depth > MAX_QUEUE_DEPTH {
            return Err(EmuError::Config(format!(
                "queue {queue} would have {} requests in flight, more than {MAX_QUEUE_DEPTH}",
                reserved + depth
            )));
        }
        let index = shared.registered.load(Ordering::Relaxed);
        let Some(cell): Option<&OnceLock<Arc<Channel>>> = shared.channels.get(index) else {
            return Err(EmuError::Config(format!(
                "a device accepts at most {} clients over its life",
                shared.channels.len()
            )));
        };
        let (sq, sq_rx) = ring::channel(depth);
        let (dq_tx, dq) = ring::channel(depth);
        let (poll_tx, poll_dq) = ring::channel(depth);
        let channel = Arc::new(Channel {
            index: index as u32,
            queue: queue as u32,
            sq_rx: Handoff::new(sq_rx),
            dq_tx: Handoff::new(dq_tx),
            poll_tx: Handoff::new(poll_tx),
            waiter: Default::default(),
            tag_woken: std::sync::atomic::AtomicBool::new(false),
            sealed_at: std::sync::atomic::AtomicU64::new(u64::MAX),
        });
        if cell.set(Arc::clone(&channel)).is_err() {
            return Err(EmuError::Internal("client slot registered twice".into()));
        }
        q.reserved.store(reserved + depth, Ordering::Relaxed);
        // A client runs on its core except while it waits.
        q.idle.arrive();
        shared.registered.store(index + 1, Ordering::Release);
        Ok(Client {
            shared: Arc::clone(shared),
            channel,
            sq,
            dq,
            poll_dq,
            interrupt_queue: matches!(q.mode, crate::shared::QueueMode::Interrupt(_)),
            polled_in_flight: 0,
            wakeups: 0,
            slots: (0..depth).map(|_| Slot::default()).collect(),
            free: (0..depth as u32).rev().collect(),
            in_flight: 0,
            stash: Vec::new(),
            strays: 0,
        })
    }

    /// Requests this client may have in flight.
    pub fn depth(&self) -> usize {
        self.slots.len()
    }

    /// Requests submitted and not yet handed back.
    pub fn in_flight(&self) -> usize {
        self.in_flight + self.stash.len()
    }

    /// The queue (application core index) this client submits to.
    pub fn queue(&self) -> usize {
        self.channel.queue as usize
    }

    /// Whether the queue can complete a request by interrupt (else it
    /// only polls, whatever the request asks).
    pub fn can_interrupt(&self) -> bool {
        self.interrupt_queue
    }

    /// Whether another thread than this client's wants its core now or
    /// when its completions come, as far as the emulator knows: other
    /// clients out of their waits or blocked in one, a CPU-bound
    /// occupant. A spin would hold the core from it.
    pub fn core_contended(&self) -> bool {
        let idle = &self.shared.queues[self.channel.queue as usize].idle;
        idle.running_now() > 1 || idle.waiting_now() > 0
    }

    /// Runs `wait`, a wait of this client's thread outside the emulator (a
    /// condition variable of its own), with the thread counted as not
    /// running on its core meanwhile, as a wait in [`Client::wait`] is: an
    /// interrupt for another thread there then finds the core idle only
    /// if nothing else runs. The thread is counted again before this
    /// returns, as a thread that starts running is.
    pub(crate) fn away<T>(&self, wait: impl FnOnce() -> T) -> T {
        let idle = &self.shared.queues[self.channel.queue as usize].idle;
        idle.depart();
        let out = wait();
        idle.arrive();
        out
    }

    /// Deliveries that matched no request in flight: a duplicate or a
    /// stray completion. The emulator's exactly-once guarantee keeps it 0.
    pub fn strays(&self) -> u64 {
        self.strays
    }

    /// Times this client's blocking waits ([`WaitMode::Block`]) slept and
    /// were woken by a delivery: the thread's wake-ups by the device.
    pub fn wakeups(&self) -> u64 {
        self.wakeups
    }

    /// Submits one request. Fails with [`EmuError::Busy`] when `depth`
    /// requests are in flight and [`EmuError::ShutDown`] once the device
    /// stops (the request was then not executed; its buffer is dropped).
    pub fn submit(&mut self, request: Request) -> Result<(), EmuError> {
        let addr = buffer_addr(&request)?;
        self.submit_at(request, addr, false)
    }

    /// Submits one request whose completion the caller will poll for
    /// (Linux's `REQ_POLLED`): on an interrupt-driven queue the device
    /// posts its completion without telling the queue's policy and
    /// without an interrupt, and only a reap finds it (a spin, or a
    /// blocking wait, which the device's post wakes). Requests submitted
    /// by [`Client::submit`] may be in flight beside it. On a queue that
    /// only polls it is [`Client::submit`]. Fails as that does.
    pub fn submit_polled(&mut self, request: Request) -> Result<(), EmuError> {
        let addr = buffer_addr(&request)?;
        self.submit_at(request, addr, true)
    }

    /// [`Client::submit_polled`] on a buffer the caller owns (the C ABI).
    ///
    /// # Safety
    /// As [`Client::submit_raw`].
    pub unsafe fn submit_polled_raw(
        &mut self,
        request: Request,
        addr: usize,
    ) -> Result<(), EmuError> {
        self.submit_at(request, addr, true)
    }

    /// Submits a request on a buffer the caller owns (the C ABI).
    ///
    /// # Safety
    /// `addr` must point to `request.len` bytes valid for reads (writes)
    /// and writes (reads) that stay valid and untouched until this request's
    /// completion has been returned by a reaping call.
    pub unsafe fn submit_raw(&mut self, request: Request, addr: usize) -> Result<(), EmuError> {
        self.submit_at(request, addr, false)
    }

    fn submit_at(&mut self, request: Request, addr: usize, polled: bool) -> Result<(), EmuError> {
        let polled = polled && self.interrupt_queue;
        let Some(index) = self.free.pop() else {
            return Err(EmuError::Busy);
        };
        if let Err(e) = self.take_tag() {
            self.free.push(index);
            return Err(e);
        }
        let now = sys::now();
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        slot.busy = true;
        slot.user_data = request.user_data;
        slot.submitted = now;
        slot.op = Some(request.op);
        slot.len = request.len;
        slot.hint = request.hint;
        slot.buf = request.buf;
        slot.polled = polled;
        let entry = SubmitEntry {
            slot: index,
            generation: slot.generation,
            op: request.op,
            hint: request.hint,
            offset: request.offset,
            len: request.len,
            buf: addr,
            polled,
        };
        let position = self.sq.pushed();
        if self.sq.push(entry).is_err() {
            // The ring holds `depth` entries and at most `depth` are in
            // flight, so this cannot happen; undo rather than lose it.
            self.release(index);
            self.shared.free_tags(self.queue(), 1, false);
            return Err(EmuError::Busy);
        }
        self.in_flight += 1;
        self.polled_in_flight += usize::from(polled);
        // Pairs with the device's fence before its final drain.
        fence(Ordering::SeqCst);
        if self.shared.stopping.load(Ordering::SeqCst) {
            let sealed = self.wait_for_seal();
            if position >= sealed {
                // The device never saw it: it is ours again, and so is
                // its tag.
                self.in_flight -= 1;
                self.polled_in_flight -= usize::from(polled);
                self.release(index);
                self.shared.free_tags(self.queue(), 1, false);
                return Err(EmuError::ShutDown);
            }
        }
        Ok(())
    }

    /// Takes one of the queue's driver tags, where it has them, as
    /// `blk_mq_get_tag` does: with none free, sleeps until freed tags wake
    /// this client (a batch of them, `cint_scenario::tags`), or, while
    /// its own polled requests hold tags, polls them (their completions
    /// free theirs) as a polling submitter does rather than wait for
    /// itself.
    fn take_tag(&mut self) -> Result<(), EmuError> {
        let queue = self.queue();
        if self.shared.queues[queue].tags.get().is_none() {
            return Ok(());
        }
        // Held apart from `self`, which polls and sleeps below.
        let shared = Arc::clone(&self.shared);
        let Some(pool) = shared.queues[queue].tags.get() else {
            return Ok(());
        };
        let mut woken = false;
        loop {
            let own_polled =
                self.polled_in_flight > 0 || (!self.interrupt_queue && self.in_flight > 0);
            {
                let mut pool = crate::shared::lock_tags(pool, false)
                    .ok_or_else(|| EmuError::Internal("a queue's tag lock is poisoned".into()))?;
                if pool.take(1, woken) == 1 {
                    return Ok(());
                }
                if !own_polled {
                    pool.wait(self.channel.index, woken);
                }
            }
            if own_polled {
                let mut stash = std::mem::take(&mut self.stash);
                if self.take_delivered(usize::MAX, &mut stash) == 0 {
                    std::hint::spin_loop();
                }
                self.stash = stash;
                woken = false;
                continue;
            }
            self.sleep_for_tag(queue)?;
            woken = true;
        }
    }

    /// Sleeps until freed tags wake this client (it is on the pool's
    /// waiters); the device's shutdown ends the wait too.
    fn sleep_for_tag(&mut self, queue: usize) -> Result<(), EmuError> {
        loop {
            if self.channel.tag_woken.swap(false, Ordering::SeqCst) {
                return Ok(());
            }
            if self.shared.stopping.load(Ordering::SeqCst) {
                return Err(EmuError::ShutDown);
            }
            let (channel, shared) = (&self.channel, &self.shared);
            crate::activity::enter(crate::activity::ThreadState::Idle);
            let outcome = channel
                .waiter
                .wait(&shared.queues[queue].idle, channel.index, || {
                    channel.tag_woken.load(Ordering::SeqCst)
                        || shared.stopping.load(Ordering::SeqCst)
                });
            crate::activity::enter(crate::activity::ThreadState::Busy);
            if outcome.slept {
                self.wakeups += 1;
            }
            if outcome.claimed {
                irq::handle_on_waiter(&self.shared, queue);
            }
        }
    }

    fn wait_for_seal(&self) -> u64 {
        loop {
            let sealed = self.channel.sealed_at.load(Ordering::SeqCst);
            if sealed != u64::MAX {
                return sealed;
            }
            std::thread::yield_now();
        }
    }

    fn release(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.busy = false;
        slot.buf = None;
        self.free.push(index);
    }

    /// Takes every completion delivered so far, without waiting.
    pub fn reap(&mut self, out: &mut Vec<Completion>) -> usize {
        self.reap_at_most(usize::MAX, out)
    }

    /// Takes at most `max` of the completions delivered so far, without
    /// waiting; the rest stay delivered for the next call (a reap call's
    /// `max_nr`, fio's `iodepth_batch_complete_max`).
    pub fn reap_at_most(&mut self, max: usize, out: &mut Vec<Completion>) -> usize {
        let mut taken = 0;
        if !self.stash.is_empty() {
            // Polled for by a submission: in the caller's hand now.
            let now = sys::now();
            let n = self.stash.len().min(max);
            out.extend(
                self.stash
                    .drain(..n)
                    .map(|c| Completion { in_hand: now, ..c }),
            );
            taken = n;
        }
        taken + self.take_delivered(max - taken, out)
    }

    /// Takes at most `max` delivered completions into `out`; frees the
    /// tags of those this client polled for.
    fn take_delivered(&mut self, max: usize, out: &mut Vec<Completion>) -> usize {
        let mut taken = 0;
        let mut polled = 0;
        let mut in_hand = 0;
        while taken < max {
            let next = match self.dq.pop() {
                Some(d) => Some(d),
                None if self.polled_in_flight > 0 => self.poll_dq.pop(),
                None => None,
            };
            let Some(delivery) = next else {
                break;
            };
            if in_hand == 0 {
                in_hand = sys::now();
            }
            let by_poll = delivery.by == DeliveredBy::Poll;
            if self.accept(delivery, in_hand, out) {
                taken += 1;
                polled += u32::from(by_poll);
            }
        }
        // A polled completion is completed by its poller, who frees its
        // tag (the handler frees those of interrupts).
        self.shared.free_tags(self.queue(), polled, false);
        taken
    }

    fn accept(&mut self, d: Delivery, in_hand: Nanos, out: &mut Vec<Completion>) -> bool {
        let Some(slot) = self.slots.get_mut(d.slot as usize) else {
            self.strays += 1;
            return false;
        };
        if !slot.busy || slot.generation != d.generation {
            self.strays += 1;
            return false;
        }
        let len = slot.len;
        let result = if d.result == RESULT_ABANDONED {
            // The kernel may still write the buffer: it must outlive any
            // such write, so it is never freed (nor handed back to be
            // reused).
            if let Some(buf) = slot.buf.take() {
                std::mem::forget(buf);
            }
            Err(IoError::Abandoned)
        } else if d.result == RESULT_CANCELLED {
            Err(IoError::Cancelled)
        } else if d.result < 0 {
            Err(IoError::Os((-d.result) as i32))
        } else if (d.result as u64) < u64::from(len) {
            Err(IoError::Short {
                done: d.result as u32,
                wanted: len,
            })
        } else {
            Ok(len)
        };
        out.push(Completion {
            user_data: slot.user_data,
            result,
            op: slot.op.unwrap_or(Op::Read),
            len,
            hint: slot.hint,
            submitted: slot.submitted,
            posted: d.posted_at,
            in_hand,
            by: d.by,
            buf: slot.buf.take(),
        });
        slot.busy = false;
        self.polled_in_flight -= usize::from(slot.polled);
        self.free.push(d.slot);
        self.in_flight -= 1;
        true
    }

    /// Waits until at least `min` completions (at most those in flight)
    /// were taken, appending them to `out`; returns how many.
    pub fn wait(&mut self, min: usize, mode: WaitMode, out: &mut Vec<Completion>) -> usize {
        self.wait_between(min, usize::MAX, mode, out)
    }

    /// [`Client::wait`] taking at most `max` completions (`max` below
    /// `min` counts as `min`): `io_getevents(min_nr, max_nr)`. Completions
    /// beyond `max` stay delivered for the next call.
    pub fn wait_between(
        &mut self,
        min: usize,
        max: usize,
        mode: WaitMode,
        out: &mut Vec<Completion>,
    ) -> usize {
        let want = min.min(self.in_flight());
        let max = max.max(want);
        let mut taken = self.reap_at_most(max, out);
        while taken < want {
            match mode {
                WaitMode::Spin => std::hint::spin_loop(),
                WaitMode::Block => {
                    let (dq, poll_dq) = (&self.dq, &self.poll_dq);
                    let polled = self.polled_in_flight > 0;
                    let queue = self.channel.queue as usize;
                    // Blocked (or about to be): the thread's core may
                    // idle for it (`crate::activity`).
                    crate::activity::enter(crate::activity::ThreadState::Idle);
                    let outcome = self.channel.waiter.wait(
                        &self.shared.queues[queue].idle,
                        self.channel.index,
                        || !dq.is_empty() || (polled && !poll_dq.is_empty()),
                    );
                    crate::activity::enter(crate::activity::ThreadState::Busy);
                    if outcome.slept {
                        self.wakeups += 1;
                    }
                    if outcome.claimed {
                        irq::handle_on_waiter(&self.shared, queue);
                    }
                }
            }
            taken += self.reap_at_most(max - taken, out);
        }
        taken
    }

    /// Submits one request and blocks until it completes. Only for a
    /// client with nothing else in flight, so no other completion can be
    /// taken by mistake.
    pub fn submit_and_wait(
        &mut self,
        request: Request,
        mode: WaitMode,
    ) -> Result<Completion, EmuError> {
        if self.in_flight() != 0 {
            return Err(EmuError::Config(
                "submit_and_wait needs a client with nothing in flight".into(),
            ));
        }
        self.submit(request)?;
        let mut out = Vec::with_capacity(1);
        self.wait(1, mode, &mut out);
        out.pop()
            .ok_or_else(|| EmuError::Internal("submitted request vanished".into()))
    }
}

/// The address of `request`'s buffer (0: none), refused if shorter than
/// the request.
fn buffer_addr(request: &Request) -> Result<usize, EmuError> {
    if let Some(buf) = &request.buf {
        if buf.len() < request.len as usize {
            return Err(EmuError::Config(format!(
                "buffer of {} bytes is shorter than the request ({} bytes)",
                buf.len(),
                request.len
            )));
        }
    }
    Ok(request.buf.as_ref().map_or(0, IoBuf::addr))
}

impl Drop for Client {
    fn drop(&mut self) {
        // Buffers in flight belong to the kernel or the device until their
        // completion comes back: wait for all of them.
        let mut sink = Vec::with_capacity(self.in_flight);
        while self.in_flight > 0 {
            self.wait(self.in_flight, WaitMode::Block, &mut sink);
            sink.clear();
        }
        if let Some(q) = self.shared.queues.get(self.channel.queue as usize) {
            q.reserved.fetch_sub(self.slots.len(), Ordering::Relaxed);
            q.idle.depart();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::{Queue, QueueMode};

    #[test]
    fn an_abandoned_request_keeps_its_buffer_from_being_reused() {
        let shared = Arc::new(Shared::new(vec![Queue::new(
            QueueMode::Poll,
            Default::default(),
        )]));
        let mut client = Client::register(&shared, 0, 2).expect("client");
        let channel = Arc::clone(shared.channel(0).expect("registered"));
        let mut device_end = channel.sq_rx.take().expect("submission consumer");
        let mut deliver = channel.dq_tx.take().expect("delivery producer");
        for user_data in [1, 2] {
            client
                .submit(Request {
                    op: Op::Read,
                    offset: 0,
                    len: 512,
                    hint: Hint::Urgent,
                    buf: Some(IoBuf::new(512)),
                    user_data,
                })
                .expect("submit");
        }
        // No device runs: play it. The first request is abandoned (the
        // kernel may still write its buffer), the second completes.
        for result in [RESULT_ABANDONED, 512] {
            let entry = device_end.pop().expect("submitted");
            deliver
                .push(Delivery {
                    slot: entry.slot,
                    generation: entry.generation,
                    result,
                    by: DeliveredBy::Poll,
                    posted_at: 0,
                })
                .expect("room");
        }
        let mut out = Vec::new();
        assert_eq!(client.reap(&mut out), 2);
        assert_eq!(out[0].user_data, 1);
        assert_eq!(out[0].result, Err(IoError::Abandoned));
        assert!(
            out[0].buf.is_none(),
            "an abandoned buffer is never handed back"
        );
        assert_eq!(out[1].result, Ok(512));
        assert!(out[1].buf.is_some());
        assert_eq!((client.in_flight(), client.strays()), (0, 0));
    }

    /// `io_getevents(min_nr, max_nr)`: a call takes at most `max_nr`
    /// completions; the others stay delivered, each taken exactly once by
    /// a later call (fio's `iodepth_batch_complete_max`).
    #[test]
    fn a_reap_call_takes_at_most_its_max_and_keeps_the_rest() {
        let shared = Arc::new(Shared::new(vec![Queue::new(
            QueueMode::Poll,
            Default::default(),
        )]));
        let mut client = Client::register(&shared, 0, 8).expect("client");
        let channel = Arc::clone(shared.channel(0).expect("registered"));
        let mut device_end = channel.sq_rx.take().expect("submission consumer");
        let mut deliver = channel.dq_tx.take().expect("delivery producer");
        for user_data in 1..=5 {
            client
                .submit(Request {
                    op: Op::Read,
                    offset: 0,
                    len: 512,
                    hint: Hint::Unmarked,
                    buf: None,
                    user_data,
                })
                .expect("submit");
        }
        for _ in 0..5 {
            let entry = device_end.pop().expect("submitted");
            deliver
                .push(Delivery {
                    slot: entry.slot,
                    generation: entry.generation,
                    result: 512,
                    by: DeliveredBy::Poll,
                    posted_at: 0,
                })
                .expect("room");
        }
        let mut out = Vec::new();
        assert_eq!(client.wait_between(1, 2, WaitMode::Spin, &mut out), 2);
        assert_eq!(client.in_flight(), 3);
        // A max below min counts as min.
        assert_eq!(client.wait_between(3, 1, WaitMode::Spin, &mut out), 3);
        let ids: Vec<u64> = out.iter().map(|c| c.user_data).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5]);
        assert_eq!((client.in_flight(), client.strays()), (0, 0));
        assert_eq!(client.reap(&mut out), 0, "nothing is handed out twice");
    }
}
