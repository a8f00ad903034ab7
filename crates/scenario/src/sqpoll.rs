//! io_uring's SQ-polled rings as both engines place them: which core's
//! queue carries a ring's requests, and the note a result carries where
//! an SQ thread shares its core (the simulator's model is
//! `crates/sim/src/workload/sqpoll.rs`, the emulator's
//! `crates/emu/src/sqpoll.rs`).

/// The core whose device queue carries the requests of thread `n` of
/// `job`: for an SQ-polled ring its SQ thread's, which submits them
/// (blk-mq maps a request to the submitting CPU's hardware queue, and
/// that queue's interrupt to that CPU), else the thread's own.
pub fn submitting_core(sc: &crate::Scenario, job: &crate::Job, n: u32) -> u32 {
    let core = sc.thread_core(job, n);
    match &job.work {
        crate::Work::Io(io) => io.sqpoll.and_then(|sq| sq.cpu).unwrap_or(core),
        crate::Work::Cpu => core,
    }
}

/// The SQ threads that share their core with another thread of the
/// scenario's jobs, one note per job: an SQ thread spins through its time
/// slice, yielding only when the scheduler asks, so while another thread
/// has the core its ring's entries wait, and while it spins that thread
/// waits. Such a result is what Linux does, and must say why.
pub fn shared_core_notes(sc: &crate::Scenario) -> Vec<String> {
    use crate::Work;
    let sq_polled = |job: &crate::Job| matches!(&job.work, Work::Io(io) if io.sqpoll.is_some());
    let mut on_core: std::collections::BTreeMap<u32, u32> = Default::default();
    for job in &sc.jobs {
        for n in 0..job.numjobs {
            *on_core.entry(sc.thread_core(job, n)).or_default() += 1;
            if sq_polled(job) {
                *on_core.entry(submitting_core(sc, job, n)).or_default() += 1;
            }
        }
    }
    let mut notes = Vec::new();
    for job in sc.jobs.iter().filter(|j| sq_polled(j)) {
        let others = |n: u32| {
            on_core
                .get(&submitting_core(sc, job, n))
                .map_or(0, |k| k - 1)
        };
        let Some(n) = (0..job.numjobs).find(|&n| others(n) > 0) else {
            continue;
        };
        let (core, sq_core) = (sc.thread_core(job, n), submitting_core(sc, job, n));
        let beside = if sq_core == core {
            " (with no sqpoll_cpu it runs on the core of the thread that fills its ring)"
        } else {
            ""
        };
        notes.push(format!(
            "job '{}': the SQ thread of its thread {n} runs on core {sq_core} beside \
             {} other thread{}{beside}: an SQ thread spins through its time slice and \
             yields only when the scheduler asks, so its ring's submissions wait while another \
             thread has the core, and that thread waits while it spins (set sqpoll_cpu to a \
             core of its own)",
            job.name,
            others(n),
            if others(n) == 1 { "" } else { "s" }
        ));
    }
    notes
}
