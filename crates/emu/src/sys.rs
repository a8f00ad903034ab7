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
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clock ids exist on
    // every Linux the emulator supports, so the call cannot fail.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
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

/// Gives the calling thread `SCHED_FIFO` priority `prio`. Returns false if
/// the system refuses (no CAP_SYS_NICE, RLIMIT_RTPRIO).
pub fn set_fifo(prio: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Blocks while `*word == expected` (or until woken; spurious returns are
/// allowed, callers re-check their condition).
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a valid, aligned u32 that outlives the call; a null
    // timeout means no timeout. Private futex: the word is not shared
    // between processes.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
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
    /// Ticks not idle and not waiting for I/O.
    pub busy: u64,
    /// All ticks.
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
        let total: u64 = values.iter().take(8).sum();
        // Fields 3 and 4 are idle and iowait.
        let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
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

/// Busy fraction of `cpu` between two [`cpu_ticks`] snapshots.
pub fn busy_fraction(before: &[CpuTicks], after: &[CpuTicks], cpu: u32) -> f64 {
    let (Some(b), Some(a)) = (before.get(cpu as usize), after.get(cpu as usize)) else {
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
        let c0 = thread_cpu_time();
        spin_until(t0 + 2_000_000);
        assert!(now() >= t0 + 2_000_000);
        assert!(thread_cpu_time() > c0 + 500_000);
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
        let before = own_switches();
        sleep_ns(1_000_000);
        assert!(own_switches().since(&before).voluntary >= 1);
    }
}
