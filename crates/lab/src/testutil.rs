//! A fake engine for tests: closed-form figures from the scenario, so the
//! workflow's logic is tested without the simulator.

use cint_policy::PolicyConfig;
use cint_report::{EngineError, JobResult, LatencyHistogram, RunResult, StrategyResult};
use cint_scenario::{CompletionMode, Scenario, Work};

/// CPU time per I/O and per interrupt, ns.
const IO_COST: f64 = 2_000.0;
const IRQ_COST: f64 = 1_000.0;

/// Completions per interrupt a strategy gets at a queue depth.
fn per_irq(mode: &CompletionMode, iodepth: u32) -> f64 {
    let thr = match mode {
        CompletionMode::Interrupt(PolicyConfig::Adaptive(p)) => p.thr,
        CompletionMode::Interrupt(PolicyConfig::Cinterrupts(p)) => p.adaptive.thr,
        CompletionMode::Interrupt(PolicyConfig::Nvme(p)) => p.thr,
        _ => 1,
    };
    f64::from(thr.min(iodepth).max(1))
}

/// Runs every strategy with a closed-form model: IOPS limited by the
/// queue depth over the service time, and by CPU time per I/O plus the
/// interrupt cost shared among the completions it reaps.
pub fn fake_run(s: &Scenario) -> Result<RunResult, EngineError> {
    let secs = s.duration as f64 / 1e9;
    let results = s
        .strategies
        .iter()
        .map(|strategy| {
            let mut irqs_per_s = 0.0;
            let jobs: Vec<JobResult> = s
                .jobs
                .iter()
                .map(|job| {
                    let (iodepth, bs) = match &job.work {
                        Work::Io(io) => (io.iodepth, io.bs),
                        Work::Cpu => (1, 0),
                    };
                    let batch = per_irq(&strategy.mode, iodepth);
                    let service = s.device.read.base.0 as f64;
                    let by_depth = f64::from(iodepth * job.numjobs) / service * 1e9;
                    let by_cpu = 1e9 / (IO_COST + IRQ_COST / batch);
                    let iops = by_depth.min(by_cpu);
                    irqs_per_s += iops / batch;
                    let lat = f64::from(iodepth) / iops * 1e9;
                    let mut hist = LatencyHistogram::new();
                    for k in 0..100u64 {
                        hist.record((lat * (0.5 + k as f64 / 100.0)) as u64);
                    }
                    let ios = (iops * secs) as u64;
                    JobResult {
                        name: job.name.clone(),
                        ios,
                        iops,
                        bw_bytes: (iops * bs as f64) as u64,
                        cpu_util: iops * (IO_COST + IRQ_COST / batch) / 1e9,
                        // A block and a wake-up per interrupt's worth of I/Os.
                        context_switches: (ios as f64 / batch) as u64,
                        wakeups: (ios as f64 / batch) as u64,
                        lat_ns: hist.stats(),
                        fio: None,
                        trace: None,
                        sync: None,
                        modes: None,
                    }
                })
                .collect();
            StrategyResult {
                strategy: strategy.name.clone(),
                kind: strategy.kind().into(),
                interrupts: (irqs_per_s * secs) as u64,
                interrupts_per_s: irqs_per_s,
                urgent_interrupts: 0,
                cpu_util: jobs.iter().map(|j| j.cpu_util).sum::<f64>().min(1.0),
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
        substrate: "fake".into(),
        device: s.device.model.clone(),
        host: s.host.model.clone(),
        seed: s.seed,
        duration_ns: s.duration,
        results,
        notes: Vec::new(),
    })
}
