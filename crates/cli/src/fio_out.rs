//! `--fio-json DIR`: one fio json+ document per strategy, named after it,
//! for fio's own post-processing tools. The documents' options are the
//! scenario's, spelled as fio spells them.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use cint_policy::Nanos;
use cint_report::{FioJobOptions, FioRunInfo, RunResult};
use cint_scenario::{Engine, Job, Rw, Scenario, Work};

use crate::{internal, output, usage, Failure};

/// Writes `DIR/<strategy>.json` for every strategy of `result`; returns
/// the files written.
pub(crate) fn write_all(
    dir: &Path,
    scenario: &Scenario,
    result: &RunResult,
) -> Result<Vec<PathBuf>, Failure> {
    let info = run_info(scenario, timestamp_ms());
    let mut written = Vec::with_capacity(result.results.len());
    for (i, s) in result.results.iter().enumerate() {
        let text = fio_json_with(result, i, &info)?;
        let path = dir.join(format!("{}.json", file_stem(&s.strategy)));
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| output::write_error(&path, e))?;
        written.push(path);
    }
    Ok(written)
}

/// fio's json+ document of strategy `index` of `result`, as `--fio-json`
/// writes it.
pub fn fio_json(scenario: &Scenario, result: &RunResult, index: usize) -> Result<String, Failure> {
    fio_json_with(result, index, &run_info(scenario, timestamp_ms()))
}

fn fio_json_with(result: &RunResult, index: usize, info: &FioRunInfo) -> Result<String, Failure> {
    cint_report::to_fio_json(result, index, info)
        .map_err(|e| internal(format!("cint: --fio-json: {e}")))
}

/// Refuses, before anything runs, strategies whose file names would
/// collide (`a b` and `a_b` both write `a_b.json`), and applications.
pub(crate) fn check_names(scenario: &Scenario) -> Result<(), Failure> {
    // An application's operations are no fio job: fio's format has no
    // place for them, so the run is refused rather than half written.
    if let Some(app) = scenario.apps.programs.first() {
        return Err(usage(format!(
            "cint: --fio-json: app '{}' is an application program, whose operations fio's \
             json+ cannot describe; use --json",
            app.name
        )));
    }
    let mut seen: Vec<(String, &str)> = Vec::with_capacity(scenario.strategies.len());
    for s in &scenario.strategies {
        let stem = file_stem(&s.name);
        if let Some((_, first)) = seen.iter().find(|(f, _)| *f == stem) {
            return Err(usage(format!(
                "cint: --fio-json: strategies '{first}' and '{}' would both be written to \
                 {stem}.json; rename one",
                s.name
            )));
        }
        seen.push((stem, &s.name));
    }
    Ok(())
}

/// When the run was made: `SOURCE_DATE_EPOCH` (seconds) if set, so that
/// reruns can give identical bytes, else the clock.
fn timestamp_ms() -> u64 {
    if let Some(secs) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return secs.saturating_mul(1000);
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A strategy name as a file name: anything but letters, digits, `.`, `-`
/// and `_` becomes `_`.
fn file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.starts_with('.') || stem.is_empty() {
        format!("_{stem}")
    } else {
        stem
    }
}

/// The scenario in fio's words: `runtime` and `ramp_time` common to all
/// jobs, each job's own options.
pub(crate) fn run_info(sc: &Scenario, timestamp_ms: u64) -> FioRunInfo {
    let mut global = vec![("runtime".to_string(), duration(sc.duration))];
    if sc.warmup > 0 {
        global.push(("ramp_time".into(), duration(sc.warmup)));
    }
    FioRunInfo {
        timestamp_ms,
        global_options: global,
        jobs: sc.jobs.iter().map(job_options).collect(),
    }
}

fn job_options(job: &Job) -> FioJobOptions {
    let mut o: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| o.push((k.to_string(), v));
    match &job.work {
        Work::Io(io) => {
            let rw = match io.rw {
                Rw::Read => "read",
                Rw::Write => "write",
                Rw::RandRead => "randread",
                Rw::RandWrite => "randwrite",
                Rw::RandRw => "randrw",
                Rw::ReadWrite => "readwrite",
            };
            let engine = match io.engine {
                Engine::Psync => "psync",
                Engine::Pvsync2 => "pvsync2",
                Engine::Libaio => "libaio",
                Engine::IoUring => "io_uring",
            };
            put("ioengine", engine.into());
            put("rw", rw.into());
            if matches!(io.rw, Rw::RandRw | Rw::ReadWrite) {
                put("rwmixread", io.rwmixread.to_string());
            }
            put("bs", size(io.bs));
            // A split or a range takes the place of `bs` in fio too.
            let split = |shares: &[cint_scenario::BsShare]| -> String {
                let parts: Vec<String> = shares
                    .iter()
                    .map(|s| format!("{}/{}", size(s.bytes), s.percent))
                    .collect();
                parts.join(":")
            };
            if !io.shape.bssplit.is_empty() {
                let mut text = split(&io.shape.bssplit);
                if !io.shape.bssplit_write.is_empty() {
                    text = format!("{text},{}", split(&io.shape.bssplit_write));
                }
                put("bssplit", text);
            }
            if let Some((lo, hi)) = io.shape.bsrange {
                let mut text = format!("{}-{}", size(lo), size(hi));
                if let Some((wlo, whi)) = io.shape.bsrange_write {
                    text = format!("{text},{}-{}", size(wlo), size(whi));
                }
                put("bsrange", text);
            }
            put("iodepth", io.iodepth.to_string());
            if !io.engine.is_sync() {
                put("iodepth_batch_submit", io.batch.to_string());
                put(
                    "iodepth_batch_complete_min",
                    io.batch_complete_min.to_string(),
                );
                if io.iodepth_low < io.iodepth {
                    put("iodepth_low", io.iodepth_low.to_string());
                }
            }
            if let Some(m) = io.shape.max_latency {
                put("max_latency", m.to_string());
            }
            put("direct", u8::from(io.direct).to_string());
            put("size", size(io.size));
            if let Some(r) = io.rate_iops {
                put("rate_iops", r.to_string());
            }
            if let Some(r) = io.shape.rate {
                put("rate", size(r));
            }
            if let Some(caps) = io.shape.rate_per_direction {
                let (key, side): (&str, &dyn Fn(u64) -> String) = match caps.unit {
                    cint_scenario::RateUnit::Iops => ("rate_iops", &|c: u64| c.to_string()),
                    cint_scenario::RateUnit::Bytes => ("rate", &size),
                };
                let side = |c: Option<u64>| c.map(side).unwrap_or_default();
                put(key, format!("{},{}", side(caps.read), side(caps.write)));
            }
        }
        Work::Cpu => {
            put("ioengine", "cpuio".into());
            put("cpuload", "100".into());
        }
    }
    put("numjobs", job.numjobs.to_string());
    if job.cpus.is_empty() {
        put("cpus_allowed", job.cpu.to_string());
    } else {
        let list: Vec<String> = job.cpus.iter().map(u32::to_string).collect();
        put("cpus_allowed", list.join(","));
        put("cpus_allowed_policy", "split".into());
    }
    if let Some(r) = job.runtime {
        put("runtime", duration(r));
    }
    let percentile_list = match &job.work {
        Work::Io(io) if !io.shape.percentile_list.is_empty() => {
            Some(io.shape.percentile_list.clone())
        }
        _ => None,
    };
    FioJobOptions {
        options: o,
        // fio numbers reporting groups from 0, one per stonewall, as the
        // scenario's `group` does.
        groupid: job.schedule.group,
        percentile_list,
    }
}

/// Bytes as fio writes sizes (base 1024): `4k`, `1m`, or plain bytes.
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "t"),
        (1 << 30, "g"),
        (1 << 20, "m"),
        (1 << 10, "k"),
    ];
    UNITS
        .iter()
        .find(|(u, _)| bytes >= *u && bytes % u == 0)
        .map_or_else(|| bytes.to_string(), |(u, s)| format!("{}{s}", bytes / u))
}

/// A duration in the largest of fio's time units that keeps it exact.
fn duration(ns: Nanos) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    UNITS
        .iter()
        .find(|(u, _)| ns % u == 0)
        .map_or_else(|| format!("{ns}ns"), |(u, s)| format!("{}{s}", ns / u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_durations_and_names_read_as_fio_writes_them() {
        assert_eq!(size(4096), "4k");
        assert_eq!(size(1 << 20), "1m");
        assert_eq!(size(1536), "1536");
        assert_eq!(duration(2_000_000_000), "2s");
        assert_eq!(duration(200_000_000), "200ms");
        assert_eq!(duration(1_500), "1500ns");
        assert_eq!(file_stem("cint d=15us/thr 32"), "cint_d_15us_thr_32");
        assert_eq!(file_stem(".."), "_..");
    }

    #[test]
    fn a_scenario_gives_fio_options() {
        let text = "name = \"t\"\nduration = \"20ms\"\nwarmup = \"5ms\"\n\
                    [[strategy]]\nname = \"n\"\nkind = \"none\"\n\
                    [[job]]\nname = \"a\"\nengine = \"libaio\"\nrw = \"randrw\"\niodepth = 8\n";
        let sc = cint_scenario::load_str(text, "t.toml", &[]).expect("valid");
        let info = run_info(&sc, 7);
        assert_eq!(
            info.global_options,
            [
                ("runtime".to_string(), "20ms".to_string()),
                ("ramp_time".into(), "5ms".into())
            ]
        );
        let opts: std::collections::BTreeMap<_, _> = info.jobs[0].options.iter().cloned().collect();
        assert_eq!(opts["ioengine"], "libaio");
        assert_eq!(opts["rw"], "randrw");
        assert_eq!(opts["iodepth"], "8");
        assert_eq!(opts["numjobs"], "1");
        assert!(opts.contains_key("bs") && opts.contains_key("rwmixread"));
        assert!(!opts.contains_key("bssplit") && !opts.contains_key("bsrange"));
    }

    #[test]
    fn a_split_or_a_range_is_given_as_fio_spells_it() {
        let base = "name = \"t\"\nduration = \"20ms\"\n\
                    [[strategy]]\nname = \"n\"\nkind = \"none\"\n\
                    [[job]]\nname = \"a\"\nrw = \"randrw\"\n";
        let option = |extra: &str, key: &str| {
            let sc =
                cint_scenario::load_str(&format!("{base}{extra}"), "t.toml", &[]).expect("valid");
            let info = run_info(&sc, 7);
            let found = info.jobs[0].options.iter().find(|(k, _)| k == key).cloned();
            found.map(|(_, v)| v)
        };
        assert_eq!(
            option("bssplit = \"4k/60:16k/30:64k/10,1m\"\n", "bssplit").as_deref(),
            Some("4k/60:16k/30:64k/10,1m/100")
        );
        assert_eq!(
            option("bsrange = \"4k-64k,1m-2m\"\n", "bsrange").as_deref(),
            Some("4k-64k,1m-2m")
        );
    }
}
