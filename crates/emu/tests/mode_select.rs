//! `mode-select` on the emulator: requests submitted as polled and
//! requests waiting for an interrupt, in flight together on one client
//! and one queue, each come back exactly once, the way it was asked for;
//! and `cint_emu::run` runs the strategy with its selector choosing per
//! request (docs/EMULATOR-DESIGN.md, "Polled and interrupt-driven requests
//! on one queue").

mod common;
mod mixed;

use std::collections::HashMap;

use cint_emu::{
    BackendConfig, Client, DeliveredBy, Emulator, IdleDelivery, IoError, QueueMode, WaitMode,
};
use cint_policy::config::{AdaptiveParams, CinterruptsParams};
use cint_policy::{Hint, PolicyConfig, MS, US};
use common::*;
use mixed::*;
use proptest::prelude::*;

fn start(mode: QueueMode, service: u64, units: u32, idle: IdleDelivery) -> Emulator {
    let backend = BackendConfig::Synthetic {
        profile: device(service, units),
        seed: 5,
    };
    start_one_queue(mode, backend, idle)
}

/// Polled and interrupt-driven requests in flight together, on three
/// clients of one interrupt-driven queue, under policies that interrupt
/// per completion, coalesce, or defer to urgent hints: each comes back
/// once and the policy only ever sees the interrupt-driven ones.
#[test]
fn polled_and_interrupt_driven_requests_in_flight_together_each_complete_once() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let app = cint_emu::sys::allowed_cpus().expect("affinity")[0];
    let policies = [
        ("none", PolicyConfig::None),
        (
            "adaptive",
            PolicyConfig::Adaptive(AdaptiveParams {
                delta: 6 * US,
                thr: 32,
            }),
        ),
        (
            "cinterrupts",
            PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(6 * US, 32)),
        ),
    ];
    for (name, policy) in policies {
        for idle in [IdleDelivery::Waiter, IdleDelivery::Handler] {
            let emulator = start(QueueMode::Interrupt(policy), 2 * US, 16, idle);
            let handles: Vec<_> = (0..3u64)
                .map(|t| {
                    let client = emulator.client(0, 4 + 6 * t as usize).expect("client");
                    std::thread::spawn(move || mixed(client, 6_000, t, app))
                })
                .collect();
            let mut interrupt_driven = 0;
            for h in handles {
                let seen = h.join().expect("client thread");
                assert!(
                    seen.count.iter().all(|&n| n == 1),
                    "{name}: a request came back {} times",
                    seen.count.iter().find(|&&n| n != 1).unwrap_or(&1)
                );
                assert!(seen.polled > 0 && seen.interrupt_driven > 0, "{name}");
                interrupt_driven += seen.interrupt_driven;
            }
            let stats = emulator.shutdown().expect("clean shutdown");
            assert_eq!(stats.total_completions(), 18_000, "{name}");
            assert_eq!(stats.cancelled, 0, "{name}");
            if name == "none" {
                // One interrupt per interrupt-driven completion, none for
                // a polled one: the policy never saw those.
                assert_eq!(stats.total_irqs(), interrupt_driven, "{name} {idle:?}");
            } else {
                assert!(
                    stats.total_irqs() > 0 && stats.total_irqs() <= interrupt_driven,
                    "{name} {idle:?}: {} interrupts for {interrupt_driven} requests",
                    stats.total_irqs()
                );
            }
        }
    }
    assert_eq!(emulator_threads_left(), 0);
}

/// On a queue that only polls, a request submitted as polled is an
/// ordinary one: no interrupt, found by polling, once.
#[test]
fn a_polled_request_on_a_polling_queue_is_an_ordinary_one() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let app = cint_emu::sys::allowed_cpus().expect("affinity")[0];
    let emulator = start(QueueMode::Poll, 2 * US, 16, IdleDelivery::default());
    let client = emulator.client(0, 8).expect("client");
    assert!(!client.can_interrupt());
    let seen = std::thread::spawn(move || mixed_all_polled(client, app))
        .join()
        .expect("client thread");
    assert_eq!(seen, 2_000);
    let stats = emulator.shutdown().expect("clean shutdown");
    assert_eq!((stats.total_irqs(), stats.total_completions()), (0, 2_000));
}

fn mixed_all_polled(mut client: Client, app_cpu: u32) -> u64 {
    let _ = cint_emu::sys::pin_to(app_cpu);
    let mut done = Vec::new();
    let mut ids = HashMap::new();
    for k in 0..2_000u64 {
        let r = request(k, Hint::Unmarked);
        if k % 2 == 0 {
            client.submit_polled(r).expect("submit");
        } else {
            client.submit(r).expect("submit");
        }
        if client.in_flight() == client.depth() || k == 1_999 {
            client.wait(client.in_flight(), WaitMode::Spin, &mut done);
            for c in done.drain(..) {
                assert_eq!(c.by, DeliveredBy::Poll);
                *ids.entry(c.user_data).or_insert(0u32) += 1;
            }
        }
    }
    assert!(ids.values().all(|&n| n == 1));
    ids.len() as u64
}

/// A shutdown with polled and interrupt-driven requests queued in a slow
/// device: each comes back once, completed or cancelled, through the path
/// it was submitted for.
#[test]
fn shutdown_with_mixed_requests_in_flight_completes_or_cancels_each_once() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let emulator = start(
        QueueMode::Interrupt(PolicyConfig::None),
        2 * MS,
        1,
        IdleDelivery::default(),
    );
    let mut client = emulator.client(0, 16).expect("client");
    for k in 0..16u64 {
        if k % 2 == 0 {
            client.submit_polled(request(k, Hint::Unmarked))
        } else {
            client.submit(request(k, Hint::Urgent))
        }
        .expect("submit before shutdown");
    }
    let waiter = std::thread::spawn(move || {
        let mut done = Vec::new();
        client.wait(16, WaitMode::Block, &mut done);
        assert_eq!((client.in_flight(), client.strays()), (0, 0));
        done
    });
    std::thread::sleep(std::time::Duration::from_millis(3));
    let stats = emulator.shutdown().expect("clean shutdown");
    let done = waiter.join().expect("waiter");
    let mut ids: Vec<u64> = done.iter().map(|c| c.user_data).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..16).collect::<Vec<_>>());
    for c in &done {
        assert!(
            c.result == Ok(4096) || c.result == Err(IoError::Cancelled),
            "{c:?}"
        );
        assert_eq!(c.by == DeliveredBy::Poll, c.user_data % 2 == 0, "{c:?}");
    }
    let cancelled = done.iter().filter(|c| c.result.is_err()).count() as u64;
    assert!(cancelled > 0, "the slow device had requests queued");
    assert_eq!(stats.cancelled, cancelled);
    assert_eq!(stats.total_completions(), 16);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Any sequence of submissions (polled or not) and waits (spin,
    /// block, sleep then spin) on one client, with requests changing mode
    /// while others are in flight: every request comes back exactly once,
    /// the way it was submitted for.
    #[test]
    fn any_mix_of_modes_and_waits_loses_and_duplicates_nothing(
        steps in proptest::collection::vec((any::<bool>(), 0u8..3, 1u64..30), 1..80),
        depth in 1usize..8,
    ) {
        let _g = serial();
        if !can_emulate() {
            return Ok(());
        }
        let emulator = start(
            QueueMode::Interrupt(PolicyConfig::None),
            3 * US,
            4,
            IdleDelivery::Waiter,
        );
        let mut client = emulator.client(0, depth).expect("client");
        let mut polled_of = HashMap::new();
        let mut back = HashMap::new();
        let mut done = Vec::new();
        for (k, &(polled, wait, sleep_us)) in steps.iter().enumerate() {
            let k = k as u64;
            if client.in_flight() == client.depth() {
                let wait = match wait {
                    0 => Wait::Spin,
                    1 => Wait::Block,
                    _ => Wait::SleepThenSpin(sleep_us * US),
                };
                wait_once(&mut client, wait, &mut done);
            }
            let r = request(k, Hint::Unmarked);
            if polled {
                client.submit_polled(r).expect("submit");
            } else {
                client.submit(r).expect("submit");
            }
            polled_of.insert(k, polled);
        }
        let rest = client.in_flight();
        client.wait(rest, WaitMode::Block, &mut done);
        for c in &done {
            *back.entry(c.user_data).or_insert(0u32) += 1;
            prop_assert_eq!(c.by == DeliveredBy::Poll, polled_of[&c.user_data]);
        }
        prop_assert_eq!(back.len(), steps.len());
        prop_assert!(back.values().all(|&n| n == 1));
        prop_assert_eq!((client.in_flight(), client.strays()), (0, 0));
        drop(client);
        let stats = emulator.shutdown().expect("clean shutdown");
        let interrupt_driven = polled_of.values().filter(|&&p| !p).count() as u64;
        prop_assert_eq!(stats.total_irqs(), interrupt_driven);
    }
}

const SCENARIO: &str = r#"
name = "select"
duration = "60ms"
warmup = "10ms"
[device]
model = "optane-900p"
[host]
model = "xeon-e3-1230v5"
# What these runs check does not need real-time handlers: run where
# SCHED_FIFO is refused too (the note then says so).
[emu]
realtime = "prefer"
[[strategy]]
name = "sel"
kind = "mode-select"
[[job]]
name = "small"
engine = "pvsync2"
hipri = true
direct = true
rw = "randread"
bs = "4k"
[[job]]
name = "large"
engine = "pvsync2"
hipri = true
direct = true
rw = "randwrite"
bs = "1m"
[[job]]
name = "ring"
engine = "io_uring"
hipri = true
direct = true
iodepth = 4
rw = "randread"
bs = "4k"
[[job]]
name = "aio"
engine = "libaio"
direct = true
iodepth = 4
rw = "randread"
bs = "16k"
"#;

/// `cint emu` runs `mode-select`: a synchronous polled job's requests each
/// go the way its selector chose, an IOPOLL ring's all poll (its waits
/// choose between a spin and a sleep first), a job Linux would not poll
/// completes by interrupts; nothing is lost or duplicated, and under
/// `none` the interrupts are those of the interrupt-driven requests.
#[test]
fn cint_emu_runs_mode_select_per_request() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let sc = cint_scenario::load_str(SCENARIO, "select.toml", &[]).expect("valid scenario");
    check_mode_select_run(&sc, true);
    // The synchronous jobs alone: while one blocks, the other has its
    // core to itself, and its selector may spin or sleep (with the io_uring
    // thread spinning beside them, another thread always runs there).
    let sync_only = &SCENARIO[..SCENARIO.find("[[job]]\nname = \"ring\"").expect("ring job")];
    let sc = cint_scenario::load_str(sync_only, "sync.toml", &[]).expect("valid scenario");
    check_mode_select_run(&sc, true);
    // The interrupt queue under the strategy's `interrupts` policy.
    let set = ["strategy.sel.interrupts=cinterrupts".to_string()];
    let sc = cint_scenario::load_str(SCENARIO, "select.toml", &set).expect("valid scenario");
    check_mode_select_run(&sc, false);
}

/// The invariants of a run of [`SCENARIO`]; `per_completion`: its
/// interrupt queue interrupts once per completion (`none`).
fn check_mode_select_run(sc: &cint_scenario::Scenario, per_completion: bool) {
    let detail = cint_emu::run_detailed(sc).expect("mode-select runs on the emulator");
    let strategy = &detail.strategies[0];
    let result = &detail.result.results[0];
    assert_eq!(result.kind, "mode-select");
    let job = |name: &str| {
        strategy
            .jobs
            .iter()
            .find(|j| j.name == name)
            .expect("job detail")
    };
    for j in &strategy.jobs {
        assert_each_request_back_once(j, &j.name);
        assert!(j.completed > 0, "{}: ran", j.name);
    }
    for name in ["small", "large"] {
        // One choice per request, and each request came back the way
        // its choice asked for.
        let j = job(name);
        assert_eq!(j.modes.total(), j.submitted, "{name}");
        assert_eq!(j.by_poll, j.modes.poll + j.modes.sleep, "{name}");
        assert_eq!(j.by_full_irq + j.by_urgent_irq, j.modes.interrupt, "{name}");
    }
    // The result document carries the choices made in the measured
    // window: a part of the run's, about one per measured request.
    for j in &strategy.jobs {
        let doc = result
            .jobs
            .iter()
            .find(|d| d.name == j.name)
            .and_then(|d| d.modes.map(|m| (m, d.ios)))
            .expect("every job of a mode-select run has its choices");
        let (measured, ios) = doc;
        assert!(measured.poll <= j.modes.poll, "{}", j.name);
        assert!(measured.sleep <= j.modes.sleep, "{}", j.name);
        assert!(measured.interrupt <= j.modes.interrupt, "{}", j.name);
        if j.name != "aio" && j.name != "ring" {
            // One choice per request: the window's requests, give or take
            // those in flight at its edges (one per thread).
            assert!(
                measured.total().abs_diff(ios) <= 4,
                "{}: {measured:?} vs {ios}",
                j.name
            );
        }
    }
    if strategy.jobs.len() > 2 {
        let ring = job("ring");
        assert_eq!(ring.by_poll, ring.completed, "an IOPOLL ring only polls");
        assert!(ring.modes.total() > 0 && ring.modes.interrupt == 0);
        let aio = job("aio");
        assert_eq!(aio.by_poll, 0, "libaio is not polled");
        assert_eq!(aio.modes.total(), 0, "nothing to choose");
    }
    // Interrupts only for the interrupt-driven completions, one each
    // (the queue interrupts per completion).
    let interrupt_driven: u64 = strategy
        .jobs
        .iter()
        .map(|j| j.by_full_irq + j.by_urgent_irq)
        .sum();
    if per_completion {
        assert_eq!(strategy.irqs_total, interrupt_driven);
    } else {
        assert!(strategy.irqs_total > 0, "the policy interrupted");
    }
    assert_eq!(
        strategy.completions_total,
        strategy.jobs.iter().map(|j| j.completed).sum::<u64>()
    );
    let energy = result
        .energy
        .as_ref()
        .expect("the profiles have power data");
    assert!(energy.power_w > 0.0 && energy.bytes_per_joule > 0.0);
    // Whether the idle states of its waits could be seen, said once.
    let idle_notes: Vec<&String> = detail
        .result
        .notes
        .iter()
        .filter(|n| n.starts_with("strategy 'sel': mode-select") && n.contains("idle state"))
        .collect();
    assert_eq!(idle_notes.len(), 1, "{:?}", detail.result.notes);
    assert!(!idle_notes[0].contains('\n'), "{}", idle_notes[0]);
}

/// The idle states of this machine's first allowed CPU as cpuidle names
/// them, if it has any.
fn cpuidle_names(cpu: u32) -> Vec<String> {
    (0..)
        .map_while(|k| {
            std::fs::read_to_string(format!(
                "/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}/name"
            ))
            .ok()
        })
        .map(|n| n.trim().to_string())
        .collect()
}

/// With a host profile whose idle states are named as this machine's
/// cpuidle names them, `mode-select` on the emulator reads the CPU's entry
/// counters around one wait in sixteen and learns the state from those
/// that idled the CPU once: 1 MiB reads, whose waits the selector spends
/// asleep (docs/ALGORITHMS.md section 10, "What it measures").
#[test]
fn mode_select_learns_its_waits_idle_states_from_cpuidle() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let cpu = cint_emu::sys::allowed_cpus().expect("affinity")[0];
    let names = cpuidle_names(cpu);
    if names.is_empty() {
        // Not a prerequisite a machine can be given: said, not failed.
        eprintln!("skipped: CPU {cpu} has no cpuidle states to observe");
        return;
    }
    let mut text = SCENARIO[..SCENARIO.find("[[job]]").expect("jobs")].to_string();
    for (k, name) in names.iter().enumerate() {
        let polling = name == "POLL";
        let exit = if polling { 0 } else { k as u64 + 1 };
        text += &format!(
            "[[host.power.idle_states]]\nname = \"{name}\"\npolling = {polling}\n\
             exit_latency = \"{exit}us\"\ntarget_residency = \"{}us\"\npower_w = {}\n",
            exit * 2,
            4.0 / (k as f64 + 1.0)
        );
    }
    text += "[[job]]\nname = \"large\"\nengine = \"pvsync2\"\nhipri = true\n\
             direct = true\nrw = \"randread\"\nbs = \"1m\"\n";
    let sc = cint_scenario::load_str(&text, "cpuidle.toml", &["duration=200ms".into()])
        .expect("valid scenario");
    let entries = || -> u64 {
        (0..names.len())
            .filter_map(|k| {
                std::fs::read_to_string(format!(
                    "/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}/usage"
                ))
                .ok()
            })
            .filter_map(|u| u.trim().parse::<u64>().ok())
            .sum()
    };
    let entries_before = entries();
    let detail = cint_emu::run_detailed(&sc).expect("runs");
    let idle_entries = entries() - entries_before;
    let note = detail
        .result
        .notes
        .iter()
        .find(|n| n.starts_with("strategy 'sel': mode-select"))
        .expect("a note on the idle watch");
    let number_after = |what: &str| -> u64 {
        let at = note
            .find(what)
            .unwrap_or_else(|| panic!("{what:?} in {note}"))
            + what.len();
        note[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("a number after {what:?} in {note}"))
    };
    let sampled = number_after("counters around ");
    let learnt = number_after("reached from ");
    let modes = detail.strategies[0].jobs[0].modes;
    // About one wait in sixteen of those that could idle the CPU: never
    // more, and fewer only by the requests whose completion was in before
    // their wait began (no wait, nothing counted down).
    let idling = modes.sleep + modes.interrupt;
    assert!(
        idling > 100,
        "the selector slept or took interrupts: {modes:?}"
    );
    assert!(
        sampled * 16 <= idling + 16 && sampled * 16 * 4 + 64 >= idling * 3,
        "{sampled} looked at of {idling}: {note}"
    );
    assert!(learnt <= sampled, "{note}");
    // Where the CPU idled for most waits, some were its waits' own; where
    // another process kept it busy meanwhile, there was nothing to learn.
    if idle_entries * 2 >= idling {
        assert!(learnt > 0, "{idle_entries} idle entries: {note}");
    } else {
        eprintln!(
            "CPU {cpu} idled {idle_entries} times for {idling} waits: busy with another process"
        );
    }
}

#[test]
fn mode_select_without_power_data_is_refused_naming_the_profiles() {
    let text = SCENARIO.replace("xeon-e3-1230v5", "xeon-e5-2660v4");
    let sc = cint_scenario::load_str(&text, "s.toml", &[]).expect("valid scenario");
    let e = cint_emu::run(&sc).expect_err("refused");
    assert!(matches!(e, cint_emu::EmuError::Unsupported { .. }), "{e}");
    let line = e.to_string();
    assert!(
        line.starts_with("strategy.sel.kind: ")
            && line.contains("xeon-e5-2660v4")
            && line.contains("power")
            && !line.contains('\n'),
        "{line}"
    );
}
