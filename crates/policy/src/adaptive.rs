//! Adaptive burst detection (`adaptive`, cinterrupts Algorithm 1,
//! docs/ALGORITHMS.md section 3).
//!
//! An interrupt fires after `thr` completions, or after `delta` with no new
//! completion, whichever comes first.

use crate::config::AdaptiveParams;
use crate::{Decision, Hint, InFlight, Nanos, Policy, PolicyError, Seq};

/// The coalescing core shared by [`Adaptive`] and calibrated interrupts:
/// counts coalesced completions and keeps the quiescence timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurstDetector {
    params: AdaptiveParams,
    coalesced: u32,
    timeout: Nanos,
}

impl BurstDetector {
    /// Builds the detector; rejects `delta = 0` and `thr` outside 1..=65535.
    pub fn new(params: AdaptiveParams, now: Nanos) -> Result<Self, PolicyError> {
        params.validate()?;
        Ok(BurstDetector {
            params,
            coalesced: 0,
            timeout: now.saturating_add(params.delta),
        })
    }

    /// The parameters.
    pub const fn params(&self) -> AdaptiveParams {
        self.params
    }

    /// Completions coalesced since the last full interrupt.
    pub const fn coalesced(&self) -> u32 {
        self.coalesced
    }

    /// Any completion arrived: restart the quiescence interval.
    pub fn touch(&mut self, now: Nanos) {
        self.timeout = now.saturating_add(self.params.delta);
    }

    /// Counts an unmarked completion; fires a full interrupt at `thr`.
    pub fn count(&mut self) -> Decision {
        self.coalesced += 1;
        if self.coalesced >= self.params.thr {
            self.reset()
        } else {
            Decision::Hold
        }
    }

    /// A full interrupt fired (for this or another reason): everything
    /// coalesced so far is covered by it.
    pub fn reset(&mut self) -> Decision {
        self.coalesced = 0;
        Decision::FULL
    }

    /// The timer: fire if anything is coalesced and `delta` has passed.
    pub fn on_timer(&mut self, now: Nanos) -> Decision {
        if now < self.timeout {
            return Decision::Hold;
        }
        self.timeout = now.saturating_add(self.params.delta);
        if self.coalesced > 0 {
            self.reset()
        } else {
            Decision::Hold
        }
    }

    /// The quiescence deadline, while something waits for it. With nothing
    /// coalesced the algorithm's timer would only re-arm itself, so no
    /// deadline is asked for (an idle queue costs no timer events).
    pub fn next_deadline(&self) -> Option<Nanos> {
        (self.coalesced > 0).then_some(self.timeout)
    }
}

/// Adaptive burst detection for one completion queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adaptive {
    burst: BurstDetector,
    flight: InFlight,
}

impl Adaptive {
    /// Builds the policy; rejects `delta = 0` and `thr` outside 1..=65535.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::adaptive::Adaptive;
    /// use cint_policy::config::AdaptiveParams;
    /// use cint_policy::{Decision, Hint, Policy, US};
    ///
    /// let mut queue = Adaptive::new(AdaptiveParams { delta: 6 * US, thr: 2 }, 0)?;
    /// let seqs = [(); 3].map(|()| queue.on_submit(0, Hint::Unmarked));
    /// assert_eq!(queue.on_complete(US, seqs[0], Hint::Unmarked), Decision::Hold);
    /// // The second completion reaches thr.
    /// assert_eq!(queue.on_complete(2 * US, seqs[1], Hint::Unmarked), Decision::FULL);
    /// assert_eq!(queue.on_complete(3 * US, seqs[2], Hint::Unmarked), Decision::Hold);
    /// // Nothing more arrives: the interrupt fires delta after the last one.
    /// assert_eq!(queue.next_deadline(), Some(9 * US));
    /// assert_eq!(queue.on_timer(9 * US), Decision::FULL);
    /// # Ok::<(), cint_policy::PolicyError>(())
    /// ```
    pub fn new(params: AdaptiveParams, now: Nanos) -> Result<Self, PolicyError> {
        Ok(Adaptive {
            burst: BurstDetector::new(params, now)?,
            flight: InFlight::new(),
        })
    }

    /// Completions coalesced since the last interrupt.
    pub const fn coalesced(&self) -> u32 {
        self.burst.coalesced()
    }
}

impl Policy for Adaptive {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq {
        self.flight.submit()
    }

    fn on_complete(&mut self, now: Nanos, _seq: Seq, _hint: Hint) -> Decision {
        self.flight.complete();
        self.burst.touch(now);
        self.burst.count()
    }

    fn on_timer(&mut self, now: Nanos) -> Decision {
        self.burst.on_timer(now)
    }

    fn next_deadline(&self) -> Option<Nanos> {
        self.burst.next_deadline()
    }

    fn in_flight(&self) -> u32 {
        self.flight.count()
    }
}
