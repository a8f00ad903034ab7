//! The host's cost spread (`host.cost_spread`) and the two sides of the
//! evidence about it (docs/HOST-COSTS.md, "Host-side variation").
//!
//! The journal's guarded storm leaves the core about 6% idle while the
//! four readers' throughput rises slightly. With exact host costs the
//! model's core stays saturated: the four closed loops never all wait at
//! once. Variation of the per-read CPU time is a mechanism that idles it,
//! but variation that large also reaches the batch targets (adaptive's one
//! interrupt per batch, the unbatched completion gaps that give the paper's
//! delta), which is why the shipped profile keeps its costs exact. These
//! tests pin both sides, so that a profile that reconciles them shows up
//! here.

mod common;

use cint_policy::config::{CinterruptsParams, StormGuardMode};
use cint_policy::US;
use cint_report::StrategyResult;
use cint_scenario::Scenario;
use common::*;

const MS: u64 = 1_000_000;
const CAP: u64 = 100_000;
/// A spread that idles the guarded storm about as much as the journal
/// reports.
const LARGE: f64 = 1.0;

fn with_spread(mut sc: Scenario, spread: f64) -> Scenario {
    sc.host.cost_spread = spread;
    sc.duration = 100 * MS;
    sc
}

/// `none` and the `rate` guard at 100 K IRQ/s on the urgent storm.
fn storm(spread: f64) -> (StrategyResult, StrategyResult) {
    let mut p = CinterruptsParams::with_adaptive(6 * US, 32);
    p.max_irq_rate = Some(CAP);
    p.guard = StormGuardMode::Rate;
    let mut sync = psync("sync");
    sync.numjobs = 4;
    let sc = scenario("optane-p4800x", vec![none(), cint_with(p)], vec![sync]);
    let mut r = cint_sim::run(&with_spread(sc, spread))
        .expect("urgent storm runs")
        .results;
    let guarded = r.remove(1);
    (r.remove(0), guarded)
}

#[test]
fn host_variation_lets_the_guarded_storm_idle_the_core() {
    let (none_exact, guard_exact) = storm(0.0);
    let (none_spread, guard_spread) = storm(LARGE);
    for (what, s) in [
        ("none, exact", &none_exact),
        ("guard, exact", &guard_exact),
        ("none, spread", &none_spread),
        ("guard, spread", &guard_spread),
    ] {
        println!(
            "{what:<14} {:>8.0} IOPS {:>8.0} IRQ/s  core {:>5.1}%",
            s.total_iops(),
            s.interrupts_per_s,
            100.0 * s.cpu_util
        );
    }
    // Exact costs: whatever CPU the guard frees becomes more reads.
    assert!(guard_exact.cpu_util >= 0.995, "{}", guard_exact.cpu_util);
    // Varied costs: the unguarded storm still saturates the core, the
    // guarded one leaves it idle at times, within the cap, and the
    // readers lose no throughput (the journal: 100% -> 94%, slight rise).
    assert!(none_spread.cpu_util >= 0.99, "{}", none_spread.cpu_util);
    assert!(guard_spread.cpu_util <= 0.97, "{}", guard_spread.cpu_util);
    assert!(guard_spread.interrupts_per_s <= CAP as f64);
    assert!(guard_spread.total_iops() >= none_spread.total_iops());
}

/// IRQs per I/O of adaptive and of NVMe aggregation (20 us) on
/// async-batch (libaio iodepth 256 in batches of 16).
fn batch_irqs_per_io(spread: f64) -> (f64, f64) {
    let sc = scenario(
        "optane-p4800x",
        vec![adaptive(6 * US, 32), nvme("nvme20", 20 * US, 32)],
        vec![libaio("async", 256, 16, 16)],
    );
    let r = cint_sim::run(&with_spread(sc, spread)).expect("async-batch runs");
    let per_io = |s: &StrategyResult| s.interrupts_per_s / s.total_iops();
    (per_io(&r.results[0]), per_io(&r.results[1]))
}

/// The 99th percentile of the completion gaps of unbatched libaio
/// (iodepth 256, one request per call) under `none`, in microseconds.
fn unbatched_gap_p99_us(spread: f64) -> f64 {
    let sc = scenario(
        "optane-p4800x",
        vec![none()],
        vec![libaio("async", 256, 1, 1)],
    );
    let gaps = cint_sim::completion_gaps(&with_spread(sc, spread)).expect("gaps recorded");
    gaps.stats().at(99.0).expect("gaps recorded") as f64 / 1e3
}

#[test]
fn host_variation_that_large_breaks_the_batch_targets() {
    let (adaptive_exact, nvme_exact) = batch_irqs_per_io(0.0);
    let (adaptive_spread, nvme_spread) = batch_irqs_per_io(LARGE);
    let (gap_exact, gap_spread) = (unbatched_gap_p99_us(0.0), unbatched_gap_p99_us(LARGE));
    println!(
        "exact:  adaptive {adaptive_exact:.4} IRQ/IO, nvme20 / adaptive {:.2}, unbatched gap p99 \
         {gap_exact:.2} us",
        nvme_exact / adaptive_exact
    );
    println!(
        "spread: adaptive {adaptive_spread:.4} IRQ/IO, nvme20 / adaptive {:.2}, unbatched gap p99 \
         {gap_spread:.2} us",
        nvme_spread / adaptive_spread
    );
    // Exact: one adaptive interrupt per batch of 16, gaps that give delta
    // = 6 us, and docs/MODEL.md's 1.7 x within the calibration test's 20%.
    assert!(
        (adaptive_exact - 1.0 / 16.0).abs() < 0.002,
        "{adaptive_exact}"
    );
    assert!(gap_exact <= 6.0, "{gap_exact}");
    assert!(nvme_exact / adaptive_exact <= 1.7 * 1.2);
    // Spread: the pause between batches sometimes falls under delta, two
    // batches share an interrupt, and the ratio leaves its band; the
    // unbatched gaps would make the paper's method choose a larger delta.
    assert!(adaptive_spread < 0.8 / 16.0, "{adaptive_spread}");
    assert!(nvme_spread / adaptive_spread > 1.7 * 1.2);
    assert!(gap_spread > 6.0, "{gap_spread}");
}
