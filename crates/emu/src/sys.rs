//! Thin wrappers over the Linux calls the emulator needs: the clock, CPU
//! affinity, real-time priority, futexes and per-thread accounting.

use std::sync::atomic::AtomicU32;

use cint_policy::Nanos;

/// `CLOCK_MONOTONIC` in nanoseconds. Served by the vDSO (no system call):
/// about 25 ns per read on the reference VM, whose clock source is the TSC,
/// so reading the time-stamp counter directly would save little and would
/// need its own calibration (docs/EMULATOR-DESIGN.md).
#[inline]
pub fn now() -> Nanos {
    clock(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> Nanos {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock(id: libc::clockid_t) -> Nanos {
    // Both clocks `clock` is called with exist on every Linux the emulator
    // supports (and for the calling thread), so the read cannot fail.
    read_clock(id).unwrap_or(0)
}

/// Reads clock `id`; `None` if it does not exist (any more): the CPU clock
/// of a thread that has exited.
pub fn read_clock(id: libc::clockid_t) -> Option<Nanos> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an unknown clock id is
    // reported as EINVAL, not undefined behaviour.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    (rc == 0).then(|| (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The calling thread's CPU-time clock (`pthread_getcpuclockid`), which
/// other threads of the process can read with [`read_clock`] while this
/// one lives: the same clock as the thread's own
/// `CLOCK_THREAD_CPUTIME_ID`, and exact at the instant of the read, even
/// for a thread that is running on another CPU at that moment.
pub fn own_cpu_clock() -> Option<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self() is the live calling thread; `id` is a valid,
    // writable clockid_t.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    (rc == 0).then_some(id)
}

/// Spins until the clock reaches `deadline`.
#[inline]
pub fn spin_until(deadline: Nanos) {
    while now() < deadline {
        std::hint::spin_loop();
    }
}

/// Sleeps for `ns` with a high-resolution timer (oversleeps by the
/// platform's timer slack).
pub fn sleep_ns(ns: Nanos) {
    if ns > 0 {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

/// An anonymous in-memory file (`memfd_create`): its `fsync` and
/// `fdatasync` are system calls with nothing to write, what the kernel
/// does for a direct job's sync on a device without a volatile write
/// cache.
pub fn empty_file() -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a NUL-terminated literal and MFD_CLOEXEC a valid
    // flag; the call reads nothing else.
    let fd = unsafe { libc::memfd_create(c"cint-sync".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created by memfd_create and nothing else owns
    // it; the File closes it once.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// The kernel thread id of the caller.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// CPUs online in the system.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// The CPUs the calling thread may run on, in increasing order (a thread
/// that pinned itself sees only its own CPU).
pub fn allowed_cpus() -> Result<Vec<u32>, String> {
    // SAFETY: cpu_set_t is plain data; all-zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(format!(
            "sched_getaffinity failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((0..libc::CPU_SETSIZE as u32)
        // SAFETY: every index is below CPU_SETSIZE, the set's size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu as usize, &set) })
        .collect())
}

/// Pins the calling thread to one CPU.
pub fn pin_to(cpu: u32) -> Result<(), String> {
    if cpu as usize >= libc::CPU_SETSIZE as usize {
        return Err(format!("cannot pin to cpu {cpu}: beyond CPU_SETSIZE"));
    }
    // SAFETY: cpu_set_t is plain data; all-zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above).
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(format!(
            "cannot pin a thread to cpu {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Gives the calling thread `SCHED_FIFO` priority `prio`; says why not if
/// the system refuses (no `CAP_SYS_NICE` and an `RLIMIT_RTPRIO` below
/// `prio`, or a real-time bandwidth limit of the cgroup).
pub fn set_fifo(prio: i32) -> Result<(), String> {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "SCHED_FIFO priority {prio} refused: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Blocks while `*word == expected` (or until woken; spurious returns are
/// allowed, callers re-check their condition). True if the thread slept
/// and was woken; false if it did not sleep (the word had changed) or a
/// signal interrupted it.
pub fn futex_wait(word: &AtomicU32, expected: u32) -> bool {
    // SAFETY: `word` is a valid, aligned u32 that outlives the call; a null
    // timeout means no timeout. Private futex: the word is not shared
    // between processes.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
    rc == 0
}

/// Wakes one thread blocked in [`futex_wait`] on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned u32; waking has no other effect.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// Context switches of one thread so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// The thread blocked (gave up the CPU itself).
    pub voluntary: u64,
    /// The thread was preempted.
    pub involuntary: u64,
}

impl Switches {
    /// Both kinds.
    pub fn total(&self) -> u64 {
        self.voluntary + self.involuntary
    }

    /// Switches since `earlier`.
    pub fn since(&self, earlier: &Switches) -> Switches {
        Switches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }
}

/// Context switches of the calling thread (`getrusage(RUSAGE_THREAD)`).
pub fn own_switches() -> Switches {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    Switches {
        voluntary: usage.ru_nvcsw as u64,
        involuntary: usage.ru_nivcsw as u64,
    }
}

/// Busy and total jiffies of one CPU, from `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Ticks not idle, not waiting for I/O and not stolen by the hypervisor.
    pub busy: u64,
    /// All ticks but the stolen ones.
    pub total: u64,
}

/// Per-CPU tick counters, indexed by CPU number (missing CPUs are zero).
pub fn cpu_ticks() -> Vec<CpuTicks> {
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let Some(index) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let values: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
        let field = |i: usize| values.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal: the time the
        // hypervisor gave to someone else was neither ours nor idle.
        let total: u64 = values.iter().take(7).sum();
        let idle = field(3) + field(4);
        if out.len() <= index {
            out.resize(index + 1, CpuTicks::default());
        }
        out[index] = CpuTicks {
            busy: total.saturating_sub(idle),
            total,
        };
    }
    out
}

/// Nanoseconds `cpu` has spent in its idle states, from cpuidle's
/// per-state residency counters (`/sys/devices/system/cpu/cpuN/cpuidle/
/// stateK/time`, microseconds), or `None` without cpuidle.
pub fn cpu_idle_ns(cpu: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle")).ok()?;
    let mut total_us = 0u64;
    let mut states = 0;
    for entry in dir.filter_map(Result::ok) {
        if !entry.file_name().to_string_lossy().starts_with("state") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path().join("time")).ok()?;
        total_us = total_us.saturating_add(text.trim().parse::<u64>().ok()?);
        states += 1;
    }
    (states > 0).then_some(total_us.saturating_mul(1_000))
}

/// What [`busy_fraction`] compares: the tick counters, each CPU's idle
/// residency where cpuidle reports it, and when they were read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuUsage {
    at: Nanos,
    ticks: Vec<CpuTicks>,
    idle_ns: Vec<Option<u64>>,
}

/// Reads every CPU's usage counters now.
pub fn cpu_usage() -> CpuUsage {
    let ticks = cpu_ticks();
    let idle_ns = (0..ticks.len() as u32).map(cpu_idle_ns).collect();
    CpuUsage {
        at: now(),
        ticks,
        idle_ns,
    }
}

/// Busy fraction of `cpu` between two [`cpu_usage`] snapshots.
///
/// Idle residency against the wall clock where cpuidle reports it: the
/// kernel adds a CPU's busy time to `/proc/stat` one whole tick at a time,
/// to whatever runs when the tick fires, so a core that wakes for a few
/// microseconds every few tens of microseconds (an interrupt per
/// completion) shows up to several times its real busy time there. Idle
/// residency is accumulated in microseconds as each idle period ends (an
/// idle period still under way at a snapshot counts as busy, which matters
/// only for a core that is idle for most of a millisecond at that moment).
/// Without cpuidle, the tick counters.
pub fn busy_fraction(before: &CpuUsage, after: &CpuUsage, cpu: u32) -> f64 {
    let index = cpu as usize;
    let wall = after.at.saturating_sub(before.at);
    if let (Some(Some(b)), Some(Some(a))) = (before.idle_ns.get(index), after.idle_ns.get(index)) {
        if wall > 0 {
            let idle = a.saturating_sub(*b) as f64 / wall as f64;
            return (1.0 - idle).clamp(0.0, 1.0);
        }
    }
    let (Some(b), Some(a)) = (before.ticks.get(index), after.ticks.get(index)) else {
        return 0.0;
    };
    let total = a.total.saturating_sub(b.total);
    if total == 0 {
        return 0.0;
    }
    a.busy.saturating_sub(b.busy) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance_and_cpu_time_counts_spinning() {
        let t0 = now();
        spin_until(t0 + 2_000_000);
        assert!(now() >= t0 + 2_000_000);
        // Spin until this thread has run 2 ms: how much wall time that
        // takes depends on what else the machine runs (a fixed wall-clock
        // spin may be preempted for all of it), but it always takes at
        // least 2 ms of wall time, and it ends only if spinning counts.
        let (w0, c0) = (now(), thread_cpu_time());
        let limit = w0 + 60_000_000_000;
        while thread_cpu_time() < c0 + 2_000_000 && now() < limit {
            std::hint::spin_loop();
        }
        // CPU clock read last at the start and first at the end, so the
        // CPU interval lies within the wall-clock one.
        let c1 = thread_cpu_time();
        let w1 = now();
        assert!(
            c1 >= c0 + 2_000_000,
            "{} ns of CPU in 60 s of spinning",
            c1 - c0
        );
        assert!(
            w1 - w0 >= c1 - c0,
            "one thread ran {} ns in {} ns",
            c1 - c0,
            w1 - w0
        );
    }

    #[test]
    fn another_threads_cpu_clock_is_read_exactly_and_dies_with_it() {
        let (clock_tx, clock_rx) = std::sync::mpsc::channel();
        let (spun_tx, spun_rx) = std::sync::mpsc::channel();
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            clock_tx.send(own_cpu_clock()).unwrap();
            // Burn 3 ms of this thread's own CPU time, then report how much
            // it had at the end and stay alive (blocked) to be read.
            let c0 = thread_cpu_time();
            while thread_cpu_time() < c0 + 3_000_000 {
                std::hint::spin_loop();
            }
            spun_tx.send(thread_cpu_time()).unwrap();
            let _ = exit_rx.recv();
        });
        let id = clock_rx.recv().unwrap().expect("a thread has a CPU clock");
        let own_view = spun_rx.recv().unwrap();
        let outside_view = read_clock(id).expect("the thread lives");
        // Read from here, the clock shows at least what the thread itself
        // saw, and it already counted the 3 ms of spinning.
        assert!(outside_view >= own_view, "{outside_view} < {own_view}");
        assert!(outside_view >= 3_000_000);
        exit_tx.send(()).unwrap();
        spinner.join().unwrap();
        // `join` returns when the kernel clears the thread's tid, which it
        // does before it releases the task: the clock may outlive the join
        // by a moment, never for long.
        let gone = (0..1_000).any(|_| {
            let gone = read_clock(id).is_none();
            if !gone {
                sleep_ns(1_000_000);
            }
            gone
        });
        assert!(gone, "a joined thread's clock is gone");
    }

    #[test]
    fn a_cpu_a_thread_spins_on_is_busy() {
        let cpus = allowed_cpus().unwrap();
        let cpu = *cpus.last().unwrap();
        let busy = std::thread::spawn(move || {
            pin_to(cpu).unwrap();
            let before = cpu_usage();
            spin_until(now() + 50_000_000);
            busy_fraction(&before, &cpu_usage(), cpu)
        })
        .join()
        .unwrap();
        // Whatever else the machine runs, a CPU with a spinning thread is
        // never idle: only the snapshots' own reads could count as idle.
        assert!(busy > 0.9, "{busy}");
    }

    #[test]
    fn idle_residency_takes_precedence_over_ticks() {
        let usage = |at, busy, total, idle_ns| CpuUsage {
            at,
            ticks: vec![CpuTicks { busy, total }],
            idle_ns: vec![idle_ns],
        };
        // Ticks say 90% busy; the residency counters say idle for 750 of
        // 1000 ns of wall time.
        let (b, a) = (usage(0, 0, 0, Some(0)), usage(1_000, 90, 100, Some(750)));
        assert!((busy_fraction(&b, &a, 0) - 0.25).abs() < 1e-9);
        // Without cpuidle, the ticks.
        let (b, a) = (usage(0, 0, 0, None), usage(1_000, 90, 100, None));
        assert!((busy_fraction(&b, &a, 0) - 0.9).abs() < 1e-9);
        assert_eq!(busy_fraction(&b, &a, 7), 0.0, "an unknown CPU");
    }

    #[test]
    fn proc_stat_lists_every_allowed_cpu() {
        let ticks = cpu_ticks();
        for cpu in allowed_cpus().unwrap() {
            assert!(ticks[cpu as usize].total > 0);
        }
    }

    #[test]
    fn a_blocking_sleep_is_a_voluntary_switch() {
        // One sleep is not always one voluntary switch: a task preempted
        // after it set its sleeping state and before `schedule()` counts
        // an involuntary switch, and if its timer expired meanwhile it
        // never blocks. That needs a preemption in a window of a few
        // instructions, so most of ten sleeps still block.
        const SLEEPS: u64 = 10;
        let before = own_switches();
        for _ in 0..SLEEPS {
            sleep_ns(1_000_000);
        }
        let voluntary = own_switches().since(&before).voluntary;
        assert!(
            voluntary >= SLEEPS / 2,
            "{voluntary} voluntary switches in {SLEEPS} sleeps"
        );
    }
}
