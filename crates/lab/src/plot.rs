//! Charts, PNG and SVG, of a result document or a sweep file.
//!
//! - A result document (`cint sim --json`) gives per-strategy bar charts of
//!   IOPS, mean and p99 latency, IRQs/s and CPU, each bar labelled with its
//!   ratio to a baseline strategy (as the cinterrupts paper's figures are),
//!   and a latency CDF drawn through the reported percentiles.
//! - A sweep file (JSON lines from [`crate::sweep`]) gives line plots of the
//!   same metrics against the first varied key.
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

/// The parts of a result document the charts use. Unknown fields are
/// ignored so newer documents stay plottable.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RunDoc {
    /// Scenario name.
    pub scenario: String,
    /// `sim` or `emu`.
    #[serde(default)]
    pub substrate: String,
    /// Device profile.
    #[serde(default)]
    pub device: String,
    /// Strategies, in file order.
    pub results: Vec<StrategyDoc>,
}

/// One strategy of a [`RunDoc`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct StrategyDoc {
    /// Strategy name.
    pub strategy: String,
    /// Interrupts per second.
    pub interrupts_per_s: f64,
    /// Busy fraction of the application cores.
    pub cpu_util: f64,
    /// Jobs, in file order.
    pub jobs: Vec<JobDoc>,
}

/// One job of a [`StrategyDoc`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct JobDoc {
    /// Job name.
    pub name: String,
    /// I/Os per second.
    pub iops: f64,
    /// Latency summary, ns.
    pub lat_ns: LatDoc,
}

/// fio's `lat_ns`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LatDoc {
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Percentile (as text, e.g. `"99.000000"`) to latency.
    pub percentile: BTreeMap<String, u64>,
}

impl LatDoc {
    fn at(&self, p: f64) -> Option<u64> {
        self.percentile.get(&format!("{p:.6}")).copied()
    }
}

impl RunDoc {
    /// The document of a result in memory (for `--plot` on `sim`/`emu`).
    pub fn from_result(result: &cint_report::RunResult) -> Result<RunDoc, PlotError> {
        let value = serde_json::to_value(result).map_err(err)?;
        serde_json::from_value(value).map_err(err)
    }
}

/// A plottable file.
#[derive(Clone, Debug, PartialEq)]
pub enum PlotInput {
    /// A result document.
    Run(RunDoc),
    /// Sweep rows.
    Sweep(Vec<SweepRow>),
}

/// Reads a result document or a JSON-lines sweep file.
pub fn read_input(path: &Path) -> Result<PlotInput, PlotError> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| PlotError(format!("{file}: {e}")))?;
    let doc_error = match serde_json::from_str::<RunDoc>(&text) {
        Ok(doc) if doc.results.is_empty() => {
            return Err(PlotError(format!(
                "{file}: the result document has no strategy"
            )))
        }
        Ok(doc) => return Ok(PlotInput::Run(doc)),
        Err(e) => e,
    };
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        return read_csv(&text)
            .map(PlotInput::Sweep)
            .map_err(|e| PlotError(format!("{file}: not plottable: not a sweep CSV ({e})")));
    }
    match read_jsonl(&text) {
        Ok(rows) => Ok(PlotInput::Sweep(rows)),
        Err(sweep_error) => Err(PlotError(format!(
            "{file}: not plottable: neither a result document ({doc_error}) nor a JSON-lines \
             sweep file ({sweep_error})"
        ))),
    }
}

/// Plots any plottable file; returns the files written.
pub fn plot_file(path: &Path, args: &PlotArgs) -> Result<Vec<PathBuf>, PlotError> {
    match read_input(path)? {
        PlotInput::Run(doc) => plot_run(&doc, args),
        PlotInput::Sweep(rows) => plot_sweep(&rows, args),
    }
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

const FONT: &str = "sans-serif";
const MARKER: RGBColor = RGBColor(90, 90, 90);
const LEGEND_WIDTH: u32 = 250;
const SIZE: (u32, u32) = (1100, 620);

/// A bar chart: one group of bars per category (strategy), one bar per
/// series (job) in each group.
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    /// Title.
    pub title: String,
    /// Y axis label, with unit.
    pub y_desc: String,
    /// Categories along x.
    pub categories: Vec<String>,
    /// `(series name, one value per category)`.
    pub series: Vec<(String, Vec<f64>)>,
    /// Category the ratio labels divide by.
    pub baseline: usize,
}

/// A line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Title.
    pub title: String,
    /// X axis label, with unit.
    pub x_desc: String,
    /// Y axis label, with unit.
    pub y_desc: String,
    /// Logarithmic x axis (base-2 friendly tick labels).
    pub x_log: bool,
    /// Labels for x positions instead of numbers (categorical sweeps).
    pub x_names: Option<Vec<String>>,
    /// `(series name, points)`.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Vertical markers `(x, label)`, e.g. a chosen `delta`.
    pub markers: Vec<(f64, String)>,
}

/// Writes a bar chart as `dir/stem.{png,svg}`.
pub fn write_bar_chart(
    chart: &BarChart,
    dir: &Path,
    stem: &str,
    formats: &[Format],
) -> Result<Vec<PathBuf>, PlotError> {
    struct Draw<'a>(&'a BarChart);
    impl Draw<'_> {
        fn on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
            draw_bars(self.0, root).map_err(|e| e.to_string())
        }
    }
    let d = Draw(chart);
    write_dispatch(dir, stem, formats, &|r| d.on(r), &|r| d.on(r))
}

/// Writes a line chart as `dir/stem.{png,svg}`.
pub fn write_line_chart(
    chart: &LineChart,
    dir: &Path,
    stem: &str,
    formats: &[Format],
) -> Result<Vec<PathBuf>, PlotError> {
    struct Draw<'a>(&'a LineChart);
    impl Draw<'_> {
        fn on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
            draw_lines(self.0, root).map_err(|e| e.to_string())
        }
    }
    let d = Draw(chart);
    write_dispatch(dir, stem, formats, &|r| d.on(r), &|r| d.on(r))
}

type PngDraw<'a> = dyn Fn(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String> + 'a;
type SvgDraw<'a> = dyn Fn(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> + 'a;

fn write_dispatch(
    dir: &Path,
    stem: &str,
    formats: &[Format],
    png: &PngDraw<'_>,
    svg: &SvgDraw<'_>,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError(format!("{}: {e}", dir.display())))?;
    let mut written = Vec::new();
    for &format in formats {
        let path = dir.join(format!("{stem}.{}", format.extension()));
        let outcome = match format {
            Format::Png => {
                let root = BitMapBackend::new(&path, SIZE).into_drawing_area();
                png(&root).and_then(|()| root.present().map_err(|e| e.to_string()))
            }
            Format::Svg => {
                let root = SVGBackend::new(&path, SIZE).into_drawing_area();
                svg(&root).and_then(|()| root.present().map_err(|e| e.to_string()))
            }
        };
        outcome.map_err(|e| PlotError(format!("{}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        1.0
    } else {
        v
    }
}

fn draw_bars<DB: DrawingBackend>(c: &BarChart, full: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    full.fill(&WHITE)?;
    let entries: Vec<(String, RGBColor, LegendMark)> = if c.series.len() > 1 {
        c.series
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), PALETTE[i % PALETTE.len()], LegendMark::Box))
            .collect()
    } else {
        Vec::new()
    };
    let root = &with_legend(full, &entries)?;
    let n = c.categories.len().max(1);
    let max = c
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0, f64::max);
    // Head-room for the ratio labels above the tallest bar.
    let y_top = nice_max(max) * 1.18;
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, (FONT, 26))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..n as f64, 0f64..y_top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_labels(0)
        .y_desc(&c.y_desc)
        .y_label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .y_label_formatter(&|v| format_value(*v))
        .draw()?;
    let groups = c.series.len().max(1) as f64;
    let width = 0.8 / groups;
    for (si, (_, values)) in c.series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        let bars = values.iter().enumerate().map(|(ci, &v)| {
            let x0 = ci as f64 + 0.1 + si as f64 * width;
            Rectangle::new([(x0, 0.0), (x0 + width * 0.92, v)], color.filled())
        });
        chart.draw_series(bars)?;
        let base = values.get(c.baseline).copied().unwrap_or(0.0);
        let label_style = TextStyle::from((FONT, 15).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom))
            .color(&BLACK);
        chart.draw_series(values.iter().enumerate().map(|(ci, &v)| {
            let x = ci as f64 + 0.1 + si as f64 * width + width * 0.46;
            let ratio = if base > 0.0 {
                format!("{:.2}x", v / base)
            } else {
                "-".into()
            };
            Text::new(ratio, (x, v + y_top * 0.01), label_style.clone())
        }))?;
    }
    // Category names under their group, drawn on the root because the mesh
    // only knows numeric ticks.
    let name_style = TextStyle::from((FONT, 17).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (ci, name) in c.categories.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(ci as f64 + 0.5, 0.0));
        root.draw(&Text::new(name.clone(), (px, py + 8), name_style.clone()))?;
    }
    let base_name = c.categories.get(c.baseline).cloned().unwrap_or_default();
    let note_style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
    let (x0, y0) = chart.backend_coord(&(0.0, y_top));
    root.draw(&Text::new(
        format!("ratios relative to {base_name}"),
        (x0 + 6, y0 + 4),
        note_style,
    ))?;
    Ok(())
}

/// How a legend entry shows its series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LegendMark {
    Box,
    Line,
    Dashed,
}

/// Past the palette, lines are dashed so no two series look alike.
fn line_mark(i: usize) -> LegendMark {
    if i < PALETTE.len() {
        LegendMark::Line
    } else {
        LegendMark::Dashed
    }
}

/// The last segment of a dotted key (`device.model` -> `model`), or the
/// whole key when another key ends the same way, so legends stay short.
fn short_key<'k>(key: &'k str, all: impl Iterator<Item = &'k String>) -> &'k str {
    let last = |k: &'k str| k.rsplit('.').next().unwrap_or(k);
    let tail = last(key);
    if all.filter(|k| last(k) == tail).count() > 1 {
        key
    } else {
        tail
    }
}

/// Draws the legend in a strip on the right, outside the data, and returns
/// the area left for the chart.
fn with_legend<DB: DrawingBackend>(
    full: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor, LegendMark)],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    if entries.is_empty() {
        return Ok(full.clone());
    }
    let (w, _) = full.dim_in_pixel();
    // Wide enough for the longest name (about 8.5 px a character at this
    // size), but the data keeps at least 55% of the width.
    let longest = entries
        .iter()
        .map(|(n, _, _)| n.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let width = (46 + longest * 17 / 2).clamp(LEGEND_WIDTH, w * 45 / 100);
    let (chart, legend) = full.split_horizontally(w.saturating_sub(width));
    let style = TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, color, mark)) in entries.iter().enumerate() {
        let y = 70 + 24 * i as i32;
        match mark {
            LegendMark::Line => {
                legend.draw(&PathElement::new([(4, y), (28, y)], color.stroke_width(3)))?
            }
            LegendMark::Dashed => {
                for x in [4, 14, 24] {
                    legend.draw(&PathElement::new(
                        [(x, y), (x + 6, y)],
                        color.stroke_width(3),
                    ))?;
                }
            }
            LegendMark::Box => {
                legend.draw(&Rectangle::new([(8, y - 7), (24, y + 7)], color.filled()))?
            }
        }
        legend.draw(&Text::new(name.clone(), (36, y), style.clone()))?;
    }
    Ok(chart)
}

fn format_value(v: f64) -> String {
    if (v == v.round() && v.abs() < 1e15) || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Labels 1, 2 and 5 of every decade; plotters offers many more points.
fn log_tick(v: f64) -> String {
    if v <= 0.0 {
        return String::new();
    }
    let decade = 10f64.powf(v.log10().floor());
    let mantissa = v / decade;
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6 * m)
    {
        let rounded = (v * 1e6).round() / 1e6;
        format!("{rounded}")
    } else {
        String::new()
    }
}

fn line_builder<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, (FONT, 26))
        .margin(16)
        .x_label_area_size(60)
        .y_label_area_size(90);
    b
}

fn draw_lines<DB: DrawingBackend>(c: &LineChart, full: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    full.fill(&WHITE)?;
    let mut entries: Vec<(String, RGBColor, LegendMark)> = Vec::new();
    if c.series.len() > 1 || !c.markers.is_empty() {
        entries.extend(
            c.series
                .iter()
                .enumerate()
                .map(|(i, (n, _))| (n.clone(), PALETTE[i % PALETTE.len()], line_mark(i))),
        );
        entries.extend(
            c.markers
                .iter()
                .map(|(_, l)| (l.clone(), MARKER, LegendMark::Dashed)),
        );
    }
    let root = &with_legend(full, &entries)?;
    let points = || c.series.iter().flat_map(|(_, p)| p.iter());
    let (mut x_lo, mut x_hi) = points().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    for (x, _) in &c.markers {
        x_lo = x_lo.min(*x);
        x_hi = x_hi.max(*x);
    }
    if x_lo > x_hi {
        (x_lo, x_hi) = (0.0, 1.0);
    }
    if c.x_log {
        // Plotters labels a log axis from the first power of ten inside
        // it, so start at one to label the left end.
        // (a hair below, so rounding in its logarithm cannot skip it).
        x_lo = 10f64.powf(x_lo.max(1e-9).log10().floor()) * 0.999;
    }
    let span = (x_hi - x_lo).max(1e-9);
    let y_hi = nice_max(points().map(|p| p.1).fold(0.0, f64::max)) * 1.08;
    macro_rules! body {
        ($chart:expr, $x_labels:expr, $x_fmt:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(&c.x_desc)
                .y_desc(&c.y_desc)
                .light_line_style(TRANSPARENT)
                .label_style((FONT, 16))
                .axis_desc_style((FONT, 18))
                .x_labels($x_labels)
                .x_label_formatter($x_fmt)
                .y_label_formatter(&|v| format_value(*v))
                .draw()?;
            for (i, (_, pts)) in c.series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                // A series equal to later ones is drawn wider, so it still
                // shows as an outline around them.
                let behind = c.series[i + 1..]
                    .iter()
                    .filter(|(_, q)| q == pts)
                    .count()
                    .min(3) as u32;
                let width = 2 + 2 * behind;
                if line_mark(i) == LegendMark::Dashed {
                    chart.draw_series(DashedLineSeries::new(
                        pts.iter().copied(),
                        10,
                        6,
                        color.stroke_width(width),
                    ))?;
                } else {
                    chart.draw_series(LineSeries::new(
                        pts.iter().copied(),
                        color.stroke_width(width),
                    ))?;
                }
                // Dots mark measured points; a dense curve (a CDF) would drown in them.
                if pts.len() <= 40 {
                    let radius = 3 + 2 * behind;
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, radius, color.filled())))?;
                }
            }
            for (x, _) in &c.markers {
                chart.draw_series(DashedLineSeries::new(
                    [(*x, 0.0), (*x, y_hi)],
                    8,
                    5,
                    MARKER.stroke_width(2),
                ))?;
            }
        }};
    }
    if c.x_log {
        let chart = line_builder(root, &c.title)
            .build_cartesian_2d((x_lo..x_hi * 1.05).log_scale(), 0f64..y_hi)?;
        // Asking for about 12 points per decade gets plotters' 1..9 grid.
        let decades = (x_hi * 1.05 / x_lo).log10().floor().max(1.0) as usize;
        body!(chart, 12 * decades, &|v: &f64| log_tick(*v));
    } else if let Some(names) = &c.x_names {
        let chart = line_builder(root, &c.title)
            .build_cartesian_2d(-0.3f64..(names.len() as f64 - 0.7).max(0.3), 0f64..y_hi)?;
        body!(chart, names.len(), &|v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        });
    } else {
        let pad = span * 0.04;
        let chart = line_builder(root, &c.title)
            .build_cartesian_2d((x_lo - pad)..(x_hi + pad), 0f64..y_hi)?;
        body!(chart, 10, &|v: &f64| format_value(*v));
    }
    Ok(())
}

/// The charts of a result in memory (`--plot DIR` on `sim` and `emu`).
pub fn plot_result(
    result: &cint_report::RunResult,
    args: &PlotArgs,
) -> Result<Vec<PathBuf>, PlotError> {
    plot_run(&RunDoc::from_result(result)?, args)
}

/// The bar charts and the latency CDF of a result document.
pub fn plot_run(doc: &RunDoc, args: &PlotArgs) -> Result<Vec<PathBuf>, PlotError> {
    let baseline = match &args.baseline {
        None => 0,
        Some(b) => doc
            .results
            .iter()
            .position(|s| &s.strategy == b)
            .ok_or_else(|| {
                let known: Vec<&str> = doc.results.iter().map(|s| s.strategy.as_str()).collect();
                PlotError(format!(
                    "baseline '{b}' is not a strategy of the result (strategies: {})",
                    known.join(", ")
                ))
            })?,
    };
    if doc.results.is_empty() {
        return Err(PlotError("the result document has no strategy".into()));
    }
    let categories: Vec<String> = doc.results.iter().map(|s| s.strategy.clone()).collect();
    let job_names: Vec<String> = doc.results[0].jobs.iter().map(|j| j.name.clone()).collect();
    let per_job = |f: &dyn Fn(&JobDoc) -> f64| -> Vec<(String, Vec<f64>)> {
        job_names
            .iter()
            .enumerate()
            .map(|(ji, name)| {
                let values = doc
                    .results
                    .iter()
                    .map(|s| s.jobs.get(ji).map_or(0.0, f))
                    .collect();
                (name.clone(), values)
            })
            .collect()
    };
    let title = |what: &str| {
        format!(
            "{what} — {} on {} ({})",
            doc.scenario, doc.device, doc.substrate
        )
    };
    let mut iops = per_job(&|j| j.iops / 1e3);
    if iops.len() > 1 {
        let total = doc
            .results
            .iter()
            .map(|s| s.jobs.iter().map(|j| j.iops).sum::<f64>() / 1e3)
            .collect();
        iops.push(("total".into(), total));
    }
    let single = |name: &str, values: Vec<f64>| vec![(name.to_string(), values)];
    let charts = [
        (
            "iops",
            BarChart {
                title: title("Throughput"),
                y_desc: "IOPS (thousands)".into(),
                categories: categories.clone(),
                series: iops,
                baseline,
            },
        ),
        (
            "latency_mean",
            BarChart {
                title: title("Mean latency"),
                y_desc: "mean latency (µs)".into(),
                categories: categories.clone(),
                series: per_job(&|j| j.lat_ns.mean / 1e3),
                baseline,
            },
        ),
        (
            "latency_p99",
            BarChart {
                title: title("99th percentile latency"),
                y_desc: "p99 latency (µs)".into(),
                categories: categories.clone(),
                series: per_job(&|j| j.lat_ns.at(99.0).unwrap_or(0) as f64 / 1e3),
                baseline,
            },
        ),
        (
            "irqs",
            BarChart {
                title: title("Interrupt rate"),
                y_desc: "interrupts per second (thousands)".into(),
                categories: categories.clone(),
                series: single(
                    "interrupts",
                    doc.results
                        .iter()
                        .map(|s| s.interrupts_per_s / 1e3)
                        .collect(),
                ),
                baseline,
            },
        ),
        (
            "cpu",
            BarChart {
                title: title("CPU utilisation"),
                y_desc: "CPU busy (% of the application cores)".into(),
                categories: categories.clone(),
                series: single(
                    "cpu",
                    doc.results.iter().map(|s| s.cpu_util * 100.0).collect(),
                ),
                baseline,
            },
        ),
    ];
    let mut written = Vec::new();
    for (stem, chart) in &charts {
        written.extend(write_bar_chart(chart, &args.out_dir, stem, &args.formats)?);
    }
    let mut cdf = Vec::new();
    for s in &doc.results {
        for j in &s.jobs {
            let mut pts: Vec<(f64, f64)> = vec![(j.lat_ns.min as f64 / 1e3, 0.0)];
            let mut pcts: Vec<(f64, u64)> = j
                .lat_ns
                .percentile
                .iter()
                .filter_map(|(k, &v)| k.parse::<f64>().ok().map(|p| (p, v)))
                .collect();
            pcts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts.extend(pcts.iter().map(|&(p, v)| (v as f64 / 1e3, p)));
            pts.push((j.lat_ns.max as f64 / 1e3, 100.0));
            let name = if job_names.len() > 1 {
                format!("{} / {}", s.strategy, j.name)
            } else {
                s.strategy.clone()
            };
            cdf.push((name, pts));
        }
    }
    let cdf_chart = LineChart {
        title: title("Latency CDF"),
        x_desc: "latency (µs); points: min, reported percentiles, max".into(),
        y_desc: "I/Os at or below (%)".into(),
        x_log: cdf_is_wide(&cdf),
        x_names: None,
        series: cdf,
        markers: Vec::new(),
    };
    written.extend(write_line_chart(
        &cdf_chart,
        &args.out_dir,
        "latency_cdf",
        &args.formats,
    )?);
    Ok(written)
}

/// A long tail squeezes the body of a linear CDF into one pixel column.
fn cdf_is_wide(series: &[(String, Vec<(f64, f64)>)]) -> bool {
    let xs = || series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let lo = xs().fold(f64::MAX, f64::min);
    let hi = xs().fold(0.0, f64::max);
    lo > 0.0 && hi / lo > 20.0
}

/// How a sweep's x values are placed.
fn x_axis(values: &[String]) -> (Vec<f64>, Option<Vec<String>>, String) {
    if let Some(xs) = values
        .iter()
        .map(|v| v.parse::<f64>().ok())
        .collect::<Option<Vec<_>>>()
    {
        return (xs, None, String::new());
    }
    if let Some(xs) = values
        .iter()
        .map(|v| {
            cint_scenario::units::parse_duration(v)
                .ok()
                .map(|ns| ns as f64 / 1e3)
        })
        .collect::<Option<Vec<_>>>()
    {
        return (xs, None, " (µs)".into());
    }
    if let Some(xs) = values
        .iter()
        .map(|v| {
            cint_scenario::units::parse_size(v)
                .ok()
                .map(|b| b as f64 / 1024.0)
        })
        .collect::<Option<Vec<_>>>()
    {
        return (xs, None, " (KiB)".into());
    }
    (
        (0..values.len()).map(|i| i as f64).collect(),
        Some(values.to_vec()),
        String::new(),
    )
}

/// `(file stem, title, y axis label, value of a row)`.
type SweepMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SweepRow) -> f64,
);

/// Line plots of every metric against the first varied key: one line per
/// strategy (and per job, and per value of the other keys, when there are
/// several).
pub fn plot_sweep(rows: &[SweepRow], args: &PlotArgs) -> Result<Vec<PathBuf>, PlotError> {
    let first = rows
        .first()
        .ok_or_else(|| PlotError("the sweep has no rows".into()))?;
    let x_key = first
        .point
        .keys()
        .next()
        .cloned()
        .ok_or_else(|| PlotError("the sweep rows name no varied key".into()))?;
    let value_of = |r: &SweepRow, k: &str| {
        r.point
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    let mut x_values: Vec<String> = Vec::new();
    for r in rows {
        let v = value_of(r, &x_key);
        if !x_values.contains(&v) {
            x_values.push(v);
        }
    }
    let (xs, x_names, unit) = x_axis(&x_values);
    let x_of = |v: &str| {
        x_values
            .iter()
            .position(|x| x == v)
            .map(|i| xs[i])
            .unwrap_or(0.0)
    };
    let multi_job = rows.iter().any(|r| r.job != first.job);
    let series_of = |r: &SweepRow| {
        let mut name = r.strategy.clone();
        if multi_job {
            name = format!("{name} / {}", r.job);
        }
        for (k, v) in r.point.iter().skip(1) {
            let k = short_key(k, r.point.keys());
            name = format!("{name}, {k}={}", v.as_str().unwrap_or(""));
        }
        name
    };
    let metrics: [SweepMetric; 5] = [
        ("sweep_iops", "Throughput", "IOPS (thousands)", |r| {
            r.iops / 1e3
        }),
        (
            "sweep_latency_mean",
            "Mean latency",
            "mean latency (µs)",
            |r| r.lat_mean_ns / 1e3,
        ),
        (
            "sweep_latency_p99",
            "99th percentile latency",
            "p99 latency (µs)",
            |r| r.lat_p99_ns as f64 / 1e3,
        ),
        (
            "sweep_irqs",
            "Interrupt rate",
            "interrupts per second (thousands)",
            |r| r.interrupts_per_s / 1e3,
        ),
        ("sweep_cpu", "CPU utilisation", "CPU busy (%)", |r| {
            r.cpu_util * 100.0
        }),
    ];
    let positive = xs.iter().all(|&x| x > 0.0);
    let (lo, hi) = xs
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let wide = positive && hi / lo >= 16.0;
    // Few values spread over decades read best evenly spaced and labelled
    // with the values themselves, as papers draw thr sweeps.
    let evenly = x_names.is_none() && wide && x_values.len() <= 16;
    let mut written = Vec::new();
    for (stem, what, y_desc, metric) in metrics {
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for r in rows {
            let name = series_of(r);
            let point = (x_of(&value_of(r, &x_key)), metric(r));
            match series.iter_mut().find(|(n, _)| *n == name) {
                Some((_, pts)) => pts.push(point),
                None => series.push((name, vec![point])),
            }
        }
        for (_, pts) in &mut series {
            if evenly {
                for p in pts.iter_mut() {
                    p.0 = xs.iter().position(|&x| x == p.0).unwrap_or(0) as f64;
                }
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let chart = LineChart {
            title: format!("{what} vs {x_key}"),
            x_desc: format!("{x_key}{unit}"),
            y_desc: y_desc.into(),
            x_log: x_names.is_none() && wide && !evenly,
            x_names: if evenly {
                Some(x_values.clone())
            } else {
                x_names.clone()
            },
            series,
            markers: Vec::new(),
        };
        written.extend(write_line_chart(
            &chart,
            &args.out_dir,
            stem,
            &args.formats,
        )?);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::{import_str, FioArgs};
    use crate::sweep::{run_sweep, Progress, SweepArgs};
    use crate::testutil::fake_run;

    fn out_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cint-lab-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mixed() -> cint_scenario::Scenario {
        let text =
            "[global]\nrw=randread\nruntime=100ms\n[async]\nioengine=libaio\niodepth=64\n[sync]\n";
        import_str(
            text,
            "mixed.fio",
            &FioArgs::new("optane-p4800x", "xeon-e5-2660v4"),
        )
        .expect("valid")
        .scenario
    }

    #[test]
    fn legend_keys_are_shortened_unless_ambiguous() {
        let keys: Vec<String> = vec!["device.model".into(), "job.a.iodepth".into()];
        assert_eq!(short_key("device.model", keys.iter()), "model");
        let clash: Vec<String> = vec!["job.a.iodepth".into(), "job.b.iodepth".into()];
        assert_eq!(short_key("job.b.iodepth", clash.iter()), "job.b.iodepth");
    }

    fn is_png(path: &Path) -> bool {
        std::fs::read(path).is_ok_and(|b| b.len() > 10_000 && b.starts_with(b"\x89PNG"))
    }

    #[test]
    fn a_result_document_gives_bar_charts_and_a_cdf() {
        let dir = out_dir("run");
        let result = fake_run(&mixed()).expect("fake run");
        let json = dir.join("result.json");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(&json, serde_json::to_string_pretty(&result).expect("json")).expect("write");
        let mut args = PlotArgs::new(&dir);
        args.baseline = Some("none".into());
        let files = plot_file(&json, &args).expect("plots");
        let stems: Vec<String> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(
            stems,
            [
                "iops",
                "latency_mean",
                "latency_p99",
                "irqs",
                "cpu",
                "latency_cdf"
            ]
        );
        assert!(files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
            .all(|p| is_png(p)));
        let svg = std::fs::read_to_string(dir.join("iops.svg")).expect("svg");
        // The fake gives adaptive 1.5x the interrupt-bound IOPS of none: the label must say so.
        assert!(
            svg.contains("1.00x") && svg.contains("IOPS (thousands)"),
            "labels missing"
        );
        let irqs = std::fs::read_to_string(dir.join("irqs.svg")).expect("svg");
        let ratio = result.results[1].interrupts_per_s / result.results[0].interrupts_per_s;
        assert!(ratio < 0.9, "the fake coalesces");
        assert!(
            irqs.contains(&format!("{ratio:.2}x")),
            "adaptive's interrupt ratio to none"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_sweep_file_gives_line_plots() {
        let dir = out_dir("sweep");
        let scenario = mixed();
        let loader = |sets: &[String]| -> Result<cint_scenario::Scenario, String> {
            let mut s = scenario.clone();
            for set in sets {
                let v = set.split_once('=').map(|(_, v)| v).unwrap_or("");
                if let cint_scenario::Work::Io(io) = &mut s.jobs[0].work {
                    io.iodepth = v.parse().map_err(|_| "bad".to_string())?;
                }
            }
            Ok(s)
        };
        let args = SweepArgs {
            vary: vec!["job.async.iodepth=1,2,4,8,16,32,64,128"
                .parse()
                .expect("vary")],
            progress: Progress::Never,
            ..SweepArgs::default()
        };
        let sweep = run_sweep(&loader, &fake_run, &args).expect("sweep");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut jsonl = Vec::new();
        sweep.write_jsonl(&mut jsonl).expect("jsonl");
        let path = dir.join("sweep.jsonl");
        std::fs::write(&path, jsonl).expect("write");
        let files = plot_file(&path, &PlotArgs::new(&dir)).expect("plots");
        assert_eq!(files.len(), 10);
        assert!(is_png(&dir.join("sweep_iops.png")));
        let svg = std::fs::read_to_string(dir.join("sweep_iops.svg")).expect("svg");
        assert!(svg.contains("job.async.iodepth") && svg.contains("cinterrupts / async"));
        if std::env::var_os("CINT_LAB_KEEP_PLOTS").is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn unplottable_input_is_one_line() {
        let dir = out_dir("bad");
        std::fs::create_dir_all(&dir).expect("mkdir");
        for (name, text) in [
            ("a.json", "{\"hello\": 1}"),
            ("b.csv", "x,y\n1,2\n"),
            ("c.json", ""),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write");
            let e = plot_file(&path, &PlotArgs::new(&dir)).expect_err(name);
            let msg = e.to_string();
            assert!(
                msg.contains(name) && msg.contains("not plottable") && !msg.contains('\n'),
                "{msg}"
            );
        }
        let e = plot_file(&dir.join("missing.json"), &PlotArgs::new(&dir)).expect_err("missing");
        assert!(e.to_string().contains("missing.json"));
        let result = fake_run(&mixed()).expect("fake");
        let doc = RunDoc::from_result(&result).expect("doc");
        let mut args = PlotArgs::new(&dir);
        args.baseline = Some("nope".into());
        let e = plot_run(&doc, &args).expect_err("unknown baseline");
        assert!(e.to_string().contains("baseline 'nope'"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    #[ignore = "writes sample charts to /tmp/cint-lab-plots for a visual check"]
    fn render_samples() {
        let dir = PathBuf::from("/tmp/cint-lab-plots");
        let result = fake_run(&mixed()).expect("fake");
        plot_run(
            &RunDoc::from_result(&result).expect("doc"),
            &PlotArgs::new(&dir),
        )
        .expect("plots");
    }
}
