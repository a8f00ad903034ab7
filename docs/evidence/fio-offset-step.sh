#!/usr/bin/env bash
# How many requests fio 3.33 makes on a sequential pattern with an offset
# step (`rw=read:8k`, a hole after each request) when the job ends by its
# size (docs/FIO.md, the `rw` row): io_u.c get_next_seq_offset takes the
# k-th request at k x (bs + step) while it fits; the job ends where one
# ends at the file's end or where the next does not fit, and wraps to
# the file's start where the next offset is past the end, running until
# its size is issued. Each line: fio's count, then the model's.
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint); writes
# a 1 MiB file in a temporary directory.
# Usage: bash docs/evidence/fio-offset-step.sh
set -euo pipefail
cint=${CINT:-cint}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count='import json, sys
d = json.load(sys.stdin)
jobs = d["jobs"] if "jobs" in d else d["results"][0]["jobs"]
print(sum(j["ios"] if "ios" in j else j["read"]["total_ios"] + j["write"]["total_ios"] for j in jobs))'
for opts in "--rw=read:8k --bs=4k --size=1m" "--rw=write:8k --bs=4k --size=1m" \
    "--rw=read:8k --bs=4k --size=1m --loops=2" "--rw=read:4k --bs=4k --size=1m" \
    "--rw=read:12k --bs=4k --size=1m" "--rw=write:100k --bs=4k --size=1m" \
    "--rw=read:4k --bs=8k --size=1m" "--rw=read:3k --bs=4k --size=1000k"; do
  rm -f "$dir/f.dat"
  # shellcheck disable=SC2086
  fio_n=$(fio --name=j --ioengine=psync --direct=1 --filename="$dir/f.dat" $opts \
    --output-format=json 2>/dev/null | python3 -c "$count")
  # shellcheck disable=SC2086
  model_n=$("$cint" sim --strategy none --json --fio-cmd fio --name=j --ioengine=psync \
    --direct=1 $opts 2>/dev/null | python3 -c "$count")
  echo "$opts: fio $fio_n, model $model_n"
done
