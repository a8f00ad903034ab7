//! A hand-built result for the sinks' tests.

use crate::{JobResult, LatencyHistogram, RunResult, StrategyResult};

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
                jobs: vec![
                    job("async", 100_000, &[8, 9], 500),
                    job("sync", 21_000, &[10], 20_500),
                ],
            },
        ],
    }
}
