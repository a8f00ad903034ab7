//! A job's parameters in the form the thread loop uses.

use cint_policy::{Hint, Nanos};
use cint_scenario::{Engine, Job, Rw, Work};

use crate::SimError;

/// What one thread of a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Program {
    /// I/O engine (ignored by CPU jobs).
    pub engine: Engine,
    pub rw: Rw,
    pub bs: u64,
    pub iodepth: u32,
    pub batch: u32,
    /// `batch_complete_min`.
    pub min_nr: u32,
    /// `batch_complete_max`: events one reap call hands out at most.
    pub max_events: u32,
    /// fio's `iodepth_low`: a wait that began on a full queue reaps
    /// until at most this many requests are in flight (`iodepth`: one
    /// reap call; [`crate::World::drain_goes_on`]).
    pub low_water: u32,
    /// Its reap calls return at once and the thread calls again until
    /// an event is in (`IoJob::reaps_without_waiting`).
    pub reap_spins: bool,
    /// It reaps after every submission (`IoJob::reaps_each_submission`).
    pub reaps_each_submission: bool,
    pub hint: Option<Hint>,
    pub nowait: bool,
    pub direct: bool,
    /// The thread's calls go through the page cache: a buffered job
    /// (`IoJob::through_page_cache`), the flusher, an application.
    pub buffered: bool,
    /// fio's `gtod_reduce`: less generator CPU per I/O.
    pub gtod_reduce: bool,
    /// The thread is rate-limited (`rate_iops` or `rate`; its limiter is
    /// [`super::rate::Pacer`]).
    pub rated: bool,
    /// The thread's rate has a floor (`ratemin`, `rate_iops_min`; its
    /// check is [`super::min_rate`]).
    pub floored: bool,
    /// The thread's job bounds its latency (`max_latency`; its check is
    /// [`super::max_latency`]).
    pub lat_bounded: bool,
    /// `number_ios` or the syncs count requests, which fio counts again
    /// from the end of the job's ramp.
    pub counts_from_ramp: bool,
    /// The job's `io_size` is made of passes over its file (`pass_size`),
    /// whose ends [`crate::World::pass_end_holds`] sees to.
    pub passes: bool,
    /// Every request is `bs` (no `bssplit` or `bsrange`), unpaced and in
    /// no pass: drawing one draws its direction only
    /// ([`crate::World::draw_request`]'s short way).
    pub one_size: bool,
    /// Neither `number_ios` nor `io_size` ends the thread's requests, nor
    /// a trace's end: [`crate::World::ios_left`] has nothing to count.
    pub unlimited: bool,
    pub think: Nanos,
    pub rwmixread: u8,
    /// The thread stops issuing at this instant (`runtime`).
    pub stop_at: Option<Nanos>,
    /// The job replays a block trace (workload/trace.rs).
    pub trace: bool,
    /// The thread fills an io_uring ring whose submissions a kernel
    /// thread polls (`IORING_SETUP_SQPOLL`, workload/sqpoll.rs): it makes
    /// no system call to submit or to reap, and spins on the completion
    /// ring in user space.
    pub sqpoll: bool,
    /// The thread's part in a loop other threads share: fio's offloaded
    /// submission (workload/offload.rs), a ring's SQ thread.
    pub role: LoopRole,
    /// The thread burns CPU (a `kind = "cpu"` job): it has no loop top
    /// to look at the clock from, so its `runtime`'s end is an event of
    /// its own (workload/groups.rs, `on_cpu_job_end`).
    pub burns: bool,
}

/// A thread's part in a loop that other threads share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LoopRole {
    /// The thread submits its own requests.
    #[default]
    Inline,
    /// fio's job thread, offloaded: prepares requests and hands them out.
    Dispatcher,
    /// One of its submission workers.
    Worker,
    /// The kernel thread that submits an SQ-polled ring's requests and
    /// polls its polled ones (workload/sqpoll.rs).
    SqThread,
}

impl Program {
    /// The program of one of an offloaded job thread's workers: the
    /// job's engine at depth 1, no rate of its own (the main thread keeps
    /// it), and no end of its own (it ends with the main thread's loop).
    pub(crate) fn offload_worker(&self) -> Program {
        Program {
            iodepth: 1,
            batch: 1,
            min_nr: 1,
            max_events: 1,
            low_water: 1,
            reap_spins: false,
            reaps_each_submission: false,
            rated: false,
            floored: false,
            lat_bounded: false,
            counts_from_ramp: false,
            passes: false,
            one_size: false,
            unlimited: false,
            stop_at: None,
            role: LoopRole::Worker,
            ..*self
        }
    }

    /// The program of the SQ thread of an SQ-polled ring that this
    /// program's thread fills: the engine's kernel side, with no rate,
    /// think time or end of its own (it ends with the ring's thread).
    pub(crate) fn sq_thread(&self) -> Program {
        Program {
            rated: false,
            floored: false,
            lat_bounded: false,
            counts_from_ramp: false,
            passes: false,
            one_size: false,
            unlimited: false,
            think: 0,
            stop_at: None,
            sqpoll: false,
            role: LoopRole::SqThread,
            ..*self
        }
    }

    /// A kernel thread's program (the page cache's flusher): it submits
    /// through the block layer like a synchronous call (the VFS and
    /// block paths per request) and is no job's.
    pub(crate) fn kernel() -> Program {
        Program {
            engine: Engine::Psync,
            rw: Rw::Write,
            bs: 0,
            iodepth: 0,
            batch: 0,
            min_nr: 1,
            max_events: 1,
            low_water: 0,
            reap_spins: false,
            reaps_each_submission: false,
            hint: None,
            nowait: false,
            direct: false,
            buffered: true,
            gtod_reduce: false,
            rated: false,
            floored: false,
            lat_bounded: false,
            counts_from_ramp: false,
            passes: false,
            one_size: false,
            unlimited: false,
            think: 0,
            rwmixread: 0,
            stop_at: None,
            trace: false,
            sqpoll: false,
            role: LoopRole::Inline,
            burns: false,
        }
    }

    /// The program of every thread of `job`. `runtime` counts from the
    /// start of the run, warm-up included.
    pub(crate) fn from_job(job: &Job) -> Result<Program, SimError> {
        let bad = |what: &str| SimError::input(format!("job '{}': {what}", job.name));
        match &job.work {
            Work::Cpu => Ok(Program {
                engine: Engine::Psync,
                rw: Rw::Read,
                bs: 0,
                iodepth: 0,
                batch: 0,
                min_nr: 0,
                max_events: 0,
                low_water: 0,
                reap_spins: false,
                reaps_each_submission: false,
                hint: None,
                nowait: false,
                direct: true,
                buffered: false,
                gtod_reduce: false,
                rated: false,
                floored: false,
                lat_bounded: false,
                counts_from_ramp: false,
                passes: false,
                one_size: false,
                unlimited: false,
                think: 0,
                rwmixread: 100,
                stop_at: job.runtime,
                trace: false,
                sqpoll: false,
                role: LoopRole::Inline,
                burns: true,
            }),
            Work::Io(io) => {
                if io.bs == 0 {
                    return Err(bad("bs must be positive"));
                }
                let iodepth = if io.engine.is_sync() {
                    1
                } else {
                    io.iodepth.max(1)
                };
                let batch = if io.engine.is_sync() {
                    1
                } else {
                    io.batch.clamp(1, iodepth)
                };
                let min_nr = io.batch_complete_min.clamp(1, iodepth);
                let max_events = io.batch_complete_max.clamp(min_nr, iodepth);
                if io.rate_iops == Some(0) || io.shape.rate == Some(0) {
                    return Err(bad("rates must be positive"));
                }
                let rated = cint_scenario::rate::Pacer::of_job(io).is_some();
                Ok(Program {
                    engine: io.engine,
                    rw: io.rw,
                    bs: io.bs,
                    iodepth,
                    batch,
                    min_nr,
                    max_events,
                    low_water: io.iodepth_low.clamp(1, iodepth),
                    reap_spins: io.reaps_without_waiting(),
                    reaps_each_submission: io.reaps_each_submission(),
                    hint: io.hint,
                    nowait: io.nowait,
                    direct: io.direct,
                    buffered: io.through_page_cache(),
                    gtod_reduce: io.gtod_reduce,
                    rated,
                    floored: io.shape.rate_min.is_some(),
                    lat_bounded: io.shape.max_latency.is_some(),
                    counts_from_ramp: io.shape.number_ios.is_some() || io.shape.syncs(),
                    passes: io.shape.pass_size.is_some(),
                    one_size: !rated
                        && io.shape.pass_size.is_none()
                        && cint_scenario::shape::one_block_size(&io.shape),
                    unlimited: io.shape.number_ios.is_none()
                        && io.shape.io_size.is_none()
                        && io.shape.trace.is_none(),
                    think: io.think,
                    rwmixread: io.rwmixread.min(100),
                    stop_at: job.runtime,
                    trace: io.shape.trace.is_some(),
                    sqpoll: io.sqpoll.is_some(),
                    role: if io.offload {
                        LoopRole::Dispatcher
                    } else {
                        LoopRole::Inline
                    },
                    burns: false,
                })
            }
        }
    }
}
