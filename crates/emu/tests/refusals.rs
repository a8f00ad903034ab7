//! Scenarios the emulator cannot honour are refused with the reason, not
//! run as something else.

#[test]
fn vic_sched_is_refused_not_run_as_vic() {
    let text = r#"
name = "vic-sched"
duration = "10ms"
[[strategy]]
name = "sched"
kind = "vic-sched"
[[job]]
name = "aio"
engine = "libaio"
iodepth = 16
"#;
    let sc = cint_scenario::load_str(text, "v.toml", &[]).expect("valid scenario");
    let e = cint_emu::run(&sc).expect_err("refused");
    assert!(matches!(e, cint_emu::EmuError::Config(_)), "{e}");
    assert!(e.to_string().contains("vic-sched"), "{e}");
}

/// The emulator's workload takes every time stamp it measures latency
/// with, so fio's `gtod_reduce` cannot change it: refused, naming the job
/// and the key (the command line adds the file), before anything runs.
#[test]
fn gtod_reduce_is_refused_not_ignored() {
    let text = r#"
name = "gtod"
duration = "10ms"
[[strategy]]
name = "none"
kind = "none"
[[job]]
name = "aio"
engine = "libaio"
iodepth = 16
gtod_reduce = true
"#;
    let sc = cint_scenario::load_str(text, "g.toml", &[]).expect("valid scenario");
    let e = cint_emu::run(&sc).expect_err("refused");
    assert!(matches!(e, cint_emu::EmuError::Config(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("'aio'") && msg.contains("gtod_reduce"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
}
