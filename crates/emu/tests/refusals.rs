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
    refused_naming(text, "vic-sched");
}

/// `text` is a valid scenario the emulator refuses as a configuration
/// error whose message names `what`.
fn refused_naming(text: &str, what: &str) {
    let sc = cint_scenario::load_str(text, "v.toml", &[]).expect("valid scenario");
    let e = cint_emu::run(&sc).expect_err("refused");
    assert!(matches!(e, cint_emu::EmuError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains(what), "{e}");
}

#[test]
fn fio_shaping_keys_the_threads_do_not_honour_are_refused_by_name() {
    for (key, line) in [
        ("sched_group", "sched_group = \"g\""),
        // Buffered iocbs run through the simulator's page cache.
        ("direct", "direct = false"),
    ] {
        let text = format!(
            "name = \"s\"\nduration = \"10ms\"\n[[strategy]]\nname = \"n\"\nkind = \"none\"\n\
             [[job]]\nname = \"aio\"\nengine = \"libaio\"\niodepth = 4\n{line}\n"
        );
        let sc = cint_scenario::load_str(&text, "s.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        let e = cint_emu::run(&sc).expect_err(key);
        let cint_emu::EmuError::Unsupported { key: at, .. } = &e else {
            panic!("{key}: {e}");
        };
        assert_eq!(at, &format!("job.aio.{key}"));
        let msg = e.to_string();
        assert!(!msg.contains('\n'));
        // Each says what to do instead.
        assert!(msg.contains("use cint sim"), "{msg}");
    }
}

/// `mode-select` beside an SQ-polled ring, which has no wait to choose
/// (its thread spins on its completions, its SQ thread submits them all
/// alike), is refused by the strategy's kind.
#[test]
fn mode_select_beside_an_sq_polled_ring_is_refused_by_the_strategys_kind() {
    let text = "name = \"s\"\nduration = \"10ms\"\n[host]\nmodel = \"xeon-e3-1230v5\"\ncores = 2\n\
                [device]\nmodel = \"optane-900p\"\n\
                [[strategy]]\nname = \"sel\"\nkind = \"mode-select\"\n\
                [[job]]\nname = \"ring\"\nengine = \"io_uring\"\niodepth = 4\nsqpoll = true\n\
                hipri = true\ncpu = 0\n";
    let sc = cint_scenario::load_str(text, "s.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    let e = cint_emu::run(&sc).expect_err("mode-select");
    let cint_emu::EmuError::Unsupported { key, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(key, "strategy.sel.kind");
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn guests_are_refused_the_emulator_runs_no_virtual_machines() {
    let text = r#"
name = "vm"
duration = "10ms"
[host]
cores = 2
[hypervisor]
model = "esx-like"
cores = [0]
[[guest]]
name = "g"
cores = [1]
[[strategy]]
name = "vic"
kind = "vic"
[[job]]
name = "aio"
guest = "g"
engine = "libaio"
iodepth = 16
"#;
    refused_naming(text, "guest.g: ");
}

/// A device queue deeper than the emulator's queues hold is refused by
/// its key: its tags could not all be in flight.
#[test]
fn a_device_queue_deeper_than_the_emulator_holds_is_refused() {
    let text = "name = \"t\"\nduration = \"10ms\"\n[device]\nmodel = \"optane-p4800x\"\n\
                queue_depth = 8192\n[[strategy]]\nname = \"n\"\nkind = \"none\"\n\
                [[job]]\nname = \"a\"\nengine = \"libaio\"\niodepth = 4\n";
    let sc = cint_scenario::load_str(text, "t.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    let e = cint_emu::run(&sc).expect_err("too deep");
    let cint_emu::EmuError::Unsupported { key, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(key, "device.queue_depth");
}

/// Fewer device queues than the application cores the jobs use: blk-mq
/// shares a queue between cores, which the emulator does not (a queue per
/// core), so it refuses by the device's key; where the cores fall on
/// queues of their own it does not refuse for it.
#[test]
fn cores_sharing_a_device_queue_are_refused_by_the_device_key() {
    let text = |queues: u32, cpus: &str| {
        format!(
            "name = \"q\"\nduration = \"10ms\"\n[device]\nmodel = \"optane-p4800x\"\n\
             queues = {queues}\n[host]\nmodel = \"xeon-e5-2660v4\"\ncores = 4\n\
             [[strategy]]\nname = \"n\"\nkind = \"none\"\n\
             [[job]]\nname = \"a\"\nengine = \"psync\"\nnumjobs = 2\ncpus = {cpus}\n"
        )
    };
    let sc = cint_scenario::load_str(&text(2, "[0, 2]"), "q.toml", &[]).expect("valid");
    let e = cint_emu::run(&sc).expect_err("cores 0 and 2 share queue 0");
    let cint_emu::EmuError::Unsupported { key, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(key, "device.queues");
    assert!(
        e.to_string().contains("puts cores 0 and 2 on one queue"),
        "{e}"
    );
    // Cores 0 and 1 on queues 0 and 1: not this refusal (on a small
    // machine the cores themselves may be refused).
    let sc = cint_scenario::load_str(&text(2, "[0, 1]"), "q.toml", &[]).expect("valid");
    if let Err(cint_emu::EmuError::Unsupported { key, .. }) = cint_emu::run(&sc) {
        assert_ne!(key, "device.queues");
    }
}

/// Each thread of an I/O job is a client of the emulated device, and each
/// worker of an offloaded job's thread one more: beyond what a device
/// takes, the job is refused by the key that asks for them.
#[test]
fn an_offloaded_job_with_more_workers_than_the_device_takes_is_refused_by_iodepth() {
    let text = format!(
        "name = \"s\"\nduration = \"10ms\"\n[[strategy]]\nname = \"n\"\nkind = \"none\"\n\
         [[job]]\nname = \"aio\"\nengine = \"libaio\"\niodepth = {}\n\
         submit_mode = \"offload\"\n",
        cint_emu::MAX_CLIENTS
    );
    let sc = cint_scenario::load_str(&text, "s.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    let e = cint_emu::run(&sc).expect_err("refused");
    let cint_emu::EmuError::Unsupported { key, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(key, "job.aio.iodepth");
    let msg = e.to_string();
    assert!(!msg.contains('\n') && msg.contains("1025 clients"), "{msg}");
}
