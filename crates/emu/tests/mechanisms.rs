//! Mechanism checks that hold whatever the timing: they count interrupts
//! and delivery paths, never compare latencies.

mod common;

use cint_emu::{
    BackendConfig, DeliveredBy, DeviceConfig, Emulator, IdleDelivery, Op, QueueConfig, QueueMode,
    Realtime, Request, WaitMode,
};
use cint_policy::config::CinterruptsParams;
use cint_policy::{Hint, PolicyConfig, MS, SEC, US};
use cint_scenario::{Engine, Work};
use common::*;

#[test]
fn async_batches_under_cinterrupts_raise_at_most_a_tenth_of_the_irqs_of_none() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // A long delta and a high thr keep the adaptive fall-back's timer out
    // of the picture: only the Barrier at the end of each batch fires.
    let mut job = io_job("async", Engine::Libaio, 32, 32, 1);
    if let Work::Io(io) = &mut job.work {
        io.batch_complete_min = 1;
    }
    let build = |duration| {
        scenario(
            "async-batch",
            device(10_000, 4),
            vec![none(), cinterrupts(20 * MS, 256)],
            vec![job.clone()],
            duration,
        )
    };
    // The counts below are whole-run ratios, whatever the run's length; a
    // loaded machine, where the job thread waits for its core behind other
    // threads after every batch, gets its 500 completions in a longer run.
    let d = run_until(40 * MS, 640 * MS, build, |d| {
        d.strategies.iter().all(|sd| sd.completions_total > 500)
    });
    // The default, realtime = "require", ran every handler at real-time
    // priority, so the result carries no caveat.
    assert!(d.result.notes.is_empty(), "{:?}", d.result.notes);
    let per_completion = |k: usize| {
        let sd = &d.strategies[k];
        assert!(
            sd.completions_total > 500,
            "{}: too few completions",
            sd.name
        );
        assert_eq!(sd.jobs[0].strays, 0);
        assert_eq!(sd.jobs[0].submitted, sd.jobs[0].completed);
        sd.irqs_total as f64 / sd.completions_total as f64
    };
    let none_rate = per_completion(0);
    let cint_rate = per_completion(1);
    assert!(none_rate >= 0.99, "none fires per completion: {none_rate}");
    assert!(
        cint_rate <= none_rate / 10.0,
        "cinterrupts {cint_rate} IRQs per IO vs none {none_rate}"
    );
    assert_eq!(d.result.results[1].urgent_interrupts, 0);
}

#[test]
fn barrier_last_marks_each_batchs_last_request_over_the_jobs_hint() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // Every request of the job says Unmarked, but the patched fio's
    // barrier=1 marks the last of each io_submit: each batch ends with an
    // interrupt. Without the mark, a completion would wait for the
    // fall-back's 200 ms of quiet, 32 requests a fifth of a second.
    let mut job = io_job("async", Engine::Libaio, 32, 32, 1);
    if let Work::Io(io) = &mut job.work {
        io.batch_complete_min = 1;
        io.hint = Some(Hint::Unmarked);
        io.shape.barrier_last = true;
    }
    let build = |duration| {
        scenario(
            "barrier-last",
            device(10_000, 4),
            vec![cinterrupts(200 * MS, 256)],
            vec![job.clone()],
            duration,
        )
    };
    let d = run_until(40 * MS, 640 * MS, build, |d| {
        d.strategies.iter().all(|sd| sd.completions_total > 500)
    });
    let sd = &d.strategies[0];
    assert!(
        sd.completions_total > 500,
        "{} completions: the batches' last requests were not marked",
        sd.completions_total
    );
    let per_completion = sd.irqs_total as f64 / sd.completions_total as f64;
    assert!(
        per_completion <= 0.1,
        "{per_completion} IRQs per IO: more than each batch's barrier"
    );
}

#[test]
fn sync_qd1_under_cinterrupts_is_delivered_by_urgent_irqs_only() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let d = run_long_enough(50, |duration| {
        scenario(
            "sync-qd1",
            device(10_000, 4),
            vec![cinterrupts(DEFAULT_DELTA, 32)],
            vec![io_job("sync", Engine::Psync, 1, 1, 1)],
            duration,
        )
    });
    let job = &d.strategies[0].jobs[0];
    assert!(job.completed > 50, "only {} completions", job.completed);
    assert_eq!(job.completed, job.submitted);
    assert_eq!(job.by_urgent_irq, job.completed, "{job:?}");
    assert_eq!(job.by_full_irq, 0);
    let r = &d.result.results[0];
    assert_eq!(r.urgent_interrupts, r.interrupts);
    assert!(r.jobs[0].ios > 0);
}

#[test]
fn poll_raises_no_irq_and_never_blocks() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let s = scenario(
        "poll",
        device(10_000, 4),
        vec![poll()],
        vec![
            hipri(io_job("sync", Engine::Pvsync2, 1, 1, 1)),
            hipri(io_job("async", Engine::IoUring, 16, 4, 1)),
        ],
        30 * MS,
    );
    let d = cint_emu::run_detailed(&s).expect("emulator runs");
    let r = &d.result.results[0];
    assert_eq!(r.interrupts, 0);
    assert_eq!(d.strategies[0].irqs_total, 0);
    for job in &d.strategies[0].jobs {
        assert!(job.completed > 0, "{job:?}");
        assert_eq!(job.by_poll, job.completed);
        assert_eq!(job.voluntary_switches, 0, "{job:?}");
        assert_eq!(job.wakeups, 0, "{job:?}");
    }
    assert_eq!(r.wakeups, 0, "pollers never block and there is no handler");
    assert!(r.jobs.iter().all(|j| j.wakeups == 0));
}

/// Runs psync at QD1 under `none` on a 10 us device long enough for a few
/// dozen IOs (a loaded machine, where each wake-up waits for the CPU, gets
/// them in a longer window).
fn psync_qd1_under_none(idle: IdleDelivery, with_cpu_job: bool) -> cint_emu::RunDetail {
    run_long_enough(30, |duration| {
        let mut jobs = vec![io_job("sync", Engine::Psync, 1, 1, 1)];
        if with_cpu_job {
            jobs.push(cpu_job("spin"));
        }
        let mut s = scenario("wakeups", device(10_000, 4), vec![none()], jobs, duration);
        s.emu.idle_delivery = idle;
        s
    })
}

#[test]
fn a_rate_limited_deep_queue_reaps_before_it_sleeps() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's rate_ddir: ahead of its schedule, the thread reaps what it has
    // in flight before it sleeps. 2 000 requests a second from a 16-deep
    // libaio job: each read (10 us) is reaped long before the next is due,
    // so its latency is the device's and the wake-ups', far below the
    // 500 us between requests. A thread that slept with requests in
    // flight would take each back at its next turn, a gap late. The
    // bound holds on a loaded machine: it is on the median, which one
    // wake-up the host delays by milliseconds cannot move (the mean of
    // 61 requests once read 448 us in CI that way), and the timing it
    // tolerates is a wake-up's, not a gap's.
    let mut job = io_job("paced", Engine::Libaio, 16, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.rate_iops = Some(2_000);
    }
    let d = run_long_enough(40, |duration| {
        scenario(
            "paced",
            device(10_000, 4),
            vec![none()],
            vec![job.clone()],
            duration,
        )
    });
    let j = &d.result.results[0].jobs[0];
    assert!(j.ios >= 40, "{} requests", j.ios);
    let median = j.lat_ns.percentile["50.000000"];
    assert!(
        median < 400_000,
        "median latency {median} ns at 2 000 requests a second: {:?}",
        j.lat_ns
    );
}

#[test]
fn a_byte_rate_paces_each_request_by_its_bytes() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // rate = 2 MB/s of 4 KiB reads: a request every 2.048 ms, about 488 a
    // second, where the device alone would serve a hundred times more. A
    // loaded machine's late wake-ups only slow the thread, so the bound
    // from above is the schedule's; from below, a fifth of it.
    let mut job = io_job("paced", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.shape.rate = Some(2_000_000);
    }
    let d = cint_emu::run_detailed(&scenario(
        "bytes",
        device(10_000, 4),
        vec![none()],
        vec![job],
        200 * MS,
    ))
    .expect("emulator runs");
    let iops = d.result.results[0].jobs[0].iops;
    let schedule = 2_000_000.0 / 4096.0;
    assert!(
        iops <= schedule * 1.05 && iops >= schedule / 5.0,
        "{iops} requests a second against the schedule's {schedule}"
    );
}

#[test]
fn a_cap_beside_several_sizes_counts_bytes_and_a_poisson_process_keeps_its_mean() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's rate_iops is rate_iops times the smallest size in bytes a
    // second: 4 000 x 4 KiB on a 4k/50:64k/50 split (34 KiB a request on
    // average) lets about 470 requests a second go, not 4 000. A thread
    // paced by its count of requests would issue eight times more bytes.
    // Late wake-ups only slow a paced thread: from below, a fifth.
    let cap_bytes = 4_000.0 * 4096.0;
    let mut split = io_job("split", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut split.work {
        io.rate_iops = Some(4_000);
        io.shape.bssplit = cint_scenario::shape::parse_bssplit("4k/50:64k/50")
            .expect("a valid split")
            .0;
    }
    // Under a Poisson process the gaps are exponential around one
    // request's share: 500 a second, 2 ms apart on average; over a
    // hundred requests their mean is within a third.
    let mut poisson = io_job("poisson", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut poisson.work {
        io.rate_iops = Some(500);
        io.shape.rate_poisson = true;
    }
    let d = cint_emu::run_detailed(&scenario(
        "paced-sizes",
        device(10_000, 4),
        vec![none()],
        vec![split, poisson],
        200 * MS,
    ))
    .expect("emulator runs");
    let jobs = &d.result.results[0].jobs;
    let (split, poisson) = (&jobs[0], &jobs[1]);
    let bw = split.bw_bytes as f64;
    assert!(
        bw <= cap_bytes * 1.05 && bw >= cap_bytes / 5.0,
        "{bw} bytes a second against the cap's {cap_bytes}"
    );
    assert!(
        split.iops < 4_000.0 / 4.0,
        "{} requests a second: counted as requests, not bytes",
        split.iops
    );
    assert!(
        poisson.iops <= 500.0 * 1.34 && poisson.iops >= 500.0 / 5.0,
        "{} requests a second against the Poisson process's 500",
        poisson.iops
    );
}

#[test]
fn a_thread_under_its_rate_floor_ends_with_fios_error_after_the_settle_period() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio judges a floor from two seconds after the ramp, over each
    // `ratecycle` from a first base: a reader of a device taking 5 ms a
    // request, about 200 a second, ends there under a floor of 1 000
    // (fio's EIO), while one beside it with a floor of 50 runs on. The
    // margins are five and four times: a loaded machine's late wake-ups
    // cannot lift 200 to 1 000, nor sink 200 under 50 over a tenth of a
    // second.
    let floored = |name: &str, floor: u64| {
        let mut job = io_job(name, Engine::Psync, 1, 1, 1);
        if let Work::Io(io) = &mut job.work {
            io.shape.rate_min = Some(cint_scenario::MinRate {
                floor: cint_scenario::DirectionRates {
                    unit: cint_scenario::RateUnit::Iops,
                    read: Some(floor),
                    write: None,
                },
                cycle: 100 * MS,
            });
        }
        job
    };
    let sc = scenario(
        "floors",
        device(5 * MS, 4),
        vec![none()],
        vec![floored("under", 1_000), floored("above", 50)],
        2_400 * MS,
    );
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let error = |j: usize| d.result.results[0].jobs[j].fio.as_ref().map(|f| f.error);
    assert_eq!(error(0), Some(5), "{:?}", d.result.notes);
    assert_eq!(error(1), Some(0), "{:?}", d.result.notes);
    let notes: Vec<&String> = d
        .result
        .notes
        .iter()
        .filter(|n| n.contains("rate_iops_min"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", d.result.notes);
    assert!(notes[0].contains("job 'under'"), "{}", notes[0]);
    // It ended there: about 2.1 s of 200 a second, not 2.4 s.
    let under = &d.strategies[0].jobs[0];
    assert!(
        under.completed < 200 * 23 / 10,
        "{} requests: the thread ran on past its floor",
        under.completed
    );
}

/// A job with `latency_target` on `device`, `iodepth` deep.
fn searching(
    device_service: u64,
    units: u32,
    iodepth: u32,
    target: cint_scenario::LatencyTarget,
) -> cint_scenario::Scenario {
    let mut job = io_job("search", Engine::Libaio, iodepth, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.shape.latency_target = Some(target);
    }
    scenario(
        "search",
        device(device_service, units),
        vec![none()],
        vec![job],
        600 * MS,
    )
}

#[test]
fn a_latency_target_met_at_every_depth_settles_at_iodepth_and_ends_the_job() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's search on the emulator's thread, by the simulator's rule: at
    // 10 us a request over four units, 32 in flight take about 80 us, a
    // twentieth of the 2 ms target that a loaded machine cannot reach.
    // Each met 5 ms window doubles the depth (1, 2, 4, ... 32), one more
    // window runs at 32, and the job ends, some 35 ms into a 600 ms run.
    let target = cint_scenario::LatencyTarget {
        target: 2 * MS,
        window: 5 * MS,
        percentile: 99.0,
    };
    let d = cint_emu::run_detailed(&searching(10 * US, 4, 32, target)).expect("emulator runs");
    let notes: Vec<&String> = d
        .result
        .notes
        .iter()
        .filter(|n| n.contains("latency target"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", d.result.notes);
    assert!(
        notes[0].contains("job 'search': latency target 2000000 ns at p99: depth 32 ("),
        "{}",
        notes[0]
    );
    let job = &d.strategies[0].jobs[0];
    assert_eq!(job.submitted, job.completed);
    let (_, from, to) = job.span.expect("it ran");
    assert!(
        to - from < 300 * MS,
        "the job ran {} ms: it did not end when the search did",
        (to - from) / MS
    );
    assert_eq!(
        d.result.results[0].jobs[0].fio.as_ref().map(|f| f.error),
        Some(0)
    );
}

#[test]
fn a_late_request_at_depth_one_ends_the_job_with_fios_timeout_error() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // At a percentile of 100 one request over the target at depth 1 is
    // fio's `lat_fatal`: the thread ends, the job with ETIMEDOUT (110).
    // The device takes 2 ms a request, twenty times the target.
    let target = cint_scenario::LatencyTarget {
        target: 100 * US,
        window: 0,
        percentile: 100.0,
    };
    let d = cint_emu::run_detailed(&searching(2 * MS, 1, 8, target)).expect("emulator runs");
    let job = &d.strategies[0].jobs[0];
    assert_eq!(
        (job.submitted, job.completed),
        (1, 1),
        "{:?}",
        d.result.notes
    );
    assert_eq!(
        d.result.results[0].jobs[0].fio.as_ref().map(|f| f.error),
        Some(110)
    );
    assert!(
        d.result
            .notes
            .iter()
            .any(|n| n.contains("missed at depth 1 (fio ends the job: max latency exceeded)")),
        "{:?}",
        d.result.notes
    );
}

#[test]
fn a_job_in_its_steady_state_ends_there_and_the_job_beside_it_runs_on() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's `ss` by the simulator's rule: with a one-second window the
    // first second is one sample, steady by itself, so the job ends at its
    // first completion after 1 s, where the job beside it, without `ss`,
    // runs the whole 1.6 s. Its figures are over its own second.
    let mut steady = io_job("steady", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut steady.work {
        io.shape.steady = Some(cint_scenario::SteadyState {
            metric: cint_scenario::SteadyMetric::Iops,
            slope: false,
            limit: 10.0,
            percent: true,
            dur: SEC,
            ramp: 0,
        });
    }
    let other = io_job("other", Engine::Psync, 1, 1, 1);
    let mut sc = scenario(
        "steady",
        device(20 * US, 4),
        vec![none()],
        vec![steady, other],
        1_600 * MS,
    );
    sc.warmup = 0;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    // Each job's end, from the run's start, which is no later than the
    // jobs' (the measured window starts a little after them).
    let end = |j: usize| d.strategies[0].jobs[j].span.expect("it ran").2;
    assert!(
        (SEC..1_300 * MS).contains(&end(0)),
        "the steady job ended {} ms in",
        end(0) / MS
    );
    assert!(
        end(1) >= 1_500 * MS,
        "the other job ended {} ms in",
        end(1) / MS
    );
    assert!(
        d.result.notes.iter().any(|n| n.starts_with(
            "strategy 'none': job 'steady': steady state iops:10% over 1 s: attained 100"
        )),
        "{:?}",
        d.result.notes
    );
    let ss = d.result.results[0].jobs[0]
        .fio
        .as_ref()
        .and_then(|f| f.steadystate.clone())
        .expect("fio's steadystate object");
    assert!(
        ss.attained && ss.iops.len() == 1 && ss.iops[0] > 0,
        "{ss:?}"
    );
    assert!(d.result.results[0].jobs[1]
        .fio
        .as_ref()
        .unwrap()
        .steadystate
        .is_none());
    let job = &d.strategies[0].jobs[0];
    assert_eq!(job.submitted, job.completed);
}

#[test]
fn a_cpu_jobs_runtime_counts_from_its_measured_window_as_an_io_jobs_does() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // The warm-up's sleep runs over, so the window begins after the run's
    // start plus the warm-up. A CPU-bound job's runtime (25 ms, the 5 ms
    // warm-up included) counts its measured rest from when its thread
    // sees the window, so it is measured for all 20 ms of it (it stopped
    // short by the overrun when it counted from the run's start).
    let mut cpu = cpu_job("burn");
    cpu.runtime = Some(25 * MS);
    let mut sc = scenario(
        "cpu-runtime",
        device(10 * US, 4),
        vec![none()],
        vec![cpu, io_job("io", Engine::Psync, 1, 1, 1)],
        60 * MS,
    );
    sc.warmup = 5 * MS;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let (_, from, to) = d.strategies[0].jobs[0].span.expect("it ran");
    assert!(
        (20 * MS..30 * MS).contains(&(to - from)),
        "the CPU job was measured for {} us of its 20 ms",
        (to - from) / US
    );
}

#[test]
fn a_cpu_bound_job_of_a_later_group_holds_its_core_only_once_it_runs() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // A synchronous reader for 40 ms, then a CPU-bound job for 20 ms on
    // the same core. While the reader runs alone the core is idle between
    // its requests, so its interrupts go to it waiting there (one
    // wake-up each); the CPU-bound job, refused before 2026-11-29, held
    // the core from the run's start, which sent every interrupt to the
    // handler thread.
    let mut reader = io_job("reader", Engine::Psync, 1, 1, 1);
    reader.runtime = Some(40 * MS);
    // 20 ms after its own 5 ms warm-up.
    let mut burn = cpu_job("burn");
    burn.runtime = Some(25 * MS);
    burn.schedule.group = 1;
    let mut sc = scenario(
        "later-cpu",
        device(10 * US, 4),
        vec![none()],
        vec![reader, burn],
        100 * MS,
    );
    sc.emu.idle_delivery = IdleDelivery::Waiter;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let sd = &d.strategies[0];
    assert!(
        2 * sd.waiter_irqs_total >= sd.irqs_total,
        "{} of {} interrupts went to the waiting reader",
        sd.waiter_irqs_total,
        sd.irqs_total
    );
    // The CPU-bound job started when the reader ended, and burned its
    // 20 ms from there. Its window ends where its thread acts on its
    // runtime, which a busy machine delays (22 ms once, beside another
    // build); a window opened at the run's warm-up's end (5 ms) would
    // span 60 ms.
    let (reader_end, (started, from, to)) = (
        sd.jobs[0].span.expect("it ran").2,
        sd.jobs[1].span.expect("it ran"),
    );
    assert!(started >= reader_end, "{started} before {reader_end}");
    assert!(
        (20 * MS..45 * MS).contains(&(to - from)),
        "{} us",
        (to - from) / US
    );
    // Over its own window, its warm-up not counted (until 2026-11-29 its
    // CPU counted from the run's window: 25 ms over 20, 1.25).
    let cpu = d.result.results[0].jobs[1].cpu_util;
    assert!(
        (0.8..1.15).contains(&cpu),
        "the CPU-bound job was busy {cpu:.2} of its window"
    );
}

#[test]
fn gtod_reduce_runs_with_a_note_that_it_changes_nothing_here() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's gtod_reduce saves fio's own time stamps, which the simulator
    // charges less CPU for; the emulator's threads take theirs whatever
    // the key says. Refused before 2026-11-29, which kept the paper's
    // Figure 5 scenario (scenarios/mixed-fig5.toml) off the emulator.
    let mut job = io_job("aio", Engine::Libaio, 16, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.gtod_reduce = true;
    }
    let d = cint_emu::run_detailed(&scenario(
        "gtod",
        device(10 * US, 4),
        vec![none()],
        vec![job],
        20 * MS,
    ))
    .expect("emulator runs");
    let said: Vec<&String> = d
        .result
        .notes
        .iter()
        .filter(|n| n.contains("gtod_reduce"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", d.result.notes);
    assert!(
        said[0].starts_with("job 'aio': gtod_reduce changes nothing"),
        "{}",
        said[0]
    );
    assert!(d.result.results[0].jobs[0].ios > 0);
}

#[test]
fn a_jobs_exitall_ends_the_others_when_it_ends() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's exitall: the short job's 200 reads take some milliseconds;
    // when its thread ends, the long job's end too, their requests in
    // flight drained, and its window stops there, far short of the run's
    // 600 ms (a loaded machine only stretches the short job, by wake-ups
    // of tens of microseconds each).
    let mut short = io_job("short", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut short.work {
        io.shape.number_ios = Some(200);
        io.shape.exitall = Some(cint_scenario::ExitScope::Group);
    }
    let long = io_job("long", Engine::Libaio, 8, 1, 2);
    let d = cint_emu::run_detailed(&scenario(
        "exitall",
        device(10_000, 4),
        vec![none()],
        vec![short, long],
        600 * MS,
    ))
    .expect("emulator runs");
    let jobs = &d.result.results[0].jobs;
    let window = |j: usize| jobs[j].fio.as_ref().map_or(0, |f| f.runtime_ns);
    // number_ios counts from the ramp's end, as fio's does.
    assert!(d.strategies[0].jobs[0].completed >= 200);
    assert!(
        window(1) < 300 * MS,
        "the long job ran {} ns of the run's 600 ms",
        window(1)
    );
    let long = &d.strategies[0].jobs[1];
    assert!(long.completed > 0);
    assert_eq!(long.submitted, long.completed, "its requests drained");
}

#[test]
fn groups_run_in_turn_each_job_measured_over_its_own_window() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's stonewall: the second group starts when the first has ended,
    // its job 20 ms later still (startdelay); each job has the run's
    // warm-up from its own start and the rest of its runtime after that
    // (105 ms: 100 measured), and its rates are over that window. A
    // loaded machine only delays the second group's start, which the
    // bounds allow for.
    let mut first = io_job("first", Engine::Psync, 1, 1, 1);
    first.runtime = Some(105 * MS);
    let mut second = io_job("second", Engine::Psync, 1, 1, 1);
    second.runtime = Some(105 * MS);
    second.schedule.group = 1;
    second.schedule.startdelay = 20 * MS;
    let d = cint_emu::run_detailed(&scenario(
        "groups",
        device(10_000, 4),
        vec![none()],
        vec![first, second],
        300 * MS,
    ))
    .expect("emulator runs");
    let jobs = &d.strategies[0].jobs;
    let (a, b) = (
        jobs[0].span.expect("started"),
        jobs[1].span.expect("started"),
    );
    let warmup = 5 * MS;
    // The spans count from the run's start; the run's window begins when
    // the warm-up's sleep ends, a fraction of a millisecond late.
    assert_eq!(a.0, 0);
    assert!(a.1 >= warmup && a.1 < warmup + 5 * MS, "{a:?}");
    // Each thread acts on its runtime's end between its waits, a
    // request's time after it, or as long as the machine keeps it from
    // its core: its window ends there.
    let measured = 100 * MS..120 * MS;
    assert!(measured.contains(&(a.2 - a.1)), "{a:?}");
    assert!(
        b.0 >= a.2 + 20 * MS,
        "the second group started at {} ns, before the first ended at {} ns and 20 ms",
        b.0,
        a.2
    );
    assert!(
        b.1 == b.0 + warmup && measured.contains(&(b.2 - b.1)),
        "{b:?}"
    );
    for (j, job) in d.result.results[0].jobs.iter().enumerate() {
        let f = job.fio.as_ref().expect("fio figures");
        assert!(job.ios > 0, "{}: nothing measured", job.name);
        assert!(
            measured.contains(&f.runtime_ns),
            "{}'s window: {} ns",
            job.name,
            f.runtime_ns
        );
        // Its rate is over its own window.
        let iops = job.ios as f64 / (f.runtime_ns as f64 / 1e9);
        assert!(
            (job.iops - iops).abs() < 1.0,
            "job {j}: {} against {iops}",
            job.iops
        );
    }
    let notes = d.result.notes.join("\n");
    assert!(notes.contains("group 1: 'second' started at"), "{notes}");
    assert!(
        notes.contains("its groups ran one after another"),
        "{notes}"
    );
}

#[test]
fn syncs_fall_due_every_few_writes_as_fio_decides_and_are_measured() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's fsync=4 on a synchronous writer: after every fourth write, a
    // call (here on a device without a write cache: a system call with
    // nothing to write), counted in fio's sync figures; fdatasync=2 on
    // another, its calls none of them fsync. The window cuts at most a
    // call's worth either side.
    let writer = |name: &str, fsync: u32, fdatasync: u32| {
        let mut job = io_job(name, Engine::Psync, 1, 1, 1);
        if let Work::Io(io) = &mut job.work {
            io.rw = cint_scenario::Rw::RandWrite;
            io.shape.fsync = fsync;
            io.shape.fdatasync = fdatasync;
        }
        job
    };
    let d = cint_emu::run_detailed(&scenario(
        "syncs",
        device(10_000, 4),
        vec![none()],
        vec![writer("fsync", 4, 0), writer("fdatasync", 0, 2)],
        100 * MS,
    ))
    .expect("emulator runs");
    for (job, every, fsync) in [(0, 4, true), (1, 2, false)] {
        let j = &d.result.results[0].jobs[job];
        let f = j.fio.as_ref().expect("fio figures");
        let (writes, calls) = (f.write.ios, f.sync.ios);
        assert!(writes >= 100, "{}: {writes} writes", j.name);
        assert!(
            (calls * every).abs_diff(writes) <= 2 * every,
            "{}: {calls} calls for {writes} writes, one every {every}",
            j.name
        );
        assert_eq!(
            f.sync.fsync_ios,
            if fsync { calls } else { 0 },
            "{}",
            j.name
        );
        assert!(f.sync.lat.n == calls && f.sync.lat.max > 0, "{}", j.name);
        assert!(j.sync.is_some(), "{}: the result's sync calls", j.name);
    }
}

/// `job` in flow 1 with `weight`, sleeping 100 us when ahead.
fn in_flow_one(mut job: cint_scenario::Job, weight: u32) -> cint_scenario::Job {
    if let Work::Io(io) = &mut job.work {
        io.shape.flow = weight;
        io.shape.flow_id = 1;
        io.shape.flow_sleep = 100 * US;
    }
    job
}

#[test]
fn jobs_in_one_flow_keep_their_requests_in_proportion_to_their_weights() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's flow.fio: weights 8 and 1 on one flow id, a thread ahead of
    // its share sleeping 100 us: the light job issues about one request
    // in nine. Without the flow each would issue about as many as the
    // other (one core, one device). The light job is a 16-deep libaio
    // one: each submission call is a pass, however deep its queue.
    let weighted = |name: &str, weight: u32| {
        let job = if weight == 1 {
            io_job(name, Engine::Libaio, 16, 1, 1)
        } else {
            io_job(name, Engine::Psync, 1, 1, 1)
        };
        in_flow_one(job, weight)
    };
    let d = cint_emu::run_detailed(&scenario(
        "flow",
        device(10_000, 4),
        vec![none()],
        vec![weighted("heavy", 8), weighted("light", 1)],
        100 * MS,
    ))
    .expect("emulator runs");
    let jobs = &d.strategies[0].jobs;
    let (heavy, light) = (jobs[0].completed as f64, jobs[1].completed as f64);
    let share = light / (heavy + light);
    assert!(
        heavy + light > 200.0 && (0.06..0.17).contains(&share),
        "light {light} of {} requests",
        heavy + light
    );
}

/// fio counts each job's flow weight from the run's setup: a job of a
/// later group holds the jobs of the flow before it (fio 3.33: one
/// request in a second), and the run says why. Until 2026-11-29 a
/// thread's weight counted from its start, and the threads the scheduler
/// let run first issued alone until the others had started (3 ms, and a
/// fifth to two thirds of the requests of the test above, once in five).
#[test]
fn a_later_groups_flow_weight_holds_the_jobs_before_it() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let weighted = |name: &str, weight: u32, group: u32| {
        let mut job = in_flow_one(io_job(name, Engine::Psync, 1, 1, 1), weight);
        job.schedule.group = group;
        job.runtime = Some(30 * MS);
        job
    };
    let d = cint_emu::run_detailed(&scenario(
        "flow-groups",
        device(10_000, 4),
        vec![none()],
        vec![weighted("first", 1, 0), weighted("second", 8, 1)],
        60 * MS,
    ))
    .expect("emulator runs");
    let jobs = &d.strategies[0].jobs;
    assert_eq!(jobs[0].completed, 1, "{:?}", jobs[0]);
    assert!(jobs[1].completed > 100, "{:?}", jobs[1]);
    assert!(
        d.result
            .notes
            .iter()
            .any(|n| n.starts_with("flow_id 1:") && n.contains("'second' starts later")),
        "{:?}",
        d.result.notes
    );
}

#[test]
fn groups_of_jobs_that_end_by_their_count_are_each_measured_to_their_end() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // What fio's import makes of two stonewalled jobs sized by
    // number_ios: each has the hour as its runtime bound, and the run
    // ends with the last. Each job's window ends where it ended, not at
    // that bound or the run's end, so its rate is its own.
    let counted = |name: &str, group: u32| {
        let mut job = io_job(name, Engine::Psync, 1, 1, 1);
        job.runtime = Some(3_600 * SEC);
        job.schedule.group = group;
        if let Work::Io(io) = &mut job.work {
            io.shape.number_ios = Some(300);
        }
        job
    };
    let mut sc = scenario(
        "counted-groups",
        device(10_000, 4),
        vec![none()],
        vec![counted("first", 0), counted("second", 1)],
        2 * SEC,
    );
    sc.run_to_end = true;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let (a, b) = (
        d.strategies[0].jobs[0].span.expect("started"),
        d.strategies[0].jobs[1].span.expect("started"),
    );
    assert!(
        b.0 >= a.2,
        "the second started at {} ns, before the first ended at {} ns",
        b.0,
        a.2
    );
    // Each window is its own job's part of the run, which both shared.
    let run = d.strategies[0].window_ns;
    for job in &d.result.results[0].jobs {
        let window = job.fio.as_ref().map_or(0, |f| f.runtime_ns);
        assert!(
            window < run * 9 / 10,
            "{}: a window of {window} ns of the run's {run}",
            job.name
        );
        assert!(job.ios > 0, "{}: nothing measured", job.name);
    }
}

#[test]
fn a_job_whose_delay_outlasts_the_run_waits_without_waking_and_says_so() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // Its thread waits on its group's signal, which the run's end gives:
    // it does not wake to look (it used to, every 5 ms: a dozen switches
    // over this window), it issues nothing, and the note says it did not
    // start.
    let first = io_job("first", Engine::Psync, 1, 1, 1);
    let mut late = io_job("late", Engine::Psync, 1, 1, 1);
    late.schedule.startdelay = 10 * SEC;
    late.runtime = Some(50 * MS);
    let d = cint_emu::run_detailed(&scenario(
        "late",
        device(10_000, 4),
        vec![none()],
        vec![first, late],
        60 * MS,
    ))
    .expect("emulator runs");
    let late = &d.result.results[0].jobs[1];
    assert_eq!(late.ios, 0);
    assert!(
        late.context_switches <= 3,
        "{} context switches of a thread that only waited",
        late.context_switches
    );
    assert!(d.strategies[0].jobs[1].span.is_none());
    let notes = d.result.notes.join("\n");
    assert!(
        notes.contains("'late' did not start before the run ended"),
        "{notes}"
    );
}

#[test]
fn split_and_range_sizes_are_drawn_per_request_as_the_simulator_draws_them() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // Half 4 KiB, half 64 KiB: 34 KiB a request on average; a range of 4
    // to 10 KiB draws 4 and 8 KiB two fifths each and 10 KiB the rest:
    // 6.8 KiB. A few hundred requests hold each mean within a tenth.
    for (shape, mean) in [("bssplit", 34.0 * 1024.0), ("bsrange", 6.8 * 1024.0)] {
        let mut job = io_job("sizes", Engine::Libaio, 4, 1, 1);
        if let Work::Io(io) = &mut job.work {
            match shape {
                "bssplit" => {
                    io.shape.bssplit = cint_scenario::shape::parse_bssplit("4k/50:64k/50")
                        .expect("valid")
                        .0;
                }
                _ => io.shape.bsrange = Some((4096, 10 * 1024)),
            }
        }
        let d = run_long_enough(400, |duration| {
            scenario(
                "sizes",
                device(10_000, 4),
                vec![none()],
                vec![job.clone()],
                duration,
            )
        });
        let j = &d.result.results[0].jobs[0];
        let per_request = j.bw_bytes as f64 / j.iops;
        assert!(
            (per_request - mean).abs() < mean / 10.0,
            "{shape}: {per_request} bytes a request, against {mean}"
        );
        let detail = &d.strategies[0].jobs[0];
        assert_eq!(detail.completed, detail.submitted, "{shape}");
        assert_eq!(detail.errors, 0, "{shape}: {:?}", detail.first_error);
    }
}

/// Runs `job` alone on a fast device until it ends by its size, as the
/// fio import's `run_to_end` does (two seconds at most).
fn run_to_its_end(name: &str, job: cint_scenario::Job) -> cint_emu::RunDetail {
    let mut sc = scenario(name, device(10_000, 4), vec![none()], vec![job], 2_000 * MS);
    sc.warmup = 0;
    sc.run_to_end = true;
    cint_emu::run_detailed(&sc).expect("emulator runs")
}

/// fio's figures of `job` run alone to its end ([`run_to_its_end`]).
fn fio_at_its_end(name: &str, job: cint_scenario::Job) -> cint_report::FioJobData {
    let d = run_to_its_end(name, job);
    d.result.results[0].jobs[0]
        .fio
        .clone()
        .expect("fio figures")
}

#[test]
fn a_sized_job_issues_its_io_size_or_count_and_the_run_ends_with_it() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's run of a job that ends by its size (the fio import's
    // `run_to_end`): 1 MiB of 4 KiB reads is 256 requests, each issued
    // once and back once, in batches that stop at the size; the run ends
    // with the job, long before its two-second bound, and the job's rates
    // are over its own window.
    // `number_ios = 256` alike.
    let cases = [
        (Engine::Psync, 1, 1, false),
        (Engine::Libaio, 16, 6, false),
        (Engine::Libaio, 16, 6, true),
    ];
    for (engine, depth, batch, count) in cases {
        let mut job = io_job("sized", engine, depth, batch, 1);
        if let Work::Io(io) = &mut job.work {
            match count {
                true => io.shape.number_ios = Some(256),
                false => io.shape.io_size = Some(1 << 20),
            }
        }
        let d = run_to_its_end("sized", job);
        let detail = &d.strategies[0].jobs[0];
        assert_eq!(
            (detail.submitted, detail.completed),
            (256, 256),
            "{engine:?}"
        );
        let j = &d.result.results[0].jobs[0];
        assert_eq!(j.ios, 256, "{engine:?}");
        assert!(
            d.result.duration_ns < 1_000 * MS,
            "{engine:?}: the run lasted {} ns",
            d.result.duration_ns
        );
        // Over its own window, which ends at its last completion, within
        // the run's (which ends when the coordinator has seen it end).
        let over_the_run = j.ios as f64 / (d.result.duration_ns as f64 / 1e9);
        assert!(
            j.iops >= over_the_run,
            "{engine:?}: {} a second against {over_the_run} over the run",
            j.iops
        );
    }
}

/// fio's passes over a file (`pass_size`, crate
/// `cint_scenario::passes`): the sync due after a pass's last write is
/// made where fio's loop goes on past it, and again as the next pass
/// begins; after the job's last pass only where its bytes stop short of
/// fio's limit. 4 KiB writes of a 64 KiB pass with `fsync=1`, counted as
/// fio 3.33 counts them (docs/evidence/fio-beside-model.sh, on 1 MiB).
#[test]
fn syncs_at_the_ends_of_passes_are_fios() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let cases = [
        // (engine, file, passes, fio's byte limit, fsyncs)
        (Engine::Psync, 64, 2, None, 32),
        (Engine::Libaio, 64, 2, None, 31),
        (Engine::Psync, 64, 3, None, 49),
        (Engine::Libaio, 64, 3, None, 47),
        (Engine::Psync, 66, 1, Some(66), 16),
        (Engine::Libaio, 66, 2, Some(132), 33),
        // The passes end at fio's limit: no sync after the last write.
        (Engine::Psync, 66, 2, None, 32),
        // One pass of the file, short of the limit: psync looks again.
        (Engine::Psync, 64, 1, Some(66), 16),
        (Engine::Libaio, 64, 1, Some(66), 15),
        // A queueing engine's pass that ends once it has queued a size
        // below its file's: no sync there, one as the next pass begins
        // (`size=64k filesize=128k loops=2`: 32 writes, 31 fsyncs).
        (Engine::Libaio, 128, 2, None, 31),
    ];
    for (engine, file_kib, passes, limit_kib, fsyncs) in cases {
        let mut job = io_job("passes", engine, 1, 1, 1);
        if let Work::Io(io) = &mut job.work {
            io.rw = cint_scenario::Rw::Write;
            io.size = file_kib << 10;
            io.shape.io_size = Some(passes * (64 << 10));
            io.shape.pass_size = Some(64 << 10);
            io.shape.byte_limit = limit_kib.map(|k: u64| k << 10);
            io.shape.fsync = 1;
        }
        let f = fio_at_its_end("passes", job);
        assert_eq!(
            (f.write.ios, f.sync.ios),
            (passes * 16, fsyncs),
            "{engine:?}, {file_kib} KiB file, {passes} passes"
        );
    }
}

/// A sync that falls due within a submission batch ends the batch, and
/// the thread reaps before the call, as fio does and the simulator
/// models (`cint_scenario::passes::PassSyncs::sync_ends_batch`): 4 KiB
/// writes over 1 MiB at depth 16 in batches of 8, reaping at least 8,
/// with `fsync=3`, make 21 fsyncs in fio 3.33 and the simulator (10 where
/// the sync was looked for between batches only), and 15 drained to
/// `iodepth_low=4`. The emulator's reaps
/// take what has completed, which timing may move by a call or two.
#[test]
fn a_sync_due_within_a_batch_ends_it() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("cut", Engine::Libaio, 16, 8, 1);
    if let Work::Io(io) = &mut job.work {
        io.rw = cint_scenario::Rw::Write;
        io.size = 1 << 20;
        io.shape.io_size = Some(1 << 20);
        io.shape.fsync = 3;
    }
    let f = fio_at_its_end("cut", job.clone());
    assert_eq!(f.write.ios, 256);
    assert!(f.sync.ios.abs_diff(21) <= 2, "{} fsyncs", f.sync.ios);
    // Drained to iodepth_low = 4 after a full queue: 15 in fio 3.33 and
    // the simulator.
    if let Work::Io(io) = &mut job.work {
        io.iodepth_low = 4;
    }
    let f = fio_at_its_end("cut", job);
    assert_eq!(f.write.ios, 256);
    assert!(
        f.sync.ios.abs_diff(15) <= 2,
        "{} fsyncs drained",
        f.sync.ios
    );
}

/// fio draws a request's size again until it fits what is left of the
/// file's pass (io_u.c `get_next_buflen`), as the simulator draws it: two
/// passes in order over a 200 KiB file of 4 and 16 KiB writes write 400
/// KiB, not a request more.
#[test]
fn a_pass_of_several_sizes_fills_its_file() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("fills", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.rw = cint_scenario::Rw::Write;
        io.size = 200 << 10;
        io.shape.bssplit = cint_scenario::shape::parse_bssplit("4k/70:16k/30")
            .expect("a split")
            .0;
        io.shape.io_size = Some(400 << 10);
        io.shape.pass_size = Some(200 << 10);
    }
    let f = fio_at_its_end("fills", job);
    assert_eq!(f.write.bytes, 400 << 10);
}

/// fio's random map, as the simulator draws it
/// (`cint_scenario::offsets`): a random job of two sizes over a 1 MiB
/// file reads each of its blocks once in a pass, a request that meets a
/// block already read cut there. A 1 MiB `io_size` is then exactly one
/// pass, in more requests than the 30 or so of whole 4 and 64 KiB ones
/// (the emulator drew whole requests anywhere before 2026-11-29).
#[test]
fn a_random_job_of_two_sizes_is_cut_by_fio_random_map() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("mapped", Engine::Libaio, 4, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.size = 1 << 20;
        io.shape.io_size = Some(1 << 20);
        io.shape.bssplit = cint_scenario::shape::parse_bssplit("4k/50:64k/50")
            .expect("a valid split")
            .0;
    }
    let d = run_to_its_end("map", job);
    let j = &d.result.results[0].jobs[0];
    let read = &j.fio.as_ref().expect("fio figures").read;
    assert_eq!(read.bytes, 1 << 20, "one pass of the file");
    assert!(read.ios > 40, "{} requests: none was cut", read.ios);
}

#[test]
fn caps_per_direction_pace_each_direction_on_its_own_schedule() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's `rate_iops=1000,200` on a 50/50 randrw: 1 000 reads and 200
    // writes a second, each direction on its own schedule (fio 3.33 and
    // the simulator alike, docs/FIO.md), where one schedule for both
    // would give 600 of each. Late wake-ups only slow a thread down, so
    // the caps bound from above; from below, half of them.
    let mut job = io_job("paced", Engine::Libaio, 4, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.rw = cint_scenario::Rw::RandRw;
        io.rwmixread = 50;
        io.shape.rate_per_direction = Some(cint_scenario::DirectionRates {
            unit: cint_scenario::RateUnit::Iops,
            read: Some(1_000),
            write: Some(200),
        });
    }
    let d = cint_emu::run_detailed(&scenario(
        "directions",
        device(10_000, 4),
        vec![none()],
        vec![job],
        300 * MS,
    ))
    .expect("emulator runs");
    let j = &d.result.results[0].jobs[0];
    let fio = j.fio.as_ref().expect("fio figures");
    let per_s = |ios: u64| ios as f64 / 0.3;
    let (reads, writes) = (per_s(fio.read.ios), per_s(fio.write.ios));
    assert!(
        (500.0..=1_050.0).contains(&reads) && (100.0..=210.0).contains(&writes),
        "{reads} reads and {writes} writes a second, against caps of 1000 and 200"
    );
}

#[test]
fn think_time_pauses_after_each_request_with_a_sleep_when_it_is_long() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // 2 ms of think time after every request, longer than fio's sleep
    // granularity on any machine: a nanosleep each time, so two wake-ups
    // per request (the sleep's, the completion's), and never more than
    // one request per 2 ms.
    let mut job = io_job("thinker", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.shape.thinktime = 2 * MS;
    }
    let d = run_until(
        60 * MS,
        480 * MS,
        |duration| {
            scenario(
                "think",
                device(10_000, 4),
                vec![none()],
                vec![job.clone()],
                duration,
            )
        },
        |d| d.result.results[0].jobs[0].ios >= 20,
    );
    let j = &d.result.results[0].jobs[0];
    assert!(j.ios >= 20, "{} requests", j.ios);
    // At most one request per 2 ms: in a window of W, W / 2 ms of them
    // plus the one that may complete right as the window opens (a bound
    // of 500 a second alone failed once, at 514 a second).
    let window_s = j.ios as f64 / j.iops;
    assert!(
        j.ios as f64 <= window_s / 0.002 + 1.0,
        "{} requests in {window_s} s with 2 ms pauses",
        j.ios
    );
    let per_io = j.wakeups as f64 / j.ios as f64;
    assert!(per_io >= 1.5, "{per_io} wake-ups per request");
}

#[test]
fn rate_ign_think_moves_the_schedule_on_by_the_think_time() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // 1 000 requests a second and 10 ms of think time after every 5. fio
    // catches up after each pause: the 5 requests go at once, about 5 per
    // 10 ms, unless rate_ign_think moves the schedule on by the pause less
    // one request's share: then they go 1 ms apart, 5 per 14 ms, about 360
    // a second. The bounds leave room for a loaded machine's late
    // wake-ups, which only slow a thread down.
    let rate = |ignore: bool| {
        let mut job = io_job("paced", Engine::Psync, 1, 1, 1);
        if let Work::Io(io) = &mut job.work {
            io.rate_iops = Some(1_000);
            io.shape.thinktime = 10 * MS;
            io.shape.thinktime_blocks = 5;
            io.shape.rate_ign_think = ignore;
        }
        let d = cint_emu::run_detailed(&scenario(
            "ign",
            device(10_000, 4),
            vec![none()],
            vec![job],
            300 * MS,
        ))
        .expect("emulator runs");
        d.result.results[0].jobs[0].iops
    };
    let (catch_up, ignore) = (rate(false), rate(true));
    assert!(ignore <= 420.0, "rate_ign_think: {ignore} a second");
    assert!(
        catch_up >= 1.2 * ignore,
        "catching up: {catch_up} a second, against {ignore}"
    );
}

/// Runs the scenario `build` makes for a window of 30 ms, doubling it (up
/// to 480 ms) until the first job of the first strategy completed at least
/// `ios` requests in the measured window. A loaded machine, where the job
/// thread waits for a CPU behind the real-time handler, gets its sample in
/// a longer window instead of failing for want of one.
fn run_long_enough(
    ios: u64,
    build: impl Fn(cint_policy::Nanos) -> cint_scenario::Scenario,
) -> cint_emu::RunDetail {
    run_until(30 * MS, 480 * MS, build, |d| {
        d.result.results[0].jobs[0].ios >= ios
    })
}

/// Runs the scenario `build` makes for a window of `first`, doubling it
/// (up to `last`) until `enough` holds of the result; returns the last
/// run, for the caller's assertions to fail on if `enough` never held.
fn run_until(
    first: cint_policy::Nanos,
    last: cint_policy::Nanos,
    build: impl Fn(cint_policy::Nanos) -> cint_scenario::Scenario,
    enough: impl Fn(&cint_emu::RunDetail) -> bool,
) -> cint_emu::RunDetail {
    let mut duration = first;
    loop {
        let d = cint_emu::run_detailed(&build(duration)).expect("emulator runs");
        if enough(&d) || duration >= last {
            return d;
        }
        duration *= 2;
    }
}

/// One request at a time: the thread sleeps after each submission and the
/// interrupt's delivery wakes it, so at most one wake-up per IO (both
/// counted when the completion is taken). A completion that beats the
/// thread to sleep (it was preempted for a whole service time) saves one,
/// so "about one" is at least half here.
fn assert_about_one_job_wakeup_per_io(d: &cint_emu::RunDetail) {
    let job = &d.result.results[0].jobs[0];
    assert!(job.ios >= 30, "only {} IOs", job.ios);
    assert!(
        job.wakeups <= job.ios + 1,
        "{} wake-ups, {} IOs",
        job.wakeups,
        job.ios
    );
    assert!(
        2 * job.wakeups >= job.ios,
        "{} wake-ups, {} IOs",
        job.wakeups,
        job.ios
    );
    assert_eq!(d.strategies[0].jobs[0].wakeups, job.wakeups);
}

#[test]
fn psync_under_none_on_an_idle_core_wakes_one_thread_per_interrupt() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let d = psync_qd1_under_none(IdleDelivery::Waiter, false);
    assert_about_one_job_wakeup_per_io(&d);
    let r = &d.result.results[0];
    let sd = &d.strategies[0];
    // The job thread waits alone on its core, so interrupts are delivered
    // to it, and it runs the handler's pass itself: the handler thread is
    // woken only by interrupts that came while the job thread was not yet
    // (or no longer) waiting.
    assert!(
        2 * sd.waiter_irqs_total >= sd.irqs_total,
        "{} of {} interrupts went to the waiting thread",
        sd.waiter_irqs_total,
        sd.irqs_total
    );
    assert!(
        sd.waiter_irqs_total + sd.handler_wakeups_total <= sd.irqs_total + 1,
        "{} + {} wake-ups for {} interrupts",
        sd.waiter_irqs_total,
        sd.handler_wakeups_total,
        sd.irqs_total
    );
    // The strategy's wake-ups are the job's plus the handler's: about one
    // thread per interrupt, give or take the window's edges. The threads'
    // counters and the device's are read one after the other, so a
    // measuring thread preempted between the two reads (a loaded 2-core
    // machine) lets a few more through: 1% of the interrupts, besides 2.
    let handler = r.wakeups - r.jobs[0].wakeups;
    assert!(handler < r.jobs[0].wakeups, "{handler} handler wake-ups");
    assert!(
        r.wakeups <= r.interrupts + 2 + r.interrupts / 100,
        "{} wake-ups, {} IRQs",
        r.wakeups,
        r.interrupts
    );
}

#[test]
fn psync_under_none_through_the_handler_thread_wakes_two_threads_per_interrupt() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let d = psync_qd1_under_none(IdleDelivery::Handler, false);
    assert_about_one_job_wakeup_per_io(&d);
    let r = &d.result.results[0];
    assert_eq!(d.strategies[0].waiter_irqs_total, 0);
    // The strategy adds the handler's wake-ups: one per interrupt that
    // found it asleep, at most one per interrupt.
    let handler = r.wakeups - r.jobs[0].wakeups;
    assert!(handler > 0, "the handler slept between interrupts");
    assert!(
        handler <= r.interrupts + 2,
        "{handler} > {} IRQs",
        r.interrupts
    );
}

#[test]
fn a_busy_thread_on_the_core_sends_every_interrupt_to_the_handler_thread() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // A `kind = "cpu"` job shares the core: the core is never idle, so the
    // real-time handler must preempt it, and the waiting thread is never
    // handed an interrupt.
    let d = psync_qd1_under_none(IdleDelivery::Waiter, true);
    let sd = &d.strategies[0];
    assert!(sd.irqs_total > 0);
    assert_eq!(sd.waiter_irqs_total, 0, "{sd:?}");
    assert!(sd.handler_wakeups_total > 0);
    assert_eq!(sd.jobs[0].strays, 0);
    assert_eq!(sd.jobs[0].submitted, sd.jobs[0].completed);
}

#[test]
fn urgent_only_irqs_past_an_unreaped_entry_never_overflow_the_completion_queue() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // One unmarked completion that no policy interrupt will reap for a long
    // time (quiescence 10 s, threshold 1000), then urgent requests at QD1:
    // each is reaped out of order by an urgent-only IRQ, which cannot move
    // the head past the unmarked entry, so the window between head and
    // tail grows by one per request. 6000 requests overflow a 4096-entry
    // queue once.
    const N: u64 = 6_000;
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    let emulator = Emulator::start(DeviceConfig {
        device_cpu: *cpus.last().expect("a cpu"),
        queues: vec![QueueConfig {
            app_cpu: cpus[0],
            mode: QueueMode::Interrupt(PolicyConfig::Cinterrupts(
                CinterruptsParams::with_adaptive(10 * SEC, 1000),
            )),
        }],
        backend: BackendConfig::Synthetic {
            profile: device(1_000, 4),
            seed: 1,
        },
        realtime: Realtime::Prefer,
        idle_delivery: Default::default(),
    })
    .expect("emulator starts");
    let request = |hint, user_data| Request {
        op: Op::Read,
        offset: 0,
        len: 4096,
        hint,
        buf: None,
        user_data,
    };
    let mut lingering = emulator.client(0, 1).expect("client");
    let mut urgent = emulator.client(0, 1).expect("client");
    lingering
        .submit(request(Hint::Unmarked, u64::MAX))
        .expect("submit");
    let mut seen = vec![0u32; N as usize];
    for i in 0..N {
        let c = urgent
            .submit_and_wait(request(Hint::Urgent, i), WaitMode::Block)
            .expect("urgent request");
        assert_eq!(c.result, Ok(4096));
        assert_eq!(c.by, DeliveredBy::UrgentIrq, "urgent request {i}");
        seen[c.user_data as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n == 1));
    let mut out = Vec::new();
    assert_eq!(lingering.wait(1, WaitMode::Block, &mut out), 1);
    assert_eq!(out[0].user_data, u64::MAX);
    assert_eq!(out[0].result, Ok(4096));
    // Released by the full interrupt the device raised when the queue
    // was full, the only full interrupt of the run.
    assert_eq!(out[0].by, DeliveredBy::FullIrq);
    let stats = emulator.stats();
    assert_eq!(stats.queue_full_irqs, vec![1]);
    assert_eq!(stats.urgent_irqs, vec![N]);
    assert_eq!(stats.irqs, vec![N + 1]);
    assert_eq!((urgent.strays(), lingering.strays()), (0, 0));
    assert_eq!((urgent.in_flight(), lingering.in_flight()), (0, 0));
    drop((urgent, lingering));
    let stats = emulator.shutdown().expect("clean shutdown");
    assert_eq!(stats.total_completions(), N + 1);
    assert_eq!(stats.cancelled, 0);
}

#[test]
fn the_shipped_async_batch_scenario_under_cinterrupts_raises_at_most_a_tenth_of_the_irqs_of_none() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // Loaded as `cint emu scenarios/async-batch.toml --set ...` loads it.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/async-batch.toml");
    let build = |duration: cint_policy::Nanos| {
        let sets = [
            format!("duration={}us", duration / 1_000),
            "warmup=5ms".to_string(),
        ];
        cint_scenario::load_file(&path, &sets).expect("the shipped scenario loads")
    };
    // As above: a loaded machine gets its 500 completions in a longer run.
    let d = run_until(40 * MS, 640 * MS, build, |d| {
        d.strategies.iter().all(|sd| sd.completions_total >= 500)
    });
    // Whole-run counts, not rates over the window: interrupts per
    // completion do not depend on how fast a loaded machine went, nor on
    // where the window's edges fell. A stall of the device or job thread
    // adds at most one quiescence interrupt under cinterrupts, against a
    // Barrier interrupt every 16 completions.
    let per_completion = |name: &str| {
        let sd = d
            .strategies
            .iter()
            .find(|sd| sd.name == name)
            .unwrap_or_else(|| panic!("strategy {name} in the scenario"));
        assert!(
            sd.completions_total >= 500,
            "{name}: only {} completions",
            sd.completions_total
        );
        let job = &sd.jobs[0];
        assert_eq!((job.strays, job.errors), (0, 0), "{name}");
        assert_eq!(job.submitted, job.completed, "{name}");
        sd.irqs_total as f64 / sd.completions_total as f64
    };
    let none = per_completion("none");
    let cint = per_completion("cinterrupts");
    assert!(none >= 0.99, "none fires per completion: {none}");
    assert!(
        cint <= none / 10.0,
        "cinterrupts {cint} IRQs per IO vs none {none}"
    );
}

#[test]
fn the_result_document_names_every_job_of_every_strategy() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let build = |duration| {
        scenario(
            "doc",
            device(10_000, 4),
            vec![
                none(),
                adaptive(DEFAULT_DELTA, 32),
                hybrid(cint_scenario::HybridSleep::Min),
            ],
            vec![
                hipri(io_job("sync", Engine::Pvsync2, 1, 1, 2)),
                cpu_job("burn"),
            ],
            duration,
        )
    };
    // The burner shares its core with two sync threads (spinning ones
    // under hybrid polling) and whatever else the machine runs: in a
    // 20 ms window, shorter than one round of the scheduler's time slices
    // on a loaded core, it may not be scheduled at all. A longer window
    // (up to 640 ms, many rounds) is one in which it must have run.
    let d = run_until(20 * MS, 640 * MS, build, |d| {
        d.result.results.iter().all(|r| r.jobs[1].cpu_util > 0.0)
    });
    let s = build(d.result.duration_ns);
    let r = &d.result;
    assert_eq!(r.substrate, "emu");
    assert_eq!(r.results.len(), 3);
    for (sr, sd) in r.results.iter().zip(&d.strategies) {
        let names: Vec<&str> = sr.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["sync", "burn"]);
        // Over the whole run, not the measured window: on a loaded
        // machine two sync threads and a burner sharing one CPU may see no
        // completion inside the window.
        assert!(sd.jobs[0].completed > 0, "{}", sr.strategy);
        assert!(sr.jobs[0].lat_ns.n == sr.jobs[0].ios);
        assert_eq!(sr.jobs[1].ios, 0);
        assert!(sr.jobs[1].cpu_util > 0.0, "{}: the burner ran", sr.strategy);
        assert!(sr.cpu_util > 0.0 && sr.cpu_util <= 1.0);
        // fio's view: the directions add up, no slat (a ring write is
        // not a system call), one entry per job with all its threads.
        for (job, sj) in sr.jobs.iter().zip(&s.jobs) {
            let fio = job.fio.as_ref().expect("fio data measured");
            assert_eq!(fio.threads, sj.numjobs);
            assert_eq!(fio.read.ios + fio.write.ios, job.ios);
            assert_eq!(fio.read.clat.n, fio.read.ios);
            assert_eq!(fio.read.lat, fio.read.clat);
            assert_eq!(fio.read.slat.n + fio.write.slat.n, 0);
        }
        assert_eq!(sr.jobs[0].fio.as_ref().unwrap().write.ios, 0, "a reader");
    }
    assert_eq!(r.results[2].interrupts, 0);
}

#[test]
fn too_many_application_cores_is_a_clear_error() {
    let _g = serial();
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity").len();
    let mut job = io_job("far", Engine::Psync, 1, 1, 1);
    job.cpu = cpus as u32; // needs cpus + 2 CPUs in all
    let s = scenario("far", device(10_000, 4), vec![none()], vec![job], MS);
    let err = cint_emu::run(&s).expect_err("not enough cores");
    let msg = err.to_string();
    let needed = format!("needs {} cores", cpus + 2);
    assert!(
        matches!(&err, cint_emu::EmuError::Unsupported { key, .. } if key == "job.far.cpu"),
        "{msg}"
    );
    assert!(
        msg.contains(&needed) && msg.contains("put the jobs on"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

/// A write job's hybrid sleep is its writes' class, as the block layer's
/// is the polled request's (Linux 5.0 `blk_mq_poll_nsecs`): with the read
/// class, which no request of the job ever feeds, it would never sleep.
#[test]
fn a_write_job_sleeps_on_its_writes_means_under_hybrid_polling() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = hipri(io_job("w", Engine::Pvsync2, 1, 1, 1));
    if let Work::Io(io) = &mut job.work {
        io.rw = cint_scenario::Rw::Write;
    }
    // Past the statistics' first 100 ms window.
    let s = scenario(
        "hybrid-write",
        device(10_000, 4),
        vec![hybrid(cint_scenario::HybridSleep::Adaptive)],
        vec![job],
        250 * MS,
    );
    let d = cint_emu::run_detailed(&s).expect("emulator runs");
    let j = &d.strategies[0].jobs[0];
    assert!(j.completed > 0, "{j:?}");
    assert!(
        j.wakeups > 0,
        "the writer slept on its writes' means: {j:?}"
    );
}

/// A job whose `runtime` is shorter than the run is measured over its own
/// window, as the simulator measures it: its rates are per second of what
/// it measured, not of the run. Its `runtime` counts from its start, the
/// warm-up included (as fio's import writes `ramp_time + runtime`): under
/// a 20 ms warm-up a job of 30 ms measures 10 ms, and stops submitting
/// there. Until 2026-11-29 the emulator counted the whole runtime from
/// the window's opening, and measured 30 ms where the simulator measured
/// 10.
#[test]
fn a_job_with_a_shorter_runtime_is_measured_over_its_own_window() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut short = io_job("short", Engine::Libaio, 4, 1, 1);
    short.runtime = Some(30 * MS);
    let long = io_job("long", Engine::Libaio, 4, 1, 1);
    let mut sc = scenario(
        "runtimes",
        device(10_000, 4),
        vec![none()],
        vec![short, long],
        60 * MS,
    );
    sc.warmup = 20 * MS;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let jobs = &d.result.results[0].jobs;
    let window = |k: usize| jobs[k].ios as f64 / jobs[k].iops;
    assert!(jobs[0].ios > 0 && jobs[1].ios > 0, "{jobs:?}");
    // Its thread acts on its end between its waits: a request's time
    // after it, or as long as the machine keeps it from its core (once
    // 12 ms in CI), which its window then holds; never the 30 ms the
    // runtime counted after the warm-up gave.
    assert!(
        (0.010..0.025).contains(&window(0)),
        "short job over {} s",
        window(0)
    );
    assert!(window(1) >= 0.060, "long job over {} s", window(1));
    // Its last completion came with its last requests, issued before its
    // stop: within its window, and a request's time after it at most.
    let (_, last) = d.strategies[0].jobs[0].counted_span.expect("it counted");
    let end = (window(0) * 1e9) as i64;
    assert!(
        last < end + MS as i64,
        "its last completion {last} ns in, its window {end} ns"
    );
}

#[test]
fn what_completes_outside_the_window_is_not_counted() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // A device held to 1 GB/s by its transfer pipe, kept busy by 32
    // requests in flight: it completes one 4 KiB read every 4.1 us, also
    // while the coordinator takes its closing samples after the window.
    // Those completions used to be counted against the window that had
    // ended, so the job could show more than the device's bandwidth; and
    // a reap made in the warm-up just before the window opened, but
    // accounted just after, was counted in it.
    let bandwidth = 1_000_000_000u64;
    let mut dev = device(2_000, 8);
    dev.read.bandwidth = bandwidth;
    let mut sc = scenario(
        "window-edges",
        dev,
        vec![none()],
        vec![io_job("reader", Engine::Libaio, 32, 1, 1)],
        20 * MS,
    );
    sc.warmup = 5 * MS;
    for round in 0..3 {
        let d = cint_emu::run_detailed(&sc).expect("emulator runs");
        let window = d.strategies[0].window_ns;
        let detail = &d.strategies[0].jobs[0];
        let (first, last) = detail.counted_span.expect("the reader counted completions");
        assert!(
            first >= 0,
            "round {round}: a completion reaped {} ns before the window opened was counted",
            -first
        );
        assert!(
            last <= window as i64,
            "round {round}: a completion counted {last} ns into a window of {window} ns"
        );
        // What the pipe can move in the window, plus the requests that
        // were in flight when it opened.
        let j = &d.result.results[0].jobs[0];
        let most = bandwidth as f64 * window as f64 / 1e9 + 32.0 * 4096.0;
        let moved = j.bw_bytes as f64 * window as f64 / 1e9;
        assert!(
            moved <= most,
            "round {round}: {moved} bytes in {window} ns, more than the pipe's {most}"
        );
        // One interrupt per completion at most, and the device's counters
        // are read at the window's edges too: no more interrupts than
        // completions counted, beyond those in flight at its close.
        let irqs = d.result.results[0].interrupts;
        assert!(
            irqs <= j.ios + 32,
            "round {round}: {irqs} interrupts for {} completions counted",
            j.ios
        );
    }
}

/// A queue keeps no more requests at the device than it has driver tags
/// (`device.queue_depth`): one thread of depth 32 on a 100 us device of
/// many units, with 8 tags, completes at most 8 per 100 us, where all 32
/// at once would complete four times as many.
#[test]
fn a_queue_keeps_no_more_requests_at_the_device_than_its_tags() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut sc = scenario(
        "tags",
        device(100_000, 64),
        vec![none()],
        vec![io_job("deep", Engine::Libaio, 32, 1, 1)],
        100 * MS,
    );
    sc.device.queue_depth = 8;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let j = &d.result.results[0].jobs[0];
    // 8 tags over 100 us each; the window may open with up to 32 done.
    let window_s = d.strategies[0].window_ns as f64 / 1e9;
    let most = 8.0 / 100e-6 + 32.0 / window_s;
    assert!(
        j.iops <= most,
        "{} a second, more than 8 tags allow",
        j.iops
    );
    assert!(j.iops > 0.0);
}

/// More requests than tags, from threads of both kinds of wait: every
/// request comes back once, the pollers that found no tag slept for one,
/// and the run ends though some wait at its end;
/// under polling too, where a submitter whose own requests hold tags
/// polls them rather than wait for itself.
#[test]
fn submitters_beyond_the_tags_wait_for_them_and_every_request_comes_back() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let cases = [
        (none(), io_job("aio", Engine::Libaio, 16, 4, 1)),
        (poll(), hipri(io_job("ring", Engine::IoUring, 16, 4, 1))),
    ];
    for (strategy, mut job) in cases {
        job.numjobs = 4;
        let mut sc = scenario(
            "tags",
            device(20_000, 4),
            vec![strategy],
            vec![job],
            50 * MS,
        );
        sc.device.queue_depth = 8;
        let d = cint_emu::run_detailed(&sc).expect("emulator runs");
        let s = &d.strategies[0];
        let detail = &s.jobs[0];
        assert_eq!(detail.submitted, detail.completed, "{}", s.name);
        assert_eq!((detail.strays, detail.errors), (0, 0), "{}", s.name);
        assert!(detail.completed > 0, "{}", s.name);
        // A poller waits for nothing else: its wake-ups are from the tags.
        if s.name == "poll" {
            let j = &d.result.results[0].jobs[0];
            assert!(j.wakeups > 0, "no poller slept for a tag");
        }
    }
}

/// fio's `io_submit_mode=offload`: a synchronous job of 1 000 requests a
/// second on a device that takes 2 ms each. Inline, its one thread waits
/// for each request before the next, so it completes at most 500 a
/// second whatever its rate; offloaded, it hands each request to one of
/// its eight workers and issues on its schedule, and its latency runs
/// from the hand-off. Every request comes back once, through a worker.
#[test]
fn an_offloaded_job_issues_on_its_rate_whatever_the_completions_do() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let run = |offload: bool| {
        let mut job = io_job("paced", Engine::Psync, 8, 1, 1);
        if let Work::Io(io) = &mut job.work {
            io.rate_iops = Some(1_000);
            io.offload = offload;
        }
        cint_emu::run_detailed(&scenario(
            "offload",
            device(2 * MS, 16),
            vec![none()],
            vec![job],
            100 * MS,
        ))
        .expect("emulator runs")
    };
    let inline = run(false);
    let offloaded = run(true);
    let iops = |d: &cint_emu::RunDetail| d.result.results[0].jobs[0].iops;
    assert!(
        iops(&inline) <= 520.0,
        "inline, one request at a time: {} a second",
        iops(&inline)
    );
    // A loaded machine's late wake-ups only slow the main thread: the
    // bound from below leaves it a fifth.
    assert!(
        iops(&offloaded) >= 800.0 && iops(&offloaded) <= 1_050.0,
        "offloaded: {} a second against the rate's 1 000",
        iops(&offloaded)
    );
    let j = &offloaded.result.results[0].jobs[0];
    assert!(j.lat_ns.min >= 2 * MS, "{:?}", j.lat_ns);
    let detail = &offloaded.strategies[0].jobs[0];
    assert!(detail.submitted > 0);
    assert_each_request_back_once(detail, "offloaded");
    assert_eq!(detail.by_full_irq, detail.completed, "{detail:?}");
}

/// An offloaded job keeps at most `iodepth` requests out: with two io_us
/// and no rate, its main thread sleeps until a worker frees one, so a
/// 1 ms device completes at most two a millisecond, and each request's
/// latency, from its hand-off, is at least the device's.
#[test]
fn an_offloaded_job_keeps_at_most_iodepth_requests_out() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("deep", Engine::Libaio, 2, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.offload = true;
    }
    let d = cint_emu::run_detailed(&scenario(
        "offload-depth",
        device(MS, 16),
        vec![none()],
        vec![job],
        50 * MS,
    ))
    .expect("emulator runs");
    let j = &d.result.results[0].jobs[0];
    assert!(j.ios >= 20, "{} requests", j.ios);
    assert!(j.iops <= 2_050.0, "{} a second from two io_us", j.iops);
    assert!(j.lat_ns.min >= MS, "{:?}", j.lat_ns);
    let detail = &d.strategies[0].jobs[0];
    assert_each_request_back_once(detail, "two io_us");
    // The main thread slept for a free io_u: its wake-ups are the job's
    // beside the workers' (at least one a request).
    assert!(detail.wakeups > j.ios, "{detail:?}");
}

/// Every request of an offloaded job comes back once, through its
/// workers, whichever way they wait: two threads of eight workers each,
/// 1 500 requests a thread, under every kind of strategy the job allows.
#[test]
fn every_offloaded_request_comes_back_once_under_every_strategy() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = hipri(io_job("handed", Engine::Pvsync2, 8, 1, 2));
    if let Work::Io(io) = &mut job.work {
        io.offload = true;
        io.shape.number_ios = Some(1_500);
    }
    let strategies = vec![
        none(),
        adaptive(DEFAULT_DELTA, 32),
        cinterrupts(DEFAULT_DELTA, 32),
        poll(),
        hybrid(cint_scenario::HybridSleep::Adaptive),
    ];
    let mut sc = scenario(
        "offload-every",
        device(10_000, 8),
        strategies,
        vec![job],
        400 * MS,
    );
    // No ramp, after whose end fio counts `number_ios` again.
    sc.warmup = 0;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    for s in &d.strategies {
        let detail = &s.jobs[0];
        assert_eq!(detail.submitted, 3_000, "{}: {detail:?}", s.name);
        assert_each_request_back_once(detail, &s.name);
    }
}

/// A thread pausing for its rate leaves its core: beside a slow,
/// rate-limited job (a request every 10 ms, a sleep between), a psync
/// job's interrupts find the core idle and go to its waiting thread, as
/// they do alone, not to the handler thread, as a busy neighbour's do
/// (`a_busy_thread_on_the_core_sends_every_interrupt_to_the_handler_thread`).
#[test]
fn a_thread_asleep_for_its_rate_leaves_the_core_idle_for_its_neighbours_interrupts() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let d = run_long_enough(30, |duration| {
        let mut slow = io_job("slow", Engine::Psync, 1, 1, 1);
        if let Work::Io(io) = &mut slow.work {
            io.rate_iops = Some(100);
        }
        let jobs = vec![io_job("sync", Engine::Psync, 1, 1, 1), slow];
        scenario("pause", device(10_000, 4), vec![none()], jobs, duration)
    });
    let sd = &d.strategies[0];
    assert!(sd.irqs_total > 0);
    assert!(
        2 * sd.waiter_irqs_total >= sd.irqs_total,
        "{} of {} interrupts went to the waiting thread: {sd:?}",
        sd.waiter_irqs_total,
        sd.irqs_total
    );
    for job in &sd.jobs {
        assert_each_request_back_once(job, &job.name);
    }
}

/// io_uring's SQ polling: the ring's thread commits without a system call
/// and spins on its completion ring; its SQ thread, on the same core,
/// submits and, under a polling strategy, polls. Neither ever blocks
/// (no wake-up in the window), every request comes back once, by an
/// interrupt under `none` and by a poll under `poll`.
#[test]
fn an_sq_polled_ring_spins_for_its_completions_and_its_sq_thread_submits_them() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = hipri(io_job("ring", Engine::IoUring, 4, 1, 1));
    if let Work::Io(io) = &mut job.work {
        io.sqpoll = Some(cint_scenario::SqPoll { cpu: None });
    }
    // On one core the two threads spin in turn, a time slice each: a few
    // milliseconds a request on this project's machine.
    let d = cint_emu::run_detailed(&scenario(
        "sqpoll",
        device(10_000, 4),
        vec![none(), poll()],
        vec![job],
        100 * MS,
    ))
    .expect("emulator runs");
    for (s, result) in d.strategies.iter().zip(&d.result.results) {
        let detail = &s.jobs[0];
        assert!(result.jobs[0].ios > 0, "{}: {detail:?}", s.name);
        assert_each_request_back_once(detail, &s.name);
        assert_eq!(detail.wakeups, 0, "{}: nothing blocks: {detail:?}", s.name);
        let by = if s.name == "poll" {
            detail.by_poll
        } else {
            detail.by_full_irq + detail.by_urgent_irq
        };
        assert_eq!(by, detail.completed, "{}: {detail:?}", s.name);
    }
}

/// A job that completes nothing in its window says so, with what its
/// threads did (a table's zero alone read as a measurement): here its
/// one request comes back in the warm-up, and its think time outlasts
/// the window. fio thinks after a synchronous request has come back, so
/// after the first one: until 2026-11-29 the emulator looked before the
/// request's wait, and sent a second request before its first pause.
#[test]
fn a_job_that_completes_nothing_in_its_window_is_said_to() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("thinker", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.shape.thinktime = 300 * MS;
    }
    let mut sc = scenario(
        "idle",
        device(10 * US, 4),
        vec![none()],
        vec![job, io_job("reader", Engine::Psync, 1, 1, 1)],
        20 * MS,
    );
    sc.warmup = 30 * MS;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    assert_eq!(d.result.results[0].jobs[0].ios, 0);
    assert!(d.result.results[0].jobs[1].ios > 0);
    let said: Vec<&String> = d
        .result
        .notes
        .iter()
        .filter(|n| n.contains("completed no I/O"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", d.result.notes);
    assert!(
        said[0].starts_with("strategy 'none': job 'thinker' completed no I/O")
            && said[0].contains("got 1 of their 1 requests back"),
        "{}",
        said[0]
    );
}

/// Eight threads each read 4 KiB in microseconds and, one request in 20,
/// write for 20 ms: at any instant most of them are in a write. They
/// start together, so their writes keep in step (a write, then a few
/// tenths of a millisecond of reads): the window, from 10 to 30 ms, ends
/// on their second writes, about 9.5 ms old, where those completed took
/// about 1 ms on average. The run says that the job's latencies leave
/// its slowest out, as the simulator does (its same scenario, seeds 1 to
/// 5: waits of 9.1 to 9.6 ms against 0.9 to 2.4 ms). Over 400 ms the
/// writes are a small share of what was counted, and the note goes.
#[test]
fn a_window_short_against_the_slowest_requests_is_said_to_be() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let said = |duration: cint_policy::Nanos| {
        let mut job = io_job("mixed", Engine::Psync, 1, 1, 8);
        if let Work::Io(io) = &mut job.work {
            io.rw = cint_scenario::Rw::RandRw;
            io.rwmixread = 95;
        }
        let mut dev = device(10 * US, 16);
        dev.write.base = cint_scenario::units::Duration(20 * MS);
        let mut sc = scenario("short", dev, vec![none()], vec![job], duration);
        sc.warmup = 10 * MS;
        let d = cint_emu::run_detailed(&sc).expect("emulator runs");
        let detail = &d.strategies[0].jobs[0];
        assert_each_request_back_once(detail, "none");
        let notes: Vec<String> = d
            .result
            .notes
            .iter()
            .filter(|n| n.contains("a latency is counted when its request completes"))
            .cloned()
            .collect();
        (notes, detail.unfinished)
    };
    let (short, waiting) = said(20 * MS);
    assert_eq!(short.len(), 1, "{short:?}");
    assert!(
        short[0].starts_with("strategy 'none': job 'mixed' completed"),
        "{}",
        short[0]
    );
    // Each thread's one request in flight, its write (or, for a thread
    // between two writes, a read of microseconds).
    assert!(waiting.count <= 8, "{waiting:?}");
    assert!(waiting.oldest <= 20 * MS, "{waiting:?}");
    let (long, _) = said(400 * MS);
    assert!(long.is_empty(), "{long:?}");
}

/// A job that ends within its warm-up reports its whole life, as fio
/// reports a job that ends within its `ramp_time` and as the simulator
/// does: its requests, rates, CPU and switches from its start to its end,
/// and no latency sample. Until 2026-11-29 the emulator reported none of
/// its requests, without a word (fio 3.33: 256 reads, `N` 0).
#[test]
fn a_job_that_ends_within_its_warm_up_reports_its_whole_life() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // It ends by its 256 requests, or by a `runtime` where one is given.
    let ended =
        |run_to_end: bool, startdelay: cint_policy::Nanos, runtime: Option<cint_policy::Nanos>| {
            let mut job = io_job("short", Engine::Psync, 1, 1, 1);
            job.schedule.startdelay = startdelay;
            job.runtime = runtime;
            if let Work::Io(io) = &mut job.work {
                io.shape.number_ios = runtime.is_none().then_some(256);
            }
            let mut sc = scenario("ramp", device(10 * US, 4), vec![none()], vec![job], 20 * MS);
            sc.warmup = 500 * MS;
            sc.run_to_end = run_to_end;
            let d = cint_emu::run_detailed(&sc).expect("emulator runs");
            assert_each_request_back_once(&d.strategies[0].jobs[0], "none");
            d
        };
    let run =
        |run_to_end: bool, startdelay: cint_policy::Nanos| ended(run_to_end, startdelay, None);
    let said = |d: &cint_emu::RunDetail| -> String {
        let notes: Vec<&String> = d
            .result
            .notes
            .iter()
            .filter(|n| cint_scenario::staging::says_ended_in_warmup(n, "none", "short"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", d.result.notes);
        notes[0].clone()
    };
    // The run ends with it, within its warm-up: the run's figures are
    // its whole span too.
    let whole = run(true, 0);
    let r = &whole.result.results[0];
    let j = &r.jobs[0];
    assert_eq!(j.ios, 256);
    assert_eq!(j.lat_ns.n, 0);
    let fio = j.fio.as_ref().expect("fio data");
    assert_eq!((fio.read.ios, fio.read.bytes), (256, 256 * 4096));
    let life = j.ios as f64 / j.iops;
    assert!((life - fio.runtime_ns as f64 / 1e9).abs() < 1e-9);
    assert!(life < 0.4, "it ran for {life} s, not its warm-up");
    assert!(j.cpu_util > 0.0 && j.cpu_util <= 1.1, "{}", j.cpu_util);
    assert!(j.context_switches > 0);
    assert!(r.interrupts > 0 && r.cpu_util > 0.0);
    assert!(said(&whole).contains("its 256 requests"));
    assert!(!said(&whole).contains("the run's window opened"));
    // A run that lasts its warm-up and duration: the job's figures are
    // the same, and the note says the totals' window leaves it out.
    let later = run(false, 0);
    let j = &later.result.results[0].jobs[0];
    assert_eq!((j.ios, j.lat_ns.n), (256, 0));
    assert!(j.cpu_util > 0.0 && j.ios as f64 / j.iops < 0.4);
    assert!(said(&later).contains("the run's window opened at"));
    // Started 1 ms in: its own warm-up would end 500 ms after that.
    let delayed = run(false, MS);
    let j = &delayed.result.results[0].jobs[0];
    assert_eq!((j.ios, j.lat_ns.n), (256, 0));
    assert!(j.cpu_util > 0.0 && j.ios as f64 / j.iops < 0.4);
    let note = said(&delayed);
    assert!(note.contains("which was to end at 50"), "{note}");
    // A runtime of 20 ms ends it within its warm-up too, 20 ms after its
    // start as the simulator's (until 2026-11-29 it ran on through the
    // warm-up and measured the one request it drained at the window's
    // opening, over microseconds).
    let timed = ended(false, 0, Some(20 * MS));
    let j = &timed.result.results[0].jobs[0];
    let life = j.ios as f64 / j.iops;
    assert!(j.ios > 1 && j.lat_ns.n == 0, "{} requests", j.ios);
    assert!(life > 0.019 && life < 0.2, "{life} s");
    said(&timed);
    // A CPU-bound job's too: its CPU is over its 20 ms, at most all of
    // its thread (it showed 154% over the microseconds between its
    // opening sample and its exit at the window's opening).
    let mut burner = cint_test_support::scenario::cpu_job("short");
    burner.runtime = Some(20 * MS);
    let mut sc = scenario(
        "burn",
        device(10 * US, 4),
        vec![none()],
        vec![burner],
        20 * MS,
    );
    sc.warmup = 500 * MS;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let cpu = d.result.results[0].jobs[0].cpu_util;
    assert!(cpu > 0.5 && cpu <= 1.05, "{cpu}");
    assert!(said(&d).contains("its CPU is over its whole life"));
    // A runtime as long as the warm-up ends at the window's opening: its
    // job reports its whole life, never the microseconds after the
    // opening its thread's exit took (1 967% of its thread until
    // 2026-11-29).
    sc.warmup = 20 * MS;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    let cpu = d.result.results[0].jobs[0].cpu_util;
    assert!(cpu > 0.5 && cpu <= 1.05, "{cpu}");
    assert!(said(&d).contains("its CPU is over its whole life"));
}

/// `number_ios` counts again from the end of the ramp, the requests in
/// flight then included, and one taken in hand after the window opened
/// but before the thread's loop looked: fio resets at that completion and
/// counts the rest, so the job measures exactly its count (fio 3.33,
/// psync at depth 1, `number_ios=1000 ramp_time=2ms`: 1 000; the
/// emulator measured 1 001 until 2026-11-29).
#[test]
fn number_ios_after_a_ramp_measures_exactly_its_count() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("counted", Engine::Psync, 1, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.shape.number_ios = Some(2_000);
    }
    let mut sc = scenario(
        "ramp-count",
        device(10 * US, 4),
        vec![none()],
        vec![job],
        SEC,
    );
    sc.warmup = 2 * MS;
    sc.run_to_end = true;
    let d = cint_emu::run_detailed(&sc).expect("emulator runs");
    assert_each_request_back_once(&d.strategies[0].jobs[0], "none");
    let j = &d.result.results[0].jobs[0];
    assert_eq!((j.ios, j.lat_ns.n), (2_000, 2_000), "{:?}", d.result.notes);
}

#[test]
fn iodepth_low_drains_a_full_queue_before_the_thread_refills_it() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // fio's iodepth_low: once all 16 are out, the thread reaps until at
    // most 4 are, then submits what it may at once. On a device of 200 us
    // a request with a unit for each, a few microseconds of CPU per
    // request hardly count: at the depth's own mark about 16 are out all
    // the time; at 4 the thread waits with 4 to 16 out, about 12 on
    // average. Little's law (IOPS times the mean latency) gives the mean
    // out. A loaded machine's late wake-ups leave requests done and not
    // reaped, which still count as out, so the gap holds there too.
    let out = |low: u32| {
        let mut job = io_job("q", Engine::Libaio, 16, 16, 1);
        if let Work::Io(io) = &mut job.work {
            io.iodepth_low = low;
            io.batch_complete_min = 1;
            io.batch_complete_max = 1;
        }
        let d = cint_emu::run_detailed(&scenario(
            "low",
            device(200_000, 16),
            vec![none()],
            vec![job],
            200 * MS,
        ))
        .expect("emulator runs");
        assert_each_request_back_once(&d.strategies[0].jobs[0], &format!("mark {low}"));
        let j = &d.result.results[0].jobs[0];
        assert!(j.ios > 1_000, "mark {low}: {} I/Os", j.ios);
        j.iops * j.lat_ns.mean / 1e9
    };
    let (full, four) = (out(16), out(4));
    assert!(
        four < 14.0 && four < full - 2.0,
        "mark 4: {four} out on average, at the depth's own mark {full}"
    );
}

/// fio's `max_latency`: the first counted completion past the bound ends
/// its thread with ETIMEDOUT once what is in flight is back, as in fio
/// 3.33 and the simulator (1 read under psync, 4 under libaio at depth 4,
/// at a bound of 1 us that no request meets; the device here takes 10
/// us). A bound every request meets changes nothing.
#[test]
fn max_latency_ends_a_thread_at_its_first_completion_past_the_bound() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    for (engine, depth, counted) in [(Engine::Psync, 1, 1), (Engine::Libaio, 4, 4)] {
        let bounded = |bound: Option<cint_policy::Nanos>| {
            let mut job = io_job("bound", engine, depth, 1, 1);
            if let Work::Io(io) = &mut job.work {
                io.shape.number_ios = Some(512);
                io.shape.max_latency = bound.map(|b| cint_scenario::max_latency::MaxLatency {
                    read: Some(b),
                    write: Some(b),
                });
            }
            run_to_its_end("bound", job)
        };
        let d = bounded(Some(US));
        assert_each_request_back_once(&d.strategies[0].jobs[0], "bounded");
        let fio = d.result.results[0].jobs[0]
            .fio
            .clone()
            .expect("fio figures");
        assert_eq!((fio.read.ios, fio.error), (counted, 110), "{engine:?}");
        assert!(
            d.result
                .notes
                .iter()
                .any(|n| n.contains("past max_latency=1us")),
            "{:?}",
            d.result.notes
        );
        let d = bounded(Some(10 * cint_policy::SEC));
        let fio = d.result.results[0].jobs[0]
            .fio
            .clone()
            .expect("fio figures");
        assert_eq!((fio.read.ios, fio.error), (512, 0), "{engine:?}");
    }
}

/// fio's `iodepth_batch_complete_min=0` with `iodepth_batch_complete_max`
/// at 0 too (`io_in_polling`): a reap after every submission, which does
/// not wait, so a queue of 16 keeps one request in flight, as in fio 3.33
/// ("IO depths" 100% at 1) and the simulator.
#[test]
fn a_reap_after_every_submission_keeps_one_request_in_flight() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut job = io_job("each", Engine::Libaio, 16, 1, 1);
    if let Work::Io(io) = &mut job.work {
        io.batch_complete_min = 0;
        io.batch_complete_max = 0;
    }
    let d = cint_emu::run_detailed(&scenario(
        "each",
        device(50_000, 16),
        vec![none()],
        vec![job],
        100 * MS,
    ))
    .expect("emulator runs");
    assert_each_request_back_once(&d.strategies[0].jobs[0], "each");
    let j = &d.result.results[0].jobs[0];
    let out = j.iops * j.lat_ns.mean / 1e9;
    assert!(j.ios > 100 && out < 1.2, "{} I/Os, {out} in flight", j.ios);
}
