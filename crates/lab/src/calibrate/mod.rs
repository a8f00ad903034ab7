//! Choosing `delta` and `thr` for a device: docs/MODEL.md experiment 7, the
//! method of the cinterrupts paper.
//!
//! 1. Measure the completion inter-arrival distribution of libaio 4 KiB
//!    random reads at iodepth 256, without batching and with batches of 16
//!    (strategy `none`, so nothing delays completions).
//! 2. **delta rule**: the larger of the two workloads' inter-arrival times
//!    at the chosen percentile (default the 99th; 90th to 99th allowed),
//!    read among the gaps inside bursts when a workload's gaps form two
//!    populations (bursts and the pauses between them), rounded up to a
//!    whole microsecond. Completions closer than `delta` belong to one
//!    burst; a longer gap ends it ([`rules`]).
//! 3. Sweep `thr` over 1..256 with the adaptive strategy at that `delta` on
//!    the batched workload.
//! 4. **thr rule**: the IOPS plateau is the last run of consecutive `thr`
//!    values whose IOPS are within `tolerance` (default 2%) of the best of
//!    the sweep; the recommendation is its smallest `thr` whose CPU time
//!    per I/O is within the same tolerance of the plateau's lowest
//!    ([`rules::recommend_thr`]).
//! 5. Where a recommendation differs from the device profile's reference
//!    value, the report says so and why, from the same measurements
//!    ([`advice`]).

mod advice;
pub mod rules;

use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;

use cint_policy::config::AdaptiveParams;
use cint_policy::{Nanos, PolicyConfig};
use cint_report::{EngineError, ErrorKind, LatencyHistogram};
use cint_scenario::{
    CompletionMode, DeviceProfile, EmuConfig, Engine, HostProfile, IoJob, Job, Rw, Scenario,
    Strategy, Work,
};

use crate::plot::{write_line_chart, Legend, LineChart, PlotArgs, PlotError, Series};
use crate::runner::{GapProbe, Runner};
use rules::{GapReading, ThrBasis, ThrSample};

/// The `thr` values swept by default: powers of two and the steps between.
pub const DEFAULT_THR: [u32; 14] = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];

/// Percentiles shown in the inter-arrival table.
pub const GAP_PERCENTILES: [f64; 6] = [50.0, 90.0, 95.0, 98.0, 99.0, 99.9];

/// What to calibrate and how.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrateArgs {
    /// Built-in device profile.
    pub device: String,
    /// Built-in host profile.
    pub host: String,
    /// Percentile of the inter-arrival time `delta` is read at, 90..=99.
    pub percentile: f64,
    /// `thr` values to sweep (1..=256, at least two).
    pub thr_values: Vec<u32>,
    /// Plateau tolerance as a fraction of the best IOPS (0 < t < 0.5).
    pub tolerance: f64,
    /// Requests per submission and per reap in the batched workload.
    pub batch: u32,
    /// Measured time of every run.
    pub duration: Nanos,
    /// Warm-up of every run.
    pub warmup: Nanos,
    /// Seed of every run.
    pub seed: u64,
    /// Where to write the two plots, if anywhere.
    pub plot: Option<PlotArgs>,
    /// A `delta` to use instead of measuring one: skips step 1 and 2 (for
    /// engines without the inter-arrival hook, or to sweep `thr` at the
    /// paper's `delta`).
    pub delta: Option<Nanos>,
}

impl CalibrateArgs {
    /// The paper's method for a device on a host: 99th percentile, 2%
    /// plateau, batches of 16, 100 ms runs after 10 ms warm-up, seed 1.
    pub fn new(device: &str, host: &str) -> CalibrateArgs {
        CalibrateArgs {
            device: device.into(),
            host: host.into(),
            percentile: 99.0,
            thr_values: DEFAULT_THR.to_vec(),
            tolerance: 0.02,
            batch: 16,
            duration: 100_000_000,
            warmup: 10_000_000,
            seed: 1,
            plot: None,
            delta: None,
        }
    }
}

/// Why calibration stopped. Displays as one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CalibrateError {
    /// An argument is out of range or a profile is unknown.
    BadArgs(String),
    /// The engine could not measure inter-arrival times.
    Probe {
        /// Which workload.
        workload: String,
        /// The engine's error, its kind kept for the exit status.
        error: EngineError,
    },
    /// The `thr` sweep failed.
    Run(EngineError),
    /// Writing a plot failed.
    Plot(PlotError),
}

impl fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = |s: &str| s.lines().next().unwrap_or("").to_string();
        match self {
            CalibrateError::BadArgs(m) => write!(f, "calibrate: {}", line(m)),
            CalibrateError::Probe { workload, error } => {
                write!(
                    f,
                    "calibrate: measuring inter-arrival times ({workload}): {}",
                    line(&error.to_string())
                )
            }
            CalibrateError::Run(e) => write!(f, "calibrate: thr sweep: {}", line(&e.to_string())),
            CalibrateError::Plot(e) => write!(f, "calibrate: writing the plots: {e}"),
        }
    }
}

impl std::error::Error for CalibrateError {}

impl CalibrateError {
    /// An engine bug or a failed plot is internal; bad arguments and an
    /// engine refusing the workload are refused input.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CalibrateError::BadArgs(_) => ErrorKind::Input,
            CalibrateError::Probe { error, .. } | CalibrateError::Run(error) => error.kind,
            CalibrateError::Plot(_) => ErrorKind::Internal,
        }
    }
}

/// The inter-arrival distribution of one workload.
#[derive(Clone, Debug, PartialEq)]
pub struct GapSummary {
    /// Which workload, e.g. `batches of 16`.
    pub workload: String,
    /// Completions measured.
    pub completions: u64,
    /// `(percentile, ns)` for [`GAP_PERCENTILES`].
    pub percentiles: Vec<(f64, u64)>,
    /// The gap at the chosen percentile, ns, as the delta rule reads it
    /// (within bursts when the overall percentile is a pause between
    /// them).
    pub at_chosen: u64,
    /// How the chosen percentile was read.
    pub reading: GapReading,
    /// Fraction of the gaps the rule reads (those inside bursts, when the
    /// gaps have two populations) longer than the profile's reference
    /// `delta`: each would end a burst at that `delta`.
    pub above_reference: f64,
    /// CDF points `(ns, percent)`, for the plot.
    pub cdf: Vec<(u64, f64)>,
}

impl GapSummary {
    fn from_histogram(
        workload: &str,
        hist: &LatencyHistogram,
        chosen: f64,
        reference_delta: Nanos,
    ) -> GapSummary {
        let h = hist.histogram();
        let reading = rules::read_gaps(hist, chosen);
        let population_end = reading
            .split
            .filter(|_| reading.within_bursts())
            .map_or(u64::MAX, |s| s.split_ns);
        let (mut read, mut above) = (0u64, 0u64);
        for v in h.iter_recorded() {
            let value = v.value_iterated_to();
            if value <= population_end {
                read += v.count_at_value();
                if value > reference_delta {
                    above += v.count_at_value();
                }
            }
        }
        let mut cdf = vec![(h.min(), 0.0)];
        let mut grid: Vec<f64> = (1..100).map(f64::from).collect();
        grid.extend([99.5, 99.9]);
        cdf.extend(grid.iter().map(|&p| (h.value_at_percentile(p), p)));
        cdf.push((h.max(), 100.0));
        GapSummary {
            workload: workload.into(),
            completions: h.len(),
            percentiles: GAP_PERCENTILES
                .iter()
                .map(|&p| (p, h.value_at_percentile(p)))
                .collect(),
            at_chosen: reading.used_ns,
            reading,
            above_reference: if read > 0 {
                above as f64 / read as f64
            } else {
                0.0
            },
            cdf,
        }
    }
}

/// One `thr` of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct ThrPoint {
    /// The threshold.
    pub thr: u32,
    /// Total IOPS.
    pub iops: f64,
    /// Interrupts per second.
    pub interrupts_per_s: f64,
    /// Mean latency, ns.
    pub lat_mean_ns: f64,
    /// 99th percentile latency, ns.
    pub lat_p99_ns: u64,
    /// Busy fraction of the application core.
    pub cpu_util: f64,
}

impl ThrPoint {
    /// CPU time of the application core per I/O, ns (0 without IOPS).
    pub fn cpu_ns_per_io(&self) -> f64 {
        if self.iops > 0.0 {
            self.cpu_util * 1e9 / self.iops
        } else {
            0.0
        }
    }

    fn sample(&self) -> ThrSample {
        ThrSample {
            thr: self.thr,
            iops: self.iops,
            cpu_ns_per_io: self.cpu_ns_per_io(),
        }
    }
}

/// The recommendation and its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Device profile.
    pub device: String,
    /// Host profile.
    pub host: String,
    /// The percentile `delta` was read at.
    pub percentile: f64,
    /// Without and with batching.
    pub gaps: Vec<GapSummary>,
    /// Recommended `delta`.
    pub delta: Nanos,
    /// The sweep, in `thr` order.
    pub sweep: Vec<ThrPoint>,
    /// The plateau tolerance used.
    pub tolerance: f64,
    /// Recommended `thr`.
    pub thr: u32,
    /// Which criterion decided `thr`.
    pub thr_basis: ThrBasis,
    /// The profile's (the paper's) `delta`.
    pub reference_delta: Nanos,
    /// The profile's (the paper's) `thr`.
    pub reference_thr: u32,
    /// Plots written.
    pub plots: Vec<PathBuf>,
}

fn workload(
    args: &CalibrateArgs,
    batch: u32,
    strategies: Vec<Strategy>,
    name: &str,
) -> Result<Scenario, CalibrateError> {
    let device = DeviceProfile::builtin(&args.device).ok_or_else(|| {
        CalibrateError::BadArgs(format!(
            "unknown device profile '{}' (known: {})",
            args.device,
            cint_scenario::profiles::DEVICE_MODELS.join(", ")
        ))
    })?;
    let mut host = HostProfile::builtin(&args.host).ok_or_else(|| {
        CalibrateError::BadArgs(format!(
            "unknown host profile '{}' (known: {})",
            args.host,
            cint_scenario::profiles::HOST_MODELS.join(", ")
        ))
    })?;
    host.cores = 1;
    // One core, one hardware thread: no SMT sibling.
    host.smt = None;
    let size = device.capacity.0;
    Ok(Scenario {
        name: name.into(),
        source: "<calibrate>".into(),
        seed: args.seed,
        duration: args.duration,
        warmup: args.warmup,
        run_to_end: false,
        device,
        host,
        strategies,
        jobs: vec![Job {
            name: "async".into(),
            cpu: 0,
            cpus: Vec::new(),
            numjobs: 1,
            runtime: None,
            work: Work::Io(IoJob {
                engine: Engine::Libaio,
                rw: Rw::RandRead,
                bs: 4096,
                iodepth: 256,
                batch,
                batch_complete_min: batch,
                batch_complete_max: batch,
                iodepth_low: 256,
                hint: None,
                nowait: false,
                hipri: false,
                direct: true,
                fadvise_hint: true,
                gtod_reduce: false,
                offload: false,
                sqpoll: None,
                rate_iops: None,
                think: 0,
                size,
                rwmixread: 100,
                shape: Default::default(),
            }),
            schedule: Default::default(),
            guest: None,
        }],
        emu: EmuConfig::default(),
        virt: Default::default(),
        apps: Default::default(),
        sched_groups: Default::default(),
        origins: Default::default(),
    })
}

fn check(args: &CalibrateArgs) -> Result<(), CalibrateError> {
    let bad = |m: String| Err(CalibrateError::BadArgs(m));
    if !(90.0..=99.0).contains(&args.percentile) {
        return bad(format!("percentile {} is outside 90..=99", args.percentile));
    }
    if !(args.tolerance > 0.0 && args.tolerance < 0.5) {
        return bad(format!(
            "plateau tolerance {} is outside (0, 0.5)",
            args.tolerance
        ));
    }
    if args.thr_values.len() < 2 || args.thr_values.iter().any(|&t| !(1..=256).contains(&t)) {
        return bad("thr values must be at least two, each in 1..=256".into());
    }
    if args.thr_values.windows(2).any(|w| w[0] >= w[1]) {
        return bad("thr values must be strictly increasing".into());
    }
    if !(2..=256).contains(&args.batch) {
        return bad(format!("batch {} is outside 2..=256", args.batch));
    }
    if args.delta == Some(0) {
        return bad("a given delta must be positive".into());
    }
    if args.duration == 0 {
        return bad("duration must be positive".into());
    }
    // Every time of a scenario is at most an hour (docs/SCENARIO-KEYS.md).
    for (option, ns) in [
        ("--duration", Some(args.duration)),
        ("--warmup", Some(args.warmup)),
        ("--delta", args.delta),
    ] {
        if let Some(why) = ns.and_then(cint_scenario::past_an_hour) {
            return bad(format!("{option} {why}"));
        }
    }
    Ok(())
}

/// Runs the method: two inter-arrival measurements through `probe`, one
/// `thr` sweep through `runner`, then the plots if asked.
pub fn calibrate(
    probe: &dyn GapProbe,
    runner: &dyn Runner,
    args: &CalibrateArgs,
) -> Result<Calibration, CalibrateError> {
    check(args)?;
    let none = vec![Strategy {
        name: "none".into(),
        mode: CompletionMode::Interrupt(PolicyConfig::None),
        interrupts: PolicyConfig::None,
    }];
    let mut gaps = Vec::new();
    let measured = [
        (1, "no batching".to_string()),
        (args.batch, format!("batches of {}", args.batch)),
    ];
    for (batch, label) in measured.into_iter().filter(|_| args.delta.is_none()) {
        let scenario = workload(args, batch, none.clone(), "calibrate-gaps")?;
        let reference_delta = scenario.device.reference_delta.0;
        let hist = probe
            .completion_gaps(&scenario)
            .map_err(|error| CalibrateError::Probe {
                workload: label.clone(),
                error,
            })?;
        if hist.is_empty() {
            return Err(CalibrateError::Probe {
                workload: label,
                error: EngineError::input("no completions measured"),
            });
        }
        gaps.push(GapSummary::from_histogram(
            &label,
            &hist,
            args.percentile,
            reference_delta,
        ));
    }
    let delta = args
        .delta
        .unwrap_or_else(|| rules::recommend_delta(gaps.iter().map(|g| g.at_chosen)));

    let strategies = args
        .thr_values
        .iter()
        .map(|&thr| Strategy {
            name: format!("thr{thr}"),
            mode: CompletionMode::Interrupt(PolicyConfig::Adaptive(AdaptiveParams { delta, thr })),
            interrupts: PolicyConfig::None,
        })
        .collect();
    let scenario = workload(args, args.batch, strategies, "calibrate-thr")?;
    let result = runner.run(&scenario).map_err(CalibrateError::Run)?;
    if result.results.len() != args.thr_values.len() {
        return Err(CalibrateError::Run(EngineError::internal(format!(
            "the engine returned {} strategies for {} thr values",
            result.results.len(),
            args.thr_values.len()
        ))));
    }
    let sweep: Vec<ThrPoint> = args
        .thr_values
        .iter()
        .zip(&result.results)
        .map(|(&thr, s)| {
            let job = s.jobs.first();
            ThrPoint {
                thr,
                iops: s.total_iops(),
                interrupts_per_s: s.interrupts_per_s,
                lat_mean_ns: job.map_or(0.0, |j| j.lat_ns.mean),
                lat_p99_ns: job.and_then(|j| j.lat_ns.at(99.0)).unwrap_or(0),
                cpu_util: s.cpu_util,
            }
        })
        .collect();
    let samples: Vec<ThrSample> = sweep.iter().map(ThrPoint::sample).collect();
    let (thr, thr_basis) = rules::recommend_thr(&samples, args.tolerance)
        .ok_or_else(|| CalibrateError::Run(EngineError::input("the sweep produced no IOPS")))?;

    let mut calibration = Calibration {
        device: args.device.clone(),
        host: args.host.clone(),
        percentile: args.percentile,
        gaps,
        delta,
        sweep,
        tolerance: args.tolerance,
        thr,
        thr_basis,
        reference_delta: scenario.device.reference_delta.0,
        reference_thr: scenario.device.reference_thr,
        plots: Vec::new(),
    };
    if let Some(plot) = &args.plot {
        calibration.plots = write_plots(&calibration, plot).map_err(CalibrateError::Plot)?;
    }
    Ok(calibration)
}

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

impl Calibration {
    /// The recommendation with its evidence, as printed by
    /// `cint calibrate` (the plots written are in [`Calibration::plots`],
    /// not in the report, which stays the same wherever they went).
    pub fn report(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Calibration of {} on {} (the cinterrupts paper's method, docs/WORKFLOW.md)",
            self.device, self.host
        );
        let _ = writeln!(out);
        if self.gaps.is_empty() {
            let _ = writeln!(
                out,
                "delta = {} us: given, inter-arrival times not measured (reference: {} us)",
                us(self.delta as f64),
                us(self.reference_delta as f64)
            );
        } else {
            self.write_gaps(&mut out);
        }
        self.write_sweep(&mut out);
        let _ = writeln!(out);
        for line in advice::advise(self) {
            let _ = writeln!(out, "{line}");
        }
        out
    }

    fn write_gaps(&self, out: &mut String) {
        let pct = format_pct(self.percentile);
        let _ = writeln!(out, "Completion inter-arrival times, libaio 4 KiB random read, iodepth 256, strategy none (us):");
        let mut header = format!("{:<16} {:>11}", "workload", "completions");
        for p in GAP_PERCENTILES {
            header.push_str(&format!(" {:>8}", format!("p{}", format_pct(p))));
        }
        let _ = writeln!(out, "{header}");
        for g in &self.gaps {
            let mut row = format!("{:<16} {:>11}", g.workload, g.completions);
            for (_, v) in &g.percentiles {
                row.push_str(&format!(" {:>8}", us(*v as f64)));
            }
            let _ = writeln!(out, "{row}");
        }
        for g in &self.gaps {
            if let (Some(split), true) = (g.reading.split, g.reading.within_bursts()) {
                let _ = writeln!(
                    out,
                    "{}: two populations, {:.1}% of the gaps inside bursts (median {} us) and \
                     {:.1}% pauses between them (median {} us); p{pct} overall ({} us) is a \
                     pause, so it is read inside bursts: {} us",
                    g.workload,
                    split.within_fraction * 100.0,
                    us(split.within_median_ns as f64),
                    (1.0 - split.within_fraction) * 100.0,
                    us(split.between_median_ns as f64),
                    us(g.reading.overall_ns as f64),
                    us(g.at_chosen as f64),
                );
            }
        }
        let _ = writeln!(
            out,
            "delta = {} us: the largest p{pct} inter-arrival time{}, rounded up to a whole \
             microsecond (reference: {} us)",
            self.delta / 1_000,
            if self.gaps.iter().any(|g| g.reading.within_bursts()) {
                " (inside bursts where a workload pauses between them)"
            } else {
                ""
            },
            us(self.reference_delta as f64)
        );
        let _ = writeln!(out);
    }

    fn write_sweep(&self, out: &mut String) {
        let best = self.sweep.iter().map(|p| p.iops).fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "thr sweep, adaptive at delta = {} us, libaio iodepth 256 in batches:",
            self.delta / 1_000
        );
        let _ = writeln!(
            out,
            "{:>5} {:>10} {:>8} {:>10} {:>12} {:>10} {:>7} {:>10}",
            "thr", "kIOPS", "of best", "kIRQ/s", "mean lat us", "p99 us", "CPU %", "CPU ns/IO"
        );
        for p in &self.sweep {
            let mark = if p.thr == self.thr {
                "  <- recommended"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{:>5} {:>10.1} {:>7.1}% {:>10.1} {:>12} {:>10} {:>7.1} {:>10.0}{mark}",
                p.thr,
                p.iops / 1e3,
                if best > 0.0 {
                    p.iops / best * 100.0
                } else {
                    0.0
                },
                p.interrupts_per_s / 1e3,
                us(p.lat_mean_ns),
                us(p.lat_p99_ns as f64),
                p.cpu_util * 100.0,
                p.cpu_ns_per_io()
            );
        }
        let floor = format_pct(100.0 - self.tolerance * 100.0);
        let tol = format_pct(self.tolerance * 100.0);
        let rule = match self.thr_basis {
            ThrBasis::Iops => format!(
                "the smallest thr of the last run of thr values with at least {floor}% of the \
                 best IOPS; its CPU per I/O is already within {tol}% of the run's lowest"
            ),
            ThrBasis::Cpu => format!(
                "IOPS are within {tol}% of the best earlier, but CPU per I/O comes within {tol}% \
                 of the lowest of that run only from this thr on"
            ),
            ThrBasis::IopsOnlyNoCpu => format!(
                "the smallest thr of the last run of thr values with at least {floor}% of the \
                 best IOPS (the engine measured no CPU time, so IOPS alone decided)"
            ),
        };
        let _ = writeln!(
            out,
            "thr = {}: {rule} (reference: {})",
            self.thr, self.reference_thr
        );
    }
}

fn format_pct(p: f64) -> String {
    let s = format!("{p:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn write_plots(c: &Calibration, plot: &PlotArgs) -> Result<Vec<PathBuf>, PlotError> {
    let gap_series = c
        .gaps
        .iter()
        .enumerate()
        .map(|(i, g)| {
            Series::nth(
                i,
                g.workload.clone(),
                g.cdf
                    .iter()
                    .map(|&(ns, p)| (ns.max(1) as f64 / 1e3, p))
                    .collect(),
            )
        })
        .collect();
    let cdf = LineChart {
        title: format!(
            "Completion inter-arrival CDF — {}, libaio iodepth 256",
            c.device
        ),
        x_desc: "time since the previous completion (µs)".into(),
        y_desc: "completions at or below (%)".into(),
        x_log: true,
        x_names: None,
        series: gap_series,
        legend: Legend::Series,
        markers: vec![(
            c.delta as f64 / 1e3,
            format!(
                "delta = {} µs (p{})",
                c.delta / 1_000,
                format_pct(c.percentile)
            ),
        )],
    };
    let mut written = Vec::new();
    if !c.gaps.is_empty() {
        written.extend(write_line_chart(
            &cdf,
            &plot.out_dir,
            "calibrate_interarrival_cdf",
            &plot.formats,
        )?);
    }
    let best = c.sweep.iter().map(|p| p.iops).fold(0.0, f64::max);
    let position = |thr: u32| c.sweep.iter().position(|p| p.thr == thr).unwrap_or(0) as f64;
    let sweep = LineChart {
        title: format!(
            "IOPS vs thr — {}, adaptive at delta = {} µs",
            c.device,
            c.delta / 1_000
        ),
        x_desc: "thr (completions per interrupt)".into(),
        y_desc: "IOPS (thousands)".into(),
        x_log: false,
        x_names: Some(c.sweep.iter().map(|p| p.thr.to_string()).collect()),
        series: vec![
            Series::nth(
                0,
                "IOPS",
                c.sweep
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (i as f64, p.iops / 1e3))
                    .collect(),
            ),
            Series::nth(
                1,
                format!("best − {}%", format_pct(c.tolerance * 100.0)),
                vec![
                    (0.0, best * (1.0 - c.tolerance) / 1e3),
                    ((c.sweep.len() - 1) as f64, best * (1.0 - c.tolerance) / 1e3),
                ],
            ),
        ],
        legend: Legend::Series,
        markers: vec![(position(c.thr), format!("thr = {}", c.thr))],
    };
    written.extend(write_line_chart(
        &sweep,
        &plot.out_dir,
        "calibrate_thr_sweep",
        &plot.formats,
    )?);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::fake_run;

    /// Unbatched: gaps spread evenly over 1..3 us. Batched: bursts of
    /// `batch` completions 200 ns apart, separated by 5.0..5.5 us.
    fn fake_gaps(s: &Scenario) -> Result<LatencyHistogram, EngineError> {
        let Work::Io(io) = &s.jobs[0].work else {
            return Err(EngineError::input("not an I/O job"));
        };
        if s.strategies.len() != 1 || s.strategies[0].kind() != "none" {
            return Err(EngineError::input("gaps are measured under `none` only"));
        }
        let mut h = LatencyHistogram::new();
        for i in 0..10_000u64 {
            if io.batch == 1 {
                h.record(1_000 + i % 2_001);
            } else if i % u64::from(io.batch) == 0 {
                h.record(5_000 + i % 501);
            } else {
                h.record(200);
            }
        }
        Ok(h)
    }

    #[test]
    fn the_method_on_a_fake_engine() {
        let dir = std::env::temp_dir().join(format!("cint-lab-{}-calibrate", std::process::id()));
        let mut args = CalibrateArgs::new("optane-p4800x", "xeon-e5-2660v4");
        args.plot = Some(PlotArgs::new(&dir));
        let c = calibrate(&fake_gaps, &fake_run, &args).expect("calibrates");
        // Batched p99 overall is one of the 5.0..5.5 us pauses between
        // bursts: the rule reads it inside bursts (200 ns), and the
        // unbatched 1..3 us gaps decide: delta 3 us.
        let batched = &c.gaps[1].reading;
        assert!(
            batched.overall_ns > 5_000 && batched.overall_ns <= 5_500,
            "{batched:?}"
        );
        assert!(batched.within_bursts() && c.gaps[1].at_chosen <= 200);
        assert!(!c.gaps[0].reading.within_bursts());
        assert_eq!(c.delta, 3_000);
        // No unbatched gap reaches the reference 6 us: it is longer than
        // the gaps need.
        assert_eq!(c.gaps[0].above_reference, 0.0);
        // The fake's IOPS are 1e9 / (2000 + 1000 / thr) ns: within 2% of
        // thr=256 from thr >= 22.3, so 24 on the default grid.
        assert_eq!(c.thr, 24);
        assert_eq!(c.sweep.len(), DEFAULT_THR.len());
        assert_eq!((c.reference_delta, c.reference_thr), (6_000, 32));
        let report = c.report();
        assert!(report.contains("delta = 3 us"), "{report}");
        assert!(
            report.contains("batches of 16: two populations, 93.8% of the gaps inside bursts"),
            "{report}"
        );
        assert!(report.contains("thr = 24:"), "{report}");
        assert!(
            report.contains("delta 3.00 us differs from the profile's reference 6.00 us"),
            "{report}"
        );
        assert!(
            report.contains(
                "thr 24 differs from the profile's reference 32: the reference also qualifies"
            ),
            "{report}"
        );
        assert!(report.contains("   24 ") && report.contains("<- recommended"));
        assert_eq!(c.plots.len(), 4);
        assert!(c.plots.iter().all(|p| p.exists()));
        // The report is the same wherever the plots went: the binary names
        // them on stderr.
        assert!(!report.contains(&dir.display().to_string()), "{report}");
        let svg = std::fs::read_to_string(dir.join("calibrate_thr_sweep.svg")).expect("svg");
        assert!(svg.contains("thr = 24"));
        if std::env::var_os("CINT_LAB_KEEP_PLOTS").is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }

        args.plot = None;
        args.tolerance = 0.05;
        args.percentile = 90.0;
        let c = calibrate(&fake_gaps, &fake_run, &args).expect("calibrates");
        assert_eq!(c.thr, 12, "within 5% from thr >= 9.1");
        // p90 of the batched workload falls in the 200 ns run: the unbatched 2.8 us gap wins.
        assert!(!c.gaps[1].reading.within_bursts());
        assert_eq!(c.delta, 3_000);
    }

    #[test]
    fn a_given_delta_skips_the_measurement() {
        let never = |_: &Scenario| -> Result<LatencyHistogram, EngineError> {
            Err(EngineError::internal("not called"))
        };
        let dir = std::env::temp_dir().join(format!("cint-lab-{}-given", std::process::id()));
        let args = CalibrateArgs {
            delta: Some(15_000),
            plot: Some(PlotArgs::new(&dir)),
            ..CalibrateArgs::new("p3700", "xeon-e5-2660v4")
        };
        let c = calibrate(&never, &fake_run, &args).expect("thr sweep only");
        assert!(c.gaps.is_empty());
        assert_eq!((c.delta, c.thr, c.reference_delta), (15_000, 24, 15_000));
        assert!(c.report().contains("delta = 15.00 us: given"));
        let stems: Vec<String> = c
            .plots
            .iter()
            .filter_map(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(stems, ["calibrate_thr_sweep", "calibrate_thr_sweep"]);
        let _ = std::fs::remove_dir_all(&dir);
        let zero = CalibrateArgs {
            delta: Some(0),
            ..args
        };
        assert!(calibrate(&never, &fake_run, &zero).is_err());
    }

    #[test]
    fn bad_arguments_and_engine_failures_are_one_line() {
        let base = CalibrateArgs::new("optane-p4800x", "xeon-e5-2660v4");
        let cases: Vec<(CalibrateArgs, &str)> = vec![
            (
                CalibrateArgs {
                    percentile: 80.0,
                    ..base.clone()
                },
                "percentile",
            ),
            (
                CalibrateArgs {
                    tolerance: 0.0,
                    ..base.clone()
                },
                "tolerance",
            ),
            (
                CalibrateArgs {
                    thr_values: vec![1, 512],
                    ..base.clone()
                },
                "thr values",
            ),
            (
                CalibrateArgs {
                    thr_values: vec![8, 4],
                    ..base.clone()
                },
                "increasing",
            ),
            (
                CalibrateArgs {
                    duration: 3_601 * 1_000_000_000,
                    ..base.clone()
                },
                "--duration must be at most 3600s (got 3601s)",
            ),
            (
                CalibrateArgs {
                    warmup: u64::MAX,
                    ..base.clone()
                },
                "--warmup must be at most 3600s",
            ),
            (
                CalibrateArgs {
                    device: "floppy".into(),
                    ..base.clone()
                },
                "unknown device profile 'floppy'",
            ),
            (
                CalibrateArgs {
                    host: "vax".into(),
                    ..base.clone()
                },
                "unknown host profile 'vax'",
            ),
        ];
        for (args, needle) in cases {
            let e = calibrate(&fake_gaps, &fake_run, &args).expect_err(needle);
            assert!(
                e.to_string().contains(needle) && !e.to_string().contains('\n'),
                "{e}"
            );
        }
        let no_probe = |_: &Scenario| -> Result<LatencyHistogram, EngineError> {
            Err(EngineError::input("not exposed\nby this engine"))
        };
        let e = calibrate(&no_probe, &fake_run, &base).expect_err("probe fails");
        assert_eq!(
            e.to_string(),
            "calibrate: measuring inter-arrival times (no batching): not exposed"
        );
        assert_eq!(e.kind(), ErrorKind::Input);
        let broken = |_: &Scenario| -> Result<cint_report::RunResult, EngineError> {
            Err(EngineError::internal("boom"))
        };
        let e = calibrate(&fake_gaps, &broken, &base).expect_err("run fails");
        assert_eq!(e.to_string(), "calibrate: thr sweep: boom");
        assert_eq!(e.kind(), ErrorKind::Internal, "the engine's kind is kept");
    }
}
