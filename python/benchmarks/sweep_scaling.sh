#!/usr/bin/env bash
# Points per second of `cint sweep` against its worker count, and the check
# that the output does not depend on that count. A benchmark, not a test:
# it prints timings and asserts only that every run's rows are the same
# bytes. Results and where they were taken: docs/PYTHON.md, "Speed".
#
#   python/benchmarks/sweep_scaling.sh [path/to/cint] [workers...]
#
# 500 seeds x the 6 strategies of async-batch.toml at 200 ms simulated each:
# 3 000 rows of about 25 ms of one core each.
set -euo pipefail
cd "$(dirname "$0")/../.."
cint="${1:-target/release/cint}"
shift || true
workers=("$@")
[ ${#workers[@]} -gt 0 ] || workers=(16 8 4 2 1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
seeds=$(seq -s, 1 500)
echo "cores: $(nproc)"
for n in "${workers[@]}"; do
    start=$(date +%s%N)
    "$cint" sweep scenarios/async-batch.toml --set duration=200ms --vary "seed=$seeds" \
        --jobs "$n" --out "$out/jobs$n.jsonl" 2>/dev/null
    end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 ))
    rows=$(wc -l < "$out/jobs$n.jsonl")
    echo "workers $n: $ms ms, $(( rows * 1000 / ms )) rows/s"
done
first="$out/jobs${workers[0]}.jsonl"
for n in "${workers[@]}"; do
    cmp -s "$first" "$out/jobs$n.jsonl" || { echo "workers $n: rows differ" >&2; exit 1; }
done
echo "every worker count wrote the same bytes: $(sha256sum < "$first" | cut -c1-16)"
