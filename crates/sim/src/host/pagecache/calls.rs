//! What threads do through the page cache: a buffered call's copy, its
//! read-ahead request, its dirty throttle pause, `fsync`, and the
//! flusher thread's passes, as the world runs them; and the end-of-run
//! check that each cache's books balance. The cache itself is the parent
//! module.

use super::*;

/// The context of a sync call, for the kernel's hint rules: a blocking
/// call on a file opened without `O_DIRECT`.
const SYNC_CALL: cint_policy::hints::IoContext = cint_policy::hints::IoContext {
    blocking_fd: true,
    o_direct: false,
    rw_flags: cint_policy::hints::RwFlags::EMPTY,
    ms_sync: false,
    batch: cint_policy::hints::BatchPosition { index: 0, len: 1 },
};

/// The kernel's hint for the file's pages an `fsync` (`fdatasync` if
/// `datasync`) writes back: the call's (docs/ALGORITHMS.md section 5).
pub(crate) fn sync_call_hint(datasync: bool) -> Hint {
    let call = if datasync {
        cint_policy::hints::IoCall::Fdatasync
    } else {
        cint_policy::hints::IoCall::Fsync
    };
    cint_policy::hints::request_hint(call, &SYNC_CALL)
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

    /// Ends thread `t`'s `io_submit` with its last iocb, a write, where a
    /// sync falls due after it (`cint_scenario::passes::PassSyncs::sync_ends_batch`).
    fn end_iocbs_at_a_sync(&mut self, t: usize) {
        let shape = self.shape(t);
        let syncs = shape.syncs();
        let left = self.page_cache.as_deref().map_or(0, |b| b.aio[t].left);
        if syncs && left > 1 && self.sync_ends_batch(t) {
            if let Some(b) = self.page_cache.as_deref_mut() {
                b.aio[t].left = 1;
            }
        }
    }

    /// One buffered read or write of thread `t`, a call's or an iocb's,
    /// after `entry` of the call's own CPU.
    fn buffered_op(&mut self, t: usize, entry: Nanos) {
        let now = self.now();
        let th = &mut self.threads[t];
        th.prepared = th.prepared.saturating_sub(1);
        let (write, bytes) = self.draw_request(t);
        if write {
            self.end_iocbs_at_a_sync(t);
        }
        let drawn = self.offsets.last(t);
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
        let Placement {
            first,
            pages,
            offset,
            len,
        } = b.place(t, write, bytes, drawn);
        b.calls[t] = Call {
            start: now,
            bytes,
            write,
            first,
            pages,
            offset,
            len,
            copied: false,
            read_ahead: None,
            window: None,
            skip_first: false,
        };
        let cache = &mut b.instances[i].cache;
        let s = cache.set;
        let entry = entry + s.buffered_call;
        if write {
            if let Some(page) = cache.page_to_read_before_write(t as u32, offset, len, None) {
                self.read_before_write(t, page, entry);
                return;
            }
        }
        if write || cache.read_hit(t as u32, first, pages) {
            // A read hit copies here; a write's pages are dirtied after.
            b.calls[t].copied = !write;
            self.set_burst(t, entry + s.copy_cost(pages, bytes), Cont::PageCache);
            return;
        }
        // A miss: one read-ahead request from the thread's slot.
        let (size, advice) = (b.size_pages[t], b.advice[t]);
        let cache = &mut b.instances[i].cache;
        let (window, missing) = cache.read_ahead(t as u32, first, pages, size, advice);
        b.calls[t].skip_first = cache.rereads_last_page(t as u32, first);
        b.calls[t].window = Some(window);
        cache.note_read(t as u32, first, pages);
        self.start_call_read(t, missing * PAGE, entry);
    }

    /// A buffered write of thread `t` covers `page` only in part, and the
    /// page is not cached but holds data: the call reads it and waits,
    /// after `entry` of its CPU (the first such page) or at once.
    fn read_before_write(&mut self, t: usize, page: u64, entry: Nanos) {
        let Some(b) = self.page_cache.as_deref_mut() else {
            return;
        };
        let window = Extent {
            file: t as u32,
            first: page,
            pages: 1,
        };
        b.calls[t].window = Some(window);
        if let Some(cache) = b.cache_of_mut(t) {
            cache.note_write_read();
        }
        self.start_call_read(t, PAGE, entry);
    }

    /// Thread `t`'s call reads `bytes` from the device (unmarked) and
    /// waits for them, after `entry` of its CPU.
    fn start_call_read(&mut self, t: usize, bytes: u64, entry: Nanos) {
        if let Some(r) = self.stage_request(t, false, bytes, Hint::Unmarked) {
            if let Some(b) = self.page_cache.as_deref_mut() {
                b.calls[t].read_ahead = Some(r);
            }
            self.start_call(t, entry);
        }
    }

    /// Thread `t` was woken by its call's read: the pages join the cache
    /// and the slot is free.
    fn read_arrived(&mut self, t: usize, call: Call) {
        let ready = &mut self.threads[t].ready;
        let read = call
            .read_ahead
            .and_then(|ra| ready.iter().position(|&r| r == ra))
            .and_then(|at| ready.remove(at));
        let Some(r) = read else {
            return;
        };
        self.release_slot(t, r);
        let b = self.page_cache.as_deref_mut().expect("a buffered thread");
        b.calls[t].read_ahead = None;
        let cache = b.cache_of_mut(t).expect("a buffered thread's cache");
        if let Some(window) = call.window {
            cache.read_done(window);
        }
        if !call.write {
            cache.mark_accessed(t as u32, call.first, call.pages, call.skip_first);
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
        let syncing = self
            .page_cache
            .as_deref()
            .is_some_and(|b| b.fsyncs[t].active);
        if self.threads[t].job == crate::apps::APP_JOB && !syncing {
            self.app_submitted(t);
            return;
        }
        let Some(b) = self.page_cache.as_deref() else {
            return;
        };
        if syncing {
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
        let syncing = self
            .page_cache
            .as_deref()
            .is_some_and(|b| b.fsyncs[t].active);
        if self.threads[t].job == crate::apps::APP_JOB && !syncing {
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
    /// the file's changed times, unless a commit since the inode last
    /// changed holds them (its time moves once a jiffy), and `fdatasync`
    /// of pages written in place skips it.
    pub(crate) fn buffered_fsync(&mut self, t: usize, datasync: bool) {
        self.start_fsync(t, datasync, None, self.costs.syscall);
    }

    /// Thread `t`'s sync of its file begins after `entry` of its CPU: an
    /// `fsync` (`fdatasync` if `datasync`) call, or the one inside
    /// `within`, a write to a file opened `O_SYNC` (`O_DSYNC`).
    fn start_fsync(&mut self, t: usize, datasync: bool, within: Option<Call>, entry: Nanos) {
        let hint = sync_call_hint(datasync);
        self.begin_sync(t, (t as u32, hint), (datasync, false), within, entry);
    }

    /// Thread `t` appended to `file` in its page cache: the inode's new
    /// size is for the journal to commit ([`PageCache::appended`]).
    pub(crate) fn file_appended(&mut self, t: usize, file: u32) {
        if let Some(cache) = self
            .page_cache
            .as_deref_mut()
            .and_then(|b| b.cache_of_mut(t))
        {
            cache.appended(file);
        }
    }

    /// Application thread `t` calls `fdatasync` on `file`, the file's
    /// pages' requests at `hint`; its program goes on (`Cont::App`) when
    /// the call returns.
    pub(crate) fn app_fdatasync(&mut self, t: usize, file: u32, hint: Hint) {
        self.begin_sync(t, (file, hint), (true, true), None, self.costs.syscall);
    }

    /// Thread `t`'s sync of `file` begins (`datasync`: `fdatasync`; `app`:
    /// an application's call).
    fn begin_sync(
        &mut self,
        t: usize,
        (file, hint): (u32, Hint),
        (datasync, app): (bool, bool),
        within: Option<Call>,
        entry: Nanos,
    ) {
        let th = &mut self.threads[t];
        std::mem::swap(&mut th.free_slots, &mut th.fsync_slots);
        let Some(b) = self.page_cache.as_deref_mut() else {
            self.check
                .fail(format!("thread {t} calls fsync without a page cache"));
            return;
        };
        let f = &mut b.fsyncs[t];
        f.active = true;
        f.file = file;
        f.hint = hint;
        f.app = app;
        f.datasync = datasync;
        f.journal = true;
        f.within = within;
        self.fsync_step(t, entry);
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
        let mut log_written = false;
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
            if f.journal_log == Some(r) {
                f.journal_log = None;
                log_written = true;
            } else if f.journal_slot == Some(r) {
                f.journal_slot = None;
                // Its handler marked it committed and woke the calls
                // waiting for it; a completion no handler saw ends here.
                self.commit_ended(i, f.journal_tid);
            } else if self.instance(i).cache.written(r, now).is_none() {
                self.check
                    .fail(format!("fsync request {r} completed without pages"));
            }
        }
        // The journal's log and commit block take the journal commit's
        // hint (docs/ALGORITHMS.md section 5).
        let journal_hint =
            cint_policy::hints::request_hint(cint_policy::hints::IoCall::JournalCommit, &SYNC_CALL);
        let file = f.file;
        let (mut staged, cpu) = self.stage_writeback(
            (t, i),
            f.hint,
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
        if log_written {
            // jbd2 writes the commit block once the log is on the device.
            if let Some(r) = self.stage_request(t, true, JOURNAL_COMMIT_BLOCK, journal_hint) {
                f.mine.push(r);
                f.journal_slot = Some(r);
                staged += 1;
            }
        } else if staged == 0 && f.mine.is_empty() && f.journal {
            // The data is on the device: the journal commit follows, if
            // the inode changed in a transaction not yet committed.
            match self.instance(i).cache.fsync_commit(file, f.datasync) {
                Commit::Done => f.journal = false,
                Commit::Write(tid) => {
                    f.journal = false;
                    if let Some(r) = self.stage_request(t, true, JOURNAL_LOG_INODE, journal_hint) {
                        f.mine.push(r);
                        f.journal_log = Some(r);
                        f.journal_tid = tid;
                        staged = 1;
                    }
                }
                Commit::InFlight(tid) => {
                    // jbd2_log_wait_commit: the commit's end wakes it, and
                    // it looks again (`journal` still set).
                    self.instance(i).commit_waiters.push((t as u32, tid));
                    if let Some(b) = self.page_cache.as_deref_mut() {
                        b.fsyncs[t] = f;
                    }
                    self.block(t, Wait::PageCache);
                    return;
                }
            }
        }
        let waiting = !f.mine.is_empty();
        let done = staged == 0 && !waiting;
        let (datasync, within, app) = (f.datasync, f.within, f.app);
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
            let unwritten = cache.in_writeback(file) || cache.dirty_in(file);
            let uncommitted = !cache.inode_committed(file, datasync);
            if unwritten {
                self.check.fail(format!(
                    "fsync of thread {t} returned with its file not written"
                ));
            }
            if uncommitted {
                self.check.fail(format!(
                    "fsync of thread {t} returned before the journal committed its file's inode"
                ));
            }
            let th = &mut self.threads[t];
            std::mem::swap(&mut th.free_slots, &mut th.fsync_slots);
            let ret = self.costs.return_to_user;
            match (within, app) {
                (Some(call), _) => self.finish_call(t, call, entry),
                (None, true) => self.set_burst(t, entry + ret, Cont::App),
                (None, false) => self.set_burst(t, entry + ret, Cont::SyncReturn),
            }
        }
    }

    /// A write copied its pages (or woke from a throttle pause): dirty
    /// them once, then `balance_dirty_pages`.
    fn buffered_write_step(&mut self, t: usize, call: Call) {
        if call.read_ahead.is_some() {
            // Woken by a page's read: the next partial page, or the copy.
            self.read_arrived(t, call);
            let b = self.page_cache.as_deref_mut().expect("a buffered thread");
            let cache = b.cache_of(t).expect("a buffered thread's cache");
            let read = call.window.map(|w| w.first);
            if let Some(page) =
                cache.page_to_read_before_write(t as u32, call.offset, call.len, read)
            {
                self.read_before_write(t, page, 0);
                return;
            }
            let cost = cache.set.copy_cost(call.pages, call.bytes);
            self.set_burst(t, cost, Cont::PageCache);
            return;
        }
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
        self.read_arrived(t, call);
        let b = self.page_cache.as_deref_mut().expect("a buffered thread");
        b.calls[t].copied = true;
        let cost = b
            .cache_of(t)
            .map_or(0, |c| c.set.copy_cost(call.pages, call.bytes));
        self.set_burst(t, cost, Cont::PageCache);
    }

    /// The buffered call returns: its latency is the whole call, as a
    /// synchronous call's in fio, then the generator's reaping work.
    fn finish_buffered(&mut self, t: usize, call: Call, extra: Nanos) {
        // A file opened O_SYNC (O_DSYNC): `generic_write_sync` writes the
        // call's pages back and waits, as fsync (fdatasync) does, before
        // the call returns; the sync's requests and CPU follow the copy's.
        let sync = self.shape(t).sync_writes;
        if call.write && sync != cint_scenario::SyncWrites::None {
            let datasync = sync == cint_scenario::SyncWrites::Dsync;
            self.start_fsync(t, datasync, Some(call), extra);
            return;
        }
        self.finish_call(t, call, extra);
    }

    /// A buffered call of thread `t` (a read, or a write whose pages are
    /// in the cache, and written back if its file is synchronous)
    /// returns after `extra` of its CPU, or its iocb completes.
    fn finish_call(&mut self, t: usize, call: Call, extra: Nanos) {
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
                waited: 0,
                submitted: now,
                dispatched: now,
                posted_at: now,
                state: ReqState::Free,
                polled: false,
            };
            self.jobs[job].record(&done, now, true);
            self.measured_before_ramp_reset(t);
        } else if let Some(stats) = self.jobs.get_mut(job) {
            stats.record_in_ramp(call.write, call.bytes);
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
            waited: 0,
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
        self.wake_if_waiting(f, Wait::PageCacheTimer)
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

    /// Request `r` completed in a handler on core `c`: if a flusher's, the
    /// threads whose `fsync` waits for its cache's writeback are woken to
    /// look again; if an `fsync`'s journal commit, those waiting for the
    /// commit. Returns how many the handler wakes.
    pub(crate) fn wake_fsync_waiters(&mut self, r: u32, c: usize) -> u64 {
        let flusher = self.reqs[r as usize].thread as usize;
        if self.threads[flusher].job != KERNEL_JOB {
            return self.journal_commit_done(r, flusher, c);
        }
        let Some(b) = self.page_cache.as_deref_mut() else {
            return 0;
        };
        let Some(i) = b.flusher_of(flusher) else {
            return 0;
        };
        let waiters = std::mem::take(&mut b.instances[i].fsync_waiters);
        self.handler_wakes_page_cache_waiters(c, waiters)
    }

    /// A handler on core `c` wakes `waiters`, those of them still blocked
    /// in the page cache; returns how many.
    fn handler_wakes_page_cache_waiters(&mut self, c: usize, waiters: Vec<u32>) -> u64 {
        let mut woken = 0;
        for w in waiters {
            let th = &self.threads[w as usize];
            if th.run == RunState::Blocked
                && th.wait == Wait::PageCache
                && self.list_handler_wake(c, w)
            {
                woken += 1;
            }
        }
        woken
    }

    /// Request `r` of thread `t` completed in a handler on core `c`: if it
    /// is the journal commit of `t`'s `fsync`, its transaction and those
    /// before it are committed, and the handler wakes the calls that wait
    /// for them (jbd2 wakes `j_wait_done_commit` as the commit ends).
    /// Returns how many it wakes.
    fn journal_commit_done(&mut self, r: u32, t: usize, c: usize) -> u64 {
        let Some(b) = self.page_cache.as_deref_mut() else {
            return 0;
        };
        let f = &b.fsyncs[t];
        let Some(i) = b.instance_of(t).filter(|_| f.journal_slot == Some(r)) else {
            return 0;
        };
        let waiters = b.instances[i].commit_ended(f.journal_tid);
        self.handler_wakes_page_cache_waiters(c, waiters)
    }

    /// The journal commit of transaction `tid` in page cache `i` ended
    /// outside a handler: the calls still waiting for it are woken.
    fn commit_ended(&mut self, i: usize, tid: u64) {
        for w in self.instance(i).commit_ended(tid) {
            self.wake_if_waiting(w as usize, Wait::PageCache);
        }
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
/// (every few writes, or at its end), or writes to a file opened `O_SYNC`
/// or `O_DSYNC`, request slots for the call's writeback, as many as the
/// device has tags per queue (the tags bound what is in flight).
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
        let syncs = matches!(&job.work, Work::Io(io) if io.shape.syncs()
            || io.shape.end_fsync
            || io.shape.sync_writes != cint_scenario::SyncWrites::None);
        if !job_buffered(job) || !syncs {
            continue;
        }
        let queue = th.core as usize % queues_n.max(1);
        give_fsync_slots(th, tid, queue, sc.device.queue_depth, reqs);
    }
}

/// Gives thread `t` (`th`) the request slots of its syncs' writeback on
/// `queue`: as many as the device has tags per queue (`depth`), since the
/// tags, not the slots, bound what is in flight.
pub(crate) fn give_fsync_slots(
    th: &mut crate::world::Thread,
    t: usize,
    queue: usize,
    depth: u32,
    reqs: &mut Vec<Request>,
) {
    for _ in 0..depth.max(1) {
        th.fsync_slots.push(reqs.len() as u32);
        reqs.push(Request::free(t as u32, queue as u32, false));
    }
    th.fsync_slots.reverse();
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
                     written back, {} writeback requests issued (largest {} KiB) by {} \
                     background and {} periodic flusher runs that wrote, {} throttle pauses, \
                     {} read-ahead requests of {} pages; at the end {} dirty and {} under \
                     writeback{}{}",
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
                    match t.journal_commits {
                        0 => String::new(),
                        n => format!("; {n} journal commits by fsync"),
                    },
                    match t.write_reads {
                        0 => String::new(),
                        n => format!("; {n} pages read before writes that cover them in part"),
                    },
                )
            })
            .collect()
    }
}

/// The flusher's program state right after it is built: it runs once,
/// finds nothing to do and sleeps.
fn flusher_start() -> Activity {
    Activity::Burst {
        left: 0,
        then: Cont::PageCache,
    }
}
