//! `[[strategy]]` tables: kind, per-kind keys, defaults, and the policy
//! library's own parameter validation mapped back to the key's line.

use cint_policy::config::{
    AdaptiveParams, BarrierMode, CinterruptsParams, NvmeParams, StormGuardMode, VicParams,
    VicSchedParams,
};
use cint_policy::{PolicyConfig, PolicyError, US};

use crate::error::{Origin, ScenarioError};
use crate::model::{CompletionMode, HybridSleep, Strategy};
use crate::profiles::DeviceProfile;
use crate::section::{quoted_list, Section};
use crate::tree::{Node, Value};
use crate::units::format_duration;

/// NVMe aggregation threshold when `thr` is not given (the adaptive
/// reference `thr` of the papers).
pub const NVME_DEFAULT_THR: u32 = 32;
/// NVMe aggregation time when `time` is not given: one unit of the
/// standard's 100 us granularity.
pub const NVME_DEFAULT_TIME: u64 = 100 * US;

/// Every strategy kind and the keys it takes besides `name` and `kind`.
pub const KINDS: &[(&str, &[&str])] = &[
    ("none", &[]),
    ("nvme", &["thr", "time", "coalescing_disabled"]),
    ("adaptive", &["delta", "thr"]),
    (
        "cinterrupts",
        &["delta", "thr", "ooo", "barrier", "max_irq_rate", "guard"],
    ),
    (
        "vic",
        &[
            "cif_threshold",
            "iops_threshold",
            "epoch",
            "ipi_threshold",
            "quirk_reset_on_skip",
            "quirk_failsafe",
        ],
    ),
    (
        "vic-sched",
        &[
            "cif_threshold",
            "iops_threshold",
            "epoch",
            "ipi_threshold",
            "quirk_reset_on_skip",
            "quirk_failsafe",
            "clock_margin",
        ],
    ),
    ("poll", &["interrupts"]),
    ("hybrid-poll", &["sleep", "interrupts"]),
    ("mode-select", &["interrupts"]),
];

/// The kinds a polling strategy's `interrupts` key may name for the
/// requests it does not poll (each with its defaults).
pub const FALLBACK_KINDS: &[&str] = &["none", "nvme", "adaptive", "cinterrupts", "vic"];

/// Parameters whose values are durations (for messages).
const DURATION_PARAMS: &[&str] = &["delta", "time", "epoch", "ipi_threshold", "clock_margin"];

/// Parses the `strategy` array: at least one, names unique.
pub(crate) fn parse_all(
    source: &str,
    node: Option<&Node>,
    device: &DeviceProfile,
) -> Result<Vec<Strategy>, ScenarioError> {
    let elements = crate::job::elements(source, "strategy", node)?;
    let mut out: Vec<Strategy> = Vec::with_capacity(elements.len());
    let mut seen: Vec<(String, Origin)> = Vec::new();
    for (index, (table, origin)) in elements.into_iter().enumerate() {
        let mut sec = Section::new(source, format!("strategy[{index}]"), table, origin.clone());
        let name = crate::job::element_name(&mut sec, &seen, "strategy")?;
        seen.push((name.clone(), sec.origin_of("name")));
        let mode = parse_mode(&mut sec, device)?;
        let interrupts = match sec.choice("interrupts", FALLBACK_KINDS)? {
            Some(kind) => fallback_policy(&kind, device),
            None => PolicyConfig::None,
        };
        out.push(Strategy {
            name,
            mode,
            interrupts,
        });
    }
    Ok(out)
}

fn parse_mode(
    sec: &mut Section<'_>,
    device: &DeviceProfile,
) -> Result<CompletionMode, ScenarioError> {
    let kinds: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
    let kind = sec.choice("kind", &kinds)?.ok_or_else(|| {
        sec.error(
            "kind",
            format!("missing required key (one of {})", quoted_list(&kinds)),
        )
    })?;
    let own: &[&str] = KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, keys)| keys);
    // A key of another kind gets a message saying so: the usual mistake
    // is switching `kind` and leaving the old parameters behind.
    if let Some(stray) = sec.first_unread_except(&["name", "kind", "app_hints"], own) {
        let owner: Vec<&str> = KINDS
            .iter()
            .filter(|(_, keys)| keys.contains(&stray))
            .map(|(k, _)| *k)
            .collect();
        let takes = if own.is_empty() {
            "takes no parameters".to_string()
        } else {
            format!("takes {}", own.join(", "))
        };
        let message = if owner.is_empty() {
            format!("unknown key (kind \"{kind}\" {takes})")
        } else {
            format!(
                "not a key of kind \"{kind}\" (it belongs to {}; \"{kind}\" {takes})",
                quoted_list(&owner)
            )
        };
        return Err(sec.error(stray, message));
    }

    let thr = |sec: &mut Section<'_>, default: u32| -> Result<u32, ScenarioError> {
        Ok(sec
            .int("thr", 1, u64::from(u32::MAX))?
            .map_or(default, |v| v as u32))
    };
    let mode = match kind.as_str() {
        "none" => CompletionMode::Interrupt(PolicyConfig::None),
        "nvme" => CompletionMode::Interrupt(PolicyConfig::Nvme(NvmeParams {
            thr: thr(sec, NVME_DEFAULT_THR)?,
            time: sec.duration("time")?.unwrap_or(NVME_DEFAULT_TIME),
            coalescing_disabled: sec.bool("coalescing_disabled")?.unwrap_or(false),
        })),
        "adaptive" => CompletionMode::Interrupt(PolicyConfig::Adaptive(AdaptiveParams {
            delta: sec.duration("delta")?.unwrap_or(device.reference_delta.0),
            thr: thr(sec, device.reference_thr)?,
        })),
        "cinterrupts" => {
            let delta = sec.duration("delta")?.unwrap_or(device.reference_delta.0);
            let thr = thr(sec, device.reference_thr)?;
            let mut p = CinterruptsParams::with_adaptive(delta, thr);
            p.ooo = sec.bool("ooo")?.unwrap_or(true);
            p.barrier = match sec.choice("barrier", &["relaxed", "strict"])?.as_deref() {
                Some("strict") => BarrierMode::Strict,
                _ => BarrierMode::Relaxed,
            };
            p.max_irq_rate = sec.int("max_irq_rate", 1, i64::MAX as u64)?;
            p.guard = match sec.choice("guard", &["rate", "artifact"])?.as_deref() {
                // A mode for a guard that is off would be silently ignored.
                Some(_) if p.max_irq_rate.is_none() => {
                    return Err(sec.error(
                        "guard",
                        "needs max_irq_rate (the storm guard is off without it)",
                    ))
                }
                Some("artifact") => StormGuardMode::Artifact,
                _ => StormGuardMode::Rate,
            };
            CompletionMode::Interrupt(PolicyConfig::Cinterrupts(p))
        }
        "vic" => {
            CompletionMode::Interrupt(PolicyConfig::Vic(vic_params(sec, VicParams::default())?))
        }
        "vic-sched" => {
            let defaults = VicSchedParams::default();
            CompletionMode::Interrupt(PolicyConfig::VicSched(VicSchedParams {
                vic: vic_params(sec, defaults.vic)?,
                clock_margin: sec
                    .duration("clock_margin")?
                    .unwrap_or(defaults.clock_margin),
            }))
        }
        "poll" => CompletionMode::Poll,
        "mode-select" => CompletionMode::ModeSelect,
        _ => CompletionMode::HybridPoll(hybrid_sleep(sec)?),
    };
    if let CompletionMode::Interrupt(config) = &mode {
        config.validate().map_err(|e| policy_error(sec, e))?;
    }
    Ok(mode)
}

/// The interrupt policy of kind `kind` with its defaults (the device's
/// reference `delta` and `thr` where the kind takes them), for the
/// requests a polling strategy does not poll.
pub fn fallback_policy(kind: &str, device: &DeviceProfile) -> PolicyConfig {
    let (delta, thr) = (device.reference_delta.0, device.reference_thr);
    match kind {
        "nvme" => PolicyConfig::Nvme(NvmeParams {
            thr: NVME_DEFAULT_THR,
            time: NVME_DEFAULT_TIME,
            coalescing_disabled: false,
        }),
        "adaptive" => PolicyConfig::Adaptive(AdaptiveParams { delta, thr }),
        "cinterrupts" => PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(delta, thr)),
        "vic" => PolicyConfig::Vic(VicParams::default()),
        _ => PolicyConfig::None,
    }
}

fn vic_params(sec: &mut Section<'_>, d: VicParams) -> Result<VicParams, ScenarioError> {
    let u32_max = u64::from(u32::MAX);
    Ok(VicParams {
        cif_threshold: sec
            .int("cif_threshold", 1, u32_max)?
            .map_or(d.cif_threshold, |v| v as u32),
        iops_threshold: sec
            .int("iops_threshold", 0, i64::MAX as u64)?
            .unwrap_or(d.iops_threshold),
        epoch: sec.duration("epoch")?.unwrap_or(d.epoch),
        ipi_threshold: sec.duration("ipi_threshold")?.unwrap_or(d.ipi_threshold),
        quirk_reset_on_skip: sec
            .bool("quirk_reset_on_skip")?
            .unwrap_or(d.quirk_reset_on_skip),
        quirk_failsafe: match sec.int("quirk_failsafe", 1, u32_max)? {
            Some(n) => Some(n as u32),
            None => d.quirk_failsafe,
        },
    })
}

fn hybrid_sleep(sec: &mut Section<'_>) -> Result<HybridSleep, ScenarioError> {
    let word = match sec.node("sleep").map(|n| &n.value) {
        None => return Ok(HybridSleep::Adaptive),
        Some(Value::Str(s)) => Some(s.as_str()),
        Some(_) => None,
    };
    match word {
        Some("adaptive") => Ok(HybridSleep::Adaptive),
        Some("min") => Ok(HybridSleep::Min),
        _ => {
            let ns = sec.any_duration("sleep").map_err(|e| ScenarioError {
                message: format!(
                    "must be \"adaptive\", \"min\" or a duration ({})",
                    e.message
                ),
                ..e
            })?;
            match ns {
                Some(0) => Err(sec.error(
                    "sleep",
                    "must be longer than zero (use kind = \"poll\" to never sleep)",
                )),
                Some(ns) => match crate::past_an_hour(ns) {
                    Some(why) => Err(sec.error("sleep", why)),
                    None => Ok(HybridSleep::Fixed(ns)),
                },
                None => Ok(HybridSleep::Adaptive),
            }
        }
    }
}

/// Maps the policy library's refusal to the key it names.
fn policy_error(sec: &Section<'_>, e: PolicyError) -> ScenarioError {
    match e {
        PolicyError::OutOfRange {
            param,
            value,
            min,
            max,
        } => {
            let show = |v: u64| {
                if DURATION_PARAMS.contains(&param) {
                    format_duration(v)
                } else {
                    v.to_string()
                }
            };
            let range = if value < min {
                format!("must be at least {} (got {})", show(min), show(value))
            } else {
                format!("must be at most {} (got {})", show(max), show(value))
            };
            if sec.has(param) {
                sec.error(param, range)
            } else {
                sec.error(
                    param,
                    format!("the default from the device profile {range}"),
                )
            }
        }
        other => sec.error("kind", other.to_string()),
    }
}
