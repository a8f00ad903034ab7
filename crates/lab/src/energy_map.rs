//! The energy study's Figure 3: per (request size, threads) tile of a
//! sweep, the completion mode that moves the most bytes per joule, its
//! margin over the next, and whether repeated seeds separate the two
//! (Student's two-sample t-test; a tie where p > 0.05). Written as a CSV
//! and drawn as a heat map (PNG and SVG).
//!
//! The sweep varies a size key and a threads key (`job.NAME.bs`,
//! `job.NAME.numjobs`); every other varied key (usually `seed`) gives the
//! repeated samples of a tile.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::plot::{self, Format, PlotError};
use crate::sweep::SweepRow;

/// The significance level below which the top two are told apart.
pub const TIE_P: f64 = 0.05;

/// One tile of the map.
#[derive(Clone, Debug, PartialEq)]
pub struct Tile {
    /// The size key's value.
    pub size: String,
    /// The threads key's value.
    pub threads: String,
    /// The strategy with the most bytes per joule (mean over samples).
    pub winner: String,
    /// The next one.
    pub runner_up: String,
    /// `winner / runner_up - 1` of the means.
    pub margin: f64,
    /// Two-sided p-value of the t-test between the two (`None` with fewer
    /// than two samples each).
    pub p: Option<f64>,
    /// Samples per strategy.
    pub samples: usize,
}

impl Tile {
    /// The seeds do not separate the top two.
    pub fn tie(&self) -> bool {
        self.p.is_some_and(|p| p > TIE_P)
    }
}

/// Student's two-sample t-test (pooled variance), two-sided.
pub fn t_test(a: &[f64], b: &[f64]) -> Option<f64> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (ma, mb) = (mean(a), mean(b));
    let ss = |x: &[f64], m: f64| x.iter().map(|v| (v - m) * (v - m)).sum::<f64>();
    let df = na + nb - 2.0;
    let pooled = (ss(a, ma) + ss(b, mb)) / df;
    let se = (pooled * (1.0 / na + 1.0 / nb)).sqrt();
    if se == 0.0 {
        // Identical samples within each group: equal means tie, else the
        // difference is certain.
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = ((ma - mb) / se).abs();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t))).clamp(0.0, 1.0))
}

/// A tile's samples: strategy -> bytes per joule, one per other point.
type TileSamples = BTreeMap<String, BTreeMap<String, f64>>;

/// The tiles of a sweep: (size, threads) and their samples.
type SamplesByTile = Vec<((String, String), TileSamples)>;

/// The samples of `rows` per (size, threads) tile, tiles in the order
/// they first appear; a tile with fewer than two strategies is refused.
fn samples_by_tile(
    rows: &[SweepRow],
    size_key: &str,
    threads_key: &str,
) -> Result<SamplesByTile, String> {
    // Jobs of one strategy share its energy: one sample per point.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut tiles: BTreeMap<(String, String), TileSamples> = BTreeMap::new();
    for row in rows {
        let value = |key: &str| {
            row.point
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("the sweep does not vary {key}"))
        };
        let size = value(size_key)?;
        let threads = value(threads_key)?;
        let energy = row.energy.ok_or_else(|| {
            format!(
                "strategy '{}' has no energy figures: the scenario's host and device need power \
                 data (docs/ENERGY.md)",
                row.strategy
            )
        })?;
        let rest: Vec<String> = row
            .point
            .iter()
            .filter(|(k, _)| *k != size_key && *k != threads_key)
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        let tile = (size, threads);
        if !tiles.contains_key(&tile) {
            order.push(tile.clone());
        }
        tiles
            .entry(tile)
            .or_default()
            .entry(row.strategy.clone())
            .or_default()
            .insert(rest.join(" "), energy.bytes_per_joule);
    }
    order
        .into_iter()
        .map(|key| {
            let samples = tiles.remove(&key).unwrap_or_default();
            if samples.len() < 2 {
                return Err(format!(
                    "tile {}/{}: a map needs at least two strategies",
                    key.0, key.1
                ));
            }
            Ok((key, samples))
        })
        .collect()
}

/// A tile's strategies with their samples and mean, the highest mean
/// first and equal means in name order (deterministic).
fn ranked(samples: &TileSamples) -> Vec<(&String, Vec<f64>, f64)> {
    let mut ranked: Vec<(&String, Vec<f64>, f64)> = samples
        .iter()
        .map(|(s, samples)| {
            let v: Vec<f64> = samples.values().copied().collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            (s, v, mean)
        })
        .collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(b.0)));
    ranked
}

/// `a / b - 1`, or 0 when `b` is not positive.
fn margin(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b - 1.0
    } else {
        0.0
    }
}

/// The tiles of `rows`, sizes and threads in the order they first appear.
pub fn winner_map(
    rows: &[SweepRow],
    size_key: &str,
    threads_key: &str,
) -> Result<Vec<Tile>, String> {
    let mut out = Vec::new();
    for (key, samples) in samples_by_tile(rows, size_key, threads_key)? {
        let ranked = ranked(&samples);
        let (first, second) = (&ranked[0], &ranked[1]);
        out.push(Tile {
            size: key.0,
            threads: key.1,
            winner: first.0.clone(),
            runner_up: second.0.clone(),
            margin: margin(first.2, second.2),
            p: t_test(&first.1, &second.1),
            samples: first.1.len().min(second.1.len()),
        });
    }
    Ok(out)
}

/// One strategy of one tile against the best of the tile's other
/// strategies: how a strategy (a mode selector, say) stands against the
/// best of the rest, which the map's winner and runner-up do not tell
/// when it is neither.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// The size key's value.
    pub size: String,
    /// The threads key's value.
    pub threads: String,
    /// The strategy.
    pub strategy: String,
    /// Its mean bytes per joule.
    pub bytes_per_joule: f64,
    /// The tile's other strategy with the highest mean.
    pub best_other: String,
    /// `strategy / best_other - 1` of the means: above 0 it is ahead.
    pub margin: f64,
    /// Two-sided p-value of the t-test between the two.
    pub p: Option<f64>,
}

impl Standing {
    /// The seeds do not separate it from the best of the others.
    pub fn tie(&self) -> bool {
        self.p.is_some_and(|p| p > TIE_P)
    }
}

/// Every strategy of every tile against the best of the others, tiles in
/// the order they first appear and strategies in name order.
pub fn standings(
    rows: &[SweepRow],
    size_key: &str,
    threads_key: &str,
) -> Result<Vec<Standing>, String> {
    let mut out = Vec::new();
    for (key, samples) in samples_by_tile(rows, size_key, threads_key)? {
        let ranked = ranked(&samples);
        let mut by_name: Vec<_> = ranked.iter().collect();
        by_name.sort_by_key(|r| r.0);
        for (strategy, mine, mean) in by_name {
            let Some(best) = ranked.iter().find(|r| r.0 != *strategy) else {
                continue;
            };
            out.push(Standing {
                size: key.0.clone(),
                threads: key.1.clone(),
                strategy: (*strategy).clone(),
                bytes_per_joule: *mean,
                best_other: best.0.clone(),
                margin: margin(*mean, best.2),
                p: t_test(mine, &best.1),
            });
        }
    }
    Ok(out)
}

/// The standings as CSV:
/// `size,threads,strategy,bytes_per_joule,best_other,margin,p,tie`.
pub fn standings_csv(standings: &[Standing]) -> String {
    let mut out = String::from("size,threads,strategy,bytes_per_joule,best_other,margin,p,tie\n");
    for s in standings {
        out.push_str(&format!(
            "{},{},{},{:.1},{},{:.6},{},{}\n",
            s.size,
            s.threads,
            s.strategy,
            s.bytes_per_joule,
            s.best_other,
            s.margin,
            s.p.map_or_else(String::new, |p| format!("{p:.6}")),
            s.tie()
        ));
    }
    out
}

/// The map as CSV: `size,threads,winner,runner_up,margin,p,tie`.
pub fn map_csv(tiles: &[Tile]) -> String {
    let mut out = String::from("size,threads,winner,runner_up,margin,p,tie\n");
    for t in tiles {
        out.push_str(&format!(
            "{},{},{},{},{:.6},{},{}\n",
            t.size,
            t.threads,
            t.winner,
            t.runner_up,
            t.margin,
            t.p.map_or_else(String::new, |p| format!("{p:.6}")),
            t.tie()
        ));
    }
    out
}

/// Writes `winners.csv`, `winners.png` and `winners.svg` into `dir`, and
/// `strategies.csv` (every strategy against the best of the others).
pub fn write_map(
    dir: &Path,
    tiles: &[Tile],
    standings: &[Standing],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError(format!("{}: {e}", dir.display())))?;
    let mut written = Vec::new();
    for (name, text) in [
        ("winners.csv", map_csv(tiles)),
        ("strategies.csv", standings_csv(standings)),
    ] {
        let csv = dir.join(name);
        std::fs::write(&csv, text).map_err(|e| PlotError(format!("{}: {e}", csv.display())))?;
        written.push(csv);
    }
    written.extend(plot::write_dispatch(
        dir,
        "winners",
        &[Format::Png, Format::Svg],
        &|r| draw_map(r, tiles).map_err(|e| e.to_string()),
        &|r| draw_map(r, tiles).map_err(|e| e.to_string()),
    )?);
    Ok(written)
}

fn draw_map<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    tiles: &[Tile],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let mut sizes: Vec<&str> = Vec::new();
    let mut threads: Vec<&str> = Vec::new();
    let mut winners: Vec<&str> = Vec::new();
    for t in tiles {
        for (list, v) in [
            (&mut sizes, t.size.as_str()),
            (&mut threads, t.threads.as_str()),
            (&mut winners, t.winner.as_str()),
        ] {
            if !list.contains(&v) {
                list.push(v);
            }
        }
    }
    winners.sort_unstable();
    let (w, h) = root.dim_in_pixel();
    let (left, top, right, bottom) = (110i32, 70i32, 220i32, 70i32);
    let cols = sizes.len().max(1) as i32;
    let rows = threads.len().max(1) as i32;
    let cw = ((w as i32 - left - right) / cols).max(1);
    let ch = ((h as i32 - top - bottom) / rows).max(1);
    let title = TextStyle::from((plot::FONT, 24).into_font());
    root.draw_text(
        "most bytes per joule (hatched: seeds do not separate the top two, p > 0.05)",
        &title,
        (left, 20),
    )?;
    let label =
        TextStyle::from((plot::FONT, 15).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    for t in tiles {
        let col = sizes.iter().position(|s| *s == t.size).unwrap_or(0) as i32;
        // Threads grow upwards, as in the study's figure.
        let row = rows - 1 - threads.iter().position(|s| *s == t.threads).unwrap_or(0) as i32;
        let (x0, y0) = (left + col * cw, top + row * ch);
        let color = plot::color(winners.iter().position(|s| *s == t.winner).unwrap_or(0));
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + cw, y0 + ch)],
            color.mix(0.55).filled(),
        ))?;
        if t.tie() {
            for k in (0..cw + ch).step_by(10) {
                let a = (x0 + k.min(cw), y0 + (k - cw).max(0));
                let b = (x0 + (k - ch).max(0), y0 + k.min(ch));
                root.draw(&PathElement::new(vec![a, b], WHITE.stroke_width(2)))?;
            }
        }
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + cw, y0 + ch)],
            BLACK.stroke_width(1),
        ))?;
        root.draw_text(
            &format!("+{:.1}%", t.margin * 100.0),
            &label,
            (x0 + cw / 2, y0 + ch / 2),
        )?;
    }
    let axis = TextStyle::from((plot::FONT, 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, s) in sizes.iter().enumerate() {
        root.draw_text(
            s,
            &axis,
            (left + i as i32 * cw + cw / 2, top + rows * ch + 8),
        )?;
    }
    root.draw_text(
        "request size",
        &axis,
        (left + cols * cw / 2, top + rows * ch + 32),
    )?;
    let yaxis =
        TextStyle::from((plot::FONT, 15).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, s) in threads.iter().enumerate() {
        let row = rows - 1 - i as i32;
        root.draw_text(s, &yaxis, (left - 10, top + row * ch + ch / 2))?;
    }
    root.draw_text("threads", &yaxis, (left - 50, top - 20))?;
    let legend =
        TextStyle::from((plot::FONT, 16).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in winners.iter().enumerate() {
        let y = top + 20 + i as i32 * 30;
        let x = left + cols * cw + 30;
        root.draw(&Rectangle::new(
            [(x, y - 10), (x + 20, y + 10)],
            plot::color(i).mix(0.55).filled(),
        ))?;
        root.draw_text(s, &legend, (x + 30, y))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::SweepEnergy;

    fn row(size: &str, threads: &str, seed: &str, strategy: &str, bpj: f64) -> SweepRow {
        let point = [("bs", size), ("numjobs", threads), ("seed", seed)]
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
            .collect();
        SweepRow {
            point,
            strategy: strategy.into(),
            kind: "none".into(),
            job: "reader".into(),
            iops: 1.0,
            lat_mean_ns: Some(1.0),
            lat_p50_ns: Some(1),
            lat_p99_ns: Some(1),
            interrupts_per_s: 0.0,
            cpu_util: 0.5,
            job_cpu_util: 0.5,
            context_switches_per_io: 0.0,
            wakeups_per_io: 0.0,
            energy: Some(SweepEnergy {
                energy_j: 1.0,
                power_w: 1.0,
                bytes_per_joule: bpj,
            }),
            virt: None,
        }
    }

    #[test]
    fn t_test_matches_a_worked_example() {
        // Two groups of five, means 5 and 7, each with variance 2.5:
        // t = 2 / sqrt(2.5 * 0.4) = 2, 8 degrees of freedom, p = 0.0805.
        let p = t_test(&[3.0, 4.0, 5.0, 6.0, 7.0], &[5.0, 6.0, 7.0, 8.0, 9.0]).unwrap();
        assert!((p - 0.0805).abs() < 5e-4, "{p}");
        assert_eq!(t_test(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(t_test(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(t_test(&[2.0, 2.0], &[3.0, 3.0]), Some(0.0));
    }

    #[test]
    fn a_clear_winner_and_a_tie() {
        let mut rows = Vec::new();
        for (seed, noise) in [("1", 0.0), ("2", 1.0), ("3", -1.0)] {
            // 4k: poll clearly ahead. 128k: the two within noise.
            rows.push(row("4k", "1", seed, "poll", 100.0 + noise));
            rows.push(row("4k", "1", seed, "irq", 80.0 + noise));
            rows.push(row("128k", "1", seed, "poll", 100.0 + noise));
            rows.push(row("128k", "1", seed, "irq", 100.5 - noise));
        }
        let tiles = winner_map(&rows, "bs", "numjobs").unwrap();
        assert_eq!(tiles.len(), 2);
        assert_eq!(
            (tiles[0].size.as_str(), tiles[0].winner.as_str()),
            ("4k", "poll")
        );
        assert!((tiles[0].margin - 0.25).abs() < 1e-9);
        assert!(!tiles[0].tie());
        assert_eq!(tiles[1].winner, "irq");
        assert!(tiles[1].tie(), "{:?}", tiles[1]);
        assert_eq!(tiles[0].samples, 3);
        let csv = map_csv(&tiles);
        assert!(
            csv.starts_with("size,threads,winner,runner_up,margin,p,tie\n4k,1,poll,irq,0.250000,")
        );
        assert!(csv.trim_end().ends_with(",true"));
    }

    #[test]
    fn each_strategy_stands_against_the_best_of_the_others() {
        let mut rows = Vec::new();
        for (seed, noise) in [("1", 0.0), ("2", 1.0), ("3", -1.0)] {
            rows.push(row("4k", "1", seed, "poll", 100.0 + noise));
            rows.push(row("4k", "1", seed, "irq", 80.0 + noise));
            rows.push(row("4k", "1", seed, "select", 100.2 - noise));
        }
        let s = standings(&rows, "bs", "numjobs").unwrap();
        let names: Vec<(&str, &str)> = s
            .iter()
            .map(|s| (s.strategy.as_str(), s.best_other.as_str()))
            .collect();
        // Name order; each against the best of the rest.
        assert_eq!(
            names,
            [("irq", "select"), ("poll", "select"), ("select", "poll")]
        );
        let irq = &s[0];
        assert!((irq.margin - (80.0 / 100.2 - 1.0)).abs() < 1e-9);
        assert!(!irq.tie());
        // 0.2% ahead within the noise: a tie, not a win.
        assert!(s[2].margin > 0.0 && s[2].tie(), "{:?}", s[2]);
        let csv = standings_csv(&s);
        assert!(csv.starts_with(
            "size,threads,strategy,bytes_per_joule,best_other,margin,p,tie\n4k,1,irq,80.0,select,"
        ));
        assert_eq!(csv.lines().count(), 4);
    }

    #[test]
    fn rows_without_energy_or_the_keys_are_refused() {
        let mut r = row("4k", "1", "1", "poll", 1.0);
        assert!(winner_map(std::slice::from_ref(&r), "size", "numjobs")
            .unwrap_err()
            .contains("does not vary size"));
        r.energy = None;
        assert!(winner_map(&[r], "bs", "numjobs")
            .unwrap_err()
            .contains("no energy figures"));
        let one = row("4k", "1", "1", "poll", 1.0);
        assert!(winner_map(&[one], "bs", "numjobs")
            .unwrap_err()
            .contains("at least two strategies"));
    }

    #[test]
    fn the_map_is_drawn() {
        let dir = std::env::temp_dir().join(format!("cint-energy-map-{}", std::process::id()));
        let rows: Vec<SweepRow> = ["1", "2"]
            .iter()
            .flat_map(|seed| {
                [
                    row("4k", "1", seed, "poll", 2.0),
                    row("4k", "1", seed, "irq", 1.0),
                ]
            })
            .collect();
        let tiles = winner_map(&rows, "bs", "numjobs").unwrap();
        let standings = standings(&rows, "bs", "numjobs").unwrap();
        let written = write_map(&dir, &tiles, &standings).unwrap();
        assert_eq!(written.len(), 4);
        for p in &written {
            assert!(std::fs::metadata(p).unwrap().len() > 0, "{}", p.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
