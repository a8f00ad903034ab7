//! Compaction of L0 into L1 (docs/APPS.md): one thread, started when L0
//! holds `l0_compaction_trigger` files, reads its input with 2 MiB
//! read-ahead and writes the output in 1 MiB chunks (`O_DIRECT`), then
//! syncs it. Keys decide what it costs: a sequential fill's files hold
//! disjoint key ranges and go down as trivial moves (metadata only, no
//! I/O), a random-key writer's files each span the key range and are
//! merged with the whole of L1.
//!
//! L1 holds at most its target (`max_bytes_for_level_base`); what a
//! compaction pushes past it is left to L1-to-L2 compactions, which the
//! model does not run. The merge's own CPU is not modelled either.

use cint_policy::hints::IoCall;
use cint_policy::{Hint, Nanos};
use cint_scenario::app::{Benchmark, RocksDb};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{apps_of, direct_call_hint, Db, Step, JOURNAL_COMMIT};
use crate::world::{Wait, World};

/// Compaction read-ahead (`compaction_readahead_size` of the reference
/// runs, docs/APPS.md).
const READ_AHEAD: u64 = 2 << 20;
/// Compaction writes: the 1 MiB writable-file buffer.
const WRITE_CHUNK: u64 = 1 << 20;
/// L1's target, RocksDB 6.4's `max_bytes_for_level_base` default
/// (include/rocksdb/options.h: 256 MiB).
const L1_TARGET: u64 = 256 << 20;

/// Whether the store runs a compaction thread: it writes, compacts
/// automatically, and its files overlap (a sequential fill's trivial
/// moves need none).
pub(super) fn has_thread(spec: &RocksDb) -> bool {
    super::writes(spec) && spec.auto_compaction && spec.random_fill
}

/// L1 at the start: a loaded database's (the reads' and the dump's) is
/// at its target; a load (fillbatch) starts from an empty database.
pub(super) fn initial_l1(spec: &RocksDb) -> u64 {
    match spec.benchmark {
        Benchmark::Fillbatch => 0,
        _ => spec.db_size.min(L1_TARGET),
    }
}

/// Block reads a get makes beyond its first: it probes the L0 files that
/// can hold its key newest first, each holding it with the chance of its
/// share of the database's keys, until one does; when none does, it
/// reads the level below too. Draws nothing when no L0 file overlaps.
pub(super) fn l0_probes(db: &Db, rng: &mut ChaCha8Rng) -> u32 {
    let files = if db.spec.random_fill { db.l0_files } else { 0 };
    for k in 0..files {
        if rng.gen_range(0..db.spec.db_size) < db.spec.memtable {
            return k;
        }
    }
    files
}

impl Db {
    /// A flush installed a table file in L0: a sequential fill's files go
    /// down as trivial moves once the trigger is reached; the compaction
    /// thread to wake, if a compaction is due.
    pub(super) fn flushed(&mut self) -> Option<usize> {
        self.l0_files += 1;
        let due = self.spec.auto_compaction && self.l0_files >= self.spec.l0_compaction_trigger;
        if !due {
            return None;
        }
        if !self.spec.random_fill {
            self.l0_files = 0;
            return None;
        }
        self.compactor.filter(|_| self.compacting == 0)
    }

    /// The running compaction installed its output: its inputs leave L0,
    /// L1 grows (up to its target). Its start and output bytes.
    pub(super) fn compacted(&mut self) -> (Nanos, u64) {
        self.l0_files -= self.compacting;
        self.l1_bytes =
            (self.l1_bytes + u64::from(self.compacting) * self.spec.memtable).min(L1_TARGET);
        self.compacting = 0;
        (self.compaction_start, self.compaction_bytes)
    }

    /// The compaction class's hint for `call` (`None`: the sync).
    fn compaction_hint(&self, call: Option<IoCall>) -> Hint {
        if self.app_cint {
            return Hint::Unmarked;
        }
        self.spec
            .compaction_hint
            .hint()
            .unwrap_or_else(|| call.map_or(Hint::Urgent, direct_call_hint))
    }
}

impl World<'_> {
    /// The compaction thread's next step: wait for the trigger, start a
    /// compaction, or issue its next read, write or sync.
    pub(super) fn compaction_io(&mut self, t: usize, i: usize, a: usize) {
        let now = self.now();
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        let (read_left, write_left) = match apps.threads[i].step {
            Step::CompactIo {
                read_left,
                write_left,
            } => (read_left, write_left),
            _ => {
                if db.compacting > 0 || db.l0_files < db.spec.l0_compaction_trigger {
                    apps.threads[i].step = Step::CompactIdle;
                    self.block(t, Wait::AppIo);
                    return;
                }
                // L0 into L1: every L0 file (each spans the key range)
                // with all of L1.
                db.compacting = db.l0_files;
                db.compaction_start = now;
                let input = u64::from(db.compacting) * db.spec.memtable + db.l1_bytes;
                db.compaction_bytes = input;
                (input, 0)
            }
        };
        let align = |b: u64| b.div_ceil(db.spec.alignment) * db.spec.alignment;
        let (write, bytes, hint, next) =
            if write_left >= WRITE_CHUNK || (read_left == 0 && write_left > 0) {
                let w = write_left.min(WRITE_CHUNK);
                let next = Step::CompactIoDone {
                    read_left,
                    write_left: write_left - w,
                };
                (
                    true,
                    align(w),
                    db.compaction_hint(Some(IoCall::Pwrite)),
                    next,
                )
            } else if read_left > 0 {
                let r = read_left.min(READ_AHEAD);
                let next = Step::CompactIoDone {
                    read_left: read_left - r,
                    write_left: write_left + r,
                };
                (
                    false,
                    align(r),
                    db.compaction_hint(Some(IoCall::Pread)),
                    next,
                )
            } else {
                // fdatasync of the output: its journal commit.
                let hint = db.compaction_hint(None);
                (true, JOURNAL_COMMIT, hint, Step::CompactSynced)
            };
        apps.threads[i].step = next;
        self.app_request(t, write, bytes, hint);
        self.start_call(t, self.costs.syscall);
    }
}
