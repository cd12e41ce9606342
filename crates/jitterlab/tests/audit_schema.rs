//! `jitterlab audit --json` against docs/schema/jitterlab.audit.v1.json: the static
//! audits of the `audit-*` fixture trees (and a `--compare` of one with another), the
//! committed live quick audit (web/test/fixtures/audit-quick.json, with what it
//! measured), the render crate's golden JSON of audits (made from the model as it is
//! now), and broken copies of the quick audit that the schema must refuse. None of
//! these touches the host: the static audits read fixture trees (`--root`), and nothing
//! is measured.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{run, stderr};

/// The errors of `doc` against docs/schema/jitterlab.audit.v1.json.
fn schema_errors(doc: &Value) -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/schema/jitterlab.audit.v1.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON schema");
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

/// The fixture trees made for the audit: crates/host/tests/fixtures/audit-*.
fn audit_trees() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/fixtures");
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("audit-"))
        })
        .collect();
    trees.sort();
    trees
}

/// `jitterlab --root TREE audit --static --json` (and `extra`): the whole document,
/// after checking that the exit status is the verdict's (0, or 3 when unfit).
fn static_audit(tree: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "--root",
        tree.to_str().unwrap(),
        "audit",
        "--static",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 3)),
        "{} {extra:?}: exit {code:?}: {}",
        tree.display(),
        stderr(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(doc["schema"], "jitterlab.audit");
    let unfit = doc["data"]["verdict"] == "unfit";
    assert_eq!(
        code,
        Some(if unfit { 3 } else { 0 }),
        "{}: the exit status is not the verdict's ({})",
        tree.display(),
        doc["data"]["verdict"]
    );
    doc
}

fn assert_valid(what: &str, doc: &Value) {
    let errors = schema_errors(doc);
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

#[test]
fn static_audits_of_the_fixture_trees_match_the_schema() {
    let trees = audit_trees();
    assert!(trees.len() >= 2, "audit fixture trees: {trees:?}");
    for tree in &trees {
        let doc = static_audit(tree, &[]);
        assert_valid(&tree.display().to_string(), &doc);
        let d = &doc["data"];
        assert_eq!(d["mode"], "static", "{}", tree.display());
        assert!(d["measured"].is_null(), "{}", tree.display());
        assert!(d["compare"].is_null(), "{}", tree.display());
        assert!(
            !d["findings"].as_array().unwrap().is_empty(),
            "{}: no findings",
            tree.display()
        );
    }
}

#[test]
fn static_audit_compared_with_another_matches_the_schema() {
    let trees = audit_trees();
    assert!(trees.len() >= 2, "audit fixture trees: {trees:?}");
    let (first, second) = (&trees[0], &trees[1]);
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    let before = static_audit(first, &[]);
    std::fs::write(&old, serde_json::to_string(&before).unwrap()).unwrap();
    let doc = static_audit(second, &["--compare", old.to_str().unwrap()]);
    assert_valid(
        &format!("{} --compare {}", second.display(), first.display()),
        &doc,
    );
    let c = &doc["data"]["compare"];
    assert!(c.is_object(), "no comparison: {c}");
    assert_eq!(c["old"], old.to_str().unwrap());
    // Two different machines: something went or came.
    let changed = c["gone"].as_array().unwrap().len() + c["new"].as_array().unwrap().len();
    assert!(changed > 0, "{c}");
}

/// The committed quick audit of the project's VM: what it measured included.
fn audit_quick() -> Value {
    let path = crate::util::repo().join("web/test/fixtures/audit-quick.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn committed_quick_audit_matches_the_schema() {
    let doc = audit_quick();
    assert_valid("web/test/fixtures/audit-quick.json", &doc);
    // The measured part is there to be validated: latency phases with a blamed spike,
    // the noise probe with its traced account.
    let m = &doc["data"]["measured"];
    let phases = m["latency"].as_array().unwrap();
    assert!(phases.iter().any(|p| p["blamed"].is_object()), "{m}");
    assert!(phases.iter().any(|p| p["worst_spike"].is_object()), "{m}");
    let noise = m["noise"].as_array().unwrap();
    assert!(noise.iter().any(|n| n["traced"].is_object()), "{m}");
    assert!(
        noise
            .iter()
            .any(|n| !n["traced"]["gaps"].as_array().unwrap().is_empty()),
        "{m}"
    );
}

/// The render crate's golden JSON of the audits it renders (crates/render/tests/
/// snapshots/audit-*.json.snap): made from the model in Rust, so they follow it field
/// for field, a measured audit among them.
#[test]
fn render_goldens_match_the_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../render/tests/snapshots");
    let mut checked = 0;
    let mut measured = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.starts_with("audit-") && name.ends_with(".json.snap")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // insta's header, between two `---` lines, then the JSON.
        let json = text
            .splitn(3, "---\n")
            .nth(2)
            .unwrap_or_else(|| panic!("{name}: no header"));
        let doc: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc["schema"], "jitterlab.audit", "{name}");
        assert_valid(&name, &doc);
        checked += 1;
        measured += usize::from(doc["data"]["measured"].is_object());
    }
    assert!(checked >= 2, "only {checked} audit goldens");
    assert!(measured >= 1, "no measured audit among the goldens");
}

#[test]
fn schema_refuses_a_broken_audit() {
    // A finding without a field serde always writes.
    let mut broken = audit_quick();
    let removed = broken["data"]["findings"][0]
        .as_object_mut()
        .unwrap()
        .remove("why");
    assert!(removed.is_some());
    let errors = schema_errors(&broken);
    assert!(!errors.is_empty(), "a finding without `why` passed");
    assert!(
        errors.iter().any(|e| e.contains("/data/findings/0")),
        "{errors:#?}"
    );
    // A verdict that is not one.
    let mut broken = audit_quick();
    broken["data"]["verdict"] = "fit".into();
    let errors = schema_errors(&broken);
    assert!(!errors.is_empty(), "verdict `fit` passed");
    assert!(
        errors.iter().any(|e| e.contains("/data/verdict")),
        "{errors:#?}"
    );
    // The measured part is checked too: a noise phase without its account's note.
    let mut broken = audit_quick();
    broken["data"]["measured"]["noise"][0]
        .as_object_mut()
        .unwrap()
        .remove("trace_note");
    assert!(!schema_errors(&broken).is_empty());
}
