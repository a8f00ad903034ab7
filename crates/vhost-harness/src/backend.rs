//! Starting and stopping back-end processes: ours (`cint vhost`) and the
//! peer (qemu-storage-daemon's vhost-user-blk export).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use cint_test_support::process::{WaitError, Watched};

use crate::Error;

/// The image a back end serves.
#[derive(Clone, Debug)]
pub enum Image {
    /// A null device of this many bytes: no backing I/O.
    Null(u64),
    /// A raw image file.
    File(PathBuf),
}

/// A running back end, killed and reaped when dropped.
pub struct BackendProcess {
    /// What the reports call it.
    pub name: String,
    /// Its vhost-user socket.
    pub socket: PathBuf,
    child: Option<Watched>,
}

impl BackendProcess {
    /// Starts `cmd` and waits (up to `timeout`) until `socket` exists as a
    /// socket: the readiness signal both back ends give. It does not
    /// connect, because a back end without `--reconnect` exits when its
    /// first front end leaves.
    pub fn spawn(
        name: &str,
        mut cmd: Command,
        socket: &Path,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let _ = std::fs::remove_file(socket);
        cmd.stdin(Stdio::null());
        let mut child = Watched::spawn(name, &mut cmd)
            .map_err(|e| Error::Process(format!("starting {name} ({cmd:?}): {e}")))?;
        let ready = child.wait_until(timeout, Duration::from_millis(20), || {
            std::fs::metadata(socket).is_ok_and(|m| m.file_type().is_socket())
        });
        match ready {
            Ok(()) => Ok(Self {
                name: name.to_string(),
                socket: socket.to_path_buf(),
                child: Some(child),
            }),
            Err(WaitError::Exited(status)) => Err(Error::Process(format!(
                "{name} exited ({status}) before creating {}",
                socket.display()
            ))),
            Err(WaitError::TimedOut) => Err(Error::Process(format!(
                "{name} did not create {} within {timeout:?}",
                socket.display()
            ))),
            Err(WaitError::Io(e)) => Err(Error::Process(format!("{name}: {e}"))),
        }
    }

    /// The process id (for CPU accounting).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Its exit status if it has exited.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, Error> {
        match self.child.as_mut() {
            Some(c) => c
                .try_wait()
                .map_err(|e| Error::Process(format!("{}: {e}", self.name))),
            None => Ok(None),
        }
    }

    /// Whether it is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.try_wait(), Ok(None))
    }

    /// Waits up to `timeout` for the process to exit by itself (ours does
    /// when its front end disconnects and `--reconnect` is not given);
    /// kills it and fails after that.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, Error> {
        let child = self.take_child()?;
        self.reap_within(child, timeout, "of its front end leaving")
    }

    /// Sends SIGTERM and waits up to `timeout` for it to exit (then
    /// SIGKILL); returns how it exited.
    pub fn stop(&mut self, timeout: Duration) -> Result<ExitStatus, Error> {
        let mut child = self.take_child()?;
        child
            .signal(libc::SIGTERM)
            .map_err(|e| Error::Process(format!("{}: {e}", self.name)))?;
        self.reap_within(child, timeout, "of SIGTERM")
    }

    fn take_child(&mut self) -> Result<Watched, Error> {
        self.child
            .take()
            .ok_or_else(|| Error::Process(format!("{} already stopped", self.name)))
    }

    /// Reaps `child` once it exits; kills it (on drop) and fails if that
    /// takes longer than `timeout` after `what`.
    fn reap_within(
        &self,
        mut child: Watched,
        timeout: Duration,
        what: &str,
    ) -> Result<ExitStatus, Error> {
        child
            .wait_timeout(timeout, Duration::from_millis(10))
            .map_err(|e| Error::Process(format!("{}: {e}", self.name)))?
            .ok_or_else(|| {
                Error::Process(format!(
                    "{} did not exit within {timeout:?} {what}",
                    self.name
                ))
            })
    }
}

/// The peer: qemu-storage-daemon exporting `image` over vhost-user-blk.
pub fn qsd_command(
    qsd: &Path,
    socket: &Path,
    image: &Image,
    queues: u16,
    writable: bool,
) -> Command {
    let mut cmd = Command::new(qsd);
    let blockdev = match image {
        // read-zeroes=on: reads return zeros, as `cint vhost`'s `null:`
        // image does, so both back ends do the same work per read.
        Image::Null(size) => {
            format!("driver=null-co,node-name=disk0,size={size},read-zeroes=on")
        }
        Image::File(path) => format!("driver=file,node-name=disk0,filename={}", path.display()),
    };
    cmd.arg("--blockdev").arg(blockdev).arg("--export").arg(format!(
        "type=vhost-user-blk,id=exp0,node-name=disk0,addr.type=unix,addr.path={},writable={},num-queues={queues}",
        socket.display(),
        if writable { "on" } else { "off" }
    ));
    cmd
}

/// Ours: `cint vhost` with a strategy spec (as `--strategy` takes it).
pub fn cint_command(
    cint: &Path,
    socket: &Path,
    image: &Image,
    strategy: &str,
    queues: u16,
    queue_size: u16,
) -> Command {
    let mut cmd = Command::new(cint);
    let image = match image {
        Image::Null(size) => format!("null:{size}"),
        Image::File(path) => path.display().to_string(),
    };
    cmd.arg("vhost")
        .arg("--socket")
        .arg(socket)
        .arg("--image")
        .arg(image)
        .arg("--queues")
        .arg(queues.to_string())
        .arg("--queue-size")
        .arg(queue_size.to_string())
        .arg("--strategy")
        .arg(strategy);
    cmd
}

/// qemu-storage-daemon from `PATH`, if installed.
pub fn find_qsd() -> Option<PathBuf> {
    find_in_path("qemu-storage-daemon")
}

/// The `cint` binary: `$CINT_BIN`, else the one cargo built next to the
/// running executable (tests and benches run from `target/<profile>/deps`).
pub fn find_cint() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CINT_BIN") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join("cint"))
        .find(|p| p.is_file())
}

/// Whether `cint` has the `vhost` subcommand (a build from before the back
/// end existed does not).
pub fn has_vhost_subcommand(cint: &Path) -> bool {
    Command::new(cint)
        .args(["vhost", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}
