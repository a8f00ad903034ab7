//! Jobs that do not start with the run: fio's `startdelay`, and groups
//! (`stonewall`, `wait_for`) that run one after another. A group starts
//! once every thread of the groups before it has exited; each of its jobs
//! then starts `startdelay` later, its `runtime` counts from there, and
//! it is measured from its start plus the warm-up to its last thread's
//! exit. A thread held back is blocked on a timer, so it starts the way a
//! sleeping thread wakes (timer interrupt, wake-up, return to user).

use cint_policy::Nanos;

use crate::engine::Event;
use crate::world::{Wait, World};
use cint_scenario::units::format_ms as ms;

/// Where each job is in the run's sequence of groups.
#[derive(Debug)]
pub(crate) struct Groups {
    /// Distinct groups in ascending order.
    order: Vec<u32>,
    /// Index in `order` of the group running now.
    current: usize,
    jobs: Vec<JobClock>,
    /// Groups or start delays are in use: the result gets their notes.
    staged: bool,
    /// An `exitall` with scope `all` ended the run's jobs: no later group
    /// starts.
    halted: bool,
    /// Per thread of a job that started after the run, its counters when
    /// its job's own window opened (none for the others, whose counters
    /// start with the run's window): what its figures count from.
    counted_from: Vec<Option<ThreadCounts>>,
    /// Per thread, its counters when the run's window opened and reset
    /// them: with its counters since, its whole life's, for a job that
    /// ends within its own warm-up ([`World::ended_in_ramp`]).
    before_run_window: Vec<ThreadCounts>,
}

/// A thread's counters that its job's figures are made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ThreadCounts {
    /// CPU time.
    pub cpu_ns: u64,
    /// The part of `cpu_ns` spent in user mode (see `metrics.rs`).
    pub usr_ns: u64,
    /// Times it got a core from another thread or from idle.
    pub ctx_switches: u64,
    /// Times it was woken from a block (by a completion's IRQ handler or
    /// a timer).
    pub wakeups: u64,
}

impl ThreadCounts {
    /// What was counted since `from`, a snapshot of the same counters.
    fn since(self, from: ThreadCounts) -> ThreadCounts {
        ThreadCounts {
            cpu_ns: self.cpu_ns - from.cpu_ns,
            usr_ns: self.usr_ns - from.usr_ns,
            ctx_switches: self.ctx_switches - from.ctx_switches,
            wakeups: self.wakeups - from.wakeups,
        }
    }

    /// These counts followed by `later`'s.
    fn then(self, later: ThreadCounts) -> ThreadCounts {
        ThreadCounts {
            cpu_ns: self.cpu_ns + later.cpu_ns,
            usr_ns: self.usr_ns + later.usr_ns,
            ctx_switches: self.ctx_switches + later.ctx_switches,
            wakeups: self.wakeups + later.wakeups,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct JobClock {
    /// When the job's threads were released (its group's start plus
    /// `startdelay`).
    start: Option<Nanos>,
    /// When its last thread exited.
    end: Option<Nanos>,
    /// Threads not exited yet.
    live: u32,
    /// Its `runtime` ends within its warm-up: it never measures, and
    /// reports its whole life, wherever its last request comes back.
    runtime_in_warmup: bool,
}

impl Groups {
    /// Every job's clock, before the run.
    pub(crate) fn new(sc: &cint_scenario::Scenario) -> Groups {
        let order = cint_scenario::staging::group_order(sc);
        let staged = cint_scenario::staging::staged(sc, &order);
        Groups {
            order,
            current: 0,
            jobs: sc
                .jobs
                .iter()
                .map(|j| JobClock {
                    live: j.numjobs * (1 + super::offload::offload_workers(j)),
                    runtime_in_warmup: j.runtime.is_some_and(|r| r <= sc.warmup),
                    ..JobClock::default()
                })
                .collect(),
            staged,
            halted: false,
            counted_from: Vec::new(),
            before_run_window: Vec::new(),
        }
    }

    /// Whether job `j` has started.
    pub(crate) fn started(&self, j: usize) -> bool {
        self.jobs[j].start.is_some()
    }

    /// When job `j` started (0 before it has).
    pub(crate) fn start_of(&self, j: usize) -> Nanos {
        self.jobs[j].start.unwrap_or(0)
    }

    /// Whether every thread of job `j` has exited.
    pub(crate) fn ended(&self, j: usize) -> bool {
        self.jobs[j].end.is_some()
    }
}

impl World<'_> {
    /// Releases the first group at time 0: its jobs without a start delay
    /// run at once, the others and every later group's are held back.
    pub(crate) fn stage_jobs(&mut self) {
        let first = self.groups.order.first().copied().unwrap_or(0);
        for t in 0..self.threads.len() {
            let j = self.threads[t].job as usize;
            // Kernel threads (the flusher) belong to no job: they start
            // with the run.
            let Some(sched) = self.sc.jobs.get(j).map(|job| job.schedule) else {
                continue;
            };
            if sched.group == first && sched.startdelay == 0 {
                self.groups.jobs[j].start = Some(0);
                self.arm_cpu_job_end(t);
                continue;
            }
            let core = self.threads[t].core as usize;
            self.cores[core].rq.retain(|&x| x as usize != t);
            let th = &mut self.threads[t];
            th.run = crate::world::RunState::Blocked;
            th.wait = Wait::Sleep;
        }
        self.start_group(first, 0, true);
    }

    /// Starts the jobs of `group` at `now` (each after its start delay);
    /// `delayed_only`: those without a delay already run.
    fn start_group(&mut self, group: u32, now: Nanos, delayed_only: bool) {
        for j in 0..self.sc.jobs.len() {
            let job = &self.sc.jobs[j];
            let delay = job.schedule.startdelay;
            if job.schedule.group != group || (delayed_only && delay == 0) {
                continue;
            }
            let start = now.saturating_add(delay);
            self.groups.jobs[j].start = Some(start);
            if self.sc.warmup > 0 {
                self.events.schedule(
                    start.saturating_add(self.sc.warmup),
                    Event::JobWindowOpens { job: j as u32 },
                );
            }
            let stop_at = job.runtime.map(|r| start.saturating_add(r));
            for t in 0..self.threads.len() {
                if self.threads[t].job as usize != j {
                    continue;
                }
                self.threads[t].prog.stop_at = stop_at;
                self.schedule_thread_timer(t, start);
                self.arm_cpu_job_end(t);
            }
        }
    }

    /// When job `j` started, if it has.
    pub(crate) fn job_start(&self, j: usize) -> Option<Nanos> {
        self.groups.jobs[j].start
    }

    /// Job `j`, started after the run, ends its own warm-up: its threads'
    /// CPU time, switches and wake-ups count from here
    /// ([`World::counts_in_window`]), as the run's threads' count from the
    /// run's (`on_warmup_end`), so that its figures are over the window
    /// its rates are over. They counted from
    /// the run's window until 2026-11-29: a busy loop of a later group
    /// showed 167% of its core over a 3 ms window after a 2 ms warm-up.
    pub(crate) fn on_job_window_opens(&mut self, j: usize) {
        let n = self.threads.len();
        self.groups.counted_from.resize(n, None);
        for t in 0..n {
            if self.threads[t].job as usize != j {
                continue;
            }
            let c = self.threads[t].core as usize;
            self.charge(c);
            self.groups.counted_from[t] = Some(self.threads[t].counts);
        }
    }

    /// The run's window opens and resets every thread's counters: keeps
    /// what they were, for the jobs that end within their own warm-up.
    pub(crate) fn keep_counts_before_run_window(&mut self) {
        self.groups.before_run_window = self.threads.iter().map(|t| t.counts).collect();
    }

    /// Whether job `j` ended before its own warm-up did, or its `runtime`
    /// ends within it (its last request may come back after). fio then never
    /// reset its counts (`ramp_time_over` resets them only while the job
    /// runs), so its figures are its whole life's, without latency
    /// samples (see [`cint_report::WarmupTally`]).
    pub(crate) fn ended_in_ramp(&self, j: usize) -> bool {
        let clock = self.groups.jobs[j];
        match (clock.start, clock.end) {
            (Some(start), Some(end)) => {
                clock.runtime_in_warmup || end < start.saturating_add(self.sc.warmup)
            }
            _ => false,
        }
    }

    /// Thread `t`'s counters over its job's figures: its job's window,
    /// or its whole life where its job ended within its warm-up.
    pub(crate) fn counts_of_job(&self, t: usize) -> ThreadCounts {
        if self.ended_in_ramp(self.threads[t].job as usize) {
            let before = self.groups.before_run_window.get(t).copied();
            return before.unwrap_or_default().then(self.threads[t].counts);
        }
        self.counts_in_window(t)
    }

    /// Thread `t`'s counters over its job's window: since the run's
    /// window opened, less what it counted before its job's own opened.
    fn counts_in_window(&self, t: usize) -> ThreadCounts {
        let th = &self.threads[t];
        let from = self
            .groups
            .counted_from
            .get(t)
            .copied()
            .flatten()
            .unwrap_or_default();
        th.counts.since(from)
    }

    /// A CPU-bound thread's end at its `runtime`, an event: it has no loop
    /// top that would look at the clock (fio's, or a busy loop's, looks
    /// at every turn).
    fn arm_cpu_job_end(&mut self, t: usize) {
        let p = self.threads[t].prog;
        if let (true, Some(at)) = (p.burns, p.stop_at) {
            self.events
                .schedule(at, Event::CpuJobEnd { thread: t as u32 });
        }
    }

    /// A CPU-bound thread's `runtime` is over: running, it exits now (its
    /// segment ends, and its core dispatches, which finds it past its
    /// stop); waiting for its core, it exits when it gets it
    /// ([`World::burner_stops`]).
    pub(crate) fn on_cpu_job_end(&mut self, t: usize) {
        let c = self.threads[t].core as usize;
        if self.cores[c].current == Some(t as u32) {
            self.interrupt_thread_segment(c);
            self.dispatch(c);
        }
    }

    /// Whether thread `t`, a CPU-bound job's now on its core, is past its
    /// `runtime` and exits instead of burning on.
    pub(crate) fn burner_stops(&mut self, t: usize) -> bool {
        let p = self.threads[t].prog;
        if !p.burns || p.stop_at.is_none_or(|at| self.now() < at) {
            return false;
        }
        self.exit_thread(t);
        true
    }

    /// Tells job `j`'s threads to stop: each exits at the top of its
    /// loop, once the call it is in returns. A running job's thread
    /// asleep on a timer (think time, rate limit, flow control) is woken
    /// now, as fio's sleeps check for termination; one still waiting for
    /// its start exits when it starts.
    pub(crate) fn stop_job(&mut self, j: usize, now: Nanos) {
        let running = self.groups.jobs[j].start.is_some_and(|s| s <= now);
        for t in 0..self.threads.len() {
            let th = &mut self.threads[t];
            // A CPU-bound job has no loop to leave: it runs on.
            if th.job as usize != j || th.prog.burns {
                continue;
            }
            th.prog.stop_at = Some(th.prog.stop_at.map_or(now, |s| s.min(now)));
            let asleep = matches!(th.wait, Wait::Sleep | Wait::FioSleep | Wait::OffloadFree);
            if running && th.run == crate::world::RunState::Blocked && asleep {
                self.schedule_thread_timer(t, now);
            }
        }
    }

    /// Thread `t` is done (its `runtime`, `number_ios`, steady state or
    /// another job's `exitall`): it exits, and when its group has no
    /// thread left the next group starts.
    pub(crate) fn exit_thread(&mut self, t: usize) {
        self.block(t, Wait::Exited);
        self.flow_leave(t);
        if self.threads[t].prog.sqpoll {
            self.sq_submitter_exited(t);
        }
        let now = self.now();
        let j = self.threads[t].job as usize;
        let clock = &mut self.groups.jobs[j];
        clock.live = clock.live.saturating_sub(1);
        if clock.live > 0 {
            return;
        }
        clock.end = Some(now);
        if let Some(scope) = self.shape(t).exitall {
            self.exit_all(j, scope, now);
        }
        // fio's run ends with its last job (`run_to_end`).
        if self.sc.run_to_end && self.groups.jobs.iter().all(|c| c.end.is_some()) {
            self.end = self.end.min(now);
        }
        let Some(&group) = self.groups.order.get(self.groups.current) else {
            return;
        };
        let done = self
            .sc
            .jobs
            .iter()
            .zip(&self.groups.jobs)
            .all(|(job, c)| job.schedule.group != group || c.live == 0);
        if done && !self.groups.halted {
            self.groups.current += 1;
            if let Some(&next) = self.groups.order.get(self.groups.current) {
                self.start_group(next, now, false);
            }
        }
    }

    /// fio's `exitall`: job `j` ended, so the running jobs of its group
    /// (or of every group, and no later group starts) end too. A cpu job
    /// has no loop to leave: it runs on.
    fn exit_all(&mut self, j: usize, scope: cint_scenario::ExitScope, now: Nanos) {
        let group = self.sc.jobs[j].schedule.group;
        if scope == cint_scenario::ExitScope::All {
            self.groups.halted = true;
        }
        for k in 0..self.sc.jobs.len() {
            let same = self.sc.jobs[k].schedule.group == group;
            if k != j && (same || scope == cint_scenario::ExitScope::All) {
                self.stop_job(k, now);
            }
        }
    }

    /// Whether job `j`'s completions at `now` count: its own warm-up
    /// (the scenario's, from the job's start) is over.
    pub(crate) fn job_measuring(&self, j: usize, now: Nanos) -> bool {
        // An application's or a guest kernel's thread has no job here.
        match self.groups.jobs.get(j) {
            Some(&JobClock {
                start: Some(start),
                runtime_in_warmup: false,
                ..
            }) => now >= start.saturating_add(self.sc.warmup),
            _ => false,
        }
    }

    /// Job `j`'s measured window: from the later of the run's window and
    /// its own start plus warm-up, to its end or now; its whole life
    /// where it ended within its warm-up ([`World::ended_in_ramp`]).
    pub(crate) fn job_window(&self, j: usize) -> (Nanos, Nanos) {
        let now = self.now();
        let clock = self.groups.jobs[j];
        let Some(start) = clock.start else {
            return (now, now);
        };
        if let (true, Some(end)) = (self.ended_in_ramp(j), clock.end) {
            return (start, end);
        }
        let from = self
            .window_start
            .max(start.saturating_add(self.sc.warmup))
            .min(now);
        let to = clock.end.unwrap_or(now).clamp(from, now);
        (from, to)
    }

    /// One note per group (or delayed job) saying when it ran, so each
    /// job's figures can be read against its own window.
    pub(crate) fn group_notes(&self, strategy: &str) -> Vec<String> {
        let mut notes = Vec::new();
        // A job that ended within its warm-up (number_ios, io_size, a
        // short runtime, steady state, exitall) reports its whole life; one
        // that ended with nothing completed in its window measured
        // nothing: say so.
        for (j, job) in self.sc.jobs.iter().enumerate() {
            let (Some(end), Some(start)) = (self.groups.jobs[j].end, self.groups.jobs[j].start)
            else {
                continue;
            };
            let io = matches!(job.work, cint_scenario::Work::Io(_));
            if self.ended_in_ramp(j) {
                notes.push(cint_scenario::staging::ended_in_warmup_note(
                    strategy,
                    &job.name,
                    (start, end, start.saturating_add(self.sc.warmup)),
                    io.then(|| self.jobs[j].over_ramp().ios),
                    self.measuring.then_some(self.window_start),
                ));
            } else if io && self.jobs[j].ios == 0 {
                notes.push(format!(
                    "strategy '{strategy}': job '{}' started at {} and ended at {} with no \
                     request completed in its measured window, which began at {} (its runtime, \
                     number_ios, io_size, steady state or another job's exitall ended it)",
                    job.name,
                    ms(start),
                    ms(end),
                    ms(self.window_start.max(start.saturating_add(self.sc.warmup)))
                ));
            }
        }
        if !self.groups.staged {
            return notes;
        }
        for &g in &self.groups.order {
            let spans: Vec<cint_scenario::staging::JobSpan<'_>> = self
                .sc
                .jobs
                .iter()
                .enumerate()
                .filter(|(_, job)| job.schedule.group == g)
                .map(|(j, job)| {
                    let (from, to) = self.job_window(j);
                    cint_scenario::staging::JobSpan {
                        name: &job.name,
                        ran: self.groups.jobs[j].start.map(|s| (s, from, to)),
                    }
                })
                .collect();
            notes.push(cint_scenario::staging::group_note(strategy, g, &spans));
        }
        if self.groups.order.len() > 1 {
            notes.push(cint_scenario::staging::groups_in_turn_note(strategy));
        }
        notes
    }
}
