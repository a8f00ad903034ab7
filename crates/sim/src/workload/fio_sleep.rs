//! fio's own sleep between requests, as fio 3.33 runs it (time.c
//! `usec_sleep`), which its think time and its rate limiter use.
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
//! * The rate limiter's sleeps ([`super::rate`]) and the think time's are
//!   this sleep.
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

    /// A busy loop of `d` on the clock in user space (fio's `usec_spin`):
    /// exactly `d` of CPU, without the host's spread of kernel costs.
    pub(crate) fn set_clock_spin(&mut self, t: usize, d: Nanos, then: Cont) {
        let th = &mut self.threads[t];
        th.act = crate::world::Activity::Burst { left: d, then };
        th.user_left = d;
    }
}
