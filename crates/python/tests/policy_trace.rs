//! The recorded policy sequence that `python/tests/test_policy.py` replays
//! through `cinterrupts.Policy`: seeded random submissions (with hints),
//! completions in any order and timer expiries at the deadlines the policy
//! asks for, with every decision the Rust policy (`AnyPolicy`) took.
//!
//! This test regenerates the sequence and checks it against the committed
//! file, so the Python test always replays what the Rust policy does today.
//! After a deliberate change of a policy, rewrite the file with
//! `CINT_BLESS=1 cargo test --release -p cint-python --test policy_trace`.

use std::path::PathBuf;

use cint_policy::config::{
    AdaptiveParams, BarrierMode, CinterruptsParams, NvmeParams, StormGuardMode, VicParams,
};
use cint_policy::{Decision, Hint, Irq, Policy, PolicyConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

const EVENTS: usize = 600;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python/tests/data/policy_trace.json")
}

/// The C ABI's code of a decision (`CINT_IRQ_*`).
fn code(decision: Decision) -> u8 {
    match decision.irq() {
        None => 0,
        Some(Irq::Full) => 1,
        Some(Irq::UrgentOnly) => 2,
    }
}

fn hint_name(hint: Hint) -> Value {
    match hint {
        Hint::Unmarked => Value::Null,
        Hint::Urgent => json!("urgent"),
        Hint::Barrier => json!("barrier"),
    }
}

/// Each policy as Python constructs it (kind and keyword arguments, in
/// the scenario file's keys and units) and as Rust does.
fn policies() -> Vec<(Value, PolicyConfig)> {
    let cint = |ooo, barrier, max_irq_rate, guard| {
        PolicyConfig::Cinterrupts(CinterruptsParams {
            adaptive: AdaptiveParams {
                delta: 6_000,
                thr: 32,
            },
            ooo,
            barrier,
            max_irq_rate,
            guard,
        })
    };
    vec![
        (json!({"kind": "none", "params": {}}), PolicyConfig::None),
        (
            json!({"kind": "nvme", "params": {"thr": 8, "time": "20us"}}),
            PolicyConfig::Nvme(NvmeParams {
                thr: 8,
                time: 20_000,
                coalescing_disabled: false,
            }),
        ),
        (
            json!({"kind": "adaptive", "params": {"delta": "6us", "thr": 32}}),
            PolicyConfig::Adaptive(AdaptiveParams {
                delta: 6_000,
                thr: 32,
            }),
        ),
        (
            json!({"kind": "cinterrupts", "params": {"delta": "6us", "thr": 32}}),
            cint(true, BarrierMode::Relaxed, None, StormGuardMode::Rate),
        ),
        (
            json!({"kind": "cinterrupts", "params": {"delta": "6000ns", "thr": 32, "ooo": false, "barrier": "strict"}}),
            cint(false, BarrierMode::Strict, None, StormGuardMode::Rate),
        ),
        (
            json!({"kind": "cinterrupts", "params": {"delta": "6us", "thr": 32, "max_irq_rate": 5000}}),
            cint(
                true,
                BarrierMode::Relaxed,
                Some(5_000),
                StormGuardMode::Rate,
            ),
        ),
        (
            json!({"kind": "cinterrupts", "params": {"delta": "6us", "thr": 32, "max_irq_rate": 5000, "guard": "artifact"}}),
            cint(
                true,
                BarrierMode::Relaxed,
                Some(5_000),
                StormGuardMode::Artifact,
            ),
        ),
        (
            json!({"kind": "vic", "params": {}}),
            PolicyConfig::Vic(VicParams::default()),
        ),
    ]
}

/// One policy driven by a seeded random load; every call and its answer.
fn record(config: &PolicyConfig, seed: u64) -> Vec<Value> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut policy = config.build(0).expect("valid parameters");
    let mut in_flight: Vec<(u64, Hint)> = Vec::new();
    let mut events = Vec::new();
    let mut now: u64 = 0;
    while events.len() < EVENTS {
        // Bursts and gaps: mostly sub-microsecond steps, now and then a
        // quiet period longer than delta.
        let step = if rng.gen_bool(0.05) {
            rng.gen_range(5_000..50_000)
        } else {
            rng.gen_range(0..1_500)
        };
        let next = now + step;
        if let Some(deadline) = policy.next_deadline().filter(|&d| d <= next) {
            now = now.max(deadline);
            events.push(json!(["timer", now, code(policy.on_timer(now))]));
            continue;
        }
        now = next;
        let submit = in_flight.is_empty() || (in_flight.len() < 48 && rng.gen_bool(0.55));
        if submit {
            let hint = match rng.gen_range(0..10) {
                0 => Hint::Urgent,
                1 => Hint::Barrier,
                _ => Hint::Unmarked,
            };
            let seq = policy.on_submit(now, hint);
            in_flight.push((seq, hint));
            events.push(json!(["submit", now, hint_name(hint), seq]));
        } else {
            // Mostly in order, sometimes out of order.
            let at = if rng.gen_bool(0.8) {
                0
            } else {
                rng.gen_range(0..in_flight.len())
            };
            let (seq, hint) = in_flight.remove(at);
            let irq = code(policy.on_complete(now, seq, hint));
            events.push(json!(["complete", now, hint_name(hint), seq, irq]));
        }
        events.push(json!(["deadline", policy.next_deadline()]));
    }
    events
}

fn trace() -> Value {
    let runs: Vec<Value> = policies()
        .into_iter()
        .enumerate()
        .map(|(i, (python, config))| {
            let mut run = python;
            run["events"] = Value::Array(record(&config, 7 + i as u64));
            run
        })
        .collect();
    json!({ "runs": runs })
}

#[test]
fn the_recorded_sequence_is_what_the_rust_policies_decide_today() {
    let text = serde_json::to_string(&trace()).expect("json") + "\n";
    let path = fixture();
    if std::env::var_os("CINT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &text).expect("write the fixture");
    }
    let committed =
        std::fs::read_to_string(&path).expect("the committed trace (CINT_BLESS=1 writes it)");
    assert!(
        committed == text,
        "{} differs from what the policies decide; rerun with CINT_BLESS=1 if the change is deliberate",
        path.display()
    );
    // The trace exercises what it is for: interrupts of both kinds and
    // timer expiries.
    let all = text.as_str();
    assert!(all.contains("[\"timer\"") && all.contains(",2]") && all.contains(",1]"));
}
