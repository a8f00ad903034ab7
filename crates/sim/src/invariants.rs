//! Invariants checked while the simulation runs. They are cheap (a
//! comparison per state change) and always on: a violation stops the run
//! and [`crate::run`] returns it as an error instead of a result.
//!
//! * time never goes backwards;
//! * every request moves Free -> Submitting -> InDevice -> Posted ->
//!   Delivered -> Free: a CQ entry reaped twice, a completion delivered
//!   twice or a slot reused while in flight is caught at that transition;
//! * every request reaching the device is delivered at most once, and at
//!   the end `issued == delivered + (still at the device or in the CQ)`;
//! * per core, interrupt + thread + idle time equals the elapsed time, and
//!   the threads' CPU times add up to the cores' thread time.

/// Counts and the first violation seen.
#[derive(Debug, Default)]
pub(crate) struct Invariants {
    violation: Option<String>,
    /// Requests that reached the device.
    pub issued: u64,
    /// Requests reaped by a handler or a poll loop.
    pub delivered: u64,
    /// Completions handed to the application.
    pub handed: u64,
}

impl Invariants {
    /// Records a violation (the first one is kept).
    pub(crate) fn fail(&mut self, msg: String) {
        if self.violation.is_none() {
            self.violation = Some(msg);
        }
    }

    pub(crate) fn failed(&self) -> bool {
        self.violation.is_some()
    }

    pub(crate) fn violation(&self) -> Option<&str> {
        self.violation.as_deref()
    }

    /// End-of-run totals; `outstanding` counts request slots in use.
    pub(crate) fn check_totals(&mut self, outstanding: u64) {
        if self.delivered > self.issued {
            let msg = format!(
                "{} completions delivered for {} requests issued",
                self.delivered, self.issued
            );
            self.fail(msg);
        }
        if self.handed > self.delivered {
            let msg = format!(
                "{} completions handed out, only {} delivered",
                self.handed, self.delivered
            );
            self.fail(msg);
        }
        // Every request issued and not handed out is still in use.
        let unfinished = self.issued - self.handed.min(self.issued);
        if unfinished > outstanding {
            let msg = format!(
                "{unfinished} requests issued and not handed out, but only {outstanding} \
                 slots in use: a completion was lost"
            );
            self.fail(msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_violation_and_checks_totals() {
        let mut inv = Invariants::default();
        assert!(!inv.failed());
        inv.issued = 10;
        inv.delivered = 9;
        inv.handed = 8;
        inv.check_totals(2);
        assert!(!inv.failed());
        inv.check_totals(1);
        assert!(inv.violation().is_some_and(|m| m.contains("lost")));
        inv.fail("second".into());
        assert!(inv.violation().is_some_and(|m| m.contains("lost")));
        let mut twice = Invariants {
            issued: 1,
            delivered: 2,
            ..Default::default()
        };
        twice.check_totals(0);
        assert!(twice.failed());
    }
}
