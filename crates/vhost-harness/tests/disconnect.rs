//! A front end that leaves mid-I/O (issue #12 item 7): the back end exits 0
//! on its own, or with `--reconnect` serves the next front end, and holds
//! no more file descriptors after many such departures than after one.

mod common;

use std::time::Duration;

use cint_vhost_harness::backend::{self, BackendProcess, Image};
use cint_vhost_harness::chains::{self, ChainSpec, Fault, Slot};
use cint_vhost_harness::device::Session;
use cint_vhost_harness::load::{self, LoadConfig, Op, Wait};

/// Publishes a batch of correct reads and writes, kicks, and returns
/// without waiting for any of them.
fn submit_and_leave(session: Session) {
    let mem = session.memory.clone();
    let slots = Slot::allocate(&mem, common::SLOTS).expect("slots");
    let capacity = session.config.capacity;
    let mut session = session;
    let q = &mut session.queues[0];
    for (k, slot) in slots.iter().enumerate() {
        let spec = ChainSpec {
            write: k % 2 == 0,
            sectors: 8,
            sector_offset: 0,
            seed: k as u8,
            pieces: 1,
            ioprio: 0,
            fault: Fault::None,
        };
        let first = k as u64 * common::REGION_SECTORS;
        let chain = chains::build(&mem, slot, &spec, first, capacity, common::QUEUE_SIZE);
        for (i, d) in &chain.descs {
            q.ring.write_desc(*i, *d);
        }
        q.ring.push_avail(slot.head()).expect("push");
    }
    if q.ring.publish() {
        q.kick().expect("kick");
    }
    // Dropping the session closes the socket with all of it in flight.
    drop(session);
}

/// True once a thread of process `pid` is blocked accepting a front end
/// (what `cint vhost --reconnect` does between connections, with the last
/// connection torn down and the next one's set up), within `limit`.
fn wait_accepting(pid: u32, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    let accepting = || {
        std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
            tasks.flatten().any(|task| {
                std::fs::read_to_string(task.path().join("syscall")).is_ok_and(|text| {
                    text.split_whitespace()
                        .next()
                        .and_then(|n| n.parse::<libc::c_long>().ok())
                        .is_some_and(|n| n == libc::SYS_accept || n == libc::SYS_accept4)
                })
            })
        })
    };
    while !accepting() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn small_load(session: &mut Session) {
    let r = load::run(
        session,
        &LoadConfig {
            op: Op::Read,
            block_size: 4096,
            depth: 16,
            batch: 4,
            requests: 2_000,
            wait: Wait::Irq,
            ioprio: 0,
            stall_timeout: Duration::from_secs(10),
        },
    )
    .expect("load");
    assert_eq!((r.requests, r.failed), (2_000, 0));
}

#[test]
fn leaving_mid_io_makes_the_back_end_exit_0() {
    let Some(cint) = common::cint_with_vhost() else {
        return;
    };
    let scratch = common::scratch("leave");
    let dir = scratch.path();
    let image = dir.join("disk.img");
    common::make_image(&image);
    let sock = dir.join("ours.sock");
    let cmd = backend::cint_command(
        &cint,
        &sock,
        &Image::File(image),
        "cinterrupts,delta=50us,thr=32",
        1,
        common::QUEUE_SIZE,
    );
    let mut process =
        BackendProcess::spawn("cint vhost", cmd, &sock, Duration::from_secs(10)).expect("start");
    submit_and_leave(common::connect(&sock));
    let status = process
        .wait_exit(Duration::from_secs(10))
        .expect("cint vhost exits when its front end leaves");
    assert!(status.success(), "exited with {status}");
}

#[test]
fn with_reconnect_each_front_end_that_leaves_mid_io_is_followed_by_the_next() {
    let Some(cint) = common::cint_with_vhost() else {
        return;
    };
    let scratch = common::scratch("reconnect");
    let dir = scratch.path();
    let image = dir.join("disk.img");
    common::make_image(&image);
    let sock = dir.join("ours.sock");
    let mut cmd = backend::cint_command(
        &cint,
        &sock,
        &Image::File(image),
        "cinterrupts,delta=50us,thr=32",
        1,
        common::QUEUE_SIZE,
    );
    cmd.arg("--reconnect");
    let mut process =
        BackendProcess::spawn("cint vhost", cmd, &sock, Duration::from_secs(10)).expect("start");
    let pid = process.pid();
    let mut settled = 0;
    for round in 0..6 {
        let mut session = common::connect(&sock);
        small_load(&mut session);
        submit_and_leave(session);
        // The back end notices the departure asynchronously; its
        // descriptors are counted once it is back to waiting for the next
        // front end, the same point of its loop each round (a count taken
        // after a fixed sleep could fall mid-teardown, between the old
        // connection's descriptors closing and the next one's opening).
        assert!(
            wait_accepting(pid, Duration::from_secs(30)),
            "the back end was not waiting for a front end within 30 s after front end {round} left"
        );
        // Even there, the departed guest's memory descriptor is sometimes
        // still open for a moment (seen in 2 of 8 runs, closed within the
        // old 3 s bound): the baseline is the lowest count over half a
        // second, and a later round passes once its count comes down to it.
        let deadline = std::time::Instant::now()
            + if round == 0 {
                Duration::from_millis(500)
            } else {
                Duration::from_secs(10)
            };
        let mut now = open_fds(pid);
        if round == 0 {
            while std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
                now = now.min(open_fds(pid));
            }
            settled = now;
            continue;
        }
        while now > settled && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            now = open_fds(pid);
        }
        assert!(
            process.alive(),
            "the back end died after front end {round} left"
        );
        assert!(
            now <= settled,
            "open file descriptors grew from {settled} to {now} after {} more front ends left",
            round
        );
    }
    let mut session = common::connect(&sock);
    small_load(&mut session);
    session.close().expect("close");
    let status = process.stop(Duration::from_secs(10)).expect("SIGTERM");
    assert!(status.success(), "exited with {status} on SIGTERM");
}
