//! # cint-policy: interrupt-generation policies as embeddable "firmware"
//!
//! Every strategy of `docs/ALGORITHMS.md` is a small state machine here. A policy
//! is owned by one completion queue. The substrate that drives it — the
//! discrete-event simulator, the real-thread emulator, a device's firmware,
//! a hypervisor's virtual device — tells it three things:
//!
//! * a request was **submitted** ([`Policy::on_submit`]): the policy hands
//!   back a [`Seq`] the substrate keeps with the request;
//! * a request **completed** and its entry is in the completion queue
//!   ([`Policy::on_complete`]);
//! * **time passed**: when the clock reaches [`Policy::next_deadline`] the
//!   substrate calls [`Policy::on_timer`].
//!
//! Each call returns a [`Decision`]: hold, or fire an [`Irq`] now (a full
//! one, or an urgent-only one for out-of-order Urgent processing). What the
//! interrupt handler then reaps is the driver's business: see [`reap`].
//!
//! Rules every policy keeps, so that the same code runs in firmware, in a
//! hypervisor and in `no_std`:
//! * no policy reads a clock: time is the `now` argument, integer
//!   nanoseconds ([`Nanos`]), and it never goes backwards;
//! * no policy allocates: all state is inline, sizes are fixed;
//! * no floating point on any decision path (vIC's rule, applied to all).
//!
//! The crate is `#![no_std]` unconditionally and uses no `alloc`.
//!
//! # Example
//!
//! ```
//! use cint_policy::config::CinterruptsParams;
//! use cint_policy::{Decision, Hint, Policy, PolicyConfig, US};
//!
//! // Calibrated interrupts with the paper's Optane settings: delta 6 us, thr 32.
//! let config = PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(6 * US, 32));
//! let mut queue = config.build(0)?;
//!
//! // An unmarked completion is coalesced...
//! let a = queue.on_submit(0, Hint::Unmarked);
//! assert_eq!(queue.on_complete(10 * US, a, Hint::Unmarked), Decision::Hold);
//! // ...until the queue has been quiet for delta.
//! let deadline = queue.next_deadline().expect("a completion waits");
//! assert_eq!(deadline, 16 * US);
//! assert_eq!(queue.on_timer(deadline), Decision::FULL);
//!
//! // Someone waits for an Urgent request: an urgent-only interrupt, at once.
//! let b = queue.on_submit(20 * US, Hint::Urgent);
//! assert_eq!(queue.on_complete(30 * US, b, Hint::Urgent), Decision::URGENT_ONLY);
//! # Ok::<(), cint_policy::PolicyError>(())
//! ```

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adaptive;
mod any;
pub mod cinterrupts;
pub mod config;
pub mod hints;
pub mod hybrid_poll;
pub mod mode_select;
pub mod none;
pub mod nvme;
pub mod reap;
pub mod vic;
pub mod vic_sched;

pub use any::AnyPolicy;
pub use config::{PolicyConfig, PolicyError};

/// Time in integer nanoseconds. Absolute instants and durations alike.
pub type Nanos = u64;

/// Nanoseconds per microsecond, for readable parameters.
pub const US: Nanos = 1_000;
/// Nanoseconds per millisecond.
pub const MS: Nanos = 1_000_000;
/// Nanoseconds per second.
pub const SEC: Nanos = 1_000_000_000;

/// Per-queue submission sequence number, handed out by
/// [`Policy::on_submit`] in strictly increasing order starting at 0. The
/// substrate stores it with the request and passes it back on completion;
/// strict Barrier semantics need to know which requests were submitted
/// before which.
pub type Seq = u64;

/// The two hint bits a request carries from submission to completion.
///
/// Both bits set, or neither, means [`Hint::Unmarked`] (docs/ALGORITHMS.md section 5:
/// applications pass both flags to say "explicitly unmarked").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Hint {
    /// Neither bit, or both: handled by the adaptive fall-back.
    #[default]
    Unmarked,
    /// Someone is blocked waiting for this request: interrupt now.
    Urgent,
    /// Last request of a batch someone waits for: interrupt when it (and,
    /// under strict semantics, everything before it) has completed.
    Barrier,
}

impl Hint {
    /// Builds a hint from the two wire bits. Both set means unmarked.
    pub const fn from_bits(urgent: bool, barrier: bool) -> Hint {
        match (urgent, barrier) {
            (true, false) => Hint::Urgent,
            (false, true) => Hint::Barrier,
            _ => Hint::Unmarked,
        }
    }

    /// Bit 0 of a hint word: Urgent.
    pub const WIRE_URGENT: u32 = 1;
    /// Bit 1 of a hint word: Barrier.
    pub const WIRE_BARRIER: u32 = 2;

    /// Builds a hint from a hint word as a C caller, a command's
    /// reserved bits or a trace carries it: bit 0 Urgent, bit 1 Barrier,
    /// both meaning unmarked. Any other bit set is refused rather than
    /// ignored, so that a caller's encoding mistake cannot pass silently.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::{Hint, PolicyError};
    ///
    /// assert_eq!(Hint::from_wire(1), Ok(Hint::Urgent));
    /// assert_eq!(Hint::from_wire(3), Ok(Hint::Unmarked)); // both bits
    /// assert_eq!(Hint::from_wire(4), Err(PolicyError::UnknownHintBits(4)));
    /// ```
    pub const fn from_wire(bits: u32) -> Result<Hint, PolicyError> {
        if bits & !(Hint::WIRE_URGENT | Hint::WIRE_BARRIER) != 0 {
            return Err(PolicyError::UnknownHintBits(bits));
        }
        Ok(Hint::from_bits(
            bits & Hint::WIRE_URGENT != 0,
            bits & Hint::WIRE_BARRIER != 0,
        ))
    }

    /// The hint word of this hint (see [`Hint::from_wire`]).
    pub const fn to_wire(self) -> u32 {
        match self {
            Hint::Unmarked => 0,
            Hint::Urgent => Hint::WIRE_URGENT,
            Hint::Barrier => Hint::WIRE_BARRIER,
        }
    }

    /// The wire bits `(urgent, barrier)` of this hint.
    pub const fn bits(self) -> (bool, bool) {
        match self {
            Hint::Unmarked => (false, false),
            Hint::Urgent => (true, false),
            Hint::Barrier => (false, true),
        }
    }
}

/// The kind of interrupt a policy asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Irq {
    /// The handler reaps every pending completion-queue entry.
    Full,
    /// The handler reaps only Urgent entries and returns (out-of-order
    /// Urgent processing); the others wait for the next full interrupt.
    UrgentOnly,
}

/// What a policy answers to every event: hold, or fire an interrupt now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[must_use = "a decision to fire an interrupt must be acted on"]
pub enum Decision {
    /// No interrupt now.
    #[default]
    Hold,
    /// Fire this interrupt now.
    Fire(Irq),
}

impl Decision {
    /// Fire a full interrupt.
    pub const FULL: Decision = Decision::Fire(Irq::Full);
    /// Fire an urgent-only interrupt.
    pub const URGENT_ONLY: Decision = Decision::Fire(Irq::UrgentOnly);

    /// The interrupt to fire, if any.
    pub const fn irq(self) -> Option<Irq> {
        match self {
            Decision::Hold => None,
            Decision::Fire(irq) => Some(irq),
        }
    }

    /// Combines two decisions taken at the same instant: a full interrupt
    /// reaps everything an urgent-only one would, so it wins.
    ///
    /// # Example
    ///
    /// ```
    /// use cint_policy::Decision;
    ///
    /// assert_eq!(Decision::URGENT_ONLY.merge(Decision::FULL), Decision::FULL);
    /// assert_eq!(Decision::Hold.merge(Decision::URGENT_ONLY), Decision::URGENT_ONLY);
    /// ```
    pub const fn merge(self, other: Decision) -> Decision {
        match (self, other) {
            (Decision::Fire(Irq::Full), _) | (_, Decision::Fire(Irq::Full)) => Decision::FULL,
            (Decision::Fire(Irq::UrgentOnly), _) | (_, Decision::Fire(Irq::UrgentOnly)) => {
                Decision::URGENT_ONLY
            }
            _ => Decision::Hold,
        }
    }
}

/// What a time-slice scheduler tells a scheduler-aware policy about the
/// guest whose completions it forwards (docs/ALGORITHMS.md section 7). Other policies
/// ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GuestSchedule {
    /// The guest's vCPU is running now.
    pub running: bool,
    /// When its current time slice ends, in the policy's clock, if known.
    pub slice_end: Option<Nanos>,
}

/// One interrupt-generation policy for one completion queue.
///
/// Call order contract: `now` never decreases across calls; every
/// completed [`Seq`] was returned by `on_submit` and completes once. When
/// the clock reaches [`Policy::next_deadline`], call [`Policy::on_timer`]
/// (late is allowed; the policy then fires late, never early).
pub trait Policy {
    /// A request with this hint was submitted. Returns its sequence number.
    fn on_submit(&mut self, now: Nanos, hint: Hint) -> Seq;

    /// The request `seq`, submitted with `hint`, posted its completion-queue
    /// entry at `now`.
    fn on_complete(&mut self, now: Nanos, seq: Seq, hint: Hint) -> Decision;

    /// The clock reached (or passed) the deadline the policy asked for.
    fn on_timer(&mut self, now: Nanos) -> Decision;

    /// The earliest instant at which the policy must be consulted again
    /// through [`Policy::on_timer`], or `None` if only a submission or a
    /// completion can change its mind.
    fn next_deadline(&self) -> Option<Nanos>;

    /// The substrate gets a chance to deliver for another reason (a virtual
    /// machine monitor runs because of a guest exit or its periodic timer).
    /// Policies that may hold completions without a deadline (vIC) fire
    /// here; the others hold.
    fn on_opportunity(&mut self, now: Nanos) -> Decision {
        let _ = now;
        Decision::Hold
    }

    /// The guest's scheduling state changed (scheduler-aware vIC only).
    fn on_schedule(&mut self, now: Nanos, schedule: GuestSchedule) {
        let _ = (now, schedule);
    }

    /// Commands in flight: submitted and not yet completed.
    fn in_flight(&self) -> u32;
}

/// Hands out [`Seq`] numbers and counts commands in flight; every policy
/// embeds one so that `Policy::in_flight` means the same everywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InFlight {
    next_seq: Seq,
    in_flight: u32,
}

impl InFlight {
    /// A queue with nothing submitted yet.
    pub const fn new() -> Self {
        InFlight {
            next_seq: 0,
            in_flight: 0,
        }
    }

    /// Records a submission and returns its sequence number.
    pub fn submit(&mut self) -> Seq {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight = self.in_flight.saturating_add(1);
        seq
    }

    /// Records a completion. A completion without a matching submission is
    /// a substrate bug; the count saturates at zero rather than wrapping.
    pub fn complete(&mut self) {
        debug_assert!(self.in_flight > 0, "completion without a submission");
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Commands in flight now.
    pub const fn count(&self) -> u32 {
        self.in_flight
    }

    /// The sequence number the next submission will get.
    pub const fn next_seq(&self) -> Seq {
        self.next_seq
    }
}
