//! `cinterrupts.ModeSelect`: the per-request completion-mode selector
//! (docs/ALGORITHMS.md section 10) as an object a Python model drives. Like
//! `cinterrupts.Policy` it lives in the C ABI's storage and every call goes
//! through the C ABI's functions; its machine is read from the built-in
//! host and device profiles by the scenario parser, as `cint sim` reads it.

use cint_policy_ffi as ffi;
use cint_scenario::mode_select::{mode_select_params, without_power_data};
use pyo3::prelude::*;

use crate::{input_err, InternalError};

/// The name the messages give the selector.
const SOURCE: &str = "ModeSelect";

/// The completion-mode selector of docs/ALGORITHMS.md section 10 for one
/// host and device.
#[pyclass(module = "cinterrupts._native")]
pub(crate) struct ModeSelect {
    storage: Box<ffi::cint_mode_select>,
    /// The host profile's idle states, shallowest first.
    states: Vec<String>,
    host: String,
    device: String,
    governor: String,
}

/// The C ABI's parameters for `host` and `device` (built-in models) under
/// `governor` (the profile's if `None`), with the idle states' names.
fn params_of(
    host: &str,
    device: &str,
    governor: Option<&str>,
) -> PyResult<(ffi::cint_mode_select_params, Vec<String>, String)> {
    let quote = |s: &str| serde_json::Value::String(s.into()).to_string();
    let text = format!(
        "name = \"mode-select\"\n[device]\nmodel = {}\n[host]\nmodel = {}\n\
         [[strategy]]\nname = \"select\"\nkind = \"mode-select\"\n\
         [[job]]\nname = \"placeholder\"\n",
        quote(device),
        quote(host)
    );
    let sets: Vec<String> = governor
        .map(|g| format!("host.power.governor={g}"))
        .into_iter()
        .collect();
    let sc = cint_scenario::load_str(&text, SOURCE, &sets).map_err(|e| input_err(e.to_string()))?;
    let Some(p) = mode_select_params(&sc.host, &sc.device) else {
        return Err(input_err(format!(
            "{SOURCE}: {}",
            without_power_data(&sc.host, &sc.device)
        )));
    };
    let power = sc
        .host
        .power
        .as_ref()
        .ok_or_else(|| InternalError::new_err("power data without a power section"))?;
    let mut idle_states = [ffi::cint_idle_state::default(); ffi::CINT_MAX_IDLE_STATES];
    for (to, from) in idle_states.iter_mut().zip(&p.idle_states[..p.idle_count]) {
        *to = ffi::cint_idle_state {
            exit_latency: from.exit_latency,
            target_residency: from.target_residency,
            power_mw: from.power_mw,
        };
    }
    let params = ffi::cint_mode_select_params {
        static_mw: p.static_mw,
        spin_mw: p.spin_mw,
        busy_mw: p.busy_mw,
        iowait_factor: p.iowait_factor,
        idle_count: p.idle_count as u32,
        idle_states,
        sleep_path: p.sleep_path,
        timer_arm: p.timer_arm,
        timer_slack: p.timer_slack,
    };
    let names = power.idle_states.iter().map(|s| s.name.clone()).collect();
    Ok((params, names, power.governor.name().to_string()))
}

/// The Python exception of a C ABI return code.
fn check(call: &str, code: i32) -> PyResult<()> {
    crate::policy::check_code(SOURCE, call, code).map(|_| ())
}

/// The C ABI's mode code of a mode's name.
fn mode_code(mode: &str) -> PyResult<i32> {
    match mode {
        "poll" => Ok(ffi::CINT_MODE_POLL),
        "sleep" => Ok(ffi::CINT_MODE_SLEEP),
        "interrupt" => Ok(ffi::CINT_MODE_INTERRUPT),
        _ => Err(input_err(format!(
            "{SOURCE}: mode: expected \"poll\", \"sleep\" or \"interrupt\", got {mode:?}"
        ))),
    }
}

#[pymethods]
impl ModeSelect {
    #[new]
    #[pyo3(signature = (host="xeon-e3-1230v5", device="optane-900p", governor=None))]
    fn new(host: &str, device: &str, governor: Option<&str>) -> PyResult<ModeSelect> {
        let (params, states, governor) = params_of(host, device, governor)?;
        let mut storage = Box::new(ffi::cint_mode_select {
            opaque: [0; ffi::CINT_MODE_SELECT_WORDS],
        });
        // SAFETY: `storage` is this object's own, exclusively borrowed
        // `cint_mode_select`, and `params` a readable local.
        let code = unsafe { ffi::cint_mode_select_init(&mut *storage, &params) };
        check("__init__", code)?;
        Ok(ModeSelect {
            storage,
            states,
            host: host.into(),
            device: device.into(),
            governor,
        })
    }

    /// The mode for a request of `bytes`: `("poll", 0)`, `("sleep",
    /// ns)` or `("interrupt", 0)`.
    #[pyo3(signature = (bytes, write=false, in_flight=1, contended=false, can_interrupt=true))]
    fn choose(
        &mut self,
        bytes: u64,
        write: bool,
        in_flight: u32,
        contended: bool,
        can_interrupt: bool,
    ) -> PyResult<(&'static str, u64)> {
        let mut flags = 0;
        if contended {
            flags |= ffi::CINT_SELECT_CONTENDED;
        }
        if !can_interrupt {
            flags |= ffi::CINT_SELECT_NO_INTERRUPT;
        }
        let (mut mode, mut sleep) = (0, 0);
        // SAFETY: the storage is this object's own, initialised by
        // `cint_mode_select_init`; the outputs are writable locals.
        let code = unsafe {
            ffi::cint_mode_select_choose(
                &mut *self.storage,
                bytes,
                write,
                in_flight,
                flags,
                &mut mode,
                &mut sleep,
            )
        };
        check("choose", code)?;
        match mode {
            ffi::CINT_MODE_POLL => Ok(("poll", 0)),
            ffi::CINT_MODE_SLEEP => Ok(("sleep", sleep)),
            ffi::CINT_MODE_INTERRUPT => Ok(("interrupt", 0)),
            other => Err(InternalError::new_err(format!(
                "{SOURCE}.choose: the C ABI answered mode {other}"
            ))),
        }
    }

    /// A request of `bytes` took `run_time_ns` from reaching the device to
    /// its completion being posted.
    #[pyo3(signature = (bytes, run_time_ns, write=false))]
    fn record(&mut self, bytes: u64, run_time_ns: u64, write: bool) -> PyResult<()> {
        // SAFETY: the storage is this object's own, initialised one.
        let code =
            unsafe { ffi::cint_mode_select_record(&mut *self.storage, bytes, write, run_time_ns) };
        check("record", code)
    }

    /// A request of `bytes` waited as `mode` ("sleep" for `sleep_ns`, or
    /// "interrupt") and its core was woken from idle state `reached`: a
    /// name of `idle_states` or its index.
    #[pyo3(signature = (bytes, mode, reached, write=false, sleep_ns=0))]
    fn record_idle(
        &mut self,
        bytes: u64,
        mode: &str,
        reached: &Bound<'_, PyAny>,
        write: bool,
        sleep_ns: u64,
    ) -> PyResult<()> {
        let mode = mode_code(mode)?;
        let index = match reached.extract::<u32>() {
            Ok(i) => i,
            Err(_) => {
                let name: String = reached.extract().map_err(|_| {
                    input_err(format!(
                        "{SOURCE}.record_idle: reached: expected an idle state's name or index"
                    ))
                })?;
                let Some(i) = self.states.iter().position(|s| *s == name) else {
                    return Err(input_err(format!(
                        "{SOURCE}.record_idle: reached: no idle state {name:?} on host '{}' \
                         (it has {})",
                        self.host,
                        self.states.join(", ")
                    )));
                };
                i as u32
            }
        };
        // SAFETY: the storage is this object's own, initialised one.
        let code = unsafe {
            ffi::cint_mode_select_record_idle(
                &mut *self.storage,
                bytes,
                write,
                mode,
                sleep_ns,
                index,
            )
        };
        check("record_idle", code)
    }

    /// The caller looks at the idle state of one wait in `n` (1 to 1024)
    /// of those it could, because each look costs it: the governor's
    /// rule's prediction then votes once in `n` times as many completions,
    /// as it would against every wait's observations.
    fn observe_idle_one_in(&mut self, n: u32) -> PyResult<()> {
        // SAFETY: the storage is this object's own, initialised one.
        let code = unsafe { ffi::cint_mode_select_observe_idle_one_in(&mut *self.storage, n) };
        check("observe_idle_one_in", code)
    }

    /// The host's idle states, shallowest first (their indices are what
    /// `record_idle` takes).
    #[getter]
    fn idle_states(&self) -> Vec<String> {
        self.states.clone()
    }

    /// The cpuidle governor whose rule the selector predicts idle states by.
    #[getter]
    fn governor(&self) -> &str {
        &self.governor
    }

    fn __repr__(&self) -> String {
        format!(
            "ModeSelect(host={:?}, device={:?}, governor={:?})",
            self.host, self.device, self.governor
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ModeSelect>()
}
