//! The decision path allocates nothing: a counting global allocator sees
//! zero allocations while every policy, built through `PolicyConfig` and
//! driven through `AnyPolicy`, handles many submissions, completions,
//! timers, opportunities and guest schedule changes, while every
//! hybrid-polling sleep estimator records run times and answers sleeps,
//! and while the completion-mode selector records and chooses.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use cint_policy::config::{
    AdaptiveParams, BarrierMode, CinterruptsParams, NvmeParams, StormGuardMode, VicParams,
    VicSchedParams,
};
use cint_policy::hybrid_poll::{Direction, SleepEstimator};
use cint_policy::{AnyPolicy, GuestSchedule, Hint, Nanos, Policy, PolicyConfig, Seq, US};

/// Counts allocations made by the current thread while armed; the test
/// harness's other threads (output capture, other tests) are not counted.
struct CountingAllocator;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with` because the allocator also runs while thread-locals are
    // being torn down.
    let _ = ARMED.try_with(|armed| {
        if armed.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call forwards to `System` unchanged; the counting touches
// only const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Allocations the current thread makes while running `f`.
fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    ARMED.with(|a| a.set(true));
    f();
    ARMED.with(|a| a.set(false));
    ALLOCATIONS.with(Cell::get) - before
}

/// Commands kept in flight; the ring below stores their sequence numbers
/// on the stack so the driver itself allocates nothing.
const DEPTH: usize = 64;

/// Drives `policy` through `rounds` submissions and as many completions,
/// out of order, with every hint, time gaps around the policies' deadlines,
/// timers when due and an opportunity every few completions. Returns the
/// number of interrupts, so the work cannot be optimised away.
fn drive(policy: &mut AnyPolicy, rounds: u64) -> u64 {
    let hints = [Hint::Unmarked, Hint::Urgent, Hint::Barrier, Hint::Unmarked];
    let mut ring: [(Seq, Hint); DEPTH] = [(0, Hint::Unmarked); DEPTH];
    let mut now: Nanos = 0;
    let mut irqs = 0;
    for (slot, entry) in ring.iter_mut().enumerate() {
        let hint = hints[slot % hints.len()];
        *entry = (policy.on_submit(now, hint), hint);
    }
    for i in 0..rounds {
        // A cheap scramble picks which in-flight command completes next.
        let slot = (i.wrapping_mul(2_654_435_761) >> 7) as usize % DEPTH;
        now += (i % 7) * US / 2 + if i % 97 == 0 { 300 * US } else { 0 };
        // Served late, at `now`, which the contract allows.
        while policy.next_deadline().is_some_and(|d| d <= now) {
            irqs += u64::from(policy.on_timer(now).irq().is_some());
        }
        let (seq, hint) = ring[slot];
        irqs += u64::from(policy.on_complete(now, seq, hint).irq().is_some());
        if i % 5 == 0 {
            irqs += u64::from(policy.on_opportunity(now).irq().is_some());
        }
        if i % 11 == 0 {
            // The guest's slice: running with 0..=60 us left, sometimes
            // descheduled; scheduler-aware vIC bypasses near the end.
            let schedule = GuestSchedule {
                running: i % 3 != 0,
                slice_end: Some(now + (i % 13) * 5 * US),
            };
            policy.on_schedule(now, schedule);
        }
        let hint = hints[(i as usize / 3) % hints.len()];
        ring[slot] = (policy.on_submit(now, hint), hint);
    }
    irqs
}

fn configs() -> Vec<PolicyConfig> {
    let adaptive = AdaptiveParams {
        delta: 6 * US,
        thr: 32,
    };
    let mut configs = vec![
        PolicyConfig::None,
        PolicyConfig::Nvme(NvmeParams {
            thr: 32,
            time: 100 * US,
            coalescing_disabled: false,
        }),
        PolicyConfig::Nvme(NvmeParams {
            thr: 32,
            time: 100 * US,
            coalescing_disabled: true,
        }),
        PolicyConfig::Adaptive(adaptive),
    ];
    for ooo in [false, true] {
        for barrier in [BarrierMode::Relaxed, BarrierMode::Strict] {
            for (max_irq_rate, guard) in [
                (None, StormGuardMode::Rate),
                (Some(50_000), StormGuardMode::Rate),
                (Some(50_000), StormGuardMode::Artifact),
            ] {
                configs.push(PolicyConfig::Cinterrupts(CinterruptsParams {
                    adaptive,
                    ooo,
                    barrier,
                    max_irq_rate,
                    guard,
                }));
            }
        }
    }
    // CIF threshold 1 and no IOPS floor so that vIC holds completions and
    // the opportunities and the bypass have something to deliver.
    let vic = VicParams {
        cif_threshold: 1,
        iops_threshold: 0,
        epoch: 50 * US,
        ..VicParams::default()
    };
    for quirk_failsafe in [None, Some(4)] {
        for quirk_reset_on_skip in [false, true] {
            let vic = VicParams {
                quirk_failsafe,
                quirk_reset_on_skip,
                ..vic
            };
            configs.push(PolicyConfig::Vic(vic));
            configs.push(PolicyConfig::VicSched(VicSchedParams {
                vic,
                clock_margin: 2 * US,
            }));
        }
    }
    configs
}

#[test]
fn no_policy_allocates_on_the_decision_path() {
    for config in configs() {
        let mut policy = config.build(0).expect("valid parameters");
        let mut irqs = 0;
        let allocations = allocations_during(|| irqs = drive(&mut policy, 100_000));
        assert_eq!(allocations, 0, "{config:?} allocated");
        assert!(irqs > 0, "{config:?} never fired: the driver is broken");
        assert_eq!(policy.in_flight() as usize, DEPTH);
    }
}

#[test]
fn vic_sched_took_the_bypass_and_vic_held_on_the_path_measured() {
    // Guards the test above: the drive must reach vIC's holding branch
    // and the scheduler-aware bypass, or their absence of allocations
    // proves nothing.
    let vic = configs()
        .into_iter()
        .find_map(|c| match c {
            PolicyConfig::VicSched(p) => Some(p),
            _ => None,
        })
        .expect("a vic-sched config");
    let mut policy = PolicyConfig::VicSched(vic).build(0).expect("valid");
    let irqs = drive(&mut policy, 100_000);
    let AnyPolicy::VicSched(p) = &policy else {
        panic!("built another policy");
    };
    assert!(p.bypasses() > 0, "the slice-end bypass never ran");
    assert!(irqs < 100_000, "vIC delivered every completion: never held");
}

/// Drives an estimator through `rounds` requests of every size class in
/// both directions over several statistics windows; returns the sum of the
/// sleeps it asked for.
fn drive_estimator(estimator: &mut SleepEstimator, rounds: u64) -> Nanos {
    let mut now: Nanos = 0;
    let mut slept: Nanos = 0;
    for i in 0..rounds {
        let bytes = 512u64 << (i % 9);
        let dir = if i % 3 == 0 {
            Direction::Write
        } else {
            Direction::Read
        };
        slept = slept.wrapping_add(estimator.sleep_for(now, bytes, dir));
        let run_time = 5 * US + (i % 17) * US;
        now += run_time + (i % 5) * 100 * US;
        estimator.record(now, bytes, dir, run_time);
    }
    slept
}

#[test]
fn no_sleep_estimator_allocates() {
    for mut estimator in [
        SleepEstimator::Fixed(3 * US),
        SleepEstimator::block_adaptive(),
        SleepEstimator::uring_hybrid(),
    ] {
        let mut slept = 0;
        let allocations = allocations_during(|| slept = drive_estimator(&mut estimator, 100_000));
        assert_eq!(allocations, 0, "{estimator:?} allocated");
        assert!(slept > 0, "{estimator:?} never asked to sleep");
    }
}

#[test]
fn the_mode_selector_allocates_nothing() {
    use cint_policy::mode_select::{
        CompletionChoice, IdleStateCost, ModeSelect, ModeSelectParams, Situation,
    };
    let mut idle = [IdleStateCost::default(); cint_policy::mode_select::MAX_IDLE_STATES];
    idle[0].power_mw = 6_500;
    idle[1] = IdleStateCost {
        exit_latency: 2 * US,
        target_residency: 2 * US,
        power_mw: 2_000,
    };
    idle[2] = IdleStateCost {
        exit_latency: 85 * US,
        target_residency: 200 * US,
        power_mw: 100,
    };
    let params = ModeSelectParams {
        static_mw: 43_000,
        spin_mw: 6_500,
        busy_mw: 8_500,
        idle_states: idle,
        idle_count: 3,
        iowait_factor: 10,
        sleep_path: 1_560,
        timer_arm: 200,
        timer_slack: 2 * US,
    };
    let mut select = ModeSelect::new(params).expect("valid");
    let mut kinds = [0u64; 3];
    let allocations = allocations_during(|| {
        for i in 0..100_000u64 {
            let bytes = 512u64 << (i % 9);
            let dir = if i % 3 == 0 {
                Direction::Write
            } else {
                Direction::Read
            };
            let situation = Situation {
                in_flight: 1 + (i % 7) as u32,
                core_contended: i % 11 == 0,
                can_interrupt: i % 13 != 0,
            };
            let k = match select.choose(bytes, dir, situation) {
                CompletionChoice::Poll => 0,
                CompletionChoice::Sleep(_) => 1,
                CompletionChoice::Interrupt => 2,
            };
            kinds[k] += 1;
            select.record(bytes, dir, (bytes >> 9) * 4 * US + (i % 17) * US);
        }
    });
    assert_eq!(allocations, 0, "the selector allocated");
    assert!(
        kinds.iter().all(|&n| n > 0),
        "some mode never chosen: {kinds:?}"
    );
}

#[test]
fn the_counter_sees_allocations() {
    let allocations = allocations_during(|| {
        let v: Vec<u64> = std::hint::black_box((0..100).collect());
        assert_eq!(v.len(), 100);
    });
    assert!(allocations >= 1);
}
