//! The `cint` binary itself: help, `check`, and every way of refusing
//! input (exit status 2, exactly one line on stderr, nothing on stdout).
//! Engines are not run here; see fake_engines.rs for those paths.

mod common;

use std::path::Path;
use std::time::Duration;

use cint_test_support::process::{WaitError, Watched};
use cint_test_support::{temp_dir, DirFiles, TempDir};
use common::{cint_in, Out};

const SCENARIO: &str = "name = \"bin\"\n\
    [[strategy]]\nname = \"cint\"\nkind = \"cinterrupts\"\ndelta = \"6us\"\n\
    [[job]]\nname = \"async\"\nengine = \"io_uring\"\niodepth = 16\nbatch = 4\n";

fn cint(args: &[&str]) -> Out {
    cint_in(Path::new("."), args)
}

/// The scenario `text` in a directory of its own, removed when dropped.
fn scenario_file(tag: &str, text: &str) -> (TempDir, String) {
    let dir = temp_dir(&format!("bin-{tag}"));
    let name = dir.write("s.toml", text);
    (dir, name)
}

#[test]
fn help_explains_the_commands() {
    let o = cint(&["--help"]);
    assert_eq!(o.status, 0);
    for word in ["cint sim", "cint emu", "cint check", "--json"] {
        assert!(o.stdout.contains(word), "{word} in {}", o.stdout);
    }
    let o = cint(&["sim", "--help"]);
    assert_eq!(o.status, 0);
    for word in ["--json", "--out", "--seed", "--set"] {
        assert!(o.stdout.contains(word), "{word} in {}", o.stdout);
    }
}

#[test]
fn check_prints_the_resolved_scenario_which_loads_back() {
    let (_dir, file) = scenario_file("check", SCENARIO);
    let o = cint(&["check", &file, "--set", "strategy.cint.thr=8"]);
    assert_eq!((o.status, o.stderr.as_str()), (0, ""));
    // Defaults and the profile are spelled out...
    for key in [
        "seed = 1",
        "duration = \"1s\"",
        "parallel_units",
        "irq_fixed",
        "thr = 8",
        "ooo = true",
        "batch = 4",
    ] {
        assert!(o.stdout.contains(key), "{key} in\n{}", o.stdout);
    }
    // ...and the text is a scenario that resolves to the same thing.
    let again = cint_scenario::load_str(&o.stdout, "printed", &[]).unwrap();
    let mut original =
        cint_scenario::load_file(std::path::Path::new(&file), &["strategy.cint.thr=8".into()])
            .unwrap();
    original.source = again.source.clone();
    assert_eq!(again, original);
}

fn assert_refused(o: &Out, needle: &str) {
    assert_eq!(o.status, 2, "stderr: {}", o.stderr);
    assert_eq!(o.stdout, "", "nothing on stdout");
    assert_eq!(o.stderr.lines().count(), 1, "one line: {:?}", o.stderr);
    assert!(o.stderr.contains(needle), "{needle:?} in {:?}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
}

#[test]
fn invalid_scenarios_exit_2_with_one_line() {
    let (_dir, file) = scenario_file("invalid", &SCENARIO.replace("batch = 4", "batch = 40"));
    for cmd in ["check", "sim", "emu"] {
        let o = cint(&[cmd, &file]);
        assert_refused(
            &o,
            &format!("{file}:10: job.async.batch: must be at most iodepth = 16 (got 40)"),
        );
    }
    let (_dir2, good) = scenario_file("invalid-set", SCENARIO);
    assert_refused(
        &cint(&["sim", &good, "--set", "strategy.cint.delta=0us"]),
        &format!(
            "{good}: --set strategy.cint.delta=0us: strategy.cint.delta: must be at least 1ns"
        ),
    );
    assert_refused(
        &cint(&["check", &good, "--set", "job.nope.bs=4k"]),
        "no [[job]] named \"nope\"",
    );
    assert_refused(
        &cint(&["check", &good, "--set", "bs"]),
        "expected KEY=VALUE",
    );
    let (_dir3, broken) = scenario_file("syntax", "name = \"x\"\n[[job]\n");
    assert_refused(&cint(&["check", &broken]), &format!("{broken}:2: "));
    // A control character quoted from the input is shown escaped, never
    // sent raw to the terminal.
    let (_dir4, nul) = scenario_file("nul", "[j]\nbs=4k\0\n");
    let o = cint(&["sim", "--fio", &nul]);
    assert_refused(&o, "bs=4k\\u{0}");
    assert!(!o.stderr.contains('\0'), "{:?}", o.stderr);
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    assert_refused(
        &cint(&["check", "/nonexistent/cint/s.toml"]),
        "/nonexistent/cint/s.toml: cannot read",
    );
    assert_refused(&cint(&["sim", "x.toml", "--bogus"]), "--bogus");
    assert_refused(
        &cint(&["sim", "x.toml", "--seed", "minus-one"]),
        "minus-one",
    );
    assert_refused(&cint(&["frobnicate"]), "frobnicate");
    assert_refused(&cint(&[]), "missing command");
}

#[test]
fn a_duration_without_a_unit_is_refused_naming_the_units() {
    let (_dir, file) = scenario_file(
        "bare-duration",
        &SCENARIO.replace("name = \"bin\"\n", "name = \"bin\"\nduration = \"200\"\n"),
    );
    assert_refused(
        &cint(&["sim", &file]),
        &format!("{file}:2: duration: bad duration: '200' has no unit: write \"200ns\", \"200us\", \"200ms\" or \"200s\""),
    );
    let (_dir2, good) = scenario_file("bare-set", SCENARIO);
    assert_refused(
        &cint(&["sim", &good, "--set", "duration=1"]),
        &format!("{good}: --set duration=1: duration: bad duration: '1' has no unit"),
    );
    assert_refused(
        &cint(&["check", &good, "--set", "warmup=5"]),
        "'5' has no unit",
    );
}

#[test]
fn fio_only_flags_with_a_scenario_file_are_refused_not_ignored() {
    let (_dir, good) = scenario_file("fio-flags", SCENARIO);
    for (flag, value, key) in [
        ("--device", "p3700", "device.model"),
        ("--host", "xeon-e3-1230v5", "host.model"),
        ("--strategy", "none", "strategy.NAME.kind"),
    ] {
        for cmd in ["check", "sim"] {
            let o = cint(&[cmd, &good, flag, value]);
            assert_refused(&o, &format!("{flag} applies to --fio and --fio-cmd only"));
            assert!(o.stderr.contains(&format!("--set {key}=")), "{}", o.stderr);
        }
    }
}

/// A running `cint sweep` of `SCENARIO` with `vary`, one point at a time,
/// once its first point has finished: its line in FILE.partial shows the
/// Ctrl-C handler is installed (the file is created after it) and that
/// there is a point to keep. A fixed sleep instead could fire before the
/// handler on a loaded machine (killing the process outright) or after
/// every point on a fast one. Returns the directory, the child, FILE and
/// FILE.partial.
fn sweep_past_its_first_point(
    tag: &str,
    sets: &[&str],
    vary: &str,
) -> (TempDir, Watched, std::path::PathBuf, std::path::PathBuf) {
    let (dir, file) = scenario_file(tag, SCENARIO);
    let out = dir.path().join("points.jsonl");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cint"));
    cmd.args(["sweep", &file, "--jobs", "1"])
        .args(sets.iter().flat_map(|s| ["--set", s]))
        .args(["--vary", vary, "--out", &out.display().to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = Watched::spawn("cint sweep", &mut cmd).expect("cint starts");
    let partial = dir.path().join("points.jsonl.partial");
    let finished = child.wait_until(Duration::from_secs(60), Duration::from_millis(10), || {
        std::fs::read_to_string(&partial).is_ok_and(|t| t.lines().count() > 0)
    });
    match finished {
        Ok(()) => {}
        Err(WaitError::Exited(status)) => panic!("cint exited before a point finished: {status}"),
        Err(e) => panic!("no point of the sweep finished within 60 s: {e:?}"),
    }
    (dir, child, out, partial)
}

#[test]
fn ctrl_c_stops_a_sweep_and_keeps_the_points_that_finished() {
    let seeds: Vec<String> = (1..=3000).map(|s| s.to_string()).collect();
    let vary = format!("seed={}", seeds.join(","));
    let (_dir, mut child, out, partial) =
        sweep_past_its_first_point("sigint", &["duration=20ms"], &vary);
    // Twice, as `timeout -s INT` sends it (to the process, then to its
    // group, a few microseconds apart): one interrupt, not a second
    // Ctrl-C. The pause lets the first be taken before the second comes,
    // where two signals sent back to back would merge into one; it spins,
    // since a sleep's wake-up on a loaded machine could run long.
    child.signal(libc::SIGINT).expect("SIGINT sent");
    let sent = std::time::Instant::now();
    while sent.elapsed() < Duration::from_micros(200) {
        std::hint::spin_loop();
    }
    child.signal(libc::SIGINT).expect("SIGINT sent");
    let o = child.output_within(Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    let last = stderr.lines().last().unwrap_or("");
    assert!(last.starts_with("cint: sweep interrupted: "), "{stderr}");
    let lines = std::fs::read_to_string(&out).expect("the finished points are written");
    let n = lines.lines().count();
    assert!(n > 0 && n < 3000, "{n} points written");
    assert!(
        !partial.exists(),
        "the ordered file replaced the partial one"
    );
    assert!(
        last.contains(&format!("{n} of 3000 points finished")),
        "{last} vs {n}"
    );
    for line in lines.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .expect("each line is a whole JSON document");
    }
}

#[test]
fn a_second_ctrl_c_ends_a_sweep_at_once() {
    use std::os::unix::process::ExitStatusExt;
    // A short point, then one far longer than the test, which only the
    // second Ctrl-C can end: the first lets running points finish (and
    // one before any point starts would end the sweep at once).
    let (_dir, mut child, out, partial) =
        sweep_past_its_first_point("sigint-twice", &[], "duration=10ms,3600s");
    std::thread::sleep(Duration::from_millis(100));
    child.signal(libc::SIGINT).expect("SIGINT sent");
    // Well apart, as a hand presses Ctrl-C twice.
    std::thread::sleep(Duration::from_millis(300));
    child.signal(libc::SIGINT).expect("SIGINT sent");
    let o = child.output_within(Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.signal(), Some(libc::SIGINT), "{stderr}");
    assert!(!stderr.contains("sweep interrupted"), "{stderr}");
    assert!(!out.exists(), "no ordered file for a killed sweep");
    assert!(partial.exists(), "the partial file stays");
}

#[test]
fn a_completed_sweep_leaves_only_its_ordered_file() {
    // (A sweep that fails at a later point keeps the points that ran:
    // fake_engines.rs, since every point the simulator would refuse is
    // now refused before any runs.)
    let text = "name = \"partial\"\nduration = \"5ms\"\n\
        [[strategy]]\nname = \"v\"\nkind = \"vic\"\n\
        [[job]]\nname = \"async\"\nengine = \"libaio\"\niodepth = 16\n";
    let (dir, file) = scenario_file("partial", text);
    let out = dir.path().join("points.jsonl");
    let out_s = out.display().to_string();
    let o = cint(&["sweep", &file, "--vary", "seed=1,2", "--out", &out_s]);
    assert_eq!(o.status, 0, "{}", o.stderr);
    assert!(out.exists() && !std::path::Path::new(&format!("{out_s}.partial")).exists());
}

#[test]
fn check_refuses_what_sim_refuses_with_the_same_line() {
    // One rule for what runs: vic-sched needs guests the simulator does
    // not have yet, so `cint check` must not call the file valid.
    let text = "name = \"v\"\nduration = \"1ms\"\n\
                [[strategy]]\nname = \"s\"\nkind = \"vic-sched\"\n[[job]]\nname = \"a\"\n";
    let (dir, file) = scenario_file("one-rule", text);
    let check = cint(&["check", &file]);
    let sim = cint(&["sim", &file]);
    assert_refused(&check, "vic-sched");
    assert_refused(&sim, "vic-sched");
    assert_eq!(check.stderr, sim.stderr);
    // Named where it was written, like the loader's own refusals.
    assert!(
        check
            .stderr
            .starts_with(&format!("{file}:5: strategy.s.kind: ")),
        "{}",
        check.stderr
    );
    let emu = cint(&["emu", &file]);
    assert_refused(&emu, "vic-sched");
    assert!(
        emu.stderr
            .starts_with(&format!("{file}:5: strategy.s.kind: ")),
        "{}",
        emu.stderr
    );
    let set = cint(&["sim", &file, "--set", "strategy.s.kind=mode-select"]);
    assert_refused(&set, "power data");
    assert!(
        set.stderr.starts_with(&format!(
            "{file}: --set strategy.s.kind=mode-select: strategy.s.kind: "
        )),
        "{}",
        set.stderr
    );
    // And what sim runs, check accepts: more depth than tags included.
    let deep = "name = \"d\"\nduration = \"1ms\"\n[device]\nqueue_depth = 8\n\
                [[strategy]]\nname = \"n\"\nkind = \"none\"\n\
                [[job]]\nname = \"a\"\nengine = \"libaio\"\niodepth = 64\nnumjobs = 2\n";
    std::fs::write(&file, deep).unwrap();
    assert_eq!(cint(&["check", &file]).status, 0);
    assert_eq!(cint(&["sim", &file]).status, 0);
    std::fs::remove_dir_all(dir).unwrap();
}
