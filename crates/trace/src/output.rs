//! Files the tools write (`record`'s .dat, `convert`'s output, `latency --json`, plots):
//! one way to write them, so that a failure never leaves half a file and nothing but a
//! regular file is ever replaced.
//!
//! - An OUTPUT that does not exist, or is a regular file (also through a symlink: the
//!   symlink stays, its target is replaced), is written under a temporary name in the
//!   same directory and renamed over it only when complete ([`OutputFile::commit`]).
//! - An OUTPUT that is not a regular file — a FIFO, a character device such as
//!   `/dev/null` or `/dev/stdout`, a socket — is written *through*: the bytes are
//!   prepared in a temporary file and then copied into it, opened for writing; it is
//!   never renamed over, so a device node stays a device node.
//! - A directory, or a block device, is refused before anything is written.
//!
//! Writers that take a path rather than a stream (the .dat copies) write
//! [`OutputFile::path`]; [`OutputFile::scratch_dir`] is where spools of the same file
//! system belong.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// How the final OUTPUT is reached.
#[derive(Debug)]
enum Final {
    /// Renamed over (a regular file, or a new one).
    Rename(PathBuf),
    /// Copied into (a FIFO or character device, opened for writing).
    Through(PathBuf),
}

/// A file being written for OUTPUT; removed unless committed.
#[derive(Debug)]
pub struct OutputFile {
    tmp: PathBuf,
    file: Option<File>,
    target: Final,
    committed: bool,
}

impl OutputFile {
    /// Prepares to write `output` (see the module's rules); the error names it.
    pub fn create(output: &Path) -> io::Result<OutputFile> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", output.display()));
        let target = match fs::metadata(output) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Final::Rename(output.to_path_buf()),
            Err(e) => return Err(named(e)),
            Ok(m) if m.is_file() => Final::Rename(fs::canonicalize(output).map_err(named)?),
            Ok(m) if m.is_dir() => {
                return Err(named(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a directory; expected a file to write",
                )))
            }
            Ok(m) if m.file_type().is_block_device() => {
                return Err(named(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a block device; refusing to write a trace or report over it",
                )))
            }
            Ok(_) => Final::Through(output.to_path_buf()),
        };
        let dir = match &target {
            Final::Rename(p) => p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            Final::Through(_) => std::env::temp_dir(),
        };
        let stem = output
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let mut n = 0u32;
        loop {
            let tmp = dir.join(format!(".{stem}.partial-{}-{n}", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    return Ok(OutputFile {
                        tmp,
                        file: Some(file),
                        target,
                        committed: false,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", tmp.display()))),
            }
        }
    }

    /// The temporary file, for writers that take a path (they may reopen it).
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The directory of the temporary file: where spool files of the same file system go.
    pub fn scratch_dir(&self) -> &Path {
        self.tmp.parent().unwrap_or(Path::new("."))
    }

    /// Whether OUTPUT is written through (a FIFO or a device) rather than replaced.
    pub fn is_through(&self) -> bool {
        matches!(self.target, Final::Through(_))
    }

    /// Completes OUTPUT: renames the temporary file over it, or copies it into a
    /// non-regular OUTPUT and removes it. Returns the bytes written.
    pub fn commit(mut self) -> io::Result<u64> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
        }
        let bytes = fs::metadata(&self.tmp)?.len();
        match &self.target {
            Final::Rename(path) => fs::rename(&self.tmp, path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot rename {} to {}: {e}",
                        self.tmp.display(),
                        path.display()
                    ),
                )
            })?,
            Final::Through(path) => {
                let mut out = OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                io::copy(&mut File::open(&self.tmp)?, &mut out)?;
                out.flush()?;
                let _ = fs::remove_file(&self.tmp);
            }
        }
        self.committed = true;
        Ok(bytes)
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_regular_file_is_replaced_whole_and_a_failure_leaves_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.dat");
        fs::write(&out, b"old").unwrap();
        let mut f = OutputFile::create(&out).unwrap();
        f.write_all(b"new bytes").unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"old", "untouched until committed");
        drop(f);
        assert_eq!(fs::read(&out).unwrap(), b"old");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
        let mut f = OutputFile::create(&out).unwrap();
        f.write_all(b"new bytes").unwrap();
        assert_eq!(f.commit().unwrap(), 9);
        assert_eq!(fs::read(&out).unwrap(), b"new bytes");
    }

    #[test]
    fn a_symlink_stays_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        fs::write(&real, b"old").unwrap();
        symlink(&real, &link).unwrap();
        let mut f = OutputFile::create(&link).unwrap();
        f.write_all(b"{}").unwrap();
        f.commit().unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"{}");
    }

    #[test]
    fn a_device_or_fifo_is_written_through_never_replaced() {
        let mut f = OutputFile::create(Path::new("/dev/null")).unwrap();
        assert!(f.is_through());
        f.write_all(b"discarded").unwrap();
        let tmp = f.path().to_path_buf();
        f.commit().unwrap();
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        assert!(!tmp.exists());

        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };
        let mut f = OutputFile::create(&fifo).unwrap();
        f.write_all(b"through the pipe").unwrap();
        f.commit().unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = OutputFile::create(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
}
