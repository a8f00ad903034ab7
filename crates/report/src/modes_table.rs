//! The table's completion-mode section, printed only when a strategy is
//! `mode-select`: per strategy and job, the share of its choices that
//! spun, slept then spun, or slept until the interrupt, and how many it
//! made in the measured time (docs/ALGORITHMS.md section 10).

use crate::RunResult;

/// What the completion-mode columns mean.
pub const MODES_LEGEND: &str = "poll, sleep, interrupt: share of the selector's choices in the \
measured time that spun from submission on, slept on a timer then spun, or slept until the \
interrupt; choices: how many it made (one per request for a synchronous job, one per wait for \
an io_uring IOPOLL ring; a job Linux would not poll makes none)";

/// The section, or an empty string when no strategy chose modes.
pub(crate) fn section(r: &RunResult) -> String {
    let mut rows: Vec<Vec<String>> =
        vec![["strategy", "job", "poll", "sleep", "interrupt", "choices"]
            .iter()
            .map(|s| s.to_string())
            .collect()];
    for s in &r.results {
        for j in &s.jobs {
            let Some(m) = j.modes else {
                continue;
            };
            let share = |n: u64| match m.total() {
                0 => "-".to_string(),
                total => format!("{:.1}%", n as f64 * 100.0 / total as f64),
            };
            rows.push(vec![
                s.strategy.clone(),
                j.name.clone(),
                share(m.poll),
                share(m.sleep),
                share(m.interrupt),
                m.total().to_string(),
            ]);
        }
    }
    if rows.len() == 1 {
        return String::new();
    }
    crate::table::aligned_block("completion modes chosen", &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;
    use crate::ModeChoices;

    #[test]
    fn only_a_run_with_choices_gets_the_section() {
        let mut r = sample();
        assert_eq!(section(&r), "");
        r.results[0].jobs[0].modes = Some(ModeChoices {
            poll: 1,
            sleep: 0,
            interrupt: 3,
        });
        r.results[0].jobs[1].modes = Some(ModeChoices::default());
        let text = section(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "completion modes chosen:");
        assert!(lines[2].starts_with("strategy"));
        let first: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(&first[2..], ["25.0%", "0.0%", "75.0%", "4"]);
        // A job that chose nothing shows it rather than shares of zero.
        let second: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(&second[2..], ["-", "-", "-", "0"]);
        assert!(crate::table::to_table(&r).contains("completion modes: poll, sleep"));
    }
}
