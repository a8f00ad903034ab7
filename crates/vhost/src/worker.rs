//! One virtqueue's worker: pops requests, runs them on the backing store
//! through io_uring, writes used entries, and lets the queue's policy
//! decide when the guest is interrupted.
//!
//! Order per completion (the contract of `cint-policy` and of virtio):
//! status byte, used entry, `Policy::on_complete`, then, if the policy
//! fires, the driver's suppression check and the call eventfd write.

use std::os::fd::AsRawFd;
use std::sync::Arc;

use cint_policy::{AnyPolicy, Decision, Hint, Nanos, Policy, Seq};
use io_uring::{opcode, squeue, types, IoUring};
use vhost_user_backend::{VringRwLock, VringState, VringT};
use virtio_bindings::virtio_blk::{VIRTIO_BLK_ID_BYTES, VIRTIO_BLK_S_IOERR, VIRTIO_BLK_S_OK};
use virtio_queue::desc::split::Descriptor;
use virtio_queue::QueueT;
use vm_memory::{
    Bytes, GuestAddress, GuestAddressSpace, GuestMemoryAtomic, GuestMemoryBackend,
    GuestMemoryLoadGuard, GuestMemoryMmap,
};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

use crate::cpu_share::{PolicyTime, WorkerCpu};
use crate::hints::HintMap;
use crate::image::{Image, ImageKind};
use crate::options::SECTOR;
use crate::request::{self, Limits, Op, Request, Segment};
use crate::stats::QueueStats;
use crate::sys::{now, LogLimiter, Timer};

/// Guest memory as the back end maps it.
pub type Mem = GuestMemoryMmap<()>;
/// The guest memory a connection shares, swapped on `SET_MEM_TABLE`.
pub type GuestMem = GuestMemoryAtomic<Mem>;
/// A virtqueue as `vhost-user-backend` hands it over.
pub type Vring = VringRwLock<GuestMem>;

/// With vIC holding completions and no deadline, the worker gives it a
/// delivery opportunity this often (the hypervisor's periodic timer).
pub const OPPORTUNITY_TICK: Nanos = 1_000_000;
/// Memory and length alignment under which a request may use O_DIRECT.
const DIRECT_ALIGN: u64 = 512;
/// Most iovecs one readv/writev takes (Linux `UIO_MAXIOV`).
const MAX_IOVECS: usize = 1024;
/// `VRING_AVAIL_F_NO_INTERRUPT`.
const AVAIL_F_NO_INTERRUPT: u16 = 1;

/// The iovecs of a request in flight. They point into guest memory that
/// the request's `Arc<Mem>` keeps mapped until the request completes.
struct IoVecs(Vec<libc::iovec>);

// SAFETY: the pointers refer to guest memory mappings, not to data owned
// by a thread; the mapping they point into is kept alive by the `Arc<Mem>`
// stored beside them in the same `InFlight`, and only the owning worker
// touches them.
unsafe impl Send for IoVecs {}

/// A request whose backing I/O is under way.
struct InFlight {
    ticket: Ticket,
    /// Keeps the guest memory the iovecs point into mapped even if the
    /// front end replaces its memory table or goes away.
    mem: Arc<Mem>,
    iovecs: IoVecs,
    op: Op,
    offset: u64,
    data_len: u64,
    direct: bool,
}

/// What a request carries from its arrival to its used entry: where its
/// status byte goes, and what the policy needs to hear of its completion.
#[derive(Clone, Copy, Debug)]
struct Ticket {
    head: u16,
    /// The status byte's guest address; `None` when the chain has no
    /// writable byte to put it in.
    status: Option<GuestAddress>,
    seq: Seq,
    hint: Hint,
    arrival: Nanos,
}

/// The state of one virtqueue, owned by its worker thread.
pub struct Worker {
    queue_size: u16,
    image: Arc<Image>,
    ring: Option<IoUring>,
    ring_event: EventFd,
    timer: Timer,
    timer_at: Option<Nanos>,
    policy: AnyPolicy,
    /// The policy can hold completions without a deadline (vIC).
    needs_opportunities: bool,
    slots: Vec<Option<InFlight>>,
    free: Vec<u32>,
    in_flight: usize,
    /// Stopped popping because as many requests as the queue holds are
    /// in flight (only a driver reusing heads gets here).
    backlogged: bool,
    /// Used entries written since the last interrupt decision to fire.
    unsignalled: u32,
    event_idx: bool,
    hints: HintMap,
    limits: Limits,
    id: [u8; VIRTIO_BLK_ID_BYTES as usize],
    descs: Vec<Descriptor>,
    cqes: Vec<(u64, i32)>,
    log: LogLimiter,
    warned_direct: bool,
    /// Time in policy calls (sampled), for the policy's CPU share.
    policy_time: PolicyTime,
    /// This worker's CPU time, the share's denominator.
    cpu: WorkerCpu,
    /// This queue's counters.
    pub stats: QueueStats,
}

impl Worker {
    /// A worker for a queue of `queue_size` entries.
    pub fn new(
        queue_size: u16,
        image: Arc<Image>,
        policy: AnyPolicy,
        hints: HintMap,
        limits: Limits,
        id: [u8; VIRTIO_BLK_ID_BYTES as usize],
    ) -> std::io::Result<Worker> {
        let ring_event = EventFd::new(EFD_NONBLOCK)?;
        let ring = match image.kind {
            ImageKind::Null => None,
            ImageKind::File(_) => {
                let ring = IoUring::new(u32::from(queue_size))?;
                ring.submitter().register_eventfd(ring_event.as_raw_fd())?;
                Some(ring)
            }
        };
        let needs_opportunities = matches!(policy, AnyPolicy::Vic(_) | AnyPolicy::VicSched(_));
        Ok(Worker {
            queue_size,
            image,
            ring,
            ring_event,
            timer: Timer::new()?,
            timer_at: None,
            policy,
            needs_opportunities,
            slots: (0..queue_size).map(|_| None).collect(),
            free: (0..u32::from(queue_size)).rev().collect(),
            in_flight: 0,
            backlogged: false,
            unsignalled: 0,
            event_idx: false,
            hints,
            limits,
            id,
            descs: Vec::with_capacity(usize::from(queue_size)),
            cqes: Vec::with_capacity(usize::from(queue_size)),
            log: LogLimiter::default(),
            warned_direct: false,
            policy_time: PolicyTime::default(),
            cpu: WorkerCpu::default(),
            stats: QueueStats::default(),
        })
    }

    /// The descriptor to poll for backing-I/O completions.
    pub fn ring_fd(&self) -> i32 {
        self.ring_event.as_raw_fd()
    }

    /// The descriptor to poll for the policy's deadline.
    pub fn timer_fd(&self) -> i32 {
        self.timer.as_raw_fd()
    }

    /// Requests popped and not yet given back in the used ring.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// A copy of the counters, with the gauges (`in_flight`,
    /// `unsignalled`) read from the worker's own state as it is now.
    pub fn stats_snapshot(&self) -> QueueStats {
        QueueStats {
            in_flight: self.in_flight as u64,
            unsignalled: u64::from(self.unsignalled),
            ..self.stats.clone()
        }
    }

    /// Starts over for a new front end with `policy`, keeping the
    /// counters (they add up over connections). Only when nothing is in
    /// flight: a request of the previous connection still completing
    /// must find the policy that numbered it.
    pub fn new_connection(&mut self, policy: AnyPolicy) {
        if self.in_flight > 0 {
            return;
        }
        self.policy = policy;
        self.unsignalled = 0;
        self.backlogged = false;
        self.event_idx = false;
        self.rearm();
    }

    /// The driver negotiated `VIRTIO_RING_F_EVENT_IDX`.
    pub fn set_event_idx(&mut self, enabled: bool) {
        self.event_idx = enabled;
    }

    /// The guest kicked the queue: a delivery opportunity, then every
    /// available request is started.
    pub fn on_kick(&mut self, vring: &Vring, gm: &GuestMem) {
        let mem = gm.memory();
        let mut state = vring.get_mut();
        let now = now();
        let d = self.policy_time.time(|| self.policy.on_opportunity(now));
        self.act(d, false, &mut state, &mem);
        self.pull(&mut state, &mem);
        self.submit();
        self.rearm();
        self.account_cpu();
    }

    /// The ring's eventfd fired: backing I/O completed.
    pub fn on_ring(&mut self, vring: &Vring, gm: &GuestMem) {
        let _ = self.ring_event.read();
        let mem = gm.memory();
        let mut state = vring.get_mut();
        self.reap(&mut state, &mem);
        if self.backlogged {
            self.backlogged = false;
            self.pull(&mut state, &mem);
        }
        self.submit();
        self.rearm();
        self.account_cpu();
    }

    /// The timer fired: the policy's deadline, or an opportunity tick.
    pub fn on_timer(&mut self, vring: &Vring, gm: &GuestMem) {
        self.timer.consume();
        self.timer_at = None;
        let mem = gm.memory();
        let mut state = vring.get_mut();
        let now = now();
        let d = self.policy_time.time(|| match self.policy.next_deadline() {
            Some(at) if at <= now => self.policy.on_timer(now),
            _ if self.needs_opportunities => self.policy.on_opportunity(now),
            _ => Decision::Hold,
        });
        self.act(d, false, &mut state, &mem);
        self.rearm();
        self.account_cpu();
    }

    /// The vCPU this queue interrupts changed its run state (vic-sched).
    pub fn on_schedule(&mut self, schedule: cint_policy::GuestSchedule) {
        let now = now();
        self.policy_time
            .time(|| self.policy.on_schedule(now, schedule));
        self.rearm();
        self.stats.policy_ns = self.policy_time.estimate_ns();
    }

    /// Brings the policy's time and the worker's CPU time in the counters
    /// up to date: once per event handled, one clock read.
    fn account_cpu(&mut self) {
        self.cpu.update();
        self.stats.worker_cpu_ns = self.cpu.total_ns();
        self.stats.policy_ns = self.policy_time.estimate_ns();
    }

    fn pull(&mut self, state: &mut VringState<GuestMem>, mem: &GuestMemoryLoadGuard<Mem>) {
        loop {
            if self.event_idx {
                if let Err(e) = state.get_queue_mut().disable_notification(&**mem) {
                    self.log
                        .log(now(), || format!("disabling notifications: {e}"));
                }
            }
            while self.in_flight < usize::from(self.queue_size) {
                let Some(chain) = state.get_queue_mut().pop_descriptor_chain(mem.clone()) else {
                    break;
                };
                let head = chain.head_index();
                self.descs.clear();
                self.descs.extend(chain);
                // A chain the iterator cut short (loop, too long, unreadable
                // descriptor) ends on a descriptor that still says NEXT.
                let complete = self.descs.last().is_some_and(|d| !d.has_next());
                self.start(head, complete, state, mem);
            }
            if self.in_flight >= usize::from(self.queue_size) {
                self.backlogged = true;
                return;
            }
            if !self.event_idx {
                return;
            }
            match state.get_queue_mut().enable_notification(&**mem) {
                Ok(true) => continue,
                Ok(false) => return,
                Err(e) => {
                    self.log
                        .log(now(), || format!("enabling notifications: {e}"));
                    return;
                }
            }
        }
    }

    fn start(
        &mut self,
        head: u16,
        complete: bool,
        state: &mut VringState<GuestMem>,
        mem: &GuestMemoryLoadGuard<Mem>,
    ) {
        let arrival = now();
        let parsed = request::parse(&**mem, &self.descs, complete, &self.limits);
        let req = match parsed {
            Ok(r) => r,
            Err(rej) => {
                let hint = self.hints.hint_of(rej.ioprio);
                let seq = self
                    .policy_time
                    .time(|| self.policy.on_submit(arrival, hint));
                self.in_flight += 1;
                self.log.log(arrival, || {
                    format!("request {head} refused: {}", rej.reason)
                });
                let used_len = u32::from(rej.status.is_some());
                let ticket = Ticket {
                    head,
                    status: rej.status,
                    seq,
                    hint,
                    arrival,
                };
                self.finish(state, mem, mem, ticket, rej.code, used_len);
                return;
            }
        };
        let hint = self.hints.hint_of(req.ioprio);
        let seq = self
            .policy_time
            .time(|| self.policy.on_submit(arrival, hint));
        self.in_flight += 1;
        let ticket = Ticket {
            head,
            status: Some(req.status),
            seq,
            hint,
            arrival,
        };
        match (&self.image.kind, req.op) {
            (_, Op::GetId) => {
                let written = write_bytes(mem, &req.data, &self.id);
                let used = written as u32 + 1;
                self.finish(state, mem, mem, ticket, VIRTIO_BLK_S_OK as u8, used);
            }
            (ImageKind::Null, op) => {
                let used = match op {
                    Op::Read => {
                        zero_fill(mem, &req.data);
                        self.stats.read_bytes += req.data_len;
                        req.data_len as u32 + 1
                    }
                    Op::Write => {
                        self.stats.write_bytes += req.data_len;
                        1
                    }
                    _ => 1,
                };
                self.finish(state, mem, mem, ticket, VIRTIO_BLK_S_OK as u8, used);
            }
            (ImageKind::File(_), _) => self.start_io(ticket, req, state, mem),
        }
    }

    fn start_io(
        &mut self,
        ticket: Ticket,
        req: Request,
        state: &mut VringState<GuestMem>,
        mem: &GuestMemoryLoadGuard<Mem>,
    ) {
        let iovecs = match host_iovecs(mem, &req.data) {
            Some(v) => v,
            None => {
                let head = ticket.head;
                self.log.log(ticket.arrival, || {
                    format!(
                        "request {head} refused: data spans more than {MAX_IOVECS} host buffers"
                    )
                });
                self.finish(state, mem, mem, ticket, VIRTIO_BLK_S_IOERR as u8, 1);
                return;
            }
        };
        let aligned = iovecs.iter().all(|v| {
            (v.iov_base as u64) % DIRECT_ALIGN == 0 && (v.iov_len as u64) % DIRECT_ALIGN == 0
        });
        let direct_open = matches!(&self.image.kind, ImageKind::File(f) if f.direct.is_some());
        let direct = aligned && direct_open && matches!(req.op, Op::Read | Op::Write);
        let Some(slot) = self.free.pop() else {
            // Cannot happen: in_flight is bounded by the queue size and so
            // is the slot table. Refuse rather than lose the request.
            self.finish(state, mem, mem, ticket, VIRTIO_BLK_S_IOERR as u8, 1);
            return;
        };
        self.slots[slot as usize] = Some(InFlight {
            ticket,
            mem: mem.clone().into_inner(),
            iovecs: IoVecs(iovecs),
            op: req.op,
            offset: req.sector * SECTOR,
            data_len: req.data_len,
            direct,
        });
        self.push_or_fail(slot, state, mem);
    }

    /// Queues the request in `slot`; if it cannot be queued, it completes
    /// with IOERR rather than stay in flight forever.
    fn push_or_fail(
        &mut self,
        slot: u32,
        state: &mut VringState<GuestMem>,
        mem: &GuestMemoryLoadGuard<Mem>,
    ) {
        if self.push_sqe(slot) {
            return;
        }
        if let Some(io) = self.slots[slot as usize].take() {
            self.free.push(slot);
            let req_mem = Arc::clone(&io.mem);
            self.finish(state, mem, &req_mem, io.ticket, VIRTIO_BLK_S_IOERR as u8, 1);
        }
    }

    /// Queues the submission of the request in `slot`. False if there is
    /// nothing to submit it to (no ring, or an operation without backing
    /// I/O), which the callers never ask for.
    fn push_sqe(&mut self, slot: u32) -> bool {
        let (Some(ring), ImageKind::File(file), Some(io)) = (
            self.ring.as_mut(),
            &self.image.kind,
            self.slots[slot as usize].as_ref(),
        ) else {
            return false;
        };
        let fd = match (&file.direct, io.direct) {
            (Some(d), true) => d.as_raw_fd(),
            _ => file.buffered.as_raw_fd(),
        };
        let fd = types::Fd(fd);
        let iov = &io.iovecs.0;
        let entry: squeue::Entry = match io.op {
            Op::Read => opcode::Readv::new(fd, iov.as_ptr(), iov.len() as u32)
                .offset(io.offset)
                .build(),
            Op::Write => opcode::Writev::new(fd, iov.as_ptr(), iov.len() as u32)
                .offset(io.offset)
                .build(),
            Op::Flush => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
            Op::Discard { sector, sectors } => {
                opcode::Fallocate::new(fd, u64::from(sectors) * SECTOR)
                    .offset(sector * SECTOR)
                    .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                    .build()
            }
            Op::WriteZeroes {
                sector,
                sectors,
                unmap,
            } => {
                let mode = if unmap {
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
                } else {
                    libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE
                };
                opcode::Fallocate::new(fd, u64::from(sectors) * SECTOR)
                    .offset(sector * SECTOR)
                    .mode(mode)
                    .build()
            }
            Op::GetId => return false,
        }
        .user_data(u64::from(slot));
        loop {
            // SAFETY: the iovec array and the guest buffers it points to
            // live in `self.slots[slot]` (the buffers kept mapped by its
            // `Arc<Mem>`) until the completion for this user_data is
            // reaped; the file descriptors live as long as `self.image`.
            let pushed = unsafe { ring.submission().push(&entry) };
            if pushed.is_ok() {
                break;
            }
            // Full submission queue: hand it to the kernel and retry.
            if let Err(e) = crate::sys::submit_all(ring) {
                eprintln!("cint vhost: io_uring submit: {e}");
            }
        }
        true
    }

    /// Hands the kernel every queued entry, including any an earlier call
    /// left behind (see [`crate::sys::submit_all`]): called after every
    /// event, it costs no system call when the ring is empty.
    fn submit(&mut self) {
        if let Some(ring) = self.ring.as_mut() {
            if let Err(e) = crate::sys::submit_all(ring) {
                self.log.log(now(), || format!("io_uring submit: {e}"));
            }
        }
    }

    fn reap(&mut self, state: &mut VringState<GuestMem>, mem: &GuestMemoryLoadGuard<Mem>) {
        loop {
            self.cqes.clear();
            if let Some(ring) = self.ring.as_mut() {
                self.cqes
                    .extend(ring.completion().map(|c| (c.user_data(), c.result())));
            }
            if self.cqes.is_empty() {
                return;
            }
            let cqes = std::mem::take(&mut self.cqes);
            for &(user_data, result) in &cqes {
                self.complete_io(user_data as u32, result, state, mem);
            }
            self.cqes = cqes;
        }
    }

    fn complete_io(
        &mut self,
        slot: u32,
        result: i32,
        state: &mut VringState<GuestMem>,
        mem: &GuestMemoryLoadGuard<Mem>,
    ) {
        let Some(io) = self.slots.get_mut(slot as usize).and_then(Option::take) else {
            eprintln!("cint vhost: io_uring completion for an unknown request {slot}");
            return;
        };
        let now = now();
        if result == -libc::EINVAL && io.direct {
            // The device needs a larger alignment than 512: redo it
            // through the page cache.
            if !self.warned_direct {
                self.warned_direct = true;
                eprintln!(
                    "cint vhost: O_DIRECT refused a request (alignment); such requests use buffered I/O"
                );
            }
            self.slots[slot as usize] = Some(InFlight {
                direct: false,
                ..io
            });
            self.push_sqe(slot);
            return;
        }
        if result == -libc::EINTR || result == -libc::EAGAIN {
            self.slots[slot as usize] = Some(io);
            self.push_or_fail(slot, state, mem);
            return;
        }
        self.free.push(slot);
        let expected = match io.op {
            Op::Read | Op::Write => io.data_len as i64,
            _ => 0,
        };
        let ok = i64::from(result) == expected;
        if !ok {
            self.log.log(now, || {
                if result < 0 {
                    format!(
                        "backing I/O of request {} failed: {}",
                        io.ticket.head,
                        std::io::Error::from_raw_os_error(-result)
                    )
                } else {
                    format!(
                        "backing I/O of request {} transferred {result} of {expected} bytes",
                        io.ticket.head
                    )
                }
            });
        }
        let (code, used) = match (ok, io.op) {
            (true, Op::Read) => {
                self.stats.read_bytes += io.data_len;
                (VIRTIO_BLK_S_OK, io.data_len as u32 + 1)
            }
            (true, Op::Write) => {
                self.stats.write_bytes += io.data_len;
                (VIRTIO_BLK_S_OK, 1)
            }
            (true, _) => (VIRTIO_BLK_S_OK, 1),
            (false, _) => (VIRTIO_BLK_S_IOERR, 1),
        };
        let req_mem = Arc::clone(&io.mem);
        self.finish(state, mem, &req_mem, io.ticket, code as u8, used);
    }

    /// Writes the status byte into the request's memory and the used
    /// entry into the ring, then asks the policy.
    fn finish(
        &mut self,
        state: &mut VringState<GuestMem>,
        ring_mem: &GuestMemoryLoadGuard<Mem>,
        req_mem: &Mem,
        ticket: Ticket,
        code: u8,
        used_len: u32,
    ) {
        let Ticket {
            head,
            status,
            seq,
            hint,
            arrival,
        } = ticket;
        let now = now();
        if let Some(addr) = status {
            if !crate::guest::write_obj(req_mem, code, addr) {
                self.log.log(now, || {
                    format!("status byte of request {head} outside guest memory")
                });
            }
        }
        if let Err(e) = state.get_queue_mut().add_used(&**ring_mem, head, used_len) {
            self.log
                .log(now, || format!("used entry of request {head}: {e}"));
        }
        self.in_flight -= 1;
        self.unsignalled += 1;
        self.stats.requests += 1;
        self.stats.record_latency(now.saturating_sub(arrival));
        let d = self
            .policy_time
            .time(|| self.policy.on_complete(now, seq, hint));
        self.act(d, hint == Hint::Urgent, state, ring_mem);
    }

    /// Carries out a policy decision: count it, ask the driver whether it
    /// wants to be interrupted, and write the call eventfd if so.
    fn act(
        &mut self,
        d: Decision,
        urgent: bool,
        state: &mut VringState<GuestMem>,
        mem: &GuestMemoryLoadGuard<Mem>,
    ) {
        if d.irq().is_none() {
            return;
        }
        self.stats.irqs_wanted += 1;
        self.unsignalled = 0;
        let queue = state.get_queue_mut();
        let wanted_by_driver = queue.needs_notification(&**mem).unwrap_or(true);
        let wanted_by_driver =
            wanted_by_driver && (self.event_idx || !no_interrupt_flag(mem, queue.avail_ring()));
        if !wanted_by_driver {
            self.stats.irqs_suppressed += 1;
            return;
        }
        if state.get_call().is_none() {
            return;
        }
        match state.signal_used_queue() {
            Ok(()) => {
                self.stats.irqs_sent += 1;
                if urgent {
                    self.stats.urgent_irqs += 1;
                }
            }
            Err(e) => self.log.log(now(), || format!("call eventfd: {e}")),
        }
    }

    /// Arms the timer for the policy's deadline, or for an opportunity
    /// tick while vIC holds completions.
    fn rearm(&mut self) {
        let deadline = self.policy_time.time(|| self.policy.next_deadline());
        let want = match deadline {
            Some(at) => Some(at),
            None if self.needs_opportunities && self.unsignalled > 0 => {
                Some(self.timer_at.unwrap_or_else(|| now() + OPPORTUNITY_TICK))
            }
            None => None,
        };
        if want == self.timer_at {
            return;
        }
        let after = want.map(|at| at.saturating_sub(now()));
        match self.timer.set(after) {
            Ok(()) => self.timer_at = want,
            Err(e) => eprintln!("cint vhost: timerfd: {e}"),
        }
    }
}

/// Host iovecs for guest segments, or `None` if there would be more than
/// one readv/writev takes. Segments were checked to lie in guest memory.
fn host_iovecs(mem: &Mem, data: &[Segment]) -> Option<Vec<libc::iovec>> {
    let mut out = Vec::with_capacity(data.len());
    for seg in data {
        for slice in mem.get_slices(seg.addr, seg.len as usize) {
            let slice = slice.ok()?;
            if out.len() == MAX_IOVECS {
                return None;
            }
            out.push(libc::iovec {
                iov_base: slice.ptr_guard_mut().as_ptr().cast(),
                iov_len: slice.len(),
            });
        }
    }
    Some(out)
}

/// Copies `bytes` into the segments, in order, as far as they reach.
/// Returns how many bytes were written.
fn write_bytes(mem: &Mem, data: &[Segment], bytes: &[u8]) -> usize {
    let mut done = 0;
    for seg in data {
        if done == bytes.len() {
            break;
        }
        let n = (seg.len as usize).min(bytes.len() - done);
        if !crate::guest::write_slice(mem, &bytes[done..done + n], seg.addr) {
            break;
        }
        done += n;
    }
    done
}

/// Zeroes the segments (a null device's read).
fn zero_fill(mem: &Mem, data: &[Segment]) {
    for seg in data {
        if !crate::guest::zero(mem, seg.addr, seg.len as usize) {
            return;
        }
    }
}

/// The driver's `VRING_AVAIL_F_NO_INTERRUPT` (only meaningful without
/// EVENT_IDX).
fn no_interrupt_flag(mem: &Mem, avail_ring: u64) -> bool {
    mem.read_obj::<u16>(GuestAddress(avail_ring))
        .map(|f| u16::from_le(f) & AVAIL_F_NO_INTERRUPT != 0)
        .unwrap_or(false)
}
