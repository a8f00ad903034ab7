//! Issue #12's performance targets, measured in one run: our back end
//! (`cint vhost` on a null image, each strategy) and the peer
//! (qemu-storage-daemon's null-co export), loaded alternately at depth
//! 128, and reported as ratios: ours over the peer in requests/s per
//! back-end core, ours over 1 M requests/s per back-end core, and each
//! policy's back-end CPU per request over that of `none`, and each
//! policy's share of the worker's CPU (as the back end measures it) over
//! the 2% bound.
//!
//! `cargo bench -p cint-vhost-harness --bench vs_peer` (build `cint` first:
//! `cargo build --release -p cint`). `vhost-load compare` runs the same
//! with every knob exposed.

use std::time::Duration;

use cint_vhost_harness::backend;
use cint_vhost_harness::compare::{self, CompareConfig};
use cint_vhost_harness::device::SessionConfig;
use cint_vhost_harness::load::{LoadConfig, Op, Wait};

const TARGET_PER_CORE: f64 = 1_000_000.0;

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not meaningful here.
    let Some(qsd) = backend::find_qsd() else {
        eprintln!("vs_peer: qemu-storage-daemon is missing (bash .ci/deps/qemu-storage-daemon.sh)");
        std::process::exit(1);
    };
    let cint = backend::find_cint().filter(|c| backend::has_vhost_subcommand(c));
    if cint.is_none() {
        eprintln!(
            "vs_peer: no cint binary with the vhost subcommand (cargo build --release -p cint): measuring the peer only"
        );
    }
    let load = LoadConfig {
        op: Op::Read,
        block_size: 4096,
        depth: 128,
        batch: 16,
        requests: 1_000_000,
        wait: Wait::Irq,
        ioprio: 0,
        stall_timeout: Duration::from_secs(10),
    };
    let queue_size = 512;
    let cfg = CompareConfig {
        qsd,
        cint,
        strategies: [
            "none",
            "adaptive,delta=6us,thr=32",
            "cinterrupts,delta=6us,thr=32",
            "nvme,thr=32,time=100us",
            "vic",
        ]
        .map(String::from)
        .to_vec(),
        also: Vec::new(),
        rounds: 3,
        image_bytes: 1 << 30,
        session: SessionConfig {
            queues: 1,
            queue_size,
            event_idx: true,
            memory_bytes: load.memory_per_queue(queue_size),
        },
        load,
    };
    let report = match compare::run(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vs_peer: {e}");
            std::process::exit(1);
        }
    };
    print!("{}", report.render_text());
    let none = report
        .targets
        .iter()
        .find(|t| t.strategy.as_deref() == Some("none"));
    if let Some(none) = none {
        println!(
            "ratio ours(none) / 1M requests/s per back-end core: {:.2}",
            none.median.requests_per_second_per_backend_core / TARGET_PER_CORE
        );
    }
    if let Some(r) = report.ours_over_peer_per_core {
        println!("ratio ours(none) / peer, requests/s per back-end core: {r:.2}");
    }
    for p in &report.policies {
        println!(
            "ratio {} / none, back-end CPU per request: {:.3}",
            p.strategy,
            1.0 + p.extra_cpu_share
        );
    }
    let mut missed = false;
    for t in &report.targets {
        let (Some(strategy), Some(share)) = (&t.strategy, t.backend_policy_cpu_share) else {
            continue;
        };
        let ratio = share / compare::POLICY_SHARE_TARGET;
        missed |= ratio >= 1.0;
        println!(
            "ratio {strategy} policy share of worker CPU / 2%: {ratio:.2} ({:.2}%)",
            share * 100.0
        );
    }
    if missed {
        println!("vs_peer: a policy's share of back-end CPU is at or over 2%");
    }
}
