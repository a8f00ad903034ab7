#!/usr/bin/env python3
"""Merges the iologs and latency logs of a fio run into the two shipped
traces (see README.md in this directory):

  fio-2jobs.iolog    one fio iolog v3: every job's file added and opened at
                     time 0,
                     then every I/O line of every job in time order (each
                     job's timestamps count from its own start, as fio
                     writes them);
  fio-2jobs.msr.csv  the same requests as SNIA/MSR Cambridge CSV lines,
                     with fio's own total latency ('lat' log, log_offset=1)
                     of each request as its ResponseTime.

Usage: merge_fio_logs.py STARTED_UTC JOB:IOLOG:LATLOG... (run in the fio
run's directory). Requests are joined to their latencies by offset: fio's
random map gives every block of a job one I/O per pass.
"""

import sys
from datetime import datetime, timezone

# Seconds from 1601-01-01 (Windows filetime's epoch) to 1970-01-01.
FILETIME_EPOCH = 11_644_473_600


def main() -> None:
    started = datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    base = (int(started.timestamp()) + FILETIME_EPOCH) * 10_000_000
    adds, ios = [], []
    for disk, spec in enumerate(sys.argv[2:]):
        _, iolog, latlog = spec.split(":")
        lat = {}
        with open(latlog) as f:
            for line in f:
                _, ns, _, _, offset, _ = [x.strip() for x in line.split(",")]
                lat[int(offset)] = int(ns)
        with open(iolog) as f:
            lines = f.read().splitlines()
        assert lines[0] == "fio version 3 iolog", iolog
        for line in lines[1:]:
            t, name, action, *rest = line.split()
            if action in ("add", "open"):
                adds.append(f"0 {name} {action}")
            elif action in ("read", "write"):
                offset, length = int(rest[0]), int(rest[1])
                ios.append((int(t), disk, name, action, offset, length, lat[offset]))
    ios.sort(key=lambda x: (x[0], x[1]))
    with open("fio-2jobs.iolog", "w") as f:
        f.write("fio version 3 iolog\n")
        f.write("".join(a + "\n" for a in adds))
        for t, _, name, action, offset, length, _ in ios:
            f.write(f"{t} {name} {action} {offset} {length}\n")
    with open("fio-2jobs.msr.csv", "w") as f:
        for t, disk, _, action, offset, length, ns in ios:
            kind = "Write" if action == "write" else "Read"
            f.write(f"{base + t * 10},fio,{disk},{kind},{offset},{length},{round(ns / 100)}\n")


if __name__ == "__main__":
    main()
