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

/// What one second of a job completed: fio samples both, and judges by
/// its rule's metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Second {
    /// Requests (`iops`).
    pub requests: u64,
    /// Bytes (`bw`).
    pub bytes: u64,
}

impl Second {
    fn of(&self, metric: SteadyMetric) -> u64 {
        match metric {
            SteadyMetric::Iops => self.requests,
            SteadyMetric::Bw => self.bytes,
        }
    }
}

/// The last judgement of a full window, as fio keeps it for its report
/// (steadystate.c): the criterion in the limit's unit, signed, and the
/// largest deviation from the mean or the least-squares slope, whichever
/// the rule judges (the other 0).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Judgement {
    /// What is compared with the limit (its absolute value).
    pub criterion: f64,
    /// The largest deviation of a sample from the window's mean.
    pub max_deviation: f64,
    /// The least-squares slope through the window, per second.
    pub slope: f64,
}

/// One job's steady-state samples.
#[derive(Clone, Debug, Default)]
pub struct SteadyProbe {
    rule: Option<SteadyState>,
    /// The second being counted (from the job's start).
    second: u64,
    /// What completed in it.
    count: Second,
    /// The last `dur` seconds' samples, oldest first.
    window: Vec<Second>,
    /// The last full window's judgement.
    judged: Option<Judgement>,
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

    /// The rule, if the job has one.
    pub fn rule(&self) -> Option<&SteadyState> {
        self.rule.as_ref()
    }

    /// The samples of the window, oldest first (fewer than the rule's
    /// `dur` until it has filled).
    pub fn window(&self) -> &[Second] {
        &self.window
    }

    /// The last full window's judgement, if one was made.
    pub fn judged(&self) -> Option<Judgement> {
        self.judged
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
        if self.rule.is_none() || self.attained.is_some() {
            return false;
        }
        if self.advance(at / SEC) {
            self.attained = Some(at);
            return true;
        }
        self.count.requests += requests;
        self.count.bytes += bytes;
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
                if self.window.len() == size {
                    let samples: Vec<u64> = self.window.iter().map(|s| s.of(rule.metric)).collect();
                    self.judged = judge(&rule, &samples);
                    if self.judged.is_some_and(|j| j.criterion.abs() < rule.limit) {
                        return true;
                    }
                }
            }
            self.second += 1;
            self.count = Second::default();
        }
        false
    }
}

/// The rule's judgement of a full window of samples (`None` where it
/// takes a percentage of a mean of 0: no percentage of nothing is
/// steady).
fn judge(rule: &SteadyState, samples: &[u64]) -> Option<Judgement> {
    let n = samples.len() as f64;
    let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / n;
    let mut j = Judgement::default();
    let value = if rule.slope {
        // x = 0..n-1, equally spaced, as fio assumes.
        let mean_x = (n - 1.0) / 2.0;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, &y) in samples.iter().enumerate() {
            let dx = i as f64 - mean_x;
            sxy += dx * (y as f64 - mean);
            sxx += dx * dx;
        }
        j.slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        j.slope
    } else {
        j.max_deviation = samples
            .iter()
            .map(|&s| (s as f64 - mean).abs())
            .fold(0.0, f64::max);
        j.max_deviation
    };
    j.criterion = if rule.percent {
        if mean <= 0.0 {
            return None;
        }
        100.0 * value / mean
    } else {
        value
    };
    Some(j)
}

/// Whether the samples meet the rule's criterion.
#[cfg(test)]
fn meets(rule: &SteadyState, samples: &[u64]) -> bool {
    judge(rule, samples).is_some_and(|j| j.criterion.abs() < rule.limit)
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
        let second = |requests| Second {
            requests,
            bytes: 4096 * requests,
        };
        p.count = second(5);
        assert!(!p.advance(1), "second 0 is in the ramp");
        assert!(p.window.is_empty());
        for s in 1..3 {
            p.count = second(100);
            assert!(!p.advance(s + 1), "the window is not full yet");
        }
        p.count = second(100);
        assert!(p.advance(4));
        assert_eq!(p.window, [second(100); 3]);
        assert_eq!(p.judged().map(|j| j.criterion), Some(0.0));
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
        assert_eq!(
            p.count,
            Second {
                requests: 3,
                bytes: 12_288
            }
        );
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
        assert_eq!(inert.count, Second::default());
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
