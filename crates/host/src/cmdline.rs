//! The kernel command line (`/proc/cmdline`) and the isolation options in it.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

/// The kernel's parameters, in order; what follows `--` belongs to init and is left out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cmdline {
    /// The full line as the kernel gave it.
    pub raw: String,
    /// `key` or `key=value` parameters before any `--`.
    pub params: Vec<(String, Option<String>)>,
}

/// What the command line asks of CPU isolation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BootIsolation {
    /// `isolcpus=`: the CPUs; absent when the option is not given.
    pub isolcpus: Option<CpuSet>,
    /// `isolcpus=` flags (`domain`, `managed_irq`, `nohz`); `domain` when none is given.
    pub isolcpus_flags: Vec<String>,
    /// `nohz_full=`.
    pub nohz_full: Option<CpuSet>,
    /// `rcu_nocbs=`.
    pub rcu_nocbs: Option<CpuSet>,
    /// `irqaffinity=`: the default IRQ affinity at boot.
    pub irqaffinity: Option<CpuSet>,
    /// `threadirqs`: device IRQ handlers run in threads that can be moved.
    pub threadirqs: bool,
}

impl Cmdline {
    /// Reads `/proc/cmdline`.
    pub fn read(root: &Root) -> Result<Cmdline> {
        Ok(Cmdline::parse(&root.read("/proc/cmdline")?))
    }

    /// Splits a command line into parameters. Double-quoted values may hold spaces.
    pub fn parse(raw: &str) -> Cmdline {
        let mut params = Vec::new();
        let mut word = String::new();
        let mut quoted = false;
        let mut words = Vec::new();
        for c in raw.trim().chars() {
            match c {
                '"' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        for w in words {
            if w == "--" {
                break;
            }
            match w.split_once('=') {
                Some((k, v)) => params.push((k.to_string(), Some(v.to_string()))),
                None => params.push((w, None)),
            }
        }
        Cmdline {
            raw: raw.trim().to_string(),
            params,
        }
    }

    /// The value of the last `key=value` (the kernel honours the last one), or
    /// `Some("")` for a bare `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    /// Whether `key` is given, with or without a value.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The isolation options, parsed. `possible` gives the meaning of the
    /// kernel's `N` (the last CPU) and `all` in boot CPU lists. A malformed CPU
    /// list is an error that names the option.
    pub fn isolation(&self, possible: &CpuSet) -> Result<BootIsolation> {
        let list = |key: &str| -> Result<Option<CpuSet>> {
            self.get(key)
                .map(|v| boot_cpu_list(key, v, possible))
                .transpose()
        };
        let mut iso = BootIsolation {
            nohz_full: list("nohz_full")?,
            rcu_nocbs: list("rcu_nocbs")?,
            irqaffinity: list("irqaffinity")?,
            threadirqs: self.has("threadirqs"),
            ..BootIsolation::default()
        };
        if let Some(v) = self.get("isolcpus") {
            let mut rest = Vec::new();
            for item in v.split(',') {
                match item {
                    "domain" | "managed_irq" | "nohz" => iso.isolcpus_flags.push(item.to_string()),
                    _ => rest.push(item),
                }
            }
            if iso.isolcpus_flags.is_empty() {
                iso.isolcpus_flags.push("domain".to_string());
            }
            iso.isolcpus = Some(boot_cpu_list("isolcpus", &rest.join(","), possible)?);
        }
        Ok(iso)
    }
}

/// Parses a CPU list of a boot option, where the kernel also accepts `all`
/// and `N` for the last possible CPU (`nohz_full=2-N`).
fn boot_cpu_list(key: &str, value: &str, possible: &CpuSet) -> Result<CpuSet> {
    let last = possible.last().unwrap_or(0).to_string();
    let value = if value.trim() == "all" {
        format!("0-{last}")
    } else {
        value
            .split(',')
            .map(|part| {
                part.split('-')
                    .map(|end| match end.strip_prefix('N') {
                        // N, or N:2/4 at the end of a strided range
                        Some(rest) if rest.is_empty() || rest.starts_with(':') => {
                            format!("{last}{rest}")
                        }
                        _ => end.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("-")
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    CpuSet::parse_list(&value).map_err(|cause| Error::CpuSet {
        path: format!("/proc/cmdline {key}=").into(),
        cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_init_arguments() {
        let c = Cmdline::parse("quiet panic=1 -- --firecracker-init --addr 0.0.0.0:2024\n");
        assert_eq!(c.params.len(), 2);
        assert_eq!(c.get("panic"), Some("1"));
        assert_eq!(c.get("quiet"), Some(""));
        assert!(!c.has("--addr"));
    }

    #[test]
    fn isolation_options() {
        let c = Cmdline::parse(
            "isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 threadirqs dyndbg=\"a b\"",
        );
        let iso = c.isolation(&CpuSet::first_n(8)).unwrap();
        assert_eq!(iso.isolcpus.unwrap().to_string(), "2-3");
        assert_eq!(iso.isolcpus_flags, ["managed_irq", "domain"]);
        assert_eq!(iso.nohz_full.unwrap().to_string(), "2-3");
        assert_eq!(iso.irqaffinity.unwrap().to_string(), "0-1");
        assert!(iso.threadirqs);
        assert_eq!(c.get("dyndbg"), Some("a b"));
    }

    #[test]
    fn plain_isolcpus_means_domain() {
        let iso = Cmdline::parse("isolcpus=1,3")
            .isolation(&CpuSet::first_n(8))
            .unwrap();
        assert_eq!(iso.isolcpus.unwrap().to_string(), "1,3");
        assert_eq!(iso.isolcpus_flags, ["domain"]);
    }

    #[test]
    fn last_cpu_and_all() {
        let possible = CpuSet::first_n(16);
        let iso = Cmdline::parse("isolcpus=managed_irq,domain,2-N nohz_full=N rcu_nocbs=all")
            .isolation(&possible)
            .unwrap();
        assert_eq!(iso.isolcpus.unwrap().to_string(), "2-15");
        assert_eq!(iso.nohz_full.unwrap().to_string(), "15");
        assert_eq!(iso.rcu_nocbs.unwrap(), possible);
        let iso = Cmdline::parse("nohz_full=0-N:1/4")
            .isolation(&possible)
            .unwrap();
        assert_eq!(iso.nohz_full.unwrap().to_string(), "0,4,8,12");
    }

    #[test]
    fn bad_list_names_the_option() {
        let e = Cmdline::parse("nohz_full=1-x")
            .isolation(&CpuSet::first_n(8))
            .unwrap_err();
        assert!(e.to_string().contains("nohz_full="), "{e}");
    }
}
