//! Scenario builders and a lock that keeps emulator tests from running at
//! once (each spins a device core; two would fight for the same CPU).

#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use cint_policy::{Hint, Nanos, US};
use cint_scenario::profiles::{JitterKind, OpTiming};
use cint_scenario::units::Duration;
use cint_scenario::{DeviceProfile, Engine, Job};
use cint_test_support::{scenario, skip};

// Each test binary uses its own subset.
#[allow(unused_imports)]
pub use cint_test_support::scenario::{
    adaptive, cinterrupts, cpu_job, hipri, hybrid, none, poll, scenario, strategy,
};

static SERIAL: Mutex<()> = Mutex::new(());

/// How long one emulator test may run once it holds the device core. A
/// test takes a second or two, tens on a loaded machine; one still running
/// after this waits for something that will never come (a lost completion
/// leaves a blocking wait asleep forever).
pub const TEST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

/// The device core, held for one test, and the test's deadline.
pub struct Serial {
    _core: MutexGuard<'static, ()>,
    _deadline: Deadline,
}

/// Holds the machine's device core for one test, and ends the test binary
/// with a message naming the test if the test outlives [`TEST_DEADLINE`]
/// (a hang would otherwise hold CI until its own limit, naming nothing).
pub fn serial() -> Serial {
    let core = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    Serial {
        _core: core,
        _deadline: Deadline::start(TEST_DEADLINE),
    }
}

/// Aborts the process unless dropped within its time: the test harness
/// names each test's thread after the test, so the message says which.
pub struct Deadline {
    _cancel: std::sync::mpsc::Sender<()>,
}

impl Deadline {
    pub fn start(limit: std::time::Duration) -> Deadline {
        let test = std::thread::current()
            .name()
            .unwrap_or("an unnamed test")
            .to_string();
        let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let watch = std::thread::Builder::new().name("deadline".into());
        let spawned = watch.spawn(move || {
            // Dropping the sender (the test ended) disconnects the channel.
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
                // Straight to the file descriptor: the harness captures
                // what a test's threads print, this one's included, and
                // the abort would lose it.
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "{test}: still running after {} s, so it waits for something that will \
                     never come (a lost completion, a thread never woken); aborting",
                    limit.as_secs()
                );
                std::process::abort();
            }
        });
        spawned.expect("a thread for the test's deadline");
        Deadline { _cancel: cancel }
    }
}

/// Emulator threads of this process still alive once those that are
/// exiting have finished. `join` returns when the kernel clears the
/// thread's tid, a moment before the thread leaves /proc/self/task, so a
/// count taken right after a shutdown may still see a joined thread: the
/// count is retried for up to a second (an exit takes microseconds), and a
/// thread truly left behind is still counted then.
pub fn emulator_threads_left() -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let n = emulator_threads_now();
        if n == 0 || std::time::Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Emulator threads listed in /proc/self/task now. They are all named
/// `cint-*`; counting every thread would count other tests' threads too.
fn emulator_threads_now() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("cint-"))
        .count()
}

/// True when the machine can run the emulator (2 CPUs or more); skips by
/// the rule of `cint_test_support::skip::missing` otherwise (CI machines
/// have two, so there it fails).
pub fn can_emulate() -> bool {
    let n = cint_emu::sys::allowed_cpus().map(|c| c.len()).unwrap_or(0);
    skip::cpus(n, 2)
}

/// An emulator with one queue in `mode` on the first allowed CPU, its
/// device core on the last one.
pub fn start_one_queue(
    mode: cint_emu::QueueMode,
    backend: cint_emu::BackendConfig,
    idle_delivery: cint_emu::IdleDelivery,
) -> cint_emu::Emulator {
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    cint_emu::Emulator::start(cint_emu::DeviceConfig {
        device_cpu: *cpus.last().expect("a cpu"),
        queues: vec![cint_emu::QueueConfig {
            app_cpu: cpus[0],
            mode,
        }],
        backend,
        realtime: cint_emu::Realtime::Prefer,
        idle_delivery,
    })
    .expect("emulator starts")
}

/// A fast synthetic device without jitter: `service` per request.
pub fn device(service: Nanos, units: u32) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("optane-p4800x").expect("built-in profile");
    p.parallel_units = units;
    p.jitter = JitterKind::None;
    p.read = OpTiming {
        base: Duration(service),
        bandwidth: 0,
    };
    p.write = p.read.clone();
    p
}

/// `numjobs` copies of a 4 KiB random-read job, `batch` per submission
/// and per reap.
pub fn io_job(name: &str, engine: Engine, iodepth: u32, batch: u32, numjobs: u32) -> Job {
    let mut job = scenario::io_job(name, engine, iodepth, batch, batch);
    job.numjobs = numjobs;
    job
}

pub const DEFAULT_DELTA: Nanos = 6 * US;
pub const URGENT: Hint = Hint::Urgent;

// ------------------------------------------- a thread refused SCHED_FIFO --
//
// The refusal is the kernel's, not a simulated one: a thread that drops
// `CAP_SYS_NICE` from its own effective capabilities, in a process whose
// `RLIMIT_RTPRIO` is 0, is refused `SCHED_FIFO`, and so are the threads it
// creates. Capabilities are per thread, so the rest of a test binary keeps
// its own. Shared with crates/emu-ffi's tests (included by path).

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
pub fn drop_cap_sys_nice() -> Result<(), String> {
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
pub fn set_rtprio_soft_limit(soft: u64) -> libc::rlimit {
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

/// Puts back the limits [`set_rtprio_soft_limit`] returned.
pub fn restore_rtprio(old: libc::rlimit) {
    // SAFETY: `old` is the valid rlimit read before.
    unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &old) };
}

/// True if a new thread of the caller's kind gets SCHED_FIFO (the probe
/// runs on a throwaway thread, which inherits the caller's capabilities).
pub fn fifo_allowed() -> bool {
    std::thread::scope(|s| {
        s.spawn(|| cint_emu::sys::set_fifo(1).is_ok())
            .join()
            .unwrap_or(false)
    })
}

/// Runs `f` on a thread that the kernel refuses SCHED_FIFO, as it refuses
/// every thread that one creates; `None` (with the reason printed) if this
/// process cannot arrange that.
pub fn without_realtime<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    let old = set_rtprio_soft_limit(0);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            if let Err(e) = drop_cap_sys_nice() {
                skip::not_here(&format!("cannot drop CAP_SYS_NICE: {e}"));
                return None;
            }
            if fifo_allowed() {
                skip::not_here("SCHED_FIFO is granted even without CAP_SYS_NICE");
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

/// Every request `job` submitted came back once, none failed and none
/// stray, each by one of the ways a completion arrives.
pub fn assert_each_request_back_once(job: &cint_emu::JobDetail, what: &str) {
    assert_eq!(
        job.submitted, job.completed,
        "{what}: lost or extra: {job:?}"
    );
    assert_eq!((job.errors, job.strays), (0, 0), "{what}: {job:?}");
    assert_eq!(
        job.by_full_irq + job.by_urgent_irq + job.by_poll,
        job.completed,
        "{what}: {job:?}"
    );
}
