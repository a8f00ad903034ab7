//! fio's flow control (`flow`, `flow_id`, `flow_sleep`; fio's flow.c):
//! jobs sharing a flow id keep the passes of their loops in proportion to
//! their weights. At the top of each pass a thread compares its share of
//! the flow's counter with its share of the flow's weight; ahead of its
//! share it does not issue: it reaps what it has in flight and sleeps
//! `flow_sleep`, or, without a sleep, spins one poll iteration and checks
//! again. A thread's weight counts from the run's setup to its exit, as
//! fio adds every job's weight when it reads the job file (init.c
//! `add_job`, `flow_init_job`) and takes it out when it reaps the
//! thread: a job of a later group or with a start delay weighs on the
//! flow before it runs (fio 3.33: a job of weight 1 issues one request
//! in a second when a stonewalled job of weight 8 shares its flow).
//!
//! A pass of fio's loop (backend.c `do_io`) issues one request, and within
//! it sleeps for the rate (io_u.c `rate_ddir`) and reaps a full queue: one
//! tick a request. The model's loop comes back to its top for each of
//! those, so only a top from which a request may go counts: not while the
//! pass that counted has not issued yet, nor while the queue is full.

use cint_scenario::{Scenario, Work};

use crate::world::{Cont, World};

/// The flows of a run and each thread's place in one.
#[derive(Debug)]
pub(crate) struct Flows {
    /// Per flow: (id, counter, total weight of the threads that have not
    /// exited). The counter starts at 1, as fio's does.
    flows: Vec<(u32, u64, u64)>,
    /// Per thread: its flow's index, or none (none again once it has
    /// left it, exiting).
    of_thread: Vec<Option<usize>>,
    /// Per thread: iterations it counted.
    counted: Vec<u64>,
    /// Per thread: the requests it had issued when its last pass counted,
    /// until that pass issues.
    open_pass: Vec<Option<u64>>,
}

impl Flows {
    /// The flows of `sc`; `jobs`: each thread's job.
    pub(crate) fn new(sc: &Scenario, jobs: &[u32]) -> Flows {
        let mut flows: Vec<(u32, u64, u64)> = Vec::new();
        let of_thread: Vec<Option<usize>> = jobs
            .iter()
            .map(|&j| match sc.jobs.get(j as usize).map(|job| &job.work) {
                Some(Work::Io(io)) if io.shape.flow > 0 => {
                    let id = io.shape.flow_id;
                    let weight = u64::from(io.shape.flow);
                    Some(match flows.iter().position(|f| f.0 == id) {
                        Some(i) => {
                            flows[i].2 += weight;
                            i
                        }
                        None => {
                            flows.push((id, 1, weight));
                            flows.len() - 1
                        }
                    })
                }
                _ => None,
            })
            .collect();
        Flows {
            flows,
            of_thread,
            counted: vec![0; jobs.len()],
            open_pass: vec![None; jobs.len()],
        }
    }
}

impl World<'_> {
    /// Thread `t` exits: its weight and its count leave its flow.
    pub(crate) fn flow_leave(&mut self, t: usize) {
        let w = u64::from(self.shape(t).flow);
        let f = &mut self.flows;
        if let Some(i) = f.of_thread[t].take() {
            let flow = &mut f.flows[i];
            flow.2 = flow.2.saturating_sub(w);
            flow.1 = flow.1.saturating_sub(f.counted[t]).max(1);
            f.counted[t] = 0;
        }
    }

    /// Whether thread `t` is ahead of its flow's share now, so that its
    /// loop may not issue (for the notes on a job that completed nothing).
    pub(crate) fn flow_held(&self, t: usize) -> bool {
        let Some(i) = self.flows.of_thread[t] else {
            return false;
        };
        let (_, counter, total) = self.flows.flows[i];
        cint_scenario::shape::flow_ahead(self.flows.counted[t], self.shape(t).flow, counter, total)
    }

    /// One iteration of thread `t`'s loop under flow control: true when
    /// the thread is ahead of its share and has begun waiting.
    pub(crate) fn flow_holds(&mut self, t: usize) -> bool {
        let Some(i) = self.flows.of_thread[t] else {
            return false;
        };
        let issued = self.shaping_issued(t);
        let th = &self.threads[t];
        let full = th.free_slots.is_empty() && th.in_flight > 0;
        if full || self.flows.open_pass[t] == Some(issued) {
            return false;
        }
        if !self.flow_held(t) {
            self.flows.flows[i].1 += 1;
            self.flows.counted[t] += 1;
            self.flows.open_pass[t] = Some(issued);
            return false;
        }
        let shape = self.shape(t);
        if shape.flow_sleep > 0 {
            if self.quiesce(t) {
                return true;
            }
            let c = self.costs;
            self.set_burst(t, c.syscall + c.timer_setup, Cont::Nap(shape.flow_sleep));
        } else {
            // At least a nanosecond: time must pass for the others to move.
            self.set_burst(t, self.costs.poll_iteration.max(1), Cont::Issue);
        }
        true
    }
}
