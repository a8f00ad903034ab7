//! What the simulator measures for fio's JSON output: per-direction
//! histograms, slat/clat/lat as fio splits them, user and system CPU.

use cint_report::{FioJobData, JobResult};

fn sim(text: &str) -> Vec<JobResult> {
    let sc = cint_scenario::load_str(text, "fio-metrics.toml", &[]).expect("valid scenario");
    let mut r = cint_sim::run(&sc).expect("the simulator runs a valid scenario");
    r.results.remove(0).jobs
}

fn fio(job: &JobResult) -> &FioJobData {
    job.fio.as_ref().expect("the simulator measures fio's data")
}

const MIXED: &str = r#"
name = "fio-metrics"
duration = "20ms"
warmup = "2ms"
[host]
cores = 2
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "aio"
cpu = 0
engine = "libaio"
rw = "randrw"
rwmixread = 70
iodepth = 8
batch = 4
batch_complete_min = 4
think = "3us"
[[job]]
name = "sync"
cpu = 0
engine = "psync"
rw = "randwrite"
[[job]]
name = "spin"
cpu = 1
kind = "cpu"
"#;

#[test]
fn directions_add_up_to_the_job_and_latencies_split_as_fio_splits_them() {
    let jobs = sim(MIXED);
    for job in &jobs[..2] {
        let d = fio(job);
        assert_eq!(d.read.ios + d.write.ios, job.ios, "{}", job.name);
        assert_eq!(d.read.bytes + d.write.bytes, job.ios * 4096);
        assert_eq!(d.read.lat.n + d.write.lat.n, job.lat_ns.n);
        for dir in [&d.read, &d.write] {
            assert_eq!(dir.clat.n, dir.ios);
            assert_eq!(dir.lat.n, dir.ios);
            assert_eq!(dir.lat.bins.iter().map(|b| b.1).sum::<u64>(), dir.ios);
        }
    }
    let aio = fio(&jobs[0]);
    // About 70% reads.
    let share = aio.read.ios as f64 / jobs[0].ios as f64;
    assert!((0.6..0.8).contains(&share), "{share}");
    // Asynchronous: every request's lat is its slat plus its clat, so the
    // means add up too, and the submission call takes time.
    for dir in [&aio.read, &aio.write] {
        assert_eq!(dir.slat.n, dir.ios);
        assert!(dir.slat.min > 0);
        let sum = dir.slat.mean + dir.clat.mean;
        assert!((dir.lat.mean - sum).abs() < 1e-6 * dir.lat.mean, "{dir:?}");
        assert!(dir.lat.min >= dir.slat.min + dir.clat.min);
    }
    // Synchronous: fio measures no slat; clat is the whole call.
    let sync = fio(&jobs[1]);
    assert_eq!((sync.read.ios, sync.read.lat.n), (0, 0));
    assert_eq!(sync.write.slat.n, 0);
    assert_eq!(sync.write.clat, sync.write.lat);
}

#[test]
fn user_time_is_the_applications_work_and_system_time_the_rest() {
    let jobs = sim(MIXED);
    let window = fio(&jobs[0]).runtime_ns;
    assert_eq!(window, 20_000_000);
    // The busy loop alone on its core: all user time.
    let spin = fio(&jobs[2]);
    assert_eq!(
        spin.usr_ns + spin.sys_ns,
        window,
        "it never leaves its core"
    );
    assert_eq!(spin.sys_ns, 0);
    assert_eq!((spin.read.ios, spin.write.ios), (0, 0));
    // The libaio job thinks 3 us per completed I/O in user mode, and the
    // generator's own work per I/O (the host's `user_per_io`) is user
    // mode too; a burst cut by the window's edges is counted only for its
    // part inside.
    let generator = cint_scenario::HostProfile::builtin("xeon-e5-2660v4")
        .expect("built-in host")
        .user_per_io
        .0;
    let aio = fio(&jobs[0]);
    let think = (3_000 + generator) * jobs[0].ios;
    let slack = (3_000 + generator) * 8;
    assert!(
        aio.usr_ns + slack >= think && aio.usr_ns <= think + slack,
        "user {} ns for {} I/Os",
        aio.usr_ns,
        jobs[0].ios
    );
    assert!(aio.sys_ns > 0, "system calls");
    // No think time: the psync thread's user time is the generator's.
    let sync = fio(&jobs[1]);
    let own = generator * jobs[1].ios;
    assert!(
        sync.usr_ns + generator >= own && sync.usr_ns <= own + generator,
        "user {} ns for {} I/Os",
        sync.usr_ns,
        jobs[1].ios
    );
    assert!(sync.sys_ns > sync.usr_ns);
    // Together they are the CPU share the result reports.
    for (job, d) in jobs.iter().map(|j| (j, fio(j))) {
        let cpu = (d.usr_ns + d.sys_ns) as f64 / window as f64;
        assert!((cpu - job.cpu_util).abs() < 1e-12, "{}", job.name);
    }
}

/// fio's `sync` figures: one sample per `fsync` or `fdatasync` call, from
/// its entry to its return; a direct job's call costs its entry and exit,
/// a buffered job's waits for the file's writeback.
#[test]
fn fsync_calls_are_counted_and_timed_as_fios_sync_figures() {
    let run = |direct: bool| {
        let text = format!(
            "name = \"s\"\nduration = \"20ms\"\nwarmup = \"2ms\"\n[host]\ncores = 2\n\
             [host.page_cache]\nmemory = \"1GiB\"\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n[[job]]\nname = \"w\"\ncpu = 1\n\
             engine = \"psync\"\nrw = \"randwrite\"\nsize = \"1g\"\ndirect = {direct}\nfdatasync = 4\n"
        );
        let job = sim(&text).remove(0);
        fio(&job).clone()
    };
    for d in [run(true), run(false)] {
        let calls = d.sync.ios;
        assert!(
            calls > 0 && calls.abs_diff(d.write.ios / 4) <= 1,
            "{calls} calls for {} writes",
            d.write.ios
        );
        assert_eq!(d.sync.lat.n, calls);
    }
    let (direct, buffered) = (run(true).sync.lat.mean, run(false).sync.lat.mean);
    assert!(
        direct > 0.0 && direct < 2_000.0,
        "entry and exit: {direct} ns"
    );
    assert!(
        buffered > 10.0 * direct,
        "the buffered call waits for its writes: {buffered} ns against {direct}"
    );
}
