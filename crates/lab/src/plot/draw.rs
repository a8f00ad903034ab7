//! Drawing: the palette, dashes and markers, the bar and line chart types,
//! their legends and axes, and writing a chart as PNG or SVG.

use super::*;

/// Line and bar colours (Tableau 10 with its grey replaced by black, so
/// that no colour reads as the grey of markers and of the line-style
/// legend).
pub(super) const PALETTE: [RGBColor; 10] = [
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
pub(super) const DASHES: [Option<(u32, u32)>; 4] =
    [None, Some((12, 6)), Some((3, 4)), Some((24, 6))];

/// Marker shapes of the style variants, the second half of a variant
/// (with [`DASHES`]). Their counts are coprime, so the first 20 variants
/// all differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
}

pub(super) const SHAPES: [Shape; 5] = [
    Shape::Circle,
    Shape::Square,
    Shape::TriangleUp,
    Shape::Diamond,
    Shape::TriangleDown,
];

/// The colour of the line-style half of a grouped legend: neutral, so it
/// is not read as a series of its own.
pub(super) const VARIANT_GREY: RGBColor = RGBColor(70, 70, 70);

pub(crate) const FONT: &str = "sans-serif";
pub(super) const MARKER: RGBColor = RGBColor(90, 90, 90);
pub(super) const LEGEND_WIDTH: u32 = 250;
pub(super) const SIZE: (u32, u32) = (1100, 620);

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
    /// `(series name, one value per category)`; NaN where there is no
    /// value (a job without latency samples), drawn as no bar.
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

pub(crate) type PngDraw<'a> =
    dyn Fn(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String> + 'a;
pub(crate) type SvgDraw<'a> =
    dyn Fn(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> + 'a;

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

pub(super) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

pub(super) fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        1.0
    } else {
        v
    }
}

pub(super) fn draw_bars<DB: DrawingBackend>(
    c: &BarChart,
    full: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
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
        let present = || values.iter().enumerate().filter(|(_, v)| !v.is_nan());
        let bars = present().map(|(ci, &v)| {
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
            let (label, y) = match v {
                v if v.is_nan() => ("no sample".to_string(), 0.0),
                v if base > 0.0 => (format!("{:.2}x", v / base), v),
                v => ("-".into(), v),
            };
            Text::new(label, (x, y + y_top * 0.01), label_style.clone())
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
pub(super) fn color_of(i: usize) -> (RGBColor, bool) {
    (PALETTE[i % PALETTE.len()], (i / PALETTE.len()) % 2 == 0)
}

/// The dash and marker shape of a style variant.
pub(super) fn variant_of(v: usize) -> (Option<(u32, u32)>, Shape) {
    (DASHES[v % DASHES.len()], SHAPES[v % SHAPES.len()])
}

/// A marker's outline around its centre, in pixels; `None` for a circle.
pub(super) fn shape_outline(shape: Shape, r: i32) -> Option<Vec<(i32, i32)>> {
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
pub(super) fn dashed_segments(
    from: i32,
    to: i32,
    y: i32,
    dash: Option<(u32, u32)>,
) -> Vec<[(i32, i32); 2]> {
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
pub(super) enum Swatch {
    /// A filled box: a bar series.
    Box(RGBColor),
    /// A line with an optional marker: `(colour, dash, marker shape,
    /// filled)`.
    Line(RGBColor, Option<(u32, u32)>, Option<Shape>, bool),
}

/// One row of a legend.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum LegendRow {
    /// A heading of a group of entries.
    Title(String),
    /// A name and its swatch.
    Entry(String, Swatch),
}

/// Series with more points than this are drawn without markers: a dense
/// curve (a CDF) would drown in them.
pub(super) const MARKER_LIMIT: usize = 40;

/// The swatch of a series drawn in colour `color` and variant `variant`,
/// with its marker if the series shows markers.
pub(super) fn series_swatch(color: usize, variant: usize, marked: bool) -> Swatch {
    let (rgb, filled) = color_of(color);
    let (dash, shape) = variant_of(variant);
    Swatch::Line(rgb, dash, marked.then_some(shape), filled)
}

/// The rows of a line chart's legend: its series (or its colours, then its
/// line styles), then its vertical markers.
pub(super) fn line_legend(c: &LineChart) -> Vec<LegendRow> {
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
pub(super) fn short_key<'k>(key: &'k str, all: impl Iterator<Item = &'k String>) -> &'k str {
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
pub(super) fn with_legend<DB: DrawingBackend>(
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
pub(super) fn draw_marker<DB: DrawingBackend>(
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

pub(super) fn format_value(v: f64) -> String {
    if (v == v.round() && v.abs() < 1e15) || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Labels 1, 2 and 5 of every decade; plotters offers many more points.
pub(super) fn log_tick(v: f64) -> String {
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

pub(super) fn line_builder<'a, 'b, DB: DrawingBackend>(
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
pub(super) fn log_key_points(lo: f64, hi: f64) -> Vec<f64> {
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

pub(super) fn draw_lines<DB: DrawingBackend>(
    c: &LineChart,
    full: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
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
