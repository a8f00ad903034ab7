//! `cint emu`'s energy figures (docs/ENERGY.md, "cint emu"): the power
//! model applied to the measured busy, spin and idle time of each
//! application core; RAPL's package energy beside it where the machine
//! lets it be read, a note saying it could not be measured otherwise.
//! Nothing here depends on RAPL existing.

mod common;

use common::*;

const SCENARIO: &str = r#"
name = "emu-energy"
duration = "40ms"
warmup = "5ms"
[device]
model = "optane-900p"
[host]
model = "xeon-e3-1230v5"
# What these runs check does not need real-time handlers: run where
# SCHED_FIFO is refused too (the note then says so).
[emu]
realtime = "prefer"
[[strategy]]
name = "interrupt"
kind = "none"
[[strategy]]
name = "poll"
kind = "poll"
[[job]]
name = "reader"
engine = "pvsync2"
hipri = true
rw = "randread"
"#;

fn rapl_readable() -> bool {
    std::fs::read_to_string("/sys/class/powercap/intel-rapl:0/energy_uj").is_ok()
}

#[test]
fn energy_comes_from_the_model_and_the_meter_only_where_one_is_readable() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let sc = cint_scenario::load_str(SCENARIO, "e.toml", &[]).expect("valid scenario");
    let r = cint_emu::run(&sc).expect("runs");
    let host = sc.host.power.as_ref().expect("power data");
    let window_s = sc.duration as f64 / 1e9;
    for s in &r.results {
        let e = s.energy.as_ref().expect("energy with power data");
        let joules = s.energy_j.expect("energy_j");
        // Between every core asleep in the deepest state and every core
        // busy with the uncore on (the device's part on top of both).
        let floor = host.base_w * window_s;
        let ceiling =
            (host.base_w + host.uncore_w + 4.0 * host.core_busy_w) * window_s + e.device_j;
        assert!(
            joules > floor && joules <= ceiling + 1e-9,
            "{}: {joules} J",
            s.strategy
        );
        let parts =
            e.base_j + e.uncore_j + e.device_j + e.cores.iter().map(|c| c.energy_j).sum::<f64>();
        assert!(
            (parts - joules).abs() < 1e-9,
            "{}: {parts} vs {joules}",
            s.strategy
        );
        for c in &e.cores {
            let shares: f64 = c.residency.iter().map(|r| r.share).sum();
            assert!(
                (shares - 1.0).abs() < 1e-6,
                "{}: shares {shares}",
                s.strategy
            );
        }
        assert_eq!(
            e.measured_package_j.is_some(),
            rapl_readable(),
            "{}",
            s.strategy
        );
    }
    // The polling strategy's core spends its time spinning; the interrupt
    // strategy's never spins.
    let spin = |name: &str| {
        let s = r.results.iter().find(|s| s.strategy == name).expect(name);
        let core = &s.energy.as_ref().unwrap().cores[0];
        core.residency
            .iter()
            .find(|r| r.state == "spin")
            .unwrap()
            .share
    };
    assert!(spin("poll") > 0.5, "poll spins {}", spin("poll"));
    assert_eq!(spin("interrupt"), 0.0);
    let said = r.notes.iter().any(|n| n.contains("could not be measured"));
    assert_eq!(said, !rapl_readable(), "{:?}", r.notes);
}

/// `cint emu` on CPUs 0 and 4 of `xeon-e3-1230v5`, one core's two
/// hardware threads: one core in the result, its active time between the
/// busier CPU's and the two CPUs' together, and a note saying what of it
/// is a bound. The emulator lays scenario CPU 4 on the fifth CPU it may
/// use besides the device's, so this needs six.
#[test]
fn sibling_cpus_make_one_core_of_the_result() {
    let _g = serial();
    let cpus = cint_emu::sys::allowed_cpus().map_or(0, |c| c.len());
    if cpus < 6 {
        cint_test_support::skip::not_here(&format!(
            "needs 6 CPUs for scenario CPUs 0 and 4 and the device's, has {cpus}"
        ));
        return;
    }
    let text = SCENARIO.replace(
        "rw = \"randread\"\n",
        "rw = \"randread\"\ncpu = 0\n[[job]]\nname = \"sibling\"\nengine = \"pvsync2\"\n\
         hipri = true\nrw = \"randread\"\ncpu = 4\n",
    );
    let sc = cint_scenario::load_str(&text, "e.toml", &[]).expect("valid scenario");
    let detail = cint_emu::runner::run_detailed(&sc).expect("runs");
    let host = sc.host.power.as_ref().expect("power data");
    for (s, d) in detail.result.results.iter().zip(&detail.strategies) {
        let e = s.energy.as_ref().expect("energy");
        assert_eq!(e.cores.len(), 1, "{}: {e:?}", s.strategy);
        cint_test_support::energy::assert_core_between_its_threads(
            &s.strategy,
            &e.cores[0],
            &d.cpu_busy,
        );
        let window_s = d.window_ns as f64 / 1e9;
        let joules = s.energy_j.expect("energy_j");
        let ceiling = (host.base_w + host.uncore_w + host.core_busy_w) * window_s + e.device_j;
        assert!(joules > host.base_w * window_s && joules <= ceiling + 1e-9);
    }
    let note = detail
        .result
        .notes
        .iter()
        .find(|n| n.contains("CPUs 0 and 4"));
    assert!(
        note.is_some_and(|n| n.contains("upper bound")),
        "{:?}",
        detail.result.notes
    );
}
