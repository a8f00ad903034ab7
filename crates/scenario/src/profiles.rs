//! Built-in device and host profiles, with the public figures they are
//! fitted to (MODEL.md). A scenario names a profile and may override any
//! field; one profile per testbed, fitted once, used by every experiment.
//!
//! Every field is public and serde-(de)serializable: the scenario parser
//! overlays the user's `[device]` / `[host]` keys on the built-in profile
//! generically, so adding a field here is all it takes to make it a
//! scenario key (unknown keys are refused by `deny_unknown_fields`).

use serde::{Deserialize, Serialize};

use crate::units::{Duration, Size};

/// Service-time parameters of one operation type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpTiming {
    /// Media access time of one request, which holds one of the device's
    /// parallel units (the transfer of its data comes on top, in the
    /// device-wide pipe).
    pub base: Duration,
    /// Device-wide transfer rate of this direction in bytes per second
    /// (the vendor's sequential figure): a request's data crosses the
    /// device's one pipe of this direction, shared by all requests, in
    /// `size / bandwidth`; its `base` holds one parallel unit.
    pub bandwidth: u64,
}

/// Shape of the seeded jitter added to every service time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JitterKind {
    /// No jitter: every service time is exactly `base + size / bandwidth`.
    None,
    /// Normal, mean zero, standard deviation `jitter_spread`; a service
    /// time never goes below zero.
    Normal,
    /// Log-normal with mean and standard deviation `jitter_spread`, shifted
    /// to mean zero: a right tail, as flash devices have.
    Lognormal,
    /// Exponential with mean `jitter_spread`: a non-negative extra delay.
    Exponential,
}

/// An NVMe device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// Profile name as scenario files spell it.
    pub model: String,
    /// Where the figures come from.
    pub source: String,
    /// Capacity (the default working set of a job).
    pub capacity: Size,
    /// Requests the device services concurrently; more wait inside it.
    pub parallel_units: u32,
    /// Entries per submission/completion queue.
    pub queue_depth: u32,
    /// Queue pairs; 0 means one per application core (as blk-mq does).
    pub queues: u32,
    /// Read service time.
    pub read: OpTiming,
    /// Write service time.
    pub write: OpTiming,
    /// Jitter distribution.
    pub jitter: JitterKind,
    /// Standard deviation of the jitter (or the exponential mean).
    pub jitter_spread: Duration,
    /// From the policy's decision to the interrupt handler starting on the
    /// target core (MSI write, APIC delivery; IPI emulation on the
    /// reference testbed).
    pub irq_latency: Duration,
    /// The `delta` the papers chose for this device.
    pub reference_delta: Duration,
    /// The `thr` the papers chose for this device.
    pub reference_thr: u32,
}

/// Costs of kernel paths on one host core, and the scheduler's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    /// Profile name as scenario files spell it.
    pub model: String,
    /// Where the figures come from.
    pub source: String,
    /// Application cores.
    pub cores: u32,
    /// System call entry and exit.
    pub syscall: Duration,
    /// Block-layer and driver submission path of one synchronous request.
    pub sync_submit: Duration,
    /// `io_submit`: per call.
    pub aio_submit_call: Duration,
    /// `io_submit`: per request.
    pub aio_submit_request: Duration,
    /// `io_getevents`: per call.
    pub aio_getevents_call: Duration,
    /// `io_getevents`: per event returned.
    pub aio_getevents_event: Duration,
    /// io_uring `io_uring_enter` submission: per call.
    pub uring_submit_call: Duration,
    /// io_uring: per request submitted.
    pub uring_submit_request: Duration,
    /// io_uring: per completion reaped from the CQ ring in user space.
    pub uring_reap_event: Duration,
    /// Interrupt entry, exit and the handler's fixed cost.
    pub irq_fixed: Duration,
    /// Reaping one completion-queue entry in the handler.
    pub irq_reap_entry: Duration,
    /// Waking a blocked thread (charged to the waker).
    pub wakeup: Duration,
    /// A context switch.
    pub context_switch: Duration,
    /// Returning to user space after a wake-up.
    pub return_to_user: Duration,
    /// One iteration of a completion poll loop.
    pub poll_iteration: Duration,
    /// Arming a high-resolution sleep timer (hybrid polling).
    pub timer_setup: Duration,
    /// How late a high-resolution timer fires.
    pub timer_slack: Duration,
    /// CFS target latency.
    pub sched_latency: Duration,
    /// CFS minimum granularity.
    pub sched_min_granularity: Duration,
    /// CFS wake-up granularity.
    pub sched_wakeup_granularity: Duration,
}

const US: u64 = 1_000;

/// Names of the built-in device profiles.
pub const DEVICE_MODELS: &[&str] = &["optane-p4800x", "p3700", "optane-900p"];
/// Names of the built-in host profiles.
pub const HOST_MODELS: &[&str] = &["xeon-e5-2660v4", "xeon-e3-1230v5"];

impl DeviceProfile {
    /// Queue pairs the device has for `cores` application cores: one per
    /// core unless `queues` says fewer, as Linux blk-mq maps them. Core
    /// `c` submits to queue `c % queue_pairs(cores)`.
    pub fn queue_pairs(&self, cores: u32) -> usize {
        let cores = cores.max(1) as usize;
        match self.queues as usize {
            0 => cores,
            q => q.min(cores),
        }
    }

    /// The built-in profile of this name.
    pub fn builtin(model: &str) -> Option<DeviceProfile> {
        let p = match model {
            "optane-p4800x" => DeviceProfile {
                model: model.into(),
                source: "Intel Optane DC P4800X 375 GB: vendor sheet (550K/500K IOPS 4 KiB \
                         random read/write, 2.4/2.0 GB/s sequential read/write); cinterrupts paper Table 2 (QD1 10 +- 1.3 us irq, \
                         8 +- 1.2 us poll). Fitted by crates/sim/tests/calibration.rs"
                    .into(),
                capacity: Size(375 << 30),
                parallel_units: 3,
                queue_depth: 1024,
                queues: 0,
                // Device-wide pipes at the vendor's sequential rates (2.4 /
                // 2.0 GB/s). 4 KiB read: 3 units / 5.56 us = 540K IOPS, the
                // pipe allows 586K; write: 3 / 5.95 us = 504K, the pipe
                // 488K (vendor: 550K / 500K).
                read: OpTiming { base: Duration(5_560), bandwidth: 2_400_000_000 },
                write: OpTiming { base: Duration(5_950), bandwidth: 2_000_000_000 },
                jitter: JitterKind::Normal,
                jitter_spread: Duration(1_100),
                irq_latency: Duration(500),
                reference_delta: Duration(6 * US),
                reference_thr: 32,
            },
            "p3700" => DeviceProfile {
                model: model.into(),
                source: "Intel DC P3700 400 GB: vendor sheet (450K/75K IOPS 4 KiB random \
                         read/write, 2.8/1.08 GB/s sequential read/write); cinterrupts paper Table 2 (QD1 \
                         80 +- 29 us irq, 78 +- 28 us poll). Fitted by crates/sim/tests/calibration.rs"
                    .into(),
                capacity: Size(400 << 30),
                // 34 units / 75 us = 453K IOPS of 4 KiB random reads
                // (vendor: about 450K); the 2.8 GB/s pipe allows 683K.
                parallel_units: 34,
                queue_depth: 1024,
                queues: 0,
                read: OpTiming { base: Duration(75_000), bandwidth: 2_800_000_000 },
                // Random writes are bounded by the flash back end (75K IOPS
                // of 4 KiB): 34 units / 450 us = 75.6K; sequential writes
                // by the 1.08 GB/s pipe.
                write: OpTiming { base: Duration(450 * US), bandwidth: 1_080_000_000 },
                jitter: JitterKind::Lognormal,
                jitter_spread: Duration(28 * US),
                irq_latency: Duration(500),
                reference_delta: Duration(15 * US),
                reference_thr: 32,
            },
            "optane-900p" => DeviceProfile {
                model: model.into(),
                source: "Intel Optane SSD 900P 280 GB: vendor sheet (550K/500K IOPS 4 KiB \
                         random read/write, 2.5/2.0 GB/s sequential read/write, ~10 us read \
                         latency); same media as the P4800X"
                    .into(),
                capacity: Size(280 << 30),
                parallel_units: 3,
                queue_depth: 1024,
                queues: 0,
                // The P4800X's media; vendor sequential rates 2.5 / 2.0 GB/s.
                read: OpTiming { base: Duration(5_560), bandwidth: 2_500_000_000 },
                write: OpTiming { base: Duration(5_950), bandwidth: 2_000_000_000 },
                jitter: JitterKind::Normal,
                jitter_spread: Duration(1_100),
                irq_latency: Duration(500),
                reference_delta: Duration(6 * US),
                reference_thr: 32,
            },
            _ => return None,
        };
        Some(p)
    }
}

impl HostProfile {
    /// The built-in profile of this name.
    pub fn builtin(model: &str) -> Option<HostProfile> {
        let ns = Duration;
        let p = match model {
            "xeon-e5-2660v4" => HostProfile {
                model: model.into(),
                source: "cinterrupts testbed: Dell R730, Xeon E5-2660 v4 2.0 GHz, C-states, \
                         turbo and SMT off, Linux 5.0.8, IPI-emulated interrupts. Costs fitted \
                         once to MODEL.md's calibration targets by \
                         crates/sim/tests/calibration.rs"
                    .into(),
                cores: 1,
                syscall: ns(150),
                // Below MODEL.md's 1.2 us starting estimate: with the
                // P4800X's 7.27 us service (its 550K IOPS), Table 2's 8 us
                // polled QD1 leaves 0.73 us for the whole polled path.
                sync_submit: ns(180),
                aio_submit_call: ns(300),
                aio_submit_request: ns(1_600),
                aio_getevents_call: ns(300),
                aio_getevents_event: ns(100),
                uring_submit_call: ns(250),
                uring_submit_request: ns(1_300),
                uring_reap_event: ns(50),
                irq_fixed: ns(700),
                irq_reap_entry: ns(300),
                wakeup: ns(350),
                context_switch: ns(400),
                return_to_user: ns(150),
                poll_iteration: ns(100),
                timer_setup: ns(300),
                timer_slack: ns(2_000),
                sched_latency: ns(6_000_000),
                sched_min_granularity: ns(750_000),
                sched_wakeup_granularity: ns(1_000_000),
            },
            "xeon-e3-1230v5" => HostProfile {
                model: model.into(),
                source: "energy-study testbed: Dell R230, Xeon E3-1230 v5 3.4 GHz (4 cores), \
                         C-states on, Linux 5.15; costs scaled from the E5 by clock"
                    .into(),
                cores: 4,
                syscall: ns(100),
                sync_submit: ns(750),
                aio_submit_call: ns(250),
                aio_submit_request: ns(300),
                aio_getevents_call: ns(200),
                aio_getevents_event: ns(60),
                uring_submit_call: ns(200),
                uring_submit_request: ns(250),
                uring_reap_event: ns(30),
                irq_fixed: ns(1_000),
                irq_reap_entry: ns(200),
                wakeup: ns(300),
                context_switch: ns(600),
                return_to_user: ns(200),
                poll_iteration: ns(30),
                timer_setup: ns(200),
                timer_slack: ns(2_000),
                sched_latency: ns(6_000_000),
                sched_min_granularity: ns(750_000),
                sched_wakeup_granularity: ns(1_000_000),
            },
            _ => return None,
        };
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_profile_exists_and_names_itself() {
        for m in DEVICE_MODELS {
            assert_eq!(
                DeviceProfile::builtin(m).map(|p| p.model),
                Some(m.to_string())
            );
        }
        for m in HOST_MODELS {
            assert_eq!(
                HostProfile::builtin(m).map(|p| p.model),
                Some(m.to_string())
            );
        }
        assert!(DeviceProfile::builtin("floppy").is_none());
    }
}
