#!/usr/bin/env bash
# The CPU of one RocksDB put and one get under db_bench, per thread,
# measured as docs/evidence/rocksdb-fillbatch-cpu.sh measures fillbatch:
# each thread's user and system time from /proc/PID/task/TID/stat, read
# every 20 ms until the process exits. Options as docs/APPS.md's
# reference runs (16 B keys, 1 KiB values, no compression, 4 KiB blocks,
# no Bloom filters, 8 MiB block cache, two 64 MiB memtables, direct I/O
# for flush and compaction). Three steps on one database:
#   1. fillseq loads KEYS keys in order (levels that do not overlap);
#   2. fillrandom puts OPS keys one at a time (db_bench's put path, the
#      write-ahead log through the page cache, no fsync), compaction off;
#   3. readrandom gets OPS keys with direct reads (one 4 KiB block read
#      each; the index blocks live in the table readers' memory).
#
#   bash docs/evidence/rocksdb-op-cpu.sh [DIR] [KEYS] [OPS]
set -euo pipefail
dir=${1:-$(mktemp -d)}
keys=${2:-4000000}
ops=${3:-400000}
command -v db_bench >/dev/null || { echo "db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
tick=$(getconf CLK_TCK)
common=(--db="$dir/db" --key_size=16 --value_size=1024 --compression_type=none
  --write_buffer_size=67108864 --max_write_buffer_number=2
  --target_file_size_base=67108864 --use_direct_io_for_flush_and_compaction=true
  --block_size=4096 --bloom_bits=-1 --cache_size=8388608 --threads=1
  --max_background_jobs=2)

# Runs db_bench with the given arguments and prints, for each thread of
# its own (not RocksDB's background pool), in the order they were
# created, its user and system seconds.
threads() {
  rm -rf "$dir/tasks"
  mkdir -p "$dir/tasks"
  db_bench "${common[@]}" "$@" >"$dir/out.txt" 2>&1 &
  local pid=$! t tid
  while kill -0 "$pid" 2>/dev/null; do
    for t in /proc/"$pid"/task/*; do
      tid=${t##*/}
      { cat "$t/comm"; sed 's/^.*) //' "$t/stat" | awk '{ print $12, $13 }'; } \
        >"$dir/tasks/$tid.new" 2>/dev/null && mv "$dir/tasks/$tid.new" "$dir/tasks/$tid" || true
    done
    sleep 0.02
  done
  wait "$pid"
  for f in "$dir"/tasks/*; do
    case $f in *.new) continue ;; esac
    [ -s "$f" ] || continue
    case $(head -1 "$f") in rocksdb:*) continue ;; esac
    echo "${f##*/} $(tail -1 "$f")"
  done | sort -n -k1 | awk -v t="$tick" '$2 + $3 > 0 { print $2 / t, $3 / t }'
}

rm -rf "$dir/db"
read -r u s < <(threads --benchmarks=fillrandom --num="$ops" --disable_auto_compactions=true | sort -nr | head -1)
grep -E '^fillrandom' "$dir/out.txt" || true
awk -v u="$u" -v s="$s" -v n="$ops" 'BEGIN { printf "put: %.3f us user and %.3f us system per put\n", u * 1e6 / n, s * 1e6 / n }'
rm -rf "$dir/db"
read -r u s < <(threads --benchmarks=fillseq,readrandom --num="$keys" --reads="$ops" \
  --use_direct_reads=true | tail -1)
grep -E '^readrandom' "$dir/out.txt" || true
awk -v u="$u" -v s="$s" -v n="$ops" 'BEGIN { printf "get: %.3f us user and %.3f us system per get\n", u * 1e6 / n, s * 1e6 / n }'
rm -rf "$dir/db" "$dir/tasks" "$dir/out.txt"
