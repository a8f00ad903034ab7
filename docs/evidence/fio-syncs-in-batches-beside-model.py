#!/usr/bin/env python3
"""Random libaio write jobs with fsync, deep queues and batches, run in fio
and in the model, their requests, bytes and fsyncs compared.

fio looks for the sync due as it takes each request slot; one that falls
due within a submission batch ends the batch, and fio reaps before it
(backend.c `io_queue_event`, crate `cint_scenario::passes`,
`PassSyncs::sync_ends_batch`). Each job draws a depth (4 to 32), a
submission batch, a completion batch of 1 or the submission's, fsync
every 1 to 7 writes, a size and a block size, in order or at random.
Prints each job whose counts differ, then how many did.

    python3 docs/evidence/fio-syncs-in-batches-beside-model.py [SEED] [JOBS]

Needs fio and cint on PATH (or CINT=path/to/cint). On 2026-11-29 (third
session), seeds 11 and 12, 60 jobs: none differed; the build before the
batch rule (this session's start, 5328c51) differed in 11 and 13 of them.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def counts(path):
    jobs = json.load(open(path))["jobs"]
    ios = sum(j[d]["total_ios"] for j in jobs for d in ("read", "write"))
    moved = sum(j[d]["io_bytes"] for j in jobs for d in ("read", "write"))
    syncs = sum(j["sync"]["lat_ns"]["N"] for j in jobs)
    return (ios, moved, syncs)


def draw(rng):
    depth = rng.choice([4, 8, 16, 32])
    batch = min(rng.choice([1, 2, 4, 8, depth]), depth)
    complete_min = rng.choice([1, batch])
    return [
        f"--rw={rng.choice(['write', 'randwrite'])}",
        f"--bs={rng.choice(['4k', '8k', '16k'])}",
        f"--size={rng.choice(['256k', '1m', '100k'])}",
        f"--fsync={rng.choice([1, 2, 3, 4, 5, 7])}",
        "--ioengine=libaio",
        f"--iodepth={depth}",
        f"--iodepth_batch={batch}",
        f"--iodepth_batch_complete_min={complete_min}",
    ]


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    cint = os.environ.get("CINT", "cint")
    rng = random.Random(seed)
    work = tempfile.mkdtemp()
    data = os.path.join(work, "f.dat")
    differ = 0
    try:
        for _ in range(jobs):
            opts = draw(rng)
            base = ["--name=j", "--direct=1", f"--filename={data}"]
            for run in ("fio", "model"):
                if os.path.exists(data):
                    os.remove(data)
                if run == "fio":
                    subprocess.run(
                        ["fio", *base, *opts, "--output-format=json", f"--output={work}/fio.json"],
                        capture_output=True, text=True, check=True)
                else:
                    subprocess.run(
                        [cint, "sim", "--strategy", "none", "--json", "--fio-json",
                         f"{work}/model", "--fio-cmd", "fio", *base, *opts],
                        capture_output=True, text=True, check=True)
            theirs, ours = counts(f"{work}/fio.json"), counts(f"{work}/model/none.json")
            if theirs != ours:
                differ += 1
                print(" ".join(opts), "\n  fio 3.33:", theirs, "\n  model:   ", ours)
            shutil.rmtree(f"{work}/model")
    finally:
        shutil.rmtree(work)
    print(f"{jobs} jobs, {differ} differ (requests, bytes, fsyncs)")


if __name__ == "__main__":
    main()
