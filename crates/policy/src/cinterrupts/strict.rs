//! Bookkeeping for strict Barriers: which completion makes "every request
//! submitted before the Barrier has completed" true, in a fixed inline
//! table and in `O(log capacity)` per completion.
//!
//! The tracked Barriers, in submission order, cut the sequence numbers into
//! segments: the segment of Barrier `k` holds the requests submitted after
//! Barrier `k - 1` (that Barrier included) and before Barrier `k`. Each
//! entry counts the requests of its segment still in flight; the requests
//! after the last Barrier are counted by `open_segment`. A completion
//! decrements the one segment it falls in. Barrier `k`'s predecessors have
//! all completed exactly when every segment up to `k` is empty and every
//! earlier Barrier has completed, so Barriers are released from the front:
//! the oldest entry leaves once it has completed and its segment is empty.
//! This is the per-Barrier "earlier requests in flight" count, kept as
//! differences between neighbours so that a completion touches one entry
//! instead of all of them.

use crate::Seq;

/// How many strict Barriers can wait at once per queue; further ones are
/// handled as relaxed (see `Cinterrupts::strict_overflows`).
pub const STRICT_BARRIER_CAPACITY: usize = 32;

// Ring indices wrap with a mask.
const _: () = assert!(STRICT_BARRIER_CAPACITY.is_power_of_two());
const MASK: usize = STRICT_BARRIER_CAPACITY - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    seq: Seq,
    /// Requests of this Barrier's segment still in flight.
    segment_in_flight: u32,
    /// The Barrier request itself has completed.
    completed: bool,
    /// The Barrier completed before its predecessors and owes a full
    /// interrupt when they are done.
    fire_on_release: bool,
}

const EMPTY: Entry = Entry {
    seq: 0,
    segment_in_flight: 0,
    completed: false,
    fire_on_release: false,
};

/// What the completion of a request means for the Barrier it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OwnBarrier {
    /// The request is not a tracked Barrier.
    NotTracked,
    /// A tracked Barrier whose predecessors have all completed.
    Ready,
    /// A tracked Barrier that now waits for its predecessors.
    Waiting,
}

/// The outcome of one completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Settled {
    /// What the completing request itself is.
    pub own: OwnBarrier,
    /// A waiting Barrier (one that asked for it) saw its last
    /// predecessor complete: a full interrupt is owed now.
    pub released: bool,
}

/// Tracked strict Barriers in a ring, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StrictBarriers {
    ring: [Entry; STRICT_BARRIER_CAPACITY],
    head: usize,
    len: usize,
    /// Requests submitted after the last tracked Barrier (or all, with
    /// none tracked) still in flight.
    open_segment: u32,
}

impl StrictBarriers {
    pub(super) const fn new() -> Self {
        StrictBarriers {
            ring: [EMPTY; STRICT_BARRIER_CAPACITY],
            head: 0,
            len: 0,
            open_segment: 0,
        }
    }

    /// Barriers tracked now.
    pub(super) const fn len(&self) -> usize {
        self.len
    }

    fn at(&self, logical: usize) -> &Entry {
        &self.ring[(self.head + logical) & MASK]
    }

    fn at_mut(&mut self, logical: usize) -> &mut Entry {
        &mut self.ring[(self.head + logical) & MASK]
    }

    /// Records the submission of `seq`. A Barrier is tracked if there is
    /// room; returns false for a Barrier that found the table full.
    pub(super) fn submit(&mut self, seq: Seq, barrier: bool) -> bool {
        if barrier && self.len < STRICT_BARRIER_CAPACITY {
            let before = self.open_segment;
            let len = self.len;
            *self.at_mut(len) = Entry {
                seq,
                segment_in_flight: before,
                ..EMPTY
            };
            self.len += 1;
            // The Barrier request opens the next segment.
            self.open_segment = 1;
            return true;
        }
        self.open_segment = self.open_segment.saturating_add(1);
        !barrier
    }

    /// Records the completion of `seq`. `wants_irq` says whether a tracked
    /// Barrier completing before its predecessors should owe a full
    /// interrupt on release (false when it is being handled as unmarked).
    pub(super) fn complete(&mut self, seq: Seq, wants_irq: bool) -> Settled {
        // Entries are sorted by seq: find the first Barrier after `seq`.
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.at(mid).seq <= seq {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let segment = if lo < self.len {
            &mut self.at_mut(lo).segment_in_flight
        } else {
            &mut self.open_segment
        };
        *segment = segment.saturating_sub(1);

        let mut own = OwnBarrier::NotTracked;
        if lo > 0 && self.at(lo - 1).seq == seq {
            let index = lo - 1;
            let ready = index == 0 && self.at(0).segment_in_flight == 0;
            let entry = self.at_mut(index);
            entry.completed = true;
            entry.fire_on_release = wants_irq && !ready;
            own = if ready {
                OwnBarrier::Ready
            } else {
                OwnBarrier::Waiting
            };
        }

        let mut released = false;
        while self.len > 0 && self.at(0).completed && self.at(0).segment_in_flight == 0 {
            released |= self.at(0).fire_on_release;
            self.head = (self.head + 1) & MASK;
            self.len -= 1;
        }
        Settled { own, released }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_release_in_order_once_their_segments_drain() {
        let mut t = StrictBarriers::new();
        // 0, B1, 2, B3 submitted; 4 after.
        assert!(t.submit(0, false));
        assert!(t.submit(1, true));
        assert!(t.submit(2, false));
        assert!(t.submit(3, true));
        assert!(t.submit(4, false));
        let waiting = |own| Settled {
            own,
            released: false,
        };
        assert_eq!(t.complete(3, true), waiting(OwnBarrier::Waiting));
        assert_eq!(t.complete(4, true), waiting(OwnBarrier::NotTracked));
        assert_eq!(t.complete(1, true), waiting(OwnBarrier::Waiting));
        assert_eq!(t.complete(2, true), waiting(OwnBarrier::NotTracked));
        assert_eq!(t.len(), 2);
        // Request 0 releases both Barriers at once.
        let s = t.complete(0, true);
        assert_eq!(
            (s.own, s.released, t.len()),
            (OwnBarrier::NotTracked, true, 0)
        );
    }

    #[test]
    fn a_barrier_at_the_front_with_an_empty_segment_is_ready() {
        let mut t = StrictBarriers::new();
        assert!(t.submit(0, false));
        assert_eq!(t.complete(0, true).own, OwnBarrier::NotTracked);
        assert!(t.submit(1, true));
        assert!(t.submit(2, false));
        let s = t.complete(1, true);
        assert_eq!((s.own, s.released, t.len()), (OwnBarrier::Ready, false, 0));
    }

    #[test]
    fn an_incomplete_earlier_barrier_holds_a_later_one() {
        let mut t = StrictBarriers::new();
        assert!(t.submit(0, true));
        assert!(t.submit(1, true));
        assert_eq!(t.complete(1, true).own, OwnBarrier::Waiting);
        let s = t.complete(0, true);
        // Barrier 0 is ready at once; Barrier 1 is released by it.
        assert_eq!((s.own, s.released, t.len()), (OwnBarrier::Ready, true, 0));
    }

    #[test]
    fn a_barrier_handled_as_unmarked_owes_nothing() {
        let mut t = StrictBarriers::new();
        assert!(t.submit(0, false));
        assert!(t.submit(1, true));
        assert_eq!(t.complete(1, false).own, OwnBarrier::Waiting);
        assert!(!t.complete(0, true).released);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn the_table_overflows_and_wraps() {
        let mut t = StrictBarriers::new();
        let mut seq = 0;
        for _ in 0..3 {
            for _ in 0..STRICT_BARRIER_CAPACITY {
                assert!(t.submit(seq, true));
                seq += 1;
            }
            assert!(!t.submit(seq, true), "the table is full");
            seq += 1;
            // Complete everything, newest first: all wait, then the oldest
            // releases the rest.
            for s in (seq - STRICT_BARRIER_CAPACITY as u64 - 1..seq)
                .rev()
                .skip(1)
            {
                let _ = t.complete(s, true);
            }
            assert_eq!(t.complete(seq - 1, true).own, OwnBarrier::NotTracked);
            assert_eq!(t.len(), 0);
        }
    }
}
