//! The HTML report in a real browser: reports of the committed traces, of a saved
//! latency result and of a saved experiment are written with the binary into a
//! temporary directory, then `node web/test/run.mjs web/test/*.test.mjs` drives them in headless Chromium
//! (web/test/harness.mjs). Skips when node, web/test/node_modules (`npm ci` in web/test)
//! or Chromium is missing; under `JITTERLAB_REQUIRE_LIVE=1` that is a failure.
//!
//! `JL_REPORTS_DIR=DIR` writes the reports into DIR and keeps them, for running the
//! browser tests by hand: `JL_REPORTS=DIR node web/test/run.mjs web/test/pages.test.mjs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use jitterlab_host::testing::skip;

#[allow(dead_code)] // the helpers the other test binaries use
mod util;

use util::repo;

fn trace(name: &str) -> PathBuf {
    repo().join("crates/trace/tests/data").join(name)
}

/// Runs jitterlab with `args`, NO_COLOR; returns stdout, panicking on failure.
fn jitterlab(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run jitterlab");
    assert!(
        out.status.success(),
        "jitterlab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What the browser tests need that this machine may lack: why not, or None.
fn missing(web_test: &Path) -> Option<String> {
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !node.is_ok_and(|s| s.success()) {
        return Some("the browser tests need node (apt-get install nodejs npm)".into());
    }
    for dep in ["playwright-core", "pngjs", "pixelmatch"] {
        if !web_test.join("node_modules").join(dep).is_dir() {
            return Some(format!(
                "the browser tests need {dep} in web/test/node_modules (npm ci in web/test)"
            ));
        }
    }
    let chromium = std::env::var_os("JITTERLAB_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.is_file() {
        return Some(format!(
            "the browser tests need Chromium at {} (apt-get install chromium, or set JITTERLAB_CHROMIUM)",
            chromium.display()
        ));
    }
    None
}

/// Writes every report and companion file the browser tests read (web/test/*.test.mjs
/// name them) into `dir`.
fn write_reports(dir: &Path) {
    let o = |name: &str| dir.join(name).into_os_string();
    let disk = trace("disk-irq-stress.v7.dat").into_os_string();
    for (input, name) in [
        (disk.clone(), "disk.html"),
        (
            trace("cyclictest-idle.v7.dat").into_os_string(),
            "idle.html",
        ),
        (trace("instances.v7.dat").into_os_string(), "instances.html"),
    ] {
        jitterlab(&["view".as_ref(), &input, "-o".as_ref(), &o(name)]);
    }
    let json = jitterlab(&[
        "analyze".as_ref(),
        trace("cyclictest-idle.v7.dat").as_os_str(),
        "--json".as_ref(),
    ]);
    std::fs::write(dir.join("idle.json"), json).unwrap();
    // iperf3 over a veth pair: NET_RX softirq -> task chains (issue 28's recording).
    let veth = dir.join("veth-iperf3.dat");
    let zst = std::fs::read(trace("veth-iperf3.v6.dat.zst")).unwrap();
    std::fs::write(&veth, zstd::decode_all(&zst[..]).unwrap()).unwrap();
    jitterlab(&[
        "view".as_ref(),
        veth.as_os_str(),
        "-o".as_ref(),
        &o("veth.html"),
    ]);
    // The same with iperf3's threads pinned as rows (`view --pin`).
    jitterlab(&[
        "view".as_ref(),
        veth.as_os_str(),
        "--pin".as_ref(),
        "iperf3".as_ref(),
        "-o".as_ref(),
        &o("veth-pinned.html"),
    ]);
    let json = jitterlab(&["analyze".as_ref(), veth.as_os_str(), "--json".as_ref()]);
    std::fs::write(dir.join("veth.json"), json).unwrap();
    // The same transfer under `stress-ng --cpu 2` (make-veth.sh stress), and the compare
    // page of the two: idle as A, stress as B (`view A B`).
    let stress = dir.join("veth-iperf3-stress.dat");
    let zst = std::fs::read(trace("veth-iperf3-stress.v6.dat.zst")).unwrap();
    std::fs::write(&stress, zstd::decode_all(&zst[..]).unwrap()).unwrap();
    let json = jitterlab(&["analyze".as_ref(), stress.as_os_str(), "--json".as_ref()]);
    std::fs::write(dir.join("veth-stress.json"), json).unwrap();
    jitterlab(&[
        "view".as_ref(),
        veth.as_os_str(),
        stress.as_os_str(),
        "-o".as_ref(),
        &o("veth-compare.html"),
    ]);
    // An LTTng kernel trace folder (issue 30): its page and its analysis.
    let lttng = trace("lttng/kernel-irq-sched").into_os_string();
    jitterlab(&["view".as_ref(), &lttng, "-o".as_ref(), &o("lttng.html")]);
    let json = jitterlab(&["analyze".as_ref(), &lttng, "--json".as_ref()]);
    std::fs::write(dir.join("lttng.json"), json).unwrap();
    write_block_probe(dir);
    // A trace whose name is not ASCII: the page's title and header.
    let named = dir.join("dïsk-€线.dat");
    std::fs::copy(trace("disk-irq-stress.v7.dat"), &named).unwrap();
    jitterlab(&[
        "view".as_ref(),
        named.as_os_str(),
        "-o".as_ref(),
        &o("named.html"),
    ]);
    // The model behind disk.html, and the irqs section as analyze prints it.
    let json = jitterlab(&["analyze".as_ref(), &disk, "--json".as_ref()]);
    std::fs::write(dir.join("disk.json"), json).unwrap();
    let text = jitterlab(&[
        "analyze".as_ref(),
        &disk,
        "--section".as_ref(),
        "irqs".as_ref(),
    ]);
    std::fs::write(dir.join("disk.irqs.txt"), text).unwrap();
    // function_graph statistics compared with another trace (analyze --html).
    let fgraph = trace("text/fgraph-ehci-softirq.txt").into_os_string();
    let other = trace("text/fgraph-smi-abstime.txt").into_os_string();
    jitterlab(&[
        "analyze".as_ref(),
        &fgraph,
        "--compare".as_ref(),
        &other,
        "--html".as_ref(),
        &o("functions.html"),
    ]);
    // Lost events: a buffer of instances.v7.dat that overran (2043 lost).
    let instances = trace("instances.v7.dat").into_os_string();
    let (buffer, small) = ("--buffer".as_ref(), "jlab_small".as_ref());
    let lost = o("lost.html");
    jitterlab(&[
        "view".as_ref(),
        &instances,
        buffer,
        small,
        "-o".as_ref(),
        &lost,
    ]);
    let json = jitterlab(&[
        "analyze".as_ref(),
        &instances,
        buffer,
        small,
        "--json".as_ref(),
    ]);
    std::fs::write(dir.join("lost.json"), json).unwrap();
    // A saved analyze result: no timeline.
    jitterlab(&[
        "view".as_ref(),
        &o("disk.json"),
        "-o".as_ref(),
        &o("saved.html"),
    ]);
    // A saved latency result (web/test/fixtures/README.md).
    let latency = repo().join("web/test/fixtures/latency-2cpu.json");
    std::fs::copy(&latency, dir.join("latency.json")).unwrap();
    jitterlab(&[
        "view".as_ref(),
        latency.as_os_str(),
        "-o".as_ref(),
        &o("latency.html"),
    ]);
    // Saved experiments: the synthetic ones of jitterlab-render's golden tests (the
    // built-in recipes' shapes: experiment-hunt, experiment-tcp).
    for name in ["experiment", "experiment-hunt", "experiment-tcp"] {
        let experiment = repo().join(format!("crates/render/tests/fixtures/{name}.json"));
        std::fs::copy(&experiment, dir.join(format!("{name}.json"))).unwrap();
        jitterlab(&[
            "view".as_ref(),
            experiment.as_os_str(),
            "-o".as_ref(),
            &o(&format!("{name}.html")),
        ]);
    }
    // Audits: a live quick one of this VM (web/test/fixtures/README.md) and a static one
    // of the vm2 fixture tree, written now.
    let audit = repo().join("web/test/fixtures/audit-quick.json");
    std::fs::copy(&audit, dir.join("audit.json")).unwrap();
    jitterlab(&[
        "view".as_ref(),
        audit.as_os_str(),
        "-o".as_ref(),
        &o("audit.html"),
    ]);
    // Its kept traces beside the page with their reports, as `audit --html` leaves them.
    let traces = dir.join("audit-traces");
    std::fs::create_dir_all(&traces).unwrap();
    for name in ["idle.dat", "noise-cpu1.dat"] {
        let trace = traces.join(name);
        std::fs::copy(
            repo().join("web/test/fixtures/audit-traces").join(name),
            &trace,
        )
        .unwrap();
        jitterlab(&[
            "view".as_ref(),
            trace.as_os_str(),
            "-o".as_ref(),
            trace.with_extension("dat.html").as_os_str(),
        ]);
    }
    let vm2 = repo().join("crates/host/tests/fixtures/audit-vm2");
    let json = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .arg("--root")
        .arg(&vm2)
        .args(["audit", "--static", "--json"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run jitterlab audit");
    // Exit 0 or 3 (an unfit CPU): both wrote the audit.
    assert!(
        matches!(json.status.code(), Some(0 | 3)),
        "jitterlab audit: {}",
        String::from_utf8_lossy(&json.stderr)
    );
    std::fs::write(dir.join("audit-static.json"), &json.stdout).unwrap();
    jitterlab(&[
        "view".as_ref(),
        &o("audit-static.json"),
        "-o".as_ref(),
        &o("audit-static.html"),
    ]);
    // The same as an older jitterlab saved it, before latency over time was recorded.
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&latency).unwrap()).unwrap();
    for cpu in doc["data"]["cpus"].as_array_mut().unwrap() {
        cpu.as_object_mut().unwrap().remove("over_time");
    }
    let old = dir.join("latency-old.json");
    std::fs::write(&old, serde_json::to_vec(&doc).unwrap()).unwrap();
    jitterlab(&[
        "view".as_ref(),
        old.as_os_str(),
        "-o".as_ref(),
        &o("latency-old.html"),
    ]);
}

/// `s` in UTF-16LE, as a page with data blocks is written.
fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A raw-deflate stream of `data` in stored (uncompressed) blocks.
fn stored_deflate(data: &[u8]) -> Vec<u8> {
    let chunks: Vec<&[u8]> = data.chunks(0xFFFF).collect();
    let mut out = Vec::new();
    for (k, c) in chunks.iter().enumerate() {
        // BFINAL on the last, BTYPE 00 (stored); LEN and its complement.
        out.push(u8::from(k + 1 == chunks.len()));
        let n = c.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        out.extend_from_slice(c);
    }
    out
}

/// bytes.html: disk.html with two more data blocks, written by the writer's own
/// `html_block_text`, that the page decodes on request (web/test/bytes.test.mjs):
/// `jl-data-raw` holds bytes.bin (every UTF-16 unit, so every byte in both places, then
/// `</script`-like text in UTF-16 and an odd last byte), `jl-data-stored` the same as a
/// deflate stream of stored blocks, which the page inflates.
fn write_block_probe(dir: &Path) {
    let mut probe: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
    probe.extend(utf16("</script></SCRIPT <!--<script>\r\n\r\0\0==</"));
    probe.push(b'<');
    std::fs::write(dir.join("bytes.bin"), &probe).unwrap();
    let page = std::fs::read(dir.join("disk.html")).unwrap();
    let module = utf16("<script type=\"module\">");
    let at = (0..page.len())
        .step_by(2)
        .rfind(|&i| page[i..].starts_with(&module))
        .expect("the module script of disk.html");
    let mut out = page[..at].to_vec();
    for (id, bytes) in [("raw", probe.clone()), ("stored", stored_deflate(&probe))] {
        out.extend(utf16(&format!(
            "<script type=\"application/octet-stream\" id=\"jl-data-{id}\" data-bytes=\"{}\">",
            probe.len()
        )));
        jitterlab_render::html_block_text(&bytes, &mut out);
        out.extend(utf16("</script>\n"));
    }
    out.extend_from_slice(&page[at..]);
    std::fs::write(dir.join("bytes.html"), out).unwrap();
}

#[test]
fn pages_in_headless_chromium() {
    let web_test = repo().join("web/test");
    if let Some(why) = missing(&web_test) {
        skip(why);
        return;
    }
    let kept = std::env::var_os("JL_REPORTS_DIR").map(PathBuf::from);
    let temp = tempfile::tempdir().unwrap();
    let dir = match &kept {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.clone()
        }
        None => temp.path().to_path_buf(),
    };
    write_reports(&dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&web_test)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".test.mjs"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.test.mjs in {}", web_test.display());
    let out = Command::new("node")
        .arg(web_test.join("run.mjs"))
        .args(&files)
        .env("JL_REPORTS", &dir)
        .current_dir(&web_test)
        .stdin(Stdio::null())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "the browser tests failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains(" passed, 0 failed"),
        "no closing line from run.mjs:\n{stdout}"
    );
}
