//! The Xen-like hypervisor (docs/VIRT.md): guests' vCPUs share physical
//! cores under the credit scheduler (Xen 4.6's `sched_credit.c`), and a
//! guest's block requests go through a ring to dom0's back end on cores
//! of its own.
//!
//! **Credit scheduler**, per physical core: priorities BOOST > UNDER >
//! OVER, first come first served within one; a vCPU runs for a slice
//! (30 ms) unless a vCPU of higher priority wakes, which preempts it once
//! it has run the rate limit (1 ms). Every tick (10 ms) the running vCPU
//! pays 100 credits and loses a BOOST; every third tick each vCPU of the
//! core earns 300 / (its vCPUs) credits, capped at 300, and its priority
//! follows its credit (UNDER while positive). A vCPU woken from blocked
//! while UNDER is BOOSTed. Inside a running vCPU, the guest's threads
//! run under the host's CFS-like scheduler; a vCPU with no runnable
//! thread blocks. On every switch the guests' interrupt policies hear
//! their vCPU's run state and slice end (`Policy::on_schedule`).
//!
//! **Block ring.** The front end pushes a request on the guest's ring
//! (`ring_slots`; a full ring makes it wait for a consumed response),
//! which notifies dom0's back end; the back end issues it to the device.
//! The device interrupts a dom0 core; the back end pushes the response
//! and notifies the guest through its event channel (`evtchn_send_cycles`)
//! only if the guest's policy says so: a vIC policy decides alone (the
//! coalescing back end replaces the ring's notification rule with it),
//! any other only when the front end's response event asks for one (it
//! re-arms it after consuming, so responses pushed meanwhile need none:
//! the ring's own coalescing while the guest does not run). The event
//! runs the guest's upcall at once if its vCPU runs, when it next runs
//! if it waits, and wakes it (BOOST) if it is blocked. The upcall reaps
//! every pushed response; `frontend_lat_ns` is from a request's push to
//! the upcall that reaps its response.

use cint_policy::{GuestSchedule, Nanos, Policy};

use super::{VirtEvent, VirtWork};
use crate::engine::Event;
use crate::host::{IrqWork, Segment};
use crate::world::World;

/// Credits a running vCPU pays per tick, and a core hands out per
/// accounting period (Xen's `CSCHED_CREDITS_PER_TICK` and
/// `CSCHED_CREDITS_PER_ACCT`).
const CREDITS_PER_TICK: i64 = 100;
const CREDITS_PER_ACCT: i64 = 300;
/// Ticks per accounting period (Xen 4.6: 3 ticks of 10 ms).
const TICKS_PER_ACCT: u64 = 3;

/// A vCPU's priority; the larger, the earlier it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Prio {
    Over,
    Under,
    Boost,
}

/// A vCPU's state under the credit scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VState {
    Running,
    Runnable,
    Blocked,
}

/// A guest's vCPU and its block front end.
#[derive(Clone, Debug)]
pub(crate) struct XenGuest {
    pub pcpu: usize,
    pub credit: i64,
    pub prio: Prio,
    pub state: VState,
    /// An event is pending: the upcall runs when the vCPU runs.
    pub upcall_pending: bool,
    /// The front end's response event: it wants a notification.
    pub armed: bool,
    /// Ring slots holding a request or an unconsumed response.
    pub ring_used: u32,
    /// Requests waiting for a ring slot.
    pub ring_wait: std::collections::VecDeque<u32>,
}

/// One physical core's credit scheduler.
#[derive(Clone, Debug)]
pub(crate) struct Credit {
    pub core: u32,
    /// Its vCPUs (guests), in scenario order.
    pub guests: Vec<u32>,
    /// Runnable vCPUs, in the order they became runnable.
    pub runq: Vec<u32>,
    pub current: Option<u32>,
    /// When the current vCPU was switched in.
    pub since: Nanos,
    pub slice_end: Nanos,
    pub token: u64,
    /// A woken vCPU that is to preempt the current one.
    pub next: Option<u32>,
    pub ticks: u64,
}

/// Enrolls guest `g`'s vCPU, on physical `core`, in that core's credit
/// scheduler (made on first use): runnable, UNDER, no credit yet.
pub(crate) fn enroll(
    credits: &mut Vec<Credit>,
    pcpu_of_core: &mut [u32],
    core: u32,
    g: u32,
) -> XenGuest {
    let k = match pcpu_of_core[core as usize] {
        super::HOST => {
            pcpu_of_core[core as usize] = credits.len() as u32;
            credits.push(Credit {
                core,
                guests: Vec::new(),
                runq: Vec::new(),
                current: None,
                since: 0,
                slice_end: 0,
                token: 0,
                next: None,
                ticks: 0,
            });
            credits.len() - 1
        }
        k => k as usize,
    };
    credits[k].guests.push(g);
    credits[k].runq.push(g);
    XenGuest {
        pcpu: k,
        credit: 0,
        prio: Prio::Under,
        state: VState::Runnable,
        upcall_pending: false,
        armed: true,
        ring_used: 0,
        ring_wait: std::collections::VecDeque::new(),
    }
}

impl World<'_> {
    /// The rq position of the thread core `c` runs next: the running
    /// vCPU's thread of least virtual runtime; a vCPU without one blocks
    /// and the next runnable vCPU is switched in.
    pub(crate) fn xen_pick(&mut self, c: usize) -> Option<usize> {
        let k = self.virt.as_ref()?.pcpu_of_core[c] as usize;
        loop {
            let v = self.virt.as_mut()?;
            if let Some(g) = v.credits[k].next.take() {
                self.xen_switch(k, Some(g));
                continue;
            }
            let current = v.credits[k].current;
            if let Some(g) = current {
                let (core, threads) = (&self.cores[c], &self.threads);
                let thread_guest = &v.thread_guest;
                let pos = (0..core.rq.len())
                    .filter(|&i| thread_guest[core.rq[i] as usize] == g)
                    .min_by_key(|&i| (threads[core.rq[i] as usize].vruntime, core.rq[i]));
                if pos.is_some() {
                    return pos;
                }
                if v.xen[g as usize].upcall_pending {
                    // Its upcall runs first; its threads may follow.
                    return None;
                }
                v.xen[g as usize].state = VState::Blocked;
                self.xen_switch(k, None);
            }
            let v = self.virt.as_ref()?;
            let credit = &v.credits[k];
            let best = credit
                .runq
                .iter()
                .enumerate()
                .max_by_key(|&(i, &g)| (v.xen[g as usize].prio, std::cmp::Reverse(i)))
                .map(|(_, &g)| g);
            match best {
                Some(g) => self.xen_switch(k, Some(g)),
                None => return None,
            }
        }
    }

    /// Switches physical core `k`'s credit scheduler to vCPU `to` (or to
    /// none): the old one goes back to the run queue if still runnable,
    /// the policies hear of both, a pending upcall goes in.
    fn xen_switch(&mut self, k: usize, to: Option<u32>) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let slice = v.xen_params.slice;
        let credit = &mut v.credits[k];
        let core = credit.core as usize;
        if let Some(old) = credit.current.take() {
            let x = &mut v.xen[old as usize];
            if x.state == VState::Running {
                x.state = VState::Runnable;
                credit.runq.push(old);
            }
            v.guests[old as usize].policy.on_schedule(
                now,
                GuestSchedule {
                    running: false,
                    slice_end: None,
                },
            );
        }
        credit.token += 1;
        let Some(g) = to else {
            return;
        };
        credit.runq.retain(|&x| x != g);
        credit.current = Some(g);
        credit.since = now;
        credit.slice_end = now + slice;
        let token = credit.token;
        v.xen[g as usize].state = VState::Running;
        v.guests[g as usize].policy.on_schedule(
            now,
            GuestSchedule {
                running: true,
                slice_end: Some(now + slice),
            },
        );
        let upcall = v.xen[g as usize].upcall_pending;
        self.events.schedule(
            now + slice,
            Event::Virt {
                guest: k as u32,
                what: VirtEvent::SliceEnd(token as u32),
            },
        );
        if upcall {
            // Queued without dispatching: the core's dispatch is the
            // caller, and runs it next.
            self.cores[core].irq_pending.push_back(IrqWork::Virt {
                guest: g,
                work: VirtWork::Inject,
            });
        }
    }

    /// Thread `t` on core `c` became runnable: its vCPU wakes if it was
    /// blocked (BOOSTed if UNDER) and preempts the running vCPU if its
    /// priority is higher. True if the scheduler took over the decision.
    pub(crate) fn xen_woken(&mut self, t: usize, c: usize, deferred: bool) -> bool {
        let Some(v) = self.virt.as_ref() else {
            return false;
        };
        if !v.schedules(c) {
            return false;
        }
        let g = v.thread_guest[t];
        self.xen_wake_vcpu(g as usize);
        let k = self.virt.as_ref().map_or(0, |v| v.pcpu_of_core[c] as usize);
        let Some(v) = self.virt.as_ref() else {
            return false;
        };
        let credit = &v.credits[k];
        if credit.current == Some(g) || credit.current.is_none() {
            // Its own vCPU runs (CFS decides among its threads), or the
            // core is free (its dispatch picks).
            return false;
        }
        if credit.next == Some(g) {
            self.cores[c].need_resched = true;
            if !deferred && matches!(self.cores[c].seg, Some(Segment { irq: false, .. })) {
                self.interrupt_thread_segment(c);
                self.dispatch(c);
            }
        }
        true
    }

    /// Guest `g`'s vCPU has work: a blocked vCPU becomes runnable
    /// (BOOSTed from UNDER) and, if it outranks the running vCPU that has
    /// run its rate limit, is marked to preempt it.
    fn xen_wake_vcpu(&mut self, g: usize) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let rate_limit = v.xen_params.rate_limit;
        let x = &mut v.xen[g];
        let k = x.pcpu;
        if x.state == VState::Blocked {
            x.state = VState::Runnable;
            if x.prio == Prio::Under {
                x.prio = Prio::Boost;
            }
            v.credits[k].runq.push(g as u32);
        }
        let prio = v.xen[g].prio;
        let credit = &mut v.credits[k];
        let Some(cur) = credit.current else {
            return;
        };
        if cur as usize == g || v.xen[g].state != VState::Runnable {
            return;
        }
        if prio > v.xen[cur as usize].prio {
            if now.saturating_sub(credit.since) >= rate_limit {
                credit.next = Some(g as u32);
            } else {
                // Xen re-decides once the rate limit has passed.
                let at = credit.since + rate_limit;
                self.events.schedule(
                    at,
                    Event::Virt {
                        guest: k as u32,
                        what: VirtEvent::Resched,
                    },
                );
            }
        }
    }

    /// Physical core `k`'s running vCPU is to give way now: the marked
    /// vCPU (or the scheduler's choice) takes the core.
    fn xen_preempt(&mut self, k: usize) {
        let Some(v) = self.virt.as_ref() else {
            return;
        };
        let c = v.credits[k].core as usize;
        self.cores[c].need_resched = true;
        if matches!(self.cores[c].seg, Some(Segment { irq: false, .. })) {
            self.interrupt_thread_segment(c);
        }
        self.dispatch(c);
    }

    /// The highest-priority runnable vCPU of core `k` other than the
    /// running one, if it is at least `than`.
    fn xen_contender(&self, k: usize, than: Prio) -> Option<u32> {
        let v = self.virt.as_ref()?;
        let credit = &v.credits[k];
        credit
            .runq
            .iter()
            .enumerate()
            .filter(|&(_, &g)| v.xen[g as usize].prio >= than)
            .max_by_key(|&(i, &g)| (v.xen[g as usize].prio, std::cmp::Reverse(i)))
            .map(|(_, &g)| g)
    }

    /// A timed event of a credit scheduler (`k`: its physical core).
    pub(crate) fn xen_event(&mut self, k: usize, what: VirtEvent) {
        let now = self.now();
        match what {
            VirtEvent::SliceEnd(token) => {
                let Some(v) = self.virt.as_ref() else {
                    return;
                };
                let credit = &v.credits[k];
                let Some(cur) = credit.current else {
                    return;
                };
                if credit.token as u32 != token {
                    return;
                }
                let prio = v.xen[cur as usize].prio;
                match self.xen_contender(k, prio) {
                    Some(g) => {
                        if let Some(v) = self.virt.as_mut() {
                            v.credits[k].next = Some(g);
                        }
                        self.xen_preempt(k);
                    }
                    // Nobody else: a new slice for the same vCPU.
                    None => self.xen_renew(k, cur),
                }
            }
            VirtEvent::Resched => {
                let Some(v) = self.virt.as_ref() else {
                    return;
                };
                let Some(cur) = v.credits[k].current else {
                    return;
                };
                let prio = v.xen[cur as usize].prio;
                if let Some(g) = self.xen_contender(k, prio).filter(|&g| {
                    self.virt
                        .as_ref()
                        .is_some_and(|v| v.xen[g as usize].prio > prio)
                }) {
                    if let Some(v) = self.virt.as_mut() {
                        v.credits[k].next = Some(g);
                    }
                    self.xen_preempt(k);
                }
            }
            VirtEvent::CreditTick => {
                self.xen_tick(k);
                let tick = self.virt.as_ref().map_or(0, |v| v.xen_params.tick);
                self.events.schedule(
                    now + tick,
                    Event::Virt {
                        guest: k as u32,
                        what: VirtEvent::CreditTick,
                    },
                );
            }
            _ => {}
        }
    }

    /// A new slice for the running vCPU `g` of core `k`.
    fn xen_renew(&mut self, k: usize, g: u32) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let slice = v.xen_params.slice;
        let credit = &mut v.credits[k];
        credit.token += 1;
        credit.slice_end = now + slice;
        let token = credit.token;
        v.guests[g as usize].policy.on_schedule(
            now,
            GuestSchedule {
                running: true,
                slice_end: Some(now + slice),
            },
        );
        self.events.schedule(
            now + slice,
            Event::Virt {
                guest: k as u32,
                what: VirtEvent::SliceEnd(token as u32),
            },
        );
    }

    /// The accounting tick of core `k`: the running vCPU pays and loses
    /// its BOOST; every third tick credits are handed out and priorities
    /// follow them; a vCPU that now outranks the running one preempts it.
    fn xen_tick(&mut self, k: usize) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let rate_limit = v.xen_params.rate_limit;
        let credit = &mut v.credits[k];
        credit.ticks += 1;
        let acct = credit.ticks % TICKS_PER_ACCT == 0;
        let current = credit.current;
        if let Some(g) = current {
            let x = &mut v.xen[g as usize];
            x.credit -= CREDITS_PER_TICK;
            if x.prio == Prio::Boost {
                x.prio = Prio::Under;
            }
        }
        if acct {
            let share = CREDITS_PER_ACCT / v.credits[k].guests.len().max(1) as i64;
            for &g in &v.credits[k].guests {
                let x = &mut v.xen[g as usize];
                x.credit = (x.credit + share).clamp(-CREDITS_PER_ACCT, CREDITS_PER_ACCT);
                // A BOOST waiting to run keeps it until it runs.
                if x.prio != Prio::Boost || x.state == VState::Running {
                    x.prio = if x.credit > 0 {
                        Prio::Under
                    } else {
                        Prio::Over
                    };
                }
            }
        }
        let Some(cur) = current else {
            return;
        };
        let since = v.credits[k].since;
        let prio = v.xen[cur as usize].prio;
        let outranked = self.xen_contender(k, prio).filter(|&g| {
            self.virt
                .as_ref()
                .is_some_and(|v| v.xen[g as usize].prio > prio)
        });
        if let Some(g) = outranked {
            if now.saturating_sub(since) >= rate_limit {
                if let Some(v) = self.virt.as_mut() {
                    v.credits[k].next = Some(g);
                }
                self.xen_preempt(k);
            }
        }
    }

    /// Guest `g`'s front end issued request `r`: on the ring, or waiting
    /// for a slot.
    pub(crate) fn xen_push(&mut self, g: usize, r: u32) {
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let slots = v.xen_params.ring_slots;
        let x = &mut v.xen[g];
        if x.ring_used >= slots {
            x.ring_wait.push_back(r);
            return;
        }
        x.ring_used += 1;
        self.xen_to_backend(g, r);
    }

    /// Request `r` is on guest `g`'s ring: the back end is notified (its
    /// issue path on dom0's core), unless it is already at work.
    fn xen_to_backend(&mut self, g: usize, r: u32) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        v.pushed[r as usize] = now;
        let guest = &mut v.guests[g];
        // Commands in flight, for the back end's policy, are the ring's.
        let hint = self.reqs[r as usize].hint;
        v.vseq[r as usize] = guest.policy.on_submit(now, hint);
        guest.to_issue.push(r);
        if guest.issue_pending {
            return;
        }
        guest.issue_pending = true;
        let core = guest.vmk_core as usize;
        self.raise(
            core,
            IrqWork::Virt {
                guest: g as u32,
                work: VirtWork::Issue,
            },
        );
    }

    /// The back end pushed responses for guest `g` at `now`; `fire`: its
    /// policy wants a notification. Returns the event's cost on dom0's
    /// core (0 without one).
    pub(crate) fn xen_notify(&mut self, g: usize, fire: bool) -> Nanos {
        let Some(v) = self.virt.as_mut() else {
            return 0;
        };
        let vic = v.guests[g].policy.vic().is_some();
        let x = &mut v.xen[g];
        let notify = if vic { fire } else { fire && x.armed };
        if !notify {
            return 0;
        }
        x.armed = false;
        let cost = v.costs.evtchn_send;
        if x.upcall_pending {
            return cost;
        }
        x.upcall_pending = true;
        let k = x.pcpu;
        match x.state {
            VState::Running => {
                let core = v.credits[k].core as usize;
                self.raise(
                    core,
                    IrqWork::Virt {
                        guest: g as u32,
                        work: VirtWork::Inject,
                    },
                );
            }
            // It goes in when the vCPU next runs.
            VState::Runnable => {}
            VState::Blocked => {
                self.xen_wake_vcpu(g);
                let Some(v) = self.virt.as_ref() else {
                    return cost;
                };
                let credit = &v.credits[k];
                let c = credit.core as usize;
                if credit.current.is_none() {
                    if self.cores[c].seg.is_none() {
                        self.dispatch(c);
                    }
                } else if credit.next == Some(g as u32) {
                    self.xen_preempt(k);
                }
            }
        }
        cost
    }

    /// The upcall of guest `g` reaped `reaped`: their front-end latency,
    /// the response event re-armed, their ring slots freed for requests
    /// that waited.
    pub(crate) fn xen_reaped(&mut self, g: usize, reaped: &[u32]) {
        let now = self.now();
        let measuring = self.measuring;
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        v.xen[g].upcall_pending = false;
        for &r in reaped {
            if measuring {
                v.frontend_lat
                    .record(now.saturating_sub(v.pushed[r as usize]));
            }
        }
        let x = &mut v.xen[g];
        x.armed = true;
        x.ring_used = x.ring_used.saturating_sub(reaped.len() as u32);
        self.xen_refill(g);
    }

    /// Moves requests that waited for ring slots onto the ring.
    fn xen_refill(&mut self, g: usize) {
        loop {
            let Some(v) = self.virt.as_mut() else {
                return;
            };
            let slots = v.xen_params.ring_slots;
            let x = &mut v.xen[g];
            if x.ring_used >= slots {
                return;
            }
            let Some(r) = x.ring_wait.pop_front() else {
                return;
            };
            x.ring_used += 1;
            self.xen_to_backend(g, r);
        }
    }
}
