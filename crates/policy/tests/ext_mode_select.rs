//! The completion-mode selector (docs/ALGORITHMS.md section 10): its
//! choice is the cheapest of its own estimates, and it moves the way the
//! mechanisms say when one machine term moves.

use cint_policy::hybrid_poll::Direction;
use cint_policy::mode_select::{
    CompletionChoice, IdleStateCost, ModeSelect, ModeSelectParams, Situation, MAX_IDLE_STATES,
};
use cint_policy::{Nanos, US};
use proptest::prelude::*;

fn state(exit: Nanos, residency: Nanos, power_mw: u32) -> IdleStateCost {
    IdleStateCost {
        exit_latency: exit,
        target_residency: residency,
        power_mw,
    }
}

/// The energy study's Skylake host (docs/ENERGY.md), in milliwatts.
fn skylake(iowait_factor: u32, spin_mw: u32) -> ModeSelectParams {
    let mut idle = [IdleStateCost::default(); MAX_IDLE_STATES];
    idle[0] = state(0, 0, spin_mw);
    idle[1] = state(2 * US, 2 * US, 2_000);
    idle[2] = state(10 * US, 20 * US, 1_000);
    idle[3] = state(70 * US, 100 * US, 500);
    idle[4] = state(85 * US, 200 * US, 100);
    ModeSelectParams {
        static_mw: 41_000,
        spin_mw,
        busy_mw: 8_500,
        idle_states: idle,
        idle_count: 5,
        iowait_factor,
        sleep_path: 3 * US,
        timer_arm: 300,
        timer_slack: 2 * US,
    }
}

fn situation(in_flight: u32) -> Situation {
    Situation {
        in_flight,
        core_contended: false,
        can_interrupt: true,
    }
}

#[test]
fn short_requests_spin_long_ones_sleep_until_the_interrupt() {
    let mut s = ModeSelect::new(skylake(0, 6_500)).unwrap();
    s.record(4096, Direction::Read, 8 * US);
    s.record(65536, Direction::Read, 3_000 * US);
    assert_eq!(
        s.choose(4096, Direction::Read, situation(1)),
        CompletionChoice::Poll
    );
    assert_eq!(
        s.choose(65536, Direction::Read, situation(1)),
        CompletionChoice::Interrupt
    );
    // Writes are their own class: nothing measured, spin.
    assert_eq!(
        s.choose(65536, Direction::Write, situation(1)),
        CompletionChoice::Poll
    );
}

#[test]
fn under_the_iowait_rule_a_short_wait_keeps_the_core_in_poll() {
    // Linux 5.15's menu limits the exit latency to 8 us / 11 for a core
    // whose task waits for I/O: below C1's 2 us, so the core spins in
    // POLL while the thread sleeps, and the interrupt only adds its
    // switches and handler: never cheaper than spinning.
    let mut s = ModeSelect::new(skylake(10, 6_500)).unwrap();
    s.record(4096, Direction::Read, 8 * US);
    for in_flight in [1, 4, 64] {
        let e = s
            .estimates(4096, Direction::Read, situation(in_flight))
            .expect("a sample");
        let (poll, interrupt) = (e[0].unwrap(), e[3].unwrap());
        assert_eq!(interrupt.latency, 8 * US + 3 * US, "no exit latency");
        assert!(
            interrupt.energy_pj > poll.energy_pj,
            "{interrupt:?} vs {poll:?}"
        );
        assert_eq!(
            s.choose(4096, Direction::Read, situation(in_flight)),
            CompletionChoice::Poll
        );
    }
}

proptest! {
    #[test]
    fn the_choice_is_the_cheapest_estimate(
        device_us in 1u64..5_000,
        min_share in 1u64..=100,
        in_flight in 1u32..128,
        iowait in prop::bool::ANY,
        spin_mw in 1_000u32..20_000,
        can_interrupt in prop::bool::ANY,
    ) {
        let mut s = ModeSelect::new(skylake(if iowait { 10 } else { 0 }, spin_mw)).unwrap();
        let device = device_us * US;
        // One sample at the minimum, the rest pull the mean up.
        s.record(8192, Direction::Read, device * min_share / 100);
        for _ in 0..32 {
            s.record(8192, Direction::Read, device);
        }
        let sit = Situation { in_flight, core_contended: false, can_interrupt };
        let choice = s.choose(8192, Direction::Read, sit);
        let estimates = s.estimates(8192, Direction::Read, sit).expect("sampled");
        let cheapest = estimates.iter().flatten().map(|e| e.energy_pj).min().unwrap();
        let chosen = estimates.iter().flatten().find(|e| e.choice == choice).expect("chosen is estimated");
        prop_assert_eq!(chosen.energy_pj, cheapest);
        if !can_interrupt {
            prop_assert_ne!(choice, CompletionChoice::Interrupt);
        }
        // Polling is never slower than sleeping: the wake-up only adds.
        for e in estimates.iter().flatten() {
            prop_assert!(e.latency >= estimates[0].unwrap().latency);
        }
    }

    #[test]
    fn a_dearer_spin_never_turns_a_sleep_into_a_spin(
        device_us in 1u64..5_000,
        in_flight in 1u32..128,
        spin_mw in 1_000u32..10_000,
        extra in 1u32..10_000,
    ) {
        let sit = situation(in_flight);
        let choose = |spin| {
            let mut s = ModeSelect::new(skylake(0, spin)).unwrap();
            s.record(4096, Direction::Read, device_us * US);
            s.choose(4096, Direction::Read, sit)
        };
        if choose(spin_mw) != CompletionChoice::Poll {
            prop_assert_ne!(choose(spin_mw + extra), CompletionChoice::Poll);
        }
    }

    #[test]
    fn any_machine_and_any_time_give_an_answer(
        static_mw in 0u32..=10_000_000,
        busy_mw in 0u32..=10_000_000,
        run_time in any::<u64>(),
        bytes in any::<u64>(),
        in_flight in any::<u32>(),
    ) {
        let mut p = skylake(10, 6_500);
        p.static_mw = static_mw;
        p.busy_mw = busy_mw;
        let mut s = ModeSelect::new(p).unwrap();
        s.record(bytes, Direction::Write, run_time);
        let _ = s.choose(bytes, Direction::Write, situation(in_flight));
        prop_assert!(s.mean(bytes, Direction::Write).is_some());
    }
}
