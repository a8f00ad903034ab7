use super::*;
use crate::engine::stream_rng;
use rand::Rng;

fn settings() -> Settings {
    Settings {
        memory_pages: 1000,
        background_pages: 100,
        limit_pages: 200,
        writeback_interval: 5 * SEC,
        expire: 30 * SEC,
        max_request_pages: 32,
        read_ahead_pages: 32,
        buffered_call: 1_000,
        page_lookup: 300,
        page_copy: 400,
        writeback_page: 250,
        jiffy: 4_000_000,
        stat_error: 640,
    }
}

#[test]
fn background_writeback_starts_past_the_threshold_and_stops_under_it() {
    let mut pc = PageCache::new(settings());
    pc.write(0, 0, 100, 0);
    assert!(
        !pc.over_background(),
        "100 pages is the threshold, not past it"
    );
    assert_eq!(pc.next_writeback(Pass::Background, 0), None);
    pc.write(0, 100, 40, 0);
    assert!(pc.over_background());
    let mut written = 0;
    while let Some(e) = pc.next_writeback(Pass::Background, 0) {
        written += e.pages;
    }
    // A chunk of MIN_WRITEBACK_PAGES is more than everything dirty.
    assert_eq!((written, pc.dirty_pages()), (140, 0));
    pc.write(5, 0, 101, 0);
    pc.chunk_left = 0;
    assert_eq!(
        pc.next_writeback(Pass::Background, 0).map(|e| e.pages),
        Some(32)
    );
}

#[test]
fn requests_merge_contiguous_pages_up_to_the_maximum() {
    let mut pc = PageCache::new(settings());
    pc.write(1, 0, 70, 0);
    pc.write(1, 80, 3, 0);
    let sizes: Vec<_> = std::iter::from_fn(|| pc.next_writeback(Pass::Kupdate, 31 * SEC))
        .map(|e| (e.first, e.pages))
        .collect();
    assert_eq!(sizes, [(0, 32), (32, 32), (64, 6), (80, 3)]);
    assert_eq!(pc.totals.largest_request, 32);
}

#[test]
fn only_expired_files_are_written_by_a_periodic_run() {
    let mut pc = PageCache::new(settings());
    pc.write(1, 0, 4, 0);
    pc.write(2, 0, 4, 10 * SEC);
    assert_eq!(pc.next_writeback(Pass::Kupdate, 29 * SEC), None);
    let e = pc
        .next_writeback(Pass::Kupdate, 35 * SEC)
        .expect("file 1 expired");
    assert_eq!(e.file, 1);
    assert_eq!(pc.next_writeback(Pass::Kupdate, 35 * SEC), None);
    assert_eq!(
        pc.next_writeback(Pass::Kupdate, 40 * SEC).map(|e| e.file),
        Some(2)
    );
}

#[test]
fn writers_are_throttled_past_the_limit_until_writeback_completes() {
    let mut pc = PageCache::new(settings());
    pc.write(0, 0, 201, 0);
    assert!(pc.over_limit());
    let pause = pc.max_pause(201);
    assert!((1..=pc.set.max_pause()).contains(&pause), "{pause}");
    // Submitting writeback does not lift the limit: writeback pages
    // count; completing it does.
    let mut slot = 0;
    while let Some(e) = pc.next_writeback(Pass::Kupdate, 31 * SEC) {
        pc.track(slot, e);
        slot += 1;
    }
    assert!(pc.over_limit());
    for s in 0..slot {
        pc.written(s, 31 * SEC);
    }
    assert!(!pc.over_limit());
    assert_eq!(pc.totals.written, 201);
    pc.consistent().expect("consistent");
}

#[test]
fn a_background_chunk_is_half_a_second_at_the_estimated_bandwidth() {
    let set = Settings {
        memory_pages: 1 << 30,
        background_pages: 10_000,
        limit_pages: 1_000_000,
        ..settings()
    };
    let mut pc = PageCache::new(set);
    pc.write(0, 0, 20_000, 0);
    let mut written = 0;
    while let Some(e) = pc.next_writeback(Pass::Background, 0) {
        written += e.pages;
    }
    // INIT_BW / 2 = 12 800 pages (under an eighth of the limit), plus
    // 4096, rounded down: 16 384, though the threshold was crossed
    // after 10 000.
    assert_eq!(written, 16_384);
    // A small limit bounds the chunk: an eighth of 80 000 pages.
    let mut pc = PageCache::new(Settings {
        limit_pages: 80_000,
        ..set
    });
    pc.write(0, 0, 20_000, 0);
    let written: u64 = std::iter::from_fn(|| pc.next_writeback(Pass::Background, 0))
        .map(|e| e.pages)
        .sum();
    assert_eq!(written, 12_288);
}

#[test]
fn a_wake_up_runs_the_periodic_pass_when_due_and_then_the_background_one() {
    let mut pc = Instance::new(Owner::Host, settings(), 0);
    // Nothing due and nothing past the threshold: back to sleep.
    assert_eq!(pc.first_pass(SEC), None);
    // Past the threshold 2 s in, whoever wakes the flusher (its timer
    // too) writes in the background: the periodic pass is not due.
    pc.cache.write(0, 0, 150, SEC);
    assert_eq!(pc.first_pass(2 * SEC), Some(Pass::Background));
    // 5 s after the last periodic look, a writer's kick runs the
    // periodic pass first (and the flusher's step the background one
    // after it); the next is due 5 s later.
    assert_eq!(pc.first_pass(6 * SEC), Some(Pass::Kupdate));
    assert_eq!(pc.first_pass(7 * SEC), Some(Pass::Background));
    assert_eq!(pc.first_pass(11 * SEC), Some(Pass::Kupdate));
}

/// Writes `pages` dirty pages of file 9 back: submitted at `start`,
/// completed at `end` (slots from `slot`).
fn write_back(pc: &mut PageCache, pages: u64, (start, end): (Nanos, Nanos), slot: &mut u32) {
    let base = pc.totals.dirtied;
    pc.write(9, base, pages, start);
    let mut mine = Vec::new();
    while let Some(e) = pc.next_sync_extent(9, start) {
        pc.track(*slot, e);
        mine.push(*slot);
        *slot += 1;
    }
    for s in mine {
        pc.written(s, end);
    }
}

#[test]
fn the_bandwidth_estimate_follows_wb_update_write_bandwidth() {
    // One request each: the estimate moves on a completion.
    let set = Settings {
        memory_pages: 1 << 30,
        max_request_pages: 1 << 20,
        ..settings()
    };
    let mut pc = PageCache::new(set);
    let mut slot = 0;
    // 20 000 pages in 200 ms: 100 000 pages/s measured, weighted by
    // 200 ms of the 4.096 s period.
    write_back(&mut pc, 20_000, (0, 200_000_000), &mut slot);
    let expected = (INIT_BW * (1024 - 50) + 100_000 * 50) / 1024;
    assert_eq!(pc.bandwidth, expected);
    // The smoothed estimate moves only once the estimate has left it
    // and goes on moving away: not yet, so the pause stays as it was.
    assert_eq!(pc.avg_bandwidth, INIT_BW);
    write_back(&mut pc, 20_000, (200_000_000, 400_000_000), &mut slot);
    assert!(pc.bandwidth > expected);
    assert_eq!(pc.avg_bandwidth, INIT_BW + (expected - INIT_BW) / 8);
    // Ten idle seconds, then writeback again: the update over the gap
    // is skipped (the device was idle, not slow) ...
    let before = (pc.bandwidth, pc.avg_bandwidth);
    write_back(&mut pc, 100, (10 * SEC, 10 * SEC + 100_000_000), &mut slot);
    assert_eq!((pc.bandwidth, pc.avg_bandwidth), before);
    // ... and the next one measures from the skipped one.
    write_back(
        &mut pc,
        20_000,
        (10 * SEC + 100_000_000, 10 * SEC + 300_000_000),
        &mut slot,
    );
    assert!(pc.bandwidth > before.0);
}

#[test]
fn no_page_is_lost_or_written_twice() {
    let mut pc = PageCache::new(settings());
    let mut rng = stream_rng(7, 1);
    let mut slot = 0u32;
    let mut in_flight = Vec::new();
    for step in 0..2_000u64 {
        let now = step * 100_000_000;
        match rng.gen_range(0..3) {
            0 => {
                let first = rng.gen_range(0..300);
                pc.write(rng.gen_range(0..3), first, rng.gen_range(1..20), now);
            }
            1 => {
                if let Some(e) = pc.next_writeback(Pass::Kupdate, now) {
                    pc.track(slot, e);
                    in_flight.push(slot);
                    slot += 1;
                }
            }
            _ => {
                if !in_flight.is_empty() {
                    let i = rng.gen_range(0..in_flight.len());
                    pc.written(in_flight.swap_remove(i), now);
                }
            }
        }
        pc.consistent()
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
    }
    for s in in_flight {
        pc.written(s, 1 << 50);
    }
    while let Some(e) = pc.next_writeback(Pass::Kupdate, 1 << 50) {
        pc.track(slot, e);
        pc.written(slot, 1 << 50);
        slot += 1;
    }
    assert_eq!(pc.dirty_pages() + pc.writeback_pages(), 0);
    assert_eq!(pc.totals.dirtied, pc.totals.written);
}

#[test]
fn read_ahead_grows_on_a_sequential_stream() {
    let mut pc = PageCache::new(settings());
    let normal = Advice::Normal;
    let first = pc.read_ahead(0, 0, 1, 1000, normal).0;
    // One page, max 32: 1 <= 32/32, so four pages.
    assert_eq!(first.pages, 4);
    pc.read_done(first);
    assert!(pc.cached(0, 0, 4) && !pc.cached(0, 4, 1));
    // 4 is not below 32 / 16: the window doubles.
    let next = pc.read_ahead(0, 4, 1, 1000, normal).0;
    assert_eq!((next.first, next.pages), (4, 8));
    assert_eq!(pc.read_ahead(0, 12, 1, 1000, normal).0.pages, 16);
    let fourth = pc.read_ahead(0, 28, 1, 1000, normal).0;
    assert_eq!(fourth.pages, 32);
    assert_eq!(
        pc.read_ahead(0, 60, 1, 1000, normal).0.pages,
        32,
        "capped at read_ahead"
    );
    // POSIX_FADV_SEQUENTIAL doubles the limit.
    let mut seq = PageCache::new(settings());
    let windows: Vec<u64> = [0, 4, 12, 28, 60, 124]
        .into_iter()
        .map(|at| seq.read_ahead(1, at, 1, 1000, Advice::Sequential).0.pages)
        .collect();
    assert_eq!(windows, [4, 8, 16, 32, 64, 64]);
}

#[test]
fn a_small_random_miss_reads_only_its_pages_unless_it_looks_sequential() {
    let mut pc = PageCache::new(settings());
    let normal = Advice::Normal;
    // A lone miss far into the file: read as is, no stream started.
    let lone = pc.read_ahead(0, 500, 1, 1000, normal).0;
    assert_eq!((lone.first, lone.pages), (500, 1));
    pc.read_done(lone);
    pc.note_read(0, 500, 1);
    // The next page after the previous read: a stream starts there.
    assert_eq!(pc.read_ahead(0, 501, 1, 1000, normal).0.pages, 4);
    // Two cached pages before a one-page miss are more history than
    // the read: context read-ahead, history plus the read.
    let mut ctx = PageCache::new(settings());
    for p in [198, 199] {
        ctx.read_done(Extent {
            file: 0,
            first: p,
            pages: 1,
        });
    }
    ctx.note_read(0, 700, 1);
    assert_eq!(ctx.read_ahead(0, 200, 1, 1000, normal).0.pages, 3);
    // One cached page is not more than the read: as is.
    ctx.note_read(0, 700, 1);
    ctx.read_done(Extent {
        file: 0,
        first: 299,
        pages: 1,
    });
    assert_eq!(ctx.read_ahead(0, 300, 1, 1000, normal).0.pages, 1);
    // POSIX_FADV_RANDOM: only the pages asked for, even at the start
    // of the file or next to the previous read.
    let mut random = PageCache::new(settings());
    assert_eq!(random.read_ahead(0, 0, 1, 1000, Advice::Random).0.pages, 1);
    random.note_read(0, 0, 1);
    assert_eq!(random.read_ahead(0, 1, 2, 1000, Advice::Random).0.pages, 2);
}

#[test]
fn a_miss_reads_only_the_pages_missing_from_its_first_missing_one() {
    let mut pc = PageCache::new(settings());
    // Pages 0..16 of a 64 KiB read: all cached but 5 and 9.
    for p in (0..16).filter(|p| ![5, 9].contains(p)) {
        pc.read_done(Extent {
            file: 0,
            first: p,
            pages: 1,
        });
    }
    pc.note_read(0, 700, 1);
    let (window, missing) = pc.read_ahead(0, 0, 16, 1000, Advice::Random);
    // The call copies pages 0..5, then reads from page 5 on: pages 5 and
    // 9, and none of those cached between or after them.
    assert_eq!((window.first, window.pages, missing), (5, 11, 2));
    assert_eq!(pc.totals.read_ahead_pages, 2);
    pc.read_done(window);
    assert!(pc.cached(0, 0, 16));
    // A window past the call goes on past a cached page, reading the
    // others (`__do_page_cache_readahead` skips the pages it finds).
    pc.read_done(Extent {
        file: 0,
        first: 18,
        pages: 1,
    });
    let (window, missing) = pc.read_ahead(0, 16, 1, 1000, Advice::Normal);
    assert_eq!(window.first, 16);
    assert!(window.pages > 3, "{window:?}");
    assert_eq!(missing, window.pages - 1);
}

/// A cache of a million pages (background 100 000, limit 200 000: the
/// free-run ceiling is 150 000, the setpoint 175 000) whose device has
/// completed writeback, with `dirty` pages dirty.
fn paced_cache(dirty: u64) -> PageCache {
    let mut pc = PageCache::new(Settings {
        memory_pages: 1_000_000,
        background_pages: 100_000,
        limit_pages: 200_000,
        ..settings()
    });
    let mut slot = 0;
    write_back(&mut pc, 1, (0, 0), &mut slot);
    pc.write(0, 0, dirty, 0);
    pc
}

#[test]
fn a_writer_past_the_freerun_ceiling_is_paced_below_the_limit() {
    // 160 000 dirty: pos_ratio 1.30 (1335 / 1024) at INIT_BW, so a
    // task_ratelimit of 33 375 pages a second.
    let mut pc = paced_cache(160_000);
    assert_eq!(pc.position_ratio(160_000), 1335);
    let mut p = Pacing::default();
    let (mut now, mut dirtied, mut pauses) = (0, 0u64, 0);
    // One page a microsecond (a free writer would dirty 40 000 pages
    // to the limit in 40 ms), for 200 ms: less than a rate update.
    while now < 200_000_000 {
        pc.write(0, 160_000 + dirtied, 1, now);
        dirtied += 1;
        p.dirtied(1);
        let b = pc.balance(&mut p, now);
        now += 1_000;
        if let Some(end) = b.pause_until {
            assert!(end > now - 1_000 && end - now < 50 * 4_000_000);
            pauses += 1;
            now = end;
        }
    }
    assert!(pc.dirty + pc.writeback < pc.set.limit_pages);
    // Paced: after each `nr_dirtied_pause` of 200 pages (wb_min_pause's
    // 10 ms target, 2 jiffies, at dirty_ratelimit), a period of
    // HZ * 200 / 33 375 = 1 jiffy (Linux's integer jiffies round it
    // down from 1.5): about 50 000 pages a second, 10 000 in 200 ms.
    assert!(
        (9_000..=11_000).contains(&dirtied),
        "{dirtied} pages dirtied"
    );
    assert!(pauses >= 20, "{pauses} pauses");
    assert_eq!(pc.totals.pauses, pauses);
}

#[test]
fn under_the_ceiling_a_writer_looks_after_its_poll_interval() {
    // 120 000 dirty, past the background threshold but under the
    // ceiling: the first look lets the writer run free and sets its
    // next look 2^(ilog2(80 000) / 2) = 256 pages on; until then it
    // does not look, and so does not wake the flusher.
    let mut pc = paced_cache(120_000);
    let mut p = Pacing::default();
    p.dirtied(32);
    assert_eq!(
        pc.balance(&mut p, 0),
        Balance {
            kick: true,
            pause_until: None
        }
    );
    assert_eq!(p.nr_dirtied_pause, 256);
    p.dirtied(255);
    assert_eq!(pc.balance(&mut p, 0), Balance::default());
    p.dirtied(1);
    assert!(pc.balance(&mut p, 0).kick);
    assert_eq!((p.nr_dirtied, p.pending), (0, 0));
}

#[test]
fn over_the_limit_a_writer_sleeps_max_pause_and_looks_again() {
    let mut pc = paced_cache(200_001);
    let mut p = Pacing::default();
    p.dirtied(32);
    // wb_max_pause: 200 001 / (1 + 25 600 / 32) + 1 = 250 jiffies,
    // cut to MAX_PAUSE (50 jiffies, 200 ms).
    let b = pc.balance(&mut p, 1_000_000);
    assert_eq!(b.pause_until, Some(50 * 4_000_000));
    assert!(pc.dirty_exceeded);
    // Woken, still over the limit: another pause, with no new page.
    let b = pc.balance(&mut p, 200_000_000);
    assert_eq!(b.pause_until, Some(100 * 4_000_000));
    // Under the ceiling again, the loop ends; `dirty_exceeded` stays
    // (Linux clears it only after a turn that found the limit not
    // exceeded) until a call past the ceiling finds it so.
    let mut slot = 100;
    while let Some(e) = pc.next_writeback(Pass::Background, 0) {
        pc.track(slot, e);
        pc.written(slot, 400_000_000);
        slot += 1;
        if pc.dirty < 150_000 {
            break;
        }
    }
    pc.chunk_left = 0;
    assert_eq!(pc.balance(&mut p, 400_000_000).pause_until, None);
    assert!(pc.dirty_exceeded);
    pc.write(0, 300_000, 20_000, 400_000_000);
    p.dirtied(8);
    pc.balance(&mut p, 400_000_000);
    assert!(!pc.dirty_exceeded);
}

#[test]
fn the_writers_rate_moves_toward_the_balanced_rate() {
    // 185 000 dirty (past the setpoint: pos_ratio under 1) and a
    // writer that dirtied twice what the device writes over 200 ms:
    // the balanced rate is about half INIT_BW, and the base rate steps
    // down toward it, a little.
    let mut pc = paced_cache(185_000);
    let pos_ratio = pc.position_ratio(185_000);
    assert!(pos_ratio < 1 << RATELIMIT_SHIFT, "{pos_ratio}");
    pc.dirtied_stamp = pc.totals.dirtied - 2 * INIT_BW / 5;
    pc.update_ratelimit_at(51, 185_000, pos_ratio);
    let balanced = pc.balanced_ratelimit;
    assert!(
        (INIT_BW * 4 / 10..INIT_BW / 2).contains(&balanced),
        "{balanced}"
    );
    // The first step is filtered out: the last balanced rate (INIT_BW)
    // is above the base rate.
    assert_eq!(pc.dirty_ratelimit, INIT_BW);
    // Within 200 ms of the last update nothing moves.
    pc.update_ratelimit_at(100, 185_000, pos_ratio);
    assert_eq!(pc.dirty_ratelimit, INIT_BW);
    // Another 200 ms the same: the rate steps down, toward
    // task_ratelimit (22 776) by (25 600 - 22 776) >> 4, an eighth.
    pc.write(0, 185_000, 2 * INIT_BW / 5, 0);
    pc.update_ratelimit_at(102, 185_000, pos_ratio);
    assert_eq!(pc.dirty_ratelimit, INIT_BW - 22);
}

/// The files of a pass's requests at `now`, as runs of (file, pages).
fn writeback_runs(pc: &mut PageCache, pass: Pass, now: Nanos) -> Vec<(u32, u64)> {
    let mut runs: Vec<(u32, u64)> = Vec::new();
    while let Some(e) = pc.next_writeback(pass, now) {
        match runs.last_mut() {
            Some((file, pages)) if *file == e.file => *pages += e.pages,
            _ => runs.push((e.file, e.pages)),
        }
    }
    runs
}

#[test]
fn several_dirty_files_take_turns_a_chunk_each() {
    // A chunk of 4096 pages (an eighth of the limit is less than
    // MIN_WRITEBACK_PAGES); the older file goes first each round.
    let mut pc = PageCache::new(Settings {
        memory_pages: 1 << 20,
        ..settings()
    });
    pc.write(1, 0, 10_000, 0);
    pc.write(2, 0, 10_000, 1);
    assert_eq!(
        writeback_runs(&mut pc, Pass::Background, 2),
        [
            (1, 4096),
            (2, 4096),
            (1, 4096),
            (2, 4096),
            (1, 1808),
            (2, 1808)
        ]
    );
    // The periodic pass shares the device the same way among the
    // expired files, and leaves the others.
    pc.write(3, 0, 5_000, 0);
    pc.write(4, 0, 5_000, 20 * SEC);
    pc.write(5, 0, 5_000, 10 * SEC);
    assert_eq!(
        writeback_runs(&mut pc, Pass::Kupdate, 45 * SEC),
        [(3, 4096), (5, 4096), (3, 904), (5, 904)]
    );
}

/// Reads `pages` pages of `file` at `first` into the cache as a
/// buffered read does: missing pages come in, then each is accessed.
fn read(pc: &mut PageCache, file: u32, first: u64, pages: u64) {
    if !pc.read_hit(file, first, pages) {
        let skip = pc.rereads_last_page(file, first);
        pc.note_read(file, first, pages);
        pc.read_done(Extent { file, first, pages });
        pc.mark_accessed(file, first, pages, skip);
    }
}

/// A cache of 1000 pages after a hot set of file 1 (pages
/// `0..hot`) was read twice, page by page, then `cold` pages of file
/// 2 once each.
fn hot_then_cold(hot: u64, cold: u64) -> PageCache {
    let mut pc = PageCache::new(settings());
    for _ in 0..2 {
        for p in 0..hot {
            read(&mut pc, 1, p, 1);
        }
    }
    assert_eq!(pc.active_pages, hot);
    for p in 0..cold {
        read(&mut pc, 2, p, 1);
    }
    pc
}

#[test]
fn a_page_read_twice_is_active_and_outlives_a_pass_over_cold_data() {
    let mut pc = hot_then_cold(100, 3000);
    assert!(pc.cached(1, 0, 100), "the hot set stays");
    assert!(!pc.cached(2, 0, 1000) && pc.cached(2, 2100, 900));
    pc.consistent().expect("consistent");
    // A page read twice in a row at the same place is accessed once
    // (the second read starts where the first ended).
    read(&mut pc, 3, 0, 1);
    read(&mut pc, 3, 0, 1);
    assert_eq!(pc.active_pages, 100);
    read(&mut pc, 3, 1, 1);
    read(&mut pc, 3, 0, 1);
    assert_eq!(pc.active_pages, 101);
}

#[test]
fn the_active_list_gives_back_its_oldest_pages_when_the_inactive_is_low() {
    // A hot set of 600 pages in 1000: under a GiB the inactive list
    // is low once smaller than the active one, so reclaim moves the
    // oldest active pages back, and a cold pass evicts them.
    let pc = hot_then_cold(600, 5000);
    assert!(pc.active_pages <= 500, "{}", pc.active_pages);
    assert!(!pc.cached(1, 0, 1), "the oldest active page was evicted");
    assert!(pc.cached(1, 599, 1), "the youngest is still active");
    pc.consistent().expect("consistent");
}

#[test]
fn an_inode_changes_once_a_jiffy_and_one_commit_holds_every_file_changed_with_it() {
    let mut pc = Instance::new(Owner::Host, settings(), 0);
    let jiffy = pc.cache.set.jiffy;
    // Nothing written: nothing to commit.
    assert_eq!(pc.cache.fsync_commit(0, false), Commit::Done);
    // Files 0 and 1 written in the first jiffy: file 0's fsync writes the
    // running transaction's commit, which holds file 1's change too.
    pc.cache.write(0, 0, 1, 0);
    pc.cache.write(1, 0, 1, jiffy / 2);
    assert_eq!(pc.cache.fsync_commit(0, false), Commit::Write(1));
    assert!(!pc.cache.inode_committed(0, false));
    // File 1's fsync waits for that commit rather than writing one; so
    // does file 2's, changed in the next transaction: one commits at a
    // time, and the next follows.
    assert_eq!(pc.cache.fsync_commit(1, false), Commit::InFlight(1));
    pc.commit_waiters.push((7, 1));
    pc.cache.write(2, 0, 1, jiffy / 2);
    assert_eq!(pc.cache.fsync_commit(2, false), Commit::InFlight(1));
    pc.commit_waiters.push((8, 1));
    // A write later in the same jiffy leaves the time, and the inode, as
    // they were.
    pc.cache.write(0, 1, 1, jiffy - 1);
    assert_eq!(pc.commit_ended(1), vec![7, 8]);
    assert!(pc.commit_waiters.is_empty());
    assert!(pc.cache.inode_committed(0, false) && pc.cache.inode_committed(1, false));
    assert_eq!(pc.cache.fsync_commit(0, false), Commit::Done);
    assert_eq!(pc.cache.fsync_commit(1, false), Commit::Done);
    // File 2, looking again, writes the next commit; a change in the
    // next jiffy then waits for it, and goes in the one after.
    assert!(!pc.cache.inode_committed(2, false));
    assert_eq!(pc.cache.fsync_commit(2, false), Commit::Write(2));
    pc.cache.write(0, 2, 1, jiffy);
    assert_eq!(pc.cache.fsync_commit(0, false), Commit::InFlight(2));
    pc.commit_ended(2);
    assert_eq!(pc.cache.fsync_commit(0, false), Commit::Write(3));
    assert_eq!(pc.cache.totals.journal_commits, 3);
}

#[test]
fn fdatasync_commits_a_new_size_and_not_new_times() {
    let mut pc = Instance::new(Owner::Host, settings(), 0);
    let jiffy = pc.cache.set.jiffy;
    // An overwrite in place changes the times only: fsync commits them,
    // fdatasync has nothing to commit.
    pc.cache.write(0, 0, 1, 0);
    assert_eq!(pc.cache.fsync_commit(0, true), Commit::Done);
    assert!(pc.cache.inode_committed(0, true) && !pc.cache.inode_committed(0, false));
    // An append changes the size: fdatasync commits it too.
    pc.cache.write(0, 1, 1, jiffy);
    pc.cache.appended(0);
    assert!(!pc.cache.inode_committed(0, true));
    assert_eq!(pc.cache.fsync_commit(0, true), Commit::Write(1));
    pc.commit_ended(1);
    assert!(pc.cache.inode_committed(0, true) && pc.cache.inode_committed(0, false));
    // The next append joins the next transaction, and needs its commit.
    pc.cache.appended(0);
    assert_eq!(pc.cache.fsync_commit(0, true), Commit::Write(2));
}
