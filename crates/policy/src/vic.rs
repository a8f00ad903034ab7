//! vIC: virtual interrupt coalescing (Ahmad et al., ATC 2011;
//! docs/ALGORITHMS.md section 6).
//!
//! A hypervisor without high-resolution timers decides, on every
//! completion, whether to inject a virtual interrupt now or to let the
//! completion ride along with a later one. The share of completions that
//! are delivered at once, the delivery ratio `count_up / skip_up`, is
//! recomputed at most once per epoch from the commands in flight (CIF) and
//! the IOPS of the last epoch.
//!
//! **Which CIF.** The CIF a completion is judged by is counted *after*
//! removing the completing command: it is the number of other commands
//! still outstanding, i.e. the completions that could later carry a held
//! one. A closed loop at queue depth 1 then always sees CIF 0, which is
//! below every accepted `cif_threshold` (at least 1), so its completions
//! are always delivered: holding one would stall the only requester until
//! the monitor happened to run.
//!
//! **No division per completion.** The IOPS test compares
//! `completions * 1e9 < iops_threshold * elapsed` in 128-bit integers, and
//! the `CIF / (2 * cif_threshold)` of the ratio table, needed once per epoch
//! only, uses [`div_shift_subtract`], the restoring division firmware
//! without a divider would use.

use crate::config::VicParams;
use crate::{Decision, Hint, InFlight, Nanos, Policy, PolicyError, Seq, SEC};

/// Unsigned division by shifting and subtracting (restoring division), for
/// targets without a hardware divider. Returns `u64::MAX` for a zero
/// divisor instead of trapping.
pub const fn div_shift_subtract(dividend: u64, divisor: u64) -> u64 {
    if divisor == 0 {
        return u64::MAX;
    }
    let mut quotient = 0u64;
    let mut remainder = 0u64;
    let mut bit = 64;
    while bit > 0 {
        bit -= 1;
        // The remainder is below the divisor before the shift, so shifting
        // it in 128 bits cannot lose the top bit.
        let shifted = ((remainder as u128) << 1) | ((dividend >> bit) & 1) as u128;
        if shifted >= divisor as u128 {
            remainder = (shifted - divisor as u128) as u64;
            quotient |= 1 << bit;
        } else {
            remainder = shifted as u64;
        }
    }
    quotient
}

/// The delivery ratio `(count_up, skip_up)` of the table in
/// docs/ALGORITHMS.md section 6 for `cif` commands in flight, when the IOPS condition does not force
/// 1/1. A `cif_threshold` of 0 is treated as 1 (the constructor rejects it;
/// this function stays total for tests and tools).
pub const fn ratio_for(cif: u32, cif_threshold: u32) -> (u32, u32) {
    let threshold = if cif_threshold == 0 { 1 } else { cif_threshold } as u64;
    let cif = cif as u64;
    if cif < threshold {
        (1, 1)
    } else if cif < 2 * threshold {
        (4, 5)
    } else if cif < 3 * threshold {
        (3, 4)
    } else if cif < 4 * threshold {
        (2, 3)
    } else {
        // cif >= 4 * threshold, so the quotient is at least 2 and at most
        // u32::MAX / 2: it fits.
        (1, div_shift_subtract(cif, 2 * threshold) as u32)
    }
}

/// The IOPS measured over one finished epoch, kept as the raw pair so that
/// nobody has to divide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochRate {
    /// Completions counted in the epoch.
    pub completions: u64,
    /// How long the epoch lasted (at least the configured epoch).
    pub elapsed: Nanos,
}

impl EpochRate {
    /// `completions / elapsed < iops / 1 s`, cross-multiplied.
    pub const fn below(&self, iops: u64) -> bool {
        (self.completions as u128) * (SEC as u128) < (iops as u128) * (self.elapsed as u128)
    }
}

/// vIC for one virtual completion queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vic {
    params: VicParams,
    flight: InFlight,
    count_up: u32,
    skip_up: u32,
    counter: u32,
    /// Completions held since the last delivery (all are covered by it).
    held: u32,
    epoch_start: Nanos,
    epoch_completions: u64,
    last_rate: Option<EpochRate>,
    last_delivery: Option<Nanos>,
}

impl Vic {
    /// Builds the policy; its first epoch starts at `now` with ratio 1/1
    /// (no IOPS measured yet, so nothing is held). Rejects a zero
    /// `cif_threshold` or `epoch` and out-of-range values.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::config::VicParams;
    /// use cint_policy::vic::Vic;
    /// use cint_policy::{Decision, Hint, Policy, MS};
    ///
    /// let params = VicParams { epoch: MS, iops_threshold: 0, ..VicParams::default() };
    /// let mut queue = Vic::new(params, 0)?;
    /// let seqs = [(); 10].map(|()| queue.on_submit(0, Hint::Unmarked));
    /// // After the first epoch, 9 other commands in flight give the ratio 3/4:
    /// // deliver, deliver, hold, deliver.
    /// let decisions = [0, 1, 2, 3].map(|i| queue.on_complete(MS, seqs[i], Hint::Unmarked));
    /// assert_eq!(queue.ratio(), (3, 4));
    /// assert_eq!(decisions, [Decision::FULL, Decision::FULL, Decision::Hold, Decision::FULL]);
    /// # Ok::<(), cint_policy::PolicyError>(())
    /// ```
    pub fn new(params: VicParams, now: Nanos) -> Result<Self, PolicyError> {
        params.validate()?;
        Ok(Vic {
            params,
            flight: InFlight::new(),
            count_up: 1,
            skip_up: 1,
            counter: 1,
            held: 0,
            epoch_start: now,
            epoch_completions: 0,
            last_rate: None,
            last_delivery: None,
        })
    }

    /// The parameters.
    pub const fn params(&self) -> VicParams {
        self.params
    }

    /// The current delivery ratio `(count_up, skip_up)`.
    pub const fn ratio(&self) -> (u32, u32) {
        (self.count_up, self.skip_up)
    }

    /// The counter of the per-completion rule (1 after a delivery).
    pub const fn counter(&self) -> u32 {
        self.counter
    }

    /// Completions held now, waiting for a later delivery.
    pub const fn held(&self) -> u32 {
        self.held
    }

    /// When a virtual interrupt was last delivered, if ever.
    pub const fn last_delivery(&self) -> Option<Nanos> {
        self.last_delivery
    }

    /// The rate of the last finished epoch, if one has finished.
    pub const fn last_rate(&self) -> Option<EpochRate> {
        self.last_rate
    }

    /// IPI reduction: should the host core that received a physical
    /// completion at `now` interrupt the guest's core? Only if the last
    /// delivery is older than `ipi_threshold` (or there was none);
    /// otherwise the monitor will find the completion on its own.
    pub fn ipi_needed(&self, now: Nanos) -> bool {
        match self.last_delivery {
            None => true,
            Some(at) => now.saturating_sub(at) > self.params.ipi_threshold,
        }
    }

    /// Recomputes the ratio if an epoch has elapsed since the last
    /// recompute; called before judging a completion.
    fn maybe_recompute(&mut self, now: Nanos) {
        let elapsed = now.saturating_sub(self.epoch_start);
        if elapsed < self.params.epoch {
            return;
        }
        let rate = EpochRate {
            completions: self.epoch_completions,
            elapsed,
        };
        let cif = self.flight.count();
        (self.count_up, self.skip_up) = if rate.below(self.params.iops_threshold) {
            (1, 1)
        } else {
            ratio_for(cif, self.params.cif_threshold)
        };
        self.last_rate = Some(rate);
        self.epoch_start = now;
        self.epoch_completions = 0;
    }

    /// Books a completion: in-flight count, epoch recompute, IOPS count.
    /// Split from the decision so that scheduler-aware vIC can look at the
    /// fresh ratio before deciding.
    pub(crate) fn account_completion(&mut self, now: Nanos) {
        self.flight.complete();
        self.maybe_recompute(now);
        self.epoch_completions = self.epoch_completions.saturating_add(1);
    }

    /// The per-completion counter rule; the completion was booked already.
    pub(crate) fn decide(&mut self, now: Nanos) -> Decision {
        let deliver = if self.flight.count() < self.params.cif_threshold {
            self.counter = 1;
            true
        } else if self.counter < self.count_up {
            self.counter += 1;
            true
        } else if self.counter >= self.skip_up {
            self.counter = 1;
            true
        } else if self
            .params
            .quirk_failsafe
            .is_some_and(|limit| self.held >= limit)
        {
            // Reference back end: after `limit` suppressed notifications in
            // a row, the next one goes out whatever the ratio says.
            self.counter = 1;
            true
        } else {
            self.counter = if self.params.quirk_reset_on_skip {
                1
            } else {
                self.counter + 1
            };
            false
        };
        if deliver {
            self.deliver(now)
        } else {
            self.held = self.held.saturating_add(1);
            Decision::Hold
        }
    }

    /// The reference back end's failsafe, decided outside the policy
    /// (Xen's back end counts the suppressed responses of all guests
    /// together): delivers everything held and restarts the counter, as
    /// the policy's own `quirk_failsafe` branch does.
    pub fn failsafe_deliver(&mut self, now: Nanos) -> Decision {
        self.counter = 1;
        self.deliver(now)
    }

    /// Delivers everything held (and the completion being judged, if any).
    pub(crate) fn deliver(&mut self, now: Nanos) -> Decision {
        self.held = 0;
        self.last_delivery = Some(now);
        Decision::FULL
    }
}

impl Policy for Vic {
    fn on_submit(&mut self, _now: Nanos, _hint: Hint) -> Seq {
        self.flight.submit()
    }

    fn on_complete(&mut self, now: Nanos, _seq: Seq, _hint: Hint) -> Decision {
        self.account_completion(now);
        self.decide(now)
    }

    /// vIC has no timer of its own.
    fn on_timer(&mut self, _now: Nanos) -> Decision {
        Decision::Hold
    }

    fn next_deadline(&self) -> Option<Nanos> {
        None
    }

    /// The monitor runs for another reason: deliver whatever is held.
    fn on_opportunity(&mut self, now: Nanos) -> Decision {
        if self.held > 0 {
            self.deliver(now)
        } else {
            Decision::Hold
        }
    }

    fn in_flight(&self) -> u32 {
        self.flight.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_subtract_matches_hardware_division() {
        let samples = [
            0u64,
            1,
            2,
            3,
            7,
            8,
            9,
            63,
            64,
            1000,
            u32::MAX as u64,
            u64::MAX,
        ];
        for &n in &samples {
            for &d in &samples[1..] {
                assert_eq!(div_shift_subtract(n, d), n / d, "{n} / {d}");
            }
        }
        assert_eq!(div_shift_subtract(5, 0), u64::MAX);
    }
}
