//! The requests a measured window ends on, and the note both engines give
//! when they are the job's slowest. A latency is counted when its request
//! completes, so a window short against a job's slowest requests leaves
//! them out, and the job's latencies understate them however exactly each
//! is measured: 28 threads taking 8 ms turns on one core showed 11.7 ms
//! mean over 300 ms, and 29.3 ms over 2 s, where Little's law gives 32 ms.
//!
//! ```
//! use cint_scenario::unfinished::Unfinished;
//!
//! let mut waiting = Unfinished::default();
//! for age in [9_000_000, 7_000_000] {
//!     waiting.add(age);
//! }
//! // 40 requests completed in 1 ms each on average: the two still
//! // waiting, 8 ms each, are its slowest, and 16 ms of the 40 counted.
//! assert!(waiting.note("none", "deep", 40, 1e6).is_some());
//! // Over a window ten times as long, they are a small share of it.
//! assert!(waiting.note("none", "deep", 400, 1e6).is_none());
//! ```

use cint_policy::Nanos;

use crate::units::format_ms;

/// A job's requests still waiting at its window's end: each one's wait
/// counts from its system call, or from the window's start where it
/// came before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unfinished {
    /// How many.
    pub count: u64,
    /// Their waits in the window, summed, ns.
    pub waited: Nanos,
    /// The longest of those waits, ns.
    pub oldest: Nanos,
}

impl Unfinished {
    /// One more request, which had waited `age` in the window.
    pub fn add(&mut self, age: Nanos) {
        self.count += 1;
        self.waited = self.waited.saturating_add(age);
        self.oldest = self.oldest.max(age);
    }

    /// Another thread's requests of the same job.
    pub fn merge(&mut self, other: &Unfinished) {
        self.count += other.count;
        self.waited = self.waited.saturating_add(other.waited);
        self.oldest = self.oldest.max(other.oldest);
    }

    /// The note for job `job` under strategy `strategy`, which completed
    /// `completed` requests in its window in `mean_latency` ns each on
    /// average: given where the requests still waiting had waited longer
    /// on average than the completed took, and all together more than a
    /// quarter of the latency the completed add up to. A short window
    /// alone (few latencies long) leaves out as many fast as slow, and
    /// says nothing.
    pub fn note(
        &self,
        strategy: &str,
        job: &str,
        completed: u64,
        mean_latency: f64,
    ) -> Option<String> {
        if completed == 0 || self.count == 0 {
            return None;
        }
        let mean_wait = self.waited / self.count;
        if (self.waited as f64) <= mean_latency * completed as f64 / 4.0
            || mean_wait as f64 <= mean_latency
        {
            return None;
        }
        Some(format!(
            "strategy '{strategy}': job '{job}' completed {completed} requests in its window, \
             but {} more were still waiting at its end, for {} on average (the oldest {}), \
             where those completed took {}: a latency is counted when its request completes, \
             so the job's latencies leave out its slowest requests and understate them; a \
             longer window counts them",
            self.count,
            format_ms(mean_wait),
            format_ms(self.oldest),
            format_ms(mean_latency as Nanos),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(ages: &[Nanos]) -> Unfinished {
        let mut u = Unfinished::default();
        for &age in ages {
            u.add(age);
        }
        u
    }

    #[test]
    fn requests_waiting_no_longer_than_the_completed_took_say_nothing() {
        // Waits of 1 ms where the completed took 1 ms: a window's edge cuts
        // through a steady queue, as long as it is.
        assert_eq!(waiting(&[1_000_000; 64]).note("s", "j", 10, 1e6), None);
    }

    #[test]
    fn long_waits_that_are_a_small_share_of_the_window_say_nothing() {
        // 4 x 5 ms against 100 x 1 ms: 20 ms is not more than 25 ms.
        assert_eq!(waiting(&[5_000_000; 4]).note("s", "j", 100, 1e6), None);
        let note = waiting(&[5_000_000; 4]).note("s", "j", 79, 1e6);
        assert!(note.is_some_and(|n| n.contains("4 more were still waiting")));
    }

    #[test]
    fn a_job_that_completed_nothing_has_its_own_note() {
        assert_eq!(waiting(&[9_000_000]).note("s", "j", 0, 0.0), None);
        assert_eq!(Unfinished::default().note("s", "j", 5, 1.0), None);
    }

    #[test]
    fn threads_merge_into_their_job() {
        let mut a = waiting(&[3, 9]);
        a.merge(&waiting(&[5]));
        assert_eq!(
            a,
            Unfinished {
                count: 3,
                waited: 17,
                oldest: 9
            }
        );
    }

    #[test]
    fn the_note_gives_the_mean_wait_the_oldest_and_the_completed_mean() {
        let note = waiting(&[2_000_000, 4_000_000])
            .note("none", "deep", 3, 1_500_000.0)
            .expect("said");
        assert!(note.contains("job 'deep' completed 3 requests"), "{note}");
        assert!(
            note.contains("for 3.000 ms on average (the oldest 4.000 ms)"),
            "{note}"
        );
        assert!(
            note.contains("where those completed took 1.500 ms"),
            "{note}"
        );
    }
}
