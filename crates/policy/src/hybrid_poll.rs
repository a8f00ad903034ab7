//! How long a hybrid-polling thread sleeps before it starts to spin
//! (docs/ALGORITHMS.md section 8).
//!
//! Three estimators, all integer-only and allocation-free:
//!
//! * [`BlockAdaptive`], the Linux block layer's adaptive hybrid polling
//!   (4.10 to 6.3): turned on by the first sleep asked for, statistics
//!   per class (read/write x size bucket) are
//!   gathered in a 100 ms window and published as the active means when the
//!   window ends; the sleep is half the class's mean completion time. Like
//!   Linux, sizes below one sector have no class (no sleep), and sizes above
//!   64 KiB share the 64 KiB bucket (Linux clamps the bucket index rather
//!   than dropping the request). A class with no sample in a window keeps
//!   its previous mean, and a window opens only at a request's end (as
//!   Linux arms its statistics timer there), so an idle queue costs nothing.
//! * [`UringHybrid`], io_uring's `IORING_SETUP_HYBRID_IOPOLL` (6.13): half
//!   of the minimum run time observed so far.
//! * a fixed sleep given by the user.
//!
//! With no statistics yet every estimator that depends on them answers 0:
//! spin at once.

use crate::{Nanos, MS};

/// Transfer direction of a request, the first half of its class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl Direction {
    /// The direction of a request that writes if `write`.
    pub const fn of(write: bool) -> Self {
        if write {
            Direction::Write
        } else {
            Direction::Read
        }
    }
}

/// Length of the block layer's statistics window.
pub const STATS_WINDOW: Nanos = 100 * MS;

/// Size buckets: 512 B, 1 KiB, ... 64 KiB (log2 of the sector count, 0..=7).
pub const SIZE_BUCKETS: usize = 8;

/// Classes: (read, write) x size bucket.
pub const CLASSES: usize = 2 * SIZE_BUCKETS;

/// The class index of a request of `bytes` in direction `dir`, as Linux's
/// `blk_mq_poll_stats_bkt`: `dir + 2 * log2(sectors)`, clamped to the last
/// bucket; `None` below one sector.
pub const fn class_of(bytes: u64, dir: Direction) -> Option<usize> {
    let sectors = bytes >> 9;
    if sectors == 0 {
        return None;
    }
    let log2 = sectors.ilog2() as usize;
    let bucket = if log2 < SIZE_BUCKETS {
        log2
    } else {
        SIZE_BUCKETS - 1
    };
    let dir = match dir {
        Direction::Read => 0,
        Direction::Write => 1,
    };
    Some(dir + 2 * bucket)
}

/// Run-time samples of one class in the current window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Accumulator {
    samples: u32,
    sum: u64,
}

/// The Linux block layer's adaptive hybrid-polling estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockAdaptive {
    window: [Accumulator; CLASSES],
    /// Published means; 0 means none yet (a real mean is at least 1 ns
    /// only if some sample was, so 0 doubles as "no sleep" anyway).
    means: [Nanos; CLASSES],
    window_end: Option<Nanos>,
    /// When the first sleep was asked for, which turns the statistics on.
    enabled_at: Option<Nanos>,
}

impl Default for BlockAdaptive {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockAdaptive {
    /// No statistics, no window open.
    pub const fn new() -> Self {
        BlockAdaptive {
            window: [Accumulator { samples: 0, sum: 0 }; CLASSES],
            means: [0; CLASSES],
            window_end: None,
            enabled_at: None,
        }
    }

    /// Publishes the window if it has ended by `now` (Linux publishes it
    /// from the window's timer; nothing reads the means in between, so
    /// publishing at the next use is the same).
    fn publish_if_ended(&mut self, now: Nanos) {
        let Some(end) = self.window_end else {
            return;
        };
        if now < end {
            return;
        }
        for (mean, acc) in self.means.iter_mut().zip(self.window.iter_mut()) {
            if acc.samples > 0 {
                *mean = acc.sum / u64::from(acc.samples);
            }
            *acc = Accumulator::default();
        }
        self.window_end = None;
    }

    /// A request of `bytes` in direction `dir` took `run_time` from issue
    /// to its end at `now`; it counts towards the window open at `now`.
    ///
    /// Only a request issued once the statistics are on counts: Linux 5.0
    /// turns them on at the first hybrid sleep asked for
    /// (`blk_poll_stats_enable`) and marks a request for them
    /// (`RQF_STATS`) when it starts (`blk_mq_start_request`).
    ///
    /// Only a request's end opens a window: Linux 5.0 arms the statistics
    /// timer in `__blk_mq_end_request` (`blk_mq_poll_stats_start`, block/
    /// blk-mq.c), before it adds that request's sample, and the poller's
    /// `blk_mq_poll_nsecs` only reads the published means. A window
    /// opened at a sleep instead would start up to a request earlier.
    pub fn record(&mut self, now: Nanos, bytes: u64, dir: Direction, run_time: Nanos) {
        match self.enabled_at {
            Some(on) if now.saturating_sub(run_time) >= on => {}
            _ => return,
        }
        self.publish_if_ended(now);
        if self.window_end.is_none() {
            self.window_end = Some(now.saturating_add(STATS_WINDOW));
        }
        if let Some(class) = class_of(bytes, dir) {
            let acc = &mut self.window[class];
            acc.samples = acc.samples.saturating_add(1);
            acc.sum = acc.sum.saturating_add(run_time);
        }
    }

    /// How long to sleep before polling for a request of `bytes` in
    /// direction `dir` issued at `now`: half the published mean of its
    /// class, rounded up as Linux does, or 0 without one. The first call
    /// turns the statistics on and answers 0, as `blk_mq_poll_nsecs` does.
    pub fn sleep_for(&mut self, now: Nanos, bytes: u64, dir: Direction) -> Nanos {
        if self.enabled_at.is_none() {
            self.enabled_at = Some(now);
            return 0;
        }
        self.publish_if_ended(now);
        match class_of(bytes, dir) {
            Some(class) => self.means[class].div_ceil(2),
            None => 0,
        }
    }

    /// The published mean of a class, if it has one.
    pub fn mean(&self, bytes: u64, dir: Direction) -> Option<Nanos> {
        class_of(bytes, dir)
            .map(|class| self.means[class])
            .filter(|&m| m > 0)
    }
}

/// io_uring's hybrid polling estimator: half the minimum run time seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UringHybrid {
    min_run_time: Option<Nanos>,
}

impl UringHybrid {
    /// Nothing observed yet.
    pub const fn new() -> Self {
        UringHybrid { min_run_time: None }
    }

    /// A request ran for `run_time`.
    pub fn record(&mut self, run_time: Nanos) {
        self.min_run_time = Some(match self.min_run_time {
            Some(min) if min <= run_time => min,
            _ => run_time,
        });
    }

    /// Half the minimum run time, or 0 before the first observation.
    pub fn sleep_for(&self) -> Nanos {
        self.min_run_time.map_or(0, |min| min / 2)
    }

    /// The minimum run time observed.
    pub const fn min_run_time(&self) -> Option<Nanos> {
        self.min_run_time
    }
}

/// Any hybrid-polling sleep estimator.
///
/// # Example
///
/// ```
/// use cint_policy::hybrid_poll::{Direction, SleepEstimator, STATS_WINDOW};
/// use cint_policy::US;
///
/// let mut sleep = SleepEstimator::block_adaptive();
/// // Nothing measured yet: spin at once.
/// assert_eq!(sleep.sleep_for(0, 4096, Direction::Read), 0);
/// sleep.record(0, 4096, Direction::Read, 10 * US);
/// sleep.record(0, 4096, Direction::Read, 12 * US);
/// // Once the statistics window is published: half the class's mean.
/// assert_eq!(sleep.sleep_for(STATS_WINDOW, 4096, Direction::Read), 11 * US / 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // inline on purpose: no heap
pub enum SleepEstimator {
    /// Sleep this long, always (Linux `io_poll_delay` > 0).
    Fixed(Nanos),
    /// Linux block layer adaptive (`io_poll_delay` = 0).
    BlockAdaptive(BlockAdaptive),
    /// io_uring `IORING_SETUP_HYBRID_IOPOLL`.
    UringHybrid(UringHybrid),
}

impl SleepEstimator {
    /// A fresh Linux block-layer adaptive estimator.
    pub const fn block_adaptive() -> Self {
        SleepEstimator::BlockAdaptive(BlockAdaptive::new())
    }

    /// A fresh io_uring hybrid estimator.
    pub const fn uring_hybrid() -> Self {
        SleepEstimator::UringHybrid(UringHybrid::new())
    }

    /// A request of `bytes` in direction `dir` completed at `now` after
    /// `run_time` (issue to completion).
    pub fn record(&mut self, now: Nanos, bytes: u64, dir: Direction, run_time: Nanos) {
        match self {
            SleepEstimator::Fixed(_) => {}
            SleepEstimator::BlockAdaptive(b) => b.record(now, bytes, dir, run_time),
            SleepEstimator::UringHybrid(u) => u.record(run_time),
        }
    }

    /// How long to sleep before spinning for a request of `bytes` in
    /// direction `dir` issued at `now`.
    pub fn sleep_for(&mut self, now: Nanos, bytes: u64, dir: Direction) -> Nanos {
        match self {
            SleepEstimator::Fixed(sleep) => *sleep,
            SleepEstimator::BlockAdaptive(b) => b.sleep_for(now, bytes, dir),
            SleepEstimator::UringHybrid(u) => u.sleep_for(),
        }
    }
}
