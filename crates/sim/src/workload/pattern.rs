//! fio's request-shaping options on a thread's loop: each request's
//! direction and size, the rate caps' pacing (even or Poisson), Barrier
//! on the last request of a submission call, think time after every few
//! completions, `fsync`/`fdatasync` every few writes, the passes over the
//! job's file (`pass_size`), and the ends set by `number_ios` and
//! `io_size`. Jobs that shape nothing draw nothing extra
//! from their thread's stream, so their runs stay byte-identical.

use cint_policy::Nanos;
use cint_scenario::passes::{LoopTop, PassEnd, PassSyncs};
use cint_scenario::{Engine, IoShape, Rw, Work};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::world::{Cont, Wait, World};

/// Per-thread counters of the shaping options.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ThreadShape {
    /// Requests completed since the last think time.
    since_think: u64,
    /// Requests issued when the last think time began
    /// (`thinktime_blocks_type=issue` counts from there).
    issued_at_think: u64,
    /// When the last think time began (`thinktime_iotime`); none yet:
    /// the job's start.
    last_think: Option<Nanos>,
    /// When the think time due now was found due, before its reap, and
    /// the completions counted then: fio stamps both there
    /// (`last_thinktime`, `last_thinktime_blocks`), so completions the reap
    /// takes count towards the next think time.
    think_found: Option<(Nanos, u64)>,
    /// Requests issued, and completed, when the think time's triggers
    /// were last looked at: fio looks once per pass of its loop (backend.c
    /// `do_io`), after the pass's request and after the reap a full queue
    /// forces in the same pass, so the model looks again once either
    /// moved.
    think_checked: (u64, u64),
    /// Requests completed in all (handed to the thread).
    completed: u64,
    /// Requests issued in all (`number_ios`).
    issued: u64,
    /// Bytes issued in all (`io_size`).
    pub(crate) bytes: u64,
    /// Writes issued in all (fio's `io_issues[DDIR_WRITE]`).
    writes: u64,
    /// fio's `last_was_sync`, and the pass over its file the thread is
    /// in (`pass_size`).
    syncs: PassSyncs,
    /// When the `fsync` or `fdatasync` in progress was entered, and
    /// whether it is an `fdatasync`.
    sync_entered: Nanos,
    sync_is_datasync: bool,
    /// The job's final `fsync` (`end_fsync`) has begun.
    final_fsync: bool,
    /// Ahead of its rate, the thread reaps what it has in flight, then
    /// sleeps this long: what it was ahead by when it looked
    /// ([`super::fio_sleep`]).
    pub(super) rate_sleep: Option<Nanos>,
    /// fio's sleep in progress: what it must sleep in all, and when it
    /// last called `nanosleep`.
    pub(super) sleep_left: Nanos,
    pub(super) sleep_from: Nanos,
    /// The rate's schedule has restarted at the end of the job's ramp.
    pub(super) rate_restarted: bool,
    /// What `number_ios` and the syncs count from: fio resets its counts
    /// of completed and issued requests at the end of the job's ramp
    /// (libfio.c `reset_all_stats`), so both count again from there, the
    /// requests then in flight among them.
    issued_base: u64,
    writes_base: u64,
    /// The counts have been reset at the end of the ramp.
    ramp_reset: bool,
    /// Requests handed to the thread, and measured, after its job's
    /// window opened and before the reset (which waits for the top of its
    /// loop): fio resets at the first of them and counts the rest
    /// towards `number_ios`, so the reset counts them too.
    measured_before_reset: u64,
}

/// The shape of a cpu job: nothing shaped.
static NO_SHAPE: IoShape = IoShape {
    bssplit: Vec::new(),
    bssplit_write: Vec::new(),
    bsrange: None,
    bsrange_write: None,
    rate: None,
    rate_per_direction: None,
    rate_min: None,
    rate_poisson: false,
    barrier_last: false,
    thinktime: 0,
    thinktime_spin: 0,
    thinktime_blocks: 1,
    thinktime_issue: false,
    thinktime_iotime: 0,
    rate_ign_think: false,
    number_ios: None,
    io_size: None,
    pass_size: None,
    byte_limit: None,
    percentile_list: Vec::new(),
    fsync: 0,
    fdatasync: 0,
    sync_writes: cint_scenario::SyncWrites::None,
    end_fsync: false,
    flow: 0,
    flow_id: 0,
    flow_sleep: 0,
    exitall: None,
    steady: None,
    latency_target: None,
    max_latency: None,
    trace: None,
    random_map: cint_scenario::RandomMap::Map,
    random_distribution: cint_scenario::Distribution::Uniform,
};

/// Whether the request is a write: `rwmixread` decides for the mixes.
pub(crate) fn is_write(rw: Rw, rwmixread: u8, rng: &mut ChaCha8Rng) -> bool {
    match rw {
        Rw::Read | Rw::RandRead => false,
        Rw::Write | Rw::RandWrite => true,
        Rw::RandRw | Rw::ReadWrite => rng.gen_range(0..100u32) >= u32::from(rwmixread),
    }
}

/// A request's size: `bs`, or drawn from `bssplit` (its writes' list for
/// a write) or `bsrange` (`cint_scenario::shape::draw_block_size`).
pub(crate) fn block_size(shape: &IoShape, bs: u64, write: bool, rng: &mut ChaCha8Rng) -> u64 {
    cint_scenario::shape::draw_block_size(shape, bs, write, rng)
}

/// Places a request of `bytes` by `offsets`, a size that does not fit
/// drawn again from the thread's `rng`: the bytes issued. Out of line:
/// most jobs never come here.
#[inline(never)]
fn place(
    offsets: &mut cint_scenario::offsets::RandomOffsets,
    shape: &IoShape,
    bs: u64,
    write: bool,
    bytes: u64,
    rng: &mut ChaCha8Rng,
) -> u64 {
    offsets
        .place(write, bytes, || block_size(shape, bs, write, rng))
        .1
}

impl<'a> World<'a> {
    /// The shaping options of thread `t`'s job (nothing for cpu jobs).
    /// Borrowed from the scenario, not the world, so the world stays
    /// mutable while it is read.
    pub(crate) fn shape(&self, t: usize) -> &'a IoShape {
        let sc: &'a cint_scenario::Scenario = self.sc;
        match &sc.jobs[self.threads[t].job as usize].work {
            Work::Io(io) => &io.shape,
            Work::Cpu => &NO_SHAPE,
        }
    }

    /// Thread `t`'s next request as fio's generator draws it (a
    /// submission's, a buffered call's, an offloaded hand-off's): its
    /// direction and size drawn, the rate's schedule moved by it, and the
    /// request counted.
    /// When thread `t`'s job is random and its offsets decide something
    /// (a buffered job's hits, the random map's cuts; [`super::offsets`]),
    /// the request is placed too (fio draws the offset, then the size,
    /// which the map may cut), and [`super::offsets::Offsets::last`] says
    /// where.
    // Inline: the short way of most jobs, only the direction drawn, is
    // a few instructions in its caller's loop.
    #[inline]
    pub(crate) fn draw_request(&mut self, t: usize) -> (bool, u64) {
        let th = &mut self.threads[t];
        if !th.prog.one_size || self.offsets.of(t).is_some() {
            return self.draw_shaped_request(t);
        }
        let (rw, rwmixread, bs) = (th.prog.rw, th.prog.rwmixread, th.prog.bs);
        let write = is_write(rw, rwmixread, &mut th.rng);
        self.count_request(t, write, bs);
        (write, bs)
    }

    /// [`World::draw_request`] for a job of several sizes, a rate, passes
    /// or offsets that decide something.
    #[inline(never)]
    fn draw_shaped_request(&mut self, t: usize) -> (bool, u64) {
        let shape = self.shape(t);
        let p = self.threads[t].prog;
        let paced = if p.rated {
            self.paced_direction(t)
        } else {
            None
        };
        let s = &self.shaping[t];
        let room = p
            .passes
            .then(|| s.syncs.room_in_pass(shape, s.bytes, !p.rw.is_random()))
            .flatten();
        let th = &mut self.threads[t];
        let write = match paced {
            Some(write) => write,
            None => is_write(p.rw, p.rwmixread, &mut th.rng),
        };
        let mut bytes =
            cint_scenario::shape::draw_block_size_within(shape, p.bs, write, room, &mut th.rng);
        if let Some(offsets) = self.offsets.of(t) {
            bytes = place(offsets, shape, p.bs, write, bytes, &mut th.rng);
        }
        if p.rated {
            self.advance_rate(t, write, bytes);
        }
        self.count_request(t, write, bytes);
        (write, bytes)
    }

    /// Counts a request thread `t` issues, of `bytes`: towards
    /// `number_ios`, `io_size` and the syncs every few writes.
    pub(crate) fn count_request(&mut self, t: usize, write: bool, bytes: u64) {
        let s = &mut self.shaping[t];
        s.issued += 1;
        s.bytes += bytes;
        s.writes += u64::from(write);
    }

    /// Requests thread `t` has issued in all.
    pub(crate) fn shaping_issued(&self, t: usize) -> u64 {
        self.shaping[t].issued
    }

    /// Counts requests handed to thread `t` (fio's think time counts
    /// completed blocks, its default `thinktime_blocks_type=complete`).
    pub(crate) fn count_completions(&mut self, t: usize, n: u32) {
        let s = &mut self.shaping[t];
        s.since_think = s.since_think.saturating_add(u64::from(n));
        s.completed = s.completed.saturating_add(u64::from(n));
        if n > 0 {
            s.syncs.completed();
        }
    }

    /// fio's `io_u_quiesce`: with requests in flight, a reap call for at
    /// least one event (`io_u_queued_complete(td, 1)`), and the loop comes
    /// back here once they are in hand, until none is left. True when
    /// that call has begun.
    pub(crate) fn quiesce(&mut self, t: usize) -> bool {
        if self.threads[t].in_flight == 0 {
            return false;
        }
        self.threads[t].min_nr = 1;
        match self.threads[t].prog.engine {
            Engine::IoUring => self.get_events(t),
            _ => {
                let c = self.costs;
                self.set_burst(t, c.syscall + c.aio_getevents_call, Cont::GetEvents)
            }
        }
        true
    }

    /// Requests thread `t` may still issue under `number_ios`, and as many
    /// as fit in what is left of its `io_size` or its pass (its file's
    /// end): none once it has issued that (a request of several sizes may
    /// pass it by its own, as in fio).
    pub(crate) fn ios_left(&self, t: usize) -> u32 {
        let p = &self.threads[t].prog;
        // An offload worker runs what its main thread, which counts,
        // hands it.
        if p.unlimited || p.role == super::LoopRole::Worker {
            return u32::MAX;
        }
        if p.trace {
            return self.trace_left(t).unwrap_or(0);
        }
        let shape = self.shape(t);
        let s = &self.shaping[t];
        let by_count = match shape.number_ios {
            Some(n) => n
                .saturating_sub(s.issued - s.issued_base)
                .min(u64::from(u32::MAX)) as u32,
            None => u32::MAX,
        };
        match s.syncs.issue_limit(shape) {
            // fio looks before each request, so a call takes no more
            // than would still be under the limit were each the largest.
            Some(limit) => {
                let largest = cint_scenario::shape::largest_block(shape, p.bs).max(1);
                let fit = limit.saturating_sub(s.bytes).div_ceil(largest);
                by_count.min(fit.min(u64::from(u32::MAX)) as u32)
            }
            None => by_count,
        }
    }

    /// fio's reset of its counts at the end of thread `t`'s ramp
    /// (libfio.c `reset_all_stats`: `io_blocks` and `io_issues` start
    /// again, so `number_ios`, which counts completed requests and those
    /// in flight (backend.c `exceeds_number_ios`), and the syncs every few
    /// writes count from there). Looked at from the top of the thread's
    /// loop until the ramp has ended.
    pub(crate) fn reset_counts_after_ramp(&mut self, t: usize, now: Nanos) {
        if self.sc.warmup == 0 {
            self.shaping[t].ramp_reset = true;
            return;
        }
        if !self.job_measuring(self.threads[t].job as usize, now) {
            return;
        }
        let in_flight = u64::from(self.threads[t].in_flight);
        let s = &mut self.shaping[t];
        s.issued_base = s.issued.saturating_sub(in_flight + s.measured_before_reset);
        s.writes_base = s.writes;
        s.ramp_reset = true;
    }

    /// Thread `t` was handed a measured request before its counts were
    /// reset at the end of its ramp ([`World::reset_counts_after_ramp`]).
    /// Only a thread whose counts are reset keeps the tally: the others'
    /// would grow with every completion, for nothing.
    #[inline]
    pub(crate) fn measured_before_ramp_reset(&mut self, t: usize) {
        if !self.threads[t].prog.counts_from_ramp {
            return;
        }
        let s = &mut self.shaping[t];
        if !s.ramp_reset {
            s.measured_before_reset += 1;
        }
    }

    /// Whether thread `t`'s counts still wait for the end of its ramp.
    #[inline]
    pub(crate) fn counts_before_ramp(&self, t: usize) -> bool {
        !self.shaping[t].ramp_reset
    }

    /// Thread `t` has issued its `number_ios` and has nothing in flight.
    pub(crate) fn ios_done(&self, t: usize) -> bool {
        self.ios_left(t) == 0 && self.threads[t].in_flight == 0
    }

    /// fio's think time (backend.c `handle_thinktime`): after
    /// `thinktime_blocks` completed requests the thread reaps the rest in
    /// flight, spins `thinktime_spin`, then sleeps the rest of
    /// `thinktime` as fio sleeps ([`super::fio_sleep`]: a spin when it is
    /// short). True when the pause (or its reap) has begun.
    pub(crate) fn think_due(&mut self, t: usize) -> bool {
        let shape = self.shape(t);
        let (think, spin) = (shape.thinktime, shape.thinktime_spin);
        if think == 0 {
            return false;
        }
        // A think time already found due is reaping; otherwise fio looks
        // once a pass, after the pass's request and its forced reap
        // (backend.c `do_io`): here, once a request was issued or
        // completions were handed since the last look.
        if self.shaping[t].think_found.is_none() {
            let s = &mut self.shaping[t];
            let now_at = (s.issued, s.completed);
            if now_at == s.think_checked {
                return false;
            }
            s.think_checked = now_at;
            if !self.think_triggered(t, shape) {
                return false;
            }
        }
        let now = self.now();
        let counted = self.shaping[t].since_think;
        if self.quiesce(t) {
            self.shaping[t].think_found.get_or_insert((now, counted));
            return true;
        }
        let s = &mut self.shaping[t];
        let (found, counted) = s.think_found.take().unwrap_or((now, counted));
        s.since_think -= counted.min(s.since_think);
        s.issued_at_think = s.issued;
        s.last_think = Some(found);
        if shape.rate_ign_think {
            self.rate_ignores_think(t, think);
        }
        let rest = think.saturating_sub(spin);
        if spin > 0 {
            self.set_clock_spin(t, spin, Cont::FioSleep(rest));
        } else {
            self.fio_sleep(t, rest);
        }
        true
    }

    /// Whether thread `t`'s think time is due (fio's `handle_thinktime`):
    /// `thinktime_blocks` requests completed (or issued) since the last,
    /// or `thinktime_iotime` and the think time itself passed since it
    /// began, whichever comes first.
    #[inline(never)]
    fn think_triggered(&self, t: usize, shape: &IoShape) -> bool {
        let s = &self.shaping[t];
        let counted = if shape.thinktime_issue {
            s.issued - s.issued_at_think
        } else {
            s.since_think
        };
        let blocks = shape.thinktime_blocks.max(1);
        if blocks != u32::MAX && counted >= u64::from(blocks) {
            return true;
        }
        if shape.thinktime_iotime == 0 {
            return false;
        }
        let job = self.threads[t].job as usize;
        let since = s.last_think.unwrap_or_else(|| self.groups.start_of(job));
        self.now().saturating_sub(since) >= shape.thinktime_iotime + shape.thinktime
    }

    /// fio's `fsync=N` / `fdatasync=N` (io_u.c `get_rw_ddir`, fio.h
    /// `should_fsync`): before the next request, when the writes issued
    /// are a multiple of N, a synchronous call (fio's libaio engine makes
    /// it synchronous too), `fsync` first where both fall due, and none
    /// again until a request has completed since the last. So a job that
    /// also reads syncs again after each read while its writes stay a
    /// multiple (fio 3.33: 1003 fsyncs for 920 writes at `fsync=3` on a
    /// 70/30 `randrw`), and none is made when the job has no request
    /// left or no free slot (fio decides as it takes a slot). True when
    /// it began.
    pub(crate) fn sync_due(&mut self, t: usize) -> bool {
        let shape = self.shape(t);
        let s = &self.shaping[t];
        let writes = s.writes - s.writes_base;
        let Some(datasync) = s.syncs.sync_due(shape, writes) else {
            return false;
        };
        // fio decides when it takes a request slot (`get_io_u`): a thread
        // whose depth is used up reaps first.
        if self.ios_left(t) == 0 || self.threads[t].free_slots.is_empty() {
            return false;
        }
        let in_flight = self.threads[t].in_flight;
        if self.shaping[t].syncs.reaps_before_sync() && in_flight > 0 {
            let least = self.threads[t].prog.min_nr.min(in_flight).max(1);
            // The sync takes fio's last free io_u, if it is the last: its
            // engine's busy answer then finds the queue full.
            if self.threads[t].free_slots.len() == 1 {
                self.begin_drain(t, least);
            }
            self.reap(t, least);
            return true;
        }
        self.enter_sync(t, datasync);
        true
    }

    /// Whether the sync due after thread `t`'s last request, a write of
    /// a submission batch, ends the batch there
    /// (`cint_scenario::passes::PassSyncs::sync_ends_batch`). Out of line:
    /// only jobs that sync come here.
    #[inline(never)]
    pub(crate) fn sync_ends_batch(&mut self, t: usize) -> bool {
        let shape = self.shape(t);
        let s = &mut self.shaping[t];
        let writes = s.writes - s.writes_base;
        s.syncs.sync_ends_batch(shape, writes)
    }

    /// Thread `t` enters an `fsync` (or `fdatasync`). A buffered job's
    /// call writes back its file's dirty pages and waits for them
    /// (crate::host::pagecache). A direct job's has nothing to write: the
    /// built-in devices have no volatile write cache (power-loss
    /// protected), so the kernel sends them no flush and the call costs
    /// its entry and exit.
    fn enter_sync(&mut self, t: usize, datasync: bool) {
        let now = self.now();
        let s = &mut self.shaping[t];
        s.sync_entered = now;
        s.sync_is_datasync = datasync;
        if self.threads[t].prog.buffered {
            self.buffered_fsync(t, datasync);
            return;
        }
        let c = self.costs;
        self.set_burst(t, c.syscall + c.return_to_user, Cont::SyncReturn);
    }

    /// The end of one of thread `t`'s passes over its file (`pass_size`,
    /// crate `cint_scenario::passes`): the sync fio makes after the
    /// pass's last write where its loop goes on, then the wait for what
    /// is in flight, then the next pass. True when the sync or the wait
    /// has begun.
    #[inline(never)]
    pub(crate) fn pass_end_holds(&mut self, t: usize) -> bool {
        let Work::Io(io) = &self.sc.jobs[self.threads[t].job as usize].work else {
            return false;
        };
        let s = &self.shaping[t];
        let th = &self.threads[t];
        let top = LoopTop {
            bytes: s.bytes,
            writes: s.writes - s.writes_base,
            issued: s.issued - s.issued_base,
            slot_free: !th.free_slots.is_empty(),
            in_flight: th.in_flight,
        };
        let sync_engine = th.prog.engine.is_sync();
        match self.shaping[t]
            .syncs
            .at_pass_end(&io.shape, (io.size, io.bs), sync_engine, top)
        {
            Some(PassEnd::Sync(datasync)) => self.enter_sync(t, datasync),
            Some(PassEnd::Drain) => self.reap(t, top.in_flight),
            None => return false,
        }
        true
    }

    /// Thread `t`'s loop is over and what it had in flight is in hand:
    /// with `end_fsync`, it makes the final `fsync` of its file, unless
    /// its last call was one (fio's `should_fsync`), before it exits.
    /// True when the call has begun. Out of line: a job's end only.
    #[inline(never)]
    pub(crate) fn final_fsync_begins(&mut self, t: usize) -> bool {
        // fio makes it only where the loop ended without an error.
        let end_fsync = self.shape(t).end_fsync && !self.went_past_its_max_latency(t);
        let s = &mut self.shaping[t];
        if !end_fsync || s.final_fsync || s.syncs.last_was_sync() {
            return false;
        }
        s.final_fsync = true;
        self.enter_sync(t, false);
        true
    }

    /// An `fsync` or `fdatasync` of thread `t` returns: fio takes its
    /// latency (its `sync` figures), then the loop goes on. The final
    /// `fsync` counts in the job's window only, as fio's counts in its
    /// runtime and not among its syncs.
    pub(crate) fn sync_returned(&mut self, t: usize) {
        let now = self.now();
        let job = self.threads[t].job as usize;
        let s = &mut self.shaping[t];
        s.syncs.synced();
        if s.final_fsync {
            self.issue(t);
            return;
        }
        let (entered, datasync) = (s.sync_entered, s.sync_is_datasync);
        if self.measuring && self.job_measuring(job, now) {
            self.jobs[job].record_sync(now - entered, datasync);
        } else if let Some(stats) = self.jobs.get_mut(job) {
            stats.record_sync_in_ramp(datasync);
        }
        self.issue(t);
    }

    /// A `usleep(d)`'s timer is armed: sleep `d` and the timer's slack
    /// range (as [`World::fio_nanosleep`]), then back to the loop's top.
    pub(crate) fn nap(&mut self, t: usize, d: Nanos) {
        let c = self.costs;
        let at = self.now().saturating_add(d) + c.task_timer_slack + c.timer_slack;
        self.block_with_timer(t, Wait::Sleep, at);
    }
}
