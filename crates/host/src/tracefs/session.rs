//! A recording session: a tracefs instance of our own, the events enabled in it, and
//! everything it changed undone when it ends (also on error and on drop).
//!
//! Working in an instance (`instances/jitterlab-PID`) leaves the top-level buffer, its
//! events, its size and its `tracing_on` as they were; ending the session disables the
//! events and removes the instance. The only global file it may change is
//! `saved_cmdlines_size` (so that task names survive), restored at the end. An instance
//! left behind by a session that was killed is removed by the next session.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

use jitterlab_cpuset::CpuSet;

use crate::error::{Error, Result};
use crate::root::Root;

/// Prefix of the instances sessions create; the suffix is the creating process's pid.
pub const INSTANCE_PREFIX: &str = "jitterlab-";

/// What to record.
#[derive(Clone, Debug, Default)]
pub struct SessionConfig {
    /// Events as `system:event`, or `system` / `system:*` for all of a system.
    pub events: Vec<String>,
    /// Trace only these CPUs (`tracing_cpumask`); all when `None`.
    pub cpus: Option<CpuSet>,
    /// Per-CPU ring-buffer size in KiB; the kernel's default when `None`.
    pub buffer_kb: Option<u64>,
    /// Overwrite the oldest events when the buffer is full (a flight recorder) instead of
    /// dropping the newest.
    pub overwrite: bool,
    /// Keep at least this many task names in `saved_cmdlines` while recording.
    pub saved_cmdlines: Option<u32>,
    /// The instance's trace clock (`mono`, ...), when the kernel offers it (see
    /// `trace_clock`); the kernel's default (`local`) when `None` or not offered.
    pub clock: Option<String>,
}

/// Named format files: (event name, format text).
pub type Formats = Vec<(String, Vec<u8>)>;

/// The files a .dat header needs, read from tracefs and procfs.
#[derive(Clone, Debug, Default)]
pub struct Headers {
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format`: (event name, format text).
    pub ftrace_formats: Formats,
    /// The formats of the enabled events: (system, [(event name, format text)]).
    pub event_formats: Vec<(String, Formats)>,
    /// `/proc/kallsyms` (empty when unreadable).
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk_formats: Vec<u8>,
    /// The page size of the ring buffer (`buffer_subbuf_size_kb`, else the system page).
    pub page_size: usize,
    /// `trace_clock`'s selected clock (`local`, `mono`, ...).
    pub clock: String,
    /// `uname -srvm` of this machine.
    pub uname: String,
}

/// One CPU's `per_cpu/cpuN/stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Events in the buffer.
    pub entries: u64,
    /// Events overwritten (overwrite mode) before they were read.
    pub overrun: u64,
    /// Events lost because a nested write ran over the commit page.
    pub commit_overrun: u64,
    /// Events dropped because the buffer was full (no-overwrite mode).
    pub dropped_events: u64,
    /// Events read so far.
    pub read_events: u64,
}

/// A live recording session; see the module documentation.
#[derive(Debug)]
pub struct Session {
    root: Root,
    /// Host path of the tracefs mount.
    mount: String,
    /// Host path of the instance directory.
    dir: String,
    /// The events enabled, as enable-file host paths.
    enabled: Vec<String>,
    /// Global files changed: (host path, old value).
    restore: Vec<(String, String)>,
    cpus: Vec<u32>,
    online: CpuSet,
    closed: bool,
}

/// `sched:sched_switch` -> `events/sched/sched_switch`; `sched`, `sched:*` -> `events/sched`.
fn event_dir(spec: &str) -> Result<String> {
    let bad = || {
        Error::Invalid(format!(
            "event {spec:?}: expected SYSTEM:EVENT, SYSTEM:* or SYSTEM (e.g. sched:sched_switch)"
        ))
    };
    let (system, event) = match spec.split_once(':') {
        Some((s, "*")) => (s, None),
        Some((s, e)) => (s, Some(e)),
        None => (spec, None),
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !ok(system) || event.is_some_and(|e| !ok(e)) {
        return Err(bad());
    }
    Ok(match event {
        Some(e) => format!("events/{system}/{e}"),
        None => format!("events/{system}"),
    })
}

impl Session {
    /// Creates the instance and enables the events, with tracing on.
    pub fn start(root: &Root, config: &SessionConfig) -> Result<Session> {
        let mount = super::find_or_mount(root)?;
        remove_stale_instances(root, &mount)?;
        let name = format!("{INSTANCE_PREFIX}{}", std::process::id());
        let dir = format!("{mount}/instances/{name}");
        let path = root.path(&dir);
        std::fs::create_dir(&path).map_err(|e| Error::io(&path, e))?;
        let online = root.read_cpu_list("/sys/devices/system/cpu/online")?;
        let cpus = config.cpus.clone().unwrap_or_else(|| online.clone());
        let mut session = Session {
            root: root.clone(),
            mount: mount.clone(),
            dir,
            enabled: Vec::new(),
            restore: Vec::new(),
            cpus: cpus.iter().collect(),
            online: online.clone(),
            closed: false,
        };
        // From here on, dropping the session undoes what was done.
        session.write("tracing_on", "0")?;
        if let Some(kb) = config.buffer_kb {
            session.write("buffer_size_kb", &kb.to_string())?;
        }
        if let Some(set) = &config.cpus {
            let offline = set.difference(&online);
            if !offline.is_empty() {
                return Err(Error::Invalid(format!(
                    "CPU {offline} is not online (online: {online})"
                )));
            }
            session.write("tracing_cpumask", &set.to_mask_string())?;
        }
        if let Some(clock) = &config.clock {
            // Set before any event is enabled: a change of clock empties the buffer.
            let offered = root.read_line(format!("{}/trace_clock", session.dir))?;
            if offered
                .split_whitespace()
                .any(|c| c.trim_matches(['[', ']']) == clock)
            {
                session.write("trace_clock", clock)?;
            }
        }
        session.write(
            "options/overwrite",
            if config.overwrite { "1" } else { "0" },
        )?;
        // Best effort: older kernels have no per-instance record-tgid.
        let _ = session.write("options/record-tgid", "1");
        if let Some(n) = config.saved_cmdlines {
            let file = format!("{mount}/saved_cmdlines_size");
            if let Some(old) = root.read_line_opt(&file)? {
                if old.parse::<u32>().is_ok_and(|o| o < n) {
                    root.write(&file, &n.to_string())?;
                    session.restore.push((file, old));
                }
            }
        }
        for spec in &config.events {
            let enable = format!("{}/{}/enable", session.dir, event_dir(spec)?);
            if !root.exists(&enable) {
                return Err(Error::Invalid(format!(
                    "no event {spec:?} in this kernel (see {mount}/available_events)"
                )));
            }
            root.write(&enable, "1")?;
            session.enabled.push(enable);
        }
        session.write("tracing_on", "1")?;
        Ok(session)
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        self.root.write(format!("{}/{file}", self.dir), value)
    }

    /// The instance's directory (host path).
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The traced CPUs.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The CPUs online when the session started.
    pub fn online(&self) -> &CpuSet {
        &self.online
    }

    /// Turns tracing on or off in the instance (events stay enabled).
    pub fn set_tracing(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// Whether the instance is tracing (`latency --break` turns it off).
    pub fn tracing(&self) -> Result<bool> {
        Ok(self
            .root
            .read_line(format!("{}/tracing_on", self.dir))?
            .trim()
            == "1")
    }

    /// Opens `per_cpu/cpuN/trace_pipe_raw` for non-blocking reads of whole ring-buffer
    /// pages (reading consumes them).
    pub fn raw_pipe(&self, cpu: u32) -> Result<File> {
        let path = self
            .root
            .path(format!("{}/per_cpu/cpu{cpu}/trace_pipe_raw", self.dir));
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| Error::io(&path, e))
    }

    /// `per_cpu/cpuN/stats`.
    pub fn buffer_stats(&self, cpu: u32) -> Result<BufferStats> {
        let file = format!("{}/per_cpu/cpu{cpu}/stats", self.dir);
        let text = self.root.read(&file)?;
        parse_buffer_stats(&self.root.path(&file), &text)
    }

    /// Everything a .dat header needs. Formats are those of the enabled events (all of a
    /// system's when a whole system was enabled) and of the ftrace events.
    pub fn headers(&self) -> Result<Headers> {
        let root = &self.root;
        let read_bytes = |p: &str| -> Result<Vec<u8>> { root.read_bytes(p) };
        let events = format!("{}/events", self.dir);
        let formats_of = |system: &str| -> Result<Formats> {
            let mut out = Vec::new();
            for name in root.list_dir(format!("{events}/{system}"))? {
                let f = format!("{events}/{system}/{name}/format");
                if root.exists(&f) {
                    out.push((name, read_bytes(&f)?));
                }
            }
            Ok(out)
        };
        let mut event_formats: Vec<(String, Formats)> = Vec::new();
        for enable in &self.enabled {
            let rel = enable
                .strip_prefix(&format!("{events}/"))
                .and_then(|r| r.strip_suffix("/enable"))
                .unwrap_or_default();
            let (system, event) = match rel.split_once('/') {
                Some((s, e)) => (s, Some(e)),
                None => (rel, None),
            };
            let list = match event {
                Some(e) => vec![(
                    e.to_string(),
                    read_bytes(&format!("{events}/{system}/{e}/format"))?,
                )],
                None => formats_of(system)?,
            };
            match event_formats.iter_mut().find(|(s, _)| s == system) {
                Some((_, have)) => {
                    for (n, f) in list {
                        if !have.iter().any(|(h, _)| *h == n) {
                            have.push((n, f));
                        }
                    }
                }
                None => event_formats.push((system.to_string(), list)),
            }
        }
        let mount = &self.mount;
        let page_size = root
            .read_num_opt::<usize>(format!("{}/buffer_subbuf_size_kb", self.dir))?
            .map(|kb| kb * 1024)
            // SAFETY: sysconf has no preconditions.
            .unwrap_or_else(|| unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize);
        let clock_line = root.read_line(format!("{}/trace_clock", self.dir))?;
        let clock = clock_line
            .split_whitespace()
            .find_map(|c| c.strip_prefix('[').and_then(|c| c.strip_suffix(']')))
            .unwrap_or("local")
            .to_string();
        Ok(Headers {
            header_page: read_bytes(&format!("{events}/header_page"))?,
            header_event: read_bytes(&format!("{events}/header_event"))?,
            ftrace_formats: formats_of("ftrace")?,
            event_formats,
            kallsyms: root
                .read_bytes_bounded("/proc/kallsyms", crate::root::KALLSYMS_LIMIT)
                .unwrap_or_default(),
            printk_formats: read_bytes(&format!("{mount}/printk_formats")).unwrap_or_default(),
            page_size,
            clock,
            uname: uname(),
        })
    }

    /// `saved_cmdlines` and `saved_tgids` as they are now (read them at the end).
    pub fn task_names(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let mount = &self.mount;
        let read = |f: &str| -> Vec<u8> {
            self.root
                .read_bytes(format!("{mount}/{f}"))
                .unwrap_or_default()
        };
        Ok((read("saved_cmdlines"), read("saved_tgids")))
    }

    /// Ends the session: tracing off, events disabled, the instance removed, global files
    /// restored. Reports the first failure but attempts every step.
    pub fn close(mut self) -> Result<()> {
        self.undo()
    }

    fn undo(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut first: Option<Error> = None;
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        };
        note(self.write("tracing_on", "0"));
        for enable in self.enabled.iter().rev() {
            note(self.root.write(enable, "0"));
        }
        for (file, old) in self.restore.iter().rev() {
            note(self.root.write(file, old));
        }
        let path = self.root.path(&self.dir);
        note(std::fs::remove_dir(&path).map_err(|e| Error::io(&path, e)));
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}

/// `uname -srvm`-like text, as a .dat header records the machine.
fn uname() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.version),
        field(&u.machine)
    )
}

/// Removes `instances/jitterlab-PID` directories whose process is gone (a session that
/// was killed before it could clean up).
fn remove_stale_instances(root: &Root, mount: &str) -> Result<()> {
    let dir = format!("{mount}/instances");
    if !root.exists(&dir) {
        return Ok(());
    }
    for name in root.list_dir(&dir)? {
        let Some(pid) = name
            .strip_prefix(INSTANCE_PREFIX)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !root.exists(format!("/proc/{pid}")) {
            let path = root.path(format!("{dir}/{name}"));
            // Events left enabled do not prevent removal; tracing_on off first anyway.
            let _ = root.write(format!("{dir}/{name}/tracing_on"), "0");
            std::fs::remove_dir(&path).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

/// Parses `per_cpu/cpuN/stats` (`entries: 0`, `overrun: 0`, `commit overrun: 0`, ...).
pub(crate) fn parse_buffer_stats(path: &std::path::Path, text: &str) -> Result<BufferStats> {
    let mut s = BufferStats::default();
    for (i, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.trim() {
            "entries" => &mut s.entries,
            "overrun" => &mut s.overrun,
            "commit overrun" => &mut s.commit_overrun,
            "dropped events" => &mut s.dropped_events,
            "read events" => &mut s.read_events,
            _ => continue,
        };
        *slot = value
            .trim()
            .parse()
            .map_err(|_| Error::parse(path, i + 1, "a count", line))?;
    }
    Ok(s)
}
