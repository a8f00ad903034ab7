#!/usr/bin/env bash
# What fio 3.33 reports for a job that ends within its ramp_time, which
# both engines follow since 2026-11-29 (docs/FIO.md, the `ramp_time`
# row): fio resets a job's counts only when its ramp ends while the job
# runs (time.c ramp_time_over), and takes no latency sample before
# (io_u.c should_account). A job that ends by its size or count within
# its ramp keeps every request it made, over its whole runtime, with no
# latency sample (clat_ns N = 0). The model prints the same counts, `-`
# for its latencies, and a note saying why.
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint); writes
# a 1 MiB file in a temporary directory.
# Usage: bash docs/evidence/fio-ramp-end.sh
set -euo pipefail
cint=${CINT:-cint}
if [ -x "$cint" ]; then cint=$(realpath "$cint"); fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

for opts in "--size=1m --ramp_time=100ms" "--size=10m --number_ios=300 --ramp_time=100ms" \
            "--size=1m --ramp_time=0"; do
  # shellcheck disable=SC2086
  fio --name=j --ioengine=psync --direct=1 --rw=read --bs=4k --filename="$dir/f.dat" \
      --output-format=json $opts > fio.json
  # shellcheck disable=SC2086
  "$cint" sim --strategy none --json --fio-cmd fio --name=j --ioengine=psync --direct=1 \
      --rw=read --bs=4k --filename="$dir/f.dat" $opts > model.json 2> model.err
  python3 - "$opts" <<'PY'
import json, sys
fio = json.load(open("fio.json"))["jobs"][0]["read"]
model = json.load(open("model.json"))["results"][0]["jobs"][0]
print(f"{sys.argv[1]}: fio {fio['total_ios']} reads, {fio['clat_ns']['N']} latency samples, "
      f"runtime {fio['runtime']} ms; model {model['ios']} reads, "
      f"{model['lat_ns']['N']} latency samples")
PY
  rm -f "$dir/f.dat"
done
