"""The Ray backend of :func:`cinterrupts.sweep`.

The driver loads every point first (a bad key or value costs no cluster
time), runs the first point itself to learn how long a point takes, then
ships the rest to Ray as tasks of several points each, so that a task
lasts at least :data:`TASK_SECONDS` (Ray's guidance: tiny tasks gain
nothing from it), while keeping a few tasks per CPU for the load to
balance. A worker formats its points' rows with the same Rust code as
``cint sweep``; the driver puts them back in point order. A task whose
worker dies is retried by Ray (:data:`MAX_RETRIES`); the simulation is
deterministic, so the retried rows are the same bytes.
"""

from __future__ import annotations

import math
import socket
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from . import _native
from ._native import InputError, InternalError

TASK_SECONDS = 0.1
"""The shortest a task should last."""

TASKS_PER_CPU = 4
"""Tasks per CPU of the cluster, at least, while the points last."""

MAX_RETRIES = 3
"""How often Ray reruns a task whose worker died."""

CONNECT_SECONDS = 5.0
"""How long a Ray address may take to accept a connection."""

#: Object store of a Ray started for a sweep: the rows are small.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024

Point = List[Tuple[str, str]]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError(
            "backend='ray' needs Ray: pip install 'ray>=2.9' (or pip install './python[ray]')"
        ) from None
    return ray


def _probe(address: str) -> None:
    """Fails within :data:`CONNECT_SECONDS` with one line naming ``address``
    if nothing accepts a connection there (Ray itself would retry for long)."""
    client = address.startswith("ray://")
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        port = parts.port or (10001 if client else 6379)
    except ValueError:
        raise InputError(f"ray address {address}: not HOST:PORT or ray://HOST:PORT") from None
    if not parts.hostname:
        raise InputError(f"ray address {address}: not HOST:PORT or ray://HOST:PORT")
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_SECONDS):
            pass
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise InputError(f"ray address {address}: cannot connect: {reason}") from None


def connect(ray: Any, address: Optional[str]) -> None:
    """Connects to the cluster at ``address``; without one, to the Ray this
    process already uses, or to a local Ray started for the sweep."""
    if ray.is_initialized():
        return
    kwargs: Dict[str, Any] = {"logging_level": "WARNING", "log_to_driver": False}
    if address is None or address == "local":
        kwargs.update(include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_BYTES)
        if address == "local":
            kwargs["address"] = "local"
    else:
        if address != "auto":
            _probe(address)
        kwargs["address"] = address
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(f"ray address {address or 'local'}: {first}") from None


def _run_batch(source: str, sets: List[str], keys: List[str], batch: List[Tuple[int, Point]]) -> list:
    """A task: the points of ``batch`` run and formatted in this worker."""
    return _native.run_points(source, sets, keys, batch)


def batch_size(seconds_per_point: float, remaining: int, cpus: int) -> int:
    """Points per task: enough for :data:`TASK_SECONDS`, but no fewer than
    :data:`TASKS_PER_CPU` tasks per CPU."""
    wanted = math.ceil(TASK_SECONDS / max(seconds_per_point, 1e-6))
    spread = math.ceil(remaining / (TASKS_PER_CPU * max(cpus, 1)))
    return max(1, min(wanted, spread))


class _Progress:
    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.monotonic()

    def add(self, n: int) -> None:
        self.done += n
        if self.enabled:
            elapsed = time.monotonic() - self.start
            sys.stderr.write(f"\r{self.done}/{self.total} points on Ray, {elapsed:.0f} s elapsed")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def sweep(
    source: str, sets: List[str], vary: List[str], address: Optional[str], progress: bool
) -> Dict[str, Any]:
    """The sweep on Ray; returns what ``_native.sweep_local`` returns."""
    keys, points, warnings = _native.plan_sweep(source, sets, vary)
    ray = _import_ray()
    connect(ray, address)
    total = len(points)
    outcomes: List[Optional[Tuple[int, str, str]]] = [None] * total
    bar = _Progress(total, progress)
    interrupted = False

    def record(batch_result: Sequence[Tuple[int, int, str, str]]) -> None:
        for index, status, rows, jsonl in batch_result:
            outcomes[index] = (status, rows, jsonl)
        bar.add(len(batch_result))

    pending: Dict[Any, int] = {}
    try:
        started = time.perf_counter()
        record(_native.run_points(source, sets, keys, [(0, points[0])]))
        per_point = time.perf_counter() - started
        remaining = list(enumerate(points))[1:]
        if remaining:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            size = batch_size(per_point, len(remaining), cpus)
            task = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)(_run_batch)
            source_ref = ray.put(source)
            for start in range(0, len(remaining), size):
                ref = task.remote(source_ref, sets, keys, remaining[start : start + size])
                pending[ref] = start
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.2)
            for ref in ready:
                del pending[ref]
                record(_get(ray, ref))
    except KeyboardInterrupt:
        # As `cint sweep` on Ctrl-C: nothing new starts, what finished is kept.
        interrupted = True
        if pending:
            ready, rest = ray.wait(list(pending), num_returns=len(pending), timeout=0)
            for ref in ready:
                record(_get(ray, ref))
            for ref in rest:
                ray.cancel(ref)
    finally:
        bar.close()

    # The first failure in point order, as the local sweep reports it.
    for outcome in outcomes:
        if outcome is not None and outcome[0] != 0:
            status, message, _ = outcome
            raise (InternalError if status == 1 else InputError)(message)
    finished = [o for o in outcomes if o is not None]
    return {
        "keys": keys,
        "csv": _native.csv_header(keys) + "".join(rows for _, rows, _ in finished),
        "jsonl": "".join(jsonl for _, _, jsonl in finished),
        "finished": len(finished),
        "total": total,
        "interrupted": interrupted and len(finished) < total,
        "warnings": warnings,
    }


def _get(ray: Any, ref: Any) -> list:
    """A task's rows; a task Ray gave up on is an internal error."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InternalError(f"ray: a task of the sweep failed after {MAX_RETRIES} retries: {first}") from None
