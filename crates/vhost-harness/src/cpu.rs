//! The back end's CPU time, read from /proc: what turns requests/s into
//! requests/s per back-end core.

use std::fs;
use std::time::Instant;

use crate::Error;

/// CPU time a process has used so far, in nanoseconds, summed over its
/// threads' `schedstat` (run time on a CPU, in ns).
pub fn process_cpu_ns(pid: u32) -> Result<u64, Error> {
    let dir = format!("/proc/{pid}/task");
    let entries = fs::read_dir(&dir).map_err(|e| Error::Process(format!("{dir}: {e}")))?;
    let mut total = 0u64;
    for entry in entries.flatten() {
        let path = entry.path().join("schedstat");
        // A thread that exited between listing and reading took its time
        // with it; the totals are sampled over a run where threads persist.
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let ns = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .ok_or_else(|| Error::Process(format!("{}: unreadable", path.display())))?;
        total += ns;
    }
    Ok(total)
}

/// A CPU-time sample of one process, taken at the start of a measurement.
pub struct CpuMeter {
    pid: u32,
    start_cpu_ns: u64,
    start: Instant,
}

/// What a process used between a `CpuMeter`'s start and `stop`.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct CpuUse {
    /// CPU seconds the process used.
    pub cpu_seconds: f64,
    /// Wall-clock seconds that passed.
    pub wall_seconds: f64,
}

impl CpuUse {
    /// Average number of cores busy.
    pub fn cores(&self) -> f64 {
        self.cpu_seconds / self.wall_seconds.max(1e-9)
    }
}

impl CpuMeter {
    /// Starts measuring `pid`.
    pub fn start(pid: u32) -> Result<Self, Error> {
        Ok(Self {
            pid,
            start_cpu_ns: process_cpu_ns(pid)?,
            start: Instant::now(),
        })
    }

    /// Ends the measurement.
    pub fn stop(&self) -> Result<CpuUse, Error> {
        let cpu = process_cpu_ns(self.pid)?.saturating_sub(self.start_cpu_ns);
        Ok(CpuUse {
            cpu_seconds: cpu as f64 / 1e9,
            wall_seconds: self.start.elapsed().as_secs_f64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_cpu_time_grows_with_work() {
        let pid = std::process::id();
        let meter = CpuMeter::start(pid).expect("own /proc entry");
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let used = meter.stop().expect("own /proc entry");
        assert!(used.cpu_seconds > 0.0, "no CPU time seen after a busy loop");
        assert!(used.cpu_seconds <= used.wall_seconds * 64.0);
    }
}
