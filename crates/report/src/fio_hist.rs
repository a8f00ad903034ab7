//! Latency recording in fio's own buckets, for fio's JSON output.
//!
//! fio keeps a latency histogram of `FIO_IO_U_PLAT_NR` buckets (stat.h):
//! values below 128 ns have a bucket each, and every power of two above
//! is cut into 64 equal buckets, so a bucket is at most 1/64 of its value
//! wide. json+ prints each non-empty bucket as `"value": count`, the value
//! being the middle of the bucket (`plat_idx_to_val` in stat.c), and fio's
//! percentiles are those bucket values (`calc_clat_percentiles`).
//! Recording into the same buckets makes our bins and percentiles what
//! fio would print for the same latencies, with no conversion error.
//!
//! fio's min, max, mean and standard deviation are exact (a running
//! Welford sum, `add_stat_sample`), and so are ours. Its latency
//! distribution (`latency_ns`/`latency_us`/`latency_ms`) uses class
//! boundaries that do not fall on bucket edges, so the classes are
//! counted exactly as each sample arrives (`io_u_mark_latency` in io_u.c).

use std::collections::BTreeMap;

/// Bits of a value kept exact in a bucket index (`FIO_IO_U_PLAT_BITS`).
pub const PLAT_BITS: u32 = 6;
/// Buckets per power of two (`FIO_IO_U_PLAT_VAL`).
pub const PLAT_VAL: usize = 1 << PLAT_BITS;
/// Groups of buckets (`FIO_IO_U_PLAT_GROUP_NR`).
pub const PLAT_GROUP_NR: usize = 29;
/// Buckets in all (`FIO_IO_U_PLAT_NR`); latencies from about 17.2 s on
/// share the last one, as in fio.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL;

/// Classes of fio's `latency_ns`, `latency_us` and `latency_ms` objects,
/// in that order: 10 + 10 + 12.
pub const LATENCY_CLASSES: usize = 32;

/// Upper bounds (exclusive) of the ten classes of one unit, as fio names
/// them; the millisecond unit adds `"2000"` and `">=2000"`.
pub const CLASS_NAMES: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];

/// The bucket of a latency (`plat_val_to_idx` in fio's stat.c).
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio prints for a bucket: the middle of its range
/// (`plat_idx_to_val` in fio's stat.c, including its rounding down).
pub fn plat_idx_to_val(idx: usize) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx % PLAT_VAL) as f64;
    // fio computes `base + ((k + 0.5) * (1 << error_bits))` in double
    // precision and truncates; every term is exact in a double here.
    base + ((k + 0.5) * f64::from(1u32 << error_bits)) as u64
}

/// The class of a latency in fio's distribution (`io_u_mark_latency`):
/// 0..10 nanosecond classes, 10..20 microsecond, 20..32 millisecond.
fn latency_class(ns: u64) -> usize {
    // Lower bounds of the classes after the first, in the unit's count.
    const LOWER: [u64; 9] = [2, 4, 10, 20, 50, 100, 250, 500, 750];
    let within = |v: u64| LOWER.iter().take_while(|&&b| v >= b).count();
    if ns < 1_000 {
        within(ns)
    } else if ns < 1_000_000 {
        10 + within(ns / 1_000)
    } else {
        let ms = ns / 1_000_000;
        20 + match ms {
            0..=999 => within(ms),
            1_000..=1_999 => 10,
            _ => 11,
        }
    }
}

/// Latencies recorded as fio records them: its buckets, exact moments and
/// its latency classes. About 15 KiB; fixed whatever the run length.
#[derive(Clone, Debug, PartialEq)]
pub struct FioHistogram {
    plat: Vec<u64>,
    n: u64,
    min: u64,
    max: u64,
    mean: f64,
    /// Sum of squared deviations from the mean (Welford's `S`).
    m2: f64,
    classes: [u64; LATENCY_CLASSES],
}

impl Default for FioHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl FioHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        FioHistogram {
            plat: vec![0; PLAT_NR],
            n: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            m2: 0.0,
            classes: [0; LATENCY_CLASSES],
        }
    }

    /// Records one latency in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.plat[plat_val_to_idx(ns)] += 1;
        self.classes[latency_class(ns)] += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        // Welford's update, as fio's add_stat_sample does it.
        self.n += 1;
        let delta = ns as f64 - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (ns as f64 - self.mean);
    }

    /// Adds another histogram's samples (Chan's combination of the
    /// moments, as fio's sum_stat does when it merges threads).
    pub fn merge(&mut self, other: &FioHistogram) {
        if other.n == 0 {
            return;
        }
        for (a, b) in self.plat.iter_mut().zip(&other.plat) {
            *a += b;
        }
        for (a, b) in self.classes.iter_mut().zip(&other.classes) {
            *a += b;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        let (n1, n2) = (self.n as f64, other.n as f64);
        let n = n1 + n2;
        let delta = other.mean - self.mean;
        self.mean += delta * n2 / n;
        self.m2 += other.m2 + delta * delta * n1 * n2 / n;
        self.n += other.n;
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The compact summary kept in the result: moments, classes and the
    /// non-empty buckets only.
    pub fn summary(&self) -> FioLatency {
        if self.n == 0 {
            return FioLatency::default();
        }
        FioLatency {
            n: self.n,
            min: self.min,
            max: self.max,
            mean: self.mean,
            stddev: if self.n > 1 {
                (self.m2 / (self.n - 1) as f64).sqrt()
            } else {
                0.0
            },
            bins: self
                .plat
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
            classes: self.classes,
        }
    }
}

/// One latency kind (slat, clat or lat) of one direction, as fio reports
/// it: exact moments, non-empty buckets, the latency classes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioLatency {
    /// Samples (`N`).
    pub n: u64,
    /// Smallest latency, ns.
    pub min: u64,
    /// Largest latency, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Sample standard deviation (divided by N - 1, as fio's calc_lat).
    pub stddev: f64,
    /// Non-empty buckets, ascending: (bucket index, count).
    pub bins: Vec<(u32, u64)>,
    /// Counts per class of fio's latency distribution, see
    /// [`LATENCY_CLASSES`].
    pub classes: [u64; LATENCY_CLASSES],
}

impl FioLatency {
    /// json+ `bins`: bucket value (as text, as fio keys it) to count.
    pub fn bins_by_value(&self) -> BTreeMap<u64, u64> {
        self.bins
            .iter()
            .map(|&(i, c)| (plat_idx_to_val(i as usize), c))
            .collect()
    }

    /// fio's percentiles of these buckets (`calc_clat_percentiles`): for
    /// each listed percentile p (ascending), the value of the first
    /// bucket at which the running count reaches p% of the samples.
    /// Empty without samples, where fio prints none.
    pub fn percentiles(&self, list: &[f64]) -> Vec<(f64, u64)> {
        if self.n == 0 || list.is_empty() {
            return Vec::new();
        }
        let mut sorted: Vec<f64> = list.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut out = Vec::with_capacity(sorted.len());
        let mut wanted = sorted.iter().copied().peekable();
        let mut sum = 0u64;
        for &(i, c) in &self.bins {
            sum += c;
            while let Some(&p) = wanted.peek() {
                if (sum as f64) < p / 100.0 * self.n as f64 {
                    break;
                }
                out.push((p, plat_idx_to_val(i as usize)));
                wanted.next();
            }
        }
        // Rounding can leave 100.0 just above the last running sum; fio
        // would report its last bucket there too.
        let last = self
            .bins
            .last()
            .map_or(0, |&(i, _)| plat_idx_to_val(i as usize));
        out.extend(wanted.map(|p| (p, last)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_match_fios_arithmetic() {
        // Exact below 128 ns.
        for v in 0..128 {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), v);
        }
        // Values seen in a real fio 3.33 json+ output, read back from the
        // bucket of any latency inside it.
        for printed in [1896u64, 36096, 38144, 38656, 220160, 11712] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(printed)), printed);
        }
        // A bucket's range maps to one index, its middle is inside it.
        let i = plat_val_to_idx(40_000);
        let mid = plat_idx_to_val(i);
        assert_eq!(plat_val_to_idx(mid), i);
        assert!(plat_val_to_idx(40_000 - 512) < i || plat_val_to_idx(40_000 + 512) > i);
        // Huge latencies share the last bucket.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
        assert_eq!(plat_val_to_idx(1 << 40), PLAT_NR - 1);
    }

    #[test]
    fn classes_follow_io_u_mark_latency() {
        assert_eq!(latency_class(0), 0);
        assert_eq!(latency_class(1), 0);
        assert_eq!(latency_class(2), 1);
        assert_eq!(latency_class(999), 9);
        assert_eq!(latency_class(1_000), 10, "1 us is in the <2 us class");
        assert_eq!(latency_class(249_999), 16);
        assert_eq!(latency_class(250_000), 17);
        assert_eq!(latency_class(999_999), 19);
        assert_eq!(latency_class(1_000_000), 20);
        assert_eq!(latency_class(1_999_999_999), 30);
        assert_eq!(latency_class(2_000_000_000), 31);
    }

    #[test]
    fn moments_are_exact_and_merge_like_one_histogram() {
        let mut a = FioHistogram::new();
        let mut b = FioHistogram::new();
        let mut all = FioHistogram::new();
        for v in [10_000u64, 12_000, 11_000, 90_000] {
            a.record(v);
            all.record(v);
        }
        for v in [20_000u64, 21_000] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        let (m, s) = (a.summary(), all.summary());
        assert_eq!((m.n, m.min, m.max), (6, 10_000, 90_000));
        assert!((m.mean - 27_333.333_333).abs() < 1e-3, "{}", m.mean);
        assert!((m.mean - s.mean).abs() < 1e-6);
        assert!((m.stddev - s.stddev).abs() < 1e-6);
        // Sample standard deviation of the six values, two-pass.
        let xs = [10_000.0, 12_000.0, 11_000.0, 90_000.0, 20_000.0, 21_000.0];
        let mean = xs.iter().sum::<f64>() / 6.0;
        let sd = (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 5.0).sqrt();
        assert!((m.stddev - sd).abs() < 1e-6, "{} vs {sd}", m.stddev);
        assert_eq!(m.bins, s.bins);
        assert_eq!(m.bins.iter().map(|b| b.1).sum::<u64>(), 6);
    }

    #[test]
    fn percentiles_are_bucket_values_like_fio() {
        let mut h = FioHistogram::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        let s = h.summary();
        let p = s.percentiles(&[50.0, 1.0, 99.0, 100.0]);
        assert_eq!(p, vec![(1.0, 1), (50.0, 50), (99.0, 99), (100.0, 100)]);
        assert!(FioHistogram::new()
            .summary()
            .percentiles(&[50.0])
            .is_empty());
    }
}
