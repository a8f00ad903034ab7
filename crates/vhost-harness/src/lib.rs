//! A vhost-user-blk front end with no guest (issue #12, items 6 and 7).
//!
//! It connects to a vhost-user-blk back end's socket (ours, `cint vhost`,
//! or a peer such as qemu-storage-daemon), shares memory with it, lays out
//! split virtqueues there and drives them the way a guest's virtio-blk
//! driver would:
//! - [`load`] submits requests at a chosen depth and batch size and counts
//!   requests, kicks and interrupts (call-eventfd writes);
//! - [`cpu`] reads the back end's CPU time, for requests/s per back-end core;
//! - [`exchange`] submits arbitrary, possibly malformed, descriptor chains
//!   and collects exactly one completion for each, for the fuzz tests;
//! - [`backend`] starts a back end process and waits for its socket;
//! - [`compare`] runs the same load against several back ends, alternating,
//!   and reports ratios measured in one run.

pub mod backend;
pub mod blk;
pub mod chains;
pub mod compare;

pub mod cpu;
pub mod device;
pub mod exchange;
pub mod load;
pub mod memory;
pub mod ring;

/// Everything that can go wrong talking to a back end.
#[derive(Debug)]
pub enum Error {
    /// Creating or mapping the shared memory failed.
    Memory(std::io::Error),
    /// The rings and buffers asked for do not fit the shared memory.
    OutOfGuestMemory,
    /// An eventfd operation failed.
    EventFd(std::io::Error),
    /// A vhost-user message failed (which step, and why).
    VhostUser(&'static str, vhost::Error),
    /// The back end broke the virtio or vhost-user protocol.
    Protocol(String),
    /// The back end stopped answering.
    Timeout(String),
    /// A setting the harness cannot use.
    Config(String),
    /// Starting or watching a back end process failed.
    Process(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Memory(e) => write!(f, "shared guest memory: {e}"),
            Error::OutOfGuestMemory => write!(f, "rings and buffers do not fit the shared memory"),
            Error::EventFd(e) => write!(f, "eventfd: {e}"),
            Error::VhostUser(step, e) => write!(f, "vhost-user {step}: {e}"),
            Error::Protocol(m) => write!(f, "back end broke the protocol: {m}"),
            Error::Timeout(m) => write!(f, "back end stopped answering: {m}"),
            Error::Config(m) => write!(f, "{m}"),
            Error::Process(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}
