//! The host crate's integration tests: parsers against a tree captured from a
//! 2-CPU VM (fixtures/vm2, see fixtures/capture.sh), made-up trees for larger
//! and stranger machines, malformed files, and the live host.

mod fake;
mod hostile;
mod lint;
mod live;
mod malformed;
mod partition;
mod skip;
mod tracefs;
mod vm2;
mod wide;

use std::path::PathBuf;

use jitterlab_host::Root;

/// The tree captured from a 2-CPU VM with fixtures/capture.sh.
pub fn vm2() -> Root {
    Root::at(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm2"))
}
