#!/bin/sh
# fio's max_latency: the first completion, counted after the ramp, whose
# total latency is above the bound ends the thread with ETIMEDOUT (io_u.c
# `account_io_completion`, `lat_fatal`); fio then reaps what is still in
# flight, which counts, and the job's JSON carries error 110. The same
# direct random reads under psync and under libaio at depth 4, with a
# bound no request meets (1us) and one every request meets (10s): fio's
# error and reads, then the model's (cint sim, P4800X) for the same
# command line. Needs fio (3.33 on the reference machine), python3 and
# cint on PATH (or CINT); writes and removes a 16 MiB file in $DIR
# (default /tmp).
#
# 2026-11-30, the reference machine (ext4 on a virtual disk):
#   fio   psync  max_latency=1us  error 110 reads 1
#   fio   psync  max_latency=10s  error 0 reads 4096
#   fio   libaio max_latency=1us  error 110 reads 4
#   fio   libaio max_latency=10s  error 0 reads 4096
#   model psync  max_latency=1us  error 110 reads 1
#   model psync  max_latency=10s  error 0 reads 4096
#   model libaio max_latency=1us  error 110 reads 4
#   model libaio max_latency=10s  error 0 reads 4096
set -eu
dir=${DIR:-/tmp}
cint=${CINT:-cint}
f="$dir/cint-max-latency.dat"
out=$(mktemp -d)
read_json='import json, sys
j = json.load(sys.stdin)["jobs"][0]
print("error", j["error"], "reads", j["read"]["total_ios"])'
for who in fio model; do
    for engine in psync libaio; do
        for bound in 1us 10s; do
            opts="--name=ml --rw=randread --bs=4k --size=16m --direct=1 --ioengine=$engine \
                --iodepth=4 --max_latency=$bound"
            if [ $who = fio ]; then
                # fio prints the job's error on stdout before its JSON.
                got=$(fio --filename="$f" $opts --output-format=json 2>/dev/null |
                    sed -n '/^{/,$p' | python3 -c "$read_json")
            else
                rm -f "$out"/*.json
                "$cint" sim --strategy none --fio-json "$out" --fio-cmd fio $opts >/dev/null 2>&1
                got=$(cat "$out"/*.json | python3 -c "$read_json")
            fi
            printf '%-5s %-6s max_latency=%-4s %s\n' $who $engine $bound "$got"
        done
    done
done
rm -rf "$out" "$f"
