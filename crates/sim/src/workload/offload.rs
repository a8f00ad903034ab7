//! fio's `io_submit_mode=offload` (fio 3.33, rate-submit.c and
//! workqueue.c): each thread of the job keeps no request in flight
//! itself. It takes a free io_u (at most `iodepth`, else it waits for one
//! on a condition variable), prepares it, stamps its start, and hands it
//! to one of `iodepth` worker threads: an idle one, looking round from
//! where the last hand-off left off, or else the one given work least
//! recently (`get_submit_worker`). A worker runs one request at a time
//! through the job's engine at depth 1 (`pread`, or `io_submit` then
//! `io_getevents` for one event), frees the io_u (waking the main thread
//! if it waits for one), and takes its next request, or sleeps on its own
//! condition variable. So the main thread issues on its rate's schedule
//! whatever the completions do, up to `iodepth` requests at a time.
//!
//! What fio measures follows: a request's latency runs from its start in
//! the main thread to its completion in the worker, waiting for a worker
//! included; its completion latency from the worker's system call; an
//! asynchronous engine's submission latency, from its start to the
//! return of `io_submit`.
//!
//! Costs: the main thread's preparation is the generator's issue-side
//! work; a hand-off to a sleeping worker, or a freed io_u with the main
//! thread waiting, is a `FUTEX_WAKE` (a system call and the wake-up); a
//! thread that sleeps on a condition variable enters `FUTEX_WAIT` (a
//! system call). Mutexes nobody waits for stay in user space.

use std::collections::VecDeque;

use cint_policy::Nanos;

use super::LoopRole;
use crate::world::{Cont, Thread, Wait, World};

/// A request handed to a worker.
#[derive(Clone, Copy, Debug)]
struct Handed {
    write: bool,
    bytes: u64,
    /// fio's `start_time`: when the main thread had it ready.
    start: Nanos,
}

/// One job thread's workers and io_us.
#[derive(Debug)]
struct Pool {
    dispatcher: u32,
    workers: Vec<u32>,
    /// Where the search for an idle worker starts (`next_free_worker`).
    next_free: usize,
    /// io_us out of the free list: handed out and not yet freed.
    in_use: u32,
    depth: u32,
    /// The main thread waits for an io_u.
    waiting: bool,
    /// The main thread has left its loop: the workers finish what they
    /// hold and exit.
    done: bool,
    /// Hand-offs so far (`work_seq`).
    seq: u64,
}

/// A worker's state.
#[derive(Debug, Default)]
struct WorkerState {
    pool: u32,
    queue: VecDeque<Handed>,
    /// The hand-off that last gave it work (`sw->seq`).
    seq: u64,
    /// Asleep on its condition variable, or about to be (`SW_F_IDLE`).
    idle: bool,
    /// The request it runs; its io_u is freed when the worker is back at
    /// the top of its loop.
    current: Option<Handed>,
}

/// Every offloaded job's pools.
#[derive(Debug, Default)]
pub(crate) struct Offloads {
    pools: Vec<Pool>,
    /// Per thread: the pool it runs (a dispatcher) or works for.
    pool_of: Vec<Option<u32>>,
    /// Per thread: its worker state, if it is a worker.
    workers: Vec<Option<WorkerState>>,
}

impl Offloads {
    /// The pools of `threads`, where each dispatcher is followed by its
    /// workers ([`crate::world`] builds them so).
    pub(crate) fn new(threads: &[Thread]) -> Offloads {
        let n = threads.len();
        let mut o = Offloads {
            pools: Vec::new(),
            pool_of: vec![None; n],
            workers: (0..n).map(|_| None).collect(),
        };
        for (t, th) in threads.iter().enumerate() {
            match th.prog.role {
                LoopRole::Inline | LoopRole::SqThread => {}
                LoopRole::Dispatcher => {
                    o.pool_of[t] = Some(o.pools.len() as u32);
                    o.pools.push(Pool {
                        dispatcher: t as u32,
                        workers: Vec::new(),
                        next_free: 0,
                        in_use: 0,
                        depth: 0,
                        waiting: false,
                        done: false,
                        seq: 0,
                    });
                }
                LoopRole::Worker => {
                    let p = o.pools.len().saturating_sub(1);
                    if let Some(pool) = o.pools.get_mut(p) {
                        pool.workers.push(t as u32);
                        pool.depth += 1;
                        o.pool_of[t] = Some(p as u32);
                        o.workers[t] = Some(WorkerState {
                            pool: p as u32,
                            ..WorkerState::default()
                        });
                    }
                }
            }
        }
        o
    }

    /// fio's `get_submit_worker`: the first idle worker from
    /// `next_free` round, else the one given work least recently.
    fn pick_worker(&mut self, p: usize) -> Option<u32> {
        let pool = &self.pools[p];
        let n = pool.workers.len();
        if n == 0 {
            return None;
        }
        let idle = (0..n).map(|i| (pool.next_free + i) % n).find(|&i| {
            self.workers[pool.workers[i] as usize]
                .as_ref()
                .is_some_and(|w| w.idle)
        });
        let i = idle.unwrap_or_else(|| {
            (0..n)
                .min_by_key(|&i| {
                    self.workers[pool.workers[i] as usize]
                        .as_ref()
                        .map_or(u64::MAX, |w| w.seq)
                })
                .unwrap_or(0)
        });
        let pool = &mut self.pools[p];
        if i == pool.next_free {
            pool.next_free = (i + 1) % n;
        }
        Some(pool.workers[i])
    }
}

impl World<'_> {
    /// The top of a dispatcher's loop (after its end and its rate): wait
    /// for a free io_u, or prepare the next request.
    pub(crate) fn dispatch_offload(&mut self, t: usize) {
        let Some(p) = self.offload.pool_of[t].map(|p| p as usize) else {
            self.check
                .fail(format!("thread {t} dispatches without a pool"));
            return;
        };
        let pool = &mut self.offload.pools[p];
        if pool.in_use >= pool.depth {
            // pthread_cond_wait on the job's free_cond.
            pool.waiting = true;
            self.set_burst(t, self.costs.syscall, Cont::OffloadWaitFree);
            return;
        }
        let issue = self.costs.user(self.threads[t].prog.gtod_reduce).issue;
        self.set_user_burst(t, issue, Cont::OffloadHandOff);
    }

    /// The dispatcher's request is ready: fio stamps its start and hands
    /// it to a worker, waking it if it sleeps.
    pub(crate) fn offload_hand_off(&mut self, t: usize) {
        let now = self.now();
        let Some(p) = self.offload.pool_of[t].map(|p| p as usize) else {
            return;
        };
        let (write, bytes) = self.draw_request(t);
        let Some(w) = self.offload.pick_worker(p) else {
            self.check
                .fail(format!("thread {t} hands off to a pool without workers"));
            return;
        };
        let pool = &mut self.offload.pools[p];
        pool.in_use += 1;
        pool.seq += 1;
        let seq = pool.seq;
        let Some(worker) = self.offload.workers[w as usize].as_mut() else {
            return;
        };
        worker.queue.push_back(Handed {
            write,
            bytes,
            start: now,
        });
        worker.seq = seq;
        worker.idle = false;
        if self.wake_if_waiting(w as usize, Wait::OffloadIdle) {
            let c = self.costs;
            self.set_burst(t, c.syscall + c.wakeup, Cont::Issue);
        } else {
            self.cont(t, Cont::Issue);
        }
    }

    /// The dispatcher's loop has ended: its workers finish what they were
    /// given, then exit; those asleep are woken to.
    pub(crate) fn end_offload_pool(&mut self, t: usize) {
        let Some(p) = self.offload.pool_of[t].map(|p| p as usize) else {
            return;
        };
        self.offload.pools[p].done = true;
        for i in 0..self.offload.pools[p].workers.len() {
            let w = self.offload.pools[p].workers[i] as usize;
            self.wake_if_waiting(w, Wait::OffloadIdle);
        }
    }

    /// The top of a worker's loop: the request it ran is done (its io_u
    /// goes back, waking the main thread if it waits for one), then the
    /// next request, or exit, or sleep. False when the worker goes on
    /// into the engine's submission with its next request.
    pub(crate) fn offload_worker_step(&mut self, t: usize) -> bool {
        // An asynchronous engine's request in flight is reaped first.
        if self.threads[t].in_flight > 0 {
            return false;
        }
        let Some(worker) = self.offload.workers[t].as_mut() else {
            return false;
        };
        let p = worker.pool as usize;
        if worker.current.take().is_some() {
            let pool = &mut self.offload.pools[p];
            pool.in_use = pool.in_use.saturating_sub(1);
            if std::mem::take(&mut pool.waiting) {
                let d = pool.dispatcher as usize;
                if self.wake_if_waiting(d, Wait::OffloadFree) {
                    let c = self.costs;
                    self.set_burst(t, c.syscall + c.wakeup, Cont::Issue);
                    return true;
                }
            }
        }
        let Some(worker) = self.offload.workers[t].as_mut() else {
            return false;
        };
        if let Some(next) = worker.queue.pop_front() {
            worker.current = Some(next);
            return false;
        }
        if self.offload.pools[p].done {
            self.exit_thread(t);
            return true;
        }
        worker.idle = true;
        self.set_burst(t, self.costs.syscall, Cont::OffloadSleep);
        true
    }

    /// A worker's request for the engine: its direction, size and start.
    #[inline(never)]
    pub(crate) fn offload_take(&mut self, t: usize) -> (bool, u64, Nanos) {
        match self.offload.workers[t].as_ref().and_then(|w| w.current) {
            Some(h) => (h.write, h.bytes, h.start),
            None => {
                self.check
                    .fail(format!("offload worker {t} submits with no request"));
                (false, self.threads[t].prog.bs, self.now())
            }
        }
    }

    /// Offloaded request `r` waited `d` between its hand-off and its
    /// worker's system call. A wait past 32 bits of nanoseconds (4.3 s)
    /// cannot be recorded: the run fails rather than report a wrong
    /// latency.
    #[inline(never)]
    pub(crate) fn offload_waited(&mut self, r: u32, d: Nanos) {
        match u32::try_from(d) {
            Ok(w) => self.reqs[r as usize].waited = w,
            Err(_) => self.check.fail(format!(
                "offloaded request {r} waited {d} ns for its worker, more than its latency \
                 can hold"
            )),
        }
    }

    /// A thread entered `FUTEX_WAIT` on its condition variable: it
    /// sleeps, unless what it waits for came meanwhile.
    pub(crate) fn offload_sleep(&mut self, t: usize, wait: Wait) {
        let ready = match wait {
            Wait::OffloadFree => {
                self.offload.pool_of[t].is_some_and(|p| !self.offload.pools[p as usize].waiting)
            }
            _ => self.offload.workers[t]
                .as_ref()
                .is_some_and(|w| !w.queue.is_empty() || self.offload.pools[w.pool as usize].done),
        };
        if ready {
            self.cont(t, Cont::Issue);
        } else {
            self.block(t, wait);
        }
    }
}

/// The workers of each thread of job `j` under fio's offloaded
/// submission, none otherwise.
pub(crate) fn offload_workers(j: &cint_scenario::Job) -> u32 {
    match &j.work {
        cint_scenario::Work::Io(io) if io.offload => io.iodepth,
        _ => 0,
    }
}
