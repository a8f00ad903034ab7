//! The Xen-like hypervisor (docs/VIRT.md): the credit scheduler's
//! mechanisms one at a time (fair shares, BOOST and the rate limit), the
//! block ring's own coalescing, the front-end latency, and the
//! scheduler-aware policy hearing the schedule.

use cint_report::{RunResult, StrategyResult, VirtResult};

/// Two guests on core 1 (dom0 on 2 and 3): `io` runs `IO_JOB`, `busy` a
/// busy loop; `STRATEGIES` replaced by the test's.
const BASE: &str = r#"name = "xen"
duration = "600ms"
warmup = "100ms"
[device]
model = "p3700"
[host]
cores = 4
[hypervisor]
model = "xen-like"
cores = [2, 3]
[[guest]]
name = "io"
cores = [1]
[[guest]]
name = "busy"
cores = [1]
STRATEGIES
[[job]]
name = "app"
guest = "io"
IO_JOB
[[job]]
name = "burn"
guest = "busy"
kind = "cpu"
"#;

const NONE: &str = "[[strategy]]\nname = \"none\"\nkind = \"none\"\n";

/// A CPU-heavy writer: 64 KiB writes, 16 in flight, 100 us of the
/// application's CPU per write, so its vCPU stays runnable.
const WRITER: &str = "engine = \"libaio\"\nrw = \"write\"\nbs = \"64k\"\niodepth = 16\n\
                      think = \"100us\"";

/// A reader that blocks on every read.
const READER: &str = "engine = \"psync\"\nrw = \"randread\"\nbs = \"4k\"";

fn run(strategies: &str, job: &str, sets: &[&str]) -> RunResult {
    let text = BASE
        .replace("STRATEGIES", strategies)
        .replace("IO_JOB", job);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc =
        cint_scenario::load_str(&text, "xen.toml", &sets).unwrap_or_else(|e| panic!("{e}\n{text}"));
    cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"))
}

fn by_name<'a>(r: &'a RunResult, name: &str) -> &'a StrategyResult {
    r.results.iter().find(|s| s.strategy == name).unwrap()
}

fn virt<'a>(r: &'a RunResult, name: &str) -> &'a VirtResult {
    by_name(r, name).virt.as_ref().unwrap()
}

/// Two always-runnable vCPUs on one core get equal credits, so equal
/// shares of it.
#[test]
fn the_credit_scheduler_shares_a_core_fairly() {
    let r = run(NONE, "kind = \"cpu\"", &[]);
    let s = by_name(&r, "none");
    let (a, b) = (s.jobs[0].cpu_util, s.jobs[1].cpu_util);
    assert!((a - b).abs() < 0.04 && a + b > 0.95, "{a} {b}");
    // One slice of 30 ms after the other: about 33 switches a second
    // between the two (each a context switch on the core).
    let switches = s.context_switches as f64 / 0.6;
    assert!(switches > 20.0 && switches < 80.0, "{switches}");
}

/// A guest that blocks on every read is BOOSTed when its event wakes it
/// and preempts the busy guest once that has run the rate limit: its
/// reads wait about a rate limit, not a 30 ms slice.
#[test]
fn boost_preempts_after_the_rate_limit() {
    let short = run(NONE, READER, &[]);
    let long = run(NONE, READER, &["hypervisor.rate_limit=30ms"]);
    let lat = |r: &RunResult| by_name(r, "none").jobs[0].lat_ns.mean;
    assert!(lat(&short) < 1.5e6, "{}", lat(&short));
    assert!(
        lat(&long) > 4.0 * lat(&short),
        "{} {}",
        lat(&long),
        lat(&short)
    );
    // The busy guest keeps most of the core either way.
    assert!(by_name(&short, "none").jobs[1].cpu_util > 0.8);
}

/// Responses pushed while the guest does not run need no notification
/// (the front end re-arms its response event only after consuming): the
/// ring coalesces by itself, fewer upcalls than I/Os.
#[test]
fn the_ring_coalesces_while_the_guest_waits_for_the_core() {
    let per_io = |r: &RunResult| {
        let v = virt(r, "none");
        v.virtual_interrupts_per_s / v.guest_iops
    };
    let shared = run(NONE, WRITER, &[]);
    let alone = run(NONE, WRITER, &["job.burn.startdelay=10s"]);
    assert!(
        per_io(&shared) < per_io(&alone) && per_io(&shared) < 1.0,
        "upcalls per I/O: {} sharing the core, {} alone",
        per_io(&shared),
        per_io(&alone)
    );
    let v = virt(&shared, "none");
    let lat = v
        .frontend_lat_ns
        .as_ref()
        .expect("front-end latency on Xen");
    assert!(lat.n > 0 && lat.mean > 0.0);
    // Waiting for the core shows in the front end's latency.
    let alone_lat = virt(&alone, "none").frontend_lat_ns.as_ref().unwrap().mean;
    assert!(lat.mean > alone_lat, "{} {}", lat.mean, alone_lat);
    assert_eq!(v.ipis_per_s, 0.0, "Xen sends events, not IPIs");
}

/// vic-sched hears the schedule: against plain vIC it delivers at slice
/// ends, so its results differ, and the run is deterministic.
#[test]
fn vic_sched_hears_the_schedule_and_runs_deterministically() {
    let strategies = "[[strategy]]\nname = \"vic\"\nkind = \"vic\"\niops_threshold = 100\n\
                      [[strategy]]\nname = \"vs\"\nkind = \"vic-sched\"\niops_threshold = 100\n";
    let a = run(strategies, WRITER, &[]);
    let b = run(strategies, WRITER, &[]);
    let json = |r: &RunResult| cint_report::to_json(r).unwrap();
    assert_eq!(json(&a), json(&b));
    let (vic, vs) = (virt(&a, "vic"), virt(&a, "vs"));
    assert!(
        vic.delivery_ratio < 1.0,
        "vIC coalesces: {}",
        vic.delivery_ratio
    );
    assert_ne!(
        vic.frontend_lat_ns, vs.frontend_lat_ns,
        "the slice-end bypass changes some deliveries"
    );
}

#[test]
fn xen_bad_input_is_refused_naming_the_key() {
    let text = BASE.replace("STRATEGIES", NONE).replace("IO_JOB", READER);
    for (from, to, expect) in [
        (
            "name = \"io\"\ncores = [1]",
            "name = \"io\"\nvcpus = 2\ncores = [1, 0]",
            "xen.toml:13: guest.io.vcpus: a guest of a \"xen\" hypervisor has one vCPU",
        ),
        (
            "cores = [2, 3]",
            "cores = [2, 3]\nslice = \"0ms\"",
            "xen.toml:11: hypervisor.slice: must be longer than zero",
        ),
        (
            "cores = [2, 3]",
            "cores = [2, 3]\nslice = -1",
            "xen.toml:11: hypervisor.slice: must not be negative",
        ),
        (
            "name = \"busy\"\ncores = [1]",
            "name = \"busy\"\ncores = [2]",
            "xen.toml:16: guest.busy.cores: core 2 belongs to the hypervisor",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let e = cint_scenario::load_str(&text.replacen(from, to, 1), "xen.toml", &[])
            .expect_err("refused")
            .to_string();
        assert!(e.starts_with(expect), "{e}");
    }
}

/// The Xen report's two-guest experiment (`scenarios/xen-dd-2.toml`):
/// vIC raises dd's throughput by 2.5% and the front end's latency by
/// 6.7% over no coalescing; the scheduler-aware variant keeps vIC's
/// throughput and brings the latency back to no coalescing's. Ratios
/// within x1.25 of the report's (the issue's band).
#[test]
fn xen_dd_2_against_the_xen_reports_ratios() {
    let path = format!(
        "{}/../../scenarios/xen-dd-2.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let sc = cint_scenario::load_file(std::path::Path::new(&path), &[]).unwrap();
    let r = cint_sim::run(&sc).unwrap();
    let bw = |s: &str| by_name(&r, s).jobs[0].bw_bytes as f64;
    let lat = |s: &str| virt(&r, s).frontend_lat_ns.as_ref().unwrap().mean;
    let checks = [
        ("vic/none dd throughput", bw("vic") / bw("none"), 1.025),
        (
            "vic/none front-end latency",
            lat("vic") / lat("none"),
            1.067,
        ),
        (
            "vic-sched/vic dd throughput",
            bw("vic-sched") / bw("vic"),
            1.0,
        ),
        (
            "vic-sched/none front-end latency",
            lat("vic-sched") / lat("none"),
            1.0,
        ),
    ];
    for (what, got, target) in checks {
        let ratio = got / target;
        println!("{what:<36} report {target:.3}  model {got:.3}  x{ratio:.2}");
        assert!(
            (0.8..=1.25).contains(&ratio),
            "{what}: {got} against {target}"
        );
    }
    assert_eq!(by_name(&r, "none").jobs[0].name, "dd");
    assert!(bw("none") > 0.0);
}

/// A figure of a page cache's note: the number before `what`.
fn note_figure(note: &str, what: &str) -> u64 {
    let at = note
        .find(what)
        .unwrap_or_else(|| panic!("{what} in {note}"));
    let num = note[..at].trim_end().rsplit(' ').next().unwrap();
    num.parse().unwrap_or_else(|_| panic!("{num} in {note}"))
}

/// Each guest has its own page cache: its own dirty counts against its
/// own limits and its own flusher on its own vCPU. A guest whose dd runs
/// far past the dirty limit of a small cache is throttled, while a slow
/// writer in the other guest is not, and neither the host's
/// `flusher_cpu` nor the other guest moves a guest's writeback.
#[test]
fn a_guests_page_cache_is_its_own() {
    let path = format!(
        "{}/../../scenarios/xen-dd-2.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let two = text
        .replace("memory = \"512MiB\"", "memory = \"16MiB\"")
        .replace(
            "name = \"busy1\"\nguest = \"busy1\"\nkind = \"cpu\"",
            "name = \"slow\"\nguest = \"busy1\"\nengine = \"psync\"\nrw = \"write\"\n\
             bs = \"4k\"\nrate = \"1m\"\ndirect = false",
        );
    assert_ne!(two, text);
    let sc = cint_scenario::load_str(&two, "x.toml", &["duration=600ms".into()]).unwrap();
    let r = cint_sim::run(&sc).expect("buffered jobs in two guests run");
    let note = |strategy: &str, guest: &str| {
        let head = format!("strategy '{strategy}': page cache of guest \"{guest}\"");
        r.notes
            .iter()
            .find(|n| n.starts_with(&head))
            .unwrap_or_else(|| panic!("{head} in {:?}", r.notes))
            .clone()
    };
    for s in ["none", "vic", "vic-sched"] {
        let (dd, slow) = (note(s, "ddvm"), note(s, "busy1"));
        assert!(note_figure(&dd, "throttle pauses") > 0, "{dd}");
        assert!(note_figure(&dd, "writeback requests issued") > 0, "{dd}");
        assert_eq!(note_figure(&slow, "throttle pauses"), 0, "{slow}");
        // 1 MB/s for 600 ms stays under its own background threshold.
        assert_eq!(note_figure(&slow, "background and"), 0, "{slow}");
        assert!(note_figure(&slow, "pages dirtied") > 0, "{slow}");
    }
    // The guests' flushers run on their vCPUs, whatever the host's is.
    let away = two.replace("flusher_cpu = 1", "flusher_cpu = 0");
    assert_ne!(away, two);
    let sc = cint_scenario::load_str(&away, "x.toml", &["duration=600ms".into()]).unwrap();
    let moved = cint_sim::run(&sc).unwrap();
    assert_eq!(
        serde_json::to_string(&moved.results).unwrap(),
        serde_json::to_string(&r.results).unwrap()
    );
}

/// Responses waiting at the end of a run for a vCPU behind three busy
/// guests are explained by the scheduler, not reported as a policy that
/// stopped the run.
#[test]
fn responses_waiting_for_the_vcpu_have_their_own_note() {
    let path = format!(
        "{}/../../scenarios/xen-dd-4.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    // Whether responses are left waiting at the run's end depends on where
    // the end falls in the busy guests' slices: 2.2 s ends with some under
    // every strategy.
    let sc =
        cint_scenario::load_file(std::path::Path::new(&path), &["duration=2200ms".into()]).unwrap();
    let r = cint_sim::run(&sc).unwrap();
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("guest 'ddvm'") && n.contains("credit scheduler")),
        "{:?}",
        r.notes
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("no future event")),
        "{:?}",
        r.notes
    );
}

/// `xen-dd-busy-2.toml`: two guests, each with dd and a busy loop on one
/// core. Each guest's dd writes back through its own page cache and ring,
/// the two get the same share of the core, and vIC coalesces both
/// guests' notifications.
#[test]
fn xen_dd_busy_2_gives_each_guest_its_own_writeback() {
    let path = format!(
        "{}/../../scenarios/xen-dd-busy-2.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let sc = cint_scenario::load_file(
        std::path::Path::new(&path),
        &["duration=1s".into(), "warmup=200ms".into()],
    )
    .unwrap();
    let r = cint_sim::run(&sc).unwrap();
    for s in ["none", "vic", "vic-sched"] {
        let res = by_name(&r, s);
        let bw = |job: &str| {
            res.jobs
                .iter()
                .find(|j| j.name == job)
                .map(|j| j.bw_bytes as f64)
                .unwrap()
        };
        let ratio = bw("dd1") / bw("dd2");
        assert!((0.8..=1.25).contains(&ratio), "{s}: dd1/dd2 {ratio}");
        for guest in ["vm1", "vm2"] {
            let head = format!("strategy '{s}': page cache of guest \"{guest}\"");
            let note = r.notes.iter().find(|n| n.starts_with(&head)).unwrap();
            assert!(note_figure(note, "writeback requests issued") > 0, "{note}");
        }
    }
    let virqs = |s: &str| virt(&r, s).virtual_interrupts_per_s;
    assert!(
        virqs("vic") < 0.7 * virqs("none"),
        "{} {}",
        virqs("vic"),
        virqs("none")
    );
}

/// Xen's reference back end counts the failsafe's suppressed responses
/// over all guests (`quirk_failsafe`), the model too unless the profile
/// says `failsafe_per_guest`. With one guest the two counts are the same
/// count, so the runs are identical (and the failsafe does act: without
/// it they differ); with two guests whose responses interleave they are
/// not. (cifThreshold 1 holds long runs of responses, and with the reset
/// quirk only the failsafe ends them.)
#[test]
fn the_failsafe_is_shared_across_guests_as_in_xen() {
    let vic = "[[strategy]]\nname = \"vic\"\nkind = \"vic\"\ncif_threshold = 1\n\
               epoch = \"50ms\"\niops_threshold = 100\nquirk_reset_on_skip = true\n";
    let reader = "engine = \"libaio\"\nrw = \"randread\"\nbs = \"4k\"\niodepth = 32";
    // Both guests read (`busy` too), or only `io` does.
    let two = BASE.replace(
        "name = \"burn\"\nguest = \"busy\"\nkind = \"cpu\"",
        &format!("name = \"burn\"\nguest = \"busy\"\n{reader}"),
    );
    let one = BASE
        .replace(
            "name = \"burn\"\nguest = \"busy\"",
            "name = \"burn\"\nguest = \"io\"",
        )
        .replace("kind = \"cpu\"", reader);
    assert!(two != BASE && one != BASE);
    let run = |text: &str, sets: &[&str]| {
        let text = text.replace("STRATEGIES", vic).replace("IO_JOB", reader);
        let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        sets.extend(["duration=150ms".to_string(), "warmup=50ms".to_string()]);
        let sc = cint_scenario::load_str(&text, "x.toml", &sets).unwrap();
        serde_json::to_string(&cint_sim::run(&sc).unwrap().results).unwrap()
    };
    let shared = ["strategy.vic.quirk_failsafe=4"];
    let per_guest = [
        "strategy.vic.quirk_failsafe=4",
        "hypervisor.failsafe_per_guest=true",
    ];
    assert_ne!(run(&two, &shared), run(&two, &per_guest));
    assert_eq!(run(&one, &shared), run(&one, &per_guest));
    assert_ne!(run(&one, &shared), run(&one, &[]));
}
