//! # cint-lab: the researcher's workflow
//!
//! The loop people who study interrupt coalescing work in, as library entry
//! points the `cint` binary wires to sub-commands:
//!
//! - [`fio`]: import fio job files as [`Scenario`](cint_scenario::Scenario)s;
//! - [`sweep`]: the cross product of parameter values, every point on every
//!   strategy, in parallel, written as JSON lines and CSV;
//! - [`plot`]: PNG and SVG charts of a result document or a sweep file;
//! - [`calibrate`]: docs/MODEL.md experiment 7, recommending `delta` and `thr`
//!   for a device.
//!
//! Engines are reached through the [`Runner`] and [`GapProbe`] traits so the
//! workflow runs on the simulator, the emulator, or a fake in tests.
//! Every error type prints as one line.

#![warn(missing_docs)]

pub mod calibrate;
pub mod energy_map;
pub mod fio;
pub mod plot;
pub mod runner;
pub mod sweep;
#[cfg(test)]
mod testutil;

pub use runner::{GapProbe, Runner};
