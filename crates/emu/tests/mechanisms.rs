//! Mechanism checks that hold whatever the timing: they count interrupts
//! and delivery paths, never compare latencies.

mod common;

use cint_policy::MS;
use cint_scenario::{Engine, Work};
use common::*;

#[test]
fn async_batches_under_cinterrupts_raise_at_most_a_tenth_of_the_irqs_of_none() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // A long delta and a high thr keep the adaptive fall-back's timer out
    // of the picture: only the Barrier at the end of each batch fires.
    let mut job = io_job("async", Engine::Libaio, 32, 32, 1);
    if let Work::Io(io) = &mut job.work {
        io.batch_complete_min = 1;
    }
    let s = scenario(
        "async-batch",
        device(10_000, 4),
        vec![none(), cinterrupts(20 * MS, 256)],
        vec![job],
        40 * MS,
    );
    let d = cint_emu::run_detailed(&s).expect("emulator runs");
    let per_completion = |k: usize| {
        let sd = &d.strategies[k];
        assert!(
            sd.completions_total > 500,
            "{}: too few completions",
            sd.name
        );
        assert_eq!(sd.jobs[0].strays, 0);
        assert_eq!(sd.jobs[0].submitted, sd.jobs[0].completed);
        sd.irqs_total as f64 / sd.completions_total as f64
    };
    let none_rate = per_completion(0);
    let cint_rate = per_completion(1);
    assert!(none_rate >= 0.99, "none fires per completion: {none_rate}");
    assert!(
        cint_rate <= none_rate / 10.0,
        "cinterrupts {cint_rate} IRQs per IO vs none {none_rate}"
    );
    assert_eq!(d.result.results[1].urgent_interrupts, 0);
}

#[test]
fn sync_qd1_under_cinterrupts_is_delivered_by_urgent_irqs_only() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let s = scenario(
        "sync-qd1",
        device(10_000, 4),
        vec![cinterrupts(DEFAULT_DELTA, 32)],
        vec![io_job("sync", Engine::Psync, 1, 1, 1)],
        30 * MS,
    );
    let d = cint_emu::run_detailed(&s).expect("emulator runs");
    let job = &d.strategies[0].jobs[0];
    assert!(job.completed > 50, "only {} completions", job.completed);
    assert_eq!(job.completed, job.submitted);
    assert_eq!(job.by_urgent_irq, job.completed, "{job:?}");
    assert_eq!(job.by_full_irq, 0);
    let r = &d.result.results[0];
    assert_eq!(r.urgent_interrupts, r.interrupts);
    assert!(r.jobs[0].ios > 0);
}

#[test]
fn poll_raises_no_irq_and_never_blocks() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let s = scenario(
        "poll",
        device(10_000, 4),
        vec![poll()],
        vec![
            io_job("sync", Engine::Pvsync2, 1, 1, 1),
            io_job("async", Engine::IoUring, 16, 4, 1),
        ],
        30 * MS,
    );
    let d = cint_emu::run_detailed(&s).expect("emulator runs");
    let r = &d.result.results[0];
    assert_eq!(r.interrupts, 0);
    assert_eq!(d.strategies[0].irqs_total, 0);
    for job in &d.strategies[0].jobs {
        assert!(job.completed > 0, "{job:?}");
        assert_eq!(job.by_poll, job.completed);
        assert_eq!(job.voluntary_switches, 0, "{job:?}");
    }
}

#[test]
fn the_result_document_names_every_job_of_every_strategy() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let mut cpu = io_job("burn", Engine::Psync, 1, 1, 1);
    cpu.work = Work::Cpu;
    let s = scenario(
        "doc",
        device(10_000, 4),
        vec![
            none(),
            adaptive(DEFAULT_DELTA, 32),
            hybrid(cint_scenario::HybridSleep::Min),
        ],
        vec![io_job("sync", Engine::Psync, 1, 1, 2), cpu],
        20 * MS,
    );
    let r = cint_emu::run(&s).expect("emulator runs");
    assert_eq!(r.substrate, "emu");
    assert_eq!(r.results.len(), 3);
    for sr in &r.results {
        let names: Vec<&str> = sr.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["sync", "burn"]);
        assert!(sr.jobs[0].ios > 0, "{}", sr.strategy);
        assert!(sr.jobs[0].lat_ns.n == sr.jobs[0].ios);
        assert_eq!(sr.jobs[1].ios, 0);
        assert!(sr.jobs[1].cpu_util > 0.0, "{}: the burner ran", sr.strategy);
        assert!(sr.cpu_util > 0.0 && sr.cpu_util <= 1.0);
    }
    assert_eq!(r.results[2].interrupts, 0);
}

#[test]
fn too_many_application_cores_is_a_clear_error() {
    let _g = serial();
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity").len();
    let mut job = io_job("far", Engine::Psync, 1, 1, 1);
    job.cpu = cpus as u32; // needs cpus + 2 CPUs in all
    let s = scenario("far", device(10_000, 4), vec![none()], vec![job], MS);
    let err = cint_emu::run(&s).expect_err("not enough cores");
    let msg = err.to_string();
    assert!(
        matches!(err, cint_emu::EmuError::NotEnoughCores { .. }),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}
