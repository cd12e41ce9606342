//! The writer: a copy of a real trace reads back the same, and `trace-cmd report` prints
//! the copy exactly as it prints the original.

use std::path::Path;
use std::process::Command;

use jitterlab_trace::dat::{
    copy_to_v6, copy_to_v7, Compression, DatFile, DatMeta, DatOptions, DatWriter, Spool,
};

use jitterlab_host::testing::skip;

use crate::util::*;

fn trace_cmd_report(path: &Path) -> Option<String> {
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(path)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "trace-cmd report {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("UTF-8 report"))
}

#[test]
fn copies_read_back_and_report_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in [
        "cyclictest-idle.v7.dat",
        "instances.v7.dat",
        "instances.v7zlib.dat",
    ]
    .iter()
    .enumerate()
    {
        let src = dir.path().join(format!("in{i}.dat"));
        std::fs::write(&src, fixture(name)).unwrap();
        let dat = DatFile::open(&src).unwrap();
        let dst = dir.path().join(format!("out{i}.dat"));
        let spool = if i % 2 == 0 {
            Spool::Memory
        } else {
            Spool::Dir(dir.path().to_path_buf())
        };
        copy_to_v6(&dat, &dst, spool).unwrap();
        let copy = DatFile::open(&dst).unwrap();
        assert_eq!(copy.meta().format, "trace-cmd .dat v6");
        assert_eq!(copy.buffers().len(), dat.buffers().len());
        for b in 0..dat.buffers().len() {
            assert_eq!(copy.buffers()[b].name, dat.buffers()[b].name);
            assert_eq!(
                all_events(&copy, b),
                all_events(&dat, b),
                "{name} buffer {b}"
            );
        }
        // Spool files are gone.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| {
                let n = e.ok()?.file_name().into_string().ok()?;
                n.ends_with(".pages").then_some(n)
            })
            .collect();
        assert!(left.is_empty(), "{left:?}");
        if name.contains("zlib") {
            continue; // this trace-cmd cannot read zlib files
        }
        match (trace_cmd_report(&src), trace_cmd_report(&dst)) {
            (Some(a), Some(b)) => {
                assert!(a.lines().count() > 100);
                assert_eq!(a, b, "trace-cmd report of the copy of {name} differs");
            }
            _ => skip("trace-cmd is not installed"),
        }
    }
}

#[test]
fn writer_streams_pages_incrementally_and_checks_its_input() {
    let dat = open("instances.v7.dat");
    let meta = DatMeta::from_dat(&dat);
    assert!(DatWriter::new(
        DatMeta {
            page_size: 0,
            ..meta.clone()
        },
        Spool::Memory
    )
    .is_err());
    let mut w = DatWriter::new(meta, Spool::Memory).unwrap();
    let big = w.add_buffer("jlab_big").unwrap();
    assert_eq!(w.add_buffer("jlab_big").unwrap(), big);
    assert!(w.write_pages(big, 99, &[0; 16]).is_err());
    // Feed CPU 1 page by page, interleaved with CPU 0, as a recorder would.
    let b = dat.buffer_index("jlab_big").unwrap();
    let mut pages: Vec<(u32, Vec<u8>)> = Vec::new();
    for (i, cpu) in dat.buffers()[b].cpus.iter().enumerate() {
        dat.cpu_pages(b, i, |p| {
            pages.push((cpu.cpu, p.to_vec()));
            Ok(())
        })
        .unwrap();
    }
    pages.sort_by_key(|(cpu, p)| (u64::from_le_bytes(p[..8].try_into().unwrap()), *cpu));
    for (cpu, p) in &pages {
        w.write_pages(big, *cpu, p).unwrap();
    }
    let mut out = Vec::new();
    let n = w.finish(&mut out).unwrap();
    assert_eq!(n as usize, out.len());
    let copy = DatFile::parse_with("copy", &out, DatOptions::default()).unwrap();
    let cb = copy.buffer_index("jlab_big").unwrap();
    assert_eq!(all_events(&copy, cb), all_events(&dat, b));
    assert!(all_events(&copy, 0).is_empty());
}

#[test]
fn v7_copies_read_back_and_report_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["cyclictest-idle.v7.dat", "instances.v7.dat"] {
        let src = dir.path().join("in.dat");
        std::fs::write(&src, fixture(name)).unwrap();
        let dat = DatFile::open(&src).unwrap();
        let report = trace_cmd_report(&src);
        for (i, c) in [Compression::Zstd, Compression::None, Compression::Zlib]
            .into_iter()
            .enumerate()
        {
            let dst = dir.path().join(format!("out{i}.dat"));
            let spool = if i == 1 {
                Spool::Dir(dir.path().to_path_buf())
            } else {
                Spool::Memory
            };
            copy_to_v7(&dat, &dst, spool, c).unwrap();
            let copy = DatFile::open(&dst).unwrap();
            assert_eq!(
                copy.meta().format,
                format!("trace-cmd .dat v7 ({})", c.name())
            );
            for b in 0..dat.buffers().len() {
                assert_eq!(copy.buffers()[b].name, dat.buffers()[b].name);
                assert_eq!(
                    all_events(&copy, b),
                    all_events(&dat, b),
                    "{name} {c:?} buffer {b}"
                );
            }
            assert_eq!(copy.kallsyms_text(), dat.kallsyms_text());
            if c == Compression::Zlib {
                continue; // this trace-cmd cannot read zlib files
            }
            match (&report, trace_cmd_report(&dst)) {
                (Some(a), Some(b)) => {
                    assert_eq!(a, &b, "trace-cmd report of the {c:?} copy of {name}")
                }
                _ => skip("trace-cmd is not installed"),
            }
        }
    }
}

#[test]
fn adopted_page_files_write_the_same_file_as_written_pages() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.dat");
    std::fs::write(&src, fixture("cyclictest-idle.v7.dat")).unwrap();
    let dat = DatFile::open(&src).unwrap();
    let mut written = DatWriter::new(DatMeta::from_dat(&dat), Spool::Memory).unwrap();
    let mut adopted = DatWriter::new(DatMeta::from_dat(&dat), Spool::Memory).unwrap();
    for (i, cpu) in dat.buffers()[0].cpus.iter().enumerate() {
        let mut pages = Vec::new();
        dat.cpu_pages(0, i, |p| {
            pages.extend_from_slice(p);
            Ok(())
        })
        .unwrap();
        written.write_pages(0, cpu.cpu, &pages).unwrap();
        let path = dir.path().join(format!("cpu{}.pages", cpu.cpu));
        std::fs::write(&path, &pages).unwrap();
        adopted.adopt_pages(0, cpu.cpu, path.clone()).unwrap();
        assert!(
            adopted.adopt_pages(0, cpu.cpu, path).is_err(),
            "a CPU's pages are adopted once"
        );
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    written.finish(&mut a).unwrap();
    adopted.finish(&mut b).unwrap();
    assert_eq!(a, b);
    let leftover: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pages"))
        .collect();
    assert!(
        leftover.is_empty(),
        "adopted files are removed: {leftover:?}"
    );

    let mut v7 =
        DatWriter::new_v7(DatMeta::from_dat(&dat), Spool::Memory, Compression::Zstd).unwrap();
    let path = dir.path().join("whole.pages");
    std::fs::write(&path, vec![0u8; 4096]).unwrap();
    assert!(
        v7.adopt_pages(0, 0, path).is_err(),
        "compressed output copies"
    );
}

/// Issue 17: the host name and the CLOCK_MONOTONIC / CLOCK_REALTIME pair of jitterlab's
/// own option are written and read back, and trace-cmd still reports the file.
#[test]
fn the_clocks_option_round_trips() {
    use jitterlab_trace::dat::ClockPair;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.dat");
    std::fs::write(&src, fixture("instances.v7.dat")).unwrap();
    let dat = DatFile::open(&src).unwrap();
    assert_eq!(dat.info().clocks, None);
    let clocks = ClockPair {
        monotonic_ns: 976_123_456_789,
        realtime_ns: 1_790_000_000_123_456_789,
    };
    let meta = DatMeta {
        clocks: Some(clocks),
        hostname: Some("rack3-board7".into()),
        ..DatMeta::from_dat(&dat)
    };
    let mut w = DatWriter::new(meta, Spool::Memory).unwrap();
    for (i, cpu) in dat.buffers()[0].cpus.iter().enumerate() {
        let mut pages = Vec::new();
        dat.cpu_pages(0, i, |p| {
            pages.push(p.to_vec());
            Ok(())
        })
        .unwrap();
        for p in pages {
            w.write_pages(0, cpu.cpu, &p).unwrap();
        }
    }
    let dst = dir.path().join("out.dat");
    let mut out = std::fs::File::create(&dst).unwrap();
    w.finish(&mut out).unwrap();
    drop(out);
    let copy = DatFile::open(&dst).unwrap();
    assert_eq!(copy.info().clocks, Some(clocks));
    assert_eq!(copy.info().hostname.as_deref(), Some("rack3-board7"));
    assert_eq!(
        clocks.wall_offset_ns(),
        1_790_000_000_123_456_789 - 976_123_456_789
    );
    assert_eq!(ClockPair::parse(&clocks.to_text()), Some(clocks));
    assert_eq!(ClockPair::parse("monotonic 5\n"), None);
    assert_eq!(ClockPair::parse("monotonic x\nrealtime 5\n"), None);
    match trace_cmd_report(&dst) {
        Some(r) => assert!(r.lines().count() > 1, "{r}"),
        None => skip("trace-cmd is not installed"),
    }
}
