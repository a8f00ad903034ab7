//! A bounded single-producer single-consumer ring of `Copy` entries.
//!
//! Every queue between two threads of the emulator (application thread to
//! device core, device core to interrupt handler, handler to application
//! thread) has exactly one writer and one reader, so two monotonically
//! increasing counters suffice: the producer owns `tail`, the consumer owns
//! `head`. Each side publishes its counter with `Release` and reads the
//! other's with `Acquire`, which orders the slot write before the reader
//! sees it and the slot read before the writer may reuse it. The counters
//! sit on separate cache lines so the two cores do not fight over one line.
//! Capacity is fixed at construction; pushing and popping never allocate.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

/// Keeps a counter alone on its cache line (128 bytes covers adjacent-line
/// prefetch on x86).
#[repr(align(128))]
struct Padded(AtomicU64);

/// A bounded SPSC ring. Safe to share (`Sync`) because the API requires the
/// caller to respect the one-producer, one-consumer discipline: see
/// [`Ring::push`] and [`Ring::pop`].
pub struct Ring<T: Copy> {
    head: Padded,
    tail: Padded,
    mask: u64,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: slots are only written by the single producer before it publishes
// `tail` (Release) and only read by the single consumer after it observed
// that `tail` (Acquire); a slot is rewritten only after the consumer
// published a `head` past it. `T: Copy + Send` values may move between
// threads.
unsafe impl<T: Copy + Send> Sync for Ring<T> {}
// SAFETY: the ring owns plain `Copy` data; moving it moves that data.
unsafe impl<T: Copy + Send> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    /// A ring holding at least `capacity` entries (rounded up to a power of
    /// two, at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.max(1).next_power_of_two();
        let slots = (0..cap)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Ring {
            head: Padded(AtomicU64::new(0)),
            tail: Padded(AtomicU64::new(0)),
            mask: cap as u64 - 1,
            slots,
        }
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Entries currently queued (a snapshot; exact only for the consumer or
    /// producer's own view).
    pub fn len(&self) -> usize {
        let tail = self.tail.0.load(Ordering::Acquire);
        let head = self.head.0.load(Ordering::Acquire);
        tail.wrapping_sub(head) as usize
    }

    /// True if nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries ever pushed (the producer's counter).
    pub fn pushed(&self) -> u64 {
        self.tail.0.load(Ordering::Acquire)
    }

    /// Entries ever popped (the consumer's counter).
    pub fn popped(&self) -> u64 {
        self.head.0.load(Ordering::Acquire)
    }

    /// Appends `value`; gives it back if the ring is full.
    ///
    /// Only one thread at a time may push (the producer).
    pub fn push(&self, value: T) -> Result<(), T> {
        let tail = self.tail.0.load(Ordering::Relaxed);
        let head = self.head.0.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > self.mask {
            return Err(value);
        }
        let slot = &self.slots[(tail & self.mask) as usize];
        // SAFETY: the slot at `tail` is not visible to the consumer until
        // `tail` is published below, and the consumer has released it
        // (head > tail - capacity, checked above with Acquire), so no one
        // else reads or writes it now.
        unsafe { (*slot.get()).write(value) };
        self.tail.0.store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Removes the oldest entry, if any.
    ///
    /// Only one thread at a time may pop (the consumer).
    pub fn pop(&self) -> Option<T> {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        let slot = &self.slots[(head & self.mask) as usize];
        // SAFETY: `head < tail` observed with Acquire, so the producer's
        // write of this slot happened before and it will not rewrite it
        // until `head` is published past it below.
        let value = unsafe { (*slot.get()).assume_init() };
        self.head.0.store(head.wrapping_add(1), Ordering::Release);
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_order_and_bounded_capacity() {
        let ring = Ring::with_capacity(3);
        assert_eq!(ring.capacity(), 4);
        for i in 0..4u32 {
            ring.push(i).unwrap();
        }
        assert_eq!(ring.push(9), Err(9));
        assert_eq!(ring.len(), 4);
        assert_eq!(ring.pop(), Some(0));
        ring.push(4).unwrap();
        let drained: Vec<u32> = std::iter::from_fn(|| ring.pop()).collect();
        assert_eq!(drained, vec![1, 2, 3, 4]);
        assert!(ring.is_empty());
        assert_eq!((ring.pushed(), ring.popped()), (5, 5));
    }

    #[test]
    fn two_threads_pass_every_value_once_in_order() {
        const N: u64 = 200_000;
        let ring = Arc::new(Ring::with_capacity(64));
        let producer = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for i in 0..N {
                    let mut v = i;
                    while let Err(back) = ring.push(v) {
                        v = back;
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut expected = 0;
        while expected < N {
            match ring.pop() {
                Some(v) => {
                    assert_eq!(v, expected);
                    expected += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert!(ring.pop().is_none());
    }
}
