"""How much the Python package costs over the `cint` binary, and how a
sweep's points per second compare on this machine and on Ray.

A benchmark, not a test: it prints numbers, it asserts nothing about them.
Results and how they were taken: docs/PYTHON.md, "Speed".

  python python/benchmarks/bench.py [--cint target/release/cint] [--points 1000]
      [--ray-address HOST:PORT]

1. `cinterrupts.sim` against `cint sim --json` on a small scenario at two
   durations (median of interleaved runs; the binary's time includes
   starting the process, which is what a user of the binary pays).
2. A sweep of --points points of about 10 ms each: the local backend (one
   worker per core) against the Ray backend (a local Ray with one CPU per
   core, or the cluster at --ray-address), in points per second; the two
   CSVs are compared byte for byte.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import cinterrupts

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "scenarios" / "sync-qd1.toml"
# Measured times of the small scenario: the process start of the binary
# weighs on the first, hardly on the second.
DURATIONS_MS = (100, 1000)
# A sweep point of about 10 ms of one core on the reference machine (the
# benchmark prints what it measured).
POINT_SETS = {"duration": "12ms", "warmup": "1ms"}


def sim_overhead(cint: Path, runs: int, duration_ms: int) -> None:
    sets = {"duration": f"{duration_ms}ms", "warmup": "10ms"}
    args = [str(cint), "sim", str(SMALL), "--json"]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    binary, python = [], []
    for _ in range(runs):
        started = time.perf_counter()
        cli = subprocess.run(args, capture_output=True, text=True, check=True)
        binary.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = cinterrupts.sim(SMALL, sets)
        python.append(time.perf_counter() - started)
        assert result.json == cli.stdout, "the same document"
    b, p = statistics.median(binary), statistics.median(python)
    print(f"sim, {SMALL.name} at {duration_ms} ms: cint {b * 1000:.1f} ms, "
          f"cinterrupts.sim {p * 1000:.1f} ms (median of {runs}): overhead {100 * (p / b - 1):+.1f}%")


def sweep_rates(points: int, address: str) -> None:
    import ray

    vary = {"seed": list(range(1, points + 1))}
    sets = POINT_SETS
    started = time.perf_counter()
    local = cinterrupts.sweep(SMALL, vary, set=sets, progress=False)
    local_s = time.perf_counter() - started
    cores = os.cpu_count() or 1
    if address:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    else:
        ray.init(num_cpus=cores, include_dashboard=False, object_store_memory=128 * 1024 * 1024,
                 logging_level="WARNING", log_to_driver=False)
    cpus = int(ray.cluster_resources().get("CPU", 0))
    # Ray's worker processes start on the first tasks: one warm-up sweep.
    cinterrupts.sweep(SMALL, {"seed": list(range(1, 4 * cpus + 1))}, set=sets, backend="ray", progress=False)
    started = time.perf_counter()
    on_ray = cinterrupts.sweep(SMALL, vary, set=sets, backend="ray", progress=False)
    ray_s = time.perf_counter() - started
    ray.shutdown()
    assert on_ray.attrs["csv"] == local.attrs["csv"], "the same rows"
    per_point = local_s * cores / points
    print(f"sweep, {points} points of {sets['duration']} simulated ({per_point * 1000:.1f} ms of a core each): "
          f"local ({cores} workers) {points / local_s:.0f} points/s, "
          f"Ray ({cpus} CPUs{', ' + address if address else ', local'}) {points / ray_s:.0f} points/s: "
          f"Ray takes {ray_s / local_s:.2f}x the local time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cint", type=Path, default=REPO / "target" / "release" / "cint")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--ray-address", default="", help="a Ray cluster instead of a local Ray")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, cinterrupts {cinterrupts.__version__}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    for duration_ms in DURATIONS_MS:
        sim_overhead(args.cint, args.runs, duration_ms)
    sweep_rates(args.points, args.ray_address)


if __name__ == "__main__":
    main()
