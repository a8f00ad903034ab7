//! Property tests: random streams of submissions, completions in random
//! order, hints and time gaps, driven through the reference harness of
//! `common` (a policy, a completion queue with OOO reaping, a virtual
//! clock that serves every deadline on time), for every policy: none, nvme,
//! adaptive, cinterrupts (every mode), vIC (with the monitor's
//! opportunities) and scheduler-aware vIC (with the guest's schedule
//! changing during the stream). The harness panics on any entry delivered
//! twice; `assert_all_delivered` catches any never delivered.

mod common;

use cint_policy::adaptive::Adaptive;
use cint_policy::cinterrupts::Cinterrupts;
use cint_policy::config::{
    AdaptiveParams, BarrierMode, CinterruptsParams, NvmeParams, StormGuardMode, VicParams,
    VicSchedParams,
};
use cint_policy::none::NoCoalescing;
use cint_policy::nvme::NvmeAggregation;
use cint_policy::vic::Vic;
use cint_policy::vic_sched::VicSched;
use cint_policy::{GuestSchedule, Hint, Irq, Nanos, Policy, MS, SEC, US};
use common::{play, strategy, Harness, Op};
use proptest::prelude::*;

/// Gaps between steps: mostly around `delta`, sometimes far beyond it.
const SHORT_GAP: Nanos = 20 * US;
const LONG_GAP: Nanos = 2_000 * US;
/// Steps per stream.
const STREAM_LEN: usize = 300;
/// Spacing of the completions that empty the queue after a stream.
const TAIL_GAP: Nanos = 3 * US;

fn adaptive_params() -> impl Strategy<Value = AdaptiveParams> {
    (1..=30 * US, 1..=64u32).prop_map(|(delta, thr)| AdaptiveParams { delta, thr })
}

fn cinterrupts_params() -> impl Strategy<Value = CinterruptsParams> {
    (
        adaptive_params(),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(1_000..=2_000_000u64),
        guard_mode(),
    )
        .prop_map(
            |(adaptive, ooo, strict, max_irq_rate, guard)| CinterruptsParams {
                adaptive,
                ooo,
                barrier: if strict {
                    BarrierMode::Strict
                } else {
                    BarrierMode::Relaxed
                },
                max_irq_rate,
                guard,
            },
        )
}

fn guard_mode() -> impl Strategy<Value = StormGuardMode> {
    prop_oneof![Just(StormGuardMode::Rate), Just(StormGuardMode::Artifact)]
}

/// Checks the bounds of Algorithm 1 that adaptive and cinterrupts share:
/// every completion within `delta * thr` of its arrival, and within
/// `quiet` (`delta` for Algorithm 1) of the end of its stream.
fn assert_adaptive_bounds<P: Policy>(h: &mut Harness<P>, params: AdaptiveParams, quiet: Nanos) {
    let max_wait = params.delta * Nanos::from(params.thr);
    h.drain(max_wait + 1);
    h.assert_all_delivered();
    assert!(
        h.max_wait() <= max_wait,
        "waited {} > delta * thr = {max_wait}",
        h.max_wait()
    );
    h.assert_delivered_by_stream_end(quiet);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn none_delivers_every_completion_once_at_arrival(
        ops in strategy::ops(STREAM_LEN, SHORT_GAP, LONG_GAP),
    ) {
        let mut h = Harness::new(NoCoalescing::new(), 0);
        play(&mut h, &ops, TAIL_GAP);
        h.assert_all_delivered();
        prop_assert_eq!(h.max_wait(), 0);
        prop_assert!(h.irqs.iter().all(|&(_, irq)| irq == Irq::Full));
    }

    #[test]
    fn nvme_delivers_every_completion_once_within_time(
        thr in 1..=256u32,
        time in 0..=200 * US,
        coalescing_disabled in any::<bool>(),
        ops in strategy::ops(STREAM_LEN, SHORT_GAP, LONG_GAP),
    ) {
        let params = NvmeParams { thr, time, coalescing_disabled };
        let policy = NvmeAggregation::new(params).expect("valid parameters");
        let off = policy.coalescing_off();
        let mut h = Harness::new(policy, 0);
        play(&mut h, &ops, TAIL_GAP);
        h.drain(time + 1);
        h.assert_all_delivered();
        let bound = if off { 0 } else { time };
        prop_assert!(h.max_wait() <= bound, "waited {} > {}", h.max_wait(), bound);
    }

    #[test]
    fn adaptive_delivers_every_completion_once_within_its_bounds(
        params in adaptive_params(),
        start in 0..=SEC,
        ops in strategy::ops(STREAM_LEN, SHORT_GAP, LONG_GAP),
    ) {
        let mut h = Harness::new(Adaptive::new(params, start).expect("valid parameters"), start);
        play(&mut h, &ops, TAIL_GAP);
        assert_adaptive_bounds(&mut h, params, params.delta);
    }

    #[test]
    fn cinterrupts_delivers_every_completion_once_within_adaptive_bounds(
        params in cinterrupts_params(),
        ops in strategy::ops(STREAM_LEN, SHORT_GAP, LONG_GAP),
    ) {
        let policy = Cinterrupts::new(params, 0).expect("valid parameters");
        // A hinted completion the `rate` guard holds may wait its window
        // after the stream ends, however short `delta` is.
        let quiet = match (params.max_irq_rate, params.guard) {
            (Some(_), StormGuardMode::Rate) => params.adaptive.delta.max(policy.guard_window()),
            _ => params.adaptive.delta,
        };
        let window = policy.guard_window();
        let mut h = Harness::new(policy, 0);
        play(&mut h, &ops, TAIL_GAP);
        assert_adaptive_bounds(&mut h, params.adaptive, quiet);
        if params.guard == StormGuardMode::Rate {
            // Urgent and relaxed Barrier completions wait for nothing but
            // the guard's group: at most `min(T, delta * thr)`.
            for r in &h.records {
                let (Some(arrived), Some(delivered)) = (r.arrived, r.delivered) else { continue };
                if r.hint == Hint::Urgent
                    || (r.hint == Hint::Barrier && params.barrier == BarrierMode::Relaxed)
                {
                    prop_assert!(delivered - arrived <= window, "{:?} waited {}", r.hint, delivered - arrived);
                }
            }
        }
        if !params.ooo {
            prop_assert!(h.irqs.iter().all(|&(_, irq)| irq == Irq::Full));
        }
    }

    #[test]
    fn cinterrupts_hints_fire_on_time_without_storm_guard(
        params in cinterrupts_params(),
        ops in strategy::ops(STREAM_LEN, SHORT_GAP, LONG_GAP),
    ) {
        let params = CinterruptsParams { max_irq_rate: None, ..params };
        let mut h = Harness::new(Cinterrupts::new(params, 0).expect("valid parameters"), 0);
        play(&mut h, &ops, TAIL_GAP);
        h.drain(params.adaptive.delta * Nanos::from(params.adaptive.thr) + 1);
        h.assert_all_delivered();
        for (tag, r) in h.records.iter().enumerate() {
            let (Some(arrived), Some(delivered)) = (r.arrived, r.delivered) else { continue };
            match (r.hint, params.barrier) {
                (Hint::Urgent, _) | (Hint::Barrier, BarrierMode::Relaxed) => {
                    prop_assert_eq!(delivered, arrived, "{:?} entry {} held", r.hint, tag);
                }
                (Hint::Barrier, BarrierMode::Strict) if h.policy.strict_overflows() == 0 => {
                    // At the instant the Barrier and everything submitted
                    // before it have completed, all of them are delivered.
                    let ready = h.records[..tag]
                        .iter()
                        .filter_map(|p| p.arrived)
                        .fold(arrived, Nanos::max);
                    for (p, earlier) in h.records[..=tag].iter().enumerate() {
                        prop_assert!(
                            earlier.delivered.is_some_and(|d| d <= ready),
                            "barrier {} ready at {}, entry {} delivered at {:?}",
                            tag, ready, p, earlier.delivered
                        );
                    }
                }
                _ => {}
            }
        }
    }
}

/// Storm guard, both modes, under a sustained storm of hinted completions.
///
/// Set-up: `T = 1e9 / max_irq_rate` (20 to 200 us); hinted completions
/// (Urgent or Barrier, at random) arrive one at a time every `T/100 ..=
/// T/4` (a storm 4 to 100 times the allowed rate); `thr` is at least 101,
/// so that a group of at most `thr` hinted completions can hold the rate.
/// The guard engages within `ONSET_MAX` hinted completions of the storm's
/// onset (from its initial `2 T`, samples of at most `T/4` take the
/// average under `T` once `2 (127/128)^n + 1/4 < 1`, i.e. after n = 126;
/// one more for fixed-point rounding).
///
/// * `artifact`: the adaptive fall-back is chosen so that it alone
///   respects the rate (`thr * T/100 >= T`, and `delta > T/4` so its
///   quiescence timer never fires mid-storm). After the first `CONVERGED`
///   completions, every window of `W = 10 T` that starts at an interrupt
///   contains at most `max_irq_rate * W = 10` interrupts; before that, at
///   most `10 + ONSET_MAX`.
/// * `rate`: any `delta` from `T/100` to `2 T` (so `delta * thr >= T`).
///   Every interrupt fired after the guard engaged comes at least `T`
///   after the previous one, so every window of `W = 10 T` that starts at
///   or after the engagement holds at most 10; and every completion is
///   delivered within `T`.
///
/// Release, in both modes: after the storm either one quiet gap of
/// `128 T` switches the guard off at once, or the storm fades to hinted
/// completions at least `2 T` apart and the guard lets go within
/// `RELEASE_MAX` of them (the average climbs as `2 T (1 - (127/128)^n)`
/// at least, and passes `T` after 89 samples; one more for rounding);
/// from then on every hinted completion gets its interrupt at arrival.
/// Throughout, the harness panics on a completion delivered twice, and
/// `assert_all_delivered` catches one never delivered.
mod storm {
    use super::*;

    const STORM_LEN: usize = 2_000;
    const CONVERGED: usize = 400;
    const WINDOW_PERIODS: u64 = 10;
    const ONSET_MAX: usize = 127;
    const RELEASE_MAX: usize = 90;
    const FADE_LEN: usize = 120;

    fn params(
        guard: StormGuardMode,
        max_irq_rate: u64,
        delta: Nanos,
        thr: u32,
        ooo: bool,
        strict: bool,
    ) -> CinterruptsParams {
        CinterruptsParams {
            adaptive: AdaptiveParams { delta, thr },
            ooo,
            barrier: if strict {
                BarrierMode::Strict
            } else {
                BarrierMode::Relaxed
            },
            max_irq_rate: Some(max_irq_rate),
            guard,
        }
    }

    /// Plays the storm; returns the instant the guard engaged and the
    /// instant of the `CONVERGED`-th completion.
    fn play_storm(
        h: &mut Harness<Cinterrupts>,
        storm: &[(u64, bool)],
        min_gap: Nanos,
    ) -> Result<(Nanos, Nanos), TestCaseError> {
        let mut converged_at = 0;
        let mut engaged = None;
        for (i, &(gap_steps, urgent)) in storm.iter().enumerate() {
            h.submit(if urgent { Hint::Urgent } else { Hint::Barrier });
            h.complete_nth(0);
            if engaged.is_none() && h.policy.storm_guard_active() {
                engaged = Some((i + 1, h.now()));
            }
            if i == CONVERGED {
                converged_at = h.now();
            }
            h.advance(min_gap * gap_steps);
        }
        prop_assert!(h.policy.storm_guard_active());
        let (after, engaged_at) = engaged.unwrap_or((usize::MAX, 0));
        prop_assert!(
            after <= ONSET_MAX,
            "the guard engaged only after {} hinted completions",
            after
        );
        Ok((engaged_at, converged_at))
    }

    /// Checks that at most `cap(t)` interrupts fall in `[t, t + window)`
    /// for every interrupt instant `t`.
    fn assert_windows(
        irqs: &[(Nanos, Irq)],
        window: Nanos,
        cap: impl Fn(Nanos) -> Option<u64>,
    ) -> Result<(), TestCaseError> {
        let all: Vec<Nanos> = irqs.iter().map(|&(t, _)| t).collect();
        for (i, &t) in all.iter().enumerate() {
            let Some(cap) = cap(t) else { continue };
            let in_window = all[i..].partition_point(|&u| u < t + window);
            prop_assert!(
                in_window as u64 <= cap,
                "{} IRQs in [{}, {})",
                in_window,
                t,
                t + window
            );
        }
        Ok(())
    }

    /// The storm ends: a quiet `128 T` (`quiet`) or a fade to hinted
    /// completions `fade` apart (each at least `2 T`). Checks the release
    /// and that everything is delivered once.
    fn assert_release(
        h: &mut Harness<Cinterrupts>,
        period: Nanos,
        quiet: bool,
        fade: &[u64],
    ) -> Result<(), TestCaseError> {
        if quiet {
            h.advance(128 * period);
        }
        let mut released_after = None;
        for (n, &gap_periods) in fade.iter().enumerate() {
            let hint = if n % 2 == 0 {
                Hint::Urgent
            } else {
                Hint::Barrier
            };
            let tag = h.submit(hint);
            h.complete(tag);
            let r = h.records[tag as usize];
            if released_after.is_none() && !h.policy.storm_guard_active() {
                released_after = Some(n + 1);
            }
            if released_after.is_some() {
                prop_assert!(!h.policy.storm_guard_active(), "the guard engaged again");
                prop_assert_eq!(r.delivered, r.arrived, "{:?} held after the release", hint);
            }
            h.advance(gap_periods * period);
        }
        let released_after = released_after.unwrap_or(usize::MAX);
        let bound = if quiet { 1 } else { RELEASE_MAX };
        prop_assert!(
            released_after <= bound,
            "released after {} hinted completions (quiet gap: {})",
            released_after,
            quiet
        );
        let max_wait =
            h.policy.params().adaptive.delta * Nanos::from(h.policy.params().adaptive.thr);
        h.drain(max_wait + 1);
        h.assert_all_delivered();
        prop_assert!(h.max_wait() <= max_wait);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn artifact_guard_caps_the_irq_rate_and_lets_go_after_the_storm(
            max_irq_rate in 5_000..=50_000u64,
            thr_extra in 0..=100u32,
            delta_frac in 0.0..1.0f64,
            ooo in any::<bool>(),
            strict in any::<bool>(),
            storm in proptest::collection::vec((1..=25u64, any::<bool>()), STORM_LEN),
            quiet in any::<bool>(),
            fade in proptest::collection::vec(2..=8u64, FADE_LEN),
        ) {
            let period = SEC / max_irq_rate;
            let min_gap = period / 100;
            let max_gap = period / 4;
            let thr = 101 + thr_extra;
            let delta = max_gap + 1 + ((period - max_gap) as f64 * delta_frac) as Nanos;
            let params = params(StormGuardMode::Artifact, max_irq_rate, delta, thr, ooo, strict);
            let mut h = Harness::new(Cinterrupts::new(params, 0).expect("valid parameters"), 0);
            let (_, converged_at) = play_storm(&mut h, &storm, min_gap)?;
            assert_windows(&h.irqs, WINDOW_PERIODS * period, |t| {
                Some(if t >= converged_at {
                    WINDOW_PERIODS
                } else {
                    WINDOW_PERIODS + ONSET_MAX as u64
                })
            })?;
            assert_release(&mut h, period, quiet, &fade)?;
        }

        #[test]
        fn rate_guard_spaces_its_irqs_by_the_period_and_lets_go_after_the_storm(
            max_irq_rate in 5_000..=50_000u64,
            thr_extra in 0..=100u32,
            delta_frac in 0.0..1.0f64,
            ooo in any::<bool>(),
            strict in any::<bool>(),
            storm in proptest::collection::vec((1..=25u64, any::<bool>()), STORM_LEN),
            quiet in any::<bool>(),
            fade in proptest::collection::vec(2..=8u64, FADE_LEN),
        ) {
            let period = SEC / max_irq_rate;
            let min_gap = period / 100;
            let thr = 101 + thr_extra;
            let delta = min_gap + ((2 * period - min_gap) as f64 * delta_frac) as Nanos;
            let params = params(StormGuardMode::Rate, max_irq_rate, delta, thr, ooo, strict);
            let mut h = Harness::new(Cinterrupts::new(params, 0).expect("valid parameters"), 0);
            prop_assert_eq!(h.policy.guard_window(), period);
            let (engaged_at, _) = play_storm(&mut h, &storm, min_gap)?;
            for pair in h.irqs.windows(2) {
                let ((a, _), (b, _)) = (pair[0], pair[1]);
                if b >= engaged_at {
                    prop_assert!(b - a >= period, "IRQs at {} and {}, T = {}", a, b, period);
                }
            }
            assert_windows(&h.irqs, WINDOW_PERIODS * period, |t| {
                (t >= engaged_at).then_some(WINDOW_PERIODS)
            })?;
            prop_assert!(h.max_wait() <= period, "waited {} > T = {}", h.max_wait(), period);
            assert_release(&mut h, period, quiet, &fade)?;
        }
    }
}

/// vIC holds completions with no deadline of its own; the monitor's
/// opportunities (guest exits, its periodic timer) deliver them. Random
/// parameters include the ones that make it hold most (CIF threshold 1, no
/// IOPS floor, short epochs) and both Xen quirks.
mod vic {
    use super::*;

    /// Longest monitor period tried.
    const MAX_PERIOD: Nanos = 2 * MS;

    fn vic_params() -> impl Strategy<Value = VicParams> {
        (
            1..=8u32,
            0..=50_000u64,
            1..=200 * US,
            any::<bool>(),
            proptest::option::of(1..=20u32),
        )
            .prop_map(|(cif_threshold, iops_threshold, epoch, reset, failsafe)| {
                VicParams {
                    cif_threshold,
                    iops_threshold,
                    epoch,
                    ipi_threshold: 100 * US,
                    quirk_reset_on_skip: reset,
                    quirk_failsafe: failsafe,
                }
            })
    }

    /// A step of a stream seen by scheduler-aware vIC: the usual stream,
    /// or the guest's scheduling state changing.
    #[derive(Clone, Copy, Debug)]
    enum Step {
        Io(Op),
        /// The guest is running (or not), with this much of its slice left
        /// (negative: past its end; `None`: unknown).
        Schedule {
            running: bool,
            slice_left: Option<i64>,
        },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            12 => strategy::op(20 * US, MAX_PERIOD).prop_map(Step::Io),
            1 => (any::<bool>(), proptest::option::of(-100 * US as i64..=3 * MS as i64))
                .prop_map(|(running, slice_left)| Step::Schedule { running, slice_left }),
        ]
    }

    fn schedule_at(now: Nanos, running: bool, slice_left: Option<i64>) -> GuestSchedule {
        GuestSchedule {
            running,
            slice_end: slice_left.map(|left| now.saturating_add_signed(left)),
        }
    }

    /// Plays `steps`, then completes what is left, then lets the monitor
    /// deliver; returns the harness for checks.
    fn play_steps<P: Policy>(policy: P, period: Nanos, steps: &[Step]) -> Harness<P> {
        let mut h = Harness::new(policy, 0).with_opportunities(period);
        for &s in steps {
            match s {
                Step::Io(Op::Submit(hint)) => {
                    h.submit(hint);
                }
                Step::Io(Op::Complete(i)) => {
                    h.complete_nth(i);
                }
                Step::Io(Op::Gap(g)) => h.advance(g),
                Step::Schedule {
                    running,
                    slice_left,
                } => {
                    let now = h.now();
                    h.policy
                        .on_schedule(now, schedule_at(now, running, slice_left));
                }
            }
        }
        while h.complete_nth(0).is_some() {
            h.advance(TAIL_GAP);
        }
        h.drain(2 * period);
        h
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn vic_delivers_every_completion_once_by_the_next_opportunity(
            params in vic_params(),
            period in 10 * US..=MAX_PERIOD,
            ops in strategy::ops(STREAM_LEN, SHORT_GAP, MAX_PERIOD),
        ) {
            let steps: Vec<Step> = ops.into_iter().map(Step::Io).collect();
            let h = play_steps(Vic::new(params, 0).expect("valid parameters"), period, &steps);
            h.assert_all_delivered();
            prop_assert!(h.max_wait() <= period, "waited {} > period {}", h.max_wait(), period);
            prop_assert!(h.irqs.iter().all(|&(_, irq)| irq == Irq::Full));
        }

        #[test]
        fn vic_sched_delivers_every_completion_once_across_schedule_changes(
            params in vic_params(),
            margin in 0..=50 * US,
            period in 10 * US..=MAX_PERIOD,
            steps in proptest::collection::vec(step(), 0..=STREAM_LEN),
        ) {
            let sched = VicSchedParams { vic: params, clock_margin: margin };
            let h = play_steps(VicSched::new(sched, 0).expect("valid parameters"), period, &steps);
            h.assert_all_delivered();
            prop_assert!(h.max_wait() <= period, "waited {} > period {}", h.max_wait(), period);
            let completions = h.records.iter().filter(|r| r.arrived.is_some()).count() as u64;
            prop_assert!(h.policy.bypasses() <= completions);
        }

        /// The bypass is the only difference: a guest that is not running,
        /// or whose slice end is unknown, sees exactly plain vIC's
        /// interrupts.
        #[test]
        fn vic_sched_without_a_known_running_slice_is_plain_vic(
            params in vic_params(),
            margin in 0..=50 * US,
            period in 10 * US..=MAX_PERIOD,
            steps in proptest::collection::vec(step(), 0..=STREAM_LEN),
        ) {
            let steps: Vec<Step> = steps
                .into_iter()
                .map(|s| match s {
                    Step::Schedule { running: true, .. } => Step::Schedule {
                        running: true,
                        slice_left: None,
                    },
                    other => other,
                })
                .collect();
            let sched = VicSchedParams { vic: params, clock_margin: margin };
            let with_sched =
                play_steps(VicSched::new(sched, 0).expect("valid parameters"), period, &steps);
            let plain = play_steps(Vic::new(params, 0).expect("valid parameters"), period, &steps);
            prop_assert_eq!(with_sched.policy.bypasses(), 0);
            prop_assert_eq!(&with_sched.irqs, &plain.irqs);
            prop_assert_eq!(&with_sched.records, &plain.records);
        }
    }
}
