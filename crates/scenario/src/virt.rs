//! Virtual machines (docs/VIRT.md): the `[hypervisor]` section, which
//! picks a hypervisor profile and the physical cores its kernel takes
//! interrupts on, and the `[[guest]]` array, whose guests own physical
//! cores as vCPUs and run the jobs that name them (`guest = "NAME"`).
//! A scenario without either runs on bare metal exactly as before.

use cint_policy::Nanos;
use serde::{Deserialize, Serialize};

use crate::error::{Origin, ScenarioError};
use crate::overlay::overlay;
use crate::section::{quoted_list, Section};
use crate::tree::{Node, Value};
use crate::units::Duration;

/// The hypervisor profiles built in.
pub const HYPERVISOR_MODELS: &[&str] = &["esx-like", "xen-like", "kvm-like"];

/// The virtual-machine part of a scenario; empty (the default) on bare
/// metal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Virt {
    /// `[hypervisor]`, if the scenario has one (required by guests).
    pub hypervisor: Option<Hypervisor>,
    /// `[[guest]]`, in file order; names unique.
    pub guests: Vec<Guest>,
}

impl Virt {
    /// True when the scenario has guests (and so a hypervisor).
    pub fn has_guests(&self) -> bool {
        !self.guests.is_empty()
    }
}

/// `[hypervisor]`: a profile and the cores of the hypervisor's kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Hypervisor {
    /// The profile, built-in with overrides applied.
    pub profile: HypervisorProfile,
    /// Physical cores of the hypervisor kernel (the VMkernel): the
    /// adapter's interrupts for guests' I/O land there, guest `n`'s on
    /// `cores[n % len]`. Distinct, below `host.cores`, no guest's.
    pub cores: Vec<u32>,
}

/// A hypervisor's costs and timers. Costs are CPU cycles at `clock_hz`,
/// spent on the core that does the work (docs/VIRT.md has each figure's
/// source or estimate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HypervisorProfile {
    /// Profile name as scenario files spell it.
    pub model: String,
    /// Where the figures come from.
    pub source: String,
    /// Which hypervisor: `"esx"` (each vCPU owns its core, a monitor
    /// per guest, IPIs) or `"xen"` (vCPUs share cores under the credit
    /// scheduler, a block ring to dom0's back end, event channels).
    pub kind: String,
    /// The clock the cycle counts are at, Hz (> 0).
    pub clock_hz: u64,
    /// A guest request's issue path on its vCPU: the guest driver and its
    /// register-access exits into the monitor.
    pub guest_issue_cycles: u64,
    /// The hypervisor's own issue path of one request (virtual SCSI to
    /// the physical adapter), on the issuing vCPU's core.
    pub vmm_issue_cycles: u64,
    /// The physical interrupt's fixed part on a hypervisor core.
    pub vmk_irq_cycles: u64,
    /// Per completion on the hypervisor core: the storage stack's
    /// completion path and the post to the monitor's queue.
    pub vmk_complete_cycles: u64,
    /// Sending an IPI to a guest's core (on the sender).
    pub ipi_send_cycles: u64,
    /// The VM exit an IPI causes on the guest's core.
    pub ipi_exit_cycles: u64,
    /// The VM exit of the monitor's periodic timer.
    pub timer_exit_cycles: u64,
    /// Injecting a virtual interrupt, with the guest's EOI exits.
    pub inject_cycles: u64,
    /// The guest's interrupt handler, per interrupt.
    pub guest_irq_cycles: u64,
    /// The guest's handler, per completion it reaps.
    pub guest_reap_cycles: u64,
    /// The monitor's periodic timer: it enters at least this often.
    pub monitor_timer: Duration,
    /// From an IPI's send to its exit on the target core.
    pub ipi_latency: Duration,
    /// Xen: sending an event (the back end's notification), on dom0's
    /// core.
    pub evtchn_send_cycles: u64,
    /// Xen: the credit scheduler's time slice (> 0).
    pub slice: Duration,
    /// Xen: a running vCPU is not preempted before it has run this long.
    pub rate_limit: Duration,
    /// Xen: the credit scheduler's accounting tick (> 0).
    pub tick: Duration,
    /// Xen: request slots of a guest's block ring (>= 1).
    pub ring_slots: u32,
    /// KVM: a blocked vCPU's wake-up on its core (the host scheduler
    /// switching its thread in and the VM entry), before its handler.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vcpu_wake_cycles: u64,
    /// KVM: the longest a halted vCPU spins in halt-polling
    /// (`halt_poll_ns`); 0 turns polling off.
    #[serde(default, skip_serializing_if = "is_zero_duration")]
    pub halt_poll_max: Duration,
    /// KVM: what a long block divides the vCPU's polling window by
    /// (`halt_poll_ns_shrink`); 0 resets it to nothing.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub halt_poll_shrink: u32,
    /// Xen: the back end's failsafe (a strategy's `quirk_failsafe`) counts
    /// each guest's suppressed responses on its own, instead of all
    /// guests' together as Xen's reference back end does.
    #[serde(default)]
    pub failsafe_per_guest: bool,
}

// The KVM-only keys stay out of other hypervisors' rendered profiles,
// which keep their form from before the keys existed.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn is_zero_duration(d: &Duration) -> bool {
    d.0 == 0
}

impl HypervisorProfile {
    /// A built-in profile by name.
    pub fn builtin(model: &str) -> Option<HypervisorProfile> {
        match model {
            "esx-like" => Some(esx_like()),
            "xen-like" => Some(xen_like()),
            "kvm-like" => Some(kvm_like()),
            _ => None,
        }
    }

    /// `cycles` at the profile's clock, in nanoseconds (rounded).
    pub fn ns(&self, cycles: u64) -> Nanos {
        let hz = u128::from(self.clock_hz.max(1));
        let ns = (u128::from(cycles) * 1_000_000_000 + hz / 2) / hz;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

/// The vIC paper's testbed (Ahmad et al., ATC'11, section 5): ESX on a
/// 2.4 GHz host. The costs start from the estimates of docs/VIRT.md and
/// were fitted once to the paper's Table 2 (crates/sim/tests/virt.rs).
fn esx_like() -> HypervisorProfile {
    HypervisorProfile {
        model: "esx-like".into(),
        source: "vIC (Ahmad et al., ATC'11): Figure 1's completion path, Table 2 at 2.4 GHz; \
                 costs are estimates fitted to Table 2 (docs/VIRT.md)"
            .into(),
        kind: "esx".into(),
        clock_hz: 2_400_000_000,
        guest_issue_cycles: 20_000,
        vmm_issue_cycles: 12_000,
        vmk_irq_cycles: 4_000,
        vmk_complete_cycles: 8_000,
        ipi_send_cycles: 2_000,
        ipi_exit_cycles: 5_000,
        timer_exit_cycles: 5_000,
        inject_cycles: 8_000,
        guest_irq_cycles: 8_000,
        guest_reap_cycles: 5_000,
        monitor_timer: Duration(1_000_000),
        ipi_latency: Duration(1_000),
        // The Xen-only mechanisms are unused here.
        evtchn_send_cycles: 0,
        slice: Duration(30_000_000),
        rate_limit: Duration(1_000_000),
        tick: Duration(10_000_000),
        ring_slots: 32,
        vcpu_wake_cycles: 0,
        halt_poll_max: Duration(0),
        halt_poll_shrink: 0,
        failsafe_per_guest: false,
    }
}

/// The scheduler-aware vIC report's testbed: Xen 4.6's credit scheduler
/// and block ring (published), every guest's vCPU on one physical core,
/// dom0 on two. Costs are estimates (docs/VIRT.md): an event-channel send
/// 1-2 us, the guest's upcall 2-5 us, at 2.4 GHz.
fn xen_like() -> HypervisorProfile {
    HypervisorProfile {
        model: "xen-like".into(),
        source: "Xen 4.6 credit scheduler (30 ms slice, 1 ms rate limit, 10 ms ticks) and \
                 blkfront/blkback's 32-slot ring (published); costs are estimates \
                 (docs/VIRT.md)"
            .into(),
        kind: "xen".into(),
        clock_hz: 2_400_000_000,
        // The front end's request: the guest's block layer and the ring
        // push with its event-channel hypercall.
        guest_issue_cycles: 8_000,
        // dom0's back end per request (blkback to the block layer).
        vmm_issue_cycles: 6_000,
        vmk_irq_cycles: 4_000,
        vmk_complete_cycles: 4_000,
        ipi_send_cycles: 0,
        ipi_exit_cycles: 0,
        timer_exit_cycles: 0,
        inject_cycles: 0,
        // The guest's upcall (3 us) and its per-response work.
        guest_irq_cycles: 7_200,
        guest_reap_cycles: 2_400,
        monitor_timer: Duration(1_000_000),
        ipi_latency: Duration(1_000),
        // 1.5 us.
        evtchn_send_cycles: 3_600,
        slice: Duration(30_000_000),
        rate_limit: Duration(1_000_000),
        tick: Duration(10_000_000),
        ring_slots: 32,
        vcpu_wake_cycles: 0,
        halt_poll_max: Duration(0),
        halt_poll_shrink: 0,
        failsafe_per_guest: false,
    }
}

/// A KVM host with a vhost-user back end (`cint vhost`'s setting): each
/// vCPU a host thread on its own core, posted interrupts, virtio-blk with
/// EVENT_IDX, the back end on cores of its own. Kernel defaults are
/// published (`halt_poll_ns` 200 us, shrink 2); costs are estimates
/// (docs/VIRT.md).
fn kvm_like() -> HypervisorProfile {
    HypervisorProfile {
        model: "kvm-like".into(),
        source: "KVM with posted interrupts and a vhost-user-blk back end: halt_poll_ns \
                 200 us and its shrink factor 2 (kernel defaults, published); costs are \
                 estimates (docs/VIRT.md)"
            .into(),
        kind: "kvm".into(),
        clock_hz: 2_400_000_000,
        // The guest's virtio-blk driver and its doorbell kick, an
        // ioeventfd exit (about 3 us).
        guest_issue_cycles: 7_200,
        // The back end pops the descriptor chain and submits the I/O.
        vmm_issue_cycles: 4_800,
        vmk_irq_cycles: 4_000,
        // The back end's completion: reap, used ring, policy.
        vmk_complete_cycles: 2_400,
        // The call: eventfd write, irqfd injection, the posted
        // interrupt's notification IPI.
        ipi_send_cycles: 2_400,
        ipi_exit_cycles: 0,
        timer_exit_cycles: 0,
        // Posted: no exit to inject, none for the EOI (APICv).
        inject_cycles: 0,
        guest_irq_cycles: 4_800,
        guest_reap_cycles: 2_400,
        // The back end's opportunity tick while vIC holds completions
        // (`cint vhost`'s 1 ms).
        monitor_timer: Duration(1_000_000),
        ipi_latency: Duration(1_000),
        // Switching the vCPU thread in and the VM entry (about 10 us).
        vcpu_wake_cycles: 24_000,
        halt_poll_max: Duration(200_000),
        halt_poll_shrink: 2,
        // The Xen-only mechanisms are unused here, as under ESX.
        ..esx_like()
    }
}

/// One `[[guest]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guest {
    /// `name`, unique among guests.
    pub name: String,
    /// `cores`: the physical core of each vCPU (vCPU `n` on `cores[n]`);
    /// its length is `vcpus`.
    pub cores: Vec<u32>,
    /// `irq_vcpu`: the vCPU the guest's virtual interrupts are routed to.
    pub irq_vcpu: u32,
}

impl Guest {
    /// The guest's vCPUs.
    pub fn vcpus(&self) -> u32 {
        self.cores.len() as u32
    }
}

/// Parses `[hypervisor]` and `[[guest]]` against a host of `host_cores`.
pub(crate) fn parse(
    source: &str,
    hypervisor: Option<&Node>,
    guests: Option<&Node>,
    host_cores: u32,
) -> Result<Virt, ScenarioError> {
    let hypervisor = match hypervisor {
        None => None,
        Some(node) => Some(parse_hypervisor(source, node, host_cores)?),
    };
    let mut out = Virt {
        hypervisor,
        guests: Vec::new(),
    };
    let Some(node) = guests else {
        return Ok(out);
    };
    let elements = crate::job::elements(source, "guest", Some(node))?;
    let mut seen: Vec<(String, Origin)> = Vec::new();
    // Cores taken so far: the hypervisor's, then each guest's.
    let mut taken: Vec<(u32, String)> = out
        .hypervisor
        .iter()
        .flat_map(|h| h.cores.iter().map(|&c| (c, "the hypervisor".to_string())))
        .collect();
    for (index, (table, origin)) in elements.into_iter().enumerate() {
        let mut sec = Section::new(source, format!("guest[{index}]"), table, origin);
        let name = crate::job::element_name(&mut sec, &seen, "guest")?;
        seen.push((name.clone(), sec.origin_of("name")));
        if out.hypervisor.is_none() {
            return Err(sec.error(
                "name",
                "a guest needs a [hypervisor] section to run on (model and cores)",
            ));
        }
        let vcpus = match sec.node("vcpus") {
            Some(_) => sec.int("vcpus", 1, u64::from(host_cores.max(1)))?,
            None => None,
        }
        .unwrap_or(1) as u32;
        let cores = core_list(&mut sec, "cores", host_cores)?.ok_or_else(|| {
            sec.error(
                "cores",
                "missing required key: the physical core of each vCPU",
            )
        })?;
        if cores.len() as u32 != vcpus {
            return Err(sec.error(
                "cores",
                format!(
                    "names {} cores for {vcpus} vCPUs (one physical core per vCPU)",
                    cores.len()
                ),
            ));
        }
        let xen = out
            .hypervisor
            .as_ref()
            .is_some_and(|h| h.profile.kind == "xen");
        if xen && vcpus != 1 {
            return Err(sec.error(
                "vcpus",
                format!("a guest of a \"xen\" hypervisor has one vCPU (got {vcpus})"),
            ));
        }
        for &c in &cores {
            // Under the credit scheduler guests' vCPUs share cores; never
            // the hypervisor's (dom0's).
            let shared = xen && !out.hypervisor.iter().any(|h| h.cores.contains(&c));
            if shared {
                continue;
            }
            if let Some((_, owner)) = taken.iter().find(|(t, _)| *t == c) {
                return Err(sec.error(
                    "cores",
                    format!("core {c} belongs to {owner} already (a vCPU owns its core)"),
                ));
            }
        }
        taken.extend(cores.iter().map(|&c| (c, format!("guest \"{name}\""))));
        let irq_vcpu = sec.int("irq_vcpu", 0, u64::from(vcpus - 1))?.unwrap_or(0) as u32;
        sec.finish("a guest", GUEST_KEYS)?;
        out.guests.push(Guest {
            name,
            cores,
            irq_vcpu,
        });
    }
    Ok(out)
}

/// The keys of a `[[guest]]`.
const GUEST_KEYS: &[&str] = &["name", "vcpus", "cores", "irq_vcpu"];

fn parse_hypervisor(
    source: &str,
    node: &Node,
    host_cores: u32,
) -> Result<Hypervisor, ScenarioError> {
    let table = crate::load::table_of(source, "hypervisor", node)?;
    let mut sec = Section::new(source, "hypervisor", table, node.origin.clone());
    let model = sec.required_string("model")?;
    let Some(base) = HypervisorProfile::builtin(&model) else {
        return Err(sec.error(
            "model",
            format!(
                "unknown hypervisor model \"{model}\" (built-in: {})",
                quoted_list(HYPERVISOR_MODELS)
            ),
        ));
    };
    let cores = core_list(&mut sec, "cores", host_cores)?.ok_or_else(|| {
        sec.error(
            "cores",
            "missing required key: the cores the hypervisor takes interrupts on",
        )
    })?;
    let profile: HypervisorProfile =
        overlay(source, "hypervisor", &base, table, &["model", "cores"])?;
    if profile.clock_hz == 0 {
        return Err(sec.error("clock_hz", "must be at least 1 (got 0)"));
    }
    for (key, d) in [
        ("monitor_timer", profile.monitor_timer),
        ("ipi_latency", profile.ipi_latency),
    ] {
        if d.0 > crate::load::MAX_RUN_TIME {
            return Err(sec.error(key, "must be at most 3600s"));
        }
    }
    for (key, d) in [
        ("monitor_timer", profile.monitor_timer),
        ("slice", profile.slice),
        ("tick", profile.tick),
    ] {
        if d.0 == 0 {
            return Err(sec.error(key, "must be longer than zero"));
        }
    }
    for (key, d) in [
        ("slice", profile.slice),
        ("rate_limit", profile.rate_limit),
        ("tick", profile.tick),
    ] {
        if d.0 > crate::load::MAX_RUN_TIME {
            return Err(sec.error(key, "must be at most 3600s"));
        }
    }
    if !["esx", "xen", "kvm"].contains(&profile.kind.as_str()) {
        return Err(sec.error(
            "kind",
            format!(
                "must be \"esx\", \"xen\" or \"kvm\" (got \"{}\")",
                profile.kind
            ),
        ));
    }
    if profile.halt_poll_max.0 > crate::load::MAX_RUN_TIME {
        return Err(sec.error("halt_poll_max", "must be at most 3600s"));
    }
    if profile.ring_slots == 0 {
        return Err(sec.error("ring_slots", "must be at least 1 (got 0)"));
    }
    Ok(Hypervisor { profile, cores })
}

/// A list of distinct physical cores below `host_cores`, if given.
fn core_list(
    sec: &mut Section<'_>,
    key: &'static str,
    host_cores: u32,
) -> Result<Option<Vec<u32>>, ScenarioError> {
    let Some(node) = sec.node(key) else {
        return Ok(None);
    };
    let Value::Array(items) = &node.value else {
        return Err(sec.error(
            key,
            format!(
                "must be a list of cores, e.g. [1] (got {})",
                node.value.type_name()
            ),
        ));
    };
    if items.is_empty() {
        return Err(sec.error(key, "must name at least one core"));
    }
    let mut cores = Vec::with_capacity(items.len());
    for item in items {
        let core = match item.value {
            Value::Int(c) if c >= 0 && (c as u64) < u64::from(host_cores) => c as u32,
            Value::Int(c) => {
                return Err(sec.error(
                    key,
                    format!(
                        "core {c} does not exist: the host has {host_cores} cores, numbered \
                         from 0"
                    ),
                ))
            }
            ref v => {
                return Err(sec.error(
                    key,
                    format!("must list core numbers (got {})", v.type_name()),
                ))
            }
        };
        if cores.contains(&core) {
            return Err(sec.error(key, format!("core {core} is listed twice")));
        }
        cores.push(core);
    }
    Ok(Some(cores))
}

/// The guest a job names (`guest = "NAME"`), as an index into `guests`.
pub(crate) fn job_guest(
    sec: &mut Section<'_>,
    guests: &[Guest],
) -> Result<Option<u32>, ScenarioError> {
    let Some(name) = sec.string("guest")? else {
        return Ok(None);
    };
    match guests.iter().position(|g| g.name == name) {
        Some(i) => Ok(Some(i as u32)),
        None => Err(sec.error(
            "guest",
            format!(
                "no [[guest]] named \"{name}\" ({})",
                if guests.is_empty() {
                    "the scenario has no guests".to_string()
                } else {
                    let names: Vec<&str> = guests.iter().map(|g| g.name.as_str()).collect();
                    format!("guests: {}", quoted_list(&names))
                }
            ),
        )),
    }
}

/// Refuses a host job (one without `guest`) on a core that a guest's
/// vCPU or the hypervisor owns. A KVM vCPU is a host thread: a host CPU
/// job (`cpu_job`) may share its core, and preempts it there.
pub(crate) fn refuse_owned_cores(
    sec: &Section<'_>,
    virt: &Virt,
    cpu: u32,
    cpus: &[u32],
    cpu_job: bool,
) -> Result<(), ScenarioError> {
    let (key, cores) = if cpus.is_empty() {
        ("cpu", std::slice::from_ref(&cpu))
    } else {
        ("cpus", cpus)
    };
    refuse_owned(sec, virt, (key, "a host job"), cores, cpu_job)
}

/// [`refuse_owned_cores`] for the cores that `key` names, for `what`
/// (a host job, or its SQ thread: `sqpoll_cpu`).
pub(crate) fn refuse_owned(
    sec: &Section<'_>,
    virt: &Virt,
    (key, what): (&str, &str),
    cores: &[u32],
    cpu_job: bool,
) -> Result<(), ScenarioError> {
    let kvm = virt
        .hypervisor
        .as_ref()
        .is_some_and(|h| h.profile.kind == "kvm");
    for &c in cores {
        let owner = if virt
            .hypervisor
            .as_ref()
            .is_some_and(|h| h.cores.contains(&c))
        {
            Some("the hypervisor".to_string())
        } else {
            virt.guests
                .iter()
                .filter(|_| !(kvm && cpu_job))
                .find(|g| g.cores.contains(&c))
                .map(|g| match key {
                    "cpu" | "cpus" => {
                        format!("guest \"{}\" (give the job guest = \"{}\")", g.name, g.name)
                    }
                    _ => format!("guest \"{}\"", g.name),
                })
        };
        if let Some(owner) = owner {
            return Err(sec.error(
                key,
                format!("core {c} belongs to {owner}: {what} cannot run there"),
            ));
        }
    }
    Ok(())
}

/// Writes `[hypervisor]` and `[[guest]]` back into a rendered scenario.
pub(crate) fn render(virt: &Virt, doc: &mut toml_edit::DocumentMut) {
    use toml_edit::{value, Array, ArrayOfTables, Item, Table as TomlTable};
    if let Some(h) = &virt.hypervisor {
        let mut item = crate::render::struct_table(&h.profile);
        if let Some(t) = item.as_table_mut() {
            t["cores"] = value(h.cores.iter().map(|&c| i64::from(c)).collect::<Array>());
        }
        doc["hypervisor"] = item;
    }
    if virt.guests.is_empty() {
        return;
    }
    let mut guests = ArrayOfTables::new();
    for g in &virt.guests {
        let mut t = TomlTable::new();
        t["name"] = value(g.name.as_str());
        t["vcpus"] = value(i64::from(g.vcpus()));
        t["cores"] = value(g.cores.iter().map(|&c| i64::from(c)).collect::<Array>());
        t["irq_vcpu"] = value(i64::from(g.irq_vcpu));
        guests.push(t);
    }
    doc["guest"] = Item::ArrayOfTables(guests);
}
