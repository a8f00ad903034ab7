//! The request-shaping keys of an I/O job (fio's `bssplit`, `bsrange`,
//! `rate`, `thinktime`, `number_ios`, `percentile_list`, the patched
//! fio's `barrier`) and the job's schedule (`group`, `startdelay`). The
//! text forms are fio's, so a fio job file and a scenario spell them alike.

use cint_policy::{Hint, Nanos};

use crate::error::ScenarioError;
use crate::model::{
    BsShare, DirectionRates, Distribution, Engine, ExitScope, IoShape, LatencyTarget, MinRate,
    RandomMap, RateUnit, Rw, Schedule, SteadyMetric, SteadyState, SyncWrites,
};
use crate::section::Section;
use crate::tree::Value;
use crate::units::{format_duration, parse_size};

/// Most groups a scenario may have (each is a phase of the run).
pub const MAX_GROUP: u64 = 1_024;

/// A block size of a split or range: positive. A job that does not go
/// through the page cache needs whole sectors, which the job checks
/// (`check_block_size` in job.rs), as it checks `bs`.
fn block(text: &str) -> Result<u64, String> {
    let bytes = parse_size(text.trim()).map_err(|e| format!("'{}': {e}", text.trim()))?;
    if bytes == 0 {
        return Err(format!("'{}' is not a positive size", text.trim()));
    }
    Ok(bytes)
}

/// Most entries fio keeps in one `bssplit` list (`BSSPLIT_MAX`).
pub const BSSPLIT_MAX: usize = 64;

/// fio's `bssplit` for one direction, `4k/10:64k/90`: each size with its
/// share of the requests in percent, as fio 3.33 draws them
/// (`bssplit_ddir` in options.c, `get_next_buflen` in io_u.c):
/// - an entry without a share, or with a share of 0, is open: the open
///   entries split what the others leave, each the whole percent below an
///   equal part;
/// - a share above 100 counts as 100;
/// - fio sorts the entries by share and draws along them, so what the
///   shares leave below 100 (the open entries' rounding, or given shares
///   that add up to less) goes to the largest share (the last of equals),
///   and shares that pass 100 are cut where they pass it;
/// - past 100 with one open entry, fio's arithmetic wraps and every
///   request takes the open entry's size;
/// - fio rounds each drawn size down to a multiple of the list's smallest
///   size (`get_next_buflen`, without `bs_unaligned`), entries without a
///   share included: `4k/50:6k/50` issues only 4 KiB requests.
///
/// The notes say, in words, where shares that do not come to 100 went
/// and which sizes fio rounds (a fio job file warns of them, a scenario
/// refuses them); more than 100% with two or more open entries is fio's
/// own error.
pub fn parse_bssplit(text: &str) -> Result<(Vec<BsShare>, Vec<SplitNote>), String> {
    let mut sizes: Vec<u64> = Vec::new();
    let mut shares: Vec<Option<u32>> = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, share) = match part.split_once('/') {
            Some((s, p)) => (s, Some(p.trim())),
            None => (part, None),
        };
        sizes.push(block(size)?);
        let share = match share.filter(|p| !p.is_empty()) {
            Some(p) => Some(
                p.parse::<u32>()
                    .map_err(|_| format!("'{part}': the share must be a whole percentage"))?,
            ),
            None => None,
        };
        shares.push(share.filter(|&p| p > 0).map(|p| p.min(100)));
    }
    if sizes.is_empty() {
        return Err("no block size".into());
    }
    if sizes.len() > BSSPLIT_MAX {
        return Err(format!(
            "{} entries: fio keeps at most {BSSPLIT_MAX}",
            sizes.len()
        ));
    }
    let smallest = sizes.iter().copied().min().unwrap_or(1);
    if let [bytes] = sizes[..] {
        return Ok((
            vec![BsShare {
                bytes,
                percent: 100,
            }],
            Vec::new(),
        ));
    }
    let given: u32 = shares.iter().flatten().sum();
    let open = shares.iter().filter(|s| s.is_none()).count() as u32;
    if given > 100 && open > 1 {
        return Err(format!(
            "the shares add up to {given}%, more than 100%, with {open} entries left to split the rest"
        ));
    }
    if given > 100 && open == 1 {
        // fio's unsigned `100 - perc` wraps to nearly 2^32 for the open
        // entry, which its comparison (an `int` difference) sorts first
        // and its draw then always picks.
        let at = shares.iter().position(Option::is_none).unwrap_or(0);
        let note = format!(
            "the shares add up to {given}%, and fio then gives every request to {}, the entry without a share",
            crate::units::format_size(sizes[at])
        );
        let note = SplitNote {
            what: note,
            instead: "give shares that add up to 100",
        };
        let (split, rounded) = round_to_smallest(vec![(sizes[at], 100)], smallest);
        return Ok((split, std::iter::once(note).chain(rounded).collect()));
    }
    let open_share = 100u32.saturating_sub(given).checked_div(open).unwrap_or(0);
    let share = |i: usize| shares[i].unwrap_or(open_share);
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| share(i));
    let mut percent = vec![0u32; sizes.len()];
    let mut drawn: u64 = 0;
    let mut last = None;
    for &i in order.iter().filter(|&&i| share(i) > 0) {
        let reached = (drawn + u64::from(share(i))).min(100);
        percent[i] = (reached - drawn.min(100)) as u32;
        drawn = reached.max(drawn);
        last = Some(i);
    }
    let note = match last {
        Some(i) if drawn < 100 => {
            percent[i] += (100 - drawn) as u32;
            (open == 0).then(|| {
                format!(
                    "the shares add up to {given}%, and fio gives the other {}% to {}, the largest share",
                    100 - given,
                    crate::units::format_size(sizes[i])
                )
            })
        }
        _ if given > 100 => Some(format!(
            "the shares add up to {given}%, and fio draws them in increasing order, so the largest gets only what the others leave"
        )),
        _ => None,
    };
    let note = note.map(|what| SplitNote {
        what,
        instead: "give shares that add up to 100",
    });
    let drawn = sizes
        .into_iter()
        .zip(percent)
        .filter(|&(_, percent)| percent > 0)
        .collect();
    let (split, rounded) = round_to_smallest(drawn, smallest);
    Ok((split, note.into_iter().chain(rounded).collect()))
}

/// fio's rounding of a drawn size down to a multiple of `smallest`, the
/// list's smallest size, applied to every `(size, share)` drawn; entries
/// that round to one size become one. The note names the sizes rounded.
fn round_to_smallest(drawn: Vec<(u64, u32)>, smallest: u64) -> (Vec<BsShare>, Option<SplitNote>) {
    let mut split: Vec<BsShare> = Vec::with_capacity(drawn.len());
    let mut rounded = Vec::new();
    for (bytes, percent) in drawn {
        let issued = bytes - bytes % smallest;
        if issued != bytes {
            rounded.push(format!(
                "{} as {}",
                crate::units::format_size(bytes),
                crate::units::format_size(issued)
            ));
        }
        match split.iter_mut().find(|s| s.bytes == issued) {
            Some(s) => s.percent += percent,
            None => split.push(BsShare {
                bytes: issued,
                percent,
            }),
        }
    }
    let note = (!rounded.is_empty()).then(|| SplitNote {
        what: format!(
            "fio rounds each size down to a multiple of the smallest, {}, and issues {}",
            crate::units::format_size(smallest),
            rounded.join(", ")
        ),
        instead: "give sizes that are multiples of the smallest",
    });
    (split, note)
}

/// Something fio does with a `bssplit` that its text does not say: a fio
/// job file is warned of it, a scenario refuses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitNote {
    /// What fio does, in words.
    pub what: String,
    /// What a scenario should write instead.
    pub instead: &'static str,
}

impl std::fmt::Display for SplitNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// A `bssplit`'s reads' list, writes' list (empty when the reads' serves)
/// and notes ([`parse_bssplit_dirs`]).
pub type SplitDirs = (Vec<BsShare>, Vec<BsShare>, Vec<SplitNote>);

/// fio's `bssplit` with an optional second list for writes
/// (`READS,WRITES`); the second is empty when writes use the first. The
/// notes say where shares that do not come to 100 went, and which sizes
/// fio rounds ([`parse_bssplit`]).
pub fn parse_bssplit_dirs(text: &str) -> Result<SplitDirs, String> {
    let mut lists = text.split(',');
    let mut notes = Vec::new();
    let (reads, read_notes) = parse_bssplit(lists.next().unwrap_or(""))?;
    let writes = match lists.next().map(str::trim) {
        None | Some("") => {
            notes.extend(read_notes);
            Vec::new()
        }
        Some(w) => {
            let (writes, write_notes) = parse_bssplit(w)?;
            let side = |dir: &str, n: SplitNote| SplitNote {
                what: format!("{dir}: {}", n.what),
                ..n
            };
            notes.extend(read_notes.into_iter().map(|n| side("reads", n)));
            notes.extend(write_notes.into_iter().map(|n| side("writes", n)));
            writes
        }
    };
    if lists.any(|t| !t.trim().is_empty()) {
        return Err("a third list (trims) is not modelled: the model has no trims".into());
    }
    let writes = if writes == reads { Vec::new() } else { writes };
    Ok((reads, writes, notes))
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

/// Whether every request of either direction is `bs`: no split and no
/// range, so [`draw_block_size`] draws nothing.
pub fn one_block_size(shape: &IoShape) -> bool {
    shape.bssplit.is_empty()
        && shape.bssplit_write.is_empty()
        && shape.bsrange.is_none()
        && shape.bsrange_write.is_none()
}

/// One direction's sizes (`write`: the writes'): its range, else its
/// split, each its own or else the reads'; neither: every request `bs`.
pub fn sizes_of(shape: &IoShape, write: bool) -> (Option<(u64, u64)>, &[BsShare]) {
    let split = if write && !shape.bssplit_write.is_empty() {
        &shape.bssplit_write
    } else {
        &shape.bssplit
    };
    let range = if write {
        shape.bsrange_write.or(shape.bsrange)
    } else {
        shape.bsrange
    };
    (range, split)
}

/// A request's size, as fio 3.33 draws it (`get_next_buflen`): `bs`, or
/// drawn from one direction's `bssplit` (`write`: the writes' list) or
/// `bsrange`, with the engine's own generator (the simulator's seeded
/// one, the emulator's thread's), so that both engines draw alike.
pub fn draw_block_size(shape: &IoShape, bs: u64, write: bool, rng: &mut impl rand::Rng) -> u64 {
    let (range, split) = sizes_of(shape, write);
    if let Some((lo, hi)) = range {
        // fio draws `lo + hi * U`, rounds it down to a multiple of `lo`
        // and caps it at `hi`: each multiple of `lo` up to `hi` takes
        // `lo / hi` of the requests, and `hi` itself, when it is not a
        // multiple, what is left.
        let multiples = (hi / lo).max(1);
        if hi % lo == 0 {
            return lo * rng.gen_range(1..=multiples);
        }
        let k = rng.gen_range(0..hi) / lo + 1;
        return if k > multiples { hi } else { k * lo };
    }
    if split.is_empty() {
        return bs;
    }
    let mut x = rng.gen_range(0..100u32);
    for s in split {
        if x < s.percent {
            return s.bytes;
        }
        x -= s.percent;
    }
    // The shares add up to 100: unreachable, but never a size of zero.
    split.last().map_or(bs, |s| s.bytes)
}

/// A request's size drawn as [`draw_block_size`] draws it, where `room`
/// bytes are left before the end of the file's pass
/// ([`crate::passes::PassSyncs::room_in_pass`]; `None`: no end to fit):
/// fio draws again until the size fits (io_u.c `get_next_buflen`,
/// `io_u_fits`), so a pass over a file of several sizes fills it to
/// within its smallest size. Where not even the smallest fits, the first
/// draw.
pub fn draw_block_size_within(
    shape: &IoShape,
    bs: u64,
    write: bool,
    room: Option<u64>,
    rng: &mut impl rand::Rng,
) -> u64 {
    let first = draw_block_size(shape, bs, write, rng);
    let Some(room) = room else {
        return first;
    };
    if first <= room || room < smallest_block_of(shape, bs, write) {
        return first;
    }
    loop {
        let again = draw_block_size(shape, bs, write, rng);
        if again <= room {
            return again;
        }
    }
}

/// The hint of request `index` of a `len`-request submission call when
/// the application marks it: `barrier_last` is the patched fio's
/// `RWF_BARRIER` on the last iocb of each `io_submit` (or io_uring
/// batch), an application override of the kernel's rule and of the job's
/// `hint`. Synchronous engines submit no batches. Both engines mark by
/// it.
pub fn batch_hint(shape: &IoShape, engine: Engine, index: u32, len: u32) -> Option<Hint> {
    let batches = !engine.is_sync();
    (batches && shape.barrier_last && index + 1 == len).then_some(Hint::Barrier)
}

/// fio's flow control (flow.c `flow_threshold_exceeded`): a thread of
/// `weight` that counted `mine` of its flow's `counter` passes is ahead
/// of its share, and holds back, when `mine / counter` exceeds `weight /
/// total` (`total`: the weights of the flow's threads that have not
/// exited, each counted from the run's setup, as fio's `add_job` adds
/// it), compared in integers. Both engines hold by it.
pub fn flow_ahead(mine: u64, weight: u32, counter: u64, total: u64) -> bool {
    u128::from(mine) * u128::from(total) > u128::from(weight) * u128::from(counter)
}

/// One note per flow some of whose jobs start after others (a later
/// `group`, a `startdelay`): fio counts every job's weight from the run's
/// setup, so until those start, the jobs running make all of the flow's
/// passes on less than all of its weight, each soon finds itself ahead of
/// its share, and the flow holds them; a result of a few requests is
/// then fio's, and says why.
pub fn flow_waiting_weight_notes(sc: &crate::Scenario) -> Vec<String> {
    // Each flow's jobs, in the order the file first names the flow, with
    // the weight of all their threads.
    let mut flows: Vec<(u32, Vec<(&crate::Job, u64)>)> = Vec::new();
    for job in &sc.jobs {
        let Some(io) = job.io().filter(|io| io.shape.flow > 0) else {
            continue;
        };
        let weighed = (job, u64::from(io.shape.flow) * u64::from(job.numjobs));
        match flows.iter_mut().find(|(id, _)| *id == io.shape.flow_id) {
            Some((_, jobs)) => jobs.push(weighed),
            None => flows.push((io.shape.flow_id, vec![weighed])),
        }
    }
    let start = |job: &crate::Job| (job.schedule.group, job.schedule.startdelay);
    let weight = |jobs: &[(&crate::Job, u64)]| jobs.iter().map(|&(_, w)| w).sum::<u64>();
    let names = |jobs: &[(&crate::Job, u64)]| {
        jobs.iter()
            .map(|(job, _)| format!("'{}'", job.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut notes = Vec::new();
    for (id, jobs) in flows {
        let Some(first) = jobs.iter().map(|&(job, _)| start(job)).min() else {
            continue;
        };
        let (early, late): (Vec<_>, Vec<_>) =
            jobs.into_iter().partition(|&(job, _)| start(job) == first);
        if late.is_empty() {
            continue;
        }
        let starts = if late.len() == 1 { "starts" } else { "start" };
        let make = if early.len() == 1 { "makes" } else { "make" };
        notes.push(format!(
            "flow_id {id}: fio counts the weight of each job of a flow from the run's start, \
             and {} {starts} later (a later group or a start delay): until then {} {make} all \
             of the flow's passes on {} of its weight of {}, so their threads are soon ahead of \
             their share and held, and issue almost nothing (fio 3.33 too: a job of weight 1 \
             issued one request in a second beside a stonewalled job of weight 8)",
            names(&late),
            names(&early),
            weight(&early),
            weight(&early) + weight(&late),
        ));
    }
    notes
}

/// The smallest size one direction's requests may have (`write`: the
/// writes'): its own list or range, else the reads', else `bs`.
pub fn smallest_block_of(shape: &IoShape, bs: u64, write: bool) -> u64 {
    let (range, split) = sizes_of(shape, write);
    match range {
        Some((lo, _)) => lo,
        None => split.iter().map(|s| s.bytes).min().unwrap_or(bs),
    }
}

/// The largest block size a job's requests may have.
pub fn largest_block(shape: &IoShape, bs: u64) -> u64 {
    if let Some((_, hi)) = shape.bsrange {
        return shape.bsrange_write.map_or(hi, |w| w.1.max(hi));
    }
    let split = shape.bssplit.iter().chain(&shape.bssplit_write);
    split.map(|s| s.bytes).max().unwrap_or(bs)
}

/// `norandommap` and `random_generator`: how a random job's offsets are
/// drawn. fio's LFSR keeps no map, so it overrides `norandommap`.
fn random_map(sec: &mut Section<'_>) -> Result<RandomMap, ScenarioError> {
    let off = sec.bool("norandommap")?.unwrap_or(false);
    let generator = sec.choice("random_generator", &["tausworthe", "tausworthe64", "lfsr"])?;
    Ok(RandomMap::from_fio(
        off,
        generator.as_deref() == Some("lfsr"),
    ))
}

/// The `norandommap` and `random_generator` keys of `map`, for scenario
/// text; none for fio's default.
pub fn random_map_keys(map: RandomMap) -> Option<(&'static str, toml_edit::Value)> {
    match map {
        RandomMap::Map => None,
        RandomMap::Off => Some(("norandommap", true.into())),
        RandomMap::Lfsr => Some(("random_generator", "lfsr".into())),
    }
}

fn bounded_duration(sec: &mut Section<'_>, key: &'static str) -> Result<Nanos, ScenarioError> {
    // At most an hour, as every duration (`Section::duration`).
    Ok(sec.duration(key)?.unwrap_or(0))
}

/// A job's rate caps: `rate_iops` or `rate`, one cap for the job, or
/// given per direction (`"READS,WRITES"`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RateCaps {
    /// `rate_iops` as one cap.
    pub iops: Option<u64>,
    /// `rate` as one cap, bytes per second.
    pub bytes: Option<u64>,
    /// Either, per direction.
    pub per_direction: Option<DirectionRates>,
}

impl RateCaps {
    /// Whether any cap is set.
    pub fn any(&self) -> bool {
        self.iops.is_some() || self.bytes.is_some() || self.per_direction.is_some()
    }
}

/// Reads `rate_iops` and `rate` of a job of pattern `rw`: a whole number
/// (a size for `rate`) caps the job on one schedule; fio's
/// `"READS,WRITES"` form (`"1000,500"`, `"1000,"`: writes free) caps each
/// direction of a job that reads and writes on a schedule of its own.
pub(crate) fn parse_rates(sec: &mut Section<'_>, rw: Rw) -> Result<RateCaps, ScenarioError> {
    let mut caps = RateCaps::default();
    for (key, unit) in [("rate_iops", RateUnit::Iops), ("rate", RateUnit::Bytes)] {
        let Some(cap) = read_cap(sec, key, unit, rw)? else {
            continue;
        };
        if caps.any() {
            return Err(sec.error("rate", "give rate or rate_iops, not both"));
        }
        match cap {
            Cap::PerDirection(rates) => caps.per_direction = Some(rates),
            Cap::One(c) if unit == RateUnit::Iops => caps.iops = Some(c),
            Cap::One(c) => caps.bytes = Some(c),
        }
    }
    Ok(caps)
}

/// A rate key's value: one, or fio's `"READS,WRITES"`.
enum Cap {
    One(u64),
    PerDirection(DirectionRates),
}

/// Reads rate key `key` counting `unit` on a job of pattern `rw`: a whole
/// number (a size for bytes), or fio's `"READS,WRITES"` form on a job
/// that reads and writes.
fn read_cap(
    sec: &mut Section<'_>,
    key: &'static str,
    unit: RateUnit,
    rw: Rw,
) -> Result<Option<Cap>, ScenarioError> {
    let per_direction = match sec.node(key).map(|n| &n.value) {
        Some(Value::Str(text)) if text.contains(',') => Some(text.clone()),
        _ => None,
    };
    if let Some(text) = per_direction {
        if !rw.is_mixed() {
            return Err(sec.error(
                key,
                "a value per direction (\"READS,WRITES\") applies to a job that reads and \
                 writes (rw = \"randrw\" or \"readwrite\"); give this job one",
            ));
        }
        let (read, write) = parse_direction_caps(&text, unit).map_err(|e| sec.error(key, e))?;
        return Ok(Some(Cap::PerDirection(DirectionRates {
            unit,
            read,
            write,
        })));
    }
    let cap = match unit {
        RateUnit::Iops => sec.int(key, 1, i64::MAX as u64)?,
        RateUnit::Bytes => match sec.size(key)? {
            Some(0) => return Err(sec.error(key, "must be positive (bytes per second)")),
            other => other,
        },
    };
    Ok(cap.map(Cap::One))
}

/// fio's `ratemin` or `rate_iops_min` with `ratecycle` (backend.c
/// `__check_min_rate`): one value floors each direction the job issues,
/// `"READS,WRITES"` each its own.
pub(crate) fn parse_min_rate(
    sec: &mut Section<'_>,
    rw: Rw,
) -> Result<Option<MinRate>, ScenarioError> {
    let mut floor = None;
    for (key, unit) in [
        ("rate_iops_min", RateUnit::Iops),
        ("ratemin", RateUnit::Bytes),
    ] {
        let Some(cap) = read_cap(sec, key, unit, rw)? else {
            continue;
        };
        if floor.is_some() {
            return Err(sec.error("ratemin", "give ratemin or rate_iops_min, not both"));
        }
        floor = Some(match cap {
            Cap::PerDirection(rates) => rates,
            Cap::One(c) => DirectionRates {
                unit,
                read: Some(c),
                write: Some(c),
            },
        });
    }
    let cycle = sec.duration("ratecycle")?;
    if cycle.is_some_and(|c| !(MILLISECOND..=3_600 * SECOND).contains(&c)) {
        return Err(sec.error("ratecycle", "must be from 1ms to 3600s"));
    }
    match floor {
        Some(floor) => Ok(Some(MinRate {
            floor,
            cycle: cycle.unwrap_or(SECOND),
        })),
        None if cycle.is_some() => {
            Err(sec.error("ratecycle", "only applies with ratemin or rate_iops_min"))
        }
        None => Ok(None),
    }
}

/// A floor above its direction's cap, counted alike (`ratemin` against
/// `rate`, `rate_iops_min` against `rate_iops`), is refused, as fio
/// refuses it (init.c `fixup_options`: "minimum rate exceeds rate").
pub(crate) fn check_floor_below_cap(
    sec: &Section<'_>,
    shape: &IoShape,
    rate_iops: Option<u64>,
) -> Result<(), ScenarioError> {
    let Some(min) = shape.rate_min else {
        return Ok(());
    };
    let unit = min.floor.unit;
    for write in [false, true] {
        let cap = match shape.rate_per_direction {
            Some(caps) if caps.unit == unit => caps.of(write),
            Some(_) => None,
            None if unit == RateUnit::Iops => rate_iops,
            None => shape.rate,
        };
        if let (Some(floor), Some(cap)) = (min.floor.of(write), cap) {
            if cap < floor {
                let key = if unit == RateUnit::Iops {
                    "rate_iops_min"
                } else {
                    "ratemin"
                };
                return Err(sec.error(
                    key,
                    format!(
                        "the floor {floor} is above the cap {cap}: fio refuses such a job \
                         (minimum rate exceeds rate)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A millisecond and a second, in nanoseconds.
const MILLISECOND: Nanos = 1_000_000;
const SECOND: Nanos = 1_000_000_000;

/// fio's Poisson rate process counts whole requests of a direction's
/// smallest size (backend.c `usec_for_io`: `iops = bps / min_bs`), and
/// divides by zero where a byte cap is under one such request a second:
/// refused, naming the key.
pub(crate) fn check_poisson_rate(
    sec: &Section<'_>,
    shape: &IoShape,
    bs: u64,
    rw: Rw,
) -> Result<(), ScenarioError> {
    if !shape.rate_poisson {
        return Ok(());
    }
    let caps = match (shape.rate, shape.rate_per_direction) {
        (Some(r), _) => [Some(r), Some(r)],
        (None, Some(c)) if c.unit == RateUnit::Bytes => [c.read, c.write],
        _ => return Ok(()),
    };
    let issues = [!matches!(rw, Rw::Write | Rw::RandWrite), !rw.only_reads()];
    for (write, cap) in [false, true].into_iter().zip(caps) {
        let Some(cap) = cap.filter(|_| issues[usize::from(write)]) else {
            continue;
        };
        let smallest = smallest_block_of(shape, bs, write);
        if cap < smallest {
            return Err(sec.error(
                "rate",
                format!(
                    "under rate_process = \"poisson\" fio counts whole requests of the smallest \
                     size, {}: a cap of {} a second is under one (fio divides by zero)",
                    crate::units::format_size(smallest),
                    crate::units::format_size(cap)
                ),
            ));
        }
    }
    Ok(())
}

/// fio's `R,W` form of a cap (`rate_iops=1000,500`, `rate=1m,`): an empty
/// side leaves that direction free; a third value (trims) is refused.
pub fn parse_direction_caps(
    text: &str,
    unit: RateUnit,
) -> Result<(Option<u64>, Option<u64>), String> {
    let one = |side: &str| -> Result<Option<u64>, String> {
        let side = side.trim();
        if side.is_empty() {
            return Ok(None);
        }
        let cap = match unit {
            RateUnit::Iops => side
                .parse::<u64>()
                .map_err(|_| format!("'{side}' is not a whole number of requests per second"))?,
            RateUnit::Bytes => parse_size(side).map_err(|e| format!("bad size: {e}"))?,
        };
        if cap == 0 {
            return Err(format!(
                "'{side}': a cap must be positive (leave the side empty for no cap)"
            ));
        }
        if unit == RateUnit::Iops && cap > i64::MAX as u64 {
            return Err(format!("'{side}' must be at most {}", i64::MAX));
        }
        Ok(Some(cap))
    };
    let mut sides = text.split(',');
    let read = one(sides.next().unwrap_or(""))?;
    let write = one(sides.next().unwrap_or(""))?;
    if sides.any(|t| !t.trim().is_empty()) {
        return Err("a third cap (trims) is not modelled: the model has no trims".into());
    }
    if read.is_none() && write.is_none() {
        return Err(format!("'{text}' caps neither reads nor writes"));
    }
    Ok((read, write))
}

/// Reads the shaping keys of an I/O job. `bs_given`: the job wrote `bs`,
/// which must then be the smallest size of a split or range.
pub(crate) fn parse_shape(
    sec: &mut Section<'_>,
    bs: u64,
    bs_given: bool,
    rates: RateCaps,
    rate_min: Option<MinRate>,
) -> Result<IoShape, ScenarioError> {
    let (bssplit, bssplit_write) = match sec.string("bssplit")? {
        Some(t) => {
            let (reads, writes, notes) =
                parse_bssplit_dirs(&t).map_err(|e| sec.error("bssplit", e))?;
            // fio reads such shares its own way (and says nothing); a
            // scenario says what it means.
            if let Some(note) = notes.first() {
                return Err(sec.error("bssplit", format!("{}; {}", note.what, note.instead)));
            }
            (reads, writes)
        }
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
    let rate = rates.bytes;
    let rate_poisson = sec
        .choice("rate_process", &["linear", "poisson"])?
        .as_deref()
        == Some("poisson");
    if rate_poisson && !rates.any() {
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
    if rate_ign_think && (thinktime == 0 || !rates.any()) {
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
    let pass_size = match (sec.size("pass_size")?, io_size) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(sec.error(
                "pass_size",
                "only applies with io_size (the passes that make it up)",
            ))
        }
        (Some(0), Some(_)) => return Err(sec.error("pass_size", "must be positive")),
        (Some(p), Some(_)) => Some(p),
    };
    let byte_limit = match (sec.size("byte_limit")?, pass_size, io_size) {
        (None, _, _) => None,
        (Some(_), None, _) => {
            return Err(sec.error(
                "byte_limit",
                "only applies with pass_size (where fio's passes end the job short of it)",
            ))
        }
        (Some(b), Some(_), Some(total)) if b < total => {
            return Err(sec.error(
                "byte_limit",
                format!(
                    "must be at least io_size, {}, got {}",
                    crate::units::format_size(total),
                    crate::units::format_size(b)
                ),
            ))
        }
        (Some(b), Some(_), _) => Some(b),
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
    let end_fsync = sec.bool("end_fsync")?.unwrap_or(false);
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
    let max_latency = crate::max_latency::parse(sec)?;
    let shape = IoShape {
        bssplit,
        bssplit_write,
        bsrange,
        bsrange_write,
        rate,
        rate_per_direction: rates.per_direction,
        rate_min,
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
        pass_size,
        byte_limit,
        percentile_list,
        fsync,
        fdatasync,
        sync_writes,
        end_fsync,
        flow,
        flow_id,
        flow_sleep,
        exitall,
        steady,
        latency_target,
        max_latency,
        trace: None,
        random_map: random_map(sec)?,
        random_distribution: match sec.string("random_distribution")? {
            Some(t) => crate::distribution::parse_distribution(&t)
                .map_err(|e| sec.error("random_distribution", e))?,
            None => Distribution::Uniform,
        },
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
        let (s, notes) = parse_bssplit("4k/10:64k/90").expect("valid");
        assert!(notes.is_empty());
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
        let (r, w, notes) = parse_bssplit_dirs("64k/40:1024k/60,1024k/100").expect("valid");
        assert_eq!((r.len(), w.len(), notes.len()), (2, 1, 0));
        assert_eq!(
            parse_bssplit_dirs("4k/100,4k/100"),
            Ok((
                vec![BsShare {
                    bytes: 4096,
                    percent: 100
                }],
                vec![],
                vec![]
            ))
        );
        assert!(parse_bssplit_dirs("4k,4k,4k").is_err());
        assert_eq!(format_bssplit(&s), "4KiB/10:64KiB/90");
        assert_eq!(parse_bssplit(&format_bssplit(&s)), Ok((s, vec![])));
        // Any positive size parses: a job that does not go through the
        // page cache refuses what is not whole sectors (job.rs).
        assert_eq!(parse_bssplit("1000/100").map(|(s, _)| s[0].bytes), Ok(1000));
        assert!(parse_bssplit("0/100").is_err());
        assert!(parse_bssplit("").is_err());
        assert!(parse_bssplit("4k/ten:8k").is_err());
    }

    fn percents(text: &str) -> Vec<(u64, u32)> {
        let (split, _) = parse_bssplit(text).expect("valid");
        split.iter().map(|s| (s.bytes / 1024, s.percent)).collect()
    }

    /// Each expectation is what fio 3.33 drew with `ioengine=null`,
    /// `norandommap=1`, `number_ios=200000` and `write_iolog` (the sizes'
    /// counts in its log, to within a percent).
    #[test]
    fn bssplit_shares_that_do_not_come_to_100_go_where_fio_puts_them() {
        // Given shares short of 100: the rest to the largest.
        assert_eq!(percents("4k/50:8k/30"), [(4, 70), (8, 30)]);
        // Open entries split the rest; the rounding goes to the largest
        // share, the last of equals.
        assert_eq!(percents("4k:8k:16k"), [(4, 33), (8, 33), (16, 34)]);
        assert_eq!(
            percents("1k/50:4k:8k:16k"),
            [(1, 52), (4, 16), (8, 16), (16, 16)]
        );
        // A share of 0 is open.
        assert_eq!(percents("4k/10:8k/0:16k/20"), [(4, 10), (8, 70), (16, 20)]);
        assert_eq!(percents("4k/0:8k/0"), [(4, 50), (8, 50)]);
        assert_eq!(percents("4k/30:8k"), [(4, 30), (8, 70)]);
        // Past 100, drawn in increasing order: the last gets what is left.
        assert_eq!(percents("4k/80:8k/80"), [(4, 80), (8, 20)]);
        // Past 100 with one entry open: fio's arithmetic wraps, and every
        // request takes the open entry's size.
        assert_eq!(percents("4k/90:8k/20:16k"), [(16, 100)]);
        // Nothing left for an open entry.
        assert_eq!(percents("4k/100:8k"), [(4, 100)]);
        assert_eq!(percents("4k/0"), [(4, 100)]);
        assert!(!parse_bssplit("4k/10:64k/80").expect("valid").1.is_empty());
        assert!(!parse_bssplit("4k/70:64k/80").expect("valid").1.is_empty());
        assert!(parse_bssplit("4k:8k:16k").expect("valid").1.is_empty());
        // fio's own error: past 100 with the rest split among several.
        assert!(parse_bssplit("4k/70:8k/80:16k:32k").is_err());
        // Each size rounded down to a multiple of the smallest, an entry
        // without a share included (fio 3.33: 4k/50:6k/50 issued 4 KiB
        // only; 6k/100:4k likewise; 4k/50:12k/30:14k/20 issued 4k 50%,
        // 12k 50%).
        assert_eq!(percents("4k/50:6k/50"), [(4, 100)]);
        assert_eq!(percents("6k/100:4k"), [(4, 100)]);
        assert_eq!(percents("4k/50:12k/30:14k/20"), [(4, 50), (12, 50)]);
        assert_eq!(percents("8k/90:4k/20:6k"), [(4, 100)]);
        let (_, notes) = parse_bssplit("4k/50:6k/50").expect("valid");
        assert_eq!(
            notes[0].what,
            "fio rounds each size down to a multiple of the smallest, 4KiB, and issues 6KiB as 4KiB"
        );
        let (_, _, notes) = parse_bssplit_dirs("4k/50:6k/50").expect("valid");
        assert!(!notes[0].what.starts_with("reads"), "{notes:?}");
        let many = vec!["4k"; BSSPLIT_MAX + 1].join(":");
        assert!(parse_bssplit(&many).is_err());
    }

    #[test]
    fn bsrange_and_percentiles() {
        assert_eq!(parse_bsrange("64k-4k"), Ok((4096, 65536)));
        assert!(parse_bsrange("4k").is_err());
        assert_eq!(parse_bsrange("4k-1000"), Ok((1000, 4096)));
        assert!(parse_bsrange("0-4k").is_err());
        assert_eq!(parse_percentile_list("50:99.9"), Ok(vec![50.0, 99.9]));
        assert!(parse_percentile_list("0:50").is_err());
        assert!(parse_percentile_list("101").is_err());
        let l = parse_percentile_list("1:99.99").expect("valid");
        assert_eq!(parse_percentile_list(&format_percentile_list(&l)), Ok(l));
    }
}
