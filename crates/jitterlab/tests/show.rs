//! `jitterlab show` and its views against the fixture tree, text and JSON.

use crate::util::{json_data, run, run_vm2, stdout};

#[test]
fn overview_text_lists_each_cpu() {
    let o = run_vm2(&["show"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(text.starts_with("2 CPUs shown, online 0-1, isolated (none); default IRQ affinity 0-1; 10 threads in 7 processes\n"), "{text}");
    assert!(
        text.contains("\nwarning: the threads of python3[8113] do not share one CPU mask: 3 thread(s) on 0-1, 1 thread(s) on 0 (see: jitterlab show tasks -p 8113)\n"),
        "{text}"
    );
    assert!(
        text.contains("\nCPU 0  online  core 0  package 0  node 0  SMT siblings 0\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "  kthreads bound   3  ksoftirqd/0, migration/0, irq/24-ACPI:Ged (movable)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  IRQs here       10  25 ACPI:Ged, 26 ttyS0,"),
        "{text}"
    );
}

#[test]
fn overview_json_and_filters() {
    let d = json_data(
        &run_vm2(&["show", "--json", "--cpu", "1"]),
        "jitterlab.show",
    );
    let cpus = d["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 1);
    assert_eq!(cpus[0]["cpu"], 1);
    assert!(cpus[0]["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["irq"] == 36 && i["name"] == "virtio1-req.0"));
    let d = json_data(
        &run_vm2(&["show", "--json", "--name", "python*"]),
        "jitterlab.show",
    );
    let last: Vec<u64> = d["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["last_ran"].as_array().unwrap().len() as u64)
        .collect();
    assert_eq!(last.iter().sum::<u64>(), 4, "the four python3 threads");
    assert!(
        d["cpus"][0]["irqs"].as_array().unwrap().is_empty(),
        "no IRQ is named python*"
    );
}

#[test]
fn cpus_view() {
    let text = stdout(&run_vm2(&["show", "cpus"]));
    assert!(text.contains("nohz_full (not in this kernel)"), "{text}");
    assert!(
        text.contains("cpuidle: driver haltpoll  governor haltpoll"),
        "{text}"
    );
    let d = json_data(&run_vm2(&["show", "cpus", "--json"]), "jitterlab.show.cpus");
    assert_eq!(d["online"], "0-1");
    assert_eq!(d["cpus"][1]["idle_states"][0]["name"], "POLL");
    assert_eq!(d["cpus"][1]["isolation"].as_array().unwrap().len(), 0);
}

#[test]
fn irqs_view() {
    let text = stdout(&run_vm2(&["show", "irqs", "--name", "virtio1-*"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[2],
        "IRQ  ACTIONS         CHIP                   HWIRQ  TYPE  AFFINITY  EFFECTIVE  CPU0   CPU1"
    );
    assert!(
        lines[4].starts_with(
            " 36  virtio1-req.0   PCI-MSIX-0000:00:02.0  1      edge  0-1       1             0  "
        ),
        "{text}"
    );
    let d = json_data(&run_vm2(&["show", "irqs", "--json"]), "jitterlab.show.irqs");
    assert_eq!(d["cpus"], serde_json::json!([0, 1]));
    assert_eq!(d["irqs"].as_array().unwrap().len(), 19);
    assert_eq!(d["default_affinity"], "0-1");
    let err = d["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "ERR")
        .unwrap();
    assert_eq!(err["per_cpu"], false);
    assert_eq!(d["softirqs"].as_array().unwrap().len(), 10);
    assert!(d["window"].is_null());
}

#[test]
fn tasks_view_warns_about_split_masks() {
    let o = run_vm2(&["show", "tasks", "-p", "8113"]);
    let text = stdout(&o);
    assert!(
        text.contains("warning: the threads of process 8113 do not share one CPU mask:"),
        "{text}"
    );
    assert!(
        text.contains("  0            1 thread(s): 8157\n"),
        "{text}"
    );
    let d = json_data(
        &run_vm2(&["show", "tasks", "-p", "8113", "--json"]),
        "jitterlab.show.tasks",
    );
    assert_eq!(d["mask_groups"].as_array().unwrap().len(), 2);
    assert_eq!(d["tasks"].as_array().unwrap().len(), 4);
    assert_eq!(d["threads"], true);
    let d = json_data(
        &run_vm2(&["show", "tasks", "--json"]),
        "jitterlab.show.tasks",
    );
    assert_eq!(d["tasks"].as_array().unwrap().len(), 7);
    assert!(d["mask_groups"].is_null());
    let kinds: Vec<&str> = d["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"kthread_per_cpu")
            && kinds.contains(&"kthread_managed")
            && kinds.contains(&"user")
    );
    let text = stdout(&run_vm2(&[
        "show",
        "tasks",
        "--threads",
        "--cpu",
        "1",
        "--name",
        "python3",
    ]));
    assert_eq!(
        text.lines().count(),
        4,
        "header and the three threads allowed on CPU 1:\n{text}"
    );
}

#[test]
fn workqueues_and_cgroups_views() {
    let d = json_data(
        &run_vm2(&["show", "workqueues", "--json"]),
        "jitterlab.show.workqueues",
    );
    assert_eq!(d["cpumask"], "0-1");
    assert_eq!(d["queues"][1]["name"], "writeback");
    let text = stdout(&run_vm2(&["show", "cgroups"]));
    assert!(
        text.starts_with("layout: hybrid (v1 controllers and cgroup2)\n"),
        "{text}"
    );
    assert!(
        text.contains("cpuset controller: v1 at /sys/fs/cgroup/cpuset"),
        "{text}"
    );
    let d = json_data(
        &run_vm2(&["show", "cgroups", "--json"]),
        "jitterlab.show.cgroups",
    );
    assert_eq!(d["layout"], "hybrid");
    assert_eq!(d["cpusets"][0]["tasks"], 80);
}

#[test]
fn colour_only_when_asked_or_on_a_tty() {
    let plain = stdout(&run_vm2(&["show", "tasks", "-p", "8113"]));
    assert!(!plain.contains('\x1b'));
    let coloured = stdout(&run_vm2(&[
        "--color", "always", "show", "tasks", "-p", "8113",
    ]));
    assert!(coloured.contains("\x1b[33mwarning"), "{coloured}");
}

#[test]
fn live_show_json_agrees_with_sysfs() {
    let d = json_data(&run(&["show", "--json"]), "jitterlab.show");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = jitterlab_cpuset::CpuSet::parse_list(&online).unwrap();
    let shown: Vec<u64> = d["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == true)
        .map(|c| c["cpu"].as_u64().unwrap())
        .collect();
    assert_eq!(shown, online.iter().map(u64::from).collect::<Vec<_>>());
    assert!(d["threads"].as_u64().unwrap() >= d["processes"].as_u64().unwrap());
    let irqs: usize = d["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["irqs"].as_array().unwrap().len())
        .sum();
    let rows = std::fs::read_to_string("/proc/interrupts")
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| l.split(':').next().unwrap().trim().parse::<u32>().is_ok())
        .count();
    assert!(irqs >= rows, "every IRQ is delivered somewhere");
}

#[test]
fn live_irq_rates_over_an_interval() {
    let d = json_data(
        &run(&["show", "irqs", "--interval", "300ms", "--json"]),
        "jitterlab.show.irqs",
    );
    let ns = d["window"]["interval_ns"].as_u64().unwrap();
    assert!(ns >= 300_000_000, "{ns}");
    let loc = d["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "LOC")
        .unwrap();
    let ticks: u64 = loc["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    // Deltas over 0.3 s, not totals since boot: bounded by a generous tick rate.
    assert!(ticks < 3 * 1000 * 64, "{ticks}");
    assert!(loc["rates"].as_array().unwrap().len() == loc["counts"].as_array().unwrap().len());
}

/// `--root` trees with a file a hostile user changed: errors naming file, line and
/// field (exit 1), never a value taken silently, a hang or unbounded memory.
mod hostile_root {
    use crate::util::{run, run_within_10s, stderr, stdout, vm2_copy};

    const THREAD_STAT: &str = "proc/8113/task/8157/stat";

    fn edit(dir: &std::path::Path, file: &str, from: &str, to: &str) {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} holds no {from:?}");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    fn failed_with(args: &[&str], message: &str) {
        let o = run_within_10s(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }

    #[test]
    fn last_cpu_above_u32() {
        let t = vm2_copy();
        let root = t.path().to_str().unwrap();
        let path = t.path().join(THREAD_STAT);
        let text = std::fs::read_to_string(&path).unwrap();
        let close = text.rfind(')').unwrap();
        let mut fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
        fields[39 - 3] = "4294967297";
        std::fs::write(&path, format!("{} {}\n", &text[..=close], fields.join(" "))).unwrap();
        failed_with(
            &["--root", root, "show", "tasks", "--threads"],
            "8157/stat:1: expected field 39 (processor) to be a number from 0 to 4294967295, \
             found \"4294967297\"",
        );
    }

    #[test]
    fn interrupt_counts_and_numbers_out_of_range() {
        for (from, to, message) in [
            (
                " 26:          0         14",
                " 26:          0 18446744073709551616",
                "interrupts:4: expected the count of CPU1 (column 2) to be a number from 0 to \
                 18446744073709551615, found \"18446744073709551616\"",
            ),
            (
                " 26:          0         14",
                " 26:         -1         14",
                "interrupts:4: expected the count of CPU0 (column 1)",
            ),
            (
                " 26:",
                " 4294967296:",
                "interrupts:4: expected an IRQ number from 0 to 4294967295, found \"4294967296\"",
            ),
            (
                "CPU1",
                "CPU1       CPU2",
                "interrupts:1: expected columns of CPUs this machine has (possible: 0-1), \
                 found \"CPU2\"",
            ),
        ] {
            let t = vm2_copy();
            edit(t.path(), "proc/interrupts", from, to);
            let root = t.path().to_str().unwrap();
            failed_with(&["--root", root, "show", "irqs"], message);
            failed_with(&["--root", root, "show"], message);
        }
    }

    #[test]
    fn interrupts_as_dev_zero_or_a_fifo() {
        let t = vm2_copy();
        let file = t.path().join("proc/interrupts");
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        let root = t.path().to_str().unwrap();
        failed_with(
            &["--root", root, "show", "irqs"],
            "proc/interrupts: a character device, not a regular file: refused",
        );
        std::fs::remove_file(&file).unwrap();
        let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        failed_with(
            &["--root", root, "show", "irqs"],
            "proc/interrupts: a FIFO, not a regular file: refused",
        );
    }

    #[test]
    fn control_characters_in_comms_are_escaped() {
        let t = vm2_copy();
        for stat in ["proc/8113/stat", "proc/8113/task/8113/stat", THREAD_STAT] {
            edit(t.path(), stat, "(python3)", "(py\nth\x1b[2Jon)");
        }
        let root = t.path().to_str().unwrap();
        let o = run(&["--root", root, "show", "tasks", "--threads"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(!out.contains('\x1b'), "{out}");
        let row = out
            .lines()
            .find(|l| l.contains(" 8157 "))
            .expect("the thread's row");
        assert!(row.ends_with("py\\nth\\x1b[2Jon"), "{row}");
        let o = run(&["--root", root, "show"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(!out.contains('\x1b'), "{out}");
        assert!(!out.contains("py\nth"), "{out}");
        assert!(out.contains("py\\nth\\x1b[2Jon[8113]"), "{out}");
    }
}
