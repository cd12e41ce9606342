//! Small synthetic traces built page by page: both byte orders, time extends, padding,
//! long records, stored and unstored loss counts. They also seed the fuzzer:
//! `JITTERLAB_WRITE_SEEDS=fuzz/seeds/dat cargo test -p jitterlab-trace --test dat synth`.

use jitterlab_trace::dat::{DatFile, DatMeta, DatWriter, Spool};
use jitterlab_trace::{EventKind, EventSource};

use crate::util::*;

const PAGE: usize = 256;

struct Page {
    big: bool,
    base: u64,
    last: u64,
    body: Vec<u8>,
}

impl Page {
    fn new(big: bool, base: u64) -> Page {
        Page {
            big,
            base,
            last: base,
            body: Vec::new(),
        }
    }

    fn word(&mut self, type_len: u32, delta: u32) {
        let w = if self.big {
            (type_len << 27) | delta
        } else {
            (delta << 5) | type_len
        };
        self.u32(w);
    }

    fn u32(&mut self, v: u32) {
        self.body.extend_from_slice(&if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }

    fn record(&mut self, ts: u64, payload: &[u8]) {
        let mut delta = ts - self.last;
        if delta >= 1 << 27 {
            self.word(30, (delta & ((1 << 27) - 1)) as u32);
            self.u32((delta >> 27) as u32);
            delta = 0;
        }
        self.last = ts;
        let len = payload.len().div_ceil(4) * 4;
        if len <= 28 * 4 {
            self.word((len / 4) as u32, delta as u32);
        } else {
            self.word(0, delta as u32);
            self.u32(len as u32 + 4);
        }
        self.body.extend_from_slice(payload);
        self.body.resize(self.body.len() + len - payload.len(), 0);
    }

    fn padding(&mut self, bytes: u32) {
        self.word(29, 1);
        self.u32(bytes);
        self.body.resize(self.body.len() + bytes as usize - 4, 0xee);
        self.last += 1;
    }

    fn finish(self, missed: Option<Option<u64>>) -> Vec<u8> {
        let mut p = Vec::new();
        let n8 = |v: u64| {
            if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        p.extend_from_slice(&n8(self.base));
        let mut commit = self.body.len() as u64;
        match missed {
            Some(Some(_)) => commit |= 3 << 30,
            Some(None) => commit |= 1 << 31,
            None => {}
        }
        p.extend_from_slice(&n8(commit));
        p.extend_from_slice(&self.body);
        if let Some(Some(n)) = missed {
            p.extend_from_slice(&n8(n));
        }
        assert!(p.len() <= PAGE);
        p.resize(PAGE, 0);
        p
    }
}

/// A record of event `id` by `pid` with `fields` after the 8 common bytes.
fn payload(big: bool, id: u16, pid: i32, fields: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&if big {
        id.to_be_bytes()
    } else {
        id.to_le_bytes()
    });
    v.extend_from_slice(&[0x09, 0x01]); // irqs off + hardirq; preempt depth 1
    v.extend_from_slice(&if big {
        pid.to_be_bytes()
    } else {
        pid.to_le_bytes()
    });
    v.extend_from_slice(fields);
    v
}

fn format(name: &str) -> Vec<u8> {
    let dat = open("cyclictest-idle.v7.dat");
    let (_, text) = dat
        .format_files()
        .iter()
        .find(|(_, t)| String::from_utf8_lossy(t).starts_with(&format!("name: {name}\n")))
        .expect("format in fixture");
    text.clone()
}

fn id_of(text: &[u8]) -> u16 {
    let t = String::from_utf8_lossy(text);
    t.lines()
        .find_map(|l| l.strip_prefix("ID: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A two-CPU trace of `big`-endian pages; returns the file bytes.
fn synth(big: bool) -> Vec<u8> {
    let irq_fmt = format("irq_handler_entry");
    let print = b"name: print\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\nprint fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n".to_vec();
    let n32 = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let n64 = |v: u64| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    // irq_handler_entry: int irq @8; __data_loc char[] name @12 (offset 16, length 6).
    let irq_rec = |irq: u32, pid| {
        let mut f = n32(irq).to_vec();
        f.extend_from_slice(&n32((6 << 16) | 16));
        f.extend_from_slice(b"timer\0");
        payload(big, id_of(&irq_fmt), pid, &f)
    };
    let print_rec = |text: &str| {
        let mut f = n64(0xffffffff81000010).to_vec();
        f.extend_from_slice(text.as_bytes());
        f.push(0);
        payload(big, 5, 7, &f)
    };
    let meta = DatMeta {
        big_endian: big,
        long_size: 8,
        page_size: PAGE as u32,
        cpus: 2,
        header_page: format!(
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:{};\tsigned:0;\n",
            PAGE - 16
        )
        .into_bytes(),
        header_event: b"# compressed entry header\n\ttype_len    :    5 bits\n".to_vec(),
        ftrace_formats: vec![print],
        event_formats: vec![("irq".into(), vec![irq_fmt.clone()])],
        kallsyms: b"ffffffff81000000 T _stext\nffffffff81000100 T later\n".to_vec(),
        cmdlines: b"7 writer\n".to_vec(),
        tgids: b"7 7\n8 7\n".to_vec(),
        trace_clock: Some("[mono] local".into()),
        ..DatMeta::default()
    };
    let mut w = DatWriter::new(meta, Spool::Memory).unwrap();
    // CPU 0: two records, a time extend, padding, a long record; then a page after a
    // loss of 5 (count stored).
    let mut p = Page::new(big, 1_000);
    p.record(1_000, &irq_rec(19, 100));
    p.record(1_000 + (3 << 27) + 17, &irq_rec(20, 101));
    p.padding(12);
    p.record(1_000 + (3 << 27) + 40, &print_rec(&"x".repeat(130)));
    w.write_pages(0, 0, &p.finish(None)).unwrap();
    let mut p = Page::new(big, 9_000_000_000);
    p.record(9_000_000_005, &print_rec("after loss\n"));
    w.write_pages(0, 0, &p.finish(Some(Some(5)))).unwrap();
    // CPU 1: a loss without a count, then one record.
    let mut p = Page::new(big, 2_000);
    p.record(2_500, &irq_rec(21, 0));
    w.write_pages(0, 1, &p.finish(Some(None))).unwrap();
    let mut out = Vec::new();
    w.finish(&mut out).unwrap();
    out
}

#[test]
fn synthetic_pages_in_both_byte_orders() {
    for big in [false, true] {
        let bytes = synth(big);
        let dat = DatFile::parse("synth", &bytes).unwrap();
        assert_eq!(dat.info().big_endian, big);
        assert_eq!(dat.info().clock.as_deref(), Some("mono"));
        let mut src = dat.events(0).unwrap();
        let mut got = Vec::new();
        while let Some(e) = src.next_event().unwrap() {
            got.push(e);
        }
        assert_eq!(src.stats().lost, vec![Some(5), None], "big={big}");
        let summary: Vec<(u64, u32, String)> = got
            .iter()
            .map(|e| (e.ts, e.cpu, e.kind.name().to_string()))
            .collect();
        let ext = 1_000 + (3 << 27);
        assert_eq!(
            summary,
            [
                (1_000, 0, "irq_handler_entry".to_string()),
                (2_500, 1, "lost".into()),
                (2_500, 1, "irq_handler_entry".into()),
                (ext + 17, 0, "irq_handler_entry".into()),
                (ext + 40, 0, "print".into()),
                (9_000_000_005, 0, "lost".into()),
                (9_000_000_005, 0, "print".into()),
            ],
            "big={big}"
        );
        assert_eq!(
            got[0].kind,
            EventKind::IrqHandlerEntry {
                irq: 19,
                name: "timer".into()
            }
        );
        assert_eq!(
            (got[0].pid, got[0].flags.0, got[0].preempt_count),
            (100, 0x09, 1)
        );
        assert_eq!(got[1].kind, EventKind::Lost { count: None });
        // A loss carries the time and task of the record after it.
        assert_eq!((got[1].pid, got[5].pid), (0, 7));
        assert_eq!(
            got[4].kind,
            EventKind::Print {
                ip: 0xffffffff81000010,
                text: "x".repeat(130).into()
            }
        );
        assert_eq!(got[5].kind, EventKind::Lost { count: Some(5) });
        assert_eq!(
            got[6].kind,
            EventKind::Print {
                ip: 0xffffffff81000010,
                text: "after loss".into()
            }
        );
        let c = dat.count_events(0).unwrap();
        assert_eq!(
            (c.total, c.first_ts, c.last_ts),
            (5, Some(1_000), Some(9_000_000_005))
        );
        assert_eq!(c.per_cpu[0].lost, Some(5));
        assert_eq!(c.per_cpu[1].lost, None);
        assert_eq!(dat.cmdlines().get(&7).map(|c| c.as_str()), Some("writer"));
        // jitterlab's saved-tgids option, and kept by a copy to the other version.
        assert_eq!(dat.info().tgids, vec![(7, 7), (8, 7)]);
        let mut copy = Vec::new();
        let mut w = DatWriter::new_v7(
            DatMeta::from_dat(&dat),
            Spool::Memory,
            jitterlab_trace::dat::Compression::Zstd,
        )
        .unwrap();
        w.add_buffer("").unwrap();
        w.finish(&mut copy).unwrap();
        let copied = DatFile::parse("copy", &copy).unwrap();
        assert_eq!(copied.info().tgids, vec![(7, 7), (8, 7)]);
        if let Ok(dir) = std::env::var("JITTERLAB_WRITE_SEEDS") {
            let name = if big { "synth-be.dat" } else { "synth-le.dat" };
            std::fs::write(std::path::Path::new(&dir).join(name), &bytes).unwrap();
        }
    }
}

#[test]
fn trace_cmd_converts_the_synthetic_trace_to_v7_and_it_reads_the_same() {
    // synth-le.v7.dat: `trace-cmd convert --file-version 7 --compression zstd` of the file
    // `synth(false)` writes (see tests/data/README.md). (trace-cmd 3.1.6 writes big-endian
    // v7 files it cannot read back itself: option sizes in host order.)
    let v6 = synth(false);
    let v6 = DatFile::parse("v6", &v6).unwrap();
    let v7 = open("synth-le.v7.dat");
    assert!(!v7.info().big_endian);
    assert_eq!(v7.meta().format, "trace-cmd .dat v7 (zstd)");
    assert_eq!(all_events(&v7, 0), all_events(&v6, 0));
}
