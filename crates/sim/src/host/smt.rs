//! Simultaneous multithreading: the hardware threads of one physical core
//! share its execution resources, so CPU work on a logical CPU runs slower
//! while a sibling executes too (docs/ENERGY.md, "SMT"). A sibling running
//! a thread or a handler stretches the work by `2 / (1 + gain)`; one
//! spinning in a poll loop (or in cpuidle's polling state) issues only
//! between its `PAUSE`s and stretches it by that fraction of the busy
//! stretch; an idle sibling costs nothing.
//!
//! A segment's work is kept as its end instant and its stretch: when a
//! sibling's activity changes, the work left (the time to the end over the
//! old stretch) is laid out again at the new stretch and the end event is
//! replaced. Stretches are whole thousandths so that every step is integer
//! arithmetic and runs are deterministic.

use cint_policy::Nanos;
use cint_scenario::HostProfile;

use crate::world::{Activity, World};
use crate::SimError;

/// A stretch of one: the work runs at full speed.
pub(crate) const UNSTRETCHED: u32 = 1000;

/// What a logical CPU does, as its siblings feel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Activity3 {
    Idle,
    Spin,
    Busy,
}

/// The SMT state of a host with more than one thread per core.
#[derive(Debug)]
pub(crate) struct SmtModel {
    /// Physical cores: CPU `c` is on core `c % physical`.
    physical: usize,
    /// Per CPU, its physical core (`c % physical`, as a table: this is
    /// read at every segment a CPU starts, and a remainder divides).
    core_of: Vec<usize>,
    threads_per_core: usize,
    /// Stretch of work beside a busy sibling and a spinning one, in
    /// thousandths.
    busy: u32,
    spin: u32,
    /// Per logical CPU, what it does as last noted.
    act: Vec<Activity3>,
}

impl SmtModel {
    /// The model for `host`'s logical CPUs, or `None` with one thread per
    /// core (nothing is shared). The poll loop's issuing part is
    /// `host.poll_iteration`, beside which each `PAUSE` leaves the core.
    /// The scenario loader refuses CPUs that make no whole cores; a
    /// profile built in code with them is refused here rather than run.
    pub(crate) fn new(host: &HostProfile) -> Result<Option<Self>, SimError> {
        let Some(smt) = host.smt.as_ref() else {
            return Ok(None);
        };
        let cpus = host.cores.max(1) as usize;
        let poll_iteration = host.poll_iteration.0;
        let tpc = smt.threads_per_core.max(1) as usize;
        if tpc < 2 {
            return Ok(None);
        }
        if cpus % tpc != 0 {
            return Err(SimError::input(format!(
                "host.smt.threads_per_core = {tpc} does not divide host.cores = {cpus}"
            )));
        }
        let busy = (2000.0 / (1.0 + smt.gain)).round() as u32;
        let issuing = poll_iteration as f64 / (poll_iteration + smt.pause.0).max(1) as f64;
        let spin = UNSTRETCHED + (f64::from(busy - UNSTRETCHED) * issuing).round() as u32;
        Ok(Some(SmtModel {
            physical: cpus / tpc,
            core_of: (0..cpus as u32)
                .map(|c| host.physical_core_of(c) as usize)
                .collect(),
            threads_per_core: tpc,
            busy,
            spin,
            act: vec![Activity3::Idle; cpus],
        }))
    }

    /// The other hardware threads of CPU `c`'s core.
    pub(crate) fn siblings(&self, c: usize) -> impl Iterator<Item = usize> {
        siblings(c, self.core_of[c], self.physical, self.threads_per_core)
    }

    /// The stretch of work on CPU `c` now, from its most active sibling.
    pub(crate) fn stretch(&self, c: usize) -> u32 {
        match self.siblings(c).map(|s| self.act[s]).max() {
            Some(Activity3::Busy) => self.busy,
            Some(Activity3::Spin) => self.spin,
            _ => UNSTRETCHED,
        }
    }
}

/// The logical CPUs of physical core `core`, as Linux numbers them: `core`,
/// then `core + physical`, and so on, `threads` in all.
#[inline]
pub(crate) fn threads_of(
    core: usize,
    physical: usize,
    threads: usize,
) -> impl Iterator<Item = usize> {
    (0..threads).map(move |k| core + k * physical)
}

/// The other hardware threads of CPU `c`'s core.
fn siblings(c: usize, core: usize, physical: usize, threads: usize) -> impl Iterator<Item = usize> {
    threads_of(core, physical, threads).filter(move |&s| s != c)
}

/// Wall time of `work` at `stretch`, rounded up so that no work is lost.
pub(crate) fn wall(work: Nanos, stretch: u32) -> Nanos {
    if stretch == UNSTRETCHED {
        return work;
    }
    (u128::from(work) * u128::from(stretch)).div_ceil(u128::from(UNSTRETCHED)) as Nanos
}

/// Work done in `wall_ns` at `stretch`, rounded down.
pub(crate) fn work(wall_ns: Nanos, stretch: u32) -> Nanos {
    if stretch == UNSTRETCHED {
        return wall_ns;
    }
    (u128::from(wall_ns) * u128::from(UNSTRETCHED) / u128::from(stretch)) as Nanos
}

impl World<'_> {
    /// The stretch a segment starting now on CPU `c` runs at.
    #[inline]
    pub(crate) fn smt_stretch(&self, c: usize) -> u32 {
        self.smt.as_ref().map_or(UNSTRETCHED, |m| m.stretch(c))
    }

    /// What CPU `c` does now, as its siblings feel it.
    fn smt_activity(&self, c: usize) -> Activity3 {
        let core = &self.cores[c];
        match core.seg {
            Some(seg) if seg.irq => Activity3::Busy,
            Some(_) => match core.current.map(|t| self.threads[t as usize].act) {
                Some(Activity::Spin { .. }) => Activity3::Spin,
                _ => Activity3::Busy,
            },
            None if self.power_polling(c) => Activity3::Spin,
            None => Activity3::Idle,
        }
    }

    /// CPU `c` may have changed what it does: its siblings' running work
    /// is laid out again at their new stretch.
    pub(crate) fn smt_note(&mut self, c: usize) {
        let Some(m) = self.smt.as_ref() else {
            return;
        };
        let now_act = self.smt_activity(c);
        if m.act[c] == now_act {
            return;
        }
        // The siblings by index, without holding the model across the
        // re-lay (this runs at every change of what a CPU does).
        let (core, physical, threads) = (m.core_of[c], m.physical, m.threads_per_core);
        if let Some(m) = self.smt.as_mut() {
            m.act[c] = now_act;
        }
        for s in siblings(c, core, physical, threads) {
            self.smt_restretch(s);
        }
    }

    /// Re-lays the work left of CPU `s`'s segment at its current stretch.
    fn smt_restretch(&mut self, s: usize) {
        let Some(seg) = self.cores[s].seg else {
            return;
        };
        let stretch = self.smt_stretch(s);
        if seg.stretch == stretch {
            return;
        }
        self.charge(s);
        let now = self.now();
        let core = &mut self.cores[s];
        let Some(seg) = core.seg.as_mut() else {
            return;
        };
        let old = std::mem::replace(&mut seg.stretch, stretch);
        if let Some(end) = seg.end {
            let left = work(end.saturating_sub(now), old);
            let end = now + wall(left, stretch);
            seg.end = Some(end);
            self.arm_core_done(s, end);
        }
    }
}
