//! A hand-built result for the sinks' tests.

use crate::{
    FioDirection, FioHistogram, FioJobData, JobResult, LatencyHistogram, RunResult, StrategyResult,
};

/// The latencies `lat_us` as fio sees them: every fourth I/O a write, the
/// others reads; a synchronous engine (no slat, clat = lat); one thread
/// that spent 10% of the 200 ms in user mode and 40% in the kernel.
fn fio_data(lat_us: &[u64]) -> FioJobData {
    let mut dirs = [FioDirection::default(), FioDirection::default()];
    let mut hists = [FioHistogram::new(), FioHistogram::new()];
    for (i, &l) in lat_us.iter().enumerate() {
        let w = usize::from(i % 4 == 3);
        hists[w].record(l * 1_000);
        dirs[w].ios += 1;
        dirs[w].bytes += 4096;
    }
    for (d, h) in dirs.iter_mut().zip(&hists) {
        d.clat = h.summary();
        d.lat = h.summary();
    }
    let [read, write] = dirs;
    FioJobData {
        threads: 1,
        runtime_ns: 200_000_000,
        usr_ns: 20_000_000,
        sys_ns: 80_000_000,
        read,
        write,
        sync: Default::default(),
        error: 0,
        steadystate: None,
    }
}

fn job(name: &str, ios: u64, lat_us: &[u64], cs: u64) -> JobResult {
    let mut h = LatencyHistogram::new();
    for &l in lat_us {
        h.record(l * 1_000);
    }
    JobResult {
        name: name.into(),
        ios,
        iops: ios as f64 / 0.2,
        bw_bytes: ios * 4096 * 5,
        cpu_util: 0.5,
        context_switches: cs,
        wakeups: 0,
        lat_ns: h.stats(),
        fio: Some(fio_data(lat_us)),
        trace: None,
        sync: None,
        modes: None,
    }
}

/// Two strategies, two jobs each, 200 ms measured.
pub(crate) fn sample() -> RunResult {
    RunResult {
        cint_version: crate::CINT_VERSION.into(),
        scenario: "mixed".into(),
        substrate: "sim".into(),
        device: "optane-p4800x".into(),
        host: "xeon-e5-2660v4".into(),
        seed: 1,
        duration_ns: 200_000_000,
        notes: Vec::new(),
        results: vec![
            StrategyResult {
                strategy: "default".into(),
                kind: "none".into(),
                interrupts: 100_000,
                interrupts_per_s: 500_000.0,
                urgent_interrupts: 0,
                cpu_util: 0.99,
                context_switches: 20_000,
                wakeups: 0,
                energy_j: None,
                energy: None,
                virt: None,
                jobs: vec![
                    job("async", 80_000, &[10, 20, 30, 40], 1_000),
                    job("sync", 20_000, &[11, 12], 19_000),
                ],
            },
            StrategyResult {
                strategy: "cint".into(),
                kind: "cinterrupts".into(),
                interrupts: 30_000,
                interrupts_per_s: 150_000.0,
                urgent_interrupts: 20_000,
                cpu_util: 0.75,
                context_switches: 21_000,
                wakeups: 0,
                energy_j: Some(12.5),
                energy: None,
                virt: None,
                jobs: vec![
                    job("async", 100_000, &[8, 9], 500),
                    job("sync", 21_000, &[10], 20_500),
                ],
            },
        ],
    }
}
