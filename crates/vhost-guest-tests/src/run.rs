//! One guest run: a back end per strategy, each serving its own image as a
//! disk of one QEMU guest, the guest's workload on every disk, then the
//! host's checks of the images and the back ends' counters.

use crate::backend::{which, Backend, BackendKind, BackendStats};
use crate::error::{Error, Result};
use crate::guest_output::{self, GuestDisk, GuestReport};
use crate::initramfs;
use crate::kernel::{self, Kernel};
use crate::pattern;
use crate::qemu::{self, Boot};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The first disk's PCI slot; disk `i` sits at `FIRST_SLOT + i`.
pub const FIRST_SLOT: u8 = 0x10;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// One disk per strategy spec (`cint vhost --strategy` syntax).
    pub strategies: Vec<String>,
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
            strategies: default_strategies(),
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

/// The strategies of the end-to-end test. `adaptive` and `cinterrupts`
/// share `delta` and `thr`, so the urgent hint is their only difference;
/// `thr` is above the guest's requests in flight (batch + 1), so without
/// a hint a completion waits for `delta` of quiet.
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
}

/// One disk's results from the guest, the image and the back end.
#[derive(Debug, Clone)]
pub struct DiskOutcome {
    /// The strategy its back end ran.
    pub strategy: String,
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

/// How to boot the guest for `cfg`'s workload on `disks` (`(socket, PCI
/// slot)`, one per strategy), with `qmp` sockets for vic-sched back ends.
pub fn boot(
    cfg: &RunConfig,
    pre: &Prerequisites,
    initrd: PathBuf,
    disks: Vec<(PathBuf, u8)>,
    qmp: Vec<PathBuf>,
) -> Boot {
    let mut append = format!(
        "console=ttyS0 panic=-1 loglevel=4 mitigations=off cint.seed={} cint.mib={} \
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
        disks,
        qmp,
        timeout: cfg.timeout,
    }
}

/// Runs the guest once with a disk per strategy, in `work` (a folder the
/// caller owns: sockets, images, initramfs, logs).
pub fn run(cfg: &RunConfig, pre: &Prerequisites, work: &Path) -> Result<RunOutcome> {
    if cfg.strategies.is_empty() || cfg.strategies.len() > 16 {
        return Err(Error::Failed("a run needs 1 to 16 strategies".into()));
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
    for (i, strategy) in cfg.strategies.iter().enumerate() {
        let slot = FIRST_SLOT + i as u8;
        let image = work.join(format!("disk{i}.img"));
        create_image(&image, cfg.image_mib)?;
        let socket = work.join(format!("disk{i}.sock"));
        // vic-sched reads the vCPU's run state through QMP.
        let qmp = (strategy.split(',').next() == Some("vic-sched"))
            .then(|| work.join(format!("disk{i}.qmp")));
        let backend = Backend::start(
            &pre.backend,
            &socket,
            &image,
            strategy,
            qmp.as_deref(),
            &work.join(format!("disk{i}.stats.json")),
            &work.join(format!("disk{i}.backend.log")),
        )?;
        backends.push(backend);
        disks.push((socket, slot));
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
            for (backend, strategy) in backends.into_iter().zip(&cfg.strategies) {
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
    for ((backend, strategy), (image, slot)) in
        backends.into_iter().zip(&cfg.strategies).zip(&images)
    {
        let stats = backend.stop()?;
        let pci = pci_address(*slot);
        let seed = cfg.seed + u64::from(*slot);
        outcomes.push(DiskOutcome {
            strategy: strategy.clone(),
            guest: guest.disks.get(&pci).cloned().unwrap_or_default(),
            pci,
            image: check_image(image, seed, cfg.mib << 20)?,
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

/// Reads the integrity region of `image` back (two halves of `half`
/// bytes) and compares it with the pattern the guest wrote with `seed`.
pub fn check_image(image: &Path, seed: u64, half: u64) -> Result<ImageCheck> {
    let mut data = vec![0u8; 2 * half as usize];
    File::open(image)
        .and_then(|mut f| f.read_exact(&mut data))
        .map_err(|e| Error::io("reading", image, e))?;
    let (direct, buffered) = data.split_at(half as usize);
    Ok(ImageCheck {
        mismatches: pattern::mismatches(seed, 0, &data),
        direct_sum: pattern::fnv1a(pattern::FNV_OFFSET, direct),
        buffered_sum: pattern::fnv1a(pattern::FNV_OFFSET, buffered),
    })
}

impl RunOutcome {
    /// A table of the run's figures, one row per strategy.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<30} {:>8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} | {:>6} {:>6} {:>7} {:>7} {:>8} {:>8} {:>8} | integrity",
            "strategy",
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
            let integrity = match &g.integrity {
                Some(i) if i.ok && d.image.mismatches == 0 => "ok".to_string(),
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
                "{:<30} {:>8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} | {:>6} {:>6} {:>7} {:>7} {:>8} {:>8} {:>8} | {}",
                d.strategy,
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
        }
        let _ = writeln!(
            s,
            "guest-irq: interrupts on the disk's queue vector in the guest; be-*: the back end's \
             counters; mixed phase (m-): an RT reader beside batch readers, rt-fast = RT reads \
             faster than {} us\nrun took {:.1} s",
            self.disks
                .iter()
                .find_map(|d| d.guest.mixed.as_ref().map(|m| m.within_us))
                .unwrap_or(0),
            self.elapsed.as_secs_f64()
        );
        s
    }
}
