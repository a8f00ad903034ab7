//! The synthetic device, the simulator's device model on the device
//! core's clock (docs/MODEL.md, "Device model"): `parallel_units` units
//! behind a FIFO (or, for a profile with striped units, a FIFO per unit,
//! each request bound to a unit drawn from a stream of its own), each
//! holding a request for its media time, `base` with seeded jitter, and
//! the controller's one transfer pipe, `size / bandwidth`, whatever its
//! direction: a read's data crosses it after the media access, a write's
//! before. The pipe is the simulator's ([`cint_scenario::pipe`]): a
//! transfer of one 4 KiB page crosses whole in arrival order while nothing
//! longer is in progress; transfers in progress take a page each in turn.
//! So the device never moves more than its bandwidth, however many units
//! it has, and a small transfer does not wait for a whole large one. A
//! request "runs" until the clock passes the instant its part ends, so no
//! sleep is involved and microsecond devices are emulable.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use cint_policy::Nanos;
use cint_scenario::pipe::{TransferPipe, PIPE_PAGE_BYTES};
use cint_scenario::profiles::{transfer_ns, JitterKind, OpTiming};
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
    /// One full page's time on the pipe, read and write: fixed by the
    /// profile, so computed once rather than at every request.
    page_ns: [Nanos; 2],
}

impl ServiceTime {
    /// A generator for `profile`, seeded with `seed`.
    pub fn new(profile: &DeviceProfile, seed: u64) -> Self {
        ServiceTime {
            read: profile.read.clone(),
            write: profile.write.clone(),
            page_ns: [
                transfer_ns(PIPE_PAGE_BYTES, profile.read.bandwidth),
                transfer_ns(PIPE_PAGE_BYTES, profile.write.bandwidth),
            ],
            jitter: profile.jitter,
            spread: profile.jitter_spread.0 as f64,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    fn timing(&self, op: Op) -> &OpTiming {
        match op {
            Op::Read => &self.read,
            Op::Write => &self.write,
        }
    }

    /// The media time of one request (it holds a unit meanwhile): `base`
    /// with the profile's jitter.
    pub fn media(&mut self, op: Op) -> Nanos {
        let mean = self.timing(op).base.0 as f64;
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

    /// The time `len` bytes take on the controller's pipe; none on a
    /// profile without a bandwidth (a zero-latency device).
    pub fn transfer(&self, op: Op, len: u32) -> Nanos {
        transfer_ns(u64::from(len), self.timing(op).bandwidth)
    }

    /// The time one full page takes on the pipe.
    pub fn page(&self, op: Op) -> Nanos {
        self.page_ns[usize::from(op == Op::Write)]
    }

    fn standard_normal(&mut self) -> f64 {
        // Box-Muller; one of the pair is enough here.
        let u1: f64 = self.rng.gen::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = self.rng.gen::<f64>();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// The synthetic device: units, their waiting lines, the pipe.
pub(crate) struct Synthetic {
    units: usize,
    service: ServiceTime,
    /// Media accesses by end instant; the index points into `running`.
    finishing: BinaryHeap<Reverse<(Nanos, u32)>>,
    running: Vec<Option<Accepted>>,
    free: Vec<u32>,
    /// Requests waiting for a unit, with the instant they reached it.
    waiting: VecDeque<(Accepted, Nanos)>,
    /// Striped units: per unit, the requests bound to it that wait (the
    /// unit is its index in `running`), and the stream that binds them.
    striped: Option<Box<StripedUnits>>,
    /// Transfers crossing the controller's pipe whole, with the instant
    /// each ends, in the pipe's order (so the instants never decrease):
    /// reads that are done then, writes whose media access may start then.
    pipe: VecDeque<(Nanos, Accepted)>,
    /// The pipe itself: it gives the ends of whole transfers and keeps
    /// the round of those that take pages in turn (boxed: the backends
    /// stay of one size).
    round: Box<TransferPipe<Accepted>>,
}

/// Striped units' waiting lines and the stream that binds requests.
struct StripedUnits {
    waiting: Vec<VecDeque<(Accepted, Nanos)>>,
    rng: ChaCha8Rng,
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
            Box::new(StripedUnits {
                waiting: vec![VecDeque::new(); units],
                rng: ChaCha8Rng::seed_from_u64(seed ^ UNIT_STREAM),
            })
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
            pipe: VecDeque::with_capacity(capacity),
            round: Box::new(TransferPipe::new()),
        })
    }

    pub fn submit(&mut self, request: Accepted, now: Nanos) {
        match request.entry.op {
            // A write's data crosses the pipe first.
            Op::Write => self.enter_pipe(request, now),
            Op::Read => self.enter_units(request, now),
        }
    }

    /// Queues `request`'s transfer on the pipe at `at`.
    fn enter_pipe(&mut self, request: Accepted, at: Nanos) {
        let op = request.entry.op;
        let ns = self.service.transfer(op, request.entry.len);
        let page = self.service.page(op);
        let bytes = u64::from(request.entry.len);
        if let Some(end) = self.round.add(at, request, bytes, ns, page) {
            self.pipe.push_back((end, request));
        }
    }

    /// `request` reaches the units at `at`: it takes one or waits.
    fn enter_units(&mut self, request: Accepted, at: Nanos) {
        if let Some(st) = self.striped.as_deref_mut() {
            let unit = st.rng.gen_range(0..self.units);
            if self.running[unit].is_some() {
                st.waiting[unit].push_back((request, at));
            } else {
                self.start_on(unit as u32, request, at);
            }
        } else if self.finishing.len() < self.units && !self.free.is_empty() {
            self.start(request, at);
        } else {
            self.waiting.push_back((request, at));
        }
    }

    fn start(&mut self, request: Accepted, start: Nanos) {
        let Some(index) = self.free.pop() else {
            self.waiting.push_front((request, start));
            return;
        };
        self.start_on(index, request, start);
    }

    fn start_on(&mut self, index: u32, request: Accepted, start: Nanos) {
        let finish = start + self.service.media(request.entry.op);
        self.running[index as usize] = Some(request);
        self.finishing.push(Reverse((finish, index)));
    }

    /// Ends every media access and transfer due by `now`, in time order
    /// (a media access that ends queues its read's transfer, a transfer
    /// that ends starts its write's media access). At one instant a media
    /// access ends first, then a whole transfer, then the round's.
    pub fn poll(&mut self, now: Nanos, done: &mut Vec<Finished>) {
        loop {
            let unit = self.finishing.peek().map(|&Reverse((t, _))| t);
            let whole = self.pipe.front().map(|&(t, _)| t);
            let round = self.round.next_end().map(|(t, _)| t);
            let pipe = match (whole, round) {
                (Some(w), Some(r)) => Some(w.min(r)),
                (w, r) => w.or(r),
            };
            match (unit, pipe) {
                (Some(u), p) if u <= now && p.is_none_or(|p| u <= p) => self.media_done(done),
                (_, Some(p)) if p <= now => {
                    if whole == Some(p) {
                        self.transfer_done(done);
                    } else {
                        self.round_done(p, done);
                    }
                }
                _ => break,
            }
        }
    }

    /// The earliest media access ends: its unit goes to the next request
    /// waiting for it, at that instant, not when the device core noticed.
    fn media_done(&mut self, done: &mut Vec<Finished>) {
        let Some(Reverse((finish, index))) = self.finishing.pop() else {
            return;
        };
        let request = self.running[index as usize].take();
        let next = match self.striped.as_deref_mut() {
            Some(st) => st.waiting[index as usize].pop_front(),
            None => self.waiting.pop_front(),
        };
        match next {
            // The unit goes straight to the next request (a pooled one
            // would have taken this free slot first anyway).
            Some((next, arrived)) => self.start_on(index, next, finish.max(arrived)),
            None if self.striped.is_none() => self.free.push(index),
            None => {}
        }
        if let Some(request) = request {
            match request.entry.op {
                Op::Read => self.enter_pipe(request, finish),
                Op::Write => done.push((request, i64::from(request.entry.len))),
            }
        }
    }

    /// The pipe's first transfer ends: a read is done, a write goes to
    /// the units.
    fn transfer_done(&mut self, done: &mut Vec<Finished>) {
        if let Some((end, request)) = self.pipe.pop_front() {
            self.transferred(request, end, done);
        }
    }

    /// The round's next transfer ends at `end`: a read is done, a write
    /// goes to the units.
    fn round_done(&mut self, end: Nanos, done: &mut Vec<Finished>) {
        if let Some(request) = self.round.finish(end) {
            self.transferred(request, end, done);
        }
    }

    fn transferred(&mut self, request: Accepted, end: Nanos, done: &mut Vec<Finished>) {
        match request.entry.op {
            Op::Read => done.push((request, i64::from(request.entry.len))),
            Op::Write => self.enter_units(request, end),
        }
    }

    pub fn cancel_all(&mut self, done: &mut Vec<Finished>) {
        while let Some(Reverse((_, index))) = self.finishing.pop() {
            if let Some(request) = self.running[index as usize].take() {
                done.push((request, RESULT_CANCELLED));
            }
            if self.striped.is_none() {
                self.free.push(index);
            }
        }
        done.extend(self.waiting.drain(..).map(|(r, _)| (r, RESULT_CANCELLED)));
        done.extend(self.pipe.drain(..).map(|(_, r)| (r, RESULT_CANCELLED)));
        done.extend(self.round.drain().map(|r| (r, RESULT_CANCELLED)));
        if let Some(st) = self.striped.as_deref_mut() {
            for unit in &mut st.waiting {
                done.extend(unit.drain(..).map(|(r, _)| (r, RESULT_CANCELLED)));
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
    use proptest::prelude::*;

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

    fn write(slot: u32) -> Accepted {
        let mut r = request(slot);
        r.entry.op = Op::Write;
        r
    }

    /// Polls `dev` at `t`: the slots of the requests done by then, in
    /// the order they ended.
    fn slots_done_by(dev: &mut Synthetic, t: Nanos, done: &mut Vec<Finished>) -> Vec<u32> {
        dev.poll(t, done);
        done.iter().map(|(r, _)| r.entry.slot).collect()
    }

    #[test]
    fn units_serve_in_waves_and_the_pipe_one_transfer_at_a_time() {
        // Two units of 10 us, then 1 us each on the pipe (4 KiB at
        // 4.096 GB/s): media ends at 10, 20 and 30 us, transfers at 11
        // and 12, 21 and 22, 31.
        let mut dev = Synthetic::new(&profile(2, JitterKind::None), 1, 8).unwrap();
        for slot in 0..5 {
            dev.submit(request(slot), 0);
        }
        let mut done = Vec::new();
        let mut at = |t: Nanos, done: &mut Vec<Finished>| {
            dev.poll(t, done);
            done.len()
        };
        assert_eq!(at(10_999, &mut done), 0);
        assert_eq!(at(11_000, &mut done), 1);
        assert_eq!(at(12_000, &mut done), 2);
        assert_eq!(at(21_999, &mut done), 3);
        assert_eq!(at(22_000, &mut done), 4);
        assert_eq!(at(1_000_000, &mut done), 5);
        let mut slots: Vec<u32> = done.iter().map(|(r, _)| r.entry.slot).collect();
        slots.sort_unstable();
        assert_eq!(slots, vec![0, 1, 2, 3, 4]);
        assert!(done.iter().all(|&(_, res)| res == 4096));
    }

    #[test]
    fn the_pipe_bounds_the_bandwidth_whatever_the_units() {
        // 64 units, 128 KiB reads: the units could serve 64 at a time,
        // the pipe moves 4.096 GB/s (32 us per read) and no more. The
        // media accesses end by 40 us; from 10 us the pipe is busy
        // without a pause until all 256 reads crossed: 10 + 256 x 32 us.
        let mut dev = Synthetic::new(&profile(64, JitterKind::None), 1, 256).unwrap();
        for slot in 0..256 {
            let mut r = request(slot);
            r.entry.len = 128 << 10;
            dev.submit(r, 0);
        }
        let mut done = Vec::new();
        for t in (100_000..=8_200_000).step_by(100_000) {
            dev.poll(t, &mut done);
            let bytes: i64 = done.iter().map(|&(_, n)| n).sum();
            assert!(
                bytes as f64 <= 4.096e9 * t as f64 / 1e9,
                "{bytes} bytes by {t} ns"
            );
        }
        dev.poll(8_201_999, &mut done);
        assert_eq!(done.len(), 255, "the last read ends when the pipe is done");
        dev.poll(8_202_000, &mut done);
        assert_eq!(done.len(), 256);
    }

    #[test]
    fn a_small_read_waits_for_a_page_of_a_large_one_not_all_of_it() {
        // A 1 MiB read and a 4 KiB one on two units, the small one 5 us
        // later: its media ends at 15 us, in the large transfer's sixth
        // page (10 to 266 us); the page under way ends at 16 us and the
        // small read's own at 17 us. In arrival order it waited until
        // 267 us.
        let mut dev = Synthetic::new(&profile(2, JitterKind::None), 1, 8).unwrap();
        let mut big = request(0);
        big.entry.len = 1 << 20;
        dev.submit(big, 0);
        dev.submit(request(1), 5_000);
        let mut done = Vec::new();
        let mut at = |t: Nanos, done: &mut Vec<Finished>| slots_done_by(&mut dev, t, done);
        assert!(at(16_999, &mut done).is_empty());
        assert_eq!(at(17_000, &mut done), [1]);
        assert_eq!(at(266_999, &mut done), [1]);
        assert_eq!(at(267_000, &mut done), [1, 0]);
    }

    #[test]
    fn a_writes_data_crosses_the_pipe_before_its_media_access() {
        // A write of 64 KiB: 16 us on the pipe, then 10 us of media. A
        // 4 KiB read submitted with it takes a unit at once (media to 10
        // us), then takes its page on the pipe after the write's page
        // under way: it ends at 12 us, not 11, and the write's data at
        // 17 us, its media access at 27.
        let mut p = profile(2, JitterKind::None);
        p.write = p.read.clone();
        let mut dev = Synthetic::new(&p, 1, 8).unwrap();
        let mut w = write(0);
        w.entry.len = 64 << 10;
        dev.submit(w, 0);
        dev.submit(request(1), 0);
        let mut done = Vec::new();
        let mut at = |t: Nanos, done: &mut Vec<Finished>| slots_done_by(&mut dev, t, done);
        assert!(at(11_999, &mut done).is_empty());
        assert_eq!(at(12_000, &mut done), [1]);
        assert_eq!(at(26_999, &mut done), [1]);
        assert_eq!(at(27_000, &mut done), [1, 0]);
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
            // 250 media accesses of 10 us and the last transfer: enough for
            // pooled units only (the pipe, 1 us a read, is not the bound).
            dev.poll(250 * 10_000 + 4_000, &mut done);
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
                    let x = a.media(Op::Read);
                    assert_eq!(x, b.media(Op::Read));
                    x
                })
                .sum();
            let mean = sum as f64 / n as f64;
            assert!((mean - 10_000.0).abs() < 300.0, "{kind:?}: mean {mean}");
        }
    }

    proptest! {
        /// Any mix of reads and writes of any size, submitted at any
        /// pace and polled at any pace, on pooled or striped units:
        /// every request ends exactly once with its size, none before
        /// its media time and its transfer could have passed, and the
        /// pipe carries one page at a time (it is busy at least the sum of
        /// their times).
        #[test]
        fn every_request_ends_once_and_the_pipe_serialises_transfers(
            units in 1u32..8,
            striped in any::<bool>(),
            ops in proptest::collection::vec(
                (any::<bool>(), 1u32..=256, 0u64..20_000, any::<bool>()),
                1..200,
            ),
        ) {
            let mut p = profile(units, JitterKind::None);
            p.write = p.read.clone();
            if striped {
                p.unit_binding = UnitBinding::Striped;
            }
            let mut dev = Synthetic::new(&p, 3, 256).unwrap();
            let (mut now, mut done) = (0, Vec::new());
            let mut earliest = Vec::new();
            let mut pipe_total = 0;
            for (slot, &(is_write, pages, gap, poll)) in ops.iter().enumerate() {
                now += gap;
                if poll {
                    let before = done.len();
                    dev.poll(now, &mut done);
                    for (r, _) in &done[before..] {
                        prop_assert!(now >= earliest[r.entry.slot as usize]);
                    }
                }
                let mut r = if is_write { write(slot as u32) } else { request(slot as u32) };
                r.entry.len = pages * 4096;
                let xfer = dev.service.transfer(r.entry.op, r.entry.len);
                pipe_total += xfer;
                earliest.push(now + 10_000 + xfer);
                dev.submit(r, now);
            }
            dev.poll(u64::MAX / 4, &mut done);
            let mut slots: Vec<u32> = done.iter().map(|(r, _)| r.entry.slot).collect();
            slots.sort_unstable();
            prop_assert_eq!(slots, (0..ops.len() as u32).collect::<Vec<_>>());
            prop_assert!(done.iter().all(|(r, n)| *n == i64::from(r.entry.len)));
            prop_assert!(dev.round.free_at() >= pipe_total);
            prop_assert!(dev.pipe.is_empty() && !dev.round.is_sharing());
            prop_assert!(dev.finishing.is_empty());
        }
    }
}
