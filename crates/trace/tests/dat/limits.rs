//! Issue 13: what a version 7 file says its compressed data inflates to is bounded before
//! anything is allocated for it. A CPU data chunk inflates to at most ten pages (what
//! trace-cmd writes), the chunks the readers hold at once to at most 24 MiB, the
//! compressed sections of a file to at most 32 MiB in all; past a bound, an error names
//! the byte offset and the bound (lenient mode skips the chunk). The kallsyms, printk
//! formats and saved cmdlines list at most 2^20, 2^16 and 2^16 entries, in either version:
//! past that, an error names the section or the text's offset and the bound. The
//! committed traces read as they did before these bounds.

use jitterlab_trace::dat::{DatFile, DatMeta, DatOptions, MAX_CMDLINES, MAX_TGIDS};
use jitterlab_trace::decode::{MAX_PRINTK_FORMATS, MAX_SYMBOLS};
use jitterlab_trace::{Error, ErrorKind, EventSource, Location};

use crate::bombs::*;
use crate::util::*;

const LENIENT: DatOptions = DatOptions { lenient: true };

/// disk-irq-stress.v7.dat's records, and those left without CPU 0's first chunk.
const DISK_IRQ_EVENTS: u64 = 41636;
const WITHOUT_FIRST_CHUNK: u64 = 40813;

/// Buffer 0's events (loss markers included) and what lenient mode skipped, or the
/// first error.
fn read(dat: &DatFile) -> Result<(u64, u64), Error> {
    let mut src = dat.events(0)?;
    let mut n = 0;
    while src.next_event()?.is_some() {
        n += 1;
    }
    Ok((n, src.stats().skipped))
}

fn read_err(dat: &DatFile) -> Error {
    read(dat).expect_err("expected an error")
}

#[test]
fn the_committed_traces_give_the_same_counts() {
    // Per buffer: events read (loss markers included) and records counted; and the
    // kallsyms symbols.
    for (file, buffers, symbols) in [
        ("cyclictest-idle.v7.dat", &[(8324, 8324)][..], 121899),
        ("cyclictest-idle.v6.dat", &[(8324, 8324)], 121899),
        ("disk-irq-stress.v7.dat", &[(41636, 41636)], 121899),
        ("disk-irq-stress.v6.dat", &[(41636, 41636)], 121899),
        ("exits.v6.dat", &[(5520, 5520)], 121910),
        ("instances.v7.dat", &[(7, 7), (406, 404), (2056, 2056)], 0),
        ("instances.v6.dat", &[(7, 7), (406, 404), (2056, 2056)], 0),
        (
            "instances.v7none.dat",
            &[(7, 7), (406, 404), (2056, 2056)],
            0,
        ),
        (
            "instances.v7zlib.dat",
            &[(7, 7), (406, 404), (2056, 2056)],
            0,
        ),
        ("synth-le.v7.dat", &[(7, 5)], 2),
    ] {
        let dat = open(file);
        let mut found = Vec::new();
        for b in 0..dat.buffers().len() {
            let c = dat.count_events(b).unwrap();
            assert_eq!(c.skipped, 0, "{file}");
            found.push((all_events(&dat, b).len() as u64, c.total));
        }
        assert_eq!(found, buffers, "{file}");
        assert_eq!(dat.kallsyms().len(), symbols, "{file}");
    }
}

#[test]
fn a_chunk_inflating_past_ten_pages_is_an_error_at_its_offset() {
    let v7 = fixture("disk-irq-stress.v7.dat");
    // Ten pages of 4096 bytes: read (zeros, no record).
    let (at_limit, _) = chunk_bomb(&v7, 40960);
    let dat = DatFile::parse("c.dat", &at_limit).unwrap();
    assert_eq!(read(&dat).unwrap(), (WITHOUT_FIRST_CHUNK, 0));
    // A byte more is refused, whatever the count; 128 MiB allocated nothing.
    for size in [40961, 128 << 20] {
        let (bomb, at) = chunk_bomb(&v7, size);
        let dat = DatFile::parse("c.dat", &bomb).unwrap();
        let expected = format!(
            "c.dat: byte offset {at}: expected a compressed chunk inflating to at most 40960 bytes (10 pages of 4096 bytes, as trace-cmd writes them), found one claiming {size} bytes and inflating past that"
        );
        let e = read_err(&dat);
        assert_eq!(
            (e.kind, e.location),
            (ErrorKind::Limit, Location::Offset(at as u64))
        );
        assert_eq!(e.to_string(), expected);
        let e = dat.count_events(0).expect_err("counting too");
        assert_eq!(e.to_string(), expected);
        // Lenient mode skips that chunk only.
        let dat = DatFile::parse_with("c.dat", &bomb, LENIENT).unwrap();
        assert_eq!(read(&dat).unwrap(), (WITHOUT_FIRST_CHUNK, 1));
        let c = dat.count_events(0).unwrap();
        assert_eq!((c.total, c.skipped), (WITHOUT_FIRST_CHUNK, 1));
    }
    // A size word past the limit over data that inflates to less is corrupt data, as a
    // wrong size within the limit is.
    let (_, at) = chunk_bomb(&v7, 40960);
    let mut v = v7.clone();
    v[at + 4..at + 8].copy_from_slice(&(1u32 << 20).to_le_bytes());
    let e = read_err(&DatFile::parse("c.dat", &v).unwrap());
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Decompress, Location::Offset(at as u64))
    );
    assert!(
        e.message
            .ends_with("expected 1048576 bytes after decompression, found 40960"),
        "{e}"
    );
}

#[test]
fn a_section_inflating_past_32_mib_in_all_is_an_error_naming_it() {
    let v7 = fixture("disk-irq-stress.v7.dat");
    // The sections before kallsyms (header info, ftrace and event formats) inflate to
    // 2025049 bytes, those after it (printk formats, cmdlines) to 4320 and 14765: a
    // kallsyms of the rest of 32 MiB is read.
    let left = (32 << 20) - 2_025_049;
    let rest = left - 4320 - 14765;
    let at_limit = kallsyms_bomb(&v7, rest);
    let dat = DatFile::parse("k.dat", &at_limit).unwrap();
    assert_eq!(dat.kallsyms_text().len(), rest - 4);
    assert_eq!(dat.kallsyms().len(), 0);
    assert_eq!(read(&dat).unwrap(), (DISK_IRQ_EVENTS, 0));
    // A real kallsyms five times over (27 MB, more than a big kernel's) reads.
    let big = with_kallsyms(
        &v7,
        open("disk-irq-stress.v7.dat").kallsyms_text().repeat(5),
    );
    let dat = DatFile::parse("k.dat", &big).unwrap();
    assert_eq!(dat.kallsyms_text().len(), 5 * 5_414_658);
    assert_eq!(dat.kallsyms().len(), 121899);
    assert_eq!(read(&dat).unwrap(), (DISK_IRQ_EVENTS, 0));
    // A byte more, and the last section (cmdlines) is past the limit.
    let e = DatFile::parse("k.dat", &kallsyms_bomb(&v7, rest + 1))
        .err()
        .expect("cmdlines past the limit");
    assert_eq!(e.to_string(), "k.dat: byte offset 1138290: expected the compressed sections to inflate to at most 33554432 bytes in all (14764 bytes left for this one), found section 21 (cmdlines) claiming 14765 bytes and inflating past that");
    // kallsyms itself past the limit, by a byte or by far.
    for size in [left + 1, 128 << 20] {
        let bomb = kallsyms_bomb(&v7, size);
        for options in [DatOptions::default(), LENIENT] {
            let e = DatFile::parse_with("k.dat", &bomb, options)
                .err()
                .expect("kallsyms past the limit");
            assert_eq!(
                (e.kind, e.location),
                (ErrorKind::Limit, Location::Offset(KALLSYMS_AT as u64))
            );
            assert_eq!(
                e.to_string(),
                format!("k.dat: byte offset 124459: expected the compressed sections to inflate to at most 33554432 bytes in all ({left} bytes left for this one), found section 19 (kallsyms) claiming {size} bytes and inflating past that")
            );
        }
    }
    // A size word past the limit over the real kallsyms (5414662 bytes) is corrupt data,
    // located at the compressed bytes as before.
    let mut v = v7.clone();
    let at = KALLSYMS_AT;
    v[at + 20..at + 24].copy_from_slice(&(128u32 << 20).to_le_bytes());
    let e = DatFile::parse("k.dat", &v).err().expect("a wrong size");
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Decompress, Location::Offset(at as u64 + 24))
    );
    assert!(
        e.message
            .ends_with("expected 134217728 bytes after decompression, found 5414662"),
        "{e}"
    );
}

#[test]
fn more_cpus_than_the_chunks_held_at_once_allow_are_refused() {
    // 2000 CPUs of one 40 KiB chunk each: 614 fit in 24 MiB.
    let v7 = fixture("disk-irq-stress.v7.dat");
    let many = many_cpus(&v7, 2000);
    let dat = DatFile::parse("m.dat", &many).unwrap();
    let at = dat.buffers()[0].cpus[614].offset + 4;
    let e = read_err(&dat);
    assert_eq!(e.to_string(), format!("m.dat: byte offset {at}: expected the decompressed chunks held at once (one per CPU read) to fit in 25165824 bytes, found 25149440 bytes held and a chunk of 40960 more"));
    assert_eq!(e.kind, ErrorKind::Limit);
    // Counting holds a chunk per parallel task, not per CPU: it reads them all.
    let c = dat.count_events(0).unwrap();
    assert_eq!((c.total, c.per_cpu.len()), (2000 * 120, 2000));
    assert!(c.per_cpu.iter().all(|p| p.events == 120));
    // Lenient mode reads the CPUs that fit and skips the others' chunks.
    let dat = DatFile::parse_with("m.dat", &many, LENIENT).unwrap();
    assert_eq!(read(&dat).unwrap(), (614 * 120, 2000 - 614));
}

/// The texts whose entries are bounded: their name in errors, their section id (v7),
/// what they list, their bound, and a line of each (`i` the entry's number).
type Entries = (
    &'static str,
    u16,
    &'static str,
    usize,
    fn(&mut DatMeta) -> &mut Vec<u8>,
    fn(usize) -> String,
);

const ENTRIES: [Entries; 3] = [
    (
        "kallsyms",
        19,
        "kallsyms symbols (a kernel lists some 100,000 to 300,000)",
        MAX_SYMBOLS,
        |m| &mut m.kallsyms,
        |i| format!("{:x} t a\n", i + 1),
    ),
    (
        "printk formats",
        20,
        "printk formats (a kernel lists some hundreds)",
        MAX_PRINTK_FORMATS,
        |m| &mut m.printk,
        |i| format!("{i:x}:a\n"),
    ),
    (
        "saved cmdlines",
        21,
        "saved cmdlines (the kernel keeps at most 32768)",
        MAX_CMDLINES,
        |m| &mut m.cmdlines,
        |i| format!("{i} a\n"),
    ),
];

/// `n` lines of `line`, and lines that are no entry between each 1000: one that does not
/// parse, an empty one and (kallsyms) a zero address.
fn entries(n: usize, line: fn(usize) -> String) -> Vec<u8> {
    let mut v = String::new();
    let zero = line(0).ends_with(" t a\n");
    for i in 0..n {
        if i % 1000 == 0 {
            v.push_str("junk\n\n");
            if zero {
                v.push_str("0000000000000000 T zero\n");
            }
        }
        v.push_str(&line(i));
    }
    v.into_bytes()
}

fn u32_at(b: &[u8], p: usize) -> usize {
    u32::from_le_bytes(b[p..p + 4].try_into().unwrap()) as usize
}

#[test]
fn kallsyms_printk_and_cmdlines_listing_too_many_entries_are_refused() {
    let v7 = fixture("disk-irq-stress.v7.dat");
    let v6 = fixture("instances.v6.dat");
    for (name, id, what, max, field, line) in ENTRIES {
        // At the bound: read, every entry kept.
        let at_limit = rewritten(&v7, true, |m| *field(m) = entries(max, line));
        let dat = DatFile::parse("e.dat", &at_limit).unwrap();
        let kept = match id {
            19 => dat.kallsyms().len(),
            20 => dat.printk_formats().len(),
            _ => dat.cmdlines().len(),
        };
        assert_eq!(kept, max, "{name}");
        assert_eq!(read(&dat).unwrap(), (DISK_IRQ_EVENTS, 0));
        // An entry more: an error at the section (v7) or the size word (v6), in lenient
        // mode too.
        let past = rewritten(&v7, true, |m| *field(m) = entries(max + 1, line));
        let past6 = rewritten(&v6, false, |m| *field(m) = entries(max + 1, line));
        for (file, version) in [(&past, 7), (&past6, 6)] {
            for options in [DatOptions::default(), LENIENT] {
                let e = DatFile::parse_with("e.dat", file, options)
                    .err()
                    .expect("past the bound");
                let Location::Offset(at) = e.location else {
                    panic!("{e}")
                };
                let at = at as usize;
                let place = if version == 7 {
                    // The section's header: its id, compressed.
                    assert_eq!(&file[at..at + 4], &[id as u8, 0, 1, 0], "{name}");
                    let section = ["kallsyms", "printk formats", "cmdlines"][id as usize - 19];
                    format!("section {id} ({section})")
                } else {
                    // The size word of the text.
                    assert_eq!(u32_at(file, at), entries(max + 1, line).len(), "{name}");
                    format!("the {name}")
                };
                assert_eq!(e.kind, ErrorKind::Limit);
                assert_eq!(
                    e.to_string(),
                    format!(
                        "e.dat: byte offset {at}: expected at most {max} {what}, found {} in {place}",
                        max + 1
                    )
                );
            }
        }
    }
}

#[test]
fn thread_groups_listing_too_many_entries_are_refused() {
    let v6 = fixture("instances.v6.dat");
    let tgids = |n: usize| {
        let mut v = String::new();
        for i in 0..n {
            v.push_str(&format!("{} {}\n", i + 1, i / 4 + 1));
        }
        v.into_bytes()
    };
    let at_limit = rewritten(&v6, false, |m| m.tgids = tgids(MAX_TGIDS));
    let dat = DatFile::parse("t.dat", &at_limit).unwrap();
    assert_eq!(dat.info().tgids.len(), MAX_TGIDS);
    let past = rewritten(&v6, false, |m| m.tgids = tgids(MAX_TGIDS + 1));
    for options in [DatOptions::default(), LENIENT] {
        let e = DatFile::parse_with("t.dat", &past, options)
            .err()
            .expect("past the bound");
        let Location::Offset(at) = e.location else {
            panic!("{e}")
        };
        assert_eq!(e.kind, ErrorKind::Limit);
        assert_eq!(
            e.to_string(),
            format!(
                "t.dat: byte offset {at}: expected at most {MAX_TGIDS} thread groups (one per task the recording saw), found {} in the thread groups option",
                MAX_TGIDS + 1
            )
        );
    }
}
