//! fio's floor on a thread's rate, `ratemin` and `rate_iops_min` with
//! `ratecycle`, as fio 3.33 checks it (backend.c `check_min_rate`,
//! `__check_min_rate`, called at the end of each pass of `do_io`).
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

use crate::world::World;

/// fio's settle period before a floor is judged.
const SETTLE: Nanos = 2_000_000_000;

/// A millisecond, fio's unit here.
const MS: Nanos = 1_000_000;

/// One thread's floor and what it has completed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Floor {
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
#[derive(Clone, Copy, Debug)]
pub(crate) struct Missed {
    pub thread: usize,
    pub at: Nanos,
    pub write: bool,
    pub floor: u64,
    pub got: u64,
    pub bytes: bool,
}

/// Every thread's floor (none for threads of jobs without one).
#[derive(Debug, Default)]
pub(crate) struct Floors {
    of: Vec<Option<Floor>>,
    /// The floors missed, in the order the threads missed them.
    pub missed: Vec<Missed>,
}

impl Floors {
    /// The floors of `threads`, each of its job's `ratemin` or
    /// `rate_iops_min`: only the threads that run fio's loop themselves.
    pub(crate) fn new(sc: &cint_scenario::Scenario, threads: &[crate::world::Thread]) -> Floors {
        let of = threads
            .iter()
            .map(|th| {
                if !th.prog.floored {
                    return None;
                }
                let cint_scenario::Work::Io(io) = &sc.jobs.get(th.job as usize)?.work else {
                    return None;
                };
                let min = io.shape.rate_min?;
                Some(Floor {
                    floor: [min.floor.read.unwrap_or(0), min.floor.write.unwrap_or(0)],
                    bytes: min.floor.unit == cint_scenario::RateUnit::Bytes,
                    cycle_ms: min.cycle / MS,
                    done_bytes: [0; 2],
                    done_blocks: [0; 2],
                    base_bytes: [0; 2],
                    base_blocks: [0; 2],
                    base_at: [0; 2],
                })
            })
            .collect();
        Floors {
            of,
            missed: Vec::new(),
        }
    }
}

impl World<'_> {
    /// Thread `t` completed a request of `bytes` in direction `write`,
    /// measured (after the ramp, where fio's counters start).
    pub(crate) fn floor_sample(&mut self, t: usize, write: bool, bytes: u64) {
        if let Some(f) = self.floors.of[t].as_mut() {
            let d = usize::from(write);
            f.done_bytes[d] += bytes;
            f.done_blocks[d] += 1;
        }
    }

    /// fio's `check_min_rate` at the end of a pass of thread `t`'s loop:
    /// true when a direction missed its floor (the thread must end).
    pub(crate) fn floor_missed(&mut self, t: usize, now: Nanos) -> bool {
        let j = self.threads[t].job as usize;
        let Some(start) = self.job_start(j) else {
            return false;
        };
        let measured_from = start.saturating_add(self.sc.warmup);
        if now < measured_from.saturating_add(SETTLE) {
            return false;
        }
        let Some(f) = self.floors.of[t].as_mut() else {
            return false;
        };
        for d in 0..2 {
            if f.floor[d] == 0 || f.done_bytes[d] == 0 {
                continue;
            }
            if f.base_bytes[d] != 0 || f.base_blocks[d] != 0 {
                let spent_ms = (now - f.base_at[d]) / MS;
                if spent_ms < f.cycle_ms || spent_ms == 0 {
                    continue;
                }
                let moved = if f.bytes {
                    f.done_bytes[d] - f.base_bytes[d]
                } else {
                    f.done_blocks[d] - f.base_blocks[d]
                };
                let got = u64::try_from(u128::from(moved) * 1000 / u128::from(spent_ms))
                    .unwrap_or(u64::MAX);
                if got < f.floor[d] {
                    let missed = Missed {
                        thread: t,
                        at: now,
                        write: d == 1,
                        floor: f.floor[d],
                        got,
                        bytes: f.bytes,
                    };
                    self.floors.missed.push(missed);
                    return true;
                }
            }
            f.base_bytes[d] = f.done_bytes[d];
            f.base_blocks[d] = f.done_blocks[d];
            f.base_at[d] = now;
        }
        false
    }

    /// One note per thread that missed its floor: fio ends such a thread
    /// with an error.
    pub(crate) fn floor_notes(&self, strategy: &str) -> Vec<String> {
        self.floors
            .missed
            .iter()
            .map(|m| {
                let job = &self.sc.jobs[self.threads[m.thread].job as usize];
                let (key, unit) = if m.bytes {
                    ("ratemin", " B/s")
                } else {
                    ("rate_iops_min", " IOPS")
                };
                let dir = if m.write { "writes" } else { "reads" };
                format!(
                    "strategy '{strategy}': job '{}': a thread's {dir} missed {key}={} at {:.3} ms \
                     (got {}{unit} over the last ratecycle): fio ends such a thread with an error \
                     (EIO), and the job's figures stop there",
                    job.name,
                    m.floor,
                    m.at as f64 / 1e6,
                    m.got
                )
            })
            .collect()
    }

    /// fio's errno for job `j`: `EIO` (5) when a thread of it missed its
    /// floor, as fio's `td_verror(td, EIO, "check_min_rate")`.
    pub(crate) fn job_error(&self, j: usize) -> i32 {
        let missed = self
            .floors
            .missed
            .iter()
            .any(|m| self.threads[m.thread].job as usize == j);
        if missed {
            5
        } else {
            0
        }
    }
}
