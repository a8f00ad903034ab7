//! fio's floor on a thread's rate, `ratemin` and `rate_iops_min` with
//! `ratecycle`, as fio 3.33 checks it (backend.c `check_min_rate`,
//! `__check_min_rate`, called at the end of each pass of `do_io`): the
//! rules both engines end a thread by.
//!
//! Each direction the thread has completed requests of is looked at.
//! Nothing is judged in the job's ramp, nor in the two seconds after it
//! (fio's settle period, counted from the ramp's end, where fio resets
//! the job's start and counters). The first look after that takes the
//! completed bytes and requests as a base; each look at least `ratecycle`
//! after the last base (whole milliseconds, as fio counts them) takes the
//! rate since: under its floor the thread ends, with an error (fio's
//! `EIO`, and fio's `exitall` ends the others of its group); otherwise the
//! look becomes the new base.

use cint_policy::Nanos;

use crate::model::{IoJob, RateUnit};

/// fio's settle period before a floor is judged.
pub const SETTLE: Nanos = 2_000_000_000;

/// A millisecond, fio's unit here.
const MS: Nanos = 1_000_000;

/// fio's errno for a job one of whose threads missed its floor: `EIO`,
/// as fio's `td_verror(td, EIO, "check_min_rate")`.
pub const MISSED_ERRNO: i32 = 5;

/// One thread's floor and what it has completed.
#[derive(Clone, Copy, Debug)]
pub struct Floor {
    /// Each direction's floor, `[reads, writes]`; 0: none.
    floor: [u64; 2],
    /// The floor counts bytes (`ratemin`); else requests.
    bytes: bool,
    /// `ratecycle`, in whole milliseconds.
    cycle_ms: u64,
    /// Bytes and requests completed since the ramp ended.
    done_bytes: [u64; 2],
    done_blocks: [u64; 2],
    /// The last base: bytes, requests, and when.
    base_bytes: [u64; 2],
    base_blocks: [u64; 2],
    base_at: [Nanos; 2],
}

/// A floor a thread missed: when, which direction, the floor and the
/// rate it got over the last cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missed {
    /// When the look found it.
    pub at: Nanos,
    /// The direction: writes, else reads.
    pub write: bool,
    /// The floor, bytes or requests a second.
    pub floor: u64,
    /// What the thread got over the last cycle, in the floor's unit.
    pub got: u64,
    /// The floor counts bytes (`ratemin`); else requests
    /// (`rate_iops_min`).
    pub bytes: bool,
}

impl Missed {
    /// The result's note for it, under `strategy`, for job `job`: fio
    /// ends such a thread with an error.
    pub fn note(&self, strategy: &str, job: &str) -> String {
        let (key, unit) = if self.bytes {
            ("ratemin", " B/s")
        } else {
            ("rate_iops_min", " IOPS")
        };
        let dir = if self.write { "writes" } else { "reads" };
        format!(
            "strategy '{strategy}': job '{job}': a thread's {dir} missed {key}={} at {:.3} ms \
             (got {}{unit} over the last ratecycle): fio ends such a thread with an error \
             (EIO), and the job's figures stop there",
            self.floor,
            self.at as f64 / 1e6,
            self.got
        )
    }
}

impl Floor {
    /// The floor of a thread of job `io`, if it has one.
    pub fn of_job(io: &IoJob) -> Option<Floor> {
        let min = io.shape.rate_min?;
        Some(Floor {
            floor: [min.floor.read.unwrap_or(0), min.floor.write.unwrap_or(0)],
            bytes: min.floor.unit == RateUnit::Bytes,
            cycle_ms: min.cycle / MS,
            done_bytes: [0; 2],
            done_blocks: [0; 2],
            base_bytes: [0; 2],
            base_blocks: [0; 2],
            base_at: [0; 2],
        })
    }

    /// The thread completed a request of `bytes` in direction `write`,
    /// measured (after the ramp, where fio's counters start).
    pub fn sample(&mut self, write: bool, bytes: u64) {
        let d = usize::from(write);
        self.done_bytes[d] += bytes;
        self.done_blocks[d] += 1;
    }

    /// fio's `check_min_rate` at `now`, at the end of a pass of the
    /// thread's loop, its job measured from `measured_from` (the ramp's
    /// end): the direction that missed its floor, if one did (the thread
    /// must end).
    pub fn check(&mut self, now: Nanos, measured_from: Nanos) -> Option<Missed> {
        if now < measured_from.saturating_add(SETTLE) {
            return None;
        }
        for d in 0..2 {
            if self.floor[d] == 0 || self.done_bytes[d] == 0 {
                continue;
            }
            if self.base_bytes[d] != 0 || self.base_blocks[d] != 0 {
                let spent_ms = (now - self.base_at[d]) / MS;
                if spent_ms < self.cycle_ms || spent_ms == 0 {
                    continue;
                }
                let moved = if self.bytes {
                    self.done_bytes[d] - self.base_bytes[d]
                } else {
                    self.done_blocks[d] - self.base_blocks[d]
                };
                let got = u64::try_from(u128::from(moved) * 1000 / u128::from(spent_ms))
                    .unwrap_or(u64::MAX);
                if got < self.floor[d] {
                    return Some(Missed {
                        at: now,
                        write: d == 1,
                        floor: self.floor[d],
                        got,
                        bytes: self.bytes,
                    });
                }
            }
            self.base_bytes[d] = self.done_bytes[d];
            self.base_blocks[d] = self.done_blocks[d];
            self.base_at[d] = now;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor of a scenario's one job, given its keys.
    fn floor(job_keys: &str) -> Floor {
        Floor::of_job(&crate::test_io_job(job_keys)).expect("a floored job")
    }

    const MS_: Nanos = 1_000_000;

    #[test]
    fn nothing_is_judged_before_the_settle_period_then_a_base_then_each_cycle() {
        let mut f = floor("rate_iops_min = 100\nratecycle = \"100ms\"");
        // Ten requests a second, far under the floor, but in the settle
        // period after the ramp's end at 1 s.
        for _ in 0..30 {
            f.sample(false, 4096);
        }
        assert_eq!(f.check(2_900 * MS_, 1_000 * MS_), None);
        // The first look after it takes the base.
        assert_eq!(f.check(3_000 * MS_, 1_000 * MS_), None);
        // Within a cycle of the base nothing is judged.
        f.sample(false, 4096);
        assert_eq!(f.check(3_050 * MS_, 1_000 * MS_), None);
        // A cycle on: one request in 100 ms is 10 a second.
        let missed = f.check(3_100 * MS_, 1_000 * MS_).expect("under its floor");
        assert_eq!(
            missed,
            Missed {
                at: 3_100 * MS_,
                write: false,
                floor: 100,
                got: 10,
                bytes: false
            }
        );
        assert!(missed.note("s", "j").contains("rate_iops_min=100"));
    }

    #[test]
    fn a_byte_floor_met_moves_the_base_and_a_direction_without_requests_is_skipped() {
        let mut f = floor("rw = \"randrw\"\nratemin = \"1m,1m\"\nratecycle = \"1s\"");
        f.sample(false, 1 << 20);
        assert_eq!(f.check(SETTLE, 0), None, "the base");
        // 2 MiB of reads in a second, no writes completed at all: the
        // reads meet their floor, the writes are not looked at.
        f.sample(false, 2 << 20);
        assert_eq!(f.check(SETTLE + 1_000 * MS_, 0), None);
        // Half a MiB in the next second misses.
        f.sample(false, 1 << 19);
        let missed = f.check(SETTLE + 2_000 * MS_, 0).expect("under its floor");
        assert_eq!(
            (missed.write, missed.got, missed.bytes),
            (false, 1 << 19, true)
        );
    }
}
