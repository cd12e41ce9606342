//! A [`System`] over a fixture tree, for tests of apply and revert: files are
//! written into the tree, cgroup directories made with the files the kernel would
//! put there, thread affinities kept in a table and mirrored into each thread's
//! `status` (and cpuset into its `cgroup`) so that reading the tree back shows
//! them. Refusals and failures are injected by IRQ number or path.

use std::collections::HashMap;
use std::io;

use jitterlab_cpuset::CpuSet;

use crate::error::{Error, Result};
use crate::irqs::{set_irq_affinity, IrqChange, IrqOutcome};
use crate::partition::step::Irqbalance;
use crate::partition::system::{irq_stub, System};
use crate::root::Root;
use crate::tasks::read_start_ticks;
use crate::tasks::{read_tasks, TaskQuery};

/// The fake.
#[derive(Debug)]
pub struct FakeSystem {
    root: Root,
    /// Affinity per thread.
    pub affinity: HashMap<u32, CpuSet>,
    /// The cgroup directory (host path) of each thread moved by a `tasks` write.
    pub member: HashMap<u32, String>,
    /// IRQs whose affinity writes the kernel refuses (EPERM), as managed IRQs do.
    pub refuse_irqs: Vec<u32>,
    /// Paths whose writes fail with EINVAL.
    pub fail_writes: Vec<String>,
    /// Make a v2 partition read back invalid.
    pub invalid_partition: bool,
    /// Every change, in order, as text.
    pub log: Vec<String>,
    /// Whether irqbalance runs.
    pub irqbalance: bool,
}

fn errno(path: &str, code: i32) -> Error {
    Error::io(path, io::Error::from_raw_os_error(code))
}

impl FakeSystem {
    /// A fake over `root`, with the affinities its threads' `status` files give.
    pub fn new(root: Root) -> Result<FakeSystem> {
        let affinity = read_tasks(&root, TaskQuery::all_threads())?
            .into_iter()
            .map(|t| (t.tid, t.allowed))
            .collect();
        Ok(FakeSystem {
            root,
            affinity,
            member: HashMap::new(),
            refuse_irqs: Vec::new(),
            fail_writes: Vec::new(),
            invalid_partition: false,
            log: Vec::new(),
            irqbalance: true,
        })
    }

    fn task_dir(&self, tid: u32) -> Option<String> {
        self.root
            .list_numeric("/proc")
            .ok()?
            .into_iter()
            .map(|pid| format!("/proc/{pid}/task/{tid}"))
            .find(|d| self.root.exists(format!("{d}/stat")))
    }

    /// Rewrites one line of a thread's file (`Cpus_allowed_list:` of status, the
    /// cpuset line of cgroup).
    fn mirror(&self, tid: u32, file: &str, starts: &str, line: String) {
        let Some(dir) = self.task_dir(tid) else {
            return;
        };
        let path = format!("{dir}/{file}");
        let text = self.root.read(&path).unwrap_or_default();
        let mut lines: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with(starts))
            .map(str::to_string)
            .collect();
        lines.push(line);
        let _ = std::fs::write(self.root.path(&path), lines.join("\n") + "\n");
    }

    fn store_affinity(&mut self, tid: u32, set: CpuSet) {
        self.mirror(
            tid,
            "status",
            "Cpus_allowed_list:",
            format!("Cpus_allowed_list:\t{set}"),
        );
        self.affinity.insert(tid, set);
    }

    /// The CPUs a thread's cpuset allows.
    fn cpuset_cpus(&self, tid: u32) -> Option<CpuSet> {
        let dir = self.member.get(&tid)?;
        ["cpuset.cpus", "cpus"]
            .iter()
            .find_map(|f| self.root.read_cpu_list_opt(format!("{dir}/{f}")).ok()?)
    }

    fn attach(&mut self, file: &str, value: &str) -> Result<()> {
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d).to_string();
        let tid: u32 = value
            .trim()
            .parse()
            .map_err(|_| errno(file, libc::EINVAL))?;
        if !self.affinity.contains_key(&tid) {
            return Err(errno(file, libc::ESRCH));
        }
        self.log.push(format!("attach {tid} to {dir}"));
        let cgroup_path = self
            .cpuset_mount()
            .and_then(|m| dir.strip_prefix(&m).map(str::to_string))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/".into());
        self.mirror(
            tid,
            "cgroup",
            "3:cpuset:",
            format!("3:cpuset:{cgroup_path}"),
        );
        if cgroup_path == "/" {
            self.member.remove(&tid);
            let online = self.root.read_cpu_list("/sys/devices/system/cpu/online")?;
            self.store_affinity(tid, online);
        } else {
            self.member.insert(tid, dir);
            if let Some(cpus) = self.cpuset_cpus(tid) {
                self.store_affinity(tid, cpus);
            }
        }
        Ok(())
    }

    fn cpuset_mount(&self) -> Option<String> {
        crate::cgroups::Cgroups::read(&self.root).ok()?.cpuset_mount
    }
}

impl System for FakeSystem {
    fn root(&self) -> &Root {
        &self.root
    }

    fn write(&mut self, path: &str, value: &str) -> Result<()> {
        if self.fail_writes.iter().any(|p| p == path) {
            return Err(errno(path, libc::EINVAL));
        }
        if path.ends_with("/tasks") || path.ends_with("/cgroup.procs") {
            return self.attach(path, value);
        }
        if !self.root.path(path).is_file() {
            return Err(errno(path, libc::ENOENT));
        }
        let stored = if path.ends_with("cpuset.cpus.partition")
            && value == "isolated"
            && self.invalid_partition
        {
            "isolated invalid (Cpu list in cpuset.cpus not exclusive)".to_string()
        } else {
            value.to_string()
        };
        self.log.push(format!("write {path} {stored}"));
        std::fs::write(self.root.path(path), format!("{stored}\n")).map_err(|e| Error::io(path, e))
    }

    fn mkdir(&mut self, path: &str) -> Result<()> {
        let p = self.root.path(path);
        std::fs::create_dir(&p).map_err(|e| Error::io(&p, e))?;
        for (f, v) in [
            ("cpuset.cpus", ""),
            ("cpuset.mems", ""),
            ("cpuset.cpu_exclusive", "0"),
            ("cpuset.sched_load_balance", "1"),
            ("cpuset.cpus.partition", "member"),
            ("tasks", ""),
            ("cgroup.procs", ""),
        ] {
            std::fs::write(p.join(f), format!("{v}\n")).map_err(|e| Error::io(&p, e))?;
        }
        self.log.push(format!("mkdir {path}"));
        Ok(())
    }

    fn rmdir(&mut self, path: &str) -> Result<()> {
        if !self.root.path(path).is_dir() {
            return Err(errno(path, libc::ENOENT));
        }
        if self.member.values().any(|d| d == path) {
            return Err(errno(path, libc::EBUSY));
        }
        self.log.push(format!("rmdir {path}"));
        std::fs::remove_dir_all(self.root.path(path)).map_err(|e| Error::io(path, e))
    }

    fn set_irq(&mut self, irq: u32, label: &str, cpus: &CpuSet) -> IrqChange {
        let mut change = set_irq_affinity(&self.root, &irq_stub(irq, label), cpus);
        if self.refuse_irqs.contains(&irq) {
            // Put the old mask back: the kernel never took the new one.
            if let Some(old) = &change.old_affinity {
                let _ = std::fs::write(
                    self.root.path(format!("/proc/irq/{irq}/smp_affinity_list")),
                    format!("{old}\n"),
                );
            }
            change.new_affinity = change.old_affinity.clone();
            change.new_effective = change.old_effective.clone();
            change.outcome = IrqOutcome::Refused;
            change.error = Some("EPERM: the kernel does not allow this IRQ's affinity to be changed (per-CPU or managed interrupt)".into());
        } else {
            self.log.push(format!("irq {irq} {cpus}"));
        }
        change
    }

    fn start_ticks(&self, pid: u32, tid: u32) -> Option<u64> {
        read_start_ticks(&self.root, pid, tid)
    }

    fn get_affinity(&self, tid: u32) -> io::Result<CpuSet> {
        self.affinity
            .get(&tid)
            .cloned()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
    }

    fn set_affinity(&mut self, tid: u32, cpus: &CpuSet) -> io::Result<()> {
        if !self.affinity.contains_key(&tid) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        let allowed = match self.cpuset_cpus(tid) {
            Some(c) => cpus.intersection(&c),
            None => cpus.clone(),
        };
        if allowed.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        self.log.push(format!("affinity {tid} {allowed}"));
        self.store_affinity(tid, allowed);
        Ok(())
    }

    fn stop_irqbalance(&mut self, ib: &Irqbalance) -> Result<()> {
        self.log.push(format!("stop irqbalance {}", ib.pid));
        self.irqbalance = false;
        Ok(())
    }

    fn start_irqbalance(&mut self, _ib: &Irqbalance) -> Result<()> {
        self.log.push("start irqbalance".into());
        self.irqbalance = true;
        Ok(())
    }
}
