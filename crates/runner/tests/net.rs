//! The built-in network workloads: the sequence accounting on made-up sequences,
//! and, live (root), the namespaces' guards and sweep, the multicast pair and
//! iperf3. Invariants only, never absolute speeds; each live run is 1-2 s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{McastMeasure, Role, TcpMeasure};
use jitterlab_host::testing::{host_lock, is_root, skip};
use jitterlab_runner::net::mcast::{self, SeqStats, WINDOW};
use jitterlab_runner::net::netns::{self, Netns};
use jitterlab_runner::net::tcp;
use jitterlab_runner::watch::Roles;
use jitterlab_runner::Error;

const SECOND: u64 = 1_000_000_000;

/// The host lock, or `None` (after a skip) when not root.
fn live(why: &str) -> Option<jitterlab_host::testing::HostLock> {
    if !is_root() {
        skip(format!("{why} needs root"));
        return None;
    }
    Some(host_lock().expect("the host lock"))
}

fn no_namespaces_left() {
    assert_eq!(netns::own_namespaces().unwrap(), Vec::<String>::new());
}

fn seq(list: &[u64]) -> SeqStats {
    let mut s = SeqStats::new();
    for &n in list {
        s.record(n);
    }
    s
}

fn counts(s: &SeqStats) -> [u64; 4] {
    [s.received, s.lost, s.reordered, s.duplicated]
}

#[test]
fn sequence_accounting() {
    // In order.
    assert_eq!(counts(&seq(&(0..10).collect::<Vec<_>>())), [10, 0, 0, 0]);
    // Gaps, then the tail never sent on counted at the end.
    let mut s = seq(&[0, 1, 4, 5]);
    assert_eq!(counts(&s), [4, 2, 0, 0]);
    s.finish(8);
    assert_eq!(counts(&s), [4, 4, 0, 0]);
    assert_eq!(s.received + s.lost, 8);
    // A late message is no longer lost.
    assert_eq!(counts(&seq(&[0, 2, 1])), [3, 0, 1, 0]);
    assert_eq!(counts(&seq(&[0, 3, 2, 1])), [4, 0, 2, 0]);
    // Duplicates: of the latest, of an older one, of a late one.
    assert_eq!(counts(&seq(&[0, 1, 1, 0])), [2, 0, 0, 2]);
    assert_eq!(counts(&seq(&[0, 2, 1, 1, 2])), [3, 0, 1, 2]);
    // Not starting at 0: the first numbers are lost.
    assert_eq!(counts(&seq(&[3, 4])), [2, 3, 0, 0]);
    // A gap wider than the window, then a message from before it: a duplicate,
    // since it cannot be told from one.
    let mut s = seq(&[0, WINDOW + 10]);
    assert_eq!(counts(&s), [2, WINDOW + 9, 0, 0]);
    s.record(5);
    assert_eq!(counts(&s), [2, WINDOW + 9, 0, 1]);
    // Inside the window after a wide gap: late, not a duplicate.
    s.record(WINDOW + 1);
    assert_eq!(counts(&s), [3, WINDOW + 8, 1, 1]);
    // A long mixed sequence: received + lost is always one past the highest.
    let mut s = SeqStats::new();
    let mut x = 12345u64;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match x % 10 {
            0 => continue,                           // lost
            1 => s.record(i.saturating_sub(x % 50)), // late or duplicate
            _ => s.record(i),
        };
        s.record(i);
        assert_eq!(s.received + s.lost, s.next(), "at {i}");
    }
    s.finish(200_000);
    assert_eq!(s.received + s.lost, 200_000);
    assert!(s.lost > 0 && s.reordered > 0 && s.duplicated > 0);
}

#[test]
fn guard_removes_its_namespace_also_on_panic() {
    let Some(_lock) = live("network namespaces") else {
        return;
    };
    let ns = Netns::create().unwrap();
    let path = ns.path();
    assert!(path.exists());
    drop(ns);
    assert!(!path.exists());

    let mut paths = Vec::new();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let pair = netns::veth_pair().unwrap();
        let lo = netns::multicast_loopback().unwrap();
        paths.extend([pair.server.path(), pair.client.path(), lo.path()]);
        assert!(paths.iter().all(|p| p.exists()));
        panic!("on purpose");
    }));
    assert!(caught.is_err());
    assert_eq!(paths.len(), 3);
    for p in &paths {
        assert!(!p.exists(), "{} left behind", p.display());
    }
    no_namespaces_left();
}

/// Namespaces made by the test itself, removed when it ends.
struct Made(Vec<String>);

impl Drop for Made {
    fn drop(&mut self) {
        for name in &self.0 {
            if std::path::Path::new(netns::NETNS_DIR).join(name).exists() {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "del", name])
                    .status();
            }
        }
    }
}

#[test]
fn sweep_removes_only_dead_processes_namespaces() {
    let Some(_lock) = live("network namespaces") else {
        return;
    };
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let mut alive = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let names = [
        format!("jl-exp-{dead_pid}-0"),
        format!("jl-exp-{}-0", alive.id()),
        format!("jl-exp-{dead_pid}-x"),
    ];
    let made = Made(names.to_vec());
    for name in &made.0 {
        let ok = std::process::Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .unwrap();
        assert!(ok.success(), "ip netns add {name}");
    }
    let removed = netns::sweep_stale();
    let _ = alive.kill();
    let _ = alive.wait();
    let removed = removed.unwrap();
    assert_eq!(removed, vec![names[0].clone()]);
    let dir = std::path::Path::new(netns::NETNS_DIR);
    assert!(!dir.join(&names[0]).exists());
    assert!(dir.join(&names[1]).exists());
    assert!(dir.join(&names[2]).exists());
    drop(made);
    assert!(!dir.join(&names[1]).exists());
}

fn mcast_measure(rate: Option<u64>) -> McastMeasure {
    McastMeasure {
        payload: 64,
        rate,
        interval_ns: 100_000_000,
        sender_cpus: None,
        receiver_cpus: None,
    }
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

#[test]
fn mcast_paced_rate_is_received() {
    let Some(_lock) = live("the mcast workload") else {
        return;
    };
    let cancel = AtomicBool::new(false);
    let m = mcast_measure(Some(2000));
    let (out, c) = mcast::measure(&m, None, None, SECOND, &cancel, &Roles::default()).unwrap();
    no_namespaces_left();
    // Paced on an absolute schedule: 2000 in the second, give or take a few.
    assert!((1900..=2010).contains(&c.sent), "{c:?}");
    assert_eq!(c.received + c.lost, c.sent, "{c:?}");
    assert!(
        c.lost * 100 <= c.sent,
        "an idle receiver lost over 1 %: {c:?}"
    );
    assert_eq!((c.reordered, c.duplicated), (0, 0), "{c:?}");
    let rate = out.values["mcast.received"];
    assert!((1800.0..=2200.0).contains(&rate), "{rate} msg/s");
    assert_eq!(out.values["mcast.lost"], c.lost as f64);
    assert_eq!(out.values["mcast.reordered"], 0.0);
    assert_eq!(out.values["mcast.duplicated"], 0.0);
    let s = &out.series[0];
    assert_eq!(
        (s.name.as_str(), s.unit.as_str()),
        ("mcast.received", "msg/s")
    );
    assert_eq!(s.t_ns, (0..10).map(|i| i * 100_000_000).collect::<Vec<_>>());
    let total: f64 = s.values.iter().map(|v| v * 0.1).sum();
    assert!((total - c.received as f64).abs() < 1.0, "{total} vs {c:?}");
    assert!(s.steps.is_empty());
    let roles: Vec<Role> = out.tasks.iter().map(|t| t.0).collect();
    assert_eq!(roles, [Role::Sender, Role::Receiver]);
    assert!(out.tasks[0].1 != out.tasks[1].1 && out.tasks.iter().all(|t| t.1 > 0));
}

#[test]
fn mcast_pinned_unpaced_accounts_for_every_message() {
    let Some(_lock) = live("the mcast workload") else {
        return;
    };
    let online = jitterlab_host::sched::get_affinity(0).unwrap();
    let last = online.last().unwrap_or(0).to_string();
    let cancel = AtomicBool::new(false);
    let (out, c) = mcast::measure(
        &mcast_measure(None),
        Some(&cpus("0")),
        Some(&cpus(&last)),
        SECOND,
        &cancel,
        &Roles::default(),
    )
    .unwrap();
    no_namespaces_left();
    assert!(c.sent > 0 && c.received > 0, "{c:?}");
    assert_eq!(c.received + c.lost, c.sent, "{c:?}");
    assert_eq!(c.duplicated, 0, "{c:?}");
    assert!(out.values["mcast.received"] > 0.0);
}

#[test]
fn mcast_cancelled_ends_promptly_and_cleans_up() {
    let Some(_lock) = live("the mcast workload") else {
        return;
    };
    let cancel = AtomicBool::new(false);
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            cancel.store(true, Ordering::Relaxed);
        });
        mcast::run(
            &mcast_measure(Some(1000)),
            None,
            None,
            30 * SECOND,
            &cancel,
            &Roles::default(),
        )
    });
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(
        matches!(&r, Err(Error::Workload { error, .. }) if error == "cancelled"),
        "{r:?}"
    );
    no_namespaces_left();
}

/// NET_RX softirqs run so far on each CPU (indexed by CPU number).
fn net_rx() -> Vec<u64> {
    let path = std::path::Path::new("/proc/softirqs");
    let bytes = jitterlab_host::read_file_bounded(path, jitterlab_host::READ_LIMIT).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let (cpus, rows) = jitterlab_host::irqs::parse_softirqs(path, &text).unwrap();
    let row = rows.iter().find(|r| r.name == "NET_RX").unwrap();
    let mut by_cpu = vec![0; cpus.iter().max().map_or(0, |&c| c as usize + 1)];
    for (&cpu, &n) in cpus.iter().zip(&row.counts) {
        by_cpu[cpu as usize] = n;
    }
    by_cpu
}

/// What the runner's `irq-cpu` placement rests on (netns.rs, "Where the receive
/// path runs"): the receiver's NET_RX softirqs run on the sender's CPU.
#[test]
fn mcast_net_rx_runs_on_the_senders_cpu() {
    let Some(_lock) = live("the mcast workload") else {
        return;
    };
    let online = jitterlab_host::sched::get_affinity(0).unwrap();
    if online.len() < 2 {
        skip("NET_RX placement needs two CPUs");
        return;
    }
    let (a, b) = (online.first().unwrap(), online.last().unwrap());
    let cancel = AtomicBool::new(false);
    for (sender, receiver) in [(a, b), (b, a)] {
        let before = net_rx();
        let (s, r) = (cpus(&sender.to_string()), cpus(&receiver.to_string()));
        let m = mcast_measure(Some(5000));
        let (_, c) =
            mcast::measure(&m, Some(&s), Some(&r), SECOND, &cancel, &Roles::default()).unwrap();
        let after = net_rx();
        let delta = |cpu: u32| after[cpu as usize] - before[cpu as usize];
        let (on_sender, on_receiver) = (delta(sender), delta(receiver));
        eprintln!(
            "sender on {sender}: NET_RX {on_sender} there, {on_receiver} on {receiver}; {c:?}"
        );
        assert!(on_sender >= c.sent / 2, "{on_sender} NET_RX for {c:?}");
        assert!(on_receiver * 4 < on_sender, "{on_receiver} vs {on_sender}");
    }
    no_namespaces_left();
}

fn tcp_measure() -> TcpMeasure {
    TcpMeasure {
        interval_ns: 1_000_000_000,
        bitrate: None,
        streams: 1,
        server_cpus: None,
        client_cpus: None,
    }
}

fn have_iperf3() -> bool {
    if std::path::Path::new("/usr/bin/iperf3").exists() {
        return true;
    }
    skip("iperf3 is not installed");
    false
}

#[test]
fn tcp_unlimited_gives_a_throughput() {
    let Some(_lock) = live("the tcp workload") else {
        return;
    };
    if !have_iperf3() {
        return;
    }
    let cancel = AtomicBool::new(false);
    let zero = cpus("0");
    let out = tcp::run(
        &tcp_measure(),
        None,
        Some(&zero),
        Some(&zero),
        SECOND,
        &cancel,
        &Roles::default(),
    )
    .unwrap();
    no_namespaces_left();
    let bps = out.values["tcp.throughput"];
    assert!(bps > 0.0, "{bps}");
    let s = &out.series[0];
    assert_eq!(
        (s.name.as_str(), s.unit.as_str()),
        ("tcp.throughput", "bit/s")
    );
    assert!(!s.values.is_empty() && s.values.iter().all(|&v| v > 0.0));
    assert_eq!(s.t_ns[0], 0);
    let roles: Vec<Role> = out.tasks.iter().map(|t| t.0).collect();
    assert_eq!(roles, [Role::Server, Role::Client]);
    let client = out
        .raw
        .iter()
        .find(|r| r.0 == "iperf3-client.json")
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&client.1).unwrap();
    assert_eq!(json["start"]["test_start"]["duration"], 1);
    assert!(out.raw.iter().any(|r| r.0 == "iperf3-server.json"));
}

#[test]
fn tcp_at_100m_is_near_100m() {
    let Some(_lock) = live("the tcp workload") else {
        return;
    };
    if !have_iperf3() {
        return;
    }
    let cancel = AtomicBool::new(false);
    let out = tcp::run(
        &tcp_measure(),
        Some("100M"),
        None,
        None,
        2 * SECOND,
        &cancel,
        &Roles::default(),
    )
    .unwrap();
    no_namespaces_left();
    let bps = out.values["tcp.throughput"];
    assert!((80e6..=120e6).contains(&bps), "{bps} bit/s");
}

#[test]
fn tcp_cancelled_ends_promptly_and_cleans_up() {
    let Some(_lock) = live("the tcp workload") else {
        return;
    };
    if !have_iperf3() {
        return;
    }
    let cancel = AtomicBool::new(false);
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            cancel.store(true, Ordering::Relaxed);
        });
        tcp::run(
            &tcp_measure(),
            Some("10M"),
            None,
            None,
            30 * SECOND,
            &cancel,
            &Roles::default(),
        )
    });
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert!(
        matches!(&r, Err(Error::Workload { error, .. }) if error == "cancelled"),
        "{r:?}"
    );
    no_namespaces_left();
}

#[test]
fn tcp_without_iperf3_is_invalid() {
    // The lock keeps every test that starts a program away while PATH is changed.
    let _lock = host_lock().expect("the host lock");
    let empty = tempfile::tempdir().unwrap();
    let old = std::env::var_os("PATH");
    std::env::set_var("PATH", empty.path());
    let cancel = AtomicBool::new(false);
    let r = tcp::run(
        &tcp_measure(),
        None,
        None,
        None,
        SECOND,
        &cancel,
        &Roles::default(),
    );
    match old {
        Some(p) => std::env::set_var("PATH", p),
        None => std::env::remove_var("PATH"),
    }
    assert!(
        matches!(&r, Err(Error::Invalid(m)) if m.contains("iperf3 package")),
        "{r:?}"
    );
}

/// The figures of the report (not a check): `cargo test -p jitterlab-runner --test
/// net -- --ignored --nocapture figures`.
#[test]
#[ignore]
fn figures() {
    let Some(_lock) = live("the figures") else {
        return;
    };
    let cancel = AtomicBool::new(false);
    for (label, s, r) in [
        ("unpinned", None, None),
        ("apart 0/1", Some("0"), Some("1")),
        ("same CPU 0", Some("0"), Some("0")),
    ] {
        for _ in 0..3 {
            let (s, r) = (s.map(cpus), r.map(cpus));
            let (out, c) = mcast::measure(
                &mcast_measure(None),
                s.as_ref(),
                r.as_ref(),
                2 * SECOND,
                &cancel,
                &Roles::default(),
            )
            .unwrap();
            println!(
                "mcast {label}: {:.0} msg/s received, sent {} lost {} reordered {} dup {}",
                out.values["mcast.received"], c.sent, c.lost, c.reordered, c.duplicated
            );
        }
    }
    // The receiver's CPU shared with a spinning thread: a starved receiver.
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            jitterlab_host::sched::set_affinity(0, &cpus("1")).unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        for _ in 0..3 {
            let (out, c) = mcast::measure(
                &mcast_measure(None),
                Some(&cpus("0")),
                Some(&cpus("1")),
                2 * SECOND,
                &cancel,
                &Roles::default(),
            )
            .unwrap();
            println!(
                "mcast apart 0/1, a spinner on 1: {:.0} msg/s received, sent {} lost {} reordered {} dup {}",
                out.values["mcast.received"], c.sent, c.lost, c.reordered, c.duplicated
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
    for (label, s, c) in [
        ("unpinned", None, None),
        ("apart 0/1", Some("0"), Some("1")),
        ("same CPU 0", Some("0"), Some("0")),
    ] {
        let (s, c) = (s.map(cpus), c.map(cpus));
        let out = tcp::run(
            &tcp_measure(),
            None,
            s.as_ref(),
            c.as_ref(),
            2 * SECOND,
            &cancel,
            &Roles::default(),
        )
        .unwrap();
        println!(
            "tcp {label}: {:.2} Gbit/s",
            out.values["tcp.throughput"] / 1e9
        );
    }
}
