//! Which hypervisor runs this machine, by name, and where that was read.
//!
//! The CPU's `hypervisor` flag says only that the machine is virtual. The name comes,
//! in this order, from `/sys/hypervisor/type` (Xen), the hypervisor's own signature in
//! CPUID leaf 0x40000000 (`KVMKVMKVM`, `Microsoft Hv`, `VMwareVMware` ...; read on the
//! live machine only, and only when the CPU says it runs under a hypervisor), the
//! kernel's own word in its paravirtual clocksources (`kvm-clock`, `xen`,
//! `hyperv_clocksource_*`, in `available_clocksource`), the firmware's vendor
//! (`/sys/class/dmi/id/sys_vendor`); else the flag alone.

use crate::error::Result;
use crate::root::Root;

/// The file the kernel lists its clocksources in.
pub const CLOCKSOURCES: &str = "/sys/devices/system/clocksource/clocksource0/available_clocksource";

/// A virtual machine's hypervisor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hypervisor {
    /// Its name (`KVM`, `Xen`, `Hyper-V`, `VMware`, `QEMU (TCG)` ...), or `None` when
    /// only the CPU's hypervisor flag says the machine is virtual.
    pub name: Option<String>,
    /// Where it was read: a file, or `CPUID 0x40000000`.
    pub source: String,
    /// What was read there.
    pub value: String,
}

impl Hypervisor {
    /// One line for people: `KVM, CPUID 0x40000000: KVMKVMKVM`, `hypervisor flag in
    /// /proc/cpuinfo` without a name.
    pub fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("{n}, {}: {}", self.source, self.value),
            None => format!("{} in {}", self.value, self.source),
        }
    }

    /// The hypervisor under the machine below `root`, or `None` when nothing says it
    /// is virtual. CPUID is read only on the live machine.
    pub fn read(root: &Root) -> Result<Option<Hypervisor>> {
        let cpuid = if root.is_live() {
            cpuid_signature()
        } else {
            None
        };
        Hypervisor::read_with(root, cpuid)
    }

    /// As [`Hypervisor::read`], with the CPUID signature given (`None`: not read, or
    /// no hypervisor leaf).
    pub fn read_with(root: &Root, cpuid: Option<[u8; 12]>) -> Result<Option<Hypervisor>> {
        let line = |p: &str| -> Result<Option<String>> {
            Ok(root
                .read_line_opt(p)?
                .filter(|s| !s.is_empty() && s != "none"))
        };
        let found = |name: &str, source: &str, value: String| {
            Ok(Some(Hypervisor {
                name: Some(name.to_string()),
                source: source.to_string(),
                value,
            }))
        };
        if let Some(t) = line("/sys/hypervisor/type")? {
            let name = match t.as_str() {
                "xen" => "Xen".to_string(),
                "kvm" => "KVM".to_string(),
                other => other.to_string(),
            };
            return found(&name, "/sys/hypervisor/type", t);
        }
        if let Some(sig) = cpuid {
            if let Some(name) = signature_name(&sig) {
                return found(name, "CPUID 0x40000000", printable(&sig));
            }
        }
        if let Some(list) = line(CLOCKSOURCES)? {
            let named = list.split_whitespace().find_map(|c| {
                Some((
                    match c {
                        "kvm-clock" => "KVM",
                        "xen" => "Xen",
                        _ if c.starts_with("hyperv_clocksource") => "Hyper-V",
                        _ => return None,
                    },
                    c,
                ))
            });
            if let Some((name, clock)) = named {
                return found(name, CLOCKSOURCES, clock.to_string());
            }
        }
        if let Some(v) = line("/sys/class/dmi/id/sys_vendor")? {
            let name = [
                ("QEMU", "QEMU"),
                ("KVM", "KVM"),
                ("VMware", "VMware"),
                ("Xen", "Xen"),
                ("Microsoft", "Hyper-V"),
                ("innotek", "VirtualBox"),
                ("Amazon EC2", "Amazon EC2"),
            ]
            .iter()
            .find(|(k, _)| v.contains(k))
            .map(|(_, n)| *n);
            if let Some(name) = name {
                return found(name, "/sys/class/dmi/id/sys_vendor", v);
            }
        }
        let cpuinfo = root.read_opt("/proc/cpuinfo")?.unwrap_or_default();
        let flagged = cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
        Ok(flagged.then(|| Hypervisor {
            name: None,
            source: "/proc/cpuinfo".into(),
            value: "hypervisor flag".into(),
        }))
    }
}

/// The hypervisor a CPUID 0x40000000 vendor signature names (EBX, ECX, EDX as bytes).
pub fn signature_name(sig: &[u8; 12]) -> Option<&'static str> {
    let known: &[(&[u8], &str)] = &[
        (b"KVMKVMKVM\0\0\0", "KVM"),
        (b"Linux KVM Hv", "KVM"),
        (b"Microsoft Hv", "Hyper-V"),
        (b"VMwareVMware", "VMware"),
        (b"XenVMMXenVMM", "Xen"),
        (b"TCGTCGTCGTCG", "QEMU (TCG)"),
        (b" lrpepyh  vr", "Parallels"),
        (b"bhyve bhyve ", "bhyve"),
        (b"ACRNACRNACRN", "ACRN"),
        (b"VBoxVBoxVBox", "VirtualBox"),
        (b"Jailhouse\0\0\0", "Jailhouse"),
        (b"QNXQVMBSQG\0\0", "QNX"),
        (b"SRESRESRESRE", "Apple Virtualization"),
    ];
    known.iter().find(|(s, _)| *s == sig).map(|(_, n)| *n)
}

/// The signature as text: NULs dropped.
fn printable(sig: &[u8; 12]) -> String {
    String::from_utf8_lossy(sig)
        .trim_end_matches('\0')
        .to_string()
}

/// The vendor signature of CPUID leaf 0x40000000 when the CPU says it runs under a
/// hypervisor (CPUID.1:ECX bit 31); on bare metal that leaf is undefined. KVM with
/// Hyper-V enlightenments shows `Microsoft Hv` there and its own signature at
/// 0x40000100, which is preferred.
#[cfg(target_arch = "x86_64")]
pub fn cpuid_signature() -> Option<[u8; 12]> {
    use std::arch::x86_64::__cpuid;
    let leaf = |l: u32| {
        // SAFETY: CPUID exists on every x86_64 CPU and has no side effects; leaves a CPU
        // does not define return some other leaf's values, never fault.
        #[allow(unused_unsafe)]
        let r = unsafe { __cpuid(l) };
        let mut sig = [0u8; 12];
        sig[..4].copy_from_slice(&r.ebx.to_le_bytes());
        sig[4..8].copy_from_slice(&r.ecx.to_le_bytes());
        sig[8..].copy_from_slice(&r.edx.to_le_bytes());
        (r.eax, sig)
    };
    // SAFETY: as above.
    #[allow(unused_unsafe)]
    let hypervisor_bit = unsafe { __cpuid(1) }.ecx >> 31 == 1;
    if !hypervisor_bit {
        return None;
    }
    let (max, sig) = leaf(0x4000_0000);
    if signature_name(&sig) == Some("Hyper-V") && max >= 0x4000_0100 {
        let (_, inner) = leaf(0x4000_0100);
        if signature_name(&inner) == Some("KVM") {
            return Some(inner);
        }
    }
    Some(sig)
}

/// No CPUID on this architecture.
#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid_signature() -> Option<[u8; 12]> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        assert_eq!(signature_name(b"KVMKVMKVM\0\0\0"), Some("KVM"));
        assert_eq!(signature_name(b"Microsoft Hv"), Some("Hyper-V"));
        assert_eq!(signature_name(b"VMwareVMware"), Some("VMware"));
        assert_eq!(signature_name(b"XenVMMXenVMM"), Some("Xen"));
        assert_eq!(signature_name(b"GenuineIntel"), None);
        assert_eq!(printable(b"KVMKVMKVM\0\0\0"), "KVMKVMKVM");
    }

    #[test]
    fn described() {
        let h = Hypervisor {
            name: Some("KVM".into()),
            source: "CPUID 0x40000000".into(),
            value: "KVMKVMKVM".into(),
        };
        assert_eq!(h.describe(), "KVM, CPUID 0x40000000: KVMKVMKVM");
        let flag = Hypervisor {
            name: None,
            source: "/proc/cpuinfo".into(),
            value: "hypervisor flag".into(),
        };
        assert_eq!(flag.describe(), "hypervisor flag in /proc/cpuinfo");
    }
}
