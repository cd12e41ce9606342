//! Bad input: truncated, corrupt and foreign files give located errors (or, lenient,
//! skipped counts), never a panic or a hang.

use jitterlab_trace::dat::{DatFile, DatOptions};
use jitterlab_trace::{Error, ErrorKind, EventSource, Location};

use crate::util::*;

const LENIENT: DatOptions = DatOptions { lenient: true };

/// Read every buffer to the end: the number of events, or the first error.
fn drain(dat: &DatFile) -> Result<(usize, u64), Error> {
    let (mut n, mut skipped) = (0, 0);
    for b in 0..dat.buffers().len() {
        let mut src = dat.events(b)?;
        while src.next_event()?.is_some() {
            n += 1;
        }
        skipped += src.stats().skipped;
    }
    Ok((n, skipped))
}

/// The length of the trace-cmd magic: a file cut shorter is not recognised as a .dat file.
const MAGIC_LEN: usize = 10;

/// The error names the file and a place in it (for a truncated file, possibly where the
/// missing data should have been, up to the full length `len`).
fn check_error(e: &Error, name: &str, len: usize) {
    assert_eq!(e.source_name, name);
    assert!(!e.message.is_empty());
    match e.location {
        Location::Offset(o) => assert!(o <= len as u64, "offset {o} beyond the file ({len}): {e}"),
        Location::Whole => {}
        Location::Line(_) => panic!("a binary reader reported a line: {e}"),
    }
}

/// Cut points: dense over the first 4 KiB and the last 64 KiB, spread over the rest.
fn cuts(len: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..4096.min(len)).step_by(7).collect();
    v.extend((0..len).step_by((len / 40).max(1)));
    v.extend((len.saturating_sub(65536)..len).step_by(2749));
    v.sort();
    v.dedup();
    v
}

#[test]
fn truncated_files_give_located_errors() {
    for file in [
        "instances.v7.dat",
        "instances.v6.dat",
        "instances.v7zlib.dat",
        "instances.v7none.dat",
    ] {
        let full = fixture(file);
        let (all, _) = drain(&DatFile::parse("x", &full).unwrap()).unwrap();
        let mut errors = 0;
        for cut in cuts(full.len()) {
            let bytes = &full[..cut];
            // Whatever structure the cut falls in, the file is reported as truncated.
            let want = if cut < MAGIC_LEN {
                ErrorKind::UnknownFormat
            } else {
                ErrorKind::Truncated
            };
            match DatFile::parse(file, bytes) {
                Err(e) => {
                    check_error(&e, file, full.len());
                    assert_eq!(e.kind, want, "{file} cut at {cut}: {e}");
                    errors += 1;
                }
                Ok(dat) => match drain(&dat) {
                    Err(e) => {
                        check_error(&e, file, full.len());
                        assert_eq!(e.kind, want, "{file} cut at {cut}: {e}");
                        errors += 1;
                        // Lenient mode reads what is there and counts what it skipped.
                        let dat = DatFile::parse_with(file, bytes, LENIENT).unwrap();
                        let (n, skipped) = drain(&dat).unwrap();
                        assert!(
                            n < all && skipped > 0,
                            "{file} cut at {cut}: {n} of {all}, {skipped} skipped"
                        );
                    }
                    Ok((n, _)) => assert!(n <= all),
                },
            }
        }
        assert!(errors > 50, "{file}: only {errors} truncations failed");
    }
}

#[test]
fn a_truncated_v6_file_names_the_missing_cpu_data() {
    let full = fixture("instances.v6.dat");
    let dat = DatFile::parse("t.dat", &full).unwrap();
    let last = dat
        .buffers()
        .iter()
        .flat_map(|b| &b.cpus)
        .max_by_key(|c| c.offset)
        .unwrap()
        .clone();
    let cut = (last.offset + 100) as usize;
    let e = match DatFile::parse("t.dat", &full[..cut]) {
        Err(e) => e,
        Ok(d) => drain(&d).unwrap_err(),
    };
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Truncated, Location::Offset(last.offset)),
        "{e}"
    );
    // What users read: the file, the offset, and what is missing there.
    assert!(
        e.to_string().starts_with(&format!(
            "t.dat: byte offset {}: expected CPU ",
            last.offset
        )),
        "{e}"
    );
    assert!(e.message.ends_with("(truncated?)"), "{e}");
}

#[test]
fn foreign_and_empty_files_are_refused() {
    let e = DatFile::parse("a.txt", b"hello world, not a trace")
        .err()
        .unwrap();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::UnknownFormat, Location::Offset(0)),
        "{e}"
    );
    let e = DatFile::parse("e.dat", b"").err().unwrap();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::UnknownFormat, Location::Whole),
        "{e}"
    );
    // Recognised, but a version or compression this reader does not read.
    let mut v = fixture("instances.v7.dat");
    v[10] = b'9';
    let e = DatFile::parse("v.dat", &v).err().unwrap();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Unsupported, Location::Offset(MAGIC_LEN as u64)),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "v.dat: byte offset 10: expected file version 6 or 7, found 9"
    );
    let mut v = fixture("instances.v7.dat");
    v[18..22].copy_from_slice(b"lz4\0");
    let e = DatFile::parse("c.dat", &v).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    // Not a number where the version is: corrupt, not unsupported.
    let mut v = fixture("instances.v7.dat");
    v[10] = b'x';
    let e = DatFile::parse("n.dat", &v).err().unwrap();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(MAGIC_LEN as u64)),
        "{e}"
    );
}

/// Byte offset of the first page of CPU `cpu` of the buffer `name` in a flat file.
fn page_at(dat: &DatFile, name: &str, cpu: usize) -> usize {
    let b = &dat.buffers()[dat.buffer_index(name).unwrap()];
    b.cpus[cpu].offset as usize
}

#[test]
fn a_corrupt_page_header_is_located_and_lenient_mode_skips_it() {
    let mut v = fixture("instances.v6.dat");
    let at = page_at(&DatFile::parse("x", &v).unwrap(), "jlab_big", 1);
    let (all, _) = drain(&DatFile::parse("x", &v).unwrap()).unwrap();
    // The commit word (offset 8): more data bytes than a page holds.
    v[at + 8..at + 16].copy_from_slice(&50_000u64.to_le_bytes());
    let e = drain(&DatFile::parse("p.dat", &v).unwrap()).unwrap_err();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(at as u64 + 8)),
        "{e}"
    );
    // The message says which CPU and which field.
    assert!(
        e.message.contains("commit") && e.message.contains("CPU 1"),
        "{e}"
    );
    let (n, skipped) = drain(&DatFile::parse_with("p.dat", &v, LENIENT).unwrap()).unwrap();
    assert_eq!(skipped, 1);
    assert!(n < all && n > all / 2, "{n} of {all}");
}

#[test]
fn a_corrupt_record_is_located_and_lenient_mode_skips_it() {
    let mut v = fixture("instances.v6.dat");
    let at = page_at(&DatFile::parse("x", &v).unwrap(), "jlab_big", 0);
    let (all, _) = drain(&DatFile::parse("x", &v).unwrap()).unwrap();
    // The first record's event id (after the 16-byte page header and a 4-byte record
    // header, when the record is short): an id no format has.
    let head = u32::from_le_bytes(v[at + 16..at + 20].try_into().unwrap());
    assert!(
        (1..=28).contains(&(head & 31)),
        "first record is a short data record"
    );
    v[at + 20..at + 22].copy_from_slice(&65000u16.to_le_bytes());
    let e = drain(&DatFile::parse("r.dat", &v).unwrap()).unwrap_err();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(at as u64 + 16)),
        "{e}"
    );
    let (n, skipped) = drain(&DatFile::parse_with("r.dat", &v, LENIENT).unwrap()).unwrap();
    assert_eq!((n, skipped), (all - 1, 1));
}

#[test]
fn bad_compressed_data_is_located() {
    let mut v = fixture("instances.v7.dat");
    let dat = DatFile::parse("x", &v).unwrap();
    let at = page_at(&dat, "jlab_big", 1);
    drop(dat);
    // The first chunk's compressed bytes start after count, sizes and zstd magic.
    for b in &mut v[at + 16..at + 64] {
        *b ^= 0x5a;
    }
    let e = drain(&DatFile::parse("z.dat", &v).unwrap()).unwrap_err();
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Decompress, Location::Offset(at as u64 + 4)),
        "{e}"
    );
    let (_, skipped) = drain(&DatFile::parse_with("z.dat", &v, LENIENT).unwrap()).unwrap();
    assert!(skipped >= 1);
    // A compressed section (the first options chain points at uncompressed options; the
    // header info section right after the file header is compressed).
    let mut v = fixture("instances.v7.dat");
    let n = v.len();
    v[60..80].fill(0xff);
    let e = DatFile::parse("h.dat", &v[..n])
        .err()
        .expect("corrupt header section");
    check_error(&e, "h.dat", n);
    assert_eq!(e.kind, ErrorKind::Decompress, "{e}");
}

#[test]
fn an_options_loop_is_an_error_not_a_hang() {
    let mut v = fixture("instances.v7.dat");
    // Point the DONE option of the first options section back at itself.
    // After the magic, "7\0", endianness, long size, page size and the compression strings.
    let mut p = 18;
    for _ in 0..2 {
        p += v[p..].iter().position(|&b| b == 0).unwrap() + 1;
    }
    let first = u64::from_le_bytes(v[p..p + 8].try_into().unwrap()) as usize;
    let size = u64::from_le_bytes(v[first + 8..first + 16].try_into().unwrap()) as usize;
    let done = first + 16 + size - 8;
    v[done..done + 8].copy_from_slice(&(first as u64).to_le_bytes());
    let e = DatFile::parse("l.dat", &v).err().expect("loop detected");
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Corrupt, Location::Offset(first as u64)),
        "{e}"
    );
}

#[test]
fn random_corruption_never_panics() {
    let base = fixture("instances.v6.dat");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..60 {
        let mut v = base.clone();
        let region = if round % 2 == 0 { v.len() - 100_000 } else { 0 };
        for _ in 0..8 {
            let i = region + (next() as usize) % (v.len() - region);
            v[i] = next() as u8;
        }
        for opts in [DatOptions::default(), LENIENT] {
            if let Ok(dat) = DatFile::parse_with("f.dat", &v, opts) {
                let _ = drain(&dat);
                let _ = dat.count_events(0);
            }
        }
    }
}

/// Inputs the fuzzers (fuzz/fuzz_targets/dat.rs, ringbuf.rs) found, run the way the
/// fuzzers run them.
#[test]
fn fuzz_regressions_stay_fixed() {
    use jitterlab_trace::format::Endian;
    use jitterlab_trace::ringbuf::{PageLayout, PageReader};
    let dir = data_dir().join("fuzz-regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("perf-") {
            continue; // perf script text: tests/perf_text.rs
        }
        let data = std::fs::read(&path).unwrap();
        n += 1;
        if name.starts_with("dat-") {
            for opts in [DatOptions::default(), LENIENT] {
                let dat = match DatFile::parse_with(&name, &data, opts) {
                    Ok(dat) => dat,
                    Err(e) => {
                        assert!(
                            !matches!(
                                e.kind,
                                ErrorKind::Io
                                    | ErrorKind::Syntax
                                    | ErrorKind::OutOfOrder
                                    | ErrorKind::InvalidArgument
                            ),
                            "{name}: {e}"
                        );
                        continue;
                    }
                };
                let _ = dat.cmdlines();
                let _ = dat.kallsyms();
                let drained = drain(&dat);
                assert!(!opts.lenient || drained.is_ok(), "{name}: {drained:?}");
                if let Err(e) = drained {
                    assert!(
                        matches!(
                            e.kind,
                            ErrorKind::Truncated
                                | ErrorKind::Corrupt
                                | ErrorKind::Decompress
                                | ErrorKind::Limit
                        ),
                        "{name}: {e}"
                    );
                }
                for b in 0..dat.buffers().len() {
                    let _ = dat.count_events(b);
                }
            }
        } else if let Some((&sel, page)) = data.split_first() {
            let endian = if sel & 1 == 0 {
                Endian::Little
            } else {
                Endian::Big
            };
            let layout = PageLayout::new(endian, if sel & 2 == 0 { 8 } else { 4 }, page.len());
            if let Ok(mut r) = PageReader::new(&layout, page) {
                while let Ok(Some(_)) = r.next_record() {}
            }
        }
    }
    assert!(n >= 1);
}
