#!/usr/bin/env bash
# The partition recipe's cells with stock tools: cyclictest (1 ms period, SCHED_FIFO 95,
# on CPU 1, as the recipe's probe) under the core-partitioning talk's loads from
# bench/rtload.c (copied from the stock-tool baselines, ../shared/baselines/rtload.c:
# cpu = 150 threads of usleep(1), io = 150 threads of 4 KiB O_SYNC writes), without and
# with CPU 1 isolated. The partition is `jitterlab isolate 1` / `jitterlab revert` (the
# baselines' cset-by-hand partition is in ../shared/baselines/part_on.sh); cyclictest runs
# inside it with `jitterlab run --cpus 1`. Per cell: min / avg / p99 / max in us from
# cyclictest's histogram, and CPU 1's local timer (LOC) and device interrupts a second.
# The loads run at nice 19: partitioned, their 150 threads share CPU 0 with this script,
# which at nice 0 got a 151st of it and took minutes per cell (the loads are timers
# and sleeps, so what they do to CPU 1 is the same). Needs root, gcc, cyclictest; run
# it alone on the machine.
# usage: bench-partition-by-hand.sh [JITTERLAB] [SECONDS] [REPS]
set -eu
J=${1:-target/release/jitterlab}; SECS=${2:-10}; REPS=${3:-2}
TMP=$(mktemp -d); STATE=$TMP/state
LOADPID=
cleanup() {
  set +e
  [ -n "$LOADPID" ] && kill "$LOADPID" 2>/dev/null
  # The journal is kept until the partition is undone: `jitterlab revert --state-dir`.
  if [ -e "$STATE/journal.jsonl" ] && ! "$J" revert --state-dir "$STATE" >&2; then
    echo "the partition is still applied: jitterlab revert --state-dir $STATE" >&2
    return
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
gcc -O2 -pthread -o "$TMP/rtload" "$(dirname "$0")/bench/rtload.c"
# CPU 1's interrupts: LOC, and the numbered (device) rows.
irqs() {
  awk 'NR==1{for(i=1;i<=NF;i++) if($i=="CPU1") c=i+1} $1=="LOC:"{loc=$c} $1~/^[0-9]+:$/{dev+=$c} END{print loc+0, dev+0}' /proc/interrupts
}
cell() {
  local part=$1 load=$2
  case $load in
    # Until it is stopped after the cell (bounded at a minute): on CPU 0 with the
    # load, starting the probe takes seconds, and a load that ended on its own clock
    # would leave the end of the run unloaded.
    cpu) nice -n 19 "$TMP/rtload" cpu 150 $((SECS + 60)) >/dev/null 2>&1 & LOADPID=$! ;;
    io) nice -n 19 "$TMP/rtload" io 150 $((SECS + 60)) "$TMP/io.bin" >/dev/null 2>&1 & LOADPID=$! ;;
    none) LOADPID= ;;
  esac
  sleep 1
  read -r loc0 dev0 < <(irqs)
  local run=(cyclictest -m -p 95 -i 1000 -D "$SECS" -t 1 -a 1 -q -h 2000)
  if [ "$part" = on ]; then run=("$J" run --state-dir "$STATE" --cpus 1 -- "${run[@]}"); fi
  "${run[@]}" > "$TMP/ct.out"
  read -r loc1 dev1 < <(irqs)
  if [ -n "$LOADPID" ]; then kill "$LOADPID" 2>/dev/null || true; wait "$LOADPID" 2>/dev/null || true; LOADPID=; fi
  python3 - "$TMP/ct.out" "$part" "$load" $((loc1 - loc0)) $((dev1 - dev0)) "$SECS" <<'PY'
import sys
out, part, load, loc, dev, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
hist, over, vals = [], 0, {}
for l in open(out):
    w = l.split()
    if not w:
        continue
    if w[0].isdigit() and len(w) >= 2:
        hist.append((int(w[0]), int(w[1])))
    elif l.startswith("# Histogram Overflows:"):
        over = int(w[3])
    elif l.startswith(("# Min Latencies:", "# Avg Latencies:", "# Max Latencies:")):
        vals[w[1]] = int(w[3])
n = sum(c for _, c in hist) + over
acc, p99 = 0, None
for us, c in hist:
    acc += c
    if p99 is None and acc >= 0.99 * n:
        p99 = us
print(f"partition {part:3} load {load:4}: min {vals.get('Min')} avg {vals.get('Avg')} "
      f"p99 {p99 if p99 is not None else '>2000'} max {vals.get('Max')} us, "
      f"{n} samples; CPU 1 LOC {loc / secs:.0f}/s, device IRQs {dev / secs:.0f}/s")
PY
}
for rep in $(seq 1 "$REPS"); do
  for part in off on; do
    if [ "$part" = on ]; then "$J" isolate 1 --state-dir "$STATE" >/dev/null; fi
    for load in none cpu io; do cell "$part" "$load"; done
    if [ "$part" = on ]; then "$J" revert --state-dir "$STATE" >/dev/null; fi
  done
done
