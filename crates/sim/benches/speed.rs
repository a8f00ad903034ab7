//! Speed and memory of the simulator (not a timed test):
//!
//! `cargo bench -p cint-sim --bench speed`
//!
//! Prints events per wall second and simulated I/Os per wall second for
//! the shipped `async-batch` scenario (one simulated second per strategy,
//! which must take under one wall second each), then runs 60 simulated
//! seconds at more than 500K IOPS and reports the peak resident set
//! (VmHWM), which must stay under 100 MB: latencies go into histograms,
//! so memory follows the requests in flight, not the requests simulated.
//! Last, the energy model's cost: `energy-table1` with and without power
//! data, events per wall second, which may drop by at most 10% with
//! energy on (docs/ENERGY.md): each ratio with its quartiles over pairs
//! of runs, and a verdict only where the quartiles agree.

use std::path::Path;
use std::time::Instant;

use cint_scenario::load_file;

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// Events and simulated I/Os per wall second of one run of `sc`.
fn rates(sc: &cint_scenario::Scenario) -> (f64, f64) {
    let start = Instant::now();
    let (_, stats) = match cint_sim::run_with_stats(sc) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let wall = start.elapsed().as_secs_f64();
    (stats.events as f64 / wall, stats.ios as f64 / wall)
}

/// Pairs of runs per mode: enough that the quartiles of the ratio mean
/// something on a shared machine, where one pair alone spreads by a
/// tenth either way.
const PAIRS: usize = 15;

/// The bound the issue sets: events per second with energy on at least
/// this share of those without.
const BOUND: f64 = 0.9;

/// The lower quartile, median and upper quartile of `v`.
fn quartiles(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: usize| v[(v.len() - 1) * q / 4];
    (at(1), at(2), at(3))
}

/// Whether ratios with quartiles `q` meet [`BOUND`]: only when the
/// quartiles agree is there a verdict; a machine too noisy to tell is
/// reported as such, not rounded to either side.
fn verdict((low, _, high): (f64, f64, f64)) -> &'static str {
    if low >= BOUND {
        "meets a drop of at most 10%"
    } else if high < BOUND {
        "MISSES a drop of at most 10%"
    } else {
        "INCONCLUSIVE: the quartiles straddle a drop of 10%; rerun on a quieter machine"
    }
}

/// The energy model's cost in simulator speed: each mode of
/// `energy-table1` at `threads` threads, one per core (at four, cores go
/// idle and wake once per I/O each) with its power data and without, in
/// [`PAIRS`] pairs of runs back to back, so that a noisy machine slows
/// both runs of a pair alike; the quartiles of the pairs' ratios of
/// events and of simulated I/Os per wall second. The two differ where
/// the model adds events of its own (an exit latency's end): the I/O
/// rate is the speed a user sees.
fn energy_cost(dir: &Path, threads: u32) {
    let cpus: Vec<String> = (0..threads).map(|c| c.to_string()).collect();
    let sets = [
        "duration=300ms".to_string(),
        "warmup=0ms".to_string(),
        format!("job.reader.numjobs={threads}"),
        format!("job.reader.cpus=[{}]", cpus.join(",")),
    ];
    let sc = match load_file(&dir.join("energy-table1.toml"), &sets) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!(
        "energy-table1, {threads} thread(s), per wall second with energy on / off \
         ({PAIRS} pairs; ratios as lower quartile / median / upper quartile):"
    );
    // The strategy whose median ratio is the lowest, by events and by I/Os.
    let mut worst_events = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let mut worst_ios = worst_events;
    for strategy in &sc.strategies {
        let mut on = sc.clone();
        on.strategies = vec![strategy.clone()];
        let mut off = on.clone();
        off.host.power = None;
        off.device.power = None;
        let (mut events, mut ios, mut rate_on, mut rate_off) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for pair in 0..PAIRS {
            // Alternate which runs first, so that neither always runs
            // on caches the other warmed.
            let (a, b) = if pair % 2 == 0 {
                let a = rates(&on);
                (a, rates(&off))
            } else {
                let b = rates(&off);
                (rates(&on), b)
            };
            events.push(a.0 / b.0);
            ios.push(a.1 / b.1);
            rate_on.push(a.0);
            rate_off.push(b.0);
        }
        let (events, ios) = (quartiles(&mut events), quartiles(&mut ios));
        if events.1 < worst_events.1 {
            worst_events = events;
        }
        if ios.1 < worst_ios.1 {
            worst_ios = ios;
        }
        println!(
            "  {:<12} on {:>6.1} M events/s  off {:>6.1} M events/s  on/off: events {:.3} / {:.3} / {:.3}, simulated I/Os {:.3} / {:.3} / {:.3}",
            strategy.name,
            quartiles(&mut rate_on).1 / 1e6,
            quartiles(&mut rate_off).1 / 1e6,
            events.0,
            events.1,
            events.2,
            ios.0,
            ios.1,
            ios.2,
        );
    }
    println!(
        "  worst median on/off: events per second {:.3} ({}), simulated I/Os per second {:.3} ({})",
        worst_events.1,
        verdict(worst_events),
        worst_ios.1,
        verdict(worst_ios)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is ignored.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let async_batch = dir.join("async-batch.toml");
    let sc = match load_file(&async_batch, &["duration=1s".into(), "warmup=0ms".into()]) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };

    println!(
        "async-batch on {}, one simulated second per strategy:",
        sc.device.model
    );
    let mut worst = 0.0f64;
    for strategy in &sc.strategies {
        let mut one = sc.clone();
        one.strategies = vec![strategy.clone()];
        let start = Instant::now();
        let (result, stats) = match cint_sim::run_with_stats(&one) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let wall = start.elapsed().as_secs_f64();
        worst = worst.max(wall);
        println!(
            "  {:<12} {:>6.3} s wall  {:>6.1} M events/s  {:>6.2} M simulated IO/s of wall time  ({:.0} IOPS simulated)",
            strategy.name,
            wall,
            stats.events as f64 / wall / 1e6,
            stats.ios as f64 / wall / 1e6,
            result.results[0].total_iops(),
        );
    }
    println!(
        "  slowest strategy: {worst:.3} wall s per simulated s ({})",
        if worst < 1.0 {
            "meets < 1 s"
        } else {
            "MISSES < 1 s"
        }
    );

    // 60 simulated seconds at > 500K IOPS: two cores, one libaio job each.
    let long = r#"
name = "memory"
duration = "60s"
[device]
model = "optane-p4800x"
[host]
model = "xeon-e5-2660v4"
cores = 2
[[strategy]]
name = "cinterrupts"
kind = "cinterrupts"
delta = "6us"
thr = 32
[[job]]
name = "a"
engine = "libaio"
rw = "randread"
bs = "4k"
iodepth = 128
batch = 16
batch_complete_min = 16
cpu = 0
[[job]]
name = "b"
engine = "libaio"
rw = "randread"
bs = "4k"
iodepth = 128
batch = 16
batch_complete_min = 16
cpu = 1
"#;
    let sc = match cint_scenario::load_str(long, "<bench>", &[]) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let (result, stats) = match cint_sim::run_with_stats(&sc) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let wall = start.elapsed().as_secs_f64();
    let iops = result.results[0].total_iops();
    let hwm = vm_hwm_kib().unwrap_or(0);
    println!(
        "60 s simulated at {:.0} IOPS ({} I/Os): {:.1} s wall, {:.1} M events/s, peak RSS {:.1} MB ({})",
        iops,
        stats.ios,
        wall,
        stats.events as f64 / wall / 1e6,
        hwm as f64 / 1024.0,
        if hwm < 100 * 1024 { "meets < 100 MB" } else { "MISSES < 100 MB" }
    );

    for threads in [1, 4] {
        energy_cost(&dir, threads);
    }
}
