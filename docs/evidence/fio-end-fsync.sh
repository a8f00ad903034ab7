#!/bin/sh
# fio's end_fsync counts in the job's runtime: the same buffered
# sequential writes with and without it, fio's write runtime and
# bandwidth from its JSON. Needs fio (3.33 on the reference machine) and
# python3; writes and removes a 256 MiB file in $DIR (default /tmp).
#
# 2026-11-30, the reference machine (ext4 on a virtual disk):
#   end_fsync=0 runtime_ms 38 bw_KiBs 6898526
#   end_fsync=1 runtime_ms 98 bw_KiBs 2674938
set -eu
dir=${DIR:-/tmp}
f="$dir/cint-end-fsync.dat"
for e in 0 1; do
    rm -f "$f"
    fio --name=efs --filename="$f" --rw=write --bs=64k --size=256m \
        --end_fsync=$e --output-format=json |
        python3 -c "import json, sys
w = json.load(sys.stdin)['jobs'][0]['write']
print('end_fsync=$e', 'runtime_ms', w['runtime'], 'bw_KiBs', w['bw'])"
done
rm -f "$f"
