//! Bad files get errors that name the file, the line and what was expected.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::{read_tasks, CpuMap, IrqMap, TaskQuery};

use crate::fake::{machine, Tree};

fn err_of<T: std::fmt::Debug>(r: jitterlab_host::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn interrupts_without_header() {
    let t = Tree::new();
    t.file("/proc/interrupts", " 24:  1  0  IO-APIC 5-edge ACPI:Ged\n");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("proc/interrupts:1: expected a header of CPU columns"),
        "{e}"
    );
}

#[test]
fn interrupts_row_without_colon() {
    let t = Tree::new();
    t.file("/proc/interrupts", "  CPU0 CPU1\n 24  1  0\n");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("proc/interrupts:2: expected a row 'LABEL: counts...'"),
        "{e}"
    );
}

#[test]
fn named_row_without_counts() {
    let t = Tree::new();
    t.file("/proc/interrupts", "  CPU0\nLOC: x\n");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains(":2: expected a name and at least one count"),
        "{e}"
    );
}

#[test]
fn softirqs_with_text_in_counts() {
    let t = Tree::new();
    t.file("/proc/interrupts", "  CPU0\n")
        .file("/proc/softirqs", "   CPU0\n HI: 1 two\n");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("proc/softirqs:2: expected a softirq name and one count per CPU"),
        "{e}"
    );
}

#[test]
fn bad_affinity_list_names_file_and_column() {
    let t = Tree::new();
    t.file("/proc/interrupts", "  CPU0\n  5:  1  IO-APIC  5-edge  x\n")
        .file("/proc/irq/5/smp_affinity_list", "0-q\n");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(e.contains("proc/irq/5/smp_affinity_list"), "{e}");
    assert!(
        e.contains("at column 3: expected a CPU number after '-'"),
        "{e}"
    );
}

#[test]
fn bad_default_mask() {
    let t = Tree::new();
    t.file("/proc/interrupts", "  CPU0\n")
        .file("/proc/irq/default_smp_affinity", "zz\n");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("default_smp_affinity: invalid CPU mask \"zz\" at column 1"),
        "{e}"
    );
}

#[test]
fn bad_cpu_topology_number() {
    let t = machine(2, &CpuSet::first_n(2), "quiet");
    t.file("/sys/devices/system/cpu/cpu1/topology/core_id", "one\n");
    let e = err_of(CpuMap::read(&t.root(), &CpuSet::new()));
    assert!(
        e.contains("cpu1/topology/core_id:1: expected a number, found \"one\""),
        "{e}"
    );
}

#[test]
fn bad_isolcpus_is_a_warning_naming_the_option() {
    // The map is still read (pin and show must work), the option is ignored and said so.
    let t = machine(2, &CpuSet::first_n(2), "isolcpus=domain,1-");
    let map = CpuMap::read(&t.root(), &CpuSet::new()).unwrap();
    assert!(map.boot.isolcpus.is_none());
    assert_eq!(map.warnings.len(), 1);
    assert!(
        map.warnings[0].starts_with("/proc/cmdline isolcpus=: invalid CPU list \"1-\""),
        "{:?}",
        map.warnings
    );
}

#[test]
fn null_nohz_full_is_empty() {
    // CONFIG_CPUMASK_OFFSTACK kernels print (null) when nohz_full= is not given.
    let t = machine(2, &CpuSet::first_n(2), "quiet");
    t.file("/sys/devices/system/cpu/nohz_full", "(null)\n");
    let map = CpuMap::read(&t.root(), &CpuSet::new()).unwrap();
    assert_eq!(map.nohz_full, Some(CpuSet::new()));
}

#[test]
fn negative_topology_id_is_unknown() {
    let t = machine(2, &CpuSet::first_n(2), "quiet");
    t.file(
        "/sys/devices/system/cpu/cpu0/topology/physical_package_id",
        "-1\n",
    );
    let map = CpuMap::read(&t.root(), &CpuSet::new()).unwrap();
    assert_eq!(map.cpu(0).unwrap().package_id, None);
}

#[test]
fn non_utf8_thread_name() {
    let t = Tree::new();
    let stat = b"77 (a\xff) S 1 77 77 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 26 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    std::fs::create_dir_all(t.path().join("proc/77")).unwrap();
    std::fs::write(t.path().join("proc/77/stat"), stat).unwrap();
    t.file("/proc/77/status", "Name:\ta\nCpus_allowed_list:\t0\n");
    let tasks = read_tasks(&t.root(), TaskQuery::default()).unwrap();
    assert_eq!(tasks[0].comm, "a\u{fffd}");
}

#[test]
fn truncated_stat_and_status() {
    let t = Tree::new();
    t.file("/proc/77/stat", "77 (x) S 1 77\n")
        .file("/proc/77/status", "Cpus_allowed_list:\t0\n");
    let e = err_of(read_tasks(&t.root(), TaskQuery::default()));
    assert!(
        e.contains("proc/77/stat:1: expected at least 9 fields"),
        "{e}"
    );

    let t = Tree::new();
    let stat = "77 (x) S 1 77 77 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 26 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    t.file("/proc/77/stat", stat)
        .file("/proc/77/status", "Name:\tx\nCpus_allowed_list:\tzz\n");
    let e = err_of(read_tasks(&t.root(), TaskQuery::default()));
    assert!(e.contains("proc/77/status:2"), "{e}");
}

#[test]
fn vanished_tasks_are_left_out_not_errors() {
    let t = Tree::new();
    // /proc/78 exists as a directory but its files are gone (the task exited).
    std::fs::create_dir_all(t.path().join("proc/78")).unwrap();
    assert!(read_tasks(&t.root(), TaskQuery::default())
        .unwrap()
        .is_empty());
    let e = err_of(read_tasks(&t.root(), TaskQuery::threads_of(99)));
    assert_eq!(e, "no process with pid 99");
}

#[test]
fn bad_mountinfo() {
    let t = Tree::new();
    t.file(
        "/proc/self/mountinfo",
        "22 27 0:21 / /proc rw proc proc rw\n",
    );
    let e = err_of(jitterlab_host::Cgroups::read(&t.root()));
    assert!(
        e.contains("mountinfo:1: expected a mountinfo line with ' - '"),
        "{e}"
    );
}

#[test]
fn irqbalance_is_found_by_both_paths() {
    let t = Tree::new();
    let stat = "812 (irqbalance) S 1 812 812 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 26 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    t.file("/proc/812/stat", stat)
        .file("/proc/812/comm", "irqbalance\n")
        .file(
            "/proc/812/status",
            "Name:\tirqbalance\nTgid:\t812\nCpus_allowed_list:\t0\n",
        )
        .file("/proc/812/task/812/stat", stat)
        .file(
            "/proc/812/task/812/status",
            "Name:\tirqbalance\nCpus_allowed_list:\t0\n",
        );
    assert_eq!(
        jitterlab_host::tasks::find_irqbalance(&t.root()).unwrap(),
        Some(812)
    );
    let m = machine(2, &CpuSet::first_n(2), "quiet");
    let cpus = CpuMap::read(&m.root(), &CpuSet::new()).unwrap();
    m.file("/proc/interrupts", "  CPU0\n");
    let irqs = IrqMap::read(&m.root()).unwrap();
    let threads = read_tasks(&t.root(), TaskQuery::all_threads()).unwrap();
    let ov = jitterlab_host::Overview::build(&cpus, &irqs, &threads, &Default::default());
    assert_eq!(ov.irqbalance, Some(812));
}
