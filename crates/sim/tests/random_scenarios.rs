//! Random valid scenarios (issue #10): every engine, strategy kind,
//! batch/iodepth shape, numjobs, cores, cpu jobs, rate limits, think times
//! and hints, generated from one seed as TOML a user could write, then
//! run through the real parser and the simulator. For each it asserts:
//! - the simulator answers (no abort on valid input);
//! - the same seed gives the same bytes;
//! - every I/O job makes progress, or the result carries a note that
//!   explains why (a policy holding its completions past the end);
//! - no job, and no device (all jobs together), completes more I/Os per
//!   second than the device's parallel units could serve, or moves more
//!   than the device's capability for its mix: one controller serves both
//!   directions, so the transfer times of the bytes read and written
//!   (`bytes / bandwidth` of each direction) add up to at most the time
//!   that passed.
//!
//! Besides the shapes above, the host model's mechanisms (issue #18) are
//! varied: direction mixes, batches and depths up to the queue's tags and
//! beyond them (a small `queue_depth` makes submitters wait for tags),
//! polling jobs (`hipri`) beside interrupt jobs under polling strategies
//! with a named interrupt policy, and fio's latency-target search; and
//! the energy layer (the energy study's host with a governor, and the
//! per-request mode selector beside it); the
//! virtual-machine layer (a hypervisor with guests running I/O and busy
//! loops, and vic-sched beside the drawn strategies; guests with buffered
//! writers, each through its own page cache); the page cache (a
//! small one, with buffered synchronous jobs, whose calls the device
//! bounds do not cover); application programs (a RocksDB-like or
//! KVell-like store, whose every operation type must make progress or be
//! explained); and jobs replaying generated block traces (issue #23: each
//! format, both replay modes, every engine), whose result must carry the
//! replay's report; and CFS's settings (a kernel on one or two CPUs,
//! and a run queue short enough for the last buddy). Each of those draws comes from a generator of its
//! own, so a seed's other draws are unchanged.
//!
//! `cargo test -p cint-sim --test random_scenarios -- --ignored` runs a
//! longer soak; `CINT_RANDOM_SEED=N` picks another first seed.

use std::fmt::Write;

use cint_scenario::job::{ENGINES, HINTS, RWS};
use cint_test_support::rng::Rng;

const DEVICES: &[&str] = &["optane-p4800x", "p3700", "optane-900p"];

fn strategy(rng: &mut Rng, host_model: &mut Rng, i: usize, out: &mut String) {
    let kind = rng.pick(&[
        "none",
        "nvme",
        "adaptive",
        "cinterrupts",
        "vic",
        "poll",
        "hybrid-poll",
    ]);
    let _ = write!(out, "[[strategy]]\nname = \"s{i}\"\nkind = \"{kind}\"\n");
    let delta_us = 1 + rng.below(50);
    let thr = 1 + rng.below(64);
    match kind {
        "nvme" => {
            let _ = writeln!(
                out,
                "thr = {}\ntime = \"{}us\"",
                1 + rng.below(256),
                rng.below(200)
            );
        }
        "adaptive" => {
            let _ = writeln!(out, "delta = \"{delta_us}us\"\nthr = {thr}");
        }
        "cinterrupts" => {
            let _ = writeln!(out, "delta = \"{delta_us}us\"\nthr = {thr}");
            let _ = writeln!(out, "ooo = {}", rng.chance(50));
            let _ = writeln!(out, "barrier = \"{}\"", rng.pick(&["relaxed", "strict"]));
            if rng.chance(30) {
                let _ = writeln!(out, "max_irq_rate = {}", 10_000 + rng.below(200_000));
            }
        }
        "vic" => {
            let _ = writeln!(out, "cif_threshold = {}", 1 + rng.below(8));
            if rng.chance(50) {
                let _ = writeln!(out, "quirk_failsafe = {}", 1 + rng.below(16));
            }
        }
        "hybrid-poll" => {
            let sleep = match rng.below(3) {
                0 => "\"adaptive\"".to_string(),
                1 => "\"min\"".to_string(),
                _ => format!("\"{}us\"", 1 + rng.below(20)),
            };
            let _ = writeln!(out, "sleep = {sleep}");
        }
        _ => {}
    }
    if matches!(kind, "poll" | "hybrid-poll") && host_model.chance(50) {
        let fallback = host_model.pick(&["none", "nvme", "adaptive", "cinterrupts", "vic"]);
        let _ = writeln!(out, "interrupts = \"{fallback}\"");
    }
}

/// Now and then a runtime for a cpu job, ending it before, at or after
/// the run's 22 ms (its end is an event of its own in the simulator).
fn cpu_runtime(rng: &mut Rng, out: &mut String) {
    if rng.chance(40) {
        let _ = writeln!(out, "runtime = \"{}us\"", 100 + rng.below(25_000));
    }
}

/// One I/O or cpu job; `depth_left` is what the queue of its core still
/// has room for (iodepth x numjobs per queue is bounded by queue_depth).
fn job(rng: &mut Rng, host_model: &mut Rng, i: usize, cores: u64, out: &mut String) {
    let cpu = rng.below(cores);
    if rng.chance(15) {
        let _ = write!(
            out,
            "[[job]]\nname = \"j{i}\"\nkind = \"cpu\"\ncpu = {cpu}\n"
        );
        cpu_runtime(rng, out);
        return;
    }
    let engine = rng.pick(ENGINES);
    let rw = rng.pick(RWS);
    let bs = rng.pick(&["512", "4k", "16k", "128k", "1m"]);
    let numjobs = 1 + rng.below(4);
    // fio's cpus_allowed_policy=split: the job's threads over both cores.
    let placement = if cores > 1 && host_model.chance(15) {
        "cpus = [1, 0]".to_string()
    } else {
        format!("cpu = {cpu}")
    };
    let _ = write!(
        out,
        "[[job]]\nname = \"j{i}\"\n{placement}\nengine = \"{engine}\"\nrw = \"{rw}\"\nbs = \"{bs}\"\nnumjobs = {numjobs}\n"
    );
    if matches!(engine, "libaio" | "io_uring") {
        let mut iodepth = 1 + rng.below(64);
        let mut batch = 1 + rng.below(iodepth);
        let complete = 1 + rng.below(iodepth);
        // Deep calls: plugs flushed every 16 requests, and more requests
        // than the queue's 1 024 tags.
        if host_model.chance(15) {
            iodepth = 64 + host_model.below(2_048);
            batch = 1 + host_model.below(iodepth);
        }
        let _ = writeln!(
            out,
            "iodepth = {iodepth}\nbatch = {batch}\nbatch_complete_min = {complete}"
        );
    }
    if matches!(engine, "pvsync2" | "io_uring") && host_model.chance(40) {
        let _ = writeln!(out, "hipri = true");
    }
    // fio's latency-target search.
    if host_model.chance(10) {
        let _ = writeln!(
            out,
            "latency_target = \"{}us\"\nlatency_window = \"{}us\"\nlatency_percentile = {}",
            1 + host_model.below(300),
            host_model.below(2_000),
            host_model.pick(&["50", "99.9", "100"])
        );
    }
    if engine == "pvsync2" && rng.chance(30) {
        let _ = writeln!(out, "nowait = true");
    }
    if matches!(rw, "randrw" | "readwrite") {
        let _ = writeln!(out, "rwmixread = {}", rng.below(101));
    }
    if rng.chance(25) {
        let _ = writeln!(out, "hint = \"{}\"", rng.pick(HINTS));
    }
    let rate_iops = rng.chance(20);
    let mixed = matches!(rw, "randrw" | "readwrite");
    if rate_iops {
        let cap = 20_000 + rng.below(100_000);
        // A mix is capped per direction now and then, from the cap drawn
        // (no draw of its own, so the rest of the seed's scenario is
        // unchanged): both, reads only, or writes only.
        let _ = match cap % 4 {
            0 if mixed => writeln!(out, "rate_iops = \"{cap},{}\"", cap / 3),
            1 if mixed => writeln!(out, "rate_iops = \"{cap},\""),
            2 if mixed => writeln!(out, "rate_iops = \",{cap}\""),
            _ => writeln!(out, "rate_iops = {cap}"),
        };
        // A floor now and then (never judged in 20 ms: fio settles 2 s),
        // under every direction's cap (fio refuses a floor above one).
        if cap % 5 == 3 {
            let _ = writeln!(out, "rate_iops_min = {}", cap / 4);
        }
    }
    if rng.chance(20) {
        let _ = writeln!(out, "think = \"{}us\"", rng.below(20));
    }
    shaping(rng, engine, bs, rate_iops, mixed, out);
}

/// fio's request-shaping keys, each now and then.
fn shaping(rng: &mut Rng, engine: &str, bs: &str, rate_iops: bool, mixed: bool, out: &mut String) {
    if rng.chance(10) {
        // With 16 KiB blocks, writes get a range of their own (no draw of
        // its own, so the rest of the seed's scenario is unchanged).
        let writes = if bs == "16k" { ",32k-64k" } else { "" };
        let _ = writeln!(out, "bsrange = \"{bs}-1m{writes}\"");
    }
    if !rate_iops && rng.chance(10) {
        let cap = 20 + rng.below(500);
        if mixed && cap % 3 == 0 {
            let _ = writeln!(out, "rate = \"{cap}m,{}m\"", 1 + cap / 4);
        } else {
            let _ = writeln!(out, "rate = \"{cap}m\"");
        }
        if rng.chance(30) {
            let _ = writeln!(out, "rate_process = \"poisson\"");
        }
    }
    if rng.chance(10) {
        let (think, lines) = cint_test_support::scenario::drawn_think_time(rng);
        out.push_str(&lines);
        // Its triggers, from the draw above (no draw of their own, so the
        // rest of the seed's scenario is unchanged): by issued requests,
        // and every so often.
        if think % 3 == 0 {
            let _ = writeln!(out, "thinktime_blocks_type = \"issue\"");
        }
        if think % 4 == 1 {
            let _ = writeln!(out, "thinktime_iotime = \"{}us\"", think * 20);
        }
        if rate_iops && think % 5 == 2 {
            let _ = writeln!(out, "rate_ign_think = true");
        }
    }
    if rng.chance(5) {
        let _ = writeln!(out, "number_ios = {}", 1 + rng.below(2_000));
    }
    if rng.chance(5) {
        let _ = writeln!(out, "startdelay = \"{}ms\"", rng.below(5));
    }
    if matches!(engine, "libaio" | "io_uring") && rng.chance(10) {
        let _ = writeln!(out, "barrier_last = true");
    }
    if rng.chance(5) {
        let _ = writeln!(out, "flow = {}", 1 + rng.below(4));
    }
    if engine != "io_uring" && rng.chance(5) {
        let _ = writeln!(out, "fsync = {}", 1 + rng.below(8));
    }
}

/// Ends job `one` by its size: one to three passes over its file (the
/// file's size, or half of it where every request has one size), the
/// file drawn where the job has none.
fn sized_in_passes(ends: &mut Rng, one: &mut String) {
    let given = one.lines().find_map(|l| {
        let mib = l.strip_prefix("size = \"")?.strip_suffix("m\"")?;
        mib.parse::<u64>().ok()
    });
    let file_mib = given.unwrap_or_else(|| {
        // At least 2 MiB: a zoned_abs distribution's zones fill that.
        let mib = 2 + ends.below(3);
        let _ = writeln!(one, "size = \"{mib}m\"");
        mib
    });
    let one_size = !one.contains("bssplit") && !one.contains("bsrange");
    let pass_kib = match one_size && ends.chance(40) {
        true => file_mib * 512,
        false => file_mib * 1024,
    };
    let passes = 1 + ends.below(3);
    let _ = writeln!(
        one,
        "io_size = \"{}k\"\npass_size = \"{pass_kib}k\"",
        pass_kib * passes
    );
    // Now and then fio's byte limit lies past the passes' bytes.
    if ends.chance(30) {
        let _ = writeln!(
            one,
            "byte_limit = \"{}k\"",
            pass_kib * passes + file_mib * 1024
        );
    }
}

fn scenario(seed: u64) -> String {
    let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let cores = 1 + rng.below(2);
    let mut host_model = Rng::new(seed.wrapping_mul(0x94d0_49bb_1331_11eb));
    let device = rng.pick(DEVICES);
    let mut out = format!(
        "name = \"random-{seed}\"\nseed = {seed}\nduration = \"20ms\"\nwarmup = \"2ms\"\n\
         [device]\nmodel = \"{device}\"\n"
    );
    // Few tags: the jobs' depth exceeds them, and submitters wait.
    if host_model.chance(15) {
        let _ = writeln!(out, "queue_depth = {}", 1 + host_model.below(64));
    }
    // How requests find a unit (the 900P's profile is striped, the others
    // pooled), from a generator of its own: the rest of each seed's
    // scenario stays as it was.
    let mut units = Rng::new(seed.wrapping_mul(0x6a09_e667_f3bc_c909));
    if units.chance(25) {
        let binding = units.pick(&["pooled", "striped"]);
        let _ = writeln!(
            out,
            "unit_binding = \"{binding}\"\nparallel_units = {}",
            1 + units.below(8)
        );
    }
    // The energy layer (issue #21): the energy study's host, whose
    // profile has power data, and a governor; energy is on when the
    // device has power data too (the 900P).
    let mut energy = Rng::new(seed.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    let host = if energy.chance(30) {
        "xeon-e3-1230v5"
    } else {
        "xeon-e5-2660v4"
    };
    let (mut strategies, mut jobs) = (String::new(), String::new());
    for i in 0..1 + rng.below(3) as usize {
        strategy(&mut rng, &mut host_model, i, &mut strategies);
    }
    // The virtual-machine layer (issue #22), on its own generator: guests
    // take cores after the host's, behind a hypervisor core; polling
    // strategies cannot serve guests, so a seed that drew one has none.
    let mut virt = Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
    // Guests' buffered writers (each guest's own page cache), from a
    // generator of their own, so the guests drawn before stay as they were.
    let mut guest_cache = Rng::new(seed.wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
    let polls = strategies.contains("poll\"");
    let guests = if !polls && virt.chance(25) {
        guests(&mut virt, &mut guest_cache, cores, &mut strategies)
    } else {
        None
    };
    let host_cores = guests.as_ref().map_or(cores, |(n, _)| *n);
    let _ = write!(out, "[host]\nmodel = \"{host}\"\ncores = {host_cores}\n");
    // Its own generator, so that the rest of each seed's scenario is what
    // it was before the host's cost spread existed.
    let mut host_rng = Rng::new(seed.wrapping_mul(0xd1b5_4a32_d192_ed03));
    if host_rng.chance(50) {
        let spread = host_rng.pick(&["0.25", "0.5", "1.0", "2.5"]);
        out.push_str(&format!("cost_spread = {spread}\n"));
    }
    // The generator's work anywhere from all at the reap to all at the
    // issue, both ends included.
    if host_rng.chance(50) {
        let share = host_rng.pick(&["0", "0.3", "1"]);
        out.push_str(&format!("user_issue_share = {share}\n"));
    }
    // CFS's settings as a kernel on one or two CPUs runs them, or a
    // target latency of two minimum granularities, whose sched_nr_latency
    // of 2 puts the last buddy to work with two threads: a generator of
    // their own, so the rest of each seed's scenario stays as it was.
    let mut cfs = Rng::new(seed.wrapping_mul(0x7fb5_d329_728e_a185));
    if cfs.chance(30) {
        let settings = cfs.pick(&[
            "sched_latency = \"6ms\"\nsched_min_granularity = \"750us\"\n\
             sched_wakeup_granularity = \"1ms\"\n",
            "sched_latency = \"12ms\"\nsched_min_granularity = \"1500us\"\n\
             sched_wakeup_granularity = \"2ms\"\n",
            "sched_latency = \"1ms\"\nsched_min_granularity = \"500us\"\n\
             sched_wakeup_granularity = \"0ms\"\n",
        ]);
        out.push_str(settings);
    }

    // io_uring's events posted by task work (Linux 5.15) or by the
    // interrupt (5.6), whichever the host's profile says, on a generator
    // of its own.
    let mut uring = Rng::new(seed.wrapping_mul(0x94d0_49bb_1331_11eb));
    if uring.chance(30) {
        let posted = uring.pick(&["true", "false"]);
        let _ = writeln!(out, "uring_task_work = {posted}");
    }

    // The kernel's tick (CONFIG_HZ 1000, 100 or a short one), on a
    // generator of its own: the groups' reweighting and the governors'
    // look-ahead run on it.
    let mut tick = Rng::new(seed.wrapping_mul(0x6c8e_9cf5_7093_2bd5));
    if tick.chance(20) {
        let period = tick.pick(&["1ms", "10ms", "250us"]);
        let _ = writeln!(out, "tick = \"{period}\"");
    }
    let mut power_keys = String::new();
    if host == "xeon-e3-1230v5" && energy.chance(50) {
        let governor = energy.pick(&["menu", "menu-no-iowait", "teo"]);
        let _ = writeln!(power_keys, "governor = \"{governor}\"");
    }
    // A cpuidle table of its own (1 to Linux's 10 states), on a generator
    // of its own so that the rest of each seed stays as it was.
    let mut idle = Rng::new(seed.wrapping_mul(0x94d0_49bb_1331_11eb));
    if host == "xeon-e3-1230v5" && idle.chance(30) {
        power_keys.push_str(&idle_states(&mut idle));
    }
    if !power_keys.is_empty() {
        let _ = write!(out, "[host.power]\n{power_keys}");
    }
    // SMT (issue #21), on its own generator: the energy host's two hardware
    // threads per core where the drawn CPUs make whole cores and no guest
    // runs, one thread per core otherwise (its profile has two).
    if host == "xeon-e3-1230v5" {
        let mut smt = Rng::new(seed.wrapping_mul(0x8cb9_2ba7_2f3d_8dd7));
        let two = host_cores % 2 == 0 && guests.is_none() && smt.chance(70);
        let tpc = if two { 2 } else { 1 };
        let _ = write!(out, "[host.smt]\nthreads_per_core = {tpc}\n");
    }
    // The page cache (issue #23): a small one, so that writeback and
    // throttling happen within the run, and synchronous jobs through it.
    let mut cache = Rng::new(seed.wrapping_mul(0x2127_599b_f432_5c37));
    let buffered = cache.chance(25);
    if buffered {
        let _ = write!(
            out,
            "[host.page_cache]\nmemory = \"{}MiB\"\nflusher_cpu = {}\n",
            1 + cache.below(64),
            cache.below(cores)
        );
    }
    // A small cache for the guests' writers too, when the host's has none.
    let guests_buffered = guests
        .as_ref()
        .is_some_and(|(_, text)| text.contains("direct = false"));
    if guests_buffered && !buffered {
        let _ = write!(
            out,
            "[host.page_cache]\nmemory = \"{}MiB\"\n",
            1 + guest_cache.below(64)
        );
    }
    // The per-request mode selector (issue #21, docs/ALGORITHMS.md
    // section 10) needs power data: on the energy host with the 900P, now
    // and then, from a generator of its own; not with guests, whose
    // completions come through the hypervisor and cannot be polled.
    let mut select = Rng::new(seed.wrapping_mul(0xff51_afd7_ed55_8ccd));
    if host == "xeon-e3-1230v5" && device == "optane-900p" && guests.is_none() && select.chance(60)
    {
        let fallback = select.pick(&["none", "nvme", "adaptive", "cinterrupts", "vic"]);
        let _ = write!(
            strategies,
            "[[strategy]]\nname = \"select\"\nkind = \"mode-select\"\ninterrupts = \"{fallback}\"\n"
        );
    }
    // Buffered libaio jobs (their iocbs run inside io_submit), from a
    // generator of their own so that the other draws stay as they were.
    let mut aio_cache = Rng::new(seed.wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
    // And without fio's fadvise hint now and then (Linux's own read-ahead
    // rules judge each miss), from one more.
    let mut advice = Rng::new(seed.wrapping_mul(0x1656_67b1_9e37_79f9));
    // And a buffered writer's file opened O_SYNC or O_DSYNC now and then
    // (fio's `sync`), from one more.
    let mut sync_files = Rng::new(seed.wrapping_mul(0x27d4_eb2f_1656_67c5));
    // And a random job's offsets without fio's random map or from its
    // LFSR now and then, over a file small enough for the map to start
    // again within the run, from one more.
    let mut maps = Rng::new(seed.wrapping_mul(0x9e37_79b9_27d4_eb2f));
    // And a buffered job's requests of a size that is no whole number of
    // sectors now and then (etcd's `bs=2300`), from one more.
    let mut odd_sizes = Rng::new(seed.wrapping_mul(0x85eb_ca6b_c2b2_ae35));
    // And an end by the job's size, in passes over its file, from one
    // more.
    let mut ends = Rng::new(seed.wrapping_mul(0xd6e8_feb8_6659_fd93));
    // fio's end_fsync on buffered writers that end by their size or
    // count, from a stream of its own.
    let mut final_syncs = Rng::new(seed.wrapping_mul(0x9e6c_63d0_676a_9a99));
    for i in 0..1 + rng.below(4) as usize {
        let mut one = String::new();
        job(&mut rng, &mut host_model, i, cores, &mut one);
        if one.contains("rw = \"rand") && !one.contains("trace = ") {
            match maps.below(4) {
                0 => one.push_str("norandommap = true\n"),
                1 => one.push_str("random_generator = \"lfsr\"\n"),
                _ => {}
            }
            if maps.chance(30) {
                let _ = writeln!(one, "size = \"{}m\"", 2 + maps.below(16));
            }
            if maps.chance(25) {
                let dist = maps.pick(&[
                    "zipf:1.2",
                    "zipf:0.8:0.5",
                    "pareto:0.3",
                    "normal:10",
                    "zoned:60/10:40/90",
                    "zoned_abs:70/1m:30/1m",
                ]);
                let _ = writeln!(one, "random_distribution = \"{dist}\"");
            }
        }
        let sync = one.contains("engine = \"psync\"") || one.contains("engine = \"pvsync2\"");
        let libaio = one.contains("engine = \"libaio\"") && !one.contains("trace = ");
        // RWF_NOWAIT fails buffered calls: such a job stays direct (the
        // draw is made all the same, so the other draws stay as they were).
        let nowait = one.contains("nowait = true");
        if buffered && ((sync && cache.chance(60) && !nowait) || (libaio && aio_cache.chance(50))) {
            one.push_str("direct = false\n");
            if advice.chance(40) {
                one.push_str("fadvise_hint = false\n");
            }
            let writes = !one.contains("rw = \"read\"") && !one.contains("rw = \"randread\"");
            if writes && sync_files.chance(30) {
                let mode = if sync_files.chance(50) {
                    "sync"
                } else {
                    "dsync"
                };
                let _ = writeln!(one, "sync = \"{mode}\"");
            }
            let one_size = !one.contains("bssplit") && !one.contains("bsrange");
            if one_size && odd_sizes.chance(30) {
                let odd = odd_sizes.pick(&["100", "2300", "5000", "70000"]);
                one = one
                    .lines()
                    .map(|l| match l.starts_with("bs = ") {
                        true => format!("bs = {odd}\n"),
                        false => format!("{l}\n"),
                    })
                    .collect();
            } else if !one_size && odd_sizes.chance(30) {
                // A split's or a range's sizes too.
                let odd = odd_sizes.pick(&["100", "2300", "5000"]);
                one = one
                    .lines()
                    .map(|l| {
                        if l.starts_with("bssplit = ") {
                            format!("bssplit = \"{odd}/40:4k/60\"\n")
                        } else if l.starts_with("bsrange = ") {
                            format!("bsrange = \"{odd}-64k\"\n")
                        } else if l.starts_with("bs = ") {
                            format!("bs = {odd}\n")
                        } else {
                            format!("{l}\n")
                        }
                    })
                    .collect();
            }
        }
        let io_job = one.contains("engine = ") && !one.contains("trace = ");
        if io_job && !one.contains("offload") && ends.chance(15) {
            sized_in_passes(&mut ends, &mut one);
        }
        let reads_only = one.contains("rw = \"read\"") || one.contains("rw = \"randread\"");
        let ends_itself = one.contains("io_size = ") || one.contains("number_ios = ");
        if one.contains("direct = false") && !reads_only && ends_itself && final_syncs.chance(40) {
            one.push_str("end_fsync = true\n");
        }
        jobs.push_str(&one);
    }
    if jobs.contains("end_fsync = true") {
        // The run waits for the final fsync, as fio's does.
        out.insert_str(0, "run_to_end = true\n");
    }
    if let Some((_, text)) = &guests {
        out.push_str(text);
    }
    out.push_str(&strategies);
    out.push_str(&jobs);
    // Application programs (issue #23), from a generator of their own.
    let mut apps = Rng::new(seed.wrapping_mul(0x9fb2_1c65_1e98_df25));
    // Not beside guests: the loader refuses apps there (they would share
    // the host's page cache with a guest's kernel).
    let apps_here = guests.is_none();
    if apps_here && apps.chance(15) {
        let _ = write!(
            out,
            "[[app]]\nname = \"kv\"\nkind = \"kvell\"\nworkload = \"{}\"\n\
             distribution = \"{}\"\nscan_length = {}\nscan_share = {}\nring = {}\ncpus = [{}]\n",
            apps.pick(&["A", "B", "C", "D", "E", "F"]),
            apps.pick(&["uniform", "zipfian"]),
            1 + apps.below(64),
            apps.below(101),
            1 + apps.below(256),
            apps.below(cores)
        );
    }
    if apps_here && apps.chance(25) {
        let benchmark = apps.pick(&["fillbatch", "readrandom", "readwhilewriting", "dump"]);
        let _ = write!(
            out,
            "[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"{benchmark}\"\n\
             threads = {}\ncpus = [{}]\nwriter_cpu = {}\nflush_cpu = {}\nmemtable = \"{}MiB\"\n",
            1 + apps.below(8),
            apps.below(cores),
            apps.below(cores),
            apps.below(cores),
            1 + apps.below(64)
        );
        // Compaction: drawn after the store's keys, so those stay put.
        let _ = write!(
            out,
            "fill = \"{}\"\nauto_compaction = {}\nl0_compaction_trigger = {}\n\
             compaction_cpu = {}\ncompaction_hint = \"{}\"\n",
            apps.pick(&["sequential", "random"]),
            apps.chance(75),
            1 + apps.below(8),
            apps.below(cores),
            apps.pick(&["default", "urgent", "barrier", "none"])
        );
        // The merge's CPU, zero included: drawn last, as above.
        let _ = write!(
            out,
            "compaction_key_cpu = \"{}ns\"\ncompaction_mib_cpu = \"{}us\"\n\
             max_write_buffer_number = {}\nbloom_bits = {}\nflush_mib_cpu = \"{}us\"\n",
            apps.below(1_000),
            apps.below(5_000),
            1 + apps.below(8),
            apps.pick(&["0", "0", "1", "5", "10", "20"]),
            apps.below(3_000)
        );
        // The writer's log synced (db_bench --sync), with its hint: drawn
        // last, as above.
        if matches!(benchmark, "fillbatch" | "readwhilewriting") && apps.chance(40) {
            let _ = writeln!(
                out,
                "sync = true
wal_hint = \"{}\"",
                apps.pick(&["default", "urgent", "barrier", "none"])
            );
        }
    }
    // CFS task groups, from a generator of their own: not beside guests,
    // whose host threads the virtual-machine layer schedules.
    let mut groups = Rng::new(seed.wrapping_mul(0xd6e8_feb8_6659_fd93));
    if guests.is_none() && groups.chance(30) {
        out = sched_groups(&mut groups, &out);
    }
    // fio's offloaded submission, from a generator of its own.
    let mut offload = Rng::new(seed.wrapping_mul(0xa076_1d64_78bd_642f));
    let out = offload_jobs(&mut offload, &out);
    // io_uring's SQ-polled rings, from a generator of its own.
    let mut sqpoll = Rng::new(seed.wrapping_mul(0xe703_7ed1_a0b4_28db));
    let out = sqpoll_jobs(&mut sqpoll, &out, host_cores);
    // fio's iodepth_low, from a generator of its own.
    let mut marks = Rng::new(seed.wrapping_mul(0x5851_f42d_4c95_7f2d));
    let out = cint_test_support::scenario::with_low_marks(&mut marks, &out, 20);
    // fio's max_latency, from a generator of its own.
    let mut bounds = Rng::new(seed.wrapping_mul(0x2c1b_3c6d_a3f1_9e55));
    let out = cint_test_support::scenario::with_latency_bounds(&mut bounds, &out, 8);
    // Reap calls that do not wait, from one more.
    let mut reaps = Rng::new(seed.wrapping_mul(0x9ddf_ea08_eb38_2d69));
    cint_test_support::scenario::with_reaps_without_waiting(&mut reaps, &out, 15)
}

/// `text` with some of its io_uring jobs' rings SQ-polled (fio's
/// `sqthread_poll`), those whose keys allow it, half of them with their
/// SQ threads on a drawn core of the host's `cores`.
fn sqpoll_jobs(rng: &mut Rng, text: &str, cores: u64) -> String {
    let refused = ["guest = ", "flow = ", "direct = false", "trace = "];
    cint_test_support::scenario::with_lines_after_tables(text, |block| {
        let ring = block.starts_with("job]]\n") && block.contains("engine = \"io_uring\"");
        if !ring || refused.iter().any(|r| block.contains(r)) || !rng.chance(30) {
            return None;
        }
        let mut lines = String::from("sqpoll = true\n");
        // A guest's vCPUs and the hypervisor own their cores.
        if rng.chance(50) && !text.contains("[hypervisor]") {
            let _ = writeln!(lines, "sqpoll_cpu = {}", rng.below(cores));
        }
        Some(lines)
    })
}

/// `text` with some of its I/O jobs offloaded (fio's
/// `io_submit_mode=offload`): those whose engine and keys allow it, their
/// batches at 1 and their depths, the workers, at most 64.
fn offload_jobs(rng: &mut Rng, text: &str) -> String {
    let refused = [
        "kind = \"cpu\"",
        "engine = \"io_uring\"",
        "guest = ",
        "thinktime",
        "flow = ",
        "fsync",
        "fdatasync",
        "latency_target",
        "direct = false",
        "trace = ",
        "rate_iops_min",
        "pass_size",
    ];
    let mut out = String::with_capacity(text.len() + 256);
    for (i, block) in text.split("[[").enumerate() {
        if i > 0 {
            out.push_str("[[");
        }
        let job = block.starts_with("job]]\n");
        if !job || refused.iter().any(|r| block.contains(r)) || !rng.chance(20) {
            out.push_str(block);
            continue;
        }
        let mut has_depth = false;
        for line in block.split_inclusive('\n') {
            let key = line.split('=').next().unwrap_or("").trim();
            match key {
                "batch" | "batch_complete_min" | "batch_complete_max" => {
                    out.push_str(&format!("{key} = 1\n"))
                }
                "iodepth" => {
                    has_depth = true;
                    let _ = writeln!(out, "iodepth = {}", 1 + rng.below(64));
                }
                _ => out.push_str(line),
            }
        }
        if !has_depth {
            let _ = writeln!(out, "iodepth = {}", 1 + rng.below(8));
        }
        out.push_str("submit_mode = \"offload\"\n");
    }
    out
}

/// `text` with some of its jobs and apps put in task groups, and some of
/// the groups given shares of their own.
fn sched_groups(rng: &mut Rng, text: &str) -> String {
    let names = ["g0", "g1", "g2"];
    let mut out = String::with_capacity(text.len() + 256);
    for (i, part) in text.split_inclusive('\n').enumerate() {
        out.push_str(part);
        let header = part == "[[job]]\n" || part == "[[app]]\n";
        if header && (i == 0 || rng.chance(70)) {
            let _ = writeln!(out, "sched_group = \"{}\"", rng.pick(&names));
        }
    }
    for name in names {
        if rng.chance(40) {
            let _ = write!(
                out,
                "[[sched_group]]\nname = \"{name}\"\nshares = {}\n",
                2 + rng.below((1 << 18) - 1)
            );
        }
    }
    out
}

/// Now and then a job replaying a generated trace, written into `dir`:
/// its own generator, so the rest of the seed's scenario is unchanged.
fn trace_job(seed: u64, text: &str, dir: &std::path::Path) -> String {
    use cint_trace::encode::{self, Io};
    let mut rng = Rng::new(seed.wrapping_mul(0x8cb9_2ba7_2f3d_8dd7));
    if !rng.chance(25) {
        return String::new();
    }
    // The application cores: with guests, those below the hypervisor's
    // first core (guests and their hypervisor own the cores from there).
    let first_owned = text.find("[hypervisor]").and_then(|at| {
        text[at..]
            .lines()
            .find_map(|l| l.strip_prefix("cores = ["))
            .and_then(|c| c.split([',', ']']).next())
            .and_then(|c| c.trim().parse::<u64>().ok())
    });
    let cores = first_owned.unwrap_or_else(|| {
        text.lines()
            .find_map(|l| l.strip_prefix("cores = "))
            .and_then(|c| c.parse::<u64>().ok())
            .unwrap_or(1)
    });
    let streams = 1 + rng.below(3);
    let n = 20 + rng.below(400);
    let mut t = 0u64;
    let ios: Vec<Io> = (0..n)
        .map(|_| {
            // Spread over about the run's 22 ms, in bursts.
            t += if rng.chance(20) {
                0
            } else {
                rng.below(2 * 22_000_000 / n)
            };
            let done = rng.chance(80).then(|| t + 5_000 + rng.below(200_000));
            Io {
                time: t,
                offset: rng.below(1 << 28) * 512,
                bytes: 512 * (1 + rng.below(128)) as u32,
                write: rng.chance(30),
                stream: 40 + rng.below(streams) as u32,
                cpu: rng.below(cores) as u32,
                done,
            }
        })
        .collect();
    let (name, bytes) = match rng.below(4) {
        0 => ("t.iolog", encode::iolog_v3(&ios).into_bytes()),
        1 => ("t.csv", encode::msr_csv(&ios).into_bytes()),
        v => {
            let big = rng.chance(50);
            (
                "t.blk",
                encode::blktrace(&ios, 5 + v as u8, big, rng.below(40) as u16),
            )
        }
    };
    let path = dir.join(format!("{seed}-{name}"));
    std::fs::write(&path, bytes).expect("write the trace");
    let engine = rng.pick(&["psync", "pvsync2", "libaio", "io_uring"]);
    let mut job = format!(
        "[[job]]\nname = \"trace\"\ntrace = {:?}\nengine = \"{engine}\"\n",
        path.display().to_string()
    );
    if rng.chance(50) {
        let speed = rng.pick(&["0.5", "1", "2", "4"]);
        let _ = writeln!(job, "trace_mode = \"open\"\ntrace_speed = {speed}");
    } else {
        job.push_str("trace_mode = \"closed\"\n");
    }
    let _ = writeln!(job, "trace_depth = {}", 1 + rng.below(16));
    if rng.chance(30) {
        let _ = writeln!(job, "cpu = {}", rng.below(cores));
    }
    job
}

/// A random cpuidle table: 1 to 10 states (Linux's CPUIDLE_STATE_MAX),
/// shallowest first, the first sometimes a polling one, each deeper state
/// slower to leave, needing a longer stay and drawing less power.
fn idle_states(rng: &mut Rng) -> String {
    let n = 1 + rng.below(10);
    let (mut exit_ns, mut power_mw) = (0u64, 5_000 + rng.below(3_000));
    let mut residency_ns = 0;
    let mut out = String::from("idle_states = [\n");
    for i in 0..n {
        let polling = i == 0 && rng.chance(70);
        if !polling {
            exit_ns += 1 + rng.below(if i < 3 { 5_000 } else { 200_000 });
        }
        residency_ns = (exit_ns * (1 + rng.below(4))).max(residency_ns);
        power_mw = power_mw * (20 + rng.below(70)) / 100;
        let _ = writeln!(
            out,
            "  {{ name = \"S{i}\", exit_latency = \"{exit_ns}ns\", \
             target_residency = \"{residency_ns}ns\", power_w = {}.{:03}, polling = {polling} }},",
            power_mw / 1000,
            power_mw % 1000
        );
    }
    out.push_str("]\n");
    out
}

/// A hypervisor on core `cores` and one or two guests of one or two
/// vCPUs on the cores after it, each running I/O jobs and perhaps a busy
/// loop, and perhaps (from `buffered`) a buffered writer; perhaps a
/// vic-sched strategy. Returns the host's cores in all
/// and the sections (guests' jobs included).
fn guests(
    rng: &mut Rng,
    buffered: &mut Rng,
    cores: u64,
    strategies: &mut String,
) -> Option<(u64, String)> {
    // ESX-like (a vCPU owns its core) or Xen-like (one-vCPU guests share
    // cores under the credit scheduler; dom0 on two cores); KVM-like at
    // the end.
    let xen = rng.chance(50);
    let mut out = if xen {
        format!(
            "[hypervisor]\nmodel = \"xen-like\"\ncores = [{cores}, {}]\n",
            cores + 1
        )
    } else {
        format!("[hypervisor]\nmodel = \"esx-like\"\ncores = [{cores}]\n")
    };
    if xen && rng.chance(30) {
        let _ = writeln!(out, "slice = \"{}ms\"", 1 + rng.below(30));
    }
    // Xen's back end's failsafe counted per guest instead of shared.
    if xen && buffered.chance(30) {
        let _ = writeln!(out, "failsafe_per_guest = true");
    }
    if !xen && rng.chance(30) {
        let _ = writeln!(out, "monitor_timer = \"{}us\"", 50 + rng.below(2000));
    }
    let mut next = cores + if xen { 2 } else { 1 };
    // Xen: every guest on one of one or two shared cores.
    let shared = 1 + rng.below(2);
    let first_shared = next;
    if xen {
        next += shared;
    }
    let mut jobs = String::new();
    for g in 0..1 + rng.below(if xen { 3 } else { 2 }) {
        let vcpus = if xen { 1 } else { 1 + rng.below(2) };
        let list: Vec<String> = if xen {
            vec![(first_shared + rng.below(shared)).to_string()]
        } else {
            let list = (next..next + vcpus).map(|c| c.to_string()).collect();
            next += vcpus;
            list
        };
        let _ = write!(
            out,
            "[[guest]]\nname = \"g{g}\"\nvcpus = {vcpus}\ncores = [{}]\nirq_vcpu = {}\n",
            list.join(", "),
            rng.below(vcpus)
        );
        for j in 0..1 + rng.below(2) {
            let cpu = rng.below(vcpus);
            let _ = write!(
                jobs,
                "[[job]]\nname = \"g{g}j{j}\"\nguest = \"g{g}\"\ncpu = {cpu}\n"
            );
            if rng.chance(20) {
                jobs.push_str("kind = \"cpu\"\n");
                cpu_runtime(rng, &mut jobs);
                continue;
            }
            let engine = rng.pick(&["psync", "libaio", "io_uring"]);
            let rw = rng.pick(&["read", "randread", "randwrite", "randrw"]);
            let bs = rng.pick(&["4k", "8k", "64k"]);
            let _ = write!(
                jobs,
                "engine = \"{engine}\"\nrw = \"{rw}\"\nbs = \"{bs}\"\niodepth = {}\n",
                1 + rng.below(32)
            );
        }
        // Now and then a `dd` writing through the guest's page cache.
        if buffered.chance(70) {
            let _ = write!(
                jobs,
                "[[job]]\nname = \"g{g}dd\"\nguest = \"g{g}\"\nengine = \"psync\"\n\
                 rw = \"write\"\nbs = \"{}\"\ndirect = false\n",
                buffered.pick(&["4k", "64k", "1m"])
            );
        }
    }
    if rng.chance(50) {
        let _ = write!(
            strategies,
            "[[strategy]]\nname = \"sv\"\nkind = \"vic-sched\"\ncif_threshold = {}\n",
            1 + rng.below(8)
        );
    }
    // KVM-like (its draws after all the others, so that a seed that does
    // not draw it keeps its scenario): an ESX-like layout (each vCPU on a
    // core of its own, the back end on the hypervisor's core) under KVM,
    // maybe with another polling window and a host thread sharing the
    // first guest's core (it preempts that vCPU).
    if !xen && rng.chance(40) {
        let mut hv = "model = \"kvm-like\"\n".to_string();
        if rng.chance(40) {
            let _ = writeln!(hv, "halt_poll_max = \"{}us\"", rng.below(400));
        }
        out = out.replacen("model = \"esx-like\"\n", &hv, 1);
        if rng.chance(30) {
            let _ = write!(
                jobs,
                "[[job]]\nname = \"hostspin\"\nkind = \"cpu\"\ncpu = {}\n",
                cores + 1
            );
        }
    }
    out.push_str(&jobs);
    Some((next, out))
}

fn check(seed: u64) {
    let traces = cint_test_support::temp_dir("random-traces");
    let mut text = scenario(seed);
    text.push_str(&trace_job(seed, &text, traces.path()));
    let sc = match cint_scenario::load_str(&text, "random.toml", &[]) {
        Ok(sc) => sc,
        // The generator's bounds are narrower than the validator's; a
        // refusal here is a generator bug or a validator regression.
        Err(e) => panic!("seed {seed}: a valid scenario was refused: {e}\n{text}"),
    };
    let first = cint_sim::run(&sc).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    let again = cint_sim::run(&sc).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    let (a, b) = (
        cint_report::to_json(&first).expect("json"),
        cint_report::to_json(&again).expect("json"),
    );
    assert_eq!(a, b, "seed {seed}: same seed, different bytes\n{text}");
    // Energy is reported exactly when the host and the device both carry
    // power data, and is never negative (the run itself checks it against
    // the integral of power and the floor and ceiling of power).
    let powered = sc.host.power.is_some() && sc.device.power.is_some();
    for s in &first.results {
        assert_eq!(
            s.energy_j.is_some(),
            powered,
            "seed {seed}: strategy '{}' energy {:?}\n{text}",
            s.strategy,
            s.energy_j
        );
        if let Some(e) = s.energy_j {
            assert!(e >= 0.0, "seed {seed}: {e} J\n{text}");
        }
    }
    let units = f64::from(sc.device.parallel_units);
    // The device serves at most `units` requests at a time, each for at
    // least its base time (less a little for the jitter's lower tail): an
    // upper bound on any job's rate and on the device's.
    let base = sc.device.read.base.0.min(sc.device.write.base.0).max(1) as f64;
    let iops_ceiling = units * 1e9 / base * 1.05;
    // One transfer at a time per direction. Bytes handed out in the
    // window crossed the pipe either in the window (at most bandwidth x
    // window, plus the one transfer under way when it opened) or before
    // it, while their requests were in flight: at most the bytes all jobs
    // keep in flight. And all of them crossed it since the run began.
    let window = sc.duration as f64 / 1e9;
    let since_start = (sc.duration + sc.warmup) as f64 / 1e9;
    let (mut largest, mut in_flight, mut requests) = (0.0f64, 0.0f64, 0.0f64);
    for j in &sc.jobs {
        if let cint_scenario::Work::Io(io) = &j.work {
            // bssplit and bsrange draw sizes up to their largest.
            let shape = &io.shape;
            // A trace's requests are as large as the trace says.
            let traced = shape.trace.iter().flat_map(|t| t.threads.iter());
            let biggest = shape
                .bssplit
                .iter()
                .chain(&shape.bssplit_write)
                .map(|b| b.bytes)
                .chain(shape.bsrange.map(|r| r.1))
                .chain(shape.bsrange_write.map(|r| r.1))
                .chain(traced.flat_map(|t| t.ios.iter().map(|x| x.bytes)))
                .fold(io.bs, u64::max) as f64;
            largest = largest.max(biggest);
            // Offloaded, each of `iodepth` workers has one in flight.
            let depth = if io.engine.is_sync() && !io.offload {
                1
            } else {
                io.iodepth
            };
            in_flight += biggest * f64::from(depth) * f64::from(j.numjobs);
            requests += f64::from(depth) * f64::from(j.numjobs);
        }
    }
    // The controller's one pipe: each direction's bytes take
    // `bytes / bandwidth` of it. What the window's jobs moved took at most
    // the window's time plus what was in flight when it opened (and the
    // transfer then under way), and at most the whole run's time.
    let slowest = sc.device.read.bandwidth.min(sc.device.write.bandwidth) as f64;
    let pipe_time_ceiling =
        (window + (largest + in_flight) / slowest).min(since_start + largest / slowest);
    for s in &first.results {
        let (mut device_iops, mut pipe_time) = (0.0, 0.0);
        // A job that ended within its warm-up reports its whole life, as
        // fio does: its bytes crossed the pipe before the window too, so
        // the run's time since it began bounds them all.
        let whole_life = sc.jobs.iter().any(|j| {
            first
                .notes
                .iter()
                .any(|n| cint_scenario::staging::says_ended_in_warmup(n, &s.strategy, &j.name))
        });
        let pipe_time_ceiling = match whole_life {
            true => since_start + largest / slowest,
            false => pipe_time_ceiling,
        };
        // The applications' operations follow the fio jobs: each makes
        // progress, or a note says where its requests are.
        for op in s.jobs.iter().skip(sc.jobs.len()) {
            let explained = first.notes.iter().any(|n| {
                n.starts_with(&format!(
                    "strategy '{}': application operation '{}'",
                    s.strategy, op.name
                ))
            });
            assert!(
                op.ios > 0 || explained,
                "seed {seed}: strategy '{}' application operation '{}' made no progress\n{text}",
                s.strategy,
                op.name
            );
        }
        for (j, job) in s.jobs.iter().enumerate().take(sc.jobs.len()) {
            let explained = first.notes.iter().any(|n| {
                n.starts_with(&format!("strategy '{}': job '{}'", s.strategy, job.name))
                    || (n.starts_with(&format!("strategy '{}': group", s.strategy))
                        && n.contains(&format!("'{}' did not start", job.name)))
            });
            let spec = &sc.jobs[j];
            // Its threads' CPU over its own window: at most all of each
            // (a thread, an offloaded one's workers, an SQ thread), also
            // for a job that started late (it counted its warm-up's
            // until 2026-11-29).
            let threads = cint_test_support::scenario::job_threads(spec);
            assert!(
                job.cpu_util <= f64::from(threads) + 1e-9,
                "seed {seed}: strategy '{}' job '{}' used {} of its {threads} threads' time\n{text}",
                s.strategy,
                job.name,
                job.cpu_util
            );
            // Its latencies agree with themselves: one sample a request
            // counted, the mean between the extremes, the percentiles in
            // order.
            cint_test_support::latency::assert_consistent(
                &job.lat_ns,
                cint_test_support::latency::samples_expected(
                    &first.notes,
                    &s.strategy,
                    &job.name,
                    job.ios,
                ),
                format_args!(
                    "seed {seed}: strategy '{}' job '{}'\n{text}",
                    s.strategy, job.name
                ),
            );
            let cint_scenario::Work::Io(io) = &spec.work else {
                continue;
            };
            // A trace job reports its replay; one that replayed its whole
            // trace before the measured window has nothing left to measure.
            let replayed_all = match (&io.shape.trace, &job.trace) {
                (None, None) => false,
                (Some(tr), Some(rep)) => {
                    assert_eq!(rep.requests, tr.requests(), "seed {seed}\n{text}");
                    assert!(rep.issued <= rep.requests, "seed {seed}\n{text}");
                    let own = rep.trace_lat_ns.as_ref().map_or(0, |l| l.n);
                    assert!(own <= job.ios, "seed {seed}: {own} trace latencies\n{text}");
                    if let Some(lag) = &rep.issue_lag_ns {
                        assert!(lag.min as f64 <= lag.mean && lag.mean <= lag.max as f64);
                    }
                    rep.issued == rep.requests
                }
                (tr, rep) => panic!(
                    "seed {seed}: trace {} but report {}\n{text}",
                    tr.is_some(),
                    rep.is_some()
                ),
            };
            assert!(
                job.ios > 0 || explained || replayed_all,
                "seed {seed}: strategy '{}' job '{}' made no progress and no note says why\n{text}",
                s.strategy,
                job.name
            );
            // A buffered job's calls are served by the page cache, not
            // one device request each: the device's bounds are not its.
            if io.through_page_cache() {
                continue;
            }
            // Over the job's own window, which may be short (number_ios):
            // what the device served in it, plus what was already served,
            // or in flight, when it opened (at most every request the jobs
            // keep in flight).
            let job_window = if job.iops > 0.0 {
                job.ios as f64 / job.iops
            } else {
                window
            };
            // The media's jitter runs some requests faster than their base
            // time: over n of them the mean stays within three standard
            // errors of it, which matters when a window holds a handful.
            let cv = sc.device.jitter_spread.0 as f64 / base;
            let noise = 1.0 + 3.0 * cv / (job.ios.max(1) as f64).sqrt();
            let job_ceiling = iops_ceiling * noise + requests / job_window;
            assert!(
                job.iops <= job_ceiling,
                "seed {seed}: job '{}' at {} IOPS, above the device's {job_ceiling} (bs {})\n{text}",
                job.name,
                job.iops,
                io.bs
            );
            // A job's rates are over its own window (groups and start
            // delays shorten it): what it moved counts over the run's.
            let share = job
                .fio
                .as_ref()
                .map_or(1.0, |f| f.runtime_ns as f64 / 1e9 / window);
            device_iops += job.iops * share;
            if let Some(fio) = &job.fio {
                pipe_time += fio.read.bytes as f64 / sc.device.read.bandwidth as f64
                    + fio.write.bytes as f64 / sc.device.write.bandwidth as f64;
            }
        }
        let iops_ceiling = iops_ceiling + requests / window;
        assert!(
            device_iops <= iops_ceiling,
            "seed {seed}: strategy '{}': the jobs together at {device_iops} IOPS, above the \
             device's {iops_ceiling}\n{text}",
            s.strategy
        );
        assert!(
            pipe_time <= pipe_time_ceiling,
            "seed {seed}: strategy '{}': the jobs' reads and writes took {pipe_time} s of \
             the device's one pipe, above the {pipe_time_ceiling} s that passed: more than \
             the device can move for its mix\n{text}",
            s.strategy
        );
    }
}

fn first_seed() -> u64 {
    std::env::var("CINT_RANDOM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Scenarios drawn, not run, to check that the generator's rarer layers
/// come up: drawing one takes microseconds.
const COVERAGE_SEEDS: u64 = 3_000;

#[test]
fn random_valid_scenarios_answer_deterministically_and_make_progress() {
    let start = first_seed();
    for seed in start..start + 300 {
        check(seed);
    }
    // The layers drawn on generators of their own do come up, counted
    // over the COVERAGE_SEEDS drawn from the same first seed. Each bound
    // lies about 4.5 standard deviations below the count its rate gives
    // (the rate in each label, measured over seeds 1 to 20 000 on
    // 2026-11-29, and again over 1 to 21 000 after jobs in passes, which
    // are never offloaded, came in: offloaded jobs fell from 18.2% to
    // 15.6%, and first seeds from 6001 failed the old bound), so that it
    // holds from any first seed
    // (`CINT_RANDOM_SEED`): bounds set on the 300 seeds run used to fail
    // from one first seed in ten.
    let drawn: Vec<String> = (start..start + COVERAGE_SEEDS).map(scenario).collect();
    let with = |what: &str| drawn.iter().filter(|s| s.contains(what)).count();
    let two_caches = drawn
        .iter()
        .filter(|text| text.matches("dd\"\nguest = ").count() >= 2)
        .count();
    let compacting = drawn
        .iter()
        .filter(|s| s.contains("fill = \"random\"\nauto_compaction = true"))
        .filter(|s| s.contains("\"fillbatch\"") || s.contains("\"readwhilewriting\""))
        .count();
    for (what, count, least) in [
        ("guests (13.6%)", with("[[guest]]"), 320),
        ("vic-sched (6.9%)", with("vic-sched"), 140),
        ("Xen-like guests (7.0%)", with("xen-like"), 140),
        ("jobs in task groups (24.2%)", with("sched_group = "), 600),
        ("declared task groups (20.7%)", with("[[sched_group]]"), 500),
        (
            "offloaded jobs (15.6%)",
            with("submit_mode = \"offload\""),
            378,
        ),
        ("SQ threads (14.1%)", with("sqpoll = true"), 336),
        (
            "jobs that end by their size in passes (28.5%)",
            with("pass_size = "),
            740,
        ),
        (
            "SQ threads on a core given (6.2%)",
            with("sqpoll_cpu = "),
            126,
        ),
        ("cpu jobs with a runtime (16.6%)", with("runtime = "), 405),
        ("two guests with a page cache each (4.7%)", two_caches, 85),
        ("RocksDB compacting as it loads (4.1%)", compacting, 75),
        (
            "synchronous WAL writes (4.4%)",
            with("sync = true\nwal_hint"),
            80,
        ),
        (
            "buffered writers with end_fsync (1.1%, seeds 1 to 20 000)",
            with("end_fsync = true"),
            7,
        ),
        (
            "reap calls that do not wait (14.0%, seeds 1 to 20 000)",
            with("batch_complete_min = 0"),
            333,
        ),
        (
            "latencies bounded by max_latency (17.6%, seeds 1 to 20 000)",
            with("max_latency = "),
            435,
        ),
        (
            "queues drained to iodepth_low (21.7%, seeds 1 to 20 000)",
            with("iodepth_low = "),
            548,
        ),
    ] {
        assert!(
            count >= least,
            "{what}: {count} of {COVERAGE_SEEDS} scenarios from seed {start}, fewer than {least}"
        );
    }
}

#[test]
#[ignore = "soak: thousands of scenarios, minutes"]
fn soak_random_scenarios() {
    let start = first_seed();
    for seed in start..start + 5_000 {
        check(seed);
    }
}
