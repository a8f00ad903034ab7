//! Starting and stopping an emulated device: the device core thread, one
//! interrupt handler per interrupt-driven queue, and the shared state that
//! clients attach to.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use cint_policy::AnyPolicy;

use crate::backend::uring::UringHooks;
use crate::backend::{Backend, BackendConfig};
use crate::client::Client;
use crate::device::{DeviceCore, DeviceCq};
use crate::error::EmuError;
use crate::irq::{run_handler, HandlerState, HANDLER_PRIORITY};
use crate::ring;
pub use crate::shared::IdleDelivery;
use crate::shared::{Queue, QueueMode, Shared, MAX_QUEUE_DEPTH};
use crate::sys;

pub use cint_scenario::emu_config::Realtime;

/// One application core's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// The CPU whose threads submit here and on which its interrupt
    /// handler runs.
    pub app_cpu: u32,
    /// Interrupts by a policy, or polling.
    pub mode: QueueMode,
}

/// What to emulate.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConfig {
    /// The CPU the device core spins on (no other emulator thread runs
    /// there).
    pub device_cpu: u32,
    /// Queues, one per application core.
    pub queues: Vec<QueueConfig>,
    /// The request executor.
    pub backend: BackendConfig,
    /// Interrupt handlers run at `SCHED_FIFO` priority so they preempt
    /// application threads, as interrupts do. When the system refuses it,
    /// [`Realtime::Require`] makes [`Emulator::start`] fail with
    /// [`EmuError::NoRealtime`]; [`Realtime::Prefer`] runs them at normal
    /// priority (see [`DeviceStats::realtime_handlers`]).
    pub realtime: Realtime,
    /// Where an interrupt goes when it finds its application core idle:
    /// by default to a thread waiting there, which runs the handler's pass
    /// itself (one wake-up, as on real hardware). A core shared with busy
    /// threads the emulator does not know of needs
    /// [`IdleDelivery::Handler`], or an [`Occupant`] for them.
    pub idle_delivery: IdleDelivery,
}

/// Counters of a running or stopped device. A snapshot of a running
/// device is not taken at one instant, but it is consistent: `irqs` is
/// the sum of its kinds, and the interrupts counted as a part of them
/// (`waiter_irqs`, `queue_full_irqs`) never exceed them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Per queue: interrupts raised (all kinds).
    pub irqs: Vec<u64>,
    /// Per queue: urgent-only interrupts raised.
    pub urgent_irqs: Vec<u64>,
    /// Per queue: full interrupts the device raised because the completion
    /// queue had no free position (included in `irqs`; see
    /// docs/EMULATOR-DESIGN.md, "The completion queue's window").
    pub queue_full_irqs: Vec<u64>,
    /// Per queue: times the interrupt handler slept and was woken.
    pub handler_wakeups: Vec<u64>,
    /// Per queue: interrupts delivered to a thread waiting on the idle
    /// application core, which ran the handler's pass itself (included in
    /// `irqs`).
    pub waiter_irqs: Vec<u64>,
    /// Per queue: completions posted.
    pub completions: Vec<u64>,
    /// Requests cancelled at shutdown.
    pub cancelled: u64,
    /// Handlers that run at real-time priority.
    pub realtime_handlers: usize,
    /// Interrupt handlers the device runs: one per interrupt queue, none
    /// for a polled one.
    pub handlers: usize,
}

impl DeviceStats {
    /// Interrupts over all queues.
    pub fn total_irqs(&self) -> u64 {
        self.irqs.iter().sum()
    }

    /// Urgent-only interrupts over all queues.
    pub fn total_urgent_irqs(&self) -> u64 {
        self.urgent_irqs.iter().sum()
    }

    /// Completions over all queues.
    pub fn total_completions(&self) -> u64 {
        self.completions.iter().sum()
    }
}

/// A running emulated device. Dropping it shuts it down like
/// [`Emulator::shutdown`].
pub struct Emulator {
    shared: Arc<Shared>,
    device: Option<JoinHandle<()>>,
    handlers: Vec<JoinHandle<()>>,
    /// Interrupt handlers started: one per interrupt queue (a polled
    /// queue has none); kept past shutdown, which joins them.
    handlers_started: usize,
}

impl Emulator {
    /// Starts the device core and the interrupt handlers, each pinned to its
    /// CPU. Fails with a one-line error if a CPU is not available, pinning
    /// fails, a policy's parameters are invalid or the backend cannot start.
    pub fn start(config: DeviceConfig) -> Result<Emulator, EmuError> {
        Emulator::start_with(config, UringHooks::default())
    }

    /// [`Emulator::start`] with the io_uring backend's test settings.
    pub(crate) fn start_with(
        config: DeviceConfig,
        hooks: UringHooks,
    ) -> Result<Emulator, EmuError> {
        validate(&config)?;
        let now = sys::now();
        let mut policies: Vec<Option<AnyPolicy>> = Vec::with_capacity(config.queues.len());
        for q in &config.queues {
            policies.push(match q.mode {
                QueueMode::Interrupt(p) => Some(
                    p.build(now)
                        .map_err(|e| EmuError::Config(format!("strategy {}: {e}", p.kind())))?,
                ),
                QueueMode::Poll => None,
            });
        }
        let backend = Backend::new(
            &config.backend,
            config.queues.len() * MAX_QUEUE_DEPTH,
            hooks,
        )?;
        let queues = config
            .queues
            .iter()
            .map(|q| Queue::new(q.mode, config.idle_delivery))
            .collect();
        let shared = Arc::new(Shared::new(queues));
        // Each interrupt-driven queue's completion ring: the device core
        // writes it, the queue's handler state reads it.
        let mut cq_writers = Vec::with_capacity(config.queues.len());
        for (q, queue) in config.queues.iter().zip(&shared.queues) {
            if matches!(q.mode, QueueMode::Interrupt(_)) {
                let (tx, rx) = ring::channel(MAX_QUEUE_DEPTH);
                cq_writers.push(Some(DeviceCq::new(tx)));
                let _ = queue.handler.set(Mutex::new(HandlerState::new(rx)));
            } else {
                cq_writers.push(None);
            }
        }
        let mut emulator = Emulator {
            shared: Arc::clone(&shared),
            device: None,
            handlers: Vec::new(),
            handlers_started: 0,
        };

        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), EmuError>>();
        let device_cpu = config.device_cpu;
        let core = DeviceCore::new(Arc::clone(&shared), backend, policies, cq_writers);
        let tx = ready_tx.clone();
        let device_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("cint-device".into())
            .spawn(move || {
                if let Err(e) = sys::pin_to(device_cpu) {
                    // No device core will run, so no final interrupt will
                    // come: release the handlers, or joining them at the
                    // failed start would hang.
                    for q in &device_shared.queues {
                        q.finish();
                    }
                    let _ = tx.send(Err(EmuError::Pinning(e)));
                    return;
                }
                device_shared
                    .device_tid
                    .store(sys::gettid(), Ordering::Release);
                let _ = tx.send(Ok(()));
                core.run();
            })
            .map_err(|e| EmuError::Thread(e.to_string()))?;
        emulator.device = Some(handle);
        let mut expected = 1;

        for (index, q) in config.queues.iter().enumerate() {
            if !matches!(q.mode, QueueMode::Interrupt(_)) {
                continue;
            }
            let tx = ready_tx.clone();
            let handler_shared = Arc::clone(&shared);
            let cpu = q.app_cpu;
            let realtime = config.realtime;
            let spawned = std::thread::Builder::new()
                .name(format!("cint-irq-{cpu}"))
                .spawn(move || {
                    let queue = &handler_shared.queues[index];
                    queue.handler_tid.store(sys::gettid(), Ordering::Release);
                    if let Some(clock) = sys::own_cpu_clock() {
                        let _ = queue.handler_clock.set(clock);
                    }
                    // On failure the handler still serves the queue: the
                    // device's final interrupt must find a handler to
                    // deliver everything, or the failed start would hang.
                    let ready = sys::pin_to(cpu).map_err(EmuError::Pinning).and_then(|()| {
                        match sys::set_fifo(HANDLER_PRIORITY) {
                            Ok(()) => {
                                handler_shared
                                    .realtime_handlers
                                    .fetch_add(1, Ordering::Relaxed);
                                Ok(())
                            }
                            Err(why) if realtime == Realtime::Require => {
                                Err(EmuError::NoRealtime(why))
                            }
                            Err(_) => Ok(()),
                        }
                    });
                    let _ = tx.send(ready);
                    run_handler(handler_shared, index);
                });
            match spawned {
                Ok(handle) => {
                    emulator.handlers.push(handle);
                    emulator.handlers_started += 1;
                    expected += 1;
                }
                Err(e) => {
                    drop(emulator);
                    return Err(EmuError::Thread(e.to_string()));
                }
            }
        }
        drop(ready_tx);
        for _ in 0..expected {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    drop(emulator);
                    return Err(e);
                }
                Err(_) => {
                    drop(emulator);
                    return Err(EmuError::Internal("a device thread died at start".into()));
                }
            }
        }
        Ok(emulator)
    }

    /// Gives every queue `depth` driver tags, as the block layer gives a
    /// device queue its `queue_depth` (`blk_mq_get_tag`): a client's
    /// submission takes one and sleeps while none is free; a completion
    /// frees its tag as it is handled (by the handler, or by the client
    /// polling for it), and a batch of freed tags wakes the sleepers in
    /// turn (`cint_scenario::tags`, the simulator's rules). Without it a
    /// queue takes every request its clients submit. Before any client
    /// attaches; `depth` is at most [`MAX_QUEUE_DEPTH`], and its clients
    /// together may then keep more requests than that outstanding.
    pub fn limit_tags(&self, depth: u32) -> Result<(), EmuError> {
        if depth == 0 || depth as usize > MAX_QUEUE_DEPTH {
            return Err(EmuError::Config(format!(
                "tag depth {depth} is out of range 1..={MAX_QUEUE_DEPTH}"
            )));
        }
        if self.shared.registered.load(Ordering::SeqCst) > 0 {
            return Err(EmuError::Config(
                "tags are set before any client attaches".into(),
            ));
        }
        for queue in &self.shared.queues {
            let pool = std::sync::Mutex::new(cint_scenario::tags::TagPool::new(depth));
            if queue.tags.set(pool).is_err() {
                return Err(EmuError::Config("a queue's tags are set once".into()));
            }
        }
        Ok(())
    }

    /// Attaches a client to queue `queue` with up to `depth` requests in
    /// flight.
    pub fn client(&self, queue: usize, depth: usize) -> Result<Client, EmuError> {
        Client::register(&self.shared, queue, depth)
    }

    /// Counts a thread the emulator does not otherwise know of as running
    /// on queue `queue`'s application core for as long as the returned
    /// guard lives, so that interrupts there go to the real-time handler
    /// (which preempts it) rather than to an idle core's waiting thread.
    pub fn occupant(&self, queue: usize) -> Result<Occupant, EmuError> {
        self.occupant_later(queue).map(PendingOccupant::arrive)
    }

    /// [`Emulator::occupant`] for a thread that starts running later (a
    /// job of a later group, or with a start delay): nothing is counted
    /// until [`PendingOccupant::arrive`].
    pub fn occupant_later(&self, queue: usize) -> Result<PendingOccupant, EmuError> {
        if queue >= self.shared.queues.len() {
            return Err(EmuError::Config(format!(
                "queue {queue} does not exist ({} queues)",
                self.shared.queues.len()
            )));
        }
        Ok(PendingOccupant {
            shared: Arc::clone(&self.shared),
            queue,
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> DeviceStats {
        let per_queue = |counter: fn(&Queue) -> &AtomicU64| -> Vec<u64> {
            self.shared
                .queues
                .iter()
                .map(|q| counter(q).load(Ordering::SeqCst))
                .collect()
        };
        // A snapshot is not atomic, and the device keeps raising
        // interrupts while it is taken (the reading thread may even be
        // preempted half-way). The parts (waiter, queue-full) are counted
        // after their kind and read here before it, all in one SeqCst
        // order, so no part ever shows more than its whole.
        let waiter_irqs = per_queue(|q| &q.waiter_irqs);
        let queue_full_irqs = per_queue(|q| &q.queue_full_irqs);
        let urgent_irqs = per_queue(|q| &q.urgent_irqs);
        // The total from the very values reported per kind, never a
        // separate read that could straddle an interrupt.
        let irqs = per_queue(|q| &q.full_irqs)
            .iter()
            .zip(&urgent_irqs)
            .map(|(full, urgent)| full + urgent)
            .collect();
        DeviceStats {
            irqs,
            urgent_irqs,
            queue_full_irqs,
            handler_wakeups: per_queue(|q| &q.handler_wakeups),
            waiter_irqs,
            completions: per_queue(|q| &q.completions),
            cancelled: self.shared.cancelled.load(Ordering::Relaxed),
            realtime_handlers: self.shared.realtime_handlers.load(Ordering::Relaxed),
            handlers: self.handlers_started,
        }
    }

    /// Completions posted on every queue so far: what a drain watches to
    /// tell a slow device from a stuck run.
    pub fn completions_posted(&self) -> u64 {
        self.shared
            .queues
            .iter()
            .map(|q| q.completions.load(Ordering::Relaxed))
            .sum()
    }

    /// Kernel thread ids of the interrupt handlers (0 for poll queues),
    /// for per-thread accounting.
    pub fn handler_tids(&self) -> Vec<i32> {
        self.shared
            .queues
            .iter()
            .map(|q| q.handler_tid.load(Ordering::Acquire))
            .collect()
    }

    /// Has queue `queue`'s interrupt handler report when it runs and
    /// blocks to `clocks` from its next wake-up on.
    pub(crate) fn report_activity(&self, queue: usize, clocks: crate::activity::ClockPair) {
        if let Some(q) = self.shared.queues.get(queue) {
            let _ = q.activity.set(clocks);
        }
    }

    /// Thread id and CPU-time clock of each interrupt handler (poll
    /// queues have none), known once `start` has returned.
    pub(crate) fn handler_threads(&self) -> Vec<(i32, Option<libc::clockid_t>)> {
        self.shared
            .queues
            .iter()
            .filter(|q| matches!(q.mode, QueueMode::Interrupt(_)))
            .map(|q| {
                (
                    q.handler_tid.load(Ordering::Acquire),
                    q.handler_clock.get().copied(),
                )
            })
            .collect()
    }

    /// Stops the device: submissions not yet taken are cancelled, requests
    /// in the backend are completed (io_uring) or cancelled (synthetic),
    /// everything is delivered, and every emulator thread has exited when
    /// this returns.
    pub fn shutdown(mut self) -> Result<DeviceStats, EmuError> {
        self.stop_and_join()?;
        Ok(self.stats())
    }

    fn stop_and_join(&mut self) -> Result<(), EmuError> {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let mut failure = None;
        if let Some(device) = self.device.take() {
            if device.join().is_err() {
                failure = Some(EmuError::Internal("the device core panicked".into()));
                // No final interrupt will come: release the handlers.
                for q in &self.shared.queues {
                    q.finish();
                }
            }
        }
        for handler in self.handlers.drain(..) {
            if handler.join().is_err() {
                failure = Some(EmuError::Internal("an interrupt handler panicked".into()));
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A thread that will count as running on an application core once it
/// arrives ([`Emulator::occupant_later`]).
pub struct PendingOccupant {
    shared: Arc<Shared>,
    queue: usize,
}

impl PendingOccupant {
    /// The thread runs there from now, until the returned guard drops.
    pub fn arrive(self) -> Occupant {
        self.shared.queues[self.queue].idle.arrive();
        Occupant {
            shared: self.shared,
            queue: self.queue,
        }
    }
}

/// A thread counted as running on an application core (see
/// [`Emulator::occupant`]); it stops counting when dropped.
pub struct Occupant {
    shared: Arc<Shared>,
    queue: usize,
}

impl Drop for Occupant {
    fn drop(&mut self) {
        self.shared.queues[self.queue].idle.depart();
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

fn validate(config: &DeviceConfig) -> Result<(), EmuError> {
    if config.queues.is_empty() {
        return Err(EmuError::Config("a device needs at least one queue".into()));
    }
    // The caller may have pinned itself already, so its own affinity says
    // nothing about the machine: count online CPUs, and let pinning report
    // a CPU this process may not use.
    let online = sys::online_cpus();
    let mut cpus: Vec<u32> = config.queues.iter().map(|q| q.app_cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    if online < cpus.len() + 1 {
        return Err(EmuError::NotEnoughCores {
            needed: cpus.len() + 1,
            available: online,
        });
    }
    if cpus.contains(&config.device_cpu) {
        return Err(EmuError::Config(format!(
            "cpu {} cannot be both the device core and an application core",
            config.device_cpu
        )));
    }
    if cpus.len() != config.queues.len() {
        return Err(EmuError::Config(
            "each application cpu has exactly one queue".into(),
        ));
    }
    Ok(())
}
