//! Each simulated thread's random offsets
//! ([`cint_scenario::offsets::RandomOffsets`]), drawn from the thread's
//! own stream, where they decide something.

use cint_scenario::offsets::RandomOffsets;
use cint_scenario::Work;

use crate::engine::{stream_rng, OFFSET_STREAM_BASE};

/// Every thread's random offsets, where they decide something (boxed: a
/// thread without is one word to look at).
#[derive(Debug, Default)]
pub(crate) struct Offsets(Vec<Option<Box<RandomOffsets>>>);

impl Offsets {
    /// For threads of `thread_jobs` (each thread's job index, in thread
    /// order) of scenario `sc`.
    pub(crate) fn new(sc: &cint_scenario::Scenario, thread_jobs: &[u32]) -> Offsets {
        Offsets(
            thread_jobs
                .iter()
                .enumerate()
                .map(|(t, &j)| match sc.jobs.get(j as usize).map(|j| &j.work) {
                    Some(Work::Io(io)) => RandomOffsets::new(
                        io,
                        io.size,
                        stream_rng(sc.seed, OFFSET_STREAM_BASE | t as u64),
                    )
                    .map(Box::new),
                    _ => None,
                })
                .collect(),
        )
    }

    /// Thread `t`'s offsets, when its job draws them.
    pub(crate) fn of(&mut self, t: usize) -> Option<&mut RandomOffsets> {
        self.0.get_mut(t).and_then(Option::as_deref_mut)
    }

    /// Where thread `t`'s last request landed, when its job draws its
    /// offsets.
    pub(crate) fn last(&self, t: usize) -> Option<u64> {
        self.0
            .get(t)
            .and_then(Option::as_deref)
            .map(RandomOffsets::last)
    }
}
