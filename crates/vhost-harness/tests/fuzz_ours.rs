//! The guest is untrusted (issue #12 item 7): random batches mixing correct
//! requests with malformed descriptor chains, sectors past the end, unknown
//! types and (on a read-only disk) writes, against `cint vhost`. Every
//! correct request must still complete with its data intact, every bad one
//! must get an error status (or, when no status byte is addressable, come
//! back without one), nothing may complete twice or never, and the back end
//! must still be serving at the end and exit 0 when told to stop.

mod common;

use std::process::Stdio;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use cint_vhost_harness::backend::{self, BackendProcess, Image};
use cint_vhost_harness::blk;
use cint_vhost_harness::chains::{ChainSpec, Fault};
use cint_vhost_harness::exchange::{self, RawChain};
use cint_vhost_harness::load::{self, LoadConfig, Op, Wait};
use cint_vhost_harness::ring::{Desc, DESC_F_NEXT, DESC_F_WRITE};

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        6 => Just(Fault::None),
        1 => any::<u8>().prop_map(Fault::ShortHeader),
        1 => Just(Fault::WritableHeader),
        1 => Just(Fault::DataWrongDirection),
        1 => any::<u16>().prop_map(Fault::DataNotSectorMultiple),
        1 => (0u64..1 << 40).prop_map(Fault::HeaderOutsideMemory),
        1 => (0u64..1 << 40).prop_map(Fault::DataOutsideMemory),
        1 => Just(Fault::DataStraddlesEnd),
        1 => Just(Fault::DataAddressWraps),
        1 => (0u64..1 << 40).prop_map(Fault::StatusOutsideMemory),
        1 => Just(Fault::ReadableStatus),
        1 => Just(Fault::EmptyStatus),
        1 => Just(Fault::NoStatus),
        1 => Just(Fault::Loop),
        1 => any::<u16>().prop_map(Fault::NextOutOfRange),
        1 => (0u64..1 << 20).prop_map(Fault::SectorsPastEnd),
        1 => Just(Fault::HugeSector),
        1 => (9u32..0x7fff_ffff).prop_filter("known types", |t| ![11, 13].contains(t)).prop_map(Fault::UnknownType),
    ]
}

fn spec() -> impl Strategy<Value = ChainSpec> {
    // ioprio: the class in bits 13-15, the 6.x hint in 3-12, the level in
    // 0-2; any value at all must be harmless.
    let ioprio = prop_oneof![Just(0u32), 0u32..0x1_0000, any::<u32>()];
    (
        (
            any::<bool>(),
            1u8..=8,
            0u64..120,
            any::<u8>(),
            1u8..=4,
            fault(),
        ),
        ioprio,
    )
        .prop_map(
            |((write, sectors, sector_offset, seed, pieces, fault), ioprio)| ChainSpec {
                write,
                sectors,
                sector_offset,
                seed,
                pieces,
                ioprio,
                fault,
            },
        )
}

fn fuzz(test: &str, strategy: &str, read_only: bool, cases: u32) {
    let Some(cint) = common::cint_with_vhost() else {
        return;
    };
    let scratch = common::scratch(test);
    let dir = scratch.path();
    let image = dir.join("disk.img");
    let shadow = common::make_image(&image);
    let sock = dir.join("ours.sock");
    let log = dir.join("backend.log");
    let mut cmd = backend::cint_command(
        &cint,
        &sock,
        &Image::File(image.clone()),
        strategy,
        1,
        common::QUEUE_SIZE,
    );
    if read_only {
        cmd.arg("--read-only");
    }
    // One line per bad request is expected: keep them out of the test output.
    cmd.stderr(Stdio::from(std::fs::File::create(&log).expect("log file")));
    let process = BackendProcess::spawn("cint vhost", cmd, &sock, Duration::from_secs(10))
        .expect("start cint vhost");
    let rig = std::cell::RefCell::new(common::Rig::new(process, shadow));
    assert_eq!(
        rig.borrow().read_only,
        read_only,
        "VIRTIO_BLK_F_RO as configured"
    );
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        // A back end's state cannot be rolled back between cases, so
        // shrinking would replay on a different device: report the first
        // failing batch as it was.
        max_shrink_iters: 0,
        ..Config::default()
    });
    let outcome = runner.run(&prop::collection::vec(spec(), 1..=16), |specs| {
        let mut rig = rig.borrow_mut();
        if !rig.process.alive() {
            return Err(TestCaseError::fail("the back end died"));
        }
        rig.batch(&specs).map_err(TestCaseError::fail)
    });
    let mut rig = rig.into_inner();
    if let Err(e) = outcome {
        let tail = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(10).collect();
        panic!(
            "{e}\nback end log, last lines (newest first):\n{}",
            tail.join("\n")
        );
    }
    assert!(rig.process.alive(), "the back end died");
    eprintln!(
        "{test}: {} requests completed, {} of them malformed ({} returned without a status byte)",
        rig.completed, rig.malformed, rig.returned_without_status
    );
    assert!(rig.malformed > 0, "the fuzzer wrote no malformed chain");
    // Still serving at full speed after all that.
    let r = load::run(
        &mut rig.session,
        &LoadConfig {
            op: Op::Read,
            block_size: 4096,
            depth: 32,
            batch: 4,
            requests: 5_000,
            wait: Wait::Irq,
            ioprio: 0,
            stall_timeout: Duration::from_secs(10),
        },
    )
    .expect("load after fuzzing");
    assert_eq!((r.requests, r.failed), (5_000, 0));
    let session = rig.session;
    session.close().expect("close session");
    let status = rig
        .process
        .wait_exit(Duration::from_secs(10))
        .expect("cint vhost exits when its front end leaves");
    assert!(status.success(), "cint vhost exited with {status}");
    let on_disk = std::fs::read(&image).expect("read image");
    assert!(
        on_disk == rig.shadow,
        "image file differs from the shadow copy"
    );
}

#[test]
fn malformed_chains_fail_with_a_status_and_the_back_end_keeps_serving() {
    fuzz("fuzz-rw", "none", false, 2000);
}

#[test]
fn writes_to_a_read_only_disk_fail_and_leave_it_unchanged() {
    fuzz("fuzz-ro", "none", true, 500);
}

#[test]
fn malformed_chains_under_a_coalescing_policy_still_complete_once() {
    // Held completions and the policy's timer meet error completions.
    fuzz("fuzz-cint", "cinterrupts,delta=50us,thr=8", false, 500);
}

#[test]
fn a_chain_through_the_whole_descriptor_table_is_served_or_refused_cleanly() {
    let Some(cint) = common::cint_with_vhost() else {
        return;
    };
    let scratch = common::scratch("long-chain");
    let dir = scratch.path();
    let image = dir.join("disk.img");
    let contents = common::make_image(&image);
    let sock = dir.join("ours.sock");
    let cmd = backend::cint_command(
        &cint,
        &sock,
        &Image::File(image),
        "none",
        1,
        common::QUEUE_SIZE,
    );
    let mut process = BackendProcess::spawn("cint vhost", cmd, &sock, Duration::from_secs(10))
        .expect("start cint vhost");
    let mut session = common::connect(&sock);
    let mem = session.memory.clone();
    // Header, one 512-byte data descriptor per remaining entry but one, status.
    let segments = common::QUEUE_SIZE - 2;
    let bytes = u64::from(segments) * 512;
    let header = mem.alloc(16, 16).expect("header");
    let data = mem.alloc(bytes, 4096).expect("data");
    let status = mem.alloc(1, 1).expect("status");
    mem.write(header, &blk::header(blk::T_IN, 0, 0));
    mem.fill(data, bytes, 0xee);
    mem.write_u8(status, blk::S_UNTOUCHED);
    let mut descs = vec![(
        0,
        Desc {
            addr: header,
            len: 16,
            flags: DESC_F_NEXT,
            next: 1,
        },
    )];
    for i in 0..segments {
        descs.push((
            i + 1,
            Desc {
                addr: data + u64::from(i) * 512,
                len: 512,
                flags: DESC_F_NEXT | DESC_F_WRITE,
                next: i + 2,
            },
        ));
    }
    descs.push((
        segments + 1,
        Desc {
            addr: status,
            len: 1,
            flags: DESC_F_WRITE,
            next: 0,
        },
    ));
    let q = &mut session.queues[0];
    let done = exchange::submit_and_wait(q, &[RawChain { descs }], Duration::from_secs(10))
        .expect("the long chain completes once");
    assert_eq!(done.len(), 1);
    match mem.read_u8(status) {
        // Within what the device accepts: the data must be right.
        blk::S_OK => {
            let mut got = vec![0u8; bytes as usize];
            mem.read(data, &mut got);
            assert!(
                got == contents[..bytes as usize],
                "long chain read wrong data"
            );
            eprintln!("a {segments}-segment read was served");
        }
        // More segments than seg_max: refused, with a status.
        blk::S_IOERR => eprintln!("a {segments}-segment read was refused with IOERR"),
        other => panic!("a {segments}-segment read got status {other}"),
    }
    // And the device still serves ordinary requests.
    let r = load::run(
        &mut session,
        &LoadConfig {
            op: Op::Read,
            block_size: 4096,
            depth: 16,
            batch: 4,
            requests: 1_000,
            wait: Wait::Irq,
            ioprio: 0,
            stall_timeout: Duration::from_secs(10),
        },
    )
    .expect("load after the long chain");
    assert_eq!((r.requests, r.failed), (1_000, 0));
    session.close().expect("close");
    let status = process
        .wait_exit(Duration::from_secs(10))
        .expect("cint vhost exits when its front end leaves");
    assert!(status.success());
}
