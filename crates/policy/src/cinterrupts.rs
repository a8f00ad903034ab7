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
//!   records `(seq, commands in flight before it)` in a fixed inline table
//!   of [`STRICT_BARRIER_CAPACITY`] entries. Every completion with a smaller
//!   sequence number decrements the count. When the Barrier completes with
//!   the count at zero, a full interrupt fires at once; otherwise the
//!   Barrier is "completed, waiting" and the full interrupt fires with the
//!   completion that brings its count to zero (merged with whatever that
//!   completion decides on its own). While it waits, the Barrier completion
//!   is counted as unmarked toward `thr`: its own entry sits in the
//!   completion queue, and without being counted nothing would bound how
//!   long it stays there (the earlier requests may take arbitrarily long),
//!   whereas counted it is reaped within the adaptive bound like any other.
//!   A Barrier submitted while the table is full degrades to relaxed (an
//!   earlier interrupt, never a lost completion) and is counted by
//!   [`Cinterrupts::strict_overflows`].
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
//!   path.

use crate::adaptive::BurstDetector;
use crate::config::{BarrierMode, CinterruptsParams};
use crate::{Decision, Hint, InFlight, Nanos, Policy, PolicyError, Seq, SEC};

/// How many strict Barriers can wait at once per queue; further ones are
/// handled as relaxed (see [`Cinterrupts::strict_overflows`]).
pub const STRICT_BARRIER_CAPACITY: usize = 32;

/// Fractional bits of the storm guard's fixed-point average.
const EWMA_FRAC_BITS: u32 = 8;
/// The EWMA weight is `1 / 2^EWMA_WEIGHT_SHIFT` = 1/128.
const EWMA_WEIGHT_SHIFT: u32 = 7;

/// A strict Barrier that was submitted and whose interrupt has not fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TrackedBarrier {
    seq: Seq,
    /// Requests submitted before the Barrier and not yet completed.
    earlier_in_flight: u32,
    /// The Barrier itself has completed and waits for the earlier ones.
    completed: bool,
}

/// Fixed-capacity table of strict Barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BarrierTable {
    slots: [TrackedBarrier; STRICT_BARRIER_CAPACITY],
    len: usize,
}

impl BarrierTable {
    const fn new() -> Self {
        BarrierTable {
            slots: [TrackedBarrier {
                seq: 0,
                earlier_in_flight: 0,
                completed: false,
            }; STRICT_BARRIER_CAPACITY],
            len: 0,
        }
    }

    /// Tracks a Barrier; false when the table is full.
    fn track(&mut self, seq: Seq, earlier_in_flight: u32) -> bool {
        let Some(slot) = self.slots.get_mut(self.len) else {
            return false;
        };
        *slot = TrackedBarrier {
            seq,
            earlier_in_flight,
            completed: false,
        };
        self.len += 1;
        true
    }

    fn remove(&mut self, index: usize) {
        self.len -= 1;
        self.slots.swap(index, self.len);
    }
}

/// What a completion did to the strict Barrier table.
#[derive(Clone, Copy, Debug, Default)]
struct BarrierEffect {
    /// The completing request is a tracked Barrier, with this many earlier
    /// requests still in flight.
    own: Option<u32>,
    /// A completed, waiting Barrier just saw its last predecessor finish.
    released: bool,
}

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
    barriers: BarrierTable,
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
            barriers: BarrierTable::new(),
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
        self.barriers.len
    }

    /// Counts a completion toward `thr` as Algorithm 1 does.
    fn count(&mut self, now: Nanos) -> Decision {
        if self.burst.coalesced() == 0 {
            self.oldest_coalesced = now;
        }
        self.burst.count()
    }

    /// Updates the strict Barrier table for the completion of `seq`.
    fn settle_barriers(&mut self, seq: Seq) -> BarrierEffect {
        let mut effect = BarrierEffect::default();
        let mut i = 0;
        while i < self.barriers.len {
            let slot = &mut self.barriers.slots[i];
            if slot.seq == seq {
                effect.own = Some(slot.earlier_in_flight);
                // The Barrier leaves the table now unless it has to wait;
                // `complete_barrier` puts it back as waiting if so.
                self.barriers.remove(i);
                continue;
            }
            if slot.seq > seq {
                slot.earlier_in_flight = slot.earlier_in_flight.saturating_sub(1);
                if slot.earlier_in_flight == 0 && slot.completed {
                    effect.released = true;
                    self.barriers.remove(i);
                    continue;
                }
            }
            i += 1;
        }
        effect
    }

    /// A Barrier completion under strict semantics.
    fn complete_barrier(&mut self, now: Nanos, seq: Seq, own: Option<u32>) -> Decision {
        match own {
            // Tracked, and some earlier request is still in flight: wait,
            // counted as unmarked so the entry itself is bounded.
            Some(earlier) if earlier > 0 => {
                // The slot was freed in `settle_barriers`, so this fits.
                let tracked = self.barriers.track(seq, earlier);
                debug_assert!(tracked);
                let last = self.barriers.len - 1;
                self.barriers.slots[last].completed = true;
                self.count(now)
            }
            // Nothing earlier in flight, or untracked (overflow): fire now.
            _ => Decision::FULL,
        }
    }
}

impl Policy for Cinterrupts {
    fn on_submit(&mut self, _now: Nanos, hint: Hint) -> Seq {
        let earlier_in_flight = self.flight.count();
        let seq = self.flight.submit();
        if hint == Hint::Barrier
            && self.params.barrier == BarrierMode::Strict
            && !self.barriers.track(seq, earlier_in_flight)
        {
            self.strict_overflows += 1;
        }
        seq
    }

    fn on_complete(&mut self, now: Nanos, seq: Seq, hint: Hint) -> Decision {
        self.flight.complete();
        self.burst.touch(now);
        let barrier = if self.barriers.len > 0 {
            self.settle_barriers(seq)
        } else {
            BarrierEffect::default()
        };
        if hint != Hint::Unmarked {
            if let Some(guard) = &mut self.guard {
                guard.sample(now);
            }
        }
        let guarded = self.storm_guard_active();
        let effective = if guarded { Hint::Unmarked } else { hint };
        let own = match effective {
            Hint::Urgent if self.params.ooo => Decision::URGENT_ONLY,
            Hint::Urgent => Decision::FULL,
            Hint::Barrier => match self.params.barrier {
                BarrierMode::Relaxed => Decision::FULL,
                BarrierMode::Strict => self.complete_barrier(now, seq, barrier.own),
            },
            Hint::Unmarked => self.count(now),
        };
        let released = if barrier.released && !guarded {
            Decision::FULL
        } else {
            Decision::Hold
        };
        let decision = own.merge(released);
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
