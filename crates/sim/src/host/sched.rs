//! Executing work on a core, and the CFS-like scheduler.
//!
//! A core runs, in this order of precedence: pending interrupt handlers
//! (FIFO, never nested), then its current thread. A thread's work is a
//! sequence of CPU bursts with continuations ([`crate::world::Activity`]).
//! An interrupt preempts the thread's burst; the remainder resumes after
//! the handler unless the handler woke a thread that should preempt it.
//!
//! Scheduling follows Linux CFS with equal weights: the runnable thread with
//! the smallest virtual runtime runs; a woken thread is placed no earlier
//! than `min_vruntime - sched_latency / 2` and preempts the running one if
//! it is ahead by more than the wake-up granularity; a running thread with
//! competitors is preempted at the first scheduler tick (`host.tick`)
//! at which it has run longer than its slice (`sched_latency /
//! nr_running`, at least the minimum granularity), or, after the minimum
//! granularity, is ahead of the leftmost thread by more than its slice
//! (Linux 5.0's `check_preempt_tick()`). As in Linux 5.0's
//! `pick_next_entity`, the woken thread that preempted (the next buddy)
//! and, on a run queue of `sched_nr_latency` threads, the one it preempted
//! (the last buddy) are picked before the leftmost thread if they trail it
//! by no more than the wake-up granularity. The settings are those of the
//! kernel that schedules the thread ([`World::cfs_of`]): the host's, as its
//! profile states them after the kernel's boot-time scaling, or a guest
//! kernel's, scaled by the guest's vCPUs. Threads in CFS task groups
//! (`sched_group`) are scheduled through their groups' entities
//! ([`crate::host::group`]). Every switch to a thread
//! that did not own the core costs CPU time: `context_switch_idle` back to
//! the thread that last ran on the core (its address space still loaded),
//! `context_switch` to any other.
//!
//! Interrupt time is accounted as the reference kernel does (Linux 5.0.8
//! built with `CONFIG_TICK_CPU_ACCOUNTING` and `CONFIG_IRQ_TIME_ACCOUNTING`,
//! the cinterrupts artifact's kernel configuration): it belongs to the
//! core, never to the thread it interrupted, neither to that thread's CPU
//! time nor to its virtual runtime (the runqueue's task clock excludes
//! interrupt time). docs/HOST-COSTS.md has the evidence. A host profile
//! with `irq_time_accounting = false` models a kernel without that option:
//! the handler's time is charged to the thread that owns the core, in its
//! CPU time and its virtual runtime (on an idle core it is idle time).

use cint_policy::Nanos;
use cint_scenario::profiles::{linux_cfs, CfsSettings};
use cint_scenario::units::Duration;

use crate::engine::Event;
use crate::host::group::{calc_delta, scaled, NICE_0};
use crate::host::Segment;
use crate::world::{Activity, Cont, RunState, Wait, World};

impl World<'_> {
    /// The CFS settings thread `t` runs under: the host kernel's (the
    /// profile's, as the scenario sets them), or, in a guest, the guest
    /// kernel's: Linux's defaults scaled at its boot by its own vCPU
    /// count ([`linux_cfs`]), not the host's CPUs.
    #[inline]
    pub(crate) fn cfs_of(&self, t: usize) -> CfsSettings {
        if let Some(g) = self.virt.as_ref().and_then(|v| v.guest_of_thread(t)) {
            if let Some(guest) = self.sc.virt.guests.get(g) {
                return linux_cfs(guest.vcpus());
            }
        }
        CfsSettings {
            latency: Duration(self.costs.sched_latency),
            min_granularity: Duration(self.costs.sched_min_granularity),
            wakeup_granularity: Duration(self.costs.sched_wakeup_granularity),
        }
    }

    /// Charges the executing segment's time up to now to its owner.
    pub(crate) fn charge(&mut self, c: usize) {
        let now = self.now();
        let core = &mut self.cores[c];
        let Some(seg) = core.seg.as_mut() else {
            return;
        };
        let elapsed = now - seg.start;
        seg.start = now;
        if seg.irq {
            core.irq_ns += elapsed;
            // CONFIG_IRQ_TIME_ACCOUNTING (the reference kernel's config):
            // interrupt time is the core's, not the interrupted thread's,
            // neither in its CPU time nor in its virtual runtime. Without
            // it the runqueue's task clock runs on through the handler, so
            // the thread that owns the core is charged for it in both.
            if self.irq_time_accounting {
                self.irq_time_groups(c, elapsed);
            } else if let Some(t) = core.current {
                core.irq_charged_ns += elapsed;
                let th = &mut self.threads[t as usize];
                th.counts.cpu_ns += elapsed;
                th.sum_exec += elapsed;
                th.vruntime += elapsed;
                if let Some(g) = th.sched_group {
                    self.charge_group(c, g, elapsed);
                }
            }
            return;
        }
        core.thread_ns += elapsed;
        // Beside a busy SMT sibling the burst's work shrinks slower than
        // the clock runs: what is left is the time to its end, unstretched.
        let smt_left = match (seg.end, seg.stretch) {
            (Some(end), stretch) if stretch != crate::host::smt::UNSTRETCHED => {
                Some(crate::host::smt::work(end.saturating_sub(now), stretch))
            }
            _ => None,
        };
        if let Some(t) = core.current {
            let th = &mut self.threads[t as usize];
            th.counts.cpu_ns += elapsed;
            th.sum_exec += elapsed;
            th.counts.usr_ns += th.user_share(elapsed);
            th.vruntime += elapsed;
            if let Activity::Burst { left, .. } = &mut th.act {
                *left = smt_left.unwrap_or_else(|| left.saturating_sub(elapsed));
            }
            if let Some(g) = th.sched_group {
                self.charge_group(c, g, elapsed);
            }
        }
    }

    /// Stops the current thread's segment (an IRQ or a preemption takes
    /// the core); its remaining burst is kept.
    pub(crate) fn interrupt_thread_segment(&mut self, c: usize) {
        if matches!(self.cores[c].seg, Some(Segment { irq: false, .. })) {
            self.charge(c);
            let core = &mut self.cores[c];
            core.seg = None;
            core.token += 1;
        }
    }

    /// Starts the next piece of work on an unoccupied core, or idles it.
    pub(crate) fn dispatch(&mut self, c: usize) {
        loop {
            let now = self.now();
            if self.cores[c].seg.is_some() || self.power_holds(c) {
                return;
            }
            if let Some(work) = self.cores[c].irq_pending.pop_front() {
                self.cores[c].leave_idle(now);
                self.start_irq(c, work);
                return;
            }
            if (self.cores[c].need_resched || self.cores[c].current.is_none()) && !self.pick_next(c)
            {
                // A vCPU switched in with only its upcall to run.
                if !self.cores[c].irq_pending.is_empty() {
                    continue;
                }
                let core = &mut self.cores[c];
                if core.idle_since.is_none() {
                    core.idle_since = Some(now);
                }
                self.power_idle(c);
                self.smt_note(c);
                return;
            }
            // A KVM vCPU switched in with a posted interrupt waiting.
            if self.virt.as_ref().is_some_and(|v| v.is_kvm) && !self.cores[c].irq_pending.is_empty()
            {
                continue;
            }
            let Some(t) = self.cores[c].current else {
                return;
            };
            let ti = t as usize;
            match self.threads[ti].act {
                Activity::Burst { left: 0, then } => {
                    self.threads[ti].act = Activity::Busy;
                    self.cont(ti, then);
                    continue;
                }
                Activity::Burst { left, .. } => {
                    self.start_thread_segment(c, Some(left));
                    return;
                }
                Activity::Spin { need } => {
                    let posted = self.threads[ti].posted.len() as u64;
                    if posted >= u64::from(need) {
                        // The poll loop's next iteration sees the entries;
                        // a ring's user-space loop reads them at its reap
                        // call's cost per event.
                        let cost = if self.threads[ti].prog.sqpoll {
                            0
                        } else {
                            self.costs.poll_iteration + posted * self.costs.irq_reap_entry
                        };
                        let cost = self.thread_cost(ti, cost);
                        self.threads[ti].act = Activity::Burst {
                            left: cost,
                            then: Cont::PollReaped,
                        };
                        continue;
                    }
                    self.start_thread_segment(c, None);
                    return;
                }
                Activity::Busy => {
                    if self.burner_stops(ti) {
                        continue;
                    }
                    self.start_thread_segment(c, None);
                    return;
                }
            }
        }
    }

    /// Runs the current thread on core `c`: `work` nanoseconds of its
    /// burst (stretched by busy SMT siblings), or open-ended with `None`.
    fn start_thread_segment(&mut self, c: usize, work: Option<Nanos>) {
        let now = self.now();
        let stretch = self.smt_stretch(c);
        let end = work.map(|w| now + crate::host::smt::wall(w, stretch));
        let core = &mut self.cores[c];
        core.leave_idle(now);
        core.token += 1;
        core.seg = Some(Segment {
            start: now,
            irq: false,
            end,
            stretch,
        });
        if let Some(end) = end {
            let token = core.token;
            self.events.schedule(
                end,
                Event::CoreDone {
                    core: c as u32,
                    token,
                },
            );
        }
        self.power_run(c, false);
        self.smt_note(c);
    }

    /// Picks the thread to run; false if none is runnable.
    fn pick_next(&mut self, c: usize) -> bool {
        let core = &mut self.cores[c];
        core.need_resched = false;
        let prev = core.current.take();
        if let Some(p) = prev {
            self.threads[p as usize].run = RunState::Runnable;
            core.rq.push(p);
        }
        // Under a hypervisor's time-slice scheduler (crate::virt), only
        // the running vCPU's threads may run on the core.
        let pos = if self.virt.as_ref().is_some_and(|v| v.schedules(c)) {
            self.xen_pick(c)
        } else if self.task_groups.is_some() {
            self.group_pick(c)
        } else {
            let (core, threads) = (&self.cores[c], &self.threads);
            (0..core.rq.len())
                .min_by_key(|&i| (threads[core.rq[i] as usize].vruntime, core.rq[i]))
                .map(|left| self.buddy_or(c, left))
        };
        let Some(pos) = pos else {
            self.group_picked(c, None);
            return false;
        };
        let core = &mut self.cores[c];
        let next = core.rq.swap_remove(pos);
        core.clear_buddy(next);
        core.current = Some(next);
        let th = &mut self.threads[next as usize];
        th.run = RunState::Running;
        if prev != Some(next) {
            // set_next_entity(); a thread picked again after its slice
            // keeps counting it (pick_next_task_fair() under
            // CONFIG_FAIR_GROUP_SCHED, the reference kernel's, sets
            // nothing when the task does not change).
            th.prev_sum_exec = th.sum_exec;
            core.ctx_switches += 1;
            th.counts.ctx_switches += 1;
            // Back to the thread whose address space the core still has
            // loaded is cheaper than a switch to another process.
            let cs = if core.last_ran == Some(next) {
                self.costs.context_switch_idle
            } else {
                self.costs.context_switch
            };
            let cs = self.thread_cost(next as usize, cs);
            let th = &mut self.threads[next as usize];
            th.act = match th.act {
                Activity::Burst { left, then } => Activity::Burst {
                    left: left + cs,
                    then,
                },
                Activity::Spin { need } => Activity::Burst {
                    left: cs,
                    then: Cont::Spin(need),
                },
                Activity::Busy => Activity::Burst {
                    left: cs,
                    then: Cont::Busy,
                },
            };
        }
        self.cores[c].last_ran = Some(next);
        self.group_picked(c, Some(next));
        self.update_min_vruntime(c);
        self.arm_slice(c);
        if self.virt.is_some() {
            // A preempted KVM vCPU's posted interrupt goes in first.
            self.kvm_switched_in(c, next);
        }
        true
    }

    /// CFS's `pick_next_entity`: the leftmost thread (run-queue position
    /// `left`), unless a buddy trails it by no more than the wake-up
    /// granularity (`wakeup_preempt_entity(buddy, left) < 1`); the next
    /// buddy wins over the last.
    fn buddy_or(&self, c: usize, left: usize) -> usize {
        let core = &self.cores[c];
        if core.next_buddy.is_none() && core.last_buddy.is_none() {
            return left;
        }
        let left_v = self.threads[core.rq[left] as usize].vruntime;
        let mut pick = left;
        for b in [core.last_buddy, core.next_buddy].into_iter().flatten() {
            let Some(i) = core.rq.iter().position(|&x| x == b) else {
                continue;
            };
            let gran = self.cfs_of(b as usize).wakeup_granularity.0;
            if self.threads[b as usize].vruntime <= left_v + gran {
                pick = i;
            }
        }
        pick
    }

    #[inline]
    fn update_min_vruntime(&mut self, c: usize) {
        if self.task_groups.is_some() {
            self.group_update_min_vruntime(c);
            return;
        }
        let core = &self.cores[c];
        let curr = core.current.map(|t| self.threads[t as usize].vruntime);
        let left = core
            .rq
            .iter()
            .map(|&t| self.threads[t as usize].vruntime)
            .min();
        let candidate = match (curr, left) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
        let core = &mut self.cores[c];
        core.min_vruntime = core.min_vruntime.max(candidate);
    }

    /// `check_preempt_tick()` on core `c` now: what a scheduler tick
    /// makes of the current thread, if it has competitors.
    fn tick_check(&self, c: usize) -> Option<TickCheck> {
        if self.task_groups.is_some() {
            return self.group_tick_check(c);
        }
        let core = &self.cores[c];
        let t = core.current? as usize;
        // Under a hypervisor's time-slice scheduler the core's queue holds
        // every guest's threads; the running one's kernel sees its own.
        let guest = self.virt.as_ref().filter(|v| v.schedules(c));
        let (mut nr, mut left) = (1u64, None);
        for &x in &core.rq {
            if guest.is_none_or(|v| v.thread_guest[x as usize] == v.thread_guest[t]) {
                nr += 1;
                let v = self.threads[x as usize].vruntime;
                left = Some(left.map_or(v, |l: u64| l.min(v)));
            }
        }
        let left = left?;
        let cfs = self.cfs_of(t);
        // sched_slice(): the period times the thread's share of the
        // run queue's weight, in __calc_delta()'s fixed point.
        let ideal = calc_delta(sched_period(&cfs, nr), scaled(NICE_0), scaled(nr * NICE_0));
        let th = &self.threads[t];
        let run = self.uncharged(c);
        Some(check_preempt_tick(
            ideal,
            th.sum_exec + run - th.prev_sum_exec,
            (th.vruntime + run).wrapping_sub(left) as i64,
            cfs.min_granularity.0,
            true,
        ))
    }

    /// The run time core `c`'s current thread has had since it was last
    /// charged (what `update_curr()` would add now): a tick charges it
    /// first, but a guest's policy asks for the slice end at any time.
    pub(crate) fn uncharged(&self, c: usize) -> u64 {
        let core = &self.cores[c];
        match core.seg {
            Some(seg) if core.current.is_some() && (!seg.irq || !self.irq_time_accounting) => {
                self.now() - seg.start
            }
            _ => 0,
        }
    }

    /// The scheduler tick at which core `c`'s current thread's slice
    /// ends at the earliest, if it has competitors: ticks fall on the
    /// multiples of `host.tick` on every core (`skew_tick=0`), and
    /// Linux 5.0 checks the slice only there (`entity_tick()`;
    /// `HRTICK`, which would end it on time, is off by default).
    // Every pick and every wake-up that does not preempt arms a slice:
    // kept inline, as it was before the per-kernel settings.
    #[inline(always)]
    pub(crate) fn slice_end(&self, c: usize) -> Option<Nanos> {
        let run = match self.tick_check(c)? {
            TickCheck::RunsOn(run) => run,
            TickCheck::SliceUsed | TickCheck::Ahead => 0,
        };
        // The run time counts on the task clock, which never runs faster
        // than the wall clock: no earlier tick can find the slice over.
        let now = self.now();
        let tick = self.sc.host.tick.0.max(1);
        Some(((now + run).div_ceil(tick) * tick).max((now / tick + 1) * tick))
    }

    /// Schedules the end of the current thread's slice if it has
    /// competitors.
    fn arm_slice(&mut self, c: usize) {
        let Some(at) = self.slice_end(c) else {
            return;
        };
        let core = &mut self.cores[c];
        core.slice_token += 1;
        let token = core.slice_token;
        self.events.schedule(
            at,
            Event::SliceCheck {
                core: c as u32,
                token,
            },
        );
    }

    /// A scheduler tick on core `c` that may end the current thread's
    /// turn (`entity_tick()`, `check_preempt_tick()`).
    #[inline(always)]
    pub(crate) fn on_slice_check(&mut self, c: usize, token: u64) {
        if self.cores[c].slice_token != token
            || self.cores[c].current.is_none()
            || self.cores[c].rq.is_empty()
        {
            return;
        }
        // update_curr(): the run time up to the tick.
        self.charge(c);
        let Some(t) = self.cores[c].current else {
            return;
        };
        match self.tick_check(c) {
            None => return,
            Some(TickCheck::RunsOn(_)) => {
                self.arm_slice(c);
                return;
            }
            // A used-up slice clears the thread's buddies, so that they
            // do not elect it again.
            Some(TickCheck::SliceUsed) => {
                self.cores[c].clear_buddy(t);
                self.group_slice_over(c, t);
            }
            Some(TickCheck::Ahead) => {}
        }
        self.cores[c].need_resched = true;
        self.interrupt_thread_segment(c);
        self.dispatch(c);
        self.arm_slice(c);
    }

    /// The current thread gives up its core and sleeps.
    pub(crate) fn block(&mut self, t: usize, wait: Wait) {
        let c = self.threads[t].core as usize;
        let th = &mut self.threads[t];
        th.run = RunState::Blocked;
        th.wait = wait;
        let core = &mut self.cores[c];
        debug_assert_eq!(core.current, Some(t as u32));
        core.current = None;
        core.clear_buddy(t as u32);
        self.group_dequeue(c, t);
        self.update_min_vruntime(c);
    }

    /// Makes a blocked thread runnable (its activity already set by the
    /// waker) and decides whether it preempts the running thread. An
    /// interrupt handler finishing on core `exiting_irq` dispatches that
    /// core itself once all its wake-ups are done.
    pub(crate) fn make_runnable(&mut self, t: usize, exiting_irq: Option<usize>) {
        let c = self.threads[t].core as usize;
        self.charge(c);
        self.update_min_vruntime(c);
        let cfs = self.cfs_of(t);
        let floor = self.group_enqueue(c, t, cfs.latency.0 / 2);
        let th = &mut self.threads[t];
        th.vruntime = th.vruntime.max(floor);
        th.run = RunState::Runnable;
        th.wait = Wait::Nothing;
        let woken_v = th.vruntime;
        let core = &mut self.cores[c];
        core.rq.push(t as u32);
        let deferred = exiting_irq == Some(c);
        // A vCPU woken under a hypervisor's time-slice scheduler may
        // preempt the running one (crate::virt).
        if self.virt.is_some() && self.xen_woken(t, c, deferred) {
            return;
        }
        let core = &mut self.cores[c];
        match core.current {
            None => {
                if core.seg.is_none() && !deferred {
                    self.dispatch(c);
                }
            }
            Some(cur) => {
                let cur_v = self.threads[cur as usize].vruntime;
                // check_preempt_wakeup returns early once a preemption is
                // pending: the first wake-up to preempt is the buddy.
                if self.cores[c].need_resched {
                    return;
                }
                let preempts = if self.task_groups.is_some() {
                    self.group_wakeup_preempts(c, cur, t as u32)
                } else if cur_v > woken_v + cfs.wakeup_granularity.0 {
                    let core = &mut self.cores[c];
                    core.next_buddy = Some(t as u32);
                    // LAST_BUDDY only with `sched_nr_latency` threads
                    // runnable (latency over minimum granularity, 8).
                    if core.rq.len() as u64 + 1 >= nr_latency(&cfs) {
                        core.last_buddy = Some(cur);
                    }
                    true
                } else {
                    false
                };
                if preempts {
                    self.cores[c].need_resched = true;
                    if !deferred && matches!(self.cores[c].seg, Some(Segment { irq: false, .. })) {
                        self.interrupt_thread_segment(c);
                        self.dispatch(c);
                    }
                } else {
                    self.arm_slice(c);
                }
            }
        }
    }

    /// The core's segment ended on time.
    #[inline(always)]
    pub(crate) fn on_core_done(&mut self, c: usize, token: u64) {
        if self.cores[c].token != token {
            return;
        }
        if self.cores[c].seg.is_none() {
            // No segment to end: a timer of the energy model's idle states.
            self.on_idle_timer(c);
            return;
        }
        self.charge(c);
        let Some(seg) = self.cores[c].seg.take() else {
            return;
        };
        if seg.irq {
            self.finish_irq(c);
        } else if let Some(t) = self.cores[c].current {
            let ti = t as usize;
            if let Activity::Burst { then, .. } = self.threads[ti].act {
                self.threads[ti].act = Activity::Burst { left: 0, then };
            }
        }
        self.dispatch(c);
    }
}

/// `sched_nr_latency`: the run-queue length from which the period
/// stretches and the last buddy is kept. The kernel's is 8, and
/// `sched_proc_update_handler()` recomputes it as latency over minimum
/// granularity, rounded up, when either setting is written.
pub(crate) fn nr_latency(cfs: &CfsSettings) -> u64 {
    cfs.latency.0.div_ceil(cfs.min_granularity.0.max(1))
}

/// `__sched_period()` (Linux 5.0's `kernel/sched/fair.c`): the latency,
/// or, with more than `sched_nr_latency` entities runnable, the minimum
/// granularity each.
pub(crate) fn sched_period(cfs: &CfsSettings, nr_running: u64) -> u64 {
    if nr_running > nr_latency(cfs) {
        nr_running * cfs.min_granularity.0
    } else {
        cfs.latency.0
    }
}

/// What Linux 5.0's `check_preempt_tick()` (`kernel/sched/fair.c`) makes
/// of one run queue's running entity at a scheduler tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TickCheck {
    /// It ran longer than its slice: preempted, and no longer a buddy.
    SliceUsed,
    /// It ran at least the minimum granularity and is ahead of the
    /// leftmost queued entity by more than its slice: preempted.
    Ahead,
    /// Not preempted, nor by any tick before it has run this much longer
    /// (nanoseconds of its run time).
    RunsOn(u64),
}

/// `check_preempt_tick()` for an entity that has run `ran` since it got
/// the core (`sum_exec_runtime - prev_sum_exec_runtime`), whose slice is
/// `ideal` (`sched_slice()`) and whose virtual runtime is `lag` ahead of
/// the leftmost queued entity's. `lag_grows` is true when its virtual
/// runtime grows as its run time (weight `NICE_0_LOAD`); otherwise the
/// bound on when it may be ahead is only the minimum granularity.
pub(crate) fn check_preempt_tick(
    ideal: u64,
    ran: u64,
    lag: i64,
    min_granularity: u64,
    lag_grows: bool,
) -> TickCheck {
    if ran > ideal {
        return TickCheck::SliceUsed;
    }
    // "a task that missed wakeup preemption by a narrow margin doesn't
    // have to wait for a full slice", but only after the minimum
    // granularity.
    if ran >= min_granularity && lag > 0 && lag as u64 > ideal {
        return TickCheck::Ahead;
    }
    let to_slice = ideal + 1 - ran;
    let to_min = min_granularity.saturating_sub(ran);
    let to_ahead = if lag_grows {
        let behind = (ideal as i64).saturating_add(1).saturating_sub(lag);
        to_min.max(behind.max(0) as u64)
    } else {
        to_min
    };
    TickCheck::RunsOn(to_slice.min(to_ahead))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn cfs(latency: u64, min_granularity: u64) -> CfsSettings {
        CfsSettings {
            latency: Duration(latency),
            min_granularity: Duration(min_granularity),
            wakeup_granularity: Duration(MS),
        }
    }

    /// `__sched_period()` stretches the period only past
    /// `sched_nr_latency`: with 10 ms over 3 ms (4, rounded up) four
    /// entities share 10 ms, not 4 x 3 ms.
    #[test]
    fn the_period_stretches_past_sched_nr_latency() {
        let host = cfs(24 * MS, 3 * MS);
        assert_eq!(nr_latency(&host), 8);
        assert_eq!(sched_period(&host, 8), 24 * MS);
        assert_eq!(sched_period(&host, 9), 27 * MS);
        let odd = cfs(10 * MS, 3 * MS);
        assert_eq!(nr_latency(&odd), 4);
        assert_eq!(sched_period(&odd, 4), 10 * MS);
        assert_eq!(sched_period(&odd, 5), 15 * MS);
    }

    /// `sched_slice()` divides by the run queue's weight through its
    /// 32-bit inverse: half of 24 ms is 6 ns short of 12 ms.
    #[test]
    fn a_slice_is_the_kernels_fixed_point_share() {
        let half = calc_delta(24 * MS, scaled(NICE_0), scaled(2 * NICE_0));
        assert_eq!(half, 11_999_994);
    }

    /// `check_preempt_tick()`'s two tests, in the kernel's order.
    #[test]
    fn a_tick_preempts_past_the_slice_or_a_slice_ahead_of_the_leftmost() {
        let (ideal, gran) = (6 * MS, 3 * MS);
        // Past the slice, whatever the lag.
        assert_eq!(
            check_preempt_tick(ideal, ideal + 1, -5 * MS as i64, gran, true),
            TickCheck::SliceUsed
        );
        // Far ahead of the leftmost, but not yet the minimum granularity
        // run: not before it is.
        assert_eq!(
            check_preempt_tick(ideal, MS, 20 * MS as i64, gran, true),
            TickCheck::RunsOn(2 * MS)
        );
        // Past the minimum granularity and more than a slice ahead.
        assert_eq!(
            check_preempt_tick(ideal, gran, ideal as i64 + 1, gran, true),
            TickCheck::Ahead
        );
        // Exactly a slice ahead is not more.
        assert_eq!(
            check_preempt_tick(ideal, gran, ideal as i64, gran, true),
            TickCheck::RunsOn(1)
        );
        // 4 ms ahead after 3 ms: 2 ms more puts it more than 6 ms ahead,
        // before its slice ends (3 ms more).
        assert_eq!(
            check_preempt_tick(ideal, gran, 4 * MS as i64, gran, true),
            TickCheck::RunsOn(2 * MS + 1)
        );
        // Behind the leftmost: only the slice.
        assert_eq!(
            check_preempt_tick(ideal, gran, -(MS as i64), gran, true),
            TickCheck::RunsOn(3 * MS + 1)
        );
        // A group entity's virtual runtime grows at its weight's rate:
        // every tick past the minimum granularity may find it ahead.
        assert_eq!(
            check_preempt_tick(ideal, gran, 4 * MS as i64, gran, false),
            TickCheck::RunsOn(0)
        );
    }
}
