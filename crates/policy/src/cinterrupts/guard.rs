//! The storm guard's state: the moving average that says whether hinted
//! completions are storming, and the group of hinted completions the
//! `rate` mode holds while they are.
//!
//! Both are integer-only and inline: shifts for the average, one division
//! per held group for its target size.

use crate::{Decision, Nanos, SEC};

/// Fractional bits of the fixed-point average.
const EWMA_FRAC_BITS: u32 = 8;
/// The EWMA weight is `1 / 2^EWMA_WEIGHT_SHIFT` = 1/128.
const EWMA_WEIGHT_SHIFT: u32 = 7;

/// The moving average of the interval between hinted completions.
///
/// Each hinted completion is an interrupt the hints would raise without
/// the guard, so the average interval is the inverse of the rate of
/// hint-triggered interrupts the guard must hold down. It measures the
/// completions, not the interrupts actually fired: those are what the
/// guard itself shapes, and an average of its own output would switch it
/// off as soon as it worked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StormAverage {
    /// `T = 1e9 / max_irq_rate` in ns.
    period: Nanos,
    /// `T`, fixed point.
    threshold: u64,
    /// Average interval, fixed point, at most `2 * threshold`.
    average: u64,
    last_hinted: Nanos,
}

impl StormAverage {
    /// Starts at `2 T`, so that the guard starts off and engages only
    /// after a sustained storm.
    pub(super) fn new(max_irq_rate: u64, now: Nanos) -> Self {
        let period = SEC / max_irq_rate.max(1);
        let threshold = period << EWMA_FRAC_BITS;
        StormAverage {
            period,
            threshold,
            average: 2 * threshold,
            last_hinted: now,
        }
    }

    /// `T = 1 / max_irq_rate`, in ns.
    pub(super) const fn period(&self) -> Nanos {
        self.period
    }

    /// Feeds the interval since the previous hinted completion.
    pub(super) fn sample(&mut self, now: Nanos) {
        let interval = now.saturating_sub(self.last_hinted);
        self.last_hinted = now;
        // Clamped at 256 T before the shift, so it cannot overflow and one
        // long gap lifts the average to at least 2 T.
        let ceiling = self.period << (EWMA_WEIGHT_SHIFT + 1);
        let sample = interval.min(ceiling) << EWMA_FRAC_BITS;
        let decayed = self.average - (self.average >> EWMA_WEIGHT_SHIFT);
        self.average = (decayed + (sample >> EWMA_WEIGHT_SHIFT)).min(2 * self.threshold);
    }

    /// Hinted completions come faster than `max_irq_rate` on average.
    pub(super) const fn storming(&self) -> bool {
        self.average < self.threshold
    }

    /// Hinted completions expected per `T` at the average interval,
    /// rounded up (a group smaller than that would fire more often than
    /// once per `T`), at most `cap`.
    pub(super) fn expected_per_period(&self, cap: u32) -> u32 {
        if self.average == 0 {
            return cap;
        }
        let expected = self.threshold.div_ceil(self.average);
        u32::try_from(expected).unwrap_or(u32::MAX).clamp(1, cap)
    }
}

/// The hinted completions the `rate` mode holds during a storm: one group,
/// opened by the first hinted completion after the last interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HeldGroup {
    /// Held hinted completions; 0 when no group is open.
    count: u32,
    /// When the first of them arrived.
    first: Nanos,
    /// The retuned threshold: the group may fire once it holds this many.
    target: u32,
    /// A member needs a full interrupt (a Barrier, or Urgent with OOO off);
    /// otherwise an urgent-only one reaps them all.
    full: bool,
}

impl HeldGroup {
    pub(super) const fn new() -> Self {
        HeldGroup {
            count: 0,
            first: 0,
            target: 1,
            full: false,
        }
    }

    /// Held hinted completions.
    pub(super) const fn len(&self) -> u32 {
        self.count
    }

    /// Adds a hinted completion; `target` is only asked for when it opens
    /// a group, so the division behind it is paid once per group.
    pub(super) fn join(&mut self, now: Nanos, full: bool, target: impl FnOnce() -> u32) {
        if self.count == 0 {
            self.first = now;
            self.target = target();
            self.full = false;
        }
        self.count += 1;
        self.full |= full;
    }

    /// The group holds as many completions as the retuned threshold asks.
    pub(super) const fn reached_target(&self) -> bool {
        self.count >= self.target
    }

    /// When the group must fire: `window` after its first member, or, once
    /// it reached its target, as soon as `period` has passed since the last
    /// interrupt (`paced_from`), whichever is first.
    pub(super) fn deadline(
        &self,
        window: Nanos,
        paced_from: Nanos,
        period: Nanos,
    ) -> Option<Nanos> {
        if self.count == 0 {
            return None;
        }
        let latest = self.first.saturating_add(window);
        Some(if self.reached_target() {
            latest.min(paced_from.saturating_add(period))
        } else {
            latest
        })
    }

    /// The interrupt that delivers the whole group, if one is open.
    pub(super) const fn irq(&self) -> Decision {
        match (self.count, self.full) {
            (0, _) => Decision::Hold,
            (_, true) => Decision::FULL,
            (_, false) => Decision::URGENT_ONLY,
        }
    }

    /// An interrupt fired: the group is delivered if that interrupt reaps
    /// every member.
    pub(super) fn delivered_by(&mut self, irq: Decision) {
        if irq == Decision::FULL || (irq == Decision::URGENT_ONLY && !self.full) {
            self.count = 0;
            self.full = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::US;

    #[test]
    fn expected_per_period_rounds_up_and_is_capped() {
        let mut avg = StormAverage::new(100_000, 0);
        // Drive the average to 6.7 us (T = 10 us): 1.49 per T, rounded up.
        let mut now = 0;
        for _ in 0..4_000 {
            now += 6_700;
            avg.sample(now);
        }
        assert!(avg.storming());
        assert_eq!(avg.expected_per_period(32), 2);
        assert_eq!(avg.expected_per_period(1), 1);
        // Back to back: the average reaches 0 and the cap applies.
        for _ in 0..4_000 {
            avg.sample(now);
        }
        assert_eq!(avg.expected_per_period(32), 32);
        assert_eq!(avg.period(), 10 * US);
    }

    #[test]
    fn a_group_paces_once_it_reaches_its_target() {
        let mut g = HeldGroup::new();
        assert_eq!(g.deadline(10, 0, 10), None);
        g.join(100, false, || 2);
        assert_eq!(g.deadline(10, 95, 10), Some(110));
        g.join(103, false, || {
            unreachable!("asked only when the group opens")
        });
        assert!(g.reached_target());
        assert_eq!(g.deadline(10, 95, 10), Some(105));
        assert_eq!(g.irq(), Decision::URGENT_ONLY);
        g.join(104, true, || 9);
        assert_eq!(g.irq(), Decision::FULL);
        g.delivered_by(Decision::URGENT_ONLY);
        assert_eq!(
            g.len(),
            3,
            "an urgent-only interrupt leaves a Barrier member"
        );
        g.delivered_by(Decision::FULL);
        assert_eq!(g.len(), 0);
    }
}
