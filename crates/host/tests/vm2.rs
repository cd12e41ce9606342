//! Every reader against the tree captured from the 2-CPU VM.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::cgroups::Layout;
use jitterlab_host::tasks::{Policy, TaskKind};
use jitterlab_host::{
    read_tasks, Cgroups, CpuMap, Filter, IrqMap, TaskList, TaskQuery, Workqueues,
};

use crate::vm2;

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

#[test]
fn cpus_topology_idle_and_isolation() {
    let map = CpuMap::read(&vm2(), &CpuSet::new()).unwrap();
    assert_eq!(map.possible, list("0-1"));
    assert_eq!(map.online, list("0-1"));
    assert!(map.isolated.is_empty());
    assert_eq!(map.nohz_full, None, "this kernel has no nohz_full file");
    assert_eq!(map.cpuidle_driver.as_deref(), Some("haltpoll"));
    assert!(map.boot.isolcpus.is_none());
    assert_eq!(map.cpus.len(), 2);
    let c1 = map.cpu(1).unwrap();
    assert_eq!(
        (c1.core_id, c1.package_id, c1.node),
        (Some(1), Some(0), Some(0))
    );
    assert_eq!(c1.smt_siblings, Some(list("1")));
    assert_eq!(c1.package_cpus, Some(list("0-1")));
    assert!(c1.freq.is_none(), "no cpufreq in this VM");
    let names: Vec<&str> = c1.idle_states.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names[0], "POLL");
    assert_eq!(names.len(), 2);
    assert!(c1.isolation.is_empty());
}

#[test]
fn irqs_affinity_actions_and_counters() {
    let map = IrqMap::read(&vm2()).unwrap();
    assert_eq!(map.cpus, [0, 1]);
    assert_eq!(map.irqs.len(), 19);
    let blk = map.irq(36).unwrap();
    assert_eq!(blk.actions().collect::<Vec<_>>(), ["virtio1-req.0"]);
    assert_eq!(blk.chip(), "PCI-MSIX-0000:00:02.0");
    assert_eq!(blk.hwirq(), Some("1"));
    assert_eq!(blk.trigger(), Some("edge"));
    assert_eq!(blk.affinity().cloned(), Some(list("0-1")));
    assert_eq!(blk.effective().cloned(), Some(list("1")));
    assert_eq!(blk.counts[0], 0);
    assert!(blk.counts[1] > 10_000);
    let acpi = map.irq(24).unwrap();
    assert_eq!(acpi.actions().collect::<Vec<_>>(), ["ACPI:Ged"]);
    assert_eq!(acpi.chip(), "IO-APIC");
    assert_eq!(map.default_affinity, Some(list("0-1")));
    let loc = map.counters.iter().find(|c| c.name == "LOC").unwrap();
    assert!(loc.per_cpu);
    assert_eq!(loc.description, "Local timer interrupts");
    assert_eq!(loc.counts.len(), 2);
    for single in ["ERR", "MIS"] {
        let row = map.counters.iter().find(|c| c.name == single).unwrap();
        assert!(!row.per_cpu, "{single} is machine-wide");
        assert_eq!(row.counts.len(), 1);
    }
    let names: Vec<&str> = map.softirqs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
            "RCU"
        ]
    );
    // Every effective affinity is inside the configured one on this machine.
    for irq in &map.irqs {
        assert!(irq.effective().unwrap().is_subset(irq.affinity().unwrap()));
    }
}

#[test]
fn tasks_are_classified() {
    let tasks = read_tasks(&vm2(), TaskQuery::all_threads()).unwrap();
    let by_tid = |tid: u32| tasks.iter().find(|t| t.tid == tid).unwrap();
    assert_eq!(by_tid(2).comm, "kthreadd");
    assert_eq!(by_tid(2).kind, TaskKind::KthreadMovable);
    assert_eq!(by_tid(14).comm, "ksoftirqd/0");
    assert_eq!(by_tid(14).kind, TaskKind::KthreadPerCpu);
    assert_eq!(by_tid(14).allowed, list("0"));
    let migration = by_tid(18);
    assert_eq!(
        (migration.policy, migration.rt_priority),
        (Policy::Fifo, 99)
    );
    assert_eq!(migration.kind, TaskKind::KthreadPerCpu);
    assert_eq!(by_tid(12).kind, TaskKind::KthreadManaged, "unbound kworker");
    assert_eq!(by_tid(50).kind, TaskKind::KthreadMovable, "IRQ thread");
    assert_eq!(by_tid(50).policy, Policy::Fifo);
    let py = by_tid(8113);
    assert_eq!(py.kind, TaskKind::User);
    assert_eq!(py.num_threads, 4);
    assert_eq!(py.cpuset.as_deref(), Some("/"));
    assert_eq!(tasks.iter().filter(|t| t.pid == 8113).count(), 4);
}

#[test]
fn processes_carry_their_command_line() {
    let procs = read_tasks(&vm2(), TaskQuery::default()).unwrap();
    assert_eq!(procs.len(), 7, "one row per process");
    let py = procs.iter().find(|t| t.pid == 8113).unwrap();
    let cmdline = py.cmdline.as_deref().unwrap();
    assert!(cmdline.ends_with("/bin/python3 -c import threading,time\nev=threading.Event()\nfor _ in range(3): threading.Thread(target=ev.wait,daemon=True).start()\ntime.sleep(60)"), "{cmdline:?}");
    let kthreadd = procs.iter().find(|t| t.pid == 2).unwrap();
    assert_eq!(kthreadd.cmdline, None);
}

#[test]
fn seed_000_threads_with_different_masks() {
    let threads = read_tasks(&vm2(), TaskQuery::threads_of(8113)).unwrap();
    let list_ = TaskList::new(threads, false, Some(8113), &Filter::default());
    let groups = list_.mask_groups.unwrap();
    assert_eq!(groups.len(), 2, "one thread was moved with taskset -p");
    assert_eq!(groups[0].allowed, list("0-1"));
    assert_eq!(groups[0].tids.len(), 3);
    assert_eq!(groups[1].allowed, list("0"));
    assert_eq!(groups[1].tids, [8157]);
    // The filter never hides the warning.
    let threads = read_tasks(&vm2(), TaskQuery::threads_of(8113)).unwrap();
    let f = Filter::new(Some("1"), None).unwrap();
    let filtered = TaskList::new(threads, false, Some(8113), &f);
    assert_eq!(filtered.mask_groups.unwrap().len(), 2);
    assert_eq!(
        filtered.tasks.len(),
        3,
        "thread 8157 may not run on CPU 1 and did not last run there"
    );
}

#[test]
fn workqueues_and_cgroups() {
    let wq = Workqueues::read(&vm2()).unwrap();
    assert_eq!(wq.cpumask, Some(list("0-1")));
    assert_eq!(wq.cpumask_isolated, Some(CpuSet::new()));
    let names: Vec<&str> = wq.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["blkcg_punt_bio", "writeback"]);
    assert_eq!(wq.queues[1].cpumask, Some(list("0-1")));
    assert_eq!(wq.queues[1].per_cpu, Some(false));

    let cg = Cgroups::read(&vm2()).unwrap();
    assert_eq!(cg.layout, Layout::Hybrid);
    assert_eq!(cg.cpuset_version, Some(1));
    assert_eq!(cg.cpuset_mount.as_deref(), Some("/sys/fs/cgroup/cpuset"));
    assert_eq!(cg.v2_mount.as_deref(), Some("/sys/fs/cgroup/unified"));
    assert_eq!(cg.cpusets.len(), 1);
    let root = &cg.cpusets[0];
    assert_eq!(root.cpus, Some(list("0-1")));
    assert_eq!(root.sched_load_balance, Some(true));
    assert_eq!(root.tasks, 80);
    assert!(cg.isolated_cpus().is_empty());
}

#[test]
fn filters_per_view() {
    let mut irqs = IrqMap::read(&vm2()).unwrap();
    Filter::new(Some("1"), Some("virtio3-*"))
        .unwrap()
        .irqs_view(&mut irqs);
    let nums: Vec<u32> = irqs.irqs.iter().map(|i| i.irq).collect();
    assert_eq!(nums, [40, 41, 42, 43], "allowed on CPU 1, named virtio3-*");
    assert_eq!(irqs.cpus, [1], "only CPU 1's column");
    assert!(irqs.irqs.iter().all(|i| i.counts.len() == 1));
    assert!(irqs.counters.is_empty(), "no counter is named virtio3-*");

    let mut irqs = IrqMap::read(&vm2()).unwrap();
    Filter::new(None, Some("36")).unwrap().irqs_view(&mut irqs);
    assert_eq!(irqs.irqs.len(), 1, "an IRQ number is a name too");

    let mut cpus = CpuMap::read(&vm2(), &CpuSet::new()).unwrap();
    Filter::new(Some("1"), Some("POLL"))
        .unwrap()
        .cpus_view(&mut cpus);
    assert_eq!(cpus.cpus.len(), 1);
    assert_eq!(cpus.cpus[0].idle_states.len(), 1);

    let mut tasks = read_tasks(&vm2(), TaskQuery::all_threads()).unwrap();
    Filter::new(None, Some("k*"))
        .unwrap()
        .tasks_view(&mut tasks);
    let names: Vec<&str> = tasks.iter().map(|t| t.comm.as_str()).collect();
    assert_eq!(
        names,
        ["kthreadd", "kworker/u8:0-events_unbound", "ksoftirqd/0"]
    );

    assert!(Filter::new(Some("0-x"), None).is_err());
    assert!(Filter::new(None, Some("[")).is_err());
}

#[test]
fn overview_puts_irqs_on_their_effective_cpu() {
    use jitterlab_host::overview::Overview;
    let root = vm2();
    let cpus = CpuMap::read(&root, &CpuSet::new()).unwrap();
    let irqs = IrqMap::read(&root).unwrap();
    let threads = read_tasks(&root, TaskQuery::all_threads()).unwrap();
    let ov = Overview::build(&cpus, &irqs, &threads, &Filter::default());
    assert_eq!(ov.online.to_string(), "0-1");
    assert!(ov.isolated.is_empty());
    assert_eq!(ov.irqbalance, None);
    assert_eq!(ov.cpus.len(), 2);
    let on1: Vec<u32> = ov.cpus[1].irqs.iter().map(|i| i.irq).collect();
    assert!(on1.contains(&36), "the block IRQ is delivered to CPU 1");
    assert!(!ov.cpus[0].irqs.iter().any(|i| i.irq == 36));
    assert_eq!(
        ov.cpus[0].irqs.len() + ov.cpus[1].irqs.len(),
        irqs.irqs.len()
    );
    let kt0: Vec<&str> = ov.cpus[0]
        .kthreads
        .iter()
        .map(|t| t.comm.as_str())
        .collect();
    assert_eq!(
        kt0,
        ["ksoftirqd/0", "migration/0", "irq/24-ACPI:Ged"],
        "per-CPU first"
    );
    assert!(ov.cpus[1].kthreads.is_empty());
    assert_eq!(ov.cpus[0].allowed, 10);
    assert_eq!(ov.cpus[0].bound, 4);
    assert_eq!(ov.cpus[1].allowed, 6);
    assert_eq!(ov.threads, 10);
    assert_eq!(ov.processes, 7);
    assert_eq!(ov.split_masks.len(), 1, "python3 had one thread moved");
    assert_eq!(ov.split_masks[0].pid, 8113);
    assert_eq!(ov.split_masks[0].groups[1].tids, [8157]);
    let last: usize = ov.cpus.iter().map(|c| c.last_ran.len()).sum();
    assert_eq!(last, 10, "every thread last ran on exactly one CPU");
}

#[test]
fn environment_of_the_vm() {
    let env = jitterlab_host::env::Environment::read(&vm2()).unwrap();
    assert_eq!(env.kernel_release, "");
    assert!(env.cmdline.contains("mitigations=auto"));
    assert_eq!(env.cpuidle_driver.as_deref(), Some("haltpoll"));
    assert!(env.cpufreq_governors.is_empty());
    let steal = jitterlab_host::env::steal_ticks(&vm2()).unwrap();
    assert_eq!(steal.len(), 2);
    assert_eq!(steal[0].0, 0);
}

#[test]
fn environment_live() {
    let env = jitterlab_host::env::Environment::read(&jitterlab_host::Root::live()).unwrap();
    assert!(!env.kernel_release.is_empty());
    assert!(
        ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT", "none/voluntary"]
            .contains(&env.preemption.as_str())
    );
}
