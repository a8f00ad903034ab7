//! `[[job]]` tables: I/O jobs (fio's keys and defaults where fio has
//! them) and `kind = "cpu"` busy loops, checked against the device and the
//! host they run on.

use cint_policy::{Hint, Nanos};

use crate::error::{Origin, ScenarioError};
use crate::load::MAX_QUEUE_DEPTH;
use crate::model::{Engine, IoJob, Job, Rw, Work};
use crate::profiles::{DeviceProfile, HostProfile};
use crate::section::Section;
use crate::tree::{Node, Table, Value};
use crate::units::format_size;

/// Most threads one job may have.
pub const MAX_NUMJOBS: u64 = 4_096;

/// The most offload workers a job may have (`numjobs` x `iodepth`), each a
/// thread of its own.
pub const MAX_OFFLOAD_WORKERS: u64 = 65_536;
/// Most threads of all jobs together: engines allocate per thread.
pub const MAX_THREADS: u64 = 65_536;
/// Most requests all jobs together may keep in flight (the sum of
/// `iodepth x numjobs`): engines allocate per request slot.
pub const MAX_REQUESTS: u64 = 1 << 20;
/// `bs` when not given (fio's default).
pub const DEFAULT_BS: u64 = 4_096;
/// `rwmixread` when not given (fio's default).
pub const DEFAULT_RWMIXREAD: u8 = 50;

/// The values `engine` takes.
pub const ENGINES: &[&str] = &["psync", "pvsync2", "libaio", "io_uring"];
/// The values `rw` takes.
pub const RWS: &[&str] = &[
    "read",
    "write",
    "randread",
    "randwrite",
    "randrw",
    "readwrite",
];
/// The values `hint` takes.
pub const HINTS: &[&str] = &["urgent", "barrier", "none"];

/// Keys of an I/O job.
pub const IO_KEYS: &[&str] = &[
    "name",
    "kind",
    "sched_group",
    "engine",
    "rw",
    "bs",
    "iodepth",
    "batch",
    "batch_complete_min",
    "batch_complete_max",
    "iodepth_low",
    "max_latency",
    "gtod_reduce",
    "cpu",
    "cpus",
    "numjobs",
    "hint",
    "nowait",
    "hipri",
    "submit_mode",
    "sqpoll",
    "sqpoll_cpu",
    "direct",
    "fadvise_hint",
    "rate_iops",
    "think",
    "size",
    "rwmixread",
    "runtime",
    "group",
    "startdelay",
    "bssplit",
    "bsrange",
    "norandommap",
    "random_generator",
    "random_distribution",
    "rate",
    "rate_process",
    "barrier_last",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "rate_ign_think",
    "ratemin",
    "rate_iops_min",
    "ratecycle",
    "number_ios",
    "io_size",
    "pass_size",
    "byte_limit",
    "percentile_list",
    "fsync",
    "fdatasync",
    "sync",
    "end_fsync",
    "flow",
    "flow_id",
    "flow_sleep",
    "exitall",
    "ss",
    "ss_dur",
    "ss_ramp",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "trace",
    "trace_format",
    "trace_mode",
    "trace_speed",
    "trace_depth",
    "trace_wrap",
    "guest",
];
/// Keys of a `kind = "cpu"` job.
pub const CPU_KEYS: &[&str] = &[
    "name",
    "kind",
    "sched_group",
    "cpu",
    "cpus",
    "numjobs",
    "runtime",
    "group",
    "startdelay",
    "guest",
];

/// The tables of a `[[strategy]]` or `[[job]]` array, with their origins;
/// refuses a missing or empty array.
pub(crate) fn elements<'a>(
    source: &str,
    section: &str,
    node: Option<&'a Node>,
) -> Result<Vec<(&'a Table, Origin)>, ScenarioError> {
    let err = |origin: Origin, message: String| ScenarioError {
        source: source.to_string(),
        origin,
        key: section.to_string(),
        message,
    };
    let Some(node) = node else {
        return Err(err(
            Origin::Line(1),
            format!("no [[{section}]]: at least one is required"),
        ));
    };
    let Value::Array(items) = &node.value else {
        return Err(err(
            node.origin.clone(),
            format!(
                "must be an array of tables ([[{section}]]), got {}",
                node.value.type_name()
            ),
        ));
    };
    if items.is_empty() {
        return Err(err(
            node.origin.clone(),
            format!("is empty: at least one [[{section}]] is required"),
        ));
    }
    items
        .iter()
        .map(|item| match &item.value {
            Value::Table(t) => Ok((t, item.origin.clone())),
            v => Err(err(
                item.origin.clone(),
                format!("every element must be a table, got {}", v.type_name()),
            )),
        })
        .collect()
}

/// Reads and checks the `name` of an element: present, usable in a
/// `--set` path, and unique among `seen`; renames the section after it.
pub(crate) fn element_name(
    sec: &mut Section<'_>,
    seen: &[(String, Origin)],
    what: &str,
) -> Result<String, ScenarioError> {
    let name = sec.required_string("name")?;
    if name.trim().is_empty() {
        return Err(sec.error("name", "must not be empty"));
    }
    if name.contains('.') || name.contains('=') || name.trim() != name {
        return Err(sec.error(
            "name",
            format!("\"{name}\" must not contain '.', '=' or surrounding spaces (it is used in --set paths)"),
        ));
    }
    sec.set_path(format!("{what}.{name}"));
    if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
        let at = match first {
            Origin::Line(l) => format!("line {l}"),
            Origin::Set(a) => format!("--set {a}"),
            Origin::File => "the file".to_string(),
        };
        return Err(sec.error(
            "name",
            format!("duplicate {what} name \"{name}\" (first at {at})"),
        ));
    }
    Ok(name)
}

/// Parses the `job` array: at least one, names unique.
pub(crate) fn parse_all(
    source: &str,
    node: Option<&Node>,
    (device, host): (&DeviceProfile, &HostProfile),
    virt: &crate::virt::Virt,
    run_to_end: bool,
) -> Result<Vec<Job>, ScenarioError> {
    let elements = elements(source, "job", node)?;
    let mut out = Vec::with_capacity(elements.len());
    let mut seen: Vec<(String, Origin)> = Vec::new();
    let mut load = Load::new();
    let mut origins = Vec::with_capacity(out.capacity());
    for (index, (table, origin)) in elements.into_iter().enumerate() {
        let mut sec = Section::new(source, format!("job[{index}]"), table, origin);
        let name = element_name(&mut sec, &seen, "job")?;
        seen.push((name.clone(), sec.origin_of("name")));
        let job = parse_job(&mut sec, name, device, host, virt)?;
        load.add(&sec, &job)?;
        out.push(job);
        origins.push(sec);
    }
    check_final_fsyncs(&out, &origins, run_to_end)?;
    // A group starts when the groups before it have ended: each of their
    // jobs needs an end, or the later groups would never run.
    if let Some(last) = out.iter().map(|j| j.schedule.group).max() {
        for (job, sec) in out.iter().zip(&origins) {
            if job.schedule.group >= last {
                continue;
            }
            let why = match &job.work {
                Work::Cpu if job.runtime.is_none() => {
                    "a cpu job without a runtime runs until the run ends, so it belongs in the \
                     last group (or set its runtime)"
                }
                Work::Cpu => continue,
                Work::Io(io)
                    if job.runtime.is_none()
                        && io.shape.number_ios.is_none()
                        && io.shape.io_size.is_none() =>
                {
                    "this job needs an end: set runtime (or number_ios, io_size)"
                }
                Work::Io(_) => continue,
            };
            return Err(sec.error(
                "group",
                format!(
                    "group {} is followed by group {last}: {why}",
                    job.schedule.group
                ),
            ));
        }
    }
    Ok(out)
}

/// Requests and threads of the jobs read so far, in total: bounds on the
/// engines' memory. A queue may hold more requests in flight than the
/// device's `queue_depth`: the block layer then makes submitters wait for
/// a tag (blk-mq), as Linux does, instead of refusing the job.
struct Load {
    requests: u64,
    threads: u64,
}

impl Load {
    fn new() -> Load {
        Load {
            requests: 0,
            threads: 0,
        }
    }

    /// Adds a job, refusing it at its `numjobs` or `iodepth` when it
    /// overfills the totals.
    fn add(&mut self, sec: &Section<'_>, job: &Job) -> Result<(), ScenarioError> {
        let numjobs = u64::from(job.numjobs);
        self.threads += numjobs;
        if self.threads > MAX_THREADS {
            return Err(sec.error(
                "numjobs",
                format!(
                    "the jobs have {} threads in all with this one, more than {MAX_THREADS}",
                    self.threads
                ),
            ));
        }
        let Work::Io(io) = &job.work else {
            return Ok(());
        };
        let depth = u64::from(io.iodepth);
        let mine = depth * numjobs;
        // The key to blame: numjobs when the engine ignores iodepth or
        // several threads multiply the depth, else iodepth; whichever of
        // the two the file wrote if it wrote one.
        let mut key = if io.engine.is_sync() || numjobs > 1 {
            "numjobs"
        } else {
            "iodepth"
        };
        let other = if key == "numjobs" {
            "iodepth"
        } else {
            "numjobs"
        };
        if !sec.has(key) && sec.has(other) && !io.engine.is_sync() {
            key = other;
        }
        self.requests += mine;
        if self.requests > MAX_REQUESTS {
            return Err(sec.error(
                key,
                format!(
                    "the jobs keep {} requests in flight in all with this one (the sum of \
                     iodepth x numjobs), more than {MAX_REQUESTS}",
                    self.requests
                ),
            ));
        }
        Ok(())
    }
}

fn parse_job(
    sec: &mut Section<'_>,
    name: String,
    device: &DeviceProfile,
    host: &HostProfile,
    virt: &crate::virt::Virt,
) -> Result<Job, ScenarioError> {
    let guests = &virt.guests;
    let kind = sec
        .choice("kind", &["io", "cpu"])?
        .unwrap_or_else(|| "io".into());
    let guest = crate::virt::job_guest(sec, guests)?;
    let cpu = sec.int("cpu", 0, u64::from(u32::MAX))?.unwrap_or(0);
    // Inside a guest, cpu and cpus name the guest's vCPUs: a number past
    // them would be a host core, and so the host's device queue of that
    // core, which a guest's program cannot reach.
    if let Some(g) = guest.map(|g| &guests[g as usize]) {
        let vcpus = u64::from(g.vcpus());
        if cpu >= vcpus {
            return Err(sec.error(
                "cpu",
                format!(
                    "must be below guest \"{}\"'s vcpus = {vcpus} (got {cpu}): inside a guest, \
                     cpu is a vCPU, not a host core or its device queue",
                    g.name
                ),
            ));
        }
    }
    let cores = match guest {
        Some(g) => u64::from(guests[g as usize].vcpus()),
        None => u64::from(host.cores),
    };
    if cpu >= cores {
        return Err(sec.error(
            "cpu",
            format!("must be below host.cores = {cores} (got {cpu}; cores are numbered from 0)"),
        ));
    }
    let cpus = parse_cpus(sec, cores)?;
    if !cpus.is_empty() && sec.has("cpu") {
        return Err(sec.error(
            "cpus",
            "give cpu (every thread on one core) or cpus (threads spread over several), not both",
        ));
    }
    let numjobs = sec.int("numjobs", 1, MAX_NUMJOBS)?.unwrap_or(1) as u32;
    let runtime = match sec.duration("runtime")? {
        Some(0) => return Err(sec.error("runtime", "must be longer than zero")),
        other => other,
    };
    let schedule = crate::shape::parse_schedule(sec)?;
    let work = if kind == "cpu" {
        if let Some(stray) = sec.first_unread_except(CPU_KEYS, &[]) {
            return Err(sec.error(
                stray,
                format!(
                    "not a key of a cpu job (a cpu job takes {})",
                    CPU_KEYS.join(", ")
                ),
            ));
        }
        Work::Cpu
    } else {
        let mut io = parse_io(sec, device)?;
        io.sqpoll = parse_sqpoll(sec, &io, host.cores)?;
        Work::Io(io)
    };
    if let Work::Io(io) = &work {
        let workers = u64::from(numjobs) * u64::from(io.iodepth);
        if io.offload && workers > MAX_OFFLOAD_WORKERS {
            return Err(sec.error(
                "iodepth",
                format!(
                    "with submit_mode = \"offload\" each thread has iodepth workers: {workers} \
                     in all, at most {MAX_OFFLOAD_WORKERS}"
                ),
            ));
        }
    }
    let mut job = Job {
        name,
        cpu: cpus.first().copied().unwrap_or(cpu as u32),
        cpus,
        numjobs,
        runtime,
        work,
        schedule,
        guest,
    };
    let offloaded = matches!(&job.work, Work::Io(io) if io.offload);
    if guest.is_some() && offloaded {
        return Err(sec.error(
            "submit_mode",
            "offloaded submission inside a guest is not modelled: its workers are threads \
             the guest kernel would schedule on its vCPUs",
        ));
    }
    if guest.is_some() && sec.has("sqpoll") {
        return Err(sec.error(
            "sqpoll",
            "a polling submission thread inside a guest is not modelled: it is a kernel \
             thread the guest would schedule on its vCPUs",
        ));
    }
    if guest.is_some() && sec.has("trace") {
        return Err(sec.error(
            "trace",
            "a job inside a guest cannot replay a trace: a trace's CPUs are host cores",
        ));
    }
    crate::trace::apply(sec, &mut job, device, host)?;
    if guest.is_none() {
        // After the trace, which may place the job's threads.
        let cpu_job = matches!(job.work, Work::Cpu);
        crate::virt::refuse_owned_cores(sec, virt, job.cpu, &job.cpus, cpu_job)?;
        if let Work::Io(IoJob {
            sqpoll: Some(crate::SqPoll { cpu: Some(c) }),
            ..
        }) = &job.work
        {
            let what = ("sqpoll_cpu", "a host job's SQ thread");
            crate::virt::refuse_owned(sec, virt, what, &[*c], false)?;
        }
    }
    // Read by the task groups' parser (crate::sched_group).
    sec.node("sched_group");
    sec.finish("a job", IO_KEYS)?;
    Ok(job)
}

/// `cpus`: distinct cores below `cores`, at least one.
fn parse_cpus(sec: &mut Section<'_>, cores: u64) -> Result<Vec<u32>, ScenarioError> {
    let Some(node) = sec.node("cpus") else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = &node.value else {
        return Err(sec.error(
            "cpus",
            format!(
                "must be a list of cores, e.g. [0, 1] (got {})",
                node.value.type_name()
            ),
        ));
    };
    if items.is_empty() {
        return Err(sec.error("cpus", "must name at least one core"));
    }
    let mut cpus = Vec::with_capacity(items.len());
    for item in items {
        let core = match item.value {
            Value::Int(c) if c >= 0 && (c as u64) < cores => c as u32,
            Value::Int(c) => {
                return Err(sec.error(
                    "cpus",
                    format!(
                        "core {c} is not below host.cores = {cores} (cores are numbered from 0)"
                    ),
                ))
            }
            ref other => {
                return Err(sec.error(
                    "cpus",
                    format!("must hold core numbers (got {})", other.type_name()),
                ))
            }
        };
        if cpus.contains(&core) {
            return Err(sec.error("cpus", format!("names core {core} twice")));
        }
        cpus.push(core);
    }
    Ok(cpus)
}

fn parse_io(sec: &mut Section<'_>, device: &DeviceProfile) -> Result<IoJob, ScenarioError> {
    let engine = match sec.choice("engine", ENGINES)?.as_deref() {
        Some("pvsync2") => Engine::Pvsync2,
        Some("libaio") => Engine::Libaio,
        Some("io_uring") => Engine::IoUring,
        // A trace job's engine is io_uring unless given (docs/TRACES.md),
        // before the keys that depend on the engine are checked.
        None if sec.has("trace") => Engine::IoUring,
        _ => Engine::Psync,
    };
    let rw = match sec.choice("rw", RWS)?.as_deref() {
        Some("write") => Rw::Write,
        Some("randread") => Rw::RandRead,
        Some("randwrite") => Rw::RandWrite,
        Some("randrw") => Rw::RandRw,
        Some("readwrite") => Rw::ReadWrite,
        _ => Rw::Read,
    };
    let bs_given = sec.has("bs");
    let mut bs = sec.size("bs")?.unwrap_or(DEFAULT_BS);
    let offload = submit_offload(sec, engine)?;
    let depths = queue_depths(sec, engine, offload)?;
    let flags = io_flags(sec, engine)?;
    let rates = crate::shape::parse_rates(sec, rw)?;
    let rate_iops = rates.iops;
    let think: Nanos = sec.duration("think")?.unwrap_or(0);
    let rate_min = crate::shape::parse_min_rate(sec, rw)?;
    let shape = crate::shape::parse_shape(sec, bs, bs_given, rates, rate_min)?;
    // The split's and range's sizes first: a fio import derives `bs`
    // from them, so they are what to name.
    check_shape_block_sizes(sec, &shape, engine, flags.direct)?;
    check_block_size(sec, bs, engine, flags.direct)?;
    check_shape_on_engine(sec, &shape, engine)?;
    check_page_cache_write_keys(sec, &shape, engine, flags.direct, rw)?;
    if offload {
        check_offload(sec, &shape, flags.direct)?;
    }
    if shape.max_latency.is_some() && flags.gtod_reduce {
        return Err(sec.error(
            "max_latency",
            "needs the latency measured, which gtod_reduce = true turns off (fio's gtod_reduce \
             sets disable_lat, so nothing checks the bound)",
        ));
    }
    bs = crate::shape::smallest_block(&shape, bs);
    crate::shape::check_poisson_rate(sec, &shape, bs, rw)?;
    crate::shape::check_floor_below_cap(sec, &shape, rate_iops)?;
    let largest = crate::shape::largest_block(&shape, bs);
    let size = io_size(sec, device, largest)?;
    if let Some(pass) = shape.pass_size.filter(|&p| p > size || p < largest) {
        return Err(sec.error(
            "pass_size",
            format!(
                "must be between the largest block size, {}, and the job's size, {} (a pass \
                 is over its file), got {}",
                format_size(largest),
                format_size(size),
                format_size(pass)
            ),
        ));
    }
    if let crate::model::Distribution::ZonedAbs(zones) = &shape.random_distribution {
        let total = zones.iter().map(|z| z.size).fold(0u64, u64::saturating_add);
        if total > size {
            return Err(sec.error(
                "random_distribution",
                format!(
                    "the zones add up to {}, more than the job's size, {} (fio: zoned_abs sizes exceed file size)",
                    crate::units::format_size(total),
                    crate::units::format_size(size)
                ),
            ));
        }
    }
    let rwmixread = sec.int("rwmixread", 0, 100)?;
    if rwmixread.is_some() && !rw.is_mixed() {
        return Err(sec.error(
            "rwmixread",
            "only applies to rw = \"randrw\" or \"readwrite\"",
        ));
    }
    Ok(IoJob {
        engine,
        rw,
        bs,
        iodepth: depths.iodepth,
        batch: depths.batch,
        batch_complete_min: depths.complete_min,
        batch_complete_max: depths.complete_max,
        iodepth_low: depths.low,
        hint: flags.hint,
        nowait: flags.nowait,
        hipri: flags.hipri,
        direct: flags.direct,
        fadvise_hint: flags.fadvise_hint,
        gtod_reduce: flags.gtod_reduce,
        offload,
        sqpoll: None,
        rate_iops,
        think,
        size,
        rwmixread: rwmixread.map_or(DEFAULT_RWMIXREAD, |v| v as u8),
        shape: Box::new(shape),
    })
}

/// fio's `io_submit_mode`: `"offload"` hands each request to a pool of
/// `iodepth` worker threads (fio's rate-submit.c), which io_uring does
/// not allow (fio's `FIO_NO_OFFLOAD`).
fn submit_offload(sec: &mut Section<'_>, engine: Engine) -> Result<bool, ScenarioError> {
    let offload = sec
        .choice("submit_mode", &["inline", "offload"])?
        .as_deref()
        == Some("offload");
    if offload && engine == Engine::IoUring {
        return Err(sec.error(
            "submit_mode",
            "fio cannot offload io_uring's submissions (its engine is FIO_NO_OFFLOAD): use \
             psync, pvsync2 or libaio",
        ));
    }
    Ok(offload)
}

/// fio's `sqthread_poll` and `sqthread_poll_cpu` (io_uring's
/// `IORING_SETUP_SQPOLL` and `IORING_SETUP_SQ_AFF`): what the SQ thread
/// is not modelled with is refused by its key.
fn parse_sqpoll(
    sec: &mut Section<'_>,
    io: &IoJob,
    cores: u32,
) -> Result<Option<crate::SqPoll>, ScenarioError> {
    let on = sec.bool("sqpoll")?.unwrap_or(false);
    let cpu = sec.int("sqpoll_cpu", 0, u64::from(u32::MAX))?;
    if !on {
        if cpu.is_some() {
            return Err(sec.error("sqpoll_cpu", "places the SQ thread: set sqpoll = true"));
        }
        return Ok(None);
    }
    if io.engine != Engine::IoUring {
        return Err(sec.error(
            "sqpoll",
            "a submission-queue polling thread is io_uring's (IORING_SETUP_SQPOLL): set \
             engine = \"io_uring\"",
        ));
    }
    if let Some(c) = cpu.filter(|&c| c >= u64::from(cores)) {
        return Err(sec.error(
            "sqpoll_cpu",
            format!("must be below host.cores = {cores} (got {c}; cores are numbered from 0)"),
        ));
    }
    let refused = [
        ("direct", !io.direct, "buffered io_uring"),
        ("flow", io.shape.flow != 0, "flow control"),
    ];
    if let Some((key, _, what)) = refused.into_iter().find(|r| r.1) {
        return Err(sec.error(key, format!("{what} with sqpoll is not modelled")));
    }
    Ok(Some(crate::SqPoll {
        cpu: cpu.map(|c| c as u32),
    }))
}

/// What fio's offload workers are not modelled with, each refused by its
/// key: a worker runs one request at a time, and the shaping that waits
/// for requests in flight or owns a file is the main thread's.
fn check_offload(
    sec: &Section<'_>,
    shape: &crate::IoShape,
    direct: bool,
) -> Result<(), ScenarioError> {
    let refused = [
        ("direct", !direct, "buffered calls"),
        ("thinktime", shape.thinktime > 0, "think time"),
        ("flow", shape.flow != 0, "flow control"),
        ("fsync", shape.fsync > 0, "fsync"),
        ("fdatasync", shape.fdatasync > 0, "fdatasync"),
        (
            "pass_size",
            shape.pass_size.is_some(),
            "passes over the file",
        ),
        (
            "latency_target",
            shape.latency_target.is_some(),
            "the latency target's search",
        ),
        (
            "max_latency",
            shape.max_latency.is_some(),
            "a bound on the latency",
        ),
        (
            if shape
                .rate_min
                .is_some_and(|m| m.floor.unit == crate::RateUnit::Bytes)
            {
                "ratemin"
            } else {
                "rate_iops_min"
            },
            shape.rate_min.is_some(),
            "a floor on the rate",
        ),
    ];
    if let Some((key, _, what)) = refused.into_iter().find(|r| r.1) {
        return Err(sec.error(
            key,
            format!("{what} with submit_mode = \"offload\" is not modelled"),
        ));
    }
    Ok(())
}

/// A job's queue depth and its submission and completion batches, as
/// [`IoJob`] keeps them: what the loader reads from a job's keys and the
/// fio import from a job's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueDepths {
    /// `iodepth`.
    pub iodepth: u32,
    /// `batch` (fio's `iodepth_batch_submit`).
    pub batch: u32,
    /// `batch_complete_min`.
    pub complete_min: u32,
    /// `batch_complete_max`.
    pub complete_max: u32,
    /// `iodepth_low`.
    pub low: u32,
}

/// `iodepth`, `batch`, `batch_complete_min`, `batch_complete_max` and
/// `iodepth_low`: all 1 with a synchronous engine, as in fio, which
/// ignores them there; the batches and the low mark at most the depth
/// otherwise. Offloaded, the depth is the number of workers, each with
/// one request in flight, so the batches stay 1 and the low mark is the
/// depth (fio's offloaded loop never waits for a full queue).
fn queue_depths(
    sec: &mut Section<'_>,
    engine: Engine,
    offload: bool,
) -> Result<QueueDepths, ScenarioError> {
    let iodepth = sec.int("iodepth", 1, MAX_QUEUE_DEPTH)?.unwrap_or(1);
    let batch = sec.int("batch", 1, u64::from(u32::MAX))?.unwrap_or(1);
    // 0: the reap call returns at once, and the thread calls again until
    // an event is in (fio's `iodepth_batch_complete_min=0`).
    let batch_complete_min = sec
        .int("batch_complete_min", 0, u64::from(u32::MAX))?
        .unwrap_or(1);
    let batch_complete_max = sec.int("batch_complete_max", 0, u64::from(u32::MAX))?;
    let low = sec.int("iodepth_low", 1, u64::from(u32::MAX))?;
    if offload {
        for (key, v) in [
            ("batch", batch),
            ("batch_complete_min", batch_complete_min),
            ("batch_complete_max", batch_complete_max.unwrap_or(1)),
        ] {
            if v != 1 {
                return Err(sec.error(
                    key,
                    "with submit_mode = \"offload\" each worker submits and reaps one request \
                     at a time: leave it at 1",
                ));
            }
        }
        if low.is_some_and(|l| l != iodepth) {
            return Err(sec.error(
                "iodepth_low",
                "with submit_mode = \"offload\" the thread never waits for a full queue \
                 (fio's offloaded loop does not reap): leave it out",
            ));
        }
        let iodepth = iodepth as u32;
        return Ok(QueueDepths {
            iodepth,
            batch: 1,
            complete_min: 1,
            complete_max: 1,
            low: iodepth,
        });
    }
    // As in fio, synchronous engines ignore iodepth and batching: one
    // request per call. Only the asynchronous engines check them.
    if engine.is_sync() {
        return Ok(QueueDepths {
            iodepth: 1,
            batch: 1,
            complete_min: 1,
            complete_max: 1,
            low: 1,
        });
    }
    // fio's manual: iodepth_batch_complete_max "by default is equal
    // to iodepth_batch_complete_min"; iodepth_low "defaults to the same
    // as iodepth".
    let complete_max = batch_complete_max.unwrap_or(batch_complete_min);
    let low = low.unwrap_or(iodepth);
    for (key, v) in [
        ("batch", batch),
        ("batch_complete_min", batch_complete_min),
        ("batch_complete_max", complete_max),
        ("iodepth_low", low),
    ] {
        if v > iodepth {
            return Err(sec.error(
                key,
                format!("must be at most iodepth = {iodepth} (got {v})"),
            ));
        }
    }
    if complete_max == 0 && batch_complete_min > 0 {
        return Err(sec.error(
            "batch_complete_max",
            "0 only goes with batch_complete_min = 0 (fio then reaps after every submission)",
        ));
    }
    if complete_max < batch_complete_min {
        return Err(sec.error(
            "batch_complete_max",
            format!(
                "must be at least batch_complete_min = {batch_complete_min} (got {complete_max})"
            ),
        ));
    }
    Ok(QueueDepths {
        iodepth: iodepth as u32,
        batch: batch as u32,
        complete_min: batch_complete_min as u32,
        complete_max: complete_max as u32,
        low: low as u32,
    })
}

/// A job's request flags, each checked against its engine.
struct IoFlags {
    hint: Option<Hint>,
    nowait: bool,
    hipri: bool,
    direct: bool,
    fadvise_hint: bool,
    gtod_reduce: bool,
}

/// A request's size: a positive multiple of 512 bytes, the smallest
/// logical block a device has, where it goes to the device as it is
/// (`O_DIRECT` needs it, and Linux refuses a misaligned one with EINVAL).
/// Through the page cache any size runs: the cache writes and reads the
/// device in whole pages (etcd's `bs=2300` `fdatasync` check).
fn check_block_size(
    sec: &Section<'_>,
    bs: u64,
    engine: Engine,
    direct: bool,
) -> Result<(), ScenarioError> {
    let cached = crate::model::passes_page_cache(engine, direct);
    if bs == 0 || (!cached && bs % 512 != 0) {
        return Err(sec.error(
            "bs",
            format!(
                "must be a positive multiple of 512 bytes (got {bs}); only a buffered job \
                 (direct = false, not io_uring) takes any size"
            ),
        ));
    }
    Ok(())
}

/// [`check_block_size`] for each size of `bssplit` and `bsrange`.
fn check_shape_block_sizes(
    sec: &Section<'_>,
    shape: &crate::IoShape,
    engine: Engine,
    direct: bool,
) -> Result<(), ScenarioError> {
    if crate::model::passes_page_cache(engine, direct) {
        return Ok(());
    }
    let split = shape.bssplit.iter().chain(&shape.bssplit_write);
    let range = shape.bsrange.iter().chain(&shape.bsrange_write);
    let sizes = split
        .map(|s| ("bssplit", s.bytes))
        .chain(range.flat_map(|&(lo, hi)| [("bsrange", lo), ("bsrange", hi)]));
    for (key, bytes) in sizes {
        if bytes % 512 != 0 {
            return Err(sec.error(
                key,
                format!(
                    "{bytes} bytes is not a multiple of 512; only a buffered job (direct = \
                     false, not io_uring) takes any size"
                ),
            ));
        }
    }
    Ok(())
}

/// `hint`, `nowait`, `hipri`, `direct`, `fadvise_hint` and
/// `gtod_reduce`; `nowait` only on pvsync2 and direct, `hipri` only where
/// the engine can poll.
fn io_flags(sec: &mut Section<'_>, engine: Engine) -> Result<IoFlags, ScenarioError> {
    let hint = match sec.choice("hint", HINTS)?.as_deref() {
        Some("urgent") => Some(Hint::Urgent),
        Some("barrier") => Some(Hint::Barrier),
        Some(_) => Some(Hint::Unmarked),
        None => None,
    };
    let nowait = sec.bool("nowait")?.unwrap_or(false);
    if nowait && engine != Engine::Pvsync2 {
        return Err(sec.error(
            "nowait",
            "is a pvsync2 flag (RWF_NOWAIT): set engine = \"pvsync2\"",
        ));
    }
    let hipri = sec.bool("hipri")?.unwrap_or(false);
    if hipri && !matches!(engine, Engine::Pvsync2 | Engine::IoUring) {
        return Err(sec.error(
            "hipri",
            "only pvsync2 (RWF_HIPRI) and io_uring (IORING_SETUP_IOPOLL) requests can be \
             polled: set engine = \"pvsync2\" or \"io_uring\"",
        ));
    }
    let direct = sec.bool("direct")?.unwrap_or(true);
    let fadvise_hint = sec.bool("fadvise_hint")?.unwrap_or(true);
    if nowait && !direct {
        return Err(sec.error("nowait", crate::model::BUFFERED_NOWAIT));
    }
    let gtod_reduce = sec.bool("gtod_reduce")?.unwrap_or(false);
    Ok(IoFlags {
        hint,
        nowait,
        hipri,
        direct,
        fadvise_hint,
        gtod_reduce,
    })
}

/// The keys of a buffered job's writes, refused where they would change
/// nothing or the path is not the page cache's: `sync`, each write
/// written back within its call, and `end_fsync`, the final `fsync` that
/// writes back what the job left dirty (which also needs an end of the
/// job's and a run that waits for it: [`check_final_fsyncs`]).
fn check_page_cache_write_keys(
    sec: &Section<'_>,
    shape: &crate::IoShape,
    engine: Engine,
    direct: bool,
    rw: Rw,
) -> Result<(), ScenarioError> {
    if shape.sync_writes != crate::SyncWrites::None {
        let refusal = if rw.only_reads() {
            Some("applies to writes, and the job only reads")
        } else if direct {
            Some(
                "on direct writes changes nothing the model runs: Linux 5.0 marks each write \
                 FUA and flushes after it, and drops both for a device without a volatile write \
                 cache (block/blk-core.c generic_make_request_checks), as the built-in devices \
                 are; set direct = false for writes through the page cache",
            )
        } else if engine == Engine::IoUring {
            Some("buffered io_uring runs as direct I/O here; use psync, pvsync2 or libaio")
        } else {
            None
        };
        if let Some(why) = refusal {
            return Err(sec.error("sync", why));
        }
    }
    if shape.end_fsync {
        let refusal = if rw.only_reads() {
            Some("applies to a job that writes, and this one only reads")
        } else if !crate::model::passes_page_cache(engine, direct) {
            Some(
                "applies to writes through the page cache (direct = false, and not io_uring, \
                 which runs as direct I/O here): a direct job's final fsync finds no dirty pages",
            )
        } else {
            None
        };
        if let Some(why) = refusal {
            return Err(sec.error("end_fsync", why));
        }
    }
    Ok(())
}

/// A job's final `fsync` (`end_fsync`) comes after its loop: the job
/// needs an end of its own (`runtime`, `io_size` or `number_ios`), and
/// the run must wait for the call (`run_to_end`), or it would be cut.
fn check_final_fsyncs(
    jobs: &[Job],
    origins: &[Section<'_>],
    run_to_end: bool,
) -> Result<(), ScenarioError> {
    for (job, sec) in jobs.iter().zip(origins) {
        let Work::Io(io) = &job.work else {
            continue;
        };
        if !io.shape.end_fsync {
            continue;
        }
        let has_end =
            job.runtime.is_some() || io.shape.io_size.is_some() || io.shape.number_ios.is_some();
        let why = if !has_end {
            "needs an end of the job's: a runtime, io_size or number_ios (one that runs until \
             the run's end makes no final fsync within it)"
        } else if !run_to_end {
            "needs run_to_end = true: the run must wait for the job's final fsync, which comes \
             after its loop"
        } else {
            continue;
        };
        return Err(sec.error("end_fsync", why));
    }
    Ok(())
}

/// Refuses a shape the engine cannot run: io_uring's asynchronous syncs,
/// a barrier on a synchronous engine, which submits no batches.
fn check_shape_on_engine(
    sec: &Section<'_>,
    shape: &crate::IoShape,
    engine: Engine,
) -> Result<(), ScenarioError> {
    for (key, n) in [("fsync", shape.fsync), ("fdatasync", shape.fdatasync)] {
        if n > 0 && engine == Engine::IoUring {
            return Err(sec.error(
                key,
                "io_uring's asynchronous fsync (IORING_OP_FSYNC, run by the kernel's io-wq \
                 workers) is not modelled; use psync, pvsync2 or libaio",
            ));
        }
    }
    if shape.barrier_last && engine.is_sync() {
        return Err(sec.error(
            "barrier_last",
            "marks the last request of each submission batch: set engine = \"libaio\" or \
             \"io_uring\"",
        ));
    }
    Ok(())
}

/// `size`: the device's capacity if not given; whole sectors, at least
/// the `largest` block.
fn io_size(
    sec: &mut Section<'_>,
    device: &DeviceProfile,
    largest: u64,
) -> Result<u64, ScenarioError> {
    let capacity = device.capacity.0;
    let size = sec.size("size")?.unwrap_or(capacity);
    if size > capacity {
        return Err(sec.error(
            "size",
            format!(
                "must be at most the device capacity {} (got {})",
                format_size(capacity),
                format_size(size)
            ),
        ));
    }
    if size < largest || size % 512 != 0 {
        // Not given, it is the device's capacity, which is what to change.
        let whose = if sec.has("size") {
            String::new()
        } else {
            " (the default, the device's capacity)".to_string()
        };
        return Err(sec.error(
            "size",
            format!(
                "must be a multiple of 512 bytes and at least the largest block size {largest} \
                 (got {size}{whose})"
            ),
        ));
    }
    Ok(size)
}
