//! tracefs: where it is mounted, the recording session (an instance of our own with the
//! events enabled, restored on drop), the recorder that streams its pages, `record` (a
//! whole recording into a .dat file) and the trip wire that `latency --break` fires.

mod breaker;
mod record;
mod recorder;
mod session;

pub use breaker::Breaker;
pub use record::{events_of, record, Preset, RecordRequest};
pub use recorder::{RecordSummary, RecordedCpu, Recorder, Spool};
pub use session::{BufferStats, Formats, Headers, Session, SessionConfig};

use crate::cgroups::mounts;
use crate::error::{Error, Result};
use crate::root::Root;

/// The usual mount points, in the order the kernel documents them.
const USUAL: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Where tracefs is mounted (a host path), or `None` if it is not. Looks in
/// /proc/self/mountinfo first, then at the usual places.
pub fn find(root: &Root) -> Result<Option<String>> {
    if let Some(text) = root.read_opt("/proc/self/mountinfo")? {
        let path = root.path("/proc/self/mountinfo");
        let mut points = Vec::new();
        for m in mounts(&path, &text) {
            let m = m?;
            if m.fstype == "tracefs" && m.root == "/" {
                points.push(m.point.into_owned());
            }
        }
        points.sort_by_key(|p| USUAL.iter().position(|u| u == p).unwrap_or(USUAL.len()));
        if let Some(p) = points.into_iter().next() {
            return Ok(Some(p));
        }
    }
    Ok(USUAL
        .iter()
        .find(|p| root.exists(format!("{p}/trace_marker")))
        .map(|p| p.to_string()))
}

/// Finds tracefs, mounting it at /sys/kernel/tracing when it is not mounted and `root` is
/// the live system.
pub fn find_or_mount(root: &Root) -> Result<String> {
    if let Some(m) = find(root)? {
        return Ok(m);
    }
    if !root.is_live() {
        return Err(Error::Invalid(format!(
            "tracefs is not mounted under {}",
            root.path("/").display()
        )));
    }
    let target = c"/sys/kernel/tracing";
    // SAFETY: valid NUL-terminated strings; no data argument.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(Error::Sys {
            what: "mount -t tracefs nodev /sys/kernel/tracing".into(),
            cause: std::io::Error::last_os_error(),
        });
    }
    Ok(USUAL[0].to_string())
}
