//! Every path of `sim` and `emu` through the library entry point, with
//! fake engines: JSON and table output, `--out`, `--seed`, engine
//! refusals and engine panics.

use std::ffi::OsString;

use cint::{run, EngineError, Engines, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE};
use cint_report::{JobResult, LatencyHistogram, RunResult, StrategyResult};
use cint_scenario::Scenario;
use cint_test_support::{temp_dir, DirFiles};

const SCENARIO: &str = "name = \"fake\"\nseed = 4\n\
    [[strategy]]\nname = \"default\"\nkind = \"none\"\n\
    [[strategy]]\nname = \"cint\"\nkind = \"cinterrupts\"\n\
    [[job]]\nname = \"async\"\nengine = \"libaio\"\niodepth = 8\n\
    [[job]]\nname = \"sync\"\n";

/// A result that echoes the scenario: names, seed, one row per
/// strategy x job, so the tests can see what the engine was given.
fn echo(s: &Scenario, substrate: &str) -> RunResult {
    let mut h = LatencyHistogram::new();
    h.record(12_000);
    RunResult {
        cint_version: cint_report::CINT_VERSION.into(),
        scenario: s.name.clone(),
        substrate: substrate.into(),
        device: s.device.model.clone(),
        host: s.host.model.clone(),
        seed: s.seed,
        duration_ns: s.duration,
        notes: Vec::new(),
        results: s
            .strategies
            .iter()
            .map(|st| StrategyResult {
                strategy: st.name.clone(),
                kind: st.kind().into(),
                interrupts: 10,
                interrupts_per_s: 10.0,
                urgent_interrupts: 0,
                cpu_util: 0.5,
                context_switches: 3,
                wakeups: 0,
                energy_j: None,
                energy: None,
                virt: None,
                jobs: s
                    .jobs
                    .iter()
                    .map(|j| JobResult {
                        name: j.name.clone(),
                        ios: 100,
                        iops: 100.0,
                        bw_bytes: 409_600,
                        cpu_util: 0.25,
                        context_switches: 1,
                        wakeups: 0,
                        lat_ns: h.stats(),
                        fio: None,
                        trace: None,
                        sync: None,
                        modes: None,
                    })
                    .collect(),
            })
            .collect(),
    }
}

const FAKE: Engines = Engines {
    sim: |s| Ok(echo(s, "sim")),
    emu: |s| Ok(echo(s, "emu")),
    sim_gaps: |_| Err(EngineError::input("no gaps in the fake")),
};

struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
}

fn cint(engines: &Engines, args: &[&str]) -> Outcome {
    let mut argv: Vec<OsString> = vec!["cint".into()];
    argv.extend(args.iter().map(OsString::from));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = run(argv, engines, &mut out, &mut err);
    Outcome {
        status,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

#[test]
fn json_is_exactly_one_document_and_nothing_else() {
    let dir = temp_dir("cli-json");
    let file = dir.write("s.toml", SCENARIO);
    for cmd in ["sim", "emu"] {
        let o = cint(&FAKE, &[cmd, &file, "--json"]);
        assert_eq!((o.status, o.stderr.as_str()), (EXIT_OK, ""));
        let mut docs =
            serde_json::Deserializer::from_str(&o.stdout).into_iter::<serde_json::Value>();
        let doc = docs.next().unwrap().unwrap();
        assert!(docs.next().is_none(), "one document only");
        assert_eq!(doc["substrate"], cmd);
        assert_eq!(doc["results"].as_array().unwrap().len(), 2);
        assert_eq!(doc["results"][1]["jobs"][0]["name"], "async");
    }
}

#[test]
fn the_table_has_a_row_per_strategy_and_job() {
    let dir = temp_dir("cli-table");
    let file = dir.write("s.toml", SCENARIO);
    let o = cint(&FAKE, &["sim", &file]);
    assert_eq!(o.status, EXIT_OK);
    for pair in [
        "default   async",
        "default   sync",
        "cint      async",
        "cint      sync",
    ] {
        assert!(o.stdout.contains(pair), "{pair:?} in\n{}", o.stdout);
    }
    assert_eq!(o.stdout.matches("(total)").count(), 2);
}

#[test]
fn seed_and_set_reach_the_engine() {
    let dir = temp_dir("cli-seed");
    let file = dir.write("s.toml", SCENARIO);
    let o = cint(
        &FAKE,
        &[
            "sim",
            &file,
            "--json",
            "--seed",
            "18446744073709551615",
            "--set",
            "name=renamed",
        ],
    );
    assert_eq!(o.status, EXIT_OK, "{}", o.stderr);
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(doc["seed"], serde_json::json!(u64::MAX));
    assert_eq!(doc["scenario"], "renamed");
    let o = cint(&FAKE, &["sim", &file, "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(doc["seed"], 4, "the file's seed without --seed");
}

#[test]
fn out_writes_both_sinks() {
    let dir = temp_dir("cli-out");
    let file = dir.write("s.toml", SCENARIO);
    let out = dir.path().join("nested/results");
    let o = cint(&FAKE, &["emu", &file, "--out", &out.display().to_string()]);
    assert_eq!(o.status, EXIT_OK, "{}", o.stderr);
    let json = std::fs::read_to_string(out.join("result.json")).unwrap();
    let table = std::fs::read_to_string(out.join("result.txt")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["substrate"], "emu");
    assert_eq!(table, o.stdout, "result.txt is the table printed");
}

#[test]
fn an_engine_refusal_is_one_line_and_status_2() {
    let refusing = Engines {
        sim: |_| Err(EngineError::input("needs 2 cores\nbut this machine has 1")),
        emu: |_| Err(EngineError::input("needs 2 cores, this machine has 1")),
        sim_gaps: |_| panic!("must not run"),
    };
    let dir = temp_dir("cli-refuse");
    let file = dir.write("s.toml", SCENARIO);
    for cmd in ["sim", "emu"] {
        let o = cint(&refusing, &[cmd, &file, "--json"]);
        assert_eq!(o.status, EXIT_USAGE);
        assert_eq!(o.stdout, "", "nothing on stdout");
        assert_eq!(o.stderr.lines().count(), 1, "{:?}", o.stderr);
        assert!(o.stderr.starts_with(&format!("{file}: ")), "{}", o.stderr);
        assert!(o.stderr.contains("needs 2 cores"));
    }
}

#[test]
fn an_engine_bug_reported_as_internal_is_status_1_not_2() {
    let buggy = Engines {
        sim: |_| {
            Err(EngineError::internal(
                "invariant violated (x): time would go backwards",
            ))
        },
        emu: |_| Err(EngineError::internal("ring lost an entry")),
        sim_gaps: |_| panic!("must not run"),
    };
    let dir = temp_dir("cli-internal");
    let file = dir.write("s.toml", SCENARIO);
    for cmd in ["sim", "emu"] {
        let o = cint(&buggy, &[cmd, &file]);
        assert_eq!(o.status, EXIT_INTERNAL, "{}", o.stderr);
        assert_eq!(o.stdout, "", "nothing on stdout");
        assert_eq!(o.stderr.lines().count(), 1, "{:?}", o.stderr);
        assert!(o.stderr.contains("internal error"), "{}", o.stderr);
    }
}

/// Engines that report a bug of theirs (not a panic) on every call.
const BUGGY: Engines = Engines {
    sim: |_| {
        Err(EngineError::internal(
            "invariant violated (x): time would go backwards",
        ))
    },
    emu: |_| {
        Err(EngineError::internal(
            "emulator internal error: ring lost an entry",
        ))
    },
    sim_gaps: |_| {
        Err(EngineError::internal(
            "invariant violated (x): posted twice",
        ))
    },
};

#[test]
fn an_engine_bug_inside_a_sweep_is_status_1_and_a_refusal_2() {
    let dir = temp_dir("cli-sweep-internal");
    let file = dir.write("s.toml", SCENARIO);
    for (flags, engine_says) in [
        (vec![], "invariant violated (x): time would go backwards"),
        (vec!["--emu"], "emulator internal error: ring lost an entry"),
    ] {
        let mut args = vec!["sweep", &file, "--vary", "seed=1,2"];
        args.extend(flags);
        let o = cint(&BUGGY, &args);
        assert_eq!(o.status, EXIT_INTERNAL, "{args:?}: {}", o.stderr);
        assert_eq!(o.stdout, "");
        // The message is the one a refusal gets; only the status differs.
        assert_eq!(
            o.stderr,
            format!("sweep point seed=1: run failed: {engine_says}\n")
        );
    }
    let refusing = Engines {
        sim: |_| Err(EngineError::input("needs 2 cores")),
        ..BUGGY
    };
    let o = cint(&refusing, &["sweep", &file, "--vary", "seed=1,2"]);
    assert_eq!(o.status, EXIT_USAGE, "{}", o.stderr);
    assert_eq!(o.stderr, "sweep point seed=1: run failed: needs 2 cores\n");
}

/// The fake simulator refuses the point of seed 2 when it runs it.
const REFUSES_SEED_2: Engines = Engines {
    sim: |s| {
        if s.seed == 2 {
            Err(EngineError::input("seed 2 is refused"))
        } else {
            Ok(echo(s, "sim"))
        }
    },
    ..FAKE
};

#[test]
fn a_sweep_that_fails_at_a_later_point_keeps_the_points_that_ran() {
    let dir = temp_dir("cli-sweep-partial");
    let file = dir.write("s.toml", SCENARIO);
    let out = dir.path().join("points.jsonl");
    let out_s = out.display().to_string();
    let o = cint(
        &REFUSES_SEED_2,
        &[
            "sweep", &file, "--jobs", "1", "--vary", "seed=1,2", "--out", &out_s,
        ],
    );
    assert_eq!(o.status, EXIT_USAGE, "{}", o.stderr);
    assert!(o.stderr.contains("seed 2 is refused"), "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("{out_s}.partial")),
        "{}",
        o.stderr
    );
    assert!(!out.exists(), "no ordered file for a failed sweep");
    let kept = std::fs::read_to_string(format!("{out_s}.partial")).expect("kept");
    // The seed 1 point: two strategies x two jobs.
    assert_eq!(kept.lines().count(), 4, "{kept}");
    assert!(kept.lines().all(|l| l.contains("\"seed\":\"1\"")), "{kept}");
}

#[test]
fn an_engine_bug_inside_calibrate_is_status_1_and_a_refusal_2() {
    let dir = temp_dir("cli-calibrate-internal");
    let plots = dir.path().join("plots").display().to_string();
    let calibrate = ["calibrate", "--device", "p3700", "--plot", &plots];
    // The probe's bug: the inter-arrival measurement comes first.
    let o = cint(&BUGGY, &calibrate);
    assert_eq!(o.status, EXIT_INTERNAL, "{}", o.stderr);
    assert_eq!(
        o.stderr,
        "calibrate: measuring inter-arrival times (no batching): \
         invariant violated (x): posted twice\n"
    );
    // The thr sweep's bug, on either engine, with the probe working.
    let gaps_ok = Engines {
        sim_gaps: |_| {
            let mut h = LatencyHistogram::new();
            h.record(3_000);
            Ok(h)
        },
        ..BUGGY
    };
    let o = cint(&gaps_ok, &calibrate);
    assert_eq!(o.status, EXIT_INTERNAL, "{}", o.stderr);
    assert_eq!(
        o.stderr,
        "calibrate: thr sweep: invariant violated (x): time would go backwards\n"
    );
    let mut on_emu = calibrate.to_vec();
    on_emu.push("--emu");
    let o = cint(&gaps_ok, &on_emu);
    assert_eq!(o.status, EXIT_INTERNAL, "{}", o.stderr);
    assert!(
        o.stderr
            .ends_with("calibrate: thr sweep: emulator internal error: ring lost an entry\n"),
        "{}",
        o.stderr
    );
    // Bad input to the same command is still status 2.
    let o = cint(&gaps_ok, &["calibrate", "--device", "vax"]);
    assert_eq!(o.status, EXIT_USAGE, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{:?}", o.stderr);
    assert!(
        !dir.path().join("plots").exists(),
        "nothing drawn after an error"
    );
}

#[test]
fn an_engine_panic_is_one_line_and_status_1() {
    let panicking = Engines {
        sim: |s| panic!("broken invariant in {}", s.name),
        emu: |_| {
            Ok(RunResult {
                cint_version: String::new(),
                scenario: String::new(),
                substrate: "emu".into(),
                device: String::new(),
                host: String::new(),
                seed: 0,
                duration_ns: 0,
                notes: Vec::new(),
                results: vec![StrategyResult {
                    strategy: "x".into(),
                    kind: "none".into(),
                    interrupts: 0,
                    interrupts_per_s: f64::NAN,
                    urgent_interrupts: 0,
                    cpu_util: 0.0,
                    context_switches: 0,
                    wakeups: 0,
                    energy_j: None,
                    energy: None,
                    virt: None,
                    jobs: vec![],
                }],
            })
        },
        sim_gaps: |_| panic!("must not run"),
    };
    let dir = temp_dir("cli-panic");
    let file = dir.write("s.toml", SCENARIO);
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let o = cint(&panicking, &["sim", &file]);
    std::panic::set_hook(prev);
    assert_eq!(o.status, EXIT_INTERNAL);
    assert_eq!(o.stderr.lines().count(), 1);
    assert!(
        o.stderr.contains("broken invariant in fake"),
        "{}",
        o.stderr
    );
    let o = cint(&panicking, &["emu", &file, "--json"]);
    assert_eq!(o.status, EXIT_INTERNAL);
    assert!(o.stderr.contains("interrupts_per_s"), "{}", o.stderr);
    assert_eq!(o.stdout, "");
}

#[test]
fn invalid_scenarios_never_reach_the_engine() {
    let never = Engines {
        sim: |_| panic!("must not run"),
        emu: |_| panic!("must not run"),
        sim_gaps: |_| panic!("must not run"),
    };
    let dir = temp_dir("cli-invalid");
    let file = dir.write("s.toml", &SCENARIO.replace("iodepth = 8", "iodepth = 0"));
    let o = cint(&never, &["sim", &file]);
    assert_eq!(o.status, EXIT_USAGE);
    assert_eq!(
        o.stderr,
        format!("{file}:12: job.async.iodepth: must be at least 1 (got 0)\n")
    );
}

#[test]
fn an_engine_panic_inside_a_sweep_is_one_line_and_status_1() {
    let panicking = Engines {
        sim: |s| {
            if s.seed == 2 {
                panic!("broken at seed 2")
            }
            Ok(echo(s, "sim"))
        },
        emu: |_| Err(EngineError::input("no cores")),
        sim_gaps: |_| panic!("gap probe broken"),
    };
    let dir = temp_dir("cli-sweep-panic");
    let file = dir.write("s.toml", SCENARIO);
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let o = cint(
        &panicking,
        &["sweep", &file, "--vary", "seed=1,2,3", "--jobs", "2"],
    );
    let refused = cint(&panicking, &["sweep", &file, "--vary", "seed=1", "--emu"]);
    let gaps = cint(&panicking, &["calibrate", "--device", "p3700"]);
    std::panic::set_hook(prev);
    assert_eq!(o.status, EXIT_INTERNAL, "{}", o.stderr);
    assert_eq!(o.stdout, "");
    assert_eq!(o.stderr.lines().count(), 1, "{:?}", o.stderr);
    assert!(o.stderr.contains("broken at seed 2"), "{}", o.stderr);
    // An engine's refusal stays a usage error, named with the point.
    assert_eq!(refused.status, EXIT_USAGE);
    assert!(
        refused
            .stderr
            .contains("sweep point seed=1: run failed: no cores"),
        "{}",
        refused.stderr
    );
    assert_eq!(gaps.status, EXIT_INTERNAL);
    assert!(gaps.stderr.contains("gap probe broken"), "{}", gaps.stderr);
}

#[test]
fn calibrate_refusals_are_one_line_and_status_2() {
    let refusing = Engines {
        sim: |_| Err(EngineError::input("needs 2 cores\nbut this machine has 1")),
        emu: |_| Err(EngineError::input("needs 2 cores")),
        sim_gaps: |_| {
            let mut h = LatencyHistogram::new();
            h.record(3_000);
            Ok(h)
        },
    };
    let dir = temp_dir("cli-calibrate-refuse");
    let plots = dir.path().join("plots").display().to_string();
    let o = cint(
        &refusing,
        &["calibrate", "--device", "p3700", "--plot", &plots],
    );
    assert_eq!(o.status, EXIT_USAGE, "{}", o.stderr);
    assert_eq!(o.stdout, "");
    assert_eq!(
        o.stderr, "calibrate: thr sweep: needs 2 cores\n",
        "one line, the engine's first"
    );
    let no_probe = Engines {
        sim_gaps: |_| Err(EngineError::input("no inter-arrival hook")),
        ..FAKE
    };
    let o = cint(
        &no_probe,
        &["calibrate", "--device", "p3700", "--plot", &plots],
    );
    assert_eq!(o.status, EXIT_USAGE);
    assert_eq!(
        o.stderr,
        "calibrate: measuring inter-arrival times (no batching): no inter-arrival hook\n"
    );
    assert!(
        !dir.path().join("plots").exists(),
        "nothing drawn after a refusal"
    );
}

#[test]
fn an_unwritable_output_path_is_refused_before_anything_runs() {
    // The engines panic if called: the path must be refused first.
    let never = Engines {
        sim: |_| panic!("must not run"),
        emu: |_| panic!("must not run"),
        sim_gaps: |_| panic!("must not run"),
    };
    let dir = temp_dir("cli-unwritable");
    let file = dir.write("s.toml", SCENARIO);
    let blocked = "/proc/cint-cannot-create-this";
    for args in [
        vec!["sim", &file, "--out", blocked],
        vec!["sim", &file, "--plot", blocked],
        vec![
            "sweep",
            &file,
            "--vary",
            "seed=1,2",
            "--out",
            "/proc/version/p.jsonl",
        ],
        vec![
            "sweep",
            &file,
            "--vary",
            "seed=1,2",
            "--csv",
            "/proc/version/p.csv",
        ],
        vec!["sweep", &file, "--vary", "seed=1,2", "--plot", blocked],
    ] {
        let o = cint(&never, &args);
        assert_eq!(o.status, EXIT_USAGE, "{args:?}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{:?}", o.stderr);
        assert!(o.stderr.contains("cannot write there"), "{}", o.stderr);
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--vary")
            .unwrap();
        assert!(o.stderr.contains(flag), "{flag} named in {}", o.stderr);
    }
}
