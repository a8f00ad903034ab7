//! Which completion mode to use for one request: spin (classic polling),
//! sleep then spin (hybrid polling), or sleep until the interrupt
//! (docs/ALGORITHMS.md section 10).
//!
//! The energy study (Harris and Altiparmak, HotStorage'22) found no fixed
//! mode best for bytes per joule: classic polling wins small, fast
//! requests, interrupts large ones, and it closes by asking for a
//! completion path that switches between them. DPAS (FAST'26) switches
//! between classic polling, an adaptive sleep and interrupts as it runs.
//! [`ModeSelect`] makes that choice per request from an energy estimate:
//!
//! * what it measures at run time: each class's (direction x size bucket,
//!   the classes of [`crate::hybrid_poll`]) completion time, as a moving
//!   mean and a minimum; how many requests are in flight host-wide (they
//!   share the platform's power); whether another thread is runnable on
//!   the core (a spin would take the core from it);
//! * what the kernel knows of its machine: the cpuidle table (exit
//!   latency, target residency and power of each state), the governor's
//!   exit-latency rule for a task waiting on I/O, the CPU time of one
//!   sleep and wake-up, and the core's and the platform's powers
//!   ([`ModeSelectParams`]).
//!
//! It never sees the workload, the other strategies or any result. The
//! estimate of each mode is the energy the host spends on the request's
//! behalf: the core's (spinning, sleeping in the idle state the governor
//! would pick, running the switch and wake-up paths, leaving the idle
//! state) plus the platform's power over the request's latency shared by
//! the requests in flight. The cheapest wins; ties go to the faster mode.
//! Integer-only (milliwatts times nanoseconds: picojoules), no allocation.

use crate::config::{check_range, PolicyError, MAX_DURATION};
use crate::hybrid_poll::{class_of, Direction, CLASSES};
use crate::Nanos;

/// Most idle states a [`ModeSelectParams`] lists: Linux's
/// `CPUIDLE_STATE_MAX` (include/linux/cpuidle.h), so that any cpuidle
/// table fits whole (Skylake's has 7).
pub const MAX_IDLE_STATES: usize = 10;

/// Largest power accepted for any term, milliwatts (10 kW).
pub const MAX_POWER_MW: u32 = 10_000_000;

/// Largest `iowait_factor` accepted.
pub const MAX_IOWAIT_FACTOR: u32 = 1_000;

/// One cpuidle state, as the driver lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IdleStateCost {
    /// Time from the wake-up event to the core running again.
    pub exit_latency: Nanos,
    /// Shortest stay for which the governor enters the state.
    pub target_residency: Nanos,
    /// The core's power in the state, milliwatts.
    pub power_mw: u32,
}

/// The machine the selector runs on: powers, the cpuidle table and the
/// CPU cost of a sleep. Everything here is a property of the host and its
/// kernel, none of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeSelectParams {
    /// Power drawn while requests wait that no single core's state
    /// decides (platform base, uncore, the device at rest), milliwatts.
    pub static_mw: u32,
    /// A core spinning in a completion poll loop, milliwatts.
    pub spin_mw: u32,
    /// A core running kernel code (switches, handlers), milliwatts.
    pub busy_mw: u32,
    /// The idle states, shallowest first; the first `idle_count` count.
    pub idle_states: [IdleStateCost; MAX_IDLE_STATES],
    /// How many of `idle_states` the core has (1 ..= [`MAX_IDLE_STATES`]).
    pub idle_count: usize,
    /// The governor's exit-latency limit for a core whose task waits for
    /// I/O is `predicted / (1 + iowait_factor)`: 10 under Linux 5.15's
    /// `menu`, 0 for a governor without the iowait rule.
    pub iowait_factor: u32,
    /// CPU time of one sleep and wake-up on the core: the switch to idle,
    /// the interrupt's entry and handler, the wake-up, the switch back and
    /// the return to user space.
    pub sleep_path: Nanos,
    /// CPU time of arming the high-resolution timer of a hybrid sleep.
    pub timer_arm: Nanos,
    /// How late such a timer fires (the task's timer slack).
    pub timer_slack: Nanos,
}

impl ModeSelectParams {
    /// Validates the parameters: at least one idle state, each with its
    /// residency at or above its exit latency; powers and times in range.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let mw = |name, v: u32| check_range(name, u64::from(v), 0, u64::from(MAX_POWER_MW));
        mw("static_mw", self.static_mw)?;
        mw("spin_mw", self.spin_mw)?;
        mw("busy_mw", self.busy_mw)?;
        check_range(
            "idle_count",
            self.idle_count as u64,
            1,
            MAX_IDLE_STATES as u64,
        )?;
        check_range(
            "iowait_factor",
            u64::from(self.iowait_factor),
            0,
            u64::from(MAX_IOWAIT_FACTOR),
        )?;
        check_range("sleep_path", self.sleep_path, 0, MAX_DURATION)?;
        check_range("timer_arm", self.timer_arm, 0, MAX_DURATION)?;
        check_range("timer_slack", self.timer_slack, 0, MAX_DURATION)?;
        for s in &self.idle_states[..self.idle_count] {
            check_range("exit_latency", s.exit_latency, 0, MAX_DURATION)?;
            check_range(
                "target_residency",
                s.target_residency,
                s.exit_latency,
                MAX_DURATION,
            )?;
            mw("power_mw", s.power_mw)?;
        }
        Ok(())
    }
}

/// How one request completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompletionChoice {
    /// Spin in the poll loop from submission on (classic polling).
    Poll,
    /// Sleep this long on a high-resolution timer, then spin (hybrid
    /// polling).
    Sleep(Nanos),
    /// Sleep until the device's interrupt wakes the thread.
    Interrupt,
}

/// What the substrate sees when the request is issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Situation {
    /// Requests in flight on the host, this one included.
    pub in_flight: u32,
    /// Another thread wants the submitting core: it is runnable, or it
    /// sleeps waiting for its own I/O (its completion will make it
    /// runnable while a spin goes on).
    pub core_contended: bool,
    /// The request can complete by interrupt (false on a queue that only
    /// polls, such as io_uring's `IORING_SETUP_IOPOLL` ring).
    pub can_interrupt: bool,
}

/// The estimate of one mode for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// The mode.
    pub choice: CompletionChoice,
    /// Issue to the thread running with its completion, as the host adds
    /// it to the device's time.
    pub latency: Nanos,
    /// Energy spent on the request's behalf, picojoules.
    pub energy_pj: u64,
}

/// How a wait ends: by a timer the governor saw armed (a hybrid sleep),
/// or by an interrupt it could only guess the time of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitKind {
    Timer = 0,
    Interrupt = 1,
}

/// One observation's vote in [`Reached`] (fixed point).
const VOTE: u16 = 1 << 12;

/// The votes the governor's rule's own prediction starts with: as many as
/// eight agreeing observations, so that no fewer than six contrary ones
/// (the votes decay by an eighth each) outvote it.
const PRIOR_VOTES: u16 = 8 * VOTE;

/// Completions (of any class) after which the governor's rule's
/// prediction votes once again in every [`Reached`] that has votes. A
/// mode the observations turned the selector away from is seen no more,
/// so what they said would stand forever; the governor that made them
/// forgets its own history within eight idle periods (`menu`'s intervals
/// and its correction factors' decay, ENERGY.md), so the prediction wins
/// back after six such votes (a few hundred completions) and the mode is
/// tried, and observed, again.
const PRIOR_VOTE_EVERY: u32 = 64;

/// Most waits one observation may stand for
/// ([`ModeSelect::observe_idle_one_in`]): the prior then votes once in
/// 65 536 completions.
pub const MAX_OBSERVE_ONE_IN: u32 = 1024;

/// The idle states that waits of one kind, for which the governor's rule
/// predicts one state, were seen to reach: per state its votes, each
/// observation decaying the others by an eighth (fixed point, [`VOTE`]
/// per observation). All zero before the first observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Reached {
    votes: [u16; MAX_IDLE_STATES],
}

impl Reached {
    /// Adds an observation of state `reached` where the rule predicts
    /// `predicted`.
    fn observe(&mut self, predicted: usize, reached: usize) {
        if self.votes == [0; MAX_IDLE_STATES] {
            self.votes[predicted] = PRIOR_VOTES;
        }
        for v in &mut self.votes {
            *v -= *v / 8;
        }
        // The sum settles near PRIOR_VOTES (each decay keeps at most
        // seven eighths plus one per state): far below u16's limit.
        self.votes[reached] += VOTE;
    }

    /// The state with the most votes (the prediction while none is seen;
    /// a tie goes to the prediction, then to the shallower state).
    fn most_voted(&self, predicted: usize) -> usize {
        let mut best = predicted;
        for (i, &v) in self.votes.iter().enumerate() {
            if v > self.votes[best] {
                best = i;
            }
        }
        best
    }
}

/// Completion times of one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct ClassTimes {
    /// Moving mean (weight 1/8 per sample); 0 before the first sample.
    mean: Nanos,
    /// Smallest seen; 0 before the first sample.
    min: Nanos,
}

/// The per-request completion-mode selector.
///
/// # Example
///
/// ```
/// use cint_policy::hybrid_poll::Direction;
/// use cint_policy::mode_select::{
///     CompletionChoice, IdleStateCost, ModeSelect, ModeSelectParams, Situation, MAX_IDLE_STATES,
/// };
/// use cint_policy::US;
///
/// let mut idle = [IdleStateCost::default(); MAX_IDLE_STATES];
/// idle[0] = IdleStateCost { exit_latency: 0, target_residency: 0, power_mw: 6_000 };
/// idle[1] = IdleStateCost { exit_latency: 2 * US, target_residency: 2 * US, power_mw: 2_000 };
/// idle[2] = IdleStateCost { exit_latency: 85 * US, target_residency: 200 * US, power_mw: 100 };
/// let params = ModeSelectParams {
///     static_mw: 40_000, spin_mw: 6_500, busy_mw: 8_500,
///     idle_states: idle, idle_count: 3, iowait_factor: 0,
///     sleep_path: 3 * US, timer_arm: 300, timer_slack: 2 * US,
/// };
/// let mut select = ModeSelect::new(params)?;
/// let alone = Situation { in_flight: 1, core_contended: false, can_interrupt: true };
/// // Nothing measured: spin, and learn the class's completion time.
/// assert_eq!(select.choose(4096, Direction::Read, alone), CompletionChoice::Poll);
/// select.record(4096, Direction::Read, 7 * US);
/// // A 7 us read: a sleep cannot pay for its wake-up.
/// assert_eq!(select.choose(4096, Direction::Read, alone), CompletionChoice::Poll);
/// // A 2 ms read: sleep deeply until the interrupt.
/// select.record(1 << 20, Direction::Read, 2_000 * US);
/// assert_eq!(select.choose(1 << 20, Direction::Read, alone), CompletionChoice::Interrupt);
/// # Ok::<(), cint_policy::PolicyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeSelect {
    params: ModeSelectParams,
    classes: [ClassTimes; CLASSES],
    /// Per wait kind and predicted state, what such waits reached
    /// ([`ModeSelect::record_idle`]).
    reached: [[Reached; MAX_IDLE_STATES]; 2],
    /// Completions recorded since the prior last voted.
    since_prior_vote: u32,
    /// Completions between the prior's votes: [`PRIOR_VOTE_EVERY`] times
    /// the waits each observation stands for.
    prior_vote_every: u32,
}

/// The class of a request; requests under one sector share the smallest
/// bucket (they exist only in tests, but must not go unclassed).
fn class(bytes: u64, dir: Direction) -> usize {
    class_of(bytes.max(512), dir).unwrap_or(0)
}

impl ModeSelect {
    /// A selector with nothing measured yet.
    pub fn new(params: ModeSelectParams) -> Result<Self, PolicyError> {
        params.validate()?;
        Ok(ModeSelect {
            params,
            classes: [ClassTimes::default(); CLASSES],
            reached: [[Reached::default(); MAX_IDLE_STATES]; 2],
            since_prior_vote: 0,
            prior_vote_every: PRIOR_VOTE_EVERY,
        })
    }

    /// The substrate observes the idle state of one wait in `n` of those
    /// it could ([`ModeSelect::record_idle`]; 1, every one, by default),
    /// because each look costs it: the governor's rule's prediction then
    /// votes once in `n` times as many completions, so that it weighs
    /// against the observations as it would against every wait's. Waits
    /// are sampled, not their states, so an observation still counts once
    /// and the votes keep their memory of about eight observations; a mode
    /// the observations turned the selector from is tried again `n` times
    /// later in completions. `n` from 1 to [`MAX_OBSERVE_ONE_IN`].
    ///
    /// ```
    /// # use cint_policy::mode_select::{ModeSelect, ModeSelectParams, IdleStateCost, MAX_IDLE_STATES};
    /// # let mut idle = [IdleStateCost::default(); MAX_IDLE_STATES];
    /// # idle[1] = IdleStateCost { exit_latency: 2_000, target_residency: 2_000, power_mw: 2_000 };
    /// # let params = ModeSelectParams {
    /// #     static_mw: 40_000, spin_mw: 6_500, busy_mw: 8_500,
    /// #     idle_states: idle, idle_count: 2, iowait_factor: 0,
    /// #     sleep_path: 3_000, timer_arm: 300, timer_slack: 2_000,
    /// # };
    /// let mut select = ModeSelect::new(params)?;
    /// // An emulator that reads cpuidle's counters at one wait in sixteen.
    /// select.observe_idle_one_in(16)?;
    /// assert!(select.observe_idle_one_in(0).is_err());
    /// # Ok::<(), cint_policy::PolicyError>(())
    /// ```
    pub fn observe_idle_one_in(&mut self, n: u32) -> Result<(), PolicyError> {
        check_range(
            "observe_idle_one_in",
            u64::from(n),
            1,
            u64::from(MAX_OBSERVE_ONE_IN),
        )?;
        self.prior_vote_every = PRIOR_VOTE_EVERY * n;
        Ok(())
    }

    /// The machine description it decides from.
    pub const fn params(&self) -> &ModeSelectParams {
        &self.params
    }

    /// A request of `bytes` in direction `dir` took `run_time` from
    /// reaching the device to its completion being posted. Whatever mode
    /// it completed by, this time is the device's.
    pub fn record(&mut self, bytes: u64, dir: Direction, run_time: Nanos) {
        self.since_prior_vote += 1;
        if self.since_prior_vote >= self.prior_vote_every {
            self.since_prior_vote = 0;
            for kind in &mut self.reached {
                for (predicted, r) in kind.iter_mut().enumerate() {
                    if r.votes != [0; MAX_IDLE_STATES] {
                        r.observe(predicted, predicted);
                    }
                }
            }
        }
        let c = &mut self.classes[class(bytes, dir)];
        let sample = run_time.max(1);
        if c.mean == 0 {
            c.mean = sample;
            c.min = sample;
            return;
        }
        // mean += (sample - mean) / 8, in unsigned arithmetic.
        c.mean = if sample >= c.mean {
            c.mean + (sample - c.mean) / 8
        } else {
            c.mean - (c.mean - sample) / 8
        }
        .max(1);
        c.min = c.min.min(sample);
    }

    /// A request of `bytes` in direction `dir` waited under `choice` (a
    /// sleep or an interrupt) and its core was woken from cpuidle state
    /// `reached` (an index into the parameters' table: what Linux keeps
    /// as the CPU's `last_state_idx`). A substrate that cannot see it
    /// does not call this, and the selector goes on predicting the state
    /// from the governor's rule.
    ///
    /// The observation is a vote for the state such a wait reaches where
    /// the rule predicts what it predicts for this one (a timer's sleep of
    /// that length, or an interrupt after the class's mean time); the
    /// estimates take the state with the most votes, the votes decaying
    /// by an eighth at each observation and the prediction starting with
    /// eight. The governor's own history (5.15's `menu` may keep a core in
    /// POLL where the rule says C1E) then shows in the estimates, while a
    /// few waits made as the governor was still learning (the first from
    /// a long idle period reach the deepest state) cannot decide.
    /// Nothing happens for [`CompletionChoice::Poll`], or before the
    /// class has a completion time. An index outside the table, and a
    /// [`CompletionChoice::Sleep`] of no time (not a choice the selector
    /// makes), are refused.
    pub fn record_idle(
        &mut self,
        bytes: u64,
        dir: Direction,
        choice: CompletionChoice,
        reached: usize,
    ) -> Result<(), PolicyError> {
        check_range(
            "reached",
            reached as u64,
            0,
            self.params.idle_count as u64 - 1,
        )?;
        let (kind, idle) = match choice {
            CompletionChoice::Poll => return Ok(()),
            // The sleep the choice made: one of none slept nowhere.
            CompletionChoice::Sleep(ns) => {
                check_range("sleep", ns, 1, MAX_DURATION)?;
                (WaitKind::Timer, ns)
            }
            CompletionChoice::Interrupt => {
                (WaitKind::Interrupt, self.classes[class(bytes, dir)].mean)
            }
        };
        if idle == 0 {
            return Ok(());
        }
        let predicted = self.governor_index(idle);
        self.reached[kind as usize][predicted].observe(predicted, reached);
        Ok(())
    }

    /// The class's mean completion time, if it has one.
    pub fn mean(&self, bytes: u64, dir: Direction) -> Option<Nanos> {
        Some(self.classes[class(bytes, dir)].mean).filter(|&m| m > 0)
    }

    /// The mode for a request of `bytes` in direction `dir` issued in
    /// `situation`.
    pub fn choose(&self, bytes: u64, dir: Direction, situation: Situation) -> CompletionChoice {
        let times = self.classes[class(bytes, dir)];
        if situation.core_contended {
            // Spinning would hold the core another runnable thread needs
            // (the poll loop yields only at its next reschedule check);
            // sleeping gives it away.
            return match (situation.can_interrupt, times.min / 2) {
                (true, _) => CompletionChoice::Interrupt,
                (false, 0) => CompletionChoice::Poll,
                (false, sleep) => CompletionChoice::Sleep(sleep),
            };
        }
        if times.mean == 0 {
            // Classic polling measures the device's time without adding
            // a wake-up to it.
            return CompletionChoice::Poll;
        }
        let mut best = self.estimate_poll(times, situation);
        let mut consider = |e: Option<Estimate>| {
            if let Some(e) = e {
                if e.energy_pj < best.energy_pj {
                    best = e;
                }
            }
        };
        consider(self.estimate_sleep(times, times.min / 2, situation));
        consider(self.estimate_sleep(times, times.mean / 2, situation));
        consider(
            situation
                .can_interrupt
                .then(|| self.estimate_interrupt(times, situation)),
        );
        best.choice
    }

    /// The estimates for a request of the class, in the order poll, sleep
    /// half the minimum, sleep half the mean, interrupt (a mode that
    /// cannot apply is left out); `None` before the class has a sample.
    pub fn estimates(
        &self,
        bytes: u64,
        dir: Direction,
        situation: Situation,
    ) -> Option<[Option<Estimate>; 4]> {
        let times = self.classes[class(bytes, dir)];
        (times.mean > 0).then(|| {
            [
                Some(self.estimate_poll(times, situation)),
                self.estimate_sleep(times, times.min / 2, situation),
                self.estimate_sleep(times, times.mean / 2, situation),
                situation
                    .can_interrupt
                    .then(|| self.estimate_interrupt(times, situation)),
            ]
        })
    }

    /// The idle state the governor picks for a sleep expected to last
    /// `idle` while the task waits for I/O: the deepest whose target
    /// residency fits and whose exit latency fits `idle / (1 +
    /// iowait_factor)`, else the shallowest.
    fn governor_index(&self, idle: Nanos) -> usize {
        let p = &self.params;
        let limit = idle / (1 + u64::from(p.iowait_factor));
        p.idle_states[..p.idle_count]
            .iter()
            .rposition(|s| s.target_residency <= idle && s.exit_latency <= limit)
            .unwrap_or(0)
    }

    /// What a wait of `kind` lasting `idle` costs in its idle state: the
    /// state the governor's rule picks, or what such waits were seen to
    /// reach ([`ModeSelect::record_idle`]).
    fn expected_state(&self, kind: WaitKind, idle: Nanos) -> IdleStateCost {
        let predicted = self.governor_index(idle);
        let reached = self.reached[kind as usize][predicted].most_voted(predicted);
        self.params.idle_states[reached]
    }

    /// Energy of the platform over the time the request holds it, shared
    /// by the requests in flight, plus the core's `core_pj`. The host's
    /// wake-up adds `latency - device` to the request's time, but while
    /// the device queues requests (its mean time above its minimum) that
    /// much of the addition only shortens the queue: the device stays
    /// busy and the platform moves as many bytes per second.
    fn total(&self, times: ClassTimes, latency: Nanos, core_pj: u64, situation: Situation) -> u64 {
        let shared = u64::from(situation.in_flight.max(1));
        let queued = times.mean.saturating_sub(times.min);
        let added = latency.saturating_sub(times.mean).saturating_sub(queued);
        (mul(self.params.static_mw, times.mean.saturating_add(added)) / shared)
            .saturating_add(core_pj)
    }

    fn estimate_poll(&self, times: ClassTimes, situation: Situation) -> Estimate {
        let core = mul(self.params.spin_mw, times.mean);
        Estimate {
            choice: CompletionChoice::Poll,
            latency: times.mean,
            energy_pj: self.total(times, times.mean, core, situation),
        }
    }

    /// Hybrid polling with a sleep of `sleep`: io_uring's half of the
    /// class's minimum, so that the timer rarely fires after the
    /// completion, or the block layer's half of its mean, which sleeps
    /// longer (into a deeper state) when the device queues.
    fn estimate_sleep(
        &self,
        times: ClassTimes,
        sleep: Nanos,
        situation: Situation,
    ) -> Option<Estimate> {
        let p = &self.params;
        if sleep == 0 {
            return None;
        }
        let state = self.expected_state(WaitKind::Timer, sleep);
        let awake = sleep
            .saturating_add(p.timer_slack)
            .saturating_add(p.timer_arm)
            .saturating_add(state.exit_latency)
            .saturating_add(p.sleep_path);
        let spin = times.mean.saturating_sub(awake);
        let core = mul(
            p.busy_mw,
            p.timer_arm + p.sleep_path + state.exit_latency / 2,
        )
        // The stay lasts the sleep, the timer's lateness and the exit.
        .saturating_add(mul(
            state.power_mw,
            sleep
                .saturating_add(p.timer_slack)
                .saturating_add(state.exit_latency),
        ))
        .saturating_add(mul(p.spin_mw, spin));
        let latency = times.mean.max(awake);
        Some(Estimate {
            choice: CompletionChoice::Sleep(sleep),
            latency,
            energy_pj: self.total(times, latency, core, situation),
        })
    }

    fn estimate_interrupt(&self, times: ClassTimes, situation: Situation) -> Estimate {
        let p = &self.params;
        let device = times.mean;
        let state = self.expected_state(WaitKind::Interrupt, device);
        let latency = device
            .saturating_add(state.exit_latency)
            .saturating_add(p.sleep_path);
        let core = mul(state.power_mw, device.saturating_add(state.exit_latency))
            .saturating_add(mul(p.busy_mw, p.sleep_path + state.exit_latency / 2));
        Estimate {
            choice: CompletionChoice::Interrupt,
            latency,
            energy_pj: self.total(times, latency, core, situation),
        }
    }
}

/// Milliwatts times nanoseconds: picojoules, saturating.
fn mul(mw: u32, ns: Nanos) -> u64 {
    u64::from(mw).saturating_mul(ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::US;

    /// Three of Skylake's states (POLL, C1E, C6; docs/ENERGY.md).
    fn three_states(iowait_factor: u32) -> ModeSelectParams {
        let mut idle = [IdleStateCost::default(); MAX_IDLE_STATES];
        for (slot, (exit, res, power_mw)) in idle.iter_mut().zip([
            (0, 0, 6_500),
            (10 * US, 20 * US, 1_000),
            (85 * US, 200 * US, 100),
        ]) {
            *slot = IdleStateCost {
                exit_latency: exit,
                target_residency: res,
                power_mw,
            };
        }
        ModeSelectParams {
            static_mw: 41_000,
            spin_mw: 6_500,
            busy_mw: 8_500,
            idle_states: idle,
            idle_count: 3,
            iowait_factor,
            sleep_path: 3 * US,
            timer_arm: 300,
            timer_slack: 2 * US,
        }
    }

    const ALONE: Situation = Situation {
        in_flight: 1,
        core_contended: false,
        can_interrupt: true,
    };

    #[test]
    fn the_governor_pick_follows_residency_and_the_iowait_limit() {
        let s = ModeSelect::new(three_states(0)).unwrap();
        assert_eq!(s.governor_index(US), 0);
        assert_eq!(s.governor_index(25 * US), 1);
        assert_eq!(s.governor_index(1_000 * US), 2);
        let iowait = ModeSelect::new(three_states(10)).unwrap();
        // 25 us / 11 = 2.3 us: C1E's 10 us exit does not fit; 300 us / 11
        // = 27 us: C1E's does, C6's 85 us does not.
        assert_eq!(iowait.governor_index(25 * US), 0);
        assert_eq!(iowait.governor_index(300 * US), 1);
    }

    #[test]
    fn interrupts_seen_to_leave_the_core_in_poll_stop_paying() {
        let mut s = ModeSelect::new(three_states(0)).unwrap();
        s.record(1 << 20, Direction::Read, 2_000 * US);
        assert_eq!(
            s.choose(1 << 20, Direction::Read, ALONE),
            CompletionChoice::Interrupt
        );
        // Five waits in POLL where the rule says C6 do not outvote it.
        for _ in 0..5 {
            s.record_idle(1 << 20, Direction::Read, CompletionChoice::Interrupt, 0)
                .unwrap();
        }
        assert_eq!(
            s.choose(1 << 20, Direction::Read, ALONE),
            CompletionChoice::Interrupt
        );
        s.record_idle(1 << 20, Direction::Read, CompletionChoice::Interrupt, 0)
            .unwrap();
        let e = s
            .estimates(1 << 20, Direction::Read, ALONE)
            .expect("a sample")[3]
            .expect("can interrupt");
        assert_eq!(e.choice, CompletionChoice::Interrupt);
        // POLL's power over the whole wait: no cheaper than spinning.
        assert!(e.energy_pj >= mul(6_500, 2_000 * US), "{e:?}");
        assert_ne!(
            s.choose(1 << 20, Direction::Read, ALONE),
            CompletionChoice::Interrupt
        );
        // Timer sleeps, a wait the governor sees the end of, keep their
        // prediction.
        assert_eq!(
            s.expected_state(WaitKind::Timer, 1_000 * US),
            s.params.idle_states[2]
        );
    }

    #[test]
    fn a_sampled_observation_weighs_against_the_prior_as_every_wait_would() {
        // Twenty interrupts' waits seen in POLL, where the rule says C6,
        // with `completions` completions in all (the first gives the class
        // its time): the state expected for such waits.
        let after = |one_in: u32, completions: u32| {
            let mut s = ModeSelect::new(three_states(0)).unwrap();
            s.observe_idle_one_in(one_in).unwrap();
            s.record(1 << 20, Direction::Read, 2_000 * US);
            for _ in 0..20 {
                s.record_idle(1 << 20, Direction::Read, CompletionChoice::Interrupt, 0)
                    .unwrap();
            }
            for _ in 1..completions {
                s.record(1 << 20, Direction::Read, 2_000 * US);
            }
            s.expected_state(WaitKind::Interrupt, 2_000 * US)
        };
        let (poll, c6) = (
            three_states(0).idle_states[0],
            three_states(0).idle_states[2],
        );
        // Observing every wait, the prior wins back at its fifth vote.
        assert_eq!(after(1, 1), poll);
        assert_eq!(after(1, 64 * 5 - 1), poll);
        assert_eq!(after(1, 64 * 5), c6);
        // One wait in sixteen: its votes come sixteen times as far apart.
        assert_eq!(after(16, 64 * 5), poll);
        assert_eq!(after(16, 64 * 16 * 5 - 1), poll);
        assert_eq!(after(16, 64 * 16 * 5), c6);
        let mut s = ModeSelect::new(three_states(0)).unwrap();
        for n in [0, MAX_OBSERVE_ONE_IN + 1] {
            assert_eq!(
                s.observe_idle_one_in(n),
                Err(PolicyError::OutOfRange {
                    param: "observe_idle_one_in",
                    value: u64::from(n),
                    min: 1,
                    max: u64::from(MAX_OBSERVE_ONE_IN)
                })
            );
        }
    }

    #[test]
    fn the_state_most_waits_reach_outvotes_the_prediction() {
        let mut s = ModeSelect::new(three_states(0)).unwrap();
        // Before a class has a time, an interrupt's wait has no length.
        s.record_idle(4096, Direction::Read, CompletionChoice::Interrupt, 2)
            .unwrap();
        assert_eq!(s.reached, [[Reached::default(); MAX_IDLE_STATES]; 2]);
        s.record_idle(4096, Direction::Read, CompletionChoice::Poll, 2)
            .unwrap();
        assert_eq!(s.reached, [[Reached::default(); MAX_IDLE_STATES]; 2]);
        // A 25 us sleep is predicted C1E; a sixth wait in C6 outvotes it,
        // and four in POLL then take it from C6 (the prediction's votes
        // decayed meanwhile).
        let c1e = s.params.idle_states[1];
        let seen = |s: &mut ModeSelect, state, times| {
            for _ in 0..times {
                s.record_idle(
                    4096,
                    Direction::Read,
                    CompletionChoice::Sleep(25 * US),
                    state,
                )
                .unwrap();
            }
            s.expected_state(WaitKind::Timer, 25 * US)
        };
        assert_eq!(seen(&mut s, 2, 5), c1e);
        assert_eq!(seen(&mut s, 2, 1), s.params.idle_states[2]);
        assert_eq!(seen(&mut s, 0, 3), s.params.idle_states[2]);
        assert_eq!(seen(&mut s, 0, 1), s.params.idle_states[0]);
        // Interrupts' waits keep their own votes.
        s.record(4096, Direction::Read, 25 * US);
        assert_eq!(s.expected_state(WaitKind::Interrupt, 25 * US), c1e);
        // However many, the votes never overflow.
        assert_eq!(seen(&mut s, 1, 10_000), c1e);
        assert_eq!(
            s.record_idle(4096, Direction::Read, CompletionChoice::Sleep(US), 3),
            Err(PolicyError::OutOfRange {
                param: "reached",
                value: 3,
                min: 0,
                max: 2
            })
        );
        // A sleep of no time is no choice the selector makes.
        assert_eq!(
            s.record_idle(4096, Direction::Read, CompletionChoice::Sleep(0), 1),
            Err(PolicyError::OutOfRange {
                param: "sleep",
                value: 0,
                min: 1,
                max: MAX_DURATION
            })
        );
    }

    #[test]
    fn contention_gives_the_core_away() {
        let mut s = ModeSelect::new(three_states(0)).unwrap();
        s.record(4096, Direction::Read, 8 * US);
        let busy = Situation {
            core_contended: true,
            ..ALONE
        };
        assert_eq!(
            s.choose(4096, Direction::Read, busy),
            CompletionChoice::Interrupt
        );
        let iopoll = Situation {
            can_interrupt: false,
            ..busy
        };
        assert_eq!(
            s.choose(4096, Direction::Read, iopoll),
            CompletionChoice::Sleep(4 * US)
        );
    }

    #[test]
    fn the_mean_moves_by_an_eighth_and_the_minimum_only_down() {
        let mut s = ModeSelect::new(three_states(0)).unwrap();
        s.record(4096, Direction::Write, 80 * US);
        s.record(4096, Direction::Write, 160 * US);
        assert_eq!(s.mean(4096, Direction::Write), Some(90 * US));
        assert_eq!(s.classes[class(4096, Direction::Write)].min, 80 * US);
        assert_eq!(s.mean(4096, Direction::Read), None);
    }

    #[test]
    fn bad_tables_are_refused() {
        let mut p = three_states(10);
        p.idle_states[2].target_residency = 5 * US;
        assert!(matches!(
            ModeSelect::new(p),
            Err(PolicyError::OutOfRange {
                param: "target_residency",
                ..
            })
        ));
        let mut p = three_states(10);
        p.idle_count = 0;
        assert!(ModeSelect::new(p).is_err());
        p.idle_count = MAX_IDLE_STATES + 1;
        assert!(ModeSelect::new(p).is_err());
    }
}
