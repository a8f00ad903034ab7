//! fio's JSON output (`--output-format=json+`, as fio 3.33 writes it),
//! one document per strategy, so that fio's own post-processing tools
//! (`fio_jsonplus_clat2csv`, fio-plot, ...) read our runs unchanged.
//!
//! Each entry of `jobs` is one scenario job with all its `numjobs`
//! threads together, as fio prints a job under `group_reporting`. Every
//! number comes from the engine's measurements ([`crate::FioJobData`]);
//! fields the model does not produce are left out (`eta`, `elapsed`,
//! `majf`, `minf`, `iodepth_*`, `disk_util`) rather than invented. Those
//! written as zero are the ones fio itself prints as zero in the same
//! case: a direction the job does not use (`trim`, and `sync` for a job
//! without `fsync` or `fdatasync`), `error`, `short_ios` and `drop_ios` (the model
//! has no errors and no short or dropped I/O), and the per-interval
//! bandwidth and IOPS samples (`bw_*`, `iops_*` with `*_samples` 0: the
//! model takes no periodic samples, as fio takes none in a run shorter
//! than its averaging interval). docs/SCENARIO.md lists each field's
//! source.
//!
//! Percentiles and json+ `bins` are written for `slat_ns`, `clat_ns` and
//! `lat_ns` alike whenever the direction has samples, as fio does with
//! `clat_percentiles`, `lat_percentiles` and `slat_percentiles` all set.

use core::fmt;

use serde_json::{json, Map, Value};

use crate::fio_hist::{FioLatency, CLASS_NAMES, LATENCY_CLASSES};
use crate::{FioDirection, FioJobData, FioSteadyState, RunResult};

/// fio's default `percentile_list` (the option's default in fio's
/// options.c): 17 percentiles.
pub const FIO_DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// What fio's document says about the run beside the measurements: when,
/// and the options (as `name = value` text, in the order to print them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioRunInfo {
    /// When the run was made, milliseconds since the Unix epoch
    /// (`timestamp`, `timestamp_ms`, `time`).
    pub timestamp_ms: u64,
    /// Options common to every job (fio's `global options`); left out
    /// when empty, as fio does.
    pub global_options: Vec<(String, String)>,
    /// One entry per job of the result, in the same order.
    pub jobs: Vec<FioJobOptions>,
}

/// One job's options, for `job options`, `groupid` and percentiles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioJobOptions {
    /// fio option names and values, printed in this order.
    pub options: Vec<(String, String)>,
    /// fio's `groupid`: the job's reporting group.
    pub groupid: u32,
    /// The job's `percentile_list`; `None`: fio's default
    /// ([`FIO_DEFAULT_PERCENTILES`]).
    pub percentile_list: Option<Vec<f64>>,
}

/// Why a strategy's fio document cannot be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FioJsonError {
    /// The engine did not measure what fio reports for this job.
    NotMeasured {
        /// Strategy name.
        strategy: String,
        /// Job name.
        job: String,
    },
    /// [`FioRunInfo::jobs`] does not match the result's jobs.
    JobsMismatch {
        /// Jobs in the result.
        result: usize,
        /// Jobs described.
        described: usize,
    },
    /// A measurement is not a finite number (an engine bug).
    NonFinite {
        /// Where, e.g. `jobs[0].read.clat_ns.mean`.
        field: String,
    },
    /// No strategy at this index.
    NoSuchStrategy(usize),
}

impl fmt::Display for FioJsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FioJsonError::NotMeasured { strategy, job } => write!(
                f,
                "strategy '{strategy}', job '{job}': this engine does not measure what fio's \
                 JSON reports (per-direction latency histograms, user and system CPU)"
            ),
            FioJsonError::JobsMismatch { result, described } => write!(
                f,
                "the result has {result} jobs but {described} were described for fio's output"
            ),
            FioJsonError::NonFinite { field } => {
                write!(f, "fio output field {field} is not a finite number")
            }
            FioJsonError::NoSuchStrategy(i) => write!(f, "no strategy number {i} in the result"),
        }
    }
}

impl std::error::Error for FioJsonError {}

/// Strategy number `strategy` of `r` as one fio json+ document,
/// pretty-printed, ending in a newline.
pub fn to_fio_json(
    r: &RunResult,
    strategy: usize,
    info: &FioRunInfo,
) -> Result<String, FioJsonError> {
    let s = r
        .results
        .get(strategy)
        .ok_or(FioJsonError::NoSuchStrategy(strategy))?;
    if info.jobs.len() != s.jobs.len() {
        return Err(FioJsonError::JobsMismatch {
            result: s.jobs.len(),
            described: info.jobs.len(),
        });
    }
    let mut jobs = Vec::with_capacity(s.jobs.len());
    for (j, (job, opts)) in s.jobs.iter().zip(&info.jobs).enumerate() {
        let data = job.fio.as_ref().ok_or_else(|| FioJsonError::NotMeasured {
            strategy: s.strategy.clone(),
            job: job.name.clone(),
        })?;
        let percentiles = opts
            .percentile_list
            .as_deref()
            .unwrap_or(&FIO_DEFAULT_PERCENTILES);
        let value = job_object(&job.name, job.context_switches, data, opts, percentiles);
        check_finite(&value, &format!("jobs[{j}]"))?;
        jobs.push(value);
    }
    let mut root = Map::new();
    root.insert(
        "fio version".into(),
        json!(format!("cint-{}", r.cint_version)),
    );
    root.insert("timestamp".into(), json!(info.timestamp_ms / 1000));
    root.insert("timestamp_ms".into(), json!(info.timestamp_ms));
    root.insert("time".into(), json!(ctime_utc(info.timestamp_ms / 1000)));
    if !info.global_options.is_empty() {
        root.insert(
            "global options".into(),
            options_object(&info.global_options),
        );
    }
    root.insert("jobs".into(), Value::Array(jobs));
    // Serializing a tree of strings, integers and finite floats cannot fail.
    let mut text = serde_json::to_string_pretty(&Value::Object(root)).map_err(|e| {
        FioJsonError::NonFinite {
            field: e.to_string(),
        }
    })?;
    text.push('\n');
    Ok(text)
}

fn options_object(options: &[(String, String)]) -> Value {
    Value::Object(
        options
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn job_object(
    name: &str,
    ctx: u64,
    d: &FioJobData,
    opts: &FioJobOptions,
    percentiles: &[f64],
) -> Value {
    let mut o = Map::new();
    o.insert("jobname".into(), json!(name));
    o.insert("groupid".into(), json!(opts.groupid));
    o.insert("error".into(), json!(d.error));
    if !opts.options.is_empty() {
        o.insert("job options".into(), options_object(&opts.options));
    }
    o.insert("read".into(), direction(&d.read, d.runtime_ns, percentiles));
    o.insert(
        "write".into(),
        direction(&d.write, d.runtime_ns, percentiles),
    );
    o.insert(
        "trim".into(),
        direction(&FioDirection::default(), d.runtime_ns, percentiles),
    );
    o.insert(
        "sync".into(),
        json!({ "total_ios": d.sync.fsync_ios, "lat_ns": latency(&d.sync.lat, percentiles) }),
    );
    // fio sums the run time of a job's threads under group_reporting and
    // divides their summed CPU times by it: the percentages are per
    // thread, so a thread that ran all the time shows 100.
    let threads = u64::from(d.threads.max(1));
    let total_ns = d.runtime_ns * threads;
    let pct = |ns: u64| {
        if total_ns == 0 {
            0.0
        } else {
            ns as f64 * 100.0 / total_ns as f64
        }
    };
    o.insert("job_runtime".into(), json!(total_ns / 1_000_000));
    o.insert("usr_cpu".into(), json!(pct(d.usr_ns)));
    o.insert("sys_cpu".into(), json!(pct(d.sys_ns)));
    o.insert("ctx".into(), json!(ctx));
    // fio's distribution of completion latencies over all directions, in
    // percent of the job's I/Os (stat_calc_lat).
    let total_ios = d.read.ios + d.write.ios;
    let mut classes = [0u64; LATENCY_CLASSES];
    for dir in [&d.read, &d.write] {
        for (c, n) in classes.iter_mut().zip(&dir.clat.classes) {
            *c += n;
        }
    }
    let share = |n: u64| {
        if total_ios == 0 {
            0.0
        } else {
            100.0 * n as f64 / total_ios as f64
        }
    };
    let unit = |range: &[u64], extra: &[&str]| {
        let names = CLASS_NAMES.iter().chain(extra);
        Value::Object(
            names
                .zip(range)
                .map(|(k, &n)| (k.to_string(), json!(share(n))))
                .collect(),
        )
    };
    o.insert("latency_ns".into(), unit(&classes[0..10], &[]));
    o.insert("latency_us".into(), unit(&classes[10..20], &[]));
    o.insert(
        "latency_ms".into(),
        unit(&classes[20..32], &["2000", ">=2000"]),
    );
    if let Some(ss) = &d.steadystate {
        o.insert("steadystate".into(), steadystate(ss));
    }
    Value::Object(o)
}

/// fio's `steadystate` object, its means over the whole window as fio
/// takes them (`steadystate_bw_mean`: the sum over `duration` entries,
/// zeros included, divided by it).
fn steadystate(ss: &FioSteadyState) -> Value {
    let mean = |v: &[u64]| v.iter().sum::<u64>() / ss.duration.max(1);
    json!({
        "ss": ss.ss,
        "duration": ss.duration,
        "attained": u8::from(ss.attained),
        "criterion": ss.criterion,
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": {
            "bw_mean": mean(&ss.bw),
            "iops_mean": mean(&ss.iops),
            "iops": ss.iops,
            "bw": ss.bw,
        },
    })
}

/// fio's per-direction object (add_ddir_status_json).
fn direction(d: &FioDirection, runtime_ns: u64, percentiles: &[f64]) -> Value {
    // fio divides by the direction's run time in milliseconds; ours is
    // known to the nanosecond, so the rates are exact, and `runtime`
    // prints it in fio's unit. A direction without I/O ran for no time.
    let runtime_ns = if d.ios == 0 { 0 } else { runtime_ns };
    let (bw_bytes, iops) = if runtime_ns == 0 {
        (0, 0.0)
    } else {
        let secs = runtime_ns as f64 / 1e9;
        ((d.bytes as f64 / secs) as u64, d.ios as f64 / secs)
    };
    let mut o = Map::new();
    o.insert("io_bytes".into(), json!(d.bytes));
    o.insert("io_kbytes".into(), json!(d.bytes >> 10));
    o.insert("bw_bytes".into(), json!(bw_bytes));
    o.insert("bw".into(), json!(bw_bytes / 1024));
    o.insert("iops".into(), json!(iops));
    o.insert("runtime".into(), json!(runtime_ns / 1_000_000));
    o.insert("total_ios".into(), json!(d.ios));
    o.insert("short_ios".into(), json!(0));
    o.insert("drop_ios".into(), json!(0));
    o.insert("slat_ns".into(), latency(&d.slat, percentiles));
    o.insert("clat_ns".into(), latency(&d.clat, percentiles));
    o.insert("lat_ns".into(), latency(&d.lat, percentiles));
    for key in ["bw_min", "bw_max"] {
        o.insert(key.into(), json!(0));
    }
    for key in ["bw_agg", "bw_mean", "bw_dev"] {
        o.insert(key.into(), json!(0.0));
    }
    o.insert("bw_samples".into(), json!(0));
    for key in ["iops_min", "iops_max"] {
        o.insert(key.into(), json!(0));
    }
    for key in ["iops_mean", "iops_stddev"] {
        o.insert(key.into(), json!(0.0));
    }
    o.insert("iops_samples".into(), json!(0));
    Value::Object(o)
}

/// fio's latency object (add_ddir_lat_json) with json+ bins.
fn latency(l: &FioLatency, percentiles: &[f64]) -> Value {
    let mut o = Map::new();
    o.insert("min".into(), json!(l.min));
    o.insert("max".into(), json!(l.max));
    o.insert("mean".into(), json!(l.mean));
    o.insert("stddev".into(), json!(l.stddev));
    o.insert("N".into(), json!(l.n));
    if l.n > 0 && !percentiles.is_empty() {
        let pct: Map<String, Value> = l
            .percentiles(percentiles)
            .into_iter()
            .map(|(p, v)| (format!("{p:.6}"), json!(v)))
            .collect();
        o.insert("percentile".into(), Value::Object(pct));
        let bins: Map<String, Value> = l
            .bins_by_value()
            .into_iter()
            .map(|(v, c)| (v.to_string(), json!(c)))
            .collect();
        o.insert("bins".into(), Value::Object(bins));
    }
    Value::Object(o)
}

fn check_finite(v: &Value, at: &str) -> Result<(), FioJsonError> {
    match v {
        Value::Number(n) if n.as_f64().is_some_and(|f| !f.is_finite()) => {
            Err(FioJsonError::NonFinite { field: at.into() })
        }
        // serde_json turns a non-finite f64 into null.
        Value::Null => Err(FioJsonError::NonFinite { field: at.into() }),
        Value::Object(m) => m
            .iter()
            .try_for_each(|(k, v)| check_finite(v, &format!("{at}.{k}"))),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_finite(v, &format!("{at}[{i}]"))),
        _ => Ok(()),
    }
}

/// `ctime`'s layout without its newline, in UTC: `Tue Nov 24 09:08:26 2026`.
fn ctime_utc(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        y
    )
}

/// Year, month (1..=12), day of the proleptic Gregorian calendar for a
/// count of days since 1970-01-01 (H. Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    fn info(jobs: usize) -> FioRunInfo {
        FioRunInfo {
            timestamp_ms: 1_795_511_306_123,
            global_options: vec![("runtime".into(), "200ms".into())],
            jobs: (0..jobs)
                .map(|_| FioJobOptions {
                    options: vec![
                        ("rw".into(), "randrw".into()),
                        ("iodepth".into(), "4".into()),
                    ],
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn doc(text: &str) -> Value {
        serde_json::from_str(text).expect("valid JSON")
    }

    #[test]
    fn a_steady_state_is_fios_object_with_its_window_padded_and_its_means() {
        let mut r = sample();
        let fio = r.results[0].jobs[0].fio.as_mut().unwrap();
        // fio 3.33's object for `ss=iops:50% ss_dur=3` two samples in.
        fio.steadystate = Some(FioSteadyState {
            ss: "iops:50.000000%".into(),
            duration: 3,
            attained: false,
            criterion: "0.000000%".into(),
            max_deviation: 0.0,
            slope: 0.0,
            iops: vec![300, 600, 0],
            bw: vec![1_228_800, 2_457_600, 0],
        });
        let d = doc(&to_fio_json(&r, 0, &info(2)).unwrap());
        let ss = &d["jobs"][0]["steadystate"];
        assert_eq!(ss["ss"], "iops:50.000000%");
        assert_eq!(
            (ss["duration"].as_u64(), ss["attained"].as_u64()),
            (Some(3), Some(0))
        );
        // fio's means divide by the window's length, zeros included.
        assert_eq!(ss["data"]["iops_mean"], 300);
        assert_eq!(ss["data"]["bw_mean"], 1_228_800);
        assert_eq!(ss["data"]["iops"].as_array().map(Vec::len), Some(3));
        assert!(
            d["jobs"][1].get("steadystate").is_none(),
            "only a job with ss"
        );
    }

    #[test]
    fn time_prints_like_ctime() {
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime_utc(1_795_511_306), "Tue Nov 24 09:08:26 2026");
        assert_eq!(ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
    }

    #[test]
    fn the_document_has_fios_shape() {
        let r = sample();
        let text = to_fio_json(&r, 0, &info(2)).unwrap();
        let d = doc(&text);
        let top: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            top,
            [
                "fio version",
                "timestamp",
                "timestamp_ms",
                "time",
                "global options",
                "jobs"
            ]
        );
        assert_eq!(d["timestamp"], json!(1_795_511_306u64));
        let job = &d["jobs"][0];
        assert_eq!(job["jobname"], "async");
        assert_eq!(job["job options"]["rw"], "randrw");
        for dir in ["read", "write", "trim"] {
            for lat in ["slat_ns", "clat_ns", "lat_ns"] {
                assert!(job[dir][lat]["N"].is_u64(), "{dir}.{lat}");
            }
            assert!(job[dir]["iops_stddev"].is_f64());
        }
        // The sample's async job: reads of 10, 20, 30 us, one write of 40.
        assert_eq!(job["read"]["total_ios"], 3);
        assert_eq!(job["write"]["total_ios"], 1);
        assert_eq!(job["read"]["clat_ns"]["N"], 3);
        let bins = job["read"]["clat_ns"]["bins"].as_object().unwrap();
        assert_eq!(bins.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), 3);
        let pct = job["read"]["clat_ns"]["percentile"].as_object().unwrap();
        assert_eq!(pct.len(), 17);
        assert!(pct.contains_key("99.990000") && pct.contains_key("1.000000"));
        assert!(
            job["trim"]["clat_ns"].get("bins").is_none(),
            "no samples, no bins"
        );
        // The latency distribution covers every I/O once.
        let sum: f64 = ["latency_ns", "latency_us", "latency_ms"]
            .iter()
            .flat_map(|u| job[*u].as_object().unwrap().values())
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
        assert_eq!(job["latency_us"]["20"], json!(25.0), "10 us: 10..19 us");
        assert_eq!(
            job["latency_us"]["50"],
            json!(75.0),
            "20, 30, 40 us: 20..49 us"
        );
        assert_eq!(job["ctx"], 1_000);
        assert_eq!(job["usr_cpu"], json!(10.0));
        assert_eq!(job["sys_cpu"], json!(40.0));
    }

    #[test]
    fn fsync_calls_fill_the_sync_section() {
        let mut r = sample();
        assert_eq!(
            doc(&to_fio_json(&r, 0, &info(2)).unwrap())["jobs"][0]["sync"]["total_ios"],
            0,
            "no calls, no samples"
        );
        let mut h = crate::FioHistogram::new();
        for ns in [20_000, 30_000] {
            h.record(ns);
        }
        let fio = r.results[0].jobs[0].fio.as_mut().unwrap();
        // One fsync and one fdatasync: fio 3.33 counts the fsync alone in
        // total_ios and both in the latencies.
        fio.sync = crate::FioSync {
            ios: 2,
            fsync_ios: 1,
            lat: h.summary(),
        };
        let d = doc(&to_fio_json(&r, 0, &info(2)).unwrap());
        let sync = &d["jobs"][0]["sync"];
        assert_eq!(sync["total_ios"], 1);
        assert_eq!(sync["lat_ns"]["N"], 2);
        assert_eq!(sync["lat_ns"]["mean"], json!(25_000.0));
    }

    #[test]
    fn a_job_percentile_list_replaces_the_default() {
        let r = sample();
        let mut i = info(2);
        i.jobs[0].percentile_list = Some(vec![99.0, 50.0]);
        let d = doc(&to_fio_json(&r, 0, &i).unwrap());
        let keys: Vec<&str> = d["jobs"][0]["read"]["clat_ns"]["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["50.000000", "99.000000"]);
    }

    #[test]
    fn missing_measurements_are_refused_not_invented() {
        let mut r = sample();
        r.results[1].jobs[1].fio = None;
        let e = to_fio_json(&r, 1, &info(2)).unwrap_err();
        assert!(e.to_string().contains("job 'sync'"), "{e}");
        assert!(matches!(
            to_fio_json(&r, 0, &info(1)),
            Err(FioJsonError::JobsMismatch { .. })
        ));
        let mut r = sample();
        r.results[0].jobs[0].fio.as_mut().unwrap().read.clat.mean = f64::NAN;
        let e = to_fio_json(&r, 0, &info(2)).unwrap_err();
        assert_eq!(
            e,
            FioJsonError::NonFinite {
                field: "jobs[0].read.clat_ns.mean".into()
            }
        );
    }
}
