//! What a trace replay reports beside a job's own measurements
//! (docs/TRACES.md): the trace, how it was replayed, the trace's own
//! latencies of the requests measured, and, in open loop, how far each
//! request's issue came after its release instant.

use cint_scenario::trace::{TraceJob, TraceMode};
use serde::Serialize;

use crate::{LatencyHistogram, LatencyStats, RunResult};

/// A job's trace replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceReplay {
    /// The trace's file name (without its directory, so results do not
    /// depend on where the trace lies).
    pub file: String,
    /// Its format and version, e.g. `blktrace v7`.
    pub format: String,
    /// `open` or `closed`.
    pub mode: String,
    /// Open loop: the speed factor (1 is the trace's own pace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Requests per thread in flight at most.
    pub depth: u32,
    /// Requests in the trace.
    pub requests: u64,
    /// Requests the run issued (warm-up included); fewer than `requests`
    /// when the run ended first.
    pub issued: u64,
    /// Syncs and cache flushes the trace holds, which the model's
    /// device, reads and writes only, does not replay (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub syncs_not_replayed: u64,
    /// Trims and discards the trace holds, not replayed either.
    #[serde(skip_serializing_if = "is_zero")]
    pub trims_not_replayed: u64,
    /// The trace's own latencies (blktrace Q to C, the MSR response
    /// time) of the requests measured here, where the trace has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_lat_ns: Option<LatencyStats>,
    /// Open loop: each measured request's issue (its system call) less
    /// its release instant (the trace time, scaled, after the job's
    /// start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_lag_ns: Option<IssueLag>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How late requests were issued after their release instants.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IssueLag {
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: u64,
}

/// What a trace job's replay measured: both engines count by it, a
/// thread or a job at a time ([`TraceMeasure::merge`]).
#[derive(Clone, Debug, Default)]
pub struct TraceMeasure {
    /// Requests issued over the whole run, warm-up included.
    pub issued: u64,
    trace_lat: LatencyHistogram,
    lag_n: u64,
    lag_sum: u128,
    lag_min: u64,
    lag_max: u64,
}

impl TraceMeasure {
    /// A request measured: its trace latency, where the trace has one,
    /// and in open loop its issue after its release instant.
    pub fn record(&mut self, trace_latency: Option<u64>, lag: Option<u64>) {
        if let Some(l) = trace_latency {
            self.trace_lat.record(l);
        }
        if let Some(lag) = lag {
            self.lag_min = if self.lag_n == 0 {
                lag
            } else {
                self.lag_min.min(lag)
            };
            self.lag_n += 1;
            self.lag_sum += u128::from(lag);
            self.lag_max = self.lag_max.max(lag);
        }
    }

    /// The warm-up is over: what was measured is dropped, the count of
    /// requests issued kept.
    pub fn restart(&mut self) {
        *self = TraceMeasure {
            issued: self.issued,
            ..TraceMeasure::default()
        };
    }

    /// Adds what another thread of the job measured.
    pub fn merge(&mut self, other: &TraceMeasure) {
        self.issued += other.issued;
        self.trace_lat.merge(&other.trace_lat);
        if other.lag_n > 0 {
            self.lag_min = if self.lag_n == 0 {
                other.lag_min
            } else {
                self.lag_min.min(other.lag_min)
            };
            self.lag_n += other.lag_n;
            self.lag_sum += other.lag_sum;
            self.lag_max = self.lag_max.max(other.lag_max);
        }
    }

    /// The job's entry of the result: the trace job `job` as replayed,
    /// with what was measured.
    pub fn replay(&self, job: &TraceJob) -> TraceReplay {
        let (mode, speed) = match job.mode {
            TraceMode::Open { speed_ppm } => ("open", Some(speed_ppm as f64 / 1e6)),
            TraceMode::Closed => ("closed", None),
        };
        TraceReplay {
            file: job
                .path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            format: job.format_label(),
            mode: mode.into(),
            speed,
            depth: job.depth,
            requests: job.requests(),
            issued: self.issued,
            syncs_not_replayed: job.not_replayed.syncs,
            trims_not_replayed: job.not_replayed.trims,
            trace_lat_ns: (!self.trace_lat.is_empty()).then(|| self.trace_lat.stats()),
            issue_lag_ns: (speed.is_some() && self.lag_n > 0).then(|| IssueLag {
                min: self.lag_min,
                mean: (self.lag_sum as f64) / self.lag_n as f64,
                max: self.lag_max,
            }),
        }
    }
}

/// The table's lines for the trace replays of `r`, or nothing.
pub(crate) fn section(r: &RunResult) -> String {
    let mut out = String::new();
    // The emulator measures real threads: its latencies are not a model's.
    let ours = if r.substrate == "emu" {
        "emulator"
    } else {
        "model"
    };
    for s in &r.results {
        for j in &s.jobs {
            let Some(t) = &j.trace else {
                continue;
            };
            if out.is_empty() {
                out.push_str(&format!(
                    "\ntrace replays ({ours} latency beside the trace's own):\n"
                ));
            }
            let us = |ns: f64| format!("{:.1}", ns / 1e3);
            let model = if j.lat_ns.n == 0 {
                "no request measured".to_string()
            } else {
                format!(
                    "{ours} mean {} p99 {} us",
                    us(j.lat_ns.mean),
                    j.lat_ns.at(99.0).map_or("-".into(), |v| us(v as f64))
                )
            };
            let own = t
                .trace_lat_ns
                .as_ref()
                .map_or("trace has no latencies".into(), |l| {
                    format!(
                        "trace mean {} p99 {} us",
                        us(l.mean),
                        l.at(99.0).map_or("-".into(), |v| us(v as f64))
                    )
                });
            let lag = t.issue_lag_ns.as_ref().map_or(String::new(), |l| {
                format!(
                    "; issue lag {}-{} us (mean {})",
                    us(l.min as f64),
                    us(l.max as f64),
                    us(l.mean)
                )
            });
            let dropped = match (t.syncs_not_replayed, t.trims_not_replayed) {
                (0, 0) => String::new(),
                (syncs, trims) => {
                    format!(" (not replayed: {syncs} syncs or flushes, {trims} trims or discards)")
                }
            };
            out.push_str(&format!(
                "  {} {}: {} {} {}, {} of {} requests issued{dropped}; {model}; {own}{lag}\n",
                s.strategy, j.name, t.file, t.format, t.mode, t.issued, t.requests
            ));
        }
    }
    out
}
