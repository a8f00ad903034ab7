//! Block-trace replay on the emulator's threads (docs/TRACES.md), by the
//! simulator's rules: a trace job's thread issues its stream's requests
//! in trace order, with their offsets, sizes and directions. Open loop,
//! request i is released at the job's start plus its trace time (scaled
//! at load), each instant computed from the trace's own time and never
//! from the previous issue, so the replay cannot drift; a thread ahead of
//! its next release reaps what it has in flight and sleeps until it, as a
//! rate-limited fio thread does, and a request it could not issue at its
//! release shows that in its issue lag. Closed loop, the thread keeps its
//! depth of requests in flight in trace order. What it measured is
//! counted by `cint_report::TraceMeasure`, as the simulator counts it.

use std::sync::Arc;

use cint_policy::Nanos;
use cint_report::TraceMeasure;
use cint_scenario::trace::{TraceIo, TraceJob, TraceMode, TraceThread};

use crate::shared::Op;

/// One thread's place in its stream of the trace.
pub(crate) struct TraceCursor {
    threads: Arc<Vec<TraceThread>>,
    stream: usize,
    /// The next request to issue.
    next: usize,
    open: bool,
    /// The job's start, from which releases count.
    start: Nanos,
    /// What the thread measured.
    pub measure: TraceMeasure,
}

impl TraceCursor {
    /// Thread `stream` of trace job `job` (its `stream`th stream).
    pub(crate) fn new(job: &TraceJob, stream: usize) -> TraceCursor {
        TraceCursor {
            threads: Arc::clone(&job.threads),
            stream,
            next: 0,
            open: matches!(job.mode, TraceMode::Open { .. }),
            start: 0,
            measure: TraceMeasure::default(),
        }
    }

    fn ios(&self) -> &[TraceIo] {
        self.threads.get(self.stream).map_or(&[], |t| &t.ios)
    }

    /// The largest request of the stream, in bytes: each buffer's size.
    pub(crate) fn largest(&self) -> u64 {
        self.ios().iter().map(|io| io.bytes).max().unwrap_or(0)
    }

    /// The job started at `start`: releases count from there.
    pub(crate) fn start_at(&mut self, start: Nanos) {
        self.start = start;
    }

    /// Requests left to issue.
    pub(crate) fn left(&self) -> usize {
        self.ios().len().saturating_sub(self.next)
    }

    /// Open loop: how long before the next request's release `now` is,
    /// if it is before it.
    pub(crate) fn ahead_by(&self, now: Nanos) -> Option<Nanos> {
        if !self.open {
            return None;
        }
        let io = self.ios().get(self.next)?;
        let release = self.start.saturating_add(io.at);
        (release > now).then(|| release - now)
    }

    /// How many requests may go at `now`: open loop, those released by
    /// then (releases are in time order within a stream, checked at
    /// load); closed loop, all that are left.
    pub(crate) fn due(&self, now: Nanos) -> usize {
        let rest = &self.ios()[self.next.min(self.ios().len())..];
        if !self.open {
            return rest.len();
        }
        let start = self.start;
        rest.partition_point(|io| start.saturating_add(io.at) <= now)
    }

    /// Takes the next request: its direction, offset and size.
    pub(crate) fn take(&mut self) -> Option<(Op, u64, u64)> {
        let io = *self.ios().get(self.next)?;
        self.next += 1;
        self.measure.issued += 1;
        let op = if io.write { Op::Write } else { Op::Read };
        Some((op, io.offset, io.bytes))
    }

    /// Request `index` of the stream, issued at `issued`, is in the
    /// thread's hand within the measured window: its trace latency and,
    /// open loop, its issue lag are measured.
    pub(crate) fn measured(&mut self, index: usize, issued: Nanos) {
        let Some(&io) = self.ios().get(index) else {
            return;
        };
        let lag = self
            .open
            .then(|| issued.saturating_sub(self.start.saturating_add(io.at)));
        self.measure.record(io.latency, lag);
    }
}

/// The largest request of trace job `job`, in bytes, over all its
/// streams.
pub(crate) fn largest(job: &TraceJob) -> u64 {
    job.threads
        .iter()
        .flat_map(|t| &t.ios)
        .map(|io| io.bytes)
        .max()
        .unwrap_or(0)
}

/// The farthest byte any request of trace job `job` reaches.
pub(crate) fn reach(job: &TraceJob) -> u64 {
    job.threads
        .iter()
        .flat_map(|t| &t.ios)
        .map(|io| io.offset.saturating_add(io.bytes))
        .max()
        .unwrap_or(0)
}
