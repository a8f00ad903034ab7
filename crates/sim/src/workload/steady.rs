//! fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`) on the
//! simulated jobs: the rule is `cint_scenario::steady`'s, which the
//! emulator ends its jobs by too; here is its hook at each completion.

use cint_policy::Nanos;

use crate::world::World;

impl World<'_> {
    /// A completion of `bytes` for job `j` at `now`: counted in its
    /// second; a met criterion stops the job's threads.
    pub(crate) fn steady_sample(&mut self, j: usize, now: Nanos, bytes: u64) {
        if !self.steady[j].active() {
            return;
        }
        let Some(start) = self.job_start(j) else {
            return;
        };
        if self.steady[j].completed(now.saturating_sub(start), 1, bytes) {
            self.stop_job(j, now);
        }
    }

    /// One note per job with a steady-state rule that started: when it
    /// was attained and the job ended, or that it was not (a job that
    /// never started has its group's note).
    pub(crate) fn steady_notes(&self, strategy: &str) -> Vec<String> {
        self.sc
            .jobs
            .iter()
            .zip(&self.steady)
            .enumerate()
            .filter(|&(j, _)| self.job_start(j).is_some())
            .filter_map(|(_, (job, probe))| probe.note(strategy, &job.name))
            .collect()
    }
}
