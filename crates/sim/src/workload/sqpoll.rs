//! io_uring's submission-queue polling (`IORING_SETUP_SQPOLL`, fio's
//! `sqthread_poll`): a kernel thread per ring takes the submission
//! queue's entries and submits them, so the thread that fills the ring
//! makes no system call to submit.
//!
//! The SQ thread (Linux 5.15 `io_sq_thread`, 5.6 alike): each turn of its
//! loop it polls the ring's polled requests in flight (`io_do_iopoll`,
//! with `min` 0: it never sleeps in the block layer's hybrid poll), runs
//! the completions queued to it as task work, and submits what the ring
//! holds (`io_submit_sqes`, the same kernel path per request as a
//! submission call, without the call's entry). Between turns it spins,
//! giving the core up only when the scheduler asks (`cond_resched`).
//! After `sq_thread_idle` with nothing to do (1 s, Linux's `HZ` when the
//! ring is set up with 0, as fio does) and no polled request in flight, it
//! sets `IORING_SQ_NEED_WAKEUP` and sleeps; the ring's thread then wakes
//! it with `io_uring_enter(IORING_ENTER_SQ_WAKEUP)` when it next commits.
//!
//! Completions: a polled request's, the SQ thread's poll reaps; an
//! interrupt's, the handler posts to the completion ring where Linux 5.6
//! does, and from Linux 5.11 on (`host.uring_task_work`) queues as task
//! work to the request's task, the SQ thread that submitted it, which
//! `io_req_task_work_add` wakes if it sleeps (`TWA_NONE`, then
//! `wake_up_process`). As for a waiter's task work, the per-completion
//! work stays in the handler (docs/HOST-COSTS.md).
//!
//! The ring's thread, fio with `sqthread_poll` (engines/io_uring.c):
//! `fio_ioring_commit` only checks `IORING_SQ_NEED_WAKEUP`, and
//! `fio_ioring_getevents` spins in user space on the completion ring
//! until it holds `min` events, never entering the kernel. Its spin is
//! user time, at a spinning core's power.
//!
//! The SQ thread runs on `sqpoll_cpu` (`IORING_SETUP_SQ_AFF`), else on
//! the core of the thread that fills its ring: Linux 5.11 and later
//! create it as an io thread of that task, with its CPU mask. Its
//! requests go to its core's hardware queue (blk-mq maps a request to
//! the submitting CPU's), so their interrupts come to its core. It belongs
//! to the job, whose CPU it counts in, and starts and ends with the
//! ring's thread.

use std::collections::VecDeque;

use cint_policy::{Nanos, SEC};

use super::LoopRole;
use crate::world::{Activity, Cont, RunState, Thread, Wait, World};

/// How long an SQ thread spins with nothing to do before it sleeps:
/// `HZ`, Linux's default when `sq_thread_idle` is 0 (io_uring.c,
/// `io_sq_offload_create`), which fio leaves it.
const SQ_THREAD_IDLE: Nanos = SEC;

/// One SQ-polled ring.
#[derive(Debug)]
struct Ring {
    /// The thread that fills it.
    submitter: u32,
    /// Its kernel thread.
    sq_thread: u32,
    /// Entries committed and not yet taken by the SQ thread.
    sq: Vec<u32>,
    /// Completions an interrupt queued to the SQ thread as task work.
    task_work: VecDeque<u32>,
    /// `IORING_SQ_NEED_WAKEUP`: the SQ thread sleeps, or is about to.
    need_wakeup: bool,
    /// The SQ thread's last turn with work (its idle timeout runs from it).
    busy_at: Nanos,
    /// The ring's thread has exited: the SQ thread submits what is left
    /// and exits.
    done: bool,
}

/// Every SQ-polled ring, and which ring each thread fills or serves.
#[derive(Debug, Default)]
pub(crate) struct SqPolls {
    rings: Vec<Ring>,
    ring_of: Vec<Option<u32>>,
}

impl SqPolls {
    /// The rings of `threads`, where each SQ thread follows the thread
    /// that fills its ring ([`crate::world`] builds them so).
    pub(crate) fn new(threads: &[Thread]) -> SqPolls {
        let mut s = SqPolls {
            rings: Vec::new(),
            ring_of: vec![None; threads.len()],
        };
        for (t, th) in threads.iter().enumerate() {
            if th.prog.role != LoopRole::SqThread {
                continue;
            }
            let Some(sub) = (0..t).rev().find(|&u| {
                threads[u].prog.sqpoll && threads[u].job == th.job && s.ring_of[u].is_none()
            }) else {
                continue;
            };
            let r = s.rings.len() as u32;
            s.ring_of[t] = Some(r);
            s.ring_of[sub] = Some(r);
            s.rings.push(Ring {
                submitter: sub as u32,
                sq_thread: t as u32,
                sq: Vec::new(),
                task_work: VecDeque::new(),
                need_wakeup: false,
                busy_at: 0,
                done: false,
            });
        }
        s
    }
}

impl World<'_> {
    fn ring(&self, t: usize) -> Option<usize> {
        self.sqpoll.ring_of[t].map(|r| r as usize)
    }

    /// The SQ thread of the ring that thread `t` fills (or `t` itself,
    /// which the caller's checks then catch, if it has none).
    pub(crate) fn sq_thread_of(&self, t: usize) -> usize {
        self.ring(t)
            .map_or(t, |r| self.sqpoll.rings[r].sq_thread as usize)
    }

    /// The ring's thread commits its prepared requests: they go into the
    /// submission queue, without a system call unless the SQ thread
    /// sleeps (`IORING_SQ_NEED_WAKEUP`), when `io_uring_enter` wakes it.
    /// Then the thread's loop goes on.
    pub(crate) fn sq_commit(&mut self, t: usize) {
        let Some(ri) = self.ring(t) else {
            self.check
                .fail(format!("thread {t} commits to a ring without an SQ thread"));
            return;
        };
        let mut batch = std::mem::take(&mut self.threads[t].batch);
        let ring = &mut self.sqpoll.rings[ri];
        ring.sq.append(&mut batch);
        self.threads[t].batch = batch;
        let (s, asleep) = (ring.sq_thread as usize, ring.need_wakeup);
        if asleep {
            let c = self.costs;
            let woke = self.wake_if_waiting(s, Wait::SqIdle);
            let wake = if woke { c.wakeup } else { 0 };
            self.set_burst(t, c.syscall + wake + c.return_to_user, Cont::Issue);
        } else {
            self.sq_kick(s);
            self.issue(t);
        }
    }

    /// Work for SQ thread `s`: if it spins idle, its loop's next turn
    /// finds it now; if it runs, it will; if it sleeps, it stays asleep
    /// (only a wake-up, the ring's system call or task work, ends that).
    pub(crate) fn sq_kick(&mut self, s: usize) {
        let th = &self.threads[s];
        // Asleep, or in the middle of a submission (spinning on its own
        // polled requests for a tag): its loop's next turn finds the work.
        if th.run == RunState::Blocked || th.resume_submit {
            return;
        }
        match th.act {
            Activity::Spin { .. } => {
                let c = th.core as usize;
                let spinning_now = self.runs_now(s);
                if spinning_now {
                    self.interrupt_thread_segment(c);
                }
                self.threads[s].act = Activity::Burst {
                    left: 0,
                    then: Cont::Issue,
                };
                if spinning_now {
                    self.dispatch(c);
                }
            }
            // Switched in to spin: it looks at its work first.
            Activity::Burst {
                left,
                then: Cont::Spin(_),
            } => {
                self.threads[s].act = Activity::Burst {
                    left,
                    then: Cont::Issue,
                };
            }
            _ => {}
        }
    }

    /// One turn of SQ thread `s`'s loop: reap its polled completions,
    /// run its task work, submit the ring's entries, or spin, or, idle
    /// for `sq_thread_idle`, sleep.
    pub(crate) fn sq_loop(&mut self, s: usize) {
        let now = self.now();
        let Some(ri) = self.ring(s) else {
            self.check.fail(format!("SQ thread {s} serves no ring"));
            return;
        };
        if !self.threads[s].batch.is_empty() {
            self.check.fail(format!(
                "SQ thread {s} back at the top of its loop in the middle of a submission"
            ));
            return;
        }
        // Running, it has cleared IORING_SQ_NEED_WAKEUP.
        self.sqpoll.rings[ri].need_wakeup = false;
        let posted = self.threads[s].posted.len() as u64;
        if posted > 0 {
            // io_do_iopoll finds them.
            self.sqpoll.rings[ri].busy_at = now;
            let cost = self.costs.poll_iteration + posted * self.costs.irq_reap_entry;
            self.set_burst(s, cost, Cont::PollReaped);
            return;
        }
        let ring = &mut self.sqpoll.rings[ri];
        let sub = ring.submitter as usize;
        if !ring.task_work.is_empty() {
            ring.busy_at = now;
            let mut work = std::mem::take(&mut ring.task_work);
            for &r in &work {
                self.post_cqe(sub, r);
            }
            work.clear();
            self.sqpoll.rings[ri].task_work = work;
        }
        let ring = &mut self.sqpoll.rings[ri];
        if !ring.sq.is_empty() {
            ring.busy_at = now;
            let mut entries = std::mem::take(&mut ring.sq);
            let th = &mut self.threads[s];
            std::mem::swap(&mut th.batch, &mut entries);
            self.sqpoll.rings[ri].sq = entries;
            self.start_call(s, self.costs.uring_submit_call);
            return;
        }
        if ring.done {
            self.block(s, Wait::Exited);
            return;
        }
        // While polled requests are in flight the loop keeps spinning
        // (`iopoll_list` is not empty), and its idle time starts over.
        let polling = self.threads[s].polls && self.threads[sub].in_flight > 0;
        if polling {
            ring.busy_at = now;
        } else {
            let idle_end = ring.busy_at.saturating_add(SQ_THREAD_IDLE);
            if now >= idle_end {
                ring.need_wakeup = true;
                self.block(s, Wait::SqIdle);
                return;
            }
            // No timer: the loop reads jiffies each turn; this event
            // stands for the turn that finds the time up.
            self.schedule_thread_timer(s, idle_end);
        }
        self.threads[s].act = Activity::Spin { need: 1 };
    }

    /// SQ thread `s` woke from its sleep: its idle time starts over.
    pub(crate) fn sq_woken(&mut self, s: usize) {
        if let Some(ri) = self.ring(s) {
            self.sqpoll.rings[ri].busy_at = self.now();
        }
        self.sq_loop(s);
    }

    /// An interrupt's handler on core `c` completed request `r` of thread
    /// `t`, which fills an SQ-polled ring: Linux 5.6 posts its event to the
    /// completion ring; Linux 5.11 and later queue it as task work to the
    /// SQ thread, waking it if it sleeps. True if that wake-up is this
    /// handler's.
    pub(crate) fn sq_delivered(&mut self, t: usize, r: u32, c: usize) -> bool {
        if !self.uring_task_work {
            self.post_cqe(t, r);
            return false;
        }
        let s = self.sq_thread_of(t);
        if let Some(ri) = self.ring(s) {
            self.sqpoll.rings[ri].task_work.push_back(r);
        }
        let th = &self.threads[s];
        if th.run == RunState::Blocked && th.wait == Wait::SqIdle {
            return self.list_handler_wake(c, s as u32);
        }
        self.sq_kick(s);
        false
    }

    /// An event in thread `t`'s completion ring, which its user-space
    /// loop spins on: once it holds what the loop waits for, the loop's
    /// next turn sees it.
    pub(crate) fn post_cqe(&mut self, t: usize, r: u32) {
        self.threads[t].posted.push_back(r);
        self.poller_sees(t);
    }

    /// The ring's thread's spin found events: they are in its hand (each
    /// read from the ring at the reap call's cost per event), and its reap
    /// call goes on.
    pub(crate) fn sq_events_seen(&mut self, t: usize) {
        while let Some(r) = self.threads[t].posted.pop_front() {
            let state = self.reqs[r as usize].state;
            if state != crate::world::ReqState::Delivered {
                self.check.fail(format!(
                    "request {r} in a completion ring in state {state:?}"
                ));
                continue;
            }
            self.threads[t].ready.push_back(r);
        }
        self.get_events(t);
    }

    /// The ring's thread spins on its completion ring for what its reap
    /// call still needs (fio's `fio_ioring_getevents` with `sqpoll_thread`).
    pub(crate) fn spin_on_completion_ring(&mut self, t: usize) {
        let need = self.threads[t].events_still_needed();
        self.threads[t].act = Activity::Spin { need };
    }

    /// Thread `t`, which fills an SQ-polled ring, has exited: its SQ
    /// thread submits what the ring still holds, then exits.
    pub(crate) fn sq_submitter_exited(&mut self, t: usize) {
        let Some(ri) = self.ring(t) else {
            return;
        };
        self.sqpoll.rings[ri].done = true;
        let s = self.sq_thread_of(t);
        if !self.wake_if_waiting(s, Wait::SqIdle) {
            self.sq_kick(s);
        }
    }

    /// Whether SQ thread `s`'s own polled requests are in flight beyond
    /// those it is submitting: a tag wait would then wait for itself.
    pub(crate) fn sq_polls_own(&self, s: usize) -> bool {
        let Some(ri) = self.ring(s) else {
            return false;
        };
        let ring = &self.sqpoll.rings[ri];
        let th = &self.threads[s];
        let submitting = (th.batch.len() as u32 - th.batch_sent) + ring.sq.len() as u32;
        th.polls && self.threads[ring.submitter as usize].in_flight > submitting
    }
}
