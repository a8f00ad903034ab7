//! The hand-specialised loop of `benches/vs_reference.rs` (issue #20)
//! does exactly the simulator's work: on the shipped `async-batch` under
//! each of its interrupt strategies, every counter and latency figure it
//! produces equals cint-sim's. The benchmark checks the same before it
//! times anything; this keeps the two from drifting apart between runs
//! of the benchmark.

#[path = "../benches/reference/mod.rs"]
#[allow(dead_code)]
mod reference;

#[test]
fn the_reference_loop_counts_what_the_simulator_counts() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/async-batch.toml");
    let all = cint_scenario::load_file(&path, &["duration=50ms".into(), "warmup=0ms".into()])
        .expect("the shipped scenario loads");
    for strategy in &all.strategies {
        let mut sc = all.clone();
        sc.strategies = vec![strategy.clone()];
        let (result, stats) = cint_sim::run_with_stats(&sc).expect("runs");
        let outcome = reference::Reference::new(&sc, true)
            .expect("async-batch is the loop's shape")
            .run();
        assert!(outcome.ios > 10_000, "{}: {outcome:?}", strategy.name);
        let mismatches = outcome.mismatches(&result, stats.events);
        assert!(mismatches.is_empty(), "{}: {mismatches:#?}", strategy.name);
    }
}

#[test]
fn the_reference_loop_refuses_other_shapes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/mixed.toml");
    let sc = cint_scenario::load_file(&path, &[]).expect("the shipped scenario loads");
    let err = reference::Reference::new(&sc, true)
        .err()
        .expect("two jobs are refused");
    assert!(err.contains("one job"), "{err}");
}
