//! Completion inter-arrival times at the device, for calibrating `delta`
//! (docs/MODEL.md experiment 7, the `GapProbe` contract of `cint-lab`).
//!
//! The result document reports latencies as the application sees them;
//! `delta` is compared by the device with the time between two completion
//! postings on one queue, before any interrupt policy delays delivery.
//! Those times exist only inside the simulation, so the device reports
//! each posting to an optional [`GapLog`] the world carries.

use cint_policy::Nanos;
use cint_report::LatencyHistogram;
use cint_scenario::Scenario;

use crate::world::World;
use crate::SimError;

/// Per-queue posting times seen so far and the gaps of the measured window.
#[derive(Debug, Default)]
pub(crate) struct GapLog {
    /// Last posting time per queue; `None` before its first completion.
    last_posted: Vec<Option<Nanos>>,
    gaps: LatencyHistogram,
}

impl GapLog {
    fn new(queues: usize) -> GapLog {
        GapLog {
            last_posted: vec![None; queues],
            gaps: LatencyHistogram::new(),
        }
    }
}

impl World<'_> {
    /// The device posted a completion on queue `q` now. The previous
    /// posting may lie in the warm-up: the gap itself ends in the measured
    /// window, so it counts.
    pub(crate) fn note_posting(&mut self, q: usize) {
        let now = self.now();
        let measuring = self.measuring;
        let Some(log) = self.gap_log.as_deref_mut() else {
            return;
        };
        let Some(slot) = log.last_posted.get_mut(q) else {
            return;
        };
        if let (true, Some(previous)) = (measuring, *slot) {
            log.gaps.record(now.saturating_sub(previous));
        }
        *slot = Some(now);
    }
}

/// Runs the scenario's first strategy and returns, for every completion
/// the device posted to a completion queue during the measured time, the
/// time since the previous completion posted to the same queue (ns).
///
/// Only the first strategy runs: calibration asks with strategy `none`, so
/// that no policy shapes the arrivals it is about to configure.
pub fn completion_gaps(scenario: &Scenario) -> Result<LatencyHistogram, SimError> {
    let Some(strategy) = scenario.strategies.first() else {
        return Err(SimError::input(format!(
            "{}: the scenario has no strategy",
            scenario.source
        )));
    };
    let mut world = World::new(scenario, strategy)?;
    let mut log = GapLog::new(world.queues.len());
    world.gap_log = Some(&mut log);
    world.run(strategy)?;
    Ok(log.gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "name = \"gaps\"\nduration = \"20ms\"\nwarmup = \"2ms\"\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[strategy]]\nname = \"late\"\nkind = \"nvme\"\nthr = 8\ntime = \"100us\"\n{extra}"
        );
        cint_scenario::load_str(&text, "gaps.toml", &[]).expect("valid scenario")
    }

    #[test]
    fn one_gap_per_measured_completion_of_the_first_strategy() {
        let s = scenario(
            "[[job]]\nname = \"a\"\nengine = \"libaio\"\niodepth = 32\nrw = \"randread\"\n",
        );
        let gaps = completion_gaps(&s).unwrap().stats();
        let mut first_only = s.clone();
        first_only.strategies.truncate(1);
        let run = crate::run(&first_only).unwrap();
        let ios = run.results[0].jobs[0].ios;
        // Every measured completion is posted once; a few are posted and
        // not yet reaped at either edge of the window.
        assert!(gaps.n > 0);
        assert!(
            gaps.n.abs_diff(ios) <= 64,
            "{} gaps for {ios} completions",
            gaps.n
        );
        // Gaps cover the window: their sum is at most its length.
        let mean_total = gaps.mean * gaps.n as f64;
        assert!(mean_total <= 20_000_000.0 * 1.01, "{mean_total}");
    }

    #[test]
    fn queue_depth_one_gaps_are_at_least_the_service_time() {
        let s = scenario("[[job]]\nname = \"s\"\nrw = \"randread\"\n");
        let gaps = completion_gaps(&s).unwrap().stats();
        let base = s.device.read.base.0;
        assert!(gaps.n > 100);
        // One request at a time: each gap holds a whole round trip, which
        // includes the device's base service time (jitter may shorten one).
        assert!(
            gaps.mean >= base as f64,
            "mean gap {} < base {base}",
            gaps.mean
        );
    }

    #[test]
    fn no_strategy_is_an_error() {
        let mut s = scenario("[[job]]\nname = \"s\"\n");
        s.strategies.clear();
        assert!(completion_gaps(&s)
            .unwrap_err()
            .message
            .contains("no strategy"));
    }
}
