//! # cint-vhost: a vhost-user-blk back end with calibrated interrupts
//!
//! A virtio-blk device served to QEMU, cloud-hypervisor or any vhost-user
//! front end over a unix socket, built on the rust-vmm crates
//! (`vhost-user-backend`, `virtio-queue`, `vm-memory`). Each virtqueue has
//! its own worker thread with its own io_uring; each queue's completion
//! interrupts (call eventfd writes) are decided by a `cint-policy` policy,
//! whose deadline drives a timerfd. Requests carry a hint taken from the
//! `ioprio` of their header ([`hints`]). See docs/VHOST.md.

#![warn(missing_docs)]

pub mod backend;
pub mod cpu_share;
mod daemon;
pub mod device;
pub mod error;
mod guest;
pub mod hints;
pub mod image;
pub mod options;
pub mod request;
pub mod stats;
mod sys;
pub mod vcpu;
pub mod worker;

pub use error::VhostError;
pub use options::{Options, RawOptions};

/// Validates the command line and runs the back end until SIGINT/SIGTERM
/// or, without `--reconnect`, until the front end disconnects.
pub fn run(raw: &RawOptions) -> Result<(), VhostError> {
    let opts = raw.validate()?;
    daemon::run(&opts)
}
