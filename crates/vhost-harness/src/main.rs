//! `vhost-load`: drives a vhost-user-blk back end as a guest would, with no
//! guest, and reports requests/s (per back-end core) and interrupts per
//! request; `vhost-load compare` runs ours against the peer in one run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use cint_vhost_harness::compare::{self, CompareConfig};
use cint_vhost_harness::cpu::CpuMeter;
use cint_vhost_harness::device::{Session, SessionConfig};
use cint_vhost_harness::load::{self, LoadConfig, Op, Wait, DESCS_PER_REQUEST};
use cint_vhost_harness::{backend, Error};

#[derive(Parser)]
#[command(name = "vhost-load", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Load one running back end through its socket.
    Run(RunArgs),
    /// Start ours (each strategy) and the peer, load them alternately, and
    /// print each one's figures and the ratios, all measured in this run.
    Compare(CompareArgs),
}

#[derive(Args, Clone)]
struct Shape {
    /// Queues to drive, one thread each.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    queues: u16,
    /// Descriptors per queue (a power of two); default: the smallest that
    /// holds `--depth` requests of 3 descriptors, at least 256.
    #[arg(long)]
    queue_size: Option<u16>,
    /// Requests in flight per queue.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u16).range(1..=10922))]
    depth: u16,
    /// Requests published per notification (kick).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    batch: u16,
    /// Requests per queue.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Request type.
    #[arg(long, value_enum, default_value_t = Op::Read)]
    op: Op,
    /// Bytes per request (a multiple of 512).
    #[arg(long, default_value_t = 4096)]
    block_size: u32,
    /// How to wait when the used ring is empty.
    #[arg(long, value_enum, default_value_t = Wait::Irq)]
    wait: Wait,
    /// Do not negotiate VIRTIO_RING_F_EVENT_IDX.
    #[arg(long)]
    no_event_idx: bool,
    /// The request header's ioprio field.
    #[arg(long, default_value_t = 0)]
    ioprio: u32,
}

#[derive(Args)]
struct RunArgs {
    /// The back end's vhost-user socket.
    #[arg(long)]
    socket: PathBuf,
    /// The back end's process id: adds its CPU time and requests/s per core.
    #[arg(long)]
    backend_pid: Option<u32>,
    #[command(flatten)]
    shape: Shape,
}

#[derive(Args)]
struct CompareArgs {
    /// Strategies of ours to run, each as `cint vhost --strategy` takes it;
    /// separate several with `;`.
    #[arg(
        long,
        default_value = "none;adaptive,delta=6us,thr=32;cinterrupts,delta=6us,thr=32;nvme,thr=32,time=100us;vic"
    )]
    strategies: String,
    /// The `cint` binary (default: `$CINT_BIN`, or beside this program).
    #[arg(long)]
    cint: Option<PathBuf>,
    /// Another build of `cint` to run beside the main one, with the first
    /// strategy (an A/B of two back-end versions in one run); repeatable.
    #[arg(long)]
    also_cint: Vec<PathBuf>,
    /// qemu-storage-daemon (default: from PATH).
    #[arg(long)]
    qsd: Option<PathBuf>,
    /// Skip ours, measure only the peer.
    #[arg(long)]
    peer_only: bool,
    /// Rounds; each round runs every back end once, in turn.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Null image size in bytes.
    #[arg(long, default_value_t = 1 << 30)]
    image_bytes: u64,
    /// Write the figures as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    shape: Shape,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                print!("{e}");
                return ExitCode::SUCCESS;
            }
            // Clap's text spans several lines; bad input gets one.
            let text = e.to_string();
            let what: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect();
            let what = what.join(" ");
            let what = what.strip_prefix("error: ").unwrap_or(&what);
            eprintln!("vhost-load: {what} (see vhost-load --help)");
            return ExitCode::from(2);
        }
    };
    let outcome = match cli.command {
        Cmd::Run(a) => run(a),
        Cmd::Compare(a) => compare_cmd(a),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("vhost-load: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("vhost-load: {e}");
            ExitCode::from(1)
        }
    }
}

enum Failure {
    Usage(String),
    Run(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match e {
            Error::Config(m) => Failure::Usage(m),
            other => Failure::Run(other),
        }
    }
}

fn shape_configs(s: &Shape) -> Result<(SessionConfig, LoadConfig), Failure> {
    let needed = u32::from(s.depth) * u32::from(DESCS_PER_REQUEST);
    let queue_size = match s.queue_size {
        Some(q) => q,
        None => u16::try_from(needed.next_power_of_two().max(256)).map_err(|_| {
            Failure::Usage(format!(
                "--depth {} needs more than 32768 descriptors",
                s.depth
            ))
        })?,
    };
    if !queue_size.is_power_of_two() {
        return Err(Failure::Usage(format!(
            "--queue-size {queue_size} is not a power of two"
        )));
    }
    let load = LoadConfig {
        op: s.op,
        block_size: s.block_size,
        depth: s.depth,
        batch: s.batch,
        requests: s.requests,
        wait: s.wait,
        ioprio: s.ioprio,
        stall_timeout: Duration::from_secs(10),
    };
    load.validate(queue_size)?;
    let session = SessionConfig {
        queues: s.queues,
        queue_size,
        event_idx: !s.no_event_idx,
        memory_bytes: load.memory_per_queue(queue_size) * u64::from(s.queues),
    };
    Ok((session, load))
}

fn run(a: RunArgs) -> Result<(), Failure> {
    let (scfg, lcfg) = shape_configs(&a.shape)?;
    let mut session = Session::connect(&a.socket, &scfg).map_err(|e| match e {
        // Nothing listening there is the user's path, not a back end fault.
        Error::VhostUser("connect", e) => {
            Failure::Usage(format!("--socket {}: {e}", a.socket.display()))
        }
        other => other.into(),
    })?;
    let meter = a.backend_pid.map(CpuMeter::start).transpose()?;
    let result = load::run(&mut session, &lcfg)?;
    let cpu = meter.map(|m| m.stop()).transpose()?;
    session.close()?;
    let mut doc = serde_json::json!({
        "config": lcfg,
        "result": result,
        "requests_per_second": result.requests_per_second(),
        "interrupts_per_request": result.interrupts_per_request(),
    });
    if let Some(cpu) = cpu {
        doc["backend_cpu"] = serde_json::json!(cpu);
        doc["requests_per_second_per_backend_core"] =
            serde_json::json!(result.requests as f64 / cpu.cpu_seconds.max(1e-9));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&doc)
            .map_err(|e| Failure::Run(Error::Process(e.to_string())))?
    );
    if result.failed > 0 {
        return Err(Failure::Run(Error::Protocol(format!(
            "{} of {} requests completed with an error status",
            result.failed, result.requests
        ))));
    }
    Ok(())
}

fn compare_cmd(a: CompareArgs) -> Result<(), Failure> {
    let (scfg, lcfg) = shape_configs(&a.shape)?;
    let qsd = a
        .qsd
        .or_else(backend::find_qsd)
        .ok_or_else(|| Failure::Usage("qemu-storage-daemon not found in PATH (--qsd)".into()))?;
    let cint = if a.peer_only {
        None
    } else {
        Some(a.cint.or_else(backend::find_cint).ok_or_else(|| {
            Failure::Usage("the cint binary was not found (--cint or CINT_BIN)".into())
        })?)
    };
    let strategies: Vec<String> = a
        .strategies
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let cfg = CompareConfig {
        qsd,
        cint,
        strategies,
        also: a.also_cint,
        rounds: a.rounds,
        image_bytes: a.image_bytes,
        session: scfg,
        load: lcfg,
    };
    let report = compare::run(&cfg)?;
    print!("{}", report.render_text());
    if let Some(path) = a.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::Run(Error::Process(e.to_string())))?;
        std::fs::write(&path, text + "\n")
            .map_err(|e| Failure::Run(Error::Process(format!("{}: {e}", path.display()))))?;
    }
    Ok(())
}
