//! The option table: what each fio option does to a job, the contract
//! docs/FIO.md documents. An option is modelled (it sets a [`JobSpec`]
//! field), accepted with a warning (it cannot change a model's result), or
//! refused naming the file, the line and the option (it would change what
//! is measured, and there is no model of it).

use super::values::{parse_size, with_fio_units};
use cint_scenario::{Engine, Rw, SyncWrites};

use super::diag::Diagnostics;
use super::job::{At, JobSpec, SizeSpec};
use super::jobfile::Opt;
use super::values::{
    parse_bool, parse_cpumask, parse_cpus, parse_fio_time, parse_fio_time_in, per_direction,
    some_direction,
};
use super::FioError;

/// Options that shape fio's report, which the model's does not follow.
const REPORT_SHAPE: &[&str] = &["unified_rw_reporting"];

/// io_uring's faster ways through the kernel, which the model's
/// per-request path (the host profile's, measured without them) does
/// not take: warned, with what they spare.
const FASTER_PATHS: &[(&str, &str)] = &[
    (
        "fixedbufs",
        "registered buffers (IORING_REGISTER_BUFFERS, the _FIXED reads and writes) spare \
         each direct request the pinning of its user pages (get_user_pages_fast, from \
         bio_iov_iter_get_pages)",
    ),
    (
        "registerfiles",
        "registered files (IOSQE_FIXED_FILE) spare each request the file's reference (fget \
         and fput)",
    ),
    (
        "nonvectored",
        "IORING_OP_READ and IORING_OP_WRITE (Linux 5.6; the vectored ones came with io_uring \
         in 5.1) spare each request copying its one iovec",
    ),
];

/// Options that ask for what the model's report always does, accepted
/// without a word: `group_reporting`, a job's threads reported together
/// (fio's JSON lists each thread as a job of its own without it).
const AS_THE_REPORT_DOES: &[&str] = &["group_reporting"];

/// Options accepted and ignored because a model has no use for them.
const MEANINGLESS: &[&str] = &[
    "filename_format",
    "directory",
    "description",
    "thread",
    "threads",
    "randrepeat",
    "allrandrepeat",
    "randseed",
    "unique_filename",
    "uid",
    "gid",
    "unlink",
    "new_group",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "per_job_logs",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
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
    "lockmem",
    "exitall_on_error",
    "stats",
    "overwrite",
    "kb_base",
    // The cinterrupts artifact's job files.
    "numa_mem_policy",
    "numa_cpu_nodes",
    "disk_util",
    // Data content: the model moves bytes, it does not look at them.
    "dedupe_mode",
    "dedupe_global",
    "dedupe_percentage",
    "dedupe_working_set_percentage",
    "buffer_pattern",
    "buffer_compress_chunk",
    // Where the I/O buffers' memory comes from: the model has no buffers.
    "mem",
    "iomem_align",
    "hugepage-size",
    // What fio prints, logs or averages: the model reports its own.
    "write_iolog",
    "bwavgtime",
    "iopsavgtime",
    "block_error_percentiles",
    "unit_base",
    // Commands and files around the job, not in what it measures.
    "exec_prerun",
    "exec_postrun",
    "create_fsync",
    "unlink_each_loop",
    // Soft-deprecated in fio 3.33 (options.c): fio itself ignores it.
    "flow_watermark",
    // No I/O scheduler sits in front of the NVMe queues in the model (as
    // with Linux's `none` for NVMe), so request priorities change nothing.
    "prio",
    "prioclass",
    "cmdprio",
    "cmdprio_class",
    "cmdprio_percentage",
    "cmdprio_bssplit",
    // Write lifetime hints (F_SET_RW_HINT) reach an NVMe device only as
    // streams, which Linux 5.0's nvme_core turns on only with its
    // `streams` parameter (off by default), and the model's devices have
    // none.
    "write_hint",
    "log_prio",
    "log_offset",
    // The model has no I/O errors to continue on or dump.
    "continue_on_error",
    "ignore_error",
    "error_dump",
    // fio aborts a job that falls below these; the model reports its rate.
    "ramp_time_group",
    "create_serialize",
    "allow_file_create",
    "gtod_cpu",
];

const ZONED: &str = "zoned block devices are not modelled";
const NO_DATA: &str = "the model moves no data, so there is nothing to verify";
const NO_TRIMS: &str =
    "the model has no trims: no device profile has a deallocate time with a source yet";

/// Options refused because a block-device model cannot be what they ask
/// for (zoned devices, passthrough commands, data checks, trims), unless
/// their value is one of [`INERT`]'s.
const NOT_A_BLOCK_MODEL: &[(&str, &str)] = &[
    ("zonemode", ZONED),
    ("zonesize", ZONED),
    ("zonerange", ZONED),
    ("zoneskip", ZONED),
    ("zonecapacity", ZONED),
    ("max_open_zones", ZONED),
    ("job_max_open_zones", ZONED),
    ("ignore_zone_limits", ZONED),
    ("read_beyond_wp", ZONED),
    ("zone_reset_threshold", ZONED),
    ("zone_reset_frequency", ZONED),
    ("verify", NO_DATA),
    ("verify_only", NO_DATA),
    ("fill_device", "the model's device never fills up"),
    ("trim_percentage", NO_TRIMS),
    (
        "read_iolog",
        "replay the log with cint sim --trace FILE, which reads fio's iolog v2 and v3 \
         (docs/TRACES.md)",
    ),
    (
        "ioscheduler",
        "no I/O scheduler sits in front of the NVMe queues in the model, as with Linux's none \
         (only ioscheduler=none runs)",
    ),
];

/// How an option's value leaves fio doing what it does without the option.
enum Inert {
    /// A boolean that is off.
    Off,
    /// One of these values (as fio writes them, any case).
    Values(&'static [&'static str]),
}

/// Options that are not modelled but whose value here is fio's default,
/// so that fio runs the job as if they were not written: accepted without
/// a word. Any other value is refused or warned as the option is.
const INERT: &[(&str, Inert)] = &[
    ("verify", Inert::Values(&["0"])),
    ("verify_only", Inert::Off),
    ("fill_device", Inert::Off),
    ("trim_percentage", Inert::Values(&["0"])),
    ("zonemode", Inert::Values(&["none"])),
    ("zonesize", Inert::Values(&["0"])),
    ("zonerange", Inert::Values(&["0"])),
    ("zoneskip", Inert::Values(&["0"])),
    ("zonecapacity", Inert::Values(&["0"])),
    ("max_open_zones", Inert::Values(&["0"])),
    ("job_max_open_zones", Inert::Values(&["0"])),
    ("ignore_zone_limits", Inert::Off),
    ("read_beyond_wp", Inert::Off),
    ("ioscheduler", Inert::Values(&["none"])),
    ("serialize_overlap", Inert::Off),
    ("file_append", Inert::Off),
    (
        "percentage_random",
        Inert::Values(&["100", "100,100", "100,100,100"]),
    ),
    ("rw_sequencer", Inert::Values(&["sequential"])),
    ("lockfile", Inert::Values(&["none"])),
    ("write_barrier", Inert::Values(&["0"])),
    ("atomic", Inert::Off),
    ("bs_unaligned", Inert::Off),
    ("nice", Inert::Values(&["0"])),
    ("latency_run", Inert::Off),
    ("create_only", Inert::Off),
    ("pre_read", Inert::Off),
];

/// Options that only tune another option which the model refuses unless
/// it is off (fio's verification, its iolog replay, several files per
/// job, a cgroup): whatever their value, fio's run here is the one
/// without them.
const TUNES_REFUSED: &[(&str, &str)] = &[
    ("do_verify", "verify"),
    ("experimental_verify", "verify"),
    ("trim_verify_zero", "verify"),
    ("trim_backlog", "verify"),
    ("trim_backlog_batch", "verify"),
    ("read_iolog_chunked", "read_iolog"),
    ("replay_no_stall", "read_iolog"),
    ("replay_redirect", "read_iolog"),
    ("replay_scale", "read_iolog"),
    ("replay_align", "read_iolog"),
    ("replay_time_scale", "read_iolog"),
    ("replay_skip", "read_iolog"),
    ("merge_blktrace_file", "read_iolog"),
    ("merge_blktrace_scalars", "read_iolog"),
    ("merge_blktrace_iters", "read_iolog"),
    ("cgroup_nodelete", "cgroup"),
    ("cgroup_weight", "cgroup"),
];

/// fio 3.33's aliases (options.c, each option's `.alias`): the file may
/// write either name, and the alias is read as its option.
const ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("io_limit", "io_size"),
    ("fill_fs", "fill_device"),
    ("fileoffset", "offset"),
    ("blocksize", "bs"),
    ("blockalign", "ba"),
    ("blocksize_range", "bsrange"),
    ("blocksize_unaligned", "bs_unaligned"),
    ("nr_files", "nrfiles"),
    ("timeout", "runtime"),
    ("iomem", "mem"),
    ("mem_align", "iomem_align"),
    ("ratemin", "rate_min"),
    ("ratecycle", "rate_cycle"),
    ("wait_for_previous", "stonewall"),
    ("disable_bw", "disable_bw_measurement"),
    ("ss", "steadystate"),
    ("ss_dur", "steadystate_duration"),
    ("ss_ramp", "steadystate_ramp_time"),
];

/// The option an option name stands for: an alias's option, else itself.
fn canonical_name(key: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == key)
        .map_or(key, |(_, name)| name)
}

/// Applies one option line to `spec`: sets what it models, warns about
/// what it accepts without effect, refuses what it cannot model.
pub(super) fn apply(spec: &mut JobSpec, opt: &Opt, diag: &mut Diagnostics) -> Result<(), FioError> {
    let o = OptionLine {
        key: opt.key.as_str(),
        name: canonical_name(&opt.key),
        line: opt.line,
        raw: opt.value.as_deref(),
    };
    // The target is not modelled, but a block device's size, beyond the
    // job's, decides where a holed pass ends (`holed_pass`).
    if o.name == "filename" && o.raw.is_some_and(|f| f.trim().starts_with("/dev/")) {
        spec.placed = Some(At::new(o.line, "a block device"));
    }
    if apply_pattern(spec, &o, diag)?
        || apply_pacing(spec, &o, diag)?
        || apply_engine(spec, &o, diag)?
    {
        return Ok(());
    }
    unmodelled(&o, diag)
}

/// One option line, with the value syntaxes fio's options share and the
/// messages that name the option.
struct OptionLine<'a> {
    /// As the file writes it, for the messages.
    key: &'a str,
    /// fio's own name for it (an alias read as its option).
    name: &'a str,
    line: usize,
    raw: Option<&'a str>,
}

impl<'a> OptionLine<'a> {
    fn bad(&self, diag: &Diagnostics, what: &str) -> FioError {
        diag.err(
            self.line,
            format!(
                "option '{}': '{}' is not {what}",
                self.key,
                self.raw.unwrap_or("")
            ),
        )
    }

    fn need(&self, diag: &Diagnostics) -> FioError {
        diag.err(self.line, format!("option '{}' needs a value", self.key))
    }

    fn value(&self, diag: &Diagnostics) -> Result<&'a str, FioError> {
        self.raw.ok_or_else(|| self.need(diag))
    }

    fn int(&self, diag: &Diagnostics, lo: u64, hi: u64) -> Result<u64, FioError> {
        match self.value(diag)?.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(self.bad(diag, &format!("an integer in {lo}..={hi}"))),
        }
    }

    fn boolean(&self, diag: &Diagnostics) -> Result<bool, FioError> {
        parse_bool(self.raw).ok_or_else(|| self.bad(diag, "a boolean"))
    }

    fn positive_size(&self, diag: &Diagnostics, v: &str) -> Result<u64, FioError> {
        parse_size(v)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| self.bad(diag, "a size"))
    }

    /// fio's thinktime-like options: a bare number is microseconds.
    fn micros(&self, diag: &Diagnostics) -> Result<u64, FioError> {
        let t = parse_fio_time_in(self.value(diag)?, 1_000)
            .ok_or_else(|| self.bad(diag, "a time (a bare number is microseconds)"))?;
        self.within_an_hour(diag, t)
    }

    /// A time, refused past an hour at this line, as a scenario refuses
    /// every time past an hour (docs/SCENARIO-KEYS.md).
    fn within_an_hour(&self, diag: &Diagnostics, t: u64) -> Result<u64, FioError> {
        match cint_scenario::past_an_hour(t) {
            Some(why) => Err(diag.err(self.line, format!("option '{}': {why}", self.key))),
            None => Ok(t),
        }
    }

    fn invalid(&self, diag: &Diagnostics, v: &str, why: String) -> FioError {
        diag.err(self.line, format!("option '{}={v}': {why}", self.key))
    }
}

/// The options of what the requests are: direction and mix, sizes,
/// offsets, how many. False when `o` is none of them.
fn apply_pattern(
    spec: &mut JobSpec,
    o: &OptionLine<'_>,
    diag: &mut Diagnostics,
) -> Result<bool, FioError> {
    let key = o.key;
    match o.name {
        "rw" => {
            let v = o.value(diag)?;
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
                    return Err(diag.err(
                        o.line,
                        format!(
                            "option '{key}={v}' is not supported (supported: read, write, \
                             randread, randwrite, randrw, rw/readwrite; the model has no trims: no \
                             device profile has a deallocate time with a source yet)"
                        ),
                    ))
                }
            };
            if let Some(n) = suffix {
                let magnitude = n.strip_prefix('-').unwrap_or(n);
                let Ok(step) = parse_size(magnitude) else {
                    return Err(o.bad(diag, "a pattern with a size suffix (e.g. read:8k)"));
                };
                let what = format!("option '{key}={v}': the ':{n}' offset step");
                if rw.is_random() {
                    diag.warn(o.line, offsets_only(&what));
                } else {
                    let step = i64::try_from(step).unwrap_or(i64::MAX);
                    let signed = if n.starts_with('-') { -step } else { step };
                    spec.seq_step = Some(At::new(o.line, signed));
                    diag.warn(
                        o.line,
                        format!(
                            "{what} is modelled in how many requests a job that ends by its \
                             size makes (fio's pass over the file ends, or wraps, where the \
                             holes take it), not in the offsets themselves, on which the \
                             device model's service time does not depend (a buffered job's \
                             page-cache hits do: the model places its requests as fio does by \
                             default, docs/FIO.md \"Offsets\")"
                        ),
                    );
                }
            }
            spec.rw = Some(At::new(o.line, rw));
        }
        "bssplit" => {
            let v = o.value(diag)?;
            let (reads, writes, notes) =
                cint_scenario::shape::parse_bssplit_dirs(&with_fio_units(v))
                    .map_err(|e| o.invalid(diag, v, e))?;
            for note in notes {
                diag.warn(o.line, format!("option '{key}={v}': {note}"));
            }
            if !writes.is_empty() {
                spec.bssplit_write_differs = true;
            }
            spec.bssplit = Some(At::new(o.line, reads));
            spec.bssplit_write = writes;
        }
        "bsrange" => {
            let v = o.value(diag)?;
            let (reads, writes) = cint_scenario::shape::parse_bsrange_dirs(&with_fio_units(v))
                .map_err(|e| o.invalid(diag, v, e))?;
            spec.bsrange = Some(At::new(o.line, reads));
            spec.bsrange_write = writes;
        }
        "number_ios" => spec.number_ios = Some(At::new(o.line, o.int(diag, 0, i64::MAX as u64)?)),
        "io_size" => {
            // 0, fio's default, is the job's size.
            let v = o.value(diag)?;
            // A share of the job's size (options.c `str_io_size_cb`).
            if let Some(p) = v.strip_suffix('%') {
                let p = match p.trim().parse::<u64>() {
                    Ok(p) if (1..=100).contains(&p) => p,
                    _ => return Err(o.bad(diag, "a size, or a percentage in 1..=100")),
                };
                spec.io_size = None;
                spec.io_size_percent = (p < 100).then(|| At::new(o.line, p));
                return Ok(true);
            }
            let b = parse_size(v).map_err(|_| o.bad(diag, "a size"))?;
            spec.io_size = (b > 0).then(|| At::new(o.line, b));
            spec.io_size_percent = None;
        }
        "random_distribution" => {
            let v = o.value(diag)?;
            let d = cint_scenario::distribution::parse_distribution(v)
                .map_err(|e| o.invalid(diag, v, e))?;
            spec.random_distribution = Some(At::new(o.line, d));
        }
        "offset" | "offset_increment" | "offset_align" => {
            let v = o.value(diag)?;
            let ok = match v.strip_suffix('%') {
                Some(p) => {
                    o.name != "offset_align" && p.trim().parse::<u64>().is_ok_and(|p| p <= 100)
                }
                None => parse_size(v).is_ok(),
            };
            if !ok {
                return Err(o.bad(diag, "a size or a percentage"));
            }
            let bytes = Some(At::new(o.line, parse_size(v).unwrap_or(0)));
            match (o.name, v.strip_suffix('%')) {
                (_, Some(p)) if o.name != "offset_align" => {
                    // 0%, like 0, is fio's default.
                    let moves = p.trim().parse::<u64>().is_ok_and(|p| p > 0);
                    spec.offset_percent = moves.then(|| At::new(o.line, ()));
                }
                ("offset", None) => spec.offset = bytes,
                ("offset_increment", None) => spec.offset_increment = bytes,
                _ => {}
            }
            // 0, fio's default for each, moves nothing.
            if parse_size(v.trim_end_matches('%')).map_or(true, |n| n > 0) {
                let warning = match o.name {
                    "offset_align" => offsets_only(&format!("option '{key}'")),
                    _ => format!(
                        "option '{key}' only moves where requests land, on which the device \
                         model's service time does not depend (a buffered job's page-cache \
                         hits do); beside a filesize it also bounds the job's file, which \
                         the model keeps (docs/FIO.md \"Offsets\")"
                    ),
                };
                diag.warn(o.line, warning);
                spec.placed = Some(At::new(o.line, "an offset"));
            }
        }
        "filesize" => {
            let v = o.value(diag)?;
            if v.contains('-') {
                return Err(o.invalid(diag, v, "a random file size range is not supported".into()));
            }
            let b = o.positive_size(diag, v)?;
            spec.filesize = Some(At::new(o.line, b));
        }
        "bs" => {
            let v = o.value(diag)?;
            let [read, write] = read_write_sizes(v).map_err(|e| o.invalid(diag, v, e))?;
            spec.bs = Some(At::new(o.line, read));
            spec.bs_write = (write != read).then(|| At::new(o.line, write));
        }
        "size" => {
            let v = o.value(diag)?;
            let size = if let Some(p) = v.strip_suffix('%') {
                match p.trim().parse::<u64>() {
                    Ok(p) if (1..=100).contains(&p) => SizeSpec::Percent(p),
                    _ => return Err(o.bad(diag, "a percentage in 1..=100")),
                }
            } else {
                // 0, fio's default, is the whole file or device.
                match parse_size(v).map_err(|_| o.bad(diag, "a size"))? {
                    0 => {
                        spec.size = None;
                        return Ok(true);
                    }
                    b => SizeSpec::Bytes(b),
                }
            };
            spec.size = Some(At::new(o.line, size));
        }
        "rwmixread" => spec.rwmixread = Some(At::new(o.line, o.int(diag, 0, 100)? as u8)),
        "rwmixwrite" => spec.rwmixread = Some(At::new(o.line, 100 - o.int(diag, 0, 100)? as u8)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// The options of when the job runs and how fast: rates, pauses, start
/// and end, groups, flow control, steady state, the latency-target
/// search. False when `o` is none of them.
fn apply_pacing(
    spec: &mut JobSpec,
    o: &OptionLine<'_>,
    diag: &mut Diagnostics,
) -> Result<bool, FioError> {
    match o.name {
        "rate" => {
            let v = o.value(diag)?;
            let dirs = per_direction(v, |p| parse_size(p).ok()).ok_or_else(|| {
                o.bad(
                    diag,
                    "a rate in bytes per second per direction (e.g. 10m or 1m,500k)",
                )
            })?;
            spec.rate = some_direction(dirs).map(|dirs| At::new(o.line, dirs));
        }
        "rate_process" => match o.value(diag)? {
            "linear" => spec.poisson = false,
            "poisson" => spec.poisson = true,
            _ => return Err(o.bad(diag, "'linear' or 'poisson'")),
        },
        "thinktime" | "thinktime_spin" => {
            let t = o.micros(diag)?;
            let slot = if o.name == "thinktime" {
                &mut spec.thinktime
            } else {
                &mut spec.thinktime_spin
            };
            *slot = Some(At::new(o.line, t));
        }
        "thinktime_blocks" => {
            spec.thinktime_blocks =
                Some(At::new(o.line, o.int(diag, 1, u64::from(u32::MAX))? as u32))
        }
        "thinktime_blocks_type" => match o.value(diag)? {
            "complete" => spec.thinktime_issue = false,
            "issue" => spec.thinktime_issue = true,
            _ => return Err(o.bad(diag, "'complete' or 'issue'")),
        },
        "thinktime_iotime" => {
            // fio: a bare number is seconds; 0, its default, is off.
            let t = parse_fio_time(o.value(diag)?)
                .ok_or_else(|| o.bad(diag, "a time (e.g. 9, 500ms)"))?;
            let t = o.within_an_hour(diag, t)?;
            spec.thinktime_iotime = (t > 0).then(|| At::new(o.line, t));
        }
        // fio 3.33's name (options.c); the struct field is `rate_ign_think`.
        "rate_ignore_thinktime" => spec.rate_ign_think = o.boolean(diag)?,
        "startdelay" => {
            let v = o.value(diag)?;
            if v.contains('-') {
                return Err(o.invalid(
                    diag,
                    v,
                    "a random start delay range is not supported".into(),
                ));
            }
            let t = parse_fio_time(v).ok_or_else(|| o.bad(diag, "a time (e.g. 2, 500ms)"))?;
            let t = o.within_an_hour(diag, t)?;
            spec.startdelay = Some(At::new(o.line, t));
        }
        "loops" => spec.loops = o.int(diag, 1, u64::from(u32::MAX))?,
        "stonewall" => {
            spec.stonewall = o.boolean(diag)?;
        }
        "wait_for" => {
            let v = o.value(diag)?;
            spec.wait_for = Some(At::new(o.line, v.to_string()));
        }
        "flow" => {
            let v = o.value(diag)?;
            let w: i64 = v.parse().map_err(|_| o.bad(diag, "an integer weight"))?;
            if w < 0 {
                return Err(o.invalid(
                    diag,
                    v,
                    "negative weights are not supported (fio 3 weighs jobs by flow >= 0)".into(),
                ));
            }
            spec.flow = Some(At::new(
                o.line,
                u32::try_from(w).map_err(|_| o.bad(diag, "a weight below 2^32"))?,
            ));
        }
        "flow_id" => spec.flow_id = o.int(diag, 0, u64::from(u32::MAX))? as u32,
        "flow_sleep" => {
            spec.flow_sleep = o.micros(diag)?;
        }
        "exitall" => spec.exitall = o.boolean(diag)?,
        "exit_what" => {
            spec.exit_all_jobs = match o.value(diag)? {
                // One group runs at a time in the model, so ending every
                // running job is ending the group.
                "group" | "stonewall" => false,
                "all" => true,
                _ => return Err(o.bad(diag, "'group', 'stonewall' or 'all'")),
            }
        }
        "steadystate" => {
            let v = o.value(diag)?;
            let criterion =
                cint_scenario::shape::parse_steady(v).map_err(|e| o.invalid(diag, v, e))?;
            spec.steady = Some(At::new(o.line, criterion));
        }
        "steadystate_duration" => {
            // 0, fio's default, turns the detection off.
            let t = parse_fio_time(o.value(diag)?)
                .filter(|&t| t % 1_000_000_000 == 0)
                .ok_or_else(|| o.bad(diag, "whole seconds"))?;
            let t = o.within_an_hour(diag, t)?;
            spec.ss_dur = (t > 0).then(|| At::new(o.line, t));
        }
        // fio's latency-target search (target.c): bare times are
        // microseconds, as fio's is_time options read them.
        "latency_target" => spec.latency_target = Some(At::new(o.line, o.micros(diag)?)),
        // A bare number is microseconds; 0 or empty, no bound (fio's
        // default).
        "max_latency" => {
            let v = o.value(diag)?;
            let [read, write] = per_direction(v, |p| parse_fio_time_in(p, 1_000))
                .ok_or_else(|| o.bad(diag, "a time per direction (e.g. 10ms or 500us,2ms)"))?;
            for t in [read, write] {
                o.within_an_hour(diag, t)?;
            }
            let bound = |t: u64| (t > 0).then_some(t);
            let bounds = cint_scenario::max_latency::MaxLatency {
                read: bound(read),
                write: bound(write),
            };
            spec.max_latency = (read > 0 || write > 0).then(|| At::new(o.line, bounds));
        }
        "latency_window" => spec.latency_window = o.micros(diag)?,
        "latency_percentile" => {
            let v = o.value(diag)?;
            let p = v
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .ok_or_else(|| o.bad(diag, "a percentage above 0 and at most 100"))?;
            spec.latency_percentile = Some(At::new(o.line, p));
        }
        "steadystate_ramp_time" => {
            let t =
                parse_fio_time(o.value(diag)?).ok_or_else(|| o.bad(diag, "a time (e.g. 10s)"))?;
            spec.ss_ramp = o.within_an_hour(diag, t)?;
        }
        "rate_iops" => {
            let v = o.value(diag)?;
            let dirs = per_direction(v, |p| p.parse::<u64>().ok())
                .ok_or_else(|| o.bad(diag, "IO/s per direction (e.g. 5000 or 5000,1000)"))?;
            spec.rate_iops_dirs = some_direction(dirs).map(|dirs| At::new(o.line, dirs));
        }
        "runtime" => {
            // 0, fio's default, is no runtime.
            let t = parse_fio_time(o.value(diag)?)
                .ok_or_else(|| o.bad(diag, "a time (e.g. 10, 500ms, 2m)"))?;
            let t = o.within_an_hour(diag, t)?;
            spec.runtime = (t > 0).then(|| At::new(o.line, t));
        }
        "ramp_time" => {
            let t = parse_fio_time(o.value(diag)?)
                .ok_or_else(|| o.bad(diag, "a time (e.g. 2, 500ms)"))?;
            let t = o.within_an_hour(diag, t)?;
            spec.ramp = Some(At::new(o.line, t));
        }
        "time_based" => {
            spec.time_based = o.boolean(diag)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The options of how the job submits and where: engine, depths, flags,
/// threads and CPUs, its name. False when `o` is none of them.
fn apply_engine(
    spec: &mut JobSpec,
    o: &OptionLine<'_>,
    diag: &mut Diagnostics,
) -> Result<bool, FioError> {
    let key = o.key;
    match o.name {
        "barrier" => {
            // The cinterrupts authors' fio patch: Barrier on the last
            // iocb of each io_submit.
            spec.barrier = Some(At::new(o.line, o.boolean(diag)?))
        }
        "percentile_list" => {
            let v = o.value(diag)?;
            let list = cint_scenario::shape::parse_percentile_list(v)
                .map_err(|e| o.invalid(diag, v, e))?;
            spec.percentile_list = Some(At::new(o.line, list));
        }
        "fsync" | "fdatasync" => {
            let n = At::new(o.line, o.int(diag, 0, u64::from(u32::MAX))? as u32);
            if o.name == "fsync" {
                spec.fsync = Some(n);
            } else {
                spec.fdatasync = Some(n);
            }
        }
        "io_submit_mode" => match o.value(diag)? {
            "inline" => spec.offload = None,
            "offload" => spec.offload = Some(At::new(o.line, ())),
            _ => return Err(o.bad(diag, "'inline' or 'offload'")),
        },
        "iodepth" => spec.iodepth = Some(At::new(o.line, o.int(diag, 1, 65_535)? as u32)),
        // 0 is the depth, as fio's init.c `fixup_options` makes it.
        "iodepth_batch" => spec.batch = Some(At::new(o.line, o.int(diag, 0, 65_535)? as u32)),
        "iodepth_low" => spec.iodepth_low = Some(At::new(o.line, o.int(diag, 0, 65_535)? as u32)),
        // 0: fio's engines reap without waiting and call again until an
        // event is in.
        "iodepth_batch_complete_min" => {
            let n = o.int(diag, 0, 65_535)?;
            spec.batch_complete_min = Some(At::new(o.line, n as u32));
        }
        "iodepth_batch_complete_max" => {
            // 0, fio's default, is iodepth_batch_complete_min.
            let n = o.int(diag, 0, 65_535)?;
            spec.batch_complete_max = (n > 0).then(|| At::new(o.line, n as u32));
        }
        "gtod_reduce" => spec.gtod_reduce = Some(At::new(o.line, o.boolean(diag)?)),
        "ioengine" => spec.engine = Some(At::new(o.line, parse_engine(o, diag)?)),
        "numjobs" => spec.numjobs = Some(At::new(o.line, o.int(diag, 1, 4_096)? as u32)),
        "nrfiles" => spec.nrfiles = Some(At::new(o.line, o.int(diag, 1, 1_000_000)?)),
        "filename" => {
            let names = file_names(o.value(diag)?);
            spec.filenames = Some(At::new(o.line, names.max(1)));
            let warning = match names > 1 {
                true => format!(
                    "option '{key}' lists {names} files: the model lays them out on its one \
                     device, as nrfiles={names} does (several devices run as files of one)"
                ),
                false => format!("option '{key}' has no meaning in the model; ignored"),
            };
            diag.warn(o.line, warning);
        }
        "file_service_type" | "openfiles" => diag.warn(
            o.line,
            format!(
                "option '{key}' only chooses which of the job's files a request goes to, or \
                 how many are open, on which the device model's service time does not depend; \
                 ignored"
            ),
        ),
        "cpus_allowed" => {
            let v = o.value(diag)?;
            let cpus = parse_cpus(v)
                .filter(|c| !c.is_empty())
                .ok_or_else(|| o.bad(diag, "a CPU list"))?;
            spec.cpus = Some(At::new(o.line, cpus));
            spec.cpus_option = "cpus_allowed";
        }
        // The same CPU set as a mask; the later of the two stands, as in
        // fio, where both set `td->o.cpumask`.
        "cpumask" => {
            let cpus = parse_cpumask(o.value(diag)?).ok_or_else(|| {
                o.bad(
                    diag,
                    "a mask of CPUs with one set at least, of CPUs 0 to 31 (fio reads no CPU \
                     past 31 from it; cpus_allowed lists any)",
                )
            })?;
            spec.cpus = Some(At::new(o.line, cpus));
            spec.cpus_option = "cpumask";
        }
        "cpus_allowed_policy" => {
            let split = match o.value(diag)? {
                "shared" => false,
                "split" => true,
                _ => return Err(o.bad(diag, "'shared' or 'split'")),
            };
            spec.cpus_split = Some(At::new(o.line, split));
        }
        "direct" => spec.direct = Some(At::new(o.line, o.boolean(diag)?)),
        "fadvise_hint" => spec.fadvise_hint = Some(At::new(o.line, o.boolean(diag)?)),
        "norandommap" => spec.norandommap = o.boolean(diag)?,
        "rate_min" | "rate_iops_min" => apply_rate_min(spec, o, diag)?,
        "rate_cycle" => {
            let ms = o.int(diag, 1, u64::from(u32::MAX))?;
            spec.ratecycle = ms.saturating_mul(1_000_000);
        }
        "ba" => {
            let v = o.value(diag)?;
            let reads = v.split(',').next().unwrap_or("").trim();
            let ba = parse_size(reads)
                .ok()
                .filter(|&b| b > 0)
                .ok_or_else(|| o.bad(diag, "a size (or READ,WRITE sizes)"))?;
            diag.warn(
                o.line,
                offsets_only(&format!(
                    "option '{key}={v}' (other than the smallest size it turns fio's random map off, which the model does)"
                )),
            );
            spec.blockalign = Some(At::new(o.line, ba));
        }
        "random_generator" => {
            spec.lfsr = match o.value(diag)? {
                "lfsr" => true,
                "tausworthe" | "tausworthe64" => false,
                _ => return Err(o.bad(diag, "'tausworthe', 'lfsr' or 'tausworthe64'")),
            }
        }
        "buffered" => spec.direct = Some(At::new(o.line, !o.boolean(diag)?)),
        "hipri" => spec.hipri = Some(At::new(o.line, o.boolean(diag)?)),
        "sqthread_poll" => spec.sqpoll = Some(At::new(o.line, o.boolean(diag)?)),
        "invalidate" => {
            spec.keeps_cache = (!o.boolean(diag)?).then(|| At::new(o.line, ()));
        }
        "end_fsync" | "fsync_on_close" => {
            // The option's name, kept for the messages it gets.
            let name = match o.key {
                "end_fsync" => "end_fsync",
                _ => "fsync_on_close",
            };
            if o.boolean(diag)? {
                spec.final_fsync = Some(At::new(o.line, name));
            }
        }
        // A boolean in fio's older releases, `none`, `sync` or `dsync` in
        // its newer ones.
        "sync" => {
            let mode = match o.raw.map(str::to_ascii_lowercase).as_deref() {
                Some("none") => SyncWrites::None,
                Some("sync") => SyncWrites::Sync,
                Some("dsync") => SyncWrites::Dsync,
                _ if o.boolean(diag)? => SyncWrites::Sync,
                _ => SyncWrites::None,
            };
            spec.sync = Some(At::new(o.line, mode));
        }
        "sqthread_poll_cpu" => {
            spec.sqpoll_cpu = Some(At::new(o.line, o.int(diag, 0, 65_535)? as u32));
        }
        "nowait" => spec.nowait = Some(At::new(o.line, o.boolean(diag)?)),
        "name" => {
            let v = o.value(diag)?;
            if spec.name != "global" {
                spec.name = v.into();
            }
        }

        _ => return Ok(false),
    }
    Ok(true)
}

/// fio's `ioengine`: the engine the model runs it as, with a warning
/// where that is another's path, or its refusal.
fn parse_engine(o: &OptionLine<'_>, diag: &mut Diagnostics) -> Result<Engine, FioError> {
    let v = o.value(diag)?;
    Ok(match v {
        "psync" | "sync" => Engine::Psync,
        "pvsync" => {
            // preadv/pwritev of one iovec: the kernel's read and
            // write paths of pread/pwrite (Linux 5.0 fs/read_write.c:
            // both reach the file's ->read_iter), one blocking call
            // per request.
            diag.warn(
                o.line,
                "option 'ioengine=pvsync' runs as psync: preadv and pwritev of one \
                 iovec take pread's and pwrite's kernel path (the iovec's copy-in \
                 is not modelled)"
                    .into(),
            );
            Engine::Psync
        }
        "pvsync2" => Engine::Pvsync2,
        "libaio" => Engine::Libaio,
        "io_uring" => Engine::IoUring,
        "io_uring_cmd" => {
            return Err(diag.err(
                o.line,
                "option 'ioengine=io_uring_cmd' is not supported: NVMe passthrough \
                 skips the block layer whose costs the host profiles are made of, and \
                 came with Linux 5.19, after the reference hosts' 5.0 and 5.15; its own \
                 path is not measured yet (supported: psync, sync, pvsync, pvsync2, libaio, \
                 io_uring)"
                    .into(),
            ))
        }
        _ => {
            return Err(diag.err(
                o.line,
                format!(
                    "option 'ioengine={v}' is not supported (supported: psync, sync, \
                     pvsync, pvsync2, libaio, io_uring)"
                ),
            ))
        }
    })
}

/// fio's `rate_min` and `rate_iops_min`: a floor on the job's rate, one
/// unit at a time.
fn apply_rate_min(
    spec: &mut JobSpec,
    o: &OptionLine<'_>,
    diag: &mut Diagnostics,
) -> Result<(), FioError> {
    let key = o.key;
    let v = o.value(diag)?;
    let (unit, dirs) = if o.name == "rate_iops_min" {
        let dirs = per_direction(v, |p| p.parse::<u64>().ok());
        (cint_scenario::RateUnit::Iops, dirs)
    } else {
        (
            cint_scenario::RateUnit::Bytes,
            per_direction(v, |p| parse_size(p).ok()),
        )
    };
    let dirs = dirs.ok_or_else(|| o.bad(diag, "a rate (or READ,WRITE rates)"))?;
    let same_unit = |m: &At<(cint_scenario::RateUnit, [u64; 2])>| m.value.0 == unit;
    let Some(dirs) = some_direction(dirs) else {
        // fio's default, no floor: it clears an earlier floor of
        // its own unit only (fio keeps the two apart).
        if spec.rate_min.as_ref().is_some_and(same_unit) {
            spec.rate_min = None;
        }
        return Ok(());
    };
    if spec.rate_min.as_ref().is_some_and(|m| !same_unit(m)) {
        return Err(diag.err(
            o.line,
            format!(
                "option '{key}': ratemin together with rate_iops_min is not supported \
                 (fio checks ratemin first where both are set)"
            ),
        ));
    }
    spec.rate_min = Some(At::new(o.line, (unit, dirs)));
    Ok(())
}

/// An option the match in [`apply`] does not model: accepted silently at
/// a value that leaves fio's run as it is without it, warned about when
/// it has no meaning in a model or only tunes a refused option, refused
/// by name when a block-device model cannot be what it asks for, refused
/// otherwise.
fn unmodelled(o: &OptionLine<'_>, diag: &mut Diagnostics) -> Result<(), FioError> {
    let (key, name, line) = (o.key, o.name, o.line);
    if is_inert(name, o.raw) {
        return Ok(());
    }
    if let Some(why) = not_a_block_model(name) {
        return Err(diag.err(line, format!("option '{key}' is not supported: {why}")));
    }
    if let Some(tuned) = tunes_refused(name) {
        diag.warn(
            line,
            format!(
                "option '{key}' only tunes '{tuned}', which the model runs only when it is off; \
                 ignored"
            ),
        );
        return Ok(());
    }
    if AS_THE_REPORT_DOES.contains(&name) {
        return Ok(());
    }
    if let Some((_, spares)) = FASTER_PATHS.iter().find(|(n, _)| *n == name) {
        diag.warn(
            line,
            format!(
                "option '{key}' is not modelled: {spares}, a cost the model's per-request path \
                 keeps, so its CPU per I/O may be a little above fio's"
            ),
        );
        return Ok(());
    }
    if REPORT_SHAPE.contains(&name) {
        diag.warn(
            line,
            format!(
                "option '{key}' shapes fio's report, which the model's does not follow: the \
                 table and --fio-json give a job's reads and writes apart, as fio's default \
                 does"
            ),
        );
        return Ok(());
    }
    if MEANINGLESS.contains(&name) || name.starts_with("log_") {
        if name == "kb_base" && o.raw != Some("1024") {
            return Err(diag.err(
                line,
                "only kb_base=1024 (fio's default) is supported".into(),
            ));
        }
        diag.warn(
            line,
            format!("option '{key}' has no meaning in the model; ignored"),
        );
        return Ok(());
    }
    Err(diag.err(
        line,
        format!("option '{key}' is not supported (it could change what is measured)"),
    ))
}

/// Whether `raw` is a value at which fio runs as if `name` were not
/// written ([`INERT`]).
fn is_inert(name: &str, raw: Option<&str>) -> bool {
    let Some((_, inert)) = INERT.iter().find(|(k, _)| *k == name) else {
        return false;
    };
    match inert {
        Inert::Off => parse_bool(raw) == Some(false),
        Inert::Values(values) => raw.is_some_and(|v| {
            let v = v.trim();
            values.iter().any(|d| d.eq_ignore_ascii_case(v))
        }),
    }
}

/// Why `key` asks for something a block-device model cannot be, if it does.
fn not_a_block_model(key: &str) -> Option<&'static str> {
    NOT_A_BLOCK_MODEL
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, why)| *why)
}

/// The refused option that `key` only tunes ([`TUNES_REFUSED`]), if any.
fn tunes_refused(key: &str) -> Option<&'static str> {
    TUNES_REFUSED
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, tuned)| *tuned)
        // Every verify_* option but verify_only (which replaces the
        // workload) tunes fio's verification.
        .or_else(|| (key.starts_with("verify_") && key != "verify_only").then_some("verify"))
}

/// fio's `bs=READ[,WRITE[,TRIM]]` (HOWTO, `blocksize`): a size not
/// followed by a comma applies to the kinds after it too, an empty one is
/// fio's default (4 KiB). Trims are not modelled, so their size is only
/// checked.
fn read_write_sizes(v: &str) -> Result<[u64; 2], String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err("at most three sizes: reads, writes and trims".into());
    }
    let mut sizes = [4096u64; 3];
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        let size = parse_size(part).map_err(|_| format!("'{part}' is not a size"))?;
        // A direct job's size must be whole sectors: the scenario checks
        // that, knowing whether the job is direct.
        if size == 0 {
            return Err(format!("'{part}' is not a positive size"));
        }
        sizes[i] = size;
        if i + 1 == parts.len() {
            // Not terminated by a comma: it applies to the kinds after it.
            for later in &mut sizes[i + 1..] {
                *later = size;
            }
        }
    }
    if parts.iter().all(|p| p.is_empty()) {
        return Err("no size given".into());
    }
    Ok([sizes[0], sizes[1]])
}

/// How many files fio's `filename` names: the names between each `:`
/// not escaped with `\`, empty ones skipped (options.c
/// `str_filename_cb`, `get_next_str`).
fn file_names(v: &str) -> u64 {
    let (mut names, mut current, mut escaped) = (0, 0usize, false);
    for c in v.trim().chars() {
        match (c, escaped) {
            (':', false) => {
                names += u64::from(current > 0);
                current = 0;
            }
            ('\\', false) => escaped = true,
            _ => {
                escaped = false;
                current += 1;
            }
        }
    }
    names + u64::from(current > 0)
}

/// The warning for an option that only chooses offsets.
fn offsets_only(what: &str) -> String {
    format!(
        "{what} is accepted but not modelled: it only chooses offsets, on which the device \
         model's service time does not depend (a buffered job's page-cache hits do: the model \
         places its requests as fio does by default, docs/FIO.md \"Offsets\")"
    )
}

#[cfg(test)]
mod tests {
    use super::super::import_str;
    use super::super::test_support::{args, io};
    use super::{FASTER_PATHS, MEANINGLESS};

    /// Each option of the warned lists reaches its list: none is taken
    /// first by a rule of its own, where the list's entry would be dead
    /// (`loops` and `percentile_list` were, until 2026-11-30).
    #[test]
    fn each_warned_option_gets_its_lists_warning() {
        let warning = |name: &str| {
            let text = format!("[j]\nsize=1m\n{name}=1\n");
            let imp = import_str(&text, "w.fio", &args()).unwrap_or_else(|e| panic!("{name}: {e}"));
            imp.warnings
                .into_iter()
                .find(|w| w.starts_with("w.fio:3:"))
                .unwrap_or_else(|| panic!("{name}: no warning on its line"))
        };
        for &name in MEANINGLESS.iter().filter(|&&n| n != "kb_base") {
            let w = warning(name);
            assert!(w.contains("has no meaning in the model"), "{name}: {w}");
        }
        for (name, spares) in FASTER_PATHS {
            let w = warning(name);
            assert!(
                w.contains("is not modelled") && w.contains(spares),
                "{name}: {w}"
            );
        }
        let text = "[j]\nsize=1m\ngroup_reporting\n";
        let imp = import_str(text, "w.fio", &args()).expect("valid");
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    /// fio splits `filename` at each `:` not escaped, and skips empty
    /// names (options.c `get_next_str`).
    #[test]
    fn filename_lists_count_as_fio_splits_them() {
        for (v, n) in [
            ("/dev/nvme0n1", 1),
            ("a:b:c", 3),
            ("a\\:b:c", 2),
            ("a::b:", 2),
            (":a", 1),
            ("", 0),
        ] {
            assert_eq!(super::file_names(v), n, "{v}");
        }
    }

    #[test]
    fn pvsync_runs_as_psync_with_a_warning() {
        let imp =
            import_str("[j]\nioengine=pvsync\nrw=randread\n", "v.fio", &args()).expect("pvsync");
        assert_eq!(
            io(&imp.scenario.jobs[0]).engine,
            cint_scenario::Engine::Psync
        );
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.contains("'ioengine=pvsync' runs as psync")),
            "{:?}",
            imp.warnings
        );
    }

    /// Request priorities and write lifetime hints reach nothing the model
    /// runs (no I/O scheduler; streams off in Linux 5.0's nvme_core and
    /// absent from the built-in devices): warned on their line, and the
    /// job runs as without them.
    #[test]
    fn priorities_and_write_hints_are_warned_and_change_nothing() {
        let plain = "[j]\nrw=write\nsize=1m\n";
        let base = import_str(plain, "h.fio", &args()).expect("plain");
        for option in ["write_hint=short", "prio=3", "prioclass=2"] {
            let text = format!("{plain}{option}\n");
            let imp = import_str(&text, "h.fio", &args()).expect(option);
            let name = option.split('=').next().unwrap_or_default();
            assert!(
                imp.warnings
                    .iter()
                    .any(|w| w.starts_with("h.fio:4:") && w.contains(&format!("'{name}'"))),
                "{option}: {:?}",
                imp.warnings
            );
            assert_eq!(imp.scenario, base.scenario, "{option}");
        }
    }

    #[test]
    fn offloaded_submission_keeps_the_depth_as_its_workers() {
        // A synchronous engine's iodepth is ignored inline, and is the
        // number of workers offloaded (fio's rate-submit.c).
        let text = "[j]\nioengine=psync\ndirect=1\niodepth=8\nio_submit_mode=offload\n";
        let s = import_str(text, "o.fio", &args()).expect("offload imports");
        let job = io(&s.scenario.jobs[0]);
        assert!(job.offload);
        assert_eq!(job.iodepth, 8);
        let inline = import_str(&text.replace("offload", "inline"), "i.fio", &args())
            .expect("inline imports");
        assert!(!io(&inline.scenario.jobs[0]).offload);
        assert_eq!(io(&inline.scenario.jobs[0]).iodepth, 1);
        // fio refuses to offload io_uring.
        let uring = text.replace("psync", "io_uring");
        let e = import_str(&uring, "u.fio", &args()).expect_err("io_uring offload");
        assert!(e.to_string().contains("FIO_NO_OFFLOAD"), "{e}");
    }

    #[test]
    fn read_and_write_block_sizes_follow_fios_comma_rule() {
        // HOWTO, blocksize: a size not followed by a comma applies to the
        // kinds after it; an empty one is the default, 4 KiB.
        for (v, read, write) in [
            ("8k", 8192, 8192),
            ("8k,32k", 8192, 32768),
            ("8k,32k,", 8192, 32768),
            (",8k", 4096, 8192),
            ("8k,", 8192, 4096),
            ("8k,8k,512", 8192, 8192),
        ] {
            assert_eq!(super::read_write_sizes(v), Ok([read, write]), "bs={v}");
        }
        // Reads of one size and writes of another: a split of one size per
        // direction.
        let text = "[j]\nioengine=libaio\nrw=randrw\nbs=4k,64k\nnorandommap\n";
        let s = import_str(text, "rw.fio", &args()).expect("bs=4k,64k imports");
        let job = io(&s.scenario.jobs[0]);
        assert_eq!(job.bs, 4096);
        assert_eq!(
            job.shape.bssplit,
            [cint_scenario::BsShare {
                bytes: 4096,
                percent: 100
            }]
        );
        assert_eq!(
            job.shape.bssplit_write,
            [cint_scenario::BsShare {
                bytes: 65536,
                percent: 100
            }]
        );
        // One size for both leaves the job unshaped.
        let s = import_str("[j]\nbs=8k,8k\n", "same.fio", &args()).expect("imports");
        assert!(io(&s.scenario.jobs[0]).shape.bssplit.is_empty());
        // fio rounds a size of a split down to a multiple of the smallest
        // (fio 3.33 issued 4 KiB only): so does the import, and says so.
        let text = "[j]\nioengine=libaio\nrw=randread\nbssplit=4k/50:6k/50\n";
        let s = import_str(text, "round.fio", &args()).expect("imports");
        assert_eq!(
            io(&s.scenario.jobs[0]).shape.bssplit,
            [cint_scenario::BsShare {
                bytes: 4096,
                percent: 100
            }]
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w
                    .starts_with("round.fio:4: warning: option 'bssplit=4k/50:6k/50': fio rounds")),
            "{:?}",
            s.warnings
        );
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
            ("[j]\ndirect=1\nbs=1000\n", 3, "multiple of 512"),
            ("[j]\nbs=4k,8k,2k,1k\n", 2, "at most three sizes"),
            ("[j]\nbs=,\n", 2, "no size given"),
            (
                "[j]\nrw=randrw\ndirect=1\nbs=4k,100\n",
                4,
                "multiple of 512",
            ),
            ("[j]\niodepth=0\n", 2, "iodepth"),
            ("[j]\nioengine=spdk\n", 2, "ioengine=spdk"),
            ("[j]\nruntime=soon\n", 2, "runtime"),
            (
                "[j]\nramp_time=9999999\n",
                2,
                "'ramp_time': must be at most 3600s",
            ),
            (
                "[j]\nthinktime=99999999999999\n",
                2,
                "'thinktime': must be at most 3600s",
            ),
            ("[j]\ncpus_allowed=3-1\n", 2, "CPU list"),
            ("[j]\nioengine=libaio\nhipri\n", 3, "hipri"),
            ("[j]\nsize=150%\n", 2, "percentage"),
            ("[j]\ndirect=maybe\n", 2, "boolean"),
            ("bs=4k\n[j]\n", 1, "before any"),
            ("[j\n", 1, "malformed"),
            ("[j]\n[j]\n", 2, "twice"),
            ("[j]\nsize=1k\n", 2, "size must be"),
            ("[j]\nsize=100t\n", 2, "size must be"),
        ] {
            let e = import_str(text, "b.fio", &args()).expect_err(text);
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn offsets_are_checked_then_warned_and_distributions_modelled() {
        let text = "[a]\nrw=read:-8k\nrandom_distribution=zipf:1.2\noffset=10%\n\
                    [b]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/80\nruntime=1\n";
        let imp = import_str(text, "o.fio", &args()).expect("valid");
        let offsets = imp.warnings.iter().filter(|w| w.contains("offset")).count();
        assert_eq!(offsets, 2, "{:?}", imp.warnings);
        assert_eq!(
            io(&imp.scenario.jobs[1]).shape.random_distribution,
            cint_scenario::distribution::parse_distribution("zoned:50/5:30/15:20/80")
                .expect("valid")
        );
        assert!(
            imp.warnings.iter().any(|w| w.contains("no cpus_allowed")),
            "two unpinned jobs in one group, each on a CPU of its own: {:?}",
            imp.warnings
        );
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
    fn what_a_block_device_model_cannot_be_is_refused_by_name() {
        for (text, needle) in [
            ("[a]\nzonemode=zbd\n", "zoned"),
            ("[a]\nverify=crc32c\n", "nothing to verify"),
            ("[a]\nrw=randtrim\n", "no trims"),
            ("[a]\nioengine=io_uring_cmd\n", "io_uring_cmd"),
        ] {
            let e = import_str(text, "r.fio", &args()).expect_err(text);
            assert_eq!(e.line, Some(2), "{text}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        let uring = "[a]\nioengine=io_uring\nrw=write\nfsync=4\n";
        let e = import_str(uring, "r.fio", &args()).expect_err("io_uring fsync");
        assert_eq!(e.line, Some(4));
        assert!(e.to_string().contains("IORING_OP_FSYNC"), "{e}");
        let s = import_str("[a]\nrw=write\nfsync=4\nfdatasync=8\n", "r.fio", &args())
            .expect("fsync with psync")
            .scenario;
        assert_eq!(
            (io(&s.jobs[0]).shape.fsync, io(&s.jobs[0]).shape.fdatasync),
            (4, 8)
        );
    }

    /// A value at fio's default is the option not written; any other
    /// value is refused as the option is, or warned where it only tunes a
    /// refused option.
    #[test]
    fn fios_defaults_run_and_other_values_keep_their_rule() {
        let job = "[j]\nioengine=libaio\ndirect=1\nrw=randread\nruntime=1\n";
        let import = |extra: &str| import_str(&format!("{job}{extra}"), "d.fio", &args());
        // Silent at fio's default.
        for extra in [
            "verify=0\n",
            "fill_device=0\n",
            "zonemode=none\nzonesize=0\n",
            "ioscheduler=none\n",
            "nrfiles=1\n",
            "nice=0\n",
            "percentage_random=100,100\n",
        ] {
            let imp = import(extra).unwrap_or_else(|e| panic!("{extra}: {e}"));
            assert!(
                !imp.warnings.iter().any(|w| w.contains("d.fio:6")),
                "{extra}: {:?}",
                imp.warnings
            );
        }
        // Refused at any other value, each with its reason.
        for (extra, needle) in [
            ("verify=md5\n", "nothing to verify"),
            ("verify_only=1\n", "nothing to verify"),
            ("fill_fs=1\n", "never fills up"),
            ("zonesize=64m\n", "zoned"),
            ("ioscheduler=mq-deadline\n", "ioscheduler=none runs"),
            ("read_iolog=x.log\n", "--trace"),
            ("trim_percentage=10\n", "no trims"),
            ("nice=5\n", "could change what is measured"),
            // An alias; here without a size to lay the files out.
            ("nr_files=2\n", "nrfiles=2 with neither size nor filesize"),
            ("percentage_random=50\n", "could change what is measured"),
        ] {
            let e = import(extra).expect_err(extra);
            assert_eq!(e.line, Some(6), "{extra}");
            assert!(e.to_string().contains(needle), "{extra}: {e}");
        }
        // Options that only tune a refused one: warned, whatever the value.
        for extra in ["do_verify=0\n", "verify_fatal=1\n", "replay_no_stall=1\n"] {
            let imp = import(extra).unwrap_or_else(|e| panic!("{extra}: {e}"));
            assert!(
                imp.warnings.iter().any(|w| w.contains("only tunes")),
                "{extra}: {:?}",
                imp.warnings
            );
        }
        // A modelled option's 0 is fio's "none": no cap, no runtime, no
        // size, which a later line may give to undo an earlier one.
        let imp =
            import("rate_iops=1000\nrate_iops=0\nrate=0\nio_size=0\nsize=0\n").expect("zeros");
        let j = io(&imp.scenario.jobs[0]);
        assert_eq!((j.rate_iops, j.shape.rate), (None, None));
        assert_eq!(j.shape.io_size, None);
        let imp = import("runtime=0\nsize=1m\n").expect("runtime=0");
        assert!(
            imp.scenario.run_to_end,
            "runtime=0 is no runtime: the job ends by its size"
        );
        // A floor's 0 clears a floor of its own unit only.
        let floor = |extra: &str| {
            io(&import(extra).expect(extra).scenario.jobs[0])
                .shape
                .rate_min
        };
        assert_eq!(floor("rate_iops_min=100\nrate_iops_min=0\n"), None);
        let kept = floor("rate_iops_min=100\nratemin=0\n").expect("kept");
        assert_eq!(kept.floor.unit, cint_scenario::RateUnit::Iops);
        // fio's own name for the floor's cycle, and its alias.
        for name in ["rate_cycle", "ratecycle"] {
            let min = floor(&format!("rate_iops=1000\nrate_iops_min=100\n{name}=500\n"))
                .expect("a floor");
            assert_eq!(min.cycle, 500_000_000, "{name}");
        }
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
}
