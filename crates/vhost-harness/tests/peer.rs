//! The harness against a real peer, qemu-storage-daemon: proves the front
//! end itself (rings, EVENT_IDX, config space, data path) before it judges
//! our back end. Well-formed requests only: the peer is not under test.

mod common;

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use cint_vhost_harness::backend::{self, BackendProcess, Image};
use cint_vhost_harness::chains::{ChainSpec, Fault};
use cint_vhost_harness::load::{self, LoadConfig, Op, Wait};

fn good_spec() -> impl Strategy<Value = ChainSpec> {
    (any::<bool>(), 1u8..=8, 0u64..120, any::<u8>(), 1u8..=4).prop_map(
        |(write, sectors, off, seed, pieces)| ChainSpec {
            write,
            sectors,
            sector_offset: off,
            seed,
            pieces,
            ioprio: 0,
            fault: Fault::None,
        },
    )
}

#[test]
fn peer_round_trips_random_batches_of_reads_and_writes() {
    let Some(qsd) = common::qsd() else { return };
    let scratch = common::scratch("peer-rt");
    let dir = scratch.path();
    let image = dir.join("disk.img");
    let shadow = common::make_image(&image);
    let sock = dir.join("peer.sock");
    let cmd = backend::qsd_command(&qsd, &sock, &Image::File(image.clone()), 1, true);
    let process = BackendProcess::spawn("qemu-storage-daemon", cmd, &sock, Duration::from_secs(10))
        .expect("start qemu-storage-daemon");
    let rig = std::cell::RefCell::new(common::Rig::new(process, shadow));
    let mut runner = TestRunner::new(Config {
        cases: 32,
        failure_persistence: None,
        // A back end's state cannot be rolled back between cases, so
        // shrinking would replay on a different device: report the first
        // failing batch as it was.
        max_shrink_iters: 0,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(good_spec(), 1..=16), |specs| {
            rig.borrow_mut().batch(&specs).map_err(TestCaseError::fail)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rig = rig.into_inner();
    assert!(rig.process.alive(), "qemu-storage-daemon died");
    // The file holds what the shadow says once the peer has flushed it.
    let session = rig.session;
    session.close().expect("close session");
    rig.process
        .stop(Duration::from_secs(10))
        .expect("stop peer");
    let on_disk = std::fs::read(&image).expect("read image");
    assert!(
        on_disk == rig.shadow,
        "image file differs from the shadow copy"
    );
}

#[test]
fn load_on_the_peer_completes_every_request_and_counts_interrupts() {
    let Some(qsd) = common::qsd() else { return };
    let scratch = common::scratch("peer-load");
    let dir = scratch.path();
    let sock = dir.join("peer.sock");
    let cmd = backend::qsd_command(&qsd, &sock, &Image::Null(1 << 30), 1, true);
    let mut process =
        BackendProcess::spawn("qemu-storage-daemon", cmd, &sock, Duration::from_secs(10))
            .expect("start qemu-storage-daemon");
    let mut session = common::connect(&sock);
    assert!(session.event_idx(), "the peer offers EVENT_IDX");
    assert_eq!(session.config.capacity, (1u64 << 30) / 512);
    for (op, wait, batch) in [(Op::Read, Wait::Irq, 8), (Op::Write, Wait::Poll, 1)] {
        let cfg = LoadConfig {
            op,
            block_size: 4096,
            depth: 32,
            batch,
            requests: 20_000,
            wait,
            ioprio: 0,
            stall_timeout: Duration::from_secs(10),
        };
        let r = load::run(&mut session, &cfg).expect("load run");
        assert_eq!(r.requests, 20_000);
        assert_eq!(r.failed, 0);
        // The peer interrupts (EVENT_IDX permitting) after completions;
        // never more often than it completes.
        assert!(r.interrupts >= 1 && r.interrupts <= r.requests, "{r:?}");
        assert!(r.kicks >= 1 && r.kicks <= r.requests, "{r:?}");
    }
    session.close().expect("close");
    assert!(process.alive());
}
