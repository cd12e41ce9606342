//! Ring-buffer pages: any bytes, any layout: records stay inside the page, the walk ends.
#![no_main]

use jitterlab_trace::format::Endian;
use jitterlab_trace::ringbuf::{PageLayout, PageReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, page)) = data.split_first() else {
        return;
    };
    let endian = if sel & 1 == 0 {
        Endian::Little
    } else {
        Endian::Big
    };
    let long = if sel & 2 == 0 { 8 } else { 4 };
    let size = if sel & 4 == 0 { page.len() } else { 4096 };
    let layout = PageLayout::new(endian, long, size);
    let Ok(mut r) = PageReader::new(&layout, page) else {
        return;
    };
    let mut n = 0usize;
    while let Ok(Some(rec)) = r.next_record() {
        let start = rec.data.as_ptr() as usize - page.as_ptr() as usize;
        assert!(start + rec.data.len() <= page.len());
        assert!(rec.offset < page.len());
        n += 1;
        assert!(n <= page.len() / 4, "more records than 4-byte words");
    }
});
