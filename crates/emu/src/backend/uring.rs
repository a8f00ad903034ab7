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
}

impl Uring {
    pub fn new(source: &FileSource, capacity: usize) -> Result<Self, EmuError> {
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
        }
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
        let deadline = Instant::now() + SHUTDOWN_WAIT;
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
