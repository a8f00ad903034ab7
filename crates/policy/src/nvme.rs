//! NVMe static interrupt aggregation (`nvme`, Feature ID 08h,
//! docs/ALGORITHMS.md section 2), with the per-vector "Coalescing Disable"
//! of Feature 09h.
//!
//! The window opens at the first completion not yet covered by an
//! interrupt and does not move when more arrive: fire when `thr` are
//! pending or `time` has passed since the window opened.

use crate::config::NvmeParams;
use crate::{Decision, Hint, InFlight, Nanos, Policy, PolicyError, Seq};

/// NVMe aggregation state for one completion queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmeAggregation {
    params: NvmeParams,
    flight: InFlight,
    /// Completions posted since the last interrupt.
    pending: u32,
    /// When the open window closes; meaningful while `pending > 0`.
    window_end: Nanos,
}

impl NvmeAggregation {
    /// Builds the policy; rejects `thr` outside 1..=256.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::config::NvmeParams;
    /// use cint_policy::nvme::NvmeAggregation;
    /// use cint_policy::{Decision, Hint, Policy, US};
    ///
    /// // Two completions or 100 us, whichever comes first.
    /// let params = NvmeParams { thr: 2, time: 100 * US, coalescing_disabled: false };
    /// let mut queue = NvmeAggregation::new(params)?;
    /// assert_eq!(queue.feature_08h_dword11(), 0x0101); // thr - 1, time in 100 us
    /// let a = queue.on_submit(0, Hint::Unmarked);
    /// let b = queue.on_submit(0, Hint::Unmarked);
    /// assert_eq!(queue.on_complete(10 * US, a, Hint::Unmarked), Decision::Hold);
    /// assert_eq!(queue.on_complete(20 * US, b, Hint::Unmarked), Decision::FULL);
    /// # Ok::<(), cint_policy::PolicyError>(())
    /// ```
    pub fn new(params: NvmeParams) -> Result<Self, PolicyError> {
        params.validate()?;
        Ok(NvmeAggregation {
            params,
            flight: InFlight::new(),
            pending: 0,
            window_end: 0,
        })
    }

    /// The NVMe wire encoding of Feature 08h's dword 11: bits 7:0 hold
    /// `thr - 1`, bits 15:8 the time in 100 us units (rounded down,
    /// saturating at 255).
    pub fn feature_08h_dword11(&self) -> u32 {
        let thr = self.params.thr.saturating_sub(1) & 0xff;
        let time = (self.params.time / (100 * crate::US)).min(255) as u32;
        thr | (time << 8)
    }

    /// True when this queue never coalesces (`thr = 1`, `time = 0` or
    /// Feature 09h Coalescing Disable).
    pub const fn coalescing_off(&self) -> bool {
        self.params.coalescing_disabled || self.params.thr <= 1 || self.params.time == 0
    }

    /// Completions waiting for an interrupt.
    pub const fn pending(&self) -> u32 {
        self.pending
    }

    fn fire(&mut self) -> Decision {
        self.pending = 0;
        Decision::FULL
    }
}

impl Policy for NvmeAggregation {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq {
        self.flight.submit()
    }

    fn on_complete(&mut self, now: Nanos, _seq: Seq, _hint: Hint) -> Decision {
        self.flight.complete();
        if self.coalescing_off() {
            return Decision::FULL;
        }
        if self.pending == 0 {
            self.window_end = now.saturating_add(self.params.time);
        }
        self.pending += 1;
        if self.pending >= self.params.thr || now >= self.window_end {
            self.fire()
        } else {
            Decision::Hold
        }
    }

    fn on_timer(&mut self, now: Nanos) -> Decision {
        if self.pending > 0 && now >= self.window_end {
            self.fire()
        } else {
            Decision::Hold
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        (self.pending > 0).then_some(self.window_end)
    }

    fn in_flight(&self) -> u32 {
        self.flight.count()
    }
}
