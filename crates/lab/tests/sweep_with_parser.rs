//! Sweeps through the real scenario parser: the varied keys are exactly
//! the `--set` keys, and its refusals come back as one line naming the
//! point.

use cint_lab::sweep::{run_sweep, Progress, SweepArgs};
use cint_report::{EngineError, JobResult, LatencyHistogram, RunResult, StrategyResult};
use cint_scenario::{load_str, CompletionMode, Scenario, Work};

const SCENARIO: &str = r#"
name = "mixed-thr"
duration = "20ms"

[[strategy]]
name = "default"
kind = "none"

[[strategy]]
name  = "adaptive"
kind  = "adaptive"
delta = "6us"
thr   = 32

[[job]]
name    = "async"
engine  = "libaio"
rw      = "randread"
iodepth = 256
batch   = 16

[[job]]
name   = "sync"
engine = "psync"
rw     = "randread"
"#;

fn loader(sets: &[String]) -> Result<Scenario, String> {
    load_str(SCENARIO, "mixed-thr.toml", sets).map_err(|e| e.to_string())
}

/// Echoes the parameters a sweep varies into the result, so the test sees
/// that every point ran the scenario it asked for.
fn echo(s: &Scenario) -> Result<RunResult, EngineError> {
    let results = s
        .strategies
        .iter()
        .map(|st| {
            let thr = match st.mode {
                CompletionMode::Interrupt(cint_policy::PolicyConfig::Adaptive(p)) => p.thr,
                _ => 1,
            };
            let jobs = s
                .jobs
                .iter()
                .map(|j| {
                    let depth = match &j.work {
                        Work::Io(io) => io.iodepth,
                        Work::Cpu => 0,
                    };
                    let mut h = LatencyHistogram::new();
                    h.record(u64::from(depth) * 1_000);
                    JobResult {
                        name: j.name.clone(),
                        ios: 1,
                        iops: f64::from(depth),
                        bw_bytes: 0,
                        cpu_util: 0.5,
                        context_switches: 0,
                        wakeups: 0,
                        lat_ns: h.stats(),
                        fio: None,
                        trace: None,
                        sync: None,
                        modes: None,
                    }
                })
                .collect();
            StrategyResult {
                strategy: st.name.clone(),
                kind: st.kind().into(),
                interrupts: 0,
                interrupts_per_s: f64::from(thr),
                urgent_interrupts: 0,
                cpu_util: 1.0,
                context_switches: 0,
                wakeups: 0,
                energy_j: None,
                energy: None,
                virt: None,
                jobs,
            }
        })
        .collect();
    Ok(RunResult {
        cint_version: cint_report::CINT_VERSION.into(),
        scenario: s.name.clone(),
        substrate: "echo".into(),
        device: s.device.model.clone(),
        host: s.host.model.clone(),
        seed: s.seed,
        duration_ns: s.duration,
        results,
        notes: Vec::new(),
    })
}

fn args(vary: &[&str]) -> SweepArgs {
    SweepArgs {
        vary: vary
            .iter()
            .map(|v| v.parse().expect("valid --vary"))
            .collect(),
        workers: 3,
        progress: Progress::Never,
        ..SweepArgs::default()
    }
}

#[test]
fn varied_keys_reach_the_runs_through_the_parser() {
    let sweep = run_sweep(
        &loader,
        &echo,
        &args(&["strategy.adaptive.thr=4,8,16", "job.async.iodepth=64,256"]),
    )
    .expect("sweep");
    let rows = sweep.rows();
    // 6 points x 2 strategies x 2 jobs.
    assert_eq!(rows.len(), 24);
    let adaptive_async: Vec<(String, String, f64, f64)> = rows
        .iter()
        .filter(|r| r.strategy == "adaptive" && r.job == "async")
        .map(|r| {
            (
                r.point["strategy.adaptive.thr"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                r.point["job.async.iodepth"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                r.interrupts_per_s,
                r.iops,
            )
        })
        .collect();
    let expected: Vec<(String, String, f64, f64)> =
        [(4, 64), (4, 256), (8, 64), (8, 256), (16, 64), (16, 256)]
            .iter()
            .map(|&(t, d)| (t.to_string(), d.to_string(), f64::from(t), f64::from(d)))
            .collect();
    assert_eq!(adaptive_async, expected);
    let mut csv = Vec::new();
    sweep.write_csv(&mut csv).expect("csv");
    let csv = String::from_utf8(csv).expect("utf8");
    assert!(csv.starts_with("strategy.adaptive.thr,job.async.iodepth,strategy,"));
}

#[test]
fn the_parsers_refusals_name_the_point() {
    let e =
        run_sweep(&loader, &echo, &args(&["strategy.adaptive.thrr=4,8"])).expect_err("unknown key");
    let msg = e.to_string();
    assert!(
        msg.starts_with("sweep point strategy.adaptive.thrr=4: mixed-thr.toml: --set"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    let e =
        run_sweep(&loader, &echo, &args(&["job.async.iodepth=16,lots"])).expect_err("bad value");
    assert!(
        e.to_string()
            .starts_with("sweep point job.async.iodepth=lots:"),
        "{e}"
    );
    let e = run_sweep(&loader, &echo, &args(&["duration=1ms,0ms"])).expect_err("out of range");
    assert!(e.to_string().contains("duration=0ms"), "{e}");
}
