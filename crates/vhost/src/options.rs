//! The back end's command line, validated: every refusal is one line
//! naming the option, and maps to exit status 2.

use std::path::PathBuf;
use std::time::Duration;

use cint_policy::PolicyConfig;
use cint_scenario::units::{parse_duration, parse_size};
use cint_scenario::CompletionMode;

use crate::error::VhostError;
use crate::hints::HintMap;

/// Most virtqueues a device may have: one worker thread and one io_uring
/// each, and the worker map of `vhost-user-backend` is a 64-bit mask.
pub const MAX_QUEUES: u16 = 64;
/// Largest virtqueue size (the split-ring maximum Linux and QEMU use).
pub const MAX_QUEUE_SIZE: u16 = 1024;
/// Default virtqueue size.
pub const DEFAULT_QUEUE_SIZE: u16 = 256;
/// Bytes per virtio-blk sector: capacities and offsets are in these.
pub const SECTOR: u64 = 512;

/// The command line as typed, before validation (what `cint vhost` hands
/// over).
#[derive(Clone, Debug, Default)]
pub struct RawOptions {
    /// `--socket PATH`.
    pub socket: PathBuf,
    /// `--image FILE` or `null:SIZE`.
    pub image: String,
    /// `--queues N`.
    pub queues: Option<u64>,
    /// `--queue-size N`.
    pub queue_size: Option<u64>,
    /// `--read-only`.
    pub read_only: bool,
    /// `--strategy SPEC`.
    pub strategy: Option<String>,
    /// `--hint-map SPEC`.
    pub hint_map: Option<String>,
    /// `--stats-json FILE`.
    pub stats_json: Option<PathBuf>,
    /// `--stats-interval DURATION`.
    pub stats_interval: Option<String>,
    /// `--reconnect`.
    pub reconnect: bool,
    /// `--qmp PATH`.
    pub qmp: Option<PathBuf>,
    /// `--irq-vcpus LIST`.
    pub irq_vcpus: Option<String>,
    /// `--metrics-socket PATH`.
    pub metrics_socket: Option<PathBuf>,
}

/// What backs the virtual disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageSpec {
    /// A raw image file or a block device.
    File(PathBuf),
    /// A null device of this many bytes: reads return zeros, writes are
    /// dropped.
    Null(u64),
}

/// The validated command line.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the vhost-user socket is created.
    pub socket: PathBuf,
    /// The backing image.
    pub image: ImageSpec,
    /// Number of virtqueues, 1..=[`MAX_QUEUES`].
    pub queues: u16,
    /// Virtqueue size (power of two, 2..=[`MAX_QUEUE_SIZE`]).
    pub queue_size: u16,
    /// Refuse writes (`VIRTIO_BLK_F_RO`).
    pub read_only: bool,
    /// The interrupt policy of every queue.
    pub strategy: PolicyConfig,
    /// `--strategy` as given, for the stats.
    pub strategy_spec: String,
    /// ioprio to hint.
    pub hint_map: HintMap,
    /// Where the stats JSON goes.
    pub stats_json: Option<PathBuf>,
    /// Period of the live stats line.
    pub stats_interval: Option<Duration>,
    /// Wait for the next front end after a disconnect.
    pub reconnect: bool,
    /// QEMU's QMP socket (for vic-sched).
    pub qmp: Option<PathBuf>,
    /// The vCPU each queue's interrupt targets, one per queue, when the
    /// operator pinned them in the guest; `None`: queue `q` is taken to
    /// target vCPU `q mod vCPUs` (Linux's managed affinity with as many
    /// queues as vCPUs).
    pub irq_vcpus: Option<Vec<usize>>,
    /// A unix socket serving the counters as Prometheus text.
    pub metrics_socket: Option<PathBuf>,
}

impl RawOptions {
    /// Validates every option; the first problem is the error.
    pub fn validate(&self) -> Result<Options, VhostError> {
        let queues = match self.queues {
            None => 1,
            Some(n) if n == 0 || n > u64::from(MAX_QUEUES) => {
                return Err(VhostError::bad(format!(
                    "--queues {n}: must be between 1 and {MAX_QUEUES}"
                )))
            }
            Some(n) => n as u16,
        };
        let queue_size = match self.queue_size {
            None => DEFAULT_QUEUE_SIZE,
            Some(n) if !(2..=u64::from(MAX_QUEUE_SIZE)).contains(&n) || !n.is_power_of_two() => {
                return Err(VhostError::bad(format!(
                    "--queue-size {n}: must be a power of two between 2 and {MAX_QUEUE_SIZE}"
                )))
            }
            Some(n) => n as u16,
        };
        let strategy_spec = self.strategy.clone().unwrap_or_else(|| "none".into());
        let strategy = parse_strategy(&strategy_spec)?;
        let hint_map = match &self.hint_map {
            Some(s) => HintMap::parse(s)?,
            None => HintMap::default(),
        };
        let stats_interval = match &self.stats_interval {
            None => None,
            Some(s) => match parse_duration(s) {
                Ok(ns) if ns >= 1_000_000 => Some(Duration::from_nanos(ns)),
                Ok(_) => {
                    return Err(VhostError::bad(format!(
                        "--stats-interval {s}: must be at least 1ms"
                    )))
                }
                Err(e) => return Err(VhostError::bad(format!("--stats-interval {s}: {e}"))),
            },
        };
        let irq_vcpus = match &self.irq_vcpus {
            None => None,
            Some(list) => Some(parse_irq_vcpus(list, queues)?),
        };
        if irq_vcpus.is_some() && self.qmp.is_none() {
            return Err(VhostError::bad(
                "--irq-vcpus: only with --qmp (it says which vCPU thread vic-sched watches)",
            ));
        }
        Ok(Options {
            socket: self.socket.clone(),
            image: parse_image(&self.image)?,
            queues,
            queue_size,
            read_only: self.read_only,
            strategy,
            strategy_spec,
            hint_map,
            stats_json: self.stats_json.clone(),
            stats_interval,
            reconnect: self.reconnect,
            qmp: self.qmp.clone(),
            irq_vcpus,
            metrics_socket: self.metrics_socket.clone(),
        })
    }
}

/// Parses `--irq-vcpus`: one vCPU index per queue, comma-separated.
fn parse_irq_vcpus(list: &str, queues: u16) -> Result<Vec<usize>, VhostError> {
    let vcpus = list
        .split(',')
        .map(|item| {
            item.trim().parse::<u16>().map(usize::from).map_err(|_| {
                VhostError::bad(format!(
                    "--irq-vcpus {list}: '{item}' is not a vCPU index (0 to 65535)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if vcpus.len() != usize::from(queues) {
        return Err(VhostError::bad(format!(
            "--irq-vcpus {list}: {} vCPUs for {queues} queue(s); give one per queue",
            vcpus.len()
        )));
    }
    Ok(vcpus)
}

/// Parses `--image`: a path, or `null:SIZE` (a multiple of 512 bytes).
pub fn parse_image(spec: &str) -> Result<ImageSpec, VhostError> {
    if let Some(size) = spec.strip_prefix("null:") {
        let bytes =
            parse_size(size).map_err(|e| VhostError::bad(format!("--image {spec}: {e}")))?;
        if bytes == 0 || bytes % SECTOR != 0 {
            return Err(VhostError::bad(format!(
                "--image {spec}: the size must be a non-zero multiple of 512 bytes (got {bytes})"
            )));
        }
        return Ok(ImageSpec::Null(bytes));
    }
    if spec.is_empty() {
        return Err(VhostError::bad("--image: empty path"));
    }
    Ok(ImageSpec::File(PathBuf::from(spec)))
}

/// Parses `--strategy KIND[,key=value...]` through the scenario parser,
/// so kinds, keys, defaults and validation are those of a scenario's
/// `[[strategy]]` table (defaults from the default device profile).
pub fn parse_strategy(spec: &str) -> Result<PolicyConfig, VhostError> {
    let bad = |m: String| VhostError::bad(format!("--strategy {spec}: {m}"));
    let mut parts = spec.split(',');
    let kind = parts.next().unwrap_or("").trim();
    // Kinds that choose how the host completes a request, not when the
    // device interrupts.
    let guests_choice = |k: &str| matches!(k, "poll" | "hybrid-poll" | "mode-select");
    let known: Vec<&str> = cint_scenario::strategy::KINDS
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !guests_choice(k))
        .collect();
    if !known.contains(&kind) {
        let why = if guests_choice(kind) {
            "polling, and choosing between polling and interrupts, is the guest's choice, not \
             the device's"
        } else {
            "unknown strategy kind"
        };
        return Err(bad(format!("{why} (known: {})", known.join(", "))));
    }
    let mut text = format!(
        "name = \"vhost\"\n[[strategy]]\nname = \"vhost\"\nkind = {}\n",
        cint_scenario::toml_string(kind)
    );
    for part in parts {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| bad(format!("\"{part}\" is not key=value")))?;
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad(format!("\"{key}\" is not a key")));
        }
        let value = value.trim();
        // Integers and booleans are TOML values; anything else (durations)
        // is a string, as a scenario file writes it.
        let literal = if value.parse::<i64>().is_ok() || value == "true" || value == "false" {
            value.to_string()
        } else {
            cint_scenario::toml_string(value)
        };
        text.push_str(&format!("{key} = {literal}\n"));
    }
    text.push_str("[[job]]\nname = \"placeholder\"\n");
    let scenario = cint_scenario::load_str(&text, "--strategy", &[]).map_err(|e| {
        if e.key.is_empty() {
            bad(e.message.lines().collect::<Vec<_>>().join(" "))
        } else {
            let key = e.key.rsplit('.').next().unwrap_or(&e.key).to_string();
            bad(format!(
                "{key}: {}",
                e.message.lines().collect::<Vec<_>>().join(" ")
            ))
        }
    })?;
    match scenario.strategies.first().map(|s| s.mode) {
        Some(CompletionMode::Interrupt(config)) => Ok(config),
        _ => Err(bad(
            "not an interrupt strategy: how the guest completes its requests is its own choice"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cint_policy::US;

    #[test]
    fn strategies_parse_with_scenario_keys() {
        assert_eq!(parse_strategy("none").unwrap(), PolicyConfig::None);
        match parse_strategy("adaptive,delta=6us,thr=32").unwrap() {
            PolicyConfig::Adaptive(p) => {
                assert_eq!(p.delta, 6 * US);
                assert_eq!(p.thr, 32);
            }
            other => panic!("{other:?}"),
        }
        match parse_strategy("cinterrupts,delta=6us,thr=32,ooo=false").unwrap() {
            PolicyConfig::Cinterrupts(p) => assert!(!p.ooo),
            other => panic!("{other:?}"),
        }
        match parse_strategy("nvme,thr=8,time=100us").unwrap() {
            PolicyConfig::Nvme(p) => assert_eq!((p.thr, p.time), (8, 100 * US)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_strategy("vic").unwrap(),
            PolicyConfig::Vic(_)
        ));
        assert!(matches!(
            parse_strategy("vic-sched").unwrap(),
            PolicyConfig::VicSched(_)
        ));
    }

    #[test]
    fn bad_strategies_are_one_line_naming_the_option() {
        for spec in [
            "fast",
            "poll",
            "mode-select",
            "mode-select,interrupts=none",
            "adaptive,delta",
            "adaptive,delta=6",
            "adaptive,ooo=true",
            "nvme,thr=-1",
            "",
            "adaptive,a b=1",
        ] {
            let e = parse_strategy(spec).unwrap_err();
            assert_eq!(e.exit_status(), 2, "{spec}: {e}");
            let m = e.to_string();
            assert!(m.starts_with(&format!("--strategy {spec}: ")), "{m}");
            assert!(!m.contains('\n'), "{m}");
        }
    }

    #[test]
    fn images_and_counts_are_validated() {
        assert_eq!(parse_image("null:1G").unwrap(), ImageSpec::Null(1 << 30));
        assert!(parse_image("null:1000").is_err());
        assert!(parse_image("null:0").is_err());
        assert!(parse_image("null:lots").is_err());
        let base = RawOptions {
            socket: "s".into(),
            image: "null:1M".into(),
            ..RawOptions::default()
        };
        assert_eq!(base.validate().unwrap().queues, 1);
        for (q, ok) in [(0, false), (1, true), (64, true), (65, false)] {
            let raw = RawOptions {
                queues: Some(q),
                ..base.clone()
            };
            assert_eq!(raw.validate().is_ok(), ok, "queues {q}");
        }
        for (s, ok) in [(0, false), (3, false), (256, true), (2048, false)] {
            let raw = RawOptions {
                queue_size: Some(s),
                ..base.clone()
            };
            assert_eq!(raw.validate().is_ok(), ok, "queue size {s}");
        }
    }

    #[test]
    fn irq_vcpus_name_one_vcpu_per_queue_and_need_qmp() {
        let base = RawOptions {
            socket: "s".into(),
            image: "null:1M".into(),
            queues: Some(2),
            qmp: Some("qmp.sock".into()),
            ..RawOptions::default()
        };
        let with = |list: &str| RawOptions {
            irq_vcpus: Some(list.into()),
            ..base.clone()
        };
        assert_eq!(base.validate().unwrap().irq_vcpus, None);
        assert_eq!(with("1,0").validate().unwrap().irq_vcpus, Some(vec![1, 0]));
        assert_eq!(
            with(" 0 , 0").validate().unwrap().irq_vcpus,
            Some(vec![0, 0])
        );
        for (list, says) in [
            ("0", "1 vCPUs for 2 queue(s)"),
            ("0,1,2", "3 vCPUs for 2 queue(s)"),
            ("0,x", "'x' is not a vCPU index"),
            ("0,-1", "'-1' is not a vCPU index"),
            ("", "'' is not a vCPU index"),
        ] {
            let e = with(list).validate().unwrap_err();
            assert_eq!(e.exit_status(), 2, "{list}: {e}");
            let m = e.to_string();
            assert!(m.starts_with(&format!("--irq-vcpus {list}: ")), "{m}");
            assert!(m.contains(says), "{m}");
        }
        let without_qmp = RawOptions {
            qmp: None,
            ..with("0,1")
        };
        let e = without_qmp.validate().unwrap_err();
        assert!(
            e.to_string().starts_with("--irq-vcpus: only with --qmp"),
            "{e}"
        );
    }
}
