//! One guest run: a back end per disk, each with its strategy and number of
//! queues, serving its own image as a disk of one QEMU guest, the guest's
//! workload on every disk, then the host's checks of the images and the
//! back ends' counters.

use crate::backend::{which, Backend, BackendKind, BackendStats};
use crate::error::{Error, Result};
use crate::guest_output::{self, GuestDisk, GuestReport};
use crate::initramfs;
use crate::kernel::{self, Kernel};
use crate::pattern;
use crate::qemu::{self, Boot, BootDisk};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The first disk's PCI slot; disk `i` sits at `FIRST_SLOT + i`.
pub const FIRST_SLOT: u8 = 0x10;

/// One disk of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSpec {
    /// Its back end's strategy (`cint vhost --strategy` syntax).
    pub strategy: String,
    /// Its virtqueues (`cint vhost --queues`, QEMU's `num-queues`); the
    /// guest gets as many vCPUs as the largest disk has queues.
    pub queues: u16,
}

impl DiskSpec {
    /// A disk with one queue.
    pub fn single(strategy: impl Into<String>) -> Self {
        DiskSpec {
            strategy: strategy.into(),
            queues: 1,
        }
    }

    /// The strategy's kind (`cinterrupts` of `cinterrupts,delta=2000us`).
    pub fn kind(&self) -> &str {
        self.strategy.split(',').next().unwrap_or_default()
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The disks, in PCI slot order.
    pub disks: Vec<DiskSpec>,
    /// Base seed of the patterns; disk at slot `s` uses `seed + s`.
    pub seed: u64,
    /// MiB of each integrity half (O_DIRECT, buffered).
    pub mib: u64,
    /// RT reads of the mixed phase.
    pub reads: u64,
    /// Batch reader threads of the mixed phase.
    pub batch: u64,
    /// The guest counts RT reads faster than this (microseconds); the
    /// default strategies' `delta`.
    pub within_us: u64,
    /// Size of each disk image in MiB.
    pub image_mib: u64,
    /// Longest the guest may run.
    pub timeout: Duration,
    /// Instead of the workload, keep the first disk flooded with O_DIRECT
    /// writes for this many seconds (the guest's `flood` phase), so the
    /// host can kill QEMU mid-I/O.
    pub flood_seconds: Option<u64>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            disks: default_disks(),
            seed: 0x5EED,
            mib: 4,
            reads: 200,
            batch: 8,
            within_us: DELTA_US,
            image_mib: 32,
            // A run takes 10 to 30 s on 2 shared cores; a guest still
            // running after this has lost a completion or an interrupt.
            timeout: Duration::from_secs(180),
            flood_seconds: None,
        }
    }
}

/// `delta` of the default `adaptive` and `cinterrupts` strategies, in
/// microseconds.
pub const DELTA_US: u64 = 2000;

/// Queues of the default run's multi-queue disk.
pub const MULTI_QUEUES: u16 = 2;

/// The disks of the end-to-end test: one single-queue disk per strategy,
/// then a `cinterrupts` disk with [`MULTI_QUEUES`] queues, each with its
/// own worker and policy in the back end. `adaptive` and `cinterrupts`
/// share `delta` and `thr`, so the urgent hint is their only difference;
/// `thr` is above the guest's requests in flight (batch + 1), so without
/// a hint a completion waits for `delta` of quiet.
pub fn default_disks() -> Vec<DiskSpec> {
    let mut disks: Vec<DiskSpec> = default_strategies()
        .into_iter()
        .map(DiskSpec::single)
        .collect();
    disks.push(DiskSpec {
        strategy: format!("cinterrupts,delta={DELTA_US}us,thr=32"),
        queues: MULTI_QUEUES,
    });
    disks
}

/// The strategies of the single-queue disks of the end-to-end test.
pub fn default_strategies() -> Vec<String> {
    vec![
        "none".into(),
        "nvme,thr=32,time=100us".into(),
        format!("adaptive,delta={DELTA_US}us,thr=32"),
        format!("cinterrupts,delta={DELTA_US}us,thr=32"),
        "vic".into(),
        "vic-sched".into(),
    ]
}

/// The programs and files a run needs.
#[derive(Debug, Clone)]
pub struct Prerequisites {
    /// `qemu-system-x86_64`.
    pub qemu: PathBuf,
    /// The extracted guest kernel.
    pub kernel: Kernel,
    /// Static busybox.
    pub busybox: PathBuf,
    /// The back end serving the disks.
    pub backend: BackendKind,
}

impl Prerequisites {
    /// Finds everything; `Error::Missing` names the first thing absent.
    pub fn find(backend: BackendKind) -> Result<Self> {
        let qemu = which("qemu-system-x86_64").ok_or_else(|| {
            Error::Missing("qemu-system-x86_64 (Debian package qemu-system-x86)".into())
        })?;
        let kernel = kernel::locate(&kernel::kernel_dir())?;
        let busybox = initramfs::busybox()?;
        match &backend {
            BackendKind::Cint(p) | BackendKind::StorageDaemon(p) if !p.is_file() => {
                return Err(Error::Missing(format!("back end {}", p.display())));
            }
            _ => {}
        }
        Ok(Prerequisites {
            qemu,
            kernel,
            busybox,
            backend,
        })
    }
}

/// The host's reading of one disk image after the guest powered off.
#[derive(Debug, Clone, Default)]
pub struct ImageCheck {
    /// Bytes of the integrity region that differ from the pattern.
    pub mismatches: u64,
    /// FNV-1a of the O_DIRECT half.
    pub direct_sum: u64,
    /// FNV-1a of the buffered half.
    pub buffered_sum: u64,
    /// Bytes of the queues phase's region (as the guest reported it) that
    /// differ from the pattern; `None` if the guest ran no queues phase.
    pub queue_region_mismatches: Option<u64>,
}

/// One disk's results from the guest, the image and the back end.
#[derive(Debug, Clone)]
pub struct DiskOutcome {
    /// The strategy its back end ran.
    pub strategy: String,
    /// The virtqueues it was given.
    pub queues: u16,
    /// Its PCI address in the guest.
    pub pci: String,
    /// What the guest reported (empty if the guest never saw it).
    pub guest: GuestDisk,
    /// The image as the host reads it.
    pub image: ImageCheck,
    /// The back end's counters (`None` for qemu-storage-daemon).
    pub backend: Option<BackendStats>,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Per disk, in slot order.
    pub disks: Vec<DiskOutcome>,
    /// The parsed console.
    pub guest: GuestReport,
    /// The console's text.
    pub console: String,
    /// Wall time from the first back end's start to the last one's end.
    pub elapsed: Duration,
}

fn pci_address(slot: u8) -> String {
    format!("0000:00:{slot:02x}.0")
}

/// Compiles the guest program and builds the initramfs in `work`.
pub fn build_initrd(pre: &Prerequisites, work: &Path) -> Result<PathBuf> {
    let guest_program = initramfs::compile_guest_program(work)?;
    let modules = kernel::module_closure(&pre.kernel.modules, kernel::NEEDED_MODULES)?;
    let initrd = work.join("initramfs.cpio");
    initramfs::build(&initrd, &pre.busybox, &guest_program, &modules)?;
    Ok(initrd)
}

/// Creates a zero-filled (sparse) image of `mib` MiB.
pub fn create_image(image: &Path, mib: u64) -> Result<()> {
    let file = File::create(image).map_err(|e| Error::io("creating", image, e))?;
    file.set_len(mib << 20)
        .map_err(|e| Error::io("sizing", image, e))
}

/// How to boot the guest for `cfg`'s workload on `disks`, with `qmp`
/// sockets for vic-sched back ends. The guest gets a vCPU per queue of its
/// largest disk, so every queue has a CPU of its own.
pub fn boot(
    cfg: &RunConfig,
    pre: &Prerequisites,
    initrd: PathBuf,
    disks: Vec<BootDisk>,
    qmp: Vec<PathBuf>,
) -> Boot {
    // A task blocked for 30 s names itself on the console (the kernel's
    // hung-task report is an error, which loglevel 4 shows): a stalled guest
    // then says which task waits, where a normal run takes about 10 s.
    let mut append = format!(
        "console=ttyS0 panic=-1 loglevel=4 mitigations=off \
         sysctl.kernel.hung_task_timeout_secs=30 cint.seed={} cint.mib={} \
         cint.reads={} cint.batch={} cint.within_us={} cint.disks={}",
        cfg.seed,
        cfg.mib,
        cfg.reads,
        cfg.batch,
        cfg.within_us,
        disks.len()
    );
    if let Some(seconds) = cfg.flood_seconds {
        append.push_str(&format!(" cint.flood={seconds}"));
    }
    Boot {
        qemu: pre.qemu.clone(),
        kernel: pre.kernel.vmlinuz.clone(),
        initrd,
        append,
        mem_mib: 512,
        vcpus: guest_vcpus(disks.iter().map(|d| d.queues)),
        disks,
        qmp,
        timeout: cfg.timeout,
    }
}

/// The guest's vCPUs for disks with these queue counts: one per queue of
/// the largest disk, so every queue has a CPU of its own (at least one).
pub fn guest_vcpus(queues: impl IntoIterator<Item = u16>) -> u16 {
    queues.into_iter().max().unwrap_or(1).max(1)
}

/// Most queues a disk of a run may have (the guest program's limit).
pub const MAX_QUEUES: u16 = 16;

/// Runs the guest once with `cfg`'s disks, in `work` (a folder the caller
/// owns: sockets, images, initramfs, logs).
pub fn run(cfg: &RunConfig, pre: &Prerequisites, work: &Path) -> Result<RunOutcome> {
    if cfg.disks.is_empty() || cfg.disks.len() > 16 {
        return Err(Error::Failed("a run needs 1 to 16 disks".into()));
    }
    if cfg
        .disks
        .iter()
        .any(|d| d.queues == 0 || d.queues > MAX_QUEUES)
    {
        return Err(Error::Failed(format!(
            "a disk has 1 to {MAX_QUEUES} queues"
        )));
    }
    if cfg.image_mib < 2 * cfg.mib {
        return Err(Error::Failed(
            "images must hold both integrity halves".into(),
        ));
    }
    let started = Instant::now();
    let initrd = build_initrd(pre, work)?;

    let mut backends = Vec::new();
    let mut disks = Vec::new();
    let mut qmps = Vec::new();
    let mut images = Vec::new();
    for (i, spec) in cfg.disks.iter().enumerate() {
        let strategy = &spec.strategy;
        let slot = FIRST_SLOT + i as u8;
        let image = work.join(format!("disk{i}.img"));
        create_image(&image, cfg.image_mib)?;
        let socket = work.join(format!("disk{i}.sock"));
        // vic-sched reads the vCPU's run state through QMP.
        let qmp = (spec.kind() == "vic-sched").then(|| work.join(format!("disk{i}.qmp")));
        let backend = Backend::start(
            &pre.backend,
            &socket,
            &image,
            spec.queues,
            strategy,
            qmp.as_deref(),
            &work.join(format!("disk{i}.stats.json")),
            &work.join(format!("disk{i}.backend.log")),
        )?;
        backends.push(backend);
        disks.push(BootDisk {
            socket,
            slot,
            queues: spec.queues,
        });
        images.push((image, slot));
        qmps.extend(qmp);
    }

    let boot = boot(cfg, pre, initrd, disks, qmps);
    let console = match qemu::run(&boot, &work.join("console.log")) {
        Ok(console) => console,
        Err(e) => {
            // A guest that stalled waits for a completion or an interrupt
            // that never came: say what each back end counted.
            let mut msg = e.to_string();
            for (backend, spec) in backends.into_iter().zip(&cfg.disks) {
                let strategy = &spec.strategy;
                let log = backend.log_tail();
                if !log.is_empty() {
                    let _ = write!(msg, "\nback end {strategy}'s output ends:\n{log}");
                }
                let _ = match backend.stop() {
                    Ok(Some(stats)) => write!(msg, "\nback end {strategy}: {stats:?}"),
                    Ok(None) => Ok(()),
                    Err(e) => write!(msg, "\nback end {strategy}: {e}"),
                };
            }
            return Err(Error::Failed(msg));
        }
    };
    let guest = guest_output::parse(&console)?;

    let mut outcomes = Vec::new();
    for ((backend, spec), (image, slot)) in backends.into_iter().zip(&cfg.disks).zip(&images) {
        let stats = backend.stop()?;
        let pci = pci_address(*slot);
        let seed = cfg.seed + u64::from(*slot);
        let guest_disk = guest.disks.get(&pci).cloned().unwrap_or_default();
        let mut image_check = check_image(image, seed, cfg.mib << 20)?;
        if let Some(q) = &guest_disk.queue_phase {
            image_check.queue_region_mismatches =
                Some(check_region(image, seed, q.start, q.bytes)?);
        }
        outcomes.push(DiskOutcome {
            strategy: spec.strategy.clone(),
            queues: spec.queues,
            guest: guest_disk,
            pci,
            image: image_check,
            backend: stats,
        });
    }
    Ok(RunOutcome {
        disks: outcomes,
        guest,
        console,
        elapsed: started.elapsed(),
    })
}

/// One line per queue of a multi-queue disk: what the guest and the back
/// end counted on it.
fn queue_lines(d: &DiskOutcome) -> String {
    let mut s = String::new();
    let phase = d.guest.queue_phase.clone().unwrap_or_default();
    for q in 0..usize::from(d.queues) {
        let be = d.backend.as_ref().and_then(|b| b.queues.get(q));
        let show = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        let pinned = phase.per_queue.get(q);
        let _ = writeln!(
            s,
            "  queue {q}: guest-irq {} (to cpu {}) be-sent {} be-wanted {} be-suppr {} urgent {} \
             be-requests {} | pinned to cpu {}: {} requests, {} irqs",
            show(d.guest.queue_irqs.get(q).copied()),
            show(d.guest.queue_irq_cpus.get(q).copied().flatten()),
            show(be.map(|b| b.irqs_sent)),
            show(be.map(|b| b.irqs_wanted)),
            show(be.map(|b| b.irqs_suppressed)),
            show(be.map(|b| b.urgent_irqs)),
            show(be.map(|b| b.requests)),
            show(pinned.map(|p| p.cpu)),
            show(pinned.map(|p| p.requests)),
            show(pinned.map(|p| p.irqs)),
        );
    }
    s
}

/// Reads the integrity region of `image` back (two halves of `half`
/// bytes) and compares it with the pattern the guest wrote with `seed`.
pub fn check_image(image: &Path, seed: u64, half: u64) -> Result<ImageCheck> {
    let data = read_region(image, 0, 2 * half)?;
    let (direct, buffered) = data.split_at(half as usize);
    Ok(ImageCheck {
        mismatches: pattern::mismatches(seed, 0, &data),
        direct_sum: pattern::fnv1a(pattern::FNV_OFFSET, direct),
        buffered_sum: pattern::fnv1a(pattern::FNV_OFFSET, buffered),
        queue_region_mismatches: None,
    })
}

/// Bytes of `image` in `[start, start + len)` that differ from the pattern
/// with `seed`. A region past the image's end is an error, not a match.
pub fn check_region(image: &Path, seed: u64, start: u64, len: u64) -> Result<u64> {
    let data = read_region(image, start, len)?;
    Ok(pattern::mismatches(seed, start, &data))
}

/// The `len` bytes of `image` from `start`; a region past the image's end
/// is an error.
fn read_region(image: &Path, start: u64, len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len)
        .map_err(|_| Error::Failed(format!("region of {len} bytes is too large")))?;
    let mut data = vec![0u8; len];
    File::open(image)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(start))?;
            f.read_exact(&mut data)
        })
        .map_err(|e| Error::io("reading", image, e))?;
    Ok(data)
}

impl RunOutcome {
    /// A table of the run's figures, one row per strategy.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<30} {:>2} {:>8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} | {:>6} {:>6} {:>7} {:>7} {:>8} {:>8} {:>8} | integrity",
            "strategy",
            "q",
            "requests",
            "guest-irq",
            "be-sent",
            "be-wanted",
            "be-suppr",
            "urgent",
            "irq/req",
            "rt-ops",
            "batch",
            "m-irqs",
            "m-reqs",
            "rt-p50us",
            "rt-p90us",
            "rt-fast",
        );
        for d in &self.disks {
            let g = &d.guest;
            let b = d.backend.clone().unwrap_or_default();
            let m = g.mixed.clone().unwrap_or_default();
            let reqs = g.total_requests.unwrap_or(0);
            let irqs = g.total_irqs.unwrap_or(0);
            let per = if reqs > 0 {
                format!("{:.3}", irqs as f64 / reqs as f64)
            } else {
                "-".into()
            };
            let queue_region_ok = d.image.queue_region_mismatches.unwrap_or(0) == 0
                && g.queue_phase.as_ref().is_none_or(|q| q.ok);
            let integrity = match &g.integrity {
                Some(i) if i.ok && d.image.mismatches == 0 && queue_region_ok => "ok".to_string(),
                Some(i) if i.ok && d.image.mismatches == 0 => format!(
                    "FAILED in the queues phase: guest {} / image {} bytes differ",
                    g.queue_phase.as_ref().map_or(0, |q| q.mismatches),
                    d.image.queue_region_mismatches.unwrap_or(0)
                ),
                Some(i) => format!(
                    "FAILED guest {} / image {} bytes differ",
                    i.mismatches, d.image.mismatches
                ),
                None => "not run".into(),
            };
            let backend = |v: u64| {
                if d.backend.is_some() {
                    v.to_string()
                } else {
                    "-".into()
                }
            };
            let _ = writeln!(
                s,
                "{:<30} {:>2} {:>8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} | {:>6} {:>6} {:>7} {:>7} {:>8} {:>8} {:>8} | {}",
                d.strategy,
                d.queues,
                reqs,
                irqs,
                backend(b.irqs_sent),
                backend(b.irqs_wanted),
                backend(b.irqs_suppressed),
                backend(b.urgent_irqs),
                per,
                m.reader_ops,
                m.batch_ops,
                m.irqs,
                m.requests,
                m.reader_p50_us,
                m.reader_p90_us,
                m.reader_within,
                integrity
            );
            if d.queues > 1 {
                s.push_str(&queue_lines(d));
            }
        }
        // Where each disk's queue vectors interrupt: vic-sched samples vCPU
        // `queue mod vCPUs`, which a single queue on several vCPUs may miss.
        let vectors: Vec<String> = self
            .disks
            .iter()
            .map(|d| {
                let cpus: Vec<String> = d
                    .guest
                    .queue_irq_cpus
                    .iter()
                    .map(|c| c.map_or_else(|| "?".to_string(), |c| c.to_string()))
                    .collect();
                format!("{} [{}]", d.pci, cpus.join(","))
            })
            .collect();
        let _ = writeln!(s, "queue vectors' CPUs: {}", vectors.join(" "));
        let _ = writeln!(
            s,
            "q: queues; guest-irq: interrupts on the disk's queue vectors in the guest; be-*: the \
             back end's counters; mixed phase (m-): an RT reader beside batch readers, rt-fast = \
             RT reads faster than {} us; per queue: the queues phase's pinned threads\nrun took \
             {:.1} s",
            self.disks
                .iter()
                .find_map(|d| d.guest.mixed.as_ref().map(|m| m.within_us))
                .unwrap_or(0),
            self.elapsed.as_secs_f64()
        );
        s
    }
}
