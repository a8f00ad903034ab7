//! The worker's cost per request on the null image, with no socket and no
//! guest: a driver keeps 128 4 KiB reads available (depth 128) and the
//! worker serves them. Reported per strategy, so the policy's share is
//! the ratio to `none` measured in the same run.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;

use cint_vhost::device::Device;
use cint_vhost::hints::HintMap;
use cint_vhost::image::Image;
use cint_vhost::options::{parse_strategy, ImageSpec};
use cint_vhost::worker::{GuestMem, Vring, Worker};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vhost_user_backend::VringT;
use vm_memory::{Bytes, GuestAddress, GuestAddressSpace, GuestMemoryAtomic, GuestMemoryMmap};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

// Three descriptors per request, DEPTH requests: 384 descriptors.
const QSIZE: u16 = 512;
const DEPTH: u16 = 128;
const DESC: u64 = 0;
const AVAIL: u64 = 0x10_000;
const USED: u64 = 0x20_000;
const BUFS: u64 = 0x100_000;

struct Bench {
    gm: GuestMem,
    vring: Vring,
    worker: Worker,
    _call: EventFd,
    avail_idx: u16,
}

fn setup(strategy: &str) -> Bench {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0), 16 << 20)]).unwrap();
    let gm = GuestMemoryAtomic::new(mem);
    let vring = Vring::new(gm.clone(), QSIZE).unwrap();
    vring.set_queue_size(QSIZE);
    vring.set_queue_info(DESC, AVAIL, USED).unwrap();
    vring.set_queue_ready(true);
    vring.set_enabled(true);
    vring.set_queue_event_idx(true);
    let call = EventFd::new(EFD_NONBLOCK).unwrap();
    // SAFETY: dup gives a new descriptor owned by the File.
    vring.set_call(Some(unsafe {
        File::from_raw_fd(libc::dup(call.as_raw_fd()))
    }));
    let image = Arc::new(Image::open(&ImageSpec::Null(1 << 30), false).unwrap());
    let device = Device::new(&image, 1, QSIZE, false);
    let mut worker = Worker::new(
        QSIZE,
        image,
        parse_strategy(strategy).unwrap().build(0).unwrap(),
        HintMap::default(),
        device.limits,
        [0; 20],
    )
    .unwrap();
    worker.set_event_idx(true);
    let m = gm.memory();
    // DEPTH chains of header, 4 KiB data, status.
    for r in 0..DEPTH {
        let base = BUFS + u64::from(r) * 0x2000;
        let mut h = [0u8; 16];
        h[8..16].copy_from_slice(&(u64::from(r) * 8).to_le_bytes());
        m.write_slice(&h, GuestAddress(base)).unwrap();
        let descs = [
            (base, 16u32, 1u16),
            (base + 0x1000, 4096, 3),
            (base + 16, 1, 2),
        ];
        for (i, (addr, len, flags)) in descs.iter().enumerate() {
            let idx = u64::from(r) * 3 + i as u64;
            let at = DESC + 16 * idx;
            m.write_obj(*addr, GuestAddress(at)).unwrap();
            m.write_obj(*len, GuestAddress(at + 8)).unwrap();
            m.write_obj(*flags, GuestAddress(at + 12)).unwrap();
            m.write_obj((idx + 1) as u16, GuestAddress(at + 14))
                .unwrap();
        }
    }
    Bench {
        gm,
        vring,
        worker,
        _call: call,
        avail_idx: 0,
    }
}

impl Bench {
    /// Makes DEPTH requests available and lets the worker serve them.
    fn round(&mut self) {
        let m = self.gm.memory();
        for r in 0..DEPTH {
            let slot = AVAIL + 4 + 2 * u64::from(self.avail_idx % QSIZE);
            m.write_obj(r * 3, GuestAddress(slot)).unwrap();
            self.avail_idx = self.avail_idx.wrapping_add(1);
        }
        // The driver wants an interrupt after the last of the batch.
        m.write_obj(
            self.avail_idx.wrapping_sub(1),
            GuestAddress(AVAIL + 4 + 2 * u64::from(QSIZE)),
        )
        .unwrap();
        m.write_obj(self.avail_idx, GuestAddress(AVAIL + 2))
            .unwrap();
        drop(m);
        self.worker.on_kick(&self.vring, &self.gm);
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("null_queue_depth128_4k_read");
    group.throughput(Throughput::Elements(u64::from(DEPTH)));
    for strategy in [
        "none",
        "adaptive,delta=6us,thr=32",
        "cinterrupts,delta=6us,thr=32",
        "vic",
    ] {
        let mut b = setup(strategy);
        group.bench_function(strategy, |bencher| bencher.iter(|| b.round()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
