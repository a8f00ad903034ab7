//! The KVM-like hypervisor (docs/VIRT.md): each vCPU is a host thread
//! on a core of its own, the guest's virtio-blk queue is served by a
//! vhost-user back end on the hypervisor's cores, and the back end's call
//! reaches the vCPU as a posted interrupt.
//!
//! **Submission.** The guest's driver kicks the doorbell (an ioeventfd
//! exit, in `guest_issue_cycles`); the back end pops the request and
//! submits it on its core (`vmm_issue_cycles`).
//!
//! **Completion.** The device interrupts the back end's core; the back
//! end pushes each completion on the used ring and its interrupt policy
//! (the strategy's, through the `Policy` trait) decides whether it wants
//! to call. A wanted call still goes out only if EVENT_IDX lets it:
//! `vring_need_event(used_event, new, old)` (include/uapi/linux/
//! virtio_ring.h), where the driver's `used_event` is the used index it
//! had reaped up to when its handler last re-enabled callbacks. While an
//! interrupt is still unhandled, further completions need no call: its
//! handler reaps them. The policy's deadlines and vIC's opportunity tick
//! (`monitor_timer`, `cint vhost`'s 1 ms) run on the back end's timer.
//!
//! **Delivery** by the target vCPU's state at the call (arch/x86/kvm/vmx/
//! posted_intr.c): running, it takes the notification without an exit;
//! halted, it is still spinning in halt-polling if it halted less than
//! its polling window ago (no wake-up), else it is woken through the
//! wake-up vector (`vcpu_wake_cycles` on its core); preempted (a host
//! thread holds its core while the guest has work), the notification is
//! suppressed until the vCPU runs again. The polling window grows and
//! shrinks as KVM's (virt/kvm/kvm_main.c, `kvm_vcpu_halt`): from nothing
//! to 10 us, doubled after each short halt up to `halt_poll_max`, divided
//! by `halt_poll_shrink` (or reset) after a halt longer than the maximum.
//!
//! **The vCPU's schedule for the policy.** Before the back end consults
//! the policy (its completions, its timer), it tells it the interrupt
//! vCPU's run state through `Policy::on_schedule`, as the Xen model's
//! scheduler does on every switch: running, or not (halted, or preempted
//! by a host thread); and while it runs with a host thread waiting for
//! its core, when its thread's slice of the host scheduler ends (the
//! vCPU is preempted then). With no host thread beside it a running vCPU
//! has no slice end, and scheduler-aware vIC acts as vIC.

use cint_policy::{GuestSchedule, Nanos, Policy};

use super::{VirtEvent, VirtWork};
use crate::engine::Event;
use crate::host::{IrqWork, Segment};
use crate::world::World;

/// KVM's `halt_poll_ns_grow_start`: the first window after none.
const HALT_POLL_GROW_START: Nanos = 10_000;
/// KVM's `halt_poll_ns_grow`.
const HALT_POLL_GROW: Nanos = 2;

/// One guest's virtqueue indices, its interrupt vCPU's polling window and
/// the back end's timer.
#[derive(Clone, Debug, Default)]
pub(crate) struct KvmGuest {
    /// The used ring's index: completions the back end pushed.
    pub used_idx: u16,
    /// The used index at the back end's last call check (`old`).
    pub signalled: u16,
    /// No call was checked yet: the first one always goes out.
    pub signalled_valid: bool,
    /// The driver's `used_event`.
    pub used_event: u16,
    /// The interrupt vCPU's current halt-polling window.
    pub poll_window: Nanos,
    /// A posted interrupt waits for the preempted vCPU to run.
    pub posted_pending: bool,
    /// When the back end's timer is armed for.
    pub timer_at: Option<Nanos>,
}

/// `vring_need_event`: whether a used index moving from `old` to `new`
/// crosses the driver's `event`.
pub(crate) fn need_event(event: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}

/// KVM's new polling window after a halt of `halt` (`kvm_vcpu_halt`).
pub(crate) fn next_poll_window(window: Nanos, halt: Nanos, max: Nanos, shrink: u32) -> Nanos {
    if max == 0 {
        0
    } else if halt <= window {
        window
    } else if window > 0 && halt > max {
        match shrink {
            0 => 0,
            s => window / Nanos::from(s),
        }
    } else if window < max && halt < max {
        (window * HALT_POLL_GROW).max(HALT_POLL_GROW_START).min(max)
    } else {
        window
    }
}

/// The target vCPU's state when a call reaches it.
enum VcpuState {
    Running,
    /// Halted this long, its core idle.
    Halted(Nanos),
    /// Halted while a host thread holds its core: no polling.
    Blocked,
    Preempted,
}

impl World<'_> {
    /// The back end pushed guest `g`'s new completions: its policy judges
    /// them, and a wanted call goes out if EVENT_IDX lets it. Returns the
    /// handler's cost with the call's.
    pub(crate) fn kvm_completions(&mut self, g: usize, cost: Nanos) -> Nanos {
        if let Some(v) = self.virt.as_mut() {
            let n = v.guests[g].arrived.len() as u16;
            let k = &mut v.kvm[g];
            k.used_idx = k.used_idx.wrapping_add(n);
        }
        self.kvm_tell_schedule(g);
        let fire = self.monitor_judge(g, false);
        let cost = cost + self.kvm_call(g, fire, cost);
        self.kvm_rearm(g);
        cost
    }

    /// The policy wants a call (`fire`) from a handler that has spent
    /// `spent` so far: EVENT_IDX's check, then the call on its way.
    /// Returns the call's cost on the back end's core.
    fn kvm_call(&mut self, g: usize, fire: bool, spent: Nanos) -> Nanos {
        let now = self.now();
        let measuring = self.measuring;
        let Some(v) = self.virt.as_mut() else {
            return 0;
        };
        if !fire {
            return 0;
        }
        let k = &mut v.kvm[g];
        let (new, old, valid) = (k.used_idx, k.signalled, k.signalled_valid);
        k.signalled = new;
        k.signalled_valid = true;
        let need = !valid || need_event(k.used_event, new, old);
        if measuring {
            v.counters.kvm_wanted += 1;
            if !need {
                v.counters.kvm_suppressed += 1;
            }
        }
        if !need {
            return 0;
        }
        let cost = v.costs.ipi_send;
        if measuring {
            v.counters.ipis += 1;
        }
        self.events.schedule(
            now + spent + cost + v.costs.ipi_latency,
            Event::Virt {
                guest: g as u32,
                what: VirtEvent::Call,
            },
        );
        cost
    }

    /// Arms the back end's timer of guest `g` for its policy's deadline,
    /// or for an opportunity tick while vIC holds completions.
    pub(crate) fn kvm_rearm(&mut self, g: usize) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let tick = v.costs.monitor_timer;
        let guest = &v.guests[g];
        let k = &mut v.kvm[g];
        let holds = guest.policy.vic().is_some() && !guest.visible.is_empty();
        let want = guest
            .policy
            .next_deadline()
            .or_else(|| holds.then(|| k.timer_at.unwrap_or(now + tick)));
        if want == k.timer_at {
            return;
        }
        k.timer_at = want;
        if let Some(at) = want {
            self.events.schedule(
                at.max(now),
                Event::Virt {
                    guest: g as u32,
                    what: VirtEvent::Deadline,
                },
            );
        }
    }

    /// The back end's timer of guest `g` fired: the policy's deadline, or
    /// an opportunity tick. The timer's own CPU time is not modelled.
    pub(crate) fn kvm_timer(&mut self, g: usize) {
        let now = self.now();
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        // A timer re-armed since this event was scheduled.
        if v.kvm[g].timer_at.is_none_or(|at| at > now) {
            return;
        }
        v.kvm[g].timer_at = None;
        self.kvm_tell_schedule(g);
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let guest = &mut v.guests[g];
        let decision = match guest.policy.next_deadline() {
            Some(at) if at <= now => guest.policy.on_timer(now),
            _ if guest.policy.vic().is_some() && !guest.visible.is_empty() => {
                guest.policy.on_opportunity(now)
            }
            _ => cint_policy::Decision::Hold,
        };
        let fire = decision.irq().is_some() && !guest.visible.is_empty();
        self.kvm_call(g, fire, 0);
        self.kvm_rearm(g);
    }

    /// A call reaches guest `g`'s interrupt vCPU: the posted interrupt's
    /// delivery by its state.
    pub(crate) fn kvm_deliver(&mut self, g: usize) {
        let measuring = self.measuring;
        let state = self.kvm_vcpu_state(g);
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        let c = v.guests[g].irq_core as usize;
        let (max, shrink) = (v.kvm_params.0, v.kvm_params.1);
        let k = &mut v.kvm[g];
        let work = match state {
            VcpuState::Running => {
                if measuring {
                    v.counters.kvm_running += 1;
                }
                VirtWork::Inject
            }
            VcpuState::Halted(halt) => {
                let polled = halt < k.poll_window;
                k.poll_window = next_poll_window(k.poll_window, halt, max, shrink);
                if measuring {
                    if polled {
                        v.counters.kvm_polled += 1;
                    } else {
                        v.counters.kvm_wakeups += 1;
                    }
                }
                if polled {
                    VirtWork::Inject
                } else {
                    VirtWork::Wake
                }
            }
            VcpuState::Blocked => {
                if measuring {
                    v.counters.kvm_wakeups += 1;
                }
                VirtWork::Wake
            }
            VcpuState::Preempted => {
                if measuring {
                    v.counters.kvm_preempted += 1;
                }
                k.posted_pending = true;
                return;
            }
        };
        self.raise(
            c,
            IrqWork::Virt {
                guest: g as u32,
                work,
            },
        );
    }

    /// The run state of guest `g`'s interrupt vCPU now.
    fn kvm_vcpu_state(&self, g: usize) -> VcpuState {
        let Some(v) = self.virt.as_ref() else {
            return VcpuState::Running;
        };
        let core = &self.cores[v.guests[g].irq_core as usize];
        let ours = |t: u32| v.thread_guest[t as usize] as usize == g;
        let guest_work = core.current.is_some_and(ours) || core.rq.iter().any(|&t| ours(t));
        match core.seg {
            // Interrupt context on its core: the handler queues behind.
            Some(Segment { irq: true, .. }) => VcpuState::Running,
            Some(_) if core.current.is_some_and(ours) => VcpuState::Running,
            Some(_) if guest_work => VcpuState::Preempted,
            Some(_) => VcpuState::Blocked,
            None if guest_work => VcpuState::Running,
            None => VcpuState::Halted(
                core.idle_since
                    .map_or(0, |since| self.now().saturating_sub(since)),
            ),
        }
    }

    /// Tells guest `g`'s policy its interrupt vCPU's run state now, and
    /// its slice end while it runs with a host thread waiting.
    fn kvm_tell_schedule(&mut self, g: usize) {
        let now = self.now();
        let running = matches!(self.kvm_vcpu_state(g), VcpuState::Running);
        let Some(v) = self.virt.as_ref() else {
            return;
        };
        let c = v.guests[g].irq_core as usize;
        let core = &self.cores[c];
        let ours = |t: u32| v.thread_guest[t as usize] as usize == g;
        let host_waits = core.rq.iter().any(|&t| !ours(t));
        let slice_end = if running && host_waits && core.current.is_some_and(ours) {
            self.slice_end(c)
        } else {
            None
        };
        if let Some(v) = self.virt.as_mut() {
            v.guests[g]
                .policy
                .on_schedule(now, GuestSchedule { running, slice_end });
        }
    }

    /// Thread `t` was switched in on core `c`: a posted interrupt that
    /// waited for its preempted vCPU goes in first.
    pub(crate) fn kvm_switched_in(&mut self, c: usize, t: u32) {
        let Some(v) = self.virt.as_mut() else {
            return;
        };
        if !v.is_kvm {
            return;
        }
        let Some(g) = v.guest_of_thread(t as usize) else {
            return;
        };
        if v.guests[g].irq_core as usize != c || !v.kvm[g].posted_pending {
            return;
        }
        v.kvm[g].posted_pending = false;
        // Queued without dispatching: the core's dispatch is the caller.
        self.cores[c].irq_pending.push_back(IrqWork::Virt {
            guest: g as u32,
            work: VirtWork::Inject,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_event_follows_virtio_ring_h() {
        // The driver reaped up to 0; the first completion crosses it.
        assert!(need_event(0, 1, 0));
        // Still unreaped: the next completions need no call.
        assert!(!need_event(0, 2, 1));
        // Reaped up to 2, a batch of three crosses it.
        assert!(need_event(2, 5, 2));
        // Across the u16 wrap.
        assert!(need_event(u16::MAX, 1, u16::MAX));
        assert!(!need_event(u16::MAX - 5, 1, u16::MAX));
    }

    #[test]
    fn poll_window_grows_and_shrinks_as_kvm() {
        let max = 200_000;
        assert_eq!(next_poll_window(0, 5_000, max, 2), 10_000);
        assert_eq!(next_poll_window(10_000, 15_000, max, 2), 20_000);
        assert_eq!(next_poll_window(160_000, 190_000, max, 2), 200_000);
        // A halt inside the window keeps it.
        assert_eq!(next_poll_window(20_000, 15_000, max, 2), 20_000);
        // A long block shrinks it, or resets it with no shrink factor.
        assert_eq!(next_poll_window(40_000, 1_000_000, max, 2), 20_000);
        assert_eq!(next_poll_window(40_000, 1_000_000, max, 0), 0);
        assert_eq!(next_poll_window(40_000, 5_000, 0, 2), 0);
    }
}
