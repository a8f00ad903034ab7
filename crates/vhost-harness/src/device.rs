//! The vhost-user session: connect to a back end's socket, negotiate
//! features, share guest memory and hand it the virtqueues, each with a
//! kick eventfd (driver to device) and a call eventfd (the device's
//! interrupt).

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use vhost::vhost_user::message::VhostUserConfigFlags;
use vhost::vhost_user::{Frontend, VhostUserFrontend, VhostUserProtocolFeatures};
use vhost::{VhostBackend, VhostUserMemoryRegionInfo, VringConfigData};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

use crate::blk::{self, BlkConfig};
use crate::memory::GuestMemory;
use crate::ring::SplitRing;
use crate::Error;

const F_VERSION_1: u64 = 1 << virtio_bindings::virtio_config::VIRTIO_F_VERSION_1;
const F_EVENT_IDX: u64 = 1 << virtio_bindings::virtio_ring::VIRTIO_RING_F_EVENT_IDX;
const F_PROTOCOL_FEATURES: u64 =
    vhost::vhost_user::VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits();

/// What the front end asks of the session.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Queues to set up (at most what the back end offers).
    pub queues: u16,
    /// Descriptors per queue (a power of two).
    pub queue_size: u16,
    /// Negotiate EVENT_IDX when the back end offers it.
    pub event_idx: bool,
    /// Bytes of shared guest memory.
    pub memory_bytes: u64,
}

/// One virtqueue as the driver sees it.
pub struct Queue {
    /// Its index.
    pub index: u16,
    /// The ring in guest memory.
    pub ring: SplitRing,
    /// Written to tell the device there is new work.
    pub kick: EventFd,
    /// Written by the device to interrupt; its counter sums the writes, so
    /// reading it gives the exact number of interrupts since the last read.
    pub call: EventFd,
}

impl Queue {
    /// Notifies the device.
    pub fn kick(&self) -> Result<(), Error> {
        self.kick.write(1).map_err(Error::EventFd)
    }

    /// Interrupts received since the last call, without waiting.
    pub fn take_interrupts(&self) -> Result<u64, Error> {
        match self.call.read() {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(Error::EventFd(e)),
        }
    }

    /// Sleeps until the device interrupts or `timeout_ms` passes; returns
    /// the interrupts received (0 on timeout).
    pub fn wait_interrupt(&self, timeout_ms: i32) -> Result<u64, Error> {
        let mut pfd = libc::pollfd {
            fd: self.call.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(Error::EventFd(e));
        }
        self.take_interrupts()
    }
}

/// A connected, configured vhost-user-blk device.
pub struct Session {
    /// Kept for the session's lifetime: dropping it disconnects.
    frontend: Frontend,
    /// Shared guest memory.
    pub memory: Arc<GuestMemory>,
    /// The virtqueues, ready to use.
    pub queues: Vec<Queue>,
    /// The device's config space.
    pub config: BlkConfig,
    /// Virtio features acked.
    pub features: u64,
}

impl Session {
    /// Connects to the back end at `socket` and sets everything up the way
    /// QEMU's vhost-user-blk does.
    pub fn connect(socket: &Path, cfg: &SessionConfig) -> Result<Self, Error> {
        let ctx = |step: &'static str| move |e: vhost::Error| Error::VhostUser(step, e);
        let mut fe =
            Frontend::connect(socket, u64::from(cfg.queues.max(1))).map_err(ctx("connect"))?;
        fe.set_owner().map_err(ctx("SET_OWNER"))?;
        let offered = fe.get_features().map_err(ctx("GET_FEATURES"))?;
        if offered & F_VERSION_1 == 0 {
            return Err(Error::Protocol(
                "back end does not offer VIRTIO_F_VERSION_1".into(),
            ));
        }
        let mut config = BlkConfig::default();
        let mut max_queues = 1u64;
        if offered & F_PROTOCOL_FEATURES != 0 {
            let proto = fe
                .get_protocol_features()
                .map_err(ctx("GET_PROTOCOL_FEATURES"))?;
            let want = proto & (VhostUserProtocolFeatures::MQ | VhostUserProtocolFeatures::CONFIG);
            fe.set_protocol_features(want)
                .map_err(ctx("SET_PROTOCOL_FEATURES"))?;
            if want.contains(VhostUserProtocolFeatures::MQ) {
                max_queues = fe.get_queue_num().map_err(ctx("GET_QUEUE_NUM"))?;
            }
            if want.contains(VhostUserProtocolFeatures::CONFIG) {
                let buf = vec![0u8; blk::CONFIG_LEN as usize];
                let (_, raw) = fe
                    .get_config(0, blk::CONFIG_LEN, VhostUserConfigFlags::WRITABLE, &buf)
                    .map_err(ctx("GET_CONFIG"))?;
                config = BlkConfig::parse(&raw)
                    .ok_or_else(|| Error::Protocol("config space shorter than asked".into()))?;
            }
        }
        if u64::from(cfg.queues) > max_queues {
            return Err(Error::Config(format!(
                "{} queues asked, the back end offers {max_queues}",
                cfg.queues
            )));
        }
        let blk_features = (1u64 << blk::F_SEG_MAX)
            | (1 << blk::F_BLK_SIZE)
            | (1 << blk::F_RO)
            | (1 << blk::F_FLUSH)
            | (1 << blk::F_MQ);
        let mut want = F_VERSION_1 | F_PROTOCOL_FEATURES | blk_features;
        if cfg.event_idx {
            want |= F_EVENT_IDX;
        }
        let features = offered & want;
        fe.set_features(features).map_err(ctx("SET_FEATURES"))?;

        let memory = Arc::new(GuestMemory::new(cfg.memory_bytes)?);
        let region = VhostUserMemoryRegionInfo {
            guest_phys_addr: 0,
            memory_size: memory.size(),
            userspace_addr: memory.host_addr(),
            mmap_offset: 0,
            mmap_handle: memory.file().as_raw_fd(),
        };
        fe.set_mem_table(&[region]).map_err(ctx("SET_MEM_TABLE"))?;

        let event_idx = features & F_EVENT_IDX != 0;
        let mut queues = Vec::with_capacity(usize::from(cfg.queues));
        for index in 0..cfg.queues {
            let ring = SplitRing::new(memory.clone(), cfg.queue_size, event_idx)?;
            let l = ring.layout();
            let q = usize::from(index);
            fe.set_vring_num(q, cfg.queue_size)
                .map_err(ctx("SET_VRING_NUM"))?;
            let host = memory.host_addr();
            fe.set_vring_addr(
                q,
                &VringConfigData {
                    queue_max_size: cfg.queue_size,
                    queue_size: cfg.queue_size,
                    flags: 0,
                    desc_table_addr: host + l.desc,
                    used_ring_addr: host + l.used,
                    avail_ring_addr: host + l.avail,
                    log_addr: None,
                },
            )
            .map_err(ctx("SET_VRING_ADDR"))?;
            fe.set_vring_base(q, 0).map_err(ctx("SET_VRING_BASE"))?;
            let kick = EventFd::new(EFD_NONBLOCK).map_err(Error::EventFd)?;
            let call = EventFd::new(EFD_NONBLOCK).map_err(Error::EventFd)?;
            fe.set_vring_call(q, &call).map_err(ctx("SET_VRING_CALL"))?;
            fe.set_vring_kick(q, &kick).map_err(ctx("SET_VRING_KICK"))?;
            queues.push(Queue {
                index,
                ring,
                kick,
                call,
            });
        }
        if features & F_PROTOCOL_FEATURES != 0 {
            for q in 0..cfg.queues {
                fe.set_vring_enable(usize::from(q), true)
                    .map_err(ctx("SET_VRING_ENABLE"))?;
            }
        }
        Ok(Self {
            frontend: fe,
            memory,
            queues,
            config,
            features,
        })
    }

    /// Whether the device said it is read-only.
    pub fn read_only(&self) -> bool {
        self.features & (1 << blk::F_RO) != 0
    }

    /// Whether EVENT_IDX was negotiated.
    pub fn event_idx(&self) -> bool {
        self.features & F_EVENT_IDX != 0
    }

    /// Ends the session: stops the rings the way a guest shutting down does
    /// (GET_VRING_BASE) and closes the socket. Returns, per queue, the
    /// interrupts that arrived since they were last read: once a ring is
    /// stopped its device may no longer signal, so these complete the count.
    pub fn close(self) -> Result<Vec<u64>, Error> {
        let mut late = Vec::with_capacity(self.queues.len());
        for q in &self.queues {
            self.frontend
                .get_vring_base(usize::from(q.index))
                .map_err(|e| Error::VhostUser("GET_VRING_BASE", e))?;
            late.push(q.take_interrupts()?);
        }
        Ok(late)
    }
}
