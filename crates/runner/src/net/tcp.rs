//! The built-in TCP workload (`measure.tcp`): an `iperf3` server in one private
//! network namespace and its client in another, joined by a veth pair
//! ([`netns::veth_pair`]), the client sending to the server.
//!
//! Each is started pinned when given CPUs: `sched_setaffinity` between fork and
//! exec, which every thread it starts inherits (iperf3 has no affinity of its own
//! unless `-A` is given, and none is). Both are started with their signals unblocked
//! ([`child_command`](jitterlab_host::child::child_command)), ended with
//! [`end_child`] (SIGTERM, then SIGKILL) when the run fails or is cancelled, and
//! waited for before the namespaces are removed.
//!
//! The data the server receives is processed (NET_RX) on the client's CPU, and the
//! ACKs the client receives on the server's: see
//! [`netns`](super::netns#where-the-receive-path-runs).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{Role, TcpMeasure};
use jitterlab_experiment::Series;
use jitterlab_host::child::end_child;
use serde_json::Value;

use super::netns::{self, Netns, VethPair, SERVER_ADDR};
use crate::error::{Error, Result};
use crate::watch::Roles;
use crate::Measured;

/// The server's port (the namespace is private, so iperf3's default is free).
pub const PORT: u16 = 5201;

/// How long the server may take to listen.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long past its duration the client may take to end.
const CLIENT_GRACE: Duration = Duration::from_secs(15);

/// How long the server may take to end after the client.
const SERVER_GRACE: Duration = Duration::from_secs(3);

/// Runs iperf3's server and client for `duration_ns` (rounded up to whole seconds,
/// `-t`), with `-b bitrate` when given and `-P m.streams`, each pinned to its CPUs
/// when given; returns `tcp.throughput` (the client's
/// `end.sum_received.bits_per_second`) with its series per iperf3 interval, the two
/// pids and both JSON outputs. A missing iperf3 is [`Error::Invalid`]; a run that
/// `cancel` stops is an error. The namespaces are gone when this returns, whatever
/// happened.
pub fn run(
    m: &TcpMeasure,
    bitrate: Option<&str>,
    server: Option<&CpuSet>,
    client: Option<&CpuSet>,
    duration_ns: u64,
    cancel: &AtomicBool,
    roles: &Roles,
) -> Result<Measured> {
    let program = find_program("iperf3").ok_or_else(|| {
        Error::Invalid(
            "measure.tcp needs iperf3, which is not installed (install the iperf3 package)".into(),
        )
    })?;
    if duration_ns == 0 {
        return Err(Error::Invalid(
            "tcp: the run's duration must be positive".into(),
        ));
    }
    let pair = netns::veth_pair()?;
    let result = run_in(
        &pair,
        &program,
        m,
        bitrate,
        server,
        client,
        duration_ns,
        cancel,
        roles,
    );
    let VethPair { server, client } = pair;
    let removed = [server.remove(), client.remove()];
    let measured = result?;
    for r in removed {
        r?;
    }
    Ok(measured)
}

/// A started iperf3, ended (and reaped) when dropped unless it was waited for.
struct Proc {
    role: &'static str,
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Proc {
    fn start(
        ns: &Netns,
        program: &Path,
        role: &'static str,
        args: &[String],
        cpus: Option<&CpuSet>,
    ) -> Result<Proc> {
        let mut cmd = ns.command(program)?;
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cpus) = cpus {
            let mask = jitterlab_host::sched::mask_words(cpus);
            // SAFETY: sched_setaffinity on the calling thread, without allocating.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    jitterlab_host::sched::set_affinity_words(0, &mask)
                });
            }
        }
        let what = || match cpus {
            Some(c) => format!("starting the iperf3 {role} on CPUs {c}"),
            None => format!("starting the iperf3 {role}"),
        };
        let mut child = cmd.spawn().map_err(|e| Error::workload(what(), e))?;
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        Ok(Proc {
            role,
            child,
            stdout,
            stderr,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until it exits, `cancel` is set or `deadline` passes; true if it exited.
    fn wait_until(&mut self, deadline: Instant, cancel: &AtomicBool) -> Result<bool> {
        loop {
            let done = self
                .child
                .try_wait()
                .map_err(|e| Error::workload(format!("waiting for the iperf3 {}", self.role), e))?;
            if done.is_some() {
                return Ok(true);
            }
            if cancel.load(Ordering::Relaxed) || Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ends it if it runs, and returns its exit status and output.
    fn finish(mut self) -> Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>)> {
        let status = end_child(&mut self.child, false)
            .map_err(|e| Error::workload(format!("ending the iperf3 {}", self.role), e))?;
        let out = self.stdout.take().map(|h| h.join().unwrap_or_default());
        let err = self.stderr.take().map(|h| h.join().unwrap_or_default());
        Ok((status, out.unwrap_or_default(), err.unwrap_or_default()))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = end_child(&mut self.child, false);
    }
}

/// A thread reading a pipe to its end (so a child never blocks on a full pipe).
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

#[allow(clippy::too_many_arguments)]
fn run_in(
    pair: &VethPair,
    program: &Path,
    m: &TcpMeasure,
    bitrate: Option<&str>,
    server_cpus: Option<&CpuSet>,
    client_cpus: Option<&CpuSet>,
    duration_ns: u64,
    cancel: &AtomicBool,
    roles: &Roles,
) -> Result<Measured> {
    let port = PORT.to_string();
    let addr = SERVER_ADDR.to_string();
    let server_args: Vec<String> = ["-s", "-1", "-J", "-B", &addr, "-p", &port]
        .map(String::from)
        .into();
    let mut server = Proc::start(&pair.server, program, "server", &server_args, server_cpus)?;
    roles.process(Role::Server, server.pid());
    wait_listening(&mut server, cancel)?;
    let secs = duration_ns.div_ceil(1_000_000_000);
    let mut client_args: Vec<String> = ["-c", &addr, "-p", &port, "-J", "-t"]
        .map(String::from)
        .into();
    client_args.push(secs.to_string());
    client_args.push("-P".into());
    client_args.push(m.streams.max(1).to_string());
    // The series' interval, in iperf3's seconds.
    client_args.push("-i".into());
    client_args.push(format!("{}", m.interval_ns as f64 / 1e9));
    if let Some(b) = bitrate {
        client_args.push("-b".into());
        client_args.push(b.to_string());
    }
    let mut client = Proc::start(&pair.client, program, "client", &client_args, client_cpus)?;
    roles.process(Role::Client, client.pid());
    let tasks = vec![(Role::Server, server.pid()), (Role::Client, client.pid())];
    let deadline = Instant::now() + Duration::from_secs(secs) + CLIENT_GRACE;
    let client_ended = client.wait_until(deadline, cancel)?;
    if client_ended {
        server.wait_until(Instant::now() + SERVER_GRACE, cancel)?;
    }
    let (client_status, client_out, client_err) = client.finish()?;
    let (_, server_out, _) = server.finish()?;
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::workload("the tcp run", "cancelled"));
    }
    if !client_ended {
        return Err(Error::workload(
            "the iperf3 client",
            format!(
                "still running {} s past its duration; ended",
                CLIENT_GRACE.as_secs()
            ),
        ));
    }
    let json: Value = serde_json::from_slice(&client_out).map_err(|e| {
        Error::workload(
            "reading the iperf3 client's JSON output",
            format!(
                "{e} (exit {client_status}; stderr: {})",
                String::from_utf8_lossy(&client_err).trim()
            ),
        )
    })?;
    if let Some(msg) = json.get("error").and_then(Value::as_str) {
        return Err(Error::workload("the iperf3 client", msg));
    }
    let mut out = parse_client(&json)?;
    out.tasks = tasks;
    out.raw.push(("iperf3-client.json".into(), client_out));
    if !server_out.is_empty() {
        out.raw.push(("iperf3-server.json".into(), server_out));
    }
    Ok(out)
}

/// `tcp.throughput` and its series from the client's `-J` output.
pub fn parse_client(json: &Value) -> Result<Measured> {
    let bad = |what: &str| {
        Error::workload(
            "reading the iperf3 client's JSON output",
            format!("no {what}"),
        )
    };
    let throughput = json
        .pointer("/end/sum_received/bits_per_second")
        .and_then(Value::as_f64)
        .ok_or_else(|| bad("end.sum_received.bits_per_second"))?;
    let mut series = Series {
        name: "tcp.throughput".into(),
        unit: "bit/s".into(),
        t_ns: Vec::new(),
        values: Vec::new(),
        steps: Vec::new(),
    };
    let intervals = json
        .get("intervals")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("intervals"))?;
    for (i, iv) in intervals.iter().enumerate() {
        let start = iv.pointer("/sum/start").and_then(Value::as_f64);
        let bps = iv.pointer("/sum/bits_per_second").and_then(Value::as_f64);
        let (Some(start), Some(bps)) = (start, bps) else {
            return Err(bad(&format!("intervals.{i}.sum.start or .bits_per_second")));
        };
        series.t_ns.push((start.max(0.0) * 1e9).round() as u64);
        series.values.push(bps);
    }
    let mut out = Measured::default();
    out.values.insert("tcp.throughput".into(), throughput);
    out.series.push(series);
    Ok(out)
}

/// Waits until the server listens on [`PORT`] (its namespace's `/proc/PID/net/tcp`
/// has the port in state LISTEN), or fails if it exits first.
fn wait_listening(server: &mut Proc, cancel: &AtomicBool) -> Result<()> {
    let path = PathBuf::from(format!("/proc/{}/net/tcp", server.pid()));
    let want = format!(":{PORT:04X}");
    let deadline = Instant::now() + LISTEN_TIMEOUT;
    let what = || format!("starting the iperf3 server on {SERVER_ADDR}:{PORT}");
    loop {
        let exited = server.child.try_wait().ok().flatten();
        if let Some(status) = exited {
            return Err(Error::workload(
                what(),
                format!("it exited ({status}) before it listened"),
            ));
        }
        let text = jitterlab_host::read_file_bounded(&path, jitterlab_host::READ_LIMIT)?;
        let listening = String::from_utf8_lossy(&text).lines().skip(1).any(|line| {
            let mut f = line.split_whitespace();
            let local = f.nth(1);
            let state = f.nth(1);
            local.is_some_and(|l| l.ends_with(&want)) && state == Some("0A")
        });
        if listening {
            return Ok(());
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::workload(what(), "cancelled"));
        }
        if Instant::now() >= deadline {
            let secs = LISTEN_TIMEOUT.as_secs();
            return Err(Error::workload(
                what(),
                format!("not listening after {secs} s"),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `name`'s path in `$PATH`, if it is there as an executable file.
fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
