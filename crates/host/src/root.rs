//! The root path every /proc and /sys read and write goes through.

use std::fs;
use std::io::{self, Write};
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

    /// Reads a whole file as text. Bytes that are not UTF-8 (a thread may name
    /// itself with any byte) become U+FFFD rather than an error.
    pub fn read(&self, host_path: impl AsRef<Path>) -> Result<String> {
        let path = self.path(host_path);
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Ok(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        }
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

/// Whether this process runs as root (effective uid 0): what writing /proc/irq,
/// cgroups and tracefs, and SCHED_FIFO, need.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
