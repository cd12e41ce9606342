//! IRQ checks: the effective affinity of every IRQ and the default mask against the
//! RT CPUs, managed IRQs that cannot move, irqbalance running without a ban.

use jitterlab_cpuset::CpuSet;

use super::{Facts, Family, Finding, FixKind, Severity};
use crate::error::Result;
use crate::irqs::{Irq, IrqMap};

/// Whether an IRQ is managed by the kernel (its affinity write fails with EIO), and
/// how that is known: the debugfs flags where debugfs is mounted, else the names of
/// the drivers whose queue IRQs are managed (virtio block, NVMe I/O queues).
pub fn managed(root: &crate::Root, irq: &Irq) -> Option<&'static str> {
    let debug = format!("/sys/kernel/debug/irq/irqs/{}", irq.irq);
    if let Ok(Some(text)) = root.read_opt(&debug) {
        return text
            .contains("AFFINITY_MANAGED")
            .then_some("IRQD_AFFINITY_MANAGED in debugfs");
    }
    irq.actions().find_map(|a| {
        let virtio_blk = a.starts_with("virtio") && (a.contains("-req.") || a.contains("-request"));
        let nvme_io = a
            .strip_prefix("nvme")
            .and_then(|r| r.split_once('q'))
            .is_some_and(|(_, q)| q.parse::<u32>().is_ok_and(|q| q > 0));
        if virtio_blk {
            Some("a virtio block queue, whose affinity the kernel manages")
        } else if nvme_io {
            Some("an NVMe I/O queue, whose affinity the kernel manages")
        } else {
            None
        }
    })
}

pub(super) fn check(f: &Facts, out: &mut Vec<Finding>, needs_root: &mut Vec<String>) -> Result<()> {
    let rt = &f.rt;
    let hk = &f.housekeeping;
    let map = match IrqMap::read(f.root) {
        Ok(m) => m,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    let audit = f.reboot_check();
    let managed_ok = f.boot.isolcpus_flags.iter().any(|x| x == "managed_irq")
        && f.boot.isolcpus.as_ref().is_some_and(|s| rt.is_subset(s));
    for irq in &map.irqs {
        let Some(to) = irq.delivered_to() else {
            continue;
        };
        let here = to.intersection(rt);
        if here.is_empty() {
            continue;
        }
        let count: u64 = map
            .cpus
            .iter()
            .zip(&irq.counts)
            .filter(|(c, _)| rt.contains(**c))
            .map(|(_, n)| n)
            .sum();
        let name = format!("IRQ {} {}", irq.irq, irq.label());
        let path = format!("/proc/irq/{}/effective_affinity_list", irq.irq);
        let counted = format!("{count} on CPU {here} since boot");
        // Configured off the RT CPUs, still delivered there: an edge IRQ moves when it
        // next fires.
        let pending = irq.affinity().is_some_and(|a| !a.intersects(rt));
        let mut x = match managed(f.root, irq) {
            _ if pending => Finding::new(
                "irqs.pending_move",
                Family::Irqs,
                Severity::Info,
                format!("{name} is set to CPU {} and still delivered to CPU {here} until it next fires", irq.affinity().map_or(String::new(), |a| a.to_string())),
            )
            .why("the kernel moves an edge-triggered IRQ when it next fires; until then its last CPU keeps it"),
            Some(how) => Finding::new(
                "irqs.managed",
                Family::Irqs,
                Severity::Medium,
                format!("{name} is delivered to CPU {here} and cannot be moved ({how})"),
            )
            .why(
                "a managed IRQ refuses affinity writes, so neither irqbalance nor jitterlab \
                 isolate can move it; only a boot option keeps it off the RT CPUs",
            )
            .fix(
                FixKind::Boot,
                if managed_ok {
                    "none at run time: managed_irq avoids the CPU only while another CPU of \
                     the queue's mask is online; give the device fewer queues"
                        .to_string()
                } else {
                    format!("isolcpus=managed_irq,domain,{rt}")
                },
                &audit,
            ),
            None => Finding::new(
                "irqs.on_rt_cpu",
                Family::Irqs,
                if count > 0 { Severity::Medium } else { Severity::Low },
                format!("{name} is delivered to CPU {here}"),
            )
            .why("its handler interrupts whatever runs there, and wakes its softirq or thread there too")
            .fix(
                FixKind::Jitterlab,
                format!("jitterlab irq set {} {hk} (jitterlab isolate {rt} moves every IRQ)", irq.irq),
                f.verify(),
            ),
        }
        .subject(format!("IRQ {}", irq.irq))
        .cpus(&here)
        .evidence(&path, to.to_string())
        .evidence("/proc/interrupts", counted);
        if let Some(a) = irq.affinity() {
            x = x.evidence(
                &format!("/proc/irq/{}/smp_affinity_list", irq.irq),
                a.to_string(),
            );
        }
        out.push(x);
    }
    if let Some(d) = map.default_affinity.as_ref().filter(|d| d.intersects(rt)) {
        out.push(
            Finding::new(
                "irqs.default_affinity",
                Family::Irqs,
                Severity::Low,
                format!("new IRQs may go to CPU {}", d.intersection(rt)),
            )
            .cpus(&d.intersection(rt))
            .evidence("/proc/irq/default_smp_affinity", d.to_string())
            .why("an IRQ set up from now on (a device, a VF, a module) starts on the RT CPUs")
            .fix(
                FixKind::Jitterlab,
                format!("jitterlab irq default {hk}"),
                f.verify(),
            ),
        );
    }
    irqbalance(f, out, needs_root)
}

fn irqbalance(f: &Facts, out: &mut Vec<Finding>, needs_root: &mut Vec<String>) -> Result<()> {
    let Some(pid) = crate::tasks::find_irqbalance(f.root)? else {
        return Ok(());
    };
    let rt = &f.rt;
    // irqbalance leaves alone the CPUs of isolcpus and nohz_full (1.8 and later), and
    // those of IRQBALANCE_BANNED_CPULIST / IRQBALANCE_BANNED_CPUS.
    let mut banned = f
        .root
        .read_cpu_list_opt("/sys/devices/system/cpu/isolated")
        .ok()
        .flatten()
        .unwrap_or_default();
    if let Some(n) = &f.boot.nohz_full {
        banned = banned.union(n);
    }
    let mut evidence = vec![(format!("/proc/{pid}/comm"), "irqbalance".to_string())];
    let environ = f.root.read_opt(format!("/proc/{pid}/environ"));
    if environ.is_err() && f.root.is_live() && !f.is_root {
        needs_root.push(format!(
            "irqbalance's environment (/proc/{pid}/environ): its banned CPUs"
        ));
    }
    let mut sources = vec![(
        format!("/proc/{pid}/environ"),
        environ
            .ok()
            .flatten()
            .unwrap_or_default()
            .replace('\0', "\n"),
    )];
    for p in ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"] {
        if let Ok(Some(t)) = f.root.read_opt(p) {
            sources.push((p.to_string(), t));
        }
    }
    for (path, text) in &sources {
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            let set = match k.trim() {
                "IRQBALANCE_BANNED_CPULIST" => CpuSet::parse_list(v).ok(),
                "IRQBALANCE_BANNED_CPUS" => CpuSet::parse_mask(v).ok(),
                _ => None,
            };
            if let Some(s) = set {
                banned = banned.union(&s);
                evidence.push((path.clone(), line.to_string()));
            }
        }
    }
    let exposed = rt.difference(&banned);
    if exposed.is_empty() {
        return Ok(());
    }
    let mut x = Finding::new(
        "irqs.irqbalance",
        Family::Irqs,
        Severity::Medium,
        format!("irqbalance (pid {pid}) runs and may move IRQs onto CPU {exposed}"),
    )
    .cpus(&exposed)
    .why("it rewrites IRQ affinities every 10 s, undoing what was set by hand or by isolate")
    .fix(
        FixKind::Jitterlab,
        format!(
            "jitterlab isolate {rt} --stop-irqbalance (or IRQBALANCE_BANNED_CPULIST={rt} in \
             /etc/default/irqbalance, then restart it)"
        ),
        f.verify(),
    );
    if evidence.len() == 1 {
        evidence.push((
            format!("/proc/{pid}/environ"),
            "no IRQBALANCE_BANNED_CPULIST".into(),
        ));
    }
    for (p, v) in evidence {
        x = x.evidence(&p, v);
    }
    out.push(x);
    Ok(())
}
