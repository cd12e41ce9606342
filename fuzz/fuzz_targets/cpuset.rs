//! CPU list and mask parsers: never panic; what parses prints back to itself.
#![no_main]

use jitterlab_cpuset::CpuSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(set) = CpuSet::parse_list(text) {
        assert_eq!(CpuSet::parse_list(&set.to_string()).unwrap(), set);
        assert_eq!(CpuSet::parse_mask(&set.to_mask_string()).unwrap(), set);
    }
    if let Ok(set) = CpuSet::parse_mask(text) {
        assert_eq!(CpuSet::parse_mask(&set.to_mask_string()).unwrap(), set);
        assert_eq!(CpuSet::parse_list(&set.to_string()).unwrap(), set);
    }
});
