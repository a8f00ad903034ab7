//! [`AnyPolicy`]: any policy held inline, so that a substrate picks one at
//! run time without a heap allocation or a trait object, and
//! [`PolicyConfig::build`], which makes one from its parameters.
//!
//! It sits above the policies and their parameters (`config`), which
//! depend on neither.

use crate::adaptive::Adaptive;
use crate::cinterrupts::Cinterrupts;
use crate::config::{PolicyConfig, PolicyError};
use crate::none::NoCoalescing;
use crate::nvme::NvmeAggregation;
use crate::vic::Vic;
use crate::vic_sched::VicSched;
use crate::{Decision, GuestSchedule, Hint, Nanos, Policy, Seq};

impl PolicyConfig {
    /// Builds the policy, starting at instant `now`.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::config::NvmeParams;
    /// use cint_policy::{AnyPolicy, Policy, PolicyConfig, PolicyError, US};
    ///
    /// let too_many = NvmeParams { thr: 300, time: 100 * US, coalescing_disabled: false };
    /// let refused = PolicyConfig::Nvme(too_many).build(0);
    /// assert!(matches!(refused, Err(PolicyError::OutOfRange { param: "thr", .. })));
    ///
    /// let queue: AnyPolicy = PolicyConfig::None.build(0)?;
    /// assert_eq!(queue.in_flight(), 0);
    /// # Ok::<(), PolicyError>(())
    /// ```
    pub fn build(&self, now: Nanos) -> Result<AnyPolicy, PolicyError> {
        Ok(match *self {
            PolicyConfig::None => AnyPolicy::None(NoCoalescing::new()),
            PolicyConfig::Nvme(p) => AnyPolicy::Nvme(NvmeAggregation::new(p)?),
            PolicyConfig::Adaptive(p) => AnyPolicy::Adaptive(Adaptive::new(p, now)?),
            PolicyConfig::Cinterrupts(p) => AnyPolicy::Cinterrupts(Cinterrupts::new(p, now)?),
            PolicyConfig::Vic(p) => AnyPolicy::Vic(Vic::new(p, now)?),
            PolicyConfig::VicSched(p) => AnyPolicy::VicSched(VicSched::new(p, now)?),
        })
    }
}

/// Any policy, held inline. Dispatches by `match`, so it costs no
/// allocation and no indirect call.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // inline on purpose: no heap in firmware
pub enum AnyPolicy {
    /// See [`NoCoalescing`].
    None(NoCoalescing),
    /// See [`NvmeAggregation`].
    Nvme(NvmeAggregation),
    /// See [`Adaptive`].
    Adaptive(Adaptive),
    /// See [`Cinterrupts`].
    Cinterrupts(Cinterrupts),
    /// See [`Vic`].
    Vic(Vic),
    /// See [`VicSched`].
    VicSched(VicSched),
}

macro_rules! dispatch {
    ($self:expr, $p:ident => $body:expr) => {
        match $self {
            AnyPolicy::None($p) => $body,
            AnyPolicy::Nvme($p) => $body,
            AnyPolicy::Adaptive($p) => $body,
            AnyPolicy::Cinterrupts($p) => $body,
            AnyPolicy::Vic($p) => $body,
            AnyPolicy::VicSched($p) => $body,
        }
    };
}

impl AnyPolicy {
    /// The vIC state inside this policy, if it is vIC or scheduler-aware
    /// vIC (for the IPI-reduction decision and the delivery ratio).
    pub fn vic(&self) -> Option<&Vic> {
        match self {
            AnyPolicy::Vic(v) => Some(v),
            AnyPolicy::VicSched(v) => Some(v.vic()),
            _ => None,
        }
    }

    /// The vIC state inside this policy, to change (the back end's
    /// failsafe shared across guests).
    pub fn vic_mut(&mut self) -> Option<&mut Vic> {
        match self {
            AnyPolicy::Vic(v) => Some(v),
            AnyPolicy::VicSched(v) => Some(v.vic_mut()),
            _ => None,
        }
    }
}

impl Policy for AnyPolicy {
    fn on_submit(&mut self, now: Nanos, hint: Hint) -> Seq {
        dispatch!(self, p => p.on_submit(now, hint))
    }

    fn on_complete(&mut self, now: Nanos, seq: Seq, hint: Hint) -> Decision {
        dispatch!(self, p => p.on_complete(now, seq, hint))
    }

    fn on_timer(&mut self, now: Nanos) -> Decision {
        dispatch!(self, p => p.on_timer(now))
    }

    fn next_deadline(&self) -> Option<Nanos> {
        dispatch!(self, p => p.next_deadline())
    }

    fn on_opportunity(&mut self, now: Nanos) -> Decision {
        dispatch!(self, p => p.on_opportunity(now))
    }

    fn on_schedule(&mut self, now: Nanos, schedule: GuestSchedule) {
        dispatch!(self, p => p.on_schedule(now, schedule))
    }

    fn in_flight(&self) -> u32 {
        dispatch!(self, p => p.in_flight())
    }
}
