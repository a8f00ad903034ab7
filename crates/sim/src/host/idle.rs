//! cpuidle governors: which idle state a core enters when it has nothing
//! to run, from what the kernel knows at that instant (the time to the
//! next timer, the tasks of this CPU blocked on I/O, how long recent idle
//! periods lasted). Each follows its Linux source; docs/ENERGY.md says
//! which version and what is left out.

use cint_policy::Nanos;
use cint_scenario::{Governor, HostPower};

/// The idle states as the governors read them.
#[derive(Clone, Debug)]
pub(crate) struct StateTable {
    pub exit_ns: Vec<Nanos>,
    pub residency_ns: Vec<Nanos>,
    pub polling: Vec<bool>,
}

impl StateTable {
    pub(crate) fn new(p: &HostPower) -> StateTable {
        StateTable {
            exit_ns: p.idle_states.iter().map(|s| s.exit_latency.0).collect(),
            residency_ns: p.idle_states.iter().map(|s| s.target_residency.0).collect(),
            polling: p.idle_states.iter().map(|s| s.polling).collect(),
        }
    }

    fn len(&self) -> usize {
        self.exit_ns.len()
    }

    /// How long a polling state spins before the governor runs again
    /// (`cpuidle_poll_time`, Linux 5.10 on): the target residency of the
    /// first state that is not polling and whose residency is at least
    /// 10 us (`CPUIDLE_POLL_MIN`), at most a sixteenth of a tick
    /// (`CPUIDLE_POLL_MAX`); a tick when no state qualifies.
    pub(crate) fn poll_limit(&self, tick: Nanos) -> Nanos {
        const POLL_MIN: Nanos = 10_000;
        (0..self.len())
            .find(|&i| !self.polling[i] && self.residency_ns[i] >= POLL_MIN)
            .map_or(tick, |i| self.residency_ns[i].min(tick / 16))
            .max(1)
    }
}

/// What the governor is told when the core goes idle.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdleContext {
    /// Time to the next timer event on this core (the tick if none is
    /// nearer).
    pub sleep_length: Nanos,
    /// Tasks of this CPU blocked in `io_schedule`.
    pub nr_iowait: u32,
}

/// One core's governor and its learned state.
#[derive(Clone, Debug)]
pub(crate) enum GovernorState {
    Menu(Menu),
    Teo(Teo),
}

impl GovernorState {
    pub(crate) fn new(kind: Governor, states: usize) -> GovernorState {
        match kind {
            Governor::Menu => GovernorState::Menu(Menu::new(true)),
            Governor::MenuNoIowait => GovernorState::Menu(Menu::new(false)),
            Governor::Teo => GovernorState::Teo(Teo::new(states)),
        }
    }

    /// The state to enter.
    pub(crate) fn select(&mut self, t: &StateTable, ctx: IdleContext) -> usize {
        match self {
            GovernorState::Menu(m) => m.select(t, ctx),
            GovernorState::Teo(g) => g.select(t, ctx),
        }
    }

    /// The idle period that began with the last `select` ended after
    /// `residency` ns in state `idx`; `poll_limit_hit`: a polling state
    /// ran out its limit rather than being woken.
    pub(crate) fn reflect(
        &mut self,
        t: &StateTable,
        idx: usize,
        residency: Nanos,
        poll_limit_hit: bool,
    ) {
        match self {
            GovernorState::Menu(m) => m.reflect(t, idx, residency, poll_limit_hit),
            GovernorState::Teo(g) => g.reflect(t, idx, residency, poll_limit_hit),
        }
    }
}

/// The time actually idle, as the governors' update functions compute it
/// from the residency: the exit latency is not idle time, unless the
/// residency is too short to tell (then half of it).
fn measured(t: &StateTable, idx: usize, residency: Nanos) -> Nanos {
    let exit = t.exit_ns[idx];
    if residency > 2 * exit {
        residency - exit
    } else {
        residency / 2
    }
}

const BUCKETS: usize = 12;
const INTERVALS: usize = 8;
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
const MAX_INTERESTING: Nanos = 50_000_000;
const NSEC_PER_USEC: u64 = 1_000;
/// Linux 6.12's `RESIDENCY_THRESHOLD_NS`: below this typical interval the
/// iowait-free menu does not look at the next timer at all.
const RESIDENCY_THRESHOLD_NS: Nanos = 15_000;

/// `drivers/cpuidle/governors/menu.c`.
#[derive(Clone, Debug)]
pub(crate) struct Menu {
    /// Linux 5.15 (true): iowait splits the buckets and tightens the exit
    /// latency limit; false: after commit 38f83090f515.
    iowait: bool,
    correction: [u64; BUCKETS],
    bucket: usize,
    next_timer_ns: Nanos,
    intervals: [u32; INTERVALS],
    interval_ptr: usize,
}

impl Menu {
    fn new(iowait: bool) -> Menu {
        Menu {
            iowait,
            // menu_enable_device: every factor starts at 1.0.
            correction: [RESOLUTION * DECAY; BUCKETS],
            bucket: 0,
            next_timer_ns: 0,
            intervals: [0; INTERVALS],
            interval_ptr: 0,
        }
    }

    fn which_bucket(duration_ns: Nanos, iowaiters: u32) -> usize {
        let base = if iowaiters > 0 { BUCKETS / 2 } else { 0 };
        let decade = match duration_ns {
            d if d < 10 * NSEC_PER_USEC => 0,
            d if d < 100 * NSEC_PER_USEC => 1,
            d if d < 1_000 * NSEC_PER_USEC => 2,
            d if d < 10_000 * NSEC_PER_USEC => 3,
            d if d < 100_000 * NSEC_PER_USEC => 4,
            _ => 5,
        };
        base + decade
    }

    /// `get_typical_interval`: the mean of the last eight intervals (us)
    /// when they are steady, dropping the largest as outliers while at
    /// least six remain; `u32::MAX` when they are not.
    fn typical_interval(&self, predicted_us: u64) -> u64 {
        let mut thresh = u32::MAX;
        loop {
            let (mut min, mut max, mut sum, mut n) = (u32::MAX, 0u32, 0u64, 0u64);
            // Selects rather than branches: whether an interval counts
            // depends on the data, and a mispredicted branch costs more
            // than the arithmetic (this runs at every idle entry).
            for &v in &self.intervals {
                let keep = v <= thresh;
                sum += if keep { u64::from(v) } else { 0 };
                n += u64::from(keep);
                max = max.max(if keep { v } else { 0 });
                min = min.min(if keep { v } else { u32::MAX });
            }
            if u64::from(min) >= predicted_us {
                return u64::from(u32::MAX);
            }
            // A shift when all eight count, as Linux has it: a division
            // is the dearest instruction on this path.
            let avg = if n == INTERVALS as u64 {
                sum >> INTERVALS.trailing_zeros()
            } else {
                sum / n
            };
            let variance = self.variance(avg, thresh, max, n);
            let avg2 = u128::from(avg) * u128::from(avg);
            if (avg2 > variance * 36 && n * 4 >= INTERVALS as u64 * 3) || variance <= 400 {
                return avg;
            }
            if n * 4 <= INTERVALS as u64 * 3 {
                return u64::from(u32::MAX);
            }
            thresh = max - 1;
        }
    }

    /// The variance of the `n` intervals at most `thresh` (the largest
    /// `max`) around `avg`: exact, the squares summed in 64 bits while
    /// eight of them fit (intervals below 2^29 us, about nine minutes), in
    /// 128 beyond. Linux shifts when every interval counts; a 128-bit
    /// division is a library call, left to the rarer passes that drop an
    /// outlier.
    fn variance(&self, avg: u64, thresh: u32, max: u32, n: u64) -> u128 {
        let deviation = |v: u32| {
            u64::from(if v <= thresh {
                v.abs_diff(avg as u32)
            } else {
                0
            })
        };
        let squares: u128 = if max < 1 << 29 {
            u128::from(
                self.intervals
                    .iter()
                    .map(|&v| deviation(v).pow(2))
                    .sum::<u64>(),
            )
        } else {
            self.intervals
                .iter()
                .map(|&v| u128::from(deviation(v)).pow(2))
                .sum()
        };
        if n == INTERVALS as u64 {
            squares >> INTERVALS.trailing_zeros()
        } else {
            squares / u128::from(n)
        }
    }

    fn corrected(&self, next_timer_ns: Nanos) -> u64 {
        let scale = RESOLUTION * DECAY * NSEC_PER_USEC;
        let factor = self.correction[self.bucket];
        // In 64 bits while the product fits (sleep lengths below about
        // 13 days), as Linux computes it; in 128 beyond.
        match next_timer_ns
            .checked_mul(factor)
            .and_then(|x| x.checked_add(scale / 2))
        {
            Some(x) => x / scale,
            None => {
                let scale = u128::from(scale);
                let us = (u128::from(next_timer_ns) * u128::from(factor) + scale / 2) / scale;
                us.min(u128::from(u64::MAX)) as u64
            }
        }
    }

    /// 5.15's performance multiplier: one plus ten per task waiting on
    /// I/O, which the exit latency a prediction allows is divided by.
    fn iowait_divisor(iowaiters: u32) -> u64 {
        1 + 10 * u64::from(iowaiters)
    }

    /// The exit latency a prediction allows.
    fn latency_req(predicted_ns: Nanos, iowaiters: u32) -> Nanos {
        match iowaiters {
            0 => predicted_ns,
            n => predicted_ns / Self::iowait_divisor(n),
        }
    }

    fn select(&mut self, t: &StateTable, ctx: IdleContext) -> usize {
        let iowaiters = if self.iowait { ctx.nr_iowait } else { 0 };
        let predicted_ns = if self.iowait {
            // Linux 5.15.
            self.next_timer_ns = ctx.sleep_length;
            self.bucket = Self::which_bucket(ctx.sleep_length, iowaiters);
            if t.len() <= 1 || ctx.sleep_length < t.residency_ns[1] {
                return 0;
            }
            let predicted_us = self.corrected(ctx.sleep_length);
            if Self::only_the_shallowest_fits(t, predicted_us, iowaiters) {
                return 0;
            }
            predicted_us.min(self.typical_interval(predicted_us)) * NSEC_PER_USEC
        } else {
            // After commit 38f83090f515: the intervals first; the timer
            // only when the typical interval is long.
            let typical = self.typical_interval(u64::from(u32::MAX));
            let mut predicted = typical.saturating_mul(NSEC_PER_USEC);
            if predicted > RESIDENCY_THRESHOLD_NS {
                self.next_timer_ns = ctx.sleep_length;
                self.bucket = Self::which_bucket(ctx.sleep_length, 0);
                let timer_us = self.corrected(ctx.sleep_length);
                predicted = predicted.min(timer_us.saturating_mul(NSEC_PER_USEC));
            } else {
                self.next_timer_ns = Nanos::MAX;
                self.bucket = Self::which_bucket(Nanos::MAX, 0);
            }
            if t.len() <= 1 {
                return 0;
            }
            predicted
        };
        // The tick keeps running for a short prediction, so the
        // performance multiplier applies (the tick is never stopped here:
        // the model has no tickless long idle to bound).
        self.deepest_fitting(t, predicted_ns, Self::latency_req(predicted_ns, iowaiters))
    }

    /// True when the timer's prediction alone (`predicted_us`, before
    /// the intervals) leaves less exit latency than state 1 needs. The
    /// intervals can only lower a prediction, and a lower prediction only
    /// picks a shallower state, so the choice is then state 0 and the
    /// intervals need not be computed: the common case of a short I/O
    /// wait, at every idle entry. (`latency_req(p) < e` is
    /// `p < e * (1 + 10n)`: no division.)
    fn only_the_shallowest_fits(t: &StateTable, predicted_us: u64, iowaiters: u32) -> bool {
        let most_ns = predicted_us.saturating_mul(NSEC_PER_USEC);
        u128::from(most_ns) < u128::from(t.exit_ns[1]) * u128::from(Self::iowait_divisor(iowaiters))
    }

    /// The deepest state whose target residency fits `predicted_ns` and
    /// whose exit latency fits `latency_req`, as menu's loop walks them.
    fn deepest_fitting(&self, t: &StateTable, predicted_ns: Nanos, latency_req: Nanos) -> usize {
        let mut idx: Option<usize> = None;
        for i in 0..t.len() {
            let cur = *idx.get_or_insert(i);
            if t.residency_ns[i] > predicted_ns {
                // Use a physical state rather than polling when a timer
                // will end the stay anyway.
                if t.polling[cur]
                    && t.exit_ns[i] <= latency_req
                    && t.residency_ns[i] <= self.next_timer_ns
                {
                    idx = Some(i);
                }
                break;
            }
            if t.exit_ns[i] > latency_req {
                break;
            }
            idx = Some(i);
        }
        idx.unwrap_or(0)
    }

    fn reflect(&mut self, t: &StateTable, idx: usize, residency: Nanos, poll_limit_hit: bool) {
        // menu_update: a polling state that ran out its time says nothing
        // about when the wake-up would have come; the timer is assumed.
        let measured_ns = if poll_limit_hit {
            self.next_timer_ns
        } else {
            measured(t, idx, residency)
        };
        let mut factor = self.correction[self.bucket];
        factor -= factor / DECAY;
        if self.next_timer_ns > 0 && measured_ns < MAX_INTERESTING {
            // Below MAX_INTERESTING the product fits 64 bits.
            factor += RESOLUTION * measured_ns / self.next_timer_ns;
        } else {
            factor += RESOLUTION;
        }
        self.correction[self.bucket] = factor.max(1);
        self.intervals[self.interval_ptr] =
            (measured_ns / NSEC_PER_USEC).min(u64::from(u32::MAX)) as u32;
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }
}

const TEO_PULSE: u64 = 1024;
const TEO_DECAY_SHIFT: u32 = 3;

/// `drivers/cpuidle/governors/teo.c` (its Linux 6.x form): per state, how
/// often a wake-up came in that state's bin as the timer foretold ("hits")
/// and how often earlier ("intercepts"), both decaying.
#[derive(Clone, Debug)]
pub(crate) struct Teo {
    hits: Vec<u64>,
    intercepts: Vec<u64>,
    sleep_length: Nanos,
}

impl Teo {
    fn new(states: usize) -> Teo {
        Teo {
            hits: vec![0; states],
            intercepts: vec![0; states],
            sleep_length: 0,
        }
    }

    /// The deepest state whose target residency fits `ns`.
    fn bin(t: &StateTable, ns: Nanos) -> usize {
        (0..t.len())
            .rev()
            .find(|&i| t.residency_ns[i] <= ns)
            .unwrap_or(0)
    }

    fn select(&mut self, t: &StateTable, ctx: IdleContext) -> usize {
        self.sleep_length = ctx.sleep_length;
        let candidate = Self::bin(t, ctx.sleep_length);
        let total: u64 = self.hits.iter().chain(&self.intercepts).sum();
        let shallower_intercepts: u64 = self.intercepts[..candidate].iter().sum();
        // Most recent wake-ups came before the timer's bin: pick the
        // deepest shallower state that at least half of those early
        // wake-ups would still have fit.
        if candidate > 0 && 2 * shallower_intercepts > total {
            let mut sum = 0;
            for i in (0..candidate).rev() {
                sum += self.intercepts[i];
                if 2 * sum > shallower_intercepts {
                    return i;
                }
            }
            return 0;
        }
        candidate
    }

    fn reflect(&mut self, t: &StateTable, idx: usize, residency: Nanos, poll_limit_hit: bool) {
        let measured_ns = if poll_limit_hit {
            self.sleep_length
        } else {
            measured(t, idx, residency)
        };
        for v in self.hits.iter_mut().chain(self.intercepts.iter_mut()) {
            *v -= *v >> TEO_DECAY_SHIFT;
        }
        let timer_bin = Self::bin(t, self.sleep_length);
        let duration_bin = Self::bin(t, measured_ns);
        if timer_bin == duration_bin {
            self.hits[timer_bin] += TEO_PULSE;
        } else {
            self.intercepts[duration_bin] += TEO_PULSE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skylake() -> StateTable {
        let p = cint_scenario::HostProfile::builtin("xeon-e3-1230v5")
            .unwrap()
            .power
            .unwrap();
        StateTable::new(&p)
    }

    const TICK: Nanos = 4_000_000;

    fn ctx(sleep_length: Nanos, nr_iowait: u32) -> IdleContext {
        IdleContext {
            sleep_length,
            nr_iowait,
        }
    }

    /// Trains a governor on idle periods of `period` ns woken by I/O (no
    /// timer) and returns the state it then picks.
    fn after_periods(kind: Governor, period: Nanos, nr_iowait: u32) -> usize {
        let t = skylake();
        let mut g = GovernorState::new(kind, t.exit_ns.len());
        for _ in 0..32 {
            let i = g.select(&t, ctx(TICK, nr_iowait));
            g.reflect(&t, i, period + t.exit_ns[i], false);
        }
        g.select(&t, ctx(TICK, nr_iowait))
    }

    #[test]
    fn menu_keeps_an_iowaiting_core_shallow_and_the_new_menu_does_not() {
        // 10 us idle periods, one task waiting for I/O: 5.15's limit is
        // 10 / 11 us, below C1's 2 us exit, so POLL.
        assert_eq!(after_periods(Governor::Menu, 10_000, 1), 0);
        // Without the iowait rule the 10 us prediction allows C1 (2/2):
        // C1E's 20 us residency does not fit.
        assert_eq!(after_periods(Governor::MenuNoIowait, 10_000, 1), 1);
        // Without iowait tasks 5.15's menu also picks C1.
        assert_eq!(after_periods(Governor::Menu, 10_000, 0), 1);
    }

    #[test]
    fn long_steady_idle_periods_go_deep() {
        for kind in [Governor::Menu, Governor::MenuNoIowait, Governor::Teo] {
            // 1 ms periods, no I/O waiters: C6 or deeper fits (C7s and C8
            // need 800 us, C8's 200 us exit is within 1 ms).
            let i = after_periods(kind, 1_000_000, 0);
            assert!(i >= 4, "{kind:?} picked state {i}");
        }
    }

    #[test]
    fn teo_follows_early_wakeups_down() {
        // The timer says 4 ms, every wake-up comes after 30 us: C1E's bin
        // (20 us .. 100 us) collects the intercepts.
        assert_eq!(after_periods(Governor::Teo, 30_000, 0), 2);
        // Before it has seen any wake-up, teo trusts the timer.
        let t = skylake();
        let mut g = GovernorState::new(Governor::Teo, t.exit_ns.len());
        assert_eq!(g.select(&t, ctx(TICK, 0)), t.exit_ns.len() - 1);
    }

    #[test]
    fn a_near_timer_bounds_every_governor() {
        let t = skylake();
        for kind in [Governor::Menu, Governor::MenuNoIowait, Governor::Teo] {
            let mut g = GovernorState::new(kind, t.exit_ns.len());
            // A timer in 1 us: nothing but POLL fits (C1 needs 2 us).
            // The new menu predicts from intervals alone (none yet, so
            // zero) and so picks POLL as well.
            assert_eq!(g.select(&t, ctx(1_000, 0)), 0, "{kind:?}");
        }
    }

    /// Random menu histories: intervals from microseconds to hours,
    /// correction factors from tiny to large, timers and I/O waiters.
    fn random_menus(n: usize) -> impl Iterator<Item = (Menu, IdleContext)> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        (0..n).map(move |_| {
            let mut m = Menu::new(true);
            let scale: u32 = [20, 1_000, 100_000, u32::MAX][rng.gen_range(0..4)];
            for v in &mut m.intervals {
                *v = rng.gen_range(0..=scale);
            }
            for f in &mut m.correction {
                *f = rng.gen_range(1..=RESOLUTION * DECAY * 2);
            }
            m.bucket = rng.gen_range(0..BUCKETS);
            let sleep = [1_000, 30_000, TICK, 3_600_000_000_000][rng.gen_range(0..4)];
            (m, ctx(rng.gen_range(1..=sleep), rng.gen_range(0..4)))
        })
    }

    #[test]
    fn the_timer_shortcut_picks_what_the_intervals_would_have() {
        let t = skylake();
        let (mut taken, mut not_taken) = (0, 0);
        for (mut m, c) in random_menus(20_000) {
            let picked = m.select(&t, c);
            // The same choice with the intervals always computed.
            let iowaiters = c.nr_iowait;
            let full = if c.sleep_length < t.residency_ns[1] {
                0
            } else {
                let timer_us = m.corrected(c.sleep_length);
                if Menu::only_the_shallowest_fits(&t, timer_us, iowaiters) {
                    taken += 1;
                } else {
                    not_taken += 1;
                }
                let predicted = timer_us.min(m.typical_interval(timer_us)) * NSEC_PER_USEC;
                m.deepest_fitting(&t, predicted, Menu::latency_req(predicted, iowaiters))
            };
            assert_eq!(picked, full, "{m:?} {c:?}");
        }
        assert!(taken > 1_000 && not_taken > 1_000, "{taken} {not_taken}");
    }

    #[test]
    fn the_variance_is_exact_in_64_and_128_bits() {
        // Deviations of half the range: eight squares overflow 64 bits.
        let mut extreme = Menu::new(true);
        extreme.intervals = [0, 0, 0, 0, u32::MAX, u32::MAX, u32::MAX, u32::MAX];
        let extreme = (extreme, ctx(TICK, 0));
        for (m, _) in random_menus(20_000).chain([extreme]) {
            let thresh = m.intervals[0].max(m.intervals[4]);
            let kept: Vec<u64> = m
                .intervals
                .iter()
                .filter(|&&v| v <= thresh)
                .map(|&v| u64::from(v))
                .collect();
            let n = kept.len() as u64;
            let avg = kept.iter().sum::<u64>() / n;
            let max = *kept.iter().max().unwrap() as u32;
            let squares: u128 = kept
                .iter()
                .map(|&v| u128::from(v.abs_diff(avg)).pow(2))
                .sum();
            assert_eq!(m.variance(avg, thresh, max, n), squares / u128::from(n));
        }
    }

    #[test]
    fn poll_limit_is_the_first_long_enough_state_residency() {
        // C1's 2 us is below CPUIDLE_POLL_MIN; C1E's 20 us is the limit.
        assert_eq!(skylake().poll_limit(TICK), 20_000);
    }
}
