//! The ESX-like completion path (see the module above): the hypervisor
//! core's handler, IPIs, the monitor's entries and its virtual
//! interrupts.

use cint_policy::{Irq, Nanos, Policy};

use super::{VirtEvent, VirtWork};
use crate::engine::Event;
use crate::host::IrqWork;
use crate::world::World;

impl World<'_> {
    /// Starts the layer's periodic timers at the run's start: each
    /// guest's monitor timer (ESX-like) or each credit scheduler's tick
    /// (Xen-like).
    pub(crate) fn virt_start(&mut self) {
        let Some(v) = self.virt.as_ref() else {
            return;
        };
        let (count, period, what) = if v.is_xen {
            (v.credits.len(), v.xen_params.tick, VirtEvent::CreditTick)
        } else if v.is_kvm {
            // The back end arms its timer when its policy needs one.
            (0, 0, VirtEvent::Deadline)
        } else {
            (v.guests.len(), v.costs.monitor_timer, VirtEvent::Tick)
        };
        for i in 0..count {
            self.events.schedule(
                period,
                Event::Virt {
                    guest: i as u32,
                    what,
                },
            );
        }
    }

    /// A timed event of the layer.
    pub(crate) fn on_virt_event(&mut self, g: usize, what: VirtEvent) {
        let Some(v) = self.virt.as_ref() else {
            return;
        };
        if matches!(
            what,
            VirtEvent::CreditTick | VirtEvent::SliceEnd(_) | VirtEvent::Resched
        ) {
            // `g` is the credit scheduler's index here.
            self.xen_event(g, what);
            return;
        }
        match what {
            VirtEvent::Call => return self.kvm_deliver(g),
            VirtEvent::Deadline => return self.kvm_timer(g),
            _ => {}
        }
        let core = v.guests[g].irq_core as usize;
        let work = match what {
            VirtEvent::Ipi => VirtWork::Ipi,
            VirtEvent::Inject => VirtWork::Inject,
            VirtEvent::CreditTick
            | VirtEvent::SliceEnd(_)
            | VirtEvent::Resched
            | VirtEvent::Call
            | VirtEvent::Deadline => return,
            VirtEvent::Tick => {
                let next = self.now() + v.costs.monitor_timer;
                self.events.schedule(
                    next,
                    Event::Virt {
                        guest: g as u32,
                        what: VirtEvent::Tick,
                    },
                );
                VirtWork::Tick
            }
        };
        self.raise(
            core,
            IrqWork::Virt {
                guest: g as u32,
                work,
            },
        );
    }

    /// The physical interrupt of a guests' device queue on a hypervisor
    /// core: every completion goes to its guest's monitor queue (Xen:
    /// dom0's back end pushes it on the guest's ring); then, per guest
    /// touched, an IPI if its policy wants one (ESX-like) or the event
    /// channel's notification (Xen-like). Returns the CPU cost.
    pub(crate) fn vmkernel_handler(&mut self, c: usize, queue: usize, irq: Irq) -> Nanos {
        let mut reaped = std::mem::take(&mut self.cores[c].reaped);
        reaped.clear();
        if let Some(cq) = self.queues[queue].cq.as_mut() {
            cq.reap(irq, |tag, _hint| reaped.push(tag as u32));
        }
        let n = reaped.len() as u64;
        let Some(v) = self.virt.as_mut() else {
            self.cores[c].reaped = reaped;
            return 0;
        };
        let mut touched = std::mem::take(&mut v.touched);
        touched.clear();
        for &r in &reaped {
            let g = v.thread_guest[self.reqs[r as usize].thread as usize];
            v.guests[g as usize].arrived.push(r);
            if !touched.contains(&g) {
                touched.push(g);
            }
        }
        self.cores[c].reaped = reaped;
        let mut cost = v.costs.vmk_irq + n * v.costs.vmk_complete;
        for &g in &touched {
            cost = self.guest_completions(g as usize, cost);
        }
        if let Some(v) = self.virt.as_mut() {
            v.touched = touched;
        }
        self.drain_overflow(queue);
        cost
    }

    /// Guest `g` has new completions in its monitor's queue, posted by a
    /// handler that has spent `cost` so far: the notification or IPI it
    /// gets. Returns the handler's cost with it.
    fn guest_completions(&mut self, g: usize, mut cost: Nanos) -> Nanos {
        let now = self.now();
        let measuring = self.measuring;
        let Some(v) = self.virt.as_mut() else {
            return cost;
        };
        if v.is_xen {
            // dom0's back end pushes the responses and decides the
            // notification at once: no monitor in between.
            let fire = self.monitor_judge(g, false);
            return cost + self.xen_notify(g, fire);
        }
        if v.is_kvm {
            return self.kvm_completions(g, cost);
        }
        let costs = v.costs;
        let guest = &mut v.guests[g];
        // The monitor will look at its queue soon anyway when an IPI or an
        // injection is already under way.
        let wants_ipi = !guest.ipi_pending
            && !guest.inject_pending
            && guest.policy.vic().is_none_or(|vic| vic.ipi_needed(now));
        if wants_ipi {
            guest.ipi_pending = true;
            cost += costs.ipi_send;
            if measuring {
                v.counters.ipis += 1;
            }
            self.events.schedule(
                now + cost + costs.ipi_latency,
                Event::Virt {
                    guest: g as u32,
                    what: VirtEvent::Ipi,
                },
            );
        }
        cost
    }

    /// Interrupt-context work of the layer on core `c`: returns its CPU
    /// cost. A monitor entry costs its exit plus, if a virtual interrupt
    /// goes in, the injection and the guest's handler.
    pub(crate) fn virt_work(&mut self, c: usize, g: usize, work: VirtWork) -> Nanos {
        let Some(v) = self.virt.as_mut() else {
            return 0;
        };
        let costs = v.costs;
        if work == VirtWork::Wake {
            return costs.vcpu_wake + self.inject(c, g);
        }
        let exit = match work {
            VirtWork::Ipi => {
                v.guests[g].ipi_pending = false;
                costs.ipi_exit
            }
            VirtWork::Tick => costs.timer_exit,
            VirtWork::Inject => {
                v.guests[g].inject_pending = false;
                0
            }
            VirtWork::Issue => {
                let guest = &mut v.guests[g];
                guest.issue_pending = false;
                let n = guest.to_issue.len() as u64;
                v.issuing[c].append(&mut guest.to_issue);
                return n * costs.vmm_issue;
            }
            VirtWork::Wake => 0,
        };
        // An injection decided at a guest exit goes in whatever came
        // since; the other entries judge what the hypervisor posted. The
        // timer is "another reason" to run (ALGORITHMS.md section 6): a
        // delivery opportunity; an IPI comes for the new completions.
        let fire = match work {
            VirtWork::Inject => true,
            VirtWork::Tick => self.monitor_judge(g, true),
            _ => self.monitor_judge(g, false),
        };
        if fire {
            exit + self.inject(c, g)
        } else {
            exit
        }
    }

    /// A guest exit for a request guest `g` issued: the monitor runs, and
    /// a virtual interrupt it decides goes in right after.
    pub(crate) fn guest_exit(&mut self, g: usize) {
        if !self.monitor_judge(g, true) {
            return;
        }
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let guest = &mut v.guests[g];
        if guest.inject_pending {
            return;
        }
        guest.inject_pending = true;
        self.events.schedule(
            now,
            Event::Virt {
                guest: g as u32,
                what: VirtEvent::Inject,
            },
        );
    }

    /// The monitor's work at an entry: the delivery opportunity for what
    /// was held before (`opportunity`: the monitor runs for another
    /// reason than these completions: a guest exit, its timer), then the
    /// decision on each completion the hypervisor posted since, which
    /// become visible to the guest. True if a virtual interrupt is to be
    /// injected.
    pub(crate) fn monitor_judge(&mut self, g: usize, opportunity: bool) -> bool {
        let now = self.now();
        let measuring = self.measuring;
        let Some(v) = self.virt.as_mut() else {
            return false;
        };
        let guest = &mut v.guests[g];
        let mut fire = false;
        // Held completions wait in the guest's queue: the monitor's entry
        // is their delivery opportunity. With nothing visible there is
        // nothing to deliver (a later interrupt reaped what was held).
        if opportunity && !guest.visible.is_empty() && !guest.inject_pending {
            fire |= guest.policy.on_opportunity(now).irq().is_some();
        }
        for i in 0..guest.arrived.len() {
            let r = guest.arrived[i];
            let hint = self.reqs[r as usize].hint;
            let mut notify = guest
                .policy
                .on_complete(now, v.vseq[r as usize], hint)
                .irq()
                .is_some();
            if let Some(limit) = v.shared_failsafe {
                // Xen's back end: one count of suppressed responses over
                // all guests; past it, this response is notified.
                if notify {
                    v.failsafe_held = 0;
                } else if v.failsafe_held >= limit {
                    v.failsafe_held = 0;
                    notify = guest
                        .policy
                        .vic_mut()
                        .is_some_and(|vic| vic.failsafe_deliver(now).irq().is_some());
                } else {
                    v.failsafe_held += 1;
                }
            }
            fire |= notify;
            if measuring {
                let (count_up, skip_up) = guest.policy.vic().map_or((1, 1), |vic| vic.ratio());
                v.counters.ratio_sum += f64::from(count_up) / f64::from(skip_up.max(1));
                v.counters.ratio_n += 1;
            }
            guest.visible.push(r);
        }
        guest.arrived.clear();
        fire && !guest.visible.is_empty()
    }

    /// Injects a virtual interrupt into guest `g` on core `c`: the
    /// guest's handler reaps every visible completion. Returns the cost.
    fn inject(&mut self, c: usize, g: usize) -> Nanos {
        let measuring = self.measuring;
        let Some(v) = self.virt.as_mut() else {
            return 0;
        };
        let costs = v.costs;
        if measuring {
            v.counters.virtual_interrupts += 1;
        }
        let mut reaped = std::mem::take(&mut v.guests[g].visible);
        let n = reaped.len() as u64;
        let xen = v.is_xen;
        let wakes = self.hand_reaped(c, &reaped);
        if xen {
            self.xen_reaped(g, &reaped);
        }
        if let Some(k) = self.virt.as_mut().and_then(|v| v.kvm.get_mut(g)) {
            // The driver re-enables callbacks at what it has reaped.
            k.used_event = k.used_idx;
        }
        reaped.clear();
        if let Some(v) = self.virt.as_mut() {
            v.guests[g].visible = reaped;
        }
        costs.inject + costs.guest_irq + n * costs.guest_reap + wakes * self.costs.wakeup
    }

    /// A guest's driver issued request `r` (its register accesses trap
    /// into the monitor): the guest's policy counts it in flight, the
    /// exit is a monitor entry, and the request goes to the hypervisor's
    /// core to be issued. False for a host request (it goes straight to
    /// the device).
    pub(crate) fn virt_divert(&mut self, r: u32) -> bool {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return false;
        };
        let req = &mut self.reqs[r as usize];
        let Some(g) = v.guest_of_thread(req.thread as usize) else {
            return false;
        };
        // With the hypervisor now: a tag holder, counted as at the device.
        req.state = crate::world::ReqState::InDevice;
        req.dispatched = now;
        if v.is_xen {
            // The back end's policy counts it once it is on the ring.
            self.xen_push(g, r);
            return true;
        }
        let guest = &mut v.guests[g];
        v.vseq[r as usize] = guest.policy.on_submit(now, req.hint);
        guest.to_issue.push(r);
        let start = !guest.issue_pending;
        guest.issue_pending = true;
        let core = guest.vmk_core as usize;
        if v.is_kvm {
            // The doorbell's exit goes to the back end's ioeventfd, not
            // to a monitor that could deliver anything.
            self.kvm_rearm(g);
        } else {
            self.guest_exit(g);
        }
        if start {
            self.raise(
                core,
                IrqWork::Virt {
                    guest: g as u32,
                    work: VirtWork::Issue,
                },
            );
        }
        true
    }

    /// An interrupt-context segment ends on core `c`: the requests whose
    /// hypervisor issue path it ran reach the device.
    pub(crate) fn virt_finish(&mut self, c: usize) {
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        if v.issuing[c].is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut v.issuing[c]);
        for &r in &batch {
            self.enter_device(r);
        }
        batch.clear();
        if let Some(v) = self.virt.as_mut() {
            v.issuing[c] = batch;
        }
    }

    /// The issue path of one request of thread `t` inside its guest, if
    /// it is a guest's (it replaces the host's block-layer path).
    #[inline]
    pub(crate) fn guest_request_path(&self, t: usize) -> Option<Nanos> {
        let v = self.virt.as_ref()?;
        v.guest_of_thread(t).map(|_| v.costs.guest_issue)
    }

    /// Guests' completions still undelivered at the end of the run,
    /// where the oldest waited at least `notable`: how many, since when,
    /// and what they wait for.
    pub(crate) fn virt_held_notes(&self, strategy: &str, notable: Nanos) -> Vec<String> {
        let Some(v) = self.virt.as_ref() else {
            return Vec::new();
        };
        let now = self.now();
        let mut notes = Vec::new();
        for (g, guest) in v.guests.iter().enumerate() {
            let waiting = guest.arrived.iter().chain(&guest.visible);
            let (n, oldest) = waiting.fold((0u64, Nanos::MAX), |(n, t), &r| {
                (n + 1, t.min(self.reqs[r as usize].posted_at))
            });
            if n == 0 || now.saturating_sub(oldest) < notable {
                continue;
            }
            let why = match v.xen.get(g) {
                Some(x) if x.upcall_pending => format!(
                    "their upcall waits for the guest's vCPU, {} under the credit scheduler",
                    match x.state {
                        super::xen::VState::Running => "running",
                        super::xen::VState::Runnable => "waiting for the core",
                        super::xen::VState::Blocked => "blocked",
                    }
                ),
                Some(_) => "the back end's policy held their notification".to_string(),
                None => match v.kvm.get(g) {
                    Some(k) if k.posted_pending => {
                        "their posted interrupt waits for the preempted vCPU to run".to_string()
                    }
                    Some(_) => "the back end's policy held their call".to_string(),
                    None => "the guest's policy held them until a later delivery or the \
                             monitor's next entry"
                        .to_string(),
                },
            };
            notes.push(format!(
                "strategy '{strategy}': guest '{}' had {n} completion{} undelivered at the end \
                 of the run, the oldest for {:.3} ms: {why}",
                self.sc.virt.guests[g].name,
                if n == 1 { "" } else { "s" },
                now.saturating_sub(oldest) as f64 / 1e6
            ));
        }
        notes
    }

    /// The layer's figures for the measured window, if it exists.
    pub(crate) fn virt_summary(&self, secs: f64) -> Option<cint_report::VirtResult> {
        let v = self.virt.as_ref()?;
        let mut ns: u64 = v
            .io_cores
            .iter()
            .map(|&c| self.cores[c as usize].irq_ns)
            .sum();
        let mut ios = 0u64;
        for (t, th) in self.threads.iter().enumerate() {
            // I/O jobs and the guest kernel's threads (writeback).
            let io = self
                .sc
                .jobs
                .get(th.job as usize)
                .is_none_or(|job| matches!(job.work, cint_scenario::Work::Io(_)));
            if io && v.guest_of_thread(t).is_some() {
                ns += th.counts.cpu_ns;
            }
        }
        for (j, job) in self.sc.jobs.iter().enumerate() {
            if job.guest.is_some() {
                ios += self.jobs[j].ios;
            }
        }
        Some(v.result(secs, ns, ios))
    }
}
