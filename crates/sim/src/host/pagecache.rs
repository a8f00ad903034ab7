//! The page cache and its writeback, as Linux 5.0 runs them
//! (mm/page-writeback.c, fs/fs-writeback.c, mm/readahead.c), for threads
//! that do buffered I/O (a job without `direct` on `psync`, `pvsync2` or
//! `libaio`).
//!
//! * A buffered `write()` copies into the cache: CPU on the writer's core
//!   (`buffered_call` plus `page_copy` per page), no device request. The
//!   pages become dirty; a file's `dirtied_when` is set when it goes from
//!   clean to dirty (`__mark_inode_dirty`).
//! * After the copy the writer runs `balance_dirty_pages_ratelimited`:
//!   once it has dirtied `nr_dirtied_pause` pages since it last looked
//!   (32 at first, about the square root of the headroom under the
//!   free-run ceiling, 8 while the limit is exceeded) it runs
//!   `balance_dirty_pages`. Under the free-run ceiling (halfway between
//!   `background_ratio` and `dirty_ratio` of `memory`) it goes on; past
//!   it the flusher is kicked and the writer sleeps `HZ * pages_dirtied
//!   / task_ratelimit` jiffies less the time since its last pause, where
//!   `task_ratelimit` is the cache's `dirty_ratelimit` (moved every
//!   200 ms toward the rate that balances the dirtying against the
//!   estimated bandwidth) scaled by the position ratio (2 at the ceiling,
//!   1 at the setpoint, 0 at the limit); a pause under `wb_min_pause` is
//!   carried over, one over `wb_max_pause` cut. Past the limit the rate
//!   is zero: the writer sleeps `wb_max_pause` and looks again. The
//!   jiffy is the host's tick. Past the background threshold the flusher
//!   is kicked too.
//! * The flusher is a kernel thread (the bdi's writeback kworker) on
//!   `flusher_cpu`. It sleeps until a writer kicks it or its periodic
//!   timer fires (`dirty_writeback_interval`, armed when the first file
//!   gets dirty and again after each run while dirty pages remain). Either
//!   wake-up runs as `wb_do_writeback`: the periodic pass
//!   (`wb_check_old_data_flush`: every file dirty for longer than
//!   `expire`) if `writeback_interval` has passed since the last, then
//!   background writeback while dirty pages exceed the background
//!   threshold (`wb_check_background_flush`). Files take turns
//!   (`writeback_sb_inodes`): each queued file gets one chunk
//!   (`writeback_chunk_size`), then waits for its next turn if it has pages
//!   left (`b_more_io`); the queue is filled oldest `dirtied_when` first;
//!   each file is written from where its last writeback stopped (`writeback_index`,
//!   range-cyclic), in requests of contiguous dirty pages merged up to
//!   `max_writeback_request`, unmarked (docs/ALGORITHMS.md section 5),
//!   sixteen to a plug (`wb_writeback`'s plug, flushed as blk-mq flushes
//!   it). It does not wait for them: `WB_SYNC_NONE` skips pages already
//!   under writeback, and only the driver's tags bound what is in flight.
//!   A completion ends the pages' writeback in the handler
//!   (`end_page_writeback`); the model applies it when the cache is next
//!   looked at, which no one can tell apart.
//! * A buffered `read()` copies what is cached; a miss issues one
//!   read-ahead request (unmarked) whose window follows
//!   `ondemand_readahead`: `get_init_ra_size` for a new stream, the next
//!   window (`get_next_ra_size`, up to `read_ahead`) when the miss follows
//!   the previous window. Linux also starts the next window early
//!   (`PG_readahead`, asynchronous read-ahead); the model reads each
//!   window when it is needed, so a sequential reader waits once per
//!   window.
//! * Clean pages stay cached until `memory` is full, on Linux's two file
//!   lists: a page read in or cleaned joins the inactive list; a read
//!   marks it referenced (`mark_page_accessed`), a second read moves it to
//!   the active list. Reclaim takes the oldest inactive page, moving the
//!   oldest active pages back first while the inactive list is low
//!   (`inactive_list_is_low`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use cint_policy::{Hint, Nanos, SEC};
use cint_scenario::{Job, Rw, Work};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::engine::{stream_rng, Event};
use crate::world::{Activity, Cont, ReqState, Request, RunState, Wait, World};

/// ext4's journal commit for an `fsync` or `fdatasync` that changed the
/// file's metadata: one 4 KiB block (jbd2's commit; the built-in devices
/// have no volatile write cache, so no flush follows it).
pub(crate) const JOURNAL_COMMIT: u64 = 4096;

/// The job index of kernel threads (the flusher): they belong to no job.
pub(crate) const KERNEL_JOB: u32 = u32::MAX;

/// Random streams of buffered offsets, `PAGE_CACHE_STREAM_BASE | thread`:
/// apart from the jobs' own, so the other draws stay as they were.
const PAGE_CACHE_STREAM_BASE: u64 = 1 << 43;

/// The page size of the reference hosts (x86-64).
pub(crate) const PAGE: u64 = 4096;

/// `INIT_BW` (mm/backing-dev.c): the writeback bandwidth estimate before
/// any measurement, 100 MB/s, in pages per second. `wb_init` starts the
/// writers' `dirty_ratelimit` there too.
const INIT_BW: u64 = (100 << 20) / PAGE;

/// `RATELIMIT_CALC_SHIFT` (mm/page-writeback.c): the position ratio's
/// fixed point, 1.0 is `1 << 10`.
const RATELIMIT_SHIFT: u32 = 10;

/// `DIRTY_POLL_THRESH` (mm/page-writeback.c): `128 >> (PAGE_SHIFT - 10)`
/// pages, also a new task's `nr_dirtied_pause` (kernel/fork.c).
const DIRTY_POLL_THRESH: u64 = 32;

/// `balance_dirty_pages_ratelimited` looks at the limits after this many
/// pages of a writer while the limit is exceeded (`32 >> (PAGE_SHIFT - 10)`).
const EXCEEDED_POLL: u64 = 8;

/// `MIN_WRITEBACK_PAGES` (fs/fs-writeback.c): background writeback
/// writes at least this much before it looks at the threshold again, and
/// its chunks are multiples of it.
const MIN_WRITEBACK_PAGES: u64 = 4096;

/// Requests the flusher puts in one plug: `BLK_MAX_REQUEST_COUNT`.
const PLUG_REQUESTS: u32 = 16;

/// The settings in pages and nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub memory_pages: u64,
    pub background_pages: u64,
    pub limit_pages: u64,
    pub writeback_interval: Nanos,
    pub expire: Nanos,
    pub max_request_pages: u64,
    pub read_ahead_pages: u64,
    pub buffered_call: Nanos,
    pub page_copy: Nanos,
    pub writeback_page: Nanos,
    /// One jiffy: the host's tick (`1 / CONFIG_HZ`), the unit of every
    /// writeback clock and throttle pause.
    pub jiffy: Nanos,
    /// `wb_stat_error()`: the per-CPU counters' slack, `8 * (1 +
    /// ilog2(nr_cpu_ids)) * nr_cpu_ids` pages; an over-limit writer whose
    /// device holds no more than this stops looping.
    pub stat_error: u64,
}

impl Settings {
    /// `HZ`: jiffies per second.
    fn hz(&self) -> u64 {
        (SEC / self.jiffy).max(1)
    }

    /// `jiffies` at `now`.
    fn jiffies(&self, now: Nanos) -> u64 {
        now / self.jiffy
    }

    /// `MAX_PAUSE` and `BANDWIDTH_INTERVAL`: `max(HZ / 5, 1)` jiffies.
    fn max_pause(&self) -> u64 {
        (self.hz() / 5).max(1)
    }

    /// The settings of a kernel with `p`, a tick of `tick` and `cpus`
    /// CPUs.
    pub(crate) fn from_profile(
        p: &cint_scenario::page_cache::PageCacheProfile,
        tick: Nanos,
        cpus: u32,
    ) -> Settings {
        let memory_pages = (p.memory.0 / PAGE).max(1);
        let cpus = u64::from(cpus.max(1));
        Settings {
            jiffy: tick.max(1),
            stat_error: 8 * (1 + u64::from(cpus.ilog2())) * cpus,
            memory_pages,
            background_pages: memory_pages * u64::from(p.background_ratio) / 100,
            limit_pages: memory_pages * u64::from(p.dirty_ratio) / 100,
            writeback_interval: p.writeback_interval.0,
            expire: p.expire.0,
            max_request_pages: (p.max_writeback_request.0 / PAGE).max(1),
            read_ahead_pages: (p.read_ahead.0 / PAGE).max(1),
            buffered_call: p.buffered_call.0,
            page_copy: p.page_copy.0,
            writeback_page: p.writeback_page.0,
        }
    }
}

/// A clean cached page's place on the file LRU lists, in four bytes (the
/// cached pages' map is the read path's hottest data): `PG_active` (on
/// the active list), `PG_referenced` (read once since it joined its
/// list) and its entry's number on its list (older entries of the page
/// are stale). The numbers wrap at `2^30`; [`PageCache::compact_lists`]
/// keeps fewer entries than that, so a page's number is unique among them.
#[derive(Clone, Copy, Debug)]
struct Lru(u32);

impl Lru {
    const ACTIVE: u32 = 1 << 31;
    const REFERENCED: u32 = 1 << 30;
    const SEQ: u32 = Lru::REFERENCED - 1;

    fn seq(self) -> u32 {
        self.0 & Lru::SEQ
    }

    fn active(self) -> bool {
        self.0 & Lru::ACTIVE != 0
    }

    fn referenced(self) -> bool {
        self.0 & Lru::REFERENCED != 0
    }

    /// A page joins a list (unreferenced) as entry `seq`.
    fn joined(active: bool, seq: u32) -> Lru {
        Lru(if active { Lru::ACTIVE } else { 0 } | (seq & Lru::SEQ))
    }
}

/// The next list entry's number after `seq`.
fn next_seq(seq: &mut u32) -> u32 {
    let at = *seq;
    *seq = (at + 1) & Lru::SEQ;
    at
}

/// Entries on the lists past which stale ones are dropped whatever the
/// cache holds: the numbers stay unique (`Lru`).
const MAX_LIST_ENTRIES: u64 = 1 << 29;

/// One file's pages.
#[derive(Debug, Default)]
struct File {
    dirty: BTreeSet<u64>,
    writeback: BTreeSet<u64>,
    /// Clean cached pages.
    cached: BTreeMap<u64, Lru>,
    /// When the file went from clean to dirty (`inode->dirtied_when`).
    dirtied_when: Option<Nanos>,
    /// Where its next writeback starts (`mapping->writeback_index`).
    cursor: u64,
    /// The last read-ahead window: first page and length.
    ra: Option<(u64, u64)>,
    /// The last page a read touched, hit or miss (`ra->prev_pos`).
    prev_page: Option<u64>,
    /// In the flusher's queues (`b_io` or `b_more_io`), not among the
    /// dirty files waiting (`b_dirty`).
    queued: bool,
}

/// What the reading program told the kernel of its pattern on the file
/// (`posix_fadvise`, mm/fadvise.c of Linux 5.0), as fio does by default
/// (`fadvise_hint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Nothing: `ondemand_readahead` judges each miss.
    #[default]
    Normal,
    /// `POSIX_FADV_RANDOM` sets `FMODE_RANDOM`: a miss reads its own
    /// pages and nothing more (`force_page_cache_readahead`).
    Random,
    /// `POSIX_FADV_SEQUENTIAL`: the file's read-ahead limit is twice the
    /// device's (`ra_pages * 2`).
    Sequential,
}

impl Advice {
    /// fio's advice for `io` (fio's `fadvise_hint`: random for a random
    /// `rw`, sequential otherwise).
    pub(crate) fn of(io: &cint_scenario::IoJob) -> Advice {
        if !io.fadvise_hint {
            Advice::Normal
        } else if matches!(io.rw, Rw::RandRead | Rw::RandWrite | Rw::RandRw) {
            Advice::Random
        } else {
            Advice::Sequential
        }
    }
}

/// A contiguous run of one file's pages (a request's payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    pub file: u32,
    pub first: u64,
    pub pages: u64,
}

/// Why the flusher runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// A writer found the dirty pages past the background threshold.
    Background,
    /// The periodic wake-up: expired files.
    Kupdate,
}

/// Totals of the mechanism, for its tests and the result's note.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    /// Clean-to-dirty page transitions (a page dirtied again while still
    /// dirty is not a new one).
    pub dirtied: u64,
    /// Pages whose writeback completed.
    pub written: u64,
    /// Writeback requests submitted.
    pub requests: u64,
    /// The largest writeback request, pages.
    pub largest_request: u64,
    /// Writeback requests whose pages were not all contiguous or larger
    /// than allowed (must stay 0).
    pub malformed: u64,
    /// Writers' throttle pauses.
    pub pauses: u64,
    /// Flusher runs that wrote back, started by a kick and by the
    /// periodic timer.
    pub background_runs: u64,
    pub kupdate_runs: u64,
    /// Read-ahead requests and their pages.
    pub read_ahead: u64,
    pub read_ahead_pages: u64,
}

/// The cache: every file's pages, the counts the thresholds use, and the
/// flusher's bandwidth estimate.
#[derive(Debug)]
pub(crate) struct PageCache {
    pub set: Settings,
    files: BTreeMap<u32, File>,
    /// The clean cached pages on the inactive and active file lists,
    /// oldest first, as (file, page, seq); entries whose page has since
    /// moved, been dirtied or been evicted are skipped when met.
    inactive: VecDeque<(u32, u64, u32)>,
    active: VecDeque<(u32, u64, u32)>,
    next_seq: u32,
    /// Clean cached pages, and those of them on the active list.
    cached: u64,
    active_pages: u64,
    dirty: u64,
    writeback: u64,
    /// Writeback requests in flight by request slot.
    in_flight: BTreeMap<u32, Extent>,
    /// Files queued for writeback (`b_io`), next first, and those whose
    /// chunk ran out with pages left (`b_more_io`), in the order they did.
    b_io: VecDeque<u32>,
    b_more_io: VecDeque<u32>,
    /// The file being written back, and the pages left in its chunk.
    current: Option<u32>,
    chunk_left: u64,
    /// When the current `writeback_sb_inodes` call began, and whether it
    /// has written.
    sb_call: Option<Nanos>,
    sb_call_wrote: bool,
    /// Estimated write bandwidth, pages per second
    /// (`wb->write_bandwidth`) ...
    bandwidth: u64,
    /// ... and its smoothed value (`wb->avg_write_bandwidth`), which the
    /// pause and the background chunk use.
    avg_bandwidth: u64,
    /// The writers' base rate, pages per second (`wb->dirty_ratelimit`),
    /// the last balanced rate it moved toward, when it last moved
    /// (jiffies) and the pages dirtied then (`dirtied_stamp`).
    dirty_ratelimit: u64,
    balanced_ratelimit: u64,
    rl_stamp: u64,
    dirtied_stamp: u64,
    /// A writer found the limit exceeded (`wb->dirty_exceeded`): every
    /// writer looks after at most `EXCEEDED_POLL` pages.
    dirty_exceeded: bool,
    /// When the estimate was last updated, jiffies (`bw_time_stamp`).
    bw_stamp: u64,
    bw_written: u64,
    /// When pages last went under writeback with none before (the start
    /// of the writeback whose completions update the estimate), jiffies.
    wb_started: u64,
    pub totals: Totals,
}

impl PageCache {
    pub(crate) fn new(set: Settings) -> PageCache {
        PageCache {
            set,
            files: BTreeMap::new(),
            inactive: VecDeque::new(),
            active: VecDeque::new(),
            next_seq: 0,
            active_pages: 0,
            cached: 0,
            dirty: 0,
            writeback: 0,
            in_flight: BTreeMap::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            current: None,
            chunk_left: 0,
            sb_call: None,
            sb_call_wrote: false,
            bandwidth: INIT_BW,
            avg_bandwidth: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_ratelimit: INIT_BW,
            rl_stamp: 0,
            dirtied_stamp: 0,
            dirty_exceeded: false,
            bw_stamp: 0,
            bw_written: 0,
            wb_started: 0,
            totals: Totals::default(),
        }
    }

    /// Dirty pages (`NR_FILE_DIRTY`).
    pub(crate) fn dirty_pages(&self) -> u64 {
        self.dirty
    }

    /// Pages under writeback (`NR_WRITEBACK`).
    pub(crate) fn writeback_pages(&self) -> u64 {
        self.writeback
    }

    /// Dirty pages past the background threshold.
    pub(crate) fn over_background(&self) -> bool {
        self.dirty > self.set.background_pages
    }

    /// Dirty and writeback pages past the dirty limit.
    #[cfg(test)]
    fn over_limit(&self) -> bool {
        self.dirty + self.writeback > self.set.limit_pages
    }

    /// `wb_max_pause`, jiffies: the longest a writer sleeps at once, the
    /// time the smoothed bandwidth needs for an eighth of the device's
    /// dirty and writeback pages (`wb_dirty`), plus one, at most
    /// `MAX_PAUSE`: a longer sleep could let a small pool run dry.
    fn max_pause(&self, wb_dirty: u64) -> u64 {
        let hz = self.set.hz();
        let t = wb_dirty / (1 + self.avg_bandwidth / (1 + hz / 8).next_power_of_two()) + 1;
        t.min(self.set.max_pause())
    }

    /// `wb_min_pause`, jiffies, and the writer's next `nr_dirtied_pause`:
    /// Linux aims at pauses of about 10 ms (longer for many writers,
    /// `hi - lo`), each after enough pages to fill it at
    /// `dirty_ratelimit`, but at least `DIRTY_POLL_THRESH` pages so that
    /// small pauses do not break a reader's stream; a shorter computed
    /// pause than the minimum is not slept but carried over.
    fn min_pause(&self, max_pause: u64, task_rl: u64, dirty_rl: u64) -> (u64, u64) {
        let hz = self.set.hz();
        let hz_pow = hz.next_power_of_two();
        let hi = self.avg_bandwidth.max(1).ilog2();
        let lo = dirty_rl.max(1).ilog2();
        let mut t = (hz / 100).max(1);
        if hi > lo {
            t += u64::from(hi - lo) * (10 * hz) / 1024;
        }
        t = t.min(1 + max_pause / 2);
        let mut pages = dirty_rl * t / hz_pow;
        if pages < DIRTY_POLL_THRESH {
            t = max_pause;
            pages = dirty_rl * t / hz_pow;
            if pages > DIRTY_POLL_THRESH {
                pages = DIRTY_POLL_THRESH;
                t = hz * DIRTY_POLL_THRESH / dirty_rl.max(1);
            }
        }
        let pause = hz * pages / (task_rl + 1);
        if pause > max_pause {
            t = max_pause;
            pages = task_rl * t / hz_pow;
        }
        let min = if pages >= DIRTY_POLL_THRESH {
            1 + t / 2
        } else {
            t
        };
        (min, pages)
    }

    /// `wb_position_ratio` (fixed point, `1 << RATELIMIT_SHIFT` is 1.0)
    /// with `dirty` dirty and writeback pages: the global control line,
    /// a cubic through 2.0 at the free-run ceiling, 1.0 at the setpoint
    /// halfway to the limit and 0 at the limit, scaled by the device's
    /// line. The kernel has one device per cache here (every page is
    /// this `wb`'s), so `wb_dirty` is `dirty` and `wb_thresh` the whole
    /// limit once the device has completed any writeback (its share of
    /// completions, `__wb_calc_thresh`, is then all of them; nothing before
    /// the first; Linux's count of them decays, so after a minute or so
    /// without any the share is nothing again, which the model does not
    /// follow), and the device line is the single-`wb` one: 1.0 at the
    /// setpoint, falling over `8 * avg_write_bandwidth`.
    fn position_ratio(&self, dirty: u64) -> u64 {
        let set = &self.set;
        let (thresh, limit) = (set.limit_pages, set.limit_pages);
        if dirty >= limit {
            return 0;
        }
        let freerun = freerun_ceiling(set);
        let setpoint = (freerun + limit) / 2;
        let mut pos_ratio = pos_ratio_polynom(setpoint, dirty, limit);
        let wb_dirty = u128::from(dirty);
        let wb_thresh = if self.totals.written > 0 { thresh } else { 0 };
        let wb_thresh = u128::from(wb_thresh.min(thresh).max((limit - dirty) / 8));
        let thresh = u128::from(thresh);
        let x = (wb_thresh << 16) / (thresh | 1);
        let wb_setpoint = (u128::from(setpoint) * x) >> 16;
        let span = ((thresh - wb_thresh + 8 * u128::from(self.avg_bandwidth)) * x) >> 16;
        let x_intercept = wb_setpoint + span;
        if wb_dirty < x_intercept - span / 4 {
            pos_ratio = pos_ratio * (x_intercept - wb_dirty) / ((x_intercept - wb_setpoint) | 1);
        } else {
            pos_ratio /= 4;
        }
        // The device's reserve: a device with few pages dirty is let
        // fill them, lest it idle.
        let x_intercept = wb_thresh / 2;
        if wb_dirty < x_intercept {
            if wb_dirty > x_intercept / 8 {
                pos_ratio = pos_ratio * x_intercept / wb_dirty;
            } else {
                pos_ratio *= 8;
            }
        }
        u64::try_from(pos_ratio).unwrap_or(u64::MAX)
    }

    /// `wb_update_dirty_ratelimit`: the writers' base rate moves toward
    /// the balanced rate (`task_ratelimit * write_bw / dirty_rate`, the
    /// rate at which N writers together dirty what the device writes), by
    /// a step limited by how far the position ratio is from 1.0 and only
    /// when that error points the same way, so that the rate settles
    /// rather than oscillates.
    fn update_dirty_ratelimit(&mut self, dirty: u64, pos_ratio: u64, elapsed: u64) {
        let set = self.set;
        let setpoint = (freerun_ceiling(&set) + set.limit_pages) / 2;
        let write_bw = u128::from(self.avg_bandwidth);
        let dirty_rl = u128::from(self.dirty_ratelimit);
        let dirtied = u128::from(self.totals.dirtied - self.dirtied_stamp);
        let dirty_rate = dirtied * u128::from(set.hz()) / u128::from(elapsed.max(1));
        let task_rl = ((dirty_rl * u128::from(pos_ratio)) >> RATELIMIT_SHIFT) + 1;
        let balanced = (task_rl * write_bw / (dirty_rate | 1)).min(write_bw);
        let prev = u128::from(self.balanced_ratelimit);
        let mut step = 0;
        if dirty < setpoint {
            let x = prev.min(balanced).min(task_rl);
            if dirty_rl < x {
                step = x - dirty_rl;
            }
        } else {
            let x = prev.max(balanced).max(task_rl);
            if dirty_rl > x {
                step = dirty_rl - x;
            }
        }
        // Slower as the rate nears its target: the balanced rate itself
        // jumps about over a 200 ms measurement.
        let shift = dirty_rl / (2 * step + 1);
        step = if shift < 64 {
            (step >> shift).div_ceil(8)
        } else {
            0
        };
        let rl = if dirty_rl < balanced {
            dirty_rl + step
        } else {
            dirty_rl - step
        };
        self.dirty_ratelimit = u64::try_from(rl).unwrap_or(u64::MAX).max(1);
        self.balanced_ratelimit = u64::try_from(balanced).unwrap_or(u64::MAX);
    }

    /// The writer-side update of `__wb_update_bandwidth` (its
    /// `update_ratelimit` part) at `now` jiffies with `dirty` pages and the
    /// position ratio: at most every `BANDWIDTH_INTERVAL`, skipped after a
    /// quiet second. The model's completions update the write bandwidth
    /// itself ([`PageCache::written`]), so the rate keeps its own clock
    /// where Linux shares `bw_time_stamp`: with throttled writers Linux's
    /// rate moves every 200 ms as here.
    fn update_ratelimit_at(&mut self, now: u64, dirty: u64, pos_ratio: u64) {
        let elapsed = now.saturating_sub(self.rl_stamp);
        if elapsed <= self.set.max_pause() {
            return;
        }
        if elapsed <= self.set.hz() {
            self.update_dirty_ratelimit(dirty, pos_ratio, elapsed);
        }
        self.rl_stamp = now;
        self.dirtied_stamp = self.totals.dirtied;
    }

    /// `balance_dirty_pages_ratelimited` for the pages writer `p` has
    /// dirtied since it last looked (`p.pending`) at `now`, and
    /// `balance_dirty_pages` each time they reach its `nr_dirtied_pause`,
    /// up to the first pause. Whether the flusher is to be woken
    /// (`wb_start_background_writeback` when the writer is past the
    /// free-run ceiling or the dirty pages past the background
    /// threshold), and when the pause ends.
    pub(crate) fn balance(&mut self, p: &mut Pacing, now: Nanos) -> Balance {
        let mut out = Balance::default();
        if std::mem::take(&mut p.ending) {
            out.kick |= self.end_balance(p);
        }
        loop {
            let pages_dirtied = match p.looping {
                Some(pages) => pages,
                None => {
                    let ratelimit = if self.dirty_exceeded {
                        p.nr_dirtied_pause.min(EXCEEDED_POLL)
                    } else {
                        p.nr_dirtied_pause
                    };
                    if p.pending == 0 {
                        return out;
                    }
                    // Linux looks after every page: the first page that
                    // brings `nr_dirtied` to the limit calls in.
                    let take = ratelimit.saturating_sub(p.nr_dirtied).max(1);
                    if take > p.pending {
                        p.nr_dirtied += p.pending;
                        p.pending = 0;
                        return out;
                    }
                    p.pending -= take;
                    p.nr_dirtied += take;
                    p.exceeded = false;
                    p.nr_dirtied
                }
            };
            let step = self.throttle_step(p, pages_dirtied, now);
            out.kick |= step.kick;
            if let Some(pause) = step.pause {
                let end = (self.set.jiffies(now) + pause) * self.set.jiffy;
                out.pause_until = Some(end.max(now + 1));
                p.looping = step.again.then_some(pages_dirtied);
                p.ending = !step.again;
                self.totals.pauses += 1;
                return out;
            }
            p.looping = None;
            out.kick |= self.end_balance(p);
        }
    }

    /// The end of a `balance_dirty_pages` call: `wb->dirty_exceeded` is
    /// cleared unless its last turn found the limit exceeded, and the
    /// flusher is to be woken if the dirty pages are past the background
    /// threshold.
    fn end_balance(&mut self, p: &Pacing) -> bool {
        if !p.exceeded {
            self.dirty_exceeded = false;
        }
        self.over_background()
    }

    /// One turn of `balance_dirty_pages`' loop for writer `p` that
    /// dirtied `pages_dirtied` pages: free below the ceiling, otherwise a
    /// pause of `HZ * pages_dirtied / task_ratelimit` jiffies counted from
    /// the end of its last one (`dirty_paused_when`: a writer that spent
    /// the time elsewhere owes less), within `wb_min_pause` (under it the
    /// writer dirties on and the period is carried over) and
    /// `wb_max_pause`.
    fn throttle_step(&mut self, p: &mut Pacing, pages_dirtied: u64, now: Nanos) -> Step {
        let set = self.set;
        let mut now = set.jiffies(now);
        let dirty = self.dirty + self.writeback;
        let thresh = set.limit_pages;
        if dirty <= freerun_ceiling(&set) {
            p.dirty_paused_when = now;
            p.nr_dirtied = 0;
            p.nr_dirtied_pause = dirty_poll_interval(dirty, thresh);
            return Step::default();
        }
        let wb_thresh = if self.totals.written > 0 { thresh } else { 0 };
        let exceeded = dirty > wb_thresh && dirty > thresh;
        p.exceeded = exceeded;
        let pos_ratio = self.position_ratio(dirty);
        self.dirty_exceeded |= exceeded;
        self.update_ratelimit_at(now, dirty, pos_ratio);
        let dirty_rl = self.dirty_ratelimit;
        let task_rl =
            u64::try_from((u128::from(dirty_rl) * u128::from(pos_ratio)) >> RATELIMIT_SHIFT)
                .unwrap_or(u64::MAX);
        let max_pause = self.max_pause(dirty);
        let (min_pause, next_pause_pages) = self.min_pause(max_pause, task_rl, dirty_rl);
        let mut pause = max_pause;
        // Over the limit (a zero rate) the pause is `max_pause`.
        if let Some(period) = (set.hz() * pages_dirtied).checked_div(task_rl) {
            // Linux's 0 is "never paused", as at the start of a run.
            let mut owed = i128::from(period);
            if p.dirty_paused_when > 0 {
                owed -= i128::from(now) - i128::from(p.dirty_paused_when);
            }
            if owed < i128::from(min_pause) {
                if owed < -i128::from(set.hz()) {
                    p.dirty_paused_when = now;
                    p.nr_dirtied = 0;
                } else if period > 0 {
                    p.dirty_paused_when += period;
                    p.nr_dirtied = 0;
                } else if p.nr_dirtied_pause <= pages_dirtied {
                    p.nr_dirtied_pause += pages_dirtied;
                }
                return Step {
                    kick: true,
                    ..Step::default()
                };
            }
            let owed = owed.unsigned_abs() as u64;
            pause = owed;
            if owed > max_pause {
                // An occasional drop of the rate: the excess is forgiven,
                // up to another `max_pause`.
                now += (owed - max_pause).min(max_pause);
                pause = max_pause;
            }
        }
        p.dirty_paused_when = now + pause;
        p.nr_dirtied = 0;
        p.nr_dirtied_pause = next_pause_pages;
        Step {
            kick: true,
            pause: Some(pause),
            // Over the limit the writer looks again after its pause, unless
            // its device holds next to nothing (`wb_stat_error`).
            again: task_rl == 0 && dirty > set.stat_error,
        }
    }

    /// Pages `first..first + pages` of `file` are written at `now`;
    /// true if no page was dirty before (`__mark_inode_dirty` then arms
    /// the flusher's periodic timer).
    pub(crate) fn write(&mut self, file: u32, first: u64, pages: u64, now: Nanos) -> bool {
        let none_dirty = self.dirty == 0;
        let f = self.files.entry(file).or_default();
        let was_clean = f.dirty.is_empty();
        for p in first..first + pages {
            if f.dirty.insert(p) {
                self.dirty += 1;
                self.totals.dirtied += 1;
                if let Some(lru) = f.cached.remove(&p) {
                    self.cached -= 1;
                    self.active_pages -= u64::from(lru.active());
                }
            }
        }
        if was_clean {
            f.dirtied_when = Some(now);
        }
        none_dirty && self.dirty > 0
    }

    /// Whether pages `first..first + pages` of `file` are all cached
    /// (clean, dirty or under writeback); the tests' view, without
    /// marking anything accessed ([`PageCache::read_hit`] does).
    #[cfg(test)]
    pub(crate) fn cached(&self, file: u32, first: u64, pages: u64) -> bool {
        self.files.get(&file).is_some_and(|f| {
            (first..first + pages).all(|p| {
                f.cached.contains_key(&p) || f.dirty.contains(&p) || f.writeback.contains(&p)
            })
        })
    }

    /// A read of `pages` pages at `first` of `file`, hit or miss, is done:
    /// the next miss is judged against it (`ra->prev_pos`).
    pub(crate) fn note_read(&mut self, file: u32, first: u64, pages: u64) {
        self.files.entry(file).or_default().prev_page = Some(first + pages.max(1) - 1);
    }

    /// The read-ahead window for a miss of `pages` pages at `first`
    /// (Linux 5.0's `page_cache_sync_readahead` and `ondemand_readahead`
    /// without the asynchronous part), within the file's `size_pages`.
    pub(crate) fn read_ahead(
        &mut self,
        file: u32,
        first: u64,
        pages: u64,
        size_pages: u64,
        advice: Advice,
    ) -> Extent {
        let max = match advice {
            Advice::Sequential => 2 * self.set.read_ahead_pages,
            _ => self.set.read_ahead_pages,
        };
        let f = self.files.entry(file).or_default();
        let (len, stream) = match advice {
            Advice::Random => (pages, false),
            Advice::Normal | Advice::Sequential => ondemand_window(f, first, pages, max),
        };
        let mut len = len
            .max(pages)
            .min(size_pages.saturating_sub(first).max(pages));
        // Pages already cached are not read again: the window stops at the
        // first one past what the call needs (`__do_page_cache_readahead`
        // reads only the missing pages).
        let held =
            |p: &u64| f.cached.contains_key(p) || f.dirty.contains(p) || f.writeback.contains(p);
        if let Some(p) = (first + pages..first + len).find(|p| held(p)) {
            len = p - first;
        }
        if stream {
            f.ra = Some((first, len));
        }
        self.totals.read_ahead += 1;
        self.totals.read_ahead_pages += len;
        Extent {
            file,
            first,
            pages: len,
        }
    }

    /// A read-ahead request completed: its pages are cached clean (those
    /// dirtied meanwhile stay dirty).
    pub(crate) fn read_done(&mut self, e: Extent) {
        let f = self.files.entry(e.file).or_default();
        for p in e.first..e.first + e.pages {
            if !f.dirty.contains(&p) && !f.writeback.contains(&p) {
                self.cached += add_clean(f, (e.file, p), &mut self.next_seq, &mut self.inactive);
            }
        }
        self.compact_lists();
        self.evict();
    }

    /// Drops the stale entries of the lists once they are more than half
    /// of them: a page dirtied, moved or evicted leaves its old entry
    /// behind, and a cache that never fills never pops them. Amortised,
    /// a constant per entry pushed (called after each batch of pages
    /// added: a batch is at most a request's pages, far under the slack).
    fn compact_lists(&mut self) {
        let live = self.cached;
        let entries = (self.inactive.len() + self.active.len()) as u64;
        if entries < (2 * live + 1024).min(MAX_LIST_ENTRIES) {
            return;
        }
        for active in [false, true] {
            let list = if active {
                &mut self.active
            } else {
                &mut self.inactive
            };
            let files = &self.files;
            list.retain(|&(file, p, seq)| {
                files
                    .get(&file)
                    .and_then(|f| f.cached.get(&p))
                    .is_some_and(|l| l.seq() == seq && l.active() == active)
            });
        }
    }

    /// Whether a read at `first` of `file` starts on the page the last
    /// read ended on (`generic_file_buffered_read` then does not mark that
    /// page accessed again: `prev_index == index`, and the model's reads
    /// are whole pages, so the offsets match too).
    pub(crate) fn rereads_last_page(&self, file: u32, first: u64) -> bool {
        self.files
            .get(&file)
            .is_some_and(|f| f.prev_page == Some(first))
    }

    /// `mark_page_accessed` for each clean cached page a read of `pages`
    /// at `first` of `file` copies, but the first if `skip_first`
    /// ([`PageCache::rereads_last_page`]).
    pub(crate) fn mark_accessed(&mut self, file: u32, first: u64, pages: u64, skip_first: bool) {
        let Some(f) = self.files.get_mut(&file) else {
            return;
        };
        let from = first + u64::from(skip_first);
        for (&p, lru) in f.cached.range_mut(from..first + pages) {
            if access(lru, &mut self.next_seq) {
                self.active.push_back((file, p, lru.seq()));
                self.active_pages += 1;
            }
        }
    }

    /// A read of `pages` pages at `first` of `file`: if they are all
    /// cached, it copies them (marking them accessed, [`access`]) and is
    /// done (true, and the next miss is judged against it); otherwise
    /// nothing changes. One look-up per page, as [`PageCache::cached`].
    pub(crate) fn read_hit(&mut self, file: u32, first: u64, pages: u64) -> bool {
        let Some(f) = self.files.get_mut(&file) else {
            return false;
        };
        let skip_first = f.prev_page == Some(first);
        if pages == 1 {
            // The common read, in one look-up of the page.
            if let Some(lru) = f.cached.get_mut(&first) {
                if !skip_first && access(lru, &mut self.next_seq) {
                    self.active.push_back((file, first, lru.seq()));
                    self.active_pages += 1;
                }
            } else if !f.dirty.contains(&first) && !f.writeback.contains(&first) {
                return false;
            }
            f.prev_page = Some(first);
            return true;
        }
        let held = (first..first + pages)
            .all(|p| f.cached.contains_key(&p) || f.dirty.contains(&p) || f.writeback.contains(&p));
        if !held {
            return false;
        }
        f.prev_page = Some(first + pages.max(1) - 1);
        self.mark_accessed(file, first, pages, skip_first);
        true
    }

    /// `writeback_chunk_size` (fs/fs-writeback.c) of a `WB_SYNC_NONE`
    /// pass: what an inode gets before the flusher looks elsewhere, half a
    /// second at the smoothed bandwidth but at most an eighth of the dirty
    /// limit (`DIRTY_SCOPE`), plus `MIN_WRITEBACK_PAGES`, rounded down to
    /// a multiple of it. A fast device's chunk is large: Linux does not
    /// want to look at the threshold more often than it must.
    fn chunk_size(&self) -> u64 {
        let pages = (self.avg_bandwidth / 2).min(self.set.limit_pages / 8);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// The next writeback request of a pass at `now`, if the pass has
    /// work left, as `wb_writeback` and `writeback_sb_inodes` order it:
    /// each file queued for writeback (`b_io`) gets one chunk
    /// ([`PageCache::chunk_size`]) from its cursor, then goes to the back
    /// of the queue (`b_more_io`) if its chunk ran out with pages left,
    /// so several dirty files share the device chunk by chunk. Before
    /// each `writeback_sb_inodes` call a background pass looks at the
    /// threshold; a call ends when the queue is empty, or after the file
    /// that passed 100 ms since the call began. An empty queue is filled
    /// again (`queue_io`): the requeued files first, then the dirty files
    /// that qualify, oldest `dirtied_when` first.
    pub(crate) fn next_writeback(&mut self, pass: Pass, now: Nanos) -> Option<Extent> {
        loop {
            if let Some(file) = self.current {
                if let Some(e) = self.chunk_extent(file, now) {
                    self.sb_call_wrote = true;
                    return Some(e);
                }
                self.requeue(file, now);
                let call_too_long = self.sb_call.is_some_and(|start| {
                    self.set.jiffies(now) > self.set.jiffies(start) + self.set.hz() / 10
                });
                if self.sb_call_wrote && call_too_long {
                    self.sb_call = None;
                }
                continue;
            }
            if self.sb_call.is_none() {
                if pass == Pass::Background && !self.over_background() {
                    return None;
                }
                if self.b_io.is_empty() {
                    self.queue_io(pass, now);
                }
                if self.b_io.is_empty() {
                    return None;
                }
                self.sb_call = Some(now);
                self.sb_call_wrote = false;
            }
            let Some(file) = self.b_io.pop_front() else {
                // The call went through the queue: `wb_writeback` goes on
                // if it wrote or files wait their next turn.
                self.sb_call = None;
                if !self.sb_call_wrote && self.b_more_io.is_empty() {
                    return None;
                }
                continue;
            };
            self.current = Some(file);
            self.chunk_left = self.chunk_size();
        }
    }

    /// The next request of `file`'s chunk: its first dirty page at or
    /// after its cursor not under writeback, wrapping once (range_cyclic;
    /// `WB_SYNC_NONE` skips pages under writeback), and the dirty pages
    /// after it, within the chunk.
    fn chunk_extent(&mut self, file: u32, now: Nanos) -> Option<Extent> {
        if self.chunk_left == 0 {
            return None;
        }
        let f = self.files.get(&file)?;
        let first = f
            .dirty
            .range(f.cursor..)
            .chain(f.dirty.range(..f.cursor))
            .copied()
            .find(|p| !f.writeback.contains(p))?;
        let max = self.set.max_request_pages.min(self.chunk_left);
        let e = self.start_writeback(file, first, max, now);
        if let Some(f) = self.files.get_mut(&file) {
            f.cursor = first + e.pages;
        }
        self.chunk_left -= e.pages;
        Some(e)
    }

    /// `requeue_inode` after `file`'s turn at `now`: a clean file leaves
    /// the queues; one whose chunk ran out with dirty pages left waits for
    /// its next turn (`requeue_io`); one that could not use its chunk (its
    /// dirty pages are under writeback) goes back among the dirty files
    /// (`redirty_tail`, as the newest if a file was dirtied after it).
    fn requeue(&mut self, file: u32, now: Nanos) {
        self.current = None;
        let newest = self
            .files
            .values()
            .filter(|f| !f.queued)
            .filter_map(|f| f.dirtied_when)
            .max();
        let Some(f) = self.files.get_mut(&file) else {
            return;
        };
        if f.dirty.is_empty() {
            f.queued = false;
        } else if self.chunk_left == 0 {
            self.b_more_io.push_back(file);
        } else {
            f.queued = false;
            if newest.is_some_and(|n| f.dirtied_when.is_some_and(|w| w < n)) {
                f.dirtied_when = Some(now);
            }
        }
    }

    /// `queue_io`: the files that waited for their next turn, then the
    /// dirty files not queued that the pass takes (a background pass
    /// all, the periodic one those dirty for longer than `expire`),
    /// oldest `dirtied_when` first.
    fn queue_io(&mut self, pass: Pass, now: Nanos) {
        self.b_io.extend(self.b_more_io.drain(..));
        let older_than = match pass {
            Pass::Background => Some(now),
            Pass::Kupdate => now.checked_sub(self.set.expire),
        };
        let Some(older_than) = older_than else {
            return;
        };
        let mut expired: Vec<(Nanos, u32)> = self
            .files
            .iter()
            .filter(|(_, f)| !f.queued)
            .filter_map(|(&id, f)| f.dirtied_when.map(|at| (at, id)))
            .filter(|&(at, _)| at <= older_than)
            .collect();
        expired.sort_unstable();
        for (_, id) in expired {
            if let Some(f) = self.files.get_mut(&id) {
                f.queued = true;
            }
            self.b_io.push_back(id);
        }
    }

    /// The flusher's work is over: the next starts a new
    /// `writeback_sb_inodes` call. The queues stay, as Linux's lists do,
    /// and so does a file's unfinished chunk (a pass ends between files
    /// in Linux; here only when the flusher had no slot left for it).
    fn end_work(&mut self) {
        self.sb_call = None;
    }

    /// The next request of an `fsync` of `file`: its first dirty page not
    /// under writeback and the dirty pages after it (`write_cache_pages`
    /// over the whole file, not range-cyclic: the flusher's cursor stays).
    pub(crate) fn next_sync_extent(&mut self, file: u32, now: Nanos) -> Option<Extent> {
        let f = self.files.get(&file)?;
        let first = f.dirty.iter().copied().find(|p| !f.writeback.contains(p))?;
        Some(self.start_writeback(file, first, self.set.max_request_pages, now))
    }

    /// Whether pages of `file` are under writeback.
    pub(crate) fn in_writeback(&self, file: u32) -> bool {
        self.files
            .get(&file)
            .is_some_and(|f| !f.writeback.is_empty())
    }

    /// Whether pages of `file` are dirty.
    pub(crate) fn dirty_in(&self, file: u32) -> bool {
        self.files.get(&file).is_some_and(|f| !f.dirty.is_empty())
    }

    /// Moves the dirty pages of `file` from `first` on, at most `max` and
    /// none already under writeback, to writeback at `now`: one request's
    /// payload.
    fn start_writeback(&mut self, file: u32, first: u64, max: u64, now: Nanos) -> Extent {
        let f = self.files.entry(file).or_default();
        let mut pages = 0;
        while pages < max
            && f.dirty.contains(&(first + pages))
            && !f.writeback.contains(&(first + pages))
        {
            pages += 1;
        }
        for p in first..first + pages {
            f.dirty.remove(&p);
            f.writeback.insert(p);
        }
        if f.dirty.is_empty() {
            f.dirtied_when = None;
        }
        if self.writeback == 0 && pages > 0 {
            self.wb_started = self.set.jiffies(now);
        }
        self.dirty -= pages;
        self.writeback += pages;
        self.totals.requests += 1;
        self.totals.largest_request = self.totals.largest_request.max(pages);
        Extent { file, first, pages }
    }

    /// A writeback request of `slot` carries `e`.
    fn track(&mut self, slot: u32, e: Extent) {
        if e.pages == 0 || e.pages > self.set.max_request_pages {
            self.totals.malformed += 1;
        }
        self.in_flight.insert(slot, e);
    }

    /// The writeback of `slot`'s request completed at `now`: its pages are
    /// clean (or dirty again, if written meanwhile).
    fn written(&mut self, slot: u32, now: Nanos) -> Option<Extent> {
        let e = self.in_flight.remove(&slot)?;
        let f = self.files.entry(e.file).or_default();
        for p in e.first..e.first + e.pages {
            if !f.writeback.remove(&p) {
                self.totals.malformed += 1;
                continue;
            }
            self.writeback -= 1;
            self.totals.written += 1;
            if !f.dirty.contains(&p) {
                self.cached += add_clean(f, (e.file, p), &mut self.next_seq, &mut self.inactive);
            }
        }
        self.compact_lists();
        self.bw_written += e.pages;
        self.update_bandwidth(now);
        self.evict();
        Some(e)
    }

    /// `__wb_update_bandwidth` and `wb_update_write_bandwidth`: at most
    /// every `BANDWIDTH_INTERVAL`, the pages written since the last update
    /// move the estimate, weighted by the time they took against the
    /// period (`roundup_pow_of_two(3 * HZ)` jiffies), or replace it if
    /// they took longer; the smoothed estimate follows it by an eighth of
    /// the gap, and only while the estimate keeps moving its way, so that
    /// one burst or stall does not swing the pause. After a quiet second
    /// (more than `HZ` since the last update, and writeback started again
    /// since) the update is skipped: Linux only starts the clock again.
    /// In jiffies, as Linux counts: a burst within one jiffy has no rate.
    fn update_bandwidth(&mut self, now: Nanos) {
        let set = self.set;
        let now = set.jiffies(now);
        let elapsed = now.saturating_sub(self.bw_stamp);
        if elapsed < set.max_pause() {
            return;
        }
        let hz = set.hz();
        if elapsed <= hz || self.bw_stamp >= self.wb_started {
            let period = (3 * hz).next_power_of_two();
            let old = u128::from(self.bandwidth);
            let written = u128::from(self.bw_written) * u128::from(hz);
            let (bw, mut avg) = if elapsed > period {
                let bw = written / u128::from(elapsed);
                (bw, bw)
            } else {
                let bw = (written + old * u128::from(period - elapsed)) >> period.ilog2();
                (bw, u128::from(self.avg_bandwidth))
            };
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            } else if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
            self.bandwidth = u64::try_from(bw).unwrap_or(u64::MAX);
            self.avg_bandwidth = u64::try_from(avg).unwrap_or(u64::MAX).max(1);
        }
        self.bw_stamp = now;
        self.bw_written = 0;
    }

    /// Reclaims clean pages while the cache holds more than its memory,
    /// as `shrink_node` does for the file lists: the oldest page of the
    /// inactive list goes (its `PG_referenced` does not save an unmapped
    /// page, `page_check_references`); when the inactive list is low
    /// against the active one (`inactive_list_is_low`: `inactive *
    /// int_sqrt(10 * GiB) < active`, 1 under a GiB) the oldest active page
    /// is first moved to the young end of the inactive list
    /// (`shrink_active_list`: an unmapped page has no referenced PTE).
    fn evict(&mut self) {
        while self.cached + self.dirty + self.writeback > self.set.memory_pages {
            if self.inactive_is_low() {
                self.deactivate_oldest();
            }
            let Some((file, p, seq)) = self.inactive.pop_front() else {
                if self.active_pages == 0 {
                    return;
                }
                self.deactivate_oldest();
                continue;
            };
            let Some(f) = self.files.get_mut(&file) else {
                continue;
            };
            if let std::collections::btree_map::Entry::Occupied(page) = f.cached.entry(p) {
                if page.get().seq() == seq && !page.get().active() {
                    page.remove();
                    self.cached -= 1;
                }
            }
        }
    }

    /// `inactive_list_is_low` for the file lists (without the refault
    /// case: the model keeps no shadow entries of evicted pages).
    fn inactive_is_low(&self) -> bool {
        let inactive = self.cached - self.active_pages;
        let gb = self.cached >> (30 - PAGE.ilog2());
        let ratio = if gb > 0 { (10 * gb).isqrt() } else { 1 };
        inactive * ratio < self.active_pages
    }

    /// Moves the oldest page of the active list to the young end of the
    /// inactive list, keeping its `PG_referenced`.
    fn deactivate_oldest(&mut self) {
        while let Some((file, p, seq)) = self.active.pop_front() {
            let Some(lru) = self
                .files
                .get_mut(&file)
                .and_then(|f| f.cached.get_mut(&p))
                .filter(|l| l.seq() == seq && l.active())
            else {
                continue;
            };
            // Deactivated, it keeps its referenced mark.
            let seq = next_seq(&mut self.next_seq);
            *lru = Lru(Lru::joined(false, seq).0 | (lru.0 & Lru::REFERENCED));
            self.inactive.push_back((file, p, seq));
            self.active_pages -= 1;
            return;
        }
    }

    /// Every page the cache accounts for is in exactly one state, and the
    /// counts match the sets: none lost, none written twice.
    pub(crate) fn consistent(&self) -> Result<(), String> {
        let (mut dirty, mut writeback, mut cached, mut active) = (0u64, 0u64, 0u64, 0u64);
        for (id, f) in &self.files {
            if let Some(p) = f
                .cached
                .keys()
                .find(|p| f.dirty.contains(p) || f.writeback.contains(p))
            {
                return Err(format!("file {id}: page {p} cached clean and dirty"));
            }
            dirty += f.dirty.len() as u64;
            writeback += f.writeback.len() as u64;
            cached += f.cached.len() as u64;
            active += f.cached.values().filter(|l| l.active()).count() as u64;
        }
        if active != self.active_pages {
            return Err(format!(
                "{} pages counted active against {active} in the files",
                self.active_pages
            ));
        }
        let in_flight: u64 = self.in_flight.values().map(|e| e.pages).sum();
        if (dirty, writeback, cached) != (self.dirty, self.writeback, self.cached)
            || in_flight != writeback
        {
            return Err(format!(
                "page counts {}/{}/{} (dirty/writeback/cached) against {dirty}/{writeback}/{cached} \
                 in the files and {in_flight} in writeback requests",
                self.dirty, self.writeback, self.cached
            ));
        }
        // Each page dirtied is dirty still, or under writeback, or was
        // written (a page dirtied again under writeback is in both sets,
        // and was dirtied twice).
        let t = &self.totals;
        if t.dirtied != t.written + dirty + writeback {
            return Err(format!(
                "{} pages dirtied, {} written, {dirty} dirty, {writeback} under writeback",
                t.dirtied, t.written
            ));
        }
        if t.malformed > 0 {
            return Err(format!("{} malformed writeback requests", t.malformed));
        }
        Ok(())
    }
}

/// Page `p` of `file` (`f`) is cached clean unless it was: at the young
/// end of the inactive list (`add_to_page_cache_lru`; a written page
/// cleaned by its writeback joins it there too, the model does not keep
/// a dirty page's list). 1 if it was added.
fn add_clean(
    f: &mut File,
    (file, p): (u32, u64),
    next: &mut u32,
    inactive: &mut VecDeque<(u32, u64, u32)>,
) -> u64 {
    let std::collections::btree_map::Entry::Vacant(slot) = f.cached.entry(p) else {
        return 0;
    };
    let seq = next_seq(next);
    slot.insert(Lru::joined(false, seq));
    inactive.push_back((file, p, seq));
    1
}

/// `mark_page_accessed` (mm/swap.c) of a clean cached page: a page read
/// once is marked referenced; one read again while referenced moves to
/// the active list (true: it takes the sequence number its new entry
/// gets), where reclaim does not look until the inactive list is low.
fn access(lru: &mut Lru, next: &mut u32) -> bool {
    if !lru.active() && lru.referenced() {
        *lru = Lru::joined(true, next_seq(next));
        true
    } else {
        lru.0 |= Lru::REFERENCED;
        false
    }
}

/// `dirty_freerun_ceiling`: halfway between the background threshold
/// and the limit; below it writers are not throttled at all.
fn freerun_ceiling(set: &Settings) -> u64 {
    (set.limit_pages + set.background_pages) / 2
}

/// `dirty_poll_interval`: a writer under the free-run ceiling looks again
/// after about the square root of its headroom, in pages (a power of
/// two), so that it cannot overshoot the limit by much.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

/// `pos_ratio_polynom`: `1 + ((setpoint - dirty) / (limit - setpoint))^3`
/// in fixed point, within 0..=2.
fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> u128 {
    let one = 1i128 << RATELIMIT_SHIFT;
    let x = ((i128::from(setpoint) - i128::from(dirty)) << RATELIMIT_SHIFT)
        / i128::from((limit - setpoint) | 1);
    let mut r = x;
    r = (r * x) >> RATELIMIT_SHIFT;
    r = (r * x) >> RATELIMIT_SHIFT;
    (r + one).clamp(0, 2 * one).unsigned_abs()
}

/// A writer's throttling state (`task_struct`'s `nr_dirtied`,
/// `nr_dirtied_pause`, `dirty_paused_when`), and the model's own:
/// pages dirtied that `balance_dirty_pages_ratelimited` has not yet
/// seen (the model dirties a call's pages at once, Linux one by one),
/// and a `balance_dirty_pages` loop a pause interrupted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pacing {
    nr_dirtied: u64,
    nr_dirtied_pause: u64,
    /// Jiffies; 0 for never.
    dirty_paused_when: u64,
    pending: u64,
    /// The loop goes on after the pause (over the limit) with this
    /// `pages_dirtied`.
    looping: Option<u64>,
    /// The call ends after the pause.
    ending: bool,
    /// When the pause the writer is to take ends.
    pause_until: Option<Nanos>,
    /// The loop's last turn found the limit exceeded.
    exceeded: bool,
}

impl Default for Pacing {
    /// A new task's (kernel/fork.c): `nr_dirtied_pause` is
    /// `DIRTY_POLL_THRESH`.
    fn default() -> Pacing {
        Pacing {
            nr_dirtied: 0,
            nr_dirtied_pause: DIRTY_POLL_THRESH,
            dirty_paused_when: 0,
            pending: 0,
            looping: None,
            ending: false,
            pause_until: None,
            exceeded: false,
        }
    }
}

impl Pacing {
    /// The writer dirtied `pages` more pages (clean before: Linux counts
    /// only those, `account_page_dirtied`).
    pub(crate) fn dirtied(&mut self, pages: u64) {
        self.pending += pages;
    }
}

/// What [`PageCache::balance`] asks of the writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Balance {
    /// Wake the flusher (if it sleeps).
    pub kick: bool,
    /// Sleep until then.
    pub pause_until: Option<Nanos>,
}

/// One turn of `balance_dirty_pages`' loop.
#[derive(Clone, Copy, Debug, Default)]
struct Step {
    kick: bool,
    /// A pause, jiffies.
    pause: Option<u64>,
    /// The loop goes on after it.
    again: bool,
}

/// `get_init_ra_size` (mm/readahead.c), in pages.
fn init_ra_size(pages: u64, max: u64) -> u64 {
    let size = pages.max(1).next_power_of_two();
    if size <= max / 32 {
        size * 4
    } else if size <= max / 4 {
        size * 2
    } else {
        max
    }
}

/// `ondemand_readahead` (mm/readahead.c, Linux 5.0) for a miss of `pages`
/// at `first` with read-ahead limit `max`: the window's length, and
/// whether it starts or continues a stream (the file's read-ahead state
/// moves to it). A stream starts at the file's start, with a read larger
/// than the limit, with a miss at or next to the previous read's last
/// page, or where the pages before the miss are cached, more of them than
/// the read asks for (`try_context_readahead`: twice as many when they
/// reach back to the file's start); it goes on where the miss follows its
/// last window. Any other miss is a small random read, read as it is.
fn ondemand_window(f: &File, first: u64, pages: u64, max: u64) -> (u64, bool) {
    let initial = (init_ra_size(pages, max), true);
    if first == 0 {
        return initial;
    }
    if let Some((start, len)) = f.ra {
        if start + len == first {
            return (next_ra_size(len, max), true);
        }
    }
    if pages > max {
        return initial;
    }
    if f.prev_page.is_some_and(|p| first >= p && first - p <= 1) {
        return initial;
    }
    let held =
        |p: u64| f.cached.contains_key(&p) || f.dirty.contains(&p) || f.writeback.contains(&p);
    let history = (1..=max.min(first))
        .take_while(|&k| held(first - k))
        .count() as u64;
    if history > pages {
        let history = if history >= first {
            2 * history
        } else {
            history
        };
        return ((history + pages).min(max), true);
    }
    (pages, false)
}

/// `get_next_ra_size` (mm/readahead.c), in pages.
fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        (4 * cur).min(max)
    } else {
        (2 * cur).min(max)
    }
}

/// A buffered thread's call in progress.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Call {
    /// When the call was entered (its latency starts here).
    start: Nanos,
    bytes: u64,
    write: bool,
    first: u64,
    pages: u64,
    /// The call has copied its data (a write) and runs
    /// `balance_dirty_pages`, or a read waits for read-ahead.
    copied: bool,
    /// The slot of the read-ahead request the call waits for: the thread's
    /// ready list may also hold a libaio thread's unreaped events.
    read_ahead: Option<u32>,
    /// A read that starts on the page the file's last read ended on
    /// ([`PageCache::rereads_last_page`]).
    skip_first: bool,
}

/// A buffered thread's `fsync` or `fdatasync` in progress.
#[derive(Clone, Debug, Default)]
struct Fsync {
    active: bool,
    /// The journal commit is still to be written (`fsync` only).
    journal: bool,
    /// Its requests in flight (writeback and the journal commit).
    mine: Vec<u32>,
    /// The journal commit's slot while it is in flight.
    journal_slot: Option<u32>,
}

/// A buffered `io_submit` in progress: its iocbs run one after another.
#[derive(Clone, Debug, Default)]
struct AioSubmit {
    /// Iocbs not yet run.
    left: u32,
    /// When the call was entered (each iocb's latency starts here).
    issued: Nanos,
    /// Slots of the iocbs completed in the call, their events posted.
    done: Vec<u32>,
}

/// Whose kernel a page cache belongs to: the host's or a guest's. Each
/// owner's cache has its own dirty counts against its own thresholds and
/// its own flusher, on one of the owner's cores: a guest's `write()`
/// never sees the host's dirty pages or another guest's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Host,
    /// A guest, by its index in the scenario.
    Guest(u32),
}

/// One kernel's page cache and its flusher thread.
#[derive(Debug)]
pub(crate) struct Instance {
    pub owner: Owner,
    pub cache: PageCache,
    /// The flusher thread.
    pub flusher: usize,
    /// Why the flusher runs, while it does.
    pass: Option<Pass>,
    /// The flusher sleeps with its periodic timer armed.
    timer_armed: bool,
    /// The flusher's current pass has submitted writeback.
    pass_wrote: bool,
    /// When the flusher last looked for expired files
    /// (`wb->last_old_flush`).
    last_old_flush: Nanos,
    /// Threads in `fsync` waiting for pages of their file that the
    /// flusher has under writeback: its completions wake them.
    fsync_waiters: Vec<u32>,
}

impl Instance {
    /// The pass a wake-up of the flusher at `now` starts with, as
    /// `wb_do_writeback` checks them: the periodic one
    /// (`wb_check_old_data_flush`) once `writeback_interval` has passed
    /// since the last, whether the timer or a writer woke it; otherwise
    /// background writeback (`wb_check_background_flush`) if the dirty
    /// pages are past the threshold; otherwise none.
    fn first_pass(&mut self, now: Nanos) -> Option<Pass> {
        if now >= self.last_old_flush + self.cache.set.writeback_interval {
            self.last_old_flush = now;
            Some(Pass::Kupdate)
        } else if self.cache.over_background() {
            Some(Pass::Background)
        } else {
            None
        }
    }

    /// The current pass is over: counted if it wrote.
    fn end_pass(&mut self) {
        if std::mem::take(&mut self.pass_wrote) {
            match self.pass {
                Some(Pass::Background) => self.cache.totals.background_runs += 1,
                Some(Pass::Kupdate) => self.cache.totals.kupdate_runs += 1,
                None => {}
            }
        }
        self.cache.end_work();
    }
}

/// The page-cache side of every thread: the page caches (the host's and
/// each guest's that does buffered I/O), buffered jobs' calls and files.
#[derive(Debug)]
pub(crate) struct Buffered {
    pub instances: Vec<Instance>,
    /// Per thread: the index of its kernel's page cache, if it has one.
    of_thread: Vec<Option<u32>>,
    /// Per thread: its call in progress, its next sequential offset, its
    /// file's size in pages, its stream of random offsets.
    calls: Vec<Call>,
    /// Per thread: what its program advised the kernel of its file.
    advice: Vec<Advice>,
    /// Per thread: its buffered `io_submit` in progress (libaio).
    aio: Vec<AioSubmit>,
    /// Per thread: its `fsync` in progress.
    fsyncs: Vec<Fsync>,
    /// Per thread: its dirty throttling state.
    pacing: Vec<Pacing>,
    next_page: Vec<u64>,
    size_pages: Vec<u64>,
    rngs: Vec<Option<ChaCha8Rng>>,
}

/// Whether `job` does buffered I/O through the page cache
/// ([`cint_scenario::model::IoJob::through_page_cache`]).
pub(crate) fn job_buffered(job: &Job) -> bool {
    matches!(&job.work, Work::Io(io) if io.through_page_cache())
}

impl Buffered {
    /// The page caches of a run whose threads run `thread_jobs` (a
    /// thread's job index, [`KERNEL_JOB`] for a flusher), with the
    /// flushers [`add_flushers`] added, or none if it added none.
    pub(crate) fn new(
        sc: &cint_scenario::Scenario,
        thread_jobs: &[u32],
        flushers: &[(Owner, usize)],
    ) -> Option<Box<Buffered>> {
        if flushers.is_empty() {
            return None;
        }
        let n = thread_jobs.len();
        let mut size_pages = vec![1; n];
        let mut advice = vec![Advice::Normal; n];
        let mut rngs = Vec::with_capacity(n);
        let mut of_thread = vec![None; n];
        let instance = |owner: Owner| {
            flushers
                .iter()
                .position(|&(o, _)| o == owner)
                .map(|i| i as u32)
        };
        for (t, &j) in thread_jobs.iter().enumerate() {
            let job = sc.jobs.get(j as usize);
            if let Some(Work::Io(io)) = job.map(|j| &j.work) {
                size_pages[t] = (io.size / PAGE).max(1);
                advice[t] = Advice::of(io);
            }
            let buffered = job.is_some_and(job_buffered);
            rngs.push(buffered.then(|| stream_rng(sc.seed, PAGE_CACHE_STREAM_BASE | t as u64)));
            of_thread[t] = match job {
                Some(job) => instance(job.guest.map_or(Owner::Host, Owner::Guest)),
                // Applications run on the host; a flusher is its cache's.
                None if j == crate::apps::APP_JOB => instance(Owner::Host),
                None => flushers.iter().position(|&(_, f)| f == t).map(|i| i as u32),
            };
        }
        let settings = Settings::from_profile(&sc.host.page_cache, sc.host.tick.0, sc.host.cores);
        let instances = flushers
            .iter()
            .map(|&(owner, flusher)| Instance {
                owner,
                cache: PageCache::new(settings),
                flusher,
                pass: None,
                timer_armed: false,
                pass_wrote: false,
                last_old_flush: 0,
                fsync_waiters: Vec::new(),
            })
            .collect();
        Some(Box::new(Buffered {
            instances,
            of_thread,
            calls: vec![Call::default(); n],
            advice,
            aio: vec![AioSubmit::default(); n],
            fsyncs: vec![Fsync::default(); n],
            pacing: vec![Pacing::default(); n],
            next_page: vec![0; n],
            size_pages,
            rngs,
        }))
    }

    /// The index of thread `t`'s page cache.
    pub(crate) fn instance_of(&self, t: usize) -> Option<usize> {
        self.of_thread.get(t).copied().flatten().map(|i| i as usize)
    }

    /// Thread `t`'s page cache (an application thread's is the host's).
    pub(crate) fn cache_of(&self, t: usize) -> Option<&PageCache> {
        Some(&self.instances[self.instance_of(t)?].cache)
    }

    /// Thread `t`'s page cache, to change.
    pub(crate) fn cache_of_mut(&mut self, t: usize) -> Option<&mut PageCache> {
        let i = self.instance_of(t)?;
        Some(&mut self.instances[i].cache)
    }

    /// The page cache whose flusher thread `t` is.
    fn flusher_of(&self, t: usize) -> Option<usize> {
        self.instances.iter().position(|i| i.flusher == t)
    }

    /// The first page of thread `t`'s next request of `bytes`: the next
    /// in sequence, or a random aligned offset for a random pattern.
    fn place(&mut self, t: usize, rw: Rw, bytes: u64) -> (u64, u64) {
        let size = self.size_pages[t];
        let pages = bytes.div_ceil(PAGE).clamp(1, size);
        let random = matches!(rw, Rw::RandRead | Rw::RandWrite | Rw::RandRw);
        let first = match (&mut self.rngs[t], random) {
            (Some(rng), true) => rng.gen_range(0..=size - pages) / pages * pages,
            _ => {
                let p = self.next_page[t];
                if p + pages > size {
                    0
                } else {
                    p
                }
            }
        };
        self.next_page[t] = first + pages;
        (first, pages)
    }
}

impl World<'_> {
    /// A buffered job's thread enters a `read()` or `write()` (its
    /// generator's issue-side work is done).
    pub(crate) fn buffered_call(&mut self, t: usize) {
        self.buffered_op(t, self.costs.syscall);
    }

    /// A buffered libaio thread enters `io_submit` with `k` iocbs (its
    /// generator's issue-side work is done). Linux 5.0 (fs/aio.c
    /// `io_submit_one`, `aio_read`/`aio_write`) runs each iocb of a file
    /// without `O_DIRECT` through the file's buffered read or write path
    /// inside the call, one after another, and completes it there
    /// (`aio_complete`): the call returns with every event posted, and the
    /// thread's next reap finds them without waiting. So a deep queue of
    /// buffered iocbs keeps at most one read-ahead of the thread at the
    /// device, as a synchronous reader does.
    pub(crate) fn buffered_submit(&mut self, t: usize, k: u32) {
        let now = self.now();
        let Some(b) = self.page_cache.as_deref_mut() else {
            self.check.fail(format!(
                "thread {t} is buffered but its kernel has no page cache"
            ));
            return;
        };
        let aio = &mut b.aio[t];
        aio.left = k;
        aio.issued = now;
        aio.done.clear();
        let c = self.costs;
        self.buffered_op(t, c.syscall + c.aio_submit_call + c.aio_submit_iocb);
    }

    /// One buffered read or write of thread `t`, a call's or an iocb's,
    /// after `entry` of the call's own CPU.
    fn buffered_op(&mut self, t: usize, entry: Nanos) {
        self.count_issue(t);
        let now = self.now();
        let shape = self.shape(t);
        let th = &mut self.threads[t];
        let p = th.prog;
        th.prepared = th.prepared.saturating_sub(1);
        let write = crate::workload::is_write(p.rw, p.rwmixread, &mut th.rng);
        let bytes = crate::workload::block_size(shape, p.bs, write, &mut th.rng);
        if let Some(iv) = p.rate_interval {
            let step = crate::workload::rate_step(shape, iv, bytes, &mut th.rng);
            th.next_issue_at = th.next_issue_at.saturating_add(step);
        }
        self.shaping[t].bytes += bytes;
        if write {
            for since in &mut self.shaping[t].writes_since_sync {
                *since += 1;
            }
        }
        let Some((b, i)) = self
            .page_cache
            .as_deref_mut()
            .and_then(|b| b.instance_of(t).map(|i| (b, i)))
        else {
            self.check.fail(format!(
                "thread {t} is buffered but its kernel has no page cache"
            ));
            return;
        };
        let (first, pages) = b.place(t, p.rw, bytes);
        b.calls[t] = Call {
            start: now,
            bytes,
            write,
            first,
            pages,
            copied: false,
            read_ahead: None,
            skip_first: false,
        };
        let cache = &mut b.instances[i].cache;
        let s = cache.set;
        let entry = entry + s.buffered_call;
        if write || cache.read_hit(t as u32, first, pages) {
            // A read hit copies here; a write's pages are dirtied after.
            b.calls[t].copied = !write;
            self.set_burst(t, entry + pages * s.page_copy, Cont::PageCache);
            return;
        }
        // A miss: one read-ahead request from the thread's slot.
        let (size, advice) = (b.size_pages[t], b.advice[t]);
        let cache = &mut b.instances[i].cache;
        let e = cache.read_ahead(t as u32, first, pages, size, advice);
        b.calls[t].skip_first = cache.rereads_last_page(t as u32, first);
        cache.note_read(t as u32, first, pages);
        if let Some(r) = self.stage_request(t, false, e.pages * PAGE, Hint::Unmarked) {
            if let Some(b) = self.page_cache.as_deref_mut() {
                b.calls[t].read_ahead = Some(r);
            }
            self.start_call(t, entry);
        }
    }

    /// Takes a free slot of thread `t` for a request of `bytes` and
    /// stages it for the thread's next submission call; its slot, or none
    /// (an invariant failure) if the thread has no free slot.
    pub(crate) fn stage_request(
        &mut self,
        t: usize,
        write: bool,
        bytes: u64,
        hint: Hint,
    ) -> Option<u32> {
        let now = self.now();
        let Some(r) = self.threads[t].free_slots.pop() else {
            self.check
                .fail(format!("thread {t} has no free request slot"));
            return None;
        };
        self.fill_slot(t, r, (write, bytes, hint), now);
        Some(r)
    }

    /// A submission call of a buffered thread or the flusher has reached
    /// the device: a reader waits for its read-ahead, the flusher goes on.
    pub(crate) fn page_cache_submitted(&mut self, t: usize) {
        if self.threads[t].job == crate::apps::APP_JOB {
            self.app_submitted(t);
            return;
        }
        let Some(b) = self.page_cache.as_deref() else {
            return;
        };
        if b.fsyncs[t].active {
            self.fsync_step(t, 0);
        } else if b.flusher_of(t).is_some() {
            self.flusher_step(t);
        } else {
            self.block(t, Wait::PageCache);
        }
    }

    /// Where a buffered thread or the flusher resumes after a burst or a
    /// wake-up.
    pub(crate) fn page_cache_cont(&mut self, t: usize) {
        if self.threads[t].job == crate::apps::APP_JOB {
            // An application's log writer back from a throttle pause.
            self.app_cont(t);
            return;
        }
        let Some(b) = self.page_cache.as_deref_mut() else {
            return;
        };
        if let Some(i) = b.flusher_of(t) {
            let pc = &mut b.instances[i];
            pc.timer_armed = false;
            if pc.pass.is_none() {
                // Woken, by its timer or by a writer: `wb_do_writeback`
                // does the same either way.
                self.threads[t].woken_by_timer = false;
                let now = self.now();
                let pc = self.instance(i);
                pc.pass = pc.first_pass(now);
            }
            self.flusher_step(t);
            return;
        }
        if b.fsyncs[t].active {
            self.fsync_step(t, 0);
            return;
        }
        let call = b.calls[t];
        if call.write {
            self.buffered_write_step(t, call);
        } else {
            self.buffered_read_step(t, call);
        }
    }

    /// Thread `t` of a buffered job calls `fsync` (`datasync`:
    /// `fdatasync`), as ext4 runs it in Linux 5.0 (`ext4_sync_file`): the
    /// file's dirty pages are written back in the caller's context
    /// (`file_write_and_wait_range`, `WB_SYNC_ALL`), merged as the
    /// flusher merges them, sixteen requests to a plug, each with the
    /// hint the kernel gives the call (docs/ALGORITHMS.md section 5), and
    /// the call waits for them, and for the pages the flusher already had
    /// under writeback (`WB_SYNC_ALL` waits on them, and writes again those
    /// dirtied meanwhile); `fsync` then waits for the journal commit of
    /// the file's changed times, which `fdatasync` of pages written in
    /// place skips.
    pub(crate) fn buffered_fsync(&mut self, t: usize, datasync: bool) {
        let th = &mut self.threads[t];
        std::mem::swap(&mut th.free_slots, &mut th.fsync_slots);
        let Some(b) = self.page_cache.as_deref_mut() else {
            self.check
                .fail(format!("thread {t} calls fsync without a page cache"));
            return;
        };
        let f = &mut b.fsyncs[t];
        f.active = true;
        f.journal = !datasync;
        self.fsync_step(t, self.costs.syscall);
    }

    /// The `fsync` of thread `t` goes on after `entry` of its own CPU:
    /// its completed requests end their pages' writeback, the next plug
    /// of requests goes out, or it waits, or it returns.
    fn fsync_step(&mut self, t: usize, entry: Nanos) {
        let now = self.now();
        let Some(i) = self.cache_index(t) else {
            return;
        };
        self.settle_writeback(i);
        let Some(b) = self.page_cache.as_deref_mut() else {
            return;
        };
        let mut f = std::mem::take(&mut b.fsyncs[t]);
        while let Some(at) = self.threads[t]
            .ready
            .iter()
            .position(|r| f.mine.contains(r))
        {
            let Some(r) = self.threads[t].ready.remove(at) else {
                break;
            };
            f.mine.retain(|&m| m != r);
            self.release_slot(t, r);
            if f.journal_slot == Some(r) {
                f.journal_slot = None;
            } else if self.instance(i).cache.written(r, now).is_none() {
                self.check
                    .fail(format!("fsync request {r} completed without pages"));
            }
        }
        let hint = cint_policy::hints::request_hint(
            if f.journal {
                cint_policy::hints::IoCall::Fsync
            } else {
                cint_policy::hints::IoCall::Fdatasync
            },
            &cint_policy::hints::IoContext {
                blocking_fd: true,
                o_direct: false,
                rw_flags: cint_policy::hints::RwFlags::EMPTY,
                ms_sync: false,
                batch: cint_policy::hints::BatchPosition { index: 0, len: 1 },
            },
        );
        let file = t as u32;
        let (mut staged, cpu) = self.stage_writeback(
            (t, i),
            hint,
            |cache| cache.next_sync_extent(file, now),
            Some(&mut f.mine),
        );
        if staged == 0 && f.mine.is_empty() && self.instance(i).cache.in_writeback(file) {
            // The flusher's requests for the file are still out: wait for
            // them, then write what they left dirty.
            let waiters = &mut self.instance(i).fsync_waiters;
            if !waiters.contains(&(t as u32)) {
                waiters.push(t as u32);
            }
            if let Some(b) = self.page_cache.as_deref_mut() {
                b.fsyncs[t] = f;
            }
            self.block(t, Wait::PageCache);
            return;
        }
        // With nothing in flight every fsync slot is free.
        if staged == 0 && f.mine.is_empty() && f.journal {
            // The data is on the device: the journal commit follows.
            f.journal = false;
            if let Some(r) = self.stage_request(t, true, JOURNAL_COMMIT, hint) {
                f.mine.push(r);
                f.journal_slot = Some(r);
                staged = 1;
            }
        }
        let waiting = !f.mine.is_empty();
        let done = staged == 0 && !waiting;
        if !done {
            if let Some(b) = self.page_cache.as_deref_mut() {
                b.fsyncs[t] = f;
            }
        }
        if staged > 0 {
            self.start_call(t, entry + cpu);
        } else if waiting {
            self.block(t, Wait::PageCache);
        } else {
            // What the call guarantees: none of the file's pages is dirty
            // or on its way to the device any more.
            let cache = &self.instance(i).cache;
            if cache.in_writeback(file) || cache.dirty_in(file) {
                self.check.fail(format!(
                    "fsync of thread {t} returned with its file not written"
                ));
            }
            let th = &mut self.threads[t];
            std::mem::swap(&mut th.free_slots, &mut th.fsync_slots);
            self.set_burst(t, entry + self.costs.return_to_user, Cont::SyncReturn);
        }
    }

    /// A write copied its pages (or woke from a throttle pause): dirty
    /// them once, then `balance_dirty_pages`.
    fn buffered_write_step(&mut self, t: usize, call: Call) {
        let mut extra = 0;
        if !call.copied {
            self.page_cache
                .as_deref_mut()
                .expect("a buffered thread")
                .calls[t]
                .copied = true;
            extra = self.dirty_pages(t, t as u32, call.first, call.pages);
        }
        extra += self.balance_dirty_pages(t);
        if let Some(at) = self.throttle_until(t) {
            self.set_burst(t, self.costs.timer_setup + extra, Cont::PageCacheSleep(at));
            return;
        }
        self.finish_buffered(t, call, extra);
    }

    /// A buffered write of thread `t` has copied pages
    /// `first..first + pages` of `file` into its kernel's cache: they are
    /// dirty, and those clean before count toward the writer's next
    /// `balance_dirty_pages`. Returns the CPU the writer spends on top
    /// (none: arming the flusher's timer is a few stores).
    pub(crate) fn dirty_pages(&mut self, t: usize, file: u32, first: u64, pages: u64) -> Nanos {
        let now = self.now();
        let Some(i) = self.cache_index(t) else {
            return 0;
        };
        self.settle_writeback(i);
        let cache = &mut self.instance(i).cache;
        let before = cache.totals.dirtied;
        let first_dirty = cache.write(file, first, pages, now);
        let dirtied = cache.totals.dirtied - before;
        if first_dirty {
            let at = now + cache.set.writeback_interval;
            self.arm_flusher_timer(i, at);
        }
        if let Some(b) = self.page_cache.as_deref_mut() {
            b.pacing[t].dirtied(dirtied);
        }
        0
    }

    /// `balance_dirty_pages_ratelimited` after thread `t`'s write, or
    /// after its throttle pause ([`PageCache::balance`]): the flusher of
    /// its cache is woken if asked and idle, and the pause, if any, is
    /// kept for [`World::throttle_until`]. Returns the writer's CPU for
    /// it.
    pub(crate) fn balance_dirty_pages(&mut self, t: usize) -> Nanos {
        let now = self.now();
        let Some(i) = self.cache_index(t) else {
            return 0;
        };
        self.settle_writeback(i);
        let Some(b) = self.page_cache.as_deref_mut() else {
            return 0;
        };
        let pc = &mut b.instances[i];
        let p = &mut b.pacing[t];
        let out = pc.cache.balance(p, now);
        p.pause_until = out.pause_until;
        if out.kick && pc.pass.is_none() && self.kick_flusher(i) {
            self.costs.wakeup
        } else {
            0
        }
    }

    /// The instant thread `t`'s throttle pause ends, if its last
    /// [`World::balance_dirty_pages`] paced it.
    pub(crate) fn throttle_until(&mut self, t: usize) -> Option<Nanos> {
        self.page_cache
            .as_deref_mut()?
            .pacing
            .get_mut(t)?
            .pause_until
            .take()
    }

    /// Thread `t`'s page cache, if its kernel has one.
    pub(crate) fn cache_of(&self, t: usize) -> Option<&PageCache> {
        self.page_cache.as_deref()?.cache_of(t)
    }

    /// Thread `t`'s page cache, to change.
    pub(crate) fn cache_of_mut(&mut self, t: usize) -> Option<&mut PageCache> {
        self.page_cache.as_deref_mut()?.cache_of_mut(t)
    }

    /// The index of thread `t`'s page cache, if its kernel has one.
    fn cache_index(&self, t: usize) -> Option<usize> {
        self.page_cache.as_deref()?.instance_of(t)
    }

    /// Page cache `i` (one the run has).
    fn instance(&mut self, i: usize) -> &mut Instance {
        &mut self
            .page_cache
            .as_deref_mut()
            .expect("a page cache index of the run")
            .instances[i]
    }

    /// A read found its pages, or its read-ahead completed.
    fn buffered_read_step(&mut self, t: usize, call: Call) {
        if call.copied {
            self.finish_buffered(t, call, 0);
            return;
        }
        // Woken by the read-ahead's completion: its pages join the cache,
        // the slot is free, and the data is copied.
        let ready = &mut self.threads[t].ready;
        let read_ahead = call
            .read_ahead
            .and_then(|ra| ready.iter().position(|&r| r == ra))
            .and_then(|at| ready.remove(at));
        if let Some(r) = read_ahead {
            self.release_slot(t, r);
            let b = self.page_cache.as_deref_mut().expect("a buffered thread");
            let size = b.size_pages[t];
            let pages = (self.reqs[r as usize].bytes / PAGE).min(size);
            let cache = b.cache_of_mut(t).expect("a buffered thread's cache");
            cache.read_done(Extent {
                file: t as u32,
                first: call.first,
                pages,
            });
            cache.mark_accessed(t as u32, call.first, call.pages, call.skip_first);
        }
        let b = self.page_cache.as_deref_mut().expect("a buffered thread");
        b.calls[t].copied = true;
        let cost = call.pages * b.cache_of(t).map_or(0, |c| c.set.page_copy);
        self.set_burst(t, cost, Cont::PageCache);
    }

    /// A delivered request of thread `t` is done with: its slot is free.
    pub(crate) fn release_slot(&mut self, t: usize, r: u32) {
        let req = &mut self.reqs[r as usize];
        if req.state != ReqState::Delivered {
            let state = req.state;
            self.check
                .fail(format!("request {r} released in state {state:?}"));
        }
        req.state = ReqState::Free;
        self.check.handed += 1;
        let th = &mut self.threads[t];
        th.free_slots.push(r);
        th.in_flight -= 1;
    }

    /// The buffered call returns: its latency is the whole call, as a
    /// synchronous call's in fio, then the generator's reaping work.
    fn finish_buffered(&mut self, t: usize, call: Call, extra: Nanos) {
        if self.threads[t].prog.engine == cint_scenario::Engine::Libaio {
            self.iocb_done(t, call, extra);
            return;
        }
        let now = self.now();
        let job = self.threads[t].job as usize;
        if self.measuring && self.job_measuring(job, now) {
            let done = Request {
                thread: t as u32,
                queue: 0,
                bytes: call.bytes,
                write: call.write,
                hint: Hint::Unmarked,
                seq: 0,
                issued: call.start,
                submitted: now,
                dispatched: now,
                posted_at: now,
                state: ReqState::Free,
                polled: false,
            };
            self.jobs[job].record(&done, now, true);
        }
        self.steady_sample(job, now, call.bytes);
        self.count_completions(t, 1);
        let p = self.threads[t].prog;
        let per_io = p.think + self.costs.user(p.gtod_reduce).reap;
        self.set_user_burst(t, extra + self.costs.return_to_user + per_io, Cont::Issue);
    }

    /// A buffered iocb of thread `t` is done inside `io_submit`: its
    /// event is posted (a request slot, delivered, until the thread reaps
    /// it), then the call runs its next iocb or returns. fio takes the
    /// iocbs' issue time when `io_submit` returns (engines/libaio.c
    /// `fio_libaio_queued`): their submission latency is the whole call,
    /// their completion latency the wait for the reap after it.
    fn iocb_done(&mut self, t: usize, call: Call, extra: Nanos) {
        let now = self.now();
        let Some(r) = self.threads[t].free_slots.pop() else {
            self.check
                .fail(format!("thread {t} completed an iocb without a free slot"));
            return;
        };
        let Some(b) = self.page_cache.as_deref_mut() else {
            return;
        };
        let aio = &mut b.aio[t];
        let req = &mut self.reqs[r as usize];
        if req.state != ReqState::Free {
            let state = req.state;
            self.check
                .fail(format!("slot {r} reused while in state {state:?}"));
        }
        *req = Request {
            bytes: call.bytes,
            write: call.write,
            hint: Hint::Unmarked,
            issued: aio.issued,
            submitted: now,
            dispatched: call.start,
            posted_at: now,
            state: ReqState::Delivered,
            polled: false,
            ..*req
        };
        self.threads[t].in_flight += 1;
        // Issued and delivered by the kernel itself, with no interrupt.
        self.check.issued += 1;
        self.check.delivered += 1;
        aio.done.push(r);
        aio.left = aio.left.saturating_sub(1);
        if aio.left > 0 {
            self.buffered_op(t, extra + self.costs.aio_submit_iocb);
            return;
        }
        let mut done = std::mem::take(&mut aio.done);
        for &r in &done {
            self.reqs[r as usize].submitted = now;
            self.threads[t].ready.push_back(r);
        }
        done.clear();
        if let Some(b) = self.page_cache.as_deref_mut() {
            b.aio[t].done = done;
        }
        self.set_burst(t, extra + self.costs.return_to_user, Cont::Issue);
    }

    /// A throttled writer's pause timer is armed: it sleeps.
    pub(crate) fn page_cache_sleep(&mut self, t: usize, at: Nanos) {
        if at <= self.now() {
            self.page_cache_cont(t);
        } else {
            self.block_with_timer(t, Wait::PageCacheTimer, at);
        }
    }

    /// Applies the writeback completions delivered so far to page cache
    /// `i` (its flusher's ready requests): their pages end writeback,
    /// their slots are free.
    fn settle_writeback(&mut self, i: usize) {
        let f = self.instance(i).flusher;
        let now = self.now();
        while let Some(r) = self.threads[f].ready.pop_front() {
            self.release_slot(f, r);
            if self.instance(i).cache.written(r, now).is_none() {
                self.check
                    .fail(format!("writeback request {r} completed without pages"));
            }
        }
    }

    /// Wakes page cache `i`'s flusher if it sleeps between runs
    /// (`wb_wakeup`); true if it did (the caller pays the wake-up). The
    /// wake-up takes effect as the caller's call goes on, as a freed
    /// tag's does.
    fn kick_flusher(&mut self, i: usize) -> bool {
        let f = self.instance(i).flusher;
        let th = &mut self.threads[f];
        if th.run != RunState::Blocked || th.wait != Wait::PageCacheTimer || th.wake_listed {
            return false;
        }
        th.wake_listed = true;
        th.woken_by_timer = false;
        let now = self.now();
        self.events.schedule(now, Event::Wake { thread: f as u32 });
        true
    }

    /// Arms page cache `i`'s flusher's periodic timer at `at`
    /// (`wb_wakeup_delayed`) while it sleeps without one.
    fn arm_flusher_timer(&mut self, i: usize, at: Nanos) {
        let pc = self.instance(i);
        let f = pc.flusher;
        let armed = pc.timer_armed;
        let th = &self.threads[f];
        let idle = th.run == RunState::Blocked && th.wait == Wait::PageCacheTimer;
        if !idle || armed || th.wake_listed {
            return;
        }
        self.instance(i).timer_armed = true;
        self.arm_thread_timer(f, at);
    }

    /// The flusher's loop: settle completions, then submit the pass's
    /// next plug of requests, or sleep.
    fn flusher_step(&mut self, t: usize) {
        let Some(i) = self.page_cache.as_deref().and_then(|b| b.flusher_of(t)) else {
            self.check.fail(format!("thread {t} runs as a flusher"));
            return;
        };
        self.settle_writeback(i);
        let now = self.now();
        let Some(pass) = self.instance(i).pass else {
            self.flusher_sleep(t, i);
            return;
        };
        let (staged, cpu) = self.stage_writeback(
            (t, i),
            Hint::Unmarked,
            |cache| cache.next_writeback(pass, now),
            None,
        );
        if staged > 0 {
            self.instance(i).pass_wrote = true;
            self.start_call(t, cpu);
            return;
        }
        if self.threads[t].free_slots.is_empty() {
            // Every slot in flight: the driver's tags are the real bound,
            // so this is reached only with more slots than tags in use.
            self.block(t, Wait::PageCache);
            return;
        }
        let pc = self.instance(i);
        if pass == Pass::Kupdate && pc.cache.over_background() {
            // `wb_do_writeback` runs the background check after the
            // periodic one, whichever woke it.
            pc.end_pass();
            pc.pass = Some(Pass::Background);
            self.flusher_step(t);
            return;
        }
        self.flusher_sleep(t, i);
    }

    /// Request `r` of a flusher completed in a handler on core `c`: the
    /// threads whose `fsync` waits for its cache's writeback are woken to
    /// look again. Returns how many the handler wakes.
    pub(crate) fn wake_fsync_waiters(&mut self, r: u32, c: usize) -> u64 {
        let flusher = self.reqs[r as usize].thread as usize;
        if self.threads[flusher].job != KERNEL_JOB {
            return 0;
        }
        let Some(b) = self.page_cache.as_deref_mut() else {
            return 0;
        };
        let Some(i) = b.flusher_of(flusher) else {
            return 0;
        };
        let mut woken = 0;
        for w in std::mem::take(&mut b.instances[i].fsync_waiters) {
            let th = &mut self.threads[w as usize];
            if th.run == RunState::Blocked && th.wait == Wait::PageCache && !th.wake_listed {
                th.wake_listed = true;
                th.woken_by_timer = false;
                self.cores[c].wake_list.push(w);
                woken += 1;
            }
        }
        woken
    }

    /// Stages the next plug of page cache `i`'s writeback from thread
    /// `t`'s free slots: at most sixteen requests, each with `hint`, of the
    /// extents `next` takes. Returns how many, and the CPU of building
    /// them (`writeback_page` per page); `mine` gets their slots.
    fn stage_writeback(
        &mut self,
        (t, i): (usize, usize),
        hint: Hint,
        mut next: impl FnMut(&mut PageCache) -> Option<Extent>,
        mut mine: Option<&mut Vec<u32>>,
    ) -> (u32, Nanos) {
        let mut staged = 0u32;
        let mut cpu = 0;
        while staged < PLUG_REQUESTS {
            let Some(&r) = self.threads[t].free_slots.last() else {
                break;
            };
            let cache = &mut self.instance(i).cache;
            let Some(e) = next(cache) else {
                break;
            };
            cache.track(r, e);
            cpu += e.pages * cache.set.writeback_page;
            self.stage_request(t, true, e.pages * PAGE, hint);
            if let Some(mine) = mine.as_deref_mut() {
                mine.push(r);
            }
            staged += 1;
        }
        (staged, cpu)
    }

    /// Page cache `i`'s pass is over: its flusher `t` sleeps, with the
    /// periodic timer while dirty pages remain.
    fn flusher_sleep(&mut self, t: usize, i: usize) {
        let now = self.now();
        let pc = self.instance(i);
        pc.end_pass();
        pc.pass = None;
        if pc.cache.dirty_pages() > 0 {
            pc.timer_armed = true;
            let at = now + pc.cache.set.writeback_interval;
            self.block_with_timer(t, Wait::PageCacheTimer, at);
        } else {
            self.block(t, Wait::PageCacheTimer);
        }
    }
}

/// The page caches `sc` needs, in the order their flushers are added:
/// the host's (a buffered job on the host, or an application that writes
/// through it), with its flusher on `flusher_cpu`, then each guest's that
/// runs a buffered job, with its flusher on the vCPU of the guest's first
/// buffered thread (the guest kernel's writeback runs on its own vCPUs;
/// the guest kernels use the host's page cache settings).
pub(crate) fn plan(sc: &cint_scenario::Scenario) -> Vec<(Owner, u32)> {
    let mut out = Vec::new();
    let buffered = |owner: Option<u32>| {
        sc.jobs
            .iter()
            .find(|job| job.guest == owner && job_buffered(job))
    };
    if buffered(None).is_some() || crate::apps::need_page_cache(sc) {
        out.push((Owner::Host, sc.host.page_cache.flusher_cpu));
    }
    for g in 0..sc.virt.guests.len() as u32 {
        if let Some(job) = buffered(Some(g)) {
            out.push((Owner::Guest(g), sc.thread_core(job, 0)));
        }
    }
    out
}

/// The device queues the flushers submit to (their cores', as every
/// thread's).
pub(crate) fn flusher_queues(
    sc: &cint_scenario::Scenario,
    queues_n: usize,
) -> impl Iterator<Item = usize> {
    plan(sc)
        .into_iter()
        .map(move |(_, core)| core as usize % queues_n.max(1))
}

/// Adds a flusher thread for each page cache of [`plan`]: a kernel thread
/// with as many request slots as the device has tags per queue (the tags,
/// not the slots, bound its writeback). Returns each cache's owner and
/// flusher thread, in the plan's order.
pub(crate) fn add_flushers(
    sc: &cint_scenario::Scenario,
    threads: &mut Vec<crate::world::Thread>,
    reqs: &mut Vec<Request>,
    cores: &mut [crate::host::Core],
    queues_n: usize,
    estimator: cint_policy::hybrid_poll::SleepEstimator,
) -> Result<Vec<(Owner, usize)>, crate::SimError> {
    add_fsync_slots(sc, threads, reqs, queues_n);
    let mut out = Vec::new();
    for (k, (owner, core)) in plan(sc).into_iter().enumerate() {
        let core = core as usize;
        if core >= cores.len() {
            return Err(crate::SimError::input_at(
                "host.page_cache.flusher_cpu",
                format!("core {core} is beyond the host's {} cores", cores.len()),
            ));
        }
        let prog = crate::workload::Program::kernel();
        let tid = threads.len();
        let mut th = crate::world::Thread::fresh(
            sc.seed,
            (sc.jobs.len() as u32, k as u32),
            core as u32,
            prog,
            flusher_start(),
            estimator,
        );
        th.job = KERNEL_JOB;
        let depth = sc.device.queue_depth.max(1);
        for _ in 0..depth {
            th.free_slots.push(reqs.len() as u32);
            reqs.push(Request::free(tid as u32, (core % queues_n) as u32, false));
        }
        th.free_slots.reverse();
        threads.push(th);
        cores[core].rq.push(tid as u32);
        out.push((owner, tid));
    }
    Ok(out)
}

/// Gives each thread of a buffered job that calls `fsync` or `fdatasync`
/// request slots for the call's writeback, as many as the device has tags
/// per queue (the tags bound what is in flight).
fn add_fsync_slots(
    sc: &cint_scenario::Scenario,
    threads: &mut [crate::world::Thread],
    reqs: &mut Vec<Request>,
    queues_n: usize,
) {
    for (tid, th) in threads.iter_mut().enumerate() {
        let Some(job) = sc.jobs.get(th.job as usize) else {
            continue;
        };
        let syncs =
            matches!(&job.work, Work::Io(io) if io.shape.fsync > 0 || io.shape.fdatasync > 0);
        if !job_buffered(job) || !syncs {
            continue;
        }
        let queue = th.core as usize % queues_n.max(1);
        for _ in 0..sc.device.queue_depth.max(1) {
            th.fsync_slots.push(reqs.len() as u32);
            reqs.push(Request::free(tid as u32, queue as u32, false));
        }
        th.fsync_slots.reverse();
    }
}

impl World<'_> {
    /// End of run: each cache's books balance (no page lost or written
    /// twice, no request malformed).
    pub(crate) fn check_page_cache(&mut self) {
        let Some(b) = self.page_cache.as_deref() else {
            return;
        };
        for pc in &b.instances {
            if let Err(msg) = pc.cache.consistent() {
                let owner = self.owner_name(pc.owner);
                self.check.fail(format!("page cache of {owner}: {msg}"));
            }
        }
    }

    /// The kernel a page cache belongs to, for messages.
    fn owner_name(&self, owner: Owner) -> String {
        match owner {
            Owner::Host => "the host".to_string(),
            Owner::Guest(g) => match self.sc.virt.guests.get(g as usize) {
                Some(guest) => format!("guest \"{}\"", guest.name),
                None => format!("guest {g}"),
            },
        }
    }

    /// What the page caches did in the run, for the result's notes: one
    /// per cache, naming its kernel where there are several.
    pub(crate) fn page_cache_notes(&self, strategy: &cint_scenario::Strategy) -> Vec<String> {
        let Some(b) = self.page_cache.as_deref() else {
            return Vec::new();
        };
        let several = b.instances.len() > 1;
        b.instances
            .iter()
            .map(|pc| {
                let t = &pc.cache.totals;
                let of = if several {
                    format!(" of {}", self.owner_name(pc.owner))
                } else {
                    String::new()
                };
                format!(
                    "strategy '{}': page cache{of} over the whole run: {} pages dirtied, {} \
                     written back in {} requests (largest {} KiB) by {} background and {} \
                     periodic flusher runs that wrote, {} throttle pauses, {} read-ahead \
                     requests of {} pages; at the end {} dirty and {} under writeback",
                    strategy.name,
                    t.dirtied,
                    t.written,
                    t.requests,
                    t.largest_request * PAGE / 1024,
                    t.background_runs,
                    t.kupdate_runs,
                    t.pauses,
                    t.read_ahead,
                    t.read_ahead_pages,
                    pc.cache.dirty_pages(),
                    pc.cache.writeback_pages(),
                )
            })
            .collect()
    }
}

/// The flusher's program state right after it is built: it runs once,
/// finds nothing to do and sleeps.
pub(crate) fn flusher_start() -> Activity {
    Activity::Burst {
        left: 0,
        then: Cont::PageCache,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            memory_pages: 1000,
            background_pages: 100,
            limit_pages: 200,
            writeback_interval: 5 * SEC,
            expire: 30 * SEC,
            max_request_pages: 32,
            read_ahead_pages: 32,
            buffered_call: 1_000,
            page_copy: 700,
            writeback_page: 250,
            jiffy: 4_000_000,
            stat_error: 640,
        }
    }

    #[test]
    fn background_writeback_starts_past_the_threshold_and_stops_under_it() {
        let mut pc = PageCache::new(settings());
        pc.write(0, 0, 100, 0);
        assert!(
            !pc.over_background(),
            "100 pages is the threshold, not past it"
        );
        assert_eq!(pc.next_writeback(Pass::Background, 0), None);
        pc.write(0, 100, 40, 0);
        assert!(pc.over_background());
        let mut written = 0;
        while let Some(e) = pc.next_writeback(Pass::Background, 0) {
            written += e.pages;
        }
        // A chunk of MIN_WRITEBACK_PAGES is more than everything dirty.
        assert_eq!((written, pc.dirty_pages()), (140, 0));
        pc.write(5, 0, 101, 0);
        pc.chunk_left = 0;
        assert_eq!(
            pc.next_writeback(Pass::Background, 0).map(|e| e.pages),
            Some(32)
        );
    }

    #[test]
    fn requests_merge_contiguous_pages_up_to_the_maximum() {
        let mut pc = PageCache::new(settings());
        pc.write(1, 0, 70, 0);
        pc.write(1, 80, 3, 0);
        let sizes: Vec<_> = std::iter::from_fn(|| pc.next_writeback(Pass::Kupdate, 31 * SEC))
            .map(|e| (e.first, e.pages))
            .collect();
        assert_eq!(sizes, [(0, 32), (32, 32), (64, 6), (80, 3)]);
        assert_eq!(pc.totals.largest_request, 32);
    }

    #[test]
    fn only_expired_files_are_written_by_a_periodic_run() {
        let mut pc = PageCache::new(settings());
        pc.write(1, 0, 4, 0);
        pc.write(2, 0, 4, 10 * SEC);
        assert_eq!(pc.next_writeback(Pass::Kupdate, 29 * SEC), None);
        let e = pc
            .next_writeback(Pass::Kupdate, 35 * SEC)
            .expect("file 1 expired");
        assert_eq!(e.file, 1);
        assert_eq!(pc.next_writeback(Pass::Kupdate, 35 * SEC), None);
        assert_eq!(
            pc.next_writeback(Pass::Kupdate, 40 * SEC).map(|e| e.file),
            Some(2)
        );
    }

    #[test]
    fn writers_are_throttled_past_the_limit_until_writeback_completes() {
        let mut pc = PageCache::new(settings());
        pc.write(0, 0, 201, 0);
        assert!(pc.over_limit());
        let pause = pc.max_pause(201);
        assert!((1..=pc.set.max_pause()).contains(&pause), "{pause}");
        // Submitting writeback does not lift the limit: writeback pages
        // count; completing it does.
        let mut slot = 0;
        while let Some(e) = pc.next_writeback(Pass::Kupdate, 31 * SEC) {
            pc.track(slot, e);
            slot += 1;
        }
        assert!(pc.over_limit());
        for s in 0..slot {
            pc.written(s, 31 * SEC);
        }
        assert!(!pc.over_limit());
        assert_eq!(pc.totals.written, 201);
        pc.consistent().expect("consistent");
    }

    #[test]
    fn a_background_chunk_is_half_a_second_at_the_estimated_bandwidth() {
        let set = Settings {
            memory_pages: 1 << 30,
            background_pages: 10_000,
            limit_pages: 1_000_000,
            ..settings()
        };
        let mut pc = PageCache::new(set);
        pc.write(0, 0, 20_000, 0);
        let mut written = 0;
        while let Some(e) = pc.next_writeback(Pass::Background, 0) {
            written += e.pages;
        }
        // INIT_BW / 2 = 12 800 pages (under an eighth of the limit), plus
        // 4096, rounded down: 16 384, though the threshold was crossed
        // after 10 000.
        assert_eq!(written, 16_384);
        // A small limit bounds the chunk: an eighth of 80 000 pages.
        let mut pc = PageCache::new(Settings {
            limit_pages: 80_000,
            ..set
        });
        pc.write(0, 0, 20_000, 0);
        let written: u64 = std::iter::from_fn(|| pc.next_writeback(Pass::Background, 0))
            .map(|e| e.pages)
            .sum();
        assert_eq!(written, 12_288);
    }

    #[test]
    fn a_wake_up_runs_the_periodic_pass_when_due_and_then_the_background_one() {
        let mut pc = Instance {
            owner: Owner::Host,
            cache: PageCache::new(settings()),
            flusher: 0,
            pass: None,
            timer_armed: false,
            pass_wrote: false,
            last_old_flush: 0,
            fsync_waiters: Vec::new(),
        };
        // Nothing due and nothing past the threshold: back to sleep.
        assert_eq!(pc.first_pass(SEC), None);
        // Past the threshold 2 s in, whoever wakes the flusher (its timer
        // too) writes in the background: the periodic pass is not due.
        pc.cache.write(0, 0, 150, SEC);
        assert_eq!(pc.first_pass(2 * SEC), Some(Pass::Background));
        // 5 s after the last periodic look, a writer's kick runs the
        // periodic pass first (and the flusher's step the background one
        // after it); the next is due 5 s later.
        assert_eq!(pc.first_pass(6 * SEC), Some(Pass::Kupdate));
        assert_eq!(pc.first_pass(7 * SEC), Some(Pass::Background));
        assert_eq!(pc.first_pass(11 * SEC), Some(Pass::Kupdate));
    }

    /// Writes `pages` dirty pages of file 9 back: submitted at `start`,
    /// completed at `end` (slots from `slot`).
    fn write_back(pc: &mut PageCache, pages: u64, (start, end): (Nanos, Nanos), slot: &mut u32) {
        let base = pc.totals.dirtied;
        pc.write(9, base, pages, start);
        let mut mine = Vec::new();
        while let Some(e) = pc.next_sync_extent(9, start) {
            pc.track(*slot, e);
            mine.push(*slot);
            *slot += 1;
        }
        for s in mine {
            pc.written(s, end);
        }
    }

    #[test]
    fn the_bandwidth_estimate_follows_wb_update_write_bandwidth() {
        // One request each: the estimate moves on a completion.
        let set = Settings {
            memory_pages: 1 << 30,
            max_request_pages: 1 << 20,
            ..settings()
        };
        let mut pc = PageCache::new(set);
        let mut slot = 0;
        // 20 000 pages in 200 ms: 100 000 pages/s measured, weighted by
        // 200 ms of the 4.096 s period.
        write_back(&mut pc, 20_000, (0, 200_000_000), &mut slot);
        let expected = (INIT_BW * (1024 - 50) + 100_000 * 50) / 1024;
        assert_eq!(pc.bandwidth, expected);
        // The smoothed estimate moves only once the estimate has left it
        // and goes on moving away: not yet, so the pause stays as it was.
        assert_eq!(pc.avg_bandwidth, INIT_BW);
        write_back(&mut pc, 20_000, (200_000_000, 400_000_000), &mut slot);
        assert!(pc.bandwidth > expected);
        assert_eq!(pc.avg_bandwidth, INIT_BW + (expected - INIT_BW) / 8);
        // Ten idle seconds, then writeback again: the update over the gap
        // is skipped (the device was idle, not slow) ...
        let before = (pc.bandwidth, pc.avg_bandwidth);
        write_back(&mut pc, 100, (10 * SEC, 10 * SEC + 100_000_000), &mut slot);
        assert_eq!((pc.bandwidth, pc.avg_bandwidth), before);
        // ... and the next one measures from the skipped one.
        write_back(
            &mut pc,
            20_000,
            (10 * SEC + 100_000_000, 10 * SEC + 300_000_000),
            &mut slot,
        );
        assert!(pc.bandwidth > before.0);
    }

    #[test]
    fn no_page_is_lost_or_written_twice() {
        let mut pc = PageCache::new(settings());
        let mut rng = stream_rng(7, 1);
        let mut slot = 0u32;
        let mut in_flight = Vec::new();
        for step in 0..2_000u64 {
            let now = step * 100_000_000;
            match rng.gen_range(0..3) {
                0 => {
                    let first = rng.gen_range(0..300);
                    pc.write(rng.gen_range(0..3), first, rng.gen_range(1..20), now);
                }
                1 => {
                    if let Some(e) = pc.next_writeback(Pass::Kupdate, now) {
                        pc.track(slot, e);
                        in_flight.push(slot);
                        slot += 1;
                    }
                }
                _ => {
                    if !in_flight.is_empty() {
                        let i = rng.gen_range(0..in_flight.len());
                        pc.written(in_flight.swap_remove(i), now);
                    }
                }
            }
            pc.consistent()
                .unwrap_or_else(|e| panic!("step {step}: {e}"));
        }
        for s in in_flight {
            pc.written(s, 1 << 50);
        }
        while let Some(e) = pc.next_writeback(Pass::Kupdate, 1 << 50) {
            pc.track(slot, e);
            pc.written(slot, 1 << 50);
            slot += 1;
        }
        assert_eq!(pc.dirty_pages() + pc.writeback_pages(), 0);
        assert_eq!(pc.totals.dirtied, pc.totals.written);
    }

    #[test]
    fn read_ahead_grows_on_a_sequential_stream() {
        let mut pc = PageCache::new(settings());
        let normal = Advice::Normal;
        let first = pc.read_ahead(0, 0, 1, 1000, normal);
        // One page, max 32: 1 <= 32/32, so four pages.
        assert_eq!(first.pages, 4);
        pc.read_done(first);
        assert!(pc.cached(0, 0, 4) && !pc.cached(0, 4, 1));
        // 4 is not below 32 / 16: the window doubles.
        let next = pc.read_ahead(0, 4, 1, 1000, normal);
        assert_eq!((next.first, next.pages), (4, 8));
        assert_eq!(pc.read_ahead(0, 12, 1, 1000, normal).pages, 16);
        let fourth = pc.read_ahead(0, 28, 1, 1000, normal);
        assert_eq!(fourth.pages, 32);
        assert_eq!(
            pc.read_ahead(0, 60, 1, 1000, normal).pages,
            32,
            "capped at read_ahead"
        );
        // POSIX_FADV_SEQUENTIAL doubles the limit.
        let mut seq = PageCache::new(settings());
        let windows: Vec<u64> = [0, 4, 12, 28, 60, 124]
            .into_iter()
            .map(|at| seq.read_ahead(1, at, 1, 1000, Advice::Sequential).pages)
            .collect();
        assert_eq!(windows, [4, 8, 16, 32, 64, 64]);
    }

    #[test]
    fn a_small_random_miss_reads_only_its_pages_unless_it_looks_sequential() {
        let mut pc = PageCache::new(settings());
        let normal = Advice::Normal;
        // A lone miss far into the file: read as is, no stream started.
        let lone = pc.read_ahead(0, 500, 1, 1000, normal);
        assert_eq!((lone.first, lone.pages), (500, 1));
        pc.read_done(lone);
        pc.note_read(0, 500, 1);
        // The next page after the previous read: a stream starts there.
        assert_eq!(pc.read_ahead(0, 501, 1, 1000, normal).pages, 4);
        // Two cached pages before a one-page miss are more history than
        // the read: context read-ahead, history plus the read.
        let mut ctx = PageCache::new(settings());
        for p in [198, 199] {
            ctx.read_done(Extent {
                file: 0,
                first: p,
                pages: 1,
            });
        }
        ctx.note_read(0, 700, 1);
        assert_eq!(ctx.read_ahead(0, 200, 1, 1000, normal).pages, 3);
        // One cached page is not more than the read: as is.
        ctx.note_read(0, 700, 1);
        ctx.read_done(Extent {
            file: 0,
            first: 299,
            pages: 1,
        });
        assert_eq!(ctx.read_ahead(0, 300, 1, 1000, normal).pages, 1);
        // POSIX_FADV_RANDOM: only the pages asked for, even at the start
        // of the file or next to the previous read.
        let mut random = PageCache::new(settings());
        assert_eq!(random.read_ahead(0, 0, 1, 1000, Advice::Random).pages, 1);
        random.note_read(0, 0, 1);
        assert_eq!(random.read_ahead(0, 1, 2, 1000, Advice::Random).pages, 2);
    }

    /// A cache of a million pages (background 100 000, limit 200 000: the
    /// free-run ceiling is 150 000, the setpoint 175 000) whose device has
    /// completed writeback, with `dirty` pages dirty.
    fn paced_cache(dirty: u64) -> PageCache {
        let mut pc = PageCache::new(Settings {
            memory_pages: 1_000_000,
            background_pages: 100_000,
            limit_pages: 200_000,
            ..settings()
        });
        let mut slot = 0;
        write_back(&mut pc, 1, (0, 0), &mut slot);
        pc.write(0, 0, dirty, 0);
        pc
    }

    #[test]
    fn a_writer_past_the_freerun_ceiling_is_paced_below_the_limit() {
        // 160 000 dirty: pos_ratio 1.30 (1335 / 1024) at INIT_BW, so a
        // task_ratelimit of 33 375 pages a second.
        let mut pc = paced_cache(160_000);
        assert_eq!(pc.position_ratio(160_000), 1335);
        let mut p = Pacing::default();
        let (mut now, mut dirtied, mut pauses) = (0, 0u64, 0);
        // One page a microsecond (a free writer would dirty 40 000 pages
        // to the limit in 40 ms), for 200 ms: less than a rate update.
        while now < 200_000_000 {
            pc.write(0, 160_000 + dirtied, 1, now);
            dirtied += 1;
            p.dirtied(1);
            let b = pc.balance(&mut p, now);
            now += 1_000;
            if let Some(end) = b.pause_until {
                assert!(end > now - 1_000 && end - now < 50 * 4_000_000);
                pauses += 1;
                now = end;
            }
        }
        assert!(pc.dirty + pc.writeback < pc.set.limit_pages);
        // Paced: after each `nr_dirtied_pause` of 200 pages (wb_min_pause's
        // 10 ms target, 2 jiffies, at dirty_ratelimit), a period of
        // HZ * 200 / 33 375 = 1 jiffy (Linux's integer jiffies round it
        // down from 1.5): about 50 000 pages a second, 10 000 in 200 ms.
        assert!(
            (9_000..=11_000).contains(&dirtied),
            "{dirtied} pages dirtied"
        );
        assert!(pauses >= 20, "{pauses} pauses");
        assert_eq!(pc.totals.pauses, pauses);
    }

    #[test]
    fn under_the_ceiling_a_writer_looks_after_its_poll_interval() {
        // 120 000 dirty, past the background threshold but under the
        // ceiling: the first look lets the writer run free and sets its
        // next look 2^(ilog2(80 000) / 2) = 256 pages on; until then it
        // does not look, and so does not wake the flusher.
        let mut pc = paced_cache(120_000);
        let mut p = Pacing::default();
        p.dirtied(32);
        assert_eq!(
            pc.balance(&mut p, 0),
            Balance {
                kick: true,
                pause_until: None
            }
        );
        assert_eq!(p.nr_dirtied_pause, 256);
        p.dirtied(255);
        assert_eq!(pc.balance(&mut p, 0), Balance::default());
        p.dirtied(1);
        assert!(pc.balance(&mut p, 0).kick);
        assert_eq!((p.nr_dirtied, p.pending), (0, 0));
    }

    #[test]
    fn over_the_limit_a_writer_sleeps_max_pause_and_looks_again() {
        let mut pc = paced_cache(200_001);
        let mut p = Pacing::default();
        p.dirtied(32);
        // wb_max_pause: 200 001 / (1 + 25 600 / 32) + 1 = 250 jiffies,
        // cut to MAX_PAUSE (50 jiffies, 200 ms).
        let b = pc.balance(&mut p, 1_000_000);
        assert_eq!(b.pause_until, Some(50 * 4_000_000));
        assert!(pc.dirty_exceeded);
        // Woken, still over the limit: another pause, with no new page.
        let b = pc.balance(&mut p, 200_000_000);
        assert_eq!(b.pause_until, Some(100 * 4_000_000));
        // Under the ceiling again, the loop ends; `dirty_exceeded` stays
        // (Linux clears it only after a turn that found the limit not
        // exceeded) until a call past the ceiling finds it so.
        let mut slot = 100;
        while let Some(e) = pc.next_writeback(Pass::Background, 0) {
            pc.track(slot, e);
            pc.written(slot, 400_000_000);
            slot += 1;
            if pc.dirty < 150_000 {
                break;
            }
        }
        pc.chunk_left = 0;
        assert_eq!(pc.balance(&mut p, 400_000_000).pause_until, None);
        assert!(pc.dirty_exceeded);
        pc.write(0, 300_000, 20_000, 400_000_000);
        p.dirtied(8);
        pc.balance(&mut p, 400_000_000);
        assert!(!pc.dirty_exceeded);
    }

    #[test]
    fn the_writers_rate_moves_toward_the_balanced_rate() {
        // 185 000 dirty (past the setpoint: pos_ratio under 1) and a
        // writer that dirtied twice what the device writes over 200 ms:
        // the balanced rate is about half INIT_BW, and the base rate steps
        // down toward it, a little.
        let mut pc = paced_cache(185_000);
        let pos_ratio = pc.position_ratio(185_000);
        assert!(pos_ratio < 1 << RATELIMIT_SHIFT, "{pos_ratio}");
        pc.dirtied_stamp = pc.totals.dirtied - 2 * INIT_BW / 5;
        pc.update_ratelimit_at(51, 185_000, pos_ratio);
        let balanced = pc.balanced_ratelimit;
        assert!(
            (INIT_BW * 4 / 10..INIT_BW / 2).contains(&balanced),
            "{balanced}"
        );
        // The first step is filtered out: the last balanced rate (INIT_BW)
        // is above the base rate.
        assert_eq!(pc.dirty_ratelimit, INIT_BW);
        // Within 200 ms of the last update nothing moves.
        pc.update_ratelimit_at(100, 185_000, pos_ratio);
        assert_eq!(pc.dirty_ratelimit, INIT_BW);
        // Another 200 ms the same: the rate steps down, toward
        // task_ratelimit (22 776) by (25 600 - 22 776) >> 4, an eighth.
        pc.write(0, 185_000, 2 * INIT_BW / 5, 0);
        pc.update_ratelimit_at(102, 185_000, pos_ratio);
        assert_eq!(pc.dirty_ratelimit, INIT_BW - 22);
    }

    /// The files of a pass's requests at `now`, as runs of (file, pages).
    fn writeback_runs(pc: &mut PageCache, pass: Pass, now: Nanos) -> Vec<(u32, u64)> {
        let mut runs: Vec<(u32, u64)> = Vec::new();
        while let Some(e) = pc.next_writeback(pass, now) {
            match runs.last_mut() {
                Some((file, pages)) if *file == e.file => *pages += e.pages,
                _ => runs.push((e.file, e.pages)),
            }
        }
        runs
    }

    #[test]
    fn several_dirty_files_take_turns_a_chunk_each() {
        // A chunk of 4096 pages (an eighth of the limit is less than
        // MIN_WRITEBACK_PAGES); the older file goes first each round.
        let mut pc = PageCache::new(Settings {
            memory_pages: 1 << 20,
            ..settings()
        });
        pc.write(1, 0, 10_000, 0);
        pc.write(2, 0, 10_000, 1);
        assert_eq!(
            writeback_runs(&mut pc, Pass::Background, 2),
            [
                (1, 4096),
                (2, 4096),
                (1, 4096),
                (2, 4096),
                (1, 1808),
                (2, 1808)
            ]
        );
        // The periodic pass shares the device the same way among the
        // expired files, and leaves the others.
        pc.write(3, 0, 5_000, 0);
        pc.write(4, 0, 5_000, 20 * SEC);
        pc.write(5, 0, 5_000, 10 * SEC);
        assert_eq!(
            writeback_runs(&mut pc, Pass::Kupdate, 45 * SEC),
            [(3, 4096), (5, 4096), (3, 904), (5, 904)]
        );
    }

    /// Reads `pages` pages of `file` at `first` into the cache as a
    /// buffered read does: missing pages come in, then each is accessed.
    fn read(pc: &mut PageCache, file: u32, first: u64, pages: u64) {
        if !pc.read_hit(file, first, pages) {
            let skip = pc.rereads_last_page(file, first);
            pc.note_read(file, first, pages);
            pc.read_done(Extent { file, first, pages });
            pc.mark_accessed(file, first, pages, skip);
        }
    }

    /// A cache of 1000 pages after a hot set of file 1 (pages
    /// `0..hot`) was read twice, page by page, then `cold` pages of file
    /// 2 once each.
    fn hot_then_cold(hot: u64, cold: u64) -> PageCache {
        let mut pc = PageCache::new(settings());
        for _ in 0..2 {
            for p in 0..hot {
                read(&mut pc, 1, p, 1);
            }
        }
        assert_eq!(pc.active_pages, hot);
        for p in 0..cold {
            read(&mut pc, 2, p, 1);
        }
        pc
    }

    #[test]
    fn a_page_read_twice_is_active_and_outlives_a_pass_over_cold_data() {
        let mut pc = hot_then_cold(100, 3000);
        assert!(pc.cached(1, 0, 100), "the hot set stays");
        assert!(!pc.cached(2, 0, 1000) && pc.cached(2, 2100, 900));
        pc.consistent().expect("consistent");
        // A page read twice in a row at the same place is accessed once
        // (the second read starts where the first ended).
        read(&mut pc, 3, 0, 1);
        read(&mut pc, 3, 0, 1);
        assert_eq!(pc.active_pages, 100);
        read(&mut pc, 3, 1, 1);
        read(&mut pc, 3, 0, 1);
        assert_eq!(pc.active_pages, 101);
    }

    #[test]
    fn the_active_list_gives_back_its_oldest_pages_when_the_inactive_is_low() {
        // A hot set of 600 pages in 1000: under a GiB the inactive list
        // is low once smaller than the active one, so reclaim moves the
        // oldest active pages back, and a cold pass evicts them.
        let pc = hot_then_cold(600, 5000);
        assert!(pc.active_pages <= 500, "{}", pc.active_pages);
        assert!(!pc.cached(1, 0, 1), "the oldest active page was evicted");
        assert!(pc.cached(1, 599, 1), "the youngest is still active");
        pc.consistent().expect("consistent");
    }
}
