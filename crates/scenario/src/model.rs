//! The resolved, validated scenario: what the simulator and the emulator
//! both run. Every value here has passed validation; engines may rely on
//! the documented ranges.

use cint_policy::{Hint, Nanos, PolicyConfig};

use crate::emu_config::EmuConfig;
use crate::profiles::{DeviceProfile, HostProfile};

/// One experiment: a device, a host, jobs, and the strategies to compare
/// on exactly the same jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// `name`.
    pub name: String,
    /// Where it was read from (for messages); `<built-in>` or `<string>`.
    pub source: String,
    /// Seed of the run's random generator (simulator).
    pub seed: u64,
    /// Measured time, after warm-up (> 0).
    pub duration: Nanos,
    /// Time run before measuring.
    pub warmup: Nanos,
    /// The run ends as soon as every job has ended, at most `duration`
    /// after the warm-up (fio's run of jobs that end by their size or
    /// count); false: it lasts `duration` whatever the jobs do.
    pub run_to_end: bool,
    /// The device, built-in profile with overrides applied.
    pub device: DeviceProfile,
    /// The host, built-in profile with overrides applied (`cores` >= 1).
    pub host: HostProfile,
    /// At least one; names unique.
    pub strategies: Vec<Strategy>,
    /// At least one; names unique; every `cpu < host.cores`.
    pub jobs: Vec<Job>,
    /// Application programs (`[[app]]`) and each strategy's app hint set.
    pub apps: crate::app::Apps,
    /// Emulator settings.
    pub emu: EmuConfig,
    /// The hypervisor and its guests; empty on bare metal.
    pub virt: crate::virt::Virt,
    /// CFS task groups and their members; empty: every thread in the
    /// root group.
    pub sched_groups: crate::sched_group::SchedGroups,
    /// Where each key was written, for engines' refusals; empty for a
    /// scenario built in code.
    pub origins: crate::KeyOrigins,
}

impl Scenario {
    /// An engine's refusal of `key` (dotted, as in the loader's errors),
    /// located like the loader's: `file:line: key: message`.
    pub fn refusal(&self, key: &str, message: impl Into<String>) -> crate::ScenarioError {
        self.origins.refusal(&self.source, key, message)
    }

    /// The physical core of `job`'s thread `n`: its `cpu` (or its turn in
    /// `cpus`), which for a job inside a guest is a vCPU of that guest.
    pub fn thread_core(&self, job: &Job, n: u32) -> u32 {
        let cpu = job.thread_cpu(n);
        match job.guest.and_then(|g| self.virt.guests.get(g as usize)) {
            Some(guest) => guest.cores.get(cpu as usize).copied().unwrap_or(cpu),
            None => cpu,
        }
    }
}

/// One strategy to compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Strategy {
    /// `name`, unique in the scenario.
    pub name: String,
    /// How completions reach the application.
    pub mode: CompletionMode,
    /// Under a polling mode, the interrupt policy of the requests that are
    /// not polled (Linux polls per request: only `RWF_HIPRI` reads and
    /// writes and io_uring's `IORING_SETUP_IOPOLL` go to poll queues; the
    /// rest complete on interrupt queues). `None` by default; unused under
    /// an interrupt mode, whose own policy serves every request.
    pub interrupts: PolicyConfig,
}

impl Strategy {
    /// The `kind` as the scenario file spells it.
    pub fn kind(&self) -> &'static str {
        match &self.mode {
            CompletionMode::Interrupt(p) => p.kind(),
            CompletionMode::Poll => "poll",
            CompletionMode::HybridPoll(_) => "hybrid-poll",
            CompletionMode::ModeSelect => "mode-select",
        }
    }
}

/// How the host learns of completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionMode {
    /// The device interrupts when this policy says so.
    Interrupt(PolicyConfig),
    /// Classic polling: the submitting thread spins on its CQ.
    Poll,
    /// Hybrid polling: sleep, then spin.
    HybridPoll(HybridSleep),
    /// Per request, classic polling, hybrid polling or an interrupt,
    /// whichever the host's energy estimate favours
    /// (`cint_policy::mode_select`, docs/ALGORITHMS.md section 10).
    ModeSelect,
}

/// The sleep of hybrid polling (docs/ALGORITHMS.md section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HybridSleep {
    /// Half the mean completion time of the request's class (Linux
    /// block layer, 100 ms statistics window).
    Adaptive,
    /// Half the minimum observed run time (io_uring hybrid iopoll).
    Min,
    /// A fixed sleep.
    Fixed(Nanos),
}

/// One `[[job]]`: `numjobs` identical threads pinned to `cpu`.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// `name`, unique in the scenario.
    pub name: String,
    /// Application core (`< host.cores`) of every thread, unless `cpus`
    /// spreads them.
    pub cpu: u32,
    /// `cpus`: the cores the job's threads are spread over, thread `n` on
    /// `cpus[n % len]` (fio's `cpus_allowed` with
    /// `cpus_allowed_policy=split`); empty: every thread on `cpu`.
    pub cpus: Vec<u32>,
    /// Identical threads (>= 1).
    pub numjobs: u32,
    /// Stop this job's threads after this long, measured from the job's
    /// start (the run's start, or its group's start plus `startdelay`).
    pub runtime: Option<Nanos>,
    /// What the threads do.
    pub work: Work,
    /// When the job starts: its group and delay (fio's `stonewall`,
    /// `wait_for` and `startdelay`).
    pub schedule: Schedule,
    /// `guest`: the guest it runs in (an index into `Scenario::virt`'s
    /// guests); its `cpu` and `cpus` are then that guest's vCPUs.
    pub guest: Option<u32>,
}

impl Job {
    /// The job's I/O; `None` for a CPU-bound job.
    pub fn io(&self) -> Option<&IoJob> {
        match &self.work {
            Work::Io(io) => Some(io),
            Work::Cpu => None,
        }
    }

    /// The core of the job's thread `n` (0-based among its `numjobs`).
    pub fn thread_cpu(&self, n: u32) -> u32 {
        if self.cpus.is_empty() {
            self.cpu
        } else {
            self.cpus[n as usize % self.cpus.len()]
        }
    }
}

/// When a job starts. Groups run one after another in ascending order: a
/// group starts once every thread of the groups before it has exited, so
/// every job of a group that is followed by another needs an end
/// (`runtime` or `number_ios`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// `group`: 0 starts with the run.
    pub group: u32,
    /// `startdelay`: from the group's start to the job's first request.
    pub startdelay: Nanos,
}

/// What a job's threads do.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// I/O.
    Io(IoJob),
    /// `kind = "cpu"`: a busy loop, no I/O.
    Cpu,
}

/// The I/O engine a job uses (fio's `ioengine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `pread`/`pwrite`, blocking, one request per call.
    Psync,
    /// `preadv2`/`pwritev2`, blocking, with per-call flags.
    Pvsync2,
    /// `io_submit` / `io_getevents`.
    Libaio,
    /// io_uring submission and completion rings.
    IoUring,
}

impl Engine {
    /// Synchronous engines block in the call until their one request completes.
    pub fn is_sync(self) -> bool {
        matches!(self, Engine::Psync | Engine::Pvsync2)
    }
}

/// Access pattern (fio's `rw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Random mix; `rwmixread` percent reads.
    RandRw,
    /// Sequential mix (fio's `rw`/`readwrite`); `rwmixread` percent reads.
    ReadWrite,
}

impl Rw {
    /// Reads and writes mixed by `rwmixread`.
    pub fn is_mixed(self) -> bool {
        matches!(self, Rw::RandRw | Rw::ReadWrite)
    }

    /// Reads only: no write is ever issued.
    pub fn only_reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead)
    }

    /// Requests land at random offsets, not in sequence.
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
}

/// An I/O job's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct IoJob {
    /// Engine.
    pub engine: Engine,
    /// Pattern.
    pub rw: Rw,
    /// Block size in bytes: a positive multiple of 512, or any positive
    /// size on a job through the page cache.
    pub bs: u64,
    /// Requests in flight per thread (1 for sync engines).
    pub iodepth: u32,
    /// Requests per submission call (1..=iodepth).
    pub batch: u32,
    /// Events to wait for per reap call (0..=iodepth); 0: the call returns
    /// at once, and the thread calls again until an event is in (fio's
    /// `iodepth_batch_complete_min=0`, [`IoJob::reaps_without_waiting`]).
    pub batch_complete_min: u32,
    /// Events one reap call hands out at most (`batch_complete_min..=iodepth`;
    /// fio's `iodepth_batch_complete_max`, by default equal to the minimum);
    /// 0 beside a minimum of 0: the thread reaps after every submission
    /// (fio's `io_in_polling`), one event a call.
    pub batch_complete_max: u32,
    /// fio's `iodepth_low`: once every request slot is in use, the thread
    /// reaps until at most this many requests are in flight before it
    /// submits again (`1..=iodepth`; `iodepth`, fio's default, ends the
    /// wait after one reap call).
    pub iodepth_low: u32,
    /// Override of every request's hint; `None`: the kernel's default rule
    /// for the engine (docs/ALGORITHMS.md section 5).
    pub hint: Option<Hint>,
    /// `RWF_NOWAIT` on pvsync2 calls (clears the default Urgent).
    pub nowait: bool,
    /// fio's `hipri`: the requests may be polled (`RWF_HIPRI` on pvsync2
    /// calls, `IORING_SETUP_IOPOLL` on io_uring); a polling strategy
    /// polls them, an interrupt strategy ignores it.
    pub hipri: bool,
    /// `O_DIRECT` (default true: the microbenchmarks bypass the page cache).
    pub direct: bool,
    /// fio's `fadvise_hint` (default true): fio advises the kernel of the
    /// job's pattern on its file, `POSIX_FADV_RANDOM` for a random `rw`
    /// (a cache miss reads only its own pages) and `POSIX_FADV_SEQUENTIAL`
    /// otherwise (twice the read-ahead window). Only reads through the
    /// page cache feel it.
    pub fadvise_hint: bool,
    /// fio's `gtod_reduce`: the generator takes fewer time stamps per I/O,
    /// which lowers its user-space CPU per I/O.
    pub gtod_reduce: bool,
    /// fio's `io_submit_mode=offload`: each thread hands its requests to
    /// a pool of `iodepth` worker threads on its core, each of which runs
    /// one at a time through the engine (fio's rate-submit.c), so the
    /// thread issues at its rate whatever the completions do.
    pub offload: bool,
    /// fio's `sqthread_poll`: a kernel thread polls the io_uring
    /// submission ring (`IORING_SETUP_SQPOLL`), and the job's threads fill
    /// the ring and spin on the completion ring in user space, without a
    /// system call (docs/FIO.md).
    pub sqpoll: Option<SqPoll>,
    /// Cap on the job's submission rate, per thread, in IO/s.
    pub rate_iops: Option<u64>,
    /// CPU time the application spends per completed IO.
    pub think: Nanos,
    /// Working set in bytes (default: the device's capacity).
    pub size: u64,
    /// Percent reads for `randrw` and `readwrite` (0..=100).
    pub rwmixread: u8,
    /// How requests are shaped beyond `rw` and `bs` (boxed: most jobs
    /// shape nothing, and a job stays small to copy).
    pub shape: Box<IoShape>,
}

/// Where an io_uring job's submission-queue polling threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqPoll {
    /// fio's `sqthread_poll_cpu` (`IORING_SETUP_SQ_AFF`): the core of every
    /// thread's SQ thread; `None`, the core of the thread that fills the
    /// ring, whose CPU mask Linux's io thread inherits.
    pub cpu: Option<u32>,
}

/// Why `nowait` and a buffered job do not go together.
pub const BUFFERED_NOWAIT: &str = "RWF_NOWAIT on a buffered call is not modelled: Linux 5.0 \
     fails a buffered write with EOPNOTSUPP and a read of pages it does not hold with EAGAIN, \
     which fio counts as errors; set direct = true";

impl IoJob {
    /// Whether the job's requests go through the page cache: without
    /// `direct`, on an engine whose calls Linux 5.0 serves from the cache
    /// inside the call (`pread`/`pwrite`, `preadv2`/`pwritev2`, and
    /// `io_submit`, whose iocbs on a file without `O_DIRECT` run the
    /// file's buffered read and write paths before the call returns,
    /// fs/aio.c `aio_read`/`aio_write`). io_uring came with Linux 5.1 and
    /// punts buffered requests to its own workers; the model keeps such
    /// jobs direct, and the result says so.
    pub fn through_page_cache(&self) -> bool {
        passes_page_cache(self.engine, self.direct)
    }

    /// Whether the job's reap calls return at once, so that its thread
    /// calls again until an event is in: fio's
    /// `iodepth_batch_complete_min=0`, whose engines then pass 0 as the
    /// call's least (engines/libaio.c `fio_libaio_getevents`,
    /// engines/io_uring.c `fio_ioring_getevents`) and loop.
    pub fn reaps_without_waiting(&self) -> bool {
        self.batch_complete_min == 0 && !self.engine.is_sync() && !self.offload
    }

    /// Whether the job reaps after every submission, one event a call,
    /// full queue or not: fio's `io_in_polling` (backend.c), both
    /// `iodepth_batch_complete_min` and `_max` at 0. Its loop then keeps
    /// one request in flight.
    pub fn reaps_each_submission(&self) -> bool {
        self.reaps_without_waiting() && self.batch_complete_max == 0
    }
}

/// Whether a job of `engine`, direct or not, goes through the page cache:
/// buffered synchronous and libaio calls do; io_uring runs as direct I/O.
/// The rule of [`IoJob::through_page_cache`], for a job not yet built
/// (the fio import's).
pub fn passes_page_cache(engine: Engine, direct: bool) -> bool {
    !direct && engine != Engine::IoUring
}

/// fio's `random_distribution` (crate::distribution): which blocks of its
/// file a random job's requests favour.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Distribution {
    /// Every block alike (`random`, fio's default).
    #[default]
    Uniform,
    /// `zipf:THETA`: the blocks' ranks by popularity follow Zipf's law,
    /// as fio's lib/zipf.c draws them (no random map).
    Zipf {
        /// The exponent (not 1).
        theta: f64,
        /// Where the most popular block sits, a fraction of the file;
        /// `None`: a random place.
        center: Option<f64>,
    },
    /// `pareto:H` (lib/zipf.c `pareto_next`; no random map).
    Pareto {
        /// The power, in (0, 1).
        h: f64,
        /// As [`Distribution::Zipf`]'s.
        center: Option<f64>,
    },
    /// `normal:DEV` (lib/gauss.c; no random map).
    Normal {
        /// The deviation added, a percentage of the file in [0, 100).
        dev: f64,
        /// As [`Distribution::Zipf`]'s; `None`: the file's start.
        center: Option<f64>,
    },
    /// `zoned:ACCESS/SIZE%:...`: each zone, a percentage of the file in
    /// order, takes its share of the requests, uniformly within it.
    Zoned(Vec<Zone>),
    /// `zoned_abs:ACCESS/SIZE:...`: zones of sizes in bytes.
    ZonedAbs(Vec<Zone>),
}

/// One zone of a zoned distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Share of the requests, percent.
    pub access: u32,
    /// Size: a percentage of the file (`zoned`) or bytes (`zoned_abs`).
    pub size: u64,
}

/// How fio draws a random job's offsets (io_u.c `get_next_rand_offset`,
/// `mark_random_map`; lib/axmap.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RandomMap {
    /// fio's default, the random map: each request starts at a uniformly
    /// drawn block of the job's smallest size, or at the next block the
    /// map has not yet covered when that one is, and ends where the map
    /// is covered (a request cut short); once every block is covered the
    /// map starts again.
    #[default]
    Map,
    /// `norandommap`: uniformly drawn blocks, repeats allowed, never cut.
    Off,
    /// `random_generator = "lfsr"`: each block starts a request once
    /// before any starts one again (fio's LFSR keeps no map, so requests
    /// are never cut).
    Lfsr,
}

impl RandomMap {
    /// What fio's `norandommap` and `random_generator=lfsr` make of its
    /// map: the LFSR keeps none, whatever `norandommap` says.
    pub fn from_fio(norandommap: bool, lfsr: bool) -> RandomMap {
        match (lfsr, norandommap) {
            (true, _) => RandomMap::Lfsr,
            (false, true) => RandomMap::Off,
            (false, false) => RandomMap::Map,
        }
    }
}

/// fio's request-shaping options on an I/O job. The default shapes
/// nothing: every request is `bs` bytes, issued as fast as the loop goes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IoShape {
    /// `bssplit`: block sizes with their share of requests in percent
    /// (shares add up to 100); empty: every request is `bs`.
    pub bssplit: Vec<BsShare>,
    /// `bssplit` for writes when it differs (fio's `READS,WRITES` form);
    /// empty: writes use `bssplit`.
    pub bssplit_write: Vec<BsShare>,
    /// `bsrange`: each request's size is drawn uniformly among the
    /// multiples of the smaller bound up to the larger one.
    pub bsrange: Option<(u64, u64)>,
    /// The writes' own `bsrange` (fio's `READS,WRITES` form); `None`:
    /// writes draw from `bsrange` too.
    pub bsrange_write: Option<(u64, u64)>,
    /// `rate`: cap on the job's bandwidth per thread, in bytes/s.
    pub rate: Option<u64>,
    /// `rate_iops` or `rate` given per direction (`"READS,WRITES"`) on a
    /// job that reads and writes: fio's pacing, each direction on a
    /// schedule of its own, issuing the one behind (io_u.c `rate_ddir`).
    /// `None`: the job's one cap (`IoJob::rate_iops`, `rate`), or none.
    pub rate_per_direction: Option<DirectionRates>,
    /// fio's `ratemin` or `rate_iops_min` with `ratecycle`: a thread whose
    /// rate over the last cycle falls under the floor ends, with an error
    /// (backend.c `__check_min_rate`).
    pub rate_min: Option<MinRate>,
    /// `rate_process = "poisson"`: under `rate` or `rate_iops`, the gaps
    /// between issue instants are exponential with the cap's mean instead
    /// of even.
    pub rate_poisson: bool,
    /// `barrier_last`: the last request of each submission call is marked
    /// Barrier (the cinterrupts authors' fio patch, `barrier=1`).
    pub barrier_last: bool,
    /// `thinktime`: after every `thinktime_blocks` requests completed (or
    /// issued, `thinktime_issue`), or every `thinktime_iotime`, the thread
    /// pauses this long (spinning `thinktime_spin` of it, sleeping the
    /// rest).
    pub thinktime: Nanos,
    /// `thinktime_spin`: the part of `thinktime` spent busy (<= thinktime).
    pub thinktime_spin: Nanos,
    /// `thinktime_blocks`: requests between pauses (>= 1; `u32::MAX`, no
    /// pause by count, when only `thinktime_iotime` was given).
    pub thinktime_blocks: u32,
    /// fio's `thinktime_blocks_type=issue`: `thinktime_blocks` counts
    /// requests issued rather than completed.
    pub thinktime_issue: bool,
    /// fio's `thinktime_iotime`: a pause also comes once this much time
    /// has passed since the last one began (its I/O time and the pause's
    /// own); 0: none.
    pub thinktime_iotime: Nanos,
    /// fio's `rate_ign_think`: a think time moves the rate's schedule on by
    /// its length (less one request's share when it is longer), so the
    /// thread does not catch up with the requests it did not issue while
    /// it thought.
    pub rate_ign_think: bool,
    /// `number_ios`: each thread exits after this many requests complete.
    pub number_ios: Option<u64>,
    /// `io_size`: each thread exits once it has issued this many bytes
    /// (fio's `size`, or `io_size`, times `loops`, for a job that is not
    /// time based).
    pub io_size: Option<u64>,
    /// `pass_size`: the bytes of one of fio's passes over the job's file
    /// (its `loops`), of which `io_size` holds one or more, the last
    /// perhaps cut short. At a pass's end fio's loop (backend.c `do_io`)
    /// waits for the requests in flight and returns; the next pass begins
    /// with its sync state reset (libfio.c `clear_io_state`).
    /// [`crate::passes::PassSyncs`] says which syncs that makes. `None`:
    /// one pass.
    pub pass_size: Option<u64>,
    /// `byte_limit`: fio's limit on the bytes a job issues, its `io_size`
    /// (or `size`) times `loops` (backend.c `io_issue_bytes_exceeded`),
    /// where it lies past the bytes the job's passes make: its loop then
    /// looks for another request after the last one, and so makes the
    /// sync due after its last write (fio 3.33, `size=1m io_size=1026k
    /// fsync=1`: 256 writes, 256 fsyncs). `None`: `io_size`, where fio's
    /// loop stops at the job's last request. Only with `pass_size`.
    pub byte_limit: Option<u64>,
    /// `percentile_list`: latency percentiles to report (each in
    /// (0, 100]); empty: the report's default list.
    pub percentile_list: Vec<f64>,
    /// `fsync`: a synchronous `fsync` call after every this many writes
    /// issued (0: never).
    pub fsync: u32,
    /// `fdatasync`: the same with `fdatasync`.
    pub fdatasync: u32,
    /// `sync`: buffered writes opened `O_SYNC` or `O_DSYNC`, each written
    /// back within its call.
    pub sync_writes: SyncWrites,
    /// `end_fsync`: after its loop, with what was in flight reaped, each
    /// thread of a buffered job that writes makes an `fsync` of its file
    /// where its last call was no sync (fio's `end_fsync` and
    /// `fsync_on_close`, backend.c `do_io`). It counts in the job's
    /// window, as in fio's runtime, and not among its sync calls, as in
    /// fio's figures.
    pub end_fsync: bool,
    /// `flow`: weight in fio's flow control among the jobs of the same
    /// `flow_id` (0: not in a flow).
    pub flow: u32,
    /// `flow_id`: which flow the job's weight counts in.
    pub flow_id: u32,
    /// `flow_sleep`: a thread ahead of its share reaps what it has in
    /// flight and sleeps this long; 0: it spins, checking again.
    pub flow_sleep: Nanos,
    /// `exitall`: when this job ends, the jobs of its group (or all jobs)
    /// end too.
    pub exitall: Option<ExitScope>,
    /// `ss`: the job ends once its measurements are steady.
    pub steady: Option<SteadyState>,
    /// `latency_target`: each thread searches for the deepest queue that
    /// meets a latency, as fio does.
    pub latency_target: Option<LatencyTarget>,
    /// `max_latency`: each thread ends with an error at its first
    /// completion whose total latency is above its direction's bound, as
    /// fio's do (crate `max_latency`).
    pub max_latency: Option<crate::max_latency::MaxLatency>,
    /// `trace`: the job replays a block trace instead of drawing its
    /// requests (docs/TRACES.md).
    pub trace: Option<crate::trace::TraceJob>,
    /// How a random job's offsets are drawn (`norandommap`,
    /// `random_generator`).
    pub random_map: RandomMap,
    /// fio's `random_distribution`: which blocks a random job favours.
    pub random_distribution: Distribution,
}

impl IoShape {
    /// Whether the job makes fio's `fsync` or `fdatasync` calls every few
    /// writes.
    pub fn syncs(&self) -> bool {
        self.fsync > 0 || self.fdatasync > 0
    }
}

/// fio's latency-target search (`latency_target`, `latency_window`,
/// `latency_percentile`; fio's target.c): a thread starts at depth 1 and,
/// after each window, doubles its depth (or bisects towards the lowest
/// depth that failed) while `percentile` percent of the I/Os completed in
/// the window took at most `target` from issue to completion, and bisects
/// down when they did not. When the depth stops changing it runs one more
/// window, measured alone, and ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyTarget {
    /// Latency an I/O must not exceed (> 0).
    pub target: Nanos,
    /// Time each depth is tried for (0: the search decides after every
    /// completion, as fio's default does).
    pub window: Nanos,
    /// Percent of the window's I/Os that must meet the target, in
    /// (0, 100]; at 100 one late I/O lowers the depth at once.
    pub percentile: f64,
}

/// fio's `sync`: how a buffered job's file is opened for its writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncWrites {
    /// Neither flag: a write returns once its pages are in the cache.
    #[default]
    None,
    /// `O_SYNC`: each write returns once its pages are written back and
    /// the inode's changes committed (`generic_write_sync`, `fsync`'s
    /// path over the written range).
    Sync,
    /// `O_DSYNC`: the same without the commit of the inode's times
    /// (`fdatasync`'s path).
    Dsync,
}

/// Which jobs `exitall` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitScope {
    /// The jobs of the same group (fio's default `exit_what=group`).
    Group,
    /// Every job, and no later group starts (`exit_what=all`).
    All,
}

/// fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`): one sample
/// of the job's IOPS or bandwidth per second after `ramp`; the job ends
/// when the last `dur` of samples meet the criterion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyState {
    /// What is sampled.
    pub metric: SteadyMetric,
    /// Judge the slope of a least-squares line through the samples
    /// (`_slope`) instead of their largest deviation from their mean.
    pub slope: bool,
    /// The criterion's limit, in percent of the mean when `percent`.
    pub limit: f64,
    /// `limit` is a percentage of the samples' mean.
    pub percent: bool,
    /// `ss_dur`: the window of samples judged (whole seconds, >= 1 s).
    pub dur: Nanos,
    /// `ss_ramp`: time after the job's start before sampling begins.
    pub ramp: Nanos,
}

/// What steady-state detection samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteadyMetric {
    /// Completed requests per second.
    Iops,
    /// Completed bytes per second.
    Bw,
}

/// Rate caps per direction (fio's `rate_iops=R,W` and `rate=R,W`): each
/// direction is paced on a schedule of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectionRates {
    /// What the caps count.
    pub unit: RateUnit,
    /// The reads' cap; `None`: reads are not capped.
    pub read: Option<u64>,
    /// The writes' cap; `None`: writes are not capped.
    pub write: Option<u64>,
}

impl DirectionRates {
    /// The cap of reads (`write` false) or writes.
    pub fn of(&self, write: bool) -> Option<u64> {
        if write {
            self.write
        } else {
            self.read
        }
    }
}

/// fio's floor on a thread's rate (`ratemin`, `rate_iops_min`): from two
/// seconds after the job's start (after its ramp), once every `cycle`,
/// a direction whose rate over the cycle fell under its floor ends the
/// thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinRate {
    /// The floor of each direction (`None`: none).
    pub floor: DirectionRates,
    /// `ratecycle`: how long each rate is taken over.
    pub cycle: Nanos,
}

/// What a rate cap counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateUnit {
    /// Requests per second (`rate_iops`), each the direction's smallest
    /// size's worth of bytes as fio counts them.
    Iops,
    /// Bytes per second (`rate`).
    Bytes,
}

/// One entry of `bssplit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsShare {
    /// Block size in bytes: positive, a multiple of 512 unless the job
    /// goes through the page cache.
    pub bytes: u64,
    /// Percent of requests of this size.
    pub percent: u32,
}
