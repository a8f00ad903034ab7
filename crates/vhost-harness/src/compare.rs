//! One run, several back ends: the peer (qemu-storage-daemon on a null
//! image) and ours with each strategy, all started at once, each loaded in
//! turn for several rounds so that machine noise hits them alike. Figures
//! are medians over rounds; ratios are between figures of this run only.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::backend::{self, BackendProcess, Image};
use crate::cpu::CpuMeter;
use crate::device::{Session, SessionConfig};
use crate::load::{self, LoadConfig};
use crate::Error;

/// What to compare.
pub struct CompareConfig {
    /// qemu-storage-daemon.
    pub qsd: PathBuf,
    /// The `cint` binary; `None` measures the peer only.
    pub cint: Option<PathBuf>,
    /// Strategies of ours, as `cint vhost --strategy` takes them.
    pub strategies: Vec<String>,
    /// Other builds of `cint` to run beside it with the first strategy
    /// (an A/B of back-end versions in one run); not part of the ratios.
    pub also: Vec<PathBuf>,
    /// Rounds; each runs every back end once.
    pub rounds: u32,
    /// Null image size in bytes.
    pub image_bytes: u64,
    /// Session shape (queues, queue size, EVENT_IDX).
    pub session: SessionConfig,
    /// Load shape.
    pub load: LoadConfig,
}

/// One back end's figures in one round (or their medians).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Figures {
    /// Requests completed per wall-clock second.
    pub requests_per_second: f64,
    /// Back-end CPU seconds used during the round.
    pub backend_cpu_seconds: f64,
    /// Back-end cores busy on average.
    pub backend_cores: f64,
    /// Requests per back-end CPU second: requests/s per back-end core.
    pub requests_per_second_per_backend_core: f64,
    /// Back-end CPU nanoseconds per request.
    pub backend_ns_per_request: f64,
    /// Interrupts (call-eventfd writes) per request.
    pub interrupts_per_request: f64,
    /// Kicks per request.
    pub kicks_per_request: f64,
}

/// One back end over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// `qemu-storage-daemon` or `cint vhost --strategy ...`.
    pub name: String,
    /// Whether this is the peer.
    pub peer: bool,
    /// Our strategy spec, for ours.
    pub strategy: Option<String>,
    /// Medians over the rounds.
    pub median: Figures,
    /// Every round.
    pub rounds: Vec<Figures>,
    /// Interrupts the harness counted over the whole session.
    pub harness_interrupts: u64,
    /// `totals.irqs_sent` from our back end's `--stats-json`, when written.
    pub backend_irqs_sent: Option<u64>,
    /// `totals.policy_cpu_share` from our back end's `--stats-json`: the
    /// time its workers spent in policy calls over their CPU time, as the
    /// back end measured it over the whole session.
    pub backend_policy_cpu_share: Option<f64>,
    /// How the process ended when stopped with SIGTERM.
    pub exit: String,
}

/// A policy's cost next to `none`, both ours, in this run.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyCost {
    /// The strategy spec.
    pub strategy: String,
    /// Back-end CPU per request over that of `none`, minus one: the extra
    /// back-end CPU the policy costs, as a share of what `none` uses.
    /// Negative when the interrupts it saves outweigh its own work.
    pub extra_cpu_share: f64,
    /// Interrupts per request relative to `none`.
    pub interrupts_ratio: f64,
}

/// The comparison's result.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    /// The load each back end got.
    pub load: LoadConfig,
    /// Queues and queue size.
    pub queues: u16,
    /// Descriptors per queue.
    pub queue_size: u16,
    /// Rounds run.
    pub rounds: u32,
    /// Every back end.
    pub targets: Vec<Target>,
    /// Ours with `none` over the peer: requests/s per back-end core.
    pub ours_over_peer_per_core: Option<f64>,
    /// Ours with `none` over the peer: requests/s (wall clock).
    pub ours_over_peer_wall: Option<f64>,
    /// Each policy next to `none`.
    pub policies: Vec<PolicyCost>,
}

struct Running {
    name: String,
    peer: bool,
    strategy: Option<String>,
    process: BackendProcess,
    session: Option<Session>,
    stats_json: Option<PathBuf>,
    rounds: Vec<Figures>,
    interrupts: u64,
}

/// Runs the comparison.
pub fn run(cfg: &CompareConfig) -> Result<CompareReport, Error> {
    let dir = std::env::temp_dir().join(format!("cint-vhost-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::Process(format!("{}: {e}", dir.display())))?;
    let result = run_in(cfg, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(cfg: &CompareConfig, dir: &std::path::Path) -> Result<CompareReport, Error> {
    let image = Image::Null(cfg.image_bytes);
    let start_timeout = Duration::from_secs(10);
    let mut targets = Vec::new();
    let sock = dir.join("peer.sock");
    let cmd = backend::qsd_command(&cfg.qsd, &sock, &image, cfg.session.queues, true);
    targets.push(Running {
        name: "qemu-storage-daemon".into(),
        peer: true,
        strategy: None,
        process: BackendProcess::spawn("qemu-storage-daemon", cmd, &sock, start_timeout)?,
        session: None,
        stats_json: None,
        rounds: Vec::new(),
        interrupts: 0,
    });
    if let Some(cint) = &cfg.cint {
        for (i, strategy) in cfg.strategies.iter().enumerate() {
            let sock = dir.join(format!("ours-{i}.sock"));
            let stats = dir.join(format!("ours-{i}.json"));
            let mut cmd = backend::cint_command(
                cint,
                &sock,
                &image,
                strategy,
                cfg.session.queues,
                cfg.session.queue_size,
            );
            cmd.arg("--stats-json").arg(&stats);
            let name = format!("cint vhost --strategy {strategy}");
            targets.push(Running {
                process: BackendProcess::spawn(&name, cmd, &sock, start_timeout)?,
                name,
                peer: false,
                strategy: Some(strategy.clone()),
                session: None,
                stats_json: Some(stats),
                rounds: Vec::new(),
                interrupts: 0,
            });
        }
    }
    if let Some(strategy) = cfg.strategies.first() {
        for (i, other) in cfg.also.iter().enumerate() {
            let sock = dir.join(format!("also-{i}.sock"));
            let stats = dir.join(format!("also-{i}.json"));
            let mut cmd = backend::cint_command(
                other,
                &sock,
                &image,
                strategy,
                cfg.session.queues,
                cfg.session.queue_size,
            );
            cmd.arg("--stats-json").arg(&stats);
            let name = format!("{} vhost --strategy {strategy}", other.display());
            targets.push(Running {
                process: BackendProcess::spawn(&name, cmd, &sock, start_timeout)?,
                name,
                peer: false,
                // Not ours for the ratios: only the main binary's are.
                strategy: None,
                session: None,
                stats_json: Some(stats),
                rounds: Vec::new(),
                interrupts: 0,
            });
        }
    }
    for t in &mut targets {
        let session = Session::connect(&t.process.socket, &cfg.session)
            .map_err(|e| Error::Process(format!("{}: {e}", t.name)))?;
        t.session = Some(session);
    }
    // Warm-up: page in the shared memory and the back ends' code paths.
    let warm = LoadConfig {
        requests: (cfg.load.requests / 10).clamp(1, 50_000),
        ..cfg.load.clone()
    };
    for t in &mut targets {
        let r = load::run(session_of(t)?, &warm).map_err(|e| named(&t.name, e))?;
        t.interrupts += r.interrupts + r.late_interrupts;
    }
    for round in 0..cfg.rounds {
        // Rotate who goes first, so no back end always follows the same one.
        let n = targets.len();
        for k in 0..n {
            let t = &mut targets[(k + round as usize) % n];
            let meter = CpuMeter::start(t.process.pid())?;
            let r = load::run(session_of(t)?, &cfg.load).map_err(|e| named(&t.name, e))?;
            let cpu = meter.stop()?;
            if r.failed > 0 {
                return Err(Error::Protocol(format!(
                    "{}: {} of {} requests failed",
                    t.name, r.failed, r.requests
                )));
            }
            t.interrupts += r.interrupts + r.late_interrupts;
            let reqs = r.requests.max(1) as f64;
            t.rounds.push(Figures {
                requests_per_second: r.requests_per_second(),
                backend_cpu_seconds: cpu.cpu_seconds,
                backend_cores: cpu.cpu_seconds / r.seconds.max(1e-9),
                requests_per_second_per_backend_core: reqs / cpu.cpu_seconds.max(1e-9),
                backend_ns_per_request: cpu.cpu_seconds * 1e9 / reqs,
                interrupts_per_request: r.interrupts_per_request(),
                kicks_per_request: r.kicks as f64 / reqs,
            });
        }
    }
    let mut out = Vec::new();
    for mut t in targets {
        if let Some(s) = t.session.take() {
            let late = s.close().map_err(|e| named(&t.name, e))?;
            t.interrupts += late.iter().sum::<u64>();
        }
        // Ours exits by itself once its front end leaves (a SIGTERM on top
        // would race its exit path); the peer keeps listening until told.
        let stopped = if t.peer {
            t.process.stop(Duration::from_secs(10))
        } else {
            t.process.wait_exit(Duration::from_secs(10))
        };
        let exit = match stopped {
            Ok(status) => status.to_string(),
            Err(e) => e.to_string(),
        };
        let totals = t.stats_json.as_ref().and_then(|p| read_totals(p));
        let backend_irqs_sent = totals.as_ref().and_then(|t| t.get("irqs_sent")?.as_u64());
        let backend_policy_cpu_share = totals
            .as_ref()
            .and_then(|t| t.get("policy_cpu_share")?.as_f64());
        out.push(Target {
            median: median_figures(&t.rounds),
            name: t.name,
            peer: t.peer,
            strategy: t.strategy,
            rounds: t.rounds,
            harness_interrupts: t.interrupts,
            backend_irqs_sent,
            backend_policy_cpu_share,
            exit,
        });
    }
    Ok(report(cfg, out))
}

fn session_of(t: &mut Running) -> Result<&mut Session, Error> {
    t.session
        .as_mut()
        .ok_or_else(|| Error::Process(format!("{}: no session", t.name)))
}

fn named(name: &str, e: Error) -> Error {
    Error::Process(format!("{name}: {e}"))
}

/// Issue #12's bound on the policy's share of back-end CPU.
pub const POLICY_SHARE_TARGET: f64 = 0.02;

fn read_totals(path: &std::path::Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(doc.get_mut("totals")?.take())
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

fn median_figures(rounds: &[Figures]) -> Figures {
    let m = |f: fn(&Figures) -> f64| median(rounds.iter().map(f).collect());
    Figures {
        requests_per_second: m(|f| f.requests_per_second),
        backend_cpu_seconds: m(|f| f.backend_cpu_seconds),
        backend_cores: m(|f| f.backend_cores),
        requests_per_second_per_backend_core: m(|f| f.requests_per_second_per_backend_core),
        backend_ns_per_request: m(|f| f.backend_ns_per_request),
        interrupts_per_request: m(|f| f.interrupts_per_request),
        kicks_per_request: m(|f| f.kicks_per_request),
    }
}

fn is_none_strategy(spec: &str) -> bool {
    spec.split(',').next().map(str::trim) == Some("none")
}

fn report(cfg: &CompareConfig, targets: Vec<Target>) -> CompareReport {
    let peer = targets.iter().find(|t| t.peer).map(|t| t.median);
    let none = targets
        .iter()
        .find(|t| t.strategy.as_deref().is_some_and(is_none_strategy))
        .map(|t| t.median);
    let (per_core, wall) = match (none, peer) {
        (Some(o), Some(p)) => (
            Some(o.requests_per_second_per_backend_core / p.requests_per_second_per_backend_core),
            Some(o.requests_per_second / p.requests_per_second),
        ),
        _ => (None, None),
    };
    let policies = match none {
        Some(base) => targets
            .iter()
            .filter_map(|t| {
                let s = t.strategy.as_ref()?;
                if is_none_strategy(s) {
                    return None;
                }
                Some(PolicyCost {
                    strategy: s.clone(),
                    extra_cpu_share: t.median.backend_ns_per_request / base.backend_ns_per_request
                        - 1.0,
                    interrupts_ratio: t.median.interrupts_per_request
                        / base.interrupts_per_request.max(1e-12),
                })
            })
            .collect(),
        None => Vec::new(),
    };
    CompareReport {
        load: cfg.load.clone(),
        queues: cfg.session.queues,
        queue_size: cfg.session.queue_size,
        rounds: cfg.rounds,
        targets,
        ours_over_peer_per_core: per_core,
        ours_over_peer_wall: wall,
        policies,
    }
}

impl CompareReport {
    /// A table for people.
    pub fn render_text(&self) -> String {
        let mut s = format!(
            "{:?} {} B, depth {}, batch {}, {} requests x {} queue(s), wait {:?}, {} rounds (medians)\n",
            self.load.op,
            self.load.block_size,
            self.load.depth,
            self.load.batch,
            self.load.requests,
            self.queues,
            self.load.wait,
            self.rounds
        );
        s.push_str(&format!(
            "{:<52} {:>12} {:>9} {:>14} {:>10} {:>9} {:>9}\n",
            "back end", "req/s", "be cores", "req/s/be-core", "be ns/req", "irq/req", "kick/req"
        ));
        for t in &self.targets {
            let f = &t.median;
            s.push_str(&format!(
                "{:<52} {:>12.0} {:>9.2} {:>14.0} {:>10.0} {:>9.4} {:>9.4}\n",
                t.name,
                f.requests_per_second,
                f.backend_cores,
                f.requests_per_second_per_backend_core,
                f.backend_ns_per_request,
                f.interrupts_per_request,
                f.kicks_per_request
            ));
        }
        if let (Some(c), Some(w)) = (self.ours_over_peer_per_core, self.ours_over_peer_wall) {
            s.push_str(&format!(
                "ours (none) / peer: {c:.2}x requests/s per back-end core, {w:.2}x requests/s\n"
            ));
        }
        for p in &self.policies {
            s.push_str(&format!(
                "{}: back-end CPU per request {:+.1}% vs none, interrupts per request {:.3}x none\n",
                p.strategy,
                p.extra_cpu_share * 100.0,
                p.interrupts_ratio
            ));
        }
        for t in &self.targets {
            if !t.exit.ends_with("exit status: 0") {
                s.push_str(&format!("{}: {}\n", t.name, t.exit));
            }
            if t.backend_irqs_sent.is_none() && !t.peer {
                s.push_str(&format!("{}: wrote no stats JSON\n", t.name));
            }
            if let Some(sent) = t.backend_irqs_sent {
                s.push_str(&format!(
                    "{}: harness counted {} interrupts, back end reports {} sent{}\n",
                    t.name,
                    t.harness_interrupts,
                    sent,
                    if sent == t.harness_interrupts {
                        ""
                    } else {
                        "  MISMATCH"
                    }
                ));
            }
            if let Some(share) = t.backend_policy_cpu_share {
                s.push_str(&format!(
                    "{}: policy's share of worker CPU {:.2}% (target under {:.0}%{})\n",
                    t.name,
                    share * 100.0,
                    POLICY_SHARE_TARGET * 100.0,
                    if share < POLICY_SHARE_TARGET {
                        ""
                    } else {
                        ": MISSED"
                    }
                ));
            }
        }
        s
    }
}
