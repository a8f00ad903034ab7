//! The process around the device: the socket, the connection loop,
//! signals and the stats outputs.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use vhost::vhost_user::{Error as VhostUserError, Listener};
use vhost_user_backend::{Error as DaemonError, VhostUserDaemon};
use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

use crate::backend::BlkBackend;
use crate::error::VhostError;
use crate::image::Image;
use crate::options::Options;
use crate::stats::{self, QueueStats};
use crate::vcpu::{self, SamplingCost};
use cint_policy::PolicyConfig;

/// Runs the back end until a signal, or until the front end goes away
/// without `--reconnect`. Returns once the stats are written and the
/// socket removed.
pub fn run(opts: &Options) -> Result<(), VhostError> {
    let image = Arc::new(Image::open(&opts.image, opts.read_only)?);
    check_socket_path(&opts.socket, "--socket")?;
    if let Some(path) = &opts.metrics_socket {
        check_socket_path(path, "--metrics-socket")?;
    }
    if let Some(path) = &opts.stats_json {
        stats::check_writable(path).map_err(|e| {
            VhostError::bad(format!(
                "--stats-json {}: cannot write: {e}",
                path.display()
            ))
        })?;
    }
    // Before any thread exists, so that every thread inherits the mask and
    // only the signal thread receives these.
    let signals = block_signals()?;
    let backend = Arc::new(BlkBackend::new(
        image,
        opts.queues,
        opts.queue_size,
        opts.read_only,
        &opts.strategy,
        opts.hint_map,
    )?);
    // The metrics socket first: the vhost-user socket's appearing is what
    // a VMM or a script waits for, and then the metrics must be there
    // too. Bound second, a scrape right after that readiness once found
    // no metrics socket (the command's own test, on a loaded machine).
    let metrics =
        match &opts.metrics_socket {
            Some(path) => Some(owner_only(path, || UnixListener::bind(path)).map_err(|e| {
                VhostError::bad(format!("--metrics-socket {}: {e}", path.display()))
            })?),
            None => None,
        };
    let mut listener = listen(&opts.socket).inspect_err(|_| {
        if let Some(path) = &opts.metrics_socket {
            let _ = std::fs::remove_file(path);
        }
    })?;
    let sampling = match (&opts.qmp, &opts.strategy) {
        (Some(qmp), PolicyConfig::VicSched(_)) => {
            let cost = Arc::new(SamplingCost::default());
            vcpu::spawn_sampler(
                qmp.clone(),
                opts.irq_vcpus.clone(),
                Arc::clone(&backend),
                Arc::clone(&cost),
            )
            .map_err(|e| VhostError::internal(format!("starting the vCPU sampler: {e}")))?;
            Some(cost)
        }
        (None, PolicyConfig::VicSched(_)) => {
            // Without the vCPU's run state the policy never learns that
            // the guest runs: say so rather than run a silent vIC.
            eprintln!(
                "cint vhost: note: vic-sched without --qmp never sees the vCPU's schedule; \
                 it behaves as vIC with the vic-sched defaults"
            );
            None
        }
        (Some(qmp), _) => {
            eprintln!(
                "cint vhost: note: --qmp {} is only used by vic-sched; ignored",
                qmp.display()
            );
            None
        }
        _ => None,
    };
    let outputs = Arc::new(Outputs {
        backend: Arc::clone(&backend),
        strategy: opts.strategy_spec.clone(),
        stats_json: opts.stats_json.clone(),
        socket: opts.socket.clone(),
        metrics_socket: opts.metrics_socket.clone(),
        sampling,
        writing: std::sync::Mutex::new(()),
    });
    if let Some(metrics) = metrics {
        let outputs = Arc::clone(&outputs);
        std::thread::Builder::new()
            .name("cint-vhost-metrics".into())
            .spawn(move || serve_metrics(&metrics, &outputs))
            .map_err(|e| VhostError::internal(format!("starting the metrics thread: {e}")))?;
    }
    spawn_signal_thread(signals, Arc::clone(&outputs))?;
    if let Some(every) = opts.stats_interval {
        let backend = Arc::clone(&backend);
        std::thread::Builder::new()
            .name("cint-vhost-stats".into())
            .spawn(move || live_stats(&backend, every))
            .map_err(|e| VhostError::internal(format!("starting the stats thread: {e}")))?;
    }
    eprintln!(
        "cint vhost: serving {} on {} ({} queue(s) of {}, strategy {})",
        match &opts.image {
            crate::options::ImageSpec::File(p) => p.display().to_string(),
            crate::options::ImageSpec::Null(n) => format!("null:{n}"),
        },
        opts.socket.display(),
        opts.queues,
        opts.queue_size,
        opts.strategy_spec
    );

    let result = serve(&backend, &mut listener, opts.reconnect);
    outputs.finish();
    result
}

fn serve(
    backend: &Arc<BlkBackend>,
    listener: &mut Listener,
    reconnect: bool,
) -> Result<(), VhostError> {
    loop {
        let mem = GuestMemoryAtomic::new(GuestMemoryMmap::new());
        backend.new_connection(mem.clone());
        let mut daemon = VhostUserDaemon::new("cint-vhost".into(), Arc::clone(backend), mem)
            .map_err(|e| VhostError::internal(format!("vhost-user daemon: {e}")))?;
        let handlers = daemon.get_epoll_handlers();
        backend
            .register(&handlers)
            .map_err(|e| VhostError::internal(format!("registering queue events: {e}")))?;
        daemon
            .start(listener)
            .map_err(|e| VhostError::internal(format!("accepting a front end: {e}")))?;
        let ended = daemon.wait();
        // The connection is gone: let in-flight backing I/O land (into
        // memory the requests keep mapped) before the workers stop.
        let left = backend.wait_idle();
        if left > 0 {
            eprintln!("cint vhost: {left} request(s) still in flight after the front end left");
        }
        for h in &handlers {
            h.send_exit_event();
        }
        // Dropping the daemon joins its worker threads; only then may the
        // exit events be cleared for the next connection.
        drop(handlers);
        drop(daemon);
        backend.rearm_exit_events();
        if !backend.was_spoken_to() {
            // A liveness probe, not a front end: keep waiting.
            continue;
        }
        match ended {
            Ok(()) => eprintln!("cint vhost: front end disconnected"),
            Err(DaemonError::HandleRequest(
                VhostUserError::Disconnected
                | VhostUserError::PartialMessage
                | VhostUserError::SocketBroken(_),
            )) => eprintln!("cint vhost: front end disconnected"),
            Err(e) => eprintln!("cint vhost: front end connection ended: {e}"),
        }
        if !reconnect {
            return Ok(());
        }
        eprintln!("cint vhost: waiting for the next front end");
    }
}

/// Refuses a socket path that exists: a live socket is in use, anything
/// else is not ours to remove.
fn check_socket_path(path: &Path, option: &str) -> Result<(), VhostError> {
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(VhostError::bad(format!("{option} {shown}: {e}"))),
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                Err(VhostError::bad(format!(
                    "{option} {shown}: in use (a process is listening on it)"
                )))
            } else {
                Err(VhostError::bad(format!(
                    "{option} {shown}: a socket nobody listens on already exists; remove it if it is stale"
                )))
            }
        }
        Ok(_) => Err(VhostError::bad(format!(
            "{option} {shown}: exists and is not a socket"
        ))),
    }
}

/// Creates the vhost-user socket, owner-only.
fn listen(path: &Path) -> Result<Listener, VhostError> {
    owner_only(path, || {
        Listener::new(path, false).map_err(std::io::Error::other)
    })
    .map_err(|e| VhostError::bad(format!("--socket {}: {e}", path.display())))
}

/// Creates a socket file with `bind`, owner-only from the start (umask
/// around the bind, so there is no window in which others may connect).
/// Called before any other thread exists.
fn owner_only<T>(path: &Path, bind: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    // SAFETY: umask only changes this process's file-creation mask; no
    // other thread creates files at this point (the caller runs before
    // any thread is started).
    let old = unsafe { libc::umask(0o177) };
    let bound = bind();
    // SAFETY: as above, restoring the previous mask.
    unsafe { libc::umask(old) };
    let bound = bound?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(bound)
}

/// Answers every connection to `--metrics-socket` with the counters as
/// Prometheus text, then closes it (scrape with e.g. `socat - UNIX:PATH`).
fn serve_metrics(listener: &UnixListener, outputs: &Outputs) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let text = stats::prometheus(&outputs.strategy, &outputs.backend.stats());
        let _ = stream.write_all(text.as_bytes());
    }
}

/// What the back end leaves behind when it stops or is asked.
struct Outputs {
    backend: Arc<BlkBackend>,
    strategy: String,
    stats_json: Option<PathBuf>,
    socket: PathBuf,
    metrics_socket: Option<PathBuf>,
    sampling: Option<Arc<SamplingCost>>,
    /// Held from taking the counters to the rename, so that of two
    /// writers the later snapshot is the one left in the file.
    writing: std::sync::Mutex<()>,
}

impl Outputs {
    fn sampling_json(&self) -> Option<serde_json::Value> {
        let cost = self.sampling.as_ref()?;
        let samples = cost.samples.load(Ordering::Relaxed);
        let total = cost.total_ns.load(Ordering::Relaxed);
        Some(serde_json::json!({
            "samples": samples,
            "mean_ns": total.checked_div(samples).unwrap_or(0),
            "max_ns": cost.max_ns.load(Ordering::Relaxed),
            "period_ns": vcpu::SAMPLE_PERIOD.as_nanos() as u64,
        }))
    }

    fn write_stats(&self) {
        if let Some(path) = &self.stats_json {
            let _one_writer = self
                .writing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut doc = stats::document(&self.strategy, &self.backend.stats());
            if let (Some(sampling), Some(map)) = (self.sampling_json(), doc.as_object_mut()) {
                map.insert("vcpu_sampling".into(), sampling);
            }
            if let Err(e) = stats::write_atomically(path, &doc) {
                eprintln!("cint vhost: --stats-json {}: {e}", path.display());
            }
        }
    }

    /// Stats written, our socket removed.
    fn finish(&self) {
        self.write_stats();
        if let Some(s) = self.sampling_json() {
            eprintln!("cint vhost: vCPU sampling: {s}");
        }
        let _ = std::fs::remove_file(&self.socket);
        if let Some(path) = &self.metrics_socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn block_signals() -> Result<libc::sigset_t, VhostError> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it
    // and pthread_sigmask reads it; all pointers are to locals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
            libc::sigaddset(&mut set, s);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(VhostError::internal(format!(
                "blocking signals: {}",
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        Ok(set)
    }
}

fn spawn_signal_thread(set: libc::sigset_t, outputs: Arc<Outputs>) -> Result<(), VhostError> {
    std::thread::Builder::new()
        .name("cint-vhost-signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set owned by this
            // closure and `sig` a local the call writes.
            let rc = unsafe { libc::sigwait(&set, &mut sig) };
            if rc != 0 {
                continue;
            }
            if sig == libc::SIGUSR1 {
                outputs.write_stats();
            } else {
                outputs.finish();
                std::process::exit(0);
            }
        })
        .map(|_| ())
        .map_err(|e| VhostError::internal(format!("starting the signal thread: {e}")))
}

fn live_stats(backend: &BlkBackend, every: std::time::Duration) {
    let mut before = QueueStats::default();
    let mut at = Instant::now();
    loop {
        std::thread::sleep(every);
        let mut now = QueueStats::default();
        for q in backend.stats() {
            now.add(&q);
        }
        let secs = at.elapsed().as_secs_f64();
        at = Instant::now();
        eprintln!("{}", stats::live_line(&now, &before, secs));
        before = now;
    }
}
