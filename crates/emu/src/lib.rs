//! # cint-emu: the interrupt strategies on real threads, cores and wake-ups
//!
//! A dedicated **device core** (a thread pinned to its own CPU that never
//! sleeps) takes requests from per-client submission rings, executes them
//! on a backend ([`backend::BackendConfig`]: a synthetic device timed by
//! spinning, or io_uring on a real file), posts completions and runs each
//! queue's interrupt policy from `cint-policy`, unchanged. An interrupt is
//! delivered by waking a real-time **handler thread** pinned to the
//! application core, which reaps the completion queue by the OOO rules and
//! wakes the submitting threads; an interrupt that finds the core idle is
//! instead handled by a thread waiting there, which runs the same pass
//! (one wake-up, as on real hardware). See docs/EMULATOR-DESIGN.md.
//!
//! Two ways in:
//! * [`run`]: every strategy of a scenario on real threads, producing the
//!   same [`RunResult`](cint_report::RunResult) as the simulator with `"substrate": "emu"`;
//! * the library API: [`Emulator::start`], [`Emulator::client`],
//!   [`Client::submit`] with a [`Hint`](cint_policy::Hint), and
//!   [`Client::wait`]; its C ABI is the crate `cint-emu-ffi`.

#![warn(missing_docs)]

mod activity;
pub mod backend;
pub mod buf;
pub mod client;
mod device;
pub mod emulator;
mod energy;
pub mod error;
mod flow;
mod idle;
mod idle_watch;
mod irq;
mod offload;
mod replay;
pub mod ring;
pub mod runner;
pub mod select;
mod shared;
mod sqpoll;
pub mod sys;
mod workload;

pub use backend::{BackendConfig, FileSource};
pub use buf::IoBuf;
pub use client::{Client, Completion, Request, WaitMode};
pub use emulator::{
    DeviceConfig, DeviceStats, Emulator, IdleDelivery, Occupant, QueueConfig, Realtime,
};
pub use error::{EmuError, IoError};
pub use runner::{run, run_detailed, JobDetail, RunDetail, StrategyDetail};
pub use select::ModeCounts;
pub use shared::{DeliveredBy, Op, QueueMode, MAX_CLIENTS, MAX_QUEUE_DEPTH};
