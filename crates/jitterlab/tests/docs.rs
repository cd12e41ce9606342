//! The documentation cannot drift silently: every relative link in the repository's
//! Markdown files resolves inside the repository (and its `#anchor` to a heading),
//! docs/json.md names every property of the JSON Schema files under that schema's
//! section, and the README's set-up commands are the ones CI runs. The help, the docs,
//! the recipes, the web pages and the messages speak of practices and findings, never of
//! "seed 004"; the shell completions and the man pages hold every command and option.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

#[allow(dead_code)] // the helpers the other test binaries use
mod util;

use util::repo;

/// Every Markdown file of the repository, relative to its root; build output, fuzzer
/// corpora, npm's node_modules (web/test) and hidden directories are not the repository's.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                let skip = name.starts_with('.')
                    || name == "target"
                    || name == "node_modules"
                    || (dir.ends_with("fuzz")
                        && ["corpus", "artifacts", "coverage"].contains(&name.as_str()));
                if !skip {
                    walk(root, &path, out);
                }
            } else if name.ends_with(".md") {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// The text of a Markdown file outside fenced code blocks, line by line (code lines
/// blanked, so line numbers stay right).
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return String::new();
            }
            if fenced {
                String::new()
            } else {
                strip_code_spans(line)
            }
        })
        .collect()
}

/// A line with its inline code spans (`...`) replaced by spaces.
fn strip_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` and reference definitions
/// `[label]: target` of one line of prose.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        // `[text](target "title")`
        let target = target.split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        out.push(target.to_string());
        rest = &after[end..];
    }
    let t = line.trim_start();
    if t.starts_with('[') {
        if let Some(close) = t.find("]:") {
            let target = t[close + 2..].split_whitespace().next().unwrap_or("");
            if !target.is_empty() {
                out.push(target.to_string());
            }
        }
    }
    out
}

/// GitHub's anchor of a heading: lowercase; letters, digits, `-` and `_` kept; spaces
/// to `-`; everything else (punctuation, backticks, dashes like —) dropped. A link's
/// text counts, its target does not.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        match rest[at..].find(')') {
            Some(end) => rest = &rest[at + end + 1..],
            None => {
                rest = "";
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings, with GitHub's `-1`, `-2` suffixes for
/// repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let t = line.trim_start_matches('#');
        if t.len() == line.len() || !t.starts_with(' ') || line.len() - t.len() > 6 {
            continue;
        }
        let base = slug(t);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `path` joined onto `dir` without touching the file system; `None` when `..` climbs
/// above the repository root.
fn resolve(dir: &Path, path: &str) -> Option<PathBuf> {
    let mut parts: Vec<String> = dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    for c in Path::new(path).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(p) => parts.push(p.to_string_lossy().to_string()),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("`jitterlab show` — where everything runs"),
        "jitterlab-show--where-everything-runs"
    );
    assert_eq!(slug("Set-up"), "set-up");
    assert_eq!(slug("`jitterlab.show.irqs`"), "jitterlabshowirqs");
    assert_eq!(slug("Move things: `pin`, `irq`"), "move-things-pin-irq");
    assert_eq!(slug("[Link](x.md) text"), "link-text");
    let a = anchors("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n");
    assert_eq!(a.into_iter().collect::<Vec<_>>(), ["a", "notes", "notes-1"]);
}

#[test]
fn link_targets_are_found_outside_code() {
    let lines = prose_lines("see [a](b.md#c) and `[x](y)`\n```\n[z](w)\n```\n[r]: ../s.md\n");
    let found: Vec<String> = lines.iter().flat_map(|l| link_targets(l)).collect();
    assert_eq!(found, ["b.md#c", "../s.md"]);
}

/// Every relative link of every Markdown file resolves to a file or directory inside
/// the repository; a link with an anchor into a Markdown file names one of its headings.
#[test]
fn markdown_links_stay_in_the_repository_and_resolve() {
    let root = repo();
    let files = markdown_files(&root);
    for must in [
        "README.md",
        "GUIDE.md",
        "HACKING.md",
        "BENCHMARKS.md",
        "docs/json.md",
    ] {
        assert!(
            files.iter().any(|f| f == Path::new(must)),
            "{must} is missing; found {files:?}"
        );
    }
    let mut problems = Vec::new();
    let (mut links, mut with_anchor) = (0, 0);
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let dir = file.parent().unwrap_or(Path::new(""));
        for (n, line) in prose_lines(&text).iter().enumerate() {
            for target in link_targets(line) {
                let at = format!("{}:{}: {target}", file.display(), n + 1);
                if target.starts_with("http://")
                    || target.starts_with("https://")
                    || target.starts_with("mailto:")
                {
                    continue;
                }
                links += 1;
                if target.is_empty() || target.starts_with('/') || target.contains("://") {
                    problems.push(format!("{at}: not a relative link"));
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let resolved = if path.is_empty() {
                    file.clone()
                } else {
                    match resolve(dir, path) {
                        Some(p) => p,
                        None => {
                            problems.push(format!("{at}: leaves the repository"));
                            continue;
                        }
                    }
                };
                let full = root.join(&resolved);
                if !full.exists() {
                    problems.push(format!("{at}: {} does not exist", resolved.display()));
                    continue;
                }
                if let Some(anchor) = anchor {
                    if resolved.extension().is_some_and(|e| e == "md") {
                        with_anchor += 1;
                        let heads = anchors(&std::fs::read_to_string(&full).unwrap());
                        if !heads.contains(anchor) {
                            problems.push(format!(
                                "{at}: no heading #{anchor} in {} (it has {heads:?})",
                                resolved.display()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
    assert!(
        links >= 40,
        "only {links} relative links checked in {} files",
        files.len()
    );
    assert!(with_anchor >= 10, "only {with_anchor} anchors checked");
}

/// The body of the `## ` section of docs/json.md whose heading is exactly `title`.
fn section<'a>(doc: &'a str, title: &str) -> Option<&'a str> {
    let mut start = None;
    let mut offset = 0;
    for line in doc.split_inclusive('\n') {
        let heading = line.strip_prefix("## ").map(str::trim);
        match (start, heading) {
            (None, Some(h)) if h == title => start = Some(offset + line.len()),
            (Some(s), Some(_)) => return Some(&doc[s..offset]),
            _ => {}
        }
        offset += line.len();
    }
    start.map(|s| &doc[s..])
}

/// Every key of every `properties` object in a JSON Schema, nested ones included.
fn property_names(schema: &serde_json::Value, out: &mut BTreeSet<String>) {
    match schema {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                if key == "properties" {
                    if let Some(props) = value.as_object() {
                        out.extend(props.keys().cloned());
                    }
                }
                property_names(value, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

/// docs/json.md names every property of docs/schema/NAME.vN.json in its `NAME`
/// section, as `` `prop` `` or `` `prop[]` `` (the envelope's `schema`, `version`,
/// `producer` and `data` in its envelope section).
#[test]
fn json_doc_names_every_schema_property() {
    let root = repo();
    let doc = std::fs::read_to_string(root.join("docs/json.md")).unwrap();
    let envelope = section(&doc, "The envelope").expect("docs/json.md: no `## The envelope`");
    let mut schemas = 0;
    let mut checked = 0;
    let mut missing = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(root.join("docs/schema"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let Some(stem) = file.strip_suffix(".json") else {
            continue;
        };
        // jitterlab.analyze.v1 -> jitterlab.analyze
        let (name, version) = stem.rsplit_once('.').unwrap();
        assert!(version.starts_with('v'), "{file}: expected NAME.vN.json");
        schemas += 1;
        let title = format!("`{name}`");
        let body = section(&doc, &title)
            .unwrap_or_else(|| panic!("docs/json.md has no section `## {title}` for {file}"));
        assert!(
            body.contains(&format!("schema/{file}")),
            "docs/json.md's {name} section does not link docs/schema/{file}"
        );
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut names = BTreeSet::new();
        property_names(&schema, &mut names);
        for prop in names {
            checked += 1;
            let text = if ["schema", "version", "producer", "data"].contains(&prop.as_str()) {
                envelope
            } else {
                body
            };
            // Arrays are written `name[]`.
            if !text.contains(&format!("`{prop}`")) && !text.contains(&format!("`{prop}[]`")) {
                missing.push(format!("{name}: `{prop}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/json.md does not name these schema properties:\n{}",
        missing.join("\n")
    );
    assert!(schemas >= 2, "only {schemas} schema files found");
    assert!(checked >= 150, "only {checked} properties checked");
}

/// The README's two set-up commands are the ones a newcomer types, and CI runs the
/// test command.
#[test]
fn readme_setup_commands_are_the_ones_ci_runs() {
    let root = repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let setup = readme
        .split("## Set-up")
        .nth(1)
        .expect("README.md: no Set-up section");
    let commands: Vec<&str> = prose_free_code(setup.split("\n## ").next().unwrap());
    assert_eq!(
        commands,
        [
            "cargo install --locked --path crates/jitterlab && jitterlab audit",
            "cargo test --workspace --locked"
        ]
    );
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci
        .lines()
        .any(|l| l.trim() == "cargo test --workspace --locked"));
    assert!(
        readme.lines().count() <= 220,
        "README.md has {} lines: the reference belongs in GUIDE.md",
        readme.lines().count()
    );
}

/// The lines inside the fenced code blocks of `text`.
fn prose_free_code(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced && !line.trim().is_empty() {
            out.push(line.trim());
        }
    }
    out
}

/// Runs the binary; its stdout, which must be a success.
fn jitterlab(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run jitterlab");
    assert!(
        out.status.success(),
        "jitterlab {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The names a help text lists under `Commands:` (two spaces in, then the name; wrapped
/// descriptions are indented further).
fn listed_commands(help: &str) -> Vec<String> {
    let Some((_, rest)) = help.split_once("\nCommands:\n") else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The long flags (`--cpus`) of the option lines of a help text.
fn listed_flags(help: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in help.lines() {
        let Some(t) = line.strip_prefix("  ") else {
            continue;
        };
        let t = t.trim_start();
        if !t.starts_with('-') || line.len() - t.len() > 6 {
            continue;
        }
        // The option's names end where its description starts.
        let names = t.split("  ").next().unwrap_or("");
        for word in names.split([' ', ',']) {
            if let Some(name) = word.strip_prefix("--") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// Every command path of the binary (`[]`, `["show"]`, `["irq", "set"]` ...) with its
/// long flags, from `jitterlab help PATH`.
fn command_tree() -> Vec<(Vec<String>, BTreeSet<String>)> {
    let mut out = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let mut args = vec!["help"];
        args.extend(path.iter().map(String::as_str));
        let help = jitterlab(&args);
        for sub in listed_commands(&help) {
            let mut p = path.clone();
            p.push(sub);
            todo.push(p);
        }
        out.push((path, listed_flags(&help)));
    }
    out.sort();
    out
}

/// Where `text` speaks of a seed by its number ("seed 004", "seed-000", "seed003"), of
/// "seed's" or of "the seeds": words that mean nothing outside the project. An RNG seed
/// ("seed 42", `--seed 7`) is not one: the seeds are numbered 000 to 004.
fn seed_references(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut hits = Vec::new();
    for (at, _) in lower.match_indices("seed") {
        let rest = &lower[at + 4..];
        let rest_num = rest.strip_prefix([' ', '-', '_']).unwrap_or(rest);
        let digits: String = rest_num.chars().take_while(char::is_ascii_digit).collect();
        let numbered = digits.len() == 3 && digits.starts_with('0');
        let word_start = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        let possessive = rest.starts_with("'s") || rest.starts_with("\u{2019}s");
        let the_seeds = lower[..at].ends_with("the ") && rest.starts_with('s');
        if word_start && (numbered || possessive || the_seeds) {
            let line = text[..at].matches('\n').count() + 1;
            let end = (at + 16).min(text.len());
            let shown: String = text.get(at..end).unwrap_or("").chars().collect();
            hits.push(format!("line {line}: {shown:?}"));
        }
    }
    hits
}

#[test]
fn seed_references_are_found() {
    for hit in [
        "as seed 004's stress",
        "Seed 000's trap",
        "seed-003",
        "seed003-slides",
        "the seed's measurement",
        "one per seed, the seeds say",
    ] {
        assert!(!seed_references(hit).is_empty(), "{hit}");
    }
    for fine in [
        "experiment smoke: 12 runs; seed 3",
        "--seed 42",
        "seeded run plan",
        "fuzz seeds: the synthetic traces",
        "seed 1234",
    ] {
        assert_eq!(seed_references(fine), Vec::<String>::new(), "{fine}");
    }
}

/// Files under `dir` (recursively) whose names end with one of `exts`; build output,
/// npm's node_modules, test goldens and hidden directories left out.
fn files_with(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                files_with(&path, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// Issue 18: the help of every command (short and long), every Markdown file, the
/// built-in recipes, the web pages' text and the messages in the code (its lines that
/// are not comments) never speak of "seed 004" or "the seed's": they name the practice
/// or the finding ("taskset -p moves only the main thread").
#[test]
fn help_docs_and_messages_name_practices_not_seeds() {
    let root = repo();
    let mut hits = Vec::new();
    let tree = command_tree();
    assert!(tree.len() >= 20, "only {} commands found", tree.len());
    for (path, _) in &tree {
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        let mut long = vec!["help"];
        long.extend(&p);
        let mut short = p.clone();
        short.push("--help");
        for args in [long, short] {
            for h in seed_references(&jitterlab(&args)) {
                hits.push(format!("jitterlab {}: {h}", args.join(" ")));
            }
        }
    }
    let mut files: Vec<PathBuf> = markdown_files(&root).iter().map(|f| root.join(f)).collect();
    files_with(
        &root.join("crates/experiment/recipes"),
        &[".toml"],
        &mut files,
    );
    files_with(
        &root.join("web"),
        &[".js", ".mjs", ".css", ".html", "MODULES"],
        &mut files,
    );
    let docs = files.len();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for h in seed_references(&text) {
            hits.push(format!("{}: {h}", f.strip_prefix(&root).unwrap().display()));
        }
    }
    // The code's messages: every line of the crates' sources that is not a comment.
    let mut sources = Vec::new();
    for dir in std::fs::read_dir(root.join("crates")).unwrap() {
        let dir = dir.unwrap().path();
        files_with(&dir.join("src"), &[".rs"], &mut sources);
        files_with(&dir.join("benches"), &[".rs"], &mut sources);
    }
    for f in &sources {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for h in seed_references(line) {
                let h = h.trim_start_matches("line 1: ");
                hits.push(format!(
                    "{}:{}: {h}",
                    f.strip_prefix(&root).unwrap().display(),
                    n + 1
                ));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "say the practice or the finding, not the seed:\n{}",
        hits.join("\n")
    );
    assert!(docs >= 20, "only {docs} documents read");
    assert!(
        sources.len() >= 100,
        "only {} source files read",
        sources.len()
    );
}

/// Issue 18: `jitterlab completions bash` completes every command and sub-command with
/// every one of its long flags, zsh's and fish's name them too, and `jitterlab man --dir`
/// writes a page per command (`jitterlab-irq-set.1`) that names each of its flags.
#[test]
fn completions_and_man_pages_cover_every_command_and_flag() {
    let tree = command_tree();
    let bash = jitterlab(&["completions", "bash"]);
    let zsh = jitterlab(&["completions", "zsh"]);
    let fish = jitterlab(&["completions", "fish"]);
    let dir = tempfile::tempdir().unwrap();
    let listed = jitterlab(&["man", "--dir", dir.path().to_str().unwrap()]);
    let mut problems = Vec::new();
    let mut flags = 0;
    for (path, long) in &tree {
        // bash: the command's case, and its options' list there.
        let label = std::iter::once("jitterlab".to_string())
            .chain(path.iter().cloned())
            .collect::<Vec<_>>()
            .join("__subcmd__");
        let opts = bash
            .split(&format!("\n        {label})\n"))
            .nth(1)
            .and_then(|case| case.lines().find(|l| l.trim().starts_with("opts=")))
            .map(|l| {
                l.split_whitespace()
                    .map(|w| w.trim_matches('"'))
                    .collect::<Vec<_>>()
            });
        let page_name = std::iter::once("jitterlab")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("-");
        let page = std::fs::read_to_string(dir.path().join(format!("{page_name}.1")));
        let name = path.join(" ");
        match (&opts, &page) {
            (None, _) => problems.push(format!("bash: no case for `jitterlab {name}`")),
            (_, Err(e)) => problems.push(format!("man: {page_name}.1: {e}")),
            _ => {}
        }
        if !listed.contains(&format!("{page_name}.1")) {
            problems.push(format!("man --dir did not list {page_name}.1"));
        }
        if let Some(last) = path.last() {
            for (shell, script) in [("zsh", &zsh), ("fish", &fish)] {
                if !script.contains(last.as_str()) {
                    problems.push(format!("{shell}: no `{last}`"));
                }
            }
        }
        for flag in long {
            flags += 1;
            let long_flag = format!("--{flag}");
            if opts
                .as_ref()
                .is_some_and(|o| !o.contains(&long_flag.as_str()))
            {
                problems.push(format!(
                    "bash: `jitterlab {name}` does not complete {long_flag}"
                ));
            }
            // roff escapes every `-`.
            let roff = long_flag.replace('-', "\\-");
            if page
                .as_ref()
                .is_ok_and(|p| !p.contains(&format!("\\fB{roff}\\fR")))
            {
                problems.push(format!("man: {page_name}.1 does not name {long_flag}"));
            }
            for (shell, script) in [("zsh", &zsh), ("fish", &fish)] {
                if !script.contains(flag.as_str()) {
                    problems.push(format!("{shell}: no {long_flag}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(tree.len() >= 20, "only {} commands", tree.len());
    assert!(flags >= 150, "only {flags} flags checked");
    // `jitterlab man COMMAND` prints that page.
    let page = jitterlab(&["man", "irq", "set"]);
    assert!(page.contains(".TH jitterlab-irq-set 1"), "{page}");
}

/// Issue 18: `jitterlab --version` names the version and the commit it was built from.
#[test]
fn version_names_the_commit() {
    let v = jitterlab(&["--version"]);
    let expected = format!("jitterlab {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(v.starts_with(&expected), "{v}");
    let commit = v
        .trim_end()
        .trim_start_matches(&expected)
        .trim_end_matches(')');
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{v}"
    );
}

/// Every command whose exit status depends on its result says which in its `--help`
/// ("Exit status: ..."), and GUIDE.md says it in the same words (Markdown's backticks
/// and line breaks aside), so that the two cannot drift apart; what the code gives is
/// each result model's `status()`, tested in its crate and through the binary.
#[test]
fn exit_statuses_in_the_help_are_the_guides() {
    let words = |text: &str| -> String {
        text.replace('`', "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let guide = words(&std::fs::read_to_string(repo().join("GUIDE.md")).unwrap());
    let decided_by_the_result = [
        "irq set",
        "pin",
        "isolate",
        "revert",
        "verify",
        "run",
        "latency",
        "load",
        "experiment",
        "audit",
    ];
    let mut problems = Vec::new();
    let mut found = Vec::new();
    for (path, _) in command_tree() {
        let mut args = vec!["help"];
        args.extend(path.iter().map(String::as_str));
        let help = jitterlab(&args);
        let name = path.join(" ");
        let Some(at) = help.find("\nExit status: ") else {
            if decided_by_the_result.contains(&name.as_str()) {
                problems.push(format!("jitterlab {name} --help says no exit status"));
            }
            continue;
        };
        let paragraph = help[at..].trim_start().split("\n\n").next().unwrap();
        if !guide.contains(&words(paragraph)) {
            problems.push(format!(
                "GUIDE.md lacks what jitterlab {name} --help says: {paragraph:?}"
            ));
        }
        found.push(name);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(found.len() >= decided_by_the_result.len(), "only {found:?}");
}

/// The floors of ARCHITECTURE.md's `## Floors` block: crate name (without the
/// `jitterlab-` prefix) to floor.
fn floors(text: &str) -> BTreeMap<String, u32> {
    let section = section(text, "Floors").expect("ARCHITECTURE.md has a ## Floors section");
    let mut out = BTreeMap::new();
    for line in section.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("floor") {
            continue;
        }
        let floor: u32 = words.next().and_then(|n| n.parse().ok()).expect(line);
        for name in words {
            assert!(
                out.insert(name.to_string(), floor).is_none(),
                "{name} is on two floors"
            );
        }
    }
    out
}

/// Each workspace crate (without the `jitterlab-` prefix) and the workspace crates it
/// depends on as a normal dependency (not for tests or builds), from `cargo metadata`.
fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let short = |n: &str| n.strip_prefix("jitterlab-").unwrap_or(n).to_string();
    let mut deps = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        if !name.starts_with("jitterlab") || name.ends_with("-fuzz") {
            continue;
        }
        let normal = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .filter(|d| d.starts_with("jitterlab-"))
            .map(short)
            .collect();
        deps.insert(short(name), normal);
    }
    deps
}

/// The rule of ARCHITECTURE.md's floors, on a graph: every crate has a floor, and each
/// imports only crates on lower floors. Returns the breaches, in words.
fn floor_breaches(
    floors: &BTreeMap<String, u32>,
    deps: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (krate, uses) in deps {
        let Some(&floor) = floors.get(krate) else {
            out.push(format!("{krate} is on no floor of ARCHITECTURE.md"));
            continue;
        };
        for dep in uses {
            match floors.get(dep) {
                Some(&f) if f < floor => {}
                Some(&f) => out.push(format!(
                    "{krate} (floor {floor}) imports {dep} (floor {f}): a crate imports only lower floors"
                )),
                None => out.push(format!("{dep} is on no floor of ARCHITECTURE.md")),
            }
        }
    }
    for krate in floors.keys() {
        if !deps.contains_key(krate) {
            out.push(format!(
                "ARCHITECTURE.md lists {krate}, which is no workspace crate"
            ));
        }
    }
    out
}

#[test]
fn floor_breaches_are_found() {
    let floors: BTreeMap<String, u32> = [("trace", 1), ("analyze", 2), ("render", 6)]
        .map(|(n, f)| (n.to_string(), f))
        .into();
    let deps = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    };
    let good = deps(&[
        ("trace", &[]),
        ("analyze", &["trace"]),
        ("render", &["analyze"]),
    ]);
    assert!(floor_breaches(&floors, &good).is_empty());
    let up = deps(&[("trace", &["render"]), ("analyze", &[]), ("render", &[])]);
    assert_eq!(
        floor_breaches(&floors, &up),
        ["trace (floor 1) imports render (floor 6): a crate imports only lower floors"]
    );
    let unlisted = deps(&[
        ("trace", &[]),
        ("analyze", &[]),
        ("render", &[]),
        ("new", &[]),
    ]);
    assert_eq!(
        floor_breaches(&floors, &unlisted),
        ["new is on no floor of ARCHITECTURE.md"]
    );
}

/// ARCHITECTURE.md's floors are the crate graph's: `cargo metadata` against the block.
#[test]
fn the_crate_graph_keeps_the_floors_of_architecture_md() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let floors = floors(&text);
    let deps = workspace_dependencies();
    assert!(deps.len() >= 11, "{deps:?}");
    let breaches = floor_breaches(&floors, &deps);
    assert!(breaches.is_empty(), "{}", breaches.join("\n"));
}

/// What render may not do: open an input, drive a pass over a trace or start a thread.
const RENDER_NEVER: [&str; 9] = [
    "engine::pass",
    "pass_source",
    "analyze_trace",
    "Trace::open",
    "File::open",
    "fs::read",
    "thread::spawn",
    "thread::Builder",
    "export_trace",
];

/// The calls of `RENDER_NEVER` in a source file's text, outside its comments and its
/// `#[cfg(test)]` module, as `line: call`.
fn forbidden_calls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        for call in RENDER_NEVER {
            if code.contains(call) {
                out.push(format!("line {}: {call}", i + 1));
            }
        }
    }
    out
}

#[test]
fn forbidden_calls_are_found_outside_comments_and_tests() {
    let text = "let t = Trace::open(p)?; // not File::open\n/// engine::pass\n\
                #[cfg(test)]\nmod tests { fn f() { std::fs::read(\"x\"); } }\n";
    assert_eq!(forbidden_calls(text), ["line 1: Trace::open"]);
}

/// render only renders: nothing under crates/render/src opens an input, runs a pass
/// or starts a thread (ARCHITECTURE.md); the binary's `app` module does.
#[test]
fn render_opens_no_input_and_drives_no_pass() {
    let mut files = Vec::new();
    files_with(&repo().join("crates/render/src"), &["rs"], &mut files);
    assert!(files.len() > 10, "{files:?}");
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for call in forbidden_calls(&text) {
            found.push(format!("{}: {call}", f.display()));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The `jitterlab` command lines of the shell and YAML blocks of a page, as argument
/// lists (`$h` read as a host name; cut at a shell operator, a quote or a comment).
fn command_lines(page: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut lang = None;
    for line in page.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            lang = match lang {
                None => Some(rest.to_string()),
                Some(_) => None,
            };
            continue;
        }
        if !matches!(lang.as_deref(), Some("sh" | "yaml")) {
            continue;
        }
        let Some(at) = line.find("jitterlab ") else {
            continue;
        };
        let mut cmd = &line[at + "jitterlab ".len()..];
        for stop in [" #", "&&", "'", " &", "|", " >"] {
            if let Some(i) = cmd.find(stop) {
                cmd = &cmd[..i];
            }
        }
        out.push(
            cmd.split_whitespace()
                .map(|w| w.replace("$h", "board1"))
                .collect(),
        );
    }
    out
}

/// Every `jitterlab` command line of docs/fleet.md is one the command line takes as
/// written (each is parsed, up to its `--help`; the boards it runs on are not here).
#[test]
fn fleet_commands_parse_as_written() {
    let page = std::fs::read_to_string(repo().join("docs/fleet.md")).unwrap();
    let lines = command_lines(&page);
    assert!(lines.len() >= 5, "{lines:?}");
    for args in &lines {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.push("--help");
        jitterlab(&args);
    }
    // A command line the CLI refuses is caught (the page once had `record -d 10s`).
    let bad = command_lines("```sh\njitterlab record -d 10s -o x.dat\n```\n");
    let mut args: Vec<&str> = bad[0].iter().map(String::as_str).collect();
    args.push("--help");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(&args)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{args:?}");
}
