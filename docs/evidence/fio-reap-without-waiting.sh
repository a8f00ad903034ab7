#!/bin/sh
# fio's iodepth_batch_complete_min=0: its engines' reap calls pass a least
# of 0 and return at once, and fio calls again until an event is in
# (engines/libaio.c `fio_libaio_getevents`); with
# iodepth_batch_complete_max=0 as well, fio's loop reaps after every
# submission (backend.c `io_in_polling`), so a queue of 16 keeps one
# request in flight. Direct random reads at depth 16 under libaio: fio's
# "IO depths" (the depth at each submission, in fio's buckets) and the
# mean number out by Little's law (IOPS times the mean latency), then the
# model's mean out for the same command line (cint sim, P4800X). Needs
# fio (3.33 on the reference machine), python3 and cint on PATH (or CINT);
# writes and removes a 16 MiB file in $DIR (default /tmp).
#
# 2026-11-30, the reference machine (ext4 on a virtual disk; fio's depth
# buckets 1, 2, 4 = 4-7, 8 = 8-15, 16 = 16-31; fio's mean out moves by a
# few tenths from run to run):
#   fio   min=1 max=1 depths 1:0.1 2:0.1 4:0.1 8:0.2 16:99.6 mean_out 15.9
#   fio   min=0 max=0 depths 1:100.0 mean_out 1.0
#   fio   min=0 max=16 depths 1:6.2 2:12.5 4:25.0 8:50.0 16:6.2 mean_out 12.4
#   model min=1 max=1 mean_out 15.9
#   model min=0 max=0 mean_out 1.0
#   model min=0 max=16 mean_out 9.4
set -eu
dir=${DIR:-/tmp}
cint=${CINT:-cint}
f="$dir/cint-reap-without-waiting.dat"
opts="--name=r --rw=randread --bs=4k --size=16m --direct=1 --ioengine=libaio --iodepth=16"
for mm in "1 1" "0 0" "0 16"; do
    set -- $mm
    fio --filename="$f" $opts --iodepth_batch_complete_min=$1 --iodepth_batch_complete_max=$2 \
        --output-format=json | python3 -c "import json, sys
j = json.load(sys.stdin)['jobs'][0]
r = j['read']
levels = ' '.join(f'{k}:{v:.1f}' for k, v in j['iodepth_level'].items() if v >= 0.05)
print('fio   min=$1 max=$2', 'depths', levels, 'mean_out %.1f' % (r['iops'] * r['lat_ns']['mean'] / 1e9))"
done
rm -f "$f"
for mm in "1 1" "0 0" "0 16"; do
    set -- $mm
    "$cint" sim --json --strategy none --fio-cmd fio $opts \
        --iodepth_batch_complete_min=$1 --iodepth_batch_complete_max=$2 |
        python3 -c "import json, sys
j = json.load(sys.stdin)['results'][0]['jobs'][0]
print('model min=$1 max=$2', 'mean_out %.1f' % (j['iops'] * j['lat_ns']['mean'] / 1e9))"
done
