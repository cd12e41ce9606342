//! The side effects of apply and revert, behind a trait: the live machine, or a
//! fake in tests (`testing::FakeSystem`) that records them on a fixture tree.

use std::io;
use std::process::Stdio;

use jitterlab_cpuset::CpuSet;

use crate::error::{Error, Result};
use crate::irqs::{set_irq_affinity, Irq, IrqChange};
use crate::partition::step::Irqbalance;
use crate::root::Root;
use crate::sched;
use crate::tasks::read_start_ticks;

/// What apply and revert do to a machine.
pub trait System {
    /// Where files are read and written.
    fn root(&self) -> &Root;
    /// Writes a control file (one `write(2)`, as `echo value > file`).
    fn write(&mut self, path: &str, value: &str) -> Result<()>;
    /// Creates a directory (a cgroup).
    fn mkdir(&mut self, path: &str) -> Result<()>;
    /// Removes an empty directory (a cgroup).
    fn rmdir(&mut self, path: &str) -> Result<()>;
    /// Writes an IRQ's `smp_affinity_list` and reads both masks back.
    fn set_irq(&mut self, irq: u32, label: &str, cpus: &CpuSet) -> IrqChange;
    /// The start time of thread `tid` of process `pid`, `None` when it is gone.
    fn start_ticks(&self, pid: u32, tid: u32) -> Option<u64>;
    /// `sched_getaffinity`.
    fn get_affinity(&self, tid: u32) -> io::Result<CpuSet>;
    /// `sched_setaffinity`.
    fn set_affinity(&mut self, tid: u32, cpus: &CpuSet) -> io::Result<()>;
    /// Stops irqbalance.
    fn stop_irqbalance(&mut self, ib: &Irqbalance) -> Result<()>;
    /// Starts irqbalance again.
    fn start_irqbalance(&mut self, ib: &Irqbalance) -> Result<()>;
}

/// The machine this runs on.
#[derive(Debug)]
pub struct LiveSystem {
    root: Root,
}

impl LiveSystem {
    /// The live host.
    pub fn new() -> LiveSystem {
        LiveSystem { root: Root::live() }
    }
}

impl Default for LiveSystem {
    fn default() -> Self {
        LiveSystem::new()
    }
}

/// A stand-in IRQ for [`set_irq_affinity`], which needs only the number and the name.
pub(crate) fn irq_stub(irq: u32, label: &str) -> Irq {
    Irq::named(irq, label)
}

impl System for LiveSystem {
    fn root(&self) -> &Root {
        &self.root
    }

    fn write(&mut self, path: &str, value: &str) -> Result<()> {
        self.root.write(path, value)
    }

    fn mkdir(&mut self, path: &str) -> Result<()> {
        let p = self.root.path(path);
        std::fs::create_dir(&p).map_err(|e| Error::io(p, e))
    }

    fn rmdir(&mut self, path: &str) -> Result<()> {
        let p = self.root.path(path);
        std::fs::remove_dir(&p).map_err(|e| Error::io(p, e))
    }

    fn set_irq(&mut self, irq: u32, label: &str, cpus: &CpuSet) -> IrqChange {
        set_irq_affinity(&self.root, &irq_stub(irq, label), cpus)
    }

    fn start_ticks(&self, pid: u32, tid: u32) -> Option<u64> {
        read_start_ticks(&self.root, pid, tid)
    }

    fn get_affinity(&self, tid: u32) -> io::Result<CpuSet> {
        sched::get_affinity(tid)
    }

    fn set_affinity(&mut self, tid: u32, cpus: &CpuSet) -> io::Result<()> {
        sched::set_affinity(tid, cpus)
    }

    fn stop_irqbalance(&mut self, ib: &Irqbalance) -> Result<()> {
        if let Some(unit) = &ib.unit {
            return systemctl("stop", unit);
        }
        if read_start_ticks(&self.root, ib.pid, ib.pid) != Some(ib.start_ticks) {
            return Ok(()); // already gone
        }
        // SAFETY: kill(2) on the pid checked just above to be irqbalance.
        if unsafe { libc::kill(ib.pid as libc::pid_t, libc::SIGTERM) } != 0 {
            return Err(Error::Sys {
                what: format!("kill(irqbalance pid {}, SIGTERM)", ib.pid),
                cause: io::Error::last_os_error(),
            });
        }
        // A balancing pass under way could still write masks: the IRQ steps wait
        // until it has ended.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while read_start_ticks(&self.root, ib.pid, ib.pid) == Some(ib.start_ticks)
            && !crate::tasks::is_zombie(&self.root, ib.pid)
        {
            if std::time::Instant::now() >= deadline {
                return Err(Error::Invalid(format!(
                    "irqbalance (pid {}) still runs 5 s after SIGTERM",
                    ib.pid
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(())
    }

    fn start_irqbalance(&mut self, ib: &Irqbalance) -> Result<()> {
        if let Some(unit) = &ib.unit {
            return systemctl("start", unit);
        }
        let Some((program, args)) = ib.argv.split_first() else {
            return Err(Error::Invalid(
                "irqbalance's command line was not recorded".into(),
            ));
        };
        // Detached: a session of its own, no terminal, not our child for long.
        let mut cmd = crate::child::child_command(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::setsid();
                Ok(())
            });
        }
        cmd.spawn().map(drop).map_err(|cause| Error::Sys {
            what: format!("starting {program}"),
            cause,
        })
    }
}

fn systemctl(verb: &str, unit: &str) -> Result<()> {
    let status = crate::child::child_command("systemctl")
        .args([verb, unit])
        .stdin(Stdio::null())
        .status()
        .map_err(|cause| Error::Sys {
            what: format!("systemctl {verb} {unit}"),
            cause,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Invalid(format!("systemctl {verb} {unit}: {status}")))
    }
}
