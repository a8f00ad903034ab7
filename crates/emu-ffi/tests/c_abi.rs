//! The C ABI seen from C: the committed header matches a fresh cbindgen
//! run, and `examples/c_client.c`, compiled with the system C compiler
//! against that header and this crate's static library, passes its checks,
//! with real-time priority and where the kernel refuses it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use cint_c_abi_testing::{assert_header_current, compile_c_example, static_lib};
use cint_test_support::process::output_within;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn header_is_current() {
    assert_header_current(
        &Path::new(env!("OUT_DIR")).join("cint_emu.h"),
        &crate_dir().join("include/cint_emu.h"),
    );
}

static SERIAL: Mutex<()> = Mutex::new(());

/// One emulator at a time: each spins a device core.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The example, compiled once; its arguments (device CPU, application
/// CPU). `None` (with the reason printed) with fewer than 2 CPUs.
fn example() -> Option<Command> {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    if !cint_test_support::skip::cpus(cpus.len(), 2) {
        return None;
    }
    let exe = EXE.get_or_init(|| {
        let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cint_emu_c_client");
        compile_c_example(
            &crate_dir().join("examples/c_client.c"),
            &crate_dir().join("include"),
            &static_lib("cint-emu-ffi"),
            &exe,
        );
        exe
    });
    let mut cmd = Command::new(exe);
    cmd.arg(cpus.last().expect("a cpu").to_string())
        .arg(cpus[0].to_string());
    Some(cmd)
}

/// Runs the example to its end, killing it and failing after 120 s: its
/// blocking waits would otherwise hang the test on a lost completion. Its
/// output is a few lines, well within the pipes' buffers, so it never
/// blocks writing while this waits.
fn run_within_120s(cmd: &mut Command) -> Output {
    output_within("the example", cmd, Duration::from_secs(120))
}

fn assert_ok(out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "example failed: {stdout}{stderr}");
    assert!(stdout.starts_with("ok:"), "{stdout}");
    (stdout, stderr)
}

#[test]
fn c_program_submits_with_hints_and_waits() {
    let _g = serial();
    let Some(mut cmd) = example() else {
        return;
    };
    let (stdout, stderr) = assert_ok(&run_within_120s(&mut cmd));
    // Where a new thread of this process gets SCHED_FIFO (probed on a
    // throwaway thread), so does the example's handler.
    let fifo = std::thread::spawn(|| cint_emu::sys::set_fifo(1).is_ok())
        .join()
        .unwrap_or(false);
    if fifo {
        assert!(stdout.contains(", 1 real-time handler(s)"), "{stdout}");
        assert!(!stderr.contains("SCHED_FIFO refused"), "{stderr}");
    }
}

#[test]
fn c_program_falls_back_to_a_normal_priority_handler_when_sched_fifo_is_refused() {
    let _g = serial();
    let Some(mut cmd) = example() else {
        return;
    };
    // SAFETY: the hook runs in the forked child before exec and makes only
    // async-signal-safe system calls on stack data, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            // RLIMIT_RTPRIO 0, and CAP_SYS_NICE (23) out of the bounding
            // set, so that root, whose capabilities exec recomputes, loses
            // it too (a process without CAP_SETPCAP cannot drop it: EPERM,
            // but then exec does not give CAP_SYS_NICE back either).
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &none) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let _ = libc::prctl(libc::PR_CAPBSET_DROP, 23, 0, 0, 0);
            Ok(())
        });
    }
    let (stdout, stderr) = assert_ok(&run_within_120s(&mut cmd));
    // cint_emu_start refused (CINT_EMU_EREALTIME), the example said so and
    // started with CINT_EMU_FLAG_REALTIME_PREFER.
    assert!(stderr.contains("SCHED_FIFO refused"), "{stderr}");
    assert!(stdout.contains(", 0 real-time handler(s)"), "{stdout}");
}
