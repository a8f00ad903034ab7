//! The C ABI under hostile input: random call sequences with random
//! sequence numbers (including repeats and never-issued ones), hint bits,
//! time steps (including backwards) and null pointers never abort, never
//! hit the internal-error path, and answer with the documented codes; a
//! completion is accepted exactly when its request is in flight, so none
//! reaches a policy twice.

use std::collections::BTreeSet;
use std::ptr;

use cint_policy_ffi::*;
use proptest::prelude::*;

fn fresh() -> Box<cint_policy> {
    Box::new(cint_policy {
        opaque: [0; CINT_POLICY_WORDS],
    })
}

/// The vIC defaults, as the ABI hands them out.
fn vic_defaults() -> cint_vic_params {
    let mut params = cint_vic_params {
        cif_threshold: 0,
        iops_threshold: 0,
        epoch: 0,
        ipi_threshold: 0,
        quirk_reset_on_skip: false,
        quirk_failsafe: 0,
    };
    // SAFETY: `params` is a live local.
    assert_eq!(unsafe { cint_vic_params_default(&mut params) }, CINT_OK);
    params
}

/// Initialises `p` as policy kind `kind` (0..7) with the given raw values.
fn init(p: &mut cint_policy, kind: u8, a: u64, b: u32, flags: u8) -> i32 {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let (x, y) = (flags & 1 != 0, flags & 2 != 0);
        match kind {
            0 => cint_policy_init_none(p, 0),
            1 => cint_policy_init_nvme(p, b, a, x, 0),
            2 => cint_policy_init_adaptive(p, a, b, 0),
            3 => cint_policy_init_cinterrupts(p, a, b, x, y, u64::from(flags >> 2) * 1000, 0),
            // The storm guard in artifact mode (rate is the default above).
            4 => cint_policy_init_cinterrupts_guard(
                p,
                a,
                b,
                x,
                y,
                u64::from(flags >> 2) * 1000,
                CINT_GUARD_ARTIFACT,
                0,
            ),
            _ => {
                let mut params = vic_defaults();
                params.cif_threshold = b % 9;
                params.epoch = a;
                params.quirk_reset_on_skip = x;
                params.quirk_failsafe = u32::from(flags >> 4);
                if kind == 5 {
                    cint_policy_init_vic(p, &params, 0)
                } else {
                    cint_policy_init_vic_sched(p, &params, u64::from(flags), 0)
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Call {
    Submit {
        dt: u64,
        back: bool,
        hint: u32,
    },
    Complete {
        dt: u64,
        pick: u64,
        hint: u32,
    },
    Timer {
        dt: u64,
    },
    Opportunity {
        dt: u64,
    },
    Schedule {
        dt: u64,
        running: bool,
        end: Option<u64>,
    },
    Deadline,
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (0..5_000u64, prop::bool::weighted(0.05), 0..6u32)
            .prop_map(|(dt, back, hint)| Call::Submit { dt, back, hint }),
        (0..5_000u64, any::<u64>(), 0..6u32).prop_map(|(dt, pick, hint)| Call::Complete {
            dt,
            pick,
            hint
        }),
        (0..50_000u64).prop_map(|dt| Call::Timer { dt }),
        (0..50_000u64).prop_map(|dt| Call::Opportunity { dt }),
        (
            0..5_000u64,
            any::<bool>(),
            proptest::option::of(0..100_000u64)
        )
            .prop_map(|(dt, running, end)| Call::Schedule { dt, running, end }),
        Just(Call::Deadline),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_calls_only_return_documented_codes(
        kind in 0..7u8,
        a in 0..20_000u64,
        b in 0..300u32,
        flags in any::<u8>(),
        calls in proptest::collection::vec(call(), 0..200),
    ) {
        // SAFETY: each pointer below is null on purpose (refused before any
        // dereference) or points to a live local that only this thread uses.
        unsafe {
        let mut p = fresh();
        let rc = init(&mut p, kind, a, b, flags);
        prop_assert!(rc == CINT_OK || rc == CINT_EINVAL, "init returned {rc}");
        let initialised = rc == CINT_OK;
        let mut now = 0u64;
        let mut issued = 0u64;
        let mut in_flight = BTreeSet::new();
        for c in calls {
            let mut irq = -1;
            let rc = match c {
                Call::Submit { dt, back, hint } => {
                    let t = if back { now.saturating_sub(dt + 1) } else { now + dt };
                    let mut seq = u64::MAX;
                    let rc = cint_policy_submit(&mut *p, t, hint, &mut seq);
                    if rc == CINT_OK {
                        prop_assert_eq!(seq, issued);
                        in_flight.insert(seq);
                        issued += 1;
                        now = t;
                    } else if initialised && hint <= 3 && t >= now {
                        prop_assert!(false, "valid submit refused: {rc}");
                    }
                    rc
                }
                Call::Complete { dt, pick, hint } => {
                    now += dt;
                    // Mostly seqs that were issued (repeats allowed), some not.
                    let seq = if issued > 0 && pick % 8 != 0 { pick % issued } else { pick };
                    let rc = cint_policy_complete(&mut *p, now, seq, hint, &mut irq);
                    if initialised && hint <= 3 {
                        // Exactly once: accepted if and only if in flight.
                        prop_assert_eq!(rc == CINT_OK, in_flight.remove(&seq), "seq {} rc {}", seq, rc);
                    }
                    rc
                }
                Call::Timer { dt } => {
                    now += dt;
                    cint_policy_timer(&mut *p, now, &mut irq)
                }
                Call::Opportunity { dt } => {
                    now += dt;
                    cint_policy_opportunity(&mut *p, now, &mut irq)
                }
                Call::Schedule { dt, running, end } => {
                    now += dt;
                    cint_policy_schedule(&mut *p, now, running, end.is_some(), end.unwrap_or(0) + now)
                }
                Call::Deadline => {
                    let mut at = 0;
                    let rc = cint_policy_next_deadline(&mut *p, &mut at);
                    if rc == 1 {
                        // A deadline may be late, never absurdly far.
                        prop_assert!(at <= now + 3_600_000_000_000);
                    }
                    rc
                }
            };
            prop_assert_ne!(rc, CINT_EINTERNAL, "internal error on {:?}", c);
            if !initialised {
                prop_assert_eq!(rc, CINT_ENOTINIT);
            }
            prop_assert!((-9..=1).contains(&rc), "undocumented code {}", rc);
            if rc == CINT_OK {
                prop_assert!([CINT_IRQ_NONE, CINT_IRQ_FULL, CINT_IRQ_URGENT_ONLY, -1].contains(&irq));
            }
        }
    }
    }
}

#[test]
fn an_unknown_storm_guard_mode_is_refused() {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let mut p = fresh();
        let mut seq = 0;
        for mode in [CINT_GUARD_RATE, CINT_GUARD_ARTIFACT] {
            assert_eq!(
                cint_policy_init_cinterrupts_guard(
                    &mut *p, 6_000, 32, true, false, 100_000, mode, 0
                ),
                CINT_OK
            );
        }
        let mut q = fresh();
        assert_eq!(
            cint_policy_init_cinterrupts_guard(&mut *q, 6_000, 32, true, false, 100_000, 2, 0),
            CINT_EINVAL
        );
        assert_eq!(cint_policy_submit(&mut *q, 0, 0, &mut seq), CINT_ENOTINIT);
        assert_eq!(
            cint_policy_init_cinterrupts_guard(ptr::null_mut(), 6_000, 32, true, false, 0, 2, 0),
            CINT_ENULL
        );
    }
}

#[test]
fn null_pointers_are_refused_everywhere() {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let null = ptr::null_mut::<cint_policy>();
        let mut p = fresh();
        let mut seq = 0;
        let mut irq = 0;
        let mut out = 0u64;
        let mut n = 0u32;
        assert_eq!(cint_policy_init_none(null, 0), CINT_ENULL);
        assert_eq!(cint_policy_init_vic(&mut *p, ptr::null(), 0), CINT_ENULL);
        assert_eq!(
            cint_policy_init_vic_sched(&mut *p, ptr::null(), 0, 0),
            CINT_ENULL
        );
        assert_eq!(cint_vic_params_default(ptr::null_mut()), CINT_ENULL);
        assert_eq!(cint_policy_submit(null, 0, 0, &mut seq), CINT_ENULL);
        assert_eq!(cint_policy_complete(null, 0, 0, 0, &mut irq), CINT_ENULL);
        assert_eq!(cint_policy_timer(null, 0, &mut irq), CINT_ENULL);
        assert_eq!(cint_policy_opportunity(null, 0, &mut irq), CINT_ENULL);
        assert_eq!(cint_policy_schedule(null, 0, true, false, 0), CINT_ENULL);
        assert_eq!(cint_policy_next_deadline(null, &mut out), CINT_ENULL);
        assert_eq!(cint_policy_in_flight(null, &mut n), CINT_ENULL);
        assert_eq!(cint_policy_vic_ipi_needed(null, 0), CINT_ENULL);
        assert_eq!(
            cint_policy_vic_ratio(null, &mut n, &mut n.clone()),
            CINT_ENULL
        );
        assert_eq!(cint_hint_merge(0, 0, ptr::null_mut()), CINT_ENULL);
        assert_eq!(cint_hint_request(0, ptr::null(), &mut n), CINT_ENULL);

        assert_eq!(cint_policy_init_none(&mut *p, 0), CINT_OK);
        assert_eq!(
            cint_policy_submit(&mut *p, 0, 0, ptr::null_mut()),
            CINT_ENULL
        );
        assert_eq!(cint_policy_timer(&mut *p, 0, ptr::null_mut()), CINT_ENULL);
        assert_eq!(
            cint_policy_opportunity(&mut *p, 0, ptr::null_mut()),
            CINT_ENULL
        );
        assert_eq!(
            cint_policy_next_deadline(&mut *p, ptr::null_mut()),
            CINT_ENULL
        );
        assert_eq!(cint_policy_in_flight(&mut *p, ptr::null_mut()), CINT_ENULL);
    }
}

#[test]
fn vic_through_the_abi() {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let mut p = fresh();
        let mut params = vic_defaults();
        params.iops_threshold = 0;
        params.epoch = 1_000;
        assert_eq!(cint_policy_init_vic(&mut *p, &params, 0), CINT_OK);
        // 41 in flight; the first completion after one epoch sets ratio 1/5.
        let mut seqs = Vec::new();
        for _ in 0..41 {
            let mut seq = 0;
            assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut seq), CINT_OK);
            seqs.push(seq);
        }
        let mut irq = -1;
        assert_eq!(
            cint_policy_complete(&mut *p, 1_000, seqs[0], 0, &mut irq),
            CINT_OK
        );
        assert_eq!(irq, CINT_IRQ_NONE);
        let (mut up, mut skip) = (0, 0);
        assert_eq!(cint_policy_vic_ratio(&mut *p, &mut up, &mut skip), CINT_OK);
        assert_eq!((up, skip), (1, 5));
        assert_eq!(cint_policy_vic_ipi_needed(&mut *p, 1_000), 1);
        assert_eq!(cint_policy_opportunity(&mut *p, 2_000, &mut irq), CINT_OK);
        assert_eq!(irq, CINT_IRQ_FULL);
        assert_eq!(cint_policy_vic_ipi_needed(&mut *p, 2_000), 0);
        let mut deadline = 7;
        assert_eq!(cint_policy_next_deadline(&mut *p, &mut deadline), 0);
        assert_eq!(deadline, 7, "untouched without a deadline");
    }
}

#[test]
fn every_code_has_a_message_and_call_codes_match_the_library() {
    for code in -9..=0 {
        // SAFETY: cint_strerror returns a static NUL-terminated string.
        let text = unsafe { std::ffi::CStr::from_ptr(cint_strerror(code)) };
        assert!(!text.to_bytes().is_empty());
        assert_ne!(text.to_str().ok(), Some("unknown error code"), "{code}");
    }
    use ::cint_policy::hints::IoCall;
    let codes = [
        (CINT_CALL_READ, IoCall::Read),
        (CINT_CALL_WRITE, IoCall::Write),
        (CINT_CALL_PREAD, IoCall::Pread),
        (CINT_CALL_PREADV, IoCall::Preadv),
        (CINT_CALL_PWRITE, IoCall::Pwrite),
        (CINT_CALL_PWRITEV, IoCall::Pwritev),
        (CINT_CALL_PREADV2, IoCall::Preadv2),
        (CINT_CALL_PWRITEV2, IoCall::Pwritev2),
        (CINT_CALL_IO_SUBMIT, IoCall::IoSubmit),
        (CINT_CALL_IO_URING_BATCH, IoCall::IoUringBatch),
        (CINT_CALL_FSYNC, IoCall::Fsync),
        (CINT_CALL_FDATASYNC, IoCall::Fdatasync),
        (CINT_CALL_SYNC, IoCall::Sync),
        (CINT_CALL_SYNCFS, IoCall::Syncfs),
        (CINT_CALL_MSYNC, IoCall::Msync),
        (CINT_CALL_JOURNAL_COMMIT, IoCall::JournalCommit),
        (CINT_CALL_WRITEBACK, IoCall::Writeback),
    ];
    assert_eq!(codes.len(), IoCall::ALL.len());
    for (code, call) in codes {
        assert_eq!(IoCall::from_code(code), Some(call));
    }
}

#[test]
fn a_repeated_completion_is_refused_and_the_queue_stays_consistent() {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let mut p = fresh();
        assert_eq!(cint_policy_init_adaptive(&mut *p, 6_000, 4, 0), CINT_OK);
        let (mut a, mut b) = (u64::MAX, u64::MAX);
        assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut a), CINT_OK);
        assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut b), CINT_OK);
        let mut irq = -1;
        assert_eq!(cint_policy_complete(&mut *p, 10, a, 0, &mut irq), CINT_OK);
        assert_eq!(cint_policy_complete(&mut *p, 20, a, 0, &mut irq), CINT_ESEQ);
        let mut n = 0;
        assert_eq!(cint_policy_in_flight(&mut *p, &mut n), CINT_OK);
        assert_eq!(n, 1, "the refused repeat did not reach the policy");
        assert_eq!(cint_policy_complete(&mut *p, 30, b, 0, &mut irq), CINT_OK);
        assert_eq!(cint_policy_complete(&mut *p, 40, b, 0, &mut irq), CINT_ESEQ);
        assert_eq!(cint_policy_in_flight(&mut *p, &mut n), CINT_OK);
        assert_eq!(n, 0);
    }
}

#[test]
fn the_window_refuses_a_submission_that_would_wrap_onto_a_request_in_flight() {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let mut p = fresh();
        assert_eq!(cint_policy_init_none(&mut *p, 0), CINT_OK);
        let mut oldest = u64::MAX;
        assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut oldest), CINT_OK);
        let mut irq = -1;
        // Requests behind the oldest come and go; the window still starts at it.
        for _ in 1..CINT_SEQ_WINDOW {
            let mut seq = 0;
            assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut seq), CINT_OK);
            assert_eq!(cint_policy_complete(&mut *p, 0, seq, 0, &mut irq), CINT_OK);
        }
        let mut seq = 0;
        assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut seq), CINT_EWINDOW);
        // A sequence number that aliases the oldest's bit is not in flight.
        assert_eq!(
            cint_policy_complete(&mut *p, 0, oldest + CINT_SEQ_WINDOW, 0, &mut irq),
            CINT_ESEQ
        );
        assert_eq!(
            cint_policy_complete(&mut *p, 0, oldest, 0, &mut irq),
            CINT_OK
        );
        assert_eq!(irq, CINT_IRQ_FULL);
        // The window moved past everything completed: room again.
        assert_eq!(cint_policy_submit(&mut *p, 0, 0, &mut seq), CINT_OK);
        assert_eq!(seq, CINT_SEQ_WINDOW);
        assert_eq!(cint_policy_complete(&mut *p, 0, seq, 0, &mut irq), CINT_OK);
    }
}

/// One call on a `cint_mode_select`, with raw values.
#[derive(Clone, Debug)]
enum SelectCall {
    Record {
        bytes: u64,
        write: bool,
        run_time: u64,
    },
    Choose {
        bytes: u64,
        write: bool,
        in_flight: u32,
        flags: u32,
    },
    RecordIdle {
        bytes: u64,
        write: bool,
        mode: i32,
        sleep: u64,
        reached: u32,
    },
    ObserveOneIn {
        n: u32,
    },
}

fn select_call() -> impl Strategy<Value = SelectCall> {
    // Sizes and times near the edges (0, u64::MAX) as well as plausible ones.
    let big = prop_oneof![0..4_000_000u64, any::<u64>()];
    prop_oneof![
        (big.clone(), any::<bool>(), big.clone()).prop_map(|(bytes, write, run_time)| {
            SelectCall::Record {
                bytes,
                write,
                run_time,
            }
        }),
        (big.clone(), any::<bool>(), any::<u32>(), 0..8u32).prop_map(
            |(bytes, write, in_flight, flags)| SelectCall::Choose {
                bytes,
                write,
                in_flight,
                flags,
            }
        ),
        (big.clone(), any::<bool>(), -2..5i32, big, 0..12u32).prop_map(
            |(bytes, write, mode, sleep, reached)| SelectCall::RecordIdle {
                bytes,
                write,
                mode,
                sleep,
                reached,
            }
        ),
        prop_oneof![0..2_000u32, any::<u32>()].prop_map(|n| SelectCall::ObserveOneIn { n }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The selector's calls, in any order with any values, on a valid or
    /// refused table: only documented codes, never the internal error,
    /// and a choice is one of the three modes, with a sleep only for a
    /// sleep.
    #[test]
    fn random_selector_calls_only_return_documented_codes(
        idle_count in 0..12u32,
        exits in proptest::collection::vec(0..2_000_000u64, 10),
        powers in proptest::collection::vec(0..11_000_000u32, 13),
        iowait_factor in 0..1_200u32,
        calls in proptest::collection::vec(select_call(), 0..200),
    ) {
        // Residencies at or above their exits but for the tenth state, and
        // powers up to 11 kW, a tenth of them above the 10 kW limit: about
        // a quarter of the tables are valid.
        let mut states = [cint_idle_state::default(); CINT_MAX_IDLE_STATES];
        for (i, s) in states.iter_mut().enumerate() {
            let exit = exits[i];
            let residency = if i == 9 { exit / 2 } else { exit * 2 };
            *s = cint_idle_state { exit_latency: exit, target_residency: residency, power_mw: powers[i] };
        }
        let params = cint_mode_select_params {
            static_mw: powers[10],
            spin_mw: powers[11],
            busy_mw: powers[12],
            iowait_factor,
            idle_count,
            idle_states: states,
            sleep_path: exits[0],
            timer_arm: exits[1],
            timer_slack: exits[2],
        };
        let mut s = Box::new(cint_mode_select { opaque: [0; CINT_MODE_SELECT_WORDS] });
        // SAFETY: `s` and `params` are live locals only this thread uses;
        // the outputs below are live locals too.
        unsafe {
            let rc = cint_mode_select_init(&mut *s, &params);
            prop_assert!(rc == CINT_OK || rc == CINT_EINVAL, "init returned {rc}");
            let initialised = rc == CINT_OK;
            for c in calls {
                let (mut mode, mut sleep) = (-1, u64::MAX);
                let rc = match c {
                    SelectCall::Record { bytes, write, run_time } => {
                        cint_mode_select_record(&mut *s, bytes, write, run_time)
                    }
                    SelectCall::Choose { bytes, write, in_flight, flags } => {
                        let rc = cint_mode_select_choose(
                            &mut *s, bytes, write, in_flight, flags, &mut mode, &mut sleep,
                        );
                        if rc == CINT_OK {
                            prop_assert!(
                                [CINT_MODE_POLL, CINT_MODE_SLEEP, CINT_MODE_INTERRUPT].contains(&mode)
                            );
                            prop_assert!(mode == CINT_MODE_SLEEP || sleep == 0);
                            if flags & CINT_SELECT_NO_INTERRUPT != 0 {
                                prop_assert_ne!(mode, CINT_MODE_INTERRUPT);
                            }
                        } else if initialised {
                            prop_assert!(flags > 3, "valid flags {flags} refused: {rc}");
                        }
                        rc
                    }
                    SelectCall::RecordIdle { bytes, write, mode: m, sleep: ns, reached } => {
                        let rc = cint_mode_select_record_idle(&mut *s, bytes, write, m, ns, reached);
                        if initialised {
                            // A sleep is one the selector could have chosen.
                            let sleep_ok = m != CINT_MODE_SLEEP
                                || (1..=::cint_policy::config::MAX_DURATION).contains(&ns);
                            let valid = (0..=2).contains(&m) && reached < idle_count && sleep_ok;
                            prop_assert_eq!(rc == CINT_OK, valid, "mode {} state {}: {}", m, reached, rc);
                        }
                        rc
                    }
                    SelectCall::ObserveOneIn { n } => {
                        let rc = cint_mode_select_observe_idle_one_in(&mut *s, n);
                        if initialised {
                            prop_assert_eq!(rc == CINT_OK, (1..=1024).contains(&n), "n {}: {}", n, rc);
                        }
                        rc
                    }
                };
                prop_assert_ne!(rc, CINT_EINTERNAL, "internal error on {:?}", c);
                if !initialised {
                    prop_assert_eq!(rc, CINT_ENOTINIT);
                }
                prop_assert!([CINT_OK, CINT_EINVAL].contains(&rc) || !initialised, "code {}", rc);
            }
        }
    }
}

#[test]
fn the_selectors_null_pointers_are_refused() {
    // SAFETY: each pointer below is null on purpose (refused before any
    // dereference) or points to a live local that only this thread uses.
    unsafe {
        let null = ptr::null_mut::<cint_mode_select>();
        let (mut mode, mut sleep) = (0, 0u64);
        assert_eq!(cint_mode_select_init(null, ptr::null()), CINT_ENULL);
        assert_eq!(cint_mode_select_record(null, 4096, false, 1), CINT_ENULL);
        assert_eq!(
            cint_mode_select_choose(null, 4096, false, 1, 0, &mut mode, &mut sleep),
            CINT_ENULL
        );
        assert_eq!(
            cint_mode_select_record_idle(null, 4096, false, CINT_MODE_INTERRUPT, 0, 0),
            CINT_ENULL
        );
        assert_eq!(cint_mode_select_observe_idle_one_in(null, 16), CINT_ENULL);
    }
}
