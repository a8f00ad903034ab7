//! The dump tool (`rocksdb_dump`): per pair, its CPU, the pair's bytes
//! from the database file through the page cache (a miss issues one
//! read-ahead request of the tool's doubling window), then four buffered
//! `write()`s of the pair to the output file.

use cint_policy::Hint;

use super::{apps_of, page_span, Step, DUMP_LENGTH, DUMP_MAX_READ_AHEAD};
use crate::host::pagecache::{Extent, PAGE};
use crate::world::{Cont, World};

impl World<'_> {
    /// A pair begins with the tool's CPU for it.
    pub(super) fn dump_start(&mut self, t: usize, i: usize, a: usize) {
        let cpu = apps_of(self).dbs[a].spec.dump_cpu;
        self.rocksdb_op_begin(t, i, cpu, Step::DumpRead);
    }

    /// The dump reads its next pair: from the cache, or through a
    /// read-ahead request of its window.
    pub(super) fn dump_read(&mut self, t: usize, i: usize, a: usize) {
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        let spec = &db.spec;
        let pair = spec.key_size + spec.value_size + 2 * DUMP_LENGTH;
        if db.data_offset + pair > spec.db_size {
            // The iterator reached the end: the tool starts over.
            db.data_offset = 0;
        }
        let (first, pages) = page_span(db.data_offset, pair);
        let file = db.data_file;
        // A hit copies the pair and marks its pages accessed
        // (generic_file_buffered_read's mark_page_accessed): the several
        // pairs a page holds make it active, as Linux's lists do.
        let cached = self
            .cache_of_mut(t)
            .is_some_and(|cache| cache.read_hit(file, first, pages));
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        if cached {
            db.data_offset += pair;
            self.rocksdb_go_on(t, i, a, Step::DumpWrite { k: 0 });
            return;
        }
        let window = db.read_ahead.max(pages * PAGE);
        db.read_ahead = (2 * db.read_ahead).min(DUMP_MAX_READ_AHEAD);
        let hint = db.class_hint(db.spec.dump_hint, Hint::Unmarked);
        let mut call = 0;
        let mut skip_first = false;
        if let Some(cache) = self.cache_of_mut(t) {
            skip_first = cache.rereads_last_page(file, first);
            cache.note_read(file, first, pages);
            call = cache.set.buffered_call;
            cache.totals.read_ahead += 1;
            cache.totals.read_ahead_pages += window / PAGE;
        }
        apps_of(self).threads[i].step = Step::DumpReadDone {
            first,
            pages: window / PAGE,
            pair_pages: pages,
            skip_first,
        };
        self.app_request(t, false, window, hint);
        self.start_call(t, self.costs.syscall + call);
    }

    /// The read-ahead of `pages` pages from `first` completed: they
    /// enter the cache, the pair's own are marked accessed, and the tool
    /// reads the pair again, now a hit.
    pub(super) fn dump_read_done(
        &mut self,
        t: usize,
        i: usize,
        a: usize,
        (first, pages): (u64, u64),
        pair_pages: u64,
        skip_first: bool,
    ) {
        self.app_reap(t);
        let file = apps_of(self).dbs[a].data_file;
        if let Some(cache) = self.cache_of_mut(t) {
            cache.read_done(Extent { file, first, pages });
            cache.mark_accessed(file, first, pair_pages, skip_first);
        }
        self.rocksdb_go_on(t, i, a, Step::DumpRead);
    }

    /// The dump's `k`-th `write()` of the pair: a length, the key, a
    /// length, the value.
    pub(super) fn dump_write(&mut self, t: usize, i: usize, a: usize, k: u8) {
        let apps = apps_of(self);
        let db = &mut apps.dbs[a];
        let bytes = match k {
            1 => db.spec.key_size,
            3 => db.spec.value_size,
            _ => DUMP_LENGTH,
        };
        let (first, pages) = page_span(db.out_offset, bytes);
        db.out_offset += bytes;
        apps.threads[i].step = Step::DumpWritten { k, first, pages };
        self.buffered_write_burst(t, pages, bytes);
    }

    /// The `k`-th piece is in pages `first..first + pages`: they are
    /// dirty, the writer may pause past the dirty limit, and after the
    /// fourth the pair is done.
    pub(super) fn dump_written(
        &mut self,
        t: usize,
        i: usize,
        a: usize,
        k: u8,
        first: u64,
        pages: u64,
    ) {
        let file = apps_of(self).dbs[a].out_file;
        let extra = self.dirty_pages(t, file, first, pages) + self.balance_dirty_pages(t);
        // Back from a pause it goes on with the piece.
        if self.pause_past_dirty_limit(t, i, extra, Step::DumpWritten { k, first, pages: 0 }) {
            return;
        }
        let next = if k < 3 {
            Step::DumpWrite { k: k + 1 }
        } else {
            let apps = apps_of(self);
            let (start, spec) = (apps.threads[i].op_start, &apps.dbs[a].spec);
            let bytes = spec.key_size + spec.value_size;
            self.record_op(i, start, bytes);
            Step::Start
        };
        apps_of(self).threads[i].step = next;
        self.set_burst(t, extra, Cont::App);
    }
}
