//! The page cache and its writeback, as Linux 5.0 runs them
//! (mm/page-writeback.c, fs/fs-writeback.c, mm/readahead.c), for threads
//! that do buffered I/O (a job without `direct` on `psync`, `pvsync2` or
//! `libaio`).
//!
//! * A buffered `write()` copies into the cache: CPU on the writer's core
//!   (`buffered_call` plus `page_copy` per page), no device request. The
//!   pages become dirty; a file's `dirtied_when` is set when it goes from
//!   clean to dirty (`__mark_inode_dirty`).
//! * After the copy the writer runs `balance_dirty_pages`: past the
//!   background threshold (`background_ratio` of `memory`) it kicks the
//!   flusher; with dirty plus writeback pages past the dirty limit
//!   (`dirty_ratio`) it sleeps `wb_max_pause` (the time to write an eighth
//!   of the dirty pages at the smoothed estimated bandwidth plus a jiffy,
//!   at most 200 ms) and checks again, inside the call. Between the free-run
//!   ceiling (halfway between the thresholds) and the limit Linux paces
//!   writers by a position ratio; the model lets them run free up to the
//!   limit and checks on every call, not every `nr_dirtied_pause` pages.
//! * The flusher is a kernel thread (the bdi's writeback kworker) on
//!   `flusher_cpu`. It sleeps until a writer kicks it or its periodic
//!   timer fires (`dirty_writeback_interval`, armed when the first file
//!   gets dirty and again after each run while dirty pages remain). Either
//!   wake-up runs as `wb_do_writeback`: the periodic pass
//!   (`wb_check_old_data_flush`: every file dirty for longer than
//!   `expire`) if `writeback_interval` has passed since the last, then
//!   background writeback while dirty pages exceed the background
//!   threshold (`wb_check_background_flush`). Files go oldest `dirtied_when` first,
//!   each from where its last writeback stopped (`writeback_index`,
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
//! * Clean pages stay cached until `memory` is full, then the oldest go
//!   first.

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

/// `MAX_PAUSE` (mm/page-writeback.c): HZ / 5 jiffies.
const MAX_PAUSE: Nanos = 200_000_000;

/// One jiffy of the reference kernel (`CONFIG_HZ=250`, docs/HOST-COSTS.md).
const JIFFY: Nanos = 4_000_000;

/// `INIT_BW` (mm/backing-dev.c): the writeback bandwidth estimate before
/// any measurement, 100 MB/s, in pages per second.
const INIT_BW: u64 = (100 << 20) / PAGE;

/// `BANDWIDTH_INTERVAL` (mm/page-writeback.c): the estimate is updated
/// at most this often ...
const BANDWIDTH_INTERVAL: Nanos = 200_000_000;

/// ... and averages over this period (`wb_update_write_bandwidth`:
/// `roundup_pow_of_two(3 * HZ)`, 1024 jiffies at `HZ = 250`).
const BANDWIDTH_PERIOD: Nanos = 1024 * JIFFY;

/// `__wb_update_bandwidth` skips an update after this long without one
/// (HZ) if writeback started anew since (`time_before(bw_time_stamp,
/// start_time)`): the device sat idle, and the pages written over the gap
/// say nothing of its speed.
const BANDWIDTH_QUIET: Nanos = SEC;

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
}

impl Settings {
    pub(crate) fn from_profile(p: &cint_scenario::page_cache::PageCacheProfile) -> Settings {
        let memory_pages = (p.memory.0 / PAGE).max(1);
        Settings {
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

/// One file's pages.
#[derive(Debug, Default)]
struct File {
    dirty: BTreeSet<u64>,
    writeback: BTreeSet<u64>,
    cached: BTreeSet<u64>,
    /// When the file went from clean to dirty (`inode->dirtied_when`).
    dirtied_when: Option<Nanos>,
    /// Where its next writeback starts (`mapping->writeback_index`).
    cursor: u64,
    /// The last read-ahead window: first page and length.
    ra: Option<(u64, u64)>,
    /// The last page a read touched, hit or miss (`ra->prev_pos`).
    prev_page: Option<u64>,
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
    /// Clean cached pages, oldest first, for eviction; entries of pages
    /// dirtied or evicted since are skipped when met.
    lru: VecDeque<(u32, u64)>,
    cached: u64,
    dirty: u64,
    writeback: u64,
    /// Writeback requests in flight by request slot.
    in_flight: BTreeMap<u32, Extent>,
    /// Pages left in the background pass's current chunk.
    chunk_left: u64,
    /// Estimated write bandwidth, pages per second
    /// (`wb->write_bandwidth`) ...
    bandwidth: u64,
    /// ... and its smoothed value (`wb->avg_write_bandwidth`), which the
    /// pause and the background chunk use.
    avg_bandwidth: u64,
    bw_stamp: Nanos,
    bw_written: u64,
    /// When pages last went under writeback with none before (the start
    /// of the writeback whose completions update the estimate).
    wb_started: Nanos,
    pub totals: Totals,
}

impl PageCache {
    pub(crate) fn new(set: Settings) -> PageCache {
        PageCache {
            set,
            files: BTreeMap::new(),
            lru: VecDeque::new(),
            cached: 0,
            dirty: 0,
            writeback: 0,
            in_flight: BTreeMap::new(),
            chunk_left: 0,
            bandwidth: INIT_BW,
            avg_bandwidth: INIT_BW,
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

    /// Dirty and writeback pages past the dirty limit: writers pause.
    pub(crate) fn over_limit(&self) -> bool {
        self.dirty + self.writeback > self.set.limit_pages
    }

    /// `wb_max_pause`: a writer over the limit sleeps for the time the
    /// estimated bandwidth needs for an eighth of the dirty pages (in
    /// whole jiffies, plus one), at most `MAX_PAUSE`.
    pub(crate) fn pause(&self) -> Nanos {
        // t = wb_dirty / (1 + bw / roundup_pow_of_two(1 + HZ / 8)) jiffies;
        // HZ = 250 gives a divisor of 32.
        let jiffies = (self.dirty + self.writeback) / (1 + self.avg_bandwidth / 32) + 1;
        (jiffies * JIFFY).min(MAX_PAUSE)
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
                if f.cached.remove(&p) {
                    self.cached -= 1;
                }
            }
        }
        if was_clean {
            f.dirtied_when = Some(now);
        }
        none_dirty && self.dirty > 0
    }

    /// Whether pages `first..first + pages` of `file` are all cached
    /// (clean, dirty or under writeback).
    pub(crate) fn cached(&self, file: u32, first: u64, pages: u64) -> bool {
        self.files.get(&file).is_some_and(|f| {
            (first..first + pages)
                .all(|p| f.cached.contains(&p) || f.dirty.contains(&p) || f.writeback.contains(&p))
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
        let held = |p: &u64| f.cached.contains(p) || f.dirty.contains(p) || f.writeback.contains(p);
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
        let mut added = 0;
        for p in e.first..e.first + e.pages {
            if !f.dirty.contains(&p) && !f.writeback.contains(&p) && f.cached.insert(p) {
                self.lru.push_back((e.file, p));
                added += 1;
            }
        }
        self.cached += added;
        self.evict();
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
    /// work left: the oldest dirty file that qualifies, from its cursor.
    /// A background pass looks at the threshold between chunks
    /// ([`PageCache::chunk_size`]: `wb_writeback` checks
    /// `wb_over_bg_thresh` before each `writeback_sb_inodes`, which gives
    /// each inode a chunk).
    pub(crate) fn next_writeback(&mut self, pass: Pass, now: Nanos) -> Option<Extent> {
        let expired_before = now.checked_sub(self.set.expire);
        let mut max = self.set.max_request_pages;
        if pass == Pass::Background {
            if self.chunk_left == 0 {
                if !self.over_background() {
                    return None;
                }
                self.chunk_left = self.chunk_size();
            }
            max = max.min(self.chunk_left);
        }
        // Files with pages to write, oldest dirtied first (`b_io`).
        let file = self
            .files
            .iter()
            .filter(|(_, f)| f.dirty.iter().any(|p| !f.writeback.contains(p)))
            .filter(|(_, f)| match pass {
                Pass::Background => true,
                Pass::Kupdate => match (f.dirtied_when, expired_before) {
                    (Some(at), Some(limit)) => at <= limit,
                    _ => false,
                },
            })
            .min_by_key(|(&id, f)| (f.dirtied_when, id));
        let Some((&file, _)) = file else {
            self.chunk_left = 0;
            return None;
        };
        let f = self.files.get(&file)?;
        // The first dirty page at or after the cursor not under
        // writeback, wrapping once (range_cyclic).
        let first = f
            .dirty
            .range(f.cursor..)
            .chain(f.dirty.range(..f.cursor))
            .copied()
            .find(|p| !f.writeback.contains(p))?;
        let e = self.start_writeback(file, first, max, now);
        if let Some(f) = self.files.get_mut(&file) {
            f.cursor = first + e.pages;
        }
        if pass == Pass::Background {
            self.chunk_left -= e.pages;
        }
        Some(e)
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
            self.wb_started = now;
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
        let mut cleaned = 0;
        for p in e.first..e.first + e.pages {
            if !f.writeback.remove(&p) {
                self.totals.malformed += 1;
                continue;
            }
            self.writeback -= 1;
            self.totals.written += 1;
            if !f.dirty.contains(&p) && f.cached.insert(p) {
                self.lru.push_back((e.file, p));
                cleaned += 1;
            }
        }
        self.cached += cleaned;
        self.bw_written += e.pages;
        self.update_bandwidth(now);
        self.evict();
        Some(e)
    }

    /// `__wb_update_bandwidth` and `wb_update_write_bandwidth`: at most
    /// every `BANDWIDTH_INTERVAL`, the pages written since the last update
    /// move the estimate, weighted by the time they took against
    /// `BANDWIDTH_PERIOD` (or replace it, if they took longer); the
    /// smoothed estimate follows it by an eighth of the gap, and only
    /// while the estimate keeps moving its way, so that one burst or
    /// stall does not swing the pause. After a quiet second (more than a
    /// second since the last update, and writeback started again since)
    /// the update is skipped: Linux only starts the clock again.
    fn update_bandwidth(&mut self, now: Nanos) {
        let elapsed = now.saturating_sub(self.bw_stamp);
        if elapsed < BANDWIDTH_INTERVAL {
            return;
        }
        if elapsed <= BANDWIDTH_QUIET || self.bw_stamp >= self.wb_started {
            let measured = u128::from(self.bw_written) * u128::from(SEC) / u128::from(elapsed);
            let old = self.bandwidth;
            let (bw, mut avg) = if elapsed > BANDWIDTH_PERIOD {
                (measured, measured)
            } else {
                let period = u128::from(BANDWIDTH_PERIOD);
                let w = u128::from(elapsed);
                let bw = (u128::from(old) * (period - w) + measured * w) / period;
                (bw, u128::from(self.avg_bandwidth))
            };
            let old = u128::from(old);
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            } else if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
            self.bandwidth = u64::try_from(bw).unwrap_or(u64::MAX).max(1);
            self.avg_bandwidth = u64::try_from(avg).unwrap_or(u64::MAX).max(1);
        }
        self.bw_stamp = now;
        self.bw_written = 0;
    }

    /// Drops the oldest clean pages while the cache holds more than its
    /// memory.
    fn evict(&mut self) {
        while self.cached + self.dirty + self.writeback > self.set.memory_pages {
            let Some((file, p)) = self.lru.pop_front() else {
                return;
            };
            if let Some(f) = self.files.get_mut(&file) {
                if f.cached.remove(&p) {
                    self.cached -= 1;
                }
            }
        }
    }

    /// Every page the cache accounts for is in exactly one state, and the
    /// counts match the sets: none lost, none written twice.
    pub(crate) fn consistent(&self) -> Result<(), String> {
        let (mut dirty, mut writeback, mut cached) = (0u64, 0u64, 0u64);
        for (id, f) in &self.files {
            if let Some(p) = f
                .cached
                .iter()
                .find(|p| f.dirty.contains(p) || f.writeback.contains(p))
            {
                return Err(format!("file {id}: page {p} cached clean and dirty"));
            }
            dirty += f.dirty.len() as u64;
            writeback += f.writeback.len() as u64;
            cached += f.cached.len() as u64;
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
    let held = |p: u64| f.cached.contains(&p) || f.dirty.contains(&p) || f.writeback.contains(&p);
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
        self.cache.chunk_left = 0;
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
        let settings = Settings::from_profile(&sc.host.page_cache);
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
        };
        let cache = &mut b.instances[i].cache;
        let s = cache.set;
        let entry = entry + s.buffered_call;
        if write || cache.cached(t as u32, first, pages) {
            // A read hit copies here; a write's pages are dirtied after.
            if !write {
                cache.note_read(t as u32, first, pages);
            }
            b.calls[t].copied = !write;
            self.set_burst(t, entry + pages * s.page_copy, Cont::PageCache);
            return;
        }
        // A miss: one read-ahead request from the thread's slot.
        let (size, advice) = (b.size_pages[t], b.advice[t]);
        let cache = &mut b.instances[i].cache;
        let e = cache.read_ahead(t as u32, first, pages, size, advice);
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
    /// dirty. Returns the CPU the writer spends on top (none: arming the
    /// flusher's timer is a few stores).
    pub(crate) fn dirty_pages(&mut self, t: usize, file: u32, first: u64, pages: u64) -> Nanos {
        let now = self.now();
        let Some(i) = self.cache_index(t) else {
            return 0;
        };
        self.settle_writeback(i);
        let cache = &mut self.instance(i).cache;
        if cache.write(file, first, pages, now) {
            let at = now + cache.set.writeback_interval;
            self.arm_flusher_timer(i, at);
        }
        0
    }

    /// `balance_dirty_pages` after thread `t`'s write: past its cache's
    /// background threshold the cache's flusher is kicked. Returns the
    /// writer's CPU for it.
    pub(crate) fn balance_dirty_pages(&mut self, t: usize) -> Nanos {
        let Some(i) = self.cache_index(t) else {
            return 0;
        };
        self.settle_writeback(i);
        let pc = self.instance(i);
        if pc.cache.over_background() && pc.pass.is_none() && self.kick_flusher(i) {
            self.costs.wakeup
        } else {
            0
        }
    }

    /// Past the dirty limit of thread `t`'s cache: the instant the
    /// writer's pause ends (and the pause is counted).
    pub(crate) fn throttle_until(&mut self, t: usize) -> Option<Nanos> {
        let now = self.now();
        let cache = self.cache_of_mut(t)?;
        if !cache.over_limit() {
            return None;
        }
        cache.totals.pauses += 1;
        Some(now + cache.pause())
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
        let pause = pc.pause();
        assert!((JIFFY..=MAX_PAUSE).contains(&pause), "{pause}");
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
}
