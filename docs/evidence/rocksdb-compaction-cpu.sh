#!/usr/bin/env bash
# The CPU time of a RocksDB compaction's merge, per input byte and per
# input record, measured with RocksDB's own db_bench (Debian's
# rocksdb-tools). Each run loads random keys with automatic compaction
# off, so that L0 holds several table files whose key ranges all overlap
# (as a random-key writer's do), then compacts them into L1 by hand, and
# reads the compaction's own accounting from the LOG's event line:
# compaction_time_cpu_micros (the compaction thread's CPU time, from
# CLOCK_THREAD_CPUTIME_ID), input_data_size and num_input_records.
# Options as docs/APPS.md's reference runs (rocksdb-reference.sh), the
# value size varied.
#
#   bash docs/evidence/rocksdb-compaction-cpu.sh [DIR]
set -euo pipefail
dir=${1:-$(mktemp -d)}
command -v db_bench >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
# shellcheck source=rocksdb-reference.sh
source "$(dirname "$0")/rocksdb-reference.sh"
printf '%-8s %-6s %12s %12s %10s %12s %12s %14s\n' value_B trial input_bytes records cpu_us ns_per_byte us_per_record flush_ns_per_B
for value in 1024 256 4096; do
  # About 450 MB of input whatever the value size.
  num=$(( 450000000 / (value + 16) ))
  for trial in 1 2 3 4 5; do
    rm -rf "$dir/db"
    db_bench "${rocksdb_reference[@]}" --benchmarks=fillrandom,compact,stats \
      --db="$dir/db" --num="$num" --value_size="$value" \
      --disable_auto_compactions=true --seed="$trial" >"$dir/out.txt" 2>&1
    log="$dir/db/LOG"
    input=$(grep -o '"event": "compaction_started".*' "$log" | grep -o '"input_data_size": [0-9]*' | tail -1 | grep -o '[0-9]*$')
    cpu=$(grep -o '"compaction_time_cpu_micros": [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    records=$(grep -o '"num_input_records": [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    flush_cpu_s=$(awk '$1 == "L0" { print $16; exit }' "$dir/out.txt")
    flush_gb=$(grep -o 'Flush(GB): cumulative [0-9.]*' "$dir/out.txt" | tail -1 | awk '{ print $3 }')
    printf '%-8s %-6s %12d %12d %10d %12.3f %12.3f %14.3f\n' "$value" "$trial" "$input" "$records" "$cpu" \
      "$(awk -v b="$input" -v c="$cpu" 'BEGIN { print c * 1000 / b }')" \
      "$(awk -v r="$records" -v c="$cpu" 'BEGIN { print c / r }')" \
      "$(awk -v s="$flush_cpu_s" -v g="$flush_gb" 'BEGIN { print s * 1e9 / (g * 1073741824) }')"
  done
done | tee "$dir/runs.txt"
rm -rf "$dir/db" "$dir/out.txt"
# Least squares, no intercept: cpu = per_record * records + per_byte * bytes.
awk 'NR > 0 { r = $4; b = $3; c = $5 * 1000;
    srr += r * r; sbb += b * b; srb += r * b; src += r * c; sbc += b * c }
  END { det = srr * sbb - srb * srb;
    pr = (src * sbb - sbc * srb) / det; pb = (sbc * srr - src * srb) / det;
    printf "fit: %.0f ns per input record + %.3f ns per input byte\n", pr, pb }' "$dir/runs.txt"
