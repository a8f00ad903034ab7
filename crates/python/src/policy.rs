//! `cinterrupts.Policy`: one interrupt policy as an object a Python
//! simulation (SimPy, say) drives. It lives in a `cint_policy` of the C
//! ABI and every call goes through the C ABI's functions, so Python gets
//! exactly the C ABI's decisions and its checks (time going backwards, a
//! sequence number never handed out or completed twice, unknown hint
//! bits). Its parameters are read by the scenario parser: the keys, the
//! units (`"6us"`) and the device-profile defaults of a scenario file's
//! `[[strategy]]` table.

use std::collections::BTreeSet;
use std::ffi::CStr;

use cint_policy::config::{BarrierMode, StormGuardMode, VicParams};
use cint_policy::PolicyConfig;
use cint_policy_ffi as ffi;
use cint_scenario::CompletionMode;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::{input_err, InternalError};

/// The name the parser's messages give the policy's parameters.
const SOURCE: &str = "Policy";

/// One interrupt policy, driven call by call from your own model.
///
/// Policy(kind, now_ns=0, **params): `kind` and `params` are a scenario
/// file's `[[strategy]]` kind and keys, in its units, e.g.
/// Policy("cinterrupts", delta="6us", thr=32). Every call goes through the
/// policy library's C ABI: the same decisions, the same checks (each a
/// cinterrupts.InputError). Decisions are the C ABI's CINT_IRQ_* codes
/// (cinterrupts.Irq): 0 none, 1 full, 2 urgent-only.
// Holds the C ABI storage and the requests in flight (for `on_complete`
// without a sequence number: the oldest).
#[pyclass(module = "cinterrupts._native")]
pub(crate) struct Policy {
    storage: Box<ffi::cint_policy>,
    in_flight: BTreeSet<u64>,
    kind: String,
    params: Vec<String>,
}

/// A Python parameter value as `--set` spells it.
fn set_value(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        Ok(if value.extract::<bool>()? {
            "true"
        } else {
            "false"
        }
        .into())
    } else if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        Ok(value.str()?.to_string())
    } else if value.is_instance_of::<PyString>() {
        Ok(value.extract::<String>()?)
    } else {
        Err(input_err(format!(
            "{SOURCE}: {name}: expected a number, a boolean or a string such as \"6us\", got {}",
            value.get_type().name()?
        )))
    }
}

/// The policy of `kind` with `params`, through the scenario parser.
fn config_of(kind: &str, params: &[String]) -> PyResult<PolicyConfig> {
    let kind_text = serde_json::Value::String(kind.into()).to_string();
    let text = format!(
        "name = \"policy\"\n[[strategy]]\nname = \"policy\"\nkind = {kind_text}\n\
         [[job]]\nname = \"placeholder\"\n"
    );
    let sets: Vec<String> = params
        .iter()
        .map(|p| format!("strategy.policy.{p}"))
        .collect();
    let scenario =
        cint_scenario::load_str(&text, SOURCE, &sets).map_err(|e| input_err(e.to_string()))?;
    match scenario.strategies.first().map(|s| &s.mode) {
        Some(CompletionMode::Interrupt(config)) => Ok(*config),
        Some(_) => Err(input_err(format!(
            "{SOURCE}: kind '{kind}' is a polling mode, not an interrupt policy"
        ))),
        None => Err(InternalError::new_err(
            "the policy's scenario has no strategy",
        )),
    }
}

fn vic_params(v: &VicParams) -> ffi::cint_vic_params {
    ffi::cint_vic_params {
        cif_threshold: v.cif_threshold,
        iops_threshold: v.iops_threshold,
        epoch: v.epoch,
        ipi_threshold: v.ipi_threshold,
        quirk_reset_on_skip: v.quirk_reset_on_skip,
        quirk_failsafe: v.quirk_failsafe.unwrap_or(0),
    }
}

/// Initialises `p` with the C ABI's `cint_policy_init_*` of `config`.
fn init(p: &mut ffi::cint_policy, config: &PolicyConfig, now: u64) -> i32 {
    // SAFETY: `p` is a `cint_policy` borrowed exclusively for the call
    // (its contents need not be initialised); the vIC parameters are a
    // local the call reads.
    unsafe {
        match config {
            PolicyConfig::None => ffi::cint_policy_init_none(p, now),
            PolicyConfig::Nvme(n) => {
                ffi::cint_policy_init_nvme(p, n.thr, n.time, n.coalescing_disabled, now)
            }
            PolicyConfig::Adaptive(a) => ffi::cint_policy_init_adaptive(p, a.delta, a.thr, now),
            PolicyConfig::Cinterrupts(c) => ffi::cint_policy_init_cinterrupts_guard(
                p,
                c.adaptive.delta,
                c.adaptive.thr,
                c.ooo,
                c.barrier == BarrierMode::Strict,
                c.max_irq_rate.unwrap_or(0),
                match c.guard {
                    StormGuardMode::Rate => ffi::CINT_GUARD_RATE,
                    StormGuardMode::Artifact => ffi::CINT_GUARD_ARTIFACT,
                },
                now,
            ),
            PolicyConfig::Vic(v) => ffi::cint_policy_init_vic(p, &vic_params(v), now),
            PolicyConfig::VicSched(v) => {
                ffi::cint_policy_init_vic_sched(p, &vic_params(&v.vic), v.clock_margin, now)
            }
        }
    }
}

/// The hint word of a Python hint: `None`, `"urgent"`, `"barrier"`,
/// `"unmarked"`, or the C ABI's bits as an int.
fn hint_bits(hint: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    let Some(hint) = hint.filter(|h| !h.is_none()) else {
        return Ok(0);
    };
    if let Ok(text) = hint.extract::<String>() {
        return match text.as_str() {
            "unmarked" | "none" => Ok(0),
            "urgent" => Ok(ffi::CINT_HINT_URGENT),
            "barrier" => Ok(ffi::CINT_HINT_BARRIER),
            other => Err(input_err(format!(
                "{SOURCE}: hint '{other}': expected None, \"urgent\" or \"barrier\""
            ))),
        };
    }
    hint.extract::<u32>().map_err(|_| {
        input_err(format!(
            "{SOURCE}: hint: expected None, \"urgent\", \"barrier\" or the C ABI's bits"
        ))
    })
}

/// The Python exception of a C ABI return code of `Policy`'s `call`.
fn check(call: &str, code: i32) -> PyResult<i32> {
    check_code(SOURCE, call, code)
}

/// The Python exception of a C ABI return code of `source`'s `call`
/// (`source` the Python class): `InternalError` for the library's own
/// failure, `InputError` for anything the caller passed.
pub(crate) fn check_code(source: &str, call: &str, code: i32) -> PyResult<i32> {
    if code >= 0 {
        return Ok(code);
    }
    // SAFETY: cint_strerror returns a pointer to a static, NUL-terminated
    // string for every code.
    let text = unsafe { CStr::from_ptr(ffi::cint_strerror(code)) }.to_string_lossy();
    let message = format!("{source}.{call}: {text} ({code})");
    if code == ffi::CINT_EINTERNAL {
        Err(InternalError::new_err(message))
    } else {
        Err(input_err(message))
    }
}

#[pymethods]
impl Policy {
    #[new]
    #[pyo3(signature = (kind, now_ns=0, **params))]
    fn new(kind: &str, now_ns: u64, params: Option<&Bound<'_, PyDict>>) -> PyResult<Policy> {
        let mut sets = Vec::new();
        if let Some(params) = params {
            for (name, value) in params.iter() {
                let name: String = name.extract()?;
                sets.push(format!("{name}={}", set_value(&name, &value)?));
            }
        }
        let config = config_of(kind, &sets)?;
        let mut storage = Box::new(ffi::cint_policy {
            opaque: [0; ffi::CINT_POLICY_WORDS],
        });
        check("__init__", init(&mut storage, &config, now_ns))?;
        Ok(Policy {
            storage,
            in_flight: BTreeSet::new(),
            kind: kind.into(),
            params: sets,
        })
    }

    /// A request was submitted at `now_ns` with `hint`; returns its
    /// sequence number.
    #[pyo3(signature = (now_ns, hint=None))]
    fn on_submit(&mut self, now_ns: u64, hint: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        let bits = hint_bits(hint)?;
        let mut seq = 0;
        check(
            "on_submit",
            // SAFETY: this policy's own storage, borrowed exclusively for
            // the call, and locals the call writes.
            unsafe { ffi::cint_policy_submit(&mut *self.storage, now_ns, bits, &mut seq) },
        )?;
        self.in_flight.insert(seq);
        Ok(seq)
    }

    /// Request `seq` (default: the oldest in flight), submitted with
    /// `hint`, completed at `now_ns`; returns the interrupt to fire.
    #[pyo3(signature = (now_ns, hint=None, seq=None))]
    fn on_complete(
        &mut self,
        now_ns: u64,
        hint: Option<&Bound<'_, PyAny>>,
        seq: Option<u64>,
    ) -> PyResult<i32> {
        let bits = hint_bits(hint)?;
        let seq = match seq.or_else(|| self.in_flight.first().copied()) {
            Some(seq) => seq,
            None => {
                return Err(input_err(format!(
                    "{SOURCE}.on_complete: no request in flight"
                )))
            }
        };
        let mut irq = 0;
        check(
            "on_complete",
            // SAFETY: this policy's own storage, borrowed exclusively for
            // the call, and locals the call writes.
            unsafe { ffi::cint_policy_complete(&mut *self.storage, now_ns, seq, bits, &mut irq) },
        )?;
        self.in_flight.remove(&seq);
        Ok(irq)
    }

    /// The clock reached `next_deadline()`; returns the interrupt to fire.
    fn on_timer(&mut self, now_ns: u64) -> PyResult<i32> {
        self.decide("on_timer", now_ns, ffi::cint_policy_timer)
    }

    /// A delivery opportunity (a VMM entry, for vIC); returns the
    /// interrupt to fire.
    fn on_opportunity(&mut self, now_ns: u64) -> PyResult<i32> {
        self.decide("on_opportunity", now_ns, ffi::cint_policy_opportunity)
    }

    /// The guest's schedule changed (scheduler-aware vIC).
    #[pyo3(signature = (now_ns, running, slice_end_ns=None))]
    fn on_schedule(
        &mut self,
        now_ns: u64,
        running: bool,
        slice_end_ns: Option<u64>,
    ) -> PyResult<()> {
        check(
            "on_schedule",
            // SAFETY: this policy's own storage, borrowed exclusively for
            // the call.
            unsafe {
                ffi::cint_policy_schedule(
                    &mut *self.storage,
                    now_ns,
                    running,
                    slice_end_ns.is_some(),
                    slice_end_ns.unwrap_or(0),
                )
            },
        )?;
        Ok(())
    }

    /// When `on_timer` must next be called (ns), or `None`.
    fn next_deadline(&mut self) -> PyResult<Option<u64>> {
        let mut deadline = 0;
        let pending = check(
            "next_deadline",
            // SAFETY: this policy's own storage, borrowed exclusively for
            // the call, and locals the call writes.
            unsafe { ffi::cint_policy_next_deadline(&mut *self.storage, &mut deadline) },
        )?;
        Ok((pending == 1).then_some(deadline))
    }

    /// Requests submitted and not completed.
    #[getter]
    fn in_flight(&mut self) -> PyResult<u32> {
        let mut n = 0;
        check(
            "in_flight",
            // SAFETY: this policy's own storage, borrowed exclusively for
            // the call, and locals the call writes.
            unsafe { ffi::cint_policy_in_flight(&mut *self.storage, &mut n) },
        )?;
        Ok(n)
    }

    /// The kind given.
    #[getter]
    fn kind(&self) -> &str {
        &self.kind
    }

    fn __repr__(&self) -> String {
        let mut args = vec![format!("{:?}", self.kind)];
        args.extend(self.params.iter().cloned());
        format!("Policy({})", args.join(", "))
    }
}

/// A C ABI call that takes only the time and answers with an interrupt.
type DecideFn = unsafe extern "C" fn(*mut ffi::cint_policy, u64, *mut i32) -> i32;

impl Policy {
    fn decide(&mut self, call: &str, now_ns: u64, f: DecideFn) -> PyResult<i32> {
        let mut irq = 0;
        // SAFETY: `f` is a C ABI entry point whose promises are a valid,
        // exclusively borrowed `cint_policy` and a writable `int`: this
        // policy's own storage and a local.
        let code = unsafe { f(&mut *self.storage, now_ns, &mut irq) };
        check(call, code)?;
        Ok(irq)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Policy>()?;
    m.add("IRQ_NONE", ffi::CINT_IRQ_NONE)?;
    m.add("IRQ_FULL", ffi::CINT_IRQ_FULL)?;
    m.add("IRQ_URGENT_ONLY", ffi::CINT_IRQ_URGENT_ONLY)?;
    Ok(())
}
