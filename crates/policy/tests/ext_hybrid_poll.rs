//! Hybrid-polling sleep estimators (docs/ALGORITHMS.md section 8).

use cint_policy::hybrid_poll::{
    class_of, BlockAdaptive, Direction, SleepEstimator, UringHybrid, CLASSES, STATS_WINDOW,
};
use cint_policy::{Nanos, MS, US};

const KIB: u64 = 1024;

/// An estimator whose statistics a first sleep turned on at 0.
fn turned_on() -> BlockAdaptive {
    let mut est = BlockAdaptive::new();
    assert_eq!(est.sleep_for(0, 4 * KIB, Direction::Read), 0);
    est
}

#[test]
fn classes_are_direction_by_log2_sectors_clamped_at_64k() {
    assert_eq!(class_of(511, Direction::Read), None);
    assert_eq!(class_of(0, Direction::Write), None);
    assert_eq!(class_of(512, Direction::Read), Some(0));
    assert_eq!(class_of(512, Direction::Write), Some(1));
    assert_eq!(class_of(1023, Direction::Read), Some(0));
    assert_eq!(class_of(4 * KIB, Direction::Read), Some(6));
    assert_eq!(class_of(4 * KIB, Direction::Write), Some(7));
    assert_eq!(class_of(6 * KIB, Direction::Read), Some(6));
    assert_eq!(class_of(64 * KIB, Direction::Write), Some(CLASSES - 1));
    // Linux clamps larger requests into the last bucket of their direction.
    assert_eq!(class_of(128 * KIB, Direction::Read), Some(CLASSES - 2));
    assert_eq!(class_of(u64::MAX, Direction::Write), Some(CLASSES - 1));
    let mut seen = [false; CLASSES];
    for shift in 9..=16 {
        for dir in [Direction::Read, Direction::Write] {
            let class = class_of(1 << shift, dir).expect("in range");
            assert!(!seen[class], "class {class} used twice");
            seen[class] = true;
        }
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn block_adaptive_spins_until_a_window_has_been_published() {
    let mut est = BlockAdaptive::new();
    assert_eq!(est.sleep_for(0, 4 * KIB, Direction::Read), 0);
    est.record(10 * US, 4 * KIB, Direction::Read, 10 * US);
    est.record(20 * US, 4 * KIB, Direction::Read, 14 * US);
    // Inside the window the samples are not published yet.
    assert_eq!(est.sleep_for(STATS_WINDOW - 1, 4 * KIB, Direction::Read), 0);
    assert_eq!(est.mean(4 * KIB, Direction::Read), None);
    // The window opened at the first request's end (10 us), not at the
    // first sleep (0): it ends 100 ms later.
    let end = 10 * US + STATS_WINDOW;
    assert_eq!(est.sleep_for(end - 1, 4 * KIB, Direction::Read), 0);
    assert_eq!(est.sleep_for(end, 4 * KIB, Direction::Read), 6 * US);
    assert_eq!(est.mean(4 * KIB, Direction::Read), Some(12 * US));
    // Other classes have no mean: spin.
    assert_eq!(est.sleep_for(end, 4 * KIB, Direction::Write), 0);
    assert_eq!(est.sleep_for(end, 8 * KIB, Direction::Read), 0);
    // Below a sector: no class, no sleep.
    assert_eq!(est.sleep_for(end, 100, Direction::Read), 0);
}

#[test]
fn block_adaptive_a_sleep_never_opens_a_window() {
    // Linux 5.0 arms the statistics window in __blk_mq_end_request only
    // (blk_mq_poll_stats_start); the poller just reads the means. A sleep
    // after a window ended must not start the next one: the request that
    // ends after it does.
    let mut est = turned_on();
    est.record(0, 4 * KIB, Direction::Read, 10 * US);
    let t1 = STATS_WINDOW + 50 * US;
    assert_eq!(est.sleep_for(t1, 4 * KIB, Direction::Read), 5 * US);
    // The next window opens at this request's end, t1 + 30 us.
    let opened = t1 + 30 * US;
    est.record(opened, 4 * KIB, Direction::Read, 30 * US);
    assert_eq!(
        est.sleep_for(opened + STATS_WINDOW - 1, 4 * KIB, Direction::Read),
        5 * US
    );
    assert_eq!(
        est.sleep_for(opened + STATS_WINDOW, 4 * KIB, Direction::Read),
        15 * US
    );
}

#[test]
fn block_adaptive_rounds_half_the_mean_up_like_linux() {
    let mut est = turned_on();
    est.record(0, 512, Direction::Write, 7);
    assert_eq!(est.sleep_for(STATS_WINDOW, 512, Direction::Write), 4);
}

#[test]
fn block_adaptive_keeps_old_means_for_classes_idle_in_a_window() {
    let mut est = turned_on();
    est.record(0, 4 * KIB, Direction::Read, 20 * US);
    est.record(0, 16 * KIB, Direction::Write, 40 * US);
    let t1 = STATS_WINDOW;
    assert_eq!(est.sleep_for(t1, 4 * KIB, Direction::Read), 10 * US);
    // Second window [t1 + 1 ms, t1 + 101 ms), opened by its first
    // request's end: only reads.
    est.record(t1 + MS, 4 * KIB, Direction::Read, 30 * US);
    let t2 = t1 + MS + STATS_WINDOW;
    assert_eq!(est.sleep_for(t2, 4 * KIB, Direction::Read), 15 * US);
    assert_eq!(est.sleep_for(t2, 16 * KIB, Direction::Write), 20 * US);
}

#[test]
fn block_adaptive_large_requests_share_the_64k_class() {
    let mut est = turned_on();
    est.record(0, 64 * KIB, Direction::Read, 100 * US);
    est.record(0, MS, Direction::Read, 300 * US);
    assert_eq!(
        est.sleep_for(STATS_WINDOW, 128 * KIB, Direction::Read),
        100 * US
    );
}

#[test]
fn block_adaptive_window_opens_at_first_use_not_at_zero() {
    let mut est = turned_on();
    let start = 5 * STATS_WINDOW + 123;
    est.record(start, 4 * KIB, Direction::Read, 8 * US);
    assert_eq!(
        est.sleep_for(start + STATS_WINDOW - 1, 4 * KIB, Direction::Read),
        0
    );
    assert_eq!(
        est.sleep_for(start + STATS_WINDOW, 4 * KIB, Direction::Read),
        4 * US
    );
}

#[test]
fn block_adaptive_survives_extreme_inputs() {
    let mut est = turned_on();
    est.record(Nanos::MAX - 1, 4 * KIB, Direction::Read, Nanos::MAX);
    est.record(Nanos::MAX - 1, 4 * KIB, Direction::Read, Nanos::MAX);
    // The sum saturates instead of wrapping; the window end saturates too.
    assert_eq!(
        est.sleep_for(Nanos::MAX, 4 * KIB, Direction::Read),
        (Nanos::MAX / 2).div_ceil(2)
    );
}

#[test]
fn uring_hybrid_sleeps_half_the_minimum() {
    let mut est = UringHybrid::new();
    assert_eq!(est.sleep_for(), 0);
    est.record(20 * US);
    assert_eq!(est.sleep_for(), 10 * US);
    est.record(30 * US);
    assert_eq!(est.sleep_for(), 10 * US);
    est.record(9 * US);
    assert_eq!(est.sleep_for(), 4500);
    assert_eq!(est.min_run_time(), Some(9 * US));
}

#[test]
fn the_enum_dispatches_to_each_estimator() {
    let mut fixed = SleepEstimator::Fixed(7 * US);
    fixed.record(0, 4 * KIB, Direction::Read, 100 * US);
    assert_eq!(fixed.sleep_for(0, 4 * KIB, Direction::Read), 7 * US);
    assert_eq!(fixed.sleep_for(0, 100, Direction::Write), 7 * US);

    let mut uring = SleepEstimator::uring_hybrid();
    uring.record(0, 4 * KIB, Direction::Read, 12 * US);
    uring.record(0, 64 * KIB, Direction::Write, 40 * US);
    // One minimum for every size and direction.
    assert_eq!(uring.sleep_for(1, 64 * KIB, Direction::Write), 6 * US);

    let mut block = SleepEstimator::block_adaptive();
    assert_eq!(block.sleep_for(0, 4 * KIB, Direction::Read), 0);
    block.record(0, 4 * KIB, Direction::Read, 12 * US);
    assert_eq!(block.sleep_for(1, 4 * KIB, Direction::Read), 0);
    assert_eq!(
        block.sleep_for(STATS_WINDOW, 4 * KIB, Direction::Read),
        6 * US
    );
}

#[test]
fn block_adaptive_counts_only_requests_issued_once_a_sleep_turned_it_on() {
    // Linux 5.0: the first hybrid sleep asked for turns the statistics on
    // (blk_poll_stats_enable) and sleeps 0; a request counts only if it
    // started after that (RQF_STATS is set in blk_mq_start_request).
    let mut est = BlockAdaptive::new();
    est.record(10 * US, 4 * KIB, Direction::Read, 10 * US);
    let on = 20 * US;
    assert_eq!(est.sleep_for(on, 4 * KIB, Direction::Read), 0);
    // Started at 15 us, before the statistics were on: not counted.
    est.record(25 * US, 4 * KIB, Direction::Read, 10 * US);
    // Started at 20 us: counted, and its end opens the window.
    est.record(50 * US, 4 * KIB, Direction::Read, 30 * US);
    let end = 50 * US + STATS_WINDOW;
    assert_eq!(est.sleep_for(end - 1, 4 * KIB, Direction::Read), 0);
    assert_eq!(est.sleep_for(end, 4 * KIB, Direction::Read), 15 * US);
}
