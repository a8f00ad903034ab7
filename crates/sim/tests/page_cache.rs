//! The page cache and its writeback (crate::host::pagecache) in whole
//! runs: when writeback starts, what it writes, how writers are held
//! back, and read-ahead. The run's own invariants check at its end that no
//! page was lost or written twice.

use cint_report::RunResult;

/// What the result's page-cache note says, in its order: pages dirtied,
/// written, requests, largest request KiB, background runs, periodic
/// runs, throttle pauses, read-ahead requests, read-ahead pages, dirty
/// and writeback pages at the end, and journal commits where there were
/// any.
fn totals(r: &RunResult) -> Vec<u64> {
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("page cache over the whole run"))
        .expect("a buffered run has a page-cache note");
    let (_, rest) = note.split_once("run:").expect("the note's form");
    rest.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("a number"))
        .collect()
}

/// One buffered psync job `w` on core 1 of a two-core host.
fn run(job: &str, host: &str, device: &str, duration: &str) -> RunResult {
    let job = format!("engine = \"psync\"\ndirect = false\n{job}");
    run_job(("w", &job), host, device, duration)
}

/// Job `name` (its keys `job`) on core 1 of a two-core host, the strategy
/// `none`.
fn run_job((name, job): (&str, &str), host: &str, device: &str, duration: &str) -> RunResult {
    let text = format!(
        "name = \"pc\"\nduration = \"{duration}\"\n[device]\nmodel = \"{device}\"\n\
         [host]\ncores = 2\n{host}\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[job]]\nname = \"{name}\"\ncpu = 1\n{job}\n"
    );
    let sc = cint_scenario::load_str(&text, "pc.toml", &[]).expect("valid scenario");
    cint_sim::run(&sc).expect("runs")
}

/// A buffered psync job of 4 KiB random writes over 1 GiB (its keys
/// `extra` besides) for 50 ms on the P4800X, with a 1 GiB cache.
fn random_writer(extra: &str) -> RunResult {
    run(
        &format!("rw = \"randwrite\"\nbs = \"4k\"\nsize = \"1g\"\n{extra}"),
        "[host.page_cache]\nmemory = \"1GiB\"",
        "optane-p4800x",
        "50ms",
    )
}

#[test]
fn dirty_pages_under_the_background_threshold_wait_for_expiry() {
    // 500 writes of 4 KiB a second into 1 GiB: 10% is 26 214 pages, more
    // than the run dirties, so only the 30 s expiry writes back.
    let job = "rw = \"write\"\nbs = \"4k\"\nrate_iops = 500";
    let host = "[host.page_cache]\nmemory = \"1GiB\"";
    let early = totals(&run(job, host, "optane-p4800x", "29s"));
    assert_eq!(early[1], 0, "nothing written before 30 s: {early:?}");
    assert_eq!(early[4] + early[5], 0, "no flusher run wrote: {early:?}");
    let late = totals(&run(job, host, "optane-p4800x", "36s"));
    assert!(
        late[1] >= 14_500,
        "the expired pages were written: {late:?}"
    );
    assert_eq!(
        (late[4], late[5]),
        (0, 1),
        "one periodic run wrote them: {late:?}"
    );
}

#[test]
fn background_writeback_merges_contiguous_pages_up_to_the_maximum() {
    let job = "rw = \"write\"\nbs = \"4k\"";
    let t = totals(&run(
        job,
        "[host.page_cache]\nmemory = \"64MiB\"",
        "optane-p4800x",
        "200ms",
    ));
    assert!(t[4] > 0 && t[1] > 0, "background writeback ran: {t:?}");
    assert_eq!(t[3], 128, "requests of 128 KiB: {t:?}");
    assert_eq!(t[0], t[1] + t[9] + t[10], "every page accounted: {t:?}");
    let small = totals(&run(
        job,
        "[host.page_cache]\nmemory = \"64MiB\"\nmax_writeback_request = \"64k\"",
        "optane-p4800x",
        "200ms",
    ));
    assert_eq!(small[3], 64, "{small:?}");
    assert!(small[2] > t[2], "more, smaller requests: {small:?} {t:?}");
}

#[test]
fn writers_past_the_dirty_limit_are_held_to_the_device_speed() {
    // 4 KiB buffered writes go at about 1.6 GB/s; the P3700 writes
    // 1.08 GB/s. Past the limit the writer pauses. The cache is 256 MiB
    // (a 51 MiB dirty limit): in 64 MiB the flusher's writes of one pass,
    // which share the controller's pipe page by page and end together,
    // keep enough pages under writeback to reach the limit on either
    // device (`a_small_cache_holds_a_writer_below_its_device` below).
    let job = "rw = \"write\"\nbs = \"4k\"";
    let host = "[host.page_cache]\nmemory = \"256MiB\"";
    let r = run(job, host, "p3700", "1s");
    let t = totals(&r);
    assert!(t[6] > 0, "throttle pauses: {t:?}");
    let bw = r.results[0].jobs[0].bw_bytes;
    assert!(bw < 1_200_000_000, "held near the device's 1.08 GB/s: {bw}");
    let max = r.results[0].jobs[0].lat_ns.max;
    assert!(
        max > 4_000_000,
        "a paused call lasts a jiffy or more: {max}"
    );
    let fast = run(job, host, "optane-p4800x", "1s");
    let fast_bw = fast.results[0].jobs[0].bw_bytes;
    assert!(fast_bw > bw, "{fast_bw} against {bw}");
}

#[test]
fn a_small_cache_holds_a_writer_below_its_device() {
    // 64 MiB: a 12.8 MiB dirty limit. The flusher submits a pass's
    // 128 KiB writes together; they cross the pipe page by page and end
    // together, so their pages leave writeback at the round's end, dirty
    // plus writeback pages reach the limit, and the writer pauses even on
    // the P4800X (2.0 GB/s of writes), held below what its device takes.
    let job = "rw = \"write\"\nbs = \"4k\"";
    let host = "[host.page_cache]\nmemory = \"64MiB\"";
    let r = run(job, host, "optane-p4800x", "1s");
    let t = totals(&r);
    assert!(t[6] > 0, "throttle pauses: {t:?}");
    let bw = r.results[0].jobs[0].bw_bytes;
    assert!(bw < 1_000_000_000, "held below the device: {bw}");
}

#[test]
fn sequential_buffered_reads_come_through_growing_read_ahead() {
    let r = run("rw = \"read\"\nbs = \"4k\"", "", "optane-p4800x", "50ms");
    let t = totals(&r);
    let ios = r.results[0].jobs[0].ios;
    assert!(
        t[8] >= ios,
        "every page read came through read-ahead: {t:?} {ios}"
    );
    assert!(t[7] * 16 < t[8], "windows reach 128 KiB (32 pages): {t:?}");
    assert_eq!(t[1], 0);
}

#[test]
fn a_file_read_again_is_served_from_the_cache() {
    // 1 MiB read at random in 4 KiB: after its 256 pages are in, every
    // read is a hit, with no device request and no wait.
    let r = run(
        "rw = \"randread\"\nbs = \"4k\"\nsize = \"1m\"",
        "",
        "optane-p4800x",
        "50ms",
    );
    let t = totals(&r);
    let job = &r.results[0].jobs[0];
    assert!(
        t[8] <= 256 + 32,
        "each page read from the device about once: {t:?}"
    );
    assert!(
        job.ios > 50 * t[7],
        "hits outnumber misses: {} ios, {t:?}",
        job.ios
    );
    assert!(job.lat_ns.percentile.values().next().copied().unwrap_or(0) < 3_000);
}

/// One job on core 1 of a two-core host with a 64 MiB cache, the
/// strategy `none`, on the P4800X.
fn run_one(job: &str, duration: &str) -> RunResult {
    run_job(
        ("r", job),
        "[host.page_cache]\nmemory = \"64MiB\"",
        "optane-p4800x",
        duration,
    )
}

#[test]
fn buffered_libaio_runs_its_iocbs_one_by_one_inside_io_submit() {
    // Random 4 KiB reads of a 1 GiB file through a 64 MiB cache: almost
    // every iocb misses. Linux 5.0 reads each inside `io_submit`, one
    // after another, so 32 iocbs in flight wait for the device one at a
    // time, as one synchronous reader does.
    let shape = "rw = \"randread\"\nbs = \"4k\"\nsize = \"1g\"\n";
    let aio = run_one(
        &format!("engine = \"libaio\"\niodepth = 32\nbatch = 8\ndirect = false\n{shape}"),
        "50ms",
    );
    let sync = run_one(
        &format!("engine = \"psync\"\ndirect = false\n{shape}"),
        "50ms",
    );
    let direct = run_one(
        &format!("engine = \"libaio\"\niodepth = 32\nbatch = 8\n{shape}"),
        "50ms",
    );
    let (a, s, d) = (
        &aio.results[0].jobs[0],
        &sync.results[0].jobs[0],
        &direct.results[0].jobs[0],
    );
    assert!(a.ios > 0 && s.ios > 0);
    assert!(
        a.iops < 1.25 * s.iops && a.iops > 0.75 * s.iops,
        "buffered iocbs go at a synchronous reader's pace: {} against {}",
        a.iops,
        s.iops
    );
    assert!(
        a.iops * 2.0 < d.iops,
        "direct iocbs overlap at the device: {} against {}",
        d.iops,
        a.iops
    );
    // fio takes the iocbs' issue time when io_submit returns: the wait
    // is in the submission latency, and the events are there to reap (a
    // call of eight iocbs, then a reap of the eight).
    let whole = run_one(
        &format!(
            "engine = \"libaio\"\niodepth = 8\nbatch = 8\nbatch_complete_min = 8\n\
             direct = false\n{shape}"
        ),
        "50ms",
    );
    let read = &whole.results[0].jobs[0]
        .fio
        .as_ref()
        .expect("fio's figures")
        .read;
    assert!(
        read.slat.mean > 5.0 * read.clat.mean,
        "slat {} clat {}",
        read.slat.mean,
        read.clat.mean
    );
    let t = totals(&aio);
    assert!(
        t[7] > 0 && t[1] == 0,
        "misses read ahead, nothing written: {t:?}"
    );
}

#[test]
fn buffered_libaio_hits_and_writes_never_wait_for_the_device() {
    // A 1 MiB file read at random: once it is cached every iocb is a
    // copy, and the run's interrupts are the first reads' only.
    let hits = run_one(
        "engine = \"libaio\"\niodepth = 16\nbatch = 4\ndirect = false\n\
         rw = \"randread\"\nbs = \"4k\"\nsize = \"1m\"\n",
        "50ms",
    );
    let t = totals(&hits);
    let job = &hits.results[0].jobs[0];
    assert!(t[8] <= 256 + 32, "each page read once: {t:?}");
    assert!(job.ios > 50 * t[7], "hits: {} ios, {t:?}", job.ios);
    // Writes dirty pages inside the call; the flusher writes them later.
    let writes = run_one(
        "engine = \"libaio\"\niodepth = 8\nbatch = 8\ndirect = false\n\
         rw = \"write\"\nbs = \"4k\"\nsize = \"1g\"\n",
        "20ms",
    );
    let t = totals(&writes);
    let job = &writes.results[0].jobs[0];
    assert!(
        job.ios > 0 && t[0] >= job.ios,
        "every write dirtied its page: {t:?}"
    );
    assert_eq!(t[7], 0, "no read-ahead: {t:?}");
}

#[test]
fn buffered_io_uring_runs_as_direct_io_and_the_result_says_so() {
    let r = run_one(
        "engine = \"io_uring\"\niodepth = 8\ndirect = false\nrw = \"randread\"\nbs = \"4k\"\n",
        "10ms",
    );
    assert!(r.results[0].jobs[0].ios > 0);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("job 'r': direct = false is modelled as direct I/O on io_uring")),
        "{:?}",
        r.notes
    );
    assert!(
        !r.notes
            .iter()
            .any(|n| n.contains("page cache over the whole run")),
        "no page cache: {:?}",
        r.notes
    );
}

#[test]
fn fio_advice_decides_the_read_ahead_of_random_and_sequential_readers() {
    // fio advises POSIX_FADV_RANDOM for a random job: a miss reads its
    // own page, never a window around it.
    let random = totals(&run(
        "rw = \"randread\"\nbs = \"4k\"\nsize = \"1g\"",
        "",
        "optane-p4800x",
        "20ms",
    ));
    assert!(
        random[7] > 100 && random[8] == random[7],
        "one page per miss: {random:?}"
    );
    // POSIX_FADV_SEQUENTIAL doubles the window's limit (128 to 256 KiB).
    let advised = totals(&run(
        "rw = \"read\"\nbs = \"4k\"",
        "",
        "optane-p4800x",
        "50ms",
    ));
    let plain = totals(&run(
        "rw = \"read\"\nbs = \"4k\"\nfadvise_hint = false",
        "",
        "optane-p4800x",
        "50ms",
    ));
    let mean = |t: &[u64]| t[8] as f64 / t[7] as f64;
    assert!(
        mean(&advised) > 48.0 && mean(&plain) <= 32.0,
        "pages per read-ahead: {} advised, {} not",
        mean(&advised),
        mean(&plain)
    );
}

#[test]
fn fsync_writes_the_files_dirty_pages_back_and_waits_for_them() {
    let free = random_writer("");
    let every = random_writer("fdatasync = 1");
    let t = totals(&every);
    let ios = every.results[0].jobs[0].ios;
    // Each write's page goes back by the call that follows it, not by the
    // flusher (a tenth of 1 GiB is never dirty).
    assert_eq!(t[4] + t[5], 0, "no flusher run: {t:?}");
    assert!(
        t[1] + t[10] >= t[0] && t[9] == 0,
        "every dirtied page written or in flight at the end: {t:?}"
    );
    assert!(t[0] >= ios, "{t:?} {ios}");
    // The writer sleeps once per call, for the device's write.
    let w = &every.results[0].jobs[0];
    assert!(
        w.context_switches >= w.ios,
        "{} context switches for {} writes",
        w.context_switches,
        w.ios
    );
    let unsynced = free.results[0].jobs[0].iops;
    assert!(
        w.iops * 3.0 < unsynced,
        "{} writes/s with fdatasync, {unsynced} without",
        w.iops
    );
    assert_eq!(t.get(11), None, "fdatasync commits no journal: {t:?}");
    // fsync also waits for the journal commit of the file's changed
    // times, but the time moves with the coarse clock, once a 4 ms tick
    // (ext4 on Linux 5.0; docs/evidence/fsync_journal_per_tick.c): the
    // writes of one tick change the inode once, and only the first fsync
    // after it commits. 50 ms hold 12 or 13 ticks.
    let fsynced = random_writer("fsync = 1");
    let commits = totals(&fsynced)[11];
    assert!((12..=14).contains(&commits), "{commits} journal commits");
    let with_journal = fsynced.results[0].jobs[0].iops;
    assert!(
        with_journal < w.iops && with_journal > 0.9 * w.iops,
        "fsync {with_journal} against fdatasync {}",
        w.iops
    );
    // Writes 5 ms apart each change the time: every fsync commits.
    let spaced = random_writer("fsync = 1\nrate_iops = 200");
    let calls = spaced.results[0].jobs[0].ios;
    assert!(calls >= 8, "{calls} writes");
    assert_eq!(totals(&spaced)[11], calls, "a commit per fsync");
}

#[test]
fn a_journal_commit_writes_its_log_then_its_commit_block() {
    // Writes 5 ms apart: every fsync commits the file's changed times.
    // jbd2 writes the log (a descriptor and the inode's block, one 8 KiB
    // request) and, once it is on the device, the 4 KiB commit block
    // (docs/evidence/fsync_journal_writes.c): three device writes per
    // fsync, two of them in series after the data, where fdatasync makes
    // one.
    let sync_lat = |r: &RunResult| {
        let job = &r.results[0].jobs[0];
        let sync = &job.fio.as_ref().expect("fio data").sync;
        (sync.ios, sync.lat.mean)
    };
    let fsynced = random_writer("fsync = 1\nrate_iops = 200");
    let datasynced = random_writer("fdatasync = 1\nrate_iops = 200");
    let (calls, fsync_ns) = sync_lat(&fsynced);
    let (dcalls, fdatasync_ns) = sync_lat(&datasynced);
    assert!(
        calls >= 8 && dcalls == calls,
        "{calls} fsyncs, {dcalls} fdatasyncs"
    );
    assert_eq!(totals(&fsynced)[11], calls, "a commit per fsync");
    // Strategy none: an interrupt per completion.
    let (irqs, dirqs) = (
        fsynced.results[0].interrupts,
        datasynced.results[0].interrupts,
    );
    assert_eq!(irqs, 3 * calls, "the data, the log and the commit block");
    assert_eq!(dirqs, dcalls, "the data alone");
    // Each of the two journal writes waits for the device's write
    // (5.95 us on the P4800X) and its interrupt, one after the other.
    assert!(
        fsync_ns > fdatasync_ns + 2.0 * 5_950.0,
        "fsync {fsync_ns} ns, fdatasync {fdatasync_ns} ns"
    );
}

#[test]
fn threads_that_fsync_their_own_files_share_the_journals_commits() {
    // Four writers on one core, each overwriting its own file and calling
    // fsync after every write. A commit writes the running transaction
    // whole, every inode changed in it, and a call whose inode's
    // transaction another call is committing waits for that commit: one
    // commit a tick, as for one writer, where a commit per call and file
    // would give four. The run's check that no fsync returns before its
    // file's times are committed holds.
    let four = run(
        "rw = \"randwrite\"\nbs = \"4k\"\nsize = \"1g\"\nfsync = 1\nnumjobs = 4",
        "[host.page_cache]\nmemory = \"1GiB\"",
        "optane-p4800x",
        "50ms",
    );
    let commits = totals(&four)[11];
    assert!((12..=14).contains(&commits), "{commits} journal commits");
    let calls = four.results[0].jobs[0].ios;
    assert!(calls > 40 * commits, "{calls} fsyncs");
}

#[test]
fn a_file_opened_o_sync_writes_each_write_back_within_the_call() {
    let cached = random_writer("");
    let osync = random_writer("sync = \"sync\"");
    let odsync = random_writer("sync = \"dsync\"");
    let fsynced = random_writer("fsync = 1");
    let (w, c) = (&osync.results[0].jobs[0], &cached.results[0].jobs[0]);
    // The call returns once its page is on the device: its latency holds
    // the device's write (5.95 us on the P4800X) and the wait for it.
    assert!(
        w.lat_ns.mean > c.lat_ns.mean + 6_000.0,
        "O_SYNC {} ns against {} ns into the cache",
        w.lat_ns.mean,
        c.lat_ns.mean
    );
    // Every write's page goes back by its own call, none by the flusher,
    // and one device write per call besides a commit a tick.
    let t = totals(&osync);
    assert_eq!(t[4] + t[5], 0, "no flusher run: {t:?}");
    assert!(
        t[2] >= w.ios && t[2] <= w.ios + 64,
        "{t:?}, {} writes",
        w.ios
    );
    assert!((12..=14).contains(&t[11]), "commits: {t:?}");
    // O_DSYNC skips the commit of the times; fio's fsync=1 does the same
    // work in a call of its own, at about the same rate, and the write's
    // latency then leaves the writeback out.
    assert_eq!(totals(&odsync).get(11), None, "no commit with O_DSYNC");
    let f = &fsynced.results[0].jobs[0];
    assert!(
        (w.iops / f.iops - 1.0).abs() < 0.1,
        "O_SYNC {} writes/s, fsync=1 {}",
        w.iops,
        f.iops
    );
    assert!(f.lat_ns.mean < c.lat_ns.mean * 1.5, "{}", f.lat_ns.mean);
    // libaio: each iocb is synced inside io_submit, before the next.
    let aio = run_job(
        (
            "w",
            "engine = \"libaio\"\niodepth = 8\ndirect = false\nrw = \"randwrite\"\n\
             bs = \"4k\"\nsize = \"1g\"\nsync = \"dsync\"",
        ),
        "[host.page_cache]\nmemory = \"1GiB\"",
        "optane-p4800x",
        "50ms",
    );
    let t = totals(&aio);
    let ios = aio.results[0].jobs[0].ios;
    assert!(ios > 0 && t[2] >= ios, "{t:?}, {ios} writes");
    assert_eq!(t[4] + t[5], 0, "written by the calls: {t:?}");
}

#[test]
fn an_fsync_of_many_pages_merges_them_and_a_libaio_job_syncs_too() {
    // Sequential 4 KiB writes, fsync every 64: one 128 KiB request and a
    // half per call, merged as the flusher merges.
    let seq = run(
        "rw = \"write\"\nbs = \"4k\"\nfsync = 64",
        "[host.page_cache]\nmemory = \"1GiB\"",
        "optane-p4800x",
        "50ms",
    );
    let t = totals(&seq);
    assert_eq!(t[3], 128, "requests up to 128 KiB: {t:?}");
    assert!(t[2] * 16 < t[1], "merged: {t:?}");
    let text = "name = \"a\"\nduration = \"20ms\"\n[host]\ncores = 2\n[host.page_cache]\n\
                memory = \"1GiB\"\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
                [[job]]\nname = \"w\"\nengine = \"libaio\"\niodepth = 8\ncpu = 1\n\
                direct = false\nrw = \"randwrite\"\nbs = \"4k\"\nfsync = 8\n";
    let sc = cint_scenario::load_str(text, "a.toml", &[]).expect("valid scenario");
    let r = cint_sim::run(&sc).expect("runs");
    let t = totals(&r);
    assert!(r.results[0].jobs[0].ios > 0 && t[1] > 0, "{t:?}");
    assert_eq!(t[4] + t[5], 0, "written by the calls: {t:?}");
}

#[test]
fn a_buffered_hipri_job_is_not_polled_and_the_note_says_why() {
    let text = "name = \"h\"\nduration = \"10ms\"\n[host]\ncores = 2\n\
                [[strategy]]\nname = \"poll\"\nkind = \"poll\"\n\
                [[job]]\nname = \"r\"\nengine = \"pvsync2\"\nhipri = true\ncpu = 1\n\
                direct = false\nrw = \"randread\"\nbs = \"4k\"\nsize = \"1m\"\n";
    let sc = cint_scenario::load_str(text, "h.toml", &[]).expect("valid scenario");
    let r = cint_sim::run(&sc).expect("runs");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("job 'r' does not poll (hipri applies to direct I/O only")),
        "{:?}",
        r.notes
    );
}

/// fsync waits for the pages the flusher already has under writeback and
/// writes again those dirtied meanwhile, as `WB_SYNC_ALL` does: with a
/// small cache the flusher writes the writer's file back between the
/// calls, and the run checks at each return that none of the file's pages
/// is dirty or under writeback (an invariant failure would fail the run).
#[test]
fn fsync_waits_for_the_flushers_writeback_of_its_file() {
    for (engine, extra) in [("psync", ""), ("libaio", "iodepth = 4\n")] {
        let job = format!(
            "engine = \"{engine}\"\n{extra}direct = false\nrw = \"randwrite\"\nbs = \"4k\"\n\
             size = \"64m\"\nfsync = 1024\n"
        );
        let r = run_job(
            ("w", &job),
            "[host.page_cache]\nmemory = \"16MiB\"",
            "optane-p4800x",
            "50ms",
        );
        let t = totals(&r);
        assert!(
            t[4] > 0,
            "{engine}: the flusher ran background passes: {t:?}"
        );
        let fio = r.results[0].jobs[0].fio.as_ref().expect("fio's figures");
        assert!(fio.sync.ios > 10, "{engine}: {} calls", fio.sync.ios);
    }
}

/// fio's `end_fsync`: a buffered writer that ends by its size writes
/// back the pages it left dirty before it exits, within its window (fio's
/// runtime counts the call), and not among its sync calls.
#[test]
fn end_fsync_writes_back_what_the_job_left_dirty_within_its_window() {
    // The run waits for the job's end (run_to_end), as a fio run does.
    let writer = |extra: &str| {
        let text = format!(
            "name = \"pc\"\nduration = \"1s\"\nrun_to_end = true\n\
             [device]\nmodel = \"optane-p4800x\"\n\
             [host]\ncores = 2\n[host.page_cache]\nmemory = \"1GiB\"\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[job]]\nname = \"w\"\ncpu = 1\nengine = \"psync\"\ndirect = false\n\
             rw = \"write\"\nbs = \"64k\"\nsize = \"64MiB\"\nio_size = \"64MiB\"\n{extra}"
        );
        let sc = cint_scenario::load_str(&text, "pc.toml", &[]).expect("valid scenario");
        cint_sim::run(&sc).expect("runs")
    };
    let left = writer("");
    let synced = writer("end_fsync = true");
    let (t_left, t_synced) = (totals(&left), totals(&synced));
    assert_eq!(t_left[0], t_synced[0], "the same pages dirtied");
    assert!(
        t_left[9] > t_left[0] / 2,
        "most left dirty without: {t_left:?}"
    );
    assert_eq!(t_synced[9], 0, "none dirty at the end: {t_synced:?}");
    assert_eq!(
        t_synced[1], t_synced[0],
        "every page written back: {t_synced:?}"
    );
    let (a, b) = (&left.results[0].jobs[0], &synced.results[0].jobs[0]);
    assert_eq!(a.ios, b.ios);
    // 64 MiB at the P4800X's 2 GB/s of writes take about 33 ms, against
    // 13 ms for the writes into the cache.
    assert!(
        b.iops < 0.6 * a.iops,
        "{} against {} writes/s",
        b.iops,
        a.iops
    );
    let fio = b.fio.as_ref().expect("fio's figures");
    assert_eq!(
        fio.sync.ios, 0,
        "the final fsync is no sync call of fio's figures"
    );
    // A direct job's key is refused (it would find no dirty pages), and
    // so is one on a job without an end of its own.
    let text = "name = \"d\"\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
                [[job]]\nname = \"w\"\nrw = \"write\"\nend_fsync = true\n";
    let e = cint_scenario::load_str(text, "d.toml", &[]).expect_err("direct end_fsync");
    assert!(e.to_string().contains("end_fsync"), "{e}");
    let endless = text.replace("end_fsync", "direct = false\nend_fsync");
    let e = cint_scenario::load_str(&endless, "d.toml", &[]).expect_err("no end");
    assert!(e.to_string().contains("needs an end of the job's"), "{e}");
}

/// A job that another job's `exitall` ends still makes its final fsync:
/// fio's `do_io` makes it after its loop whether the loop ended by its
/// own end or by `td->terminate` (backend.c; fio 3.33 here, a buffered
/// 1 GiB writer with `end_fsync=1` beside a direct reader with `exitall`:
/// the writer's runtime 283 ms against the reader's 123 ms, 93 and 92
/// without it).
#[test]
fn end_fsync_is_made_by_a_job_that_another_jobs_exitall_ended() {
    let run = |end_fsync: bool| {
        let text = format!(
            "name = \"pc\"\nduration = \"1s\"\nwarmup = \"0ms\"\nrun_to_end = true\n\
             [device]\nmodel = \"optane-p4800x\"\n\
             [host]\ncores = 2\n[host.page_cache]\nmemory = \"4GiB\"\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[job]]\nname = \"w\"\ncpu = 1\nengine = \"psync\"\ndirect = false\n\
             rw = \"write\"\nbs = \"64k\"\nsize = \"1GiB\"\nio_size = \"1GiB\"\n\
             end_fsync = {end_fsync}\n\
             [[job]]\nname = \"r\"\ncpu = 0\nengine = \"psync\"\nrw = \"read\"\n\
             io_size = \"8MiB\"\nexitall = \"group\"\n"
        );
        let sc = cint_scenario::load_str(&text, "pc.toml", &[]).expect("valid scenario");
        cint_sim::run(&sc).expect("runs")
    };
    let (left, synced) = (run(false), run(true));
    let (t_left, t_synced) = (totals(&left), totals(&synced));
    let written = |r: &RunResult| r.results[0].jobs[0].ios * (64 << 10);
    assert!(
        written(&synced) < 1 << 30,
        "the reader's exitall ends the writer before its 1 GiB"
    );
    assert!(t_left[9] > 0, "pages left dirty without: {t_left:?}");
    assert_eq!(t_synced[9], 0, "none dirty at the end: {t_synced:?}");
    assert_eq!(t_synced[1], t_synced[0], "all written back: {t_synced:?}");
    let runtime = |r: &RunResult, j: usize| {
        let fio = r.results[0].jobs[j].fio.as_ref().expect("fio's figures");
        fio.runtime_ns / 1_000_000
    };
    assert!(
        runtime(&synced, 0) > 2 * runtime(&synced, 1),
        "the writer's runtime holds its fsync: {} ms against the reader's {} ms",
        runtime(&synced, 0),
        runtime(&synced, 1)
    );
}

/// What the page-cache note says follows `what` (a number before it).
fn note_count(r: &RunResult, what: &str) -> u64 {
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("page cache over the whole run"))
        .expect("a buffered run has a page-cache note");
    let Some(at) = note.find(what) else {
        return 0;
    };
    let before = note[..at].trim_end();
    before[before.rfind(' ').map_or(0, |i| i + 1)..]
        .parse()
        .unwrap_or_else(|_| panic!("a number before {what} in {note}"))
}

#[test]
fn a_read_that_misses_reads_only_its_missing_pages() {
    // 64 KiB reads, 4 KiB writes, mostly writes, over a 16 MiB file in a
    // 64 MiB cache: nearly every page is written, so cached, before its
    // block is first read, and a read's miss lacks a page or two.
    let r = run(
        "rw = \"randrw\"\nrwmixread = 1\nbssplit = \"64k/100,4k/100\"\nsize = \"16MiB\"",
        "[host.page_cache]\nmemory = \"64MiB\"",
        "p3700",
        "1s",
    );
    let t = totals(&r);
    let (requests, pages) = (t[7], t[8]);
    assert!(requests > 20, "{t:?}");
    assert!(
        pages < requests * 8,
        "misses read the pages they lack, not whole 16-page blocks: {t:?}"
    );
}

#[test]
fn a_readwrite_jobs_reads_follow_its_writes_through_the_cache() {
    // fio keeps a position per direction: the reads walk the file behind
    // the writes and find their pages cached; with one shared position
    // the device read about ten times the pages the job read.
    let r = run(
        "rw = \"readwrite\"\nrwmixread = 10\nbs = \"4k\"\nsize = \"16MiB\"",
        "[host.page_cache]\nmemory = \"4MiB\"",
        "p3700",
        "1s",
    );
    let t = totals(&r);
    let fio = r.results[0].jobs[0].fio.as_ref().expect("fio data");
    let read_pages = fio.read.bytes / 4096;
    assert!(read_pages > 1_000, "{read_pages}");
    assert!(
        t[8] < read_pages,
        "the device reads fewer pages than the job: {t:?}, {read_pages} read"
    );
}

#[test]
fn a_write_of_part_of_a_page_reads_it_first_unless_it_has_no_data() {
    let job = |rw: &str| {
        let mix = if rw == "randrw" {
            "rwmixread = 1\n"
        } else {
            ""
        };
        format!("rw = \"{rw}\"\n{mix}bs = \"512\"\nsize = \"128MiB\"")
    };
    let small = "[host.page_cache]\nmemory = \"4MiB\"";
    // A file the job reads is laid out with data: each 512-byte write to
    // a page not cached reads its 4 KiB block and waits (about 80 us on
    // the P3700), so the writes are read-bound.
    let laid_out = run(&job("randrw"), small, "p3700", "500ms");
    let reads = note_count(&laid_out, "pages read before writes");
    let job_ios = laid_out.results[0].jobs[0].ios;
    assert!(
        reads * 10 > job_ios * 8,
        "{reads} reads for {job_ios} writes"
    );
    assert!(
        laid_out.results[0].jobs[0].lat_ns.mean > 50_000.0,
        "{:?}",
        laid_out.results[0].jobs[0].lat_ns.mean
    );
    // A file it only writes is allocated without data: a page read is
    // only one whose block was written back earlier in the run.
    let fresh = run(&job("randwrite"), small, "p3700", "500ms");
    let fresh_reads = note_count(&fresh, "pages read before writes");
    let fresh_ios = fresh.results[0].jobs[0].ios;
    assert!(
        fresh_reads * 4 < fresh_ios,
        "{fresh_reads} reads for {fresh_ios} writes"
    );
    assert!(fresh_ios > 2 * job_ios, "{fresh_ios} against {job_ios}");
    // Whole pages are never read first.
    let whole = run(
        "rw = \"randrw\"\nrwmixread = 1\nbs = \"4k\"\nsize = \"128MiB\"",
        small,
        "p3700",
        "200ms",
    );
    assert_eq!(note_count(&whole, "pages read before writes"), 0);
}

#[test]
fn fios_random_map_reads_each_block_once_a_pass_and_norandommap_repeats() {
    // 4 KiB random reads over 64 MiB (16 384 pages) in a larger cache for
    // 50 ms: a few thousand reads, a small part of a pass. Under fio's
    // random map no block is read twice in a pass, so every read misses;
    // with `norandommap` some land on pages already read and hit.
    let reads = |extra: &str| {
        let r = run(
            &format!("rw = \"randread\"\nbs = \"4k\"\nsize = \"64MiB\"\n{extra}"),
            "[host.page_cache]\nmemory = \"1GiB\"",
            "optane-p4800x",
            "50ms",
        );
        let t = totals(&r);
        (
            r.results[0].jobs[0]
                .fio
                .as_ref()
                .expect("fio's figures")
                .read
                .ios,
            t[7],
            t[8],
        )
    };
    let (ios, misses, pages) = reads("");
    assert!(ios > 1000, "{ios} reads");
    // Each read misses once and reads its one page (the warm-up's reads
    // are not in `ios`, its misses are in the note).
    assert!(
        misses >= ios && misses == pages,
        "{ios} reads, {misses} misses, {pages} pages"
    );
    // With repeats, the n-th read hits with the chance (n - 1) / 16 384
    // that its page was read before: n / 32 768 of the reads in all.
    let (ios, misses, _) = reads("norandommap = true");
    let hits = ios.saturating_sub(misses) as f64 / ios as f64;
    let expected = ios as f64 / 32_768.0;
    assert!(
        (hits / expected - 1.0).abs() < 0.3,
        "{ios} reads, {misses} misses: {hits:.3} hits, {expected:.3} expected"
    );
}

#[test]
fn fios_random_distributions_decide_a_buffered_readers_hits() {
    // 5000 buffered 4 KiB reads over 64 MiB in a cache that holds it:
    // each distinct block misses once. fio 3.33 (`ioengine=null`,
    // `io_size=20000k`, `write_iolog`) touches 1024-1060 distinct blocks
    // under zipf:1.2, 3216 under normal, 2833-2839 under
    // zoned_abs:60/4m:40/60m, and 5000 uniformly (its random map).
    let misses = |dist: &str| {
        let r = run(
            &format!(
                "rw = \"randread\"\nbs = \"4k\"\nsize = \"64MiB\"\nio_size = \"20000KiB\"\n\
                 random_distribution = \"{dist}\""
            ),
            "[host.page_cache]\nmemory = \"1GiB\"",
            "optane-p4800x",
            "200ms",
        );
        assert_eq!(r.results[0].jobs[0].ios, 5000, "{dist}");
        totals(&r)[7]
    };
    for (dist, fio) in [
        ("zipf:1.2", 1040.0),
        ("normal", 3216.0),
        ("zoned_abs:60/4m:40/60m", 2836.0),
        ("random", 5000.0),
    ] {
        let got = misses(dist) as f64;
        assert!(
            (got / fio - 1.0).abs() < 0.1,
            "{dist}: {got} misses, fio {fio}"
        );
    }
}

#[test]
fn a_files_partial_last_page_is_read_too() {
    // A 10.5 KiB file read in 512-byte requests: its three pages, the
    // last one partial, come through the cache (the model used to keep
    // whole pages only and never reached the last 512 bytes).
    let r = run(
        "rw = \"read\"\nbs = \"512\"\nsize = \"10752\"",
        "",
        "optane-p4800x",
        "20ms",
    );
    let t = totals(&r);
    assert_eq!(t[8], 3, "pages read ahead: {t:?}");
}

#[test]
fn writes_of_any_size_dirty_the_pages_they_touch_and_go_back_in_pages() {
    // etcd's disk check (`fio --rw=write --ioengine=sync --fdatasync=1
    // --size=22m --bs=2300`), over 1 MiB: 455 writes of 2300 bytes (the
    // io_size fio's import gives), each followed by its fdatasync but the
    // last (docs/FIO.md, `fsync`).
    let r = run(
        "rw = \"write\"\nbs = 2300\nsize = \"1m\"\nio_size = 1046500\nfdatasync = 1",
        "",
        "optane-p4800x",
        "1s",
    );
    let job = &r.results[0].jobs[0];
    let writes = (1u64 << 20) / 2300;
    assert_eq!(job.ios, writes);
    let io_bytes = job.fio.as_ref().map(|f| f.write.bytes);
    assert_eq!(io_bytes, Some(writes * 2300));
    // The calls' own figures, in the result and the table: what etcd's
    // check is read for.
    let sync = job.sync.as_ref().expect("the job's fdatasync calls");
    assert_eq!(sync.calls, writes - 1);
    assert_eq!(sync.lat_ns.n, writes - 1);
    let p99 = sync.lat_ns.at(99.0).expect("a 99th percentile");
    assert!(p99 >= sync.lat_ns.min && p99 <= sync.lat_ns.max, "{sync:?}");
    assert!(cint_report::to_table(&r).contains("sync calls (fsync and fdatasync"));
    // Each write dirties every page it touches, one or two: the call
    // after it writes them back, so each is dirtied again by the next
    // write that touches it.
    let touched: u64 = (0..writes)
        .map(|i| (i * 2300 + 2299) / 4096 - i * 2300 / 4096 + 1)
        .sum();
    let t = totals(&r);
    assert_eq!(t[0], touched, "pages dirtied: {t:?}");
    // The last write's pages stay dirty: no call follows it.
    assert_eq!(t[1] + t[9] + t[10], t[0], "no page lost: {t:?}");
    assert!(t[9] <= 2, "only the last write's pages are dirty: {t:?}");
    assert_eq!(t[2], writes - 1, "one request a call: {t:?}");
    assert_eq!(
        t[3], 8,
        "a write over two pages goes back in one 8 KiB request"
    );
    // A direct job's requests go to the device as they are: whole sectors.
    let text = "name = \"d\"\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
                [[job]]\nname = \"w\"\nengine = \"psync\"\nbs = 2300\n";
    let e = cint_scenario::load_str(text, "d.toml", &[]).expect_err("direct 2300");
    assert!(e.to_string().contains("multiple of 512"), "{e}");
    let uring = text.replace("psync\"", "io_uring\"\ndirect = false");
    let e = cint_scenario::load_str(&uring, "d.toml", &[]).expect_err("io_uring 2300");
    assert!(e.to_string().contains("only a buffered job"), "{e}");
}

#[test]
fn splits_and_ranges_of_any_size_run_buffered_and_only_buffered() {
    // Every request of a split or range is placed by the byte, as `bs`:
    // a sequential writer of 1000 and 3000 bytes moves exactly the bytes
    // it issued.
    for shape in ["bssplit = \"1000/50:3000/50\"", "bsrange = \"1000-3000\""] {
        let r = run(
            &format!("rw = \"write\"\n{shape}\nsize = \"1m\""),
            "",
            "optane-p4800x",
            "2ms",
        );
        let job = &r.results[0].jobs[0];
        let fio = job.fio.as_ref().expect("fio figures");
        assert!(fio.write.ios > 0, "{shape}");
        let mean = fio.write.bytes as f64 / fio.write.ios as f64;
        assert!((1000.0..=3000.0).contains(&mean), "{shape}: mean {mean}");
        assert!(
            fio.write.bytes % 1000 == 0,
            "{shape}: sizes are multiples of 1000: {}",
            fio.write.bytes
        );
        let t = totals(&r);
        assert_eq!(t[1] + t[9] + t[10], t[0], "{shape}: no page lost: {t:?}");
        // Direct, the same sizes are refused by their own key.
        let key = shape.split(' ').next().expect("a key");
        let text = format!(
            "name = \"d\"\n[[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[job]]\nname = \"w\"\nengine = \"psync\"\n{shape}\n"
        );
        let e = cint_scenario::load_str(&text, "d.toml", &[]).expect_err("direct 1000");
        assert!(
            e.to_string().contains(&format!("job.w.{key}"))
                && e.to_string()
                    .contains("1000 bytes is not a multiple of 512"),
            "{e}"
        );
    }
}

#[test]
fn a_device_acknowledging_writes_sooner_than_the_model_says_so() {
    // The P3700's sheet acknowledges a 4 KiB write at queue depth 1 in
    // 20 us; the model times it by the flash back end (450 us).
    let note = |device: &str, rw: &str| {
        let r = run_job(
            (
                "w",
                &format!("engine = \"psync\"\nrw = \"{rw}\"\nbs = \"4k\""),
            ),
            "",
            device,
            "5ms",
        );
        r.notes
            .into_iter()
            .find(|n| n.contains("power-protected buffer"))
    };
    let written = note("p3700", "randwrite").expect("a note on the P3700's writes");
    assert!(
        written.starts_with("device p3700: a 4 KiB write takes 453.8 us"),
        "{written}"
    );
    assert!(written.contains("in 20.0 us"), "{written}");
    // Reads, and a device whose writes the model times as its sheet does,
    // have nothing to say.
    assert_eq!(note("p3700", "randread"), None);
    assert_eq!(note("optane-p4800x", "randwrite"), None);
}
