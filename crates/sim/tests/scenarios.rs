//! Every shipped scenario file parses and runs on the simulator with the
//! run-time invariants on (they always are: a violation turns the run into
//! an error). Runs are shortened with `--set` to keep the suite fast.

use std::path::{Path, PathBuf};

use cint_scenario::load_file;

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_scenario_runs_with_invariants_on() {
    let files = shipped();
    for name in [
        "sync-qd1",
        "sync-qd1-p3700",
        "async-batch",
        "async-batch-p3700",
        "mixed",
        "mixed-thr",
        "barrier",
        "ooo",
        "ooo-capped",
        "urgent-storm",
    ] {
        assert!(
            files
                .iter()
                .any(|f| f.file_stem().is_some_and(|s| s == name)),
            "scenarios/{name}.toml is missing"
        );
    }
    let sets = ["duration=10ms".to_string(), "warmup=2ms".to_string()];
    for file in &files {
        let sc = load_file(file, &sets).unwrap_or_else(|e| panic!("{e}"));
        let r = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(r.substrate, "sim");
        assert_eq!(r.results.len(), sc.strategies.len());
        for s in &r.results {
            let names: Vec<_> = s.jobs.iter().map(|j| j.name.as_str()).collect();
            let expected: Vec<_> = sc.jobs.iter().map(|j| j.name.as_str()).collect();
            assert_eq!(names, expected, "{}", file.display());
            assert!(
                s.cpu_util > 0.0 && s.cpu_util <= 1.0 + 1e-9,
                "{}",
                file.display()
            );
            for j in &s.jobs {
                assert!(
                    j.ios > 0,
                    "{} {} {}: no I/O",
                    file.display(),
                    s.strategy,
                    j.name
                );
                assert_eq!(j.lat_ns.n, j.ios);
            }
        }
    }
}

#[test]
fn barrier_runs_with_more_threads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/barrier.toml");
    for n in [2, 4] {
        let sets = [
            "duration=10ms".to_string(),
            "warmup=1ms".to_string(),
            format!("job.batches.numjobs={n}"),
        ];
        let sc = load_file(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let r = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.results.iter().all(|s| s.jobs[0].ios > 0));
    }
}
