//! A job's `fsync` and `fdatasync` calls beside its reads and writes: how
//! many and how long each took, from its entry to its return. fio keeps
//! them apart from the I/O's latencies (its JSON's `sync` section), and
//! for a job that syncs after each write (etcd's disk check) they are the
//! figure that matters.

use serde::Serialize;

use crate::latency::{percentile_key, PERCENTILES};
use crate::{FioLatency, LatencyStats, RunResult};

/// A job's sync calls in the measured time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SyncCalls {
    /// Calls completed (`fsync` and `fdatasync` together).
    pub calls: u64,
    /// Calls per second of the job's measured time.
    pub per_sec: f64,
    /// Their latencies, entry to return, in fio's latency buckets.
    pub lat_ns: LatencyStats,
}

impl SyncCalls {
    /// The calls of fio's `sync` figures over `seconds` of measured time;
    /// `None` without a call. Calls without a latency sample are those of
    /// a job that ended within its warm-up (`crate::WarmupTally`).
    pub fn from_fio(calls: u64, lat: &FioLatency, seconds: f64) -> Option<SyncCalls> {
        if calls == 0 {
            return None;
        }
        let mut stats = LatencyStats::empty();
        if lat.n > 0 {
            stats.min = lat.min;
            stats.max = lat.max;
            stats.mean = lat.mean;
            stats.stddev = lat.stddev;
            stats.n = lat.n;
            for (p, ns) in lat.percentiles(&PERCENTILES) {
                stats.percentile.insert(percentile_key(p), ns);
            }
        }
        Some(SyncCalls {
            calls,
            per_sec: if seconds > 0.0 {
                calls as f64 / seconds
            } else {
                0.0
            },
            lat_ns: stats,
        })
    }
}

/// The table's lines for the jobs of `r` that made sync calls, or nothing.
pub(crate) fn section(r: &RunResult) -> String {
    let mut out = String::new();
    for s in &r.results {
        for j in &s.jobs {
            let Some(sync) = &j.sync else {
                continue;
            };
            if out.is_empty() {
                out.push_str("\nsync calls (fsync and fdatasync, entry to return):\n");
            }
            if sync.lat_ns.n == 0 {
                out.push_str(&format!(
                    "  {} {}: {} calls, {:.0}/s; no latency sample\n",
                    s.strategy, j.name, sync.calls, sync.per_sec
                ));
                continue;
            }
            let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
            let at = |p: f64| sync.lat_ns.at(p).map_or("-".into(), us);
            out.push_str(&format!(
                "  {} {}: {} calls, {:.0}/s; mean {:.1} p50 {} p99 {} p99.9 {} max {} us\n",
                s.strategy,
                j.name,
                sync.calls,
                sync.per_sec,
                sync.lat_ns.mean / 1e3,
                at(50.0),
                at(99.0),
                at(99.9),
                us(sync.lat_ns.max)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FioHistogram;

    #[test]
    fn calls_are_summarised_in_fios_buckets_or_not_at_all() {
        let mut h = FioHistogram::new();
        for us in 1..=100u64 {
            h.record(us * 1_000);
        }
        let sync = SyncCalls::from_fio(100, &h.summary(), 2.0).expect("calls");
        assert_eq!((sync.calls, sync.per_sec, sync.lat_ns.n), (100, 50.0, 100));
        assert_eq!((sync.lat_ns.min, sync.lat_ns.max), (1_000, 100_000));
        // Every percentile a job's latency has, each within fio's bucket
        // error (under 2% here) of the exact one.
        assert_eq!(sync.lat_ns.percentile.len(), PERCENTILES.len());
        let p50 = sync.lat_ns.at(50.0).expect("p50") as f64;
        assert!((p50 - 50_000.0).abs() / 50_000.0 < 0.02, "{p50}");
        assert_eq!(
            SyncCalls::from_fio(0, &FioHistogram::new().summary(), 1.0),
            None
        );
        // Calls of a job that ended within its warm-up: counted, without
        // a latency sample.
        let unsampled = SyncCalls::from_fio(64, &FioHistogram::new().summary(), 0.016);
        let unsampled = unsampled.expect("calls");
        assert_eq!((unsampled.calls, unsampled.lat_ns.n), (64, 0));
        assert_eq!(unsampled.lat_ns, LatencyStats::empty());
    }
}
