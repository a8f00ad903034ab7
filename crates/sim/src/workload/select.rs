//! The `mode-select` strategy on the simulator: per request, classic
//! polling, hybrid polling or an interrupt, as `cint_policy::mode_select`
//! decides (docs/ALGORITHMS.md section 10).
//!
//! The selector is built from what the host's kernel knows of its
//! machine: the power profile (cpuidle table, core and platform powers)
//! and the CPU cost of a sleep and wake-up. At run time it is told each
//! request's device time, the requests in flight and whether another
//! thread is runnable on the submitting core. A synchronous request
//! (`preadv2` with `RWF_HIPRI`) goes to a poll queue or an interrupt
//! queue as chosen; an io_uring ring set up with `IORING_SETUP_IOPOLL`
//! only polls, so its threads choose at each wait between spinning and a
//! sleep before the spin.

use cint_policy::hybrid_poll::{Direction, SleepEstimator};
use cint_policy::mode_select::{CompletionChoice, ModeSelect, Situation};
use cint_scenario::{CompletionMode, HybridSleep, Rw, Scenario, Strategy};

use crate::world::{Wait, World};
use crate::SimError;

/// The selector of `strategy`, if it is a `mode-select` one: refused
/// (exit 2) when the host or the device has no power data to decide from.
pub(crate) fn build(sc: &Scenario, strategy: &Strategy) -> Result<Option<ModeSelect>, SimError> {
    if strategy.mode != CompletionMode::ModeSelect {
        return Ok(None);
    }
    let Some(params) = cint_scenario::mode_select::mode_select_params(&sc.host, &sc.device) else {
        return Err(SimError::input_at(
            format!("strategy.{}.kind", strategy.name),
            cint_scenario::mode_select::without_power_data(&sc.host, &sc.device),
        ));
    };
    // Each power figure is at most what the selector takes, but not the
    // platform's sum of three of them.
    if params.static_mw > cint_policy::mode_select::MAX_POWER_MW {
        return Err(SimError::input_at(
            "host.power.base_w".to_string(),
            format!(
                "with uncore_w and the device's idle_w the platform draws {} W at rest, above \
                 the 10 kW that \"mode-select\" (strategy '{}') weighs",
                f64::from(params.static_mw) / 1e3,
                strategy.name
            ),
        ));
    }
    ModeSelect::new(params)
        .map(Some)
        .map_err(|e| crate::strategy_refused(strategy, e))
}

impl World<'_> {
    /// Whether another thread of thread `t`'s core sleeps waiting for its
    /// I/O: it wants the core back when its completion comes, and a spin
    /// would hold it until CFS's wake-up preemption asks (the selector's
    /// power data means the power model, and its table of each core's
    /// threads, is there).
    fn others_wait_for_io(&self, t: usize) -> bool {
        let core = self.threads[t].core as usize;
        self.power_core_threads(core).iter().any(|&o| {
            let th = &self.threads[o as usize];
            o as usize != t
                && th.run == crate::world::RunState::Blocked
                && matches!(
                    th.wait,
                    Wait::Sync
                        | Wait::HybridSleep { .. }
                        | Wait::Tag
                        | Wait::AioEvents { .. }
                        | Wait::UringEvents { .. }
                )
        })
    }

    /// What the selector sees for thread `t` now.
    fn situation(&self, t: usize, can_interrupt: bool) -> Situation {
        let core = self.threads[t].core as usize;
        let in_flight = self.check.issued.saturating_sub(self.check.delivered) + 1;
        Situation {
            in_flight: in_flight.min(u64::from(u32::MAX)) as u32,
            core_contended: !self.cores[core].rq.is_empty() || self.others_wait_for_io(t),
            can_interrupt,
        }
    }

    /// The last `k` requests thread `t` staged: a synchronous thread's
    /// request goes to a poll queue or an interrupt queue as the selector
    /// chooses; an `IORING_SETUP_IOPOLL` ring's always to a poll queue.
    pub(crate) fn select_staged(&mut self, t: usize, k: u32) {
        let Some(selector) = self.selector else {
            return;
        };
        let th = &self.threads[t];
        if !th.polls {
            return;
        }
        if !th.prog.engine.is_sync() {
            for &r in &th.batch[th.batch.len() - k as usize..] {
                self.reqs[r as usize].polled = true;
            }
            return;
        }
        let situation = self.situation(t, true);
        for i in self.threads[t].batch.len() - k as usize..self.threads[t].batch.len() {
            let r = self.threads[t].batch[i] as usize;
            let req = &self.reqs[r];
            let choice = selector.choose(req.bytes, Direction::of(req.write), situation);
            self.reqs[r].polled = choice != CompletionChoice::Interrupt;
            self.set_choice(t, choice, situation);
        }
    }

    /// Thread `t` waits as `choice`, made in `situation`.
    fn set_choice(&mut self, t: usize, choice: CompletionChoice, situation: Situation) {
        let job = self.threads[t].job as usize;
        let measured = self.measuring && self.job_measuring(job, self.now());
        if let Some(stats) = self.jobs.get_mut(job) {
            stats.count_choice(choice, measured);
        }
        let th = &mut self.threads[t];
        th.choice = choice;
        th.choice_alone = !situation.core_contended;
        if let CompletionChoice::Sleep(ns) = choice {
            th.estimator = SleepEstimator::Fixed(ns);
        }
    }

    /// How thread `t` waits for its completions now: the strategy's mode,
    /// or under `mode-select` the choice for its request (synchronous
    /// engines) or for this wait (an IOPOLL ring, which cannot take an
    /// interrupt).
    pub(crate) fn wait_mode(&mut self, t: usize) -> CompletionMode {
        let th = &self.threads[t];
        if !th.polls {
            return CompletionMode::Interrupt(cint_policy::PolicyConfig::None);
        }
        let Some(selector) = self.selector else {
            return self.mode;
        };
        self.threads[t].choice_wakes = self.power_wakes(self.threads[t].core as usize);
        let th = &self.threads[t];
        if !th.prog.engine.is_sync() {
            let dir = match th.prog.rw {
                Rw::Write | Rw::RandWrite => Direction::Write,
                _ => Direction::Read,
            };
            let situation = self.situation(t, false);
            let choice = selector.choose(th.prog.bs, dir, situation);
            self.set_choice(t, choice, situation);
        }
        match self.threads[t].choice {
            CompletionChoice::Poll => CompletionMode::Poll,
            CompletionChoice::Sleep(ns) => CompletionMode::HybridPoll(HybridSleep::Fixed(ns)),
            CompletionChoice::Interrupt => {
                CompletionMode::Interrupt(cint_policy::PolicyConfig::None)
            }
        }
    }

    /// Thread `t`, blocked, is being woken: under `mode-select`, if it
    /// slept for its request (a hybrid sleep, or until the interrupt) and
    /// its CPU idled for it alone, the selector learns the idle state the
    /// core was woken from (Linux keeps the CPU's as `last_state_idx`).
    /// Alone means: no other thread wanted the core when the mode was
    /// chosen (a choice rule 1 made read no estimate), none waits for its
    /// I/O there now (its block may have begun the idle period), and the
    /// CPU went idle once and was woken for this wait.
    pub(crate) fn select_observe_idle(&mut self, t: usize) {
        let th = &self.threads[t];
        if !matches!(th.wait, Wait::Sync | Wait::HybridSleep { .. })
            || !th.choice_alone
            || self.others_wait_for_io(t)
        {
            return;
        }
        let Some(reached) = self.power_reached_alone(th.core as usize, th.choice_wakes) else {
            return;
        };
        let ((bs, write), choice) = (th.last_issued, th.choice);
        if let Some(selector) = self.selector.as_mut() {
            // The index comes from the same profile's table as the
            // selector's, so it is always in range.
            let recorded = selector.record_idle(bs, Direction::of(write), choice, reached);
            debug_assert!(recorded.is_ok(), "{recorded:?}");
        }
    }

    /// The device posted request `r`'s completion: its class learns the
    /// device's time, whichever way it completes.
    pub(crate) fn select_record(&mut self, r: u32) {
        if let Some(selector) = self.selector.as_mut() {
            let req = &self.reqs[r as usize];
            let run_time = req.posted_at.saturating_sub(req.dispatched);
            selector.record(req.bytes, Direction::of(req.write), run_time);
        }
    }
}
