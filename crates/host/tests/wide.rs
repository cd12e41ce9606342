//! Machines this VM is not: 16 CPUs with offline ones and boot isolation,
//! 128 CPUs with masks over 32 CPUs, cgroup v2 partitions, several actions per IRQ.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::cgroups::Layout;
use jitterlab_host::cpus::IsolationReason;
use jitterlab_host::{set_default_affinity, set_irq_affinity, Cgroups, CpuMap, IrqMap, Workqueues};

use crate::fake::{interrupts, machine};

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn sixteen() -> crate::fake::Tree {
    let online = list("0-11");
    let t = machine(
        16,
        &online,
        "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=0-15 irqaffinity=0-1",
    );
    t.file("/sys/devices/system/cpu/isolated", "2-3\n")
        .file("/sys/devices/system/cpu/nohz_full", "2-3\n")
        .file(
            "/proc/self/mountinfo",
            "22 27 0:21 / /proc rw - proc proc rw\n30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        )
        .file("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
        .file("/sys/fs/cgroup/cpuset.cpus.effective", "0-11\n")
        .file("/sys/fs/cgroup/cpuset.mems.effective", "0-1\n")
        .file("/sys/fs/cgroup/cgroup.threads", "1\n2\n3\n")
        .file("/sys/fs/cgroup/rt/cpuset.cpus", "4-5\n")
        .file("/sys/fs/cgroup/rt/cpuset.cpus.effective", "4-5\n")
        .file("/sys/fs/cgroup/rt/cpuset.mems", "\n")
        .file("/sys/fs/cgroup/rt/cpuset.cpus.partition", "isolated\n")
        .file("/sys/fs/cgroup/rt/cgroup.threads", "4242\n")
        .file("/sys/fs/cgroup/bad/cpuset.cpus", "6\n")
        .file("/sys/fs/cgroup/bad/cpuset.cpus.effective", "6\n")
        .file(
            "/sys/fs/cgroup/bad/cpuset.cpus.partition",
            "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n",
        )
        .file("/sys/fs/cgroup/system.slice/cgroup.threads", "7\n")
        .file(
            "/proc/interrupts",
            &interrupts(
                &online,
                &[
                    ("0", 40, "IR-IO-APIC    2-edge      timer"),
                    ("16", 3, "IR-IO-APIC   16-fasteoi   ehci_hcd:usb1, i801_smbus"),
                    ("LOC", 1000, "Local timer interrupts"),
                    ("ERR", 0, ""),
                    ("MIS", 0, ""),
                ],
            ),
        )
        .file("/proc/irq/16/smp_affinity_list", "0-1\n")
        .file("/proc/irq/16/effective_affinity_list", "1\n")
        .file("/proc/irq/0/smp_affinity_list", "0-11\n")
        .file("/proc/irq/default_smp_affinity", "003\n");
    t
}

#[test]
fn sixteen_cpus_offline_and_isolated() {
    let t = sixteen();
    let root = t.root();
    let cg = Cgroups::read(&root).unwrap();
    assert_eq!(cg.layout, Layout::V2);
    assert_eq!(cg.cpuset_version, Some(2));
    let paths: Vec<&str> = cg.cpusets.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/", "/bad", "/rt"],
        "system.slice has no cpuset files"
    );
    assert_eq!(cg.cpusets[2].partition.as_deref(), Some("isolated"));
    assert_eq!(cg.cpusets[2].tasks, 1);
    assert_eq!(
        cg.isolated_cpus(),
        list("4-5"),
        "an invalid partition isolates nothing"
    );

    let map = CpuMap::read(&root, &cg.isolated_cpus()).unwrap();
    assert_eq!(map.possible, list("0-15"));
    assert_eq!(map.online, list("0-11"));
    assert_eq!(map.cpus.len(), 16);
    let c2 = map.cpu(2).unwrap();
    assert_eq!(
        c2.isolation,
        [
            IsolationReason::Isolcpus,
            IsolationReason::SchedDomain,
            IsolationReason::NohzFull,
            IsolationReason::RcuNocbs
        ]
    );
    assert_eq!(
        map.cpu(4).unwrap().isolation,
        [IsolationReason::RcuNocbs, IsolationReason::CpusetPartition]
    );
    // rcu_nocbs for every CPU (a common firmware workaround) isolates nothing.
    assert_eq!(map.cpu(0).unwrap().isolation, [IsolationReason::RcuNocbs]);
    let irqs = IrqMap::read(&root).unwrap();
    let ov = jitterlab_host::Overview::build(&map, &irqs, &[], &jitterlab_host::Filter::default());
    assert_eq!(ov.isolated, list("2-5"));
    assert_eq!(ov.online, list("0-11"));
    assert!(!ov.cpus[0].isolated);
    assert!(ov.cpus[2].isolated && ov.cpus[4].isolated);
    assert!(!ov.cpus[14].online);
    assert_eq!(map.boot.isolcpus_flags, ["managed_irq", "domain"]);
    assert_eq!(map.boot.irqaffinity, Some(list("0-1")));
    let c3 = map.cpu(3).unwrap();
    assert_eq!(c3.smt_siblings, Some(list("3,11")));
    assert_eq!(c3.node, Some(0));
    assert_eq!(map.cpu(6).unwrap().node, Some(1));
    let freq = c3.freq.as_ref().unwrap();
    assert_eq!(freq.governor.as_deref(), Some("performance"));
    assert_eq!(freq.cur_khz, Some(2_400_000));
    assert!(c3.idle_states[2].disabled);
    let c14 = map.cpu(14).unwrap();
    assert!(!c14.online);
    assert_eq!(c14.core_id, None, "offline CPUs have no topology");
    assert!(c14.idle_states.is_empty());

    // Offline and absent CPUs are refused by name.
    let e = map.check_online(&list("10-13")).unwrap_err().to_string();
    assert_eq!(e, "CPU 12-13 is offline (online: 0-11)");
    let e = map.check_online(&list("15-16")).unwrap_err().to_string();
    assert_eq!(e, "CPU 16 does not exist (this machine has CPUs 0-15)");
    assert!(map.check_online(&CpuSet::new()).is_err());
    map.check_online(&list("0-11")).unwrap();
}

#[test]
fn twelve_count_columns_for_twelve_online_cpus() {
    let t = sixteen();
    let map = IrqMap::read(&t.root()).unwrap();
    assert_eq!(map.cpus, (0..12).collect::<Vec<_>>());
    let usb = map.irq(16).unwrap();
    assert_eq!(
        usb.actions().collect::<Vec<_>>(),
        ["ehci_hcd:usb1", "i801_smbus"],
        "no sysfs: parsed from the row"
    );
    assert_eq!(usb.chip(), "IR-IO-APIC");
    assert_eq!(usb.trigger(), Some("fasteoi"));
    assert_eq!(usb.counts, vec![3; 12]);
    assert_eq!(usb.total(), 36);
    assert_eq!(usb.effective().cloned(), Some(list("1")));
    assert_eq!(map.irq(0).unwrap().actions().collect::<Vec<_>>(), ["timer"]);
    assert_eq!(map.default_affinity, Some(list("0-1")), "mask 003");
    let err = map.counters.iter().find(|c| c.name == "ERR").unwrap();
    assert!(!err.per_cpu);
}

fn one_twenty_eight() -> crate::fake::Tree {
    let online = CpuSet::first_n(128);
    let t = machine(128, &online, "quiet");
    t.file(
        "/proc/interrupts",
        &interrupts(
            &online,
            &[
                (
                    "100",
                    1,
                    "IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_comp0@pci:0000:3b:00.0",
                ),
                (
                    "101",
                    0,
                    "IR-PCI-MSI-0000:00:1f.6  520192-edge  garbled text",
                ),
                ("NMI", 0, "Non-maskable interrupts"),
            ],
        ),
    )
    .file("/proc/irq/100/smp_affinity_list", "0-3,64-127\n")
    .file(
        "/proc/irq/100/smp_affinity",
        "ffffffff,ffffffff,00000000,0000000f\n",
    )
    .file("/proc/irq/100/effective_affinity_list", "64\n")
    .file(
        "/proc/irq/100/affinity_hint",
        "00000000,00000000,00000000,00000001\n",
    )
    .file("/proc/irq/100/node", "1\n")
    .file("/proc/irq/101/smp_affinity_list", "0-127\n")
    .file("/sys/kernel/irq/101/chip_name", "IR-PCI-MSI-0000:00:1f.6\n")
    .file("/sys/kernel/irq/101/hwirq", "520192\n")
    .file("/sys/kernel/irq/101/type", "edge\n")
    .file("/sys/kernel/irq/101/actions", "eth0-rx,eth0-tx\n")
    .file(
        "/proc/irq/default_smp_affinity",
        "ffffffff,ffffffff,ffffffff,ffffffff\n",
    )
    .file(
        "/sys/devices/virtual/workqueue/cpumask",
        "ffffffff,ffffffff,ffffffff,fffffff0\n",
    )
    .file("/sys/devices/virtual/workqueue/writeback/per_cpu", "0\n")
    .file(
        "/sys/devices/virtual/workqueue/writeback/cpumask",
        "00000000,00000001,00000000,00000000\n",
    )
    .file(
        "/sys/devices/virtual/workqueue/writeback/max_active",
        "256\n",
    )
    .file("/sys/devices/virtual/workqueue/mm_percpu_wq/per_cpu", "1\n")
    .file(
        "/sys/devices/virtual/workqueue/mm_percpu_wq/max_active",
        "256\n",
    );
    t
}

#[test]
fn wide_masks_over_32_cpus() {
    let t = one_twenty_eight();
    let root = t.root();
    let map = IrqMap::read(&root).unwrap();
    assert_eq!(map.cpus.len(), 128);
    let nic = map.irq(100).unwrap();
    assert_eq!(nic.affinity().cloned(), Some(list("0-3,64-127")));
    assert_eq!(nic.effective().cloned(), Some(list("64")));
    assert_eq!(nic.affinity_hint().cloned(), Some(list("0")));
    assert_eq!(nic.node(), Some(1));
    assert_eq!(nic.counts.len(), 128);
    assert_eq!(map.default_affinity, Some(CpuSet::first_n(128)));
    // Several actions from sysfs, which wins over the /proc/interrupts text.
    let eth = map.irq(101).unwrap();
    assert_eq!(eth.actions().collect::<Vec<_>>(), ["eth0-rx", "eth0-tx"]);
    assert_eq!(eth.chip(), "IR-PCI-MSI-0000:00:1f.6");
    assert_eq!(eth.hwirq(), Some("520192"));
    assert_eq!(
        eth.effective().cloned(),
        None,
        "no effective_affinity_list: delivered_to falls back"
    );
    assert_eq!(eth.delivered_to(), Some(&CpuSet::first_n(128)));
    // The list file and the mask file agree.
    let mask = root.read_cpu_mask("/proc/irq/100/smp_affinity").unwrap();
    assert_eq!(Some(mask), nic.affinity().cloned());

    let wq = Workqueues::read(&root).unwrap();
    assert_eq!(wq.cpumask, Some(list("4-127")));
    let wb = wq.queues.iter().find(|q| q.name == "writeback").unwrap();
    assert_eq!(wb.cpumask, Some(list("64")));
    let pcpu = wq.queues.iter().find(|q| q.name == "mm_percpu_wq").unwrap();
    assert_eq!((pcpu.per_cpu, &pcpu.cpumask), (Some(true), &None));

    let cpus = CpuMap::read(&root, &CpuSet::new()).unwrap();
    assert_eq!(cpus.cpus.len(), 128);
    assert_eq!(cpus.cpu(100).unwrap().smt_siblings, Some(list("36,100")));
}

#[test]
fn irq_writes_read_back_both_masks() {
    let t = one_twenty_eight();
    let root = t.root();
    let map = IrqMap::read(&root).unwrap();
    let nic = map.irq(100).unwrap();
    // The fixture file accepts the write; its effective mask stays at 64, which
    // is outside the request: the kernel moves an edge IRQ when it next fires.
    let change = set_irq_affinity(&root, nic, &list("0-1"));
    assert_eq!(change.old_affinity, Some(list("0-3,64-127")));
    assert_eq!(change.new_affinity, Some(list("0-1")));
    assert_eq!(change.new_effective, Some(list("64")));
    assert_eq!(change.outcome, jitterlab_host::irqs::IrqOutcome::Pending);
    let change = set_irq_affinity(&root, nic, &list("64-65"));
    assert_eq!(change.outcome, jitterlab_host::irqs::IrqOutcome::Subset);
    let change = set_irq_affinity(&root, nic, &list("64"));
    assert_eq!(change.outcome, jitterlab_host::irqs::IrqOutcome::Applied);

    let d = set_default_affinity(&root, &list("0,96")).unwrap();
    assert_eq!(d.old, CpuSet::first_n(128));
    assert_eq!(d.new, list("0,96"));
    assert_eq!(
        std::fs::read_to_string(t.path().join("proc/irq/default_smp_affinity")).unwrap(),
        "1,00000000,00000000,00000001"
    );
}

#[test]
fn unreadable_masks_give_unknown_never_applied() {
    let t = sixteen();
    let root = t.root();
    let map = IrqMap::read(&root).unwrap();
    // The write succeeds but the effective mask read back is garbage.
    t.file("/proc/irq/16/effective_affinity_list", "garbage\n");
    let change = set_irq_affinity(&root, map.irq(16).unwrap(), &list("1"));
    assert_eq!(change.outcome, jitterlab_host::irqs::IrqOutcome::Unknown);
    assert_eq!(change.new_affinity, Some(list("1")));
    let e = change.error.unwrap();
    assert!(e.contains("proc/irq/16/effective_affinity_list"), "{e}");
    // A write that fails is a refusal, reported with the IRQ, not an abort.
    std::fs::remove_file(t.path().join("proc/irq/0/smp_affinity_list")).unwrap();
    std::fs::create_dir(t.path().join("proc/irq/0/smp_affinity_list")).unwrap();
    let change = set_irq_affinity(&root, map.irq(0).unwrap(), &list("1"));
    assert_eq!(change.outcome, jitterlab_host::irqs::IrqOutcome::Refused);
    assert!(change.error.is_some());
}

#[test]
fn v1_noprefix_cpuset_like_cset_shield() {
    // `mount -t cpuset` (cset) gives file names without the cpuset. prefix.
    let t = crate::fake::Tree::new();
    t.file(
        "/proc/self/mountinfo",
        "40 23 0:37 / /cpusets rw,relatime - cgroup cgroup rw,cpuset,noprefix,release_agent=/sbin/cpuset_release_agent\n",
    )
    .file("/cpusets/cpus", "0-3\n")
    .file("/cpusets/mems", "0\n")
    .file("/cpusets/cpu_exclusive", "1\n")
    .file("/cpusets/sched_load_balance", "0\n")
    .file("/cpusets/tasks", "1\n2\n")
    .file("/cpusets/system/cpus", "0\n")
    .file("/cpusets/system/sched_load_balance", "1\n")
    .file("/cpusets/system/tasks", "100\n")
    .file("/cpusets/user/cpus", "1-3\n")
    .file("/cpusets/user/cpu_exclusive", "1\n")
    .file("/cpusets/user/sched_load_balance", "0\n")
    .file("/cpusets/user/tasks", "4242\n");
    let cg = Cgroups::read(&t.root()).unwrap();
    assert_eq!(cg.layout, Layout::V1);
    assert!(cg.cpuset_noprefix);
    let paths: Vec<&str> = cg.cpusets.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/", "/system", "/user"]);
    assert_eq!(cg.cpusets[2].cpus, Some(list("1-3")));
    assert_eq!(cg.cpusets[2].cpu_exclusive, Some(true));
    assert_eq!(cg.cpusets[0].sched_load_balance, Some(false));
    assert_eq!(
        cg.isolated_cpus(),
        list("1-3"),
        "no balanced cpuset covers 1-3"
    );
}

#[test]
fn bind_mounted_cpuset_subtree_keeps_its_path() {
    let t = crate::fake::Tree::new();
    t.file(
        "/proc/self/mountinfo",
        "34 31 0:31 /lxc/box /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n",
    )
    .file("/sys/fs/cgroup/cpuset/cpuset.cpus", "2-3\n")
    .file("/sys/fs/cgroup/cpuset/app/cpuset.cpus", "3\n");
    let cg = Cgroups::read(&t.root()).unwrap();
    assert_eq!(cg.cpuset_mount_root.as_deref(), Some("/lxc/box"));
    let paths: Vec<&str> = cg.cpusets.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/lxc/box", "/lxc/box/app"]);
}
