//! The `mode-select` strategy on the emulator: per request, classic
//! polling, hybrid polling or an interrupt, as `cint_policy::mode_select`
//! decides (docs/ALGORITHMS.md section 10), under one application thread.
//!
//! The selector is built from what the host's kernel knows of its
//! machine, the same profile data the simulator gives it
//! ([`cint_scenario::mode_select::mode_select_params`]: the power
//! profile's cpuidle table and powers, the host profile's CPU cost of a
//! sleep and wake-up). At run time each thread tells its selector what the
//! emulator measured: each completion's device time (submission to the
//! device core's post, on one clock), the requests in flight host-wide,
//! and whether another thread runs on its core. Each thread has a
//! selector of its own, so that choosing takes no lock on the submission
//! path; each learns from its own completions.
//!
//! A synchronous request (`pvsync2` with `hipri`) is submitted as polled
//! ([`crate::Client::submit_polled`]) or interrupt-driven as chosen, and
//! its thread waits accordingly; an io_uring job with `hipri` is an
//! `IORING_SETUP_IOPOLL` ring, whose requests are all polled, so its
//! thread chooses at each wait between a spin and a sleep before the
//! spin; a job Linux would not poll completes by interrupts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cint_policy::hybrid_poll::Direction;
use cint_policy::mode_select::{CompletionChoice, ModeSelect, Situation};
use cint_policy::Nanos;
use cint_scenario::{CompletionMode, Engine, IoJob, Scenario, Strategy};

use crate::client::Client;
use crate::error::EmuError;
use crate::idle_watch::IdleWatch;
use crate::shared::Op;

/// The selector of `strategy`, if it is a `mode-select` one: refused when
/// the host or the device has no power data to decide from.
pub(crate) fn build(
    scenario: &Scenario,
    strategy: &Strategy,
) -> Result<Option<ModeSelect>, EmuError> {
    if strategy.mode != CompletionMode::ModeSelect {
        return Ok(None);
    }
    let (host, device) = (&scenario.host, &scenario.device);
    let Some(params) = cint_scenario::mode_select::mode_select_params(host, device) else {
        return Err(crate::error::unsupported(
            format!("strategy.{}.kind", strategy.name),
            cint_scenario::mode_select::without_power_data(host, device),
        ));
    };
    ModeSelect::new(params)
        .map(Some)
        .map_err(|e| EmuError::Config(format!("strategy '{}': {e}", strategy.name)))
}

/// How many times a thread chose each mode: per request for a
/// synchronous job, per wait for an io_uring one (the result document's
/// type).
pub type ModeCounts = cint_report::ModeChoices;

/// Which requests of a job Linux would poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Polling {
    /// `pvsync2` with `hipri`: each request is polled or not, as chosen.
    PerRequest,
    /// io_uring with `hipri` (`IORING_SETUP_IOPOLL`): every request is
    /// polled; each wait spins or sleeps first, as chosen.
    PerWait,
    /// Neither: every request completes by interrupt.
    Never,
}

/// One job thread's selector and what it feeds it.
pub(crate) struct ThreadSelect {
    selector: ModeSelect,
    /// Its CPU's idle-state counters, or why its waits' idle states
    /// cannot be seen; `None` for a job whose waits it does not choose.
    idle: Option<Result<IdleWatch, String>>,
    /// The last choice was made with no other thread wanting the core.
    chose_alone: bool,
    /// Requests in flight on the emulated host, all threads of the run.
    host_in_flight: Arc<AtomicU64>,
    polling: Polling,
    /// The wait's mode: the last request's choice, or the last wait's.
    choice: CompletionChoice,
    /// What was chosen, over the whole run.
    pub counts: ModeCounts,
    /// The run is in its measured window (the thread sets it as it goes).
    pub measuring: bool,
    /// What was chosen in the measured window.
    pub measured: ModeCounts,
}

impl ThreadSelect {
    /// A thread of `io`'s job under `selector`, counting its requests in
    /// `host_in_flight`, its waits' idle states watched by what
    /// `open_idle` opens (only where it chooses how to wait).
    pub fn new(
        mut selector: ModeSelect,
        io: &IoJob,
        host_in_flight: Arc<AtomicU64>,
        open_idle: impl FnOnce() -> Result<IdleWatch, String>,
    ) -> Self {
        let polling = match io.engine {
            Engine::Pvsync2 if io.hipri => Polling::PerRequest,
            Engine::IoUring if io.hipri => Polling::PerWait,
            _ => Polling::Never,
        };
        let idle = (polling != Polling::Never).then(open_idle);
        if matches!(idle, Some(Ok(_))) {
            // The watch looks at one wait in OBSERVE_EVERY: the selector's
            // prior must weigh against those as against every wait's.
            selector
                .observe_idle_one_in(crate::idle_watch::OBSERVE_EVERY)
                .expect("OBSERVE_EVERY is within the selector's range (checked at compile time)");
        }
        ThreadSelect {
            selector,
            idle,
            chose_alone: false,
            host_in_flight,
            polling,
            choice: CompletionChoice::Interrupt,
            counts: ModeCounts::default(),
            measuring: false,
            measured: ModeCounts::default(),
        }
    }

    fn situation(&mut self, client: &Client, can_interrupt: bool) -> Situation {
        let in_flight = self.host_in_flight.load(Ordering::Relaxed) + 1;
        let core_contended = client.core_contended();
        self.chose_alone = !core_contended;
        Situation {
            in_flight: in_flight.min(u64::from(u32::MAX)) as u32,
            core_contended,
            can_interrupt: can_interrupt && client.can_interrupt(),
        }
    }

    /// Whether the next request, of `bytes` in direction `op`, is to be
    /// submitted as polled.
    pub fn choose_for_request(&mut self, client: &Client, bytes: u64, op: Op) -> bool {
        match self.polling {
            Polling::Never => false,
            Polling::PerWait => true,
            Polling::PerRequest => {
                let situation = self.situation(client, true);
                self.choice = self.selector.choose(bytes, direction(op), situation);
                self.count(self.choice);
                self.choice != CompletionChoice::Interrupt
            }
        }
    }

    /// Counts `choice` over the run, and in the window while measuring.
    fn count(&mut self, choice: CompletionChoice) {
        self.counts.count(choice);
        if self.measuring {
            self.measured.count(choice);
        }
    }

    /// A request was submitted (it counts as in flight on the host).
    pub fn submitted(&self) {
        self.host_in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// How to wait now for completions of `bytes`-byte requests in
    /// direction `op`.
    pub fn choose_for_wait(&mut self, client: &Client, bytes: u64, op: Op) -> CompletionChoice {
        match self.polling {
            Polling::Never => CompletionChoice::Interrupt,
            Polling::PerRequest => self.choice,
            Polling::PerWait => {
                // An IOPOLL ring cannot take an interrupt.
                let situation = self.situation(client, false);
                self.choice = self.selector.choose(bytes, direction(op), situation);
                self.count(self.choice);
                self.choice
            }
        }
    }

    /// A wait for requests of `bytes` in direction `op` has ended, the
    /// thread having blocked `blocks` times as it began and as it ended: a
    /// sleep or an interrupt may have idled the CPU, and the selector
    /// learns the state it reached where the watch saw it
    /// (`crate::idle_watch`). A poll did not idle it and leaves the watch
    /// as it was.
    pub fn wait_ended(&mut self, bytes: u64, op: Op, blocks: (u64, u64)) {
        if self.choice == CompletionChoice::Poll {
            return;
        }
        let Some(Ok(watch)) = &mut self.idle else {
            return;
        };
        if let Some(reached) = watch.wait_ended(blocks, self.chose_alone) {
            // In range by construction (the watch maps to the profile's
            // table), and a sleep is never of no time: a refusal cannot
            // happen, and would only lose the observation.
            let _ = self
                .selector
                .record_idle(bytes, direction(op), self.choice, reached);
        }
    }

    /// What the thread's watch saw: the waits looked at and those whose
    /// state was learnt, or why none could be; `None` where it chose no
    /// wait.
    pub fn idle_report(&self) -> Option<Result<(u64, u64), String>> {
        self.idle.as_ref().map(|w| match w {
            Ok(watch) => Ok((watch.sampled, watch.observed)),
            Err(why) => Err(why.clone()),
        })
    }

    /// A completion came back: its class learns the device's time,
    /// whichever way it travelled.
    pub fn completed(&mut self, bytes: u64, op: Op, device_time: Nanos) {
        self.host_in_flight.fetch_sub(1, Ordering::Relaxed);
        self.selector.record(bytes, direction(op), device_time);
    }
}

fn direction(op: Op) -> Direction {
    match op {
        Op::Read => Direction::Read,
        Op::Write => Direction::Write,
    }
}
