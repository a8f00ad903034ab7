//! Parameter sweeps: the cross product of `--vary KEY=V1,V2,...` values,
//! every point run on every strategy of the scenario.
//!
//! Points are resolved through the scenario parser's own `--set KEY=VALUE`
//! overrides (via a [`ScenarioLoader`]), so a sweep accepts exactly the
//! keys and values a scenario file does. Every point is loaded before any
//! runs, so a bad key or value costs no simulation time. Points run in
//! parallel; the output order is the order of the cross product (the first
//! `--vary` varies slowest), whatever the number of workers.

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use cint_report::{EngineError, ErrorKind, RunResult};
use cint_scenario::Scenario;
use serde::{Deserialize, Serialize};

use crate::runner::Runner;

/// Produces the scenario of one sweep point from `--set KEY=VALUE`
/// strings, e.g. `|sets| cint_scenario::load_file(path, sets)` with its
/// error turned into one line.
pub trait ScenarioLoader: Sync {
    /// Loads the scenario with these overrides applied after the file's.
    fn load(&self, sets: &[String]) -> Result<Scenario, String>;
}

impl<F> ScenarioLoader for F
where
    F: Fn(&[String]) -> Result<Scenario, String> + Sync,
{
    fn load(&self, sets: &[String]) -> Result<Scenario, String> {
        self(sets)
    }
}

/// One `--vary KEY=V1,V2,...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vary {
    /// Dotted key as `--set` takes it, e.g. `job.async.iodepth`.
    pub key: String,
    /// Values in the order given; at least one.
    pub values: Vec<String>,
}

impl FromStr for Vary {
    type Err = SweepError;

    fn from_str(s: &str) -> Result<Vary, SweepError> {
        let bad = |reason: &str| SweepError::BadVary {
            arg: s.into(),
            reason: reason.into(),
        };
        let (key, values) = s
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=V1,V2,..."))?;
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(bad("the key is empty or has spaces"));
        }
        let values = split_top_level(values).ok_or_else(|| bad("a '[' is not closed"))?;
        if values.iter().any(String::is_empty) {
            return Err(bad("a value is empty"));
        }
        Ok(Vary {
            key: key.into(),
            values,
        })
    }
}

/// `V1,V2,...` split at the commas outside brackets, so that a value may
/// be a list (`[0,1],[2,3]`); `None` if a bracket is left open.
fn split_top_level(values: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let (mut depth, mut current) = (0u32, String::new());
    for c in values.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if depth > 0 {
        return None;
    }
    out.push(current.trim().to_string());
    Some(out)
}

/// How often the progress bar is redrawn while no point finishes, so its
/// elapsed time keeps moving during long (emulated) points.
const TICK: Duration = Duration::from_millis(500);

/// When to draw a progress bar on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Progress {
    /// Only when stderr is a terminal.
    #[default]
    Auto,
    /// Never.
    Never,
}

/// A sweep to run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SweepArgs {
    /// The varied keys; the first varies slowest.
    pub vary: Vec<Vary>,
    /// Overrides applied to every point, before the varied keys.
    pub sets: Vec<String>,
    /// Worker threads; 0: one per available core.
    pub workers: usize,
    /// Progress bar policy.
    pub progress: Progress,
}

/// Why a sweep stopped. Displays as one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepError {
    /// A `--vary` argument could not be read.
    BadVary {
        /// The argument as given.
        arg: String,
        /// What is wrong.
        reason: String,
    },
    /// The scenario parser refused a point (unknown key, bad value).
    Point {
        /// The point, `KEY=VALUE` pairs.
        point: String,
        /// The parser's message.
        message: String,
    },
    /// The engine failed on a point.
    Run {
        /// The point, `KEY=VALUE` pairs.
        point: String,
        /// The engine's error, its kind kept for the exit status.
        error: EngineError,
    },
    /// Writing the output failed.
    Io(String),
}

fn one_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim_end()
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::BadVary { arg, reason } => {
                write!(f, "--vary '{}': {}", one_line(arg), one_line(reason))
            }
            SweepError::Point { point, message } => {
                write!(f, "sweep point {point}: {}", one_line(message))
            }
            SweepError::Run { point, error } => {
                write!(
                    f,
                    "sweep point {point}: run failed: {}",
                    one_line(&error.to_string())
                )
            }
            SweepError::Io(m) => write!(f, "writing the sweep: {}", one_line(m)),
        }
    }
}

impl std::error::Error for SweepError {}

impl SweepError {
    /// An engine bug or a failed write is internal; the rest (the
    /// arguments, a point's scenario, an engine refusing a point) is
    /// refused input.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SweepError::BadVary { .. } | SweepError::Point { .. } => ErrorKind::Input,
            SweepError::Run { error, .. } => error.kind,
            SweepError::Io(_) => ErrorKind::Internal,
        }
    }
}

impl From<io::Error> for SweepError {
    fn from(e: io::Error) -> SweepError {
        SweepError::Io(e.to_string())
    }
}

/// One point of the cross product and its result.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// `(key, value)` in `--vary` order.
    pub values: Vec<(String, String)>,
    /// Every strategy on this point.
    pub result: RunResult,
}

/// A finished sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The varied keys, in `--vary` order.
    pub keys: Vec<String>,
    /// Every finished point, in cross-product order.
    pub points: Vec<SweepPoint>,
    /// The sweep was stopped (Ctrl-C) before every point ran: `points`
    /// holds those that finished.
    pub interrupted: bool,
    /// Points in the cross product, finished or not.
    pub total_points: usize,
}

/// One output record: a point x strategy x job. The JSON-lines file holds
/// one per line; the CSV one per row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Varied key to value, in `--vary` order.
    pub point: serde_json::Map<String, serde_json::Value>,
    /// Strategy name.
    pub strategy: String,
    /// Strategy kind.
    pub kind: String,
    /// Job name.
    pub job: String,
    /// The job's I/Os per second.
    pub iops: f64,
    /// The job's mean latency, ns; `None` (null in JSON, empty in CSV)
    /// where it has no latency sample: it completed nothing, or ended
    /// within its warm-up (its requests are then its whole life's, and
    /// fio takes no sample in a ramp).
    pub lat_mean_ns: Option<f64>,
    /// The job's median latency, ns (`None`: no sample).
    pub lat_p50_ns: Option<u64>,
    /// The job's 99th percentile latency, ns (`None`: no sample).
    pub lat_p99_ns: Option<u64>,
    /// The strategy's interrupts per second (all jobs).
    pub interrupts_per_s: f64,
    /// The strategy's busy fraction of the application cores.
    pub cpu_util: f64,
    /// This job's share of its core.
    pub job_cpu_util: f64,
    /// This job's context switches per I/O (0 without I/Os), the table's
    /// `cs/IO`. Absent from files written before it existed: read as 0.
    #[serde(default)]
    pub context_switches_per_io: f64,
    /// Times this job's threads were woken from a block, per I/O (0
    /// without I/Os). Absent from older files: read as 0.
    #[serde(default)]
    pub wakeups_per_io: f64,
    /// The strategy's energy figures, when the scenario has an energy
    /// model (docs/ENERGY.md); absent otherwise, so sweeps without one
    /// write what they always wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<SweepEnergy>,
    /// The strategy's virtual-machine figures, when the scenario has
    /// guests (docs/VIRT.md); absent otherwise. In the JSON lines only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virt: Option<SweepVirt>,
}

/// A strategy's virtual-machine figures in a sweep row (all guests).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepVirt {
    /// Virtual interrupts injected per second.
    pub virtual_interrupts_per_s: f64,
    /// IPIs to guests' cores per second.
    pub ipis_per_s: f64,
    /// Every core's cycles for the guests' I/O, per guest I/O.
    pub cycles_per_io: f64,
    /// The guests' policies' mean delivery ratio.
    pub delivery_ratio: f64,
}

/// A strategy's energy figures in a sweep row (all jobs together).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepEnergy {
    /// System energy over the measured time, joules.
    pub energy_j: f64,
    /// Mean system power, watts.
    pub power_w: f64,
    /// Bytes moved per joule.
    pub bytes_per_joule: f64,
}

/// The CSV columns appended after [`CSV_COLUMNS`] when the sweep's rows
/// carry energy figures (and only then).
pub const ENERGY_CSV_COLUMNS: [&str; 3] = ["energy_j", "power_w", "bytes_per_joule"];

/// The CSV columns after the varied keys. New columns are only ever
/// appended, so scripts reading columns by position keep working.
pub const CSV_COLUMNS: [&str; 12] = [
    "strategy",
    "kind",
    "job",
    "iops",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p99_ns",
    "interrupts_per_s",
    "cpu_util",
    "job_cpu_util",
    "context_switches_per_io",
    "wakeups_per_io",
];

/// How many of [`CSV_COLUMNS`] the first sweep CSVs had (before the
/// per-I/O context switches and wake-ups); [`read_csv`] still reads them.
const CSV_COLUMNS_V1: usize = 10;

/// `count` per I/O of a job, 0 for a job without I/Os (a CPU-bound job).
fn per_io(count: u64, ios: u64) -> f64 {
    if ios == 0 {
        0.0
    } else {
        count as f64 / ios as f64
    }
}

impl Sweep {
    /// One row per point x strategy x job, in order.
    pub fn rows(&self) -> Vec<SweepRow> {
        let mut rows = Vec::new();
        for p in &self.points {
            let point: serde_json::Map<String, serde_json::Value> = p
                .values
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            for s in &p.result.results {
                for j in &s.jobs {
                    let sampled = j.lat_ns.n > 0;
                    rows.push(SweepRow {
                        point: point.clone(),
                        strategy: s.strategy.clone(),
                        kind: s.kind.clone(),
                        job: j.name.clone(),
                        iops: j.iops,
                        lat_mean_ns: sampled.then_some(j.lat_ns.mean),
                        lat_p50_ns: j.lat_ns.at(50.0).filter(|_| sampled),
                        lat_p99_ns: j.lat_ns.at(99.0).filter(|_| sampled),
                        interrupts_per_s: s.interrupts_per_s,
                        cpu_util: s.cpu_util,
                        job_cpu_util: j.cpu_util,
                        context_switches_per_io: per_io(j.context_switches, j.ios),
                        wakeups_per_io: per_io(j.wakeups, j.ios),
                        energy: match (s.energy_j, &s.energy) {
                            (Some(energy_j), Some(e)) => Some(SweepEnergy {
                                energy_j,
                                power_w: e.power_w,
                                bytes_per_joule: e.bytes_per_joule,
                            }),
                            _ => None,
                        },
                        virt: s.virt.as_ref().map(|v| SweepVirt {
                            virtual_interrupts_per_s: v.virtual_interrupts_per_s,
                            ipis_per_s: v.ipis_per_s,
                            cycles_per_io: v.cycles_per_io,
                            delivery_ratio: v.delivery_ratio,
                        }),
                    });
                }
            }
        }
        rows
    }

    /// Writes one JSON object per row, one per line.
    pub fn write_jsonl(&self, out: &mut dyn Write) -> Result<(), SweepError> {
        for row in self.rows() {
            let line = serde_json::to_string(&row).map_err(|e| SweepError::Io(e.to_string()))?;
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    /// Writes a CSV with a header: the varied keys, then [`CSV_COLUMNS`].
    /// With energy figures in every row, [`ENERGY_CSV_COLUMNS`] follow.
    pub fn write_csv(&self, out: &mut dyn Write) -> Result<(), SweepError> {
        let rows = self.rows();
        let energy = !rows.is_empty() && rows.iter().all(|r| r.energy.is_some());
        write_csv_header_with(&self.keys, energy, out)?;
        write_rows(&rows, energy, out)
    }

    /// Writes the CSV rows of [`Sweep::write_csv`] without the header, so
    /// the rows of points run apart (on other machines, say) can be joined
    /// under one [`write_csv_header`] into the same bytes. Without energy
    /// columns: a header written before the rows cannot know whether
    /// every row will have them.
    pub fn write_csv_rows(&self, out: &mut dyn Write) -> Result<(), SweepError> {
        write_rows(&self.rows(), false, out)
    }
}

/// The CSV rows; `energy`: with the [`ENERGY_CSV_COLUMNS`] (every row has
/// energy figures).
fn write_rows(rows: &[SweepRow], energy: bool, out: &mut dyn Write) -> Result<(), SweepError> {
    for row in rows {
        let mut fields: Vec<String> = row
            .point
            .values()
            .map(|v| csv_field(v.as_str().unwrap_or_default()))
            .collect();
        fields.extend([
            csv_field(&row.strategy),
            csv_field(&row.kind),
            csv_field(&row.job),
            format!("{:.3}", row.iops),
            row.lat_mean_ns
                .map_or_else(String::new, |v| format!("{v:.3}")),
            row.lat_p50_ns.map_or_else(String::new, |v| v.to_string()),
            row.lat_p99_ns.map_or_else(String::new, |v| v.to_string()),
            format!("{:.3}", row.interrupts_per_s),
            format!("{:.6}", row.cpu_util),
            format!("{:.6}", row.job_cpu_util),
            format!("{:.6}", row.context_switches_per_io),
            format!("{:.6}", row.wakeups_per_io),
        ]);
        if let (true, Some(e)) = (energy, row.energy) {
            fields.extend([
                format!("{:.6}", e.energy_j),
                format!("{:.6}", e.power_w),
                format!("{:.3}", e.bytes_per_joule),
            ]);
        }
        writeln!(out, "{}", fields.join(","))?;
    }
    Ok(())
}

/// Writes the CSV header of a sweep varying `keys`: the keys, then
/// [`CSV_COLUMNS`].
pub fn write_csv_header(keys: &[String], out: &mut dyn Write) -> Result<(), SweepError> {
    write_csv_header_with(keys, false, out)
}

/// [`write_csv_header`], with the [`ENERGY_CSV_COLUMNS`] after the others
/// when `energy`.
fn write_csv_header_with(
    keys: &[String],
    energy: bool,
    out: &mut dyn Write,
) -> Result<(), SweepError> {
    let extra: &[&str] = if energy { &ENERGY_CSV_COLUMNS } else { &[] };
    let header: Vec<String> = keys
        .iter()
        .map(|k| csv_field(k))
        .chain(CSV_COLUMNS.iter().chain(extra).map(|c| c.to_string()))
        .collect();
    writeln!(out, "{}", header.join(","))?;
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Reads a JSON-lines sweep file back (for plotting).
pub fn read_jsonl(text: &str) -> Result<Vec<SweepRow>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: SweepRow = serde_json::from_str(line)
            .map_err(|e| format!("line {}: not a sweep row: {e}", i + 1))?;
        if let Some((name, v)) = [
            ("iops", row.iops),
            ("lat_mean_ns", row.lat_mean_ns.unwrap_or(0.0)),
            ("interrupts_per_s", row.interrupts_per_s),
            ("cpu_util", row.cpu_util),
            ("job_cpu_util", row.job_cpu_util),
            ("context_switches_per_io", row.context_switches_per_io),
            ("wakeups_per_io", row.wakeups_per_io),
        ]
        .into_iter()
        .find(|(_, v)| *v < 0.0)
        {
            return Err(format!("line {}: {name}: {v} is negative", i + 1));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err("no sweep rows".into());
    }
    Ok(rows)
}

/// Reads a CSV sweep file back (for plotting): the header written by
/// [`Sweep::write_csv`], the varied keys then [`CSV_COLUMNS`].
pub fn read_csv(text: &str) -> Result<Vec<SweepRow>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or("empty file")?;
    let mut header = csv_fields(header).map_err(|e| format!("line 1: {e}"))?;
    // Energy columns, when present, come last: read them apart.
    let energy = header.len() > ENERGY_CSV_COLUMNS.len()
        && header[header.len() - ENERGY_CSV_COLUMNS.len()..] == ENERGY_CSV_COLUMNS;
    if energy {
        header.truncate(header.len() - ENERGY_CSV_COLUMNS.len());
    }
    // The current columns, or the first version's (a prefix of them).
    let columns = [CSV_COLUMNS.len(), CSV_COLUMNS_V1]
        .into_iter()
        .find(|&n| header.len() > n && header[header.len() - n..] == CSV_COLUMNS[..n])
        .ok_or_else(|| {
            format!(
                "line 1: not a sweep header (varied keys, then {})",
                CSV_COLUMNS.join(",")
            )
        })?;
    let keys = header.len() - columns;
    let mut rows = Vec::new();
    for (i, line) in lines {
        let at = |e: String| format!("line {}: {e}", i + 1);
        let mut f = csv_fields(line).map_err(at)?;
        let width = header.len() + if energy { ENERGY_CSV_COLUMNS.len() } else { 0 };
        if f.len() != width {
            return Err(at(format!("{} fields, the header has {width}", f.len())));
        }
        let energy_fields = f.split_off(header.len());
        let energy_num = |c: usize| metric(&energy_fields[c], ENERGY_CSV_COLUMNS[c]).map_err(&at);
        let num = |c: usize| metric(&f[keys + c], CSV_COLUMNS[c]).map_err(&at);
        let int = |c: usize| -> Result<u64, String> {
            f[keys + c].parse::<u64>().map_err(|_| {
                at(format!(
                    "{}: '{}' is not an integer",
                    CSV_COLUMNS[c],
                    f[keys + c]
                ))
            })
        };
        rows.push(SweepRow {
            point: header[..keys]
                .iter()
                .zip(&f)
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
            strategy: f[keys].clone(),
            kind: f[keys + 1].clone(),
            job: f[keys + 2].clone(),
            iops: num(3)?,
            // Empty where the job has no latency sample.
            lat_mean_ns: (!f[keys + 4].is_empty()).then(|| num(4)).transpose()?,
            lat_p50_ns: (!f[keys + 5].is_empty()).then(|| int(5)).transpose()?,
            lat_p99_ns: (!f[keys + 6].is_empty()).then(|| int(6)).transpose()?,
            interrupts_per_s: num(7)?,
            cpu_util: num(8)?,
            job_cpu_util: num(9)?,
            context_switches_per_io: if columns > 10 { num(10)? } else { 0.0 },
            wakeups_per_io: if columns > 11 { num(11)? } else { 0.0 },
            energy: if energy {
                Some(SweepEnergy {
                    energy_j: energy_num(0)?,
                    power_w: energy_num(1)?,
                    bytes_per_joule: energy_num(2)?,
                })
            } else {
                None
            },
            virt: None,
        });
    }
    if rows.is_empty() {
        return Err("no sweep rows".into());
    }
    Ok(rows)
}

/// A metric of a CSV row. Rust reads "NaN" and "inf" as numbers; no
/// metric can be one (or negative), and a chart of one would be nonsense.
fn metric(field: &str, column: &str) -> Result<f64, String> {
    field
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("{column}: '{field}' is not a number (finite, at least 0)"))
}

/// Splits one CSV line, undoing [`csv_field`]'s quoting.
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(field);
    Ok(fields)
}

/// The points of the cross product, first key slowest.
pub fn cross_product(vary: &[Vary]) -> Vec<Vec<(String, String)>> {
    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for v in vary {
        points = points
            .into_iter()
            .flat_map(|p| {
                v.values.iter().map(move |value| {
                    let mut q = p.clone();
                    q.push((v.key.clone(), value.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// A point as messages name it: `KEY=VALUE` pairs separated by spaces.
pub fn describe(point: &[(String, String)]) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The points of a sweep, each loaded: what [`run_sweep_until`] runs.
#[derive(Clone, Debug)]
pub struct SweepPlan {
    /// `(key, value)` in `--vary` order, one per point, in cross-product
    /// order.
    pub points: Vec<Vec<(String, String)>>,
    /// Each point's scenario, in the same order.
    pub scenarios: Vec<Scenario>,
}

/// The `--set` overrides of one point: `sets` (applied to every point),
/// then the point's `KEY=VALUE` pairs.
pub fn point_sets(sets: &[String], point: &[(String, String)]) -> Vec<String> {
    let mut all = sets.to_vec();
    all.extend(point.iter().map(|(k, v)| format!("{k}={v}")));
    all
}

/// Checks the varied keys and loads every point of their cross product,
/// so a bad key or value is reported before anything runs: the first
/// half of [`run_sweep_until`], for callers that run the points
/// elsewhere.
pub fn plan_sweep(
    loader: &dyn ScenarioLoader,
    vary: &[Vary],
    sets: &[String],
) -> Result<SweepPlan, SweepError> {
    if vary.is_empty() {
        return Err(SweepError::BadVary {
            arg: String::new(),
            reason: "nothing to vary".into(),
        });
    }
    for (i, v) in vary.iter().enumerate() {
        if vary[..i].iter().any(|w| w.key == v.key) {
            return Err(SweepError::BadVary {
                arg: v.key.clone(),
                reason: "the key is varied twice".into(),
            });
        }
    }
    let points = cross_product(vary);
    let mut scenarios = Vec::with_capacity(points.len());
    for point in &points {
        let scenario =
            loader
                .load(&point_sets(sets, point))
                .map_err(|message| SweepError::Point {
                    point: describe(point),
                    message,
                })?;
        scenarios.push(scenario);
    }
    Ok(SweepPlan { points, scenarios })
}

/// Runs the sweep: loads every point, then runs them on `workers` threads.
///
/// The progress bar, if any, is drawn by the calling thread only (workers
/// report finished points over a channel), so a caller may hold stderr's
/// lock for the whole call.
pub fn run_sweep(
    loader: &dyn ScenarioLoader,
    runner: &dyn Runner,
    args: &SweepArgs,
) -> Result<Sweep, SweepError> {
    run_sweep_until(loader, runner, args, &AtomicBool::new(false), &|_| {})
}

/// [`run_sweep`], stopping early once `stop` is set (by a SIGINT handler,
/// say): no new point starts, the running ones finish, and the result
/// holds the finished points with [`Sweep::interrupted`] set.
/// `finished` sees each point as soon as it ran, from the worker that ran
/// it (in finishing order, not point order), so a caller can keep it
/// somewhere safe before the sweep ends.
pub fn run_sweep_until(
    loader: &dyn ScenarioLoader,
    runner: &dyn Runner,
    args: &SweepArgs,
    stop: &AtomicBool,
    finished: &(dyn Fn(&SweepPoint) + Sync),
) -> Result<Sweep, SweepError> {
    let SweepPlan { points, scenarios } = plan_sweep(loader, &args.vary, &args.sets)?;
    let workers = match args.workers {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(points.len());
    let bar = match args.progress {
        Progress::Auto if io::stderr().is_terminal() => {
            let bar = indicatif::ProgressBar::new(points.len() as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} points, {elapsed} elapsed, ETA {eta}",
            ) {
                bar.set_style(style);
            }
            Some(bar)
        }
        _ => None,
    };

    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<Result<RunResult, EngineError>>>> =
        Mutex::new(vec![None; points.len()]);
    // Workers only report finished points over a channel; the bar is drawn
    // by the calling thread alone. A worker that drew it would write to
    // stderr, and block for good if the caller holds stderr's lock while
    // it waits for the workers (as a binary that locks stderr once does).
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let (next, failed, slots, scenarios, points) =
            (&next, &failed, &slots, &scenarios, &points);
        for _ in 0..workers {
            let done = done_tx.clone();
            scope.spawn(move || {
                loop {
                    if failed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(scenario) = scenarios.get(i) else {
                        break;
                    };
                    // A sweep writes no fio document: its per-job fio data
                    // would only be held for every point.
                    let outcome = runner.run(scenario).map(|mut r| {
                        r.drop_fio_data();
                        r
                    });
                    match &outcome {
                        Ok(result) => finished(&SweepPoint {
                            values: points[i].clone(),
                            result: result.clone(),
                        }),
                        Err(_) => failed.store(true, Ordering::Relaxed),
                    }
                    if let Ok(mut slots) = slots.lock() {
                        slots[i] = Some(outcome);
                    }
                    // The receiver lives until every worker is done; an
                    // error here could only mean it is gone, and then
                    // nobody is drawing anyway.
                    let _ = done.send(());
                }
            });
        }
        // Only the workers' senders remain: the channel disconnects when
        // the last worker returns, which ends the loop below.
        drop(done_tx);
        if let Some(bar) = &bar {
            bar.tick();
        }
        loop {
            match done_rx.recv_timeout(TICK) {
                Ok(()) => {
                    if let Some(bar) = &bar {
                        bar.inc(1);
                    }
                }
                // Redraw so the elapsed time moves during long points.
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(bar) = &bar {
                        bar.tick();
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }

    let slots = slots
        .into_inner()
        .map_err(|_| SweepError::Io("a worker panicked".into()))?;
    // Report the first failure in point order, so the message does not
    // depend on scheduling.
    let total_points = points.len();
    let mut out = Vec::with_capacity(total_points);
    for (point, slot) in points.into_iter().zip(slots) {
        match slot {
            Some(Ok(result)) => out.push(SweepPoint {
                values: point,
                result,
            }),
            Some(Err(error)) => {
                return Err(SweepError::Run {
                    point: describe(&point),
                    error,
                })
            }
            None => continue,
        }
    }
    Ok(Sweep {
        keys: args.vary.iter().map(|v| v.key.clone()).collect(),
        interrupted: out.len() < total_points,
        points: out,
        total_points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::{import_str, FioArgs};
    use crate::testutil::fake_run;
    use cint_scenario::Work;

    /// Loads a small fio-built scenario and applies `job.<name>.iodepth`
    /// and `duration` the way the scenario parser's `--set` would.
    fn loader(sets: &[String]) -> Result<Scenario, String> {
        let text = "[global]\nioengine=libaio\nrw=randread\nruntime=100ms\n[async]\niodepth=4\n";
        let mut s = import_str(
            text,
            "t.fio",
            &FioArgs::new("optane-p4800x", "xeon-e5-2660v4"),
        )
        .map_err(|e| e.to_string())?
        .scenario;
        for set in sets {
            let (k, v) = set.split_once('=').ok_or("no =")?;
            match k {
                "job.async.iodepth" => {
                    let d: u32 = v
                        .parse()
                        .map_err(|_| format!("<string>: key {k}: bad value '{v}'"))?;
                    if let Work::Io(io) = &mut s.jobs[0].work {
                        io.iodepth = d;
                    }
                }
                "duration" => {
                    s.duration =
                        cint_scenario::units::parse_duration(v).map_err(|e| e.to_string())?
                }
                _ => return Err(format!("<string>: unknown key '{k}'\nmore detail")),
            }
        }
        Ok(s)
    }

    fn vary(s: &str) -> Vary {
        s.parse().expect("valid vary")
    }

    #[test]
    fn cross_product_order_is_first_key_slowest() {
        let pts = cross_product(&[vary("a=1,2"), vary("b=x,y,z")]);
        let flat: Vec<String> = pts.iter().map(|p| describe(p)).collect();
        assert_eq!(
            flat,
            ["a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"]
        );
    }

    #[test]
    fn output_is_identical_whatever_the_worker_count() {
        let mut args = SweepArgs {
            vary: vec![
                vary("job.async.iodepth=1,2,4,8,16"),
                vary("duration=10ms,20ms"),
            ],
            progress: Progress::Never,
            ..SweepArgs::default()
        };
        let mut files = Vec::new();
        for workers in [1, 2, 7] {
            args.workers = workers;
            let sweep = run_sweep(&loader, &fake_run, &args).expect("sweep runs");
            assert_eq!(sweep.points.len(), 10);
            let mut jsonl = Vec::new();
            sweep.write_jsonl(&mut jsonl).expect("write");
            let mut csv = Vec::new();
            sweep.write_csv(&mut csv).expect("write");
            files.push((jsonl, csv));
        }
        assert!(files.windows(2).all(|w| w[0] == w[1]));
        let csv = String::from_utf8(files[0].1.clone()).expect("utf8");
        let lines: Vec<&str> = csv.lines().collect();
        // 10 points x 3 strategies x 1 job, plus the header.
        assert_eq!(lines.len(), 31);
        assert!(lines[0].starts_with("job.async.iodepth,duration,strategy,kind,job,iops,"));
        assert!(lines[1].starts_with("1,10ms,none,none,async,"));
        assert!(lines[30].starts_with("16,20ms,cinterrupts,cinterrupts,async,"));
        // The fake runner's IOPS grow with iodepth: the varied value really reached the run.
        let rows = read_jsonl(std::str::from_utf8(&files[0].0).expect("utf8")).expect("rows");
        assert_eq!(rows.len(), 30);
        assert!(rows[0].iops < rows[29].iops);
        assert_eq!(rows[29].point["job.async.iodepth"], "16");
        // Appended columns: the fake blocks once per interrupt's worth of
        // I/Os, so none (one I/O per interrupt) switches once per I/O.
        assert!(lines[0].ends_with(",job_cpu_util,context_switches_per_io,wakeups_per_io"));
        assert!(
            (rows[0].context_switches_per_io - 1.0).abs() < 0.01,
            "{:?}",
            rows[0]
        );
        // At iodepth 16 adaptive reaps several I/Os per interrupt.
        assert_eq!(
            (rows[27].kind.as_str(), rows[28].kind.as_str()),
            ("none", "adaptive")
        );
        assert!(
            rows[28].wakeups_per_io < rows[27].wakeups_per_io / 2.0,
            "adaptive coalesces"
        );
        // The CSV reads back to the same rows, up to its printed precision.
        let from_csv = read_csv(&csv).expect("csv rows");
        assert_eq!(from_csv.len(), rows.len());
        for (c, j) in from_csv.iter().zip(&rows) {
            assert_eq!(
                (&c.point, &c.strategy, &c.job),
                (&j.point, &j.strategy, &j.job)
            );
            assert_eq!((c.lat_p50_ns, c.lat_p99_ns), (j.lat_p50_ns, j.lat_p99_ns));
            assert!((c.iops - j.iops).abs() < 1e-2 && (c.cpu_util - j.cpu_util).abs() < 1e-5);
            assert!((c.wakeups_per_io - j.wakeups_per_io).abs() < 1e-5);
            assert!((c.context_switches_per_io - j.context_switches_per_io).abs() < 1e-5);
        }
    }

    #[test]
    fn bad_keys_values_and_arguments_are_one_line() {
        let args = |v: &str| SweepArgs {
            vary: vec![vary(v)],
            workers: 2,
            progress: Progress::Never,
            ..SweepArgs::default()
        };
        let e = run_sweep(&loader, &fake_run, &args("job.nope.iodepth=1,2")).expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "sweep point job.nope.iodepth=1: <string>: unknown key 'job.nope.iodepth'"
        );
        let e = run_sweep(&loader, &fake_run, &args("job.async.iodepth=4,deep")).expect_err("bad");
        assert!(e.to_string().contains("job.async.iodepth=deep"));
        for bad in ["iodepth", "=1,2", "a=1,,2", "a b=1", "a=[0,1"] {
            let e = bad.parse::<Vary>().expect_err(bad);
            assert!(!e.to_string().contains('\n'));
        }
        // A list is one value: commas inside brackets do not split.
        let lists = "job.a.cpus=[0,1], [2,3],4".parse::<Vary>().expect("lists");
        assert_eq!(lists.values, ["[0,1]", "[2,3]", "4"]);
        let twice = SweepArgs {
            vary: vec![vary("a=1"), vary("a=2")],
            ..SweepArgs::default()
        };
        assert!(run_sweep(&loader, &fake_run, &twice).is_err());
    }

    #[test]
    fn an_engine_failure_names_the_first_failing_point() {
        let failing = |s: &Scenario| -> Result<RunResult, EngineError> {
            match &s.jobs[0].work {
                Work::Io(io) if io.iodepth >= 8 => Err(EngineError::internal(format!(
                    "depth {} too deep",
                    io.iodepth
                ))),
                _ => fake_run(s),
            }
        };
        let args = SweepArgs {
            vary: vec![vary("job.async.iodepth=1,8,16,2")],
            workers: 3,
            progress: Progress::Never,
            ..SweepArgs::default()
        };
        let e = run_sweep(&loader, &failing, &args).expect_err("fails");
        assert_eq!(
            e.to_string(),
            "sweep point job.async.iodepth=8: run failed: depth 8 too deep"
        );
        assert_eq!(e.kind(), ErrorKind::Internal, "the engine's kind is kept");
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    #[test]
    fn csv_reading_undoes_quoting_and_refuses_other_tables() {
        let fields = csv_fields("\"a,b\",\"say \"\"hi\"\"\",plain").expect("fields");
        assert_eq!(fields, ["a,b", "say \"hi\"", "plain"]);
        assert!(csv_fields("\"open").is_err());
        assert!(read_csv("x,y\n1,2\n")
            .expect_err("not a sweep")
            .contains("not a sweep header"));
        let header = format!("k,{}", CSV_COLUMNS.join(","));
        let e =
            read_csv(&format!("{header}\n1,none,none,j,fast,1,1,1,1,1,1,1,1\n")).expect_err("bad");
        assert_eq!(
            e,
            "line 2: iops: 'fast' is not a number (finite, at least 0)"
        );
        for bad in ["NaN", "inf", "-1"] {
            let e = read_csv(&format!("{header}\n1,none,none,j,1,1,1,1,{bad},1,1,1,1\n"))
                .expect_err(bad);
            assert!(e.starts_with("line 2: interrupts_per_s: "), "{e}");
        }
        let row = r#"{"point":{"k":"1"},"strategy":"s","kind":"none","job":"j","iops":-5.0,"lat_mean_ns":1.0,"lat_p50_ns":1,"lat_p99_ns":1,"interrupts_per_s":1.0,"cpu_util":0.5,"job_cpu_util":0.5}"#;
        assert_eq!(
            read_jsonl(row).expect_err("negative"),
            "line 1: iops: -5 is negative"
        );
        assert!(read_csv(&format!("{header}\n")).is_err(), "no rows");
        // Files written before the per-I/O columns were appended still read.
        let v1 = format!("k,{}", CSV_COLUMNS[..CSV_COLUMNS_V1].join(","));
        let rows = read_csv(&format!("{v1}\n1,none,none,j,5,1,1,1,1,1,1\n")).expect("v1 file");
        assert_eq!((rows[0].iops, rows[0].wakeups_per_io), (5.0, 0.0));
        assert_eq!(rows[0].point["k"], "1");
        let old_line = r#"{"point":{"k":"1"},"strategy":"s","kind":"none","job":"j","iops":5.0,"lat_mean_ns":1.0,"lat_p50_ns":1,"lat_p99_ns":1,"interrupts_per_s":1.0,"cpu_util":0.5,"job_cpu_util":0.5}"#;
        assert_eq!(
            read_jsonl(old_line).expect("v1 line")[0].context_switches_per_io,
            0.0
        );
    }

    /// A job without a latency sample (it ended within its warm-up, as
    /// fio reports such a job) has none in either format: empty CSV
    /// fields and JSON nulls, never a latency of 0 beside its rate.
    #[test]
    fn a_job_without_latency_samples_has_none_in_either_format() {
        let args = SweepArgs {
            vary: vec![vary("duration=10ms,20ms")],
            progress: Progress::Never,
            ..SweepArgs::default()
        };
        // The fake's jobs at 20 ms took no sample.
        let ramped = |s: &Scenario| -> Result<RunResult, EngineError> {
            let mut r = fake_run(s)?;
            if s.duration > 10_000_000 {
                for j in r.results.iter_mut().flat_map(|x| x.jobs.iter_mut()) {
                    j.lat_ns = cint_report::LatencyStats::empty();
                }
            }
            Ok(r)
        };
        let out = run_sweep(&loader, &ramped, &args).expect("sweep");
        let mut csv = Vec::new();
        out.write_csv(&mut csv).expect("csv");
        let csv = String::from_utf8(csv).expect("utf8");
        let from_csv = read_csv(&csv).expect("reads back");
        let rows = out.rows();
        for (c, r) in from_csv.iter().zip(&rows) {
            let sampled = r.point["duration"] == "10ms";
            assert_eq!(r.lat_mean_ns.is_some(), sampled, "{r:?}");
            assert_eq!(
                (r.lat_p50_ns.is_some(), r.lat_p99_ns.is_some()),
                (sampled, sampled)
            );
            assert_eq!((c.lat_p50_ns, c.lat_p99_ns), (r.lat_p50_ns, r.lat_p99_ns));
            assert_eq!(c.lat_mean_ns.is_some(), sampled);
            assert!(r.iops > 0.0);
        }
        assert!(
            csv.lines()
                .any(|l| l.starts_with("20ms,") && l.contains(",,,")),
            "{csv}"
        );
        let line = serde_json::to_string(&rows[rows.len() - 1]).expect("json");
        assert!(line.contains("\"lat_mean_ns\":null"), "{line}");
        assert_eq!(read_jsonl(&line).expect("reads back")[0].lat_p99_ns, None);
    }

    #[test]
    fn energy_figures_travel_through_both_formats_only_when_present() {
        let args = SweepArgs {
            vary: vec![vary("duration=10ms")],
            progress: Progress::Never,
            ..SweepArgs::default()
        };
        let mut sweep = run_sweep(&loader, &fake_run, &args).expect("sweep runs");
        let mut plain = Vec::new();
        sweep.write_csv(&mut plain).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        assert!(!plain.contains("bytes_per_joule"), "{plain}");
        let mut jsonl = Vec::new();
        sweep.write_jsonl(&mut jsonl).unwrap();
        assert!(!String::from_utf8(jsonl).unwrap().contains("energy"));
        for s in &mut sweep.points[0].result.results {
            s.energy_j = Some(2.0);
            s.energy = Some(cint_report::EnergyResult {
                source: "model".into(),
                governor: "menu".into(),
                power_w: 50.0,
                bytes_per_joule: 1.5e6,
                base_j: 1.0,
                uncore_j: 0.5,
                device_j: 0.25,
                cores: Vec::new(),
                measured_package_j: None,
            });
        }
        let mut csv = Vec::new();
        sweep.write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with(",energy_j,power_w,bytes_per_joule"));
        let rows = read_csv(&csv).expect("reads back");
        let want = SweepEnergy {
            energy_j: 2.0,
            power_w: 50.0,
            bytes_per_joule: 1.5e6,
        };
        assert!(rows.iter().all(|r| r.energy == Some(want)), "{rows:?}");
        let mut jsonl = Vec::new();
        sweep.write_jsonl(&mut jsonl).unwrap();
        let rows = read_jsonl(&String::from_utf8(jsonl).unwrap()).expect("reads back");
        assert!(rows.iter().all(|r| r.energy == Some(want)));
        let bad = csv.replacen(",1500000.000", ",-1", 1);
        assert!(read_csv(&bad)
            .expect_err("negative")
            .contains("bytes_per_joule: '-1' is not a number"));
    }
}
