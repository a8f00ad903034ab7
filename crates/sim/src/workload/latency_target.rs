//! fio's latency-target search (`latency_target`, `latency_window`,
//! `latency_percentile`), the mechanism of fio's target.c: each thread
//! looks for the deepest queue whose I/Os meet a latency.
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
//! zero window lowers the depth right after every raise; the model judges
//! only windows with completions. fio also resets its statistics for the
//! final run; the model keeps measuring the whole window and says in a
//! note which depth each thread settled on.

use cint_policy::Nanos;
use cint_scenario::LatencyTarget;

use crate::world::World;

/// One thread's search.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DepthSearch {
    /// The depth the thread may keep in flight now.
    pub(crate) depth: u32,
    low: u32,
    high: u32,
    started: bool,
    window_start: Nanos,
    completed: u64,
    failed: u64,
    /// Waiting for its I/Os in flight before a new window.
    quiescing: bool,
    /// Running the final window at the depth found.
    final_run: bool,
    /// The search ended: at the depth found, or fatally at depth 1.
    pub(crate) outcome: Option<SearchOutcome>,
}

/// How a thread's search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SearchOutcome {
    /// It ran its final window at this depth.
    Settled(u32),
    /// An I/O missed the target at depth 1 (percentile 100).
    MissedAtDepthOne,
}

impl DepthSearch {
    /// A search up to `iodepth`.
    pub(crate) fn new(iodepth: u32) -> DepthSearch {
        DepthSearch {
            depth: 1,
            low: 1,
            high: iodepth.max(1),
            ..DepthSearch::default()
        }
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
    fn raise(&mut self, iodepth: u32, now: Nanos) -> bool {
        let before = self.depth;
        self.low = self.depth;
        self.depth = if self.high != iodepth {
            (self.depth + self.high) / 2
        } else {
            self.depth.saturating_mul(2)
        }
        .clamp(1, iodepth);
        if self.depth == before {
            if self.final_run {
                self.outcome = Some(SearchOutcome::Settled(before));
                return true;
            }
            self.final_run = true;
            self.quiescing = true;
        }
        self.new_window(now);
        false
    }
}

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
        let iodepth = self.threads[t].prog.iodepth.max(1);
        let search = &mut self.searches[t];
        if search.outcome.is_some() {
            self.exit_thread(t);
            return true;
        }
        if !search.started {
            search.started = true;
            search.new_window(now);
        }
        if search.quiescing {
            if self.quiesce(t) {
                return true;
            }
            let search = &mut self.searches[t];
            search.quiescing = false;
            search.new_window(now);
            return false;
        }
        let elapsed = now.saturating_sub(search.window_start);
        if elapsed < target.window || search.completed == 0 {
            return false;
        }
        let met = (search.completed - search.failed) as f64 * 100.0
            >= target.percentile * search.completed as f64;
        let over = if met {
            search.raise(iodepth, now)
        } else {
            search.lower(now);
            false
        };
        if over {
            self.exit_thread(t);
            return true;
        }
        false
    }

    /// One completion of thread `t` with latency `lat`.
    pub(crate) fn depth_search_completion(&mut self, t: usize, lat: Nanos) {
        let Some(target) = self.target_of(t) else {
            return;
        };
        let now = self.now();
        let search = &mut self.searches[t];
        search.completed += 1;
        if lat <= target.target {
            return;
        }
        if target.percentile >= 100.0 {
            if search.depth == 1 {
                search.outcome = Some(SearchOutcome::MissedAtDepthOne);
            } else {
                search.lower(now);
            }
        } else {
            search.failed += 1;
        }
    }

    /// How many more requests the search lets thread `t` have in flight.
    pub(crate) fn depth_search_room(&self, t: usize) -> u32 {
        if self.target_of(t).is_none() {
            return u32::MAX;
        }
        self.searches[t]
            .depth
            .saturating_sub(self.threads[t].in_flight)
    }

    /// One note per job with a latency target: the depth each thread
    /// settled on, or why it did not.
    pub(crate) fn depth_search_notes(&self, strategy: &str) -> Vec<String> {
        let mut notes = Vec::new();
        for (j, job) in self.sc.jobs.iter().enumerate() {
            let cint_scenario::Work::Io(io) = &job.work else {
                continue;
            };
            let Some(target) = io.shape.latency_target else {
                continue;
            };
            let found: Vec<String> = self
                .threads
                .iter()
                .enumerate()
                .filter(|(_, th)| th.job as usize == j)
                .map(|(t, _)| match self.searches[t].outcome {
                    Some(SearchOutcome::Settled(d)) => format!("depth {d}"),
                    Some(SearchOutcome::MissedAtDepthOne) => {
                        "missed at depth 1 (fio ends the job: max latency exceeded)".to_string()
                    }
                    None => format!(
                        "still searching at depth {} when the run ended",
                        self.searches[t].depth
                    ),
                })
                .collect();
            notes.push(format!(
                "strategy '{strategy}': job '{}': latency target {} ns at p{}: {} (its figures \
                 cover the whole search; fio's own report covers only the final window)",
                job.name,
                target.target,
                target.percentile,
                found.join(", ")
            ));
        }
        notes
    }
}
