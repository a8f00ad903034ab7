//! Simultaneous multithreading (`[host.smt]`): how many hardware threads
//! share a physical core, and what one costs the other (docs/ENERGY.md,
//! "SMT"; docs/HOST-COSTS.md gives each figure's source).

use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;
use crate::load::nested_origin;
use crate::tree::Node;
use crate::units::Duration;

/// Hardware threads per physical core and what they cost each other. The
/// host's `cores` are then its logical CPUs, numbered as Linux numbers
/// them on such a machine: CPUs `n` and `n + cores / threads_per_core`
/// (and so on) are siblings of one physical core.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smt {
    /// Hardware threads per physical core (1 = no SMT).
    pub threads_per_core: u32,
    /// Throughput two busy threads of one core get together beyond what
    /// one alone gets (Intel: "up to 30%"): each runs at `(1 + gain) / 2`
    /// of its speed alone while its sibling executes too.
    pub gain: f64,
    /// One `PAUSE` instruction (`cpu_relax`): during it a sibling spinning
    /// in a poll loop issues nothing and leaves the core to the other.
    pub pause: Duration,
}

impl Smt {
    /// The logical CPUs' physical cores: `cpus / threads_per_core`.
    pub fn physical_cores(&self, cpus: u32) -> u32 {
        cpus / self.threads_per_core.max(1)
    }
}

/// Checks `[host.smt]` against the host's logical CPUs: at least one
/// thread per core, a whole number of physical cores, a gain from 0 to 1.
pub(crate) fn check(
    source: &str,
    node: Option<&Node>,
    smt: &Smt,
    cpus: u32,
) -> Result<(), ScenarioError> {
    let refuse = |key: &str, message: String| ScenarioError {
        source: source.to_string(),
        origin: nested_origin(node, &["smt", key]),
        key: format!("host.smt.{key}"),
        message,
    };
    let t = smt.threads_per_core;
    if t == 0 {
        return Err(refuse(
            "threads_per_core",
            "must be at least 1 (got 0)".into(),
        ));
    }
    if t > MAX_THREADS_PER_CORE {
        return Err(refuse(
            "threads_per_core",
            format!("must be at most {MAX_THREADS_PER_CORE} (got {t})"),
        ));
    }
    if cpus % t != 0 {
        return Err(refuse(
            "threads_per_core",
            format!(
                "must divide host.cores, the logical CPUs ({cpus} is not a whole number of \
                 {t}-thread cores)"
            ),
        ));
    }
    if let Some(why) = crate::past_an_hour(smt.pause.0) {
        return Err(refuse("pause", why));
    }
    if !(0.0..=1.0).contains(&smt.gain) {
        return Err(refuse(
            "gain",
            format!("must be a fraction from 0 to 1 (got {})", smt.gain),
        ));
    }
    Ok(())
}

/// The most hardware threads per core a host may have (IBM POWER's SMT8).
const MAX_THREADS_PER_CORE: u32 = 8;
