"""Type hints of the native half of cinterrupts (the Rust crate crates/python).

Use the package (``import cinterrupts``); of this module only
:class:`Policy`, :class:`ModeSelect`, :class:`InputError` and
:class:`InternalError` are public,
re-exported by the package.
"""

from typing import Dict, List, Optional, Tuple, Union

SourceState = str  # a scenario read once, in JSON: opaque
Point = List[Tuple[str, str]]

IRQ_NONE: int
IRQ_FULL: int
IRQ_URGENT_ONLY: int

class InputError(Exception):
    """Bad input: what the ``cint`` command refuses with exit status 2,
    with its one-line message."""

class InternalError(Exception):
    """An internal error (an engine bug): what ``cint`` reports with exit status 1."""

class Policy:
    """One interrupt policy of the cinterrupts policy library, driven call by
    call from your own model (a SimPy device, say).

    ``kind`` and ``params`` are a scenario file's ``[[strategy]]`` kind and
    keys, in its units: ``Policy("cinterrupts", delta="6us", thr=32)``,
    ``Policy("nvme", thr=8, time="20us")``, ``Policy("adaptive")`` (the
    default device's reference ``delta`` and ``thr``). Kinds: ``none``,
    ``nvme``, ``adaptive``, ``cinterrupts``, ``vic``, ``vic-sched``
    (docs/SCENARIO-KEYS.md). ``now_ns`` is the time of creation.

    Every call goes through the policy library's C ABI, so the decisions
    are the C ABI's, and so are its checks: time must not go backwards, a
    sequence number must be in flight, a hint must be known (each raises
    :class:`InputError`). Decisions are the ``CINT_IRQ_*`` codes, equal to
    :class:`cinterrupts.Irq`: 0 none, 1 full, 2 urgent-only.

    A hint is ``None`` (unmarked), ``"urgent"``, ``"barrier"``, or the C
    ABI's hint bits as an int.
    """

    def __init__(self, kind: str, now_ns: int = 0, **params: Union[str, int, float, bool]) -> None: ...
    def on_submit(self, now_ns: int, hint: Union[None, str, int] = None) -> int:
        """A request was submitted at ``now_ns``; returns its sequence number."""
    def on_complete(self, now_ns: int, hint: Union[None, str, int] = None, seq: Optional[int] = None) -> int:
        """Request ``seq`` (default: the oldest in flight), submitted with
        ``hint``, completed at ``now_ns``; returns the interrupt to fire."""
    def on_timer(self, now_ns: int) -> int:
        """The clock reached :meth:`next_deadline`; returns the interrupt to fire."""
    def on_opportunity(self, now_ns: int) -> int:
        """A delivery opportunity (a VMM entry, for vIC); returns the interrupt to fire."""
    def on_schedule(self, now_ns: int, running: bool, slice_end_ns: Optional[int] = None) -> None:
        """The guest's schedule changed (scheduler-aware vIC)."""
    def next_deadline(self) -> Optional[int]:
        """When :meth:`on_timer` must next be called (ns), or ``None``."""
    @property
    def in_flight(self) -> int:
        """Requests submitted and not completed."""
    @property
    def kind(self) -> str:
        """The kind given."""

class ModeSelect:
    """The per-request completion-mode selector (docs/ALGORITHMS.md section
    10): for each request, spin (classic polling), sleep then spin (hybrid
    polling), or sleep until the interrupt, whichever its energy estimate
    says is cheapest, from what it measures and what the kernel knows of
    its machine.

    The machine is a built-in host and device (the power profiles
    ``cint sim`` uses; ``xeon-e3-1230v5`` and ``optane-900p`` have them),
    with the host's cpuidle governor or ``governor`` (``"menu"``,
    ``"menu-no-iowait"``, ``"teo"``). Every call goes through the policy
    library's C ABI; bad input raises :class:`InputError`.

    Feed it each completion's device time (:meth:`record`) and, where your
    model knows it, the idle state each wait woke the core from
    (:meth:`record_idle`): after six such waits in a state the governor's
    rule did not predict, it prices the wait at the state seen.
    """

    def __init__(self, host: str = "xeon-e3-1230v5", device: str = "optane-900p", governor: Optional[str] = None) -> None: ...
    def choose(
        self, bytes: int, write: bool = False, in_flight: int = 1, contended: bool = False, can_interrupt: bool = True
    ) -> Tuple[str, int]:
        """``("poll", 0)``, ``("sleep", ns)`` or ``("interrupt", 0)`` for a
        request of ``bytes`` with ``in_flight`` requests in flight on the
        host (this one included); ``contended``: another thread wants the
        core (runnable, or asleep waiting for its I/O); ``can_interrupt``: False on a polled-only queue."""
    def record(self, bytes: int, run_time_ns: int, write: bool = False) -> None:
        """A request took ``run_time_ns`` from reaching the device to its
        completion being posted."""
    def record_idle(
        self, bytes: int, mode: str, reached: Union[str, int], write: bool = False, sleep_ns: int = 0
    ) -> None:
        """A request's wait as ``mode`` (``"sleep"`` for ``sleep_ns``, the
        sleep :meth:`choose` gave, which must be positive; or
        ``"interrupt"``; ``"poll"`` teaches nothing) ended with its core
        woken from idle state ``reached``: a name of :attr:`idle_states` or
        its index."""
    def observe_idle_one_in(self, n: int) -> None:
        """You report (:meth:`record_idle`) one wait in ``n`` (1 to 1024) of
        those you could: the governor's rule then votes ``n`` times less
        often, so the sampled waits weigh as every wait would."""
    @property
    def idle_states(self) -> List[str]:
        """The host's idle states, shallowest first."""
    @property
    def governor(self) -> str:
        """The governor whose rule predicts the idle states."""

class Run:
    json: str
    strategies: List[str]
    def csv(self) -> str: ...
    def fio_json(self, strategy: str) -> str: ...

def version() -> str: ...
def read_source(
    path: str, fio: bool, device: Optional[str] = None, host: Optional[str] = None, strategies: List[str] = ...
) -> SourceState: ...
def toml_source(text: str) -> SourceState: ...
def command_line_source(
    argv: List[str], device: Optional[str] = None, host: Optional[str] = None, strategies: List[str] = ...
) -> SourceState: ...
def check(source: SourceState, sets: List[str]) -> Tuple[str, str, List[str]]: ...
def run(source: SourceState, sets: List[str], seed: Optional[int] = None, emu: bool = False) -> Tuple[Run, List[str]]: ...
def sweep_local(
    source: SourceState, sets: List[str], vary: List[str], workers: int = 0, progress: bool = True
) -> Dict[str, object]: ...
def plan_sweep(source: SourceState, sets: List[str], vary: List[str]) -> Tuple[List[str], List[Point], List[str]]: ...
def run_points(
    source: SourceState, sets: List[str], keys: List[str], points: List[Tuple[int, Point]]
) -> List[Tuple[int, int, str, str]]: ...
def csv_header(keys: List[str]) -> str: ...
