//! fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`; fio's
//! steadystate.c): once a second after `ss_ramp`, a job's completed
//! requests (or bytes) of the past second are a sample; when the last
//! `ss_dur` of samples meet the criterion (largest deviation from their
//! mean, or the slope of their least-squares line, under the limit) the
//! job ends. A second's sample is taken when the job's first completion
//! after it arrives; seconds without a completion count as zero.

use cint_policy::{Nanos, SEC};
use cint_scenario::{Job, SteadyMetric, SteadyState, Work};

use crate::world::World;

/// One job's steady-state samples.
#[derive(Debug)]
pub(crate) struct SteadyProbe {
    rule: Option<SteadyState>,
    /// The second being counted (from the job's start).
    second: u64,
    /// Requests or bytes completed in it.
    count: u64,
    /// The last `dur` seconds' samples, oldest first.
    window: Vec<u64>,
    /// The criterion was met: the job's threads are told to stop.
    attained: bool,
}

impl SteadyProbe {
    /// The probe of `job` (inert without `ss`).
    pub(crate) fn new(job: &Job) -> SteadyProbe {
        let rule = match &job.work {
            Work::Io(io) => io.shape.steady,
            Work::Cpu => None,
        };
        SteadyProbe {
            rule,
            second: 0,
            count: 0,
            window: Vec::new(),
            attained: false,
        }
    }

    /// Closes every second before `second`, each a sample once the ramp
    /// is over; true when the criterion is met.
    fn advance(&mut self, second: u64) -> bool {
        let Some(rule) = self.rule else {
            return false;
        };
        let size = (rule.dur / SEC).max(1) as usize;
        let first_sampled = rule.ramp.div_ceil(SEC);
        while self.second < second {
            if self.second >= first_sampled {
                if self.window.len() == size {
                    self.window.remove(0);
                }
                self.window.push(self.count);
                if self.window.len() == size && meets(&rule, &self.window) {
                    return true;
                }
            }
            self.second += 1;
            self.count = 0;
        }
        false
    }
}

/// Whether the samples meet the rule's criterion.
fn meets(rule: &SteadyState, samples: &[u64]) -> bool {
    let n = samples.len() as f64;
    let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / n;
    let value = if rule.slope {
        // x = 0..n-1, equally spaced, as fio assumes.
        let mean_x = (n - 1.0) / 2.0;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, &y) in samples.iter().enumerate() {
            let dx = i as f64 - mean_x;
            sxy += dx * (y as f64 - mean);
            sxx += dx * dx;
        }
        if sxx > 0.0 {
            (sxy / sxx).abs()
        } else {
            0.0
        }
    } else {
        samples
            .iter()
            .map(|&s| (s as f64 - mean).abs())
            .fold(0.0, f64::max)
    };
    let criterion = if rule.percent {
        if mean <= 0.0 {
            // Nothing completes: no percentage of nothing is steady.
            return false;
        }
        100.0 * value / mean
    } else {
        value
    };
    criterion < rule.limit
}

impl World<'_> {
    /// A completion of `bytes` for job `j` at `now`: counted in its
    /// second; a met criterion stops the job's threads.
    pub(crate) fn steady_sample(&mut self, j: usize, now: Nanos, bytes: u64) {
        let Some(rule) = self.steady[j].rule else {
            return;
        };
        if self.steady[j].attained {
            return;
        }
        let Some(start) = self.job_start(j) else {
            return;
        };
        let second = now.saturating_sub(start) / SEC;
        if self.steady[j].advance(second) {
            self.steady[j].attained = true;
            self.stop_job(j, now);
            return;
        }
        self.steady[j].count += match rule.metric {
            SteadyMetric::Iops => 1,
            SteadyMetric::Bw => bytes,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(slope: bool, limit: f64) -> SteadyState {
        SteadyState {
            metric: SteadyMetric::Iops,
            slope,
            limit,
            percent: true,
            dur: 3 * SEC,
            ramp: SEC,
        }
    }

    #[test]
    fn deviation_and_slope_criteria() {
        assert!(meets(&rule(false, 10.0), &[100, 105, 95]));
        assert!(!meets(&rule(false, 10.0), &[100, 120, 80]));
        assert!(meets(&rule(true, 1.0), &[100, 100, 100]));
        assert!(!meets(&rule(true, 1.0), &[100, 110, 120]));
        assert!(!meets(&rule(false, 10.0), &[0, 0, 0]));
    }

    #[test]
    fn samples_start_after_the_ramp_and_fill_the_window() {
        let mut p = SteadyProbe {
            rule: Some(rule(false, 10.0)),
            second: 0,
            count: 0,
            window: Vec::new(),
            attained: false,
        };
        p.count = 5;
        assert!(!p.advance(1), "second 0 is in the ramp");
        assert!(p.window.is_empty());
        for s in 1..3 {
            p.count = 100;
            assert!(!p.advance(s + 1), "the window is not full yet");
        }
        p.count = 100;
        assert!(p.advance(4));
        assert_eq!(p.window, [100, 100, 100]);
    }
}
