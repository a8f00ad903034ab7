//! What the importer's tests share: the paper's reference profiles and a
//! look inside an I/O job.

use cint_scenario::{IoJob, Job, Work};

use super::FioArgs;

pub(super) fn args() -> FioArgs {
    FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
}

pub(super) fn io(job: &Job) -> &IoJob {
    match &job.work {
        Work::Io(io) => io,
        Work::Cpu => panic!("job {} is not an I/O job", job.name),
    }
}
