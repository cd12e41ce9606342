//! The pages' blocks as the docs test reads them: fenced blocks, the commands and the
//! output each shows, and how a shown output is compared with a real one ([`mask`],
//! [`compare`]).

/// One fenced block of a page: its language, the line of its opening fence (1-based) and
/// its lines with their numbers.
#[derive(Debug)]
pub(super) struct Block {
    pub(super) lang: String,
    pub(super) line: usize,
    pub(super) lines: Vec<(usize, String)>,
}

/// The fenced blocks of a page.
pub(super) fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    open = Some(Block {
                        lang: rest.trim().to_string(),
                        line: i + 1,
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = &mut open {
            b.lines.push((i + 1, line.to_string()));
        }
    }
    assert!(open.is_none(), "a fence is not closed");
    out
}

/// A command of a page, with what the page shows it printing (console blocks).
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) line: usize,
    pub(super) command: String,
    pub(super) console: bool,
    pub(super) shown: Vec<String>,
}

/// The commands of a page's console and sh blocks, in order, and the number of console
/// blocks.
pub(super) fn steps(text: &str) -> (Vec<Step>, usize) {
    let mut out = Vec::new();
    let mut consoles = 0;
    for b in blocks(text) {
        match b.lang.as_str() {
            "console" => {
                consoles += 1;
                for (n, line) in &b.lines {
                    if let Some(cmd) = line.strip_prefix("$ ") {
                        out.push(Step {
                            line: *n,
                            command: cmd.to_string(),
                            console: true,
                            shown: Vec::new(),
                        });
                    } else {
                        let step = out
                            .last_mut()
                            .filter(|s: &&mut Step| s.console && s.line > b.line);
                        let step = step.unwrap_or_else(|| {
                            panic!("line {n}: a console block's output before its first `$ `")
                        });
                        if !line.trim().is_empty() {
                            step.shown.push(line.clone());
                        }
                    }
                }
            }
            "sh" => {
                for (n, line) in &b.lines {
                    let t = line.trim();
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    out.push(Step {
                        line: *n,
                        command: t.to_string(),
                        console: false,
                        shown: Vec::new(),
                    });
                }
            }
            _ => {}
        }
    }
    (out, consoles)
}

/// A line as it is compared: ANSI escapes dropped; every number (digits with `.` or `,`
/// between them: `5738496`, `1.01`, `600,000`), hexadecimal number (`0x1f`) and commit
/// hash (7 or more hex digits with a digit and a letter) one `#`; a progress bar's fill
/// (`[===>   ]`) `[bar]`; runs of spaces one space, ends trimmed. Units and words stay:
/// `2.41 ms` is `# ms`, `100us` is `#us`, `virtio1-req.0` is `virtio#-req.#`.
pub(super) fn mask(line: &str) -> String {
    let c: Vec<char> = strip_ansi(line).chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let is_hex = |ch: char| ch.is_ascii_hexdigit();
    let word_start = |i: usize| i == 0 || !c[i - 1].is_ascii_alphanumeric();
    while i < c.len() {
        let ch = c[i];
        // A commit hash or another long hex word.
        if word_start(i) && is_hex(ch) {
            let end = (i..c.len()).find(|&j| !is_hex(c[j])).unwrap_or(c.len());
            let word = &c[i..end];
            let whole = end == c.len() || !c[end].is_ascii_alphanumeric();
            if whole
                && word.len() >= 7
                && word.iter().any(char::is_ascii_digit)
                && word.iter().any(char::is_ascii_alphabetic)
            {
                out.push('#');
                i = end;
                continue;
            }
        }
        if ch == '0' && c.get(i + 1) == Some(&'x') && c.get(i + 2).is_some_and(|&h| is_hex(h)) {
            i += 2;
            while i < c.len() && is_hex(c[i]) {
                i += 1;
            }
            out.push('#');
            continue;
        }
        if ch.is_ascii_digit() {
            while i < c.len()
                && (c[i].is_ascii_digit()
                    || ((c[i] == '.' || c[i] == ',')
                        && c.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            out.push('#');
            continue;
        }
        if ch == '[' {
            let end = (i + 1..c.len()).find(|&j| !matches!(c[j], '=' | '>' | '-' | ' ' | '#'));
            if let Some(end) = end.filter(|&e| c[e] == ']' && e > i + 2) {
                out.push_str("[bar]");
                i = end + 1;
                continue;
            }
        }
        if ch.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            i += 1;
            continue;
        }
        out.push(ch);
        i += 1;
    }
    out.trim().to_string()
}

/// A line without its ANSI escape sequences (`ESC [ ... letter`).
pub(super) fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(ch);
    }
    out
}

/// Whether the masked line `real` is the masked shown line `shown`, where `...` in it
/// matches anything.
pub(super) fn line_matches(shown: &str, real: &str) -> bool {
    let parts: Vec<&str> = shown.split("...").map(str::trim).collect();
    if parts.len() == 1 {
        return shown == real;
    }
    let mut rest = real;
    for (k, part) in parts.iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        if k == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if k == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Where the shown lines are not a subsequence of the real ones: the first shown line
/// that no real line after the previous match matches.
pub(super) fn compare(shown: &[String], real: &str) -> Result<(), String> {
    let real: Vec<String> = real
        .split(['\n', '\r'])
        .map(mask)
        .filter(|l| !l.is_empty())
        .collect();
    let mut at = 0;
    for s in shown {
        let m = mask(s);
        match (at..real.len()).find(|&j| line_matches(&m, &real[j])) {
            Some(j) => at = j + 1,
            None => {
                return Err(format!(
                    "shown line not found (in order) in the output:\n  shown:  {s}\n  masked: {m}"
                ))
            }
        }
    }
    Ok(())
}

#[test]
pub(super) fn masked_outputs_compare_as_the_docs_mean() {
    assert_eq!(
        mask("CPU  PAGES  OVERRUN\n"),
        "CPU PAGES OVERRUN",
        "spaces collapse"
    );
    assert_eq!(
        mask("  1     1995  7.6  18.5   5477.7  1.01 s 600,000 0x1f 2.41 ms 100us"),
        "# # # # # # s # # # ms #us"
    );
    assert_eq!(mask("36 virtio1-req.0"), "# virtio#-req.#");
    assert_eq!(
        mask("jitterlab 0.1.0 (commit c03274c)"),
        "jitterlab # (commit #)"
    );
    assert_eq!(
        mask("analyzing big.dat [=====>    ] 1.5 MiB/2 MiB"),
        "analyzing big.dat [bar] # MiB/# MiB"
    );
    assert_eq!(mask("\u{1b}[2Kdone"), "done");
    let block = "```console\n$ jitterlab record --duration 1s -o x.dat\n\
                 x.dat: trace-cmd .dat v6, 5738496 bytes, 1.01 s\n\
                 CPU  PAGES  EVENTS\n  0     38   1200\n```\n";
    let (steps, consoles) = steps(block);
    assert_eq!(consoles, 1);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].command, "jitterlab record --duration 1s -o x.dat");
    let shown = &steps[0].shown;
    let real = "x.dat: trace-cmd .dat v6, 912 bytes, 2.00 s\nCPU  PAGES    EVENTS\n  \
                0      1      17\n  1      2      3\n";
    // Other numbers and widths, and a row more than shown: the same.
    assert_eq!(compare(shown, real), Ok(()));
    // A word changed: not the same.
    let changed = real.replace("EVENTS", "EVENT");
    assert!(compare(shown, &changed).is_err());
    // The shown lines in another order: not the same.
    let swapped = "CPU PAGES EVENTS\nx.dat: trace-cmd .dat v6, 912 bytes, 2.00 s\n0 1 17\n";
    assert!(compare(shown, swapped).is_err());
    // A shown line lacking in the output.
    assert!(compare(shown, "CPU PAGES EVENTS\n0 1 2\n").is_err());
    // `...` stands for anything within a line, nothing across lines.
    let dots = vec!["IRQs here 10 25 ACPI:Ged, ... 36 virtio1-req.0, ...".to_string()];
    assert_eq!(
        compare(
            &dots,
            "IRQs here  3  25 ACPI:Ged, 26 ttyS0, 36 virtio1-req.0, 38 virtio2-input.0"
        ),
        Ok(())
    );
    assert!(compare(
        &dots,
        "IRQs here 3 25 ACPI:Ged, 26 ttyS0\n36 virtio1-req.0, x"
    )
    .is_err());
    assert!(line_matches("a ... c", "a b c"));
    assert!(!line_matches("a ... c", "a b c d"));
    assert!(line_matches("a ...", "a b c d"));
    assert!(!line_matches("a b", "a b c"));
}

#[test]
pub(super) fn sh_and_console_lines_are_read_as_commands() {
    let page = "text\n```sh\njitterlab a   # why\n\n# a comment\nlttng start\n```\n\
                ```console\n$ jitterlab b\nout 1\n\n$ jitterlab c\n```\n```toml\nx = 1\n```\n";
    let (steps, consoles) = steps(page);
    let got: Vec<(usize, &str, bool, usize)> = steps
        .iter()
        .map(|s| (s.line, s.command.as_str(), s.console, s.shown.len()))
        .collect();
    assert_eq!(
        got,
        [
            (3, "jitterlab a   # why", false, 0),
            (6, "lttng start", false, 0),
            (9, "jitterlab b", true, 1),
            (12, "jitterlab c", true, 0)
        ]
    );
    assert_eq!(consoles, 1);
    assert_eq!(
        jitterlab_parts("cd x && jitterlab a b # c"),
        [vec!["a", "b"]]
    );
    assert_eq!(
        jitterlab_parts("jitterlab man --dir d && man x | jitterlab y"),
        [vec!["man", "--dir", "d"], vec!["y"]]
    );
}

/// The argument lists of the `jitterlab` commands of a shell line (cut at a shell
/// operator or comment; arguments that hold a quote or `$` are left out).
pub(super) fn jitterlab_parts(line: &str) -> Vec<Vec<String>> {
    let line = line.split(" #").next().unwrap_or(line);
    let mut out = Vec::new();
    for piece in line.split(['|', ';', '&']) {
        let mut words = piece.split_whitespace();
        if words.next() != Some("jitterlab") {
            continue;
        }
        let args: Vec<String> = words
            .take_while(|w| !w.starts_with('>') && !w.starts_with('<'))
            .filter(|w| !w.contains(['\'', '"', '$']))
            .map(str::to_string)
            .collect();
        out.push(args);
    }
    out
}
