//! cgroups: which hierarchy holds cpuset, and the cpuset tree.

use std::borrow::Cow;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

/// How cgroups are mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Only cgroup v1 controllers.
    V1,
    /// Only the unified cgroup2 hierarchy.
    V2,
    /// v1 controllers and a cgroup2 mount side by side (systemd's hybrid).
    Hybrid,
    /// No cgroup file system is mounted.
    None,
}

/// The cgroup mounts and the cpuset tree.
#[derive(Clone, Debug, Serialize)]
pub struct Cgroups {
    /// v1, v2, hybrid or none.
    pub layout: Layout,
    /// v1 mounts: (controllers or name=..., mount point).
    pub v1_mounts: Vec<(String, String)>,
    /// The cgroup2 mount point.
    pub v2_mount: Option<String>,
    /// 1 or 2: the hierarchy the cpuset controller is on; `None` when it is on neither.
    pub cpuset_version: Option<u8>,
    /// Where that hierarchy is mounted.
    pub cpuset_mount: Option<String>,
    /// The cgroup at that mount point (`/` unless a subtree is bind-mounted);
    /// cpuset paths below include it.
    pub cpuset_mount_root: Option<String>,
    /// v1 mounted with `noprefix` (`mount -t cpuset`, cset): files are `cpus`,
    /// `mems`, ... instead of `cpuset.cpus`.
    pub cpuset_noprefix: bool,
    /// Every cgroup of that hierarchy with cpuset files, the root first.
    pub cpusets: Vec<Cpuset>,
}

/// One cpuset cgroup.
#[derive(Clone, Debug, Serialize)]
pub struct Cpuset {
    /// Path below the mount, `/` for the root.
    pub path: String,
    /// `cpuset.cpus` (empty in v2 means "inherit").
    pub cpus: Option<CpuSet>,
    /// `cpuset.effective_cpus` (v1) or `cpuset.cpus.effective` (v2).
    pub effective_cpus: Option<CpuSet>,
    /// `cpuset.mems`.
    pub mems: Option<CpuSet>,
    /// Effective memory nodes.
    pub effective_mems: Option<CpuSet>,
    /// v1 `cpuset.cpu_exclusive`.
    pub cpu_exclusive: Option<bool>,
    /// v1 `cpuset.mem_exclusive`.
    pub mem_exclusive: Option<bool>,
    /// v1 `cpuset.sched_load_balance`.
    pub sched_load_balance: Option<bool>,
    /// v2 `cpuset.cpus.partition`: member, root, isolated, or `... invalid (reason)`.
    pub partition: Option<String>,
    /// v2 `cpuset.cpus.exclusive`.
    pub cpus_exclusive: Option<CpuSet>,
    /// Tasks (threads) in it.
    pub tasks: usize,
}

/// The file systems whose mounts jitterlab uses: cgroup v1 (`cpuset` is how
/// `mount -t cpuset` may be listed), cgroup2, and tracefs (also below debugfs).
pub const MOUNT_TYPES: [&str; 5] = ["cgroup", "cgroup2", "cpuset", "tracefs", "debugfs"];

/// One line of /proc/self/mountinfo: the fields jitterlab uses, borrowed from the text
/// (a copy only where an octal escape was undone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount<'a> {
    /// Where it is mounted (octal escapes undone).
    pub point: Cow<'a, str>,
    /// The directory of the file system that is mounted there (field 4).
    pub root: Cow<'a, str>,
    /// The file system type (`cgroup`, `cgroup2`, `proc`, ...).
    pub fstype: &'a str,
    /// The super-block options (for cgroup v1: the controllers).
    pub superopts: &'a str,
}

/// The mounts of /proc/self/mountinfo text, a line at a time: each line is checked as
/// it comes (an error names `path` and the line), nothing is collected.
pub fn mounts<'a>(
    path: &'a std::path::Path,
    text: &'a str,
) -> impl Iterator<Item = Result<Mount<'a>>> + 'a {
    text.lines().enumerate().map(move |(i, line)| {
        let Some((left, right)) = line.split_once(" - ") else {
            return Err(Error::parse(
                path,
                i + 1,
                "a mountinfo line with ' - '",
                line,
            ));
        };
        let mount_root = left.split_whitespace().nth(3);
        let point = left.split_whitespace().nth(4);
        let mut r = right.split_whitespace();
        let (fstype, _source, superopts) = (r.next(), r.next(), r.next());
        match (point, fstype) {
            (Some(p), Some(f)) => Ok(Mount {
                point: unescape(p),
                root: unescape(mount_root.unwrap_or("/")),
                fstype: f,
                superopts: superopts.unwrap_or(""),
            }),
            _ => Err(Error::parse(
                path,
                i + 1,
                "a mount point and a file system type",
                line,
            )),
        }
    })
}

/// Parses /proc/self/mountinfo text: every line is checked, and the mounts of the file
/// systems jitterlab uses ([`MOUNT_TYPES`]) are kept, in order.
pub fn parse_mountinfo<'a>(path: &'a std::path::Path, text: &'a str) -> Result<Vec<Mount<'a>>> {
    let mut kept = Vec::new();
    for m in mounts(path, text) {
        let m = m?;
        if MOUNT_TYPES.contains(&m.fstype) {
            kept.push(m);
        }
    }
    Ok(kept)
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n")
            .replace("\\134", "\\"),
    )
}

impl Cgroups {
    /// Reads the mounts and walks the cpuset hierarchy.
    pub fn read(root: &Root) -> Result<Cgroups> {
        let path = root.path("/proc/self/mountinfo");
        let text = root.read("/proc/self/mountinfo")?;
        // The mounts are looked at as they are read: the v1 ones, the last v1 mount of
        // cpuset, the first cgroup2 one.
        let mut v1_mounts = Vec::new();
        let mut cpuset_v1 = None;
        let mut v2 = None;
        for m in mounts(&path, &text) {
            let m = m?;
            match m.fstype {
                "cgroup" => {
                    let ctrls = || {
                        m.superopts
                            .split(',')
                            .filter(|o| !matches!(*o, "rw" | "ro") && !o.contains("relatime"))
                    };
                    if ctrls().any(|c| c == "cpuset") {
                        let noprefix = ctrls().any(|c| c == "noprefix");
                        cpuset_v1 = Some((m.clone(), noprefix));
                    }
                    let mut joined = String::new();
                    for (i, c) in ctrls().enumerate() {
                        if i > 0 {
                            joined.push(',');
                        }
                        joined.push_str(c);
                    }
                    v1_mounts.push((joined, m.point.into_owned()));
                }
                "cgroup2" if v2.is_none() => v2 = Some(m),
                _ => {}
            }
        }
        let v2 = v2.as_ref();
        let layout = match (v1_mounts.is_empty(), v2.is_some()) {
            (false, true) => Layout::Hybrid,
            (false, false) => Layout::V1,
            (true, true) => Layout::V2,
            (true, false) => Layout::None,
        };
        let (cpuset_version, cpuset_at, noprefix) = match (&cpuset_v1, v2) {
            (Some((m, noprefix)), _) => (Some(1), Some(m), *noprefix),
            (None, Some(m)) => {
                let ctrls = root
                    .read_opt(format!("{}/cgroup.controllers", m.point))?
                    .unwrap_or_default();
                if ctrls.split_whitespace().any(|c| c == "cpuset") {
                    (Some(2), Some(m), false)
                } else {
                    (None, None, false)
                }
            }
            (None, None) => (None, None, false),
        };
        let mut cpusets = Vec::new();
        if let (Some(version), Some(m)) = (cpuset_version, cpuset_at) {
            let w = Walk {
                root,
                mount: &m.point,
                mount_root: &m.root,
                version,
                prefix: if noprefix { "" } else { "cpuset." },
            };
            w.walk("/", &mut cpusets)?;
        }
        let cpuset_mount = cpuset_at.map(|m| m.point.to_string());
        let cpuset_mount_root = cpuset_at.map(|m| m.root.to_string());
        Ok(Cgroups {
            layout,
            v1_mounts,
            v2_mount: v2.map(|m| m.point.to_string()),
            cpuset_version,
            cpuset_mount,
            cpuset_mount_root,
            cpuset_noprefix: noprefix,
            cpusets,
        })
    }

    /// The CPUs taken out of load balancing by cpusets: v2 `isolated` partitions;
    /// in v1, with load balancing off in the root, the CPUs of no balanced cpuset.
    pub fn isolated_cpus(&self) -> CpuSet {
        let Some(root) = self.cpusets.first() else {
            return CpuSet::new();
        };
        match self.cpuset_version {
            Some(2) => self
                .cpusets
                .iter()
                .filter(|c| c.partition.as_deref() == Some("isolated"))
                .filter_map(|c| c.effective_cpus.as_ref())
                .fold(CpuSet::new(), |a, b| a.union(b)),
            Some(1) if root.sched_load_balance == Some(false) => {
                let balanced = self
                    .cpusets
                    .iter()
                    .filter(|c| c.sched_load_balance == Some(true))
                    .filter_map(|c| c.effective_cpus.as_ref().or(c.cpus.as_ref()))
                    .fold(CpuSet::new(), |a, b| a.union(b));
                root.effective_cpus
                    .as_ref()
                    .or(root.cpus.as_ref())
                    .map(|all| all.difference(&balanced))
                    .unwrap_or_default()
            }
            _ => CpuSet::new(),
        }
    }
}

/// Where and how to read one cpuset hierarchy.
struct Walk<'a> {
    root: &'a Root,
    mount: &'a str,
    mount_root: &'a str,
    version: u8,
    /// `cpuset.`, or empty for a v1 `noprefix` mount.
    prefix: &'static str,
}

impl Walk<'_> {
    fn walk(&self, rel: &str, out: &mut Vec<Cpuset>) -> Result<()> {
        let root = self.root;
        let dir = if rel == "/" {
            self.mount.to_string()
        } else {
            format!("{}{rel}", self.mount)
        };
        let file = |f: &str| format!("{dir}/{}{f}", self.prefix);
        let list = |f: &str| root.read_cpu_list_opt(file(f));
        let flag = |f: &str| root.read_flag_opt(file(f));
        // One task id a line; a line that is none is an error, not a task.
        let count = |f: &str| -> Result<usize> {
            let file = format!("{dir}/{f}");
            let Some(text) = root.read_opt(&file)? else {
                return Ok(0);
            };
            let mut n = 0;
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if line.parse::<u32>().is_err() {
                    return Err(Error::parse(root.path(&file), i + 1, "a task id", line));
                }
                n += 1;
            }
            Ok(n)
        };
        let path = match (self.mount_root, rel) {
            ("/", rel) => rel.to_string(),
            (r, "/") => r.to_string(),
            (r, rel) => format!("{r}{rel}"),
        };
        if root.exists(file("cpus")) || rel == "/" {
            let cs = if self.version == 1 {
                Cpuset {
                    path,
                    cpus: list("cpus")?,
                    effective_cpus: list("effective_cpus")?,
                    mems: list("mems")?,
                    effective_mems: list("effective_mems")?,
                    cpu_exclusive: flag("cpu_exclusive")?,
                    mem_exclusive: flag("mem_exclusive")?,
                    sched_load_balance: flag("sched_load_balance")?,
                    partition: None,
                    cpus_exclusive: None,
                    tasks: count("tasks")?,
                }
            } else {
                Cpuset {
                    path,
                    cpus: list("cpus")?,
                    effective_cpus: list("cpus.effective")?,
                    mems: list("mems")?,
                    effective_mems: list("mems.effective")?,
                    cpu_exclusive: None,
                    mem_exclusive: None,
                    sched_load_balance: None,
                    partition: root.read_line_opt(file("cpus.partition"))?,
                    cpus_exclusive: list("cpus.exclusive")?,
                    tasks: count("cgroup.threads")?,
                }
            };
            out.push(cs);
        }
        for name in root.list_dir(&dir)? {
            // cgroupfs holds no links: a linked directory (in a --root tree, perhaps a
            // link to an ancestor, a loop) is not a cgroup and is not followed.
            let is_dir = std::fs::symlink_metadata(root.path(format!("{dir}/{name}")))
                .is_ok_and(|m| m.file_type().is_dir());
            if is_dir {
                let child = if rel == "/" {
                    format!("/{name}")
                } else {
                    format!("{rel}/{name}")
                };
                self.walk(&child, out)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_keeps_the_mounts_jitterlab_uses() {
        let text = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
            30 25 0:26 / /sys/fs/cgroup/cpu\\040set rw shared:11 - cgroup cgroup rw,cpuset\n\
            31 25 0:27 /sub /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
            32 25 0:28 / /sys/kernel/tracing rw - tracefs tracefs rw\n";
        let path = std::path::Path::new("mountinfo");
        let kept = parse_mountinfo(path, text).unwrap();
        let kept: Vec<(&str, &str, &str)> = kept
            .iter()
            .map(|m| (&*m.point, &*m.root, m.fstype))
            .collect();
        assert_eq!(
            kept,
            [
                ("/sys/fs/cgroup/cpu set", "/", "cgroup"),
                ("/sys/fs/cgroup/unified", "/sub", "cgroup2"),
                ("/sys/kernel/tracing", "/", "tracefs"),
            ]
        );
        assert_eq!(mounts(path, text).count(), 4);
        assert!(matches!(
            mounts(path, text).next(),
            Some(Ok(Mount {
                point: Cow::Borrowed("/proc"),
                ..
            }))
        ));
        let e = parse_mountinfo(path, "22 27 0:21 / /proc rw - proc proc rw\nbad\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("mountinfo:2: expected a mountinfo line"),
            "{e}"
        );
    }
}
