//! Made-up /proc and /sys trees for what the capture machine lacks: 16 and 128
//! CPUs, offline CPUs, masks over 32 CPUs, cgroup v2 partitions, isolation options.

use std::fs;
use std::path::Path;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::Root;

/// A tree in a temporary directory, removed on drop.
pub struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Tree {
        Tree {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    /// Writes a file at a host path, creating its directories.
    pub fn file(&self, host_path: &str, content: &str) -> &Tree {
        let path = self.dir.path().join(host_path.trim_start_matches('/'));
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, content).expect("write fixture file");
        self
    }

    pub fn root(&self) -> Root {
        Root::at(self.dir.path())
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A machine with `possible` CPUs of which `online` are online, SMT pairs
/// (i, i + possible/2), two NUMA nodes split by halves of each SMT half, and
/// the given kernel command line.
pub fn machine(possible: u32, online: &CpuSet, cmdline: &str) -> Tree {
    let t = Tree::new();
    let cpu = "/sys/devices/system/cpu";
    let all = CpuSet::first_n(possible);
    t.file(&format!("{cpu}/possible"), &format!("{all}\n"))
        .file(&format!("{cpu}/present"), &format!("{all}\n"))
        .file(&format!("{cpu}/online"), &format!("{online}\n"))
        .file(
            &format!("{cpu}/offline"),
            &format!("{}\n", all.difference(online)),
        )
        .file("/proc/cmdline", &format!("{cmdline}\n"))
        .file(&format!("{cpu}/cpuidle/current_driver"), "intel_idle\n")
        .file(&format!("{cpu}/cpuidle/current_governor"), "menu\n");
    let half = possible / 2;
    let mut nodes = [CpuSet::new(), CpuSet::new()];
    for c in 0..possible {
        let core = c % half;
        nodes[(core >= half / 2) as usize].insert(c);
        let d = format!("{cpu}/cpu{c}");
        t.file(
            &format!("{d}/online"),
            if online.contains(c) { "1\n" } else { "0\n" },
        );
        if !online.contains(c) {
            // Offline CPUs lose their topology and cpuidle directories.
            continue;
        }
        let siblings: CpuSet = [core, core + half].into_iter().collect();
        t.file(&format!("{d}/topology/core_id"), &format!("{core}\n"))
            .file(&format!("{d}/topology/physical_package_id"), "0\n")
            .file(&format!("{d}/topology/die_id"), "0\n")
            .file(
                &format!("{d}/topology/thread_siblings_list"),
                &format!("{siblings}\n"),
            )
            .file(
                &format!("{d}/topology/package_cpus_list"),
                &format!("{all}\n"),
            )
            .file(&format!("{d}/cpufreq/scaling_governor"), "performance\n")
            .file(&format!("{d}/cpufreq/scaling_driver"), "intel_pstate\n")
            .file(&format!("{d}/cpufreq/scaling_cur_freq"), "2400000\n");
        for (i, (name, lat)) in [("POLL", 0), ("C1", 2), ("C6", 170)].iter().enumerate() {
            let s = format!("{d}/cpuidle/state{i}");
            t.file(&format!("{s}/name"), &format!("{name}\n"))
                .file(&format!("{s}/desc"), &format!("{name} idle\n"))
                .file(&format!("{s}/latency"), &format!("{lat}\n"))
                .file(&format!("{s}/residency"), &format!("{}\n", lat * 3))
                .file(
                    &format!("{s}/disable"),
                    if *name == "C6" { "1\n" } else { "0\n" },
                )
                .file(&format!("{s}/usage"), "10\n")
                .file(&format!("{s}/time"), "1000\n");
        }
    }
    for (n, set) in nodes.iter().enumerate() {
        t.file(
            &format!("/sys/devices/system/node/node{n}/cpulist"),
            &format!("{set}\n"),
        );
    }
    t
}

/// `/proc/interrupts` text for the online CPUs of a machine.
pub fn interrupts(online: &CpuSet, rows: &[(&str, u64, &str)]) -> String {
    let mut s = String::from("    ");
    for c in online.iter() {
        s.push_str(&format!(" {:>10}", format!("CPU{c}")));
    }
    s.push('\n');
    for (label, per_cpu, desc) in rows {
        s.push_str(&format!("{label:>4}:"));
        if matches!(*label, "ERR" | "MIS") {
            s.push_str(&format!(" {per_cpu:>10}\n"));
            continue;
        }
        for _ in online.iter() {
            s.push_str(&format!(" {per_cpu:>10}"));
        }
        s.push_str(&format!("  {desc}\n"));
    }
    s
}
