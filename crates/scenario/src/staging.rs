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

#[cfg(test)]
mod tests {
    use super::*;

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
