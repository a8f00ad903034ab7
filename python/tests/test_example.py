"""examples/python/simpy_device.py: a SimPy device that asks
cinterrupts.Policy when to interrupt tells the paper's story."""

import importlib.util
import subprocess
import sys

from conftest import REPO

EXAMPLE = REPO / "examples" / "python" / "simpy_device.py"


def load_example():
    spec = importlib.util.spec_from_file_location("simpy_device", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_simpy_device_coalesces_without_delaying_urgent_requests():
    example = load_example()
    results = {kind: example.run(kind, params, 10_000_000, seed=3) for kind, params in example.STRATEGIES}
    none, adaptive, cint = results["none"], results["adaptive"], results["cinterrupts"]
    assert none["irqs_per_io"] == 1.0
    # Coalescing: far fewer interrupts than one per I/O.
    assert adaptive["irqs_per_io"] < 0.2 and cint["irqs_per_io"] < 0.2
    # Adaptive holds the reader's completion up to delta; Urgent does not wait.
    assert adaptive["reader_mean_us"] > none["reader_mean_us"] + 2
    assert abs(cint["reader_mean_us"] - none["reader_mean_us"]) < 1


def test_the_example_runs_as_a_script():
    run = subprocess.run([sys.executable, str(EXAMPLE), "--duration-us", "2000"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split()[0] == "strategy" and [l.split()[0] for l in lines[1:]] == ["none", "adaptive", "cinterrupts"]
