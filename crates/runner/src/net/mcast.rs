//! The built-in UDP multicast workload (`measure.mcast`): a sender thread and a
//! receiver thread inside jitterlab's own process, each moved into a private
//! network namespace, exchanging numbered messages; the receiver counts what came,
//! what is missing, what came late and what came twice.
//!
//! # Topology
//!
//! The multicast pinning study (two Java threads exchanging multicast through a `dummy`
//! interface on one host, pinned with `taskset` or not) never leaves the machine:
//! the sender's copy of each message is looped back to the local receiver inside the
//! kernel. Loopback in one namespace ([`netns::multicast_loopback`]) is that path
//! without needing the `dummy` module: the message goes through `lo`'s transmit into
//! the receive path on the sender's CPU, and the receiver is woken from there, as in
//! the study. A veth pair between two namespaces would add a hop and a second
//! device's queues (the study's part 2, with a real network, is about that) and move
//! nothing else: the receive path would still run on the sender's CPU (see
//! [`netns`](super::netns#where-the-receive-path-runs)). So: loopback, the group
//! [`GROUP`] joined on `127.0.0.1`, the sender bound to `127.0.0.1` with
//! `IP_MULTICAST_LOOP` off (the message reaches the group through `lo` itself, once).
//!
//! # Messages and counts
//!
//! Each message carries, little-endian, a 64-bit sequence number from 0 and a
//! 64-bit tag of the run (a message without it is ignored), padded to the payload
//! size. The sender paces itself to `rate` messages per second on an absolute
//! schedule (late messages go out at once, so the mean rate holds), or sends as fast
//! as it can. The receiver's socket has a large buffer (`SO_RCVBUFFORCE`, 8 MiB),
//! but a receiver starved of CPU still loses messages when it fills: that loss is
//! what the workload measures. [`SeqStats`] does the accounting; after the sender
//! stops, the receiver drains its socket until it has been quiet for 20 ms, and
//! messages sent but never received are lost, so `received + lost == sent`.

use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{McastMeasure, Role};
use jitterlab_experiment::Series;

use super::netns::{self, Netns};
pub use super::seq::{SeqStats, WINDOW};
use crate::error::{Error, Result};
use crate::watch::Roles;
use crate::Measured;

/// The multicast group (administratively scoped).
pub const GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 0, 1);

/// The UDP port (the namespace is private, so any port is free).
pub const PORT: u16 = 5400;

/// The receive buffer asked for, bytes (the kernel doubles it for its overhead).
pub const RCVBUF: usize = 8 << 20;

/// Bytes of a message's header: the sequence number and the run's tag.
pub const HEADER: usize = 16;

/// Silence after the sender stops that ends the receiver.
const QUIET: Duration = Duration::from_millis(20);

/// The longest the receiver drains after the sender stops.
const MAX_DRAIN: Duration = Duration::from_secs(1);

/// Runs the sender and the receiver for `duration_ns` in a private namespace, each
/// pinned to its CPUs when given (else left where the scheduler puts it), and
/// returns `mcast.received` (msg/s over the run, and its series per
/// `m.interval_ns`), `mcast.sent` (msg/s the sender reached), `mcast.lost`, `mcast.reordered` and `mcast.duplicated`, with
/// the threads' ids. A run that `cancel` stops is an error; the namespace is gone
/// when this returns, whatever happened.
pub fn run(
    m: &McastMeasure,
    sender: Option<&CpuSet>,
    receiver: Option<&CpuSet>,
    duration_ns: u64,
    cancel: &AtomicBool,
    roles: &Roles,
) -> Result<Measured> {
    measure(m, sender, receiver, duration_ns, cancel, roles).map(|(measured, _)| measured)
}

/// The counts of a run behind its [`Measured`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Messages the sender sent.
    pub sent: u64,
    /// How long it sent, ns.
    pub sent_ns: u64,
    /// Distinct messages received.
    pub received: u64,
    /// Messages never received.
    pub lost: u64,
    /// Messages received after a higher number.
    pub reordered: u64,
    /// Copies received of messages received already.
    pub duplicated: u64,
}

/// [`run`], with the counts behind its values.
pub fn measure(
    m: &McastMeasure,
    sender: Option<&CpuSet>,
    receiver: Option<&CpuSet>,
    duration_ns: u64,
    cancel: &AtomicBool,
    roles: &Roles,
) -> Result<(Measured, Counts)> {
    if (m.payload as usize) < HEADER || m.payload > 65_000 {
        return Err(Error::Invalid(format!(
            "mcast payload {}: expected {HEADER} to 65000 bytes",
            m.payload
        )));
    }
    if m.interval_ns == 0 || duration_ns == 0 || m.rate == Some(0) {
        return Err(Error::Invalid(format!(
            "mcast: the interval ({} ns), the duration ({duration_ns} ns) and the rate ({:?}) must be positive",
            m.interval_ns, m.rate
        )));
    }
    let ns = netns::multicast_loopback()?;
    let result = run_in(&ns, m, sender, receiver, duration_ns, cancel, roles);
    let removed = ns.remove();
    let measured = result?;
    removed?;
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::workload("the mcast run", "cancelled"));
    }
    Ok(measured)
}

/// What the sender did.
struct Sent {
    tid: u32,
    sent: u64,
    elapsed: Duration,
}

/// What the receiver counted.
struct Received {
    tid: u32,
    stats: SeqStats,
    /// Messages received first in each interval.
    counts: Vec<u64>,
}

fn run_in(
    ns: &Netns,
    m: &McastMeasure,
    sender_cpus: Option<&CpuSet>,
    receiver_cpus: Option<&CpuSet>,
    duration_ns: u64,
    cancel: &AtomicBool,
    roles: &Roles,
) -> Result<(Measured, Counts)> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let tag = (u64::from(std::process::id()) << 32) | RUNS.fetch_add(1, Ordering::Relaxed);
    let duration = Duration::from_nanos(duration_ns);
    let buckets = duration_ns.div_ceil(m.interval_ns).min(1 << 20) as usize;
    let sender_done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let payload = m.payload as usize;

    let (sent, received) = std::thread::scope(|s| -> Result<(Result<Sent>, Result<Received>)> {
        let (ready_tx, ready_rx) = mpsc::channel::<(Role, u32)>();
        let (go_recv_tx, go_recv_rx) = mpsc::channel::<Instant>();
        let (go_send_tx, go_send_rx) = mpsc::channel::<Instant>();
        let (sender_done, abort) = (&sender_done, &abort);
        let ready = ready_tx.clone();
        let recv = ns.spawn(s, "jl-mcast-recv", move || {
            let r = receive(
                receiver_cpus,
                ready,
                go_recv_rx,
                sender_done,
                tag,
                buckets,
                m,
            );
            if r.is_err() {
                abort.store(true, Ordering::Relaxed);
            }
            r
        })?;
        let send = ns.spawn(s, "jl-mcast-send", move || {
            let r = send(
                sender_cpus,
                ready_tx,
                go_send_rx,
                cancel,
                abort,
                duration,
                m.rate,
                payload,
                tag,
            );
            sender_done.store(true, Ordering::Release);
            r
        })?;
        // Both ready (or one failed, dropping its channel end): start both at once,
        // watched from their start.
        let mut both_ready = true;
        for _ in 0..2 {
            match ready_rx.recv() {
                Ok((role, tid)) => roles.thread(role, tid),
                Err(_) => both_ready = false,
            }
        }
        if both_ready {
            let start = Instant::now();
            let _ = go_recv_tx.send(start);
            let _ = go_send_tx.send(start);
        }
        drop((go_recv_tx, go_send_tx));
        let sent = join(send, "jl-mcast-send");
        sender_done.store(true, Ordering::Release);
        let received = join(recv, "jl-mcast-recv");
        Ok((sent, received))
    })?;
    let (sent, received) = (sent?, received?);
    let mut stats = received.stats;
    stats.finish(sent.sent);
    let secs = sent.elapsed.as_secs_f64().max(1e-9);
    let mut out = Measured::default();
    out.values
        .insert("mcast.received".into(), stats.received as f64 / secs);
    // The rate the sender reached: with the sides' CPU use (the run's context), it tells
    // a run bound by the generator from one bound by the receiver or the system.
    out.values
        .insert("mcast.sent".into(), sent.sent as f64 / secs);
    out.values.insert("mcast.lost".into(), stats.lost as f64);
    out.values
        .insert("mcast.reordered".into(), stats.reordered as f64);
    out.values
        .insert("mcast.duplicated".into(), stats.duplicated as f64);
    let mut series = Series {
        name: "mcast.received".into(),
        unit: "msg/s".into(),
        t_ns: Vec::new(),
        values: Vec::new(),
        steps: Vec::new(),
    };
    let run_ns = (sent.elapsed.as_nanos() as u64).max(1);
    for (i, &count) in received.counts.iter().enumerate() {
        let t = i as u64 * m.interval_ns;
        if t >= run_ns {
            break;
        }
        let len = m.interval_ns.min(run_ns - t);
        series.t_ns.push(t);
        series.values.push(count as f64 * 1e9 / len as f64);
    }
    out.series.push(series);
    out.tasks.push((Role::Sender, sent.tid));
    out.tasks.push((Role::Receiver, received.tid));
    let counts = Counts {
        sent: sent.sent,
        sent_ns: run_ns,
        received: stats.received,
        lost: stats.lost,
        reordered: stats.reordered,
        duplicated: stats.duplicated,
    };
    Ok((out, counts))
}

/// A thread's result, or its panic as an error.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T>>, name: &str) -> Result<T> {
    h.join()
        .unwrap_or_else(|_| Err(Error::workload(format!("the thread {name}"), "panicked")))
}

/// Pins the calling thread to `cpus` when given; returns its id.
fn pin_self(role: &str, cpus: Option<&CpuSet>) -> Result<u32> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    if let Some(cpus) = cpus {
        jitterlab_host::sched::set_affinity(tid, cpus).map_err(|e| {
            Error::workload(
                format!("pinning the mcast {role} (thread {tid}) to CPUs {cpus}"),
                e,
            )
        })?;
    }
    Ok(tid)
}

fn sock_err(what: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::workload(what, e)
}

#[allow(clippy::too_many_arguments)]
fn send(
    cpus: Option<&CpuSet>,
    ready: mpsc::Sender<(Role, u32)>,
    go: mpsc::Receiver<Instant>,
    cancel: &AtomicBool,
    abort: &AtomicBool,
    duration: Duration,
    rate: Option<u64>,
    payload: usize,
    tag: u64,
) -> Result<Sent> {
    let tid = pin_self("sender", cpus)?;
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(sock_err("binding the mcast sender to 127.0.0.1"))?;
    sock.set_multicast_ttl_v4(1)
        .and_then(|()| sock.set_multicast_loop_v4(false))
        .and_then(|()| sock.connect((GROUP, PORT)))
        .map_err(sock_err("setting up the mcast sender's socket"))?;
    let _ = ready.send((Role::Sender, tid));
    let Ok(start) = go.recv() else {
        return Err(Error::workload("the mcast sender", "not started"));
    };
    let deadline = start + duration;
    let mut buf = vec![0u8; payload];
    buf[8..16].copy_from_slice(&tag.to_le_bytes());
    let mut seq: u64 = 0;
    let end = loop {
        let now = Instant::now();
        if now >= deadline || cancel.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
            break now.min(deadline);
        }
        if let Some(rate) = rate {
            let due = u128::from(seq) * 1_000_000_000 / u128::from(rate);
            let at = start + Duration::from_nanos(due as u64);
            if at > now {
                std::thread::sleep((at.min(deadline) - now).min(Duration::from_millis(10)));
                continue;
            }
        }
        buf[..8].copy_from_slice(&seq.to_le_bytes());
        match sock.send(&buf) {
            Ok(_) => seq += 1,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOBUFS | libc::EAGAIN | libc::ECONNREFUSED | libc::EINTR)
                ) => {}
            Err(e) => return Err(Error::workload(format!("sending mcast message {seq}"), e)),
        }
    };
    Ok(Sent {
        tid,
        sent: seq,
        elapsed: end - start,
    })
}

fn receive(
    cpus: Option<&CpuSet>,
    ready: mpsc::Sender<(Role, u32)>,
    go: mpsc::Receiver<Instant>,
    sender_done: &AtomicBool,
    tag: u64,
    buckets: usize,
    m: &McastMeasure,
) -> Result<Received> {
    let tid = pin_self("receiver", cpus)?;
    let sock = UdpSocket::bind((GROUP, PORT))
        .map_err(sock_err("binding the mcast receiver to 239.255.0.1:5400"))?;
    sock.join_multicast_v4(&GROUP, &Ipv4Addr::LOCALHOST)
        .map_err(sock_err("joining 239.255.0.1 on lo"))?;
    set_rcvbuf(&sock)?;
    sock.set_read_timeout(Some(Duration::from_millis(5)))
        .map_err(sock_err("setting the mcast receiver's timeout"))?;
    let _ = ready.send((Role::Receiver, tid));
    let Ok(start) = go.recv() else {
        return Err(Error::workload("the mcast receiver", "not started"));
    };
    let mut stats = SeqStats::new();
    let mut counts = vec![0u64; buckets.max(1)];
    let mut buf = vec![0u8; m.payload as usize + 1];
    let mut last = Instant::now();
    let mut done_at: Option<Instant> = None;
    loop {
        match sock.recv(&mut buf) {
            Ok(n) => {
                last = Instant::now();
                let (Some(seq), Some(t)) = (field(&buf[..n], 0), field(&buf[..n], 8)) else {
                    continue;
                };
                if t != tag {
                    continue;
                }
                if stats.record(seq) {
                    let i = (last.saturating_duration_since(start).as_nanos()
                        / u128::from(m.interval_ns)) as usize;
                    let i = i.min(counts.len() - 1);
                    counts[i] += 1;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(Error::workload("receiving mcast messages", e)),
        }
        if sender_done.load(Ordering::Acquire) {
            let now = Instant::now();
            let since = *done_at.get_or_insert(now);
            if now.duration_since(last) >= QUIET || now.duration_since(since) >= MAX_DRAIN {
                break;
            }
        }
    }
    Ok(Received { tid, stats, counts })
}

/// The little-endian u64 at `at` in a message, if it is that long.
fn field(msg: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = msg.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// A large receive buffer: `SO_RCVBUFFORCE` (past `rmem_max`, as root), else
/// `SO_RCVBUF` (up to `rmem_max`).
fn set_rcvbuf(sock: &UdpSocket) -> Result<()> {
    let size = RCVBUF as libc::c_int;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: setsockopt with a c_int value on our socket.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
    }
    Err(Error::workload(
        "setting the mcast receiver's buffer",
        std::io::Error::last_os_error(),
    ))
}
