//! Embeds the HTML report's viewer: the JavaScript modules and style sheets listed in
//! `web/MODULES`, in that order (see docs/html.md).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

fn main() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web");
    let web = web.canonicalize().unwrap_or(web);
    // MODULES and the files it names, not all of web/: the browser tests write there
    // (web/test/node_modules, golden and failed screenshots).
    let list = web.join("MODULES");
    println!("cargo:rerun-if-changed={}", list.display());
    let modules =
        fs::read_to_string(&list).unwrap_or_else(|e| panic!("cannot read {}: {e}", list.display()));
    let (mut js, mut css) = (String::new(), String::new());
    for name in modules.lines().map(str::trim) {
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        let path = web.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        assert!(
            path.is_file(),
            "web/MODULES names {name}, which is not a file in web/"
        );
        let list = if name.ends_with(".css") {
            &mut css
        } else {
            &mut js
        };
        writeln!(
            list,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    let mut out = String::from("/// The viewer's modules, in order: file name and text.\n");
    writeln!(
        out,
        "pub(super) const MODULES: &[(&str, &str)] = &[\n{js}];"
    )
    .unwrap();
    out.push_str("/// The viewer's style sheets, in order: file name and text.\n");
    writeln!(
        out,
        "pub(super) const STYLES: &[(&str, &str)] = &[\n{css}];"
    )
    .unwrap();
    let dest = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("web.rs");
    fs::write(&dest, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
}
