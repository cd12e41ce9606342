#!/usr/bin/env bash
# Records instances.v7.dat: two tracefs instances and no top buffer, one of them so small
# that the kernel overwrites pages (lost events), with trace_marker writes (ftrace:print),
# exec and workqueue events. kallsyms is hidden (bind-mounted empty file) to keep the
# fixture small; symbol resolution is covered by the cyclictest-idle fixture.
# Needs root, tracefs and trace-cmd. `trace-cmd extract -B` also takes what the top buffer
# holds (here: seven stale trace_marker lines of another program), and removes the two
# instances when done.
#   usage: make-instances.sh OUTDIR
set -euo pipefail
out=${1:-.}
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
big=$T/instances/jlab_big
small=$T/instances/jlab_small
cleanup() { rmdir "$big" "$small" 2>/dev/null || true; }
trap cleanup EXIT
mkdir "$big" "$small"
echo 1024 > "$big/buffer_size_kb"
echo 8 > "$small/buffer_size_kb"
echo 'irq:irq_handler_entry irq:irq_handler_exit irq:softirq_entry irq:softirq_exit timer:hrtimer_expire_entry timer:hrtimer_expire_exit workqueue:workqueue_execute_start workqueue:workqueue_execute_end' > "$big/set_event"
echo 'sched:sched_switch sched:sched_waking sched:sched_wakeup sched:sched_process_exec sched:sched_process_fork sched:sched_process_exit' > "$small/set_event"
echo 1 > "$big/tracing_on"
echo 1 > "$small/tracing_on"
for i in $(seq 1 40); do
  echo "jitterlab marker $i" > "$big/trace_marker"
  /bin/true
  dd if=/dev/zero of=/dev/null bs=4k count=10 status=none
  sleep 0.005
done
echo 0 > "$big/tracing_on"
echo 0 > "$small/tracing_on"
grep -H overrun "$small"/per_cpu/cpu*/stats
: > /tmp/jlab-empty-kallsyms
unshare -m sh -c "mount --bind /tmp/jlab-empty-kallsyms /proc/kallsyms &&
  trace-cmd extract -B jlab_big -B jlab_small -o '$out/instances.v7.dat' >/dev/null 2>&1"
trace-cmd report "$out/instances.v7.dat" > "$out/instances.report.txt" 2>/dev/null
trace-cmd report -t -R "$out/instances.v7.dat" > "$out/instances.raw.txt" 2>/dev/null
trace-cmd convert --file-version 6 --compression none -i "$out/instances.v7.dat" -o "$out/instances.v6.dat" >/dev/null 2>&1
ls -la "$out"/instances.*
