//! The researcher's workflow through the real binary and the simulator:
//! fio job files, sweeps, plots and calibration, and every way of refusing
//! their input (exit status 2, one line on stderr).

mod common;

use std::path::Path;
use std::process::Command;

use cint_test_support::{temp_dir, DirFiles};
use common::{cint_in, Out};

fn cint(args: &[&str]) -> Out {
    cint_in(Path::new("."), args)
}

fn assert_refused(o: &Out, needle: &str) {
    assert_eq!(o.status, 2, "stderr: {}", o.stderr);
    assert_eq!(o.stdout, "", "nothing on stdout");
    assert_eq!(o.stderr.lines().count(), 1, "one line: {:?}", o.stderr);
    assert!(o.stderr.contains(needle), "{needle:?} in {:?}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
}

fn pngs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".png"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in &names {
        let bytes = std::fs::read(dir.join(n)).expect("read png");
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 5_000, "{n}");
    }
    names
}

/// Written the way fio users write job files: comments of both kinds (one
/// with no space before it), a `[global]` section, options with no
/// meaning in a model.
const FIELD_JOB: &str = "\
; random reads against the Optane, as run in the lab
[global]
ioengine=libaio
direct=1          # bypass the page cache
rw=randread
bs=4k;4 KiB blocks (fio cuts comments with no space before them too)
time_based
runtime=20ms
ramp_time=2ms
filename=/dev/nvme0n1
group_reporting

[qd32]
iodepth=32
iodepth_batch_submit=8
iodepth_batch_complete_min=8
";

#[test]
fn a_field_fio_file_runs_the_default_comparison_with_warnings() {
    let dir = temp_dir("wf-fio");
    let job = dir.write("lab.fio", FIELD_JOB);
    let o = cint(&["sim", "--fio", &job, "--json"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON document");
    let names: Vec<&str> = doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["strategy"].as_str())
        .collect();
    assert_eq!(names, ["none", "adaptive", "cinterrupts"]);
    assert_eq!(doc["duration_ns"], 20_000_000);
    assert!(doc["results"][0]["jobs"][0]["iops"].as_f64().unwrap_or(0.0) > 10_000.0);
    // One warning line per ignored option, naming it and its line;
    // group_reporting asks for what the model's report does, so none.
    let warnings: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "{}", o.stderr);
    assert!(warnings[0].contains("lab.fio:10:") && warnings[0].contains("'filename'"));

    // Device, strategies and --set reach the scenario; `check` shows it.
    let o = cint(&[
        "check",
        "--fio",
        &job,
        "--device",
        "p3700",
        "--strategy",
        "none,nvme",
        "--set",
        "job.qd32.iodepth=64",
    ]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    for text in ["model = \"p3700\"", "kind = \"nvme\"", "iodepth = 64"] {
        assert!(o.stdout.contains(text), "{text} in\n{}", o.stdout);
    }
    assert!(!o.stdout.contains("kind = \"cinterrupts\""));
}

#[test]
fn a_fio_command_line_runs_as_the_job_file_it_writes_out() {
    // etcd's published disk check, pasted after --fio-cmd.
    let o = cint(&[
        "sim",
        "--json",
        "--device",
        "optane-900p",
        "--fio-cmd",
        "fio",
        "--rw=write",
        "--ioengine=sync",
        "--fdatasync=1",
        "--directory=test-data",
        "--size=2m",
        "--bs=2300",
        "--name=mytest",
    ]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert!(
        o.stderr
            .starts_with("fio-command-line:5: warning: option 'directory'"),
        "{}",
        o.stderr
    );
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON document");
    assert_eq!(doc["device"], "optane-900p");
    let job = &doc["results"][0]["jobs"][0];
    assert_eq!(job["name"], "mytest");
    // fio 3.33 writes 2 MiB in 911 requests of 2300 bytes.
    assert_eq!(job["ios"], (2u64 << 20) / 2300);
}

#[test]
fn bad_fio_input_is_one_line_naming_the_culprit() {
    let dir = temp_dir("wf-fio-bad");
    let verify = dir.write("v.fio", &FIELD_JOB.replace("group_reporting", "verify=md5"));
    assert_refused(
        &cint(&["sim", "--fio", &verify]),
        "v.fio:11: option 'verify' is not supported",
    );
    let job = dir.write("ok.fio", FIELD_JOB);
    assert_refused(
        &cint(&["sim", "--fio", &job, "--device", "floppy"]),
        "--device floppy: unknown profile (known: optane-p4800x",
    );
    assert_refused(
        &cint(&["emu", "--fio", &job, "--strategy", "turbo"]),
        "--strategy turbo: unknown strategy kind",
    );
    assert_refused(
        &cint(&["sim", "scenario.toml", "--fio", &job]),
        "cannot be used with",
    );
    assert_refused(&cint(&["sim", "--device", "p3700"]), "--fio");
    // A fio command line: its arguments' positions stand for lines.
    assert_refused(
        &cint(&["sim", "--fio-cmd", "fio", "--name=a", "--verify=md5"]),
        "fio-command-line:3: option 'verify' is not supported",
    );
    assert_refused(
        &cint(&["sim", "--fio-cmd", "--rw=read", "--size=1m"]),
        "fio-command-line: no job",
    );
    assert_refused(
        &cint(&["sim", "--trace", "t.blk", "--device", "p3700"]),
        "--device applies to --fio and --fio-cmd only",
    );
    // An engine's refusal of an imported job's key names the job file's
    // line that set it (not a line of the scenario rendered from it), or
    // the job's section for a key no option set.
    let ring = dir.write(
        "ring.fio",
        "[global]\nioengine=io_uring\ndirect=1\nruntime=5ms\n[r]\ncpus_allowed=0\n\
         sqthread_poll=1\nsqthread_poll_cpu=1\n",
    );
    // Its SQ thread's core counts among the cores it needs: on a machine
    // of fewer than three CPUs, refused at the option that named it.
    if std::thread::available_parallelism().map_or(true, |n| n.get() < 3) {
        assert_refused(
            &cint(&["emu", "--fio", &ring]),
            "ring.fio:8: job.r.sqpoll_cpu: reaches application core 1: with its device core \
             the emulator needs 3 cores",
        );
    }
    let buffered = dir.write(
        "buf.fio",
        "[global]\nioengine=psync\nruntime=5ms\n[a]\ndirect=1\n[b]\ncpus_allowed=1\n\
         direct=0\n",
    );
    assert_refused(
        &cint(&["emu", "--fio", &buffered]),
        "buf.fio:8: job.b.direct: a buffered job (direct = false, fio's default direct=0) goes \
         through the page cache, which the simulator models and the emulator does not",
    );

    // A job on a core past what this machine gives the emulator is
    // refused at the option that put it there (on a machine of fewer
    // than four CPUs: three cores and the device core need four).
    let far = dir.write(
        "far.fio",
        "[global]\nioengine=psync\ndirect=1\nruntime=5ms\n[a]\ncpus_allowed=0\n\
         [b]\ncpus_allowed=1\n[c]\ncpus_allowed=2\n",
    );
    if std::thread::available_parallelism().map_or(true, |n| n.get() < 4) {
        assert_refused(
            &cint(&["emu", "--fio", &far]),
            "far.fio:9: job.c.cpu: reaches application core 2: with its device core the \
             emulator needs 4 cores",
        );
    }

    // The same refusals through a sweep, before anything runs.
    assert_refused(
        &cint(&["sweep", "--fio", &verify, "--vary", "seed=1,2"]),
        "v.fio:11: option 'verify' is not supported",
    );
    // (A file without ignored options: their warnings would come first.)
    let clean = dir.write(
        "clean.fio",
        "[qd32]\nioengine=libaio\nrw=randread\niodepth=32\nruntime=5ms\n",
    );
    let o = cint(&["sweep", "--fio", &clean, "--vary", "job.qd32.bs=4k,8q"]);
    assert_refused(&o, "sweep point job.qd32.bs=8q: ");
    assert_eq!(o.stderr.matches("clean.fio").count(), 1, "{}", o.stderr);
}

const SWEEP_SCENARIO: &str = "name = \"sw\"\nduration = \"10ms\"\nwarmup = \"1ms\"\n\
    [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
    [[strategy]]\nname = \"adaptive\"\nkind = \"adaptive\"\n\
    [[job]]\nname = \"async\"\nengine = \"libaio\"\nrw = \"randread\"\niodepth = 8\n";

#[test]
fn a_sweep_writes_one_row_per_point_and_strategy_whatever_the_workers() {
    let dir = temp_dir("wf-sweep");
    let file = dir.write("s.toml", SWEEP_SCENARIO);
    let vary = ["--vary", "job.async.iodepth=4,32", "--vary", "seed=1,2"];
    let run = |jobs: &str| {
        let mut args = vec!["sweep", file.as_str(), "--jobs", jobs];
        args.extend(vary);
        cint(&args)
    };
    let one = run("1");
    assert_eq!((one.status, one.stderr.as_str()), (0, ""));
    let rows: Vec<serde_json::Value> = one
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    // 2 x 2 points x 2 strategies x 1 job, first --vary slowest.
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[0]["point"]["job.async.iodepth"], "4");
    assert_eq!(rows[0]["strategy"], "none");
    assert_eq!(rows[1]["strategy"], "adaptive");
    assert_eq!(rows[2]["point"]["seed"], "2");
    assert_eq!(rows[7]["point"]["job.async.iodepth"], "32");
    let iops = |i: usize| rows[i]["iops"].as_f64().unwrap_or(0.0);
    // Under adaptive a shallow queue waits out delta for every few
    // completions; under none one core's CPU bounds both depths alike.
    assert!(iops(5) > iops(1), "deeper queue, more IOPS under adaptive");
    // Byte-identical whatever the number of workers.
    assert_eq!(run("2").stdout, one.stdout);

    // Files instead of stdout, and the charts.
    let jsonl = dir.arg("out/s.jsonl");
    let csv = dir.arg("out/s.csv");
    let plots = dir.path().join("plots");
    let mut args = vec![
        "sweep",
        file.as_str(),
        "--out",
        &jsonl,
        "--csv",
        &csv,
        "--plot",
    ];
    let plots_arg = plots.display().to_string();
    args.push(&plots_arg);
    args.extend(vary);
    let o = cint(&args);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "");
    assert_eq!(
        std::fs::read_to_string(&jsonl).expect("jsonl"),
        one.stdout,
        "--out holds what stdout would"
    );
    let csv_text = std::fs::read_to_string(&csv).expect("csv");
    assert!(csv_text.starts_with("job.async.iodepth,seed,strategy,kind,job,iops,"));
    assert_eq!(csv_text.lines().count(), 9);
    assert!(pngs(&plots).contains(&"sweep_iops.png".to_string()));
}

#[test]
fn bad_sweep_keys_and_values_are_one_line() {
    let dir = temp_dir("wf-sweep-bad");
    let file = dir.write("s.toml", SWEEP_SCENARIO);
    assert_refused(
        &cint(&["sweep", &file, "--vary", "job.nope.iodepth=1,2"]),
        "sweep point job.nope.iodepth=1: ",
    );
    assert_refused(
        &cint(&["sweep", &file, "--vary", "job.async.iodepth=4,deep"]),
        "sweep point job.async.iodepth=deep: ",
    );
    assert_refused(
        &cint(&["sweep", &file, "--vary", "iodepth"]),
        "--vary 'iodepth': expected KEY=V1,V2,...",
    );
    assert_refused(
        &cint(&["sweep", &file, "--vary", "seed=1", "--jobs", "0"]),
        "--jobs must be at least 1",
    );
    assert_refused(&cint(&["sweep", &file]), "--vary");
    // A point that does not load fails the sweep before any runs: no
    // partial file is left, and the message points at none.
    let out = dir.path().join("points.jsonl");
    let o = cint(&[
        "sweep",
        &file,
        "--vary",
        "job.async.iodepth=4,deep",
        "--out",
        &out.display().to_string(),
    ]);
    assert_refused(&o, "sweep point job.async.iodepth=deep: ");
    assert!(!o.stderr.contains("partial"), "{}", o.stderr);
    assert!(!dir.path().join("points.jsonl.partial").exists());
    // A point the simulator cannot run is refused as `cint check` refuses
    // it (the file and the --set named), before any point runs.
    let o = cint(&[
        "sweep",
        &file,
        "--vary",
        "strategy.none.kind=none,vic-sched",
        "--out",
        &out.display().to_string(),
    ]);
    assert_refused(&o, "sweep point strategy.none.kind=vic-sched: ");
    assert!(
        o.stderr
            .contains("s.toml: --set strategy.none.kind=vic-sched: "),
        "{}",
        o.stderr
    );
    assert!(!dir.path().join("points.jsonl.partial").exists());
    assert!(!out.exists());
}

/// `--ray` is the one flag that needs Python: without it, one line
/// saying what to install; the other flags it cannot go with are refused
/// by name.
#[test]
fn sweep_ray_without_python_says_what_to_install() {
    let dir = temp_dir("wf-sweep-ray");
    let file = dir.write("s.toml", SWEEP_SCENARIO);
    let o = Command::new(env!("CARGO_BIN_EXE_cint"))
        .args([
            "sweep",
            &file,
            "--vary",
            "seed=1,2",
            "--ray",
            "127.0.0.1:6379",
        ])
        .env("CINT_PYTHON", dir.arg("no-python-here"))
        .output()
        .expect("the binary runs");
    let o = Out {
        status: o.status.code().expect("exited"),
        stdout: String::from_utf8(o.stdout).expect("utf8"),
        stderr: String::from_utf8(o.stderr).expect("utf8"),
    };
    assert_refused(&o, "install it with `pip install ./python`");
    assert!(o.stderr.contains("cannot run"), "{}", o.stderr);
    assert_refused(
        &cint(&[
            "sweep", &file, "--vary", "seed=1,2", "--ray", "h:1", "--emu",
        ]),
        "--emu",
    );
    // A bad --vary is refused before Python is looked for.
    assert_refused(
        &cint(&["sweep", &file, "--vary", "seed", "--ray", "h:1"]),
        "--vary 'seed': expected KEY=V1,V2,...",
    );
}

#[test]
fn plot_draws_a_result_and_refuses_what_it_cannot_plot() {
    let dir = temp_dir("wf-plot");
    let file = dir.write("s.toml", SWEEP_SCENARIO);
    let o = cint(&["sim", &file, "--json"]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    let result = dir.write("result.json", &o.stdout);
    let charts = dir.path().join("charts");
    let charts_arg = charts.display().to_string();
    let o = cint(&[
        "plot",
        &result,
        "-o",
        &charts_arg,
        "--baseline",
        "adaptive",
        "--format",
        "png",
    ]);
    assert_eq!((o.status, o.stderr.as_str()), (0, ""));
    assert_eq!(
        o.stdout.lines().count(),
        6,
        "one line per file: {}",
        o.stdout
    );
    assert_eq!(
        pngs(&charts),
        [
            "cpu.png",
            "iops.png",
            "irqs.png",
            "latency_cdf.png",
            "latency_mean.png",
            "latency_p99.png"
        ]
    );

    // --plot on sim: the table stays alone on stdout.
    let side = dir.path().join("side");
    let side_arg = side.display().to_string();
    let o = cint(&["sim", &file, "--plot", &side_arg]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("sw on sim"), "{}", o.stdout);
    assert_eq!(pngs(&side).len(), 6);

    let text = dir.write("notes.txt", "strategy,iops\nnone,12\n");
    assert_refused(&cint(&["plot", &text, "-o", &charts_arg]), "not plottable");
    let csv = dir.write("x.csv", "strategy,iops\nnone,12\n");
    assert_refused(
        &cint(&["plot", &csv, "-o", &charts_arg]),
        "not plottable: not a sweep CSV",
    );
    // Rust would read these as numbers; a chart of them would be nonsense.
    let header = "seed,strategy,kind,job,iops,lat_mean_ns,lat_p50_ns,lat_p99_ns,\
                  interrupts_per_s,cpu_util,job_cpu_util";
    for bad in ["inf", "NaN", "-3"] {
        let csv = dir.write(
            "bad.csv",
            &format!("{header}\n1,none,none,j,{bad},1,1,1,1,0.5,0.5\n"),
        );
        assert_refused(
            &cint(&["plot", &csv, "-o", &charts_arg]),
            &format!("iops: '{bad}' is not a number"),
        );
    }
    assert_refused(
        &cint(&["plot", &result, "-o", &charts_arg, "--baseline", "nope"]),
        "--baseline nope: not a strategy",
    );
    // A sweep's charts have no baseline to take.
    let sweep = dir.write(
        "sweep.csv",
        &format!("{header}\n1,none,none,j,10,1,1,1,1,0.5,0.5\n"),
    );
    assert_refused(
        &cint(&["plot", &sweep, "-o", &charts_arg, "--baseline", "none"]),
        "is a sweep",
    );
    assert_refused(
        &cint(&["plot", &dir.arg("missing.json"), "-o", &charts_arg]),
        "missing.json",
    );
}

#[test]
fn calibrate_recommends_delta_and_thr_with_evidence_and_plots() {
    let dir = temp_dir("wf-calibrate");
    let plots = dir.path().join("cal");
    let plots_arg = plots.display().to_string();
    let o = cint(&[
        "calibrate",
        "--device",
        "optane-p4800x",
        "--duration",
        "5ms",
        "--warmup",
        "1ms",
        "--thr",
        "1,8,32,128",
        "--plot",
        &plots_arg,
    ]);
    // stdout is the report alone; what was drawn is named on stderr.
    assert_eq!(
        (o.status, o.stderr.as_str()),
        (
            0,
            format!("cint: wrote 4 files into {plots_arg}\n").as_str()
        )
    );
    assert!(!o.stdout.contains("wrote"), "{}", o.stdout);
    for text in [
        "no batching",
        "batches of 16",
        "delta = ",
        "the largest p99 inter-arrival time",
        "<- recommended",
        "thr = ",
        "(reference: 32)",
    ] {
        assert!(o.stdout.contains(text), "{text:?} in\n{}", o.stdout);
    }
    assert_eq!(
        pngs(&plots),
        ["calibrate_interarrival_cdf.png", "calibrate_thr_sweep.png"]
    );

    // A given delta skips the measurement. Without --plot the plots go
    // to out/calibrate-DEVICE under the working directory.
    let quick = [
        "calibrate",
        "--device",
        "p3700",
        "--delta",
        "15us",
        "--duration",
        "5ms",
        "--thr",
        "1,32",
    ];
    let o = cint_in(dir.path(), &quick);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert!(o.stdout.contains("delta = 15.00 us: given"), "{}", o.stdout);
    assert!(!o.stdout.contains("no batching"));
    assert_eq!(o.stderr, "cint: wrote 2 files into out/calibrate-p3700\n");
    // No inter-arrival times measured, so no CDF: the thr sweep only.
    assert_eq!(
        pngs(&dir.path().join("out/calibrate-p3700")),
        ["calibrate_thr_sweep.png"]
    );

    // --no-plot draws nothing and names nothing.
    let elsewhere = temp_dir("wf-calibrate-no-plot");
    let mut args = quick.to_vec();
    args.push("--no-plot");
    let o = cint_in(elsewhere.path(), &args);
    assert_eq!((o.status, o.stderr.as_str()), (0, ""));
    assert!(o.stdout.contains("delta = 15.00 us: given"), "{}", o.stdout);
    assert!(!elsewhere.path().join("out").exists());

    assert_refused(
        &cint(&[
            "calibrate",
            "--device",
            "optane-p4800x",
            "--percentile",
            "80",
        ]),
        "percentile 80 is outside 90..=99",
    );
    assert_refused(
        &cint(&["calibrate", "--device", "floppy"]),
        "unknown device profile 'floppy'",
    );
    assert_refused(
        &cint(&["calibrate", "--device", "p3700", "--delta", "soon"]),
        "--delta: ",
    );
    assert_refused(
        &cint(&["calibrate", "--device", "p3700", "--thr", "8,4"]),
        "strictly increasing",
    );
    assert_refused(
        &cint(&["calibrate", "--device", "p3700", "--no-plot", "--plot", "x"]),
        "cannot be used with",
    );
}

/// The thr rule on the simulator: on a device-bound run (a P3700 behind a
/// fast core) IOPS are within 2% of the best from a tiny thr on, yet every
/// interrupt still costs CPU. The rule must keep coalescing until the CPU
/// per I/O settles, not stop at the first thr that keeps up.
#[test]
fn calibrate_on_a_device_bound_run_weighs_cpu_not_only_iops() {
    let o = cint(&[
        "calibrate",
        "--device",
        "p3700",
        "--host",
        "xeon-e3-1230v5",
        "--delta",
        "15us",
        "--duration",
        "20ms",
        "--warmup",
        "5ms",
        "--no-plot",
    ]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    // Rows: thr, kIOPS, of best %, kIRQ/s, mean, p99, CPU %, CPU ns/IO.
    let rows: Vec<(u32, f64, f64, f64)> = o
        .stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let thr = f.first()?.parse().ok()?;
            let best = f.get(2)?.trim_end_matches('%').parse().ok()?;
            let cpu_util = f.get(6)?.parse().ok()?;
            let cpu_ns = f.get(7)?.parse().ok()?;
            Some((thr, best, cpu_util, cpu_ns))
        })
        .collect();
    assert!(rows.len() >= 10, "{}", o.stdout);
    let first_on_plateau = rows.iter().find(|r| r.1 >= 98.0).expect("a plateau").0;
    let recommended: u32 = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("thr = ")?.split(':').next()?.parse().ok())
        .expect("a recommendation");
    // Device-bound: the core is not saturated once interrupts are coalesced.
    assert!(
        rows.iter().any(|r| r.0 == recommended && r.2 < 95.0),
        "{}",
        o.stdout
    );
    assert!(recommended > first_on_plateau, "{}", o.stdout);
    assert!(
        o.stdout
            .contains("CPU per I/O comes within 2% of the lowest"),
        "{}",
        o.stdout
    );
    // The recommendation's CPU per I/O is within 2% of the plateau's
    // lowest (the table rounds to whole nanoseconds).
    let lowest = rows
        .iter()
        .filter(|r| r.0 >= first_on_plateau && r.1 >= 98.0)
        .map(|r| r.3)
        .fold(f64::INFINITY, f64::min);
    let chosen = rows.iter().find(|r| r.0 == recommended).expect("swept").3;
    assert!(chosen - 0.5 <= (lowest + 0.5) * 1.02, "{}", o.stdout);
}

#[test]
fn help_names_the_workflow_commands() {
    let o = cint(&["--help"]);
    assert_eq!(o.status, 0);
    for word in ["cint sweep", "cint plot", "cint calibrate", "--fio"] {
        assert!(o.stdout.contains(word), "{word} in {}", o.stdout);
    }
    let o = cint(&["calibrate", "--help"]);
    for word in [
        "--device",
        "--emu",
        "--delta",
        "--percentile",
        "--plot",
        "--no-plot",
        "out/calibrate-PROFILE",
    ] {
        assert!(o.stdout.contains(word), "{word} in {}", o.stdout);
    }
}

/// `cint sweep --energy-map`: the winner map's CSV and charts from an
/// energy scenario, and the refusals (no size or threads key; no energy).
#[test]
fn sweep_draws_the_energy_winner_map() {
    let dir = temp_dir("wf-energy-map");
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/energy-table1.toml"
    );
    let map = dir.arg("map");
    let o = cint(&[
        "sweep",
        scenario,
        "--set",
        "duration=2ms",
        "--set",
        "warmup=1ms",
        "--vary",
        "job.reader.bs=4k,128k",
        "--vary",
        "job.reader.numjobs=1",
        "--vary",
        "seed=1,2",
        "--energy-map",
        &map,
        "--out",
        &dir.arg("sweep.jsonl"),
    ]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    let csv = std::fs::read_to_string(Path::new(&map).join("winners.csv")).expect("csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "size,threads,winner,runner_up,margin,p,tie");
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[1].starts_with("4k,1,") && lines[2].starts_with("128k,1,"),
        "{csv}"
    );
    assert_eq!(pngs(Path::new(&map)), ["winners.png"]);
    // Each of the three modes against the best of the other two, per tile.
    let csv = std::fs::read_to_string(Path::new(&map).join("strategies.csv")).expect("csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "size,threads,strategy,bytes_per_joule,best_other,margin,p,tie"
    );
    assert_eq!(lines.len(), 1 + 2 * 3, "{csv}");
    let winner_4k = csv_field(
        &std::fs::read_to_string(Path::new(&map).join("winners.csv")).expect("csv"),
        1,
        2,
    );
    let ahead: Vec<&str> = lines[1..4]
        .iter()
        .filter(|l| !l.split(',').nth(5).unwrap_or("-").starts_with('-'))
        .map(|l| l.split(',').nth(2).unwrap_or(""))
        .collect();
    assert_eq!(ahead, [winner_4k.as_str()], "{csv}");
    let o = cint(&[
        "sweep",
        scenario,
        "--vary",
        "job.reader.bs=4k",
        "--energy-map",
        &map,
    ]);
    assert_refused(
        &o,
        "--energy-map needs exactly one --vary key ending in .numjobs",
    );
    let o = cint(&[
        "sweep",
        scenario,
        "--set",
        "device.model=optane-p4800x",
        "--set",
        "duration=2ms",
        "--vary",
        "job.reader.bs=4k",
        "--vary",
        "job.reader.numjobs=1",
        "--energy-map",
        &map,
    ]);
    assert_refused(&o, "has no energy figures");
}

/// Field `col` of line `line` of a CSV text.
fn csv_field(csv: &str, line: usize, col: usize) -> String {
    csv.lines()
        .nth(line)
        .and_then(|l| l.split(',').nth(col))
        .unwrap_or_default()
        .to_string()
}
