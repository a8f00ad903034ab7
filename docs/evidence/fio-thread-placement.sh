#!/usr/bin/env bash
# Where Linux runs fio's threads when the job has no cpus_allowed
# (docs/FIO.md, "Threads without cpus_allowed"): fio forks NUMJOBS job
# processes, each placed by the kernel's fork balancing on the idlest CPU
# (wake_up_new_task, SD_BALANCE_FORK) and kept there by the wake-up path
# while that CPU is idle. The fio import puts them one per CPU of the
# host, then in turn. This samples each job process's CPU (field 39 of
# /proc/PID/stat) every 10 ms for two seconds, under fio's null engine
# (each thread busy all the time) and under psync reads of a file (each
# thread sleeping on every read), and prints, per job process, the CPU it
# was seen on most and the share of samples there.
#
# On the build machine (2 CPUs, 2026-11-28): the null engine's two job
# processes ran on CPUs 0 and 1 (57% and 61% of samples: the fork
# placement, moved now and then by load balancing); with four, one on
# CPU 0 and three on CPU 1. The psync readers gathered on CPU 1 (61-67%)
# however many: a woken thread goes to the CPU that woke it when that CPU
# shares its cache (`wake_affine`), and this VM's disk is virtio-blk with
# one request queue, whose interrupt is on CPU 1 (/proc/interrupts,
# `virtio1-req.0`). An NVMe drive has a queue per CPU and interrupts the
# CPU that submitted, so there the waker is the thread's own CPU and the
# fork placement stands; the model is of such a drive.
#
#   bash docs/evidence/fio-thread-placement.sh [NUMJOBS] [FILE]
#       (needs fio; NUMJOBS defaults to the machine's CPUs)
set -euo pipefail
jobs=${1:-$(nproc)}
file=${2:-/tmp/cint-placement.img}
[ -f "$file" ] || dd if=/dev/urandom of="$file" bs=1M count=256 status=none
sample() {
    local label=$1
    shift
    fio --name=p --numjobs="$jobs" --runtime=3 --time_based "$@" \
        --output=/dev/null >/dev/null 2>&1 &
    local parent=$!
    sleep 0.5
    # The job processes are the parent's children.
    local pids
    pids=$(pgrep -P "$parent" | tr "\n" " " || true)
    for _ in $(seq 200); do
        for p in $pids; do
            awk -v p="$p" '{print p, $39}' "/proc/$p/stat" 2>/dev/null || true
        done
        sleep 0.01
    done | python3 -c "
import collections, sys
seen = collections.defaultdict(collections.Counter)
for line in sys.stdin:
    pid, cpu = line.split()
    seen[pid][int(cpu)] += 1
for pid, cpus in sorted(seen.items()):
    cpu, n = cpus.most_common(1)[0]
    print('%-6s job process %-8s on CPU %d in %3.0f%% of samples' % (
        '$label', pid, cpu, 100 * n / sum(cpus.values())))
"
    wait "$parent"
}
sample null --ioengine=null --size=1g --rw=randread --bs=4k
sample psync --ioengine=psync --direct=1 --rw=randread --bs=4k --filename="$file"
