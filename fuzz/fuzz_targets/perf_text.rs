//! `perf script` text: never panic, strict or lenient; events come out in time order; an
//! error names a line of the input.
#![no_main]

#[path = "common/text.rs"]
mod text;

use jitterlab_trace::text::TextKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| text::check(data, TextKind::PerfScript));
