#!/bin/sh
# Records the perf fixture: a shell forking `sleep 0.001` 50 times, under `perf sched
# record` (system-wide sched tracepoints), with a nice-19 busy loop pinned to each CPU for
# the whole recording so that no CPU ever goes idle (on the capture machine's kernel the
# switches out of the idle task are not traced; see README.md). Writes, into DIR (default
# .): sleep-loop.perf.txt (`perf script`) and sleep-loop.latency.txt
# (`perf sched latency -p`), both of the same perf.data, which is deleted.
#   sudo ./make-sleep-loop.sh [DIR] [LOOPS]
set -eu
dir=${1:-.}
loops=${2:-50}
data=$(mktemp "${TMPDIR:-/tmp}/sleep-loop.XXXXXX.data")
cpus=$(nproc)
hogs=""
cpu=0
while [ "$cpu" -lt "$cpus" ]; do
  nice -n 19 taskset -c "$cpu" sh -c 'while :; do :; done' &
  hogs="$hogs $!"
  cpu=$((cpu + 1))
done
trap 'kill $hogs 2>/dev/null; rm -f "$data" "$data.old"' EXIT
sleep 0.1
perf sched record -q -o "$data" -- \
  sh -c "for i in \$(seq $loops); do sleep 0.001; done" >/dev/null 2>&1
perf script -i "$data" > "$dir/sleep-loop.perf.txt" 2>/dev/null
perf sched latency -p -i "$data" > "$dir/sleep-loop.latency.txt" 2>/dev/null
