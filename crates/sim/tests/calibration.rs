//! Re-derives every calibration target of MODEL.md from the shipped
//! profiles (`optane-p4800x`, `p3700`, `optane-900p`, `xeon-e5-2660v4`)
//! and fails if one drifts: synchronous latencies within 10%, IRQ ratios
//! within 20%, the IOPS gain of cinterrupts over none within [20%, 45%],
//! the devices' saturation IOPS within 10% of the vendor sheets. Nothing here
//! adjusts a model parameter: the profiles are used as shipped.
//!
//! `cargo test --release -p cint-sim --test calibration -- --nocapture`
//! prints the table of targets and what the model gives.

mod common;

use cint_policy::{MS, US};
use cint_report::{RunResult, StrategyResult};
use cint_scenario::{CompletionMode, Rw, Work};
use common::*;

fn by_name<'a>(r: &'a RunResult, name: &str) -> &'a StrategyResult {
    r.results
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("strategy {name} missing"))
}

fn mean_us(r: &RunResult, name: &str) -> f64 {
    by_name(r, name).jobs[0].lat_ns.mean / 1000.0
}

struct Check {
    failures: Vec<String>,
}

impl Check {
    fn within(&mut self, what: &str, got: f64, target: f64, tolerance: f64) {
        let err = (got - target) / target;
        let ok = err.abs() <= tolerance;
        println!(
            "{:<48} target {:>8.2}  model {:>8.2}  error {:>+6.1}%  {}",
            what,
            target,
            got,
            100.0 * err,
            if ok { "ok" } else { "DRIFT" }
        );
        if !ok {
            self.failures
                .push(format!("{what}: {got:.2} vs {target:.2}"));
        }
    }

    fn between(&mut self, what: &str, got: f64, lo: f64, hi: f64) {
        let ok = (lo..=hi).contains(&got);
        println!(
            "{:<48} target [{lo:.2}, {hi:.2}]  model {got:>8.2}  {}",
            what,
            if ok { "ok" } else { "DRIFT" }
        );
        if !ok {
            self.failures
                .push(format!("{what}: {got:.3} outside [{lo}, {hi}]"));
        }
    }
}

fn sync_qd1(device: &str, delta: u64) -> RunResult {
    let mut sc = scenario(
        device,
        vec![
            none(),
            strategy("poll", CompletionMode::Poll),
            adaptive(delta, 32),
            nvme("nvme100", 100 * US, 32),
            nvme("nvme20", 20 * US, 32),
            nvme("nvme6", 6 * US, 32),
            cint(delta, 32),
        ],
        vec![psync("sync")],
    );
    sc.duration = 100 * MS;
    cint_sim::run(&sc).expect("sync-qd1 runs")
}

fn async_batch(device: &str, delta: u64) -> RunResult {
    let sc = scenario(
        device,
        vec![
            none(),
            adaptive(delta, 32),
            nvme("nvme20", 20 * US, 32),
            nvme("nvme6", 6 * US, 32),
            cint(delta, 32),
        ],
        vec![libaio("async", 256, 16, 16)],
    );
    cint_sim::run(&sc).expect("async-batch runs")
}

/// 4 KiB random reads or writes from four cores (libaio, iodepth 128 in
/// batches of 16 each): enough CPU and requests in flight that the device,
/// not the host, sets the IOPS.
fn saturated(device: &str, rw: Rw) -> f64 {
    let jobs = (0..4)
        .map(|cpu| {
            let mut job = libaio(&format!("j{cpu}"), 128, 16, 16);
            job.cpu = cpu;
            if let Work::Io(io) = &mut job.work {
                io.rw = rw;
            }
            job
        })
        .collect();
    let mut sc = scenario(device, vec![none()], jobs);
    sc.host.cores = 4;
    cint_sim::run(&sc).expect("saturation runs").results[0].total_iops()
}

#[test]
fn shipped_profiles_meet_every_calibration_target() {
    let mut c = Check {
        failures: Vec::new(),
    };

    let optane = sync_qd1("optane-p4800x", 6 * US);
    let none = mean_us(&optane, "none");
    c.within("optane psync QD1 none (us)", none, 10.0, 0.10);
    c.within(
        "optane psync QD1 poll (us, Table 2)",
        mean_us(&optane, "poll"),
        8.0,
        0.10,
    );
    c.within(
        "optane psync QD1 adaptive(6us) (us)",
        mean_us(&optane, "adaptive"),
        16.0,
        0.10,
    );
    c.within(
        "optane psync QD1 nvme100 (us)",
        mean_us(&optane, "nvme100"),
        none + 100.0,
        0.10,
    );
    c.within(
        "optane psync QD1 nvme20 (us)",
        mean_us(&optane, "nvme20"),
        none + 20.0,
        0.10,
    );
    c.within(
        "optane psync QD1 nvme6 (us)",
        mean_us(&optane, "nvme6"),
        none + 6.0,
        0.10,
    );
    c.within(
        "optane psync QD1 cinterrupts (us)",
        mean_us(&optane, "cint"),
        none,
        0.10,
    );

    let p3700 = sync_qd1("p3700", 15 * US);
    let none = mean_us(&p3700, "none");
    c.within("p3700 psync QD1 none (us, Table 2)", none, 80.0, 0.10);
    c.within(
        "p3700 psync QD1 poll (us, Table 2)",
        mean_us(&p3700, "poll"),
        78.0,
        0.10,
    );
    c.within(
        "p3700 psync QD1 adaptive(15us) (us)",
        mean_us(&p3700, "adaptive"),
        none + 15.0,
        0.10,
    );

    let a = async_batch("optane-p4800x", 6 * US);
    let irqs = |n: &str| by_name(&a, n).interrupts as f64;
    let iops = |n: &str| by_name(&a, n).total_iops();
    c.within(
        "async nvme20 / adaptive IRQs",
        irqs("nvme20") / irqs("adaptive"),
        1.7,
        0.20,
    );
    c.within(
        "async nvme6 / adaptive IRQs",
        irqs("nvme6") / irqs("adaptive"),
        4.2,
        0.20,
    );
    c.between(
        "async none / cinterrupts IRQs (12-15x +-20%)",
        irqs("none") / irqs("cint"),
        12.0 * 0.8,
        15.0 * 1.2,
    );
    c.between(
        "async cinterrupts / none IOPS",
        iops("cint") / iops("none"),
        1.20,
        1.45,
    );
    c.within(
        "async cinterrupts / adaptive IOPS",
        iops("cint") / iops("adaptive"),
        1.0,
        0.05,
    );

    // Vendor sheets (MODEL.md): the device's own limits, in K IOPS.
    for (device, rw, target) in [
        ("optane-p4800x", Rw::RandRead, 550.0),
        ("optane-p4800x", Rw::RandWrite, 500.0),
        ("p3700", Rw::RandRead, 450.0),
        ("p3700", Rw::RandWrite, 75.0),
        ("optane-900p", Rw::RandRead, 550.0),
        ("optane-900p", Rw::RandWrite, 500.0),
    ] {
        c.within(
            &format!("{device} saturated 4 KiB {rw:?} (K IOPS)"),
            saturated(device, rw) / 1000.0,
            target,
            0.10,
        );
    }

    assert!(
        c.failures.is_empty(),
        "calibration drifted: {:#?}",
        c.failures
    );
}
