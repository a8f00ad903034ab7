"""cinterrupts: interrupt strategies for fast storage, from Python.

The toolkit of the ``cint`` command as a library: simulate (:func:`sim`)
or emulate (:func:`emu`) every strategy of a scenario, check one
(:func:`check`), sweep parameters on this machine or on a Ray cluster
(:func:`sweep`), and drive one interrupt policy (:class:`Policy`) or the
per-request completion-mode selector (:class:`ModeSelect`) from your own
model. The numbers, the rows and the error messages are the
command line's: the same Rust code computes and formats them.

A *scenario* is a path to a TOML scenario or to a fio job file (``.fio``,
or ``fio=True``), the text of a TOML scenario (a string with a line
break), or a fio command line as a list of arguments
(``shlex.split("fio --name=a --rw=randread")``, as ``cint --fio-cmd``). ``set`` takes the command line's ``--set`` overrides as a dict,
e.g. ``{"duration": "50ms", "job.async.iodepth": 64}``.

Bad input raises :class:`InputError` with the command line's one-line
message; an engine bug raises :class:`InternalError`. Runs release the
GIL. Results pickle. See docs/PYTHON.md for a walk-through.
"""

from __future__ import annotations

import enum
import io
import json
import os
import warnings
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import InputError, InternalError, ModeSelect, Policy

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = [
    "FioImportWarning",
    "InputError",
    "InternalError",
    "Irq",
    "ModeSelect",
    "Policy",
    "ResolvedScenario",
    "Result",
    "SweepInterrupted",
    "check",
    "emu",
    "sim",
    "sweep",
]

__version__: str = _native.version()

Scenario = Union[str, "os.PathLike[str]", Sequence[str]]
SetValue = Union[str, int, float, bool]


class Irq(enum.IntEnum):
    """The interrupt a :class:`Policy` decides, as the C ABI's ``CINT_IRQ_*``."""

    NONE = _native.IRQ_NONE
    """No interrupt now."""
    FULL = _native.IRQ_FULL
    """A full interrupt: reap every pending entry."""
    URGENT_ONLY = _native.IRQ_URGENT_ONLY
    """An urgent-only interrupt: reap only Urgent entries."""


class FioImportWarning(UserWarning):
    """What the fio import of a job file warns about (an option it ignores, say)."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep: no new point started, and the points that
    had finished are in :attr:`rows` (in point order), as ``cint sweep``
    writes them before exiting 130."""

    def __init__(self, rows: "pandas.DataFrame", finished: int, total: int) -> None:
        super().__init__(f"sweep interrupted: {finished} of {total} points finished")
        self.rows = rows
        """The finished points' rows, a DataFrame like :func:`sweep`'s."""
        self.finished = finished
        """Points that finished."""
        self.total = total
        """Points in the sweep."""


def _set_value(value: SetValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _sets(overrides: Optional[Union[Mapping[str, SetValue], Iterable[str]]]) -> List[str]:
    """``--set`` arguments from a dict (or already spelled ``KEY=VALUE``)."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{key}={_set_value(value)}" for key, value in overrides.items()]
    if isinstance(overrides, str):
        raise InputError("set: expected a dict of KEY: VALUE, got a string")
    return [str(item) for item in overrides]


def _source(
    scenario: Scenario,
    fio: Optional[bool],
    device: Optional[str],
    host: Optional[str],
    strategies: Optional[Sequence[str]],
) -> str:
    """The scenario as the native side takes it: read once, so it can travel."""
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and "\n" not in scenario):
        path = os.fspath(scenario)
        is_fio = path.endswith(".fio") if fio is None else bool(fio)
        return _native.read_source(path, is_fio, device, host, list(strategies or []))
    if isinstance(scenario, (list, tuple)):
        # A fio command line, as ``cint --fio-cmd`` takes it.
        if fio is False:
            raise InputError("fio=False: a list of arguments is a fio command line")
        argv = [str(arg) for arg in scenario]
        return _native.command_line_source(argv, device, host, list(strategies or []))
    if isinstance(scenario, str):
        if fio or device is not None or host is not None or strategies:
            raise InputError(
                "fio, device, host and strategies apply to fio job files given by path; "
                "a TOML scenario names its own device, host and strategies"
            )
        return _native.toml_source(scenario)
    raise TypeError(
        "scenario: expected a path, a TOML string or a fio command line (a list of "
        f"arguments), got {type(scenario).__name__}"
    )


def _warn(messages: Sequence[str]) -> None:
    for message in messages:
        warnings.warn(message, FioImportWarning, stacklevel=3)


# The latency columns, empty in the CSV for a job without a latency sample
# (it completed nothing, or ended within its warm-up).
_LATENCY_COLUMNS = ("lat_mean_ns", "lat_p50_ns", "lat_p99_ns")


def _frame(csv: str, keys: Sequence[str]) -> "pandas.DataFrame":
    """The CSV of ``cint sweep --csv`` as a DataFrame: varied values and names
    as strings (as the JSON lines have them), metrics as numbers, and NaN
    for the latencies of a job without a latency sample."""
    import pandas

    text_columns = {column: str for column in [*keys, "strategy", "kind", "job"]}
    # Only the latencies may be empty: a varied value or a name that reads
    # "NA" or "" stays text.
    missing = {column: [""] for column in _LATENCY_COLUMNS}
    frame = pandas.read_csv(
        io.StringIO(csv), dtype=text_columns, keep_default_na=False, na_values=missing
    )
    frame.attrs["csv"] = csv
    return frame


class ResolvedScenario:
    """A scenario checked and resolved, as ``cint check`` prints it."""

    def __init__(self, text: str, doc_json: str, warnings: Sequence[str]) -> None:
        self.text = text
        """The resolved scenario in TOML, as ``cint check`` prints it."""
        self.doc: Dict[str, Any] = json.loads(doc_json)
        """The resolved scenario as a dict: every default and profile field filled in."""
        self.warnings = list(warnings)
        """The fio import's warnings (empty for a TOML scenario)."""

    def __repr__(self) -> str:
        return f"ResolvedScenario(name={self.doc.get('name')!r})"


class Result:
    """Every strategy of a scenario, run once by :func:`sim` or :func:`emu`.

    Pickles (the fio documents are written out first), so it can travel
    between processes, Ray's included.
    """

    __slots__ = ("_run", "_json", "_csv", "_doc", "_fio", "warnings")

    def __init__(self, run: Any, warnings: Sequence[str] = ()) -> None:
        self._run = run
        self._json: str = run.json if run is not None else ""
        self._csv: Optional[str] = None
        self._doc: Optional[Dict[str, Any]] = None
        self._fio: Dict[str, str] = {}
        self.warnings: List[str] = list(warnings)
        """The fio import's warnings (empty for a TOML scenario)."""

    @property
    def json(self) -> str:
        """The result document, byte for byte as ``cint sim --json`` prints it."""
        return self._json

    @property
    def doc(self) -> Dict[str, Any]:
        """The result document (docs/SCENARIO.md) as a dict."""
        if self._doc is None:
            self._doc = json.loads(self._json)
        return self._doc

    @property
    def strategies(self) -> List[str]:
        """The strategies, in the scenario's order."""
        return [s["strategy"] for s in self.doc["results"]]

    def csv(self) -> str:
        """One row per strategy x job: ``cint sweep --csv``'s columns after the varied keys."""
        if self._csv is None:
            self._csv = self._run.csv()
        return self._csv

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per strategy x job, with the columns of ``cint sweep --csv``."""
        return _frame(self.csv(), [])

    def fio_json(self, strategy: str) -> str:
        """fio's json+ document of ``strategy``, as ``cint sim --fio-json`` writes it."""
        if strategy not in self._fio:
            if self._run is None:
                raise InputError(
                    f"fio_json: no strategy '{strategy}' in this result "
                    f"(strategies: {', '.join(self.strategies)})"
                )
            self._fio[strategy] = self._run.fio_json(strategy)
        return self._fio[strategy]

    def __reduce__(self) -> Tuple[Any, ...]:
        fio = {name: self.fio_json(name) for name in self.strategies}
        return (_result_from_state, (self._json, self.csv(), fio, self.warnings))

    def __repr__(self) -> str:
        return f"Result(scenario={self.doc.get('scenario')!r}, strategies={self.strategies!r})"


def _result_from_state(json_text: str, csv: str, fio: Dict[str, str], warnings: List[str]) -> Result:
    result = Result(None, warnings)
    result._json = json_text
    result._csv = csv
    result._fio = dict(fio)
    return result


def check(
    scenario: Scenario,
    set: Optional[Mapping[str, SetValue]] = None,
    *,
    fio: Optional[bool] = None,
    device: Optional[str] = None,
    host: Optional[str] = None,
    strategies: Optional[Sequence[str]] = None,
) -> ResolvedScenario:
    """Validates the scenario and resolves it, as ``cint check`` does.

    ``fio``, ``device``, ``host`` and ``strategies`` are ``cint``'s
    ``--fio``, ``--device``, ``--host`` and ``--strategy``, for fio job files.
    """
    source = _source(scenario, fio, device, host, strategies)
    text, doc_json, warns = _native.check(source, _sets(set))
    _warn(warns)
    return ResolvedScenario(text, doc_json, warns)


def _run(
    scenario: Scenario,
    overrides: Optional[Mapping[str, SetValue]],
    seed: Optional[int],
    emu: bool,
    fio: Optional[bool],
    device: Optional[str],
    host: Optional[str],
    strategies: Optional[Sequence[str]],
) -> Result:
    source = _source(scenario, fio, device, host, strategies)
    run, warns = _native.run(source, _sets(overrides), seed, emu)
    _warn(warns)
    return Result(run, warns)


def sim(
    scenario: Scenario,
    set: Optional[Mapping[str, SetValue]] = None,
    *,
    seed: Optional[int] = None,
    fio: Optional[bool] = None,
    device: Optional[str] = None,
    host: Optional[str] = None,
    strategies: Optional[Sequence[str]] = None,
) -> Result:
    """Simulates every strategy of the scenario, as ``cint sim`` does
    (deterministic for a seed; ``seed`` is ``--seed``)."""
    return _run(scenario, set, seed, False, fio, device, host, strategies)


def emu(
    scenario: Scenario,
    set: Optional[Mapping[str, SetValue]] = None,
    *,
    fio: Optional[bool] = None,
    device: Optional[str] = None,
    host: Optional[str] = None,
    strategies: Optional[Sequence[str]] = None,
) -> Result:
    """Emulates every strategy of the scenario on real threads and cores, as
    ``cint emu`` does: it needs the cores and the real-time priority the
    scenario asks for, and raises :class:`InputError` with the command's
    message where the machine does not allow it."""
    return _run(scenario, set, None, True, fio, device, host, strategies)


def _vary_args(vary: Mapping[str, Sequence[SetValue]], seeds: Optional[Sequence[int]]) -> List[str]:
    """``--vary KEY=V1,V2,...`` arguments; ``seeds`` is a last ``--vary seed=...``."""
    if not isinstance(vary, Mapping):
        raise InputError("vary: expected a dict of KEY: [VALUES]")
    items = list(vary.items())
    if seeds is not None:
        items.append(("seed", list(seeds)))
    args = []
    for key, values in items:
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise InputError(f"--vary '{key}': expected a list of values")
        spelled = [_set_value(v) for v in values]
        arg = f"{key}={','.join(spelled)}"
        if any("," in v for v in spelled):
            raise InputError(f"--vary '{arg}': a value has a comma")
        args.append(arg)
    return args


def sweep(
    scenario: Scenario,
    vary: Mapping[str, Sequence[SetValue]],
    *,
    set: Optional[Mapping[str, SetValue]] = None,
    backend: str = "local",
    seeds: Optional[Sequence[int]] = None,
    ray_address: Optional[str] = None,
    progress: bool = True,
    workers: int = 0,
    fio: Optional[bool] = None,
    device: Optional[str] = None,
    host: Optional[str] = None,
    strategies: Optional[Sequence[str]] = None,
) -> "pandas.DataFrame":
    """Runs every point of the cross product of ``vary`` on every strategy,
    as ``cint sweep --vary KEY=V1,V2,...`` does, on the simulator.

    Returns a DataFrame whose rows are ``cint sweep --csv``'s, in the same
    point order (the first key varies slowest) whatever the backend;
    ``frame.attrs["csv"]`` is that CSV byte for byte and
    ``frame.attrs["jsonl"]`` the JSON lines. ``seeds`` adds a last
    ``--vary seed=...``. ``backend="local"`` runs on this machine's cores
    (``workers``, 0 for one per core); ``backend="ray"`` ships the points
    to Ray as tasks: to the cluster at ``ray_address`` (``host:port``,
    ``ray://host:port``), to the Ray this process is already connected to,
    or to a local Ray started for it. ``progress`` draws a progress bar on
    a terminal.

    Ctrl-C stops the sweep with :class:`SweepInterrupted`, whose ``rows``
    hold the points that finished.
    """
    source = _source(scenario, fio, device, host, strategies)
    return _sweep(source, _sets(set), _vary_args(vary, seeds), backend, ray_address, progress, workers)


def _sweep(
    source: str,
    sets: List[str],
    vary_args: List[str],
    backend: str,
    ray_address: Optional[str],
    progress: bool,
    workers: int,
) -> "pandas.DataFrame":
    """:func:`sweep` on a read scenario, with ``--set`` and ``--vary`` spelled
    as ``cint``'s arguments (``python -m cinterrupts sweep`` passes its own)."""
    if backend == "local":
        if ray_address is not None:
            raise InputError("ray_address applies to backend='ray'")
        out = _native.sweep_local(source, sets, vary_args, workers, progress)
    elif backend == "ray":
        from . import _ray

        out = _ray.sweep(source, sets, vary_args, ray_address, progress)
    else:
        raise InputError(f"backend '{backend}': expected 'local' or 'ray'")
    _warn(out["warnings"])
    frame = _frame(out["csv"], out["keys"])
    frame.attrs["jsonl"] = out["jsonl"]
    if out["interrupted"]:
        raise SweepInterrupted(frame, out["finished"], out["total"])
    return frame
