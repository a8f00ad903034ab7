//! fio's `io_submit_mode=offload` on real threads (fio 3.33, rate-submit.c
//! and workqueue.c; the simulator's `workload/offload.rs` runs the same
//! rules): each thread of the job keeps no request in flight itself. It
//! takes a free io_u (at most `iodepth` are out, else it sleeps on a
//! condition variable until a worker frees one), prepares its request,
//! stamps its start and hands it to one of `iodepth` worker threads on
//! its core: an idle one, looking round from where the last hand-off left
//! off, or else the one given work least recently (`get_submit_worker`).
//! A worker runs one request at a time through the job's engine at depth
//! 1, frees the io_u (waking the main thread if it waits for one), and
//! takes its next request, or sleeps on its own condition variable. So
//! the main thread issues on its rate's schedule whatever the completions
//! do, up to `iodepth` requests at a time, and a request's latency runs
//! from its start in the main thread, the wait for a worker included.
//!
//! The pool is a mutex and condition variables, as fio's workqueue is:
//! the main thread's sleeps and the workers' are real futex waits.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

use cint_policy::Nanos;

use crate::client::Request;
use crate::shared::{lock_whole, wait_whole};

/// A request handed to a worker.
#[derive(Debug)]
pub(crate) struct Handed {
    pub request: Request,
    /// fio's `start_time`: when the main thread had it ready.
    pub start: Nanos,
    /// The job's own measured window's start, where the job does not start
    /// with the run (the main thread's, which the workers count by).
    pub window_from: Option<Nanos>,
}

#[derive(Debug, Default)]
struct WorkerState {
    queue: VecDeque<Handed>,
    /// The hand-off that last gave it work (`sw->seq`).
    seq: u64,
    /// Asleep on its condition variable, or about to be (`SW_F_IDLE`).
    idle: bool,
}

#[derive(Debug, Default)]
struct PoolState {
    workers: Vec<WorkerState>,
    /// Where the search for an idle worker starts (`next_free_worker`).
    next_free: usize,
    /// io_us handed out and not yet freed.
    in_use: usize,
    /// Hand-offs so far (`work_seq`).
    seq: u64,
    /// The main thread sleeps until an io_u is free (or all are).
    main_waiting: bool,
    /// The main thread has left its loop: the workers finish what they
    /// hold and end. When it left early (its size, another job's
    /// `exitall`), then.
    closed: Option<Option<Nanos>>,
}

/// One job thread's workers and io_us.
#[derive(Debug)]
pub(crate) struct OffloadPool {
    state: Mutex<PoolState>,
    /// The main thread's condition variable (`td->free_cond`).
    free: Condvar,
    /// Each worker's (`sw->cond`).
    work: Vec<Condvar>,
}

impl OffloadPool {
    /// A pool of `depth` io_us and as many workers.
    pub(crate) fn new(depth: usize) -> OffloadPool {
        let depth = depth.max(1);
        OffloadPool {
            state: Mutex::new(PoolState {
                workers: (0..depth).map(|_| WorkerState::default()).collect(),
                ..PoolState::default()
            }),
            free: Condvar::new(),
            work: (0..depth).map(|_| Condvar::new()).collect(),
        }
    }

    /// Its io_us, and so its workers.
    pub(crate) fn depth(&self) -> usize {
        self.work.len()
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        lock_whole(&self.state)
    }

    /// io_us out now: handed to a worker and not yet freed.
    pub(crate) fn in_use(&self) -> usize {
        self.lock().in_use
    }

    /// Hands `handed` to a worker (the caller holds a free io_u: fewer than
    /// [`OffloadPool::depth`] are in use), waking it if it sleeps.
    pub(crate) fn hand(&self, handed: Handed) {
        let mut s = self.lock();
        let w = pick_worker(&mut s);
        s.in_use += 1;
        s.seq += 1;
        let seq = s.seq;
        let worker = &mut s.workers[w];
        worker.seq = seq;
        worker.queue.push_back(handed);
        let woke = std::mem::replace(&mut worker.idle, false);
        drop(s);
        if woke {
            self.work[w].notify_one();
        }
    }

    /// The main thread waits until fewer than `most_in_use` io_us are out
    /// (`depth` for a free one; 1 to drain them all). True when it slept.
    pub(crate) fn wait_until_below(&self, most_in_use: usize) -> bool {
        let mut s = self.lock();
        let mut slept = false;
        while s.in_use >= most_in_use.max(1) {
            s.main_waiting = true;
            slept = true;
            s = wait_whole(&self.free, s);
        }
        s.main_waiting = false;
        slept
    }

    /// Worker `w`'s next request, after sleeping for one if it has none
    /// (true then); `None` once the main thread has closed the pool and
    /// nothing is left for it.
    pub(crate) fn take(&self, w: usize) -> (Option<Handed>, bool) {
        let mut s = self.lock();
        let mut slept = false;
        loop {
            if let Some(handed) = s.workers[w].queue.pop_front() {
                return (Some(handed), slept);
            }
            if s.closed.is_some() {
                return (None, slept);
            }
            s.workers[w].idle = true;
            slept = true;
            s = wait_whole(&self.work[w], s);
        }
    }

    /// A worker is back at the top of its loop: its io_u is free again,
    /// and a main thread waiting for one is woken.
    pub(crate) fn free_one(&self) {
        let mut s = self.lock();
        s.in_use = s.in_use.saturating_sub(1);
        let wake = s.main_waiting;
        drop(s);
        if wake {
            self.free.notify_one();
        }
    }

    /// The main thread has left its loop (at `ended_early` if it ended by
    /// itself): the workers end once they have run what they hold.
    pub(crate) fn close(&self, ended_early: Option<Nanos>) {
        let mut s = self.lock();
        if s.closed.is_none() {
            s.closed = Some(ended_early);
        }
        drop(s);
        for cond in &self.work {
            cond.notify_all();
        }
    }

    /// When the main thread ended by itself, if it did (its workers' end
    /// too, for the job's window).
    pub(crate) fn ended_early(&self) -> Option<Nanos> {
        self.lock().closed.flatten()
    }
}

/// fio's `get_submit_worker`: the first idle worker from `next_free`
/// round, else the one given work least recently.
fn pick_worker(s: &mut PoolState) -> usize {
    let n = s.workers.len();
    let idle = (0..n)
        .map(|i| (s.next_free + i) % n)
        .find(|&i| s.workers[i].idle);
    let w = idle.unwrap_or_else(|| (0..n).min_by_key(|&i| s.workers[i].seq).unwrap_or(0));
    if w == s.next_free {
        s.next_free = (w + 1) % n;
    }
    w
}

/// The main thread's handle on its pool: dropping it closes the pool, so
/// that the workers end however the main thread leaves (a panic, or a
/// run that ended before its job started, included) and the
/// coordinator's join never waits for them in vain.
#[derive(Debug)]
pub(crate) struct Dispatch {
    pub pool: std::sync::Arc<OffloadPool>,
    /// When the main thread ended by itself, once it has.
    pub ended_early: Option<Nanos>,
}

impl Dispatch {
    /// The main thread's handle on `pool`.
    pub(crate) fn new(pool: std::sync::Arc<OffloadPool>) -> Dispatch {
        Dispatch {
            pool,
            ended_early: None,
        }
    }
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        self.pool.close(self.ended_early);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handed(start: Nanos) -> Handed {
        Handed {
            request: crate::client::test_read(start),
            start,
            window_from: None,
        }
    }

    #[test]
    fn an_idle_worker_is_picked_round_from_the_last_else_the_least_recent() {
        let pool = OffloadPool::new(3);
        // No worker has slept yet: the one given work least recently,
        // the first of equals.
        pool.hand(handed(1));
        pool.hand(handed(2));
        pool.hand(handed(3));
        pool.hand(handed(4));
        let s = pool.lock();
        let queued: Vec<usize> = s.workers.iter().map(|w| w.queue.len()).collect();
        assert_eq!(queued, vec![2, 1, 1], "the fourth goes to the first again");
        assert_eq!(s.in_use, 4);
        drop(s);
        // Worker 1 takes its request and frees its io_u.
        let (got, slept) = pool.take(1);
        assert_eq!(got.map(|h| h.start), Some(2));
        assert!(!slept);
        pool.free_one();
        assert_eq!(pool.in_use(), 3);
    }

    #[test]
    fn the_main_thread_sleeps_for_a_free_io_u_and_a_worker_wakes_it() {
        let pool = std::sync::Arc::new(OffloadPool::new(2));
        pool.hand(handed(1));
        pool.hand(handed(2));
        let worker = {
            let pool = std::sync::Arc::clone(&pool);
            std::thread::spawn(move || {
                let mut ran = Vec::new();
                loop {
                    let (got, _) = pool.take(0);
                    let Some(h) = got else { break };
                    ran.push(h.start);
                    pool.free_one();
                }
                ran
            })
        };
        // Two out of two: this sleeps until the worker frees one.
        pool.wait_until_below(2);
        assert!(pool.in_use() < 2);
        // Drain, then close: the worker ends.
        let other = pool.take(1).0.map(|h| h.start);
        pool.free_one();
        pool.wait_until_below(1);
        assert_eq!(pool.in_use(), 0);
        pool.close(Some(7));
        let mut ran = worker.join().expect("the worker ends");
        ran.extend(other);
        ran.sort_unstable();
        assert_eq!(ran, vec![1, 2], "each request ran once");
        assert_eq!(pool.ended_early(), Some(7));
    }
}
