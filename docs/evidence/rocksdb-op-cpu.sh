#!/usr/bin/env bash
# The CPU of one RocksDB put and one get under db_bench (Debian's
# rocksdb-tools), per thread from the kernel's accounting
# (thread-times.sh), with docs/APPS.md's reference options
# (rocksdb-reference.sh). Two runs:
#   1. fillrandom puts OPS keys one at a time into a new database
#      (db_bench's put path, the write-ahead log through the page cache,
#      no fsync), compaction off;
#   2. fillseq loads KEYS keys in order (levels that do not overlap), then
#      readrandom gets OPS of them with direct reads (one 4 KiB block read
#      each; the index blocks live in the table readers' memory). db_bench
#      runs each benchmark on a thread of its own: the last one created
#      is readrandom's.
#
#   bash docs/evidence/rocksdb-op-cpu.sh [DIR] [KEYS] [OPS]
set -euo pipefail
dir=${1:-$(mktemp -d)}
keys=${2:-4000000}
ops=${3:-400000}
command -v db_bench >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
# shellcheck source=thread-times.sh
source "$(dirname "$0")/thread-times.sh"
# shellcheck source=rocksdb-reference.sh
source "$(dirname "$0")/rocksdb-reference.sh"
common=(--db="$dir/db" "${rocksdb_reference[@]}")
# db_bench's own threads (not RocksDB's background pools): user, system.
own() { awk '$1 !~ /^rocksdb:/ { print $2, $3 }'; }

rm -rf "$dir/db"
read -r u s < <(thread_times "$dir" db_bench "${common[@]}" --benchmarks=fillrandom \
  --num="$ops" --disable_auto_compactions=true | own | sort -nr | head -1)
grep -E '^fillrandom' "$dir/out.txt" || true
awk -v u="$u" -v s="$s" -v n="$ops" 'BEGIN { printf "put: %.3f us user and %.3f us system per put\n", u * 1e6 / n, s * 1e6 / n }'
rm -rf "$dir/db"
read -r u s < <(thread_times "$dir" db_bench "${common[@]}" --benchmarks=fillseq,readrandom \
  --num="$keys" --reads="$ops" --use_direct_reads=true | own | tail -1)
grep -E '^readrandom' "$dir/out.txt" || true
awk -v u="$u" -v s="$s" -v n="$ops" 'BEGIN { printf "get: %.3f us user and %.3f us system per get\n", u * 1e6 / n, s * 1e6 / n }'
rm -rf "$dir/db" "$dir/out.txt"
