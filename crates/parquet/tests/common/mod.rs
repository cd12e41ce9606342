//! The committed traces the export's tests read (the trace crate's test data).

use std::path::{Path, PathBuf};

/// The committed file `name`, under the trace crate's test data.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../trace/tests/data")
        .join(name)
}

/// The committed trace `name` as a plain file in `dir` (a `.zst` decompressed), named
/// as its file without the `.zst`.
pub fn trace_file(dir: &Path, name: &str) -> PathBuf {
    let bytes = std::fs::read(data(name)).unwrap();
    let file = Path::new(name).file_name().unwrap().to_string_lossy();
    let out = dir.join(file.trim_end_matches(".zst"));
    if name.ends_with(".zst") {
        std::fs::write(&out, zstd::decode_all(&bytes[..]).unwrap()).unwrap();
    } else {
        std::fs::write(&out, bytes).unwrap();
    }
    out
}
