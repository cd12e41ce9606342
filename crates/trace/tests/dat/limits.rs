//! Issue 13: what a version 7 file says its compressed data inflates to is bounded before
//! anything is allocated for it. A CPU data chunk inflates to at most ten pages (what
//! trace-cmd writes), the chunks the readers hold at once to at most 24 MiB; past a
//! bound, an error names the byte offset and the bound (lenient mode skips the chunk).
//! The committed traces read as they did before these bounds.

use jitterlab_trace::dat::{DatFile, DatOptions};
use jitterlab_trace::{Error, ErrorKind, EventSource, Location};

use crate::bombs::*;
use crate::util::*;

const LENIENT: DatOptions = DatOptions { lenient: true };

/// disk-irq-stress.v7.dat's records without CPU 0's first chunk (41636 with it).
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
