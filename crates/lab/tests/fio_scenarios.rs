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
