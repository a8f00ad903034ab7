//! What a job's latency summary must say of itself.

use cint_report::LatencyStats;

/// Whether `lat` agrees with itself for a job that counted `ios`
/// requests: one sample a request, the mean between the extremes, and the
/// percentiles in the order of their ranks (their keys sort as text, not
/// as numbers).
pub fn consistent(lat: &LatencyStats, ios: u64) -> bool {
    let mut by_rank: Vec<(f64, u64)> = lat
        .percentile
        .iter()
        .map(|(p, &v)| (p.parse().unwrap_or(f64::NAN), v))
        .collect();
    by_rank.sort_by(|a, b| a.0.total_cmp(&b.0));
    lat.n == ios
        && by_rank.iter().all(|(p, _)| p.is_finite())
        && (lat.n == 0 || (lat.min as f64 <= lat.mean && lat.mean <= lat.max as f64))
        && by_rank.windows(2).all(|w| w[0].1 <= w[1].1)
}

/// The latency samples a job that counted `ios` requests must have: one
/// a request, or none where the run's `notes` say that job `job` of
/// `strategy` ended within its warm-up (its requests are then its whole
/// life's, as fio counts them, and fio takes no sample in a ramp).
pub fn samples_expected(notes: &[String], strategy: &str, job: &str, ios: u64) -> u64 {
    let in_warmup = notes
        .iter()
        .any(|n| cint_scenario::staging::says_ended_in_warmup(n, strategy, job));
    if in_warmup {
        0
    } else {
        ios
    }
}

/// Asserts [`consistent`], naming `what` (the run and the job) in the
/// message.
pub fn assert_consistent(lat: &LatencyStats, ios: u64, what: impl std::fmt::Display) {
    assert!(
        consistent(lat, ios),
        "{what}: {ios} requests, latencies {lat:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(min: u64, mean: f64, max: u64, n: u64, percentiles: &[(&str, u64)]) -> LatencyStats {
        LatencyStats {
            min,
            max,
            mean,
            stddev: 0.0,
            n,
            percentile: percentiles
                .iter()
                .map(|&(p, v)| (p.to_string(), v))
                .collect(),
        }
    }

    #[test]
    fn percentiles_are_ordered_by_rank_not_by_their_text() {
        // "5.000000" sorts after "40.000000" as text.
        let ok = stats(
            10,
            20.0,
            40,
            3,
            &[("5.000000", 11), ("40.000000", 20), ("99.000000", 40)],
        );
        assert!(consistent(&ok, 3));
        let out_of_order = stats(10, 20.0, 40, 3, &[("5.000000", 30), ("40.000000", 20)]);
        assert!(!consistent(&out_of_order, 3));
        assert!(!consistent(&ok, 4), "a request without its sample");
        assert!(
            !consistent(&stats(10, 50.0, 40, 3, &[]), 3),
            "a mean above the largest"
        );
        assert!(consistent(&LatencyStats::empty(), 0));
    }
}
