//! Print formats (`print fmt:` of an event's format file) evaluated on records, as
//! `report` prints them: never panic, never print without bound. The input's first line
//! is the print format, the rest the record (its first two bytes are made the event's
//! id); the fields are a fixed set of every kind (numbers of each size, a long, a
//! pointer, fixed arrays, a `__data_loc` string and byte array, a `__rel_loc` one, a
//! tail).
#![no_main]

use std::sync::Arc;

use jitterlab_trace::decode::PrintkFormats;
use jitterlab_trace::format::{Endian, Formats};
use jitterlab_trace::printfmt::Printer;
use libfuzzer_sys::fuzz_target;

const FIELDS: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:u8 a;\toffset:8;\tsize:1;\tsigned:0;\n\
\tfield:short b;\toffset:10;\tsize:2;\tsigned:1;\n\
\tfield:int c;\toffset:12;\tsize:4;\tsigned:1;\n\
\tfield:unsigned long d;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:void * p;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:char comm[16];\toffset:32;\tsize:16;\tsigned:0;\n\
\tfield:__u8 addr[16];\toffset:48;\tsize:16;\tsigned:0;\n\
\tfield:unsigned long args[2];\toffset:64;\tsize:16;\tsigned:0;\n\
\tfield:__data_loc char[] name;\toffset:80;\tsize:4;\tsigned:0;\n\
\tfield:__data_loc u8[] buf;\toffset:84;\tsize:4;\tsigned:0;\n\
\tfield:__rel_loc u32[] rel;\toffset:88;\tsize:4;\tsigned:0;\n\
\tfield:__data_loc char[] old;\toffset:92;\tsize:2;\tsigned:0;\n\
\tfield:char tail[];\toffset:96;\tsize:0;\tsigned:0;\n";

fuzz_target!(|data: &[u8]| {
    let cut = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let print = String::from_utf8_lossy(&data[..cut]);
    let mut record = data.get(cut + 1..).unwrap_or(&[]).to_vec();
    if record.len() >= 2 {
        record[..2].copy_from_slice(&7u16.to_le_bytes());
    }
    for (system, name) in [("fuzz", "event"), ("ftrace", "bprint"), ("ftrace", "print")] {
        let text = format!("name: {name}\nID: 7\nformat:\n{FIELDS}\nprint fmt: {print}\n");
        let mut formats = Formats::new();
        if formats.add_text(system, &text).is_err() {
            return;
        }
        let kallsyms = b"ffffffff81000000 T start\nffffffff81000100 t middle\nffffffff81000200 T end\n";
        let printk = PrintkFormats::parse("0xffffffff82000000 : \"%d %s %pS %*ph %llx\\n\"\n");
        for endian in [Endian::Little, Endian::Big] {
            for long in [4, 8] {
                let mut p = Printer::new(endian, long, Arc::new(formats.clone()))
                    .with_kallsyms(Arc::new(kallsyms.to_vec()))
                    .with_printk(Arc::new(printk.clone()));
                let mut out = Vec::new();
                p.print(&record, &mut out);
                // Bounded by the format and the record: widths are capped at 4096.
                assert!(
                    out.len() <= 64 * 1024 + 4200 * (print.len() + record.len()),
                    "{} bytes",
                    out.len()
                );
                let _ = p.untyped_fields(&record);
                let _ = p.name(&record);
            }
        }
    }
});
