//! vIC (ALGORITHMS.md §6). PLACEHOLDER: being written.
use crate::config::VicParams;
use crate::{Decision, Hint, Nanos, Policy, PolicyError, Seq};

/// vIC for one virtual completion queue.
#[derive(Clone, Debug)]
pub struct Vic {}

impl Vic {
    /// Builds the policy.
    pub fn new(params: VicParams, now: Nanos) -> Result<Self, PolicyError> {
        todo!("{params:?} {now}")
    }
}

impl Policy for Vic {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq { todo!() }
    fn on_complete(&mut self, _now: Nanos, _seq: Seq, _hint: Hint) -> Decision { todo!() }
    fn on_timer(&mut self, _now: Nanos) -> Decision { todo!() }
    fn next_deadline(&self) -> Option<Nanos> { todo!() }
    fn in_flight(&self) -> u32 { todo!() }
}
