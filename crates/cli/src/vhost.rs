//! `cint vhost`: the vhost-user-blk back end of `cint-vhost`, its flags
//! mapped one to one onto `cint_vhost::RawOptions`.

use std::path::PathBuf;

use clap::Args;

use crate::{internal, usage, Failure};

/// `cint vhost` flags (docs/VHOST.md).
#[derive(Args)]
pub(crate) struct VhostArgs {
    /// Unix socket to create for the front end (QEMU's -chardev socket,path=...)
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// Raw image file or block device, or null:SIZE (reads zeros, drops writes)
    #[arg(long, value_name = "FILE")]
    image: String,
    /// Number of virtqueues (1 to 64), each with its own worker thread
    #[arg(long, value_name = "N")]
    queues: Option<u64>,
    /// Virtqueue size (power of two up to 1024; default 256)
    #[arg(long, value_name = "N")]
    queue_size: Option<u64>,
    /// Offer a read-only disk (writes fail with IOERR)
    #[arg(long)]
    read_only: bool,
    /// Interrupt policy: KIND[,key=value...] with a scenario's strategy keys (default none)
    #[arg(long, value_name = "SPEC")]
    strategy: Option<String>,
    /// ioprio to hint map, e.g. rt=urgent,be=none,idle=none,hint1=urgent,hint2=barrier
    #[arg(long, value_name = "SPEC")]
    hint_map: Option<String>,
    /// Write per-queue counters here on exit and on SIGUSR1
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Print one live line of counters to stderr this often (e.g. 1s)
    #[arg(long, value_name = "DURATION")]
    stats_interval: Option<String>,
    /// After the front end disconnects, wait for the next one instead of exiting
    #[arg(long)]
    reconnect: bool,
    /// QEMU's QMP socket, for vic-sched's view of the vCPU threads
    #[arg(long, value_name = "PATH")]
    qmp: Option<PathBuf>,
    /// vCPU each queue's interrupt targets, one per queue (e.g. 0,0 or 1,0), when the guest's IRQ affinity is pinned; default: queue q targets vCPU q mod vCPUs
    #[arg(long, value_name = "LIST")]
    irq_vcpus: Option<String>,
    /// Unix socket (0600) answering each connection with the counters as Prometheus text
    #[arg(long, value_name = "PATH")]
    metrics_socket: Option<PathBuf>,
}

/// Runs the back end; bad input exits 2, internal failures 1.
pub(crate) fn run(args: VhostArgs) -> Result<(), Failure> {
    let raw = cint_vhost::RawOptions {
        socket: args.socket,
        image: args.image,
        queues: args.queues,
        queue_size: args.queue_size,
        read_only: args.read_only,
        strategy: args.strategy,
        hint_map: args.hint_map,
        stats_json: args.stats_json,
        stats_interval: args.stats_interval,
        reconnect: args.reconnect,
        qmp: args.qmp,
        irq_vcpus: args.irq_vcpus,
        metrics_socket: args.metrics_socket,
    };
    cint_vhost::run(&raw).map_err(|e| {
        let message = format!("cint vhost: {e}");
        match e {
            cint_vhost::VhostError::BadInput(_) => usage(message),
            cint_vhost::VhostError::Internal(_) => internal(message),
        }
    })
}
