//! The io_uring backend: real `O_DIRECT` reads and writes, submitted and
//! reaped by the device core without blocking (no SQPOLL: the device core
//! already spins, and the reference VM's virtio disk has no IOPOLL).

use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use super::{FileSource, Finished};
use crate::error::EmuError;
use crate::shared::{Accepted, Op, RESULT_ABANDONED};

/// How long shutdown waits for the kernel to finish requests in flight
/// before abandoning them (their buffers are then leaked rather than
/// handed back while the kernel may still write them).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// Settings only tests change (crate-private; [`Default`] is production).
#[derive(Clone, Debug)]
pub(crate) struct UringHooks {
    /// How long shutdown waits for the kernel ([`SHUTDOWN_WAIT`]).
    pub shutdown_wait: Duration,
    /// Fault injection: once the kernel has consumed this many SQEs, the
    /// next `io_uring_enter` finds the ring's descriptor replaced by one of
    /// `/dev/null` and fails for real (`EOPNOTSUPP`), as every later one
    /// would. The ring itself lives on (its mappings hold it), so the
    /// kernel keeps and completes the requests it took.
    #[cfg(test)]
    pub break_after_sqes: Option<u64>,
}

impl Default for UringHooks {
    fn default() -> Self {
        UringHooks {
            shutdown_wait: SHUTDOWN_WAIT,
            #[cfg(test)]
            break_after_sqes: None,
        }
    }
}

pub(crate) struct Uring {
    ring: IoUring,
    /// Keeps a file the device opened alive; `None` for a caller's fd.
    _owned: Option<File>,
    fd: RawFd,
    /// Requests in flight, by slot; a request's slot is its SQE's
    /// `user_data`.
    slots: Vec<Option<Accepted>>,
    free: Vec<u32>,
    /// Slots whose SQEs were pushed, oldest first, trimmed to those the
    /// kernel has not consumed yet after each `io_uring_enter`: on a
    /// failure, exactly these never reached the kernel.
    queued: VecDeque<u32>,
    /// Set when `io_uring_enter` itself failed for good.
    broken: Option<i32>,
    hooks: UringHooks,
    /// SQEs the kernel consumed so far (for `hooks.break_after_sqes`).
    #[cfg(test)]
    consumed: u64,
}

impl Uring {
    pub fn new(source: &FileSource, capacity: usize, hooks: UringHooks) -> Result<Self, EmuError> {
        let (owned, fd) = match source {
            FileSource::Path(path) => {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(path)
                    .map_err(|e| {
                        EmuError::Backend(format!("cannot open {path} with O_DIRECT: {e}"))
                    })?;
                let fd = file.as_raw_fd();
                (Some(file), fd)
            }
            FileSource::Fd(fd) => (None, *fd),
        };
        let entries = capacity.clamp(1, 4096).next_power_of_two() as u32;
        let ring = IoUring::new(entries)
            .map_err(|e| EmuError::Backend(format!("io_uring setup failed: {e}")))?;
        let slots = capacity.max(1);
        Ok(Uring {
            ring,
            _owned: owned,
            fd,
            slots: vec![None; slots],
            free: (0..slots as u32).rev().collect(),
            queued: VecDeque::with_capacity(slots),
            broken: None,
            hooks,
            #[cfg(test)]
            consumed: 0,
        })
    }

    pub fn submit(&mut self, request: Accepted, done: &mut Vec<Finished>) {
        let e = &request.entry;
        if let Some(errno) = self.broken {
            done.push((request, -i64::from(errno)));
            return;
        }
        if e.buf == 0 {
            done.push((request, -i64::from(libc::EFAULT)));
            return;
        }
        let Some(index) = self.free.pop() else {
            // More in flight than promised: refuse rather than overrun.
            done.push((request, -i64::from(libc::EBUSY)));
            return;
        };
        let fd = types::Fd(self.fd);
        let sqe = match e.op {
            Op::Read => opcode::Read::new(fd, e.buf as *mut u8, e.len)
                .offset(e.offset)
                .build(),
            Op::Write => opcode::Write::new(fd, e.buf as *const u8, e.len)
                .offset(e.offset)
                .build(),
        }
        .user_data(u64::from(index));
        loop {
            // SAFETY: the buffer address and length come from a client
            // slot that owns the buffer until this request's completion is
            // delivered (and forever if the request is abandoned), and the
            // descriptor is either owned here or the caller's (a closed one
            // fails with EBADF, it is not memory).
            let pushed = unsafe { self.ring.submission().push(&sqe) };
            if pushed.is_ok() {
                break;
            }
            // Submission ring full: hand what is queued to the kernel.
            self.enter(done);
            if let Some(errno) = self.broken {
                // Never pushed, so the kernel never saw it: an ordinary
                // failure, its buffer safe to hand back.
                self.free.push(index);
                done.push((request, -i64::from(errno)));
                return;
            }
        }
        self.slots[index as usize] = Some(request);
        self.queued.push_back(index);
        self.enter(done);
    }

    /// Hands queued SQEs to the kernel without waiting.
    fn enter(&mut self, done: &mut Vec<Finished>) {
        if self.queued.is_empty() || self.broken.is_some() {
            return;
        }
        #[cfg(test)]
        self.inject_break();
        match self.ring.submit() {
            Ok(_) => self.trim_queued(),
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    || e.raw_os_error() == Some(libc::EAGAIN) =>
            {
                // The completion ring is full; reaping below makes room.
                self.trim_queued();
                self.reap(done);
            }
            Err(e) => {
                self.trim_queued();
                let errno = e.raw_os_error().unwrap_or(libc::EIO);
                if errno != libc::EINTR {
                    self.break_ring(errno, done);
                }
            }
        }
    }

    /// Forgets queued slots the kernel has consumed (the submission ring's
    /// head passed them).
    fn trim_queued(&mut self) {
        let unconsumed = self.ring.submission().len();
        while self.queued.len() > unconsumed {
            self.queued.pop_front();
            #[cfg(test)]
            {
                self.consumed += 1;
            }
        }
    }

    /// `hooks.break_after_sqes`: replaces the ring's descriptor with one of
    /// `/dev/null` once the kernel has consumed that many SQEs, so that
    /// `io_uring_enter` fails from then on, for real and for good.
    #[cfg(test)]
    fn inject_break(&mut self) {
        if !matches!(self.hooks.break_after_sqes, Some(n) if self.consumed >= n) {
            return;
        }
        self.hooks.break_after_sqes = None;
        let null = File::open("/dev/null").expect("open /dev/null");
        // SAFETY: both descriptors are open; the ring's descriptor stays
        // open (now on /dev/null) and owned by `self.ring`, which closes it
        // once; the ring's memory stays mapped and keeps the ring alive.
        let rc = unsafe { libc::dup2(null.as_raw_fd(), self.ring.as_raw_fd()) };
        assert_eq!(rc, self.ring.as_raw_fd(), "dup2 over the ring's descriptor");
    }

    /// The ring itself failed (not one request): it will not be entered
    /// again. Requests whose SQEs the kernel never consumed fail now with
    /// the error (their buffers were never the kernel's); every later one
    /// fails the same way at submission. Requests the kernel consumed stay
    /// in flight: the kernel still owns their buffers and posts their
    /// completions, which `poll` keeps reaping (and shutdown abandons the
    /// ones that never come).
    fn break_ring(&mut self, errno: i32, done: &mut Vec<Finished>) {
        self.broken = Some(errno);
        while let Some(index) = self.queued.pop_front() {
            if let Some(request) = self.slots[index as usize].take() {
                done.push((request, -i64::from(errno)));
                self.free.push(index);
            }
        }
    }

    fn reap(&mut self, done: &mut Vec<Finished>) {
        for cqe in self.ring.completion() {
            let index = cqe.user_data() as usize;
            if let Some(request) = self.slots.get_mut(index).and_then(Option::take) {
                done.push((request, i64::from(cqe.result())));
                self.free.push(index as u32);
            }
        }
    }

    pub fn poll(&mut self, done: &mut Vec<Finished>) {
        self.enter(done);
        self.reap(done);
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn wait_all(&mut self, done: &mut Vec<Finished>) {
        let deadline = Instant::now() + self.hooks.shutdown_wait;
        while self.in_flight() > 0 && Instant::now() < deadline {
            self.enter(done);
            self.reap(done);
            if self.in_flight() == 0 {
                break;
            }
            if self.broken.is_none() {
                // Returns at the first completion or after 1 ms (ETIME);
                // it may also submit what `enter` could not.
                let _ = self.ring.submitter().submit_with_args(
                    1,
                    &types::SubmitArgs::new().timespec(&types::Timespec::new().nsec(1_000_000)),
                );
                self.trim_queued();
            } else {
                // A broken ring is not entered again; the completions of
                // what the kernel took still arrive in shared memory.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        // Whatever the kernel still holds after the wait: abandon it. Its
        // completion says so, and the client leaks the buffer instead of
        // handing it back, because the kernel may still write it.
        for slot in &mut self.slots {
            if let Some(request) = slot.take() {
                done.push((request, RESULT_ABANDONED));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The failure paths, provoked for real: a read from a pipe that gets
    //! no data stays in the kernel for as long as the test likes, and
    //! `UringHooks::break_after_sqes` makes `io_uring_enter` fail for good
    //! at a chosen submission.

    use std::io::{PipeReader, Write};
    use std::sync::{Mutex, MutexGuard};

    use cint_policy::{Hint, PolicyConfig};

    use super::*;
    use crate::{
        BackendConfig, Client, Completion, DeviceConfig, Emulator, IoBuf, IoError, QueueConfig,
        QueueMode, Realtime, Request, WaitMode,
    };

    const LEN: u32 = 4096;
    /// Short, so the tests do not wait 10 s for requests that never end;
    /// nothing asserted depends on it.
    const TEST_SHUTDOWN_WAIT: Duration = Duration::from_millis(50);

    static SERIAL: Mutex<()> = Mutex::new(());

    /// One emulator at a time: each spins a device core.
    fn serial() -> MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A device on the last allowed CPU whose io_uring backend reads the
    /// pipe `reader`; `None` (with the reason printed) with fewer than 2
    /// CPUs.
    fn start(reader: &PipeReader, hooks: UringHooks) -> Option<Emulator> {
        let cpus = crate::sys::allowed_cpus().expect("affinity");
        if !cint_test_support::skip::cpus(cpus.len(), 2) {
            return None;
        }
        let config = DeviceConfig {
            device_cpu: *cpus.last().expect("a cpu"),
            queues: vec![QueueConfig {
                app_cpu: cpus[0],
                mode: QueueMode::Interrupt(PolicyConfig::None),
            }],
            backend: BackendConfig::IoUring {
                file: FileSource::Fd(reader.as_raw_fd()),
            },
            realtime: Realtime::Prefer,
            idle_delivery: Default::default(),
        };
        Some(Emulator::start_with(config, hooks).expect("device starts"))
    }

    fn submit_read(client: &mut Client, user_data: u64) {
        client
            .submit(Request {
                op: Op::Read,
                offset: 0,
                len: LEN,
                hint: Hint::Urgent,
                buf: Some(IoBuf::new(LEN as usize)),
                user_data,
            })
            .expect("submitted");
    }

    /// Waits for `n` more completions and appends them to `all`.
    fn take(client: &mut Client, n: usize, all: &mut Vec<Completion>) {
        let mut out = Vec::new();
        assert_eq!(client.wait(n, WaitMode::Block, &mut out), n);
        all.append(&mut out);
    }

    /// Each of `user_data` came back exactly once, and nothing else.
    fn assert_each_once(client: &mut Client, all: &[Completion], user_data: &[u64]) {
        let mut seen: Vec<u64> = all.iter().map(|c| c.user_data).collect();
        seen.sort_unstable();
        assert_eq!(seen, user_data);
        let mut late = Vec::new();
        assert_eq!(client.reap(&mut late), 0, "a request came back twice");
        assert_eq!((client.in_flight(), client.strays()), (0, 0));
    }

    /// Of the two pipe reads, the one that got the data: its buffer back,
    /// with the data. The other: abandoned, its buffer not handed back.
    fn assert_one_read_one_abandoned(reads: &[&Completion]) {
        assert_eq!(reads.len(), 2);
        let (read, abandoned) = if reads[0].result.is_ok() {
            (reads[0], reads[1])
        } else {
            (reads[1], reads[0])
        };
        assert_eq!(read.result, Ok(LEN), "{read:?}");
        let buf = read
            .buf
            .as_ref()
            .expect("a finished read's buffer is handed back");
        assert!(buf.as_slice()[..LEN as usize].iter().all(|&b| b == 0xab));
        assert_eq!(abandoned.result, Err(IoError::Abandoned), "{abandoned:?}");
        assert!(
            abandoned.buf.is_none(),
            "an abandoned request's buffer was handed back"
        );
    }

    #[test]
    fn a_read_the_kernel_still_holds_at_shutdown_is_abandoned_and_its_buffer_kept() {
        let _g = serial();
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        let hooks = UringHooks {
            shutdown_wait: TEST_SHUTDOWN_WAIT,
            ..UringHooks::default()
        };
        let Some(emulator) = start(&reader, hooks) else {
            return;
        };
        let mut client = emulator.client(0, 4).expect("client");
        // Both reads wait in the kernel for data; one write serves one.
        submit_read(&mut client, 1);
        submit_read(&mut client, 2);
        writer.write_all(&[0xab; LEN as usize]).expect("write");
        let mut all = Vec::new();
        take(&mut client, 1, &mut all);
        assert_eq!(all[0].result, Ok(LEN));
        assert_eq!(client.in_flight(), 1);
        // The other read never gets data: shutdown abandons it.
        let stats = emulator.shutdown().expect("clean shutdown");
        take(&mut client, 1, &mut all);
        assert_each_once(&mut client, &all, &[1, 2]);
        assert_one_read_one_abandoned(&[&all[0], &all[1]]);
        assert_eq!(stats.total_completions(), 2);
        assert_eq!(stats.cancelled, 0);
        drop(client);
        drop((reader, writer));
    }

    #[test]
    fn a_broken_ring_fails_what_the_kernel_never_got_and_keeps_what_it_did() {
        let _g = serial();
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        let hooks = UringHooks {
            shutdown_wait: TEST_SHUTDOWN_WAIT,
            break_after_sqes: Some(2),
        };
        let Some(emulator) = start(&reader, hooks) else {
            return;
        };
        let mut client = emulator.client(0, 8).expect("client");
        // 1 and 2 reach the kernel and wait there for data. 3 is pushed,
        // and the io_uring_enter that would hand it over fails: the ring
        // is broken. 4 comes to a broken ring.
        for user_data in 1..=4 {
            submit_read(&mut client, user_data);
        }
        let mut all = Vec::new();
        take(&mut client, 2, &mut all);
        let mut failed: Vec<u64> = all.iter().map(|c| c.user_data).collect();
        failed.sort_unstable();
        assert_eq!(failed, [3, 4], "{all:?}");
        for c in &all {
            assert_eq!(c.result, Err(IoError::Os(libc::EOPNOTSUPP)), "{c:?}");
            let buf = c
                .buf
                .as_ref()
                .expect("the kernel never had it: handed back");
            assert_eq!(buf.len(), LEN as usize);
        }
        // The kernel still completes what it took, and the broken ring's
        // completions are still reaped.
        writer.write_all(&[0xab; LEN as usize]).expect("write");
        take(&mut client, 1, &mut all);
        assert_eq!(all[2].result, Ok(LEN), "{:?}", all[2]);
        let stats = emulator.shutdown().expect("clean shutdown");
        take(&mut client, 1, &mut all);
        assert_each_once(&mut client, &all, &[1, 2, 3, 4]);
        assert_one_read_one_abandoned(&[&all[2], &all[3]]);
        assert_eq!(stats.total_completions(), 4);
        drop(client);
        drop((reader, writer));
    }
}
