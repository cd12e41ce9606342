#!/usr/bin/env bash
# The multicast generators side by side, pinned apart (sender on CPU 0, receiver on
# CPU 1), 64-byte messages over loopback multicast in a private network namespace:
# jitterlab's mcast pair (an experiment of one cell and two runs, both counted), the
# minimal C pair of
# bench/mcast.c (copied from the stock-tool baselines, ../shared/baselines/mcast.c) and
# iperf2 (`-u -l 64 -b 2000M`), each ROUNDS times, in turn, SECONDS each.
# Prints one line per run and the medians of messages received a second.
# Needs root, gcc, iperf (iperf2), python3; run it alone on the machine.
# usage: bench-mcast-peers.sh [JITTERLAB] [ROUNDS] [SECONDS]
set -eu
J=${1:-target/release/jitterlab}; ROUNDS=${2:-5}; SECS=${3:-5}
NS=jlbmc; TMP=$(mktemp -d)
cleanup() { ip netns del $NS 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
gcc -O2 -o "$TMP/mcast" "$(dirname "$0")/bench/mcast.c"
ip netns add $NS
ip -n $NS link set lo up
ip -n $NS link set lo multicast on
ip -n $NS addr add 10.98.0.1/32 dev lo
ip -n $NS route add 224.0.0.0/4 dev lo
cat > "$TMP/one.toml" <<TOML
name = "mcast-apart"
rounds = 2
duration = "${SECS}s"
warmup = 0
trace = "none"
[factors]
affinity = ["sender:0 receiver:1"]
[measure.mcast]
payload = 64
interval = "100ms"
TOML
jl() {
  "$J" experiment "$TMP/one.toml" --state-dir "$TMP/state" --json 2>/dev/null |
    python3 -c 'import json,sys
for r in json.load(sys.stdin)["data"]["runs"]:
    print("%.0f %.0f" % (r["values"]["mcast.received"], r["values"]["mcast.sent"]))'
}
c_pair() {
  ip netns exec $NS taskset -c 1 "$TMP/mcast" recv 230.0.0.1 10.98.0.1 4446 $((SECS + 3)) > "$TMP/recv.out" &
  local r=$!
  sleep 0.3
  ip netns exec $NS taskset -c 0 "$TMP/mcast" send 230.0.0.1 10.98.0.1 4446 "$SECS" 64 > "$TMP/send.out"
  wait $r
  # Whole seconds only: the receiver's last line is a part of a second.
  python3 - "$TMP/recv.out" "$TMP/send.out" <<'PY'
import sys
r = [int(l.split()[1]) for l in open(sys.argv[1]) if l.strip()][:-1]
s = [int(l.split()[1]) for l in open(sys.argv[2]) if l.strip()]
print("%.0f %.0f" % (sum(r) / max(len(r), 1), sum(s) / max(len(s), 1)))
PY
}
iperf2() {
  ip netns exec $NS taskset -c 1 iperf -s -u -B 230.0.0.1%lo -p 5001 -e -i 1 > "$TMP/is.out" 2>&1 &
  local r=$!
  sleep 0.5
  ip netns exec $NS taskset -c 0 iperf -c 230.0.0.1 -B 10.98.0.1 -u -b 2000M -l 64 -t "$SECS" -p 5001 -e > "$TMP/ic.out" 2>&1
  sleep 1
  kill $r 2>/dev/null; wait $r 2>/dev/null || true
  # The server's report: Lost/Total datagrams; the client's: datagrams sent.
  python3 - "$TMP/is.out" "$TMP/ic.out" "$SECS" <<'PY'
import re, sys
secs = float(sys.argv[3])
srv = open(sys.argv[1]).read(); cli = open(sys.argv[2]).read()
lt = re.findall(r"(\d+)/\s*(\d+)\s+\(", srv)
got = int(lt[-1][1]) - int(lt[-1][0]) if lt else 0
sent = re.findall(r"(\d+)/0\s|Sent (\d+) datagrams", cli)
n = [int(a or b) for a, b in sent]
print("%.0f %.0f" % (got / secs, (n[-1] if n else 0) / secs))
PY
}
for round in $(seq 1 "$ROUNDS"); do
  for gen in jl c_pair iperf2; do
    $gen | while read -r got sent; do
      echo "round $round $gen: received $got msg/s, sent $sent msg/s"
    done
  done
done | tee "$TMP/all.out"
python3 - "$TMP/all.out" <<'PY'
import statistics, sys
got, sent = {}, {}
for l in open(sys.argv[1]):
    w = l.split()
    g = w[2].rstrip(":")
    got.setdefault(g, []).append(float(w[4]))
    sent.setdefault(g, []).append(float(w[7]))
for name, by in (("received", got), ("sent", sent)):
    base = statistics.median(by["jl"])
    for g, v in by.items():
        m = statistics.median(v)
        print(f"{g} {name}: median {m:,.0f} msg/s over {len(v)} runs "
              f"(min {min(v):,.0f}, max {max(v):,.0f}); against jitterlab {m / base:.2f}")
PY
