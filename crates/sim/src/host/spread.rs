//! Host-side variation of CPU costs.
//!
//! Every host cost in the profile is a mean. A real kernel path varies
//! around it from one call to the next (cache and TLB misses, branch
//! history, a contended line). With `host.cost_spread` set, each charge of
//! CPU time is multiplied by a factor drawn from a log-normal distribution
//! with mean 1 and that coefficient of variation: right-skewed (a path is
//! slowed by misses more often than it is sped up) and never negative.
//! The shipped profiles keep it at 0: what the evidence says about the
//! testbed's variation, and why one spread over every path does not fit
//! it, is in docs/HOST-COSTS.md, "Host-side variation".
//!
//! The factors are a table of the distribution's quantiles, indexed by
//! random bits: one draw per charge and no transcendental function on the
//! simulator's hot path. The table is renormalised so its mean is exactly
//! 1, so the spread moves no mean cost.

use cint_policy::Nanos;
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// Bits of randomness per draw: a table of `2^TABLE_BITS` quantiles.
const TABLE_BITS: u32 = 10;

/// The lognormal factors, or none for exact costs.
#[derive(Clone, Debug)]
pub(crate) struct CostSpread {
    factors: Box<[f64]>,
}

impl CostSpread {
    /// The factor table for coefficient of variation `cv`; `None` when
    /// `cv` is zero (costs exact, no random draws).
    pub(crate) fn new(cv: f64) -> Option<Self> {
        if cv <= 0.0 {
            return None;
        }
        let sigma = (1.0 + cv * cv).ln().sqrt();
        let n = 1usize << TABLE_BITS;
        let mut factors: Vec<f64> = (0..n)
            .map(|i| {
                let p = (i as f64 + 0.5) / n as f64;
                (sigma * inverse_normal_cdf(p)).exp()
            })
            .collect();
        let mean = factors.iter().sum::<f64>() / n as f64;
        for f in &mut factors {
            *f /= mean;
        }
        Some(CostSpread {
            factors: factors.into_boxed_slice(),
        })
    }

    /// `cost` varied by one draw from `rng`.
    pub(crate) fn vary(&self, cost: Nanos, rng: &mut ChaCha8Rng) -> Nanos {
        if cost == 0 {
            return 0;
        }
        let i = (rng.next_u32() >> (32 - TABLE_BITS)) as usize;
        (cost as f64 * self.factors[i]).round() as Nanos
    }
}

/// The standard normal distribution's quantile function (Acklam's
/// rational approximation, relative error under 1.2e-9).
fn inverse_normal_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stream_rng;

    fn mean_and_cv(factors: &[f64]) -> (f64, f64) {
        let n = factors.len() as f64;
        let mean = factors.iter().sum::<f64>() / n;
        let var = factors.iter().map(|f| (f - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn no_spread_means_exact_costs() {
        assert!(CostSpread::new(0.0).is_none());
    }

    #[test]
    fn the_table_keeps_every_mean_and_has_the_asked_spread() {
        for cv in [0.1, 0.5, 0.75, 1.0, 2.0] {
            let spread = CostSpread::new(cv).expect("a spread");
            let (mean, got) = mean_and_cv(&spread.factors);
            assert!((mean - 1.0).abs() < 1e-12, "cv {cv}: mean factor {mean}");
            // The table stops at the 1/2048 quantile at either end, so a
            // heavy tail is a little thinner than the distribution's.
            let tolerance = if cv <= 1.0 { 0.03 } else { 0.15 };
            assert!(
                (got - cv).abs() <= tolerance * cv,
                "cv {cv}: the table's is {got:.3}"
            );
            assert!(spread.factors.iter().all(|&f| f > 0.0));
            assert!(spread.factors.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn varied_costs_average_to_the_profile_cost() {
        let spread = CostSpread::new(0.75).expect("a spread");
        let mut rng = stream_rng(3, 9);
        let n = 200_000u64;
        let cost = 2_000;
        let sum: u64 = (0..n).map(|_| spread.vary(cost, &mut rng)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 2_000.0).abs() < 15.0, "mean {mean}");
        assert_eq!(spread.vary(0, &mut rng), 0);
    }

    #[test]
    fn the_normal_quantiles_are_right() {
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959_963_985),
            (0.01, -2.326_347_874),
            (0.999, 3.090_232_306),
        ] {
            let got = inverse_normal_cdf(p);
            assert!((got - z).abs() < 1e-8, "p {p}: {got} against {z}");
        }
    }
}
