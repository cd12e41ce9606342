//! trace-cmd .dat files: never panic, never hang, strict or lenient; lenient mode never
//! fails once the metadata is read; errors point into the file and are of a binary-reader
//! kind (never I/O, since the bytes are in memory, nor a text reader's). Every record's
//! print format is evaluated too, as `report` prints it.
#![no_main]

use jitterlab_trace::dat::{DatFile, DatOptions};
use jitterlab_trace::{ErrorKind, EventSource, Location};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for lenient in [false, true] {
        let mut dat = match DatFile::parse_with("fuzz", data, DatOptions { lenient }) {
            Ok(d) => d,
            Err(e) => {
                assert!(
                    matches!(e.location, Location::Offset(_) | Location::Whole),
                    "{e}"
                );
                assert!(
                    matches!(
                        e.kind,
                        ErrorKind::UnknownFormat
                            | ErrorKind::Unsupported
                            | ErrorKind::Truncated
                            | ErrorKind::Corrupt
                            | ErrorKind::Format
                            | ErrorKind::Decompress
                            | ErrorKind::Limit
                    ),
                    "{e}"
                );
                continue;
            }
        };
        let _ = dat.cmdlines();
        let _ = dat.kallsyms();
        // Layout warnings name an offset.
        for w in dat.warnings() {
            assert!(matches!(w.location, Location::Offset(_)), "{w}");
        }
        if let Ok(choice) = dat.choose_buffer(None) {
            let _ = choice.note();
        }
        // What report prints: every buffer merged, each record's print format.
        let all: Vec<usize> = (0..dat.buffers().len()).collect();
        if let Ok(mut src) = dat.events_of(&all) {
            src.keep_records();
            let mut printer = dat.printer();
            let mut out = Vec::new();
            while let Ok(Some(_)) = src.next_event() {
                if let Some(o) = src.origin() {
                    out.clear();
                    printer.print(o.record, &mut out);
                    let _ = printer.untyped_fields(o.record);
                }
            }
        }
        for b in 0..dat.buffers().len() {
            let _ = dat.count_events(b);
            let Ok(mut src) = dat.events(b) else { continue };
            loop {
                match src.next_event() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        assert!(!lenient, "lenient mode failed: {e}");
                        assert!(matches!(e.location, Location::Offset(_)), "{e}");
                        // Metadata was read: only the data can be bad.
                        assert!(
                            matches!(
                                e.kind,
                                ErrorKind::Truncated
                                    | ErrorKind::Corrupt
                                    | ErrorKind::Decompress
                                    | ErrorKind::Limit
                            ),
                            "{e}"
                        );
                        break;
                    }
                }
            }
        }
    }
});
