//! The vhost-user-blk back ends the guest's disks are served by: `cint
//! vhost` (one process per disk, each with its own policy) or, to check the
//! guest path against a reference peer, qemu-storage-daemon.

use crate::error::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which program serves the disks.
#[derive(Debug, Clone)]
pub enum BackendKind {
    /// The `cint` binary's `vhost` subcommand.
    Cint(PathBuf),
    /// QEMU's `qemu-storage-daemon` exporting the image as vhost-user-blk;
    /// it has no policies and no counters, so it checks only the guest path.
    StorageDaemon(PathBuf),
}

/// Finds `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The `cint` binary: `$CINT_BIN`, else the one cargo built beside the
/// running executable (`target/<profile>/cint`, whether this runs as
/// `target/<profile>/guest-demo` or as a test in `target/<profile>/deps`).
/// `cargo test --workspace` builds it (the `cint` package has integration
/// tests); for `cargo test -p cint-vhost-guest-tests` alone, build it first
/// with `cargo build --release -p cint`.
pub fn cint_binary() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os("CINT_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("locating", "current exe", e))?;
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("cint"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::Missing(format!(
                "the cint binary beside {} (run `cargo build --release -p cint` or set CINT_BIN)",
                exe.display()
            ))
        })
}

/// The counters a `cint vhost` back end wrote to its `--stats-json` file
/// (the `totals` object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendStats {
    /// The strategy the back end ran, as it names it.
    pub strategy: String,
    /// Requests served.
    pub requests: u64,
    /// Bytes read from the image into the guest.
    pub read_bytes: u64,
    /// Bytes written from the guest to the image.
    pub write_bytes: u64,
    /// Times the policy decided to interrupt.
    pub irqs_wanted: u64,
    /// Call-eventfd writes made.
    pub irqs_sent: u64,
    /// Wanted but suppressed by the driver's `used_event`.
    pub irqs_suppressed: u64,
    /// Interrupts fired for an Urgent completion.
    pub urgent_irqs: u64,
}

impl BackendStats {
    /// Parses a stats document.
    pub fn parse(text: &str) -> Result<Self> {
        let doc: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::Failed(format!("back end stats are not JSON: {e}")))?;
        let totals = &doc["totals"];
        let field = |name: &str| {
            totals[name]
                .as_u64()
                .ok_or_else(|| Error::Failed(format!("back end stats lack totals.{name}")))
        };
        Ok(BackendStats {
            strategy: doc["strategy"].as_str().unwrap_or_default().to_string(),
            requests: field("requests")?,
            read_bytes: field("read_bytes")?,
            write_bytes: field("write_bytes")?,
            irqs_wanted: field("irqs_wanted")?,
            irqs_sent: field("irqs_sent")?,
            irqs_suppressed: field("irqs_suppressed")?,
            urgent_irqs: field("urgent_irqs")?,
        })
    }
}

/// A running back end serving one disk.
#[derive(Debug)]
pub struct Backend {
    child: Child,
    socket: PathBuf,
    stats: Option<PathBuf>,
    log: PathBuf,
    stops_on_disconnect: bool,
}

impl Backend {
    /// Starts a back end for `image` on `socket` with `strategy` (ignored by
    /// qemu-storage-daemon); its output goes to `log`. Returns once the
    /// socket exists.
    pub fn start(
        kind: &BackendKind,
        socket: &Path,
        image: &Path,
        strategy: &str,
        stats: &Path,
        log: &Path,
    ) -> Result<Self> {
        let out = File::create(log).map_err(|e| Error::io("creating", log, e))?;
        let err = out.try_clone().map_err(|e| Error::io("opening", log, e))?;
        let (mut cmd, stats, stops_on_disconnect) = match kind {
            BackendKind::Cint(bin) => {
                let mut cmd = Command::new(bin);
                cmd.arg("vhost")
                    .arg("--socket")
                    .arg(socket)
                    .arg("--image")
                    .arg(image)
                    .args(["--strategy", strategy])
                    .arg("--stats-json")
                    .arg(stats);
                (cmd, Some(stats.to_path_buf()), true)
            }
            BackendKind::StorageDaemon(bin) => {
                let mut cmd = Command::new(bin);
                cmd.arg("--blockdev")
                    .arg(format!(
                        "driver=file,node-name=disk,filename={},cache.direct=off",
                        image.display()
                    ))
                    .arg("--export")
                    .arg(format!(
                        "type=vhost-user-blk,id=export,node-name=disk,writable=on,addr.type=unix,addr.path={}",
                        socket.display()
                    ));
                (cmd, None, false)
            }
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::io("starting", command_name(kind), e))?;
        let mut backend = Backend {
            child,
            socket: socket.to_path_buf(),
            stats,
            log: log.to_path_buf(),
            stops_on_disconnect,
        };
        backend.wait_ready(Duration::from_secs(30))?;
        Ok(backend)
    }

    /// Waits for the socket to appear. Connecting to test it would count as
    /// the front end, so only its existence is checked.
    fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if std::fs::metadata(&self.socket).is_ok_and(|m| m.file_type().is_socket()) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::Failed(format!(
                    "back end exited with {status} before its socket {} existed: {}",
                    self.socket.display(),
                    tail(&self.log)
                )));
            }
            if start.elapsed() > limit {
                return Err(Error::Failed(format!(
                    "back end's socket {} did not appear within {limit:?}",
                    self.socket.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the back end once the front end is gone and returns its
    /// counters. `cint vhost` exits by itself (and writes its stats) when
    /// QEMU disconnects; it gets SIGTERM if it has not after a while.
    pub fn stop(mut self) -> Result<Option<BackendStats>> {
        let pid = self.child.id() as libc::pid_t;
        let wait = |child: &mut Child, limit: Duration| -> Option<std::process::ExitStatus> {
            let start = Instant::now();
            while start.elapsed() < limit {
                if let Ok(Some(status)) = child.try_wait() {
                    return Some(status);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            None
        };
        let mut status = if self.stops_on_disconnect {
            wait(&mut self.child, Duration::from_secs(10))
        } else {
            None
        };
        let exited_alone = status.is_some();
        if status.is_none() {
            // SAFETY: `pid` is our own child, not yet reaped (try_wait saw it
            // running), so the id cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            status = wait(&mut self.child, Duration::from_secs(10));
        }
        let Some(status) = status else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return Err(Error::Failed(format!(
                "back end on {} did not exit after SIGTERM: {}",
                self.socket.display(),
                tail(&self.log)
            )));
        };
        if !status.success() {
            return Err(Error::Failed(format!(
                "back end on {} exited with {status}: {}",
                self.socket.display(),
                tail(&self.log)
            )));
        }
        if self.stops_on_disconnect && !exited_alone {
            return Err(Error::Failed(format!(
                "back end on {} kept running after the front end disconnected",
                self.socket.display()
            )));
        }
        match &self.stats {
            None => Ok(None),
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
                BackendStats::parse(&text).map(Some)
            }
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        // A back end left running by an early error must not outlive the run.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn command_name(kind: &BackendKind) -> PathBuf {
    match kind {
        BackendKind::Cint(p) | BackendKind::StorageDaemon(p) => p.clone(),
    }
}

/// The last lines of a log file, for error messages.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_totals_are_read() {
        let doc = r#"{"strategy":"cinterrupts","queues":[],"totals":{"requests":10,
            "read_bytes":1,"write_bytes":2,"irqs_wanted":7,"irqs_sent":5,
            "irqs_suppressed":2,"urgent_irqs":3}}"#;
        let s = BackendStats::parse(doc).unwrap();
        assert_eq!((s.requests, s.irqs_wanted, s.irqs_sent), (10, 7, 5));
        assert_eq!((s.irqs_suppressed, s.urgent_irqs), (2, 3));
        assert_eq!(s.strategy, "cinterrupts");
        assert!(BackendStats::parse(r#"{"totals":{}}"#).is_err());
    }
}
