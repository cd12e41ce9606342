//! `cargo bench -p jitterlab --bench show`: wall time of `jitterlab show`
//! against `ps` on the same machine in the same run, interleaved.
//!
//! Targets (issue 2): `show --json` under 50 ms; `show tasks --threads` with
//! 10,000 threads alive under 1 s. The 10,000 threads are parked threads of
//! this benchmark process. Figures are medians over the runs; ratios are
//! jitterlab / ps.

use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn time_once(argv: &[&str]) -> Duration {
    let start = Instant::now();
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{}: {e}", argv[0]));
    let elapsed = start.elapsed();
    assert!(status.success(), "{argv:?} failed");
    elapsed
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs the commands `runs` times, interleaved; returns each one's median.
fn compare(cmds: &[&[&str]], runs: usize) -> Vec<Duration> {
    let mut samples = vec![Vec::new(); cmds.len()];
    for _ in 0..runs {
        for (i, c) in cmds.iter().enumerate() {
            samples[i].push(time_once(c));
        }
    }
    samples.into_iter().map(median).collect()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// One measurement: jitterlab's arguments against a peer command.
struct Case<'a> {
    title: &'a str,
    args: &'a [&'a str],
    peer: &'a [&'a str],
    target: Duration,
    runs: usize,
}

/// Runs a case (jitterlab and the peer interleaved) and prints one line.
fn measure(exe: &str, case: &Case) {
    let mut ours = vec![exe];
    ours.extend_from_slice(case.args);
    let m = compare(&[&ours, case.peer], case.runs);
    let verdict = if m[0] <= case.target { "met" } else { "MISSED" };
    println!(
        "{:<44} {:>10}  target < {:<8} {verdict:<6}  {} {:>10}  ratio {:.2}",
        case.title,
        ms(m[0]),
        ms(case.target),
        case.peer[..2].join(" "),
        ms(m[1]),
        m[0].as_secs_f64() / m[1].as_secs_f64()
    );
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_jitterlab");
    let ps_threads: &[&str] = &["ps", "-eLo", "pid,tid,psr,policy,rtprio,ni,stat,time,comm"];
    let ps_procs: &[&str] = &["ps", "-eo", "pid,psr,policy,rtprio,ni,stat,time,args"];

    let threads_now = std::fs::read_dir("/proc").map(|d| d.count()).unwrap_or(0);
    println!("jitterlab show benchmark ({threads_now} /proc entries before spawning)");
    let fast = Duration::from_millis(50);
    for case in [
        Case {
            title: "show --json (idle machine)",
            args: &["show", "--json"],
            peer: ps_threads,
            target: fast,
            runs: 30,
        },
        Case {
            title: "show tasks",
            args: &["show", "tasks"],
            peer: ps_procs,
            target: fast,
            runs: 30,
        },
    ] {
        measure(exe, &case);
    }

    const N: usize = 10_000;
    let barrier = Arc::new(Barrier::new(N + 1));
    let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut handles = Vec::with_capacity(N);
    for _ in 0..N {
        let b = Arc::clone(&barrier);
        let r = Arc::clone(&release);
        handles.push(
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    b.wait();
                    while !r.load(std::sync::atomic::Ordering::Relaxed) {
                        std::thread::park();
                    }
                })
                .expect("spawn thread"),
        );
    }
    barrier.wait();
    let second = Duration::from_secs(1);
    for case in [
        Case {
            title: "show tasks --threads (10,000 threads alive)",
            args: &["show", "tasks", "--threads"],
            peer: ps_threads,
            target: second,
            runs: 7,
        },
        Case {
            title: "show tasks --threads --json (10,000 threads)",
            args: &["show", "tasks", "--threads", "--json"],
            peer: ps_threads,
            target: second,
            runs: 7,
        },
        Case {
            title: "show --json (10,000 threads alive)",
            args: &["show", "--json"],
            peer: ps_threads,
            target: second,
            runs: 7,
        },
    ] {
        measure(exe, &case);
    }

    release.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in handles {
        h.thread().unpark();
        let _ = h.join();
    }
}
