//! Measurements of the window after warm-up and the result document.
//! Latencies go into one HdrHistogram per job: memory does not grow with
//! the number of requests simulated.

use cint_report::{JobResult, LatencyHistogram, StrategyResult};
use cint_scenario::Strategy;

use crate::world::World;

/// Run-wide counters of the measured window.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    /// Device interrupts fired (all kinds).
    pub interrupts: u64,
    /// Urgent-only interrupts.
    pub urgent_interrupts: u64,
}

/// One job's measurements.
#[derive(Debug)]
pub(crate) struct JobStats {
    pub name: String,
    pub hist: LatencyHistogram,
    pub ios: u64,
    pub bytes: u64,
}

impl JobStats {
    pub(crate) fn new(name: &str) -> Self {
        JobStats {
            name: name.to_string(),
            hist: LatencyHistogram::new(),
            ios: 0,
            bytes: 0,
        }
    }

    /// One I/O handed to the application after `lat` ns.
    pub(crate) fn record(&mut self, lat: u64, bytes: u64) {
        self.hist.record(lat);
        self.ios += 1;
        self.bytes += bytes;
    }

    pub(crate) fn reset(&mut self) {
        self.hist = LatencyHistogram::new();
        self.ios = 0;
        self.bytes = 0;
    }
}

impl World<'_> {
    /// The strategy's entry of the result document.
    pub(crate) fn summarise(&self, strategy: &Strategy) -> StrategyResult {
        let window = (self.now() - self.window_start).max(1);
        let secs = window as f64 / 1e9;
        let jobs = self
            .jobs
            .iter()
            .enumerate()
            .map(|(j, stats)| {
                // A job's rates are over its own measured window: later
                // groups, start delays and early ends make it shorter than
                // the run's (fio reports each job over its own runtime).
                let (from, to) = self.job_window(j);
                let job_secs = (to - from).max(1) as f64 / 1e9;
                let (cpu, ctx, wakeups) = self
                    .threads
                    .iter()
                    .filter(|t| t.job as usize == j)
                    .fold((0u64, 0u64, 0u64), |(c, x, w), t| {
                        (c + t.cpu_ns, x + t.ctx_switches, w + t.wakeups)
                    });
                JobResult {
                    name: stats.name.clone(),
                    ios: stats.ios,
                    iops: stats.ios as f64 / job_secs,
                    bw_bytes: (stats.bytes as f64 / job_secs) as u64,
                    cpu_util: cpu as f64 / window as f64,
                    context_switches: ctx,
                    wakeups,
                    lat_ns: stats.hist.stats(),
                }
            })
            .collect();
        let busy: u64 = self.cores.iter().map(|c| c.irq_ns + c.thread_ns).sum();
        StrategyResult {
            strategy: strategy.name.clone(),
            kind: strategy.kind().to_string(),
            interrupts: self.counters.interrupts,
            interrupts_per_s: self.counters.interrupts as f64 / secs,
            urgent_interrupts: self.counters.urgent_interrupts,
            cpu_util: busy as f64 / (window as f64 * self.cores.len() as f64),
            context_switches: self.cores.iter().map(|c| c.ctx_switches).sum(),
            wakeups: self.threads.iter().map(|t| t.wakeups).sum(),
            energy_j: None,
            jobs,
        }
    }
}
