//! The discrete-event core: an integer-nanosecond clock, a priority queue
//! of events with deterministic tie-breaking, and seeded random streams.
//!
//! Ties between events scheduled for the same instant break by insertion
//! order, so a run depends only on the scenario and the seed. Randomness is
//! split into independent streams, one per thread and one per device queue,
//! each seeded from `(run seed, stream id)`: adding a job leaves the other
//! jobs' draws untouched.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

#[derive(Clone, Copy, Debug)]
struct Scheduled {
    at: Nanos,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl Eq for Scheduled {}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (then the
        // first inserted) comes out first.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The event queue and the clock.
///
/// Time never goes backwards: an event scheduled before the current
/// instant is a simulator bug (a cost or a deadline computed from a stale
/// time). It is not silently moved to now, which would hide the bug; it is
/// dropped and recorded as a violation that the run reports.
#[derive(Debug)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Scheduled>,
    next_seq: u64,
    now: Nanos,
    processed: u64,
    /// The first attempt to schedule in the past (or to pop an event
    /// from the past), if any.
    violation: Option<String>,
}

impl EventQueue {
    /// An empty queue at time zero; `capacity` avoids regrowth in steady
    /// state.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
            now: 0,
            processed: 0,
            violation: None,
        }
    }

    /// The current simulated time.
    pub(crate) fn now(&self) -> Nanos {
        self.now
    }

    /// Events handed out so far.
    pub(crate) fn processed(&self) -> u64 {
        self.processed
    }

    /// Schedules `event` at `at` (now or later). An instant in the past
    /// is refused: the event is dropped and the violation recorded for
    /// [`EventQueue::violation`].
    pub(crate) fn schedule(&mut self, at: Nanos, event: Event) {
        if at < self.now {
            self.fail(format!(
                "time would go backwards: {event:?} scheduled at {at} ns, now is {} ns",
                self.now
            ));
            return;
        }
        self.heap.push(Scheduled {
            at,
            seq: self.next_seq,
            event,
        });
        self.next_seq += 1;
    }

    /// The next event if it happens strictly before `end`; advances the
    /// clock to it.
    pub(crate) fn pop_before(&mut self, end: Nanos) -> Option<(Nanos, Event)> {
        let top = self.heap.peek()?;
        if top.at >= end {
            return None;
        }
        let next = self.heap.pop()?;
        if next.at < self.now {
            // Unreachable while `schedule` refuses the past; checked
            // anyway because the whole model relies on it.
            self.fail(format!(
                "time went backwards: {:?} at {} ns popped at {} ns",
                next.event, next.at, self.now
            ));
            return None;
        }
        self.now = next.at;
        self.processed += 1;
        Some((next.at, next.event))
    }

    /// The first time violation seen, if any.
    pub(crate) fn violation(&self) -> Option<&str> {
        self.violation.as_deref()
    }

    fn fail(&mut self, msg: String) {
        if self.violation.is_none() {
            self.violation = Some(msg);
        }
    }

    /// Moves the clock to `end` (after the last event before it).
    pub(crate) fn advance_to(&mut self, end: Nanos) {
        self.now = self.now.max(end);
    }
}

/// Stream ids: threads use `(job << 16) | thread`, device queues a disjoint
/// range above.
pub(crate) const DEVICE_STREAM_BASE: u64 = 1 << 40;
/// The host's cost spread draws from streams of its own, so that turning
/// it on leaves every offset and media time as it was: one per core for
/// its interrupt handlers, `HOST_CORE_STREAM_BASE + core`, ...
pub(crate) const HOST_CORE_STREAM_BASE: u64 = 1 << 41;
/// ... and one per thread, `HOST_THREAD_STREAM_BASE | (job << 16) | thread`.
pub(crate) const HOST_THREAD_STREAM_BASE: u64 = 1 << 42;

/// The random stream `stream` of a run seeded with `seed`.
pub(crate) fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
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
