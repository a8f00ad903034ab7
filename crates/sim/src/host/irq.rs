//! Interrupt handlers: device IRQs reaping a completion queue (full or
//! urgent-only, through `cint_policy::reap`), and timer interrupts ending a
//! thread's sleep. A handler's CPU time is `irq_fixed` plus the per-entry
//! reaping cost plus one wake-up per thread it wakes; the wake-ups take
//! effect when the handler returns.

use cint_policy::hybrid_poll::Direction;
use cint_policy::{Irq, Nanos};
use cint_scenario::{CompletionMode, HybridSleep};

use crate::engine::Event;
use crate::host::{IrqWork, Segment};
use crate::world::{Activity, Cont, ReqState, RunState, Wait, World};

impl World<'_> {
    /// A device interrupt reaches the core serving `queue`.
    #[inline(always)]
    pub(crate) fn on_irq_arrive(&mut self, queue: usize, irq: Irq) {
        // Counted from the run's start, and again from its window's
        // (`on_warmup_end`): a run that ends within its warm-up reports
        // its whole span.
        self.counters.interrupts += 1;
        if irq == Irq::UrgentOnly {
            self.counters.urgent_interrupts += 1;
        }
        let c = self.queues[queue].core as usize;
        self.raise(
            c,
            IrqWork::Device {
                queue: queue as u32,
                irq,
            },
        );
    }

    /// A thread's timer expires: a timer interrupt on its core.
    pub(crate) fn on_thread_timer(&mut self, thread: u32, token: u64) {
        let th = &self.threads[thread as usize];
        if th.timer_token != token {
            return;
        }
        if th.run != RunState::Blocked {
            // The SQ thread's loop finds its idle time up.
            if th.prog.role == crate::workload::LoopRole::SqThread {
                self.sq_kick(thread as usize);
            }
            return;
        }
        let c = th.core as usize;
        self.raise(c, IrqWork::Timer { thread, token });
    }

    pub(crate) fn raise(&mut self, c: usize, work: IrqWork) {
        self.cores[c].irq_pending.push_back(work);
        self.interrupt_thread_segment(c);
        self.dispatch(c);
    }

    /// Runs the handler's reaping now and occupies the core for its cost.
    pub(crate) fn start_irq(&mut self, c: usize, work: IrqWork) {
        let now = self.now();
        let cost = match work {
            IrqWork::Device { queue, irq } => {
                match self
                    .virt
                    .as_ref()
                    .and_then(|v| v.guest_of_queue(queue as usize))
                {
                    Some(_) => self.vmkernel_handler(c, queue as usize, irq),
                    None => self.reap_queue(c, queue as usize, irq),
                }
            }
            IrqWork::Virt { guest, work } => self.virt_work(c, guest as usize, work),
            IrqWork::Timer { thread, token } => {
                let th = &mut self.threads[thread as usize];
                let mut cost = self.costs.irq_fixed;
                if th.timer_token == token && th.run == RunState::Blocked && !th.wake_listed {
                    th.wake_listed = true;
                    th.woken_by_timer = true;
                    self.cores[c].wake_list.push(thread);
                    cost += self.costs.wakeup;
                }
                cost
            }
        };
        let cost = self.handler_cost(c, cost);
        let stretch = self.smt_stretch(c);
        let end = now + crate::host::smt::wall(cost, stretch);
        let core = &mut self.cores[c];
        core.token += 1;
        core.seg = Some(Segment {
            start: now,
            irq: true,
            end: Some(end),
            stretch,
        });
        let token = core.token;
        self.events.schedule(
            end,
            Event::CoreDone {
                core: c as u32,
                token,
            },
        );
        self.power_run(c, true);
        self.smt_note(c);
    }

    /// Reaps the queue's CQ as `irq` allows, hands every entry to its
    /// thread and returns the handler's CPU cost.
    fn reap_queue(&mut self, c: usize, queue: usize, irq: Irq) -> Nanos {
        let mut reaped = std::mem::take(&mut self.cores[c].reaped);
        reaped.clear();
        if let Some(cq) = self.queues[queue].cq.as_mut() {
            cq.reap(irq, |tag, _hint| reaped.push(tag as u32));
        }
        self.sample_interrupt_completions(&reaped);
        let wakes = self.hand_reaped(c, &reaped);
        let n = reaped.len() as u64;
        self.cores[c].reaped = reaped;
        // Slots freed by the reaping let held completions be posted.
        self.drain_overflow(queue);
        self.costs.irq_fixed + n * self.costs.irq_reap_entry + wakes * self.costs.wakeup
    }

    /// The block layer's hybrid-poll statistics take every request the
    /// device's queue ends, not only polled ones: Linux 5.0 marks each
    /// request of a queue whose statistics are on (`RQF_STATS`,
    /// `blk_mq_start_request`) and samples it in `__blk_mq_end_request`,
    /// which the interrupt handler runs (block/blk-mq.c). So interrupt
    /// completions beside a polling job move its sleep.
    fn sample_interrupt_completions(&mut self, reaped: &[u32]) {
        if self.mode != CompletionMode::HybridPoll(HybridSleep::Adaptive) {
            return;
        }
        let now = self.now();
        for &r in reaped {
            let req = &self.reqs[r as usize];
            let dir = Direction::of(req.write);
            self.block_estimator
                .record(now, req.bytes, dir, now - req.dispatched);
        }
    }

    /// Hands the requests a handler on core `c` reaped to their threads
    /// and frees their tags; returns how many threads it wakes.
    pub(crate) fn hand_reaped(&mut self, c: usize, reaped: &[u32]) -> u64 {
        let mut wakes = 0u64;
        let mut woken = std::mem::take(&mut self.woken);
        for &r in reaped {
            if self.deliver(r, c) {
                wakes += 1;
            }
            if self.page_cache.is_some() {
                wakes += self.wake_fsync_waiters(r, c);
            }
            // The request's tag is freed as its completion is handled
            // (blk_mq_end_request in the handler): submitters asleep for
            // a tag are woken by this handler.
            self.free_tag(r, &mut woken);
            for &w in &woken {
                let th = &mut self.threads[w as usize];
                if !th.wake_listed {
                    th.wake_listed = true;
                    th.woken_by_timer = false;
                    self.cores[c].wake_list.push(w);
                    wakes += 1;
                }
            }
            woken.clear();
        }
        self.woken = woken;
        wakes
    }

    /// Hands a reaped request to its thread; true if the thread is to be
    /// woken (and was not on this handler's list yet).
    fn deliver(&mut self, r: u32, c: usize) -> bool {
        let req = &mut self.reqs[r as usize];
        if req.state != ReqState::Posted {
            let state = req.state;
            self.check.fail(format!(
                "request {r} reaped in state {state:?} (reaped twice?)"
            ));
            return false;
        }
        req.state = ReqState::Delivered;
        self.check.delivered += 1;
        let t = req.thread as usize;
        if self.threads[t].prog.sqpoll {
            return self.sq_delivered(t, r, c);
        }
        let th = &mut self.threads[t];
        th.ready.push_back(r);
        let wake = th.run == RunState::Blocked
            && match th.wait {
                Wait::Sync | Wait::AioEvents { .. } => true,
                Wait::UringEvents { min_nr } => {
                    self.uring_task_work || th.ready.len() as u64 >= u64::from(min_nr)
                }
                Wait::PageCache | Wait::AppIo => true,
                _ => false,
            };
        if wake && !th.wake_listed {
            th.wake_listed = true;
            th.woken_by_timer = false;
            self.cores[c].wake_list.push(t as u32);
            true
        } else {
            false
        }
    }

    /// Puts thread `t` on core `c`'s handler's list of wake-ups, to take
    /// effect as the handler returns, unless a wake-up is on its way
    /// already; true if this one is the handler's (it pays for it).
    /// `reap_queue` and `deliver` write the same steps out: there, once
    /// per completion, calling this cost 0.13% more instructions on
    /// async-batch (cachegrind).
    pub(crate) fn list_handler_wake(&mut self, c: usize, t: u32) -> bool {
        let th = &mut self.threads[t as usize];
        if th.wake_listed {
            return false;
        }
        th.wake_listed = true;
        th.woken_by_timer = false;
        self.cores[c].wake_list.push(t);
        true
    }

    /// The handler returns: its wake-ups take effect.
    #[inline(always)]
    pub(crate) fn finish_irq(&mut self, c: usize) {
        if self.virt.is_some() {
            self.virt_finish(c);
        }
        let mut list = std::mem::take(&mut self.cores[c].wake_list);
        for &t in &list {
            self.wake(t as usize, Some(c));
        }
        list.clear();
        self.cores[c].wake_list = list;
    }

    /// Wakes thread `t` if it sleeps in `wait` and no wake-up is on its
    /// way, from another thread's work rather than a handler: the wake-up
    /// takes effect as the waker goes on. True if it did (the caller pays
    /// for it).
    pub(crate) fn wake_if_waiting(&mut self, t: usize, wait: Wait) -> bool {
        let th = &mut self.threads[t];
        if th.run != RunState::Blocked || th.wait != wait || th.wake_listed {
            return false;
        }
        th.wake_listed = true;
        th.woken_by_timer = false;
        let now = self.now();
        self.events
            .schedule(now, crate::engine::Event::Wake { thread: t as u32 });
        true
    }

    /// Wakes a blocked thread: what it does next depends on what it waited
    /// for and on why it was woken.
    pub(crate) fn wake(&mut self, t: usize, exiting_irq: Option<usize>) {
        if self.selector.is_some() && self.threads[t].run == RunState::Blocked {
            self.select_observe_idle(t);
        }
        let rtu = match self.threads[t].wait {
            Wait::Sync | Wait::Sleep | Wait::FioSleep
                if self.threads[t].run == RunState::Blocked =>
            {
                self.thread_cost(t, self.costs.return_to_user)
            }
            _ => self.costs.return_to_user,
        };
        let th = &mut self.threads[t];
        th.wake_listed = false;
        if th.run != RunState::Blocked {
            return;
        }
        // A completion wake-up cancels a pending timeout and vice versa.
        th.timer_token += 1;
        let by_timer = th.woken_by_timer;
        th.act = match th.wait {
            Wait::Sync => Activity::Burst {
                left: rtu,
                then: Cont::Handed,
            },
            Wait::AioEvents { .. } if by_timer => Activity::Burst {
                left: 0,
                then: Cont::GetEventsTimeout,
            },
            Wait::AioEvents { .. } => Activity::Burst {
                left: 0,
                then: Cont::GetEventsRecheck,
            },
            // Woken by task work, it runs it and looks at the ring: fewer
            // than `min_complete` events, it sleeps again.
            Wait::UringEvents { .. } if self.uring_task_work && !by_timer => Activity::Burst {
                left: 0,
                then: Cont::GetEventsRecheck,
            },
            Wait::UringEvents { .. } => Activity::Burst {
                left: 0,
                then: Cont::GetEventsTimeout,
            },
            // A busy loop (no request slots) sleeps only until its start
            // (a later group, a start delay): it resumes spinning.
            Wait::Sleep if th.prog.iodepth == 0 => Activity::Burst {
                left: rtu,
                then: Cont::Busy,
            },
            Wait::Sleep => Activity::Burst {
                left: rtu,
                then: Cont::Issue,
            },
            Wait::FioSleep => Activity::Burst {
                left: rtu,
                then: Cont::FioSleepReturn,
            },
            Wait::OffloadIdle | Wait::OffloadFree => Activity::Burst {
                left: rtu,
                then: Cont::Issue,
            },
            // A kernel thread: no return to user space.
            Wait::SqIdle => Activity::Burst {
                left: 0,
                then: Cont::SqWoken,
            },
            Wait::HybridSleep { need } => {
                th.polling_since = self.events.now();
                Activity::Spin { need }
            }
            Wait::Tag => {
                th.tag_retry = true;
                Activity::Burst {
                    left: 0,
                    then: Cont::SubmitNext,
                }
            }
            Wait::PageCache | Wait::PageCacheTimer => Activity::Burst {
                left: rtu,
                then: Cont::PageCache,
            },
            Wait::AppIo => Activity::Burst {
                left: rtu,
                then: Cont::App,
            },
            Wait::Nothing | Wait::Exited => return,
        };
        if let Wait::Sync = th.wait {
            th.handing = 1;
        }
        // Counted here, the one place a blocked thread becomes runnable,
        // whatever woke it; a libaio waiter that rechecks and sleeps
        // again was still woken. From the run's start, as its CPU time is.
        th.counts.wakeups += 1;
        self.make_runnable(t, exiting_irq);
    }
}
