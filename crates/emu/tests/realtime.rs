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
use common::*;

const CAP_SYS_NICE: u32 = 23;
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Removes `CAP_SYS_NICE` from the calling thread's effective set.
fn drop_cap_sys_nice() -> Result<(), String> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: version 3 capget writes two CapData records, which `data`
    // holds; pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if rc != 0 {
        return Err(format!("capget: {}", std::io::Error::last_os_error()));
    }
    data[0].effective &= !(1 << CAP_SYS_NICE);
    // SAFETY: as above; capset only reads the two records.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if rc != 0 {
        return Err(format!("capset: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Sets the process's soft `RLIMIT_RTPRIO`; returns the previous limits.
fn set_rtprio_soft_limit(soft: u64) -> libc::rlimit {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is a valid, writable rlimit.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut old) };
    let new = libc::rlimit {
        rlim_cur: soft.min(old.rlim_max),
        rlim_max: old.rlim_max,
    };
    // SAFETY: `new` is a valid rlimit; lowering the soft limit (and later
    // restoring it below the unchanged hard limit) needs no privilege.
    unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &new) };
    old
}

fn restore_rtprio(old: libc::rlimit) {
    // SAFETY: `old` is the valid rlimit read before.
    unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &old) };
}

/// True if a new thread of the caller's kind gets SCHED_FIFO (the probe
/// runs on a throwaway thread, which inherits the caller's capabilities).
fn fifo_allowed() -> bool {
    std::thread::scope(|s| {
        s.spawn(|| cint_emu::sys::set_fifo(1).is_ok())
            .join()
            .unwrap_or(false)
    })
}

/// Runs `f` on a thread that the kernel refuses SCHED_FIFO, as it refuses
/// every thread that one creates; `None` (with the reason printed) if this
/// process cannot arrange that.
fn without_realtime<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    let old = set_rtprio_soft_limit(0);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            if let Err(e) = drop_cap_sys_nice() {
                eprintln!("skipped: cannot drop CAP_SYS_NICE: {e}");
                return None;
            }
            if fifo_allowed() {
                eprintln!("skipped: SCHED_FIFO is granted even without CAP_SYS_NICE");
                return None;
            }
            Some(f())
        })
        .join()
        .expect("test thread")
    });
    restore_rtprio(old);
    out
}

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
    assert_eq!(emulator_threads(), 0, "a thread was left behind");
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
        eprintln!("skipped: this process may not use SCHED_FIFO");
        return;
    }
    let emulator = Emulator::start(config(Realtime::Require)).expect("starts");
    let stats = emulator.shutdown().expect("clean shutdown");
    assert_eq!(stats.realtime_handlers, 1);
}
