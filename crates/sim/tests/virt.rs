//! The virtual-machine layer (docs/VIRT.md): the ESX-like path against
//! the vIC paper's Table 2 (the one fit of the `esx-like` hypervisor
//! profile and the `cached-array` device), its mechanisms one at a time,
//! determinism, and the refusals of bad input.
//!
//! `cargo test --release -p cint-sim --test virt -- --nocapture` prints
//! the table of targets and what the model gives.

use cint_report::{RunResult, StrategyResult, VirtResult};
use cint_scenario::Scenario;

fn scenario_path(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn load(name: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    cint_scenario::load_file(std::path::Path::new(&scenario_path(name)), &sets)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run(name: &str, sets: &[&str]) -> RunResult {
    cint_sim::run(&load(name, sets)).unwrap_or_else(|e| panic!("{name} {sets:?}: {e}"))
}

fn by_name<'a>(r: &'a RunResult, name: &str) -> &'a StrategyResult {
    r.results
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("strategy {name} missing"))
}

fn virt<'a>(r: &'a RunResult, name: &str) -> &'a VirtResult {
    by_name(r, name)
        .virt
        .as_ref()
        .unwrap_or_else(|| panic!("strategy {name} has no virt figures"))
}

/// One row of the vIC paper's Table 2 (4 KiB reads, one worker, cached
/// LUN, ESX at 2.4 GHz): outstanding I/Os, the delivery ratio vIC chose,
/// then vIC's IOPS, cycles per I/O and guest interrupts/s, then the
/// baseline's.
struct Row {
    oio: u32,
    r_hat: f64,
    iops: f64,
    cycles: f64,
    ints: f64,
    base_iops: f64,
    base_cycles: f64,
    base_ints: f64,
}

const TABLE_2: [Row; 4] = [
    Row {
        oio: 8,
        r_hat: 4.0 / 5.0,
        iops: 31_200.0,
        cycles: 82_600.0,
        ints: 49_000.0,
        base_iops: 30_500.0,
        base_cycles: 84_200.0,
        base_ints: 47_000.0,
    },
    Row {
        oio: 16,
        r_hat: 2.0 / 3.0,
        iops: 38_900.0,
        cycles: 74_800.0,
        ints: 58_000.0,
        base_iops: 38_400.0,
        base_cycles: 77_000.0,
        base_ints: 60_000.0,
    },
    Row {
        oio: 32,
        r_hat: 1.0 / 3.0,
        iops: 48_300.0,
        cycles: 68_000.0,
        ints: 69_000.0,
        base_iops: 46_400.0,
        base_cycles: 70_500.0,
        base_ints: 74_000.0,
    },
    Row {
        oio: 64,
        r_hat: 1.0 / 6.0,
        iops: 53_100.0,
        cycles: 64_000.0,
        ints: 34_000.0,
        base_iops: 52_900.0,
        base_cycles: 78_400.0,
        base_ints: 113_000.0,
    },
];

/// Targets the fitted model does not meet, each with the reason no
/// defensible mechanism closes it (docs/results/virtualization.md has the
/// evidence). Printed, not failed; any other miss fails.
const KNOWN_MISSES: &[(&str, &str)] = &[
    (
        "OIO 16 baseline IOPS",
        "the paper's latency grows by about 18.5 us per outstanding I/O from 8 I/Os on (262, \
         417, 690, 1210 us), a queue at the array already at 30 K IOPS; the array of \
         parallel units with a fixed and an exponential part saturates more sharply, so 16 \
         I/Os already reach the guest core's limit",
    ),
    ("OIO 16 vic IOPS", "as the baseline at 16 outstanding I/Os"),
    (
        "OIO 8 vic cycles/IO",
        "the paper's vIC at 8 outstanding I/Os injects as many interrupts as the baseline (49 \
         K/s against 47 K/s, more than one per I/O); the model's vIC at R = 4/5 with the 100 \
         us IPI threshold lets completions wait for the next guest exit, so it injects half \
         as many and saves their cycles",
    ),
    (
        "guest interrupts/s",
        "the paper counts more guest interrupts than I/Os (baseline 1.5 to 2.1 per I/O), \
         which one virtual interrupt per delivery cannot produce; the guest's other \
         interrupt sources are not modelled",
    ),
    (
        "vic/baseline interrupts",
        "the paper's vIC injects about as many interrupts as the baseline up to 32 \
         outstanding I/Os; in the model the IPI threshold and the guest's exits already \
         coalesce there (see OIO 8 vic cycles/IO)",
    ),
];

struct Check {
    failures: Vec<String>,
}

impl Check {
    fn within(&mut self, what: &str, known: &str, got: f64, target: f64, band: (f64, f64)) {
        let ratio = got / target;
        let ok = ratio >= band.0 && ratio <= band.1;
        let listed = KNOWN_MISSES.iter().find(|(name, _)| *name == known);
        let verdict = match (ok, listed) {
            (true, _) => "ok",
            (false, Some(_)) => "MISS (known)",
            (false, None) => "DRIFT",
        };
        println!("{what:<40} paper {target:>9.3}  model {got:>9.3}  x{ratio:>5.2}  {verdict}");
        if !ok && listed.is_none() {
            self.failures.push(format!(
                "{what}: model {got:.3} against the paper's {target:.3} (x{ratio:.2}, band \
                 x{:.2}..x{:.2})",
                band.0, band.1
            ));
        }
    }
}

/// Absolute values within 20%, ratios within x1.25 (the issue's bands).
const ABSOLUTE: (f64, f64) = (0.8, 1.2);
const RATIO: (f64, f64) = (0.8, 1.25);

#[test]
fn esx_like_against_the_vic_papers_table_2() {
    let mut check = Check {
        failures: Vec::new(),
    };
    for row in &TABLE_2 {
        let oio = row.oio;
        let depth = format!("job.iometer.iodepth={oio}");
        let r = run("vic-iometer-4k.toml", &[&depth]);
        let (base, vic) = (virt(&r, "baseline"), virt(&r, "vic"));
        let iops = |s: &str| by_name(&r, s).jobs[0].iops;
        let name = |what: &str| format!("OIO {oio} {what}");
        // (what, the known-miss entry it falls under, model, paper, band).
        let own = |what: &str| (name(what), name(what));
        let checks = [
            (
                own("baseline IOPS"),
                iops("baseline"),
                row.base_iops,
                ABSOLUTE,
            ),
            (own("vic IOPS"), iops("vic"), row.iops, ABSOLUTE),
            (
                own("baseline cycles/IO"),
                base.cycles_per_io,
                row.base_cycles,
                ABSOLUTE,
            ),
            (
                own("vic cycles/IO"),
                vic.cycles_per_io,
                row.cycles,
                ABSOLUTE,
            ),
            (
                own("vic delivery ratio"),
                vic.delivery_ratio,
                row.r_hat,
                ABSOLUTE,
            ),
            (
                (name("vic/baseline IOPS"), "vic/baseline IOPS".into()),
                iops("vic") / iops("baseline"),
                row.iops / row.base_iops,
                RATIO,
            ),
            (
                (
                    name("vic/baseline cycles/IO"),
                    "vic/baseline cycles/IO".into(),
                ),
                vic.cycles_per_io / base.cycles_per_io,
                row.cycles / row.base_cycles,
                RATIO,
            ),
            (
                (
                    name("vic/baseline interrupts"),
                    "vic/baseline interrupts".into(),
                ),
                vic.virtual_interrupts_per_s / base.virtual_interrupts_per_s,
                row.ints / row.base_ints,
                RATIO,
            ),
            (
                (
                    name("baseline guest interrupts/s"),
                    "guest interrupts/s".into(),
                ),
                base.virtual_interrupts_per_s,
                row.base_ints,
                ABSOLUTE,
            ),
            (
                (name("vic guest interrupts/s"), "guest interrupts/s".into()),
                vic.virtual_interrupts_per_s,
                row.ints,
                ABSOLUTE,
            ),
        ];
        for ((what, known), got, target, band) in checks {
            check.within(&what, &known, got, target, band);
        }
        // Mechanisms the table rests on, whatever the bands: the baseline
        // delivers every completion, and vIC never injects more.
        assert_eq!(base.delivery_ratio, 1.0, "OIO {oio}");
        assert!(
            vic.virtual_interrupts_per_s < base.virtual_interrupts_per_s,
            "OIO {oio}: vIC injects fewer virtual interrupts"
        );
    }
    assert!(
        check.failures.is_empty(),
        "calibration drifted:\n{}",
        check.failures.join("\n")
    );
}

/// The IPI threshold is the only thing between a posted completion and
/// an IPI: at 0 every physical interrupt that finds the monitor idle
/// sends one; at 500 us the completions wait for the guest's exits.
#[test]
fn the_ipi_threshold_trades_ipis_for_waiting() {
    let at = |threshold: &str| {
        let set = format!("strategy.vic.ipi_threshold={threshold}");
        let r = run("vic-iometer-4k.toml", &["job.iometer.iodepth=8", &set]);
        (
            virt(&r, "vic").ipis_per_s,
            by_name(&r, "vic").jobs[0].lat_ns.mean,
        )
    };
    let (ipis_0, lat_0) = at("0us");
    let (ipis_500, lat_500) = at("500us");
    assert!(ipis_0 > 5.0 * ipis_500.max(1.0), "{ipis_0} vs {ipis_500}");
    assert!(
        lat_500 > lat_0,
        "waiting for exits costs latency: {lat_0} vs {lat_500}"
    );
}

/// Without IPIs the monitor's periodic timer is what delivers a held
/// completion when the guest makes no exit: a longer timer, a slower
/// closed loop at depth 1 once the IPI threshold keeps IPIs away.
#[test]
fn the_monitor_timer_bounds_how_long_a_completion_waits() {
    let at = |timer: &str| {
        let set = format!("hypervisor.monitor_timer={timer}");
        let r = run(
            "vic-iometer-4k.toml",
            &[
                "job.iometer.iodepth=1",
                "strategy.vic.ipi_threshold=1s",
                "strategy.vic.cif_threshold=1",
                &set,
            ],
        );
        by_name(&r, "vic").jobs[0].lat_ns.mean
    };
    let short = at("100us");
    let long = at("2ms");
    assert!(long > 2.0 * short, "{short} vs {long}");
}

#[test]
fn guests_run_deterministically_and_bare_metal_has_no_virt_figures() {
    let sc = load("vic-iometer-4k.toml", &["job.iometer.iodepth=16"]);
    let a = cint_report::to_json(&cint_sim::run(&sc).unwrap()).unwrap();
    let b = cint_report::to_json(&cint_sim::run(&sc).unwrap()).unwrap();
    assert_eq!(a, b);
    assert!(a.contains("\"cycles_per_io\""));
    let bare = cint_sim::run(&load("sync-qd1.toml", &[])).unwrap();
    assert!(bare.results.iter().all(|s| s.virt.is_none()));
    assert!(!cint_report::to_json(&bare).unwrap().contains("virt"));
}

/// A guest's I/O costs its own core the guest's part only; the
/// hypervisor's core carries the issue and the physical interrupts.
#[test]
fn every_core_pays_its_own_part() {
    let r = run("vic-iometer-4k.toml", &["job.iometer.iodepth=8"]);
    let base = by_name(&r, "baseline");
    let v = virt(&r, "baseline");
    // Cycles per I/O at least the profile's per-I/O path (issue 32 K,
    // completion 8 K, guest reap 5 K) and at most that plus a full
    // interrupt path per I/O and the host's system calls.
    assert!(
        v.cycles_per_io > 45_000.0 && v.cycles_per_io < 95_000.0,
        "{}",
        v.cycles_per_io
    );
    assert!(
        base.interrupts_per_s > 0.9 * v.guest_iops,
        "the adapter interrupts per completion"
    );
}

fn refusal(text: &str) -> String {
    refusal_with(text, &[])
}

/// The one line `cint sim` prints for `text` with `sets`: the loader's,
/// or the engine's located at the key it names.
fn refusal_with(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match cint_scenario::load_str(text, "v.toml", &sets) {
        Err(e) => e.to_string(),
        Ok(sc) => match cint_sim::run(&sc) {
            Err(e) => {
                assert!(!e.is_internal(), "{e}");
                match &e.key {
                    Some(key) => sc.refusal(key, &e.message).to_string(),
                    None => e.to_string(),
                }
            }
            Ok(_) => panic!("accepted:\n{text}"),
        },
    }
}

const GUEST: &str = r#"name = "v"
duration = "5ms"
[host]
cores = 4
[hypervisor]
model = "esx-like"
cores = [0]
[[guest]]
name = "vm"
vcpus = 1
cores = [1]
[[strategy]]
name = "vic"
kind = "vic"
[[job]]
name = "io"
guest = "vm"
engine = "libaio"
iodepth = 4
"#;

#[test]
fn the_guest_scenario_runs() {
    let sc = cint_scenario::load_str(GUEST, "v.toml", &[]).unwrap();
    let r = cint_sim::run(&sc).unwrap();
    assert!(r.results[0].jobs[0].ios > 0);
}

#[test]
fn bad_input_is_refused_in_one_line_naming_the_key() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "cores = [1]",
            "cores = [7]",
            "v.toml:11: guest.vm.cores: core 7 does not exist",
        ),
        (
            "vcpus = 1",
            "vcpus = 0",
            "v.toml:10: guest.vm.vcpus: must be at least 1",
        ),
        (
            "kind = \"vic\"",
            "kind = \"vic\"\nipi_threshold = -5",
            "v.toml:15: strategy.vic.ipi_threshold: must not be negative",
        ),
        (
            "kind = \"vic\"",
            "kind = \"vic\"\nipi_threshold = \"-5us\"",
            "v.toml:15: strategy.vic.ipi_threshold:",
        ),
        (
            "cores = [0]",
            "cores = [0]\nmonitor_timer = -1",
            "v.toml:8: hypervisor.monitor_timer: must not be negative",
        ),
        (
            "guest = \"vm\"",
            "guest = \"vm\"\ncpu = 2",
            "v.toml:18: job.io.cpu: must be below guest \"vm\"'s vcpus = 1",
        ),
        (
            "guest = \"vm\"",
            "guest = \"vm2\"",
            "v.toml:17: job.io.guest: no [[guest]] named \"vm2\"",
        ),
        (
            "iodepth = 4\n",
            "iodepth = 4\nsubmit_mode = \"offload\"\n",
            "v.toml:20: job.io.submit_mode: offloaded submission inside a guest is not modelled",
        ),
        (
            "engine = \"libaio\"\niodepth = 4\n",
            "engine = \"io_uring\"\niodepth = 4\nsqpoll = true\n",
            "v.toml:20: job.io.sqpoll: a polling submission thread inside a guest is not modelled",
        ),
        (
            "iodepth = 4\n",
            "iodepth = 4\n[[job]]\nname = \"host\"\ncpu = 2\nengine = \"io_uring\"\n\
             sqpoll = true\nsqpoll_cpu = 1\n",
            "v.toml:25: job.host.sqpoll_cpu: core 1 belongs to guest \"vm\": a host job's SQ \
             thread cannot run there",
        ),
        (
            "cores = [1]",
            "cores = [0]",
            "v.toml:11: guest.vm.cores: core 0 belongs to the hypervisor",
        ),
        (
            "iodepth = 4\n",
            "iodepth = 4\n[[job]]\nname = \"host\"\ncpu = 1\n",
            "v.toml:22: job.host.cpu: core 1 belongs to guest \"vm\"",
        ),
        (
            "iodepth = 4\n",
            "iodepth = 4\n[[job]]\nname = \"host\"\ncpus = [2, 0]\n",
            "v.toml:22: job.host.cpus: core 0 belongs to the hypervisor",
        ),
        // CFS task groups are the host's: not inside a guest, and not
        // beside a hypervisor, whose layer schedules the host's vCPUs.
        (
            "iodepth = 4\n",
            "iodepth = 4\nsched_group = \"g\"\n",
            "v.toml:20: job.io.sched_group: a job inside a guest runs under its guest kernel's",
        ),
        (
            "iodepth = 4\n",
            "iodepth = 4\n[[job]]\nname = \"host\"\ncpu = 2\nsched_group = \"g\"\n",
            "v.toml:23: job.host.sched_group: task groups beside a [hypervisor] are not modelled",
        ),
    ];
    for (from, to, expect) in cases {
        assert!(GUEST.contains(from), "{from}");
        let text = GUEST.replacen(from, to, 1);
        let e = refusal(&text);
        assert!(e.starts_with(expect), "{to}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // vic-sched needs a hypervisor; without one the simulator refuses it.
    let bare = "name = \"v\"\nduration = \"5ms\"\n[[strategy]]\nname = \"s\"\nkind = \
                \"vic-sched\"\n[[job]]\nname = \"io\"\nengine = \"libaio\"\niodepth = 4\n";
    // The engine's refusal names the key, located where it was written.
    let e = refusal(bare);
    assert!(
        e.starts_with("v.toml:5: strategy.s.kind: \"vic-sched\""),
        "{e}"
    );
    let e = refusal_with(GUEST, &["guest.vm.cores=[7]"]);
    assert!(
        e.starts_with("v.toml: --set guest.vm.cores=[7]: guest.vm.cores: core 7 does not exist"),
        "{e}"
    );
    // A guest without a hypervisor, and a polling strategy with guests.
    let e = refusal(&GUEST.replace("[hypervisor]\nmodel = \"esx-like\"\ncores = [0]\n", ""));
    assert!(
        e.contains("guest.vm.name: a guest needs a [hypervisor]"),
        "{e}"
    );
    let e = refusal(&GUEST.replace("kind = \"vic\"", "kind = \"poll\""));
    assert!(
        e.starts_with("v.toml:14: strategy.vic.kind: \"poll\" polls the host's completion queues"),
        "{e}"
    );
    // The host's flusher on the hypervisor's core, as a host job there.
    let buffered = format!(
        "{GUEST}[[job]]\nname = \"host\"\ncpu = 3\nengine = \"psync\"\nrw = \"write\"\n\
         direct = false\n"
    );
    let e = refusal(&buffered);
    assert!(
        e.starts_with("v.toml:3: host.page_cache.flusher_cpu: core 0 belongs to the hypervisor"),
        "{e}"
    );
    // A host job on a queue a guest uses: named at the key that put it
    // there.
    let shared = format!("{GUEST}[[job]]\nname = \"host\"\ncpu = 3\n");
    let e = refusal_with(&shared, &["device.queues=1"]);
    assert!(
        e.starts_with("v.toml:22: job.host.cpu: device queue 0 would serve guest \"vm\""),
        "{e}"
    );
}

/// vIC with both of its mechanisms off (a delivery ratio of 1 at any
/// depth, an IPI for every completion) is the baseline, figure for
/// figure: the layer adds nothing of its own to a policy's decisions.
#[test]
fn vic_with_its_mechanisms_off_is_the_baseline() {
    let r = run(
        "vic-iometer-4k.toml",
        &[
            "job.iometer.iodepth=32",
            "strategy.vic.cif_threshold=1048576",
            "strategy.vic.ipi_threshold=0us",
        ],
    );
    let (base, vic) = (by_name(&r, "baseline"), by_name(&r, "vic"));
    assert_eq!(base.jobs[0].ios, vic.jobs[0].ios);
    assert_eq!(base.virt, vic.virt);
}

/// A one-vCPU guest on a KVM-like hypervisor; `{JOBS}` is replaced by
/// the jobs.
const KVM_GUEST: &str = r#"name = "k"
duration = "100ms"
warmup = "10ms"
[host]
cores = 3
[hypervisor]
model = "kvm-like"
cores = [2]
[[guest]]
name = "vm"
cores = [1]
[[strategy]]
name = "none"
kind = "none"
{JOBS}"#;

const KVM_SYNC_READER: &str = "[[job]]\nname = \"io\"\nguest = \"vm\"\nengine = \"psync\"\n\
                               rw = \"randread\"\nbs = \"4k\"\n";

fn kvm_run(jobs: &str, sets: &[&str]) -> RunResult {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let text = KVM_GUEST.replace("{JOBS}", jobs);
    let sc = cint_scenario::load_str(&text, "k.toml", &sets).unwrap();
    cint_sim::run(&sc).unwrap()
}

/// Every call the back end's policy wanted went out or was suppressed by
/// the driver's `used_event`, and every call that went out was delivered
/// by one of the vCPU's states (up to the calls in flight at the window's
/// edges). A slower guest handler leaves more completions behind an
/// unhandled interrupt, so EVENT_IDX suppresses more.
#[test]
fn kvm_event_idx_suppression_is_counted() {
    let share = |r: &RunResult| {
        let k = virt(r, "none").kvm.clone().expect("kvm figures");
        let delivered = k.running_per_s + k.halt_polled_per_s + k.wakeups_per_s + k.preempted_per_s;
        let sent = k.wanted_per_s - k.event_idx_suppressed_per_s;
        assert!((sent - delivered).abs() <= 40.0, "{k:?}");
        assert!(
            (virt(r, "none").virtual_interrupts_per_s - delivered).abs() <= 40.0,
            "{k:?}"
        );
        k.event_idx_suppressed_per_s / k.wanted_per_s
    };
    let sets = ["duration=100ms", "warmup=10ms"];
    let fast = share(&run("kvm-vhost.toml", &sets));
    let slow = share(&run(
        "kvm-vhost.toml",
        &[
            "duration=100ms",
            "warmup=10ms",
            "hypervisor.guest_irq_cycles=96000",
        ],
    ));
    assert!(fast > 0.0, "{fast}");
    assert!(slow > 3.0 * fast, "fast {fast}, slow {slow}");
}

/// A synchronous reader halts its vCPU on every request. Inside the
/// halt-polling window the call needs no wake-up; with polling off every
/// call wakes the vCPU, and each request pays the wake-up on its path.
#[test]
fn kvm_halted_vcpu_pays_its_wake_up_outside_the_polling_window() {
    let polled = kvm_run(KVM_SYNC_READER, &[]);
    let woken = kvm_run(KVM_SYNC_READER, &["hypervisor.halt_poll_max=0"]);
    let kp = virt(&polled, "none").kvm.clone().unwrap();
    let kw = virt(&woken, "none").kvm.clone().unwrap();
    assert!(kp.halt_polled_per_s > 0.95 * kp.wanted_per_s, "{kp:?}");
    assert_eq!(kw.halt_polled_per_s, 0.0, "{kw:?}");
    assert!(kw.wakeups_per_s > 0.95 * kw.wanted_per_s, "{kw:?}");
    let mean = |r: &RunResult| by_name(r, "none").jobs[0].lat_ns.mean;
    // kvm-like's vcpu_wake_cycles: 24 000 at 2.4 GHz.
    let extra = mean(&woken) - mean(&polled);
    assert!((extra - 10_000.0).abs() < 1_500.0, "extra {extra} ns");
}

/// A host thread sharing the vCPU's core preempts it while the guest has
/// work: calls that find it so are held until it runs, then delivered.
#[test]
fn kvm_preempted_vcpu_gets_its_notification_when_it_runs() {
    let guest_busy = "[[job]]\nname = \"spin\"\nguest = \"vm\"\nkind = \"cpu\"\n";
    let host_busy = "[[job]]\nname = \"host\"\nkind = \"cpu\"\ncpu = 1\n";
    let alone = kvm_run(&format!("{KVM_SYNC_READER}{guest_busy}"), &[]);
    let shared = kvm_run(&format!("{KVM_SYNC_READER}{guest_busy}{host_busy}"), &[]);
    let ka = virt(&alone, "none").kvm.clone().unwrap();
    let ks = virt(&shared, "none").kvm.clone().unwrap();
    assert_eq!(ka.preempted_per_s, 0.0, "{ka:?}");
    assert!(ks.preempted_per_s > 0.0, "{ks:?}");
    // Held, not lost: the reader still completes, later on average.
    let io = |r: &RunResult| by_name(r, "none").jobs[0].clone();
    assert!(io(&shared).ios > 0);
    assert!(io(&shared).lat_ns.mean > io(&alone).lat_ns.mean);
}

#[test]
fn kvm_bad_input_is_refused_in_one_line_naming_the_key() {
    let text = KVM_GUEST.replace("{JOBS}", KVM_SYNC_READER);
    for (from, to, expect) in [
        (
            "cores = [2]",
            "cores = [2]\nhalt_poll_max = -1",
            "k.toml:9: hypervisor.halt_poll_max: must not be negative",
        ),
        (
            "cores = [2]",
            "cores = [2]\nkind = \"kvm2\"",
            "k.toml:9: hypervisor.kind: must be \"esx\", \"xen\" or \"kvm\"",
        ),
        (
            "cores = [2]",
            "cores = [2]\nhalt_poll_shrink = \"x\"",
            "k.toml:9: hypervisor.halt_poll_shrink:",
        ),
    ] {
        let e = refusal(&text.replacen(from, to, 1).replace("k.toml", "v.toml"));
        let expect = expect.replace("k.toml", "v.toml");
        assert!(e.starts_with(&expect), "{to}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// Under the KVM-like hypervisor the back end tells its policy the
/// interrupt vCPU's run state and, while a host thread waits for the
/// vCPU's core, the end of its slice: scheduler-aware vIC then delivers
/// held completions just before the vCPU is preempted, so it differs from
/// vIC, and without a host thread beside the vCPU there
/// is no slice end and the two are the same run.
#[test]
fn kvm_vic_sched_hears_the_vcpus_slice_end() {
    let vic = "cif_threshold = 1\nepoch = \"20ms\"\niops_threshold = 100\n";
    let guest = format!(
        "[[strategy]]\nname = \"vic\"\nkind = \"vic\"\n{vic}\
         [[strategy]]\nname = \"vic-sched\"\nkind = \"vic-sched\"\n{vic}clock_margin = \"0us\"\n\
         [[job]]\nname = \"io\"\nguest = \"vm\"\nengine = \"libaio\"\nrw = \"randread\"\n\
         bs = \"4k\"\niodepth = 32\n[[job]]\nname = \"spin\"\nguest = \"vm\"\nkind = \"cpu\"\n"
    );
    let host = "[[job]]\nname = \"host\"\nkind = \"cpu\"\ncpu = 1\n";
    let sets = ["duration=300ms", "warmup=50ms"];
    let shared = kvm_run(&format!("{guest}{host}"), &sets);
    let irqs = |r: &RunResult, s: &str| virt(r, s).virtual_interrupts_per_s;
    assert!(virt(&shared, "vic").delivery_ratio < 0.9);
    // The early deliveries change the run; by how much, and which way the
    // interrupt count moves, depends on where the slices end (0.1% more
    // under exact slice ends, 0.3% fewer under slices that end at a tick).
    assert_ne!(
        serde_json::to_string(&by_name(&shared, "vic").virt).unwrap(),
        serde_json::to_string(&by_name(&shared, "vic-sched").virt).unwrap(),
        "{} {}",
        irqs(&shared, "vic-sched"),
        irqs(&shared, "vic")
    );
    let alone = kvm_run(&guest, &sets);
    assert_eq!(
        serde_json::to_string(&by_name(&alone, "vic").virt).unwrap(),
        serde_json::to_string(&by_name(&alone, "vic-sched").virt).unwrap()
    );
}

/// Two busy loops on vCPU 0 of a guest share it in the guest kernel's
/// CFS slices, which Linux scales at boot by the guest's own vCPU count
/// (docs/HOST-COSTS.md, "Scheduler settings"): half of a 6 ms target
/// latency with one vCPU, of 12 ms with two, never the host's 24 ms.
#[test]
fn a_guests_threads_share_a_vcpu_in_its_own_kernels_slices() {
    let switches = |vcpus: u32| {
        let cores = if vcpus == 1 { "[1]" } else { "[1, 2]" };
        let text = format!(
            "name = \"g\"\nduration = \"60ms\"\nwarmup = \"0ms\"\n[host]\ncores = 4\n\
             [hypervisor]\nmodel = \"esx-like\"\ncores = [0]\n\
             [[guest]]\nname = \"vm\"\nvcpus = {vcpus}\ncores = {cores}\n\
             [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
             [[job]]\nname = \"burn\"\nguest = \"vm\"\nkind = \"cpu\"\ncpu = 0\nnumjobs = 2\n"
        );
        let sc = cint_scenario::load_str(&text, "g.toml", &[]).unwrap();
        let r = cint_sim::run(&sc).unwrap();
        let share = r.results[0].jobs[0].cpu_util;
        assert!((share - 1.0).abs() < 0.05, "{vcpus} vCPUs: {share}");
        r.results[0].context_switches
    };
    // 60 ms in 3 ms slices, then in 6 ms slices, each turn ending at the
    // first 4 ms tick past its slice: 4 ms turns, then 8 ms (the host's
    // 12 ms slices would give 12 ms turns, 5 switches).
    let (one, two) = (switches(1), switches(2));
    assert!((14..=16).contains(&one), "{one}");
    assert!((7..=8).contains(&two), "{two}");
}
