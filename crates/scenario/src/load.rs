//! Loading a scenario: TOML text -> document tree -> `--set` overrides ->
//! resolved profiles -> validated [`Scenario`]. Every refusal is one
//! [`ScenarioError`] naming the file, the line and the key.

use std::path::Path;

use cint_policy::{Nanos, SEC};

use crate::emu_config::EmuConfig;
use crate::error::{Origin, ScenarioError};
use crate::model::Scenario;
use crate::overlay::{defaults_with, overlay, refuse_without_base};
use crate::profiles::{DeviceProfile, HostProfile, DEVICE_MODELS, HOST_MODELS, RENAMED_HOST_KEYS};
use crate::section::{quoted_list, Section};
use crate::tree::{self, Node, Table, Value};
use crate::units::format_duration;
use crate::{job, power, set, strategy, virt};

/// `seed` when the file does not give one.
pub const DEFAULT_SEED: u64 = 1;
/// `duration` when the file does not give one: one second of measured time.
pub const DEFAULT_DURATION: Nanos = SEC;
/// `warmup` when the file does not give one (like fio's `ramp_time`).
pub const DEFAULT_WARMUP: Nanos = 0;
/// Longest `duration` or `warmup` accepted: an hour.
pub const MAX_RUN_TIME: Nanos = 3_600 * SEC;
/// `[device] model` when the file does not give one.
pub const DEFAULT_DEVICE: &str = "optane-p4800x";
/// `[host] model` when the file does not give one.
pub const DEFAULT_HOST: &str = "xeon-e5-2660v4";
/// Most application cores a host may have.
pub const MAX_CORES: u64 = 4_096;
/// Most entries of one device queue (`queue_depth`), and so the deepest
/// `iodepth`: the NVMe limit (a 16-bit, zero-based queue size). Engines
/// allocate per entry, so this bounds their memory too.
pub const MAX_QUEUE_DEPTH: u64 = 65_536;
/// Most parallel units a device may have.
pub const MAX_PARALLEL_UNITS: u64 = 65_536;

const TOP_KEYS: &[&str] = &[
    "name",
    "seed",
    "duration",
    "warmup",
    "run_to_end",
    "device",
    "host",
    "strategy",
    "job",
    "sched_group",
    "emu",
    "hypervisor",
    "guest",
    "app",
];

/// Reads and validates a scenario file, applying `--set` overrides
/// (`KEY=VALUE` strings) first.
pub fn load_file(path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let source = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ScenarioError {
        source: source.clone(),
        origin: Origin::File,
        key: String::new(),
        message: format!("cannot read the scenario: {e}"),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| not_utf8(&source, e))?;
    load_str(&text, &source, sets)
}

/// A file that is not UTF-8, located at its first bad byte.
fn not_utf8(source: &str, e: std::string::FromUtf8Error) -> ScenarioError {
    let valid = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    let before = &bytes[..valid];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = valid
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    let lossy = String::from_utf8_lossy(bytes);
    ScenarioError {
        source: source.to_string(),
        origin: Origin::Line(line),
        key: tree::key_near_line(&lossy, line),
        message: format!(
            "not UTF-8 text: byte 0x{:02x} at column {column} (a scenario is a UTF-8 TOML file)",
            bytes[valid]
        ),
    }
}

/// Parses and validates scenario text; `source_name` names it in errors.
pub fn load_str(text: &str, source_name: &str, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let mut root = tree::parse(text, source_name)?;
    for arg in sets {
        set::apply(&mut root, arg, source_name)?;
    }
    let mut scenario = resolve(&root, source_name)?;
    scenario.origins = crate::KeyOrigins::of_document(&root);
    Ok(scenario)
}

fn resolve(root: &Table, source: &str) -> Result<Scenario, ScenarioError> {
    let mut top = Section::new(source, "", root, Origin::Line(1));
    let name = top.required_string("name")?;
    if name.trim().is_empty() {
        return Err(top.error("name", "must not be empty"));
    }
    let seed = seed_of(&mut top)?.unwrap_or(DEFAULT_SEED);
    // Both at most an hour, as every duration (`Section::duration`).
    let duration = top.duration("duration")?.unwrap_or(DEFAULT_DURATION);
    if duration == 0 {
        return Err(top.error("duration", "must be longer than zero"));
    }
    let warmup = top.duration("warmup")?.unwrap_or(DEFAULT_WARMUP);
    let run_to_end = top.bool("run_to_end")?.unwrap_or(false);

    let device_node = top.node("device");
    let device = resolve_device(source, device_node)?;
    let host_node = top.node("host");
    let host = resolve_host(source, host_node)?;
    let emu = match top.node("emu") {
        None => EmuConfig::default(),
        Some(n) => defaults_with(source, "emu", table_of(source, "emu", n)?)?,
    };

    let virt = virt::parse(
        source,
        top.node("hypervisor"),
        top.node("guest"),
        host.cores,
    )?;
    let strategies = strategy::parse_all(source, top.node("strategy"), &device)?;
    let app_node = top.node("app");
    let apps = crate::app::parse(source, app_node, top.node("strategy"), &device, &host)?;
    // The application models run on the host's cores and its one page
    // cache; beside guests they could land on a vCPU's core or share the
    // cache with a guest's kernel, neither of which is modelled.
    if !apps.programs.is_empty() && !virt.guests.is_empty() {
        return Err(top.error(
            "app",
            "application programs beside guests are not modelled (the apps run on host cores \
             and the host's page cache); run them in a scenario without [[guest]]",
        ));
    }
    // Applications may run alone: then no fio-like job is required.
    let jobs = match top.node("job") {
        None if !apps.programs.is_empty() => Vec::new(),
        node => job::parse_all(source, node, (&device, &host), &virt, run_to_end)?,
    };
    refuse_flusher_on_hypervisor(source, top.node("host"), &host, &virt, &jobs)?;
    let sched_groups =
        crate::sched_group::parse(source, top.node("sched_group"), app_node, top.node("job"))?;
    top.finish("the top level", TOP_KEYS)?;

    Ok(Scenario {
        name,
        source: source.to_string(),
        seed,
        duration,
        warmup,
        run_to_end,
        device,
        host,
        strategies,
        jobs,
        emu,
        virt,
        apps,
        sched_groups,
        origins: crate::KeyOrigins::default(),
    })
}

/// The host's flusher (a host kernel thread, run for its buffered jobs)
/// is refused on the hypervisor's cores, as a host job is.
fn refuse_flusher_on_hypervisor(
    source: &str,
    host_node: Option<&Node>,
    host: &HostProfile,
    virt: &crate::Virt,
    jobs: &[crate::Job],
) -> Result<(), ScenarioError> {
    let Some(hypervisor) = &virt.hypervisor else {
        return Ok(());
    };
    let flusher = host.page_cache.flusher_cpu;
    let host_buffered = jobs.iter().any(|j| {
        j.guest.is_none() && matches!(&j.work, crate::Work::Io(io) if io.through_page_cache())
    });
    if !host_buffered || !hypervisor.cores.contains(&flusher) {
        return Ok(());
    }
    Err(ScenarioError {
        source: source.to_string(),
        origin: nested_origin(host_node, &["page_cache", "flusher_cpu"]),
        key: "host.page_cache.flusher_cpu".into(),
        message: format!(
            "core {flusher} belongs to the hypervisor: the host's flusher, which writes back its \
             buffered jobs' pages, runs on a host core (set flusher_cpu to one)"
        ),
    })
}

/// `seed`: any u64, like `cint sim --seed`. TOML's integers stop at
/// 2^63-1, so a larger seed is written as a string of digits (`--set
/// seed=18446744073709551615` arrives as one).
fn seed_of(top: &mut Section<'_>) -> Result<Option<u64>, ScenarioError> {
    let range = format!("must be a whole number from 0 to {}", u64::MAX);
    match top.node("seed").map(|n| &n.value) {
        None => Ok(None),
        Some(Value::Int(i)) => u64::try_from(*i)
            .map(Some)
            .map_err(|_| top.error("seed", format!("{range} (got {i})"))),
        Some(Value::Str(s)) => s
            .parse::<u64>()
            .map(Some)
            .map_err(|_| top.error("seed", format!("{range} (got \"{s}\")"))),
        Some(v) => Err(top.error("seed", format!("{range} (got {})", v.type_name()))),
    }
}

/// The node as a table, or an error naming the section.
pub(crate) fn table_of<'a>(
    source: &str,
    key: &str,
    node: &'a Node,
) -> Result<&'a Table, ScenarioError> {
    match &node.value {
        Value::Table(t) => Ok(t),
        v => Err(ScenarioError {
            source: source.to_string(),
            origin: node.origin.clone(),
            key: key.to_string(),
            message: format!("must be a table ([{key}]), got {}", v.type_name()),
        }),
    }
}

fn model_of<'a>(
    source: &'a str,
    section: &str,
    node: Option<&'a Node>,
    default: &str,
    known: &[&str],
) -> Result<(String, Section<'a>), ScenarioError> {
    static EMPTY: Table = Vec::new();
    let (table, origin) = match node {
        Some(n) => (table_of(source, section, n)?, n.origin.clone()),
        None => (&EMPTY, Origin::Line(1)),
    };
    let mut sec = Section::new(source, section, table, origin);
    let model = sec.string("model")?.unwrap_or_else(|| default.to_string());
    if !known.contains(&model.as_str()) {
        return Err(sec.error(
            "model",
            format!(
                "unknown {section} model \"{model}\" (built-in: {})",
                quoted_list(known)
            ),
        ));
    }
    Ok((model, sec))
}

fn resolve_device(source: &str, node: Option<&Node>) -> Result<DeviceProfile, ScenarioError> {
    let (model, sec) = model_of(source, "device", node, DEFAULT_DEVICE, DEVICE_MODELS)?;
    let base =
        DeviceProfile::builtin(&model).ok_or_else(|| sec.error("model", "no such profile"))?;
    let user = node.map_or(&[][..], |n| match &n.value {
        Value::Table(t) => t.as_slice(),
        _ => &[],
    });
    if base.power.is_none() {
        refuse_without_base(
            source,
            ("device", &model),
            user,
            ("power", "power data"),
            &devices_with_power(),
        )?;
    }
    let device: DeviceProfile = overlay(source, "device", &base, user, &["model"])?;
    if let Some(p) = &device.power {
        power::check_device(source, node, p)?;
    }
    let counts = [
        (
            "parallel_units",
            u64::from(device.parallel_units),
            1,
            MAX_PARALLEL_UNITS,
            "",
        ),
        (
            "queue_depth",
            u64::from(device.queue_depth),
            1,
            MAX_QUEUE_DEPTH,
            ", the NVMe limit of entries per queue",
        ),
        ("queues", u64::from(device.queues), 0, MAX_CORES, ""),
        ("capacity", device.capacity.0, 1, u64::MAX, ""),
    ];
    for (key, v, min, max, why) in counts {
        if v < min {
            return Err(sec.error(key, format!("must be at least {min} (got {v})")));
        }
        if v > max {
            return Err(sec.error(key, format!("must be at most {max}{why} (got {v})")));
        }
    }
    // Every time of the model stays below an hour, so that sums of
    // times never overflow the engines' nanosecond clocks.
    let durations = [
        (&["read", "base"][..], device.read.base),
        (&["write", "base"][..], device.write.base),
        (&["jitter_spread"][..], device.jitter_spread),
        (&["irq_latency"][..], device.irq_latency),
        (&["reference_delta"][..], device.reference_delta),
    ];
    for (path, d) in durations {
        check_run_time(source, "device", node, path, d.0, false)?;
    }
    if let Some(sheet) = device.write_latency_sheet {
        check_run_time(
            source,
            "device",
            node,
            &["write_latency_sheet"],
            sheet.0,
            false,
        )?;
    }
    if device.capacity.0 % 512 != 0 {
        return Err(sec.error(
            "capacity",
            format!(
                "must be a multiple of 512 bytes (got {})",
                device.capacity.0
            ),
        ));
    }
    for (op, timing) in [("read", &device.read), ("write", &device.write)] {
        if timing.bandwidth == 0 {
            let origin = nested_origin(node, &[op, "bandwidth"]);
            return Err(ScenarioError {
                source: source.to_string(),
                origin,
                key: format!("device.{op}.bandwidth"),
                message: "must be at least 1 byte per second (got 0)".into(),
            });
        }
    }
    Ok(device)
}

fn resolve_host(source: &str, node: Option<&Node>) -> Result<HostProfile, ScenarioError> {
    let (model, sec) = model_of(source, "host", node, DEFAULT_HOST, HOST_MODELS)?;
    let base = HostProfile::builtin(&model).ok_or_else(|| sec.error("model", "no such profile"))?;
    let user = node.map_or(&[][..], |n| match &n.value {
        Value::Table(t) => t.as_slice(),
        _ => &[],
    });
    // In the order the file writes the host's keys.
    for (key, node) in user {
        for (old, message) in RENAMED_HOST_KEYS {
            let mut path = old.split('.');
            if path.next() != Some(key.as_str()) {
                continue;
            }
            let found = path.try_fold(node, |n, k| match &n.value {
                Value::Table(t) => tree::get(t, k),
                _ => None,
            });
            if let Some(found) = found {
                return Err(ScenarioError {
                    source: source.to_string(),
                    origin: found.origin.clone(),
                    key: format!("host.{old}"),
                    message: (*message).into(),
                });
            }
        }
    }
    if base.power.is_none() {
        refuse_without_base(
            source,
            ("host", &model),
            user,
            ("power", "power data"),
            &hosts_with_power(),
        )?;
    }
    if base.smt.is_none() {
        refuse_without_base(
            source,
            ("host", &model),
            user,
            ("smt", "SMT data"),
            &hosts_with_smt(),
        )?;
    }
    let host: HostProfile = overlay(source, "host", &base, user, &["model"])?;
    if let Some(p) = &host.power {
        power::check_host(source, node, p)?;
    }
    let cores = u64::from(host.cores);
    if cores == 0 {
        return Err(sec.error("cores", "must be at least 1 (got 0)"));
    }
    if cores > MAX_CORES {
        return Err(sec.error(
            "cores",
            format!("must be at most {MAX_CORES} (got {cores})"),
        ));
    }
    let online = u64::from(host.online_cpus);
    if online == 0 || online > MAX_CORES {
        return Err(sec.error(
            "online_cpus",
            format!("must be 1 to {MAX_CORES} (got {online})"),
        ));
    }
    // (key, value, must be > 0). A zero poll iteration would spin without
    // time passing; CFS divides its latency and granularity among threads.
    // A zero wake-up granularity is meaningful (Linux allows it): any
    // woken thread ahead in virtual runtime preempts.
    let durations = [
        ("syscall", host.syscall, false),
        ("user_per_io", host.user_per_io, false),
        (
            "user_per_io_gtod_reduce",
            host.user_per_io_gtod_reduce,
            false,
        ),
        ("direct_io", host.direct_io, false),
        ("block_submit", host.block_submit, false),
        ("aio_submit_call", host.aio_submit_call, false),
        ("aio_submit_iocb", host.aio_submit_iocb, false),
        ("aio_getevents_call", host.aio_getevents_call, false),
        ("aio_getevents_event", host.aio_getevents_event, false),
        ("uring_submit_call", host.uring_submit_call, false),
        ("uring_submit_sqe", host.uring_submit_sqe, false),
        ("uring_reap_event", host.uring_reap_event, false),
        ("irq_fixed", host.irq_fixed, false),
        ("irq_reap_entry", host.irq_reap_entry, false),
        ("wakeup", host.wakeup, false),
        ("context_switch", host.context_switch, false),
        ("context_switch_idle", host.context_switch_idle, false),
        ("return_to_user", host.return_to_user, false),
        ("poll_iteration", host.poll_iteration, true),
        ("timer_setup", host.timer_setup, false),
        ("timer_slack", host.timer_slack, false),
        ("task_timer_slack", host.task_timer_slack, false),
        ("sched_latency", host.sched_latency, true),
        ("sched_min_granularity", host.sched_min_granularity, true),
        (
            "sched_wakeup_granularity",
            host.sched_wakeup_granularity,
            false,
        ),
        ("tick", host.tick, true),
    ];
    for (key, d, positive) in durations {
        check_run_time(source, "host", node, &[key], d.0, positive)?;
    }
    // (key, value, largest, what the number is).
    let numbers = [
        (
            "cost_spread",
            host.cost_spread,
            MAX_COST_SPREAD,
            "a coefficient of variation",
        ),
        ("user_issue_share", host.user_issue_share, 1.0, "a fraction"),
    ];
    for (key, value, max, what) in numbers {
        // `contains` is false for NaN as well.
        if !(0.0..=max).contains(&value) {
            return Err(ScenarioError {
                source: source.to_string(),
                origin: nested_origin(node, &[key]),
                key: format!("host.{key}"),
                message: format!("must be {what} from 0 to {max} (got {value})"),
            });
        }
    }
    crate::page_cache::check(source, node, &host.page_cache, host.cores)?;
    if let Some(smt) = &host.smt {
        crate::smt::check(source, node, smt, host.cores)?;
    }
    Ok(host)
}

/// Built-in device profiles that carry power data.
fn devices_with_power() -> Vec<&'static str> {
    models_with(DEVICE_MODELS, |m| {
        DeviceProfile::builtin(m).is_some_and(|p| p.power.is_some())
    })
}

/// Built-in host profiles that carry power data.
fn hosts_with_power() -> Vec<&'static str> {
    models_with(HOST_MODELS, |m| {
        HostProfile::builtin(m).is_some_and(|p| p.power.is_some())
    })
}

/// Built-in host profiles with SMT data.
fn hosts_with_smt() -> Vec<&'static str> {
    models_with(HOST_MODELS, |m| {
        HostProfile::builtin(m).is_some_and(|p| p.smt.is_some())
    })
}

/// The built-in `models` for which `has` holds.
fn models_with(models: &[&'static str], has: impl Fn(&str) -> bool) -> Vec<&'static str> {
    models.iter().copied().filter(|m| has(m)).collect()
}

/// The largest `host.cost_spread`: a log-normal factor with this
/// coefficient of variation already makes one charge in a thousand about
/// 44 times its mean.
const MAX_COST_SPREAD: f64 = 4.0;

/// Why a time `ns` is refused, if it is past [`MAX_RUN_TIME`]: every time
/// a scenario, a fio job file or a command line gives is at most an hour,
/// so that sums of times never overflow the engines' clocks.
pub fn past_an_hour(ns: Nanos) -> Option<String> {
    (ns > MAX_RUN_TIME).then(|| format!("must be at most 3600s (got {})", format_duration(ns)))
}

/// Refuses a profile time above [`MAX_RUN_TIME`], or zero when
/// `positive`, at the line that set it (the section's when it came from
/// the built-in profile).
fn check_run_time(
    source: &str,
    section: &str,
    node: Option<&Node>,
    path: &[&str],
    ns: Nanos,
    positive: bool,
) -> Result<(), ScenarioError> {
    let message = if positive && ns == 0 {
        "must be longer than zero".to_string()
    } else if let Some(why) = past_an_hour(ns) {
        why
    } else {
        return Ok(());
    };
    Err(ScenarioError {
        source: source.to_string(),
        origin: nested_origin(node, path),
        key: format!("{section}.{}", path.join(".")),
        message,
    })
}

/// Where a nested key (`read.bandwidth`) was written, or its section.
pub(crate) fn nested_origin(node: Option<&Node>, path: &[&str]) -> Origin {
    let Some(mut node) = node else {
        return Origin::Line(1);
    };
    for p in path {
        match &node.value {
            Value::Table(t) => match tree::get(t, p) {
                Some(n) => node = n,
                None => break,
            },
            _ => break,
        }
    }
    node.origin.clone()
}
