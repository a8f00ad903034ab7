//! The jobs mapped onto a scenario: the device and host profiles, CPUs as
//! application cores, each job's engine, depths, size and caps checked
//! against one another and the device, and the strategies to compare.

use std::collections::BTreeSet;

use cint_policy::config::{AdaptiveParams, CinterruptsParams};
use cint_policy::{Nanos, PolicyConfig};
use cint_scenario::job::QueueDepths;
use cint_scenario::{
    CompletionMode, DeviceProfile, DirectionRates, EmuConfig, Engine, HostProfile, IoJob, IoShape,
    Job, RateUnit, Rw, Scenario, Schedule, SqPoll, Strategy, SyncWrites, Work,
};

use super::diag::Diagnostics;
use super::job::{At, JobSpec, KeyLine, SizeSpec};
use super::schedule::Timeline;
use super::shape::{job_cap, job_shape, JobCap};
use super::{FioArgs, FioError};

/// The scenario of `specs` on the profiles and strategies `args` names.
pub(super) fn build(
    specs: Vec<JobSpec>,
    args: &FioArgs,
    diag: &mut Diagnostics,
) -> Result<Scenario, FioError> {
    let device = DeviceProfile::builtin(&args.device).ok_or_else(|| {
        diag.err_file(format!(
            "unknown device profile '{}' (known: {})",
            args.device,
            cint_scenario::profiles::DEVICE_MODELS.join(", ")
        ))
    })?;
    let mut host = HostProfile::builtin(&args.host).ok_or_else(|| {
        diag.err_file(format!(
            "unknown host profile '{}' (known: {})",
            args.host,
            cint_scenario::profiles::HOST_MODELS.join(", ")
        ))
    })?;
    // The threads are placed before the overrides apply: an override of
    // the CPU count is read here, and checked with the others after.
    if let Some(online) = override_of(&args.sets, "host.online_cpus").and_then(|v| v.parse().ok()) {
        host.online_cpus = online;
    }

    let timeline = Timeline::new(&specs, args.default_duration, diag)?;
    // fio pins to machine CPU numbers; the model has application cores
    // 0..n, so the distinct CPUs the threads run on become cores in
    // ascending order.
    let placed = placements(&specs, &timeline.groups, host.online_cpus);
    let named_cpus: BTreeSet<u32> = placed
        .iter()
        .flat_map(|p| p.cpus.iter())
        .copied()
        .chain(specs.iter().filter_map(sq_thread_cpu))
        .collect();
    // On a host with hardware threads, where every CPU used is one of the
    // profile's own, the machine's numbers stay, and with them which CPUs
    // are one core's threads (Linux's numbering, which the profile
    // follows). Elsewhere the CPUs used become cores 0..n in ascending
    // order, which loses the siblings: such a host has no SMT.
    let keep_numbering = host.smt.is_some() && named_cpus.iter().all(|&c| c < host.cores);
    let core_of = |cpu: u32| match keep_numbering {
        true => cpu,
        false => named_cpus.iter().position(|&c| c == cpu).unwrap_or(0) as u32,
    };
    if !keep_numbering {
        host.cores = named_cpus.len().max(1) as u32;
        // One thread per core says so to the scenario's check, which
        // would otherwise take the profile's SMT back.
        if let Some(smt) = &mut host.smt {
            smt.threads_per_core = 1;
        }
    }

    let mut jobs = Vec::with_capacity(specs.len());
    for ((spec, &group), place) in specs.iter().zip(&timeline.groups).zip(&placed) {
        let cores: Vec<u32> = place.cpus.iter().copied().map(core_of).collect();
        let mut job = job(
            spec,
            &device,
            &timeline,
            group,
            cores.first().copied().unwrap_or(0),
            diag,
        )?;
        if cores.len() > 1 {
            job.cpus = cores;
        }
        if let Work::Io(io) = &mut job.work {
            io.sqpoll = sq_poll(spec, io.engine, io.direct, diag)?.map(|cpu| SqPoll {
                cpu: cpu.map(core_of),
            });
            synchronous_writes(spec, io, diag)?;
            final_fsync(spec, io, diag);
            warn_of_a_warm_cache(spec, io, diag);
        }
        jobs.push(job);
    }
    let hipri_jobs = specs
        .iter()
        .filter(|s| s.hipri.is_some_and(|h| h.value))
        .count();
    placement_warning(&specs, &timeline.groups, &placed, host.online_cpus, diag);
    let strategies = match &args.strategies {
        Some(s) if s.is_empty() => return Err(diag.err_file("no strategy to compare".into())),
        Some(s) => s.clone(),
        None => default_strategies(&device, hipri_jobs == jobs.len()),
    };
    Ok(Scenario {
        name: args.name.clone().unwrap_or_else(|| "fio".into()),
        source: diag.file().into(),
        seed: args.seed,
        duration: timeline.duration,
        warmup: timeline.warmup,
        run_to_end: timeline.runs_to_end(),
        device,
        host,
        strategies,
        jobs,
        emu: EmuConfig::default(),
        virt: Default::default(),
        apps: Default::default(),
        sched_groups: Default::default(),
        origins: Default::default(),
    })
}

/// One job of the scenario: `spec` in `group`, pinned to application
/// core `core`.
fn job(
    spec: &JobSpec,
    device: &DeviceProfile,
    timeline: &Timeline,
    group: u32,
    core: u32,
    diag: &mut Diagnostics,
) -> Result<Job, FioError> {
    let engine = spec.engine.map_or(Engine::Psync, |e| e.value);
    let depths = queue_depths(spec, engine, diag)?;
    let nowait = check_engine_flags(spec, engine, diag)?;
    let capacity = device.capacity.0;
    let bs = spec.bs.map_or(4096, |b| b.value);
    let sectors = requests_of_whole_sectors(spec, bs);
    // fio takes the files `filename` names over `nrfiles` (options.c
    // `str_filename_cb`). A job that runs for its time goes over them as
    // over one: which file a request goes to changes nothing measured.
    let files = spec.filenames.or(spec.nrfiles).filter(|n| n.value > 1);
    if let Some(files) = files.filter(|_| !spec.direct.is_some_and(|d| d.value)) {
        diag.job_warn(
            &spec.name,
            files.line,
            format!(
                "{} on a buffered job: the model's page cache keeps their pages, read-ahead \
                 and writeback as one file's",
                files_named(spec, files.value)
            ),
        );
    }
    let (whole, file) = match files.filter(|_| !spec.time_based) {
        Some(files) => several_files(spec, files, bs, capacity, diag)?,
        None => {
            let whole = job_size(spec, capacity, bs, sectors, diag)?;
            (whole, job_file(spec, whole, sectors, capacity, diag)?)
        }
    };
    let size = io_share(spec, whole, bs, diag)?;
    let rw = spec.rw.map_or(Rw::Read, |r| r.value);
    let mut shape = job_shape(spec, rw, bs, diag)?;
    fit_shape_to_engine(spec, engine, &mut shape, diag)?;
    // "Any use of blockalign= turns off randommap" (init.c), when it
    // differs from the smallest size; fio's LFSR keeps no map anyway.
    let smallest = cint_scenario::shape::smallest_block(&shape, bs);
    if spec.blockalign.is_some_and(|ba| ba.value != smallest)
        && shape.random_map == cint_scenario::RandomMap::Map
    {
        shape.random_map = cint_scenario::RandomMap::Off;
    }
    let pass = end_after_size(spec, (file, size, bs), engine, &mut shape, diag)?;
    let bs = smallest;
    mark_passes(spec, (rw, file, size, bs), pass, &mut shape);
    refuse_split_sizes_under_the_map(spec, rw, bs, &shape, diag)?;
    refuse_floor_above_cap(spec, diag)?;
    shape.rate_min = min_rate(spec, rw, timeline.length(spec), diag);
    // fio ignores rwmixread unless the job mixes reads and writes.
    let rwmixread = spec
        .rwmixread
        .filter(|_| rw.is_mixed())
        .map_or(50, |r| r.value);
    let byte_cap = shape.rate.is_some() || shape.rate_per_direction.is_some();
    let iops_cap = spec.rate_iops_dirs.map_or(JobCap::None, |caps| {
        job_cap(spec, "rate_iops", caps, rw, rwmixread, diag)
    });
    if iops_cap != JobCap::None && byte_cap {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.rate),
            "rate together with rate_iops is not supported",
        ));
    }
    let rate_iops = match iops_cap {
        JobCap::None => None,
        JobCap::One(cap) => Some(cap),
        JobCap::PerDirection(read, write) => {
            let unit = RateUnit::Iops;
            shape.rate_per_direction = Some(DirectionRates { unit, read, write });
            None
        }
    };
    Ok(Job {
        name: spec.name.clone(),
        cpu: core,
        cpus: Vec::new(),
        numjobs: spec.numjobs.map_or(1, |n| n.value),
        runtime: timeline.job_end(spec),
        work: Work::Io(IoJob {
            engine,
            rw,
            bs,
            iodepth: depths.iodepth,
            batch: depths.batch,
            batch_complete_min: depths.complete_min,
            batch_complete_max: depths.complete_max,
            iodepth_low: depths.low,
            hint: None,
            nowait,
            hipri: spec.hipri.is_some_and(|h| h.value),
            direct: spec.direct.is_some_and(|d| d.value),
            fadvise_hint: spec.fadvise_hint.is_none_or(|f| f.value),
            gtod_reduce: spec.gtod_reduce.is_some_and(|g| g.value),
            offload: spec.offload.is_some(),
            sqpoll: None,
            rate_iops,
            think: 0,
            size: file,
            rwmixread,
            shape: Box::new(shape),
        }),
        schedule: Schedule {
            group,
            startdelay: spec.startdelay.map_or(0, |d| d.value),
        },
        guest: None,
    })
}

/// The queue depth and batches as fio runs them: 1 with a synchronous
/// engine, the batches capped at the depth.
fn queue_depths(
    spec: &JobSpec,
    engine: Engine,
    diag: &mut Diagnostics,
) -> Result<QueueDepths, FioError> {
    let iodepth = spec.iodepth.map_or(1, |d| d.value);
    let (iodepth, batch, complete_min) = if spec.offload.is_some() {
        // iodepth workers, each submitting and reaping one request.
        for b in [spec.batch, spec.batch_complete_min].into_iter().flatten() {
            if b.value > 1 {
                diag.job_warn(
                    &spec.name,
                    b.line,
                    String::from(
                        "iodepth_batch_submit and iodepth_batch_complete_min have no effect \
                         with io_submit_mode=offload: each worker submits and reaps one request \
                         at a time; using 1",
                    ),
                );
            }
        }
        (iodepth, 1, 1)
    } else if engine.is_sync() {
        if let Some(d) = spec.iodepth.filter(|d| d.value > 1) {
            diag.job_warn(
                &spec.name,
                d.line,
                format!(
                    "iodepth={} has no effect with a synchronous engine (as in fio); using 1",
                    d.value
                ),
            );
        }
        (1, 1, 1)
    } else {
        // fio's init.c `fixup_options`: a batch of 0 is the depth.
        let batch = spec
            .batch
            .map_or(1, |b| if b.value == 0 { iodepth } else { b.value })
            .min(iodepth);
        let complete_min = spec.batch_complete_min.map_or(1, |b| b.value).min(iodepth);
        (iodepth, batch, complete_min)
    };
    // fio: iodepth_batch_complete_max defaults to ..._min; below it
    // fio would reap fewer than it waits for.
    let complete_max = match spec.batch_complete_max {
        _ if spec.offload.is_some() => 1,
        None => complete_min,
        Some(m) if m.value < complete_min => {
            return Err(diag.job_err(
                &spec.name,
                m.line,
                format!(
                    "iodepth_batch_complete_max={} is below \
                     iodepth_batch_complete_min={complete_min}",
                    m.value
                ),
            ));
        }
        Some(m) => m.value.min(iodepth),
    };
    Ok(QueueDepths {
        iodepth,
        batch,
        complete_min,
        complete_max,
        low: low_water(spec, engine, iodepth, diag),
    })
}

/// fio's `iodepth_low`, as its init.c `fixup_options` makes it: 0 or
/// above the depth is the depth. It only acts where fio's loop waits for
/// a full queue (backend.c `wait_for_completions`), which neither a
/// synchronous engine's nor an offloaded loop does: warned there.
fn low_water(spec: &JobSpec, engine: Engine, iodepth: u32, diag: &mut Diagnostics) -> u32 {
    let Some(low) = spec.iodepth_low.filter(|l| l.value > 0) else {
        return iodepth;
    };
    let given_depth = spec.iodepth.map_or(1, |d| d.value);
    let idle = if spec.offload.is_some() {
        Some("with io_submit_mode=offload: fio's offloaded loop never waits for a full queue")
    } else if engine.is_sync() {
        Some("with a synchronous engine (as in fio)")
    } else {
        None
    };
    match idle {
        Some(why) if low.value < given_depth => {
            diag.job_warn(
                &spec.name,
                low.line,
                format!("iodepth_low={} has no effect {why}", low.value),
            );
            iodepth
        }
        Some(_) => iodepth,
        None => low.value.min(iodepth),
    }
}

/// fio's `sync` (`O_SYNC`, or `O_DSYNC`). On buffered writes each write
/// is written back within its call (`generic_write_sync`): the job's
/// `sync`. On direct writes Linux 5.0 sets `REQ_FUA` on each write's bio
/// (fs/block_dev.c `dio_bio_write_op`) and, after a synchronous write,
/// flushes (`generic_write_sync`, then `blkdev_fsync` and
/// `blkdev_issue_flush`); for a device without a volatile write cache, as
/// the model's are, the block layer drops both (block/blk-core.c
/// `generic_make_request_checks`), so nothing reaches the device: warned,
/// as on buffered io_uring, which runs as direct I/O here. Reads it does
/// not touch.
fn synchronous_writes(
    spec: &JobSpec,
    io: &mut IoJob,
    diag: &mut Diagnostics,
) -> Result<(), FioError> {
    let Some(mode) = spec.sync.filter(|s| s.value != SyncWrites::None) else {
        return Ok(());
    };
    if io.rw.only_reads() {
        diag.job_warn(
            &spec.name,
            mode.line,
            "sync has no effect on a job that only reads",
        );
    } else if !io.through_page_cache() {
        diag.job_warn(
            &spec.name,
            mode.line,
            "sync on O_DIRECT writes: Linux marks each write FUA and flushes after a \
             synchronous one, and drops both for a device without a volatile write cache, as \
             the model's are; the flush's CPU inside the call is not modelled (nor is a \
             direct fsync's)",
        );
    } else {
        io.shape.sync_writes = mode.value;
    }
    Ok(())
}

/// fio's `end_fsync` and `fsync_on_close`: after the job's loop, with
/// what was in flight reaped, an `fsync` of its file where its last call
/// was no sync and it writes (backend.c `do_io`, `should_fsync`), inside
/// the job's runtime (`update_runtime` reads the clock after it). On
/// buffered writes that call writes back every page the job left dirty
/// (fio 3.33 here, 256 MiB of 64 KiB buffered writes: 38 ms, 6.9 GB/s
/// without it, 98 ms, 2.7 GB/s with it; with `runtime=20ms`, 21 and 66
/// ms): the scenario's `end_fsync`, the run waiting for it
/// ([`super::schedule::Timeline`]). Direct writes, and `O_SYNC` ones,
/// leave no dirty pages, and the model's devices take no flush: the call
/// is a system call's time, warned. A job that only reads makes no such
/// call.
fn final_fsync(spec: &JobSpec, io: &mut IoJob, diag: &mut Diagnostics) {
    let Some(option) = spec.final_fsync else {
        return;
    };
    let name = option.value;
    if spec.flushes_at_its_end() {
        io.shape.end_fsync = true;
    } else if io.rw.only_reads() {
        diag.job_warn(
            &spec.name,
            option.line,
            format!("{name} has no effect on a job that only reads (fio syncs a job that writes)"),
        );
    } else {
        diag.job_warn(
            &spec.name,
            option.line,
            format!(
                "{name}: fio's fsync after the job's last write finds no dirty pages on \
                 O_DIRECT or O_SYNC writes, and the model's devices take no flush; the call's \
                 own time, within fio's runtime, is not modelled"
            ),
        );
    }
}

/// fio's `invalidate=0`: fio does not drop the file's pages from the
/// page cache before the job (its default does, filesetup.c
/// `file_invalidate_cache`), so a buffered job's reads hit what an
/// earlier job or run left there. Its own layout of a new file drops the
/// pages it wrote either way (`__file_invalidate_cache` after
/// `extend_file`). The model's page cache starts empty, as after the
/// default: warned where a buffered job reads, since what fio finds
/// cached lies outside the job file; elsewhere it changes nothing
/// (warned too).
fn warn_of_a_warm_cache(spec: &JobSpec, io: &IoJob, diag: &mut Diagnostics) {
    let Some(kept) = spec.keeps_cache else {
        return;
    };
    let reads = !matches!(io.rw, Rw::Write | Rw::RandWrite);
    let what = if io.through_page_cache() && reads {
        "invalidate=0: fio leaves what the page cache holds of the file from an earlier job or \
         run (its own layout drops the pages it wrote), and its buffered reads hit it; the \
         model's page cache starts empty, as after fio's default invalidate=1"
    } else {
        "invalidate=0 changes nothing here: the job reads nothing through the page cache"
    };
    diag.job_warn(&spec.name, kept.line, what);
}

/// The CPU that `sqthread_poll_cpu` names for a job that polls its
/// submission queue.
fn sq_thread_cpu(spec: &JobSpec) -> Option<u32> {
    spec.sqpoll_cpu
        .filter(|_| spec.sqpoll.is_some_and(|s| s.value))
        .map(|c| c.value)
}

/// `sqthread_poll` (an io_uring option) and its CPU: `None` without it,
/// else the machine CPU of its SQ thread, if named. fio ignores
/// `sqthread_poll_cpu` without `sqthread_poll`; so does the import, with
/// a warning.
fn sq_poll(
    spec: &JobSpec,
    engine: Engine,
    direct: bool,
    diag: &mut Diagnostics,
) -> Result<Option<Option<u32>>, FioError> {
    let Some(on) = spec.sqpoll.filter(|s| s.value) else {
        if let Some(c) = spec.sqpoll_cpu {
            diag.job_warn(
                &spec.name,
                c.line,
                "sqthread_poll_cpu has no effect without sqthread_poll",
            );
        }
        return Ok(None);
    };
    let refused = if engine != Engine::IoUring {
        Some("sqthread_poll is an option of ioengine=io_uring")
    } else if !direct {
        Some("sqthread_poll with buffered I/O (direct=0) is not modelled")
    } else {
        None
    };
    if let Some(why) = refused {
        return Err(diag.job_err(&spec.name, on.line, why));
    }
    if spec.sqpoll_cpu.is_none() {
        diag.job_warn(
            &spec.name,
            on.line,
            "no sqthread_poll_cpu: the model runs each SQ thread on the core of the thread \
             that fills its ring (Linux 5.11 and later give it that thread's CPU mask; an \
             unpinned job's would move to an idle CPU)",
        );
    }
    Ok(Some(sq_thread_cpu(spec)))
}

/// Refuses `hipri` and `nowait` where the engine cannot honour them;
/// returns whether the job asks for `nowait`.
fn check_engine_flags(
    spec: &JobSpec,
    engine: Engine,
    diag: &mut Diagnostics,
) -> Result<bool, FioError> {
    if let Some(h) = spec.hipri.filter(|h| h.value) {
        if !matches!(engine, Engine::Pvsync2 | Engine::IoUring) {
            return Err(diag.job_err(
                &spec.name,
                h.line,
                "hipri needs ioengine=pvsync2 or io_uring",
            ));
        }
    }
    let nowait = spec.nowait.is_some_and(|n| n.value);
    if nowait && engine != Engine::Pvsync2 {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.nowait),
            "nowait is modelled for ioengine=pvsync2 only (RWF_NOWAIT)",
        ));
    }
    if nowait && !spec.direct.is_some_and(|d| d.value) {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.nowait),
            cint_scenario::model::BUFFERED_NOWAIT,
        ));
    }
    Ok(nowait)
}

/// The job's size: `size` (bytes, or a share of its file or the device),
/// at most what the thread's start offset leaves of its file's
/// `filesize`, else that, else the whole device; between `bs` and the
/// capacity, and whole sectors unless every request is (`sectors`,
/// [`requests_of_whole_sectors`]). Every thread of the job must get the
/// same.
fn job_size(
    spec: &JobSpec,
    capacity: u64,
    bs: u64,
    sectors: bool,
    diag: &mut Diagnostics,
) -> Result<u64, FioError> {
    let threads = threads_of(spec);
    let size = size_from(spec, capacity, bs, spec.start_offset(0));
    // What the offset leaves of the file, or of the device without a size.
    let whole = match (spec.filesize, spec.size) {
        (Some(file), _) => Some(("filesize", file.value)),
        (None, None) => Some(("the device's capacity", capacity)),
        (None, Some(_)) => None,
    };
    let too_far = |of: u64| spec.offset.is_some() && of.saturating_sub(spec.start_offset(0)) < bs;
    if let Some((what, of)) = whole.filter(|&(_, of)| too_far(of)) {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.offset),
            format!(
                "offset {} leaves less than bs ({bs}) of {what} ({of}): fio stops the job \
                 (\"blocksize is larger than data set range\")",
                spec.start_offset(0),
            ),
        ));
    }
    // Threads that run for a time or a count go over their regions alike.
    let ends_by_size = !spec.time_based && spec.number_ios.is_none();
    let last = size_from(spec, capacity, bs, spec.start_offset(threads - 1));
    if last != size && ends_by_size {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.offset_increment),
            format!(
                "offset_increment with numjobs={threads} leaves the job's threads {size} to \
                 {last} bytes past their offsets; the model runs a job's threads alike: give \
                 them a size they all have room for, or a job each"
            ),
        ));
    }
    if let Some(at) = spec.offset_percent.filter(|_| several_passes(spec, size)) {
        return Err(diag.job_err(
            &spec.name,
            at.line,
            "a percentage offset on a job of several passes: fio takes it from the file's \
             size as each pass starts, which for a file it lays out is 0 on the first pass \
             only, so how many requests the later passes make turns on the file before the \
             run; give the offset in bytes",
        ));
    }
    let size_at = spec.size.map(|s| s.line).or(spec.filesize.map(|f| f.line));
    if let Some(line) = size_at {
        if size > capacity || size < bs {
            return Err(diag.job_err(
                &spec.name,
                line,
                format!(
                    "size must be between bs ({bs}) and the device capacity ({capacity}), \
                     got {size}"
                ),
            ));
        }
        if size % 512 != 0 && !sectors {
            return Err(diag.job_err(&spec.name, line, not_whole_sectors("size", size)));
        }
    }
    Ok(size)
}

/// The bytes a thread starting `offset` into its file goes over: fio's
/// `setup_files` (filesetup.c). With a `filesize`, the file's region is
/// what lies past the offset (`file_size_low - file_offset`), which caps
/// `size`, and a share (`size=P%`) is of the whole file, capped at the
/// region, in whole blocks. Without one, fio lays the file out to the
/// offset and the size, so the offset moves requests only; without a
/// size either, the job goes over the device from its offset on.
fn size_from(spec: &JobSpec, capacity: u64, bs: u64, offset: u64) -> u64 {
    let file = spec.filesize.map(|f| f.value);
    let region = file.map(|f| f.saturating_sub(offset));
    match (spec.size.map(|s| s.value), file, region) {
        // Over the whole device, from the offset on (a device's region is
        // `real_file_size - file_offset` in fio), in whole sectors.
        (None, _, region) => region.unwrap_or(capacity.saturating_sub(offset) / 512 * 512),
        // fio caps a job's size at its file's (filesetup.c `setup_files`:
        // `o->size > total_size`): `size=1m filesize=512k` reads 128
        // blocks of 4 KiB in fio 3.33, 256 before 2026-11-29 here.
        (Some(SizeSpec::Bytes(b)), _, region) => region.map_or(b, |r| b.min(r)),
        (Some(SizeSpec::Percent(p)), Some(f), Some(region)) => {
            let share = u64::try_from(u128::from(f) * u128::from(p) / 100).unwrap_or(f);
            let share = share.min(region);
            share - share % bs.max(1)
        }
        (Some(SizeSpec::Percent(p)), _, _) => capacity / 100 * p / 512 * 512,
    }
}

/// The file the job's requests land in: what its start offset leaves of
/// its `filesize`, where that is larger than the job's `size`, which is
/// then only fio's byte limit over it (filesetup.c `setup_files` keeps
/// `f->io_size` the file's, and `o->size` the bytes; `size=100k
/// filesize=256k bs=8k` writes 13 requests in fio 3.33, the last past
/// 100 KiB); else the job's size. In whole sectors: where every request
/// is (`sectors`), a request fits the file exactly where it fits its
/// whole sectors, so the sectors are the file (`size=1MiB`, which fio
/// reads as 1 000 000 bytes, holds 244 requests of 4 KiB either way).
/// The job's size stays fio's byte limit as it is: issued bytes of whole
/// sectors reach it where they reach it rounded up, not down.
fn job_file(
    spec: &JobSpec,
    size: u64,
    sectors: bool,
    capacity: u64,
    diag: &mut Diagnostics,
) -> Result<u64, FioError> {
    let file = match spec.filesize {
        None => size,
        Some(file) => {
            let region = file.value.saturating_sub(spec.start_offset(0));
            if region > capacity {
                return Err(diag.job_err(
                    &spec.name,
                    file.line,
                    format!(
                        "filesize ({}) is past the device capacity ({capacity})",
                        file.value
                    ),
                ));
            }
            region.max(size)
        }
    };
    if file % 512 != 0 && !sectors {
        let what = "the file past the offset";
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.filesize),
            not_whole_sectors(what, file),
        ));
    }
    Ok(file / 512 * 512)
}

/// The refusal of a size or file that is not whole sectors where the
/// job's requests are not all whole sectors either.
fn not_whole_sectors(what: &str, bytes: u64) -> String {
    format!(
        "{what} ({bytes} bytes) is not whole sectors, nor are all the job's requests: where \
         the last ones fit turns on bytes the model does not keep; give it in whole sectors"
    )
}

/// fio's `nrfiles`: each thread of the job goes over several files, each
/// laid out at its `filesize`, or at an even share of the `size`, the
/// first ones a request larger where the share leaves bytes over
/// (filesetup.c `setup_files`, `nr_fs_extra`). Requests go to the files
/// in turn (`file_service_type`), which a direct job's service does not
/// depend on, and a pass ends once every file has reached its end, so it
/// is each file's whole requests (a buffered job's page cache keeps the
/// files as one, warned by [`job`]). The model's one file is those passes
/// end to end, and of the bytes past them no more than leave less than a
/// request, in whole sectors: the pass ends there as fio's does, short of
/// the job's size where fio's is (its loop then looks once more, and
/// makes the sync due). The job's size stays fio's byte limit, at most
/// the files' bytes. fio 3.33, 4 KiB requests, `nrfiles=3`: `size=1m`
/// reads 255 (three files of 349 525 bytes), `fsync=1` writes make 255
/// fsyncs under psync and libaio, 511 over two loops under libaio;
/// `randread norandommap` reads 256; `filesize=64k` 48, and 25 with
/// `size=100k`. Not for a job that runs for its time, which goes over
/// them as over one file. Returns the job's size and file.
fn several_files(
    spec: &JobSpec,
    files: At<u64>,
    bs: u64,
    capacity: u64,
    diag: &mut Diagnostics,
) -> Result<(u64, u64), FioError> {
    let n = files.value;
    let named = files_named(spec, n);
    if let Some(what) = decided_by_each_file(spec) {
        return Err(diag.job_err(
            &spec.name,
            files.line,
            format!("{named} with {what}; the model runs one file a job"),
        ));
    }
    // The files' bytes, and the bytes of their whole requests.
    let size = spec.size.map(|s| s.value);
    let bs = bs.max(1);
    let whole = |file: u64| file - file % bs;
    let (bytes, passes) = match (spec.filesize, size) {
        (Some(file), _) => (
            file.value.saturating_mul(n),
            whole(file.value).saturating_mul(n),
        ),
        (None, Some(SizeSpec::Bytes(total))) => {
            let share = total / n;
            let larger = (total - share * n) / bs;
            let first = whole(share + bs).saturating_mul(larger);
            (
                total,
                first.saturating_add(whole(share).saturating_mul(n - larger)),
            )
        }
        (None, _) => (0, 0),
    };
    let limit = match size {
        Some(SizeSpec::Bytes(b)) => b.min(bytes),
        _ => bytes,
    };
    if bytes > capacity || passes < bs {
        let line = spec.line_of(&spec.filesize).max(spec.line_of(&spec.size));
        return Err(diag.job_err(
            &spec.name,
            line,
            format!(
                "{named}: the files hold {bytes} bytes in all, {passes} of them in whole \
                 requests of {bs}: they must hold a request and fit the device \
                 ({capacity})"
            ),
        ));
    }
    if limit < bs {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.size),
            format!(
                "size ({limit}) is less than bs ({bs}): fio refuses the job (\"size too \
                 small, must not be less than minimum block size\")"
            ),
        ));
    }
    let over = (limit.max(passes) - passes).min(bs.saturating_sub(512)) / 512 * 512;
    Ok((limit, passes + over))
}

/// How a job's `n` files are named in what the import says of them.
fn files_named(spec: &JobSpec, n: u64) -> String {
    match spec.filenames {
        Some(_) => format!("{n} files in filename"),
        None => format!("nrfiles={n}"),
    }
}

/// What of a job that ends by its size turns on each of its several
/// files' own offsets or end, which the model's one file does not keep.
fn decided_by_each_file(spec: &JobSpec) -> Option<&'static str> {
    let several_sizes = spec.bssplit.is_some() || spec.bsrange.is_some() || spec.bs_write.is_some();
    let size = spec.size.map(|s| s.value);
    let offset = spec.offset.is_some() || spec.offset_increment.is_some();
    if offset || spec.offset_percent.is_some() {
        Some("an offset, at which fio starts each of the files")
    } else if matches!(size, Some(SizeSpec::Percent(_))) {
        Some("a size as a percentage, which fio takes of each file")
    } else if size.is_none() && spec.filesize.is_none() {
        Some("neither size nor filesize: fio needs one to lay the files out")
    } else if spec.io_size_percent.is_some() {
        Some("an io_size share, which fio takes of each file")
    } else if spec.seq_step.is_some_and(|s| s.value != 0) {
        Some("an offset step, which fio takes in each file")
    } else if several_sizes {
        Some("requests of several sizes: each file's pass ends within the smallest of its end")
    } else if spec.rw.is_some_and(|r| r.value == Rw::ReadWrite) {
        Some("reads and writes in order: each file keeps each direction's offset")
    } else {
        None
    }
}

/// Whether every request the job may make is whole sectors: `bs` (and
/// the writes' own), each size of its splits, and its ranges' bounds (fio
/// draws a range's sizes as multiples of its lower bound, or the upper).
fn requests_of_whole_sectors(spec: &JobSpec, bs: u64) -> bool {
    let splits = spec.bssplit.iter().flat_map(|b| b.value.iter());
    let splits = splits.chain(&spec.bssplit_write).map(|s| s.bytes);
    let ranges = spec
        .bsrange
        .map(|r| r.value)
        .into_iter()
        .chain(spec.bsrange_write);
    std::iter::once(bs)
        .chain(spec.bs_write.map(|w| w.value))
        .chain(splits)
        .chain(ranges.flat_map(|(lo, hi)| [lo, hi]))
        .all(|b| b % 512 == 0)
}

/// The job's bytes where `io_size` is a share (`io_size=P%`): fio sums
/// that share of each file's bytes (`f->io_size`: the region past the
/// offset of a given `filesize`, a `size=P%` share of it, else the job's
/// size) and caps the job's size there (filesetup.c `setup_files`,
/// `io_size_percent`, then `o->size > total_size`). fio 3.33, 4 KiB
/// reads: `io_size=50% size=1m`, 128; `size=200k filesize=256k
/// io_size=50%`, 32; `size=100k filesize=256k io_size=50%` its 25, the
/// share being past the size.
fn io_share(spec: &JobSpec, size: u64, bs: u64, diag: &mut Diagnostics) -> Result<u64, FioError> {
    let Some(share) = spec.io_size_percent else {
        return Ok(size);
    };
    let file = match (spec.filesize, spec.size) {
        (
            Some(_),
            Some(At {
                value: SizeSpec::Percent(_),
                ..
            }),
        )
        | (None, _) => size,
        (Some(file), _) => file.value.saturating_sub(spec.start_offset(0)),
    };
    let bytes = u64::try_from(u128::from(file) * u128::from(share.value) / 100).unwrap_or(file);
    let bytes = bytes.min(size);
    if bytes < bs {
        return Err(diag.job_err(
            &spec.name,
            share.line,
            format!(
                "io_size={}% leaves {bytes} bytes, less than bs ({bs}): fio stops the job \
                 (\"blocksize is larger than data set range\")",
                share.value
            ),
        ));
    }
    Ok(bytes)
}

/// Whether a job that ends by its size goes over its file more than
/// once: `loops`, or an `io_size` past the file.
fn several_passes(spec: &JobSpec, size: u64) -> bool {
    !spec.time_based && (spec.loops > 1 || spec.io_size.is_some_and(|b| b.value > size))
}

/// Refuses what the engine cannot do with the shape (io_uring's
/// asynchronous syncs) and drops what it makes no difference to (a
/// barrier on a synchronous engine, with a warning).
fn fit_shape_to_engine(
    spec: &JobSpec,
    engine: Engine,
    shape: &mut IoShape,
    diag: &mut Diagnostics,
) -> Result<(), FioError> {
    for sync in [spec.fsync, spec.fdatasync].into_iter().flatten() {
        if sync.value > 0 && engine == Engine::IoUring {
            return Err(diag.job_err(
                &spec.name,
                sync.line,
                "io_uring's asynchronous fsync (IORING_OP_FSYNC) is not \
                 modelled; fsync and fdatasync run with psync, pvsync2 or libaio",
            ));
        }
    }
    if shape.barrier_last && engine.is_sync() {
        diag.job_warn(
            &spec.name,
            spec.line_of(&spec.barrier),
            "barrier marks the last iocb of each io_submit; a synchronous \
             engine submits no batches, so it changes nothing",
        );
        shape.barrier_last = false;
    }
    Ok(())
}

/// Where a job that is not time based ends: once it has done its size
/// (or `io_size`) `loops` times, as fio does, or at its runtime if that
/// comes first. Returns the bytes of each of its passes where they end
/// at one place each time: the file's end, or, under a queueing engine,
/// its size queued (in whole requests of one size) for a random job
/// without the map, or where the file is larger than the size.
fn end_after_size(
    spec: &JobSpec,
    (file, size, bs): (u64, u64, u64),
    engine: Engine,
    shape: &mut IoShape,
    diag: &mut Diagnostics,
) -> Result<Option<u64>, FioError> {
    // fio counts `number_ios` over all its loops (backend.c
    // `exceeds_number_ios`: `number_ios * td->loops`).
    if let Some(n) = shape.number_ios.as_mut() {
        *n = n.saturating_mul(spec.loops);
    }
    // Not time based, fio ends a job once it has done its size (or
    // io_size) `loops` times, or at its runtime if that comes first.
    if !spec.time_based {
        let written = spec.io_size.is_some()
            || spec.size.is_some()
            || spec.filesize.is_some()
            || spec.loops > 1;
        if written {
            // A pass ends when what is left of the file is less than a
            // request (io_u.c refuses a request past the file's end): a
            // 1000 KiB file in 64 KiB requests is read in 15.
            let largest = cint_scenario::shape::largest_block(shape, bs);
            if let Some(step) = spec.seq_step.filter(|s| s.value > 0) {
                let pass = holed_pass(spec, step, (file, size), largest, shape, diag)?;
                shape.io_size = Some(pass.saturating_mul(spec.loops));
                return Ok(None);
            }
            let rw = spec.rw.map_or(Rw::Read, |r| r.value);
            let smallest = cint_scenario::shape::smallest_block(shape, bs);
            let sizes = (smallest, largest);
            warn_a_direction_may_end_passes(spec, (rw, file, size), sizes, engine, diag);
            if spec.offload.is_some() {
                shape.io_size = Some(offloaded_bytes(spec, (file, size, smallest), rw, shape));
                return Ok(None);
            }
            if !offsets_run_out(spec, rw, shape) {
                let sizes = (size, smallest, largest);
                shape.io_size = Some(unmapped_bytes(spec, sizes, rw, engine));
                // A queueing engine's pass ends once it has queued the
                // file's size, exactly where requests of one size fill it
                // (a job in order of reads and writes ends its passes by
                // either direction's end too, which turns on the draws).
                let queued = !engine.is_sync()
                    && rw.is_random()
                    && spec.io_size.is_none()
                    && smallest == largest
                    && size % smallest.max(1) == 0;
                return Ok(queued.then_some(size));
            }
            // fio draws a request's size again until it fits what is
            // left of the file (io_u.c `get_next_buflen`), so a pass of
            // several sizes fills it to within the smallest.
            let pass = file_pass(file, smallest);
            // A queueing engine's pass also ends once it has queued the
            // job's size, which comes first where the file is larger.
            let pass = match engine.is_sync() || size >= file {
                true => pass,
                false => pass.min(queued_pass(size, (smallest, largest))),
            };
            // fio's bytes per loop: io_size, else the job's size, which
            // over a larger file is a limit within it.
            let once = spec
                .io_size
                .map(|b| b.value)
                .or((size < file).then_some(size));
            shape.io_size = Some(match once {
                None => pass.saturating_mul(spec.loops),
                // Within the file, each pass runs to the file's end or to
                // fio's limit, `io_size` times `loops`, whichever comes
                // first: `size=100k io_size=100k loops=2 bs=16k` makes two
                // passes of 96 KiB (12 requests in fio 3.33, 13 here before
                // 2026-11-29), `size=1m io_size=512k loops=2` one of 1 MiB.
                Some(once) if once <= file => pass.min(once).saturating_mul(spec.loops),
                // Past the file, fio does not repeat io_size per loop: it
                // runs its loops over the file, then more passes while
                // what is left of io_size at a pass's end is at least the
                // largest request (backend.c `keep_running`): `size=1m
                // io_size=1026k bs=4k` writes 256 requests in fio 3.33,
                // `io_size=1030k` 258.
                Some(once) => past_the_file(once, pass, spec.loops, largest),
            });
            return Ok(Some(pass));
        }
    } else if spec.loops > 1 {
        diag.job_warn(
            &spec.name,
            spec.line,
            "loops has no effect with time_based (the job runs for its runtime)",
        );
    }
    Ok(None)
}

/// fio's limit on the bytes a job issues, its `io_size` (or `size`) times
/// `loops` (backend.c `io_bytes_exceeded`).
fn fio_byte_limit(spec: &JobSpec, size: u64) -> u64 {
    spec.io_size
        .map_or(size, |b| b.value)
        .saturating_mul(spec.loops)
}

/// The bytes of a pass that runs to the file's end: the file in whole
/// requests of the smallest size, as fio draws a size again until it fits
/// what is left (io_u.c `get_next_buflen`).
fn file_pass(file: u64, smallest: u64) -> u64 {
    file - file % smallest.clamp(1, file)
}

/// The bytes of a pass that ends once it has queued `bytes` (backend.c
/// `do_io`, `total_bytes`): it queues whole requests until it has reached
/// them, so of one size the pass is whole requests (`rw=rw bs=16k
/// size=100k`: 7 of them); of several, the last one drawn decides.
fn queued_pass(bytes: u64, (smallest, largest): (u64, u64)) -> u64 {
    match smallest == largest {
        true => bytes.div_ceil(largest.max(1)).saturating_mul(largest),
        false => bytes,
    }
}

/// The bytes of an offloaded job (`io_submit_mode=offload`) that ends by
/// its size: its first pass only. fio 3.33 counts its completions on the
/// workers' side, so the pass looks as if it did nothing and the job
/// stops (backend.c `do_io`: `!ddir_rw_sum(td->this_io_bytes)` sets
/// `td->done`); nor does the pass end once it has queued the size, since
/// its queued bytes are not counted there either. It runs to the file's
/// end, or to fio's byte limit, `io_size` (or `size`) times `loops`.
/// fio 3.33 under libaio, 4 KiB requests over 1 MiB: `loops=2` reads 256,
/// `io_size=2m` 256, `randread norandommap loops=2` 512.
fn offloaded_bytes(
    spec: &JobSpec,
    (file, size, smallest): (u64, u64, u64),
    rw: Rw,
    shape: &IoShape,
) -> u64 {
    let limit = fio_byte_limit(spec, size);
    match offsets_run_out(spec, rw, shape) {
        true => limit.min(file_pass(file, smallest)),
        false => limit,
    }
}

/// fio's passes over the job's file (`pass_size`, crate
/// `cint_scenario::passes`), of `pass` bytes each where they end at one
/// place ([`end_after_size`]), where they change what the job does: more
/// than one, one short of the file, or one in order over a file of
/// several sizes, where it tells the engines where the file ends. Where
/// the offsets never run out, a random job's one pass under a
/// synchronous engine runs until the job's bytes are issued (fio 3.33,
/// `randwrite norandommap loops=2 fsync=1` over 64 KiB: 32 writes, 31
/// fsyncs, psync and libaio alike), and a queueing engine's ends each
/// time it has queued the file's size. Not with offloaded submission,
/// which makes one pass ([`offloaded_bytes`]). Where the passes end short
/// of fio's byte limit, it goes with them (`byte_limit`).
fn mark_passes(
    spec: &JobSpec,
    (rw, file, size, bs): (Rw, u64, u64, u64),
    pass: Option<u64>,
    shape: &mut IoShape,
) {
    let (Some(pass), Some(total)) = (pass, shape.io_size) else {
        return;
    };
    if spec.offload.is_some() {
        return;
    }
    let largest = cint_scenario::shape::largest_block(shape, bs);
    let one_size = cint_scenario::shape::smallest_block(shape, bs) == largest;
    // fio's byte limit (backend.c `io_bytes_exceeded`): where the passes
    // end short of it, its loop looks once more after the last request.
    let limit = fio_byte_limit(spec, size);
    let short_of_limit = limit > total;
    // One pass changes nothing, but where it is over the whole file in
    // order, of several sizes, it tells where the file ends.
    let fills_the_file = pass == file && !one_size && !rw.is_random();
    let one_pass = total < pass || (total == pass && !fills_the_file);
    if pass < largest || (one_pass && !short_of_limit) {
        return;
    }
    shape.pass_size = Some(pass);
    shape.byte_limit = short_of_limit.then_some(limit);
}

/// The bytes one pass over a file of `size` makes in requests of `bs`
/// with a hole of `step` after each (`rw=read:8k`), as fio 3.33's
/// `get_next_seq_offset` takes them: the k-th request at k x (bs + step)
/// while it fits; then, if the last one ended at the file's end, the pass
/// and the job end there (86 reads of 4 KiB at `read:8k` over 1 MiB); if
/// the next offset is at or past the end, fio wraps to the file's start
/// and the job runs until it has issued its size (256 at `read:4k`);
/// otherwise the next request does not fit and the job ends (85 reads of
/// 8 KiB at `read:4k`). Only where every request has one size, in one
/// direction, and the job has no `io_size` and covers a file from its
/// start: elsewhere fio's count follows offsets and sizes the model does
/// not keep (at `offset=512k size=512k`, 43 reads where the formula
/// wraps to 128), and the job is refused.
fn holed_pass(
    spec: &JobSpec,
    step: At<i64>,
    (file, size): (u64, u64),
    bs: u64,
    shape: &IoShape,
    diag: &mut Diagnostics,
) -> Result<u64, FioError> {
    let rw = spec.rw.map_or(Rw::Read, |r| r.value);
    let refused = if spec.io_size.is_some() {
        Some("io_size")
    } else if !shape.bssplit.is_empty() || shape.bsrange.is_some() {
        Some("requests of several sizes (bssplit, bsrange)")
    } else if rw.is_mixed() {
        Some("reads and writes mixed")
    } else if file > size {
        Some("a size below its filesize")
    } else {
        spec.placed.map(|p| p.value)
    };
    if let Some(what) = refused {
        return Err(diag.job_err(
            &spec.name,
            step.line,
            format!(
                "an offset step on a job that ends by its size, with {what}: how many \
                 requests fio then makes follows offsets and sizes the model does not keep; \
                 run it time_based, or without the step"
            ),
        ));
    }
    let step = step.value.unsigned_abs();
    if bs == 0 || bs > size {
        return Ok(0);
    }
    let stride = bs.saturating_add(step);
    let fit = (size - bs) / stride + 1;
    let last_end = (fit - 1) * stride + bs;
    let next = fit.saturating_mul(stride);
    Ok(if last_end < size && next >= size {
        // Wrapped to the file's start: on until its size is issued.
        size.div_ceil(bs) * bs
    } else {
        fit * bs
    })
}

/// Whether a job's offsets run out at its file's end, which then ends
/// its pass: in order, or drawn under the random map or the LFSR. A
/// random job without either never runs out (fio turns the map off
/// beside a `random_distribution` other than uniform), nor does one that
/// reads and writes in order: each direction keeps its own offset from the file's
/// start (io_u.c `last_pos[ddir]`), and their bytes together reach the
/// job's size first (fio 3.33, `rw=rw bs=16k size=200k`: 13 requests,
/// 208 KiB; `bs=8k size=1026k loops=3`: 385).
fn offsets_run_out(spec: &JobSpec, rw: Rw, shape: &IoShape) -> bool {
    // fio turns its map off beside a distribution other than uniform
    // (init.c), as both engines draw such offsets.
    let skewed = shape.random_distribution != cint_scenario::Distribution::Uniform;
    let unmapped = rw.is_random() && (shape.random_map == cint_scenario::RandomMap::Off || skewed);
    !two_offsets(spec, rw) && !unmapped
}

/// Whether a job reads and writes in order, each direction from an offset
/// of its own (io_u.c `last_pos[ddir]`): `rw=rw` with both drawn.
fn two_offsets(spec: &JobSpec, rw: Rw) -> bool {
    let mix = spec.rwmixread.map_or(50, |r| r.value);
    rw == Rw::ReadWrite && (1..=99).contains(&mix)
}

/// Reads and writes in order (`rw=rw`): fio keeps an offset for each
/// direction from the file's start, and a pass ends where the direction
/// it draws has no room left (io_u.c `get_next_seq_offset`, then
/// `get_io_u` fails and `do_io` returns), before its bytes run out where
/// they go past what one direction fits in the file. How many requests
/// fio then makes turns on its draws; the model's passes end by their
/// bytes ([`unmapped_bytes`]), so its count may be above fio's: warned.
/// A synchronous engine's passes end by fio's byte limit within its
/// `loops` passes wherever each pass is at least the file (`size=1m
/// loops=2`: 512 requests in fio 3.33 and the model, whatever the mix);
/// past that (`io_size=2m loops=2`, reads 70%: 746 in fio, 1 024 in the
/// model) it turns on where the passes ended. A queueing engine's pass
/// ends once it has queued the size, before a direction can run out
/// where the size is the file in whole requests. An offloaded job makes
/// one pass to fio's byte limit.
fn warn_a_direction_may_end_passes(
    spec: &JobSpec,
    (rw, file, size): (Rw, u64, u64),
    (smallest, largest): (u64, u64),
    engine: Engine,
    diag: &mut Diagnostics,
) {
    if !two_offsets(spec, rw) {
        return;
    }
    let mix = spec.rwmixread.map_or(50, |r| r.value);
    // A pass that a direction ends holds at least the file in whole
    // requests of that direction, where every size is a multiple of the
    // smallest (fio draws again until a size fits).
    let fits = file_pass(file, smallest);
    let limit = fio_byte_limit(spec, size);
    let (budget, may_end) = if spec.offload.is_some() {
        (limit, limit > fits)
    } else if engine.is_sync() {
        (limit, limit > fits.saturating_mul(spec.loops))
    } else {
        let pass = queued_pass(size, (smallest, largest)).min(limit);
        (pass, pass > fits)
    };
    if may_end {
        diag.job_warn(
            &spec.name,
            spec.line_of(&spec.rw),
            format!(
                "rw=rw with rwmixread={mix}: fio ends a pass where the direction it draws \
                 reaches the file's end (each keeps its own offset), which here can come \
                 before the job's {budget} bytes do (the file holds {fits} in whole \
                 requests); the model's passes end by their bytes, so its count may be above \
                 fio's, by as much as fio's draws decide (docs/results/fio-fidelity.md)"
            ),
        );
    }
}

/// How many bytes a job whose offsets never run out
/// ([`offsets_run_out`]) issues when it ends by its size. No pass ends
/// at the file's end. A synchronous engine's one pass runs until the job
/// has issued its `io_size` (or `size`) times `loops` (backend.c
/// `io_issue_bytes_exceeded`). A queueing engine's pass ends once it has
/// queued its size (`total_bytes`, the larger of `size` and `io_size` for
/// a random job that writes), in whole requests where they are of one
/// size, and more passes follow its `loops` while what is left of
/// `io_size` is at least a request (`keep_running`). fio 3.33,
/// `bs=4k size=68k io_size=96k loops=3 norandommap`: 288 KiB under
/// psync, and under libaio 204 KiB read and 288 KiB written;
/// `size=1026k loops=3`: 770 reads.
fn unmapped_bytes(
    spec: &JobSpec,
    (size, smallest, largest): (u64, u64, u64),
    rw: Rw,
    engine: Engine,
) -> u64 {
    let once = spec.io_size.map_or(size, |b| b.value);
    let all = fio_byte_limit(spec, size);
    if engine.is_sync() {
        return all;
    }
    // A pass ends once it has queued the file's size (backend.c `do_io`,
    // `total_bytes`), io_size where larger for a random job that writes
    // without the map, whose offsets never run out.
    let pass = match rw.only_reads() || !rw.is_random() {
        true => size,
        false => size.max(once),
    };
    let pass = queued_pass(pass, (smallest, largest));
    match once <= pass {
        true => all,
        false => past_the_file(once, pass, spec.loops, largest),
    }
}

/// How many bytes a job whose `io_size` (`once`) is past its file does:
/// its `loops` passes, then passes while at least `largest` of `once` is
/// left at a pass's end (backend.c `keep_running`), each cut only by
/// fio's byte limit within a pass, `once` times `loops`
/// (`io_issue_bytes_exceeded`). fio 3.33, 4 KiB writes over 100 KiB with
/// `io_size=2m loops=2`: 21 passes, 2100 KiB.
fn past_the_file(once: u64, pass: u64, loops: u64, largest: u64) -> u64 {
    let looped = pass.saturating_mul(loops);
    if once <= looped || pass == 0 {
        return looped;
    }
    let left = once - looped;
    let more = match left >= largest {
        true => (left - largest + 1).div_ceil(pass),
        false => 0,
    };
    looped
        .saturating_add(more.saturating_mul(pass))
        .min(once.saturating_mul(loops))
}

/// fio refuses a floor above its direction's cap (init.c
/// `fixup_options`: "minimum rate exceeds rate"), counted alike: `ratemin`
/// against `rate`, `rate_iops_min` against `rate_iops`.
fn refuse_floor_above_cap(spec: &JobSpec, diag: &mut Diagnostics) -> Result<(), FioError> {
    let Some(floor) = &spec.rate_min else {
        return Ok(());
    };
    let (unit, floors) = floor.value;
    let caps = match unit {
        RateUnit::Bytes => spec.rate,
        RateUnit::Iops => spec.rate_iops_dirs,
    };
    let Some(caps) = caps else {
        return Ok(());
    };
    for (d, (&cap, &floor_d)) in caps.value.iter().zip(&floors).enumerate() {
        if cap != 0 && cap < floor_d {
            return Err(diag.job_err(
                &spec.name,
                floor.line,
                format!(
                    "the {} floor {} is above the cap {}: fio refuses the job (minimum rate \
                     exceeds rate)",
                    if d == 0 { "reads'" } else { "writes'" },
                    floor_d,
                    cap
                ),
            ));
        }
    }
    Ok(())
}

/// fio's `ratemin` and `rate_iops_min` with `ratecycle` (backend.c
/// `__check_min_rate`): from two seconds after the job's start, every
/// `ratecycle`, fio ends a thread whose rate over the cycle fell under
/// them, with an error; the model does the same (scenario `ratemin`,
/// `rate_iops_min`, `ratecycle`). One value floors each direction; a job
/// of one direction takes its own. A job that ends before the first
/// check is warned that they change nothing.
fn min_rate(
    spec: &JobSpec,
    rw: Rw,
    length: Nanos,
    diag: &mut Diagnostics,
) -> Option<cint_scenario::MinRate> {
    const SETTLE: Nanos = 2_000_000_000;
    let at = spec.rate_min.as_ref()?;
    let (unit, [read, write]) = at.value;
    let option = match unit {
        RateUnit::Iops => "rate_iops_min",
        RateUnit::Bytes => "ratemin",
    };
    let first_check = SETTLE.saturating_add(spec.ratecycle);
    if length < first_check {
        diag.job_warn(
            &spec.name,
            at.line,
            format!(
                "{option} changes nothing here: fio checks it first at {} (2 s and a ratecycle), \
                 after this job's {}",
                cint_scenario::units::format_duration(first_check),
                cint_scenario::units::format_duration(length)
            ),
        );
    }
    let nonzero = |c: u64| Some(c).filter(|&c| c > 0);
    let floor = if rw.is_mixed() {
        DirectionRates {
            unit,
            read: nonzero(read),
            write: nonzero(write),
        }
    } else {
        let own = nonzero(if rw.only_reads() { read } else { write })?;
        DirectionRates {
            unit,
            read: Some(own),
            write: Some(own),
        }
    };
    (floor.read.is_some() || floor.write.is_some()).then_some(cint_scenario::MinRate {
        floor,
        cycle: spec.ratecycle,
    })
}

/// fio 3.33 keeps its random map in each direction's own smallest size
/// (io_u.c `mark_random_map`, `get_next_rand_offset`): a direction's
/// block `b` is bit `b` of one map the two share. So a direction of one
/// size is never cut, where the model's map of the file's real blocks
/// cuts it where the other direction covered part of it (`bs=4k,64k`:
/// writes of 64 KiB in fio, 44.6 KiB on average in the model), and a
/// sized job whose writes are larger than its reads runs off its file
/// and ends early (`rw=randrw bs=4k,16k size=1m` moves 250 KiB of the
/// 1 MiB). Neither is modelled, so a random job over a file of given
/// size that reads and writes with different smallest sizes under the
/// map is refused, and a sized writer of one direction too when its
/// writes' smallest size is larger. Over a whole device the map covers
/// too little in any run the model makes for the two to part.
fn refuse_split_sizes_under_the_map(
    spec: &JobSpec,
    rw: Rw,
    bs: u64,
    shape: &IoShape,
    diag: &mut Diagnostics,
) -> Result<(), FioError> {
    let uniform = shape.random_distribution == cint_scenario::Distribution::Uniform;
    if !rw.is_random() || !uniform || shape.random_map != cint_scenario::RandomMap::Map {
        return Ok(());
    }
    let smallest = |write| cint_scenario::shape::smallest_block_of(shape, bs, write);
    let (r, w) = (smallest(false), smallest(true));
    // Where the sizes were set: a split, a range, or `bs`.
    let line = spec
        .bssplit
        .as_ref()
        .map(|b| b.line)
        .or(spec.bsrange.as_ref().map(|b| b.line))
        .unwrap_or_else(|| spec.line_of(&spec.bs));
    // Over a whole device (no size) the map covers too little of it in
    // any run the model makes for the two to part.
    let sized = spec.size.is_some() || spec.filesize.is_some() || spec.io_size.is_some();
    if rw == Rw::RandRw && r != w && sized {
        return Err(diag.job_err(
            &spec.name,
            line,
            format!(
                "reads of at least {} beside writes of at least {} under fio's random map: \
                 fio 3.33 keeps the map in each direction's own size (io_u.c mark_random_map), \
                 so a direction of one size is never cut and a sized job may end early, which \
                 is not modelled; add norandommap or random_generator=lfsr, or give both the \
                 same smallest size",
                cint_scenario::units::format_size(r),
                cint_scenario::units::format_size(w)
            ),
        ));
    }
    // A writer whose reads' size is smaller still has a map of it: a job
    // that ends by its size runs off its file (a time-based one starts
    // the map again).
    if rw == Rw::RandWrite && w > r && sized && !spec.time_based {
        return Err(diag.job_err(
            &spec.name,
            spec.line_of(&spec.bs),
            format!(
                "writes of at least {} beside reads of {} under fio's random map: fio 3.33 \
                 counts the writes' blocks against a map of the reads' and ends the job early, \
                 which is not modelled; add norandommap, or give both the same smallest size",
                cint_scenario::units::format_size(w),
                cint_scenario::units::format_size(r)
            ),
        ));
    }
    Ok(())
}

/// The value of the last `--set` of `key`, as written.
fn override_of<'a>(sets: &'a [String], key: &str) -> Option<&'a str> {
    sets.iter()
        .rev()
        .filter_map(|set| set.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
}

/// A job's threads: `numjobs`, 1 when not given.
fn threads_of(spec: &JobSpec) -> u32 {
    spec.numjobs.as_ref().map_or(1, |n| n.value)
}

/// Whether the kernel, not the job, picks a CPU for each of the job's
/// threads: no `cpus_allowed`, or a list of several CPUs shared by them
/// all (fio's default `cpus_allowed_policy=shared`).
fn kernel_places(spec: &JobSpec) -> bool {
    match &spec.cpus {
        None => true,
        Some(c) => c.value.len() > 1 && !spec.cpus_split.is_some_and(|p| p.value),
    }
}

/// Where a job's threads run.
#[derive(Debug)]
struct Placement {
    /// Machine CPUs, thread `n` on the `n`-th, round robin.
    cpus: Vec<u32>,
    /// The kernel placed them ([`kernel_places`]).
    by_kernel: bool,
    /// Some of them share a CPU with another thread of the group.
    crowded: bool,
}

/// Where each job's threads run: with `cpus_allowed_policy=split`, the
/// whole `cpus_allowed` list; with one CPU allowed, that CPU. Elsewhere
/// the kernel places them ([`kernel_places`]): its fork balancing puts
/// each new thread on the idlest CPU it may use (`wake_up_new_task` with
/// `SD_BALANCE_FORK`, `find_idlest_cpu`), and a wake-up keeps it on its
/// CPU while that CPU is idle (`select_idle_sibling`). So in each group
/// (the jobs that run at once) such a job's threads take the CPUs they
/// may use (`cpus_allowed`, or the host's `online` CPUs) that no earlier
/// thread of the group runs on, in ascending order, then the others, in
/// turn: one per idle CPU while there are some, then evenly, as the
/// kernel's load balancing keeps them.
fn placements(specs: &[JobSpec], groups: &[u32], online: u32) -> Vec<Placement> {
    let mut placed: Vec<Placement> = specs
        .iter()
        .map(|s| {
            let by_kernel = kernel_places(s);
            Placement {
                cpus: match &s.cpus {
                    Some(c) if !by_kernel => c.value.clone(),
                    _ => Vec::new(),
                },
                by_kernel,
                crowded: false,
            }
        })
        .collect();
    let distinct_groups: BTreeSet<u32> = groups.iter().copied().collect();
    for group in distinct_groups {
        let members: Vec<usize> = (0..specs.len()).filter(|&j| groups[j] == group).collect();
        let mut busy: BTreeSet<u32> = members
            .iter()
            .flat_map(|&j| {
                placed[j]
                    .cpus
                    .iter()
                    .copied()
                    .chain(sq_thread_cpu(&specs[j]))
            })
            .collect();
        let by_kernel: Vec<usize> = members
            .into_iter()
            .filter(|&j| placed[j].by_kernel)
            .collect();
        for j in by_kernel {
            let allowed: BTreeSet<u32> = match &specs[j].cpus {
                Some(c) => c.value.iter().copied().collect(),
                None => (0..online.max(1)).collect(),
            };
            let idle = allowed.iter().filter(|c| !busy.contains(c)).count();
            let turn: Vec<u32> = allowed
                .iter()
                .filter(|c| !busy.contains(c))
                .chain(allowed.iter().filter(|c| busy.contains(c)))
                .copied()
                .collect();
            let threads = threads_of(&specs[j]) as usize;
            placed[j].cpus = turn[..threads.min(turn.len())].to_vec();
            placed[j].crowded = threads > idle;
            busy.extend(&placed[j].cpus);
        }
    }
    placed
}

/// Says where the kernel's placement put threads when it spread several
/// of a group's threads, or crowded some onto busy CPUs; a lone thread
/// that went to an idle CPU is the common case, not worth a line.
fn placement_warning(
    specs: &[JobSpec],
    groups: &[u32],
    placed: &[Placement],
    online: u32,
    diag: &mut Diagnostics<'_>,
) {
    let mut by_kernel_per_group: std::collections::BTreeMap<u32, u32> = Default::default();
    for ((spec, &group), p) in specs.iter().zip(groups).zip(placed) {
        if p.by_kernel {
            *by_kernel_per_group.entry(group).or_default() += threads_of(spec);
        }
    }
    let told: Vec<(&JobSpec, &Placement)> = specs
        .iter()
        .zip(groups)
        .zip(placed)
        .filter(|((_, group), p)| p.by_kernel && (by_kernel_per_group[*group] > 1 || p.crowded))
        .map(|((spec, _), p)| (spec, p))
        .collect();
    let Some(&(first, _)) = told.first() else {
        return;
    };
    let crowded = told.iter().any(|(_, p)| p.crowded);
    let names: Vec<&str> = told.iter().map(|(s, _)| s.name.as_str()).collect();
    diag.warn(
        first.line,
        format!(
            "the kernel places the threads of job{} {} (no cpus_allowed, or a list they \
             share): the model puts each, as Linux's fork balancing does, on an idle CPU it \
             may use (of the host's {online} online) while one is left{}, and keeps it there \
             (give cpus_allowed_policy=split or one CPU to place them)",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if crowded { ", then in turn" } else { "" },
        ),
    );
}

/// `none`, `adaptive` and `cinterrupts` at the device's reference `delta`
/// and `thr`, or `poll` alone when every job polls (`hipri`).
fn default_strategies(device: &DeviceProfile, poll: bool) -> Vec<Strategy> {
    if poll {
        return vec![Strategy {
            name: "poll".into(),
            mode: CompletionMode::Poll,
            interrupts: PolicyConfig::None,
        }];
    }
    let adaptive = AdaptiveParams {
        delta: device.reference_delta.0,
        thr: device.reference_thr,
    };
    vec![
        Strategy {
            name: "none".into(),
            mode: CompletionMode::Interrupt(PolicyConfig::None),
            interrupts: PolicyConfig::None,
        },
        Strategy {
            name: "adaptive".into(),
            mode: CompletionMode::Interrupt(PolicyConfig::Adaptive(adaptive)),
            interrupts: PolicyConfig::None,
        },
        Strategy {
            name: "cinterrupts".into(),
            mode: CompletionMode::Interrupt(PolicyConfig::Cinterrupts(
                CinterruptsParams::with_adaptive(adaptive.delta, adaptive.thr),
            )),
            interrupts: PolicyConfig::None,
        },
    ]
}

/// Writes the imported scenario as scenario TOML and loads it back, so a
/// fio file passes exactly the validation a TOML scenario does and takes
/// `--set` overrides the same way. A refusal of a job's key is reported at
/// the line of the fio option that set it (`lines`, per job of `built`),
/// or at the job's section when fio's default set it.
pub(super) fn revalidate(
    built: &Scenario,
    file: &str,
    sets: &[String],
    lines: &[Vec<KeyLine>],
) -> Result<Scenario, FioError> {
    let toml = cint_scenario::to_toml(built);
    cint_scenario::load_str(&toml, file, sets).map_err(|e| {
        if !matches!(e.origin, cint_scenario::Origin::Set(_)) {
            if let Some(at) = job_key_line(built, lines, &e.key) {
                return at.into_error(file, &e.message);
            }
        }
        FioError::whole_file(
            file,
            match e.origin {
                // The parser names the file first, as this error will: once
                // is enough.
                cint_scenario::Origin::Set(_) => {
                    let text = e.to_string();
                    match text.strip_prefix(&format!("{file}: ")) {
                        Some(rest) => rest.to_string(),
                        None => text,
                    }
                }
                _ if sets.is_empty() => {
                    format!("the imported scenario is invalid: {}: {}", e.key, e.message)
                }
                _ => format!(
                    "the imported scenario with the --set overrides is invalid: {}: {}",
                    e.key, e.message
                ),
            },
        )
    })
}

/// Where the scenario check's refusal of `key` (`job.NAME.KEY`) belongs
/// in the job file.
fn job_key_line(built: &Scenario, lines: &[Vec<KeyLine>], key: &str) -> Option<RefusedAt> {
    let rest = key.strip_prefix("job.")?;
    let (job, keys) = built.jobs.iter().zip(lines).find(|(j, _)| {
        rest.strip_prefix(j.name.as_str())
            .is_some_and(|r| r.starts_with('.'))
    })?;
    let sub = &rest[job.name.len() + 1..];
    let set = keys.iter().find(|k| !k.key.is_empty() && k.key == sub);
    let section = keys.iter().find(|k| k.key.is_empty())?;
    Some(match set {
        Some(k) => RefusedAt {
            line: k.line,
            what: format!("option '{}'", k.option),
        },
        None => RefusedAt {
            line: section.line,
            what: format!("job '{}': {sub} (fio's default or derived)", job.name),
        },
    })
}

/// A line of the job file and what on it a refusal is about.
struct RefusedAt {
    line: usize,
    what: String,
}

impl RefusedAt {
    fn into_error(self, file: &str, message: &str) -> FioError {
        FioError::at_line(file, self.line, format!("{}: {message}", self.what))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, io};
    use super::super::{import_str, FioArgs};
    use super::*;

    const FIELD_FILE: &str = "\
; -- typical field job file: latency vs. throughput on one core --
[global]
ioengine=libaio
direct=1
filename=/dev/nvme0n1   ; raw device
# keep the random map off, we only care about latency
norandommap
randrepeat=0
group_reporting
time_based
runtime=10s
ramp_time = 2
bs=4k
cpus_allowed=7

[async-reader]
rw=randread
iodepth=256
iodepth_batch_submit=16
iodepth_batch_complete_min=16

[sync-reader]
ioengine=psync
rw=randread
iodepth=32
numjobs=2
";

    #[test]
    fn realistic_file_with_globals_comments_and_two_jobs() {
        let imp = import_str(FIELD_FILE, "lat.fio", &args()).expect("valid file");
        let s = &imp.scenario;
        assert_eq!(s.duration, 10_000_000_000);
        assert_eq!(s.warmup, 2_000_000_000);
        assert_eq!(s.host.cores, 1);
        assert_eq!(s.jobs.len(), 2);
        let a = io(&s.jobs[0]);
        assert_eq!(s.jobs[0].name, "async-reader");
        assert_eq!(s.jobs[0].cpu, 0);
        assert_eq!((a.engine, a.rw, a.bs), (Engine::Libaio, Rw::RandRead, 4096));
        assert_eq!((a.iodepth, a.batch, a.batch_complete_min), (256, 16, 16));
        assert!(a.direct);
        assert_eq!(a.size, s.device.capacity.0);
        let b = io(&s.jobs[1]);
        assert_eq!(b.engine, Engine::Psync);
        assert_eq!((b.iodepth, b.batch, b.batch_complete_min), (1, 1, 1));
        assert_eq!(s.jobs[1].numjobs, 2);
        // filename, randrepeat; then iodepth on psync. norandommap is
        // modelled, and group_reporting is what the model's report does.
        assert_eq!(imp.warnings.len(), 3, "{:#?}", imp.warnings);
        assert!(imp.warnings[0].starts_with("lat.fio:5: warning: option 'filename'"));
        assert!(imp.warnings[2].contains("iodepth=32 has no effect"));
        assert_eq!(a.shape.random_map, cint_scenario::RandomMap::Off);
        assert!(imp.warnings.iter().all(|w| !w.contains('\n')));
        let names: Vec<&str> = s.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["none", "adaptive", "cinterrupts"]);
        assert_eq!(
            s.strategies[2].mode,
            CompletionMode::Interrupt(PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(
                6_000, 32
            )))
        );
    }

    #[test]
    fn fio_defaults_apply_when_options_are_absent() {
        let imp = import_str("[j]\n", "d.fio", &args()).expect("valid");
        let s = &imp.scenario;
        let j = io(&s.jobs[0]);
        assert_eq!(
            (j.engine, j.rw, j.bs, j.iodepth, j.direct),
            (Engine::Psync, Rw::Read, 4096, 1, false)
        );
        assert_eq!(s.duration, 200_000_000);
        assert_eq!(imp.warnings.len(), 1);
        assert!(
            imp.warnings[0].contains("nothing ends it"),
            "{:?}",
            imp.warnings
        );
    }

    #[test]
    fn a_job_that_ends_by_its_size_runs_to_its_end_without_a_runtime() {
        // fio 3.33 (null engine): 512 reads in 0.512 s; 500 writes.
        for (text, reads, writes) in [
            ("[j]\nrw=read\nsize=2m\nrate_iops=1000\n", 512, 0),
            (
                "[j]\nrw=randwrite\nnumber_ios=500\nrate_iops=1000\n",
                0,
                500,
            ),
        ] {
            let imp = import_str(text, "e.fio", &args()).expect("valid");
            assert!(imp.warnings.is_empty(), "{text}: {:?}", imp.warnings);
            assert_eq!(imp.scenario.duration, super::super::schedule::RUN_TO_END);
            let r = cint_sim::run(&imp.scenario).expect("runs");
            let fio = r.results[0].jobs[0].fio.clone().expect("fio figures");
            assert_eq!((fio.read.ios, fio.write.ios), (reads, writes), "{text}");
        }
        // Groups of such jobs one after another: the run takes at most
        // the hour in all, and each group runs to its end.
        let text = "[a]\nrw=read\nnumber_ios=300\n[b]\nstonewall\nrw=write\nnumber_ios=200\n";
        let imp = import_str(text, "g.fio", &args()).expect("valid");
        assert_eq!(imp.scenario.duration, super::super::schedule::RUN_TO_END);
        let r = cint_sim::run(&imp.scenario).expect("runs");
        let ios: Vec<u64> = r.results[0].jobs.iter().map(|j| j.ios).collect();
        assert_eq!(ios, [300, 200]);
        // Beside a time-based job, it still runs to its end.
        let text = "[t]\ntime_based\nruntime=100ms\n[s]\nrw=read\nsize=1m\nrate_iops=1000\n";
        let imp = import_str(text, "e.fio", &args()).expect("valid");
        let r = cint_sim::run(&imp.scenario).expect("runs");
        let fio = r.results[0].jobs[1].fio.clone().expect("fio figures");
        assert_eq!(fio.read.ios, 256);
    }

    #[test]
    fn cpus_become_dense_cores_and_shared_lists_take_an_idle_cpu() {
        let text = "[a]\ncpus_allowed=12\n[b]\ncpus_allowed=4\n[c]\ncpus_allowed=4-7\n[d]\ncpus_allowed=12\n";
        let imp = import_str(text, "c.fio", &args()).expect("valid");
        // c may run on 4 to 7 and 4 is b's: the kernel gives it 5.
        let cores: Vec<u32> = imp.scenario.jobs.iter().map(|j| j.cpu).collect();
        assert_eq!(cores, [2, 0, 1, 2]);
        assert_eq!(imp.scenario.host.cores, 3);
        // A lone thread on an idle CPU is what anyone expects: no word.
        assert!(
            imp.warnings.iter().all(|w| !w.contains("places")),
            "{:?}",
            imp.warnings
        );
        // cpus_allowed_policy=split: one CPU of the list per thread.
        let split = "[a]\ncpus_allowed=4-7\ncpus_allowed_policy=split\nnumjobs=4\n";
        let imp = import_str(split, "s.fio", &args()).expect("split runs");
        assert_eq!(imp.scenario.jobs[0].cpus, [0, 1, 2, 3]);
        assert_eq!(imp.scenario.host.cores, 4);
        assert!(
            imp.warnings.iter().all(|w| !w.contains("places")),
            "{:?}",
            imp.warnings
        );
    }

    /// fio's `max_latency`: a bare number is microseconds, a value per
    /// direction as fio's rates take them, 0 or empty for none; under
    /// `gtod_reduce` fio measures no total latency, so it is warned and
    /// dropped.
    #[test]
    fn max_latency_reads_as_fio_reads_it() {
        let bound = |v: &str| {
            let text = format!("[j]\nrw=randrw\nsize=1m\nmax_latency={v}\n");
            let imp = import_str(&text, "m.fio", &args()).expect("valid");
            io(&imp.scenario.jobs[0])
                .shape
                .max_latency
                .map(|m| (m.read, m.write))
        };
        assert_eq!(bound("500"), Some((Some(500_000), Some(500_000))));
        assert_eq!(
            bound("10ms,20ms"),
            Some((Some(10_000_000), Some(20_000_000)))
        );
        assert_eq!(bound(",2ms"), Some((None, Some(2_000_000))));
        assert_eq!(bound("0"), None);
        let e = import_str("[j]\nsize=1m\nmax_latency=soon\n", "m.fio", &args())
            .expect_err("not a time");
        assert!(e.to_string().starts_with("m.fio:3:"), "{e}");
        let text = "[j]\nsize=1m\ngtod_reduce=1\nmax_latency=1ms\n";
        let imp = import_str(text, "m.fio", &args()).expect("valid");
        assert_eq!(io(&imp.scenario.jobs[0]).shape.max_latency, None);
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.starts_with("m.fio:4:") && w.contains("gtod_reduce")),
            "{:?}",
            imp.warnings
        );
    }

    /// fio's `cpumask` is the same set as a `cpus_allowed` list (fio's
    /// manual: CPUs 1 and 5 are `cpumask=34`), the later of the two
    /// standing; a mask of no CPU, or of one past 31, which fio does not
    /// read, is refused on its line.
    #[test]
    fn cpumask_is_a_cpus_allowed_list_as_a_mask() {
        let threads = "cpus_allowed_policy=split\nnumjobs=2\nsize=1m\n";
        let masked =
            import_str(&format!("[a]\ncpumask=34\n{threads}"), "c.fio", &args()).expect("a mask");
        let listed = import_str(
            &format!("[a]\ncpus_allowed=1,5\n{threads}"),
            "c.fio",
            &args(),
        )
        .expect("a list");
        assert_eq!(masked.scenario, listed.scenario);
        assert_eq!(
            machine_cpus(&format!("[a]\ncpumask=0x6\n{threads}"), "xeon-e5-2660v4"),
            machine_cpus(
                &format!("[a]\ncpus_allowed=1-2\n{threads}"),
                "xeon-e5-2660v4"
            )
        );
        let later = format!("[global]\ncpus_allowed=0-3\n[a]\ncpumask=34\n{threads}");
        let later = import_str(&later, "c.fio", &args()).expect("the job's mask");
        assert_eq!(later.scenario.jobs, listed.scenario.jobs);
        for bad in ["0", "0x100000000", "x"] {
            let e = import_str(&format!("[a]\ncpumask={bad}\nsize=1m\n"), "b.fio", &args())
                .expect_err("refused");
            let line = e.to_string();
            assert!(
                line.starts_with("b.fio:2:") && line.contains("cpumask") && !line.contains('\n'),
                "{line}"
            );
        }
    }

    /// The CPUs, as machine numbers, of each thread of each job of `text`.
    fn machine_cpus(text: &str, host: &str) -> Vec<Vec<u32>> {
        let specs = {
            let mut diag = Diagnostics::new("p.fio");
            let sections = crate::fio::jobfile::parse(text, "p.fio", None).expect("parses");
            crate::fio::job::job_specs(sections, &mut diag).expect("valid")
        };
        let mut diag = Diagnostics::new("p.fio");
        let timeline = Timeline::new(&specs, 1_000_000_000, &mut diag).expect("valid");
        let online = HostProfile::builtin(host).expect("built in").online_cpus;
        let placed = placements(&specs, &timeline.groups, online);
        specs
            .iter()
            .zip(placed)
            .map(|(s, p)| {
                (0..threads_of(s) as usize)
                    .map(|n| p.cpus[n % p.cpus.len()])
                    .collect()
            })
            .collect()
    }

    #[test]
    fn threads_without_cpus_allowed_go_where_the_fork_balancer_puts_them() {
        // One per idle CPU while there are some, then in turn.
        let e5 = "xeon-e5-2660v4";
        let sixteen: Vec<u32> = (0..16).collect();
        assert_eq!(machine_cpus("[a]\nnumjobs=16\n", e5), [sixteen]);
        let forty: Vec<u32> = (0..40).map(|n| n % 28).collect();
        assert_eq!(machine_cpus("[a]\nnumjobs=40\n", e5), [forty]);
        let e3: Vec<u32> = (0..12).map(|n| n % 8).collect();
        assert_eq!(machine_cpus("[a]\nnumjobs=12\n", "xeon-e3-1230v5"), [e3]);
        // Beside a pinned job the CPU it holds comes last; a second group
        // finds every CPU idle again.
        let mixed = "[p]\ncpus_allowed=0\n[u]\nnumjobs=2\n[v]\n[w]\nstonewall\nnumjobs=2\n";
        assert_eq!(
            machine_cpus(mixed, e5),
            [vec![0], vec![1, 2], vec![3], vec![0, 1]]
        );
        // A shared list: its idle CPUs first, then the busy ones.
        let shared = "[p]\ncpus_allowed=2\n[s]\ncpus_allowed=1-3\nnumjobs=4\n";
        assert_eq!(machine_cpus(shared, e5), [vec![2], vec![1, 3, 2, 1]]);
        // The machine's CPU count may be given with the overrides.
        let mut on_eight = args();
        on_eight.sets = vec!["host.online_cpus = 8".into()];
        let imp = import_str("[a]\nnumjobs=12\nsize=1m\n", "o.fio", &on_eight).expect("valid");
        assert_eq!(imp.scenario.host.cores, 8);
        on_eight.sets = vec!["host.online_cpus=0".into()];
        let err = import_str("[a]\nnumjobs=12\n", "o.fio", &on_eight).expect_err("refused");
        assert!(err.to_string().contains("online_cpus"), "{err}");
        // A lone thread stays on CPU 0, as before, without a word.
        let imp = import_str("[a]\nrw=read\nsize=1m\n", "l.fio", &args()).expect("valid");
        assert_eq!((imp.scenario.host.cores, imp.scenario.jobs[0].cpu), (1, 0));
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    #[test]
    fn spread_threads_run_on_cores_of_their_own() {
        // Synchronous reads: four threads the kernel places each serve
        // what one thread alone does, where four on one CPU share it.
        let iops = |text: &str| {
            let imp = import_str(text, "s.fio", &args()).expect("valid");
            let r = cint_sim::run(&imp.scenario).expect("runs");
            r.results[0].jobs[0].iops
        };
        let job = "[a]\nrw=randread\ndirect=1\nioengine=psync\nruntime=20ms\ntime_based\n";
        let alone = iops(job);
        let spread = iops(&format!("{job}numjobs=4\n"));
        let one_cpu = iops(&format!("{job}numjobs=4\ncpus_allowed=0\n"));
        assert!(
            spread > 3.6 * alone && one_cpu < 2.0 * alone,
            "one thread {alone}, four spread {spread}, four on one CPU {one_cpu}"
        );
    }

    #[test]
    fn a_cap_on_a_direction_the_job_does_not_issue_is_warned() {
        for (rate, warned) in [
            ("1000,500", "caps writes"),
            (",500", "caps only a direction"),
        ] {
            let text = format!("[a]\nrw=randread\ncpus_allowed=0\nruntime=1\nrate_iops={rate}\n");
            let imp = import_str(&text, "r.fio", &args()).expect("valid");
            assert!(
                imp.warnings
                    .iter()
                    .any(|w| w.contains(warned) && w.contains("r.fio:5")),
                "{rate}: {:?}",
                imp.warnings
            );
        }
        let text = "[a]\nrw=randrw\nrwmixread=100\ncpus_allowed=0\nruntime=1\nrate_iops=1000\n";
        let imp = import_str(text, "r.fio", &args()).expect("valid");
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    #[test]
    fn times_sizes_rates_and_mixes() {
        let text = "[global]\nruntime=2m\nramp_time=500ms\n[a]\nrw=randrw\nrwmixwrite=30\n\
                    size=10%\ntime_based\n[b]\nruntime=30\nbuffered=1\nsize=1g\n\
                    fadvise_hint=0\n";
        let imp = import_str(text, "t.fio", &args()).expect("valid");
        let s = &imp.scenario;
        assert_eq!(s.duration, 120_000_000_000);
        assert_eq!(s.warmup, 500_000_000);
        let a = io(&s.jobs[0]);
        assert_eq!((a.rw, a.rwmixread), (Rw::RandRw, 70));
        assert_eq!(a.shape.io_size, None, "time based");
        assert_eq!(a.size, s.device.capacity.0 / 100 * 10 / 512 * 512);
        assert_eq!(s.jobs[0].runtime, None);
        let b = io(&s.jobs[1]);
        assert_eq!((b.size, b.direct), (1 << 30, false));
        assert!(
            a.fadvise_hint && !b.fadvise_hint,
            "fio's default, and b's 0"
        );
        assert_eq!(s.jobs[1].runtime, Some(30_500_000_000));
        // Not time based: the job ends once its size is done.
        assert_eq!(b.shape.io_size, Some(1 << 30));
        assert_eq!(imp.warnings.len(), 1, "{:?}", imp.warnings);
        assert!(
            imp.warnings[0].contains("the kernel places the threads of jobs a, b"),
            "{:?}",
            imp.warnings
        );
    }

    #[test]
    fn an_offset_step_sets_the_requests_of_a_pass_as_fio_takes_them() {
        // fio 3.33, psync, direct=1, not time based (a file on ext4):
        // the requests each job made. The pass ends where a request ends
        // at the file's end, wraps where the next offset is past it, and
        // ends where the next request does not fit.
        for (rw, bs, size, loops, requests) in [
            ("read:8k", "4k", "1m", 1, 86),
            ("write:8k", "4k", "1m", 1, 86),
            ("read:8k", "4k", "1m", 2, 172),
            ("read:4k", "4k", "1m", 1, 256),
            ("read:12k", "4k", "1m", 1, 256),
            ("write:100k", "4k", "1m", 1, 256),
            ("read:4k", "8k", "1m", 1, 85),
            ("read:3k", "4k", "1000k", 1, 250),
        ] {
            let text = format!("[t]\nrw={rw}\nbs={bs}\nsize={size}\ndirect=1\nloops={loops}\n");
            let s = import_str(&text, "p.fio", &args()).expect("valid").scenario;
            let bytes = io(&s.jobs[0]).shape.io_size.expect("sized");
            let bs = cint_scenario::units::parse_size(bs).expect("size");
            assert_eq!(bytes / bs, requests, "rw={rw} bs={bs} size={size}");
        }
        // Where fio's count follows offsets the model does not keep, the
        // job is refused at the pattern's line.
        for extra in [
            "io_size=2m",
            "bssplit=4k/50:16k/50",
            "offset=512k",
            "filename=/dev/nvme0n1",
        ] {
            let text = format!("[t]\nrw=read:8k\nsize=1m\ndirect=1\n{extra}\n");
            let e = import_str(&text, "p.fio", &args()).expect_err("refused");
            assert!(
                e.to_string()
                    .starts_with("p.fio:2: job 't': an offset step"),
                "{e}"
            );
        }
        // Time based, the step only moves offsets.
        let text = "[t]\nrw=read:8k\nsize=1m\ntime_based\nruntime=1\n";
        let s = import_str(text, "p.fio", &args()).expect("valid").scenario;
        assert_eq!(io(&s.jobs[0]).shape.io_size, None);
    }

    #[test]
    fn io_size_past_the_file_ends_where_fio_ends_it() {
        // fio 3.33, rw=write bs=4k size=1m direct=1 (psync on ext4): the
        // requests written for each io_size.
        for (io_size, loops, requests) in [
            ("1026k", 1, 256),
            ("1030k", 1, 258),
            ("2046k", 1, 512),
            ("3m", 2, 768),
        ] {
            let text = format!(
                "[t]\nrw=write\nbs=4k\nsize=1m\ndirect=1\nio_size={io_size}\nloops={loops}\n"
            );
            let s = import_str(&text, "p.fio", &args()).expect("valid").scenario;
            // The model stops a thread once it has issued its io_size.
            let bytes = io(&s.jobs[0]).shape.io_size.expect("sized");
            assert_eq!(
                bytes.div_ceil(4096),
                requests,
                "io_size={io_size} loops={loops}"
            );
        }
    }

    #[test]
    fn sqthread_poll_takes_its_cpu_among_the_named_ones() {
        let text = "[global]\nioengine=io_uring\ndirect=1\niodepth=8\n\
                    [a]\ncpus_allowed=4\nsqthread_poll=1\nsqthread_poll_cpu=9\n\
                    [b]\ncpus_allowed=6\nsqthread_poll\n[c]\ncpus_allowed=6\nsqthread_poll_cpu=2\n";
        let imp = import_str(text, "q.fio", &args()).expect("valid");
        let s = &imp.scenario;
        // CPUs 4, 6 and 9 become cores 0, 1 and 2; c's sqthread_poll_cpu
        // names no CPU, as fio ignores it without sqthread_poll.
        assert_eq!(s.host.cores, 3);
        assert_eq!(io(&s.jobs[0]).sqpoll, Some(SqPoll { cpu: Some(2) }));
        assert_eq!(io(&s.jobs[1]).sqpoll, Some(SqPoll { cpu: None }));
        assert_eq!(io(&s.jobs[2]).sqpoll, None);
        let warned = |line: usize, what: &str| {
            imp.warnings
                .iter()
                .any(|w| w.starts_with(&format!("q.fio:{line}:")) && w.contains(what))
        };
        assert!(warned(11, "no sqthread_poll_cpu"), "{:?}", imp.warnings);
        assert!(
            warned(14, "no effect without sqthread_poll"),
            "{:?}",
            imp.warnings
        );
        // Written back and loaded again, the keys hold.
        let again =
            cint_scenario::load_str(&cint_scenario::to_toml(s), "q.toml", &[]).expect("round trip");
        assert_eq!(io(&again.jobs[0]).sqpoll, Some(SqPoll { cpu: Some(2) }));
        for (text, line, what) in [
            (
                "[j]\nioengine=libaio\ndirect=1\nsqthread_poll=1\n",
                4,
                "ioengine=io_uring",
            ),
            (
                "[j]\nioengine=io_uring\nsqthread_poll=1\n",
                3,
                "buffered I/O",
            ),
        ] {
            let e = import_str(text, "e.fio", &args()).expect_err(what);
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("e.fio:{line}:")) && msg.contains(what),
                "{msg}"
            );
        }
    }

    #[test]
    fn sync_is_warned_on_direct_writes_and_reads_and_runs_buffered() {
        // The classic journal test: direct, O_SYNC, 4 KiB writes at depth 1.
        let journal = "[j]\ndirect=1\nsync=1\nrw=write\nbs=4k\nruntime=5ms\n";
        let imp = import_str(journal, "j.fio", &args()).expect("direct sync runs");
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.starts_with("j.fio:3:") && w.contains("volatile write cache")),
            "{:?}",
            imp.warnings
        );
        let plain =
            import_str(&journal.replace("sync=1\n", ""), "j.fio", &args()).expect("without sync");
        assert_eq!(imp.scenario, plain.scenario, "nothing else changes");
        for (value, ok) in [
            ("dsync", true),
            ("sync", true),
            ("none", false),
            ("0", false),
        ] {
            let text = format!("[r]\nrw=randread\nsync={value}\nruntime=5ms\n");
            let imp = import_str(&text, "r.fio", &args()).expect("reads");
            let warned = imp.warnings.iter().any(|w| w.contains("only reads"));
            assert_eq!(warned, ok, "sync={value}: {:?}", imp.warnings);
        }
        // Buffered writes are written back within each call.
        for (value, mode) in [
            ("dsync", SyncWrites::Dsync),
            ("sync", SyncWrites::Sync),
            ("1", SyncWrites::Sync),
            ("0", SyncWrites::None),
        ] {
            let text = format!("[b]\nrw=write\nsync={value}\nruntime=5ms\n");
            let imp = import_str(&text, "b.fio", &args()).expect("buffered sync");
            let Work::Io(io) = &imp.scenario.jobs[0].work else {
                panic!("an I/O job");
            };
            assert!(!io.direct && imp.warnings.is_empty(), "{:?}", imp.warnings);
            assert_eq!(io.shape.sync_writes, mode, "sync={value}");
        }
        let e = import_str("[b]\nsync=maybe\n", "b.fio", &args()).expect_err("bad value");
        assert!(e.to_string().starts_with("b.fio:2:"), "{e}");
    }

    /// fio's fsync after a job's loop counts in its runtime: on buffered
    /// writes it is the scenario's `end_fsync`, with a run that waits for
    /// it, whether the job ends by its size or by its runtime; warned
    /// where it finds no dirty pages (direct or `O_SYNC` writes) and where
    /// the job only reads; nothing at 0.
    #[test]
    fn a_final_fsync_on_buffered_writes_is_modelled_and_warned_where_it_flushes_nothing() {
        for option in ["end_fsync", "fsync_on_close"] {
            for timed in ["", "runtime=1\n", "time_based\nruntime=1\n"] {
                let text = format!("[w]\nrw=write\nsize=1m\n{timed}{option}=1\n");
                let imp = import_str(&text, "w.fio", &args()).expect("buffered writes");
                let job = &imp.scenario.jobs[0];
                assert!(io(job).shape.end_fsync, "{option} {timed}");
                assert!(imp.scenario.run_to_end, "the run waits: {option} {timed}");
                assert_eq!(job.runtime.is_some(), !timed.is_empty(), "{timed}");
                assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
            }
            for (extra, needle) in [
                ("direct=1\n", "O_DIRECT"),
                ("sync=1\n", "O_DIRECT or O_SYNC"),
                ("rw=read\n", "only reads"),
            ] {
                let text = format!("[w]\nrw=write\nsize=1m\n{extra}{option}=1\n");
                let imp = import_str(&text, "w.fio", &args()).expect(extra);
                assert!(
                    imp.warnings
                        .iter()
                        .any(|w| w.starts_with("w.fio:5:") && w.contains(needle)),
                    "{extra}: {:?}",
                    imp.warnings
                );
                assert!(!io(&imp.scenario.jobs[0]).shape.end_fsync, "{extra}");
            }
            let off = format!("[w]\nrw=write\nsize=1m\n{option}=0\n");
            let imp = import_str(&off, "w.fio", &args()).expect("off");
            assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
            assert!(!io(&imp.scenario.jobs[0]).shape.end_fsync);
        }
    }

    /// `invalidate=0` leaves what the page cache holds of fio's file:
    /// warned where a buffered job reads (the model's cache starts empty),
    /// warned as changing nothing elsewhere, silent at fio's default.
    #[test]
    fn a_cache_fio_leaves_warm_is_warned_where_buffered_reads_could_hit_it() {
        let warned = |text: &str, needle: &str| {
            let imp = import_str(text, "r.fio", &args()).expect(text);
            imp.warnings
                .iter()
                .any(|w| w.starts_with("r.fio:4:") && w.contains(needle))
        };
        for rw in ["read", "randread", "randrw", "rw"] {
            let text = format!("[r]\nrw={rw}\nsize=1m\ninvalidate=0\n");
            assert!(warned(&text, "starts empty"), "{rw}");
        }
        for (text, line) in [
            ("[r]\nrw=randread\ndirect=1\nsize=1m\ninvalidate=0\n", 5),
            ("[r]\nrw=randwrite\nsize=1m\ninvalidate=0\n", 4),
        ] {
            let imp = import_str(text, "r.fio", &args()).expect(text);
            assert!(
                imp.warnings
                    .iter()
                    .any(|w| w.starts_with(&format!("r.fio:{line}:"))
                        && w.contains("changes nothing")),
                "{text}: {:?}",
                imp.warnings
            );
        }
        let default = "[r]\nrw=randread\nsize=1m\ninvalidate=1\n";
        let imp = import_str(default, "r.fio", &args()).expect("the default");
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    #[test]
    fn hipri_everywhere_compares_polling_and_hipri_is_per_job() {
        let all = "[global]\nioengine=pvsync2\nhipri\n[a]\n[b]\n";
        let s = import_str(all, "h.fio", &args()).expect("valid").scenario;
        assert_eq!(s.strategies.len(), 1);
        assert_eq!(s.strategies[0].mode, CompletionMode::Poll);
        // Linux polls per request: a job without hipri beside one with it
        // runs, its requests on interrupts.
        let some = "[a]\nioengine=io_uring\nhipri=1\n[b]\nioengine=io_uring\n";
        let s = import_str(some, "h.fio", &args())
            .expect("mixed hipri")
            .scenario;
        assert!(io(&s.jobs[0]).hipri && !io(&s.jobs[1]).hipri);
        let mut explicit = args();
        explicit.strategies = Some(vec![Strategy {
            name: "p".into(),
            mode: CompletionMode::Poll,
            interrupts: PolicyConfig::None,
        }]);
        assert!(import_str(some, "h.fio", &explicit).is_ok());
    }

    #[test]
    fn name_option_batch_clamping_and_unknown_profiles() {
        let text = "[x]\nname=reader\nioengine=io_uring\niodepth=8\niodepth_batch=32\n";
        let s = import_str(text, "n.fio", &args()).expect("valid").scenario;
        assert_eq!(s.jobs[0].name, "reader");
        let j = io(&s.jobs[0]);
        assert_eq!((j.iodepth, j.batch), (8, 8));
        let nowait = "[x]\nioengine=pvsync2\ndirect=1\nnowait\n";
        let s = import_str(nowait, "n.fio", &args())
            .expect("valid")
            .scenario;
        assert!(io(&s.jobs[0]).nowait);
        // fio's default is buffered, where RWF_NOWAIT fails calls.
        let e = import_str("[x]\nioengine=pvsync2\nnowait\n", "n.fio", &args())
            .expect_err("buffered nowait");
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().contains("EOPNOTSUPP"), "{e}");
        let e = import_str("[x]\nioengine=io_uring\nnowait\n", "n.fio", &args())
            .expect_err("uring nowait");
        assert_eq!(e.line, Some(3));
        let e = import_str(text, "n.fio", &FioArgs::new("floppy", "xeon-e5-2660v4"))
            .expect_err("unknown device");
        assert!(e.to_string().contains("unknown device profile 'floppy'"));
        assert!(import_str("; nothing\n[global]\nbs=4k\n", "e.fio", &args()).is_err());
    }

    #[test]
    fn imports_pass_the_scenario_parser_and_take_set_overrides() {
        let imp = import_str(FIELD_FILE, "lat.fio", &args()).expect("valid");
        let reloaded =
            cint_scenario::load_str(&cint_scenario::to_toml(&imp.scenario), "lat.fio", &[])
                .expect("the rendered import loads");
        assert_eq!(reloaded, imp.scenario);
        let mut with_sets = args();
        with_sets.sets = vec!["duration=50ms".into(), "job.async-reader.iodepth=32".into()];
        let s = import_str(FIELD_FILE, "lat.fio", &with_sets)
            .expect("valid")
            .scenario;
        assert_eq!(s.duration, 50_000_000);
        assert_eq!(io(&s.jobs[0]).iodepth, 32);
        with_sets.sets = vec!["job.async-reader.depth=32".into()];
        let e = import_str(FIELD_FILE, "lat.fio", &with_sets).expect_err("unknown key");
        let msg = e.to_string();
        assert!(
            msg.starts_with("lat.fio: --set job.async-reader.depth=32: ") && !msg.contains('\n'),
            "the file is named once: {msg}"
        );
    }

    /// Written the way fio's own examples are (examples/fio-rand-read.fio,
    /// examples/ssd-test.fio).
    #[test]
    fn files_in_the_style_of_fios_examples() {
        let rand_read = "; fio-rand-read.job for fiotest\n\n[global]\nname=fio-rand-read\n\
                         filename=fio-rand-read\nrw=randread\nbs=4K\ndirect=0\nnumjobs=1\n\
                         time_based\nruntime=900\n\n[file1]\nsize=1G\nioengine=libaio\niodepth=16\n";
        let imp = import_str(rand_read, "fio-rand-read.fio", &args()).expect("valid");
        let s = &imp.scenario;
        assert_eq!(s.jobs[0].name, "file1");
        assert_eq!(s.duration, 900_000_000_000);
        let j = io(&s.jobs[0]);
        assert_eq!(
            (j.engine, j.iodepth, j.size, j.direct),
            (Engine::Libaio, 16, 1 << 30, false)
        );
        assert_eq!(imp.warnings.len(), 1, "{:?}", imp.warnings);

        let ssd_test = "# Do some important numbers on SSD drives, to gauge what kind of\n\
                        # performance you might get out of them.\n#\n[global]\nbs=4k\n\
                        ioengine=libaio\niodepth=4\nsize=10g\ndirect=1\nruntime=60\n\
                        directory=/mount-point-of-ssd\nfilename=ssd.test.file\n\n\
                        [seq-read]\nrw=read\nstonewall\n\n[rand-read]\nrw=randread\nstonewall\n";
        let imp = import_str(ssd_test, "ssd-test.fio", &args()).expect("stonewall groups");
        let s = &imp.scenario;
        let groups: Vec<u32> = s.jobs.iter().map(|j| j.schedule.group).collect();
        assert_eq!(groups, [0, 1], "the first job's stonewall starts nothing");
        // Each group runs up to 60 s; each job also ends after its 10 GiB.
        assert_eq!(s.duration, 120_000_000_000);
        for job in &s.jobs {
            assert_eq!(job.runtime, Some(60_000_000_000));
            assert_eq!(io(job).shape.io_size, Some(10 << 30));
        }
        // directory, filename.
        assert_eq!(imp.warnings.len(), 2, "{:?}", imp.warnings);
    }

    #[test]
    fn batch_complete_max_defaults_to_min_and_may_not_be_below_it() {
        let job = |extra: &str| {
            format!("[j]\nioengine=libaio\niodepth=64\niodepth_batch_complete_min=8\n{extra}")
        };
        let s = import_str(&job(""), "m.fio", &args())
            .expect("valid")
            .scenario;
        assert_eq!(
            (
                io(&s.jobs[0]).batch_complete_min,
                io(&s.jobs[0]).batch_complete_max
            ),
            (8, 8)
        );
        let s = import_str(&job("iodepth_batch_complete_max=32\n"), "m.fio", &args())
            .expect("valid")
            .scenario;
        assert_eq!(io(&s.jobs[0]).batch_complete_max, 32);
        let e = import_str(&job("iodepth_batch_complete_max=4\n"), "m.fio", &args())
            .expect_err("below min");
        let line = e.to_string();
        assert!(
            line.contains("m.fio:5") && line.contains("iodepth_batch_complete_max=4"),
            "{line}"
        );
    }

    /// `iodepth_batch_complete_min=0`: reap calls that do not wait; with
    /// `iodepth_batch_complete_max` at its default, 0 too, fio's
    /// `io_in_polling` (a reap after every submission).
    #[test]
    fn a_completion_batch_of_zero_reaps_without_waiting() {
        let job = |extra: &str| {
            let text = format!("[j]\nioengine=libaio\niodepth=16\nsize=1m\ndirect=1\n{extra}");
            let imp = import_str(&text, "z.fio", &args()).expect("valid");
            io(&imp.scenario.jobs[0]).clone()
        };
        let each = job("iodepth_batch_complete_min=0\n");
        assert_eq!((each.batch_complete_min, each.batch_complete_max), (0, 0));
        assert!(each.reaps_without_waiting() && each.reaps_each_submission());
        let bounded = job("iodepth_batch_complete_min=0\niodepth_batch_complete_max=8\n");
        assert_eq!(
            (bounded.batch_complete_min, bounded.batch_complete_max),
            (0, 8)
        );
        assert!(bounded.reaps_without_waiting() && !bounded.reaps_each_submission());
        assert!(!job("").reaps_without_waiting());
    }

    #[test]
    fn iodepth_low_and_a_batch_of_zero_are_read_as_fio_fixes_them() {
        let depths = |extra: &str| {
            let text = format!("[j]\nioengine=libaio\niodepth=16\nsize=1m\ndirect=1\n{extra}");
            let imp = import_str(&text, "d.fio", &args()).expect("valid");
            let j = io(&imp.scenario.jobs[0]).clone();
            ((j.batch, j.iodepth_low), imp.warnings)
        };
        // fio's init.c: iodepth_low of 0 or above the depth is the depth,
        // and a submission batch of 0 is the depth too.
        assert_eq!(depths("").0, (1, 16));
        assert_eq!(depths("iodepth_low=4\n").0, (1, 4));
        assert_eq!(depths("iodepth_low=0\n").0, (1, 16));
        assert_eq!(depths("iodepth_low=64\n").0, (1, 16));
        assert_eq!(depths("iodepth_batch=0\n").0, (16, 16));
        assert!(depths("iodepth_low=4\n").1.is_empty());
        // Where fio's loop never waits for a full queue it changes
        // nothing, and the import says so on its line.
        let (got, warnings) = depths("iodepth_low=4\nio_submit_mode=offload\n");
        assert_eq!(got, (1, 16));
        assert!(
            warnings.len() == 1
                && warnings[0].starts_with("d.fio:6: warning: job 'j': iodepth_low=4"),
            "{warnings:?}"
        );
        let text = "[j]\nioengine=psync\niodepth=16\niodepth_low=4\nsize=1m\n";
        let imp = import_str(text, "s.fio", &args()).expect("valid");
        assert_eq!(io(&imp.scenario.jobs[0]).iodepth_low, 1);
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.starts_with("s.fio:4:") && w.contains("iodepth_low=4 has no effect")),
            "{:?}",
            imp.warnings
        );
    }

    #[test]
    fn a_refusal_of_the_scenarios_checks_names_the_fio_option_and_its_line() {
        let text =
            "[global]\nruntime=10ms\ndirect=1\n[j]\nioengine=io_uring\nsqthread_poll=1\nflow=1\n";
        let e = import_str(text, "x.fio", &args()).expect_err("flow with sqpoll is refused");
        assert_eq!(
            e.to_string(),
            "x.fio:7: option 'flow': flow control with sqpoll is not modelled"
        );
        // Set by fio's default (direct=0): the job's section.
        let text = "[global]\nruntime=10ms\n[j]\nioengine=libaio\nio_submit_mode=offload\n";
        let e = import_str(text, "y.fio", &args()).expect_err("buffered offload is refused");
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.message.starts_with("job 'j': direct (fio's default"),
            "{e}"
        );
    }

    /// Each figure is what fio 3.33 does with `ioengine=null` (the s18
    /// fio audit): the requests or bytes a job ends after.
    #[test]
    fn a_jobs_end_counts_as_fios() {
        let end = |text: &str| {
            let imp = import_str(text, "e.fio", &args()).expect(text);
            let shape = io(&imp.scenario.jobs[0]).shape.clone();
            (shape.number_ios, shape.io_size)
        };
        // number_ios over all loops.
        assert_eq!(end("[j]\nrw=read\nnumber_ios=100\nloops=3\n").0, Some(300));
        // io_size past the file is not repeated per loop: 3 MiB.
        assert_eq!(
            end("[j]\nrw=read\nsize=1m\nio_size=3m\nloops=2\n").1,
            Some(3 << 20)
        );
        // Past the file with loops, the passes go on to fio's limit,
        // io_size times loops: 21 passes of 100 KiB for 2 MiB.
        assert_eq!(
            end("[j]\nrw=write\nsize=100k\nio_size=2m\nloops=2\n").1,
            Some(2100 << 10)
        );
        // Within the file it is: 3 MiB.
        assert_eq!(
            end("[j]\nrw=read\nsize=4m\nio_size=1m\nloops=3\n").1,
            Some(3 << 20)
        );
        // A pass stops short of a request past the file: 15 of 64 KiB.
        assert_eq!(
            end("[j]\nrw=read\nsize=1000k\nbs=64k\n").1,
            Some(15 * 65536)
        );
        // A size past the file's is cut to it, a share is of the file
        // (fio 3.33: 128, 256, 7 and 128 reads; docs/evidence/fio-beside-model.sh).
        for (text, requests) in [
            ("size=1m\nfilesize=512k\n", 128),
            ("size=1m\nfilesize=512k\nloops=2\n", 256),
            ("size=30%\nfilesize=100k\n", 7),
            ("size=512k\nfilesize=1m\n", 128),
        ] {
            let bytes = end(&format!("[j]\nrw=read\nbs=4k\n{text}")).1;
            assert_eq!(bytes, Some(requests * 4096), "{text}");
        }
    }

    /// An offloaded job that ends by its size makes its first pass only,
    /// to the file's end or fio's byte limit (fio 3.33, libaio depth 8,
    /// 4 KiB over 1 MiB: 256, 256, 128 and 512 requests; the first two
    /// were 512 here before 2026-11-29, second session).
    #[test]
    fn an_offloaded_job_makes_one_pass() {
        const OFFLOADED: &str =
            "[j]\ndirect=1\nbs=4k\nsize=1m\nioengine=libaio\niodepth=8\nio_submit_mode=offload\n";
        let requests = |text: &str| {
            let imp = import_str(&format!("{OFFLOADED}{text}"), "o.fio", &args()).expect(text);
            io(&imp.scenario.jobs[0]).shape.io_size.map(|b| b / 4096)
        };
        assert_eq!(requests("loops=2\n"), Some(256));
        assert_eq!(requests("io_size=2m\n"), Some(256));
        assert_eq!(requests("io_size=512k\n"), Some(128));
        assert_eq!(requests("rw=randread\nnorandommap\nloops=2\n"), Some(512));
    }

    /// The first job of a job file that imports.
    fn first_io(text: &str) -> IoJob {
        let imp = import_str(text, "t.fio", &args()).unwrap_or_else(|e| panic!("{text}: {e}"));
        io(&imp.scenario.jobs[0]).clone()
    }

    /// `io_size=P%` is that share of the job's file, which caps its size
    /// (filesetup.c `io_size_percent`): fio 3.33 reads 128 requests of 4
    /// KiB with `size=1m io_size=50%`, and writes 77 at random with 30%.
    /// Refused until 2026-11-29 (second session). Beside a `filesize` the
    /// share is of the file past the offset: `size=200k filesize=256k
    /// io_size=50%` reads 32, `size=100k` its 25, `offset=64k` 24, and
    /// a `size=30%` share of the file is the base (10; the model read 25,
    /// 13, 24 and 10 until the third session).
    #[test]
    fn io_size_as_a_share_of_the_size() {
        let job = |text: &str| {
            let io = first_io(&format!("[j]\nbs=4k\n{text}"));
            (io.size >> 10, io.shape.io_size.map(|b| b.div_ceil(4096)))
        };
        assert_eq!(job("size=1m\nio_size=50%\n"), (1024, Some(128)));
        assert_eq!(
            job("size=1m\nrw=randwrite\nio_size=30%\n"),
            (1024, Some(77))
        );
        assert_eq!(job("size=1m\nio_size=100%\n"), (1024, Some(256)));
        let e = import_str("[j]\nbs=8k\nsize=10k\nio_size=50%\n", "s.fio", &args())
            .expect_err("less than a request");
        assert_eq!(e.line, Some(4), "{e}");
        assert!(import_str("[j]\nio_size=150%\n", "s.fio", &args()).is_err());
        let beside_a_file = |text: &str| job(&format!("filesize=256k\nio_size=50%\n{text}")).1;
        assert_eq!(beside_a_file("size=200k\n"), Some(32));
        assert_eq!(beside_a_file("size=100k\n"), Some(25));
        assert_eq!(beside_a_file("size=200k\noffset=64k\n"), Some(24));
        assert_eq!(beside_a_file("rw=randread\nsize=30%\n"), Some(10));
    }

    /// Several files a job (`nrfiles`), direct: a pass is each file's whole
    /// requests, the job's size fio's byte limit (fio 3.33, 4 KiB requests
    /// in a directory: 256, 255, 6 of 16 KiB, 48, 25, 256 at random without
    /// the map, 3; `fsync=1` under libaio 255 writes and 255 fsyncs, whose
    /// last the model makes because its file leaves less than a request
    /// past its pass). Refused where each file's own end or offsets would
    /// decide more.
    #[test]
    fn several_files_a_job_make_their_whole_requests() {
        let job = |text: &str| {
            let io = first_io(&format!("[j]\ndirect=1\nbs=4k\n{text}"));
            (io.size, io.shape.io_size.map(|b| b.div_ceil(4096)))
        };
        assert_eq!(job("size=1m\nnrfiles=4\n").1, Some(256));
        assert_eq!(job("size=1m\nnrfiles=3\n"), (1_048_064, Some(255)));
        assert_eq!(job("bs=16k\nsize=100k\nnrfiles=3\n").1, Some(24));
        assert_eq!(job("filesize=64k\nsize=1m\nnrfiles=3\n").1, Some(48));
        assert_eq!(job("filesize=64k\nsize=100k\nnrfiles=3\n").1, Some(25));
        assert_eq!(
            job("rw=randread\nnorandommap\nsize=1m\nnrfiles=3\n").1,
            Some(256)
        );
        assert_eq!(job("size=20k\nnrfiles=3\n").1, Some(3));
        let refused = |text: &str, words: &str| {
            let text = format!("[j]\nbs=4k\nsize=1m\n{text}");
            let e = import_str(&text, "n.fio", &args())
                .expect_err(&text)
                .to_string();
            assert!(e.starts_with("n.fio:4: ") && e.contains(words), "{e}");
        };
        let imp =
            import_str("[j]\nbs=4k\nsize=1m\nnrfiles=3\n", "n.fio", &args()).expect("buffered");
        assert!(
            imp.warnings.iter().any(|w| w.contains("as one file's")),
            "{:?}",
            imp.warnings
        );
        assert_eq!(
            io(&imp.scenario.jobs[0]).shape.io_size.map(|b| b / 4096),
            Some(255)
        );
        // The files `filename` names, which fio takes over nrfiles.
        assert_eq!(job("size=1m\nfilename=a:b:c\n").1, Some(255));
        assert_eq!(job("size=1m\nnrfiles=3\nfilename=x\n").1, Some(256));
        assert_eq!(job("size=1m\nfilename=a\\:b:c\n").1, Some(256));
        refused("nrfiles=3\ndirect=1\noffset=4k\n", "an offset");
        refused(
            "nrfiles=3\ndirect=1\nbssplit=4k/50:8k/50\n",
            "several sizes",
        );
        refused("nrfiles=3\ndirect=1\nrw=rw\n", "in order");
        let text = "[j]\ndirect=1\nbs=4k\nsize=2k\nfilesize=64k\nnrfiles=3\n";
        let e = import_str(text, "n.fio", &args()).expect_err("less than a request");
        assert!(
            e.to_string().starts_with("n.fio:4: ") && e.to_string().contains("less than bs"),
            "{e}"
        );
        let text = "[j]\ndirect=1\nbs=4k\nsize=8k\nnrfiles=3\n";
        let e = import_str(text, "n.fio", &args()).expect_err("no request fits");
        assert!(e.to_string().contains("0 of them in whole requests"), "{e}");
        // Time based, the files change nothing the model measures: a list
        // of devices with no size, and an offset, run as before.
        let timed = "nrfiles=3\nbssplit=4k/50:8k/50\ntime_based\nruntime=1s\nsize=1m\n";
        assert!(job(timed).1.is_none());
        let timed = "[j]\nnrfiles=3\ntime_based\nruntime=1s\nsize=1m\n";
        let imp = import_str(timed, "n.fio", &args()).expect("buffered, time based");
        assert!(
            imp.warnings.iter().any(|w| w.contains("as one file's")),
            "{:?}",
            imp.warnings
        );
        let devices = "[j]\ndirect=1\nfilename=/dev/a:/dev/b\noffset=1g\ntime_based\nruntime=1s\n";
        let imp = import_str(devices, "n.fio", &args()).expect("devices, time based");
        assert!(
            imp.warnings.iter().any(|w| w.contains("lists 2 files")),
            "{:?}",
            imp.warnings
        );
    }

    /// Reads and writes in order end fio's pass where the direction drawn
    /// reaches the file's end, which the model does not keep: warned
    /// where that can come before the job's bytes, and only there (fio
    /// 3.33, 4 KiB over 1 MiB, reads 70%: `io_size=2m loops=2` makes 746
    /// requests, 1 024 here; `loops=2` 512 in both, as do libaio at depth
    /// 8 and `io_size=3m` under libaio; `bs=16k size=100k`, reads 90%,
    /// ends a pass at 6 requests about half the time, the model at 7).
    #[test]
    fn a_direction_that_can_end_fios_pass_first_is_warned() {
        let warned = |text: &str| {
            let file = format!("[j]\nrw=rw\nrwmixread=70\nbs=4k\nsize=1m\n{text}");
            let imp = import_str(&file, "m.fio", &args()).expect(text);
            let on_rw = |w: &String| w.starts_with("m.fio:2: ") && w.contains("its own offset");
            imp.warnings.iter().filter(|w| on_rw(w)).count()
        };
        assert_eq!(warned("io_size=2m\nloops=2\n"), 1);
        assert_eq!(warned("bs=16k\nsize=100k\n"), 1);
        assert_eq!(warned("bs=16k\nsize=68k\nioengine=libaio\niodepth=4\n"), 1);
        assert_eq!(
            warned("io_submit_mode=offload\ndirect=1\nioengine=libaio\nio_size=2m\n"),
            1
        );
        for quiet in [
            "",
            "loops=2\n",
            "ioengine=libaio\niodepth=8\nloops=2\n",
            "ioengine=libaio\niodepth=8\nio_size=3m\n",
            "bs=16k\nsize=100k\nfilesize=1m\n",
            "rwmixread=100\nio_size=2m\n",
            "time_based\nruntime=1s\n",
        ] {
            assert_eq!(warned(quiet), 0, "{quiet}");
        }
    }

    /// A size in fio's IEC units, powers of 1000 under its default
    /// `kb_base=1024`, is seldom whole sectors. Where every request is,
    /// the job's file is its whole sectors and its size stays fio's byte
    /// limit (fio 3.33, `docs/evidence/fio-beside-model.sh`-style runs:
    /// `size=1MiB` reads 244 requests of 4 KiB in order and at random
    /// with the map, 245 without it; `filesize=1MiB size=512k loops=3`
    /// writes 384; `io_size=3MiB fdatasync=3` 732 writes and 244 syncs).
    /// Where the requests are not whole sectors, such a size is refused.
    #[test]
    fn a_size_of_part_sectors_keeps_its_whole_ones_as_the_file() {
        let job = |text: &str| {
            let io = first_io(&format!("[j]\nbs=4k\n{text}"));
            (io.size, io.shape.io_size.map(|b| b.div_ceil(4096)))
        };
        assert_eq!(job("rw=read\nsize=1MiB\n"), (999_936, Some(244)));
        assert_eq!(job("rw=randread\nsize=1MiB\n"), (999_936, Some(244)));
        assert_eq!(
            job("rw=randread\nnorandommap\nsize=1MiB\n"),
            (999_936, Some(245))
        );
        assert_eq!(
            job("rw=write\nfilesize=1MiB\nsize=512k\nloops=3\n"),
            (999_936, Some(384))
        );
        assert_eq!(
            job("rw=write\nsize=1MiB\nio_size=3MiB\nfdatasync=3\n"),
            (999_936, Some(732))
        );
        let refused = |text: &str, line: usize| {
            let e = import_str(&format!("[j]\nrw=write\n{text}"), "s.fio", &args())
                .expect_err(text)
                .to_string();
            assert!(e.starts_with(&format!("s.fio:{line}: ")), "{e}");
            assert!(e.contains("not whole sectors"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        };
        refused("bs=2300\nsize=1MiB\n", 4);
        refused("bs=4k\nbs=2300,4k\nfilesize=1MiB\nsize=512k\n", 5);
    }

    /// Beside a `filesize`, fio's region is what each thread's start
    /// offset leaves of the file (filesetup.c `setup_files`), which caps
    /// the size; without one, fio lays the file out to the offset and
    /// the size, and nothing changes. fio 3.33 (docs/evidence/fio-beside-model.sh):
    /// 12, 12, 4, 4 in each of two threads, 16 and 28 requests of 4 KiB.
    #[test]
    fn an_offset_shortens_a_jobs_file() {
        let end = |text: &str| {
            let io = first_io(&format!("[j]\nrw=read\nbs=4k\n{text}"));
            io.shape.io_size.map(|b| b / 4096)
        };
        for (text, requests) in [
            ("filesize=64k\noffset=16k\n", 12),
            ("size=128k\nfilesize=64k\noffset=16k\n", 12),
            ("rw=randread\nsize=30%\nfilesize=64k\noffset=16k\n", 4),
            (
                "filesize=64k\nsize=16k\noffset=16k\nnumjobs=2\noffset_increment=8k\n",
                4,
            ),
            ("size=64k\noffset=16k\n", 16),
            ("filesize=64k\noffset=8k\nloops=2\n", 28),
        ] {
            assert_eq!(end(text), Some(requests), "{text}");
        }
        let refused = |text: &str, line: usize, words: &str| {
            let e = import_str(&format!("[j]\nrw=read\nbs=4k\n{text}"), "o.fio", &args())
                .expect_err(text)
                .to_string();
            assert!(e.starts_with(&format!("o.fio:{line}: ")), "{e}");
            assert!(e.contains(words), "{e}");
        };
        // fio: "blocksize is larger than data set range".
        refused("filesize=64k\noffset=62k\n", 5, "leaves less than bs");
        // A size below the file's is fio's byte limit within it: 13 writes
        // of 8 KiB, the last past 100 KiB, under psync and libaio alike (12
        // here before); 25 over two loops.
        let limit = |text: &str| {
            let io = first_io(&format!("[j]\nrw=write\nbs=8k\n{text}"));
            (io.size >> 10, io.shape.io_size.map(|b| b.div_ceil(8 << 10)))
        };
        assert_eq!(limit("size=100k\nfilesize=256k\n"), (256, Some(13)));
        assert_eq!(
            limit("size=100k\nfilesize=256k\nioengine=libaio\n"),
            (256, Some(13))
        );
        assert_eq!(
            limit("size=100k\nfilesize=256k\nloops=2\n"),
            (256, Some(25))
        );
        assert_eq!(
            limit("size=100k\noffset=64k\nfilesize=256k\n"),
            (192, Some(13))
        );
        // Its queueing passes end once they have queued the size, each of
        // whole requests (fio's sync due there begins the next pass:
        // crate cint_scenario::passes).
        let queued = "size=100k\nfilesize=256k\nloops=2\nfsync=1\nioengine=libaio\n";
        let imp = import_str(&format!("[j]\nrw=write\nbs=8k\n{queued}"), "o.fio", &args());
        let shape = io(&imp.expect("syncs on queued passes").scenario.jobs[0])
            .shape
            .clone();
        assert_eq!(
            (shape.pass_size, shape.io_size),
            (Some(104 << 10), Some(200 << 10))
        );
        // Threads of one job would go over different sizes.
        refused(
            "filesize=64k\noffset=16k\nnumjobs=2\noffset_increment=8k\n",
            7,
            "numjobs=2",
        );
        // Not where they run for a time or a count: a whole device split
        // among threads.
        for ends in ["time_based\nruntime=1s\n", "number_ios=10\n"] {
            let text = format!("[j]\nrw=read\nbs=4k\nnumjobs=4\noffset_increment=10g\n{ends}");
            assert!(import_str(&text, "o.fio", &args()).is_ok(), "{ends}");
        }
        // fio 3.33 makes 16 then 12 requests over a file it lays out.
        refused("size=64k\noffset=25%\nloops=2\n", 5, "percentage offset");
        assert_eq!(end("size=64k\noffset=0%\nloops=2\n"), Some(32));
    }

    /// Where fio's passes over the file change what a job does, the
    /// scenario carries them (`pass_size`): several, or one short of the
    /// file; never where they follow bytes the model does not keep.
    #[test]
    fn passes_over_the_file_are_kept_where_they_matter() {
        let pass = |text: &str| {
            let imp = import_str(&format!("[j]\nbs=4k\n{text}"), "p.fio", &args()).expect(text);
            let shape = io(&imp.scenario.jobs[0]).shape.clone();
            (shape.pass_size, shape.io_size)
        };
        let mib = 1 << 20;
        assert_eq!(
            pass("rw=write\nsize=1m\nloops=2\n"),
            (Some(mib), Some(2 * mib))
        );
        assert_eq!(pass("rw=write\nsize=1026k\n"), (Some(mib), Some(mib)));
        assert_eq!(
            pass("rw=randwrite\nsize=1m\nloops=3\n"),
            (Some(mib), Some(3 * mib))
        );
        // One pass over the whole file is no pass at all.
        assert_eq!(pass("rw=write\nsize=1m\n"), (None, Some(mib)));
        // Without a map, a synchronous engine's one pass runs to the
        // job's bytes; a queueing engine's passes end at the file's size.
        assert_eq!(
            pass("rw=randwrite\nsize=1m\nloops=2\nnorandommap\n"),
            (None, Some(2 * mib))
        );
        assert_eq!(
            pass("rw=randwrite\nsize=1m\nloops=2\nnorandommap\nioengine=libaio\n"),
            (Some(mib), Some(2 * mib))
        );
        // Past the file, io_size's passes are the file's; within it too,
        // each cut by fio's byte limit, io_size times loops.
        assert_eq!(
            pass("rw=write\nsize=64k\nio_size=2m\n"),
            (Some(64 << 10), Some(2 * mib))
        );
        assert_eq!(
            pass("rw=write\nbs=16k\nsize=100k\nio_size=96k\nloops=2\n"),
            (Some(96 << 10), Some(192 << 10))
        );
        // fio's byte limit where the passes end short of it.
        let limit = |text: &str| {
            let imp = import_str(&format!("[j]\nbs=4k\n{text}"), "p.fio", &args()).expect(text);
            let shape = io(&imp.scenario.jobs[0]).shape.clone();
            (shape.pass_size, shape.byte_limit)
        };
        let kib = |k: u64| Some(k << 10);
        assert_eq!(limit("rw=write\nsize=1026k\n"), (kib(1024), kib(1026)));
        assert_eq!(
            limit("rw=write\nsize=1m\nio_size=1026k\n"),
            (kib(1024), kib(1026))
        );
        assert_eq!(
            limit("rw=write\nsize=1026k\nio_size=1m\nloops=2\n"),
            (kib(1024), None)
        );
        assert_eq!(limit("rw=write\nsize=1m\nloops=2\n"), (kib(1024), None));
        // In order over a file of several sizes: one pass tells where the
        // file ends, and it is filled to within the smallest size.
        assert_eq!(
            pass("rw=write\nbssplit=4k/70:16k/30\nsize=200k\n"),
            (Some(200 << 10), Some(200 << 10))
        );
        for other in ["io_size=512k\n", "time_based\nruntime=1s\n", "rw=read:8k\n"] {
            assert_eq!(
                pass(&format!("rw=read\nsize=1m\nloops=2\n{other}")).0,
                None,
                "{other}"
            );
        }
    }

    /// A random job without the map never runs out of offsets: its
    /// bytes follow fio's byte limits (fio 3.33, counted here with
    /// docs/evidence/fio-beside-model.sh).
    #[test]
    fn a_random_job_without_the_map_ends_by_fios_byte_limits() {
        let bytes = |text: &str| {
            let imp = import_str(
                &format!("[j]\nbs=4k\nnorandommap\n{text}"),
                "u.fio",
                &args(),
            )
            .expect(text);
            io(&imp.scenario.jobs[0]).shape.io_size
        };
        let kib = |k: u64| Some(k << 10);
        // 770 reads: issued until the bytes reach three times the size.
        assert_eq!(bytes("rw=randread\nsize=1026k\nloops=3\n"), kib(3078));
        // A distribution turns the map off: 257 writes of 4 KiB in fio
        // 3.33, 256 here before 2026-11-29 (second session).
        let skewed = "[j]\nbs=4k\nrw=randwrite\nsize=1026k\nrandom_distribution=pareto:0.2\n";
        let imp = import_str(skewed, "u.fio", &args()).expect("valid");
        assert_eq!(io(&imp.scenario.jobs[0]).shape.io_size, kib(1026));
        let past = "size=68k\nio_size=96k\nloops=3\n";
        assert_eq!(bytes(&format!("rw=randread\n{past}")), kib(288), "psync");
        assert_eq!(
            bytes(&format!("rw=randread\nioengine=libaio\n{past}")),
            kib(204)
        );
        assert_eq!(
            bytes(&format!("rw=randwrite\nioengine=libaio\n{past}")),
            kib(288)
        );
        // Reads and writes in order keep an offset each: their bytes
        // reach the size first (13 requests of 16 KiB for 200 KiB).
        let in_order = |text: &str| {
            let imp = import_str(&format!("[j]\n{text}"), "o.fio", &args()).expect(text);
            let shape = io(&imp.scenario.jobs[0]).shape.clone();
            (shape.io_size, shape.pass_size)
        };
        assert_eq!(in_order("rw=rw\nbs=16k\nsize=200k\n"), (kib(200), None));
        assert_eq!(
            in_order("rw=rw\nbs=8k\nsize=1026k\nloops=3\n"),
            (kib(3078), None)
        );
        // All reads, one offset: the file's end ends the pass, short of
        // the file.
        assert_eq!(
            in_order("rw=rw\nrwmixread=100\nbs=16k\nsize=200k\n"),
            (kib(192), kib(192))
        );
        // Under a queueing engine a pass ends once it has queued the
        // file's size in whole requests, whatever the job writes, and
        // passes follow while what is left of io_size is at least a
        // request. fio 3.33: 512 requests of 4 KiB (1 MiB a pass), 275
        // (100 KiB a pass), 70 of 16 KiB (112 KiB a pass), and 272 random
        // reads of 4 KiB (68 KiB a pass); 1 024, 256, 69 and 256 here
        // before 2026-11-29.
        for (text, bytes) in [
            ("bs=4k\nsize=1m\nloops=2\nio_size=2m\n", 2048),
            ("bs=4k\nsize=100k\nloops=2\nio_size=1m\n", 1100),
            ("bs=16k\nsize=100k\nloops=2\nio_size=1m\n", 1120),
            (
                "rw=randread\nnorandommap\nbs=4k\nsize=68k\nloops=2\nio_size=1m\n",
                1088,
            ),
        ] {
            let job = format!("rw=rw\nioengine=libaio\n{text}");
            assert_eq!(in_order(&job).0, kib(bytes), "{text}");
        }
    }

    #[test]
    fn blockalign_turns_the_map_off_and_split_sizes_under_it_are_refused() {
        let text = "[j]\nrw=randread\nbssplit=4k/50:64k/50\nblockalign=8k\n";
        let imp = import_str(text, "b.fio", &args()).expect("valid");
        assert_eq!(
            io(&imp.scenario.jobs[0]).shape.random_map,
            cint_scenario::RandomMap::Off
        );
        let e = import_str("[j]\nrw=randrw\nsize=1m\nbs=4k,16k\n", "s.fio", &args())
            .expect_err("fio ends such a job early");
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("norandommap"), "{e}");
        let ok = "[j]\nrw=randrw\nsize=1m\nbs=4k,16k\nnorandommap\n";
        assert!(import_str(ok, "s.fio", &args()).is_ok());
        // Time-based too: fio never cuts a direction of one size (the s19
        // audit: writes of 64 KiB in fio, 44.6 KiB on average in the
        // model's map of the file's blocks).
        for sizes in ["bs=4k,64k", "bs=64k,4k", "bssplit=4k/50:64k/50,16k"] {
            let text = format!("[j]\nrw=randrw\ntime_based\nruntime=1\nsize=64m\n{sizes}\n");
            let e = import_str(&text, "s.fio", &args()).expect_err(sizes);
            assert_eq!(e.line, Some(6), "{e}");
            assert!(e.message.contains("mark_random_map"), "{e}");
            let lfsr = format!("{text}random_generator=lfsr\n");
            assert!(import_str(&lfsr, "s.fio", &args()).is_ok(), "{sizes}");
        }
        // A writer whose reads' size is smaller, sized.
        let w = "[j]\nrw=randwrite\nsize=1m\nbs=4k,16k\n";
        assert!(import_str(w, "s.fio", &args()).is_err());
    }

    #[test]
    fn ratemin_becomes_a_floor_on_each_direction() {
        use cint_scenario::{DirectionRates, MinRate, RateUnit};
        let long = "[j]\nrw=randread\nruntime=5\ntime_based\nrate_iops_min=1000,7\n";
        let imp = import_str(long, "m.fio", &args()).expect("a floor on reads");
        let floor = DirectionRates {
            unit: RateUnit::Iops,
            read: Some(1000),
            write: Some(1000),
        };
        let cycle = 1_000_000_000;
        assert_eq!(
            io(&imp.scenario.jobs[0]).shape.rate_min,
            Some(MinRate { floor, cycle }),
            "a reader takes the reads' floor"
        );
        let mix = "[j]\nrw=randrw\nruntime=5\ntime_based\nratemin=1m,\nratecycle=500\n";
        let imp = import_str(mix, "m.fio", &args()).expect("a floor on reads");
        let floor = DirectionRates {
            unit: RateUnit::Bytes,
            read: Some(1 << 20),
            write: None,
        };
        let cycle = 500_000_000;
        assert_eq!(
            io(&imp.scenario.jobs[0]).shape.rate_min,
            Some(MinRate { floor, cycle })
        );
        let short = "[j]\nrw=randread\nruntime=100ms\ntime_based\nratemin=1m\nratecycle=500\n";
        let imp = import_str(short, "m.fio", &args()).expect("too short to be checked");
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.contains("changes nothing here")),
            "{:?}",
            imp.warnings
        );
        // fio refuses a floor above its cap: "minimum rate exceeds rate".
        let above = "[j]\nrw=randread\nruntime=5\nrate_iops=500\nrate_iops_min=1000\n";
        let e = import_str(above, "m.fio", &args()).expect_err("above the cap");
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("minimum rate exceeds rate"), "{e}");
        let both = "[j]\nrw=randread\nruntime=5\nratemin=1m\nrate_iops_min=10\n";
        let e = import_str(both, "m.fio", &args()).expect_err("one floor");
        assert_eq!(e.line, Some(5), "{e}");
        let offload =
            "[j]\nrw=randread\nruntime=5\ndirect=1\nio_submit_mode=offload\nrate_iops_min=10\n";
        let e = import_str(offload, "m.fio", &args()).expect_err("not offloaded");
        assert_eq!(e.line, Some(6), "{e}");
        assert!(e.message.contains("a floor on the rate"), "{e}");
    }
}
