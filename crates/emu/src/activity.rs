//! When the application threads were active, not only for how long: the
//! input the power model needs to combine SMT siblings (docs/ENERGY.md,
//! "cint emu"). A physical core is in the state of its more active
//! hardware thread, so its busy time is the measure of the union of its
//! threads' busy periods, which per-CPU totals cannot give.
//!
//! Each job thread on a CPU whose physical core has another application
//! CPU, and its queue's interrupt handler thread, reports its own state
//! changes (running, spinning in a completion
//! poll loop, blocked or asleep) to an [`ActivityClock`] of its CPU and
//! one of its physical core. A clock is one packed word (how many of its
//! threads run, how many spin, and the time of the last change), updated
//! by compare-and-swap at each change, which adds the time since the last
//! change to the state the group was in: busy while any thread runs, else
//! spin while any spins, else idle. The merge is exact and online: memory
//! does not grow with the requests run.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cint_policy::Nanos;
use cint_scenario::Scenario;

/// What a thread is doing, as the power model ranks it: a running thread
/// makes its core busy whatever its siblings do (busy power is above
/// spin power), a spinning one makes it spin unless another runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadState {
    /// Running (submitting, reaping, handling an interrupt it claimed).
    Busy,
    /// Spinning in a completion poll loop.
    Spin,
    /// Blocked on a delivery, or asleep (a hybrid poller's sleep, pacing).
    Idle,
}

/// Time a group of threads spent in each state, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StateTimes {
    /// Some thread running.
    pub busy_ns: u64,
    /// No thread running, some spinning.
    pub spin_ns: u64,
    /// Every thread blocked or asleep.
    pub idle_ns: u64,
}

impl StateTimes {
    /// Busy or spinning.
    pub fn active_ns(&self) -> u64 {
        self.busy_ns + self.spin_ns
    }

    /// What was added between `earlier` and `self`.
    pub fn since(&self, earlier: &StateTimes) -> StateTimes {
        StateTimes {
            busy_ns: self.busy_ns.saturating_sub(earlier.busy_ns),
            spin_ns: self.spin_ns.saturating_sub(earlier.spin_ns),
            idle_ns: self.idle_ns.saturating_sub(earlier.idle_ns),
        }
    }
}

/// Bits of each thread count in the packed word.
const COUNT_BITS: u32 = 10;
/// Bits of the time of the last change (ns after the clock's origin):
/// 2^44 ns is about 4.9 hours.
const TIME_BITS: u32 = 64 - 2 * COUNT_BITS;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;

/// The most threads one clock may count, and the longest it may run
/// (warm-up and window), for the packed word to hold them.
pub(crate) const MAX_THREADS: usize = COUNT_MASK as usize;
/// See [`MAX_THREADS`].
pub(crate) const MAX_SPAN_NS: Nanos = TIME_MASK;

/// One group's (a CPU's, or a physical core's) merged thread states.
#[derive(Debug)]
pub(crate) struct ActivityClock {
    origin: Nanos,
    /// Running threads, spinning threads, time of the last change.
    word: AtomicU64,
    /// Indexed like `ThreadState as usize`.
    totals: [AtomicU64; 3],
}

fn pack(busy: u64, spin: u64, at: u64) -> u64 {
    (busy << (COUNT_BITS + TIME_BITS)) | (spin << TIME_BITS) | (at & TIME_MASK)
}

fn unpack(word: u64) -> (u64, u64, u64) {
    (
        word >> (COUNT_BITS + TIME_BITS),
        (word >> TIME_BITS) & COUNT_MASK,
        word & TIME_MASK,
    )
}

impl ActivityClock {
    /// A clock whose threads are all idle from `origin`.
    pub fn new(origin: Nanos) -> ActivityClock {
        ActivityClock {
            origin,
            word: AtomicU64::new(pack(0, 0, 0)),
            totals: Default::default(),
        }
    }

    /// One thread goes from `from` to `to`, at the time `clock` reads, or
    /// at the clock's last change if another thread's came later (read
    /// inside the compare-and-swap loop, so that no change is dated
    /// before the one it follows). A thread passes the same instant to
    /// its CPU's clock and its core's. `from == to` only brings the
    /// totals up to date.
    pub fn change(&self, from: ThreadState, to: ThreadState, clock: impl Fn() -> Nanos) {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let (busy, spin, last) = unpack(word);
            let at = clock().saturating_sub(self.origin).clamp(last, TIME_MASK);
            let count = |state: ThreadState, n: u64| {
                n + u64::from(to == state) - u64::from(from == state && n > 0)
            };
            let next = pack(
                count(ThreadState::Busy, busy),
                count(ThreadState::Spin, spin),
                at,
            );
            match self
                .word
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    let was = if busy > 0 {
                        ThreadState::Busy
                    } else if spin > 0 {
                        ThreadState::Spin
                    } else {
                        ThreadState::Idle
                    };
                    self.totals[was as usize].fetch_add(at - last, Ordering::AcqRel);
                    return;
                }
                Err(now) => word = now,
            }
        }
    }

    /// The totals up to the time `clock` reads (what changed at that
    /// instant on other threads may be in or out).
    pub fn read(&self, clock: impl Fn() -> Nanos) -> StateTimes {
        self.change(ThreadState::Idle, ThreadState::Idle, clock);
        let total = |s: ThreadState| self.totals[s as usize].load(Ordering::Acquire);
        StateTimes {
            busy_ns: total(ThreadState::Busy),
            spin_ns: total(ThreadState::Spin),
            idle_ns: total(ThreadState::Idle),
        }
    }
}

/// A job thread's clocks (its CPU's and its physical core's) and state.
struct Tracker {
    clocks: [Arc<ActivityClock>; 2],
    state: ThreadState,
}

thread_local! {
    static TRACKER: RefCell<Option<Tracker>> = const { RefCell::new(None) };
}

/// A thread's two clocks: its CPU's and its physical core's.
pub(crate) type ClockPair = (Arc<ActivityClock>, Arc<ActivityClock>);

/// Whether the calling thread reports to clocks.
pub(crate) fn attached() -> bool {
    TRACKER.with(|t| t.borrow().is_some())
}

/// The calling thread starts reporting to `cpu` and `core`, running.
pub(crate) fn attach((cpu, core): ClockPair) {
    let now = crate::sys::now();
    for clock in [&cpu, &core] {
        clock.change(ThreadState::Idle, ThreadState::Busy, || now);
    }
    TRACKER.with(|t| {
        *t.borrow_mut() = Some(Tracker {
            clocks: [cpu, core],
            state: ThreadState::Busy,
        });
    });
}

/// The calling thread is now `state` (nothing when it reports to no
/// clock: a thread whose core has no application sibling).
#[inline]
pub(crate) fn enter(state: ThreadState) {
    TRACKER.with(|t| {
        if let Some(tracker) = t.borrow_mut().as_mut() {
            if tracker.state != state {
                // One instant for both clocks: read twice, the core would
                // date the change later than the CPU does, and its union
                // could exceed the sum of its CPUs' times.
                let now = crate::sys::now();
                for clock in &tracker.clocks {
                    clock.change(tracker.state, state, || now);
                }
                tracker.state = state;
            }
        }
    });
}

/// The calling thread stops reporting: idle from now on.
pub(crate) fn detach() {
    enter(ThreadState::Idle);
    TRACKER.with(|t| t.borrow_mut().take());
}

/// One physical core of the application CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CoreGroup {
    /// The physical core (on a host without SMT: the CPU).
    pub core: u32,
    /// Its application CPUs (the scenario's numbers) and their queue
    /// indices.
    pub cpus: Vec<(u32, usize)>,
    /// Whether its threads report to clocks: two or more CPUs, and
    /// threads and a run short enough for the packed word.
    pub tracked: bool,
}

/// The physical cores of the application CPUs `app` (scenario CPU, real
/// CPU; in queue order), by the host's SMT numbering: CPUs `n` and
/// `n + physical` are siblings. Without SMT every CPU is its own core.
pub(crate) fn core_groups(scenario: &Scenario, app: &[(u32, u32)]) -> Vec<CoreGroup> {
    let threads_on = |cpu: u32| -> usize {
        scenario
            .jobs
            .iter()
            .map(|j| (0..j.numjobs).filter(|&n| j.thread_cpu(n) == cpu).count())
            .sum()
    };
    let short = scenario.warmup.saturating_add(scenario.duration) < MAX_SPAN_NS / 2;
    let mut groups: Vec<CoreGroup> = Vec::new();
    for (queue, &(cpu, _)) in app.iter().enumerate() {
        let core = scenario.host.physical_core_of(cpu);
        match groups.iter_mut().find(|g| g.core == core) {
            Some(g) => g.cpus.push((cpu, queue)),
            None => groups.push(CoreGroup {
                core,
                cpus: vec![(cpu, queue)],
                tracked: false,
            }),
        }
    }
    for g in &mut groups {
        // Each CPU's job threads and its queue's interrupt handler.
        let threads: usize = g.cpus.iter().map(|&(cpu, _)| threads_on(cpu) + 1).sum();
        g.tracked = g.cpus.len() > 1 && short && threads <= MAX_THREADS;
    }
    groups
}

/// A tracked core's clock and its CPUs'.
type GroupClocks = (Arc<ActivityClock>, Vec<Arc<ActivityClock>>);

/// One strategy's clocks: per tracked physical core, its own and its
/// CPUs'.
pub(crate) struct CoreClocks {
    /// Parallel to the groups: the core's clock and its CPUs' (in the
    /// group's order), for a tracked group.
    clocks: Vec<Option<GroupClocks>>,
    groups: Vec<CoreGroup>,
}

/// A tracked core's merged states and each of its CPUs'.
pub(crate) type CoreReading = Option<(StateTimes, Vec<StateTimes>)>;

impl CoreClocks {
    /// Fresh clocks, all idle from now, for the tracked groups.
    pub fn new(groups: Vec<CoreGroup>) -> CoreClocks {
        let origin = crate::sys::now();
        let clock = || Arc::new(ActivityClock::new(origin));
        CoreClocks {
            clocks: groups
                .iter()
                .map(|g| {
                    g.tracked
                        .then(|| (clock(), g.cpus.iter().map(|_| clock()).collect()))
                })
                .collect(),
            groups,
        }
    }

    /// The groups the clocks are for.
    pub fn groups(&self) -> &[CoreGroup] {
        &self.groups
    }

    /// The clocks a thread on queue `queue` reports to (its CPU's, its
    /// core's), if its core is tracked.
    pub fn for_queue(&self, queue: usize) -> Option<ClockPair> {
        self.groups
            .iter()
            .zip(&self.clocks)
            .find_map(|(g, clocks)| {
                let (core, cpus) = clocks.as_ref()?;
                let k = g.cpus.iter().position(|&(_, q)| q == queue)?;
                Some((Arc::clone(&cpus[k]), Arc::clone(core)))
            })
    }

    /// Every clock's totals now, per group.
    pub fn read(&self) -> Vec<CoreReading> {
        self.clocks
            .iter()
            .map(|c| {
                c.as_ref().map(|(core, cpus)| {
                    (
                        core.read(crate::sys::now),
                        cpus.iter().map(|c| c.read(crate::sys::now)).collect(),
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::cell::Cell;

    /// Measure of the union of half-open intervals.
    fn union(mut spans: Vec<(u64, u64)>) -> u64 {
        spans.sort_unstable();
        let (mut total, mut end) = (0, 0);
        for (a, b) in spans {
            let a = a.max(end);
            if b > a {
                total += b - a;
                end = b;
            }
        }
        total
    }

    /// Two threads' random state changes, applied in time order to one
    /// clock: its busy time is the union of their busy periods, its busy
    /// and spin together the union of their active ones, its idle time
    /// the intersection of their idle ones, and the three fill the window.
    #[test]
    fn the_merge_is_the_union_of_busy_and_the_intersection_of_idle() {
        let states = [ThreadState::Busy, ThreadState::Spin, ThreadState::Idle];
        for seed in 0..200 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let end: u64 = rng.gen_range(1..100_000);
            // Each thread: its state from time 0 (idle before its first
            // change, as an attached thread starts from idle), then
            // changes at sorted random times.
            let mut changes: Vec<(u64, usize, ThreadState)> = Vec::new();
            let mut spans: [Vec<(u64, u64, ThreadState)>; 2] = Default::default();
            for (thread, spans) in spans.iter_mut().enumerate() {
                let mut times: Vec<u64> = (0..rng.gen_range(0..40))
                    .map(|_| rng.gen_range(0..end))
                    .collect();
                times.sort_unstable();
                let (mut at, mut state) = (0, ThreadState::Idle);
                for t in times {
                    let next = states[rng.gen_range(0..3)];
                    spans.push((at, t, state));
                    changes.push((t, thread, next));
                    (at, state) = (t, next);
                }
                spans.push((at, end, state));
            }
            changes.sort_by_key(|c| c.0);
            let now = Cell::new(0);
            let clock = ActivityClock::new(0);
            let mut current = [ThreadState::Idle; 2];
            for (t, thread, next) in changes {
                now.set(t);
                clock.change(current[thread], next, || now.get());
                current[thread] = next;
            }
            now.set(end);
            let got = clock.read(|| now.get());
            let of = |pick: &dyn Fn(ThreadState) -> bool| -> Vec<(u64, u64)> {
                spans
                    .iter()
                    .flatten()
                    .filter(|s| pick(s.2))
                    .map(|s| (s.0, s.1))
                    .collect()
            };
            let busy = union(of(&|s| s == ThreadState::Busy));
            let active = union(of(&|s| s != ThreadState::Idle));
            // Idle together: the window less the union of the rest.
            let idle_both = end - active;
            assert_eq!(got.busy_ns, busy, "seed {seed}: {got:?}");
            assert_eq!(got.active_ns(), active, "seed {seed}: {got:?}");
            assert_eq!(got.idle_ns, idle_both, "seed {seed}: {got:?}");
            assert_eq!(got.busy_ns + got.spin_ns + got.idle_ns, end, "seed {seed}");
        }
    }

    /// Real threads, real clock: whatever the interleaving, the core's
    /// active time lies between the larger thread's and their sum, and
    /// the states fill the time read.
    #[test]
    fn concurrent_threads_merge_within_their_bounds() {
        let origin = crate::sys::now();
        let core = Arc::new(ActivityClock::new(origin));
        let cpus = [
            Arc::new(ActivityClock::new(origin)),
            Arc::new(ActivityClock::new(origin)),
        ];
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(n, cpu)| {
                let (cpu, core) = (Arc::clone(cpu), Arc::clone(&core));
                std::thread::spawn(move || {
                    attach((cpu, core));
                    let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
                    for _ in 0..2_000 {
                        let state = [ThreadState::Busy, ThreadState::Spin, ThreadState::Idle]
                            [rng.gen_range(0..3)];
                        enter(state);
                        crate::sys::spin_until(crate::sys::now() + rng.gen_range(0..2_000));
                    }
                    detach();
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        let end = crate::sys::now();
        let at_end = || end;
        let core = core.read(at_end);
        let cpus: Vec<StateTimes> = cpus.iter().map(|c| c.read(at_end)).collect();
        let span = end - origin;
        for t in cpus.iter().chain([&core]) {
            assert_eq!(t.busy_ns + t.spin_ns + t.idle_ns, span, "{t:?}");
        }
        let most = cpus.iter().map(StateTimes::active_ns).max().unwrap_or(0);
        let sum: u64 = cpus.iter().map(StateTimes::active_ns).sum();
        assert!(
            most <= core.active_ns() && core.active_ns() <= sum,
            "{most} {core:?} {sum}"
        );
        assert!(core.busy_ns >= cpus.iter().map(|c| c.busy_ns).max().unwrap_or(0));
    }
}
