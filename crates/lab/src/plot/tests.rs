//! The charts' tests: what each chart shows, drawn from result documents
//! and sweeps, and the files written.

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
        (
            "d.jsonl",
            "{\"point\": {}, \"strategy\": \"none\", \"kind\": \"none\", \"job\": \"a\", \
             \"iops\": 7.0, \"lat_mean_ns\": 13.0, \"lat_p50_ns\": 13, \"lat_p99_ns\": 16, \
             \"interrupts_per_s\": 14.0, \"cpu_util\": 0.9, \"job_cpu_util\": 0.3, \
             \"context_switches_per_io\": 1.0, \"wakeups_per_io\": 1.0}\n",
        ),
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
    // A result document with a negative metric is refused, naming it.
    let mut value = serde_json::to_value(&result).expect("json");
    value["results"][0]["jobs"][0]["iops"] = serde_json::json!(-5.0);
    let path = dir.join("negative.json");
    std::fs::write(&path, value.to_string()).expect("write");
    let e = plot_file(&path, &PlotArgs::new(&dir)).expect_err("negative iops");
    let msg = e.to_string();
    assert!(
        msg.contains("negative.json") && msg.contains(".jobs[0]") && msg.contains("iops: -5"),
        "{msg}"
    );
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
        lat_mean_ns: Some(1_000.0),
        lat_p50_ns: Some(1_000),
        lat_p99_ns: Some(2_000),
        interrupts_per_s: 1_000.0,
        cpu_util: 0.5,
        job_cpu_util: 0.5,
        context_switches_per_io: 1.0,
        wakeups_per_io: 1.0,
        energy: None,
        virt: None,
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

#[test]
fn a_sweep_of_guests_adds_the_virtual_machine_charts() {
    let mut rows = two_key_rows(&["j"]);
    assert_eq!(sweep_charts(&rows).expect("charts").len(), 5);
    for (i, r) in rows.iter_mut().enumerate() {
        r.virt = Some(crate::sweep::SweepVirt {
            virtual_interrupts_per_s: 1_000.0 * i as f64,
            ipis_per_s: 10.0,
            cycles_per_io: 64_000.0,
            delivery_ratio: 0.5,
        });
    }
    let charts = sweep_charts(&rows).expect("charts");
    let stems: Vec<&str> = charts.iter().map(|(stem, _)| *stem).collect();
    assert_eq!(
        stems[5..],
        ["sweep_virtual_irqs", "sweep_ipis", "sweep_cycles_per_io"]
    );
    let (_, cycles) = &charts[7];
    assert!(cycles.series[0].points.iter().all(|p| p.1 == 64.0));
}

#[test]
fn a_sweep_with_energy_figures_also_charts_power_and_bytes_per_joule() {
    let mut rows = two_key_rows(&["j"]);
    for (i, r) in rows.iter_mut().enumerate() {
        r.energy = Some(crate::sweep::SweepEnergy {
            energy_j: 1.0,
            power_w: 40.0 + i as f64,
            bytes_per_joule: 2e6,
        });
    }
    let charts = sweep_charts(&rows).expect("charts");
    let stems: Vec<&str> = charts.iter().map(|(stem, _)| *stem).collect();
    assert_eq!(&stems[5..], ["sweep_power", "sweep_bytes_per_joule"]);
    let (_, bpj) = &charts[6];
    assert!(bpj
        .series
        .iter()
        .all(|s| s.points.iter().all(|p| (p.1 - 2.0).abs() < 1e-12)));
    // One row without figures: the energy charts are left out.
    rows[0].energy = None;
    assert_eq!(sweep_charts(&rows).expect("charts").len(), 5);
}

/// A row without a latency sample (a job that ended within its warm-up)
/// has no point on the latency charts, where it drew one at 0; with none
/// in any row those charts are left out.
#[test]
fn rows_without_latency_samples_have_no_latency_points() {
    let mut rows = two_key_rows(&["j"]);
    rows[0].lat_mean_ns = None;
    rows[0].lat_p99_ns = None;
    let charts = sweep_charts(&rows).expect("charts");
    let points = |stem: &str| -> usize {
        let (_, chart) = charts.iter().find(|(s, _)| *s == stem).expect("chart");
        chart.series.iter().map(|s| s.points.len()).sum()
    };
    assert_eq!(points("sweep_latency_mean"), rows.len() - 1);
    assert_eq!(points("sweep_latency_p99"), rows.len() - 1);
    assert_eq!(points("sweep_iops"), rows.len());
    for r in &mut rows {
        (r.lat_mean_ns, r.lat_p99_ns) = (None, None);
    }
    let stems: Vec<&str> = sweep_charts(&rows)
        .expect("charts")
        .iter()
        .map(|(stem, _)| *stem)
        .collect();
    assert_eq!(stems, ["sweep_iops", "sweep_irqs", "sweep_cpu"]);
}

/// A job without a latency sample (it ended within its warm-up) has no
/// latency bar, the label "no sample" where its bar would stand, and no
/// CDF curve, where it drew zeros: a latency of 0 µs.
#[test]
fn a_job_without_latency_samples_has_no_latency_bar_or_curve() {
    let mut result = fake_run(&mixed()).expect("fake run");
    result.results[0].jobs[0].lat_ns = cint_report::LatencyStats::empty();
    let doc = RunDoc::from_result(&result).expect("doc");
    let [_, (_, mean), (_, p99), _, _] = bar_charts(&doc, 0);
    for chart in [&mean, &p99] {
        let (_, first_job) = &chart.series[0];
        assert!(first_job[0].is_nan(), "{first_job:?}");
        assert!(first_job[1..].iter().all(|v| v.is_finite() && *v > 0.0));
    }
    let cdf = latency_cdf(&doc);
    let curves = doc.results.iter().map(|s| s.jobs.len()).sum::<usize>();
    assert_eq!(cdf.series.len(), curves - 1);
    let dir = out_dir("unsampled");
    let mut args = PlotArgs::new(&dir);
    args.baseline = Some("none".into());
    plot_run(&doc, &args).expect("plots");
    let svg = std::fs::read_to_string(dir.join("latency_mean.svg")).expect("svg");
    assert!(svg.contains("no sample"), "the missing bar is labelled");
    let _ = std::fs::remove_dir_all(&dir);
}
