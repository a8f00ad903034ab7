//! The C entry points and real-time priority: `cint_emu_start` requires
//! `SCHED_FIFO` for the interrupt handler (`CINT_EMU_EREALTIME` when
//! refused), `cint_emu_start_with(.., CINT_EMU_FLAG_REALTIME_PREFER, ..)`
//! runs without it, unknown flags are refused.
//!
//! As in `crates/emu/tests/realtime.rs`, the refusal is the kernel's: a
//! thread drops `CAP_SYS_NICE` from its effective capabilities in a process
//! whose `RLIMIT_RTPRIO` is 0, and every thread it creates (the emulator's
//! handler among them) inherits that. Capabilities are per thread, so the
//! rest of this test binary keeps its own.

use std::ptr;

use cint_emu_ffi::*;

#[path = "../../emu/tests/common/mod.rs"]
mod common;

use common::{emulator_threads_left, fifo_allowed, serial, without_realtime};

/// The device CPU (the last allowed) and the application CPU (the first);
/// `None` (with the reason printed) on a machine with fewer than 2 CPUs.
fn cpus() -> Option<(u32, u32)> {
    let cpus = ::cint_emu::sys::allowed_cpus().expect("affinity");
    if !cint_test_support::skip::cpus(cpus.len(), 2) {
        return None;
    }
    Some((*cpus.last().expect("a cpu"), cpus[0]))
}

/// A synthetic device under strategy `none`. (Built where it is used: its
/// `path` pointer makes it neither `Send` nor `Sync`.)
fn config((device_cpu, app_cpu): (u32, u32)) -> cint_emu_config {
    cint_emu_config {
        device_cpu,
        app_cpu,
        policy: CINT_EMU_POLICY_NONE,
        delta_ns: 0,
        thr: 0,
        service_ns: 10_000,
        parallel_units: 1,
        path: ptr::null(),
    }
}

/// One urgent read through the device; returns its completion.
fn one_read(emu: *mut cint_emu) -> cint_emu_completion {
    let mut client: *mut cint_emu_client = ptr::null_mut();
    let mut done = [cint_emu_completion::default(); 1];
    let mut got = 0u32;
    // SAFETY: `emu` is a live device; every out pointer is a valid local.
    unsafe {
        assert_eq!(cint_emu_client_new(emu, 1, &mut client), CINT_EMU_OK);
        assert_eq!(
            cint_emu_submit(
                client,
                CINT_EMU_OP_READ,
                0,
                4096,
                CINT_EMU_HINT_URGENT,
                ptr::null_mut(),
                7
            ),
            CINT_EMU_OK
        );
        assert_eq!(
            cint_emu_wait(client, 1, done.as_mut_ptr(), 1, &mut got),
            CINT_EMU_OK
        );
        assert_eq!(cint_emu_client_free(client), CINT_EMU_OK);
    }
    assert_eq!(got, 1);
    done[0]
}

#[test]
fn start_refuses_without_realtime_and_prefer_runs_without_it() {
    let _g = serial();
    let Some(cpus) = cpus() else {
        return;
    };
    let Some((start, start_with_0, prefer)) = without_realtime(|| {
        let config = config(cpus);
        let mut emu: *mut cint_emu = ptr::null_mut();
        // SAFETY: `config` and `emu` are valid; `path` is NULL.
        let start = unsafe { cint_emu_start(&config, &mut emu) };
        let left_null = emu.is_null();
        let threads_after_refusal = emulator_threads_left();
        // SAFETY: as above.
        let start_with_0 = unsafe { cint_emu_start_with(&config, 0, &mut emu) };
        let left_null = left_null && emu.is_null();
        // SAFETY: as above.
        let rc = unsafe { cint_emu_start_with(&config, CINT_EMU_FLAG_REALTIME_PREFER, &mut emu) };
        assert_eq!(rc, CINT_EMU_OK, "prefer starts without SCHED_FIFO");
        assert!(!emu.is_null());
        let mut handlers = u32::MAX;
        // SAFETY: `emu` was just started; `handlers` is a valid local.
        let rc = unsafe { cint_emu_realtime_handlers(emu, &mut handlers) };
        assert_eq!(rc, CINT_EMU_OK);
        let done = one_read(emu);
        // SAFETY: `emu` came from cint_emu_start_with and is not used after.
        let shutdown = unsafe { cint_emu_shutdown(emu) };
        (
            (start, left_null, threads_after_refusal),
            start_with_0,
            (handlers, done, shutdown),
        )
    }) else {
        return;
    };
    let (rc, left_null, threads) = start;
    assert_eq!(rc, CINT_EMU_EREALTIME, "cint_emu_start requires SCHED_FIFO");
    assert!(left_null, "*out written by a refused start");
    assert_eq!(threads, 0, "a refused start left a thread behind");
    assert_eq!(start_with_0, CINT_EMU_EREALTIME, "flags 0 is the default");
    let (handlers, done, shutdown) = prefer;
    assert_eq!(handlers, 0, "the handler runs at normal priority");
    assert_eq!((done.user_data, done.result), (7, 4096));
    assert_eq!(done.delivered_by, 0, "delivered by a (full) interrupt");
    assert_eq!(shutdown, CINT_EMU_OK);
    assert_eq!(emulator_threads_left(), 0);
}

#[test]
fn where_the_system_grants_it_start_runs_the_handler_at_realtime_priority() {
    let _g = serial();
    let Some(cpus) = cpus() else {
        return;
    };
    let config = config(cpus);
    if !fifo_allowed() {
        cint_test_support::skip::not_here("this process may not use SCHED_FIFO");
        return;
    }
    for flags in [None, Some(0), Some(CINT_EMU_FLAG_REALTIME_PREFER)] {
        let mut emu: *mut cint_emu = ptr::null_mut();
        let mut handlers = u32::MAX;
        // SAFETY: `config`, `emu` and `handlers` are valid locals; `emu` is
        // shut down once and not used after.
        unsafe {
            let rc = match flags {
                None => cint_emu_start(&config, &mut emu),
                Some(f) => cint_emu_start_with(&config, f, &mut emu),
            };
            assert_eq!(rc, CINT_EMU_OK, "flags {flags:?}");
            assert_eq!(cint_emu_realtime_handlers(emu, &mut handlers), CINT_EMU_OK);
            assert_eq!(one_read(emu).result, 4096);
            assert_eq!(cint_emu_shutdown(emu), CINT_EMU_OK);
        }
        assert_eq!(handlers, 1, "flags {flags:?}");
    }
}

#[test]
fn unknown_flags_are_refused_with_einval_and_start_nothing() {
    let _g = serial();
    let Some(cpus) = cpus() else {
        return;
    };
    let config = config(cpus);
    for flags in [
        4,
        0x8000_0000,
        CINT_EMU_FLAG_REALTIME_PREFER | 0x10,
        u32::MAX,
    ] {
        let mut emu: *mut cint_emu = ptr::null_mut();
        // SAFETY: `config` and `emu` are valid locals.
        let rc = unsafe { cint_emu_start_with(&config, flags, &mut emu) };
        assert_eq!(rc, CINT_EMU_EINVAL, "flags {flags:#x}");
        assert!(emu.is_null(), "flags {flags:#x}");
        assert_eq!(emulator_threads_left(), 0, "flags {flags:#x}");
    }
}

#[test]
fn interrupts_on_an_idle_cpu_go_to_the_waiting_thread_unless_the_idle_handler_flag_says_not() {
    let _g = serial();
    let Some(cpus) = cpus() else {
        return;
    };
    let config = config(cpus);
    let mut by_waiter = [u64::MAX; 2];
    for (k, flags) in [0, CINT_EMU_FLAG_IDLE_HANDLER].into_iter().enumerate() {
        let flags = flags | CINT_EMU_FLAG_REALTIME_PREFER;
        let mut emu: *mut cint_emu = ptr::null_mut();
        let mut irqs = 0;
        // SAFETY: `config`, `emu` and the counters are valid locals; `emu`
        // is shut down once and not used after.
        unsafe {
            assert_eq!(cint_emu_start_with(&config, flags, &mut emu), CINT_EMU_OK);
            for _ in 0..20 {
                assert_eq!(one_read(emu).result, 4096);
            }
            assert_eq!(cint_emu_waiter_irqs(emu, &mut by_waiter[k]), CINT_EMU_OK);
            assert_eq!(cint_emu_stats(emu, &mut irqs, ptr::null_mut()), CINT_EMU_OK);
            assert_eq!(cint_emu_waiter_irqs(emu, ptr::null_mut()), CINT_EMU_ENULL);
            assert_eq!(cint_emu_shutdown(emu), CINT_EMU_OK);
        }
        assert!(by_waiter[k] <= irqs, "flags {flags:#x}");
    }
    // One client blocked on a 10 us read, nothing else on the queue: the
    // device finds the CPU idle as soon as the thread is asleep.
    assert!(by_waiter[0] > 0, "no interrupt reached the waiting thread");
    assert_eq!(by_waiter[1], 0, "the flag keeps them on the handler");
}
