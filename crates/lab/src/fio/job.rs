//! A job section read into what the job asks for ([`JobSpec`]): every
//! `[global]` option written above it, then its own, each applied through
//! the option table, and its name made usable as a scenario name.

use cint_policy::Nanos;
use cint_scenario::{BsShare, Engine, Rw, SteadyMetric, SyncWrites};

use super::diag::Diagnostics;
use super::jobfile::{Opt, Section};
use super::options::apply;
use super::FioError;

/// A value and the line that set it.
#[derive(Clone, Copy, Debug)]
pub(super) struct At<T> {
    pub(super) value: T,
    pub(super) line: usize,
}

impl<T> At<T> {
    pub(super) fn new(line: usize, value: T) -> At<T> {
        At { value, line }
    }
}

/// fio's `size`: bytes, or a percentage of the device's capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum SizeSpec {
    Bytes(u64),
    Percent(u64),
}

/// What one job's options ask for, each with the line that set it so a
/// conflict found later is reported there; `None`: fio's default.
#[derive(Clone, Debug)]
pub(super) struct JobSpec {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) rw: Option<At<Rw>>,
    /// A sequential pattern's offset step (`rw=read:8k`: the hole after
    /// each request; negative: backwards), bytes.
    pub(super) seq_step: Option<At<i64>>,
    /// The job's region starts at an offset, or lies on a block device
    /// (`filename=/dev/...`): where fio's holed pass wraps then depends on
    /// sizes the model does not know.
    pub(super) placed: Option<At<&'static str>>,
    pub(super) bs: Option<At<u64>>,
    pub(super) iodepth: Option<At<u32>>,
    pub(super) batch: Option<At<u32>>,
    pub(super) batch_complete_min: Option<At<u32>>,
    pub(super) batch_complete_max: Option<At<u32>>,
    /// `iodepth_low`; 0, as fio reads it, is the depth.
    pub(super) iodepth_low: Option<At<u32>>,
    pub(super) gtod_reduce: Option<At<bool>>,
    /// `io_submit_mode=offload`.
    pub(super) offload: Option<At<()>>,
    pub(super) engine: Option<At<Engine>>,
    pub(super) numjobs: Option<At<u32>>,
    /// fio's `nrfiles`: the files of each thread of the job.
    pub(super) nrfiles: Option<At<u64>>,
    /// How many files `filename` names, which fio takes over `nrfiles`.
    pub(super) filenames: Option<At<u64>>,
    pub(super) cpus: Option<At<Vec<u32>>>,
    /// The option that set `cpus`: `cpus_allowed` or `cpumask`.
    pub(super) cpus_option: &'static str,
    pub(super) cpus_split: Option<At<bool>>,
    pub(super) direct: Option<At<bool>>,
    /// `fadvise_hint` (fio's default: true).
    pub(super) fadvise_hint: Option<At<bool>>,
    /// `norandommap`: random offsets drawn without fio's random map.
    pub(super) norandommap: bool,
    /// `random_generator=lfsr`: random offsets from fio's LFSR.
    pub(super) lfsr: bool,
    /// `random_distribution`.
    pub(super) random_distribution: Option<At<cint_scenario::Distribution>>,
    /// `blockalign` (the reads' alignment).
    pub(super) blockalign: Option<At<u64>>,
    /// `ratemin` (bytes per second) or `rate_iops_min`, per direction (0:
    /// no floor), and which of the two was given.
    pub(super) rate_min: Option<At<(cint_scenario::RateUnit, [u64; 2])>>,
    /// `ratecycle`, fio's window for `ratemin` (1 s).
    pub(super) ratecycle: Nanos,
    pub(super) runtime: Option<At<Nanos>>,
    pub(super) ramp: Option<At<Nanos>>,
    pub(super) size: Option<At<SizeSpec>>,
    pub(super) time_based: bool,
    pub(super) rwmixread: Option<At<u8>>,
    pub(super) hipri: Option<At<bool>>,
    /// io_uring's `sqthread_poll` and `sqthread_poll_cpu`.
    pub(super) sqpoll: Option<At<bool>>,
    pub(super) sqpoll_cpu: Option<At<u32>>,
    /// `sync`: files opened `O_SYNC` (or `O_DSYNC` with `sync=dsync`).
    pub(super) sync: Option<At<SyncWrites>>,
    /// `end_fsync` or `fsync_on_close` set: fio's `fsync` of the job's
    /// file after its loop (backend.c `do_io`), the option's name kept.
    pub(super) final_fsync: Option<At<&'static str>>,
    /// `invalidate=0`: fio leaves the file's pages in the page cache
    /// before the job (its default drops them).
    pub(super) keeps_cache: Option<At<()>>,
    pub(super) nowait: Option<At<bool>>,
    pub(super) bssplit: Option<At<Vec<BsShare>>>,
    pub(super) bssplit_write: Vec<BsShare>,
    pub(super) bssplit_write_differs: bool,
    /// `bsrange=READS,WRITES` with a writes' range of its own.
    pub(super) bsrange_write: Option<(u64, u64)>,
    /// `bs=READ,WRITE` with a write size of its own.
    pub(super) bs_write: Option<At<u64>>,
    pub(super) filesize: Option<At<u64>>,
    /// `offset` in bytes (fio's `start_offset`), where given as a size.
    pub(super) offset: Option<At<u64>>,
    /// `offset_increment` in bytes: how much further in each of the
    /// job's threads starts than the one before.
    pub(super) offset_increment: Option<At<u64>>,
    /// An `offset` or `offset_increment` given as a share of the file.
    pub(super) offset_percent: Option<At<()>>,
    pub(super) bsrange: Option<At<(u64, u64)>>,
    /// `rate`: bytes/s for reads and for writes (0: no cap).
    pub(super) rate: Option<At<[u64; 2]>>,
    /// `rate_iops` for reads and for writes (0: no cap).
    pub(super) rate_iops_dirs: Option<At<[u64; 2]>>,
    pub(super) poisson: bool,
    pub(super) barrier: Option<At<bool>>,
    pub(super) thinktime: Option<At<Nanos>>,
    pub(super) thinktime_spin: Option<At<Nanos>>,
    pub(super) thinktime_blocks: Option<At<u32>>,
    /// `thinktime_blocks_type=issue`.
    pub(super) thinktime_issue: bool,
    pub(super) thinktime_iotime: Option<At<Nanos>>,
    pub(super) rate_ign_think: bool,
    pub(super) startdelay: Option<At<Nanos>>,
    pub(super) number_ios: Option<At<u64>>,
    pub(super) percentile_list: Option<At<Vec<f64>>>,
    pub(super) stonewall: bool,
    pub(super) wait_for: Option<At<String>>,
    pub(super) io_size: Option<At<u64>>,
    /// `io_size=P%` (below 100): the job's bytes are that share of its
    /// size, over the whole file.
    pub(super) io_size_percent: Option<At<u64>>,
    pub(super) loops: u64,
    pub(super) fsync: Option<At<u32>>,
    pub(super) fdatasync: Option<At<u32>>,
    pub(super) flow: Option<At<u32>>,
    pub(super) flow_id: u32,
    pub(super) flow_sleep: Nanos,
    pub(super) exitall: bool,
    pub(super) exit_all_jobs: bool,
    /// `ss` as `parse_steady` reads it: metric, slope, limit, percent.
    pub(super) steady: Option<At<(SteadyMetric, bool, f64, bool)>>,
    pub(super) ss_dur: Option<At<Nanos>>,
    pub(super) ss_ramp: Nanos,
    pub(super) latency_target: Option<At<Nanos>>,
    /// `max_latency`: each direction's bound, none where 0 or empty.
    pub(super) max_latency: Option<At<cint_scenario::max_latency::MaxLatency>>,
    pub(super) latency_window: Nanos,
    pub(super) latency_percentile: Option<At<f64>>,
}

/// Where a scenario key of an imported job came from: the fio option that
/// set it and its line.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeyLine {
    /// The scenario key under `job.NAME` (`""`: the job itself).
    pub key: &'static str,
    /// The fio option that set it.
    pub option: &'static str,
    /// Its line in the job file.
    pub line: usize,
}

impl JobSpec {
    /// Whether the job's `end_fsync` (or `fsync_on_close`) writes back
    /// pages: it writes through the page cache (not direct, not io_uring,
    /// which runs as direct I/O in the model, and not `O_SYNC`, whose
    /// writes leave none dirty). The scenario's `end_fsync`.
    pub(super) fn flushes_at_its_end(&self) -> bool {
        let rw = self.rw.map_or(Rw::Read, |r| r.value);
        let engine = self.engine.map_or(Engine::Psync, |e| e.value);
        let cached = cint_scenario::passes_page_cache(engine, self.direct.is_some_and(|d| d.value));
        let synced = self.sync.is_some_and(|s| s.value != SyncWrites::None);
        self.final_fsync.is_some() && !rw.only_reads() && cached && !synced
    }

    /// Where thread `thread` of the job starts in its file, for offsets
    /// given as sizes: fio's `get_start_offset` (filesetup.c),
    /// `offset + subjob_number * offset_increment`.
    pub(super) fn start_offset(&self, thread: u32) -> u64 {
        let base = self.offset.map_or(0, |o| o.value);
        let step = self.offset_increment.map_or(0, |o| o.value);
        base.saturating_add(step.saturating_mul(u64::from(thread)))
    }

    /// The line that set `option`, or the job's own line when fio's
    /// default applies: where a conflict involving the option is reported.
    pub(super) fn line_of<T>(&self, option: &Option<At<T>>) -> usize {
        option.as_ref().map_or(self.line, |o| o.line)
    }

    /// The job file's lines of the scenario keys that an engine or the
    /// scenario's checks may refuse, each where its fio option was set;
    /// `""`, the job's own section, stands for the rest.
    pub(super) fn key_lines(&self) -> Vec<KeyLine> {
        fn at<T>(key: &'static str, option: &'static str, o: &Option<At<T>>) -> Option<KeyLine> {
            o.as_ref().map(|o| KeyLine {
                key,
                option,
                line: o.line,
            })
        }
        [
            at("", "", &Some(At::new(self.line, ()))),
            at("engine", "ioengine", &self.engine),
            at("direct", "direct", &self.direct),
            at("gtod_reduce", "gtod_reduce", &self.gtod_reduce),
            at("submit_mode", "io_submit_mode", &self.offload),
            at("sqpoll", "sqthread_poll", &self.sqpoll),
            at("sqpoll_cpu", "sqthread_poll_cpu", &self.sqpoll_cpu),
            at("hipri", "hipri", &self.hipri),
            at("cpus", self.cpus_option, &self.cpus),
            at("startdelay", "startdelay", &self.startdelay),
            at("bs", "bs", &self.bs),
            at("bssplit", "bssplit", &self.bssplit),
            // Reads and writes of different sizes become a split.
            at("bssplit", "bs", &self.bs_write),
            at("bsrange", "bsrange", &self.bsrange),
            at("rate", "rate", &self.rate),
            at("rate_iops", "rate_iops", &self.rate_iops_dirs),
            at("ratemin", "ratemin", &self.rate_min),
            at("rate_iops_min", "rate_iops_min", &self.rate_min),
            at("number_ios", "number_ios", &self.number_ios),
            at("io_size", "io_size", &self.io_size),
            at("fsync", "fsync", &self.fsync),
            at("fdatasync", "fdatasync", &self.fdatasync),
            at("flow", "flow", &self.flow),
            at("ss", "ss", &self.steady),
            at("latency_target", "latency_target", &self.latency_target),
            at("max_latency", "max_latency", &self.max_latency),
            at("thinktime", "thinktime", &self.thinktime),
            at(
                "random_distribution",
                "random_distribution",
                &self.random_distribution,
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    pub(super) fn new(name: &str, line: usize) -> JobSpec {
        JobSpec {
            name: name.into(),
            line,
            rw: None,
            seq_step: None,
            placed: None,
            bs: None,
            iodepth: None,
            batch: None,
            batch_complete_min: None,
            batch_complete_max: None,
            iodepth_low: None,
            gtod_reduce: None,
            offload: None,
            engine: None,
            numjobs: None,
            nrfiles: None,
            filenames: None,
            cpus: None,
            cpus_option: "cpus_allowed",
            cpus_split: None,
            direct: None,
            fadvise_hint: None,
            norandommap: false,
            lfsr: false,
            random_distribution: None,
            blockalign: None,
            rate_min: None,
            ratecycle: 1_000_000_000,
            runtime: None,
            ramp: None,
            size: None,
            time_based: false,
            rwmixread: None,
            hipri: None,
            sqpoll: None,
            sqpoll_cpu: None,
            sync: None,
            final_fsync: None,
            keeps_cache: None,
            nowait: None,
            bssplit: None,
            bssplit_write: Vec::new(),
            bssplit_write_differs: false,
            bsrange_write: None,
            bs_write: None,
            filesize: None,
            offset: None,
            offset_increment: None,
            offset_percent: None,
            bsrange: None,
            rate: None,
            rate_iops_dirs: None,
            poisson: false,
            barrier: None,
            thinktime: None,
            thinktime_spin: None,
            thinktime_blocks: None,
            thinktime_issue: false,
            thinktime_iotime: None,
            rate_ign_think: false,
            startdelay: None,
            number_ios: None,
            percentile_list: None,
            stonewall: false,
            wait_for: None,
            io_size: None,
            io_size_percent: None,
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
            latency_target: None,
            max_latency: None,
            latency_window: 0,
            latency_percentile: None,
        }
    }
}

/// The jobs of the file's sections in file order, each starting from the
/// `[global]` options above it.
pub(super) fn job_specs(
    sections: Vec<Section>,
    diag: &mut Diagnostics,
) -> Result<Vec<JobSpec>, FioError> {
    let mut globals: Vec<Opt> = Vec::new();
    let mut specs: Vec<JobSpec> = Vec::new();
    for section in sections {
        if section.name == "global" {
            for opt in section.options {
                // Validate once, where it is written, so the message points there.
                apply(&mut JobSpec::new("global", 0), &opt, diag)?;
                globals.push(opt);
            }
            continue;
        }
        let mut spec = JobSpec::new(&section.name, section.line);
        // Inherited options were checked, and warned about, where they
        // are written; their warnings are not repeated for every job.
        let mut silent = Diagnostics::new(diag.file());
        // A `name` in [global] would give every job the same name; jobs keep
        // their section names instead.
        for opt in globals.iter().filter(|o| o.key != "name") {
            apply(&mut spec, opt, &mut silent)?;
        }
        for opt in &section.options {
            apply(&mut spec, opt, diag)?;
        }
        let usable = usable_name(&spec.name);
        if usable.is_empty() {
            return Err(diag.err(section.line, "a job needs a non-empty name".into()));
        }
        if usable != spec.name {
            diag.warn(
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
            return Err(diag.err(
                section.line,
                format!("job '{}' is defined twice", spec.name),
            ));
        }
        specs.push(spec);
    }
    if specs.is_empty() {
        return Err(diag.err_file("no job section (only [global] or nothing)".into()));
    }
    Ok(specs)
}

/// fio names jobs freely; scenario names are `--set` path segments.
pub(super) fn usable_name(name: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::super::import_str;
    use super::super::test_support::{args, io};

    #[test]
    fn later_global_sections_only_affect_later_jobs() {
        let text = "[global]\nbs=8k\n[a]\n[global]\nbs=16k\n[b]\nbs=32k\n[c]\n";
        let s = import_str(text, "g.fio", &args()).expect("valid").scenario;
        let bs: Vec<u64> = s.jobs.iter().map(|j| io(j).bs).collect();
        assert_eq!(bs, [8192, 32768, 16384]);
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
}
