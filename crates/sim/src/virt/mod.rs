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
mod kvm;
mod xen;

use cint_policy::{AnyPolicy, GuestSchedule, Nanos, Policy, PolicyConfig};
use cint_report::{LatencyHistogram, VirtResult};
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
    /// KVM: a blocked vCPU is woken, then takes the interrupt.
    Wake,
}

/// Timed events of the layer: a guest's (ESX-like) or a physical core's
/// credit scheduler's (Xen-like).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VirtEvent {
    /// An IPI reaches the guest's core.
    Ipi,
    /// The monitor's periodic timer fires.
    Tick,
    /// A virtual interrupt decided at a guest exit is due.
    Inject,
    /// The credit scheduler's accounting tick.
    CreditTick,
    /// The running vCPU's slice ends, unless superseded (the low bits of
    /// the scheduler's switch count).
    SliceEnd(u32),
    /// The rate limit of the running vCPU has passed: a woken vCPU of
    /// higher priority may now preempt it.
    Resched,
    /// KVM: the back end's call reaches the guest's interrupt vCPU.
    Call,
    /// KVM: the back end's timer (the policy's deadline or vIC's
    /// opportunity tick).
    Deadline,
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
    pub evtchn_send: Nanos,
    pub vcpu_wake: Nanos,
}

/// The Xen-like scheduler's and ring's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct XenParams {
    pub slice: Nanos,
    pub rate_limit: Nanos,
    pub tick: Nanos,
    pub ring_slots: u32,
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
            evtchn_send: p.ns(p.evtchn_send_cycles),
            vcpu_wake: p.ns(p.vcpu_wake_cycles),
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
    /// KVM: calls the back end's policy wanted, those EVENT_IDX
    /// suppressed, and the posted interrupts by the vCPU's state.
    pub kvm_wanted: u64,
    pub kvm_suppressed: u64,
    pub kvm_running: u64,
    pub kvm_polled: u64,
    pub kvm_wakeups: u64,
    pub kvm_preempted: u64,
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
    /// A Xen-like hypervisor (else ESX-like).
    pub is_xen: bool,
    pub xen_params: XenParams,
    /// Xen: per guest, its vCPU and front end.
    pub xen: Vec<xen::XenGuest>,
    /// Xen: one credit scheduler per physical core of guests.
    pub credits: Vec<xen::Credit>,
    /// Per core: its credit scheduler, or [`HOST`].
    pub pcpu_of_core: Vec<u32>,
    /// A KVM-like hypervisor.
    pub is_kvm: bool,
    /// KVM: the longest halt-polling window and its shrink factor.
    pub kvm_params: (Nanos, u32),
    /// KVM: per guest, its virtqueue indices and polling window.
    pub kvm: Vec<kvm::KvmGuest>,
    /// Xen: per request, when the front end pushed it on the ring.
    pub pushed: Vec<Nanos>,
    /// Xen: ring push to the upcall that reaps the response.
    pub frontend_lat: LatencyHistogram,
    /// The guests a physical interrupt touched (reused buffer).
    pub touched: Vec<u32>,
    /// Xen: the back end's failsafe over all guests, when the strategy
    /// has one (`quirk_failsafe`) and the profile shares it: after this
    /// many suppressed responses in a row, of any guests, the next
    /// response is notified.
    pub shared_failsafe: Option<u32>,
    /// Responses suppressed in a row, over all guests.
    pub failsafe_held: u32,
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
            return Err(SimError::input_at(
                format!("strategy.{}.kind", strategy.name),
                format!(
                    "\"{}\" polls the host's completion queues, which guests cannot reach: \
                     guests' completions come through the hypervisor's interrupts (use an \
                     interrupt strategy)",
                    strategy.kind()
                ),
            ));
        };
        let is_xen = hv.profile.kind == "xen";
        let is_kvm = hv.profile.kind == "kvm";
        // Xen's back end counts the failsafe's suppressed responses over
        // all guests: the guests' policies then run without a failsafe of
        // their own, and the back end keeps the one count.
        let (cfg, shared_failsafe) = if is_xen && !hv.profile.failsafe_per_guest {
            without_failsafe(cfg)
        } else {
            (cfg, None)
        };
        let cores_n = sc.host.cores.max(1) as usize;
        let mut guests = Vec::with_capacity(sc.virt.guests.len());
        let mut xen = Vec::new();
        let mut credits: Vec<xen::Credit> = Vec::new();
        let mut pcpu_of_core = vec![HOST; cores_n];
        for (g, guest) in sc.virt.guests.iter().enumerate() {
            let mut policy = cfg
                .build(0)
                .map_err(|e| crate::strategy_refused(strategy, e))?;
            if is_xen {
                // Its vCPU shares its core under the credit scheduler,
                // which tells the policy of every switch.
                xen.push(xen::enroll(
                    &mut credits,
                    &mut pcpu_of_core,
                    guest.cores[0],
                    g as u32,
                ));
            } else {
                // ESX-like monitors own their cores: the vCPU is never
                // descheduled, and no time slice ends. (KVM's back end
                // tells the policy its vCPU's state as it consults it.)
                policy.on_schedule(
                    0,
                    GuestSchedule {
                        running: true,
                        slice_end: None,
                    },
                );
            }
            let irq_core = guest.cores[guest.irq_vcpu as usize];
            // Xen: the guests of one physical core share its device queue,
            // so one dom0 core serves them all.
            let vmk = match xen.last() {
                Some(x) if is_xen => x.pcpu,
                _ => g,
            };
            guests.push(GuestState {
                policy,
                irq_core,
                vmk_core: hv.cores[vmk % hv.cores.len()],
                to_issue: Vec::new(),
                issue_pending: false,
                arrived: Vec::new(),
                visible: Vec::new(),
                ipi_pending: false,
                inject_pending: false,
            });
        }
        let (queue_guest, thread_guest) = owners(sc, threads, queues_n, &xen)?;
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
            issuing: vec![Vec::new(); cores_n],
            counters: VirtCounters::default(),
            is_xen,
            xen_params: XenParams {
                slice: hv.profile.slice.0,
                rate_limit: hv.profile.rate_limit.0,
                tick: hv.profile.tick.0,
                ring_slots: hv.profile.ring_slots,
            },
            is_kvm,
            kvm_params: (hv.profile.halt_poll_max.0, hv.profile.halt_poll_shrink),
            kvm: if is_kvm {
                vec![kvm::KvmGuest::default(); sc.virt.guests.len()]
            } else {
                Vec::new()
            },
            xen,
            credits,
            pcpu_of_core,
            pushed: vec![0; if is_xen { requests } else { 0 }],
            frontend_lat: LatencyHistogram::new(),
            touched: Vec::with_capacity(sc.virt.guests.len()),
            shared_failsafe,
            failsafe_held: 0,
        }))
    }

    /// Whether core `c`'s threads run under a credit scheduler.
    #[inline]
    pub(crate) fn schedules(&self, c: usize) -> bool {
        self.is_xen && self.pcpu_of_core.get(c).is_some_and(|&k| k != HOST)
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
            frontend_lat_ns: self.is_xen.then(|| self.frontend_lat.stats()),
            kvm: self.is_kvm.then(|| cint_report::KvmResult {
                wanted_per_s: c.kvm_wanted as f64 / secs,
                event_idx_suppressed_per_s: c.kvm_suppressed as f64 / secs,
                running_per_s: c.kvm_running as f64 / secs,
                halt_polled_per_s: c.kvm_polled as f64 / secs,
                wakeups_per_s: c.kvm_wakeups as f64 / secs,
                preempted_per_s: c.kvm_preempted as f64 / secs,
            }),
        }
    }
}

/// `cfg` without its failsafe quirk, and that quirk's limit.
fn without_failsafe(cfg: PolicyConfig) -> (PolicyConfig, Option<u32>) {
    match cfg {
        PolicyConfig::Vic(mut p) => {
            let limit = p.quirk_failsafe.take();
            (PolicyConfig::Vic(p), limit)
        }
        PolicyConfig::VicSched(mut p) => {
            let limit = p.vic.quirk_failsafe.take();
            (PolicyConfig::VicSched(p), limit)
        }
        other => (other, None),
    }
}

/// Who owns each device queue and each thread: a guest's index, or
/// [`HOST`]. A queue serves one guest, or (Xen-like) the guests of one
/// physical core, never the host's jobs beside a guest's.
fn owners(
    sc: &Scenario,
    threads: &[(u32, usize)],
    queues_n: usize,
    xen: &[xen::XenGuest],
) -> Result<(Vec<u32>, Vec<u32>), SimError> {
    let is_xen = !xen.is_empty();
    let mut queue_guest = vec![HOST; queues_n];
    let mut host_used = vec![false; queues_n];
    let mut thread_guest = Vec::with_capacity(threads.len());
    // The flushers, in the order they were added: each is its page
    // cache's kernel's, the host's or a guest's.
    let mut flushers = crate::host::pagecache::plan(sc).into_iter();
    for &(job, queue) in threads {
        let g = match sc.jobs.get(job as usize) {
            Some(spec) => spec.guest.unwrap_or(HOST),
            None if job == crate::host::pagecache::KERNEL_JOB => match flushers.next() {
                Some((crate::host::pagecache::Owner::Guest(g), _)) => g,
                _ => HOST,
            },
            None => HOST,
        };
        thread_guest.push(g);
        let io = sc
            .jobs
            .get(job as usize)
            .is_none_or(|spec| matches!(spec.work, Work::Io(_)));
        if !io {
            continue;
        }
        let owner = &mut queue_guest[queue];
        if g == HOST {
            host_used[queue] = true;
        } else if *owner == HOST && !host_used[queue] {
            *owner = g;
        }
        // Xen: guests of one physical core share its queue (dom0's
        // back end sorts the responses); never with the host's jobs.
        let shared = is_xen
            && g != HOST
            && *owner != HOST
            && xen[*owner as usize].pcpu == xen[g as usize].pcpu;
        let clash = if g == HOST {
            *owner != HOST
        } else {
            *owner != g && !shared
        };
        if clash {
            // The key that put the thread on this queue's core.
            let key = sc.jobs.get(job as usize).map_or_else(
                || "host.page_cache.flusher_cpu".to_string(),
                |spec| {
                    let which = if spec.cpus.is_empty() { "cpu" } else { "cpus" };
                    format!("job.{}.{which}", spec.name)
                },
            );
            return Err(SimError::input_at(
                key,
                format!(
                    "device queue {queue} would serve {} and {}: a guest's vCPU needs a queue \
                     of its own (give the device a queue per core: device.queues = 0)",
                    describe(sc, *owner),
                    describe(sc, g)
                ),
            ));
        }
    }
    Ok((queue_guest, thread_guest))
}

/// A queue's owner for messages.
fn describe(sc: &Scenario, g: u32) -> String {
    match sc.virt.guests.get(g as usize) {
        Some(guest) => format!("guest \"{}\"", guest.name),
        None => "the host's jobs".to_string(),
    }
}
