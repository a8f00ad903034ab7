//! A job's request shaping ([`IoShape`]): block-size mixes, byte and IO/s
//! caps, think times, counts, flows, `exitall` and steady state, checked
//! against each other.

use cint_scenario::{
    BsShare, DirectionRates, ExitScope, IoShape, LatencyTarget, RandomMap, RateUnit, Rw,
    SteadyState, SyncWrites,
};

use super::diag::Diagnostics;
use super::job::{At, JobSpec};
use super::FioError;

/// The request-shaping options of one job.
pub(super) fn job_shape(
    spec: &JobSpec,
    rw: Rw,
    bs: u64,
    diag: &mut Diagnostics,
) -> Result<IoShape, FioError> {
    let mut bssplit = spec
        .bssplit
        .as_ref()
        .map_or(Vec::new(), |b| b.value.clone());
    let mut bssplit_write = spec.bssplit_write.clone();
    let bsrange = spec.bsrange.map(|r| r.value);
    // `bs=READ,WRITE` is a split of one size per direction; fio's
    // `bssplit` and `bsrange` take the place of `bs` when given.
    if let (Some(write), true, None) = (spec.bs_write, bssplit.is_empty(), bsrange) {
        bssplit = vec![BsShare {
            bytes: bs,
            percent: 100,
        }];
        bssplit_write = vec![BsShare {
            bytes: write.value,
            percent: 100,
        }];
    }
    if bsrange.is_some() && !bssplit.is_empty() {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.bsrange),
            "bsrange together with bssplit",
        ));
    }
    let mut shape = IoShape {
        bssplit,
        bssplit_write,
        bsrange,
        bsrange_write: spec.bsrange_write.filter(|_| bsrange.is_some()),
        rate: None,
        rate_per_direction: None,
        rate_min: None,
        rate_poisson: spec.poisson,
        barrier_last: spec.barrier.is_some_and(|b| b.value),
        thinktime: spec.thinktime.map_or(0, |t| t.value),
        thinktime_spin: spec.thinktime_spin.map_or(0, |t| t.value),
        thinktime_blocks: match (spec.thinktime_blocks, spec.thinktime_iotime) {
            (Some(b), _) => b.value,
            // fio skips the count when only thinktime_iotime is given.
            (None, Some(_)) => u32::MAX,
            (None, None) => 1,
        },
        thinktime_issue: spec.thinktime_issue,
        thinktime_iotime: spec.thinktime_iotime.map_or(0, |t| t.value),
        rate_ign_think: spec.rate_ign_think,
        number_ios: spec.number_ios.map(|n| n.value).filter(|&n| n > 0),
        io_size: None,
        pass_size: None,
        byte_limit: None,
        percentile_list: spec
            .percentile_list
            .as_ref()
            .map_or(Vec::new(), |p| p.value.clone()),
        fsync: spec.fsync.map_or(0, |f| f.value),
        fdatasync: spec.fdatasync.map_or(0, |f| f.value),
        // Set once the job's I/O path is known (`to_scenario`).
        sync_writes: SyncWrites::None,
        end_fsync: false,
        flow: spec.flow.map_or(0, |f| f.value),
        flow_id: spec.flow_id,
        flow_sleep: spec.flow_sleep,
        exitall: spec.exitall.then_some(if spec.exit_all_jobs {
            ExitScope::All
        } else {
            ExitScope::Group
        }),
        steady: None,
        latency_target: spec
            .latency_target
            .filter(|t| t.value > 0)
            .map(|t| LatencyTarget {
                target: t.value,
                window: spec.latency_window,
                percentile: spec.latency_percentile.map_or(100.0, |p| p.value),
            }),
        max_latency: max_latency(spec, diag),
        trace: None,
        random_map: RandomMap::from_fio(spec.norandommap, spec.lfsr),
        random_distribution: spec
            .random_distribution
            .as_ref()
            .map_or(cint_scenario::Distribution::Uniform, |d| d.value.clone()),
    };
    match (spec.steady, spec.ss_dur) {
        (ss, Some(dur)) => {
            // Without `ss`, fio judges by its default criterion
            // (options.c: `iops_slope:0.01%`).
            let (metric, slope, limit, percent) = match ss {
                Some(ss) => ss.value,
                None => cint_scenario::shape::parse_steady(FIO_DEFAULT_STEADY)
                    .expect("fio's default steady-state criterion parses"),
            };
            shape.steady = Some(SteadyState {
                metric,
                slope,
                limit,
                percent,
                dur: dur.value,
                ramp: spec.ss_ramp,
            });
        }
        // fio judges no window of 0 s (steadystate.c): the detection is
        // off, and the job runs as if ss were not written.
        (Some(ss), None) => diag.job_warn(
            &spec.name,
            ss.line,
            "ss has no effect without ss_dur (fio's steady-state detection is off when the \
             window is 0); ignored",
        ),
        (None, _) => {}
    }
    if shape.thinktime_spin > shape.thinktime {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.thinktime_spin),
            "thinktime_spin is longer than thinktime",
        ));
    }
    if let Some(r) = spec.rate {
        let rwmixread = spec.rwmixread.map_or(50, |m| m.value);
        match job_cap(spec, "rate", r, rw, rwmixread, diag) {
            JobCap::None => {}
            JobCap::One(cap) => shape.rate = Some(cap),
            JobCap::PerDirection(read, write) => {
                let unit = RateUnit::Bytes;
                shape.rate_per_direction = Some(DirectionRates { unit, read, write });
            }
        }
    }
    finish_rate_process(spec, shape, diag)
}

/// fio's `max_latency`, which fio checks against the total latency it
/// measures: under `gtod_reduce` it measures none (`disable_lat`), so the
/// bound changes nothing (warned).
fn max_latency(
    spec: &JobSpec,
    diag: &mut Diagnostics,
) -> Option<cint_scenario::max_latency::MaxLatency> {
    let bound = spec.max_latency?;
    if spec.gtod_reduce.is_some_and(|g| g.value) {
        diag.job_warn(
            &spec.name,
            bound.line,
            String::from(
                "max_latency has no effect with gtod_reduce (fio measures no total latency \
                 then: gtod_reduce sets disable_lat)",
            ),
        );
        return None;
    }
    Some(bound.value)
}

/// fio draws Poisson gaps only for a job with a cap (backend.c
/// `usec_for_io`); without one `rate_process` changes nothing.
fn finish_rate_process(
    spec: &JobSpec,
    mut shape: IoShape,
    diag: &mut Diagnostics,
) -> Result<IoShape, FioError> {
    let capped = shape.rate.is_some() || shape.rate_per_direction.is_some();
    if shape.rate_poisson && !capped && spec.rate_iops_dirs.is_none() {
        diag.job_warn(
            &spec.name,
            spec.line,
            "rate_process=poisson has no effect without rate or rate_iops; ignored",
        );
        shape.rate_poisson = false;
    }
    Ok(shape)
}

/// fio 3.33's `steadystate` default (options.c), judged whenever
/// `ss_dur` is given.
const FIO_DEFAULT_STEADY: &str = "iops_slope:0.01%";

/// What a job's rate option caps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JobCap {
    /// Nothing the job issues.
    None,
    /// The one direction the job issues.
    One(u64),
    /// Each direction of a job that reads and writes, on a schedule of its
    /// own (`None`: that direction free).
    PerDirection(Option<u64>, Option<u64>),
}

/// The job's cap from the per-direction caps `option` set (0: none).
///
/// A job that both reads and writes is capped per direction, as fio
/// paces it: reads and writes on schedules of their own, and when the
/// direction it drew is ahead of its cap and the other behind, the other
/// goes (io_u.c `rate_ddir`). So `rate_iops=1000` on a 70/30 `randrw`
/// issues 1000 reads and 1000 writes a second, not 1000 in all, and
/// `rate_iops=1000,` leaves the writes uncapped.
///
/// A job of one direction takes that direction's cap; only a direction
/// the job does not issue capped is no cap, with a warning, and a cap on
/// such a direction beside one that applies is warned too
/// (`rate_iops=1000,500` on reads).
pub(super) fn job_cap(
    spec: &JobSpec,
    option: &str,
    caps: At<[u64; 2]>,
    rw: Rw,
    rwmixread: u8,
    diag: &mut Diagnostics,
) -> JobCap {
    let reads = read_share(rw, rwmixread);
    let nonzero = |c: u64| Some(c).filter(|&c| c > 0);
    if reads > 0 && reads < 100 {
        return match (nonzero(caps.value[0]), nonzero(caps.value[1])) {
            (None, None) => JobCap::None,
            (read, write) => JobCap::PerDirection(read, write),
        };
    }
    let issued = usize::from(reads == 0);
    let cap = nonzero(caps.value[issued]);
    let unused = caps.value[1 - issued] != 0 && caps.value[0] != caps.value[1];
    if cap.is_none() {
        diag.job_warn(
            &spec.name,
            caps.line,
            format!("{option} caps only a direction the job does not issue; no cap"),
        );
    } else if unused {
        let which = if issued == 0 { "writes" } else { "reads" };
        diag.job_warn(
            &spec.name,
            caps.line,
            format!("{option} caps {which}, which the job does not issue; that cap does nothing"),
        );
    }
    cap.map_or(JobCap::None, JobCap::One)
}

/// Percent of the job's requests that are reads.
fn read_share(rw: Rw, rwmixread: u8) -> u128 {
    match rw {
        Rw::Read | Rw::RandRead => 100,
        Rw::Write | Rw::RandWrite => 0,
        Rw::RandRw | Rw::ReadWrite => u128::from(rwmixread),
    }
}

#[cfg(test)]
mod tests {
    use super::super::import_str;
    use super::super::test_support::{args, io};
    use cint_scenario::{DirectionRates, ExitScope, RateUnit, Rw};

    #[test]
    fn a_writes_range_of_its_own_imports() {
        let text = "[j]\nrw=randrw\nbsrange=4k-8k,64k-128k\nnorandommap\n";
        let s = import_str(text, "r.fio", &args()).expect("imports");
        let a = io(&s.scenario.jobs[0]);
        assert_eq!(a.shape.bsrange, Some((4096, 8192)));
        assert_eq!(a.shape.bsrange_write, Some((65536, 131072)));
        // The same range twice is one range.
        let s = import_str("[j]\nbsrange=4k-8k,4k-8k\n", "s.fio", &args()).expect("imports");
        assert_eq!(io(&s.scenario.jobs[0]).shape.bsrange_write, None);
    }

    #[test]
    fn thinktime_by_issue_or_by_time_imports() {
        let text = "[j]\nthinktime=10\nthinktime_blocks_type=issue\nthinktime_iotime=2\n";
        let s = import_str(text, "t.fio", &args()).expect("imports");
        let a = io(&s.scenario.jobs[0]);
        assert!(a.shape.thinktime_issue);
        // A bare thinktime_iotime is seconds; alone, it leaves the count
        // out.
        assert_eq!(a.shape.thinktime_iotime, 2_000_000_000);
        assert_eq!(a.shape.thinktime_blocks, u32::MAX);
    }

    #[test]
    fn block_sizes_rates_think_times_and_counts() {
        let text = "[a]\nrw=randrw\nrwmixread=80\nbssplit=4k/50:64k/50,16k\nnorandommap\n\
                    thinktime=50\nthinktime_spin=10\nthinktime_blocks=4\nnumber_ios=1000\n\
                    percentile_list=50:99:99.99\ntime_based\nruntime=1\n\
                    [b]\nrw=readwrite\nrwmixread=100\nbsrange=4k-16k\nrate_iops=100\n\
                    rate_process=poisson\nloops=3\nsize=1m\nruntime=1\n\
                    [c]\nrw=randwrite\nbs=16k\nrate=10m,1m\nruntime=1\n";
        let imp = import_str(text, "s.fio", &args()).expect("valid");
        let a = io(&imp.scenario.jobs[0]);
        assert_eq!(a.bs, 4096, "the smallest size of the split");
        assert_eq!(a.shape.bssplit.len(), 2);
        assert_eq!(a.shape.bssplit_write[0].bytes, 16384);
        // A writer is capped by the writes' cap.
        assert_eq!(io(&imp.scenario.jobs[2]).shape.rate, Some(1 << 20));
        // A cap on a job that both reads and writes paces each direction
        // on its own, as fio does (the s18 fio audit: rate_iops=1000 at
        // 70/30 gave 499 reads and 499 writes in 500 ms).
        for (cap, unit, read, write) in [
            ("rate_iops=1000", RateUnit::Iops, Some(1000), Some(1000)),
            ("rate=4m", RateUnit::Bytes, Some(4 << 20), Some(4 << 20)),
            ("rate_iops=1000,", RateUnit::Iops, Some(1000), None),
            ("rate_iops=,200", RateUnit::Iops, None, Some(200)),
            ("rate_iops=1000,200", RateUnit::Iops, Some(1000), Some(200)),
        ] {
            let text = format!("[a]\nrw=randrw\nrwmixread=70\n{cap}\nruntime=1\n");
            let s = import_str(&text, "m.fio", &args()).expect(cap).scenario;
            let m = io(&s.jobs[0]);
            let want = DirectionRates { unit, read, write };
            assert_eq!(m.shape.rate_per_direction, Some(want), "{cap}");
            assert_eq!((m.rate_iops, m.shape.rate), (None, None), "{cap}");
        }
        let both = "[a]\nrw=randrw\nrate_iops=1000\nrate=1m\n";
        let e = import_str(both, "m.fio", &args()).expect_err("rate and rate_iops");
        assert!(e.message.contains("rate together with rate_iops"), "{e}");
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
        assert_eq!(b.rate_iops, Some(100), "reads only (rwmixread=100)");
        assert!(b.shape.rate_poisson);
        assert_eq!(b.shape.io_size, Some(3 << 20), "size times loops");
    }

    #[test]
    fn rate_ignore_thinktime_is_fios_name_for_it() {
        let job = "[j]\nrw=randread\nrate_iops=100\nthinktime=1ms\n";
        let text = format!("{job}rate_ignore_thinktime=1\n");
        let s = import_str(&text, "t.fio", &args())
            .expect("fio's option")
            .scenario;
        assert!(io(&s.jobs[0]).shape.rate_ign_think);
        // fio 3.33 says "Bad option" for the struct field's name.
        let text = format!("{job}rate_ign_think=1\n");
        let e = import_str(&text, "t.fio", &args()).expect_err("not fio's");
        assert_eq!(e.line, Some(5), "{e}");
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
    }

    #[test]
    fn steady_state_runs_when_fio_judges_a_window() {
        // fio's detection is off while ss_dur is 0 (steadystate.c), so
        // ss alone changes nothing: warned, no criterion.
        let imp = import_str("[a]\nruntime=5\nss=iops:1%\n", "f.fio", &args()).expect("ss alone");
        assert_eq!(io(&imp.scenario.jobs[0]).shape.steady, None);
        assert!(
            imp.warnings.iter().any(|w| w.contains("ss has no effect")),
            "{:?}",
            imp.warnings
        );
        // ss_dur alone judges by fio's default criterion, iops_slope:0.01%
        // (fio 3.33's json: "ss": "iops_slope:0.010000%").
        let s = import_str("[a]\nruntime=5\nss_dur=2\n", "f.fio", &args())
            .expect("ss_dur alone")
            .scenario;
        let ss = io(&s.jobs[0])
            .shape
            .steady
            .expect("fio's default criterion");
        assert_eq!(ss.metric, cint_scenario::SteadyMetric::Iops);
        assert!(ss.slope && ss.percent && ss.limit == 0.01);
        assert_eq!(ss.dur, 2_000_000_000);
        // fio's long names are the same options.
        let s = import_str(
            "[a]\nruntime=5\nsteadystate=bw:5%\nsteadystate_duration=3s\nsteadystate_ramp_time=1s\n",
            "f.fio",
            &args(),
        )
        .expect("fio's names")
        .scenario;
        let ss = io(&s.jobs[0]).shape.steady.expect("steadystate");
        assert_eq!(ss.metric, cint_scenario::SteadyMetric::Bw);
        assert_eq!((ss.dur, ss.ramp), (3_000_000_000, 1_000_000_000));
        // ss_dur=0 is fio's default: off again.
        let s = import_str("[a]\nruntime=5\nss_dur=2\nss_dur=0\n", "f.fio", &args())
            .expect("ss_dur=0")
            .scenario;
        assert_eq!(io(&s.jobs[0]).shape.steady, None);
    }
}
