//! The checks the text fuzz targets make on one reader: never panic, strict or lenient;
//! events come out in time order; an error names a line of the input and is a line's
//! problem (never I/O: the bytes are in memory).

use jitterlab_trace::text::{detect, open, TextKind, TextOptions};
use jitterlab_trace::{Error, ErrorKind, Location};

pub fn check(data: &[u8], kind: TextKind) {
    let _ = detect(data);
    // Lines end at LF, or (in text without LF) at CR: at most one more than their ends.
    let lines = 1 + data.iter().filter(|b| **b == b'\n' || **b == b'\r').count() as u64;
    for lenient in [false, true] {
        let opts = TextOptions {
            lenient,
            reorder_window: data.first().map_or(0, |b| *b as usize % 8),
            ..TextOptions::named("fuzz")
        };
        let mut r = match open(data, kind, opts) {
            Ok(r) => r,
            Err(e) => {
                assert!(!lenient, "lenient mode failed: {e}");
                assert!(matches!(e.location, Location::Line(n) if n >= 1 && n <= lines));
                assert!(is_line_error(&e), "{e}");
                continue;
            }
        };
        let mut last = 0;
        let mut errors = 0;
        loop {
            match r.next_event() {
                Ok(Some(e)) => {
                    assert!(e.ts >= last, "out of order");
                    last = e.ts;
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(!lenient, "lenient mode failed: {e}");
                    assert!(matches!(e.location, Location::Line(n) if n >= 1 && n <= lines));
                    assert!(is_line_error(&e), "{e}");
                    errors += 1;
                    assert!(errors <= lines, "errors without end");
                }
            }
        }
        let _ = (r.meta(), r.stats());
    }
}

/// The kinds a text reader reports for a bad line.
fn is_line_error(e: &Error) -> bool {
    matches!(
        e.kind,
        ErrorKind::Syntax | ErrorKind::Limit | ErrorKind::OutOfOrder
    )
}
