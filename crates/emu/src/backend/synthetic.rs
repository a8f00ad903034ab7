//! The synthetic device: `parallel_units` servers, a FIFO in front of them
//! (or, for a profile with striped units, a FIFO per unit, each request
//! bound to a unit drawn from a stream of its own), service time `base + size / bandwidth` with seeded jitter. Time is the
//! device core's clock; a request "runs" until the clock passes its finish
//! instant, so no sleep is involved and microsecond devices are emulable.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use cint_policy::Nanos;
use cint_scenario::profiles::{JitterKind, OpTiming};
use cint_scenario::{DeviceProfile, UnitBinding};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Finished;
use crate::error::EmuError;
use crate::shared::{Accepted, Op, RESULT_CANCELLED};

/// Service-time generator of one device profile.
#[derive(Clone, Debug)]
pub struct ServiceTime {
    read: OpTiming,
    write: OpTiming,
    jitter: JitterKind,
    spread: f64,
    rng: ChaCha8Rng,
}

impl ServiceTime {
    /// A generator for `profile`, seeded with `seed`.
    pub fn new(profile: &DeviceProfile, seed: u64) -> Self {
        ServiceTime {
            read: profile.read.clone(),
            write: profile.write.clone(),
            jitter: profile.jitter,
            spread: profile.jitter_spread.0 as f64,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The service time of one request.
    pub fn sample(&mut self, op: Op, len: u32) -> Nanos {
        let timing = match op {
            Op::Read => &self.read,
            Op::Write => &self.write,
        };
        let transfer = if timing.bandwidth == 0 {
            0
        } else {
            (u128::from(len) * 1_000_000_000 / u128::from(timing.bandwidth)) as u64
        };
        let mean = (timing.base.0 + transfer) as f64;
        let value = match self.jitter {
            JitterKind::None => mean,
            JitterKind::Normal => mean + self.spread * self.standard_normal(),
            JitterKind::Lognormal => {
                // Same mean as the deterministic time, standard deviation
                // `spread`: a right tail, as flash devices have.
                if mean <= 0.0 {
                    0.0
                } else {
                    let sigma2 = (1.0 + (self.spread / mean).powi(2)).ln();
                    let sigma = sigma2.sqrt();
                    mean * (sigma * self.standard_normal() - sigma2 / 2.0).exp()
                }
            }
            JitterKind::Exponential => {
                let u: f64 = self.rng.gen::<f64>();
                -mean * (1.0 - u).ln()
            }
        };
        if value.is_finite() && value > 0.0 {
            value as Nanos
        } else {
            0
        }
    }

    fn standard_normal(&mut self) -> f64 {
        // Box-Muller; one of the pair is enough here.
        let u1: f64 = self.rng.gen::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = self.rng.gen::<f64>();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// The synthetic device: servers, waiting line, finish-time heap.
pub(crate) struct Synthetic {
    units: usize,
    service: ServiceTime,
    /// Requests in service by finish instant; the index points into
    /// `running`.
    finishing: BinaryHeap<Reverse<(Nanos, u32)>>,
    running: Vec<Option<Accepted>>,
    free: Vec<u32>,
    waiting: VecDeque<Accepted>,
    /// Striped units: per unit, the requests bound to it that wait (the
    /// unit is its index in `running`), and the stream that binds them.
    striped: Option<Box<(Vec<VecDeque<Accepted>>, ChaCha8Rng)>>,
}

/// Seeds the striped units' stream apart from the service times'.
const UNIT_STREAM: u64 = 0x756e_6974_7300_0000;

impl Synthetic {
    pub fn new(profile: &DeviceProfile, seed: u64, capacity: usize) -> Result<Self, EmuError> {
        if profile.parallel_units == 0 {
            return Err(EmuError::Config(
                "device parallel_units must be at least 1".into(),
            ));
        }
        let units = profile.parallel_units as usize;
        let striped = (profile.unit_binding == UnitBinding::Striped).then(|| {
            Box::new((
                vec![VecDeque::new(); units],
                ChaCha8Rng::seed_from_u64(seed ^ UNIT_STREAM),
            ))
        });
        // A striped unit keeps its slot: slot `u` is unit `u`.
        let slots = if striped.is_some() {
            units
        } else {
            units.min(capacity.max(1))
        };
        Ok(Synthetic {
            units,
            service: ServiceTime::new(profile, seed),
            finishing: BinaryHeap::with_capacity(slots),
            running: vec![None; slots],
            free: (0..slots as u32).rev().collect(),
            waiting: VecDeque::with_capacity(capacity),
            striped,
        })
    }

    pub fn submit(&mut self, request: Accepted, now: Nanos) {
        if let Some((waiting, rng)) = self.striped.as_deref_mut() {
            let unit = rng.gen_range(0..self.units);
            if self.running[unit].is_some() {
                waiting[unit].push_back(request);
            } else {
                self.start_on(unit as u32, request, now);
            }
        } else if self.finishing.len() < self.units && !self.free.is_empty() {
            self.start(request, now);
        } else {
            self.waiting.push_back(request);
        }
    }

    fn start(&mut self, request: Accepted, start: Nanos) {
        let Some(index) = self.free.pop() else {
            self.waiting.push_front(request);
            return;
        };
        self.start_on(index, request, start);
    }

    fn start_on(&mut self, index: u32, request: Accepted, start: Nanos) {
        let finish = start + self.service.sample(request.entry.op, request.entry.len);
        self.running[index as usize] = Some(request);
        self.finishing.push(Reverse((finish, index)));
    }

    pub fn poll(&mut self, now: Nanos, done: &mut Vec<Finished>) {
        while let Some(&Reverse((finish, index))) = self.finishing.peek() {
            if finish > now {
                break;
            }
            self.finishing.pop();
            if let Some(request) = self.running[index as usize].take() {
                done.push((request, i64::from(request.entry.len)));
            }
            // The freed unit starts the next request when the previous one
            // finished, not when the device core noticed.
            if let Some((waiting, _)) = self.striped.as_deref_mut() {
                if let Some(next) = waiting[index as usize].pop_front() {
                    self.start_on(index, next, finish);
                }
                continue;
            }
            self.free.push(index);
            if let Some(next) = self.waiting.pop_front() {
                self.start(next, finish);
            }
        }
    }

    pub fn cancel_all(&mut self, done: &mut Vec<Finished>) {
        while let Some(Reverse((_, index))) = self.finishing.pop() {
            if let Some(request) = self.running[index as usize].take() {
                done.push((request, RESULT_CANCELLED));
            }
            self.free.push(index);
        }
        done.extend(self.waiting.drain(..).map(|r| (r, RESULT_CANCELLED)));
        if let Some((waiting, _)) = self.striped.as_deref_mut() {
            for unit in waiting {
                done.extend(unit.drain(..).map(|r| (r, RESULT_CANCELLED)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::SubmitEntry;
    use cint_policy::Hint;
    use cint_scenario::units::Duration;

    fn profile(units: u32, jitter: JitterKind) -> DeviceProfile {
        let mut p = DeviceProfile::builtin("optane-p4800x").unwrap();
        p.parallel_units = units;
        p.jitter = jitter;
        p.read = OpTiming {
            base: Duration(10_000),
            bandwidth: 4_096_000_000,
        };
        p
    }

    fn request(slot: u32) -> Accepted {
        Accepted {
            channel: 0,
            queue: 0,
            seq: u64::from(slot),
            entry: SubmitEntry {
                slot,
                generation: 0,
                op: Op::Read,
                hint: Hint::Unmarked,
                offset: 0,
                len: 4096,
                buf: 0,
                polled: false,
            },
        }
    }

    #[test]
    fn parallel_units_serve_in_waves() {
        let mut dev = Synthetic::new(&profile(2, JitterKind::None), 1, 8).unwrap();
        for slot in 0..5 {
            dev.submit(request(slot), 0);
        }
        let mut done = Vec::new();
        dev.poll(10_999, &mut done);
        assert!(done.is_empty());
        dev.poll(11_000, &mut done);
        assert_eq!(done.len(), 2);
        dev.poll(22_000, &mut done);
        assert_eq!(done.len(), 4);
        dev.poll(1_000_000, &mut done);
        let slots: Vec<u32> = done.iter().map(|(r, _)| r.entry.slot).collect();
        assert_eq!(slots.len(), 5);
        assert!(done.iter().all(|&(_, res)| res == 4096));
    }

    #[test]
    fn striped_units_make_requests_wait_for_their_own_unit() {
        let mut striped = profile(4, JitterKind::None);
        striped.unit_binding = UnitBinding::Striped;
        let run = |p: &DeviceProfile| {
            let mut dev = Synthetic::new(p, 7, 1000).unwrap();
            for slot in 0..1000 {
                dev.submit(request(slot), 0);
            }
            let mut done = Vec::new();
            // 250 services of 11 us: enough for pooled units only.
            dev.poll(250 * 11_000, &mut done);
            let by_then = done.len();
            dev.poll(u64::MAX / 2, &mut done);
            let mut slots: Vec<u32> = done.iter().map(|(r, _)| r.entry.slot).collect();
            slots.sort_unstable();
            assert_eq!(slots, (0..1000).collect::<Vec<u32>>(), "each once");
            by_then
        };
        assert_eq!(run(&profile(4, JitterKind::None)), 1000);
        // Bound at random, the four units' shares are unequal: the
        // busiest is still serving when pooled units are done.
        assert!(run(&striped) < 1000);
        let mut dev = Synthetic::new(&striped, 7, 8).unwrap();
        for slot in 0..8 {
            dev.submit(request(slot), 0);
        }
        let mut done = Vec::new();
        dev.cancel_all(&mut done);
        assert_eq!(done.len(), 8, "cancel returns the waiting requests too");
    }

    #[test]
    fn cancel_returns_every_request_once() {
        let mut dev = Synthetic::new(&profile(1, JitterKind::Normal), 1, 8).unwrap();
        for slot in 0..4 {
            dev.submit(request(slot), 0);
        }
        let mut done = Vec::new();
        dev.cancel_all(&mut done);
        let mut slots: Vec<u32> = done.iter().map(|(r, _)| r.entry.slot).collect();
        slots.sort_unstable();
        assert_eq!(slots, vec![0, 1, 2, 3]);
        assert!(done.iter().all(|&(_, res)| res == RESULT_CANCELLED));
    }

    #[test]
    fn jitter_keeps_the_mean_and_is_seeded() {
        for kind in [
            JitterKind::Normal,
            JitterKind::Lognormal,
            JitterKind::Exponential,
        ] {
            let mut a = ServiceTime::new(&profile(1, kind), 7);
            let mut b = ServiceTime::new(&profile(1, kind), 7);
            let n = 20_000;
            let sum: u64 = (0..n)
                .map(|_| {
                    let x = a.sample(Op::Read, 4096);
                    assert_eq!(x, b.sample(Op::Read, 4096));
                    x
                })
                .sum();
            let mean = sum as f64 / n as f64;
            assert!((mean - 11_000.0).abs() < 300.0, "{kind:?}: mean {mean}");
        }
    }
}
