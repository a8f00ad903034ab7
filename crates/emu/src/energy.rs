//! Energy on the emulator (docs/ENERGY.md, "cint emu"): the simulator's
//! power model applied to what the emulator measured on each application
//! core over the window: its busy time (cpuidle's residency against the
//! wall clock, else the tick counters), the part of it its threads spent
//! spinning in completion poll loops (timed around each spin), and its
//! idle time per idle state where cpuidle reports one by the profile's
//! names. Without cpuidle (most virtual machines) the kernel idles with
//! `HLT`, the first non-polling state, and the idle time is charged to it.
//!
//! Where the machine exposes RAPL (`/sys/class/powercap/intel-rapl:0/
//! energy_uj`, readable), the package energy it measured over the window
//! is reported beside the model's; otherwise a note says it could not be
//! measured. The model's figures are never presented as a measurement.

use std::fs;

use cint_policy::Nanos;
use cint_report::{CoreEnergy, EnergyResult, StateResidency};
use cint_scenario::{DevicePower, HostPower, Scenario};

/// RAPL's package-0 zone.
const RAPL_ZONE: &str = "/sys/class/powercap/intel-rapl:0";

/// One idle state's counters on one CPU, as cpuidle lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IdleCounter {
    name: String,
    /// Residency, ns.
    time_ns: u64,
    /// Entries.
    usage: u64,
}

/// What is read at each end of the window besides the tick counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EnergySnapshot {
    /// Per application core (by index into the layout), its idle states,
    /// or `None` without cpuidle.
    idle: Vec<Option<Vec<IdleCounter>>>,
    /// RAPL's package counter (µJ), its wrap range and when it was read
    /// (this process's clock), or why not.
    rapl: Result<(u64, u64, Nanos), String>,
}

fn read_u64(path: &str) -> Result<u64, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    text.trim()
        .parse()
        .map_err(|e| format!("{path}: {e} ({:?})", text.trim()))
}

fn idle_counters(cpu: u32) -> Option<Vec<IdleCounter>> {
    let base = format!("{}/cpu{cpu}/cpuidle", crate::idle_watch::SYSFS_CPUS);
    let mut out = Vec::new();
    for k in 0.. {
        let dir = format!("{base}/state{k}");
        let Ok(name) = fs::read_to_string(format!("{dir}/name")) else {
            break;
        };
        out.push(IdleCounter {
            name: name.trim().to_string(),
            time_ns: read_u64(&format!("{dir}/time")).ok()?.saturating_mul(1_000),
            usage: read_u64(&format!("{dir}/usage")).ok()?,
        });
    }
    (!out.is_empty()).then_some(out)
}

/// Reads the counters of the real CPUs `cpus` (the application cores).
pub(crate) fn snapshot(cpus: &[u32]) -> EnergySnapshot {
    EnergySnapshot {
        idle: cpus.iter().map(|&c| idle_counters(c)).collect(),
        rapl: read_u64(&format!("{RAPL_ZONE}/energy_uj")).and_then(|e| {
            let at = crate::sys::now();
            read_u64(&format!("{RAPL_ZONE}/max_energy_range_uj")).map(|range| (e, range, at))
        }),
    }
}

/// What one application CPU did in the window, ns, as the CPU-level
/// counters and the spin timers measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTime {
    /// The application CPU (the scenario's `cpu`).
    pub cpu: u32,
    /// Not idle (threads, handlers, spinning).
    pub busy_ns: u64,
    /// Of `busy_ns`, spent spinning in completion poll loops.
    pub spin_ns: u64,
}

/// One physical core of the result: the application CPUs on it and, where
/// there are two or more (SMT siblings), what their threads' own clocks
/// measured of their overlap (`crate::activity`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PhysicalCore {
    /// Its number in the result (the physical core on an SMT host, as
    /// the simulator numbers it; else the CPU).
    pub core: u32,
    /// Indices into the CPU list.
    pub cpus: Vec<usize>,
    /// With two or more CPUs: their threads' merged states.
    pub overlap: Option<Overlap>,
}

/// What the job and handler threads of one physical core's CPUs
/// measured of themselves over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Overlap {
    /// Each CPU's threads' active (busy or spinning) time, summed over
    /// the CPUs.
    pub cpus_active_ns: u64,
    /// The core's merged states: busy while a thread of any of its CPUs
    /// ran, spin while none ran and one spun.
    pub core: crate::activity::StateTimes,
}

/// The energy figures of one strategy's window, and a note when RAPL
/// could not be read; `None` when the host or the device has no power
/// data (as on the simulator). `before` and `after` list the CPUs'
/// counters in the order of `cpus`.
pub(crate) fn model(
    scenario: &Scenario,
    cpus: &[CpuTime],
    cores: &[PhysicalCore],
    (before, after): (&EnergySnapshot, &EnergySnapshot),
    window_ns: u64,
    bytes: u64,
) -> Option<(f64, EnergyResult, Option<String>)> {
    let (Some(host), Some(device)) = (&scenario.host.power, &scenario.device.power) else {
        return None;
    };
    let window_s = window_ns.max(1) as f64 / 1e9;
    let idle: Vec<Vec<(u64, u64)>> = cpus
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let counters = (
                before.idle.get(i).cloned().flatten(),
                after.idle.get(i).cloned().flatten(),
            );
            idle_split(host, counters, window_ns - t.busy_ns.min(window_ns))
        })
        .collect();
    let per_core: Vec<CoreEnergy> = cores
        .iter()
        .map(|pc| physical_core_energy(host, pc, cpus, &idle, window_ns))
        .collect();
    // The uncore is on while any core is in C0. Which of the cores' C0
    // periods overlapped is not measured: taken as not overlapping (an
    // upper bound, exact with one active core).
    let c0_share: f64 = per_core
        .iter()
        .map(|c| {
            c.residency
                .iter()
                .filter(|r| {
                    matches!(r.state.as_str(), "busy" | "spin" | "irq")
                        || is_polling(host, &r.state)
                })
                .map(|r| r.share)
                .sum::<f64>()
        })
        .sum::<f64>()
        .min(1.0);
    let base_j = host.base_w * window_s;
    let uncore_j = host.uncore_w * window_s * c0_share;
    let device_j = device_energy(device, window_s, bytes);
    let cores_j: f64 = per_core.iter().map(|c| c.energy_j).sum();
    let energy_j = base_j + uncore_j + device_j + cores_j;
    let (measured, note) = match (&before.rapl, &after.rapl) {
        (Ok((e0, range, t0)), Ok((e1, _, t1))) => {
            // The counter wraps at its range.
            let uj = if e1 >= e0 { e1 - e0 } else { e1 + range - e0 };
            // The counter is read outside the window's edges, with the
            // other samples between (milliseconds when this thread is
            // preempted): its energy is taken at its mean power over
            // the window's length.
            let span = t1.saturating_sub(*t0);
            let scale = if span > 0 {
                window_ns as f64 / span as f64
            } else {
                1.0
            };
            (Some(uj as f64 / 1e6 * scale), None)
        }
        (Err(why), _) | (_, Err(why)) => (
            None,
            Some(format!(
                "energy: the package energy could not be measured (RAPL: {why}); the energy \
                 figures are the power model's, applied to the measured busy, spin and idle \
                 times"
            )),
        ),
    };
    let result = EnergyResult {
        source: "model".into(),
        governor: if before.idle.iter().any(Option::is_some) {
            "as measured by cpuidle".into()
        } else {
            "none (no cpuidle: idle as HLT)".into()
        },
        power_w: energy_j / window_s,
        bytes_per_joule: if energy_j > 0.0 {
            bytes as f64 / energy_j
        } else {
            0.0
        },
        base_j,
        uncore_j,
        device_j,
        cores: per_core,
        measured_package_j: measured,
    };
    Some((energy_j, result, note))
}

/// A note for each physical core of an SMT host (with power data) on
/// which two or more application CPUs ran: what its state was taken
/// from, and what of it is still not measured.
pub(crate) fn siblings_note(
    scenario: &Scenario,
    groups: &[crate::activity::CoreGroup],
) -> Option<String> {
    scenario.host.power.as_ref()?;
    let notes: Vec<String> = groups
        .iter()
        .filter(|g| g.cpus.len() > 1)
        .map(|g| {
            let cpus: Vec<String> = g.cpus.iter().map(|(cpu, _)| cpu.to_string()).collect();
            let how = if g.tracked {
                "its state is the more active thread's, from when the emulator's threads on \
                 them ran, spun and blocked; the kernel's own work on them is taken as not \
                 overlapping (its busy time is an upper bound), and its idle \
                 depth is bounded by the CPUs' residencies"
            } else {
                "too many threads or too long a run to time them together, so each counts \
                 as a core (its energy is over-stated by up to one core's)"
            };
            format!(
                "energy: CPUs {} are hardware threads of core {} of host '{}': {how}",
                cpus.join(" and "),
                g.core,
                scenario.host.model
            )
        })
        .collect();
    (!notes.is_empty()).then(|| notes.join("; "))
}

fn is_polling(host: &HostPower, state: &str) -> bool {
    host.idle_states
        .iter()
        .any(|s| s.polling && s.name == state)
}

fn device_energy(device: &DevicePower, window_s: f64, bytes: u64) -> f64 {
    // w_per_gbps watts per GB/s: joules per GB, nanojoules per byte.
    device.idle_w * window_s + device.w_per_gbps * bytes as f64 * 1e-9
}

/// One CPU's idle time per idle state, ns, and its entries: cpuidle's
/// residencies matched to the profile's states by name; the rest of the
/// idle time, and all of it without cpuidle, in the first non-polling
/// state.
fn idle_split(
    host: &HostPower,
    idle: (Option<Vec<IdleCounter>>, Option<Vec<IdleCounter>>),
    idle_ns: u64,
) -> Vec<(u64, u64)> {
    let mut per_state: Vec<(u64, u64)> = vec![(0, 0); host.idle_states.len()];
    if let (Some(b), Some(a)) = idle {
        for c in &a {
            let Some(i) = host.idle_states.iter().position(|s| s.name == c.name) else {
                continue;
            };
            if let Some(was) = b.iter().find(|x| x.name == c.name) {
                per_state[i].0 += c.time_ns.saturating_sub(was.time_ns);
                per_state[i].1 += c.usage.saturating_sub(was.usage);
            }
        }
    }
    // Scale the matched residencies into the idle time the busy
    // fraction leaves (the two are read at slightly different instants),
    // and put what no matched state covers into the halt state.
    let matched: u64 = per_state.iter().map(|p| p.0).sum();
    if matched > idle_ns {
        for p in &mut per_state {
            p.0 = (p.0 as u128 * idle_ns as u128 / matched as u128) as u64;
        }
    }
    let covered: u64 = per_state.iter().map(|p| p.0).sum();
    if let Some(halt) = host.idle_states.iter().position(|s| !s.polling) {
        per_state[halt].0 += idle_ns - covered;
    } else if let Some(first) = per_state.first_mut() {
        first.0 += idle_ns - covered;
    }
    per_state
}

/// One physical core's busy, spin and per-state idle time from its CPUs'.
///
/// One CPU: its own figures. Two or more (SMT siblings): the core is
/// active while any of them is, so its active time is the CPUs' summed
/// busy time less the time their job and handler threads were active
/// together (the threads' clocks measure it). A thread that is runnable
/// keeps its pinned CPU out of idle, so the threads' overlap is part of
/// the CPUs' overlap: the result is an upper bound, exact when the
/// threads are all that ran there; the kernel's own work on the CPUs is
/// taken as not overlapping. It is kept between the busiest CPU's
/// and the window. Spin: the time some thread spun and none ran. Idle:
/// the core is in a state at least as deep as `s` only while every CPU
/// is, so that time is at most the least any CPU spent in such states
/// (taken as equal: exact when the CPUs' idle periods nest, else the
/// depth is over-stated), and each state's entries are the fewest any
/// CPU made.
fn physical_core_energy(
    host: &HostPower,
    pc: &PhysicalCore,
    cpus: &[CpuTime],
    idle: &[Vec<(u64, u64)>],
    window_ns: u64,
) -> CoreEnergy {
    let busy: Vec<u64> = pc
        .cpus
        .iter()
        .map(|&i| cpus[i].busy_ns.min(window_ns))
        .collect();
    let most = busy.iter().copied().max().unwrap_or(0);
    let (active, spin) = match &pc.overlap {
        None => {
            let spin = pc.cpus.iter().map(|&i| cpus[i].spin_ns).sum::<u64>();
            (most, spin.min(most))
        }
        Some(o) => {
            let together = o.cpus_active_ns.saturating_sub(o.core.active_ns());
            let active = busy
                .iter()
                .sum::<u64>()
                .saturating_sub(together)
                .clamp(most, window_ns);
            (active, o.core.spin_ns.min(active))
        }
    };
    let idle_ns = window_ns - active;
    let states = host.idle_states.len();
    // deeper[s]: the core's time in state s or deeper.
    let mut deeper = vec![0u64; states + 1];
    let mut per_state = vec![(0u64, 0u64); states];
    for s in (0..states).rev() {
        let least_deep = pc
            .cpus
            .iter()
            .map(|&i| idle[i][s..].iter().map(|p| p.0).sum::<u64>())
            .min()
            .unwrap_or(0);
        deeper[s] = least_deep.min(idle_ns).max(deeper[s + 1]);
        per_state[s] = (
            deeper[s] - deeper[s + 1],
            pc.cpus.iter().map(|&i| idle[i][s].1).min().unwrap_or(0),
        );
    }
    // What no state covers (only with no idle state at all).
    if let Some(first) = per_state.first_mut() {
        first.0 += idle_ns - deeper[0];
    }
    core_energy(host, pc.core, (active, spin), &per_state, window_ns)
}

/// One core: busy at `core_busy_w`, spinning at `core_spin_w`, idle per
/// state at the state's power, and each measured entry of a state
/// costing busy power over half its exit latency.
fn core_energy(
    host: &HostPower,
    core: u32,
    (busy, spin): (u64, u64),
    per_state: &[(u64, u64)],
    window_ns: u64,
) -> CoreEnergy {
    let share = |ns: u64| ns as f64 / window_ns.max(1) as f64;
    let mut joules =
        host.core_busy_w * (busy - spin) as f64 * 1e-9 + host.core_spin_w * spin as f64 * 1e-9;
    let mut residency = vec![
        StateResidency {
            state: "busy".into(),
            share: share(busy - spin),
            entries: 0,
        },
        StateResidency {
            state: "spin".into(),
            share: share(spin),
            entries: 0,
        },
        StateResidency {
            state: "irq".into(),
            share: 0.0,
            entries: 0,
        },
    ];
    for (s, &(ns, entries)) in host.idle_states.iter().zip(per_state) {
        joules += s.power_w * ns as f64 * 1e-9
            + entries as f64 * host.core_busy_w * s.exit_latency.0 as f64 * 0.5e-9;
        residency.push(StateResidency {
            state: s.name.clone(),
            share: share(ns),
            entries,
        });
    }
    CoreEnergy {
        core,
        energy_j: joules,
        power_w: joules / (window_ns.max(1) as f64 / 1e9),
        residency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = "name = \"e\"\nduration = \"1ms\"\n[device]\nmodel = \"optane-900p\"\n\
                    [host]\nmodel = \"xeon-e3-1230v5\"\n[[strategy]]\nname = \"p\"\nkind = \"poll\"\n\
                    [[job]]\nname = \"r\"\nengine = \"pvsync2\"\nhipri = true\n";
        cint_scenario::load_str(text, "e.toml", &[]).expect("valid")
    }

    /// Each application CPU as a core of its own (a host without SMT, or
    /// CPUs that share no physical core).
    fn one_core_per_cpu(cpus: &[CpuTime]) -> Vec<PhysicalCore> {
        cpus.iter()
            .enumerate()
            .map(|(i, t)| PhysicalCore {
                core: t.cpu,
                cpus: vec![i],
                overlap: None,
            })
            .collect()
    }

    /// The first core's residency in state `name`.
    fn state(e: &EnergyResult, name: &str) -> StateResidency {
        e.cores[0]
            .residency
            .iter()
            .find(|r| r.state == name)
            .expect("every state is listed")
            .clone()
    }

    fn no_meter() -> EnergySnapshot {
        EnergySnapshot {
            idle: vec![None],
            rapl: Err("no such file".into()),
        }
    }

    fn two_jobs(cpus: [u32; 2]) -> Scenario {
        let mut sc = scenario();
        let mut other = sc.jobs[0].clone();
        other.name = "r2".into();
        other.cpu = cpus[1];
        sc.jobs[0].cpu = cpus[0];
        sc.jobs.push(other);
        sc
    }

    fn groups(sc: &Scenario) -> Vec<crate::activity::CoreGroup> {
        let mut app: Vec<(u32, u32)> = sc.jobs.iter().map(|j| (j.cpu, j.cpu)).collect();
        app.sort_unstable();
        app.dedup();
        crate::activity::core_groups(sc, &app)
    }

    #[test]
    fn sibling_application_cpus_of_an_smt_profile_make_one_core_with_a_note() {
        // xeon-e3-1230v5: CPUs n and n + 4 are one core's threads.
        let sc = two_jobs([0, 4]);
        let g = groups(&sc);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!((g[0].core, g[0].tracked), (0, true));
        let note = siblings_note(&sc, &g).expect("siblings");
        assert!(
            note.contains("CPUs 0 and 4") && note.contains("upper bound"),
            "{note}"
        );
        let apart = two_jobs([0, 1]);
        assert_eq!(groups(&apart).len(), 2);
        assert_eq!(siblings_note(&apart, &groups(&apart)), None);
        // CPU 5 alone is physical core 1, as the simulator numbers it.
        let five = two_jobs([5, 5]);
        assert_eq!(groups(&five)[0].core, 1);
        let mut bare = two_jobs([0, 4]);
        bare.host.smt = None;
        assert_eq!(groups(&bare).len(), 2);
        assert_eq!(siblings_note(&bare, &groups(&bare)), None);
        // More threads than a clock counts: each CPU a core, said so.
        let mut crowded = two_jobs([0, 4]);
        crowded.jobs[0].numjobs = crate::activity::MAX_THREADS as u32;
        let g = groups(&crowded);
        assert!(!g[0].tracked);
        let note = siblings_note(&crowded, &g).expect("siblings");
        assert!(note.contains("each counts as a core"), "{note}");
    }

    /// Two siblings, each busy 40% of the window: their threads ran
    /// together for 10%, so the core was active 70%; spin from the
    /// merged clock; idle C1 (no cpuidle) the rest. The result lies
    /// between one CPU's energy and the two CPUs counted apart.
    #[test]
    fn siblings_combine_by_their_threads_measured_overlap() {
        let sc = two_jobs([0, 4]);
        let host = sc.host.power.as_ref().unwrap();
        let window = 1_000_000;
        let cpus = [
            CpuTime {
                cpu: 0,
                busy_ns: 400_000,
                spin_ns: 100_000,
            },
            CpuTime {
                cpu: 4,
                busy_ns: 400_000,
                spin_ns: 0,
            },
        ];
        let merged = crate::activity::StateTimes {
            busy_ns: 600_000,
            spin_ns: 100_000,
            idle_ns: 300_000,
        };
        let pc = PhysicalCore {
            core: 0,
            cpus: vec![0, 1],
            overlap: Some(Overlap {
                cpus_active_ns: 800_000,
                core: merged,
            }),
        };
        let meter = EnergySnapshot {
            idle: vec![None, None],
            rapl: Err("none".into()),
        };
        let (_, e, _) = model(&sc, &cpus, &[pc], (&meter, &meter), window, 0).expect("power");
        assert_eq!(e.cores.len(), 1);
        let share = |n: &str| state(&e, n).share;
        assert!((share("busy") - 0.6).abs() < 1e-12, "{e:?}");
        assert!((share("spin") - 0.1).abs() < 1e-12, "{e:?}");
        assert!((share("C1") - 0.3).abs() < 1e-12, "{e:?}");
        let want = host.core_busy_w * 6e-4 + host.core_spin_w * 1e-4 + c1_w(&sc) * 3e-4;
        assert!((e.cores[0].energy_j - want).abs() < 1e-12, "{e:?}");
        let (_, apart, _) = model(
            &sc,
            &cpus,
            &one_core_per_cpu(&cpus),
            (&meter, &meter),
            window,
            0,
        )
        .expect("power");
        let apart_j: f64 = apart.cores.iter().map(|c| c.energy_j).sum();
        assert!(e.cores[0].energy_j < apart_j, "{e:?} {apart:?}");
        assert!(e.cores[0].energy_j > apart.cores[0].energy_j);
    }

    fn c1_w(sc: &Scenario) -> f64 {
        let host = sc.host.power.as_ref().unwrap();
        host.idle_states
            .iter()
            .find(|s| s.name == "C1")
            .unwrap()
            .power_w
    }

    /// A thread overlap measured larger than the CPU counters allow (the
    /// two are read at different instants) cannot put the core below its
    /// busier CPU; the core's C6 time is no more than either CPU's.
    #[test]
    fn the_core_stays_within_its_cpus_and_idles_no_deeper_than_both() {
        let sc = two_jobs([0, 4]);
        let window = 1_000_000;
        let cpus = [
            CpuTime {
                cpu: 0,
                busy_ns: 300_000,
                spin_ns: 0,
            },
            CpuTime {
                cpu: 4,
                busy_ns: 100_000,
                spin_ns: 0,
            },
        ];
        let counters = |c6_ns| {
            Some(vec![IdleCounter {
                name: "C6".into(),
                time_ns: c6_ns,
                usage: c6_ns / 100_000,
            }])
        };
        let zero = EnergySnapshot {
            idle: vec![counters(0), counters(0)],
            rapl: Err("none".into()),
        };
        let after = EnergySnapshot {
            idle: vec![counters(500_000), counters(800_000)],
            rapl: Err("none".into()),
        };
        let pc = PhysicalCore {
            core: 0,
            cpus: vec![0, 1],
            overlap: Some(Overlap {
                cpus_active_ns: 900_000,
                core: crate::activity::StateTimes {
                    busy_ns: 100_000,
                    spin_ns: 0,
                    idle_ns: 900_000,
                },
            }),
        };
        let (_, e, _) = model(&sc, &cpus, &[pc], (&zero, &after), window, 0).expect("power");
        let r = |n: &str| state(&e, n);
        assert!((r("busy").share - 0.3).abs() < 1e-12, "{e:?}");
        assert!((r("C6").share - 0.5).abs() < 1e-12, "{e:?}");
        assert_eq!(r("C6").entries, 5);
        assert!((r("C1").share - 0.2).abs() < 1e-12, "{e:?}");
        let shares: f64 = e.cores[0].residency.iter().map(|r| r.share).sum();
        assert!((shares - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_core_spinning_all_window_draws_spin_power_and_the_uncore_stays_on() {
        let sc = scenario();
        let t = CpuTime {
            cpu: 0,
            busy_ns: 1_000_000,
            spin_ns: 900_000,
        };
        let (j, e, note) = model(
            &sc,
            &[t],
            &one_core_per_cpu(&[t]),
            (&no_meter(), &no_meter()),
            1_000_000,
            4096,
        )
        .expect("power data");
        let host = sc.host.power.as_ref().unwrap();
        let core = host.core_busy_w * 1e-4 + host.core_spin_w * 9e-4;
        assert!((e.cores[0].energy_j - core).abs() < 1e-12, "{e:?}");
        assert!((e.uncore_j - host.uncore_w * 1e-3).abs() < 1e-12);
        assert!((j - (e.base_j + e.uncore_j + e.device_j + core)).abs() < 1e-12);
        assert_eq!(e.measured_package_j, None);
        assert!(note.expect("a note").contains("could not be measured"));
    }

    #[test]
    fn idle_time_without_cpuidle_is_charged_to_the_halt_state() {
        let sc = scenario();
        let (e, _) = one_cpu_over_a_millisecond(&sc, 250_000, (&no_meter(), &no_meter()));
        let c1 = state(&e, "C1");
        assert!((c1.share - 0.75).abs() < 1e-12, "{c1:?}");
        assert!((e.uncore_j - 8.0 * 0.25e-3).abs() < 1e-12, "{e:?}");
    }

    /// The model of one CPU busy `busy_ns` of a 1 ms window moving no
    /// bytes, between the meter readings `meters`.
    fn one_cpu_over_a_millisecond(
        sc: &Scenario,
        busy_ns: u64,
        meters: (&EnergySnapshot, &EnergySnapshot),
    ) -> (EnergyResult, Option<String>) {
        let t = CpuTime {
            cpu: 0,
            busy_ns,
            spin_ns: 0,
        };
        let (_, e, note) =
            model(sc, &[t], &one_core_per_cpu(&[t]), meters, 1_000_000, 0).expect("power data");
        (e, note)
    }

    #[test]
    fn measured_residencies_by_name_and_a_wrapping_meter() {
        let sc = scenario();
        let counters = |c6_ns, usage| {
            Some(vec![
                IdleCounter {
                    name: "POLL".into(),
                    time_ns: 0,
                    usage: 0,
                },
                IdleCounter {
                    name: "C6".into(),
                    time_ns: c6_ns,
                    usage,
                },
            ])
        };
        let before = EnergySnapshot {
            idle: vec![counters(0, 0)],
            rapl: Ok((u64::from(u32::MAX) - 10, u64::from(u32::MAX), 5_000)),
        };
        let after = EnergySnapshot {
            idle: vec![counters(600_000, 10)],
            rapl: Ok((40, u64::from(u32::MAX), 1_005_000)),
        };
        let (e, note) = one_cpu_over_a_millisecond(&sc, 200_000, (&before, &after));
        assert_eq!(note, None);
        assert!((e.measured_package_j.unwrap() - 50e-6).abs() < 1e-12);
        let share = |n: &str| state(&e, n).share;
        assert!((share("C6") - 0.6).abs() < 1e-12);
        // The 200 us of idle no counter covers: the halt state.
        assert!((share("C1") - 0.2).abs() < 1e-12);
        let entries = state(&e, "C6").entries;
        assert_eq!(entries, 10);
    }

    #[test]
    fn a_meter_read_around_a_longer_span_is_taken_over_the_window() {
        // 300 uJ over the 3 ms between the reads, around a 1 ms window:
        // the package drew 100 uJ in the window at its mean power.
        let sc = scenario();
        let before = EnergySnapshot {
            idle: vec![None],
            rapl: Ok((1_000, u64::from(u32::MAX), 10_000)),
        };
        let after = EnergySnapshot {
            idle: vec![None],
            rapl: Ok((1_300, u64::from(u32::MAX), 3_010_000)),
        };
        let (e, _) = one_cpu_over_a_millisecond(&sc, 500_000, (&before, &after));
        let j = e.measured_package_j.expect("measured");
        assert!((j - 100e-6).abs() < 1e-12, "{j}");
    }
}
