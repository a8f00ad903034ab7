//! The policy's share of a worker's CPU, measured by the worker itself.
//!
//! Timing every policy call would cost more than the calls (a clock read
//! is about as long as `on_complete`), so one call in [`SAMPLE_ONE_IN`],
//! picked at random so that no call site's rhythm aliases with the
//! sampling, is timed with the monotonic clock; the total is that mean
//! times the number of calls. The clock's own cost is taken off each
//! sample: an empty interval is timed right after the call, with the
//! clock code as hot as it was around the call; what that leaves for a
//! call that does nothing (about 1.5 ns here) is measured when the worker
//! starts and taken off too.
//! The worker's CPU time is its thread's CPU clock, read once per event it
//! handles.

use std::thread::ThreadId;
use std::time::Instant;

/// Empty calls timed when a worker starts, to find the timing's residue
/// (well under a millisecond).
const CALIBRATION_SAMPLES: u32 = 4096;

/// A sample this long was not a policy call but the thread being
/// interrupted or switched out (an interrupt handler alone takes longer):
/// it is left out. Policy calls take tens of ns; none comes near this.
const SWITCHED_OUT_NS: u64 = 2_000;

/// One policy call in this many is timed: three clock reads per sample
/// cost about 1 ns per call, spread out.
pub const SAMPLE_ONE_IN: u64 = 64;

/// Time spent in one worker's policy calls, estimated by sampling.
#[derive(Clone, Debug)]
pub struct PolicyTime {
    calls: u64,
    sampled: u64,
    sampled_ns: u64,
    /// What a sample reads for a call that does nothing: the timing's
    /// own residue, taken off the estimate.
    clock_bias_ns: f64,
    rng: u64,
}

impl Default for PolicyTime {
    fn default() -> Self {
        let mut samples: Vec<u64> = (0..CALIBRATION_SAMPLES)
            .filter_map(|_| timed(|| std::hint::black_box(())).1)
            .collect();
        samples.sort_unstable();
        // The top 2% are samples an interrupt landed in.
        samples.truncate(samples.len() - samples.len() / 50);
        let clock_bias_ns = samples.iter().sum::<u64>() as f64 / samples.len().max(1) as f64;
        PolicyTime {
            calls: 0,
            sampled: 0,
            sampled_ns: 0,
            clock_bias_ns,
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

/// Runs `call` between clock reads; its time in ns, or `None` if the
/// thread was evidently switched out meanwhile.
#[inline]
fn timed<R>(call: impl FnOnce() -> R) -> (R, Option<u64>) {
    let start = Instant::now();
    let r = call();
    let end = Instant::now();
    // An empty interval right after, with the clock code just as hot:
    // what the two reads themselves add to the one around the call.
    let clock = end.elapsed();
    let ns = (end - start).saturating_sub(clock).as_nanos() as u64;
    (r, (ns < SWITCHED_OUT_NS).then_some(ns))
}

impl PolicyTime {
    /// Runs one policy call, timing it if it is drawn for the sample.
    #[inline]
    pub fn time<R>(&mut self, call: impl FnOnce() -> R) -> R {
        self.calls += 1;
        // xorshift64: a few cycles, and no rhythm a call sequence can match.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if self.rng % SAMPLE_ONE_IN != 0 {
            return call();
        }
        let (r, ns) = timed(call);
        if let Some(ns) = ns {
            self.sampled += 1;
            self.sampled_ns += ns;
        }
        r
    }

    /// Estimated nanoseconds spent in policy calls so far.
    pub fn estimate_ns(&self) -> u64 {
        if self.sampled == 0 {
            return 0;
        }
        let sampled = self.sampled as f64;
        let net = (self.sampled_ns as f64 - self.clock_bias_ns * sampled).max(0.0);
        (net / sampled * self.calls as f64).round() as u64
    }

    /// Policy calls made so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }
}

/// CPU time of the calling thread, accumulated across the threads that
/// have run a worker (a reconnecting front end gets new worker threads).
#[derive(Clone, Debug, Default)]
pub struct WorkerCpu {
    total_ns: u64,
    thread: Option<ThreadId>,
    last_ns: u64,
}

impl WorkerCpu {
    /// Adds the CPU time the calling thread used since the last call.
    pub fn update(&mut self) {
        let Some(now) = thread_cpu_ns() else {
            return;
        };
        let me = std::thread::current().id();
        if self.thread != Some(me) {
            // A new thread's clock started at zero when it was created.
            self.thread = Some(me);
            self.last_ns = 0;
        }
        self.total_ns += now.saturating_sub(self.last_ns);
        self.last_ns = now;
    }

    /// Nanoseconds of CPU the worker used up to the last update.
    pub fn total_ns(&self) -> u64 {
        self.total_ns
    }
}

/// The calling thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live local the call writes; the clock id is a
    // constant every Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_runs_and_some_are_sampled() {
        let mut t = PolicyTime::default();
        let mut ran = 0u64;
        for _ in 0..10_000 {
            t.time(|| ran += 1);
        }
        assert_eq!(ran, 10_000);
        assert_eq!(t.calls(), 10_000);
        // About one in 64 (156 expected); far from none and from all.
        assert!(t.sampled > 80 && t.sampled < 320, "{}", t.sampled);
    }

    #[test]
    fn estimate_scales_the_sampled_time_by_the_calls() {
        let t = PolicyTime {
            calls: 1_600,
            sampled: 100,
            sampled_ns: 5_000,
            clock_bias_ns: 10.0,
            rng: 1,
        };
        // (5 000 - 10 x 100) / 100 x 1 600
        assert_eq!(t.estimate_ns(), 64_000);
        assert_eq!(PolicyTime::default().estimate_ns(), 0);
    }

    #[test]
    fn worker_cpu_grows_with_work_on_one_thread_and_adds_across_threads() {
        let mut cpu = WorkerCpu::default();
        cpu.update();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        cpu.update();
        let one = cpu.total_ns();
        assert!(one > 0);
        let cpu = std::thread::spawn(move || {
            let mut cpu = cpu;
            cpu.update();
            cpu
        })
        .join()
        .unwrap();
        assert!(
            cpu.total_ns() >= one,
            "a new thread's time adds, never resets"
        );
    }
}
