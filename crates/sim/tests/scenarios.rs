//! Every shipped scenario file parses and runs on the simulator with the
//! run-time invariants on (they always are: a violation turns the run into
//! an error). Runs are shortened with `--set` to keep the suite fast.

use std::path::{Path, PathBuf};

use cint_scenario::load_file;

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_scenario_runs_with_invariants_on() {
    let files = shipped();
    for name in [
        "sync-qd1",
        "sync-qd1-p3700",
        "async-batch",
        "async-batch-p3700",
        "mixed",
        "mixed-thr",
        "barrier",
        "ooo",
        "ooo-capped",
        "urgent-storm",
        "xen-dd-busy-2",
    ] {
        assert!(
            files
                .iter()
                .any(|f| f.file_stem().is_some_and(|s| s == name)),
            "scenarios/{name}.toml is missing"
        );
    }
    // Long enough for deep-queues.toml's 28 threads to fill their 256
    // requests each (fio reaps once a queue is full) and reap.
    let sets = ["duration=40ms".to_string(), "warmup=2ms".to_string()];
    for file in &files {
        let sc = load_file(file, &sets).unwrap_or_else(|e| panic!("{e}"));
        let r = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(r.substrate, "sim");
        assert_eq!(r.results.len(), sc.strategies.len());
        for s in &r.results {
            let names: Vec<_> = s.jobs.iter().map(|j| j.name.as_str()).collect();
            let expected: Vec<_> = sc.jobs.iter().map(|j| j.name.as_str()).collect();
            // The fio jobs, then the applications' operation types.
            assert_eq!(names[..expected.len()], expected, "{}", file.display());
            assert_eq!(
                names.len() > expected.len(),
                !sc.apps.programs.is_empty(),
                "{}",
                file.display()
            );
            assert!(
                s.cpu_util > 0.0 && s.cpu_util <= 1.0 + 1e-9,
                "{}",
                file.display()
            );
            // Every I/O job moves data; a busy loop (the IPI-threshold
            // study's CPU program) does none.
            let io_jobs = s
                .jobs
                .iter()
                .zip(&sc.jobs)
                .filter(|(_, spec)| matches!(spec.work, cint_scenario::Work::Io(_)));
            for (j, _) in io_jobs {
                assert!(
                    j.ios > 0,
                    "{} {} {}: no I/O",
                    file.display(),
                    s.strategy,
                    j.name
                );
                assert_eq!(j.lat_ns.n, j.ios);
            }
        }
    }
}

#[test]
fn barrier_runs_with_more_threads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/barrier.toml");
    for n in [2, 4] {
        let sets = [
            "duration=10ms".to_string(),
            "warmup=1ms".to_string(),
            format!("job.batches.numjobs={n}"),
        ];
        let sc = load_file(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let r = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.results.iter().all(|s| s.jobs[0].ios > 0));
    }
}

fn load_shipped(name: &str, sets: &[String]) -> cint_scenario::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.toml"));
    load_file(&path, sets).unwrap_or_else(|e| panic!("{e}"))
}

/// The mixed experiment must show cinterrupts' mechanism: Urgent sync
/// reads interrupt at once (sync latency of none) while the async batches
/// are coalesced (far fewer IRQs than none). With one request per
/// io_submit every async request was a Barrier and cinterrupts equalled
/// none exactly; this test would have caught it.
#[test]
fn mixed_shows_urgent_sync_and_coalesced_async() {
    let sets = ["duration=40ms".to_string(), "warmup=4ms".to_string()];
    let r = cint_sim::run(&load_shipped("mixed", &sets)).unwrap_or_else(|e| panic!("{e}"));
    let get = |name: &str| {
        r.results
            .iter()
            .find(|s| s.strategy == name)
            .unwrap_or_else(|| panic!("strategy {name} missing"))
    };
    let sync_mean = |name: &str| {
        let s = get(name);
        let j = s.jobs.iter().find(|j| j.name == "sync").expect("sync job");
        j.lat_ns.mean
    };
    let (none, adaptive, cint) = (get("none"), get("adaptive"), get("cinterrupts"));
    assert!(
        (cint.interrupts as f64) < 0.5 * none.interrupts as f64,
        "cinterrupts {} IRQs vs none {}",
        cint.interrupts,
        none.interrupts
    );
    let (n, a, c) = (
        sync_mean("none"),
        sync_mean("adaptive"),
        sync_mean("cinterrupts"),
    );
    assert!(c < 1.1 * n, "cinterrupts sync {c} ns vs none {n} ns");
    assert!(a > 1.5 * n, "adaptive sync {a} ns vs none {n} ns");
    assert!(adaptive.interrupts < cint.interrupts);
}

/// urgent-storm: the guard keeps the IRQ rate at or under max_irq_rate
/// while every request is Urgent; without it cinterrupts interrupts on
/// every completion, like none.
#[test]
fn urgent_storm_guard_caps_the_irq_rate() {
    let sets = ["duration=40ms".to_string(), "warmup=4ms".to_string()];
    let r = cint_sim::run(&load_shipped("urgent-storm", &sets)).unwrap_or_else(|e| panic!("{e}"));
    let get = |name: &str| {
        r.results
            .iter()
            .find(|s| s.strategy == name)
            .unwrap_or_else(|| panic!("strategy {name} missing"))
    };
    let (none, cint, guard) = (get("none"), get("cinterrupts"), get("cinterrupts-guard"));
    let ios = |s: &cint_report::StrategyResult| s.jobs.iter().map(|j| j.ios).sum::<u64>();
    assert!(cint.interrupts as f64 >= 0.99 * ios(cint) as f64);
    assert!(none.interrupts as f64 >= 0.99 * ios(none) as f64);
    assert!(
        guard.interrupts_per_s <= 100_000.0,
        "{}",
        guard.interrupts_per_s
    );
}

/// `ooo-capped` holds the async job at one rate under every strategy,
/// near what `none` gives it uncapped in `ooo`, a figure written into the
/// file: when the model moves, the cap must move with it, or the
/// experiment no longer compares strategies at equal async throughput.
#[test]
fn ooo_capped_holds_every_strategys_async_job_at_its_cap() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let ooo = load_file(&dir.join("ooo.toml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    let capped = load_file(&dir.join("ooo-capped.toml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    let async_iops = |r: &cint_report::RunResult, strategy: &str| {
        r.results
            .iter()
            .find(|s| s.strategy == strategy)
            .and_then(|s| s.jobs.iter().find(|j| j.name == "async"))
            .map(|j| j.iops)
            .expect("an async job under the strategy")
    };
    let uncapped = async_iops(&cint_sim::run(&ooo).expect("ooo runs"), "none");
    let cap = capped
        .jobs
        .iter()
        .find(|j| j.name == "async")
        .and_then(|j| match &j.work {
            cint_scenario::Work::Io(io) => io.rate_iops,
            _ => None,
        })
        .expect("ooo-capped caps its async job") as f64;
    assert!(
        cap <= uncapped && cap >= 0.9 * uncapped,
        "scenarios/ooo-capped.toml: rate_iops = {cap}, none gives the async job {uncapped:.0} \
         IOPS uncapped in ooo"
    );
    let r = cint_sim::run(&capped).expect("ooo-capped runs");
    for s in &capped.strategies {
        let got = async_iops(&r, &s.name);
        assert!(
            (got - cap).abs() <= 0.005 * cap,
            "scenarios/ooo-capped.toml: '{}' runs the async job at {got:.0} IOPS, not at the cap {cap}",
            s.name
        );
    }
}
