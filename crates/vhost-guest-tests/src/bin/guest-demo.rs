//! The guest demo: boots an unmodified Debian kernel under QEMU with one
//! vhost-user-blk disk per strategy, each served by its own `cint vhost`,
//! runs the guest workload and prints interrupts per request per strategy
//! as the guest and the back ends counted them.

use cint_vhost_guest_tests::backend::{which, BackendKind};
use cint_vhost_guest_tests::run::{self, DiskSpec, Prerequisites, RunConfig};
use cint_vhost_guest_tests::{backend, Error};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    about = "Boot a real guest on cint vhost disks, one per strategy, and count its interrupts"
)]
struct Args {
    /// A strategy spec (`cint vhost --strategy` syntax); repeat for more
    /// disks. Default: none, nvme, adaptive, cinterrupts, vic, vic-sched.
    #[arg(long = "strategy")]
    strategies: Vec<String>,
    /// Queues of each disk (the guest gets as many vCPUs). The end-to-end
    /// test adds a two-queue cinterrupts disk to the default disks.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    queues: u16,
    /// Serve the disks with qemu-storage-daemon instead of `cint vhost`
    /// (checks the guest path only: no policies, no counters).
    #[arg(long)]
    storage_daemon: bool,
    /// Keep the run's files (console, logs, images) in this folder.
    #[arg(long)]
    keep: Option<PathBuf>,
    /// RT reads in the mixed phase.
    #[arg(long, default_value_t = 200)]
    reads: u64,
    /// Seconds the guest may run.
    #[arg(long, default_value_t = 180)]
    timeout: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match demo(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("guest-demo: {e}");
            ExitCode::from(1)
        }
    }
}

fn demo(args: &Args) -> Result<(), Error> {
    let kind = if args.storage_daemon {
        BackendKind::StorageDaemon(which("qemu-storage-daemon").ok_or_else(|| {
            Error::Missing("qemu-storage-daemon (Debian package qemu-system-common)".into())
        })?)
    } else {
        backend::build_cint_under_cargo()?;
        BackendKind::Cint(backend::cint_binary()?)
    };
    let pre = Prerequisites::find(kind)?;
    let mut cfg = RunConfig {
        reads: args.reads,
        timeout: Duration::from_secs(args.timeout),
        ..RunConfig::default()
    };
    let strategies = if args.strategies.is_empty() {
        run::default_strategies()
    } else {
        args.strategies.clone()
    };
    cfg.disks = strategies
        .into_iter()
        .map(|strategy| DiskSpec {
            strategy,
            queues: args.queues,
        })
        .collect();
    let temp;
    let work = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
            dir.clone()
        }
        None => {
            temp =
                tempfile::tempdir().map_err(|e| Error::io("creating", "a temporary folder", e))?;
            temp.path().to_path_buf()
        }
    };
    eprintln!(
        "guest-demo: booting {} with {} disk(s) in {}",
        pre.kernel.vmlinuz.display(),
        cfg.disks.len(),
        work.display()
    );
    let outcome = run::run(&cfg, &pre, &work)?;
    print!("{}", outcome.table());
    if !outcome.guest.done {
        return Err(Error::Failed("the guest program did not finish".into()));
    }
    Ok(())
}
