//! The `VhostUserBackend` of `vhost-user-backend`: one worker thread per
//! virtqueue, each with its worker state, its io_uring and its timer.

use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use cint_policy::PolicyConfig;
use vhost::vhost_user::message::VhostUserProtocolFeatures;
use vhost_user_backend::{VhostUserBackend, VringEpollHandler};
use vmm_sys_util::epoll::EventSet;
use vmm_sys_util::event::{
    new_event_consumer_and_notifier, EventConsumer, EventFlag, EventNotifier,
};

use crate::device::Device;
use crate::error::VhostError;
use crate::hints::HintMap;
use crate::image::Image;
use crate::stats::QueueStats;
use crate::sys::now;
use crate::worker::{GuestMem, Vring, Worker};

/// How long stopping a ring or a disconnect waits for backing I/O.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

struct QueueSlot {
    worker: Mutex<Worker>,
    /// Signalled when the worker has nothing in flight.
    idle: Condvar,
}

/// The virtio-blk device behind the vhost-user socket.
pub struct BlkBackend {
    device: Device,
    queue_size: u16,
    queues: Vec<QueueSlot>,
    /// The guest memory of the current connection.
    mem: RwLock<Option<GuestMem>>,
    /// The current connection sent at least one vhost-user request (a
    /// peer that connects and closes, like another back end checking
    /// whether the socket is live, is not a front end).
    spoken_to: AtomicBool,
    /// Every queue's policy, rebuilt for each connection.
    strategy: PolicyConfig,
    /// One exit event per worker thread, kept for the life of the back
    /// end (see `exit_event`).
    exit_events: Vec<(EventConsumer, EventNotifier)>,
}

impl BlkBackend {
    /// A device on `image`, every queue's policy built from `strategy`.
    pub fn new(
        image: Arc<Image>,
        queues: u16,
        queue_size: u16,
        read_only: bool,
        strategy: &PolicyConfig,
        hints: HintMap,
    ) -> Result<BlkBackend, VhostError> {
        let device = Device::new(&image, queues, queue_size, read_only);
        let mut id = [0u8; 20];
        let name = b"cint-vhost";
        id[..name.len()].copy_from_slice(name);
        let slots = (0..queues)
            .map(|_| {
                let policy = strategy
                    .build(now())
                    .map_err(|e| VhostError::bad(format!("--strategy: {e}")))?;
                let worker = Worker::new(
                    queue_size,
                    Arc::clone(&image),
                    policy,
                    hints,
                    device.limits,
                    id,
                )
                .map_err(|e| VhostError::internal(format!("setting up a queue worker: {e}")))?;
                Ok(QueueSlot {
                    worker: Mutex::new(worker),
                    idle: Condvar::new(),
                })
            })
            .collect::<Result<Vec<_>, VhostError>>()?;
        let exit_events = (0..queues)
            .map(|_| new_event_consumer_and_notifier(EventFlag::NONBLOCK | EventFlag::CLOEXEC))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| VhostError::internal(format!("creating exit events: {e}")))?;
        Ok(BlkBackend {
            device,
            queue_size,
            queues: slots,
            mem: RwLock::new(None),
            spoken_to: AtomicBool::new(false),
            strategy: *strategy,
            exit_events,
        })
    }

    /// Makes `mem` the guest memory of the connection about to start, and
    /// gives every queue a fresh policy: what the previous guest's policy
    /// held was already in its used ring.
    pub fn new_connection(&self, mem: GuestMem) {
        *self.mem.write().unwrap_or_else(|p| p.into_inner()) = Some(mem);
        self.spoken_to.store(false, Ordering::Relaxed);
        for q in 0..self.queues.len() {
            // Validated when the back end was built: cannot fail now.
            if let Ok(policy) = self.strategy.build(now()) {
                self.lock(q).new_connection(policy);
            }
        }
    }

    /// Clears the exit events once the previous connection's worker
    /// threads have exited, so that the next connection's do not exit at
    /// once (the library never reads them).
    pub fn rearm_exit_events(&self) {
        for (consumer, _) in &self.exit_events {
            while consumer.consume().is_ok() {}
        }
    }

    /// Whether the connection that ended asked anything of the device.
    pub fn was_spoken_to(&self) -> bool {
        self.spoken_to.load(Ordering::Relaxed)
    }

    fn lock(&self, q: usize) -> MutexGuard<'_, Worker> {
        // A worker that panicked leaves consistent counters behind; keep
        // serving the others and reporting.
        self.queues[q]
            .worker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Registers each worker's io_uring and timer descriptors with the
    /// epoll loop of its thread (thread `q` serves queue `q`).
    pub fn register(
        &self,
        handlers: &[Arc<VringEpollHandler<Arc<BlkBackend>>>],
    ) -> std::io::Result<()> {
        let base = self.queues.len() as u64;
        for (q, h) in handlers.iter().enumerate() {
            let w = self.lock(q);
            h.register_listener(w.ring_fd(), EventSet::IN, base + 1)?;
            h.register_listener(w.timer_fd(), EventSet::IN, base + 2)?;
        }
        Ok(())
    }

    /// Waits until no queue has requests in flight (or the timeout).
    /// Returns the number still in flight.
    pub fn wait_idle(&self) -> usize {
        let mut left = 0;
        for (q, slot) in self.queues.iter().enumerate() {
            let guard = self.lock(q);
            let (guard, _) = slot
                .idle
                .wait_timeout_while(guard, DRAIN_TIMEOUT, |w| w.in_flight() > 0)
                .unwrap_or_else(|p| p.into_inner());
            left += guard.in_flight();
        }
        left
    }

    /// Number of queues.
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// The vCPU that queue `q` interrupts changed its run state.
    pub fn on_schedule(&self, q: usize, schedule: cint_policy::GuestSchedule) {
        if q < self.queues.len() {
            self.lock(q).on_schedule(schedule);
        }
    }

    /// A copy of every queue's counters.
    pub fn stats(&self) -> Vec<QueueStats> {
        (0..self.queues.len())
            .map(|q| self.lock(q).stats_snapshot())
            .collect()
    }
}

impl VhostUserBackend for BlkBackend {
    type Bitmap = ();
    type Vring = Vring;

    fn num_queues(&self) -> usize {
        self.queues.len()
    }

    fn max_queue_size(&self) -> usize {
        usize::from(self.queue_size)
    }

    fn features(&self) -> u64 {
        // GET_FEATURES is the first request of every front end.
        self.spoken_to.store(true, Ordering::Relaxed);
        self.device.features
    }

    fn protocol_features(&self) -> VhostUserProtocolFeatures {
        VhostUserProtocolFeatures::CONFIG | VhostUserProtocolFeatures::MQ
    }

    fn set_event_idx(&self, enabled: bool) {
        for q in 0..self.queues.len() {
            self.lock(q).set_event_idx(enabled);
        }
    }

    fn get_config(&self, offset: u32, size: u32) -> Vec<u8> {
        self.device.config_bytes(offset, size)
    }

    fn update_memory(&self, _mem: GuestMem) -> std::io::Result<()> {
        // The workers read the same GuestMemoryAtomic the handler updates.
        Ok(())
    }

    fn queues_per_thread(&self) -> Vec<u64> {
        (0..self.queues.len()).map(|q| 1u64 << q).collect()
    }

    fn exit_event(&self, thread_index: usize) -> Option<(EventConsumer, EventNotifier)> {
        // vhost-user-backend 0.24 turns the consumer into a raw descriptor
        // for its epoll set and never closes it: a fresh one per
        // connection would leak a descriptor per queue per reconnection.
        // Hand it an alias of a consumer we keep instead.
        let (consumer, notifier) = self.exit_events.get(thread_index)?;
        let notifier = notifier.try_clone().ok()?;
        // SAFETY: the descriptor stays open as long as `self` (which the
        // worker threads hold through their Arc); the library only calls
        // `into_raw_fd` on the alias, which releases it without closing,
        // so the descriptor is closed exactly once, by `self.exit_events`.
        let alias = unsafe { EventConsumer::from_raw_fd(consumer.as_raw_fd()) };
        Some((alias, notifier))
    }

    fn stop_vring(&self, queue_index: u32) -> std::io::Result<()> {
        // GET_VRING_BASE: nothing may complete into the ring afterwards.
        let q = queue_index as usize;
        let Some(slot) = self.queues.get(q) else {
            return Ok(());
        };
        let guard = self.lock(q);
        let (guard, _) = slot
            .idle
            .wait_timeout_while(guard, DRAIN_TIMEOUT, |w| w.in_flight() > 0)
            .unwrap_or_else(|p| p.into_inner());
        if guard.in_flight() > 0 {
            eprintln!(
                "cint vhost: queue {q}: {} requests still in flight when the ring was stopped",
                guard.in_flight()
            );
        }
        Ok(())
    }

    fn handle_event(
        &self,
        device_event: u16,
        _evset: EventSet,
        vrings: &[Vring],
        thread_id: usize,
    ) -> std::io::Result<()> {
        // One queue per thread: the thread's only vring is queue
        // `thread_id`, its kick is event 0.
        let (Some(vring), Some(slot)) = (vrings.first(), self.queues.get(thread_id)) else {
            return Ok(());
        };
        let Some(mem) = self.mem.read().unwrap_or_else(|p| p.into_inner()).clone() else {
            return Ok(());
        };
        let base = self.queues.len() as u16;
        let mut w = self.lock(thread_id);
        match device_event {
            0 => w.on_kick(vring, &mem),
            e if e == base + 1 => w.on_ring(vring, &mem),
            e if e == base + 2 => w.on_timer(vring, &mem),
            _ => {}
        }
        if w.in_flight() == 0 {
            slot.idle.notify_all();
        }
        Ok(())
    }
}
