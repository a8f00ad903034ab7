//! Mechanism tests of the host and workload models: each asserts a
//! behaviour that follows from MODEL.md's rules, with a margin that a
//! broken mechanism would not meet.

mod common;

use cint_policy::{MS, US};
use cint_report::StrategyResult;
use cint_scenario::{CompletionMode, Engine, HybridSleep, Scenario, Work};
use common::*;

fn run(sc: &Scenario) -> Vec<StrategyResult> {
    cint_sim::run(sc).expect("runs").results
}

fn short(mut sc: Scenario) -> Scenario {
    sc.duration = 20 * MS;
    sc.warmup = 2 * MS;
    sc
}

/// `short`, measured only after CFS's start-up transient on a core shared
/// with a busy loop: until the sleeper trails the loop by more than the
/// wake-up granularity its wake-ups wait out the loop's slice, which
/// takes up to a target latency (24 ms on the reference host).
fn settled(sc: Scenario) -> Scenario {
    let mut sc = short(sc);
    sc.warmup = sc.host.sched_latency.0 + 2 * MS;
    sc
}

#[test]
fn an_irq_preempts_a_busy_loop_and_the_woken_reader_runs_first() {
    let alone = run(&short(scenario(
        "optane-p4800x",
        vec![none()],
        vec![psync("sync")],
    )));
    let shared = run(&short(scenario(
        "optane-p4800x",
        vec![none()],
        vec![psync("sync"), cpu_job("spin")],
    )));
    let median = |r: &[StrategyResult]| r[0].jobs[0].lat_ns.at(50.0).expect("p50") as f64;
    let (lat_alone, lat_shared) = (median(&alone), median(&shared));
    // The sleeper is placed before the busy loop's vruntime and, once its
    // lead passes the wake-up granularity (its first milliseconds are
    // CFS's start-up transient, hence the median), preempts it at once:
    // only the switch from another process instead of from idle is paid.
    let host = cint_scenario::HostProfile::builtin("xeon-e5-2660v4").expect("host");
    let extra = (host.context_switch.0 - host.context_switch_idle.0) as f64;
    assert!(
        lat_shared < lat_alone + extra + 500.0,
        "{lat_alone} -> {lat_shared}"
    );
    // The core is never idle, and the busy loop gets what the reader leaves.
    assert!((shared[0].cpu_util - 1.0).abs() < 1e-9);
    let spin = shared[0].jobs[1].cpu_util;
    let sync = shared[0].jobs[0].cpu_util;
    assert!(spin > 0.5 && spin + sync < 1.0, "{spin} {sync}");
}

#[test]
fn interrupt_time_is_the_cores_or_the_interrupted_threads_as_the_kernel_config_says() {
    let shared = |irq_time_accounting: bool| {
        let mut sc = settled(scenario(
            "optane-p4800x",
            vec![none()],
            vec![psync("sync"), cpu_job("spin")],
        ));
        sc.host.irq_time_accounting = irq_time_accounting;
        run(&sc).remove(0)
    };
    let (core_only, charged) = (shared(true), shared(false));
    let threads = |r: &StrategyResult| r.jobs.iter().map(|j| j.cpu_util).sum::<f64>();
    // The same run either way: only who is charged differs (the reader
    // preempts the spinner on every wake-up, so no vruntime decides).
    assert_eq!(core_only.jobs[0].ios, charged.jobs[0].ios);
    // With interrupt time accounting (the reference kernel) the handlers
    // are in no thread's figure: about 1.8 us per read of a saturated core.
    let handlers = 1.0 - threads(&core_only);
    assert!(handlers > 0.1, "{handlers}");
    // Without it, the spinner owns the core whenever the reader's
    // interrupt arrives (the reader is blocked on it), so the spinner is
    // charged for every handler and the threads add up to the busy core.
    assert!((threads(&charged) - charged.cpu_util).abs() < 1e-6);
    let spin_gain = charged.jobs[1].cpu_util - core_only.jobs[1].cpu_util;
    assert!(
        (spin_gain - handlers).abs() < 0.01,
        "{spin_gain} {handlers}"
    );
    assert!((charged.jobs[0].cpu_util - core_only.jobs[0].cpu_util).abs() < 0.01);
}

#[test]
fn two_busy_loops_share_a_core_in_cfs_slices() {
    let mut sc = scenario(
        "optane-p4800x",
        vec![none()],
        vec![cpu_job("a"), cpu_job("b")],
    );
    // Two runnable threads: a slice of half the target latency each
    // (12 ms of the reference host's 24 ms), twenty of them measured.
    let slice = sc.host.sched_latency.0 / 2;
    sc.duration = 20 * slice;
    sc.warmup = 0;
    let r = &run(&sc)[0];
    let (a, b) = (r.jobs[0].cpu_util, r.jobs[1].cpu_util);
    assert!((a - 0.5).abs() < 0.03 && (b - 0.5).abs() < 0.03, "{a} {b}");
    assert!(
        (17..=23).contains(&r.context_switches),
        "{}",
        r.context_switches
    );
    assert_eq!(r.interrupts, 0);
}

/// Linux 5.0 checks a slice only at the scheduler tick
/// (`entity_tick()` calls `check_preempt_tick()`; `HRTICK` is off): under
/// a 5 ms tick, two busy loops' 12 ms slices end at the first tick past
/// them, every 15 ms, so 240 ms hold 16 turns instead of 20.
#[test]
fn a_slice_ends_at_the_first_tick_past_it() {
    let mut sc = scenario(
        "optane-p4800x",
        vec![none()],
        vec![cpu_job("a"), cpu_job("b")],
    );
    sc.host.tick = cint_scenario::units::Duration(5 * MS);
    sc.duration = 240 * MS;
    sc.warmup = 0;
    let r = &run(&sc)[0];
    assert!(
        (15..=17).contains(&r.context_switches),
        "{}",
        r.context_switches
    );
    let (a, b) = (r.jobs[0].cpu_util, r.jobs[1].cpu_util);
    assert!((a - 0.5).abs() < 0.05 && (b - 0.5).abs() < 0.05, "{a} {b}");
}

/// A busy loop that joins two others 50 ms in is woken as a sleeper,
/// half a target latency (12 ms) behind the others' `min_vruntime`, and
/// preempts. Its slice, a third of the latency (8 ms), ends at the tick
/// of 60 ms, but it is still the leftmost thread and is picked again
/// without a new slice (`pick_next_task_fair()` under
/// `CONFIG_FAIR_GROUP_SCHED` sets no entity when the task does not
/// change): the next tick, at 64 ms, ends its turn, 14 ms after it
/// started, where a fresh slice would have kept it to 68 ms.
#[test]
fn a_thread_picked_again_after_its_slice_keeps_counting_it() {
    let text = "name = \"late\"\nduration = \"70ms\"\n\
                [device]\nmodel = \"optane-p4800x\"\n\
                [host]\nmodel = \"xeon-e5-2660v4\"\ncores = 1\n\
                [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
                [[job]]\nname = \"early\"\nkind = \"cpu\"\nnumjobs = 2\ncpu = 0\n\
                [[job]]\nname = \"late\"\nkind = \"cpu\"\ncpu = 0\nstartdelay = \"50ms\"\n";
    let sc = cint_scenario::load_str(text, "late.toml", &[]).expect("valid");
    let r = &run(&sc)[0];
    // 14 ms of its 20 ms window, from its start at 50 ms to the end (16
    // ms with an exact slice, 18 ms with a fresh one at the re-pick).
    let late = r.jobs[1].cpu_util * 20.0;
    assert!((late - 14.0).abs() < 0.3, "{late}");
}

/// Two busy loops on one core take turns of 12 ms (a from 0, b from
/// 12 ms, a again from 24 ms), wherever the measured window starts: over
/// 10 ms to 30 ms, a runs 2 + 6 ms and b 12 ms. Until 2026-11-29 the
/// warm-up's end reset the thread's run time that its slice counts by,
/// while its slice's start stayed: the running loop's turn wrapped below
/// zero, and it gave its core up at the next tick (a 6 ms, b 14 ms).
#[test]
fn a_turn_that_spans_the_warm_up_end_keeps_its_slice() {
    let text = one_core(
        ("20ms", "10ms"),
        "[[job]]\nname = \"a\"\nkind = \"cpu\"\ncpu = 0\n\
         [[job]]\nname = \"b\"\nkind = \"cpu\"\ncpu = 0\n",
    );
    let sc = cint_scenario::load_str(&text, "turns.toml", &[]).expect("valid");
    let r = &run(&sc)[0];
    let ms = |j: usize| r.jobs[j].cpu_util * 20.0;
    assert!((ms(0) - 8.0).abs() < 0.3, "a ran {} ms", ms(0));
    assert!((ms(1) - 12.0).abs() < 0.3, "b ran {} ms", ms(1));
    assert_eq!(r.context_switches, 2, "to b at 12 ms, to a at 24 ms");
}

/// Eight threads keep 512 requests in flight for 64 driver tags on one
/// core: most of them wait for a tag or for their thread's turn, far
/// longer than the requests that complete. Over 60 ms the completed took
/// 0.5 ms on average, where Little's law (512 requests at the rate) gives
/// 2.3 ms: the slow ones had not completed yet, and the run says so. Over
/// 1 s the mean comes within 10% of Little's law, and the note goes.
#[test]
fn a_window_short_against_the_slowest_requests_is_said_to_be() {
    let text = |duration: &str| {
        format!(
            "name = \"deep\"\nduration = \"{duration}\"\nwarmup = \"10ms\"\n\
             [device]\nmodel = \"optane-p4800x\"\nqueue_depth = 64\n\
             [host]\nmodel = \"xeon-e5-2660v4\"\ncores = 1\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[job]]\nname = \"deep\"\nengine = \"libaio\"\nrw = \"randwrite\"\n\
             bs = \"4k\"\niodepth = 64\nbatch = 64\nnumjobs = 8\ncpu = 0\n"
        )
    };
    let said = |r: &cint_report::RunResult| {
        r.notes
            .iter()
            .filter(|n| n.contains("a latency is counted when its request completes"))
            .count()
    };
    let short =
        cint_sim::run(&cint_scenario::load_str(&text("60ms"), "d.toml", &[]).expect("valid"))
            .expect("runs");
    assert_eq!(said(&short), 1, "{:?}", short.notes);
    let long = cint_sim::run(&cint_scenario::load_str(&text("1s"), "d.toml", &[]).expect("valid"))
        .expect("runs");
    assert_eq!(said(&long), 0, "{:?}", long.notes);
    let job = &long.results[0].jobs[0];
    let little_us = 512.0 / job.iops * 1e6;
    let mean_us = job.lat_ns.mean / 1e3;
    assert!(
        (mean_us / little_us - 1.0).abs() < 0.1,
        "mean {mean_us} us against Little's law's {little_us} us"
    );
    let short_mean_us = short.results[0].jobs[0].lat_ns.mean / 1e3;
    assert!(short_mean_us < little_us / 2.0, "{short_mean_us} us");
}

/// The text of a scenario of `jobs` (their tables) on one core of the
/// reference host, measured for `duration` after `warmup`.
fn one_core((duration, warmup): (&str, &str), jobs: &str) -> String {
    format!(
        "name = \"one-core\"\nduration = \"{duration}\"\nwarmup = \"{warmup}\"\n\
         [device]\nmodel = \"optane-p4800x\"\n\
         [host]\nmodel = \"xeon-e5-2660v4\"\ncores = 1\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n{jobs}"
    )
}

/// A busy loop with a `runtime` ends there, whether it is running or
/// waiting for its core (until 2026-11-29 it burned to the run's end:
/// a reader beside a 10 ms loop read as if the loop never stopped), and
/// a group after it starts then.
#[test]
fn a_busy_loop_stops_at_its_runtime_and_its_core_is_the_readers() {
    let text = |burn: &str| {
        one_core(
            ("40ms", "0ms"),
            &format!(
                "[[job]]\nname = \"reader\"\nengine = \"psync\"\ncpu = 0\n\
                 [[job]]\nname = \"burn\"\nkind = \"cpu\"\ncpu = 0\n{burn}"
            ),
        )
    };
    let load = |t: String| cint_scenario::load_str(&t, "burn.toml", &[]).expect("valid");
    let forever = &run(&load(text("")))[0];
    let stopped = &run(&load(text("runtime = \"10ms\"\n")))[0];
    // Measured over its own 10 ms, the loop had its core nearly all the
    // time the reader waited for its reads.
    assert!(
        stopped.jobs[1].cpu_util > 0.9,
        "{}",
        stopped.jobs[1].cpu_util
    );
    // After it the reader has the core: three quarters of the run at its
    // own pace, where beside the loop it shares it.
    let (alone, shared) = (stopped.jobs[0].ios, forever.jobs[0].ios);
    assert!(
        alone as f64 > 1.25 * shared as f64,
        "{alone} against {shared}"
    );
    // The core idles between the reader's requests once the loop ends.
    assert!(
        stopped.cpu_util < 0.8 * forever.cpu_util,
        "{} against {}",
        stopped.cpu_util,
        forever.cpu_util
    );

    // A loop with a runtime may run before a later group: the group
    // starts when it ends.
    let staged = load(
        text("runtime = \"10ms\"\n")
            .replace("name = \"reader\"\n", "name = \"reader\"\ngroup = 1\n"),
    );
    let r = &run(&staged)[0];
    assert!(r.jobs[0].ios > 0, "the reader's group never started");
    assert!(r.jobs[1].cpu_util > 0.99, "{}", r.jobs[1].cpu_util);
    // Without a runtime it would never end: refused by its group.
    let e = cint_scenario::load_str(
        &text("")
            .replace("name = \"burn\"\nkind", "name = \"burn\"\ngroup = 0\nkind")
            .replace("name = \"reader\"\n", "name = \"reader\"\ngroup = 1\n"),
        "burn.toml",
        &[],
    )
    .expect_err("a loop without an end before a later group");
    assert!(e.to_string().contains("without a runtime"), "{e}");
}

/// A job of a later group is measured over its own window, from its
/// start plus the warm-up: its CPU and switches too, not only its
/// requests. Until 2026-11-29 its threads' counters ran from the run's
/// window, and a busy loop after a 2 ms warm-up showed 167% of its core
/// over its 3 ms window. One that starts too late for any window used
/// nothing in it.
#[test]
fn a_later_groups_cpu_counts_from_its_own_window() {
    let text = |delay: &str| {
        one_core(
            ("20ms", "2ms"),
            &format!(
                "[[job]]\nname = \"first\"\nengine = \"psync\"\ncpu = 0\nruntime = \"5ms\"\n\
                 [[job]]\nname = \"burn\"\nkind = \"cpu\"\ncpu = 0\ngroup = 1\n\
                 runtime = \"5ms\"\nstartdelay = \"{delay}\"\n"
            ),
        )
    };
    let load = |t: String| cint_scenario::load_str(&t, "later.toml", &[]).expect("valid");
    let r = &run(&load(text("0ms")))[0];
    let burn = r.jobs[1].cpu_util;
    assert!((0.99..=1.0).contains(&burn), "{burn}");
    // Started after the run's end (5 ms + 30 ms > 22 ms): no window.
    let r = &run(&load(text("30ms")))[0];
    assert_eq!(r.jobs[1].cpu_util, 0.0);
}

#[test]
fn classic_polling_never_sleeps_and_fires_no_interrupt() {
    let sc = short(scenario(
        "optane-p4800x",
        vec![none(), strategy("poll", CompletionMode::Poll)],
        vec![preadv2_hipri("sync")],
    ));
    let r = run(&sc);
    let (irq, poll) = (&r[0], &r[1]);
    assert_eq!(poll.interrupts, 0);
    assert!(poll.context_switches <= 1, "{}", poll.context_switches);
    assert!(poll.cpu_util > 0.999, "{}", poll.cpu_util);
    assert!(poll.jobs[0].lat_ns.mean < irq.jobs[0].lat_ns.mean - 1_000.0);
    // Interrupt mode sleeps once per I/O.
    let per_io = irq.context_switches as f64 / irq.jobs[0].ios as f64;
    assert!((per_io - 1.0).abs() < 0.01, "{per_io}");
}

#[test]
fn hybrid_polling_sleeps_then_spins() {
    // The block layer's estimator needs a full 100 ms statistics window
    // before its first sleep (until then it polls classically).
    let mut sc = scenario(
        "p3700",
        vec![
            none(),
            strategy("poll", CompletionMode::Poll),
            strategy("hybrid", CompletionMode::HybridPoll(HybridSleep::Adaptive)),
            strategy(
                "hybrid-fixed",
                CompletionMode::HybridPoll(HybridSleep::Fixed(40 * US)),
            ),
        ],
        vec![preadv2_hipri("r")],
    );
    sc.warmup = 110 * MS;
    sc.duration = 40 * MS;
    let r = run(&sc);
    let (irq, poll, hybrid, fixed) = (&r[0], &r[1], &r[2], &r[3]);
    assert_eq!(hybrid.interrupts, 0);
    // It sleeps about half the mean service time: far less CPU than
    // classic polling, and one sleep (one switch back in) per I/O.
    assert!(
        hybrid.cpu_util < 0.8 * poll.cpu_util,
        "{} {}",
        hybrid.cpu_util,
        poll.cpu_util
    );
    let per_io = hybrid.context_switches as f64 / hybrid.jobs[0].ios as f64;
    assert!(per_io > 0.9 && per_io < 1.1, "{per_io}");
    assert!(fixed.cpu_util < poll.cpu_util);
    // Latency: no worse than interrupts by more than the timer slack.
    assert!(hybrid.jobs[0].lat_ns.mean < irq.jobs[0].lat_ns.mean + 3_000.0);
}

#[test]
fn io_uring_waiters_wake_once_per_batch_but_libaio_waiters_per_irq() {
    // A slow device and a low reap minimum leave the thread waiting: the
    // libaio waiter is woken by every IRQ (Linux 5.0), io_uring only when
    // enough completions are ready.
    let sc = short(scenario(
        "p3700",
        vec![none()],
        vec![io_job("aio", Engine::Libaio, 4, 4, 4)],
    ));
    let aio = &run(&sc)[0];
    let mut uring_sc = sc.clone();
    uring_sc.jobs = vec![io_job("uring", Engine::IoUring, 4, 4, 4)];
    let uring = &run(&uring_sc)[0];
    let aio_cs = aio.context_switches as f64 / aio.jobs[0].ios as f64;
    let uring_cs = uring.context_switches as f64 / uring.jobs[0].ios as f64;
    // Four completions per batch: about four wake-ups against one.
    assert!(aio_cs > 0.6, "{aio_cs}");
    assert!(uring_cs < 0.4 * aio_cs, "{uring_cs} vs {aio_cs}");
}

#[test]
fn io_uring_waiters_wake_per_irq_where_task_work_posts_the_events() {
    // Linux 5.15 posts io_uring's completions by task work, whose
    // notification wakes the waiter at every completing IRQ: it looks at
    // the ring and sleeps again, as libaio's waiter does.
    let uring = |task_work: bool| {
        let mut sc = short(scenario(
            "p3700",
            vec![none()],
            vec![io_job("uring", Engine::IoUring, 4, 4, 4)],
        ));
        sc.host.uring_task_work = task_work;
        run(&sc).remove(0)
    };
    let mut aio_sc = short(scenario(
        "p3700",
        vec![none()],
        vec![io_job("aio", Engine::Libaio, 4, 4, 4)],
    ));
    aio_sc.host.uring_task_work = true;
    let aio = run(&aio_sc).remove(0);
    let (task_work, posted) = (uring(true), uring(false));
    let per_io = |r: &StrategyResult| r.jobs[0].wakeups as f64 / r.jobs[0].ios as f64;
    // Four completions per batch: about four wake-ups against one.
    assert!(
        per_io(&task_work) > 2.5 * per_io(&posted),
        "{} vs {}",
        per_io(&task_work),
        per_io(&posted)
    );
    let (uring_wakes, aio_wakes) = (per_io(&task_work), per_io(&aio));
    assert!(
        (uring_wakes / aio_wakes - 1.0).abs() < 0.25,
        "{uring_wakes} vs libaio's {aio_wakes}"
    );
    // The device's pace is the same: only the waiter's work differs.
    let ios = |r: &StrategyResult| r.jobs[0].ios as f64;
    assert!((ios(&task_work) / ios(&posted) - 1.0).abs() < 0.02);
    assert!(task_work.jobs[0].cpu_util > posted.jobs[0].cpu_util);
    // A waiter for one event is woken by its first either way.
    let one = |task_work: bool| {
        let mut sc = short(scenario(
            "p3700",
            vec![none()],
            vec![io_job("uring", Engine::IoUring, 4, 1, 1)],
        ));
        sc.host.uring_task_work = task_work;
        serde_json::to_string(&run(&sc)).expect("serialises")
    };
    assert_eq!(one(true), one(false));
}

#[test]
fn rate_limit_caps_iops_and_think_time_costs_cpu() {
    let mut job = libaio("capped", 32, 4, 1);
    if let Work::Io(io) = &mut job.work {
        io.rate_iops = Some(100_000);
    }
    let r = &run(&short(scenario("optane-p4800x", vec![none()], vec![job])))[0];
    let iops = r.jobs[0].iops;
    assert!((iops - 100_000.0).abs() < 3_000.0, "{iops}");

    let mut thinker = psync("think");
    if let Work::Io(io) = &mut thinker.work {
        io.think = 20 * US;
    }
    let plain = &run(&short(scenario(
        "optane-p4800x",
        vec![none()],
        vec![psync("p")],
    )))[0];
    let think = &run(&short(scenario(
        "optane-p4800x",
        vec![none()],
        vec![thinker],
    )))[0];
    let per_io = 1e9 / think.jobs[0].iops - 1e9 / plain.jobs[0].iops;
    assert!((per_io - 20_000.0).abs() < 500.0, "{per_io}");
}

#[test]
fn urgent_reads_get_urgent_only_irqs_beside_unmarked_async_traffic() {
    let mut async_job = libaio("async", 64, 16, 16);
    if let Work::Io(io) = &mut async_job.work {
        io.hint = Some(cint_policy::Hint::Unmarked);
    }
    let r = &run(&short(scenario(
        "optane-p4800x",
        vec![cint(6 * US, 32)],
        vec![async_job, psync("sync")],
    )))[0];
    assert!(r.urgent_interrupts > 0);
    assert!(r.urgent_interrupts <= r.jobs[1].ios + 10);
    assert!(r.interrupts > r.urgent_interrupts);
}

#[test]
fn runtime_stops_a_job() {
    let mut job = psync("short");
    job.runtime = Some(5 * MS);
    let mut sc = scenario("optane-p4800x", vec![none()], vec![job, psync("long")]);
    sc.duration = 20 * MS;
    sc.warmup = 0;
    let r = &run(&sc)[0];
    let (short_ios, long_ios) = (r.jobs[0].ios as f64, r.jobs[1].ios as f64);
    assert!(
        short_ios > 0.0 && short_ios < 0.4 * long_ios,
        "{short_ios} {long_ios}"
    );
}

#[test]
fn every_engine_and_mode_completes_every_request_exactly_once() {
    let modes = vec![
        none(),
        nvme("nvme", 20 * US, 8),
        adaptive(6 * US, 16),
        cint(6 * US, 32),
        strategy("poll", CompletionMode::Poll),
        strategy("hybrid", CompletionMode::HybridPoll(HybridSleep::Min)),
    ];
    for engine in [
        Engine::Psync,
        Engine::Pvsync2,
        Engine::Libaio,
        Engine::IoUring,
    ] {
        let depth = if engine.is_sync() { 1 } else { 16 };
        let mut a = io_job("a", engine, depth, depth.min(4), 2.min(depth));
        if matches!(engine, Engine::Pvsync2 | Engine::IoUring) {
            a = hipri(a);
        }
        a.numjobs = 2;
        let mut sc = settled(scenario(
            "optane-p4800x",
            modes.clone(),
            vec![a, cpu_job("cpu")],
        ));
        // Long enough for each thread to get the core: where all three
        // are busy, a turn ends at the first scheduler tick past a third
        // of the target latency.
        sc.duration = sc.host.sched_latency.0 + 2 * sc.host.tick.0;
        // The run itself checks exactly-once delivery, time accounting and
        // monotonic time; an error here names the violated invariant.
        let r = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{engine:?}: {e}"));
        for s in &r.results {
            assert!(s.jobs[0].ios > 0, "{engine:?} {}", s.strategy);
        }
    }
}

#[test]
fn more_requests_than_tags_wait_for_a_tag_instead_of_being_refused() {
    // Two threads of depth 1024 on one queue (on two cores): 2 048
    // requests for 1 024 tags. Linux runs it, a submitter sleeping in
    // blk_mq_get_tag until tags are freed, and so does the model; with 64
    // tags the backlog waits for tags instead of in the device. The P3700's random writes (75 K/s) keep the
    // device saturated either way.
    let deep = |queue_depth: u32| {
        let mut a = libaio("a", 1024, 32, 32);
        let mut b = libaio("b", 1024, 32, 32);
        for job in [&mut a, &mut b] {
            if let Work::Io(io) = &mut job.work {
                io.rw = cint_scenario::Rw::RandWrite;
            }
        }
        b.cpu = 1;
        let mut sc = scenario("p3700", vec![none()], vec![a, b]);
        sc.duration = 100 * MS;
        sc.host.cores = 2;
        sc.device.queues = 1;
        sc.device.queue_depth = queue_depth;
        cint_sim::run(&sc)
            .expect("more depth than tags runs")
            .results[0]
            .clone()
    };
    let (tags_1024, tags_64) = (deep(1024), deep(64));
    // One interrupt per completion under none: the device's rate, the
    // same whether the backlog waits for tags or inside the device.
    let ratio = tags_64.interrupts as f64 / tags_1024.interrupts as f64;
    assert!((0.98..1.02).contains(&ratio), "{ratio}");
    for r in [&tags_1024, &tags_64] {
        // Neither thread starves: freed tags wake waiters in batches and
        // are set aside for them.
        let (a, b) = (r.jobs[0].ios as f64, r.jobs[1].ios as f64);
        assert!(a > 0.3 * (a + b) && b > 0.3 * (a + b), "{a} {b}");
        // 2 048 requests at 75 K/s: about 27 ms from the call's entry to
        // the completion, the tag wait included.
        let mean = r.jobs[0].lat_ns.mean.min(r.jobs[1].lat_ns.mean);
        assert!(mean > 20e6, "{mean}");
    }
}

#[test]
fn a_long_submission_call_streams_its_requests_to_the_device() {
    // One thread submits 512 requests per io_submit and waits for all of
    // them. Linux 5.0 walks the iocbs one by one inside a plug that blk-mq
    // flushes every 16 requests, so the device works while the call is
    // still walking (0.9 ms of kernel path): by the time the call returns,
    // the handlers (which preempt the call) have delivered most of the
    // batch, and the reap call rarely sleeps. Rung once at the call's end,
    // the doorbell left all 512 to the device after the call, and the
    // waiter slept and woke for every delivery: 0.25 context switches per
    // I/O, against 0.008 streamed (measured on the previous model).
    let sc = short(scenario(
        "optane-p4800x",
        vec![none()],
        vec![libaio("deep", 512, 512, 512)],
    ));
    let r = &run(&sc)[0];
    let per_io = r.context_switches as f64 / r.jobs[0].ios as f64;
    assert!(per_io < 0.05, "the reaper slept per delivery: {per_io}");
    assert!(r.interrupts as f64 > 0.9 * r.jobs[0].ios as f64);
}

#[test]
fn big_requests_ring_the_doorbell_before_the_call_ends() {
    // A call of 128 KiB requests flushes its plug before each next one
    // (BLK_PLUG_FLUSH_SIZE): each reaches the device as the next is
    // walked. Eight 128 KiB reads take 437 us of the pipe (2.4 GB/s); the
    // call's kernel path is 8 x 1.8 us = 14.4 us. Streamed, the transfers
    // start after the first request's path, so a read's latency is the
    // transfers plus well under the call's path (9 us: the first path,
    // the media time, the reap); rung at the call's end it was 21 us.
    let mut job = libaio("r", 8, 8, 8);
    if let Work::Io(io) = &mut job.work {
        io.bs = 128 << 10;
    }
    let r = &run(&short(scenario("optane-p4800x", vec![none()], vec![job])))[0];
    let transfers_ns = 8.0 * (128 << 10) as f64 / 2.4e9 * 1e9;
    let overhead_us = (r.jobs[0].lat_ns.mean - transfers_ns) / 1e3;
    assert!(overhead_us < 12.0, "{overhead_us}");
}

#[test]
fn per_request_polling_polls_hipri_and_interrupts_the_rest() {
    // Under a polling strategy, the hipri reader is polled and raises no
    // interrupt; the libaio job beside it on another core completes by
    // interrupts under the strategy's named interrupt policy.
    let mut aio = libaio("aio", 16, 4, 1);
    aio.cpu = 1;
    let mut poll = strategy("poll", CompletionMode::Poll);
    poll.interrupts = cint_policy::PolicyConfig::None;
    let mut sc = short(scenario(
        "optane-p4800x",
        vec![none(), poll],
        vec![preadv2_hipri("polled"), aio],
    ));
    sc.host.cores = 2;
    let result = cint_sim::run(&sc).expect("runs");
    let (irq, polled) = (&result.results[0], &result.results[1]);
    let aio_ios = polled.jobs[1].ios as f64;
    assert!(aio_ios > 1_000.0 && polled.jobs[0].ios > 1_000);
    // One interrupt per aio completion under none, none for the reader.
    let per_io = polled.interrupts as f64 / aio_ios;
    assert!((0.9..1.1).contains(&per_io), "{per_io}");
    assert!(polled.jobs[0].lat_ns.mean < irq.jobs[0].lat_ns.mean - 1_000.0);
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("job 'aio' does not poll")),
        "{:?}",
        result.notes
    );
}

#[test]
fn wakeups_count_each_return_from_a_block() {
    let sc = settled(scenario(
        "optane-p4800x",
        vec![none(), strategy("poll", CompletionMode::Poll)],
        vec![preadv2_hipri("sync"), cpu_job("spin")],
    ));
    let r = run(&sc);
    let (irq, poll) = (&r[0], &r[1]);
    // Interrupt mode: the reader blocks in every pread and the IRQ
    // handler wakes it once per I/O (a wake-up at either edge of the
    // window may fall outside it).
    let sync = &irq.jobs[0];
    assert!(sync.ios > 1_000, "{}", sync.ios);
    assert!(
        sync.wakeups.abs_diff(sync.ios) <= 1,
        "{} wake-ups for {} I/Os",
        sync.wakeups,
        sync.ios
    );
    // A busy loop never blocks; the strategy sums its threads.
    assert_eq!(irq.jobs[1].wakeups, 0);
    assert_eq!(irq.wakeups, sync.wakeups);
    // Classic polling spins instead of sleeping: nothing to wake.
    assert!(poll.jobs[0].ios > 1_000);
    assert_eq!(poll.wakeups, 0);
    assert!(poll.jobs.iter().all(|j| j.wakeups == 0));
}

#[test]
fn a_rate_limited_sleep_pays_the_timer_setup() {
    // One request every 200 us, about 10 us each: ahead of its rate by
    // about 190 us, more than fio's sleep granularity (about 55 us), the
    // thread calls nanosleep once per I/O, so each ns of timer set-up is a
    // ns of its CPU per I/O (the sleep itself is that much shorter: fio
    // asks for what is left less the granularity, which includes it).
    let mut job = psync("capped");
    if let Work::Io(io) = &mut job.work {
        io.rate_iops = Some(5_000);
    }
    let cpu_per_io = |setup: u64| {
        let mut sc = short(scenario("optane-p4800x", vec![none()], vec![job.clone()]));
        sc.duration = 40 * MS;
        sc.host.timer_setup = cint_scenario::units::Duration(setup);
        let r = &run(&sc)[0];
        let j = &r.jobs[0];
        assert!((j.iops - 5_000.0).abs() < 100.0, "{}", j.iops);
        // Every I/O is a sleep on the timer and a wake-up by it plus one
        // by the completion.
        let per_io = j.wakeups as f64 / j.ios as f64;
        assert!((per_io - 2.0).abs() < 0.05, "{per_io} wake-ups per I/O");
        j.cpu_util * 1e9 / j.iops
    };
    let extra = cpu_per_io(5_000) - cpu_per_io(0);
    assert!((extra - 5_000.0).abs() < 250.0, "{extra} ns per I/O");
}

#[test]
fn fio_spins_through_a_rate_gap_shorter_than_its_sleep_granularity() {
    // One request every 20 us, about 10 us each: fio is ahead by about
    // 10 us, under the ~55 us its nanosleep takes at the least, so it
    // spins (time.c usec_sleep): no timer, one wake-up per I/O (the
    // completion's), and its core busy all the time.
    let mut job = psync("capped");
    if let Work::Io(io) = &mut job.work {
        io.rate_iops = Some(50_000);
    }
    let sc = short(scenario("optane-p4800x", vec![none()], vec![job]));
    let r = &run(&sc)[0];
    let j = &r.jobs[0];
    assert!((j.iops - 50_000.0).abs() < 1_000.0, "{}", j.iops);
    let per_io = j.wakeups as f64 / j.ios as f64;
    assert!((per_io - 1.0).abs() < 0.02, "{per_io} wake-ups per I/O");
    assert!(j.cpu_util > 0.5, "the spin is CPU time: {}", j.cpu_util);
}

#[test]
fn a_long_sleep_of_fio_wakes_at_the_end_of_the_timer_slack() {
    // 100 us of think time after each request, spin 0: fio asks nanosleep
    // for 100 us less its granularity, which the task's timer slack
    // dominates, and the kernel ends the sleep at the end of the slack
    // range; whatever the slack, the loop takes about 100 us of sleep and
    // spin per request. Without slack the granularity shrinks with it,
    // and the sleep is almost all of the pause.
    let mut job = psync("thinker");
    if let Work::Io(io) = &mut job.work {
        io.shape.thinktime = 100 * US;
    }
    let run_with = |slack: u64| {
        let mut sc = short(scenario("optane-p4800x", vec![none()], vec![job.clone()]));
        sc.duration = 20 * MS;
        sc.host.task_timer_slack = cint_scenario::units::Duration(slack);
        let r = &run(&sc)[0];
        let j = r.jobs[0].clone();
        (j.iops, j.cpu_util, j.wakeups as f64 / j.ios as f64)
    };
    let (iops_50, cpu_50, wakes_50) = run_with(50 * US);
    let (iops_0, cpu_0, wakes_0) = run_with(0);
    // About 110 us per loop either way.
    for iops in [iops_50, iops_0] {
        assert!((8_500.0..9_500.0).contains(&iops), "{iops}");
    }
    assert!((wakes_50 - 2.0).abs() < 0.05 && (wakes_0 - 2.0).abs() < 0.05);
    // The spin after the sleep is about 1 us either way: the CPU does not
    // follow the slack.
    assert!((cpu_50 - cpu_0).abs() < 0.02, "{cpu_50} against {cpu_0}");
}

#[test]
fn zero_scheduler_times_are_refused_not_rounded_up() {
    // The validator refuses them at their line; a scenario built in code
    // gets an error too, never a silent 1 ns.
    for key in ["sched_latency", "sched_min_granularity", "poll_iteration"] {
        let mut sc = short(scenario("optane-p4800x", vec![none()], vec![psync("p")]));
        let zero = cint_scenario::units::Duration(0);
        match key {
            "sched_latency" => sc.host.sched_latency = zero,
            "sched_min_granularity" => sc.host.sched_min_granularity = zero,
            _ => sc.host.poll_iteration = zero,
        }
        let err = cint_sim::run(&sc).expect_err("zero is refused");
        assert_eq!(err.key, Some(format!("host.{key}")), "{err}");
    }
}

/// The workload generator's user-space work per I/O is CPU time on the
/// job's thread, outside the measured latency; `gtod_reduce` lowers it
/// by the profile's difference.
#[test]
fn the_generators_cpu_per_io_is_on_its_thread_and_gtod_reduce_lowers_it() {
    let plain = short(scenario("optane-p4800x", vec![none()], vec![psync("sync")]));
    let mut reduced = plain.clone();
    if let Work::Io(io) = &mut reduced.jobs[0].work {
        io.gtod_reduce = true;
    }
    let (a, b) = (&run(&plain)[0].jobs[0], &run(&reduced)[0].jobs[0]);
    let window = plain.duration as f64;
    let cpu_per_io = |j: &cint_report::JobResult| j.cpu_util * window / j.ios as f64;
    let host = &plain.host;
    let saved = (host.user_per_io.0 - host.user_per_io_gtod_reduce.0) as f64;
    let got = cpu_per_io(a) - cpu_per_io(b);
    assert!(
        (got - saved).abs() < 0.2 * saved,
        "{got} ns less CPU per I/O, the profile says {saved}"
    );
    // Latency runs from the system call to its return: the generator's
    // own work is not in it.
    let (la, lb) = (a.lat_ns.mean, b.lat_ns.mean);
    assert!((la - lb).abs() < 100.0, "{la} vs {lb}");
}

/// The generator's work per I/O falls where fio does it
/// (`user_issue_share`): accounting a completion as soon as the reap call
/// returns, preparing a request right before the call that submits it.
/// For a synchronous reader both parts lie between the same two system
/// calls, so the split changes nothing, not even the latency (the clock
/// starts at the call, after the preparation).
#[test]
fn splitting_the_generators_work_moves_it_but_never_changes_its_amount() {
    let at = |share: f64| {
        let mut sc = short(scenario("optane-p4800x", vec![none()], vec![psync("sync")]));
        sc.host.user_issue_share = share;
        run(&sc).remove(0).jobs.remove(0)
    };
    let (reap_side, issue_side) = (at(0.0), at(1.0));
    // The whole run is shifted by the first request's preparation, which
    // only the issuing side has: one request more or less in the window.
    assert!(reap_side.ios.abs_diff(issue_side.ios) <= 1);
    assert!((reap_side.cpu_util - issue_side.cpu_util).abs() < 1e-3);
    assert!((reap_side.lat_ns.mean - issue_side.lat_ns.mean).abs() < 1.0);
}

/// Where the split matters: a libaio thread that reaps up to 16 events
/// and then submits one request per call (the cinterrupts artifact's
/// `fig5` job) beside a psync reader, under adaptive coalescing (6 us /
/// 32). After each interrupt the reader submits first; if the async
/// thread's first new request reaches the device more than delta after
/// the read, the read's completion stands alone long enough for an
/// interrupt of its own. Preparing all sixteen requests before the first
/// submission (share 0) opens that gap; preparing each right before its
/// own call (fio's way) closes it, so the read waits for the end of the
/// async stream, as the paper's Figure 5 measured (4.39 times
/// cinterrupts' latency).
#[test]
fn preparing_each_request_before_its_own_call_keeps_the_async_stream_dense() {
    let at = |share: f64| {
        let async_job = fig5_libaio("async");
        let mut sc = short(scenario(
            "optane-p4800x",
            vec![adaptive(6 * US, 32)],
            vec![async_job, psync("sync")],
        ));
        sc.duration = 50 * MS;
        sc.host.user_issue_share = share;
        run(&sc).remove(0)
    };
    let (all_first, each_before) = (at(0.0), at(0.8));
    let sync_p50 = |r: &StrategyResult| r.jobs[1].lat_ns.at(50.0).expect("p50") as f64 / 1e3;
    assert!(
        sync_p50(&all_first) < 25.0,
        "share 0: the read should mostly get its own interrupt (p50 {} us)",
        sync_p50(&all_first)
    );
    assert!(
        sync_p50(&each_before) > 50.0,
        "share 0.8: the read should wait for the stream's end (p50 {} us)",
        sync_p50(&each_before)
    );
    assert!(
        each_before.interrupts_per_s < 0.75 * all_first.interrupts_per_s,
        "{} vs {} IRQ/s",
        each_before.interrupts_per_s,
        all_first.interrupts_per_s
    );
}

#[test]
fn a_job_spread_over_cores_runs_one_thread_per_core_in_turn() {
    // fio's cpus_allowed_policy=split: four threads over two cores, two on
    // each, against the same four threads all on core 0.
    let mut spread = psync("r");
    spread.numjobs = 4;
    let pinned = spread.clone();
    spread.cpus = vec![0, 1];
    let run_on = |job| {
        let mut sc = short(scenario("optane-p4800x", vec![none()], vec![job]));
        sc.host.cores = 2;
        run(&sc).remove(0)
    };
    let (spread, pinned) = (run_on(spread), run_on(pinned));
    // Both cores busy when spread, one idle when pinned.
    assert!(
        spread.cpu_util > 1.5 * pinned.cpu_util,
        "{} {}",
        spread.cpu_util,
        pinned.cpu_util
    );
    // Two readers per core instead of four: more I/Os per second.
    assert!(spread.total_iops() > 1.3 * pinned.total_iops());
}

/// A scenario of busy loops on `cores` cores: `jobs` are `(name, numjobs,
/// cpus, group)`, and `extra` is appended (`[[sched_group]]` tables).
fn loops(cores: u32, jobs: &[(&str, u32, &str, Option<&str>)], extra: &str) -> Scenario {
    let mut text = format!(
        "name = \"groups\"\nduration = \"400ms\"\nwarmup = \"100ms\"\n\
         [device]\nmodel = \"optane-p4800x\"\n[host]\nmodel = \"xeon-e5-2660v4\"\ncores = {cores}\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n"
    );
    for (name, n, cpus, group) in jobs {
        text.push_str(&format!(
            "[[job]]\nname = \"{name}\"\nkind = \"cpu\"\nnumjobs = {n}\ncpus = {cpus}\n"
        ));
        if let Some(g) = group {
            text.push_str(&format!("sched_group = \"{g}\"\n"));
        }
    }
    text.push_str(extra);
    cint_scenario::load_str(&text, "groups.toml", &[]).expect("valid")
}

/// Each job's share of the CPU time its jobs had.
fn shares(r: &[StrategyResult]) -> Vec<f64> {
    let total: f64 = r[0].jobs.iter().map(|j| j.cpu_util).sum();
    r[0].jobs.iter().map(|j| j.cpu_util / total).collect()
}

/// CFS task groups: two groups of one and three busy threads on one
/// core get half of it each (each group's entity weighs its 1024
/// shares), where the four threads of one group, or of none, get a
/// quarter each.
#[test]
fn two_task_groups_share_a_core_evenly_whatever_their_threads() {
    let grouped = shares(&run(&loops(
        1,
        &[("one", 1, "[0]", Some("a")), ("three", 3, "[0]", Some("b"))],
        "",
    )));
    assert!((grouped[0] - 0.5).abs() < 0.01, "{grouped:?}");
    for together in [Some("a"), None] {
        let flat = shares(&run(&loops(
            1,
            &[("one", 1, "[0]", together), ("three", 3, "[0]", together)],
            "",
        )));
        assert!((flat[0] - 0.25).abs() < 0.01, "{flat:?}");
    }
}

/// `cpu.shares` of 2048 against 1024: two thirds of the core.
#[test]
fn task_group_shares_weigh_the_groups() {
    let r = shares(&run(&loops(
        1,
        &[("one", 1, "[0]", Some("a")), ("three", 3, "[0]", Some("b"))],
        "[[sched_group]]\nname = \"a\"\nshares = 2048\n",
    )));
    assert!((r[0] - 2.0 / 3.0).abs() < 0.01, "{r:?}");
}

/// A group busy on two cores beside a group busy on core 0 only, run
/// under the scheduler tick `tick` after a warm-up long enough for PELT's
/// averages to settle (some ten half-lives of 32 ms): the spread group's
/// share of core 0's thread time.
fn spread_groups_share_of_core0(tick: cint_scenario::units::Duration) -> f64 {
    let mut sc = loops(
        2,
        &[
            ("spread", 2, "[0, 1]", Some("a")),
            ("here", 2, "[0]", Some("b")),
        ],
        "",
    );
    sc.warmup = 400 * MS;
    sc.host.tick = tick;
    let r = run(&sc);
    // The spread job's thread on core 1 runs alone: a whole core.
    let on_core0 = r[0].jobs[0].cpu_util - 1.0;
    let here = r[0].jobs[1].cpu_util;
    on_core0 / (on_core0 + here)
}

/// `calc_group_shares()`: a group busy on two cores weighs half its
/// shares on each (its load is spread), so on the core it shares with a
/// group busy only there it gets a third: 1024 * 1024 / (1024 + its other
/// core's PELT average, 1002 to 1024) = 512 to 517 against 1024.
#[test]
fn a_task_group_spread_over_two_cores_weighs_half_its_shares_on_each() {
    let kernels = cint_scenario::units::Duration(4 * MS);
    let third = spread_groups_share_of_core0(kernels);
    assert!((0.33..0.345).contains(&third), "{third}");
}

/// Busy loops never block, so their groups are reweighted, and their
/// slices checked, only at the scheduler tick (`host.tick`,
/// `entity_tick()`): with a tick longer than the run, the thread first
/// picked on the shared core keeps it throughout, where the kernel's 4 ms
/// tick shares it a third to two thirds (the test above).
#[test]
fn busy_task_groups_take_turns_only_at_the_hosts_tick() {
    let share = spread_groups_share_of_core0(cint_scenario::units::Duration(3_600_000 * MS));
    assert!(!(0.01..0.99).contains(&share), "{share}");
}

/// A group whose threads block on reads is not on the core while they
/// wait: beside it a busy group's thread gets about half of the thread
/// time, where the same thread among the readers in one group (or none)
/// gets its quarter's worth or less as each reader wakes and preempts it.
#[test]
fn a_task_group_of_sleepers_does_not_crowd_out_a_busy_group() {
    let text = |group: &str| {
        format!(
            "name = \"sleepy\"\nduration = \"300ms\"\nwarmup = \"50ms\"\n\
             [device]\nmodel = \"optane-p4800x\"\n[host]\nmodel = \"xeon-e5-2660v4\"\ncores = 1\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[job]]\nname = \"busy\"\nkind = \"cpu\"\nsched_group = \"a\"\n\
             [[job]]\nname = \"readers\"\nengine = \"psync\"\nrw = \"randread\"\nbs = \"4k\"\n\
             direct = true\nnumjobs = 3\nsched_group = \"{group}\"\n"
        )
    };
    let busy = |group: &str| {
        let sc = cint_scenario::load_str(&text(group), "sleepy.toml", &[]).expect("valid");
        shares(&run(&sc))[0]
    };
    let (apart, together) = (busy("b"), busy("a"));
    assert!(apart > 0.45, "{apart}");
    assert!(together < 0.3, "{together}");
}

#[test]
fn hybrid_polling_statistics_count_the_oversleep_of_requests_done_during_the_sleep() {
    // Linux 5.0 takes a request's statistics sample when the poll loop
    // ends it (blk_stat_add from __blk_mq_end_request), so a request that
    // completes while its poller still sleeps counts until the wake-up.
    // With a timer slack far above the device time every request ends
    // during the sleep: each window's mean becomes the last sleep plus
    // the slack and the wake-up, so the sleep grows towards twice that,
    // where counting the device time alone would keep it at half the
    // device time.
    let mut sc = scenario(
        "optane-p4800x",
        vec![
            strategy("poll", CompletionMode::Poll),
            strategy("hybrid", CompletionMode::HybridPoll(HybridSleep::Adaptive)),
        ],
        vec![preadv2_hipri("r")],
    );
    sc.host.timer_slack = cint_scenario::units::Duration(20 * US);
    sc.warmup = 400 * MS;
    sc.duration = 100 * MS;
    let r = run(&sc);
    let (poll, hybrid) = (&r[0], &r[1]);
    // Classic polling's latency is the device time (7.8 us) plus a poll
    // iteration: far below the slack.
    let device = poll.jobs[0].lat_ns.mean;
    let slack = sc.host.timer_slack.0 as f64;
    assert!(device < slack / 2.0, "{device}");
    // Counting device time only, the latency would be half of it plus
    // the slack and the wake-up (27.1 us). With the oversleep counted the
    // sleep converges towards the slack plus the wake-up, one window
    // halving the gap, and the latency towards twice that (43.6 us).
    let lat = hybrid.jobs[0].lat_ns.mean;
    assert!(lat > device + 1.5 * slack, "{lat} {device}");
    assert!(lat < device + 2.0 * slack, "{lat} {device}");
}

#[test]
fn hybrid_polling_sleeps_for_the_polled_requests_own_class() {
    // Linux 5.0's blk_mq_poll_nsecs reads the class (direction, size) of
    // the request being polled. On a device whose writes complete far
    // sooner than its reads, a mixed job's writes must sleep half the
    // write mean, not the read mean.
    let mut job = preadv2_hipri("rw");
    if let Work::Io(io) = &mut job.work {
        io.rw = cint_scenario::Rw::RandRw;
        io.rwmixread = 50;
    }
    let mut sc = scenario(
        "p3700",
        vec![
            strategy("poll", CompletionMode::Poll),
            strategy("hybrid", CompletionMode::HybridPoll(HybridSleep::Adaptive)),
        ],
        vec![job],
    );
    sc.warmup = 210 * MS;
    sc.duration = 50 * MS;
    let r = run(&sc);
    let fio = r[0].jobs[0].fio.as_ref().expect("fio data");
    let (read, write) = (fio.read.lat.mean, fio.write.lat.mean);
    // p3700: reads about 79 us, writes about 455 us, alternating at
    // random. Each sleeps half its own mean and spins the other half: the
    // core is busy about half the time. Sleeping half the read mean
    // before a write too would spin away 416 of its 455 us (85% busy).
    assert!(write > 5.0 * read, "{read} {write}");
    let busy = r[1].cpu_util;
    assert!(busy > 0.45 && busy < 0.6, "{busy}");
}

#[test]
fn interrupt_completions_feed_the_block_layers_hybrid_poll_statistics() {
    // Linux 5.0 samples every request its queue ends once the statistics
    // are on (RQF_STATS, __blk_mq_end_request), interrupt-driven ones too.
    // A 4 KiB poller turns them on in its first 10 ms; a reader that does
    // not poll keeps the 8 KiB class's mean published; an 8 KiB poller
    // starting at 150 ms then sleeps from its first request. Counting
    // polled requests only, it would spin until its own first window
    // ends, 100 ms after its first completion, past this run's end.
    let mut first = preadv2_hipri("first");
    first.runtime = Some(10 * MS);
    let mut late = preadv2_hipri("late");
    late.cpu = 1;
    late.schedule.startdelay = 150 * MS;
    let mut plain = psync("plain");
    plain.cpu = 2;
    for job in [&mut late, &mut plain] {
        if let Work::Io(io) = &mut job.work {
            io.bs = 8192;
        }
    }
    let mut sc = scenario(
        "optane-p4800x",
        vec![strategy(
            "hybrid",
            CompletionMode::HybridPoll(HybridSleep::Adaptive),
        )],
        vec![first, late, plain],
    );
    sc.host.cores = sc.host.cores.max(3);
    // A job's warm-up runs from its own start: the late poller is
    // measured from 155 ms to the end, 205 ms.
    sc.warmup = 5 * MS;
    sc.duration = 200 * MS;
    let r = run(&sc);
    let job = &r[0].jobs[1];
    eprintln!("{} {}", job.ios, job.context_switches);
    assert!(job.ios > 1_000, "{}", job.ios);
    // One sleep, so one switch back in, per I/O: it never spun through.
    let per_io = job.context_switches as f64 / job.ios as f64;
    assert!(per_io > 0.9, "{per_io}");
}
