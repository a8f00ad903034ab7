//! fio's floor on a thread's rate (`ratemin`, `rate_iops_min`) in the
//! simulator's thread loop: the rules are `cint_scenario::rate_floor`'s,
//! which the emulator ends its threads by too.

use cint_policy::Nanos;
use cint_scenario::rate_floor::Floor;

use crate::world::World;

/// A floor thread `thread` missed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Missed {
    pub thread: usize,
    pub miss: cint_scenario::rate_floor::Missed,
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
                Floor::of_job(io)
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
            f.sample(write, bytes);
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
        let Some(miss) = self.floors.of[t]
            .as_mut()
            .and_then(|f| f.check(now, measured_from))
        else {
            return false;
        };
        self.floors.missed.push(Missed { thread: t, miss });
        true
    }

    /// One note per thread that missed its floor: fio ends such a thread
    /// with an error.
    pub(crate) fn floor_notes(&self, strategy: &str) -> Vec<String> {
        self.floors
            .missed
            .iter()
            .map(|m| {
                let job = &self.sc.jobs[self.threads[m.thread].job as usize];
                m.miss.note(strategy, &job.name)
            })
            .collect()
    }

    /// fio's errno for job `j` (`cint_scenario::depth_search::job_errno`):
    /// a floor one of its threads missed, or a latency target missed at
    /// depth 1.
    pub(crate) fn job_error(&self, j: usize) -> i32 {
        let missed = self
            .floors
            .missed
            .iter()
            .any(|m| self.threads[m.thread].job as usize == j);
        let exceeded = self.job_went_past_its_max_latency(j);
        cint_scenario::depth_search::job_errno(missed, exceeded, self.job_searches(j))
    }
}
