//! Holding /dev/cpu_dma_latency at 0 keeps CPUs out of deep idle states while
//! the probe runs; the request lasts as long as the file is open.

use std::fs::{File, OpenOptions};
use std::io::Write;

/// The open request; dropping it ends it.
#[derive(Debug)]
pub struct DmaLatency {
    _file: File,
}

impl DmaLatency {
    /// Requests a 0 us wake-up latency from the PM QoS interface.
    pub fn hold_zero() -> std::io::Result<DmaLatency> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/cpu_dma_latency")?;
        file.write_all(&0i32.to_ne_bytes())?;
        Ok(DmaLatency { _file: file })
    }
}
