//! Policy parameters and their validation. Building a policy from them is
//! [`PolicyConfig::build`], in the module that holds
//! [`AnyPolicy`](crate::AnyPolicy).

use core::fmt;

use crate::{Nanos, SEC};

/// Largest `thr` of the adaptive and cinterrupts algorithms.
pub const MAX_ADAPTIVE_THR: u32 = 65_535;
/// Largest NVMe aggregation threshold (the 0's based wire field is 8 bits).
pub const MAX_NVME_THR: u32 = 256;
/// Largest NVMe aggregation time: the feature's Aggregation Time field is
/// 8 bits in units of 100 us, so 255 x 100 us. Values below it need not be
/// multiples of 100 us ("what if" studies such as `nvme6`); above it, no
/// device could be told to do it.
pub const MAX_NVME_TIME: Nanos = 255 * 100_000;
/// Largest `delta`, vIC epoch or threshold accepted: an hour,
/// far beyond any useful value but small enough that `now + delta` cannot
/// overflow in any realistic run.
pub const MAX_DURATION: Nanos = 3_600 * SEC;

/// A parameter a policy refuses, named as the scenario file names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyError {
    /// The value lies outside the accepted inclusive range.
    OutOfRange {
        /// Parameter name (`thr`, `delta`, `cif_threshold`, ...).
        param: &'static str,
        /// The value given.
        value: u64,
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// Hint bits beyond the two defined ones (from the C ABI).
    UnknownHintBits(u32),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::OutOfRange {
                param,
                value,
                min,
                max,
            } => write!(f, "{param} = {value} is out of range {min}..={max}"),
            PolicyError::UnknownHintBits(bits) => {
                write!(f, "hint bits {bits:#x} are not a known hint (0..=3)")
            }
        }
    }
}

impl core::error::Error for PolicyError {}

/// Checks `min <= value <= max` for a named parameter.
pub(crate) fn check_range(
    param: &'static str,
    value: u64,
    min: u64,
    max: u64,
) -> Result<(), PolicyError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(PolicyError::OutOfRange {
            param,
            value,
            min,
            max,
        })
    }
}

/// NVMe static aggregation (Feature 08h) for one queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmeParams {
    /// Aggregation threshold: the real completion count, 1..=256
    /// (the wire format stores `thr - 1`).
    pub thr: u32,
    /// Aggregation time, up to [`MAX_NVME_TIME`] (25.5 ms); the standard's
    /// granularity is 100 us, finer values are allowed for studies.
    pub time: Nanos,
    /// Feature 09h "Coalescing Disable" for this queue's vector: never
    /// coalesce, whatever `thr` and `time` say.
    pub coalescing_disabled: bool,
}

impl NvmeParams {
    /// Validates the parameters.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check_range("thr", u64::from(self.thr), 1, u64::from(MAX_NVME_THR))?;
        check_range("time", self.time, 0, MAX_NVME_TIME)
    }
}

/// Adaptive burst detection (Algorithm 1), also the fall-back of
/// calibrated interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveParams {
    /// Quiescence interval: fire when no completion arrived for `delta`.
    pub delta: Nanos,
    /// Maximum completions per interrupt, 1..=65535.
    pub thr: u32,
}

impl AdaptiveParams {
    /// Validates the parameters: `delta` must be positive.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check_range("delta", self.delta, 1, MAX_DURATION)?;
        check_range("thr", u64::from(self.thr), 1, u64::from(MAX_ADAPTIVE_THR))
    }
}

/// How a Barrier completion is handled (docs/ALGORITHMS.md section 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BarrierMode {
    /// Fire a full interrupt as soon as the Barrier completes.
    #[default]
    Relaxed,
    /// Fire once the Barrier and every request submitted before it have
    /// completed.
    Strict,
}

/// How the storm guard keeps hint-triggered interrupts at or under
/// `max_irq_rate` (docs/ALGORITHMS.md section 4, with the choices made
/// where the papers leave room).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StormGuardMode {
    /// The journal version's design: during a storm, hinted completions
    /// are delivered in small groups at about `max_irq_rate`, each held at
    /// most `1 / max_irq_rate` (and never longer than `delta * thr`).
    #[default]
    Rate,
    /// The authors' kernel module: during a storm, hinted completions are
    /// handled as unmarked, with the configured `delta` and `thr`.
    Artifact,
}

impl StormGuardMode {
    /// The mode as the scenario file spells it (`guard = "rate"`).
    pub const fn name(self) -> &'static str {
        match self {
            StormGuardMode::Rate => "rate",
            StormGuardMode::Artifact => "artifact",
        }
    }
}

/// Calibrated interrupts (Algorithm 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CinterruptsParams {
    /// The adaptive fall-back for unmarked completions.
    pub adaptive: AdaptiveParams,
    /// Out-of-order Urgent processing: Urgent completions raise
    /// urgent-only interrupts.
    pub ooo: bool,
    /// Barrier semantics.
    pub barrier: BarrierMode,
    /// Storm guard: the largest rate of hint-triggered interrupts per
    /// second; `None` switches the guard off.
    pub max_irq_rate: Option<u64>,
    /// How the storm guard holds that rate; ignored while `max_irq_rate`
    /// is `None`.
    pub guard: StormGuardMode,
}

impl CinterruptsParams {
    /// The paper's defaults around a given adaptive fall-back: OOO on,
    /// relaxed Barrier, no storm guard (its mode, should `max_irq_rate` be
    /// set, is [`StormGuardMode::Rate`]).
    pub const fn with_adaptive(delta: Nanos, thr: u32) -> Self {
        CinterruptsParams {
            adaptive: AdaptiveParams { delta, thr },
            ooo: true,
            barrier: BarrierMode::Relaxed,
            max_irq_rate: None,
            guard: StormGuardMode::Rate,
        }
    }

    /// Validates the parameters.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.adaptive.validate()?;
        if let Some(rate) = self.max_irq_rate {
            check_range("max_irq_rate", rate, 1, SEC)?;
        }
        Ok(())
    }
}

/// vIC: virtual interrupt coalescing (docs/ALGORITHMS.md section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VicParams {
    /// Below this many commands in flight every completion is delivered.
    pub cif_threshold: u32,
    /// Below this rate (IO/s over the last epoch) every completion is
    /// delivered.
    pub iops_threshold: u64,
    /// How often the delivery ratio is recomputed.
    pub epoch: Nanos,
    /// Send an IPI to the guest's core only if the last delivery is older
    /// than this.
    pub ipi_threshold: Nanos,
    /// Xen back-end quirk: the skip branch resets the counter to 1 instead
    /// of incrementing it (lower real delivery ratios). Off by default.
    pub quirk_reset_on_skip: bool,
    /// Xen back-end quirk: force a delivery after this many consecutive
    /// held completions (16 in the reference code). Off (`None`) by default.
    pub quirk_failsafe: Option<u32>,
}

impl Default for VicParams {
    fn default() -> Self {
        VicParams {
            cif_threshold: 4,
            iops_threshold: 2_000,
            epoch: 200 * crate::MS,
            ipi_threshold: 100 * crate::US,
            quirk_reset_on_skip: false,
            quirk_failsafe: None,
        }
    }
}

impl VicParams {
    /// Validates the parameters.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check_range("cif_threshold", u64::from(self.cif_threshold), 1, 1 << 20)?;
        check_range("iops_threshold", self.iops_threshold, 0, SEC)?;
        check_range("epoch", self.epoch, 1, MAX_DURATION)?;
        check_range("ipi_threshold", self.ipi_threshold, 0, MAX_DURATION)?;
        if let Some(n) = self.quirk_failsafe {
            check_range("quirk_failsafe", u64::from(n), 1, u64::from(u32::MAX))?;
        }
        Ok(())
    }
}

/// Scheduler-aware vIC (docs/ALGORITHMS.md section 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VicSchedParams {
    /// The underlying vIC.
    pub vic: VicParams,
    /// Largest clock error between back end and scheduler: with less time
    /// than this left in the slice, do not interfere.
    pub clock_margin: Nanos,
}

impl Default for VicSchedParams {
    fn default() -> Self {
        VicSchedParams {
            vic: VicParams {
                iops_threshold: 100,
                ..VicParams::default()
            },
            clock_margin: 200 * crate::US,
        }
    }
}

impl VicSchedParams {
    /// Validates the parameters.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.vic.validate()?;
        check_range("clock_margin", self.clock_margin, 0, MAX_DURATION)
    }
}

/// Any interrupt-generation policy, by kind, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyConfig {
    /// An interrupt per completion (`none`).
    None,
    /// NVMe static aggregation (`nvme`).
    Nvme(NvmeParams),
    /// Adaptive burst detection (`adaptive`).
    Adaptive(AdaptiveParams),
    /// Calibrated interrupts (`cinterrupts`).
    Cinterrupts(CinterruptsParams),
    /// vIC (`vic`).
    Vic(VicParams),
    /// Scheduler-aware vIC (`vic-sched`).
    VicSched(VicSchedParams),
}

impl PolicyConfig {
    /// The strategy kind as the scenario file spells it.
    pub const fn kind(&self) -> &'static str {
        match self {
            PolicyConfig::None => "none",
            PolicyConfig::Nvme(_) => "nvme",
            PolicyConfig::Adaptive(_) => "adaptive",
            PolicyConfig::Cinterrupts(_) => "cinterrupts",
            PolicyConfig::Vic(_) => "vic",
            PolicyConfig::VicSched(_) => "vic-sched",
        }
    }

    /// Validates the parameters without building a policy.
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self {
            PolicyConfig::None => Ok(()),
            PolicyConfig::Nvme(p) => p.validate(),
            PolicyConfig::Adaptive(p) => p.validate(),
            PolicyConfig::Cinterrupts(p) => p.validate(),
            PolicyConfig::Vic(p) => p.validate(),
            PolicyConfig::VicSched(p) => p.validate(),
        }
    }
}
