#!/usr/bin/env bash
# What fio 3.33 reports for a latency target missed at depth 1 and for a
# steady state, side by side with the model's --fio-json (docs/FIO.md, the
# latency_target and ss rows):
#  1. latency_target at latency_percentile=100: a request over the target
#     at depth 1 ends the job (io_u.c lat_fatal) with error 110
#     (ETIMEDOUT, "max latency exceeded"), here after one read;
#  2. ss: the job's JSON has a `steadystate` object (stat.c
#     show_thread_status_json): `ss` as fio prints the rule, `duration`,
#     `attained`, `criterion`, `max_deviation`, `slope`, and `data` with
#     the window's `iops` and `bw` samples and their means. fio's helper
#     thread samples once a second on its own clock, so fio attains a
#     little before the model, which samples whole seconds from the job's
#     start (2026-11-29, this project's VM: fio 1.83 and 1.89 s in two runs,
#     the model 2 s).
# fio runs on a 16 MiB file in the temporary directory; the model on its
# default device. Needs fio and python3, and cint on PATH (or
# CINT=path/to/cint).
# Usage: bash docs/evidence/fio-latency-target-and-steadystate.sh
set -euo pipefail
cint=${CINT:-cint}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

show='import json, sys
text = open(sys.argv[1]).read()  # fio may write its error lines first
j = json.loads(text[text.index("{"):])["jobs"][0]
ss = j.get("steadystate")
print("error", j["error"], "reads", j["read"]["total_ios"], "runtime_ms", j["job_runtime"])
if ss:
    print("steadystate", json.dumps({k: ss[k] for k in ("ss", "duration", "attained", "criterion")}),
          "data keys", sorted(ss["data"]), "samples", len(ss["data"]["iops"]))'

side_by_side() { # a label, then fio's options
    local label=$1
    shift
    fio --output-format=json --output=f.json --name=a --filename=f.img --size=16m \
        --direct=1 --rw=randread --ioengine=libaio "$@" || true
    rm -rf m
    "$cint" sim --fio-json m --fio-cmd fio --name=a --filename=f.img --size=16m \
        --direct=1 --rw=randread --ioengine=libaio "$@" > /dev/null
    echo "== $label"
    echo -n "fio:   "
    python3 -c "$show" f.json
    echo -n "model: "
    python3 -c "$show" m/none.json
}

side_by_side "a 1 us target at p100, depth 8" \
    --iodepth=8 --latency_target=1 --latency_percentile=100 --runtime=1 --time_based
side_by_side "ss=iops:50% over 2 s, 5 s run" \
    --iodepth=4 --ss=iops:50% --ss_dur=2 --runtime=5 --time_based
