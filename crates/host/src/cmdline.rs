//! The kernel command line (`/proc/cmdline`) and the isolation options in it.
//!
//! The line is held once, as read; its parameters are split from it when asked for
//! (as slices of it, an owned copy only for a word with quotes), never collected: a
//! 16 MB line of short options would cost some 400 bytes an option as strings.

use std::borrow::Cow;

use jitterlab_cpuset::CpuSet;
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

/// The kernel's parameters, in order; what follows `--` belongs to init and is left out.
/// Serialized as `{"raw": LINE, "params": [[KEY, VALUE or null], ...]}`.
#[derive(Clone, Debug, Default)]
pub struct Cmdline {
    /// The full line as the kernel gave it (trimmed).
    pub raw: String,
}

/// One parameter: `key`, and the value of `key=value`.
pub type Param<'a> = (Cow<'a, str>, Option<Cow<'a, str>>);

/// What the command line asks of CPU isolation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BootIsolation {
    /// `isolcpus=`: the CPUs; absent when the option is not given.
    pub isolcpus: Option<CpuSet>,
    /// `isolcpus=` flags (`domain`, `managed_irq`, `nohz`), each once, in the order
    /// first given; `domain` when none is given.
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
        Ok(Cmdline::from_string(root.read("/proc/cmdline")?))
    }

    /// A command line. Double-quoted values may hold spaces.
    pub fn parse(raw: &str) -> Cmdline {
        Cmdline {
            raw: raw.trim().to_string(),
        }
    }

    /// A command line, trimmed in place (no copy).
    fn from_string(mut raw: String) -> Cmdline {
        raw.truncate(raw.trim_end().len());
        let lead = raw.len() - raw.trim_start().len();
        raw.drain(..lead);
        Cmdline { raw }
    }

    /// The `key` or `key=value` parameters before any `--`, in order. A word is split
    /// at white space outside double quotes, and its quotes are dropped.
    pub fn params(&self) -> impl Iterator<Item = Param<'_>> + '_ {
        Words {
            rest: &self.raw,
            done: false,
        }
        .map(|w| match w {
            Cow::Borrowed(w) => match w.split_once('=') {
                Some((k, v)) => (Cow::Borrowed(k), Some(Cow::Borrowed(v))),
                None => (Cow::Borrowed(w), None),
            },
            Cow::Owned(w) => match w.split_once('=') {
                Some((k, v)) => (Cow::Owned(k.to_string()), Some(Cow::Owned(v.to_string()))),
                None => (Cow::Owned(w), None),
            },
        })
    }

    /// The value of the last `key=value` (the kernel honours the last one), or
    /// `Some("")` for a bare `key`.
    pub fn get(&self, key: &str) -> Option<Cow<'_, str>> {
        self.params()
            .filter(|(k, _)| k == key)
            .last()
            .map(|(_, v)| v.unwrap_or(Cow::Borrowed("")))
    }

    /// Whether `key` is given, with or without a value.
    pub fn has(&self, key: &str) -> bool {
        self.params().any(|(k, _)| k == key)
    }

    /// The isolation options, parsed. `possible` gives the meaning of the
    /// kernel's `N` (the last CPU) and `all` in boot CPU lists. A malformed CPU
    /// list is an error that names the option.
    pub fn isolation(&self, possible: &CpuSet) -> Result<BootIsolation> {
        // One pass over the line for the last value of each option.
        let [mut isolcpus, mut nohz_full, mut rcu_nocbs, mut irqaffinity] =
            [None, None, None, None];
        let mut threadirqs = false;
        for (k, v) in self.params() {
            let slot = match &*k {
                "isolcpus" => &mut isolcpus,
                "nohz_full" => &mut nohz_full,
                "rcu_nocbs" => &mut rcu_nocbs,
                "irqaffinity" => &mut irqaffinity,
                "threadirqs" => {
                    threadirqs = true;
                    continue;
                }
                _ => continue,
            };
            *slot = Some(v.unwrap_or(Cow::Borrowed("")));
        }
        let list = |key: &str, v: Option<Cow<'_, str>>| -> Result<Option<CpuSet>> {
            v.map(|v| boot_cpu_list(key, &v, possible)).transpose()
        };
        let mut iso = BootIsolation {
            nohz_full: list("nohz_full", nohz_full)?,
            rcu_nocbs: list("rcu_nocbs", rcu_nocbs)?,
            irqaffinity: list("irqaffinity", irqaffinity)?,
            threadirqs,
            ..BootIsolation::default()
        };
        if let Some(v) = isolcpus {
            let is_flag = |item: &str| matches!(item, "domain" | "managed_irq" | "nohz");
            for item in v.split(',').filter(|i| is_flag(i)) {
                if !iso.isolcpus_flags.iter().any(|f| f == item) {
                    iso.isolcpus_flags.push(item.to_string());
                }
            }
            // The CPUs are the items that are no flag: the value itself when it has none.
            let cpus = if iso.isolcpus_flags.is_empty() {
                iso.isolcpus_flags.push("domain".to_string());
                Cow::Borrowed(&*v)
            } else {
                let mut rest = String::with_capacity(v.len());
                for (i, item) in v.split(',').filter(|i| !is_flag(i)).enumerate() {
                    if i > 0 {
                        rest.push(',');
                    }
                    rest.push_str(item);
                }
                Cow::Owned(rest)
            };
            iso.isolcpus = Some(boot_cpu_list("isolcpus", &cpus, possible)?);
        }
        Ok(iso)
    }
}

impl Serialize for Cmdline {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        /// The parameters, serialized as they are split (never collected).
        struct Params<'a>(&'a Cmdline);
        impl Serialize for Params<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_seq(self.0.params())
            }
        }
        let mut st = s.serialize_struct("Cmdline", 2)?;
        st.serialize_field("raw", &self.raw)?;
        st.serialize_field("params", &Params(self))?;
        st.end()
    }
}

/// The words of a command line up to `--`: white space outside double quotes separates
/// them, quotes are dropped, and a word left empty is none. A word without quotes is a
/// slice of the line.
struct Words<'a> {
    rest: &'a str,
    done: bool,
}

impl<'a> Iterator for Words<'a> {
    type Item = Cow<'a, str>;

    fn next(&mut self) -> Option<Cow<'a, str>> {
        while !self.done {
            let s = self.rest.trim_start();
            if s.is_empty() {
                self.done = true;
                return None;
            }
            let mut quoted = false;
            let mut quotes = false;
            let end = s
                .char_indices()
                .find(|&(_, c)| {
                    if c == '"' {
                        quoted = !quoted;
                        quotes = true;
                    }
                    c.is_whitespace() && !quoted
                })
                .map_or(s.len(), |(i, _)| i);
            self.rest = &s[end..];
            let word = if quotes {
                Cow::Owned(s[..end].replace('"', ""))
            } else {
                Cow::Borrowed(&s[..end])
            };
            if word == "--" {
                self.done = true;
            } else if !word.is_empty() {
                return Some(word);
            }
        }
        None
    }
}

/// Parses a CPU list of a boot option, where the kernel also accepts `all`
/// and `N` for the last possible CPU (`nohz_full=2-N`).
fn boot_cpu_list(key: &str, value: &str, possible: &CpuSet) -> Result<CpuSet> {
    let last = possible.last().unwrap_or(0);
    let set = if value.trim() == "all" {
        CpuSet::parse_list(&format!("0-{last}"))
    } else {
        CpuSet::parse_list_with_last(value, last)
    };
    set.map_err(|cause| Error::CpuSet {
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
        assert_eq!(c.params().count(), 2);
        assert_eq!(c.get("panic").as_deref(), Some("1"));
        assert_eq!(c.get("quiet").as_deref(), Some(""));
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
        assert_eq!(c.get("dyndbg").as_deref(), Some("a b"));
    }

    #[test]
    fn words_quotes_and_serialized_form() {
        let c = Cmdline::parse("  ro a=\"x y\" \"b=1 2\"c \"\" e=  f=g=h\t\"--\" after\n");
        let params: Vec<_> = c.params().collect();
        assert_eq!(
            params,
            [
                ("ro".into(), None),
                ("a".into(), Some("x y".into())),
                ("b".into(), Some("1 2c".into())),
                ("e".into(), Some("".into())),
                ("f".into(), Some("g=h".into())),
            ]
        );
        assert!(
            matches!(params[0].0, Cow::Borrowed(_)),
            "a word without quotes is a slice"
        );
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"raw":"ro a=\"x y\" \"b=1 2\"c \"\" e=  f=g=h\t\"--\" after","params":[["ro",null],["a","x y"],["b","1 2c"],["e",""],["f","g=h"]]}"#
        );
        assert_eq!(Cmdline::from_string(" \n a=1 \n".into()).raw, "a=1");
        assert_eq!(Cmdline::parse("").params().count(), 0);
    }

    #[test]
    fn isolcpus_flags_once_and_anywhere() {
        let iso = Cmdline::parse("isolcpus=2,domain,3,nohz,domain,,4 isolcpus=1,nohz,domain,2")
            .isolation(&CpuSet::first_n(8))
            .unwrap();
        assert_eq!(iso.isolcpus.unwrap().to_string(), "1-2");
        assert_eq!(iso.isolcpus_flags, ["nohz", "domain"]);
        let e = Cmdline::parse("isolcpus=2,domain,,4")
            .isolation(&CpuSet::first_n(8))
            .unwrap_err();
        assert!(e.to_string().contains("\"2,,4\" at column 3"), "{e}");
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
