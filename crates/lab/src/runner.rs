//! How the workflow reaches an engine: a scenario in, a result out.

use cint_report::{EngineError, LatencyHistogram, RunResult};
use cint_scenario::Scenario;

/// Runs every strategy of a scenario. Implemented by any
/// `Fn(&Scenario) -> Result<RunResult, EngineError>` closure, e.g.
/// `cint_sim::run`, `|s| cint_emu::run(s).map_err(EngineError::from)`, or
/// a fake in tests. `Sync` because sweeps call it from several threads.
pub trait Runner: Sync {
    /// Runs the scenario; the error's message is one line, and its kind
    /// (refused input or engine bug) reaches the caller unchanged.
    fn run(&self, scenario: &Scenario) -> Result<RunResult, EngineError>;
}

impl<F> Runner for F
where
    F: Fn(&Scenario) -> Result<RunResult, EngineError> + Sync,
{
    fn run(&self, scenario: &Scenario) -> Result<RunResult, EngineError> {
        self(scenario)
    }
}

/// Measures the completion inter-arrival distribution the calibration
/// method needs (docs/MODEL.md experiment 7).
///
/// Contract for an engine implementing it: run the scenario's first
/// strategy only, and record, for every completion the device posts to a
/// completion queue during the measured time (after warm-up), the time
/// since the previous completion posted to the same queue, in nanoseconds.
/// Posting time is the device side (before any interrupt policy delays
/// delivery), which is what `delta` is compared with.
pub trait GapProbe: Sync {
    /// The inter-arrival histogram; the error as for [`Runner::run`].
    fn completion_gaps(&self, scenario: &Scenario) -> Result<LatencyHistogram, EngineError>;
}

impl<F> GapProbe for F
where
    F: Fn(&Scenario) -> Result<LatencyHistogram, EngineError> + Sync,
{
    fn completion_gaps(&self, scenario: &Scenario) -> Result<LatencyHistogram, EngineError> {
        self(scenario)
    }
}

/// The inter-arrival histogram of one queue's completion posting times
/// (ascending, ns): for an engine that records timestamps rather than gaps.
pub fn gap_histogram(posted_at: &[cint_policy::Nanos]) -> LatencyHistogram {
    let mut hist = LatencyHistogram::new();
    for pair in posted_at.windows(2) {
        hist.record(pair[1].saturating_sub(pair[0]));
    }
    hist
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_differences_of_successive_postings() {
        let hist = gap_histogram(&[100, 300, 300, 1_300, 1_400]);
        let stats = hist.stats();
        assert_eq!(stats.n, 4);
        // A zero gap (two postings at once) is recorded as the histogram's 1 ns floor.
        assert_eq!((stats.min, stats.max), (1, 1_000));
        assert!(gap_histogram(&[5]).is_empty());
    }
}
