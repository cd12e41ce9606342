//! Files the tools write (`record`'s .dat, `convert`'s output, `latency --json`, plots,
//! reports, Parquet tables): one way to write them, so that a failure never leaves half a
//! file, nothing but a regular file is ever replaced, and **no output ever replaces an
//! input**.
//!
//! - The inputs of the running command are registered with [`protect_input`] (by device
//!   and inode, so a symlink, a hard link, `./x` or `../d/x` are all the same file).
//!   [`check_output`] refuses an output that is one of them, and [`OutputFile::create`]
//!   calls it, so every writer of the workspace keeps the rule: the error is a
//!   [`SameFile`] naming both paths.
//! - An OUTPUT that does not exist, or is a regular file (also through a symlink: the
//!   symlink stays, its target is replaced), is written under a temporary name in the
//!   same directory and renamed over it only when complete ([`OutputFile::commit`]).
//! - An OUTPUT that is not a regular file — a FIFO, a character device such as
//!   `/dev/null` or `/dev/stdout`, a socket — is written *through*: it is opened when the
//!   output is created (a FIFO without a reader is waited for at most [`FIFO_WAIT`], then
//!   refused), the bytes are prepared in a temporary file and copied into it on commit;
//!   it is never renamed over, so a device node stays a device node.
//! - `-` is standard output: the bytes are prepared in a temporary file and copied to
//!   stdout on commit.
//! - A directory, or a block device, is refused before anything is written.
//!
//! Writers that take a path rather than a stream (the .dat copies) write
//! [`OutputFile::path`]; [`OutputFile::scratch_dir`] is where spools of the same file
//! system belong.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a FIFO given as an output is waited for a reader before it is refused.
pub const FIFO_WAIT: Duration = Duration::from_secs(5);

/// A file this process reads, by identity.
#[derive(Debug)]
struct Guarded {
    dev: u64,
    ino: u64,
    path: PathBuf,
}

/// The inputs of this process ([`protect_input`]).
static INPUTS: Mutex<Vec<Guarded>> = Mutex::new(Vec::new());

/// Registers `path` as an input of this process: from now on no output may be the same
/// file ([`check_output`]). A path that does not exist (or `-`, stdin) has nothing to
/// protect and is ignored.
pub fn protect_input(path: &Path) {
    if path.as_os_str() == "-" {
        return;
    }
    if let Ok(m) = fs::metadata(path) {
        let mut inputs = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
        if !inputs.iter().any(|g| g.dev == m.dev() && g.ino == m.ino()) {
            inputs.push(Guarded {
                dev: m.dev(),
                ino: m.ino(),
                path: path.to_path_buf(),
            });
        }
    }
}

/// An output that is one of the command's inputs: writing it would destroy the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SameFile {
    /// The output as given (`-` for standard output).
    pub output: PathBuf,
    /// The input it resolves to, as given.
    pub input: PathBuf,
}

impl fmt::Display for SameFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let out = if self.output.as_os_str() == "-" {
            "standard output".to_string()
        } else {
            self.output.display().to_string()
        };
        write!(
            f,
            "{out} is the input {} (the same file); writing it would destroy the input: give the output another name",
            self.input.display()
        )
    }
}

impl std::error::Error for SameFile {}

impl SameFile {
    /// The [`SameFile`] an I/O error carries, if it is one (as [`OutputFile::create`]
    /// returns it).
    pub fn of(e: &io::Error) -> Option<&SameFile> {
        e.get_ref().and_then(|e| e.downcast_ref::<SameFile>())
    }
}

fn same_as_input(m: &fs::Metadata) -> Option<PathBuf> {
    let inputs = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    inputs
        .iter()
        .find(|g| g.dev == m.dev() && g.ino == m.ino())
        .map(|g| g.path.clone())
}

/// Refuses an output that is the same file as a registered input (after symlinks, `.`
/// and `..`, and through hard links), or, for `-`, a standard output redirected into
/// one (`jitterlab report x.dat >> x.dat`). An output that does not exist yet is fine.
pub fn check_output(output: &Path) -> Result<(), SameFile> {
    let meta = if output.as_os_str() == "-" {
        // SAFETY: fstat of fd 1 into a zeroed stat; fails harmlessly when it is closed.
        let file = std::mem::ManuallyDrop::new(unsafe {
            <File as std::os::fd::FromRawFd>::from_raw_fd(libc::STDOUT_FILENO)
        });
        file.metadata().ok()
    } else {
        fs::metadata(output).ok()
    };
    match meta.as_ref().and_then(same_as_input) {
        Some(input) => Err(SameFile {
            output: output.to_path_buf(),
            input,
        }),
        None => Ok(()),
    }
}

/// Opens a FIFO or character device for writing, waiting at most `wait` for a FIFO's
/// reader; the error says what to do.
fn open_through(path: &Path, wait: Duration) -> io::Result<File> {
    let deadline = Instant::now() + wait;
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => {
                // Blocking writes from here on.
                let fd = f.as_raw_fd();
                // SAFETY: fcntl on an fd we own.
                let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
                if flags < 0
                    || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0
                {
                    return Err(io::Error::last_os_error());
                }
                return Ok(f);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::NotConnected,
                        format!(
                            "a FIFO with no reader (waited {} s); start its reader first (for example `cat {} > copy`), then run this again",
                            wait.as_secs(),
                            path.display()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// How the final OUTPUT is reached.
#[derive(Debug)]
enum Final {
    /// Renamed over (a regular file, or a new one).
    Rename(PathBuf),
    /// Copied into (a FIFO or character device, opened when the output was created).
    Through(File),
    /// Copied to standard output.
    Stdout,
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
    /// Prepares to write `output` (see the module's rules); the caller names `output` in
    /// its error (the temporary file's errors name the temporary file). An
    /// output that is one of the command's inputs is refused with a [`SameFile`]
    /// (`SameFile::of` finds it in the error).
    pub fn create(output: &Path) -> io::Result<OutputFile> {
        check_output(output).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let target = if output.as_os_str() == "-" {
            Final::Stdout
        } else {
            match fs::metadata(output) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    Final::Rename(output.to_path_buf())
                }
                Err(e) => return Err(e),
                Ok(m) if m.is_file() => Final::Rename(fs::canonicalize(output)?),
                Ok(m) if m.is_dir() => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "is a directory; expected a file to write",
                    ))
                }
                Ok(m) if m.file_type().is_block_device() => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "is a block device; refusing to write a trace or report over it",
                    ))
                }
                Ok(_) => Final::Through(open_through(output, FIFO_WAIT)?),
            }
        };
        let dir = match &target {
            Final::Rename(p) => p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            Final::Through(..) | Final::Stdout => std::env::temp_dir(),
        };
        let stem = match &target {
            Final::Stdout => "stdout".into(),
            _ => output
                .file_name()
                .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned()),
        };
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

    /// Whether OUTPUT is written through (a FIFO, a device or stdout) rather than
    /// replaced.
    pub fn is_through(&self) -> bool {
        !matches!(self.target, Final::Rename(_))
    }

    /// Whether OUTPUT is standard output (`-`).
    pub fn is_stdout(&self) -> bool {
        matches!(self.target, Final::Stdout)
    }

    /// Completes OUTPUT: renames the temporary file over it, or copies it into a
    /// non-regular OUTPUT (or stdout) and removes it. Returns the bytes written to
    /// OUTPUT.
    pub fn commit(mut self) -> io::Result<u64> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
        }
        let bytes = match &mut self.target {
            Final::Rename(path) => {
                let bytes = fs::metadata(&self.tmp)?.len();
                fs::rename(&self.tmp, &*path).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "cannot rename {} to {}: {e}",
                            self.tmp.display(),
                            path.display()
                        ),
                    )
                })?;
                bytes
            }
            Final::Through(out) => {
                let n = io::copy(&mut File::open(&self.tmp)?, out)?;
                out.flush()?;
                let _ = fs::remove_file(&self.tmp);
                n
            }
            Final::Stdout => {
                let stdout = io::stdout();
                let mut out = stdout.lock();
                let n = io::copy(&mut File::open(&self.tmp)?, &mut out)?;
                out.flush()?;
                let _ = fs::remove_file(&self.tmp);
                n
            }
        };
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
        assert_eq!(f.commit().unwrap(), 16, "the bytes the reader got");
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_by_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.dat");
        fs::write(&input, b"precious").unwrap();
        protect_input(&input);
        let link = dir.path().join("link.html");
        symlink(&input, &link).unwrap();
        let hard = dir.path().join("hard.dat");
        fs::hard_link(&input, &hard).unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        let dotted = dir.path().join("sub/../in.dat");
        for out in [&input, &link, &hard, &dotted] {
            let e = OutputFile::create(out).unwrap_err();
            let same = SameFile::of(&e).unwrap_or_else(|| panic!("{e}"));
            assert_eq!(same.input, input);
            assert!(e.to_string().contains("is the input"), "{e}");
        }
        assert_eq!(fs::read(&input).unwrap(), b"precious");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            4,
            "no temporary file either"
        );
        // Another file beside it is written as ever.
        let other = dir.path().join("out.html");
        let mut f = OutputFile::create(&other).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(f.commit().unwrap(), 1);
    }

    #[test]
    fn a_fifo_without_reader_is_refused_after_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = Instant::now();
        let e = open_through(&fifo, Duration::from_millis(200)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(e.to_string().contains("no reader"), "{e}");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = OutputFile::create(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
}
