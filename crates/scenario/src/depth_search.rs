//! fio's latency-target search (`latency_target`, `latency_window`,
//! `latency_percentile`), the mechanism of fio's target.c: each thread
//! looks for the deepest queue whose I/Os meet a latency. Both engines
//! search by it.
//!
//! A thread starts at depth 1, with `low` = 1 and `high` = its `iodepth`.
//! Every completion whose latency (from issue to completion, fio's `lat`)
//! exceeds the target counts as a failure; at a percentile of 100 one
//! failure lowers the depth at once. After each `latency_window` the
//! share of the window's completions that met the target decides:
//! - met: `low` = depth; the depth doubles while no depth has failed
//!   (`high` is still `iodepth`), else bisects towards `high`; capped at
//!   `iodepth`. If that leaves it unchanged the search has converged: the
//!   thread waits for its I/Os in flight and runs one more window at that
//!   depth, then ends (fio's `td->done`).
//! - missed: `high` = depth; `low` steps down if it was the depth; the
//!   depth bisects towards `low`, and the thread waits for its I/Os in
//!   flight (fio's `io_u_quiesce`) before a new window starts.
//!
//! A late I/O at depth 1 with a percentile of 100 ends the job, as fio's
//! `lat_fatal` does ("max latency exceeded"). fio judges a window with no
//! completion as missed (0 of 0, NaN, is below any percentile), which at a
//! zero window lowers the depth right after every raise; the engines judge
//! only windows with completions. fio also resets its statistics for the
//! final run; the engines keep measuring the whole window and say in a
//! note which depth each thread settled on ([`note`]).
//!
//! ```
//! use cint_scenario::depth_search::{DepthSearch, Step};
//! use cint_scenario::LatencyTarget;
//!
//! let target = LatencyTarget { target: 100_000, window: 1_000_000, percentile: 99.0 };
//! let mut search = DepthSearch::new(8);
//! assert_eq!(search.step(&target, 0, 0), Step::Run);
//! assert_eq!(search.depth(), 1);
//! // A window of fast I/Os: the depth doubles.
//! search.completion(&target, 20_000, 500_000);
//! assert_eq!(search.step(&target, 1_000_000, 0), Step::Run);
//! assert_eq!(search.depth(), 2);
//! ```

use cint_policy::Nanos;

use crate::model::LatencyTarget;

/// fio's errno for a job one of whose threads missed its target at depth
/// 1 with a percentile of 100, or went past its `max_latency`
/// (`crate::max_latency`): `ETIMEDOUT`, as fio's `lat_fatal`
/// (`td_verror(td, ETIMEDOUT, "max latency exceeded")`). fio keeps a
/// thread's first error, so a floor missed first (`rate_floor`) keeps its
/// own.
pub const FATAL_ERRNO: i32 = 110;

/// fio's errno for a job (its `td_verror`, which keeps a thread's first
/// error): `EIO` (5) where a thread of it missed its rate's floor
/// (`rate_floor`), else `ETIMEDOUT` (110) where a completion of one went
/// past its `max_latency` (`latency_exceeded`) or one of its `searches`
/// missed its target at depth 1, else 0. Both engines report by it.
pub fn job_errno<'a>(
    floor_missed: bool,
    latency_exceeded: bool,
    searches: impl IntoIterator<Item = &'a DepthSearch>,
) -> i32 {
    if floor_missed {
        crate::rate_floor::MISSED_ERRNO
    } else if latency_exceeded
        || searches
            .into_iter()
            .any(|s| s.outcome() == Some(Outcome::MissedAtDepthOne))
    {
        FATAL_ERRNO
    } else {
        0
    }
}

/// One thread's search.
#[derive(Clone, Copy, Debug, Default)]
pub struct DepthSearch {
    /// The depth the thread may keep in flight now.
    depth: u32,
    low: u32,
    high: u32,
    /// The thread's `iodepth`, the deepest the search goes.
    iodepth: u32,
    started: bool,
    window_start: Nanos,
    completed: u64,
    failed: u64,
    /// Waiting for its I/Os in flight before a new window.
    quiescing: bool,
    /// Running the final window at the depth found.
    final_run: bool,
    /// The search ended: at the depth found, or fatally at depth 1.
    outcome: Option<Outcome>,
}

/// How a thread's search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran its final window at this depth.
    Settled(u32),
    /// An I/O missed the target at depth 1 (percentile 100).
    MissedAtDepthOne,
}

/// What the thread does at the top of its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Go on, with at most [`DepthSearch::depth`] requests in flight.
    Run,
    /// Reap: the depth changed, and a new window starts once nothing is
    /// in flight (fio's `io_u_quiesce`).
    Quiesce,
    /// The search is over: the thread ends.
    End,
}

impl DepthSearch {
    /// A search up to `iodepth`.
    pub fn new(iodepth: u32) -> DepthSearch {
        DepthSearch {
            depth: 1,
            low: 1,
            high: iodepth.max(1),
            iodepth: iodepth.max(1),
            ..DepthSearch::default()
        }
    }

    /// The depth the thread may keep in flight now.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// How the search ended, once it has.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    fn new_window(&mut self, now: Nanos) {
        self.window_start = now;
        self.completed = 0;
        self.failed = 0;
    }

    /// A missed window or a late I/O at percentile 100.
    fn lower(&mut self, now: Nanos) {
        if self.depth == 1 {
            return;
        }
        self.high = self.depth;
        if self.depth == self.low {
            self.low = self.low.saturating_sub(1).max(1);
        }
        self.depth = ((self.depth + self.low) / 2).max(1);
        self.quiescing = true;
        self.new_window(now);
    }

    /// A met window. True when the search is over.
    fn raise(&mut self, now: Nanos) -> bool {
        let before = self.depth;
        self.low = self.depth;
        self.depth = if self.high != self.iodepth {
            (self.depth + self.high) / 2
        } else {
            self.depth.saturating_mul(2)
        }
        .clamp(1, self.iodepth);
        if self.depth == before {
            if self.final_run {
                self.outcome = Some(Outcome::Settled(before));
                return true;
            }
            self.final_run = true;
            self.quiescing = true;
        }
        self.new_window(now);
        false
    }

    /// At the top of the thread's loop at `now`, with `in_flight`
    /// requests in flight: starts the search, waits for the I/Os in
    /// flight after a change of depth, judges a finished window.
    pub fn step(&mut self, target: &LatencyTarget, now: Nanos, in_flight: u32) -> Step {
        if self.outcome.is_some() {
            return Step::End;
        }
        if !self.started {
            self.started = true;
            self.new_window(now);
        }
        if self.quiescing {
            if in_flight > 0 {
                return Step::Quiesce;
            }
            self.quiescing = false;
            self.new_window(now);
            return Step::Run;
        }
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed < target.window || self.completed == 0 {
            return Step::Run;
        }
        let met = (self.completed - self.failed) as f64 * 100.0
            >= target.percentile * self.completed as f64;
        if met {
            if self.raise(now) {
                return Step::End;
            }
        } else {
            self.lower(now);
        }
        Step::Run
    }

    /// One completion at `now` whose latency, issue to completion, was
    /// `latency`.
    pub fn completion(&mut self, target: &LatencyTarget, latency: Nanos, now: Nanos) {
        self.completed += 1;
        if latency <= target.target {
            return;
        }
        if target.percentile >= 100.0 {
            if self.depth == 1 {
                self.outcome = Some(Outcome::MissedAtDepthOne);
            } else {
                self.lower(now);
            }
        } else {
            self.failed += 1;
        }
    }

    /// How many more requests the search lets a thread with `in_flight`
    /// in flight have.
    pub fn room(&self, in_flight: u32) -> u32 {
        self.depth.saturating_sub(in_flight)
    }

    /// What a thread's note says of its search.
    fn found(&self) -> String {
        match self.outcome {
            Some(Outcome::Settled(d)) => format!("depth {d}"),
            Some(Outcome::MissedAtDepthOne) => {
                "missed at depth 1 (fio ends the job: max latency exceeded)".to_string()
            }
            None => format!("still searching at depth {} when the run ended", self.depth),
        }
    }
}

/// The note of a job with a latency target under a strategy: the depth
/// each of its threads (`searches`, in order) settled on, or why it did
/// not.
pub fn note<'a>(
    strategy: &str,
    job: &str,
    target: &LatencyTarget,
    searches: impl IntoIterator<Item = &'a DepthSearch>,
) -> String {
    let found: Vec<String> = searches.into_iter().map(DepthSearch::found).collect();
    format!(
        "strategy '{strategy}': job '{job}': latency target {} ns at p{}: {} (its figures \
         cover the whole search; fio's own report covers only the final window)",
        target.target,
        target.percentile,
        found.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn target(percentile: f64) -> LatencyTarget {
        LatencyTarget {
            target: 100_000,
            window: MS,
            percentile,
        }
    }

    /// Runs windows of fast I/Os, nothing left in flight at their ends:
    /// the depths tried.
    fn fast_windows(search: &mut DepthSearch, t: &LatencyTarget, windows: u64) -> Vec<u32> {
        let mut depths = Vec::new();
        for w in 1..=windows {
            search.completion(t, 10_000, w * MS - 1);
            assert_eq!(search.step(t, w * MS, 0), Step::Run);
            // The loop's next pass: a wait for nothing, and a new window.
            assert_eq!(search.step(t, w * MS, 0), Step::Run);
            depths.push(search.depth());
        }
        depths
    }

    #[test]
    fn a_met_window_doubles_the_depth_up_to_iodepth_then_settles() {
        let t = target(99.0);
        let mut search = DepthSearch::new(8);
        assert_eq!(search.step(&t, 0, 0), Step::Run);
        assert_eq!(fast_windows(&mut search, &t, 4), [2, 4, 8, 8]);
        assert_eq!(search.outcome(), None, "one more window at the depth found");
        search.completion(&t, 10_000, 5 * MS - 1);
        assert_eq!(search.step(&t, 5 * MS, 0), Step::End);
        assert_eq!(search.outcome(), Some(Outcome::Settled(8)));
    }

    #[test]
    fn a_missed_window_bisects_down_and_waits_for_the_requests_in_flight() {
        let t = target(99.0);
        let mut search = DepthSearch::new(64);
        search.step(&t, 0, 0);
        fast_windows(&mut search, &t, 3);
        assert_eq!(search.depth(), 8);
        // One late I/O in two: the window misses p99.
        search.completion(&t, 10_000, 4 * MS - 2);
        search.completion(&t, 500_000, 4 * MS - 1);
        assert_eq!(search.step(&t, 4 * MS, 3), Step::Run);
        // high = 8, low was 4: (8 + 4) / 2.
        assert_eq!(search.depth(), 6);
        assert_eq!(search.step(&t, 4 * MS + 1, 3), Step::Quiesce);
        assert_eq!(search.step(&t, 4 * MS + 2, 0), Step::Run);
        // A met window now bisects towards the depth that failed.
        search.completion(&t, 10_000, 5 * MS);
        search.step(&t, 5 * MS + 2, 0);
        assert_eq!(search.depth(), 7);
        assert_eq!(search.room(5), 2);
    }

    #[test]
    fn a_late_request_at_depth_one_and_percentile_100_ends_the_search() {
        let t = target(100.0);
        let mut search = DepthSearch::new(4);
        search.step(&t, 0, 0);
        search.completion(&t, 200_000, 10);
        assert_eq!(search.step(&t, 20, 0), Step::End);
        assert_eq!(search.outcome(), Some(Outcome::MissedAtDepthOne));
        let n = note("irq", "reader", &t, [&search]);
        assert!(n.contains("missed at depth 1"), "{n}");
    }

    #[test]
    fn a_window_without_completions_is_not_judged() {
        let t = target(99.0);
        let mut search = DepthSearch::new(4);
        search.step(&t, 0, 0);
        assert_eq!(search.step(&t, 10 * MS, 1), Step::Run);
        assert_eq!(search.depth(), 1);
        let n = note("irq", "reader", &t, [&search, &search]);
        assert!(
            n.ends_with(
                "still searching at depth 1 when the run ended, still searching at depth 1 when \
                 the run ended (its figures cover the whole search; fio's own report covers only \
                 the final window)"
            ),
            "{n}"
        );
    }
}
