//! A child process that cannot outlive its test: polled against a
//! deadline, killed and reaped when the deadline passes or when it is
//! dropped (a failed assertion half-way included).

use std::io;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// How often the child's state is polled while waiting.
const POLL: Duration = Duration::from_millis(10);

/// A child process of a test, killed and reaped on drop if still running.
#[derive(Debug)]
pub struct Watched {
    child: Child,
    /// What messages call it, e.g. `the back end`.
    name: String,
}

/// Why a wait ended without what it waited for.
#[derive(Debug)]
pub enum WaitError {
    /// The child exited first, with this status.
    Exited(ExitStatus),
    /// The time limit passed; the child is still running (a wait that
    /// kills says so in its own result).
    TimedOut,
    /// Polling the child failed.
    Io(io::Error),
}

impl Watched {
    /// Starts `cmd`, called `name` in messages.
    pub fn spawn(name: &str, cmd: &mut Command) -> io::Result<Watched> {
        Ok(Watched::new(name, cmd.spawn()?))
    }

    /// Watches a child started elsewhere.
    pub fn new(name: &str, child: Child) -> Watched {
        Watched {
            child,
            name: name.to_string(),
        }
    }

    /// What messages call it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id; valid while the child is not reaped, which only
    /// this type does.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child, for its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Its exit status if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Sends `signal` if the child is still running (so the id cannot
    /// name another process).
    pub fn signal(&mut self, signal: libc::c_int) -> io::Result<()> {
        if self.child.try_wait()?.is_some() {
            return Ok(());
        }
        // SAFETY: kill(2) on the pid of our own child, not yet reaped
        // (try_wait just saw it running), so the pid is not reused.
        if unsafe { libc::kill(self.child.id() as libc::pid_t, signal) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Polls every `poll` until `reached` holds; fails if the child exits
    /// first or `limit` passes (leaving it running).
    pub fn wait_until(
        &mut self,
        limit: Duration,
        poll: Duration,
        mut reached: impl FnMut() -> bool,
    ) -> Result<(), WaitError> {
        let deadline = Instant::now() + limit;
        loop {
            if reached() {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait().map_err(WaitError::Io)? {
                return Err(WaitError::Exited(status));
            }
            if Instant::now() > deadline {
                return Err(WaitError::TimedOut);
            }
            std::thread::sleep(poll);
        }
    }

    /// Waits up to `limit` for the child to exit; `None` if it is still
    /// running then (it is left running).
    pub fn wait_timeout(
        &mut self,
        limit: Duration,
        poll: Duration,
    ) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() > deadline {
                return Ok(None);
            }
            std::thread::sleep(poll);
        }
    }

    /// Kills the child if it is still running, and reaps it.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        self.child.kill()?;
        self.child.wait()
    }

    /// Waits up to `limit` for the child to exit; past that kills it and
    /// panics, naming it and `after` (what it should have exited after).
    pub fn reap_or_kill(&mut self, limit: Duration, after: &str) -> ExitStatus {
        match self.wait_timeout(limit, POLL) {
            Ok(Some(status)) => status,
            Ok(None) => {
                let _ = self.kill();
                panic!("{} did not exit within {limit:?} {after}", self.name);
            }
            Err(e) => panic!("waiting for {}: {e}", self.name),
        }
    }

    /// Waits up to `limit` for the child to exit and returns its output
    /// (its stdout and stderr must be piped, and small enough for the
    /// pipes' buffers, since nothing reads them before it exits). Past the
    /// limit kills it and panics with what it had written.
    pub fn output_within(mut self, limit: Duration) -> Output {
        match self.wait_timeout(limit, POLL) {
            Ok(Some(_)) => {}
            Ok(None) => {
                let _ = self.child.kill();
                let out = self.take_output();
                panic!(
                    "{} did not finish within {limit:?}: {}{}",
                    self.name,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Err(e) => panic!("waiting for {}: {e}", self.name),
        }
        self.take_output()
    }

    /// Reaps the child and collects what its pipes hold.
    fn take_output(&mut self) -> Output {
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("reaping {}: {e}", self.name));
        let read = |pipe: Option<&mut dyn io::Read>| {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        };
        let stdout = read(self.child.stdout.as_mut().map(|p| p as &mut dyn io::Read));
        let stderr = read(self.child.stderr.as_mut().map(|p| p as &mut dyn io::Read));
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // A test that failed half-way must not leave its child running
        // (holding the harness's output open, or a device core spinning).
        let _ = self.kill();
    }
}

/// Runs `cmd` to its end with its output piped, killing it and panicking
/// after `limit` (a hang must fail the test, not stall the suite).
pub fn output_within(name: &str, cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}: {e}"));
    Watched::new(name, child).output_within(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_ends_gives_its_output() {
        let out = output_within(
            "sh",
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_hanging_child_is_killed_at_the_deadline() {
        let mut sleeper = Watched::spawn("sleep", Command::new("sleep").arg("600")).unwrap();
        let started = Instant::now();
        assert!(matches!(
            sleeper.wait_timeout(Duration::from_millis(50), POLL),
            Ok(None)
        ));
        let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sleeper.reap_or_kill(Duration::from_millis(50), "of nothing")
        }));
        let message = *killed.expect_err("panics").downcast::<String>().unwrap();
        assert_eq!(message, "sleep did not exit within 50ms of nothing");
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(sleeper.try_wait().unwrap().is_some(), "killed and reaped");
    }

    #[test]
    fn dropping_kills_and_waiting_sees_an_early_exit() {
        let sleeper = Watched::spawn("sleep", Command::new("sleep").arg("600")).unwrap();
        let pid = sleeper.id() as libc::pid_t;
        drop(sleeper);
        // SAFETY: signal 0 only checks whether the pid exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive, "reaped on drop");
        let mut quick = Watched::spawn("true", &mut Command::new("true")).unwrap();
        let early = quick.wait_until(Duration::from_secs(30), POLL, || false);
        assert!(matches!(early, Err(WaitError::Exited(s)) if s.success()));
    }
}
