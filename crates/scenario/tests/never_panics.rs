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

/// Every shipped scenario file but the trace replay (whose trace path is
/// relative to the scenario's directory): between them they hold every
/// kind of section, applications, guests, power data and SMT included.
fn shipped() -> &'static [(String, String)] {
    static FILES: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    FILES.get_or_init(read_shipped)
}

fn read_shipped() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the scenarios directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            (!text.contains("[trace]") && !text.contains("trace ="))
                .then(|| (p.display().to_string(), text))
        })
        .collect();
    out.sort();
    assert!(out.len() >= 25, "{} scenario files", out.len());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn shipped_with_a_byte_span_replaced(
        which in 0usize..1_000,
        at in 0usize..100_000,
        len in 0usize..12,
        with in "[ -~\n]{0,6}",
    ) {
        let files = shipped();
        let (_, text) = &files[which % files.len()];
        let at = at % text.len().max(1);
        // Whole characters only (the comments hold some non-ASCII).
        let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let mut end = (at + len).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        check(&format!("{}{}{}", &text[..at], with, &text[end..]), &[]);
    }

    #[test]
    fn shipped_with_random_sets_of_the_new_layers(
        which in 0usize..1_000,
        path in prop::sample::select(vec![
            "app.db.max_write_buffer_number", "app.db.compaction_mib_cpu", "app.db.compaction_key_cpu",
            "app.db.threads", "app.db.cpus", "app.db.fill", "app.db.l0_compaction_trigger",
            "app.db.memtable", "app.db.value_size", "app.db.benchmark", "app.kv.workload",
            "app.kv.scan_length", "app.kv.cpus", "app.kv.ring", "app.dump.dump_hint",
            "host.power.governor", "host.power.states", "device.power.idle_w", "host.smt",
            "guest.vm0.vcpus", "guest.vm0.cpus", "job.reader.bs", "job.reader.numjobs",
            "job.reader.engine", "strategy.select.kind", "device.write.bandwidth",
        ]),
        value in prop::sample::select(vec![
            "0", "1", "-1", "2", "7", "1000000000000", "\"x\"", "[]", "[0,1]", "[99]", "\"1k\"",
            "\"0ns\"", "\"-5us\"", "true", "1.5", "nan", "\"menu\"", "\"teo\"", "\"random\"",
            "\"Z\"", "{}", "\"18446744073709551615\"",
        ]),
    ) {
        let files = shipped();
        let (_, text) = &files[which % files.len()];
        check(text, &[format!("{path}={value}")]);
    }
}
