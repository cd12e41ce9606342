//! Hostile version 7 files whose size words ask the reader for more memory than it may
//! hold (issue 13): decompression bombs in a CPU data chunk and in the kallsyms section,
//! and a buffer of thousands of CPUs each holding a chunk. Made from
//! disk-irq-stress.v7.dat (zstd, 4096-byte pages, 2 CPUs; its kallsyms section at byte
//! 124459). Also compiled into tests/memory.rs.

use jitterlab_trace::dat::{Compression, DatFile, DatMeta, DatWriter, Spool};

/// Where disk-irq-stress.v7.dat's kallsyms section (id 19, compressed) starts.
pub const KALLSYMS_AT: usize = 124_459;

/// A zstd frame that inflates to `prefix` then zeros, `size` bytes in all (a raw block
/// for the prefix, then run-length blocks of 128 KiB: about 4 bytes each), followed by a
/// skippable frame that pads it to `len` bytes.
pub fn zstd_bomb(prefix: &[u8], size: usize, len: usize) -> Vec<u8> {
    const BLOCK: usize = 128 << 10;
    let mut v = 0xFD2F_B528u32.to_le_bytes().to_vec();
    v.push(0); // no content size, no checksum, not single-segment
    v.push(7 << 3); // a window of 128 KiB
    let header = |v: &mut Vec<u8>, last: bool, kind: u32, n: usize| {
        let h = u32::from(last) | kind << 1 | (n as u32) << 3;
        v.extend_from_slice(&h.to_le_bytes()[..3]);
    };
    let mut left = size - prefix.len();
    header(&mut v, left == 0, 0, prefix.len());
    v.extend_from_slice(prefix);
    while left > 0 {
        let n = left.min(BLOCK);
        left -= n;
        header(&mut v, left == 0, 1, n);
        v.push(0);
    }
    assert!(v.len() + 8 <= len, "the bomb fits");
    let pad = len - v.len() - 8;
    v.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
    v.extend_from_slice(&(pad as u32).to_le_bytes());
    v.resize(len, 0);
    v
}

fn u32_at(b: &[u8], p: usize) -> usize {
    u32::from_le_bytes(b[p..p + 4].try_into().unwrap()) as usize
}

/// disk-irq-stress.v7.dat (`v7`) whose CPU 0's first chunk (4471 compressed bytes, 10
/// pages) claims and inflates to `size` bytes of zeros, its compressed size unchanged;
/// and the file offset of that chunk.
pub fn chunk_bomb(v7: &[u8], size: usize) -> (Vec<u8>, usize) {
    let dat = DatFile::parse("v7", v7).unwrap();
    // After the CPU's chunk count.
    let at = dat.buffers()[0].cpus[0].offset as usize + 4;
    drop(dat);
    let mut v = v7.to_vec();
    let z = u32_at(v7, at);
    v[at + 4..at + 8].copy_from_slice(&(size as u32).to_le_bytes());
    v[at + 8..at + 8 + z].copy_from_slice(&zstd_bomb(&[], size, z));
    (v, at)
}

/// disk-irq-stress.v7.dat (`v7`) whose kallsyms section claims and inflates to `size`
/// bytes, all of them the kallsyms text (a size word, then zeros), its compressed size
/// unchanged.
pub fn kallsyms_bomb(v7: &[u8], size: usize) -> Vec<u8> {
    let at = KALLSYMS_AT;
    assert_eq!(&v7[at..at + 4], &[19, 0, 1, 0], "the kallsyms section");
    let z = u32_at(v7, at + 16);
    let mut v = v7.to_vec();
    v[at + 20..at + 24].copy_from_slice(&(size as u32).to_le_bytes());
    let prefix = ((size - 4) as u32).to_le_bytes();
    v[at + 24..at + 24 + z].copy_from_slice(&zstd_bomb(&prefix, size, z));
    v
}

/// A v7 zstd file with disk-irq-stress.v7.dat's metadata (without kallsyms) and `cpus`
/// CPUs, each with one chunk of ten pages: CPU 0's first page of that file, then nine
/// empty pages. `cpus` × 40 KiB decompressed, about 1.5 KiB a CPU in the file.
pub fn many_cpus(v7: &[u8], cpus: u32) -> Vec<u8> {
    let dat = DatFile::parse("v7", v7).unwrap();
    let mut first = None;
    dat.cpu_pages(0, 0, |p| {
        first.get_or_insert_with(|| p.to_vec());
        Ok(())
    })
    .unwrap();
    let mut pages = first.expect("a page");
    pages.resize(10 * 4096, 0);
    let mut meta = DatMeta::from_dat(&dat);
    meta.kallsyms.clear();
    meta.cpus = cpus;
    meta.cpustats.clear();
    let mut w = DatWriter::new_v7(meta, Spool::Memory, Compression::Zstd).unwrap();
    for cpu in 0..cpus {
        w.write_pages(0, cpu, &pages).unwrap();
    }
    let mut out = Vec::new();
    w.finish(&mut out).unwrap();
    out
}

/// A v7 zstd copy of `v7` (one buffer) whose kallsyms is `kallsyms` (a real kallsyms
/// repeated past what real kernels have, say), every section and chunk as big as it
/// really inflates.
pub fn with_kallsyms(v7: &[u8], kallsyms: Vec<u8>) -> Vec<u8> {
    rewritten(v7, true, |m| m.kallsyms = kallsyms)
}

/// A copy of the file `bytes` (every buffer's pages) whose metadata `edit` changed:
/// version 7 (zstd) when `v7`, else version 6.
pub fn rewritten(bytes: &[u8], v7: bool, edit: impl FnOnce(&mut DatMeta)) -> Vec<u8> {
    let dat = DatFile::parse("copy", bytes).unwrap();
    let mut meta = DatMeta::from_dat(&dat);
    edit(&mut meta);
    let mut w = if v7 {
        DatWriter::new_v7(meta, Spool::Memory, Compression::Zstd)
    } else {
        DatWriter::new(meta, Spool::Memory)
    }
    .unwrap();
    for (b, buffer) in dat.buffers().iter().enumerate() {
        let id = w.add_buffer(&buffer.name).unwrap();
        for (i, cpu) in buffer.cpus.iter().enumerate() {
            dat.cpu_pages(b, i, |p| {
                w.write_pages(id, cpu.cpu, p).unwrap();
                Ok(())
            })
            .unwrap();
        }
    }
    let mut out = Vec::new();
    w.finish(&mut out).unwrap();
    out
}
