//! Checks of the energy model's profile data (`[host.power]`,
//! `[device.power]`): every refusal names the key and the line that set it
//! (or the section's, for a value that came from the built-in profile).

use cint_policy::Nanos;

use crate::error::{Origin, ScenarioError};
use crate::profiles::{DevicePower, HostPower, CPUIDLE_STATE_MAX};
use crate::tree::{self, Node, Value};
use crate::units::format_duration;

/// Where `path` (keys, or `[i]` for an array element) was written below
/// `node`; the deepest node found on the way when the rest is not.
fn origin_of(node: Option<&Node>, path: &[PathStep<'_>]) -> Origin {
    let Some(mut node) = node else {
        return Origin::Line(1);
    };
    for step in path {
        let next = match (step, &node.value) {
            (PathStep::Key(k), Value::Table(t)) => tree::get(t, k),
            (PathStep::Index(i), Value::Array(items)) => items.get(*i),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    node.origin.clone()
}

#[derive(Clone, Copy)]
enum PathStep<'a> {
    Key(&'a str),
    Index(usize),
}

struct Checker<'a> {
    source: &'a str,
    section: &'a str,
    node: Option<&'a Node>,
}

impl Checker<'_> {
    fn refuse(&self, path: &[PathStep<'_>], message: String) -> ScenarioError {
        let mut key = self.section.to_string();
        for step in path {
            match step {
                PathStep::Key(k) => {
                    key.push('.');
                    key.push_str(k);
                }
                PathStep::Index(i) => key.push_str(&format!("[{i}]")),
            }
        }
        ScenarioError {
            source: self.source.to_string(),
            origin: origin_of(self.node, path),
            key,
            message,
        }
    }

    /// A power figure: finite, from 0 to [`MAX_WATTS`].
    fn watts(&self, path: &[PathStep<'_>], w: f64) -> Result<(), ScenarioError> {
        if w.is_finite() && (0.0..=MAX_WATTS).contains(&w) {
            Ok(())
        } else {
            // Past a million, as 1e14 rather than its fifteen digits.
            let got = if w.abs() >= 1e6 {
                format!("{w:e}")
            } else {
                format!("{w}")
            };
            Err(self.refuse(
                path,
                format!("must be a power from 0 to {MAX_WATTS} watts (got {got})"),
            ))
        }
    }

    fn duration(&self, path: &[PathStep<'_>], ns: Nanos) -> Result<(), ScenarioError> {
        match crate::past_an_hour(ns) {
            Some(why) => Err(self.refuse(path, why)),
            None => Ok(()),
        }
    }
}

/// The largest power figure (watts, or watts per GB/s): 10 kW, far past
/// any server's, the most the mode selector takes for one term
/// (`cint_policy::mode_select::MAX_POWER_MW`), and small enough that the
/// engines' sums of microwatts over every core stay exact in 64 bits.
pub const MAX_WATTS: f64 = 1e4;

/// Refuses a host power model the simulator could not use: a negative or
/// non-finite power, no idle state, an idle state whose target residency
/// is below its exit latency (entering it could never pay).
pub(crate) fn check_host(
    source: &str,
    host_node: Option<&Node>,
    power: &HostPower,
) -> Result<(), ScenarioError> {
    use PathStep::{Index, Key};
    let node = host_node;
    let c = Checker {
        source,
        section: "host",
        node,
    };
    let p = Key("power");
    for (key, w) in [
        ("base_w", power.base_w),
        ("uncore_w", power.uncore_w),
        ("core_busy_w", power.core_busy_w),
        ("core_spin_w", power.core_spin_w),
        ("core_irq_w", power.core_irq_w),
    ] {
        c.watts(&[p, Key(key)], w)?;
    }
    let states = Key("idle_states");
    if power.idle_states.is_empty() {
        return Err(c.refuse(
            &[p, states],
            "must list at least one idle state (Linux always has one)".into(),
        ));
    }
    if power.idle_states.len() > CPUIDLE_STATE_MAX {
        return Err(c.refuse(
            &[p, states, Index(CPUIDLE_STATE_MAX)],
            format!(
                "lists {} idle states; Linux allows at most {CPUIDLE_STATE_MAX} \
                 (CPUIDLE_STATE_MAX)",
                power.idle_states.len()
            ),
        ));
    }
    for (i, s) in power.idle_states.iter().enumerate() {
        let at = |key| [p, states, Index(i), Key(key)];
        if s.name.trim().is_empty() {
            return Err(c.refuse(&at("name"), "must not be empty".into()));
        }
        if power.idle_states[..i].iter().any(|o| o.name == s.name) {
            return Err(c.refuse(&at("name"), format!("\"{}\" is listed twice", s.name)));
        }
        c.watts(&at("power_w"), s.power_w)?;
        c.duration(&at("exit_latency"), s.exit_latency.0)?;
        c.duration(&at("target_residency"), s.target_residency.0)?;
        // The governors walk the table from the shallowest state down
        // and stop at the first too deep, as cpuidle drivers list them.
        if let Some(prev) = i.checked_sub(1).map(|j| &power.idle_states[j]) {
            for (key, here, before) in [
                ("exit_latency", s.exit_latency.0, prev.exit_latency.0),
                (
                    "target_residency",
                    s.target_residency.0,
                    prev.target_residency.0,
                ),
            ] {
                if here < before {
                    return Err(c.refuse(
                        &at(key),
                        format!(
                            "{} is below the previous state \"{}\"'s {}: list the states \
                             shallowest first",
                            format_duration(here),
                            prev.name,
                            format_duration(before)
                        ),
                    ));
                }
            }
        }
        if s.target_residency.0 < s.exit_latency.0 {
            return Err(c.refuse(
                &at("target_residency"),
                format!(
                    "must be at least the state's exit_latency {} (got {}): the state could \
                     never pay for its exit",
                    format_duration(s.exit_latency.0),
                    format_duration(s.target_residency.0)
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a negative or non-finite device power.
pub(crate) fn check_device(
    source: &str,
    device_node: Option<&Node>,
    power: &DevicePower,
) -> Result<(), ScenarioError> {
    use PathStep::Key;
    let c = Checker {
        source,
        section: "device",
        node: device_node,
    };
    c.watts(&[Key("power"), Key("idle_w")], power.idle_w)?;
    c.watts(&[Key("power"), Key("w_per_gbps")], power.w_per_gbps)
}
