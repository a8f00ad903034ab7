//! The load generator: keeps `depth` virtio-blk requests in flight on each
//! queue, publishes them `batch` at a time with one notification, reaps the
//! used ring like a guest driver (re-arming the interrupt after each pass)
//! and counts requests, kicks and interrupts.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::blk;
use crate::device::{Queue, Session};
use crate::memory::GuestMemory;
use crate::ring::{Desc, DESC_F_NEXT, DESC_F_WRITE};
use crate::Error;

/// Descriptors per request: header, data, status.
pub const DESCS_PER_REQUEST: u16 = 3;

/// Which request every slot sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// `VIRTIO_BLK_T_IN`.
    Read,
    /// `VIRTIO_BLK_T_OUT`.
    Write,
}

/// How the driver waits for completions when the used ring is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Wait {
    /// Sleep on the call eventfd, as a guest waits for its interrupt.
    Irq,
    /// Spin on the used index (interrupts are still armed and counted).
    Poll,
}

/// One load run's shape.
#[derive(Clone, Debug, Serialize)]
pub struct LoadConfig {
    /// Request type.
    pub op: Op,
    /// Bytes per request (a multiple of 512).
    pub block_size: u32,
    /// Requests in flight per queue.
    pub depth: u16,
    /// Requests published per notification.
    pub batch: u16,
    /// Requests per queue.
    pub requests: u64,
    /// How to wait for completions.
    pub wait: Wait,
    /// The header's `ioprio` field (a hint to our back end).
    pub ioprio: u32,
    /// Give up when nothing completes for this long.
    #[serde(skip)]
    pub stall_timeout: Duration,
}

impl LoadConfig {
    /// Checks the shape against the queue size.
    pub fn validate(&self, queue_size: u16) -> Result<(), Error> {
        if self.block_size == 0 || u64::from(self.block_size) % blk::SECTOR != 0 {
            return Err(Error::Config(format!(
                "--block-size {} is not a positive multiple of 512",
                self.block_size
            )));
        }
        if self.depth == 0 || self.batch == 0 || self.batch > self.depth {
            return Err(Error::Config(format!(
                "--depth {} and --batch {} need 1 <= batch <= depth",
                self.depth, self.batch
            )));
        }
        if u32::from(self.depth) * u32::from(DESCS_PER_REQUEST) > u32::from(queue_size) {
            return Err(Error::Config(format!(
                "--depth {} needs {} descriptors, the queue has {queue_size}",
                self.depth,
                u32::from(self.depth) * u32::from(DESCS_PER_REQUEST)
            )));
        }
        Ok(())
    }

    /// Guest memory the run needs per queue, rings included.
    pub fn memory_per_queue(&self, queue_size: u16) -> u64 {
        let rings = 3 * 4096 + 24 * u64::from(queue_size);
        let bufs = u64::from(self.depth) * (u64::from(self.block_size) + 4096 + 64);
        rings + bufs + 3 * 4096
    }
}

/// What one queue did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct QueueResult {
    /// Queue index.
    pub queue: u16,
    /// Requests completed.
    pub requests: u64,
    /// Requests completed with a status other than OK.
    pub failed: u64,
    /// Notifications sent to the back end.
    pub kicks: u64,
    /// Interrupts received (call eventfd writes).
    pub interrupts: u64,
    /// Interrupts that arrived after the previous run on this queue had
    /// finished (and its trailing wait was over): the previous run's, not
    /// counted in `interrupts`.
    pub late_interrupts: u64,
    /// Seconds from first submission to last completion.
    pub seconds: f64,
}

/// What the whole run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadResult {
    /// Per queue.
    pub queues: Vec<QueueResult>,
    /// Requests completed on all queues.
    pub requests: u64,
    /// Requests that failed on all queues.
    pub failed: u64,
    /// Interrupts on all queues.
    pub interrupts: u64,
    /// Late interrupts of earlier runs, seen at this run's start.
    pub late_interrupts: u64,
    /// Kicks on all queues.
    pub kicks: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
}

impl LoadResult {
    /// Requests per second of wall-clock time.
    pub fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    /// Interrupts per completed request.
    pub fn interrupts_per_request(&self) -> f64 {
        self.interrupts as f64 / (self.requests.max(1)) as f64
    }
}

/// Runs `cfg` on every queue of `session`, one thread per queue.
pub fn run(session: &mut Session, cfg: &LoadConfig) -> Result<LoadResult, Error> {
    let capacity = session.config.capacity;
    let memory = session.memory.clone();
    let mark = memory.mark();
    let results: Vec<Result<QueueResult, Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = session
            .queues
            .iter_mut()
            .map(|q| {
                let memory = memory.clone();
                s.spawn(move || run_queue(q, &memory, cfg, capacity))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Protocol("a queue thread panicked".into())))
            })
            .collect()
    });
    // The wall clock of the slowest queue, without the trailing wait for
    // late interrupts.
    let mut total = LoadResult::default();
    let all_done = results.iter().all(|r| r.is_ok());
    if all_done {
        // Every request came back, so the device owns none of the buffers.
        memory.release_to(mark);
    }
    for r in results {
        let r = r?;
        total.requests += r.requests;
        total.failed += r.failed;
        total.interrupts += r.interrupts;
        total.late_interrupts += r.late_interrupts;
        total.kicks += r.kicks;
        total.seconds = total.seconds.max(r.seconds);
        total.queues.push(r);
    }
    Ok(total)
}

struct Slot {
    header: u64,
    status: u64,
}

fn run_queue(
    q: &mut Queue,
    mem: &GuestMemory,
    cfg: &LoadConfig,
    capacity: u64,
) -> Result<QueueResult, Error> {
    let depth = cfg.depth;
    let sectors_per_req = u64::from(cfg.block_size) / blk::SECTOR;
    // Sequential sectors over the whole disk, wrapping before the end.
    let span = capacity.saturating_sub(sectors_per_req) / sectors_per_req + 1;
    let req_type = match cfg.op {
        Op::Read => blk::T_IN,
        Op::Write => blk::T_OUT,
    };
    let data_flags = match cfg.op {
        Op::Read => DESC_F_NEXT | DESC_F_WRITE,
        Op::Write => DESC_F_NEXT,
    };
    let mut slots = Vec::with_capacity(usize::from(depth));
    for k in 0..depth {
        let header = mem.alloc(u64::from(blk::HEADER_LEN), 16)?;
        let status = mem.alloc(1, 1)?;
        let data = mem.alloc(u64::from(cfg.block_size), 4096)?;
        let base = k * DESCS_PER_REQUEST;
        q.ring.write_desc(
            base,
            Desc {
                addr: header,
                len: blk::HEADER_LEN,
                flags: DESC_F_NEXT,
                next: base + 1,
            },
        );
        q.ring.write_desc(
            base + 1,
            Desc {
                addr: data,
                len: cfg.block_size,
                flags: data_flags,
                next: base + 2,
            },
        );
        q.ring.write_desc(
            base + 2,
            Desc {
                addr: status,
                len: 1,
                flags: DESC_F_WRITE,
                next: 0,
            },
        );
        slots.push(Slot { header, status });
    }
    let mut free: Vec<u16> = (0..depth).rev().collect();
    let mut result = QueueResult {
        queue: q.index,
        ..Default::default()
    };
    // Interrupts from an earlier run on the same session belong to it.
    result.late_interrupts = q.take_interrupts()?;
    let mut submitted = 0u64;
    let mut next_block = 0u64;
    let start = Instant::now();
    let mut last_progress = start;
    while result.requests < cfg.requests {
        // Submit whole batches only, as a block layer that plugs would.
        loop {
            let left = cfg.requests - submitted;
            let n = left.min(u64::from(cfg.batch)) as usize;
            if n == 0 || free.len() < n {
                break;
            }
            for _ in 0..n {
                let k = free
                    .pop()
                    .ok_or_else(|| Error::Protocol("slot accounting".into()))?;
                let slot = &slots[usize::from(k)];
                let sector = (next_block % span) * sectors_per_req;
                next_block += 1;
                mem.write(slot.header, &blk::header(req_type, cfg.ioprio, sector));
                mem.write_u8(slot.status, blk::S_UNTOUCHED);
                q.ring.push_avail(k * DESCS_PER_REQUEST)?;
            }
            submitted += n as u64;
            if q.ring.publish() {
                q.kick()?;
                result.kicks += 1;
            }
        }
        // Reap everything, re-arm the interrupt, reap again if more came.
        let mut reaped = 0u64;
        loop {
            while let Some((head, _len)) = q.ring.pop_used()? {
                let k = head / DESCS_PER_REQUEST;
                if head % DESCS_PER_REQUEST != 0 {
                    return Err(Error::Protocol(format!(
                        "used ring returned descriptor {head}, which heads no chain"
                    )));
                }
                if mem.read_u8(slots[usize::from(k)].status) != blk::S_OK {
                    result.failed += 1;
                }
                free.push(k);
                reaped += 1;
            }
            if !q.ring.enable_interrupts() {
                break;
            }
        }
        result.requests += reaped;
        if reaped > 0 {
            last_progress = Instant::now();
            continue;
        }
        if result.requests >= cfg.requests {
            break;
        }
        match cfg.wait {
            Wait::Irq => {
                result.interrupts += q.wait_interrupt(100)?;
            }
            Wait::Poll => {
                let mut spins = 0u32;
                while !q.ring.has_used() {
                    std::hint::spin_loop();
                    spins += 1;
                    if spins == 1 << 16 {
                        break;
                    }
                }
            }
        }
        if !q.ring.has_used() && last_progress.elapsed() > cfg.stall_timeout {
            return Err(Error::Timeout(format!(
                "queue {}: nothing completed for {:?} with {} requests in flight",
                q.index,
                cfg.stall_timeout,
                q.ring.in_flight()
            )));
        }
    }
    result.seconds = start.elapsed().as_secs_f64();
    // The device writes the used index before the call, and a coalescing
    // policy may send the last interrupt from its timer: give it time.
    result.interrupts += q.wait_interrupt(50)?;
    result.interrupts += q.take_interrupts()?;
    Ok(result)
}
