//! Application programs (`[[app]]`, docs/APPS.md): threads of a model
//! store that run CPU bursts, direct reads and writes through the block
//! layer like any submitter, and buffered writes through the page cache.
//! What is measured is the application's operations (get, put), each
//! type a job of the result, not its requests.
//!
//! Application threads belong to no fio job ([`APP_JOB`]): the fio loop's
//! bookkeeping never sees them. They wait for their own requests in
//! [`Wait::AppIo`] (woken by the completion's handler) and resume in
//! [`Cont::App`].

mod kvell;
mod rocksdb;

use cint_policy::Nanos;
use cint_report::{JobResult, LatencyHistogram};
use cint_scenario::app::AppKind;
use cint_scenario::{Scenario, Strategy};
use rand_chacha::ChaCha8Rng;

use crate::engine::stream_rng;
use crate::world::{Activity, Cont, ReqState, Request, Thread, Wait, World};

pub(crate) use rocksdb::Role;

/// The job index of application threads: they belong to no fio job.
pub(crate) const APP_JOB: u32 = u32::MAX - 1;

/// Random streams of application threads, `APP_STREAM_BASE | thread`:
/// apart from the jobs', so adding an app changes no job's draws.
const APP_STREAM_BASE: u64 = 1 << 44;

/// One operation type's measurements (a job of the result).
#[derive(Debug)]
struct OpStats {
    name: &'static str,
    hist: LatencyHistogram,
    ops: u64,
    bytes: u64,
}

/// Which model a thread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Model {
    RocksDb,
    Kvell,
}

/// An application thread.
#[derive(Debug)]
pub(crate) struct AppThread {
    model: Model,
    /// Which store of its model.
    app: usize,
    role: Role,
    /// The operation type it counts in (an index of `ops`), if any.
    op: Option<usize>,
    /// Where its loop is.
    step: rocksdb::Step,
    /// When its current operation began.
    op_start: Nanos,
    rng: ChaCha8Rng,
}

/// Every application of a run.
#[derive(Debug)]
pub(crate) struct Apps {
    /// Index of the first application thread in the world's threads.
    first: usize,
    threads: Vec<AppThread>,
    ops: Vec<OpStats>,
    dbs: Vec<rocksdb::Db>,
    kvells: Vec<kvell::Store>,
    /// The measured window is open.
    measuring: bool,
}

/// Whether the scenario's applications write through the page cache.
pub(crate) fn need_page_cache(sc: &Scenario) -> bool {
    sc.apps.programs.iter().any(|a| match &a.kind {
        AppKind::RocksDb(db) => rocksdb::buffered(db),
        AppKind::Kvell(_) => false,
    })
}

impl Apps {
    /// Adds the threads and request slots of `sc`'s applications under
    /// `strategy` (its `app_hints`), on the host's queues.
    pub(crate) fn build(
        sc: &Scenario,
        strategy: &Strategy,
        threads: &mut Vec<Thread>,
        reqs: &mut Vec<Request>,
        cores: &mut [crate::host::Core],
        queues_n: usize,
        estimator: cint_policy::hybrid_poll::SleepEstimator,
    ) -> Option<Box<Apps>> {
        if sc.apps.programs.is_empty() {
            return None;
        }
        let index = sc.strategies.iter().position(|s| std::ptr::eq(s, strategy));
        let app_cint = index
            .and_then(|i| sc.apps.app_cint.get(i))
            .copied()
            .unwrap_or(false);
        let mut apps = Apps {
            first: threads.len(),
            threads: Vec::new(),
            ops: Vec::new(),
            dbs: Vec::new(),
            kvells: Vec::new(),
            measuring: sc.warmup == 0,
        };
        for (a, app) in sc.apps.programs.iter().enumerate() {
            let spec = match &app.kind {
                AppKind::RocksDb(spec) => spec,
                AppKind::Kvell(spec) => {
                    let stats = kvell::OpKind::of(spec)
                        .into_iter()
                        .map(|k| (k, apps.op_index(k.name())))
                        .collect();
                    let store = kvell::Store::new(spec.clone(), apps.threads.len(), stats);
                    let slots = kvell::Store::slots(spec, sc.device.queue_depth);
                    for core in kvell::Store::cores(spec) {
                        let t = threads.len();
                        let mut th = app_thread(sc, a, t, core, estimator);
                        for _ in 0..slots {
                            th.free_slots.push(reqs.len() as u32);
                            reqs.push(free_request(t, core as usize % queues_n));
                        }
                        th.free_slots.reverse();
                        threads.push(th);
                        cores[core as usize].rq.push(t as u32);
                        apps.threads.push(AppThread {
                            model: Model::Kvell,
                            app: apps.kvells.len(),
                            role: Role::Reader,
                            op: None,
                            step: rocksdb::Step::Start,
                            op_start: 0,
                            rng: stream_rng(sc.seed, APP_STREAM_BASE | t as u64),
                        });
                    }
                    apps.kvells.push(store);
                    continue;
                }
            };
            let db = rocksdb::Db::new(spec.clone(), app_cint, a as u32);
            for (role, core) in db.threads() {
                let op = role.op_name().map(|name| apps.op_index(name));
                let t = threads.len();
                let mut th = app_thread(sc, a, t, core, estimator);
                if role.does_direct_io() {
                    th.free_slots.push(reqs.len() as u32);
                    reqs.push(free_request(t, core as usize % queues_n));
                } else if db.issues_requests(role) {
                    // The log's `fdatasync` writes back through the page
                    // cache, with the slots a fio job's sync has.
                    let queue = core as usize % queues_n;
                    crate::host::pagecache::give_fsync_slots(
                        &mut th,
                        t,
                        queue,
                        sc.device.queue_depth,
                        reqs,
                    );
                }
                threads.push(th);
                cores[core as usize].rq.push(t as u32);
                apps.threads.push(AppThread {
                    model: Model::RocksDb,
                    app: apps.dbs.len(),
                    role,
                    op,
                    step: rocksdb::Step::Start,
                    op_start: 0,
                    rng: stream_rng(sc.seed, APP_STREAM_BASE | t as u64),
                });
            }
            apps.dbs.push(db);
        }
        Some(Box::new(apps))
    }

    /// Records one operation of type `stat` that took `latency`, while
    /// the window is open.
    fn record_stat(&mut self, stat: usize, latency: Nanos, bytes: u64) {
        if !self.measuring {
            return;
        }
        if let Some(s) = self.ops.get_mut(stat) {
            s.hist.record(latency);
            s.ops += 1;
            s.bytes += bytes;
        }
    }

    /// Bytes of every operation measured so far (the window's).
    pub(crate) fn window_bytes(&self) -> u64 {
        self.ops.iter().map(|o| o.bytes).sum()
    }

    fn op_index(&mut self, name: &'static str) -> usize {
        if let Some(i) = self.ops.iter().position(|o| o.name == name) {
            return i;
        }
        self.ops.push(OpStats {
            name,
            hist: LatencyHistogram::new(),
            ops: 0,
            bytes: 0,
        });
        self.ops.len() - 1
    }
}

/// A free request slot of thread `t` on `queue`.
fn free_request(t: usize, queue: usize) -> Request {
    Request::free(t as u32, queue as u32, false)
}

/// A new application thread of program `a` on `core` (its `t`-th thread
/// in the world), before its first step.
fn app_thread(
    sc: &Scenario,
    a: usize,
    t: usize,
    core: u32,
    estimator: cint_policy::hybrid_poll::SleepEstimator,
) -> Thread {
    let mut th = Thread::fresh(
        sc.seed,
        ((sc.jobs.len() + 1 + a) as u32, t as u32),
        core,
        crate::workload::Program::kernel(),
        Activity::Burst {
            left: 0,
            then: Cont::App,
        },
        estimator,
    );
    th.job = APP_JOB;
    th.sched_group = sc.sched_groups.of_app(a).map(|g| g as u16);
    th
}

/// The cores of `sc`'s application threads whose queues carry their
/// requests (direct I/O).
pub(crate) fn queues_used(sc: &Scenario, queues_n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    for app in &sc.apps.programs {
        let spec = match &app.kind {
            AppKind::RocksDb(spec) => spec,
            AppKind::Kvell(spec) => {
                out.extend(spec.cpus.iter().map(|&c| c as usize % queues_n.max(1)));
                continue;
            }
        };
        let db = rocksdb::Db::new(spec.clone(), false, 0);
        for (role, core) in db.threads() {
            if db.issues_requests(role) {
                out.push(core as usize % queues_n.max(1));
            }
        }
    }
    out
}

impl World<'_> {
    /// An application thread resumes.
    pub(crate) fn app_cont(&mut self, t: usize) {
        let Some(apps) = self.apps.as_deref() else {
            return;
        };
        let i = t - apps.first;
        let a = apps.threads[i].app;
        match apps.threads[i].model {
            Model::RocksDb => self.rocksdb_step(t, i, a),
            Model::Kvell => self.kvell_step(t, i, a),
        }
    }

    /// An application thread's direct request reached the device: it
    /// sleeps until the completion wakes it.
    pub(crate) fn app_submitted(&mut self, t: usize) {
        let kvell = self
            .apps
            .as_deref()
            .is_some_and(|a| a.threads[t - a.first].model == Model::Kvell);
        if kvell {
            // io_submit returned: the worker goes on to io_getevents.
            self.app_cont(t);
        } else {
            self.block(t, Wait::AppIo);
        }
    }

    /// Records one operation of thread `i` (an app thread index) that
    /// began at `start`, now done, of `bytes`.
    fn record_op(&mut self, i: usize, start: Nanos, bytes: u64) {
        let now = self.now();
        let Some(apps) = self.apps.as_deref_mut() else {
            return;
        };
        if let Some(op) = apps.threads[i].op {
            apps.record_stat(op, now - start, bytes);
        }
    }

    /// Takes thread `t`'s request slot for a direct request.
    fn app_request(&mut self, t: usize, write: bool, bytes: u64, hint: cint_policy::Hint) {
        self.stage_request(t, write, bytes, hint);
    }

    /// Takes thread `t`'s completed request back: its slot is free.
    fn app_reap(&mut self, t: usize) {
        let Some(r) = self.threads[t].ready.pop_front() else {
            self.check
                .fail(format!("application thread {t} woke with no completion"));
            return;
        };
        self.release_slot(t, r);
    }

    /// The applications' operation types as jobs of the result, measured
    /// over the window of `window` ns.
    pub(crate) fn app_results(&self, window: Nanos) -> Vec<JobResult> {
        let Some(apps) = self.apps.as_deref() else {
            return Vec::new();
        };
        let secs = window.max(1) as f64 / 1e9;
        apps.ops
            .iter()
            .enumerate()
            .map(|(o, s)| {
                let (cpu, ctx, wakeups) = apps
                    .threads
                    .iter()
                    .enumerate()
                    .filter(|(_, th)| th.op == Some(o))
                    .map(|(i, _)| &self.threads[apps.first + i])
                    .fold((0u64, 0u64, 0u64), |(c, x, w), t| {
                        (
                            c + t.counts.cpu_ns,
                            x + t.counts.ctx_switches,
                            w + t.counts.wakeups,
                        )
                    });
                JobResult {
                    name: s.name.to_string(),
                    ios: s.ops,
                    iops: s.ops as f64 / secs,
                    bw_bytes: (s.bytes as f64 / secs) as u64,
                    cpu_util: cpu as f64 / window.max(1) as f64,
                    context_switches: ctx,
                    wakeups,
                    lat_ns: s.hist.stats(),
                    fio: None,
                    trace: None,
                    sync: None,
                    modes: None,
                }
            })
            .collect()
    }

    /// Operation types that completed nothing in the measured window,
    /// each with where its threads' requests are, so that a zero comes
    /// with its mechanism.
    pub(crate) fn app_notes(&self, strategy: &Strategy) -> Vec<String> {
        let Some(apps) = self.apps.as_deref() else {
            return Vec::new();
        };
        let now = self.now();
        let mut notes = Vec::new();
        for (o, s) in apps.ops.iter().enumerate() {
            if s.ops > 0 {
                continue;
            }
            let oldest = apps
                .threads
                .iter()
                .enumerate()
                .filter(|(_, th)| th.op == Some(o))
                .flat_map(|(i, _)| {
                    let t = (apps.first + i) as u32;
                    self.reqs
                        .iter()
                        .filter(move |r| r.thread == t && r.state != ReqState::Free)
                })
                .min_by_key(|r| r.issued);
            let why = match oldest {
                Some(r) => format!(
                    "its oldest request, issued {:.3} ms before the end, is in state {:?} ({} \
                     requests of all jobs wait for the device's parallel units)",
                    now.saturating_sub(r.issued) as f64 / 1e6,
                    r.state,
                    self.device.fifo.len()
                ),
                None => "its threads had no request in flight: they waited for their cores or \
                         for the page cache"
                    .to_string(),
            };
            notes.push(format!(
                "strategy '{}': application operation '{}' completed nothing in the measured \
                 window: {why}",
                strategy.name, s.name
            ));
        }
        // Operation types served by shared threads (KVell's workers run
        // every type) have no CPU of their own: their jobs' cpu_util and
        // context_switches read 0, and the strategy's totals carry it.
        let shared: Vec<&str> = apps
            .ops
            .iter()
            .enumerate()
            .filter(|&(o, s)| s.ops > 0 && !apps.threads.iter().any(|th| th.op == Some(o)))
            .map(|(_, s)| s.name)
            .collect();
        for db in &apps.dbs {
            if let Some(note) = db.stall_note(now) {
                let name = db.program_name(&self.sc.apps.programs);
                notes.push(format!(
                    "strategy '{}': RocksDB '{name}': {note}",
                    strategy.name
                ));
            }
        }
        if !shared.is_empty() {
            notes.push(format!(
                "strategy '{}': application operations {} run on threads shared by every \
                 operation type: their jobs' cpu_util and context_switches are 0, and the \
                 strategy's totals hold that CPU",
                strategy.name,
                shared
                    .iter()
                    .map(|n| format!("'{n}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        notes
    }

    /// The measured window restarts: the operations' counts too.
    pub(crate) fn app_reset(&mut self) {
        if let Some(apps) = self.apps.as_deref_mut() {
            apps.measuring = true;
            for s in &mut apps.ops {
                s.hist = LatencyHistogram::new();
                s.ops = 0;
                s.bytes = 0;
            }
        }
    }
}
