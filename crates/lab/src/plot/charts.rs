//! The chart layouts: which charts a result document and a sweep file
//! give, and what each one shows.

use super::*;

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
    let mut written = Vec::new();
    for (stem, chart) in &bar_charts(doc, baseline) {
        written.extend(write_bar_chart(chart, &args.out_dir, stem, &args.formats)?);
    }
    written.extend(write_line_chart(
        &latency_cdf(doc),
        &args.out_dir,
        "latency_cdf",
        &args.formats,
    )?);
    Ok(written)
}

/// The chart title of `what` in the document.
fn run_title(doc: &RunDoc, what: &str) -> String {
    format!(
        "{what} — {} on {} ({})",
        doc.scenario, doc.device, doc.substrate
    )
}

/// The bar charts of a result document, `(file stem, chart)`: a bar per
/// strategy and job (and their total), `baseline` the strategy the bars
/// are labelled relative to.
pub(super) fn bar_charts(doc: &RunDoc, baseline: usize) -> [(&'static str, BarChart); 5] {
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
    let title = |what: &str| run_title(doc, what);
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
    [
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
                series: per_job(&|j| latency(j, j.lat_ns.mean)),
                baseline,
            },
        ),
        (
            "latency_p99",
            BarChart {
                title: title("99th percentile latency"),
                y_desc: "p99 latency (µs)".into(),
                categories: categories.clone(),
                series: per_job(&|j| latency(j, j.lat_ns.at(99.0).unwrap_or(0) as f64)),
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
    ]
}

/// Job `j`'s latency `ns` in microseconds, or NaN, no bar, where it took
/// no sample.
fn latency(j: &JobDoc, ns: f64) -> f64 {
    if j.lat_ns.sampled() {
        ns / 1e3
    } else {
        f64::NAN
    }
}

/// The latency CDF of every strategy and job, from the reported
/// percentiles between the minimum and the maximum. Colour is the
/// strategy, line style the job, as in the sweep charts.
pub(super) fn latency_cdf(doc: &RunDoc) -> LineChart {
    let categories: Vec<String> = doc.results.iter().map(|s| s.strategy.clone()).collect();
    let job_names: Vec<String> = doc.results[0].jobs.iter().map(|j| j.name.clone()).collect();
    let multi_job = job_names.len() > 1;
    let mut cdf = Vec::new();
    for (si, s) in doc.results.iter().enumerate() {
        // A job without a latency sample has no curve.
        for (ji, j) in s
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.lat_ns.sampled())
        {
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
    LineChart {
        title: run_title(doc, "Latency CDF"),
        x_desc: "latency (µs); points: min, reported percentiles, max".into(),
        y_desc: "I/Os at or below (%)".into(),
        x_log: cdf_is_wide(&cdf),
        x_names: None,
        series: cdf,
        legend: Legend::Grouped {
            colors_title: "strategy".into(),
            colors: categories,
            variants_title: "job".into(),
            variants: job_names,
        },
        markers: Vec::new(),
    }
}

/// A long tail squeezes the body of a linear CDF into one pixel column.
pub(super) fn cdf_is_wide(series: &[Series]) -> bool {
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
    let lo = xs().fold(f64::MAX, f64::min);
    let hi = xs().fold(0.0, f64::max);
    lo > 0.0 && hi / lo > 20.0
}

/// How a sweep's x values are placed.
pub(super) fn x_axis(values: &[String]) -> (Vec<f64>, Option<Vec<String>>, String) {
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

/// `(file stem, title, y axis label, value of a row)`; a row without
/// the value (a job without latency samples) has no point.
pub(super) type SweepMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SweepRow) -> Option<f64>,
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

/// The text of a sweep row's value for key `k` (empty if it has none).
fn value_of(r: &SweepRow, k: &str) -> String {
    r.point
        .get(k)
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string()
}

/// How a sweep's lines are told apart. Colour tells the strategy (and the
/// job, when there are several), so a strategy keeps its colour across
/// the values of the other keys; line dash and marker tell those values.
/// Past the palette, the job moves from colour to line style, so colours
/// stay one per strategy.
struct SweepStyles<'r> {
    job_in_color: bool,
    job_in_variant: bool,
    /// The varied keys but the x axis's.
    other_keys: Vec<&'r String>,
    /// The entries of each colour and of each line style, in the order
    /// the rows first show them.
    colors: Vec<String>,
    variants: Vec<String>,
}

impl<'r> SweepStyles<'r> {
    fn new(rows: &'r [SweepRow]) -> SweepStyles<'r> {
        let first = &rows[0];
        let multi_job = rows.iter().any(|r| r.job != first.job);
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for r in rows {
            if !pairs.contains(&(r.strategy.as_str(), r.job.as_str())) {
                pairs.push((r.strategy.as_str(), r.job.as_str()));
            }
        }
        let job_in_color = multi_job && pairs.len() <= PALETTE.len();
        let mut styles = SweepStyles {
            job_in_color,
            job_in_variant: multi_job && !job_in_color,
            other_keys: first.point.keys().skip(1).collect(),
            colors: Vec::new(),
            variants: Vec::new(),
        };
        for r in rows {
            let (c, v) = (styles.color_of_row(r), styles.variant_of_row(r));
            if !styles.colors.contains(&c) {
                styles.colors.push(c);
            }
            if !styles.variants.contains(&v) {
                styles.variants.push(v);
            }
        }
        styles
    }

    fn color_of_row(&self, r: &SweepRow) -> String {
        if self.job_in_color {
            format!("{} / {}", r.strategy, r.job)
        } else {
            r.strategy.clone()
        }
    }

    fn variant_of_row(&self, r: &SweepRow) -> String {
        let mut parts: Vec<String> = self.other_keys.iter().map(|k| value_of(r, k)).collect();
        if self.job_in_variant {
            parts.push(r.job.clone());
        }
        parts.join(", ")
    }

    /// The row's `(colour, line style)`.
    fn style_of(&self, r: &SweepRow) -> (usize, usize) {
        let color_name = self.color_of_row(r);
        let variant_name = self.variant_of_row(r);
        let color = self
            .colors
            .iter()
            .position(|c| *c == color_name)
            .unwrap_or(0);
        let variant = self
            .variants
            .iter()
            .position(|v| *v == variant_name)
            .unwrap_or(0);
        (color, variant)
    }

    /// A line's name: its colour's entry, and its style's when there are
    /// several.
    fn name_of(&self, color: usize, variant: usize) -> String {
        let mut name = self.colors[color].clone();
        if self.variants.len() > 1 {
            name = format!("{name}, {}", self.variants[variant]);
        }
        name
    }

    /// The legend: the colours' entries, then the line styles'.
    fn legend(&self, first: &SweepRow) -> Legend {
        let mut variants_title: Vec<&str> = self
            .other_keys
            .iter()
            .map(|k| short_key(k, first.point.keys()))
            .collect();
        if self.job_in_variant {
            variants_title.push("job");
        }
        Legend::Grouped {
            colors_title: if self.job_in_color {
                "strategy / job".into()
            } else {
                "strategy".into()
            },
            colors: self.colors.clone(),
            variants_title: variants_title.join(", "),
            variants: self.variants.clone(),
        }
    }
}

/// The metrics a sweep's rows have figures for: every run's, then the
/// guests' and the energy model's where every row has them.
fn sweep_metrics(rows: &[SweepRow]) -> Vec<SweepMetric> {
    let mut metrics: Vec<SweepMetric> = vec![
        ("sweep_iops", "Throughput", "IOPS (thousands)", |r| {
            Some(r.iops / 1e3)
        }),
        (
            "sweep_latency_mean",
            "Mean latency",
            "mean latency (µs)",
            |r| r.lat_mean_ns.map(|ns| ns / 1e3),
        ),
        (
            "sweep_latency_p99",
            "99th percentile latency",
            "p99 latency (µs)",
            |r| r.lat_p99_ns.map(|ns| ns as f64 / 1e3),
        ),
        (
            "sweep_irqs",
            "Interrupt rate",
            "interrupts per second (thousands)",
            |r| Some(r.interrupts_per_s / 1e3),
        ),
        ("sweep_cpu", "CPU utilisation", "CPU busy (%)", |r| {
            Some(r.cpu_util * 100.0)
        }),
    ];
    // Guests' runs (docs/VIRT.md): their virtual interrupts and the cycles
    // every core spends per guest I/O.
    if rows.iter().all(|r| r.virt.is_some()) {
        let virt: [SweepMetric; 3] = [
            (
                "sweep_virtual_irqs",
                "Virtual interrupt rate",
                "virtual interrupts per second (thousands)",
                |r| r.virt.map(|v| v.virtual_interrupts_per_s / 1e3),
            ),
            (
                "sweep_ipis",
                "IPI rate",
                "IPIs per second (thousands)",
                |r| r.virt.map(|v| v.ipis_per_s / 1e3),
            ),
            (
                "sweep_cycles_per_io",
                "CPU cycles per guest I/O",
                "cycles per I/O (thousands)",
                |r| r.virt.map(|v| v.cycles_per_io / 1e3),
            ),
        ];
        metrics.extend(virt);
    }
    // With an energy model (every row has its figures), its two charts.
    if rows.iter().all(|r| r.energy.is_some()) {
        metrics.push(("sweep_power", "Mean system power", "power (W)", |r| {
            r.energy.map(|e| e.power_w)
        }));
        metrics.push((
            "sweep_bytes_per_joule",
            "Energy efficiency",
            "megabytes per joule",
            |r| r.energy.map(|e| e.bytes_per_joule / 1e6),
        ));
    }
    metrics
}

/// A sweep's x axis: the first varied key's values, in the order the
/// rows first show them, and where each is drawn.
struct SweepAxis {
    key: String,
    values: Vec<String>,
    xs: Vec<f64>,
    names: Option<Vec<String>>,
    unit: String,
    /// Evenly spaced and labelled with the values themselves.
    evenly: bool,
    log: bool,
}

impl SweepAxis {
    fn new(rows: &[SweepRow], key: String) -> SweepAxis {
        let mut values: Vec<String> = Vec::new();
        for r in rows {
            let v = value_of(r, &key);
            if !values.contains(&v) {
                values.push(v);
            }
        }
        let (xs, names, unit) = x_axis(&values);
        let positive = xs.iter().all(|&x| x > 0.0);
        let (lo, hi) = xs
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let wide = positive && hi / lo >= 16.0;
        // Few values spread over decades read best evenly spaced and
        // labelled with the values themselves, as papers draw thr sweeps.
        let evenly = names.is_none() && wide && values.len() <= 16;
        let log = names.is_none() && wide && !evenly;
        SweepAxis {
            key,
            values,
            xs,
            names,
            unit,
            evenly,
            log,
        }
    }

    /// Where the row's value is drawn.
    fn x_of(&self, r: &SweepRow) -> f64 {
        let v = value_of(r, &self.key);
        let Some(i) = self.values.iter().position(|x| *x == v) else {
            return 0.0;
        };
        let x = self.xs[i];
        if self.evenly {
            // Values that read as one number share its first position.
            self.xs.iter().position(|&other| other == x).unwrap_or(0) as f64
        } else {
            x
        }
    }

    /// The labels of its positions, if not numbers.
    fn labels(&self) -> Option<Vec<String>> {
        if self.evenly {
            Some(self.values.clone())
        } else {
            self.names.clone()
        }
    }
}

/// The sweep's charts, `(file stem, chart)`, before drawing.
pub(super) fn sweep_charts(rows: &[SweepRow]) -> Result<Vec<(&'static str, LineChart)>, PlotError> {
    let first = rows
        .first()
        .ok_or_else(|| PlotError("the sweep has no rows".into()))?;
    let x_key = first
        .point
        .keys()
        .next()
        .cloned()
        .ok_or_else(|| PlotError("the sweep rows name no varied key".into()))?;
    let axis = SweepAxis::new(rows, x_key);
    let styles = SweepStyles::new(rows);
    let legend = styles.legend(first);
    let mut charts = Vec::new();
    for (stem, what, y_desc, metric) in sweep_metrics(rows) {
        let mut series: Vec<Series> = Vec::new();
        for r in rows {
            let Some(y) = metric(r) else {
                continue;
            };
            let (color, variant) = styles.style_of(r);
            let point = (axis.x_of(r), y);
            match series
                .iter_mut()
                .find(|s| s.color == color && s.variant == variant)
            {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    name: styles.name_of(color, variant),
                    points: vec![point],
                    color,
                    variant,
                }),
            }
        }
        // No row has the metric (no job took a latency sample): no chart.
        if series.is_empty() {
            continue;
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let chart = LineChart {
            title: format!("{what} vs {}", axis.key),
            x_desc: format!("{}{}", axis.key, axis.unit),
            y_desc: y_desc.into(),
            x_log: axis.log,
            x_names: axis.labels(),
            series,
            legend: legend.clone(),
            markers: Vec::new(),
        };
        charts.push((stem, chart));
    }
    Ok(charts)
}
