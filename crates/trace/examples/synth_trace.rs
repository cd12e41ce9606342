//! Writes a synthetic trace-cmd .dat of N task slices, for the HTML viewer's benchmarks
//! and tests (web/bench, web/test): sched_switch, sched_waking, hardirq and softirq events
//! on every CPU, with the event formats of a real trace (a fixture under tests/data).
//!
//! ```text
//! cargo run --release -p jitterlab-trace --example synth_trace -- 1000000 /tmp/big.dat
//! cargo run --release -p jitterlab-trace --example synth_trace -- 1000000 /tmp/big.dat --cpus 4 --seed 7
//! ```
//!
//! The trace is made of three kinds of step on each CPU, chosen at random (a fixed-seed
//! xorshift, so the same arguments give the same file):
//! - a task runs 2-300 us and wakes the next, which switches in 1-30 us later;
//! - a task sleeps, the CPU idles, then IRQ 24 (`eth0`) raises NET_RX, whose softirq
//!   wakes a task (the IRQ -> softirq -> task chain of a network receive);
//! - the same through IRQ 25 (`timer-ish`), waking in the hardirq handler.
//!
//! Exactly one wake-up has a latency of 500 us (every other is under 40 us): on the last
//! CPU, about 61 % of the way through its slices. Its switch-in time (absolute ns) is
//! printed on stderr, with the file's counts.

use std::collections::HashMap;
use std::error::Error;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use jitterlab_trace::dat::{Compression, DatFile, DatMeta, DatWriter, PageEncoder, Spool};
use jitterlab_trace::format::Endian;
use jitterlab_trace::ringbuf::PageLayout;

const PAGE: usize = 4096;

/// One event of the synthetic trace, before it is encoded.
#[derive(Clone, Copy)]
enum Ev {
    /// prev -> next; `sleep`: prev_state S (else R, preempted).
    Switch {
        prev: u16,
        next: u16,
        sleep: bool,
    },
    /// `ctx`: the common_flags (0x08 in a hardirq, 0x10 in a softirq).
    Waking {
        pid: u16,
        task: u16,
        target: u16,
        ctx: u8,
    },
    IrqEntry {
        pid: u16,
        irq: u8,
    },
    IrqExit {
        pid: u16,
        irq: u8,
    },
    Raise {
        pid: u16,
        vec: u8,
    },
    SoftEntry {
        pid: u16,
        vec: u8,
    },
    SoftExit {
        pid: u16,
        vec: u8,
    },
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Log-uniform in [lo, hi).
    fn log(&mut self, lo: f64, hi: f64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo * (hi / lo).powf(u)) as u64
    }
}

/// A task: its pid (index into TASKS + 1000), comm, process and priority.
struct Task {
    pid: i32,
    tgid: i32,
    comm: String,
    prio: i32,
}

fn tasks() -> Vec<Task> {
    let mut v = vec![Task {
        pid: 0,
        tgid: 0,
        comm: "swapper".into(),
        prio: 120,
    }];
    let procs: [(&str, usize, i32); 8] = [
        ("iperf3", 4, 120),
        ("stress-ng", 6, 120),
        ("cyclictest", 3, 9),
        ("dd", 1, 120),
        ("kworker/u4:2", 1, 120),
        ("ksoftirqd", 2, 120),
        ("sshd", 2, 120),
        ("rcu_preempt", 1, 98),
    ];
    let mut pid = 1000;
    for (name, threads, prio) in procs {
        let tgid = pid;
        for t in 0..threads {
            v.push(Task {
                pid,
                tgid,
                comm: if t == 0 {
                    name.to_string()
                } else {
                    format!("{name}-{t}")
                },
                prio,
            });
            pid += 1;
        }
    }
    v
}

/// Field offsets of an event format: name -> (offset, size).
struct Format {
    id: u16,
    fields: HashMap<String, (usize, usize)>,
    size: usize,
}

fn parse_format(text: &str) -> Format {
    let mut id = 0;
    let mut fields = HashMap::new();
    let mut size = 0;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("ID: ") {
            id = v.trim().parse().unwrap_or(0);
        }
        let line = line.trim();
        let Some(rest) = line.strip_prefix("field:") else {
            continue;
        };
        let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
        let decl = parts[0];
        let name = decl
            .split_whitespace()
            .last()
            .unwrap_or("")
            .split('[')
            .next()
            .unwrap_or("")
            .to_string();
        let num = |key: &str| {
            parts
                .iter()
                .find_map(|p| p.strip_prefix(key))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
        };
        let (off, sz) = (num("offset:"), num("size:"));
        size = size.max(off + sz);
        fields.insert(name, (off, sz));
    }
    Format { id, fields, size }
}

struct Encoder {
    formats: HashMap<&'static str, Format>,
    tasks: Vec<Task>,
    irq_names: HashMap<u8, &'static str>,
}

impl Encoder {
    fn put(&self, rec: &mut [u8], f: &Format, field: &str, v: i64) {
        let (off, sz) = f.fields[field];
        rec[off..off + sz].copy_from_slice(&v.to_le_bytes()[..sz]);
    }
    fn put_str(&self, rec: &mut [u8], f: &Format, field: &str, s: &str) {
        let (off, sz) = f.fields[field];
        let b = s.as_bytes();
        let n = b.len().min(sz - 1);
        rec[off..off + n].copy_from_slice(&b[..n]);
    }
    fn task(&self, i: u16) -> &Task {
        &self.tasks[i as usize]
    }

    fn encode(&self, ev: Ev) -> Vec<u8> {
        let (name, pid, flags) = match ev {
            Ev::Switch { prev, .. } => ("sched_switch", self.task(prev).pid, 0u8),
            Ev::Waking { pid, ctx, .. } => ("sched_waking", self.task(pid).pid, ctx),
            Ev::IrqEntry { pid, .. } => ("irq_handler_entry", self.task(pid).pid, 0x08),
            Ev::IrqExit { pid, .. } => ("irq_handler_exit", self.task(pid).pid, 0x08),
            Ev::Raise { pid, .. } => ("softirq_raise", self.task(pid).pid, 0x08),
            Ev::SoftEntry { pid, .. } => ("softirq_entry", self.task(pid).pid, 0x10),
            Ev::SoftExit { pid, .. } => ("softirq_exit", self.task(pid).pid, 0x10),
        };
        let f = &self.formats[name];
        let mut extra = Vec::new();
        if let Ev::IrqEntry { irq, .. } = ev {
            extra = self.irq_names[&irq].as_bytes().to_vec();
            extra.push(0);
        }
        let mut rec = vec![0u8; f.size + extra.len()];
        rec[0..2].copy_from_slice(&f.id.to_le_bytes());
        rec[2] = flags;
        rec[4..8].copy_from_slice(&pid.to_le_bytes());
        match ev {
            Ev::Switch { prev, next, sleep } => {
                let (p, n) = (self.task(prev), self.task(next));
                self.put_str(&mut rec, f, "prev_comm", &p.comm);
                self.put(&mut rec, f, "prev_pid", p.pid.into());
                self.put(&mut rec, f, "prev_prio", p.prio.into());
                self.put(&mut rec, f, "prev_state", i64::from(sleep));
                self.put_str(&mut rec, f, "next_comm", &n.comm);
                self.put(&mut rec, f, "next_pid", n.pid.into());
                self.put(&mut rec, f, "next_prio", n.prio.into());
            }
            Ev::Waking { task, target, .. } => {
                let t = self.task(task);
                self.put_str(&mut rec, f, "comm", &t.comm);
                self.put(&mut rec, f, "pid", t.pid.into());
                self.put(&mut rec, f, "prio", t.prio.into());
                self.put(&mut rec, f, "target_cpu", target.into());
            }
            Ev::IrqEntry { irq, .. } => {
                self.put(&mut rec, f, "irq", irq.into());
                let (off, _) = f.fields["name"];
                let loc = ((extra.len() as u32) << 16) | f.size as u32;
                rec[off..off + 4].copy_from_slice(&loc.to_le_bytes());
                rec[f.size..].copy_from_slice(&extra);
            }
            Ev::IrqExit { irq, .. } => {
                self.put(&mut rec, f, "irq", irq.into());
                self.put(&mut rec, f, "ret", 1);
            }
            Ev::Raise { vec, .. } | Ev::SoftEntry { vec, .. } | Ev::SoftExit { vec, .. } => {
                self.put(&mut rec, f, "vec", vec.into());
            }
        }
        rec
    }
}

/// One CPU's simulation: its events in time order.
fn simulate(
    cpu: usize,
    ncpu: usize,
    slices: usize,
    rng: &mut Rng,
    outlier: bool,
) -> (Vec<(u64, Ev)>, Option<u64>) {
    let ntasks = tasks().len() as u64;
    let mut out = Vec::with_capacity(slices * 4);
    let mut t: u64 = 1_000_000_000_000 + cpu as u64 * 1_777;
    // Each CPU runs its own share of the tasks (a task never runs on two CPUs at once).
    let share = ((ntasks - 1) / ncpu as u64).max(2);
    let pick = |rng: &mut Rng, cur: u16| -> u16 {
        loop {
            let k = (1 + (cpu as u64 * share + rng.below(share)) % (ntasks - 1)) as u16;
            if k != cur {
                return k;
            }
        }
    };
    let mut cur: u16 = pick(rng, 0);
    let mut made = 0usize;
    let outlier_at = if outlier {
        slices * 61 / 100
    } else {
        usize::MAX
    };
    let mut outlier_ts = None;
    while made < slices {
        let run = rng.log(2_000.0, 300_000.0);
        let kind = rng.below(100);
        if made == outlier_at {
            // The one 500 us wake-up: the waker runs on after waking it.
            t += run;
            let next = pick(rng, cur);
            out.push((
                t,
                Ev::Waking {
                    pid: cur,
                    task: next,
                    target: cpu as u16,
                    ctx: 0,
                },
            ));
            t += 500_000;
            out.push((
                t,
                Ev::Switch {
                    prev: cur,
                    next,
                    sleep: false,
                },
            ));
            outlier_ts = Some(t);
            cur = next;
        } else if kind < 70 {
            t += run;
            let next = pick(rng, cur);
            let lat = rng.log(1_000.0, 30_000.0);
            out.push((
                t,
                Ev::Waking {
                    pid: cur,
                    task: next,
                    target: cpu as u16,
                    ctx: 0,
                },
            ));
            t += lat;
            out.push((
                t,
                Ev::Switch {
                    prev: cur,
                    next,
                    sleep: rng.below(2) == 0,
                },
            ));
            cur = next;
        } else {
            // Sleep, idle, then an IRQ wakes a task.
            t += run;
            out.push((
                t,
                Ev::Switch {
                    prev: cur,
                    next: 0,
                    sleep: true,
                },
            ));
            made += 1;
            t += rng.log(5_000.0, 500_000.0);
            let next = pick(rng, 0);
            let irq = if kind < 88 { 24 } else { 25 };
            out.push((t, Ev::IrqEntry { pid: 0, irq }));
            if irq == 24 {
                t += rng.log(500.0, 5_000.0);
                out.push((t, Ev::Raise { pid: 0, vec: 3 }));
                t += rng.log(500.0, 5_000.0);
                out.push((t, Ev::IrqExit { pid: 0, irq }));
                t += rng.log(300.0, 3_000.0);
                out.push((t, Ev::SoftEntry { pid: 0, vec: 3 }));
                t += rng.log(1_000.0, 10_000.0);
                out.push((
                    t,
                    Ev::Waking {
                        pid: 0,
                        task: next,
                        target: cpu as u16,
                        ctx: 0x10,
                    },
                ));
                t += rng.log(500.0, 3_000.0);
                out.push((t, Ev::SoftExit { pid: 0, vec: 3 }));
            } else {
                t += rng.log(500.0, 5_000.0);
                out.push((
                    t,
                    Ev::Waking {
                        pid: 0,
                        task: next,
                        target: cpu as u16,
                        ctx: 0x08,
                    },
                ));
                t += rng.log(300.0, 3_000.0);
                out.push((t, Ev::IrqExit { pid: 0, irq }));
            }
            t += rng.log(1_000.0, 20_000.0);
            out.push((
                t,
                Ev::Switch {
                    prev: 0,
                    next,
                    sleep: false,
                },
            ));
            cur = next;
            continue;
        }
        made += 1;
    }
    // End on a switch to idle so the last slice is closed.
    t += 10_000;
    out.push((
        t,
        Ev::Switch {
            prev: cur,
            next: 0,
            sleep: true,
        },
    ));
    (out, outlier_ts)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: synth_trace SLICES OUT.dat [--cpus N] [--seed S]";
    let slices: usize = args.get(1).ok_or(usage)?.replace('_', "").parse()?;
    let out = args.get(2).ok_or(usage)?;
    let mut ncpu = 2usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut i = 3;
    while i < args.len() {
        match args[i].as_str() {
            "--cpus" => ncpu = args.get(i + 1).ok_or(usage)?.parse()?,
            "--seed" => seed ^= args.get(i + 1).ok_or(usage)?.parse::<u64>()?,
            _ => return Err(usage.into()),
        }
        i += 2;
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/disk-irq-stress.v7.dat");
    let dat = DatFile::open(&fixture)?;
    let mut meta = DatMeta::from_dat(&dat);
    let mut formats = HashMap::new();
    for (_, text) in dat.format_files() {
        let text = String::from_utf8_lossy(text);
        let name = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("name: ")
            .to_string();
        for want in [
            "sched_switch",
            "sched_waking",
            "irq_handler_entry",
            "irq_handler_exit",
            "softirq_raise",
            "softirq_entry",
            "softirq_exit",
        ] {
            if name == want {
                formats.insert(want, parse_format(&text));
            }
        }
    }
    let tasks = tasks();
    meta.cpus = ncpu as u32;
    meta.page_size = PAGE as u32;
    meta.cpustats = Vec::new();
    meta.cmdlines = tasks
        .iter()
        .skip(1)
        .map(|t| format!("{} {}\n", t.pid, t.comm))
        .collect::<String>()
        .into_bytes();
    meta.tgids = tasks
        .iter()
        .skip(1)
        .map(|t| format!("{} {}\n", t.pid, t.tgid))
        .collect::<String>()
        .into_bytes();
    let enc = Encoder {
        formats,
        tasks,
        irq_names: HashMap::from([(24, "eth0"), (25, "timer-ish")]),
    };
    // The records are encoded little-endian (Encoder::put).
    let layout = PageLayout::new(Endian::Little, usize::from(meta.long_size), PAGE);
    let mut w = DatWriter::new_v7(meta, Spool::Memory, Compression::Zstd)?;
    let mut rng = Rng(seed);
    let mut events = 0usize;
    for cpu in 0..ncpu {
        let share = slices / ncpu + usize::from(cpu < slices % ncpu);
        let (evs, outlier) = simulate(cpu, ncpu, share, &mut rng, cpu == ncpu - 1);
        if let Some(ts) = outlier {
            eprintln!(
                "synth_trace: the 500 us wake-up switches in on CPU {cpu} at {ts} ns ({:.9} s)",
                ts as f64 / 1e9
            );
        }
        events += evs.len();
        let mut pages = PageEncoder::new(layout);
        for (ts, ev) in evs {
            pages.record(ts, &enc.encode(ev))?;
            if pages.ready() >= 64 {
                w.write_pages(0, cpu as u32, &pages.take_pages())?;
            }
        }
        w.write_pages(0, cpu as u32, &pages.finish())?;
    }
    let size = w.finish(BufWriter::new(File::create(out)?))?;
    eprintln!(
        "synth_trace: {out}: {slices} slices asked, {events} events on {ncpu} CPUs, {size} bytes"
    );
    Ok(())
}
