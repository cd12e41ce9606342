#!/usr/bin/env python3
"""Runs commands in turn, round after round, and prints each one's medians.

    interleave.py ROUNDS LABEL 'COMMAND' [LABEL 'COMMAND' ...]

Each round runs every command once, in the order given (a first round is run and not
counted: it warms the page cache), so that a noisy stretch of the host falls on all of
them alike. Wall time is measured around the child by perf_counter; CPU time (user +
system) and peak RSS come from wait4. Ratios are to the first command. Before each run,
the outputs the BENCHMARKS.md recipes write (/dev/shm/e5, /dev/shm/v.html,
/dev/shm/c.json) are removed. Used for the figures of BENCHMARKS.md's "export".
"""
import os
import statistics as st
import subprocess
import sys
import time

OUTPUTS = "rm -rf /dev/shm/e5 /dev/shm/v.html /dev/shm/c.json"


def main():
    if len(sys.argv) < 4 or len(sys.argv) % 2 != 0:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    labels, commands = sys.argv[2::2], sys.argv[3::2]
    runs = {label: [] for label in labels}
    for r in range(rounds + 1):
        for label, command in zip(labels, commands):
            subprocess.run(OUTPUTS, shell=True, check=True)
            start = time.perf_counter()
            child = subprocess.Popen(command, shell=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{label}: `{command}` failed")
            if r > 0:
                runs[label].append((wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss))
    subprocess.run(OUTPUTS, shell=True, check=True)
    first = None
    for label in labels:
        v = runs[label]
        wall, cpu, rss = (st.median(x[i] for x in v) for i in range(3))
        first = first or (wall, cpu, rss)
        print(f"{label:14s} wall {wall * 1000:7.1f} ms ({wall / first[0]:.3f}x) "
              f"min {min(x[0] for x in v) * 1000:7.1f}  cpu {cpu * 1000:7.1f} ms "
              f"({cpu / first[1]:.2f}x)  rss {rss / 1024:5.1f} MB ({rss / first[2]:.2f}x)")


if __name__ == "__main__":
    main()
