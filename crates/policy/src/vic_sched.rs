//! Scheduler-aware vIC (ALGORITHMS.md §7). PLACEHOLDER: being written.
use crate::config::VicSchedParams;
use crate::vic::Vic;
use crate::{Decision, Hint, Nanos, Policy, PolicyError, Seq};

/// Scheduler-aware vIC.
#[derive(Clone, Debug)]
pub struct VicSched { vic: Vic }

impl VicSched {
    /// Builds the policy.
    pub fn new(params: VicSchedParams, now: Nanos) -> Result<Self, PolicyError> {
        todo!("{params:?} {now}")
    }
    /// The underlying vIC.
    pub fn vic(&self) -> &Vic { &self.vic }
}

impl Policy for VicSched {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq { todo!() }
    fn on_complete(&mut self, _now: Nanos, _seq: Seq, _hint: Hint) -> Decision { todo!() }
    fn on_timer(&mut self, _now: Nanos) -> Decision { todo!() }
    fn next_deadline(&self) -> Option<Nanos> { todo!() }
    fn in_flight(&self) -> u32 { todo!() }
}
