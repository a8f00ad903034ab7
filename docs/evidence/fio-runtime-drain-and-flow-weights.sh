#!/usr/bin/env bash
# Two things fio 3.33 does that the model follows since 2026-11-29
# (docs/FIO.md, the `runtime` and `flow` rows):
#  1. at a job's runtime its thread stops issuing, then reaps what it has
#     in flight (backend.c cleanup_pending_aio) and counts it: the
#     requests its JSON counts (read.total_ios) equal those it issued
#     ("issued rwts" of its normal output), and its runtime (job_runtime,
#     whole milliseconds) includes the drain;
#  2. every job's flow weight counts from the run's setup (init.c
#     add_job, flow_init_job), so a stonewalled job of the same flow_id
#     holds the jobs before it: flow=1 in the first group beside flow=8
#     in the second issues one request in its second.
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint); writes
# a 64 MiB file in a temporary directory.
# Usage: bash docs/evidence/fio-runtime-drain-and-flow-weights.sh
set -euo pipefail
cint=${CINT:-cint}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

cat > drain.fio <<EOF
[r]
ioengine=libaio
direct=1
iodepth=32
rw=randread
bs=4k
size=64m
filename=$dir/drain.dat
runtime=300ms
time_based
EOF
fio --output-format=json,normal drain.fio > drain.out
counted=$(grep -o '"total_ios" : [0-9]*' drain.out | head -1 | grep -o '[0-9]*$')
issued=$(grep -o 'issued rwts: total=[0-9]*' drain.out | grep -o '[0-9]*$')
runtime=$(grep -o '"job_runtime" : [0-9]*' drain.out | head -1 | grep -o '[0-9]*$')
echo "1. fio at its runtime: counted $counted of $issued issued, runtime $runtime ms (asked 300)"

cat > flow.fio <<EOF
[global]
ioengine=psync
direct=1
size=64m
filename=$dir/flow.dat
bs=4k
rw=randread
time_based
runtime=1
flow_id=1
flow_sleep=100

[a]
flow=1

[b]
stonewall
flow=8
EOF
fio --output-format=json flow.fio > flow.json
python3 - flow.json <<'EOF'
import json, sys
for j in json.load(open(sys.argv[1]))["jobs"]:
    print(f"2. fio, job {j['jobname']}: {j['read']['total_ios']} requests in {j['job_runtime']} ms")
EOF
"$cint" sim --fio flow.fio --strategy none --json 2>/dev/null > model.json
python3 - model.json <<'EOF'
import json, sys
for j in json.load(open(sys.argv[1]))["results"][0]["jobs"]:
    print(f"2. model, job {j['name']}: {j['ios']} requests")
EOF
