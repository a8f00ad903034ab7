//! fio's own waits between requests, as fio 3.33 runs them: its sleep
//! (time.c `usec_sleep`), which its think time and its rate limiter use,
//! and the rate limiter's check before each request (io_u.c `rate_ddir`).
//!
//! * `usec_sleep(usec)` spins on the clock (`usec_spin`) when `usec` is
//!   under `ns_granularity`; otherwise it calls `nanosleep(usec -
//!   ns_granularity)`, measures how long that took, and goes round again
//!   with what is left (a spin, in practice), until it has slept `usec`.
//!   `ns_granularity` is what fio measured at start (`fio_time_init`): the
//!   longest of ten `nanosleep` calls of 1 us, on an idle core, which the
//!   task's timer slack dominates ([`crate::host::HostCosts::fio_sleep_granularity`]).
//!   So a think time or a rate gap under about 55 us is a busy loop that
//!   never leaves the core, and a longer one a sleep that wakes 1 us or so
//!   early and spins the rest.
//! * Before each request, a rate-limited thread looks at its next issue
//!   instant. Behind it, it issues. Ahead of it, it first reaps every
//!   request it has in flight (`io_u_quiesce`: reap calls for at least one
//!   event each, until none is left), then sleeps what it was ahead by
//!   when it looked, whatever the reaping took. The instants follow one
//!   schedule from the job's start (`usec_for_io`: the bytes issued over
//!   the rate, or a Poisson process), so a thread that fell behind issues
//!   without pause until it has caught up, as deep as its queue allows.
//!
//! fio counts whole microseconds; the model counts nanoseconds. A spin
//! ends after its length of CPU time, where fio's ends on the clock: the
//! same unless another thread of its core preempts it.

use cint_policy::Nanos;

use crate::world::{Cont, Wait, World};

impl World<'_> {
    /// fio's `usec_sleep(usec)` by thread `t`, then the top of its loop.
    pub(crate) fn fio_sleep(&mut self, t: usize, usec: Nanos) {
        if usec == 0 {
            self.cont(t, Cont::Issue);
            return;
        }
        if usec < self.costs.fio_sleep_granularity() {
            self.set_clock_spin(t, usec, Cont::Issue);
            return;
        }
        let now = self.now();
        let s = &mut self.shaping[t];
        s.sleep_left = usec;
        s.sleep_from = now;
        let c = self.costs;
        let request = usec - c.fio_sleep_granularity();
        self.set_burst(t, c.syscall + c.timer_setup, Cont::FioNanosleep(request));
    }

    /// `nanosleep(request)` armed its timer: the thread sleeps to the end
    /// of the timer's slack range (and the timer interrupt's lateness).
    pub(crate) fn fio_nanosleep(&mut self, t: usize, request: Nanos) {
        let c = self.costs;
        let at = self.now() + request + c.task_timer_slack + c.timer_slack;
        self.block_with_timer(t, Wait::FioSleep, at);
    }

    /// Back in user space from `nanosleep`: fio takes the time since it
    /// called and goes round again with what is left, unless it has slept
    /// enough or the job is told to stop (the loop checks
    /// `td->terminate`).
    pub(crate) fn fio_sleep_returned(&mut self, t: usize) {
        let now = self.now();
        let s = self.shaping[t];
        let slept = now - s.sleep_from;
        let stopping = self.threads[t].prog.stop_at.is_some_and(|at| now >= at);
        if slept >= s.sleep_left || stopping {
            self.cont(t, Cont::Issue);
        } else {
            self.fio_sleep(t, s.sleep_left - slept);
        }
    }

    /// fio's `rate_ddir` before thread `t`'s next request: true when the
    /// thread is ahead of its rate and has begun to reap what it has in
    /// flight or to sleep. Traces keep their own pacing
    /// ([`super::trace`]).
    #[inline]
    pub(crate) fn rate_holds(&mut self, t: usize, now: Nanos) -> bool {
        let p = &self.threads[t].prog;
        if p.trace || p.rate_interval.is_none() {
            return false;
        }
        self.rate_check(t, now)
    }

    /// [`World::rate_holds`] for a rate-limited thread; out of line, so
    /// that the loop of a thread without a rate stays small.
    #[inline(never)]
    fn rate_check(&mut self, t: usize, now: Nanos) -> bool {
        if !self.shaping[t].rate_restarted {
            self.restart_rate_after_ramp(t, now);
        }
        let th = &self.threads[t];
        let ahead_by = match self.shaping[t].rate_sleep {
            Some(usec) => usec,
            None if now < th.next_issue_at => th.next_issue_at - now,
            None => return false,
        };
        if self.quiesce(t) {
            self.shaping[t].rate_sleep = Some(ahead_by);
            return true;
        }
        self.shaping[t].rate_sleep = None;
        self.fio_sleep(t, ahead_by);
        true
    }

    /// fio's rate schedule counts from the job's start, and again from
    /// the end of its ramp, where fio resets its statistics and with them
    /// the schedule (libfio.c `reset_all_stats`: the issued bytes, the
    /// next instant and the Poisson process's time start over, so the
    /// next request goes at once). A thread waiting for its job's start
    /// has no schedule yet.
    fn restart_rate_after_ramp(&mut self, t: usize, now: Nanos) {
        let Some(start) = self.job_start(self.threads[t].job as usize) else {
            return;
        };
        if now >= start.saturating_add(self.sc.warmup) {
            self.shaping[t].rate_restarted = true;
            self.threads[t].next_issue_at = now;
        } else if self.threads[t].next_issue_at < start {
            self.threads[t].next_issue_at = start;
        }
    }

    /// A busy loop of `d` on the clock in user space (fio's `usec_spin`):
    /// exactly `d` of CPU, without the host's spread of kernel costs.
    pub(crate) fn set_clock_spin(&mut self, t: usize, d: Nanos, then: Cont) {
        let th = &mut self.threads[t];
        th.act = crate::world::Activity::Burst { left: d, then };
        th.user_left = d;
    }
}
