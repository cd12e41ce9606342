//! Where a [`super::DatWriter`] keeps pages until it writes the file: in memory or in
//! files of a spool directory (removed when dropped), per buffer and CPU; for compressed
//! version 7 output, as compressed chunks.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::compress::Deflater;

/// Where pages wait until the file is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spool {
    /// In memory.
    Memory,
    /// In files created (and removed again) in this directory.
    Dir(PathBuf),
}

static SPOOL_SEQ: AtomicU64 = AtomicU64::new(0);

pub(crate) enum SpoolFile {
    Mem(Vec<u8>),
    File { file: File, path: PathBuf, len: u64 },
}

impl SpoolFile {
    pub(crate) fn new(spool: &Spool) -> io::Result<SpoolFile> {
        match spool {
            Spool::Memory => Ok(SpoolFile::Mem(Vec::new())),
            Spool::Dir(dir) => {
                let n = SPOOL_SEQ.fetch_add(1, Ordering::Relaxed);
                let path = dir.join(format!("jitterlab-dat-{}-{n}.pages", std::process::id()));
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                Ok(SpoolFile::File { file, path, len: 0 })
            }
        }
    }

    pub(crate) fn len(&self) -> u64 {
        match self {
            SpoolFile::Mem(v) => v.len() as u64,
            SpoolFile::File { len, .. } => *len,
        }
    }

    pub(crate) fn append(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            SpoolFile::Mem(v) => v.extend_from_slice(data),
            SpoolFile::File { file, len, .. } => {
                file.write_all(data)?;
                *len += data.len() as u64;
            }
        }
        Ok(())
    }

    pub(crate) fn copy_to(&mut self, out: &mut impl Write) -> io::Result<()> {
        match self {
            SpoolFile::Mem(v) => out.write_all(v),
            SpoolFile::File { file, len, .. } => {
                file.seek(SeekFrom::Start(0))?;
                let n = io::copy(&mut file.take(*len), out)?;
                if n != *len {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "spool file shrank",
                    ));
                }
                Ok(())
            }
        }
    }
}

impl Drop for SpoolFile {
    fn drop(&mut self) {
        if let SpoolFile::File { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Pages per compressed chunk (as trace-cmd writes them).
pub(crate) const CHUNK_PAGES: usize = 10;

/// One CPU's data waiting: raw pages (version 6, or 7 without compression), or compressed
/// chunks (`u32 size, u32 uncompressed size, data` each) plus pages not yet a full chunk.
pub(crate) struct CpuSpool {
    pub(crate) file: SpoolFile,
    pub(crate) pending: Vec<u8>,
    pub(crate) chunks: u32,
}

impl CpuSpool {
    pub(crate) fn append(
        &mut self,
        pages: &[u8],
        chunker: Option<&mut Deflater>,
        chunk: usize,
    ) -> io::Result<()> {
        let Some(d) = chunker else {
            return self.file.append(pages);
        };
        self.pending.extend_from_slice(pages);
        while self.pending.len() >= chunk {
            self.flush_chunk(d, chunk)?;
        }
        Ok(())
    }

    /// Compress up to `chunk` pending bytes into a chunk.
    pub(crate) fn flush_chunk(&mut self, d: &mut Deflater, chunk: usize) -> io::Result<()> {
        let n = self.pending.len().min(chunk);
        if n == 0 {
            return Ok(());
        }
        let z = d.deflate(&self.pending[..n])?;
        let mut head = Vec::with_capacity(8);
        head.extend_from_slice(&(z.len() as u32).to_le_bytes());
        head.extend_from_slice(&(n as u32).to_le_bytes());
        if d.big {
            head[..4].reverse();
            head[4..].reverse();
        }
        self.file.append(&head)?;
        self.file.append(&z)?;
        self.pending.drain(..n);
        self.chunks += 1;
        Ok(())
    }
}

pub(crate) struct BufferSpool {
    pub(crate) name: String,
    pub(crate) cpus: Vec<CpuSpool>,
}
