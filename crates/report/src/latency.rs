//! Latency recording: an HdrHistogram per job (memory bounded whatever the
//! run length) and its fio-style summary.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// The percentiles reported, as fio lists them.
pub const PERCENTILES: [f64; 6] = [1.0, 50.0, 90.0, 99.0, 99.9, 99.99];

/// Records latencies in nanoseconds, 1 ns to one hour, three significant
/// digits.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // 3 significant digits over 1 ns..1 h: a few hundred KiB at most.
        let hist = Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
            .expect("static histogram bounds are valid");
        LatencyHistogram { hist }
    }

    /// Records one latency; values beyond the range are clamped to it.
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Adds another histogram's samples.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The underlying histogram (for CDF plots).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The fio-style summary. With no sample every field is zero and the
    /// six percentile keys are still there (fio writes them for a job that
    /// did no I/O, and readers index them without checking).
    pub fn stats(&self) -> LatencyStats {
        if self.hist.is_empty() {
            return LatencyStats::empty();
        }
        let percentile = PERCENTILES
            .iter()
            .map(|&p| (percentile_key(p), self.hist.value_at_percentile(p)))
            .collect();
        LatencyStats {
            min: self.hist.min(),
            max: self.hist.max(),
            mean: self.hist.mean(),
            stddev: self.hist.stdev(),
            n: self.hist.len(),
            percentile,
        }
    }
}

/// fio's `lat_ns` object.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Smallest latency.
    pub min: u64,
    /// Largest latency.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Samples.
    #[serde(rename = "N")]
    pub n: u64,
    /// Percentile (six decimals, as fio writes them) to latency.
    pub percentile: BTreeMap<String, u64>,
}

impl LatencyStats {
    /// The summary of no samples: zeros, with every key of
    /// [`PERCENTILES`] present and zero, as fio writes it.
    pub fn empty() -> Self {
        LatencyStats {
            percentile: PERCENTILES
                .iter()
                .map(|&p| (percentile_key(p), 0))
                .collect(),
            ..LatencyStats::default()
        }
    }

    /// The latency at a percentile listed in [`PERCENTILES`].
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentile.get(&percentile_key(p)).copied()
    }
}

/// A percentile as fio names it in JSON: six decimals (`"99.900000"`).
pub(crate) fn percentile_key(p: f64) -> String {
    format!("{p:.6}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_samples_still_gives_the_six_percentile_keys() {
        let s = LatencyHistogram::new().stats();
        assert_eq!((s.n, s.min, s.max), (0, 0, 0));
        let keys: Vec<&str> = s.percentile.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "1.000000",
                "50.000000",
                "90.000000",
                "99.000000",
                "99.900000",
                "99.990000"
            ]
        );
        assert!(s.percentile.values().all(|&v| v == 0));
        assert_eq!(s, LatencyStats::empty());
    }

    #[test]
    fn samples_fill_the_same_keys() {
        let mut h = LatencyHistogram::new();
        for ns in 1..=1000 {
            h.record(ns * 1000);
        }
        let s = h.stats();
        assert_eq!(s.percentile.len(), PERCENTILES.len());
        let p50 = s.at(50.0).unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
    }
}
