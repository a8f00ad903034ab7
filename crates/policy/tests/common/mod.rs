//! A reference substrate for policy tests: one policy, one completion
//! queue, a virtual clock, and a record of every request's life.
//!
//! The harness plays device, timer and driver: completions are posted to a
//! [`CompletionQueue`] and reported to the policy; a full interrupt reaps
//! every pending entry and an urgent-only one the pending Urgent entries;
//! `on_timer` is called exactly when `next_deadline` is reached, and
//! `on_opportunity` every `opportunity_period` if one is set (a virtual
//! machine monitor's periodic timer, for vIC). Any entry delivered twice
//! panics at once, so property tests report it with the failing input.

// Each test binary uses a different subset of the harness.
#![allow(dead_code)]

use cint_policy::reap::CompletionQueue;
use cint_policy::{Decision, Hint, Irq, Nanos, Policy, Seq};

/// Completion-queue slots: more than any test keeps undelivered.
pub const CQ_SLOTS: usize = 4096;

/// How many times in a row a policy may ask for a deadline it already
/// reached before the harness calls it a livelock.
const MAX_STUCK_TIMERS: u32 = 4;

/// One request's life, indexed by its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The hint it was submitted with.
    pub hint: Hint,
    /// The sequence number the policy gave it.
    pub seq: Seq,
    /// When it was submitted.
    pub submitted: Nanos,
    /// When its completion entry was posted.
    pub arrived: Option<Nanos>,
    /// When an interrupt handler reaped it.
    pub delivered: Option<Nanos>,
}

/// The reference substrate around one policy.
pub struct Harness<P: Policy> {
    /// The policy under test.
    pub policy: P,
    cq: Box<CompletionQueue<CQ_SLOTS>>,
    now: Nanos,
    opportunity_period: Option<Nanos>,
    next_opportunity: Nanos,
    /// Tags submitted and not completed, in submission order.
    in_flight: Vec<u64>,
    /// Every request, by tag.
    pub records: Vec<Record>,
    /// Every interrupt fired, in order.
    pub irqs: Vec<(Nanos, Irq)>,
}

impl<P: Policy> Harness<P> {
    /// A harness whose clock starts at `start` (the instant the policy was
    /// built at).
    pub fn new(policy: P, start: Nanos) -> Self {
        Harness {
            policy,
            cq: Box::new(CompletionQueue::new()),
            now: start,
            opportunity_period: None,
            next_opportunity: start,
            in_flight: Vec::new(),
            records: Vec::new(),
            irqs: Vec::new(),
        }
    }

    /// Also calls `on_opportunity` every `period` (vIC's monitor timer).
    pub fn with_opportunities(mut self, period: Nanos) -> Self {
        assert!(period > 0, "opportunity period must be positive");
        self.opportunity_period = Some(period);
        self.next_opportunity = self.now + period;
        self
    }

    /// The virtual clock.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Requests in flight, as the harness counts them.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Completion-queue entries not delivered yet.
    pub fn pending(&self) -> usize {
        self.cq.pending()
    }

    /// Submits a request now; returns its tag.
    pub fn submit(&mut self, hint: Hint) -> u64 {
        let seq = self.policy.on_submit(self.now, hint);
        let tag = self.records.len() as u64;
        self.records.push(Record {
            hint,
            seq,
            submitted: self.now,
            arrived: None,
            delivered: None,
        });
        self.in_flight.push(tag);
        tag
    }

    /// Completes the in-flight request at `index % in_flight()` (the
    /// oldest is 0); returns its tag, or `None` if nothing is in flight.
    pub fn complete_nth(&mut self, index: usize) -> Option<u64> {
        if self.in_flight.is_empty() {
            return None;
        }
        let tag = self.in_flight.remove(index % self.in_flight.len());
        self.post(tag);
        Some(tag)
    }

    /// Completes the in-flight request `tag`.
    pub fn complete(&mut self, tag: u64) {
        let index = self
            .in_flight
            .iter()
            .position(|&t| t == tag)
            .unwrap_or_else(|| panic!("request {tag} is not in flight"));
        self.in_flight.remove(index);
        self.post(tag);
    }

    fn post(&mut self, tag: u64) {
        let record = &mut self.records[tag as usize];
        record.arrived = Some(self.now);
        let (hint, seq) = (record.hint, record.seq);
        if let Err(e) = self.cq.post(tag, hint) {
            panic!("{e}");
        }
        let decision = self.policy.on_complete(self.now, seq, hint);
        self.apply(decision);
    }

    /// Lets time pass by `gap`, serving every deadline and opportunity on
    /// the way at its exact instant.
    pub fn advance(&mut self, gap: Nanos) {
        self.advance_to(self.now.saturating_add(gap));
    }

    /// Lets time pass until `until`.
    pub fn advance_to(&mut self, until: Nanos) {
        let mut stuck = 0;
        loop {
            let deadline = self.policy.next_deadline().filter(|&d| d <= until);
            let opportunity = self
                .opportunity_period
                .map(|_| self.next_opportunity)
                .filter(|&o| o <= until);
            let (at, is_timer) = match (deadline, opportunity) {
                (Some(d), Some(o)) if o < d => (o, false),
                (Some(d), _) => (d, true),
                (None, Some(o)) => (o, false),
                (None, None) => break,
            };
            // A late deadline (one the policy set in the past) is served now.
            let at = at.max(self.now);
            if at == self.now && is_timer {
                stuck += 1;
                assert!(
                    stuck <= MAX_STUCK_TIMERS,
                    "deadline {at} does not move after on_timer"
                );
            } else {
                stuck = 0;
            }
            self.now = at;
            if is_timer {
                let decision = self.policy.on_timer(at);
                self.apply(decision);
            } else {
                let decision = self.policy.on_opportunity(at);
                self.apply(decision);
                self.next_opportunity = at + self.opportunity_period.unwrap_or(1);
            }
        }
        self.now = self.now.max(until);
    }

    /// Serves deadlines (and opportunities) until nothing is pending, the
    /// policy asks for nothing more, or `limit` has passed.
    pub fn drain(&mut self, limit: Nanos) {
        let end = self.now.saturating_add(limit);
        while self.cq.pending() > 0 && self.now < end {
            let next = self
                .policy
                .next_deadline()
                .into_iter()
                .chain(self.opportunity_period.map(|_| self.next_opportunity))
                .min();
            match next {
                Some(t) => self.advance_to(t.max(self.now).min(end)),
                None => break,
            }
        }
    }

    fn apply(&mut self, decision: Decision) {
        let Some(irq) = decision.irq() else {
            return;
        };
        let now = self.now;
        self.irqs.push((now, irq));
        let records = &mut self.records;
        self.cq.reap(irq, |tag, hint| {
            let record = &mut records[tag as usize];
            assert_eq!(record.hint, hint, "entry {tag} came back with another hint");
            assert!(
                record.delivered.is_none(),
                "entry {tag} delivered twice (at {:?} and {now})",
                record.delivered
            );
            record.delivered = Some(now);
        });
    }

    /// Panics unless every completed request was delivered exactly once
    /// and nothing was delivered before it completed.
    pub fn assert_all_delivered(&self) {
        for (tag, r) in self.records.iter().enumerate() {
            match (r.arrived, r.delivered) {
                (Some(a), Some(d)) => assert!(d >= a, "entry {tag} delivered before it arrived"),
                (Some(a), None) => panic!("entry {tag} (arrived at {a}) never delivered"),
                (None, Some(_)) => panic!("entry {tag} delivered but never completed"),
                (None, None) => {}
            }
        }
    }

    /// The longest any completed request waited between arrival and
    /// delivery (undelivered ones count up to the current clock).
    pub fn max_wait(&self) -> Nanos {
        self.records
            .iter()
            .filter_map(|r| Some(r.delivered.unwrap_or(self.now) - r.arrived?))
            .max()
            .unwrap_or(0)
    }

    /// Arrival instants of every completion, sorted.
    pub fn arrivals(&self) -> Vec<Nanos> {
        let mut a: Vec<Nanos> = self.records.iter().filter_map(|r| r.arrived).collect();
        a.sort_unstable();
        a
    }

    /// Panics unless every completion is delivered within `quiet` after the
    /// end of its stream: the first arrival at or after it that is followed
    /// by no other arrival for more than `quiet`.
    pub fn assert_delivered_by_stream_end(&self, quiet: Nanos) {
        let arrivals = self.arrivals();
        for (tag, r) in self.records.iter().enumerate() {
            let Some(a) = r.arrived else { continue };
            let start = arrivals.partition_point(|&t| t < a);
            let mut end = arrivals[start];
            for &t in &arrivals[start + 1..] {
                if t > end + quiet {
                    break;
                }
                end = t;
            }
            let d = r.delivered.unwrap_or(Nanos::MAX);
            assert!(
                d <= end + quiet,
                "entry {tag} arrived at {a}, its stream ended at {end}, delivered at {d} (> +{quiet})"
            );
        }
    }
}

/// One step of a random request stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Submit a request with this hint.
    Submit(Hint),
    /// Complete the in-flight request at this index (modulo the count).
    Complete(usize),
    /// Let this much time pass.
    Gap(Nanos),
}

/// Plays `ops` on the harness, then completes whatever is still in flight
/// (oldest first, `tail_gap` apart).
pub fn play<P: Policy>(h: &mut Harness<P>, ops: &[Op], tail_gap: Nanos) {
    for &op in ops {
        match op {
            Op::Submit(hint) => {
                h.submit(hint);
            }
            Op::Complete(i) => {
                h.complete_nth(i);
            }
            Op::Gap(g) => h.advance(g),
        }
    }
    while h.complete_nth(0).is_some() {
        h.advance(tail_gap);
    }
}

/// proptest strategies for request streams.
pub mod strategy {
    use super::Op;
    use cint_policy::{Hint, Nanos};
    use proptest::prelude::*;

    /// Any hint, from the two wire bits (both set is unmarked).
    pub fn hint() -> impl Strategy<Value = Hint> {
        (any::<bool>(), any::<bool>()).prop_map(|(u, b)| Hint::from_bits(u, b))
    }

    /// A stream step: short gaps mostly, sometimes long ones.
    pub fn op(short_gap: Nanos, long_gap: Nanos) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => hint().prop_map(Op::Submit),
            4 => any::<usize>().prop_map(Op::Complete),
            3 => (0..=short_gap).prop_map(Op::Gap),
            1 => (0..=long_gap).prop_map(Op::Gap),
        ]
    }

    /// A stream of up to `len` steps.
    pub fn ops(len: usize, short_gap: Nanos, long_gap: Nanos) -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(op(short_gap, long_gap), 0..=len)
    }
}
