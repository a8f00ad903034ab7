//! Worked examples of docs/ALGORITHMS.md sections 2-4: NVMe aggregation, adaptive
//! burst detection, and every branch of Algorithm 2.

// `1 * US` next to `5 * US` reads as a timeline.
#![allow(clippy::identity_op)]

mod common;

use cint_policy::adaptive::Adaptive;
use cint_policy::cinterrupts::{Cinterrupts, STRICT_BARRIER_CAPACITY};
use cint_policy::config::{
    AdaptiveParams, BarrierMode, CinterruptsParams, NvmeParams, StormGuardMode,
};
use cint_policy::nvme::NvmeAggregation;
use cint_policy::{Decision, Hint, Irq, Nanos, Policy, PolicyConfig, PolicyError, SEC, US};
use common::Harness;

const DELTA: u64 = 10 * US;
const THR: u32 = 4;

fn cint(ooo: bool, barrier: BarrierMode) -> Cinterrupts {
    let params = CinterruptsParams {
        ooo,
        barrier,
        ..CinterruptsParams::with_adaptive(DELTA, THR)
    };
    Cinterrupts::new(params, 0).expect("valid parameters")
}

// ---------------------------------------------------------------- NVMe --

fn nvme(thr: u32, time: u64, coalescing_disabled: bool) -> NvmeAggregation {
    NvmeAggregation::new(NvmeParams {
        thr,
        time,
        coalescing_disabled,
    })
    .expect("valid parameters")
}

#[test]
fn nvme_fires_at_thr_completions() {
    let mut p = nvme(3, 100 * US, false);
    let seqs: Vec<_> = (0..4).map(|_| p.on_submit(0, Hint::Unmarked)).collect();
    assert_eq!(
        p.on_complete(1 * US, seqs[0], Hint::Unmarked),
        Decision::Hold
    );
    assert_eq!(p.next_deadline(), Some(101 * US));
    assert_eq!(
        p.on_complete(2 * US, seqs[1], Hint::Unmarked),
        Decision::Hold
    );
    assert_eq!(
        p.on_complete(3 * US, seqs[2], Hint::Unmarked),
        Decision::FULL
    );
    assert_eq!(p.pending(), 0);
    assert_eq!(p.next_deadline(), None);
    // The next completion opens a new window.
    assert_eq!(
        p.on_complete(4 * US, seqs[3], Hint::Unmarked),
        Decision::Hold
    );
    assert_eq!(p.next_deadline(), Some(104 * US));
}

#[test]
fn nvme_window_is_static_and_fires_on_time() {
    let mut p = nvme(8, 100 * US, false);
    let seqs: Vec<_> = (0..3).map(|_| p.on_submit(0, Hint::Unmarked)).collect();
    assert_eq!(
        p.on_complete(10 * US, seqs[0], Hint::Unmarked),
        Decision::Hold
    );
    // Later completions do not move the window (unlike adaptive).
    assert_eq!(
        p.on_complete(90 * US, seqs[1], Hint::Unmarked),
        Decision::Hold
    );
    assert_eq!(p.next_deadline(), Some(110 * US));
    assert_eq!(p.on_timer(109 * US), Decision::Hold);
    assert_eq!(p.on_timer(110 * US), Decision::FULL);
    assert_eq!(p.next_deadline(), None);
    assert_eq!(p.on_timer(500 * US), Decision::Hold);
    // A new window opens at the next completion; a late timer fires late.
    assert_eq!(
        p.on_complete(600 * US, seqs[2], Hint::Unmarked),
        Decision::Hold
    );
    assert_eq!(p.on_timer(800 * US), Decision::FULL);
}

#[test]
fn nvme_without_coalescing_fires_every_completion() {
    for p in [
        nvme(1, 100 * US, false),
        nvme(16, 0, false),
        nvme(16, 100 * US, true),
    ] {
        assert!(p.coalescing_off(), "{p:?}");
        let mut p = p;
        for t in 0..5 {
            let s = p.on_submit(t, Hint::Unmarked);
            assert_eq!(p.on_complete(t, s, Hint::Unmarked), Decision::FULL);
            assert_eq!(p.next_deadline(), None);
        }
    }
}

#[test]
fn nvme_wire_encoding_and_range() {
    assert_eq!(nvme(1, 0, false).feature_08h_dword11(), 0);
    assert_eq!(nvme(256, 25_500 * US, false).feature_08h_dword11(), 0xffff);
    assert_eq!(
        nvme(32, 250 * US, false).feature_08h_dword11(),
        31 | (2 << 8)
    );
    for thr in [0, 257] {
        let err = NvmeAggregation::new(NvmeParams {
            thr,
            time: 0,
            coalescing_disabled: false,
        });
        assert!(matches!(
            err,
            Err(PolicyError::OutOfRange { param: "thr", .. })
        ));
    }
}

// ------------------------------------------------------------ adaptive --

#[test]
fn adaptive_fires_at_thr_or_after_quiet_delta() {
    let mut p = Adaptive::new(
        AdaptiveParams {
            delta: DELTA,
            thr: 3,
        },
        0,
    )
    .unwrap();
    let s: Vec<_> = (0..5).map(|_| p.on_submit(0, Hint::Unmarked)).collect();
    assert_eq!(p.next_deadline(), None, "an idle queue asks for no timer");
    assert_eq!(p.on_complete(1 * US, s[0], Hint::Unmarked), Decision::Hold);
    assert_eq!(p.on_complete(8 * US, s[1], Hint::Unmarked), Decision::Hold);
    // Each completion pushes the quiescence deadline.
    assert_eq!(p.next_deadline(), Some(18 * US));
    assert_eq!(p.on_complete(9 * US, s[2], Hint::Unmarked), Decision::FULL);
    assert_eq!(p.on_complete(20 * US, s[3], Hint::Unmarked), Decision::Hold);
    assert_eq!(p.on_timer(29 * US), Decision::Hold);
    assert_eq!(p.on_timer(30 * US), Decision::FULL);
    assert_eq!(p.coalesced(), 0);
    assert_eq!(p.next_deadline(), None);
    assert_eq!(p.in_flight(), 1);
}

#[test]
fn bad_adaptive_parameters_are_rejected() {
    for (delta, thr, param) in [(0, 4, "delta"), (DELTA, 0, "thr"), (DELTA, 65_536, "thr")] {
        let cfg = PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(delta, thr));
        assert!(
            matches!(cfg.build(0), Err(PolicyError::OutOfRange { param: p, .. }) if p == param)
        );
    }
    let storm = CinterruptsParams {
        max_irq_rate: Some(0),
        ..CinterruptsParams::with_adaptive(DELTA, THR)
    };
    assert!(Cinterrupts::new(storm, 0).is_err());
}

// --------------------------------------------------- Algorithm 2 branches --

#[test]
fn unmarked_and_both_bits_are_coalesced_like_adaptive() {
    let mut p = cint(true, BarrierMode::Relaxed);
    let both = Hint::from_bits(true, true);
    assert_eq!(both, Hint::Unmarked);
    let s: Vec<_> = (0..THR).map(|_| p.on_submit(0, both)).collect();
    for (i, &seq) in s.iter().enumerate().take(THR as usize - 1) {
        assert_eq!(p.on_complete(i as u64, seq, both), Decision::Hold);
    }
    assert_eq!(p.coalesced(), THR - 1);
    assert_eq!(p.on_complete(5, s[THR as usize - 1], both), Decision::FULL);
    assert_eq!(p.coalesced(), 0);
}

#[test]
fn urgent_with_ooo_fires_urgent_only_without_counting_or_resetting() {
    let mut p = cint(true, BarrierMode::Relaxed);
    let a = p.on_submit(0, Hint::Unmarked);
    let u = p.on_submit(0, Hint::Urgent);
    let b = p.on_submit(0, Hint::Unmarked);
    assert_eq!(p.on_complete(1 * US, a, Hint::Unmarked), Decision::Hold);
    assert_eq!(p.next_deadline(), Some(11 * US));
    assert_eq!(
        p.on_complete(5 * US, u, Hint::Urgent),
        Decision::URGENT_ONLY
    );
    // Not counted, not reset; but the quiescence interval restarted.
    assert_eq!(p.coalesced(), 1);
    assert_eq!(p.next_deadline(), Some(15 * US));
    assert_eq!(p.on_complete(6 * US, b, Hint::Unmarked), Decision::Hold);
    assert_eq!(p.coalesced(), 2);
    assert_eq!(p.on_timer(16 * US), Decision::FULL);
}

#[test]
fn urgent_without_ooo_fires_full_and_resets() {
    let mut p = cint(false, BarrierMode::Relaxed);
    let a = p.on_submit(0, Hint::Unmarked);
    let u = p.on_submit(0, Hint::Urgent);
    assert_eq!(p.on_complete(1, a, Hint::Unmarked), Decision::Hold);
    assert_eq!(p.on_complete(2, u, Hint::Urgent), Decision::FULL);
    assert_eq!(p.coalesced(), 0);
    assert_eq!(p.next_deadline(), None);
}

#[test]
fn relaxed_barrier_fires_full_even_with_earlier_requests_in_flight() {
    let mut p = cint(true, BarrierMode::Relaxed);
    let early = p.on_submit(0, Hint::Unmarked);
    let done = p.on_submit(0, Hint::Unmarked);
    let bar = p.on_submit(0, Hint::Barrier);
    assert_eq!(p.on_complete(1, done, Hint::Unmarked), Decision::Hold);
    assert_eq!(p.on_complete(2, bar, Hint::Barrier), Decision::FULL);
    assert_eq!(p.coalesced(), 0);
    assert_eq!(p.on_complete(3, early, Hint::Unmarked), Decision::Hold);
    assert_eq!(p.tracked_barriers(), 0);
}

#[test]
fn strict_barrier_with_nothing_earlier_in_flight_fires_at_once() {
    let mut p = cint(true, BarrierMode::Strict);
    let a = p.on_submit(0, Hint::Unmarked);
    assert_eq!(p.on_complete(1, a, Hint::Unmarked), Decision::Hold);
    let bar = p.on_submit(2, Hint::Barrier);
    assert_eq!(p.tracked_barriers(), 1);
    // A request submitted after the Barrier does not hold it back.
    let later = p.on_submit(3, Hint::Unmarked);
    assert_eq!(p.on_complete(4, bar, Hint::Barrier), Decision::FULL);
    assert_eq!(p.tracked_barriers(), 0);
    assert_eq!(p.on_complete(5, later, Hint::Unmarked), Decision::Hold);
}

#[test]
fn strict_barrier_waits_for_out_of_order_predecessors() {
    let mut p = cint(true, BarrierMode::Strict);
    let e1 = p.on_submit(0, Hint::Unmarked);
    let e2 = p.on_submit(0, Hint::Urgent);
    let bar = p.on_submit(0, Hint::Barrier);
    let after = p.on_submit(0, Hint::Unmarked);
    // The Barrier overtakes both predecessors: it waits, counted as unmarked.
    assert_eq!(p.on_complete(1 * US, bar, Hint::Barrier), Decision::Hold);
    assert_eq!(p.coalesced(), 1);
    assert_eq!(p.next_deadline(), Some(11 * US));
    // A later request's completion is no predecessor.
    assert_eq!(p.on_complete(2 * US, after, Hint::Unmarked), Decision::Hold);
    // The Urgent predecessor fires its own urgent-only IRQ, the Barrier still waits.
    assert_eq!(
        p.on_complete(3 * US, e2, Hint::Urgent),
        Decision::URGENT_ONLY
    );
    assert_eq!(p.tracked_barriers(), 1);
    // The last predecessor releases the Barrier: a full IRQ, coalesced reset.
    assert_eq!(p.on_complete(4 * US, e1, Hint::Unmarked), Decision::FULL);
    assert_eq!(p.coalesced(), 0);
    assert_eq!(p.tracked_barriers(), 0);
}

#[test]
fn strict_barrier_release_merges_with_urgent_only_into_full() {
    let mut p = cint(true, BarrierMode::Strict);
    let u = p.on_submit(0, Hint::Urgent);
    let bar = p.on_submit(0, Hint::Barrier);
    assert_eq!(p.on_complete(1, bar, Hint::Barrier), Decision::Hold);
    assert_eq!(p.on_complete(2, u, Hint::Urgent), Decision::FULL);
}

#[test]
fn strict_vs_relaxed_in_the_harness_with_out_of_order_completions() {
    for mode in [BarrierMode::Relaxed, BarrierMode::Strict] {
        let mut h = Harness::new(cint(true, mode), 0);
        let e1 = h.submit(Hint::Unmarked);
        let e2 = h.submit(Hint::Unmarked);
        let bar = h.submit(Hint::Barrier);
        h.advance(1 * US);
        h.complete(e2);
        h.advance(1 * US);
        h.complete(bar);
        h.advance(5 * US);
        h.complete(e1);
        let r = |h: &Harness<Cinterrupts>, t: u64| h.records[t as usize].delivered;
        match mode {
            // Relaxed: the Barrier's IRQ at 2 us reaps e2 and the Barrier;
            // e1 waits for the adaptive timer.
            BarrierMode::Relaxed => {
                assert_eq!(
                    (r(&h, e2), r(&h, bar), r(&h, e1)),
                    (Some(2 * US), Some(2 * US), None)
                );
                h.drain(DELTA + 1);
                assert_eq!(r(&h, e1), Some(17 * US));
            }
            // Strict: nothing until e1 completes at 7 us, then all at once.
            BarrierMode::Strict => {
                assert_eq!(
                    (r(&h, e2), r(&h, bar), r(&h, e1)),
                    (Some(7 * US), Some(7 * US), Some(7 * US))
                );
            }
        }
        h.assert_all_delivered();
        assert_eq!(h.irqs.last().map(|&(_, irq)| irq), Some(Irq::Full));
    }
}

#[test]
fn waiting_strict_barrier_is_still_delivered_within_delta() {
    let mut h = Harness::new(cint(true, BarrierMode::Strict), 0);
    let slow = h.submit(Hint::Unmarked);
    let bar = h.submit(Hint::Barrier);
    h.complete(bar);
    h.advance(DELTA);
    assert_eq!(h.records[bar as usize].delivered, Some(DELTA));
    // The barrier IRQ still fires when its predecessor completes.
    h.advance(1_000 * US);
    h.complete(slow);
    assert_eq!(
        h.irqs,
        vec![(DELTA, Irq::Full), (DELTA + 1_000 * US, Irq::Full)]
    );
    h.assert_all_delivered();
}

#[test]
fn strict_barrier_overflow_degrades_to_relaxed() {
    let mut p = cint(true, BarrierMode::Strict);
    let first = p.on_submit(0, Hint::Unmarked);
    let bars: Vec<_> = (0..=STRICT_BARRIER_CAPACITY)
        .map(|_| p.on_submit(0, Hint::Barrier))
        .collect();
    assert_eq!(p.tracked_barriers(), STRICT_BARRIER_CAPACITY);
    assert_eq!(p.strict_overflows(), 1);
    // The untracked one fires at once although `first` is in flight.
    let last = *bars.last().unwrap();
    assert_eq!(p.on_complete(1, last, Hint::Barrier), Decision::FULL);
    // A tracked one waits.
    assert_eq!(p.on_complete(2, bars[0], Hint::Barrier), Decision::Hold);
    assert_eq!(p.on_complete(3, first, Hint::Unmarked), Decision::FULL);
}

#[test]
fn urgent_stream_cannot_starve_coalesced_completions() {
    // Urgent completions restart the quiescence interval without being
    // counted; the delta * thr cap still delivers the unmarked one.
    let mut h = Harness::new(cint(true, BarrierMode::Relaxed), 0);
    let slow = h.submit(Hint::Unmarked);
    h.complete(slow);
    for _ in 0..100 {
        h.advance(DELTA / 2);
        let u = h.submit(Hint::Urgent);
        h.complete(u);
    }
    let max_wait = DELTA * u64::from(THR);
    assert_eq!(h.records[slow as usize].delivered, Some(max_wait));
    h.assert_all_delivered();
}

// ------------------------------------------------------------ storm guard --

#[test]
fn storm_guard_engages_in_a_storm_and_lets_go_after_one_long_gap() {
    let rate = 100_000; // T = 10 us
    let params = CinterruptsParams {
        max_irq_rate: Some(rate),
        guard: StormGuardMode::Artifact,
        ..CinterruptsParams::with_adaptive(DELTA, 32)
    };
    let mut p = Cinterrupts::new(params, 0).unwrap();
    let mut now = 0;
    let mut immediate = 0;
    while !p.storm_guard_active() {
        now += 1 * US;
        let s = p.on_submit(now, Hint::Urgent);
        if p.on_complete(now, s, Hint::Urgent) == Decision::URGENT_ONLY {
            immediate += 1;
        }
        assert!(immediate < 200, "guard never engaged");
    }
    // From 2 T down under T at 0.1 T per sample: about 100 samples.
    assert!((90..=110).contains(&immediate), "{immediate}");
    // Engaged: an Urgent completion is coalesced.
    now += 1 * US;
    let s = p.on_submit(now, Hint::Urgent);
    assert_eq!(p.on_complete(now, s, Hint::Urgent), Decision::Hold);
    // Back-to-back completions drive the average to ~0; from there a gap
    // just short of 128 T keeps the guard on, and 128 T lifts it.
    for _ in 0..2_000 {
        let s = p.on_submit(now, Hint::Urgent);
        assert_ne!(p.on_complete(now, s, Hint::Urgent), Decision::URGENT_ONLY);
    }
    now += 127 * 10 * US;
    let s = p.on_submit(now, Hint::Urgent);
    let _ = p.on_complete(now, s, Hint::Urgent);
    assert!(p.storm_guard_active());
    now += 128 * 10 * US;
    let s = p.on_submit(now, Hint::Urgent);
    assert_eq!(p.on_complete(now, s, Hint::Urgent), Decision::URGENT_ONLY);
    assert!(!p.storm_guard_active());
}

#[test]
fn storm_guard_lets_go_when_a_storm_fades_below_the_allowed_rate() {
    let rate = 100_000; // T = 10 us
    let period = 10 * US;
    let params = CinterruptsParams {
        max_irq_rate: Some(rate),
        guard: StormGuardMode::Artifact,
        ..CinterruptsParams::with_adaptive(DELTA, 32)
    };
    let mut p = Cinterrupts::new(params, 0).unwrap();
    let mut now = 0;
    // A storm of back-to-back Urgent completions drives the average to ~0.
    for _ in 0..2_000 {
        now += 100;
        let s = p.on_submit(now, Hint::Urgent);
        let _ = p.on_complete(now, s, Hint::Urgent);
    }
    assert!(p.storm_guard_active());
    // The storm fades to half the allowed rate (one Urgent every 2 T):
    // the average climbs as 2 T (1 - (127/128)^n) and passes T after 89
    // samples. Until then hinted completions are coalesced; from then on
    // each fires at once again.
    let mut released_after = None;
    for n in 1..=200 {
        now += 2 * period;
        let s = p.on_submit(now, Hint::Urgent);
        let d = p.on_complete(now, s, Hint::Urgent);
        let _ = p.on_timer(now);
        match released_after {
            None if d == Decision::URGENT_ONLY => released_after = Some(n),
            None => assert!(p.storm_guard_active(), "held without the guard at {n}"),
            Some(_) => assert_eq!(d, Decision::URGENT_ONLY, "guard re-engaged at {n}"),
        }
    }
    let n = released_after.expect("the guard let go");
    assert!((85..=92).contains(&n), "released after {n} samples");
}

/// Four QD1 readers on a device that answers each read `SERVICE` after it
/// is submitted, staggered so that without a guard their Urgent
/// completions arrive every `SERVICE / 4` = 6.7 us (149 K/s); each reader
/// submits its next read the instant its completion is delivered.
/// Returns the harness after `DURATION`.
/// Also returns when the guard first engaged (if it did).
fn qd1_readers(params: CinterruptsParams) -> (Harness<Cinterrupts>, Option<Nanos>) {
    const READERS: u64 = 4;
    const SERVICE: Nanos = 26_800;
    const DURATION: Nanos = 20_000 * US;
    let mut h = Harness::new(Cinterrupts::new(params, 0).expect("valid parameters"), 0);
    let mut engaged = None;
    // (tag in flight, when the device completes it; None once completed)
    let mut readers: Vec<(u64, Option<Nanos>)> = (0..READERS)
        .map(|i| {
            (
                h.submit(Hint::Urgent),
                Some(SERVICE + i * SERVICE / READERS),
            )
        })
        .collect();
    loop {
        let next_completion = readers.iter().filter_map(|r| r.1).min();
        let next = match (next_completion, h.policy.next_deadline()) {
            (Some(c), Some(d)) => c.min(d),
            (c, d) => c.or(d).expect("a reader is always waiting for something"),
        };
        if next > DURATION {
            // Whatever the policy still holds is delivered by its deadline.
            h.drain(SEC);
            return (h, engaged);
        }
        h.advance_to(next);
        let now = h.now();
        for reader in &mut readers {
            if reader.1 == Some(now) {
                h.complete(reader.0);
                reader.1 = None;
            }
        }
        if engaged.is_none() && h.policy.storm_guard_active() {
            engaged = Some(now);
        }
        for reader in &mut readers {
            if reader.1.is_none() && h.records[reader.0 as usize].delivered.is_some() {
                *reader = (h.submit(Hint::Urgent), Some(now + SERVICE));
            }
        }
    }
}

fn qd1_guarded(guard: StormGuardMode) -> CinterruptsParams {
    CinterruptsParams {
        max_irq_rate: Some(100_000),
        guard,
        // The Optane reference parameters: a 6 us quiescence interval,
        // shorter than the 6.7 us between the readers' completions.
        ..CinterruptsParams::with_adaptive(6 * US, 32)
    }
}

/// Mean wait between arrival and delivery over every completion.
fn mean_wait(h: &Harness<Cinterrupts>) -> Nanos {
    let waits: Vec<Nanos> = h
        .records
        .iter()
        .filter_map(|r| Some(r.delivered? - r.arrived?))
        .collect();
    waits.iter().sum::<Nanos>() / waits.len() as Nanos
}

/// The trap of a quiescence-only retune: the readers' completions are
/// 6.7 us apart and `delta` is 6 us. The `rate` guard still groups them
/// (its window is `T` = 10 us from a group's first member), keeps its
/// interrupts `T` apart, holds no read more than `T`, and costs the
/// readers less waiting than the `artifact` guard, which makes every read
/// wait out the 6 us quiescence interval.
#[test]
fn rate_guard_groups_qd1_readers_that_quiescence_alone_would_not() {
    let period = 10 * US;
    let (unguarded, _) = qd1_readers(CinterruptsParams::with_adaptive(6 * US, 32));
    let completions =
        |h: &Harness<Cinterrupts>| h.records.iter().filter(|r| r.arrived.is_some()).count();
    assert_eq!(
        unguarded.irqs.len(),
        completions(&unguarded),
        "an IRQ per read"
    );
    assert!(
        completions(&unguarded) as u64 > 140_000 * 20 / 1_000,
        "149 K reads/s unguarded"
    );

    let (rate, engaged) = qd1_readers(qd1_guarded(StormGuardMode::Rate));
    rate.assert_all_delivered();
    assert!(rate.max_wait() <= period, "held {} > T", rate.max_wait());
    let engaged = engaged.expect("the guard engaged");
    assert!(rate.policy.storm_guard_active(), "the readers still storm");
    for pair in rate.irqs.windows(2) {
        let ((a, _), (b, _)) = (pair[0], pair[1]);
        assert!(b < engaged || b - a >= period, "IRQs at {a} and {b}");
    }
    let after: Vec<_> = rate.irqs.iter().filter(|&&(t, _)| t >= engaged).collect();
    let irq_rate = after.len() as u64 * SEC / (rate.now() - engaged);
    assert!(irq_rate <= 100_000, "{irq_rate} IRQ/s");
    let per_irq = completions(&rate) as f64 / rate.irqs.len() as f64;
    assert!(
        per_irq > 1.3,
        "{per_irq:.2} reads per IRQ: no groups formed"
    );

    let (artifact, _) = qd1_readers(qd1_guarded(StormGuardMode::Artifact));
    artifact.assert_all_delivered();
    assert!(
        mean_wait(&rate) < mean_wait(&artifact),
        "rate waits {} ns, artifact {} ns",
        mean_wait(&rate),
        mean_wait(&artifact)
    );
    assert!(completions(&rate) > completions(&artifact));
}

/// Worked example of the `rate` guard: once engaged, an Urgent completion
/// is held; the group fires when it reaches the retuned threshold and `T`
/// has passed since the last interrupt, or `T` after its first member.
#[test]
fn rate_guard_holds_urgent_completions_in_paced_groups() {
    let period = 10 * US;
    let params = CinterruptsParams {
        max_irq_rate: Some(100_000),
        ..CinterruptsParams::with_adaptive(DELTA, 32)
    };
    assert_eq!(params.guard, StormGuardMode::Rate, "rate is the default");
    let mut h = Harness::new(Cinterrupts::new(params, 0).unwrap(), 0);
    // A storm of Urgent completions every 5 us (200 K/s): two per T.
    while !h.policy.storm_guard_active() {
        h.advance(5 * US);
        let t = h.submit(Hint::Urgent);
        h.complete(t);
        assert!(h.now() < 10_000 * US, "guard never engaged");
    }
    let engaged = h.irqs.len();
    let last = h.irqs[engaged - 1].0;
    // The completion that engaged the guard is held.
    assert_eq!(h.policy.held_by_guard(), 1);
    // The next one, 2 us later, completes the group of two (T over an
    // average just under T, rounded up), but the group fires only T after
    // the previous interrupt.
    h.advance(2 * US);
    let t = h.submit(Hint::Urgent);
    h.complete(t);
    assert_eq!(h.irqs.len(), engaged, "fired before T had passed");
    h.advance(period);
    assert_eq!(h.irqs[engaged], (last + period, Irq::UrgentOnly));
    assert_eq!(h.policy.held_by_guard(), 0);
    // A lone held completion fires T after it arrived.
    h.advance(3 * US);
    let t = h.submit(Hint::Urgent);
    let arrived = h.now();
    h.complete(t);
    h.advance(20 * US);
    assert_eq!(h.records[t as usize].delivered, Some(arrived + period));
    // A Barrier in the group makes its interrupt a full one, which also
    // reaps unmarked entries.
    let u = h.submit(Hint::Unmarked);
    h.complete(u);
    h.advance(1 * US);
    let b = h.submit(Hint::Barrier);
    h.complete(b);
    h.advance(20 * US);
    assert_eq!(h.irqs.last().map(|&(_, irq)| irq), Some(Irq::Full));
    h.assert_all_delivered();
}
