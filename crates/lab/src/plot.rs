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

/// Line and bar colours (Tableau 10 with its grey replaced by black, so
/// that no colour reads as the grey of markers and of the line-style
/// legend).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
];

/// Line dashes of the style variants: `None` is solid, else `(dash,
/// gap)` in pixels.
const DASHES: [Option<(u32, u32)>; 4] = [None, Some((12, 6)), Some((3, 4)), Some((24, 6))];

/// Marker shapes of the style variants, the second half of a variant
/// (with [`DASHES`]). Their counts are coprime, so the first 20 variants
/// all differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
}

const SHAPES: [Shape; 5] = [
    Shape::Circle,
    Shape::Square,
    Shape::TriangleUp,
    Shape::Diamond,
    Shape::TriangleDown,
];

/// The colour of the line-style half of a grouped legend: neutral, so it
/// is not read as a series of its own.
const VARIANT_GREY: RGBColor = RGBColor(70, 70, 70);

pub(crate) const FONT: &str = "sans-serif";
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

/// One line of a [`LineChart`] and how it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Name; the legend's entry when the legend lists series.
    pub name: String,
    /// Points `(x, y)`, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Colour, an index into the palette. Past the palette's ten colours
    /// they repeat with hollow markers.
    pub color: usize,
    /// Line dash and marker shape: 0 is solid with dots; 1, 2, ... differ
    /// in both (the first 20 are distinct).
    pub variant: usize,
}

impl Series {
    /// The `i`-th series of a chart whose series differ by colour only.
    pub fn nth(i: usize, name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color: i,
            variant: 0,
        }
    }
}

/// What a [`LineChart`]'s legend lists.
#[derive(Clone, Debug, PartialEq)]
pub enum Legend {
    /// One entry per series, drawn in the series' style.
    Series,
    /// Colour and line style apart, for series that cross two things (a
    /// strategy, and the value of another varied key): one entry per
    /// colour, then one per line style. Lets 7 strategies x 3 values read
    /// as 7 + 3 entries rather than 21.
    Grouped {
        /// What colour tells, e.g. `strategy`.
        colors_title: String,
        /// Entry of colour `i` (the [`Series::color`] index).
        colors: Vec<String>,
        /// What line style tells, e.g. `iodepth`.
        variants_title: String,
        /// Entry of variant `i` (the [`Series::variant`] index). Left out
        /// of the legend when there is only one.
        variants: Vec<String>,
    },
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
    /// Logarithmic x axis, labelled at 1, 2 and 5 of every decade.
    pub x_log: bool,
    /// Labels for x positions instead of numbers (categorical sweeps).
    pub x_names: Option<Vec<String>>,
    /// The lines.
    pub series: Vec<Series>,
    /// How the legend names them.
    pub legend: Legend,
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

/// Writes one figure per format, `stem.png` and `stem.svg`, into `dir`.
pub(crate) fn write_dispatch(
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
    let entries: Vec<LegendRow> = if c.series.len() > 1 {
        c.series
            .iter()
            .enumerate()
            .map(|(i, (n, _))| LegendRow::Entry(n.clone(), Swatch::Box(color_of(i).0)))
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
        let color = color_of(si).0;
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

/// The palette's colour number `i` (repeating past its end).
pub(crate) fn color(i: usize) -> RGBColor {
    color_of(i).0
}

/// A colour and whether markers of it are filled: past the palette,
/// colours repeat with hollow markers.
fn color_of(i: usize) -> (RGBColor, bool) {
    (PALETTE[i % PALETTE.len()], (i / PALETTE.len()) % 2 == 0)
}

/// The dash and marker shape of a style variant.
fn variant_of(v: usize) -> (Option<(u32, u32)>, Shape) {
    (DASHES[v % DASHES.len()], SHAPES[v % SHAPES.len()])
}

/// A marker's outline around its centre, in pixels; `None` for a circle.
fn shape_outline(shape: Shape, r: i32) -> Option<Vec<(i32, i32)>> {
    // Polygons look smaller than a circle of the same radius: grow them.
    let q = r + 1;
    match shape {
        Shape::Circle => None,
        Shape::Square => Some(vec![(-r, -r), (r, -r), (r, r), (-r, r)]),
        Shape::TriangleUp => Some(vec![(0, -q - 1), (q, q - 1), (-q, q - 1)]),
        Shape::TriangleDown => Some(vec![(0, q + 1), (q, 1 - q), (-q, 1 - q)]),
        Shape::Diamond => Some(vec![(0, -q - 1), (q + 1, 0), (0, q + 1), (-q - 1, 0)]),
    }
}

/// The segments of a horizontal line from `from` to `to` at `y`, dashed
/// as `dash` says (or solid), in pixels: the legend's swatches, which
/// plotters' dashed series cannot draw outside a chart.
fn dashed_segments(from: i32, to: i32, y: i32, dash: Option<(u32, u32)>) -> Vec<[(i32, i32); 2]> {
    match dash {
        None => vec![[(from, y), (to, y)]],
        Some((on, off)) => {
            let mut segments = Vec::new();
            let mut x = from;
            while x < to {
                segments.push([(x, y), ((x + on as i32).min(to), y)]);
                x += (on + off) as i32;
            }
            segments
        }
    }
}

/// How a legend row shows what it names.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Swatch {
    /// A filled box: a bar series.
    Box(RGBColor),
    /// A line with an optional marker: `(colour, dash, marker shape,
    /// filled)`.
    Line(RGBColor, Option<(u32, u32)>, Option<Shape>, bool),
}

/// One row of a legend.
#[derive(Clone, Debug, PartialEq)]
enum LegendRow {
    /// A heading of a group of entries.
    Title(String),
    /// A name and its swatch.
    Entry(String, Swatch),
}

/// Series with more points than this are drawn without markers: a dense
/// curve (a CDF) would drown in them.
const MARKER_LIMIT: usize = 40;

/// The swatch of a series drawn in colour `color` and variant `variant`,
/// with its marker if the series shows markers.
fn series_swatch(color: usize, variant: usize, marked: bool) -> Swatch {
    let (rgb, filled) = color_of(color);
    let (dash, shape) = variant_of(variant);
    Swatch::Line(rgb, dash, marked.then_some(shape), filled)
}

/// The rows of a line chart's legend: its series (or its colours, then its
/// line styles), then its vertical markers.
fn line_legend(c: &LineChart) -> Vec<LegendRow> {
    let mut rows = Vec::new();
    if c.series.len() <= 1 && c.markers.is_empty() {
        return rows;
    }
    // Swatches show markers only where the lines do.
    let marked = |s: &Series| s.points.len() <= MARKER_LIMIT;
    let any_marked = c.series.iter().any(marked);
    match &c.legend {
        Legend::Series => rows.extend(c.series.iter().map(|s| {
            LegendRow::Entry(s.name.clone(), series_swatch(s.color, s.variant, marked(s)))
        })),
        Legend::Grouped {
            colors_title,
            colors,
            variants_title,
            variants,
        } => {
            if !colors_title.is_empty() {
                rows.push(LegendRow::Title(colors_title.clone()));
            }
            // The colour entries are drawn solid: the line style belongs to
            // the other group.
            rows.extend(colors.iter().enumerate().map(|(i, name)| {
                let (rgb, filled) = color_of(i);
                LegendRow::Entry(
                    name.clone(),
                    Swatch::Line(rgb, None, any_marked.then_some(Shape::Circle), filled),
                )
            }));
            if variants.len() > 1 {
                rows.push(LegendRow::Title(variants_title.clone()));
                rows.extend(variants.iter().enumerate().map(|(v, name)| {
                    let (dash, shape) = variant_of(v);
                    LegendRow::Entry(
                        name.clone(),
                        Swatch::Line(VARIANT_GREY, dash, any_marked.then_some(shape), true),
                    )
                }));
            }
        }
    }
    rows.extend(c.markers.iter().map(|(_, label)| {
        LegendRow::Entry(
            label.clone(),
            Swatch::Line(MARKER, Some((6, 4)), None, true),
        )
    }));
    rows
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
    rows: &[LegendRow],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    if rows.is_empty() {
        return Ok(full.clone());
    }
    let (w, h) = full.dim_in_pixel();
    // Wide enough for the longest name (about 8.5 px a character at this
    // size), but the data keeps at least 55% of the width.
    let longest = rows
        .iter()
        .map(|r| match r {
            LegendRow::Title(t) => t.chars().count() as u32,
            LegendRow::Entry(n, _) => n.chars().count() as u32 + 5,
        })
        .max()
        .unwrap_or(0);
    let width = (40 + longest * 17 / 2).clamp(LEGEND_WIDTH, w * 45 / 100);
    let (chart, legend) = full.split_horizontally(w.saturating_sub(width));
    // 24 px a row while they fit under the title, tighter when they do not.
    let titles = rows
        .iter()
        .filter(|r| matches!(r, LegendRow::Title(_)))
        .count() as i32;
    let room = h as i32 - 90;
    let step = (room / (rows.len() as i32 + titles / 2).max(1)).clamp(12, 24);
    let entry_style =
        TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let title_style = TextStyle::from((FONT, 15).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center))
        .color(&RGBColor(60, 60, 60));
    let mut y = 70;
    for (i, row) in rows.iter().enumerate() {
        match row {
            LegendRow::Title(text) => {
                // Half a row of space above every heading but the first,
                // so the two groups read apart.
                if i > 0 {
                    y += step / 2;
                }
                legend.draw(&Text::new(text.clone(), (4, y), title_style.clone()))?;
                let rule = (4 + text.chars().count() as i32 * 17 / 2).min(width as i32 - 8);
                legend.draw(&PathElement::new(
                    [(4, y + 10), (rule, y + 10)],
                    RGBColor(160, 160, 160).stroke_width(1),
                ))?;
            }
            LegendRow::Entry(name, swatch) => {
                match *swatch {
                    Swatch::Box(color) => {
                        legend.draw(&Rectangle::new([(10, y - 7), (28, y + 7)], color.filled()))?
                    }
                    Swatch::Line(color, dash, shape, filled) => {
                        for seg in dashed_segments(4, 38, y, dash) {
                            legend.draw(&PathElement::new(seg, color.stroke_width(3)))?;
                        }
                        if let Some(shape) = shape {
                            draw_marker(&legend, (21, y), shape, 5, (color, filled), false)?;
                        }
                    }
                }
                legend.draw(&Text::new(name.clone(), (46, y), entry_style.clone()))?;
            }
        }
        y += step;
    }
    Ok(chart)
}

/// Draws one marker at a pixel position of `area`; with `halo`, in a
/// white rim, so that a marker drawn on a line or on a marker of its own
/// colour (a series equal to another of the same colour) still shows its
/// shape. (The legend's swatches go without: a rim there would break
/// their line and read as a dash.)
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    shape: Shape,
    r: i32,
    (color, filled): (RGBColor, bool),
    halo: bool,
) -> DrawResult<DB> {
    let at = |outline: Vec<(i32, i32)>| -> Vec<(i32, i32)> {
        outline.iter().map(|&(dx, dy)| (x + dx, y + dy)).collect()
    };
    if halo || !filled {
        // A hollow marker needs the white inside whether or not it has a rim.
        let grow = if halo { 2 } else { 0 };
        match shape_outline(shape, r + grow) {
            None => area.draw(&Circle::new((x, y), r + grow, WHITE.filled()))?,
            Some(rim) => area.draw(&Polygon::new(at(rim), WHITE.filled()))?,
        }
    }
    match (shape_outline(shape, r), filled) {
        (None, true) => area.draw(&Circle::new((x, y), r, color.filled())),
        (None, false) => area.draw(&Circle::new((x, y), r, color.stroke_width(2))),
        (Some(outline), true) => area.draw(&Polygon::new(at(outline), color.filled())),
        (Some(outline), false) => {
            let mut pts = at(outline);
            pts.push(pts[0]);
            area.draw(&PathElement::new(pts, color.stroke_width(2)))
        }
    }
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

/// The x positions a logarithmic axis gets a grid line at: 1 to 9 times
/// every power of ten in `lo..=hi`, each once. (Plotters' own log key
/// points repeat every power of ten, which drew its label twice.)
fn log_key_points(lo: f64, hi: f64) -> Vec<f64> {
    let mut points = Vec::new();
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return points;
    }
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    for exp in first..=last {
        let decade = 10f64.powi(exp);
        for m in 1..=9 {
            let x = decade * f64::from(m);
            if x >= lo && x <= hi {
                points.push(x);
            }
        }
    }
    points
}

fn draw_lines<DB: DrawingBackend>(c: &LineChart, full: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    full.fill(&WHITE)?;
    let root = &with_legend(full, &line_legend(c))?;
    let points = || c.series.iter().flat_map(|s| s.points.iter());
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
        // Start at a power of ten, so the left end is labelled (a hair
        // below, so rounding in the logarithm cannot push it out).
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
            for (i, series) in c.series.iter().enumerate() {
                let pts = &series.points;
                let (color, filled) = color_of(series.color);
                let (dash, shape) = variant_of(series.variant);
                // A series equal to later ones of other colours is drawn
                // wider, so it still shows as an outline around them. (One
                // of its own colour would not show as an outline: there
                // the markers, each in a white rim, show both shapes.)
                let behind = c.series[i + 1..]
                    .iter()
                    .filter(|q| q.points == *pts && q.color != series.color)
                    .count()
                    .min(3) as u32;
                let width = 2 + 2 * behind;
                match dash {
                    Some((on, off)) => chart.draw_series(DashedLineSeries::new(
                        pts.iter().copied(),
                        on,
                        off,
                        color.stroke_width(width),
                    ))?,
                    None => chart.draw_series(LineSeries::new(
                        pts.iter().copied(),
                        color.stroke_width(width),
                    ))?,
                };
                // Markers show measured points and tell variants apart.
                if pts.len() <= MARKER_LIMIT {
                    let radius = 4 + 2 * behind as i32;
                    for p in pts {
                        let at = chart.backend_coord(p);
                        draw_marker(root, at, shape, radius, (color, filled), true)?;
                    }
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
        let x_end = x_hi * 1.05;
        let ticks = log_key_points(x_lo, x_end);
        let tick_count = ticks.len();
        let chart = line_builder(root, &c.title)
            .build_cartesian_2d((x_lo..x_end).log_scale().with_key_points(ticks), 0f64..y_hi)?;
        body!(chart, tick_count, &|v: &f64| log_tick(*v));
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
    // Colour is the strategy, line style the job, as in the sweep charts.
    let multi_job = job_names.len() > 1;
    let mut cdf = Vec::new();
    for (si, s) in doc.results.iter().enumerate() {
        for (ji, j) in s.jobs.iter().enumerate() {
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
            let name = if multi_job {
                format!("{} / {}", s.strategy, j.name)
            } else {
                s.strategy.clone()
            };
            cdf.push(Series {
                name,
                points: pts,
                color: si,
                variant: if multi_job { ji } else { 0 },
            });
        }
    }
    let cdf_chart = LineChart {
        title: title("Latency CDF"),
        x_desc: "latency (µs); points: min, reported percentiles, max".into(),
        y_desc: "I/Os at or below (%)".into(),
        x_log: cdf_is_wide(&cdf),
        x_names: None,
        series: cdf,
        legend: Legend::Grouped {
            colors_title: "strategy".into(),
            colors: categories.clone(),
            variants_title: "job".into(),
            variants: job_names.clone(),
        },
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
fn cdf_is_wide(series: &[Series]) -> bool {
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
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
/// several). Colour tells the strategy (and job), line dash and marker
/// the values of the other keys.
pub fn plot_sweep(rows: &[SweepRow], args: &PlotArgs) -> Result<Vec<PathBuf>, PlotError> {
    let mut written = Vec::new();
    for (stem, chart) in sweep_charts(rows)? {
        written.extend(write_line_chart(
            &chart,
            &args.out_dir,
            stem,
            &args.formats,
        )?);
    }
    Ok(written)
}

/// The sweep's charts, `(file stem, chart)`, before drawing.
fn sweep_charts(rows: &[SweepRow]) -> Result<Vec<(&'static str, LineChart)>, PlotError> {
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
    // Colour tells the strategy (and the job, when there are several), so
    // a strategy keeps its colour across the values of the other keys;
    // line dash and marker tell those values. Past the palette, the job
    // moves from colour to line style, so colours stay one per strategy.
    let multi_job = rows.iter().any(|r| r.job != first.job);
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !pairs.contains(&(r.strategy.as_str(), r.job.as_str())) {
            pairs.push((r.strategy.as_str(), r.job.as_str()));
        }
    }
    let job_in_color = multi_job && pairs.len() <= PALETTE.len();
    let job_in_variant = multi_job && !job_in_color;
    let other_keys: Vec<&String> = first.point.keys().skip(1).collect();
    let color_of_row = |r: &SweepRow| {
        if job_in_color {
            format!("{} / {}", r.strategy, r.job)
        } else {
            r.strategy.clone()
        }
    };
    let variant_of_row = |r: &SweepRow| {
        let mut parts: Vec<String> = other_keys.iter().map(|k| value_of(r, k)).collect();
        if job_in_variant {
            parts.push(r.job.clone());
        }
        parts.join(", ")
    };
    let mut colors: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for r in rows {
        let (c, v) = (color_of_row(r), variant_of_row(r));
        if !colors.contains(&c) {
            colors.push(c);
        }
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let mut variants_title: Vec<&str> = other_keys
        .iter()
        .map(|k| short_key(k, first.point.keys()))
        .collect();
    if job_in_variant {
        variants_title.push("job");
    }
    let legend = Legend::Grouped {
        colors_title: if job_in_color {
            "strategy / job".into()
        } else {
            "strategy".into()
        },
        colors: colors.clone(),
        variants_title: variants_title.join(", "),
        variants: variants.clone(),
    };
    let style_of = |r: &SweepRow| {
        let color = colors
            .iter()
            .position(|c| *c == color_of_row(r))
            .unwrap_or(0);
        let variant = variants
            .iter()
            .position(|v| *v == variant_of_row(r))
            .unwrap_or(0);
        (color, variant)
    };
    let name_of = |color: usize, variant: usize| {
        let mut name = colors[color].clone();
        if variants.len() > 1 {
            name = format!("{name}, {}", variants[variant]);
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
    let mut charts = Vec::new();
    for (stem, what, y_desc, metric) in metrics {
        let mut series: Vec<Series> = Vec::new();
        for r in rows {
            let (color, variant) = style_of(r);
            let point = (x_of(&value_of(r, &x_key)), metric(r));
            match series
                .iter_mut()
                .find(|s| s.color == color && s.variant == variant)
            {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    name: name_of(color, variant),
                    points: vec![point],
                    color,
                    variant,
                }),
            }
        }
        for s in &mut series {
            if evenly {
                for p in s.points.iter_mut() {
                    p.0 = xs.iter().position(|&x| x == p.0).unwrap_or(0) as f64;
                }
            }
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
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
            legend: legend.clone(),
            markers: Vec::new(),
        };
        charts.push((stem, chart));
    }
    Ok(charts)
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

    /// A sweep row with only what the charts group by.
    fn row(point: &[(&str, &str)], strategy: &str, job: &str, iops: f64) -> SweepRow {
        SweepRow {
            point: point
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                .collect(),
            strategy: strategy.into(),
            kind: "adaptive".into(),
            job: job.into(),
            iops,
            lat_mean_ns: 1_000.0,
            lat_p50_ns: 1_000,
            lat_p99_ns: 2_000,
            interrupts_per_s: 1_000.0,
            cpu_util: 0.5,
            job_cpu_util: 0.5,
            context_switches_per_io: 1.0,
            wakeups_per_io: 1.0,
            energy: None,
        }
    }

    /// Seven strategies x `jobs`, over `job.a.iodepth` = 1..8 and
    /// `device.model` = x, y, z.
    fn two_key_rows(jobs: &[&str]) -> Vec<SweepRow> {
        let mut rows = Vec::new();
        for depth in ["1", "2", "4", "8"] {
            for model in ["x", "y", "z"] {
                for s in 0..7 {
                    for job in jobs {
                        let point = [("job.a.iodepth", depth), ("device.model", model)];
                        rows.push(row(&point, &format!("s{s}"), job, s as f64));
                    }
                }
            }
        }
        rows
    }

    /// What tells two drawn series apart: colour, fill, dash, marker.
    fn look(s: &Series) -> (RGBColor, bool, Option<(u32, u32)>, Shape) {
        let (color, filled) = color_of(s.color);
        let (dash, shape) = variant_of(s.variant);
        (color, filled, dash, shape)
    }

    /// How many different styles the chart's series are drawn in.
    fn distinct_looks(chart: &LineChart) -> usize {
        let mut looks: Vec<String> = chart
            .series
            .iter()
            .map(|s| format!("{:?}", look(s)))
            .collect();
        looks.sort();
        looks.dedup();
        looks.len()
    }

    #[test]
    fn in_a_sweep_colour_is_the_strategy_and_line_style_the_other_key() {
        let charts = sweep_charts(&two_key_rows(&["j"])).expect("charts");
        assert_eq!(charts.len(), 5);
        let (_, chart) = &charts[0];
        assert_eq!(chart.series.len(), 21);
        for s in &chart.series {
            // Names read "s3, y": strategy, then the other key's value.
            let (strategy, model) = s.name.split_once(", ").expect("two parts");
            assert_eq!(format!("s{}", s.color), strategy, "{}", s.name);
            let v = ["x", "y", "z"].iter().position(|m| *m == model);
            assert_eq!(Some(s.variant), v, "{}", s.name);
            assert_eq!(s.points.len(), 4);
        }
        // No two series look alike (colours used to follow series order
        // and repeat from the 9th on).
        assert_eq!(distinct_looks(chart), 21, "two series drawn alike");
        let Legend::Grouped {
            colors_title,
            colors,
            variants_title,
            variants,
        } = &chart.legend
        else {
            panic!("a sweep over two keys has a grouped legend");
        };
        assert_eq!(colors_title, "strategy");
        assert_eq!(colors, &["s0", "s1", "s2", "s3", "s4", "s5", "s6"]);
        assert_eq!(variants_title, "model");
        assert_eq!(variants, &["x", "y", "z"]);
    }

    #[test]
    fn past_the_palette_the_job_moves_from_colour_to_line_style() {
        // Two jobs: 3 strategies x 2 jobs fit the palette as colours...
        let few: Vec<SweepRow> = two_key_rows(&["async", "sync"])
            .into_iter()
            .filter(|r| ["s0", "s1", "s2"].contains(&r.strategy.as_str()))
            .collect();
        let (_, chart) = &sweep_charts(&few).expect("charts")[0];
        let Legend::Grouped {
            colors, variants, ..
        } = &chart.legend
        else {
            panic!("grouped");
        };
        assert_eq!(colors[..2], ["s0 / async", "s0 / sync"]);
        assert_eq!(variants, &["x", "y", "z"]);
        // ...7 x 2 do not: colour stays one per strategy.
        let (_, chart) = &sweep_charts(&two_key_rows(&["async", "sync"])).expect("charts")[0];
        let Legend::Grouped {
            colors,
            variants_title,
            variants,
            ..
        } = &chart.legend
        else {
            panic!("grouped");
        };
        assert_eq!(colors.len(), 7);
        assert_eq!(variants_title, "model, job");
        assert_eq!(variants[..2], ["x, async", "x, sync"]);
        assert_eq!(chart.series.len(), 42);
        assert_eq!(distinct_looks(chart), 42, "two series drawn alike");
    }

    #[test]
    fn log_axes_get_each_tick_once() {
        let ticks = log_key_points(0.000_999, 52.5);
        assert!(ticks.windows(2).all(|w| w[0] < w[1]), "{ticks:?}");
        assert_eq!(ticks.first(), Some(&0.001));
        assert_eq!(ticks.iter().filter(|&&t| t == 10.0).count(), 1);
        assert_eq!(
            ticks.len(),
            4 * 9 + 5,
            "1..9 times 0.001, 0.01, 0.1, 1; then 10..50"
        );
        assert!(log_key_points(0.0, 1.0).is_empty());

        // Drawn: no label twice at one place (the duplicated "0.01" and "10").
        let dir = out_dir("log");
        let cdf: Vec<(f64, f64)> = (0..=50)
            .map(|i| (0.001 * 10f64.powf(f64::from(i) / 10.0), f64::from(i) * 2.0))
            .collect();
        let chart = LineChart {
            title: "log".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            x_log: true,
            x_names: None,
            series: vec![Series::nth(0, "a", cdf)],
            legend: Legend::Series,
            markers: vec![(20.0, "mark".into())],
        };
        let files = write_line_chart(&chart, &dir, "log", &[Format::Svg]).expect("svg");
        let svg = std::fs::read_to_string(&files[0]).expect("read");
        let mut texts: Vec<(String, String, String)> = svg
            .split("<text ")
            .skip(1)
            .filter_map(|t| {
                let attr = |name: &str| {
                    let start = t.find(&format!("{name}=\""))? + name.len() + 2;
                    Some(t[start..].split('"').next()?.to_string())
                };
                let body = t.split_once('>')?.1.split("</text>").next()?.trim();
                Some((attr("x")?, attr("y")?, body.to_string()))
            })
            .filter(|t| !t.2.is_empty())
            .collect();
        assert!(texts.iter().any(|t| t.2 == "0.01"), "labelled: {texts:?}");
        assert_eq!(texts.iter().filter(|t| t.2 == "0.01").count(), 1);
        let n = texts.len();
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), n, "a label drawn twice at one place");
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
