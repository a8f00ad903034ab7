//! `vhost-load`'s command line: bad input is one line naming the option,
//! exit status 2; a run against the peer prints its figures.

use std::process::Command;

fn vhost_load(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vhost-load"))
        .args(args)
        .output()
        .expect("run vhost-load");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_is_one_line_and_exit_status_2() {
    let dir = cint_test_support::temp_dir("vhost-load-cli");
    let nowhere = dir.path().join("nothing.sock");
    let nowhere = nowhere.to_str().expect("utf-8 path");
    let cases: [(&[&str], &str); 7] = [
        (&["run"], "--socket"),
        (&["bogus"], "bogus"),
        (&["run", "--socket", nowhere], "--socket"),
        (
            &["run", "--socket", nowhere, "--block-size", "1000"],
            "--block-size",
        ),
        (
            &["run", "--socket", nowhere, "--depth", "8", "--batch", "9"],
            "--batch",
        ),
        (&["run", "--socket", nowhere, "--depth", "0"], "--depth"),
        (
            &["run", "--socket", nowhere, "--queue-size", "300"],
            "--queue-size",
        ),
    ];
    for (args, option) in cases {
        let (code, _, err) = vhost_load(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(option), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}
