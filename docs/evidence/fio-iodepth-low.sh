#!/bin/sh
# fio's iodepth_low: once the queue is full, fio reaps until at most
# iodepth_low requests are out before it submits again (backend.c
# `wait_for_completions`). The same direct random reads at depth 16 with
# marks of 16 (fio's default), 4 and 1: fio's "IO depths" (the depth at
# each submission, in fio's buckets 1, 2, 4 = 4-7, 8 = 8-15, 16 = 16-31:
# with a mark of 4 fio submits at depths 5 to 16 in turn, 3, 8 and 1 of
# each 12) and the mean number out by Little's law (IOPS times the mean
# latency); then the model's mean number out for the same command line
# (cint sim) on the P4800X, whose 3 units queue the requests so that they
# complete spread out, and on a device of 16 units at a fixed 200 us,
# where the requests submitted together complete together. How far the
# number out falls depends on that: where a refill completes together,
# a mark of 1 keeps more out than a mark of 4 (15 requests a refill
# against 12), in fio on this machine's disk as in the model. Needs fio
# (3.33 on the reference machine), python3 and cint on PATH (or CINT);
# writes and removes a 64 MiB file in $DIR (default /tmp).
#
# Then the syncs of 4 KiB direct writes over 1 MiB under libaio at depth
# 16, in batches of 8, reaping at least 8, with fsync=3: a sync due
# within a batch ends it (docs/FIO.md), and batches that fill from fewer
# out end at a sync less often. fio's and the model's counts of fsync
# calls, at each mark.
#
# 2026-11-30, the reference machine (ext4 on a virtual disk):
#   fio   iodepth_low=16 depths 1:0.1 2:0.1 4:0.1 8:0.1 16:99.9 mean_out 15.9
#   fio   iodepth_low=4  depths 1:0.1 2:0.1 4:25.0 8:66.7 16:8.3 mean_out 11.1
#   fio   iodepth_low=1  depths 1:0.1 2:13.3 4:26.7 8:53.3 16:6.7 mean_out 12.4
#   model p4800x       iodepth_low=16 mean_out 15.9
#   model p4800x       iodepth_low=4  mean_out 10.7
#   model p4800x       iodepth_low=1  mean_out 9.3
#   model 16 x 200us   iodepth_low=16 mean_out 15.9
#   model 16 x 200us   iodepth_low=4  mean_out 11.3
#   model 16 x 200us   iodepth_low=1  mean_out 13.1
#   syncs iodepth_low=16 fio 21 model 21
#   syncs iodepth_low=4  fio 15 model 15
#   syncs iodepth_low=1  fio 15 model 15
set -eu
dir=${DIR:-/tmp}
cint=${CINT:-cint}
f="$dir/cint-iodepth-low.dat"
opts="--ioengine=libaio --direct=1 --rw=randread --bs=4k --size=64m --iodepth=16"
rm -f "$f"
for low in 16 4 1; do
    fio --name=low --filename="$f" $opts --iodepth_low=$low --output-format=json |
        python3 -c "import json, sys
j = json.load(sys.stdin)['jobs'][0]
r = j['read']
levels = ' '.join(f'{k}:{v:.1f}' for k, v in j['iodepth_level'].items() if k in ('1', '2', '4', '8', '16'))
print('fio   iodepth_low=%-2s' % $low, 'depths', levels, 'mean_out %.1f' % (r['iops'] * r['lat_ns']['mean'] / 1e9))"
done
rm -f "$f"
fixed="--set device.parallel_units=16 --set device.jitter=none --set device.read.base=200us"
for device in p4800x fixed; do
    for low in 16 4 1; do
        if [ $device = fixed ]; then set -- $fixed; label="16 x 200us"; else set --; label=p4800x; fi
        "$cint" sim --json --strategy none "$@" --fio-cmd fio --name=low $opts --iodepth_low=$low |
            python3 -c "import json, sys
j = json.load(sys.stdin)['results'][0]['jobs'][0]
print('model %-12s' % '$label', 'iodepth_low=%-2s' % $low, 'mean_out %.1f' % (j['iops'] * j['lat_ns']['mean'] / 1e9))"
    done
done
syncs="--rw=write --bs=4k --ioengine=libaio --direct=1 --size=1m --iodepth=16 \
    --iodepth_batch=8 --iodepth_batch_complete_min=8 --fsync=3"
out=$(mktemp -d)
for low in 16 4 1; do
    n_fio=$(fio --name=syncs --filename="$f" $syncs --iodepth_low=$low --output-format=json |
        python3 -c "import json, sys; print(json.load(sys.stdin)['jobs'][0]['sync']['total_ios'])")
    rm -f "$f" "$out"/*.json
    "$cint" sim --strategy none --fio-json "$out" --fio-cmd fio --name=syncs $syncs \
        --iodepth_low=$low >/dev/null 2>&1
    n_model=$(python3 -c "import glob, json
print(json.load(open(glob.glob('$out/*.json')[0]))['jobs'][0]['sync']['total_ios'])")
    echo "syncs iodepth_low=$(printf %-2s $low) fio $n_fio model $n_model"
done
rm -rf "$out"
