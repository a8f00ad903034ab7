"""Shared fixtures: the repository, the `cint` binary the Python API is
compared with, and a real two-node Ray cluster on this machine."""

import os
import subprocess
import sys
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
