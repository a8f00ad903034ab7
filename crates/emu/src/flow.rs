//! fio's flow control (`flow`, `flow_id`, `flow_sleep`; fio's flow.c) on
//! the emulator's threads: the threads of the jobs sharing a flow id keep
//! the passes of their loops in proportion to their weights. At each pass
//! from which a request may go, a thread compares its share of the flow's
//! counter with its share of the flow's weight
//! (`cint_scenario::shape::flow_ahead`, the simulator's rule); ahead, it
//! does not issue: it reaps what it has in flight and sleeps `flow_sleep`,
//! or, without a sleep, looks again. A thread's weight counts from the
//! run's setup to its exit, as fio's does (init.c `add_job`): before
//! 2026-11-29 it counted from the thread's start, and a thread that the
//! scheduler let run first issued alone until the others had started
//! (3 ms, a fifth of a test's requests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cint_policy::Nanos;
use cint_scenario::{Scenario, Work};

/// One flow's counter (passes counted, starting at 1 as fio's does) and
/// the weights of its threads that have not exited.
#[derive(Debug)]
pub(crate) struct Flow {
    counter: AtomicU64,
    total: AtomicU64,
}

/// A thread's place in its flow.
#[derive(Debug)]
pub(crate) struct FlowPlace {
    flow: Arc<Flow>,
    weight: u32,
    /// `flow_sleep`.
    pub sleep: Nanos,
    /// Passes this thread counted.
    counted: u64,
}

/// Each job's place in a flow (`None`: not in one); the threads of jobs
/// with the same `flow_id` share its counter.
pub(crate) fn flows_of(scenario: &Scenario) -> Vec<Option<(Arc<Flow>, u32, Nanos)>> {
    let mut flows: Vec<(u32, Arc<Flow>)> = Vec::new();
    scenario
        .jobs
        .iter()
        .map(|job| match &job.work {
            Work::Io(io) if io.shape.flow > 0 => {
                let id = io.shape.flow_id;
                let flow = match flows.iter().find(|(f, _)| *f == id) {
                    Some((_, flow)) => Arc::clone(flow),
                    None => {
                        let flow = Arc::new(Flow {
                            counter: AtomicU64::new(1),
                            total: AtomicU64::new(0),
                        });
                        flows.push((id, Arc::clone(&flow)));
                        flow
                    }
                };
                // Every thread's weight, from the run's setup.
                flow.total.fetch_add(
                    u64::from(io.shape.flow) * u64::from(job.numjobs),
                    Ordering::SeqCst,
                );
                Some((flow, io.shape.flow, io.shape.flow_sleep))
            }
            _ => None,
        })
        .collect()
}

impl FlowPlace {
    /// A thread's place in `flow` with `weight` (already in the flow's
    /// total, [`flows_of`]), sleeping `sleep` when ahead.
    pub(crate) fn new((flow, weight, sleep): (Arc<Flow>, u32, Nanos)) -> FlowPlace {
        FlowPlace {
            flow,
            weight,
            sleep,
            counted: 0,
        }
    }

    /// The thread exits: its weight and its count leave the flow.
    pub(crate) fn leave(self) {
        self.flow
            .total
            .fetch_sub(u64::from(self.weight), Ordering::SeqCst);
        let counted = self.counted;
        // Never below fio's starting 1; the closure always gives a value.
        let _ = self
            .flow
            .counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                Some(c.saturating_sub(counted).max(1))
            });
    }

    /// One pass from which a request may go: true when the thread is
    /// ahead of its share and must hold; otherwise the pass counts.
    pub(crate) fn holds(&mut self) -> bool {
        let counter = self.flow.counter.load(Ordering::SeqCst);
        let total = self.flow.total.load(Ordering::SeqCst);
        if cint_scenario::shape::flow_ahead(self.counted, self.weight, counter, total) {
            return true;
        }
        self.flow.counter.fetch_add(1, Ordering::SeqCst);
        self.counted += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(flow: &Arc<Flow>, weight: u32) -> FlowPlace {
        FlowPlace::new((Arc::clone(flow), weight, 0))
    }

    #[test]
    fn two_threads_keep_their_passes_in_proportion_to_their_weights() {
        let flow = Arc::new(Flow {
            counter: AtomicU64::new(1),
            total: AtomicU64::new(9),
        });
        let (mut heavy, mut light) = (place(&flow, 8), place(&flow, 1));
        // Taking turns to try, each pass counting where it does not hold:
        // the light thread passes about one time in nine.
        let (mut h, mut l) = (0u64, 0u64);
        for _ in 0..9_000 {
            h += u64::from(!heavy.holds());
            l += u64::from(!light.holds());
        }
        let share = l as f64 / (h + l) as f64;
        assert!((share - 1.0 / 9.0).abs() < 0.01, "{l} of {} passes", h + l);
        // Leaving takes its weight and its count out.
        light.leave();
        assert_eq!(flow.total.load(Ordering::SeqCst), 8);
        assert_eq!(flow.counter.load(Ordering::SeqCst), 1 + h);
    }
}
