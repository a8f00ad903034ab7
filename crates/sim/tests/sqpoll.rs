//! io_uring's submission-queue polling (`sqpoll`, fio's `sqthread_poll`)
//! in the simulator: the ring's thread makes no system call, its SQ
//! thread spins on its own core, polls the polled requests, runs the
//! interrupts' task work, sleeps after its idle time, and shares a core
//! as Linux's scheduler shares it.

use cint_report::{JobResult, RunResult, StrategyResult};

fn run(text: &str) -> RunResult {
    let sc = cint_scenario::load_str(text, "sq.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    let first = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"));
    let again = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cint_report::to_json(&first).expect("json"),
        cint_report::to_json(&again).expect("json"),
        "deterministic"
    );
    first
}

/// One io_uring job, `extra` its further keys, on `host` with `cores`,
/// under each strategy kind of `kinds`.
fn scenario(host: &str, cores: u32, duration: &str, kinds: &[&str], extra: &str) -> String {
    let mut text = format!(
        "name = \"sq\"\nduration = \"{duration}\"\nwarmup = \"5ms\"\n\
         [device]\nmodel = \"optane-p4800x\"\n[host]\nmodel = \"{host}\"\ncores = {cores}\n"
    );
    for k in kinds {
        text.push_str(&format!("[[strategy]]\nname = \"{k}\"\nkind = \"{k}\"\n"));
    }
    text.push_str(&format!(
        "[[job]]\nname = \"ring\"\nengine = \"io_uring\"\nrw = \"randread\"\nbs = \"4k\"\n\
         cpu = 0\n{extra}\n"
    ));
    text
}

fn strategy<'a>(r: &'a RunResult, name: &str) -> &'a StrategyResult {
    r.results
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("no strategy {name}"))
}

fn ring<'a>(r: &'a RunResult, name: &str) -> &'a JobResult {
    &strategy(r, name).jobs[0]
}

const E5: &str = "xeon-e5-2660v4";

#[test]
fn a_polled_ring_makes_no_system_call_and_its_sq_thread_takes_a_core() {
    let plain = run(&scenario(E5, 2, "50ms", &["none"], "iodepth = 1"));
    let polled = run(&scenario(
        E5,
        2,
        "50ms",
        &["none"],
        "iodepth = 1\nsqpoll = true\nsqpoll_cpu = 1",
    ));
    let (p, q) = (ring(&plain, "none"), ring(&polled, "none"));
    // Without the system calls, the wake-up and the switch back, a
    // request at depth 1 comes back sooner: the device's time stays.
    assert!(
        q.lat_ns.mean < 0.95 * p.lat_ns.mean,
        "{} against {}",
        q.lat_ns.mean,
        p.lat_ns.mean
    );
    assert!(q.lat_ns.mean > 7_000.0, "{}", q.lat_ns.mean);
    // The ring's thread spins on its completion ring instead of sleeping.
    assert_eq!(q.context_switches, 0);
    assert_eq!(q.wakeups, 0);
    // Both cores spin: the job's thread and its SQ thread.
    assert!(q.cpu_util > 1.7, "{}", q.cpu_util);
    assert!(p.cpu_util < 0.5, "{}", p.cpu_util);
    // fio counts one thread; its spin is user time, the SQ thread's the
    // kernel's.
    let fio = q.fio.as_ref().expect("fio data");
    assert_eq!(fio.threads, 1);
    // fio sets disable_slat with an SQ thread: no submission latency,
    // the completion latency from the issue.
    assert_eq!(fio.read.slat.n, 0);
    assert_eq!(fio.read.clat.n, fio.read.ios);
    assert!(fio.usr_ns > fio.sys_ns / 2, "{} {}", fio.usr_ns, fio.sys_ns);
    // Each request is still one interrupt.
    let s = strategy(&polled, "none");
    assert!(
        (s.interrupts as f64 / q.ios as f64 - 1.0).abs() < 0.01,
        "{} interrupts for {} I/Os",
        s.interrupts,
        q.ios
    );
    assert!(polled.notes.is_empty(), "{:?}", polled.notes);
}

#[test]
fn polled_requests_are_reaped_by_the_sq_thread_without_interrupts() {
    let r = run(&scenario(
        E5,
        2,
        "30ms",
        &["poll", "none"],
        "iodepth = 8\nbatch = 4\nbatch_complete_min = 2\nhipri = true\nsqpoll = true\n\
         sqpoll_cpu = 1",
    ));
    let polled = strategy(&r, "poll");
    assert_eq!(polled.interrupts, 0);
    let q = ring(&r, "poll");
    assert!(q.ios > 10_000, "{}", q.ios);
    assert_eq!(q.context_switches, 0);
    // Under an interrupt strategy the same job's requests interrupt, on
    // the SQ thread's core, whose queue they went to: that core, handling
    // them and submitting, becomes the limit.
    let irq = strategy(&r, "none");
    let i = ring(&r, "none");
    assert!(irq.interrupts > 5_000, "{}", irq.interrupts);
    assert!(i.ios * 4 < q.ios * 3, "{} against {}", i.ios, q.ios);
}

/// On the Linux 5.15 host an interrupt queues its completion as task
/// work to the SQ thread, which posts it in its loop; on Linux 5.6 the
/// handler posts it. With the SQ thread spinning on a core of its own,
/// the hop costs a turn of its loop, not a wake-up.
#[test]
fn task_work_goes_through_the_sq_thread_on_the_newer_kernel() {
    let text = scenario(
        "xeon-e3-1230v5",
        4,
        "30ms",
        &["none"],
        "iodepth = 4\nsqpoll = true\nsqpoll_cpu = 1",
    )
    // The 900P has the power data that the cores' residencies need.
    .replace("optane-p4800x", "optane-900p");
    let with = run(&text);
    let without =
        run(&format!("{text}\n").replace("cores = 4\n", "cores = 4\nuring_task_work = false\n"));
    let (a, b) = (ring(&with, "none"), ring(&without, "none"));
    assert!(a.ios > 1_000 && b.ios > 1_000);
    // The SQ thread submits, so the requests go to its CPU's queue, and
    // their interrupts to its CPU: the ring's thread's core takes none.
    // (The residencies are per physical core: with four CPUs, CPU 1 is
    // core 1's first thread, CPU 0 core 0's.)
    let irq_share = |r: &RunResult, core: u32| {
        let e = r.results[0]
            .energy
            .as_ref()
            .expect("the host has power data");
        let c = e
            .cores
            .iter()
            .find(|c| c.core == core)
            .expect("core listed");
        c.residency
            .iter()
            .find(|s| s.state == "irq")
            .map_or(0.0, |s| s.share)
    };
    for r in [&with, &without] {
        assert_eq!(irq_share(r, 0), 0.0);
        assert!(irq_share(r, 1) > 0.01, "{}", irq_share(r, 1));
    }
    assert_eq!(
        a.wakeups + b.wakeups,
        0,
        "a spinning SQ thread is not woken"
    );
    assert!(
        a.lat_ns.mean >= b.lat_ns.mean,
        "{} {}",
        a.lat_ns.mean,
        b.lat_ns.mean
    );
}

/// The SQ thread spins `sq_thread_idle` (1 s) with nothing to do, then
/// sleeps until the ring's next commit wakes it: a job idle 1.5 s between
/// requests keeps its SQ thread's core busy about two thirds of the time,
/// one idle 0.5 s all of it.
#[test]
fn an_idle_sq_thread_sleeps_after_a_second_and_the_commit_wakes_it() {
    let long = run(&scenario(
        E5,
        2,
        "6s",
        &["none"],
        "thinktime = \"1500ms\"\nsqpoll = true\nsqpoll_cpu = 1",
    ));
    let short = run(&scenario(
        E5,
        2,
        "6s",
        &["none"],
        "thinktime = \"500ms\"\nsqpoll = true\nsqpoll_cpu = 1",
    ));
    let (l, s) = (ring(&long, "none"), ring(&short, "none"));
    assert!(l.ios >= 3 && s.ios >= 10, "{} {}", l.ios, s.ios);
    assert!(
        (0.55..0.8).contains(&l.cpu_util),
        "SQ thread asleep a third of the time: {}",
        l.cpu_util
    );
    assert!(s.cpu_util > 0.95, "never asleep: {}", s.cpu_util);
    // One wake-up per request from the think time's sleep; after 1.5 s
    // of it the SQ thread sleeps too, and the next commit wakes it.
    assert_eq!(s.wakeups, s.ios);
    assert!(l.wakeups >= 2 * l.ios - 1, "{} {}", l.wakeups, l.ios);
}

/// Without `sqpoll_cpu` the SQ thread runs on its ring's thread's core:
/// both spin, and each waits for the other's time slice, so a request
/// takes milliseconds. The result says why.
#[test]
fn an_sq_thread_beside_its_ring_thread_waits_for_time_slices_and_says_so() {
    let r = run(&scenario(E5, 1, "100ms", &["none"], "sqpoll = true"));
    let q = ring(&r, "none");
    assert!(q.ios > 0);
    assert!(q.lat_ns.mean > 1_000_000.0, "{}", q.lat_ns.mean);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("job 'ring'") && n.contains("sqpoll_cpu")),
        "{:?}",
        r.notes
    );
}

/// A job that ends (its `runtime`) stops its SQ thread too: the core it
/// spun on goes idle.
#[test]
fn the_sq_thread_exits_with_its_ring_thread() {
    let r = run(&scenario(
        E5,
        2,
        "50ms",
        &["none"],
        "iodepth = 4\nruntime = \"10ms\"\nsqpoll = true\nsqpoll_cpu = 1",
    ));
    let q = ring(&r, "none");
    assert!(q.ios > 1_000, "{}", q.ios);
    // Both threads spun through the job's 10 ms window (its own CPU
    // share is over that window: about two cores), then nothing ran: the
    // two cores were busy for about a fifth of the run.
    assert!(q.cpu_util > 1.5, "{}", q.cpu_util);
    let cores = r.results[0].cpu_util;
    assert!(cores < 0.3, "{cores}");
}

/// Three rings whose SQ threads share a core, each keeping 40 polled
/// requests in flight on a device queue of 16 tags: an SQ thread short of
/// a tag polls its own requests in the middle of its submission, and work
/// that arrives meanwhile (the ring's next entries) waits for the
/// submission to end. Every request reaches the device once (this is
/// the random scenarios' seed 3004535, where an SQ thread resubmitted a
/// request when the next entries cut that poll short). The rings' threads
/// spin on one core for 14 completions a call, and their first calls
/// return after about 24 ms: the run measures 40 ms, so that the job has
/// requests to count (its 20 ms ended with none once the warm-up's end
/// stopped preempting a thread in the middle of its turn).
#[test]
fn sq_threads_short_of_tags_finish_their_submission_first() {
    let r = run(r#"name = "tags"
seed = 3004535
duration = "40ms"
warmup = "2ms"
[device]
model = "optane-900p"
queue_depth = 16
[host]
model = "xeon-e5-2660v4"
cores = 2
user_issue_share = 0.3
uring_task_work = false
[[strategy]]
name = "s0"
kind = "hybrid-poll"
sleep = "min"
interrupts = "cinterrupts"
[[job]]
name = "j0"
cpu = 1
engine = "io_uring"
rw = "randread"
bs = "4k"
numjobs = 3
iodepth = 40
batch_complete_min = 14
hipri = true
think = "16us"
bsrange = "4k-1m"
sqpoll = true
sqpoll_cpu = 0
[[job]]
name = "j1"
cpu = 0
engine = "psync"
rw = "readwrite"
bs = "1m"
numjobs = 3
rwmixread = 30
think = "11us"
iodepth = 4
submit_mode = "offload"
"#);
    assert!(r.results[0].jobs[0].ios > 0);
}
