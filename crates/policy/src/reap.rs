//! The driver side of out-of-order Urgent processing (docs/ALGORITHMS.md section 4):
//! which completion-queue entries an interrupt handler reaps.
//!
//! [`CompletionQueue`] models one NVMe completion queue of `N` slots as the
//! host driver sees it. The device posts entries at the tail. A full
//! interrupt reaps every entry not reaped yet, from head to tail; an
//! urgent-only interrupt reaps only the Urgent ones and marks them with a
//! "completed" bit, as the reference implementation marks the command
//! identifier, so that the next full interrupt skips them. The head (what
//! the driver writes to the doorbell) only advances over a contiguous
//! prefix of reaped entries, because the device may reuse every slot the
//! head has passed. No entry is delivered twice and none is lost.
//!
//! Unlike a real NVMe queue, which keeps one slot empty to tell full from
//! empty, all `N` slots are usable here: positions are counted with 64-bit
//! counters, so fullness is `tail - head == N`.

use core::fmt;

use crate::{Hint, Irq};

/// The device tried to post into a completion queue whose every slot is
/// still owned by the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFull {
    /// The tag of the entry that could not be posted.
    pub tag: u64,
}

impl fmt::Display for QueueFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "completion queue full: entry {} not posted", self.tag)
    }
}

impl core::error::Error for QueueFull {}

/// One posted entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Entry {
    tag: u64,
    hint: Hint,
    /// The "completed" bit: already handed to the driver.
    reaped: bool,
}

/// A completion queue of `N` slots with OOO-aware reaping.
///
/// # Example
///
/// ```
/// use cint_policy::reap::CompletionQueue;
/// use cint_policy::{Hint, Irq};
///
/// let mut cq = CompletionQueue::<8>::new();
/// cq.post(1, Hint::Unmarked)?;
/// cq.post(2, Hint::Urgent)?;
/// let mut reaped = Vec::new();
/// // An urgent-only interrupt takes the Urgent entry and leaves the other;
/// // the head cannot pass the entry still waiting.
/// cq.reap(Irq::UrgentOnly, |tag, _| reaped.push(tag));
/// assert_eq!((reaped.as_slice(), cq.pending(), cq.head()), (&[2][..], 1, 0));
/// // The next full interrupt takes the rest, never entry 2 twice.
/// cq.reap(Irq::Full, |tag, _| reaped.push(tag));
/// assert_eq!((reaped.as_slice(), cq.pending(), cq.head()), (&[2, 1][..], 0, 2));
/// # Ok::<(), cint_policy::reap::QueueFull>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionQueue<const N: usize> {
    entries: [Entry; N],
    /// Position (not slot index) of the oldest entry the host still owns.
    head: u64,
    /// Position the device posts to next.
    tail: u64,
    /// Entries between head and tail not reaped yet.
    pending: usize,
    /// Of those, the Urgent ones.
    pending_urgent: usize,
}

impl<const N: usize> Default for CompletionQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> CompletionQueue<N> {
    /// An empty queue. With `N = 0` every post fails.
    pub const fn new() -> Self {
        CompletionQueue {
            entries: [Entry {
                tag: 0,
                hint: Hint::Unmarked,
                reaped: false,
            }; N],
            head: 0,
            tail: 0,
            pending: 0,
            pending_urgent: 0,
        }
    }

    /// Slots in the queue.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// The head doorbell value: slot index of the oldest entry the host
    /// has not released to the device.
    pub const fn head(&self) -> usize {
        slot(self.head, N)
    }

    /// The slot index the device posts to next.
    pub const fn tail(&self) -> usize {
        slot(self.tail, N)
    }

    /// Slots owned by the host: posted and not yet passed by the head
    /// (reaped out of order or not reaped at all).
    pub const fn occupied(&self) -> usize {
        (self.tail - self.head) as usize
    }

    /// Entries posted and not delivered yet.
    pub const fn pending(&self) -> usize {
        self.pending
    }

    /// Urgent entries posted and not delivered yet.
    pub const fn pending_urgent(&self) -> usize {
        self.pending_urgent
    }

    /// The device posts an entry carrying the caller's `tag` and the
    /// request's hint.
    pub fn post(&mut self, tag: u64, hint: Hint) -> Result<(), QueueFull> {
        if self.occupied() >= N {
            return Err(QueueFull { tag });
        }
        self.entries[slot(self.tail, N)] = Entry {
            tag,
            hint,
            reaped: false,
        };
        self.tail += 1;
        self.pending += 1;
        if hint == Hint::Urgent {
            self.pending_urgent += 1;
        }
        Ok(())
    }

    /// Runs the interrupt handler for `irq`, handing every entry it reaps
    /// to `deliver(tag, hint)` in queue order. Returns how many it reaped.
    pub fn reap(&mut self, irq: Irq, deliver: impl FnMut(u64, Hint)) -> usize {
        match irq {
            Irq::Full => self.reap_all(deliver),
            Irq::UrgentOnly => self.reap_urgent(deliver),
        }
    }

    /// A full interrupt: every unreaped entry, head to tail; the head then
    /// reaches the tail.
    pub fn reap_all(&mut self, mut deliver: impl FnMut(u64, Hint)) -> usize {
        let mut reaped = 0;
        for pos in self.head..self.tail {
            let entry = &mut self.entries[slot(pos, N)];
            if !entry.reaped {
                entry.reaped = true;
                deliver(entry.tag, entry.hint);
                reaped += 1;
            }
        }
        self.head = self.tail;
        self.pending = 0;
        self.pending_urgent = 0;
        reaped
    }

    /// An urgent-only interrupt: only unreaped Urgent entries; the head
    /// advances over the reaped prefix and stops at the first entry still
    /// waiting.
    pub fn reap_urgent(&mut self, mut deliver: impl FnMut(u64, Hint)) -> usize {
        let mut reaped = 0;
        if self.pending_urgent > 0 {
            for pos in self.head..self.tail {
                let entry = &mut self.entries[slot(pos, N)];
                if !entry.reaped && entry.hint == Hint::Urgent {
                    entry.reaped = true;
                    deliver(entry.tag, entry.hint);
                    reaped += 1;
                }
            }
            self.pending -= reaped;
            self.pending_urgent = 0;
        }
        while self.head < self.tail && self.entries[slot(self.head, N)].reaped {
            self.head += 1;
        }
        reaped
    }
}

/// Slot index of a position; `N = 0` never reaches an index.
const fn slot(pos: u64, n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (pos % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects delivered tags into a fixed buffer (the crate has no alloc).
    struct Sink {
        tags: [u64; 16],
        len: usize,
    }

    impl Sink {
        fn new() -> Self {
            Sink {
                tags: [0; 16],
                len: 0,
            }
        }
        fn push(&mut self, tag: u64) {
            self.tags[self.len] = tag;
            self.len += 1;
        }
        fn take(&mut self) -> &[u64] {
            let n = self.len;
            self.len = 0;
            &self.tags[..n]
        }
    }

    #[test]
    fn full_irq_reaps_everything_in_order() {
        let mut cq = CompletionQueue::<4>::new();
        let mut sink = Sink::new();
        cq.post(10, Hint::Unmarked).unwrap();
        cq.post(11, Hint::Urgent).unwrap();
        cq.post(12, Hint::Barrier).unwrap();
        assert_eq!(cq.pending(), 3);
        assert_eq!(cq.reap(Irq::Full, |t, _| sink.push(t)), 3);
        assert_eq!(sink.take(), &[10, 11, 12]);
        assert_eq!(
            (cq.head(), cq.tail(), cq.pending(), cq.occupied()),
            (3, 3, 0, 0)
        );
    }

    #[test]
    fn urgent_in_the_middle_holds_the_head_then_full_irq_skips_it() {
        let mut cq = CompletionQueue::<8>::new();
        let mut sink = Sink::new();
        cq.post(1, Hint::Unmarked).unwrap();
        cq.post(2, Hint::Urgent).unwrap();
        cq.post(3, Hint::Unmarked).unwrap();
        assert_eq!(cq.reap(Irq::UrgentOnly, |t, _| sink.push(t)), 1);
        assert_eq!(sink.take(), &[2]);
        // Entry 1 is still unreaped, so the doorbell cannot pass it.
        assert_eq!(cq.head(), 0);
        assert_eq!(
            (cq.pending(), cq.pending_urgent(), cq.occupied()),
            (2, 0, 3)
        );
        // A second urgent-only IRQ with nothing urgent delivers nothing.
        assert_eq!(cq.reap(Irq::UrgentOnly, |t, _| sink.push(t)), 0);
        assert_eq!(cq.reap(Irq::Full, |t, _| sink.push(t)), 2);
        assert_eq!(sink.take(), &[1, 3]);
        assert_eq!((cq.head(), cq.tail(), cq.pending()), (3, 3, 0));
    }

    #[test]
    fn urgent_at_the_head_advances_over_the_contiguous_reaped_prefix() {
        let mut cq = CompletionQueue::<8>::new();
        let mut sink = Sink::new();
        cq.post(1, Hint::Urgent).unwrap();
        cq.post(2, Hint::Urgent).unwrap();
        cq.post(3, Hint::Unmarked).unwrap();
        cq.post(4, Hint::Urgent).unwrap();
        assert_eq!(cq.reap_urgent(|t, _| sink.push(t)), 3);
        assert_eq!(sink.take(), &[1, 2, 4]);
        // Head passes 1 and 2, stops at 3; 4 is reaped but not released.
        assert_eq!((cq.head(), cq.occupied(), cq.pending()), (2, 2, 1));
        cq.post(5, Hint::Unmarked).unwrap();
        assert_eq!(cq.reap_all(|t, _| sink.push(t)), 2);
        assert_eq!(sink.take(), &[3, 5]);
        assert_eq!(cq.occupied(), 0);
    }

    #[test]
    fn wrap_around_keeps_order_and_reaped_bits() {
        let mut cq = CompletionQueue::<4>::new();
        let mut sink = Sink::new();
        for tag in 0..3 {
            cq.post(tag, Hint::Unmarked).unwrap();
        }
        assert_eq!(cq.reap_all(|t, _| sink.push(t)), 3);
        sink.take();
        // Positions 3, 4, 5, 6 live in slots 3, 0, 1, 2.
        cq.post(3, Hint::Unmarked).unwrap();
        cq.post(4, Hint::Urgent).unwrap();
        cq.post(5, Hint::Unmarked).unwrap();
        cq.post(6, Hint::Urgent).unwrap();
        assert_eq!(cq.post(7, Hint::Unmarked), Err(QueueFull { tag: 7 }));
        assert_eq!(cq.reap_urgent(|t, _| sink.push(t)), 2);
        assert_eq!(sink.take(), &[4, 6]);
        assert_eq!((cq.head(), cq.tail()), (3, 3));
        // Still full: the reaped Urgent entries are behind unreaped ones.
        assert!(cq.post(7, Hint::Unmarked).is_err());
        assert_eq!(cq.reap_all(|t, _| sink.push(t)), 2);
        assert_eq!(sink.take(), &[3, 5]);
        assert_eq!((cq.head(), cq.tail(), cq.occupied()), (3, 3, 0));
        cq.post(7, Hint::Urgent).unwrap();
        assert_eq!(cq.tail(), 0);
        assert_eq!(cq.reap_urgent(|t, _| sink.push(t)), 1);
        assert_eq!(sink.take(), &[7]);
        assert_eq!((cq.head(), cq.occupied()), (0, 0));
    }

    #[test]
    fn a_reused_slot_is_delivered_again_only_as_a_new_entry() {
        let mut cq = CompletionQueue::<2>::new();
        let mut sink = Sink::new();
        cq.post(1, Hint::Urgent).unwrap();
        assert_eq!(cq.reap_urgent(|t, _| sink.push(t)), 1);
        cq.post(2, Hint::Unmarked).unwrap();
        cq.post(3, Hint::Urgent).unwrap(); // reuses slot 0
        assert_eq!(cq.reap_all(|t, _| sink.push(t)), 2);
        assert_eq!(sink.take(), &[1, 2, 3]);
    }

    #[test]
    fn zero_capacity_queue_rejects_every_post() {
        let mut cq = CompletionQueue::<0>::new();
        assert_eq!(cq.post(9, Hint::Urgent), Err(QueueFull { tag: 9 }));
        assert_eq!(cq.reap_all(|_, _| unreachable!()), 0);
        assert_eq!(cq.reap_urgent(|_, _| unreachable!()), 0);
        assert_eq!((cq.head(), cq.tail(), cq.pending()), (0, 0, 0));
    }
}
