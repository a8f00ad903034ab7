//! What can be plotted: the parts of a result document the charts read,
//! and a file told apart as a result document or a sweep file.

use super::*;

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
    /// Samples (`N`); absent from a document without it.
    #[serde(rename = "N", default)]
    pub n: Option<u64>,
}

impl LatDoc {
    /// Whether the job took latency samples: one that completed nothing,
    /// or ended within its warm-up, has none, and its zeros are no
    /// latency.
    pub(super) fn sampled(&self) -> bool {
        self.n != Some(0)
    }

    pub(super) fn at(&self, p: f64) -> Option<u64> {
        self.percentile.get(&format!("{p:.6}")).copied()
    }
}

impl RunDoc {
    /// Refuses a metric the charts cannot draw: negative (or, where the
    /// document was not JSON, not finite), naming where it is.
    fn check(&self) -> Result<(), String> {
        let bad = |at: String, v: f64| {
            (!(v.is_finite() && v >= 0.0))
                .then(|| format!("{at}: {v} is not a number (finite, at least 0)"))
        };
        for (i, s) in self.results.iter().enumerate() {
            let at = format!("results[{i}] (strategy '{}')", s.strategy);
            let mut found = bad(format!("{at}.interrupts_per_s"), s.interrupts_per_s)
                .or_else(|| bad(format!("{at}.cpu_util"), s.cpu_util));
            for (k, j) in s.jobs.iter().enumerate() {
                let job = format!("{at}.jobs[{k}] (job '{}')", j.name);
                found = found
                    .or_else(|| bad(format!("{job}.iops"), j.iops))
                    .or_else(|| bad(format!("{job}.lat_ns.mean"), j.lat_ns.mean));
            }
            if let Some(msg) = found {
                return Err(msg);
            }
        }
        Ok(())
    }

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
        Ok(doc) => {
            return match doc.check() {
                Ok(()) => Ok(PlotInput::Run(doc)),
                Err(msg) => Err(PlotError(format!("{file}: {msg}"))),
            }
        }
        Err(e) => e,
    };
    let rows = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        read_csv(&text)
            .map_err(|e| PlotError(format!("{file}: not plottable: not a sweep CSV ({e})")))?
    } else {
        read_jsonl(&text).map_err(|sweep_error| {
            PlotError(format!(
                "{file}: not plottable: neither a result document ({doc_error}) nor a JSON-lines \
                 sweep file ({sweep_error})"
            ))
        })?
    };
    // The charts' x axis is the first varied key.
    if let Some(at) = rows.iter().position(|r| r.point.is_empty()) {
        return Err(PlotError(format!(
            "{file}: not plottable: sweep row {} names no varied key (its \"point\" is empty)",
            at + 1
        )));
    }
    Ok(PlotInput::Sweep(rows))
}
