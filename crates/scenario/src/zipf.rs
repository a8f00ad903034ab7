//! Zipf's law as YCSB and fio draw it (Gray et al., "Quickly generating
//! billion-record synthetic databases", SIGMOD'94: the approximation
//! YCSB's `ZipfianGenerator` and fio's lib/zipf.c both use).

/// Ranks `0..n` under Zipf's law with exponent `theta`.
#[derive(Clone, Copy, Debug)]
pub struct Zipf {
    n: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow: f64,
}

/// Terms of zeta summed one by one; the rest by the integral of `x^-theta`
/// (a relative error under 1e-9 at these sizes).
const EXACT_TERMS: u64 = 10_000;

impl Zipf {
    /// `n` ranks, zeta summed over the first `terms` of them (YCSB sums all
    /// `n`; fio stops at 10 million, `ZIPF_MAX_GEN`).
    pub fn new(n: u64, theta: f64, terms: u64) -> Zipf {
        let zeta = |n: u64| -> f64 {
            let exact = n.min(EXACT_TERMS);
            let mut z: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
            if n > exact {
                let (a, b) = (exact as f64 + 0.5, n as f64 + 0.5);
                z += (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
            }
            z
        };
        let zetan = zeta(terms.min(n));
        let zeta2 = zeta(2);
        let nf = n as f64;
        Zipf {
            n: nf,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            half_pow: 0.5f64.powf(theta),
        }
    }

    /// The rank a uniform `u` in [0, 1] gives (0 the most popular).
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow {
            return 1;
        }
        let r = self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (r as u64).min(self.n as u64 - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn ranks_favour_the_first_and_cover_the_range() {
        let z = Zipf::new(1_000_000, 0.99, 1_000_000);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let draws: Vec<u64> = (0..100_000).map(|_| z.rank(rng.gen())).collect();
        let top = draws.iter().filter(|&&r| r < 1_000).count() as f64 / 1e5;
        // zeta(1000) / zeta(10^6) at 0.99: about 0.5.
        assert!((0.4..0.6).contains(&top), "{top}");
        assert!(draws.iter().all(|&r| r < 1_000_000));
        assert!(draws.iter().any(|&r| r > 500_000));
    }

    /// fio's default theta, 1.1, past 1: the approximation still gives
    /// ranks in range, the first the most drawn.
    #[test]
    fn a_theta_past_one_draws_in_range() {
        let z = Zipf::new(16_384, 1.1, 16_384);
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut counts = vec![0u32; 16_384];
        for _ in 0..100_000 {
            counts[z.rank(rng.gen()) as usize] += 1;
        }
        assert!(counts[0] > counts[1] && counts[1] > counts[100]);
    }
}
