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
