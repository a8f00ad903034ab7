//! Hostile input: mangled scenarios and random `--set` arguments never
//! panic, and every refusal is one line pointing inside the file.

mod common;

use cint_scenario::{load_str, Origin};
use common::BASE;
use proptest::prelude::*;

fn check(text: &str, sets: &[String]) {
    if let Err(e) = load_str(text, "p.toml", sets) {
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{msg:?}");
        assert!(msg.starts_with("p.toml"), "{msg}");
        if let Origin::Line(n) = e.origin {
            assert!(
                n >= 1 && n <= text.lines().count().max(1),
                "line {n} outside the text: {msg}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text(text in "\\PC{0,200}") {
        check(&text, &[]);
    }

    #[test]
    fn base_with_a_byte_span_replaced(at in 0usize..BASE.len(), len in 0usize..12, with in "[ -~\n]{0,6}") {
        let end = (at + len).min(BASE.len());
        let text = format!("{}{}{}", &BASE[..at], with, &BASE[end..]);
        check(&text, &[]);
    }

    #[test]
    fn base_with_lines_dropped(drop in proptest::collection::vec(0usize..60, 1..4)) {
        let text: String = BASE
            .lines()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        check(&text, &[]);
    }

    #[test]
    fn random_sets(
        path in prop::sample::select(vec![
            "seed", "duration", "name", "device.parallel_units", "device.read.base", "host.cores",
            "strategy.cint.delta", "strategy.cint.barrier", "strategy.vic.epoch", "job.async.iodepth",
            "job.async.bs", "job.sync.cpu", "emu.backend", "job.async", "device.read.base.x",
        ]),
        value in "[ -~]{0,10}",
    ) {
        check(BASE, &[format!("{path}={value}")]);
    }
}
