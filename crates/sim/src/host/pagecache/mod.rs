//! The page cache and its writeback, as Linux 5.0 runs them
//! (mm/page-writeback.c, fs/fs-writeback.c, mm/readahead.c), for threads
//! that do buffered I/O (a job without `direct` on `psync`, `pvsync2` or
//! `libaio`).
//!
//! * A buffered `write()` copies into the cache: CPU on the writer's core
//!   (`buffered_call`, `page_lookup` per page, `page_copy` per 4 KiB
//!   copied), no device request. The
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

use crate::world::{Activity, Cont, ReqState, Request, RunState, Wait, World};

/// ext4's journal commit as jbd2 writes it without `async_commit` (Linux
/// 5.0 `jbd2_journal_commit_transaction`): first the log, a descriptor
/// block and each metadata block the transaction changed, consecutive in
/// the journal and merged into one request; once it is on the device, the
/// commit block: two writes in series (docs/HOST-COSTS.md, "The journal
/// commit of an fsync", measured). The built-in devices have no volatile
/// write cache, so no flush goes with them. This is the commit block.
pub(crate) const JOURNAL_COMMIT_BLOCK: u64 = 4096;

/// The log of a transaction that changed a file's inode only, its times
/// (an overwrite in place) or its size (an append within blocks already
/// allocated, as to a preallocated log): the descriptor and the inode's
/// block.
pub(crate) const JOURNAL_LOG_INODE: u64 = 2 * 4096;

/// The log of a transaction that allocated a new file's blocks: the
/// descriptor, the inode's block, the block bitmap and the group
/// descriptor.
pub(crate) const JOURNAL_LOG_ALLOCATION: u64 = 4 * 4096;

/// The job index of kernel threads (the flusher): they belong to no job.
pub(crate) const KERNEL_JOB: u32 = u32::MAX;

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
    pub page_lookup: Nanos,
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
    /// The CPU of copying `bytes` over `pages` pages between user space
    /// and the cache: each page's lookup, the copy by the byte.
    pub(crate) fn copy_cost(&self, pages: u64, bytes: u64) -> Nanos {
        pages * self.page_lookup + bytes * self.page_copy / PAGE
    }

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
            page_lookup: p.page_lookup.0,
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
    /// The jiffy of its modification time, if a write of the run set it.
    mtime_jiffy: Option<u64>,
    /// The journal transaction that last changed its inode
    /// (`ei->i_sync_tid`); 0 if none did in the run.
    sync_tid: u64,
    /// The journal transaction that last changed what `fdatasync` must
    /// commit too (`ei->i_datasync_tid`): its size; 0 if none did in the
    /// run.
    datasync_tid: u64,
    /// Allocated without data (fio's layout of a file it only writes:
    /// `fallocate`, ext4's unwritten extents): a page's block holds data
    /// only once written back ([`File::on_disk`]). Otherwise every block
    /// holds data.
    fallocated: bool,
    /// Of a `fallocated` file, the pages written back in the run.
    on_disk: BTreeSet<u64>,
}

impl File {
    /// Whether the block under page `p` holds data on the device, which
    /// a write that covers the page only in part must read first.
    fn holds_data(&self, p: u64) -> bool {
        !self.fallocated || self.on_disk.contains(&p)
    }

    /// Whether page `p` is in the cache: clean, dirty or under writeback.
    fn holds(&self, p: u64) -> bool {
        self.cached.contains_key(&p) || self.dirty.contains(&p) || self.writeback.contains(&p)
    }
}

/// What an `fsync` finds of its inode's transaction ([`PageCache::fsync_commit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Commit {
    /// Committed: nothing to wait for.
    Done,
    /// The running transaction: the call writes its commit.
    Write(u64),
    /// A commit is in flight (another call's): the call waits for it,
    /// then looks again.
    InFlight(u64),
}

/// ext4's journal (jbd2) as an `fsync` meets it: every inode change
/// joins the running transaction, and a commit writes that transaction
/// whole, whichever file's `fsync` asked for it.
#[derive(Clone, Copy, Debug)]
struct Journal {
    /// The running transaction (`j_running_transaction->t_tid`).
    running: u64,
    /// The last transaction whose commit started, and the last whose
    /// commit completed (0: none yet); one commits at a time.
    started: u64,
    completed: u64,
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
        } else if io.rw.is_random() {
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
    /// Pages read before a write that covers them only in part.
    pub write_reads: u64,
    /// Journal commits that `fsync` calls wrote.
    pub journal_commits: u64,
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
    journal: Journal,
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
            journal: Journal {
                running: 1,
                started: 0,
                completed: 0,
            },
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
        // `file_update_time` takes the time from the coarse clock, which
        // moves once a tick, and dirties the inode only when the time
        // changes (fs/inode.c `current_time`, `inode_needs_update_time`):
        // writes within one jiffy change the inode once.
        let jiffy = self.set.jiffies(now);
        if f.mtime_jiffy != Some(jiffy) {
            f.mtime_jiffy = Some(jiffy);
            f.sync_tid = self.journal.running;
        }
        none_dirty && self.dirty > 0
    }

    /// A write of `file` grew its size (an append). Linux 5.0 records the
    /// new size in the inode within the running transaction and marks the
    /// change as one `fdatasync` must commit as well
    /// (`ext4_do_update_inode`: `need_datasync` when `i_disksize`
    /// changes, then `ext4_update_inode_fsync_trans`), since the data
    /// past the old size cannot be read back without it.
    pub(crate) fn appended(&mut self, file: u32) {
        let running = self.journal.running;
        let f = self.files.entry(file).or_default();
        f.sync_tid = running;
        f.datasync_tid = running;
    }

    /// What an `fsync` of `file` (`fdatasync` if `datasync`) whose data
    /// is written must still wait for in the journal (`ext4_sync_file`,
    /// `jbd2_complete_transaction` on the inode's `i_sync_tid`, or
    /// `i_datasync_tid`): nothing when the transaction that last changed
    /// the inode (its size, for `fdatasync`) has committed (writes within
    /// the jiffy of the last commit left the inode as it was, and an
    /// overwrite in place leaves the size); the commit in flight, if
    /// there is one (jbd2 commits one transaction at a time: it holds the
    /// change, or the running transaction's commit follows it, holding
    /// every change made meanwhile), after which the call looks again;
    /// else the running transaction's commit, which the call writes
    /// (later changes join the next).
    pub(crate) fn fsync_commit(&mut self, file: u32, datasync: bool) -> Commit {
        if self.inode_committed(file, datasync) {
            return Commit::Done;
        }
        let j = &mut self.journal;
        if j.started > j.completed {
            Commit::InFlight(j.started)
        } else {
            j.started = j.running;
            j.running += 1;
            self.totals.journal_commits += 1;
            Commit::Write(j.started)
        }
    }

    /// The commit of transaction `tid` is on the device, and with it
    /// every earlier one (jbd2 commits in order).
    fn journal_committed(&mut self, tid: u64) {
        self.journal.completed = self.journal.completed.max(tid);
    }

    /// Whether the journal has committed every change of `file`'s inode
    /// (with `datasync`, every change `fdatasync` must commit: its size).
    pub(crate) fn inode_committed(&self, file: u32, datasync: bool) -> bool {
        let tid =
            self.files
                .get(&file)
                .map_or(0, |f| if datasync { f.datasync_tid } else { f.sync_tid });
        self.is_committed(tid)
    }

    /// Whether transaction `tid` has committed.
    fn is_committed(&self, tid: u64) -> bool {
        tid <= self.journal.completed
    }

    /// Whether pages `first..first + pages` of `file` are all cached
    /// (clean, dirty or under writeback); the tests' view, without
    /// marking anything accessed ([`PageCache::read_hit`] does).
    #[cfg(test)]
    pub(crate) fn cached(&self, file: u32, first: u64, pages: u64) -> bool {
        self.files
            .get(&file)
            .is_some_and(|f| (first..first + pages).all(|p| f.holds(p)))
    }

    /// A read of `pages` pages at `first` of `file`, hit or miss, is done:
    /// the next miss is judged against it (`ra->prev_pos`).
    pub(crate) fn note_read(&mut self, file: u32, first: u64, pages: u64) {
        self.files.entry(file).or_default().prev_page = Some(first + pages.max(1) - 1);
    }

    /// `file` was allocated without data ([`File::fallocated`]).
    pub(crate) fn fallocated(&mut self, file: u32) {
        self.files.entry(file).or_default().fallocated = true;
    }

    /// The page a buffered write of `bytes` at byte `offset` of `file`
    /// must read before it copies into it, if any: ext4's
    /// `__block_write_begin_int` (Linux 5.0, 4 KiB blocks) reads a block
    /// the write covers only in part, that is not in the cache and that
    /// holds data, and waits for it; `generic_perform_write` goes page by
    /// page, so the first such page, then (after it is read) the last.
    pub(crate) fn page_to_read_before_write(
        &self,
        file: u32,
        offset: u64,
        bytes: u64,
        after: Option<u64>,
    ) -> Option<u64> {
        let f = self.files.get(&file);
        let end = offset + bytes.max(1);
        let (first, last) = (offset / PAGE, (end - 1) / PAGE);
        let partial = |p: u64| offset > p * PAGE || end < (p + 1) * PAGE;
        let must_read = |p: u64| partial(p) && f.is_none_or(|f| !f.holds(p) && f.holds_data(p));
        // A page the call has read is its own until it copies (Linux
        // holds it locked): never read twice, even if evicted meanwhile.
        [first, last]
            .into_iter()
            .filter(|&p| after.is_none_or(|a| p > a))
            .find(|&p| must_read(p))
    }

    /// A page read before a partial write ([`PageCache::page_to_read_before_write`]).
    pub(crate) fn note_write_read(&mut self) {
        self.totals.write_reads += 1;
    }

    /// The read-ahead for a miss of a read of `pages` pages at `first`
    /// (Linux 5.0's `page_cache_sync_readahead` and `ondemand_readahead`
    /// without the asynchronous part), within the file's `size_pages`: the
    /// window, and the pages of it the device reads.
    ///
    /// `generic_file_buffered_read` copies the call's cached pages up to
    /// its first missing one, and starts the read-ahead there for the rest
    /// of the call. `__do_page_cache_readahead` reads only the window's
    /// missing pages, skipping those it finds cached, one request per run
    /// of them; the model reads them in one request of their total size,
    /// the call waiting for all.
    pub(crate) fn read_ahead(
        &mut self,
        file: u32,
        first: u64,
        pages: u64,
        size_pages: u64,
        advice: Advice,
    ) -> (Extent, u64) {
        let max = match advice {
            Advice::Sequential => 2 * self.set.read_ahead_pages,
            _ => self.set.read_ahead_pages,
        };
        let f = self.files.entry(file).or_default();
        let start = (first..first + pages)
            .find(|&p| !f.holds(p))
            .unwrap_or(first);
        let needed = first + pages - start;
        let (len, stream) = match advice {
            Advice::Random => (needed, false),
            Advice::Normal | Advice::Sequential => ondemand_window(f, start, needed, max),
        };
        let len = len
            .max(needed)
            .min(size_pages.saturating_sub(start).max(needed));
        let missing = len - (start..start + len).filter(|&p| f.holds(p)).count() as u64;
        if stream {
            f.ra = Some((start, len));
        }
        self.totals.read_ahead += 1;
        self.totals.read_ahead_pages += missing;
        let window = Extent {
            file,
            first: start,
            pages: len,
        };
        (window, missing)
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
        let held = (first..first + pages).all(|p| f.holds(p));
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
            if f.fallocated {
                f.on_disk.insert(p);
            }
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
    let history = (1..=max.min(first))
        .take_while(|&k| f.holds(first - k))
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
    /// Its first byte and length in the file ([`Placement`]).
    offset: u64,
    len: u64,
    /// The call has copied its data (a write) and runs
    /// `balance_dirty_pages`, or a read waits for read-ahead.
    copied: bool,
    /// The slot of the read-ahead request the call waits for: the thread's
    /// ready list may also hold a libaio thread's unreaped events.
    read_ahead: Option<u32>,
    /// The read-ahead's window, whose missing pages that request reads.
    window: Option<Extent>,
    /// A read that starts on the page the file's last read ended on
    /// ([`PageCache::rereads_last_page`]).
    skip_first: bool,
}

/// A buffered thread's `fsync` or `fdatasync` in progress.
#[derive(Clone, Debug, Default)]
struct Fsync {
    active: bool,
    /// The file it syncs.
    file: u32,
    /// The hint of the file's pages' requests.
    hint: Hint,
    /// An application's call, which goes on in its program when it
    /// returns.
    app: bool,
    /// `fdatasync`, which needs no commit of the inode's times.
    datasync: bool,
    /// The journal may still have to commit the inode's changes.
    journal: bool,
    /// Its requests in flight (writeback and the journal commit).
    mine: Vec<u32>,
    /// The slot of the journal's log write while it is in flight: the
    /// commit block follows when it completes.
    journal_log: Option<u32>,
    /// The commit block's slot while it is in flight, and the
    /// transaction of both.
    journal_slot: Option<u32>,
    journal_tid: u64,
    /// The write whose `O_SYNC` or `O_DSYNC` this is (`generic_write_sync`
    /// inside the call), which returns when it ends; `None` for an
    /// `fsync` call of its own.
    within: Option<Call>,
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
    /// Threads in `fsync` waiting for another's journal commit, with the
    /// transaction each waits for: the commit's completion wakes them.
    commit_waiters: Vec<(u32, u64)>,
}

impl Instance {
    /// The page cache of `owner`'s kernel, written back by thread
    /// `flusher`, before anything happened.
    fn new(owner: Owner, settings: Settings, flusher: usize) -> Instance {
        Instance {
            owner,
            cache: PageCache::new(settings),
            flusher,
            pass: None,
            timer_armed: false,
            pass_wrote: false,
            last_old_flush: 0,
            fsync_waiters: Vec::new(),
            commit_waiters: Vec::new(),
        }
    }

    /// The commit of transaction `tid` is on the device: the threads
    /// whose `fsync` waited for it or an earlier one, to wake.
    fn commit_ended(&mut self, tid: u64) -> Vec<u32> {
        self.cache.journal_committed(tid);
        let cache = &self.cache;
        let mut done = Vec::new();
        self.commit_waiters.retain(|&(w, waits_for)| {
            let committed = cache.is_committed(waits_for);
            if committed {
                done.push(w);
            }
            !committed
        });
        done
    }

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
    /// Per thread: the byte where its next sequential read and write
    /// start (fio keeps one position per direction, `f->last_pos`).
    next_offset: Vec<[u64; 2]>,
    /// Per thread: its file's pages, a partial last page counted (the
    /// read-ahead's bound).
    size_pages: Vec<u64>,
    /// Per thread: its file's bytes (where requests may land).
    size_bytes: Vec<u64>,
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
        let mut size_bytes = vec![PAGE; n];
        let mut advice = vec![Advice::Normal; n];
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
                size_pages[t] = io.size.div_ceil(PAGE).max(1);
                size_bytes[t] = io.size.max(512);
                advice[t] = Advice::of(io);
            }
            of_thread[t] = match job {
                Some(job) => instance(job.guest.map_or(Owner::Host, Owner::Guest)),
                // Applications run on the host; a flusher is its cache's.
                None if j == crate::apps::APP_JOB => instance(Owner::Host),
                None => flushers.iter().position(|&(_, f)| f == t).map(|i| i as u32),
            };
        }
        let settings = Settings::from_profile(&sc.host.page_cache, sc.host.tick.0, sc.host.cores);
        let mut instances: Vec<Instance> = flushers
            .iter()
            .map(|&(owner, flusher)| Instance::new(owner, settings, flusher))
            .collect();
        // fio lays out a file a job reads by writing it whole; one a job
        // only writes it allocates without data (`extend_file`, fio 3.33).
        for (t, &j) in thread_jobs.iter().enumerate() {
            // Only a job that can write part of a page needs to know which
            // blocks hold data: the set grows with the pages written back.
            let write_only = sc.jobs.get(j as usize).is_some_and(|job| {
                job_buffered(job)
                    && matches!(&job.work, Work::Io(io) if matches!(io.rw, Rw::Write | Rw::RandWrite)
                        && writes_part_of_a_page(io))
            });
            if let (true, Some(i)) = (write_only, of_thread[t]) {
                instances[i as usize].cache.fallocated(t as u32);
            }
        }
        Some(Box::new(Buffered {
            instances,
            of_thread,
            calls: vec![Call::default(); n],
            advice,
            aio: vec![AioSubmit::default(); n],
            fsyncs: vec![Fsync::default(); n],
            pacing: vec![Pacing::default(); n],
            next_offset: vec![[0; 2]; n],
            size_pages,
            size_bytes,
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

    /// Where thread `t`'s next request of `bytes` lands, `write` or a
    /// read: at `drawn`, where a random job's offsets put it
    /// (`crate::workload::offsets`), or the next in sequence in its
    /// direction (fio keeps a position per direction). A request larger
    /// than the file covers the file.
    fn place(&mut self, t: usize, write: bool, bytes: u64, drawn: Option<u64>) -> Placement {
        let span = self.size_bytes[t];
        // Any size through the cache (a buffered job's `bs` need not be
        // whole sectors), at most the file.
        let len = bytes.clamp(1, span);
        let next = &mut self.next_offset[t][usize::from(write)];
        let offset = match drawn {
            Some(at) => at.min(span - len),
            None if *next + len > span => 0,
            None => *next,
        };
        *next = offset + len;
        let first = offset / PAGE;
        Placement {
            first,
            pages: (offset + len).div_ceil(PAGE) - first,
            offset,
            len,
        }
    }
}

/// Whether `io` can issue a request that is not a whole number of pages
/// (its size, a size of its split, or its range's step or top).
fn writes_part_of_a_page(io: &cint_scenario::IoJob) -> bool {
    let shape = &io.shape;
    io.bs % PAGE != 0
        || shape
            .bssplit
            .iter()
            .chain(&shape.bssplit_write)
            .any(|s| s.bytes % PAGE != 0)
        || shape
            .bsrange
            .into_iter()
            .chain(shape.bsrange_write)
            .any(|(lo, hi)| lo % PAGE != 0 || hi % PAGE != 0)
}

/// Where a buffered request lands: its pages, its first byte and its
/// length within the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placement {
    pub first: u64,
    pub pages: u64,
    pub offset: u64,
    pub len: u64,
}

mod calls;
#[cfg(test)]
mod tests;

pub(crate) use calls::{add_flushers, flusher_queues, give_fsync_slots, plan, sync_call_hint};
