#!/usr/bin/env python3
"""Random fio job files of several sized jobs, run in fio and in the model,
each job's counts compared.

Each file holds two to four jobs (`[global]` direct, now and then libaio),
each on a file of its own: a direction and pattern, a size, and now and
then `stonewall` (a group after the jobs before it), loops, fsync,
numjobs, number_ios, a start delay, io_size (in bytes or a share) or a
filesize; sizes now and then in fio's IEC units (powers of 1000). The counts compared do not
depend on the device's speed: each job's requests, bytes and sync latency
samples. Prints each file whose counts differ, then how many did.

    python3 docs/evidence/fio-job-files-beside-model.py [SEED] [FILES]

Needs fio and cint on PATH (or CINT=path/to/cint). On 2026-11-29 (second
session), seeds 1 and 2, 110 files: none differed; in the third session,
with IEC sizes, filesizes and io_size shares drawn, seeds 3 and 4, 140
files: none differed.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def counts(path):
    """Requests, bytes and sync samples per job name."""
    out = {}
    for j in json.load(open(path))["jobs"]:
        c = out.setdefault(j["jobname"], [0, 0, 0])
        c[0] += j["read"]["total_ios"] + j["write"]["total_ios"]
        c[1] += j["read"]["io_bytes"] + j["write"]["io_bytes"]
        c[2] += j["sync"]["lat_ns"]["N"]
    return out


def draw(rng, work):
    text = "[global]\ndirect=1\n"
    if rng.random() < 0.5:
        text += "ioengine=libaio\n"
    for i in range(rng.randint(2, 4)):
        rw = rng.choice(["read", "write", "randread", "randwrite"])
        bs = rng.choice(["4k", "8k", "16k"])
        size = rng.choice(["64k", "100k", "1m", "1MiB"])
        text += f"[j{i}]\nfilename={work}/f{i}.dat\nrw={rw}\nbs={bs}\nsize={size}\n"
        if i > 0 and rng.random() < 0.4:
            text += "stonewall\n"
        if rng.random() < 0.3:
            text += f"loops={rng.choice([2, 3])}\n"
        if "write" in rw and rng.random() < 0.4:
            text += f"fsync={rng.choice([1, 3])}\n"
        if rng.random() < 0.2:
            text += "numjobs=2\n"
        if rng.random() < 0.2:
            text += f"number_ios={rng.choice([5, 50])}\n"
        if rng.random() < 0.2:
            text += "startdelay=10ms\n"
        if rng.random() < 0.15:
            text += f"io_size={rng.choice(['96k', '2m', '50%'])}\n"
        if rng.random() < 0.15:
            # The file is laid out at this size; the job's size is fio's
            # byte limit within it, or capped by it.
            text += f"filesize={rng.choice(['256k', '1MiB'])}\n"
    return text


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    cint = os.environ.get("CINT", "cint")
    rng = random.Random(seed)
    work = tempfile.mkdtemp()
    differ = 0
    try:
        for _ in range(files):
            text = draw(rng, work)
            with open(f"{work}/job.fio", "w") as f:
                f.write(text)
            for i in range(5):
                if os.path.exists(f"{work}/f{i}.dat"):
                    os.remove(f"{work}/f{i}.dat")
            fio = subprocess.run(
                ["fio", f"{work}/job.fio", "--output-format=json", f"--output={work}/fio.json"],
                capture_output=True, text=True)
            if fio.returncode != 0:
                print("fio failed:", text.replace("\n", " | "))
                continue
            model = subprocess.run(
                [cint, "sim", "--strategy", "none", "--fio-json", f"{work}/model",
                 "--fio", f"{work}/job.fio"], capture_output=True, text=True)
            if model.returncode != 0:
                print("refused:", model.stderr.strip().splitlines()[-1])
                continue
            theirs, ours = counts(f"{work}/fio.json"), counts(f"{work}/model/none.json")
            if theirs != ours:
                differ += 1
                print(text.replace("\n", " | "), "\n  fio 3.33:", theirs, "\n  model:   ", ours)
            shutil.rmtree(f"{work}/model")
    finally:
        shutil.rmtree(work)
    print(f"{files} files, {differ} differ (requests, bytes, sync latency samples per job)")


if __name__ == "__main__":
    main()
