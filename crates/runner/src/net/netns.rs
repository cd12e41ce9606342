//! Private network namespaces for the built-in workloads, removed when their guard
//! drops (also when the code in its scope panics), so that nothing of a run is left
//! on the host and nothing of the host's own interfaces is touched.
//!
//! A namespace is made with `ip netns add` (a bind mount of the namespace at
//! `/run/netns/NAME`, which is what lets a thread or a command enter it) and named
//! `jl-exp-<pid>-<n>`: [`sweep_stale`] removes the ones whose process is gone (a
//! jitterlab killed with SIGKILL cannot run its guards) and never touches a name of
//! another form or of a live process.
//!
//! Two topologies:
//!
//! - [`VethPair`]: two namespaces, the server's and the client's, joined by a veth
//!   pair, `192.0.2.1/24` on the server's end and `192.0.2.2/24` on the client's
//!   (TEST-NET-1: the addresses exist only inside these namespaces);
//! - [`multicast_loopback`]: one namespace whose loopback is up with multicast on and
//!   a route of `224.0.0.0/4` through it.
//!
//! A thread enters a namespace with `setns(CLONE_NEWNET)` on the `/run/netns/NAME`
//! file ([`NetnsFile::enter`], [`Netns::spawn`]); only that thread moves. A command
//! enters it the same way between fork and exec ([`Netns::command`]), which is what
//! `ip netns exec` does, without its private mount namespace and `/sys` remount and
//! without a process in between: the child's pid is the program's.
//!
//! # Where the receive path runs
//!
//! Neither veth nor loopback has an interrupt. A packet sent on either is handed to
//! the receive side by `__netif_rx` in the sender's own system call: it is queued on
//! the backlog of the CPU the *sending task* runs on (RPS is off in a new namespace)
//! and the NET_RX softirq is raised there, by the task, not by a hardirq; it then runs
//! as the sender leaves its bottom-half-disabled section, still on the sender's CPU
//! and usually in the sender's context (in `ksoftirqd` of that CPU only when softirqs
//! pile up). So the NET_RX work of a veth or loopback flow is done on the peer's CPU:
//! the multicast sender's for the receiver, the iperf3 client's for the data the
//! server receives (and the server's for the ACKs the client receives). The runner
//! resolves the `irq-cpu` placement of a role as its peer's CPU from this.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::{Scope, ScopedJoinHandle};

use jitterlab_host::child::child_command;

use crate::error::{Error, Result};

/// Where `ip netns` keeps its namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// The prefix of every namespace jitterlab's experiments make.
pub const PREFIX: &str = "jl-exp-";

/// The server's address on a [`VethPair`].
pub const SERVER_ADDR: std::net::Ipv4Addr = std::net::Ipv4Addr::new(192, 0, 2, 1);

/// The client's address on a [`VethPair`].
pub const CLIENT_ADDR: std::net::Ipv4Addr = std::net::Ipv4Addr::new(192, 0, 2, 2);

/// The numbers of this process's namespaces.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A private network namespace, removed (`ip netns del`) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
    removed: bool,
}

impl Netns {
    /// Makes a new, empty namespace `jl-exp-<pid>-<n>` (its loopback down).
    pub fn create() -> Result<Netns> {
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        run_ip(&["netns", "add", &name])?;
        Ok(Netns {
            name,
            removed: false,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its file, `/run/netns/NAME`.
    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    /// Runs `ip -n NAME ARGS...` and fails with its error output if it fails.
    pub fn ip(&self, args: &[&str]) -> Result<()> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run_ip(&all)
    }

    /// Opens its file, for threads to enter it.
    pub fn open(&self) -> Result<NetnsFile> {
        let path = self.path();
        let file = File::open(&path).map_err(|cause| Error::Io {
            path: path.display().to_string(),
            cause,
        })?;
        Ok(NetnsFile {
            fd: file.into(),
            name: self.name.clone(),
        })
    }

    /// A command for `program` (through [`child_command`]: its signals unblocked)
    /// whose process enters this namespace before it execs; add arguments and more
    /// `pre_exec` steps (pinning) to it.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Result<Command> {
        let file = self.open()?;
        let mut cmd = child_command(program);
        // SAFETY: setns is a system call, async-signal-safe; the descriptor stays
        // open in the closure until the command is dropped, and is close-on-exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(file.fd.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// Starts a scoped thread named `name` (at most 15 bytes, the kernel's `comm`)
    /// that enters this namespace, then runs `f`; a failure to enter is the thread's
    /// result.
    pub fn spawn<'scope, 'env, T, F>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        name: &str,
        f: F,
    ) -> Result<ScopedJoinHandle<'scope, Result<T>>>
    where
        T: Send + 'scope,
        F: FnOnce() -> Result<T> + Send + 'scope,
    {
        let file = self.open()?;
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn_scoped(scope, move || {
                file.enter()?;
                drop(file);
                f()
            })
            .map_err(|e| Error::workload(format!("starting the thread {name}"), e))
    }

    /// Removes it now, with the error if `ip netns del` fails.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        run_ip(&["netns", "del", &self.name])
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.removed {
            if let Err(e) = run_ip(&["netns", "del", &self.name]) {
                eprintln!("jitterlab: could not remove the network namespace: {e}");
            }
        }
    }
}

/// An open namespace file, for a thread to enter.
#[derive(Debug)]
pub struct NetnsFile {
    fd: OwnedFd,
    name: String,
}

impl NetnsFile {
    /// Moves the calling thread (only it) into the namespace.
    pub fn enter(&self) -> Result<()> {
        // SAFETY: setns on a descriptor we own.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(Error::workload(
                format!("entering the network namespace {}", self.name),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
}

/// Two namespaces joined by a veth pair: `jl0` with [`SERVER_ADDR`] in the server's,
/// `jl1` with [`CLIENT_ADDR`] in the client's; both ends and both loopbacks up. Both
/// are removed when it drops (removing one end of a veth removes the other).
#[derive(Debug)]
pub struct VethPair {
    /// The server's side.
    pub server: Netns,
    /// The client's side.
    pub client: Netns,
}

/// Sets up a [`VethPair`].
pub fn veth_pair() -> Result<VethPair> {
    let server = Netns::create()?;
    let client = Netns::create()?;
    server.ip(&[
        "link",
        "add",
        "jl0",
        "type",
        "veth",
        "peer",
        "name",
        "jl1",
        "netns",
        client.name(),
    ])?;
    for (ns, dev, addr) in [(&server, "jl0", SERVER_ADDR), (&client, "jl1", CLIENT_ADDR)] {
        ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", dev])?;
        ns.ip(&["link", "set", dev, "up"])?;
        ns.ip(&["link", "set", "lo", "up"])?;
    }
    Ok(VethPair { server, client })
}

/// One namespace whose loopback is up with multicast on and routes `224.0.0.0/4`.
pub fn multicast_loopback() -> Result<Netns> {
    let ns = Netns::create()?;
    ns.ip(&["link", "set", "lo", "up", "multicast", "on"])?;
    ns.ip(&["route", "add", "224.0.0.0/4", "dev", "lo"])?;
    Ok(ns)
}

/// The names of the namespaces this process made and has not removed (for tests
/// and checks: after a run there are none).
pub fn own_namespaces() -> Result<Vec<String>> {
    let pid = std::process::id();
    Ok(list()?
        .into_iter()
        .filter(|n| parse_name(n).is_some_and(|(p, _)| p == pid))
        .collect())
}

/// Removes the namespaces `jl-exp-<pid>-<n>` of processes that are gone and returns
/// their names; a name of another form, of this process or of a live process is
/// left alone.
pub fn sweep_stale() -> Result<Vec<String>> {
    let own = std::process::id();
    let mut removed = Vec::new();
    for name in list()? {
        let Some((pid, _)) = parse_name(&name) else {
            continue;
        };
        if pid == own || process_alive(pid) {
            continue;
        }
        run_ip(&["netns", "del", &name])?;
        removed.push(name);
    }
    Ok(removed)
}

/// The pid and number of a name `jl-exp-<pid>-<n>`, both decimal.
pub fn parse_name(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, n) = rest.split_once('-')?;
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !decimal(pid) || !decimal(n) {
        return None;
    }
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// Whether a process `pid` exists (a signal 0 to it does not fail with ESRCH).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The names under `/run/netns` (none when it does not exist).
fn list() -> Result<Vec<String>> {
    let dir = match std::fs::read_dir(NETNS_DIR) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(cause) => {
            return Err(Error::Io {
                path: NETNS_DIR.into(),
                cause,
            })
        }
    };
    let mut names = Vec::new();
    for entry in dir {
        let entry = entry.map_err(|cause| Error::Io {
            path: NETNS_DIR.into(),
            cause,
        })?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Runs `ip ARGS...`; a failure names the command and gives its error output.
fn run_ip(args: &[&str]) -> Result<()> {
    let what = format!("ip {}", args.join(" "));
    let out = child_command("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Invalid(format!(
                    "{what}: `ip` is not installed (install the iproute2 package)"
                ))
            } else {
                Error::workload(&what, e)
            }
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let msg = stderr.trim();
    Err(Error::workload(
        what,
        if msg.is_empty() {
            format!("exited with {}", out.status)
        } else {
            msg.to_string()
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse_name("jl-exp-1234-0"), Some((1234, 0)));
        assert_eq!(parse_name("jl-exp-1-17"), Some((1, 17)));
        for other in [
            "jlfix-1234-0",
            "jl-exp-1234",
            "jl-exp--0",
            "jl-exp-12a-0",
            "jl-exp-1234-0-x",
            "jl-exp-1234-",
            "jl-exp-99999999999-0",
            "foo",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }
}
