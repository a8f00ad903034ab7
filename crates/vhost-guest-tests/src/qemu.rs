//! Booting the guest: QEMU with TCG (CI has no KVM), shared memfd memory
//! (vhost-user maps the guest's RAM), one vhost-user-blk-pci device per
//! back-end socket at a fixed PCI slot with its number of queues, and the
//! serial console in a file.

use crate::backend::tail;
use crate::error::{Error, Result};
use cint_test_support::process::Watched;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to boot the guest.
#[derive(Debug, Clone)]
pub struct Boot {
    /// `qemu-system-x86_64`.
    pub qemu: PathBuf,
    /// Kernel image.
    pub kernel: PathBuf,
    /// Initramfs.
    pub initrd: PathBuf,
    /// Kernel command line.
    pub append: String,
    /// Guest RAM in MiB.
    pub mem_mib: u32,
    /// Virtual CPUs. Linux uses min(queues, vCPUs) queues of a disk.
    pub vcpus: u16,
    /// The disks.
    pub disks: Vec<BootDisk>,
    /// QMP sockets for QEMU to create (one per vic-sched back end: a QMP
    /// server takes one client).
    pub qmp: Vec<PathBuf>,
    /// Longest the guest may run before it is killed.
    pub timeout: Duration,
}

/// One vhost-user-blk disk of the guest.
#[derive(Debug, Clone)]
pub struct BootDisk {
    /// The back end's socket.
    pub socket: PathBuf,
    /// Its PCI slot.
    pub slot: u8,
    /// Its virtqueues (QEMU's `num-queues`; at most the back end's).
    pub queues: u16,
}

/// A QEMU process booting or running the guest.
#[derive(Debug)]
pub struct Guest {
    /// Killed and reaped on drop: a guest left running by an early error
    /// must not outlive the run.
    child: Watched,
    serial: PathBuf,
    qemu_log: PathBuf,
    qemu: PathBuf,
}

impl Guest {
    /// Starts QEMU; the serial console goes to `serial`, QEMU's own output
    /// beside it (`*.qemu.log`).
    pub fn spawn(boot: &Boot, serial: &Path) -> Result<Self> {
        let mut cmd = Command::new(&boot.qemu);
        let mem = format!("{}M", boot.mem_mib);
        let vcpus = boot.vcpus.max(1).to_string();
        cmd.args(["-machine", "q35,accel=tcg", "-smp", &vcpus, "-m", &mem])
            .args([
                "-object",
                &format!("memory-backend-memfd,id=mem,size={mem},share=on"),
            ])
            .args(["-numa", "node,memdev=mem"])
            .args(["-nodefaults", "-no-reboot", "-display", "none"])
            .arg("-kernel")
            .arg(&boot.kernel)
            .arg("-initrd")
            .arg(&boot.initrd)
            .args(["-append", &boot.append])
            .arg("-serial")
            .arg(format!("file:{}", serial.display()));
        for (i, disk) in boot.disks.iter().enumerate() {
            cmd.arg("-chardev")
                .arg(format!("socket,id=vu{i},path={}", disk.socket.display()))
                .arg("-device")
                .arg(format!(
                    "vhost-user-blk-pci,chardev=vu{i},num-queues={},addr={:#x}",
                    disk.queues, disk.slot
                ));
        }
        for qmp in &boot.qmp {
            cmd.arg("-qmp")
                .arg(format!("unix:{},server=on,wait=off", qmp.display()));
        }
        let qemu_log = serial.with_extension("qemu.log");
        let log =
            std::fs::File::create(&qemu_log).map_err(|e| Error::io("creating", &qemu_log, e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| Error::io("opening", &qemu_log, e))?;
        crate::backend::die_with_parent(&mut cmd);
        let child = Watched::spawn("QEMU", cmd.stdin(Stdio::null()).stdout(log).stderr(log2))
            .map_err(|e| Error::io("starting", &boot.qemu, e))?;
        Ok(Guest {
            child,
            serial: serial.to_path_buf(),
            qemu_log,
            qemu: boot.qemu.clone(),
        })
    }

    /// Waits until a console line satisfies `wanted` and returns it.
    /// Fails if QEMU exits first or `limit` passes.
    pub fn wait_for_line(
        &mut self,
        limit: Duration,
        mut wanted: impl FnMut(&str) -> bool,
    ) -> Result<String> {
        let start = Instant::now();
        loop {
            // The file may end mid-line: only whole lines are looked at.
            let text = std::fs::read_to_string(&self.serial).unwrap_or_default();
            let whole = text.rfind('\n').map_or("", |end| &text[..end]);
            if let Some(line) = whole.lines().find(|l| wanted(l)) {
                return Ok(line.trim_end_matches('\r').to_string());
            }
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(|e| Error::io("waiting for", &self.qemu, e))?
            {
                return Err(Error::Failed(format!(
                    "QEMU exited ({status}) before the console showed the expected line; console ends:\n{}",
                    tail(&self.serial)
                )));
            }
            if start.elapsed() > limit {
                return Err(Error::Failed(format!(
                    "the console did not show the expected line within {limit:?}; console ends:\n{}",
                    tail(&self.serial)
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILLs QEMU (a front end dying with requests in flight) and reaps it.
    pub fn kill(mut self) -> Result<()> {
        self.child
            .kill()
            .map_err(|e| Error::io("killing", &self.qemu, e))?;
        Ok(())
    }

    /// Waits for the guest to power off and returns the serial console's
    /// text; QEMU is killed if it runs longer than `timeout`.
    pub fn wait(mut self, timeout: Duration) -> Result<String> {
        let exited = self
            .child
            .wait_timeout(timeout, Duration::from_millis(100))
            .map_err(|e| Error::io("waiting for", &self.qemu, e))?;
        let Some(status) = exited else {
            let _ = self.child.kill();
            return Err(Error::Failed(format!(
                "guest did not power off within {timeout:?}; console ends:\n{}\nQEMU's output ends:\n{}",
                tail(&self.serial),
                tail(&self.qemu_log)
            )));
        };
        let console = std::fs::read_to_string(&self.serial)
            .map_err(|e| Error::io("reading", &self.serial, e))?;
        if !status.success() {
            return Err(Error::Failed(format!(
                "QEMU exited with {status}: {}\nconsole ends:\n{}",
                tail(&self.qemu_log),
                tail(&self.serial)
            )));
        }
        Ok(console)
    }
}

/// Runs the guest to its power-off and returns the serial console's text,
/// also left in `serial`.
pub fn run(boot: &Boot, serial: &Path) -> Result<String> {
    Guest::spawn(boot, serial)?.wait(boot.timeout)
}
