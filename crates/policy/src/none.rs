//! No coalescing (`none`, docs/ALGORITHMS.md section 1): a full interrupt for every
//! completion, at once. The Linux default and the papers' baseline.

use crate::{Decision, Hint, InFlight, Nanos, Policy, Seq};

/// Fires a full interrupt per completion.
///
/// # Example
///
/// ```
/// use cint_policy::none::NoCoalescing;
/// use cint_policy::{Decision, Hint, Policy};
///
/// let mut queue = NoCoalescing::new();
/// let seq = queue.on_submit(0, Hint::Unmarked);
/// assert_eq!(queue.on_complete(5_000, seq, Hint::Unmarked), Decision::FULL);
/// assert_eq!(queue.next_deadline(), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoCoalescing {
    flight: InFlight,
}

impl NoCoalescing {
    /// A new queue.
    pub const fn new() -> Self {
        NoCoalescing {
            flight: InFlight::new(),
        }
    }
}

impl Policy for NoCoalescing {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq {
        self.flight.submit()
    }

    fn on_complete(&mut self, _now: Nanos, _seq: Seq, _hint: Hint) -> Decision {
        self.flight.complete();
        Decision::FULL
    }

    fn on_timer(&mut self, _now: Nanos) -> Decision {
        Decision::Hold
    }

    fn next_deadline(&self) -> Option<Nanos> {
        None
    }

    fn in_flight(&self) -> u32 {
        self.flight.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_completion_fires_a_full_interrupt() {
        let mut p = NoCoalescing::new();
        let a = p.on_submit(0, Hint::Unmarked);
        let b = p.on_submit(0, Hint::Urgent);
        assert_eq!(p.in_flight(), 2);
        assert_eq!(p.on_complete(5, b, Hint::Urgent), Decision::FULL);
        assert_eq!(p.on_complete(6, a, Hint::Unmarked), Decision::FULL);
        assert_eq!(p.in_flight(), 0);
        assert_eq!(p.next_deadline(), None);
    }
}
