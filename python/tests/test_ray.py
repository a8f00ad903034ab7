"""Sweeps on a real Ray: a two-node cluster on this machine gives the local
sweep's rows byte for byte, also when a worker process is killed mid-sweep
or the sweep is stopped with Ctrl-C; `cint sweep --ray` reaches it; an
address nobody listens on is one line, quickly."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import cinterrupts
from cinterrupts import _ray
from conftest import LONG_SWEEP, SCENARIOS, ctrl_c_and_check, python_env, run_cint

SCENARIO = SCENARIOS / "async-batch.toml"
TASK_TITLE = b"ray::_run_batch"


def batch_workers():
    """Pids of the Ray worker processes running a batch of sweep points now."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    title = f.read().split(b"\0")[0]
            except OSError:
                continue
            if title == TASK_TITLE:
                pids.append(int(entry))
    return pids


def wait_for_batch_worker(deadline_s=120):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = batch_workers()
        if pids:
            return pids
        time.sleep(0.02)
    raise AssertionError("no Ray worker ever ran a batch of points")


def test_a_two_node_cluster_gives_the_local_rows(ray_cluster):
    import ray

    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    vary = {"job.async.iodepth": [64, 256], "strategy.cinterrupts.thr": [16, 32, 64]}
    sets = {"duration": "30ms"}
    local = cinterrupts.sweep(SCENARIO, vary, set=sets, seeds=[1, 2], progress=False)
    on_ray = cinterrupts.sweep(SCENARIO, vary, set=sets, seeds=[1, 2], backend="ray", progress=False)
    assert on_ray.attrs["csv"] == local.attrs["csv"]
    assert on_ray.attrs["jsonl"] == local.attrs["jsonl"]
    assert on_ray.equals(local)
    assert len(local) == 2 * 3 * 2 * 6  # points x strategies (one job)


def test_a_worker_killed_mid_sweep_changes_no_byte(ray_cluster):
    vary = {"seed": list(range(1, 25))}
    sets = {"duration": "500ms"}
    local = cinterrupts.sweep(SCENARIO, vary, set=sets, progress=False)
    killed = []

    def kill_one():
        pid = wait_for_batch_worker()[0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    on_ray = cinterrupts.sweep(SCENARIO, vary, set=sets, backend="ray", progress=False)
    killer.join(timeout=5)
    assert killed, "no worker was killed"
    assert on_ray.attrs["csv"] == local.attrs["csv"]


def test_ctrl_c_keeps_the_finished_points_in_point_order(ray_cluster):
    vary = {"seed": list(range(1, 41))}
    sets = {"duration": "500ms"}
    local = cinterrupts.sweep(SCENARIO, vary, set=sets, progress=False).attrs["csv"].splitlines()

    def ctrl_c():
        wait_for_batch_worker()
        time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(cinterrupts.SweepInterrupted) as caught:
        cinterrupts.sweep(SCENARIO, vary, set=sets, backend="ray", progress=False)
    stop = caught.value
    assert 0 < stop.finished < stop.total == 40
    rows = stop.rows.attrs["csv"].splitlines()
    assert rows[0] == local[0] and len(rows) - 1 == 6 * stop.finished
    # Every finished row is the local sweep's, in point order.
    positions = [local.index(row) for row in rows[1:]]
    assert positions == sorted(positions)


def test_cint_sweep_ray_runs_on_the_cluster(cint_bin, ray_cluster, tmp_path):
    args = ["--set", "duration=30ms", "--vary", "job.async.iodepth=64,256", "--vary", "seed=1,2"]
    local = run_cint(cint_bin, "sweep", SCENARIO, *args, "--csv", tmp_path / "local.csv")
    assert local.returncode == 0, local.stderr
    on_ray = run_cint(cint_bin, "sweep", SCENARIO, *args, "--csv", tmp_path / "ray.csv",
                      "--ray", ray_cluster.address, env=python_env())
    assert on_ray.returncode == 0, on_ray.stderr
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert on_ray.stderr.strip().splitlines()[-1] == f"cint: wrote {tmp_path / 'ray.csv'} (24 rows)"


def test_cint_sweep_ray_runs_a_fio_command_line(cint_bin, ray_cluster, tmp_path):
    fio = ["fio", "--name=a", "--rw=randread", "--ioengine=libaio", "--direct=1", "--runtime=5ms"]
    args = ["--vary", "job.a.iodepth=4,16", "--vary", "seed=1,2"]
    local = run_cint(cint_bin, "sweep", *args, "--csv", tmp_path / "local.csv", "--fio-cmd", *fio)
    assert local.returncode == 0, local.stderr
    on_ray = run_cint(cint_bin, "sweep", *args, "--csv", tmp_path / "ray.csv", "--ray", ray_cluster.address,
                      "--fio-cmd", *fio, env=python_env())
    assert on_ray.returncode == 0, on_ray.stderr
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()


def test_an_unreachable_address_is_one_line_naming_it(cint_bin):
    env = python_env()
    started = time.monotonic()
    cli = run_cint(cint_bin, "sweep", SCENARIO, "--vary", "seed=1,2", "--ray", "127.0.0.1:1", env=env)
    assert time.monotonic() - started < _ray.CONNECT_SECONDS + 30
    assert cli.returncode == 2
    assert cli.stderr.strip() == "ray address 127.0.0.1:1: cannot connect: Connection refused"
    with pytest.raises(cinterrupts.InputError, match=r"^ray address ray://127\.0\.0\.1:1: cannot connect"):
        _ray.connect(_FakeUninitialisedRay(), "ray://127.0.0.1:1")


class _FakeUninitialisedRay:
    """What `connect` asks of Ray before it probes the address: whether this
    process is connected already (the session's cluster fixture may be)."""

    @staticmethod
    def is_initialized():
        return False

    @staticmethod
    def init(**kwargs):
        raise AssertionError("init must not be reached for an unreachable address")


def test_cint_without_python_or_the_package_says_what_to_install(cint_bin, tmp_path):
    env = dict(os.environ, CINT_PYTHON=str(tmp_path / "no-python"))
    cli = run_cint(cint_bin, "sweep", SCENARIO, "--vary", "seed=1,2", "--ray", "127.0.0.1:1", env=env)
    assert cli.returncode == 2
    assert len(cli.stderr.splitlines()) == 1 and "pip install ./python" in cli.stderr
    assert "cannot run" in cli.stderr
    # A Python without the package: a fresh virtual environment's.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    env["CINT_PYTHON"] = str(tmp_path / "venv" / "bin" / "python")
    cli = run_cint(cint_bin, "sweep", SCENARIO, "--vary", "seed=1,2", "--ray", "127.0.0.1:1", env=env)
    assert cli.returncode == 2
    assert cli.stderr.strip().endswith("has no cinterrupts package")
    assert "pip install ./python" in cli.stderr and len(cli.stderr.splitlines()) == 1


def test_ctrl_c_on_cint_sweep_ray_writes_the_finished_points(cint_bin, ray_cluster, tmp_path):
    csv = tmp_path / "partial.csv"
    command = [str(cint_bin), "sweep", *LONG_SWEEP, "--csv", str(csv), "--ray", ray_cluster.address]
    child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=python_env(),
                             start_new_session=True)
    ctrl_c_and_check(child, wait_for_batch_worker, csv)
