//! The two rules of the method, as pure functions of what was measured.
//!
//! **delta.** Completions closer than `delta` belong to one burst; a
//! longer gap ends it. So `delta` is read from the gaps *inside* bursts.
//! A batched workload mixes two populations: gaps inside a burst, and one
//! pause per batch while the thread reaps and resubmits. When a
//! percentile falls among the pauses, reading it there would choose a
//! `delta` that merges consecutive bursts, which is what `delta` must not
//! do. [`split_bursts`] detects the two populations (two peaks in the
//! log-gaps' density with a deep valley between them) and the percentile
//! is then read within the burst population.
//!
//! **thr.** The paper keeps `thr = 32` because it "achieves high
//! throughput and low interrupt rate". Interrupts matter through what they
//! cost: CPU time per I/O, and throughput when the core is the
//! bottleneck. [`recommend_thr`] therefore takes the IOPS plateau (the
//! last run of `thr` within tolerance of the best IOPS) and, within it,
//! the smallest `thr` whose CPU time per I/O is within the same tolerance
//! of the plateau's cheapest. A device-bound run, whose IOPS are flat from
//! a tiny `thr` on, still pays for every interrupt in CPU, so it does not
//! stop at the first `thr` that keeps up.

use cint_report::LatencyHistogram;

/// Two populations of inter-arrival gaps: inside bursts and between them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BurstSplit {
    /// Gaps at or below this (ns) are inside a burst.
    pub split_ns: u64,
    /// Fraction of gaps inside bursts.
    pub within_fraction: f64,
    /// Median gap inside bursts, ns.
    pub within_median_ns: u64,
    /// Median gap between bursts, ns.
    pub between_median_ns: u64,
    /// Density at the valley between the two modes over the smaller
    /// mode's peak density (0: nothing between them).
    pub valley: f64,
}

/// Bins per octave of the log-gap density: fine enough to see a valley
/// between a 6 us burst tail and 14 us pauses, coarse enough that a few
/// thousand gaps fill them.
const BINS_PER_OCTAVE: f64 = 4.0;
/// A valley at most this deep, relative to the smaller peak, separates
/// two modes. One skewed population (exponential, uniform, log-normal)
/// has no valley in its log-density at all.
pub const MAX_VALLEY: f64 = 0.1;
/// The smaller mode must hold at least this fraction of the gaps: a few
/// outliers are not a population.
const MIN_MODE_SHARE: f64 = 0.005;

/// Detects a burst / pause mixture in a gap histogram: two peaks in the
/// density of `log2(gap)` (quarter-octave bins, smoothed over three)
/// with a valley between them at most [`MAX_VALLEY`] of the smaller
/// peak, each side holding at least 0.5% of the gaps. The split is the
/// upper edge of the valley's first lowest bin. `None` for a single
/// population.
pub fn split_bursts(hist: &LatencyHistogram) -> Option<BurstSplit> {
    let h = hist.histogram();
    if h.is_empty() {
        return None;
    }
    let bin_of = |ns: u64| ((ns.max(1) as f64).log2() * BINS_PER_OCTAVE).floor() as i64;
    let first = bin_of(h.min());
    let bins = (bin_of(h.max()) - first + 1) as usize;
    let mut counts = vec![0.0f64; bins];
    for v in h.iter_recorded() {
        counts[(bin_of(v.value_iterated_to()) - first) as usize] += v.count_at_value() as f64;
    }
    let total: f64 = counts.iter().sum();
    let density: Vec<f64> = (0..bins)
        .map(|i| {
            let lo = i.saturating_sub(1);
            let hi = (i + 1).min(bins - 1);
            counts[lo..=hi].iter().sum::<f64>() / (hi - lo + 1) as f64
        })
        .collect();
    // The deepest valley over every pair of peaks (i < j): the lowest
    // density strictly between them relative to the lower of the two.
    let mut best: Option<(f64, usize)> = None;
    for i in 0..bins {
        let mut valley = (f64::INFINITY, i);
        for j in i + 1..bins {
            if j > i + 1 && density[j - 1] < valley.0 {
                valley = (density[j - 1], j - 1);
            }
            if j == i + 1 {
                continue;
            }
            let depth = valley.0 / density[i].min(density[j]);
            let below: f64 = counts[..=valley.1].iter().sum();
            let share = below.min(total - below) / total;
            if depth <= MAX_VALLEY && share >= MIN_MODE_SHARE && best.is_none_or(|(d, _)| depth < d)
            {
                best = Some((depth, valley.1));
            }
        }
    }
    let (valley, at) = best?;
    // Upper edge of the valley's bin, in ns.
    let split_ns = (2f64.powf((first + at as i64 + 1) as f64 / BINS_PER_OCTAVE)).floor() as u64;
    let within = h.count_between(0, split_ns) as f64;
    let quantile_of = |fraction: f64| h.value_at_quantile(fraction.clamp(0.0, 1.0));
    let within_fraction = within / total;
    Some(BurstSplit {
        split_ns,
        within_fraction,
        within_median_ns: quantile_of(within_fraction / 2.0),
        between_median_ns: quantile_of((1.0 + within_fraction) / 2.0),
        valley,
    })
}

/// Where the delta rule reads a workload's gaps at `percentile`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GapReading {
    /// The gap at the percentile over all gaps, ns.
    pub overall_ns: u64,
    /// The gap the rule uses, ns: `overall_ns`, or the same percentile
    /// within bursts when the overall one falls among the pauses.
    pub used_ns: u64,
    /// The burst/pause split, when the gaps have one.
    pub split: Option<BurstSplit>,
}

impl GapReading {
    /// True when the percentile was read within bursts.
    pub fn within_bursts(&self) -> bool {
        self.used_ns != self.overall_ns
    }
}

/// Reads `percentile` of a gap histogram, within bursts when the overall
/// percentile would land among the pauses between them.
pub fn read_gaps(hist: &LatencyHistogram, percentile: f64) -> GapReading {
    let h = hist.histogram();
    let overall_ns = h.value_at_percentile(percentile);
    let split = split_bursts(hist);
    let used_ns = match split {
        Some(s) if overall_ns > s.split_ns => {
            // The percentile of the burst population is the overall
            // percentile scaled by that population's share.
            h.value_at_percentile(percentile * s.within_fraction)
                .min(s.split_ns)
        }
        _ => overall_ns,
    };
    GapReading {
        overall_ns,
        used_ns,
        split,
    }
}

/// The delta rule: the largest gap the readings use, rounded up to a
/// whole microsecond (at least 1 us).
pub fn recommend_delta(used_ns: impl IntoIterator<Item = u64>) -> u64 {
    let worst = used_ns.into_iter().max().unwrap_or(0);
    worst.div_ceil(1_000).max(1) * 1_000
}

/// One swept `thr` as the thr rule sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThrSample {
    /// The threshold.
    pub thr: u32,
    /// Total IOPS.
    pub iops: f64,
    /// CPU time per I/O, ns (0 when the engine measured no CPU).
    pub cpu_ns_per_io: f64,
}

/// Why the thr rule stopped where it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrBasis {
    /// The plateau's first `thr` already has the plateau's CPU cost.
    Iops,
    /// IOPS plateaued earlier; CPU per I/O settled only at this `thr`.
    Cpu,
    /// No CPU was measured: IOPS alone decided.
    IopsOnlyNoCpu,
}

/// The plateau over `(thr, iops)` sorted by `thr`: the run of consecutive
/// points within `tolerance` of the best IOPS that ends at the largest
/// such `thr`, as indices `start..=end`. A dip before it (a lucky early
/// point) does not count; a decline after it (too much coalescing) does
/// not hide it.
pub fn plateau(samples: &[ThrSample], tolerance: f64) -> Option<(usize, usize)> {
    let best = samples
        .iter()
        .map(|p| p.iops)
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    if !best.is_finite() || best <= 0.0 {
        return None;
    }
    let floor = best * (1.0 - tolerance);
    let end = samples.iter().rposition(|p| p.iops >= floor)?;
    let start = samples[..=end]
        .iter()
        .rposition(|p| p.iops < floor)
        .map_or(0, |i| i + 1);
    Some((start, end))
}

/// The thr rule: on the IOPS plateau, the smallest `thr` whose CPU time
/// per I/O is within `tolerance` of the plateau's lowest.
pub fn recommend_thr(samples: &[ThrSample], tolerance: f64) -> Option<(u32, ThrBasis)> {
    let (start, end) = plateau(samples, tolerance)?;
    let run = &samples[start..=end];
    if run
        .iter()
        .any(|p| p.cpu_ns_per_io.is_nan() || p.cpu_ns_per_io <= 0.0)
    {
        return Some((run[0].thr, ThrBasis::IopsOnlyNoCpu));
    }
    let cheapest = run
        .iter()
        .map(|p| p.cpu_ns_per_io)
        .fold(f64::INFINITY, f64::min);
    let ceiling = cheapest * (1.0 + tolerance);
    let chosen = run.iter().position(|p| p.cpu_ns_per_io <= ceiling)?;
    let basis = if chosen == 0 {
        ThrBasis::Iops
    } else {
        ThrBasis::Cpu
    };
    Some((run[chosen].thr, basis))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(samples: impl IntoIterator<Item = (u64, u64)>) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for (ns, n) in samples {
            for _ in 0..n {
                h.record(ns);
            }
        }
        h
    }

    #[test]
    fn bursts_and_pauses_are_told_apart() {
        // 15 gaps of 0.8..2.2 us inside a burst, then one pause of 16..19 us.
        let h = hist((0..1600u64).map(|i| {
            if i % 16 == 15 {
                (16_000 + (i * 37) % 3_000, 1)
            } else {
                (800 + (i * 91) % 1_400, 1)
            }
        }));
        let s = split_bursts(&h).expect("two populations");
        assert!((2_100..16_000).contains(&s.split_ns), "{s:?}");
        assert!((s.within_fraction - 15.0 / 16.0).abs() < 1e-9, "{s:?}");
        assert!(s.valley <= MAX_VALLEY, "{s:?}");
        assert!((1_400..=1_600).contains(&s.within_median_ns), "{s:?}");
        assert!((16_000..=19_000).contains(&s.between_median_ns), "{s:?}");
        // p99 overall is a pause; within bursts it is about 2.2 us.
        let r = read_gaps(&h, 99.0);
        assert!(r.overall_ns >= 16_000, "{r:?}");
        assert!(r.within_bursts());
        assert!((2_000..=2_200).contains(&r.used_ns), "{r:?}");
        // p90 is inside bursts already: read as it is.
        let r = read_gaps(&h, 90.0);
        assert!(!r.within_bursts() && r.used_ns < 2_300, "{r:?}");
    }

    #[test]
    fn one_spread_population_is_not_split() {
        // Exponential-like gaps: a long tail but one mode.
        let h = hist((1..=2_000u64).map(|i| {
            let u = i as f64 / 2_001.0;
            ((-(1.0 - u).ln() * 3_000.0) as u64 + 1, 1)
        }));
        assert_eq!(split_bursts(&h), None);
        let r = read_gaps(&h, 99.0);
        assert_eq!(r.used_ns, r.overall_ns);
        // Uniform 1..3 us: one population.
        let h = hist((0..3_000u64).map(|i| (1_000 + i * 2_000 / 3_000, 1)));
        assert_eq!(split_bursts(&h), None);
        assert_eq!(split_bursts(&hist([(5_000, 10)])), None);
        // Log-normal (median 3 us, sigma 0.8), a flash device's spread:
        // a right tail, one mode.
        let h = hist((1..4_000u64).map(|i| {
            let u = i as f64 / 4_000.0;
            // Inverse normal CDF by the logistic approximation (enough here).
            let z = (u / (1.0 - u)).ln() / 1.702;
            ((3_000.0 * (0.8 * z).exp()) as u64, 1)
        }));
        assert_eq!(split_bursts(&h), None);
    }

    #[test]
    fn delta_rounds_the_largest_reading_up() {
        assert_eq!(recommend_delta([2_980, 5_490]), 6_000);
        assert_eq!(recommend_delta([5_000]), 5_000);
        assert_eq!(recommend_delta([10]), 1_000);
        assert_eq!(recommend_delta([]), 1_000);
    }

    fn samples(points: &[(u32, f64, f64)]) -> Vec<ThrSample> {
        points
            .iter()
            .map(|&(thr, iops, cpu_ns_per_io)| ThrSample {
                thr,
                iops,
                cpu_ns_per_io,
            })
            .collect()
    }

    #[test]
    fn the_plateau_is_the_last_run_within_tolerance_of_the_best() {
        let s = samples(&[
            (1, 100.0, 1.0),
            (2, 200.0, 1.0),
            (4, 300.0, 1.0),
            (8, 295.0, 1.0),
            (16, 250.0, 1.0),
            (32, 300.0, 1.0),
        ]);
        assert_eq!(plateau(&s, 0.02), Some((5, 5)));
        assert_eq!(plateau(&s, 0.20), Some((2, 5)));
        assert_eq!(plateau(&[], 0.02), None);
        assert_eq!(plateau(&samples(&[(1, f64::NAN, 1.0)]), 0.02), None);
        // Too much coalescing costs IOPS at the end: the plateau still starts at 32.
        let declining = samples(&[
            (16, 400.0, 1.0),
            (32, 495.0, 1.0),
            (64, 500.0, 1.0),
            (128, 480.0, 1.0),
            (256, 470.0, 1.0),
        ]);
        assert_eq!(plateau(&declining, 0.02), Some((1, 2)));
        assert_eq!(recommend_thr(&declining, 0.02), Some((32, ThrBasis::Iops)));
    }

    #[test]
    fn a_device_bound_sweep_waits_for_the_cpu_to_settle() {
        // IOPS flat from thr 4 (the device's ceiling), CPU per I/O still
        // falling with every interrupt saved (the P3700's shape).
        let s = samples(&[
            (1, 366.0, 2_730.0),
            (2, 419.0, 2_390.0),
            (4, 446.0, 2_225.0),
            (8, 445.6, 2_150.0),
            (16, 445.5, 2_105.0),
            (32, 445.5, 2_085.0),
            (64, 445.5, 2_058.0),
            (128, 444.8, 2_048.0),
        ]);
        assert_eq!(recommend_thr(&s, 0.02), Some((32, ThrBasis::Cpu)));
        // Host-bound: CPU per I/O is the inverse of IOPS, and the IOPS
        // plateau already is the CPU plateau.
        let host_bound: Vec<ThrSample> = [(8, 472.0), (16, 482.0), (32, 488.0), (64, 489.6)]
            .iter()
            .map(|&(thr, iops)| ThrSample {
                thr,
                iops,
                cpu_ns_per_io: 1e9 / (iops * 1e3),
            })
            .collect();
        assert_eq!(recommend_thr(&host_bound, 0.02), Some((16, ThrBasis::Iops)));
        // Without CPU figures the rule says so and uses IOPS alone.
        let blind = samples(&[(4, 446.0, 0.0), (32, 445.5, 0.0)]);
        assert_eq!(
            recommend_thr(&blind, 0.02),
            Some((4, ThrBasis::IopsOnlyNoCpu))
        );
    }
}
