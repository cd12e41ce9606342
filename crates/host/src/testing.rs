//! Support for tests that change global host state (IRQ affinity, tracefs, cpusets,
//! workqueue masks): one lock shared by every test thread and test binary.

use std::fs::File;

/// An exclusive `flock` on a file in the temporary directory, held until dropped.
/// Every test that changes global host state takes it first, so that cargo's parallel
/// test threads and binaries never change the same state at once.
#[derive(Debug)]
pub struct HostLock {
    _file: File,
}

/// Waits for and takes the host lock.
pub fn host_lock() -> std::io::Result<HostLock> {
    let f = File::create(std::env::temp_dir().join("jitterlab-tests.lock"))?;
    // SAFETY: flock on an open descriptor.
    let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(HostLock { _file: f })
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
