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
}
