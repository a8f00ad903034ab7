//! The flush thread: a full memtable built and written as a table file
//! with `O_DIRECT` `pwrite`s growing from 64 KiB to 1 MiB, each waited
//! for, then `fdatasync`, whose journal commit is a 16 KiB log write and
//! then the 4 KiB commit block.

use cint_policy::hints::IoCall;
use cint_policy::Hint;

use super::{apps_of, compaction, direct_call_hint, Step, FLUSH_FIRST_WRITE, FLUSH_MAX_WRITE};
use crate::host::pagecache::JOURNAL_LOG_ALLOCATION;
use crate::world::{Wait, World};

impl World<'_> {
    /// The flush thread takes the next full memtable, or sleeps until
    /// the writer hands it one.
    pub(super) fn flush_next(&mut self, t: usize, i: usize, a: usize) {
        let apps = apps_of(self);
        let db = &apps.dbs[a];
        if db.immutable == 0 {
            apps.threads[i].step = Step::FlushIdle;
            self.block(t, Wait::AppIo);
            return;
        }
        let first = Step::FlushWrite {
            left: db.spec.memtable,
            size: FLUSH_FIRST_WRITE,
            built: false,
        };
        self.rocksdb_go_on(t, i, a, first);
    }

    /// The flush builds the next chunk's blocks from the memtable before
    /// it writes them.
    pub(super) fn flush_build(&mut self, t: usize, i: usize, a: usize, left: u64, size: u64) {
        let cpu = compaction::flush_cpu(&apps_of(self).dbs[a].spec, size.min(left));
        let built = Step::FlushWrite {
            left,
            size,
            built: true,
        };
        self.rocksdb_cpu_then(t, i, a, cpu, built);
    }

    /// Writes the next `size` bytes of `left` of the table file.
    pub(super) fn flush_write(&mut self, t: usize, i: usize, a: usize, left: u64, size: u64) {
        let apps = apps_of(self);
        let db = &apps.dbs[a];
        let alignment = db.spec.alignment;
        let w = size.min(left).div_ceil(alignment) * alignment;
        let hint = db.class_hint(db.spec.flush_hint, direct_call_hint(IoCall::Pwrite));
        apps.threads[i].step = Step::FlushWritten {
            left: left.saturating_sub(w),
            size: (2 * size).min(FLUSH_MAX_WRITE),
        };
        self.app_request(t, true, w, hint);
        self.start_call(t, self.costs.syscall);
    }

    /// A table-file write completed: the next chunk, or the file's
    /// `fdatasync`, whose journal commit is Urgent by the kernel's rule
    /// (the flush class's under `app-cint`).
    pub(super) fn flush_written(&mut self, t: usize, i: usize, a: usize, left: u64, size: u64) {
        self.app_reap(t);
        if left > 0 {
            let next = Step::FlushWrite {
                left,
                size,
                built: false,
            };
            self.rocksdb_go_on(t, i, a, next);
            return;
        }
        // fdatasync of the new table file: its blocks' allocation is
        // committed, the log first, then the commit block.
        let hint = self.flush_sync_hint(a);
        apps_of(self).threads[i].step = Step::FlushLogged;
        self.app_request(t, true, JOURNAL_LOG_ALLOCATION, hint);
        self.start_call(t, self.costs.syscall);
    }

    /// The journal's log of the table file's `fdatasync` is on the
    /// device: the commit block follows, in the same call.
    pub(super) fn flush_logged(&mut self, t: usize, i: usize, a: usize) {
        let hint = self.flush_sync_hint(a);
        self.write_commit_block(t, i, hint, Step::SyncDone);
    }

    /// The hint of store `a`'s flush `fdatasync`'s journal writes: the
    /// flush class's (`Urgent` by the kernel's rule for a blocking call).
    fn flush_sync_hint(&mut self, a: usize) -> Hint {
        let db = &apps_of(self).dbs[a];
        db.class_hint(db.spec.flush_hint, Hint::Urgent)
    }

    /// The table file is synced: the memtable is free, which may let a
    /// stopped writer go on, and the new L0 file may be due a compaction.
    pub(super) fn flush_synced(&mut self, t: usize, i: usize, a: usize) {
        self.app_reap(t);
        let db = &mut apps_of(self).dbs[a];
        db.immutable = db.immutable.saturating_sub(1);
        let writer = db.writer;
        let compactor = db.flushed();
        db.recalculate_stalls();
        if let Some(w) = writer {
            self.wake_app_thread(w, Step::Stalled);
        }
        if let Some(w) = compactor {
            self.wake_app_thread(w, Step::CompactIdle);
        }
        self.rocksdb_go_on(t, i, a, Step::FlushIdle);
    }
}
