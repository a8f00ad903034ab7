//! When the jobs run: fio's groups (`stonewall`, `wait_for`) one after
//! another, each as long as its longest job (start delay, ramp and
//! runtime), and from that the scenario's warm-up, its measured duration
//! and the jobs that need an end of their own.

use std::collections::BTreeSet;

use cint_policy::Nanos;
use cint_scenario::units::format_duration;

use super::diag::Diagnostics;
use super::job::{usable_name, JobSpec, SizeSpec};
use super::FioError;

/// The run's time line, from every job's timing options.
pub(super) struct Timeline {
    /// The one ramp time every job shares.
    pub(super) warmup: Nanos,
    /// Measured time: every group's span, less the warm-up.
    pub(super) duration: Nanos,
    /// Each job's group, dense from 0 in the order the groups run.
    pub(super) groups: Vec<u32>,
    /// The runtime of a job that gives none.
    default_runtime: Nanos,
    /// How long each group lasts.
    spans: Vec<Nanos>,
    /// A job runs to its end without a runtime.
    to_end: bool,
}

impl Timeline {
    /// Lays out `specs`; `default_duration` is the runtime when no job
    /// gives one.
    pub(super) fn new(
        specs: &[JobSpec],
        default_duration: Nanos,
        diag: &mut Diagnostics,
    ) -> Result<Timeline, FioError> {
        let ramps: BTreeSet<Nanos> = specs
            .iter()
            .map(|s| s.ramp.map_or(0, |r| r.value))
            .collect();
        if ramps.len() > 1 {
            let line = specs
                .iter()
                .find_map(|s| s.ramp.map(|r| r.line))
                .unwrap_or(0);
            return Err(diag.err(
                line,
                "jobs with different ramp_time are not supported (the model has one warm-up)"
                    .into(),
            ));
        }
        let warmup = ramps.into_iter().next().unwrap_or(0);
        let longest = specs
            .iter()
            .filter_map(|s| s.runtime.map(|r| r.value))
            .max();
        // A job without runtime that ends by its size or count runs to its
        // end, as in fio; one that would not end runs as long as the
        // longest one that has a runtime, or for the default when none has.
        let unbounded = specs
            .iter()
            .find(|s| s.runtime.is_none() && !ends_by_itself(s));
        let default_runtime = match (longest, unbounded) {
            (Some(d), _) => d,
            (None, Some(spec)) => {
                diag.job_warn(
                    &spec.name,
                    spec.line,
                    format!(
                        "no runtime, and nothing ends it (time_based, or no size: fio would go \
                         over the whole device): the model runs it {}",
                        format_duration(default_duration)
                    ),
                );
                default_duration
            }
            (None, None) => default_duration,
        };
        for spec in specs
            .iter()
            .filter(|s| s.runtime.is_none() && ends_by_itself(s))
        {
            let how_long = match expected_requests(spec) {
                Some(n) if n <= LONG_RUN_REQUESTS => continue,
                Some(n) => format!("about {n} requests"),
                None if spec.size.is_some() => {
                    "over its share of the whole device (a size in percent)".to_string()
                }
                None => "over the whole device (no size)".to_string(),
            };
            diag.job_warn(
                &spec.name,
                spec.line,
                format!(
                    "no runtime: it runs to its end as in fio, {how_long}, which takes a \
                     while to simulate (a runtime gives a window)"
                ),
            );
        }
        let groups = assign_groups(specs, diag)?;
        let last_group = groups.iter().copied().max().unwrap_or(0);
        let mut timeline = Timeline {
            warmup,
            duration: 0,
            groups,
            default_runtime,
            spans: vec![0; last_group as usize + 1],
            // A job whose final fsync writes pages back ends after its
            // runtime by as long as that takes: the run waits for it.
            to_end: specs
                .iter()
                .any(|s| (s.runtime.is_none() && ends_by_itself(s)) || s.flushes_at_its_end()),
        };
        for (spec, &g) in specs.iter().zip(&timeline.groups) {
            if g < last_group && spec.runtime.is_none() && !ends_by_itself(spec) {
                diag.job_warn(
                    &spec.name,
                    spec.line,
                    format!(
                        "no runtime, and later groups wait for it: it runs at most {}",
                        format_duration(timeline.runtime(spec))
                    ),
                );
            }
            // A job that flushes at its end lasts past its runtime, as one
            // that ends by itself lasts past any: its group may take the
            // hour, and the job stops at its runtime on its own.
            let span = match spec.flushes_at_its_end() {
                true => RUN_TO_END,
                false => timeline.span(spec),
            };
            let group_span = &mut timeline.spans[g as usize];
            *group_span = (*group_span).max(span);
        }
        let total: Nanos = timeline
            .spans
            .iter()
            .fold(0, |a: Nanos, &s| a.saturating_add(s));
        timeline.duration = total.saturating_sub(warmup).max(1);
        if timeline.to_end {
            // Each group of jobs that end by themselves may take the
            // hour; the run, which ends when they have, takes at most
            // that in all.
            timeline.duration = timeline.duration.min(RUN_TO_END);
        }
        Ok(timeline)
    }

    /// Whether a job runs to its end without a runtime: the run then ends
    /// when every job has, not at [`RUN_TO_END`].
    pub(super) fn runs_to_end(&self) -> bool {
        self.to_end
    }

    /// The job's runtime: its own; none (up to [`RUN_TO_END`]) for one
    /// that ends by its size or count; else the default.
    fn runtime(&self, spec: &JobSpec) -> Nanos {
        match spec.runtime {
            Some(r) => r.value,
            None if ends_by_itself(spec) => RUN_TO_END,
            None => self.default_runtime,
        }
    }

    /// How long the job runs from its own start: ramp and runtime.
    pub(super) fn length(&self, spec: &JobSpec) -> Nanos {
        self.warmup.saturating_add(self.runtime(spec))
    }

    /// From the start of the job's group to the job's end: start delay,
    /// ramp and runtime.
    fn span(&self, spec: &JobSpec) -> Nanos {
        let delay = spec.startdelay.map_or(0, |d| d.value);
        delay
            .saturating_add(self.warmup)
            .saturating_add(self.runtime(spec))
    }

    /// When the job stops, counted from its start (ramp and runtime), or
    /// `None` for a job of a single group that lasts as long as the run
    /// and so needs no end of its own.
    pub(super) fn job_end(&self, spec: &JobSpec) -> Option<Nanos> {
        let delay = spec.startdelay.map_or(0, |d| d.value);
        let single_group = self.spans.len() == 1;
        if single_group
            && delay == 0
            && (spec.runtime.is_none() || self.span(spec) >= self.spans[0])
        {
            None
        } else {
            Some(self.warmup.saturating_add(self.runtime(spec)))
        }
    }
}

/// The longest a job without a runtime that ends by its size or count
/// may run: an hour of simulated time (the run itself ends once every
/// job has).
pub(super) const RUN_TO_END: Nanos = 3_600_000_000_000;

/// A job that ends by itself this far off is warned of.
const LONG_RUN_REQUESTS: u64 = 10_000_000;

/// Whether fio ends the job by its size or count when it has no runtime:
/// not `time_based`, and a size, `io_size`, `loops` or `number_ios`
/// bounds it (a job without a size would go over the whole device).
fn ends_by_itself(spec: &JobSpec) -> bool {
    !spec.time_based
        && (spec.size.is_some()
            || spec.filesize.is_some()
            || spec.io_size.is_some()
            || spec.loops > 1
            || spec.number_ios.is_some())
}

/// About how many requests a job that ends by itself issues; `None`:
/// it goes over the whole device.
fn expected_requests(spec: &JobSpec) -> Option<u64> {
    let bs = spec.bs.map_or(4096, |b| b.value).max(1);
    // A size past the file's is cut to it, as the import cuts it.
    let file = spec.filesize.map(|f| f.value);
    let size = match spec.size.map(|s| s.value) {
        Some(SizeSpec::Bytes(b)) => file.map_or(b, |f| b.min(f)),
        _ => file.unwrap_or(0),
    };
    let bytes = spec
        .io_size
        .map_or(size, |b| b.value)
        .saturating_mul(spec.loops.max(1));
    let by_size = (bytes > 0).then(|| bytes / bs);
    let by_count = spec
        .number_ios
        .map(|n| n.value.saturating_mul(spec.loops.max(1)));
    match (by_size, by_count) {
        (Some(s), Some(c)) => Some(s.min(c)),
        (s, c) => s.or(c),
    }
}

/// fio's groups as ascending numbers from 0: a `stonewall` job starts a
/// group after every job before it, a `wait_for` job goes in the group
/// after its target's, any other job joins the current group.
fn assign_groups(specs: &[JobSpec], diag: &mut Diagnostics) -> Result<Vec<u32>, FioError> {
    let mut groups: Vec<u32> = Vec::with_capacity(specs.len());
    let (mut current, mut highest) = (0u32, 0u32);
    for (i, spec) in specs.iter().enumerate() {
        let g = if let Some(w) = &spec.wait_for {
            let wanted = usable_name(&w.value);
            let target = specs[..i]
                .iter()
                .position(|s| s.name == wanted)
                .ok_or_else(|| {
                    diag.err(
                        w.line,
                        format!(
                            "option 'wait_for={}': no job of that name before this one",
                            w.value
                        ),
                    )
                })?;
            let tg = groups[target];
            let shared = groups.iter().filter(|&&g| g == tg).count();
            if shared > 1 {
                diag.warn(
                    w.line,
                    format!(
                        "job '{}' waits for every job that runs with '{}' (the model runs \
                         groups one after another)",
                        spec.name, specs[target].name
                    ),
                );
            }
            tg + 1
        } else if spec.stonewall && i > 0 {
            current = highest + 1;
            current
        } else {
            current
        };
        highest = highest.max(g);
        groups.push(g);
    }
    // Dense numbers, in the order the groups run.
    let mut distinct = groups.clone();
    distinct.sort_unstable();
    distinct.dedup();
    Ok(groups
        .iter()
        .map(|g| distinct.iter().position(|d| d == g).unwrap_or(0) as u32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::import_str;
    use super::super::test_support::args;

    #[test]
    fn stonewall_and_wait_for_make_groups_that_run_in_turn() {
        let text = "[global]\nruntime=10ms\nramp_time=1ms\n[a]\n[b]\nstartdelay=2ms\n\
                    [c]\nstonewall\nruntime=5ms\n[d]\nwait_for=c\n[e]\n";
        let imp = import_str(text, "g.fio", &args()).expect("valid");
        let s = &imp.scenario;
        let groups: Vec<u32> = s.jobs.iter().map(|j| j.schedule.group).collect();
        assert_eq!(groups, [0, 0, 1, 2, 1]);
        assert_eq!(s.jobs[1].schedule.startdelay, 2_000_000);
        // Group 0: b's delay + ramp + runtime = 13 ms; group 1: 11 ms (c
        // runs 5 ms but e the file's 10 ms); group 2: 11 ms.
        assert_eq!(s.warmup, 1_000_000);
        assert_eq!(s.duration, 13_000_000 + 11_000_000 + 11_000_000 - 1_000_000);
        assert_eq!(s.jobs[2].runtime, Some(6_000_000));
        let bad = "[a]\n[b]\nwait_for=nobody\n";
        let e = import_str(bad, "w.fio", &args()).expect_err("unknown target");
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().contains("wait_for=nobody"), "{e}");
    }

    /// A long job without a runtime is warned of with what it does: its
    /// requests, or the whole device where it has no size or a share of it
    /// (it said "about 18446744073709551615 requests" there until
    /// 2026-11-29, and "no size" of a size in percent until 2026-11-30).
    #[test]
    fn a_long_job_is_warned_of_with_its_length() {
        let warning = |text: &str| {
            let imp = import_str(text, "l.fio", &args()).expect("valid");
            imp.warnings.into_iter().find(|w| w.contains("no runtime"))
        };
        let whole = warning(
            "[a]
rw=write
loops=2
",
        )
        .expect("warned");
        assert!(whole.contains("over the whole device (no size)"), "{whole}");
        let share = warning("[a]\nrw=write\nsize=50%\n").expect("warned");
        assert!(share.contains("a size in percent"), "{share}");
        let sized = warning(
            "[a]
size=64g
bs=4k
",
        )
        .expect("warned");
        assert!(sized.contains("about 16777216 requests"), "{sized}");
        assert_eq!(
            warning(
                "[a]
size=1m
"
            ),
            None
        );
    }
}
