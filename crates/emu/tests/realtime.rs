//! `[emu] realtime`: without `SCHED_FIFO` for its interrupt handlers the
//! emulator refuses to run unless told it may.
//!
//! The refusal is the kernel's, not a simulated one: a thread that drops
//! `CAP_SYS_NICE` from its own effective capabilities, in a process whose
//! `RLIMIT_RTPRIO` is 0, is refused `SCHED_FIFO`, and so are the threads it
//! creates (each inherits its creator's capabilities): the emulator's
//! handlers among them. Capabilities are per thread, so the rest of this
//! test binary keeps its own.

mod common;

use cint_emu::{
    BackendConfig, DeviceConfig, EmuError, Emulator, Op, QueueConfig, QueueMode, Realtime, Request,
    WaitMode,
};
use cint_policy::{Hint, PolicyConfig, MS};
use cint_scenario::Engine;
use cint_test_support::skip;
use common::*;

fn config(realtime: Realtime) -> DeviceConfig {
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    DeviceConfig {
        device_cpu: *cpus.last().expect("a cpu"),
        queues: vec![QueueConfig {
            app_cpu: cpus[0],
            mode: QueueMode::Interrupt(PolicyConfig::None),
        }],
        backend: BackendConfig::Synthetic {
            profile: device(10_000, 4),
            seed: 1,
        },
        realtime,
        idle_delivery: Default::default(),
    }
}

fn sync_scenario() -> cint_scenario::Scenario {
    scenario(
        "rt",
        device(10_000, 4),
        vec![none()],
        vec![io_job("sync", Engine::Psync, 1, 1, 1)],
        10 * MS,
    )
}

#[test]
fn require_refuses_to_start_with_a_one_line_error_and_leaves_no_thread() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let Some(result) = without_realtime(|| Emulator::start(config(Realtime::Require)).err()) else {
        return;
    };
    let err = result.expect("start refused without SCHED_FIFO");
    let msg = err.to_string();
    assert!(matches!(err, EmuError::NoRealtime(_)), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("SCHED_FIFO"), "{msg}");
    assert!(msg.contains("realtime = \"prefer\""), "{msg}");
    assert_eq!(emulator_threads_left(), 0, "a thread was left behind");
}

#[test]
fn prefer_runs_without_it_and_says_so() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let Some(stats) = without_realtime(|| {
        let emulator = Emulator::start(config(Realtime::Prefer)).expect("starts anyway");
        let mut client = emulator.client(0, 1).expect("client");
        let c = client
            .submit_and_wait(
                Request {
                    op: Op::Read,
                    offset: 0,
                    len: 4096,
                    hint: Hint::Urgent,
                    buf: None,
                    user_data: 7,
                },
                WaitMode::Block,
            )
            .expect("a request completes");
        assert_eq!((c.user_data, c.result), (7, Ok(4096)));
        drop(client);
        emulator.shutdown().expect("clean shutdown")
    }) else {
        return;
    };
    assert_eq!(stats.realtime_handlers, 0);
    assert_eq!(stats.total_completions(), 1);
}

#[test]
fn cint_emu_refuses_a_scenario_unless_it_says_realtime_prefer() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let Some((refused, preferred)) = without_realtime(|| {
        let refused = cint_emu::run(&sync_scenario()).err();
        let mut s = sync_scenario();
        s.emu.realtime = Realtime::Prefer;
        (refused, cint_emu::run_detailed(&s))
    }) else {
        return;
    };
    let err = refused.expect("the default, require, refuses");
    assert!(matches!(err, EmuError::NoRealtime(_)), "{err}");
    let d = preferred.expect("prefer runs");
    assert_eq!(d.strategies[0].realtime_handlers, 0);
    // The result itself says so, in the JSON and in the table.
    assert_eq!(d.result.notes.len(), 1, "{:?}", d.result.notes);
    assert!(
        d.result.notes[0].contains("without real-time priority"),
        "{:?}",
        d.result.notes
    );
    let json = cint_report::to_json(&d.result).expect("serializes");
    assert!(json.contains("\"notes\""), "{json}");
    assert!(cint_report::to_table(&d.result).contains("note: strategy"));
    // Whole-run count: at normal priority on a loaded machine the short
    // window may see no completion, but the run does.
    assert!(d.strategies[0].jobs[0].completed > 0);
}

#[test]
fn where_the_system_grants_it_every_handler_runs_at_realtime_priority() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    if !fifo_allowed() {
        skip::not_here("this process may not use SCHED_FIFO");
        return;
    }
    let emulator = Emulator::start(config(Realtime::Require)).expect("starts");
    let stats = emulator.shutdown().expect("clean shutdown");
    assert_eq!(stats.realtime_handlers, 1);
}
