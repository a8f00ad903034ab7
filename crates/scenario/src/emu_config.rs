//! The scenario's optional `[emu]` section: how the real-thread emulator
//! runs it. The simulator ignores it. Deserialized as is; unknown keys are
//! refused.

use serde::{Deserialize, Serialize};

/// Which backend executes requests in the emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Service times drawn from the device profile, timed by spinning.
    #[default]
    Synthetic,
    /// Real O_DIRECT reads and writes through io_uring on `path`.
    IoUring,
}

/// Whether the emulator's interrupt handlers must run at real-time
/// priority (`SCHED_FIFO`), which is what lets them preempt application
/// threads as an interrupt does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Realtime {
    /// Refuse to run when the system refuses `SCHED_FIFO`: without it an
    /// "interrupt" waits for the scheduler like any thread, and the
    /// numbers mean something else.
    #[default]
    Require,
    /// Ask for `SCHED_FIFO` and run at normal priority if refused.
    Prefer,
}

/// Where the emulator delivers an interrupt that finds its application
/// core idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleDelivery {
    /// To a thread blocked in a wait on that core, which runs the
    /// handler's pass itself: one wake-up, as a real interrupt on an idle
    /// core costs.
    #[default]
    Waiter,
    /// Always to the real-time handler thread, which then wakes the
    /// waiting threads: two wake-ups.
    Handler,
}

/// The `[emu]` section.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmuConfig {
    /// Request executor.
    pub backend: Backend,
    /// File or block device for the `io_uring` backend.
    pub path: Option<String>,
    /// The CPU the device thread is pinned to; default: the last CPU the
    /// process may use. Application core `i` of the scenario runs on the
    /// `i`-th remaining allowed CPU.
    pub device_core: Option<u32>,
    /// `"require"` (default): refuse to run without `SCHED_FIFO` for the
    /// interrupt handlers; `"prefer"`: run without it if refused.
    pub realtime: Realtime,
    /// `"waiter"` (default): an interrupt that finds its application core
    /// idle is handled by the thread waiting there; `"handler"`: always
    /// by the real-time handler thread.
    pub idle_delivery: IdleDelivery,
}
