//! The paper's microbenchmarks ship twice, as scenarios/*.toml and as
//! scenarios/*.fio: both must describe the same experiment. The simulator
//! is deterministic, so equal scenarios give equal results.

use std::path::{Path, PathBuf};

use cint_lab::fio::{import_file, FioArgs};
use cint_scenario::{load_file, Engine, Scenario, Work};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// `(fio file, TOML scenarios it must equal)`: device variants of a
/// workload share one fio file, the device being a command-line choice.
const PAIRS: &[(&str, &[&str])] = &[
    ("sync-qd1.fio", &["sync-qd1.toml", "sync-qd1-p3700.toml"]),
    (
        "async-batch.fio",
        &["async-batch.toml", "async-batch-p3700.toml"],
    ),
    ("mixed.fio", &["mixed.toml"]),
];

fn import_like(fio: &Path, toml: &Scenario) -> Scenario {
    let args = FioArgs {
        strategies: Some(toml.strategies.clone()),
        seed: toml.seed,
        name: Some(toml.name.clone()),
        ..FioArgs::new(&toml.device.model, &toml.host.model)
    };
    let imported = import_file(fio, &args).unwrap_or_else(|e| panic!("{e}"));
    // Shipped files may only warn about options with no meaning in a model.
    for w in &imported.warnings {
        assert!(w.contains("has no meaning in the model"), "{w}");
    }
    imported.scenario
}

#[test]
fn every_fio_microbenchmark_equals_its_toml_scenario() {
    let dir = scenarios_dir();
    let mut compared = 0;
    for (fio, tomls) in PAIRS {
        let fio_path = dir.join(fio);
        assert!(fio_path.exists(), "{} is missing", fio_path.display());
        for toml in *tomls {
            let toml_path = dir.join(toml);
            assert!(toml_path.exists(), "{} is missing", toml_path.display());
            let expected = load_file(&toml_path, &[]).unwrap_or_else(|e| panic!("{e}"));
            let mut got = import_like(&fio_path, &expected);
            got.source = expected.source.clone();
            // The fio files carry the authors' `norandommap` and
            // `random_generator`, which decide nothing for a direct job of
            // one size (it draws no offsets): the TOML leaves them out.
            for (g, e) in got.jobs.iter_mut().zip(&expected.jobs) {
                if let (Work::Io(g), Work::Io(e)) = (&mut g.work, &e.work) {
                    let one_size = g.shape.bssplit.is_empty() && g.shape.bsrange.is_none();
                    assert!(g.direct && one_size, "{fio}: the map decides something");
                    g.shape.random_map = e.shape.random_map;
                }
            }
            // The fio file has no [device]/[host] overrides: equal profiles
            // mean the TOML did not override them either.
            assert_eq!(got.jobs, expected.jobs, "{fio} vs {toml}: jobs");
            assert_eq!(
                (got.duration, got.warmup, got.host.cores),
                (expected.duration, expected.warmup, expected.host.cores),
                "{fio} vs {toml}: duration, warm-up, cores"
            );
            assert_eq!(got, expected, "{fio} vs {toml}: whole scenario");
            compared += 1;
        }
    }
    assert_eq!(compared, 5);
}

#[test]
fn fio_and_toml_give_byte_identical_results_on_the_simulator() {
    let dir = scenarios_dir();
    let short = vec!["duration=10ms".to_string(), "warmup=1ms".to_string()];
    for name in ["sync-qd1", "async-batch"] {
        let toml =
            load_file(&dir.join(format!("{name}.toml")), &short).unwrap_or_else(|e| panic!("{e}"));
        let args = FioArgs {
            strategies: Some(toml.strategies.clone()),
            seed: toml.seed,
            name: Some(toml.name.clone()),
            sets: short.clone(),
            ..FioArgs::new(&toml.device.model, &toml.host.model)
        };
        let fio = import_file(&dir.join(format!("{name}.fio")), &args)
            .unwrap_or_else(|e| panic!("{e}"))
            .scenario;
        let run = |s: &Scenario| {
            let result = cint_sim::run(s).unwrap_or_else(|e| panic!("{name}: {e}"));
            serde_json::to_string(&result).unwrap_or_else(|e| panic!("{e}"))
        };
        let (from_toml, from_fio) = (run(&toml), run(&fio));
        assert!(from_toml.contains("\"iops\""));
        assert_eq!(from_fio, from_toml, "{name}: results differ");
    }
}

#[test]
fn the_fio_microbenchmarks_say_what_the_paper_ran() {
    let args = FioArgs::new("optane-p4800x", "xeon-e5-2660v4");
    let io = |s: &Scenario, job: usize| match &s.jobs[job].work {
        Work::Io(io) => io.clone(),
        Work::Cpu => panic!("not an I/O job"),
    };
    let sync = import_file(&scenarios_dir().join("sync-qd1.fio"), &args)
        .expect("valid")
        .scenario;
    let j = io(&sync, 0);
    // Table 2's polling column polls preadv2(RWF_HIPRI): pvsync2 with hipri.
    assert_eq!(
        (j.engine, j.iodepth, j.bs, j.direct, j.hipri),
        (Engine::Pvsync2, 1, 4096, true, true)
    );
    let batch = import_file(&scenarios_dir().join("async-batch.fio"), &args)
        .expect("valid")
        .scenario;
    let j = io(&batch, 0);
    assert_eq!(
        (j.engine, j.iodepth, j.batch, j.batch_complete_min),
        (Engine::Libaio, 256, 16, 16)
    );
    let mixed = import_file(&scenarios_dir().join("mixed.fio"), &args)
        .expect("valid")
        .scenario;
    assert_eq!(mixed.host.cores, 1);
    assert_eq!((mixed.jobs[0].cpu, mixed.jobs[1].cpu), (0, 0));
    assert_eq!(
        (io(&mixed, 0).engine, io(&mixed, 0).iodepth),
        (Engine::Libaio, 16)
    );
    assert_eq!(io(&mixed, 1).engine, Engine::Psync);
    let names: Vec<&str> = mixed.strategies.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["none", "adaptive", "cinterrupts"]);
}

/// The energy study ran fio with eight threads and no `cpus_allowed` on
/// the E3-1230 v5 (four cores of two hardware threads). Pasted as a
/// command line on that host, the import places the threads as Linux's
/// fork balancing does, keeps the machine's numbering and so its
/// siblings, and gives what `scenarios/energy-table1.toml` gives at eight
/// threads spread over the eight CPUs, to the byte. Until 2026-11-28 every
/// import on this host was refused (its SMT did not divide the one core
/// the threads were put on).
#[test]
fn the_energy_studys_command_on_its_host_is_energy_table1_at_eight_threads() {
    let cpus: Vec<String> = (0..8).map(|c| c.to_string()).collect();
    let sets = [
        "duration=30ms".to_string(),
        "job.reader.numjobs=8".to_string(),
        format!("job.reader.cpus=[{}]", cpus.join(",")),
    ];
    let expected = load_file(&scenarios_dir().join("energy-table1.toml"), &sets)
        .unwrap_or_else(|e| panic!("{e}"));
    let command: Vec<String> = "fio --name=reader --ioengine=pvsync2 --hipri=1 --direct=1 \
                                --rw=randread --bs=4k --numjobs=8 --ramp_time=20ms \
                                --runtime=30ms --time_based"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let args = FioArgs {
        strategies: Some(expected.strategies.clone()),
        seed: expected.seed,
        ..FioArgs::new(&expected.device.model, &expected.host.model)
    };
    let imported =
        cint_lab::fio::import_command_line(&command, &args).unwrap_or_else(|e| panic!("{e}"));
    let got = &imported.scenario;
    assert_eq!(got.host.cores, 8);
    assert_eq!(got.host.smt.as_ref().map(|s| s.threads_per_core), Some(2));
    assert_eq!(got.jobs[0].cpus, (0..8).collect::<Vec<u32>>());
    let (ours, theirs) = (
        cint_sim::run(got).expect("runs"),
        cint_sim::run(&expected).expect("runs"),
    );
    assert_eq!(ours.results.len(), 3);
    for (o, t) in ours.results.iter().zip(&theirs.results) {
        assert_eq!(o.energy_j, t.energy_j, "{}", o.strategy);
        assert!(
            o.energy_j.is_some(),
            "{}: the E3 has power data",
            o.strategy
        );
        let (oj, tj) = (&o.jobs[0], &t.jobs[0]);
        assert_eq!(
            (oj.ios, oj.lat_ns.mean),
            (tj.ios, tj.lat_ns.mean),
            "{}",
            o.strategy
        );
    }
    // A CPU outside the profile's: the CPUs become cores 0..n, which loses
    // the siblings, and the host says so with one thread per core.
    let outside: Vec<String> = "--name=a --rw=randread --direct=1 --runtime=5ms --cpus_allowed=9"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let imported =
        cint_lab::fio::import_command_line(&outside, &args).unwrap_or_else(|e| panic!("{e}"));
    let host = &imported.scenario.host;
    assert_eq!(
        (host.cores, host.smt.as_ref().map(|s| s.threads_per_core)),
        (1, Some(1))
    );
    cint_sim::run(&imported.scenario).expect("runs");
}
