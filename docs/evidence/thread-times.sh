# Sourced by the evidence scripts that time a program's threads.
#
# thread_times DIR COMMAND...: runs COMMAND (its output into DIR/out.txt)
# and reads every thread's user and system time from the kernel
# (/proc/PID/task/TID/stat, utime and stime in clock ticks) every 20 ms
# until the process exits; the last reading of each thread counts. Prints
# one line per thread that ran, in the order the threads were created:
# its name, then its user and its system seconds.
thread_times() {
  local dir=$1
  shift
  local tick t tid name times
  tick=$(getconf CLK_TCK)
  rm -rf "$dir/tasks"
  mkdir -p "$dir/tasks"
  "$@" >"$dir/out.txt" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for t in /proc/"$pid"/task/*; do
      tid=${t##*/}
      # The name, then fields 14 and 15 of stat (after the parenthesised
      # name, fields 12 and 13). A thread that exits between the two
      # reads leaves its previous reading in place.
      name=$(cat "$t/comm" 2>/dev/null) || continue
      times=$(sed 's/^.*) //' "$t/stat" 2>/dev/null | awk 'NF >= 13 { print $12, $13 }') || continue
      [ -n "$name" ] && [ -n "$times" ] || continue
      printf '%s\n%s\n' "$name" "$times" >"$dir/tasks/$tid"
    done
    sleep 0.02
  done
  wait "$pid"
  for t in "$dir"/tasks/*; do
    [ -s "$t" ] || continue
    echo "${t##*/} $(head -1 "$t") $(tail -1 "$t")"
  done | sort -n -k1 | awk -v t="$tick" '$3 + $4 > 0 { print $2, $3 / t, $4 / t }'
  rm -rf "$dir/tasks"
}
