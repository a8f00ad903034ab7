#!/usr/bin/env bash
# How fio 3.33 sizes and places random requests, side by side with the
# model (docs/FIO.md, "Offsets", and the bssplit and bsrange rows):
#  1. sizes without the random map (norandommap, 100 000 requests each):
#     bsrange=4k-10k draws 4 KiB and 8 KiB 40% each and 10 KiB 20%;
#     bssplit=4k/50:12k/30:14k/20 issues 4 KiB and 12 KiB only (sizes
#     rounded down to a multiple of the smallest); bssplit=6k/100:4k
#     issues 4 KiB only;
#  2. the random map (fio's default) with bssplit=4k/50:64k/50 over a
#     64 MiB file: the requests that cover it once (five runs, a different
#     seed each), and the mean size when time-based (the map starts again
#     each time the file is covered);
#  3. the model's figures for the same jobs (cint sim --fio, seeds 1-5).
# fio runs with ioengine=null (no device) and write_iolog, whose lines
# give each request's offset and size.
# Needs fio and python3, and cint on PATH (or CINT=path/to/cint).
# Usage: bash docs/evidence/fio-sizes-and-random-map.sh
set -euo pipefail
cint=${CINT:-cint}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

sizes() { # iolog -> "count size" lines
    awk '$3=="read"{print $5}' "$1" | sort -n | uniq -c
}

echo "== 1. sizes without the map (norandommap)"
# fio appends to an existing log: each run writes a new one.
for opt in "bsrange=4k-10k" "bssplit=4k/50:12k/30:14k/20" "bssplit=6k/100:4k"; do
    rm -f s.log
    fio --name=s --ioengine=null --rw=randread --size=64g --norandommap \
        --number_ios=100000 --"$opt" --write_iolog=s.log --output=/dev/null
    echo "-- fio $opt"
    sizes s.log
done

echo "== 2. fio's random map, bssplit=4k/50:64k/50, size=64m"
for i in 1 2 3 4 5; do
    rm -f m.log
    fio --name=m --ioengine=null --rw=randread --size=64m \
        --bssplit=4k/50:64k/50 --randrepeat=0 --write_iolog=m.log --output=/dev/null
    awk '$3=="read"{n++; b+=$5} END{printf "run %d: %d requests, %.1f KiB each\n", '"$i"', n, b/n/1024}' m.log
done
fio --name=t --ioengine=null --rw=randread --size=64m --bssplit=4k/50:64k/50 \
    --time_based --runtime=2 --write_iolog=t.log --output=/dev/null
awk '$3=="read"{n++; b+=$5} END{printf "time-based: %d requests, %.1f KiB each\n", n, b/n/1024}' t.log

echo "== 3. the model"
printf '[m]\ndirect=1\nioengine=libaio\niodepth=4\nrw=randread\nsize=64m\nbssplit=4k/50:64k/50\n' > m.fio
printf '[t]\ndirect=1\nioengine=libaio\niodepth=4\nrw=randread\nsize=64m\nbssplit=4k/50:64k/50\ntime_based\nruntime=300ms\n' > t.fio
mean='import json,sys; j=json.load(sys.stdin)["results"][0]["jobs"][0]; print(j["ios"], "requests,", round(j["bw_bytes"]/j["iops"]/1024, 1), "KiB each")'
for seed in 1 2 3 4 5; do
    printf 'seed %d: ' "$seed"
    "$cint" sim --fio m.fio --strategy none --set seed="$seed" --json 2>/dev/null | python3 -c "$mean"
done
printf 'time-based: '
"$cint" sim --fio t.fio --strategy none --json 2>/dev/null | python3 -c "$mean"
