//! io_uring's submission-queue polling (`IORING_SETUP_SQPOLL`, fio's
//! `sqthread_poll`) on real threads, by the simulator's rules
//! (`crates/sim/src/workload/sqpoll.rs`, Linux 5.15 `io_sq_thread`): a
//! thread of the job fills its ring and commits without a system call,
//! and spins on its completion ring in user space until it holds the
//! events it wants (fio 3.33 `fio_ioring_getevents`). The ring's SQ thread,
//! on the same core, takes the committed entries and submits them through
//! its own client, posts the completions that reach it (an interrupt's,
//! or its poll's on a polling queue) to the completion ring, and between
//! turns spins. After `sq_thread_idle` (1 s, Linux's default, which fio
//! leaves) with nothing to do and nothing in flight it sleeps, with
//! `IORING_SQ_NEED_WAKEUP` set, and the ring's thread wakes it at its
//! next commit (`io_uring_enter(IORING_ENTER_SQ_WAKEUP)`).
//!
//! The ring is a mutex and a condition variable, the SQ thread's sleep.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use cint_policy::{Nanos, SEC};

use crate::activity::ThreadState;
use crate::client::{Client, Completion, Request};
use crate::error::IoError;
use crate::shared::{lock_whole, wait_whole, DeliveredBy};
use crate::sys;
use crate::workload::ThreadOutcome;

/// How long an SQ thread spins with nothing to do before it sleeps:
/// `HZ`, Linux's default when `sq_thread_idle` is 0 (io_uring.c,
/// `io_sq_offload_create`), which fio leaves it.
pub(crate) const SQ_THREAD_IDLE: Nanos = SEC;

/// An entry the ring's thread committed: its request and when it was
/// committed (fio's issue time, which its latency counts from).
#[derive(Debug)]
pub(crate) struct Committed {
    pub request: Request,
    pub at: Nanos,
}

#[derive(Debug, Default)]
struct RingState {
    sq: VecDeque<Committed>,
    cq: Vec<Completion>,
    /// `IORING_SQ_NEED_WAKEUP`: the SQ thread sleeps, or is about to.
    need_wakeup: bool,
    /// The ring's thread has left its loop: the SQ thread submits what is
    /// left, posts what comes back, and ends.
    closed: bool,
}

/// One SQ-polled ring, shared by the thread that fills it and its SQ
/// thread.
#[derive(Debug, Default)]
pub(crate) struct SqRing {
    state: Mutex<RingState>,
    /// The SQ thread's idle sleep.
    wake: Condvar,
    /// Completions posted and not yet reaped: what the ring's thread
    /// spins on without taking the lock.
    posted: AtomicUsize,
}

impl SqRing {
    fn lock(&self) -> MutexGuard<'_, RingState> {
        lock_whole(&self.state)
    }

    /// The ring's thread commits `entry`. True when the SQ thread slept
    /// and was woken for it: fio's `io_uring_enter(IORING_ENTER_SQ_WAKEUP)`.
    pub(crate) fn commit(&self, entry: Committed) -> bool {
        let mut s = self.lock();
        s.sq.push_back(entry);
        let woke = std::mem::replace(&mut s.need_wakeup, false);
        drop(s);
        if woke {
            self.wake.notify_one();
        }
        woke
    }

    /// Completions waiting in the completion ring.
    pub(crate) fn ready(&self) -> usize {
        self.posted.load(Ordering::Acquire)
    }

    /// The ring's thread takes up to `most` completions into `out`.
    pub(crate) fn reap(&self, most: usize, out: &mut Vec<Completion>) -> usize {
        let mut s = self.lock();
        let n = s.cq.len().min(most);
        out.extend(s.cq.drain(..n));
        self.posted.fetch_sub(n, Ordering::AcqRel);
        n
    }

    /// The SQ thread takes every committed entry into `out`.
    pub(crate) fn take_committed(&self, out: &mut Vec<Committed>) {
        out.extend(self.lock().sq.drain(..));
    }

    /// The SQ thread posts `done` to the completion ring.
    pub(crate) fn post(&self, done: &mut Vec<Completion>) {
        if done.is_empty() {
            return;
        }
        let n = done.len();
        self.lock().cq.append(done);
        self.posted.fetch_add(n, Ordering::AcqRel);
    }

    /// The SQ thread, idle past [`SQ_THREAD_IDLE`] with nothing in flight,
    /// sleeps until an entry is committed or the ring closes. True when
    /// it slept.
    pub(crate) fn idle_sleep(&self) -> bool {
        let mut s = self.lock();
        if !s.sq.is_empty() || s.closed {
            return false;
        }
        s.need_wakeup = true;
        while s.need_wakeup && !s.closed {
            s = wait_whole(&self.wake, s);
        }
        s.need_wakeup = false;
        true
    }

    /// Whether the ring's thread has left and nothing is committed.
    pub(crate) fn closed_and_empty(&self) -> bool {
        let s = self.lock();
        s.closed && s.sq.is_empty()
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }
}

/// The ring's thread's handle on its ring: dropping it closes the ring,
/// so that the SQ thread ends however the ring's thread leaves (a panic,
/// or a run that ended before its job started, included).
#[derive(Debug)]
pub(crate) struct RingHandle {
    pub ring: Arc<SqRing>,
}

impl Drop for RingHandle {
    fn drop(&mut self) {
        self.ring.close();
    }
}

/// The ring's SQ thread (Linux's `io_sq_thread`): each turn it submits
/// what the ring's thread committed through its own `client`, and posts
/// to the completion ring what reached the client (an interrupt's
/// delivery, or on a polling queue what its reap polled), each with the
/// commit's instant as its submission; between turns it spins. Idle
/// [`SQ_THREAD_IDLE`] with nothing in flight, it sleeps until the next
/// commit; it ends once the ring's thread has left and nothing is in
/// flight. A request the device refuses (it shut down) comes back
/// cancelled, so that the ring's thread never waits for it. Its wake-ups
/// from the idle sleep count where `measuring` says the window is open.
pub(crate) fn run_sq_thread(
    mut client: Client,
    ring: &SqRing,
    measuring: impl Fn() -> bool,
) -> ThreadOutcome {
    let mut out = ThreadOutcome::default();
    let (mut committed, mut done) = (Vec::new(), Vec::new());
    // Each request's commit instant, by its `user_data` (the ring's
    // thread's count of submissions, unique while in flight).
    let mut stamps: HashMap<u64, Nanos> = HashMap::new();
    // The ring is set up when its thread starts, which a job of a later
    // group or with a start delay does late: till its first commit the
    // SQ thread sleeps.
    crate::activity::enter(ThreadState::Idle);
    client.away(|| ring.idle_sleep());
    let mut busy_at = sys::now();
    crate::activity::enter(ThreadState::Spin);
    loop {
        ring.take_committed(&mut committed);
        let mut worked = !committed.is_empty();
        for Committed { request, at } in committed.drain(..) {
            let (user_data, op, len, hint) =
                (request.user_data, request.op, request.len, request.hint);
            match client.submit(request) {
                Ok(()) => {
                    stamps.insert(user_data, at);
                }
                // Its cancelled completion carries the error to the
                // ring's thread, which counts it.
                Err(_) => {
                    done.push(Completion {
                        user_data,
                        result: Err(IoError::Cancelled),
                        op,
                        len,
                        hint,
                        submitted: at,
                        in_hand: at,
                        posted: at,
                        by: DeliveredBy::FullIrq,
                        buf: None,
                    });
                }
            }
        }
        if client.reap_at_most(usize::MAX, &mut done) > 0 || !done.is_empty() {
            worked = true;
            for c in &mut done {
                if let Some(at) = stamps.remove(&c.user_data) {
                    c.submitted = at;
                }
            }
            ring.post(&mut done);
        }
        let now = sys::now();
        if worked {
            busy_at = now;
            continue;
        }
        if client.in_flight() == 0 {
            if ring.closed_and_empty() {
                break;
            }
            if now.saturating_sub(busy_at) >= SQ_THREAD_IDLE {
                crate::activity::enter(ThreadState::Idle);
                let slept = client.away(|| ring.idle_sleep());
                crate::activity::enter(ThreadState::Spin);
                if slept && measuring() {
                    out.wakeups += 1;
                }
                busy_at = sys::now();
                continue;
            }
        }
        std::hint::spin_loop();
    }
    crate::activity::enter(ThreadState::Busy);
    out.strays = client.strays();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cint_policy::Hint;

    fn committed(at: Nanos) -> Committed {
        Committed {
            request: crate::client::test_read(at),
            at,
        }
    }

    #[test]
    fn a_sleeping_sq_thread_is_woken_by_the_next_commit_and_the_ring_closes_on_drop() {
        let ring = Arc::new(SqRing::default());
        let handle = RingHandle {
            ring: Arc::clone(&ring),
        };
        let sq_thread = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                let mut taken = Vec::new();
                let mut slept = 0;
                loop {
                    ring.take_committed(&mut taken);
                    if ring.closed_and_empty() {
                        break;
                    }
                    if taken.is_empty() || taken.len() == 1 {
                        slept += u32::from(ring.idle_sleep());
                    }
                }
                (taken.iter().map(|c| c.at).collect::<Vec<_>>(), slept)
            })
        };
        // Whether the first commit finds it asleep or not, both entries
        // reach it once, and the drop ends it.
        while !ring.lock().need_wakeup {
            std::thread::yield_now();
        }
        assert!(ring.commit(committed(1)), "it slept: the commit wakes it");
        ring.commit(committed(2));
        drop(handle);
        let (taken, slept) = sq_thread.join().expect("the SQ thread ends");
        assert_eq!(taken, vec![1, 2]);
        assert!(slept >= 1);
    }

    #[test]
    fn completions_are_reaped_once_and_counted_without_the_lock() {
        let ring = SqRing::default();
        let completion = |user_data| Completion {
            user_data,
            result: Ok(4096),
            op: crate::shared::Op::Read,
            len: 4096,
            hint: Hint::Unmarked,
            submitted: 1,
            in_hand: 2,
            posted: 2,
            by: crate::shared::DeliveredBy::FullIrq,
            buf: None,
        };
        let mut done = vec![completion(1), completion(2), completion(3)];
        ring.post(&mut done);
        assert!(done.is_empty(), "posting moves them");
        assert_eq!(ring.ready(), 3);
        let mut out = Vec::new();
        assert_eq!(ring.reap(2, &mut out), 2);
        assert_eq!(ring.ready(), 1);
        assert_eq!(ring.reap(8, &mut out), 1);
        assert_eq!(ring.reap(8, &mut out), 0);
        let ids: Vec<u64> = out.iter().map(|c| c.user_data).collect();
        assert_eq!(ids, vec![1, 2, 3], "in posting order, each once");
    }
}
