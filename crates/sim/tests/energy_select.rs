//! The `mode-select` strategy (docs/ALGORITHMS.md section 10) on the
//! energy study's machine, `scenarios/energy-map.toml`: on small and large
//! requests, one thread and four spread over the cores, under Linux
//! 5.15's `menu` and today's, it moves as many bytes per joule as the best
//! fixed mode of the tile (within 1%, one seed: the t-tested map over ten
//! seeds is docs/results/energy.md), except where listed with the reason.
//!
//! `cargo test --release -p cint-sim --test energy_select -- --nocapture`
//! prints every tile.

use std::path::Path;

use cint_report::{ModeChoices, RunResult};
use cint_scenario::{load_file, Scenario};

fn map(sets: &[String]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/energy-map.toml");
    load_file(&path, sets).expect("scenarios/energy-map.toml loads")
}

fn bytes_per_joule(r: &RunResult, name: &str) -> f64 {
    r.results
        .iter()
        .find(|s| s.strategy == name)
        .and_then(|s| s.energy.as_ref())
        .unwrap_or_else(|| panic!("strategy {name} has no energy"))
        .bytes_per_joule
}

const FIXED: [&str; 4] = ["interrupt", "classic-poll", "hybrid-poll", "hybrid-iopoll"];

/// Tiles where the selector falls more than 1% short, and why. Two left
/// this list when the selector came to observe the idle state its waits
/// reach (docs/ALGORITHMS.md section 10): `menu 128k x1`, where 5.15's
/// `menu` keeps the core in POLL against the rule's prediction (now 0.1%
/// short), and `menu-no-iowait 4k x4`, the striped units' queueing below
/// saturation, which now sits at the line (0.997% short at this seed,
/// 1.0-1.1% before).
const KNOWN_MISSES: &[(&str, &str)] = &[(
    "menu-no-iowait 128k x4",
    "12% short of interrupts: four threads' 128 KiB reads share the controller's pipe page \
         by page and end together, so no read ever crosses alone and the class's minimum device \
         time (202 us) meets its mean (208 us); the selector's queueing discount T - Tmin, which \
         had come from the run's first lone read (58 us), vanishes, and it prices an \
         interrupt's later wake-up as added time though the pipe stays busy with the other \
         threads' pages: it takes hybrid polling (docs/results/transfer-pipe.md)",
)];

#[test]
fn mode_select_ties_or_beats_the_best_fixed_mode() {
    let mut misses = Vec::new();
    for governor in ["menu", "menu-no-iowait"] {
        for bs in ["4k", "128k"] {
            for threads in [1, 4] {
                let sets = vec![
                    format!("host.power.governor={governor}"),
                    format!("job.reader.bs={bs}"),
                    format!("job.reader.numjobs={threads}"),
                ];
                let r = cint_sim::run(&map(&sets)).expect("runs");
                let (best, best_name) = FIXED
                    .iter()
                    .map(|&m| (bytes_per_joule(&r, m), m))
                    .fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a });
                let sel = bytes_per_joule(&r, "mode-select");
                let tile = format!("{governor} {bs} x{threads}");
                println!(
                    "{tile:<22} best {best_name:<13} {:7.2} MB/J  mode-select {:7.2} MB/J  {:+.1}%",
                    best / 1e6,
                    sel / 1e6,
                    (sel / best - 1.0) * 100.0
                );
                let known = KNOWN_MISSES.iter().any(|(t, _)| *t == tile);
                if sel < 0.99 * best && !known {
                    misses.push(format!("{tile}: {sel:.0} < best {best_name} {best:.0}"));
                }
                if known && sel >= 0.99 * best {
                    misses.push(format!("{tile} is listed as a miss but ties now"));
                }
            }
        }
    }
    assert!(misses.is_empty(), "{misses:#?}");
}

/// The map's tile with `sets`: the selector's interrupts per I/O of its
/// reader, and the modes it chose. The result carries one choice per
/// request in the window, give or take those in flight at its edges
/// (one per thread), which this checks.
fn selector_tile(sets: &[&str]) -> (f64, ModeChoices) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let r = cint_sim::run(&map(&sets)).expect("runs");
    let s = r
        .results
        .iter()
        .find(|s| s.strategy == "mode-select")
        .expect("mode-select runs");
    let job = &s.jobs[0];
    let modes = job.modes.expect("a mode-select job has its choices");
    let threads = sets
        .iter()
        .find_map(|s| s.strip_prefix("job.reader.numjobs="))
        .map_or(1, |n| n.parse::<u64>().expect("a thread count"));
    assert!(
        modes.total().abs_diff(job.ios) <= threads,
        "{modes:?} vs {}",
        job.ios
    );
    (s.interrupts as f64 / job.ios as f64, modes)
}

/// The choice follows the mechanisms: a fast request alone on its core
/// is polled (no interrupt at all); large requests that saturate the
/// device from four cores sleep until their interrupts.
#[test]
fn small_requests_are_polled_and_saturating_large_ones_interrupt() {
    let (small, modes) = selector_tile(&[]);
    assert_eq!(small, 0.0);
    assert_eq!(modes.poll, modes.total());
    let (large, modes) = selector_tile(&["job.reader.bs=128k", "job.reader.numjobs=4"]);
    assert!(large > 0.95, "{large} interrupts per I/O");
    assert!(
        modes.interrupt as f64 > 0.95 * modes.total() as f64,
        "{modes:?}"
    );
}

#[test]
fn mode_select_without_power_data_is_refused_naming_the_strategy() {
    let sets = vec![
        "host.model=xeon-e5-2660v4".to_string(),
        "host.cores=4".to_string(),
    ];
    let err = cint_sim::run(&map(&sets)).expect_err("no power data");
    assert!(!err.is_internal(), "{err}");
    assert_eq!(
        err.key.as_deref(),
        Some("strategy.mode-select.kind"),
        "{err}"
    );
    assert!(
        err.message.contains("power data") && !err.message.contains('\n'),
        "{err}"
    );
}

#[test]
fn a_platform_drawing_more_than_the_selector_weighs_is_refused_naming_its_power() {
    // Each figure is within its own bound; their sum at rest is not.
    let sets = vec![
        "host.power.base_w=6000".to_string(),
        "host.power.uncore_w=6000".to_string(),
    ];
    let err = cint_sim::run(&map(&sets)).expect_err("12 kW at rest");
    assert!(!err.is_internal(), "{err}");
    assert_eq!(err.key.as_deref(), Some("host.power.base_w"), "{err}");
    assert!(err.message.contains("10 kW"), "{err}");
}

/// Eight readers per hardware thread: whenever one issues a request, the
/// others of its CPU are runnable or asleep waiting for their reads, and
/// want the CPU back when those complete. The selector gives the CPU away
/// (sleeps until the interrupt) for every request rather than spin on it.
#[test]
fn a_cpu_shared_with_readers_waiting_for_io_is_given_away() {
    let (_, modes) = selector_tile(&[
        "job.reader.bs=1k",
        "job.reader.numjobs=64",
        "job.reader.cpus=[0,1,2,3,4,5,6,7]",
        "duration=20ms",
    ]);
    assert!(modes.total() > 10_000, "{modes:?}");
    assert_eq!(modes.interrupt, modes.total(), "{modes:?}");
}
