//! The energy model: a power state per core, fed by what the scheduler
//! does (running a thread, spinning in a poll loop, in an interrupt
//! handler, idle), with a cpuidle governor ([`super::idle`]) choosing the
//! idle state and that state's exit latency delaying the wake-up that ends
//! it. System power = base + uncore while any core is in C0 + each core's
//! state + the device (docs/ENERGY.md).
//!
//! Energy is integrated exactly: powers are whole microwatts and times
//! whole nanoseconds, so each piece is an integer number of femtojoules.
//! It is kept twice, as time per state (multiplied out at the end) and as
//! a running integral of the instantaneous power; the two must agree to
//! the femtojoule, which the run checks, with the mean power between the
//! idle floor and the all-busy ceiling.
//!
//! A host or device profile without power data leaves the model off: no
//! exit latencies, nothing added to the result.

use cint_policy::Nanos;
use cint_report::{CoreEnergy, EnergyResult, StateResidency};
use cint_scenario::{DevicePower, HostPower, Scenario};

use crate::engine::{Event, EventKey};
use crate::host::idle::{GovernorState, IdleContext, StateTable};
use crate::world::{RunState, Wait, World};

/// Core states before the idle states.
const BUSY: usize = 0;
const SPIN: usize = 1;
const IRQ: usize = 2;
/// Index of idle state 0.
const IDLE0: usize = 3;
const RUN_STATES: [&str; IDLE0] = ["busy", "spin", "irq"];
/// Slots for the run states and up to `CPUIDLE_STATE_MAX` idle states
/// (the scenario refuses more), a power of two: a state indexes the
/// per-state tables through [`slot`], which needs no bounds check on the
/// path that runs at every change of a core's state.
const STATE_SLOTS: usize = 16;
const _: () = assert!(IDLE0 + cint_scenario::profiles::CPUIDLE_STATE_MAX <= STATE_SLOTS);

/// A state's slot in the per-state tables.
#[inline]
fn slot(state: usize) -> usize {
    state % STATE_SLOTS
}

/// What a change of state needs to know of a core state.
#[derive(Clone, Copy, Debug, Default)]
struct StateCost {
    /// Power, uW.
    uw: u64,
    /// How active the state is, for a physical core's choice between its
    /// threads: running states above idle ones (the dearer first),
    /// shallower idle states above deeper ones.
    activity: u64,
    /// The core is in C0 (the uncore stays on).
    c0: bool,
}

/// Watts to whole microwatts.
fn microwatts(w: f64) -> u64 {
    (w * 1e6).round() as u64
}

/// A stay in an idle state.
#[derive(Clone, Copy, Debug)]
struct Stay {
    /// The idle state (0 = the shallowest).
    idx: usize,
    entered: Nanos,
    /// The exit latency is running: work is waiting for the core.
    waking: bool,
}

/// A physical core's power state: with SMT, that of its more active
/// hardware thread.
#[derive(Clone, Debug)]
struct CorePower {
    state: usize,
    since: Nanos,
    /// Nanoseconds per state in the measured window.
    ns: [u64; STATE_SLOTS],
    /// Entries per state in the measured window.
    entries: [u64; STATE_SLOTS],
    /// Energy of idle-state exits in the measured window, fJ.
    exit_fj: u128,
}

/// A logical CPU's own state, its stay in an idle state and its governor
/// (cpuidle runs per logical CPU).
#[derive(Clone, Debug)]
struct CpuIdle {
    state: usize,
    stay: Option<Stay>,
    /// The polling state's limit timer of the current stay (its key and
    /// the core's token), kept outside the event queue: it is armed at
    /// nearly every idle entry and dropped at nearly every wake-up, which
    /// in the queue would move the events behind it both times and every
    /// earlier event scheduled meanwhile.
    poll_limit: Option<(EventKey, u64)>,
    /// The idle state the physical core was woken from when work last
    /// came to this CPU in an idle state (`None` if the core was running
    /// a sibling then): the exit the wake-up paid, which `mode-select`
    /// learns from.
    last_exit: Option<usize>,
    /// Wake-ups from an idle state by work so far (a polling state's limit
    /// is not one): a wait that saw exactly one knows the exit was its own.
    wakes: u32,
    governor: GovernorState,
}

/// The power model of one run.
#[derive(Debug)]
pub(crate) struct PowerModel {
    table: StateTable,
    names: Vec<String>,
    governor_name: &'static str,
    tick: Nanos,
    poll_limit: Nanos,
    /// Per core state (its slot), what a change of state needs.
    states: [StateCost; STATE_SLOTS],
    /// Run states and idle states.
    state_count: usize,
    /// Energy of one exit from each idle state: busy power over half its
    /// exit latency, fJ.
    exit_cost_fj: Vec<u128>,
    base_uw: u64,
    uncore_uw: u64,
    device_idle_uw: u64,
    /// The device's energy per byte moved, fJ.
    device_fj_per_byte: u64,
    /// The device's fastest direction, bytes/s (the ceiling's bound).
    device_max_rate: u64,
    /// Per physical core; logical CPU `c` is on core `core_of[c]`.
    cores: Vec<CorePower>,
    /// Per logical CPU.
    cpus: Vec<CpuIdle>,
    /// Per logical CPU, its physical core (the host's numbering,
    /// `HostProfile::physical_core_of`): a table, because this is read at
    /// every change of a CPU's state and a remainder is a division.
    core_of: Vec<usize>,
    /// Hardware threads per physical core.
    threads_per_core: usize,
    /// Physical cores in C0 now.
    active: usize,
    uncore_since: Nanos,
    uncore_ns: u64,
    /// Cores' and uncore's power now, uW, and its integral, fJ.
    power_uw: u64,
    integral_fj: u128,
    integrated_to: Nanos,
    window_start: Nanos,
    /// Bytes the device completed in the window: its energy per byte is
    /// for what it moved, not for what the workload asked of the page
    /// cache or counted as an operation's.
    device_bytes: u64,
    /// Per thread, its armed timer (instant, token).
    thread_timer: Vec<(Nanos, u64)>,
    /// Per core, the threads pinned to it.
    core_threads: Vec<Vec<u32>>,
    /// The earliest pending polling limit and its CPU
    /// (`EventKey::NONE` when none is).
    next_poll_limit: (EventKey, usize),
}

impl PowerModel {
    /// The model for `sc`, or `None` when its host or device has no power
    /// data; `thread_cores` maps each thread to its core.
    pub(crate) fn new(sc: &Scenario, thread_cores: &[u32]) -> Option<Box<PowerModel>> {
        let (Some(host), Some(device)) = (&sc.host.power, &sc.device.power) else {
            return None;
        };
        let cpus_n = sc.host.cores.max(1);
        let core_of: Vec<usize> = (0..cpus_n)
            .map(|c| sc.host.physical_core_of(c) as usize)
            .collect();
        Some(Box::new(Self::build(
            (host, sc.host.tick.0),
            device,
            (core_of, sc.host.physical_cores() as usize),
            thread_cores,
            sc.device.read.bandwidth.max(sc.device.write.bandwidth),
        )))
    }

    fn build(
        (host, tick): (&HostPower, Nanos),
        device: &DevicePower,
        (core_of, cores_n): (Vec<usize>, usize),
        thread_cores: &[u32],
        device_max_rate: u64,
    ) -> PowerModel {
        let cpus_n = core_of.len();
        let table = StateTable::new(host);
        let states = IDLE0 + host.idle_states.len();
        let mut state_uw = vec![
            microwatts(host.core_busy_w),
            microwatts(host.core_spin_w),
            microwatts(host.core_irq_w),
        ];
        state_uw.extend(host.idle_states.iter().map(|s| microwatts(s.power_w)));
        let busy = u128::from(microwatts(host.core_busy_w));
        let exit_cost_fj = table
            .exit_ns
            .iter()
            .map(|&ns| busy * u128::from(ns) / 2)
            .collect();
        let mut core_threads = vec![Vec::new(); cpus_n];
        for (t, &c) in thread_cores.iter().enumerate() {
            core_threads[c as usize].push(t as u32);
        }
        let cores = (0..cores_n)
            .map(|_| CorePower {
                state: BUSY,
                since: 0,
                ns: [0; STATE_SLOTS],
                entries: [0; STATE_SLOTS],
                exit_fj: 0,
            })
            .collect();
        let cpus = (0..cpus_n)
            .map(|_| CpuIdle {
                state: BUSY,
                stay: None,
                poll_limit: None,
                last_exit: None,
                wakes: 0,
                governor: GovernorState::new(host.governor, host.idle_states.len()),
            })
            .collect();
        let idle_n = host.idle_states.len();
        let mut costs = [StateCost::default(); STATE_SLOTS];
        for (s, cost) in costs.iter_mut().enumerate().take(states) {
            *cost = match s.checked_sub(IDLE0) {
                None => StateCost {
                    uw: state_uw[s],
                    activity: (1u64 << 40) + state_uw[s],
                    c0: true,
                },
                Some(i) => StateCost {
                    uw: state_uw[s],
                    activity: (idle_n - i) as u64,
                    c0: host.idle_states[i].polling,
                },
            };
        }
        let busy_uw = microwatts(host.core_busy_w);
        let uncore_uw = microwatts(host.uncore_w);
        PowerModel {
            states: costs,
            state_count: states,
            poll_limit: table.poll_limit(tick),
            table,
            names: host.idle_states.iter().map(|s| s.name.clone()).collect(),
            governor_name: host.governor.name(),
            tick,
            exit_cost_fj,
            base_uw: microwatts(host.base_w),
            uncore_uw,
            device_idle_uw: microwatts(device.idle_w),
            device_fj_per_byte: microwatts(device.w_per_gbps),
            device_max_rate,
            threads_per_core: cpus_n / cores_n,
            core_of,
            cores,
            cpus,
            // Every core starts busy: threads are runnable at 0.
            active: cores_n,
            uncore_since: 0,
            uncore_ns: 0,
            power_uw: busy_uw * cores_n as u64 + uncore_uw,
            integral_fj: 0,
            device_bytes: 0,
            integrated_to: 0,
            window_start: 0,
            thread_timer: vec![(0, u64::MAX); thread_cores.len()],
            core_threads,
            next_poll_limit: (EventKey::NONE, 0),
        }
    }

    /// Finds the earliest pending polling limit again, after the one that
    /// was earliest went.
    fn find_next_poll_limit(&mut self) {
        self.next_poll_limit = (EventKey::NONE, 0);
        for (c, cpu) in self.cpus.iter().enumerate() {
            if let Some((key, _)) = cpu.poll_limit {
                if key < self.next_poll_limit.0 {
                    self.next_poll_limit = (key, c);
                }
            }
        }
    }

    /// CPU `c`'s polling limit, if it has one pending, is dropped.
    fn drop_poll_limit(&mut self, c: usize) {
        if self.cpus[c].poll_limit.take().is_some() && self.next_poll_limit.1 == c {
            self.find_next_poll_limit();
        }
    }

    fn integrate(&mut self, now: Nanos) {
        self.integral_fj += u128::from(self.power_uw) * u128::from(now - self.integrated_to);
        self.integrated_to = now;
    }

    /// Logical CPU `c` enters `state` at `now`; its physical core takes
    /// the state of its more active hardware thread.
    #[inline]
    fn set(&mut self, c: usize, state: usize, now: Nanos) {
        // Most calls find the state unchanged (a thread's next burst).
        if self.cpus[c].state != state {
            self.change(c, state, now);
        }
    }

    fn change(&mut self, c: usize, state: usize, now: Nanos) {
        self.cpus[c].state = state;
        let k = self.core_of[c];
        let combined = self.combined(k);
        self.set_core(k, combined, now);
    }

    /// The state of physical core `k`: its most active hardware thread's,
    /// a running state before any idle state (the dearer first), and the
    /// shallower of two idle states.
    fn combined(&self, k: usize) -> usize {
        let mut best = self.cpus[k].state;
        let more_active = |a: usize, b: usize| {
            if self.states[slot(b)].activity > self.states[slot(a)].activity {
                b
            } else {
                a
            }
        };
        // One and two threads per core spelled out: this runs at every
        // change of a CPU's state.
        match self.threads_per_core {
            1 => return best,
            2 => return more_active(best, self.cpus[k + self.cores.len()].state),
            _ => {}
        }
        for c in crate::host::smt::threads_of(k, self.cores.len(), self.threads_per_core) {
            best = more_active(best, self.cpus[c].state);
        }
        best
    }

    /// Physical core `c` enters `state` at `now`.
    fn set_core(&mut self, c: usize, state: usize, now: Nanos) {
        let old = self.cores[c].state;
        if old == state {
            return;
        }
        self.integrate(now);
        let core = &mut self.cores[c];
        core.ns[slot(old)] += now - core.since;
        core.since = now;
        core.state = state;
        let (from, to) = (self.states[slot(old)], self.states[slot(state)]);
        self.power_uw = self.power_uw - from.uw + to.uw;
        match (from.c0, to.c0) {
            (true, false) => {
                self.active -= 1;
                if self.active == 0 {
                    self.uncore_ns += now - self.uncore_since;
                    self.power_uw -= self.uncore_uw;
                }
            }
            (false, true) => {
                if self.active == 0 {
                    self.uncore_since = now;
                    self.power_uw += self.uncore_uw;
                }
                self.active += 1;
            }
            _ => {}
        }
    }

    /// Brings every accumulator up to `now`.
    fn settle(&mut self, now: Nanos) {
        self.integrate(now);
        for core in &mut self.cores {
            core.ns[slot(core.state)] += now - core.since;
            core.since = now;
        }
        if self.active > 0 {
            self.uncore_ns += now - self.uncore_since;
            self.uncore_since = now;
        }
    }

    /// The measured window starts at `now`: everything before is dropped.
    fn restart(&mut self, now: Nanos) {
        self.settle(now);
        for core in &mut self.cores {
            core.ns.iter_mut().for_each(|n| *n = 0);
            core.entries.iter_mut().for_each(|n| *n = 0);
            core.exit_fj = 0;
        }
        self.uncore_ns = 0;
        self.integral_fj = 0;
        self.device_bytes = 0;
        self.window_start = now;
    }

    /// Energy of the cores' states, exits and the uncore since the window
    /// started, from the time per state, fJ.
    fn by_residency_fj(&self) -> u128 {
        let cores: u128 = self.cores.iter().map(|c| self.core_fj(c)).sum();
        cores + u128::from(self.uncore_uw) * u128::from(self.uncore_ns)
    }

    fn core_fj(&self, core: &CorePower) -> u128 {
        core.ns
            .iter()
            .zip(&self.states[..self.state_count])
            .map(|(&ns, s)| u128::from(ns) * u128::from(s.uw))
            .sum::<u128>()
            + core.exit_fj
    }

    /// The lowest and highest mean system power the model allows, W:
    /// every core in its cheapest state with the device idle, and every
    /// core in its dearest state (plus what exits can add: at most half
    /// the busy power, spread over the exit latency) with the uncore on
    /// and the device moving data at its fastest.
    fn bounds_w(&self) -> (f64, f64) {
        let n = self.cores.len() as f64;
        let uw = || self.states[..self.state_count].iter().map(|s| s.uw);
        let min = uw().min().unwrap_or(0) as f64;
        let max = uw().max().unwrap_or(0) as f64;
        let base = (self.base_uw + self.device_idle_uw) as f64;
        let device_max = self.device_fj_per_byte as f64 * self.device_max_rate as f64 / 1e9;
        let floor = base + n * min;
        let ceiling = base
            + self.uncore_uw as f64
            + n * (max + self.states[BUSY].uw as f64 / 2.0)
            + device_max;
        (floor / 1e6, ceiling / 1e6)
    }

    /// Checks the window's accounting; a message for the first failure.
    fn check(&self, now: Nanos) -> Result<(), String> {
        let window = now - self.window_start;
        for (c, core) in self.cores.iter().enumerate() {
            let total: u64 = core.ns.iter().sum();
            if total != window {
                return Err(format!(
                    "energy: core {c}'s states cover {total} ns of a {window} ns window"
                ));
            }
        }
        if self.uncore_ns > window {
            return Err(format!(
                "energy: uncore on for {} ns of a {window} ns window",
                self.uncore_ns
            ));
        }
        let exits: u128 = self.cores.iter().map(|c| c.exit_fj).sum();
        let by_residency = self.by_residency_fj();
        if by_residency != self.integral_fj + exits {
            return Err(format!(
                "energy: {by_residency} fJ by time per state but {} fJ by the integral of power",
                self.integral_fj + exits
            ));
        }
        if window > 0 {
            let (floor, ceiling) = self.bounds_w();
            let mean = self.total_fj(window) as f64 / 1e15 / (window as f64 / 1e9);
            // One part in a million for the float division.
            if mean < floor * (1.0 - 1e-6) || mean > ceiling * (1.0 + 1e-6) {
                return Err(format!(
                    "energy: mean power {mean} W outside the idle floor {floor} W and the \
                     all-busy ceiling {ceiling} W"
                ));
            }
        }
        Ok(())
    }

    fn device_fj(&self, window: Nanos) -> u128 {
        u128::from(self.device_idle_uw) * u128::from(window)
            + u128::from(self.device_fj_per_byte) * u128::from(self.device_bytes)
    }

    fn total_fj(&self, window: Nanos) -> u128 {
        self.by_residency_fj()
            + u128::from(self.base_uw) * u128::from(window)
            + self.device_fj(window)
    }

    /// The window's energy figures; `bytes` is what the workload moved
    /// (its jobs' reads and writes, its applications' operations), whose
    /// ratio to the energy is the bytes per joule.
    fn summary(&self, window: Nanos, bytes: u64) -> (f64, EnergyResult) {
        let j = |fj: u128| fj as f64 / 1e15;
        let secs = window.max(1) as f64 / 1e9;
        let total = j(self.total_fj(window));
        let cores = self
            .cores
            .iter()
            .enumerate()
            .map(|(c, core)| {
                let energy_j = j(self.core_fj(core));
                let residency = (0..self.state_count)
                    .map(|s| StateResidency {
                        state: match s.checked_sub(IDLE0) {
                            None => RUN_STATES[s].to_string(),
                            Some(i) => self.names[i].clone(),
                        },
                        share: core.ns[s] as f64 / window.max(1) as f64,
                        entries: core.entries[s],
                    })
                    .collect();
                CoreEnergy {
                    core: c as u32,
                    energy_j,
                    power_w: energy_j / secs,
                    residency,
                }
            })
            .collect();
        let result = EnergyResult {
            source: "model".into(),
            governor: self.governor_name.into(),
            power_w: total / secs,
            bytes_per_joule: if total > 0.0 {
                bytes as f64 / total
            } else {
                0.0
            },
            base_j: j(u128::from(self.base_uw) * u128::from(window)),
            uncore_j: j(u128::from(self.uncore_uw) * u128::from(self.uncore_ns)),
            device_j: j(self.device_fj(window)),
            cores,
            measured_package_j: None,
        };
        (total, result)
    }
}

/// Why an idle core's timer event fired.
enum IdleTimer {
    /// The exit latency is over: the core runs what woke it.
    Awake,
    /// A polling state ran out its limit: the governor runs again.
    PollLimit,
    Stale,
}

impl World<'_> {
    /// Core `c` starts executing: a handler, a poll loop or other work.
    #[inline]
    pub(crate) fn power_run(&mut self, c: usize, irq: bool) {
        let Some(p) = self.power.as_deref_mut() else {
            return;
        };
        let state = if irq {
            IRQ
        } else {
            match self.cores[c].current.map(|t| self.threads[t as usize].act) {
                Some(crate::world::Activity::Spin { .. }) => SPIN,
                _ => BUSY,
            }
        };
        let now = self.events.now();
        p.set(c, state, now);
    }

    /// Core `c` has nothing to run: unless it is already in an idle state,
    /// its governor picks one. The caller tells the SMT model.
    pub(crate) fn power_idle(&mut self, c: usize) {
        if self
            .power
            .as_deref()
            .is_none_or(|p| p.cpus[c].stay.is_some())
        {
            return;
        }
        self.enter_idle_state(c);
    }

    fn enter_idle_state(&mut self, c: usize) {
        let now = self.now();
        let ctx = self.idle_context(c, now);
        let Some(p) = self.power.as_deref_mut() else {
            return;
        };
        let idx = p.cpus[c].governor.select(&p.table, ctx);
        p.set(c, IDLE0 + idx, now);
        // The core enters the state only if its siblings are no more
        // active than this thread.
        let k = p.core_of[c];
        let core = &mut p.cores[k];
        if core.state == IDLE0 + idx {
            core.entries[slot(IDLE0 + idx)] += 1;
        }
        p.cpus[c].stay = Some(Stay {
            idx,
            entered: now,
            waking: false,
        });
        if p.table.polling[idx] {
            let at = now + p.poll_limit;
            self.arm_poll_limit(c, at);
        }
    }

    /// Arms CPU `c`'s polling limit for `at` under a new token of the
    /// core, superseding its `CoreDone` as [`World::arm_core_done`] does.
    fn arm_poll_limit(&mut self, c: usize, at: Nanos) {
        let core = &mut self.cores[c];
        core.token += 1;
        let token = core.token;
        let Some(key) = self.events.outside_key(at) else {
            return;
        };
        if let Some(p) = self.power.as_deref_mut() {
            p.cpus[c].poll_limit = Some((key, token));
            if key < p.next_poll_limit.0 {
                p.next_poll_limit = (key, c);
            }
        }
    }

    /// The earliest pending polling limit as the event loop offers it
    /// ([`crate::engine::EventQueue::pop_before_or`]): its key (or
    /// [`EventKey::NONE`]) and its event.
    #[inline(always)]
    pub(crate) fn next_poll_limit(&self) -> (EventKey, Event) {
        let (key, cpu) = self
            .power
            .as_deref()
            .map_or((EventKey::NONE, 0), |p| p.next_poll_limit);
        (key, Event::PollLimit { cpu: cpu as u32 })
    }

    /// CPU `c`'s polling limit came: unless the core took a new token
    /// since (and with it the work that superseded the limit), the
    /// governor runs again. A segment's start takes a new token, so a
    /// limit still current finds no segment.
    pub(crate) fn on_poll_limit(&mut self, c: usize) {
        let Some(p) = self.power.as_deref_mut() else {
            return;
        };
        let Some((_, token)) = p.cpus[c].poll_limit else {
            return;
        };
        p.drop_poll_limit(c);
        if self.cores[c].token == token && self.cores[c].seg.is_none() {
            self.on_idle_timer(c);
        }
    }

    /// What the governor sees: the next armed timer of a thread on this
    /// core (the tick if none is nearer) and the threads blocked in
    /// `io_schedule` (a synchronous direct read, a hybrid-poll sleep, a
    /// tag wait; `io_getevents` and io_uring's wait do not count in 5.15).
    fn idle_context(&self, c: usize, now: Nanos) -> IdleContext {
        let Some(p) = self.power.as_deref() else {
            return IdleContext {
                sleep_length: 0,
                nr_iowait: 0,
            };
        };
        let mut sleep_length = p.tick;
        let mut nr_iowait = 0;
        for &t in &p.core_threads[c] {
            let th = &self.threads[t as usize];
            if th.run != RunState::Blocked {
                continue;
            }
            if matches!(th.wait, Wait::Sync | Wait::HybridSleep { .. } | Wait::Tag) {
                nr_iowait += 1;
            }
            let (at, token) = p.thread_timer[t as usize];
            if token == th.timer_token && at > now {
                sleep_length = sleep_length.min(at - now);
            }
        }
        IdleContext {
            sleep_length,
            nr_iowait,
        }
    }

    /// A new token for core `c` and its `CoreDone` at `at`, superseding
    /// any earlier one (an idle-state timer, or a segment's new end).
    pub(crate) fn arm_core_done(&mut self, c: usize, at: Nanos) {
        let core = &mut self.cores[c];
        core.token += 1;
        let token = core.token;
        self.events.schedule(
            at,
            Event::CoreDone {
                core: c as u32,
                token,
            },
        );
    }

    /// True while core `c` sits in a polling idle state (cpuidle's POLL
    /// spins in `cpu_relax`, which an SMT sibling feels as a poll loop).
    pub(crate) fn power_polling(&self, c: usize) -> bool {
        self.power.as_deref().is_some_and(|p| {
            p.cpus[c]
                .stay
                .is_some_and(|s| !s.waking && p.table.polling[s.idx])
        })
    }

    /// Thread `t` armed a timer for `at` (its current `timer_token`).
    #[inline]
    pub(crate) fn power_note_timer(&mut self, t: usize, at: Nanos) {
        if let Some(p) = self.power.as_deref_mut() {
            p.thread_timer[t] = (at, self.threads[t].timer_token);
        }
    }

    /// Called by `dispatch` before it runs anything: true while core `c`
    /// may not run yet because it is leaving an idle state (its exit
    /// latency). Work arriving at a core in an idle state starts that
    /// exit; a polling state, or one without exit latency, ends at once.
    #[inline]
    pub(crate) fn power_holds(&mut self, c: usize) -> bool {
        match self.power.as_deref() {
            Some(p) if p.cpus[c].stay.is_some() => self.leave_idle_state(c),
            _ => false,
        }
    }

    /// [`World::power_holds`] for a CPU in an idle state; out of line, so
    /// that the scheduler's dispatch stays small (it runs at every event
    /// that gives a core work, energy model or not).
    #[inline(never)]
    fn leave_idle_state(&mut self, c: usize) -> bool {
        let Some(p) = self.power.as_deref() else {
            return false;
        };
        let Some(stay) = p.cpus[c].stay else {
            return false;
        };
        if stay.waking {
            return true;
        }
        let core = &self.cores[c];
        if core.irq_pending.is_empty() && core.rq.is_empty() && core.current.is_none() {
            return false;
        }
        let now = self.now();
        // The exit is from the state the physical core is really in: with
        // an SMT sibling running, the core is in C0 and the thread resumes
        // at once; with one in a shallower state, that state's exit.
        let k = p.core_of[c];
        let core_idle = p.cores[k].state.checked_sub(IDLE0);
        let Some(p) = self.power.as_deref_mut() else {
            return false;
        };
        p.cpus[c].last_exit = core_idle;
        p.cpus[c].wakes = p.cpus[c].wakes.wrapping_add(1);
        let Some(idx) = core_idle else {
            self.end_stay(c, now, false);
            return false;
        };
        let exit = p.table.exit_ns[idx];
        if p.table.polling[idx] || exit == 0 {
            self.end_stay(c, now, false);
            return false;
        }
        p.cores[k].exit_fj += p.exit_cost_fj[idx];
        p.cpus[c].stay = Some(Stay {
            waking: true,
            ..stay
        });
        self.arm_core_done(c, now + exit);
        true
    }

    /// The stay in an idle state is over; the governor learns how long it
    /// lasted.
    #[inline(never)]
    fn end_stay(&mut self, c: usize, now: Nanos, poll_limit_hit: bool) {
        let Some(p) = self.power.as_deref_mut() else {
            return;
        };
        let Some(stay) = p.cpus[c].stay.take() else {
            return;
        };
        p.drop_poll_limit(c);
        let table = &p.table;
        p.cpus[c]
            .governor
            .reflect(table, stay.idx, now - stay.entered, poll_limit_hit);
    }

    /// The threads pinned to core `c` (none without the energy model).
    pub(crate) fn power_core_threads(&self, c: usize) -> &[u32] {
        self.power.as_deref().map_or(&[], |p| &p.core_threads[c])
    }

    /// How many times work has woken CPU `c` from an idle state (0
    /// without the energy model): what a wait starting now notes, for
    /// [`World::power_reached_alone`].
    pub(crate) fn power_wakes(&self, c: usize) -> u32 {
        self.power.as_deref().map_or(0, |p| p.cpus[c].wakes)
    }

    /// The idle state a wait on CPU `c` that began after `wakes` wake-ups
    /// spent and paid the exit of, if it idled the CPU alone: the CPU went
    /// idle once since and nothing else woke it or ran meanwhile. It is
    /// the physical core's state (with SMT, the more active thread's),
    /// not the CPU's own request; `None` where the wait shared the CPU's
    /// idle time with other work, or the core was running its other
    /// thread when woken.
    pub(crate) fn power_reached_alone(&self, c: usize, wakes: u32) -> Option<usize> {
        let p = self.power.as_deref()?;
        let cpu = &p.cpus[c];
        match cpu.stay {
            // Still asleep (the wake-up comes from another CPU).
            Some(stay) if !stay.waking && cpu.wakes == wakes => {
                p.cores[p.core_of[c]].state.checked_sub(IDLE0)
            }
            Some(stay) if !stay.waking => None,
            // Woken once since, by the work now running (a handler, or
            // the exit from the state): not by another thread's.
            _ if cpu.wakes == wakes.wrapping_add(1) && self.cores[c].current.is_none() => {
                cpu.last_exit
            }
            _ => None,
        }
    }

    /// A `CoreDone` reached a core with no segment: an idle-state timer.
    pub(crate) fn on_idle_timer(&mut self, c: usize) {
        let now = self.now();
        let what = match self.power.as_deref().and_then(|p| p.cpus[c].stay) {
            Some(Stay { waking: true, .. }) => IdleTimer::Awake,
            Some(stay)
                if self
                    .power
                    .as_deref()
                    .is_some_and(|p| p.table.polling[stay.idx]) =>
            {
                IdleTimer::PollLimit
            }
            _ => IdleTimer::Stale,
        };
        match what {
            IdleTimer::Awake => {
                self.end_stay(c, now, false);
                self.dispatch(c);
            }
            IdleTimer::PollLimit => {
                self.end_stay(c, now, true);
                self.enter_idle_state(c);
                self.smt_note(c);
            }
            IdleTimer::Stale => {}
        }
    }

    /// The measured window starts now.
    pub(crate) fn power_restart(&mut self) {
        let now = self.now();
        if let Some(p) = self.power.as_deref_mut() {
            p.restart(now);
        }
    }

    /// Settles the model at the end of the run and checks its invariants.
    pub(crate) fn power_finish(&mut self) {
        let now = self.now();
        if let Some(p) = self.power.as_deref_mut() {
            p.settle(now);
            if let Err(msg) = p.check(now) {
                self.check.fail(msg);
            }
        }
    }

    /// The device completed request `r`: its bytes count toward the
    /// device's energy.
    #[inline(always)]
    pub(crate) fn power_device_done(&mut self, r: u32) {
        if let Some(p) = self.power.as_deref_mut() {
            p.device_bytes += self.reqs[r as usize].bytes;
        }
    }

    /// What the workload moved in the window: its jobs' bytes and its
    /// applications' operations' (a get's value, a dumped pair).
    fn window_bytes(&self) -> u64 {
        let apps = self
            .apps
            .as_deref()
            .map_or(0, crate::apps::Apps::window_bytes);
        self.jobs.iter().map(|j| j.bytes).sum::<u64>() + apps
    }

    /// `energy_j` and the energy figures of the result, if the model is on.
    pub(crate) fn energy_summary(&self) -> Option<(f64, EnergyResult)> {
        let p = self.power.as_deref()?;
        Some(p.summary(self.now() - p.window_start, self.window_bytes()))
    }
}
