//! `jitterlab audit`'s static checks on three trees: audit-vm2 (this VM as captured,
//! untuned), audit-irqbalance (the same VM with irqbalance running) and audit-rt16 (a
//! made-up, tuned 16-CPU PREEMPT_RT machine whose isolation options disagree; made by
//! fixtures/make-rt16.sh), and on copies of them with one file changed. Every check
//! fires on one tree and stays silent on another.

use std::fs;
use std::path::{Path, PathBuf};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::lint::{
    default_rt_cpus, static_checks, Finding, FixKind, Severity, StaticAudit,
};
use jitterlab_host::Root;

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&e.path(), &dest);
        } else if kind.is_symlink() {
            // A namespace link, kept as its text (`pid:[4026531836]`).
            let _ = fs::remove_file(&dest);
            std::os::unix::fs::symlink(fs::read_link(e.path()).unwrap(), dest).unwrap();
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A tree: a committed one, or a copy of one with files replaced (`path=content`); a
/// name `BASE+OVERLAY` is BASE with the tree OVERLAY laid over it (`env/container`:
/// what the container check reads, captured in a container).
struct Tree {
    root: Root,
    _tmp: Option<tempfile::TempDir>,
}

fn tree(name: &str, changes: &[(&str, &str)]) -> Tree {
    let (base, overlay) = match name.split_once('+') {
        Some((b, o)) => (b, Some(o)),
        None => (name, None),
    };
    if changes.is_empty() && overlay.is_none() {
        return Tree {
            root: Root::at(dir(name)),
            _tmp: None,
        };
    }
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&dir(base), tmp.path());
    if let Some(o) = overlay {
        copy_tree(&dir(o), tmp.path());
    }
    for (p, content) in changes {
        let path = tmp.path().join(p.trim_start_matches('/'));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    Tree {
        root: Root::at(tmp.path()),
        _tmp: Some(tmp),
    }
}

fn audit(t: &Tree, rt: &str) -> StaticAudit {
    static_checks(&t.root, &list(rt)).unwrap()
}

fn ids(a: &StaticAudit) -> Vec<&str> {
    a.findings.iter().map(|f| f.id.as_str()).collect()
}

fn get<'a>(a: &'a StaticAudit, id: &str) -> &'a Finding {
    a.findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("{id} not in {:?}", ids(a)))
}

const RT16_CONFIG: &str = "/boot/config-6.18.0-rt";

/// (check, tree it fires on, RT CPUs, changes; tree it is silent on, RT CPUs, changes)
type Case = (
    &'static str,
    (
        &'static str,
        &'static str,
        Vec<(&'static str, &'static str)>,
    ),
    (
        &'static str,
        &'static str,
        Vec<(&'static str, &'static str)>,
    ),
);

fn cases() -> Vec<Case> {
    let vm2 = |rt| ("audit-vm2", rt, vec![]);
    let rt16 = || ("audit-rt16", "2-7", vec![]);
    let rt16_with = |c: Vec<(&'static str, &'static str)>| ("audit-rt16", "2-7", c);
    vec![
        ("kernel.preempt_rt", vm2("1"), rt16()),
        ("kernel.preempt_mode", vm2("1"), rt16()),
        ("kernel.periodic_tick", rt16_with(vec![(RT16_CONFIG, "CONFIG_HZ_PERIODIC=y\nCONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\nCONFIG_RCU_NOCB_CPU=y\nCONFIG_HIGH_RES_TIMERS=y\n")]), rt16()),
        ("kernel.no_hz_full", vm2("1"), rt16()),
        ("kernel.rcu_nocb", rt16_with(vec![(RT16_CONFIG, "CONFIG_PREEMPT_RT=y\nCONFIG_NO_HZ_FULL=y\nCONFIG_HIGH_RES_TIMERS=y\n")]), rt16()),
        ("kernel.high_res_timers", rt16_with(vec![(RT16_CONFIG, "CONFIG_PREEMPT_RT=y\nCONFIG_NO_HZ_FULL=y\nCONFIG_RCU_NOCB_CPU=y\n")]), rt16()),
        ("kernel.clocksource", rt16_with(vec![("/sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n")]), rt16()),
        ("kernel.tsc_reliable", vm2("1"), rt16()),
        ("cmdline.disagree", rt16(), vm2("1")),
        ("cmdline.isolcpus", vm2("1"), rt16()),
        ("cmdline.managed_irq", rt16(), vm2("1")),
        ("cmdline.nohz_full", rt16(), ("audit-rt16", "2-5", vec![])),
        ("cmdline.rcu_nocbs", vm2("1"), rt16()),
        ("cmdline.irqaffinity", rt16(), vm2("1")),
        ("cmdline.kthread_cpus", rt16_with(vec![("/proc/cmdline", "isolcpus=2-7 kthread_cpus=0-3\n")]), rt16()),
        ("cmdline.skew_tick", vm2("1"), rt16()),
        ("cmdline.softlockup", vm2("1"), rt16()),
        ("cmdline.nmi_watchdog", rt16_with(vec![("/proc/sys/kernel/nmi_watchdog", "1\n")]), vm2("1")),
        ("power.governor", rt16_with(vec![("/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor", "powersave\n")]), rt16()),
        ("power.frequency", rt16_with(vec![("/sys/devices/system/cpu/cpu5/cpufreq/scaling_cur_freq", "800000\n")]), rt16()),
        ("power.idle_states", vm2("1"), rt16()),
        ("power.smt", rt16_with(vec![("/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2,10\n")]), rt16()),
        ("irqs.on_rt_cpu", vm2("1"), rt16()),
        ("irqs.managed", vm2("1"), ("audit-rt16", "2-3", vec![])),
        ("irqs.default_affinity", vm2("1"), rt16()),
        ("irqs.pending_move", ("audit-vm2", "1", vec![("/proc/irq/26/smp_affinity_list", "0\n")]), vm2("1")),
        ("irqs.irqbalance", ("audit-irqbalance", "1", vec![]), vm2("1")),
        ("sched.rt_runtime", vm2("1"), rt16()),
        ("sched.timer_migration", vm2("1"), rt16()),
        ("sched.workqueue", vm2("1"), rt16()),
        ("sched.kthreads", vm2("1"), rt16()),
        ("sched.user_threads", vm2("1"), rt16()),
        (
            "sched.init_threads",
            rt16_with(vec![
                ("/proc/1/status", "Name:\tsystemd\nTgid:\t1\nPid:\t1\nPPid:\t0\nThreads:\t1\nCpus_allowed_list:\t0-15\n"),
                ("/proc/1/task/1/status", "Name:\tsystemd\nTgid:\t1\nPid:\t1\nPPid:\t0\nThreads:\t1\nCpus_allowed_list:\t0-15\n"),
            ]),
            rt16(),
        ),
        ("sched.partition", vm2("1"), rt16()),
        ("mem.stat_interval", vm2("1"), rt16()),
        ("mem.numa_balancing", rt16_with(vec![("/proc/sys/kernel/numa_balancing", "1\n")]), vm2("1")),
        ("mem.thp", rt16_with(vec![("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")]), vm2("1")),
        ("mem.swap", rt16_with(vec![("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/sda3 partition\t8388604\t0\t-2\n")]), vm2("1")),
        ("limits.rtprio", vm2("1"), rt16()),
        ("limits.memlock", vm2("1"), rt16()),
        ("env.hypervisor", vm2("1"), rt16()),
        (
            "env.container",
            ("audit-vm2+env/container", "1", vec![]),
            ("audit-vm2+env/vm-dockerenv", "1", vec![]),
        ),
        ("env.steal", vm2("1"), rt16()),
    ]
}

#[test]
fn every_check_fires_on_one_tree_and_not_on_another() {
    let mut seen = Vec::new();
    for (id, (on, on_rt, on_changes), (off, off_rt, off_changes)) in cases() {
        let fired = audit(&tree(on, &on_changes), on_rt);
        assert!(
            ids(&fired).contains(&id),
            "{id} does not fire on {on} {on_changes:?}: {:?}",
            ids(&fired)
        );
        let silent = audit(&tree(off, &off_changes), off_rt);
        assert!(
            !ids(&silent).contains(&id),
            "{id} fires on {off}: {:?}",
            get(&silent, id)
        );
        let f = get(&fired, id);
        assert!(
            !f.evidence.is_empty() && !f.why.is_empty(),
            "{id}: evidence and why: {f:?}"
        );
        assert!(
            f.evidence.iter().all(|e| e.path.starts_with('/')),
            "{id}: {f:?}"
        );
        seen.push(id);
    }
    // Every id any tree produced has a case.
    for (t, rt) in [
        ("audit-vm2", "1"),
        ("audit-irqbalance", "1"),
        ("audit-rt16", "2-7"),
    ] {
        for f in &audit(&tree(t, &[]), rt).findings {
            assert!(seen.contains(&f.id.as_str()), "{} on {t} has no case", f.id);
        }
    }
}

#[test]
fn the_vm_untuned() {
    let a = audit(&tree("audit-vm2", &[]), "1");
    assert_eq!(a.housekeeping, list("0"));
    // The managed virtio block IRQ on CPU 1, and only a boot option moves it.
    let m = get(&a, "irqs.managed");
    assert_eq!(m.subject, "IRQ 36");
    assert!(m.what.contains("virtio1-req.0"), "{}", m.what);
    let fix = m.fix.as_ref().unwrap();
    assert_eq!(
        (fix.kind, fix.apply.as_str(), fix.needs_reboot),
        (FixKind::Boot, "isolcpus=managed_irq,domain,1", true)
    );
    assert!(m.needs_reboot);
    // Movable IRQs on CPU 1 are moved at run time; the one that fired is Medium.
    let ttys = a.findings.iter().find(|f| f.subject == "IRQ 26").unwrap();
    assert_eq!(
        (ttys.id.as_str(), ttys.severity),
        ("irqs.on_rt_cpu", Severity::Medium)
    );
    assert_eq!(
        ttys.fix.as_ref().unwrap().apply,
        "jitterlab irq set 26 0 (jitterlab isolate 1 moves every IRQ)"
    );
    assert!(!ttys.needs_reboot);
    // No IRQ whose effective CPU is 0 is named.
    assert!(
        a.findings.iter().all(|f| f.subject != "IRQ 39"),
        "virtio2-output.0 is on CPU 0"
    );
    // The kernel: not PREEMPT_RT, with the evidence read.
    let k = get(&a, "kernel.preempt_rt");
    assert_eq!(k.evidence[0].path, "/proc/version");
    assert!(k.evidence[0].value.contains("PREEMPT_DYNAMIC"));
    assert!(
        k.evidence
            .iter()
            .any(|e| e.path == "/proc/config.gz" && e.value == "CONFIG_PREEMPT_RT=is not set"),
        "{:?}",
        k.evidence
    );
    assert_eq!(a.kernel_config.as_deref(), Some("/proc/config.gz"));
    // The hypervisor.
    let h = get(&a, "env.hypervisor");
    assert_eq!(h.what, "this is a virtual machine under KVM");
    assert_eq!(
        (h.evidence[0].path.as_str(), h.evidence[0].value.as_str()),
        (
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "kvm-clock"
        )
    );
    // Sysctls name the key and value.
    assert!(get(&a, "sched.rt_runtime")
        .fix
        .as_ref()
        .unwrap()
        .apply
        .starts_with("sysctl -w kernel.sched_rt_runtime_us=-1"));
    // A fixture tree is not the live host: nothing needed root.
    assert!(a.needs_root.is_empty(), "{:?}", a.needs_root);
}

#[test]
fn sixteen_cpus_with_disagreeing_options() {
    let t = tree("audit-rt16", &[]);
    assert_eq!(default_rt_cpus(&t.root).unwrap(), list("2-7"));
    let a = audit(&t, "2-7");
    let d = get(&a, "cmdline.disagree");
    assert_eq!(
        d.what,
        "the isolation options name different CPUs: isolcpus=2-7 nohz_full=2-5 rcu_nocbs=4-9"
    );
    assert_eq!(d.cpus, Some(list("2-7")));
    assert_eq!(d.evidence.len(), 3);
    assert!(d
        .fix
        .as_ref()
        .unwrap()
        .apply
        .starts_with("isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7"));
    assert_eq!(get(&a, "cmdline.nohz_full").cpus, Some(list("6-7")));
    assert_eq!(
        get(&a, "cmdline.irqaffinity").fix.as_ref().unwrap().apply,
        "irqaffinity=0-1,8-15"
    );
    assert_eq!(get(&a, "irqs.managed").cpus, Some(list("4")));
    // The application pinned to CPU 4 is not a finding; init and kthreadd stay on 0-1.
    assert!(!ids(&a).contains(&"sched.user_threads"));
    // Nothing about the kernel: PREEMPT_RT, HZ 1000, NO_HZ_FULL, RCU_NOCB, tsc=reliable.
    assert!(
        a.findings.iter().all(|f| !f.id.starts_with("kernel.")),
        "{:?}",
        ids(&a)
    );
}

#[test]
fn default_cpus_without_isolation_are_the_last() {
    assert_eq!(
        default_rt_cpus(&tree("audit-vm2", &[]).root).unwrap(),
        list("1")
    );
}

#[test]
fn all_cpus_or_offline_cpus_are_refused() {
    let t = tree("audit-vm2", &[]);
    let e = static_checks(&t.root, &list("0-1"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("an audit needs one left"), "{e}");
    assert!(static_checks(&t.root, &list("7")).is_err());
}

/// A file a container manager leaves is a claim; the kernel must agree. This VM has a
/// stray /.dockerenv (env/vm-dockerenv, captured here) in its initial namespaces: no
/// container. The same check in a container made as docker makes one
/// (env/container.sh: its own PID and cgroup namespaces, an overlay root, a
/// /.dockerenv) finds one and says what it rests on.
#[test]
fn a_container_needs_the_kernel_to_agree() {
    use jitterlab_host::env::container::{Container, Weight};
    let vm = tree("audit-vm2+env/vm-dockerenv", &[]);
    let c = Container::read(&vm.root);
    assert_eq!(c.kind, None, "{c:?}");
    assert_eq!(c.of(Weight::Marker).next().unwrap().path, "/.dockerenv");
    let host: Vec<&str> = c.of(Weight::Host).map(|c| c.path.as_str()).collect();
    assert_eq!(host, ["/proc/self/ns/pid", "/proc/self/ns/cgroup"], "{c:?}");
    assert!(!ids(&audit(&vm, "1")).contains(&"env.container"));

    let ct = tree("audit-vm2+env/container", &[]);
    let c = Container::read(&ct.root);
    assert_eq!(c.kind.as_deref(), Some("docker"), "{c:?}");
    let signs: Vec<&str> = c.of(Weight::Sign).map(|c| c.path.as_str()).collect();
    assert_eq!(
        signs,
        ["/proc/self/ns/pid", "/proc/self/ns/cgroup"],
        "{c:?}"
    );
    assert_eq!(c.of(Weight::Hint).next().unwrap().value, "/ is overlay");
    let a = audit(&ct, "1");
    let f = get(&a, "env.container");
    assert_eq!(
        f.what,
        "this runs in a container (docker), as /proc/self/ns/pid, /proc/self/ns/cgroup, \
         /proc/self/mountinfo show"
    );
    let paths: Vec<&str> = f.evidence.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/.dockerenv",
            "/proc/self/ns/pid",
            "/proc/self/ns/cgroup",
            "/proc/self/mountinfo"
        ]
    );
    assert!(
        f.evidence[1].value.contains("a PID namespace of its own"),
        "{f:?}"
    );

    // The manager's variable in PID 1's environment is the kernel's word too, and
    // names it; an overlay root without a marker is a live CD as much as a container.
    let lxc = tree(
        "audit-vm2+env/vm-dockerenv",
        &[("/proc/1/environ", "container=lxc\0")],
    );
    assert_eq!(Container::read(&lxc.root).kind.as_deref(), Some("lxc"));
    let mounts = fs::read_to_string(dir("env/container/proc/self/mountinfo")).unwrap();
    let live_cd = tree("audit-vm2", &[("/proc/self/mountinfo", &mounts)]);
    assert_eq!(Container::read(&live_cd.root).kind, None);
}

/// The hypervisor by name: /sys/hypervisor/type, then CPUID's signature (live only),
/// then the kernel's paravirtual clocksource, then the firmware's vendor; the CPU's
/// flag alone says only "virtual".
#[test]
fn the_hypervisor_by_name() {
    use jitterlab_host::env::Hypervisor;
    let name = |t: &Tree, cpuid: Option<[u8; 12]>| {
        Hypervisor::read_with(&t.root, cpuid)
            .unwrap()
            .map(|h| h.describe())
    };
    let clocks = "/sys/devices/system/clocksource/clocksource0/available_clocksource";
    let vm = tree("audit-vm2", &[]);
    assert_eq!(
        name(&vm, None).as_deref(),
        Some(&*format!("KVM, {clocks}: kvm-clock"))
    );
    // CPUID's own signature comes before the clocksource.
    assert_eq!(
        name(&vm, Some(*b"Microsoft Hv")).as_deref(),
        Some("Hyper-V, CPUID 0x40000000: Microsoft Hv")
    );
    // An unknown signature says nothing.
    assert_eq!(
        name(&vm, Some(*b"GenuineIntel")).as_deref(),
        Some(&*format!("KVM, {clocks}: kvm-clock"))
    );
    let xen = tree("audit-vm2", &[("/sys/hypervisor/type", "xen\n")]);
    assert_eq!(
        name(&xen, Some(*b"KVMKVMKVM\0\0\0")).as_deref(),
        Some("Xen, /sys/hypervisor/type: xen")
    );
    let flag_only = tree("audit-vm2", &[(clocks, "tsc hpet acpi_pm\n")]);
    assert_eq!(
        name(&flag_only, None).as_deref(),
        Some("hypervisor flag in /proc/cpuinfo")
    );
    let a = audit(&flag_only, "1");
    assert!(get(&a, "env.hypervisor").what.contains("nothing names"));
    let dmi = tree(
        "audit-vm2",
        &[
            (clocks, "tsc hpet\n"),
            ("/sys/class/dmi/id/sys_vendor", "VMware, Inc.\n"),
        ],
    );
    assert_eq!(
        name(&dmi, None).as_deref(),
        Some("VMware, /sys/class/dmi/id/sys_vendor: VMware, Inc.")
    );
    // Hardware: no flag, no name.
    assert_eq!(name(&tree("audit-rt16", &[]), None), None);
}
