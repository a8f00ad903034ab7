//! fio job files as scenarios.
//!
//! fio users already have job files; this module turns one into a
//! [`Scenario`] on a chosen device and host profile so the same workload
//! can be compared across interrupt strategies.
//!
//! The INI dialect is fio's: `[global]` and job sections, `key=value` or a
//! bare flag (`direct`), `;` and `#` comments (from the first `;` or `#`
//! anywhere on a line to its end, as fio cuts them), and inheritance: a
//! job starts from every `[global]` option written above it. fio's
//! defaults apply (`rw=read`, `bs=4k`, `iodepth=1`, `ioengine=psync`,
//! `direct=0`).
//!
//! What each option becomes (modelled as a scenario key, warned as
//! meaningless in a model, or refused by name) is documented in
//! docs/FIO.md, the contract this module keeps. In short: the engine,
//! pattern and depth options map onto the job's keys; request shaping
//! (`bssplit`, `bsrange`, `rate`, `rate_process`, `thinktime`,
//! `number_ios`, `size`/`io_size` x `loops` without `time_based`, `flow`,
//! `exitall`, `ss`, the patched fio's `barrier`) onto `IoShape`; groups
//! (`stonewall`, `wait_for`) and `startdelay` onto the job's `Schedule`;
//! `${VAR}` is expanded from the environment (or [`FioArgs::vars`]).
//!
//! An option that would change what is measured but has no model is an
//! error naming the file, the line and the option; an option with no
//! meaning in a model (`filename`, `group_reporting`, ...) is a one-line
//! warning.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use cint_policy::config::{AdaptiveParams, CinterruptsParams};
use cint_policy::{Nanos, PolicyConfig};
use cint_scenario::units::{format_duration, parse_size};
use cint_scenario::{
    BsShare, CompletionMode, DeviceProfile, EmuConfig, Engine, ExitScope, HostProfile, IoJob,
    IoShape, Job, Rw, Scenario, Schedule, SteadyState, Strategy, Work,
};

/// Options accepted and ignored because a model has no use for them.
const MEANINGLESS: &[&str] = &[
    "filename",
    "filename_format",
    "directory",
    "description",
    "norandommap",
    "group_reporting",
    "thread",
    "threads",
    "randrepeat",
    "randseed",
    "random_generator",
    "invalidate",
    "unlink",
    "unified_rw_reporting",
    "new_group",
    "loops",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "per_job_logs",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "significant_figures",
    "clocksource",
    "allow_mounted_write",
    "fallocate",
    "create_on_open",
    "refill_buffers",
    "scramble_buffers",
    "zero_buffers",
    "buffer_compress_percentage",
    "fixedbufs",
    "registerfiles",
    "nonvectored",
    "lockmem",
    "exitall_on_error",
    "stats",
    "overwrite",
    "kb_base",
    // The cinterrupts artifact's job files.
    "numa_mem_policy",
    "numa_cpu_nodes",
    "disable_bw",
    "disk_util",
    // Offsets: the device model's service time does not depend on where a
    // request lands (no seek, no cache), so these are checked, then warned.
    "blockalign",
    "offset_increment",
    // Data content: the model moves bytes, it does not look at them.
    "dedupe_mode",
    "dedupe_global",
    "dedupe_percentage",
    "dedupe_working_set_percentage",
    "buffer_pattern",
    // No I/O scheduler sits in front of the NVMe queues in the model (as
    // with Linux's `none` for NVMe), so request priorities change nothing.
    "prio",
    "prioclass",
    "cmdprio",
    "cmdprio_class",
    "cmdprio_percentage",
    "cmdprio_bssplit",
    "log_prio",
    "log_offset",
    // The model has no I/O errors to continue on or dump.
    "continue_on_error",
    "ignore_error",
    "error_dump",
    // fio aborts a job that falls below these; the model reports its rate.
    "ratemin",
    "rate_iops_min",
    "ramp_time_group",
    // At the job's end, after what is measured.
    "end_fsync",
    "fsync_on_close",
    "create_serialize",
    "allow_file_create",
    "gtod_cpu",
];

/// Options refused because a block-device model cannot be what they ask
/// for (zoned devices, passthrough commands, data checks, trims).
const NOT_A_BLOCK_MODEL: &[(&str, &str)] = &[
    ("zonemode", "zoned block devices are not modelled"),
    ("zonesize", "zoned block devices are not modelled"),
    ("zonerange", "zoned block devices are not modelled"),
    ("zoneskip", "zoned block devices are not modelled"),
    ("max_open_zones", "zoned block devices are not modelled"),
    ("read_beyond_wp", "zoned block devices are not modelled"),
    (
        "verify",
        "the model moves no data, so there is nothing to verify",
    ),
    (
        "do_verify",
        "the model moves no data, so there is nothing to verify",
    ),
    (
        "verify_backlog",
        "the model moves no data, so there is nothing to verify",
    ),
    ("fill_device", "the model's device never fills up"),
];

/// What to build around the jobs of a fio file.
#[derive(Clone, Debug, PartialEq)]
pub struct FioArgs {
    /// Built-in device profile name.
    pub device: String,
    /// Built-in host profile name.
    pub host: String,
    /// Strategies to compare; `None`: `none`, `adaptive` and `cinterrupts`
    /// at the device profile's reference `delta` and `thr` (or `poll` when
    /// every job sets `hipri`).
    pub strategies: Option<Vec<Strategy>>,
    /// Seed of the simulator's generator.
    pub seed: u64,
    /// Measured time when the file gives no `runtime`.
    pub default_duration: Nanos,
    /// Scenario name; `None`: the file's stem.
    pub name: Option<String>,
    /// `--set KEY=VALUE` overrides, applied to the imported scenario with
    /// the scenario parser's own rules (e.g. `duration=50ms`).
    pub sets: Vec<String>,
    /// Values of fio's `${VAR}`; `None`: the process environment.
    pub vars: Option<BTreeMap<String, String>>,
}

impl FioArgs {
    /// The reference device and host of the cinterrupts paper, default
    /// strategies, seed 1, 200 ms when the file has no `runtime`.
    pub fn new(device: &str, host: &str) -> FioArgs {
        FioArgs {
            device: device.into(),
            host: host.into(),
            strategies: None,
            seed: 1,
            default_duration: 200_000_000,
            name: None,
            sets: Vec::new(),
            vars: None,
        }
    }
}

/// A fio file turned into a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct FioImport {
    /// The scenario, ready to run.
    pub scenario: Scenario,
    /// One line per ignored option or default taken, naming file and line.
    pub warnings: Vec<String>,
}

/// Why a fio file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioError {
    /// The file (or `<string>`).
    pub file: String,
    /// 1-based line, when one line is to blame.
    pub line: Option<usize>,
    /// What is wrong, one line.
    pub message: String,
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for FioError {}

/// Reads and imports a fio job file.
pub fn import_file(path: &Path, args: &FioArgs) -> Result<FioImport, FioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| FioError {
        file: file.clone(),
        line: None,
        message: format!("cannot read: {e}"),
    })?;
    let mut args = args.clone();
    if args.name.is_none() {
        args.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    }
    import_str(&text, &file, &args)
}

/// Imports fio job-file text; `file` names it in messages.
pub fn import_str(text: &str, file: &str, args: &FioArgs) -> Result<FioImport, FioError> {
    let sections = parse_ini(text, file, args.vars.as_ref())?;
    let mut ctx = Ctx {
        file,
        warnings: Vec::new(),
    };
    let mut globals: Vec<Opt> = Vec::new();
    let mut specs: Vec<JobSpec> = Vec::new();
    for section in sections {
        if section.name == "global" {
            for opt in section.options {
                // Validate once, where it is written, so the message points there.
                apply(&mut JobSpec::new("global", 0), &opt, &mut ctx)?;
                globals.push(opt);
            }
            continue;
        }
        let mut spec = JobSpec::new(&section.name, section.line);
        let mut silent = Ctx {
            file,
            warnings: Vec::new(),
        };
        // A `name` in [global] would give every job the same name; jobs keep
        // their section names instead.
        for opt in globals.iter().filter(|o| o.key != "name") {
            apply(&mut spec, opt, &mut silent)?;
        }
        for opt in &section.options {
            apply(&mut spec, opt, &mut ctx)?;
        }
        let usable = usable_name(&spec.name);
        if usable.is_empty() {
            return Err(ctx.err(section.line, "a job needs a non-empty name".into()));
        }
        if usable != spec.name {
            ctx.warn(
                section.line,
                format!(
                    "job '{}' is named '{usable}' (job names are --set path segments: no '.', \
                     '=' or spaces)",
                    spec.name
                ),
            );
            spec.name = usable;
        }
        if specs.iter().any(|s| s.name == spec.name) {
            return Err(ctx.err(
                section.line,
                format!("job '{}' is defined twice", spec.name),
            ));
        }
        specs.push(spec);
    }
    if specs.is_empty() {
        return Err(ctx.err_file("no job section (only [global] or nothing)".into()));
    }
    let built = build(specs, args, &mut ctx)?;
    let scenario = revalidate(&built, file, &args.sets)?;
    Ok(FioImport {
        scenario,
        warnings: ctx.warnings,
    })
}

/// Writes the imported scenario as scenario TOML and loads it back, so a
/// fio file passes exactly the validation a TOML scenario does and takes
/// `--set` overrides the same way.
fn revalidate(built: &Scenario, file: &str, sets: &[String]) -> Result<Scenario, FioError> {
    let toml = cint_scenario::to_toml(built);
    cint_scenario::load_str(&toml, file, sets).map_err(|e| FioError {
        file: file.into(),
        line: None,
        message: match e.origin {
            // The parser names the file first, as this error will: once
            // is enough.
            cint_scenario::Origin::Set(_) => {
                let text = e.to_string();
                match text.strip_prefix(&format!("{file}: ")) {
                    Some(rest) => rest.to_string(),
                    None => text,
                }
            }
            _ if sets.is_empty() => {
                format!("the imported scenario is invalid: {}: {}", e.key, e.message)
            }
            _ => format!(
                "the imported scenario with the --set overrides is invalid: {}: {}",
                e.key, e.message
            ),
        },
    })
}

/// fio names jobs freely; scenario names are `--set` path segments.
fn usable_name(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c == '.' || c == '=' || c.is_whitespace() {
                '-'
            } else {
                c
            }
        })
        .collect()
}

struct Ctx<'a> {
    file: &'a str,
    warnings: Vec<String>,
}

impl Ctx<'_> {
    fn err(&self, line: usize, message: String) -> FioError {
        FioError {
            file: self.file.into(),
            line: Some(line),
            message,
        }
    }

    fn err_file(&self, message: String) -> FioError {
        FioError {
            file: self.file.into(),
            line: None,
            message,
        }
    }

    fn warn(&mut self, line: usize, message: String) {
        self.warnings
            .push(format!("{}:{}: warning: {}", self.file, line, message));
    }
}

#[derive(Clone, Debug)]
struct Opt {
    key: String,
    value: Option<String>,
    line: usize,
}

struct Section {
    name: String,
    line: usize,
    options: Vec<Opt>,
}

fn strip_comment(line: &str) -> &str {
    // fio (strip_blank_end in parse.c) cuts every line at its first ';'
    // or '#', wherever it stands: `bs=4k;4 KiB blocks` is `bs=4k`, and
    // neither character can be part of a value. Reading the file the way
    // fio does means a job file means the same thing to both.
    line.find([';', '#']).map_or(line, |i| &line[..i])
}

/// fio's `${VAR}` expansion from the environment (or `vars`); a variable
/// that is not set is an error naming it.
fn expand_vars(line: &str, vars: Option<&BTreeMap<String, String>>) -> Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("'${{' without a closing '}}' in '{line}'"))?;
        let name = &after[..end];
        let value = match vars {
            Some(v) => v.get(name).cloned(),
            None => std::env::var(name).ok(),
        };
        match value {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "'${{{name}}}' is not set (fio takes it from the environment)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn parse_ini(
    text: &str,
    file: &str,
    vars: Option<&BTreeMap<String, String>>,
) -> Result<Vec<Section>, FioError> {
    let err = |line: usize, message: String| FioError {
        file: file.into(),
        line: Some(line),
        message,
    };
    let mut sections: Vec<Section> = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let expanded = expand_vars(strip_comment(raw), vars).map_err(|m| err(line_no, m))?;
        let line = expanded.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| err(line_no, format!("malformed section header '{line}'")))?;
            sections.push(Section {
                name: name.into(),
                line: line_no,
                options: Vec::new(),
            });
            continue;
        }
        if line.starts_with("include ") {
            return Err(err(
                line_no,
                "'include' is not supported; inline the included file".into(),
            ));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (line, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(err(line_no, format!("cannot read '{line}' as key=value")));
        }
        let section = sections
            .last_mut()
            .ok_or_else(|| err(line_no, format!("option '{key}' before any [section]")))?;
        section.options.push(Opt {
            key: key.into(),
            value,
            line: line_no,
        });
    }
    Ok(sections)
}

/// A value and the line that set it.
#[derive(Clone, Copy, Debug)]
struct At<T> {
    value: T,
    line: usize,
}

impl<T> At<T> {
    fn new(line: usize, value: T) -> At<T> {
        At { value, line }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum SizeSpec {
    Bytes(u64),
    Percent(u64),
}

#[derive(Clone, Debug)]
struct JobSpec {
    name: String,
    line: usize,
    rw: Option<At<Rw>>,
    bs: Option<At<u64>>,
    iodepth: Option<At<u32>>,
    batch: Option<At<u32>>,
    batch_complete_min: Option<At<u32>>,
    batch_complete_max: Option<At<u32>>,
    gtod_reduce: Option<At<bool>>,
    engine: Option<At<Engine>>,
    numjobs: Option<At<u32>>,
    cpus: Option<At<Vec<u32>>>,
    cpus_split: Option<At<bool>>,
    direct: Option<At<bool>>,
    runtime: Option<At<Nanos>>,
    ramp: Option<At<Nanos>>,
    size: Option<At<SizeSpec>>,
    time_based: bool,
    rwmixread: Option<At<u8>>,
    hipri: Option<At<bool>>,
    nowait: Option<At<bool>>,
    bssplit: Option<At<Vec<BsShare>>>,
    bssplit_write: Vec<BsShare>,
    bssplit_write_differs: bool,
    filesize: Option<At<u64>>,
    bsrange: Option<At<(u64, u64)>>,
    /// `rate`: bytes/s for reads and for writes (0: no cap).
    rate: Option<At<[u64; 2]>>,
    /// `rate_iops` for reads and for writes (0: no cap).
    rate_iops_dirs: Option<At<[u64; 2]>>,
    poisson: bool,
    barrier: Option<At<bool>>,
    thinktime: Option<At<Nanos>>,
    thinktime_spin: Option<At<Nanos>>,
    thinktime_blocks: Option<At<u32>>,
    startdelay: Option<At<Nanos>>,
    number_ios: Option<At<u64>>,
    percentile_list: Option<At<Vec<f64>>>,
    stonewall: bool,
    wait_for: Option<At<String>>,
    io_size: Option<At<u64>>,
    loops: u64,
    fsync: Option<At<u32>>,
    fdatasync: Option<At<u32>>,
    flow: Option<At<u32>>,
    flow_id: u32,
    flow_sleep: Nanos,
    exitall: bool,
    exit_all_jobs: bool,
    steady: Option<At<String>>,
    ss_dur: Option<At<Nanos>>,
    ss_ramp: Nanos,
}

impl JobSpec {
    fn new(name: &str, line: usize) -> JobSpec {
        JobSpec {
            name: name.into(),
            line,
            rw: None,
            bs: None,
            iodepth: None,
            batch: None,
            batch_complete_min: None,
            batch_complete_max: None,
            gtod_reduce: None,
            engine: None,
            numjobs: None,
            cpus: None,
            cpus_split: None,
            direct: None,
            runtime: None,
            ramp: None,
            size: None,
            time_based: false,
            rwmixread: None,
            hipri: None,
            nowait: None,
            bssplit: None,
            bssplit_write: Vec::new(),
            bssplit_write_differs: false,
            filesize: None,
            bsrange: None,
            rate: None,
            rate_iops_dirs: None,
            poisson: false,
            barrier: None,
            thinktime: None,
            thinktime_spin: None,
            thinktime_blocks: None,
            startdelay: None,
            number_ios: None,
            percentile_list: None,
            stonewall: false,
            wait_for: None,
            io_size: None,
            loops: 1,
            fsync: None,
            fdatasync: None,
            flow: None,
            flow_id: 0,
            flow_sleep: 0,
            exitall: false,
            exit_all_jobs: false,
            steady: None,
            ss_dur: None,
            ss_ramp: 0,
        }
    }
}

fn parse_bool(v: Option<&str>) -> Option<bool> {
    match v.map(str::to_ascii_lowercase).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Some(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Some(false),
        _ => None,
    }
}

/// fio time values: a bare number is seconds; `d`, `h`, `m` (minutes),
/// `s`, `ms`/`msec`, `us`/`usec`, `ns`.
fn parse_fio_time(s: &str) -> Option<Nanos> {
    parse_fio_time_in(s, 1_000_000_000)
}

/// A fio time whose bare number is in `unit` ns (fio's `thinktime` is in
/// microseconds, `runtime` and `startdelay` in seconds).
fn parse_fio_time_in(s: &str, unit: Nanos) -> Option<Nanos> {
    let s = s.trim();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let bare = unit;
    let (num, unit) = s.split_at(end);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" => bare,
        "s" | "sec" => 1_000_000_000,
        "ms" | "msec" => 1_000_000,
        "us" | "usec" => 1_000,
        "ns" | "nsec" => 1,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// fio's per-direction values `READS,WRITES[,TRIMS]`: the read part and
/// the write part if one is written (a single value is both).
fn split_dirs(v: &str) -> (&str, Option<&str>) {
    let mut parts = v.split(',').map(str::trim);
    let r = parts.next().unwrap_or("");
    match parts.next() {
        None => (r, None),
        Some(w) => (r, Some(w)),
    }
}

/// A per-direction number (`rate`, `rate_iops`): `[reads, writes]`, 0
/// for a direction left empty (no cap), a single value for both.
fn per_direction(v: &str, parse: impl Fn(&str) -> Option<u64>) -> Option<[u64; 2]> {
    let (r, w) = split_dirs(v);
    let one = |p: &str| if p.is_empty() { Some(0) } else { parse(p) };
    let read = one(r)?;
    let write = match w {
        None => read,
        Some(w) => one(w)?,
    };
    (read > 0 || write > 0).then_some([read, write])
}

/// Checks fio's `random_distribution` syntax: `random`, `zipf:T`,
/// `pareto:H`, `normal:S[:C]`/`gauss`, `zoned:P/R:...`, `zoned_abs:...`.
fn check_distribution(v: &str) -> Result<(), String> {
    let (kind, args) = match v.split_once(':') {
        Some((k, a)) => (k.trim(), Some(a.trim())),
        None => (v.trim(), None),
    };
    let number = |a: Option<&str>| -> Result<f64, String> {
        a.and_then(|a| a.split(':').next())
            .and_then(|n| n.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite())
            .ok_or_else(|| format!("'{kind}' needs a number (e.g. {kind}:1.2)"))
    };
    match kind {
        "random" => Ok(()),
        "zipf" => number(args).and_then(|t| {
            (t > 0.0 && t != 1.0)
                .then_some(())
                .ok_or_else(|| "the zipf exponent must be positive and not 1".to_string())
        }),
        "pareto" => number(args).and_then(|h| {
            (h > 0.0 && h < 1.0)
                .then_some(())
                .ok_or_else(|| "the pareto power must be in (0, 1)".to_string())
        }),
        "normal" | "gauss" => number(args).map(|_| ()),
        "zoned" | "zoned_abs" => {
            let a =
                args.ok_or_else(|| format!("'{kind}' needs zones (e.g. {kind}:60/10:40/90)"))?;
            for zone in a.split(':').map(str::trim).filter(|z| !z.is_empty()) {
                let ok = zone.split('/').all(|p| {
                    let p = p.trim();
                    p.is_empty() || p.parse::<u64>().is_ok() || parse_size(p).is_ok()
                });
                if !ok {
                    return Err(format!("'{zone}' is not a zone (ACCESS/RANGE)"));
                }
            }
            Ok(())
        }
        _ => Err("not a distribution (random, zipf, pareto, normal, zoned, zoned_abs)".into()),
    }
}

/// A CPU list: `3`, `0-3`, `1,5,8-9`.
fn parse_cpus(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 4096 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn apply(spec: &mut JobSpec, opt: &Opt, ctx: &mut Ctx) -> Result<(), FioError> {
    let key = opt.key.as_str();
    let line = opt.line;
    let raw = opt.value.as_deref();
    let bad = |what: &str| {
        ctx.err(
            line,
            format!("option '{key}': '{}' is not {what}", raw.unwrap_or("")),
        )
    };
    let need = || ctx.err(line, format!("option '{key}' needs a value"));
    let int = |lo: u64, hi: u64| -> Result<u64, FioError> {
        let v = raw.ok_or_else(need)?;
        match v.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(bad(&format!("an integer in {lo}..={hi}"))),
        }
    };
    match key {
        "rw" | "readwrite" => {
            let v = raw.ok_or_else(need)?;
            // `read:8k` (sequential, skip 8k after each request) or
            // `randread:8` (8 requests per random offset): both only move
            // offsets, which the device model's service time ignores.
            let (pattern, suffix) = match v.split_once(':') {
                Some((p, n)) => (p.trim(), Some(n.trim())),
                None => (v, None),
            };
            let rw = match pattern {
                "read" => Rw::Read,
                "write" => Rw::Write,
                "randread" => Rw::RandRead,
                "randwrite" => Rw::RandWrite,
                "randrw" => Rw::RandRw,
                "rw" | "readwrite" => Rw::ReadWrite,
                _ => {
                    return Err(ctx.err(
                        line,
                        format!(
                            "option '{key}={v}' is not supported (supported: read, write, \
                             randread, randwrite, randrw, rw/readwrite; the model has no trims)"
                        ),
                    ))
                }
            };
            if let Some(n) = suffix {
                let magnitude = n.strip_prefix('-').unwrap_or(n);
                if parse_size(magnitude).is_err() {
                    return Err(bad("a pattern with a size suffix (e.g. read:8k)"));
                }
                ctx.warn(
                    line,
                    format!(
                        "option '{key}={v}': the ':{n}' offset step is accepted but changes \
                         nothing (the device model's service time does not depend on offsets)"
                    ),
                );
            }
            spec.rw = Some(At::new(line, rw));
        }
        "bssplit" => {
            let v = raw.ok_or_else(need)?;
            let (reads, writes) = cint_scenario::shape::parse_bssplit_dirs(v)
                .map_err(|e| ctx.err(line, format!("option '{key}={v}': {e}")))?;
            if !writes.is_empty() {
                spec.bssplit_write_differs = true;
            }
            spec.bssplit = Some(At::new(line, reads));
            spec.bssplit_write = writes;
        }
        "bsrange" | "blocksize_range" => {
            let v = raw.ok_or_else(need)?;
            let (r, w) = split_dirs(v);
            let range = cint_scenario::shape::parse_bsrange(r)
                .map_err(|e| ctx.err(line, format!("option '{key}={v}': {e}")))?;
            if let Some(w) = w {
                if cint_scenario::shape::parse_bsrange(w).ok() != Some(range) {
                    return Err(ctx.err(
                        line,
                        format!(
                            "option '{key}={v}': different read and write ranges are not supported"
                        ),
                    ));
                }
            }
            spec.bsrange = Some(At::new(line, range));
        }
        "rate" => {
            let v = raw.ok_or_else(need)?;
            let dirs = per_direction(v, |p| parse_size(p).ok()).ok_or_else(|| {
                bad("a rate in bytes per second per direction (e.g. 10m or 1m,500k)")
            })?;
            spec.rate = Some(At::new(line, dirs));
        }
        "rate_process" => match raw.ok_or_else(need)? {
            "linear" => spec.poisson = false,
            "poisson" => spec.poisson = true,
            _ => return Err(bad("'linear' or 'poisson'")),
        },
        "barrier" => {
            // The cinterrupts authors' fio patch: Barrier on the last
            // iocb of each io_submit.
            spec.barrier = Some(At::new(
                line,
                parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
            ))
        }
        "thinktime" | "thinktime_spin" => {
            let t = parse_fio_time_in(raw.ok_or_else(need)?, 1_000)
                .ok_or_else(|| bad("a time (a bare number is microseconds)"))?;
            let slot = if key == "thinktime" {
                &mut spec.thinktime
            } else {
                &mut spec.thinktime_spin
            };
            *slot = Some(At::new(line, t));
        }
        "thinktime_blocks" => {
            spec.thinktime_blocks = Some(At::new(line, int(1, u64::from(u32::MAX))? as u32))
        }
        "thinktime_blocks_type" => match raw.ok_or_else(need)? {
            "complete" => {}
            _ => {
                return Err(ctx.err(
                    line,
                    format!(
                        "option '{key}={}' is not supported (the model counts completed \
                         requests, fio's default 'complete')",
                        raw.unwrap_or("")
                    ),
                ))
            }
        },
        "startdelay" => {
            let v = raw.ok_or_else(need)?;
            if v.contains('-') {
                return Err(ctx.err(
                    line,
                    format!("option '{key}={v}': a random start delay range is not supported"),
                ));
            }
            let t = parse_fio_time(v).ok_or_else(|| bad("a time (e.g. 2, 500ms)"))?;
            spec.startdelay = Some(At::new(line, t));
        }
        "number_ios" => spec.number_ios = Some(At::new(line, int(0, i64::MAX as u64)?)),
        "percentile_list" => {
            let v = raw.ok_or_else(need)?;
            let list = cint_scenario::shape::parse_percentile_list(v)
                .map_err(|e| ctx.err(line, format!("option '{key}={v}': {e}")))?;
            spec.percentile_list = Some(At::new(line, list));
        }
        "loops" => spec.loops = int(1, u64::from(u32::MAX))?,
        "fsync" | "fdatasync" => {
            let n = At::new(line, int(0, u64::from(u32::MAX))? as u32);
            if key == "fsync" {
                spec.fsync = Some(n);
            } else {
                spec.fdatasync = Some(n);
            }
        }
        "io_size" | "io_limit" => {
            let v = raw.ok_or_else(need)?;
            let b = parse_size(v)
                .ok()
                .filter(|&b| b > 0)
                .ok_or_else(|| bad("a size"))?;
            spec.io_size = Some(At::new(line, b));
        }
        "random_distribution" => {
            let v = raw.ok_or_else(need)?;
            check_distribution(v).map_err(|e| ctx.err(line, format!("option '{key}={v}': {e}")))?;
            ctx.warn(
                line,
                format!(
                    "option '{key}={v}' is accepted but changes nothing: it only chooses \
                     offsets, and the device model's service time does not depend on offsets"
                ),
            );
        }
        "offset" => {
            let v = raw.ok_or_else(need)?;
            let ok = match v.strip_suffix('%') {
                Some(p) => p.trim().parse::<u64>().is_ok_and(|p| p <= 100),
                None => parse_size(v).is_ok(),
            };
            if !ok {
                return Err(bad("a size or a percentage"));
            }
            ctx.warn(
                line,
                "option 'offset' is accepted but changes nothing (the device model's service \
                 time does not depend on offsets)"
                    .into(),
            );
        }
        "filesize" => {
            let v = raw.ok_or_else(need)?;
            if v.contains('-') {
                return Err(ctx.err(
                    line,
                    format!("option '{key}={v}': a random file size range is not supported"),
                ));
            }
            let b = parse_size(v)
                .ok()
                .filter(|&b| b > 0)
                .ok_or_else(|| bad("a size"))?;
            spec.filesize = Some(At::new(line, b));
        }
        "stonewall" | "wait_for_previous" => {
            spec.stonewall = parse_bool(raw).ok_or_else(|| bad("a boolean"))?;
        }
        "wait_for" => {
            let v = raw.ok_or_else(need)?;
            spec.wait_for = Some(At::new(line, v.to_string()));
        }
        "flow" => {
            let v = raw.ok_or_else(need)?;
            let w: i64 = v.parse().map_err(|_| bad("an integer weight"))?;
            if w < 0 {
                return Err(ctx.err(
                    line,
                    format!("option 'flow={v}': negative weights are not supported (fio 3 weighs jobs by flow >= 0)"),
                ));
            }
            spec.flow = Some(At::new(
                line,
                u32::try_from(w).map_err(|_| bad("a weight below 2^32"))?,
            ));
        }
        "flow_id" => spec.flow_id = int(0, u64::from(u32::MAX))? as u32,
        "flow_sleep" => {
            spec.flow_sleep = parse_fio_time_in(raw.ok_or_else(need)?, 1_000)
                .ok_or_else(|| bad("a time (a bare number is microseconds)"))?;
        }
        "exitall" => spec.exitall = parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
        "exit_what" => {
            spec.exit_all_jobs = match raw.ok_or_else(need)? {
                // One group runs at a time in the model, so ending every
                // running job is ending the group.
                "group" | "stonewall" => false,
                "all" => true,
                _ => return Err(bad("'group', 'stonewall' or 'all'")),
            }
        }
        "ss" => {
            let v = raw.ok_or_else(need)?;
            cint_scenario::shape::parse_steady(v)
                .map_err(|e| ctx.err(line, format!("option '{key}={v}': {e}")))?;
            spec.steady = Some(At::new(line, v.to_string()));
        }
        "ss_dur" => {
            let t = parse_fio_time(raw.ok_or_else(need)?)
                .filter(|&t| t >= 1_000_000_000 && t % 1_000_000_000 == 0)
                .ok_or_else(|| bad("whole seconds, at least 1"))?;
            spec.ss_dur = Some(At::new(line, t));
        }
        "ss_ramp" => {
            spec.ss_ramp =
                parse_fio_time(raw.ok_or_else(need)?).ok_or_else(|| bad("a time (e.g. 10s)"))?;
        }
        "io_submit_mode" => {
            match raw.ok_or_else(need)? {
                "inline" => {}
                "offload" => return Err(ctx.err(
                    line,
                    "option 'io_submit_mode=offload' is not supported: submission by a pool of \
                     worker threads is not modelled"
                        .into(),
                )),
                _ => return Err(bad("'inline' or 'offload'")),
            }
        }
        "bs" | "blocksize" => {
            let v = raw.ok_or_else(need)?;
            let mut sizes = v.split(',').map(str::trim).filter(|p| !p.is_empty());
            let first = sizes.next().ok_or_else(need)?;
            let bs = parse_size(first).map_err(|_| bad("a size"))?;
            for other in sizes {
                if parse_size(other).ok() != Some(bs) {
                    return Err(ctx.err(
                        line,
                        format!("option '{key}={v}': different read and write block sizes are not supported"),
                    ));
                }
            }
            if bs == 0 || bs % 512 != 0 {
                return Err(bad("a positive multiple of 512 bytes"));
            }
            spec.bs = Some(At::new(line, bs));
        }
        "iodepth" => spec.iodepth = Some(At::new(line, int(1, 65_535)? as u32)),
        "iodepth_batch_submit" | "iodepth_batch" => {
            spec.batch = Some(At::new(line, int(0, 65_535)?.max(1) as u32));
        }
        "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
            let n = int(0, 65_535)?;
            if n == 0 {
                return Err(ctx.err(
                    line,
                    format!("option '{key}=0' (reaping without waiting) is not supported"),
                ));
            }
            spec.batch_complete_min = Some(At::new(line, n as u32));
        }
        "iodepth_batch_complete_max" => {
            let n = int(1, 65_535)?;
            spec.batch_complete_max = Some(At::new(line, n as u32));
        }
        "gtod_reduce" => {
            spec.gtod_reduce = Some(At::new(
                line,
                parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
            ))
        }
        "ioengine" => {
            let v = raw.ok_or_else(need)?;
            let engine = match v {
                "psync" | "sync" => Engine::Psync,
                "pvsync2" => Engine::Pvsync2,
                "libaio" => Engine::Libaio,
                "io_uring" => Engine::IoUring,
                _ => {
                    return Err(ctx.err(
                        line,
                        format!(
                            "option 'ioengine={v}' is not supported (supported: psync, sync, \
                             pvsync2, libaio, io_uring)"
                        ),
                    ))
                }
            };
            spec.engine = Some(At::new(line, engine));
        }
        "numjobs" => spec.numjobs = Some(At::new(line, int(1, 4_096)? as u32)),
        "cpus_allowed" => {
            let v = raw.ok_or_else(need)?;
            let cpus = parse_cpus(v)
                .filter(|c| !c.is_empty())
                .ok_or_else(|| bad("a CPU list"))?;
            spec.cpus = Some(At::new(line, cpus));
        }
        "cpus_allowed_policy" => {
            let split = match raw.ok_or_else(need)? {
                "shared" => false,
                "split" => true,
                _ => return Err(bad("'shared' or 'split'")),
            };
            spec.cpus_split = Some(At::new(line, split));
        }
        "rate_iops" => {
            let v = raw.ok_or_else(need)?;
            let dirs = per_direction(v, |p| p.parse::<u64>().ok())
                .ok_or_else(|| bad("IO/s per direction (e.g. 5000 or 5000,1000)"))?;
            spec.rate_iops_dirs = Some(At::new(line, dirs));
        }
        "direct" => {
            spec.direct = Some(At::new(
                line,
                parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
            ))
        }
        "buffered" => {
            spec.direct = Some(At::new(
                line,
                !parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
            ))
        }
        "runtime" | "timeout" => {
            let t = parse_fio_time(raw.ok_or_else(need)?)
                .filter(|&t| t > 0)
                .ok_or_else(|| bad("a positive time (e.g. 10, 500ms, 2m)"))?;
            spec.runtime = Some(At::new(line, t));
        }
        "ramp_time" => {
            let t = parse_fio_time(raw.ok_or_else(need)?)
                .ok_or_else(|| bad("a time (e.g. 2, 500ms)"))?;
            spec.ramp = Some(At::new(line, t));
        }
        "size" => {
            let v = raw.ok_or_else(need)?;
            let size = if let Some(p) = v.strip_suffix('%') {
                match p.trim().parse::<u64>() {
                    Ok(p) if (1..=100).contains(&p) => SizeSpec::Percent(p),
                    _ => return Err(bad("a percentage in 1..=100")),
                }
            } else {
                SizeSpec::Bytes(
                    parse_size(v)
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| bad("a size"))?,
                )
            };
            spec.size = Some(At::new(line, size));
        }
        "time_based" => {
            spec.time_based = parse_bool(raw).ok_or_else(|| bad("a boolean"))?;
        }
        "rwmixread" => spec.rwmixread = Some(At::new(line, int(0, 100)? as u8)),
        "rwmixwrite" => spec.rwmixread = Some(At::new(line, 100 - int(0, 100)? as u8)),
        "hipri" => {
            spec.hipri = Some(At::new(
                line,
                parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
            ))
        }
        "nowait" => {
            spec.nowait = Some(At::new(
                line,
                parse_bool(raw).ok_or_else(|| bad("a boolean"))?,
            ))
        }
        "name" => {
            let v = raw.ok_or_else(need)?;
            if spec.name != "global" {
                spec.name = v.into();
            }
        }
        _ if NOT_A_BLOCK_MODEL.iter().any(|(k, _)| *k == key) => {
            let why = NOT_A_BLOCK_MODEL
                .iter()
                .find(|(k, _)| *k == key)
                .map_or("", |(_, w)| w);
            return Err(ctx.err(line, format!("option '{key}' is not supported: {why}")));
        }
        _ if key.starts_with("verify_") => {
            return Err(ctx.err(
                line,
                format!("option '{key}' is not supported: the model moves no data, so there is nothing to verify"),
            ));
        }
        _ if MEANINGLESS.contains(&key) => {
            if key == "kb_base" && raw != Some("1024") {
                return Err(ctx.err(
                    line,
                    "only kb_base=1024 (fio's default) is supported".into(),
                ));
            }
            ctx.warn(
                line,
                format!("option '{key}' has no meaning in the model; ignored"),
            );
        }
        _ => {
            return Err(ctx.err(
                line,
                format!("option '{key}' is not supported (it could change what is measured)"),
            ))
        }
    }
    Ok(())
}

/// fio's groups as ascending numbers from 0: a `stonewall` job starts a
/// group after every job before it, a `wait_for` job goes in the group
/// after its target's, any other job joins the current group.
fn assign_groups(specs: &[JobSpec], ctx: &mut Ctx) -> Result<Vec<u32>, FioError> {
    let mut groups: Vec<u32> = Vec::with_capacity(specs.len());
    let (mut current, mut highest) = (0u32, 0u32);
    for (i, spec) in specs.iter().enumerate() {
        let g = if let Some(w) = &spec.wait_for {
            let wanted = usable_name(&w.value);
            let target = specs[..i]
                .iter()
                .position(|s| s.name == wanted)
                .ok_or_else(|| {
                    ctx.err(
                        w.line,
                        format!(
                            "option 'wait_for={}': no job of that name before this one",
                            w.value
                        ),
                    )
                })?;
            let tg = groups[target];
            let shared = groups.iter().filter(|&&g| g == tg).count();
            if shared > 1 {
                ctx.warn(
                    w.line,
                    format!(
                        "job '{}' waits for every job that runs with '{}' (the model runs \
                         groups one after another)",
                        spec.name, specs[target].name
                    ),
                );
            }
            tg + 1
        } else if spec.stonewall && i > 0 {
            current = highest + 1;
            current
        } else {
            current
        };
        highest = highest.max(g);
        groups.push(g);
    }
    // Dense numbers, in the order the groups run.
    let mut distinct = groups.clone();
    distinct.sort_unstable();
    distinct.dedup();
    Ok(groups
        .iter()
        .map(|g| distinct.iter().position(|d| d == g).unwrap_or(0) as u32)
        .collect())
}

/// One cap for the whole job from fio's per-direction caps (`[reads,
/// writes]`, 0: none): fio keeps the mix and caps each direction, so the
/// job's total is bounded by the tighter of `cap / share` over the
/// directions it issues. `unit`: the mean size of a read and of a write in
/// the cap's unit (1 for IO/s, bytes for a byte rate).
fn combined_rate(caps: [u64; 2], rw: Rw, rwmixread: u8, unit: [u64; 2]) -> Option<u64> {
    let read_pct = match rw {
        Rw::Read | Rw::RandRead => 100,
        Rw::Write | Rw::RandWrite => 0,
        Rw::RandRw | Rw::ReadWrite => u128::from(rwmixread),
    };
    // Each direction's share of the total, weighted by its unit.
    let weights = [
        read_pct * u128::from(unit[0]),
        (100 - read_pct) * u128::from(unit[1]),
    ];
    let sum: u128 = weights.iter().sum();
    let mut total: Option<u128> = None;
    for d in 0..2 {
        if caps[d] == 0 || weights[d] == 0 {
            continue;
        }
        let t = u128::from(caps[d]) * sum / weights[d];
        total = Some(total.map_or(t, |x| x.min(t)));
    }
    total.map(|t| u64::try_from(t).unwrap_or(u64::MAX).max(1))
}

/// The request-shaping options of one job.
fn job_shape(spec: &JobSpec, rw: Rw, bs: u64, ctx: &mut Ctx) -> Result<IoShape, FioError> {
    let bssplit = spec
        .bssplit
        .as_ref()
        .map_or(Vec::new(), |b| b.value.clone());
    let bsrange = spec.bsrange.map(|r| r.value);
    if bsrange.is_some() && !bssplit.is_empty() {
        let line = spec.bsrange.map_or(spec.line, |r| r.line);
        return Err(ctx.err(
            line,
            format!("job '{}': bsrange together with bssplit", spec.name),
        ));
    }
    let mut shape = IoShape {
        bssplit,
        bssplit_write: spec.bssplit_write.clone(),
        bsrange,
        rate: None,
        rate_poisson: spec.poisson,
        barrier_last: spec.barrier.is_some_and(|b| b.value),
        thinktime: spec.thinktime.map_or(0, |t| t.value),
        thinktime_spin: spec.thinktime_spin.map_or(0, |t| t.value),
        thinktime_blocks: spec.thinktime_blocks.map_or(1, |b| b.value),
        number_ios: spec.number_ios.map(|n| n.value).filter(|&n| n > 0),
        io_size: None,
        percentile_list: spec
            .percentile_list
            .as_ref()
            .map_or(Vec::new(), |p| p.value.clone()),
        fsync: spec.fsync.map_or(0, |f| f.value),
        fdatasync: spec.fdatasync.map_or(0, |f| f.value),
        flow: spec.flow.map_or(0, |f| f.value),
        flow_id: spec.flow_id,
        flow_sleep: spec.flow_sleep,
        exitall: spec.exitall.then_some(if spec.exit_all_jobs {
            ExitScope::All
        } else {
            ExitScope::Group
        }),
        steady: None,
    };
    if let Some(ss) = &spec.steady {
        let (metric, slope, limit, percent) = cint_scenario::shape::parse_steady(&ss.value)
            .map_err(|e| ctx.err(ss.line, format!("option 'ss={}': {e}", ss.value)))?;
        let dur = spec.ss_dur.map(|d| d.value).ok_or_else(|| {
            ctx.err(
                ss.line,
                format!("job '{}': ss needs ss_dur (the window judged)", spec.name),
            )
        })?;
        shape.steady = Some(SteadyState {
            metric,
            slope,
            limit,
            percent,
            dur,
            ramp: spec.ss_ramp,
        });
    }
    if shape.thinktime_spin > shape.thinktime {
        let line = spec.thinktime_spin.map_or(spec.line, |t| t.line);
        return Err(ctx.err(
            line,
            format!(
                "job '{}': thinktime_spin is longer than thinktime",
                spec.name
            ),
        ));
    }
    if let Some(r) = spec.rate {
        let mean = |write: bool| {
            let split = if write && !shape.bssplit_write.is_empty() {
                &shape.bssplit_write
            } else {
                &shape.bssplit
            };
            if split.is_empty() {
                let probe = IoShape {
                    bsrange: shape.bsrange,
                    ..IoShape::default()
                };
                return mean_size(&probe, bs);
            }
            split
                .iter()
                .map(|s| s.bytes * u64::from(s.percent))
                .sum::<u64>()
                / 100
        };
        let rwmixread = spec.rwmixread.map_or(50, |m| m.value);
        shape.rate = combined_rate(r.value, rw, rwmixread, [mean(false), mean(true)]);
        if shape.rate.is_none() {
            ctx.warn(
                r.line,
                format!(
                    "job '{}': rate caps only a direction the job does not issue; no cap",
                    spec.name
                ),
            );
        }
    }
    if shape.rate_poisson && shape.rate.is_none() && spec.rate_iops_dirs.is_none() {
        return Err(ctx.err(
            spec.line,
            format!(
                "job '{}': rate_process=poisson needs rate or rate_iops",
                spec.name
            ),
        ));
    }
    Ok(shape)
}

/// The mean request size of a fixed size or a range.
fn mean_size(shape: &IoShape, bs: u64) -> u64 {
    match shape.bsrange {
        Some((lo, hi)) => lo * ((hi / lo).max(1) + 1) / 2,
        None => bs,
    }
}

fn default_strategies(device: &DeviceProfile, poll: bool) -> Vec<Strategy> {
    if poll {
        return vec![Strategy {
            name: "poll".into(),
            mode: CompletionMode::Poll,
        }];
    }
    let adaptive = AdaptiveParams {
        delta: device.reference_delta.0,
        thr: device.reference_thr,
    };
    vec![
        Strategy {
            name: "none".into(),
            mode: CompletionMode::Interrupt(PolicyConfig::None),
        },
        Strategy {
            name: "adaptive".into(),
            mode: CompletionMode::Interrupt(PolicyConfig::Adaptive(adaptive)),
        },
        Strategy {
            name: "cinterrupts".into(),
            mode: CompletionMode::Interrupt(PolicyConfig::Cinterrupts(
                CinterruptsParams::with_adaptive(adaptive.delta, adaptive.thr),
            )),
        },
    ]
}

fn build(specs: Vec<JobSpec>, args: &FioArgs, ctx: &mut Ctx) -> Result<Scenario, FioError> {
    let device = DeviceProfile::builtin(&args.device).ok_or_else(|| {
        ctx.err_file(format!(
            "unknown device profile '{}' (known: {})",
            args.device,
            cint_scenario::profiles::DEVICE_MODELS.join(", ")
        ))
    })?;
    let mut host = HostProfile::builtin(&args.host).ok_or_else(|| {
        ctx.err_file(format!(
            "unknown host profile '{}' (known: {})",
            args.host,
            cint_scenario::profiles::HOST_MODELS.join(", ")
        ))
    })?;

    // fio pins to machine CPU numbers; the model has application cores
    // 0..n, so the distinct CPUs named become cores in ascending order.
    let named_cpus: BTreeSet<u32> = specs
        .iter()
        .filter_map(|s| s.cpus.as_ref().map(|c| c.value[0]))
        .collect();
    let core_of = |cpu: u32| named_cpus.iter().position(|&c| c == cpu).unwrap_or(0) as u32;
    host.cores = named_cpus.len().max(1) as u32;

    let ramps: BTreeSet<Nanos> = specs
        .iter()
        .map(|s| s.ramp.map_or(0, |r| r.value))
        .collect();
    if ramps.len() > 1 {
        let line = specs
            .iter()
            .find_map(|s| s.ramp.map(|r| r.line))
            .unwrap_or(0);
        return Err(ctx.err(
            line,
            "jobs with different ramp_time are not supported (the model has one warm-up)".into(),
        ));
    }
    let warmup = ramps.into_iter().next().unwrap_or(0);
    let longest = specs
        .iter()
        .filter_map(|s| s.runtime.map(|r| r.value))
        .max();
    // A job without runtime runs as long as the longest one that has a
    // runtime, or for the default when none has.
    let default_runtime = match longest {
        Some(d) => d,
        None => {
            ctx.warn(
                specs[0].line,
                format!(
                    "no runtime given: the model is time based, running {}",
                    format_duration(args.default_duration)
                ),
            );
            args.default_duration
        }
    };
    let groups = assign_groups(&specs, ctx)?;
    let last_group = groups.iter().copied().max().unwrap_or(0);
    // Each group lasts as long as its longest job (start delay, ramp and
    // runtime); the run is the groups one after another.
    let mut spans = vec![0; last_group as usize + 1];
    for (spec, &g) in specs.iter().zip(&groups) {
        let delay = spec.startdelay.map_or(0, |d| d.value);
        let runtime = spec.runtime.map_or(default_runtime, |r| r.value);
        if g < last_group && spec.runtime.is_none() {
            ctx.warn(
                spec.line,
                format!(
                    "job '{}': no runtime, and later groups wait for it: it runs at most {}",
                    spec.name,
                    format_duration(runtime)
                ),
            );
        }
        let span = &mut spans[g as usize];
        *span = (*span).max(delay.saturating_add(warmup).saturating_add(runtime));
    }
    let total: Nanos = spans.iter().fold(0, |a: Nanos, &s| a.saturating_add(s));
    let duration = total.saturating_sub(warmup).max(1);

    let mut jobs = Vec::with_capacity(specs.len());
    let mut hipri_jobs = 0;
    for spec in &specs {
        let engine = spec.engine.map_or(Engine::Psync, |e| e.value);
        let iodepth = spec.iodepth.map_or(1, |d| d.value);
        let (iodepth, batch, complete_min) = if engine.is_sync() {
            if let Some(d) = spec.iodepth.filter(|d| d.value > 1) {
                ctx.warn(
                    d.line,
                    format!(
                        "job '{}': iodepth={} has no effect with a synchronous engine (as in fio); using 1",
                        spec.name, d.value
                    ),
                );
            }
            (1, 1, 1)
        } else {
            let batch = spec.batch.map_or(1, |b| b.value).min(iodepth);
            let complete_min = spec.batch_complete_min.map_or(1, |b| b.value).min(iodepth);
            (iodepth, batch, complete_min)
        };
        // fio: iodepth_batch_complete_max defaults to ..._min; below it
        // fio would reap fewer than it waits for.
        let complete_max = match spec.batch_complete_max {
            None => complete_min,
            Some(m) if m.value < complete_min => {
                return Err(ctx.err(
                    m.line,
                    format!(
                        "job '{}': iodepth_batch_complete_max={} is below \
                         iodepth_batch_complete_min={complete_min}",
                        spec.name, m.value
                    ),
                ));
            }
            Some(m) => m.value.min(iodepth),
        };
        let cpus = spec.cpus.as_ref();
        if let Some(c) = cpus.filter(|c| c.value.len() > 1) {
            if spec.cpus_split.is_some_and(|s| s.value) {
                return Err(ctx.err(
                    c.line,
                    format!(
                        "job '{}': cpus_allowed_policy=split over several CPUs is not supported \
                         (write one job per CPU)",
                        spec.name
                    ),
                ));
            }
            ctx.warn(
                c.line,
                format!(
                    "job '{}': the model pins a job's threads to one core; using CPU {} of the list",
                    spec.name, c.value[0]
                ),
            );
        }
        if let Some(h) = spec.hipri.filter(|h| h.value) {
            if !matches!(engine, Engine::Pvsync2 | Engine::IoUring) {
                return Err(ctx.err(
                    h.line,
                    format!(
                        "job '{}': hipri needs ioengine=pvsync2 or io_uring",
                        spec.name
                    ),
                ));
            }
            hipri_jobs += 1;
        }
        let nowait = spec.nowait.is_some_and(|n| n.value);
        if nowait && engine != Engine::Pvsync2 {
            let line = spec.nowait.map_or(spec.line, |n| n.line);
            return Err(ctx.err(
                line,
                format!(
                    "job '{}': nowait is modelled for ioengine=pvsync2 only (RWF_NOWAIT)",
                    spec.name
                ),
            ));
        }
        if let Some(d) = spec.iodepth.filter(|d| d.value > device.queue_depth) {
            return Err(ctx.err(
                d.line,
                format!(
                    "job '{}': iodepth={} exceeds the device's queue depth {}",
                    spec.name, d.value, device.queue_depth
                ),
            ));
        }
        let capacity = device.capacity.0;
        let size = match spec.size.map(|s| s.value) {
            None => spec.filesize.map_or(capacity, |f| f.value),
            Some(SizeSpec::Bytes(b)) => b,
            // Whole sectors, as the device addresses them.
            Some(SizeSpec::Percent(p)) => capacity / 100 * p / 512 * 512,
        };
        let bs = spec.bs.map_or(4096, |b| b.value);
        let size_at = spec.size.map(|s| s.line).or(spec.filesize.map(|f| f.line));
        if let Some(line) = size_at {
            if size > capacity || size < bs || size % 512 != 0 {
                return Err(ctx.err(
                    line,
                    format!(
                        "job '{}': size must be a multiple of 512 bytes between bs ({bs}) and the \
                         device capacity ({capacity}), got {size}",
                        spec.name
                    ),
                ));
            }
        }
        let rw = spec.rw.map_or(Rw::Read, |r| r.value);
        let group = groups[jobs.len()];
        let delay = spec.startdelay.map_or(0, |d| d.value);
        // Jobs of the last group that last as long as the run need no end
        // of their own; every other job stops after its ramp and runtime.
        let runtime = spec.runtime.map_or(default_runtime, |r| r.value);
        let own_end = delay.saturating_add(warmup).saturating_add(runtime);
        let runtime =
            if last_group == 0 && delay == 0 && (spec.runtime.is_none() || own_end >= spans[0]) {
                None
            } else {
                Some(warmup + runtime)
            };
        let mut shape = job_shape(spec, rw, bs, ctx)?;
        for sync in [spec.fsync, spec.fdatasync].into_iter().flatten() {
            if sync.value > 0 && engine == Engine::IoUring {
                return Err(ctx.err(
                    sync.line,
                    format!(
                        "job '{}': io_uring's asynchronous fsync (IORING_OP_FSYNC) is not \
                         modelled; fsync and fdatasync run with psync, pvsync2 or libaio",
                        spec.name
                    ),
                ));
            }
        }
        if shape.barrier_last && engine.is_sync() {
            let line = spec.barrier.map_or(spec.line, |b| b.line);
            ctx.warn(
                line,
                format!(
                    "job '{}': barrier marks the last iocb of each io_submit; a synchronous \
                     engine submits no batches, so it changes nothing",
                    spec.name
                ),
            );
            shape.barrier_last = false;
        }
        // Not time based, fio ends a job once it has done its size (or
        // io_size) `loops` times, or at its runtime if that comes first.
        if !spec.time_based {
            let written = spec.io_size.is_some()
                || spec.size.is_some()
                || spec.filesize.is_some()
                || spec.loops > 1;
            if written {
                let once = spec.io_size.map_or(size, |b| b.value);
                shape.io_size = Some(once.saturating_mul(spec.loops));
            }
        } else if spec.loops > 1 {
            ctx.warn(
                spec.line,
                format!(
                    "job '{}': loops has no effect with time_based (the job runs for its runtime)",
                    spec.name
                ),
            );
        }
        let bs = cint_scenario::shape::smallest_block(&shape, bs);
        let rwmixread = spec
            .rwmixread
            .filter(|_| rw.is_mixed())
            .map_or(50, |r| r.value);
        let rate_iops = match spec.rate_iops_dirs {
            Some(d) => combined_rate(d.value, rw, rwmixread, [1, 1]).or_else(|| {
                ctx.warn(
                    d.line,
                    format!(
                        "job '{}': rate_iops caps only a direction the job does not issue; no cap",
                        spec.name
                    ),
                );
                None
            }),
            None => None,
        };
        if rate_iops.is_some() && shape.rate.is_some() {
            let line = spec.rate.map_or(spec.line, |r| r.line);
            return Err(ctx.err(
                line,
                format!(
                    "job '{}': rate together with rate_iops is not supported",
                    spec.name
                ),
            ));
        }
        jobs.push(Job {
            name: spec.name.clone(),
            cpu: cpus.map_or(0, |c| core_of(c.value[0])),
            numjobs: spec.numjobs.map_or(1, |n| n.value),
            runtime,
            work: Work::Io(IoJob {
                engine,
                rw,
                bs,
                iodepth,
                batch,
                batch_complete_min: complete_min,
                batch_complete_max: complete_max,
                hint: None,
                nowait,
                direct: spec.direct.is_some_and(|d| d.value),
                gtod_reduce: spec.gtod_reduce.is_some_and(|g| g.value),
                rate_iops,
                think: 0,
                size,
                // fio ignores rwmixread unless the job mixes reads and writes.
                rwmixread,
                shape: Box::new(shape),
            }),
            schedule: Schedule {
                group,
                startdelay: delay,
            },
        });
    }
    if hipri_jobs > 0 && hipri_jobs < jobs.len() && args.strategies.is_none() {
        return Err(ctx.err_file(
            "hipri on some jobs but not all: the model polls per device queue, so choose \
             strategies explicitly"
                .into(),
        ));
    }
    let strategies = match &args.strategies {
        Some(s) if s.is_empty() => return Err(ctx.err_file("no strategy to compare".into())),
        Some(s) => s.clone(),
        None => default_strategies(&device, hipri_jobs == jobs.len()),
    };
    Ok(Scenario {
        name: args.name.clone().unwrap_or_else(|| "fio".into()),
        source: ctx.file.into(),
        seed: args.seed,
        duration,
        warmup,
        device,
        host,
        strategies,
        jobs,
        emu: EmuConfig::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> FioArgs {
        FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
    }

    fn io(job: &Job) -> &IoJob {
        match &job.work {
            Work::Io(io) => io,
            Work::Cpu => panic!("job {} is not an I/O job", job.name),
        }
    }

    const FIELD_FILE: &str = "\
; -- typical field job file: latency vs. throughput on one core --
[global]
ioengine=libaio
direct=1
filename=/dev/nvme0n1   ; raw device
# keep the random map off, we only care about latency
norandommap
randrepeat=0
group_reporting
time_based
runtime=10s
ramp_time = 2
bs=4k
cpus_allowed=7

[async-reader]
rw=randread
iodepth=256
iodepth_batch_submit=16
iodepth_batch_complete_min=16

[sync-reader]
ioengine=psync
rw=randread
iodepth=32
numjobs=2
";

    #[test]
    fn realistic_file_with_globals_comments_and_two_jobs() {
        let imp = import_str(FIELD_FILE, "lat.fio", &args()).expect("valid file");
        let s = &imp.scenario;
        assert_eq!(s.duration, 10_000_000_000);
        assert_eq!(s.warmup, 2_000_000_000);
        assert_eq!(s.host.cores, 1);
        assert_eq!(s.jobs.len(), 2);
        let a = io(&s.jobs[0]);
        assert_eq!(s.jobs[0].name, "async-reader");
        assert_eq!(s.jobs[0].cpu, 0);
        assert_eq!((a.engine, a.rw, a.bs), (Engine::Libaio, Rw::RandRead, 4096));
        assert_eq!((a.iodepth, a.batch, a.batch_complete_min), (256, 16, 16));
        assert!(a.direct);
        assert_eq!(a.size, s.device.capacity.0);
        let b = io(&s.jobs[1]);
        assert_eq!(b.engine, Engine::Psync);
        assert_eq!((b.iodepth, b.batch, b.batch_complete_min), (1, 1, 1));
        assert_eq!(s.jobs[1].numjobs, 2);
        // filename, norandommap, randrepeat, group_reporting; then iodepth on psync.
        assert_eq!(imp.warnings.len(), 5, "{:#?}", imp.warnings);
        assert!(imp.warnings[0].starts_with("lat.fio:5: warning: option 'filename'"));
        assert!(imp.warnings[4].contains("iodepth=32 has no effect"));
        assert!(imp.warnings.iter().all(|w| !w.contains('\n')));
        let names: Vec<&str> = s.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["none", "adaptive", "cinterrupts"]);
        assert_eq!(
            s.strategies[2].mode,
            CompletionMode::Interrupt(PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(
                6_000, 32
            )))
        );
    }

    #[test]
    fn fio_defaults_apply_when_options_are_absent() {
        let imp = import_str("[j]\n", "d.fio", &args()).expect("valid");
        let s = &imp.scenario;
        let j = io(&s.jobs[0]);
        assert_eq!(
            (j.engine, j.rw, j.bs, j.iodepth, j.direct),
            (Engine::Psync, Rw::Read, 4096, 1, false)
        );
        assert_eq!(s.duration, 200_000_000);
        assert_eq!(imp.warnings.len(), 1);
        assert!(imp.warnings[0].contains("no runtime given"));
    }

    #[test]
    fn later_global_sections_only_affect_later_jobs() {
        let text = "[global]\nbs=8k\n[a]\n[global]\nbs=16k\n[b]\nbs=32k\n[c]\n";
        let s = import_str(text, "g.fio", &args()).expect("valid").scenario;
        let bs: Vec<u64> = s.jobs.iter().map(|j| io(j).bs).collect();
        assert_eq!(bs, [8192, 32768, 16384]);
    }

    #[test]
    fn unsupported_option_names_file_line_and_option() {
        let text = "[global]\ndirect=1\n\n[j]\nrw=randread\nverify=md5\n";
        let e = import_str(text, "v.fio", &args()).expect_err("verify is not modelled");
        assert_eq!(e.line, Some(6));
        let msg = e.to_string();
        assert!(msg.starts_with("v.fio:6: option 'verify'"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn bad_values_are_refused_with_their_line() {
        for (text, line, needle) in [
            ("[j]\nrw=trim\n", 2, "rw=trim"),
            ("[j]\nbs=1000\n", 2, "multiple of 512"),
            ("[j]\nbs=4k,8k\n", 2, "different read and write"),
            ("[j]\niodepth=0\n", 2, "iodepth"),
            ("[j]\nioengine=spdk\n", 2, "ioengine=spdk"),
            ("[j]\nruntime=soon\n", 2, "runtime"),
            ("[j]\ncpus_allowed=3-1\n", 2, "CPU list"),
            ("[j]\nioengine=libaio\nhipri\n", 3, "hipri"),
            ("[j]\nsize=150%\n", 2, "percentage"),
            ("[j]\ndirect=maybe\n", 2, "boolean"),
            ("bs=4k\n[j]\n", 1, "before any"),
            ("[j\n", 1, "malformed"),
            ("[j]\n[j]\n", 2, "twice"),
            ("[j]\niodepth_batch_complete_min=0\n", 2, "without waiting"),
            ("[j]\nioengine=libaio\niodepth=4096\n", 3, "queue depth"),
            ("[j]\nsize=1k\n", 2, "size must be"),
            ("[j]\nsize=100t\n", 2, "size must be"),
        ] {
            let e = import_str(text, "b.fio", &args()).expect_err(text);
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn cpus_become_dense_cores_and_lists_warn() {
        let text = "[a]\ncpus_allowed=12\n[b]\ncpus_allowed=4\n[c]\ncpus_allowed=4-7\n[d]\ncpus_allowed=12\n";
        let imp = import_str(text, "c.fio", &args()).expect("valid");
        let cores: Vec<u32> = imp.scenario.jobs.iter().map(|j| j.cpu).collect();
        assert_eq!(cores, [1, 0, 0, 1]);
        assert_eq!(imp.scenario.host.cores, 2);
        assert!(imp
            .warnings
            .iter()
            .any(|w| w.starts_with("c.fio:6:") && w.contains("CPU 4")));
        let split = "[a]\ncpus_allowed=0-3\ncpus_allowed_policy=split\nnumjobs=4\n";
        assert!(import_str(split, "s.fio", &args()).is_err());
    }

    #[test]
    fn times_sizes_rates_and_mixes() {
        let text = "[global]\nruntime=2m\nramp_time=500ms\n[a]\nrw=randrw\nrwmixwrite=30\n\
                    size=10%\ntime_based\nrate_iops=5000,5000\n[b]\nruntime=30\nbuffered=1\nsize=1g\n";
        let imp = import_str(text, "t.fio", &args()).expect("valid");
        let s = &imp.scenario;
        assert_eq!(s.duration, 120_000_000_000);
        assert_eq!(s.warmup, 500_000_000);
        let a = io(&s.jobs[0]);
        // fio caps reads and writes at 5000 IO/s each; keeping the 70/30
        // mix, reads reach their cap first: 5000 / 0.7 in all.
        assert_eq!(
            (a.rw, a.rwmixread, a.rate_iops),
            (Rw::RandRw, 70, Some(7142))
        );
        assert_eq!(a.shape.io_size, None, "time based");
        assert_eq!(a.size, s.device.capacity.0 / 100 * 10 / 512 * 512);
        assert_eq!(s.jobs[0].runtime, None);
        let b = io(&s.jobs[1]);
        assert_eq!((b.size, b.direct), (1 << 30, false));
        assert_eq!(s.jobs[1].runtime, Some(30_500_000_000));
        // Not time based: the job ends once its size is done.
        assert_eq!(b.shape.io_size, Some(1 << 30));
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    #[test]
    fn hipri_everywhere_compares_polling_and_mixed_hipri_is_refused() {
        let all = "[global]\nioengine=pvsync2\nhipri\n[a]\n[b]\n";
        let s = import_str(all, "h.fio", &args()).expect("valid").scenario;
        assert_eq!(s.strategies.len(), 1);
        assert_eq!(s.strategies[0].mode, CompletionMode::Poll);
        let some = "[a]\nioengine=io_uring\nhipri=1\n[b]\nioengine=io_uring\n";
        let e = import_str(some, "h.fio", &args()).expect_err("mixed hipri");
        assert!(e.to_string().contains("hipri on some jobs"));
        let mut explicit = args();
        explicit.strategies = Some(vec![Strategy {
            name: "p".into(),
            mode: CompletionMode::Poll,
        }]);
        assert!(import_str(some, "h.fio", &explicit).is_ok());
    }

    #[test]
    fn name_option_batch_clamping_and_unknown_profiles() {
        let text = "[x]\nname=reader\nioengine=io_uring\niodepth=8\niodepth_batch=32\n";
        let s = import_str(text, "n.fio", &args()).expect("valid").scenario;
        assert_eq!(s.jobs[0].name, "reader");
        let j = io(&s.jobs[0]);
        assert_eq!((j.iodepth, j.batch), (8, 8));
        let nowait = "[x]\nioengine=pvsync2\nnowait\n";
        let s = import_str(nowait, "n.fio", &args())
            .expect("valid")
            .scenario;
        assert!(io(&s.jobs[0]).nowait);
        let e = import_str("[x]\nioengine=io_uring\nnowait\n", "n.fio", &args())
            .expect_err("uring nowait");
        assert_eq!(e.line, Some(3));
        let e = import_str(text, "n.fio", &FioArgs::new("floppy", "xeon-e5-2660v4"))
            .expect_err("unknown device");
        assert!(e.to_string().contains("unknown device profile 'floppy'"));
        assert!(import_str("; nothing\n[global]\nbs=4k\n", "e.fio", &args()).is_err());
    }

    #[test]
    fn imports_pass_the_scenario_parser_and_take_set_overrides() {
        let imp = import_str(FIELD_FILE, "lat.fio", &args()).expect("valid");
        let reloaded =
            cint_scenario::load_str(&cint_scenario::to_toml(&imp.scenario), "lat.fio", &[])
                .expect("the rendered import loads");
        assert_eq!(reloaded, imp.scenario);
        let mut with_sets = args();
        with_sets.sets = vec!["duration=50ms".into(), "job.async-reader.iodepth=32".into()];
        let s = import_str(FIELD_FILE, "lat.fio", &with_sets)
            .expect("valid")
            .scenario;
        assert_eq!(s.duration, 50_000_000);
        assert_eq!(io(&s.jobs[0]).iodepth, 32);
        with_sets.sets = vec!["job.async-reader.depth=32".into()];
        let e = import_str(FIELD_FILE, "lat.fio", &with_sets).expect_err("unknown key");
        let msg = e.to_string();
        assert!(
            msg.starts_with("lat.fio: --set job.async-reader.depth=32: ") && !msg.contains('\n'),
            "the file is named once: {msg}"
        );
    }

    #[test]
    fn job_names_become_usable_scenario_names() {
        let text = "[seq.read 1]\n[b]\nname=rand=read\n[c]\nname=seq-read-1\n";
        let e = import_str(text, "n.fio", &args()).expect_err("duplicate after renaming");
        assert_eq!(e.line, Some(4));
        let imp =
            import_str("[seq.read 1]\n[b]\nname=rand=read\n", "n.fio", &args()).expect("valid");
        let names: Vec<&str> = imp.scenario.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["seq-read-1", "rand-read"]);
        assert_eq!(
            imp.warnings
                .iter()
                .filter(|w| w.contains("is named"))
                .count(),
            2
        );
        assert!(import_str("[a]\nname=\n", "n.fio", &args()).is_err());
    }

    /// Written the way fio's own examples are (examples/fio-rand-read.fio,
    /// examples/ssd-test.fio).
    #[test]
    fn files_in_the_style_of_fios_examples() {
        let rand_read = "; fio-rand-read.job for fiotest\n\n[global]\nname=fio-rand-read\n\
                         filename=fio-rand-read\nrw=randread\nbs=4K\ndirect=0\nnumjobs=1\n\
                         time_based\nruntime=900\n\n[file1]\nsize=1G\nioengine=libaio\niodepth=16\n";
        let imp = import_str(rand_read, "fio-rand-read.fio", &args()).expect("valid");
        let s = &imp.scenario;
        assert_eq!(s.jobs[0].name, "file1");
        assert_eq!(s.duration, 900_000_000_000);
        let j = io(&s.jobs[0]);
        assert_eq!(
            (j.engine, j.iodepth, j.size, j.direct),
            (Engine::Libaio, 16, 1 << 30, false)
        );
        assert_eq!(imp.warnings.len(), 1, "{:?}", imp.warnings);

        let ssd_test = "# Do some important numbers on SSD drives, to gauge what kind of\n\
                        # performance you might get out of them.\n#\n[global]\nbs=4k\n\
                        ioengine=libaio\niodepth=4\nsize=10g\ndirect=1\nruntime=60\n\
                        directory=/mount-point-of-ssd\nfilename=ssd.test.file\n\n\
                        [seq-read]\nrw=read\nstonewall\n\n[rand-read]\nrw=randread\nstonewall\n";
        let imp = import_str(ssd_test, "ssd-test.fio", &args()).expect("stonewall groups");
        let s = &imp.scenario;
        let groups: Vec<u32> = s.jobs.iter().map(|j| j.schedule.group).collect();
        assert_eq!(groups, [0, 1], "the first job's stonewall starts nothing");
        // Each group runs up to 60 s; each job also ends after its 10 GiB.
        assert_eq!(s.duration, 120_000_000_000);
        for job in &s.jobs {
            assert_eq!(job.runtime, Some(60_000_000_000));
            assert_eq!(io(job).shape.io_size, Some(10 << 30));
        }
        // directory, filename.
        assert_eq!(imp.warnings.len(), 2, "{:?}", imp.warnings);
    }

    #[test]
    fn a_comment_starts_at_the_first_semicolon_or_hash_anywhere() {
        assert_eq!(strip_comment("filename=/tmp/a#b ; x"), "filename=/tmp/a");
        assert_eq!(strip_comment("bs=4k;4 KiB blocks"), "bs=4k");
        assert_eq!(strip_comment("iodepth=32#deep"), "iodepth=32");
        assert_eq!(strip_comment("[job];first"), "[job]");
        assert_eq!(strip_comment("# all"), "");
        assert_eq!(strip_comment("rw=randread"), "rw=randread");
        assert_eq!(parse_fio_time("2m"), Some(120_000_000_000));
        assert_eq!(parse_fio_time("150us"), Some(150_000));
        assert_eq!(parse_fio_time("x"), None);
        assert_eq!(parse_cpus("1,5,8-9"), Some(vec![1, 5, 8, 9]));
    }

    #[test]
    fn comments_without_a_space_before_them_are_cut_as_fio_does() {
        let text = "[global];shared\nioengine=libaio#async\nbs=4k;4 KiB blocks\n\
                    runtime=10ms;short\n[qd8]#deeper\niodepth=8;eight\nrw=randread#random\n";
        let imp = import_str(text, "c.fio", &args()).expect("the comments are not values");
        let s = &imp.scenario;
        assert_eq!(s.duration, 10_000_000);
        assert_eq!(s.jobs.len(), 1);
        assert_eq!(s.jobs[0].name, "qd8");
        let a = io(&s.jobs[0]);
        assert_eq!(
            (a.engine, a.rw, a.bs, a.iodepth),
            (Engine::Libaio, Rw::RandRead, 4096, 8)
        );
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    /// The options of the cinterrupts artifact's job files, written our
    /// own way: all accepted, `barrier=1` marks the last request of each
    /// submission call, and `name=` inside a section names the job.
    #[test]
    fn the_artifacts_options_are_accepted_and_barrier_is_modelled() {
        let text = "[global]\ndirect=1\ntime_based\nnorandommap=1\nrandom_generator=lfsr\n\
                    disable_bw_measurement=1\ndisable_bw=1\ndisk_util=0\ncpus_allowed=1\n\
                    numa_mem_policy=local\n[one]\nbarrier=1\nioengine=libaio\niodepth=32\n\
                    iodepth_batch_submit=8\nrw=randread\nname=raw=barrier-reader\nsize=1G\n\
                    gtod_reduce=1\n";
        let imp = import_str(text, "a.fio", &args()).expect("the artifact's options");
        let s = &imp.scenario;
        assert_eq!(s.jobs[0].name, "raw-barrier-reader");
        let j = io(&s.jobs[0]);
        assert!(j.shape.barrier_last);
        assert_eq!((j.iodepth, j.batch), (32, 8));
        // gtod_reduce is modelled: the generator spends less CPU per I/O.
        assert!(j.gtod_reduce);
        assert!(!imp.warnings.iter().any(|w| w.contains("'gtod_reduce'")));
        for option in ["disable_bw", "disk_util", "numa_mem_policy"] {
            assert!(
                imp.warnings
                    .iter()
                    .any(|w| w.contains(&format!("'{option}'"))),
                "{option}: {:?}",
                imp.warnings
            );
        }
    }

    #[test]
    fn batch_complete_max_defaults_to_min_and_may_not_be_below_it() {
        let job = |extra: &str| {
            format!("[j]\nioengine=libaio\niodepth=64\niodepth_batch_complete_min=8\n{extra}")
        };
        let s = import_str(&job(""), "m.fio", &args())
            .expect("valid")
            .scenario;
        assert_eq!(
            (
                io(&s.jobs[0]).batch_complete_min,
                io(&s.jobs[0]).batch_complete_max
            ),
            (8, 8)
        );
        let s = import_str(&job("iodepth_batch_complete_max=32\n"), "m.fio", &args())
            .expect("valid")
            .scenario;
        assert_eq!(io(&s.jobs[0]).batch_complete_max, 32);
        let e = import_str(&job("iodepth_batch_complete_max=4\n"), "m.fio", &args())
            .expect_err("below min");
        let line = e.to_string();
        assert!(
            line.contains("m.fio:5") && line.contains("iodepth_batch_complete_max=4"),
            "{line}"
        );
    }

    #[test]
    fn stonewall_and_wait_for_make_groups_that_run_in_turn() {
        let text = "[global]\nruntime=10ms\nramp_time=1ms\n[a]\n[b]\nstartdelay=2ms\n\
                    [c]\nstonewall\nruntime=5ms\n[d]\nwait_for=c\n[e]\n";
        let imp = import_str(text, "g.fio", &args()).expect("valid");
        let s = &imp.scenario;
        let groups: Vec<u32> = s.jobs.iter().map(|j| j.schedule.group).collect();
        assert_eq!(groups, [0, 0, 1, 2, 1]);
        assert_eq!(s.jobs[1].schedule.startdelay, 2_000_000);
        // Group 0: b's delay + ramp + runtime = 13 ms; group 1: 11 ms (c
        // runs 5 ms but e the file's 10 ms); group 2: 11 ms.
        assert_eq!(s.warmup, 1_000_000);
        assert_eq!(s.duration, 13_000_000 + 11_000_000 + 11_000_000 - 1_000_000);
        assert_eq!(s.jobs[2].runtime, Some(6_000_000));
        let bad = "[a]\n[b]\nwait_for=nobody\n";
        let e = import_str(bad, "w.fio", &args()).expect_err("unknown target");
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().contains("wait_for=nobody"), "{e}");
    }

    #[test]
    fn block_sizes_rates_think_times_and_counts() {
        let text = "[a]\nrw=randrw\nrwmixread=80\nbssplit=4k/50:64k/50,16k\nrate=10m,1m\n\
                    thinktime=50\nthinktime_spin=10\nthinktime_blocks=4\nnumber_ios=1000\n\
                    percentile_list=50:99:99.99\ntime_based\nruntime=1\n\
                    [b]\nrw=readwrite\nbsrange=4k-16k\nrate_iops=100\nrate_process=poisson\n\
                    loops=3\nsize=1m\nruntime=1\n";
        let imp = import_str(text, "s.fio", &args()).expect("valid");
        let a = io(&imp.scenario.jobs[0]);
        assert_eq!(a.bs, 4096, "the smallest size of the split");
        assert_eq!(a.shape.bssplit.len(), 2);
        assert_eq!(a.shape.bssplit_write[0].bytes, 16384);
        // Reads average 34 KiB and writes 16 KiB: reads carry 80 x 34 of
        // every 80 x 34 + 20 x 16 bytes, so the 10 MiB/s read cap binds
        // before the 1 MiB/s write cap lets the total reach 1 MiB/s / w.
        let (r, w) = (80u128 * 34 * 1024, 20u128 * 16 * 1024);
        let total = (10u128 << 20) * (r + w) / r;
        let total = total.min((1u128 << 20) * (r + w) / w) as u64;
        assert_eq!(a.shape.rate, Some(total));
        assert_eq!(
            (
                a.shape.thinktime,
                a.shape.thinktime_spin,
                a.shape.thinktime_blocks
            ),
            (50_000, 10_000, 4),
            "a bare thinktime is microseconds"
        );
        assert_eq!(a.shape.number_ios, Some(1000));
        assert_eq!(a.shape.percentile_list, [50.0, 99.0, 99.99]);
        let b = io(&imp.scenario.jobs[1]);
        assert_eq!(b.rw, Rw::ReadWrite);
        assert_eq!(b.shape.bsrange, Some((4096, 16384)));
        assert_eq!(b.rate_iops, Some(200), "100 reads and 100 writes a second");
        assert!(b.shape.rate_poisson);
        assert_eq!(b.shape.io_size, Some(3 << 20), "size times loops");
    }

    #[test]
    fn offsets_and_distributions_are_checked_then_warned() {
        let text = "[a]\nrw=read:-8k\nrandom_distribution=zipf:1.2\noffset=10%\n\
                    [b]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/80\nruntime=1\n";
        let imp = import_str(text, "o.fio", &args()).expect("valid");
        assert_eq!(imp.warnings.len(), 4, "{:?}", imp.warnings);
        assert!(imp.warnings.iter().all(|w| w.contains("offset")));
        for (bad, needle) in [
            ("[a]\nrandom_distribution=zipf:1\n", "zipf"),
            ("[a]\nrandom_distribution=lumpy\n", "not a distribution"),
            ("[a]\nrw=read:soon\n", "rw"),
            ("[a]\noffset=110%\n", "offset"),
        ] {
            let e = import_str(bad, "o.fio", &args()).expect_err(bad);
            assert_eq!(e.line, Some(2), "{bad}");
            assert!(e.to_string().contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn variables_expand_from_the_environment_or_are_refused() {
        let mut a = args();
        a.vars = Some(
            [("DEPTH".to_string(), "16".to_string())]
                .into_iter()
                .collect(),
        );
        let text = "[j]\nioengine=libaio\niodepth=${DEPTH}\nrw=${PATTERN}\n";
        let e = import_str(text, "v.fio", &a).expect_err("PATTERN is not set");
        assert_eq!(e.line, Some(4));
        assert!(e.to_string().contains("'${PATTERN}' is not set"), "{e}");
        assert!(!e.to_string().contains('\n'));
        a.vars
            .as_mut()
            .map(|v| v.insert("PATTERN".into(), "randread".into()));
        let s = import_str(text, "v.fio", &a).expect("both set").scenario;
        assert_eq!(
            (io(&s.jobs[0]).iodepth, io(&s.jobs[0]).rw),
            (16, Rw::RandRead)
        );
    }

    #[test]
    fn flow_exitall_and_steady_state_become_keys() {
        let text = "[global]\nexitall\nexit_what=all\nruntime=5\n[a]\nflow=8\nflow_sleep=100\n\
                    ss=iops_slope:0.5%\nss_dur=3s\nss_ramp=1s\n[b]\nflow=1\n";
        let s = import_str(text, "f.fio", &args()).expect("valid").scenario;
        let a = io(&s.jobs[0]);
        assert_eq!((a.shape.flow, a.shape.flow_sleep), (8, 100_000));
        assert_eq!(a.shape.exitall, Some(ExitScope::All));
        let ss = a.shape.steady.expect("ss");
        assert!(ss.slope && ss.percent && ss.limit == 0.5);
        assert_eq!((ss.dur, ss.ramp), (3_000_000_000, 1_000_000_000));
        assert_eq!(io(&s.jobs[1]).shape.flow, 1);
        let e = import_str("[a]\nss=iops:1%\n", "f.fio", &args()).expect_err("no ss_dur");
        assert!(e.to_string().contains("ss_dur"), "{e}");
    }

    #[test]
    fn what_a_block_device_model_cannot_be_is_refused_by_name() {
        for (text, needle) in [
            ("[a]\nzonemode=zbd\n", "zoned"),
            ("[a]\nverify=crc32c\n", "nothing to verify"),
            ("[a]\nrw=randtrim\n", "no trims"),
            ("[a]\nioengine=io_uring_cmd\n", "io_uring_cmd"),
            ("[a]\nio_submit_mode=offload\n", "offload"),
        ] {
            let e = import_str(text, "r.fio", &args()).expect_err(text);
            assert_eq!(e.line, Some(2), "{text}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        let uring = "[a]\nioengine=io_uring\nrw=write\nfsync=4\n";
        let e = import_str(uring, "r.fio", &args()).expect_err("io_uring fsync");
        assert_eq!(e.line, Some(4));
        assert!(e.to_string().contains("IORING_OP_FSYNC"), "{e}");
        let s = import_str(
            "[a]\nrw=write\nfsync=4\nfdatasync=8\nend_fsync=1\n",
            "r.fio",
            &args(),
        )
        .expect("fsync with psync")
        .scenario;
        assert_eq!(
            (io(&s.jobs[0]).shape.fsync, io(&s.jobs[0]).shape.fdatasync),
            (4, 8)
        );
    }
}
