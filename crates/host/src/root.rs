//! The root path every /proc and /sys read and write goes through.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use jitterlab_cpuset::CpuSet;

use crate::error::{Error, Result};

/// A view of the system's files from a root directory: `/` on the live host, or
/// a fixture tree copied from a machine (`tests/fixtures/...`) in tests.
///
/// Paths given to its methods are absolute host paths such as `/proc/interrupts`;
/// they are looked up below the root.
#[derive(Clone, Debug)]
pub struct Root {
    base: PathBuf,
}

impl Root {
    /// The live host.
    pub fn live() -> Root {
        Root {
            base: PathBuf::from("/"),
        }
    }

    /// A tree below `base`, laid out like `/`.
    pub fn at(base: impl Into<PathBuf>) -> Root {
        Root { base: base.into() }
    }

    /// Whether this is the live host's `/`.
    pub fn is_live(&self) -> bool {
        self.base == Path::new("/")
    }

    /// The real path of a host path.
    pub fn path(&self, host_path: impl AsRef<Path>) -> PathBuf {
        let p = host_path.as_ref();
        self.base.join(p.strip_prefix("/").unwrap_or(p))
    }

    /// Reads a whole file as text, at most [`READ_LIMIT`] bytes ([`Root::read_bounded`]).
    /// Bytes that are not UTF-8 (a thread may name itself with any byte) become U+FFFD
    /// rather than an error.
    pub fn read(&self, host_path: impl AsRef<Path>) -> Result<String> {
        self.read_bounded(host_path, READ_LIMIT)
    }

    /// Reads a whole file as text through [`read_file_bounded`]: a regular file of at
    /// most `limit` bytes. Bytes that are not UTF-8 become U+FFFD.
    pub fn read_bounded(&self, host_path: impl AsRef<Path>, limit: u64) -> Result<String> {
        let bytes = self.read_bytes_bounded(host_path, limit)?;
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Ok(lossy(e.as_bytes())),
        }
    }

    /// Reads a whole file's bytes, at most [`READ_LIMIT`] of them.
    pub fn read_bytes(&self, host_path: impl AsRef<Path>) -> Result<Vec<u8>> {
        self.read_bytes_bounded(host_path, READ_LIMIT)
    }

    /// Reads a whole file's bytes through [`read_file_bounded`].
    pub fn read_bytes_bounded(&self, host_path: impl AsRef<Path>, limit: u64) -> Result<Vec<u8>> {
        read_file_bounded(&self.path(host_path), limit)
    }

    /// Reads a file, or `None` when it does not exist (an optional kernel feature).
    pub fn read_opt(&self, host_path: impl AsRef<Path>) -> Result<Option<String>> {
        match self.read(host_path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a one-line file, trimmed.
    pub fn read_line(&self, host_path: impl AsRef<Path>) -> Result<String> {
        Ok(self.read(host_path)?.trim().to_string())
    }

    /// Reads a one-line file, trimmed, or `None` when it does not exist.
    pub fn read_line_opt(&self, host_path: impl AsRef<Path>) -> Result<Option<String>> {
        Ok(self.read_opt(host_path)?.map(|s| s.trim().to_string()))
    }

    /// Reads a one-line file that holds a CPU list (`0-3,8`). `(null)`, which
    /// kernels with CONFIG_CPUMASK_OFFSTACK print for an unallocated mask (such
    /// as `nohz_full` when the option is not given), is the empty set.
    pub fn read_cpu_list(&self, host_path: impl AsRef<Path>) -> Result<CpuSet> {
        let host_path = host_path.as_ref();
        let text = self.read(host_path)?;
        if text.trim() == "(null)" {
            return Ok(CpuSet::new());
        }
        CpuSet::parse_list(&text).map_err(|source| Error::CpuSet {
            path: self.path(host_path),
            cause: source,
        })
    }

    /// Reads a one-line file that holds a CPU mask (`ff,ffffffff`).
    pub fn read_cpu_mask(&self, host_path: impl AsRef<Path>) -> Result<CpuSet> {
        let host_path = host_path.as_ref();
        let text = self.read(host_path)?;
        CpuSet::parse_mask(&text).map_err(|source| Error::CpuSet {
            path: self.path(host_path),
            cause: source,
        })
    }

    /// Reads a CPU mask file, or `None` when it does not exist.
    pub fn read_cpu_mask_opt(&self, host_path: impl AsRef<Path>) -> Result<Option<CpuSet>> {
        match self.read_cpu_mask(host_path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a CPU list file, or `None` when it does not exist.
    pub fn read_cpu_list_opt(&self, host_path: impl AsRef<Path>) -> Result<Option<CpuSet>> {
        match self.read_cpu_list(host_path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a one-line file holding a number, or `None` when it does not exist.
    pub fn read_num_opt<T: std::str::FromStr>(
        &self,
        host_path: impl AsRef<Path>,
    ) -> Result<Option<T>> {
        let host_path = host_path.as_ref();
        let Some(text) = self.read_opt(host_path)? else {
            return Ok(None);
        };
        let text = text.trim();
        text.parse()
            .map(Some)
            .map_err(|_| Error::parse(self.path(host_path), 1, "a number", text))
    }

    /// Reads a one-line file holding a flag the kernel prints as `0` or `1`, or `None`
    /// when it does not exist; anything else is an error.
    pub fn read_flag_opt(&self, host_path: impl AsRef<Path>) -> Result<Option<bool>> {
        let host_path = host_path.as_ref();
        match self.read_line_opt(host_path)?.as_deref() {
            None => Ok(None),
            Some("0") => Ok(Some(false)),
            Some("1") => Ok(Some(true)),
            Some(other) => Err(Error::parse(self.path(host_path), 1, "0 or 1", other)),
        }
    }

    /// The names in a directory, sorted; an absent directory is empty.
    pub fn list_dir(&self, host_path: impl AsRef<Path>) -> Result<Vec<String>> {
        let path = self.path(host_path);
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(path, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&path, e))?;
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// The numeric names in a directory (`/proc`, `/proc/irq`), ascending.
    pub fn list_numeric(&self, host_path: impl AsRef<Path>) -> Result<Vec<u32>> {
        let mut nums: Vec<u32> = self
            .list_dir(host_path)?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        nums.sort_unstable();
        Ok(nums)
    }

    /// The text of a symbolic link (`/proc/self/ns/pid` reads `pid:[4026531836]`), or
    /// `None` when there is no such link or it cannot be read (another process's
    /// namespaces need ptrace rights). A fixture tree keeps such links as symlinks whose
    /// target is that text.
    pub fn read_link_opt(&self, host_path: impl AsRef<Path>) -> Option<String> {
        fs::read_link(self.path(host_path))
            .ok()
            .map(|t| t.to_string_lossy().into_owned())
    }

    /// Whether a host path exists.
    pub fn exists(&self, host_path: impl AsRef<Path>) -> bool {
        self.path(host_path).exists()
    }

    /// Writes `value` to an existing sysfs/procfs file in one `write(2)`, opened
    /// as a shell's `echo value > file` opens it (never created).
    pub fn write(&self, host_path: impl AsRef<Path>, value: &str) -> Result<()> {
        let path = self.path(host_path);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        file.write_all(value.as_bytes())
            .map_err(|e| Error::io(&path, e))
    }
}

/// The most [`Root::read`] reads of one file: 32 MiB. The largest /proc and /sys files
/// jitterlab reads are `/proc/interrupts` and `/proc/softirqs` (11 bytes per CPU and
/// row: about 11 MiB for 1,000 IRQs on 1,024 CPUs); a task's files are a few KiB.
pub const READ_LIMIT: u64 = 32 << 20;

/// The most read of `/proc/kallsyms` (a recording's symbol table: some 10 MiB on a
/// distribution kernel with its modules): 256 MiB.
pub const KALLSYMS_LIMIT: u64 = 256 << 20;

/// Reads a whole /proc, /sys or tracefs file: the one reader behind every read of the
/// host's files.
///
/// - Only a regular file is read (a link is followed): the kernel's pseudo-files are
///   regular files, though their size in `stat` is 0 or 4096 and says nothing. A FIFO
///   (which would block forever), a device (`/dev/zero` never ends), a socket or a
///   directory is refused with [`Error::NotRegular`], before and after opening (opened
///   with `O_NONBLOCK`, so that a file swapped for a FIFO in between cannot block).
/// - At most `limit` bytes are read; a longer file is [`Error::TooLarge`], naming the
///   file and the bound, and never more than `limit` plus one read is held.
/// - Reads are of 64 KiB: tracefs's `events/header_page` and `header_event` answer only
///   the first `read(2)` (a second at a non-zero offset returns 0), so the first read
///   must hold all of it — `std::fs::read` starts with a 32-byte probe.
pub fn read_file_bounded(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let meta = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    check_regular(path, &meta.file_type())?;
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    check_regular(path, &meta.file_type())?;
    // The size a regular file states, when within the bound, is allocated at once (a
    // doubling Vec would hold twice a file just past a power of two); /proc files state 0.
    let mut out = Vec::with_capacity(if meta.len() <= limit {
        meta.len() as usize
    } else {
        0
    });
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => {
                if (out.len() + n) as u64 > limit {
                    return Err(Error::TooLarge {
                        path: path.to_path_buf(),
                        limit,
                    });
                }
                out.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
}

/// `String::from_utf8_lossy`, in a string allocated at its exact size: that one grows by
/// doubling, so 16 MiB of bytes that are not UTF-8 (up to 3 bytes of U+FFFD each) took
/// 64 MiB.
fn lossy(bytes: &[u8]) -> String {
    let size: usize = bytes
        .utf8_chunks()
        .map(|c| c.valid().len() + if c.invalid().is_empty() { 0 } else { 3 })
        .sum();
    let mut s = String::with_capacity(size);
    for c in bytes.utf8_chunks() {
        s.push_str(c.valid());
        if !c.invalid().is_empty() {
            s.push(char::REPLACEMENT_CHARACTER);
        }
    }
    s
}

fn check_regular(path: &Path, t: &fs::FileType) -> Result<()> {
    if t.is_file() {
        return Ok(());
    }
    let kind = if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    };
    Err(Error::NotRegular {
        path: path.to_path_buf(),
        kind,
    })
}

/// Whether this process runs as root (effective uid 0): what writing /proc/irq,
/// cgroups and tracefs, and SCHED_FIFO, need.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
