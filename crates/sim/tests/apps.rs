//! Application programs (`[[app]]`): the RocksDB-like store's operations
//! as jobs of the result, its hint classes, and the paper's Table 3
//! (fillbatch) as a calibration target on the reference host.

use cint_report::{RunResult, StrategyResult};

fn run(path: &str, sets: &[&str]) -> RunResult {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/");
    let sc = cint_scenario::load_file(std::path::Path::new(&format!("{file}{path}")), &sets)
        .expect("the shipped scenario loads");
    cint_sim::run(&sc).expect("runs")
}

fn strategy<'a>(r: &'a RunResult, name: &str) -> &'a StrategyResult {
    r.results
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("strategy {name}"))
}

#[test]
fn readrandom_reports_gets_one_read_and_one_interrupt_each() {
    let r = run("rocksdb-readrandom.toml", &[]);
    let s = strategy(&r, "default");
    assert_eq!(s.jobs.len(), 1);
    let get = &s.jobs[0];
    assert_eq!(get.name, "get");
    assert!(get.ios > 10_000, "{}", get.ios);
    // Without coalescing, every get's one read interrupts once.
    let per_get = s.interrupts as f64 / get.ios as f64;
    assert!((0.99..1.01).contains(&per_get), "{per_get}");
    // Twice the threads on the same two cores: each get waits longer.
    let more = run("rocksdb-readrandom.toml", &["app.db.threads=8"]);
    let get8 = &strategy(&more, "default").jobs[0];
    assert!(
        get8.lat_ns.mean > 1.5 * get.lat_ns.mean,
        "{} {}",
        get8.lat_ns.mean,
        get.lat_ns.mean
    );
}

#[test]
fn readwhilewriting_reports_gets_and_puts() {
    let r = run("rocksdb-readwhilewriting.toml", &[]);
    let names: Vec<&str> = strategy(&r, "cint")
        .jobs
        .iter()
        .map(|j| j.name.as_str())
        .collect();
    assert_eq!(names, ["get", "put"]);
    for j in &strategy(&r, "cint").jobs {
        assert!(j.ios > 1_000, "{} {}", j.name, j.ios);
    }
}

#[test]
fn a_synced_log_writes_its_pages_then_the_journal_log_then_the_commit_block_per_put() {
    // A memtable larger than the run writes: no flush, so every device
    // write is the log's sync.
    let sets = ["app.db.sync=true", "app.db.memtable=1g", "app.db.threads=1"];
    let r = run("rocksdb-readwhilewriting.toml", &sets);
    let plain = run(
        "rocksdb-readwhilewriting.toml",
        &["app.db.memtable=1g", "app.db.threads=1"],
    );
    let s = strategy(&r, "default");
    let put = job(strategy(&r, "default"), "put").expect("puts");
    let get = job(strategy(&r, "default"), "get").expect("gets");
    assert!(put.ios > 1_000, "{}", put.ios);
    // fdatasync after an append (the log's new size in the inode): the
    // pages, then the journal's log, then its commit block, each waited
    // for, so three interrupts and three switches per put without
    // coalescing; a get's read is one.
    let writes = s.interrupts as f64 - get.ios as f64;
    let per_put = writes / put.ios as f64;
    assert!(
        (2.9..3.1).contains(&per_put),
        "{per_put} interrupts per put"
    );
    // Three device writes in series: far slower than the buffered put.
    let unsynced = job(strategy(&plain, "default"), "put").expect("puts");
    assert!(
        put.lat_ns.mean > 3.0 * 8_000.0 && put.lat_ns.mean > 5.0 * unsynced.lat_ns.mean,
        "synced put {} ns against {} ns",
        put.lat_ns.mean,
        unsynced.lat_ns.mean
    );
    // The sync is Urgent by the kernel's rule: cinterrupts delivers it at
    // once, where adaptive coalescing holds each of the three writes.
    let cint = job(strategy(&r, "cint"), "put").expect("puts");
    let adaptive = job(strategy(&r, "adaptive"), "put").expect("puts");
    assert!(
        adaptive.lat_ns.mean > cint.lat_ns.mean + 10_000.0,
        "adaptive {} ns against cint {} ns",
        adaptive.lat_ns.mean,
        cint.lat_ns.mean
    );
    // An unmarked log (wal_hint) takes cinterrupts' coalescing instead.
    let unmarked = run(
        "rocksdb-readwhilewriting.toml",
        &[sets[0], sets[1], sets[2], "app.db.wal_hint=none"],
    );
    let slow = job(strategy(&unmarked, "cint"), "put").expect("puts");
    assert!(
        slow.lat_ns.mean > cint.lat_ns.mean + 3_000.0,
        "unmarked {} ns against urgent {} ns",
        slow.lat_ns.mean,
        cint.lat_ns.mean
    );
}

#[test]
fn app_cint_takes_the_flush_off_the_urgent_path() {
    // A 1 MiB memtable flushes often: its writes and sync are Urgent by
    // the kernel's rule, so cinterrupts fires urgent interrupts for them;
    // under app-cint they are unmarked and wait for coalescing instead.
    let r = run("rocksdb-fillbatch.toml", &["app.db.memtable=1m"]);
    let urgent = strategy(&r, "cint").urgent_interrupts;
    let app = strategy(&r, "app-cint").urgent_interrupts;
    assert!(urgent > 100, "{urgent}");
    assert!(app * 10 < urgent, "app-cint {app} against cint {urgent}");
}

/// Table 3 of the cinterrupts paper: RocksDB fillbatch, throughput (K
/// ops/s), mean and p99 latency (us), per strategy.
const TABLE3: &[(&str, f64, f64, f64)] = &[
    ("cint", 388.0, 1.3, 15.0),
    ("default", 391.0, 1.3, 14.4),
    ("adaptive", 391.0, 1.3, 14.2),
    ("app-cint", 405.0, 1.3, 12.7),
];

/// What the model does not reproduce of Table 3, and why.
pub const TABLE3_KNOWN_MISSES: &[&str] = &[
    "mean and p99 latency in absolute terms: the model counts each key of a batch as the \
     batch's time over its keys (db_bench's micros per op, 2.6 us on average, 4.7 us at p99 \
     where a batch shares the core with the flush), where the paper's 1.3 us mean is under \
     one key's share of its own throughput (2.6 us) and its 15 us p99 reflects stalls the \
     model's per-key split spreads out; the ratios between strategies are kept",
];

#[test]
fn fillbatch_matches_table3_ratios_on_the_reference_host() {
    let r = run("rocksdb-fillbatch.toml", &[]);
    let base = &strategy(&r, "cint").jobs[0];
    let (_, paper_thr, _, paper_p99) = TABLE3[0];
    let thr = base.iops / 1e3;
    assert!(
        (thr / paper_thr - 1.0).abs() < 0.25,
        "cint throughput {thr:.0} K ops/s against the paper's {paper_thr}"
    );
    for &(name, thr_p, mean_p, p99_p) in TABLE3 {
        let j = &strategy(&r, name).jobs[0];
        assert_eq!(j.name, "put");
        let ratio = |ours: f64, ours_base: f64, paper: f64, paper_base: f64| {
            (ours / ours_base) / (paper / paper_base)
        };
        let p99 = |j: &cint_report::JobResult| {
            j.lat_ns.percentile.get("99.000000").copied().unwrap_or(0) as f64
        };
        for (what, x) in [
            ("throughput", ratio(j.iops, base.iops, thr_p, paper_thr)),
            (
                "mean",
                ratio(j.lat_ns.mean, base.lat_ns.mean, mean_p, TABLE3[0].2),
            ),
            ("p99", ratio(p99(j), p99(base), p99_p, paper_p99)),
        ] {
            assert!(
                (1.0 / 1.25..=1.25).contains(&x),
                "{name} {what}: our ratio to cint is {x:.3} times the paper's"
            );
        }
    }
    assert!(!TABLE3_KNOWN_MISSES.is_empty());
}

#[test]
fn the_dump_beside_readers_reads_ahead_unmarked_and_writes_back() {
    let r = run("coloc-rocksdb-dump.toml", &[]);
    let s = strategy(&r, "cint");
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["get", "dump"]);
    assert!(s.jobs.iter().all(|j| j.ios > 1_000), "{names:?}");
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("strategy 'cint': page cache"))
        .expect("the page cache's note");
    assert!(!note.contains(" 0 read-ahead requests"), "{note}");
    // The dump's pairs take a few CPU-bound microseconds each, apart from
    // the ones that wait for a read-ahead window.
    let dump = &s.jobs[1];
    let p50 = dump
        .lat_ns
        .percentile
        .get("50.000000")
        .copied()
        .unwrap_or(0);
    assert!(p50 > 5_500 && p50 < 30_000, "{p50}");
}

#[test]
fn kvell_workers_batch_what_the_ring_holds_and_wake_per_interrupt() {
    let r = run("kvell-ycsb.toml", &[]);
    let none = strategy(&r, "default");
    let read = &none.jobs[0];
    assert_eq!(read.name, "read");
    assert!(read.ios > 10_000, "{}", read.ios);
    // Without coalescing about one interrupt per read; cinterrupts fires
    // on each submission's Barrier instead, so far fewer.
    let cint = strategy(&r, "cint");
    assert!(none.interrupts as f64 > 0.9 * read.ios as f64);
    assert!(
        cint.interrupts * 5 < none.interrupts,
        "{} {}",
        cint.interrupts,
        none.interrupts
    );
    // An update is a read then a write: workload A has both types.
    let a = run("kvell-ycsb.toml", &["app.kv.workload=A"]);
    let names: Vec<&str> = strategy(&a, "cint")
        .jobs
        .iter()
        .map(|j| j.name.as_str())
        .collect();
    assert_eq!(names, ["read", "update"]);
    // Zipfian keys hit KVell's page cache: more reads per second.
    let z = run("kvell-ycsb.toml", &["app.kv.distribution=zipfian"]);
    assert!(strategy(&z, "default").jobs[0].iops > 1.2 * read.iops);
}

#[test]
fn longer_scans_take_longer_from_first_request_to_last_completion() {
    let short = run("kvell-ycsb-e.toml", &[]);
    let long = run("kvell-ycsb-e.toml", &["app.kv.scan_length=256"]);
    let (s, l) = (
        &strategy(&short, "cint").jobs[0],
        &strategy(&long, "cint").jobs[0],
    );
    assert_eq!((s.name.as_str(), l.name.as_str()), ("scan", "scan"));
    assert!(
        l.lat_ns.mean > 1.2 * s.lat_ns.mean,
        "{} {}",
        l.lat_ns.mean,
        s.lat_ns.mean
    );
    assert!(s.iops > 4.0 * l.iops);
}

/// Table 7 of the cinterrupts paper: four RocksDB readrandom threads
/// beside KVell under YCSB-C on two cores: RocksDB's get latency (us) and
/// KVell's throughput (K ops/s).
const TABLE7: &[(&str, f64, f64)] = &[
    ("cint", 116.0, 171.0),
    ("default", 115.0, 153.0),
    ("adaptive", 129.0, 171.0),
];

/// What the model does not reproduce of Table 7, and why.
pub const TABLE7_KNOWN_MISSES: &[&str] = &[
    "absolute figures: the model's gets take about 54 us and KVell serves about 90 K reads/s \
     beside them, against the paper's 116 us and 171 K: the paper's KVell runs its injectors \
     on cores of their own, which the model leaves out (they keep the rings full at no cost), \
     and only the gets' CPU was fitted (to this table's ratios, docs/APPS.md); the ratios \
     between strategies are kept",
    "adaptive's get latency level with cint's, where the paper has it 11% above: on the \
     model's two shared cores a read's completion waits for the other reader's CPU burst \
     (12 us of user time and its kernel paths) longer than adaptive's 6 us hold, so the hold \
     is hidden in that wait; with the stores in two CFS task groups the wait is mostly for the \
     KVell worker's turn, which hides it too (adaptive within 3% of cint)",
];

#[test]
fn rocksdb_beside_kvell_keeps_table7_ratios_and_order() {
    table7_kept(&run("coloc-rocksdb-kvell.toml", &[]));
    assert_eq!(TABLE7_KNOWN_MISSES.len(), 2);
}

/// Table 7's ratios to cint within x1.25 of the paper's, and KVell's
/// order as the paper has it.
fn table7_kept(r: &RunResult) {
    let get = |name: &str| strategy(r, name).jobs[0].lat_ns.mean;
    let kv = |name: &str| strategy(r, name).jobs[1].iops;
    assert_eq!(strategy(r, "cint").jobs[1].name, "read");
    let (_, get0, kv0) = TABLE7[0];
    for &(name, g, k) in TABLE7 {
        for (what, x) in [
            ("get latency", (get(name) / get("cint")) / (g / get0)),
            ("KVell throughput", (kv(name) / kv("cint")) / (k / kv0)),
        ] {
            assert!(
                (1.0 / 1.25..=1.25).contains(&x),
                "{name} {what}: our ratio to cint is {x:.3} times the paper's"
            );
        }
    }
    // The paper's KVell order: default below both, adaptive level with
    // cint (171 K each).
    let (cint, default, adaptive) = (kv("cint"), kv("default"), kv("adaptive"));
    assert!(
        default < cint && default < adaptive,
        "{cint} {default} {adaptive}"
    );
    assert!((adaptive / cint - 1.0).abs() < 0.02, "{cint} {adaptive}");
}

/// The mechanism the fit of `get_cpu` rests on (docs/results/applications.md,
/// Table 7): with gets shorter than a read plus adaptive's hold (the
/// estimate docs/APPS.md started from, 7.5 us), adaptive's held read
/// completions hand the core to the KVell worker between the readers'
/// gets, and each next completion preempts it, so the workers are
/// switched in ten times as often as under cint, and not from a sleep;
/// KVell then falls below default, the order the fit corrects.
#[test]
fn short_gets_under_adaptive_hand_the_core_to_kvell_and_preempt_it() {
    let r = run("coloc-rocksdb-kvell.toml", &["app.db.get_cpu=7500ns"]);
    let worker = |name: &str| {
        let s = strategy(&r, name);
        (
            s.context_switches - s.jobs[0].context_switches,
            s.wakeups - s.jobs[0].wakeups,
        )
    };
    let ((cint_in, _), (adaptive_in, adaptive_woken)) = (worker("cint"), worker("adaptive"));
    assert!(adaptive_in > 10 * cint_in, "{adaptive_in} {cint_in}");
    assert!(
        20 * adaptive_woken < adaptive_in,
        "{adaptive_woken} {adaptive_in}"
    );
    let kv = |name: &str| strategy(&r, name).jobs[1].iops;
    assert!(
        kv("adaptive") < kv("default"),
        "{} {}",
        kv("adaptive"),
        kv("default")
    );
    // At the fitted value the workers are seldom switched in.
    let fitted = run("coloc-rocksdb-kvell.toml", &[]);
    let s = strategy(&fitted, "adaptive");
    let fitted_in = s.context_switches - s.jobs[0].context_switches;
    assert!(fitted_in * 10 < adaptive_in, "{fitted_in} {adaptive_in}");
}

/// CFS task groups (docs/HOST-COSTS.md, "Task groups"): with RocksDB and
/// KVell each in a group of its own, as two sessions' autogroups or two
/// cgroups would put them, each group gets half of each core whatever its
/// threads, where CFS with no groups gives the one KVell worker a third of
/// its core beside two readers. KVell then serves more and the gets wait
/// longer; and with eight readers KVell keeps its throughput, where with
/// no groups it loses a third or more (docs/results/applications.md,
/// Table 7, "Task groups").
#[test]
fn task_groups_give_kvell_half_the_cores_whatever_the_readers() {
    const SC: &str = "coloc-rocksdb-kvell.toml";
    const KV: &str = "app.kv.sched_group=kvell";
    const DB: &str = "app.db.sched_group=rocksdb";
    let kv = |r: &RunResult| strategy(r, "cint").jobs[1].iops;
    let get = |r: &RunResult| strategy(r, "cint").jobs[0].lat_ns.mean;
    let (flat4, grouped4) = (run(SC, &[]), run(SC, &[KV, DB]));
    // What Table 7 keeps holds in two groups too.
    table7_kept(&grouped4);
    assert!(
        kv(&grouped4) > 1.3 * kv(&flat4),
        "{} {}",
        kv(&grouped4),
        kv(&flat4)
    );
    assert!(
        get(&grouped4) > 1.2 * get(&flat4),
        "{} {}",
        get(&grouped4),
        get(&flat4)
    );
    let eight = "app.db.threads=8";
    let (flat8, grouped8) = (run(SC, &[eight]), run(SC, &[KV, DB, eight]));
    assert!(
        kv(&flat8) < 0.7 * kv(&flat4),
        "{} {}",
        kv(&flat8),
        kv(&flat4)
    );
    assert!(
        (kv(&grouped8) / kv(&grouped4) - 1.0).abs() < 0.05,
        "{} {}",
        kv(&grouped8),
        kv(&grouped4)
    );
}

/// The speed bound: a simulated second of RocksDB readrandom
/// takes under a wall second. A timing, so not part of the suite: run
/// `cargo test --release -p cint-sim --test apps -- --ignored`.
#[test]
#[ignore = "a wall-clock measurement; run on a quiet machine"]
fn a_readrandom_simulated_second_takes_under_a_wall_second() {
    let r0 = std::time::Instant::now();
    let r = run("rocksdb-readrandom.toml", &["duration=1s", "warmup=0s"]);
    let per_strategy = r0.elapsed().as_secs_f64() / r.results.len() as f64;
    eprintln!("{per_strategy:.3} wall seconds per simulated second and strategy");
    assert!(per_strategy < 1.0, "{per_strategy}");
}

/// A job's mean bytes per operation.
fn bytes_per_op(j: &cint_report::JobResult) -> f64 {
    j.bw_bytes as f64 / j.iops
}

fn job<'a>(s: &'a StrategyResult, name: &str) -> Option<&'a cint_report::JobResult> {
    s.jobs.iter().find(|j| j.name == name)
}

/// A short fillbatch with 1 MiB memtables (a table file every few
/// batches) and the given keys.
fn small_fill(sets: &[&str]) -> RunResult {
    let mut all = vec!["duration=300ms", "warmup=0s", "app.db.memtable=1m"];
    all.extend_from_slice(sets);
    run("rocksdb-fillbatch.toml", &all)
}

#[test]
fn random_keys_compact_l0_into_l1_and_sequential_keys_move_trivially() {
    let random = small_fill(&["app.db.fill=random"]);
    let s = strategy(&random, "default");
    let c = job(s, "compaction").expect("a compaction job with random keys");
    assert!(c.ios > 5, "{}", c.ios);
    // Each compaction merges the 4 L0 files of the trigger (1 MiB each)
    // at least, with L1.
    assert!(bytes_per_op(c) >= 4.0 * 1048576.0, "{}", bytes_per_op(c));
    // Its blocking direct reads and writes interrupt at once under cint
    // (Urgent by the kernel's rule), where a sequential fill's trivial
    // moves do no I/O: with the flushes' I/O unmarked, every urgent
    // interrupt is the compaction's. Its merge takes CPU from the writer
    // on the one core: fewer puts.
    let unmarked_flushes = |fill: &'static str| small_fill(&[fill, "app.db.flush_hint=none"]);
    let random = unmarked_flushes("app.db.fill=random");
    let seq = unmarked_flushes("app.db.fill=sequential");
    let q = strategy(&seq, "cint");
    let names: Vec<&str> = q.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["put"], "trivial moves: no compaction thread");
    assert_eq!(q.urgent_interrupts, 0);
    let r = strategy(&random, "cint");
    let c = job(r, "compaction").unwrap();
    assert!(
        r.urgent_interrupts as f64 > 4.0 * c.ios as f64,
        "{} urgent interrupts for {} compactions",
        r.urgent_interrupts,
        c.ios
    );
    assert!(job(s, "put").unwrap().ios < q.jobs[0].ios);
}

/// readwhilewriting with 1 MiB memtables, which flush faster than a
/// compaction can merge L0 with L1's 192 MiB, automatic compaction on or
/// off, and more settings.
fn outrun_compaction(auto: bool, sets: &[&str]) -> RunResult {
    let auto = format!("app.db.auto_compaction={auto}");
    let mut all = vec!["duration=500ms", "app.db.memtable=1m", auto.as_str()];
    all.extend_from_slice(sets);
    run("rocksdb-readwhilewriting.toml", &all)
}

/// How many strategies' notes contain every one of `words`.
fn noted(r: &RunResult, words: &[&str]) -> usize {
    r.notes
        .iter()
        .filter(|n| words.iter().all(|w| n.contains(w)))
        .count()
}

/// The longest put of strategy `default`.
fn longest_put(r: &RunResult) -> u64 {
    job(strategy(r, "default"), "put").unwrap().lat_ns.max
}

#[test]
fn a_writer_that_outruns_compaction_is_delayed_from_20_l0_files_and_the_run_says_so() {
    // RocksDB's write controller paces the puts (8 MiB/s, db_bench's
    // delayed write rate) in 1 ms sleeps; without automatic compaction
    // nothing delays them (RocksDB's rule).
    let on = outrun_compaction(true, &[]);
    let off = outrun_compaction(false, &[]);
    let words = ["put(s) delayed", "at 20 L0 files"];
    assert_eq!(noted(&on, &words), on.results.len(), "{:?}", on.notes);
    assert_eq!(noted(&off, &words), 0, "{:?}", off.notes);
    // A delayed put slept at least one millisecond; others take
    // microseconds.
    assert!(longest_put(&on) > 1_000_000, "{}", longest_put(&on));
    assert!(longest_put(&off) < 1_000_000, "{}", longest_put(&off));
}

#[test]
fn writes_stop_at_36_l0_files_and_the_run_says_so() {
    // A compaction trigger of 36 raises the slowdown trigger to it
    // (SanitizeOptions): the 36th file stops the writer outright.
    // Memtables of 512 KiB: 36 files within the run under every strategy.
    let stopped = outrun_compaction(
        true,
        &["app.db.l0_compaction_trigger=36", "app.db.memtable=512k"],
    );
    let words = ["writer stopped", "at 36 L0 files"];
    assert_eq!(
        noted(&stopped, &words),
        stopped.results.len(),
        "{:?}",
        stopped.notes
    );
    assert!(
        longest_put(&stopped) > 10_000_000 || noted(&stopped, &["stopped at the end"]) > 0,
        "{} {:?}",
        longest_put(&stopped),
        stopped.notes
    );
}

#[test]
fn write_stalls_keep_every_invariant_whatever_the_compaction_trigger() {
    // Every run ends with its invariants checked (an error otherwise);
    // the writer makes progress, and the notes name the sanitised
    // triggers: slowdown at max(20, trigger), stop at max(36, trigger).
    let mut stalled_runs = 0;
    for (seed, trigger) in [(1, 1), (2, 4), (3, 19), (4, 21), (5, 35), (6, 40)] {
        let seed = format!("seed={seed}");
        let trigger_set = format!("app.db.l0_compaction_trigger={trigger}");
        let r = outrun_compaction(true, &[seed.as_str(), trigger_set.as_str()]);
        for s in &r.results {
            let puts = job(s, "put").unwrap().ios;
            assert!(puts > 0, "trigger {trigger}, {}: no put", s.strategy);
        }
        let slowdown = format!("at {} L0 files (RocksDB's level0_slowdown", trigger.max(20));
        let stop = format!("at {} L0 files (RocksDB's level0_stop", trigger.max(36));
        let notes: Vec<&String> = r
            .notes
            .iter()
            .filter(|n| n.contains("RocksDB 'db'"))
            .collect();
        stalled_runs += usize::from(!notes.is_empty());
        for n in notes {
            assert!(
                !n.contains("level0_slowdown") || n.contains(&slowdown),
                "trigger {trigger}: {n}"
            );
            assert!(
                !n.contains("level0_stop") || n.contains(&stop),
                "trigger {trigger}: {n}"
            );
        }
    }
    assert!(stalled_runs >= 4, "{stalled_runs} of 6 runs stalled");
}

#[test]
fn a_compaction_lasts_at_least_its_merge_cpu_and_without_it_only_its_io() {
    // The merge's CPU per input pair and per MiB (docs/APPS.md, measured
    // with db_bench): 255 ns per 1 040-byte pair and 1.016 ms per MiB
    // come to 1.27 ms per MiB of input, which the compaction thread
    // spends on its core between its 2 MiB reads and the writes they fill.
    let merging = small_fill(&["app.db.fill=random"]);
    let io_only = small_fill(&[
        "app.db.fill=random",
        "app.db.compaction_key_cpu=0ns",
        "app.db.compaction_mib_cpu=0ns",
    ]);
    let per_mib = 255.0 * 1048576.0 / 1040.0 + 1_016_000.0;
    // A compaction's time per MiB of its input.
    let per_input_mib = |r: &RunResult| {
        let c = job(strategy(r, "default"), "compaction").unwrap();
        c.lat_ns.mean / (bytes_per_op(c) / 1048576.0)
    };
    let (with_merge, without) = (per_input_mib(&merging), per_input_mib(&io_only));
    // The merge adds at least its CPU: the core it shares with the
    // writer and the flush can only stretch it.
    assert!(
        with_merge - without >= 0.9 * per_mib,
        "{with_merge} ns per MiB with the merge, {without} without, merge CPU {per_mib}"
    );
    // The merge competes with the writer on the one core: fewer puts.
    let puts = |r: &RunResult| job(strategy(r, "default"), "put").unwrap().ios;
    assert!(
        puts(&merging) < puts(&io_only),
        "{} {}",
        puts(&merging),
        puts(&io_only)
    );
}

/// fillbatch with 4 MiB memtables on a device that writes 100 MB/s, so
/// that flushes fall behind the writer, with `max_write_buffer_number`
/// memtables.
fn slow_flushes(memtables: u32) -> RunResult {
    let max = format!("app.db.max_write_buffer_number={memtables}");
    run(
        "rocksdb-fillbatch.toml",
        &[
            "duration=300ms",
            "warmup=0s",
            "app.db.memtable=4m",
            "device.write.bandwidth=100000000",
            max.as_str(),
        ],
    )
}

#[test]
fn memtables_waiting_for_flushes_stop_the_writer_and_past_three_delay_it() {
    // RocksDB's rule, automatic compaction or not: all the memtables full
    // stop the writer; with more than three, one fewer delays it first.
    let two = slow_flushes(2);
    let stop = ["writer stopped", "at 2 memtables waiting for a flush"];
    assert_eq!(noted(&two, &stop), two.results.len(), "{:?}", two.notes);
    assert_eq!(noted(&two, &["delayed"]), 0, "{:?}", two.notes);
    let three = slow_flushes(3);
    assert_eq!(noted(&three, &["at 3 memtables"]), three.results.len());
    assert_eq!(noted(&three, &["delayed"]), 0, "three: no delay");
    let six = slow_flushes(6);
    let delay = ["put(s) delayed", "at 5 memtables waiting for a flush"];
    assert_eq!(noted(&six, &delay), six.results.len(), "{:?}", six.notes);
    for r in [&two, &three, &six] {
        assert!(job(strategy(r, "default"), "put").unwrap().ios > 0);
    }
    // RocksDB raises one memtable to two: the same run.
    let one = slow_flushes(1);
    assert_eq!(
        serde_json::to_string(&one.results).unwrap(),
        serde_json::to_string(&two.results).unwrap()
    );
}

#[test]
fn the_l0_trigger_sets_how_many_files_a_compaction_takes() {
    let two = small_fill(&["app.db.fill=random", "app.db.l0_compaction_trigger=2"]);
    let eight = small_fill(&["app.db.fill=random", "app.db.l0_compaction_trigger=8"]);
    let c2 = job(strategy(&two, "default"), "compaction").unwrap();
    let c8 = job(strategy(&eight, "default"), "compaction").unwrap();
    assert!(bytes_per_op(c2) >= 2.0 * 1048576.0, "{}", bytes_per_op(c2));
    assert!(bytes_per_op(c8) >= 8.0 * 1048576.0, "{}", bytes_per_op(c8));
    assert!(c2.ios > c8.ios, "{} {}", c2.ios, c8.ios);
}

#[test]
fn compaction_io_takes_its_class_hint() {
    // By the kernel's rule its O_DIRECT reads and writes are Urgent;
    // `compaction_hint = "none"` and app-cint leave them unmarked.
    // The flushes' I/O unmarked, so that every urgent interrupt is the
    // compaction's.
    let compacting = ["app.db.fill=random", "app.db.flush_hint=none"];
    let urgent = small_fill(&compacting);
    let none = small_fill(&[&compacting[..], &["app.db.compaction_hint=none"]].concat());
    let (u, n) = (
        strategy(&urgent, "cint").urgent_interrupts,
        strategy(&none, "cint").urgent_interrupts,
    );
    assert!(u > 100 && n == 0, "unmarked {n} against urgent {u}");
    let app = strategy(&urgent, "app-cint").urgent_interrupts;
    assert!(app * 10 < u, "app-cint {app} against cint {u}");
}

#[test]
fn without_compaction_l0_files_pile_up_and_gets_probe_them() {
    let sets = |fill: &'static str, auto: &'static str| {
        vec![
            "duration=200ms",
            "warmup=0s",
            "app.db.memtable=1m",
            fill,
            auto,
        ]
    };
    let off = run(
        "rocksdb-readwhilewriting.toml",
        &sets("app.db.fill=random", "app.db.auto_compaction=false"),
    );
    let seq = run(
        "rocksdb-readwhilewriting.toml",
        &sets("app.db.fill=sequential", "app.db.auto_compaction=false"),
    );
    let (o, q) = (strategy(&off, "default"), strategy(&seq, "default"));
    assert!(job(o, "compaction").is_none(), "off means no compaction");
    // Sequential files do not overlap: one read per get, each read one
    // interrupt without coalescing (the flushes add a few). Random ones
    // all do: a get reads a block of each L0 file newest first, and more
    // files pile up as the run goes on.
    let per_get = |s: &StrategyResult| s.interrupts as f64 / job(s, "get").unwrap().ios as f64;
    assert!(per_get(q) < 1.1, "{}", per_get(q));
    assert!(per_get(o) > 3.0, "{}", per_get(o));
    // Bloom filters of 10 bits per key let about 1% of those probes
    // through: nearly one read per get again.
    let mut filtered = sets("app.db.fill=random", "app.db.auto_compaction=false");
    filtered.push("app.db.bloom_bits=10");
    let bloom = run("rocksdb-readwhilewriting.toml", &filtered);
    let b = strategy(&bloom, "default");
    assert!(per_get(b) < 1.2, "{}", per_get(b));
    let on = run(
        "rocksdb-readwhilewriting.toml",
        &sets("app.db.fill=random", "app.db.auto_compaction=true"),
    );
    assert!(job(strategy(&on, "default"), "compaction").is_some());
}

#[test]
fn a_kvell_scan_moves_all_its_items_cached_or_not() {
    // Scans of 16 items of 1 KiB over a store small enough that some are
    // served whole from the cache and others go to the device.
    for items in ["100000000", "20000"] {
        let r = run(
            "kvell-ycsb-e.toml",
            &["duration=50ms", &format!("app.kv.items={items}")],
        );
        let scan = job(strategy(&r, "cint"), "scan").expect("scans");
        let per_scan = scan.bw_bytes as f64 / scan.iops;
        assert!(
            (per_scan - 16.0 * 1024.0).abs() < 1.0,
            "{per_scan} bytes per scan with {items} items"
        );
        // No scan takes no time: one served from the cache takes the
        // worker's CPU for its items.
        assert!(scan.lat_ns.min > 0, "{}", scan.lat_ns.min);
    }
}

#[test]
fn a_get_of_a_pair_larger_than_a_block_reads_the_pair() {
    let r = run(
        "rocksdb-readrandom.toml",
        &["duration=50ms", "app.db.value_size=1m"],
    );
    let get = &strategy(&r, "default").jobs[0];
    // 1 MiB per get, and no more than the P4800X's 2.4 GB/s read
    // bandwidth between them.
    assert!(get.bw_bytes <= 2_400_000_000, "{}", get.bw_bytes);
    assert!(get.lat_ns.mean > 1_000_000.0 / 2.4, "{}", get.lat_ns.mean);
}
