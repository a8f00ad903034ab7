#!/usr/bin/env bash
# How fio 3.33 paces rate caps, side by side with the model
# (docs/FIO.md, the rate rows; docs/results/fio-fidelity.md, "Rate caps"):
#  1. rate_iops over a split of sizes counts bytes at the smallest size
#     (backend.c usec_for_io: rate_bps = rate_iops x min_bs);
#  2. under rate_process=poisson a request moves the schedule by one
#     smallest request's share whatever its size, under rate and
#     rate_iops alike;
#  3. a job that reads and writes paces each direction on its own and
#     issues the one behind (io_u.c rate_ddir): a single value caps each
#     direction, and an empty side leaves that direction free;
#  4. a floor (rate_iops_min) ends a thread that falls under it, from 2 s
#     after its start (backend.c __check_min_rate), with error 5 (EIO)
#     (a think time of 2 ms holds fio's null engine near 480 a second);
#  5. a job without a runtime that ends by its size runs to its end.
# fio runs 1 s with ioengine=null (no device, so a free direction goes as
# fast as fio's loop); the model runs libaio at depth 8 on the p3700, so
# there a free direction goes at the device's pace.
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint).
# Usage: bash docs/evidence/fio-rate-caps.sh
set -euo pipefail
cint=${CINT:-cint}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

counts='import json, sys
text = open(sys.argv[1]).read()  # fio may write its error lines first
j = json.loads(text[text.index("{"):])["jobs"][0]
r, w = j["read"], j["write"]
print("reads", r["total_ios"], r["io_bytes"], "writes", w["total_ios"], w["io_bytes"],
      "error", j["error"], "runtime_ms", j["job_runtime"])'

side_by_side() { # the job's options, one per line; the run's (default: 1 s, time based)
    local run=${2:-'size=1g\nruntime=1\ntime_based'}
    printf '[a]\nioengine=null\n%b\n%b\n' "$run" "$1" > f.fio
    # A job that fails (a floor missed) exits non-zero; its JSON is written.
    fio --output-format=json --output=f.json f.fio || true
    printf '[a]\nioengine=libaio\ndirect=1\niodepth=8\n%b\n%b\n' "$run" "$1" > m.fio
    rm -rf m
    "$cint" sim --fio m.fio --device p3700 --strategy none --fio-json m >/dev/null
    echo "-- $(echo -e "$1" | tr '\n' ' ')"
    echo "   fio:   $(python3 -c "$counts" f.json)"
    echo "   model: $(python3 -c "$counts" m/none.json)"
}

echo "== 1. rate_iops over a split of sizes"
side_by_side 'rw=randread\nbssplit=4k/50:64k/50\nnorandommap\nrate_iops=1000'
echo "== 2. the Poisson process counts requests"
side_by_side 'rw=randread\nbssplit=4k/50:64k/50\nnorandommap\nrate_iops=1000\nrate_process=poisson'
side_by_side 'rw=randread\nbssplit=4k/50:64k/50\nnorandommap\nrate=4m\nrate_process=poisson'
echo "== 3. caps per direction on a mix"
for cap in 'rwmixread=70\nrate_iops=1000' 'rwmixread=70\nrate_iops=1000,300' \
    'rwmixread=90\nrate_iops=2000,100' 'rwmixread=70\nrate_iops=1000,' \
    'rwmixread=70\nrate_iops=,500'; do
    side_by_side "rw=randrw\n$cap"
done
echo "== 4. a floor"
side_by_side 'rw=randread\niodepth=1\nthinktime=2ms\nrate_iops_min=1000' 'size=1g\nruntime=5\ntime_based'
side_by_side 'rw=randread\niodepth=1\nthinktime=2ms\nrate_iops_min=480' 'size=1g\nruntime=5\ntime_based'
echo "== 5. no runtime: to the job's end"
side_by_side 'rw=read' 'size=64m'
side_by_side 'rw=read\nrate_iops=1000' 'size=2m'
