//! The human sink: one row per strategy x job (IOPS, bandwidth, mean,
//! p50, p99, p99.9 and maximum latency in microseconds, IRQs/s, CPU %,
//! context switches per IO), then one line of totals per strategy, in
//! aligned columns, and a legend of the columns.
//!
//! Interrupts are counted per device queue, not per job, so job rows show
//! `-` for IRQs/s and IRQs per IO; the totals lines carry them. The tail
//! columns (p99.9, max) are where coalescing strategies differ most: a
//! held completion shows there long before it moves the mean.

use crate::{JobResult, RunResult, StrategyResult};

const COLUMNS: usize = 13;

const HEADER: [&str; COLUMNS] = [
    "strategy", "job", "IOPS", "MiB/s", "mean_us", "p50_us", "p99_us", "p99.9_us", "max_us",
    "IRQ/s", "IRQ/IO", "CPU%", "cs/IO",
];

/// What the columns mean, printed under the table.
pub const LEGEND: &str = "IOPS, MiB/s: I/Os and mebibytes completed per second of measured \
time; mean/p50/p99/p99.9/max_us: latency of an I/O from its system call to its completion \
in the application's hand, microseconds (percentiles to 3 significant digits); IRQ/s, \
IRQ/IO: device interrupts per second and per I/O (per queue, so on totals lines only); \
CPU%: busy share of the job's core over the job's window (totals: mean over the \
application cores over the run); cs/IO: \
context switches per I/O; -: no sample";

/// The result as an aligned text table, ending in a newline.
pub fn to_table(r: &RunResult) -> String {
    let mut rows: Vec<[String; COLUMNS]> = Vec::new();
    for s in &r.results {
        for j in &s.jobs {
            rows.push(job_row(s, j));
        }
    }
    let mut totals: Vec<[String; COLUMNS]> = r.results.iter().map(total_row).collect();
    let mut out = format!(
        "{} on {}: device {}, host {}, seed {}, {} ms measured\n\n",
        r.scenario,
        r.substrate,
        r.device,
        r.host,
        r.seed,
        fixed(r.duration_ns as f64 / 1e6, 1)
    );
    for note in &r.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    if !r.notes.is_empty() {
        out.push('\n');
    }
    let header = HEADER.map(String::from);
    let widths = column_widths(std::iter::once(&header).chain(&rows).chain(&totals));
    out.push_str(&line(&header, &widths));
    for row in &rows {
        out.push_str(&line(row, &widths));
    }
    out.push('\n');
    for row in &mut totals {
        out.push_str(&line(row, &widths));
    }
    let energy = crate::energy_table::section(r);
    out.push_str(&energy);
    out.push_str(&crate::trace::section(r));
    out.push_str(&crate::sync::section(r));
    let virt = crate::virt_table::section(r);
    out.push_str(&virt);
    let modes = crate::modes_table::section(r);
    out.push_str(&modes);
    out.push_str(&format!("\ncolumns: {LEGEND}\n"));
    if !energy.is_empty() {
        out.push_str(&format!("energy: {}\n", crate::energy_table::ENERGY_LEGEND));
    }
    if !virt.is_empty() {
        out.push_str(&format!(
            "virtual machines: {}\n",
            crate::virt_table::VIRT_LEGEND
        ));
    }
    if !modes.is_empty() {
        out.push_str(&format!(
            "completion modes: {}\n",
            crate::modes_table::MODES_LEGEND
        ));
    }
    out
}

fn job_row(s: &StrategyResult, j: &JobResult) -> [String; COLUMNS] {
    // A job without samples has its percentile keys at 0 (fio's JSON);
    // the table shows it has none.
    let pct = |p: f64| match j.lat_ns.at(p) {
        Some(ns) if j.lat_ns.n > 0 => us(ns as f64),
        _ => "-".into(),
    };
    [
        s.strategy.clone(),
        j.name.clone(),
        fixed(j.iops, 0),
        mib(j.bw_bytes as f64),
        if j.lat_ns.n == 0 {
            "-".into()
        } else {
            us(j.lat_ns.mean)
        },
        pct(50.0),
        pct(99.0),
        pct(99.9),
        if j.lat_ns.n == 0 {
            "-".into()
        } else {
            us(j.lat_ns.max as f64)
        },
        "-".into(),
        "-".into(),
        fixed(j.cpu_util * 100.0, 1),
        per_io(j.context_switches, j.ios),
    ]
}

fn total_row(s: &StrategyResult) -> [String; COLUMNS] {
    let ios: u64 = s.jobs.iter().map(|j| j.ios).sum();
    let bw: u64 = s.jobs.iter().map(|j| j.bw_bytes).sum();
    // The mean over all IOs, weighting each job by its sample count;
    // percentiles of a union cannot be derived from per-job percentiles.
    let samples: u64 = s.jobs.iter().map(|j| j.lat_ns.n).sum();
    let mean = if samples == 0 {
        "-".into()
    } else {
        let weighted: f64 = s
            .jobs
            .iter()
            .map(|j| j.lat_ns.mean * j.lat_ns.n as f64)
            .sum();
        us(weighted / samples as f64)
    };
    // The largest latency of all jobs is the union's maximum.
    let max = s
        .jobs
        .iter()
        .filter(|j| j.lat_ns.n > 0)
        .map(|j| j.lat_ns.max)
        .max()
        .map_or_else(|| "-".into(), |m| us(m as f64));
    [
        s.strategy.clone(),
        "(total)".into(),
        fixed(s.total_iops(), 0),
        mib(bw as f64),
        mean,
        "-".into(),
        "-".into(),
        "-".into(),
        max,
        fixed(s.interrupts_per_s, 0),
        ratio(s.interrupts, ios),
        fixed(s.cpu_util * 100.0, 1),
        per_io(s.context_switches, ios),
    ]
}

fn fixed(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "-".into()
    }
}

fn us(ns: f64) -> String {
    fixed(ns / 1_000.0, 1)
}

fn mib(bytes_per_s: f64) -> String {
    fixed(bytes_per_s / (1u64 << 20) as f64, 1)
}

fn ratio(n: u64, ios: u64) -> String {
    if ios == 0 {
        "-".into()
    } else {
        fixed(n as f64 / ios as f64, 3)
    }
}

fn per_io(n: u64, ios: u64) -> String {
    ratio(n, ios)
}

fn column_widths<'a>(rows: impl Iterator<Item = &'a [String; COLUMNS]>) -> [usize; COLUMNS] {
    let mut w = [0; COLUMNS];
    for row in rows {
        for (width, cell) in w.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    w
}

/// Names left-aligned, numbers right-aligned, two spaces between columns.
fn line(row: &[String; COLUMNS], widths: &[usize; COLUMNS]) -> String {
    aligned(row, widths)
}

/// One line of cells: the first two (names) left-aligned, the rest
/// (numbers) right-aligned, two spaces between, no trailing blanks.
pub(crate) fn aligned(row: &[String], widths: &[usize]) -> String {
    let mut out = String::new();
    for (i, (cell, &w)) in row.iter().zip(widths).enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        if i < 2 {
            out.push_str(&format!("{cell:<w$}"));
        } else {
            out.push_str(&format!("{cell:>w$}"));
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// A titled block of aligned rows (the first is the header), for the
/// sections printed under the main table.
pub(crate) fn aligned_block(title: &str, rows: &[Vec<String>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("\n{title}:\n");
    for row in rows {
        out.push_str(&aligned(row, &widths));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    #[test]
    fn one_row_per_strategy_and_job_then_totals() {
        let text = to_table(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("mixed on sim: device optane-p4800x"));
        assert!(lines[2].starts_with("strategy"));
        let rows: Vec<&str> = lines[3..7].to_vec();
        let firsts: Vec<(&str, &str)> = rows
            .iter()
            .map(|l| {
                let mut w = l.split_whitespace();
                (w.next().unwrap(), w.next().unwrap())
            })
            .collect();
        assert_eq!(
            firsts,
            [
                ("default", "async"),
                ("default", "sync"),
                ("cint", "async"),
                ("cint", "sync")
            ]
        );
        assert_eq!(lines[7], "");
        assert!(lines[8].starts_with("default") && lines[8].contains("(total)"));
        assert!(lines[9].starts_with("cint") && lines[9].contains("(total)"));
        assert_eq!(lines[10], "");
        assert!(lines[11].starts_with("columns: IOPS"), "{}", lines[11]);
        assert_eq!(lines.len(), 12);
    }

    #[test]
    fn figures_are_computed_and_columns_aligned() {
        let text = to_table(&sample());
        let lines: Vec<&str> = text
            .lines()
            .skip(2)
            .filter(|l| !l.is_empty() && !l.starts_with("columns:"))
            .collect();
        let cells = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        // default/async: 80000 IOs in 0.2 s, bw = 80000*4096*5 B/s.
        let row = cells(lines[1]);
        assert_eq!(row[2], "400000");
        assert_eq!(row[3], fixed(80_000.0 * 4096.0 * 5.0 / 1_048_576.0, 1));
        assert_eq!(row[4], "25.0", "mean of 10, 20, 30, 40 us");
        assert_eq!(row[7], "40.0", "p99.9 of 10, 20, 30, 40 us");
        assert_eq!(row[8], "40.0", "max of 10, 20, 30, 40 us");
        assert_eq!(row[9], "-");
        assert_eq!(row[12], "0.013", "1000 context switches over 80000 IOs");
        // default totals: 100000 IRQs over 100000 IOs; 20000 cs.
        let total = cells(lines[5]);
        assert_eq!(total[0..2], ["default".to_string(), "(total)".to_string()]);
        assert_eq!(total[2], "500000");
        assert_eq!(total[8], "40.0", "the largest of both jobs");
        assert_eq!(total[9], "500000");
        assert_eq!(total[10], "1.000");
        assert_eq!(total[11], "99.0");
        assert_eq!(total[12], "0.200");
        // Every line ends where the widest cell of its last column ends:
        // right-aligned numbers make all rows the same width.
        let width = lines[0].len();
        assert!(lines.iter().all(|l| l.len() == width), "{text}");
    }

    #[test]
    fn empty_and_degenerate_results_do_not_divide_by_zero() {
        let mut r = sample();
        for s in &mut r.results {
            for j in &mut s.jobs {
                j.ios = 0;
                j.iops = f64::NAN;
                j.lat_ns = Default::default();
            }
        }
        let text = to_table(&r);
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    }
}
