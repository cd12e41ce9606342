//! LTTng (CTF 1.8) traces: never panic, never hang, strict or lenient. The input is the
//! metadata's length (4 bytes, little-endian), the metadata, then the stream bytes, cut
//! into two stream files where the next 2 bytes (little-endian) say. Metadata errors
//! name a line (or the metadata packet's offset); stream errors name a byte offset and
//! are of a binary-reader kind; lenient mode never fails once the metadata is read.
//! (crates/trace/tests/ctf/robust.rs runs the same body over mutations of the seeds.)
#![no_main]

use jitterlab_trace::ctf::CtfTrace;
use jitterlab_trace::{ErrorKind, EventSource, Location};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let m = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (metadata, rest) = rest.split_at(m);
    let (cut, bytes) = rest.split_first_chunk::<2>().map_or((0, &[][..]), |(c, b)| (u16::from_le_bytes(*c) as usize, b));
    let (a, b) = bytes.split_at(cut.min(bytes.len()));
    let streams = vec![("channel0_0".to_string(), a.to_vec()), ("channel0_1".to_string(), b.to_vec())];
    for lenient in [false, true] {
        let t = match CtfTrace::from_parts(metadata, streams.clone(), lenient) {
            Ok(t) => t,
            Err(e) => {
                assert!(matches!(e.location, Location::Line(_) | Location::Offset(_) | Location::Whole), "{e}");
                continue;
            }
        };
        let _ = (t.cmdlines(), t.tgids(), t.irq_names());
        let mut ev = t.events().expect("events");
        loop {
            match ev.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    assert!(!lenient, "lenient mode failed: {e}");
                    assert!(matches!(e.location, Location::Offset(_)), "{e}");
                    assert!(
                        matches!(e.kind, ErrorKind::Truncated | ErrorKind::Corrupt | ErrorKind::Limit),
                        "{e}"
                    );
                    break;
                }
            }
        }
        let mut raw = t.raw_events().expect("raw events");
        while let Ok(Some(_)) = raw.next_raw() {}
    }
});
