//! Every single-bit flip of the layout metadata of small real files — the file header,
//! the flyrecord options and CPU tables (version 6), the BUFFER options and the buffer
//! section headers (version 7) — reads the same events, or fails with an error that
//! names a byte offset, or opens with a warning that names the inconsistency. Never a
//! different count in silence (issue 13: 47 variants did before the layout checks).

use std::collections::{BTreeMap, HashSet};

use jitterlab_trace::dat::{Compression, DatFile, DatMeta, DatOptions, DatWriter, Spool};
use jitterlab_trace::{ErrorKind, Location};

use crate::util::*;

/// What a variant reads: per buffer, per CPU, (events, lost, first, last); per event id.
/// (Keyed by buffer index: a flip in a buffer's name renames it, the events stay.)
type Fingerprint = BTreeMap<usize, (Vec<CpuRow>, Vec<(u16, u64)>)>;
/// CPU, events, lost, first and last timestamps.
type CpuRow = (u32, u64, Option<u64>, Option<u64>, Option<u64>);

fn fingerprint(dat: &DatFile) -> Result<Fingerprint, jitterlab_trace::Error> {
    let mut f = BTreeMap::new();
    for i in 0..dat.buffers().len() {
        let c = dat.count_events(i)?;
        let cpus = c
            .per_cpu
            .iter()
            .filter(|p| p.events > 0 || p.lost != Some(0))
            .map(|p| (p.cpu, p.events, p.lost, p.first_ts, p.last_ts))
            .collect();
        let ids = c.by_event.iter().map(|e| (e.id, e.count)).collect();
        f.insert(i, (cpus, ids));
    }
    Ok(f)
}

#[derive(Debug, Default)]
struct Tally {
    variants: usize,
    same: usize,
    errors: usize,
    warned: usize,
    /// The same records under another CPU number that the buffer does not list and the
    /// file's CPU count allows: nothing in the file tells them apart (the pages carry no
    /// CPU number).
    renumbered: usize,
    silent: Vec<String>,
}

/// `got` is `want` with one CPU of one buffer renumbered.
fn renumbered(got: &Fingerprint, want: &Fingerprint) -> bool {
    let mut diff = 0;
    for (k, (wc, wi)) in want {
        let Some((gc, gi)) = got.get(k) else {
            return false;
        };
        if gi != wi || gc.len() != wc.len() {
            return false;
        }
        let strip = |v: &Vec<CpuRow>| {
            let mut s: Vec<_> = v.iter().map(|c| (c.1, c.2, c.3, c.4)).collect();
            s.sort();
            s
        };
        if strip(gc) != strip(wc) {
            return false;
        }
        diff += gc.iter().zip(wc).filter(|(a, b)| a != b).count().min(1);
    }
    diff == 1
}

fn u16_at(b: &[u8], p: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(p..p + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], p: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(p..p + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], p: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(p..p + 8)?.try_into().ok()?))
}

/// The byte ranges to flip in `bytes` (little-endian fixtures).
fn regions(bytes: &[u8], dat: &DatFile) -> Vec<std::ops::Range<usize>> {
    // The file header: magic, version, endianness, long size, page size.
    let mut v = Vec::new();
    v.push(0..18);
    if dat.info().version == 6 {
        // The CPU count before the top `options  \0` (the last before the data), the
        // instances' sections (within the data); in each: every option's id and size,
        // the bodies of BUFFER (offset, name), DATE and OFFSET options (not the text of
        // CPUSTAT, UNAME, VERSION, TRACECLOCK), the flyrecord tag, the CPU table and the
        // size of the trace clock text.
        let first_data = dat
            .buffers()
            .iter()
            .flat_map(|b| &b.cpus)
            .map(|c| c.offset as usize)
            .min()
            .unwrap();
        let tag = b"options  \0";
        let all: Vec<usize> = bytes
            .windows(tag.len())
            .enumerate()
            .filter(|(_, w)| w == tag)
            .map(|(i, _)| i)
            .collect();
        let top = all
            .iter()
            .copied()
            .filter(|&p| p < first_data)
            .max()
            .unwrap();
        v.push(top - 4..top + 10);
        let cpus = dat.info().cpus as usize;
        for (n, p) in std::iter::once(top)
            .chain(all.iter().copied().filter(|&p| p > first_data))
            .enumerate()
        {
            let mut q = p + 10;
            loop {
                let id = u16_at(bytes, q).unwrap();
                if id == 0 {
                    v.push(q..q + 2);
                    q += 2;
                    break;
                }
                let size = u32_at(bytes, q + 2).unwrap() as usize;
                v.push(q..q + 6);
                if matches!(id, 1 | 3 | 7) {
                    v.push(q + 6..q + 6 + size);
                }
                q += 6 + size;
            }
            // flyrecord, the table and (top buffer) the clock text's size.
            let table_end = q + 10 + 16 * cpus;
            v.push(q..table_end + if n == 0 { 8 } else { 0 });
        }
    } else {
        // The compression strings and the first options offset.
        v[0] = 0..40;
        // BUFFER options (id 3, a size, then the offset of a section whose id is 3), and
        // the 16-byte header of the section each points at.
        for p in 0..bytes.len().saturating_sub(14) {
            let (Some(3), Some(n), Some(off)) =
                (u16_at(bytes, p), u32_at(bytes, p + 2), u64_at(bytes, p + 6))
            else {
                continue;
            };
            let off = off as usize;
            if (20..4096).contains(&n) && off + 16 <= bytes.len() && u16_at(bytes, off) == Some(3) {
                v.push(p..p + 6 + n as usize);
                v.push(off..off + 16);
            }
        }
    }
    v
}

/// A copy of `file` as jitterlab's writer writes it (version 6, or 7 with `v7`), with
/// only the event formats its records use and no kallsyms: the same buffers and pages in
/// a file small enough to parse thousands of times.
fn slim(file: &str, v7: Option<Compression>) -> Vec<u8> {
    let dat = open(file);
    let mut used = HashSet::new();
    for b in 0..dat.buffers().len() {
        used.extend(dat.count_events(b).unwrap().by_event.iter().map(|e| e.id));
    }
    let id_of = |text: &Vec<u8>| {
        String::from_utf8_lossy(text).lines().find_map(|l| {
            l.trim()
                .strip_prefix("ID:")
                .map(|n| n.trim().parse::<u16>().unwrap())
        })
    };
    let mut meta = DatMeta::from_dat(&dat);
    meta.ftrace_formats
        .retain(|f| id_of(f).is_some_and(|id| used.contains(&id)));
    for (_, formats) in &mut meta.event_formats {
        formats.retain(|f| id_of(f).is_some_and(|id| used.contains(&id)));
    }
    meta.event_formats.retain(|(_, f)| !f.is_empty());
    meta.kallsyms.clear();
    let mut w = match v7 {
        Some(c) => DatWriter::new_v7(meta, Spool::Memory, c),
        None => DatWriter::new(meta, Spool::Memory),
    }
    .unwrap();
    for (b, buffer) in dat.buffers().iter().enumerate() {
        let id = w.add_buffer(&buffer.name).unwrap();
        for (i, cpu) in buffer.cpus.iter().enumerate() {
            dat.cpu_pages(b, i, |page| {
                w.write_pages(id, cpu.cpu, page).unwrap();
                Ok(())
            })
            .unwrap();
        }
    }
    let mut out = Vec::new();
    w.finish(&mut out).unwrap();
    out
}

fn sweep(file: &str, bytes: Vec<u8>, t: &mut Tally) {
    let dat = DatFile::parse(file, &bytes).expect("fixture parses");
    assert!(dat.warnings().is_empty(), "{file}: {:?}", dat.warnings());
    let want = fingerprint(&dat).expect("fixture reads");
    let regions = regions(&bytes, &dat);
    assert!(regions.len() >= 2, "{file}: {regions:?}");
    let mut v = bytes.clone();
    for r in regions {
        for byte in r {
            for bit in 0..8 {
                v[byte] ^= 1 << bit;
                t.variants += 1;
                let opened = DatFile::parse_with(file, &v, DatOptions::default());
                let outcome = opened.and_then(|d| Ok((fingerprint(&d)?, !d.warnings().is_empty())));
                match outcome {
                    Err(e) => {
                        assert!(
                            matches!(e.location, Location::Offset(_)),
                            "{file} byte {byte} bit {bit}: an error without an offset: {e}"
                        );
                        assert_ne!(e.kind, ErrorKind::Io);
                        t.errors += 1;
                    }
                    Ok((got, _)) if got == want => t.same += 1,
                    Ok((_, true)) => t.warned += 1,
                    Ok((got, false)) if renumbered(&got, &want) => t.renumbered += 1,
                    Ok((got, false)) => t.silent.push(format!(
                        "{file} byte {byte} bit {bit}: {} events instead of {}: {:?} instead of {:?}",
                        total(&got),
                        total(&want),
                        got.iter().find(|(k, g)| want.get(*k) != Some(g)),
                        want.iter().find(|(k, w)| got.get(*k) != Some(w)).map(|w| &w.1 .0),
                    )),
                }
                v[byte] ^= 1 << bit;
            }
        }
    }
}

fn total(f: &Fingerprint) -> u64 {
    f.values()
        .flat_map(|(cpus, _)| cpus.iter().map(|c| c.1))
        .sum()
}

#[test]
fn no_bit_flip_of_the_layout_changes_the_events_in_silence() {
    let mut t = Tally::default();
    // The three buffers of instances.v7.dat (trace-cmd's) as jitterlab writes them, v6
    // and v7 (the fixture itself has 2 MB of formats to parse per variant: minutes); and
    // trace-cmd's own v7 layout in synth-le.v7.dat (converted by trace-cmd).
    let files = [
        ("instances slim v6", slim("instances.v7.dat", None)),
        (
            "instances slim v7",
            slim("instances.v7.dat", Some(Compression::Zstd)),
        ),
        (
            "instances slim v7none",
            slim("instances.v7.dat", Some(Compression::None)),
        ),
        ("synth-le.v7.dat", fixture("synth-le.v7.dat")),
    ];
    for (file, bytes) in files {
        let t0 = std::time::Instant::now();
        sweep(file, bytes, &mut t);
        eprintln!("{file}: {:?}, {} variants so far", t0.elapsed(), t.variants);
    }
    if let Ok(out) = std::env::var("JITTERLAB_SWEEP_OUT") {
        std::fs::write(out, t.silent.join("\n")).unwrap();
    }
    eprintln!(
        "{} variants: {} same events, {} errors, {} warnings, {} CPUs renumbered, {} silent",
        t.variants,
        t.same,
        t.errors,
        t.warned,
        t.renumbered,
        t.silent.len()
    );
    assert!(t.variants > 5000, "{t:?}");
    assert!(
        t.silent.is_empty(),
        "{} silent:\n{}",
        t.silent.len(),
        t.silent.join("\n")
    );
}
