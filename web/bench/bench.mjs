// bench.mjs: the viewer's performance targets, measured in headless Chromium.
//
//   cd web/bench && npm install
//   cargo build --release -p jitterlab -p jitterlab-trace --example synth_trace
//   ../../target/release/examples/synth_trace 1000000 /tmp/s1m.dat
//   ../../target/release/jitterlab view /tmp/s1m.dat -o /tmp/s1m.html
//   node bench.mjs /tmp/s1m.html [/tmp/s4m.html ...] [--runs 3] [--json]
//   (a compare page, `view /tmp/s1m.dat /tmp/s1m-b.dat -o /tmp/s2x1m.html`: first paint is
//   both timelines drawn; the sweep zooms A with B following)
//
// Per report: the file's bytes per slice; first paint (navigation start to the
// timeline's first full draw, window.jitterlab.painted) and the decode time; the JS heap
// after load (after a GC, CDP Runtime.getHeapUsage); a 240-frame zoom sweep from the
// whole trace to 10 us and back, drawn in requestAnimationFrame callbacks (the longest gap
// between two callbacks, and the slowest draw); search by comm, tid and IRQ name (the
// time the page reports for marking every match).
import { chromium } from "playwright-core";
import { statSync } from "node:fs";
import { readReport } from "./rebundle.mjs";
import { loadavg } from "node:os";

const args = process.argv.slice(2);
const files = args.filter((a) => a.endsWith(".html"));
const runs = Number(args[args.indexOf("--runs") + 1]) || (args.includes("--runs") ? 3 : 3);
const asJson = args.includes("--json");
// --frames: also list the sweep's slow frames (rAF gap > 17 ms or draw > 8 ms) with the span shown.
const showFrames = args.includes("--frames");
// --pins N: pin the N busiest tasks' thread rows before the sweep (issue 28's target is
// the sweep with 4 rows).
const pins = args.includes("--pins") ? Number(args[args.indexOf("--pins") + 1]) || 4 : 0;

function slicesOf(file) {
  const text = readReport(file).html;
  const a = text.indexOf('id="jl-meta">') + 13;
  const meta = JSON.parse(text.slice(a, text.indexOf("</script>", a)));
  // A compare page (`view A B`) holds B's timeline too.
  const count = (t) => (t ? t.cpus.reduce((s, c) => s + c.slices, 0) : 0);
  return count(meta.timeline) + count(meta.compare?.timeline);
}

async function measure(browser, file) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  const cdp = await page.context().newCDPSession(page);
  await page.goto(`file://${file}`, { waitUntil: "commit" });
  await page.waitForFunction(() => window.jitterlab && window.jitterlab.painted, null, { timeout: 120000, polling: 20 });
  const load = await page.evaluate(() => ({ painted: window.jitterlab.painted, decodeMs: window.jitterlab.decodeMs }));
  await page.waitForTimeout(300);
  await cdp.send("HeapProfiler.collectGarbage");
  const heap = await cdp.send("Runtime.getHeapUsage");
  const marks = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, m.startTime])));
  const pinMs = await page.evaluate((n) => {
    if (!n) return 0;
    const tl = window.jitterlab.timeline;
    const m = tl.state.model;
    const top = [...m.run.keys()].sort((a, b) => m.run[b] - m.run[a]).slice(0, n);
    const t0 = performance.now();
    tl.pin(top);
    tl.draw();
    return performance.now() - t0;
  }, pins);
  const sweep = await page.evaluate(() => new Promise((done) => {
    const tl = window.jitterlab.timeline;
    const lanes = window.jitterlab.lanes;
    // Zoom towards the worst wake-up of the trace (the outlier of synth_trace).
    let at = tl.view.t1 / 2, worst = -1;
    for (const L of lanes) {
      const w = L.wakes;
      for (let k = 0; k < w.lat.length; k++) if (w.lat[k] > worst) { worst = w.lat[k]; at = L.slices.start[w.slice[k]]; }
    }
    tl.fit();
    tl.draw();
    const full = tl.view;
    const span0 = full.t1 - full.t0, span1 = 10e3, frames = 240;
    const gaps = [], draws = [], spans = [];
    let last = null, i = 0;
    function frame(now) {
      if (last != null) gaps.push(now - last);
      last = now;
      if (i >= frames) {
        const slow = [];
        for (let k = 0; k < gaps.length; k++) {
          // gaps[k] ends at the callback that drew frame k + 1.
          if (gaps[k] > 17 || draws[k + 1] > 8) slow.push({ frame: k + 1, gap: gaps[k], draw: draws[k + 1], prevDraw: draws[k], span: spans[k + 1] });
        }
        done({ slow, frames: gaps.length, maxGap: Math.max(...gaps), meanGap: gaps.reduce((a, b) => a + b, 0) / gaps.length, maxDraw: Math.max(...draws), meanDraw: draws.reduce((a, b) => a + b, 0) / draws.length, worst, at });
        return;
      }
      const f = i < frames / 2 ? i / (frames / 2 - 1) : (frames - 1 - i) / (frames / 2 - 1);
      const span = span0 * Math.pow(span1 / span0, f);
      const c = full.t0 + (at - full.t0) * Math.min(1, f * 1.5);
      const t0 = performance.now();
      tl.goTo(c - span / 2, c + span / 2);
      tl.draw();
      draws.push(performance.now() - t0);
      spans.push(span);
      i++;
      requestAnimationFrame(frame);
    }
    requestAnimationFrame(frame);
  }));
  const search = await page.evaluate(() => {
    const tl = window.jitterlab.timeline;
    const out = {};
    for (const q of ["stress-ng", "iperf3", "tid:1001", "eth0", "dd"]) {
      const times = [];
      let r;
      for (let k = 0; k < 5; k++) {
        r = tl.search(q);
        times.push(r.ms);
      }
      out[q] = { count: r.count, ms: Math.min(...times), maxMs: Math.max(...times) };
    }
    tl.search("");
    return out;
  });
  await page.close();
  // The V8 heap and the ArrayBuffers' backing stores (the typed arrays live there).
  return { pinMs, load, marks, heapUsedMB: (heap.usedSize + (heap.backingStorageSize ?? 0)) / 1048576, v8HeapMB: heap.usedSize / 1048576, sweep, search, errors };
}

const launch = () => chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
const results = [];
for (const file of files) {
  const slices = slicesOf(file);
  const bytes = statSync(file).size;
  const rs = [];
  for (let r = 0; r < runs; r++) {
    // A fresh browser each run, settled first: the VM has two CPUs.
    const browser = await launch();
    await new Promise((ok) => setTimeout(ok, 500));
    rs.push(await measure(browser, file));
    await browser.close();
  }
  const med = (f) => {
    const v = rs.map(f).sort((a, b) => a - b);
    return v[v.length >> 1];
  };
  const res = {
    file, slices, bytes, bytesPerSlice: bytes / slices,
    firstPaintMs: med((r) => r.load.painted),
    heapMB: med((r) => r.heapUsedMB), v8HeapMB: med((r) => r.v8HeapMB),
    phasesMs: Object.fromEntries(["jl:read", "jl:decoded", "jl:model", "jl:painted", "jl:decoded-all"].map((k) => [k, med((r) => r.marks[k] ?? NaN)])),
    sweepMaxGapMs: med((r) => r.sweep.maxGap), sweepMeanGapMs: med((r) => r.sweep.meanGap), sweepMaxDrawMs: med((r) => r.sweep.maxDraw), sweepMeanDrawMs: med((r) => r.sweep.meanDraw),
    searchMs: Object.fromEntries(Object.entries(rs[0].search).map(([q]) => [q, { count: rs[0].search[q].count, ms: med((r) => r.search[q].ms), maxMs: med((r) => r.search[q].maxMs) }])),
    pins, pinMs: med((r) => r.pinMs),
    runs: rs.map((r) => ({ firstPaintMs: r.load.painted, heapMB: r.heapUsedMB, sweepMaxGapMs: r.sweep.maxGap })),
    errors: rs.flatMap((r) => r.errors),
  };
  results.push(res);
  if (!asJson) {
    console.log(`${file}: ${slices} slices, ${(bytes / 1048576).toFixed(1)} MiB, ${res.bytesPerSlice.toFixed(2)} bytes/slice (load average ${loadavg().map((x) => x.toFixed(1)).join(" ")})`);
    console.log(`  first paint ${res.firstPaintMs.toFixed(0)} ms after navigation (script start ${res.phasesMs["jl:read"].toFixed(0)}, draw columns decoded ${res.phasesMs["jl:decoded"].toFixed(0)}, model ${res.phasesMs["jl:model"].toFixed(0)}, all columns ${res.phasesMs["jl:decoded-all"].toFixed(0)})`);
    console.log(`  JS heap after load and GC ${res.heapMB.toFixed(1)} MB (V8 heap ${res.v8HeapMB.toFixed(1)} MB + ArrayBuffers)`);
    if (pins) console.log(`  ${pins} thread rows pinned in ${res.pinMs.toFixed(0)} ms`);
    console.log(`  zoom sweep 240 frames${pins ? ` with ${pins} thread rows` : ""}: longest rAF gap ${res.sweepMaxGapMs.toFixed(1)} ms (mean ${res.sweepMeanGapMs.toFixed(1)}), slowest draw ${res.sweepMaxDrawMs.toFixed(1)} ms (mean ${res.sweepMeanDrawMs.toFixed(1)})`);
    console.log(`  search: ${Object.entries(res.searchMs).map(([q, v]) => `${q} ${v.count} found in ${v.ms.toFixed(1)} ms (worst ${v.maxMs.toFixed(1)})`).join("; ")}`);
    console.log(`  runs (median of ${runs} above): ${JSON.stringify(res.runs.map((r) => [Math.round(r.firstPaintMs), Math.round(r.heapMB), Math.round(r.sweepMaxGapMs * 10) / 10]))}`);
    if (showFrames) {
      rs.forEach((r, k) => console.log(`  run ${k + 1} slow frames: ${r.sweep.slow.map((f) => `#${f.frame} span ${(f.span / 1e3).toPrecision(3)} us gap ${f.gap.toFixed(1)} draw ${f.draw?.toFixed(1)} (prev ${f.prevDraw.toFixed(1)})`).join("; ") || "none"}`));
    }
    if (res.errors.length) console.log(`  ERRORS: ${res.errors.join(" | ")}`);
  }
}
if (asJson) console.log(JSON.stringify(results, null, 1));
