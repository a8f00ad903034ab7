//! Refusals that depend on the CPUs the process may use: too few of them,
//! or a CPU it may not pin to. Each must be a one-line typed error (the CLI
//! turns it into exit status 2) and must leave no emulator thread behind.

mod common;

use cint_emu::{BackendConfig, DeviceConfig, EmuError, Emulator, QueueConfig, QueueMode};
use cint_policy::{PolicyConfig, MS};
use cint_scenario::Engine;
use common::*;

fn sync_qd1() -> cint_scenario::Scenario {
    scenario(
        "sync-qd1",
        device(10_000, 4),
        vec![none(), cinterrupts(DEFAULT_DELTA, 32)],
        vec![io_job("sync", Engine::Psync, 1, 1, 1)],
        5 * MS,
    )
}

/// What `taskset -c 0 cint emu ...` does: the process may use one CPU.
#[test]
fn one_allowed_cpu_is_a_clear_error() {
    let _g = serial();
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    let only = cpus[0];
    // A thread's affinity is what `allowed_cpus` reads, so a thread pinned
    // to one CPU sees the machine a one-CPU cpuset would show.
    let err = std::thread::spawn(move || {
        cint_emu::sys::pin_to(only).expect("pin to an allowed cpu");
        cint_emu::run(&sync_qd1()).expect_err("one CPU cannot emulate")
    })
    .join()
    .expect("test thread");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            EmuError::NotEnoughCores {
                needed: 2,
                available: 1
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("needs 2 cores") && msg.contains("may use 1"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
    assert_eq!(emulator_threads_left(), 0);
}

#[test]
fn a_device_core_the_process_may_not_use_is_a_pinning_error() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let allowed = cint_emu::sys::allowed_cpus().expect("affinity");
    let forbidden = (0..libc::CPU_SETSIZE as u32)
        .find(|c| !allowed.contains(c))
        .expect("some cpu is not allowed");
    let mut s = sync_qd1();
    s.emu.device_core = Some(forbidden);
    let err = cint_emu::run(&s).expect_err("forbidden device core");
    let msg = err.to_string();
    assert!(matches!(err, EmuError::Pinning(_)), "{msg}");
    assert!(msg.contains(&format!("device_core {forbidden}")), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert_eq!(emulator_threads_left(), 0);
}

/// The library path: the device thread or an interrupt handler fails to
/// pin (the CPU is not the process's), so the error comes from inside a
/// thread and every thread already started must be stopped and joined.
#[test]
fn a_thread_that_cannot_pin_fails_start_and_leaves_no_thread() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let allowed = cint_emu::sys::allowed_cpus().expect("affinity");
    let offline = (0..libc::CPU_SETSIZE as u32)
        .find(|c| !allowed.contains(c))
        .expect("some cpu is not allowed");
    let usable = allowed[allowed.len() - 1];
    let cases = [
        (
            offline,
            allowed[0],
            QueueMode::Interrupt(PolicyConfig::None),
        ),
        (offline, allowed[0], QueueMode::Poll),
        (usable, offline, QueueMode::Interrupt(PolicyConfig::None)),
    ];
    for (device_cpu, app_cpu, mode) in cases {
        let result = Emulator::start(DeviceConfig {
            device_cpu,
            queues: vec![QueueConfig { app_cpu, mode }],
            backend: BackendConfig::Synthetic {
                profile: device(10_000, 4),
                seed: 1,
            },
            realtime: cint_emu::Realtime::Prefer,
            idle_delivery: Default::default(),
        });
        let Err(err) = result else {
            panic!("{mode:?}: started with cpu {offline}, which this process may not use");
        };
        let msg = err.to_string();
        assert!(matches!(err, EmuError::Pinning(_)), "{mode:?}: {msg}");
        assert!(msg.contains(&format!("cpu {offline}")), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert_eq!(
            emulator_threads_left(),
            0,
            "{mode:?}: a thread was left behind"
        );
    }
}

/// A job whose threads are spread over cores (`cpus`: fio's split policy,
/// or where the fio import places threads the kernel would) takes a CPU
/// for each core: two cores and the device need three. Where the machine
/// has them, each core gets its queue and handler, and both run.
#[test]
fn a_job_spread_over_two_cores_takes_a_cpu_for_each() {
    let _g = serial();
    let mut s = sync_qd1();
    s.host.cores = 2;
    s.jobs[0].numjobs = 2;
    s.jobs[0].cpus = vec![0, 1];
    let available = cint_emu::sys::allowed_cpus().expect("affinity").len();
    if available < 3 {
        let err = cint_emu::run(&s).expect_err("two cores and the device need three CPUs");
        // Refused by the key that reaches too far, so that the command
        // line names its line.
        assert!(
            matches!(&err, EmuError::Unsupported { key, .. } if key == "job.sync.cpus"),
            "{err}"
        );
        assert!(err.to_string().contains("needs 3 cores"), "{err}");
        assert_eq!(emulator_threads_left(), 0);
        return;
    }
    if !can_emulate() {
        return;
    }
    let detail = cint_emu::run_detailed(&s).expect("runs");
    for st in &detail.strategies {
        assert_eq!(st.handlers, 2, "{}: one handler per core", st.name);
        assert_eq!(st.cpu_busy.len(), 2, "{}: {:?}", st.name, st.cpu_busy);
        assert!(
            st.cpu_busy.iter().all(|&(_, busy)| busy > 0.0),
            "{}: {:?}",
            st.name,
            st.cpu_busy
        );
        assert_eq!(st.jobs[0].completed, st.jobs[0].submitted);
    }
    assert_eq!(emulator_threads_left(), 0);
}
