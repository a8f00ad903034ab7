//! The writer's put: its CPU, RocksDB's write controller (a delay or a
//! stop), the write-ahead log's buffered `write()`s through the page
//! cache (with `sync`, then its `fdatasync`), then the memtable insert,
//! which hands a full memtable to the flush thread.

use cint_policy::Nanos;

use super::{apps_of, stall, Step, WAL_KEY_OVERHEAD};
use crate::host::pagecache::sync_call_hint;
use crate::world::{Cont, Wait, World};
use cint_scenario::app::Benchmark;

impl World<'_> {
    /// A put begins with its CPU (fillbatch: each key of the batch's).
    pub(super) fn put_start(&mut self, t: usize, i: usize, a: usize) {
        let db = &apps_of(self).dbs[a];
        let keys = db.keys_per_op();
        let spec = &db.spec;
        let cpu = match spec.benchmark {
            Benchmark::Fillbatch => keys * spec.batch_key_cpu,
            _ => spec.put_cpu,
        };
        let bytes = keys * (spec.key_size + spec.value_size + WAL_KEY_OVERHEAD);
        self.rocksdb_op_begin(t, i, cpu, Step::Throttle { left: bytes });
    }

    /// The put's CPU is done: the write controller may delay its log
    /// write of `left` bytes.
    pub(super) fn put_throttle(&mut self, t: usize, i: usize, a: usize, left: u64) {
        // DBImpl::PreprocessWrite: the delay is for the previous
        // write's bytes (`last_batch_group_size_`).
        let now = self.now();
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        let last = std::mem::replace(&mut db.writes.last_write, left);
        let delay = db.writes.delay_us(now / 1_000, last);
        if delay == 0 {
            self.wal_write(t, i, a, left);
            return;
        }
        if let Some(cause) = db.writes.delayed_by() {
            db.delays[cause as usize] += 1;
        }
        let delayed = Step::Delayed {
            left,
            until: now + delay * 1_000,
            since: now,
        };
        self.rocksdb_go_on(t, i, a, delayed);
    }

    /// A delayed put sleeps in 1 ms steps (DBImpl::DelayWrite) while the
    /// delay lasts, until `until`.
    pub(super) fn put_delayed(
        &mut self,
        t: usize,
        i: usize,
        a: usize,
        left: u64,
        until: Nanos,
        since: Nanos,
    ) {
        let now = self.now();
        let db = &mut apps_of(self).dbs[a];
        if !db.writes.delayed() || now >= until {
            db.delayed_ns += now - since;
            self.wal_write(t, i, a, left);
            return;
        }
        let c = self.costs;
        let call = c.syscall + c.timer_setup;
        // RocksDB sleeps with `usleep` (PosixEnv::SleepForMicroseconds):
        // the task's timer slack range comes on top.
        let at = now + call + stall::DELAY_INTERVAL + c.task_timer_slack + c.timer_slack;
        self.set_burst(t, call, Cont::AppSleep(at));
    }

    /// Copies the next log chunk into the page cache.
    pub(super) fn wal_write(&mut self, t: usize, i: usize, a: usize, left: u64) {
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        let chunk = left.min(db.spec.wal_chunk).max(1);
        let (first, pages) = super::page_span(db.wal_offset, chunk);
        db.wal_offset += chunk;
        apps.threads[i].step = Step::WalCopied {
            left: left - chunk,
            first,
            pages,
        };
        self.buffered_write_burst(t, pages, chunk);
    }

    /// A log chunk was copied into pages `first..first + pages`: they are
    /// dirty.
    pub(super) fn wal_copied(
        &mut self,
        t: usize,
        i: usize,
        a: usize,
        left: u64,
        first: u64,
        pages: u64,
    ) {
        let file = apps_of(self).dbs[a].wal_file;
        let extra = self.dirty_pages(t, file, first, pages) + self.balance_dirty_pages(t);
        // Every log write appends: the inode's size changes.
        self.file_appended(t, file);
        self.wal_written(t, i, a, left, extra);
    }

    /// A log chunk is dirty, `left` bytes of the batch to go: pause past
    /// the dirty limit, or go on (the next chunk, else the log's sync
    /// with `sync`, else the memtable insert).
    pub(super) fn wal_written(&mut self, t: usize, i: usize, a: usize, left: u64, extra: Nanos) {
        let next = if left > 0 {
            Step::Wal { left }
        } else if apps_of(self).dbs[a].spec.sync {
            Step::WalSync
        } else {
            Step::Insert
        };
        if self.pause_past_dirty_limit(t, i, extra, Step::WalPaused { left }) {
            return;
        }
        apps_of(self).threads[i].step = next;
        self.set_burst(t, extra, Cont::App);
    }

    /// The batch is in the log's pages: with `sync`, RocksDB's
    /// `fdatasync` of the log (`WritableFileWriter::Sync`, without
    /// `use_fsync`) writes them back and commits the log's new size,
    /// Urgent by the kernel's rule unless `wal_hint` says otherwise; the
    /// memtable insert follows its return.
    pub(super) fn wal_sync(&mut self, t: usize, i: usize, a: usize) {
        let db = &apps_of(self).dbs[a];
        let file = db.wal_file;
        let hint = db
            .spec
            .wal_hint
            .hint()
            .unwrap_or_else(|| sync_call_hint(true));
        apps_of(self).threads[i].step = Step::Insert;
        self.app_fdatasync(t, file, hint);
    }

    /// The batch goes into the memtable; a full one goes to the flush
    /// thread.
    pub(super) fn memtable_insert(&mut self, t: usize, i: usize, a: usize) {
        let now = self.now();
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        let keys = db.keys_per_op();
        db.memtable_fill += keys * (db.spec.key_size + db.spec.value_size);
        let mut kick = None;
        if db.memtable_fill >= db.spec.memtable {
            db.memtable_fill = 0;
            db.immutable += 1;
            kick = db.flusher;
            // SwitchMemtable installs a new version, which recalculates
            // the stall conditions: the memtables may stop or delay the
            // writer now.
            db.recalculate_stalls();
        }
        let stalled = db.writes_stopped();
        if let (Some(cause), None) = (db.writes.stopped_by(), db.stop_since) {
            db.stops[cause as usize] += 1;
            db.stop_since = Some(now);
        }
        if let Some(f) = kick {
            self.wake_app_thread(f, Step::FlushIdle);
        }
        if stalled {
            apps_of(self).threads[i].step = Step::Stalled;
            self.block(t, Wait::AppIo);
            return;
        }
        self.put_done(t, i, a);
    }

    /// A stopped writer was woken (a flush or a compaction ended): still
    /// stopped, it sleeps again; otherwise its put is done.
    pub(super) fn put_stalled(&mut self, t: usize, i: usize, a: usize) {
        let now = self.now();
        let db = &mut apps_of(self).dbs[a];
        if db.writes_stopped() {
            self.block(t, Wait::AppIo);
            return;
        }
        if let Some(since) = db.stop_since.take() {
            db.stopped_ns += now - since;
        }
        self.put_done(t, i, a);
    }

    /// The put operation (a batch's keys) is done: recorded, and the next
    /// begins.
    fn put_done(&mut self, t: usize, i: usize, a: usize) {
        let now = self.now();
        let apps = apps_of(self);
        let keys = apps.dbs[a].keys_per_op();
        let value = apps.dbs[a].spec.value_size;
        let start = apps.threads[i].op_start;
        // Each key counts as one put of the batch's time over its keys.
        let per_key = (now - start) / keys;
        for _ in 0..keys {
            self.record_op(i, now - per_key, value);
        }
        self.rocksdb_go_on(t, i, a, Step::Start);
    }
}
