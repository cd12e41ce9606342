//! The trip wire of `latency --break`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::root::Root;

/// One trace buffer the breaker stops: the top level or an instance.
#[derive(Debug)]
struct Buffer {
    name: String,
    marker: File,
    tracing_on: File,
}

/// Files opened before a latency run so that, at the first sample above the threshold,
/// the measuring thread writes `jitterlab: latency N us > US on cpu C` to each tracing
/// buffer's trace_marker and turns tracing off — two `write(2)`s per buffer, no
/// allocation, no path lookup. Buffers are the top level and every instance that was
/// tracing when the breaker was armed. Only the first [`Breaker::fire`] acts.
#[derive(Debug)]
pub struct Breaker {
    threshold_us: u64,
    buffers: Vec<Buffer>,
    fired: AtomicBool,
}

impl Breaker {
    /// Arms a breaker at `threshold_us` on the tracefs mounted at `mount` (a host path,
    /// see [`super::find`]).
    pub fn arm(root: &Root, mount: &str, threshold_us: u64) -> Result<Breaker> {
        let mut dirs = vec![("top".to_string(), mount.to_string())];
        let instances = format!("{mount}/instances");
        if root.exists(&instances) {
            for name in root.list_dir(&instances)? {
                let dir = format!("{instances}/{name}");
                if root.read_line_opt(format!("{dir}/tracing_on"))?.as_deref() == Some("1") {
                    dirs.push((format!("instances/{name}"), dir));
                }
            }
        }
        let open = |p: PathBuf| -> Result<File> {
            OpenOptions::new()
                .write(true)
                .open(&p)
                .map_err(|e| Error::io(p, e))
        };
        let buffers = dirs
            .into_iter()
            .map(|(name, dir)| {
                Ok(Buffer {
                    name,
                    marker: open(root.path(format!("{dir}/trace_marker")))?,
                    tracing_on: open(root.path(format!("{dir}/tracing_on")))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Breaker {
            threshold_us,
            buffers,
            fired: AtomicBool::new(false),
        })
    }

    /// The threshold, us.
    pub fn threshold_us(&self) -> u64 {
        self.threshold_us
    }

    /// The buffers it stops: `top`, `instances/NAME`.
    pub fn buffers(&self) -> Vec<&str> {
        self.buffers.iter().map(|b| b.name.as_str()).collect()
    }

    /// Writes the marker and turns tracing off in every buffer, once. Returns false if it
    /// had already fired. Errors are ignored: this runs in the measuring thread, which
    /// must not stop on them; [`Breaker::fired`] tells the caller it ran.
    pub fn fire(&self, latency_ns: u64, cpu: u32) -> bool {
        if self.fired.swap(true, Ordering::SeqCst) {
            return false;
        }
        let mut buf = [0u8; 128];
        let len = {
            let mut w = &mut buf[..];
            let _ = writeln!(
                w,
                "jitterlab: latency {} us > {} us on cpu {} ({} ns)",
                latency_ns / 1000,
                self.threshold_us,
                cpu,
                latency_ns
            );
            128 - w.len()
        };
        for b in &self.buffers {
            let _ = (&b.marker).write(&buf[..len]);
        }
        for b in &self.buffers {
            let _ = (&b.tracing_on).write(b"0");
        }
        true
    }

    /// Whether [`Breaker::fire`] has run.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}
