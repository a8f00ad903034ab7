//! Calibrated interrupts (`cinterrupts`, Algorithm 2, ALGORITHMS.md §4).
//!
//! Unmarked completions go through the adaptive burst detector
//! ([`BurstDetector`]); Urgent and Barrier hints raise interrupts at once.
//! Every completion, hinted or not, restarts the quiescence interval.
//!
//! Design decisions where the algorithm leaves room:
//!
//! * **Urgent with OOO on** fires an urgent-only interrupt. The completion
//!   is not counted toward `thr` and the coalesced count is not reset: the
//!   handler reaps only Urgent entries, so the unmarked ones already waiting
//!   are still waiting. **Urgent with OOO off** fires a full interrupt.
//! * **Delivery bound.** Because Urgent completions restart the quiescence
//!   interval without being counted, a steady Urgent stream could otherwise
//!   hold coalesced unmarked entries forever. The policy therefore also
//!   fires a full interrupt `delta * thr` after the oldest coalesced
//!   completion arrived. For a stream of unmarked completions this cap
//!   never binds (Algorithm 1 already fires by then), so it only restores
//!   the adaptive bound "every completion within `delta * thr`".
//! * **Strict Barrier** without allocation: submitting a Barrier request
//!   records it with the number of requests in flight before it, in a
//!   fixed inline table of [`STRICT_BARRIER_CAPACITY`] entries; each
//!   completion of an earlier request lowers that count (kept as per-segment
//!   counts so a completion costs `O(log capacity)`, see `strict.rs`). When
//!   the Barrier completes with the count at zero, a full interrupt fires at
//!   once; otherwise the Barrier is "completed, waiting" and the full
//!   interrupt fires with the completion that brings its count to zero
//!   (merged with whatever that completion decides on its own). While it
//!   waits, the Barrier completion is counted as unmarked toward `thr`: its
//!   own entry sits in the completion queue, and without being counted
//!   nothing would bound how long it stays there (the earlier requests may
//!   take arbitrarily long), whereas counted it is reaped within the
//!   adaptive bound like any other. A Barrier submitted while the table is
//!   full degrades to relaxed (an earlier interrupt, never a lost
//!   completion) and is counted by [`Cinterrupts::strict_overflows`].
//! * **Storm guard** (`max_irq_rate = Some(r)`): an integer EWMA (weight
//!   1/128, shifts on a fixed-point value with 8 fractional bits) of the
//!   interval between consecutive hinted (Urgent or Barrier) completions,
//!   which is the interval between the interrupts they would trigger.
//!   While the average is below `T = 1e9 / r` ns, hinted completions are
//!   handled as unmarked, so they stay within the adaptive bounds. The
//!   average starts at `2 T` and is capped there: the guard starts off, it
//!   engages only after a sustained storm (about 89 closely spaced hinted
//!   completions, whatever came before), and a single sample is clamped at
//!   `256 T`, so one gap of at least `128 T` lifts the average back over
//!   `T` and switches the guard off. A waiting strict Barrier whose
//!   predecessors finish while the guard is engaged raises no interrupt of
//!   its own: it was counted toward `thr` and is delivered by the adaptive
//!   path. The guard caps the interrupts the hints raise; the adaptive
//!   fall-back adds at most one per `thr` completions or per quiet `delta`,
//!   so the total stays under `r` when `thr` and `delta` are set so that
//!   the fall-back alone would (the property tests state such a set-up).

mod strict;

pub use strict::STRICT_BARRIER_CAPACITY;
use strict::{OwnBarrier, StrictBarriers};

use crate::adaptive::BurstDetector;
use crate::config::{BarrierMode, CinterruptsParams};
use crate::{Decision, Hint, InFlight, Nanos, Policy, PolicyError, Seq, SEC};

/// Fractional bits of the storm guard's fixed-point average.
const EWMA_FRAC_BITS: u32 = 8;
/// The EWMA weight is `1 / 2^EWMA_WEIGHT_SHIFT` = 1/128.
const EWMA_WEIGHT_SHIFT: u32 = 7;

/// The storm guard's moving average of hinted-completion intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StormGuard {
    /// `1e9 / max_irq_rate`, fixed point.
    threshold: u64,
    /// Average interval, fixed point, at most `2 * threshold`.
    average: u64,
    last_hinted: Nanos,
}

impl StormGuard {
    fn new(max_irq_rate: u64, now: Nanos) -> Self {
        let threshold = (SEC / max_irq_rate.max(1)) << EWMA_FRAC_BITS;
        StormGuard {
            threshold,
            average: 2 * threshold,
            last_hinted: now,
        }
    }

    /// Feeds the interval since the previous hinted completion.
    fn sample(&mut self, now: Nanos) {
        let interval = now.saturating_sub(self.last_hinted);
        self.last_hinted = now;
        // Clamped at 256 T before the shift, so it cannot overflow and one
        // long gap lifts the average to at least 2 T.
        let ceiling = (self.threshold >> EWMA_FRAC_BITS) << (EWMA_WEIGHT_SHIFT + 1);
        let sample = interval.min(ceiling) << EWMA_FRAC_BITS;
        let decayed = self.average - (self.average >> EWMA_WEIGHT_SHIFT);
        self.average = (decayed + (sample >> EWMA_WEIGHT_SHIFT)).min(2 * self.threshold);
    }

    fn active(&self) -> bool {
        self.average < self.threshold
    }
}

/// Calibrated interrupts for one completion queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cinterrupts {
    params: CinterruptsParams,
    burst: BurstDetector,
    flight: InFlight,
    /// When the oldest completion counted by `burst` arrived.
    oldest_coalesced: Nanos,
    /// `delta * thr`: the longest any coalesced completion may wait.
    max_wait: Nanos,
    barriers: StrictBarriers,
    strict_overflows: u64,
    guard: Option<StormGuard>,
}

impl Cinterrupts {
    /// Builds the policy; rejects invalid adaptive parameters and a
    /// `max_irq_rate` outside 1..=1e9.
    pub fn new(params: CinterruptsParams, now: Nanos) -> Result<Self, PolicyError> {
        params.validate()?;
        Ok(Cinterrupts {
            params,
            burst: BurstDetector::new(params.adaptive, now)?,
            flight: InFlight::new(),
            oldest_coalesced: now,
            max_wait: params
                .adaptive
                .delta
                .saturating_mul(u64::from(params.adaptive.thr)),
            barriers: StrictBarriers::new(),
            strict_overflows: 0,
            guard: params.max_irq_rate.map(|rate| StormGuard::new(rate, now)),
        })
    }

    /// The parameters.
    pub const fn params(&self) -> CinterruptsParams {
        self.params
    }

    /// Completions coalesced since the last full interrupt.
    pub const fn coalesced(&self) -> u32 {
        self.burst.coalesced()
    }

    /// True while the storm guard treats hinted completions as unmarked.
    pub fn storm_guard_active(&self) -> bool {
        self.guard.is_some_and(|g| g.active())
    }

    /// Strict Barriers that found the tracking table full and were
    /// handled as relaxed.
    pub const fn strict_overflows(&self) -> u64 {
        self.strict_overflows
    }

    /// Strict Barriers submitted whose interrupt has not fired yet.
    pub const fn tracked_barriers(&self) -> usize {
        self.barriers.len()
    }

    /// Counts a completion toward `thr` as Algorithm 1 does.
    fn count(&mut self, now: Nanos) -> Decision {
        if self.burst.coalesced() == 0 {
            self.oldest_coalesced = now;
        }
        self.burst.count()
    }
}

impl Policy for Cinterrupts {
    fn on_submit(&mut self, _now: Nanos, hint: Hint) -> Seq {
        let seq = self.flight.submit();
        if self.params.barrier == BarrierMode::Strict
            && !self.barriers.submit(seq, hint == Hint::Barrier)
        {
            self.strict_overflows += 1;
        }
        seq
    }

    fn on_complete(&mut self, now: Nanos, seq: Seq, hint: Hint) -> Decision {
        self.flight.complete();
        self.burst.touch(now);
        if hint != Hint::Unmarked {
            if let Some(guard) = &mut self.guard {
                guard.sample(now);
            }
        }
        let guarded = self.storm_guard_active();
        let effective = if guarded { Hint::Unmarked } else { hint };
        let strict = self.params.barrier == BarrierMode::Strict;
        let (own_barrier, released) = if strict {
            let settled = self.barriers.complete(seq, effective == Hint::Barrier);
            (settled.own, settled.released && !guarded)
        } else {
            (OwnBarrier::NotTracked, false)
        };
        let own = match effective {
            Hint::Urgent if self.params.ooo => Decision::URGENT_ONLY,
            Hint::Urgent => Decision::FULL,
            // Waiting for earlier requests: counted as unmarked so that the
            // Barrier's own entry is reaped within the adaptive bound.
            Hint::Barrier if strict && own_barrier == OwnBarrier::Waiting => self.count(now),
            // Relaxed, ready, or untracked (table overflow): fire now.
            Hint::Barrier => Decision::FULL,
            Hint::Unmarked => self.count(now),
        };
        let decision = if released {
            own.merge(Decision::FULL)
        } else {
            own
        };
        if decision == Decision::FULL {
            // A full interrupt reaps everything coalesced so far.
            let _ = self.burst.reset();
        }
        decision
    }

    fn on_timer(&mut self, now: Nanos) -> Decision {
        if self.burst.coalesced() > 0 && now >= self.oldest_coalesced.saturating_add(self.max_wait)
        {
            self.burst.touch(now);
            return self.burst.reset();
        }
        self.burst.on_timer(now)
    }

    fn next_deadline(&self) -> Option<Nanos> {
        self.burst
            .next_deadline()
            .map(|t| t.min(self.oldest_coalesced.saturating_add(self.max_wait)))
    }

    fn in_flight(&self) -> u32 {
        self.flight.count()
    }
}
