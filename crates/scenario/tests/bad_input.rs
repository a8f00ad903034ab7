//! Every kind of bad scenario is refused with ONE line naming the file,
//! the line (or the `--set` argument) and the dotted key.

mod common;

use cint_scenario::load_str;
use common::{line_of, with, BASE};

const FILE: &str = "scenarios/x.toml";

/// Where the error must point.
enum At<'a> {
    /// The line of the (modified) text containing this.
    LineOf(&'a str),
    /// The line above the one containing this (a table's header when
    /// this is its first key).
    Above(&'a str),
    /// A fixed line.
    Line(usize),
    /// This `--set` argument.
    Set(&'a str),
}

struct Case<'a> {
    what: &'a str,
    text: String,
    sets: &'a [&'a str],
    at: At<'a>,
    key: &'a str,
    says: &'a str,
}

fn case<'a>(what: &'a str, text: String, at: At<'a>, key: &'a str, says: &'a str) -> Case<'a> {
    Case {
        what,
        text,
        sets: &[],
        at,
        key,
        says,
    }
}

fn set_case<'a>(what: &'a str, sets: &'a [&'a str], key: &'a str, says: &'a str) -> Case<'a> {
    Case {
        what,
        text: BASE.to_string(),
        sets,
        at: At::Set(sets[sets.len() - 1]),
        key,
        says,
    }
}

fn cases() -> Vec<Case<'static>> {
    use At::*;
    let no_jobs = BASE.split("[[job]]").next().unwrap().to_string();
    let no_jobs = &no_jobs;
    let no_strategies = {
        let (head, rest) = BASE.split_once("[[strategy]]").unwrap();
        let jobs = &rest[rest.find("[[job]]").unwrap()..];
        format!("{head}{jobs}")
    };
    vec![
        case(
            "malformed TOML",
            with("iodepth = 16", "iodepth = = 16"),
            LineOf("iodepth = = 16"),
            "job.iodepth",
            "invalid TOML",
        ),
        case(
            "unknown top-level key",
            with("seed     = 1\n", "seed     = 1\ncolour = 3\n"),
            LineOf("colour"),
            "colour",
            "unknown key",
        ),
        case(
            "unknown job key",
            with("numjobs = 1", "numjobz = 1"),
            LineOf("numjobz"),
            "job.async.numjobz",
            "unknown key",
        ),
        case(
            "bad duration unit",
            with("\"200ms\"", "\"200 parsecs\""),
            LineOf("parsecs"),
            "duration",
            "unknown duration unit",
        ),
        case(
            "negative duration",
            with("\"200ms\"", "-5"),
            LineOf("duration"),
            "duration",
            "must not be negative",
        ),
        case(
            "negative duration string",
            with("\"200ms\"", "\"-5ms\""),
            LineOf("duration"),
            "duration",
            "bad duration",
        ),
        case(
            "zero duration",
            with("\"200ms\"", "\"0s\""),
            LineOf("duration"),
            "duration",
            "longer than zero",
        ),
        case(
            "bssplit shares short of 100",
            with("numjobs = 1", "numjobs = 1\nbssplit = \"4k/50:8k/30\""),
            LineOf("bssplit"),
            "job.async.bssplit",
            "bssplit: the shares add up to 80%, and fio gives the other 20% to 4KiB, the largest share; give shares",
        ),
        case(
            "random_distribution fio refuses",
            with("numjobs = 1", "numjobs = 1\nrandom_distribution = \"zoned:60/10:30/20\""),
            LineOf("random_distribution"),
            "job.async.random_distribution",
            "the access shares add up to 90%: fio wants 100",
        ),
        case(
            "bssplit size fio rounds down",
            with("numjobs = 1", "numjobs = 1\nbssplit = \"4k/50:6k/50\""),
            LineOf("bssplit"),
            "job.async.bssplit",
            "issues 6KiB as 4KiB; give sizes that are multiples of the smallest",
        ),
        case(
            "iodepth 0",
            with("iodepth = 16", "iodepth = 0"),
            LineOf("iodepth = 0"),
            "job.async.iodepth",
            "must be at least 1 (got 0)",
        ),
        case(
            "bs not a multiple of 512",
            with("bs      = \"4k\"", "bs      = 1000"),
            LineOf("bs      = 1000"),
            "job.async.bs",
            "multiple of 512",
        ),
        case(
            "bad size unit",
            with("bs      = \"4k\"", "bs      = \"4q\""),
            LineOf("4q"),
            "job.async.bs",
            "unknown size unit",
        ),
        case(
            "cpu beyond cores",
            with("cpu    = 1", "cpu    = 2"),
            LineOf("cpu    = 2"),
            "job.sync.cpu",
            "host.cores = 2",
        ),
        case(
            "a core of cpus beyond the host",
            with("cpu    = 1", "cpus   = [0, 2]"),
            LineOf("cpus   = [0, 2]"),
            "job.sync.cpus",
            "core 2 is not below host.cores = 2",
        ),
        case(
            "a core named twice in cpus",
            with("cpu    = 1", "cpus   = [1, 1]"),
            LineOf("cpus   = [1, 1]"),
            "job.sync.cpus",
            "names core 1 twice",
        ),
        case(
            "cpu and cpus together",
            with("cpu    = 1", "cpu    = 1\ncpus   = [0, 1]"),
            LineOf("cpus   = [0, 1]"),
            "job.sync.cpus",
            "not both",
        ),
        case(
            "strategy key of another kind",
            with("thr   = 32", "thr   = 32\nooo = true"),
            LineOf("ooo = true"),
            "strategy.adaptive.ooo",
            "belongs to \"cinterrupts\"",
        ),
        case(
            "key of no kind",
            with("cif_threshold = 4", "cif_threshold = 4\nturbo = 1"),
            LineOf("turbo"),
            "strategy.vic.turbo",
            "unknown key",
        ),
        case(
            "duplicate strategy names",
            with("name = \"vic\"", "name = \"cint\""),
            LineOf("name = \"cint\""),
            "strategy.cint.name",
            "duplicate strategy name",
        ),
        case(
            "duplicate job names",
            with("name   = \"sync\"", "name   = \"async\""),
            LineOf("name   = \"async\""),
            "job.async.name",
            "duplicate job name",
        ),
        case("no job", no_jobs.clone(), Line(1), "job", "at least one"),
        case(
            "empty job list",
            no_jobs.replacen("seed     = 1\n", "seed     = 1\njob = []\n", 1),
            LineOf("job = []"),
            "job",
            "is empty",
        ),
        case(
            "no strategy",
            no_strategies,
            Line(1),
            "strategy",
            "at least one",
        ),
        case(
            "unknown engine",
            with("\"libaio\"", "\"libaoi\""),
            LineOf("libaoi"),
            "job.async.engine",
            "must be one of",
        ),
        case(
            "unknown rw",
            with("rw     = \"randread\"", "rw     = \"sideways\""),
            LineOf("sideways"),
            "job.sync.rw",
            "must be one of",
        ),
        case(
            "unknown device model",
            with("\"optane-p4800x\"", "\"floppy\""),
            LineOf("floppy"),
            "device.model",
            "unknown device model",
        ),
        case(
            "unknown host model",
            with("\"xeon-e5-2660v4\"", "\"pentium\""),
            LineOf("pentium"),
            "host.model",
            "unknown host model",
        ),
        case(
            "unknown device field",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nspin_rpm = 7200",
            ),
            LineOf("spin_rpm"),
            "device.spin_rpm",
            "unknown key",
        ),
        case(
            "unknown nested device field",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nread.latency = \"5us\"",
            ),
            LineOf("read.latency"),
            "device.read.latency",
            "unknown key",
        ),
        case(
            "device field of the wrong type",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nparallel_units = \"many\"",
            ),
            LineOf("parallel_units"),
            "device.parallel_units",
            "must be a whole number from 0 to 4294967295 (got a string)",
        ),
        case(
            "device duration with a bad unit",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nirq_latency = \"1 fortnight\"",
            ),
            LineOf("irq_latency"),
            "device.irq_latency",
            "duration unit",
        ),
        case(
            "zero read bandwidth",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nread.bandwidth = 0",
            ),
            LineOf("read.bandwidth"),
            "device.read.bandwidth",
            "at least 1",
        ),
        case(
            "zero cores",
            with("cores = 2", "cores = 0"),
            LineOf("cores = 0"),
            "host.cores",
            "must be at least 1 (got 0)",
        ),
        case(
            "negative cost spread",
            with("cores = 2", "cores = 2\ncost_spread = -0.5"),
            LineOf("cost_spread = -0.5"),
            "host.cost_spread",
            "from 0 to 4 (got -0.5)",
        ),
        case(
            "cost spread not a number",
            with("cores = 2", "cores = 2\ncost_spread = nan"),
            LineOf("cost_spread = nan"),
            "host.cost_spread",
            "(got NaN)",
        ),
        case(
            "an unknown YCSB letter",
            format!("{BASE}\n[[app]]\nname = \"kv\"\nkind = \"kvell\"\nworkload = \"G\"\n"),
            LineOf("workload = \"G\""),
            "app.kv.workload",
            "unknown YCSB workload \"G\"",
        ),
        case(
            "a scan of no items",
            format!("{BASE}\n[[app]]\nname = \"kv\"\nkind = \"kvell\"\nworkload = \"E\"\nscan_length = 0\n"),
            LineOf("scan_length = 0"),
            "app.kv.scan_length",
            "must be at least 1",
        ),
        case(
            "a core listed twice for an app",
            format!("{BASE}\n[[app]]\nname = \"kv\"\nkind = \"kvell\"\ncpus = [0, 0]\n"),
            LineOf("cpus = [0, 0]"),
            "app.kv.cpus",
            "core 0 is listed twice",
        ),
        case(
            "a KVell worker on a core the host lacks",
            format!("{BASE}\n[[app]]\nname = \"kv\"\nkind = \"kvell\"\ncpus = [0, 1, 2]\n"),
            LineOf("cpus = [0, 1, 2]"),
            "app.kv.cpus",
            "core 2 does not exist",
        ),
        case(
            "KVell items larger than the device",
            format!("{BASE}\n[[app]]\nname = \"kv\"\nkind = \"kvell\"\nitems = 1000000000000\n"),
            LineOf("items ="),
            "app.kv.items",
            "larger than the device",
        ),
        case(
            "an app on a core the host lacks",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"readrandom\"\ncpus = [0, 2]\n"),
            LineOf("cpus = [0, 2]"),
            "app.db.cpus",
            "core 2 does not exist: the host has 2 cores",
        ),
        case(
            "an app's writer on a core the host lacks",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillbatch\"\nwriter_cpu = 3\n"),
            LineOf("writer_cpu = 3"),
            "app.db.writer_cpu",
            "core 3 does not exist",
        ),
        case(
            "a value larger than the device",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillbatch\"\nvalue_size = \"1t\"\n"),
            LineOf("value_size"),
            "app.db.value_size",
            "is larger than the device",
        ),
        case(
            "a compaction thread on a core the host lacks",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillbatch\"\ncompaction_cpu = 2\n"),
            LineOf("compaction_cpu = 2"),
            "app.db.compaction_cpu",
            "core 2 does not exist",
        ),
        case(
            "an L0 compaction trigger of no files",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillbatch\"\nl0_compaction_trigger = 0\n"),
            LineOf("l0_compaction_trigger"),
            "app.db.l0_compaction_trigger",
            "must be at least 1 (got 0)",
        ),
        case(
            "an unknown key order",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillbatch\"\nfill = \"zigzag\"\n"),
            LineOf("zigzag"),
            "app.db.fill",
            "must be one of \"sequential\" or \"random\"",
        ),
        case(
            "a log sync for a benchmark without a writer",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"readrandom\"\nsync = true\n"),
            LineOf("sync = true"),
            "app.db.sync",
            "readrandom and dump have no writer",
        ),
        case(
            "a log hint that no request would carry",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillbatch\"\nwal_hint = \"urgent\"\n"),
            LineOf("wal_hint"),
            "app.db.wal_hint",
            "set sync = true",
        ),
        case(
            "an unknown benchmark",
            format!("{BASE}\n[[app]]\nname = \"db\"\nkind = \"rocksdb\"\nbenchmark = \"fillrandom\"\n"),
            LineOf("fillrandom"),
            "app.db.benchmark",
            "must be one of",
        ),
        case(
            "an unknown app hint set",
            with("name = \"default\"\nkind = \"none\"", "name = \"default\"\nkind = \"none\"\napp_hints = \"all\""),
            LineOf("app_hints"),
            "strategy.default.app_hints",
            "must be one of \"default\" or \"app-cint\"",
        ),
        case(
            "flusher on a core the host lacks",
            with("cores = 2", "cores = 2\n[host.page_cache]\nflusher_cpu = 2"),
            LineOf("flusher_cpu = 2"),
            "host.page_cache.flusher_cpu",
            "core 2 is beyond the host's 2 cores",
        ),
        case(
            "background ratio at the dirty ratio",
            with(
                "cores = 2",
                "cores = 2\n[host.page_cache]\nbackground_ratio = 20",
            ),
            LineOf("background_ratio = 20"),
            "host.page_cache.background_ratio",
            "must be below dirty_ratio 20 (got 20)",
        ),
        case(
            "writeback request not in pages",
            with(
                "cores = 2",
                "cores = 2\n[host.page_cache]\nmax_writeback_request = \"6k\"",
            ),
            LineOf("max_writeback_request"),
            "host.page_cache.max_writeback_request",
            "a positive multiple of 4 KiB (got 6144 bytes)",
        ),
        case(
            "issue share above one",
            with("cores = 2", "cores = 2\nuser_issue_share = 1.5"),
            LineOf("user_issue_share = 1.5"),
            "host.user_issue_share",
            "from 0 to 1 (got 1.5)",
        ),
        case(
            "issue share not a number",
            with("cores = 2", "cores = 2\nuser_issue_share = nan"),
            LineOf("user_issue_share = nan"),
            "host.user_issue_share",
            "(got NaN)",
        ),
        case(
            "thr 0",
            with("thr   = 32", "thr   = 0"),
            LineOf("thr   = 0"),
            "strategy.adaptive.thr",
            "must be at least 1 (got 0)",
        ),
        case(
            "thr too large",
            with("thr     = 32", "thr     = 70000"),
            LineOf("thr     = 70000"),
            "strategy.cint.thr",
            "at most 65535",
        ),
        case(
            "delta 0",
            with("delta   = \"6us\"", "delta   = \"0us\""),
            LineOf("delta   = \"0us\""),
            "strategy.cint.delta",
            "must be at least 1ns",
        ),
        case(
            "barrier sometimes",
            with("\"relaxed\"", "\"sometimes\""),
            LineOf("sometimes"),
            "strategy.cint.barrier",
            "\"relaxed\" or \"strict\"",
        ),
        case(
            "ooo not a boolean",
            with("ooo     = true", "ooo     = \"yes\""),
            LineOf("\"yes\""),
            "strategy.cint.ooo",
            "true or false",
        ),
        case(
            "negative thr names the range's true bound",
            with("thr   = 32", "thr   = -1"),
            LineOf("thr   = -1"),
            "strategy.adaptive.thr",
            "must be at least 1 (got -1)",
        ),
        case(
            "max_irq_rate 0",
            with("ooo     = true", "max_irq_rate = 0"),
            LineOf("max_irq_rate"),
            "strategy.cint.max_irq_rate",
            "at least 1",
        ),
        case(
            "guard without max_irq_rate",
            with("ooo     = true", "guard = \"rate\""),
            LineOf("guard"),
            "strategy.cint.guard",
            "needs max_irq_rate",
        ),
        case(
            "guard mode unknown",
            with("ooo     = true", "max_irq_rate = 1000\nguard = \"strict\""),
            LineOf("guard"),
            "strategy.cint.guard",
            "\"rate\" or \"artifact\"",
        ),
        case(
            "guard not a string",
            with("ooo     = true", "max_irq_rate = 1000\nguard = 1"),
            LineOf("guard"),
            "strategy.cint.guard",
            "must be a string",
        ),
        case(
            "cif_threshold 0",
            with("cif_threshold = 4", "cif_threshold = 0"),
            LineOf("cif_threshold = 0"),
            "strategy.vic.cif_threshold",
            "must be at least 1 (got 0)",
        ),
        case(
            "vic epoch 0",
            with("cif_threshold = 4", "epoch = 0"),
            LineOf("epoch = 0"),
            "strategy.vic.epoch",
            "at least 1ns",
        ),
        case(
            "unknown strategy kind",
            with("kind = \"vic\"", "kind = \"turbo\""),
            LineOf("turbo"),
            "strategy.vic.kind",
            "must be one of",
        ),
        case(
            "missing strategy kind",
            with("kind = \"vic\"\n", ""),
            Above("name = \"vic\""),
            "strategy.vic.kind",
            "missing required key",
        ),
        case(
            "nvme thr beyond 256",
            with(
                "kind = \"vic\"\ncif_threshold = 4",
                "kind = \"nvme\"\nthr = 300",
            ),
            LineOf("thr = 300"),
            "strategy.vic.thr",
            "at most 256",
        ),
        case(
            "nvme time beyond what the feature's field can carry",
            with(
                "kind = \"vic\"\ncif_threshold = 4",
                "kind = \"nvme\"\ntime = \"30ms\"",
            ),
            LineOf("time = \"30ms\""),
            "strategy.vic.time",
            "must be at most 25500us (got 30ms)",
        ),
        case(
            "hybrid-poll sleep word",
            with(
                "kind = \"vic\"\ncif_threshold = 4",
                "kind = \"hybrid-poll\"\nsleep = \"sometimes\"",
            ),
            LineOf("sleep"),
            "strategy.vic.sleep",
            "\"adaptive\", \"min\" or a duration",
        ),
        case(
            "missing scenario name",
            with("name     = \"mixed\"\n", ""),
            Line(1),
            "name",
            "missing required key",
        ),
        case(
            "job without a name",
            with("name   = \"sync\"\n", ""),
            Above("engine = \"psync\""),
            "job[1].name",
            "missing required key",
        ),
        case(
            "name with a dot",
            with("name   = \"sync\"", "name   = \"s.y\""),
            LineOf("s.y"),
            "job[1].name",
            "must not contain '.'",
        ),
        case(
            "numjobs 0",
            with("numjobs = 1", "numjobs = 0"),
            LineOf("numjobs = 0"),
            "job.async.numjobs",
            "at least 1",
        ),
        case(
            "batch beyond iodepth",
            with("batch   = 1", "batch   = 32"),
            LineOf("batch   = 32"),
            "job.async.batch",
            "at most iodepth = 16",
        ),
        case(
            "max_latency without a bound",
            with("numjobs = 1", "numjobs = 1\nmax_latency = \",\""),
            LineOf("max_latency"),
            "job.async.max_latency",
            "gives no bound",
        ),
        case(
            "max_latency of zero",
            with("numjobs = 1", "numjobs = 1\nmax_latency = \"0us\""),
            LineOf("max_latency"),
            "job.async.max_latency",
            "above zero",
        ),
        case(
            "max_latency not a duration",
            with("numjobs = 1", "numjobs = 1\nmax_latency = \"10ms,fast\""),
            LineOf("max_latency"),
            "job.async.max_latency",
            "fast",
        ),
        case(
            "max_latency beside gtod_reduce",
            with("numjobs = 1", "numjobs = 1\nmax_latency = \"1ms\"\ngtod_reduce = true"),
            LineOf("max_latency"),
            "job.async.max_latency",
            "gtod_reduce",
        ),
        case(
            "max_latency offloaded",
            with(
                "numjobs = 1",
                "numjobs = 1\nmax_latency = \"1ms\"\nsubmit_mode = \"offload\"",
            ),
            LineOf("max_latency"),
            "job.async.max_latency",
            "with submit_mode",
        ),
        case(
            "iodepth_low beyond iodepth",
            with("numjobs = 1", "numjobs = 1\niodepth_low = 17"),
            LineOf("iodepth_low"),
            "job.async.iodepth_low",
            "must be at most iodepth = 16 (got 17)",
        ),
        case(
            "iodepth_low 0",
            with("numjobs = 1", "numjobs = 1\niodepth_low = 0"),
            LineOf("iodepth_low"),
            "job.async.iodepth_low",
            "at least 1",
        ),
        case(
            "iodepth_low below the depth offloaded",
            with(
                "numjobs = 1",
                "numjobs = 1\niodepth_low = 4\nsubmit_mode = \"offload\"",
            ),
            LineOf("iodepth_low"),
            "job.async.iodepth_low",
            "never waits for a full queue",
        ),
        case(
            "batch_complete_max 0 beside a minimum",
            with("batch_complete_min = 1", "batch_complete_min = 1\nbatch_complete_max = 0"),
            LineOf("batch_complete_max = 0"),
            "job.async.batch_complete_max",
            "only goes with batch_complete_min = 0",
        ),
        case(
            "a reap that does not wait, offloaded",
            with(
                "batch_complete_min = 1",
                "batch_complete_min = 0\nsubmit_mode = \"offload\"",
            ),
            LineOf("batch_complete_min = 0"),
            "job.async.batch_complete_min",
            "leave it at 1",
        ),
        case(
            "rwmixread without randrw",
            with("numjobs = 1", "rwmixread = 70"),
            LineOf("rwmixread"),
            "job.async.rwmixread",
            "randrw",
        ),
        case(
            "rwmixread beyond 100",
            with(
                "rw      = \"randread\"",
                "rw      = \"randrw\"\nrwmixread = 150",
            ),
            LineOf("rwmixread"),
            "job.async.rwmixread",
            "at most 100",
        ),
        case(
            "size beyond capacity",
            with("numjobs = 1", "size = \"1TiB\""),
            LineOf("1TiB"),
            "job.async.size",
            "capacity",
        ),
        case(
            "unknown hint",
            with("numjobs = 1", "hint = \"maybe\""),
            LineOf("maybe"),
            "job.async.hint",
            "\"urgent\", \"barrier\" or \"none\"",
        ),
        case(
            "thinktime_iotime without thinktime",
            with("numjobs = 1", "numjobs = 1\nthinktime_iotime = \"1ms\""),
            LineOf("thinktime_iotime"),
            "job.async.thinktime_iotime",
            "only applies with thinktime",
        ),
        case(
            "an unknown thinktime_blocks_type",
            with("numjobs = 1", "numjobs = 1\nthinktime = \"5us\"\nthinktime_blocks_type = \"never\""),
            LineOf("thinktime_blocks_type"),
            "job.async.thinktime_blocks_type",
            "\"complete\" or \"issue\"",
        ),
        case(
            "caps per direction on a job of one direction",
            with("numjobs = 1", "numjobs = 1\nrate_iops = \"1000,500\""),
            LineOf("rate_iops"),
            "job.async.rate_iops",
            "applies to a job that reads and writes",
        ),
        case(
            "caps per direction capping neither",
            with("numjobs = 1", "numjobs = 1\nrate_iops = \",\"").replace(
                "rw      = \"randread\"\nbs      = \"4k\"\niodepth = 16",
                "rw      = \"randrw\"\nbs      = \"4k\"\niodepth = 16",
            ),
            LineOf("rate_iops"),
            "job.async.rate_iops",
            "caps neither reads nor writes",
        ),
        case(
            "a zero cap per direction",
            with("numjobs = 1", "numjobs = 1\nrate = \"0,1m\"").replace(
                "rw      = \"randread\"\nbs      = \"4k\"\niodepth = 16",
                "rw      = \"randrw\"\nbs      = \"4k\"\niodepth = 16",
            ),
            LineOf("rate = "),
            "job.async.rate",
            "a cap must be positive",
        ),
        case(
            "a cap for trims",
            with("numjobs = 1", "numjobs = 1\nrate_iops = \"10,10,10\"").replace(
                "rw      = \"randread\"\nbs      = \"4k\"\niodepth = 16",
                "rw      = \"randrw\"\nbs      = \"4k\"\niodepth = 16",
            ),
            LineOf("rate_iops"),
            "job.async.rate_iops",
            "the model has no trims",
        ),
        case(
            "a Poisson byte cap under one request a second",
            with("numjobs = 1", "numjobs = 1\nrate = 2048\nrate_process = \"poisson\""),
            LineOf("rate = "),
            "job.async.rate",
            "fio divides by zero",
        ),
        case(
            "a floor above the cap",
            with("numjobs = 1", "numjobs = 1\nrate_iops = 500\nrate_iops_min = 1000"),
            LineOf("rate_iops_min"),
            "job.async.rate_iops_min",
            "minimum rate exceeds rate",
        ),
        case(
            "ratecycle without a floor",
            with("numjobs = 1", "numjobs = 1\nratecycle = \"500ms\""),
            LineOf("ratecycle"),
            "job.async.ratecycle",
            "only applies with ratemin or rate_iops_min",
        ),
        case(
            "two floors",
            with("numjobs = 1", "numjobs = 1\nrate_iops_min = 10\nratemin = \"1m\""),
            LineOf("ratemin"),
            "job.async.ratemin",
            "give ratemin or rate_iops_min, not both",
        ),
        case(
            "passes without io_size",
            with("numjobs = 1", "numjobs = 1\npass_size = \"64k\""),
            LineOf("pass_size"),
            "job.async.pass_size",
            "only applies with io_size",
        ),
        case(
            "passes of nothing",
            with(
                "numjobs = 1",
                "numjobs = 1\nsize = \"1m\"\nio_size = \"100k\"\npass_size = 0",
            ),
            LineOf("pass_size"),
            "job.async.pass_size",
            "must be positive",
        ),
        case(
            "a pass larger than the file",
            with(
                "numjobs = 1",
                "numjobs = 1\nsize = \"1m\"\nio_size = \"4m\"\npass_size = \"2m\"",
            ),
            LineOf("pass_size"),
            "job.async.pass_size",
            "must be between the largest block size",
        ),
        case(
            "a pass smaller than a block",
            with(
                "numjobs = 1",
                "numjobs = 1\nsize = \"1m\"\nio_size = \"4k\"\npass_size = \"1k\"",
            ),
            LineOf("pass_size"),
            "job.async.pass_size",
            "must be between the largest block size",
        ),
        case(
            "a byte limit without passes",
            with(
                "numjobs = 1",
                "numjobs = 1\nio_size = \"1m\"\nbyte_limit = \"2m\"",
            ),
            LineOf("byte_limit"),
            "job.async.byte_limit",
            "only applies with pass_size",
        ),
        case(
            "a byte limit below the job's bytes",
            with(
                "numjobs = 1",
                "numjobs = 1\nsize = \"1m\"\nio_size = \"2m\"\npass_size = \"1m\"\nbyte_limit = \"1m\"",
            ),
            LineOf("byte_limit"),
            "job.async.byte_limit",
            "must be at least io_size",
        ),
        case(
            "passes offloaded",
            with(
                "numjobs = 1",
                "numjobs = 1\nio_size = \"1m\"\npass_size = \"1m\"\nsubmit_mode = \"offload\"",
            ),
            LineOf("pass_size"),
            "job.async.pass_size",
            "passes over the file",
        ),
        case(
            "a floor offloaded",
            with("numjobs = 1", "numjobs = 1\nrate_iops_min = 10\nsubmit_mode = \"offload\""),
            LineOf("rate_iops_min"),
            "job.async.rate_iops_min",
            "a floor on the rate with submit_mode",
        ),
        case(
            "a floor per direction on a reader",
            with("numjobs = 1", "numjobs = 1\nrate_iops_min = \"10,\""),
            LineOf("rate_iops_min"),
            "job.async.rate_iops_min",
            "applies to a job that reads and writes",
        ),
        case(
            "rate_ign_think without a rate",
            with("numjobs = 1", "numjobs = 1\nthinktime = \"5us\"\nrate_ign_think = true"),
            LineOf("rate_ign_think"),
            "job.async.rate_ign_think",
            "only applies with thinktime and rate or rate_iops",
        ),
        case(
            "offload on io_uring",
            with("numjobs = 1", "engine_x = 0").replace(
                "engine  = \"libaio\"\nrw      = \"randread\"",
                "engine  = \"io_uring\"\nrw      = \"randread\"\nsubmit_mode = \"offload\"",
            ).replace("engine_x = 0", "numjobs = 1"),
            LineOf("submit_mode"),
            "job.async.submit_mode",
            "FIO_NO_OFFLOAD",
        ),
        case(
            "an unknown submit_mode",
            with("numjobs = 1", "numjobs = 1\nsubmit_mode = \"later\""),
            LineOf("submit_mode"),
            "job.async.submit_mode",
            "\"inline\" or \"offload\"",
        ),
        case(
            "offload with think time",
            with("numjobs = 1", "numjobs = 1\nsubmit_mode = \"offload\"\nthinktime = \"10us\""),
            LineOf("thinktime"),
            "job.async.thinktime",
            "think time with submit_mode = \"offload\" is not modelled",
        ),
        case(
            "offload with batches",
            with("batch   = 1", "batch   = 4\nsubmit_mode = \"offload\""),
            LineOf("batch   = 4"),
            "job.async.batch",
            "each worker submits and reaps one request at a time",
        ),
        case(
            "too many offload workers",
            with("numjobs = 1", "numjobs = 4096\nsubmit_mode = \"offload\"")
                .replace("iodepth = 16", "iodepth = 17"),
            LineOf("iodepth"),
            "job.async.iodepth",
            "69632 in all, at most 65536",
        ),
        case(
            "sqpoll on libaio",
            with("numjobs = 1", "numjobs = 1\nsqpoll = true"),
            LineOf("sqpoll"),
            "job.async.sqpoll",
            "io_uring's (IORING_SETUP_SQPOLL)",
        ),
        case(
            "sqpoll_cpu without sqpoll",
            with("numjobs = 1", "numjobs = 1\nsqpoll_cpu = 0"),
            LineOf("sqpoll_cpu"),
            "job.async.sqpoll_cpu",
            "set sqpoll = true",
        ),
        case(
            "sqpoll_cpu beyond the host",
            with("numjobs = 1", "engine_x = 0").replace(
                "engine  = \"libaio\"\nrw      = \"randread\"",
                "engine  = \"io_uring\"\nrw      = \"randread\"\nsqpoll = true",
            ).replace("engine_x = 0", "sqpoll_cpu = 9"),
            LineOf("sqpoll_cpu"),
            "job.async.sqpoll_cpu",
            "must be below host.cores",
        ),
        case(
            "sqpoll with flow control",
            with("numjobs = 1", "engine_x = 0").replace(
                "engine  = \"libaio\"\nrw      = \"randread\"",
                "engine  = \"io_uring\"\nrw      = \"randread\"\nsqpoll = true",
            ).replace("engine_x = 0", "flow = 2"),
            LineOf("flow"),
            "job.async.flow",
            "flow control with sqpoll is not modelled",
        ),
        case(
            "sqpoll on buffered io_uring",
            with("numjobs = 1", "engine_x = 0").replace(
                "engine  = \"libaio\"\nrw      = \"randread\"",
                "engine  = \"io_uring\"\nrw      = \"randread\"\nsqpoll = true",
            ).replace("engine_x = 0", "direct = false"),
            LineOf("direct"),
            "job.async.direct",
            "buffered io_uring with sqpoll is not modelled",
        ),
        case(
            "nowait on libaio",
            with("numjobs = 1", "nowait = true"),
            LineOf("nowait"),
            "job.async.nowait",
            "pvsync2",
        ),
        case(
            "nowait on a buffered call",
            with(
                "engine = \"psync\"",
                "engine = \"pvsync2\"\nnowait = true\ndirect = false",
            ),
            LineOf("nowait"),
            "job.sync.nowait",
            "RWF_NOWAIT on a buffered call is not modelled",
        ),
        case(
            "sync on a job that only reads",
            with(
                "engine = \"psync\"",
                "engine = \"psync\"\ndirect = false\nsync = \"sync\"",
            ),
            LineOf("sync = \"sync\""),
            "job.sync.sync",
            "applies to writes, and the job only reads",
        ),
        case(
            "sync on direct writes",
            with(
                "engine = \"psync\"\nrw     = \"randread\"",
                "engine = \"psync\"\nrw     = \"randwrite\"\nsync = \"dsync\"",
            ),
            LineOf("sync = \"dsync\""),
            "job.sync.sync",
            "on direct writes changes nothing the model runs",
        ),
        case(
            "end_fsync on a job that only reads",
            with(
                "engine = \"psync\"",
                "engine = \"psync\"\ndirect = false\nend_fsync = true",
            ),
            LineOf("end_fsync = true"),
            "job.sync.end_fsync",
            "applies to a job that writes, and this one only reads",
        ),
        case(
            "end_fsync on direct writes",
            with(
                "engine = \"psync\"\nrw     = \"randread\"",
                "engine = \"psync\"\nrw     = \"randwrite\"\nend_fsync = true",
            ),
            LineOf("end_fsync = true"),
            "job.sync.end_fsync",
            "a direct job's final fsync finds no dirty pages",
        ),
        case(
            "end_fsync on a job without an end",
            with(
                "engine = \"psync\"\nrw     = \"randread\"",
                "engine = \"psync\"\nrw     = \"randwrite\"\ndirect = false\nend_fsync = true",
            ),
            LineOf("end_fsync = true"),
            "job.sync.end_fsync",
            "needs an end of the job's",
        ),
        case(
            "end_fsync in a run that does not wait for it",
            with(
                "engine = \"psync\"\nrw     = \"randread\"",
                "engine = \"psync\"\nrw     = \"randwrite\"\ndirect = false\n\
                 io_size = \"1m\"\nend_fsync = true",
            ),
            LineOf("end_fsync = true"),
            "job.sync.end_fsync",
            "needs run_to_end = true",
        ),
        case(
            "end_fsync not a boolean",
            with(
                "engine = \"psync\"\nrw     = \"randread\"",
                "engine = \"psync\"\nrw     = \"randwrite\"\ndirect = false\nend_fsync = 1",
            ),
            LineOf("end_fsync = 1"),
            "job.sync.end_fsync",
            "",
        ),
        case(
            "an unknown sync mode",
            with(
                "engine = \"psync\"",
                "engine = \"psync\"\ndirect = false\nsync = \"fsync\"",
            ),
            LineOf("sync = \"fsync\""),
            "job.sync.sync",
            "must be one of \"none\", \"sync\" or \"dsync\"",
        ),
        case(
            "io key on a cpu job",
            with("engine = \"psync\"", "kind = \"cpu\""),
            LineOf("rw     = \"randread\""),
            "job.sync.rw",
            "not a key of a cpu job",
        ),
        case(
            "negative seed",
            with("seed     = 1", "seed     = -1"),
            LineOf("seed"),
            "seed",
            "must be a whole number from 0 to 18446744073709551615 (got -1)",
        ),
        case(
            "unknown emu key",
            format!("{BASE}\n[emu]\nbogus = 1\n"),
            LineOf("bogus"),
            "emu.bogus",
            "unknown key (valid keys: backend, path, device_core, realtime, idle_delivery)",
        ),
        case(
            "bad emu idle_delivery",
            format!("{BASE}\n[emu]\nidle_delivery = \"nobody\"\n"),
            LineOf("nobody"),
            "emu.idle_delivery",
            "must be one of \"waiter\" or \"handler\" (got \"nobody\")",
        ),
        case(
            "bad emu backend",
            format!("{BASE}\n[emu]\nbackend = \"floppy\"\n"),
            LineOf("floppy"),
            "emu.backend",
            "must be one of \"synthetic\" or \"io_uring\" (got \"floppy\")",
        ),
        case(
            "device not a table",
            with("[device]\nmodel = \"optane-p4800x\"\n", "device = 3\n"),
            LineOf("device = 3"),
            "device",
            "must be a table",
        ),
        case(
            "queue depth beyond the NVMe limit",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nqueue_depth = 4294967295",
            ),
            LineOf("queue_depth"),
            "device.queue_depth",
            "must be at most 65536",
        ),
        case(
            "iodepth beyond the NVMe limit",
            with("iodepth = 16", "iodepth = 4294967295"),
            LineOf("iodepth = 4294967295"),
            "job.async.iodepth",
            "must be at most 65536 (got 4294967295)",
        ),
        case(
            "parallel units beyond the limit",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nparallel_units = 4294967295",
            ),
            LineOf("parallel_units"),
            "device.parallel_units",
            "must be at most 65536",
        ),
        case(
            "cores beyond the limit",
            with("cores = 2", "cores = 100000"),
            LineOf("cores = 100000"),
            "host.cores",
            "must be at most 4096 (got 100000)",
        ),
        case(
            "queues beyond the limit",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nqueues = 5000",
            ),
            LineOf("queues"),
            "device.queues",
            "must be at most 4096",
        ),
        case(
            "too many threads in all",
            {
                // The last one is spaced apart to be found by its text.
                let cpu_job = |i: usize| {
                    let eq = if i == 15 { "  =" } else { " =" };
                    format!("[[job]]\nname = \"burn{i}\"\nkind = \"cpu\"\nnumjobs{eq} 4096\n")
                };
                let extra: String = (0..16).map(cpu_job).collect();
                format!("{BASE}\n{extra}")
            },
            LineOf("numjobs  = 4096"),
            "job.burn15.numjobs",
            "more than 65536",
        ),
        case(
            "negative device count, serde's u32",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nparallel_units = -1",
            ),
            LineOf("parallel_units"),
            "device.parallel_units",
            "must be a whole number from 0 to 4294967295 (got -1)",
        ),
        case(
            "unknown jitter distribution",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\njitter = \"cauchy\"",
            ),
            LineOf("cauchy"),
            "device.jitter",
            "must be one of \"none\", \"normal\", \"lognormal\" or \"exponential\" \
             (got \"cauchy\")",
        ),
        case(
            "profile duration of the wrong type",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nirq_latency = 1.5",
            ),
            LineOf("irq_latency"),
            "device.irq_latency",
            "must be a duration with a unit, such as \"6us\" (got a float)",
        ),
        case(
            "profile duration without a unit",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nirq_latency = 500",
            ),
            LineOf("irq_latency"),
            "device.irq_latency",
            "bad duration: '500' has no unit: write \"500ns\", \"500us\", \"500ms\" or \"500s\"",
        ),
        case(
            "negative profile duration",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nirq_latency = -5",
            ),
            LineOf("irq_latency"),
            "device.irq_latency",
            "must not be negative (got -5)",
        ),
        case(
            "profile duration with a bad unit says so",
            with("cores = 2", "cores = 2\nsyscall = \"fast\""),
            LineOf("syscall"),
            "host.syscall",
            "bad duration: 'fast'",
        ),
        case(
            "device time beyond an hour",
            with(
                "model = \"optane-p4800x\"",
                "model = \"optane-p4800x\"\nread.base = \"7200s\"",
            ),
            LineOf("read.base"),
            "device.read.base",
            "must be at most 3600s (got 7200s)",
        ),
        case(
            "host cost beyond an hour",
            with("cores = 2", "cores = 2\nirq_fixed = \"3601s\""),
            LineOf("irq_fixed"),
            "host.irq_fixed",
            "must be at most 3600s",
        ),
        case(
            "zero CFS latency",
            with("cores = 2", "cores = 2\nsched_latency = \"0ns\""),
            LineOf("sched_latency"),
            "host.sched_latency",
            "must be longer than zero",
        ),
        case(
            "zero CFS minimum granularity",
            with("cores = 2", "cores = 2\nsched_min_granularity = 0"),
            LineOf("sched_min_granularity"),
            "host.sched_min_granularity",
            "must be longer than zero",
        ),
        case(
            "a host key that was renamed names its replacement",
            with("cores = 2", "cores = 2\nsync_submit = \"1us\""),
            LineOf("sync_submit"),
            "host.sync_submit",
            "renamed to direct_io + block_submit",
        ),
        case(
            "batch_complete_max below batch_complete_min",
            with(
                "batch_complete_min = 1",
                "batch_complete_min = 4\nbatch_complete_max = 2",
            ),
            LineOf("batch_complete_max"),
            "job.async.batch_complete_max",
            "must be at least batch_complete_min = 4 (got 2)",
        ),
        case(
            "zero poll iteration",
            with("cores = 2", "cores = 2\npoll_iteration = \"0us\""),
            LineOf("poll_iteration"),
            "host.poll_iteration",
            "must be longer than zero",
        ),
        case(
            "think of more than an hour",
            with("numjobs = 1", "think = \"3601s\""),
            LineOf("think"),
            "job.async.think",
            "must be at most 3600s",
        ),
        case(
            "hybrid-poll sleep beyond an hour",
            with(
                "kind = \"vic\"\ncif_threshold = 4",
                "kind = \"hybrid-poll\"\nsleep = \"4000s\"",
            ),
            LineOf("sleep"),
            "strategy.vic.sleep",
            "must be at most 3600s",
        ),
        case(
            "integer job key of the wrong type",
            with("iodepth = 16", "iodepth = \"deep\""),
            LineOf("iodepth = \"deep\""),
            "job.async.iodepth",
            "must be a whole number from 1 to 65536 (got a string)",
        ),
        case(
            "seed beyond TOML's integers",
            with("seed     = 1", "seed     = 18446744073709551615"),
            LineOf("seed"),
            "seed",
            "write a larger seed as a string",
        ),
        case(
            "seed string that is no number",
            with("seed     = 1", "seed     = \"lucky\""),
            LineOf("seed"),
            "seed",
            "must be a whole number from 0 to 18446744073709551615 (got \"lucky\")",
        ),
        set_case(
            "--set a page-cache time past an hour",
            &["host.page_cache.expire=3601s"],
            "host.page_cache.expire",
            "must be at most 3600s (got 3601s)",
        ),
        set_case(
            "--set a strategy's time past an hour",
            &["strategy.cint.delta=3601s"],
            "strategy.cint.delta",
            "must be at most 3600s (got 3601s)",
        ),
        set_case(
            "--set a quoted number",
            &["job.async.iodepth=\"16\""],
            "job.async.iodepth",
            "must be a whole number from 1 to 65536 (got a string)",
        ),
        set_case(
            "--set seed beyond u64",
            &["seed=18446744073709551616"],
            "seed",
            "must be a whole number from 0 to 18446744073709551615",
        ),
        set_case(
            "--set an integer beyond TOML's range",
            &["job.async.iodepth=99999999999999999999"],
            "job.async.iodepth",
            "must be at most 65536 (got 99999999999999999999)",
        ),
        set_case(
            "--set zero CFS latency",
            &["host.sched_latency=0ns"],
            "host.sched_latency",
            "must be longer than zero",
        ),
        set_case(
            "--set of a missing job",
            &["job.nosuch.iodepth=4"],
            "job.nosuch.iodepth",
            "no [[job]] named \"nosuch\"",
        ),
        set_case(
            "--set out of range",
            &["job.async.iodepth=0"],
            "job.async.iodepth",
            "must be at least 1 (got 0)",
        ),
        set_case(
            "--set of an unknown device key",
            &["device.warp_drive=9"],
            "device.warp_drive",
            "unknown key",
        ),
        set_case("--set without =", &["seed"], "", "expected KEY=VALUE"),
        set_case(
            "--set bad unit",
            &["strategy.cint.delta=4 lightyears"],
            "strategy.cint.delta",
            "bad duration",
        ),
        set_case(
            "--set into a scalar",
            &["name.first=x"],
            "name.first",
            "not a table",
        ),
        case(
            "task group shares below Linux's MIN_SHARES",
            format!("{BASE}[[sched_group]]\nname = \"kv\"\nshares = 1\n"),
            LineOf("shares = 1"),
            "sched_group.kv.shares",
            "must be",
        ),
        case(
            "an unknown key in a task group",
            format!("{BASE}[[sched_group]]\nname = \"kv\"\nweight = 10\n"),
            LineOf("weight = 10"),
            "sched_group.kv.weight",
            "unknown key",
        ),
        case(
            "an empty task group name on a job",
            with("cpu    = 1\n", "cpu    = 1\nsched_group = \"\"\n"),
            LineOf("sched_group = \"\""),
            "job.sync.sched_group",
            "must be a group name",
        ),
        set_case(
            "--set a task group name with a dot",
            &["job.sync.sched_group=g.h"],
            "job.sync.sched_group",
            "without '.'",
        ),
        set_case(
            "--set a task group that is not a string",
            &["job.sync.sched_group=3"],
            "job.sync.sched_group",
            "string",
        ),
        set_case(
            "--set a key of another kind",
            &["strategy.adaptive.barrier=strict"],
            "strategy.adaptive.barrier",
            "belongs to \"cinterrupts\"",
        ),
    ]
}

#[test]
fn every_bad_input_gets_one_line_naming_file_line_and_key() {
    let cases = cases();
    assert!(cases.len() >= 25, "at least 25 kinds of bad input");
    for c in &cases {
        let sets: Vec<String> = c.sets.iter().map(|s| s.to_string()).collect();
        let err = match load_str(&c.text, FILE, &sets) {
            Ok(_) => panic!("{}: accepted", c.what),
            Err(e) => e,
        };
        let msg = err.to_string();
        let location = match c.at {
            At::LineOf(needle) => format!("{FILE}:{}: ", line_of(&c.text, needle)),
            At::Above(needle) => format!("{FILE}:{}: ", line_of(&c.text, needle) - 1),
            At::Line(n) => format!("{FILE}:{n}: "),
            At::Set(arg) => format!("{FILE}: --set {arg}: "),
        };
        let prefix = if c.key.is_empty() {
            location
        } else {
            format!("{location}{}: ", c.key)
        };
        assert!(
            msg.starts_with(&prefix),
            "{}: expected prefix {prefix:?}, got {msg:?}",
            c.what
        );
        assert!(
            msg.contains(c.says),
            "{}: expected {:?} in {msg:?}",
            c.what,
            c.says
        );
        assert!(!msg.contains('\n'), "{}: not one line: {msg:?}", c.what);
        assert_eq!(err.key, c.key, "{}", c.what);
    }
}

#[test]
fn the_base_is_valid() {
    load_str(BASE, FILE, &[]).expect("the base scenario loads");
}

/// The whole u64 range of seeds, the same way from the file, `--set` and
/// (in the CLI) `--seed`; a resolved scenario with a large seed writes it
/// back in a form that loads again.
#[test]
fn seeds_take_the_full_u64_range() {
    let max = u64::MAX.to_string();
    let from_set = load_str(BASE, FILE, &[format!("seed={max}")]).expect("--set takes u64::MAX");
    assert_eq!(from_set.seed, u64::MAX);
    let in_file = with("seed     = 1", &format!("seed     = \"{max}\""));
    assert_eq!(
        load_str(&in_file, FILE, &[]).expect("a string seed").seed,
        u64::MAX
    );
    let big = with("seed     = 1", "seed     = 9223372036854775807");
    assert_eq!(load_str(&big, FILE, &[]).unwrap().seed, i64::MAX as u64);
    let again = load_str(&cint_scenario::to_toml(&from_set), FILE, &[]).expect("reloads");
    assert_eq!(again, from_set);
}

/// Task groups: named on jobs (a group first named there has Linux's
/// default 1024 shares), declared with their shares, and written back by
/// the resolved scenario in a form that loads again.
#[test]
fn task_groups_load_and_write_back() {
    let text = format!(
        "{}[[sched_group]]\nname = \"b\"\nshares = 4096\n",
        with("cpu    = 1\n", "cpu    = 1\nsched_group = \"a\"\n")
    );
    let sc = load_str(&text, FILE, &["job.async.sched_group=b".to_string()]).expect("valid");
    let g = &sc.sched_groups;
    assert_eq!(g.groups.len(), 2);
    assert_eq!((g.groups[0].name.as_str(), g.groups[0].shares), ("b", 4096));
    assert_eq!((g.groups[1].name.as_str(), g.groups[1].shares), ("a", 1024));
    assert_eq!((g.of_job(0), g.of_job(1)), (Some(0), Some(1)));
    let again = load_str(&cint_scenario::to_toml(&sc), FILE, &[]).expect("reloads");
    assert_eq!(again.sched_groups, sc.sched_groups);
    assert!(load_str(BASE, FILE, &[]).unwrap().sched_groups.is_empty());
}

/// A file that is not UTF-8 is refused at the line of its first bad byte.
#[test]
fn a_file_that_is_not_utf8_names_the_line_of_the_first_bad_byte() {
    let dir = std::env::temp_dir().join(format!("cint-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("latin1.toml");
    let mut bytes = b"name = \"x\"\nseed = 1\n".to_vec();
    bytes.extend_from_slice(b"duration = \"2\xb5s\"\n");
    std::fs::write(&path, &bytes).unwrap();
    let err = cint_scenario::load_file(&path, &[]).expect_err("not UTF-8");
    std::fs::remove_dir_all(&dir).ok();
    let msg = err.to_string();
    let prefix = format!(
        "{}:3: duration: not UTF-8 text: byte 0xb5 at column 14",
        path.display()
    );
    assert!(msg.starts_with(&prefix), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert_eq!(err.line(), Some(3));
}
