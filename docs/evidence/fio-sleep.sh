#!/usr/bin/env bash
# fio's own sleep (fio 3.33, time.c usec_sleep) on the machine at hand:
#  1. fio's granularity, measured as fio_time_init measures it: the
#     longest of ten nanosleep() calls of 1 us (printed five times: fio
#     measures it once per run, so the threshold varies between runs);
#  2. fio with the null engine (no device, requests complete at once)
#     and a think time after every request, below and above it: a think
#     time under the granularity is a spin (user CPU near 100%, no context
#     switch), one over it a nanosleep (one context switch per request,
#     little CPU). docs/FIO.md, "Sleeps", gives the figures.
# Needs gcc, fio and python3. Usage: bash docs/evidence/fio-sleep.sh
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/gran.c" <<'C'
#include <stdio.h>
#include <time.h>
/* fio_time_init: the longest of ten nanosleep()s of 1 us, in us. */
int main(void) {
    long long worst = 0;
    for (int i = 0; i < 10; i++) {
        struct timespec a, b, req = {0, 1000};
        clock_gettime(CLOCK_MONOTONIC, &a);
        nanosleep(&req, NULL);
        clock_gettime(CLOCK_MONOTONIC, &b);
        long long us = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
        if (us > worst) worst = us;
    }
    printf("%lld\n", worst);
    return 0;
}
C
gcc -O2 -o "$dir/gran" "$dir/gran.c"
echo "fio's granularity (longest of ten nanosleep(1 us)), five runs, us:"
for _ in 1 2 3 4 5; do "$dir/gran"; done | paste -sd' '
echo "fio, null engine, think time after each request (2 s each):"
for tt in 10 30 45 70 100 120 150 200; do
    fio --name=t --ioengine=null --size=1g --rw=randread --bs=4k \
        --thinktime="$tt" --runtime=2 --time_based --output-format=json 2>/dev/null |
        python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]
ios = j['read']['total_ios']
print(f'  thinktime={$tt} us: {2e6 / ios:.1f} us per request, usr {j[\"usr_cpu\"]:.1f}%, '
      f'sys {j[\"sys_cpu\"]:.1f}%, {j[\"ctx\"] / ios:.3f} context switches per request')"
done
