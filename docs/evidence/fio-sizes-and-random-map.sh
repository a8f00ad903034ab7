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
#  3. the model's figures for the same jobs (cint sim --fio, seeds 1-5);
#  4. random_distribution: the distinct blocks 5000 reads touch (fio's
#     iolog; the model's page-cache misses in a cache that holds the file);
#  5. fsync and fdatasync calls: fio's iolog and the model's --fio-json.
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

echo "== 4. random_distribution: distinct blocks in 5000 buffered 4 KiB reads of 64 MiB"
for d in zipf:1.2 zipf:0.8 pareto:0.2 normal normal:5 zoned:60/10:30/20:10/70 zoned_abs:60/4m:40/60m; do
    rm -f d.log
    fio --name=d --ioengine=null --rw=randread --size=64m --io_size=20000k \
        --random_distribution="$d" --write_iolog=d.log --output=/dev/null
    f=$(awk '$3=="read"{print $4}' d.log | sort -u | wc -l)
    m=""
    for seed in 1 2 3; do
        printf 'name="d"\nseed=%d\nduration="200ms"\n[host.page_cache]\nmemory="1GiB"\n[[job]]\nname="r"\nengine="psync"\ndirect=false\nrw="randread"\nsize="64MiB"\nio_size="20000KiB"\nrandom_distribution="%s"\n[[strategy]]\nname="n"\nkind="none"\n' "$seed" "$d" > d.toml
        # Each distinct page misses once in a cache that holds the file.
        m="$m $("$cint" sim d.toml --json 2>/dev/null | python3 -c 'import json,re,sys; d=json.load(sys.stdin); n=[x for x in d["results"][0].get("notes", d.get("notes", [])) if "page cache over" in x][0]; print(re.search(r"(\d+) read-ahead requests", n).group(1))')"
    done
    echo "$d: fio $f, model$m"
done

echo "== 5. fsync and fdatasync calls (fio's iolog; the model's --fio-json)"
sync_job() { # name, options: fio's iolog counts, then the model's
    rm -f y.log
    fio --name=y --ioengine=null $2 --write_iolog=y.log --output=/dev/null
    printf '[y]\nioengine=libaio\ndirect=1\n%s\n' "$(echo "$2" | tr ' ' '\n' | sed 's/^--//')" > y.fio
    rm -rf yj
    "$cint" sim --fio y.fio --strategy none --fio-json yj >/dev/null 2>&1
    model=$(python3 -c 'import json,glob; j=json.load(open(glob.glob("yj/*.json")[0]))["jobs"][0]; print(j["write"]["total_ios"], "writes,", j["sync"]["total_ios"], "fsync,", j["sync"]["lat_ns"]["N"], "calls")')
    echo "$1: fio $(grep -c ' write ' y.log) writes, $(grep -c ' sync ' y.log) fsync, $(grep -c ' datasync ' y.log) fdatasync; model $model"
}
sync_job "fsync=3, 70/30 randrw" "--rw=randrw --rwmixread=70 --size=64m --number_ios=3000 --fsync=3"
sync_job "fsync=4 fdatasync=2" "--rw=write --size=1m --fsync=4 --fdatasync=2"
