//! docs/parquet.md documents every table and column the export writes: its tables section
//! is what [`markdown`] renders from the code's own table definitions.

use jitterlab_parquet::{TableDef, PROVENANCE, RESULT_TABLES, SCHEMA_VERSION, TRACE_TABLES};
use serde_json::json;

fn table(def: &TableDef) -> String {
    let mut s = format!(
        "### `{}`\n\nA row is {}.\n\n| column | type | null | meaning |\n|---|---|---|---|\n",
        def.name, def.doc
    );
    for c in def.cols {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            c.name,
            c.ty.doc_name(),
            if c.nullable { "yes" } else { "no" },
            c.doc
        ));
    }
    s
}

/// The tables section of docs/parquet.md.
fn markdown() -> String {
    let mut s = String::from("<!-- tables: generated from crates/parquet/src/tables/*.rs; `cargo test -p jitterlab-parquet --test docs` checks it, UPDATE_DOCS=1 rewrites it -->\n\n## Provenance columns (first in every table)\n\n| column | type | null | meaning |\n|---|---|---|---|\n");
    for c in PROVENANCE {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            c.name,
            c.ty.doc_name(),
            if c.nullable { "yes" } else { "no" },
            c.doc
        ));
    }
    s.push_str("\n## Tables of a trace\n\n");
    for d in TRACE_TABLES {
        s.push_str(&table(d));
        s.push('\n');
    }
    s.push_str("## Tables of results\n\n");
    for d in RESULT_TABLES {
        s.push_str(&table(d));
        s.push('\n');
    }
    s.push_str("<!-- end of tables -->\n");
    s
}

#[test]
fn docs_list_every_table_and_column() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/parquet.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find("<!-- tables:")
        .expect("docs/parquet.md has a tables section");
    let end = text.find("<!-- end of tables -->\n").expect("and its end")
        + "<!-- end of tables -->\n".len();
    let want = markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let new = format!("{}{}{}", &text[..start], want, &text[end..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert_eq!(
        &text[start..end],
        want,
        "docs/parquet.md is out of date: UPDATE_DOCS=1 cargo test -p jitterlab-parquet --test docs"
    );
}

/// The schema file of a table: its columns as an engine reads them (Arrow types, as
/// pyarrow names them) after the hive partition's keys.
fn schema_file(def: &TableDef) -> String {
    let fields: Vec<serde_json::Value> = PROVENANCE
        .iter()
        .chain(def.cols)
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.ty.arrow_name(),
                "nullable": c.nullable,
                "doc": c.doc,
            })
        })
        .collect();
    let doc = json!({
        "table": def.name,
        "schema_version": SCHEMA_VERSION,
        "doc": format!("A row is {}.", def.doc),
        "path": format!("DIR/{}/host=HOST/run_id=RUN/part.parquet", def.name),
        "partitioning": [
            {"name": "host", "type": "string"},
            {"name": "run_id", "type": "string"},
        ],
        "fields": fields,
    });
    serde_json::to_string_pretty(&doc).unwrap() + "\n"
}

#[test]
fn a_schema_file_per_table() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/parquet");
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut names = Vec::new();
    for def in TRACE_TABLES.iter().chain(RESULT_TABLES.iter()) {
        let path = dir.join(format!("{}.json", def.name));
        names.push(format!("{}.json", def.name));
        let want = schema_file(def);
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            have,
            want,
            "{} is out of date: UPDATE_DOCS=1 cargo test -p jitterlab-parquet --test docs",
            path.display()
        );
    }
    // No file of a table that is gone.
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    names.sort();
    assert_eq!(found, names, "{}", dir.display());
}
