#!/usr/bin/env bash
# Runs each job given (fio options after a psync, O_DIRECT job on a
# fresh file) in fio and in the model (`cint sim --strategy none`), and
# prints what each counted: requests (`total_ios`) and their bytes
# (`io_bytes`, which fio counts apart: they can differ by a request
# around a ramp's end), fio's `total_ios` of its sync section (its
# fsyncs), and latency samples, of requests and of sync calls (fsync and
# fdatasync alike). For the counts that do not
# depend on the device's speed (a job that ends by its size or count).
# Cited by docs/FIO.md and docs/results/fio-fidelity.md with the jobs
# that show each rule, for example:
#   bash docs/evidence/fio-beside-model.sh "--rw=read --bs=4k --size=1m --ramp_time=100ms"
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint); writes
# each job's file in a temporary directory.
set -euo pipefail
cint=${CINT:-cint}
if [ -x "$cint" ]; then cint=$(realpath "$cint"); fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

for opts in "$@"; do
  # shellcheck disable=SC2086
  fio --name=j --ioengine=psync --direct=1 --filename="$dir/f.dat" \
      --output-format=json $opts > fio.json
  # shellcheck disable=SC2086
  "$cint" sim --strategy none --json --fio-json "$dir/model" --fio-cmd fio --name=j \
      --ioengine=psync --direct=1 --filename="$dir/f.dat" $opts > /dev/null 2> model.err \
      || { cat model.err >&2; exit 1; }
  python3 - "$opts" <<'PY'
import json, sys
def counts(path):
    jobs = json.load(open(path))["jobs"]
    ios = sum(j[d]["total_ios"] for j in jobs for d in ("read", "write"))
    moved = sum(j[d]["io_bytes"] for j in jobs for d in ("read", "write"))
    syncs = sum(j["sync"]["total_ios"] for j in jobs)
    timed = sum(j["sync"]["lat_ns"]["N"] for j in jobs)
    samples = sum(j[d]["lat_ns"]["N"] for j in jobs for d in ("read", "write"))
    return (f"{ios} requests ({moved} bytes), {syncs} fsyncs, {samples} latency samples, "
            f"{timed} sync latency samples (fsync and fdatasync)")
print(f"{sys.argv[1]}\n  fio 3.33: {counts('fio.json')}\n  model:    {counts('model/none.json')}")
PY
  rm -rf "$dir/f.dat" "$dir/model"
done
