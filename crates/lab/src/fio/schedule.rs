//! When the jobs run: fio's groups (`stonewall`, `wait_for`) one after
//! another, each as long as its longest job (start delay, ramp and
//! runtime), and from that the scenario's warm-up, its measured duration
//! and the jobs that need an end of their own.

use std::collections::BTreeSet;

use cint_policy::Nanos;
use cint_scenario::units::format_duration;

use super::diag::Diagnostics;
use super::job::{usable_name, JobSpec};
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
        // A job without runtime runs as long as the longest one that has a
        // runtime, or for the default when none has.
        let default_runtime = match longest {
            Some(d) => d,
            None => {
                diag.warn(
                    specs[0].line,
                    format!(
                        "no runtime given: the model is time based, running {}",
                        format_duration(default_duration)
                    ),
                );
                default_duration
            }
        };
        let groups = assign_groups(specs, diag)?;
        let last_group = groups.iter().copied().max().unwrap_or(0);
        let mut timeline = Timeline {
            warmup,
            duration: 0,
            groups,
            default_runtime,
            spans: vec![0; last_group as usize + 1],
        };
        for (spec, &g) in specs.iter().zip(&timeline.groups) {
            if g < last_group && spec.runtime.is_none() {
                diag.job_warn(
                    &spec.name,
                    spec.line,
                    format!(
                        "no runtime, and later groups wait for it: it runs at most {}",
                        format_duration(timeline.runtime(spec))
                    ),
                );
            }
            let span = timeline.span(spec);
            let group_span = &mut timeline.spans[g as usize];
            *group_span = (*group_span).max(span);
        }
        let total: Nanos = timeline
            .spans
            .iter()
            .fold(0, |a: Nanos, &s| a.saturating_add(s));
        timeline.duration = total.saturating_sub(warmup).max(1);
        Ok(timeline)
    }

    /// The job's runtime, its own or the default.
    fn runtime(&self, spec: &JobSpec) -> Nanos {
        spec.runtime.map_or(self.default_runtime, |r| r.value)
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
}
