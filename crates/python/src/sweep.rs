//! Sweeps: on this machine's cores (the `cint sweep` worker pool), or
//! planned here and run point by point elsewhere (the Ray backend ships
//! batches of points to [`run_points`] in its workers). Either way the
//! rows are formatted by `cint-lab`'s CSV and JSON-lines writers, so the
//! bytes match `cint sweep`'s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use cint::{Engines, Failure, EXIT_INTERNAL, EXIT_USAGE};
use cint_lab::sweep::{self, Progress, Sweep, SweepArgs, SweepError, SweepPoint};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::{failure_err, from_state, load, InternalError, SourceState};

/// How often a waiting sweep looks for Ctrl-C (Python's signal handlers
/// run only when the GIL is taken back).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// A finished (or interrupted) sweep as Python receives it.
#[derive(IntoPyObject)]
struct SweepOut {
    keys: Vec<String>,
    csv: String,
    jsonl: String,
    finished: usize,
    total: usize,
    interrupted: bool,
    warnings: Vec<String>,
}

fn internal(message: impl Into<String>) -> PyErr {
    InternalError::new_err(message.into())
}

/// What a `cint-lab` writer writes, as text.
pub(crate) fn written(
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), SweepError>,
) -> PyResult<String> {
    let mut out = Vec::new();
    write(&mut out).map_err(|e| internal(e.to_string()))?;
    String::from_utf8(out).map_err(|e| internal(e.to_string()))
}

/// `cint sweep SCENARIO --set ... --vary ...` on this machine, every core
/// (or `workers`) busy, without the GIL. Ctrl-C stops it as it stops the
/// command: no new point starts, the finished ones are returned with
/// `interrupted` set.
#[pyfunction]
#[pyo3(signature = (source, sets, vary, workers=0, progress=true))]
fn sweep_local(
    py: Python<'_>,
    source: SourceState,
    sets: Vec<String>,
    vary: Vec<String>,
    workers: usize,
    progress: bool,
) -> PyResult<SweepOut> {
    let vary = cint::parse_vary(&vary).map_err(failure_err)?;
    let source = from_state(source)?;
    // As the command does: a broken file is reported without a point
    // prefix, and an import's warnings once.
    let warnings = load(&source, &sets)?.warnings;
    let keys: Vec<String> = vary.iter().map(|v| v.key.clone()).collect();
    let args = SweepArgs {
        vary,
        sets,
        workers,
        progress: if progress {
            Progress::Auto
        } else {
            Progress::Never
        },
    };
    let engines = Engines::real();
    let stop = AtomicBool::new(false);
    let loader = |sets: &[String]| source.load(sets).map(|l| l.scenario);
    let (tx, rx) = mpsc::channel::<Result<Sweep, Failure>>();
    // A receiver is not Sync; waiting on it without the GIL needs a lock.
    let rx = Mutex::new(rx);
    let mut signal_error: Option<PyErr> = None;
    let outcome = std::thread::scope(|scope| {
        let (loader, args, stop, engines) = (&loader, &args, &stop, &engines);
        scope.spawn(move || {
            let result = cint::sweep_points(loader, engines, false, args, stop, &|_| {}, "");
            // The receiver outlives this thread (the scope waits for it).
            let _ = tx.send(result);
        });
        loop {
            let received = py.detach(|| match rx.lock() {
                Ok(rx) => rx.recv_timeout(SIGNAL_POLL),
                Err(_) => Err(mpsc::RecvTimeoutError::Disconnected),
            });
            match received {
                Ok(result) => return result,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        stop.store(true, Ordering::SeqCst);
                        signal_error.get_or_insert(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure {
                        status: EXIT_INTERNAL,
                        message: "the sweep's thread ended without a result".into(),
                    })
                }
            }
        }
    });
    // An exception other than Ctrl-C's from a signal handler is the
    // caller's own: raised once the sweep has stopped.
    if let Some(e) = signal_error {
        if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
            return Err(e);
        }
    }
    let sweep = outcome.map_err(failure_err)?;
    Ok(SweepOut {
        csv: written(|out| sweep.write_csv(out))?,
        jsonl: written(|out| sweep.write_jsonl(out))?,
        keys,
        finished: sweep.points.len(),
        total: sweep.total_points,
        interrupted: sweep.interrupted,
        warnings,
    })
}

/// Checks the varied keys and loads every point, as `cint sweep` does
/// before anything runs: `(keys, points, warnings)`, each point its
/// `(key, value)` pairs, in the command's point order.
#[pyfunction]
#[allow(clippy::type_complexity)] // the plain tuple is what Python receives
fn plan_sweep(
    py: Python<'_>,
    source: SourceState,
    sets: Vec<String>,
    vary: Vec<String>,
) -> PyResult<(Vec<String>, Vec<Vec<(String, String)>>, Vec<String>)> {
    let vary = cint::parse_vary(&vary).map_err(failure_err)?;
    let source = from_state(source)?;
    let warnings = load(&source, &sets)?.warnings;
    let keys: Vec<String> = vary.iter().map(|v| v.key.clone()).collect();
    let loader = |sets: &[String]| source.load(sets).map(|l| l.scenario);
    let plan = py
        .detach(|| sweep::plan_sweep(&loader, &vary, &sets))
        .map_err(|e| {
            failure_err(Failure {
                status: EXIT_USAGE,
                message: e.to_string(),
            })
        })?;
    Ok((keys, plan.points, warnings))
}

/// Runs sweep points on the simulator without the GIL: for each
/// `(index, point)`, `(index, status, csv_rows, jsonl)` with the point's
/// CSV rows (no header) and JSON lines, or a non-zero exit status and
/// the command's one line in place of the rows.
#[pyfunction]
fn run_points(
    py: Python<'_>,
    source: SourceState,
    sets: Vec<String>,
    keys: Vec<String>,
    points: Vec<(usize, Vec<(String, String)>)>,
) -> PyResult<Vec<(usize, i32, String, String)>> {
    let source = from_state(source)?;
    let engines = Engines::real();
    py.detach(|| {
        points
            .into_iter()
            .map(|(index, point)| {
                let ran = source
                    .load(&sweep::point_sets(&sets, &point))
                    .map_err(|message| Failure {
                        status: EXIT_USAGE,
                        message: SweepError::Point {
                            point: sweep::describe(&point),
                            message,
                        }
                        .to_string(),
                    })
                    .and_then(|l| cint::run_point(&engines, false, &point, &l.scenario));
                match ran {
                    Ok(result) => {
                        let one = Sweep {
                            keys: keys.clone(),
                            points: vec![SweepPoint {
                                values: point,
                                result,
                            }],
                            interrupted: false,
                            total_points: 1,
                        };
                        let csv = written(|out| one.write_csv_rows(out))?;
                        let jsonl = written(|out| one.write_jsonl(out))?;
                        Ok((index, 0, csv, jsonl))
                    }
                    Err(f) => Ok((index, f.status, f.line(), String::new())),
                }
            })
            .collect()
    })
}

/// The CSV header of a sweep varying `keys`, as `cint sweep --csv`
/// writes it.
#[pyfunction]
fn csv_header(keys: Vec<String>) -> PyResult<String> {
    written(|out| sweep::write_csv_header(&keys, out))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(plan_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(run_points, m)?)?;
    m.add_function(wrap_pyfunction!(csv_header, m)?)?;
    Ok(())
}
