//! `cinterrupts.sim` and `cinterrupts.emu`: one run of every strategy of
//! a scenario, kept as the engine returned it so that the fio documents
//! can be written on demand.

use cint::{Engines, Loaded};
use cint_lab::sweep::{Sweep, SweepPoint};
use cint_report::RunResult;
use cint_scenario::Scenario;
use pyo3::prelude::*;

use crate::{failure_err, from_state, input_err, load, SourceState};

/// One run: the scenario, the engine's result and its JSON document.
#[pyclass(module = "cinterrupts._native", frozen)]
pub(crate) struct Run {
    scenario: Scenario,
    result: RunResult,
    json: String,
}

#[pymethods]
impl Run {
    /// The result document, as `cint sim --json` prints it.
    #[getter]
    fn json(&self) -> &str {
        &self.json
    }

    /// The strategies, in the scenario's order.
    #[getter]
    fn strategies(&self) -> Vec<String> {
        self.result
            .results
            .iter()
            .map(|s| s.strategy.clone())
            .collect()
    }

    /// One CSV row per strategy x job: the columns of `cint sweep --csv`
    /// after the varied keys, formatted by the same code.
    fn csv(&self) -> PyResult<String> {
        let one = Sweep {
            keys: Vec::new(),
            points: vec![SweepPoint {
                values: Vec::new(),
                result: self.result.clone(),
            }],
            interrupted: false,
            total_points: 1,
        };
        crate::sweep::written(|out| one.write_csv(out))
    }

    /// fio's json+ document of `strategy`, as `--fio-json` writes it.
    fn fio_json(&self, strategy: &str) -> PyResult<String> {
        let index = self
            .result
            .results
            .iter()
            .position(|s| s.strategy == strategy)
            .ok_or_else(|| {
                input_err(format!(
                    "fio_json: no strategy '{strategy}' in this result (strategies: {})",
                    self.strategies().join(", ")
                ))
            })?;
        cint::fio_json(&self.scenario, &self.result, index).map_err(failure_err)
    }
}

/// Runs every strategy of the scenario on the simulator (or, with `emu`,
/// the emulator) without the GIL: `(run, warnings)`. `seed` overrides the
/// scenario's, as `cint sim --seed` does.
#[pyfunction]
#[pyo3(signature = (source, sets, seed=None, emu=false))]
fn run(
    py: Python<'_>,
    source: SourceState,
    sets: Vec<String>,
    seed: Option<&Bound<'_, PyAny>>,
    emu: bool,
) -> PyResult<(Run, Vec<String>)> {
    // A seed Rust cannot hold (negative, past 64 bits, not an integer) is
    // the caller's input, refused as the command refuses `--seed`.
    let seed = seed
        .map(|s| {
            s.extract::<u64>().map_err(|_| {
                input_err(format!(
                    "seed: expected an integer from 0 to {} (got {})",
                    u64::MAX,
                    s.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))
            })
        })
        .transpose()?;
    let source = from_state(source)?;
    let Loaded {
        mut scenario,
        warnings,
    } = load(&source, &sets)?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    let engines = Engines::real();
    let (engine, name) = if emu {
        (engines.emu, "emulator")
    } else {
        (engines.sim, "simulator")
    };
    let (scenario, outcome) = py.detach(move || {
        let outcome = cint::run_engine(&scenario, name, engine)
            .and_then(|result| cint::result_json(&result, name).map(|json| (result, json)));
        (scenario, outcome)
    });
    let (result, json) = outcome.map_err(failure_err)?;
    Ok((
        Run {
            scenario,
            result,
            json,
        },
        warnings,
    ))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Run>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
