//! fio's latency-target search (`latency_target`, `latency_window`,
//! `latency_percentile`) on the simulated threads: the search itself is
//! `cint_scenario::depth_search`, which the emulator's threads run too;
//! here are its hooks in a thread's loop.

use cint_policy::Nanos;
use cint_scenario::depth_search::{self, DepthSearch, Step};
use cint_scenario::LatencyTarget;

use crate::world::World;

impl World<'_> {
    fn target_of(&self, t: usize) -> Option<LatencyTarget> {
        self.shape(t).latency_target
    }

    /// At the top of the loop: start the search, wait for the I/Os in
    /// flight after a change of depth, judge a finished window. True when
    /// the thread is busy with that (a reap) or has ended.
    pub(crate) fn depth_search_holds(&mut self, t: usize) -> bool {
        let Some(target) = self.target_of(t) else {
            return false;
        };
        let now = self.now();
        let in_flight = self.threads[t].in_flight;
        match self.searches[t].step(&target, now, in_flight) {
            Step::Run => false,
            Step::Quiesce => self.quiesce(t),
            Step::End => {
                self.exit_thread(t);
                true
            }
        }
    }

    /// One completion of thread `t` with latency `lat`.
    pub(crate) fn depth_search_completion(&mut self, t: usize, lat: Nanos) {
        let Some(target) = self.target_of(t) else {
            return;
        };
        let now = self.now();
        self.searches[t].completion(&target, lat, now);
    }

    /// How many more requests the search lets thread `t` have in flight.
    pub(crate) fn depth_search_room(&self, t: usize) -> u32 {
        if self.target_of(t).is_none() {
            return u32::MAX;
        }
        self.searches[t].room(self.threads[t].in_flight)
    }

    /// One note per job with a latency target: the depth each thread
    /// settled on, or why it did not.
    pub(crate) fn depth_search_notes(&self, strategy: &str) -> Vec<String> {
        let mut notes = Vec::new();
        for (j, job) in self.sc.jobs.iter().enumerate() {
            let Some(target) = job.io().and_then(|io| io.shape.latency_target) else {
                continue;
            };
            notes.push(depth_search::note(
                strategy,
                &job.name,
                &target,
                self.job_searches(j),
            ));
        }
        notes
    }

    /// The latency-target searches of job `j`'s threads (every thread
    /// has one; those of a job without a target never move).
    pub(crate) fn job_searches(&self, j: usize) -> impl Iterator<Item = &DepthSearch> + '_ {
        self.threads
            .iter()
            .zip(&self.searches)
            .filter(move |(th, _)| th.job as usize == j)
            .map(|(_, s)| s)
    }
}
