//! `--trace FILE` through the real binary: the shipped trace replayed on
//! the defaults and in place of a scenario's jobs, a trace job in a
//! scenario swept, every bad trace refused in one line naming the file and
//! the record (exit 2), and fio itself accepting the shipped iolog.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cint_in, Out};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cint(args: &[&str]) -> Out {
    cint_in(&repo(), args)
}

fn assert_refused(o: &Out, needles: &[&str]) {
    assert_eq!(o.status, 2, "stderr: {}", o.stderr);
    assert_eq!(o.stdout, "", "nothing on stdout");
    assert_eq!(o.stderr.lines().count(), 1, "one line: {:?}", o.stderr);
    for needle in needles {
        assert!(o.stderr.contains(needle), "{needle:?} in {:?}", o.stderr);
    }
}

fn json(o: &Out) -> serde_json::Value {
    assert_eq!(o.status, 0, "stderr: {}", o.stderr);
    serde_json::from_str(&o.stdout).expect("one JSON document")
}

const SHIPPED: &str = "scenarios/traces/fio-2jobs.msr.csv";

#[test]
fn the_shipped_trace_replays_on_the_defaults() {
    let doc = json(&cint(&["sim", "--trace", SHIPPED, "--json"]));
    let results = doc["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|s| s["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["none", "adaptive", "cinterrupts"]);
    let job = &results[0]["jobs"][0];
    assert_eq!(job["name"], "trace");
    let t = &job["trace"];
    assert_eq!(t["file"], "fio-2jobs.msr.csv");
    assert_eq!(t["format"], "msr v1");
    assert_eq!(
        (t["requests"].as_u64(), t["issued"].as_u64()),
        (Some(3000), Some(3000))
    );
    // fio's own latencies on the machine that ran it, beside the model's.
    assert_eq!(t["trace_lat_ns"]["N"], job["lat_ns"]["N"]);
    assert!(t["issue_lag_ns"]["max"].as_u64().unwrap() < 100_000);
    // A duration set by hand wins over the trace's length, spaces or not.
    for set in ["duration=5ms", " duration = 5ms"] {
        let doc = json(&cint(&["sim", "--trace", SHIPPED, "--set", set, "--json"]));
        assert_eq!(doc["duration_ns"], 5_000_000, "--set '{set}'");
    }
    // The table says the same in words.
    let table = cint(&["sim", "--trace", SHIPPED, "--trace-mode", "closed"]);
    assert_eq!(table.status, 0);
    assert!(table
        .stdout
        .contains("fio-2jobs.msr.csv msr v1 closed, 3000 of 3000"));
}

#[test]
fn a_trace_replaces_a_scenarios_jobs_and_a_scenario_job_sweeps() {
    let doc = json(&cint(&[
        "sim",
        "scenarios/trace-replay.toml",
        "--trace",
        "scenarios/traces/fio-2jobs.iolog",
        "--trace-speed",
        "2",
        "--json",
    ]));
    for s in doc["results"].as_array().unwrap() {
        let jobs = s["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0]["trace"]["file"], "fio-2jobs.iolog");
        assert_eq!(jobs[0]["trace"]["speed"], 2.0);
    }
    let sweep = cint(&[
        "sweep",
        "scenarios/trace-replay.toml",
        "--vary",
        "job.replay.trace_speed=1,4",
        "--set",
        "duration=30ms",
    ]);
    assert_eq!(sweep.status, 0, "{}", sweep.stderr);
    // One line per point and strategy; four times the pace moves more
    // requests through the same 30 ms.
    let iops = |speed: &str| -> f64 {
        sweep
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["point"]["job.replay.trace_speed"] == speed && v["strategy"] == "none")
            .unwrap()["iops"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(sweep.stdout.lines().count(), 6, "{}", sweep.stdout);
    assert!(iops("4") > 1.4 * iops("1"), "{}", sweep.stdout);
}

#[test]
fn bad_traces_are_refused_naming_the_file_and_the_record() {
    let dir = cint_test_support::temp_dir("trace-cli");
    let ios = [cint_trace::encode::Io {
        time: 1,
        offset: 0,
        bytes: 4096,
        write: false,
        stream: 1,
        cpu: 0,
        done: None,
    }];
    let mut blk = cint_trace::encode::blktrace(&ios, 7, false, 0);
    blk[48 + 2] ^= 0xff;
    let bad = dir.path().join("bad.blk");
    std::fs::write(&bad, &blk).unwrap();
    let bad = bad.display().to_string();
    assert_refused(
        &cint(&["sim", "--trace", &bad]),
        &["bad.blk: byte 48: bad magic"],
    );
    let cut = dir.path().join("cut.blk");
    std::fs::write(&cut, &blk[..70]).unwrap();
    assert_refused(
        &cint(&["check", "--trace", &cut.display().to_string()]),
        &["cut.blk: byte 48: the file ends 22 bytes into a 48-byte version 7 record"],
    );
    let back = dir.path().join("back.iolog");
    std::fs::write(
        &back,
        "fio version 3 iolog\n0 f add\n9 f read 0 512\n3 f read 0 512\n",
    )
    .unwrap();
    let back = back.display().to_string();
    assert_refused(
        &cint(&["sim", "--trace", &back]),
        &["back.iolog: line 4: time goes backwards in f"],
    );
    // Closed loop keeps the file's order: no refusal.
    let o = cint(&["sim", "--trace", &back, "--trace-mode", "closed"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert_refused(
        &cint(&[
            "sim",
            "--trace",
            &back,
            "--trace-mode",
            "closed",
            "--trace-speed",
            "2",
        ]),
        &["--trace-speed applies to --trace-mode open only"],
    );
    assert_refused(
        &cint(&["sim", "--trace", &back, "--trace-format", "pcap"]),
        &["--trace-format: unknown trace format \"pcap\""],
    );
    assert_refused(
        &cint(&["sim", "--trace", &back, "--fio", "x.fio"]),
        &["cannot be used with"],
    );
    // A job through the page cache would draw its own requests instead.
    let buffered = dir.path().join("buffered.toml");
    std::fs::write(
        &buffered,
        "name = \"b\"\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[job]]\nname = \"r\"\nengine = \"psync\"\ndirect = false\nsize = \"64m\"\n",
    )
    .unwrap();
    assert_refused(
        &cint(&["sim", &buffered.display().to_string(), "--trace", &back]),
        &["back.iolog: job 'r' has direct = false: a trace replays block requests"],
    );
}

#[test]
fn fio_replays_the_shipped_iolog() {
    if Command::new("fio").arg("--version").output().is_err() {
        cint_test_support::skip::missing("fio is not installed (.ci/deps/fio.sh)");
        return;
    }
    let dir = cint_test_support::temp_dir("trace-fio");
    // The files the iolog names, sparse, at the size of the traced run.
    for name in ["reader.dat", "writer.dat"] {
        let f = std::fs::File::create(dir.path().join(name)).unwrap();
        f.set_len(256 << 20).unwrap();
    }
    let iolog = repo().join("scenarios/traces/fio-2jobs.iolog");
    let o = Command::new("fio")
        .args(["--name=replay", "--ioengine=psync", "--output-format=json"])
        .arg(format!("--read_iolog={}", iolog.display()))
        .current_dir(dir.path())
        .output()
        .expect("fio runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("fio's JSON");
    let job = &doc["jobs"][0];
    assert_eq!(job["error"], 0);
    assert_eq!(job["read"]["total_ios"], 2000);
    assert_eq!(job["write"]["total_ios"], 1000);
}

/// The blktrace captured in a QEMU guest (scenarios/traces/README.md)
/// replays, and the result carries the guest's own Q-to-C latencies
/// beside the model's.
#[test]
fn the_guest_blktrace_replays_with_its_own_latencies() {
    let doc = json(&cint(&[
        "sim",
        "--trace",
        "scenarios/traces/fio-guest.blktrace.0",
        "--json",
    ]));
    for s in doc["results"].as_array().unwrap() {
        let job = &s["jobs"][0];
        let t = &job["trace"];
        assert_eq!(t["format"], "blktrace v7");
        assert_eq!(
            (t["requests"].as_u64(), t["issued"].as_u64()),
            (Some(1300), Some(1300))
        );
        // Every request of the capture has its C event.
        assert_eq!(t["trace_lat_ns"]["N"], 1300);
        assert_eq!(t["trace_lat_ns"]["N"], job["lat_ns"]["N"]);
        // An emulated guest's file-backed disk is far slower than the
        // modelled Optane.
        let own = t["trace_lat_ns"]["mean"].as_f64().unwrap();
        let model = job["lat_ns"]["mean"].as_f64().unwrap();
        assert!(own > 2.0 * model, "trace {own} ns, model {model} ns");
    }
}

#[test]
fn a_trace_on_the_defaults_is_a_trace_job_its_sets_and_flags_reach() {
    // The replay's keys reach the job by --set and by flag alike.
    let set = json(&cint(&[
        "sim",
        "--trace",
        SHIPPED,
        "--set",
        "job.trace.trace_mode=closed",
        "--set",
        "job.trace.trace_depth=2",
        "--json",
    ]));
    let flags = json(&cint(&[
        "sim",
        "--trace",
        SHIPPED,
        "--trace-mode",
        "closed",
        "--trace-depth",
        "2",
        "--json",
    ]));
    assert_eq!(set["results"], flags["results"]);
    assert_eq!(set["results"][0]["jobs"][0]["trace"]["mode"], "closed");
    // What the trace decides is refused, as in a file, not dropped.
    assert_refused(
        &cint(&["check", "--trace", SHIPPED, "--set", "job.trace.rw=write"]),
        &["--set job.trace.rw=write", "the trace decides this"],
    );
    // An error of the trace job names no line of a file that is not there.
    let o = cint(&["sim", "--trace", SHIPPED, "--set", "device.capacity=512"]);
    assert_refused(&o, &["--trace: job.trace.size:", "the device's capacity"]);
    assert!(!o.stderr.starts_with("--trace:1"), "{}", o.stderr);
    // --trace-wrap is the key trace_wrap: a capacity smaller than the
    // trace's offsets is refused without it and replayed with it.
    let small = "device.capacity=16MiB";
    assert_refused(
        &cint(&["sim", "--trace", SHIPPED, "--set", small]),
        &["beyond the device", "--trace-wrap"],
    );
    let wrapped = json(&cint(&[
        "sim",
        "--trace",
        SHIPPED,
        "--trace-wrap",
        "--set",
        small,
        "--json",
    ]));
    assert_eq!(
        wrapped["results"][0]["jobs"][0]["trace"]["issued"].as_u64(),
        Some(3000)
    );
}

/// A trace path that is not UTF-8 cannot go into the generated scenario's
/// `trace` key: refused in one line, exit 2, where it used to be read as
/// another file. Beside a scenario file, which takes the path as it is,
/// it replays.
#[cfg(unix)]
#[test]
fn a_trace_path_that_is_not_utf8_is_refused_on_the_defaults_and_read_beside_a_scenario() {
    use std::os::unix::ffi::OsStrExt;
    let dir = cint_test_support::temp_dir("trace-utf8");
    let name = std::ffi::OsStr::from_bytes(b"t\xff.csv");
    std::fs::copy(repo().join(SHIPPED), dir.path().join(name)).expect("copies the trace");
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_cint"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("the binary runs")
    };
    let s = std::ffi::OsStr::new;
    let o = run(&[s("sim"), s("--trace"), name, s("--set"), s("duration=5ms")]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not UTF-8"), "{stderr}");
    let scenario = repo().join("scenarios/trace-replay.toml");
    let o = run(&[
        s("sim"),
        scenario.as_os_str(),
        s("--trace"),
        name,
        s("--set"),
        s("duration=5ms"),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
