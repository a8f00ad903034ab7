//! fio's rate limiter, as fio 3.33 runs it (backend.c `usec_for_io`,
//! io_u.c `rate_ddir`, init.c `__setup_rate`): the one set of rules both
//! engines pace a job's threads by. The simulator keeps a thread's single
//! schedule beside its other pacing (a trace's); the emulator keeps it in
//! the thread. Either passes it in where a rule needs it.
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
//!   was ahead by when it looked, however long the reaping took.
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
//! for both directions, each request moving it by its own direction's
//! share.

use cint_policy::Nanos;
use rand::Rng;

use crate::model::{IoJob, IoShape, RateUnit};

const SEC: u64 = 1_000_000_000;

/// One thread's rate limiter: the job's caps, and the schedules of a job
/// capped per direction.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Bytes per second of each direction's schedule, `[reads, writes]`;
    /// 0: that direction is not capped.
    bps: [u64; 2],
    /// Each direction's smallest request size (fio's `min_bs`).
    min_bs: [u64; 2],
    /// The mean request's share of each direction's schedule: how many
    /// requests one look lets go at once.
    interval: [Nanos; 2],
    /// Each direction on a schedule of its own (fio's pacing of a cap per
    /// direction); false: one schedule, which the caller keeps.
    per_direction: bool,
    /// Percent of the requests drawn as reads.
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
    pub fn of_job(io: &IoJob) -> Option<Pacer> {
        let shape = &io.shape;
        let smallest = |write| crate::shape::smallest_block_of(shape, io.bs, write);
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
            let mean = mean_block_of(shape, io.bs, write);
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

    /// Each direction on a schedule of its own (a cap per direction).
    #[inline]
    pub fn per_direction(&self) -> bool {
        self.per_direction
    }

    /// How far a request of `bytes` in direction `write` moves its
    /// schedule: its bytes' share of a second (`usec_for_io`), or under a
    /// Poisson process an exponential draw of one smallest request's
    /// share, in whole microseconds as fio draws it (`1000000 / iops`
    /// times `-logf(u)`, each truncated). Nothing for a direction without
    /// a cap.
    fn step(&self, write: bool, bytes: u64, rng: &mut impl Rng) -> Nanos {
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
    #[inline]
    fn draws(&self, write: bool) -> bool {
        if write {
            self.rwmixread < 100
        } else {
            self.rwmixread > 0
        }
    }

    /// fio's choice of the next request's direction, per direction
    /// ([`rate_ddir`]): the drawn one, or the other, and how long the
    /// thread is ahead of the one settled.
    #[inline]
    fn settle(&self, drawn: bool, now: Nanos) -> (bool, Option<Nanos>) {
        let next = |d: usize| (self.bps[d] > 0).then_some(self.next[d]);
        let draws = [self.draws(false), self.draws(true)];
        rate_ddir(drawn, now, [next(0), next(1)], draws)
    }

    /// Requests of direction `write` behind its schedule at `now`.
    #[inline]
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

    /// How long the thread is ahead of its rate at `now`, if it is, its
    /// single schedule next letting a request go at `single`. Per
    /// direction, the look settles the next request's direction, as fio's
    /// `rate_ddir` does: the drawn one (`draw`, unless an earlier look
    /// settled it) when behind, the other when that is behind, else the
    /// nearer of the two after the sleep.
    pub fn ahead_by(
        &mut self,
        single: Nanos,
        now: Nanos,
        draw: impl FnOnce() -> bool,
    ) -> Option<Nanos> {
        if !self.per_direction {
            return (now < single).then(|| single - now);
        }
        let drawn = self.pending.unwrap_or_else(draw);
        let (settled, ahead_by) = self.settle(drawn, now);
        self.pending = Some(settled);
        ahead_by
    }

    /// The direction of the next request under caps per direction (`None`
    /// otherwise): the one the last look settled, else drawn (`draw`) and
    /// settled as a look would (a later request of the same submission
    /// call), but never held back: the count of requests due bounded the
    /// call.
    pub fn next_direction(&mut self, now: Nanos, draw: impl FnOnce() -> bool) -> Option<bool> {
        if !self.per_direction {
            return None;
        }
        if let Some(write) = self.pending.take() {
            return Some(write);
        }
        let drawn = draw();
        // Both ahead, the call goes on in the drawn direction.
        match self.settle(drawn, now) {
            (settled, None) => Some(settled),
            (_, Some(_)) => Some(drawn),
        }
    }

    /// Moves the schedule by a request of `bytes` in direction `write`:
    /// its direction's, or the single one at `single`.
    pub fn advance(&mut self, single: &mut Nanos, write: bool, bytes: u64, rng: &mut impl Rng) {
        let step = self.step(write, bytes, rng);
        self.last_write = write;
        let next = if self.per_direction {
            &mut self.next[usize::from(write)]
        } else {
            single
        };
        *next = next.saturating_add(step);
    }

    /// Requests the rate lets go at `now`: all those behind the schedule
    /// (fio keeps no cap on the backlog), per direction the sum of both;
    /// `u32::MAX` for as many as the thread likes.
    #[inline]
    pub fn tokens(&self, single: Nanos, now: Nanos) -> u32 {
        if self.per_direction {
            return self.due(false, now).saturating_add(self.due(true, now));
        }
        if now < single {
            0
        } else {
            ((now - single) / self.interval[0] + 1).min(u64::from(u32::MAX)) as u32
        }
    }

    /// fio's `rate_ign_think` (backend.c `handle_thinktime`): the schedule
    /// of the last request's direction moves on by the think time, less
    /// one smallest request's share when that is shorter (fio adds the
    /// bytes it would have issued, less a block, so the next request goes
    /// at once), or by all of it under a Poisson process.
    #[inline]
    pub fn ignore_think(&mut self, single: &mut Nanos, think: Nanos) {
        let d = usize::from(self.last_write);
        if self.bps[d] == 0 {
            return;
        }
        let per_request = u128::from(self.min_bs[d]) * u128::from(SEC) / u128::from(self.bps[d]);
        let per_request = u64::try_from(per_request).unwrap_or(u64::MAX).max(1);
        let shift = if self.poisson {
            think
        } else {
            rate_ign_think_shift(per_request, think)
        };
        let next = if self.per_direction {
            &mut self.next[d]
        } else {
            single
        };
        *next = next.saturating_add(shift);
    }

    /// The schedules count from `from` (a job's start), or start over
    /// there (`over`: the end of a ramp, where fio's `reset_all_stats`
    /// restarts them, so the next request goes at once). A schedule
    /// already past `from` stays where it is unless it starts over.
    #[inline]
    pub fn start_from(&mut self, single: &mut Nanos, from: Nanos, over: bool) {
        start_schedule(single, from, over);
        if self.per_direction {
            for next in &mut self.next {
                start_schedule(next, from, over);
            }
        }
    }
}

/// A schedule at `next` counts from `from`, or starts over there.
#[inline]
pub fn start_schedule(next: &mut Nanos, from: Nanos, over: bool) {
    if over || *next < from {
        *next = from;
    }
}

/// The mean request size of one direction (`write`: the writes'): how
/// far the mean request moves a rate cap's schedule, for the count of
/// requests due (each request then moves it by its own bytes).
fn mean_block_of(shape: &IoShape, bs: u64, write: bool) -> u64 {
    let (range, split) = crate::shape::sizes_of(shape, write);
    if let Some((lo, hi)) = range {
        let n = (hi / lo).max(1);
        if hi % lo == 0 {
            return lo * (n + 1) / 2;
        }
        // The multiples' share, `lo / hi` each, and `hi`'s, the rest.
        let (lo, n, hi) = (u128::from(lo), u128::from(n), u128::from(hi));
        let sum = lo * lo * n * (n + 1) / 2 + hi * (hi - n * lo);
        return u64::try_from(sum / hi).unwrap_or(u64::MAX);
    }
    if split.is_empty() {
        return bs;
    }
    split
        .iter()
        .map(|s| s.bytes * u64::from(s.percent))
        .sum::<u64>()
        / 100
}

/// fio's `rate_ign_think` (backend.c `handle_thinktime`): how far a think
/// time of `think` moves a rate's schedule on, where one request moves it
/// by `per_request`: the think time less that request's share when the
/// share is shorter (fio adds the bytes it would have issued, less a
/// block, so the next request goes at once), else the whole think time.
fn rate_ign_think_shift(per_request: Nanos, think: Nanos) -> Nanos {
    if per_request <= think {
        think - per_request
    } else {
        think
    }
}

/// fio's choice of the next request's direction under a cap per
/// direction (fio 3.33, io_u.c `rate_ddir`), for the direction `drawn`
/// (`true`: a write): it when behind its schedule, else the other when
/// the job draws it (`draws`, reads' and writes') and it is behind; both
/// ahead, the nearer of the two, with how long until it. `next` is when
/// each direction may go next, `None` for one without a cap, which is
/// never ahead.
#[inline]
fn rate_ddir(
    drawn: bool,
    now: Nanos,
    next: [Option<Nanos>; 2],
    draws: [bool; 2],
) -> (bool, Option<Nanos>) {
    let other = !drawn;
    let at = |write: bool| next[usize::from(write)];
    let behind = |write: bool| at(write).is_none_or(|t| t <= now);
    let draws_other = draws[usize::from(other)];
    if behind(drawn) {
        return (drawn, None);
    }
    if draws_other && behind(other) {
        return (other, None);
    }
    // Both ahead, so both capped.
    let (mine, theirs) = (at(drawn).unwrap_or(now), at(other).unwrap_or(now));
    if draws_other && theirs < mine {
        (other, Some(theirs - now))
    } else {
        (drawn, Some(mine - now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The pacer of a scenario's one job, given its keys.
    fn pacer(job_keys: &str) -> Pacer {
        let mut p = Pacer::of_job(&crate::test_io_job(job_keys)).expect("a capped job");
        p.start_from(&mut 0, 0, true);
        p
    }

    fn rng() -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(1)
    }

    const MIXED_4K: &str = "rw = \"randrw\"\nrwmixread = 50\nbs = \"4k\"\n";

    #[test]
    fn the_drawn_direction_goes_when_behind_else_the_other_else_the_nearer() {
        // 1000 reads and 500 writes a second: a read every 1 ms, a write
        // every 2 ms.
        let mut p = pacer(&format!("{MIXED_4K}rate_iops = \"1000,500\""));
        let (mut single, mut rng) = (0, rng());
        assert_eq!(p.ahead_by(single, 0, || false), None);
        assert_eq!(p.next_direction(0, || unreachable!("settled")), Some(false));
        p.advance(&mut single, false, 4096, &mut rng);
        // Reads ahead until 1 ms; writes behind: the write goes.
        assert_eq!(p.ahead_by(single, 100, || false), None);
        assert_eq!(
            p.next_direction(100, || unreachable!("settled")),
            Some(true)
        );
        p.advance(&mut single, true, 4096, &mut rng);
        // Both ahead: the nearer, reads at 1 ms, after 0.9 ms.
        assert_eq!(p.ahead_by(single, 100_000, || true), Some(900_000));
        assert_eq!(
            p.next_direction(100_000, || unreachable!("settled")),
            Some(false)
        );
        // At 5 ms the reads' schedule is 4 ms behind (5 due), the writes'
        // 3 ms (2 due).
        assert_eq!(p.tokens(single, 5_000_000), 5 + 2);
        assert_eq!(single, 0, "per direction, the single schedule is not used");
        // An uncapped direction is never held.
        let free = pacer(&format!("{MIXED_4K}rate_iops = \"1000,\""));
        assert_eq!(free.tokens(0, 0), u32::MAX);
        let mut free = free;
        assert_eq!(free.ahead_by(0, 0, || true), None);
    }

    #[test]
    fn a_direction_the_job_does_not_draw_is_neither_chosen_nor_due() {
        let mut p = pacer("rw = \"randrw\"\nrwmixread = 100\nrate_iops = \"1000,1000\"");
        p.advance(&mut 0, false, 4096, &mut rng());
        assert_eq!(p.ahead_by(0, 10, || false), Some(999_990));
        assert_eq!(p.tokens(0, 10), 0);
    }

    #[test]
    fn ignoring_a_think_time_moves_only_the_last_requests_direction() {
        let mut p = pacer(&format!("{MIXED_4K}rate_iops = \"1000,1000\""));
        let mut rng = rng();
        p.advance(&mut 0, false, 4096, &mut rng);
        p.advance(&mut 0, true, 4096, &mut rng);
        p.ignore_think(&mut 0, 10_000_000);
        // Writes' schedule moved by 10 ms less one request's 1 ms: at 2 ms
        // the reads are behind, the writes 8 ms ahead.
        assert_eq!(p.ahead_by(0, 2_000_000, || true), None);
        assert_eq!(p.next_direction(2_000_000, || true), Some(false));
        assert_eq!(p.ahead_by(0, 2_000_000, || true), None);
        let mut both_ahead = p;
        both_ahead.advance(&mut 0, false, 4096, &mut rng);
        both_ahead.advance(&mut 0, false, 4096, &mut rng);
        assert_eq!(both_ahead.ahead_by(0, 2_000_000, || true), Some(1_000_000));
    }

    #[test]
    fn an_iops_cap_counts_a_request_by_its_bytes_over_the_smallest_size() {
        // 1000 a second of the smallest, 4 KiB: a 64 KiB request moves the
        // schedule by sixteen of them (fio's `rate_bps = rate_iops *
        // min_bs`).
        let mut p = pacer("rw = \"randread\"\nbssplit = \"4k/50:64k/50\"\nrate_iops = 1000");
        let (mut single, mut rng) = (0, rng());
        p.advance(&mut single, false, 4096, &mut rng);
        assert_eq!(single, 1_000_000);
        p.advance(&mut single, false, 65_536, &mut rng);
        assert_eq!(single, 17_000_000);
        assert_eq!(p.ahead_by(single, 2_000_000, || false), Some(15_000_000));
        // The count due is by the mean request, 34 KiB: 8.5 ms each.
        assert_eq!(p.tokens(single, 17_000_000 + 8_500_000), 2);
    }

    #[test]
    fn a_byte_rate_moves_by_each_requests_own_bytes() {
        let mut p = pacer("rw = \"randread\"\nbsrange = \"4k-8k\"\nrate = \"4m\"");
        let (mut single, mut rng) = (0, rng());
        p.advance(&mut single, false, 8192, &mut rng);
        // 8 KiB of 4 MiB a second.
        assert_eq!(single, 8192 * 1_000_000_000 / (4 << 20));
    }

    #[test]
    fn a_poisson_process_draws_whole_microseconds_around_one_smallest_share() {
        let mut p = pacer(
            "rw = \"randread\"\nbssplit = \"4k/50:64k/50\"\nrate_iops = 1000\n\
             rate_process = \"poisson\"",
        );
        let (mut single, mut rng) = (0, rng());
        let n = 20_000u64;
        for i in 0..n {
            let before = single;
            // The size does not count: one smallest request's share.
            p.advance(
                &mut single,
                false,
                if i % 2 == 0 { 4096 } else { 65_536 },
                &mut rng,
            );
            assert_eq!((single - before) % 1_000, 0, "whole microseconds");
        }
        let mean = single / n;
        assert!(
            (950_000..1_050_000).contains(&mean),
            "mean gap {mean} ns, against 1 ms"
        );
        // A think time moves a Poisson schedule by all of it.
        let before = single;
        p.ignore_think(&mut single, 5_000_000);
        assert_eq!(single - before, 5_000_000);
    }

    #[test]
    fn schedules_count_from_the_start_and_start_over_at_the_ramps_end() {
        let mut p = pacer(&format!("{MIXED_4K}rate_iops = \"1000,1000\""));
        let mut rng = rng();
        let mut single = 0;
        p.start_from(&mut single, 5_000, false);
        assert_eq!(single, 5_000, "a schedule before the start moves to it");
        p.advance(&mut single, false, 4096, &mut rng);
        p.start_from(&mut single, 2_000, false);
        // Both ahead of 2 us, kept where they were: the writes', at 5 us,
        // nearer than the reads', at 1.005 ms.
        assert_eq!(p.ahead_by(single, 2_000, || false), Some(3_000));
        assert_eq!(p.next_direction(2_000, || false), Some(true));
        p.start_from(&mut single, 2_000, true);
        assert_eq!(p.ahead_by(single, 2_000, || false), None);
    }

    #[test]
    fn rate_ddir_takes_the_nearer_direction_only_if_the_job_draws_it() {
        assert_eq!(
            rate_ddir(false, 10, [Some(20), Some(15)], [true, true]),
            (true, Some(5))
        );
        assert_eq!(
            rate_ddir(false, 10, [Some(20), Some(15)], [true, false]),
            (false, Some(10))
        );
        assert_eq!(
            rate_ddir(true, 10, [Some(20), None], [true, true]),
            (true, None)
        );
    }
}
