//! Same scenario + same seed => byte-identical JSON; another seed changes
//! the draws; adding a job leaves an independent job's random stream alone.

mod common;

use cint_policy::{MS, US};
use common::*;

fn json(sc: &cint_scenario::Scenario) -> String {
    let r = cint_sim::run(sc).expect("runs");
    serde_json::to_string(&r).expect("serializes")
}

fn busy_scenario() -> cint_scenario::Scenario {
    let mut sc = scenario(
        "p3700",
        vec![none(), adaptive(15 * US, 32), cint(15 * US, 32)],
        vec![libaio("async", 64, 8, 4), psync("sync")],
    );
    sc.duration = 20 * MS;
    sc.warmup = 2 * MS;
    sc
}

#[test]
fn same_seed_gives_byte_identical_json() {
    let sc = busy_scenario();
    let a = json(&sc);
    let b = json(&sc);
    assert_eq!(a, b);
    assert!(a.contains("\"substrate\":\"sim\""));
}

#[test]
fn another_seed_gives_other_draws() {
    let sc = busy_scenario();
    let mut other = sc.clone();
    other.seed = 2;
    assert_ne!(json(&sc), json(&other));
}

#[test]
fn each_job_has_its_own_random_stream() {
    // Read/write choices come from the job's stream: a second job on
    // another core must not change the first job's sequence of choices.
    // With no jitter and the jobs on separate cores and queues sharing no
    // device resource, the first job's results must be identical.
    let mut mixed = io_job("rw", cint_scenario::Engine::Psync, 1, 1, 1);
    if let cint_scenario::Work::Io(io) = &mut mixed.work {
        io.rw = cint_scenario::Rw::RandRw;
        io.rwmixread = 70;
    }
    let mut alone = scenario("optane-p4800x", vec![none()], vec![mixed.clone()]);
    alone.device.jitter = cint_scenario::profiles::JitterKind::None;
    alone.device.parallel_units = 8;
    // Nor a transfer pipe: an infinite rate makes every transfer take no
    // time, so the other job's data never waits in front of this one's.
    alone.device.read.bandwidth = u64::MAX;
    alone.device.write.bandwidth = u64::MAX;
    alone.host.cores = 2;
    let mut with_other = alone.clone();
    let mut other = psync("other");
    other.cpu = 1;
    with_other.jobs.push(other);
    let a = cint_sim::run(&alone).expect("runs");
    let b = cint_sim::run(&with_other).expect("runs");
    assert_eq!(a.results[0].jobs[0], b.results[0].jobs[0]);
}
