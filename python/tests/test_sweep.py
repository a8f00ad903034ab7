"""cinterrupts.sweep on this machine against `cint sweep`: the same CSV
bytes and JSON lines in the same point order; the same refusals; Ctrl-C
keeps the finished points."""

import os
import signal
import subprocess
import sys
import threading
import time

import pandas
import pytest

import cinterrupts
from conftest import LONG_SWEEP, SCENARIOS, ctrl_c_and_check, run_cint

SCENARIO = SCENARIOS / "mixed.toml"
SETS = {"duration": "10ms", "warmup": "2ms"}
VARY = {"job.async.iodepth": [16, 32], "strategy.cinterrupts.thr": [8, 32]}
CLI_ARGS = ["--set", "duration=10ms", "--set", "warmup=2ms",
            "--vary", "job.async.iodepth=16,32", "--vary", "strategy.cinterrupts.thr=8,32"]


def cli_sweep(cint_bin, tmp_path, *extra):
    csv, out = tmp_path / "cli.csv", tmp_path / "cli.jsonl"
    cli = run_cint(cint_bin, "sweep", SCENARIO, *CLI_ARGS, *extra, "--csv", csv, "--out", out)
    assert cli.returncode == 0, cli.stderr
    return csv.read_text(), out.read_text()


def test_local_rows_are_the_cli_rows_in_point_order(cint_bin, tmp_path):
    csv, jsonl = cli_sweep(cint_bin, tmp_path, "--vary", "seed=1,2")
    frame = cinterrupts.sweep(SCENARIO, VARY, set=SETS, seeds=[1, 2], progress=False, workers=2)
    assert frame.attrs["csv"] == csv
    assert frame.attrs["jsonl"] == jsonl
    # The DataFrame is the CSV as pandas reads it, varied values as text,
    # and NaN for the empty latencies of a job without a latency sample
    # (the sync job, which gets no turn on its core in the 10 ms at
    # iodepth 32 under two of the strategies, has none there).
    keys = ["job.async.iodepth", "strategy.cinterrupts.thr", "seed"]
    latencies = ["lat_mean_ns", "lat_p50_ns", "lat_p99_ns"]
    from_file = pandas.read_csv(tmp_path / "cli.csv", dtype={k: str for k in keys + ["strategy", "kind", "job"]},
                                keep_default_na=False, na_values={c: [""] for c in latencies})
    assert frame["lat_mean_ns"].isna().any() and frame["lat_mean_ns"].dtype.kind == "f"
    pandas.testing.assert_frame_equal(frame, from_file)
    assert list(frame.columns[:3]) == keys
    assert list(frame["job.async.iodepth"].unique()) == ["16", "32"]  # first key slowest
    # One worker gives the same bytes.
    one = cinterrupts.sweep(SCENARIO, VARY, set=SETS, seeds=[1, 2], progress=False, workers=1)
    assert one.attrs["csv"] == csv


def test_python_m_cinterrupts_sweep_writes_the_cli_files(cint_bin, tmp_path):
    csv, jsonl = cli_sweep(cint_bin, tmp_path)
    py_csv, py_out = tmp_path / "py.csv", tmp_path / "py.jsonl"
    run = subprocess.run([sys.executable, "-m", "cinterrupts", "sweep", str(SCENARIO), *CLI_ARGS,
                          "--csv", str(py_csv), "--out", str(py_out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert py_csv.read_text() == csv and py_out.read_text() == jsonl
    assert run.stderr.splitlines() == [f"cint: wrote {py_csv} (24 rows)", f"cint: wrote {py_out} (24 rows)"]


FIO_CMD = ["fio", "--name=a", "--rw=randread", "--ioengine=libaio", "--direct=1", "--iodepth=8",
           "--numjobs=2", "--runtime=5ms"]


def test_python_m_cinterrupts_sweeps_a_fio_command_line_as_cint_does(cint_bin, tmp_path):
    vary = ["--vary", "job.a.iodepth=4,16", "--vary", "seed=1,2"]
    cli = run_cint(cint_bin, "sweep", *vary, "--csv", tmp_path / "cli.csv", "--fio-cmd", *FIO_CMD)
    assert cli.returncode == 0, cli.stderr
    py_csv = tmp_path / "py.csv"
    run = subprocess.run([sys.executable, "-m", "cinterrupts", "sweep", *vary, "--csv", str(py_csv),
                          "--jobs", "1", "--fio-cmd", *FIO_CMD], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert py_csv.read_bytes() == (tmp_path / "cli.csv").read_bytes()
    # Two threads the kernel would place: two cores, one job.
    assert len(py_csv.read_text().splitlines()) == 1 + 4 * 3
    for bad in (["--fio-cmd"], [str(SCENARIO), "--fio-cmd", *FIO_CMD]):
        run = subprocess.run([sys.executable, "-m", "cinterrupts", "sweep", "--vary", "seed=1,2", *bad],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert "--fio-cmd" in run.stderr


def test_bad_vary_and_scenarios_are_the_cli_one_line_errors(cint_bin, tmp_path):
    unparsable = tmp_path / "broken.toml"
    unparsable.write_text("name = \n")
    cases = [
        ({"job.nope.iodepth": [1, 2]}, SCENARIO, ["--vary", "job.nope.iodepth=1,2"]),
        ({"duration": []}, SCENARIO, ["--vary", "duration="]),
        ({"duration": ["10ms"]}, unparsable, ["--vary", "duration=10ms"]),
        ({"duration": ["10ms", "soon"]}, SCENARIO, ["--vary", "duration=10ms,soon"]),
    ]
    for vary, scenario, args in cases:
        cli = run_cint(cint_bin, "sweep", scenario, *args)
        assert cli.returncode == 2, args
        with pytest.raises(cinterrupts.InputError) as caught:
            cinterrupts.sweep(scenario, vary, progress=False)
        assert str(caught.value) == cli.stderr.strip(), args
        # The same through python -m cinterrupts and through --ray's
        # planning, which loads every point before connecting anywhere.
        run = subprocess.run([sys.executable, "-m", "cinterrupts", "sweep", str(scenario), *args],
                             capture_output=True, text=True, timeout=60)
        assert (run.returncode, run.stderr) == (2, cli.stderr), args
        with pytest.raises(cinterrupts.InputError) as caught:
            cinterrupts.sweep(scenario, vary, backend="ray", ray_address="127.0.0.1:1", progress=False)
        assert str(caught.value) == cli.stderr.strip(), args
    with pytest.raises(cinterrupts.InputError, match="backend 'dask'"):
        cinterrupts.sweep(SCENARIO, {"duration": ["10ms"]}, backend="dask")


def threads(pid="self"):
    return len(os.listdir(f"/proc/{pid}/task"))


def wait_for_threads(pid, more_than, deadline_s=60):
    """Waits until process `pid` runs more than `more_than` threads: the
    sweep's workers have started."""
    end = time.monotonic() + deadline_s
    while threads(pid) <= more_than:
        assert time.monotonic() < end, "the sweep never started its workers"
        time.sleep(0.02)




def test_ctrl_c_returns_the_finished_points_in_point_order():
    full = cinterrupts.sweep(LONG_SWEEP[0], {"seed": [1, 2, 3]}, set={"duration": "500ms"}, progress=False)
    before = threads()

    def ctrl_c():
        wait_for_threads("self", before + 1)
        time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(cinterrupts.SweepInterrupted) as caught:
        cinterrupts.sweep(LONG_SWEEP[0], {"seed": list(range(1, 41))}, set={"duration": "500ms"},
                          workers=1, progress=False)
    stop = caught.value
    assert 0 < stop.finished < stop.total == 40
    # One worker: the finished points are the first ones.
    assert stop.rows.attrs["csv"].splitlines()[:10] == full.attrs["csv"].splitlines()[:10]
    assert len(stop.rows) == len(full) // 3 * stop.finished


def test_ctrl_c_on_python_m_cinterrupts_writes_the_finished_points(tmp_path):
    csv = tmp_path / "partial.csv"
    child = subprocess.Popen([sys.executable, "-m", "cinterrupts", "sweep", *LONG_SWEEP, "--csv", str(csv),
                              "--jobs", "1"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    ctrl_c_and_check(child, lambda: wait_for_threads(child.pid, 2), csv)
