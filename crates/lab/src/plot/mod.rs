//! Charts, PNG and SVG, of a result document or a sweep file.
//!
//! - A result document (`cint sim --json`) gives per-strategy bar charts of
//!   IOPS, mean and p99 latency, IRQs/s and CPU, each bar labelled with its
//!   ratio to a baseline strategy (as the cinterrupts paper's figures are),
//!   and a latency CDF drawn through the reported percentiles.
//! - A sweep file (JSON lines from [`crate::sweep`]) gives line plots of the
//!   same metrics against the first varied key: colour tells the strategy
//!   (and job), line dash and marker the values of the other varied keys.
//!
//! Text is drawn with the system's sans-serif font found through
//! fontconfig (Debian: `fonts-dejavu-core`; building needs
//! `libfontconfig1-dev`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Deserialize;

use crate::sweep::{read_csv, read_jsonl, SweepRow};

mod charts;
mod draw;
mod input;
#[cfg(test)]
mod tests;

pub use charts::*;
pub use draw::*;
pub use input::*;

/// Image formats to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Raster, for a quick look.
    Png,
    /// Vector, for papers.
    Svg,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

/// Where and how to plot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotArgs {
    /// Output directory (created if missing).
    pub out_dir: PathBuf,
    /// Strategy the ratios are relative to; `None`: the first one.
    pub baseline: Option<String>,
    /// Formats to write.
    pub formats: Vec<Format>,
}

impl PlotArgs {
    /// PNG and SVG into `out_dir`, baseline the first strategy.
    pub fn new(out_dir: &Path) -> PlotArgs {
        PlotArgs {
            out_dir: out_dir.into(),
            baseline: None,
            formats: vec![Format::Png, Format::Svg],
        }
    }
}

/// Why nothing (or not everything) was plotted. Displays as one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotError(pub String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.lines().next().unwrap_or(""))
    }
}

impl std::error::Error for PlotError {}

fn err(e: impl fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// Plots any plottable file; returns the files written.
pub fn plot_file(path: &Path, args: &PlotArgs) -> Result<Vec<PathBuf>, PlotError> {
    match read_input(path)? {
        PlotInput::Run(doc) => plot_run(&doc, args),
        PlotInput::Sweep(rows) => plot_sweep(&rows, args),
    }
}
