//! What the harness's integration tests share: finding the back ends,
//! disk images with known contents, and a batch runner that checks every
//! completion against a shadow copy of the disk.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use cint_vhost_harness::backend::{self, BackendProcess};
use cint_vhost_harness::blk;
use cint_vhost_harness::chains::{self, ChainSpec, Fault, Slot};
use cint_vhost_harness::device::{Session, SessionConfig};
use cint_vhost_harness::exchange;

/// Sectors of each slot's private region of the disk.
pub const REGION_SECTORS: u64 = 128;
/// Slots (and so requests) per batch at most.
pub const SLOTS: u16 = 16;
/// Image size: one region per slot.
pub const IMAGE_BYTES: u64 = REGION_SECTORS * 512 * SLOTS as u64;
/// Descriptors per queue.
pub const QUEUE_SIZE: u16 = 256;

/// A missing back end fails the test in CI and skips it, loudly, elsewhere
/// (`cint_test_support::skip::missing`).
pub fn missing(what: &str) -> Option<PathBuf> {
    cint_test_support::skip::missing(&format!("{what} is missing"));
    None
}

/// qemu-storage-daemon, or `None` after a loud skip.
pub fn qsd() -> Option<PathBuf> {
    backend::find_qsd()
        .or_else(|| missing("qemu-storage-daemon (bash .ci/deps/qemu-storage-daemon.sh)"))
}

/// A `cint` binary that has the `vhost` subcommand, or `None` after a loud skip.
pub fn cint_with_vhost() -> Option<PathBuf> {
    let Some(cint) = backend::find_cint() else {
        return missing("the cint binary (cargo build --release -p cint, or CINT_BIN)");
    };
    if backend::has_vhost_subcommand(&cint) {
        Some(cint)
    } else {
        missing(&format!("`{} vhost` (the back end)", cint.display()))
    }
}

/// A fresh directory for one test's sockets and images, removed when
/// dropped.
pub fn scratch(test: &str) -> cint_test_support::TempDir {
    cint_test_support::temp_dir(&format!("vhost-harness-{test}"))
}

/// Writes an image with a known pattern; returns its contents.
pub fn make_image(path: &Path) -> Vec<u8> {
    let bytes = chains::pattern(0x5a, 0, IMAGE_BYTES as usize);
    std::fs::write(path, &bytes).expect("write image");
    bytes
}

/// Connects a one-queue session sized for the fuzz slots and a small load.
pub fn connect(socket: &Path) -> Session {
    connect_with(socket, 1, true)
}

/// Connects with `queues` queues, negotiating EVENT_IDX or not.
pub fn connect_with(socket: &Path, queues: u16, event_idx: bool) -> Session {
    Session::connect(
        socket,
        &SessionConfig {
            queues,
            queue_size: QUEUE_SIZE,
            event_idx,
            memory_bytes: 32 << 20,
        },
    )
    .expect("vhost-user session")
}

/// A back end under test with its session, slots and the shadow disk.
pub struct Rig {
    pub process: BackendProcess,
    pub session: Session,
    pub slots: Vec<Slot>,
    pub shadow: Vec<u8>,
    pub read_only: bool,
    pub completed: u64,
    /// Malformed requests submitted (each was checked).
    pub malformed: u64,
    /// Malformed requests that came back without a status byte written.
    pub returned_without_status: u64,
    /// The first failure: the back end's state cannot be rolled back, so
    /// later batches (proptest's shrinking included) only repeat it.
    pub failed: Option<String>,
}

impl Rig {
    pub fn new(process: BackendProcess, shadow: Vec<u8>) -> Self {
        let session = connect(&process.socket);
        assert!(
            session.config.capacity * 512 >= IMAGE_BYTES,
            "config space capacity {} sectors, image is {} bytes",
            session.config.capacity,
            IMAGE_BYTES
        );
        let slots = Slot::allocate(&session.memory, SLOTS).expect("slots");
        let read_only = session.read_only();
        Self {
            process,
            session,
            slots,
            shadow,
            read_only,
            completed: 0,
            malformed: 0,
            returned_without_status: 0,
            failed: None,
        }
    }

    fn capacity(&self) -> u64 {
        self.session.config.capacity
    }

    /// Submits `specs` (one per slot) in one batch, checks every status,
    /// updates the shadow with the good writes, then reads back every
    /// range a request addressed and compares it with the shadow.
    pub fn batch(&mut self, specs: &[ChainSpec]) -> Result<(), String> {
        if let Some(first) = &self.failed {
            return Err(first.clone());
        }
        let outcome = self.batch_once(specs);
        if let Err(e) = &outcome {
            self.failed = Some(format!("{e}\nthe failing batch: {specs:#?}"));
        }
        outcome
    }

    fn batch_once(&mut self, specs: &[ChainSpec]) -> Result<(), String> {
        assert!(specs.len() <= usize::from(SLOTS));
        let first: Vec<u64> = specs
            .iter()
            .enumerate()
            .map(|(k, s)| k as u64 * REGION_SECTORS + s.sector_offset % (REGION_SECTORS - 8))
            .collect();
        let statuses = self.submit(specs, &first)?;
        for (k, spec) in specs.iter().enumerate() {
            chains::check_status(spec, statuses[k], self.read_only)
                .map_err(|e| format!("request {k} {spec:?}: {e}"))?;
            if spec.fault != Fault::None {
                self.malformed += 1;
                if statuses[k] == blk::S_UNTOUCHED {
                    self.returned_without_status += 1;
                }
            }
            if spec.write && spec.fault == Fault::None && statuses[k] == blk::S_OK {
                let at = (first[k] * 512) as usize;
                let len = usize::from(spec.sectors) * 512;
                self.shadow[at..at + len]
                    .copy_from_slice(&chains::pattern(spec.seed, first[k], len));
            }
        }
        // Read back what each request addressed: good writes landed, bad
        // ones changed nothing, good reads returned the disk's bytes.
        let reads: Vec<ChainSpec> = specs
            .iter()
            .map(|s| ChainSpec {
                write: false,
                fault: Fault::None,
                ..*s
            })
            .collect();
        let statuses = self.submit(&reads, &first)?;
        for (k, spec) in reads.iter().enumerate() {
            if statuses[k] != blk::S_OK {
                return Err(format!("read-back {k} got status {}", statuses[k]));
            }
            let len = usize::from(spec.sectors) * 512;
            let mut got = vec![0u8; len];
            self.session.memory.read(self.slots[k].data, &mut got);
            let at = (first[k] * 512) as usize;
            if got != self.shadow[at..at + len] {
                return Err(format!(
                    "sectors {}..{} differ from what was written (after {:?})",
                    first[k],
                    first[k] + u64::from(spec.sectors),
                    specs[k]
                ));
            }
        }
        Ok(())
    }

    fn submit(&mut self, specs: &[ChainSpec], first: &[u64]) -> Result<Vec<u8>, String> {
        let capacity = self.capacity();
        let mem = self.session.memory.clone();
        let chains: Vec<_> = specs
            .iter()
            .enumerate()
            .map(|(k, s)| chains::build(&mem, &self.slots[k], s, first[k], capacity, QUEUE_SIZE))
            .collect();
        let q = &mut self.session.queues[0];
        let done = exchange::submit_and_wait(q, &chains, Duration::from_secs(10))
            .map_err(|e| format!("{e} (batch {specs:?})"))?;
        if done.len() != specs.len() {
            return Err(format!(
                "{} completions for {} requests",
                done.len(),
                specs.len()
            ));
        }
        self.completed += specs.len() as u64;
        Ok(self.slots[..specs.len()]
            .iter()
            .map(|s| mem.read_u8(s.status))
            .collect())
    }
}
