//! The request-shaping keys of an I/O job (fio's `bssplit`, `bsrange`,
//! `rate`, `thinktime`, `number_ios`, `percentile_list`, the patched
//! fio's `barrier`) and the job's schedule (`group`, `startdelay`). The
//! text forms are fio's, so a fio job file and a scenario spell them alike.

use cint_policy::Nanos;

use crate::error::ScenarioError;
use crate::load::MAX_RUN_TIME;
use crate::model::{
    BsShare, ExitScope, IoShape, LatencyTarget, Schedule, SteadyMetric, SteadyState, SyncWrites,
};
use crate::section::Section;
use crate::units::{format_duration, parse_size};

/// Most groups a scenario may have (each is a phase of the run).
pub const MAX_GROUP: u64 = 1_024;

/// A block size of a split or range: a positive multiple of 512 bytes.
fn block(text: &str) -> Result<u64, String> {
    let bytes = parse_size(text.trim()).map_err(|e| format!("'{}': {e}", text.trim()))?;
    if bytes == 0 || bytes % 512 != 0 {
        return Err(format!(
            "'{}' is not a positive multiple of 512 bytes",
            text.trim()
        ));
    }
    Ok(bytes)
}

/// fio's `bssplit` for one direction: `4k/10:64k/90`, shares in percent.
/// As in fio, entries without a share split what the others leave
/// equally; the shares must come to 100.
pub fn parse_bssplit(text: &str) -> Result<Vec<BsShare>, String> {
    let mut out: Vec<BsShare> = Vec::new();
    let mut open = Vec::new();
    let mut given: u32 = 0;
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, share) = match part.split_once('/') {
            Some((s, p)) => (s, Some(p.trim())),
            None => (part, None),
        };
        let bytes = block(size)?;
        let percent = match share.filter(|p| !p.is_empty()) {
            Some(p) => {
                let p: u32 =
                    p.parse().ok().filter(|&p| p <= 100).ok_or_else(|| {
                        format!("'{part}': the share must be a percentage 0..=100")
                    })?;
                given += p;
                p
            }
            None => {
                open.push(out.len());
                0
            }
        };
        out.push(BsShare { bytes, percent });
    }
    if out.is_empty() {
        return Err("no block size".into());
    }
    if given > 100 {
        return Err(format!("the shares add up to {given}%, more than 100%"));
    }
    if !open.is_empty() {
        let n = open.len() as u32;
        let left = 100 - given;
        for (i, &at) in open.iter().enumerate() {
            // The remainder of an uneven split goes to the first ones.
            out[at].percent = left / n + u32::from((i as u32) < left % n);
        }
    } else if given != 100 {
        return Err(format!("the shares add up to {given}%, not 100%"));
    }
    out.retain(|s| s.percent > 0);
    Ok(out)
}

/// fio's `bssplit` with an optional second list for writes
/// (`READS,WRITES`); the second is empty when writes use the first.
pub fn parse_bssplit_dirs(text: &str) -> Result<(Vec<BsShare>, Vec<BsShare>), String> {
    let mut lists = text.split(',');
    let reads = parse_bssplit(lists.next().unwrap_or(""))?;
    let writes = match lists.next().map(str::trim) {
        None | Some("") => Vec::new(),
        Some(w) => parse_bssplit(w)?,
    };
    if lists.any(|t| !t.trim().is_empty()) {
        return Err("a third list (trims) is not modelled: the model has no trims".into());
    }
    let writes = if writes == reads { Vec::new() } else { writes };
    Ok((reads, writes))
}

/// A range of block sizes, (smallest, largest), in bytes.
pub type BlockRange = (u64, u64);

/// fio's `bsrange`, `4k-64k`, or `READS,WRITES` with the writes' own
/// range (`4k-8k,16k-64k`); the writes' is `None` when it is the reads'.
pub fn parse_bsrange_dirs(text: &str) -> Result<(BlockRange, Option<BlockRange>), String> {
    let mut ranges = text.split(',');
    let reads = parse_bsrange(ranges.next().unwrap_or("").trim())?;
    let writes = match ranges.next().map(str::trim) {
        None | Some("") => None,
        Some(w) => Some(parse_bsrange(w)?).filter(|&w| w != reads),
    };
    if ranges.any(|t| !t.trim().is_empty()) {
        return Err("a third range (trims) is not modelled: the model has no trims".into());
    }
    Ok((reads, writes))
}

/// fio's `bsrange` for one direction: `4k-64k`.
pub fn parse_bsrange(text: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = text
        .split_once('-')
        .ok_or_else(|| format!("'{text}' is not a range MIN-MAX"))?;
    let (lo, hi) = (block(lo)?, block(hi)?);
    Ok((lo.min(hi), lo.max(hi)))
}

/// fio's `ss` criterion: `iops:10%`, `bw_slope:0.5%`, `iops:200`:
/// (metric, slope, limit, limit in percent).
pub fn parse_steady(text: &str) -> Result<(SteadyMetric, bool, f64, bool), String> {
    let (kind, limit) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}' is not METRIC:LIMIT (e.g. iops:10%)"))?;
    let (metric, slope) = match kind.trim() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        other => {
            return Err(format!(
                "'{other}' is not a steady-state metric (iops, iops_slope, bw, bw_slope)"
            ))
        }
    };
    let limit = limit.trim();
    let (number, percent) = match limit.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (limit, false),
    };
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("'{limit}' is not a limit (a number, or a percentage)"))?;
    Ok((metric, slope, value, percent))
}

/// The `ss` text of a steady-state criterion.
pub fn format_steady(s: &SteadyState) -> String {
    let metric = match (s.metric, s.slope) {
        (SteadyMetric::Iops, false) => "iops",
        (SteadyMetric::Iops, true) => "iops_slope",
        (SteadyMetric::Bw, false) => "bw",
        (SteadyMetric::Bw, true) => "bw_slope",
    };
    format!("{metric}:{}{}", s.limit, if s.percent { "%" } else { "" })
}

/// fio's `percentile_list`: `50:99:99.9`, each in (0, 100].
pub fn parse_percentile_list(text: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let p: f64 = part
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && *p > 0.0 && *p <= 100.0)
            .ok_or_else(|| format!("'{part}' is not a percentile in (0, 100]"))?;
        out.push(p);
    }
    if out.is_empty() {
        return Err("no percentile".into());
    }
    Ok(out)
}

/// The `percentile_list` text of `list` (fio's form, read back by
/// [`parse_percentile_list`]).
pub fn format_percentile_list(list: &[f64]) -> String {
    list.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// The `bssplit` text of `split`.
pub fn format_bssplit(split: &[BsShare]) -> String {
    split
        .iter()
        .map(|s| format!("{}/{}", crate::units::format_size(s.bytes), s.percent))
        .collect::<Vec<_>>()
        .join(":")
}

/// The smallest block size a job's requests may have.
pub fn smallest_block(shape: &IoShape, bs: u64) -> u64 {
    if let Some((lo, _)) = shape.bsrange {
        return shape.bsrange_write.map_or(lo, |w| w.0.min(lo));
    }
    let split = shape.bssplit.iter().chain(&shape.bssplit_write);
    split.map(|s| s.bytes).min().unwrap_or(bs)
}

/// The largest block size a job's requests may have.
pub fn largest_block(shape: &IoShape, bs: u64) -> u64 {
    if let Some((_, hi)) = shape.bsrange {
        return shape.bsrange_write.map_or(hi, |w| w.1.max(hi));
    }
    let split = shape.bssplit.iter().chain(&shape.bssplit_write);
    split.map(|s| s.bytes).max().unwrap_or(bs)
}

fn bounded_duration(sec: &mut Section<'_>, key: &'static str) -> Result<Nanos, ScenarioError> {
    let d = sec.duration(key)?.unwrap_or(0);
    if d > MAX_RUN_TIME {
        return Err(sec.error(
            key,
            format!("must be at most 3600s (got {})", format_duration(d)),
        ));
    }
    Ok(d)
}

/// Reads the shaping keys of an I/O job. `bs_given`: the job wrote `bs`,
/// which must then be the smallest size of a split or range.
pub(crate) fn parse_shape(
    sec: &mut Section<'_>,
    bs: u64,
    bs_given: bool,
    has_rate_iops: bool,
) -> Result<IoShape, ScenarioError> {
    let (bssplit, bssplit_write) = match sec.string("bssplit")? {
        Some(t) => parse_bssplit_dirs(&t).map_err(|e| sec.error("bssplit", e))?,
        None => (Vec::new(), Vec::new()),
    };
    let (bsrange, bsrange_write) = match sec.string("bsrange")? {
        Some(t) => {
            let (r, w) = parse_bsrange_dirs(&t).map_err(|e| sec.error("bsrange", e))?;
            (Some(r), w)
        }
        None => (None, None),
    };
    if !bssplit.is_empty() && bsrange.is_some() {
        return Err(sec.error("bsrange", "give bssplit or bsrange, not both"));
    }
    let rate = match sec.size("rate")? {
        Some(0) => return Err(sec.error("rate", "must be positive (bytes per second)")),
        other => other,
    };
    if rate.is_some() && has_rate_iops {
        return Err(sec.error("rate", "give rate or rate_iops, not both"));
    }
    let rate_poisson = sec
        .choice("rate_process", &["linear", "poisson"])?
        .as_deref()
        == Some("poisson");
    if rate_poisson && rate.is_none() && !has_rate_iops {
        return Err(sec.error("rate_process", "needs rate or rate_iops"));
    }
    let barrier_last = sec.bool("barrier_last")?.unwrap_or(false);
    let thinktime = bounded_duration(sec, "thinktime")?;
    let thinktime_spin = bounded_duration(sec, "thinktime_spin")?;
    if thinktime_spin > thinktime {
        return Err(sec.error(
            "thinktime_spin",
            format!(
                "must be at most thinktime = {} (got {})",
                format_duration(thinktime),
                format_duration(thinktime_spin)
            ),
        ));
    }
    let (thinktime_blocks, thinktime_issue, thinktime_iotime) = think_triggers(sec, thinktime)?;
    let rate_ign_think = sec.bool("rate_ign_think")?.unwrap_or(false);
    if rate_ign_think && (thinktime == 0 || (rate.is_none() && !has_rate_iops)) {
        return Err(sec.error(
            "rate_ign_think",
            "only applies with thinktime and rate or rate_iops",
        ));
    }
    let number_ios = sec.int("number_ios", 1, i64::MAX as u64)?;
    let io_size = match sec.size("io_size")? {
        Some(0) => return Err(sec.error("io_size", "must be positive")),
        other => other,
    };
    let percentile_list = match sec.string("percentile_list")? {
        Some(t) => parse_percentile_list(&t).map_err(|e| sec.error("percentile_list", e))?,
        None => Vec::new(),
    };
    let fsync = sec.int("fsync", 0, u64::from(u32::MAX))?.unwrap_or(0) as u32;
    let fdatasync = sec.int("fdatasync", 0, u64::from(u32::MAX))?.unwrap_or(0) as u32;
    let sync_writes = match sec.choice("sync", &["none", "sync", "dsync"])?.as_deref() {
        Some("sync") => SyncWrites::Sync,
        Some("dsync") => SyncWrites::Dsync,
        _ => SyncWrites::None,
    };
    let flow = sec.int("flow", 0, u64::from(u32::MAX))?.unwrap_or(0) as u32;
    let flow_id = sec.int("flow_id", 0, u64::from(u32::MAX))?.unwrap_or(0) as u32;
    let flow_sleep = bounded_duration(sec, "flow_sleep")?;
    for key in ["flow_id", "flow_sleep"] {
        if flow == 0 && sec.has(key) {
            return Err(sec.error(key, "only applies with flow (a weight of 1 or more)"));
        }
    }
    let exitall = match sec.choice("exitall", &["group", "all"])?.as_deref() {
        Some("group") => Some(ExitScope::Group),
        Some(_) => Some(ExitScope::All),
        None => None,
    };
    let steady = parse_steady_state(sec)?;
    let latency_target = parse_latency_target(sec)?;
    let shape = IoShape {
        bssplit,
        bssplit_write,
        bsrange,
        bsrange_write,
        rate,
        rate_poisson,
        barrier_last,
        thinktime,
        thinktime_spin,
        thinktime_blocks,
        thinktime_issue,
        thinktime_iotime,
        rate_ign_think,
        number_ios,
        io_size,
        percentile_list,
        fsync,
        fdatasync,
        sync_writes,
        flow,
        flow_id,
        flow_sleep,
        exitall,
        steady,
        latency_target,
        trace: None,
    };
    let smallest = smallest_block(&shape, bs);
    if bs_given && smallest != bs {
        return Err(sec.error(
            "bs",
            format!("must be the smallest size of bssplit or bsrange ({smallest}) when one is given (got {bs})"),
        ));
    }
    Ok(shape)
}

/// fio's steady-state keys: `ss` (its metric, slope or level, and limit),
/// `ss_dur` in whole seconds, `ss_ramp`; none of them without `ss`.
fn parse_steady_state(sec: &mut Section<'_>) -> Result<Option<SteadyState>, ScenarioError> {
    Ok(match sec.string("ss")? {
        None => {
            for key in ["ss_dur", "ss_ramp"] {
                if sec.has(key) {
                    return Err(sec.error(key, "only applies with ss"));
                }
            }
            None
        }
        Some(text) => {
            let (metric, slope, limit, percent) =
                parse_steady(&text).map_err(|e| sec.error("ss", e))?;
            let dur = bounded_duration(sec, "ss_dur")?;
            if dur < 1_000_000_000 || dur % 1_000_000_000 != 0 {
                return Err(sec.error(
                    "ss_dur",
                    format!(
                        "must be whole seconds, at least 1s (samples are taken each second; got {})",
                        format_duration(dur)
                    ),
                ));
            }
            let ramp = bounded_duration(sec, "ss_ramp")?;
            Some(SteadyState {
                metric,
                slope,
                limit,
                percent,
                dur,
                ramp,
            })
        }
    })
}

/// fio's latency target keys: `latency_target`, its `latency_window` and
/// `latency_percentile`; none of them without a target.
fn parse_latency_target(sec: &mut Section<'_>) -> Result<Option<LatencyTarget>, ScenarioError> {
    Ok(match bounded_duration(sec, "latency_target")? {
        0 => {
            for key in ["latency_window", "latency_percentile"] {
                if sec.has(key) {
                    return Err(sec.error(key, "only applies with latency_target"));
                }
            }
            if sec.has("latency_target") {
                return Err(sec.error("latency_target", "must be longer than zero"));
            }
            None
        }
        target => {
            let window = bounded_duration(sec, "latency_window")?;
            let percentile = sec
                .number("latency_percentile", 0.0, 100.0)?
                .unwrap_or(100.0);
            if percentile <= 0.0 {
                return Err(sec.error(
                    "latency_percentile",
                    "must be above 0 (the share of I/Os that must meet the target)",
                ));
            }
            Some(LatencyTarget {
                target,
                window,
                percentile,
            })
        }
    })
}

/// Reads a job's schedule.
pub(crate) fn parse_schedule(sec: &mut Section<'_>) -> Result<Schedule, ScenarioError> {
    let group = sec.int("group", 0, MAX_GROUP)?.unwrap_or(0) as u32;
    let startdelay = bounded_duration(sec, "startdelay")?;
    Ok(Schedule { group, startdelay })
}

/// What starts a think time (fio's `thinktime_blocks`,
/// `thinktime_blocks_type` and `thinktime_iotime`, each only with
/// `thinktime`): every so many requests, completed or issued, and every
/// so much time. With `thinktime_iotime` alone the count never triggers
/// (`u32::MAX`), as in fio, which then skips the count.
fn think_triggers(
    sec: &mut Section<'_>,
    thinktime: Nanos,
) -> Result<(u32, bool, Nanos), ScenarioError> {
    let blocks = sec.int("thinktime_blocks", 1, u64::from(u32::MAX))?;
    let issue = sec
        .choice("thinktime_blocks_type", &["complete", "issue"])?
        .as_deref()
        == Some("issue");
    let iotime = bounded_duration(sec, "thinktime_iotime")?;
    for key in ["thinktime_blocks_type", "thinktime_iotime"] {
        if thinktime == 0 && sec.has(key) {
            return Err(sec.error(key, "only applies with thinktime"));
        }
    }
    let blocks = match blocks {
        Some(b) => b as u32,
        None if iotime > 0 => u32::MAX,
        None => 1,
    };
    Ok((blocks, issue, iotime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssplit_takes_fios_forms() {
        let s = parse_bssplit("4k/10:64k/90").expect("valid");
        assert_eq!(
            s,
            [
                BsShare {
                    bytes: 4096,
                    percent: 10
                },
                BsShare {
                    bytes: 65536,
                    percent: 90
                }
            ]
        );
        let open = parse_bssplit("512/50:4k:8k:16k").expect("valid");
        let shares: Vec<u32> = open.iter().map(|s| s.percent).collect();
        assert_eq!(shares, [50, 17, 17, 16]);
        assert!(parse_bssplit("4k/10:64k/80").is_err());
        assert!(parse_bssplit("4k/70:64k/80").is_err());
        assert!(parse_bssplit("1000/100").is_err());
        assert!(parse_bssplit("").is_err());
        let (r, w) = parse_bssplit_dirs("64k/40:1024k/60,1024k/100").expect("valid");
        assert_eq!((r.len(), w.len()), (2, 1));
        assert_eq!(
            parse_bssplit_dirs("4k/100,4k/100"),
            Ok((
                vec![BsShare {
                    bytes: 4096,
                    percent: 100
                }],
                vec![]
            ))
        );
        assert!(parse_bssplit_dirs("4k,4k,4k").is_err());
        assert_eq!(format_bssplit(&s), "4KiB/10:64KiB/90");
        assert_eq!(parse_bssplit(&format_bssplit(&s)), Ok(s));
    }

    #[test]
    fn bsrange_and_percentiles() {
        assert_eq!(parse_bsrange("64k-4k"), Ok((4096, 65536)));
        assert!(parse_bsrange("4k").is_err());
        assert!(parse_bsrange("4k-1000").is_err());
        assert_eq!(parse_percentile_list("50:99.9"), Ok(vec![50.0, 99.9]));
        assert!(parse_percentile_list("0:50").is_err());
        assert!(parse_percentile_list("101").is_err());
        let l = parse_percentile_list("1:99.99").expect("valid");
        assert_eq!(parse_percentile_list(&format_percentile_list(&l)), Ok(l));
    }
}
