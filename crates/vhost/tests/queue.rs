//! The worker against a virtqueue laid out by hand in guest memory, as a
//! driver would: well-formed requests reach the backing file and come
//! back with the right status, malformed ones fail with a status (or a
//! zero-length used entry) without stopping the queue, every request gets
//! exactly one used entry, and interrupts follow the policy and the
//! driver's EVENT_IDX.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;

use cint_policy::PolicyConfig;
use cint_vhost::device::Device;
use cint_vhost::hints::HintMap;
use cint_vhost::image::Image;
use cint_vhost::options::{parse_strategy, ImageSpec};
use cint_vhost::worker::{GuestMem, Vring, Worker};
use vhost_user_backend::VringT;
use vm_memory::{Bytes, GuestAddress, GuestMemoryAtomic, GuestMemoryMmap};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

const QSIZE: u16 = 16;
const DESC: u64 = 0x0;
const AVAIL: u64 = 0x1000;
const USED: u64 = 0x2000;
const BUFS: u64 = 0x10_000;
const MEM_SIZE: usize = 0x100_000;
const F_NEXT: u16 = 1;
const F_WRITE: u16 = 2;

const T_IN: u32 = 0;
const T_OUT: u32 = 1;
const T_FLUSH: u32 = 4;
const T_GET_ID: u32 = 8;
const T_WRITE_ZEROES: u32 = 13;

struct Rig {
    gm: GuestMem,
    vring: Vring,
    worker: Worker,
    call: EventFd,
    avail_idx: u16,
    used_seen: u16,
    /// Next free descriptor slot (descriptors are reused round-robin).
    next_desc: u16,
    _dir: tempfile::TempDir,
    image_path: std::path::PathBuf,
}

impl Rig {
    fn new(image_sectors: u64, read_only: bool, strategy: &str) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let image_path = dir.path().join("disk.img");
        let pattern: Vec<u8> = (0..image_sectors * 512).map(|i| (i % 251) as u8).collect();
        std::fs::write(&image_path, pattern).unwrap();
        let image = Arc::new(Image::open(&ImageSpec::File(image_path.clone()), read_only).unwrap());
        let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0), MEM_SIZE)]).unwrap();
        let gm = GuestMemoryAtomic::new(mem);
        let vring = Vring::new(gm.clone(), QSIZE).unwrap();
        vring.set_queue_size(QSIZE);
        vring.set_queue_info(DESC, AVAIL, USED).unwrap();
        vring.set_queue_ready(true);
        vring.set_enabled(true);
        let call = EventFd::new(EFD_NONBLOCK).unwrap();
        // SAFETY: dup gives a new descriptor owned by the File.
        let call_file = unsafe { File::from_raw_fd(libc::dup(call.as_raw_fd())) };
        vring.set_call(Some(call_file));
        let config: PolicyConfig = parse_strategy(strategy).unwrap();
        let device = Device::new(&image, 1, QSIZE, read_only);
        let worker = Worker::new(
            QSIZE,
            image,
            config.build(0).unwrap(),
            HintMap::default(),
            device.limits,
            *b"cint-vhost-test\0\0\0\0\0",
        )
        .unwrap();
        Rig {
            gm,
            vring,
            worker,
            call,
            avail_idx: 0,
            used_seen: 0,
            next_desc: 0,
            _dir: dir,
            image_path,
        }
    }

    fn mem(&self) -> Arc<GuestMemoryMmap> {
        use vm_memory::GuestAddressSpace;
        self.gm.memory().into_inner()
    }

    /// Writes a chain of (addr, len, flags) descriptors and makes it
    /// available; `next` links are filled in unless `raw_next` gives them.
    fn push_chain(&mut self, descs: &[(u64, u32, u16)]) -> u16 {
        let mem = self.mem();
        let head = self.next_desc;
        for (i, &(addr, len, flags)) in descs.iter().enumerate() {
            let idx = (head + i as u16) % QSIZE;
            let last = i == descs.len() - 1;
            let next = (idx + 1) % QSIZE;
            let flags = if last { flags } else { flags | F_NEXT };
            write_desc(&mem, idx, addr, len, flags, next);
        }
        self.next_desc = (head + descs.len() as u16) % QSIZE;
        self.publish(head);
        head
    }

    fn publish(&mut self, head: u16) {
        let mem = self.mem();
        let slot = AVAIL + 4 + 2 * u64::from(self.avail_idx % QSIZE);
        mem.write_obj(head.to_le(), GuestAddress(slot)).unwrap();
        self.avail_idx = self.avail_idx.wrapping_add(1);
        mem.write_obj(self.avail_idx.to_le(), GuestAddress(AVAIL + 2))
            .unwrap();
    }

    fn header(&self, at: u64, kind: u32, ioprio: u32, sector: u64) {
        let mem = self.mem();
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&kind.to_le_bytes());
        h[4..8].copy_from_slice(&ioprio.to_le_bytes());
        h[8..16].copy_from_slice(&sector.to_le_bytes());
        mem.write_slice(&h, GuestAddress(at)).unwrap();
    }

    /// Runs the worker until `n` more used entries appear; returns them.
    fn run_until(&mut self, n: u16) -> Vec<(u32, u32)> {
        self.worker.on_kick(&self.vring, &self.gm);
        let mut rounds = 0;
        while self.used_idx().wrapping_sub(self.used_seen) < n {
            rounds += 1;
            assert!(rounds < 1000, "no progress: backing I/O never completed");
            let mut pfd = libc::pollfd {
                fd: self.worker.ring_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            unsafe { libc::poll(&mut pfd, 1, 100) };
            self.worker.on_ring(&self.vring, &self.gm);
        }
        let mem = self.mem();
        let mut out = Vec::new();
        while self.used_seen != self.used_idx() {
            let at = USED + 4 + 8 * u64::from(self.used_seen % QSIZE);
            let id: u32 = mem.read_obj(GuestAddress(at)).unwrap();
            let len: u32 = mem.read_obj(GuestAddress(at + 4)).unwrap();
            out.push((id, len));
            self.used_seen = self.used_seen.wrapping_add(1);
        }
        out
    }

    fn used_idx(&self) -> u16 {
        self.mem().read_obj(GuestAddress(USED + 2)).unwrap()
    }

    fn byte(&self, at: u64) -> u8 {
        self.mem().read_obj(GuestAddress(at)).unwrap()
    }

    fn calls(&self) -> u64 {
        self.call.read().unwrap_or(0)
    }
}

fn write_desc(mem: &GuestMemoryMmap, idx: u16, addr: u64, len: u32, flags: u16, next: u16) {
    let at = DESC + 16 * u64::from(idx);
    mem.write_obj(addr.to_le(), GuestAddress(at)).unwrap();
    mem.write_obj(len.to_le(), GuestAddress(at + 8)).unwrap();
    mem.write_obj(flags.to_le(), GuestAddress(at + 12)).unwrap();
    mem.write_obj(next.to_le(), GuestAddress(at + 14)).unwrap();
}

const HDR: u64 = BUFS;
const DATA: u64 = BUFS + 0x1000;
const STATUS: u64 = BUFS + 0x8000;

#[test]
fn read_write_flush_and_get_id_reach_the_file_and_come_back_ok() {
    let mut rig = Rig::new(64, false, "none");
    // Read sectors 2..4 (1 KiB).
    rig.header(HDR, T_IN, 0, 2);
    let head = rig.push_chain(&[(HDR, 16, 0), (DATA, 1024, F_WRITE), (STATUS, 1, F_WRITE)]);
    let used = rig.run_until(1);
    assert_eq!(used, vec![(u32::from(head), 1025)]);
    assert_eq!(rig.byte(STATUS), 0);
    let mut got = vec![0u8; 1024];
    rig.mem().read_slice(&mut got, GuestAddress(DATA)).unwrap();
    let want: Vec<u8> = (1024..2048u64).map(|i| (i % 251) as u8).collect();
    assert_eq!(got, want);

    // Write 512 bytes of 0xAB at sector 5, flush, check the file.
    rig.mem()
        .write_slice(&[0xAB; 512], GuestAddress(DATA))
        .unwrap();
    rig.header(HDR, T_OUT, 0, 5);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 512, 0), (STATUS, 1, F_WRITE)]);
    assert_eq!(rig.run_until(1)[0].1, 1);
    assert_eq!(rig.byte(STATUS), 0);
    rig.header(HDR, T_FLUSH, 0, 0);
    rig.push_chain(&[(HDR, 16, 0), (STATUS, 1, F_WRITE)]);
    rig.run_until(1);
    assert_eq!(rig.byte(STATUS), 0);
    let file = std::fs::read(&rig.image_path).unwrap();
    assert!(file[5 * 512..6 * 512].iter().all(|&b| b == 0xAB));
    assert_eq!(
        file[6 * 512],
        ((6 * 512) % 251) as u8,
        "neighbours untouched"
    );

    // GET_ID: 20 bytes.
    rig.header(HDR, T_GET_ID, 0, 0);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 20, F_WRITE), (STATUS, 1, F_WRITE)]);
    assert_eq!(rig.run_until(1)[0].1, 21);
    let mut id = [0u8; 15];
    rig.mem().read_slice(&mut id, GuestAddress(DATA)).unwrap();
    assert_eq!(&id, b"cint-vhost-test");

    // Write-zeroes of sectors 5..6.
    let mut range = [0u8; 16];
    range[0..8].copy_from_slice(&5u64.to_le_bytes());
    range[8..12].copy_from_slice(&1u32.to_le_bytes());
    rig.mem().write_slice(&range, GuestAddress(DATA)).unwrap();
    rig.header(HDR, T_WRITE_ZEROES, 0, 0);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 16, 0), (STATUS, 1, F_WRITE)]);
    rig.run_until(1);
    assert_eq!(rig.byte(STATUS), 0);
    let file = std::fs::read(&rig.image_path).unwrap();
    assert!(file[5 * 512..6 * 512].iter().all(|&b| b == 0));
    assert_eq!(rig.worker.stats.requests, 5);
    assert_eq!(rig.worker.stats.read_bytes, 1024);
    assert_eq!(rig.worker.stats.write_bytes, 512);
}

#[test]
fn hostile_chains_fail_with_a_status_and_the_queue_keeps_serving() {
    let mut rig = Rig::new(64, false, "none");
    let outside = MEM_SIZE as u64 + 0x1000;
    type Case = (&'static str, u32, u64, Vec<(u64, u32, u16)>, Option<u8>);
    let cases: Vec<Case> = vec![
        (
            "header device-writable",
            T_IN,
            0,
            vec![
                (HDR, 16, F_WRITE),
                (DATA, 512, F_WRITE),
                (STATUS, 1, F_WRITE),
            ],
            Some(1),
        ),
        (
            "header too short",
            T_IN,
            0,
            vec![(HDR, 8, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "data outside memory",
            T_IN,
            0,
            vec![(HDR, 16, 0), (outside, 512, F_WRITE), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "readable buffer in a read",
            T_IN,
            0,
            vec![(HDR, 16, 0), (DATA, 512, 0), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "writable buffer in a write",
            T_OUT,
            0,
            vec![(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "past the end",
            T_IN,
            63,
            vec![(HDR, 16, 0), (DATA, 1024, F_WRITE), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "sector overflow",
            T_IN,
            u64::MAX,
            vec![(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "odd length",
            T_IN,
            0,
            vec![(HDR, 16, 0), (DATA, 100, F_WRITE), (STATUS, 1, F_WRITE)],
            Some(1),
        ),
        (
            "unknown type",
            77,
            0,
            vec![(HDR, 16, 0), (STATUS, 1, F_WRITE)],
            Some(2),
        ),
        (
            "no status byte",
            T_IN,
            0,
            vec![(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, 0)],
            None,
        ),
        (
            "status outside memory",
            T_IN,
            0,
            vec![(HDR, 16, 0), (DATA, 512, F_WRITE), (outside, 1, F_WRITE)],
            None,
        ),
        (
            "writable before readable",
            T_OUT,
            0,
            vec![
                (HDR, 16, 0),
                (DATA, 512, F_WRITE),
                (DATA + 512, 512, 0),
                (STATUS, 1, F_WRITE),
            ],
            Some(1),
        ),
    ];
    for (name, kind, sector, chain, status) in cases {
        rig.mem().write_obj(0xEEu8, GuestAddress(STATUS)).unwrap();
        rig.header(HDR, kind, 0, sector);
        let head = rig.push_chain(&chain);
        let used = rig.run_until(1);
        assert_eq!(used.len(), 1, "{name}: exactly one used entry");
        assert_eq!(used[0].0, u32::from(head), "{name}");
        match status {
            Some(code) => {
                assert_eq!(rig.byte(STATUS), code, "{name}: status");
                assert_eq!(used[0].1, 1, "{name}: used length");
            }
            None => assert_eq!(used[0].1, 0, "{name}: consumed with length 0"),
        }
        // A good request right after still works.
        rig.header(HDR, T_IN, 0, 1);
        rig.push_chain(&[(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)]);
        let used = rig.run_until(1);
        assert_eq!(
            (rig.byte(STATUS), used[0].1),
            (0, 513),
            "{name}: next request served"
        );
    }
}

#[test]
fn a_looping_chain_is_consumed_once_and_the_queue_keeps_serving() {
    let mut rig = Rig::new(8, false, "none");
    let mem = rig.mem();
    rig.header(HDR, T_IN, 0, 0);
    // 0 -> 1 -> 0 -> ...: the chain never ends.
    write_desc(&mem, 0, HDR, 16, F_NEXT, 1);
    write_desc(&mem, 1, DATA, 512, F_WRITE | F_NEXT, 0);
    rig.next_desc = 2;
    rig.publish(0);
    let used = rig.run_until(1);
    assert_eq!(used, vec![(0, 0)]);
    rig.header(HDR, T_IN, 0, 0);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)]);
    assert_eq!(rig.run_until(1)[0].1, 513);
}

#[test]
fn writes_to_a_read_only_disk_fail_and_reads_work() {
    let mut rig = Rig::new(8, true, "none");
    rig.header(HDR, T_OUT, 0, 0);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 512, 0), (STATUS, 1, F_WRITE)]);
    rig.run_until(1);
    assert_eq!(rig.byte(STATUS), 1);
    let file = std::fs::read(&rig.image_path).unwrap();
    assert_eq!(file[0..4], [0, 1, 2, 3], "image unchanged");
    rig.header(HDR, T_IN, 0, 0);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)]);
    rig.run_until(1);
    assert_eq!(rig.byte(STATUS), 0);
}

#[test]
fn every_request_gets_exactly_one_used_entry() {
    let mut rig = Rig::new(256, false, "none");
    let mut seen = vec![0u32; usize::from(QSIZE)];
    let mut submitted = vec![0u32; usize::from(QSIZE)];
    for round in 0..40u64 {
        // Five 3-descriptor requests per round fill 15 of the 16 slots.
        for i in 0..5u64 {
            let n = round * 5 + i;
            let hdr = HDR + 16 * i;
            let status = STATUS + i;
            let data = DATA + 0x1000 * i;
            let (kind, flags) = if n % 3 == 0 {
                (T_OUT, 0)
            } else {
                (T_IN, F_WRITE)
            };
            rig.header(hdr, kind, 0, n % 200);
            let head = rig.push_chain(&[(hdr, 16, 0), (data, 512, flags), (status, 1, F_WRITE)]);
            submitted[usize::from(head)] += 1;
        }
        rig.next_desc = 0;
        for (id, _) in rig.run_until(5) {
            seen[id as usize] += 1;
        }
        for i in 0..5 {
            assert_eq!(rig.byte(STATUS + i), 0);
        }
    }
    assert_eq!(seen, submitted);
    assert_eq!(rig.worker.stats.requests, 200);
    assert_eq!(rig.worker.in_flight(), 0);
}

#[test]
fn interrupts_follow_the_policy_and_are_counted() {
    // nvme: one interrupt per 4 completions (the 20 ms timer is never
    // consulted: the test does not call on_timer).
    let mut rig = Rig::new(64, false, "nvme,thr=4,time=20ms");
    for batch in 0..2u64 {
        rig.next_desc = 0;
        for i in 0..4u64 {
            let hdr = HDR + 16 * i;
            rig.header(hdr, T_IN, 0, batch * 4 + i);
            rig.push_chain(&[
                (hdr, 16, 0),
                (DATA + 0x1000 * i, 512, F_WRITE),
                (STATUS + i, 1, F_WRITE),
            ]);
        }
        let mut done = 0;
        while done < 4 {
            done += rig.run_until(1).len();
        }
    }
    let s = &rig.worker.stats;
    assert_eq!(s.requests, 8);
    assert_eq!(s.irqs_wanted, 2);
    assert_eq!(s.irqs_sent, 2);
    assert_eq!(s.irqs_suppressed, 0);
    assert_eq!(rig.calls(), 2, "call eventfd writes equal irqs_sent");
}

#[test]
fn event_idx_suppression_is_counted_not_sent() {
    let mut rig = Rig::new(64, false, "none");
    rig.worker.set_event_idx(true);
    rig.vring.set_queue_event_idx(true);
    // The driver asks to be interrupted only after used index 100.
    rig.mem()
        .write_obj(
            100u16.to_le(),
            GuestAddress(AVAIL + 4 + 2 * u64::from(QSIZE)),
        )
        .unwrap();
    for i in 0..3u64 {
        let hdr = HDR + 16 * i;
        rig.header(hdr, T_IN, 0, i);
        rig.push_chain(&[
            (hdr, 16, 0),
            (DATA + 0x1000 * i, 512, F_WRITE),
            (STATUS + i, 1, F_WRITE),
        ]);
    }
    let mut done = 0;
    while done < 3 {
        done += rig.run_until(1).len();
    }
    let s = &rig.worker.stats;
    assert_eq!(s.irqs_wanted, 3);
    assert_eq!(s.irqs_sent + s.irqs_suppressed, 3);
    assert_eq!(s.irqs_sent, rig.calls());
    assert!(s.irqs_suppressed >= 2, "used_event 100 suppresses: {s:?}");
}

#[test]
fn urgent_requests_interrupt_at_once_under_cinterrupts() {
    // RT class (ioprio class 1) means Urgent; a long delta keeps the
    // unmarked ones held.
    let mut rig = Rig::new(64, false, "cinterrupts,delta=1s,thr=64");
    rig.header(HDR, T_IN, 2 << 13, 0);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)]);
    rig.run_until(1);
    assert_eq!(rig.worker.stats.irqs_sent, 0, "unmarked completion held");
    rig.header(HDR + 16, T_IN, 1 << 13, 1);
    rig.push_chain(&[
        (HDR + 16, 16, 0),
        (DATA + 0x1000, 512, F_WRITE),
        (STATUS + 1, 1, F_WRITE),
    ]);
    rig.run_until(1);
    assert_eq!(rig.worker.stats.irqs_sent, 1);
    assert_eq!(rig.worker.stats.urgent_irqs, 1);
    assert_eq!(rig.calls(), 1);
}

#[test]
fn a_failed_backing_read_reaches_the_guest_as_ioerr() {
    let mut rig = Rig::new(64, false, "none");
    // The file shrinks under the device: the read finds nothing.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&rig.image_path)
        .unwrap()
        .set_len(0)
        .unwrap();
    rig.mem().write_obj(0xEEu8, GuestAddress(STATUS)).unwrap();
    rig.header(HDR, T_IN, 0, 8);
    rig.push_chain(&[(HDR, 16, 0), (DATA, 4096, F_WRITE), (STATUS, 1, F_WRITE)]);
    let used = rig.run_until(1);
    assert_eq!(rig.byte(STATUS), 1, "IOERR, never OK");
    assert_eq!(used[0].1, 1);
    assert_eq!(rig.worker.stats.read_bytes, 0);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// A raw descriptor as a hostile driver may write it.
    fn raw_desc() -> impl Strategy<Value = (u64, u32, u16, u16)> {
        let addr = prop_oneof![
            Just(HDR),
            Just(DATA),
            Just(STATUS),
            // Never over the rings themselves: a driver that points reads
            // at its own rings only hurts itself, and would confuse the
            // test's view of the used ring.
            BUFS..(MEM_SIZE as u64 + 0x4000),
            (MEM_SIZE as u64)..u64::MAX,
        ];
        let len = prop_oneof![Just(16u32), Just(512), Just(1), 0u32..5000, any::<u32>()];
        // NEXT, WRITE and INDIRECT in any combination.
        (addr, len, 0u16..8, 0u16..(QSIZE + 2))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Whatever the descriptors say, every published head comes back
        /// exactly once and a good request afterwards is served.
        #[test]
        fn random_descriptor_tables_never_lose_or_duplicate_a_request(
            table in proptest::collection::vec(raw_desc(), usize::from(QSIZE)),
            heads in proptest::collection::vec(0u16..QSIZE, 1..8),
            kind in prop_oneof![Just(T_IN), Just(T_OUT), Just(T_FLUSH), Just(T_GET_ID), Just(T_WRITE_ZEROES), any::<u32>()],
            sector in prop_oneof![0u64..80, any::<u64>()],
        ) {
            let mut rig = Rig::new(64, false, "cinterrupts,delta=6us,thr=4");
            rig.header(HDR, kind, 0, sector);
            let mem = rig.mem();
            for (i, &(addr, len, flags, next)) in table.iter().enumerate() {
                write_desc(&mem, i as u16, addr, len, flags, next);
            }
            let mut unique = heads.clone();
            unique.sort_unstable();
            unique.dedup();
            for &h in &unique {
                rig.publish(h);
            }
            let used = rig.run_until(unique.len() as u16);
            let mut ids: Vec<u32> = used.iter().map(|(id, _)| *id).collect();
            ids.sort_unstable();
            let want: Vec<u32> = unique.iter().map(|&h| u32::from(h)).collect();
            prop_assert_eq!(ids, want);
            prop_assert_eq!(rig.worker.in_flight(), 0);

            // The queue still serves a well-formed read.
            rig.next_desc = 0;
            rig.header(HDR, T_IN, 0, 1);
            rig.push_chain(&[(HDR, 16, 0), (DATA, 512, F_WRITE), (STATUS, 1, F_WRITE)]);
            let used = rig.run_until(1);
            prop_assert_eq!(used.len(), 1);
            prop_assert_eq!(used[0].1, 513);
            prop_assert_eq!(rig.byte(STATUS), 0);
        }
    }
}

#[test]
fn discard_punches_the_range_and_bad_ranges_fail() {
    let mut rig = Rig::new(64, false, "none");
    let range = |sector: u64, sectors: u32, flags: u32| {
        let mut r = [0u8; 16];
        r[0..8].copy_from_slice(&sector.to_le_bytes());
        r[8..12].copy_from_slice(&sectors.to_le_bytes());
        r[12..16].copy_from_slice(&flags.to_le_bytes());
        r
    };
    const T_DISCARD: u32 = 11;
    for (r, status) in [
        (range(8, 8, 0), 0u8),
        (range(60, 8, 0), 1), // past the end
        (range(8, 8, 1), 2),  // the unmap flag is not for discard
    ] {
        rig.mem().write_slice(&r, GuestAddress(DATA)).unwrap();
        rig.header(HDR, T_DISCARD, 0, 0);
        rig.push_chain(&[(HDR, 16, 0), (DATA, 16, 0), (STATUS, 1, F_WRITE)]);
        rig.run_until(1);
        assert_eq!(rig.byte(STATUS), status);
    }
    let file = std::fs::read(&rig.image_path).unwrap();
    assert_eq!(file.len(), 64 * 512, "size kept");
    assert!(
        file[8 * 512..16 * 512].iter().all(|&b| b == 0),
        "range reads as zeros"
    );
    assert_ne!(file[16 * 512 + 1], 0, "after the range untouched");
}
