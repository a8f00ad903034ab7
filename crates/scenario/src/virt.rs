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
pub const HYPERVISOR_MODELS: &[&str] = &["esx-like"];

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
}

impl HypervisorProfile {
    /// A built-in profile by name.
    pub fn builtin(model: &str) -> Option<HypervisorProfile> {
        match model {
            "esx-like" => Some(esx_like()),
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
        for &c in &cores {
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
    if profile.monitor_timer.0 == 0 {
        return Err(sec.error("monitor_timer", "must be longer than zero"));
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
/// vCPU or the hypervisor owns.
pub(crate) fn refuse_owned_cores(
    sec: &Section<'_>,
    virt: &Virt,
    cpu: u32,
    cpus: &[u32],
) -> Result<(), ScenarioError> {
    let (key, cores) = if cpus.is_empty() {
        ("cpu", std::slice::from_ref(&cpu))
    } else {
        ("cpus", cpus)
    };
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
                .find(|g| g.cores.contains(&c))
                .map(|g| format!("guest \"{}\" (give the job guest = \"{}\")", g.name, g.name))
        };
        if let Some(owner) = owner {
            return Err(sec.error(
                key,
                format!("core {c} belongs to {owner}: a host job cannot run there"),
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
