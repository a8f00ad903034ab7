//! Our back end's counters against what a front end sees (issue #12 item
//! 4, the host half of test (b)): for each policy, the interrupts the
//! harness counted on the call eventfd equal the `irqs_sent` the back end
//! writes to its stats JSON, every request is counted once, and the policy
//! wanted at least as many interrupts as were sent.

mod common;

use std::time::Duration;

use cint_vhost_harness::backend::{self, BackendProcess, Image};
use cint_vhost_harness::load::{self, LoadConfig, Op, Wait};

const STRATEGIES: [&str; 5] = [
    "none",
    "adaptive,delta=6us,thr=32",
    "cinterrupts,delta=6us,thr=32",
    "nvme,thr=32,time=100us",
    "vic",
];

#[test]
fn interrupts_the_harness_counts_are_the_ones_the_back_end_reports_sent() {
    let Some(cint) = common::cint_with_vhost() else {
        return;
    };
    let dir = common::scratch("counts");
    for (i, strategy) in STRATEGIES.iter().enumerate() {
        let sock = dir.join(format!("ours-{i}.sock"));
        let stats = dir.join(format!("ours-{i}.json"));
        let mut cmd = backend::cint_command(
            &cint,
            &sock,
            &Image::Null(64 << 20),
            strategy,
            1,
            common::QUEUE_SIZE,
        );
        cmd.arg("--stats-json").arg(&stats);
        let mut process = BackendProcess::spawn(strategy, cmd, &sock, Duration::from_secs(10))
            .expect("start cint vhost");
        let mut session = common::connect(&sock);
        let mut harness_irqs = 0;
        let mut requests = 0;
        for (op, wait, batch) in [(Op::Read, Wait::Irq, 8), (Op::Write, Wait::Poll, 1)] {
            let r = load::run(
                &mut session,
                &LoadConfig {
                    op,
                    block_size: 4096,
                    depth: 32,
                    batch,
                    requests: 10_000,
                    wait,
                    ioprio: 0,
                    stall_timeout: Duration::from_secs(10),
                },
            )
            .unwrap_or_else(|e| panic!("{strategy}: {e}"));
            assert_eq!((r.requests, r.failed), (10_000, 0), "{strategy}");
            harness_irqs += r.interrupts;
            requests += r.requests;
        }
        session.close().expect("close session");
        let status = process
            .wait_exit(Duration::from_secs(10))
            .expect("cint vhost exits when its front end leaves");
        assert!(status.success(), "{strategy}: exited with {status}");
        let text = std::fs::read_to_string(&stats).expect("stats JSON written on exit");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("stats JSON parses");
        let totals = &doc["totals"];
        let field = |k: &str| {
            totals[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{strategy}: totals.{k} missing in {text}"))
        };
        assert_eq!(field("requests"), requests, "{strategy}: requests");
        assert_eq!(field("irqs_sent"), harness_irqs, "{strategy}: irqs_sent");
        assert!(harness_irqs >= 1, "{strategy}: no interrupt at all");
        assert!(
            field("irqs_wanted") >= field("irqs_sent"),
            "{strategy}: sent more than wanted: {text}"
        );
        assert_eq!(
            field("irqs_wanted"),
            field("irqs_sent") + field("irqs_suppressed"),
            "{strategy}: wanted = sent + suppressed"
        );
        assert_eq!(field("read_bytes"), 10_000 * 4096, "{strategy}: read_bytes");
        assert_eq!(
            field("write_bytes"),
            10_000 * 4096,
            "{strategy}: write_bytes"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
