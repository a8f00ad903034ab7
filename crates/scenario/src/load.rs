//! Loading a scenario: TOML text -> document tree -> `--set` overrides ->
//! resolved profiles -> validated [`Scenario`]. Every refusal is one
//! [`ScenarioError`] naming the file, the line and the key.

use std::path::Path;

use cint_policy::{Nanos, SEC};

use crate::emu_config::EmuConfig;
use crate::error::{Origin, ScenarioError};
use crate::model::Scenario;
use crate::overlay::{defaults_with, overlay};
use crate::profiles::{DeviceProfile, HostProfile, DEVICE_MODELS, HOST_MODELS};
use crate::section::{quoted_list, Section};
use crate::tree::{self, Node, Table, Value};
use crate::units::format_duration;
use crate::{job, set, strategy};

/// `seed` when the file does not give one.
pub const DEFAULT_SEED: u64 = 1;
/// `duration` when the file does not give one: one second of measured time.
pub const DEFAULT_DURATION: Nanos = SEC;
/// `warmup` when the file does not give one (like fio's `ramp_time`).
pub const DEFAULT_WARMUP: Nanos = 0;
/// Longest `duration` or `warmup` accepted: an hour.
pub const MAX_RUN_TIME: Nanos = 3_600 * SEC;
/// `[device] model` when the file does not give one.
pub const DEFAULT_DEVICE: &str = "optane-p4800x";
/// `[host] model` when the file does not give one.
pub const DEFAULT_HOST: &str = "xeon-e5-2660v4";
/// Most application cores a host may have.
pub const MAX_CORES: u64 = 4_096;

const TOP_KEYS: &[&str] = &[
    "name", "seed", "duration", "warmup", "device", "host", "strategy", "job", "emu",
];

/// Reads and validates a scenario file, applying `--set` overrides
/// (`KEY=VALUE` strings) first.
pub fn load_file(path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        source: source.clone(),
        origin: Origin::File,
        key: String::new(),
        message: format!("cannot read the scenario: {e}"),
    })?;
    load_str(&text, &source, sets)
}

/// Parses and validates scenario text; `source_name` names it in errors.
pub fn load_str(text: &str, source_name: &str, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let mut root = tree::parse(text, source_name)?;
    for arg in sets {
        set::apply(&mut root, arg, source_name)?;
    }
    resolve(&root, source_name)
}

fn resolve(root: &Table, source: &str) -> Result<Scenario, ScenarioError> {
    let mut top = Section::new(source, "", root, Origin::Line(1));
    let name = top.required_string("name")?;
    if name.trim().is_empty() {
        return Err(top.error("name", "must not be empty"));
    }
    let seed = top.int("seed", 0, i64::MAX as u64)?.unwrap_or(DEFAULT_SEED);
    let duration = top.duration("duration")?.unwrap_or(DEFAULT_DURATION);
    if duration == 0 {
        return Err(top.error("duration", "must be longer than zero"));
    }
    if duration > MAX_RUN_TIME {
        return Err(top.error(
            "duration",
            format!("must be at most 3600s (got {})", format_duration(duration)),
        ));
    }
    let warmup = top.duration("warmup")?.unwrap_or(DEFAULT_WARMUP);
    if warmup > MAX_RUN_TIME {
        return Err(top.error(
            "warmup",
            format!("must be at most 3600s (got {})", format_duration(warmup)),
        ));
    }

    let device_node = top.node("device");
    let device = resolve_device(source, device_node)?;
    let host_node = top.node("host");
    let host = resolve_host(source, host_node)?;
    let emu = match top.node("emu") {
        None => EmuConfig::default(),
        Some(n) => defaults_with(source, "emu", table_of(source, "emu", n)?)?,
    };

    let strategies = strategy::parse_all(source, top.node("strategy"), &device)?;
    let jobs = job::parse_all(source, top.node("job"), &device, &host)?;
    top.finish("the top level", TOP_KEYS)?;

    Ok(Scenario {
        name,
        source: source.to_string(),
        seed,
        duration,
        warmup,
        device,
        host,
        strategies,
        jobs,
        emu,
    })
}

/// The node as a table, or an error naming the section.
pub(crate) fn table_of<'a>(
    source: &str,
    key: &str,
    node: &'a Node,
) -> Result<&'a Table, ScenarioError> {
    match &node.value {
        Value::Table(t) => Ok(t),
        v => Err(ScenarioError {
            source: source.to_string(),
            origin: node.origin.clone(),
            key: key.to_string(),
            message: format!("must be a table ([{key}]), got {}", v.type_name()),
        }),
    }
}

fn model_of<'a>(
    source: &'a str,
    section: &str,
    node: Option<&'a Node>,
    default: &str,
    known: &[&str],
) -> Result<(String, Section<'a>), ScenarioError> {
    static EMPTY: Table = Vec::new();
    let (table, origin) = match node {
        Some(n) => (table_of(source, section, n)?, n.origin.clone()),
        None => (&EMPTY, Origin::Line(1)),
    };
    let mut sec = Section::new(source, section, table, origin);
    let model = sec.string("model")?.unwrap_or_else(|| default.to_string());
    if !known.contains(&model.as_str()) {
        return Err(sec.error(
            "model",
            format!(
                "unknown {section} model \"{model}\" (built-in: {})",
                quoted_list(known)
            ),
        ));
    }
    Ok((model, sec))
}

fn resolve_device(source: &str, node: Option<&Node>) -> Result<DeviceProfile, ScenarioError> {
    let (model, sec) = model_of(source, "device", node, DEFAULT_DEVICE, DEVICE_MODELS)?;
    let base =
        DeviceProfile::builtin(&model).ok_or_else(|| sec.error("model", "no such profile"))?;
    let user = node.map_or(&[][..], |n| match &n.value {
        Value::Table(t) => t.as_slice(),
        _ => &[],
    });
    let device: DeviceProfile = overlay(source, "device", &base, user, &["model"])?;
    let positive = [
        ("parallel_units", u64::from(device.parallel_units)),
        ("queue_depth", u64::from(device.queue_depth)),
        ("capacity", device.capacity.0),
    ];
    for (key, v) in positive {
        if v == 0 {
            return Err(sec.error(key, "must be at least 1 (got 0)"));
        }
    }
    if device.capacity.0 % 512 != 0 {
        return Err(sec.error(
            "capacity",
            format!(
                "must be a multiple of 512 bytes (got {})",
                device.capacity.0
            ),
        ));
    }
    for (op, timing) in [("read", &device.read), ("write", &device.write)] {
        if timing.bandwidth == 0 {
            let origin = nested_origin(node, &[op, "bandwidth"]);
            return Err(ScenarioError {
                source: source.to_string(),
                origin,
                key: format!("device.{op}.bandwidth"),
                message: "must be at least 1 byte per second (got 0)".into(),
            });
        }
    }
    Ok(device)
}

fn resolve_host(source: &str, node: Option<&Node>) -> Result<HostProfile, ScenarioError> {
    let (model, sec) = model_of(source, "host", node, DEFAULT_HOST, HOST_MODELS)?;
    let base = HostProfile::builtin(&model).ok_or_else(|| sec.error("model", "no such profile"))?;
    let user = node.map_or(&[][..], |n| match &n.value {
        Value::Table(t) => t.as_slice(),
        _ => &[],
    });
    let host: HostProfile = overlay(source, "host", &base, user, &["model"])?;
    let cores = u64::from(host.cores);
    if cores == 0 || cores > MAX_CORES {
        return Err(sec.error("cores", format!("must be in 1..={MAX_CORES} (got {cores})")));
    }
    Ok(host)
}

/// Where a nested key (`read.bandwidth`) was written, or its section.
fn nested_origin(node: Option<&Node>, path: &[&str]) -> Origin {
    let Some(mut node) = node else {
        return Origin::Line(1);
    };
    for p in path {
        match &node.value {
            Value::Table(t) => match tree::get(t, p) {
                Some(n) => node = n,
                None => break,
            },
            _ => break,
        }
    }
    node.origin.clone()
}
