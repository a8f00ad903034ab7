//! Jobs that replay a block trace (`trace = "FILE"`, docs/TRACES.md): the
//! trace is read when the scenario is loaded (`cint-trace`), its streams
//! become the job's threads and its requests their issue lists, so that a
//! bad trace is refused at load time, naming the file and the record.
//!
//! Threads and cores: each stream of the trace (a blktrace process, an
//! iolog file, an MSR host's disk) is one thread, in order of first
//! appearance. A job with `cpus` spreads them over that list (thread n on
//! `cpus[n % len]`), one with `cpu` puts them all there; otherwise a
//! blktrace stream runs on the CPU of its first Q event, and the other
//! formats' on core 0. A trace CPU the host does not have is refused.
//!
//! Addresses: a request that ends beyond the device's capacity is refused,
//! or, with `trace_wrap = true`, moved to its offset modulo the capacity
//! (aligned down to 512 bytes), and to the last `bytes` of the device if
//! it still does not fit.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cint_policy::Nanos;
use cint_trace::{Format, Trace};

use crate::error::ScenarioError;
use crate::model::{IoJob, Job, Rw, Work};
use crate::profiles::{DeviceProfile, HostProfile};
use crate::section::Section;

/// I/O job keys a trace decides for itself: refused beside `trace`.
const DECIDED_BY_TRACE: &[&str] = &[
    "rw",
    "bs",
    "bssplit",
    "bsrange",
    "iodepth",
    "batch",
    "batch_complete_min",
    "batch_complete_max",
    "iodepth_low",
    "numjobs",
    "rate",
    "rate_iops",
    "rate_process",
    "number_ios",
    "io_size",
    "pass_size",
    "byte_limit",
    "rwmixread",
    "size",
    "thinktime",
    "flow",
    "ss",
    "latency_target",
    "norandommap",
    "random_generator",
    "random_distribution",
];

/// `trace_depth` when not given: requests in flight per thread at most.
pub const DEFAULT_TRACE_DEPTH: u32 = 32;

/// How a trace is replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMode {
    /// Each request is released at its trace time (from the trace's first
    /// request) divided by the speed, in parts per million: 1,000,000 is
    /// the trace's own pace, 2,000,000 twice as fast.
    Open {
        /// `trace_speed` x 10^6.
        speed_ppm: u64,
    },
    /// Each thread keeps `trace_depth` requests in flight, in trace order,
    /// as fast as they complete.
    Closed,
}

/// Where a trace job's threads run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A blktrace stream on its trace CPU; other streams on core 0.
    Trace,
    /// `cpu`: every thread on this core.
    Cpu(u32),
    /// `cpus`: thread n on entry n modulo the length.
    Cpus(Vec<u32>),
}

/// One request of a thread's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceIo {
    /// Open loop: release instant after the job's start (the trace time
    /// from its first request, scaled). Closed loop: the same value,
    /// unused by the replay.
    pub at: Nanos,
    /// Byte offset on the device (after `trace_wrap`).
    pub offset: u64,
    /// Size in bytes.
    pub bytes: u64,
    /// A write.
    pub write: bool,
    /// The trace's own latency of the request, where it has one.
    pub latency: Option<Nanos>,
}

/// One thread of a trace job: a stream of the trace.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceThread {
    /// The stream's name in the trace (`pid 42`, a file, `host/disk`).
    pub label: String,
    /// Its requests in trace order.
    pub ios: Vec<TraceIo>,
}

impl fmt::Debug for TraceThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TraceThread({}, {} requests)",
            self.label,
            self.ios.len()
        )
    }
}

/// A trace job's resolved replay.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceJob {
    /// The trace file as resolved (relative paths from the scenario's
    /// directory).
    pub path: PathBuf,
    /// The trace's format and version.
    pub format: Format,
    /// Its version (2 or 3, 7 or 8, 1).
    pub version: u8,
    /// `trace_format` was given (else detected).
    pub format_given: bool,
    /// Open or closed loop.
    pub mode: TraceMode,
    /// `trace_depth`.
    pub depth: u32,
    /// `trace_wrap`.
    pub wrap: bool,
    /// `cpu` / `cpus` as given.
    pub placement: Placement,
    /// Records read but not replayed (file actions, syncs, trims, other
    /// blktrace events).
    pub skipped: u64,
    /// The requests among them that the model cannot replay (syncs and
    /// flushes, trims and discards), which the result reports.
    pub not_replayed: cint_trace::NotReplayed,
    /// The threads, shared: scenarios are cloned per sweep point.
    pub threads: Arc<Vec<TraceThread>>,
}

impl TraceJob {
    /// Requests in all threads.
    pub fn requests(&self) -> u64 {
        self.threads.iter().map(|t| t.ios.len() as u64).sum()
    }

    /// How the result names the format: `blktrace v8 (big-endian)`.
    pub fn format_label(&self) -> String {
        format!("{} v{}", self.format, self.version)
    }
}

/// Turns the I/O job just read into a trace job when the section has
/// `trace`; `source` is the scenario file (relative paths start from its
/// directory).
pub(crate) fn apply(
    sec: &mut Section<'_>,
    job: &mut Job,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<(), ScenarioError> {
    let Some(path) = sec.string("trace")? else {
        // The replay's own keys (`trace_format`, `trace_mode`, ...).
        let own = crate::job::IO_KEYS
            .iter()
            .filter(|k| k.starts_with("trace_"));
        for key in own {
            if sec.has(key) {
                return Err(sec.error(key, "only applies to a job with trace = \"FILE\""));
            }
        }
        return Ok(());
    };
    let Work::Io(io) = &mut job.work else {
        return Err(sec.error("trace", "a cpu job cannot replay a trace"));
    };
    if !io.direct {
        return Err(sec.error("direct", BUFFERED_TRACE));
    }
    if let Some(key) = DECIDED_BY_TRACE.iter().find(|k| sec.has(k)) {
        return Err(sec.error(
            key,
            "the trace decides this for a job with trace = \"FILE\" (docs/TRACES.md)",
        ));
    }
    let format = match sec.string("trace_format")? {
        Some(f) => Some(
            f.parse::<Format>()
                .map_err(|e| sec.error("trace_format", e))?,
        ),
        None => None,
    };
    let mode = sec.choice("trace_mode", &["open", "closed"])?;
    let speed = sec.number("trace_speed", 1e-6, 1e6)?;
    let depth = sec.int("trace_depth", 1, crate::MAX_QUEUE_DEPTH)?;
    let wrap = sec.bool("trace_wrap")?.unwrap_or(false);
    let mode = match mode.as_deref() {
        Some("closed") => {
            if speed.is_some() {
                return Err(sec.error("trace_speed", "only applies to trace_mode = \"open\""));
            }
            TraceMode::Closed
        }
        _ => TraceMode::Open {
            speed_ppm: ((speed.unwrap_or(1.0) * 1e6).round() as u64).max(1),
        },
    };
    let placement = if !job.cpus.is_empty() {
        Placement::Cpus(job.cpus.clone())
    } else if sec.has("cpu") {
        Placement::Cpu(job.cpu)
    } else {
        Placement::Trace
    };
    let resolved = resolve_path(sec.source(), &path);
    let opts = Options {
        format,
        mode,
        depth: depth.map_or(DEFAULT_TRACE_DEPTH, |d| d as u32),
        wrap,
        placement,
    };
    // The shape's parser ran before the trace was known.
    if io.sqpoll.is_some() {
        return Err(sec.error("sqpoll", "a trace's replay with sqpoll is not modelled"));
    }
    if io.offload {
        return Err(sec.error(
            "submit_mode",
            "a trace's replay with submit_mode = \"offload\" is not modelled",
        ));
    }
    let trace = load(&resolved, &opts, device, host).map_err(|m| sec.error("trace", m))?;
    shape_job(job, trace);
    Ok(())
}

/// Why a job with `direct = false` cannot replay a trace: its requests
/// are the device's, so they have passed the page cache already, and the
/// page cache would draw its own offsets and sizes instead of the trace's.
const BUFFERED_TRACE: &str = "a trace replays block requests, which have already passed the \
     page cache: a job with a trace must be direct (remove direct = false)";

/// What a trace job is given beyond the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// `trace_format`; `None`: detected.
    pub format: Option<Format>,
    /// `trace_mode` and `trace_speed`.
    pub mode: TraceMode,
    /// `trace_depth`.
    pub depth: u32,
    /// `trace_wrap`.
    pub wrap: bool,
    /// `cpu` / `cpus`.
    pub placement: Placement,
}

/// Writes a trace job's own keys in place of those its trace decides
/// (`cint check`): loading the text again gives the same job.
pub(crate) fn render_keys(t: &mut toml_edit::Table, trace: &TraceJob) {
    use toml_edit::{value, Array};
    for key in DECIDED_BY_TRACE
        .iter()
        .chain(&["cpu", "cpus", "thinktime_spin", "thinktime_blocks"])
    {
        t.remove(key);
    }
    t["trace"] = value(trace.path.display().to_string());
    if trace.format_given {
        t["trace_format"] = value(trace.format.name());
    }
    match trace.mode {
        TraceMode::Open { speed_ppm } => {
            t["trace_mode"] = value("open");
            t["trace_speed"] = value(speed_ppm as f64 / 1e6);
        }
        TraceMode::Closed => {
            t["trace_mode"] = value("closed");
        }
    }
    t["trace_depth"] = value(i64::from(trace.depth));
    t["trace_wrap"] = value(trace.wrap);
    match &trace.placement {
        Placement::Trace => {}
        Placement::Cpu(c) => {
            t["cpu"] = value(i64::from(*c));
        }
        Placement::Cpus(list) => {
            t["cpus"] = value(Array::from_iter(list.iter().map(|&c| i64::from(c))));
        }
    }
}

/// `path` from the scenario's directory, unless absolute.
fn resolve_path(source: &str, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match Path::new(source).parent() {
        Some(dir) if !source.starts_with('<') => dir.join(p),
        _ => p.to_path_buf(),
    }
}

/// A trace read for a job: the replay and each thread's core.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The replay.
    pub job: TraceJob,
    /// The core of each thread.
    pub cores: Vec<u32>,
}

/// Reads and resolves the trace at `path`: the error is one line naming
/// the file and the record.
pub fn load(
    path: &Path,
    opts: &Options,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<Loaded, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: cannot read the trace: {e}"))?;
    let trace = cint_trace::parse(&bytes, opts.format).map_err(|e| format!("{shown}: {e}"))?;
    if matches!(opts.mode, TraceMode::Open { .. }) {
        trace.check_ordered().map_err(|e| format!("{shown}: {e}"))?;
    }
    let (threads, cores) =
        threads_of(&trace, opts, device, host).map_err(|e| format!("{shown}: {e}"))?;
    let job = TraceJob {
        // Absolute, so that `cint check`'s text loads the same trace from
        // anywhere.
        path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        format: trace.format,
        version: trace.version,
        format_given: opts.format.is_some(),
        mode: opts.mode,
        depth: opts.depth,
        wrap: opts.wrap,
        placement: opts.placement.clone(),
        skipped: trace.skipped,
        not_replayed: trace.not_replayed,
        threads: Arc::new(threads),
    };
    Ok(Loaded { job, cores })
}

/// The replay's threads with each one's core: (threads, cores).
fn threads_of(
    trace: &Trace,
    opts: &Options,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<(Vec<TraceThread>, Vec<u32>), String> {
    let capacity = device.capacity.0;
    let n = trace.streams.len();
    if n as u64 > crate::job::MAX_NUMJOBS {
        return Err(format!(
            "{n} streams (processes, files or disks): a job has at most {} threads",
            crate::job::MAX_NUMJOBS
        ));
    }
    let mut cores = Vec::with_capacity(n);
    for (i, s) in trace.streams.iter().enumerate() {
        let core = match &opts.placement {
            Placement::Cpus(list) => list[i % list.len()],
            Placement::Cpu(c) => *c,
            Placement::Trace => s.cpu.unwrap_or(0),
        };
        if core >= host.cores {
            return Err(format!(
                "{}: {} was traced on CPU {core}, and the host has {} cores (numbered from 0): \
                 give the job cpu or cpus",
                s.first, s.label, host.cores
            ));
        }
        cores.push(core);
    }
    let origin = trace.origin();
    let mut threads: Vec<TraceThread> = trace
        .streams
        .iter()
        .map(|s| TraceThread {
            label: s.label.clone(),
            ios: Vec::new(),
        })
        .collect();
    for r in &trace.requests {
        let offset = place_request(r.offset, r.bytes, capacity, opts.wrap)
            .map_err(|m| format!("{}: {m}", r.place))?;
        let since = r.time.saturating_sub(origin);
        let at = match opts.mode {
            TraceMode::Open { speed_ppm } => scale(since, speed_ppm),
            TraceMode::Closed => since,
        };
        threads[r.stream as usize].ios.push(TraceIo {
            at,
            offset,
            bytes: r.bytes,
            write: r.write,
            latency: r.latency,
        });
    }
    Ok((threads, cores))
}

/// `since` at `speed_ppm` parts per million of the trace's pace, in whole
/// nanoseconds (rounded down), computed from the trace's own time for
/// every request: no error accumulates along the trace.
pub fn scale(since: Nanos, speed_ppm: u64) -> Nanos {
    let v = u128::from(since) * 1_000_000 / u128::from(speed_ppm.max(1));
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// The offset a request is replayed at, or why it cannot be.
fn place_request(offset: u64, bytes: u64, capacity: u64, wrap: bool) -> Result<u64, String> {
    if bytes > capacity {
        return Err(format!(
            "a request of {bytes} bytes is larger than the device ({capacity} bytes)"
        ));
    }
    if offset.checked_add(bytes).is_some_and(|end| end <= capacity) {
        return Ok(offset);
    }
    if !wrap {
        return Err(format!(
            "a request of {bytes} bytes at offset {offset} ends beyond the device's {capacity} \
             bytes (set trace_wrap = true, or --trace-wrap, to wrap offsets modulo the capacity)"
        ));
    }
    let wrapped = (offset % capacity) / 512 * 512;
    Ok(if wrapped + bytes <= capacity {
        wrapped
    } else {
        (capacity - bytes) / 512 * 512
    })
}

/// Fills in the job from its trace: one thread per stream on its core,
/// the depth, the trace's mix of reads and writes, and a nominal block
/// size (the first request's, rounded up to 512 bytes) for what needs one
/// (hybrid polling's statistics, fio's output).
fn shape_job(job: &mut Job, Loaded { job: trace, cores }: Loaded) {
    let Work::Io(io) = &mut job.work else {
        return;
    };
    let all = trace.threads.iter().flat_map(|t| &t.ios);
    let (reads, writes) = all.fold(
        (0u64, 0u64),
        |(r, w), x| {
            if x.write {
                (r, w + 1)
            } else {
                (r + 1, w)
            }
        },
    );
    io.rw = match (reads, writes) {
        (_, 0) => Rw::RandRead,
        (0, _) => Rw::RandWrite,
        _ => Rw::RandRw,
    };
    io.rwmixread = (reads * 100 / (reads + writes).max(1)) as u8;
    let first = trace
        .threads
        .iter()
        .find_map(|t| t.ios.first())
        .map_or(512, |x| x.bytes);
    io.bs = first.div_ceil(512).max(1) * 512;
    set_depth(io, trace.depth);
    job.numjobs = cores.len() as u32;
    job.cpu = cores.first().copied().unwrap_or(0);
    job.cpus = cores;
    io.shape.trace = Some(trace);
}

/// The job's depth: `trace_depth` for an asynchronous engine, one
/// request per call; 1 for a synchronous one.
fn set_depth(io: &mut IoJob, depth: u32) {
    let d = if io.engine.is_sync() { 1 } else { depth };
    io.iodepth = d;
    io.batch = 1;
    io.batch_complete_min = 1;
    io.batch_complete_max = 1;
    io.iodepth_low = d;
}

/// The job that replays the trace at `path` in place of `base`, the first
/// I/O job of the scenario it replaces (what `cint sim --trace FILE`
/// runs): named `trace`, with `base`'s engine, hint, `hipri`, `nowait`,
/// `direct` and `gtod_reduce`, and nothing else of it; the error names
/// the file and the record.
pub fn trace_job(
    base: &Job,
    path: &Path,
    opts: &Options,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<Job, String> {
    let Work::Io(io) = &base.work else {
        return Err(format!(
            "job '{}' is a cpu job: a trace replaces an I/O job",
            base.name
        ));
    };
    if !io.direct {
        return Err(format!(
            "{}: job '{}' has direct = false: {BUFFERED_TRACE}",
            path.display(),
            base.name
        ));
    }
    let loaded = load(path, opts, device, host)?;
    let io = IoJob {
        offload: false,
        sqpoll: None,
        rate_iops: None,
        think: 0,
        size: device.capacity.0,
        shape: Box::default(),
        ..io.clone()
    };
    let mut job = Job {
        name: "trace".into(),
        runtime: None,
        work: Work::Io(io),
        schedule: Default::default(),
        ..base.clone()
    };
    shape_job(&mut job, loaded);
    Ok(job)
}
