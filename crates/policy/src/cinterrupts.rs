//! Calibrated interrupts (`cinterrupts`, Algorithm 2). PLACEHOLDER: being written.
use crate::config::CinterruptsParams;
use crate::{Decision, Hint, Nanos, Policy, PolicyError, Seq};

/// Calibrated interrupts for one completion queue.
#[derive(Clone, Debug)]
pub struct Cinterrupts {}

impl Cinterrupts {
    /// Builds the policy.
    pub fn new(params: CinterruptsParams, now: Nanos) -> Result<Self, PolicyError> {
        todo!("{params:?} {now}")
    }
}

impl Policy for Cinterrupts {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq { todo!() }
    fn on_complete(&mut self, _now: Nanos, _seq: Seq, _hint: Hint) -> Decision { todo!() }
    fn on_timer(&mut self, _now: Nanos) -> Decision { todo!() }
    fn next_deadline(&self) -> Option<Nanos> { todo!() }
    fn in_flight(&self) -> u32 { todo!() }
}
