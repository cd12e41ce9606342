#!/usr/bin/env bash
# iperf3 by hand over a veth pair: client pinned to CPU 0, server on CPU 0 or 1, under
# stress-ng --cpu LOAD (LOAD=2 unless given; LOAD=0: no load of its own).
set -u
LOAD=${LOAD:-2}
cleanup() { ip netns del bhA 2>/dev/null; ip netns del bhB 2>/dev/null; pkill -f "stress-ng --cpu $LOAD --timeout" 2>/dev/null; }
trap cleanup EXIT
ip netns add bhA; ip netns add bhB
ip link add bva type veth peer name bvb
ip link set bva netns bhA; ip link set bvb netns bhB
ip -n bhA addr add 192.0.2.1/24 dev bva; ip -n bhB addr add 192.0.2.2/24 dev bvb
ip -n bhA link set bva up; ip -n bhB link set bvb up; ip -n bhA link set lo up; ip -n bhB link set lo up
if [ "$LOAD" -gt 0 ]; then stress-ng --cpu "$LOAD" --timeout 60 --quiet & fi
sleep 1
for round in 1 2 3; do
for cpu in 0 1; do
  ip netns exec bhA taskset -c $cpu iperf3 -s -1 -p 5301 >/dev/null 2>&1 & srv=$!
  sleep 0.3
  bps=$(ip netns exec bhB taskset -c 0 iperf3 -c 192.0.2.1 -p 5301 -t 4 -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  echo "round $round server on CPU $cpu: $bps Gbit/s"
  wait $srv
done
done
