//! vIC (docs/ALGORITHMS.md section 6) and scheduler-aware vIC (section 7): the worked
//! sequences, the ratio table for every CIF, epoch and IOPS rules, the IPI
//! rule, the Xen quirks, the slice-end bypass and its fall-backs, and bad
//! parameters. Exactly-once delivery over random streams is in
//! `properties.rs`, with every other policy.

use std::collections::VecDeque;

use cint_policy::config::{VicParams, VicSchedParams, MAX_DURATION};
use cint_policy::vic::{div_shift_subtract, ratio_for, Vic};
use cint_policy::vic_sched::VicSched;
use cint_policy::{
    Decision, GuestSchedule, Hint, Nanos, Policy, PolicyConfig, PolicyError, Seq, MS, US,
};

/// A closed loop: every completion is immediately replaced by a new
/// submission, so each completion sees `depth - 1` other commands in flight.
struct ClosedLoop<P: Policy> {
    policy: P,
    queue: VecDeque<Seq>,
    now: Nanos,
    depth: usize,
}

impl<P: Policy> ClosedLoop<P> {
    fn new(policy: P, depth: usize) -> Self {
        let mut l = ClosedLoop {
            policy,
            queue: VecDeque::new(),
            now: 0,
            depth,
        };
        l.refill();
        l
    }

    fn refill(&mut self) {
        while self.queue.len() < self.depth {
            let seq = self.policy.on_submit(self.now, Hint::Unmarked);
            self.queue.push_back(seq);
        }
    }

    /// Advances by `gap`, completes the oldest request, refills the loop.
    fn step(&mut self, gap: Nanos) -> Decision {
        self.now += gap;
        let seq = self.queue.pop_front().expect("loop is never empty");
        let decision = self.policy.on_complete(self.now, seq, Hint::Unmarked);
        self.refill();
        decision
    }

    /// Runs `n` completions `gap` apart; returns how many were delivered.
    fn run(&mut self, n: usize, gap: Nanos) -> usize {
        (0..n).filter(|_| self.step(gap) == Decision::FULL).count()
    }
}

/// The ratio table of docs/ALGORITHMS.md section 6 at the default `cif_threshold` (4),
/// written out independently of the library.
fn expected_default_ratio(cif: u32) -> (u32, u32) {
    match cif {
        0..=3 => (1, 1),
        4..=7 => (4, 5),
        8..=11 => (3, 4),
        12..=15 => (2, 3),
        _ => (1, cif / 8),
    }
}

/// vIC whose rate never counts as low, one-millisecond epochs.
fn fast_params() -> VicParams {
    VicParams {
        iops_threshold: 0,
        epoch: MS,
        ..VicParams::default()
    }
}

/// A closed loop of `cif + 1` on vIC whose first epoch just ended, so the
/// ratio is the table's for `cif`.
fn vic_loop_at(cif: u32, params: VicParams) -> ClosedLoop<Vic> {
    let vic = Vic::new(params, 0).expect("valid parameters");
    let mut l = ClosedLoop::new(vic, cif as usize + 1);
    // The first completion, one epoch in, recomputes the ratio.
    l.now = params.epoch - 1;
    l
}

/// Plays completions one at a time and returns `(counter before, delivered)`.
fn trace(l: &mut ClosedLoop<Vic>, n: usize) -> Vec<(u32, bool)> {
    (0..n)
        .map(|_| {
            let counter = l.policy.counter();
            (counter, l.step(1) == Decision::FULL)
        })
        .collect()
}

#[test]
fn worked_sequence_three_quarters() {
    let mut l = vic_loop_at(8, fast_params());
    let seq = trace(&mut l, 8);
    assert_eq!(l.policy.ratio(), (3, 4));
    let cycle = [(1, true), (2, true), (3, false), (4, true)];
    assert_eq!(seq[..4], cycle);
    assert_eq!(seq[4..], cycle);
}

#[test]
fn worked_sequence_one_fifth() {
    // CIF 40 / (2 * 4) = 5: ratio 1/5.
    let mut l = vic_loop_at(40, fast_params());
    // The first completion recomputes at counter 1 and is (1, no).
    let seq = trace(&mut l, 10);
    assert_eq!(l.policy.ratio(), (1, 5));
    let cycle = [(1, false), (2, false), (3, false), (4, false), (5, true)];
    assert_eq!(seq[..5], cycle);
    assert_eq!(seq[5..], cycle);
}

#[test]
fn ratio_table_for_every_cif_at_the_default_threshold() {
    for cif in 1..=128u32 {
        assert_eq!(ratio_for(cif, 4), expected_default_ratio(cif), "cif {cif}");
    }
}

#[test]
fn every_cif_delivers_count_up_of_every_skip_up_with_default_params() {
    let params = VicParams::default();
    for cif in 1..=128u32 {
        let vic = Vic::new(params, 0).expect("default parameters are valid");
        let mut l = ClosedLoop::new(vic, cif as usize + 1);
        // 10 000 IO/s, well above the 2 000 IO/s threshold, for one epoch:
        // everything is delivered until the first recompute.
        let warm = (params.epoch / (100 * US)) as usize - 1;
        assert_eq!(l.run(warm, 100 * US), warm, "cif {cif}: before the epoch");
        assert_eq!(l.policy.ratio(), (1, 1));
        let (count_up, skip_up) = expected_default_ratio(cif);
        let cycles = 3;
        let delivered = l.run(skip_up as usize * cycles, 100 * US);
        assert_eq!(l.policy.ratio(), (count_up, skip_up), "cif {cif}");
        assert_eq!(delivered, count_up as usize * cycles, "cif {cif}");
    }
}

#[test]
fn ratio_for_other_thresholds_and_extremes() {
    assert_eq!(ratio_for(0, 1), (1, 1));
    assert_eq!(ratio_for(1, 1), (4, 5));
    assert_eq!(ratio_for(4, 1), (1, 2));
    assert_eq!(ratio_for(7, 2), (2, 3));
    assert_eq!(ratio_for(9, 2), (1, 2));
    assert_eq!(ratio_for(u32::MAX, 1), (1, u32::MAX / 2));
    assert_eq!(ratio_for(u32::MAX, 1 << 20), (1, u32::MAX / (2 << 20)));
    // A zero threshold (rejected by the constructor) reads as 1.
    assert_eq!(ratio_for(3, 0), ratio_for(3, 1));
    for (n, d) in [(1000u64, 7u64), (u64::MAX, 3), (12345, 12345), (1, 2)] {
        assert_eq!(div_shift_subtract(n, d), n / d);
    }
}

#[test]
fn ratio_is_recomputed_at_most_once_per_epoch() {
    let params = VicParams::default(); // epoch 200 ms
    let mut l = ClosedLoop::new(Vic::new(params, 0).expect("valid"), 20);
    // 1999 completions 100 us apart: t = 199.9 ms, still the first epoch.
    l.run(1999, 100 * US);
    assert_eq!(l.policy.ratio(), (1, 1));
    // t = 200 ms: CIF 19 -> 1 / (19 / 8) = 1/2.
    let _ = l.step(100 * US);
    assert_eq!(l.policy.ratio(), (1, 2));
    // Lower the depth to 9 (CIF 8 -> 3/4): the ratio waits for the epoch.
    l.depth = 9;
    while l.queue.len() > 9 {
        let _ = l.step(100 * US);
    }
    let epoch_start = 200 * MS;
    while l.now + 100 * US < epoch_start + params.epoch {
        let _ = l.step(100 * US);
        assert_eq!(l.policy.ratio(), (1, 2), "recomputed early at {}", l.now);
    }
    let _ = l.step(100 * US);
    assert_eq!(l.now, epoch_start + params.epoch);
    assert_eq!(l.policy.ratio(), (3, 4));
    let rate = l.policy.last_rate().expect("an epoch has finished");
    assert_eq!(rate.elapsed, params.epoch);
    // Completions at [200, 400) ms, 100 us apart: the one that opens an
    // epoch counts in it, the one at 400 ms opens the next.
    assert_eq!(rate.completions, 2000);
}

#[test]
fn low_iops_delivers_everything_and_the_threshold_is_exclusive() {
    let params = VicParams {
        iops_threshold: 2_000,
        epoch: 200 * MS,
        ..VicParams::default()
    };
    // 400 completions in exactly 200 ms is 2000 IO/s: not below.
    // 399 is below: ratio 1/1 even at CIF 40.
    for (completions, expected) in [(400u64, (1, 5)), (399, (1, 1))] {
        let mut l = ClosedLoop::new(Vic::new(params, 0).expect("valid"), 41);
        l.run(completions as usize, US);
        // Jump to the end of the epoch: this completion opens the next one.
        l.now = params.epoch - 1;
        let _ = l.step(1);
        assert_eq!(l.policy.ratio(), expected, "{completions} completions");
    }
    // A slow loop at high CIF delivers every completion.
    let mut l = ClosedLoop::new(Vic::new(params, 0).expect("valid"), 64);
    let delivered = l.run(1000, MS); // 1000 IO/s
    assert_eq!(delivered, 1000);
}

#[test]
fn low_cif_always_delivers_and_queue_depth_one_never_waits() {
    // QD 1: CIF after removing the completing command is 0.
    let mut l = ClosedLoop::new(Vic::new(fast_params(), 0).expect("valid"), 1);
    assert_eq!(l.run(10_000, US), 10_000);
    // cif_threshold 1 is the smallest: QD 1 still always delivers.
    let params = VicParams {
        cif_threshold: 1,
        ..fast_params()
    };
    let mut l = ClosedLoop::new(Vic::new(params, 0).expect("valid"), 1);
    assert_eq!(l.run(10_000, US), 10_000);
}

#[test]
fn held_completions_go_out_with_the_next_delivery_or_opportunity() {
    let mut l = vic_loop_at(40, fast_params()); // 1/5
    assert_eq!(l.step(1), Decision::Hold);
    assert_eq!(l.step(1), Decision::Hold);
    assert_eq!(l.policy.held(), 2);
    assert_eq!(l.policy.next_deadline(), None);
    assert_eq!(l.policy.on_timer(l.now + MS), Decision::Hold);
    let at = l.now + 5 * MS;
    assert_eq!(l.policy.on_opportunity(at), Decision::FULL);
    assert_eq!(l.policy.held(), 0);
    assert_eq!(l.policy.last_delivery(), Some(at));
    // Nothing held: the monitor's run changes nothing.
    assert_eq!(l.policy.on_opportunity(at + MS), Decision::Hold);
    assert_eq!(l.policy.last_delivery(), Some(at));
}

#[test]
fn ipi_only_after_the_threshold() {
    let mut vic = Vic::new(VicParams::default(), 0).expect("valid");
    assert!(vic.ipi_needed(0), "no delivery yet: the guest must be told");
    let seq = vic.on_submit(0, Hint::Unmarked);
    assert_eq!(
        vic.on_complete(10 * US, seq, Hint::Unmarked),
        Decision::FULL
    );
    assert_eq!(vic.last_delivery(), Some(10 * US));
    assert!(!vic.ipi_needed(10 * US));
    assert!(!vic.ipi_needed(110 * US), "exactly the threshold: no IPI");
    assert!(vic.ipi_needed(110 * US + 1));
    let zero = VicParams {
        ipi_threshold: 0,
        ..VicParams::default()
    };
    let mut vic = Vic::new(zero, 0).expect("valid");
    let seq = vic.on_submit(0, Hint::Unmarked);
    let _ = vic.on_complete(5, seq, Hint::Unmarked);
    assert!(!vic.ipi_needed(5));
    assert!(vic.ipi_needed(6));
}

#[test]
fn quirk_reset_on_skip_lowers_the_ratios() {
    let quirky = VicParams {
        quirk_reset_on_skip: true,
        ..fast_params()
    };
    // Table ratio -> real ratio with the quirk (docs/VIRT.md).
    for (cif, real) in [(4, (3, 4)), (8, (2, 3)), (12, (1, 2))] {
        let mut l = vic_loop_at(cif, quirky);
        let delivered = l.run(real.1 * 10, 1);
        assert_eq!(delivered, real.0 * 10, "cif {cif}");
    }
    // 1/n: the counter never reaches skip_up, nothing is delivered.
    let mut l = vic_loop_at(16, quirky);
    assert_eq!(l.run(1000, 1), 0);
    assert_eq!(l.policy.held(), 1000);
    assert_eq!(l.policy.on_opportunity(l.now), Decision::FULL);
}

#[test]
fn quirk_failsafe_bounds_consecutive_holds() {
    let failsafe = VicParams {
        quirk_failsafe: Some(16),
        ..fast_params()
    };
    // CIF 128: ratio 1/16, 15 holds per delivery: the failsafe never trips.
    let mut l = vic_loop_at(128, failsafe);
    assert_eq!(l.run(160, 1), 10);
    // With the reset quirk nothing would be delivered; the failsafe lets
    // one out after every 16 suppressed.
    let both = VicParams {
        quirk_reset_on_skip: true,
        ..failsafe
    };
    let mut l = vic_loop_at(128, both);
    let pattern: Vec<bool> = (0..34).map(|_| l.step(1) == Decision::FULL).collect();
    let expected: Vec<bool> = (0..34).map(|i| i % 17 == 16).collect();
    assert_eq!(pattern, expected);
}

#[test]
fn bad_parameters_are_typed_errors() {
    let cases = [
        (
            VicParams {
                cif_threshold: 0,
                ..VicParams::default()
            },
            "cif_threshold",
        ),
        (
            VicParams {
                epoch: 0,
                ..VicParams::default()
            },
            "epoch",
        ),
        (
            VicParams {
                ipi_threshold: MAX_DURATION + 1,
                ..VicParams::default()
            },
            "ipi_threshold",
        ),
        (
            VicParams {
                quirk_failsafe: Some(0),
                ..VicParams::default()
            },
            "quirk_failsafe",
        ),
    ];
    for (params, name) in cases {
        match Vic::new(params, 0) {
            Err(PolicyError::OutOfRange { param, .. }) => assert_eq!(param, name),
            other => panic!("{name}: expected OutOfRange, got {other:?}"),
        }
        let sched = VicSchedParams {
            vic: params,
            ..VicSchedParams::default()
        };
        assert!(matches!(
            VicSched::new(sched, 0),
            Err(PolicyError::OutOfRange { param, .. }) if param == name
        ));
        assert!(PolicyConfig::Vic(params).build(0).is_err());
    }
    let sched = VicSchedParams {
        clock_margin: MAX_DURATION + 1,
        ..VicSchedParams::default()
    };
    assert!(matches!(
        VicSched::new(sched, 0),
        Err(PolicyError::OutOfRange {
            param: "clock_margin",
            ..
        })
    ));
}

#[test]
fn any_policy_exposes_the_vic_state() {
    let p = PolicyConfig::Vic(VicParams::default())
        .build(0)
        .expect("valid");
    assert_eq!(p.vic().map(Vic::ratio), Some((1, 1)));
    let p = PolicyConfig::VicSched(VicSchedParams::default())
        .build(0)
        .expect("valid");
    assert_eq!(p.vic().map(|v| v.params().iops_threshold), Some(100));
}

// ---- scheduler-aware vIC ----

/// Scheduler-aware vIC with 1 ms epochs, a 5 us clock margin, and a closed
/// loop of `depth` completing every 10 us for one epoch: the last epoch's
/// rate is 99 completions per ms (one per ~10.1 us).
fn sched_loop(depth: usize) -> ClosedLoop<VicSched> {
    let params = VicSchedParams {
        vic: VicParams {
            iops_threshold: 100,
            epoch: MS,
            ..VicParams::default()
        },
        clock_margin: 5 * US,
    };
    let mut l = ClosedLoop::new(VicSched::new(params, 0).expect("valid"), depth);
    l.run(100, 10 * US);
    let rate = l.policy.vic().last_rate().expect("one epoch finished");
    assert_eq!((rate.completions, rate.elapsed), (99, MS));
    l
}

/// Steps the loop until vIC alone would hold the next completion.
fn until_vic_would_hold(l: &mut ClosedLoop<VicSched>) {
    let (count_up, _) = l.policy.vic().ratio();
    while l.policy.vic().counter() < count_up {
        let _ = l.step(US);
    }
}

fn running_until(slice_end: Nanos) -> GuestSchedule {
    GuestSchedule {
        running: true,
        slice_end: Some(slice_end),
    }
}

#[test]
fn io_per_event_follows_the_ratio() {
    for ((count_up, skip_up), expected) in [
        ((1, 1), 2),
        ((4, 5), 2),
        ((3, 4), 2),
        ((2, 3), 2),
        ((1, 2), 2),
        ((1, 3), 3),
        ((1, 16), 16),
    ] {
        assert_eq!(VicSched::io_per_event(count_up, skip_up), expected);
    }
}

#[test]
fn bypass_near_the_slice_end() {
    // CIF 11: ratio 3/4, io_per_event 2, ns_per_event ~20.2 us.
    let mut l = sched_loop(12);
    assert_eq!(l.policy.vic().ratio(), (3, 4));
    until_vic_would_hold(&mut l);
    let next = l.now + US;
    l.policy.on_schedule(l.now, running_until(next + 15 * US));
    assert_eq!(l.step(US), Decision::FULL);
    assert_eq!(l.policy.bypasses(), 1);
    assert_eq!(l.policy.vic().held(), 0);
    assert_eq!(l.policy.vic().last_delivery(), Some(next));
}

#[test]
fn no_bypass_with_plenty_of_slice_left_or_inside_the_clock_margin() {
    for remaining in [30 * US, 3 * US, 21 * US] {
        let mut l = sched_loop(12);
        until_vic_would_hold(&mut l);
        let next = l.now + US;
        l.policy.on_schedule(l.now, running_until(next + remaining));
        assert_eq!(l.step(US), Decision::Hold, "remaining {remaining}");
        assert_eq!(l.policy.bypasses(), 0);
    }
}

#[test]
fn lower_ratios_widen_the_bypass_window() {
    // CIF 40: 1/5, io_per_event 5, ns_per_event ~50.5 us: 30 us left is
    // within one expected gap, 60 us is not.
    for (remaining, expected) in [(30 * US, Decision::FULL), (60 * US, Decision::Hold)] {
        let mut l = sched_loop(41);
        assert_eq!(l.policy.vic().ratio(), (1, 5));
        // The completion after the recompute is counter 2: vIC holds.
        let next = l.now + US;
        l.policy.on_schedule(l.now, running_until(next + remaining));
        assert_eq!(l.step(US), expected, "remaining {remaining}");
    }
}

#[test]
fn plain_vic_when_not_running_past_the_slice_or_unknown() {
    let schedules = [
        GuestSchedule {
            running: false,
            slice_end: Some(Nanos::MAX),
        },
        GuestSchedule {
            running: true,
            slice_end: None,
        },
        GuestSchedule::default(),
    ];
    for schedule in schedules {
        let mut l = sched_loop(12);
        until_vic_would_hold(&mut l);
        let mut s = schedule;
        if s.slice_end == Some(Nanos::MAX) {
            s.slice_end = Some(l.now + 10 * US);
        }
        l.policy.on_schedule(l.now, s);
        assert_eq!(l.step(US), Decision::Hold, "{s:?}");
    }
    // At and past the slice end the guest runs on: plain vIC.
    for past in [0, 7 * US] {
        let mut l = sched_loop(12);
        until_vic_would_hold(&mut l);
        let next = l.now + US;
        l.policy.on_schedule(l.now, running_until(next - past));
        assert_eq!(l.step(US), Decision::Hold, "{past} ns past the end");
        assert_eq!(l.policy.bypasses(), 0);
    }
}

#[test]
fn no_bypass_before_any_rate_is_known() {
    let params = VicSchedParams {
        clock_margin: 0,
        ..VicSchedParams::default()
    };
    let mut l = ClosedLoop::new(VicSched::new(params, 0).expect("valid"), 16);
    l.policy.on_schedule(0, running_until(MS));
    // Ratio 1/1 in the first epoch: delivered by vIC, not by the bypass.
    assert_eq!(l.run(50, US), 50);
    assert_eq!(l.policy.bypasses(), 0);
}
