#!/usr/bin/env bash
# The CPU of RocksDB's dump tool per dumped pair: rocksdb_dump.cc (RocksDB's
# own DbDumpTool, built against Debian's librocksdb-dev) dumps a database
# that db_bench's fillseq loaded with docs/APPS.md's reference options
# (rocksdb-reference.sh); the kernel's
# per-thread accounting (thread-times.sh) gives its user and system time.
# DbDumpTool appends each pair to its output with four writes (the key's
# length, the key, the value's length, the value).
#
#   bash docs/evidence/rocksdb-dump-cpu.sh [DIR] [KEYS]
set -euo pipefail
dir=${1:-$(mktemp -d)}
keys=${2:-2000000}
here=$(dirname "$0")
command -v db_bench >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
# shellcheck source=thread-times.sh
source "$here/thread-times.sh"
# shellcheck source=rocksdb-reference.sh
source "$here/rocksdb-reference.sh"
g++ -O2 -std=c++17 -o "$dir/rocksdb_dump" "$here/rocksdb_dump.cc" -lrocksdb
rm -rf "$dir/db" "$dir/dump"
db_bench "${rocksdb_reference[@]}" --benchmarks=fillseq --db="$dir/db" --num="$keys" \
  >/dev/null 2>&1
read -r u s < <(thread_times "$dir" "$dir/rocksdb_dump" "$dir/db" "$dir/dump" \
  | awk '$1 !~ /^rocksdb:/ { print $2, $3 }' | sort -nr | head -1)
awk -v u="$u" -v s="$s" -v n="$keys" 'BEGIN { printf "dump: %.3f us user and %.3f us system per pair\n", u * 1e6 / n, s * 1e6 / n }'
rm -rf "$dir/db" "$dir/dump" "$dir/rocksdb_dump" "$dir/out.txt"
