//! Golden tests: every renderer's output on fixed inputs, compared with the insta
//! snapshots in `tests/snapshots/` (review changes with `cargo insta review`, or rerun
//! with `INSTA_UPDATE=always` and read the diff).
//!
//! Inputs: the host models read from the 2-CPU VM tree of the host crate's fixtures
//! (`crates/host/tests/fixtures/vm2`), partition plans applied and reverted through the
//! host crate's fake system on a copy of that tree, the committed traces of the trace
//! crate (`crates/trace/tests/data`), and latency results built from fixed samples.
//! Nothing here reads the running machine, the clock or a temporary path into a snapshot.

mod golden {
    pub mod audit;
    pub mod experiment;
    pub mod experiment_shapes;
    pub mod export;
    pub mod host;
    pub mod html;
    pub mod latency;
    pub mod partition;
    pub mod table;
    pub mod trace;
}

use std::path::PathBuf;

use jitterlab_render::{render, Format, Render, Style};

/// Compares `text` with the snapshot `tests/snapshots/<name>.snap`.
pub fn check(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// `value` as text, without colour.
pub fn text<T: Render>(value: &T) -> String {
    let mut out = Vec::new();
    render(value, Format::Text(Style::plain()), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// `value` in its JSON envelope.
pub fn json<T: Render>(value: &T) -> String {
    let mut out = Vec::new();
    render(value, Format::Json, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Checks `value`'s text (`<name>.text`) and JSON envelope (`<name>.json`).
pub fn both<T: Render>(name: &str, value: &T) {
    check(&format!("{name}.text"), &text(value));
    check(&format!("{name}.json"), &json(value));
}

/// A path in the workspace.
pub fn workspace(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// The tree captured from the 2-CPU VM.
pub fn vm2() -> jitterlab_host::Root {
    jitterlab_host::Root::at(workspace("host/tests/fixtures/vm2"))
}
