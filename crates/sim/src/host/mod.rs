//! The host: application cores running threads under a CFS-like scheduler
//! ([`sched`]) and interrupt handlers that preempt them ([`irq`]). Every
//! kernel path is CPU time on a specific core, priced by the host profile
//! ([`HostCosts`]).

pub(crate) mod group;
pub(crate) mod idle;
pub(crate) mod irq;
pub(crate) mod pagecache;
pub(crate) mod power;
pub(crate) mod sched;
pub(crate) mod smt;
pub(crate) mod spread;

use std::collections::VecDeque;

use cint_policy::{Irq, Nanos};
use cint_scenario::HostProfile;
use rand_chacha::ChaCha8Rng;

use crate::world::World;
use crate::SimError;

/// The host profile's costs as plain nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostCosts {
    pub syscall: Nanos,
    /// The generator's user-space CPU per I/O, reaping side and issuing
    /// side (`user_per_io` split by `user_issue_share`).
    pub user: UserPerIo,
    /// The same for a job with `gtod_reduce`.
    pub user_gtod_reduce: UserPerIo,
    pub direct_io: Nanos,
    pub block_submit: Nanos,
    pub aio_submit_call: Nanos,
    pub aio_submit_iocb: Nanos,
    pub aio_getevents_call: Nanos,
    pub aio_getevents_event: Nanos,
    pub uring_submit_call: Nanos,
    pub uring_submit_sqe: Nanos,
    pub uring_reap_event: Nanos,
    pub irq_fixed: Nanos,
    pub irq_reap_entry: Nanos,
    pub wakeup: Nanos,
    pub context_switch: Nanos,
    pub context_switch_idle: Nanos,
    pub return_to_user: Nanos,
    pub poll_iteration: Nanos,
    pub timer_setup: Nanos,
    pub timer_slack: Nanos,
    pub task_timer_slack: Nanos,
    pub sched_latency: Nanos,
    pub sched_min_granularity: Nanos,
    pub sched_wakeup_granularity: Nanos,
}

/// Where the workload generator spends its user-space CPU per I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UserPerIo {
    /// On each completion the reap call hands out, before anything else.
    pub reap: Nanos,
    /// On each request, right before the call that submits it.
    pub issue: Nanos,
}

impl UserPerIo {
    /// `per_io` split so that `issue` is its `issue_share` (rounded to the
    /// nanosecond) and the parts add up to it exactly.
    fn split(per_io: Nanos, issue_share: f64) -> UserPerIo {
        let issue = ((per_io as f64) * issue_share).round() as Nanos;
        let issue = issue.min(per_io);
        UserPerIo {
            reap: per_io - issue,
            issue,
        }
    }
}

impl HostCosts {
    /// What fio measures at start as its sleep's granularity
    /// (`fio_time_init`: the longest of ten `nanosleep` calls of 1 us),
    /// on an idle core of this host: the call's entry and the timer's
    /// arming, the microsecond, the task's timer slack and the timer's
    /// lateness, the timer interrupt's wake-up, the switch back from the
    /// idle task and the return to user space.
    pub(crate) fn fio_sleep_granularity(&self) -> Nanos {
        self.syscall
            + self.timer_setup
            + 1_000
            + self.task_timer_slack
            + self.timer_slack
            + self.irq_fixed
            + self.wakeup
            + self.context_switch_idle
            + self.return_to_user
    }

    /// The generator's user-space CPU per I/O for a job with or without
    /// `gtod_reduce`.
    pub(crate) fn user(&self, gtod_reduce: bool) -> UserPerIo {
        if gtod_reduce {
            self.user_gtod_reduce
        } else {
            self.user
        }
    }

    /// The kernel's submission path of one request, the same whatever
    /// call reaches it.
    pub(crate) fn per_request(&self) -> Nanos {
        self.direct_io + self.block_submit
    }

    /// The profile's costs. The validator refuses a zero poll iteration
    /// (a poll loop would spin without time passing) and zero CFS latency
    /// or granularity (the slice would be empty); a profile built in code
    /// that has them is refused here rather than silently changed.
    pub(crate) fn from_profile(h: &HostProfile) -> Result<Self, SimError> {
        for (key, d) in [
            ("poll_iteration", h.poll_iteration),
            ("sched_latency", h.sched_latency),
            ("sched_min_granularity", h.sched_min_granularity),
        ] {
            if d.0 == 0 {
                return Err(SimError::input_at(
                    format!("host.{key}"),
                    format!("must be longer than zero (host '{}')", h.model),
                ));
            }
        }
        if !(0.0..=1.0).contains(&h.user_issue_share) {
            return Err(SimError::input_at(
                "host.user_issue_share",
                format!(
                    "must be from 0 to 1 (got {}, host '{}')",
                    h.user_issue_share, h.model
                ),
            ));
        }
        Ok(HostCosts {
            syscall: h.syscall.0,
            user: UserPerIo::split(h.user_per_io.0, h.user_issue_share),
            user_gtod_reduce: UserPerIo::split(h.user_per_io_gtod_reduce.0, h.user_issue_share),
            direct_io: h.direct_io.0,
            block_submit: h.block_submit.0,
            aio_submit_call: h.aio_submit_call.0,
            aio_submit_iocb: h.aio_submit_iocb.0,
            aio_getevents_call: h.aio_getevents_call.0,
            aio_getevents_event: h.aio_getevents_event.0,
            uring_submit_call: h.uring_submit_call.0,
            uring_submit_sqe: h.uring_submit_sqe.0,
            uring_reap_event: h.uring_reap_event.0,
            irq_fixed: h.irq_fixed.0,
            irq_reap_entry: h.irq_reap_entry.0,
            wakeup: h.wakeup.0,
            context_switch: h.context_switch.0,
            context_switch_idle: h.context_switch_idle.0,
            return_to_user: h.return_to_user.0,
            poll_iteration: h.poll_iteration.0,
            timer_setup: h.timer_setup.0,
            timer_slack: h.timer_slack.0,
            task_timer_slack: h.task_timer_slack.0,
            sched_latency: h.sched_latency.0,
            sched_min_granularity: h.sched_min_granularity.0,
            sched_wakeup_granularity: h.sched_wakeup_granularity.0,
        })
    }
}

/// Work waiting for a core's interrupt context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IrqWork {
    /// A device interrupt for a completion queue.
    Device { queue: u32, irq: Irq },
    /// A high-resolution timer expiring for a sleeping thread.
    Timer { thread: u32, token: u64 },
    /// Work of the virtual-machine layer for a guest: its monitor on its
    /// interrupt vCPU's core, or the hypervisor's on its own (docs/VIRT.md).
    Virt {
        guest: u32,
        work: crate::virt::VirtWork,
    },
}

/// What a core is executing right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    /// Start of the part not yet charged.
    pub start: Nanos,
    /// True for an interrupt handler, false for the current thread.
    pub irq: bool,
    /// When the work ends (`None`: a poll loop or other open-ended work).
    pub end: Option<Nanos>,
    /// How much slower than alone the work runs, in thousandths (SMT
    /// siblings executing too, [`smt`]).
    pub stretch: u32,
}

/// One application core.
#[derive(Debug)]
pub(crate) struct Core {
    /// Interrupts waiting to run (they do not nest).
    pub irq_pending: VecDeque<IrqWork>,
    /// The executing segment, if any; `None` with no current thread and
    /// nothing pending means idle.
    pub seg: Option<Segment>,
    /// Supersedes the `CoreDone` of an interrupted segment.
    pub token: u64,
    /// The thread owning the core (it may be interrupted by an IRQ).
    pub current: Option<u32>,
    /// The thread that ran on the core last (its address space is still
    /// loaded, even while the core idles).
    pub last_ran: Option<u32>,
    /// Runnable threads waiting for the core.
    pub rq: Vec<u32>,
    pub min_vruntime: u64,
    /// A woken thread should preempt the current one at the next chance.
    pub need_resched: bool,
    /// CFS's next buddy (Linux 5.0 `cfs_rq->next`): the woken thread
    /// that preempted the current one, picked next if not unfair.
    pub next_buddy: Option<u32>,
    /// CFS's last buddy (`cfs_rq->last`, `LAST_BUDDY`): the thread such a
    /// wake-up preempted on a run queue of `sched_nr_latency` threads.
    pub last_buddy: Option<u32>,
    pub slice_token: u64,
    /// Since when the core has been idle.
    pub idle_since: Option<Nanos>,
    /// Entries reaped by the running interrupt handler (reused buffer).
    pub reaped: Vec<u32>,
    /// Threads the running interrupt handler wakes when it ends.
    pub wake_list: Vec<u32>,
    pub irq_ns: u64,
    /// The part of `irq_ns` charged to the interrupted thread (only
    /// without interrupt time accounting).
    pub irq_charged_ns: u64,
    pub thread_ns: u64,
    pub idle_ns: u64,
    pub ctx_switches: u64,
    /// Draws for the spread of this core's interrupt handler costs.
    pub cost_rng: ChaCha8Rng,
}

impl Core {
    pub(crate) fn new(cost_rng: ChaCha8Rng) -> Self {
        Core {
            cost_rng,
            irq_pending: VecDeque::with_capacity(64),
            seg: None,
            token: 0,
            current: None,
            last_ran: None,
            rq: Vec::with_capacity(8),
            min_vruntime: 0,
            need_resched: false,
            next_buddy: None,
            last_buddy: None,
            slice_token: 0,
            idle_since: None,
            reaped: Vec::new(),
            wake_list: Vec::new(),
            irq_ns: 0,
            irq_charged_ns: 0,
            thread_ns: 0,
            idle_ns: 0,
            ctx_switches: 0,
        }
    }

    /// CFS's `clear_buddies`: thread `t` is no longer a buddy.
    pub(crate) fn clear_buddy(&mut self, t: u32) {
        if self.next_buddy == Some(t) {
            self.next_buddy = None;
        }
        if self.last_buddy == Some(t) {
            self.last_buddy = None;
        }
    }

    /// Accounts idle time up to `now` (the core stays idle).
    pub(crate) fn settle_idle(&mut self, now: Nanos) {
        if let Some(since) = self.idle_since {
            self.idle_ns += now - since;
            self.idle_since = Some(now);
        }
    }

    /// The core stops being idle at `now`.
    pub(crate) fn leave_idle(&mut self, now: Nanos) {
        if let Some(since) = self.idle_since.take() {
            self.idle_ns += now - since;
        }
    }

    pub(crate) fn reset_counters(&mut self) {
        self.irq_ns = 0;
        self.irq_charged_ns = 0;
        self.thread_ns = 0;
        self.idle_ns = 0;
        self.ctx_switches = 0;
    }
}

impl World<'_> {
    /// CPU time `cost` spent by thread `t`, varied by the host's spread.
    pub(crate) fn thread_cost(&mut self, t: usize, cost: Nanos) -> Nanos {
        match &self.spread {
            Some(spread) => spread.vary(cost, &mut self.threads[t].cost_rng),
            None => cost,
        }
    }

    /// CPU time `cost` spent by an interrupt handler on core `c`, varied by
    /// the host's spread.
    pub(crate) fn handler_cost(&mut self, c: usize, cost: Nanos) -> Nanos {
        match &self.spread {
            Some(spread) => spread.vary(cost, &mut self.cores[c].cost_rng),
            None => cost,
        }
    }
}
