//! Random valid scenarios with the energy model on: every run must pass
//! the simulator's own checks (the energy accounting among them: time per
//! state covering the window, energy by state equal to the integral of
//! power, mean power between the idle floor and the all-busy ceiling),
//! report non-negative energy, and repeat itself exactly; with one or two
//! hardware threads per core (SMT).

use cint_report::RunResult;
use cint_scenario::{load_str, Scenario};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const GOVERNORS: [&str; 3] = ["menu", "menu-no-iowait", "teo"];
const STRATEGIES: [&str; 4] = [
    "kind = \"none\"",
    "kind = \"poll\"",
    "kind = \"hybrid-poll\"\nsleep = \"adaptive\"",
    "kind = \"hybrid-poll\"\nsleep = \"min\"",
];
const ENGINES: [(&str, bool); 4] = [
    ("pvsync2", true),
    ("io_uring", true),
    ("psync", false),
    ("libaio", false),
];

/// `smt` is a stream of its own (the hardware threads per core and which
/// sibling each job takes), so that the draws above it stay as they were.
fn random_scenario(rng: &mut ChaCha8Rng, smt: &mut ChaCha8Rng) -> Scenario {
    let cores = rng.gen_range(1..=4u32);
    let threads_per_core = smt.gen_range(1..=2u32);
    let mut text = format!(
        "name = \"energy-random\"\nseed = {}\nduration = \"{}ms\"\nwarmup = \"{}ms\"\n\
         [device]\nmodel = \"optane-900p\"\n\
         [host]\nmodel = \"xeon-e3-1230v5\"\ncores = {}\n[host.power]\ngovernor = \"{}\"\n\
         [host.smt]\nthreads_per_core = {threads_per_core}\n",
        rng.gen_range(0..1000u32),
        rng.gen_range(2..=6u32),
        rng.gen_range(0..=2u32),
        cores * threads_per_core,
        GOVERNORS[rng.gen_range(0..GOVERNORS.len())],
    );
    for s in 0..rng.gen_range(1..=2usize) {
        let kind = STRATEGIES[rng.gen_range(0..STRATEGIES.len())];
        text.push_str(&format!("[[strategy]]\nname = \"s{s}\"\n{kind}\n"));
    }
    for j in 0..rng.gen_range(1..=3u32) {
        let (engine, polls) = ENGINES[rng.gen_range(0..ENGINES.len())];
        let bs = [1u32, 4, 16, 64, 128][rng.gen_range(0..5usize)];
        let depth = if engine.contains("sync") {
            1
        } else {
            rng.gen_range(1..=16u32)
        };
        text.push_str(&format!(
            "[[job]]\nname = \"j{j}\"\nengine = \"{engine}\"\nhipri = {polls}\nrw = \"randread\"\n\
             bs = \"{bs}k\"\niodepth = {depth}\nnumjobs = {}\ncpu = {}\n",
            rng.gen_range(1..=4u32),
            rng.gen_range(0..cores) + cores * smt.gen_range(0..threads_per_core),
        ));
        if rng.gen_bool(0.3) {
            text.push_str(&format!(
                "rate_iops = {}\n",
                rng.gen_range(1_000..50_000u32)
            ));
        }
    }
    load_str(&text, "<random>", &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn check(r: &RunResult, sc: &Scenario) {
    for s in &r.results {
        let total = s.energy_j.expect("energy on");
        let e = s.energy.as_ref().expect("energy figures");
        assert!(total > 0.0 && e.power_w > 0.0, "{}: {total} J", sc.name);
        for c in &e.cores {
            assert!(c.energy_j >= 0.0);
            assert!(c.residency.iter().all(|x| (0.0..=1.0).contains(&x.share)));
        }
    }
}

#[test]
fn random_energy_scenarios_keep_every_invariant_and_repeat() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let mut smt = ChaCha8Rng::seed_from_u64(2121);
    let mut with_smt = 0;
    for _ in 0..24 {
        let sc = random_scenario(&mut rng, &mut smt);
        with_smt += usize::from(
            sc.host
                .smt
                .as_ref()
                .is_some_and(|s| s.threads_per_core == 2),
        );
        let a = cint_sim::run(&sc).unwrap_or_else(|e| panic!("{e}"));
        check(&a, &sc);
        let b = cint_sim::run(&sc).expect("runs again");
        assert_eq!(a, b, "not deterministic");
    }
    // The draws reach hosts with two hardware threads per core.
    assert!(with_smt >= 4, "{with_smt} of 24 with SMT");
}
