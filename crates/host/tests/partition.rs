//! Core partitioning on fixture trees: plans for cgroup v1, v2 with partitions,
//! hybrid layouts, 2, 16 and 128 CPUs and managed IRQs; apply and revert through
//! the fake system, also after a crash halfway and with an invalid partition;
//! verify before and after; the boot options advised.

use std::path::{Path, PathBuf};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::partition::{
    advise, apply, build_plan, revert, verify, Action, Exclude, FakeSystem, Flow, Header,
    Isolation, Journal, Level, Method, MethodChoice, Outcome, Plan, Request, Snapshot, Target,
    Undo, VerifyRequest,
};
use jitterlab_host::tasks::TaskKind;
use jitterlab_host::Status;

use crate::fake::{interrupts, machine, Tree};

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

const KTHREAD: u64 = 0x0020_0000;
const PER_CPU: u64 = 0x0420_0000;
const USER: u64 = 0x0040_0100;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    V1,
    Hybrid,
    V2,
}

/// One thread's /proc files.
#[allow(clippy::too_many_arguments)]
fn task(
    t: &Tree,
    layout: Layout,
    pid: u32,
    tid: u32,
    comm: &str,
    ppid: u32,
    flags: u64,
    allowed: &str,
    start: u64,
) {
    let last = list(allowed).first().unwrap_or(0);
    let stat = format!(
        "{tid} ({comm}) S {ppid} {pid} {pid} 0 -1 {flags} 0 0 0 0 10 5 0 0 20 0 1 0 {start} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 {last} 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    );
    let status = format!(
        "Name:\t{comm}\nTgid:\t{pid}\nPid:\t{tid}\nPPid:\t{ppid}\nCpus_allowed_list:\t{allowed}\n"
    );
    let cgroup = match layout {
        Layout::V2 => "0::/\n".to_string(),
        _ => "3:cpuset:/\n0::/\n".to_string(),
    };
    let dir = format!("/proc/{pid}/task/{tid}");
    t.file(&format!("{dir}/stat"), &stat)
        .file(&format!("{dir}/status"), &status)
        .file(&format!("{dir}/cgroup"), &cgroup)
        .file(&format!("{dir}/comm"), &format!("{comm}\n"));
    if pid == tid {
        t.file(&format!("/proc/{pid}/stat"), &stat)
            .file(&format!("/proc/{pid}/status"), &status)
            .file(&format!("/proc/{pid}/cgroup"), &cgroup)
            .file(&format!("/proc/{pid}/comm"), &format!("{comm}\n"))
            .file(&format!("/proc/{pid}/cmdline"), &format!("{comm}\0"));
    }
}

/// A machine of `n` CPUs with IRQs (36 is the managed virtio block queue),
/// workqueues, sysctls, a cgroup layout, and a mix of tasks.
fn partitioned(n: u32, layout: Layout) -> Tree {
    let all = CpuSet::first_n(n);
    let last = n - 1;
    let t = machine(n, &all, "BOOT_IMAGE=/vmlinuz quiet");
    t.file("/proc/sys/kernel/random/boot_id", "b00t\n")
        .file("/proc/sys/kernel/osrelease", "6.18.0-test\n")
        .file("/proc/sys/kernel/timer_migration", "1\n")
        .file("/proc/sys/vm/stat_interval", "1\n")
        .file("/proc/sys/kernel/watchdog_cpumask", &format!("{all}\n"))
        .file(
            "/proc/interrupts",
            &interrupts(
                &all,
                &[
                    ("24", 1, "IO-APIC   5-edge      ACPI:Ged"),
                    (
                        "36",
                        500,
                        "PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0",
                    ),
                    ("41", 40, "PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx"),
                    ("LOC", 1000, "Local timer interrupts"),
                    ("RES", 10, "Rescheduling interrupts"),
                    ("ERR", 0, ""),
                ],
            ),
        )
        .file("/proc/softirqs", &{
            let mut s = String::from("   ");
            for c in all.iter() {
                s.push_str(&format!(" CPU{c}"));
            }
            s.push_str("\n TIMER:");
            for _ in all.iter() {
                s.push_str(" 5");
            }
            s + "\n"
        })
        .file(
            "/proc/irq/default_smp_affinity",
            &format!("{}\n", all.to_mask_string()),
        );
    for (irq, eff) in [(24, 0), (36, last), (41, last)] {
        t.file(
            &format!("/proc/irq/{irq}/smp_affinity_list"),
            &format!("{all}\n"),
        )
        .file(
            &format!("/proc/irq/{irq}/effective_affinity_list"),
            &format!("{eff}\n"),
        );
    }
    let wq = "/sys/devices/virtual/workqueue";
    t.file(
        &format!("{wq}/cpumask"),
        &format!("{}\n", all.to_mask_string()),
    )
    .file(&format!("{wq}/writeback/per_cpu"), "0\n")
    .file(&format!("{wq}/writeback/max_active"), "256\n")
    .file(
        &format!("{wq}/writeback/cpumask"),
        &format!("{}\n", all.to_mask_string()),
    )
    .file(&format!("{wq}/mm_percpu_wq/per_cpu"), "1\n")
    .file(&format!("{wq}/mm_percpu_wq/max_active"), "256\n");
    match layout {
        Layout::V1 | Layout::Hybrid => {
            let mut mi = String::from("22 27 0:21 / /proc rw - proc proc rw\n34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n");
            if layout == Layout::Hybrid {
                mi.push_str(
                    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
                );
                t.file("/sys/fs/cgroup/unified/cgroup.controllers", "\n");
            }
            let cs = "/sys/fs/cgroup/cpuset";
            t.file("/proc/self/mountinfo", &mi)
                .file(&format!("{cs}/cpuset.cpus"), &format!("{all}\n"))
                .file(&format!("{cs}/cpuset.effective_cpus"), &format!("{all}\n"))
                .file(&format!("{cs}/cpuset.mems"), "0\n")
                .file(&format!("{cs}/cpuset.cpu_exclusive"), "1\n")
                .file(&format!("{cs}/cpuset.sched_load_balance"), "1\n")
                .file(&format!("{cs}/tasks"), "1\n2\n");
        }
        Layout::V2 => {
            let cg = "/sys/fs/cgroup";
            t.file(
                "/proc/self/mountinfo",
                "22 27 0:21 / /proc rw - proc proc rw\n30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
            )
            .file(&format!("{cg}/cgroup.controllers"), "cpuset cpu io memory pids\n")
            .file(&format!("{cg}/cgroup.subtree_control"), "cpu memory\n")
            .file(&format!("{cg}/cpuset.cpus.effective"), &format!("{all}\n"))
            .file(&format!("{cg}/cpuset.mems.effective"), "0\n")
            .file(&format!("{cg}/cgroup.procs"), "1\n")
            .file(&format!("{cg}/cgroup.threads"), "1\n");
        }
    }
    let a = all.to_string();
    task(&t, layout, 1, 1, "init", 0, USER, &a, 1);
    task(&t, layout, 2, 2, "kthreadd", 0, KTHREAD, &a, 1);
    let mut pid = 10;
    for c in all.iter() {
        for name in ["ksoftirqd", "migration"] {
            task(
                &t,
                layout,
                pid,
                pid,
                &format!("{name}/{c}"),
                2,
                PER_CPU,
                &c.to_string(),
                2,
            );
            pid += 1;
        }
    }
    task(
        &t,
        layout,
        9000,
        9000,
        "kworker/u8:0-events_unbound",
        2,
        PER_CPU,
        &a,
        3,
    );
    task(&t, layout, 9001, 9001, "irq/24-ACPI:Ged", 2, KTHREAD, &a, 3);
    task(&t, layout, 500, 500, "bash", 1, USER, &a, 100);
    for tid in 600..603 {
        // Thread 602 was pinned to CPU 0 by hand: it stays there.
        let allowed = if tid == 602 {
            "0".to_string()
        } else {
            a.clone()
        };
        task(&t, layout, 600, tid, "app", 500, USER, &allowed, 200);
    }
    task(&t, layout, 700, 700, "qemu-kvm", 1, USER, &a, 300);
    task(
        &t,
        layout,
        800,
        800,
        "rt-loop",
        500,
        USER,
        &last.to_string(),
        400,
    );
    t
}

fn request(cpus: &str, state: &Path) -> Request {
    Request {
        cpus: list(cpus),
        method: MethodChoice::Auto,
        excludes: vec![Exclude::parse("qemu*").unwrap()],
        move_init: false,
        stop_irqbalance: false,
        sysctl: false,
        idle_latency_us: None,
        state_dir: state.to_path_buf(),
        privileged: true,
    }
}

fn state_dir(t: &Tree) -> PathBuf {
    t.path().join("run/jitterlab")
}

fn writes(plan: &Plan) -> Vec<(String, String, String)> {
    plan.steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Write { path, old, new, .. } => Some((path.clone(), old.clone(), new.clone())),
            _ => None,
        })
        .collect()
}

fn moves(plan: &Plan) -> Vec<(u32, String, String, bool)> {
    plan.steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Task(m) => Some((
                m.tid,
                m.old_allowed.to_string(),
                m.new_allowed.to_string(),
                m.cpuset.is_some(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn v1_plan_is_cset_shield_plus_irqs_workqueues_and_tasks() {
    let t = partitioned(2, Layout::V1);
    let plan = build_plan(&t.root(), &request("1", &state_dir(&t))).unwrap();
    assert!(plan.ok(), "{:?}", plan.checks);
    assert_eq!(plan.method, Method::Cgroup1);
    assert_eq!(plan.housekeeping, list("0"));
    let cs = "/sys/fs/cgroup/cpuset";
    // The cpuset structure comes first, in order.
    let first: Vec<String> = plan.steps[..12]
        .iter()
        .map(|s| s.action.describe())
        .collect();
    assert_eq!(
        first,
        [
            format!("mkdir {cs}/jitterlab.housekeeping"),
            format!("write {cs}/jitterlab.housekeeping/cpuset.cpus: (new) -> 0"),
            format!("write {cs}/jitterlab.housekeeping/cpuset.mems: (new) -> 0"),
            format!("write {cs}/jitterlab.housekeeping/cpuset.cpu_exclusive: (new) -> 1"),
            format!("mkdir {cs}/jitterlab.isolated"),
            format!("write {cs}/jitterlab.isolated/cpuset.cpus: (new) -> 1"),
            format!("write {cs}/jitterlab.isolated/cpuset.mems: (new) -> 0"),
            format!("write {cs}/jitterlab.isolated/cpuset.cpu_exclusive: (new) -> 1"),
            format!("write {cs}/jitterlab.isolated/cpuset.sched_load_balance: (new) -> 0"),
            format!("write {cs}/cpuset.sched_load_balance: 1 -> 0"),
            "write /sys/devices/virtual/workqueue/cpumask: 3 -> 1".to_string(),
            "write /sys/devices/virtual/workqueue/writeback/cpumask: 3 -> 1".to_string(),
        ]
    );
    let w = writes(&plan);
    // default_smp_affinity before every IRQ.
    let default_at = w
        .iter()
        .position(|(p, _, _)| p == "/proc/irq/default_smp_affinity")
        .unwrap();
    let first_irq = w
        .iter()
        .position(|(p, _, _)| p.ends_with("smp_affinity_list"))
        .unwrap();
    assert!(default_at < first_irq);
    assert_eq!(w[default_at].2, "1");
    for irq in [24, 36, 41] {
        assert!(
            w.contains(&(
                format!("/proc/irq/{irq}/smp_affinity_list"),
                "0-1".into(),
                "0".into()
            )),
            "IRQ {irq}"
        );
    }
    assert!(
        !w.iter().any(|(p, _, _)| p.contains("/proc/sys/")),
        "no sysctl without --sysctl"
    );
    // User tasks of the root cpuset join the housekeeping set; kernel threads are
    // moved by affinity only; a thread already off CPU 1 still joins the set.
    let m = moves(&plan);
    assert!(m.contains(&(500, "0-1".into(), "0".into(), true)));
    assert!(m.contains(&(602, "0".into(), "0".into(), true)));
    assert!(m.contains(&(800, "1".into(), "0".into(), true)));
    assert!(m.contains(&(2, "0-1".into(), "0".into(), false)));
    assert!(m.contains(&(9001, "0-1".into(), "0".into(), false)));
    assert!(!m.iter().any(|(tid, ..)| [1, 700, 9000].contains(tid)));
    // PID 1 and the excluded qemu are listed with why.
    let ex: Vec<(u32, &str)> = plan
        .excluded
        .iter()
        .map(|e| (e.pid, e.reason.as_str()))
        .collect();
    assert!(
        ex[0].0 == 1 && ex[0].1.contains("safety exclusion"),
        "{ex:?}"
    );
    assert!(ex
        .iter()
        .any(|(p, r)| *p == 700 && r.contains("--exclude 'qemu*'")));
    // The per-CPU threads of CPU 1 and the unbound kworker cannot move.
    let stay: Vec<(&str, TaskKind)> = plan
        .unmovable
        .iter()
        .map(|u| (u.comm.as_str(), u.kind))
        .collect();
    assert!(stay.contains(&("ksoftirqd/1", TaskKind::KthreadPerCpu)));
    assert!(stay.contains(&("migration/1", TaskKind::KthreadPerCpu)));
    assert!(stay.contains(&("kworker/u8:0-events_unbound", TaskKind::KthreadManaged)));
    assert!(!stay.iter().any(|(c, _)| *c == "ksoftirqd/0"));
    // The pinned real-time loop is about to lose its CPU: a warning names it.
    assert!(
        plan.warnings.iter().any(|w| w.contains("rt-loop")),
        "{:?}",
        plan.warnings
    );
    // The plan's JSON carries every write with old and new.
    let json = serde_json::to_value(&plan).unwrap();
    let step = &json["steps"][10];
    assert_eq!(step["action"], "write");
    assert_eq!(step["old"], "3");
    assert_eq!(step["target"]["kind"], "workqueue_mask");
}

#[test]
fn sysctls_and_irqbalance_are_planned_on_request() {
    let t = partitioned(2, Layout::V1);
    t.file("/proc/4242/comm", "irqbalance\n");
    let mut req = request("1", &state_dir(&t));
    let plan = build_plan(&t.root(), &req).unwrap();
    assert!(plan
        .warnings
        .iter()
        .any(|w| w.contains("irqbalance is running (pid 4242)")));
    req.sysctl = true;
    req.stop_irqbalance = true;
    let plan = build_plan(&t.root(), &req).unwrap();
    assert!(matches!(&plan.steps[0].action, Action::StopIrqbalance(ib) if ib.pid == 4242));
    let w = writes(&plan);
    assert!(w.contains(&(
        "/proc/sys/kernel/timer_migration".into(),
        "1".into(),
        "0".into()
    )));
    assert!(w.contains(&("/proc/sys/vm/stat_interval".into(), "1".into(), "10".into())));
    assert!(w.contains(&(
        "/proc/sys/kernel/watchdog_cpumask".into(),
        "0-1".into(),
        "0".into()
    )));
}

#[test]
fn idle_latency_limits_the_isolated_cpus_only_and_reverts() {
    let t = partitioned(2, Layout::V1);
    let qos = |cpu: u32| format!("/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us");
    t.file(&qos(0), "0\n").file(&qos(1), "0\n");
    let root = t.root();
    let before = Snapshot::read(&root).unwrap();
    let mut req = request("1", &state_dir(&t));
    req.idle_latency_us = Some(0);
    let plan = build_plan(&root, &req).unwrap();
    let w = writes(&plan);
    // The file says n/a for a 0 us limit (poll) and 0 for none.
    assert!(w.contains(&(qos(1), "0".into(), "n/a".into())), "{w:?}");
    assert!(
        !w.iter().any(|(p, ..)| *p == qos(0)),
        "housekeeping CPU untouched"
    );
    req.idle_latency_us = Some(20);
    let w = writes(&build_plan(&root, &req).unwrap());
    assert!(w.contains(&(qos(1), "0".into(), "20".into())));

    let mut fake = FakeSystem::new(root.clone()).unwrap();
    let mut journal =
        Journal::create(&state_dir(&t), &Header::for_plan(&root, &plan).unwrap()).unwrap();
    assert!(apply(&mut fake, &plan, &mut journal, &mut |_| Flow::Continue).applied);
    drop(journal);
    assert_eq!(root.read_line(qos(1)).unwrap(), "n/a");
    let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
    assert_eq!(r.failures(), 0, "{:?}", r.undone);
    assert_eq!(root.read_line(qos(1)).unwrap(), "0");
    assert!(before.diff(&Snapshot::read(&root).unwrap()).is_empty());

    // A kernel without CPU PM QoS: a warning, no step.
    let t = partitioned(2, Layout::V1);
    let mut req = request("1", &state_dir(&t));
    req.idle_latency_us = Some(0);
    let plan = build_plan(&t.root(), &req).unwrap();
    assert!(plan
        .warnings
        .iter()
        .any(|w| w.contains("--idle-latency: CPU 1 has no")));
}

#[test]
fn hybrid_layout_uses_the_v1_cpuset_and_refuses_cgroup2() {
    let t = partitioned(2, Layout::Hybrid);
    let mut req = request("1", &state_dir(&t));
    let plan = build_plan(&t.root(), &req).unwrap();
    assert_eq!(plan.method, Method::Cgroup1);
    assert!(plan.ok());
    req.method = MethodChoice::Only(Method::Cgroup2);
    let plan = build_plan(&t.root(), &req).unwrap();
    assert!(!plan.ok());
    let c = plan.checks.iter().find(|c| c.name == "method").unwrap();
    assert!(
        c.detail.contains("cgroup v1 at /sys/fs/cgroup/cpuset"),
        "{}",
        c.detail
    );
    req.method = MethodChoice::Only(Method::Affinity);
    let plan = build_plan(&t.root(), &req).unwrap();
    assert!(plan.ok());
    assert!(!plan
        .steps
        .iter()
        .any(|s| matches!(s.action, Action::Mkdir { .. })));
    assert!(moves(&plan).iter().all(|m| !m.3), "affinity only");
    assert!(
        !moves(&plan).iter().any(|m| m.0 == 602),
        "602 never had CPU 1"
    );
}

#[test]
fn v2_partition_with_existing_partitions_on_16_cpus() {
    let t = partitioned(16, Layout::V2);
    let cg = "/sys/fs/cgroup";
    t.file(&format!("{cg}/rt/cpuset.cpus"), "4-5\n")
        .file(&format!("{cg}/rt/cpuset.cpus.effective"), "4-5\n")
        .file(&format!("{cg}/rt/cpuset.cpus.partition"), "isolated\n")
        .file(&format!("{cg}/rt/cgroup.threads"), "4242\n");
    let plan = build_plan(&t.root(), &request("8-15", &state_dir(&t))).unwrap();
    assert!(plan.ok(), "{:?}", plan.checks);
    assert_eq!(plan.method, Method::Cgroup2);
    assert_eq!(plan.housekeeping, list("0-7"));
    match &plan.steps[0].action {
        Action::Write {
            path,
            old,
            new,
            undo,
            ..
        } => {
            assert_eq!(path, "/sys/fs/cgroup/cgroup.subtree_control");
            assert_eq!((old.as_str(), new.as_str()), ("cpu memory", "+cpuset"));
            assert_eq!(*undo, Undo::Write("-cpuset".into()));
        }
        a => panic!("{a:?}"),
    }
    assert!(
        matches!(&plan.steps[1].action, Action::Mkdir { path, .. } if path == "/sys/fs/cgroup/jitterlab.isolated")
    );
    match &plan.steps[3].action {
        Action::Write {
            path,
            new,
            expect,
            undo,
            ..
        } => {
            assert!(path.ends_with("jitterlab.isolated/cpuset.cpus.partition"));
            assert_eq!(new, "isolated");
            assert_eq!(expect.as_deref(), Some("isolated"));
            assert_eq!(*undo, Undo::Write("member".into()));
        }
        a => panic!("{a:?}"),
    }
    assert_eq!(plan.isolated_cgroup.as_deref(), Some("/jitterlab.isolated"));
    // Masks wider than one hex digit.
    let w = writes(&plan);
    let (_, old, new) = w
        .iter()
        .find(|(p, _, _)| p == "/proc/irq/default_smp_affinity")
        .unwrap();
    assert_eq!(
        (old.as_str(), CpuSet::parse_mask(new).unwrap()),
        ("ffff", list("0-7"))
    );
    assert!(w.contains(&(
        "/proc/irq/36/smp_affinity_list".into(),
        "0-15".into(),
        "0-7".into()
    )));
    // CPUs of another partition cannot be taken.
    let plan = build_plan(&t.root(), &request("5-6", &state_dir(&t))).unwrap();
    let c = plan.checks.iter().find(|c| !c.ok).unwrap();
    assert!(c.detail.contains("/rt"), "{}", c.detail);
}

#[test]
fn masks_over_32_cpus_on_128() {
    let t = partitioned(128, Layout::V1);
    let plan = build_plan(&t.root(), &request("64-127", &state_dir(&t))).unwrap();
    assert!(plan.ok());
    let w = writes(&plan);
    let (_, old, new) = w
        .iter()
        .find(|(p, _, _)| p == "/proc/irq/default_smp_affinity")
        .unwrap();
    assert_eq!(CpuSet::parse_mask(old).unwrap(), CpuSet::first_n(128));
    assert_eq!(CpuSet::parse_mask(new).unwrap(), CpuSet::first_n(64));
    assert!(new.contains(','), "comma groups of 32 bits: {new}");
    let unmovable = plan
        .unmovable
        .iter()
        .filter(|u| u.kind == TaskKind::KthreadPerCpu)
        .count();
    assert_eq!(unmovable, 128, "ksoftirqd and migration of 64 CPUs");
}

#[test]
fn preflight_refuses_what_cannot_be_applied() {
    let t = partitioned(2, Layout::V1);
    let dir = state_dir(&t);
    let failed = |cpus: &str, f: &dyn Fn(&mut Request)| -> Vec<String> {
        let mut req = request(cpus, &dir);
        f(&mut req);
        let plan = build_plan(&t.root(), &req).unwrap();
        // A plan says its own status: refused (2) when a check failed.
        let want = if plan.ok() {
            Status::Ok
        } else {
            Status::Invalid
        };
        assert_eq!(plan.status(), want, "{:?}", plan.checks);
        plan.checks
            .into_iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect()
    };
    assert_eq!(failed("1", &|_| {}), Vec::<String>::new());
    assert!(failed("0-1", &|_| {})[0].contains("leaves no online CPU"));
    assert!(failed("2", &|_| {})[0].contains("CPU 2 does not exist"));
    assert!(failed("1", &|r| r.privileged = false)[0].contains("not root"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(Journal::path_in(&dir), "{}\n").unwrap();
    assert!(failed("1", &|_| {})[0].contains("jitterlab revert"));
    std::fs::remove_dir_all(&dir).unwrap();
    t.file(
        "/sys/fs/cgroup/cpuset/jitterlab.isolated/cpuset.cpus",
        "1\n",
    );
    assert!(failed("1", &|_| {})[0].contains("left from an earlier partition"));
}

/// Builds and applies the plan for `cpus` through a fake system.
fn applied(
    t: &Tree,
    cpus: &str,
    fake: &mut FakeSystem,
    on_step: &mut dyn FnMut(usize) -> Flow,
) -> jitterlab_host::partition::ApplyReport {
    let plan = build_plan(&t.root(), &request(cpus, &state_dir(t))).unwrap();
    assert!(plan.ok(), "{:?}", plan.checks);
    let mut journal =
        Journal::create(&state_dir(t), &Header::for_plan(&t.root(), &plan).unwrap()).unwrap();
    apply(fake, &plan, &mut journal, on_step)
}

#[test]
fn apply_then_revert_leaves_the_machine_as_it_was() {
    let t = partitioned(2, Layout::V1);
    let root = t.root();
    let before = Snapshot::read(&root).unwrap();
    let mut fake = FakeSystem::new(root.clone()).unwrap();
    fake.refuse_irqs = vec![36];
    let affinity_before = fake.affinity.clone();
    let report = applied(&t, "1", &mut fake, &mut |_| Flow::Continue);
    assert!(report.applied, "{:?}", report.rolled_back);
    assert_eq!(report.failures(), 0, "{:?}", report.results);
    // A refusal of the managed IRQ is not a failure of isolate.
    assert_eq!(report.status(), Status::Ok);
    // The managed IRQ is refused and the boot option named.
    let refused: Vec<&Outcome> = report
        .results
        .iter()
        .map(|r| &r.outcome)
        .filter(|o| matches!(o, Outcome::Refused { .. }))
        .collect();
    assert_eq!(refused.len(), 1);
    match refused[0] {
        Outcome::Refused { remedy, .. } => assert!(remedy
            .as_deref()
            .unwrap()
            .contains("isolcpus=managed_irq,domain,1")),
        _ => unreachable!(),
    }
    // The machine now: masks, cpusets, threads.
    let read = |p: &str| root.read_line(p).unwrap();
    assert_eq!(read("/proc/irq/41/smp_affinity_list"), "0");
    assert_eq!(read("/proc/irq/36/smp_affinity_list"), "0-1");
    assert_eq!(read("/proc/irq/default_smp_affinity"), "1");
    assert_eq!(read("/sys/devices/virtual/workqueue/cpumask"), "1");
    assert_eq!(read("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance"), "0");
    assert_eq!(
        read("/sys/fs/cgroup/cpuset/jitterlab.isolated/cpuset.sched_load_balance"),
        "0"
    );
    assert_eq!(fake.affinity[&500], list("0"));
    assert_eq!(fake.affinity[&800], list("0"));
    assert_eq!(fake.affinity[&9001], list("0"));
    assert_eq!(fake.affinity[&1], list("0-1"), "PID 1 untouched");
    assert_eq!(fake.affinity[&700], list("0-1"), "excluded");
    assert_eq!(
        fake.member[&500],
        "/sys/fs/cgroup/cpuset/jitterlab.housekeeping"
    );
    assert!(
        !fake.member.contains_key(&2),
        "kernel threads stay in the root cpuset"
    );
    let rec = Journal::read(&state_dir(&t)).unwrap().unwrap();
    assert!(rec.complete && !rec.torn);
    assert_eq!(rec.steps.len(), report.plan.steps.len());
    assert!(rec.steps.iter().all(|(_, o)| o.is_some()));

    let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
    assert_eq!(r.failures(), 0, "{:?}", r.undone);
    assert!(r.differences.is_empty(), "{:?}", r.differences);
    assert_eq!(r.status(), Status::Ok);
    assert!(r.journal_removed && !state_dir(&t).exists());
    assert_eq!(fake.affinity, affinity_before);
    assert!(fake.member.is_empty());
    assert!(before.diff(&Snapshot::read(&root).unwrap()).is_empty());
    assert!(!root.exists("/sys/fs/cgroup/cpuset/jitterlab.isolated"));
    // Reverting again finds nothing to do.
    assert!(revert(&mut fake, &state_dir(&t)).unwrap().is_none());
}

#[test]
fn a_thread_that_exits_while_isolated_is_no_difference() {
    let t = partitioned(2, Layout::V1);
    let root = t.root();
    let before = Snapshot::read(&root).unwrap();
    assert!(before.tasks.iter().any(|s| s.tid == 500));
    // Thread 500 exited on CPU 0 and waits to be reaped (state Z): no placement to
    // compare, none for revert to restore.
    for path in ["/proc/500/stat", "/proc/500/task/500/stat"] {
        let stat = root.read_line(path).unwrap();
        let stat = stat.replacen(") S ", ") Z ", 1);
        t.file(path, &format!("{stat}\n"));
        t.file(
            &path.replace("/stat", "/status"),
            "Name:\tbash\nTgid:\t500\nPid:\t500\nPPid:\t1\nCpus_allowed_list:\t0\n",
        );
    }
    let now = Snapshot::read(&root).unwrap();
    assert!(!now.tasks.iter().any(|s| s.tid == 500));
    assert!(before.diff(&now).is_empty(), "{:?}", before.diff(&now));
}

#[test]
fn move_init_moves_pid_1_by_affinity_and_keeps_its_cgroup() {
    let t = partitioned(2, Layout::V1);
    let root = t.root();
    let mut req = request("1", &state_dir(&t));
    req.move_init = true;
    let plan = build_plan(&root, &req).unwrap();
    assert!(plan.ok(), "{:?}", plan.checks);
    assert!(plan.move_init);
    assert!(
        !plan.excluded.iter().any(|e| e.pid == 1),
        "{:?}",
        plan.excluded
    );
    // PID 1 moves off CPU 1 by affinity and stays in the root cpuset.
    assert!(moves(&plan).contains(&(1, "0-1".into(), "0".into(), false)));

    let mut fake = FakeSystem::new(root.clone()).unwrap();
    let affinity_before = fake.affinity.clone();
    let mut journal =
        Journal::create(&state_dir(&t), &Header::for_plan(&root, &plan).unwrap()).unwrap();
    let report = apply(&mut fake, &plan, &mut journal, &mut |_| Flow::Continue);
    drop(journal);
    assert!(report.applied, "{:?}", report.rolled_back);
    assert_eq!(fake.affinity[&1], list("0"));
    assert!(!fake.member.contains_key(&1), "PID 1 keeps its cgroup");
    // verify no longer counts PID 1 as excluded: the journal names no excluded PID 1.
    let rec = Journal::read(&state_dir(&t)).unwrap().unwrap();
    assert!(!rec.header.excluded_pids.contains(&1));
    let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
    assert_eq!(r.failures(), 0, "{:?}", r.undone);
    assert_eq!(fake.affinity, affinity_before);
}

#[test]
fn a_crash_halfway_is_reverted_from_the_journal_alone() {
    for crash_after in [1, 7, 15, 22] {
        let t = partitioned(2, Layout::V1);
        let root = t.root();
        let before = Snapshot::read(&root).unwrap();
        let mut fake = FakeSystem::new(root.clone()).unwrap();
        // The isolating process dies after `crash_after` steps: no rollback, no
        // `complete` record, the journal file simply closed.
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            applied(&t, "1", &mut fake, &mut |n| {
                if n == crash_after {
                    panic!("killed");
                }
                Flow::Continue
            })
        }));
        assert!(unwound.is_err());
        let rec = Journal::read(&state_dir(&t)).unwrap().unwrap();
        assert!(!rec.complete);
        // Intended in batches, done one by one: the last batch is partly done.
        assert!(rec.steps.len() >= crash_after);
        assert_eq!(
            rec.steps.iter().filter(|(_, o)| o.is_some()).count(),
            crash_after
        );
        let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
        assert!(!r.apply_complete);
        assert_eq!(r.failures(), 0, "after {crash_after}: {:?}", r.undone);
        assert!(
            r.differences.is_empty(),
            "after {crash_after}: {:?}",
            r.differences
        );
        assert!(before.diff(&Snapshot::read(&root).unwrap()).is_empty());
        assert!(!root.exists("/sys/fs/cgroup/cpuset/jitterlab.housekeeping"));
    }
}

#[test]
fn a_torn_last_line_is_ignored() {
    let t = partitioned(2, Layout::V1);
    let mut fake = FakeSystem::new(t.root()).unwrap();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        applied(&t, "1", &mut fake, &mut |n| {
            if n == 3 {
                panic!("killed")
            } else {
                Flow::Continue
            }
        })
    }));
    let path = Journal::path_in(&state_dir(&t));
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"record\":\"intended\",\"seq\":3,\"act");
    std::fs::write(&path, text).unwrap();
    let rec = Journal::read(&state_dir(&t)).unwrap().unwrap();
    assert!(rec.torn);
    assert_eq!(rec.steps.iter().filter(|(_, o)| o.is_some()).count(), 3);
    let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
    assert!(r.differences.is_empty(), "{:?}", r.differences);
}

/// A step that fails (not a managed IRQ's refusal) fails isolate, though the partition
/// stands; revert undoes the rest.
#[test]
fn a_failed_step_fails_isolate() {
    let t = partitioned(2, Layout::V1);
    let mut fake = FakeSystem::new(t.root()).unwrap();
    fake.fail_writes = vec!["/sys/devices/virtual/workqueue/cpumask".into()];
    let report = applied(&t, "1", &mut fake, &mut |_| Flow::Continue);
    assert!(report.applied, "{:?}", report.rolled_back);
    assert_eq!(report.failures(), 1, "{:?}", report.results);
    assert_eq!(report.status(), Status::Failed);
    let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
    assert_eq!(r.status(), Status::Ok, "{:?} {:?}", r.undone, r.differences);
}

#[test]
fn cancel_and_invalid_partition_roll_back() {
    let t = partitioned(2, Layout::V1);
    let root = t.root();
    let before = Snapshot::read(&root).unwrap();
    let mut fake = FakeSystem::new(root.clone()).unwrap();
    let report = applied(&t, "1", &mut fake, &mut |n| {
        if n == 20 {
            Flow::Cancel
        } else {
            Flow::Continue
        }
    });
    assert!(!report.applied);
    assert_eq!(report.status(), Status::Failed, "rolled back");
    assert_eq!(report.rolled_back.as_deref(), Some("cancelled"));
    let r = report.revert.unwrap();
    assert!(r.differences.is_empty(), "{:?}", r.differences);
    assert!(!state_dir(&t).exists());
    assert!(before.diff(&Snapshot::read(&root).unwrap()).is_empty());

    let t = partitioned(16, Layout::V2);
    let root = t.root();
    let before = Snapshot::read(&root).unwrap();
    let mut fake = FakeSystem::new(root.clone()).unwrap();
    fake.invalid_partition = true;
    let report = applied(&t, "8-15", &mut fake, &mut |_| Flow::Continue);
    assert!(!report.applied);
    let why = report.rolled_back.unwrap();
    assert!(why.contains("isolated invalid"), "{why}");
    assert_eq!(report.results.len(), 4, "stopped at the partition write");
    assert!(!root.exists("/sys/fs/cgroup/jitterlab.isolated"));
    assert_eq!(
        root.read_line("/sys/fs/cgroup/cgroup.subtree_control")
            .unwrap(),
        "-cpuset"
    );
    assert!(before
        .diff(&Snapshot::read(&root).unwrap())
        .iter()
        .all(|d| d.what.ends_with("subtree_control")));
}

#[test]
fn threads_started_while_applying_are_moved_too() {
    let t = partitioned(2, Layout::V1);
    let mut fake = FakeSystem::new(t.root()).unwrap();
    let mut spawned = false;
    let report = applied(&t, "1", &mut fake, &mut |n| {
        if n == 5 && !spawned {
            // A new thread of process 600 appears.
            task(&t, Layout::V1, 600, 650, "app", 500, USER, "0-1", 1500);
            spawned = true;
        }
        Flow::Continue
    });
    assert!(report.applied);
    assert_eq!(report.late_steps.len(), 1);
    assert!(matches!(&report.late_steps[0].action, Action::Task(m) if m.tid == 650));
    assert_eq!(
        fake.affinity.get(&650),
        None,
        "not in the fake's table: it was read from the tree"
    );
}

#[test]
fn verify_judges_cpus_before_and_after() {
    let t = partitioned(2, Layout::V1);
    let root = t.root();
    let req = VerifyRequest {
        cpus: Some(list("1")),
        interval: std::time::Duration::ZERO,
        state_dir: state_dir(&t),
    };
    let before = verify(&root, &req).unwrap();
    assert_eq!(before.verdict, Isolation::NotIsolated);
    assert_eq!(before.status(false), Status::Limit);
    let fails: Vec<&str> = before.verdicts[0]
        .findings
        .iter()
        .filter(|f| f.level == Level::Fail)
        .map(|f| f.what.as_str())
        .collect();
    assert!(
        fails
            .iter()
            .any(|f| f.contains("IRQ 41 virtio3-rx may be delivered here")),
        "{fails:?}"
    );
    assert!(fails.iter().any(|f| f.contains("workqueue")), "{fails:?}");
    assert!(fails.iter().any(|f| f.contains("bash")), "{fails:?}");
    // Boot options are checked against the command line.
    assert!(before
        .machine
        .iter()
        .any(|f| f.what.contains("nohz_full=1")));

    let mut fake = FakeSystem::new(root.clone()).unwrap();
    fake.refuse_irqs = vec![36];
    assert!(applied(&t, "1", &mut fake, &mut |_| Flow::Continue).applied);
    let after = verify(
        &root,
        &VerifyRequest {
            cpus: None,
            ..req.clone()
        },
    )
    .unwrap();
    let cpu1 = &after.verdicts[0];
    let fails: Vec<&str> = cpu1
        .findings
        .iter()
        .filter(|f| f.level == Level::Fail)
        .map(|f| f.what.as_str())
        .collect();
    assert!(fails.is_empty(), "{fails:?}");
    assert_eq!(cpu1.verdict, Isolation::Noisy);
    assert_eq!(
        (after.status(false), after.status(true)),
        (Status::Ok, Status::Limit),
        "noisy fails only --strict"
    );
    assert_eq!(after.cpus, list("1"), "taken from the journal");
    assert!(after.source.contains("journal"));
    // The managed IRQ is named with the boot option; the moved IRQ is pending
    // (the fixture's effective mask never changes).
    let managed = cpu1
        .findings
        .iter()
        .find(|f| f.what.contains("IRQ 36"))
        .unwrap();
    assert_eq!(managed.level, Level::Warn);
    assert!(managed
        .fix
        .as_deref()
        .unwrap()
        .contains("isolcpus=managed_irq,domain,1"));
    assert!(cpu1
        .findings
        .iter()
        .any(|f| f.what.contains("IRQ 41 virtio3-rx") && f.what.contains("until they next fire")));
    // Excluded processes are named as such, the pinned loop is not blamed.
    assert!(cpu1
        .findings
        .iter()
        .any(|f| f.level == Level::Warn && f.what.contains("qemu-kvm")));
    assert!(!cpu1.findings.iter().any(|f| f.what.contains("rt-loop")));
    let r = revert(&mut fake, &state_dir(&t)).unwrap().unwrap();
    assert!(r.differences.is_empty());
}

#[test]
fn advice_for_the_vm_and_a_configured_kernel() {
    let root = crate::vm2();
    let a = advise(&root, &list("1")).unwrap();
    assert_eq!(a.housekeeping, list("0"));
    let params: Vec<&str> = a.params.iter().map(|p| p.param.as_str()).collect();
    assert_eq!(
        params[..4],
        [
            "isolcpus=managed_irq,domain,1",
            "nohz_full=1",
            "rcu_nocbs=1",
            "irqaffinity=0"
        ]
    );
    assert!(a
        .cmdline
        .starts_with("isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"));
    assert!(a.params.iter().all(|p| !p.present));

    let t = partitioned(16, Layout::V2);
    t.file(
        "/boot/config-6.18.0-test",
        "CONFIG_CPU_ISOLATION=y\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_RCU_NOCB_CPU=y\n",
    )
    .file("/proc/cmdline", "quiet isolcpus=2-3 rcu_nocbs=8-15\n");
    let a = advise(&t.root(), &list("8-15")).unwrap();
    assert_eq!(a.kernel_config.as_deref(), Some("/boot/config-6.18.0-test"));
    let nohz = a
        .params
        .iter()
        .find(|p| p.param == "nohz_full=8-15")
        .unwrap();
    assert_eq!(nohz.supported, Some(false));
    assert!(
        !a.cmdline.contains("nohz_full"),
        "unsupported options are left out"
    );
    assert!(
        a.params
            .iter()
            .find(|p| p.param == "rcu_nocbs=8-15")
            .unwrap()
            .present
    );
    assert!(a.warnings.iter().any(|w| w.contains("CONFIG_NO_HZ_FULL")));
    assert!(a.warnings.iter().any(|w| w.contains("isolcpus=2-3")));
    assert!(advise(&t.root(), &list("0-15")).is_err());
}

#[test]
fn irq_targets_are_labelled() {
    let t = partitioned(2, Layout::V1);
    let plan = build_plan(&t.root(), &request("1", &state_dir(&t))).unwrap();
    let labels: Vec<(u32, String)> = plan
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Write {
                target: Target::Irq { irq, label },
                ..
            } => Some((*irq, label.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        labels,
        [
            (24, "ACPI:Ged".into()),
            (36, "virtio1-req.0".into()),
            (41, "virtio3-rx".into())
        ]
    );
}
