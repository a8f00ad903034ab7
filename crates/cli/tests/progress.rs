//! The sweep's progress bar through the real binary: drawn, and the sweep
//! finishing, when stderr is a terminal (a pseudo-terminal opened by
//! util-linux `script`); not drawn when stderr is a pipe.
//!
//! The bar once deadlocked the binary whenever stderr was a terminal: the
//! main thread held stderr's lock for the whole run while the workers,
//! which drew the bar, waited for it. Hence the deadline below: a hang
//! must fail the test, not stall the suite.

use std::process::{Command, Stdio};
use std::time::Duration;

use cint_test_support::process::Watched;
use cint_test_support::{skip, temp_dir};

/// Far beyond what the sweep needs (well under a second in a release
/// build); only a hang gets near it.
const DEADLINE: Duration = Duration::from_secs(120);

const SCENARIO: &str = "name = \"tty\"\nduration = \"5ms\"\nwarmup = \"1ms\"\n\
    [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
    [[strategy]]\nname = \"adaptive\"\nkind = \"adaptive\"\n\
    [[job]]\nname = \"async\"\nengine = \"libaio\"\nrw = \"randread\"\niodepth = 8\n";

const VARY: &str = "job.async.iodepth=4,8,16";

/// Whether util-linux `script` is here (BSD's takes other arguments).
fn util_linux_script() -> bool {
    Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("util-linux")
        })
}

/// Quotes for `sh -c`, which `script -c` runs the command with.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The rows of a JSON-lines file, each checked to be JSON.
fn rows(path: &std::path::Path) -> usize {
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(path)
        .expect("the JSON lines were written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    rows.len()
}

#[test]
fn on_a_terminal_the_bar_is_drawn_and_the_sweep_finishes() {
    if !util_linux_script() {
        skip::missing("util-linux `script` is not installed, so no pseudo-terminal to run in");
        return;
    }
    let dir = temp_dir("progress-tty");
    let scenario = dir.path().join("s.toml");
    std::fs::write(&scenario, SCENARIO).expect("write");
    let out = dir.path().join("s.jsonl");
    let log = dir.path().join("tty.log");
    // Two workers: the bar used to be advanced from worker threads.
    let command = [
        env!("CARGO_BIN_EXE_cint"),
        "sweep",
        &scenario.display().to_string(),
        "--vary",
        VARY,
        "--jobs",
        "2",
        "--out",
        &out.display().to_string(),
    ]
    .map(sh_quote)
    .join(" ");
    let mut child = Watched::spawn(
        "cint sweep on a terminal",
        Command::new("script")
            .args(["-q", "-e", "-c", &command])
            .arg(&log)
            .env("TERM", "xterm")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .expect("script starts");
    let status = child.reap_or_kill(DEADLINE, "of starting: the progress bar deadlocks");
    let transcript =
        String::from_utf8_lossy(&std::fs::read(&log).expect("script's log")).into_owned();
    assert!(status.success(), "exit {status}; terminal:\n{transcript}");
    // The bar's template ends every drawing with "N/3 points".
    assert!(
        transcript.contains("/3 points"),
        "no progress bar on the terminal:\n{transcript}"
    );
    assert!(transcript.contains("cint: wrote"), "{transcript}");
    assert_eq!(rows(&out), 6, "3 points x 2 strategies");
}

#[test]
fn on_a_pipe_no_bar_is_drawn() {
    let dir = temp_dir("progress-pipe");
    let scenario = dir.path().join("s.toml");
    std::fs::write(&scenario, SCENARIO).expect("write");
    let out = dir.path().join("s.jsonl");
    let o = Command::new(env!("CARGO_BIN_EXE_cint"))
        .arg("sweep")
        .arg(&scenario)
        .args(["--vary", VARY, "--jobs", "2", "--out"])
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("cint runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // Only the line naming the file: no bar, no cursor movement.
    assert_eq!(
        stderr,
        format!("cint: wrote {} (6 rows)\n", out.display()),
        "stderr"
    );
    assert!(o.stdout.is_empty());
    assert_eq!(rows(&out), 6);
}
