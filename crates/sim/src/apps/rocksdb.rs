//! A RocksDB-like LSM store under `db_bench` (RocksDB 6.4.6 with the
//! reference runs' options, docs/APPS.md):
//!
//! * **get** (readers): the CPU of the memtable probe, index search and
//!   block decoding (`get_cpu`, user time), then one `O_DIRECT`
//!   `preadv2` of the data block, blocking: its bytes are the aligned
//!   span of a `block_size` block at a uniformly drawn offset within the
//!   alignment (a block crosses into the next device block unless it
//!   starts early enough). A sequentially loaded database has
//!   non-overlapping levels and a block cache of near-zero hit rate: one
//!   read per get.
//! * **put** (the writer): `put_cpu` (fillbatch: `batch_key_cpu` per key
//!   of a `batch_keys` batch), then the write-ahead log's buffered
//!   `write()`s of the batch's bytes in chunks of at most `wal_chunk`
//!   through the page cache (no `fsync`; with `sync`, `fdatasync` of the
//!   log: its pages, then the journal's commit of its new size), then the
//!   memtable insert. A
//!   full memtable is handed to the flush thread; with both memtables
//!   full (`max_write_buffer_number` 2) the writer stalls until a flush
//!   ends. A batch's keys each count as one put of the batch's time over
//!   its keys (`db_bench`'s micros per op).
//! * **flush** (one thread): the memtable written as a table file with
//!   `O_DIRECT` `pwrite`s growing from 64 KiB to 1 MiB, each waited for,
//!   then `fdatasync`, whose journal commit is a 16 KiB log write and
//!   then the 4 KiB commit block.
//! * **dump** (`rocksdb_dump`, one thread): per pair, `dump_cpu`, then
//!   the pair's bytes from the database file through the page cache: a
//!   miss issues one read-ahead request of the tool's window, which
//!   doubles from 8 KiB to 256 KiB (`ReadaheadRandomAccessFile`),
//!   unmarked like all read-ahead; then four buffered `write()`s of the
//!   pair to the output file (its two lengths, the key, the value), which
//!   the flusher writes back. Each pair is one dump operation.
//! * **compaction** (one thread, [`compaction`]): leveled, the level with
//!   the highest score first (`l0_compaction_trigger` L0 files, or a
//!   level past its target). A writer's files overlap when its keys are
//!   random (`fill = "random"`): a compaction reads its input (the L0
//!   files and all of L1, or one table file and the part of the level
//!   below it overlaps) with 2 MiB read-ahead and writes the output in
//!   1 MiB chunks, `O_DIRECT`, then `fdatasync`. A sequential fill's
//!   files do not overlap: they are trivial moves (metadata only, no I/O,
//!   no thread). With automatic compaction off L0 files accumulate; with
//!   it on, 20 of them delay the writer's puts to RocksDB's delayed write
//!   rate ([`stall`]) and 36 stop it until a compaction takes them.
//! * A get first probes the L0 files that can hold its key, newest first
//!   (no Bloom filters): one block read per file until one holds the key,
//!   then, if none did, the read of the level below. Sequential fills'
//!   files hold disjoint key ranges, so a get reads once.
//!
//! Hints: a class with no override gets the kernel's rule for its call
//! (docs/ALGORITHMS.md section 5: a blocking `O_DIRECT` read or write and
//! `fdatasync` are Urgent); the `app-cint` hint set makes the flush's
//! writes and its sync unmarked.

use cint_policy::hints::{self, BatchPosition, IoCall, IoContext, RwFlags};
use cint_policy::{Hint, Nanos};
use cint_scenario::app::{Benchmark, ClassHint, RocksDb};

use crate::host::pagecache::{JOURNAL_COMMIT_BLOCK, PAGE};
use crate::world::{Cont, Wait, World};

mod compaction;
mod dump;
mod flush;
mod get;
mod put;
mod stall;

/// Largest flush write (RocksDB's direct writes grow to the 1 MiB
/// writable-file buffer).
const FLUSH_MAX_WRITE: u64 = 1 << 20;
/// First flush write.
const FLUSH_FIRST_WRITE: u64 = 64 << 10;
/// A write-ahead log record's header (RocksDB's `kHeaderSize`, 7 bytes)
/// and a write batch entry's overhead (type, two varint lengths): about
/// 11 bytes per key beside the key and value.
const WAL_KEY_OVERHEAD: u64 = 11;
/// The dump tool's first and largest read-ahead windows.
const DUMP_FIRST_READ_AHEAD: u64 = 8 << 10;
const DUMP_MAX_READ_AHEAD: u64 = 256 << 10;
/// A pair's length fields in the dump's output (two 32-bit sizes).
const DUMP_LENGTH: u64 = 4;

/// What an application thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Reader,
    Writer,
    Flusher,
    Dumper,
    Compactor,
}

impl Role {
    /// The operation type the thread's work counts in.
    pub(crate) fn op_name(self) -> Option<&'static str> {
        match self {
            Role::Reader => Some("get"),
            Role::Writer => Some("put"),
            Role::Dumper => Some("dump"),
            Role::Compactor => Some("compaction"),
            Role::Flusher => None,
        }
    }

    /// Whether it submits direct requests (and needs a slot).
    pub(crate) fn does_direct_io(self) -> bool {
        matches!(
            self,
            Role::Reader | Role::Flusher | Role::Dumper | Role::Compactor
        )
    }
}

/// Where a thread's loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Start,
    /// A get's CPU is done: read the block.
    Read,
    /// Read the next of a get's blocks, `left` more after it.
    Probe {
        left: u32,
    },
    /// A block read completed, `left` more to read.
    ReadDone {
        left: u32,
    },
    /// Write the next log chunk of `left` bytes.
    Wal {
        left: u64,
    },
    /// A log chunk was copied into pages `first..first + pages`.
    WalCopied {
        left: u64,
        first: u64,
        pages: u64,
    },
    /// A throttled log write woke from its pause.
    WalPaused {
        left: u64,
    },
    /// The batch is in the log's pages: `fdatasync` the log
    /// (`db_bench --sync`).
    WalSync,
    /// The batch is in the log: insert it into the memtable.
    Insert,
    /// Waiting for a flush to free a memtable.
    Stalled,
    /// The flush thread waits for a full memtable.
    FlushIdle,
    /// Write the next `size` bytes of `left` of the table file, once
    /// they are `built` (the flush's CPU for them spent).
    FlushWrite {
        left: u64,
        size: u64,
        built: bool,
    },
    /// A table-file write completed.
    FlushWritten {
        left: u64,
        size: u64,
    },
    /// The journal's log of the table file's `fdatasync` is written.
    FlushLogged,
    /// The table file's `fdatasync` completed.
    SyncDone,
    /// A pair's CPU is done: read its bytes.
    DumpRead,
    /// The read-ahead of `pages` pages from `first` completed.
    DumpReadDone {
        first: u64,
        pages: u64,
        /// The pair's own pages from `first`, which the tool copies.
        pair_pages: u64,
        /// The pair starts in the page the previous read ended in, which
        /// Linux does not mark accessed again (`prev_pos`).
        skip_first: bool,
    },
    /// Write the pair's `k`-th piece of output.
    DumpWrite {
        k: u8,
    },
    /// The `k`-th piece was copied into pages `first..first + pages`.
    DumpWritten {
        k: u8,
        first: u64,
        pages: u64,
    },
    /// A put's CPU is done: RocksDB's write controller may delay it
    /// before its log write of `left` bytes.
    Throttle {
        left: u64,
    },
    /// A delayed put sleeps in 1 ms steps until `until` or the end of the
    /// delay, whichever comes first; it began at `since`.
    Delayed {
        left: u64,
        until: Nanos,
        since: Nanos,
    },
    /// The compaction thread waits for a compaction to be due.
    CompactIdle,
    /// A compaction has `read_left` input bytes to read and `write_left`
    /// read but not written.
    CompactIo {
        read_left: u64,
        write_left: u64,
    },
    /// A compaction read or write completed; a read brought `merge`
    /// input bytes for the merge (0 after a write).
    CompactIoDone {
        read_left: u64,
        write_left: u64,
        merge: u64,
    },
    /// The journal's log of the compaction's `fdatasync` is written.
    CompactLogged,
    /// The compaction's `fdatasync` completed.
    CompactSynced,
}

/// One store's shared state.
#[derive(Debug)]
pub(crate) struct Db {
    spec: RocksDb,
    /// Its program's index in the scenario's `[[app]]` list.
    program: usize,
    app_cint: bool,
    /// The write-ahead log's file in the page cache.
    wal_file: u32,
    wal_offset: u64,
    memtable_fill: u64,
    /// Full memtables waiting for (or in) a flush.
    immutable: u32,
    writer: Option<usize>,
    flusher: Option<usize>,
    /// The dump: its database file and its next byte, its output file
    /// and its next byte, its read-ahead window.
    data_file: u32,
    data_offset: u64,
    out_file: u32,
    out_offset: u64,
    read_ahead: u64,
    /// Table files in L0, and the bytes of each level below (L1 first).
    l0_files: u32,
    levels: [u64; compaction::LEVELS_BELOW_L0],
    /// The loaded database's bytes per level at the start (sequential:
    /// each level's key range its own), which place a get's key.
    loaded: [u64; compaction::LEVELS_BELOW_L0],
    /// Per level, the share of the key space its run of random keys
    /// covers, parts per million ([`compaction::PPM`]).
    covered: [u32; compaction::LEVELS_BELOW_L0],
    /// The chance that a table file's Bloom filter lets through a key
    /// the file does not hold, parts per million (all of them without
    /// filters).
    bloom_fp_ppm: u32,
    /// The running compaction, its start and output bytes.
    compacting: Option<compaction::Compacting>,
    compaction_start: Nanos,
    compaction_bytes: u64,
    compactor: Option<usize>,
    /// Over the whole run: how often the writer was stopped, by cause
    /// (L0's files, the compaction debt, the memtables), for how long in
    /// all, and since when if it is stopped now.
    stops: [u64; stall::CAUSES],
    stopped_ns: Nanos,
    stop_since: Option<Nanos>,
    /// The write controller, and over the whole run how many puts it
    /// delayed, by cause, and for how long in all.
    writes: stall::WriteController,
    delays: [u64; stall::CAUSES],
    delayed_ns: Nanos,
}

/// The first page and the page count of `bytes` at `offset` of a file.
fn page_span(offset: u64, bytes: u64) -> (u64, u64) {
    let first = offset / PAGE;
    (first, (offset + bytes).div_ceil(PAGE) - first)
}

/// Whether the benchmark writes (a log through the page cache, flushes).
pub(crate) fn writes(spec: &RocksDb) -> bool {
    spec.benchmark != Benchmark::Readrandom
}

/// Whether the benchmark goes through the page cache.
pub(crate) fn buffered(spec: &RocksDb) -> bool {
    writes(spec)
}

impl Db {
    pub(crate) fn new(spec: RocksDb, app_cint: bool, index: u32) -> Db {
        let levels = compaction::initial_levels(&spec);
        Db {
            program: index as usize,
            app_cint,
            // Apart from the fio jobs' files (numbered by thread).
            wal_file: u32::MAX - index,
            wal_offset: 0,
            memtable_fill: 0,
            immutable: 0,
            writer: None,
            flusher: None,
            data_file: u32::MAX - 1_000 - index,
            data_offset: 0,
            out_file: u32::MAX - 2_000 - index,
            out_offset: 0,
            read_ahead: DUMP_FIRST_READ_AHEAD,
            l0_files: 0,
            levels,
            loaded: levels,
            covered: [0; compaction::LEVELS_BELOW_L0],
            bloom_fp_ppm: compaction::bloom_fp_ppm(spec.bloom_bits),
            compacting: None,
            compaction_start: 0,
            compaction_bytes: 0,
            compactor: None,
            stops: [0; stall::CAUSES],
            stopped_ns: 0,
            stop_since: None,
            writes: stall::WriteController::default(),
            delays: [0; stall::CAUSES],
            delayed_ns: 0,
            spec,
        }
    }

    /// Its program's name.
    pub(crate) fn program_name<'s>(&self, programs: &'s [cint_scenario::app::App]) -> &'s str {
        programs.get(self.program).map_or("", |p| p.name.as_str())
    }

    /// What the run must say about the memtables, L0 or the compaction
    /// debt delaying or stopping the writer, if they did: a write rate
    /// that fell for that reason is the store's, not the device's or the
    /// strategy's.
    pub(crate) fn stall_note(&self, now: Nanos) -> Option<String> {
        let l0_delay = format!(
            "at {} L0 files (RocksDB's level0_slowdown_writes_trigger)",
            stall::l0_slowdown_files(self.spec.l0_compaction_trigger)
        );
        let l0_stop = format!(
            "at {} L0 files (RocksDB's level0_stop_writes_trigger), waiting for a compaction",
            stall::l0_stop_files(self.spec.l0_compaction_trigger)
        );
        let debt = |limit: u64, option: &str| {
            format!("past {} GiB of compaction debt ({option})", limit >> 30)
        };
        let memtables = stall::max_memtables(self.spec.max_write_buffer_number);
        let memtables_at = |n: u32| {
            format!(
                "at {n} memtables waiting for a flush (RocksDB's max_write_buffer_number {memtables})"
            )
        };
        let by_cause = |counts: [u64; stall::CAUSES], causes: [String; stall::CAUSES]| {
            counts
                .iter()
                .zip(causes)
                .filter(|(&n, _)| n > 0)
                .map(|(n, cause)| format!("{n} {cause}"))
                .collect::<Vec<_>>()
                .join(" and ")
        };
        let mut parts = Vec::new();
        if self.delays.iter().any(|&n| n > 0) {
            let causes = [
                l0_delay,
                debt(
                    stall::SOFT_PENDING_BYTES,
                    "soft_pending_compaction_bytes_limit",
                ),
                memtables_at(memtables - 1),
            ];
            parts.push(format!(
                "put(s) delayed: {}, {:.3} ms in all, the delayed write rate {:.3} MiB/s at \
                 the end",
                by_cause(self.delays, causes),
                self.delayed_ns as f64 / 1e6,
                self.writes.rate() as f64 / f64::from(1u32 << 20),
            ));
        }
        if self.stops.iter().any(|&n| n > 0) {
            let causes = [
                format!("time(s) {l0_stop}"),
                format!(
                    "time(s) {}, waiting for a compaction",
                    debt(
                        stall::HARD_PENDING_BYTES,
                        "hard_pending_compaction_bytes_limit"
                    )
                ),
                format!("time(s) {}", memtables_at(memtables)),
            ];
            let still = self.stop_since.map_or(0, |since| now - since);
            let now_part = match self.stop_since {
                Some(since) => format!(
                    ", and is stopped at the end, for {:.3} ms",
                    (now - since) as f64 / 1e6
                ),
                None => String::new(),
            };
            parts.push(format!(
                "its writer stopped: {}, {:.3} ms in all{now_part}",
                by_cause(self.stops, causes),
                (self.stopped_ns + still) as f64 / 1e6,
            ));
        }
        (!parts.is_empty()).then(|| format!("over the whole run, {}", parts.join("; ")))
    }

    /// The threads, each with its core.
    pub(crate) fn threads(&self) -> Vec<(Role, u32)> {
        let s = &self.spec;
        let mut out = Vec::new();
        if s.benchmark == Benchmark::Dump {
            out.push((Role::Dumper, s.cpus[0]));
            return out;
        }
        if s.benchmark != Benchmark::Fillbatch {
            for n in 0..s.threads as usize {
                out.push((Role::Reader, s.cpus[n % s.cpus.len()]));
            }
        }
        if writes(s) {
            out.push((Role::Writer, s.writer_cpu));
            out.push((Role::Flusher, s.flush_cpu));
            if compaction::has_thread(s) {
                out.push((Role::Compactor, s.compaction_cpu));
            }
        }
        out
    }

    /// Whether thread `role` of the store submits requests of its own
    /// (direct I/O, or the writer's log sync), and needs request slots
    /// and its core's queue.
    pub(crate) fn issues_requests(&self, role: Role) -> bool {
        role.does_direct_io() || (role == Role::Writer && self.spec.sync)
    }

    /// The hint of an I/O class with its override `class`, `default`
    /// without one; the `app-cint` hint set leaves the class unmarked.
    fn class_hint(&self, class: ClassHint, default: Hint) -> Hint {
        if self.app_cint {
            return Hint::Unmarked;
        }
        class.hint().unwrap_or(default)
    }

    /// Keys per put operation.
    fn keys_per_op(&self) -> u64 {
        match self.spec.benchmark {
            Benchmark::Fillbatch => u64::from(self.spec.batch_keys),
            _ => 1,
        }
    }
}

/// The kernel's hint for a blocking `O_DIRECT` call.
fn direct_call_hint(call: IoCall) -> Hint {
    hints::request_hint(
        call,
        &IoContext {
            blocking_fd: true,
            o_direct: true,
            rw_flags: RwFlags::EMPTY,
            ms_sync: false,
            batch: BatchPosition { index: 0, len: 1 },
        },
    )
}

impl World<'_> {
    /// Runs application thread `t` (app thread `i` of store `a`) on: one
    /// step of its role's loop, each in its own module ([`get`],
    /// [`dump`], [`put`], [`flush`], [`compaction`]).
    pub(crate) fn rocksdb_step(&mut self, t: usize, i: usize, a: usize) {
        let apps = apps_of(self);
        let th = &apps.threads[i];
        let (role, step) = (th.role, th.step);
        let db = &mut apps.dbs[a];
        match role {
            Role::Writer => db.writer = Some(t),
            Role::Flusher => db.flusher = Some(t),
            Role::Compactor => db.compactor = Some(t),
            Role::Reader | Role::Dumper => {}
        }
        match step {
            Step::Start => match role {
                Role::Reader => self.get_start(t, i, a),
                Role::Dumper => self.dump_start(t, i, a),
                Role::Writer => self.put_start(t, i, a),
                Role::Flusher => self.flush_next(t, i, a),
                Role::Compactor => self.compaction_io(t, i, a),
            },
            Step::Read => self.get_first_read(t, i, a),
            Step::Probe { left } => self.get_read(t, i, left),
            Step::ReadDone { left } => self.get_read_done(t, i, a, left),
            Step::DumpRead => self.dump_read(t, i, a),
            Step::DumpReadDone {
                first,
                pages,
                pair_pages,
                skip_first,
            } => self.dump_read_done(t, i, a, (first, pages), pair_pages, skip_first),
            Step::DumpWrite { k } => self.dump_write(t, i, a, k),
            Step::DumpWritten { k, first, pages } => self.dump_written(t, i, a, k, first, pages),
            Step::Throttle { left } => self.put_throttle(t, i, a, left),
            Step::Delayed { left, until, since } => self.put_delayed(t, i, a, left, until, since),
            Step::Wal { left } => self.wal_write(t, i, a, left),
            Step::WalCopied { left, first, pages } => self.wal_copied(t, i, a, left, first, pages),
            Step::WalPaused { left } => {
                let extra = self.balance_dirty_pages(t);
                self.wal_written(t, i, a, left, extra);
            }
            Step::WalSync => self.wal_sync(t, i, a),
            Step::Insert => self.memtable_insert(t, i, a),
            Step::Stalled => self.put_stalled(t, i, a),
            Step::FlushIdle => self.flush_next(t, i, a),
            Step::FlushWrite {
                left,
                size,
                built: false,
            } => self.flush_build(t, i, a, left, size),
            Step::FlushWrite {
                left,
                size,
                built: true,
            } => self.flush_write(t, i, a, left, size),
            Step::FlushWritten { left, size } => self.flush_written(t, i, a, left, size),
            Step::FlushLogged => self.flush_logged(t, i, a),
            Step::SyncDone => self.flush_synced(t, i, a),
            Step::CompactIdle | Step::CompactIo { .. } => self.compaction_io(t, i, a),
            Step::CompactIoDone {
                read_left,
                write_left,
                merge,
            } => self.compaction_merge(t, i, a, read_left, write_left, merge),
            Step::CompactLogged => self.compaction_logged(t, i, a),
            Step::CompactSynced => self.compaction_done(t, i, a),
        }
    }

    /// An operation begins now with the thread's user time `cpu`, then
    /// `next`.
    fn rocksdb_op_begin(&mut self, t: usize, i: usize, cpu: Nanos, next: Step) {
        let now = self.now();
        let th = &mut apps_of(self).threads[i];
        th.op_start = now;
        th.step = next;
        self.set_user_burst(t, cpu, Cont::App);
    }

    /// A buffered write's `extra` kernel time done, the writer pauses if
    /// the dirty pages are past the limit (`balance_dirty_pages`), to go
    /// on at `resume`; false if it need not.
    fn pause_past_dirty_limit(&mut self, t: usize, i: usize, extra: Nanos, resume: Step) -> bool {
        let Some(at) = self.throttle_until(t) else {
            return false;
        };
        apps_of(self).threads[i].step = resume;
        self.set_burst(t, self.costs.timer_setup + extra, Cont::PageCacheSleep(at));
        true
    }

    /// The journal's log of thread `t`'s `fdatasync` (a flush's or a
    /// compaction's) is on the device: in the same call it writes the
    /// commit block at `hint` (jbd2 waits for the log first), then goes
    /// on to `next`.
    fn write_commit_block(&mut self, t: usize, i: usize, hint: Hint, next: Step) {
        self.app_reap(t);
        apps_of(self).threads[i].step = next;
        self.app_request(t, true, JOURNAL_COMMIT_BLOCK, hint);
        self.start_call(t, 0);
    }

    /// Sets application thread `i` to `step` and runs it on at once.
    fn rocksdb_go_on(&mut self, t: usize, i: usize, a: usize, step: Step) {
        apps_of(self).threads[i].step = step;
        self.rocksdb_step(t, i, a);
    }

    /// The thread's user-time burst of `cpu` before `step`, or `step` at
    /// once without one.
    fn rocksdb_cpu_then(&mut self, t: usize, i: usize, a: usize, cpu: Nanos, step: Step) {
        apps_of(self).threads[i].step = step;
        match cpu {
            0 => self.rocksdb_step(t, i, a),
            cpu => self.set_user_burst(t, cpu, Cont::App),
        }
    }

    /// A buffered `write()` of `bytes` over `pages` pages: the system
    /// call, the file system's entry and the copy into the cache, then
    /// the thread's next step.
    fn buffered_write_burst(&mut self, t: usize, pages: u64, bytes: u64) {
        let call = self
            .cache_of(t)
            .map_or(0, |c| c.set.buffered_call + c.set.copy_cost(pages, bytes));
        self.set_burst(t, self.costs.syscall + call, Cont::App);
    }

    /// Wakes application thread `w` if it sleeps in `step` without a
    /// request (a stalled writer, an idle flush thread); the wake-up
    /// takes effect as the waker goes on.
    fn wake_app_thread(&mut self, w: usize, step: Step) {
        let first = apps_of(self).first;
        if apps_of(self).threads[w - first].step != step {
            return;
        }
        self.wake_if_waiting(w, Wait::AppIo);
    }
}

/// The applications of a world that has them.
fn apps_of<'w>(w: &'w mut World<'_>) -> &'w mut super::Apps {
    w.apps.as_deref_mut().expect("an application thread")
}
