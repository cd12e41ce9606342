//! A .dat with records of every event format of a real trace, its fields filled with
//! seeded pseudo-random values (numbers of every size and sign, pointers into a small
//! kallsyms, printable strings, dynamic arrays and sockaddrs): its print formats printed
//! by `jitterlab report` are compared with `trace-cmd report -N`'s
//! (`crates/jitterlab/tests/report.rs`). The files of `tests/data/sweep` are what this
//! writes (`sweep_files_are_the_generators`; `JITTERLAB_WRITE_SWEEP=DIR` writes them).

use jitterlab_trace::dat::{DatFile, DatMeta, DatWriter, Spool};
use jitterlab_trace::format::{EventFormat, FieldKind};

use crate::util::*;

/// The made-up traces: name, the trace whose formats they use, records per event, seed.
const SWEEPS: [(&str, &str, usize, u64); 3] = [
    ("formats-cyclictest-idle", "cyclictest-idle.v7.dat", 3, 1),
    ("formats-ext4-events", "external/ext4-events.dat", 20, 7),
    (
        "formats-fifo-multicore",
        "external/fifo-multicore.dat",
        40,
        3,
    ),
];

/// `synth-le.v7.dat` copied with a trace clock that does not count nanoseconds
/// (`[counter] local`), which trace-cmd prints raw.
fn counter_clock() -> Vec<u8> {
    let dat = open("synth-le.v7.dat");
    let mut meta = DatMeta::from_dat(&dat);
    meta.trace_clock = Some("[counter] local".into());
    let mut w = DatWriter::new(meta, Spool::Memory).unwrap();
    for (i, cpu) in dat.buffers()[0].cpus.iter().enumerate() {
        dat.cpu_pages(0, i, |page| {
            w.write_pages(0, cpu.cpu, page).unwrap();
            Ok(())
        })
        .unwrap();
    }
    let mut out = Vec::new();
    w.finish(&mut out).unwrap();
    out
}

#[test]
fn sweep_files_are_the_generators() {
    let bytes = counter_clock();
    if let Ok(dir) = std::env::var("JITTERLAB_WRITE_SWEEP") {
        std::fs::write(std::path::Path::new(&dir).join("counter-clock.dat"), &bytes).unwrap();
    }
    assert!(
        bytes == fixture("sweep/counter-clock.dat"),
        "counter-clock.dat"
    );
    for (name, src, per_event, seed) in SWEEPS {
        let bytes = sweep(&open(src), per_event, seed);
        if let Ok(dir) = std::env::var("JITTERLAB_WRITE_SWEEP") {
            std::fs::write(
                std::path::Path::new(&dir).join(format!("{name}.dat")),
                &bytes,
            )
            .unwrap();
        }
        assert!(
            bytes == fixture(&format!("sweep/{name}.dat")),
            "{name}: tests/data/sweep holds another file than the generator writes"
        );
    }
}

/// The kallsyms of the made-up trace: 64 functions 0x100 apart.
const FUNCS: u64 = 0xffff_ffff_8100_0000;

fn kallsyms() -> Vec<u8> {
    let mut k = String::new();
    for i in 0..64u64 {
        k.push_str(&format!("{:016x} T func_{i}\n", FUNCS + i * 0x100));
    }
    k.into_bytes()
}

/// The trace_printk formats of the made-up trace.
const PRINTK: u64 = 0xffff_ffff_8200_0000;

fn printk() -> Vec<u8> {
    format!(
        "0x{PRINTK:x} : \"v=%d s=%s u=%lu x=%llx\\n\"\n0x{:x} : \"a bputs string\\n\"\n0x{:x} : \"%-5d|%5s|%pS\"\n",
        PRINTK + 0x10,
        PRINTK + 0x20
    )
    .into_bytes()
}

/// xorshift64*, seeded.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value worth printing for a field of `size` bytes.
    fn value(&mut self, size: usize, long: usize) -> u64 {
        let v = match self.below(8) {
            0 => 0,
            1 => self.below(10),
            2 => u64::MAX,
            3 if size >= long && size >= 4 => FUNCS + self.below(64 * 0x100 + 0x40),
            4 if size == 8 => PRINTK + 0x10 * self.below(3),
            5 => self.below(1 << 16),
            _ => self.next(),
        };
        if size >= 8 {
            v
        } else {
            v & ((1u64 << (size * 8)) - 1)
        }
    }

    fn text(&mut self, max: usize) -> Vec<u8> {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_-/:. ";
        let n = self.below(max as u64 + 1) as usize;
        (0..n)
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize])
            .collect()
    }
}

fn put(rec: &mut [u8], off: usize, size: usize, v: u64) {
    let b = v.to_le_bytes();
    if let Some(dst) = rec.get_mut(off..off + size) {
        dst.copy_from_slice(&b[..size.min(8)]);
    }
}

/// One record of `f` (event id first), its fields filled from `rng`.
fn record(f: &EventFormat, rng: &mut Rng, long: usize) -> Vec<u8> {
    let end = f
        .common
        .iter()
        .chain(&f.fields)
        .map(|x| x.offset + x.size)
        .max()
        .unwrap_or(8);
    let mut rec = vec![0u8; end];
    let mut tail = Vec::new();
    let mut dynamic = Vec::new();
    for x in f.common.iter().chain(&f.fields) {
        match &*x.name {
            "common_type" => put(&mut rec, x.offset, x.size, u64::from(f.id)),
            "common_pid" => {
                let pid = [0, 1, 100, 1234, rng.below(1 << 20)][rng.below(5) as usize];
                put(&mut rec, x.offset, x.size, pid);
            }
            _ => {}
        }
        if x.name.starts_with("common_") {
            if x.name.contains("flags") || x.name.contains("preempt") {
                put(&mut rec, x.offset, x.size, rng.below(256));
            }
            continue;
        }
        let string = x.type_name.contains("char");
        match x.kind {
            FieldKind::Scalar => {
                // Lengths stay small: libtraceevent reads that many bytes, wherever.
                let length = ["len", "count", "size", "nr", "num", "cnt"]
                    .iter()
                    .any(|n| x.name.contains(n));
                let v = if length {
                    rng.below(24)
                } else {
                    rng.value(x.size, long)
                };
                put(&mut rec, x.offset, x.size, v);
            }
            FieldKind::Array => {
                let bytes: Vec<u8> = if string {
                    let mut t = rng.text(x.size.saturating_sub(1));
                    t.resize(x.size, 0);
                    t
                } else {
                    (0..x.size).map(|_| rng.below(256) as u8).collect()
                };
                rec[x.offset..x.offset + x.size].copy_from_slice(&bytes);
            }
            FieldKind::Tail => {
                tail = if string {
                    let mut t = rng.text(24);
                    t.push(0);
                    t
                } else {
                    (0..4 * rng.below(6))
                        .map(|_| rng.below(256) as u8)
                        .collect()
                };
            }
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let data: Vec<u8> = if string {
                    let mut t = rng.text(20);
                    t.push(0);
                    t
                } else if x.name.contains("addr") && rng.below(2) == 0 {
                    // A sockaddr_in or sockaddr_in6.
                    let v6 = rng.below(2) == 0;
                    let mut sa = vec![0u8; if v6 { 28 } else { 16 }];
                    sa[0] = if v6 { 10 } else { 2 };
                    for b in sa.iter_mut().skip(2) {
                        *b = rng.below(256) as u8;
                    }
                    if v6 && rng.below(2) == 0 {
                        sa[8..18].fill(0);
                    }
                    sa
                } else {
                    // At least the longest length field (24): libtraceevent reads as
                    // many bytes as a length field says, past the data if need be.
                    (0..24 + rng.below(24))
                        .map(|_| rng.below(256) as u8)
                        .collect()
                };
                dynamic.push((x.offset, x.size, x.kind, data));
            }
        }
    }
    rec.extend_from_slice(&tail);
    for (off, size, kind, data) in dynamic {
        let at = rec.len();
        let start = if kind == FieldKind::RelLoc {
            at - (off + size)
        } else {
            at
        };
        let word = if size == 2 {
            start as u64
        } else {
            ((data.len() as u64) << 16) | start as u64
        };
        put(&mut rec, off, size.min(4), word);
        rec.extend_from_slice(&data);
    }
    // Room for a length field larger than the array it counts, read on into the record.
    rec.resize((rec.len() + 24).div_ceil(4) * 4, 0);
    rec
}

/// A page of records, each 1000 ns after the last.
struct Page {
    base: u64,
    body: Vec<u8>,
}

impl Page {
    /// The page: its timestamp, its commit (a kernel `long`), the records.
    fn finish(self, page: usize, long: usize) -> Vec<u8> {
        let mut p = Vec::with_capacity(page);
        p.extend_from_slice(&self.base.to_le_bytes());
        p.extend_from_slice(&(self.body.len() as u64).to_le_bytes()[..long]);
        p.extend_from_slice(&self.body);
        p.resize(page, 0);
        p
    }
}

/// The file: every format of `src` (that jitterlab parses), `per_event` records each.
fn sweep(src: &DatFile<'_>, per_event: usize, seed: u64) -> Vec<u8> {
    const PAGE: usize = 4096;
    let info = src.info();
    let long = usize::from(info.long_size);
    let mut meta = DatMeta {
        big_endian: false,
        long_size: info.long_size,
        page_size: PAGE as u32,
        cpus: 1,
        header_page: src.header_page().as_bytes().to_vec(),
        header_event: src.header_event().as_bytes().to_vec(),
        kallsyms: kallsyms(),
        printk: printk(),
        cmdlines: b"1 init\n100 worker\n1234 bash\n".to_vec(),
        trace_clock: Some("[local] global".into()),
        ..DatMeta::default()
    };
    let mut formats = Vec::new();
    for (system, text) in src.format_files() {
        meta.add_format(system, text.clone());
        if let Ok(f) = EventFormat::parse(system, &String::from_utf8_lossy(text)) {
            formats.push(f);
        }
    }
    let mut w = DatWriter::new(meta, Spool::Memory).unwrap();
    let mut rng = Rng::new(seed);
    let mut ts = 1_000_000u64;
    let mut page = Page {
        base: ts,
        body: Vec::new(),
    };
    for f in &formats {
        for _ in 0..per_event {
            let rec = record(f, &mut rng, long);
            let len = rec.len();
            if len > PAGE - 32 {
                continue;
            }
            let words = if len <= 112 { 4 } else { 8 };
            if page.body.len() + words + len > PAGE - 8 - long {
                let full = std::mem::replace(
                    &mut page,
                    Page {
                        base: ts,
                        body: Vec::new(),
                    },
                );
                w.write_pages(0, 0, &full.finish(PAGE, long)).unwrap();
            }
            let delta = if page.body.is_empty() { 0 } else { 1000 } as u32;
            if len <= 112 {
                page.body
                    .extend_from_slice(&((delta << 5) | (len / 4) as u32).to_le_bytes());
            } else {
                page.body.extend_from_slice(&(delta << 5).to_le_bytes());
                page.body.extend_from_slice(&(len as u32 + 4).to_le_bytes());
            }
            page.body.extend_from_slice(&rec);
            ts += u64::from(delta);
        }
    }
    w.write_pages(0, 0, &page.finish(PAGE, long)).unwrap();
    let mut out = Vec::new();
    w.finish(&mut out).unwrap();
    out
}
