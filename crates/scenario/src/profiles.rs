//! Built-in device and host profiles, with the public figures they are
//! fitted to (docs/MODEL.md). A scenario names a profile and may override any
//! field; one profile per testbed, fitted once, used by every experiment.
//!
//! Every field is public and serde-(de)serializable: the scenario parser
//! overlays the user's `[device]` / `[host]` keys on the built-in profile
//! generically, so adding a field here is all it takes to make it a
//! scenario key (unknown keys are refused by `deny_unknown_fields`).

use serde::{Deserialize, Serialize};

use crate::page_cache::PageCacheProfile;

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

/// Time in ns that `bytes` take on a device's transfer pipe of
/// `bandwidth` bytes/s (the simulator's and the emulator's device model):
/// none without a bandwidth (the emulator's zero-latency device; the
/// scenario refuses 0 for a device), and a huge request on a slow device
/// saturates instead of wrapping.
///
/// Rounded down to the nanosecond, so a run the pipe bounds moves up to
/// one nanosecond per transfer more than the rated bandwidth: 0.04% for
/// 4 KiB at 2.4 GB/s (1 706 ns for 1 706.67), less for larger requests
/// (docs/MODEL.md, "Device model"). Rounding up instead would move every
/// published figure by as little, and was left for a regeneration of
/// docs/results.
pub fn transfer_ns(bytes: u64, bandwidth: u64) -> u64 {
    if bandwidth == 0 {
        return 0;
    }
    let ns = u128::from(bytes) * 1_000_000_000 / u128::from(bandwidth);
    u64::try_from(ns).unwrap_or(u64::MAX)
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

/// How a request reaches one of the device's parallel units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitBinding {
    /// One FIFO in front of all units: the first free unit takes the next
    /// waiting request, so requests wait only when every unit is busy.
    #[default]
    Pooled,
    /// Each request is bound on arrival to one unit, drawn uniformly from
    /// the device's own seeded stream, and waits in that unit's FIFO while
    /// it is busy, even when others are free: where a random address lands
    /// on media striped over the units (an SSD's channels and dies). Two
    /// requests can collide at one unit, so the rate grows smoothly with
    /// the requests in flight instead of stopping at a knee.
    Striped,
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
    /// How a request finds its unit (pooled unless the profile says).
    #[serde(default)]
    pub unit_binding: UnitBinding,
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
    /// Power figures for the energy model; absent in a profile without
    /// published power data (then no energy is computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<DevicePower>,
    /// The vendor sheet's latency of one 4 KiB write at queue depth 1,
    /// where the model's write timing (`write`, the flash back end's)
    /// gives far more: the device acknowledges writes from a buffer the
    /// model does not have, and a run that writes says so in a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_latency_sheet: Option<Duration>,
}

/// A device's power draw (docs/ENERGY.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicePower {
    /// Where the figures come from.
    pub source: String,
    /// Power while no data moves, watts.
    pub idle_w: f64,
    /// Extra power per GB/s of data moved, watts (so joules per GB): each
    /// completed byte costs `w_per_gbps` nanojoules on top of `idle_w`.
    pub w_per_gbps: f64,
}

/// The cpuidle governor that picks a core's idle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Governor {
    /// `menu` of Linux 5.15: the time to the next timer scaled by a
    /// learned correction factor, or the typical recent idle interval, and
    /// an exit-latency limit of `predicted / (1 + 10 * nr_iowait)`.
    Menu,
    /// `menu` after commit 38f83090f515 (2025, backported to 6.6.y and
    /// 6.12.y): no iowait rule; the recent intervals first, the timer only
    /// when they are long.
    MenuNoIowait,
    /// `teo`, the timer-events-oriented governor: the state the next timer
    /// allows, made shallower when most recent wake-ups came earlier.
    Teo,
}

impl Governor {
    /// The name as scenario files spell it.
    pub fn name(self) -> &'static str {
        match self {
            Governor::Menu => "menu",
            Governor::MenuNoIowait => "menu-no-iowait",
            Governor::Teo => "teo",
        }
    }
}

/// One idle state of a core, as the cpuidle driver lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleState {
    /// The driver's name (`POLL`, `C1`, `C1E`, ...).
    pub name: String,
    /// Time from the wake-up event to the core running again.
    pub exit_latency: Duration,
    /// Shortest stay for which entering the state saves energy; at least
    /// `exit_latency`.
    pub target_residency: Duration,
    /// The core's power in this state, watts.
    pub power_w: f64,
    /// A busy-wait in C0 (Linux's `POLL`, `CPUIDLE_FLAG_POLLING`): it
    /// ends as soon as work arrives and after at most the next state's
    /// target residency, when the governor runs again.
    #[serde(default)]
    pub polling: bool,
}

/// A host's power model (docs/ENERGY.md): system power = `base_w` +
/// `uncore_w` while any core is in C0 + each core's state + the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPower {
    /// Where the figures come from.
    pub source: String,
    /// The cpuidle governor.
    pub governor: Governor,
    /// Platform power whatever the cores do (memory, fans, supply loss),
    /// watts.
    pub base_w: f64,
    /// Uncore power while at least one core is in C0, watts.
    pub uncore_w: f64,
    /// A core running a thread (user or kernel), watts.
    pub core_busy_w: f64,
    /// A core spinning in a completion poll loop, watts.
    pub core_spin_w: f64,
    /// A core running an interrupt handler, watts.
    pub core_irq_w: f64,
    /// The idle states, shallowest first; at most [`CPUIDLE_STATE_MAX`].
    pub idle_states: Vec<IdleState>,
}

/// The most idle states a CPU can have: Linux's `CPUIDLE_STATE_MAX`
/// (include/linux/cpuidle.h), which sizes every driver's state table. The
/// `mode-select` selector's table is sized by it, so that every table a
/// scenario accepts fits whole.
pub const CPUIDLE_STATE_MAX: usize = cint_policy::mode_select::MAX_IDLE_STATES;

/// Costs of kernel paths on one host core, and the scheduler's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    /// Profile name as scenario files spell it.
    pub model: String,
    /// Where the figures come from.
    pub source: String,
    /// Application cores: the logical CPUs the kernel schedules on (with
    /// `smt`, hardware threads, `smt.threads_per_core` per physical core).
    pub cores: u32,
    /// The CPUs the host machine's kernel has online, of which `cores`
    /// are modelled. The fio import places a job without `cpus_allowed`
    /// on them as Linux's fork balancing does (docs/FIO.md, "Threads
    /// without cpus_allowed"): one thread per idle CPU while there are
    /// some, so at most this many cores. 28 on the cinterrupts testbed,
    /// 8 on the energy study's.
    pub online_cpus: u32,
    /// System call entry and exit, once per call whatever the call.
    pub syscall: Duration,
    /// User-space CPU of the workload generator per I/O (fio: offset
    /// generation, time stamps, latency accounting), on the job's thread,
    /// outside the measured latency.
    pub user_per_io: Duration,
    /// `user_per_io` for a job with `gtod_reduce` (fewer time stamps).
    pub user_per_io_gtod_reduce: Duration,
    /// The part of the generator's CPU per I/O spent preparing a request
    /// (fio's `get_io_u`: the offset, the io_u, the issue loop's checks),
    /// right before it is submitted; the rest is spent on reaping its
    /// completion (accounting, freeing the io_u), as soon as the reap
    /// call returns. From 0 to 1.
    pub user_issue_share: f64,
    /// Per request, whatever call reaches it: the VFS and direct-I/O
    /// set-up (pinning the user pages, building the bio).
    pub direct_io: Duration,
    /// Per request, whatever call reaches it: block layer (blk-mq tag,
    /// request) and NVMe driver submission up to the doorbell.
    pub block_submit: Duration,
    /// `io_submit`: the call's own part (context lookup, plugging).
    pub aio_submit_call: Duration,
    /// `io_submit`: per iocb, its own part (copying the iocb, the kiocb);
    /// `direct_io` and `block_submit` come on top.
    pub aio_submit_iocb: Duration,
    /// `io_getevents`: per call.
    pub aio_getevents_call: Duration,
    /// `io_getevents`: per event returned.
    pub aio_getevents_event: Duration,
    /// `io_uring_enter` submission: the call's own part.
    pub uring_submit_call: Duration,
    /// io_uring: per SQE consumed, its own part; `direct_io` and
    /// `block_submit` come on top.
    pub uring_submit_sqe: Duration,
    /// io_uring: per completion reaped from the CQ ring in user space.
    pub uring_reap_event: Duration,
    /// Interrupt entry, exit and the handler's fixed cost.
    pub irq_fixed: Duration,
    /// Completing one completion-queue entry (in the handler, or in a
    /// poll loop): block-layer completion, bio end, the waiter's event.
    pub irq_reap_entry: Duration,
    /// Waking a blocked thread (charged to the waker).
    pub wakeup: Duration,
    /// A context switch to a thread other than the one that last ran on
    /// the core: the threads are fio's job processes, so it includes the
    /// address-space switch and the cache and TLB refill that follows.
    pub context_switch: Duration,
    /// From the idle task back to the thread that last ran on the core:
    /// no address-space switch (the idle task borrowed its page tables).
    pub context_switch_idle: Duration,
    /// Returning to user space after a wake-up (the rest of the call's
    /// kernel path after it slept).
    pub return_to_user: Duration,
    /// One iteration of a completion poll loop.
    pub poll_iteration: Duration,
    /// Arming a high-resolution sleep timer (hybrid polling).
    pub timer_setup: Duration,
    /// How late a high-resolution timer fires.
    pub timer_slack: Duration,
    /// The timer slack of a user thread's own sleeps (`nanosleep`,
    /// `usleep`): Linux gives such a timer the range [expiry, expiry +
    /// `current->timer_slack_ns`] (`hrtimer_nanosleep`, which drops the
    /// range only for real-time and deadline tasks), and programs the
    /// clock event for the range's end, so on a core with no other timer
    /// due the sleep ends there. 50 us for every task by default
    /// (`init_task.timer_slack_ns`, inherited at fork); `prctl
    /// (PR_SET_TIMERSLACK)` changes it. `timer_slack` comes on top.
    #[serde(default = "default_task_timer_slack")]
    pub task_timer_slack: Duration,
    /// CFS target latency, as the kernel runs it (scaled at boot, see
    /// [`linux_cfs`]; `/proc/sys/kernel/sched_latency_ns`, since Linux
    /// 5.13 `/sys/kernel/debug/sched/latency_ns`).
    pub sched_latency: Duration,
    /// CFS minimum granularity, as the kernel runs it.
    pub sched_min_granularity: Duration,
    /// CFS wake-up granularity, as the kernel runs it.
    pub sched_wakeup_granularity: Duration,
    /// The scheduler tick period (`1 / CONFIG_HZ`): when CFS checks the
    /// running thread's slice and updates the running task group's load
    /// and weight, and the farthest a cpuidle
    /// governor looks for the next timer when no thread has one armed.
    pub tick: Duration,
    /// Host-side variation: every CPU cost above is a mean, and each time
    /// one is charged it is multiplied by a log-normal factor with mean 1
    /// and this coefficient of variation (0 = every cost exact).
    pub cost_spread: f64,
    /// The kernel's `CONFIG_IRQ_TIME_ACCOUNTING`: hard and soft interrupt
    /// time is the core's, in no thread's CPU time or virtual runtime.
    /// Without it, the thread an interrupt preempted is charged for the
    /// handler, in both (an interrupt on an idle core is idle time).
    pub irq_time_accounting: bool,
    /// io_uring posts a read's or write's completion by task work (Linux
    /// 5.11 and later: `io_complete_rw` queues `io_req_task_complete`
    /// with `io_req_task_work_add`, whose notification wakes the ring's
    /// task): a waiter in `io_uring_enter` for `min_complete` events wakes
    /// at every interrupt that completes one of its requests, and sleeps
    /// again while fewer are ready, as a libaio waiter does. False is
    /// Linux 5.6's rule: the interrupt posts the event and wakes the
    /// waiter only once enough are ready (`io_should_wake`).
    #[serde(default)]
    pub uring_task_work: bool,
    /// Idle states, governor and power figures for the energy model;
    /// absent in a profile without them (then no energy is computed and
    /// an idle core wakes at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<HostPower>,
    /// Page cache, writeback and buffered-I/O costs (`[host.page_cache]`).
    #[serde(default)]
    pub page_cache: PageCacheProfile,
    /// Hardware threads per physical core and what they cost each other
    /// (`[host.smt]`); absent in a profile without them (one thread per
    /// core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt: Option<crate::smt::Smt>,
}

const US: u64 = 1_000;

/// Names of the built-in device profiles.
pub const DEVICE_MODELS: &[&str] = &["optane-p4800x", "p3700", "optane-900p", "cached-array"];
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
                unit_binding: UnitBinding::Pooled,
                queue_depth: 1024,
                queues: 0,
                // Device-wide pipes at the vendor's sequential rates (2.4 /
                // 2.0 GB/s). A 4 KiB read takes 3.79 us of media and 1.71 us
                // of transfer: 5.5 us in the device at QD1, which with the
                // host's paths (docs/HOST-COSTS.md) gives Table 2's 10 / 8
                // us. At saturation the read pipe, not the units (3 / 3.79
                // us = 792K), sets 586K 4 KiB reads/s; writes: 3 units /
                // 5.95 us = 504K, the pipe 488K (vendor: 550K / 500K).
                read: OpTiming { base: Duration(3_790), bandwidth: 2_400_000_000 },
                write: OpTiming { base: Duration(5_950), bandwidth: 2_000_000_000 },
                // The media's own spread. AnandTech's review of this drive
                // (4 KiB random read at QD1 through the Linux kernel) gives
                // mean 8.9 us, median 9, 99th percentile 10: the whole
                // path's standard deviation is at most (10 - 8.9) / 2.33 =
                // 0.47 us, so the device's is no more. The rest of Table 2's
                // +-1.3 us is the testbed's host path, which the model does
                // not spread (docs/HOST-COSTS.md, "Latency spread").
                jitter: JitterKind::Normal,
                jitter_spread: Duration(450),
                irq_latency: Duration(500),
                reference_delta: Duration(6 * US),
                reference_thr: 32,
                power: None,
                write_latency_sheet: None,
            },
            "p3700" => DeviceProfile {
                model: model.into(),
                source: "Intel DC P3700 400 GB: vendor sheet (450K/75K IOPS 4 KiB random \
                         read/write, 2.8/1.08 GB/s sequential read/write, 20 us typical latency \
                         of a 4 KiB write at QD1); cinterrupts paper Table 2 (QD1 \
                         80 +- 29 us irq, 78 +- 28 us poll). Fitted by crates/sim/tests/calibration.rs"
                    .into(),
                capacity: Size(400 << 30),
                // 34 units / 75 us = 453K IOPS of 4 KiB random reads
                // (vendor: about 450K); the 2.8 GB/s pipe allows 683K.
                parallel_units: 34,
                unit_binding: UnitBinding::Pooled,
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
                power: None,
                // The product specification's latency of a 4 KiB write at
                // queue depth 1, from the drive's power-protected buffer.
                write_latency_sheet: Some(Duration(20 * US)),
            },
            "optane-900p" => DeviceProfile {
                model: model.into(),
                source: "Intel Optane SSD 900P 280 GB: vendor sheet (550K/500K IOPS 4 KiB \
                         random read/write, 2.5/2.0 GB/s sequential read/write, ~10 us read \
                         latency); same media and seven-channel controller as the P4800X \
                         (AnandTech's review); 5 striped units fitted to the energy study's \
                         Table 1 (8 threads) by crates/sim/tests/energy.rs"
                    .into(),
                capacity: Size(280 << 30),
                // A request is bound to the unit its address lands on (the
                // controller stripes the media over seven channels of three
                // dies each on the 280 GB drive), so requests in flight can
                // collide: the rate climbs smoothly with the depth, as the
                // energy study's 900P did (120K reads/s at one, 571K at
                // eight, above the sheet's "up to 550K"). How many units
                // act independently is the fit: 5 matches Table 1's
                // eight-thread row (docs/results/energy.md); 7, one per
                // channel, gives 5 to 12% more than the study measured.
                parallel_units: 5,
                unit_binding: UnitBinding::Striped,
                queue_depth: 1024,
                queues: 0,
                // The P4800X's media behind the same controller: 5.45 us
                // of media and 1.64 us on the 2.5 GB/s pipe, 7.1 us in the
                // device at QD1 (the sheet's "about 10 us" with the host's
                // paths; Table 1's one-thread row). Deep queues of small
                // reads end at the pipe, 610K 4 KiB/s; writes at the
                // 2.0 GB/s pipe, 488K (the units: 5 / 5.95 us = 840K;
                // vendor: 500K).
                read: OpTiming { base: Duration(5_450), bandwidth: 2_500_000_000 },
                write: OpTiming { base: Duration(5_950), bandwidth: 2_000_000_000 },
                // The P4800X's media, so its spread (above).
                jitter: JitterKind::Normal,
                jitter_spread: Duration(450),
                irq_latency: Duration(500),
                reference_delta: Duration(6 * US),
                reference_thr: 32,
                power: Some(DevicePower {
                    source: "Intel Optane SSD 900P 280 GB product brief: idle 5 W, active \
                             14 W; the 9 W above idle spread over the 2.5 GB/s sequential \
                             read rate (estimate: power taken to grow with throughput)"
                        .into(),
                    idle_w: 5.0,
                    w_per_gbps: 3.6,
                }),
                write_latency_sheet: None,
            },
            "cached-array" => DeviceProfile {
                model: model.into(),
                source: "The vIC paper's storage (Ahmad et al., ATC'11, section 5): a LUN \
                         fully cached in an EMC CLARiiON array behind 4 Gb Fibre Channel. \
                         Estimates (docs/VIRT.md, \"Array\"), fitted once to the paper's \
                         Table 2 by crates/sim/tests/virt.rs"
                    .into(),
                capacity: Size(64 << 30),
                parallel_units: ARRAY_UNITS,
                unit_binding: UnitBinding::Pooled,
                queue_depth: 1024,
                queues: 0,
                read: OpTiming { base: Duration(ARRAY_BASE), bandwidth: 400_000_000 },
                write: OpTiming { base: Duration(ARRAY_BASE), bandwidth: 400_000_000 },
                jitter: JitterKind::Exponential,
                jitter_spread: Duration(ARRAY_SPREAD),
                irq_latency: Duration(500),
                reference_delta: Duration(6 * US),
                reference_thr: 32,
                power: None,
                write_latency_sheet: None,
            },
            _ => return None,
        };
        Some(p)
    }
}

/// The cached array's storage processors: requests it serves at once.
/// With [`ARRAY_BASE`] and [`ARRAY_SPREAD`] they cap it at 10 / 190 us =
/// 53 K requests/s, the vIC paper's highest IOPS (Table 2: 53.1 K at 64
/// outstanding I/Os).
const ARRAY_UNITS: u32 = 10;
/// The cached array's fixed part of a request (the FC round trip and the
/// array's cache hit), within VIRT.md's 100-200 us; with the guest's path
/// it makes Table 2's 31 K IOPS at 8 outstanding I/Os.
const ARRAY_BASE: u64 = 150 * US;
/// The mean of the exponential part on top of [`ARRAY_BASE`] (the
/// array's queueing and its storage processors' work).
const ARRAY_SPREAD: u64 = 40 * US;

impl HostProfile {
    /// Its physical cores: `cores` over the SMT threads per core (at
    /// least one), or `cores` without SMT.
    pub fn physical_cores(&self) -> u32 {
        self.smt
            .as_ref()
            .map_or(self.cores, |s| s.physical_cores(self.cores))
            .max(1)
    }

    /// The physical core of logical CPU `cpu`, as Linux numbers an SMT
    /// host's CPUs: CPUs `n`, `n + physical_cores()` and so on are the
    /// hardware threads of core `n` (without SMT, `cpu` itself).
    pub fn physical_core_of(&self, cpu: u32) -> u32 {
        cpu % self.physical_cores()
    }

    /// The built-in profile of this name.
    pub fn builtin(model: &str) -> Option<HostProfile> {
        let ns = Duration;
        let p = match model {
            "xeon-e5-2660v4" => HostProfile {
                model: model.into(),
                source: "cinterrupts testbed: Dell R730, Xeon E5-2660 v4 2.0 GHz, C-states, \
                         turbo and SMT off, Linux 5.0.8, IPI-emulated interrupts. Each cost \
                         argued on its own in docs/HOST-COSTS.md; checked against MODEL.md's \
                         calibration targets by crates/sim/tests/calibration.rs"
                    .into(),
                cores: 1,
                // Two 14-core sockets, SMT off (the testbed's description).
                online_cpus: 28,
                // Every figure is argued in docs/HOST-COSTS.md.
                syscall: ns(100),
                user_per_io: ns(300),
                user_per_io_gtod_reduce: ns(240),
                // fio 3.33 counted by callgrind, ioengine=null, random
                // reads, iodepth 16 (docs/HOST-COSTS.md): 81% of the job
                // thread's instructions per I/O are on the issue side with
                // gtod_reduce, 74% with every time stamp.
                user_issue_share: 0.8,
                direct_io: ns(600),
                block_submit: ns(1_000),
                aio_submit_call: ns(300),
                aio_submit_iocb: ns(200),
                aio_getevents_call: ns(300),
                // One 32-byte event of a bulk copy_to_user: measured by
                // docs/evidence/io_getevents_per_event.c.
                aio_getevents_event: ns(5),
                uring_submit_call: ns(250),
                uring_submit_sqe: ns(100),
                uring_reap_event: ns(5),
                irq_fixed: ns(1_000),
                irq_reap_entry: ns(500),
                wakeup: ns(300),
                context_switch: ns(2_000),
                context_switch_idle: ns(500),
                return_to_user: ns(300),
                poll_iteration: ns(100),
                timer_setup: ns(300),
                timer_slack: ns(2_000),
                task_timer_slack: default_task_timer_slack(),
                // The kernel's boot-time scaling on the testbed's 28
                // online CPUs (two 14-core sockets, SMT off), whatever
                // cores an experiment pins to.
                sched_latency: linux_cfs(28).latency,
                sched_min_granularity: linux_cfs(28).min_granularity,
                sched_wakeup_granularity: linux_cfs(28).wakeup_granularity,
                // CONFIG_HZ=250 in the artifact's kernel configuration
                // (docs/HOST-COSTS.md, "Task groups").
                tick: Duration(4_000 * US),
                // Exact costs. The unbatched completion gaps that derive
                // the paper's delta = 6 us (p99 under 6 us) and adaptive's
                // one interrupt per batch of 16 bound the testbed's
                // variation well below what the guarded storm's idle core
                // would need (docs/HOST-COSTS.md, "Host-side variation").
                cost_spread: 0.0,
                // The artifact's kernel configuration
                // (`linux-kernel/config-file`): CONFIG_IRQ_TIME_ACCOUNTING=y.
                irq_time_accounting: true,
                // io_uring came after the testbed's 5.0; its model follows
                // Linux 5.6, where the interrupt posts the event.
                uring_task_work: false,
                // No power figures of this testbed are published.
                power: None,
                page_cache: PageCacheProfile::default(),
                smt: None,
            },
            "xeon-e3-1230v5" => HostProfile {
                model: model.into(),
                source: "energy-study testbed: Dell R230, Xeon E3-1230 v5 3.4 GHz (4 cores, \
                         8 hardware threads), C-states on, Linux 5.15; costs scaled from the \
                         E5's by clock (docs/HOST-COSTS.md)"
                    .into(),
                // Eight logical CPUs: four cores of two hardware threads.
                cores: 8,
                // Intel ARK: 4 cores, 8 threads, all online.
                online_cpus: 8,
                // The E5's figures (docs/HOST-COSTS.md) scaled by the
                // clock, 2.0 / 3.4 GHz; not calibrated against a target.
                syscall: ns(60),
                user_per_io: ns(180),
                user_per_io_gtod_reduce: ns(140),
                user_issue_share: 0.8,
                direct_io: ns(350),
                block_submit: ns(600),
                aio_submit_call: ns(180),
                aio_submit_iocb: ns(120),
                aio_getevents_call: ns(180),
                aio_getevents_event: ns(3),
                uring_submit_call: ns(150),
                uring_submit_sqe: ns(60),
                uring_reap_event: ns(3),
                irq_fixed: ns(600),
                irq_reap_entry: ns(300),
                wakeup: ns(180),
                context_switch: ns(1_200),
                context_switch_idle: ns(300),
                return_to_user: ns(180),
                poll_iteration: ns(30),
                timer_setup: ns(200),
                timer_slack: ns(2_000),
                task_timer_slack: default_task_timer_slack(),
                // Linux 5.15 scales them as 5.0 does, on 8 online CPUs.
                sched_latency: linux_cfs(8).latency,
                sched_min_granularity: linux_cfs(8).min_granularity,
                sched_wakeup_granularity: linux_cfs(8).wakeup_granularity,
                // CONFIG_HZ=250: Ubuntu's generic 5.15 kernel, which the
                // energy study ran.
                tick: Duration(4_000 * US),
                // As the E5's: no measurement of this host's variation.
                cost_spread: 0.0,
                // As the E5's: no configuration of this host is published.
                irq_time_accounting: true,
                // Linux 5.15 completes io_uring reads and writes by task
                // work (fs/io_uring.c, `io_complete_rw`).
                uring_task_work: true,
                power: Some(skylake_power()),
                // The E5's costs scaled by the clock, as above.
                page_cache: PageCacheProfile::scaled_costs(2.0 / 3.4),
                // Intel ARK: 4 cores, 8 threads; docs/HOST-COSTS.md, "SMT".
                smt: Some(crate::smt::Smt {
                    threads_per_core: 2,
                    gain: 0.3,
                    // Skylake's PAUSE, about 140 cycles, at 3.4 GHz.
                    pause: ns(41),
                }),
            },
            _ => return None,
        };
        Some(p)
    }
}

/// CFS's settings as a Linux kernel runs them (5.0 and 5.15, the testbeds'
/// kernels, alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsSettings {
    /// `sysctl_sched_latency`.
    pub latency: Duration,
    /// `sysctl_sched_min_granularity`.
    pub min_granularity: Duration,
    /// `sysctl_sched_wakeup_granularity`.
    pub wakeup_granularity: Duration,
}

/// Linux's default timer slack of a task, 50 us (`init_task`'s
/// `timer_slack_ns`, init/init_task.c; every thread inherits it).
pub fn default_task_timer_slack() -> Duration {
    Duration(50 * US)
}

/// The CFS settings of a kernel booted with `online_cpus` CPUs online.
///
/// `kernel/sched/fair.c` compiles in the normalized values 6 ms, 0.75 ms
/// and 1 ms, but `sched_init_granularity()` calls `update_sysctl()`,
/// which multiplies each by `get_update_sysctl_factor()`: under the
/// default `SCHED_TUNABLESCALING_LOG` that is `1 + ilog2(min(cpus, 8))`,
/// so 4 on any machine with 8 CPUs or more. The count is the kernel's
/// online CPUs, not the cores an experiment pins its threads to, which
/// is why a host profile states it rather than deriving it from `cores`.
pub fn linux_cfs(online_cpus: u32) -> CfsSettings {
    let factor = 1 + u64::from(online_cpus.clamp(1, 8).ilog2());
    CfsSettings {
        latency: Duration(6_000_000 * factor),
        min_granularity: Duration(750_000 * factor),
        wakeup_granularity: Duration(1_000_000 * factor),
    }
}

/// The energy study's host: intel_idle's Skylake table (published) and
/// power estimates (docs/ENERGY.md gives each figure's source).
fn skylake_power() -> HostPower {
    let state = |name: &str, exit_us: u64, residency_us: u64, power_w: f64| IdleState {
        name: name.into(),
        exit_latency: Duration(exit_us * US),
        target_residency: Duration(residency_us * US),
        power_w,
        polling: false,
    };
    HostPower {
        source: "idle states: Linux intel_idle's skl_cstates (exit latency / target \
                 residency); governor: menu of Linux 5.15; powers: \
                 estimates, the middle of docs/ENERGY.md's ranges"
            .into(),
        governor: Governor::Menu,
        base_w: 30.0,
        uncore_w: 8.0,
        core_busy_w: 8.5,
        core_spin_w: 6.5,
        core_irq_w: 8.5,
        idle_states: vec![
            // poll_idle: cpu_relax() in C0, drawing what a poll loop does.
            IdleState {
                polling: true,
                ..state("POLL", 0, 0, 6.5)
            },
            state("C1", 2, 2, 2.0),
            state("C1E", 10, 20, 1.0),
            state("C3", 70, 100, 0.5),
            state("C6", 85, 200, 0.1),
            state("C7s", 124, 800, 0.1),
            state("C8", 200, 800, 0.1),
        ],
    }
}

/// Host keys (dotted paths under `[host]`) that older scenario files may
/// still use, and what replaced them: each kernel path now has one cost
/// whatever call reaches it, and the tick is the kernel's, not the energy
/// model's, as the scheduler runs on it too.
pub const RENAMED_HOST_KEYS: &[(&str, &str)] = &[
    (
        "sync_submit",
        "renamed to direct_io + block_submit (per request, the same for every engine)",
    ),
    (
        "aio_submit_request",
        "renamed to aio_submit_iocb (io_submit's own part per iocb) + direct_io + block_submit",
    ),
    (
        "uring_submit_request",
        "renamed to uring_submit_sqe (io_uring's own part per SQE) + direct_io + block_submit",
    ),
    (
        "power.tick",
        "moved to host.tick (the kernel's CONFIG_HZ period, which the scheduler uses too)",
    ),
];

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

    #[test]
    fn physical_cores_follow_linux_numbering_of_hardware_threads() {
        let e3 = HostProfile::builtin("xeon-e3-1230v5").expect("built in");
        assert_eq!((e3.cores, e3.physical_cores()), (8, 4));
        let cores: Vec<u32> = (0..8).map(|c| e3.physical_core_of(c)).collect();
        assert_eq!(cores, [0, 1, 2, 3, 0, 1, 2, 3]);
        let mut e5 = HostProfile::builtin("xeon-e5-2660v4").expect("built in");
        e5.cores = 2;
        assert_eq!((e5.physical_cores(), e5.physical_core_of(1)), (2, 1));
    }

    #[test]
    fn cfs_settings_scale_with_the_log_of_online_cpus_up_to_eight() {
        let ms = |s: CfsSettings| {
            (
                s.latency.0 / 1_000,
                s.min_granularity.0 / 1_000,
                s.wakeup_granularity.0 / 1_000,
            )
        };
        assert_eq!(ms(linux_cfs(1)), (6_000, 750, 1_000));
        assert_eq!(ms(linux_cfs(2)), (12_000, 1_500, 2_000));
        assert_eq!(ms(linux_cfs(7)), (18_000, 2_250, 3_000));
        assert_eq!(ms(linux_cfs(8)), (24_000, 3_000, 4_000));
        assert_eq!(linux_cfs(28), linux_cfs(8));
        for m in HOST_MODELS {
            let h = HostProfile::builtin(m).expect("a built-in host");
            assert_eq!(
                (
                    h.sched_latency,
                    h.sched_min_granularity,
                    h.sched_wakeup_granularity
                ),
                (
                    Duration(24_000_000),
                    Duration(3_000_000),
                    Duration(4_000_000)
                ),
                "{m}"
            );
        }
    }
}
