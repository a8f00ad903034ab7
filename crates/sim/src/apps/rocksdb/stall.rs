//! RocksDB's write controller (db/write_controller.cc and the stall
//! conditions of db/column_family.cc, RocksDB 6.x as the reference runs
//! use it): with automatic compaction on, L0 at
//! `level0_slowdown_writes_trigger` (20) files delays the writer to a
//! write rate that follows the compaction debt; at the stop trigger the
//! writer stops ([`super::compaction`]). The conditions are recomputed
//! when a flush or a compaction installs its output
//! (`RecalculateWriteStallConditions`), the delay when a write begins
//! (`DBImpl::DelayWrite`).
//!
//! The compaction debt past db_bench's soft and hard
//! pending-compaction-bytes limits (64 and 128 GiB) delays and stops the
//! writer the same way, and so do the memtables waiting for a flush,
//! automatic compaction or not: all `max_write_buffer_number` of them
//! stop it, and with more than three, one fewer delays it. The memtable
//! switch recalculates the conditions too (`SwitchMemtable` installs a
//! new super version).

use cint_policy::Nanos;

/// The delayed write rate's ceiling, bytes/s: db_bench's
/// `--delayed_write_rate` default (8 MiB/s), which the store's
/// `delayed_write_rate` option takes.
const MAX_WRITE_RATE: u64 = 8 << 20;
/// `kMinWriteRate` of `SetupDelay`, bytes/s.
const MIN_WRITE_RATE: u64 = 16 << 10;
/// `SetupDelay`'s steps: a debt that grew slows writes by 0.8, one that
/// shrank speeds them by its inverse, a stop or a near stop slows them by
/// 0.6, and leaving the delay speeds them by 1.4.
const INC_SLOWDOWN: f64 = 0.8;
const NEAR_STOP_SLOWDOWN: f64 = 0.6;
const DELAY_RECOVER: f64 = 1.4;
/// L0 files that delay writes (`level0_slowdown_writes_trigger`, 20)
/// and that stop them (`level0_stop_writes_trigger`, 36).
const L0_SLOWDOWN_WRITES: u32 = 20;
const L0_STOP_WRITES: u32 = 36;
/// `GetDelay`'s refill interval, microseconds.
const REFILL_INTERVAL_US: u64 = 1024;
/// `DelayWrite` sleeps this long between checks (`kDelayInterval`, 1 ms).
pub(super) const DELAY_INTERVAL: Nanos = 1_000_000;
/// The compaction debt that delays writes and the one that stops them:
/// db_bench's `--soft_pending_compaction_bytes_limit` (64 GiB) and
/// `--hard_pending_compaction_bytes_limit` (128 GiB).
pub(super) const SOFT_PENDING_BYTES: u64 = 64 << 30;
pub(super) const HARD_PENDING_BYTES: u64 = 128 << 30;

/// L0 files that delay the writer: at least the compaction trigger.
/// RocksDB's `SanitizeOptions` (db/column_family.cc) raises the slowdown
/// trigger to the compaction trigger and the stop trigger to the slowdown
/// trigger, so that writes never stop short of a compaction that would
/// free them.
pub(super) fn l0_slowdown_files(compaction_trigger: u32) -> u32 {
    L0_SLOWDOWN_WRITES.max(compaction_trigger)
}

/// L0 files that stop the writer: at least the slowdown trigger (and so
/// the compaction trigger), as `SanitizeOptions` raises it.
pub(super) fn l0_stop_files(compaction_trigger: u32) -> u32 {
    L0_STOP_WRITES.max(l0_slowdown_files(compaction_trigger))
}

/// One store's write controller.
#[derive(Clone, Debug)]
pub(super) struct WriteController {
    /// A delay token is held: writes are paced.
    delayed: bool,
    /// A stop token is held.
    stopped: bool,
    /// What the last recalculation delayed or stopped the writer for.
    cause: Option<Cause>,
    /// `delayed_write_rate_`, bytes/s.
    rate: u64,
    /// `bytes_left_` and `last_refill_time_` (us, 0 for none) of the
    /// pacing.
    bytes_left: u64,
    last_refill_us: u64,
    /// The compaction debt at the last recalculation.
    prev_needed: u64,
    /// The size of the last write (`last_batch_group_size_`), which the
    /// next one is paced by.
    pub(super) last_write: u64,
}

impl Default for WriteController {
    fn default() -> Self {
        WriteController {
            delayed: false,
            stopped: false,
            cause: None,
            rate: MAX_WRITE_RATE,
            bytes_left: 0,
            last_refill_us: 0,
            prev_needed: 0,
            last_write: 0,
        }
    }
}

/// Why writes are delayed or stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    /// L0's file count.
    L0Files,
    /// The compaction debt.
    PendingBytes,
    /// The memtables waiting for a flush.
    Memtables,
}

/// How many causes there are, for counts kept by cause.
pub(super) const CAUSES: usize = 3;

/// What a recalculation of the stall conditions reads of the store.
#[derive(Clone, Copy, Debug)]
pub(super) struct StallInputs {
    /// Full memtables not flushed yet (`imm()->NumNotFlushed()`).
    pub(super) unflushed: u32,
    /// `max_write_buffer_number`, sanitised (at least 2).
    pub(super) max_memtables: u32,
    /// Automatic compaction on: only then do L0 and the debt count.
    pub(super) auto_compaction: bool,
    /// L0's table files, and the stop and slowdown triggers.
    pub(super) l0: u32,
    pub(super) triggers: (u32, u32),
    /// The compaction debt, bytes.
    pub(super) needed: u64,
}

/// What the memtables, L0 and the compaction debt make of the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Condition {
    Normal,
    Delayed(Cause),
    Stopped(Cause),
}

impl Condition {
    /// `GetWriteStallConditionAndCause` (db/column_family.cc, RocksDB
    /// 6.x), in its order: the memtables' stop, L0's and the debt's stops
    /// (automatic compaction only), the memtables' delay (more than three
    /// memtables), L0's and the debt's delays; and whether the writer is
    /// near a stop, which `SetupDelay` penalises (never for the memtables'
    /// delay, which passes only whether it was stopped).
    pub(super) fn of(s: StallInputs) -> (Condition, bool) {
        let (stop, slowdown) = s.triggers;
        let auto = s.auto_compaction;
        if s.unflushed >= s.max_memtables {
            (Condition::Stopped(Cause::Memtables), true)
        } else if auto && s.l0 >= stop {
            (Condition::Stopped(Cause::L0Files), true)
        } else if auto && s.needed >= HARD_PENDING_BYTES {
            (Condition::Stopped(Cause::PendingBytes), true)
        } else if s.max_memtables > 3 && s.unflushed + 1 >= s.max_memtables {
            (Condition::Delayed(Cause::Memtables), false)
        } else if auto && s.l0 >= slowdown {
            (Condition::Delayed(Cause::L0Files), s.l0 + 2 >= stop)
        } else if auto && s.needed >= SOFT_PENDING_BYTES {
            // Within the last quarter of the way to the hard limit.
            let near =
                s.needed - SOFT_PENDING_BYTES > 3 * (HARD_PENDING_BYTES - SOFT_PENDING_BYTES) / 4;
            (Condition::Delayed(Cause::PendingBytes), near)
        } else {
            (Condition::Normal, false)
        }
    }
}

/// `max_write_buffer_number` as RocksDB's `SanitizeOptions` takes it: at
/// least 2.
pub(super) fn max_memtables(max_write_buffer_number: u32) -> u32 {
    max_write_buffer_number.max(2)
}

impl WriteController {
    /// Whether writes are paced now.
    pub(super) fn delayed(&self) -> bool {
        self.delayed
    }

    /// Why the writer is stopped, if it is.
    pub(super) fn stopped_by(&self) -> Option<Cause> {
        self.cause.filter(|_| self.stopped)
    }

    /// Why writes are paced, if they are.
    pub(super) fn delayed_by(&self) -> Option<Cause> {
        self.cause.filter(|_| self.delayed)
    }

    /// The delayed write rate, bytes/s.
    pub(super) fn rate(&self) -> u64 {
        self.rate
    }

    fn set_rate(&mut self, rate: u64) {
        self.rate = rate.clamp(1, MAX_WRITE_RATE);
    }

    /// `RecalculateWriteStallConditions` after a memtable switch, a flush
    /// or a compaction installed a new version: `condition` and
    /// `near_stop` from [`Condition::of`], `needed` the compaction debt,
    /// `auto_compaction` whether it is on (off, a delay takes the full
    /// rate).
    pub(super) fn recalculate(
        &mut self,
        condition: Condition,
        near_stop: bool,
        needed: u64,
        auto_compaction: bool,
    ) {
        let (was_stopped, needed_delay) = (self.stopped, self.delayed);
        self.cause = match condition {
            Condition::Delayed(cause) | Condition::Stopped(cause) => Some(cause),
            Condition::Normal => None,
        };
        match condition {
            Condition::Stopped(_) => {
                // The stop token replaces any delay token.
                self.stopped = true;
                self.delayed = false;
            }
            Condition::Delayed(_) => {
                let rate = if auto_compaction {
                    self.setup_delay(needed, was_stopped || near_stop)
                } else {
                    // SetupDelay without automatic compaction: the
                    // configured rate as it stands, no debt to follow.
                    MAX_WRITE_RATE
                };
                // `GetDelayToken`: the pacing starts afresh.
                self.stopped = false;
                self.delayed = true;
                self.bytes_left = 0;
                self.last_refill_us = 0;
                self.set_rate(rate);
            }
            Condition::Normal => {
                self.stopped = false;
                self.delayed = false;
                if needed_delay {
                    self.set_rate((self.rate as f64 * DELAY_RECOVER) as u64);
                }
            }
        }
        self.prev_needed = needed;
    }

    /// `SetupDelay`: the rate of a new delay, from the one before and how
    /// the compaction debt moved since the last recalculation (while
    /// already delayed; a first delay keeps the rate).
    fn setup_delay(&self, needed: u64, penalize_stop: bool) -> u64 {
        let mut rate = self.rate;
        if !(self.delayed && MAX_WRITE_RATE > MIN_WRITE_RATE) {
            return rate;
        }
        let prev = self.prev_needed;
        if penalize_stop {
            rate = ((rate as f64 * NEAR_STOP_SLOWDOWN) as u64).max(MIN_WRITE_RATE);
        } else if prev > 0 && prev <= needed {
            rate = ((rate as f64 * INC_SLOWDOWN) as u64).max(MIN_WRITE_RATE);
        } else if prev > needed {
            rate = ((rate as f64 * (1.0 / INC_SLOWDOWN)) as u64).min(MAX_WRITE_RATE);
        }
        rate
    }

    /// `GetDelay`: how long a write of `bytes` at `now_us` must wait,
    /// microseconds, by the pacing's credit of bytes refilled at the rate.
    pub(super) fn delay_us(&mut self, now_us: u64, bytes: u64) -> u64 {
        if self.stopped || !self.delayed {
            return 0;
        }
        if self.bytes_left >= bytes {
            self.bytes_left -= bytes;
            return 0;
        }
        let mut sleep_debt = 0;
        if self.last_refill_us != 0 {
            if self.last_refill_us > now_us {
                sleep_debt = self.last_refill_us - now_us;
            } else {
                let since = now_us - self.last_refill_us;
                self.bytes_left += (since as f64 / 1e6 * self.rate as f64) as u64;
                if since >= REFILL_INTERVAL_US && self.bytes_left > bytes {
                    self.last_refill_us = now_us;
                    self.bytes_left -= bytes;
                    return 0;
                }
            }
        }
        let single_refill = self.rate * REFILL_INTERVAL_US / 1_000_000;
        if self.bytes_left + single_refill >= bytes {
            self.bytes_left = self.bytes_left + single_refill - bytes;
            self.last_refill_us = now_us + REFILL_INTERVAL_US;
            return REFILL_INTERVAL_US + sleep_debt;
        }
        let sleep = (bytes as f64 / self.rate as f64 * 1e6) as u64 + sleep_debt;
        self.last_refill_us = now_us + sleep;
        sleep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_delay_paces_at_the_ceiling_and_lets_a_refill_through_at_once() {
        let mut w = WriteController::default();
        assert_eq!(w.delay_us(1_000, 1 << 20), 0, "not delayed");
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 100, true);
        assert_eq!(w.rate(), MAX_WRITE_RATE);
        // 8 MiB/s refills 8 590 bytes per 1 024 us: a 4 KiB write waits
        // one interval and leaves the rest as credit...
        assert_eq!(w.delay_us(1_000_000, 4096), REFILL_INTERVAL_US);
        // ... which the next write takes without waiting.
        assert_eq!(w.delay_us(1_000_000, 4096), 0);
        // A write larger than an interval's refill waits its own time.
        let mut w = WriteController::default();
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 100, true);
        assert_eq!(w.delay_us(1_000_000, 1 << 20), 125_000);
    }

    #[test]
    fn the_rate_follows_the_compaction_debt() {
        let mut w = WriteController::default();
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 100, true);
        // The debt grew: slower by 0.8.
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 200, true);
        assert_eq!(w.rate(), (MAX_WRITE_RATE as f64 * 0.8) as u64);
        // It shrank: faster by 1.25 (truncated to whole bytes as RocksDB
        // does), never above the ceiling.
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 50, true);
        assert_eq!(w.rate(), MAX_WRITE_RATE - 1);
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 40, true);
        assert_eq!(w.rate(), MAX_WRITE_RATE);
        // Near the stop: slower by 0.6, down to 16 KiB/s at the least.
        for _ in 0..40 {
            w.recalculate(Condition::Delayed(Cause::L0Files), true, 50, true);
        }
        assert_eq!(w.rate(), MIN_WRITE_RATE);
        // Out of the delay: 1.4 times faster, and no pacing.
        w.recalculate(Condition::Normal, false, 0, true);
        assert_eq!(w.rate(), (MIN_WRITE_RATE as f64 * 1.4) as u64);
        assert!(!w.delayed());
        assert_eq!(w.delay_us(5_000_000, 1 << 20), 0);
    }

    #[test]
    fn a_stop_ends_the_pacing_and_penalises_the_next_delay() {
        let mut w = WriteController::default();
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 100, true);
        w.recalculate(Condition::Stopped(Cause::L0Files), false, 100, true);
        assert!(!w.delayed());
        assert_eq!(w.delay_us(1_000, 1 << 20), 0, "the stop itself waits");
        // Leaving a stop for a delay counts as a near stop, but only an
        // already delayed controller adjusts its rate.
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 50, true);
        assert_eq!(w.rate(), MAX_WRITE_RATE);
        w.recalculate(Condition::Stopped(Cause::L0Files), false, 50, true);
        w.recalculate(Condition::Delayed(Cause::L0Files), false, 50, true);
        assert_eq!(
            w.rate(),
            MAX_WRITE_RATE,
            "stop then delay: a first delay again"
        );
    }
}
