//! fio's rate limiter in the simulator's thread loop: the rules are
//! `cint_scenario::rate`'s, which the emulator paces by too. A thread's
//! single schedule is its `next_issue_at`, which a trace's pacing also
//! uses.

use cint_policy::Nanos;
use cint_scenario::rate::{start_schedule, Pacer};

use crate::world::World;

/// Every thread's rate limiter (none for threads without a cap).
#[derive(Debug, Default)]
pub(crate) struct Pacers {
    of: Vec<Option<Pacer>>,
}

impl Pacers {
    /// The limiters of `threads`, each of its job's caps: only the threads
    /// whose program paces (offload workers and SQ threads keep none).
    pub(crate) fn new(sc: &cint_scenario::Scenario, threads: &[crate::world::Thread]) -> Pacers {
        let of = threads
            .iter()
            .map(|th| match &sc.jobs.get(th.job as usize)?.work {
                cint_scenario::Work::Io(io) if th.prog.rated && io.shape.trace.is_none() => {
                    Pacer::of_job(io)
                }
                _ => None,
            })
            .collect();
        Pacers { of }
    }
}

impl World<'_> {
    /// fio's `rate_ddir` before thread `t`'s next request: true when the
    /// thread is ahead of its rate and has begun to reap what it has in
    /// flight or to sleep. Traces keep their own pacing
    /// ([`super::trace`]).
    #[inline]
    pub(crate) fn rate_holds(&mut self, t: usize, now: Nanos) -> bool {
        let p = &self.threads[t].prog;
        if p.trace || !p.rated {
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
        let ahead_by = match self.shaping[t].rate_sleep {
            Some(usec) => usec,
            None => match self.ahead_of_rate(t, now) {
                Some(by) => by,
                None => return false,
            },
        };
        if self.quiesce(t) {
            self.shaping[t].rate_sleep = Some(ahead_by);
            return true;
        }
        self.shaping[t].rate_sleep = None;
        self.fio_sleep(t, ahead_by);
        true
    }

    /// How long thread `t` is ahead of its rate at `now`, if it is. Per
    /// direction, the look settles the next request's direction, as
    /// `rate_ddir` does: the drawn one when behind, the other when that
    /// is behind, else the nearer of the two after the sleep.
    fn ahead_of_rate(&mut self, t: usize, now: Nanos) -> Option<Nanos> {
        let pacer = self.pacers.of[t].as_mut()?;
        let th = &mut self.threads[t];
        pacer.ahead_by(th.next_issue_at, now, || {
            super::pattern::is_write(th.prog.rw, th.prog.rwmixread, &mut th.rng)
        })
    }

    /// The direction of thread `t`'s next request, under a cap per
    /// direction: the one its last look settled, else drawn and settled
    /// as a look would (a later request of the same submission call), but
    /// never held back: the token count bounded the call.
    pub(crate) fn paced_direction(&mut self, t: usize) -> Option<bool> {
        let now = self.now();
        let pacer = self.pacers.of[t].as_mut()?;
        let th = &mut self.threads[t];
        pacer.next_direction(now, || {
            super::pattern::is_write(th.prog.rw, th.prog.rwmixread, &mut th.rng)
        })
    }

    /// Moves thread `t`'s schedule by its request of `bytes` in direction
    /// `write`.
    pub(crate) fn advance_rate(&mut self, t: usize, write: bool, bytes: u64) {
        let Some(pacer) = self.pacers.of[t].as_mut() else {
            return;
        };
        let th = &mut self.threads[t];
        pacer.advance(&mut th.next_issue_at, write, bytes, &mut th.rng);
    }

    /// Requests thread `t` may issue at `now` as its rate goes: all those
    /// behind the schedule (fio keeps no cap on the backlog), per
    /// direction the sum of both.
    pub(crate) fn rate_tokens(&self, t: usize, now: Nanos) -> u32 {
        self.pacers.of[t]
            .as_ref()
            .map_or(u32::MAX, |p| p.tokens(self.threads[t].next_issue_at, now))
    }

    /// fio's `rate_ign_think` (backend.c `handle_thinktime`): the schedule
    /// of the last request's direction moves on by the think time, less
    /// one smallest request's share when that is shorter (fio adds the
    /// bytes it would have issued, less a block, so the next request goes
    /// at once), or by all of it under a Poisson process. fio moves it by
    /// the time it measured; the model by the think time it set out to
    /// take.
    pub(crate) fn rate_ignores_think(&mut self, t: usize, think: Nanos) {
        if let Some(pacer) = self.pacers.of[t].as_mut() {
            pacer.ignore_think(&mut self.threads[t].next_issue_at, think);
        }
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
        let restart = self.job_measuring(self.threads[t].job as usize, now);
        let from = if restart { now } else { start };
        if restart {
            self.shaping[t].rate_restarted = true;
        }
        let single = &mut self.threads[t].next_issue_at;
        match self.pacers.of[t].as_mut() {
            Some(p) => p.start_from(single, from, restart),
            None => start_schedule(single, from, restart),
        }
    }
}
