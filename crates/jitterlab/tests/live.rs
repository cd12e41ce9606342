//! Live runs on this machine: pin a spawned multi-threaded child, start pinned
//! commands, move a real IRQ. Everything changed is restored, also on failure.

use std::fs;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{host_lock, is_root, json_data, run, skip, stderr, stdout};

/// Kills and reaps the child when the test ends, however it ends.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Started by `spawn_threaded` in a copy of this test binary: parks
/// JITTERLAB_CHILD_THREADS threads and exits when stdin closes.
#[test]
#[ignore = "helper process for live::pin_moves_every_thread"]
fn child_with_threads() {
    let n: usize = std::env::var("JITTERLAB_CHILD_THREADS")
        .expect("run only by live::spawn_threaded")
        .parse()
        .unwrap();
    for _ in 0..n {
        std::thread::spawn(|| loop {
            std::thread::park();
        });
    }
    let mut sink = String::new();
    let _ = std::io::stdin().read_line(&mut sink);
    std::process::exit(0);
}

fn tids(pid: u32) -> Vec<u32> {
    let mut t: Vec<u32> = fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    t.sort();
    t
}

fn allowed(pid: u32, tid: u32) -> String {
    let status = fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// A process with `threads` extra threads, all parked.
fn spawn_threaded(threads: usize) -> Reap {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "live::child_with_threads",
            "--test-threads=1",
            "--quiet",
        ])
        .env("JITTERLAB_CHILD_THREADS", threads.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let child = Reap(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tids(pid).len() < threads + 1 {
        assert!(Instant::now() < deadline, "child never started its threads");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

#[test]
fn pin_moves_every_thread() {
    let child = spawn_threaded(4);
    let pid = child.0.id();
    let all = tids(pid);
    assert!(all.len() >= 5);
    let before: Vec<String> = all.iter().map(|&t| allowed(pid, t)).collect();

    // A thread id is not a process id: refused, nothing moved.
    let o = run(&["pin", "0", "-p", &all[1].to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!(
            "{} is a thread of process {pid}, not a process: use -p {pid} --tid {}",
            all[1], all[1]
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(allowed(pid, all[1]), before[1]);

    // The `taskset -p` trap first: move one thread the way `taskset -p` does...
    let one = all[all.len() - 1];
    let o = run(&[
        "pin",
        "0",
        "-p",
        &pid.to_string(),
        "--tid",
        &one.to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(allowed(pid, one), "0");
    if before[0] != "0" {
        assert_eq!(
            allowed(pid, all[0]),
            before[0],
            "--tid moves that thread only"
        );
        // ...and `show tasks -p` says the threads no longer share one mask.
        let d = json_data(
            &run(&["show", "tasks", "-p", &pid.to_string(), "--json"]),
            "jitterlab.show.tasks",
        );
        assert_eq!(d["mask_groups"].as_array().unwrap().len(), 2);
        let text = stdout(&run(&["show", "tasks", "-p", &pid.to_string()]));
        assert!(text.contains("do not share one CPU mask"), "{text}");
    }

    // Then the whole process.
    let o = run(&["pin", "0", "-p", &pid.to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for &t in &all {
        assert_eq!(allowed(pid, t), "0", "thread {t}");
        assert!(
            text.contains(&format!("{t}  ")),
            "thread {t} reported:\n{text}"
        );
    }
    assert!(
        text.contains(&format!(
            "process {pid}: {} of {} thread(s) now on CPUs 0",
            all.len(),
            all.len()
        )),
        "{text}"
    );

    let d = json_data(
        &run(&["pin", &before[0], "-p", &pid.to_string(), "--json"]),
        "jitterlab.pin",
    );
    let threads = d["threads"].as_array().unwrap();
    assert_eq!(threads.len(), all.len());
    assert!(threads
        .iter()
        .all(|t| t["outcome"] == "moved" && t["old"] == "0" && t["new"] == before[0].as_str()));
    for &t in &all {
        assert_eq!(allowed(pid, t), before[0]);
    }
}

#[test]
fn pinned_command_gets_mask_policy_and_exit_status() {
    let o = run(&[
        "pin",
        "0",
        "--",
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Cpus_allowed_list:\t0");
    let o = run(&["pin", "0", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7));
    if !is_root() {
        skip("the SCHED_FIFO part: needs root");
        return;
    }
    // A FIFO command that runs for milliseconds (cat), on one CPU.
    let o = run(&[
        "pin",
        "0",
        "--policy",
        "fifo",
        "--priority",
        "5",
        "--",
        "cat",
        "/proc/self/stat",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stat = stdout(&o);
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    // Fields 40 (rt_priority) and 41 (policy) of proc(5); fields[0] is field 3.
    assert_eq!((fields[37], fields[38]), ("5", "1"), "{stat}");
    assert_eq!(fields[36], "0", "ran on CPU 0: {stat}");
}

/// Restores an IRQ's smp_affinity_list on drop, and the CPU it was delivered to (a
/// mask widened back leaves it where the narrow one put it).
struct IrqRestore {
    irq: u32,
    old: String,
    cpu: Option<u32>,
}

impl IrqRestore {
    fn new(irq: u32, old: String) -> IrqRestore {
        let effective = fs::read_to_string(format!("/proc/irq/{irq}/effective_affinity_list"))
            .ok()
            .and_then(|e| jitterlab_cpuset::CpuSet::parse_list(e.trim()).ok())
            .filter(|e| e.len() == 1);
        IrqRestore {
            irq,
            old,
            cpu: effective.and_then(|e| e.first()),
        }
    }
}

impl Drop for IrqRestore {
    fn drop(&mut self) {
        let path = format!("/proc/irq/{}/smp_affinity_list", self.irq);
        let mask = jitterlab_cpuset::CpuSet::parse_list(&self.old);
        match (self.cpu, mask) {
            (Some(cpu), Ok(mask)) if mask.contains(cpu) => {
                let root = jitterlab_host::Root::live();
                let wait = std::time::Duration::from_secs(2);
                if jitterlab_host::irqs::restore_effective(&root, self.irq, cpu, &mask, wait)
                    .is_err()
                {
                    let _ = fs::write(&path, &self.old);
                }
            }
            _ => {
                let _ = fs::write(&path, &self.old);
            }
        }
    }
}

fn irq_list() -> Vec<(u32, String)> {
    let d = json_data(&run(&["show", "irqs", "--json"]), "jitterlab.show.irqs");
    d["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["irq"].as_u64().unwrap() as u32,
                i["actions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(","),
            )
        })
        .collect()
}

#[test]
fn irq_set_moves_a_real_irq_and_restores_it() {
    if !is_root() {
        skip("writing /proc/irq needs root");
        return;
    }
    let _lock = host_lock();
    let mut moved = None;
    for (irq, name) in irq_list() {
        let path = format!("/proc/irq/{irq}/smp_affinity_list");
        let old = fs::read_to_string(&path).unwrap().trim().to_string();
        let guard = IrqRestore::new(irq, old.clone());
        let target = if old == "0" { "1" } else { "0" };
        let o = run(&["irq", "set", &irq.to_string(), target, "--json"]);
        if o.status.code() == Some(1) {
            continue; // refused (managed IRQ): try the next one
        }
        let d = json_data(&o, "jitterlab.irq.set");
        let c = &d["changes"][0];
        assert_eq!(c["old_affinity"], old.as_str());
        assert_eq!(c["new_affinity"], target);
        assert_eq!(fs::read_to_string(&path).unwrap().trim(), target);
        assert!(["applied", "subset", "pending"].contains(&c["outcome"].as_str().unwrap()));
        // Restore through the CLI; the guard is the fallback.
        let o = run(&["irq", "set", &irq.to_string(), &old]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(fs::read_to_string(&path).unwrap().trim(), old);
        moved = Some((irq, name));
        drop(guard);
        break;
    }
    assert!(
        moved.is_some(),
        "no IRQ on this machine accepted an affinity write"
    );
}

#[test]
fn managed_irq_refusal_is_reported() {
    if !is_root() {
        skip("writing /proc/irq needs root");
        return;
    }
    let _lock = host_lock();
    let Some((irq, name)) = irq_list()
        .into_iter()
        .find(|(_, n)| n.starts_with("virtio") && n.contains("-req"))
    else {
        skip("no virtio block IRQ (the managed IRQ of this VM) here");
        return;
    };
    let old = fs::read_to_string(format!("/proc/irq/{irq}/smp_affinity_list")).unwrap();
    let _guard = IrqRestore::new(irq, old.trim().to_string());
    let o = run(&["irq", "set", &irq.to_string(), "0"]);
    assert_eq!(o.status.code(), Some(1), "{name}: {}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.contains("REFUSED: EPERM") || text.contains("REFUSED: EIO"),
        "{text}"
    );
    assert_eq!(
        fs::read_to_string(format!("/proc/irq/{irq}/smp_affinity_list")).unwrap(),
        old
    );
}

#[test]
fn irq_default_round_trip() {
    if !is_root() {
        skip("writing /proc/irq needs root");
        return;
    }
    let _lock = host_lock();
    let path = "/proc/irq/default_smp_affinity";
    let old = fs::read_to_string(path).unwrap();
    struct Restore(String);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = fs::write("/proc/irq/default_smp_affinity", &self.0);
        }
    }
    let _guard = Restore(old.trim().to_string());
    let old_list = jitterlab_cpuset::CpuSet::parse_mask(&old)
        .unwrap()
        .to_string();
    let o = run(&["irq", "default", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with(&format!("default IRQ affinity: {old_list} -> 0 ")),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        jitterlab_cpuset::CpuSet::parse_mask(&fs::read_to_string(path).unwrap())
            .unwrap()
            .to_string(),
        "0"
    );
    let o = run(&["irq", "default", &old_list]);
    assert!(o.status.success());
    assert_eq!(fs::read_to_string(path).unwrap(), old);
}
