//! A front end that dies mid-I/O leaks nothing (issue #12 item 7): QEMU,
//! with a guest keeping many O_DIRECT writes in flight on a file-backed
//! `cint vhost` disk, is SIGKILLed.
//! - Without `--reconnect` the back end exits 0 by itself, writes its stats
//!   and removes its socket.
//! - With `--reconnect` it waits for the next front end; a second guest on
//!   the same socket and image runs the integrity workload, and once it is
//!   gone the back end holds the descriptors and threads it held after the
//!   kill, and exits 0 on SIGTERM.
//!
//! Outside CI the tests skip, loudly, when QEMU, the extracted kernel,
//! busybox or the `cint` binary is missing; with `CI` set a missing piece
//! is a failure.

use cint_vhost_guest_tests::backend::{
    build_cint_under_cargo, cint_binary, Backend, BackendKind, BackendStats,
};
use cint_vhost_guest_tests::guest_output;
use cint_vhost_guest_tests::qemu::{BootDisk, Guest};
use cint_vhost_guest_tests::run::{self, DiskSpec, Prerequisites, RunConfig, FIRST_SLOT};
use cint_vhost_guest_tests::skip::prerequisites;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The back end waits up to 30 s for backing I/O still in flight when the
/// front end leaves; past this it has hung.
const BACKEND_EXIT_LIMIT: Duration = Duration::from_secs(45);

/// Requests the guest's driver must have in flight before QEMU is killed.
const IN_FLIGHT_AT_KILL: u64 = 8;

/// What the back end logs once a front end is gone and cleaned up after.
const DISCONNECTED: &str = "cint vhost: front end disconnected";
const WAITING: &str = "cint vhost: waiting for the next front end";

fn prerequisites_for_cint() -> Option<Prerequisites> {
    prerequisites(
        build_cint_under_cargo()
            .and_then(|()| cint_binary())
            .map(BackendKind::Cint),
    )
}

/// One file-backed disk and where its back end keeps its files.
struct Disk {
    socket: PathBuf,
    image: PathBuf,
    stats: PathBuf,
    log: PathBuf,
    queues: u16,
}

impl Disk {
    fn new(work: &Path, cfg: &RunConfig) -> Disk {
        let image = work.join("disk.img");
        run::create_image(&image, cfg.image_mib).expect("image");
        Disk {
            socket: work.join("disk.sock"),
            image,
            stats: work.join("disk.stats.json"),
            log: work.join("disk.backend.log"),
            queues: cfg.disks[0].queues,
        }
    }

    fn start_backend(&self, pre: &Prerequisites, cfg: &RunConfig, reconnect: bool) -> Backend {
        Backend::start_with(
            &pre.backend,
            &self.socket,
            &self.image,
            self.queues,
            &cfg.disks[0].strategy,
            None,
            &self.stats,
            &self.log,
            reconnect,
        )
        .unwrap_or_else(|e| panic!("starting the back end: {e}"))
    }

    /// The disk as QEMU attaches it, at the first slot.
    fn boot_disk(&self) -> BootDisk {
        BootDisk {
            socket: self.socket.clone(),
            slot: FIRST_SLOT,
            queues: self.queues,
        }
    }

    fn stats(&self) -> BackendStats {
        let text = std::fs::read_to_string(&self.stats)
            .unwrap_or_else(|e| panic!("the back end wrote no stats: {e}"));
        BackendStats::parse(&text).unwrap_or_else(|e| panic!("{e}"))
    }
}

fn flood_config() -> RunConfig {
    RunConfig {
        disks: vec![DiskSpec::single(format!(
            "cinterrupts,delta={}us,thr=32",
            run::DELTA_US
        ))],
        // Longer than the test waits: the guest is killed long before.
        flood_seconds: Some(120),
        timeout: Duration::from_secs(150),
        ..RunConfig::default()
    }
}

/// Boots a guest flooding the disk, waits until its driver has many
/// requests in flight, and SIGKILLs QEMU. Returns the console line seen
/// just before the kill.
fn flood_and_kill(pre: &Prerequisites, initrd: &Path, disk: &Disk, work: &Path) -> String {
    let cfg = flood_config();
    let boot = run::boot(
        &cfg,
        pre,
        initrd.to_path_buf(),
        vec![disk.boot_disk()],
        Vec::new(),
    );
    let mut guest = Guest::spawn(&boot, &work.join("flood.console.log")).expect("starting QEMU");
    let line = guest
        .wait_for_line(Duration::from_secs(90), |l| {
            l.contains("phase=flood ")
                && l.split_whitespace()
                    .find_map(|f| f.strip_prefix("in_flight="))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n >= IN_FLIGHT_AT_KILL)
        })
        .unwrap_or_else(|e| {
            panic!("the guest never had {IN_FLIGHT_AT_KILL} requests in flight: {e}")
        });
    guest.kill().expect("killing QEMU");
    line
}

#[test]
fn killing_qemu_mid_io_ends_the_back_end_cleanly() {
    let Some(pre) = prerequisites_for_cint() else {
        return;
    };
    let work = tempfile::tempdir().expect("temporary folder");
    let cfg = flood_config();
    let initrd = run::build_initrd(&pre, work.path()).expect("initramfs");
    let disk = Disk::new(work.path(), &cfg);
    let mut backend = disk.start_backend(&pre, &cfg, false);

    let at_kill = flood_and_kill(&pre, &initrd, &disk, work.path());
    eprintln!("killed QEMU after: {at_kill}");

    let status = backend
        .wait_exit(BACKEND_EXIT_LIMIT)
        .expect("waiting for the back end")
        .unwrap_or_else(|| {
            panic!(
                "the back end still runs {BACKEND_EXIT_LIMIT:?} after QEMU was killed:\n{}",
                backend.log_text()
            )
        });
    let log = backend.log_text();
    assert!(
        status.success(),
        "the back end exited with {status}:\n{log}"
    );
    assert!(
        log.lines().any(|l| l == DISCONNECTED),
        "the back end did not see the disconnection:\n{log}"
    );
    assert!(
        !disk.socket.exists(),
        "the back end left its socket {} behind",
        disk.socket.display()
    );
    let stats = disk.stats();
    assert!(
        stats.write_bytes > 0 && stats.requests > 0,
        "the flood reached the back end: {stats:?}"
    );
    assert_eq!(
        stats.irqs_wanted,
        stats.irqs_sent + stats.irqs_suppressed,
        "every wanted interrupt is sent or suppressed: {stats:?}"
    );
}

#[test]
fn with_reconnect_a_killed_qemu_leaks_nothing_and_the_next_one_is_served() {
    let Some(pre) = prerequisites_for_cint() else {
        return;
    };
    let work = tempfile::tempdir().expect("temporary folder");
    let cfg = flood_config();
    let initrd = run::build_initrd(&pre, work.path()).expect("initramfs");
    let disk = Disk::new(work.path(), &cfg);
    let mut backend = disk.start_backend(&pre, &cfg, true);

    let at_kill = flood_and_kill(&pre, &initrd, &disk, work.path());
    eprintln!("killed QEMU after: {at_kill}");
    // Cleaned up after the dead front end and back at the accept, where
    // it will be again once the second one is gone.
    backend
        .wait_for_log(WAITING, 1, BACKEND_EXIT_LIMIT)
        .unwrap_or_else(|e| panic!("after the kill: {e}"));
    backend
        .wait_accepting(BACKEND_EXIT_LIMIT)
        .unwrap_or_else(|e| panic!("after the kill: {e}"));
    let after_kill = backend.resources().expect("back end resources");
    assert!(disk.socket.exists(), "the socket is gone under --reconnect");

    // A second guest on the same socket and image: the integrity workload
    // with a seed of its own, so only what it wrote is checked (the flood
    // left the image in whatever state the kill found it).
    let second = RunConfig {
        disks: cfg.disks.clone(),
        seed: 0xA11CE,
        reads: 20,
        batch: 2,
        timeout: Duration::from_secs(120),
        ..RunConfig::default()
    };
    let boot = run::boot(&second, &pre, initrd, vec![disk.boot_disk()], Vec::new());
    let console = Guest::spawn(&boot, &work.path().join("second.console.log"))
        .and_then(|g| g.wait(second.timeout))
        .unwrap_or_else(|e| panic!("second guest: {e}\nback end:\n{}", backend.log_text()));
    let report = guest_output::parse(&console).expect("second guest's console");
    assert!(report.done, "the second guest did not finish:\n{console}");
    assert!(
        report.errors.is_empty(),
        "guest errors: {:?}",
        report.errors
    );
    let pci = format!("0000:00:{FIRST_SLOT:02x}.0");
    let guest_disk = report
        .disks
        .get(&pci)
        .unwrap_or_else(|| panic!("the second guest did not see its disk:\n{console}"));
    assert!(guest_disk.errors.is_empty(), "{:?}", guest_disk.errors);
    let integrity = guest_disk
        .integrity
        .as_ref()
        .expect("the second guest ran the integrity phase");
    assert!(integrity.bytes > 0 && integrity.ok && integrity.mismatches == 0);
    let image = run::check_image(
        &disk.image,
        second.seed + u64::from(FIRST_SLOT),
        second.mib << 20,
    )
    .expect("reading the image");
    assert_eq!(image.mismatches, 0, "the image differs from the pattern");
    assert_eq!(integrity.direct_sum, image.direct_sum);
    assert_eq!(integrity.buffered_sum, image.buffered_sum);

    // The second guest powered off: the back end is back where it was
    // after the kill, holding no more than it did then.
    backend
        .wait_for_log(WAITING, 2, BACKEND_EXIT_LIMIT)
        .unwrap_or_else(|e| panic!("after the second guest: {e}"));
    backend
        .wait_accepting(BACKEND_EXIT_LIMIT)
        .unwrap_or_else(|e| panic!("after the second guest: {e}"));
    let after_second = backend.resources().expect("back end resources");
    eprintln!("back end after the kill: {after_kill:?}; after the second guest: {after_second:?}");
    assert_eq!(
        after_second, after_kill,
        "descriptors and threads after the second front end against after the kill"
    );

    let status = backend
        .terminate(Duration::from_secs(20))
        .expect("stopping the back end")
        .unwrap_or_else(|| panic!("the back end ignored SIGTERM:\n{}", backend.log_text()));
    assert!(
        status.success(),
        "the back end exited with {status}:\n{}",
        backend.log_text()
    );
    assert!(!disk.socket.exists(), "the back end left its socket behind");
    let stats = disk.stats();
    assert!(
        stats.write_bytes >= integrity.bytes,
        "the back end's writes over both connections: {stats:?}"
    );
}
