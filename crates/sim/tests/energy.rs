//! The energy layer (docs/ENERGY.md): the energy study's Table 1 from the
//! shipped profiles (`xeon-e3-1230v5`, `optane-900p`) as
//! `scenarios/energy-table1.toml` runs it, what each mechanism does, and
//! that a run without power data is left as it was.
//!
//! `cargo test --release -p cint-sim --test energy -- --nocapture` prints
//! the table of targets and what the model gives.

use std::path::Path;

use cint_report::{RunResult, StrategyResult};
use cint_scenario::{load_file, Scenario};

fn table1(sets: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/energy-table1.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_file(&path, &sets).expect("scenarios/energy-table1.toml loads")
}

fn by_name<'a>(r: &'a RunResult, name: &str) -> &'a StrategyResult {
    r.results
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("strategy {name} missing"))
}

const MODES: [&str; 3] = ["classic-poll", "hybrid-poll", "interrupt"];

/// Table 1 of the study (4 KiB random reads, Optane 900P, Linux 5.15),
/// one thread: (mode, mean latency us, IOPS).
const TABLE1_ONE_THREAD: [(&str, f64, f64); 3] = [
    ("classic-poll", 8.1, 120_470.0),
    ("hybrid-poll", 8.5, 113_846.0),
    ("interrupt", 10.1, 96_722.0),
];

#[test]
fn table1_one_thread_within_ten_percent_and_in_the_studys_order() {
    let r = cint_sim::run(&table1(&[])).expect("runs");
    within_ten_percent_in_the_studys_order(&r, &TABLE1_ONE_THREAD);
}

/// A run's mean latency over all its jobs' I/Os, us.
fn mean_us(s: &StrategyResult) -> f64 {
    let n: u64 = s.jobs.iter().map(|j| j.lat_ns.n).sum();
    s.jobs
        .iter()
        .map(|j| j.lat_ns.mean * j.lat_ns.n as f64)
        .sum::<f64>()
        / n as f64
        / 1000.0
}

/// Each mode's mean latency and IOPS within 10% of `table`'s (mode, us,
/// IOPS), and the modes in the study's order exactly: latency rising,
/// IOPS falling.
fn within_ten_percent_in_the_studys_order(r: &RunResult, table: &[(&str, f64, f64)]) {
    let mut misses = Vec::new();
    println!("mode          lat_us  target  IOPS     target");
    for &(mode, lat, iops) in table {
        let s = by_name(r, mode);
        let (got_lat, got_iops) = (mean_us(s), s.total_iops());
        println!("{mode:<12}  {got_lat:6.2}  {lat:6.1}  {got_iops:7.0}  {iops:7.0}");
        if (got_lat / lat - 1.0).abs() > 0.10 {
            misses.push(format!("{mode} latency {got_lat:.2} us, target {lat} us"));
        }
        if (got_iops / iops - 1.0).abs() > 0.10 {
            misses.push(format!("{mode} IOPS {got_iops:.0}, target {iops}"));
        }
    }
    assert!(misses.is_empty(), "{misses:?}");
    let lat: Vec<f64> = MODES.iter().map(|m| mean_us(by_name(r, m))).collect();
    assert!(lat[0] < lat[1] && lat[1] < lat[2], "{lat:?}");
    let iops: Vec<f64> = MODES.iter().map(|m| by_name(r, m).total_iops()).collect();
    assert!(iops[0] > iops[1] && iops[1] > iops[2], "{iops:?}");
}

/// Table 1, eight threads: (mode, mean latency us, IOPS).
const TABLE1_EIGHT_THREADS: [(&str, f64, f64); 3] = [
    ("classic-poll", 13.6, 571_659.0),
    ("hybrid-poll", 13.9, 546_968.0),
    ("interrupt", 15.0, 511_895.0),
];

/// The study's eight unpinned fio threads, one per hardware thread of the
/// four cores (Linux numbers the siblings n and n + 4).
fn eight_threads() -> Scenario {
    table1(&[
        "job.reader.numjobs=8",
        "job.reader.cpus=[0, 1, 2, 3, 4, 5, 6, 7]",
    ])
}

/// Each figure within 10% and the modes in the study's order. The order
/// comes from the 900P's striped units (crates/scenario's profile): with
/// eight requests in flight some collide at a unit, so the device is not
/// yet the bottleneck and each mode's host path still shows; with pooled
/// units the three modes tied at the device's rate.
#[test]
fn table1_eight_threads_within_ten_percent_and_in_the_studys_order() {
    let r = cint_sim::run(&eight_threads()).expect("runs");
    within_ten_percent_in_the_studys_order(&r, &TABLE1_EIGHT_THREADS);
}

#[test]
fn every_strategy_reports_energy_and_its_parts_add_up() {
    let r = cint_sim::run(&table1(&[])).expect("runs");
    for s in &r.results {
        let total = s.energy_j.expect("energy_j filled");
        let e = s.energy.as_ref().expect("energy figures");
        let secs = r.duration_ns as f64 / 1e9;
        assert!(
            (e.power_w * secs - total).abs() < 1e-9 * total,
            "{}",
            s.strategy
        );
        let cores: f64 = e.cores.iter().map(|c| c.energy_j).sum();
        let parts = e.base_j + e.uncore_j + e.device_j + cores;
        assert!((parts - total).abs() < 1e-9 * total, "{parts} vs {total}");
        // Four physical cores of two hardware threads each.
        assert_eq!(e.cores.len(), 4);
        for c in &e.cores {
            let shares: f64 = c.residency.iter().map(|x| x.share).sum();
            assert!((shares - 1.0).abs() < 1e-9, "core {}: {shares}", c.core);
        }
        let bytes: f64 = s.jobs.iter().map(|j| j.bw_bytes as f64).sum::<f64>() * secs;
        assert!((e.bytes_per_joule / (bytes / total) - 1.0).abs() < 1e-3);
        assert_eq!(e.governor, "menu");
    }
}

/// Linux 5.15's menu keeps a core whose thread waits for a fast read in
/// POLL (the iowait rule), so interrupts pay no exit latency; without the
/// rule the core sleeps in C1 and each interrupt waits its 2 us exit.
#[test]
fn the_iowait_rule_decides_the_interrupt_modes_idle_state_and_latency() {
    let with = cint_sim::run(&table1(&[])).expect("runs");
    let without = cint_sim::run(&table1(&["host.power.governor=menu-no-iowait"])).expect("runs");
    let share = |r: &RunResult, state: &str| {
        by_name(r, "interrupt").energy.as_ref().unwrap().cores[0]
            .residency
            .iter()
            .find(|s| s.state == state)
            .unwrap()
            .share
    };
    assert!(share(&with, "POLL") > 0.5, "{}", share(&with, "POLL"));
    assert!(share(&without, "C1") > 0.5, "{}", share(&without, "C1"));
    let lat = |r: &RunResult| by_name(r, "interrupt").jobs[0].lat_ns.mean;
    let added = (lat(&without) - lat(&with)) / 1000.0;
    assert!((1.5..=2.5).contains(&added), "C1's exit added {added} us");
    // Shallow polling in C0 costs power: the POLL core draws more.
    let power = |r: &RunResult| by_name(r, "interrupt").energy.as_ref().unwrap().power_w;
    assert!(power(&with) > power(&without) + 1.0);
    // Classic polling never idles its core: the governor changes nothing.
    let poll = |r: &RunResult| by_name(r, "classic-poll").jobs[0].lat_ns.mean;
    assert_eq!(poll(&with), poll(&without));
}

/// A core with no thread has no timer armed: the governor looks as far
/// as the next tick (`host.tick`). At the kernel's 4 ms it picks C8 (800
/// us target residency); at 100 us nothing past C1E (20 us) and C3 (100
/// us) fits.
#[test]
fn the_hosts_tick_bounds_an_idle_cores_look_ahead() {
    let deepest = |sets: &[&str]| {
        let r = cint_sim::run(&table1(sets)).expect("runs");
        let e = by_name(&r, "interrupt").energy.as_ref().unwrap();
        let share = |state: &str| {
            e.cores[1]
                .residency
                .iter()
                .find(|s| s.state == state)
                .unwrap()
                .share
        };
        (share("C8"), share("C3"))
    };
    let (c8, _) = deepest(&[]);
    assert!(c8 > 0.99, "{c8}");
    let (c8, c3) = deepest(&["host.tick=100us"]);
    assert_eq!(c8, 0.0);
    assert!(c3 > 0.99, "{c3}");
}

/// Exit latencies are part of the model: the same run with every state's
/// exit latency zero is faster under interrupts when the cores sleep.
#[test]
fn zero_exit_latencies_remove_the_wakeup_delay() {
    let mut sc = table1(&["host.power.governor=menu-no-iowait"]);
    let fast = {
        let mut sc = sc.clone();
        for s in &mut sc.host.power.as_mut().unwrap().idle_states {
            s.exit_latency.0 = 0;
        }
        cint_sim::run(&sc).expect("runs")
    };
    sc.strategies.retain(|s| s.name == "interrupt");
    let slow = cint_sim::run(&sc).expect("runs");
    let lat = |r: &RunResult| by_name(r, "interrupt").jobs[0].lat_ns.mean;
    assert!(lat(&slow) > lat(&fast) + 1_500.0);
}

/// No power data, no energy: the device without it leaves the result as
/// it always was (no `energy` key, `energy_j` null) and the run unchanged.
#[test]
fn a_profile_without_power_data_leaves_the_run_unchanged() {
    let mut sc = table1(&[]);
    sc.device.power = None;
    let off = cint_sim::run(&sc).expect("runs");
    let json = cint_report::to_json(&off).unwrap();
    assert!(!json.contains("\"energy\""), "{json}");
    assert!(json.contains("\"energy_j\": null"));
    assert!(!cint_report::to_table(&off).contains("energy ("));
    // Same as a host without it.
    let mut sc2 = table1(&[]);
    sc2.host.power = None;
    assert_eq!(cint_sim::run(&sc2).expect("runs"), off);
}

#[test]
fn energy_runs_are_deterministic() {
    let sc = table1(&["host.power.governor=teo", "job.reader.numjobs=3"]);
    let a = cint_report::to_json(&cint_sim::run(&sc).unwrap()).unwrap();
    let b = cint_report::to_json(&cint_sim::run(&sc).unwrap()).unwrap();
    assert_eq!(a, b);
}

/// Two polling threads on the two hardware threads of one core run slower
/// than on two cores (each one's poll work shares the core with the other's
/// loop), and exactly as fast once the host has one thread per core.
#[test]
fn smt_siblings_slow_each_other_and_cores_do_not() {
    let lat = |cpus: &str, extra: &[&str]| {
        let mut sets = vec![
            "job.reader.numjobs=2".to_string(),
            format!("job.reader.cpus={cpus}"),
        ];
        sets.extend(extra.iter().map(|s| s.to_string()));
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let r = cint_sim::run(&table1(&sets)).expect("runs");
        let s = by_name(&r, "classic-poll");
        s.jobs[0].lat_ns.mean
    };
    let siblings = lat("[0, 4]", &[]);
    let cores = lat("[0, 1]", &[]);
    assert!(
        siblings > cores * 1.02,
        "siblings {siblings} ns, cores {cores} ns"
    );
    let no_smt = lat("[0, 4]", &["host.smt.threads_per_core=1"]);
    let no_smt_cores = lat("[0, 1]", &["host.smt.threads_per_core=1"]);
    assert!(
        (no_smt / no_smt_cores - 1.0).abs() < 0.01,
        "{no_smt} vs {no_smt_cores}"
    );
}

/// A physical core's power is its more active hardware thread's: a thread
/// spinning on CPU 0 keeps core 0 out of every idle state whatever CPU 4
/// does, and CPU 4 gets no core of its own.
#[test]
fn a_cores_state_is_its_more_active_threads() {
    let r = cint_sim::run(&table1(&[])).expect("runs");
    let e = by_name(&r, "classic-poll").energy.as_ref().expect("energy");
    assert_eq!(e.cores.len(), 4);
    let share = |core: usize, state: &str| {
        e.cores[core]
            .residency
            .iter()
            .find(|x| x.state == state)
            .map_or(0.0, |x| x.share)
    };
    let running = share(0, "busy") + share(0, "spin") + share(0, "irq");
    assert!(running > 0.999, "core 0 runs {running} of the time");
    assert!(share(1, "C8") > 0.99, "core 1: {:?}", e.cores[1].residency);
}

#[test]
fn the_device_is_charged_for_what_it_moved_and_the_workload_for_its_bytes() {
    // Buffered writes that stay in the page cache: the workload moves
    // bytes, the device none, so the device draws its idle power only.
    let sc = table1(&[
        "duration=50ms",
        "job.reader.direct=false",
        "job.reader.rw=write",
        "job.reader.hipri=false",
    ]);
    let idle_w = sc.device.power.as_ref().expect("the 900P's power").idle_w;
    let r = cint_sim::run(&sc).expect("runs");
    let s = by_name(&r, "interrupt");
    assert_eq!(s.interrupts, 0, "the writes stay in the cache");
    let e = s.energy.as_ref().expect("energy");
    let window_s = r.duration_ns as f64 / 1e9;
    assert!(
        (e.device_j - idle_w * window_s).abs() < 1e-9,
        "device {} J against {} J idle",
        e.device_j,
        idle_w * window_s
    );
    let bw: u64 = s.jobs.iter().map(|j| j.bw_bytes).sum();
    assert!(
        bw > 0 && e.bytes_per_joule > 0.0,
        "{bw} {}",
        e.bytes_per_joule
    );
    // An application's operations count as the workload's bytes.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rocksdb-readrandom.toml");
    let sets: Vec<String> = [
        "duration=50ms",
        "host.model=xeon-e3-1230v5",
        "device.model=optane-900p",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let sc = load_file(&path, &sets).expect("loads");
    let r = cint_sim::run(&sc).expect("runs");
    let s = by_name(&r, "default");
    let e = s.energy.as_ref().expect("energy");
    let window_s = r.duration_ns as f64 / 1e9;
    assert!(e.bytes_per_joule > 0.0, "{}", e.bytes_per_joule);
    // Each get reads a block: the device works above idle.
    assert!(e.device_j > 1.01 * idle_w * window_s, "{}", e.device_j);
}
