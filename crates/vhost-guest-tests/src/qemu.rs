//! Booting the guest: QEMU with TCG (CI has no KVM), shared memfd memory
//! (vhost-user maps the guest's RAM), one vhost-user-blk-pci device per
//! back-end socket at a fixed PCI slot, and the serial console in a file.

use crate::backend::tail;
use crate::error::{Error, Result};
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
    /// `(socket, PCI slot)` of each disk.
    pub disks: Vec<(PathBuf, u8)>,
    /// QMP sockets for QEMU to create (one per vic-sched back end: a QMP
    /// server takes one client).
    pub qmp: Vec<PathBuf>,
    /// Longest the guest may run before it is killed.
    pub timeout: Duration,
}

/// Runs the guest to its power-off and returns the serial console's text,
/// also left in `serial`.
pub fn run(boot: &Boot, serial: &Path) -> Result<String> {
    let mut cmd = Command::new(&boot.qemu);
    let mem = format!("{}M", boot.mem_mib);
    cmd.args(["-machine", "q35,accel=tcg", "-smp", "1", "-m", &mem])
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
    for (i, (socket, slot)) in boot.disks.iter().enumerate() {
        cmd.arg("-chardev")
            .arg(format!("socket,id=vu{i},path={}", socket.display()))
            .arg("-device")
            .arg(format!(
                "vhost-user-blk-pci,chardev=vu{i},num-queues=1,addr={slot:#x}"
            ));
    }
    for qmp in &boot.qmp {
        cmd.arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", qmp.display()));
    }
    let qemu_log = serial.with_extension("qemu.log");
    let log = std::fs::File::create(&qemu_log).map_err(|e| Error::io("creating", &qemu_log, e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| Error::io("opening", &qemu_log, e))?;
    crate::backend::die_with_parent(&mut cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| Error::io("starting", &boot.qemu, e))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::io("waiting for", &boot.qemu, e))?
        {
            break status;
        }
        if start.elapsed() > boot.timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Failed(format!(
                "guest did not power off within {:?}; console ends:\n{}",
                boot.timeout,
                tail(serial)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let console = std::fs::read_to_string(serial).map_err(|e| Error::io("reading", serial, e))?;
    if !status.success() {
        return Err(Error::Failed(format!(
            "QEMU exited with {status}: {}\nconsole ends:\n{}",
            tail(&qemu_log),
            tail(serial)
        )));
    }
    Ok(console)
}
