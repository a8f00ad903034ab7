//! fio's rate caps per direction (`rate_iops = "R,W"`, `rate = "R,W"`) on
//! a job that reads and writes: each direction on a schedule of its own,
//! the next request's direction settled as fio 3.33's `rate_ddir` settles
//! it (io_u.c), as the simulator does (`crates/sim/src/workload/rate.rs`).

use cint_policy::Nanos;
use cint_scenario::{IoJob, RateUnit};

const SEC: u128 = 1_000_000_000;

/// How far one request of `bs` bytes moves a schedule capped at `cap`
/// (requests or bytes a second, `unit`), `num / den` nanoseconds: its
/// share of a second, or its bytes' (fio's `usec_for_io`); `None` for a
/// cap of 0, which holds nothing.
pub(crate) fn rate_step(unit: RateUnit, cap: u64, bs: u64) -> Option<(u128, u128)> {
    (cap > 0).then(|| match unit {
        RateUnit::Iops => (SEC, u128::from(cap)),
        RateUnit::Bytes => (SEC * u128::from(bs.max(1)), u128::from(cap)),
    })
}

/// One thread's two schedules, reads' and writes'.
#[derive(Debug)]
pub(crate) struct DirectionPacer {
    /// Per direction (reads, writes), how far each request moves its
    /// schedule, `num / den` nanoseconds: one request's share of a second
    /// of its cap, or its bytes' (every request is `bs`: a cap beside
    /// several sizes is refused); `None`: not capped.
    step: [Option<(u128, u128)>; 2],
    /// When each schedule started.
    start: [Nanos; 2],
    /// Requests counted against each since.
    issued: [u64; 2],
    /// Whether the job draws reads, writes, at all.
    draws: [bool; 2],
    /// The direction the last look settled, for the request it let go.
    pub pending: Option<bool>,
}

impl DirectionPacer {
    /// The pacer of `io`, if its caps are per direction.
    pub(crate) fn of_job(io: &IoJob) -> Option<DirectionPacer> {
        let caps = io.shape.rate_per_direction?;
        let step = |write: bool| rate_step(caps.unit, caps.of(write)?, io.bs);
        Some(DirectionPacer {
            step: [step(false), step(true)],
            start: [0; 2],
            issued: [0; 2],
            draws: [io.rwmixread > 0, io.rwmixread < 100],
            pending: None,
        })
    }

    /// Both schedules start again at `now` (the thread's start, and the
    /// end of its ramp, as fio's `reset_all_stats` restarts them).
    pub(crate) fn restart(&mut self, now: Nanos) {
        self.start = [now; 2];
        self.issued = [0; 2];
    }

    /// When direction `write` lets its next request go; `None`: never
    /// held.
    fn next(&self, write: bool) -> Option<Nanos> {
        let d = usize::from(write);
        let (num, den) = self.step[d]?;
        let moved = u128::from(self.issued[d]) * num / den;
        Some(self.start[d].saturating_add(u64::try_from(moved).unwrap_or(u64::MAX)))
    }

    /// fio's choice of the next request's direction
    /// (`cint_scenario::shape::rate_ddir`, as the simulator's).
    pub(crate) fn settle(&self, drawn: bool, now: Nanos) -> (bool, Option<Nanos>) {
        let next = [self.next(false), self.next(true)];
        cint_scenario::shape::rate_ddir(drawn, now, next, self.draws)
    }

    /// Requests behind the schedules at `now`, both directions together
    /// (fio keeps no cap on the backlog).
    pub(crate) fn due(&self, now: Nanos) -> usize {
        [false, true]
            .into_iter()
            .map(|write| self.due_in(write, now))
            .fold(0, usize::saturating_add)
    }

    fn due_in(&self, write: bool, now: Nanos) -> usize {
        let d = usize::from(write);
        if !self.draws[d] {
            return 0;
        }
        let (Some((num, den)), Some(next)) = (self.step[d], self.next(write)) else {
            return usize::MAX;
        };
        if now < next {
            return 0;
        }
        let behind = u128::from(now - next) * den / num + 1;
        usize::try_from(behind).unwrap_or(usize::MAX)
    }

    /// A request of direction `write` goes: its schedule moves.
    pub(crate) fn count(&mut self, write: bool) {
        self.issued[usize::from(write)] += 1;
    }

    /// fio's `rate_ign_think` after a think time of `think`: the schedule
    /// of direction `write` moves on by it, less one request's share when
    /// that is shorter.
    pub(crate) fn ignore_think(&mut self, write: bool, think: Nanos) {
        let d = usize::from(write);
        let Some((num, den)) = self.step[d] else {
            return;
        };
        let per_request = u64::try_from(num / den).unwrap_or(u64::MAX);
        let shift = cint_scenario::shape::rate_ign_think_shift(per_request, think);
        self.start[d] = self.start[d].saturating_add(shift);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer(read: Option<u64>, write: Option<u64>, rwmixread: u8) -> DirectionPacer {
        let mut io =
            cint_test_support::scenario::io_job("p", cint_scenario::Engine::Psync, 1, 1, 1);
        let cint_scenario::Work::Io(io) = &mut io.work else {
            unreachable!("an I/O job");
        };
        io.rwmixread = rwmixread;
        io.shape.rate_per_direction = Some(cint_scenario::DirectionRates {
            unit: RateUnit::Iops,
            read,
            write,
        });
        let mut p = DirectionPacer::of_job(io).expect("per direction");
        p.restart(0);
        p
    }

    #[test]
    fn the_drawn_direction_goes_when_behind_else_the_other_else_the_nearer() {
        // 1000 reads and 500 writes a second: a read every 1 ms, a write
        // every 2 ms.
        let mut p = pacer(Some(1_000), Some(500), 50);
        assert_eq!(p.settle(false, 0), (false, None));
        p.count(false);
        // Reads ahead until 1 ms; writes behind: the write goes.
        assert_eq!(p.settle(false, 100), (true, None));
        p.count(true);
        // Both ahead: the nearer, reads at 1 ms, after 0.9 ms.
        assert_eq!(p.settle(true, 100_000), (false, Some(900_000)));
        // At 5 ms the reads' schedule is 4 ms behind (5 due), the writes'
        // 3 ms (2 due).
        assert_eq!(p.due(5_000_000), 5 + 2);
        // An uncapped direction is never held.
        let free = pacer(Some(1_000), None, 50);
        assert_eq!(free.due(0), usize::MAX);
        assert_eq!(free.settle(true, 0), (true, None));
    }

    #[test]
    fn a_direction_the_job_does_not_draw_is_neither_chosen_nor_due() {
        let mut p = pacer(Some(1_000), Some(1_000), 100);
        p.count(false);
        assert_eq!(p.settle(false, 10), (false, Some(999_990)));
        assert_eq!(p.due(10), 0);
    }

    #[test]
    fn ignoring_a_think_time_moves_only_its_direction() {
        let mut p = pacer(Some(1_000), Some(1_000), 50);
        p.count(false);
        p.count(true);
        p.ignore_think(true, 10_000_000);
        // Writes' schedule moved by 10 ms less one request's 1 ms.
        assert_eq!(p.settle(true, 2_000_000), (false, None));
        assert_eq!(p.next(true), Some(10_000_000));
    }
}
