//! Leveled compaction (docs/APPS.md): one thread, which runs whichever
//! compaction has the highest score, as RocksDB 6.4's level picker does
//! (`VersionStorageInfo::ComputeCompactionScore` in db/version_set.cc):
//! L0's is its file count over `l0_compaction_trigger`, a lower level's
//! its bytes over its target (`max_bytes_for_level_base` 256 MiB for L1,
//! ten times more per level below: `max_bytes_for_level_multiplier`),
//! and a score of at least 1 is due. The last of the seven levels
//! (`num_levels`) only receives.
//!
//! A compaction reads its input with 2 MiB read-ahead and writes the
//! output in 1 MiB chunks (`O_DIRECT`), then syncs it. Keys decide what
//! it costs: a sequential fill's files hold disjoint key ranges and go
//! down as trivial moves (metadata only, no I/O, no thread); a
//! random-key writer's L0 files each span the key range and are merged
//! with the whole of L1, and a lower level's compaction takes one table
//! file (`target_file_size_base`, 64 MiB) and the bytes of the level
//! below that its key range overlaps: their share of that level, the
//! file's share of its own.
//!
//! L0 at `level0_stop_writes_trigger` (36) files stops the writer until a
//! compaction takes them (db/column_family.cc,
//! `GetWriteStallConditionAndCause`; not with automatic compaction off);
//! from 20 files its puts are delayed ([`super::stall`]), with the
//! compaction debt estimated here.
//!
//! The merge costs the compaction thread CPU between a read and the
//! writes it fills ([`merge_cpu`]): per input pair and per input byte,
//! measured with RocksDB's own db_bench (docs/APPS.md).
//!
//! A get's reads follow the levels ([`extra_reads`]): the L0 files that
//! overlap its key, then a block of each level above the key's own whose
//! run of random keys covers it.

use cint_policy::hints::IoCall;
use cint_policy::{Hint, Nanos};
use cint_scenario::app::{Benchmark, RocksDb};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::stall::{self, Condition};
use super::{apps_of, direct_call_hint, Db, Step};
use crate::host::pagecache::JOURNAL_LOG_ALLOCATION;
use crate::world::{Wait, World};

/// Compaction read-ahead (`compaction_readahead_size` of the reference
/// runs, docs/APPS.md).
const READ_AHEAD: u64 = 2 << 20;
/// Compaction writes: the 1 MiB writable-file buffer.
const WRITE_CHUNK: u64 = 1 << 20;
/// L1's target, RocksDB 6.4's `max_bytes_for_level_base` default
/// (include/rocksdb/options.h: 256 MiB).
const L1_TARGET: u64 = 256 << 20;
/// Each level's target over the one above's
/// (`max_bytes_for_level_multiplier`, 10).
const LEVEL_MULTIPLIER: u64 = 10;
/// Levels below L0: RocksDB's `num_levels` is 7.
pub(super) const LEVELS_BELOW_L0: usize = 6;
/// A table file below L0 (`target_file_size_base`, 64 MiB in the
/// reference runs).
const TABLE_FILE: u64 = 64 << 20;
/// `bytes` at `per_mib` nanoseconds per MiB, unrounded past a u64.
fn at_per_mib(bytes: u64, per_mib: Nanos) -> u128 {
    (u128::from(bytes) * u128::from(per_mib)) >> 20
}

/// Nanoseconds that may exceed a u64: the most there is.
fn saturated(ns: u128) -> Nanos {
    Nanos::try_from(ns).unwrap_or(Nanos::MAX)
}

/// The merge's CPU for `bytes` of input: `compaction_key_cpu` per
/// key-value pair they hold and `compaction_mib_cpu` per MiB.
pub(super) fn merge_cpu(spec: &RocksDb, bytes: u64) -> Nanos {
    let pairs = u128::from(bytes) / u128::from(spec.key_size + spec.value_size);
    saturated(
        pairs * u128::from(spec.compaction_key_cpu) + at_per_mib(bytes, spec.compaction_mib_cpu),
    )
}

/// A flush's CPU for `bytes` of the table file it writes:
/// `flush_mib_cpu` per MiB.
pub(super) fn flush_cpu(spec: &RocksDb, bytes: u64) -> Nanos {
    saturated(at_per_mib(bytes, spec.flush_mib_cpu))
}

/// A compaction in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compacting {
    /// These L0 files into L1.
    L0 { files: u32 },
    /// `file` bytes of level `from` (1 = L1) into the level below.
    Level { from: usize, file: u64 },
}

/// Level `n`'s target (1 = L1).
fn target(n: usize) -> u64 {
    L1_TARGET.saturating_mul(LEVEL_MULTIPLIER.saturating_pow(n as u32 - 1))
}

/// Whether the store runs a compaction thread: it writes, compacts
/// automatically, and its files overlap (a sequential fill's trivial
/// moves need none).
pub(super) fn has_thread(spec: &RocksDb) -> bool {
    super::writes(spec) && spec.auto_compaction && spec.random_fill
}

/// The levels at the start: a loaded database's (the reads' and the
/// dump's) fills each level from L1 down to one table file below its
/// target, as the load's last compaction out of it left it (a level
/// reaching its target sends one file down), the rest in the level
/// after; a load (fillbatch) starts from an empty database. No level is
/// then due: a run starts without a compaction that its load would have
/// finished.
pub(super) fn initial_levels(spec: &RocksDb) -> [u64; LEVELS_BELOW_L0] {
    let mut levels = [0; LEVELS_BELOW_L0];
    let mut left = match spec.benchmark {
        Benchmark::Fillbatch => 0,
        _ => spec.db_size,
    };
    for (k, level) in levels.iter_mut().enumerate() {
        *level = if k + 1 == LEVELS_BELOW_L0 {
            left
        } else {
            left.min(target(k + 1) - TABLE_FILE)
        };
        left -= *level;
    }
    levels
}

/// Parts per million of the key space: how much of it a level's
/// random-key sorted run covers.
pub(super) const PPM: u32 = 1_000_000;

/// The chance, in parts per million, that a table file's Bloom filter of
/// `bits` per key lets a key it does not hold through (a wasted block
/// read); `PPM` (every probe reads) without a filter. RocksDB's own
/// estimate for its cache-local filters (`BloomMath::CacheLocalFpRate`,
/// util/bloom_impl.h: 512-bit cache lines, the key count per line one
/// standard deviation either side of its mean), with the probe count
/// RocksDB 6.x's full filter chooses (`ChooseNumProbes`: bits x 0.69
/// rounded down, 1 to 30).
pub(super) fn bloom_fp_ppm(bits: u32) -> u32 {
    if bits == 0 {
        return PPM;
    }
    let bits = f64::from(bits);
    let probes = ((bits * 0.69) as i32).clamp(1, 30);
    let standard =
        |bits_per_key: f64| (1.0 - (-f64::from(probes) / bits_per_key).exp()).powi(probes);
    let line = 512.0;
    let keys = line / bits;
    let spread = keys.sqrt();
    let crowded = standard(line / (keys + spread));
    let uncrowded = if keys > spread {
        standard(line / (keys - spread))
    } else {
        0.0
    };
    let fp = (crowded + uncrowded) / 2.0;
    ((fp * f64::from(PPM)).round() as u32).min(PPM)
}

/// Block reads a get makes beyond its first: it probes the L0 files that
/// can hold its key newest first, each holding it with the chance of its
/// share of the database's keys, until one does; when none does, it goes
/// down the levels to the one whose loaded key range holds the key (drawn
/// by the loaded levels' sizes), probing each level above it whose run
/// of random keys covers the key. A probe of a file that does not hold
/// the key reads a block unless its Bloom filter rules the key out
/// ([`bloom_fp_ppm`]; without filters RocksDB reads the block to learn
/// the key is not there). Draws nothing when no L0 file overlaps and no
/// level holds random keys, so sequential fills draw nothing, and only
/// with filters does a probe draw its filter's answer.
pub(super) fn extra_reads(db: &Db, rng: &mut ChaCha8Rng) -> u32 {
    let filtered = db.bloom_fp_ppm < PPM;
    let mut wasted = 0;
    let mut miss = |rng: &mut ChaCha8Rng| {
        if !filtered || rng.gen_range(0..PPM) < db.bloom_fp_ppm {
            wasted += 1;
        }
    };
    let files = if db.spec.random_fill { db.l0_files } else { 0 };
    for _ in 0..files {
        if rng.gen_range(0..db.spec.db_size) < db.spec.memtable {
            return wasted;
        }
        miss(rng);
    }
    if db.covered.iter().all(|&c| c == 0) {
        return wasted;
    }
    let loaded: u64 = db.loaded.iter().sum();
    let mut at = if loaded == 0 {
        0
    } else {
        rng.gen_range(0..loaded)
    };
    let home = db
        .loaded
        .iter()
        .position(|&bytes| {
            let here = at < bytes;
            at = at.saturating_sub(bytes);
            here
        })
        .unwrap_or(LEVELS_BELOW_L0 - 1);
    for &c in &db.covered[..home] {
        if c > 0 && rng.gen_range(0..PPM) < c {
            miss(rng);
        }
    }
    wasted
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
        self.compactor.filter(|_| self.compacting.is_none())
    }

    /// Whether L0's files or the compaction debt stop writes until a
    /// compaction installs its output (as the last recalculation found).
    pub(super) fn writes_stopped(&self) -> bool {
        self.writes.stopped_by().is_some()
    }

    /// The compaction due next, if any: the highest score of at least 1,
    /// the upper level first on a tie. Scores are compared as fractions,
    /// `count / limit`, without rounding.
    pub(super) fn pick(&self) -> Option<Compacting> {
        let trigger = u64::from(self.spec.l0_compaction_trigger.max(1));
        let mut best: Option<(Compacting, u64, u64)> = None;
        let mut consider = |what: Compacting, count: u64, limit: u64| {
            let higher = match best {
                None => count >= limit,
                Some((_, c, l)) => {
                    u128::from(count) * u128::from(l) > u128::from(c) * u128::from(limit)
                }
            };
            if higher {
                best = Some((what, count, limit));
            }
        };
        consider(
            Compacting::L0 {
                files: self.l0_files,
            },
            u64::from(self.l0_files),
            trigger,
        );
        // The last level only receives.
        for n in 1..LEVELS_BELOW_L0 {
            let bytes = self.levels[n - 1];
            let file = bytes.min(TABLE_FILE);
            consider(Compacting::Level { from: n, file }, bytes, target(n));
        }
        best.map(|(what, _, _)| what)
    }

    /// Bytes compaction `what` reads (and writes).
    fn input_bytes(&self, what: Compacting) -> u64 {
        match what {
            // Every L0 file (each spans the key range) with all of L1.
            Compacting::L0 { files } => u64::from(files) * self.spec.memtable + self.levels[0],
            // The file with the part of the level below its range
            // overlaps: as much of it as the file is of its own level.
            Compacting::Level { from, file } => {
                let (own, below) = (self.levels[from - 1], self.levels[from]);
                let overlap = u128::from(below) * u128::from(file) / u128::from(own.max(1));
                file + overlap as u64
            }
        }
    }

    /// The running compaction installed its output: its inputs leave
    /// their level for the one below. Its start and output bytes.
    pub(super) fn compacted(&mut self) -> (Nanos, u64) {
        match self.compacting.take() {
            Some(Compacting::L0 { files }) => {
                self.l0_files -= files;
                self.levels[0] += u64::from(files) * self.spec.memtable;
                // The random-key files spanned the key space: so does L1's
                // merged run.
                self.covered[0] = PPM;
            }
            Some(Compacting::Level { from, file }) => {
                // The file's key range, its share of its level's, leaves
                // that level's run and joins the one below.
                let own = self.levels[from - 1].max(1);
                let share = (u128::from(file) * u128::from(PPM) / u128::from(own)) as u32;
                let share = share.min(PPM);
                let (up, down) = (self.covered[from - 1], self.covered[from]);
                self.covered[from] =
                    down + ((u64::from(PPM - down) * u64::from(share)) / u64::from(PPM)) as u32;
                self.covered[from - 1] =
                    ((u64::from(up) * u64::from(PPM - share)) / u64::from(PPM)) as u32;
                self.levels[from - 1] -= file;
                self.levels[from] += file;
            }
            None => {}
        }
        self.recalculate_stalls();
        (self.compaction_start, self.compaction_bytes)
    }

    /// The write controller's conditions after a memtable switch, or
    /// after a flush or a compaction installed its output
    /// (`RecalculateWriteStallConditions`).
    pub(super) fn recalculate_stalls(&mut self) {
        let auto_compaction = self.spec.auto_compaction;
        let inputs = stall::StallInputs {
            unflushed: self.immutable,
            max_memtables: stall::max_memtables(self.spec.max_write_buffer_number),
            auto_compaction,
            l0: self.l0_files,
            triggers: (
                stall::l0_stop_files(self.spec.l0_compaction_trigger),
                stall::l0_slowdown_files(self.spec.l0_compaction_trigger),
            ),
            needed: if auto_compaction {
                self.compaction_needed_bytes()
            } else {
                0
            },
        };
        let (condition, near_stop) = Condition::of(inputs);
        self.writes
            .recalculate(condition, near_stop, inputs.needed, auto_compaction);
    }

    /// The compaction debt, as `EstimateCompactionBytesNeeded`
    /// (db/version_set.cc) estimates it: L0 once due, with L1; then down
    /// the levels, what each holds past its target (with what the level
    /// above sends it), times one plus the level below's size over its
    /// own (the merge's fan-out).
    pub(super) fn compaction_needed_bytes(&self) -> u64 {
        let l0 = u64::from(self.l0_files) * self.spec.memtable;
        let l0_due = self.l0_files >= self.spec.l0_compaction_trigger || l0 >= L1_TARGET;
        let (mut needed, mut to_next) = if l0_due { (l0, l0) } else { (0, 0) };
        // The last level is no compaction's input.
        for n in 1..LEVELS_BELOW_L0 {
            let mut size = self.levels[n - 1];
            if n == 1 && l0_due {
                needed += size;
            }
            size += std::mem::take(&mut to_next);
            if size > target(n) {
                to_next = size - target(n);
                let below = self.levels[n];
                if below > 0 {
                    needed += (to_next as f64 * (below as f64 / size as f64 + 1.0)) as u64;
                }
            }
        }
        needed
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
                let next = db.compacting.is_none().then(|| db.pick()).flatten();
                let Some(what) = next else {
                    apps.threads[i].step = Step::CompactIdle;
                    self.block(t, Wait::AppIo);
                    return;
                };
                db.compacting = Some(what);
                db.compaction_start = now;
                let input = db.input_bytes(what);
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
                    merge: 0,
                };
                (
                    true,
                    align(w),
                    db.class_hint(db.spec.compaction_hint, direct_call_hint(IoCall::Pwrite)),
                    next,
                )
            } else if read_left > 0 {
                let r = read_left.min(READ_AHEAD);
                let next = Step::CompactIoDone {
                    read_left: read_left - r,
                    write_left: write_left + r,
                    merge: r,
                };
                (
                    false,
                    align(r),
                    db.class_hint(db.spec.compaction_hint, direct_call_hint(IoCall::Pread)),
                    next,
                )
            } else {
                // fdatasync of the output: its journal commit, the log
                // of its blocks' allocation first.
                let hint = db.class_hint(db.spec.compaction_hint, Hint::Urgent);
                (true, JOURNAL_LOG_ALLOCATION, hint, Step::CompactLogged)
            };
        apps.threads[i].step = next;
        self.app_request(t, write, bytes, hint);
        self.start_call(t, self.costs.syscall);
    }

    /// A compaction read or write completed: the merge consumes what a
    /// read brought (`merge` bytes) before the output buffer has more to
    /// write.
    pub(super) fn compaction_merge(
        &mut self,
        t: usize,
        i: usize,
        a: usize,
        read_left: u64,
        write_left: u64,
        merge: u64,
    ) {
        self.app_reap(t);
        let cpu = merge_cpu(&apps_of(self).dbs[a].spec, merge);
        let next = Step::CompactIo {
            read_left,
            write_left,
        };
        self.rocksdb_cpu_then(t, i, a, cpu, next);
    }

    /// The journal's log of the output's `fdatasync` is on the device: the
    /// commit block follows, in the same call.
    pub(super) fn compaction_logged(&mut self, t: usize, i: usize, a: usize) {
        let db = &apps_of(self).dbs[a];
        let hint = db.class_hint(db.spec.compaction_hint, Hint::Urgent);
        self.write_commit_block(t, i, hint, Step::CompactSynced);
    }

    /// The compaction's output is synced: it counts as one operation, and
    /// L0 shrank, so a writer stopped at its file limit may go on.
    pub(super) fn compaction_done(&mut self, t: usize, i: usize, a: usize) {
        self.app_reap(t);
        let db = &mut apps_of(self).dbs[a];
        let (start, bytes) = db.compacted();
        let writer = db.writer;
        self.record_op(i, start, bytes);
        if let Some(w) = writer {
            self.wake_app_thread(w, Step::Stalled);
        }
        self.rocksdb_go_on(t, i, a, Step::CompactIdle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cint_scenario::app::ClassHint;

    const MIB: u64 = 1 << 20;

    fn spec(benchmark: Benchmark, db_size: u64) -> RocksDb {
        RocksDb {
            benchmark,
            threads: 1,
            cpus: vec![0],
            writer_cpu: 0,
            flush_cpu: 0,
            key_size: 16,
            value_size: 1000,
            block_size: 4096,
            bloom_bits: 0,
            alignment: 4096,
            db_size,
            memtable: 64 * MIB,
            max_write_buffer_number: 2,
            wal_chunk: MIB,
            batch_keys: 1000,
            get_cpu: 12_000,
            put_cpu: cint_scenario::app::PUT_CPU,
            batch_key_cpu: cint_scenario::app::BATCH_KEY_CPU,
            dump_cpu: cint_scenario::app::DUMP_CPU,
            compaction_key_cpu: cint_scenario::app::COMPACTION_KEY_CPU,
            compaction_mib_cpu: cint_scenario::app::COMPACTION_MIB_CPU,
            flush_mib_cpu: cint_scenario::app::FLUSH_MIB_CPU,
            get_hint: ClassHint::Default,
            flush_hint: ClassHint::Default,
            wal_hint: ClassHint::Default,
            dump_hint: ClassHint::Default,
            compaction_cpu: 0,
            l0_compaction_trigger: 4,
            auto_compaction: true,
            random_fill: true,
            compaction_hint: ClassHint::Default,
            sync: false,
        }
    }

    fn db(levels: [u64; LEVELS_BELOW_L0], l0_files: u32) -> Db {
        let mut db = Db::new(spec(Benchmark::Readwhilewriting, 20 << 30), false, 0);
        db.levels = levels;
        db.l0_files = l0_files;
        db
    }

    #[test]
    fn the_merge_costs_its_pairs_and_its_bytes() {
        let s = spec(Benchmark::Fillbatch, 0);
        // 2 MiB of 1 016-byte pairs (16 + 1 000): 2 064 pairs.
        let pairs = (2 * MIB) / 1016;
        assert_eq!(pairs, 2064);
        assert_eq!(merge_cpu(&s, 2 * MIB), pairs * 255 + 2 * 1_016_000);
        assert_eq!(merge_cpu(&s, 0), 0);
        let free = RocksDb {
            compaction_key_cpu: 0,
            compaction_mib_cpu: 0,
            ..s.clone()
        };
        assert_eq!(merge_cpu(&free, 2 * MIB), 0);
        // Past what a u64 holds, the most there is, not a wrapped sum.
        assert_eq!(merge_cpu(&s, u64::MAX), Nanos::MAX);
    }

    #[test]
    fn a_loaded_database_fills_each_level_to_its_target_from_l1_down() {
        let levels = initial_levels(&spec(Benchmark::Readrandom, 20 << 30));
        assert_eq!(
            levels,
            [192 * MIB, 2_496 * MIB, (20 << 30) - 2_688 * MIB, 0, 0, 0]
        );
        // Nothing is due at the start.
        let mut d = db(levels, 0);
        assert_eq!(d.pick(), None);
        d.l0_files = 4;
        assert_eq!(d.pick(), Some(Compacting::L0 { files: 4 }));
        assert_eq!(
            initial_levels(&spec(Benchmark::Fillbatch, 20 << 30)),
            [0; LEVELS_BELOW_L0]
        );
        // Beyond every target but the last level's, the rest goes last.
        let huge = initial_levels(&spec(Benchmark::Readrandom, 1 << 50));
        assert_eq!(huge.iter().sum::<u64>(), 1 << 50);
        assert_eq!(huge[4], target(5) - TABLE_FILE);
    }

    #[test]
    fn the_highest_score_goes_first_and_the_upper_level_on_a_tie() {
        let full = [256 * MIB, 2_560 * MIB, 0, 0, 0, 0];
        // Nothing reaches a score of 1.
        assert_eq!(db(full.map(|b| b.saturating_sub(1)), 3).pick(), None);
        // L1 at twice its target beats L0 at its trigger...
        let mut l1_double = full;
        l1_double[0] *= 2;
        assert_eq!(
            db(l1_double, 4).pick(),
            Some(Compacting::Level {
                from: 1,
                file: TABLE_FILE
            })
        );
        // ... and ties with eight L0 files, which go first.
        assert_eq!(db(l1_double, 8).pick(), Some(Compacting::L0 { files: 8 }));
        // A deeper level due on its own.
        let mut l3_over = full;
        l3_over[2] = target(3) + 1;
        assert_eq!(
            db(l3_over, 0).pick(),
            Some(Compacting::Level {
                from: 3,
                file: TABLE_FILE
            })
        );
        // The last level only receives, however large.
        let mut last = [0; LEVELS_BELOW_L0];
        last[LEVELS_BELOW_L0 - 1] = u64::MAX / 2;
        assert_eq!(db(last, 0).pick(), None);
    }

    #[test]
    fn a_level_compaction_takes_one_file_and_the_overlap_below_and_keeps_the_bytes() {
        let mut d = db([512 * MIB, 2_560 * MIB, 0, 0, 0, 0], 0);
        let what = d.pick().expect("L1 is over its target");
        // The file is an eighth of L1: it overlaps an eighth of L2.
        assert_eq!(d.input_bytes(what), 64 * MIB + 320 * MIB);
        let total: u64 = d.levels.iter().sum();
        d.compacting = Some(what);
        d.compacted();
        assert_eq!(d.levels[..2], [448 * MIB, 2_624 * MIB]);
        assert_eq!(d.levels.iter().sum::<u64>(), total);
        assert_eq!(d.compacting, None);
    }

    #[test]
    fn an_l0_compaction_merges_every_l0_file_with_all_of_l1_into_it() {
        let mut d = db([300 * MIB, 0, 0, 0, 0, 0], 5);
        let what = d.pick().expect("L0 is at its trigger");
        assert_eq!(what, Compacting::L0 { files: 5 });
        assert_eq!(d.input_bytes(what), 5 * 64 * MIB + 300 * MIB);
        d.compacting = Some(what);
        d.compacted();
        // L1 is not capped at its target: L1-to-L2 compactions take the
        // excess.
        assert_eq!((d.l0_files, d.levels[0]), (0, 620 * MIB));
        assert!(matches!(d.pick(), Some(Compacting::Level { from: 1, .. })));
    }

    #[test]
    fn the_compaction_debt_follows_l0_down_the_levels_with_their_fan_out() {
        let loaded = initial_levels(&spec(Benchmark::Readrandom, 20 << 30));
        assert_eq!(db(loaded, 3).compaction_needed_bytes(), 0, "nothing due");
        // L0 due, nothing below L1: L0 and L1 only.
        assert_eq!(
            db([100 * MIB, 0, 0, 0, 0, 0], 4).compaction_needed_bytes(),
            256 * MIB + 100 * MIB
        );
        // Four 64 MiB files onto the loaded levels: L0 and L1 (448 MiB),
        // then L1's 192 MiB past its target times 1 + 2 496 / 448, then
        // L2's 128 MiB past its own times 1 + 17 792 / 2 688: about
        // 2 684.9 MiB in all.
        let needed = db(loaded, 4).compaction_needed_bytes() as f64 / MIB as f64;
        assert!((needed - 2_684.9).abs() < 0.1, "{needed}");
    }

    #[test]
    fn writes_stop_at_36_l0_files_only_with_automatic_compaction() {
        let stopped = |d: &mut Db| {
            d.recalculate_stalls();
            d.writes_stopped()
        };
        assert!(!stopped(&mut db([0; LEVELS_BELOW_L0], 35)));
        let mut d = db([0; LEVELS_BELOW_L0], 36);
        assert!(stopped(&mut d));
        // Never short of the compaction trigger (SanitizeOptions).
        d.spec.l0_compaction_trigger = 40;
        assert!(!stopped(&mut d));
        d.l0_files = 40;
        assert!(stopped(&mut d) && d.pick() == Some(Compacting::L0 { files: 40 }));
        d.spec.auto_compaction = false;
        d.writes = stall::WriteController::default();
        assert!(!stopped(&mut d));
    }

    /// What a recalculation reads of a store with automatic compaction,
    /// two memtables and none full, `l0` files and a debt of `needed`.
    fn inputs(l0: u32, needed: u64) -> stall::StallInputs {
        stall::StallInputs {
            unflushed: 0,
            max_memtables: 2,
            auto_compaction: true,
            l0,
            triggers: (36, 20),
            needed,
        }
    }

    #[test]
    fn a_compaction_debt_past_the_limits_delays_then_stops_writes() {
        use stall::{Cause, Condition, HARD_PENDING_BYTES, SOFT_PENDING_BYTES};
        assert_eq!(
            Condition::of(inputs(0, SOFT_PENDING_BYTES - 1)),
            (Condition::Normal, false)
        );
        assert_eq!(
            Condition::of(inputs(0, SOFT_PENDING_BYTES)),
            (Condition::Delayed(Cause::PendingBytes), false)
        );
        // The last quarter of the way to the hard limit is near the stop.
        assert_eq!(
            Condition::of(inputs(0, 121 << 30)),
            (Condition::Delayed(Cause::PendingBytes), true)
        );
        assert_eq!(
            Condition::of(inputs(0, HARD_PENDING_BYTES)),
            (Condition::Stopped(Cause::PendingBytes), true)
        );
        // L0 goes first, as RocksDB checks it first.
        assert_eq!(
            Condition::of(inputs(20, SOFT_PENDING_BYTES)),
            (Condition::Delayed(Cause::L0Files), false)
        );
        // A store whose levels are far past their targets owes more than
        // the hard limit: its writer stops, for that reason.
        let mut d = db([200 << 30, 0, 0, 0, 0, 0], 0);
        d.levels[1] = 2_000 << 30;
        assert!(d.compaction_needed_bytes() >= HARD_PENDING_BYTES);
        d.recalculate_stalls();
        assert!(d.writes_stopped());
        assert_eq!(d.writes.stopped_by(), Some(Cause::PendingBytes));
    }

    #[test]
    fn memtables_waiting_for_a_flush_stop_writes_first_and_delay_them_past_three() {
        use stall::{Cause, Condition, HARD_PENDING_BYTES};
        let with = |unflushed, max_memtables, auto_compaction| stall::StallInputs {
            unflushed,
            max_memtables,
            auto_compaction,
            ..inputs(36, HARD_PENDING_BYTES)
        };
        // All of them full: a stop, before L0's and the debt's stops, and
        // with automatic compaction off too (RocksDB's order).
        for auto in [true, false] {
            assert_eq!(
                Condition::of(with(2, 2, auto)).0,
                Condition::Stopped(Cause::Memtables)
            );
            assert_eq!(
                Condition::of(with(5, 5, auto)).0,
                Condition::Stopped(Cause::Memtables)
            );
        }
        // One fewer delays only past three memtables, after the stops.
        assert_eq!(
            Condition::of(with(3, 4, false)),
            (Condition::Delayed(Cause::Memtables), false)
        );
        assert_eq!(Condition::of(with(2, 3, false)).0, Condition::Normal);
        assert_eq!(
            Condition::of(with(3, 4, true)).0,
            Condition::Stopped(Cause::L0Files)
        );
        // The memtables' delay goes before L0's slowdown.
        let l0_slow = stall::StallInputs {
            l0: 25,
            needed: 0,
            ..with(4, 5, true)
        };
        assert_eq!(
            Condition::of(l0_slow).0,
            Condition::Delayed(Cause::Memtables)
        );
        // Without automatic compaction, L0 and the debt count for nothing.
        assert_eq!(Condition::of(with(0, 2, false)).0, Condition::Normal);
        // RocksDB raises a single memtable to two.
        assert_eq!(stall::max_memtables(1), 2);
        assert_eq!(stall::max_memtables(6), 6);
    }

    #[test]
    fn compactions_spread_random_keys_down_the_levels_and_gets_read_each_covered_level() {
        use rand::SeedableRng;
        let loaded = initial_levels(&spec(Benchmark::Readwhilewriting, 20 << 30));
        let mut d = db(loaded, 4);
        d.spec.random_fill = true;
        // No level holds random keys yet: no draw, no extra read.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        d.l0_files = 0;
        assert_eq!(extra_reads(&d, &mut rng), 0);
        assert_eq!(rng.gen::<u64>(), ChaCha8Rng::seed_from_u64(7).gen::<u64>());
        // L0 into L1: L1's run spans the key space.
        d.compacting = Some(Compacting::L0 { files: 4 });
        d.l0_files = 4;
        d.compacted();
        assert_eq!(d.covered[0], PPM);
        // One 64 MiB file of L1 (448 MiB: 1/7 of it) into L2.
        d.compacting = Some(Compacting::Level {
            from: 1,
            file: TABLE_FILE,
        });
        d.compacted();
        assert_eq!(d.covered[0], PPM - PPM / 7, "{:?}", d.covered);
        assert_eq!(d.covered[1], PPM / 7, "{:?}", d.covered);
        // A get's key lives in the level its loaded range places it in
        // (192 MiB, 2 496 MiB, then the rest in L3, of 20 GiB); above it,
        // it reads a block of each level whose random run covers it.
        let total = loaded.iter().sum::<u64>() as f64;
        let below = |n: usize| loaded[n..].iter().sum::<u64>() as f64 / total;
        let expected = below(1) * f64::from(d.covered[0]) / f64::from(PPM)
            + below(2) * f64::from(d.covered[1]) / f64::from(PPM);
        let n = 200_000;
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mean = (0..n)
            .map(|_| f64::from(extra_reads(&d, &mut rng)))
            .sum::<f64>()
            / f64::from(n);
        assert!((mean - expected).abs() < 0.01, "{mean} against {expected}");
        assert!(mean > 0.9, "{mean}");
    }

    #[test]
    fn bloom_filters_rule_out_most_probes_at_rocksdbs_own_rate() {
        use rand::SeedableRng;
        // util/bloom_impl.h: 10 bits per key, 6 probes, 512-bit lines,
        // 0.9535% by this estimate.
        assert!(
            (bloom_fp_ppm(10) as i64 - 9_535).abs() <= 10,
            "{}",
            bloom_fp_ppm(10)
        );
        assert_eq!(bloom_fp_ppm(0), PPM);
        let rates: Vec<u32> = (1..=64).map(bloom_fp_ppm).collect();
        assert!(rates.windows(2).all(|w| w[1] <= w[0]), "{rates:?}");
        assert!(rates[0] < PPM && rates[63] < 10, "{rates:?}");
        // Twenty overlapping L0 files: without filters a get reads a block
        // of each until one holds its key; with 10 bits per key, about 1%
        // of those.
        let mut d = db(
            initial_levels(&spec(Benchmark::Readwhilewriting, 20 << 30)),
            20,
        );
        d.spec.random_fill = true;
        let mean = |d: &Db| {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let n = 100_000;
            (0..n)
                .map(|_| f64::from(extra_reads(d, &mut rng)))
                .sum::<f64>()
                / f64::from(n)
        };
        let hit = (64 << 20) as f64 / (20u64 << 30) as f64;
        let misses: f64 = (1..=20).map(|k| (1.0 - hit).powi(k)).sum();
        let unfiltered = mean(&d);
        assert!(
            (unfiltered - misses).abs() < 0.05,
            "{unfiltered} against {misses}"
        );
        d.bloom_fp_ppm = bloom_fp_ppm(10);
        let filtered = mean(&d);
        let expected = misses * f64::from(d.bloom_fp_ppm) / f64::from(PPM);
        assert!(
            (filtered - expected).abs() < 0.01,
            "{filtered} against {expected}"
        );
    }
}
