//! fio's `max_latency` in the simulator's thread loop: a thread ends with
//! an error at its first measured completion past its direction's bound
//! (the rules are `cint_scenario::max_latency`'s, which the emulator ends
//! its threads by too).

use cint_policy::Nanos;
use cint_scenario::max_latency::Exceeded;

use crate::world::World;

/// The threads their job's `max_latency` ended, in the order they did.
#[derive(Debug, Default)]
pub(crate) struct LatencyBounds {
    exceeded: Vec<(usize, Exceeded)>,
}

impl World<'_> {
    /// A measured completion of thread `t`, a write if `write`, of total
    /// latency `lat`: past its job's bound, the thread is marked to end
    /// (fio's `lat_fatal`, then `do_io` breaks on the error).
    pub(crate) fn latency_bound_sample(&mut self, t: usize, write: bool, lat: Nanos) {
        // fio keeps the thread's first error.
        if self.went_past_its_max_latency(t) {
            return;
        }
        let at = self.now();
        if let Some(past) = self
            .shape(t)
            .max_latency
            .and_then(|m| m.check(write, lat, at))
        {
            self.latency_bounds.exceeded.push((t, past));
        }
    }

    /// Whether a completion of thread `t` went past its bound.
    pub(crate) fn went_past_its_max_latency(&self, t: usize) -> bool {
        self.latency_bounds.exceeded.iter().any(|&(th, _)| th == t)
    }

    /// Whether a completion of a thread of job `j` did.
    pub(crate) fn job_went_past_its_max_latency(&self, j: usize) -> bool {
        let of_job = |t: usize| self.threads[t].job as usize == j;
        self.latency_bounds.exceeded.iter().any(|&(t, _)| of_job(t))
    }

    /// One note per thread its `max_latency` ended.
    pub(crate) fn latency_bound_notes(&self, strategy: &str) -> Vec<String> {
        self.latency_bounds
            .exceeded
            .iter()
            .map(|(t, e)| e.note(strategy, &self.sc.jobs[self.threads[*t].job as usize].name))
            .collect()
    }
}
