//! Calibrated interrupts (`cinterrupts`, Algorithm 2, docs/ALGORITHMS.md
//! section 4).
//!
//! Unmarked completions go through the adaptive burst detector
//! ([`BurstDetector`]); Urgent and Barrier hints raise interrupts at once.
//! Every completion, hinted or not, restarts the quiescence interval.
//!
//! Where the algorithm leaves room (Urgent with OOO, the `delta * thr`
//! cap, strict Barriers counted while they wait, the storm guard's average
//! and its two modes), docs/ALGORITHMS.md section 4 gives the choice made
//! here, its pseudo-code and why; the bookkeeping is in `strict.rs` and
//! `guard.rs`.

mod guard;
mod strict;

use guard::{HeldGroup, StormAverage};
pub use strict::STRICT_BARRIER_CAPACITY;
use strict::{OwnBarrier, StrictBarriers};

use crate::adaptive::BurstDetector;
use crate::config::{BarrierMode, CinterruptsParams, StormGuardMode};
use crate::{Decision, Hint, InFlight, Nanos, Policy, PolicyError, Seq};

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
    guard: Option<StormAverage>,
    /// Hinted completions held by the `rate` guard.
    held: HeldGroup,
    /// `min(T, delta * thr)`: the longest the `rate` guard holds one.
    held_window: Nanos,
    /// When the last interrupt of any kind fired (the `rate` guard's
    /// pacing reference).
    last_irq: Nanos,
}

impl Cinterrupts {
    /// Builds the policy; rejects invalid adaptive parameters and a
    /// `max_irq_rate` outside 1..=1e9.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::cinterrupts::Cinterrupts;
    /// use cint_policy::config::{BarrierMode, CinterruptsParams};
    /// use cint_policy::{Decision, Hint, Policy, US};
    ///
    /// // A strict Barrier's interrupt waits for every request submitted before it.
    /// let mut params = CinterruptsParams::with_adaptive(6 * US, 32);
    /// params.barrier = BarrierMode::Strict;
    /// let mut queue = Cinterrupts::new(params, 0)?;
    /// let first = queue.on_submit(0, Hint::Unmarked);
    /// let barrier = queue.on_submit(0, Hint::Barrier);
    /// // The Barrier completes first: counted toward thr, no interrupt yet.
    /// assert_eq!(queue.on_complete(5 * US, barrier, Hint::Barrier), Decision::Hold);
    /// // Its predecessor completes: now the full interrupt fires.
    /// assert_eq!(queue.on_complete(7 * US, first, Hint::Unmarked), Decision::FULL);
    /// # Ok::<(), cint_policy::PolicyError>(())
    /// ```
    pub fn new(params: CinterruptsParams, now: Nanos) -> Result<Self, PolicyError> {
        params.validate()?;
        let max_wait = params
            .adaptive
            .delta
            .saturating_mul(u64::from(params.adaptive.thr));
        let guard = params.max_irq_rate.map(|rate| StormAverage::new(rate, now));
        Ok(Cinterrupts {
            params,
            burst: BurstDetector::new(params.adaptive, now)?,
            flight: InFlight::new(),
            oldest_coalesced: now,
            max_wait,
            barriers: StrictBarriers::new(),
            strict_overflows: 0,
            guard,
            held: HeldGroup::new(),
            held_window: guard.map_or(max_wait, |g| g.period().min(max_wait)),
            last_irq: now,
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

    /// True while the storm guard is engaged (hinted completions come
    /// faster than `max_irq_rate` on average).
    pub fn storm_guard_active(&self) -> bool {
        self.guard.is_some_and(|g| g.storming())
    }

    /// Hinted completions the `rate` storm guard holds now.
    pub const fn held_by_guard(&self) -> u32 {
        self.held.len()
    }

    /// The longest the `rate` storm guard holds a hinted completion:
    /// `min(1 / max_irq_rate, delta * thr)` (`delta * thr` without a guard).
    pub const fn guard_window(&self) -> Nanos {
        self.held_window
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

    /// The `rate` guard holds a hinted completion in its group and says
    /// whether the group fires now.
    fn hold_in_group(&mut self, now: Nanos, hint: Hint) -> Decision {
        let full = hint == Hint::Barrier || !self.params.ooo;
        let Some(guard) = self.guard else {
            // Only an engaged guard retunes; without one, fire as the hint
            // asks rather than hold without a deadline.
            return if full {
                Decision::FULL
            } else {
                Decision::URGENT_ONLY
            };
        };
        let thr = self.params.adaptive.thr;
        self.held.join(now, full, || guard.expected_per_period(thr));
        let paced = now >= self.last_irq.saturating_add(guard.period());
        if self.held.len() >= thr || (self.held.reached_target() && paced) {
            self.held.irq()
        } else {
            Decision::Hold
        }
    }

    /// When the `rate` guard's group must fire, if one is open.
    fn held_deadline(&self) -> Option<Nanos> {
        if self.held.len() == 0 {
            return None;
        }
        let period = self.guard.map_or(0, |g| g.period());
        self.held.deadline(self.held_window, self.last_irq, period)
    }

    /// Bookkeeping for an interrupt about to be returned.
    fn fire(&mut self, now: Nanos, decision: Decision) -> Decision {
        if decision == Decision::Hold {
            return decision;
        }
        self.last_irq = now;
        if self.held.len() > 0 {
            self.held.delivered_by(decision);
        }
        if decision == Decision::FULL {
            // A full interrupt reaps everything coalesced so far.
            let _ = self.burst.reset();
        }
        decision
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
        let guarded = match &mut self.guard {
            Some(average) => {
                if hint != Hint::Unmarked {
                    average.sample(now);
                }
                average.storming()
            }
            None => false,
        };
        let retuned = guarded && self.params.guard == StormGuardMode::Rate;
        let effective = if guarded && !retuned {
            Hint::Unmarked
        } else {
            hint
        };
        let strict = self.params.barrier == BarrierMode::Strict;
        let (own_barrier, released) = if strict {
            let settled = self
                .barriers
                .complete(seq, !guarded && effective == Hint::Barrier);
            (settled.own, settled.released && !guarded)
        } else {
            (OwnBarrier::NotTracked, false)
        };
        let own = match effective {
            // Waiting for earlier requests: counted as unmarked so that the
            // Barrier's own entry is reaped within the adaptive bound.
            Hint::Barrier if strict && own_barrier == OwnBarrier::Waiting => self.count(now),
            Hint::Urgent | Hint::Barrier if retuned => self.hold_in_group(now, effective),
            Hint::Urgent if self.params.ooo => Decision::URGENT_ONLY,
            Hint::Urgent => Decision::FULL,
            // Relaxed, ready, or untracked (table overflow): fire now.
            Hint::Barrier => Decision::FULL,
            Hint::Unmarked => self.count(now),
        };
        let mut decision = if released {
            own.merge(Decision::FULL)
        } else {
            own
        };
        if !guarded && self.held.len() > 0 {
            // The guard just let go: what it still holds goes with this
            // completion.
            decision = decision.merge(self.held.irq());
        }
        self.fire(now, decision)
    }

    fn on_timer(&mut self, now: Nanos) -> Decision {
        let mut decision = if self.burst.coalesced() > 0
            && now >= self.oldest_coalesced.saturating_add(self.max_wait)
        {
            self.burst.touch(now);
            self.burst.reset()
        } else {
            self.burst.on_timer(now)
        };
        if self.held_deadline().is_some_and(|d| now >= d) {
            decision = decision.merge(self.held.irq());
        }
        self.fire(now, decision)
    }

    fn next_deadline(&self) -> Option<Nanos> {
        let adaptive = self
            .burst
            .next_deadline()
            .map(|t| t.min(self.oldest_coalesced.saturating_add(self.max_wait)));
        match (adaptive, self.held_deadline()) {
            (a, None) => a,
            (Some(a), Some(h)) => Some(a.min(h)),
            (None, h) => h,
        }
    }

    fn in_flight(&self) -> u32 {
        self.flight.count()
    }
}
