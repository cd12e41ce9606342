//! LTTng traces converted to .dat ([`CtfTrace::write_dat`]): the committed real trace's
//! .dat, v6 and v7, read by `trace-cmd report` against babeltrace2 reading the folder
//! (every event's time, CPU, name and fields), and the small traces made here read back
//! by jitterlab's .dat reader as the CTF reader reads them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use jitterlab_trace::ctf::CtfTrace;
use jitterlab_trace::dat::{Compression, DatFile, Spool};
use jitterlab_trace::{Event, EventKind, EventSource, Value};
use serde_json::Value as Json;

use super::oracle::bt2_lines;
use super::synth::sample;
use super::KERNEL_IRQ_SCHED;

/// Each message of the trace as one JSON line: `[ns, cpu, name, payload]`, the payload
/// a list of `[name, value]` pairs in order (a structure's members as such a list too),
/// or `["discarded", count, cpu]`. Enumerations are their integers, variants their
/// chosen option's value.
const DUMP: &str = r#"
import bt2, sys, json
def conv(f):
    if isinstance(f, bt2._StringFieldConst): return str(f)
    if isinstance(f, bt2._EnumerationFieldConst): return int(f)
    if isinstance(f, bt2._BoolFieldConst): return bool(f)
    if isinstance(f, bt2._IntegerFieldConst): return int(f)
    if isinstance(f, bt2._RealFieldConst): return float(f)
    if isinstance(f, bt2._StructureFieldConst): return {"struct": [[k, conv(v)] for k, v in f.items()]}
    if isinstance(f, bt2._ArrayFieldConst): return [conv(v) for v in f]
    if isinstance(f, bt2._VariantFieldConst): return conv(f.selected_option)
    raise Exception(type(f))
for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(msg) is bt2._EventMessageConst:
        ev = msg.event
        pc = ev.packet.context_field
        cpu = int(pc['cpu_id']) if pc is not None and 'cpu_id' in pc else None
        p = ev.payload_field
        print(json.dumps([msg.default_clock_snapshot.ns_from_origin, cpu, ev.name,
            [] if p is None else conv(p)["struct"]]))
    elif type(msg) is bt2._DiscardedEventsMessageConst:
        print(json.dumps(["discarded", msg.count]))
"#;

fn trace_cmd() -> bool {
    Command::new("trace-cmd")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() || !o.stdout.is_empty())
}

/// A payload's fields flattened as the .dat names them: a structure's members
/// `parent_member`.
fn flatten(prefix: &str, pairs: &[Json], out: &mut Vec<(String, Json)>) {
    for p in pairs {
        let name = p[0].as_str().unwrap();
        let name = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}_{name}")
        };
        match p[1].get("struct").and_then(Json::as_array) {
            Some(members) => flatten(&name, members, out),
            None => out.push((name, p[1].clone())),
        }
    }
}

/// One event of `trace-cmd report -N -t`: ns, CPU, name and the text after the name.
fn report_line(line: &str) -> Option<(u64, u64, String, String)> {
    let open = line.find("] ")?;
    let cpu = line[..open].rsplit('[').next()?.parse().ok()?;
    let rest = &line[open + 2..];
    let (ts, rest) = rest.split_once(": ")?;
    let (s, frac) = ts.trim().split_once('.')?;
    assert_eq!(frac.len(), 9, "ns timestamps (-t): {line}");
    let ns = s.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?;
    let (name, fields) = rest.split_once(':')?;
    Some((ns, cpu, name.to_string(), fields.trim().to_string()))
}

/// `a=1 b=some text c={0x1,0x2}` cut at the names the payload has, in order.
fn values(text: &str, names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    for (i, n) in names.iter().enumerate() {
        let head = format!("{n}=");
        assert!(rest.starts_with(&head), "expected `{head}` in {text:?}");
        rest = &rest[head.len()..];
        let end = match names.get(i + 1) {
            Some(next) => rest.find(&format!(" {next}=")).unwrap_or(rest.len()),
            None => rest.len(),
        };
        out.push(rest[..end].to_string());
        rest = rest[end..].strip_prefix(' ').unwrap_or(&rest[end..]);
    }
    out
}

/// A number as trace-cmd prints it: decimal, or hexadecimal after `0x`.
fn number(s: &str) -> i128 {
    match s.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap_or_else(|_| panic!("a number: {s:?}")),
    }
}

/// Whether trace-cmd's text `got` is babeltrace2's value `want`; `stale` collects the
/// empty strings babeltrace2 2.0 shows as an earlier value (see the reader's oracle).
fn same(got: &str, want: &Json, stale: &mut u32) -> bool {
    match want {
        Json::String(s) => {
            if got.is_empty() && !s.is_empty() {
                *stale += 1;
                return true;
            }
            // A newline at the end ends trace-cmd's line.
            got == s || (s.ends_with('\n') && got == s.trim_end_matches('\n'))
        }
        Json::Number(n) => {
            let w = n
                .as_i64()
                .map(i128::from)
                .or(n.as_u64().map(i128::from))
                .unwrap();
            bits_of(number(got), w)
        }
        Json::Array(items) => {
            // `__print_array`: trace-cmd 3.1 prints the elements apart, unsigned.
            let inner = got.trim_start_matches('{').trim_end_matches('}');
            let g: Vec<i128> = inner
                .split([',', ' '])
                .filter(|x| !x.is_empty())
                .map(number)
                .collect();
            g.len() == items.len()
                && g.iter()
                    .zip(items)
                    .all(|(g, w)| w.as_i64().is_some_and(|w| bits_of(*g, i128::from(w))))
        }
        _ => false,
    }
}

/// Whether `got` is `want`, or a negative `want`'s two's complement bits (hexadecimal
/// and array elements print unsigned).
fn bits_of(got: i128, want: i128) -> bool {
    got == want || (want < 0 && [8, 16, 32, 64].iter().any(|b| got == want + (1i128 << b)))
}

fn convert(t: &CtfTrace, dir: &Path, v7: Option<Compression>) -> std::path::PathBuf {
    let name = if v7.is_some() { "t.v7.dat" } else { "t.v6.dat" };
    let out = dir.join(name);
    t.write_dat(&out, Spool::Memory, v7).unwrap();
    out
}

#[test]
fn trace_cmd_reads_the_converted_trace_as_babeltrace2_reads_the_folder() {
    if !trace_cmd() {
        jitterlab_host::testing::skip("trace-cmd is not installed");
        return;
    }
    let Some(mut want) = bt2_lines(DUMP) else {
        return;
    };
    let discarded: u64 = want
        .iter()
        .filter(|w| w[0] == "discarded")
        .map(|w| w[1].as_u64().unwrap())
        .sum();
    want.retain(|w| w[0] != "discarded");
    // Ties in time in the order trace-cmd gives them: the lower CPU first.
    want.sort_by_key(|w| (w[0].as_u64().unwrap(), w[1].as_u64().unwrap()));

    let trace = CtfTrace::open(KERNEL_IRQ_SCHED, false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for v7 in [None, Some(Compression::Zstd)] {
        let path = convert(&trace, dir.path(), v7);
        let out = Command::new("trace-cmd")
            .args(["report", "-N", "-t", "-i"])
            .arg(&path)
            .output()
            .expect("run trace-cmd");
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("ailed") && !stderr.contains("rror"),
            "trace-cmd complains: {stderr}"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let dropped: u64 = text
            .lines()
            .filter_map(|l| l.split_once(" [")?.1.split_once(" EVENTS DROPPED]"))
            .map(|(n, _)| n.parse::<u64>().unwrap())
            .sum();
        assert_eq!(dropped, discarded, "lost events");
        let got: Vec<(u64, u64, String, String)> = text.lines().filter_map(report_line).collect();
        assert_eq!(got.len(), want.len(), "{v7:?}: events");

        // Counts per name and per CPU.
        let mut by_name = [BTreeMap::new(), BTreeMap::new()];
        let mut by_cpu = [BTreeMap::new(), BTreeMap::new()];
        for (g, w) in got.iter().zip(&want) {
            *by_name[0].entry(g.2.clone()).or_insert(0u64) += 1;
            *by_name[1]
                .entry(w[2].as_str().unwrap().to_string())
                .or_insert(0) += 1;
            *by_cpu[0].entry(g.1).or_insert(0u64) += 1;
            *by_cpu[1].entry(w[1].as_u64().unwrap()).or_insert(0) += 1;
        }
        assert_eq!(by_name[0], by_name[1]);
        assert_eq!(by_cpu[0], by_cpu[1]);

        // Each event: time (ns), CPU, name and every field.
        let mut stale = 0;
        let mut fields = 0;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                (g.0, g.1, g.2.as_str()),
                (
                    w[0].as_u64().unwrap(),
                    w[1].as_u64().unwrap(),
                    w[2].as_str().unwrap()
                ),
                "event {i}"
            );
            let mut payload = Vec::new();
            flatten("", w[3].as_array().unwrap(), &mut payload);
            let names: Vec<&str> = payload.iter().map(|(n, _)| n.as_str()).collect();
            for ((name, want), got) in payload.iter().zip(values(&g.3, &names)) {
                assert!(
                    same(&got, want, &mut stale),
                    "event {i} ({}) field {name}: trace-cmd {got:?}, babeltrace2 {want}",
                    g.2
                );
                fields += 1;
            }
        }
        assert!(fields > 80_000, "{fields} fields compared");
        assert!(stale < 10, "{stale} empty strings babeltrace2 shows stale");
    }
}

fn events(src: &mut dyn EventSource) -> Vec<Event> {
    let mut out = Vec::new();
    while let Some(e) = src.next_event().unwrap() {
        out.push(e);
    }
    out
}

/// The typed events jitterlab reads from the .dat are those it reads from the folder
/// (a loss aside: the .dat reader puts it at the next event, the CTF reader at its
/// packet's start).
fn same_events(ctf: &[Event], dat: &[Event]) {
    let keep = |v: &[Event]| -> Vec<Event> {
        v.iter()
            .filter(|e| !matches!(e.kind, EventKind::Lost { .. }))
            .cloned()
            .collect()
    };
    let (ctf, dat) = (keep(ctf), keep(dat));
    assert_eq!(ctf.len(), dat.len());
    for (c, d) in ctf.iter().zip(&dat) {
        assert_eq!((c.ts, c.cpu, c.pid), (d.ts, d.cpu, d.pid), "{c:?} / {d:?}");
        assert_eq!(c.kind.name(), d.kind.name());
        if !matches!(c.kind, EventKind::Other { .. }) {
            assert_eq!(c.kind, d.kind);
        }
    }
}

#[test]
fn the_real_trace_reads_back_with_the_same_typed_events() {
    let trace = CtfTrace::open(KERNEL_IRQ_SCHED, false).unwrap();
    let want = events(&mut trace.events().unwrap());
    let dir = tempfile::tempdir().unwrap();
    for v7 in [None, Some(Compression::Zlib)] {
        let path = convert(&trace, dir.path(), v7);
        let dat = DatFile::open(&path).unwrap();
        assert_eq!(
            dat.info().uname.as_deref(),
            Some("Linux lager 3.10.31-ltsi #6 SMP PREEMPT Wed Oct 1 17:07:11 CEST 2014")
        );
        assert_eq!(dat.info().clock.as_deref(), Some("monotonic"));
        assert_eq!(dat.cmdlines(), trace.cmdlines());
        let tgids: std::collections::HashMap<i32, i32> = dat.info().tgids.iter().copied().collect();
        assert_eq!(tgids, trace.tgids());
        same_events(&want, &events(&mut dat.events(0).unwrap()));
    }
}

#[test]
fn hand_built_traces_read_back_field_by_field() {
    for be in [false, true] {
        let (meta, streams) = sample(be);
        let t = CtfTrace::from_parts(meta.as_bytes(), streams, false).unwrap();
        let want = events(&mut t.events().unwrap());
        let dir = tempfile::tempdir().unwrap();
        for v7 in [None, Some(Compression::Zstd)] {
            let path = dir.path().join("s.dat");
            let done = t.write_dat(&path, Spool::Memory, v7).unwrap();
            assert_eq!((done.events, done.lost, done.formats), (5, 5, 2));
            // The variant is left out, and said so.
            assert_eq!(done.warnings.len(), 1, "{:?}", done.warnings);
            assert!(
                done.warnings[0].starts_with("1 field of 1 event class left out")
                    && done.warnings[0].contains("shapes.v (a variant)")
                    && done.warnings[0].ends_with("; 2 events written without them"),
                "{}",
                done.warnings[0]
            );
            let dat = DatFile::open(&path).unwrap();
            let mut src = dat.events(0).unwrap();
            let got = events(&mut src);
            assert_eq!(src.stats().lost, [Some(0), Some(5)]);
            same_events(&want, &got);
            // The other event's fields: a 12-bit sequence as 16-bit integers, the
            // enumeration's integer, the string after the fixed part.
            let shapes: Vec<&Vec<(jitterlab_trace::Text, Value)>> = got
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Other { name, fields } if &**name == "shapes" => Some(fields),
                    _ => None,
                })
                .collect();
            assert_eq!(shapes.len(), 2);
            let field = |f: &Vec<(jitterlab_trace::Text, Value)>, n: &str| {
                f.iter().find(|(k, _)| &**k == n).map(|(_, v)| v.clone())
            };
            assert_eq!(field(shapes[0], "n"), Some(Value::Uint(0)));
            assert_eq!(field(shapes[0], "kind"), Some(Value::Uint(7)));
            assert_eq!(field(shapes[0], "s"), Some(Value::Str("".into())));
            assert_eq!(field(shapes[1], "n"), Some(Value::Uint(3)));
            assert_eq!(field(shapes[1], "s"), Some(Value::Str("end".into())));
            let vals: Vec<u8> = [-1i16, 2047, -2048]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            assert_eq!(field(shapes[1], "vals"), Some(Value::Bytes(vals.into())));
            assert_eq!(field(shapes[1], "v"), None);
            // trace-cmd reads it too.
            if trace_cmd() {
                let out = Command::new("trace-cmd")
                    .args(["report", "-N", "-t", "-i"])
                    .arg(&path)
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    text.contains("shapes:               n=3 vals=65535 2047 63488 kind=0 s=end"),
                    "{text}"
                );
                assert!(text.contains("prev_state=256"), "{text}");
            }
        }
    }
}
