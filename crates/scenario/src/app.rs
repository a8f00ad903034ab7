//! Application programs (`[[app]]`): models of storage applications made
//! of threads, system calls and CPU bursts (docs/APPS.md), beside or
//! instead of fio-like jobs. The simulator runs them; each operation type
//! is a job of the result.

use cint_policy::{Hint, Nanos};

use crate::error::{Origin, ScenarioError};
use crate::profiles::{DeviceProfile, HostProfile};
use crate::section::Section;
use crate::tree::{Node, Value};

/// Keys of a `[[app]]` of kind `rocksdb`.
pub const ROCKSDB_KEYS: &[&str] = &[
    "name",
    "kind",
    "sched_group",
    "benchmark",
    "threads",
    "cpus",
    "writer_cpu",
    "flush_cpu",
    "key_size",
    "value_size",
    "block_size",
    "bloom_bits",
    "alignment",
    "db_size",
    "memtable",
    "max_write_buffer_number",
    "wal_chunk",
    "batch_keys",
    "get_cpu",
    "put_cpu",
    "batch_key_cpu",
    "dump_cpu",
    "compaction_key_cpu",
    "compaction_mib_cpu",
    "flush_mib_cpu",
    "get_hint",
    "flush_hint",
    "wal_hint",
    "dump_hint",
    "compaction_cpu",
    "l0_compaction_trigger",
    "auto_compaction",
    "fill",
    "compaction_hint",
    "sync",
];

/// Default CPU of a compaction's merge per input key-value pair, ns:
/// 196 ns measured with RocksDB's db_bench on a 2.6 GHz EPYC, scaled to
/// the 2.0 GHz of the cinterrupts testbed's Xeon E5-2660 v4, where the
/// store's other CPU figures come from (docs/APPS.md, "Compaction's merge
/// CPU"; docs/evidence/rocksdb-compaction-cpu.sh).
pub const COMPACTION_KEY_CPU: Nanos = 255;

/// Default CPU of a compaction's merge per MiB of input, ns: 0.745 ns per
/// byte measured beside the per-pair part, scaled the same way.
pub const COMPACTION_MIB_CPU: Nanos = 1_016_000;

/// Default CPU of a flush per MiB of the table file it writes, ns:
/// 0.782 ns per byte (user and system time of RocksDB's flush thread
/// under db_bench's fillbatch), scaled to 2.0 GHz as above (docs/APPS.md,
/// "fillbatch's CPU, measured"; docs/evidence/rocksdb-fillbatch-cpu.sh).
pub const FLUSH_MIB_CPU: Nanos = 1_066_000;

/// Default CPU per key of a write batch outside its log write, ns: 1.028
/// us of the writing thread's user time per key under the same
/// measurement, scaled to 2.0 GHz.
pub const BATCH_KEY_CPU: Nanos = 1_336;

/// Default CPU of a put outside its log write, ns: 3.875 us of the
/// writing thread's user time per put under db_bench's fillrandom,
/// scaled to 2.0 GHz (docs/APPS.md; docs/evidence/rocksdb-op-cpu.sh).
pub const PUT_CPU: Nanos = 5_038;

/// Default CPU of the dump tool per pair outside its reads and writes,
/// ns: 1.075 us of user time per pair of RocksDB's own DbDumpTool,
/// scaled to 2.0 GHz (docs/APPS.md; docs/evidence/rocksdb-dump-cpu.sh).
pub const DUMP_CPU: Nanos = 1_398;

/// Keys of a `[[app]]` of kind `kvell`.
pub const KVELL_KEYS: &[&str] = &[
    "name",
    "kind",
    "sched_group",
    "workload",
    "distribution",
    "scan_length",
    "scan_lengths",
    "scan_share",
    "cpus",
    "ring",
    "items",
    "item_size",
    "cache_pages",
    "worker_cpu",
    "idle_sleep",
];

/// YCSB's core workloads.
pub const YCSB_WORKLOADS: &[&str] = &["A", "B", "C", "D", "E", "F"];

/// The `db_bench` benchmarks the RocksDB model runs.
pub const ROCKSDB_BENCHMARKS: &[&str] = &["fillbatch", "readrandom", "readwhilewriting", "dump"];

/// A hint an application asks for on one I/O class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassHint {
    /// What the kernel sets for the call (docs/ALGORITHMS.md section 5).
    Default,
    /// `RWF_URGENT`.
    Urgent,
    /// `RWF_BARRIER`.
    Barrier,
    /// Both flags: explicitly unmarked.
    Unmarked,
}

impl ClassHint {
    /// The override it makes, if any.
    pub fn hint(self) -> Option<Hint> {
        match self {
            ClassHint::Default => None,
            ClassHint::Urgent => Some(Hint::Urgent),
            ClassHint::Barrier => Some(Hint::Barrier),
            ClassHint::Unmarked => Some(Hint::Unmarked),
        }
    }
}

/// Which `db_bench` benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benchmark {
    /// One thread loads keys in write batches.
    Fillbatch,
    /// Threads read random keys.
    Readrandom,
    /// Reader threads and one unthrottled writer.
    Readwhilewriting,
    /// The dump tool (`rocksdb_dump`): one thread iterating over the
    /// whole database, writing every pair to an output file.
    Dump,
}

/// A RocksDB-like store running a `db_bench` benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct RocksDb {
    /// The benchmark.
    pub benchmark: Benchmark,
    /// Reader threads (readrandom, readwhilewriting), or 1 for fillbatch.
    pub threads: u32,
    /// Cores the reader threads take in turn.
    pub cpus: Vec<u32>,
    /// Core of the writer thread (fillbatch, readwhilewriting).
    pub writer_cpu: u32,
    /// Core of the flush thread.
    pub flush_cpu: u32,
    /// Key bytes.
    pub key_size: u64,
    /// Value bytes.
    pub value_size: u64,
    /// Data block bytes (RocksDB's `block_size`; a block on disk is a bit
    /// more: its trailer and the keys).
    pub block_size: u64,
    /// Bits per key of each table file's Bloom filter (db_bench's
    /// `--bloom_bits`); 0: no filters, as in the reference runs.
    pub bloom_bits: u32,
    /// Direct reads are aligned to this (the device's logical block).
    pub alignment: u64,
    /// Size of the loaded database (readrandom's key range).
    pub db_size: u64,
    /// Memtable bytes: a full one is flushed.
    pub memtable: u64,
    /// Memtables, the one being written and those waiting for (or in) a
    /// flush (`max_write_buffer_number`, as given: the store raises it to
    /// 2 as RocksDB's `SanitizeOptions` does).
    pub max_write_buffer_number: u32,
    /// Largest write of the write-ahead log.
    pub wal_chunk: u64,
    /// Keys per write batch (fillbatch).
    pub batch_keys: u32,
    /// CPU of a get outside its read (memtable probe, index search,
    /// block decoding, db_bench's own work).
    pub get_cpu: Nanos,
    /// CPU of a put outside its log write (memtable insert, db_bench).
    pub put_cpu: Nanos,
    /// CPU per key of a write batch outside the log write.
    pub batch_key_cpu: Nanos,
    /// CPU per pair of the dump tool outside its reads and writes.
    pub dump_cpu: Nanos,
    /// CPU of a flush per MiB of the table file it writes (iterating
    /// the memtable, building and checksumming the blocks).
    pub flush_mib_cpu: Nanos,
    /// CPU of a compaction's merge per input key-value pair, beside
    /// [`RocksDb::compaction_mib_cpu`].
    pub compaction_key_cpu: Nanos,
    /// CPU of a compaction's merge per MiB of input (reading the blocks,
    /// merging, building and checksumming the output's), beside the
    /// per-pair part.
    pub compaction_mib_cpu: Nanos,
    /// Hint of a get's read.
    pub get_hint: ClassHint,
    /// Hint of flush writes and their sync.
    pub flush_hint: ClassHint,
    /// Hint of the log's `fdatasync` with [`RocksDb::sync`] (its
    /// writeback of the log's pages); without it the log's writes are
    /// buffered and reach no request, and anything but the default is
    /// refused.
    pub wal_hint: ClassHint,
    /// Hint of the dump tool's read-ahead requests.
    pub dump_hint: ClassHint,
    /// Core of the compaction thread.
    pub compaction_cpu: u32,
    /// L0 files that start a compaction of L0 into L1
    /// (`level0_file_num_compaction_trigger`).
    pub l0_compaction_trigger: u32,
    /// Automatic compaction on (`db_bench --disable_auto_compactions`
    /// turns it off).
    pub auto_compaction: bool,
    /// The writer's keys are drawn at random (their table files overlap)
    /// rather than in sequence (they do not).
    pub random_fill: bool,
    /// Hint of compaction reads, writes and syncs.
    pub compaction_hint: ClassHint,
    /// Each write's log write is followed by `fdatasync` of the log
    /// (`db_bench --sync`, RocksDB's `WriteOptions::sync` without
    /// `use_fsync`).
    pub sync: bool,
}

/// One application program.
#[derive(Clone, Debug, PartialEq)]
pub struct App {
    /// `name`, unique among apps.
    pub name: String,
    /// What it is.
    pub kind: AppKind,
}

/// The application models.
#[derive(Clone, Debug, PartialEq)]
pub enum AppKind {
    /// A RocksDB-like LSM store under `db_bench`.
    RocksDb(RocksDb),
    /// A KVell-like store under YCSB.
    Kvell(Kvell),
}

/// A KVell-like store (the cinterrupts artifact's KVell) under a YCSB
/// workload: one worker per core in `cpus`, each fed by injector threads
/// that run on cores outside the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Kvell {
    /// YCSB workload letter, `A` to `F`.
    pub workload: char,
    /// Keys drawn with YCSB's zipfian (constant 0.99) or uniformly.
    pub zipfian: bool,
    /// Scan length (the fixed length, or the largest of uniform ones).
    pub scan_length: u32,
    /// Scan lengths uniform in `1..=scan_length` (YCSB's E) or fixed.
    pub scan_uniform: bool,
    /// Percent of workload E's operations that are scans (YCSB: 95; the
    /// cinterrupts runs: 100); the rest are inserts.
    pub scan_share: u8,
    /// One worker per core.
    pub cpus: Vec<u32>,
    /// Requests an injector keeps queued per worker (its ring).
    pub ring: u32,
    /// Items in the store.
    pub items: u64,
    /// Item bytes (four 1 KiB items per 4 KiB page).
    pub item_size: u64,
    /// KVell's own page cache, in 4 KiB pages.
    pub cache_pages: u64,
    /// Worker CPU per request.
    pub worker_cpu: Nanos,
    /// What an idle worker's `usleep(1)` sleeps (the timer slack).
    pub idle_sleep: Nanos,
}

/// The scenario's applications and, per strategy, whether the
/// application hint set `app-cint` (flush and compaction I/O unmarked)
/// is deployed with it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Apps {
    /// The programs.
    pub programs: Vec<App>,
    /// Per strategy (in order): its `app_hints = "app-cint"`.
    pub app_cint: Vec<bool>,
}

/// Parses `[[app]]` (absent: no app) and the strategies' `app_hints`.
pub(crate) fn parse(
    source: &str,
    node: Option<&Node>,
    strategies: Option<&Node>,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<Apps, ScenarioError> {
    let mut apps = Apps::default();
    if let Some(node) = strategies {
        for (index, (table, origin)) in crate::job::elements(source, "strategy", Some(node))?
            .into_iter()
            .enumerate()
        {
            let mut sec = Section::new(source, format!("strategy[{index}]"), table, origin);
            if let Some(Value::Str(name)) = table
                .iter()
                .find(|(k, _)| k == "name")
                .map(|(_, n)| &n.value)
            {
                sec.set_path(format!("strategy.{name}"));
            }
            let set = sec.choice("app_hints", &["default", "app-cint"])?;
            apps.app_cint.push(set.as_deref() == Some("app-cint"));
        }
    }
    let Some(node) = node else {
        return Ok(apps);
    };
    let elements = crate::job::elements(source, "app", Some(node))?;
    let mut seen: Vec<(String, Origin)> = Vec::new();
    for (index, (table, origin)) in elements.into_iter().enumerate() {
        let mut sec = Section::new(source, format!("app[{index}]"), table, origin);
        let name = crate::job::element_name(&mut sec, &seen, "app")?;
        seen.push((name.clone(), sec.origin_of("name")));
        // Read by the task groups' parser (crate::sched_group).
        sec.node("sched_group");
        let kind = sec.choice("kind", &["rocksdb", "kvell"])?.ok_or_else(|| {
            sec.error(
                "kind",
                "missing required key (one of \"rocksdb\", \"kvell\")",
            )
        })?;
        let kind = if kind == "kvell" {
            let kv = parse_kvell(&mut sec, device, host)?;
            sec.finish("an app of kind \"kvell\"", KVELL_KEYS)?;
            AppKind::Kvell(kv)
        } else {
            let db = parse_rocksdb(&mut sec, device, host)?;
            sec.finish("an app of kind \"rocksdb\"", ROCKSDB_KEYS)?;
            AppKind::RocksDb(db)
        };
        apps.programs.push(App { name, kind });
    }
    Ok(apps)
}

fn parse_rocksdb(
    sec: &mut Section<'_>,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<RocksDb, ScenarioError> {
    let benchmark =
        match sec.choice("benchmark", ROCKSDB_BENCHMARKS)?.as_deref() {
            Some("fillbatch") => Benchmark::Fillbatch,
            Some("readwhilewriting") => Benchmark::Readwhilewriting,
        Some("dump") => Benchmark::Dump,
            Some(_) => Benchmark::Readrandom,
            None => return Err(sec.error(
                "benchmark",
                "missing required key (one of \"fillbatch\", \"readrandom\", \"readwhilewriting\", \"dump\")",
            )),
        };
    let default_threads = match benchmark {
        Benchmark::Fillbatch | Benchmark::Dump => 1,
        Benchmark::Readrandom => 4,
        Benchmark::Readwhilewriting => 3,
    };
    let threads = sec.int("threads", 1, 1024)?.unwrap_or(default_threads) as u32;
    let cores = u64::from(host.cores);
    let core = |sec: &mut Section<'_>, key: &'static str| -> Result<u32, ScenarioError> {
        let c = sec.int(key, 0, u64::from(u32::MAX))?.unwrap_or(0);
        if c >= cores {
            return Err(sec.error(
                key,
                format!("core {c} does not exist: the host has {cores} cores (numbered from 0)"),
            ));
        }
        Ok(c as u32)
    };
    let writer_cpu = core(sec, "writer_cpu")?;
    let flush_cpu = core(sec, "flush_cpu")?;
    let compaction_cpu = match sec.node("compaction_cpu") {
        Some(_) => core(sec, "compaction_cpu")?,
        None => flush_cpu,
    };
    let l0_compaction_trigger = sec.int("l0_compaction_trigger", 1, 1_000_000)?.unwrap_or(4) as u32;
    let auto_compaction = sec.bool("auto_compaction")?.unwrap_or(true);
    let random_fill = sec
        .choice("fill", &["sequential", "random"])?
        .is_some_and(|f| f == "random");
    let cpus = cpu_list(sec, cores)?;
    let size =
        |sec: &mut Section<'_>, key: &'static str, default: u64| -> Result<u64, ScenarioError> {
            let v = sec.size(key)?.unwrap_or(default);
            if v == 0 {
                return Err(sec.error(key, "must be larger than zero"));
            }
            if v > device.capacity.0 {
                return Err(sec.error(
                    key,
                    format!(
                        "{v} bytes{} is larger than the device (device.capacity {} bytes)",
                        defaulted(sec, key),
                        device.capacity.0
                    ),
                ));
            }
            Ok(v)
        };
    let key_size = size(sec, "key_size", 16)?;
    let value_size = size(sec, "value_size", 1024)?;
    if key_size + value_size > device.capacity.0 {
        return Err(sec.error("value_size", "a key-value pair is larger than the device"));
    }
    let block_size = size(sec, "block_size", 4096)?;
    let bloom_bits = sec.int("bloom_bits", 0, 64)?.unwrap_or(0) as u32;
    let alignment = size(sec, "alignment", 4096)?;
    if alignment % 512 != 0 {
        return Err(sec.error(
            "alignment",
            format!("must be a multiple of 512 bytes (got {alignment})"),
        ));
    }
    let db_size = size(sec, "db_size", 20_000_000_000)?;
    let memtable = size(sec, "memtable", 64 << 20)?;
    let max_write_buffer_number = sec.int("max_write_buffer_number", 1, 1_000)?.unwrap_or(2) as u32;
    let wal_chunk = size(sec, "wal_chunk", 1 << 20)?;
    let batch_keys = sec.int("batch_keys", 1, 1_000_000)?.unwrap_or(1000) as u32;
    let dur = |sec: &mut Section<'_>, key: &'static str, default: Nanos| {
        sec.duration(key).map(|d| d.unwrap_or(default))
    };
    // Fitted on the cinterrupts paper's Table 7 (docs/APPS.md, "CPU per
    // get"): docs/APPS.md's 6-9 us estimate put KVell's order wrong.
    let get_cpu = dur(sec, "get_cpu", 12_000)?;
    let put_cpu = dur(sec, "put_cpu", PUT_CPU)?;
    let batch_key_cpu = dur(sec, "batch_key_cpu", BATCH_KEY_CPU)?;
    let dump_cpu = dur(sec, "dump_cpu", DUMP_CPU)?;
    // Measured with RocksDB's db_bench, scaled to the cinterrupts
    // testbed's 2.0 GHz (docs/APPS.md, "Compaction's merge CPU").
    let compaction_key_cpu = dur(sec, "compaction_key_cpu", COMPACTION_KEY_CPU)?;
    let compaction_mib_cpu = dur(sec, "compaction_mib_cpu", COMPACTION_MIB_CPU)?;
    let flush_mib_cpu = dur(sec, "flush_mib_cpu", FLUSH_MIB_CPU)?;
    let hint = |sec: &mut Section<'_>, key: &'static str| -> Result<ClassHint, ScenarioError> {
        Ok(
            match sec
                .choice(key, &["default", "urgent", "barrier", "none"])?
                .as_deref()
            {
                Some("urgent") => ClassHint::Urgent,
                Some("barrier") => ClassHint::Barrier,
                Some("none") => ClassHint::Unmarked,
                _ => ClassHint::Default,
            },
        )
    };
    let sync = sec.bool("sync")?.unwrap_or(false);
    if sync && matches!(benchmark, Benchmark::Readrandom | Benchmark::Dump) {
        return Err(sec.error(
            "sync",
            "syncs the writer's log, and readrandom and dump have no writer (use fillbatch or \
             readwhilewriting)",
        ));
    }
    let wal_hint = hint(sec, "wal_hint")?;
    if wal_hint != ClassHint::Default && !sync {
        return Err(sec.error(
            "wal_hint",
            "the log's writes are buffered and reach the device by the flusher's writeback, \
             unmarked, whatever the hint: set sync = true for the log's fdatasync to carry it",
        ));
    }
    Ok(RocksDb {
        benchmark,
        threads: match benchmark {
            Benchmark::Fillbatch | Benchmark::Dump => 1,
            _ => threads,
        },
        cpus,
        writer_cpu,
        flush_cpu,
        key_size,
        value_size,
        block_size,
        bloom_bits,
        alignment,
        db_size,
        memtable,
        max_write_buffer_number,
        wal_chunk,
        batch_keys,
        get_cpu,
        put_cpu,
        batch_key_cpu,
        dump_cpu,
        compaction_key_cpu,
        compaction_mib_cpu,
        flush_mib_cpu,
        get_hint: hint(sec, "get_hint")?,
        flush_hint: hint(sec, "flush_hint")?,
        wal_hint,
        dump_hint: hint(sec, "dump_hint")?,
        compaction_cpu,
        l0_compaction_trigger,
        auto_compaction,
        random_fill,
        compaction_hint: hint(sec, "compaction_hint")?,
        sync,
    })
}

fn parse_kvell(
    sec: &mut Section<'_>,
    device: &DeviceProfile,
    host: &HostProfile,
) -> Result<Kvell, ScenarioError> {
    let workload = match sec.string("workload")? {
        None => 'C',
        Some(w) => {
            let upper = w.to_ascii_uppercase();
            if !YCSB_WORKLOADS.contains(&upper.as_str()) {
                return Err(sec.error(
                    "workload",
                    format!("unknown YCSB workload \"{w}\" (one of A, B, C, D, E, F)"),
                ));
            }
            upper.chars().next().unwrap_or('C')
        }
    };
    let zipfian = sec
        .choice("distribution", &["uniform", "zipfian"])?
        .is_some_and(|d| d == "zipfian");
    let scan_length = match sec.int("scan_length", 0, 1_000_000)? {
        Some(0) => {
            return Err(sec.error(
                "scan_length",
                "must be at least 1 (a scan of 0 items reads nothing)",
            ))
        }
        Some(n) => n as u32,
        None => 16,
    };
    let scan_uniform = sec
        .choice("scan_lengths", &["fixed", "uniform"])?
        .is_some_and(|d| d == "uniform");
    let scan_share = sec.int("scan_share", 0, 100)?.unwrap_or(95) as u8;
    let cpus = cpu_list(sec, u64::from(host.cores))?;
    let ring = sec.int("ring", 1, 65_536)?.unwrap_or(192) as u32;
    let items = sec.int("items", 1, u64::MAX >> 16)?.unwrap_or(100_000_000);
    let item_size = sec.size("item_size")?.unwrap_or(1024);
    if item_size == 0 || item_size > 4096 {
        return Err(sec.error(
            "item_size",
            format!("must be from 1 byte to a 4 KiB page (got {item_size})"),
        ));
    }
    let per_page = 4096 / item_size;
    if items.div_ceil(per_page).saturating_mul(4096) > device.capacity.0 {
        return Err(sec.error(
            "items",
            format!(
                "{items} items{} of {item_size} bytes are larger than the device \
                 (device.capacity {} bytes)",
                defaulted(sec, "items"),
                device.capacity.0
            ),
        ));
    }
    let cache_pages = sec.int("cache_pages", 0, u64::MAX >> 16)?.unwrap_or(13_172);
    let worker_cpu = sec.duration("worker_cpu")?.unwrap_or(5_000);
    let idle_sleep = sec.duration("idle_sleep")?.unwrap_or(50_000);
    Ok(Kvell {
        workload,
        zipfian,
        scan_length,
        scan_uniform,
        scan_share,
        cpus,
        ring,
        items,
        item_size,
        cache_pages,
        worker_cpu,
        idle_sleep,
    })
}

/// `cpus`: the cores the reader threads take in turn (default `[0]`).
fn cpu_list(sec: &mut Section<'_>, cores: u64) -> Result<Vec<u32>, ScenarioError> {
    let Some(node) = sec.node("cpus") else {
        return Ok(vec![0]);
    };
    let Value::Array(items) = &node.value else {
        return Err(sec.error("cpus", "must be a list of cores, e.g. [0, 1]"));
    };
    if items.is_empty() {
        return Err(sec.error("cpus", "must name at least one core"));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item.value {
            Value::Int(c) if out.contains(&(c as u32)) && c >= 0 => {
                return Err(sec.error("cpus", format!("core {c} is listed twice")))
            }
            Value::Int(c) if c >= 0 && (c as u64) < cores => out.push(c as u32),
            Value::Int(c) => {
                return Err(sec.error(
                    "cpus",
                    format!(
                        "core {c} does not exist: the host has {cores} cores (numbered from 0)"
                    ),
                ))
            }
            _ => return Err(sec.error("cpus", "must be a list of cores, e.g. [0, 1]")),
        }
    }
    Ok(out)
}

/// The apps as `[[app]]` tables of the resolved scenario (`cint check`),
/// every default spelled out.
pub(crate) fn render(doc: &mut toml_edit::DocumentMut, apps: &Apps) {
    use crate::units::{format_duration, format_size};
    use toml_edit::{value, Array, ArrayOfTables, Item, Table};
    if apps.programs.is_empty() {
        return;
    }
    let cores = |cpus: &[u32]| {
        let mut a = Array::new();
        for &c in cpus {
            a.push(i64::from(c));
        }
        value(a)
    };
    let hint = |h: ClassHint| match h {
        ClassHint::Default => "default",
        ClassHint::Urgent => "urgent",
        ClassHint::Barrier => "barrier",
        ClassHint::Unmarked => "none",
    };
    let mut out = ArrayOfTables::new();
    for app in &apps.programs {
        let mut t = Table::new();
        t["name"] = value(app.name.as_str());
        match &app.kind {
            AppKind::RocksDb(d) => {
                t["kind"] = value("rocksdb");
                t["benchmark"] = value(match d.benchmark {
                    Benchmark::Fillbatch => "fillbatch",
                    Benchmark::Readrandom => "readrandom",
                    Benchmark::Readwhilewriting => "readwhilewriting",
                    Benchmark::Dump => "dump",
                });
                t["threads"] = value(i64::from(d.threads));
                t["cpus"] = cores(&d.cpus);
                t["writer_cpu"] = value(i64::from(d.writer_cpu));
                t["flush_cpu"] = value(i64::from(d.flush_cpu));
                t["compaction_cpu"] = value(i64::from(d.compaction_cpu));
                t["l0_compaction_trigger"] = value(i64::from(d.l0_compaction_trigger));
                t["auto_compaction"] = value(d.auto_compaction);
                t["fill"] = value(if d.random_fill {
                    "random"
                } else {
                    "sequential"
                });
                for (key, v) in [
                    ("key_size", d.key_size),
                    ("value_size", d.value_size),
                    ("block_size", d.block_size),
                    ("alignment", d.alignment),
                    ("db_size", d.db_size),
                    ("memtable", d.memtable),
                    ("wal_chunk", d.wal_chunk),
                ] {
                    t[key] = value(format_size(v));
                }
                t["batch_keys"] = value(i64::from(d.batch_keys));
                t["sync"] = value(d.sync);
                t["max_write_buffer_number"] = value(i64::from(d.max_write_buffer_number));
                t["bloom_bits"] = value(i64::from(d.bloom_bits));
                for (key, v) in [
                    ("get_cpu", d.get_cpu),
                    ("put_cpu", d.put_cpu),
                    ("batch_key_cpu", d.batch_key_cpu),
                    ("dump_cpu", d.dump_cpu),
                    ("compaction_key_cpu", d.compaction_key_cpu),
                    ("compaction_mib_cpu", d.compaction_mib_cpu),
                    ("flush_mib_cpu", d.flush_mib_cpu),
                ] {
                    t[key] = value(format_duration(v));
                }
                for (key, h) in [
                    ("get_hint", d.get_hint),
                    ("flush_hint", d.flush_hint),
                    ("wal_hint", d.wal_hint),
                    ("dump_hint", d.dump_hint),
                    ("compaction_hint", d.compaction_hint),
                ] {
                    t[key] = value(hint(h));
                }
            }
            AppKind::Kvell(k) => {
                t["kind"] = value("kvell");
                t["workload"] = value(k.workload.to_string());
                t["distribution"] = value(if k.zipfian { "zipfian" } else { "uniform" });
                t["scan_length"] = value(i64::from(k.scan_length));
                t["scan_lengths"] = value(if k.scan_uniform { "uniform" } else { "fixed" });
                t["scan_share"] = value(i64::from(k.scan_share));
                t["cpus"] = cores(&k.cpus);
                t["ring"] = value(i64::from(k.ring));
                t["items"] = value(i64::try_from(k.items).unwrap_or(i64::MAX));
                t["item_size"] = value(format_size(k.item_size));
                t["cache_pages"] = value(i64::try_from(k.cache_pages).unwrap_or(i64::MAX));
                t["worker_cpu"] = value(format_duration(k.worker_cpu));
                t["idle_sleep"] = value(format_duration(k.idle_sleep));
            }
        }
        out.push(t);
    }
    doc["app"] = Item::ArrayOfTables(out);
}

/// " (the default)" for a key the section does not give: a refusal of a
/// default is about what it must fit, not about a line of the file.
fn defaulted(sec: &Section<'_>, key: &str) -> &'static str {
    if sec.has(key) {
        ""
    } else {
        " (the default)"
    }
}
