//! A reader's get: its CPU, then one blocking `O_DIRECT` read of a data
//! block, and one more for each file or level it probes in vain.

use cint_policy::hints::IoCall;
use rand::Rng;

use super::{apps_of, compaction, direct_call_hint, Step};
use crate::world::World;

impl World<'_> {
    /// A get begins with its CPU: the memtable probe, the index search
    /// and the block's decoding.
    pub(super) fn get_start(&mut self, t: usize, i: usize, a: usize) {
        let cpu = apps_of(self).dbs[a].spec.get_cpu;
        self.rocksdb_op_begin(t, i, cpu, Step::Read);
    }

    /// The get's CPU is done: the reads of the files and levels it
    /// probes before the one that holds its key, then that one.
    pub(super) fn get_first_read(&mut self, t: usize, i: usize, a: usize) {
        let apps = apps_of(self);
        let probes = compaction::extra_reads(&apps.dbs[a], &mut apps.threads[i].rng);
        self.get_read(t, i, probes);
    }

    /// Reads one data block of a get (`block_size`, or the pair's bytes
    /// where they are more) at a drawn offset within the alignment,
    /// `left` more blocks after it.
    pub(super) fn get_read(&mut self, t: usize, i: usize, left: u32) {
        let apps = apps_of(self);
        let a = apps.threads[i].app;
        let spec = &apps.dbs[a].spec;
        // RocksDB cuts a data block once it holds `block_size` bytes
        // (table/flush_block_policy.cc, FlushBlockBySizePolicy), so a pair
        // larger than that is a block of its own size.
        let block = spec.block_size.max(spec.key_size + spec.value_size);
        let alignment = spec.alignment;
        let hint = spec
            .get_hint
            .hint()
            .unwrap_or_else(|| direct_call_hint(IoCall::Preadv2));
        let th = &mut apps.threads[i];
        let offset = th.rng.gen_range(0..alignment);
        let span = (offset + block).div_ceil(alignment) * alignment;
        th.step = Step::ReadDone { left };
        self.app_request(t, false, span, hint);
        self.start_call(t, self.costs.syscall);
    }

    /// A block read completed: the next, or the get is done and the next
    /// begins.
    pub(super) fn get_read_done(&mut self, t: usize, i: usize, a: usize, left: u32) {
        self.app_reap(t);
        if left > 0 {
            self.rocksdb_go_on(t, i, a, Step::Probe { left: left - 1 });
            return;
        }
        let apps = apps_of(self);
        let (start, value) = (apps.threads[i].op_start, apps.dbs[a].spec.value_size);
        self.record_op(i, start, value);
        self.rocksdb_go_on(t, i, a, Step::Start);
    }
}
