//! fio's rate limiter, as fio 3.33 runs it (backend.c `usec_for_io`,
//! io_u.c `rate_ddir`, init.c `__setup_rate`).
//!
//! * A direction's schedule counts from the job's start (again from the
//!   end of its ramp). Each request moves it by its bytes over the
//!   direction's bytes per second. A `rate_iops` cap is `rate_iops` times
//!   the direction's smallest size, so a 64 KiB request of a `4k/50:64k/50`
//!   split counts as sixteen: `rate_iops=1000` issues about 1000 × 4 KiB a
//!   second there, 137 requests in fio 3.33's second.
//! * Under `rate_process = "poisson"` each request moves it by an
//!   exponential draw of one smallest request's share, in whole
//!   microseconds, whatever the request's size: `rate=4m` on that split
//!   issues about 1000 requests a second (fio: 951), eight times the cap's
//!   bytes.
//! * Before each request the thread looks at the schedule. Behind it, it
//!   issues; a thread that fell behind issues without pause until it has
//!   caught up, as deep as its queue allows. Ahead of it, it first reaps
//!   every request it has in flight (`io_u_quiesce`), then sleeps what it
//!   was ahead by when it looked, however long the reaping took
//!   ([`super::fio_sleep`]).
//! * A job that reads and writes, capped per direction (`"READS,WRITES"`),
//!   paces each direction on a schedule of its own. Its drawn direction
//!   goes when it is behind; else the other goes when that one is behind
//!   and the job draws it at all; else the thread reaps and sleeps until
//!   the nearer of the two, which then goes. A direction without a cap is
//!   always behind. So `rate_iops = "1000,1000"` on a 70/30 mix issues
//!   1000 reads and 1000 writes a second, and `"1000,"` issues reads at
//!   1000 a second and writes as fast as the queue goes (fio 3.33: 1000
//!   and 1000; 1000 and 3 million on its null engine).
//!
//! A scenario's one cap on a job that reads and writes keeps one schedule
//! for both directions (the thread's `next_issue_at`), each request moving
//! it by its own direction's share.

use cint_policy::{Nanos, SEC};
use cint_scenario::{IoJob, RateUnit};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::world::World;

/// One thread's rate limiter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pacer {
    /// Bytes per second of each direction's schedule, `[reads, writes]`;
    /// 0: that direction is not capped.
    bps: [u64; 2],
    /// Each direction's smallest request size (fio's `min_bs`).
    min_bs: [u64; 2],
    /// The mean request's share of each direction's schedule: how many
    /// requests one look lets go at once.
    interval: [Nanos; 2],
    /// Each direction on a schedule of its own (fio's pacing of a cap per
    /// direction); false: one schedule, the thread's `next_issue_at`.
    per_direction: bool,
    /// Percent of the requests drawn as reads, when per direction.
    rwmixread: u8,
    /// Each direction's next issue instant, when per direction.
    next: [Nanos; 2],
    /// The direction the last look settled for the next request, when per
    /// direction: fio draws it before it looks (`get_rw_ddir`).
    pending: Option<bool>,
    /// The direction of the thread's last request: `rate_ign_think` moves
    /// that direction's schedule, as fio does.
    last_write: bool,
    /// `rate_process = "poisson"`.
    poisson: bool,
}

impl Pacer {
    /// The rate limiter of a thread of job `io`, if the job is capped.
    pub(crate) fn of_job(io: &IoJob) -> Option<Pacer> {
        let shape = &io.shape;
        let smallest = |write| cint_scenario::shape::smallest_block_of(shape, io.bs, write);
        let min_bs = [smallest(false), smallest(true)];
        let per_request = |cap: u64, unit: RateUnit, write: bool| match unit {
            RateUnit::Iops => cap.saturating_mul(min_bs[usize::from(write)]),
            RateUnit::Bytes => cap,
        };
        let (bps, per_direction) = if let Some(caps) = shape.rate_per_direction {
            let bps = |write| {
                caps.of(write)
                    .map_or(0, |c| per_request(c, caps.unit, write))
            };
            ([bps(false), bps(true)], true)
        } else if let Some(r) = io.rate_iops {
            let bps = |write| per_request(r, RateUnit::Iops, write);
            ([bps(false), bps(true)], false)
        } else {
            let r = shape.rate?;
            ([r, r], false)
        };
        let interval = |write: bool| {
            let bps = bps[usize::from(write)];
            if bps == 0 {
                return 0;
            }
            let mean = super::pattern::mean_block_of(shape, io.bs, write);
            let iv = u128::from(mean) * u128::from(SEC) / u128::from(bps);
            u64::try_from(iv).unwrap_or(u64::MAX).max(1)
        };
        Some(Pacer {
            bps,
            min_bs,
            interval: [interval(false), interval(true)],
            per_direction,
            rwmixread: io.rwmixread.min(100),
            next: [0; 2],
            pending: None,
            last_write: false,
            poisson: shape.rate_poisson,
        })
    }

    /// How far a request of `bytes` in direction `write` moves its
    /// schedule: its bytes' share of a second (`usec_for_io`), or under a
    /// Poisson process an exponential draw of one smallest request's
    /// share, in whole microseconds as fio draws it (`1000000 / iops`
    /// times `-logf(u)`, each truncated). Nothing for a direction without
    /// a cap.
    fn step(&self, write: bool, bytes: u64, rng: &mut ChaCha8Rng) -> Nanos {
        let d = usize::from(write);
        let bps = self.bps[d];
        if bps == 0 {
            return 0;
        }
        if self.poisson {
            // The scenario refuses a cap under one smallest request a
            // second, where fio divides by zero.
            let iops = (bps / self.min_bs[d].max(1)).max(1);
            let mean_us = 1_000_000 / iops;
            // 1 - U lies in (0, 1]: its logarithm is finite.
            let u: f64 = 1.0 - rng.gen::<f64>();
            let us = mean_us as f64 * -u.ln();
            let most = (u64::MAX / 1_000) as f64;
            return if us >= most {
                u64::MAX
            } else {
                (us as u64) * 1_000
            };
        }
        let step = u128::from(bytes) * u128::from(SEC) / u128::from(bps);
        u64::try_from(step).unwrap_or(u64::MAX).max(1)
    }

    /// Whether the job draws direction `write` at all.
    fn draws(&self, write: bool) -> bool {
        if write {
            self.rwmixread < 100
        } else {
            self.rwmixread > 0
        }
    }

    /// fio's choice of the next request's direction, per direction
    /// (`cint_scenario::shape::rate_ddir`).
    fn settle(&self, drawn: bool, now: Nanos) -> (bool, Option<Nanos>) {
        let next = |d: usize| (self.bps[d] > 0).then_some(self.next[d]);
        let draws = [self.draws(false), self.draws(true)];
        cint_scenario::shape::rate_ddir(drawn, now, [next(0), next(1)], draws)
    }

    /// Requests of direction `write` behind its schedule at `now`.
    fn due(&self, write: bool, now: Nanos) -> u32 {
        let d = usize::from(write);
        if !self.draws(write) {
            return 0;
        }
        if self.bps[d] == 0 {
            return u32::MAX;
        }
        if now < self.next[d] {
            return 0;
        }
        ((now - self.next[d]) / self.interval[d].max(1) + 1).min(u64::from(u32::MAX)) as u32
    }
}

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
        let pacer = self.pacers.of[t]?;
        if !pacer.per_direction {
            let next = self.threads[t].next_issue_at;
            return (now < next).then(|| next - now);
        }
        let th = &mut self.threads[t];
        let drawn = match pacer.pending {
            Some(write) => write,
            None => super::pattern::is_write(th.prog.rw, th.prog.rwmixread, &mut th.rng),
        };
        let (settled, ahead_by) = pacer.settle(drawn, now);
        if let Some(p) = self.pacers.of[t].as_mut() {
            p.pending = Some(settled);
        }
        ahead_by
    }

    /// The direction of thread `t`'s next request, under a cap per
    /// direction: the one its last look settled, else drawn and settled
    /// as a look would (a later request of the same submission call), but
    /// never held back: the token count bounded the call.
    pub(crate) fn paced_direction(&mut self, t: usize) -> Option<bool> {
        let pacer = self.pacers.of[t].filter(|p| p.per_direction)?;
        if let Some(write) = pacer.pending {
            if let Some(p) = self.pacers.of[t].as_mut() {
                p.pending = None;
            }
            return Some(write);
        }
        let now = self.now();
        let th = &mut self.threads[t];
        let drawn = super::pattern::is_write(th.prog.rw, th.prog.rwmixread, &mut th.rng);
        // Both ahead, the call goes on in the drawn direction.
        match pacer.settle(drawn, now) {
            (settled, None) => Some(settled),
            (_, Some(_)) => Some(drawn),
        }
    }

    /// Moves thread `t`'s schedule by its request of `bytes` in direction
    /// `write`.
    pub(crate) fn advance_rate(&mut self, t: usize, write: bool, bytes: u64) {
        let Some(pacer) = self.pacers.of[t].as_mut() else {
            return;
        };
        let th = &mut self.threads[t];
        let step = pacer.step(write, bytes, &mut th.rng);
        pacer.last_write = write;
        if pacer.per_direction {
            let next = &mut pacer.next[usize::from(write)];
            *next = next.saturating_add(step);
        } else {
            th.next_issue_at = th.next_issue_at.saturating_add(step);
        }
    }

    /// Requests thread `t` may issue at `now` as its rate goes: all those
    /// behind the schedule (fio keeps no cap on the backlog), per
    /// direction the sum of both.
    pub(crate) fn rate_tokens(&self, t: usize, now: Nanos) -> u32 {
        let Some(pacer) = self.pacers.of[t] else {
            return u32::MAX;
        };
        if pacer.per_direction {
            return pacer.due(false, now).saturating_add(pacer.due(true, now));
        }
        let next = self.threads[t].next_issue_at;
        if now < next {
            0
        } else {
            ((now - next) / pacer.interval[0] + 1).min(u64::from(u32::MAX)) as u32
        }
    }

    /// fio's `rate_ign_think` (backend.c `handle_thinktime`): the schedule
    /// of the last request's direction moves on by the think time, less
    /// one smallest request's share when that is shorter (fio adds the
    /// bytes it would have issued, less a block, so the next request goes
    /// at once), or by all of it under a Poisson process. fio moves it by
    /// the time it measured; the model by the think time it set out to
    /// take.
    pub(crate) fn rate_ignores_think(&mut self, t: usize, think: Nanos) {
        let Some(pacer) = self.pacers.of[t].as_mut() else {
            return;
        };
        let d = usize::from(pacer.last_write);
        if pacer.bps[d] == 0 {
            return;
        }
        let per_request = u128::from(pacer.min_bs[d]) * u128::from(SEC) / u128::from(pacer.bps[d]);
        let per_request = u64::try_from(per_request).unwrap_or(u64::MAX).max(1);
        let shift = if pacer.poisson {
            think
        } else {
            cint_scenario::shape::rate_ign_think_shift(per_request, think)
        };
        if pacer.per_direction {
            pacer.next[d] = pacer.next[d].saturating_add(shift);
        } else {
            let next = &mut self.threads[t].next_issue_at;
            *next = next.saturating_add(shift);
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
            self.threads[t].next_issue_at = now;
        } else if self.threads[t].next_issue_at < start {
            self.threads[t].next_issue_at = start;
        }
        if let Some(p) = self.pacers.of[t].as_mut().filter(|p| p.per_direction) {
            for next in &mut p.next {
                if restart || *next < from {
                    *next = from;
                }
            }
        }
    }
}
