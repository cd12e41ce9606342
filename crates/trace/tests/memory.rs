//! Issue 13: no reader allocates more than 64 MB for any input under 16 MB.
//!
//! A counting global allocator tracks the live heap bytes of this test binary and their
//! peak. Each case builds its input first (the input's bytes are not counted), resets
//! the peak, runs one reader over the whole input (every event read, or the error it
//! stops at) and checks the peak of the bytes allocated on top of the input. The cases
//! run one at a time, in one `#[test]`, so a peak belongs to one input. Run with
//! `--nocapture` to see each case's peak.

use std::time::Instant;

use jitterlab_host::testing::{noise, CountingAlloc};

#[path = "dat/bombs.rs"]
mod bombs;

use jitterlab_trace::dat::{DatFile, DatMeta, DatOptions};
use jitterlab_trace::format::Endian;
use jitterlab_trace::ringbuf::{PageLayout, PageReader};
use jitterlab_trace::stats::TraceStats;
use jitterlab_trace::text::{self, TextKind, TextOptions};
use jitterlab_trace::EventSource;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

const MB: usize = 1 << 20;
/// The budget: 64 MB on top of the input.
const BUDGET: usize = 64 * MB;
/// The largest input.
const BIG: usize = 16 * MB;

/// Runs `f` and returns the peak of live heap bytes it added.
fn peak_of(f: impl FnOnce()) -> usize {
    ALLOC.peak_of(f)
}

/// The bytes of a fixture under tests/data (`NAME.zst` decompressed when `NAME` is not there).
fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    if let Ok(b) = std::fs::read(dir.join(name)) {
        return b;
    }
    let z = std::fs::read(dir.join(format!("{name}.zst"))).expect("fixture");
    zstd::decode_all(&z[..]).expect("fixture decompresses")
}

/// `unit` repeated (whole) up to `size` bytes.
fn repeat_to(unit: &[u8], size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(size);
    while v.len() + unit.len() <= size {
        v.extend_from_slice(unit);
    }
    v
}

/// `size` bytes of lines made by `line` from 0, 1, 2, ... (whole lines only).
fn dense(size: usize, line: impl Fn(usize) -> String) -> Vec<u8> {
    let mut v = Vec::with_capacity(size);
    for i in 0.. {
        let l = line(i);
        if v.len() + l.len() > size {
            break;
        }
        v.extend_from_slice(l.as_bytes());
    }
    v
}

/// Parses a .dat, reads every event of every buffer, counts them (in parallel) and
/// makes its stats; stops at the first error.
fn read_dat(bytes: &[u8]) -> Result<u64, jitterlab_trace::Error> {
    let dat = DatFile::parse_with("memory.dat", bytes, DatOptions { lenient: true })?;
    // What a reader of the events may ask for besides them (`report` asks for them all).
    dat.kallsyms();
    dat.printk_formats();
    dat.cmdlines();
    let mut n = 0;
    for b in 0..dat.buffers().len() {
        let mut src = dat.events(b)?;
        while src.next_event()?.is_some() {
            n += 1;
        }
        drop(src);
        dat.count_events(b)?;
    }
    TraceStats::from_dat("memory.dat", &dat)?;
    Ok(n)
}

/// Reads `bytes` as text of `kind` (lenient) to the end through [`TraceStats::count`].
fn read_text(bytes: &[u8], kind: TextKind) -> Result<u64, jitterlab_trace::Error> {
    let options = TextOptions {
        lenient: true,
        ..TextOptions::named("memory.txt")
    };
    let mut src = text::open(bytes, kind, options)?;
    Ok(TraceStats::count("memory.txt", "text", &mut *src)?.total)
}

/// Every page of `bytes`, cut into pages of `page_size`, decoded to its last record.
fn read_pages(bytes: &[u8], page_size: usize) -> u64 {
    let layout = PageLayout::new(Endian::Little, 8, page_size);
    let mut n = 0;
    for page in bytes.chunks(page_size) {
        let Ok(mut r) = PageReader::new(&layout, page) else {
            continue;
        };
        while let Ok(Some(_)) = r.next_record() {
            n += 1;
        }
    }
    n
}

const KINDS: [TextKind; 4] = [
    TextKind::Ftrace,
    TextKind::TraceCmdReport,
    TextKind::FunctionGraph,
    TextKind::PerfScript,
];

/// cyclictest-idle.v6.dat with `edits` (offset, little-endian value, width).
fn dat_variant(base: &[u8], edits: &[(usize, u64, usize)]) -> Vec<u8> {
    let mut v = base.to_vec();
    for &(at, value, width) in edits {
        v[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
    }
    v
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

struct Case {
    name: String,
    size: usize,
    peak: usize,
    outcome: String,
}

fn run(cases: &mut Vec<Case>, name: &str, input: &[u8], f: impl FnOnce(&[u8]) -> String) {
    let mut outcome = String::new();
    let peak = peak_of(|| outcome = f(input));
    cases.push(Case {
        name: name.to_string(),
        size: input.len(),
        peak,
        outcome,
    });
}

fn outcome<T: std::fmt::Display>(r: Result<T, jitterlab_trace::Error>) -> String {
    match r {
        Ok(n) => format!("{n} events"),
        Err(e) => {
            let s = e.to_string();
            format!("error: {}", &s[..s.len().min(70)])
        }
    }
}

#[test]
fn no_reader_allocates_64_mb_for_an_input_under_16_mb() {
    let start = Instant::now();
    let mut cases = Vec::new();

    // .dat: a real v6 file (7.7 MB) and a v7 zstd one, whole.
    let v6 = fixture("cyclictest-idle.v6.dat");
    run(&mut cases, "dat v6 cyclictest-idle", &v6, |b| {
        outcome(read_dat(b))
    });
    let v7 = fixture("disk-irq-stress.v7.dat");
    run(&mut cases, "dat v7 zstd disk-irq-stress", &v7, |b| {
        outcome(read_dat(b))
    });
    let inst = fixture("instances.v7zlib.dat");
    run(&mut cases, "dat v7 zlib instances", &inst, |b| {
        outcome(read_dat(b))
    });
    // Hostile headers: the page size (offset 14), the CPU count (before the top
    // options), an option's size, the CPU data table (see tests/dat/layout.rs).
    let top = v6
        .windows(10)
        .enumerate()
        .filter(|(i, w)| *w == b"options  \0" && *i < 7_462_912)
        .map(|(i, _)| i)
        .next_back()
        .expect("top options");
    let cpu0 = find(&v6, &7_462_912u64.to_le_bytes()); // CPU 0's table entry
    for (name, edits) in [
        ("dat page size 2^31", vec![(14, 1u64 << 31, 4)]),
        ("dat page size 2^32-1", vec![(14, u32::MAX as u64, 4)]),
        ("dat 2^32-1 CPUs", vec![(top - 4, u32::MAX as u64, 4)]),
        ("dat 65536 CPUs", vec![(top - 4, 65536, 4)]),
        (
            "dat option size 2^32-1",
            vec![(top + 12, u32::MAX as u64, 4)],
        ),
        ("dat CPU data size 2^63", vec![(cpu0 + 8, 1 << 63, 8)]),
        ("dat CPU data offset 2^63", vec![(cpu0, 1 << 63, 8)]),
        ("dat header_page size 2^63", vec![(18 + 12, 1 << 63, 8)]),
    ] {
        let v = dat_variant(&v6, &edits);
        run(&mut cases, name, &v, |b| outcome(read_dat(b)));
    }
    // The v6 file's header then 16 MB of noise; and the whole v6 file with its CPU 1
    // data (the last in the file) extended to 16 MB by noise.
    let mut noisy = v6[..top + 10].to_vec();
    noisy.extend(noise(BIG - noisy.len(), 1));
    run(&mut cases, "dat header + noise", &noisy, |b| {
        outcome(read_dat(b))
    });
    let cpu1 = find(&v6, &7_499_776u64.to_le_bytes());
    let mut long = v6.clone();
    long.extend(noise(BIG - v6.len(), 2));
    let grown = (BIG - 7_499_776) / 4096 * 4096;
    long[cpu1 + 8..cpu1 + 16].copy_from_slice(&(grown as u64).to_le_bytes());
    run(&mut cases, "dat CPU 1 data of 8 MB noise", &long, |b| {
        outcome(read_dat(b))
    });
    drop((v6, v7, inst, noisy, long));

    // v7 (zstd) files whose size words ask for more than the reader may hold
    // (tests/dat/bombs.rs: the compressed sizes unchanged, the rest of a bomb's payload
    // a skippable frame). Fixed (issue 13): the reader allocated what a chunk claimed,
    // up to 256 MiB, and what a section claimed, up to 4 GiB, and kept kallsyms three
    // times: the first five cases took 278, 389, 95, 92 and 84 MB. Now a chunk inflates
    // to at most ten pages (what trace-cmd writes), the chunks held at once to 24 MiB
    // (the time-ordered merge holds one per CPU), the compressed sections to 32 MiB in
    // all, each checked before anything is allocated (the errors: tests/dat/limits.rs),
    // and kallsyms is kept once, shared with its table.
    let v7 = fixture("disk-irq-stress.v7.dat");
    // CPU 0's first chunk (4471 compressed bytes; a 128 MiB bomb takes about 4 KiB).
    let (chunk, _) = bombs::chunk_bomb(&v7, 128 << 20);
    run(
        &mut cases,
        "dat v7 chunk inflating to 128 MiB",
        &chunk,
        |b| outcome(read_dat(b)),
    );
    // The kallsyms section: 128 MiB, and all that 32 MiB leave it (zeros).
    let section = bombs::kallsyms_bomb(&v7, 128 << 20);
    run(
        &mut cases,
        "dat v7 kallsyms inflating to 128 MiB",
        &section,
        |b| outcome(read_dat(b)),
    );
    let section = bombs::kallsyms_bomb(&v7, (32 << 20) - 2_025_049 - 4320 - 14765);
    run(
        &mut cases,
        "dat v7 kallsyms of 30 MiB zeros",
        &section,
        |b| outcome(read_dat(b)),
    );
    // A real kallsyms five times over (27 MB; its 121,899 addresses five times).
    let dat = DatFile::parse("v7", &v7).unwrap();
    let kallsyms = dat.kallsyms_text().repeat(5);
    drop(dat);
    let section = bombs::with_kallsyms(&v7, kallsyms);
    run(
        &mut cases,
        "dat v7 kallsyms of 27 MB, real",
        &section,
        |b| outcome(read_dat(b)),
    );
    // 2000 CPUs of a 40 KiB chunk each (80 MiB, if every CPU held its chunk).
    let many = bombs::many_cpus(&v7, 2000);
    run(
        &mut cases,
        "dat v7 2000 CPUs of 40 KiB chunks",
        &many,
        |b| outcome(read_dat(b)),
    );
    drop((v7, chunk, section, many));

    // Dense hostile kallsyms, printk formats and cmdlines: short lines (`1 t a`, each a
    // symbol; formats and pids of their own), as much as a v7 file's sections may
    // inflate to (its other texts left empty) and some 14 MB in a v6 file. Fixed (issue
    // 13): their tables grew with the lines, 16 bytes a symbol, a String per printk
    // format, a map entry per pid (v7: 179, 227 and 185 MB; v6: 86, 101 and 80 MB). Now a
    // file listing more than 2^20 symbols, 2^16 formats or 2^16 task names is refused
    // when opened (the errors: tests/dat/limits.rs), a symbol takes 12 bytes and the
    // formats stay in their text.
    let v7 = fixture("disk-irq-stress.v7.dat");
    let inst = fixture("instances.v6.dat");
    // The sections of disk-irq-stress.v7.dat other than those three inflate to
    // 2025049 bytes; each of the three has its size word (8 bytes for cmdlines).
    let left = (32 << 20) - 2_025_049 - 4 - 4 - 8;
    // instances.v6.dat (2.1 MB) with a text of the rest of 16 MB.
    let v6_text = BIG - inst.len() - 4096;
    type Field = fn(&mut DatMeta) -> &mut Vec<u8>;
    type Line = fn(usize) -> String;
    let texts: [(&str, Field, Line); 3] = [
        ("kallsyms", |m| &mut m.kallsyms, |_| "1 t a\n".to_string()),
        ("printk", |m| &mut m.printk, |i| format!("{i:x}:a\n")),
        ("cmdlines", |m| &mut m.cmdlines, |i| format!("{i} a\n")),
    ];
    for (what, field, line) in texts {
        let v = bombs::rewritten(&v7, true, |m| {
            m.kallsyms.clear();
            m.printk.clear();
            m.cmdlines.clear();
            *field(m) = dense(left, line);
        });
        run(
            &mut cases,
            &format!("dat v7 dense {what} of 30 MiB"),
            &v,
            |b| outcome(read_dat(b)),
        );
        let v = bombs::rewritten(&inst, false, |m| *field(m) = dense(v6_text, line));
        run(
            &mut cases,
            &format!("dat v6 dense {what} of 14 MB"),
            &v,
            |b| outcome(read_dat(b)),
        );
    }
    // jitterlab's thread groups option: 14 MB of `PID TGID` lines (refused past 2^20
    // entries), and 2^20 of them (read: 8 bytes each, and the map `tgids()` makes).
    let v = bombs::rewritten(&inst, false, |m| {
        m.tgids = dense(v6_text, |i| format!("{} 1\n", i % 100_000))
    });
    run(&mut cases, "dat v6 dense thread groups of 14 MB", &v, |b| {
        outcome(read_dat(b))
    });
    let v = bombs::rewritten(&inst, false, |m| {
        m.tgids = (0..1usize << 20)
            .flat_map(|i| format!("{} {}\n", i + 1, i / 4 + 1).into_bytes())
            .collect()
    });
    run(&mut cases, "dat v6 2^20 thread groups", &v, |b| {
        // The map `Trace::tgids` makes of them, as analyze does.
        outcome(DatFile::parse("memory.dat", b).map(|d| {
            let map: std::collections::HashMap<i32, i32> = d.info().tgids.iter().copied().collect();
            map.len()
        }))
    });
    // The most each may list, as long as the sections allow: 2^20 symbols of their own
    // addresses (10 MiB), 2^16 formats and task names of some 480 bytes each (30 MiB).
    let long = |i: usize, at: &str| {
        let mut l = format!("{i}{at}");
        l.extend(std::iter::repeat_n("%d\\n", (left >> 16) / 4 - 4));
        l.push('\n');
        l
    };
    let at_limit: [(&str, Field, Vec<u8>); 3] = [
        (
            "2^20 kallsyms symbols",
            |m| &mut m.kallsyms,
            (0..1 << 20)
                .map(|i| format!("{:x} t a\n", i + 1))
                .collect::<String>()
                .into(),
        ),
        (
            "2^16 printk formats",
            |m| &mut m.printk,
            (0..1 << 16)
                .map(|i| long(i, ":"))
                .collect::<String>()
                .into(),
        ),
        (
            "2^16 cmdlines",
            |m| &mut m.cmdlines,
            (0..1 << 16)
                .map(|i| long(i, " "))
                .collect::<String>()
                .into(),
        ),
    ];
    for (what, field, text) in at_limit {
        assert!(text.len() <= left, "{what}");
        let v = bombs::rewritten(&v7, true, |m| {
            m.kallsyms.clear();
            m.printk.clear();
            m.cmdlines.clear();
            *field(m) = text;
        });
        run(&mut cases, &format!("dat v7 {what}"), &v, |b| {
            outcome(read_dat(b))
        });
    }
    drop((v7, inst));

    // Text: the captures repeated to 16 MB (the repeats go back in time: lenient mode
    // skips, or the reader stops at, what it cannot order).
    let ft = fixture("text/cyclictest-idle.ftrace.txt");
    let big = repeat_to(&ft, BIG);
    run(&mut cases, "ftrace capture repeated", &big, |b| {
        outcome(read_text(b, text::detect(b).unwrap()))
    });
    let rep = fixture("text/cyclictest-idle.report.txt");
    let big = repeat_to(&rep, BIG);
    run(&mut cases, "report capture repeated", &big, |b| {
        outcome(read_text(b, text::detect(b).unwrap()))
    });
    let fg = fixture("text/fgraph-ehci-softirq.txt");
    let big = repeat_to(&fg, 4 * MB);
    run(&mut cases, "function_graph repeated", &big, |b| {
        outcome(read_text(b, text::detect(b).unwrap()))
    });
    let perf = fixture("perf/sleep-loop.perf.txt");
    let big = repeat_to(&perf, BIG);
    run(&mut cases, "perf script repeated", &big, |b| {
        outcome(read_text(b, text::detect(b).unwrap()))
    });
    // One valid event line, 16 MB of it (one timestamp: all in order).
    let line = ft
        .split(|b| *b == b'\n')
        .find(|l| l.contains(&b'[') && !l.starts_with(b"#"))
        .unwrap();
    let mut unit = line.to_vec();
    unit.push(b'\n');
    let big = repeat_to(&unit, BIG);
    run(&mut cases, "one ftrace line repeated", &big, |b| {
        outcome(read_text(b, TextKind::Ftrace))
    });
    // 100,000 CPU numbers, each on a line of its own (the largest allowed and past it).
    let mut cpus = Vec::new();
    for i in 0..100_000u32 {
        cpus.extend_from_slice(
            format!("          <idle>-0     [{i}] d..2. 100.{i:06}: sched_switch: prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120\n").as_bytes(),
        );
    }
    for kind in [TextKind::Ftrace, TextKind::TraceCmdReport] {
        run(
            &mut cases,
            &format!("100,000 CPUs as {kind:?}"),
            &cpus,
            |b| outcome(read_text(b, kind)),
        );
    }
    let mut cpus = Vec::new();
    for i in 0..100_000u32 {
        cpus.extend_from_slice(
            format!("            perf 24694 [{i:03}] 10345.{i:06}: sched:sched_stat_runtime: comm=perf pid=24694 runtime=38368 [ns]\n").as_bytes(),
        );
    }
    run(&mut cases, "100,000 CPUs as PerfScript", &cpus, |b| {
        outcome(read_text(b, TextKind::PerfScript))
    });
    let mut cpus = b"# tracer: function_graph\n#\n".to_vec();
    for i in 0..100_000u32 {
        cpus.extend_from_slice(format!(" {i})   0.{i:03} us    |  do_{i}();\n").as_bytes());
    }
    run(&mut cases, "100,000 CPUs as FunctionGraph", &cpus, |b| {
        outcome(read_text(b, TextKind::FunctionGraph))
    });
    let mut lost = Vec::new();
    for i in 0..100_000u32 {
        lost.extend_from_slice(format!("CPU:{i} [LOST 5 EVENTS]\n").as_bytes());
    }
    for kind in KINDS {
        run(
            &mut cases,
            &format!("100,000 lost lines as {kind:?}"),
            &lost,
            |b| outcome(read_text(b, kind)),
        );
    }
    // One 16 MB line: a valid event whose comm and field run on; and bare bytes.
    let mut one = line.to_vec();
    one.resize(BIG, b'x');
    for kind in KINDS {
        run(
            &mut cases,
            &format!("one 16 MB line as {kind:?}"),
            &one,
            |b| outcome(read_text(b, kind)),
        );
    }
    // Noise, as each format: bytes, and printable text (lines of 0 to 255 bytes, of
    // the characters the formats use).
    let bytes = noise(BIG, 3);
    for kind in KINDS {
        run(
            &mut cases,
            &format!("16 MB noise as {kind:?}"),
            &bytes,
            |b| outcome(read_text(b, kind)),
        );
    }
    let alphabet = b" -[]():|=>.0123456789abcdefx_\t{}";
    let mut printable: Vec<u8> = noise(BIG, 5)
        .iter()
        .map(|b| alphabet[*b as usize % alphabet.len()])
        .collect();
    let mut i = 0;
    for r in noise(BIG / 128, 6) {
        i += r as usize;
        if i >= printable.len() {
            break;
        }
        printable[i] = b'\n';
    }
    for kind in KINDS {
        run(
            &mut cases,
            &format!("16 MB printable noise as {kind:?}"),
            &printable,
            |b| outcome(read_text(b, kind)),
        );
    }
    drop((big, one, bytes, printable, cpus, lost));

    // Ring-buffer pages: 16 MB of noise as 4 KiB pages, and as one 16 MB page.
    let pages = noise(BIG, 4);
    run(&mut cases, "ringbuf noise, 4 KiB pages", &pages, |b| {
        format!("{} records", read_pages(b, 4096))
    });
    run(&mut cases, "ringbuf noise, one 16 MB page", &pages, |b| {
        format!("{} records", read_pages(b, BIG))
    });

    let mut over = Vec::new();
    for c in &cases {
        println!(
            "{:>40}  {:>9} bytes  peak {:>6.1} MB  {}",
            c.name,
            c.size,
            c.peak as f64 / MB as f64,
            c.outcome
        );
        if c.peak > BUDGET {
            over.push(format!(
                "{} ({} bytes): peak {} bytes",
                c.name, c.size, c.peak
            ));
        }
    }
    println!("{} cases in {:?}", cases.len(), start.elapsed());
    assert!(over.is_empty(), "over 64 MB: {over:#?}");
}
