//! Scheduler-aware vIC (the Xen dom0 variant, docs/ALGORITHMS.md section 7).
//!
//! The back end that forwards completions to a guest sharing a CPU with
//! other guests knows when the guest's time slice ends. Once less time is
//! left than vIC's expected gap between two deliveries, holding a
//! completion would push it past the slice into the guest's next turn, so
//! it is delivered at once ("bypass"). Otherwise plain vIC decides.
//!
//! The expected gap is `ns_per_event = (1e9 / iops) * io_per_event` with
//! `io_per_event = 2` if `skip_up < 2 * count_up`, else `skip_up`. The IOPS
//! is the one vIC measured over its last finished epoch (`completions` in
//! `elapsed` ns), so `remaining < ns_per_event` is evaluated as
//! `remaining * completions < elapsed * io_per_event` in 128 bits: no
//! division. Before the first epoch has finished no rate is known and plain
//! vIC decides; a measured rate of zero means an unbounded gap (bypass).

use crate::config::VicSchedParams;
use crate::vic::Vic;
use crate::{Decision, GuestSchedule, Hint, Nanos, Policy, PolicyError, Seq};

/// Scheduler-aware vIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VicSched {
    vic: Vic,
    clock_margin: Nanos,
    schedule: GuestSchedule,
    bypasses: u64,
}

impl VicSched {
    /// Builds the policy; the guest's schedule is unknown until the first
    /// [`Policy::on_schedule`].
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::config::{VicParams, VicSchedParams};
    /// use cint_policy::vic_sched::VicSched;
    /// use cint_policy::{Decision, GuestSchedule, Hint, Policy, MS, US};
    ///
    /// let vic = VicParams { epoch: MS, iops_threshold: 0, ..VicParams::default() };
    /// let mut queue = VicSched::new(VicSchedParams { vic, clock_margin: 200 * US }, 0)?;
    /// let seqs = [(); 10].map(|()| queue.on_submit(0, Hint::Unmarked));
    /// // One completion in the first epoch: vIC measures 1 000 IO/s.
    /// assert_eq!(queue.on_complete(MS / 2, seqs[0], Hint::Unmarked), Decision::FULL);
    /// // The guest runs and its slice ends in 500 us, sooner than vIC's next
    /// // delivery is due at that rate (2 ms): nothing is held.
    /// let schedule = GuestSchedule { running: true, slice_end: Some(MS + 500 * US) };
    /// queue.on_schedule(MS, schedule);
    /// for seq in &seqs[1..4] {
    ///     assert_eq!(queue.on_complete(MS, *seq, Hint::Unmarked), Decision::FULL);
    /// }
    /// assert_eq!(queue.bypasses(), 3);
    /// # Ok::<(), cint_policy::PolicyError>(())
    /// ```
    pub fn new(params: VicSchedParams, now: Nanos) -> Result<Self, PolicyError> {
        params.validate()?;
        Ok(VicSched {
            vic: Vic::new(params.vic, now)?,
            clock_margin: params.clock_margin,
            schedule: GuestSchedule::default(),
            bypasses: 0,
        })
    }

    /// The underlying vIC.
    pub fn vic(&self) -> &Vic {
        &self.vic
    }

    /// The underlying vIC, to drive from outside (the back end's shared
    /// failsafe).
    pub fn vic_mut(&mut self) -> &mut Vic {
        &mut self.vic
    }

    /// The guest schedule last reported.
    pub const fn schedule(&self) -> GuestSchedule {
        self.schedule
    }

    /// Completions delivered by the slice-end bypass instead of by vIC.
    pub const fn bypasses(&self) -> u64 {
        self.bypasses
    }

    /// `io_per_event` of docs/ALGORITHMS.md section 7 for the ratio `count_up/skip_up`:
    /// vIC's expected completions per delivery, taken as 2 whenever the
    /// ratio is above one half.
    pub const fn io_per_event(count_up: u32, skip_up: u32) -> u64 {
        if (skip_up as u64) < 2 * count_up as u64 {
            2
        } else {
            skip_up as u64
        }
    }

    /// Should the completion arriving at `now` bypass coalescing? The vIC
    /// ratio and rate must be up to date (the completion booked).
    fn should_bypass(&self, now: Nanos) -> bool {
        if !self.schedule.running {
            return false;
        }
        let Some(slice_end) = self.schedule.slice_end else {
            return false;
        };
        // Past the slice end the guest runs on because nobody else is
        // runnable: no deadline to beat, plain vIC.
        let Some(remaining) = slice_end.checked_sub(now).filter(|&r| r > 0) else {
            return false;
        };
        // The back end's and the scheduler's clocks may disagree by this
        // much: too close to call, do not interfere.
        if remaining < self.clock_margin {
            return false;
        }
        let Some(rate) = self.vic.last_rate() else {
            return false;
        };
        let (count_up, skip_up) = self.vic.ratio();
        let per_event = Self::io_per_event(count_up, skip_up);
        (remaining as u128) * (rate.completions as u128)
            < (rate.elapsed as u128) * (per_event as u128)
    }
}

impl Policy for VicSched {
    fn on_submit(&mut self, now: Nanos, hint: Hint) -> Seq {
        self.vic.on_submit(now, hint)
    }

    fn on_complete(&mut self, now: Nanos, _seq: Seq, _hint: Hint) -> Decision {
        self.vic.account_completion(now);
        if self.should_bypass(now) {
            self.bypasses = self.bypasses.saturating_add(1);
            self.vic.deliver(now)
        } else {
            self.vic.decide(now)
        }
    }

    fn on_timer(&mut self, now: Nanos) -> Decision {
        self.vic.on_timer(now)
    }

    fn next_deadline(&self) -> Option<Nanos> {
        self.vic.next_deadline()
    }

    fn on_opportunity(&mut self, now: Nanos) -> Decision {
        self.vic.on_opportunity(now)
    }

    fn on_schedule(&mut self, _now: Nanos, schedule: GuestSchedule) {
        self.schedule = schedule;
    }

    fn in_flight(&self) -> u32 {
        self.vic.in_flight()
    }
}
