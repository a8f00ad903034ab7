//! Re-derives every calibration target of docs/MODEL.md from the shipped
//! profiles (`optane-p4800x`, `p3700`, `optane-900p`, `xeon-e5-2660v4`)
//! and fails if one drifts: synchronous latencies within 10%, IRQ ratios
//! within 20%, the IOPS gain of cinterrupts over none within [20%, 45%],
//! the devices' saturation IOPS within 10% of the vendor sheets, and the
//! CPU targets added on 2026-11-23 (TOS'22 Figures 17 and 21): the CPU
//! shares of the `mixed` workload's two threads, and the urgent storm's
//! interrupt rate with the core saturated. Beside docs/MODEL.md's targets, the
//! published figure of the experiment `mixed` comes from (the OSDI'21
//! paper's Figure 5, as the authors' artifact runs it) is checked panel by
//! panel. Nothing here adjusts a model parameter: the profiles are used as
//! shipped.
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

/// Targets the shipped profiles do not meet, each with the mechanism that
/// would be needed, as docs/results/microbenchmarks.md ("Targets the model
/// misses") explains with the evidence. A miss listed here is printed, not
/// failed; any other miss fails. The bands stay the targets' own.
const KNOWN_MISSES: &[(&str, &str)] = &[
    (
        "optane-900p saturated 4 KiB RandRead (K IOPS)",
        "610K, 10.9% above the sheet's 'up to 550K': with its units striped (fitted to the \
         energy study's Table 1, where eight requests in flight gave 571K, already above the \
         sheet) deep queues end at the 2.5 GB/s read pipe of the sheet's sequential rate. The \
         same controller and media in the P4800X measured 585K at QD16 against the same 550K \
         sheet (AnandTech's review), so the sheet understates the controller; no measurement \
         of the 900P at depth sizes a command-rate limit between 571K and 610K, so the model \
         has none (docs/results/energy.md, 'Table 1, eight threads')",
    ),
    (
        "optane-p4800x saturated 4 KiB 70/30 mix (K IOPS)",
        "the shared pipe gives the harmonic mix of the two directions' own limits, \
         1 / (0.7 / 586K + 0.3 / 488K) = 553K; the excess is the pure-read figure's (586K \
         against the sheet's 550K, inside its own 10% band): with reads at the sheet's 550K \
         the same mix gives 522K, 4% above the sheet. A 70/30 mix rated below both directions \
         alone implies an interference between reads and writes in the media that no \
         measurement we have sizes, so the model has none (docs/HOST-COSTS.md, 'The shared \
         controller')",
    ),
    (
        "mixed none: async thread's CPU",
        "interrupt time, hard and soft, is in no thread's figure (CONFIG_IRQ_TIME_ACCOUNTING \
         in the reference kernel's configuration; getrusage's utime+stime add up to the task \
         clock, which leaves it out; the NVMe completion runs in the hard interrupt on Linux \
         5.0): about 30% of the core under none, so two threads cannot each be accounted 50%; \
         charged to the preempted thread (irq_time_accounting = false) they are 54% and 43% \
         (mixed_cpu_shares_under_either_interrupt_time_accounting)",
    ),
    (
        "mixed none: sync thread's CPU",
        "as above: interrupt time is accounted to the core, not to the threads",
    ),
    (
        "mixed cint: async thread's CPU",
        "as above, and the core idles 17%: with one batch of 16 in flight both threads block \
         at once (the async thread on its batch, whose completions wait for the Barrier, the \
         sync read in the device behind that batch); under none the handlers of those \
         completions fill the same gaps. In the artifact's job shape the core never idles \
         (mixed_in_the_artifacts_shape_saturates_the_core)",
    ),
    (
        "mixed cint: sync thread's CPU",
        "as above (the core idles 17% while both threads are blocked at once)",
    ),
    (
        "mixed adaptive: sync thread's CPU",
        "the target contradicts the paper's own measurement of this workload: Figure 5 \
         (OSDI'21; the artifact's fig5 run, adaptive 6 us / 32, same testbed) has the sync \
         reads at 0.24 x cinterrupts' IOPS (about 18 K/s) and 4.39 x its latency (about 56 us), \
         and at 18 K reads/s the thread's 23% would be 12.8 us of its own CPU per read, twice \
         the 6.7 us per read the urgent storm allows the whole core (interrupts and a switch \
         included); the model reproduces Figure 5 (mixed_against_the_papers_figure_5: 7.5% of \
         the core in that shape) and gives 17% in this one, where every async completion \
         restarts the quiescence timer and a read waits for its batch's end plus delta \
         (Algorithm 1, line 6, and the artifact's irq_poller)",
    ),
];

struct Check {
    failures: Vec<String>,
}

impl Check {
    fn report(&mut self, what: &str, ok: bool, line: String, failure: String) {
        let known = KNOWN_MISSES.iter().find(|(name, _)| *name == what);
        let verdict = match (ok, known) {
            (true, None) => "ok".to_string(),
            (true, Some(_)) => "ok (listed as a known miss: take it off the list)".to_string(),
            (false, Some((_, why))) => format!("MISS (known: {why})"),
            (false, None) => "DRIFT".to_string(),
        };
        println!("{line}  {verdict}");
        if !ok && known.is_none() {
            self.failures.push(failure);
        }
    }

    fn within(&mut self, what: &str, got: f64, target: f64, tolerance: f64) {
        let err = (got - target) / target;
        let line = format!(
            "{:<48} target {:>8.2}  model {:>8.2}  error {:>+6.1}%",
            what,
            target,
            got,
            100.0 * err,
        );
        let failure = format!("{what}: {got:.2} vs {target:.2}");
        self.report(what, err.abs() <= tolerance, line, failure);
    }

    fn between(&mut self, what: &str, got: f64, lo: f64, hi: f64) {
        let line = format!("{what:<48} target [{lo:.2}, {hi:.2}]  model {got:>8.2}");
        let failure = format!("{what}: {got:.3} outside [{lo}, {hi}]");
        self.report(what, (lo..=hi).contains(&got), line, failure);
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
        // preadv2 with RWF_HIPRI, so that the polling strategy polls it;
        // every other strategy sees a blocking read with the same costs
        // and the same default hint (Urgent) as pread.
        vec![preadv2_hipri("sync")],
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
    saturated_mix(device, rw, 100)
}

/// [`saturated`] with `rwmixread` percent reads for a mixed `rw`.
fn saturated_mix(device: &str, rw: Rw, rwmixread: u8) -> f64 {
    let jobs = (0..4)
        .map(|cpu| {
            let mut job = libaio(&format!("j{cpu}"), 128, 16, 16);
            job.cpu = cpu;
            if let Work::Io(io) = &mut job.work {
                io.rw = rw;
                io.rwmixread = rwmixread;
            }
            job
        })
        .collect();
    let mut sc = scenario(device, vec![none()], jobs);
    sc.host.cores = 4;
    cint_sim::run(&sc).expect("saturation runs").results[0].total_iops()
}

/// `mixed`: libaio (iodepth 16, batches of 16) and psync 4 KiB random
/// reads on one core of the reference host, on the P4800X.
fn mixed() -> RunResult {
    let async_job = libaio("async", 16, 16, 16);
    let mut sc = scenario(
        "optane-p4800x",
        vec![none(), adaptive(6 * US, 32), cint(6 * US, 32)],
        vec![async_job, psync("sync")],
    );
    sc.duration = 100 * MS;
    cint_sim::run(&sc).expect("mixed runs")
}

/// The urgent storm: four psync 4 KiB random-read threads on one core,
/// every read Urgent (the kernel's rule for a blocking pread),
/// cinterrupts 6 us / 32 with out-of-order reaping.
fn urgent_storm() -> StrategyResult {
    let mut sync = psync("sync");
    sync.numjobs = 4;
    let sc = scenario("optane-p4800x", vec![cint(6 * US, 32)], vec![sync]);
    let mut r = cint_sim::run(&sc).expect("urgent storm runs");
    r.results.remove(0)
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

    // CPU of the synchronous path (docs/MODEL.md, added 2026-11-23). Two
    // always-busy threads share a core about equally under CFS; under
    // adaptive the sync thread spends delta blocked on each read.
    let m = mixed();
    let share = |n: &str, job: usize| by_name(&m, n).jobs[job].cpu_util;
    for name in ["none", "cint"] {
        let (a, s) = (share(name, 0), share(name, 1));
        c.between(&format!("mixed {name}: async thread's CPU"), a, 0.40, 0.60);
        c.between(&format!("mixed {name}: sync thread's CPU"), s, 0.40, 0.60);
        // CFS's fairness between the two threads, whatever the interrupts
        // take: the sync thread's part of the threads' CPU.
        c.between(
            &format!("mixed {name}: sync part of the threads' CPU"),
            s / (a + s),
            0.40,
            0.60,
        );
    }
    c.within(
        "mixed adaptive: sync thread's CPU",
        share("adaptive", 1),
        0.23,
        0.20,
    );
    let storm = urgent_storm();
    c.within(
        "urgent storm: K IRQ/s",
        storm.interrupts_per_s / 1000.0,
        150.0,
        0.15,
    );
    c.between("urgent storm: core busy", storm.cpu_util, 0.97, 1.0);

    // Vendor sheets (docs/MODEL.md): the device's own limits, in K IOPS.
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
    // The vendor's mixed figure: one controller serves both directions
    // (crates/sim/src/device.rs). Intel's P4800X sheet: 500K IOPS for 4 KiB
    // random 70/30 read/write.
    c.within(
        "optane-p4800x saturated 4 KiB 70/30 mix (K IOPS)",
        saturated_mix("optane-p4800x", Rw::RandRw, 70) / 1000.0,
        500.0,
        0.10,
    );

    assert!(
        c.failures.is_empty(),
        "calibration drifted: {:#?}",
        c.failures
    );
}

/// What the OSDI'21 paper's Figure 5 printed over its bars, each relative
/// to cinterrupts: (none, adaptive) for total IOPS, sync IOPS, sync mean
/// latency and interrupts per second.
const FIGURE_5_RELATIVE: [(&str, f64, f64); 4] = [
    ("total IOPS", 0.83, 1.15),
    ("sync IOPS", 0.93, 0.24),
    ("sync latency", 1.06, 4.39),
    ("interrupts", 2.74, 0.25),
];

/// cinterrupts' own bars in Figure 5, read off the axes (to about 5%):
/// total IOPS in thousands, sync IOPS in thousands, sync mean latency in
/// us (the adaptive bar, 55.8 us, over its label 4.39), interrupts in
/// thousands per second (one per sync read: only Urgent interrupts).
const FIGURE_5_CINTERRUPTS: [(&str, f64); 4] = [
    ("total IOPS", 245.0),
    ("sync IOPS", 75.0),
    ("sync latency", 12.7),
    ("interrupts", 75.0),
];

/// The run behind the OSDI'21 paper's Figure 5, as the authors' artifact
/// makes it: `scenarios/mixed-fig5.toml` (its comments map the artifact's
/// `fig5/test.sh` to the file), 100 ms measured. The results come back in
/// the figure's order: none, adaptive, cinterrupts.
fn figure_5_run() -> [StrategyResult; 3] {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/mixed-fig5.toml");
    let sc = cint_scenario::load_file(&path, &["duration=100ms".to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    let r = cint_sim::run(&sc).expect("figure 5 runs");
    ["none", "adaptive", "cinterrupts"].map(|name| by_name(&r, name).clone())
}

/// The four panels of Figure 5 for one strategy of [`figure_5_run`]:
/// total IOPS (K), sync IOPS (K), sync mean latency (us), interrupts (K/s).
fn figure_5_panels(s: &StrategyResult) -> [f64; 4] {
    let sync = &s.jobs[1];
    [
        s.total_iops() / 1000.0,
        sync.iops / 1000.0,
        sync.lat_ns.mean / 1000.0,
        s.interrupts_per_s / 1000.0,
    ]
}

/// The model against the published figure of the experiment `mixed`
/// comes from (OSDI'21, Figure 5; the same testbed as docs/MODEL.md's
/// targets): every ratio the figure prints within 20%, as the IRQ ratios
/// above, and cinterrupts' own bars within 20%. The misses are listed with
/// their mechanism in KNOWN_MISSES and docs/results/microbenchmarks.md.
#[test]
fn mixed_against_the_papers_figure_5() {
    let [none, adaptive, cint] = figure_5_run().map(|s| figure_5_panels(&s));
    let mut c = Check {
        failures: Vec::new(),
    };
    for (i, (panel, target)) in FIGURE_5_CINTERRUPTS.iter().enumerate() {
        c.within(
            &format!("figure 5 cinterrupts: {panel}"),
            cint[i],
            *target,
            0.20,
        );
    }
    for (i, (panel, to_none, to_adaptive)) in FIGURE_5_RELATIVE.iter().enumerate() {
        c.within(
            &format!("figure 5 none / cinterrupts: {panel}"),
            none[i] / cint[i],
            *to_none,
            0.20,
        );
        c.within(
            &format!("figure 5 adaptive / cinterrupts: {panel}"),
            adaptive[i] / cint[i],
            *to_adaptive,
            0.20,
        );
    }
    assert!(c.failures.is_empty(), "figure 5 drifted: {:#?}", c.failures);
}

/// `mixed` as the authors' artifact ran it (`fig5/test.sh`: `--iodepth=16
/// --iodepth_batch_submit=1 --iodepth_batch_complete_min=1
/// --iodepth_batch_complete_max=16` on `fig5/rand_mix.fio`, which sets no
/// `barrier=1`, so the async requests carry no hint): the async thread
/// keeps 16 requests in flight and is runnable whenever any of them is
/// delivered. Two threads that always have work never leave the core idle;
/// the shipped `mixed` (one batch of 16 in flight) does idle, because there
/// both threads can be blocked at once (docs/results/microbenchmarks.md,
/// section 2). This pins the mechanism: an idle core in the artifact's
/// shape would be a scheduling or wake-up bug.
#[test]
fn mixed_in_the_artifacts_shape_saturates_the_core() {
    let async_job = fig5_libaio("async");
    let mut sc = scenario(
        "optane-p4800x",
        vec![none(), cint(6 * US, 32)],
        vec![async_job, psync("sync")],
    );
    sc.duration = 50 * MS;
    let r = cint_sim::run(&sc).expect("mixed (artifact shape) runs");
    for s in &r.results {
        let threads: f64 = s.jobs.iter().map(|j| j.cpu_util).sum();
        println!(
            "mixed (artifact shape) {:<5} core busy {:.3}  async {:.3}  sync {:.3}  threads {:.3}",
            s.strategy, s.cpu_util, s.jobs[0].cpu_util, s.jobs[1].cpu_util, threads
        );
        assert!(
            s.cpu_util >= 0.99,
            "{}: the core idles {:.1}% with two threads that always have work",
            s.strategy,
            100.0 * (1.0 - s.cpu_util)
        );
        // What the threads are not charged is the handlers' time
        // (CONFIG_IRQ_TIME_ACCOUNTING): never more than the core's.
        assert!(threads <= s.cpu_util + 1e-9, "{}", s.strategy);
    }
}

/// The per-thread CPU targets of `mixed` against the accounting. On a
/// kernel without `CONFIG_IRQ_TIME_ACCOUNTING` (not the reference one) the
/// handlers' time is charged to the thread they preempted, and `none`'s
/// threads then meet "each near 50%": the model's shares differ from the
/// paper's there only by the accounting. `adaptive`'s sync thread does not
/// move (its reads' interrupts arrive while it is blocked on them), so the
/// accounting is not what that known miss lacks.
#[test]
fn mixed_cpu_shares_under_either_interrupt_time_accounting() {
    let shares = |irq_time_accounting: bool| {
        let mut sc = scenario(
            "optane-p4800x",
            vec![none(), adaptive(6 * US, 32)],
            vec![libaio("async", 16, 16, 16), psync("sync")],
        );
        sc.duration = 100 * MS;
        sc.host.irq_time_accounting = irq_time_accounting;
        cint_sim::run(&sc).expect("mixed runs").results
    };
    let (reference, charged) = (shares(true), shares(false));
    for (what, r) in [("with", &reference), ("without", &charged)] {
        for s in r.iter() {
            println!(
                "mixed {:<8} {what:<7} IRQ time accounting: async {:.3}  sync {:.3}  core {:.3}",
                s.strategy, s.jobs[0].cpu_util, s.jobs[1].cpu_util, s.cpu_util
            );
        }
    }
    let (none_ref, none_charged) = (&reference[0], &charged[0]);
    assert!(none_ref.jobs.iter().any(|j| j.cpu_util < 0.40));
    for j in &none_charged.jobs {
        assert!(
            (0.40..=0.60).contains(&j.cpu_util),
            "{}: {}",
            j.name,
            j.cpu_util
        );
    }
    let sync = |r: &[cint_report::StrategyResult]| r[1].jobs[1].cpu_util;
    assert!((sync(&reference) - sync(&charged)).abs() < 0.01);
}
