//! What the kernel logs while something runs: the records `/dev/kmsg` hands out after
//! a point ([`KernelLog`]), those at warning level or worse.
//!
//! `/dev/kmsg` gives one record per `read`: `PRI,SEQ,TS_USEC,FLAGS[,...];MESSAGE`,
//! then continuation lines (` KEY=value`) that are not kept. `PRI` holds the facility
//! (`PRI >> 3`; 0 is the kernel's own) and the level (`PRI & 7`; 0 emergency ..
//! 4 warning .. 7 debug). Non-printable bytes of the message come escaped as `\xNN`.
//! A reader that falls behind the ring buffer gets `EPIPE` once and goes on with the
//! oldest record left (counted in [`KernelLog::lost`]).

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

use crate::Root;

/// The least severe level kept: warning.
pub const WARNING: u8 = 4;

/// One record of the kernel log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMessage {
    /// Its level: 0 (emergency) .. 7 (debug).
    pub level: u8,
    /// Its facility: 0 for the kernel's own, 1 (user) for what a process wrote to
    /// `/dev/kmsg`, ...
    pub facility: u8,
    /// When the kernel logged it, µs since boot (the monotonic clock).
    pub ts_us: u64,
    /// The message, as the kernel escaped it.
    pub text: String,
}

/// Parses one record (`PRI,SEQ,TS_USEC,FLAGS;MESSAGE`, continuation lines after it);
/// `None` for anything else.
pub fn parse_record(record: &[u8]) -> Option<KernelMessage> {
    let text = std::str::from_utf8(record).ok()?;
    let (head, rest) = text.split_once(';')?;
    let mut fields = head.split(',');
    let pri: u32 = fields.next()?.parse().ok()?;
    let _seq: u64 = fields.next()?.parse().ok()?;
    let ts_us: u64 = fields.next()?.parse().ok()?;
    let message = rest.split('\n').next().unwrap_or_default();
    Some(KernelMessage {
        level: (pri & 7) as u8,
        facility: u8::try_from(pri >> 3).unwrap_or(u8::MAX),
        ts_us,
        text: message.to_string(),
    })
}

/// The kernel log from the moment it was opened on.
pub struct KernelLog {
    file: File,
    /// Records the ring buffer overwrote before they were read (the `EPIPE`s).
    pub lost: u64,
}

impl KernelLog {
    /// Opens `/dev/kmsg` under `root`, past its last record. `None` where it cannot
    /// be read (not root, `dmesg_restrict`, a `--root` tree without it).
    pub fn open(root: &Root) -> Option<KernelLog> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(root.path("/dev/kmsg"))
            .ok()?;
        file.seek(SeekFrom::End(0)).ok()?;
        Some(KernelLog { file, lost: 0 })
    }

    /// The records logged since the last call (or the opening) at `max_level` or
    /// more severe, at most `limit` of them (the rest are read and dropped).
    pub fn read_new(&mut self, max_level: u8, limit: usize) -> Vec<KernelMessage> {
        let mut out = Vec::new();
        // A record is at most 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX).
        let mut buf = vec![0u8; 8192];
        loop {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(m) = parse_record(&buf[..n]) {
                        if m.level <= max_level && out.len() < limit {
                            out.push(m);
                        }
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => self.lost += 1,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // EAGAIN: nothing more; any other error ends the reading too.
                Err(_) => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_gives_its_level_facility_time_and_first_line() {
        let r = b"4,1234,98765432,-,caller=T12;BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 35s!\n SUBSYSTEM=cpu\n";
        let m = parse_record(r).unwrap();
        assert_eq!(m.level, 4);
        assert_eq!(m.facility, 0);
        assert_eq!(m.ts_us, 98_765_432);
        assert_eq!(
            m.text,
            "BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 35s!"
        );
        // Written by a process: facility user (1), level 3.
        let m = parse_record(b"11,7,5,-;hello\n").unwrap();
        assert_eq!((m.facility, m.level), (1, 3));
        for bad in [
            &b""[..],
            b"no semicolon",
            b"x,1,2,-;m",
            b"4,1;m",
            b"4,1,z,-;m",
        ] {
            assert_eq!(parse_record(bad), None, "{bad:?}");
        }
    }

    /// A message written to /dev/kmsg after the opening is read, one written before
    /// it is not, a less severe one is left out.
    #[test]
    fn the_log_gives_what_was_logged_since_it_opened() {
        if !crate::running_as_root() {
            crate::testing::skip("reading /dev/kmsg needs root");
            return;
        }
        let root = Root::live();
        let tag = format!("jitterlab-test-{}", std::process::id());
        let write = |line: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/kmsg")
                .unwrap();
            f.write_all(line.as_bytes()).unwrap();
        };
        write(&format!("<4>{tag} before\n"));
        let mut log = KernelLog::open(&root).expect("/dev/kmsg as root");
        write(&format!("<4>{tag} warning\n"));
        write(&format!("<6>{tag} info\n"));
        let ours: Vec<String> = log
            .read_new(WARNING, 100)
            .into_iter()
            .filter(|m| m.text.starts_with(&tag))
            .map(|m| m.text)
            .collect();
        assert_eq!(ours, [format!("{tag} warning")]);
        assert!(log
            .read_new(WARNING, 100)
            .iter()
            .all(|m| !m.text.starts_with(&tag)));
    }
}
