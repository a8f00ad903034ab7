//! What a run whose jobs start in turn (fio's `stonewall` groups and
//! `startdelay`) says of when each ran: the notes both engines write, each
//! job's rates being over its own window.

use cint_policy::Nanos;

use crate::units::format_ms as ms;
use crate::Scenario;

/// The run's groups in the order they run (fio's `stonewall`:
/// ascending, the first starting with the run).
pub fn group_order(sc: &Scenario) -> Vec<u32> {
    let mut order: Vec<u32> = sc.jobs.iter().map(|j| j.schedule.group).collect();
    order.sort_unstable();
    order.dedup();
    order
}

/// Whether the run's jobs start in turn: several groups, or a job with a
/// `startdelay`. Only then do the notes say when each job ran.
pub fn staged(sc: &Scenario, order: &[u32]) -> bool {
    order.len() > 1 || sc.jobs.iter().any(|j| j.schedule.startdelay > 0)
}

/// How one job of a group ran, for the group's note.
#[derive(Clone, Copy, Debug)]
pub struct JobSpan<'a> {
    /// The job's name.
    pub name: &'a str,
    /// When it started, and its measured window's start and end, from
    /// the run's start; `None`: it did not start before the run ended.
    pub ran: Option<(Nanos, Nanos, Nanos)>,
}

/// The note on group `group` of a run under `strategy`: when each of its
/// jobs started and what it measured.
pub fn group_note(strategy: &str, group: u32, jobs: &[JobSpan<'_>]) -> String {
    let parts: Vec<String> = jobs
        .iter()
        .map(|j| match j.ran {
            None => format!("'{}' did not start before the run ended", j.name),
            Some((start, from, to)) => format!(
                "'{}' started at {}, measured from {} to {}",
                j.name,
                ms(start),
                ms(from),
                ms(to)
            ),
        })
        .collect();
    format!("strategy '{strategy}': group {group}: {}", parts.join("; "))
}

/// The note on a run whose groups ran one after another.
pub fn groups_in_turn_note(strategy: &str) -> String {
    format!(
        "strategy '{strategy}': its groups ran one after another: each job's rates are over its \
         own measured window, so a total adds rates of different windows"
    )
}

/// The note on a job that ended within its own warm-up: it started at
/// `start`, ended at `end` with `ios` requests completed (`None`: a
/// CPU-bound job, which makes none), and its warm-up would have ended at
/// `warmup_end`; the run's window opened at `run_window` (`None`: the
/// run ended first). Its figures are then its whole life's, as fio's are
/// for a job that ends within its `ramp_time`: fio resets a job's counts
/// only when its ramp ends while it runs (time.c `ramp_time_over`), and
/// takes no latency sample before (io_u.c `should_account`).
pub fn ended_in_warmup_note(
    strategy: &str,
    job: &str,
    (start, end, warmup_end): (Nanos, Nanos, Nanos),
    ios: Option<u64>,
    run_window: Option<Nanos>,
) -> String {
    let what = match ios {
        None => "its CPU is over its whole life".to_string(),
        Some(0) => "no request completed in it, and it has no latency sample".to_string(),
        Some(n) => format!(
            "its {n} requests, rates and CPU are over its whole life, and it has no latency \
             sample"
        ),
    };
    // The totals' interrupts, CPU and switches are the run window's: a
    // life before it is not in them, though its requests are in the
    // totals' rates and per-request ratios.
    let outside = match run_window {
        Some(open) if start < open => format!(
            "; the run's window opened at {}, and the totals' interrupts, CPU and switches, \
             counted over it, leave out what it did before",
            ms(open)
        ),
        _ => String::new(),
    };
    format!(
        "{} started at {} and ended at {}, within its warm-up, \
         which was to end at {} (its runtime, number_ios, io_size, steady state or another job's \
         exitall ended it): as fio does for a job that ends within its ramp_time, \
         {what}{outside}",
        ended_in_warmup_subject(strategy, job),
        ms(start),
        ms(end),
        ms(warmup_end)
    )
}

/// The start of [`ended_in_warmup_note`]'s note on `job` of `strategy`.
fn ended_in_warmup_subject(strategy: &str, job: &str) -> String {
    format!("strategy '{strategy}': job '{job}'")
}

/// Whether `note` is [`ended_in_warmup_note`]'s on `job` of `strategy`:
/// that job's figures are its whole life's, without latency samples.
pub fn says_ended_in_warmup(note: &str, strategy: &str, job: &str) -> bool {
    note.strip_prefix(&ended_in_warmup_subject(strategy, job))
        .is_some_and(|rest| rest.contains(", within its warm-up, "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_that_ended_in_its_warm_up_is_said_to_count_its_whole_life() {
        let note = ended_in_warmup_note("s", "j", (0, 2_725_000, 100_000_000), Some(256), None);
        assert_eq!(
            note,
            "strategy 's': job 'j' started at 0.000 ms and ended at 2.725 ms, within its \
             warm-up, which was to end at 100.000 ms (its runtime, number_ios, io_size, steady \
             state or another job's exitall ended it): as fio does for a job that ends within \
             its ramp_time, its 256 requests, rates and CPU are over its whole life, and it has \
             no latency sample"
        );
        assert!(says_ended_in_warmup(&note, "s", "j"));
        assert!(!says_ended_in_warmup(&note, "s", "k") && !says_ended_in_warmup(&note, "t", "j"));
        let none = ended_in_warmup_note("s", "j", (0, 1, 2), Some(0), None);
        assert!(none.ends_with("no request completed in it, and it has no latency sample"));
        let before = ended_in_warmup_note(
            "s",
            "j",
            (1_000_000, 2_000_000, 6_000_000),
            Some(9),
            Some(5_000_000),
        );
        assert!(
            before.ends_with(
                "; the run's window opened at 5.000 ms, and the totals' interrupts, CPU and \
                 switches, counted over it, leave out what it did before"
            ),
            "{before}"
        );
        let within = ended_in_warmup_note(
            "s",
            "j",
            (5_000_000, 6_000_000, 8_000_000),
            Some(9),
            Some(5_000_000),
        );
        assert!(within.ends_with("no latency sample"), "{within}");
        let burner = ended_in_warmup_note("s", "j", (0, 1, 2), None, None);
        assert!(
            burner.ends_with("ramp_time, its CPU is over its whole life"),
            "{burner}"
        );
    }

    #[test]
    fn a_group_note_says_when_each_job_ran_or_that_it_did_not() {
        let jobs = [
            JobSpan {
                name: "a",
                ran: Some((1_000_000, 1_500_000, 2_250_000)),
            },
            JobSpan {
                name: "b",
                ran: None,
            },
        ];
        assert_eq!(
            group_note("s", 2, &jobs),
            "strategy 's': group 2: 'a' started at 1.000 ms, measured from 1.500 ms to \
             2.250 ms; 'b' did not start before the run ended"
        );
    }
}
