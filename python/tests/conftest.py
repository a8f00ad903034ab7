"""Shared fixtures: the repository, the `cint` binary the Python API is
compared with, and a real two-node Ray cluster on this machine."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Ray on loopback only: these tests reach no address but this machine's
# 127.0.0.1 (set before Ray is imported, and inherited by its processes).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# fio documents carry a timestamp: fixed, so the CLI's and Python's match.
os.environ["SOURCE_DATE_EPOCH"] = "1700000000"

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"


@pytest.fixture(scope="session")
def cint_bin() -> Path:
    """The `cint` binary: $CINT_BIN, or target/release/cint (built if missing)."""
    given = os.environ.get("CINT_BIN")
    if given:
        return Path(given)
    path = REPO / "target" / "release" / "cint"
    if not path.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "cint"], cwd=REPO, check=True)
    return path


def run_cint(cint_bin, *args, env=None, timeout=300):
    """Runs `cint ARGS`; returns the completed process (text)."""
    return subprocess.run(
        [str(cint_bin), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def ray_cluster():
    """A two-node Ray cluster (one CPU each, small object stores), the driver
    connected to it."""
    import ray
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024, "node_ip_address": "127.0.0.1"}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def python_env():
    """The environment for a child Python that imports this package."""
    env = dict(os.environ)
    env["CINT_PYTHON"] = sys.executable
    return env


# 40 points of about 0.2 s each: long enough to be stopped midway.
LONG_SWEEP = [str(SCENARIOS / "async-batch.toml"), "--set", "duration=500ms",
              "--vary", "seed=" + ",".join(str(s) for s in range(1, 41))]
LONG_SWEEP_POINTS = 40
ROWS_PER_POINT = 6  # async-batch: six strategies, one job


def ctrl_c_and_check(child, started, csv):
    """Once `started()` says points are running, waits a second, sends
    SIGINT to the child's process group as a terminal's Ctrl-C does, and
    checks what `cint sweep` promises: exit 130, one line counting the
    finished points, and those points' rows in `csv`, in point order."""
    started()
    time.sleep(1.0)
    os.killpg(child.pid, signal.SIGINT)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 130, stderr
    message = stderr.strip().splitlines()[-1]
    assert message.startswith("cint: sweep interrupted: ")
    assert message.endswith(f" of {LONG_SWEEP_POINTS} points finished, and are written")
    finished = int(message.split()[3])
    assert 0 < finished < LONG_SWEEP_POINTS
    rows = csv.read_text().splitlines()
    assert len(rows) == 1 + ROWS_PER_POINT * finished
    seeds = [int(r.split(",")[0]) for r in rows[1:]]
    assert seeds == sorted(seeds)
