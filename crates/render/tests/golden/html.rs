//! The HTML report (`export/html.rs`): its layout, its meta JSON (golden), and its
//! columns decoded back (the blocks' text, raw deflate, byte planes, deltas, escapes) equal to the
//! timeline they were written from. The viewer's drawing is tested in a browser
//! (crates/jitterlab/tests/browser.rs).

use std::io::Read;

use std::sync::Arc;

use jitterlab_analyze::analysis::timeline::{Timeline, TimelineOptions};
use jitterlab_analyze::{AnalyzeReport, Options};
use jitterlab_render::{Exporter, Html, PageSpill, SavedResult};
use serde_json::Value;

use crate::check;
use crate::golden::trace::analyzed;

fn with_timeline(name: &str, max_slices: u64) -> AnalyzeReport {
    analyzed(
        name,
        &Options {
            timeline: Some(TimelineOptions {
                max_slices,
                ..TimelineOptions::default()
            }),
            ..Options::default()
        },
    )
}

/// How a test's page encoder compresses its chunks.
#[derive(Clone, Copy, Debug)]
enum Work {
    /// As they come.
    Here,
    /// On a thread of the test's.
    Thread,
    /// Its work dropped unrun: as they come.
    Dropped,
}

/// The report of `name` whose timeline handed its rows to a page encoder of `rows` rows
/// a chunk during the pass.
fn spilled(name: &str, max_slices: u64, rows: usize, work: Work) -> AnalyzeReport {
    let spill = match work {
        Work::Here => PageSpill::with_rows(rows),
        Work::Thread => {
            let (spill, w) = PageSpill::with_worker(rows);
            std::thread::spawn(move || w.run());
            spill
        }
        Work::Dropped => PageSpill::with_worker(rows).0,
    };
    let spill = Arc::new(spill);
    analyzed(
        name,
        &Options {
            timeline: Some(TimelineOptions {
                max_slices,
                spill: Some(spill.spill_to()),
                ..TimelineOptions::default()
            }),
            ..Options::default()
        },
    )
}

/// The page titled `trace <1>.dat`, decoded (a page with data blocks is UTF-16LE, its
/// byte-order mark kept).
fn html<M: jitterlab_render::HtmlModel>(model: &M) -> String {
    html_titled(model, "trace <1>.dat")
}

fn html_titled<M: jitterlab_render::HtmlModel>(model: &M, title: &str) -> String {
    let mut out = Vec::new();
    Html::titled(title).write(model, &mut out).unwrap();
    if out.starts_with(&[0xFF, 0xFE]) {
        let units: Vec<u16> = out
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect();
        String::from_utf16(&units).expect("UTF-16 without lone surrogates")
    } else {
        String::from_utf8(out).unwrap()
    }
}

/// The bytes a data block's text carries, as web/data.js reads them: each UTF-16 unit
/// two bytes, `=` and the unit XOR 0x8000 for the escaped ones, `=` and 0x0100 plus the
/// byte for an odd last byte.
fn unescape(text: &str) -> Vec<u8> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut out = Vec::with_capacity(2 * units.len());
    let mut it = units.iter().copied();
    while let Some(u) = it.next() {
        assert!(!matches!(u, 0 | 0x0D | 0x3C), "{u:#x} unescaped");
        let u = if u == u16::from(b'=') {
            let n = it.next().expect("escaped");
            if n & 0xFF00 == 0x0100 {
                out.push(n as u8);
                assert!(it.next().is_none(), "an odd byte last");
                break;
            }
            n ^ 0x8000
        } else {
            u
        };
        out.extend_from_slice(&u.to_le_bytes());
    }
    out
}

/// The text of the element `<script ... id="ID" ...>`, and its opening tag.
fn element<'a>(page: &'a str, id: &str) -> Option<(&'a str, &'a str)> {
    let at = page.find(&format!("id=\"{id}\""))?;
    let open = page[..at].rfind('<')?;
    let body = at + page[at..].find('>')? + 1;
    let end = body + page[body..].find("</script>")?;
    Some((&page[open..body], &page[body..end]))
}

fn meta(page: &str) -> Value {
    serde_json::from_str(element(page, "jl-meta").expect("jl-meta").1).unwrap()
}

/// Block `k` inflated.
fn block(page: &str, k: usize) -> Vec<u8> {
    let (tag, text) = element(page, &format!("jl-data-{k}")).expect("block");
    let z = unescape(text);
    let mut bytes = Vec::new();
    flate2::read::DeflateDecoder::new(&z[..])
        .read_to_end(&mut bytes)
        .unwrap();
    assert!(
        tag.contains(&format!("data-bytes=\"{}\"", bytes.len())),
        "{tag}"
    );
    bytes
}

/// The parts of a CPU's column `name`, one per chunk holding it, in order.
fn parts<'a>(cpu: &'a Value, name: &str) -> Vec<&'a Value> {
    cpu["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["columns"].get(name))
        .collect()
}

/// One part of a column as u64 values, from the inflated blocks (`blocks[k]` is
/// `jl-data-K`).
fn part(blocks: &[Vec<u8>], c: &Value) -> Vec<u64> {
    let bytes = &blocks[c["block"].as_u64().unwrap() as usize];
    let (off, n) = (
        c["offset"].as_u64().unwrap() as usize,
        c["count"].as_u64().unwrap() as usize,
    );
    match c["type"].as_str().unwrap() {
        "u8" => bytes[off..off + n].iter().map(|&b| u64::from(b)).collect(),
        kind => {
            let planes = c["planes"].as_u64().unwrap() as usize;
            let escape = (1u64 << (8 * planes)) - 1;
            let mut big = off + planes * n;
            (0..n)
                .map(|i| {
                    let v = (0..planes).fold(0u64, |v, p| {
                        v | u64::from(bytes[off + p * n + i]) << (8 * p)
                    });
                    if kind == "u32x" && v == escape {
                        let x = f64::from_le_bytes(bytes[big..big + 8].try_into().unwrap());
                        big += 8;
                        x as u64
                    } else {
                        v
                    }
                })
                .collect()
        }
    }
}

/// Column `name` of a CPU as u64 values, as the page decodes it: its parts one after
/// the other.
fn column(blocks: &[Vec<u8>], cpu: &Value, name: &str) -> Vec<u64> {
    parts(cpu, name)
        .into_iter()
        .flat_map(|c| part(blocks, c))
        .collect()
}

/// A start column back to times, part by part: running sums of starts, or of gaps after
/// each end (`"delta": "end"`), the first part's from `origin`.
fn starts(blocks: &[Vec<u8>], cpu: &Value, prefix: &str, origin: u64) -> Vec<u64> {
    let (ps, pd) = (
        parts(cpu, &format!("{prefix}.start")),
        parts(cpu, &format!("{prefix}.dur")),
    );
    assert_eq!(ps.len(), pd.len());
    let (mut last_start, mut last_end) = (origin, origin);
    let mut out = Vec::new();
    for (s, d) in ps.into_iter().zip(pd) {
        let gaps = s["delta"] == "end";
        for (v, dur) in part(blocks, s).into_iter().zip(part(blocks, d)) {
            let start = if gaps { last_end + v } else { last_start + v };
            out.push(start);
            (last_start, last_end) = (start, start + dur);
        }
    }
    out
}

fn sums(v: Vec<u64>, first: u64) -> Vec<u64> {
    v.into_iter()
        .scan(first, |acc, d| {
            *acc += d;
            Some(*acc)
        })
        .collect()
}

/// Every block of the page inflated, in order, and the number of the first missing.
fn blocks(page: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while element(page, &format!("jl-data-{}", out.len())).is_some() {
        out.push(block(page, out.len()));
    }
    out
}

/// Every column of every CPU decodes to the timeline's values (`t` holding them all).
fn assert_round_trip(page: &str, t: &Timeline) {
    let m = meta(page);
    let cpus = m["timeline"]["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), t.cpus.len());
    let blocks = blocks(page);
    let numbered: Vec<u64> = cpus
        .iter()
        .flat_map(|c| c["chunks"].as_array().unwrap())
        .flat_map(|k| {
            [
                k["block"].as_u64().unwrap(),
                k["detail_block"].as_u64().unwrap(),
            ]
        })
        .collect();
    assert_eq!(numbered, (0..blocks.len() as u64).collect::<Vec<_>>());
    for (c, lanes) in cpus.iter().zip(&t.cpus) {
        let col = |name| column(&blocks, c, name);
        let u32s = |v: &[u32]| v.iter().map(|&x| u64::from(x)).collect::<Vec<_>>();
        let u8s = |v: &[u8]| v.iter().map(|&x| u64::from(x)).collect::<Vec<_>>();
        let s = &lanes.slices;
        assert_eq!(starts(&blocks, c, "slices", t.origin), s.start);
        assert_eq!(col("slices.dur"), s.dur);
        assert_eq!(col("slices.task"), u32s(&s.task));
        assert_eq!(col("slices.prio"), u8s(&s.prio));
        assert_eq!(col("slices.flags"), u8s(&s.flags));
        let w = &lanes.wakes;
        assert_eq!(sums(col("wakes.slice"), 0), u32s(&w.slice));
        assert_eq!(col("wakes.lat"), w.lat);
        assert_eq!(col("wakes.waker"), u8s(&w.waker));
        assert_eq!(col("wakes.waker_cpu"), u32s(&w.waker_cpu));
        assert_eq!(col("wakes.waker_id"), u32s(&w.waker_id));
        assert_eq!(col("wakes.vec"), u8s(&w.vec));
        assert_eq!(col("wakes.irq_exit"), w.irq_exit);
        assert_eq!(col("wakes.wakeup"), w.wakeup);
        assert_eq!(col("wakes.flags"), u8s(&w.flags));
        let i = &lanes.irqs;
        assert_eq!(starts(&blocks, c, "irqs", t.origin), i.start);
        assert_eq!(col("irqs.dur"), i.dur);
        assert_eq!(col("irqs.irq"), u32s(&i.irq));
        assert_eq!(col("irqs.depth"), u8s(&i.depth));
        let so = &lanes.softirqs;
        assert_eq!(starts(&blocks, c, "softirqs", t.origin), so.start);
        assert_eq!(col("softirqs.dur"), so.dur);
        assert_eq!(col("softirqs.vec"), u8s(&so.vec));
        assert_eq!(col("softirqs.raised_by"), u32s(&so.raised_by));
        assert_eq!(col("softirqs.raise"), so.raise);
        let o = &lanes.overview;
        assert_eq!(col("overview.busy"), o.busy);
        assert_eq!(col("overview.max_dur"), o.max_dur);
        assert_eq!(col("overview.max_lat"), o.max_lat);
        assert_eq!(col("overview.count"), o.count);
        for (key, n) in [
            ("slices", s.start.len()),
            ("wakes", w.lat.len()),
            ("irqs", i.start.len()),
            ("softirqs", so.start.len()),
        ] {
            assert_eq!(c[key].as_u64(), Some(n as u64), "{key}");
            let chunks = c["chunks"].as_array().unwrap();
            let sum: u64 = chunks.iter().map(|k| k[key].as_u64().unwrap()).sum();
            assert_eq!(sum, n as u64, "{key}: the chunks' counts");
        }
    }
}

#[test]
fn html_layout_meta_and_columns_of_a_trace() {
    let report = with_timeline("disk-irq-stress.v7.dat", 8_000_000);
    let t = report.timeline.as_ref().unwrap();
    let page = html(&report);
    assert!(page.contains("Content-Security-Policy\" content=\"default-src 'none';"));
    // UTF-16 (html() decoded it): a byte-order mark, no charset.
    assert!(page.starts_with("\u{FEFF}<!doctype html>"));
    assert!(!page.contains("charset"));
    assert!(page.contains("<title>trace &lt;1&gt;.dat — jitterlab</title>"));
    // Nothing is loaded from elsewhere: no external script, style sheet or image.
    for tag in ["<script src", "<link", "<img", "<iframe", "@import"] {
        assert!(!page.contains(tag), "{tag}");
    }
    // One module script, after every data block.
    assert_eq!(page.matches("<script type=\"module\">").count(), 1);
    assert!(page.find("jl-data-1").unwrap() < page.find("<script type=\"module\">").unwrap());
    let m = meta(&page);
    assert_eq!(m["format"], 3);
    assert_eq!(m["report"]["schema"], "jitterlab.analyze");
    // The report inside is the --json output.
    assert_eq!(m["report"]["data"], serde_json::to_value(&report).unwrap());
    // The page's counts are analyze's: task slices per CPU and the wake-ups.
    let cpus = &m["report"]["data"]["cpus"]["cpus"];
    for (k, c) in m["timeline"]["cpus"].as_array().unwrap().iter().enumerate() {
        assert_eq!(c["slices"], cpus[k]["slices"]);
    }
    let wakes = t.wakes() as u64;
    assert_eq!(
        Some(wakes),
        m["report"]["data"]["summary"]["wakeups"].as_u64()
    );
    assert_eq!(m["timeline"]["left_out"], Value::Null);
    assert_round_trip(&page, t);
}

#[test]
fn html_of_a_timeline_spilled_in_chunks_decodes_to_the_same_columns() {
    // Chunks of one row (every row a chunk) on a short trace, of a few rows on longer
    // ones: each page takes a second per few thousand chunks. Each size with the next
    // way to compress: as the chunks come, on a thread, or as they come after the
    // thread's work was dropped unrun.
    for (name, max_slices, sizes) in [
        ("cyclictest-idle.v7.dat", 8_000_000, &[1, 100, 3][..]),
        ("disk-irq-stress.v7.dat", 8_000_000, &[7, 100, 50][..]),
        // Past the limit: wake-ups whose slice was left out are dropped.
        ("disk-irq-stress.v7.dat", 1000, &[7, 7][..]),
    ] {
        let held = with_timeline(name, max_slices);
        let t = held.timeline.as_ref().unwrap();
        for (&rows, work) in sizes
            .iter()
            .zip([Work::Here, Work::Thread, Work::Dropped].iter().cycle())
        {
            let report = spilled(name, max_slices, rows, *work);
            let s = report.timeline.as_ref().unwrap();
            assert_eq!((s.slices(), s.wakes()), (t.slices(), t.wakes()));
            assert_eq!(s.left_out, t.left_out);
            // The lanes hold less than a chunk of each; the rest went to the page.
            for c in &s.cpus {
                assert!(c.slices.start.len() < rows, "{name}: {rows} rows a chunk");
                assert!(
                    c.wakes.lat.len() < 2 * rows + 2,
                    "{name}: {rows} rows a chunk"
                );
            }
            let page = html(&report);
            let m = meta(&page);
            let chunks: usize = m["timeline"]["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["chunks"].as_array().unwrap().len())
                .sum();
            assert!(chunks > 2 * t.slices() / rows / 2, "{chunks} chunks");
            assert_round_trip(&page, t);
            // The chunks went into that page.
            let mut again = Vec::new();
            let e = Html::titled("x").write(&report, &mut again).unwrap_err();
            assert!(e.to_string().contains("written before"), "{e}");
        }
    }
}

#[test]
fn html_meta_golden() {
    let report = with_timeline("cyclictest-idle.v7.dat", 8_000_000);
    let mut m = meta(&html(&report));
    // The report is the JSON golden's; the rest is this format's.
    m["report"] = Value::String("(the jitterlab.analyze envelope)".into());
    m["generator"] = Value::String("jitterlab VERSION".into());
    check("html_meta", &serde_json::to_string_pretty(&m).unwrap());
}

#[test]
fn html_past_max_slices_says_what_was_left_out() {
    let report = with_timeline("disk-irq-stress.v7.dat", 1000);
    let t = report.timeline.as_ref().unwrap();
    let l = t.left_out.expect("left out");
    let kept = t.slices() as u64
        + t.cpus
            .iter()
            .map(|c| (c.irqs.start.len() + c.softirqs.start.len()) as u64)
            .sum::<u64>();
    // The limit, plus what had started before the cut and ended after it.
    assert!((1000..1010).contains(&kept), "{kept}");
    let all = report.cpus.as_ref().unwrap();
    let slices: u64 = all.cpus.iter().map(|c| c.slices).sum();
    assert_eq!(
        t.slices() as u64 + l.slices,
        slices,
        "every slice kept or counted"
    );
    // Nothing kept starts at or after the cut.
    for c in &t.cpus {
        assert!(c.slices.start.iter().all(|&s| s < l.after));
        assert!(c.irqs.start.iter().all(|&s| s < l.after));
    }
    // Every wake-up kept or counted; each kept one points at a kept slice, every wake
    // column as long as the others.
    let wakes: u64 = t.cpus.iter().map(|c| c.wakes.lat.len() as u64).sum();
    let summary = report.summary.as_ref().unwrap();
    assert_eq!(
        wakes + l.wakes,
        summary.wakeups,
        "every wake-up kept or counted"
    );
    assert!(
        l.wakes > 0 && wakes > 0,
        "{wakes} kept, {} left out",
        l.wakes
    );
    for c in &t.cpus {
        let w = &c.wakes;
        assert!(w.slice.iter().all(|&s| (s as usize) < c.slices.start.len()));
        let n = w.lat.len();
        for len in [
            w.slice.len(),
            w.irq_exit.len(),
            w.wakeup.len(),
            w.waker_cpu.len(),
        ] {
            assert_eq!(len, n);
        }
        for len in [w.waker_id.len(), w.waker.len(), w.vec.len(), w.flags.len()] {
            assert_eq!(len, n);
        }
    }
    // The overview still covers the whole trace.
    let counted: u64 = t.cpus.iter().flat_map(|c| &c.overview.count).sum();
    assert_eq!(counted, slices);
    let page = html(&report);
    let m = meta(&page);
    assert_eq!(m["timeline"]["left_out"]["max_slices"], 1000);
    assert_eq!(
        m["timeline"]["left_out"]["after"].as_u64(),
        Some(l.after - t.origin)
    );
    assert_round_trip(&page, t);
}

#[test]
fn html_of_a_saved_result() {
    let saved = SavedResult::from_json(
        "run.json",
        br#"{"schema": "jitterlab.latency", "version": 1, "data": {"environment": {}, "config": {}, "cpus": []}}"#,
    )
    .unwrap();
    let m = meta(&html(&saved));
    assert_eq!(m["report"]["schema"], "jitterlab.latency");
    assert_eq!(m["timeline"], Value::Null);
    let errors: Vec<String> = [
        &b"{\"schema\": \"jitterlab.show\", \"version\": 1, \"data\": {}}"[..],
        b"{\"schema\": \"jitterlab.latency\", \"version\": 2, \"data\": {}}",
        b"{\"data\": {}}",
        b"{\"schema\": \n",
        b"{\"schema\": \"jitterlab.latency\", \"version\": 1, \"data\": null}",
        b"{\"schema\": \"jitterlab.latency\", \"version\": 1}",
        b"{\"schema\": \"jitterlab.latency\", \"data\": {}}",
        b"{\"schema\": \"jitterlab.latency\", \"version\": 1, \"data\": {\"environment\": {}, \"config\": {}, \"cpus\": 3}}",
        b"[1, 2]",
    ]
    .iter()
    .map(|b| SavedResult::from_json("run.json", b).unwrap_err())
    .collect();
    check("html_saved_errors", &errors.join("\n"));
}

#[test]
fn html_names_outside_ascii_read_the_same() {
    let mut report = with_timeline("cyclictest-idle.v7.dat", 8_000_000);
    let t = report.timeline.as_mut().unwrap();
    // Outside Latin-1, and outside the BMP (a surrogate pair in UTF-16).
    let comm = "wörker-€线😀</script>";
    t.tasks[0].comm = comm.into();
    let page = html_titled(&report, "träce €.dat");
    assert!(page.contains("<title>träce €.dat — jitterlab</title>"));
    let m = meta(&page);
    assert_eq!(m["timeline"]["tasks"][0]["comm"], comm);
    assert_eq!(m["title"], "träce €.dat");
    assert_round_trip(&page, report.timeline.as_ref().unwrap());
    // A page without blocks is UTF-8, and says so.
    let saved = SavedResult::from_json(
        "rün.json",
        br#"{"schema": "jitterlab.latency", "version": 1, "data": {"environment": {}, "config": {}, "cpus": []}}"#,
    )
    .unwrap();
    let page = html_titled(&saved, "rün.json");
    assert!(
        page.starts_with("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")
    );
    assert!(page.contains("<title>rün.json — jitterlab</title>"));
}
