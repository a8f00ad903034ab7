#!/usr/bin/env bash
# io_uring's SQ-polled ring under real fio (docs/HOST-COSTS.md, "io_uring's
# SQ thread"; crates/sim/src/workload/sqpoll.rs): the same 4 KiB random
# O_DIRECT reads at depth 1 from a thread pinned to CPU 0, submitted
# (1) through io_uring_enter, (2) by an SQ thread with no
# sqthread_poll_cpu, which Linux 5.11 and later create with the
# submitter's CPU mask, so on CPU 0 beside it, and (3) by an SQ thread on
# CPU 1. What the model predicts and this shows: with an SQ thread fio
# makes no system call (sys CPU near 0) and spins in user space (usr CPU
# up); beside its submitter the SQ thread and fio wait for each other's
# time slices (milliseconds per request).
#
#   bash docs/evidence/fio-sqpoll.sh [FILE]    (needs fio, 2 CPUs)
set -euo pipefail
file=${1:-/tmp/cint-sqpoll.img}
[ -f "$file" ] || dd if=/dev/urandom of="$file" bs=1M count=256 status=none
for mode in enter sq-same-cpu sq-cpu-1; do
    case $mode in
        enter) extra=() ;;
        sq-same-cpu) extra=(--sqthread_poll=1) ;;
        sq-cpu-1) extra=(--sqthread_poll=1 --sqthread_poll_cpu=1) ;;
    esac
    fio --name=r --filename="$file" --ioengine=io_uring --direct=1 --rw=randread \
        --bs=4k --iodepth=1 --cpus_allowed=0 --runtime=3 --time_based \
        "${extra[@]}" --output-format=json 2>/dev/null | python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]
r = j['read']
print('%-12s %8.0f IOPS  mean %9.1f us  usr %5.1f%%  sys %5.1f%%  ctx %d' % (
    '$mode', r['iops'], r['lat_ns']['mean'] / 1000, j['usr_cpu'], j['sys_cpu'], j['ctx']))"
done
