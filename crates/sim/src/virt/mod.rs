//! The virtual-machine layer (docs/VIRT.md): guests whose vCPUs own
//! physical cores, the monitor on each guest's core, and the hypervisor
//! kernel on cores of its own. It exists only when the scenario has
//! guests; a bare-metal world carries `None` and pays one branch where a
//! request is issued, a physical interrupt is handled and a request
//! reaches the device.
//!
//! The ESX-like completion path (vIC, Ahmad et al., ATC'11, Figure 1):
//!
//! 1. the adapter interrupts a hypervisor core (the guest queue's vector
//!    targets it); its handler processes each completion and posts it to
//!    the monitor's queue of the guest ([`World::vmkernel_handler`]);
//! 2. it sends an IPI to the guest's core only if the guest's interrupt
//!    policy wants one (`Vic::ipi_needed`: the last virtual interrupt is
//!    older than the IPI threshold); a policy without IPI reduction
//!    always does. Otherwise the completion waits for the monitor's next
//!    entry: a guest exit (each request the guest issues traps) or the
//!    monitor's periodic timer;
//! 3. at every entry the monitor judges each new completion through
//!    `Policy::on_complete` and makes it visible in the guest's queue; an
//!    entry for another reason than those completions (a guest exit, the
//!    timer) is first the delivery opportunity (`Policy::on_opportunity`)
//!    for completions held before (`World::monitor_judge`);
//! 4. when the policy fires, the monitor injects a virtual interrupt into
//!    the guest's interrupt vCPU, whose handler reaps every visible
//!    completion and wakes the threads waiting on them.
//!
//! Every step is CPU time on the core that does it, from the hypervisor
//! profile's cycle counts at its clock. The policy never learns which
//! strategy it is: it is the strategy's policy, built per guest.

mod esx;

use cint_policy::{AnyPolicy, GuestSchedule, Nanos, Policy};
use cint_report::VirtResult;
use cint_scenario::{CompletionMode, HypervisorProfile, Scenario, Strategy, Work};

use crate::SimError;

/// Marks a thread or a queue that belongs to no guest.
const HOST: u32 = u32::MAX;

/// Work of the layer that runs in interrupt context: a monitor entry on
/// a guest's core (a VM exit preempts whatever the vCPU runs), or the
/// hypervisor's issue path on its own core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VirtWork {
    /// An IPI from a hypervisor core brings the monitor in.
    Ipi,
    /// The monitor's periodic timer brings it in.
    Tick,
    /// A virtual interrupt decided at a guest exit is injected.
    Inject,
    /// The hypervisor issues the guest's requests to the adapter.
    Issue,
}

/// Timed events of the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VirtEvent {
    /// An IPI reaches the guest's core.
    Ipi,
    /// The monitor's periodic timer fires.
    Tick,
    /// A virtual interrupt decided at a guest exit is due.
    Inject,
}

/// The hypervisor's costs in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HvCosts {
    /// A guest request's issue path on its vCPU (guest driver, exits).
    pub guest_issue: Nanos,
    /// The hypervisor's issue path per request, on its core.
    pub vmm_issue: Nanos,
    pub vmk_irq: Nanos,
    pub vmk_complete: Nanos,
    pub ipi_send: Nanos,
    pub ipi_exit: Nanos,
    pub timer_exit: Nanos,
    pub inject: Nanos,
    pub guest_irq: Nanos,
    pub guest_reap: Nanos,
    pub monitor_timer: Nanos,
    pub ipi_latency: Nanos,
}

impl HvCosts {
    fn new(p: &HypervisorProfile) -> HvCosts {
        HvCosts {
            guest_issue: p.ns(p.guest_issue_cycles),
            vmm_issue: p.ns(p.vmm_issue_cycles),
            vmk_irq: p.ns(p.vmk_irq_cycles),
            vmk_complete: p.ns(p.vmk_complete_cycles),
            ipi_send: p.ns(p.ipi_send_cycles),
            ipi_exit: p.ns(p.ipi_exit_cycles),
            timer_exit: p.ns(p.timer_exit_cycles),
            inject: p.ns(p.inject_cycles),
            guest_irq: p.ns(p.guest_irq_cycles),
            guest_reap: p.ns(p.guest_reap_cycles),
            monitor_timer: p.monitor_timer.0,
            ipi_latency: p.ipi_latency.0,
        }
    }
}

/// One guest's monitor and virtual controller.
pub(crate) struct GuestState {
    /// The virtual controller's interrupt policy (the strategy's).
    pub policy: AnyPolicy,
    /// The core of the vCPU its virtual interrupts go to.
    pub irq_core: u32,
    /// The hypervisor core that issues its requests and takes their
    /// physical interrupts.
    pub vmk_core: u32,
    /// Requests its vCPUs handed to the hypervisor, not yet issued.
    pub to_issue: Vec<u32>,
    /// The hypervisor's issue path for it is queued or running.
    pub issue_pending: bool,
    /// Completions the hypervisor posted to the monitor's queue, not yet
    /// judged.
    pub arrived: Vec<u32>,
    /// Completions in the guest's queue that no handler has reaped.
    pub visible: Vec<u32>,
    /// An IPI is on its way or waiting to run.
    pub ipi_pending: bool,
    /// A virtual interrupt is decided and not yet injected.
    pub inject_pending: bool,
}

/// Counters of the measured window.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct VirtCounters {
    pub virtual_interrupts: u64,
    pub ipis: u64,
    /// Sum of the delivery ratios in force at each judged completion,
    /// and how many.
    pub ratio_sum: f64,
    pub ratio_n: u64,
}

/// The layer: hypervisor costs, guests, and who belongs to which guest.
pub(crate) struct Virt {
    pub costs: HvCosts,
    pub clock_hz: u64,
    pub guests: Vec<GuestState>,
    /// Per device queue: its guest, or [`HOST`].
    pub queue_guest: Vec<u32>,
    /// Per thread: its guest, or [`HOST`].
    pub thread_guest: Vec<u32>,
    /// Cores whose work counts for the guests' I/O: the guests' and the
    /// hypervisor's.
    pub io_cores: Vec<u32>,
    /// Per request: its sequence number in its guest's policy.
    pub vseq: Vec<u64>,
    /// Per core: requests whose hypervisor issue path runs there now;
    /// they reach the device when it ends.
    pub issuing: Vec<Vec<u32>>,
    pub counters: VirtCounters,
}

impl Virt {
    /// The layer for `strategy`, or `None` on bare metal. `queue_of`
    /// gives each thread's device queue, `thread_jobs` each thread's job.
    pub(crate) fn new(
        sc: &Scenario,
        strategy: &Strategy,
        queues_n: usize,
        threads: &[(u32, usize)],
        requests: usize,
    ) -> Result<Option<Virt>, SimError> {
        let (Some(hv), false) = (&sc.virt.hypervisor, sc.virt.guests.is_empty()) else {
            return Ok(None);
        };
        let CompletionMode::Interrupt(cfg) = strategy.mode else {
            return Err(SimError::input(format!(
                "strategy '{}': kind \"{}\" polls the host's completion queues, which guests \
                 cannot reach: guests' completions come through the hypervisor's interrupts \
                 (use an interrupt strategy)",
                strategy.name,
                strategy.kind()
            )));
        };
        let mut guests = Vec::with_capacity(sc.virt.guests.len());
        for (g, guest) in sc.virt.guests.iter().enumerate() {
            let mut policy = cfg
                .build(0)
                .map_err(|e| SimError::input(format!("strategy '{}': {e}", strategy.name)))?;
            // ESX-like monitors own their cores: the vCPU is never
            // descheduled, and no time slice ends.
            policy.on_schedule(
                0,
                GuestSchedule {
                    running: true,
                    slice_end: None,
                },
            );
            let irq_core = guest.cores[guest.irq_vcpu as usize];
            guests.push(GuestState {
                policy,
                irq_core,
                vmk_core: hv.cores[g % hv.cores.len()],
                to_issue: Vec::new(),
                issue_pending: false,
                arrived: Vec::new(),
                visible: Vec::new(),
                ipi_pending: false,
                inject_pending: false,
            });
        }
        let mut queue_guest = vec![HOST; queues_n];
        let mut thread_guest = Vec::with_capacity(threads.len());
        for &(job, queue) in threads {
            let g = sc.jobs[job as usize].guest.unwrap_or(HOST);
            thread_guest.push(g);
            if !matches!(sc.jobs[job as usize].work, Work::Io(_)) {
                continue;
            }
            let owner = &mut queue_guest[queue];
            if *owner == HOST && g != HOST {
                *owner = g;
            }
            if *owner != g {
                return Err(SimError::input(format!(
                    "job '{}': device queue {queue} would serve {} and {}: a guest's vCPU \
                     needs a queue of its own (give the device a queue per core: \
                     device.queues = 0)",
                    sc.jobs[job as usize].name,
                    describe(sc, *owner),
                    describe(sc, g)
                )));
            }
        }
        let mut io_cores: Vec<u32> = hv.cores.clone();
        for guest in &sc.virt.guests {
            io_cores.extend(guest.cores.iter().copied());
        }
        Ok(Some(Virt {
            costs: HvCosts::new(&hv.profile),
            clock_hz: hv.profile.clock_hz,
            guests,
            queue_guest,
            thread_guest,
            io_cores,
            vseq: vec![0; requests],
            issuing: vec![Vec::new(); sc.host.cores.max(1) as usize],
            counters: VirtCounters::default(),
        }))
    }

    /// The guest of device queue `q`, if a guest's.
    #[inline]
    pub(crate) fn guest_of_queue(&self, q: usize) -> Option<usize> {
        match self.queue_guest.get(q) {
            Some(&g) if g != HOST => Some(g as usize),
            _ => None,
        }
    }

    /// The guest of thread `t`, if a guest's.
    #[inline]
    pub(crate) fn guest_of_thread(&self, t: usize) -> Option<usize> {
        match self.thread_guest.get(t) {
            Some(&g) if g != HOST => Some(g as usize),
            _ => None,
        }
    }

    /// The figures of the measured window.
    pub(crate) fn result(&self, secs: f64, io_cycles_ns: u64, guest_ios: u64) -> VirtResult {
        let c = &self.counters;
        let cycles = io_cycles_ns as f64 * self.clock_hz as f64 / 1e9;
        VirtResult {
            virtual_interrupts_per_s: c.virtual_interrupts as f64 / secs,
            ipis_per_s: c.ipis as f64 / secs,
            cycles_per_io: if guest_ios == 0 {
                0.0
            } else {
                cycles / guest_ios as f64
            },
            delivery_ratio: if c.ratio_n == 0 {
                1.0
            } else {
                c.ratio_sum / c.ratio_n as f64
            },
            guest_iops: guest_ios as f64 / secs,
        }
    }
}

/// A queue's owner for messages.
fn describe(sc: &Scenario, g: u32) -> String {
    match sc.virt.guests.get(g as usize) {
        Some(guest) => format!("guest \"{}\"", guest.name),
        None => "the host's jobs".to_string(),
    }
}
