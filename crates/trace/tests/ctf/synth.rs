//! Small CTF traces written here, byte by byte, for what the real trace does not have:
//! big-endian data, plain and packetized metadata, 27-bit timestamps that wrap, the
//! extended header's 64-bit timestamps, discarded events, sequences, variants, a cut
//! packet and bad metadata.

use jitterlab_trace::ctf::{CtfTrace, RawValue};
use jitterlab_trace::{Comm, ErrorKind, Event, EventKind, EventSource, Location, TaskState};

/// A bit writer in CTF's layout: little-endian fields from each byte's least
/// significant bit up, big-endian ones from its most significant bit down.
pub struct Bits {
    pub bytes: Vec<u8>,
    pub bit: u64,
    be: bool,
    base: u64,
}

impl Bits {
    fn new(be: bool) -> Bits {
        Bits {
            bytes: Vec::new(),
            bit: 0,
            be,
            base: 0,
        }
    }

    fn align(&mut self, a: u64) {
        let rel = self.bit - self.base;
        self.bit = self.base + rel.div_ceil(a) * a;
        self.grow();
    }

    fn grow(&mut self) {
        let need = self.bit.div_ceil(8) as usize;
        if self.bytes.len() < need {
            self.bytes.resize(need, 0);
        }
    }

    fn put_at(&mut self, at: u64, v: u64, size: u32) {
        let end = at + u64::from(size);
        if self.bytes.len() < end.div_ceil(8) as usize {
            self.bytes.resize(end.div_ceil(8) as usize, 0);
        }
        for i in 0..size {
            // The i-th bit written: LE from the value's LSB, BE from its MSB.
            let vbit = if self.be { size - 1 - i } else { i };
            let b = (v >> vbit) & 1;
            let pos = at + u64::from(i);
            let shift = if self.be { 7 - pos % 8 } else { pos % 8 };
            let byte = &mut self.bytes[(pos / 8) as usize];
            *byte = (*byte & !(1 << shift)) | ((b as u8) << shift);
        }
    }

    fn put(&mut self, v: u64, size: u32, align: u64) {
        self.align(align);
        self.put_at(self.bit, v, size);
        self.bit += u64::from(size);
    }

    fn text(&mut self, s: &[u8], len: usize) {
        self.align(8);
        for i in 0..len {
            self.put(u64::from(s.get(i).copied().unwrap_or(0)), 8, 8);
        }
    }
}

/// The metadata of the synthetic traces: LTTng's compact event header (5-bit id with
/// the extended escape, 27-bit timestamps), a `tid` stream context on request.
pub fn metadata(be: bool, tid_context: bool) -> String {
    let ctx = if tid_context {
        "event.context := struct { integer { size = 32; align = 8; signed = true; } _tid; };"
    } else {
        ""
    };
    format!(
        r#"/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 16; align = 16; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 32; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 64; signed = false; }} := uint64_t;
typealias integer {{ size = 32; align = 32; signed = true; }} := int;
trace {{
	major = 1; minor = 8;
	byte_order = {bo};
	packet.header := struct {{ uint32_t magic; uint32_t stream_id; }};
}};
env {{ kernel_release = "6.8.0"; tracer_name = "lttng-modules"; tracer_major = 2; tracer_minor = 13; tracer_patchlevel = 0; domain = "kernel"; }};
clock {{ name = "monotonic"; freq = 1000000000; offset_s = 10; offset = 5; }};
typealias integer {{ size = 27; align = 1; signed = false; map = clock.monotonic.value; }} := uint27_clock_t;
typealias integer {{ size = 64; align = 64; signed = false; map = clock.monotonic.value; }} := uint64_clock_t;
struct packet_context {{
	uint64_clock_t timestamp_begin;
	uint64_clock_t timestamp_end;
	uint64_t content_size;
	uint64_t packet_size;
	uint32_t events_discarded;
	uint32_t cpu_id;
}};
struct event_header_compact {{
	enum : integer {{ size = 5; align = 1; signed = false; }} {{ compact = 0 ... 30, extended = 31 }} id;
	variant <id> {{
		struct {{ uint27_clock_t timestamp; }} compact;
		struct {{ uint32_t id; uint64_clock_t timestamp; }} extended;
	}} v;
}} align(32);
stream {{
	id = 0;
	event.header := struct event_header_compact;
	packet.context := struct packet_context;
	{ctx}
}};
event {{
	name = "sched_switch"; id = 0; stream_id = 0;
	fields := struct {{
		integer {{ size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }} _prev_comm[16];
		int _prev_tid; int _prev_prio;
		integer {{ size = 64; align = 64; signed = 1; }} _prev_state;
		integer {{ size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }} _next_comm[16];
		int _next_tid; int _next_prio;
	}};
}};
event {{
	name = "shapes"; id = 40; stream_id = 0;
	fields := struct {{
		uint8_t _n;
		integer {{ size = 12; align = 1; signed = true; }} _vals[_n];
		enum : uint8_t {{ small, big = 5 ... 9 }} _kind;
		variant <_kind> {{ uint16_t small; string big; }} _v;
		string _s;
	}};
}};
"#,
        bo = if be { "be" } else { "le" }
    )
}

/// One event to write: its id, time (cycles) and payload.
pub enum Ev {
    Switch {
        ts: u64,
        prev: (&'static str, i32, i32, i64),
        next: (&'static str, i32, i32),
    },
    Shapes {
        ts: u64,
        vals: Vec<i64>,
        big: Option<&'static str>,
        s: &'static str,
    },
}

/// A stream file of `packets` (each: begin, end, discarded, events) on `cpu`; events
/// whose time is within 2^27 cycles of the previous one get a compact header, others
/// (and ids above 30) the extended one.
pub fn stream(
    be: bool,
    cpu: u32,
    packets: &[(u64, u64, u32, Vec<Ev>)],
    tid: Option<i32>,
) -> Vec<u8> {
    let mut w = Bits::new(be);
    for (begin, end, discarded, events) in packets {
        w.base = w.bit;
        let start = w.bit;
        w.put(0xC1FC_1FC1, 32, 32);
        w.put(0, 32, 32);
        w.put(*begin, 64, 64);
        w.put(*end, 64, 64);
        let sizes = w.bit;
        w.put(0, 64, 64);
        w.put(0, 64, 64);
        w.put(u64::from(*discarded), 32, 32);
        w.put(u64::from(cpu), 32, 32);
        let mut clock = *begin;
        for ev in events {
            let (id, ts) = match ev {
                Ev::Switch { ts, .. } => (0u64, *ts),
                Ev::Shapes { ts, .. } => (40, *ts),
            };
            w.align(32);
            if id < 31 && ts >= clock && ts - clock < 1 << 27 {
                w.put(id, 5, 1);
                w.put(ts & ((1 << 27) - 1), 27, 1);
            } else {
                // The extended structure aligns on its largest member, as CTF and
                // lttng-modules' ring-buffer client do.
                w.put(31, 5, 1);
                w.align(64);
                w.put(id, 32, 32);
                w.put(ts, 64, 64);
            }
            clock = ts;
            if let Some(t) = tid {
                w.put(t as u32 as u64, 32, 8);
            }
            match ev {
                Ev::Switch { prev, next, .. } => {
                    // The structure aligns on its 64-bit prev_state.
                    w.align(64);
                    w.text(prev.0.as_bytes(), 16);
                    w.put(prev.1 as u32 as u64, 32, 32);
                    w.put(prev.2 as u32 as u64, 32, 32);
                    w.put(prev.3 as u64, 64, 64);
                    w.text(next.0.as_bytes(), 16);
                    w.put(next.1 as u32 as u64, 32, 32);
                    w.put(next.2 as u32 as u64, 32, 32);
                }
                Ev::Shapes { vals, big, s, .. } => {
                    w.put(vals.len() as u64, 8, 8);
                    for v in vals {
                        w.put(*v as u64 & 0xfff, 12, 1);
                    }
                    match big {
                        Some(b) => {
                            w.put(7, 8, 8);
                            w.text(b.as_bytes(), b.len() + 1);
                        }
                        None => {
                            w.put(0, 8, 8);
                            w.put(0xbeef, 16, 16);
                        }
                    }
                    w.text(s.as_bytes(), s.len() + 1);
                }
            }
        }
        let content = w.bit - start;
        // Padding after the content, as LTTng pads to its sub-buffer size.
        let packet = (content.div_ceil(64) + 2) * 64;
        w.put_at(sizes, content, 64);
        w.put_at(sizes + 64, packet, 64);
        w.bit = start + packet;
        w.grow();
    }
    w.bytes
}

/// The metadata as LTTng writes it: in packets, of `chunk` bytes of text each.
pub fn packetize(text: &str, be: bool, chunk: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for part in text.as_bytes().chunks(chunk) {
        let content = 37 + part.len();
        let packet = content.div_ceil(64) * 64;
        let u32b = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        out.extend_from_slice(&u32b(0x75D1_1D57));
        out.extend_from_slice(&[0x5a; 16]);
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(content as u32 * 8));
        out.extend_from_slice(&u32b(packet as u32 * 8));
        out.extend_from_slice(&[0, 0, 0, 1, 8]);
        out.extend_from_slice(part);
        out.resize(out.len() + packet - content, 0);
    }
    out
}

fn switch(ts: u64, prev: (&'static str, i32, i32, i64), next: (&'static str, i32, i32)) -> Ev {
    Ev::Switch { ts, prev, next }
}

/// Two CPUs: CPU 0 with a compact wrap and an extended header, CPU 1 with a loss.
pub fn sample(be: bool) -> (String, Vec<(String, Vec<u8>)>) {
    let wrap = 1u64 << 27;
    let cpu0 = stream(
        be,
        0,
        &[(
            wrap - 10,
            wrap * 40,
            0,
            vec![
                switch(wrap - 5, ("swapper/0", 0, 20, 0), ("worker", 7, -80)),
                // The 27 low bits go down: one wrap.
                switch(wrap + 3, ("worker", 7, -80, 0x100), ("swapper/0", 0, 20)),
                // A jump past 2^27: the extended header's 64-bit timestamp.
                Ev::Shapes {
                    ts: wrap * 30,
                    vals: vec![-1, 2047, -2048],
                    big: None,
                    s: "end",
                },
            ],
        )],
        None,
    );
    let cpu1 = stream(
        be,
        1,
        &[
            (
                100,
                200,
                0,
                vec![Ev::Shapes {
                    ts: 150,
                    vals: vec![],
                    big: Some("grand"),
                    s: "",
                }],
            ),
            (
                wrap,
                wrap + 100,
                5,
                vec![switch(wrap + 50, ("a", 3, 20, 1), ("b", 4, 20))],
            ),
        ],
        None,
    );
    (
        metadata(be, false),
        vec![("channel0_0".into(), cpu0), ("channel0_1".into(), cpu1)],
    )
}

fn read(t: &CtfTrace) -> (Vec<Event>, Vec<Option<u64>>) {
    let mut src = t.events().unwrap();
    let mut out = Vec::new();
    while let Some(e) = src.next_event().unwrap() {
        out.push(e);
    }
    (out, src.stats().lost.clone())
}

/// ns since the epoch of `cycles` on the sample's clock (offset 10 s + 5 cycles).
fn ns(cycles: u64) -> u64 {
    10_000_000_000 + 5 + cycles
}

#[test]
fn both_byte_orders_and_both_metadata_forms_read_alike() {
    let wrap = 1u64 << 27;
    let mut all = Vec::new();
    for be in [false, true] {
        let (meta, streams) = sample(be);
        for packed in [false, true] {
            let m = if packed {
                packetize(&meta, be, 200)
            } else {
                meta.clone().into_bytes()
            };
            let t = CtfTrace::from_parts(&m, streams.clone(), false).unwrap();
            assert_eq!(t.meta().format, "LTTng CTF 1.8 (kernel, 2 streams)");
            assert_eq!(t.meta().cpus, Some(2));
            let (evs, lost) = read(&t);
            all.push((evs, lost));
        }
    }
    for other in &all[1..] {
        assert_eq!(other, &all[0]);
    }
    let (evs, lost) = &all[0];
    let summary: Vec<(u64, u32, i32, &str)> = evs
        .iter()
        .map(|e| (e.ts, e.cpu, e.pid, e.kind.name()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (ns(150), 1, 3, "shapes"),
            (ns(wrap - 5), 0, 0, "sched_switch"),
            (ns(wrap), 1, -1, "lost"),
            (ns(wrap + 3), 0, 7, "sched_switch"),
            (ns(wrap + 50), 1, 3, "sched_switch"),
            (ns(wrap * 30), 0, 0, "shapes"),
        ]
    );
    assert_eq!(evs[2].kind, EventKind::Lost { count: Some(5) });
    assert_eq!(lost, &vec![Some(0), Some(5)]);
    // Priorities back on the kernel's scale, the 4.14+ state bits as they are.
    assert_eq!(
        evs[3].kind,
        EventKind::SchedSwitch {
            prev_comm: Comm::new("worker"),
            prev_pid: 7,
            prev_prio: 20,
            prev_state: TaskState(TaskState::PREEMPTED),
            next_comm: Comm::new("swapper/0"),
            next_pid: 0,
            next_prio: 120,
        }
    );
    let EventKind::Other { fields, .. } = &evs[5].kind else {
        panic!()
    };
    let names: Vec<&str> = fields.iter().map(|f| &*f.0).collect();
    assert_eq!(
        names,
        ["n", "vals[0]", "vals[1]", "vals[2]", "kind", "v", "s"]
    );
}

#[test]
fn raw_fields_of_sequences_and_variants() {
    let (meta, streams) = sample(true);
    let t = CtfTrace::from_parts(meta.as_bytes(), streams, false).unwrap();
    let mut raw = t.raw_events().unwrap();
    let first = raw.next_raw().unwrap().unwrap();
    assert_eq!(&*first.name, "shapes");
    let Some(RawValue::Struct(f)) = first.fields else {
        panic!()
    };
    assert_eq!(f[1].1, RawValue::Array(vec![]));
    assert_eq!(
        f[2].1,
        RawValue::Enum {
            value: Box::new(RawValue::Uint(7)),
            label: Some("big".into())
        }
    );
    assert_eq!(f[3].1, RawValue::Str("grand".into()));
    let mut last = None;
    while let Some(e) = raw.next_raw().unwrap() {
        last = Some(e);
    }
    let Some(RawValue::Struct(f)) = last.unwrap().fields else {
        panic!()
    };
    assert_eq!(
        f[1].1,
        RawValue::Array(vec![
            RawValue::Int(-1),
            RawValue::Int(2047),
            RawValue::Int(-2048)
        ])
    );
    assert_eq!(f[3].1, RawValue::Uint(0xbeef));
    assert_eq!(f[4].1, RawValue::Str("end".into()));
}

#[test]
fn a_tid_context_gives_each_event_its_task() {
    let s = stream(
        false,
        2,
        &[(0, 10, 0, vec![switch(5, ("a", 3, 20, 1), ("b", 4, 20))])],
        Some(3),
    );
    let t = CtfTrace::from_parts(
        metadata(false, true).as_bytes(),
        vec![("c_2".into(), s)],
        false,
    )
    .unwrap();
    let (evs, _) = read(&t);
    assert_eq!((evs[0].cpu, evs[0].pid), (2, 3));
}

#[test]
fn a_cut_packet_is_an_error_at_its_offset_or_skipped_when_lenient() {
    let (meta, mut streams) = sample(false);
    let cpu1 = &mut streams[1].1;
    let first_packet = {
        // The first packet's size, from its context (bytes 32..40: packet_size in bits).
        let b: [u8; 8] = cpu1[32..40].try_into().unwrap();
        (u64::from_le_bytes(b) / 8) as usize
    };
    cpu1.truncate(first_packet + 60);
    let t = CtfTrace::from_parts(meta.as_bytes(), streams.clone(), false).unwrap();
    let mut src = t.events().unwrap();
    let e = loop {
        match src.next_event() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no error"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.kind, ErrorKind::Truncated, "{e}");
    assert_eq!(e.location, Location::Offset(first_packet as u64), "{e}");
    assert!(e.to_string().starts_with("channel0_1: byte offset"), "{e}");
    let t = CtfTrace::from_parts(meta.as_bytes(), streams, true).unwrap();
    let mut src = t.events().unwrap();
    let mut n = 0;
    while src.next_event().unwrap().is_some() {
        n += 1;
    }
    assert_eq!((n, src.stats().skipped), (4, 1));
}

#[test]
fn bad_metadata_names_its_line() {
    let (meta, streams) = sample(false);
    let bad = meta.replace("uint8_t _n;", "uint8_t _n");
    let line = bad.lines().position(|l| l.contains("uint8_t _n")).unwrap() as u64 + 2;
    let e = CtfTrace::from_parts(bad.as_bytes(), streams.clone(), false).unwrap_err();
    assert_eq!(e.location, Location::Line(line), "{e}");
    assert!(e.message.contains("expected `;`"), "{e}");
    let bad = meta.replace("_vals[_n]", "_vals[_nope]");
    let e = CtfTrace::from_parts(bad.as_bytes(), streams, false).unwrap_err();
    assert!(e.message.contains("`_nope`"), "{e}");
    assert!(matches!(e.location, Location::Line(_)), "{e}");
}

/// The fuzz target's input: the metadata's length (4 bytes, little-endian), the
/// metadata, then the bytes of the stream files, cut in two where the next 2 bytes
/// (little-endian) say.
pub fn fuzz_input(metadata: &[u8], streams: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = (metadata.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(metadata);
    let first = streams.first().map_or(0, |s| s.1.len());
    out.extend_from_slice(&(first as u16).to_le_bytes());
    for (_, s) in streams {
        out.extend_from_slice(s);
    }
    out
}

/// With `JITTERLAB_WRITE_SEEDS=DIR`, writes the sample traces as folders (for
/// `babeltrace2 DIR/sample-le`) and as the fuzz target's seeds.
#[test]
fn write_seeds() {
    let Some(dir) = std::env::var_os("JITTERLAB_WRITE_SEEDS") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    for be in [false, true] {
        let (meta, streams) = sample(be);
        let name = if be { "sample-be" } else { "sample-le" };
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let packed = packetize(&meta, be, 512);
        std::fs::write(folder.join("metadata"), &packed).unwrap();
        for (n, s) in &streams {
            std::fs::write(folder.join(n), s).unwrap();
        }
        std::fs::write(
            dir.join(format!("{name}.ctf")),
            fuzz_input(meta.as_bytes(), &streams),
        )
        .unwrap();
    }
}
