//! The compression of version 7 files: whole sections, and per-CPU data in chunks.
//!
//! A compressed section starts with `u32 compressed size, u32 uncompressed size`; per-CPU
//! data is `u32 chunk count` then chunks of the same two words and the compressed bytes.
//! trace-cmd compresses with zstd (`ZSTD_compress`) or zlib (`compress2`, with the zlib
//! header). Output never grows past the size the header announces.

use std::io::Read;

/// A compression algorithm of a version 7 file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Not compressed.
    None,
    /// Zstandard.
    Zstd,
    /// zlib (deflate with the zlib header).
    Zlib,
}

impl Compression {
    /// From the name in the file header (`none`, `zstd`, `zlib`).
    pub fn from_name(name: &str) -> Option<Compression> {
        match name {
            "" | "none" => Some(Compression::None),
            "zstd" => Some(Compression::Zstd),
            "zlib" => Some(Compression::Zlib),
            _ => None,
        }
    }

    /// The name as the file header writes it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Zlib => "zlib",
        }
    }
}

/// Output sizes up to this are decompressed into a buffer allocated up front, at the
/// size the file claims; larger ones grow as output arrives. The reader bounds what it
/// asks for first (a chunk by its pages and `CHUNKS_HELD`, 24 MiB; the sections of a
/// file by `SECTIONS_INFLATED`, 32 MiB in all), so every claim it lets through is
/// allocated once, exactly, and a corrupt size word costs at most that bound.
const PREALLOC_MAX: usize = 32 << 20;

/// A reusable decompressor for one algorithm.
pub(crate) struct Inflater {
    kind: Compression,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Inflater {
    pub(crate) fn new(kind: Compression) -> Inflater {
        Inflater { kind, zstd: None }
    }

    /// Decompress `input`, which must inflate to exactly `expected` bytes, into `out`
    /// (cleared first). The error says what went wrong, without location.
    pub(crate) fn inflate(
        &mut self,
        input: &[u8],
        expected: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        out.clear();
        match self.kind {
            Compression::None => {
                if input.len() != expected {
                    return Err(format!(
                        "expected {expected} stored bytes, found {}",
                        input.len()
                    ));
                }
                out.extend_from_slice(input);
            }
            Compression::Zstd => {
                if expected <= PREALLOC_MAX {
                    if self.zstd.is_none() {
                        self.zstd = Some(
                            zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?,
                        );
                    }
                    if let Some(d) = self.zstd.as_mut() {
                        out.reserve_exact(expected);
                        d.decompress_to_buffer(input, out).map_err(|e| {
                            format!("expected zstd data, decompression failed: {e}")
                        })?;
                    }
                } else {
                    let dec = zstd::stream::read::Decoder::with_buffer(input)
                        .map_err(|e| format!("zstd: {e}"))?;
                    read_limited(dec, expected, out, "zstd")?;
                }
            }
            Compression::Zlib => {
                if expected <= PREALLOC_MAX {
                    // One more byte tells a wrong size (see read_limited).
                    out.reserve_exact(expected.saturating_add(1));
                }
                read_limited(flate2::read::ZlibDecoder::new(input), expected, out, "zlib")?;
            }
        }
        if out.len() != expected {
            return Err(format!(
                "expected {expected} bytes after decompression, found {}",
                out.len()
            ));
        }
        Ok(())
    }

    /// What `input` inflates to, counted up to `cap` bytes without keeping any: `None`
    /// when it inflates past `cap`. For a size word that claims more than the reader's
    /// limit: data inflating past the limit is too big, data inflating to less (or not
    /// at all) is corrupt, as when the claim is within the limit. A zstd frame whose
    /// header gives a size past `cap` (as trace-cmd's one-shot frames do) is taken at its
    /// word; else its window (kept by zstd while decoding) may not pass the power of two
    /// at or above `cap`, or 1 MiB.
    pub(crate) fn measure(&mut self, input: &[u8], cap: usize) -> Result<Option<usize>, String> {
        let limit = cap.saturating_add(1) as u64;
        let counted = match self.kind {
            Compression::None => input.len() as u64,
            Compression::Zstd => {
                if let Ok(Some(n)) = zstd::zstd_safe::get_frame_content_size(input) {
                    if n >= limit {
                        return Ok(None);
                    }
                }
                let mut dec = zstd::stream::read::Decoder::with_buffer(input)
                    .map_err(|e| format!("zstd: {e}"))?;
                let log = (usize::BITS - cap.leading_zeros()).clamp(20, 30);
                dec.window_log_max(log).map_err(|e| format!("zstd: {e}"))?;
                count(dec, limit, "zstd")?
            }
            Compression::Zlib => count(flate2::read::ZlibDecoder::new(input), limit, "zlib")?,
        };
        Ok((counted < limit).then_some(counted as usize))
    }
}

/// The bytes `r` gives, up to `limit`, dropped as they come.
fn count(r: impl Read, limit: u64, what: &str) -> Result<u64, String> {
    std::io::copy(&mut r.take(limit), &mut std::io::sink())
        .map_err(|e| format!("expected {what} data, decompression failed: {e}"))
}

/// A reusable compressor for one algorithm, as trace-cmd compresses (zstd level 3 here;
/// zlib at the best level, as trace-cmd's `compress2` call does).
pub(crate) struct Deflater {
    kind: Compression,
    /// Write the size words big-endian.
    pub(crate) big: bool,
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Deflater {
    pub(crate) fn new(kind: Compression, big: bool) -> Deflater {
        Deflater {
            kind,
            big,
            zstd: None,
        }
    }

    /// `data` compressed.
    pub(crate) fn deflate(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        match self.kind {
            Compression::None => Ok(data.to_vec()),
            Compression::Zstd => {
                if self.zstd.is_none() {
                    self.zstd = Some(zstd::bulk::Compressor::new(3)?);
                }
                match self.zstd.as_mut() {
                    Some(c) => c.compress(data),
                    None => Err(std::io::Error::other("zstd compressor")),
                }
            }
            Compression::Zlib => {
                use std::io::Write;
                let mut enc =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
                enc.write_all(data)?;
                enc.finish()
            }
        }
    }

    /// A compressed section payload: `u32 compressed size, u32 size, data`.
    pub(crate) fn section(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let z = self.deflate(data)?;
        let word = |n: usize| {
            let n = n as u32;
            if self.big {
                n.to_be_bytes()
            } else {
                n.to_le_bytes()
            }
        };
        let mut out = Vec::with_capacity(8 + z.len());
        out.extend_from_slice(&word(z.len()));
        out.extend_from_slice(&word(data.len()));
        out.extend_from_slice(&z);
        Ok(out)
    }
}

/// Reads what `r` inflates, up to `expected + 1` bytes (one more tells a wrong size), into
/// `out`. The buffer grows by doubling as output arrives, capped at `expected + 1`: never
/// twice the size the file claims (`read_to_end` would round 128 MiB + 1 up to 256 MiB),
/// nor more than twice what actually inflated (a false claim costs little).
fn read_limited(
    mut r: impl Read,
    expected: usize,
    out: &mut Vec<u8>,
    what: &str,
) -> Result<(), String> {
    let limit = expected.saturating_add(1);
    let mut len = out.len();
    loop {
        if len == out.len() {
            if len >= limit {
                break;
            }
            let grow = len.max(64 << 10).min(limit - len);
            out.reserve_exact(grow);
            out.resize(len + grow, 0);
        }
        match r.read(&mut out[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                out.truncate(len);
                return Err(format!("expected {what} data, decompression failed: {e}"));
            }
        }
    }
    out.truncate(len);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn round_trips_and_size_checks() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let z = zstd::bulk::compress(&data, 3).unwrap();
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&data).unwrap();
        let zl = enc.finish().unwrap();
        let mut out = Vec::new();
        for (kind, input) in [
            (Compression::Zstd, &z),
            (Compression::Zlib, &zl),
            (Compression::None, &data),
        ] {
            let mut inf = Inflater::new(kind);
            inf.inflate(input, data.len(), &mut out).unwrap();
            assert_eq!(out, data);
            assert!(
                inf.inflate(input, data.len() - 1, &mut out).is_err(),
                "{kind:?}"
            );
            assert!(inf
                .inflate(&input[..input.len() / 2], data.len(), &mut out)
                .is_err());
        }
        assert!(Inflater::new(Compression::Zstd)
            .inflate(b"garbage", 10, &mut out)
            .is_err());
        assert!(Inflater::new(Compression::Zlib)
            .inflate(b"garbage", 10, &mut out)
            .is_err());
    }
}
