//! Each construct of a print format on a record made for it; what `trace-cmd report -N`
//! prints for whole traces is checked in `tests/dat/print.rs`.

use std::sync::Arc;

use super::*;
use crate::decode::PrintkFormats;

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/// The format text of event 7 of `system`, with `fields` after the common ones.
fn format_text(name: &str, fields: &str, print: &str) -> String {
    format!("name: {name}\nID: 7\nformat:\n{COMMON}{fields}\nprint fmt: {print}\n")
}

fn printer(system: &str, name: &str, fields: &str, print: &str) -> Printer {
    let mut formats = Formats::new();
    formats
        .add_text(system, &format_text(name, fields, print))
        .unwrap();
    let kallsyms = b"ffffffff81000000 T start_kernel\nffffffff81000100 T do_work\n\
                    ffffffff81000200 T end\n";
    let printk = PrintkFormats::parse(
        "0xffffffff82000000 : \"value %d name %s\\n\"\n0xffffffff82000010 : \"a bputs string\\n\"\n",
    );
    Printer::new(Endian::Little, 8, Arc::new(formats))
        .with_kallsyms(Arc::new(kallsyms.to_vec()))
        .with_printk(Arc::new(printk))
}

/// A record of event 7: the common fields, then `payload` (at offset 8).
fn record(payload: &[u8]) -> Vec<u8> {
    let mut r = vec![7, 0, 0, 0, 42, 0, 0, 0];
    r.extend_from_slice(payload);
    r
}

fn print(p: &mut Printer, payload: &[u8]) -> String {
    let mut out = Vec::new();
    p.print(&record(payload), &mut out);
    String::from_utf8(out).unwrap()
}

fn le32(v: i32) -> [u8; 4] {
    v.to_le_bytes()
}

#[test]
fn numbers_casts_and_operators() {
    let fields = "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\
                  \tfield:unsigned long x;\toffset:16;\tsize:8;\tsigned:0;\n";
    let mut p = printer(
        "s",
        "e",
        fields,
        r#""a=%d u=%u ld=%ld x=%08lx s=%d c=%u m=%lu t=%d n=%d l=%d r=%x q=%lu", REC->a, REC->a, REC->a, REC->x, (int)REC->x, (unsigned char)REC->x, REC->x >> 4 & 0xf, REC->a < 0 ? 1 : 2, -REC->a, !REC->a + ~0, sizeof(long) * 2 + sizeof(int), REC->x / 0"#,
    );
    let mut payload = le32(-3).to_vec();
    payload.extend_from_slice(&[0; 4]);
    payload.extend_from_slice(&0x1_2345_6789u64.to_le_bytes());
    assert_eq!(
        print(&mut p, &payload),
        // A field reads zero-extended: `%ld` of an int -3 is 4294967293; comparisons are
        // unsigned (so -3 < 0 is false); a division by zero is 0.
        "a=-3 u=4294967293 ld=4294967293 x=123456789 s=591751049 c=137 m=8 t=2 n=3 l=-1 r=14 q=0"
    );
}

#[test]
fn flags_symbols_and_strings() {
    let fields = "\tfield:unsigned int f;\toffset:8;\tsize:4;\tsigned:0;\n\
                  \tfield:int s;\toffset:12;\tsize:4;\tsigned:1;\n\
                  \tfield:char comm[8];\toffset:16;\tsize:8;\tsigned:0;\n\
                  \tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n";
    let mut p = printer(
        "s",
        "e",
        fields,
        r#""f=%s s=%s c=%-6s| n=%s t=%s %s", __print_flags(REC->f, "|", { 1, "A" }, { 2, "B" }, { 0x10 | 0x20, "CD" }), __print_symbolic(REC->s, { 0, "zero" }, { 1, "one" }, { -1, "minus" }), REC->comm, __get_str(name), REC->s ? "yes" : "no", "lit""#,
    );
    let rec = |f: u32, s: i32, name: &[u8]| {
        let mut v = f.to_le_bytes().to_vec();
        v.extend_from_slice(&s.to_le_bytes());
        v.extend_from_slice(b"bash\0\0\0\0");
        v.extend_from_slice(&(((name.len() as u32) << 16) | 28).to_le_bytes());
        v.extend_from_slice(name);
        v
    };
    assert_eq!(
        print(&mut p, &rec(0x37, 1, b"kworker\0")),
        "f=A|B|CD|0x4 s=one c=bash  | n=kworker t=yes lit"
    );
    assert_eq!(
        print(&mut p, &rec(0, 5, b"\0")),
        "f= s=0x5 c=bash  | n= t=yes lit"
    );
    // A 32-bit -1 is read zero-extended: it is not the entry -1.
    assert_eq!(
        print(&mut p, &rec(0, -1, b"")).split(' ').nth(1),
        Some("s=0xffffffff")
    );
}

#[test]
fn pointers_symbols_and_addresses() {
    let fields = "\tfield:void * fn;\toffset:8;\tsize:8;\tsigned:0;\n\
                  \tfield:__u8 saddr[4];\toffset:16;\tsize:4;\tsigned:0;\n\
                  \tfield:__u8 daddr_v6[16];\toffset:20;\tsize:16;\tsigned:0;\n\
                  \tfield:unsigned char mac[6];\toffset:36;\tsize:6;\tsigned:0;\n\
                  \tfield:__u8 uuid[16];\toffset:42;\tsize:16;\tsigned:0;\n";
    let mut p = printer(
        "s",
        "e",
        fields,
        r#""%pS %ps %pf %p %pK %pI4 %pI6c %pM %pU %pI4", REC->fn, REC->fn, (void *)0xffffffff81000200, (void *)0, REC->fn, REC->saddr, REC->daddr_v6, REC->mac, REC->uuid, REC->fn + 1"#,
    );
    let mut v = 0xffffffff81000104u64.to_le_bytes().to_vec();
    v.extend_from_slice(&[192, 168, 1, 10]);
    let mut v6 = [0u8; 16];
    v6[0] = 0x20;
    v6[1] = 0x01;
    v6[2] = 0x0d;
    v6[3] = 0xb8;
    v6[15] = 1;
    v.extend_from_slice(&v6);
    v.extend_from_slice(&[0, 0x1b, 0x21, 0xaa, 0xbb, 0xcc]);
    v.extend_from_slice(&(0u8..16).collect::<Vec<_>>());
    assert_eq!(
        print(&mut p, &v),
        "do_work+0x4 do_work end (nil) 0xffffffff81000104K 192.168.1.10 2001:db8::1 \
         00:1b:21:aa:bb:cc 00010203-0405-0607-0809-0a0b0c0d0e0f ARG TYPE NOT FIELD BUT 11"
    );
}

#[test]
fn hex_arrays_and_masks() {
    let fields = "\tfield:__data_loc u8[] buf;\toffset:8;\tsize:4;\tsigned:0;\n\
                  \tfield:__data_loc unsigned long[] mask;\toffset:12;\tsize:4;\tsigned:0;\n\
                  \tfield:int arr[3];\toffset:16;\tsize:12;\tsigned:1;\n";
    let mut p = printer(
        "s",
        "e",
        fields,
        r#""h=%s hs=%s a=%s m=%s c=%s i=%d len=%u", __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), __print_hex_str(__get_dynamic_array(buf), 2), __print_array(REC->arr, 3, 4), __get_bitmask(mask), __get_cpumask(mask), REC->arr[2], __get_dynamic_array_len(mask)"#,
    );
    let mut v = ((3u32 << 16) | 28).to_le_bytes().to_vec();
    v.extend_from_slice(&((8u32 << 16) | 31).to_le_bytes());
    for n in [1i32, 2, -3] {
        v.extend_from_slice(&n.to_le_bytes());
    }
    v.extend_from_slice(&[0xde, 0xad, 0xbe]);
    v.extend_from_slice(&[0b0000_1111, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(
        print(&mut p, &v),
        "h=de ad be hs=dead a=1 2 4294967293 m=00000001,0000000f c=0-3,32 i=-3 len=8"
    );
}

#[test]
fn what_libtraceevent_cannot_parse_prints_raw_fields() {
    let fields = "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\
                  \tfield:char name[8];\toffset:12;\tsize:8;\tsigned:0;\n\
                  \tfield:unsigned long addr;\toffset:20;\tsize:8;\tsigned:0;\n\
                  \tfield:short s;\toffset:28;\tsize:2;\tsigned:1;\n";
    let mut v = le32(-5).to_vec();
    v.extend_from_slice(b"abc\0\0\0\0\0");
    v.extend_from_slice(&0xabcu64.to_le_bytes());
    v.extend_from_slice(&(-2i16).to_le_bytes());
    for print_fmt in [
        r#""%d", jiffies_to_msecs(REC->a)"#,
        r#""%d", (struct x){ .a = 1 }"#,
        r#""%d %d", REC->a"#,
        r#""%s", __print_flags(REC->a, "|", { 2 * 2, "X" })"#,
        r#""%d", sizeof(u64)"#,
        "no quotes",
    ] {
        let mut p = printer("s", "e", fields, print_fmt);
        assert_eq!(
            print(&mut p, &v),
            "[FAILED TO PARSE] a=-5 name=abc addr=0xabc s=-2",
            "{print_fmt}"
        );
    }
    // Not printable: an array of bytes, and from then on for that field.
    let mut p = printer("s", "e", fields, r#""%d", nope(REC->a)"#);
    let mut bad = v.clone();
    bad[4] = 0x01;
    let got = print(&mut p, &bad);
    assert!(
        got.contains("name=ARRAY[01, 62, 63, 00, 00, 00, 00, 00]"),
        "{got}"
    );
    assert!(print(&mut p, &v).contains("name=ARRAY[61, 62"));
}

#[test]
fn conversions_libtraceevent_1_7_does_not_know() {
    let fields = "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\
                  \tfield:int b;\toffset:12;\tsize:4;\tsigned:1;\n";
    let mut p = printer("s", "e", fields, r#""%c|%+d|%d\t%%\n", REC->a, REC->b"#);
    let mut v = le32(65).to_vec();
    v.extend_from_slice(&le32(7));
    // `%c` and `%+` print themselves and take no argument: `%d` prints `a`.
    assert_eq!(print(&mut p, &v), ">c<|>+<d|65\t%\n");
}

#[test]
fn ftrace_events_bputs_and_bprint() {
    let ftrace_print = "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
                        \tfield:const char * str;\toffset:16;\tsize:8;\tsigned:0;\n";
    let mut p = printer(
        "ftrace",
        "bputs",
        ftrace_print,
        r#""%ps: %s", (void *)REC->ip, REC->str"#,
    );
    let mut v = 0xffffffff81000000u64.to_le_bytes().to_vec();
    v.extend_from_slice(&0xffffffff82000010u64.to_le_bytes());
    assert_eq!(print(&mut p, &v), "start_kernel: a bputs string");
    let bprint = "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
                  \tfield:const char * fmt;\toffset:16;\tsize:8;\tsigned:0;\n\
                  \tfield:u32 buf[];\toffset:24;\tsize:0;\tsigned:0;\n";
    let mut p = printer(
        "ftrace",
        "bprint",
        bprint,
        r#""%ps: %s", (void *)REC->ip, REC->fmt"#,
    );
    let mut v = 0xffffffff81000100u64.to_le_bytes().to_vec();
    v.extend_from_slice(&0xffffffff82000000u64.to_le_bytes());
    v.extend_from_slice(&le32(-7));
    v.extend_from_slice(b"dd\0");
    assert_eq!(print(&mut p, &v), "do_work: value -7 name dd");
    let mut v = 0xffffffff81000100u64.to_le_bytes().to_vec();
    v.extend_from_slice(&0x1234u64.to_le_bytes());
    v.extend_from_slice(&le32(0));
    assert_eq!(print(&mut p, &v), "do_work: (NO FORMAT FOUND at 1234)\n");
}

#[test]
fn hostile_formats_and_records_do_not_panic() {
    let fields = "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\
                  \tfield:__data_loc char[] s;\toffset:12;\tsize:4;\tsigned:0;\n\
                  \tfield:__data_loc char[] t;\toffset:16;\tsize:2;\tsigned:0;\n\
                  \tfield:char arr[4];\toffset:18;\tsize:4;\tsigned:0;\n";
    let formats = [
        r#""%s %s %d %*d %.*s", __get_str(s), __get_str(t), REC->a[99999999999], REC->a, REC->a, REC->a, __get_str(s)"#,
        r#""%s", __print_hex(__get_dynamic_array(s), 0xffffffffffffffff)"#,
        r#""%s", __print_array(__get_dynamic_array(s), 0xffffffff, 0)"#,
        r#""%d %d %d", 1 << 200, -1 >> 64, 5 % 0"#,
        r#""%pISpc %pI6c %pM %*ph", REC->arr, REC->arr, REC->a, REC->a, __get_dynamic_array(s)"#,
        r#""%2147483647d %.4294967296s", REC->a, __get_str(s)"#,
        "\"%",
        "\"",
        r#""%s", ((((((((((((((((REC->a))))))))))))))))"#,
        r#""%s", __print_flags(REC->a, "|""#,
    ];
    for f in formats {
        let mut p = printer("s", "e", fields, f);
        for rec in [
            vec![],
            vec![0xff; 4],
            record(&[0xff; 20]),
            record(&[0x00; 2]),
            record(&[
                0x01, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0, 0, 0xff, 0xff,
            ]),
        ] {
            let mut out = Vec::new();
            p.print(&rec, &mut out);
            assert!(out.len() < 10_000, "{f}: {} bytes", out.len());
        }
    }
}
