//! The readers agree with the live host's own files.

use std::collections::BTreeSet;
use std::fs;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::{read_tasks, Cgroups, CpuMap, IrqMap, Root, TaskQuery, Workqueues};

fn numeric_dirs(path: &str) -> BTreeSet<u32> {
    fs::read_dir(path)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

#[test]
fn irq_numbers_and_counts_match_proc_interrupts() {
    let before = fs::read_to_string("/proc/interrupts").unwrap();
    let map = IrqMap::read(&Root::live()).unwrap();
    let after = fs::read_to_string("/proc/interrupts").unwrap();
    let labels = |text: &str| -> Vec<u32> {
        text.lines()
            .skip(1)
            .filter_map(|l| l.split(':').next()?.trim().parse().ok())
            .collect()
    };
    let ours: Vec<u32> = map.irqs.iter().map(|i| i.irq).collect();
    assert_eq!(ours, labels(&before));
    // Counts only grow: ours lie between the two raw reads.
    let counts = |text: &str, irq: u32| -> Vec<u64> {
        let line = text
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(&irq.to_string()))
            .unwrap();
        line.split(':')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .take(map.cpus.len())
            .map(|n| n.parse().unwrap())
            .collect()
    };
    for irq in &map.irqs {
        let (lo, hi) = (counts(&before, irq.irq), counts(&after, irq.irq));
        for c in 0..map.cpus.len() {
            assert!(
                lo[c] <= irq.counts[c] && irq.counts[c] <= hi[c],
                "IRQ {} CPU {c}",
                irq.irq
            );
        }
        let sys = fs::read_to_string(format!("/proc/irq/{}/smp_affinity_list", irq.irq)).unwrap();
        assert_eq!(
            irq.affinity().cloned(),
            Some(CpuSet::parse_list(&sys).unwrap())
        );
    }
    let online =
        CpuSet::parse_list(&fs::read_to_string("/sys/devices/system/cpu/online").unwrap()).unwrap();
    assert_eq!(map.cpus, online.iter().collect::<Vec<_>>());
}

#[test]
fn task_count_matches_proc() {
    let before = numeric_dirs("/proc");
    let procs = read_tasks(&Root::live(), TaskQuery::default()).unwrap();
    let after = numeric_dirs("/proc");
    let ours: BTreeSet<u32> = procs.iter().map(|t| t.pid).collect();
    // Every pid present in both listings is ours, and we have nothing that was in neither.
    for pid in before.intersection(&after) {
        assert!(ours.contains(pid), "pid {pid} missing");
    }
    for pid in &ours {
        assert!(
            before.contains(pid) || after.contains(pid),
            "pid {pid} invented"
        );
    }
    let me = std::process::id();
    let mine = procs.iter().find(|t| t.pid == me).unwrap();
    assert_eq!(mine.kind, jitterlab_host::tasks::TaskKind::User);
    let threads = read_tasks(&Root::live(), TaskQuery::threads_of(me)).unwrap();
    assert!(threads.iter().any(|t| t.tid == me));
    assert!(threads.iter().all(|t| t.pid == me));
}

#[test]
fn own_affinity_matches_sched_getaffinity() {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let me = std::process::id();
    let threads = read_tasks(&Root::live(), TaskQuery::threads_of(me)).unwrap();
    let row = threads.iter().find(|t| t.tid == tid).unwrap();
    assert_eq!(
        row.allowed,
        jitterlab_host::sched::get_affinity(tid).unwrap()
    );
}

#[test]
fn cpus_workqueues_cgroups_read_live() {
    let cg = Cgroups::read(&Root::live()).unwrap();
    let map = CpuMap::read(&Root::live(), &cg.isolated_cpus()).unwrap();
    assert!(!map.online.is_empty());
    assert!(map.online.is_subset(&map.possible));
    assert_eq!(map.cpus.len(), map.possible.len());
    let wq = Workqueues::read(&Root::live()).unwrap();
    if let Some(mask) = wq.cpumask {
        assert!(!mask.is_empty());
    }
    if cg.cpuset_version.is_some() {
        assert_eq!(cg.cpusets[0].path, "/");
    }
}

/// On a machine whose CPU says it runs under a hypervisor, the hypervisor is found, and
/// named as its own CPUID signature names it when that signature is a known one.
#[test]
fn the_live_hypervisor_is_named_by_its_signature() {
    use jitterlab_host::env::hypervisor::{cpuid_signature, signature_name, Hypervisor};
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap();
    let flagged = cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let h = Hypervisor::read(&Root::live()).unwrap();
    if !flagged {
        return jitterlab_host::testing::skip("the CPU has no hypervisor flag: bare metal");
    }
    let h = h.expect("a flagged CPU is a virtual machine");
    let by_cpuid = cpuid_signature().as_ref().and_then(signature_name);
    if fs::metadata("/sys/hypervisor/type").is_err() {
        if let Some(n) = by_cpuid {
            assert_eq!(h.name.as_deref(), Some(n), "{h:?}");
            assert_eq!(h.source, "CPUID 0x40000000");
        }
    }
}
