#!/usr/bin/env bash
# Records veth-iperf3.v6.dat: TCP over a veth pair between two network namespaces, where
# no hardirq is involved in delivery: the sender's veth_xmit queues the packet on its own
# CPU's backlog and raises NET_RX in task context, and net_rx_action (run when the sender
# re-enables bottom halves, or in ksoftirqd) wakes the receiver. The analyze tests check
# the softirq -> task chains on it (issue 15, item 5).
#
# Namespaces jlfix-a (server, 192.0.2.1, pinned to CPU 1) and jlfix-b (client, 192.0.2.2,
# pinned to CPU 0); they are removed at the end, also on failure. Needs root, tracefs,
# iperf3, iproute2 and a built jitterlab (JITTERLAB, default target/release/jitterlab).
# With `stress`, records veth-iperf3-stress.v6.dat instead: the same transfer while
# `stress-ng --cpu 2` keeps both CPUs busy (the study's "under stress" case; the compare
# page's B in the browser tests).
#   usage: make-veth.sh OUTDIR [stress]
set -euo pipefail
out=${1:-.}
mode=${2:-}
name=veth-iperf3
[ "$mode" = stress ] && name=veth-iperf3-stress
jl=${JITTERLAB:-target/release/jitterlab}
A=jlfix-a
B=jlfix-b
server=
stress=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ -n "$stress" ] && kill "$stress" 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add "$A"
ip netns add "$B"
ip link add jlfix-va netns "$A" type veth peer name jlfix-vb netns "$B"
ip -n "$A" addr add 192.0.2.1/24 dev jlfix-va
ip -n "$B" addr add 192.0.2.2/24 dev jlfix-vb
ip -n "$A" link set jlfix-va up
ip -n "$B" link set jlfix-vb up
ip netns exec "$A" taskset -c 1 iperf3 -s -1 -p 5299 >/dev/null &
server=$!
sleep 0.5
echo "server: pid of 'ip netns exec' $server (iperf3 execs in it: same pid)"
if [ "$mode" = stress ]; then
  stress-ng --cpu 2 --timeout 4 >/dev/null 2>&1 &
  stress=$!
  sleep 0.5
fi
"$jl" record --preset sched --preset irq -o "$out/$name.v6.dat" -- \
  ip netns exec "$B" taskset -c 0 iperf3 -c 192.0.2.1 -p 5299 -t 1 -b 200M
wait "$server" || true
server=
[ -n "$stress" ] && wait "$stress" || true
stress=
zstd -19 -f "$out/$name.v6.dat" -o "$out/$name.v6.dat.zst"
ls -la "$out/$name".*
