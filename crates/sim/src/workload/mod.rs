//! What application threads do: fio-like I/O loops (`psync`, `pvsync2`,
//! `libaio`, `io_uring`) and CPU busy loops, as sequences of CPU bursts,
//! submissions and waits. Every step's CPU cost comes from the host
//! profile; how a thread waits depends on the completion mode:
//!
//! * interrupt: it sleeps; the IRQ handler wakes it. A libaio waiter in
//!   `io_getevents(min_nr)` is woken by every delivering IRQ and goes back
//!   to sleep while fewer than `min_nr` events are ready (Linux 5.0
//!   fs/aio.c); an io_uring waiter is woken only once enough are ready.
//! * poll: it spins on the CQ, `poll_iteration` per loop, no IRQ.
//! * hybrid-poll: it arms a high-resolution timer (`timer_setup`), sleeps
//!   for the estimator's time plus the timer slack (a timer interrupt
//!   wakes it), then spins. For asynchronous engines one sleep precedes
//!   each wait for events.
//!
//! Under `rate_iops` a thread that must not issue yet sleeps on a timer,
//! and an asynchronous reap call waits with a timeout at the next issue
//! instant; either way arming the timer costs `timer_setup` of CPU, as it
//! does for hybrid polling.
//!
//! Submission costs are the same kernel path for every engine per request
//! (`direct_io` + `block_submit`) plus the call's own parts. The
//! generator's own CPU per I/O (`user_per_io`, less with `gtod_reduce`) is
//! spent where fio spends it: the reaping part (`1 - user_issue_share`) on
//! each completion as soon as the reap call returns, then the job's
//! `think` time, and the issuing part on each request right before the
//! call that submits it. Both lie outside the measured latency, as in fio:
//! the clock starts at the submission call and stops when the completion
//! is in the application's hand. So a thread that reaps 16 completions and
//! then submits one request per call issues its first request after one
//! request's preparation, not after sixteen.
//!
//! An io_uring job with `sqpoll` fills its ring and spins on its
//! completion ring; its ring's SQ thread submits and polls (sqpoll.rs).
//!
//! Hints follow docs/ALGORITHMS.md section 5 through `cint_policy::hints`
//! unless the job overrides them. Jobs without `direct` on a synchronous
//! engine or libaio go through the page cache (crate::host::pagecache); on
//! io_uring they are modelled as direct I/O.

mod fio_sleep;
mod flow;
mod groups;
mod latency_target;
pub(crate) mod max_latency;
pub(crate) mod min_rate;
mod offload;
pub(crate) mod offsets;
mod pattern;
mod program;
pub(crate) mod rate;
pub(crate) mod select;
mod sqpoll;
mod steady;
mod trace;

pub(crate) use flow::Flows;
pub(crate) use groups::{Groups, ThreadCounts};

pub(crate) use cint_scenario::sqpoll::{
    shared_core_notes as sqpoll_shared_core_notes, submitting_core,
};
pub(crate) use offload::{offload_workers, Offloads};
pub(crate) use pattern::ThreadShape;
pub(crate) use program::{LoopRole, Program};
pub(crate) use sqpoll::SqPolls;
pub(crate) use trace::Replay;

use cint_policy::hints::{self, BatchPosition, IoCall, IoContext, RwFlags};
use cint_policy::hybrid_poll::Direction;
use cint_policy::{Hint, Nanos};
use cint_scenario::{CompletionMode, Engine, HybridSleep};

use crate::engine::Event;
use crate::host::Segment;
use crate::world::{Activity, Cont, ReqState, Wait, World};

impl crate::world::Thread {
    /// The completions its reap call still waits for beyond those ready,
    /// at least one.
    pub(crate) fn events_still_needed(&self) -> u32 {
        self.min_nr.saturating_sub(self.ready.len() as u32).max(1)
    }

    /// Its reap call has the `min_nr` events it waits for.
    #[inline]
    pub(crate) fn has_its_events(&self) -> bool {
        self.ready.len() as u64 >= u64::from(self.min_nr)
    }
}

impl World<'_> {
    /// Whether thread `t` runs on its core at this instant (a segment of
    /// its own, not a handler's).
    pub(crate) fn runs_now(&self, t: usize) -> bool {
        let c = self.threads[t].core as usize;
        self.cores[c].current == Some(t as u32)
            && matches!(self.cores[c].seg, Some(Segment { irq: false, .. }))
    }

    /// Resumes thread `t`'s program after a burst; `t` owns its core.
    pub(crate) fn cont(&mut self, t: usize, cont: Cont) {
        match cont {
            Cont::Issue => self.issue(t),
            Cont::Prepared => self.submit_or_reap(t),
            Cont::Doorbell => self.doorbell(t),
            Cont::SubmitNext => self.next_plug(t, 0),
            Cont::GetEvents => self.get_events(t),
            Cont::GetEventsRecheck => self.recheck_events(t),
            Cont::GetEventsTimeout => self.hand_ready(t, self.costs.return_to_user),
            Cont::UringWait => self.uring_enter_wait(t),
            Cont::ReapCallReturned => self.reap_call_returned(t),
            Cont::Handed => self.handed(t),
            Cont::PollReaped => self.poll_reaped(t),
            Cont::HybridArm => self.hybrid_sleep(t),
            Cont::RateSleepArmed => self.rate_sleep_armed(t),
            Cont::RateWaitArmed => self.rate_wait_armed(t),
            Cont::Spin(need) => self.threads[t].act = Activity::Spin { need },
            Cont::Busy => self.threads[t].act = Activity::Busy,
            Cont::Nap(d) => self.nap(t, d),
            Cont::FioSleep(d) => self.fio_sleep(t, d),
            Cont::FioNanosleep(d) => self.fio_nanosleep(t, d),
            Cont::FioSleepReturn => self.fio_sleep_returned(t),
            Cont::OffloadHandOff => self.offload_hand_off(t),
            Cont::OffloadWaitFree => self.offload_sleep(t, Wait::OffloadFree),
            Cont::OffloadSleep => self.offload_sleep(t, Wait::OffloadIdle),
            Cont::SqWoken => self.sq_woken(t),
            Cont::PageCache => self.page_cache_cont(t),
            Cont::SyncReturn => self.sync_returned(t),
            Cont::PageCacheSleep(at) => self.page_cache_sleep(t, at),
            Cont::App => self.app_cont(t),
            Cont::AppSleep(at) => self.app_sleep(t, at),
        }
    }

    pub(crate) fn set_burst(&mut self, t: usize, left: Nanos, then: Cont) {
        let left = self.thread_cost(t, left);
        self.threads[t].act = Activity::Burst { left, then };
    }

    /// [`World::set_burst`] for work that is all user mode (the
    /// generator's own, think time): the whole burst, as varied by the
    /// host's spread, counts as user time.
    pub(crate) fn set_user_burst(&mut self, t: usize, left: Nanos, then: Cont) {
        let left = self.thread_cost(t, left);
        let th = &mut self.threads[t];
        th.act = Activity::Burst { left, then };
        th.user_left = left;
    }

    /// Top of the I/O loop.
    fn issue(&mut self, t: usize) {
        if self.threads[t].drain_min > 0 && self.drain_goes_on(t) {
            return;
        }
        let now = self.now();
        let p = self.threads[t].prog;
        if p.counts_from_ramp && self.counts_before_ramp(t) {
            self.reset_counts_after_ramp(t, now);
        }
        if p.role != LoopRole::Inline {
            self.issue_shared_loop(t, now);
            return;
        }
        // A completion past the job's max_latency ends the thread as its
        // runtime would, but for the final fsync (fio's `do_io` breaks on
        // the error).
        let stopped = p.stop_at.is_some_and(|s| now >= s)
            || (p.lat_bounded && self.went_past_its_max_latency(t));
        if !stopped && p.passes && self.pass_end_holds(t) {
            return;
        }
        if stopped || self.ios_done(t) {
            if self.threads[t].in_flight > 0 && !p.engine.is_sync() && !p.buffered {
                // fio's end of a job's loop (backend.c
                // `cleanup_pending_aio`): what is still in flight is
                // reaped, and counted, before the thread exits; the
                // job's runtime runs to there.
                self.reap(t, self.threads[t].in_flight);
                return;
            }
            if p.buffered && self.final_fsync_begins(t) {
                return;
            }
            self.exit_thread(t);
            return;
        }
        if p.floored && self.floor_missed(t, now) {
            self.exit_thread(t);
            return;
        }
        if self.think_due(t) || self.sync_due(t) || self.flow_holds(t) || self.depth_search_holds(t)
        {
            return;
        }
        self.submit_or_reap(t);
    }

    /// The top of the loops that threads share: an offloaded job's
    /// (workload/offload.rs), whose worker ends with its main thread, not
    /// by its own clock or count, and an SQ thread's (workload/sqpoll.rs).
    /// Out of line: the loop of a thread that shares none stays small.
    #[inline(never)]
    fn issue_shared_loop(&mut self, t: usize, now: Nanos) {
        let p = self.threads[t].prog;
        if p.role == LoopRole::SqThread {
            self.sq_loop(t);
            return;
        }
        if p.role == LoopRole::Worker {
            if !self.offload_worker_step(t) {
                self.submit_or_reap(t);
            }
            return;
        }
        if p.stop_at.is_some_and(|s| now >= s) || self.ios_done(t) {
            self.end_offload_pool(t);
            self.exit_thread(t);
            return;
        }
        if !self.rate_holds(t, now) {
            self.dispatch_offload(t);
        }
    }

    /// The generator's issue-side work for the `k` requests it is about to
    /// submit, those not prepared yet; true if that work has begun (the
    /// thread continues with [`Cont::Prepared`]).
    fn prepare_in_user_space(&mut self, t: usize, k: u32) -> bool {
        let th = &self.threads[t];
        let missing = k.saturating_sub(th.prepared);
        let per_request = self.costs.user(th.prog.gtod_reduce).issue;
        // An offload worker's request was prepared by its main thread.
        if missing == 0 || per_request == 0 || th.prog.role == LoopRole::Worker {
            return false;
        }
        self.threads[t].prepared = k;
        self.set_user_burst(t, u64::from(missing) * per_request, Cont::Prepared);
        true
    }

    /// Submits what the depth and the rate allow, or reaps.
    fn submit_or_reap(&mut self, t: usize) {
        let now = self.now();
        let p = self.threads[t].prog;
        let c = self.costs;
        if self.rate_holds(t, now) {
            return;
        }
        if p.engine.is_sync() {
            // A rate limit has held the thread already; a trace's
            // release has not.
            if p.trace && self.paced(t) && now < self.threads[t].next_issue_at {
                self.sleep_until_next_issue(t);
                return;
            }
            if self.prepare_in_user_space(t, 1) {
                return;
            }
            if p.buffered {
                self.buffered_call(t);
                return;
            }
            if self.prepare(t, 1, now) == 0 {
                // No free slot cannot happen with one request per call,
                // but never spin on it.
                self.exit_thread(t);
                return;
            }
            self.start_call(t, c.syscall);
            return;
        }
        // fio (backend.c, ioengines.c) queues while the depth allows and
        // commits every `iodepth_batch_submit` requests; when the depth is
        // used up it commits whatever is queued before it waits for
        // completions. So a partial batch is submitted, never held back
        // waiting for slots only the completions it blocks could free.
        let free = self.threads[t].free_slots.len() as u32;
        let mut k = p.batch.min(free).min(self.depth_search_room(t));
        if p.reaps_each_submission {
            // fio's `io_in_polling`: a pass of its loop queues one request
            // and then reaps.
            k = k.min(1);
        }
        if self.paced(t) {
            k = k.min(self.tokens(t, now));
        }
        k = k.min(self.ios_left(t));
        if k > 0 {
            if self.prepare_in_user_space(t, k) {
                return;
            }
            if p.buffered {
                self.buffered_submit(t, k);
                return;
            }
            self.prepare(t, k, now);
            if p.sqpoll {
                self.sq_commit(t);
                return;
            }
            let entry = match p.engine {
                Engine::IoUring => c.syscall + c.uring_submit_call,
                _ => c.syscall + c.aio_submit_call,
            };
            self.start_call(t, entry);
            return;
        }
        let in_flight = self.threads[t].in_flight;
        if in_flight == 0 {
            // Only a rate limit can leave nothing to submit and nothing
            // to reap.
            self.sleep_until_next_issue(t);
            return;
        }
        let least = p.min_nr.min(in_flight);
        if self.threads[t].free_slots.is_empty() {
            self.begin_drain(t, least);
        }
        self.reap(t, least);
    }

    /// A wait that begins on a full queue: with an `iodepth_low` below
    /// the depth, fio's `wait_for_completions` (backend.c) reaps, at
    /// least `least` events a call, until at most `iodepth_low` requests
    /// are in flight before its loop submits again. fio 3.33 here at depth
    /// 16 and `iodepth_low=4` submits at depths 5 to 16 in turn (its
    /// "IO depths" 25.0% 4-7, 66.7% 8-15, 8.3% 16; 99.9% 16 without;
    /// docs/evidence/fio-iodepth-low.sh).
    #[inline]
    pub(crate) fn begin_drain(&mut self, t: usize, least: u32) {
        let th = &mut self.threads[t];
        if th.prog.low_water < th.prog.iodepth {
            th.drain_min = least;
        }
    }

    /// After a reap call of a wait that [`World::begin_drain`] began:
    /// true where more are in flight than the job's `iodepth_low`, and
    /// the next call has begun; the wait ends otherwise.
    #[inline(never)]
    fn drain_goes_on(&mut self, t: usize) -> bool {
        let th = &mut self.threads[t];
        if th.in_flight > th.prog.low_water {
            let least = th.drain_min.min(th.in_flight);
            self.reap(t, least);
            return true;
        }
        th.drain_min = 0;
        false
    }

    /// Waits for `min_nr` of thread `t`'s requests in flight:
    /// `io_getevents`, or `io_uring_enter` with `IORING_ENTER_GETEVENTS`
    /// (a spin on the completion ring for an SQ-polled one).
    fn reap(&mut self, t: usize, min_nr: u32) {
        self.threads[t].min_nr = min_nr;
        match self.threads[t].prog.engine {
            Engine::IoUring => self.get_events(t),
            _ => self.set_burst(
                t,
                self.costs.syscall + self.costs.aio_getevents_call,
                Cont::GetEvents,
            ),
        }
    }

    /// Whether thread `t`'s issues wait for instants: a rate limit, or
    /// an open-loop trace with requests left (whose next release becomes
    /// the thread's next issue instant).
    fn paced(&mut self, t: usize) -> bool {
        let p = &self.threads[t].prog;
        if p.trace {
            self.trace_paced(t)
        } else {
            p.rated
        }
    }

    /// Rate limiting: requests that may be issued now, all those behind
    /// the schedule (fio keeps no cap on the backlog: a thread that fell
    /// behind issues until it has caught up); an open-loop trace: the
    /// requests released by now.
    fn tokens(&mut self, t: usize, now: Nanos) -> u32 {
        if self.threads[t].prog.trace {
            return self.trace_tokens(t, now);
        }
        self.rate_tokens(t, now)
    }

    /// A trace's pacing: arm a timer for the next release (CPU on the
    /// thread's core), then sleep.
    fn sleep_until_next_issue(&mut self, t: usize) {
        self.set_burst(t, self.costs.timer_setup, Cont::RateSleepArmed);
    }

    /// The sleep timer is armed. Arming took time: if the instant has
    /// passed meanwhile the sleep returns at once, as an expired
    /// high-resolution sleep does.
    fn rate_sleep_armed(&mut self, t: usize) {
        let at = self.threads[t].next_issue_at;
        if at <= self.now() {
            self.issue(t);
        } else {
            self.block_with_timer(t, Wait::Sleep, at);
        }
    }

    /// A reap call's timeout at a trace's next release is armed.
    /// Completions delivered while it was being armed count: the call
    /// returns if it has enough.
    fn rate_wait_armed(&mut self, t: usize) {
        let th = &self.threads[t];
        if th.has_its_events() {
            self.hand_ready(t, 0);
        } else {
            self.wait_with_timer(t, true);
        }
    }

    pub(crate) fn block_with_timer(&mut self, t: usize, wait: Wait, at: Nanos) {
        self.arm_thread_timer(t, at);
        self.block(t, wait);
    }

    /// Arms thread `t`'s one timer for `at`, cancelling any earlier one
    /// (a new token), and tells the idle governor of it.
    pub(crate) fn arm_thread_timer(&mut self, t: usize, at: Nanos) {
        self.schedule_thread_timer(t, at);
        self.power_note_timer(t, at);
    }

    /// Schedules thread `t`'s timer event for `at`, cancelling any
    /// earlier one (a new token), where no kernel timer stands behind it
    /// for the idle governor to see: a job's start, a stop, a loop that
    /// reads the clock each turn.
    pub(crate) fn schedule_thread_timer(&mut self, t: usize, at: Nanos) {
        let th = &mut self.threads[t];
        th.timer_token += 1;
        let token = th.timer_token;
        self.events.schedule(
            at,
            Event::ThreadTimer {
                thread: t as u32,
                token,
            },
        );
    }

    /// Takes up to `k` free slots, fills in the requests (op, size, hint)
    /// and stages them for the submission call. Returns how many: fewer
    /// where a sync falls due after one of them
    /// (`cint_scenario::passes::PassSyncs::sync_ends_batch`).
    fn prepare(&mut self, t: usize, k: u32, now: Nanos) -> u32 {
        let shape = self.shape(t);
        let k = k.min(self.ios_left(t));
        let th = &mut self.threads[t];
        let p = th.prog;
        let k = k.min(th.free_slots.len() as u32);
        let syncs = shape.syncs();
        let mut staged = k;
        for i in 0..k {
            let Some(r) = self.threads[t].free_slots.pop() else {
                break;
            };
            let mut start = now;
            let (write, bytes) = if p.trace {
                let (write, bytes) = self.trace_take(t, r);
                self.count_request(t, write, bytes);
                (write, bytes)
            } else if p.role == LoopRole::Worker {
                let (write, bytes, handed_at) = self.offload_take(t);
                start = handed_at;
                self.count_request(t, write, bytes);
                (write, bytes)
            } else {
                self.draw_request(t)
            };
            if syncs && write && i + 1 < k && self.sync_ends_batch(t) {
                staged = i + 1;
            }
            let barrier = cint_scenario::shape::batch_hint(shape, p.engine, i, staged);
            let hint = barrier.or(p.hint).unwrap_or_else(|| {
                let batch = BatchPosition {
                    index: i,
                    len: staged,
                };
                let (call, flags) = match p.engine {
                    Engine::Psync if write => (IoCall::Pwrite, RwFlags::EMPTY),
                    Engine::Psync => (IoCall::Pread, RwFlags::EMPTY),
                    Engine::Pvsync2 => {
                        let flags = if p.nowait {
                            RwFlags::NOWAIT
                        } else {
                            RwFlags::EMPTY
                        };
                        let call = if write {
                            IoCall::Pwritev2
                        } else {
                            IoCall::Preadv2
                        };
                        (call, flags)
                    }
                    Engine::Libaio => (IoCall::IoSubmit, RwFlags::EMPTY),
                    Engine::IoUring => (IoCall::IoUringBatch, RwFlags::EMPTY),
                };
                let ctx = IoContext {
                    blocking_fd: p.engine.is_sync(),
                    o_direct: p.direct,
                    rw_flags: flags,
                    ms_sync: false,
                    batch,
                };
                hints::request_hint(call, &ctx)
            });
            self.fill_slot(t, r, (write, bytes, hint), now);
            if start < now {
                self.offload_waited(r, now - start);
            }
            if staged == i + 1 {
                break;
            }
        }
        let th = &mut self.threads[t];
        th.prepared = th.prepared.saturating_sub(staged);
        self.select_staged(t, staged);
        staged
    }

    /// Fills thread `t`'s free slot `r` with a request (direction, size,
    /// hint) issued at `now` and stages it for the thread's next
    /// submission call.
    pub(crate) fn fill_slot(
        &mut self,
        t: usize,
        r: u32,
        (write, bytes, hint): (bool, u64, Hint),
        now: Nanos,
    ) {
        let req = &mut self.reqs[r as usize];
        if req.state != ReqState::Free {
            let state = req.state;
            self.check
                .fail(format!("slot {r} reused while in state {state:?}"));
        }
        req.write = write;
        req.bytes = bytes;
        req.hint = hint;
        req.issued = now;
        req.waited = 0;
        req.state = ReqState::Submitting;
        let th = &mut self.threads[t];
        th.batch.push(r);
        th.in_flight += 1;
        th.last_issued = (bytes, write);
    }

    /// The kernel path of one request inside a submission call of this
    /// thread's engine: the call's own per-request part, then the block
    /// layer's. A buffered thread's requests are the page cache's
    /// (read-ahead, fsync's writeback), which no engine call walks: the
    /// block layer's part only.
    fn request_path(&self, t: usize) -> Nanos {
        let c = &self.costs;
        // Inside a guest the request's path is the guest's driver and
        // the hypervisor's (crate::virt).
        let path = self
            .guest_request_path(t)
            .unwrap_or_else(|| c.per_request());
        let prog = &self.threads[t].prog;
        match prog.engine {
            _ if prog.buffered => path,
            Engine::IoUring => c.uring_submit_sqe + path,
            Engine::Libaio => c.aio_submit_iocb + path,
            Engine::Psync | Engine::Pvsync2 => path,
        }
    }

    /// Enters the submission call of the staged batch; `entry` is the
    /// call's own cost before its first request.
    pub(crate) fn start_call(&mut self, t: usize, entry: Nanos) {
        self.threads[t].batch_sent = 0;
        self.next_plug(t, entry);
    }

    /// The call walks its next requests up to the next plug flush, each
    /// with its tag: the requests whose kernel paths the burst runs reach
    /// the device together when it ends (blk-mq's plug, flushed as Linux
    /// 5.0 flushes it: see [`plug_len`]). Without a tag the call sleeps
    /// for one, as `blk_mq_get_tag` does, or, for a thread whose own
    /// polled requests hold tags, polls them first.
    fn next_plug(&mut self, t: usize, entry: Nanos) {
        let n = self.plug_len(t);
        if n == 0 {
            // Nothing (left) to walk: the call returns after its entry.
            self.threads[t].plugged = 0;
            self.set_burst(t, entry, Cont::Doorbell);
            return;
        }
        let (q, pool) = self.tag_pool_of(t);
        let retry = self.threads[t].tag_retry;
        let got = self.queues[q].tags[pool].take(n, retry);
        if got == 0 {
            if entry > 0 {
                // The call's entry runs before its first tag is asked for.
                self.set_burst(t, entry, Cont::SubmitNext);
            } else {
                self.wait_for_tag(t);
            }
            return;
        }
        self.threads[t].plugged = got;
        self.threads[t].tag_retry = false;
        let cost = entry + u64::from(got) * self.request_path(t);
        self.set_burst(t, cost, Cont::Doorbell);
    }

    /// Requests of the batch, from the first not yet sent, that the next
    /// plug flush sends. Linux 5.0 plugs a call of more than
    /// `AIO_PLUG_THRESHOLD` = 2 requests (fs/aio.c `io_submit`; io_uring's
    /// `io_submit_sqes` alike), and blk-mq (block/blk-mq.c
    /// `blk_mq_make_request`, the `commit_rqs` branch that NVMe takes)
    /// flushes the plug before adding a request when it holds
    /// `BLK_MAX_REQUEST_COUNT` = 16 requests or its last one is at least
    /// `BLK_PLUG_FLUSH_SIZE` = 128 KiB, and at the end of the call. A call
    /// of one or two requests issues each as its path ends.
    fn plug_len(&self, t: usize) -> u32 {
        /// `AIO_PLUG_THRESHOLD` (fs/aio.c).
        const PLUG_THRESHOLD: usize = 2;
        /// `BLK_MAX_REQUEST_COUNT` (block/blk-core.c).
        const PLUG_MAX_REQUESTS: u32 = 16;
        /// `BLK_PLUG_FLUSH_SIZE` (block/blk-core.c).
        const PLUG_FLUSH_BYTES: u64 = 128 * 1024;
        let th = &self.threads[t];
        let rest = &th.batch[th.batch_sent as usize..];
        if th.batch.len() <= PLUG_THRESHOLD {
            return rest.len().min(1) as u32;
        }
        let mut n = 0;
        for &r in rest {
            n += 1;
            if n == PLUG_MAX_REQUESTS || self.reqs[r as usize].bytes >= PLUG_FLUSH_BYTES {
                break;
            }
        }
        n
    }

    /// The hardware queue and tag pool (interrupt or poll queue) of
    /// thread `t`'s requests.
    fn tag_pool_of(&self, t: usize) -> (usize, usize) {
        let th = &self.threads[t];
        let req = &self.reqs[th.batch[0] as usize];
        (req.queue as usize, usize::from(req.polled))
    }

    /// No tag is free: sleep until freed tags wake the thread. A thread
    /// whose own polled requests hold tags would wait for itself, so it
    /// polls them instead (its completions free their tags) and then goes
    /// on with the call.
    fn wait_for_tag(&mut self, t: usize) {
        let th = &self.threads[t];
        let own_polled = th.polls && th.in_flight > th.batch.len() as u32 - th.batch_sent;
        let own_polled = own_polled || (th.prog.role == LoopRole::SqThread && self.sq_polls_own(t));
        let th = &mut self.threads[t];
        if own_polled {
            th.resume_submit = true;
            th.act = Activity::Spin { need: 1 };
            return;
        }
        let retry = std::mem::take(&mut th.tag_retry);
        let (q, pool) = self.tag_pool_of(t);
        self.queues[q].tags[pool].wait(t as u32, retry);
        self.block(t, Wait::Tag);
    }

    /// A plug is flushed: its requests reach the device. The call goes on
    /// with the next plug, or returns.
    fn doorbell(&mut self, t: usize) {
        let from = self.threads[t].batch_sent;
        let n = std::mem::take(&mut self.threads[t].plugged);
        for i in from..from + n {
            let r = self.threads[t].batch[i as usize];
            self.submit_to_device(r);
        }
        self.threads[t].batch_sent = from + n;
        if (self.threads[t].batch_sent as usize) < self.threads[t].batch.len() {
            self.next_plug(t, 0);
            return;
        }
        let now = self.now();
        let mut batch = std::mem::take(&mut self.threads[t].batch);
        for &r in &batch {
            self.reqs[r as usize].submitted = now;
        }
        batch.clear();
        let th = &mut self.threads[t];
        th.batch = batch;
        th.batch_sent = 0;
        if th.prog.buffered {
            self.page_cache_submitted(t);
            return;
        }
        if th.prog.engine.is_sync() {
            th.min_nr = 1;
            self.wait_for_events(t);
        } else if th.prog.reaps_each_submission && th.in_flight > 0 {
            // fio's `io_in_polling`: every pass of its loop reaps at
            // least one event after it queues (backend.c `do_io`).
            self.reap(t, 1);
        } else {
            self.issue(t);
        }
    }

    /// A request's completion is handled: its tag is free again, and the
    /// submitters asleep for one may be woken (returned in `woken`).
    pub(crate) fn free_tag(&mut self, r: u32, woken: &mut Vec<u32>) {
        let req = &self.reqs[r as usize];
        let (q, pool) = (req.queue as usize, usize::from(req.polled));
        self.queues[q].tags[pool].put(woken);
    }

    /// A reap call checks for `min_nr` ready events.
    fn get_events(&mut self, t: usize) {
        if self.threads[t].has_its_events() {
            self.hand_ready(t, 0);
            return;
        }
        let th = &self.threads[t];
        if th.prog.engine == Engine::IoUring {
            if th.prog.sqpoll {
                self.spin_on_completion_ring(t);
                return;
            }
            if !th.polls {
                self.set_burst(t, self.costs.syscall, Cont::UringWait);
                return;
            }
        }
        self.wait_for_events(t)
    }

    /// `io_uring_enter` with `IORING_ENTER_GETEVENTS`, after its entry
    /// cost: like the kernel, it looks at the completion ring before it
    /// sleeps. Completions that an interrupt posted while the call was
    /// being entered are already there, and no later interrupt may come
    /// for them, so sleeping without looking would lose the wake-up.
    fn uring_enter_wait(&mut self, t: usize) {
        let th = &self.threads[t];
        if th.has_its_events() {
            self.hand_ready(t, 0);
        } else {
            self.wait_for_events(t);
        }
    }

    /// Not enough completions are ready: wait as the mode says.
    fn wait_for_events(&mut self, t: usize) {
        self.wait_with_timer(t, false);
    }

    /// [`World::wait_for_events`]; `timer_armed`: the call's rate-limit
    /// timeout is already set (once per call: a libaio waiter woken
    /// before its `min_nr` sleeps again on the same timer).
    fn wait_with_timer(&mut self, t: usize, timer_armed: bool) {
        // A trace's replay waits for its next release too; fio's rate
        // limiter reaps only when its queue is full or to quiesce.
        let paced = self.threads[t].prog.trace && self.paced(t);
        let mode = self.wait_mode(t);
        let th = &self.threads[t];
        let need = th.events_still_needed();
        match mode {
            CompletionMode::Interrupt(_) if th.prog.reap_spins => self.call_reap_again(t),
            CompletionMode::Interrupt(_) => {
                let min_nr = th.min_nr;
                let wait = match th.prog.engine {
                    Engine::Psync | Engine::Pvsync2 => Wait::Sync,
                    Engine::Libaio => Wait::AioEvents { min_nr },
                    Engine::IoUring => Wait::UringEvents { min_nr },
                };
                // The trace's next release only matters to a thread that
                // has a free slot to submit it in: with every request in
                // flight, waking for it would find nothing to submit and
                // nothing to reap, and spin on the core.
                let rate_deadline = match (wait, paced) {
                    (Wait::Sync, _) | (_, false) => None,
                    _ if th.free_slots.is_empty() => None,
                    _ => Some(th.next_issue_at),
                };
                match rate_deadline {
                    Some(at) if at <= self.now() => self.hand_ready(t, self.costs.return_to_user),
                    Some(_) if !timer_armed => {
                        self.set_burst(t, self.costs.timer_setup, Cont::RateWaitArmed)
                    }
                    Some(at) => self.block_with_timer(t, wait, at),
                    None => self.block(t, wait),
                }
            }
            CompletionMode::Poll => self.threads[t].act = Activity::Spin { need },
            CompletionMode::HybridPoll(_) | CompletionMode::ModeSelect => {
                self.set_burst(t, self.costs.timer_setup, Cont::HybridArm)
            }
        }
    }

    /// A reap call that returns at once (fio's
    /// `iodepth_batch_complete_min=0`) found too few events: fio's engine
    /// calls again (`io_getevents` or `io_uring_enter` with a least of
    /// 0), each call a system call on the thread's core, while the
    /// interrupts deliver. Out of line: only such jobs come here.
    #[inline(never)]
    fn call_reap_again(&mut self, t: usize) {
        let c = self.costs;
        let call = match self.threads[t].prog.engine {
            Engine::IoUring => c.syscall + c.uring_submit_call,
            _ => c.syscall + c.aio_getevents_call,
        };
        self.set_burst(t, call, Cont::ReapCallReturned);
    }

    /// One such call returned: enough events are in, or call again.
    fn reap_call_returned(&mut self, t: usize) {
        let th = &self.threads[t];
        if th.has_its_events() {
            self.hand_ready(t, 0);
        } else {
            self.call_reap_again(t);
        }
    }

    /// A libaio waiter woke up: enough events, or back to sleep.
    fn recheck_events(&mut self, t: usize) {
        let th = &self.threads[t];
        if th.has_its_events() {
            self.hand_ready(t, self.costs.return_to_user);
        } else {
            self.wait_with_timer(t, true);
        }
    }

    /// Hands out the ready events, at most `batch_complete_max` (the
    /// reap call's `max_nr`), through the call's per-event path; the rest
    /// stay ready for the next call.
    fn hand_ready(&mut self, t: usize, extra: Nanos) {
        let th = &mut self.threads[t];
        let n = (th.ready.len() as u32).min(th.prog.max_events.max(1));
        th.handing = n;
        let per_event = match th.prog.engine {
            Engine::IoUring => self.costs.uring_reap_event,
            Engine::Libaio => self.costs.aio_getevents_event,
            Engine::Psync | Engine::Pvsync2 => 0,
        };
        self.set_burst(t, extra + u64::from(n) * per_event, Cont::Handed);
    }

    /// A delivered request of thread `t` is done with: its slot is free
    /// (fio's jobs when the completions are in hand, the page cache's
    /// and the applications' when their call or step takes them).
    // Inline: fio's jobs run it for every completion they reap.
    #[inline(always)]
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

    /// The application has its completions in hand.
    fn handed(&mut self, t: usize) {
        let now = self.now();
        let n = std::mem::take(&mut self.threads[t].handing);
        let job = self.threads[t].job as usize;
        for _ in 0..n {
            let Some(r) = self.threads[t].ready.pop_front() else {
                self.check
                    .fail(format!("thread {t} handed out more events than were ready"));
                break;
            };
            let done = self.reqs[r as usize];
            self.release_slot(t, r);
            let th = &self.threads[t];
            let sync = th.prog.engine.is_sync() || th.prog.sqpoll;
            let traced = th.prog.trace;
            let floored = th.prog.floored;
            let bounded = th.prog.lat_bounded;
            if self.measuring && self.job_measuring(job, now) {
                self.jobs[job].record(&done, now, sync);
                self.measured_before_ramp_reset(t);
                if floored {
                    self.floor_sample(t, done.write, done.bytes);
                }
                if bounded {
                    self.latency_bound_sample(t, done.write, done.latency_at(now));
                }
                if traced {
                    self.trace_done(t, r, &done);
                }
            } else if let Some(stats) = self.jobs.get_mut(job) {
                stats.record_in_ramp(done.write, done.bytes);
            }
            self.depth_search_completion(t, now - done.issued);
            self.steady_sample(job, now, done.bytes);
        }
        self.count_completions(t, n);
        // The generator's own work per I/O (fio's accounting of this
        // completion and the preparation of the next request) and the
        // job's think time run on the thread after the latency is taken,
        // both in user mode.
        let p = self.threads[t].prog;
        let per_io = p.think + self.costs.user(p.gtod_reduce).reap;
        if per_io > 0 && n > 0 {
            self.set_user_burst(t, per_io * u64::from(n), Cont::Issue);
        } else {
            self.issue(t);
        }
    }

    /// Polled modes: the entry is left in the CQ for the owner's poll loop.
    pub(crate) fn post_for_poller(&mut self, r: u32) {
        let mut t = self.reqs[r as usize].thread as usize;
        if self.threads[t].prog.sqpoll {
            // The ring's SQ thread polls it.
            t = self.sq_thread_of(t);
        }
        self.threads[t].posted.push_back(r);
        self.poller_sees(t);
    }

    /// Thread `t`'s posted entries grew: if it spins for them and has
    /// enough, its poll loop's next iteration sees them.
    fn poller_sees(&mut self, t: usize) {
        let th = &self.threads[t];
        let Activity::Spin { need } = th.act else {
            return;
        };
        let c = th.core as usize;
        if self.runs_now(t) && th.posted.len() as u64 >= u64::from(need) {
            self.interrupt_thread_segment(c);
            self.dispatch(c);
        }
    }

    /// The poll loop reaped its posted entries.
    fn poll_reaped(&mut self, t: usize) {
        if self.threads[t].prog.sqpoll {
            self.sq_events_seen(t);
            return;
        }
        let now = self.now();
        let mut woken = std::mem::take(&mut self.woken);
        while let Some(r) = self.threads[t].posted.pop_front() {
            let req = &mut self.reqs[r as usize];
            if req.state != ReqState::Posted {
                let state = req.state;
                self.check
                    .fail(format!("request {r} polled in state {state:?}"));
                continue;
            }
            req.state = ReqState::Delivered;
            self.check.delivered += 1;
            // The request's own class: blk_mq_poll_stats_bkt reads its
            // size and direction, not the job's.
            let (bs, dir) = (req.bytes, Direction::of(req.write));
            match self.mode {
                CompletionMode::HybridPoll(HybridSleep::Adaptive) => {
                    // Linux 5.0 stamps the sample when the poll loop ends
                    // the request (blk_stat_add from __blk_mq_end_request,
                    // block/blk-mq.c), not when the device posted it: an
                    // entry posted during the hybrid sleep counts the
                    // oversleep too. Within one poll iteration of that.
                    let seen = req.posted_at.max(self.threads[t].polling_since);
                    self.block_estimator
                        .record(seen, bs, dir, seen - req.dispatched)
                }
                _ => {
                    let run_time = req.posted_at - req.dispatched;
                    self.threads[t].estimator.record(now, bs, dir, run_time)
                }
            }
            let owner = req.thread as usize;
            if owner == t {
                self.threads[t].ready.push_back(r);
            } else {
                // An SQ thread's poll: the event goes to its ring.
                self.post_cqe(owner, r);
            }
            self.free_tag(r, &mut woken);
        }
        // The poll loop runs in a thread, not a handler: the submitters it
        // wakes become runnable as the loop goes on.
        for &w in &woken {
            self.events.schedule(now, Event::Wake { thread: w });
        }
        woken.clear();
        self.woken = woken;
        if std::mem::take(&mut self.threads[t].resume_submit) {
            self.next_plug(t, 0);
            return;
        }
        if self.threads[t].prog.role == LoopRole::SqThread {
            self.sq_loop(t);
            return;
        }
        if self.threads[t].prog.engine.is_sync() {
            self.threads[t].handing = self.threads[t].ready.len() as u32;
            self.handed(t);
        } else {
            self.get_events(t);
        }
    }

    /// Hybrid polling: sleep for the estimate, then spin.
    fn hybrid_sleep(&mut self, t: usize) {
        let now = self.now();
        let th = &self.threads[t];
        let need = th.events_still_needed();
        // Linux 5.0 sleeps for the polled request's own class
        // (blk_mq_poll_nsecs on the request, block/blk-mq.c): in a mixed
        // or multi-size job a write sleeps a write's half mean. The
        // request is the last one issued, the one a synchronous call
        // waits for; an asynchronous reap call's sleep (one per call
        // here) takes it too.
        let (bs, write) = th.last_issued;
        let dir = Direction::of(write);
        let sleep = match self.mode {
            CompletionMode::HybridPoll(HybridSleep::Adaptive) => {
                self.block_estimator.sleep_for(now, bs, dir)
            }
            _ => self.threads[t].estimator.sleep_for(now, bs, dir),
        };
        if sleep == 0 || self.threads[t].posted.len() as u64 >= u64::from(need) {
            self.threads[t].polling_since = now;
            self.threads[t].act = Activity::Spin { need };
            return;
        }
        let at = now + sleep + self.costs.timer_slack;
        self.block_with_timer(t, Wait::HybridSleep { need }, at);
    }
}
