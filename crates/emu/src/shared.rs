//! State shared between the device core, the interrupt handlers and the
//! application threads: the entries that travel through the rings, the
//! per-client channel, the per-application-core queue and its interrupt
//! line.

use std::sync::atomic::{
    fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};

use cint_policy::{Hint, Irq, PolicyConfig};
use cint_scenario::tags::TagPool;

use crate::idle::CoreIdle;
use crate::irq::HandlerState;
use crate::ring::{Consumer, Producer};
use crate::sys;

/// `result` of a request the device cancelled at shutdown.
pub(crate) const RESULT_CANCELLED: i64 = i64::MIN;

/// `result` of a request the device gave up on while the kernel may still
/// own its buffer (io_uring at shutdown): the buffer must never be handed
/// back, reused or freed.
pub(crate) const RESULT_ABANDONED: i64 = i64::MIN + 1;

/// Most channels (clients) one emulated device accepts over its life.
pub const MAX_CLIENTS: usize = 1024;

/// Most requests in flight on one application core's queue: the capacity
/// of its completion ring and of the handler's completion-queue model.
pub const MAX_QUEUE_DEPTH: usize = 4096;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Device to memory.
    Read,
    /// Memory to device.
    Write,
}

/// A request on its way from an application thread to the device core.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SubmitEntry {
    /// Index of the client's request slot.
    pub slot: u32,
    /// Generation of that slot, so a stale completion is recognisable.
    pub generation: u32,
    pub op: Op,
    pub hint: Hint,
    pub offset: u64,
    pub len: u32,
    /// Data buffer address (0: none; only the io_uring backend needs one).
    pub buf: usize,
    /// The submitter will poll for this request's completion: on an
    /// interrupt-driven queue the device posts it straight to the
    /// client's poll ring, outside the policy and the completion queue
    /// (Linux's `REQ_POLLED` request, which goes to a poll queue).
    pub polled: bool,
}

/// A request the device core accepted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Accepted {
    pub channel: u32,
    pub queue: u32,
    /// Sequence number the queue's policy handed out (0 in poll mode).
    pub seq: u64,
    pub entry: SubmitEntry,
}

/// A completion-queue entry posted by the device core for a handler.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CqEntry {
    pub channel: u32,
    pub slot: u32,
    pub generation: u32,
    pub hint: Hint,
    /// Bytes transferred, `-errno`, [`RESULT_CANCELLED`] or
    /// [`RESULT_ABANDONED`].
    pub result: i64,
    /// Clock when the device posted it.
    pub posted_at: u64,
}

/// How a completion reached its application thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveredBy {
    /// A full interrupt's handler reaped it.
    FullIrq,
    /// An urgent-only interrupt's handler reaped it (out of order).
    UrgentIrq,
    /// The application found it by polling (no interrupt).
    Poll,
}

impl DeliveredBy {
    pub(crate) fn from_irq(irq: Irq) -> Self {
        match irq {
            Irq::Full => DeliveredBy::FullIrq,
            Irq::UrgentOnly => DeliveredBy::UrgentIrq,
        }
    }
}

/// A completion handed to the client that submitted it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Delivery {
    pub slot: u32,
    pub generation: u32,
    pub result: i64,
    pub by: DeliveredBy,
    /// Clock when the device posted the completion.
    pub posted_at: u64,
}

/// Wakes a thread blocked until something was delivered to it, without a
/// system call when it is not blocked.
#[derive(Default)]
pub(crate) struct Waiter {
    seq: AtomicU32,
    sleeping: AtomicU32,
}

impl Waiter {
    /// Called after publishing a delivery.
    pub fn notify(&self) {
        // The fence pairs with the one in `wait`: either the waiter's
        // readiness check sees the published delivery, or this side sees
        // it sleeping, bumps the word (so its futex_wait cannot block on
        // the stale value) and wakes it. No atomic read-modify-write when
        // nobody sleeps: the common case for pollers.
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) != 0 {
            self.seq.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake(&self.seq);
        }
    }

    /// Wakes the thread for an interrupt that claimed it (see
    /// [`CoreIdle::claim`]): it is inside [`Waiter::wait`], asleep or on
    /// its way in or out, and the bumped word keeps it from blocking.
    pub fn kick(&self) {
        self.seq.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake(&self.seq);
    }

    /// Blocks until `ready()` holds or a notification arrives (may return
    /// spuriously; callers loop). While blocked, the thread counts as not
    /// running on its core (`idle`, as client `channel`), so an interrupt
    /// may claim it to run the handler's pass.
    pub fn wait(&self, idle: &CoreIdle, channel: u32, ready: impl Fn() -> bool) -> WaitOutcome {
        let seen = self.seq.load(Ordering::SeqCst);
        self.sleeping.store(1, Ordering::SeqCst);
        idle.sleep(channel);
        fence(Ordering::SeqCst);
        let slept = !ready() && sys::futex_wait(&self.seq, seen);
        self.sleeping.store(0, Ordering::SeqCst);
        let claimed = idle.wake(channel);
        WaitOutcome { slept, claimed }
    }
}

/// How a [`Waiter::wait`] ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaitOutcome {
    /// The thread slept and was woken: what the results' `wakeups` count.
    pub slept: bool,
    /// An interrupt was delivered to this thread: it must run the
    /// handler's pass ([`crate::irq::handle_on_waiter`]).
    pub claimed: bool,
}

/// A ring end waiting for the thread that will own it: the client's
/// channel is created by the registering thread, and the device core or
/// the interrupt handler takes its end when it adopts the channel.
pub(crate) struct Handoff<T>(Mutex<Option<T>>);

impl<T> Handoff<T> {
    pub fn new(value: T) -> Self {
        Handoff(Mutex::new(Some(value)))
    }

    /// The value, to the first caller only.
    pub fn take(&self) -> Option<T> {
        // A poisoned lock still holds a valid Option: nothing panics while
        // holding it except `take` itself, which cannot.
        match self.0.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }
}

/// One client's private path to the device: the ends of its submission
/// ring and delivery ring that other threads own, and how to wake it. The
/// client itself holds the submission ring's producer and the delivery
/// ring's consumer.
pub(crate) struct Channel {
    pub index: u32,
    pub queue: u32,
    /// The submission ring's consumer, for the device core.
    pub sq_rx: Handoff<Consumer<SubmitEntry>>,
    /// The delivery ring's producer, for whoever delivers on this queue:
    /// the device core in poll mode, the queue's handler otherwise.
    pub dq_tx: Handoff<Producer<Delivery>>,
    /// The poll ring's producer, for the device core of an
    /// interrupt-driven queue: where it posts the requests submitted as
    /// polled ([`SubmitEntry::polled`]). The handler owns `dq_tx` there,
    /// and a ring has one producer.
    pub poll_tx: Handoff<Producer<Delivery>>,
    pub waiter: Waiter,
    /// Set when freed tags woke this client from its wait for one
    /// ([`Shared::free_tags`]); taken by the client as it tries again.
    pub tag_woken: AtomicBool,
    /// `u64::MAX` while the device accepts submissions; at shutdown, how
    /// many submissions the device consumed from the submission ring
    /// before sealing it.
    pub sealed_at: AtomicU64,
}

/// How a queue reports completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueMode {
    /// Interrupts, when this policy says so.
    Interrupt(PolicyConfig),
    /// No interrupts: clients find completions by polling.
    Poll,
}

/// Pending interrupt bits, as an interrupt controller latches them.
pub(crate) const IRQ_FULL: u32 = 1;
pub(crate) const IRQ_URGENT: u32 = 2;
/// Not an interrupt: the device's last wake-up of the handler thread at
/// shutdown. Only the handler thread takes it.
pub(crate) const IRQ_FINISH: u32 = 4;

/// Where an interrupt goes when it finds the application core idle
/// (docs/EMULATOR-DESIGN.md, "Interrupts on an idle core").
pub use cint_scenario::emu_config::IdleDelivery;

/// One application core's queue pair, its interrupt line and counters.
/// (The completion ring's writing end is not here: it belongs to the
/// device core; its reading end is in `handler`.)
pub(crate) struct Queue {
    pub mode: QueueMode,
    pub idle_delivery: IdleDelivery,
    /// What runs on the application core, as far as the emulator knows.
    pub idle: CoreIdle,
    /// The handler's state (completion ring, completion-queue model,
    /// delivery rings), shared by the handler thread and any waiting
    /// thread an interrupt is delivered to; set at start for interrupt
    /// queues.
    pub handler: OnceLock<Mutex<HandlerState>>,
    /// The completion queue's head doorbell: the position up to which the
    /// handler has released entries to the device (its completion-queue
    /// model's head). The device never lets more than `MAX_QUEUE_DEPTH`
    /// positions separate its tail from this, see `DeviceCore::post`.
    pub cq_head: AtomicU64,
    /// Latched interrupt bits; the futex word the handler sleeps on.
    pub pending: AtomicU32,
    pub handler_sleeping: AtomicU32,
    /// The device posted its last completion; the handler exits once it
    /// has delivered everything.
    pub finished: AtomicBool,
    /// Request slots promised to this queue's clients (bounded by the
    /// completion ring, so the device never finds it full).
    pub reserved: AtomicUsize,
    /// Full interrupts raised. Each kind has its own counter, so that a
    /// snapshot taken while the device runs always has a total equal to
    /// the sum of its kinds (one shared total, bumped apart from the kind,
    /// can be read between the two increments).
    pub full_irqs: AtomicU64,
    /// Urgent-only interrupts raised.
    pub urgent_irqs: AtomicU64,
    /// Full interrupts the device raised because the completion queue's
    /// window was full (also counted in `full_irqs`).
    pub queue_full_irqs: AtomicU64,
    /// Times the handler slept and was woken by an interrupt.
    pub handler_wakeups: AtomicU64,
    /// Interrupts delivered to a waiting thread on the idle core instead
    /// of the handler thread.
    pub waiter_irqs: AtomicU64,
    pub completions: AtomicU64,
    pub handler_tid: AtomicI32,
    /// The handler thread's CPU-time clock, for per-thread accounting.
    pub handler_clock: OnceLock<libc::clockid_t>,
    /// Where the application core is an SMT sibling of another: the
    /// activity clocks (its CPU's, its core's) the handler reports its
    /// running and blocking to (`crate::activity`).
    pub activity: OnceLock<crate::activity::ClockPair>,
    /// The block layer's driver tags of the queue, when set
    /// ([`crate::Emulator::limit_tags`]): a submitter takes one per
    /// request and sleeps when none is free; a completion handled by the
    /// handler, or reaped by its poller, frees its tag.
    pub tags: OnceLock<Mutex<TagPool>>,
}

impl Queue {
    pub fn new(mode: QueueMode, idle_delivery: IdleDelivery) -> Self {
        Queue {
            mode,
            idle_delivery,
            idle: CoreIdle::default(),
            handler: OnceLock::new(),
            cq_head: AtomicU64::new(0),
            pending: AtomicU32::new(0),
            handler_sleeping: AtomicU32::new(0),
            finished: AtomicBool::new(false),
            reserved: AtomicUsize::new(0),
            full_irqs: AtomicU64::new(0),
            urgent_irqs: AtomicU64::new(0),
            queue_full_irqs: AtomicU64::new(0),
            handler_wakeups: AtomicU64::new(0),
            waiter_irqs: AtomicU64::new(0),
            completions: AtomicU64::new(0),
            handler_tid: AtomicI32::new(0),
            handler_clock: OnceLock::new(),
            activity: OnceLock::new(),
            tags: OnceLock::new(),
        }
    }

    /// Latches an interrupt; true if the handler thread sleeps, so that
    /// someone must be woken to handle it.
    fn latch(&self, irq: Irq) -> bool {
        // Counted by kind first, before any counter that counts a part of
        // the interrupts (waiter, queue-full): SeqCst, so that a snapshot
        // reading the parts before the kinds never finds a part larger
        // than its whole (see `Emulator::stats`).
        let bit = match irq {
            Irq::Full => {
                self.full_irqs.fetch_add(1, Ordering::SeqCst);
                IRQ_FULL
            }
            Irq::UrgentOnly => {
                self.urgent_irqs.fetch_add(1, Ordering::SeqCst);
                IRQ_URGENT
            }
        };
        self.pending.fetch_or(bit, Ordering::SeqCst);
        // Pairs with the handler's fence between announcing its sleep and
        // checking `pending`: either it sees the bit, or this sees it
        // asleep.
        fence(Ordering::SeqCst);
        self.handler_sleeping.load(Ordering::SeqCst) != 0
    }

    /// Wakes the handler for the last time, without counting an interrupt.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::SeqCst);
        self.pending.fetch_or(IRQ_FINISH, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        sys::futex_wake(&self.pending);
    }
}

/// Everything the device core, the handlers and the clients share.
pub(crate) struct Shared {
    pub queues: Vec<Queue>,
    pub channels: Box<[OnceLock<Arc<Channel>>]>,
    /// Channels published in `channels` (a prefix).
    pub registered: AtomicUsize,
    pub register_lock: Mutex<()>,
    /// Set by the owner to stop the device.
    pub stopping: AtomicBool,
    pub device_tid: AtomicI32,
    /// Completions the device core posted, all queues.
    pub device_completions: AtomicU64,
    /// Requests the device cancelled at shutdown.
    pub cancelled: AtomicU64,
    /// Handlers that got real-time priority.
    pub realtime_handlers: AtomicUsize,
}

impl Shared {
    pub fn new(queues: Vec<Queue>) -> Self {
        Shared {
            queues,
            channels: (0..MAX_CLIENTS).map(|_| OnceLock::new()).collect(),
            registered: AtomicUsize::new(0),
            register_lock: Mutex::new(()),
            stopping: AtomicBool::new(false),
            device_tid: AtomicI32::new(0),
            device_completions: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            realtime_handlers: AtomicUsize::new(0),
        }
    }

    /// `n` requests of queue `queue` are done with their tags: the
    /// sleepers a batch of them wakes are told, each by its channel.
    /// `by_handler`: the caller is the queue's handler pass, which may
    /// sleep for the pool's lock ([`lock_tags`]).
    pub fn free_tags(&self, queue: usize, n: u32, by_handler: bool) {
        if n == 0 {
            return;
        }
        let Some(pool) = self.queues.get(queue).and_then(|q| q.tags.get()) else {
            return;
        };
        let mut woken = Vec::new();
        if let Some(mut pool) = lock_tags(pool, by_handler) {
            for _ in 0..n {
                pool.put(&mut woken);
            }
        }
        for index in woken {
            if let Some(channel) = self.channel(index) {
                channel.tag_woken.store(true, Ordering::SeqCst);
                channel.waiter.notify();
            }
        }
    }

    pub fn channel(&self, index: u32) -> Option<&Arc<Channel>> {
        self.channels.get(index as usize).and_then(OnceLock::get)
    }

    /// Raises an interrupt on queue `index` (the emulated inter-processor
    /// interrupt): latches it, and if the handler thread sleeps wakes
    /// either the core's idle waiting thread (see [`IdleDelivery`]) or
    /// the handler thread. A handler that is running finds the latched
    /// bits on its next pass.
    pub fn raise(&self, index: usize, irq: Irq) {
        let queue = &self.queues[index];
        if !queue.latch(irq) {
            return;
        }
        if queue.idle_delivery == IdleDelivery::Waiter {
            if let Some(channel) = queue.idle.claim() {
                if let Some(ch) = self.channel(channel) {
                    queue.waiter_irqs.fetch_add(1, Ordering::SeqCst);
                    ch.waiter.kick();
                    return;
                }
            }
        }
        sys::futex_wake(&queue.pending);
    }

    /// A full interrupt the device raises on its own when the completion
    /// queue's window is full, so that the handler's full reap frees it.
    pub fn raise_queue_full(&self, index: usize) {
        self.raise(index, Irq::Full);
        // After the full interrupt is counted, as a part of it.
        self.queues[index]
            .queue_full_irqs
            .fetch_add(1, Ordering::SeqCst);
    }
}

/// Locks `mutex` whether or not a panicking thread poisoned it: for state
/// whose every change under the lock is one step (a push, a drain, a
/// flag, a count), which a panic leaves whole; the coordinator reports
/// the panic when it joins that thread.
pub(crate) fn lock_whole<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`Condvar::wait`](std::sync::Condvar::wait) on a lock taken by
/// [`lock_whole`], as whole.
pub(crate) fn wait_whole<'a, T>(
    cond: &std::sync::Condvar,
    guard: MutexGuard<'a, T>,
) -> MutexGuard<'a, T> {
    cond.wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The lock of a queue's tags. Linux takes and frees tags without a lock
/// (sbitmap's atomic bits), so a submitter or a poller never sleeps for
/// one there: a client thread that finds the lock held yields to its
/// holder (on a shared core, the thread the scheduler had preempted
/// holding it) rather than sleep on it, which would count as a voluntary
/// switch no kernel makes. The interrupt handler sleeps on it instead
/// (`sleep`): at real-time priority a yield would never let a holder of
/// normal priority on its core run. `None` if a holder panicked.
pub(crate) fn lock_tags(pool: &Mutex<TagPool>, sleep: bool) -> Option<MutexGuard<'_, TagPool>> {
    if sleep {
        return pool.lock().ok();
    }
    loop {
        match pool.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(_)) => return None,
            Err(TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
}
