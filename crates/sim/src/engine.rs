//! The discrete-event core: an integer-nanosecond clock, a priority queue
//! of events with deterministic tie-breaking, and seeded random streams.
//!
//! Ties between events scheduled for the same instant break by insertion
//! order, so a run depends only on the scenario and the seed. Randomness is
//! split into independent streams, one per thread and one per device queue,
//! each seeded from `(run seed, stream id)`: adding a job leaves the other
//! jobs' draws untouched.

use std::collections::VecDeque;

use cint_policy::{Irq, Nanos};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Something that happens at an instant. Indices refer to the world's
/// slabs (requests, threads, cores, queues); tokens let a superseded event
/// be recognised and dropped without searching the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A write's data crossed the device's host-to-device pipe.
    DataIn { req: u32 },
    /// A request's media access ends: its parallel unit is free.
    UnitDone { req: u32 },
    /// The device is done with a request: its completion is posted.
    DeviceDone { req: u32 },
    /// A queue's interrupt policy asked to be consulted at this instant.
    PolicyTimer { queue: u32 },
    /// An interrupt reaches its core (after the delivery latency).
    IrqArrive { queue: u32, irq: Irq },
    /// The segment a core is executing ends, unless superseded.
    CoreDone { core: u32, token: u64 },
    /// A thread's sleep or wait timeout expires (a timer interrupt).
    ThreadTimer { thread: u32, token: u64 },
    /// The scheduler checks whether the running thread used up its slice.
    SliceCheck { core: u32, token: u64 },
    /// The warm-up ends: counters restart.
    WarmupEnd,
    /// A thread asleep for a driver tag is woken by a poll loop that freed
    /// tags (a handler's wake-ups go through its wake list instead).
    Wake { thread: u32 },
    /// A CPU-bound job's thread reaches the end of its `runtime`.
    CpuJobEnd { thread: u32 },
    /// A job that started after the run (a later group, a start delay)
    /// ends its own warm-up: its threads' counters start again.
    JobWindowOpens { job: u32 },
    /// A polling idle state's limit on a CPU: the governor runs again.
    /// Never queued: the energy model keeps these outside the queue and
    /// offers the earliest at each pop ([`EventQueue::pop_before_or`]).
    PollLimit { cpu: u32 },
    /// A timed event of the virtual-machine layer for a guest.
    Virt {
        guest: u32,
        what: crate::virt::VirtEvent,
    },
}

/// A pending event under its key: the instant in the high 64 bits, the
/// insertion number in the low ones, so that one integer comparison
/// orders by time and then by insertion.
#[derive(Clone, Copy, Debug)]
struct Scheduled<E> {
    key: u128,
    event: E,
}

/// An event's key, which orders it: its instant in the high 64 bits,
/// its insertion number in the low ones. [`EventQueue::outside_key`]
/// hands them out for events kept outside the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EventKey(pub(crate) u128);

impl EventKey {
    /// No event: above every real key.
    pub(crate) const NONE: EventKey = EventKey(u128::MAX);

    /// The instant.
    pub(crate) fn at(self) -> Nanos {
        (self.0 >> 64) as Nanos
    }
}

impl<E> Scheduled<E> {
    fn at(&self) -> Nanos {
        (self.key >> 64) as Nanos
    }
}

/// Children per node of the heap: a wide, flat heap takes fewer levels
/// and fewer cache lines per pop than a binary one.
const ARITY: usize = 4;

/// At most this many pending events go to the sorted array ("near"); the
/// others wait in the heap ("far"). A run on one core keeps 6 to 8
/// pending: popping is then taking the first entry, and scheduling moves
/// the few later ones (a new event mostly comes after those pending) down
/// a slot. Many cores keep a few each, too many to move on every
/// schedule.
const NEAR_MAX: usize = 16;

/// Events further ahead than this go to the heap whatever the array
/// holds: a scheduler's slice ends and long timers, milliseconds away and
/// often superseded before they come, would otherwise fill the array that
/// the device's and the cores' microsecond events cycle through.
const NEAR_HORIZON: Nanos = 100_000;

/// Popped entries at the front of the sorted array are dropped in one
/// move once there are this many (or at once when none is left behind
/// them).
const NEAR_COMPACT: usize = 64;

/// The event queue and the clock.
///
/// Time never goes backwards: an event scheduled before the current
/// instant is a simulator bug (a cost or a deadline computed from a stale
/// time). It is not silently moved to now, which would hide the bug; it is
/// dropped and recorded as a violation that the run reports.
///
/// The pending events are keyed by one `u128` per event, (time,
/// insertion number). The next few, at most 16 within 100 us, sit in an
/// array sorted by ascending key (the next event first); the others in a
/// 4-ary min-heap. Which structure holds an event only decides how fast
/// it is found: the next event is the smallest key of the fronts, and keys
/// are unique, so the order in which events come out is fully determined
/// by the keys.
///
/// Events whose instants never decrease from one to the next of their
/// kind (the device's transfer pipe ends its transfers in the order it
/// started them) may go, through [`EventQueue::schedule_in_order`], to a
/// FIFO lane beside: scheduling one is then an append, and the next event
/// is the smaller key of the two fronts, so the order is the same as if
/// everything shared one structure.
///
/// A caller may also keep an event outside the queue under a key taken
/// from it ([`EventQueue::outside_key`]) and offer that key at each pop
/// ([`EventQueue::pop_before_or`]): the energy model's polling limits,
/// armed at nearly every idle entry and dropped at nearly every wake-up,
/// would otherwise move the events behind them in the sorted array at
/// both and at every earlier event scheduled meanwhile. Dropping one is
/// then forgetting it.
///
/// Generic over the event so that benchmarks can replay a run's sequence
/// of schedules and pops through it alone; the simulator's is
/// `EventQueue<Event>`.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// The near events, sorted by ascending key from `head` on.
    near: Vec<Scheduled<E>>,
    /// The entries of `near` before it were popped.
    head: usize,
    /// The far events, a 4-ary min-heap.
    far: Vec<Scheduled<E>>,
    /// Events scheduled in order, their keys increasing.
    lane: VecDeque<Scheduled<E>>,
    next_seq: u64,
    now: Nanos,
    processed: u64,
    /// The first attempt to schedule in the past (or to pop an event
    /// from the past), if any.
    violation: Option<String>,
}

impl<E: Copy + std::fmt::Debug> EventQueue<E> {
    /// An empty queue at time zero; `capacity` avoids regrowth in steady
    /// state.
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            near: Vec::with_capacity(NEAR_COMPACT + NEAR_MAX),
            head: 0,
            far: Vec::with_capacity(capacity),
            // Grown to the most it holds at once, not reserved: a ring
            // cycles through its whole buffer whatever it holds, and a
            // small one stays in the first-level cache.
            lane: VecDeque::new(),
            next_seq: 0,
            now: 0,
            processed: 0,
            violation: None,
        }
    }

    /// The current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Events handed out so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Schedules `event` at `at` (now or later). An instant in the past
    /// is refused: the event is dropped and the violation recorded for
    /// [`EventQueue::violation`].
    #[inline(always)]
    pub fn schedule(&mut self, at: Nanos, event: E) {
        if at < self.now {
            self.refuse_past(at, event);
            return;
        }
        let key = self.take_key(at);
        let entry = Scheduled { key, event };
        if at - self.now < NEAR_HORIZON && self.near.len() - self.head < NEAR_MAX {
            self.sorted_insert(entry);
        } else {
            self.heap_push(entry);
        }
    }

    /// The key of the next event scheduled at `at`.
    #[inline(always)]
    fn take_key(&mut self, at: Nanos) -> u128 {
        let key = (u128::from(at) << 64) | u128::from(self.next_seq);
        self.next_seq += 1;
        key
    }

    /// The key an event at `at` would take if it were scheduled now, for
    /// an event that the caller keeps outside the queue and offers back
    /// at each [`EventQueue::pop_before_or`]: it then comes out in the same
    /// place among the queue's events as if it had been scheduled here.
    /// An instant in the past is refused as [`EventQueue::schedule`]
    /// refuses it.
    #[inline]
    pub(crate) fn outside_key(&mut self, at: Nanos) -> Option<EventKey> {
        if at < self.now {
            self.fail(format!(
                "time would go backwards: a timer outside the queue at {at} ns, now is {} ns",
                self.now
            ));
            return None;
        }
        Some(EventKey(self.take_key(at)))
    }

    /// Inserts into the ascending array: the entries that come out after
    /// it (larger keys, at the end) move down one slot.
    #[inline(always)]
    fn sorted_insert(&mut self, entry: Scheduled<E>) {
        if self.head >= NEAR_COMPACT {
            self.near.drain(..self.head);
            self.head = 0;
        }
        let items = &mut self.near;
        let mut at = items.len();
        while at > self.head && items[at - 1].key > entry.key {
            at -= 1;
        }
        items.insert(at, entry);
    }

    fn heap_push(&mut self, entry: Scheduled<E>) {
        let Scheduled { key, event } = entry;
        // Sift up through a hole: parents move down until the new key's
        // place is found, then it is written once.
        let heap = &mut self.far;
        let mut hole = heap.len();
        heap.push(Scheduled { key, event });
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if heap[parent].key < key {
                break;
            }
            heap[hole] = heap[parent];
            hole = parent;
        }
        heap[hole] = Scheduled { key, event };
    }

    /// [`EventQueue::schedule`] for an event whose instant is no earlier
    /// than that of the last event scheduled this way: it is appended to
    /// the in-order lane. One that is earlier (a caller's promise broken)
    /// goes to the main structure instead, so the order stays right
    /// whatever the caller does.
    #[inline(always)]
    pub fn schedule_in_order(&mut self, at: Nanos, event: E) {
        let in_order = self.lane.back().is_none_or(|last| last.at() <= at);
        if at < self.now || !in_order {
            self.schedule(at, event);
            return;
        }
        let key = self.take_key(at);
        self.lane.push_back(Scheduled { key, event });
    }

    #[cold]
    #[inline(never)]
    fn refuse_past(&mut self, at: Nanos, event: E) {
        self.fail(format!(
            "time would go backwards: {event:?} scheduled at {at} ns, now is {} ns",
            self.now
        ));
    }

    /// Removes the first near event (there is one).
    #[inline(always)]
    fn pop_near(&mut self) -> Scheduled<E> {
        let first = self.near[self.head];
        self.head += 1;
        self.reset_near_if_drained();
        first
    }

    /// Empties the sorted array once nothing live is left in it, so that
    /// the next insertion starts at its front.
    #[inline(always)]
    fn reset_near_if_drained(&mut self) {
        if self.head == self.near.len() {
            self.near.clear();
            self.head = 0;
        }
    }

    /// Removes the heap's root (there is one).
    fn pop_far(&mut self) -> Scheduled<E> {
        let Some(last) = self.far.pop() else {
            unreachable!("pop_far on an empty heap");
        };
        self.heap_pop(last)
    }

    /// The heap's root, `last` (its former last entry) taking its place.
    fn heap_pop(&mut self, last: Scheduled<E>) -> Scheduled<E> {
        let heap = &mut self.far;
        let n = heap.len();
        if n == 0 {
            return last;
        }
        let top = heap[0];
        // Sift the last entry down from the root through a hole.
        let mut hole = 0;
        loop {
            let first = ARITY * hole + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            for c in first + 1..(first + ARITY).min(n) {
                if heap[c].key < heap[best].key {
                    best = c;
                }
            }
            if heap[best].key > last.key {
                break;
            }
            heap[hole] = heap[best];
            hole = best;
        }
        heap[hole] = last;
        top
    }

    /// The next event if it happens strictly before `end`; advances the
    /// clock to it.
    #[inline(always)]
    pub fn pop_before(&mut self, end: Nanos) -> Option<(Nanos, E)> {
        let (near, far, lane) = self.fronts();
        self.pop_first(end, (near, lane), near.min(far).min(lane))
    }

    /// The keys of the sorted array's, the heap's and the lane's first
    /// events (`u128::MAX` where empty: no real key is, instants stay far
    /// below `u64::MAX`).
    #[inline(always)]
    fn fronts(&self) -> (u128, u128, u128) {
        (
            self.near.get(self.head).map_or(u128::MAX, |e| e.key),
            self.far.first().map_or(u128::MAX, |e| e.key),
            self.lane.front().map_or(u128::MAX, |e| e.key),
        )
    }

    /// [`EventQueue::pop_before`] with one more candidate: `event`, which
    /// the caller keeps outside the queue under `key`, a key from
    /// [`EventQueue::outside_key`] (or [`EventKey::NONE`]). Whichever key
    /// is the smallest comes out; the caller drops its outside event
    /// when it gets it.
    #[inline(always)]
    pub(crate) fn pop_before_or(
        &mut self,
        end: Nanos,
        key: EventKey,
        event: E,
    ) -> Option<(Nanos, E)> {
        let (near, far, lane) = self.fronts();
        let queued = near.min(far).min(lane);
        if key.0 < queued {
            let at = key.at();
            if at >= end {
                return None;
            }
            if at < self.now {
                self.refuse_popped_past(at, event);
                return None;
            }
            self.now = at;
            self.processed += 1;
            return Some((at, event));
        }
        self.pop_first(end, (near, lane), queued)
    }

    /// Pops the queue's event under `key`, the smallest of its fronts
    /// (the sorted array's and the lane's given), if it happens before
    /// `end`.
    #[inline(always)]
    fn pop_first(
        &mut self,
        end: Nanos,
        (near, lane): (u128, u128),
        key: u128,
    ) -> Option<(Nanos, E)> {
        // No real key is u128::MAX: instants stay far below u64::MAX.
        if key == u128::MAX || (key >> 64) as Nanos >= end {
            return None;
        }
        let next = if key == near {
            self.pop_near()
        } else if key == lane {
            self.lane.pop_front()?
        } else {
            self.pop_far()
        };
        let at = next.at();
        if at < self.now {
            // Unreachable while `schedule` refuses the past; checked
            // anyway because the whole model relies on it.
            self.refuse_popped_past(at, next.event);
            return None;
        }
        self.now = at;
        self.processed += 1;
        Some((at, next.event))
    }

    #[cold]
    #[inline(never)]
    fn refuse_popped_past(&mut self, at: Nanos, event: E) {
        self.fail(format!(
            "time went backwards: {event:?} at {at} ns popped at {} ns",
            self.now
        ));
    }

    /// The first time violation seen, if any.
    pub fn violation(&self) -> Option<&str> {
        self.violation.as_deref()
    }

    fn fail(&mut self, msg: String) {
        if self.violation.is_none() {
            self.violation = Some(msg);
        }
    }

    /// Moves the clock to `end` (after the last event before it).
    pub fn advance_to(&mut self, end: Nanos) {
        self.now = self.now.max(end);
    }
}

/// Stream ids: threads use `(job << 16) | thread`, device queues a disjoint
/// range above.
pub const DEVICE_STREAM_BASE: u64 = 1 << 40;
/// The host's cost spread draws from streams of its own, so that turning
/// it on leaves every offset and media time as it was: one per core for
/// its interrupt handlers, `HOST_CORE_STREAM_BASE + core`, ...
pub(crate) const HOST_CORE_STREAM_BASE: u64 = 1 << 41;
/// ... and one per thread, `HOST_THREAD_STREAM_BASE | (job << 16) | thread`.
pub(crate) const HOST_THREAD_STREAM_BASE: u64 = 1 << 42;
/// The device's binding of requests to striped units.
pub(crate) const DEVICE_UNITS_STREAM: u64 = 1 << 45;
/// Random jobs' offsets, `OFFSET_STREAM_BASE | thread`: apart from the
/// jobs' own streams, so their other draws stay as they were.
pub(crate) const OFFSET_STREAM_BASE: u64 = 1 << 43;

/// The random stream `stream` of a run seeded with `seed`.
pub fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // ChaCha's 2^64 streams are independent by construction.
    rng.set_stream(stream);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn ties_break_by_insertion_order_and_time_is_monotonic() {
        let mut q = EventQueue::with_capacity(8);
        q.schedule(10, Event::WarmupEnd);
        q.schedule(5, Event::PolicyTimer { queue: 1 });
        q.schedule(10, Event::PolicyTimer { queue: 2 });
        q.schedule(5, Event::PolicyTimer { queue: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop_before(100)).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::PolicyTimer { queue: 1 }),
                (5, Event::PolicyTimer { queue: 3 }),
                (10, Event::WarmupEnd),
                (10, Event::PolicyTimer { queue: 2 }),
            ]
        );
        assert_eq!(q.pop_before(100), None);
        assert_eq!(q.violation(), None);
    }

    #[test]
    fn scheduling_in_the_past_is_a_violation_not_a_clamp() {
        let mut q = EventQueue::with_capacity(4);
        q.schedule(10, Event::WarmupEnd);
        assert_eq!(q.pop_before(100), Some((10, Event::WarmupEnd)));
        // Now is 10: the present is fine, the past is not.
        q.schedule(10, Event::PolicyTimer { queue: 0 });
        assert_eq!(q.violation(), None);
        q.schedule(9, Event::PolicyTimer { queue: 1 });
        q.schedule(3, Event::PolicyTimer { queue: 2 });
        let msg = q.violation().expect("a violation is recorded");
        assert!(
            msg.contains("at 9 ns") && msg.contains("now is 10 ns"),
            "{msg}"
        );
        // The past events were dropped, not run at the current time.
        assert_eq!(
            q.pop_before(100),
            Some((10, Event::PolicyTimer { queue: 0 }))
        );
        assert_eq!(q.pop_before(100), None);
        assert_eq!(q.now(), 10);
    }

    /// The next of the queue's events and those kept outside it.
    fn pop_with_outside(
        q: &mut EventQueue<u32>,
        outside: &mut Vec<(EventKey, u32)>,
    ) -> Option<(Nanos, u32)> {
        let Some(k) = (0..outside.len()).min_by_key(|&k| outside[k].0) else {
            return q.pop_before(Nanos::MAX);
        };
        let (key, id) = outside[k];
        let got = q.pop_before_or(Nanos::MAX, key, id);
        if got == Some((key.at(), id)) {
            outside.swap_remove(k);
        }
        got
    }

    #[test]
    fn the_queue_pops_in_time_then_insertion_order_whatever_its_form() {
        // Random schedules and pops (xorshift), checked against a sorted
        // list of (time, insertion number).
        let (mut near_most, mut far_most, mut lane_most) = (0, 0, 0);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q = EventQueue::with_capacity(4);
        let mut model: Vec<(Nanos, u32)> = Vec::new();
        let mut id = 0u32;
        // Events kept outside the queue under its keys, as the energy
        // model keeps its polling limits, some dropped before they come.
        let mut outside: Vec<(EventKey, u32)> = Vec::new();
        let (mut outside_popped, mut outside_dropped) = (0, 0);
        for i in 0..20_000 {
            let r = next();
            if r % 29 == 0 && !outside.is_empty() {
                let (key, id) = outside.swap_remove((r >> 32) as usize % outside.len());
                let k = model
                    .iter()
                    .position(|&e| e == (key.at(), id))
                    .expect("modelled");
                model.remove(k);
                outside_dropped += 1;
                continue;
            }
            // Phases that grow and shrink the queue, so that the sorted
            // array fills and empties.
            let pop = if (i / 64) % 2 == 0 {
                r % 3 == 0
            } else {
                r % 3 != 0
            };
            if pop {
                let before = outside.len();
                let got = pop_with_outside(&mut q, &mut outside);
                outside_popped += before - outside.len();
                let want = (!model.is_empty()).then(|| model.remove(0));
                assert_eq!(got, want);
            } else {
                // Few distinct instants, so that ties are common, some
                // beyond the near horizon; a third through the in-order
                // lane, some of those out of order.
                let mut at = q.now() + (r >> 8) % 16;
                if (r >> 20) % 8 == 0 {
                    at += NEAR_HORIZON - 8;
                }
                match (r >> 16) % 6 {
                    0 | 1 => q.schedule_in_order(at, id),
                    2 => outside.extend(q.outside_key(at).map(|k| (k, id))),
                    _ => q.schedule(at, id),
                }
                near_most = near_most.max(q.near.len() - q.head);
                far_most = far_most.max(q.far.len());
                lane_most = lane_most.max(q.lane.len());
                let pos = model.partition_point(|&(t, _)| t <= at);
                model.insert(pos, (at, id));
                id += 1;
            }
        }
        while let Some(e) = pop_with_outside(&mut q, &mut outside) {
            assert_eq!(e, model.remove(0));
        }
        assert!(model.is_empty() && outside.is_empty());
        assert_eq!(q.violation(), None);
        assert!(
            near_most == NEAR_MAX && far_most > 3 * NEAR_MAX && lane_most > 4,
            "{near_most} {far_most} {lane_most}"
        );
        assert!(
            outside_popped > 100 && outside_dropped > 100,
            "{outside_popped} {outside_dropped}"
        );
    }

    #[test]
    fn pop_before_respects_the_end() {
        let mut q = EventQueue::with_capacity(2);
        q.schedule(50, Event::WarmupEnd);
        assert_eq!(q.pop_before(50), None);
        assert_eq!(q.pop_before(51), Some((50, Event::WarmupEnd)));
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a1 = stream_rng(7, 1).next_u64();
        let a2 = stream_rng(7, 1).next_u64();
        let b = stream_rng(7, 2).next_u64();
        let c = stream_rng(8, 1).next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }
}
