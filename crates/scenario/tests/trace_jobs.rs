//! Jobs with `trace = "FILE"`: the trace's streams become threads on
//! their cores, open-loop release instants are the trace times scaled in
//! exact integers, and every refusal names the scenario line, the key, the
//! trace file and the record.

use std::path::Path;

use cint_scenario::trace::{scale, TraceMode};
use cint_scenario::{load_str, to_toml, Engine, Rw, Scenario, Work};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

fn scenario(job: &str) -> String {
    format!(
        "name = \"t\"\n[host]\nmodel = \"xeon-e5-2660v4\"\ncores = 2\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n[[job]]\nname = \"r\"\n{job}"
    )
}

fn load(job: &str) -> Result<Scenario, String> {
    load_str(&scenario(job), "s.toml", &[]).map_err(|e| e.to_string())
}

const IOLOG: &[u8] = b"fio version 3 iolog\n0 a add\n0 b add\n\
    10 a read 0 4096\n15 b write 8192 16384\n1000001 a read 4096 4096\n";

#[test]
fn streams_become_threads_with_exact_release_instants() {
    let dir = cint_test_support::temp_dir("trace-jobs");
    let path = write(dir.path(), "t.iolog", IOLOG);
    let sc = load(&format!("trace = {path:?}\ntrace_speed = 3\ncpus = [1]\n")).unwrap();
    let job = &sc.jobs[0];
    assert_eq!(job.numjobs, 2);
    assert_eq!(job.cpus, [1, 1]);
    let Work::Io(io) = &job.work else {
        panic!("an I/O job")
    };
    assert_eq!(io.engine, Engine::IoUring);
    assert_eq!(io.rw, Rw::RandRw);
    assert_eq!(io.iodepth, 32);
    let tr = io.shape.trace.as_ref().unwrap();
    assert_eq!(
        tr.mode,
        TraceMode::Open {
            speed_ppm: 3_000_000
        }
    );
    let a: Vec<u64> = tr.threads[0].ios.iter().map(|x| x.at).collect();
    // (1000001 - 10) us at three times the pace: 333,330,333.33 ns,
    // rounded down, from the trace time itself.
    assert_eq!(a, [0, 333_330_333]);
    assert_eq!(tr.threads[1].ios[0].at, 5_000 / 3);
    assert_eq!(tr.threads[1].ios[0].bytes, 16_384);
    assert!(tr.threads[1].ios[0].write);
    // The scenario written back loads to the same scenario.
    let again = load_str(&to_toml(&sc), "again", &[]).unwrap();
    assert_eq!(again.jobs, sc.jobs);
}

#[test]
fn scaling_never_accumulates() {
    // Each instant comes from its own trace time: a million gaps of 1 ns
    // at speed 3 end where one gap of a million ns does.
    assert_eq!(scale(1_000_000, 3_000_000), 333_333);
    assert_eq!(scale(u64::MAX, 1), u64::MAX);
    assert_eq!(scale(7, 1_000_000), 7);
}

#[test]
fn closed_loop_keeps_order_and_a_sync_engine_runs_at_depth_one() {
    let dir = cint_test_support::temp_dir("trace-jobs");
    let back = b"fio version 3 iolog\n0 a add\n50 a read 0 512\n20 a read 512 512\n";
    let path = write(dir.path(), "b.iolog", back);
    let e = load(&format!("trace = {path:?}\n")).unwrap_err();
    assert!(e.contains("line 4: time goes backwards"), "{e}");
    let sc = load(&format!(
        "trace = {path:?}\ntrace_mode = \"closed\"\nengine = \"psync\"\n"
    ))
    .unwrap();
    let Work::Io(io) = &sc.jobs[0].work else {
        panic!()
    };
    assert_eq!((io.engine, io.iodepth), (Engine::Psync, 1));
    let tr = io.shape.trace.as_ref().unwrap();
    assert_eq!(tr.mode, TraceMode::Closed);
    let offsets: Vec<u64> = tr.threads[0].ios.iter().map(|x| x.offset).collect();
    assert_eq!(offsets, [0, 512]);
}

#[test]
fn refusals_name_the_scenario_key_the_trace_and_the_record() {
    let dir = cint_test_support::temp_dir("trace-jobs");
    let bad = write(dir.path(), "bad.bin", &[0x07, 0x74, 0x61, 0x65, 1, 2, 3]);
    let e = load(&format!("trace = {bad:?}\n")).unwrap_err();
    assert!(e.starts_with("s.toml:10: job.r.trace: "), "{e}");
    assert!(
        e.contains("bad.bin: byte 0: the file ends 7 bytes into a 48-byte"),
        "{e}"
    );

    // A blktrace stream on CPU 5 of a two-core host.
    let ios = [cint_trace::encode::Io {
        time: 5,
        offset: 0,
        bytes: 4096,
        write: false,
        stream: 3,
        cpu: 5,
        done: None,
    }];
    let bt = write(
        dir.path(),
        "cpu5.blk",
        &cint_trace::encode::blktrace(&ios, 8, false, 0),
    );
    let e = load(&format!("trace = {bt:?}\n")).unwrap_err();
    assert!(
        e.contains("cpu5.blk: byte 0: pid 3 was traced on CPU 5"),
        "{e}"
    );
    assert!(load(&format!("trace = {bt:?}\ncpu = 1\n")).is_ok());

    // Beyond the device (375 GiB) unless wrapped.
    let far = write(
        dir.path(),
        "far.iolog",
        b"fio version 2 iolog\nf add\nf read 402654184000 4096\n",
    );
    let e = load(&format!("trace = {far:?}\n")).unwrap_err();
    assert!(
        e.contains("far.iolog: line 3: a request of 4096 bytes at offset"),
        "{e}"
    );
    let sc = load(&format!("trace = {far:?}\ntrace_wrap = true\n")).unwrap();
    let Work::Io(io) = &sc.jobs[0].work else {
        panic!()
    };
    let at = io.shape.trace.as_ref().unwrap().threads[0].ios[0].offset;
    // 1,000,000 bytes past the 375 GiB end, aligned down to 512.
    assert_eq!(at, 999_936);

    let ok = write(dir.path(), "ok.iolog", IOLOG);
    for (extra, key, says) in [
        ("rw = \"read\"\n", "rw", "the trace decides this"),
        ("iodepth = 4\n", "iodepth", "the trace decides this"),
        (
            "trace_mode = \"closed\"\ntrace_speed = 2\n",
            "trace_speed",
            "only applies to trace_mode",
        ),
        (
            "trace_format = \"pcap\"\n",
            "trace_format",
            "unknown trace format",
        ),
        // The page cache would replace the trace's offsets and sizes.
        (
            "direct = false\n",
            "direct",
            "a trace replays block requests, which have already passed the page cache",
        ),
    ] {
        let e = load(&format!("trace = {ok:?}\n{extra}")).unwrap_err();
        assert!(e.contains(&format!("job.r.{key}: {says}")), "{e}");
    }
    let e = load("trace_depth = 4\n").unwrap_err();
    assert!(
        e.contains("job.r.trace_depth: only applies to a job with trace"),
        "{e}"
    );
    let e = load("trace = \"no-such-file\"\n").unwrap_err();
    assert!(e.contains("no-such-file: cannot read the trace"), "{e}");
}

#[test]
fn the_replays_default_engine_comes_before_the_keys_that_need_it() {
    let dir = cint_test_support::temp_dir("trace-engine");
    let path = write(dir.path(), "t.iolog", IOLOG);
    // hipri needs io_uring or pvsync2: a trace job's default engine is
    // io_uring, so it is accepted without naming the engine.
    let sc = load(&format!("trace = {path:?}\nhipri = true\n")).unwrap();
    let Work::Io(io) = &sc.jobs[0].work else {
        panic!("an I/O job")
    };
    assert_eq!(io.engine, Engine::IoUring);
    // What the replay does not model is refused by its key, never run.
    for (key, line) in [
        ("sqpoll", "sqpoll = true\n"),
        (
            "submit_mode",
            "engine = \"libaio\"\nsubmit_mode = \"offload\"\n",
        ),
    ] {
        let e = load(&format!("trace = {path:?}\n{line}")).unwrap_err();
        assert!(
            e.contains(&format!("job.r.{key}: a trace's replay with")),
            "{e}"
        );
    }
}
