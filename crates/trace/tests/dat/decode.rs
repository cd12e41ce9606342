//! The decoder on records built from the real format files of a 6.18 kernel (the fixture's),
//! for the events the fixtures do not contain: trace_printk, function_graph, workqueue,
//! exec, and a generic event.

use std::sync::Arc;

use jitterlab_trace::decode::{Decoder, Kallsyms, PrintkFormats};
use jitterlab_trace::format::{EventFormat, Formats};
use jitterlab_trace::{EventKind, Sym, Value};

use crate::util::*;

/// The formats of the fixture, and a record builder that places fields by name.
struct Rec<'a> {
    fmt: &'a EventFormat,
    bytes: Vec<u8>,
}

impl<'a> Rec<'a> {
    fn new(formats: &'a Formats, system: &str, name: &str) -> Rec<'a> {
        let fmt = formats
            .by_name(system, name)
            .unwrap_or_else(|| panic!("{system}:{name}"));
        let end = fmt
            .fields
            .iter()
            .chain(&fmt.common)
            .map(|f| f.offset + f.size)
            .max()
            .unwrap();
        let mut r = Rec {
            fmt,
            bytes: vec![0; end],
        };
        r.set("common_type", &fmt.id.to_le_bytes());
        r.set("common_pid", &42i32.to_le_bytes());
        r
    }

    fn set(&mut self, field: &str, v: &[u8]) -> &mut Self {
        let f = self
            .fmt
            .field(field)
            .unwrap_or_else(|| panic!("field {field}"));
        self.bytes[f.offset..f.offset + v.len()].copy_from_slice(v);
        self
    }

    /// A `__data_loc` string appended at the end of the record.
    fn data_loc(&mut self, field: &str, s: &str) -> &mut Self {
        let at = self.bytes.len() as u32;
        let len = s.len() as u32 + 1;
        self.set(field, &((len << 16) | at).to_le_bytes());
        self.bytes.extend_from_slice(s.as_bytes());
        self.bytes.push(0);
        self
    }

    fn tail(&mut self, data: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(data);
        self
    }
}

fn decoder() -> (Formats, Decoder) {
    let dat = open("cyclictest-idle.v7.dat");
    let formats = dat.formats().clone();
    let ks = Kallsyms::parse("ffffffff81000000 T do_work\nffffffff81000100 T other\n");
    let pk = PrintkFormats::parse("0xffffffff82000000 : \"hello %d from %s at %pS\\n\"\n0xffffffff82000100 : \"plain string\\n\"\n");
    let d = Decoder::new(
        jitterlab_trace::format::Endian::Little,
        8,
        Arc::new(formats.clone()),
    )
    .with_kallsyms(Arc::new(ks))
    .with_printk(Arc::new(pk));
    (formats, d)
}

fn sym(addr: u64, name: &str) -> Sym {
    Sym {
        addr,
        name: Some(name.into()),
    }
}

#[test]
fn trace_printk_records() {
    let (formats, mut d) = decoder();
    let mut r = Rec::new(&formats, "ftrace", "bprint");
    let mut args = 7i32.to_le_bytes().to_vec();
    args.extend_from_slice(b"cpu\0");
    args.extend_from_slice(&0xffffffff81000104u64.to_le_bytes());
    r.set("ip", &0xffffffff81000010u64.to_le_bytes())
        .set("fmt", &0xffffffff82000000u64.to_le_bytes())
        .tail(&args);
    let e = d.decode(1, 5, &r.bytes).unwrap();
    assert_eq!(
        e.kind,
        EventKind::Print {
            ip: 0xffffffff81000010,
            text: "hello 7 from cpu at other+0x4".into()
        }
    );
    assert_eq!((e.cpu, e.ts, e.pid), (1, 5, 42));
    let mut r = Rec::new(&formats, "ftrace", "bputs");
    r.set("str", &0xffffffff82000100u64.to_le_bytes());
    assert_eq!(
        d.decode(0, 0, &r.bytes).unwrap().kind,
        EventKind::Print {
            ip: 0,
            text: "plain string".into()
        }
    );
    // A format the file does not have: said, not invented.
    r.set("str", &0xdeadu64.to_le_bytes());
    let k = d.decode(0, 0, &r.bytes).unwrap().kind;
    assert!(
        matches!(&k, EventKind::Print { text, .. } if text.contains("unknown")),
        "{k:?}"
    );
}

#[test]
fn function_graph_workqueue_and_exec_records() {
    let (formats, mut d) = decoder();
    let mut r = Rec::new(&formats, "ftrace", "funcgraph_entry");
    r.set("func", &0xffffffff81000000u64.to_le_bytes())
        .set("depth", &3u32.to_le_bytes());
    assert_eq!(
        d.decode(0, 0, &r.bytes).unwrap().kind,
        EventKind::FuncEntry {
            func: sym(0xffffffff81000000, "do_work"),
            depth: 3
        }
    );
    let mut r = Rec::new(&formats, "ftrace", "funcgraph_exit");
    r.set("func", &0xffffffff81000000u64.to_le_bytes())
        .set("depth", &3u32.to_le_bytes())
        .set("calltime", &1_000u64.to_le_bytes())
        .set("rettime", &1_750u64.to_le_bytes());
    assert_eq!(
        d.decode(0, 0, &r.bytes).unwrap().kind,
        EventKind::FuncReturn {
            func: sym(0xffffffff81000000, "do_work"),
            depth: 3,
            duration: Some(750)
        }
    );
    let mut r = Rec::new(&formats, "workqueue", "workqueue_execute_start");
    r.set("work", &0xffff888000001000u64.to_le_bytes())
        .set("function", &0xffffffff81000100u64.to_le_bytes());
    assert_eq!(
        d.decode(0, 0, &r.bytes).unwrap().kind,
        EventKind::WorkqueueExecuteStart {
            work: 0xffff888000001000,
            function: sym(0xffffffff81000100, "other")
        }
    );
    let mut r = Rec::new(&formats, "sched", "sched_process_exec");
    r.data_loc("filename", "/usr/bin/cyclictest")
        .set("pid", &77i32.to_le_bytes())
        .set("old_pid", &76i32.to_le_bytes());
    assert_eq!(
        d.decode(0, 0, &r.bytes).unwrap().kind,
        EventKind::SchedProcessExec {
            filename: "/usr/bin/cyclictest".into(),
            pid: 77,
            old_pid: 76
        }
    );
    // The same record cut short: an error that says which event.
    let err = d.decode(0, 0, &r.bytes[..14]).unwrap_err();
    assert!(err.contains("sched_process_exec"), "{err}");
}

#[test]
fn other_events_keep_typed_fields_in_format_order() {
    let (formats, mut d) = decoder();
    let mut r = Rec::new(&formats, "timer", "hrtimer_start");
    r.set("hrtimer", &0xffffc90000001000u64.to_le_bytes())
        .set("function", &0xffffffff81000000u64.to_le_bytes())
        .set("expires", &123_456i64.to_le_bytes())
        .set("softexpires", &(-5i64).to_le_bytes())
        .set("mode", &1u32.to_le_bytes());
    let e = d.decode(0, 0, &r.bytes).unwrap();
    let EventKind::Other { name, fields } = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!(&**name, "timer:hrtimer_start");
    assert_eq!(e.kind.name(), "hrtimer_start");
    let names: Vec<&str> = fields.iter().map(|(n, _)| &**n).collect();
    let fmt_names: Vec<&str> = r.fmt.fields.iter().map(|f| &*f.name).collect();
    assert_eq!(names, fmt_names);
    let get = |n: &str| &fields.iter().find(|(k, _)| &**k == n).unwrap().1;
    assert_eq!(get("hrtimer"), &Value::Uint(0xffffc90000001000));
    assert_eq!(get("expires"), &Value::Int(123_456));
    assert_eq!(get("softexpires"), &Value::Int(-5));
    // Unknown ids are errors with the id.
    let err = d.decode(0, 0, &[0xff, 0xff, 0, 0, 0, 0, 0, 0]).unwrap_err();
    assert!(err.contains("65535"), "{err}");
    assert!(d.decode(0, 0, &[1]).is_err());
}
