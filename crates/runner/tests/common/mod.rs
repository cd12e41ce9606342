//! What the live tests of the probes share: the CPU they measure, tracefs, and a
//! SCHED_FIFO hog of known length on that CPU.

use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::sched;
use jitterlab_host::tasks::Policy;
use jitterlab_host::Root;

/// The last online CPU, when there are two or more (with one, a hog would stall the
/// whole machine).
pub fn last_cpu() -> Option<u32> {
    let online =
        CpuSet::parse_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?)
            .ok()?;
    online.last().filter(|_| online.len() >= 2)
}

/// Whether tracefs is mounted.
pub fn tracefs() -> bool {
    jitterlab_host::tracefs::find(&Root::live())
        .ok()
        .flatten()
        .is_some()
}

/// A thread `jl-test-hog` at SCHED_FIFO 50 on one CPU that spins for `length`, once,
/// `after` its start. It takes its CPU and priority when spawned: a SCHED_OTHER thread
/// placed on a probe's CPU would not run until the probe had ended.
pub struct Hog {
    go: Option<Sender<()>>,
    thread: JoinHandle<()>,
}

impl Hog {
    /// Spawns it, ready on `cpu`.
    pub fn spawn(cpu: u32, after: Duration, length: Duration) -> Hog {
        let (go, started) = channel::<()>();
        let (ready, is_ready) = channel::<()>();
        let thread = std::thread::Builder::new()
            .name("jl-test-hog".into())
            .spawn(move || {
                sched::set_affinity(0, &CpuSet::from_iter([cpu])).unwrap();
                sched::set_scheduler(0, Policy::Fifo, 50).unwrap();
                ready.send(()).unwrap();
                if started.recv().is_err() {
                    return;
                }
                std::thread::sleep(after);
                let end = Instant::now() + length;
                while Instant::now() < end {
                    std::hint::spin_loop();
                }
                sched::set_scheduler(0, Policy::Other, 0).unwrap();
            })
            .unwrap();
        is_ready.recv().unwrap();
        Hog {
            go: Some(go),
            thread,
        }
    }

    /// Starts its clock: it spins `after` from now.
    pub fn start(&mut self) {
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
    }

    /// Waits for it (a hog never started just ends).
    pub fn join(mut self) {
        self.go.take();
        self.thread.join().unwrap();
    }
}
