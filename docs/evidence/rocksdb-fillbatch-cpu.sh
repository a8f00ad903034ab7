#!/usr/bin/env bash
# The CPU of RocksDB's fillbatch per key, split between the thread that
# writes the batches and the flush thread, measured with RocksDB's own
# db_bench (Debian's rocksdb-tools) and the kernel's per-thread
# accounting (thread-times.sh), with docs/APPS.md's reference options
# (rocksdb-reference.sh); fillbatch writes sequential keys in batches of
# 1 000, so compactions are trivial moves.
#
#   bash docs/evidence/rocksdb-fillbatch-cpu.sh [DIR] [KEYS]
set -euo pipefail
dir=${1:-$(mktemp -d)}
keys=${2:-4000000}
command -v db_bench >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
# shellcheck source=rocksdb-reference.sh
source "$(dirname "$0")/rocksdb-reference.sh"
# shellcheck source=thread-times.sh
source "$(dirname "$0")/thread-times.sh"
rm -rf "$dir/db"
thread_times "$dir" db_bench "${rocksdb_reference[@]}" --benchmarks=fillbatch,stats \
  --db="$dir/db" --num="$keys" >"$dir/threads.txt"
grep -E '^fillbatch' "$dir/out.txt"
flush_gib=$(grep -o 'Flush(GB): cumulative [0-9.]*' "$dir/out.txt" | tail -1 | awk '{ print $3 }')
printf '%-18s %10s %10s\n' thread user_s system_s
awk '{ printf "%-18s %10.2f %10.2f\n", $1, $2, $3 }' "$dir/threads.txt"
# The busiest of db_bench's own threads writes the batches; RocksDB names
# its flush pool's threads rocksdb:high*.
awk -v keys="$keys" -v gib="$flush_gib" '
  $1 ~ /^rocksdb:high/ { fu += $2; fs += $3; next }
  $1 !~ /^rocksdb:/ && $2 > wu { wu = $2; ws = $3 }
  END {
    printf "writer: %.3f us user and %.3f us system per key\n", wu * 1e6 / keys, ws * 1e6 / keys
    printf "flush: %.3f ns user and %.3f ns system per byte flushed (%.3f GiB)\n",
      fu * 1e9 / (gib * 1073741824), fs * 1e9 / (gib * 1073741824), gib
  }' "$dir/threads.txt"
rm -rf "$dir/db" "$dir/out.txt" "$dir/threads.txt"
