//! fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`; fio's
//! steadystate.c): once a second after `ss_ramp`, a job's completed
//! requests (or bytes) of the past second are a sample; when the last
//! `ss_dur` of samples meet the criterion (largest deviation from their
//! mean, or the slope of their least-squares line, under the limit) the
//! job ends. A second's sample is taken when the job's first completion
//! after it arrives; seconds without a completion count as zero. Both
//! engines end jobs by it.
//!
//! ```
//! use cint_scenario::steady::SteadyProbe;
//! use cint_scenario::{SteadyMetric, SteadyState};
//!
//! const SEC: u64 = 1_000_000_000;
//! let rule = SteadyState {
//!     metric: SteadyMetric::Iops, slope: false, limit: 10.0, percent: true,
//!     dur: 2 * SEC, ramp: 0,
//! };
//! let mut probe = SteadyProbe::new(Some(rule));
//! // 100 requests in each of two seconds: steady at the first completion
//! // of the third.
//! assert!(!probe.completed(SEC / 2, 100, 409_600));
//! assert!(!probe.completed(SEC + SEC / 2, 100, 409_600));
//! assert!(probe.completed(2 * SEC, 1, 4096));
//! ```

use cint_policy::{Nanos, SEC};

use crate::model::{SteadyMetric, SteadyState};

/// One job's steady-state samples.
#[derive(Clone, Debug, Default)]
pub struct SteadyProbe {
    rule: Option<SteadyState>,
    /// The second being counted (from the job's start).
    second: u64,
    /// Requests or bytes completed in it.
    count: u64,
    /// The last `dur` seconds' samples, oldest first.
    window: Vec<u64>,
    /// The criterion was met, this long after the job's start: the job
    /// ends.
    attained: Option<Nanos>,
}

impl SteadyProbe {
    /// The probe of a job with `rule` (inert without one).
    pub fn new(rule: Option<SteadyState>) -> SteadyProbe {
        SteadyProbe {
            rule,
            ..SteadyProbe::default()
        }
    }

    /// Whether the job has a rule to meet.
    pub fn active(&self) -> bool {
        self.rule.is_some()
    }

    /// When the criterion was met, after the job's start.
    pub fn attained_at(&self) -> Option<Nanos> {
        self.attained
    }

    /// What a run's note says of job `job`'s steady state under
    /// `strategy` (nothing without a rule): when it was attained and the
    /// job ended, or that it was not, and how many samples there were.
    pub fn note(&self, strategy: &str, job: &str) -> Option<String> {
        let rule = self.rule?;
        let metric = match rule.metric {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
        };
        let slope = if rule.slope { "_slope" } else { "" };
        let percent = if rule.percent { "%" } else { "" };
        let head = format!(
            "strategy '{strategy}': job '{job}': steady state {metric}{slope}:{}{percent} over \
             {} s",
            rule.limit,
            (rule.dur / SEC).max(1)
        );
        Some(match self.attained {
            Some(at) => format!(
                "{head}: attained {:.1} ms after the job's start, where the job ended (its \
                 figures cover its own window)",
                at as f64 / 1e6
            ),
            None => format!(
                "{head}: not attained (the window holds {} of its {} one-second samples), so \
                 the job ran on",
                self.window.len(),
                (rule.dur / SEC).max(1)
            ),
        })
    }

    /// `requests` of `bytes` in all completed `at` from the job's start:
    /// counted in their second, after closing every second before it.
    /// True once, when the criterion is met and the job ends; nothing is
    /// counted after that, nor without a rule.
    pub fn completed(&mut self, at: Nanos, requests: u64, bytes: u64) -> bool {
        let Some(rule) = self.rule else {
            return false;
        };
        if self.attained.is_some() {
            return false;
        }
        if self.advance(at / SEC) {
            self.attained = Some(at);
            return true;
        }
        self.count += match rule.metric {
            SteadyMetric::Iops => requests,
            SteadyMetric::Bw => bytes,
        };
        false
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
        let mut p = SteadyProbe::new(Some(rule(false, 10.0)));
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

    #[test]
    fn the_end_is_told_once_and_nothing_counts_after_it_or_without_a_rule() {
        let mut p = SteadyProbe::new(Some(SteadyState {
            dur: SEC,
            ramp: 0,
            metric: SteadyMetric::Bw,
            ..rule(false, 10.0)
        }));
        assert!(!p.completed(10, 3, 12_288));
        assert_eq!(p.count, 12_288, "bandwidth counts bytes");
        assert!(p.completed(SEC, 1, 4096));
        assert_eq!(p.attained_at(), Some(SEC));
        assert!(!p.completed(2 * SEC, 1, 4096));
        let note = p.note("irq", "w").expect("a rule");
        assert!(
            note.starts_with(
                "strategy 'irq': job 'w': steady state bw:10% over 1 s: attained 1000.0 ms"
            ),
            "{note}"
        );
        let mut inert = SteadyProbe::new(None);
        assert!(!inert.active());
        assert!(!inert.completed(5 * SEC, 1, 4096));
        assert_eq!(inert.count, 0);
        assert_eq!(inert.note("irq", "w"), None);
        let mut waiting = SteadyProbe::new(Some(rule(false, 10.0)));
        waiting.completed(SEC / 2, 1, 4096);
        let note = waiting.note("irq", "r").expect("a rule");
        assert!(
            note.contains("iops:10% over 3 s: not attained (the window holds 0 of its 3"),
            "{note}"
        );
    }
}
