#!/usr/bin/env bash
# fio 3.33 caps a job's size at its file's (filesetup.c setup_files:
# `if (!o->size || (total_size && o->size > total_size)) o->size =
# total_size`), where total_size is the file's `filesize`, and takes a
# `size=N%` share of the file (its `size_percent`, cut to whole blocks).
# The fio import does the same since 2026-11-29 (docs/FIO.md, `size`):
# it used to read `size=1m filesize=512k` as 1 MiB of reads, twice fio's.
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint); writes
# files of up to 1 MiB in a temporary directory.
# Usage: bash docs/evidence/fio-filesize.sh
set -euo pipefail
cint=${CINT:-cint}
if [ -x "$cint" ]; then cint=$(realpath "$cint"); fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

for opts in "--size=1m --filesize=512k" "--size=1m --filesize=512k --loops=2" \
            "--size=30% --filesize=100k" "--size=512k --filesize=1m"; do
  # shellcheck disable=SC2086
  fio --name=j --ioengine=psync --direct=1 --rw=read --bs=4k --filename="$dir/f.dat" \
      --output-format=json $opts > fio.json
  # shellcheck disable=SC2086
  "$cint" sim --strategy none --json --fio-cmd fio --name=j --ioengine=psync --direct=1 \
      --rw=read --bs=4k --filename="$dir/f.dat" $opts > model.json 2> model.err
  python3 - "$opts" <<'PY'
import json, sys
fio = json.load(open("fio.json"))["jobs"][0]["read"]["total_ios"]
model = json.load(open("model.json"))["results"][0]["jobs"][0]["ios"]
print(f"{sys.argv[1]}: fio {fio} reads, model {model}")
PY
  rm -f "$dir/f.dat"
done
