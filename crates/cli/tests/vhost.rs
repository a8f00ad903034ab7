//! `cint vhost` as a process: every bad input is one line and exit 2
//! before anything is created; a running back end owns its socket
//! (0600), refuses a second one on it, writes its stats on SIGUSR1 and on
//! SIGTERM, and removes only what it created.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cint_test_support::process::{WaitError, Watched};
use cint_test_support::temp_dir;

fn cint(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_cint"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        o.status.code().expect("exited, not killed"),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// Waits up to 30 s (a loaded 2-core CI machine) for `path` to appear.
fn wait_for(path: &Path, back_end: &mut Watched) {
    match back_end.wait_until(Duration::from_secs(30), Duration::from_millis(10), || {
        path.exists()
    }) {
        Ok(()) => {}
        Err(WaitError::Exited(status)) => panic!("back end exited early: {status}"),
        Err(e) => panic!("{} never appeared: {e:?}", path.display()),
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = temp_dir("vhost-bad");
    let dir = dir.path();
    let sock = dir.join("s.sock");
    let sock = sock.to_str().unwrap();
    let odd = dir.join("odd.img");
    std::fs::write(&odd, vec![0u8; 1000]).unwrap();
    let not_socket = dir.join("file");
    std::fs::write(&not_socket, b"x").unwrap();
    let missing = dir.join("missing.img");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--image", missing.to_str().unwrap()], "does not exist"),
        (vec!["--image", odd.to_str().unwrap()], "multiple of 512"),
        (vec!["--image", "null:1000"], "multiple of 512"),
        (vec!["--image", "null:1M", "--queues", "0"], "--queues 0"),
        (
            vec!["--image", "null:1M", "--queues", "65"],
            "between 1 and 64",
        ),
        (
            vec!["--image", "null:1M", "--strategy", "turbo"],
            "unknown strategy kind",
        ),
        (
            vec!["--image", "null:1M", "--strategy", "adaptive,delta=6"],
            "delta",
        ),
        (
            vec!["--image", "null:1M", "--hint-map", "rt=fast"],
            "--hint-map",
        ),
        (
            vec!["--image", "null:1M", "--stats-interval", "soon"],
            "--stats-interval",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["vhost", "--socket", sock];
        args.extend(extra.iter().copied());
        let (status, stdout, stderr) = cint(&args);
        assert_eq!(status, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!Path::new(sock).exists(), "nothing created on bad input");
    }
    let (status, _, stderr) = cint(&[
        "vhost",
        "--socket",
        not_socket.to_str().unwrap(),
        "--image",
        "null:1M",
    ]);
    assert_eq!(status, 2);
    assert!(stderr.contains("not a socket"), "{stderr}");
    assert_eq!(std::fs::read(&not_socket).unwrap(), b"x", "left alone");
}

#[test]
fn a_running_back_end_owns_its_socket_and_writes_stats_on_signals() {
    let dir = temp_dir("vhost-run");
    let dir = dir.path();
    let sock = dir.join("s.sock");
    let stats = dir.join("stats.json");
    let metrics = dir.join("metrics.sock");
    // Killed and reaped if the test fails half-way, so a failed assertion
    // never leaves a daemon behind (holding the test runner's output open).
    let mut back_end = Watched::spawn(
        "the back end",
        Command::new(env!("CARGO_BIN_EXE_cint"))
            .args([
                "vhost",
                "--socket",
                sock.to_str().unwrap(),
                "--image",
                "null:1G",
            ])
            .args([
                "--queues",
                "2",
                "--strategy",
                "cinterrupts,delta=6us,thr=32",
            ])
            .args(["--stats-json", stats.to_str().unwrap()])
            .args(["--metrics-socket", metrics.to_str().unwrap()])
            .stderr(Stdio::null()),
    )
    .unwrap();
    wait_for(&sock, &mut back_end);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The metrics socket is bound before the vhost-user socket's
    // readiness is visible, so it exists by now.
    let mode = std::fs::metadata(&metrics).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::os::unix::net::UnixStream::connect(&metrics).unwrap(),
        &mut text,
    )
    .unwrap();
    assert!(
        text.contains(
            "cint_vhost_requests_total{queue=\"1\",strategy=\"cinterrupts,delta=6us,thr=32\"} 0\n"
        ),
        "{text}"
    );

    let (status, _, stderr) = cint(&[
        "vhost",
        "--socket",
        sock.to_str().unwrap(),
        "--image",
        "null:1M",
    ]);
    assert_eq!(status, 2);
    assert!(stderr.contains("in use"), "{stderr}");
    assert!(sock.exists(), "the second back end removed nothing");

    back_end.signal(libc::SIGUSR1).unwrap();
    wait_for(&stats, &mut back_end);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(doc["strategy"], "cinterrupts,delta=6us,thr=32");
    assert_eq!(doc["queues"].as_array().unwrap().len(), 2);
    assert_eq!(doc["totals"]["requests"], 0);

    std::fs::remove_file(&stats).unwrap();
    back_end.signal(libc::SIGTERM).unwrap();
    // A back end that ignores SIGTERM would hang the test.
    let status = back_end.reap_or_kill(Duration::from_secs(30), "of SIGTERM");
    assert_eq!(status.code(), Some(0));
    assert!(stats.exists(), "stats written on exit");
    assert!(!sock.exists(), "its own socket removed");
    assert!(!metrics.exists(), "its metrics socket removed");
}
