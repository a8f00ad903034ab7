//! A bounded single-producer single-consumer ring of `Copy` entries.
//!
//! Every queue between two threads of the emulator (application thread to
//! device core, device core to interrupt handler, handler or device core to
//! application thread) has exactly one writer and one reader, so two
//! monotonically increasing counters suffice: the producer owns `tail`, the
//! consumer owns `head`. Each side publishes its counter with `Release` and
//! reads the other's with `Acquire`, which orders the slot write before the
//! reader sees it and the slot read before the writer may reuse it. The
//! counters sit on separate cache lines so the two cores do not fight over
//! one line. Capacity is fixed at construction; pushing and popping never
//! allocate.
//!
//! The one-producer, one-consumer discipline is enforced by the types, not
//! by a contract: [`channel`] returns exactly one [`Producer`] and one
//! [`Consumer`], neither can be cloned, and [`Producer::push`] and
//! [`Consumer::pop`] take `&mut self`, so safe code can never have two
//! pushes (or two pops) running at once. Each handle may move to another
//! thread (`Send`); neither is `Sync`, so it is used from one thread at a
//! time:
//!
//! ```compile_fail
//! fn shared_between_threads<T: Sync>() {}
//! shared_between_threads::<cint_emu::ring::Producer<u64>>();
//! ```
//!
//! ```compile_fail
//! fn shared_between_threads<T: Sync>() {}
//! shared_between_threads::<cint_emu::ring::Consumer<u64>>();
//! ```
//!
//! ```
//! fn movable<T: Send>() {}
//! movable::<cint_emu::ring::Producer<u64>>();
//! movable::<cint_emu::ring::Consumer<u64>>();
//! ```

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Keeps a counter alone on its cache line (128 bytes covers adjacent-line
/// prefetch on x86).
#[repr(align(128))]
struct Padded(AtomicU64);

/// The storage both handles point to.
struct Inner<T> {
    head: Padded,
    tail: Padded,
    mask: u64,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: the only code that touches `slots` is `Producer::push` (writes
// the slot at `tail`, then publishes `tail` with Release) and
// `Consumer::pop` (reads the slot at `head` after observing `tail` with
// Acquire, then publishes `head` with Release). There is exactly one
// `Producer` and one `Consumer` per `Inner`, neither is `Clone` or `Sync`,
// and both methods take `&mut self`, so at most one push and one pop run
// at a time, and they never touch the same slot (push writes only slots the
// consumer released, pop reads only slots the producer published).
// `T: Send` values may move between the two threads.
unsafe impl<T: Send> Sync for Inner<T> {}
// SAFETY: `Inner` owns plain `T` values (`Copy`, nothing to drop); moving it
// to another thread moves that data, which `T: Send` allows.
unsafe impl<T: Send> Send for Inner<T> {}

/// The writing end of a ring: one per ring, used by one thread at a time.
pub struct Producer<T: Copy> {
    inner: Arc<Inner<T>>,
    /// Not `Sync`: the handle is the right to write.
    _not_sync: PhantomData<Cell<()>>,
}

/// The reading end of a ring: one per ring, used by one thread at a time.
pub struct Consumer<T: Copy> {
    inner: Arc<Inner<T>>,
    /// Not `Sync`: the handle is the right to read.
    _not_sync: PhantomData<Cell<()>>,
}

/// A ring holding at least `capacity` entries (rounded up to a power of
/// two, at least 1), as its two ends.
pub fn channel<T: Copy + Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let cap = capacity.max(1).next_power_of_two();
    let slots = (0..cap)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect::<Vec<_>>()
        .into_boxed_slice();
    let inner = Arc::new(Inner {
        head: Padded(AtomicU64::new(0)),
        tail: Padded(AtomicU64::new(0)),
        mask: cap as u64 - 1,
        slots,
    });
    (
        Producer {
            inner: Arc::clone(&inner),
            _not_sync: PhantomData,
        },
        Consumer {
            inner,
            _not_sync: PhantomData,
        },
    )
}

impl<T> Inner<T> {
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn len(&self) -> usize {
        let tail = self.tail.0.load(Ordering::Acquire);
        let head = self.head.0.load(Ordering::Acquire);
        tail.wrapping_sub(head) as usize
    }
}

impl<T: Copy> Producer<T> {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Entries currently queued (exact from the producer's side up to what
    /// the consumer takes meanwhile).
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True if nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries ever pushed.
    pub fn pushed(&self) -> u64 {
        self.inner.tail.0.load(Ordering::Relaxed)
    }

    /// Appends `value`; gives it back if the ring is full.
    pub fn push(&mut self, value: T) -> Result<(), T> {
        let ring = &*self.inner;
        let tail = ring.tail.0.load(Ordering::Relaxed);
        let head = ring.head.0.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > ring.mask {
            return Err(value);
        }
        let slot = &ring.slots[(tail & ring.mask) as usize];
        // SAFETY: `&mut self` on the only Producer makes this the only
        // writer. The slot at `tail` is not visible to the consumer until
        // `tail` is published below, and the consumer has released it
        // (head > tail - capacity, checked above with Acquire), so no one
        // else reads or writes it now.
        unsafe { (*slot.get()).write(value) };
        ring.tail.0.store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }
}

impl<T: Copy> Consumer<T> {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Entries currently queued (at least this many can be popped).
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True if nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries ever popped.
    pub fn popped(&self) -> u64 {
        self.inner.head.0.load(Ordering::Relaxed)
    }

    /// Removes the oldest entry, if any.
    pub fn pop(&mut self) -> Option<T> {
        let ring = &*self.inner;
        let head = ring.head.0.load(Ordering::Relaxed);
        let tail = ring.tail.0.load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        let slot = &ring.slots[(head & ring.mask) as usize];
        // SAFETY: `&mut self` on the only Consumer makes this the only
        // reader. `head < tail` observed with Acquire, so the producer's
        // write of this slot happened before, and it will not rewrite it
        // until `head` is published past it below.
        let value = unsafe { (*slot.get()).assume_init() };
        ring.head.0.store(head.wrapping_add(1), Ordering::Release);
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_order_and_bounded_capacity() {
        let (mut tx, mut rx) = channel(3);
        assert_eq!(tx.capacity(), 4);
        assert_eq!(rx.capacity(), 4);
        for i in 0..4u32 {
            tx.push(i).unwrap();
        }
        assert_eq!(tx.push(9), Err(9));
        assert_eq!(rx.len(), 4);
        assert_eq!(rx.pop(), Some(0));
        tx.push(4).unwrap();
        let drained: Vec<u32> = std::iter::from_fn(|| rx.pop()).collect();
        assert_eq!(drained, vec![1, 2, 3, 4]);
        assert!(rx.is_empty() && tx.is_empty());
        assert_eq!((tx.pushed(), rx.popped()), (5, 5));
    }

    #[test]
    fn two_threads_pass_every_value_once_in_order() {
        const N: u64 = 200_000;
        let (mut tx, mut rx) = channel(64);
        let producer = std::thread::spawn(move || {
            for i in 0..N {
                let mut v = i;
                while let Err(back) = tx.push(v) {
                    v = back;
                    std::thread::yield_now();
                }
            }
        });
        let mut expected = 0;
        while expected < N {
            match rx.pop() {
                Some(v) => {
                    assert_eq!(v, expected);
                    expected += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert!(rx.pop().is_none());
    }
}
