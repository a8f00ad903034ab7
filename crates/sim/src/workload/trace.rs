//! Block-trace replay (docs/TRACES.md): a trace job's thread issues its
//! stream's requests, in trace order, with their sizes and directions,
//! through the same loop as a fio-like thread (its engine's calls, hints
//! by docs/ALGORITHMS.md section 5, its depth).
//!
//! Open loop: request i of a thread is released at the job's start plus
//! its trace time from the trace's first request, divided by the speed.
//! Each release instant is computed from the trace's own time in whole
//! nanoseconds, never from the previous request's issue, so the replay
//! cannot drift (fio's replay sleeps for each gap after the previous
//! issue and so accumulates every overshoot: fio issues #1537 and #772).
//! A thread takes the requests released by now, as many as its free
//! slots allow, and sleeps on a timer until the next release, as a
//! rate-limited fio thread does; a request whose thread was busy or whose
//! slots were all in use at its release waits, and its issue lag shows
//! it. Closed loop: each thread
//! keeps its depth of requests in flight in trace order.
//!
//! The result reports, per job, the trace's own latencies of the requests
//! measured (where the trace has them) beside the model's, and in open
//! loop each request's issue lag after its release.

use std::sync::Arc;

use cint_policy::Nanos;
use cint_report::{TraceMeasure, TraceReplay};
use cint_scenario::trace::{TraceJob, TraceMode, TraceThread};
use cint_scenario::Scenario;

use crate::world::{Request, World};

/// A thread's place in its stream.
#[derive(Debug)]
struct Cursor {
    threads: Arc<Vec<TraceThread>>,
    /// Its stream among `threads`.
    stream: usize,
    /// The next request to issue.
    next: usize,
    open: bool,
}

impl Cursor {
    fn ios(&self) -> &[cint_scenario::trace::TraceIo] {
        &self.threads[self.stream].ios
    }
}

/// Every thread's replay state; empty for a run without trace jobs.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// Per thread: its cursor, for a trace job's thread.
    cursors: Vec<Option<Cursor>>,
    /// Per request slot: the index in its thread's stream of the request
    /// it carries.
    slots: Vec<u32>,
    /// Per job.
    jobs: Vec<TraceMeasure>,
}

impl Replay {
    /// The replay of `sc`'s trace jobs; `threads`: each thread's job.
    pub(crate) fn new(sc: &Scenario, threads: &[u32], slots: usize) -> Replay {
        if !sc.jobs.iter().any(|j| trace_of(j).is_some()) {
            return Replay::default();
        }
        let mut seen = vec![0usize; sc.jobs.len()];
        let cursors = threads
            .iter()
            .map(|&j| {
                // A kernel thread (the page cache's flusher) is no job's.
                let j = j as usize;
                if j >= sc.jobs.len() {
                    return None;
                }
                let n = seen[j];
                seen[j] += 1;
                trace_of(&sc.jobs[j]).map(|tr| Cursor {
                    threads: Arc::clone(&tr.threads),
                    stream: n,
                    next: 0,
                    open: matches!(tr.mode, TraceMode::Open { .. }),
                })
            })
            .collect();
        Replay {
            cursors,
            slots: vec![0; slots],
            jobs: sc.jobs.iter().map(|_| TraceMeasure::default()).collect(),
        }
    }
}

fn trace_of(job: &cint_scenario::Job) -> Option<&TraceJob> {
    job.io()?.shape.trace.as_ref()
}

impl World<'_> {
    /// Requests thread `t` has left to issue, for a trace job's thread.
    pub(crate) fn trace_left(&self, t: usize) -> Option<u32> {
        let c = self.replay.cursors.get(t)?.as_ref()?;
        Some((c.ios().len() - c.next).min(u32::MAX as usize) as u32)
    }

    /// The release instant of thread `t`'s next request (open loop), or
    /// `None` when it has issued its stream.
    fn release_of_next(&self, t: usize) -> Option<Nanos> {
        let c = self.replay.cursors[t].as_ref()?;
        let io = c.ios().get(c.next)?;
        let start = self.groups.start_of(self.threads[t].job as usize);
        Some(start.saturating_add(io.at))
    }

    /// Open loop: sets the thread's next issue instant to its next
    /// release; true while one is ahead (the thread is paced by it).
    pub(crate) fn trace_paced(&mut self, t: usize) -> bool {
        if !self.replay.cursors[t].as_ref().is_some_and(|c| c.open) {
            return false;
        }
        match self.release_of_next(t) {
            Some(at) => {
                self.threads[t].next_issue_at = at;
                true
            }
            None => false,
        }
    }

    /// Open loop: how many of thread `t`'s requests are released by `now`.
    pub(crate) fn trace_tokens(&self, t: usize, now: Nanos) -> u32 {
        let Some(c) = self.replay.cursors[t].as_ref() else {
            return 0;
        };
        let start = self.groups.start_of(self.threads[t].job as usize);
        let rest = &c.ios()[c.next..];
        // Releases are in time order per stream (checked at load).
        let due = rest.partition_point(|io| start.saturating_add(io.at) <= now);
        due.min(u32::MAX as usize) as u32
    }

    /// Takes thread `t`'s next request into slot `r`: its direction and
    /// size.
    pub(crate) fn trace_take(&mut self, t: usize, r: u32) -> (bool, u64) {
        let job = self.threads[t].job as usize;
        let Some(c) = self.replay.cursors[t].as_mut() else {
            return (false, 0);
        };
        let i = c.next;
        let Some(&io) = c.ios().get(i) else {
            self.check.fail(format!(
                "thread {t} issued past the end of its trace stream"
            ));
            return (false, 0);
        };
        c.next += 1;
        self.replay.slots[r as usize] = i as u32;
        self.replay.jobs[job].issued += 1;
        (io.write, io.bytes)
    }

    /// A trace request is in the application's hand: its trace latency
    /// and issue lag join the job's measurements (measured window only).
    pub(crate) fn trace_done(&mut self, t: usize, r: u32, done: &Request) {
        let Some(c) = self.replay.cursors[t].as_ref() else {
            return;
        };
        let i = self.replay.slots[r as usize];
        let Some(&io) = c.ios().get(i as usize) else {
            return;
        };
        let open = c.open;
        let job = self.threads[t].job as usize;
        let start = self.groups.start_of(job);
        let lag = open.then(|| done.issued.saturating_sub(start.saturating_add(io.at)));
        self.replay.jobs[job].record(io.latency, lag);
    }

    /// Warm-up is over: what the replay measured so far is dropped (the
    /// issue count covers the whole run).
    pub(crate) fn trace_reset(&mut self) {
        for jr in &mut self.replay.jobs {
            jr.restart();
        }
    }

    /// Job `j`'s entry of the result, for a trace job.
    pub(crate) fn trace_result(&self, j: usize) -> Option<TraceReplay> {
        let tr = trace_of(&self.sc.jobs[j])?;
        Some(self.replay.jobs.get(j)?.replay(tr))
    }
}
