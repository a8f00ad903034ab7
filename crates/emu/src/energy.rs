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
    /// RAPL's package counter (µJ) and its wrap range, or why not.
    rapl: Result<(u64, u64), String>,
}

fn read_u64(path: &str) -> Result<u64, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    text.trim()
        .parse()
        .map_err(|e| format!("{path}: {e} ({:?})", text.trim()))
}

fn idle_counters(cpu: u32) -> Option<Vec<IdleCounter>> {
    let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
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
            read_u64(&format!("{RAPL_ZONE}/max_energy_range_uj")).map(|range| (e, range))
        }),
    }
}

/// What one application core did in the window, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CoreTime {
    /// The application core (the scenario's `cpu`).
    pub core: u32,
    /// Not idle (threads, handlers, spinning).
    pub busy_ns: u64,
    /// Of `busy_ns`, spent spinning in completion poll loops.
    pub spin_ns: u64,
}

/// The energy figures of one strategy's window, and a note when RAPL
/// could not be read; `None` when the host or the device has no power
/// data (as on the simulator).
pub(crate) fn model(
    scenario: &Scenario,
    cores: &[CoreTime],
    before: &EnergySnapshot,
    after: &EnergySnapshot,
    window_ns: u64,
    bytes: u64,
) -> Option<(f64, EnergyResult, Option<String>)> {
    let (Some(host), Some(device)) = (&scenario.host.power, &scenario.device.power) else {
        return None;
    };
    let window_s = window_ns.max(1) as f64 / 1e9;
    let per_core: Vec<CoreEnergy> = cores
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let idle = (
                before.idle.get(i).cloned().flatten(),
                after.idle.get(i).cloned().flatten(),
            );
            core_energy(host, t.core, *t, idle, window_ns)
        })
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
        (Ok((e0, range)), Ok((e1, _))) => {
            // The counter wraps at its range.
            let uj = if e1 >= e0 { e1 - e0 } else { e1 + range - e0 };
            (Some(uj as f64 / 1e6), None)
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

/// A note when two application CPUs are hardware threads of one core of
/// an SMT host profile with power data: the model counts each as a core,
/// where the simulator takes the core's more active thread, because the
/// emulator measures each CPU's time per state, not when.
pub(crate) fn smt_siblings_note(scenario: &Scenario) -> Option<String> {
    scenario.host.power.as_ref()?;
    let smt = scenario
        .host
        .smt
        .as_ref()
        .filter(|s| s.threads_per_core > 1)?;
    let physical = (scenario.host.cores / smt.threads_per_core).max(1);
    let mut cpus: Vec<u32> = scenario
        .jobs
        .iter()
        .flat_map(|job| (0..job.numjobs).map(move |n| scenario.thread_core(job, n)))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let (a, b) = cpus.iter().enumerate().find_map(|(i, &a)| {
        cpus[i + 1..]
            .iter()
            .find(|&&b| b % physical == a % physical)
            .map(|&b| (a, b))
    })?;
    Some(format!(
        "energy: CPUs {a} and {b} are hardware threads of one core of host '{}'; the model \
         counts each as a core (it measures each CPU's time per state, not when, so it cannot \
         take the core's more active thread): the cores' energy is over-stated by up to one \
         core's",
        scenario.host.model
    ))
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

/// One core: busy at `core_busy_w`, spinning at `core_spin_w`, idle per
/// state at the state's power (cpuidle's residencies matched to the
/// profile's states by name; the rest of the idle time, and all of it
/// without cpuidle, in the first non-polling state), and each measured
/// entry of a state costing busy power over half its exit latency.
fn core_energy(
    host: &HostPower,
    core: u32,
    t: CoreTime,
    idle: (Option<Vec<IdleCounter>>, Option<Vec<IdleCounter>>),
    window_ns: u64,
) -> CoreEnergy {
    let busy = t.busy_ns.min(window_ns);
    let spin = t.spin_ns.min(busy);
    let idle_ns = window_ns - busy;
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
    for (s, &(ns, entries)) in host.idle_states.iter().zip(&per_state) {
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

    fn no_meter() -> EnergySnapshot {
        EnergySnapshot {
            idle: vec![None],
            rapl: Err("no such file".into()),
        }
    }

    #[test]
    fn sibling_application_cpus_of_an_smt_profile_get_a_note_and_others_none() {
        let spread = |cpus: &str| {
            let mut sc = scenario();
            let job = &mut sc.jobs[0];
            job.numjobs = 2;
            job.cpus = cpus.split(',').map(|c| c.parse().expect("a cpu")).collect();
            sc
        };
        // xeon-e3-1230v5: CPUs n and n + 4 are one core's threads.
        let note = smt_siblings_note(&spread("0,4")).expect("siblings");
        assert!(note.contains("CPUs 0 and 4"), "{note}");
        assert_eq!(smt_siblings_note(&spread("0,1")), None);
        let mut bare = spread("0,4");
        bare.host.smt = None;
        assert_eq!(smt_siblings_note(&bare), None);
    }

    #[test]
    fn a_core_spinning_all_window_draws_spin_power_and_the_uncore_stays_on() {
        let sc = scenario();
        let t = CoreTime {
            core: 0,
            busy_ns: 1_000_000,
            spin_ns: 900_000,
        };
        let (j, e, note) =
            model(&sc, &[t], &no_meter(), &no_meter(), 1_000_000, 4096).expect("power data");
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
        let t = CoreTime {
            core: 0,
            busy_ns: 250_000,
            spin_ns: 0,
        };
        let (_, e, _) =
            model(&sc, &[t], &no_meter(), &no_meter(), 1_000_000, 0).expect("power data");
        let c1 = e.cores[0]
            .residency
            .iter()
            .find(|r| r.state == "C1")
            .unwrap();
        assert!((c1.share - 0.75).abs() < 1e-12, "{c1:?}");
        assert!((e.uncore_j - 8.0 * 0.25e-3).abs() < 1e-12, "{e:?}");
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
            rapl: Ok((u64::from(u32::MAX) - 10, u64::from(u32::MAX))),
        };
        let after = EnergySnapshot {
            idle: vec![counters(600_000, 10)],
            rapl: Ok((40, u64::from(u32::MAX))),
        };
        let t = CoreTime {
            core: 0,
            busy_ns: 200_000,
            spin_ns: 0,
        };
        let (_, e, note) = model(&sc, &[t], &before, &after, 1_000_000, 0).expect("power data");
        assert_eq!(note, None);
        assert!((e.measured_package_j.unwrap() - 50e-6).abs() < 1e-12);
        let share = |n: &str| {
            e.cores[0]
                .residency
                .iter()
                .find(|r| r.state == n)
                .unwrap()
                .share
        };
        assert!((share("C6") - 0.6).abs() < 1e-12);
        // The 200 us of idle no counter covers: the halt state.
        assert!((share("C1") - 0.2).abs() < 1e-12);
        let entries = e.cores[0]
            .residency
            .iter()
            .find(|r| r.state == "C6")
            .unwrap()
            .entries;
        assert_eq!(entries, 10);
    }
}
