//! Whether this runs in a container, and what that rests on.
//!
//! A container manager leaves files in the container — `/.dockerenv` (docker),
//! `/run/.containerenv` (podman), `/run/systemd/container` — but a file is only a claim:
//! it lives in the root file system, which an image, a copy or a build can bring to a
//! machine that is no container. (The CI VM has a `/.dockerenv` whose PID 1 is the VM's
//! own init in the root cgroups; `systemd-detect-virt` says `docker` because of it, and
//! systemd's own source says such a file "could inadvertently end up in a file system
//! image".) A container is what the kernel shows: a PID namespace of its own (the
//! initial one has the inode 0xEFFFFFFC since Linux 3.8, as `systemd-detect-virt`
//! checks last), a cgroup namespace of its own (0xEFFFFFFB), a PID 1 that has another
//! PID outside (its `sched` line, on kernels before 4.15), PID 1 or this process in a
//! cgroup named after a container manager, the `container=` variable a manager gives
//! PID 1. A root file system that is an overlay agrees with a marker file, but alone
//! it is a live CD as much as a container.
//!
//! [`Container::read`] names a container only when the kernel corroborates it, and
//! keeps every clue it read, for and against.

use crate::root::Root;

/// The PID namespace of the machine's first process (`PROC_PID_INIT_INO`).
pub const INIT_PID_NS: u64 = 0xEFFF_FFFC;
/// The initial cgroup namespace (`PROC_CGROUP_INIT_INO`).
pub const INIT_CGROUP_NS: u64 = 0xEFFF_FFFB;

/// How much a clue says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// A file a manager leaves, which an image can carry anywhere: a claim.
    Marker,
    /// What the kernel shows of a container: enough alone.
    Sign,
    /// Agrees with a marker, says nothing alone (an overlay root).
    Hint,
    /// What the kernel shows of the machine's own namespaces: against a container.
    Host,
}

/// One thing read: the file and what it said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clue {
    /// The host path (`/.dockerenv`, `/proc/self/ns/pid`).
    pub path: String,
    /// What it holds or means.
    pub value: String,
    /// How much it says.
    pub weight: Weight,
    /// The container manager it names, if any (`docker`, `podman`, `lxc`).
    pub names: Option<String>,
}

/// Whether this runs in a container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Container {
    /// The container's manager when the kernel corroborates a container (`docker`,
    /// `podman`, `lxc`, `kubernetes`, ...; `unknown` when nothing names one); `None`
    /// otherwise, whatever files claim.
    pub kind: Option<String>,
    /// Every clue read, markers first.
    pub clues: Vec<Clue>,
}

/// Container managers as they name the cgroups of their containers.
const MANAGERS: &[(&str, &str)] = &[
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("libpod", "podman"),
    ("kubepods", "kubernetes"),
    ("crio", "cri-o"),
    ("lxc", "lxc"),
    ("machine.slice/systemd-nspawn", "systemd-nspawn"),
];

/// `pid:[4026531836]` -> 4026531836.
fn ns_inode(link: &str) -> Option<u64> {
    link.split_once(":[")?.1.strip_suffix(']')?.parse().ok()
}

impl Container {
    /// Reads the clues below `root` and weighs them; a file that cannot be read is no
    /// clue.
    pub fn read(root: &Root) -> Container {
        let mut clues = Vec::new();
        let clue = |path: &str, value: String, weight, names: Option<&str>| Clue {
            path: path.to_string(),
            value,
            weight,
            names: names.map(str::to_string),
        };
        for (path, names) in [("/.dockerenv", "docker"), ("/run/.containerenv", "podman")] {
            if root.exists(path) {
                clues.push(clue(path, "exists".into(), Weight::Marker, Some(names)));
            }
        }
        if let Some(v) = root
            .read_line_opt("/run/systemd/container")
            .ok()
            .flatten()
            .filter(|v| !v.is_empty())
        {
            clues.push(clue(
                "/run/systemd/container",
                v.clone(),
                Weight::Marker,
                Some(&v),
            ));
        }
        if let Some(env) = root.read_opt("/proc/1/environ").ok().flatten() {
            if let Some(v) = env
                .split('\0')
                .find_map(|e| e.strip_prefix("container="))
                .filter(|v| !v.is_empty())
            {
                clues.push(clue(
                    "/proc/1/environ",
                    format!("container={v}"),
                    Weight::Sign,
                    Some(v),
                ));
            }
        }
        for (path, init, what) in [
            ("/proc/self/ns/pid", INIT_PID_NS, "PID"),
            ("/proc/self/ns/cgroup", INIT_CGROUP_NS, "cgroup"),
        ] {
            let Some(link) = root.read_link_opt(path) else {
                continue;
            };
            match ns_inode(&link) {
                Some(ino) if ino == init => clues.push(clue(
                    path,
                    format!("{link}: the machine's initial {what} namespace"),
                    Weight::Host,
                    None,
                )),
                Some(_) => clues.push(clue(
                    path,
                    format!("{link}: a {what} namespace of its own (the initial one is {init})"),
                    Weight::Sign,
                    None,
                )),
                None => {}
            }
        }
        // Before Linux 4.15 /proc/PID/sched printed the PID outside the namespace.
        if let Some(line) = root.read_opt("/proc/1/sched").ok().flatten() {
            let first = line.lines().next().unwrap_or("");
            let pid = first
                .rsplit_once(" (")
                .and_then(|(_, r)| r.split(',').next())
                .and_then(|p| p.trim().parse::<u64>().ok());
            if let Some(pid) = pid.filter(|&p| p != 1) {
                clues.push(clue(
                    "/proc/1/sched",
                    format!("{first}: PID 1 is PID {pid} outside"),
                    Weight::Sign,
                    None,
                ));
            }
        }
        for path in ["/proc/1/cgroup", "/proc/self/cgroup"] {
            let Some(text) = root.read_opt(path).ok().flatten() else {
                continue;
            };
            let named = text.lines().find_map(|l| {
                let cg = l.splitn(3, ':').nth(2)?;
                MANAGERS
                    .iter()
                    .find(|(k, _)| cg.contains(k))
                    .map(|(_, m)| (l.to_string(), *m))
            });
            if let Some((line, manager)) = named {
                clues.push(clue(path, line, Weight::Sign, Some(manager)));
            }
        }
        if let Some(text) = root.read_opt("/proc/self/mountinfo").ok().flatten() {
            // The last mount on / is the root this process sees.
            let fstype = text
                .lines()
                .rev()
                .find(|l| l.split(' ').nth(4) == Some("/"))
                .and_then(|l| l.split_once(" - ")?.1.split(' ').next());
            if let Some(t) = fstype.filter(|t| ["overlay", "aufs", "fuse-overlayfs"].contains(t)) {
                clues.push(clue(
                    "/proc/self/mountinfo",
                    format!("/ is {t}"),
                    Weight::Hint,
                    None,
                ));
            }
        }
        Container::weigh(clues)
    }

    /// The verdict on `clues`: a container when the kernel shows one (a sign), or when
    /// a marker and a hint agree; its manager from the clues that name one, signs
    /// first.
    pub fn weigh(mut clues: Vec<Clue>) -> Container {
        let has = |w: Weight| clues.iter().any(|c| c.weight == w);
        let container = has(Weight::Sign) || (has(Weight::Marker) && has(Weight::Hint));
        let rank = |w: Weight| match w {
            Weight::Sign => 0,
            Weight::Marker => 1,
            Weight::Hint => 2,
            Weight::Host => 3,
        };
        let kind = container.then(|| {
            clues
                .iter()
                .filter(|c| c.weight != Weight::Host)
                .min_by_key(|c| (c.names.is_none(), rank(c.weight)))
                .and_then(|c| c.names.clone())
                .unwrap_or_else(|| "unknown".to_string())
        });
        clues.sort_by_key(|c| (c.weight != Weight::Marker, rank(c.weight)));
        Container { kind, clues }
    }

    /// The clues of a given weight.
    pub fn of(&self, weight: Weight) -> impl Iterator<Item = &Clue> {
        self.clues.iter().filter(move |c| c.weight == weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(path: &str, weight: Weight, names: Option<&str>) -> Clue {
        Clue {
            path: path.into(),
            value: String::new(),
            weight,
            names: names.map(str::to_string),
        }
    }

    #[test]
    fn a_marker_alone_is_no_container() {
        let w = Container::weigh(vec![c("/.dockerenv", Weight::Marker, Some("docker"))]);
        assert_eq!(w.kind, None);
        let w = Container::weigh(vec![
            c("/.dockerenv", Weight::Marker, Some("docker")),
            c("/proc/self/ns/pid", Weight::Host, None),
        ]);
        assert_eq!(w.kind, None);
    }

    #[test]
    fn a_hint_alone_is_no_container_but_agrees_with_a_marker() {
        let hint = c("/proc/self/mountinfo", Weight::Hint, None);
        assert_eq!(Container::weigh(vec![hint.clone()]).kind, None);
        let w = Container::weigh(vec![
            hint,
            c("/run/.containerenv", Weight::Marker, Some("podman")),
        ]);
        assert_eq!(w.kind.as_deref(), Some("podman"));
        assert_eq!(w.clues[0].path, "/run/.containerenv", "markers first");
    }

    #[test]
    fn a_sign_is_enough_and_names_the_manager_first() {
        let w = Container::weigh(vec![c("/proc/self/ns/pid", Weight::Sign, None)]);
        assert_eq!(w.kind.as_deref(), Some("unknown"));
        let w = Container::weigh(vec![
            c("/.dockerenv", Weight::Marker, Some("docker")),
            c("/proc/1/cgroup", Weight::Sign, Some("kubernetes")),
            c("/proc/self/ns/pid", Weight::Sign, None),
        ]);
        assert_eq!(w.kind.as_deref(), Some("kubernetes"));
    }

    #[test]
    fn namespace_links() {
        assert_eq!(ns_inode("pid:[4026531836]"), Some(INIT_PID_NS));
        assert_eq!(ns_inode("cgroup:[4026531835]"), Some(INIT_CGROUP_NS));
        assert_eq!(ns_inode("pid:4026531836"), None);
    }
}
