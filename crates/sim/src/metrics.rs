//! Measurements of the window after warm-up and the result document.
//! Latencies go into one HdrHistogram per job, and per direction into
//! fio's buckets for fio's JSON output: memory does not grow with the
//! number of requests simulated.
//!
//! fio's three latencies map onto a request's instants: `issued` (the
//! submission call is entered; fio's start time), `submitted` (the call
//! returned) and the completion in the application's hand. An
//! asynchronous engine's slat is issued to submitted, its clat submitted
//! to completion; a synchronous call has no slat in fio (its issue time
//! is taken just before the call), so its clat is the whole call, as its
//! lat is.
//!
//! User-mode CPU time is the application's own work (think time, the
//! busy loop of a cpu job); everything else a thread runs is a system
//! call, a kernel submission or reaping path, a poll loop in the kernel
//! or a context switch: system time. Interrupt handlers run on the core,
//! not in a thread, and count for neither (as with the kernel's IRQ time
//! accounting).

use cint_policy::Nanos;
use cint_report::{
    FioDirection, FioHistogram, FioJobData, FioSync, JobResult, LatencyHistogram, ModeChoices,
    StrategyResult, WarmupTally,
};
use cint_scenario::Strategy;

use crate::world::{Activity, Request, Thread, World};

/// Run-wide counters of the measured window.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    /// Device interrupts fired (all kinds).
    pub interrupts: u64,
    /// Urgent-only interrupts.
    pub urgent_interrupts: u64,
}

/// One job's measurements.
#[derive(Debug)]
pub(crate) struct JobStats {
    pub name: String,
    pub hist: LatencyHistogram,
    pub ios: u64,
    pub bytes: u64,
    pub read: DirectionStats,
    pub write: DirectionStats,
    /// `fsync` and `fdatasync` calls.
    sync_ios: u64,
    /// The `fsync` calls among them (fio's `total_ios` counts only these).
    fsync_ios: u64,
    sync_lat: FioHistogram,
    /// Under `mode-select`: the completion modes chosen.
    modes: ModeChoices,
    /// What it completed before its window opened, and under
    /// `mode-select` the modes it chose then.
    ramp: WarmupTally,
    ramp_modes: ModeChoices,
}

/// One direction's measurements in fio's terms.
#[derive(Debug, Default)]
pub(crate) struct DirectionStats {
    ios: u64,
    bytes: u64,
    slat: FioHistogram,
    clat: FioHistogram,
    lat: FioHistogram,
}

impl DirectionStats {
    fn summary(&self) -> FioDirection {
        FioDirection {
            ios: self.ios,
            bytes: self.bytes,
            slat: self.slat.summary(),
            clat: self.clat.summary(),
            lat: self.lat.summary(),
        }
    }
}

impl JobStats {
    pub(crate) fn new(name: &str) -> Self {
        JobStats {
            name: name.to_string(),
            hist: LatencyHistogram::new(),
            ios: 0,
            bytes: 0,
            read: DirectionStats::default(),
            write: DirectionStats::default(),
            sync_ios: 0,
            fsync_ios: 0,
            sync_lat: FioHistogram::new(),
            modes: ModeChoices::default(),
            ramp: WarmupTally::default(),
            ramp_modes: ModeChoices::default(),
        }
    }

    /// A request of `bytes` completed in the job's warm-up.
    pub(crate) fn record_in_ramp(&mut self, write: bool, bytes: u64) {
        self.ramp.request(write, bytes);
    }

    /// Under `mode-select`, a wait chosen as `choice`, in the job's
    /// window (`measured`) or in its warm-up.
    pub(crate) fn count_choice(
        &mut self,
        choice: cint_policy::mode_select::CompletionChoice,
        measured: bool,
    ) {
        if measured {
            self.modes.count(choice);
        } else {
            self.ramp_modes.count(choice);
        }
    }

    /// An `fsync` or `fdatasync` call returned in the job's warm-up.
    pub(crate) fn record_sync_in_ramp(&mut self, datasync: bool) {
        self.ramp.sync(datasync);
    }

    /// The job's figures when it ended within its warm-up, as fio gives
    /// them ([`WarmupTally`]): its warm-up's counts, and no latency
    /// sample.
    pub(crate) fn over_ramp(&self) -> JobStats {
        let r = self.ramp;
        let mut stats = JobStats::new(&self.name);
        stats.ios = r.total_ios();
        stats.bytes = r.total_bytes();
        (stats.read.ios, stats.read.bytes) = (r.ios[0], r.bytes[0]);
        (stats.write.ios, stats.write.bytes) = (r.ios[1], r.bytes[1]);
        (stats.sync_ios, stats.fsync_ios) = (r.sync_ios, r.fsync_ios);
        stats.modes = self.ramp_modes;
        stats
    }

    /// An `fsync` or `fdatasync` call took `lat` from entry to return.
    pub(crate) fn record_sync(&mut self, lat: Nanos, datasync: bool) {
        self.sync_ios += 1;
        self.fsync_ios += u64::from(!datasync);
        self.sync_lat.record(lat);
    }

    /// Request `r` handed to the application at `now`; `sync`: fio takes
    /// no submission latency for it (a synchronous engine, or an SQ-polled
    /// ring, where fio sets `disable_slat`), and its completion latency
    /// runs from its issue.
    pub(crate) fn record(&mut self, r: &Request, now: Nanos, sync: bool) {
        let lat = r.latency_at(now);
        self.hist.record(lat);
        self.ios += 1;
        self.bytes += r.bytes;
        let d = if r.write {
            &mut self.write
        } else {
            &mut self.read
        };
        d.ios += 1;
        d.bytes += r.bytes;
        d.lat.record(lat);
        if sync {
            d.clat.record(now - r.issued);
        } else {
            d.slat
                .record(r.submitted - r.issued + Nanos::from(r.waited));
            d.clat.record(now - r.submitted);
        }
    }

    /// The run's warm-up is over: what was measured before is dropped.
    /// The job's own warm-up counts stay, for a job that ends within it.
    pub(crate) fn reset(&mut self) {
        let (ramp, ramp_modes) = (self.ramp, self.ramp_modes);
        *self = JobStats::new(&self.name);
        (self.ramp, self.ramp_modes) = (ramp, ramp_modes);
    }
}

impl Thread {
    /// The part of `elapsed` ns, just run by this thread, that was
    /// user-mode work. Called before the burst's remainder is reduced.
    pub(crate) fn user_share(&mut self, elapsed: Nanos) -> Nanos {
        match self.act {
            Activity::Busy => elapsed,
            Activity::Burst { left, .. } => {
                // Kernel work added in front of a think burst (the context
                // switch that gave the core back) runs first; the user
                // work is the burst's last `user_left` ns.
                let kernel_first = left.saturating_sub(self.user_left);
                let user = elapsed.saturating_sub(kernel_first).min(self.user_left);
                self.user_left -= user;
                user
            }
            // A ring's thread spins on its completion ring in user space.
            Activity::Spin { .. } if self.prog.sqpoll => elapsed,
            Activity::Spin { .. } => 0,
        }
    }
}

impl World<'_> {
    /// The strategy's entry of the result document.
    pub(crate) fn summarise(&self, strategy: &Strategy) -> StrategyResult {
        let window = (self.now() - self.window_start).max(1);
        let secs = window as f64 / 1e9;
        let jobs = self
            .jobs
            .iter()
            .enumerate()
            .map(|(j, stats)| {
                // A job that ended within its warm-up reports what it did
                // in it, as fio does.
                let over_ramp;
                let stats = if self.ended_in_ramp(j) {
                    over_ramp = stats.over_ramp();
                    &over_ramp
                } else {
                    stats
                };
                // A job's rates are over its own measured window: later
                // groups, start delays and early ends make it shorter than
                // the run's (fio reports each job over its own runtime).
                let (from, to) = self.job_window(j);
                let job_window = (to - from).max(1);
                let job_secs = job_window as f64 / 1e9;
                let (cpu, usr, ctx, wakeups, threads) = (0..self.threads.len())
                    .filter(|&t| self.threads[t].job as usize == j)
                    // A job whose window has no length (it started too
                    // late) used nothing in it.
                    .map(|t| {
                        let counts = if to > from {
                            self.counts_of_job(t)
                        } else {
                            crate::workload::ThreadCounts::default()
                        };
                        (&self.threads[t], counts)
                    })
                    .fold((0u64, 0u64, 0u64, 0u64, 0u32), |(c, u, x, w, n), (t, k)| {
                        (
                            c + k.cpu_ns,
                            u + k.usr_ns,
                            x + k.ctx_switches,
                            w + k.wakeups,
                            // fio's threads of the job: an offload
                            // worker is one's helper and an SQ thread
                            // the kernel's, not threads of it.
                            n + u32::from(
                                t.prog.role == crate::workload::LoopRole::Inline
                                    || t.prog.role == crate::workload::LoopRole::Dispatcher,
                            ),
                        )
                    });
                let sync_lat = stats.sync_lat.summary();
                JobResult {
                    name: stats.name.clone(),
                    ios: stats.ios,
                    iops: stats.ios as f64 / job_secs,
                    bw_bytes: (stats.bytes as f64 / job_secs) as u64,
                    // Over the job's window too, as its rates are and as
                    // fio reports its threads' CPU.
                    cpu_util: cpu as f64 / job_window as f64,
                    context_switches: ctx,
                    wakeups,
                    lat_ns: stats.hist.stats(),
                    sync: cint_report::SyncCalls::from_fio(stats.sync_ios, &sync_lat, job_secs),
                    fio: Some(FioJobData {
                        threads,
                        runtime_ns: job_window,
                        usr_ns: usr,
                        sys_ns: cpu - usr,
                        read: stats.read.summary(),
                        write: stats.write.summary(),
                        sync: FioSync {
                            ios: stats.sync_ios,
                            fsync_ios: stats.fsync_ios,
                            lat: sync_lat,
                        },
                        error: self.job_error(j),
                        steadystate: cint_report::FioSteadyState::of(&self.steady[j]),
                    }),
                    trace: self.trace_result(j),
                    modes: self.selector.is_some().then_some(stats.modes),
                }
            })
            .collect::<Vec<_>>();
        let mut jobs = jobs;
        jobs.extend(self.app_results(window));
        let busy: u64 = self.cores.iter().map(|c| c.irq_ns + c.thread_ns).sum();
        let energy = self.energy_summary();
        StrategyResult {
            strategy: strategy.name.clone(),
            kind: strategy.kind().to_string(),
            interrupts: self.counters.interrupts,
            interrupts_per_s: self.counters.interrupts as f64 / secs,
            urgent_interrupts: self.counters.urgent_interrupts,
            cpu_util: busy as f64 / (window as f64 * self.cores.len() as f64),
            context_switches: self.cores.iter().map(|c| c.ctx_switches).sum(),
            wakeups: self.threads.iter().map(|t| t.counts.wakeups).sum(),
            energy_j: energy.as_ref().map(|e| e.0),
            energy: energy.map(|e| e.1),
            virt: self.virt_summary(secs),
            jobs,
        }
    }
}
