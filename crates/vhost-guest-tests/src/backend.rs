//! The vhost-user-blk back ends the guest's disks are served by: `cint
//! vhost` (one process per disk, each with its own policy) or, to check the
//! guest path against a reference peer, qemu-storage-daemon.

use crate::error::{Error, Result};
use cint_test_support::process::Watched;
use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// Whether cargo's dependency file beside `bin` (`cint.d`) shows a source
/// newer than the binary, or is missing.
pub fn is_stale(bin: &Path) -> bool {
    let (Ok(built), Ok(deps)) = (
        std::fs::metadata(bin).and_then(|m| m.modified()),
        std::fs::read_to_string(bin.with_extension("d")),
    ) else {
        return true;
    };
    let Some((_, sources)) = deps.split_once(": ") else {
        return true;
    };
    dep_paths(sources).iter().any(|source| {
        std::fs::metadata(source)
            .and_then(|m| m.modified())
            .map_or(true, |t| t > built)
    })
}

/// The paths of a make-style dependency list (spaces in names are `\ `).
fn dep_paths(list: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = list.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' | '\n' => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out
}

/// Under cargo (`cargo run` and `cargo test` set `CARGO` for what they
/// start) and without `CINT_BIN`, builds the `cint` binary with the same
/// cargo when it is missing or older than its sources, so a run never
/// starts a stale back end. `cargo test --workspace` has built it already;
/// building it again here with `-p cint` alone could resolve other features
/// and rebuild, so a current binary is left alone.
pub fn build_cint_under_cargo() -> Result<()> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Ok(());
    };
    if std::env::var_os("CINT_BIN").is_some() {
        return Ok(());
    }
    if cint_binary().is_ok_and(|bin| !is_stale(&bin)) {
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("locating", "current exe", e))?;
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--quiet", "-p", "cint", "--bin", "cint"]);
    // Build into the profile folder this program runs from.
    if exe
        .ancestors()
        .any(|a| a.file_name().is_some_and(|n| n == "release"))
    {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .map_err(|e| Error::io("running", PathBuf::from(&cargo), e))?;
    if !status.success() {
        return Err(Error::Failed(format!("building cint failed ({status})")));
    }
    Ok(())
}

/// Makes `cmd`'s process die with the thread that starts it, so a run
/// killed midway (a test's timeout, Ctrl-C on the demo) leaves no QEMU or
/// back end behind.
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: runs in the child between fork and exec; prctl is
    // async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The counters a `cint vhost` back end wrote to its `--stats-json` file
/// (the `totals` object, and each queue's).
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
    /// Interrupts fired for an Urgent request completion.
    pub urgent_irqs: u64,
    /// Requests the back end held when it wrote the document (a stalled
    /// guest with this above 0 waits on the back end's I/O).
    pub in_flight: u64,
    /// Used entries not yet covered by an interrupt decision when the
    /// document was written (a stalled guest with this above 0 waits on
    /// an interrupt the policy still holds).
    pub unsignalled: u64,
    /// The same counters for each virtqueue, in queue order (`strategy`
    /// left empty).
    pub queues: Vec<BackendStats>,
}

impl BackendStats {
    /// Parses a stats document.
    pub fn parse(text: &str) -> Result<Self> {
        let doc: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::Failed(format!("back end stats are not JSON: {e}")))?;
        let mut totals = Self::counters(&doc["totals"], "totals")?;
        totals.strategy = doc["strategy"].as_str().unwrap_or_default().to_string();
        let queues = doc["queues"]
            .as_array()
            .ok_or_else(|| Error::Failed("back end stats lack queues".into()))?;
        for (i, q) in queues.iter().enumerate() {
            let what = format!("queues[{i}]");
            if q["queue"].as_u64() != Some(i as u64) {
                return Err(Error::Failed(format!(
                    "back end stats: {what} is not queue {i}"
                )));
            }
            totals.queues.push(Self::counters(q, &what)?);
        }
        Ok(totals)
    }

    /// The counters of one object of the document (`what` names it in
    /// errors).
    fn counters(obj: &serde_json::Value, what: &str) -> Result<Self> {
        let field = |name: &str| {
            obj[name]
                .as_u64()
                .ok_or_else(|| Error::Failed(format!("back end stats lack {what}.{name}")))
        };
        Ok(BackendStats {
            strategy: String::new(),
            requests: field("requests")?,
            read_bytes: field("read_bytes")?,
            write_bytes: field("write_bytes")?,
            irqs_wanted: field("irqs_wanted")?,
            irqs_sent: field("irqs_sent")?,
            irqs_suppressed: field("irqs_suppressed")?,
            urgent_irqs: field("urgent_irqs")?,
            in_flight: field("in_flight")?,
            unsignalled: field("unsignalled")?,
            queues: Vec::new(),
        })
    }
}

/// Descriptors and threads a back-end process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Entries of `/proc/PID/fd`.
    pub fds: usize,
    /// `Threads:` of `/proc/PID/status`.
    pub threads: usize,
}

/// A running back end serving one disk.
#[derive(Debug)]
pub struct Backend {
    /// Killed and reaped on drop: a back end left running by an early
    /// error must not outlive the run.
    child: Watched,
    socket: PathBuf,
    stats: Option<PathBuf>,
    log: PathBuf,
    stops_on_disconnect: bool,
}

impl Backend {
    /// Starts a back end for `image` on `socket` with `queues` virtqueues,
    /// `strategy` and, for vic-sched, QEMU's QMP socket `qmp` (both
    /// ignored by qemu-storage-daemon); its output goes to `log`. Returns
    /// once the socket exists.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        kind: &BackendKind,
        socket: &Path,
        image: &Path,
        queues: u16,
        strategy: &str,
        qmp: Option<&Path>,
        stats: &Path,
        log: &Path,
    ) -> Result<Self> {
        Self::start_with(
            kind, socket, image, queues, strategy, qmp, stats, log, false,
        )
    }

    /// As [`Backend::start`], and with `reconnect` a `cint vhost` back end
    /// gets `--reconnect`: it outlives its front end and waits for the next
    /// (its [`Backend::stop`] then sends SIGTERM at once).
    #[allow(clippy::too_many_arguments)]
    pub fn start_with(
        kind: &BackendKind,
        socket: &Path,
        image: &Path,
        queues: u16,
        strategy: &str,
        qmp: Option<&Path>,
        stats: &Path,
        log: &Path,
        reconnect: bool,
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
                    .args(["--queues", &queues.to_string()])
                    .args(["--strategy", strategy])
                    .arg("--stats-json")
                    .arg(stats);
                if let Some(qmp) = qmp {
                    cmd.arg("--qmp").arg(qmp);
                }
                if reconnect {
                    cmd.arg("--reconnect");
                }
                (cmd, Some(stats.to_path_buf()), !reconnect)
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
                        "type=vhost-user-blk,id=export,node-name=disk,writable=on,num-queues={queues},addr.type=unix,addr.path={}",
                        socket.display()
                    ));
                (cmd, None, false)
            }
        };
        die_with_parent(&mut cmd);
        let child = Watched::spawn(
            "the back end",
            cmd.stdin(Stdio::null()).stdout(out).stderr(err),
        )
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

    /// The back end's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The vhost-user socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The back end's output so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last lines of the back end's output so far.
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    /// Waits until the back end's output holds `line` at least `times`
    /// times (each a whole line), or fails after `limit` or if it exits.
    pub fn wait_for_log(&mut self, line: &str, times: usize, limit: Duration) -> Result<()> {
        self.wait_until(limit, &format!("logging \"{line}\" {times} time(s)"), |b| {
            Ok(b.log_text().lines().filter(|l| *l == line).count() >= times)
        })
    }

    /// Waits up to `limit` for the back end to exit by itself; `None` if it
    /// is still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Result<Option<std::process::ExitStatus>> {
        self.child
            .wait_timeout(limit, Duration::from_millis(20))
            .map_err(|e| Error::io("waiting for", &self.socket, e))
    }

    /// Sends SIGTERM (if still running) and waits up to `limit` for the
    /// exit; `None` if it did not exit.
    pub fn terminate(&mut self, limit: Duration) -> Result<Option<std::process::ExitStatus>> {
        self.child
            .signal(libc::SIGTERM)
            .map_err(|e| Error::io("signalling", &self.socket, e))?;
        self.wait_exit(limit)
    }

    /// What the process holds: open descriptors and threads, from /proc.
    pub fn resources(&self) -> Result<Resources> {
        let proc = PathBuf::from(format!("/proc/{}", self.child.id()));
        let fds = std::fs::read_dir(proc.join("fd"))
            .map_err(|e| Error::io("listing", proc.join("fd"), e))?
            .count();
        let status = proc.join("status");
        let text =
            std::fs::read_to_string(&status).map_err(|e| Error::io("reading", &status, e))?;
        let threads = text
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| Error::Failed(format!("no Threads: line in {}", status.display())))?;
        Ok(Resources { fds, threads })
    }

    /// Waits until one of the back end's threads is blocked accepting a
    /// front end on its socket (what `cint vhost` does between
    /// connections), read from `/proc/PID/task/*/syscall`; fails after
    /// `limit`.
    pub fn wait_accepting(&mut self, limit: Duration) -> Result<()> {
        let tasks = PathBuf::from(format!("/proc/{}/task", self.child.id()));
        self.wait_until(limit, "waiting for a front end", |_| {
            Ok(std::fs::read_dir(&tasks)
                .map_err(|e| Error::io("listing", &tasks, e))?
                .flatten()
                .any(|task| {
                    std::fs::read_to_string(task.path().join("syscall")).is_ok_and(|text| {
                        text.split_whitespace()
                            .next()
                            .and_then(|n| n.parse::<libc::c_long>().ok())
                            .is_some_and(|n| n == libc::SYS_accept || n == libc::SYS_accept4)
                    })
                }))
        })
    }

    /// Waits for the socket to appear. Connecting to test it would count as
    /// the front end, so only its existence is checked.
    fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let what = format!("its socket {} existing", self.socket.display());
        self.wait_until(limit, &what, |b| {
            Ok(std::fs::metadata(&b.socket).is_ok_and(|m| m.file_type().is_socket()))
        })
    }

    /// Polls `reached` every 20 ms until it holds; fails, with the tail of
    /// the back end's output, if the back end exits first or `limit`
    /// passes.
    fn wait_until(
        &mut self,
        limit: Duration,
        what: &str,
        mut reached: impl FnMut(&Self) -> Result<bool>,
    ) -> Result<()> {
        let start = Instant::now();
        loop {
            if reached(self)? {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::Failed(format!(
                    "back end exited with {status} before {what}: {}",
                    tail(&self.log)
                )));
            }
            if start.elapsed() > limit {
                return Err(Error::Failed(format!(
                    "back end did not reach \"{what}\" within {limit:?}: {}",
                    tail(&self.log)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the back end once the front end is gone and returns its
    /// counters. `cint vhost` exits by itself (and writes its stats) when
    /// QEMU disconnects; it gets SIGTERM if it has not after a while.
    pub fn stop(mut self) -> Result<Option<BackendStats>> {
        let poll = Duration::from_millis(20);
        let mut status = if self.stops_on_disconnect {
            self.child
                .wait_timeout(Duration::from_secs(10), poll)
                .ok()
                .flatten()
        } else {
            None
        };
        let exited_alone = status.is_some();
        if status.is_none() {
            let _ = self.child.signal(libc::SIGTERM);
            status = self
                .child
                .wait_timeout(Duration::from_secs(10), poll)
                .ok()
                .flatten();
        }
        let Some(status) = status else {
            let _ = self.child.kill();
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
    fn dependency_lists_split_on_unescaped_spaces() {
        let deps = dep_paths("/a/b.rs /c\\ d/e.rs\n/f.rs ");
        assert_eq!(
            deps,
            vec![
                PathBuf::from("/a/b.rs"),
                PathBuf::from("/c d/e.rs"),
                PathBuf::from("/f.rs")
            ]
        );
    }

    #[test]
    fn a_binary_older_than_a_source_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("cint");
        let src = dir.path().join("main.rs");
        std::fs::write(&src, "fn main() {}").unwrap();
        std::fs::write(&bin, "binary").unwrap();
        assert!(is_stale(&bin), "no dependency file: stale");
        std::fs::write(
            bin.with_extension("d"),
            format!("{}: {}\n", bin.display(), src.display()),
        )
        .unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        File::options()
            .write(true)
            .open(&src)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(!is_stale(&bin));
        File::options()
            .write(true)
            .open(&bin)
            .unwrap()
            .set_modified(old - Duration::from_secs(60))
            .unwrap();
        assert!(is_stale(&bin));
    }

    #[test]
    fn stats_totals_and_queues_are_read() {
        let doc = r#"{"strategy":"cinterrupts","queues":[
            {"queue":0,"requests":4,"read_bytes":1,"write_bytes":0,"irqs_wanted":3,
             "irqs_sent":2,"irqs_suppressed":1,"urgent_irqs":1,"in_flight":0,"unsignalled":1},
            {"queue":1,"requests":6,"read_bytes":0,"write_bytes":2,"irqs_wanted":4,
             "irqs_sent":3,"irqs_suppressed":1,"urgent_irqs":2,"in_flight":2,"unsignalled":0}],
            "totals":{"requests":10,
            "read_bytes":1,"write_bytes":2,"irqs_wanted":7,"irqs_sent":5,
            "irqs_suppressed":2,"urgent_irqs":3,"in_flight":2,"unsignalled":1}}"#;
        let s = BackendStats::parse(doc).unwrap();
        assert_eq!((s.requests, s.irqs_wanted, s.irqs_sent), (10, 7, 5));
        assert_eq!((s.irqs_suppressed, s.urgent_irqs), (2, 3));
        assert_eq!((s.in_flight, s.unsignalled), (2, 1));
        assert_eq!(s.strategy, "cinterrupts");
        assert_eq!(s.queues.len(), 2);
        assert_eq!((s.queues[1].requests, s.queues[1].irqs_sent), (6, 3));
        assert!(BackendStats::parse(r#"{"totals":{}}"#).is_err());
        // Queues out of order, or one lacking a counter, are refused.
        let swapped = doc.replacen(r#""queue":0"#, r#""queue":1"#, 1);
        assert!(BackendStats::parse(&swapped).is_err());
        let short = doc.replacen(r#""irqs_sent":3,"#, "", 1);
        assert!(BackendStats::parse(&short).is_err());
    }
}
