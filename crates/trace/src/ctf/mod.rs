//! CTF 1.8 traces, as LTTng writes them: a folder with a `metadata` file (TSDL text,
//! plain or packetized) and one stream file per CPU and channel (`channel0_0`, ...).
//!
//! A [`CtfTrace`] is opened from the folder ([`CtfTrace::open`], the stream files
//! memory-mapped) or from bytes ([`CtfTrace::from_parts`]). Its metadata is read whole
//! when it is opened: the types of the packet header and context, of the event headers
//! (LTTng's compact and large ones: a 5-bit or 16-bit id whose last value escapes to an
//! extended 32-bit id and 64-bit timestamp), of the contexts and of every event's fields,
//! with integers of any size from 1 to 64 bits, either byte order, enumerations,
//! strings, structures, arrays, sequences and variants.
//!
//! [`CtfTrace::events`] merges the stream files in timestamp order (a heap over the
//! files, one decoded event ahead in each) and maps LTTng's kernel events to the typed
//! [`crate::EventKind`]s (see [`lttng`](self) for LTTng's differences from ftrace: `tid`
//! for `pid`, priorities less 100, its own `prev_state`); every other event is
//! [`crate::EventKind::Other`] with its fields. Timestamps are ns since the epoch: the
//! clock's `offset_s` and `offset` applied, as `babeltrace2` prints them. Each rise of a
//! packet's `events_discarded` is an [`crate::EventKind::Lost`] at the start of that
//! packet, counted in [`crate::ReadStats::lost`]. [`CtfTrace::raw_events`] gives every
//! event's decoded fields as the metadata declares them ([`RawValue`]).
//!
//! [`CtfTrace::write_dat`] writes the trace as a trace-cmd .dat (system [`DAT_SYSTEM`]),
//! which the .dat reader reads back with the same typed events.
//!
//! Not read: CTF 2 (JSON metadata), floating-point numbers other than binary32 and
//! binary64, compressed or encrypted metadata packets, LTTng's user-space (`ust/`)
//! traces (their events are not the kernel's), and the trace's `index/` files (not
//! needed: packets are read in order).
//!
//! ```no_run
//! use jitterlab_trace::ctf::CtfTrace;
//! use jitterlab_trace::EventSource;
//!
//! let trace = CtfTrace::open("lttng-traces/session/kernel", false)?;
//! let mut events = trace.events()?;
//! while let Some(ev) = events.next_event()? {
//!     println!("{} {} {}", ev.ts, ev.cpu, ev.kind.name());
//! }
//! # Ok::<(), jitterlab_trace::Error>(())
//! ```

mod decode;
mod events;
mod lex;
pub(crate) mod lttng;
mod raw;
mod resolve;
mod stream;
mod to_dat;
mod tsdl;
mod types;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use events::CtfEvents;
pub use lex::is_metadata;
pub use raw::{RawEvent, RawEvents, RawValue};
pub(crate) use to_dat::{env_text, parse_env};
pub use to_dat::{DatConversion, DAT_SYSTEM};
pub use tsdl::{Clock, EnvValue};

use crate::{Comm, Error, ErrorKind, Location, Result, Text, TraceMeta};
use tsdl::{EventClass, Metadata};
use types::{ClockRef, Type};

/// The packet header fields the reader reads, by index.
#[derive(Clone, Debug, Default)]
pub(crate) struct HeaderFields {
    magic: Option<usize>,
    uuid: Option<usize>,
    stream_id: Option<usize>,
}

/// A stream class ready to read: its types and where its packet context's fields are.
#[derive(Debug)]
pub(crate) struct StreamInfo {
    pub id: u64,
    pub packet_context: Option<Type>,
    pub event_header: Option<Type>,
    pub event_context: Option<Type>,
    content_size: Option<usize>,
    packet_size: Option<usize>,
    timestamp_begin: Option<usize>,
    /// Its index and its size in bits (the count wraps there).
    events_discarded: Option<(usize, u8)>,
    cpu_id: Option<usize>,
    /// The clock of its timestamps.
    clock: Option<usize>,
    /// The `tid` (or `vtid`) of its event context, when LTTng added that context.
    pub tid: Option<usize>,
    events: Vec<EventInfo>,
    /// Event index + 1 by id, for ids below 65536; 0: none.
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
}

impl StreamInfo {
    /// The event class of `id`.
    pub(crate) fn event(&self, id: u64) -> Option<&EventInfo> {
        let i = match usize::try_from(id).ok().and_then(|i| self.dense.get(i)) {
            Some(&i) => i,
            None => self.sparse.get(&id).copied().unwrap_or(0),
        };
        self.events.get((i as usize).checked_sub(1)?)
    }
}

/// An event class ready to read.
#[derive(Debug)]
pub(crate) struct EventInfo {
    pub class: EventClass,
    /// The payload's size when it never varies (skipped at once when not wanted).
    pub fixed_bits: Option<u64>,
    /// Its top-level field names, without the leading underscore.
    pub names: Vec<Text>,
    pub plan: lttng::Plan,
    pub statedump: Option<lttng::Statedump>,
    /// The `tid` (or `vtid`) of its own context.
    pub tid: Option<usize>,
}

/// The metadata, settled and indexed for reading.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub meta: Metadata,
    pub header: HeaderFields,
    pub streams: Vec<StreamInfo>,
    pub flavor: lttng::Flavor,
}

impl Compiled {
    fn new(name: &str, metadata: &[u8]) -> Result<Compiled> {
        let text = lex::metadata_text(name, metadata)?;
        let mut meta = tsdl::parse(name, &text)?;
        resolve::settle(name, &mut meta)?;
        let top = |t: &Option<Type>, n: &str| t.as_ref().and_then(|t| t.field(n)).map(|f| f.0);
        let header = HeaderFields {
            magic: top(&meta.packet_header, "magic"),
            uuid: meta
                .packet_header
                .as_ref()
                .and_then(|t| t.field("uuid"))
                .filter(|(_, t)| matches!(t, Type::Array { len: 16, elem } if elem.int().is_some_and(|i| i.size == 8)))
                .map(|f| f.0),
            stream_id: top(&meta.packet_header, "stream_id"),
        };
        let flavor = lttng::Flavor::of(&meta);
        let single_clock = (meta.clocks.len() == 1).then_some(0);
        let mut streams = Vec::new();
        for s in std::mem::take(&mut meta.streams) {
            let pc = &s.packet_context;
            let events_discarded = pc
                .as_ref()
                .and_then(|t| t.field("events_discarded"))
                .and_then(|(i, t)| Some((i, t.int()?.size)));
            let clock = [&s.event_header, &s.packet_context]
                .into_iter()
                .flatten()
                .find_map(clock_of)
                .or(single_clock);
            let tid = tid_of(&s.event_context);
            let mut events: Vec<EventInfo> = s
                .events
                .into_values()
                .map(|class| {
                    let fields = class.fields.as_ref();
                    EventInfo {
                        fixed_bits: fields.and_then(Type::fixed_bits),
                        names: match fields {
                            Some(Type::Struct(st)) => {
                                st.fields.iter().map(|f| f.name.clone()).collect()
                            }
                            _ => Vec::new(),
                        },
                        plan: lttng::plan(&class.name, fields),
                        statedump: lttng::statedump(&class.name, fields),
                        tid: tid_of(&class.context),
                        class,
                    }
                })
                .collect();
            events.sort_by_key(|e| e.class.id);
            let mut dense = Vec::new();
            let mut sparse = HashMap::new();
            for (i, e) in events.iter().enumerate() {
                if e.class.id < 1 << 16 {
                    let id = e.class.id as usize;
                    if dense.len() <= id {
                        dense.resize(id + 1, 0);
                    }
                    dense[id] = i as u32 + 1;
                } else {
                    sparse.insert(e.class.id, i as u32 + 1);
                }
            }
            streams.push(StreamInfo {
                id: s.id,
                content_size: top(pc, "content_size"),
                packet_size: top(pc, "packet_size"),
                timestamp_begin: top(pc, "timestamp_begin"),
                events_discarded,
                cpu_id: top(pc, "cpu_id"),
                clock,
                tid,
                packet_context: s.packet_context,
                event_header: s.event_header,
                event_context: s.event_context,
                events,
                dense,
                sparse,
            });
        }
        Ok(Compiled {
            meta,
            header,
            streams,
            flavor,
        })
    }

    /// ns since the epoch at `cycles` of stream `s`'s clock.
    pub(crate) fn ns(&self, s: usize, cycles: u64) -> u64 {
        match self
            .streams
            .get(s)
            .and_then(|s| s.clock)
            .and_then(|c| self.meta.clocks.get(c))
        {
            Some(c) => c.ns(cycles),
            None => cycles,
        }
    }
}

/// The clock the first clock-mapped integer of `t` maps to.
fn clock_of(t: &Type) -> Option<usize> {
    let mut found = None;
    let mut t = t.clone();
    t.walk_mut(&mut |n| {
        if let Some(ClockRef::Index(c)) = n.int().and_then(|i| i.clock.as_ref()) {
            found = found.or(Some(*c));
        }
    });
    found
}

/// The index of a context's `tid` field (else `vtid`), when it is an integer.
fn tid_of(ctx: &Option<Type>) -> Option<usize> {
    let ctx = ctx.as_ref()?;
    ["tid", "vtid"]
        .into_iter()
        .find_map(|n| ctx.field(n).filter(|(_, t)| t.is_int()).map(|f| f.0))
}

/// A stream file's bytes.
enum Bytes {
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Vec(v) => v,
        }
    }
}

/// One stream file.
struct StreamFile {
    name: String,
    bytes: Bytes,
    /// The number its name ends with (`channel0_3`: 3), the CPU when packets do not say.
    cpu: u32,
}

/// What the statedump and the first switches of a trace say (one pass, made when first
/// asked for).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scan {
    names: HashMap<i32, Comm>,
    tgids: HashMap<i32, i32>,
    irqs: HashMap<u32, Text>,
    /// The task running on each CPU when its events start: the `prev_tid` of its first
    /// sched_switch.
    first: HashMap<u32, i32>,
}

/// An LTTng (CTF 1.8) trace, open.
pub struct CtfTrace {
    name: String,
    compiled: Compiled,
    files: Vec<StreamFile>,
    lenient: bool,
    meta: TraceMeta,
    scan: OnceLock<Scan>,
}

impl std::fmt::Debug for CtfTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CtfTrace")
            .field("name", &self.name)
            .field("files", &self.files.len())
            .finish()
    }
}

/// Files of a trace folder that are not stream files.
fn is_stream_file(name: &str) -> bool {
    name != "metadata" && !name.starts_with('.') && !name.ends_with(".idx")
}

impl CtfTrace {
    /// The CTF trace folder of `path`, when it is one: `path` itself when it holds a
    /// `metadata` file that is CTF, or its `kernel/` folder (an LTTng session's). An
    /// LTTng session with only a `ust/` folder is [`ErrorKind::Unsupported`]; any other
    /// folder is [`ErrorKind::UnknownFormat`], naming it and what was expected.
    pub fn find(path: &Path) -> Result<PathBuf> {
        let name = path.display().to_string();
        let meta_of = |dir: &Path| -> Option<bool> {
            let mut head = [0u8; 8];
            let mut f = std::fs::File::open(dir.join("metadata")).ok()?;
            let n = std::io::Read::read(&mut f, &mut head).ok()?;
            Some(is_metadata(&head[..n]))
        };
        for dir in [path.to_path_buf(), path.join("kernel")] {
            match meta_of(&dir) {
                Some(true) => return Ok(dir),
                Some(false) => {
                    return Err(Error::new(
                        ErrorKind::UnknownFormat,
                        dir.join("metadata").display().to_string(),
                        Location::Offset(0),
                        "expected CTF metadata (a metadata packet's magic 0x75D11D57, or text \
                         starting `/* CTF`), found other bytes",
                    ))
                }
                None => {}
            }
        }
        if path.join("ust").is_dir() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                name,
                Location::Whole,
                "an LTTng session with only a user-space (ust/) trace: jitterlab reads LTTng \
                 kernel traces (record them with `lttng enable-event -k`)",
            ));
        }
        Err(Error::new(
            ErrorKind::UnknownFormat,
            name,
            Location::Whole,
            "a folder that is not a trace: expected an LTTng/CTF trace folder (a `metadata` \
             file beside the stream files channel0_0, channel0_1, ...) or an LTTng session \
             folder holding `kernel/`",
        ))
    }

    /// Opens the CTF trace in folder `dir` (see [`CtfTrace::find`] for a session folder):
    /// its metadata read and its stream files (every other file, not in a subfolder)
    /// memory-mapped. With `lenient`, a packet that does not decode is skipped (the rest
    /// of its file when its own sizes are wrong) and counted in
    /// [`crate::ReadStats::skipped`] instead of failing the read.
    pub fn open(dir: impl AsRef<Path>, lenient: bool) -> Result<CtfTrace> {
        let dir = dir.as_ref();
        let name = dir.display().to_string();
        let io = |what: &Path, e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                what.display().to_string(),
                Location::Whole,
                format!("cannot read: {e}"),
            )
        };
        let meta_path = dir.join("metadata");
        let metadata = std::fs::read(&meta_path).map_err(|e| io(&meta_path, e))?;
        let compiled = Compiled::new(&meta_path.display().to_string(), &metadata)?;
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let entry = entry.map_err(|e| io(dir, e))?;
            let path = entry.path();
            let fname = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if !is_file || !is_stream_file(&fname) {
                continue;
            }
            let file = std::fs::File::open(&path).map_err(|e| io(&path, e))?;
            if file.metadata().map_err(|e| io(&path, e))?.len() == 0 {
                continue;
            }
            // SAFETY: the file is mapped read-only; LTTng does not write a trace once
            // its session is stopped (a trace still being written may read as corrupt,
            // never as undefined behaviour on this side: the bytes are only read).
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io(&path, e))?;
            files.push(StreamFile {
                cpu: cpu_of(&fname),
                name: path.display().to_string(),
                bytes: Bytes::Map(map),
            });
        }
        CtfTrace::build(name, compiled, files, lenient)
    }

    /// A trace from bytes: its metadata (text or packetized) and its stream files, each
    /// with a name for errors (the CPU a packet without `cpu_id` is on is the number the
    /// name ends with). For tests and fuzzing.
    pub fn from_parts(
        metadata: &[u8],
        streams: Vec<(String, Vec<u8>)>,
        lenient: bool,
    ) -> Result<CtfTrace> {
        let compiled = Compiled::new("metadata", metadata)?;
        let files = streams
            .into_iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(name, b)| StreamFile {
                cpu: cpu_of(&name),
                name,
                bytes: Bytes::Vec(b),
            })
            .collect();
        CtfTrace::build("trace".into(), compiled, files, lenient)
    }

    fn build(
        name: String,
        compiled: Compiled,
        mut files: Vec<StreamFile>,
        lenient: bool,
    ) -> Result<CtfTrace> {
        files.sort_by(|a, b| (a.cpu, &a.name).cmp(&(b.cpu, &b.name)));
        let mut t = CtfTrace {
            name,
            compiled,
            files,
            lenient,
            meta: TraceMeta::default(),
            scan: OnceLock::new(),
        };
        // The CPUs: of each file's first packet.
        let mut cpus = 0u32;
        for f in &t.files {
            let mut r = stream::StreamReader::new(&f.name, &f.bytes, &t.compiled, f.cpu, true);
            if let Ok(Some(_)) = r.next(&mut |_, _| false) {
                cpus = cpus.max(r.cpu.saturating_add(1));
            }
        }
        let domain = t.compiled.meta.env_str("domain").unwrap_or("");
        let kind = if domain.is_empty() {
            String::new()
        } else {
            format!("{domain}, ")
        };
        let n = t.files.len();
        t.meta = TraceMeta {
            format: format!(
                "LTTng CTF {}.{} ({kind}{n} stream{})",
                t.compiled.meta.major.unwrap_or(1),
                t.compiled.meta.minor.unwrap_or(8),
                if n == 1 { "" } else { "s" }
            ),
            cpus: (cpus > 0).then_some(cpus),
        };
        Ok(t)
    }

    /// The folder (or "trace" for one made from bytes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The format and CPU count.
    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    /// The metadata's `env` block (host name, kernel release, tracer version...).
    pub fn env(&self) -> &[(String, EnvValue)] {
        &self.compiled.meta.env
    }

    /// A text value of the metadata's `env` block (`hostname`, `kernel_release`...).
    pub fn env_str(&self, key: &str) -> Option<&str> {
        self.compiled.meta.env_str(key)
    }

    /// `uname -a`-like text from the `env` block (`Linux lager 3.10.31-ltsi #6 SMP ...`),
    /// in the order trace-cmd writes a .dat's uname: system, host, release, version.
    pub fn uname(&self) -> Option<String> {
        let words: Vec<&str> = ["sysname", "hostname", "kernel_release", "kernel_version"]
            .into_iter()
            .filter_map(|k| self.env_str(k))
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    }

    /// The metadata's clocks.
    pub fn clocks(&self) -> &[Clock] {
        &self.compiled.meta.clocks
    }

    /// The stream files' names, in the order ties in time are broken.
    pub fn stream_files(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.name.as_str()).collect()
    }

    /// The events in time order, typed.
    pub fn events(&self) -> Result<CtfEvents<'_>> {
        self.events_with(true)
    }

    /// [`CtfTrace::events`], with the fields of the events jitterlab has no type for
    /// ([`crate::EventKind::Other`]) built only when `untyped` is true: a consumer that
    /// reads only their names (`analyze`, `report --stats`) spares building them.
    pub fn events_with(&self, untyped: bool) -> Result<CtfEvents<'_>> {
        let needs_scan = self.compiled.streams.iter().any(|s| s.tid.is_none());
        let first = if needs_scan {
            self.scan().first.clone()
        } else {
            HashMap::new()
        };
        Ok(CtfEvents::new(self, first, untyped))
    }

    /// The events in time order, each with its decoded fields as the metadata declares
    /// them (slower than [`CtfTrace::events`]: every value is allocated).
    pub fn raw_events(&self) -> Result<RawEvents<'_>> {
        Ok(RawEvents::new(self))
    }

    /// Task names by tid from LTTng's statedump (`lttng_statedump_process_state`): the
    /// tasks alive when tracing started, also those that never run while traced.
    pub fn cmdlines(&self) -> HashMap<i32, Comm> {
        self.scan().names.clone()
    }

    /// Thread group ids by tid from LTTng's statedump (its `pid` is the tgid).
    pub fn tgids(&self) -> HashMap<i32, i32> {
        self.scan().tgids.clone()
    }

    /// IRQ handler names by IRQ number from LTTng's statedump
    /// (`lttng_statedump_interrupt`'s `action`).
    pub fn irq_names(&self) -> HashMap<u32, Text> {
        self.scan().irqs.clone()
    }

    fn scan(&self) -> &Scan {
        self.scan.get_or_init(|| events::scan(self))
    }

    fn readers(&self) -> Vec<stream::StreamReader<'_>> {
        self.files
            .iter()
            .map(|f| {
                stream::StreamReader::new(&f.name, &f.bytes, &self.compiled, f.cpu, self.lenient)
            })
            .collect()
    }
}

/// The number a stream file's name ends with (`channel0_3`: 3), else 0.
fn cpu_of(name: &str) -> u32 {
    let base = name.rsplit('/').next().unwrap_or(name);
    let digits = base.len() - base.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    base[base.len() - digits..].parse().unwrap_or(0)
}
