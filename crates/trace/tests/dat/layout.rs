//! Issue 13's .dat reproducers: the layout of the CPU data is checked (page size, page
//! alignment, whole pages, ranges apart), bytes no range covers are a warning, and every
//! buffer of a multi-buffer file is counted and can be chosen.

use jitterlab_trace::dat::{DatFile, DatOptions};
use jitterlab_trace::stats::TraceStats;
use jitterlab_trace::{ErrorKind, Location};

use crate::util::*;

/// cyclictest-idle.v6.dat with `edits` (offset, little-endian u32 or u64 value), as
/// ../shared/repro/make-dat-variants.py makes its variants.
fn variant(edits: &[(usize, u64, usize)]) -> Vec<u8> {
    let mut v = fixture("cyclictest-idle.v6.dat");
    for &(at, value, width) in edits {
        v[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
    }
    v
}

/// The CPU table of cyclictest-idle.v6.dat: CPU 0 at 7462912 (36864 bytes), CPU 1 at
/// 7499776 (258048 bytes), the entries at 7459020 and 7459036.
const CPU0_ENTRY: usize = 7459020;
const CPU1_ENTRY: usize = 7459036;

fn parse_err(bytes: &[u8]) -> jitterlab_trace::Error {
    match DatFile::parse("v.dat", bytes) {
        Err(e) => e,
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn the_committed_files_have_no_layout_warning() {
    for file in [
        "cyclictest-idle.v7.dat",
        "cyclictest-idle.v6.dat",
        "disk-irq-stress.v7.dat",
        "disk-irq-stress.v6.dat",
        "exits.v6.dat",
        "instances.v7.dat",
        "instances.v6.dat",
        "instances.v7none.dat",
        "instances.v7zlib.dat",
        "synth-le.v7.dat",
    ] {
        let dat = open(file);
        assert!(dat.warnings().is_empty(), "{file}: {:?}", dat.warnings());
    }
}

#[test]
fn a_page_size_the_header_page_contradicts_is_an_error() {
    // v6-pagesize-8192.dat: read as 8192-byte pages, half the events went unread.
    let e = parse_err(&variant(&[(14, 8192, 4)]));
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(14)),
        "{e}"
    );
    assert!(e.message.contains("page size of 4096"), "{e}");
    // Not a power of two.
    let e = parse_err(&variant(&[(14, 4097, 4)]));
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(14))
    );
}

#[test]
fn cpu_data_off_a_page_boundary_is_an_error_at_its_table_entry() {
    // v6-cpu0-offset-plus3.dat: no event of CPU 0 was read.
    let e = parse_err(&variant(&[(CPU0_ENTRY, 7462912 + 3, 8)]));
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(CPU0_ENTRY as u64)),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "v.dat: byte offset 7459020: expected CPU 0 data of buffer \"\" at a multiple of the \
         page size 4096, found offset 7462915"
    );
    // A size that is not whole pages: the error points at the size field.
    let e = parse_err(&variant(&[(CPU0_ENTRY + 8, 36864 - 100, 8)]));
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(CPU0_ENTRY as u64 + 8)),
        "{e}"
    );
}

#[test]
fn overlapping_cpu_ranges_are_an_error() {
    // CPU 1 starts inside CPU 0: its first pages would be read twice.
    let e = parse_err(&variant(&[(CPU1_ENTRY, 7462912 + 4096, 8)]));
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(CPU1_ENTRY as u64)),
        "{e}"
    );
    assert!(e.message.contains("overlapping"), "{e}");
    // CPU 0 inside the metadata (a page-aligned offset: the alignment check passes).
    let e = parse_err(&variant(&[(CPU0_ENTRY, 4096, 8)]));
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(CPU0_ENTRY as u64)),
        "{e}"
    );
    assert!(e.message.contains("after the CPU table"), "{e}");
    // Both CPUs at the same data.
    let e = parse_err(&variant(&[
        (CPU1_ENTRY, 7462912, 8),
        (CPU1_ENTRY + 8, 36864, 8),
    ]));
    assert_eq!(e.kind, ErrorKind::Corrupt, "{e}");
}

#[test]
fn bytes_no_range_covers_are_a_warning_naming_them() {
    // CPU 0 a page shorter: a page between the ranges that no CPU reads.
    let v = variant(&[(CPU0_ENTRY + 8, 36864 - 4096, 8)]);
    let dat = DatFile::parse("g.dat", &v).unwrap();
    let w = dat.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].location, Location::Offset(7462912 + 36864 - 4096));
    assert!(w[0].message.contains("4096 bytes"), "{}", w[0]);
    // CPU 1 a page shorter: data past the last range.
    let v = variant(&[(CPU1_ENTRY + 8, 258048 - 4096, 8)]);
    let dat = DatFile::parse("t.dat", &v).unwrap();
    let w = dat.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("past the last range"), "{}", w[0]);
    // A CPU count of 0: every byte of data is past the (absent) ranges.
    let mut v = fixture("cyclictest-idle.v6.dat");
    let dat = DatFile::parse("c.dat", &v).unwrap();
    let cpus_at = find(&v, b"options  \0") - 4;
    drop(dat);
    v[cpus_at..cpus_at + 4].copy_from_slice(&1u32.to_le_bytes());
    match DatFile::parse("c.dat", &v) {
        Err(e) => assert!(matches!(e.location, Location::Offset(_)), "{e}"),
        Ok(d) => assert!(!d.warnings().is_empty()),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .rposition(|w| w == needle)
        .expect("found")
}

#[test]
fn every_buffer_is_counted_and_one_is_chosen() {
    // ../shared/repro/multi-buffer.v7.dat is instances.v7.dat, byte for byte.
    let mut dat = open("instances.v7.dat");
    let summaries: Vec<(String, u64, Option<u64>)> = (0..dat.buffers().len())
        .map(|i| {
            let s = dat.summary(i).unwrap();
            (s.name, s.events, s.lost)
        })
        .collect();
    assert_eq!(
        summaries,
        [
            ("".to_string(), 7, Some(0)),
            ("jlab_small".to_string(), 404, Some(734 + 1309)),
            ("jlab_big".to_string(), 2056, Some(0)),
        ]
    );
    // `report --stats`: every buffer, added up and one by one.
    let stats = TraceStats::from_dat("i.dat", &dat).unwrap();
    assert_eq!(stats.total, 7 + 404 + 2056);
    let per_cpu: Vec<(u32, u64, Option<u64>)> = stats
        .per_cpu
        .iter()
        .map(|c| (c.cpu, c.events, c.lost))
        .collect();
    assert_eq!(
        per_cpu,
        [(0, 7 + 237 + 682, Some(734)), (1, 167 + 1374, Some(1309))]
    );
    let buffers: Vec<(&str, u64, Option<u64>)> = stats
        .buffers
        .iter()
        .map(|b| (b.name.as_str(), b.total, b.lost))
        .collect();
    assert_eq!(
        buffers,
        [
            ("", 7, Some(0)),
            ("jlab_small", 404, Some(2043)),
            ("jlab_big", 2056, Some(0))
        ]
    );
    // The default: the top buffer, since it holds events; the note names the others.
    let c = dat.choose_buffer(None).unwrap();
    assert_eq!((c.index, dat.chosen_buffer()), (0, 0));
    assert_eq!(
        c.note().unwrap(),
        "reading the top buffer (7 events); not read: buffer jlab_small (404 events, 2043 \
         lost), buffer jlab_big (2056 events) (choose with --buffer NAME; report --stats \
         counts every buffer)"
    );
    // By name: no note.
    let c = dat.choose_buffer(Some("jlab_big")).unwrap();
    assert_eq!((c.index, dat.chosen_buffer(), c.note()), (2, 2, None));
    assert_eq!(dat.choose_buffer(Some("top")).unwrap().index, 0);
    let e = dat.choose_buffer(Some("jlab")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("top, jlab_small, jlab_big"), "{e}");
    // A single-buffer file: nothing to say.
    let mut one = open("cyclictest-idle.v7.dat");
    let c = one.choose_buffer(None).unwrap();
    assert_eq!((c.index, c.note()), (0, None));
}

#[test]
fn without_events_in_the_top_buffer_the_fullest_buffer_is_read() {
    // instances.v6.dat with the top buffer's CPU 0 size set to 0: no event there. (Its
    // page is then in no range: a warning.)
    let mut v = fixture("instances.v6.dat");
    let top = DatFile::parse("x", &v).unwrap().buffers()[0].cpus[0].clone();
    let entry = find(&v, &top.offset.to_le_bytes());
    v[entry + 8..entry + 16].copy_from_slice(&0u64.to_le_bytes());
    let mut dat = DatFile::parse_with("e.dat", &v, DatOptions::default()).unwrap();
    assert_eq!(dat.warnings().len(), 1, "{:?}", dat.warnings());
    let c = dat.choose_buffer(None).unwrap();
    assert_eq!(dat.buffers()[c.index].name, "jlab_big", "{c:?}");
    assert_eq!(c.read.as_ref().unwrap().events, 2056);
    assert!(c.note().unwrap().starts_with("reading buffer jlab_big (2056 events); not read: the top buffer (0 events), buffer jlab_small (404 events, 2043 lost)"));
}
