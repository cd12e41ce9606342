// timeline.test.mjs: the timeline and the task view (web/timeline.js, web/taskview.js)
// against the model they draw: counts equal analyze --json's, a clicked slice shows its
// details, an IRQ -> task chain shows the text report's latency, a single 500 us
// wake-up among a million slices stays visible at full zoom-out, search, the URL
// fragment, cursors, areas, keys, the left-out overview, and a golden screenshot per view.
import fs from "node:fs";
import path from "node:path";
import { PNG } from "pngjs";
import { assert, assertEqual, open, readReportFile, readReportJson, reportPath, scratchDir, withReport } from "./harness.mjs";
import { readPage, writePage, writeSynthReport } from "./timeline-synth.mjs";

/** Opens `name` on the timeline tab (extra fragment keys in `hash`) with every column decoded. */
async function openTimeline(browser, file, hash = "") {
  const r = await open(browser, file, { hash: `view=timeline${hash ? `&${hash}` : ""}`, timeout: 60000 });
  await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
  return r;
}

/** Runs `fn(r)` on the timeline of `file`, then checks the page and closes it. */
async function withTimeline(browser, file, hash, fn) {
  const r = await openTimeline(browser, file, hash);
  try {
    await fn(r);
  } catch (e) {
    await r.context.close().catch(() => {});
    throw e;
  }
  await r.close();
}

/** Page coordinates of canvas point (x, y) of the timeline. */
async function canvasPoint(r, x, y) {
  const box = await r.page.locator("#jl-page-timeline canvas.tl-canvas").boundingBox();
  return { x: box.x + x, y: box.y + y };
}

/** The rows of the "IRQ -> task chains" table of analyze's text, by TASK column. */
function chainRows(text) {
  const lines = text.split("\n");
  const head = lines.findIndex((l) => /^IRQ\s+TASK\s+WAKE-UPS/.test(l));
  assert(head >= 0, "a chains table in analyze's text");
  const rows = new Map();
  for (const l of lines.slice(head + 1)) {
    if (!l.trim() || l.startsWith("(")) break;
    const c = l.trim().split(/\s{2,}/);
    rows.set(c[1], { irq: c[0], task: c[1], count: Number(c[2]), via: c[3], min: c[4], max: c[8], maxAt: c[9] });
  }
  return rows;
}

/** The synthetic million-slice report (written once per run). */
let synth = null;
function synthReport(leftOut = false) {
  const key = leftOut ? "leftOut" : "plain";
  synth ??= {};
  if (!synth[key]) {
    const dir = scratchDir("timeline-");
    const file = path.join(dir, `synth-${key}.html`);
    const info = writeSynthReport(reportPath("disk.html"), file, { slices: leftOut ? 200_000 : 1_000_000, leftOut });
    synth[key] = { file, info };
  }
  return synth[key];
}

export const tests = {
  async "slices per CPU and wake-ups equal analyze --json's"({ browser }) {
    const json = readReportJson("disk.json").data;
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      const c = await r.eval(() => window.jitterlab.timeline.counts());
      assertEqual(c.cpus.map((x) => [x.cpu, x.slices]), json.cpus.cpus.map((x) => [x.cpu, x.slices]), "slices per CPU");
      assertEqual(c.wakeups, json.summary.wakeups, "wake-ups");
      assertEqual(await r.text("#jl-page-timeline .tl-counts"), `${c.slices.toLocaleString("en-US")} slices · ${json.summary.wakeups.toLocaleString("en-US")} wake-ups`, "counts shown");
    });
  },

  async "a clicked slice shows its task, CPU, start, duration and how it ended"({ browser }) {
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      const want = await r.eval(() => {
        const jl = window.jitterlab;
        const L = jl.lanes[1];
        let best = 0;
        for (let i = 1; i < L.slices.start.length; i++) if (L.slices.end[i] - L.slices.start[i] > L.slices.end[best] - L.slices.start[best]) best = i;
        const tl = jl.timeline;
        const g = tl.geometry;
        const lane = g.lane(1, "task");
        const t = jl.meta.timeline.tasks[L.slices.task[best]];
        return { index: best, x: g.xOf((L.slices.start[best] + L.slices.end[best]) / 2), y: lane.y + lane.h / 2, comm: t.comm, tid: t.tid, dur: L.slices.end[best] - L.slices.start[best] };
      });
      const p = await canvasPoint(r, want.x, want.y);
      await r.page.mouse.click(p.x, p.y);
      const sel = await r.eval(() => window.jitterlab.timeline.selection);
      assertEqual([sel.cpu, sel.index, sel.comm, sel.tid, sel.dur], [1, want.index, want.comm, want.tid, want.dur], "selection");
      const text = await r.text("#jl-page-timeline .tl-details");
      for (const s of [want.comm, `tid${want.tid}`, `CPU1`, sel.durText, sel.startText, `ended${sel.ended}`]) {
        assert(text.replace(/\s+/g, "").includes(s.replace(/\s+/g, "")), `details show ${s}: ${text}`);
      }
      // Cursor A went where the click was.
      const a = await r.eval(() => window.jitterlab.timeline.cursors.a);
      assert(a >= sel.start && a <= sel.end, `cursor A ${a} in the slice`);
    });
  },

  async "an IRQ -> task chain shows its hops and the text report's latency"({ browser }) {
    const rows = chainRows(readReportFile("disk.irqs.txt"));
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      // dd-11500's worst chain (through the BLOCK softirq) and kworker/1:1H-44's only one (in the hardirq).
      for (const [task, tid, kind] of [["dd-11500", 11500, 2], ["kworker/1:1H-44", 44, 1]]) {
        const row = rows.get(task);
        assert(row, `${task} in the text's chains`);
        const pick = await r.eval(([tid, kind]) => {
          const jl = window.jitterlab;
          let best = null;
          for (const L of jl.lanes) {
            const w = L.wakes;
            for (let k = 0; k < w.lat.length; k++) {
              const t = jl.meta.timeline.tasks[L.slices.task[w.slice[k]]];
              if (t.tid === tid && w.waker[k] === kind && w.flags[k] & 8 && (!best || w.irqExit[k] > best.v)) best = { cpu: L.cpu, slice: w.slice[k], v: w.irqExit[k] };
            }
          }
          return best;
        }, [tid, kind]);
        assert(pick, `a chain of ${task} in the page`);
        const sel = await r.eval((p) => window.jitterlab.timeline.select(p), pick);
        assertEqual(sel.wake.chainText, row.max, `${task}: chain latency as analyze's MAX`);
        assertEqual(sel.wake.irqExitText, `${row.maxAt} s`, `${task}: the IRQ's exit at analyze's MAX AT`);
        assertEqual(await r.text("#jl-page-timeline .tl-chain b"), row.max, `${task}: the details panel`);
        const hops = sel.wake.hops.map((h) => `${h.from} → ${h.to}`);
        if (kind === 2) {
          assertEqual(hops, ["IRQ handler exit → softirq entry", "softirq entry → sched_waking", "sched_waking → switch-in", "softirq exit → switch-in"], `${task}: hops`);
          // The first three add up to the chain; the fourth is the softirq's own part.
          assertEqual(sel.wake.hops.slice(0, 3).reduce((a, h) => a + h.lat, 0), sel.wake.chain, `${task}: hops sum`);
        } else {
          assertEqual(hops, ["IRQ handler entry → sched_waking", "sched_waking → switch-in", "IRQ handler exit → switch-in"], `${task}: hops`);
          assertEqual(sel.wake.hops[2].latText, row.max, `${task}: exit hop`);
        }
        assertEqual(sel.wake.hops[kind === 2 ? 2 : 1].lat, sel.wake.lat, `${task}: the sched_waking → switch-in hop is the wake-up latency`);
        assert(sel.wake.irq && sel.wake.irq.exact, `${task}: the IRQ span that ended at the exit`);
        const items = await r.texts("#jl-page-timeline .tl-hops li");
        assertEqual(items.length, hops.length, `${task}: hops listed`);
      }
    });
  },

  async "the iperf affinity study's measurement (eth0 handler exit to iperf running): cursors from an IRQ handler's exit to the task running"({ browser }) {
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      // dd-11503's chains through BLOCK: take one of about 20 us, zoomed in by select.
      const sel = await r.eval(() => {
        const jl = window.jitterlab;
        for (const L of jl.lanes) {
          const w = L.wakes;
          for (let k = 0; k < w.lat.length; k++) {
            const t = jl.meta.timeline.tasks[L.slices.task[w.slice[k]]];
            if (t.tid === 11503 && w.waker[k] === 2 && w.flags[k] & 8 && w.irqExit[k] > 15000 && w.irqExit[k] < 40000) return jl.timeline.select({ cpu: L.cpu, slice: w.slice[k] });
          }
        }
        return null;
      });
      assert(sel && sel.wake.chain, "a dd-11503 chain");
      const g = await r.eval((s) => {
        const tl = window.jitterlab.timeline;
        const exit = s.start - s.wake.chain;
        const wc = s.wake.wakerCpu;
        return { x0: tl.geometry.xOf(exit) + 2, y0: tl.geometry.lane(wc, "irq"), x1: tl.geometry.xOf(s.start) - 2, y1: tl.geometry.lane(s.cpu, "task") };
      }, sel);
      let p = await canvasPoint(r, g.x0, g.y0.y + g.y0.h / 2);
      await r.page.mouse.click(p.x, p.y);
      p = await canvasPoint(r, g.x1, g.y1.y + g.y1.h / 2);
      await r.page.keyboard.down("Shift");
      await r.page.mouse.click(p.x, p.y);
      await r.page.keyboard.up("Shift");
      const c = await r.eval(() => window.jitterlab.timeline.cursors);
      assertEqual(c.delta, sel.wake.chain, "B − A snapped to the IRQ's exit and the switch-in");
      const shown = await r.text("#jl-page-timeline .tl-cursor-text");
      assert(shown.includes(`B−A ${sel.wake.chainText}`), `cursor text: ${shown}`);
    });
  },

  async "a 500 us wake-up among a million slices stays visible at full zoom-out"({ browser }) {
    const { file, info } = synthReport();
    await withTimeline(browser, file, "", async (r) => {
      const c = await r.eval(() => window.jitterlab.timeline.counts());
      assertEqual(c.cpus.map((x) => x.slices), info.cpus.map((x) => x.slices), "synthetic slices");
      const g = await r.eval((o) => {
        const tl = window.jitterlab.timeline;
        tl.fit();
        tl.draw();
        const marks = window.jitterlab.meta.timeline.markers.map((m) => tl.geometry.xOf(m.ts));
        return { x: tl.geometry.xOf(o.start), lane: tl.geometry.lane(o.cpu, "lat"), view: tl.view, marks };
      }, info.outlier);
      const box = await r.page.locator("#jl-page-timeline canvas.tl-canvas").boundingBox();
      const png = PNG.sync.read(await r.page.screenshot({ clip: { x: box.x, y: box.y + g.lane.y, width: box.width, height: g.lane.h } }));
      const red = new Set();
      for (let y = 0; y < png.height; y++) {
        for (let x = 0; x < png.width; x++) {
          const i = 4 * (y * png.width + x);
          // (The latency --break marker's dashed line crosses the strip too.)
          if (png.data[i] > 200 && png.data[i + 1] < 80 && png.data[i + 2] < 80 && !g.marks.some((m) => Math.abs(m - x) < 2)) red.add(x);
        }
      }
      assert(red.size > 0, "a red bar in the wake-up strip");
      for (const x of red) assert(Math.abs(x - g.x) <= 3, `red only at the outlier (x ${g.x.toFixed(1)}), found at ${x}`);
      // Hovering it names it.
      const p = await canvasPoint(r, Math.round(g.x), g.lane.y + g.lane.h - 3);
      await r.page.mouse.move(p.x, p.y);
      const tip = await r.text("#jl-page-timeline .tl-tip");
      assert(tip.includes("500.0 us"), `tooltip: ${tip}`);
    });
  },

  async "names outside ASCII read the same"({ browser }) {
    // named.html is the view of a trace named dïsk-€线.dat; its comm dd renamed here.
    const comm = "dd-w\u00f6rker-\u20ac\u7ebf\u{1F600}";
    const dir = scratchDir("named-");
    const file = path.join(dir, "named.html");
    writePage(file, readPage(reportPath("named.html")).replaceAll('"comm":"dd"', JSON.stringify({ comm }).slice(1, -1)));
    await withTimeline(browser, file, "", async (r) => {
      assertEqual(await r.eval(() => document.characterSet), "UTF-16LE", "charset");
      assertEqual(await r.eval(() => document.title), "d\u00efsk-\u20ac\u7ebf.dat \u2014 jitterlab", "title");
      assert((await r.text("body")).includes("d\u00efsk-\u20ac\u7ebf.dat"), "the header shows the trace's name");
      // The viewer's own text outside ASCII: its zoom-out button.
      assertEqual(await r.text('#jl-page-timeline [data-act="out"]'), "\u2212", "a minus sign");
      const want = await r.eval((comm) => {
        const jl = window.jitterlab;
        const is = jl.meta.timeline.tasks.map((t) => t.comm === comm);
        let n = 0;
        for (const L of jl.lanes) for (const k of L.slices.task) n += is[k] ? 1 : 0;
        return n;
      }, comm);
      assert(want > 0, "slices of the renamed task");
      await r.page.fill("#jl-page-timeline .tl-search", "\u7ebf\u{1F600}");
      await r.page.press("#jl-page-timeline .tl-search", "Enter");
      const found = await r.text("#jl-page-timeline .tl-found");
      assert(found.startsWith(`${want} found`), `found: ${found}, expected ${want}`);
      assertEqual(await r.eval(() => window.jitterlab.timeline.selection.comm), comm, "the match selected");
      assert((await r.text("#jl-page-timeline")).includes(comm), "the details show the name");
    });
  },

  async "search by comm, tid, pid and IRQ name, next and previous"({ browser }) {
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      const want = await r.eval(() => {
        const jl = window.jitterlab;
        const dd = jl.meta.timeline.tasks.map((t) => t.comm === "dd");
        let n = 0;
        for (const L of jl.lanes) for (const k of L.slices.task) n += dd[k] ? 1 : 0;
        return n;
      });
      await r.page.fill("#jl-page-timeline .tl-search", "dd");
      await r.page.press("#jl-page-timeline .tl-search", "Enter");
      const found = await r.text("#jl-page-timeline .tl-found");
      assert(found.startsWith(`${want} found`), `found: ${found}, expected ${want}`);
      const s1 = await r.eval(() => window.jitterlab.timeline.selection);
      assertEqual(s1.comm, "dd", "the first match selected");
      await r.page.locator("#jl-page-timeline .tl-scroll").focus();
      await r.press("n");
      const s2 = await r.eval(() => window.jitterlab.timeline.selection);
      assert(s2.comm === "dd" && s2.start >= s1.start && (s2.start > s1.start || s2.cpu !== s1.cpu || s2.index !== s1.index), "N: the next match");
      await r.press("Shift+N");
      const s3 = await r.eval(() => window.jitterlab.timeline.selection);
      assertEqual([s3.cpu, s3.index], [s1.cpu, s1.index], "shift+N: back");
      const res = await r.eval(() => ({ tid: window.jitterlab.timeline.search("tid:11500").tasks, irq: window.jitterlab.timeline.search("virtio1").irqs, irqN: window.jitterlab.timeline.search("irq:36").count }));
      assertEqual(res.tid, ["dd-11500"], "tid:11500");
      assertEqual(res.irq, ["36 virtio1-req.0"], "an IRQ by name");
      const irq36 = readReportJson("disk.json").data.irqs.irqs.find((q) => q.irq === 36).count;
      assertEqual(res.irqN, irq36, "IRQ 36's spans, as many as the IRQ table's runs");
    });
    const { file } = synthReport();
    await withTimeline(browser, file, "", async (r) => {
      const ms = await r.eval(() => {
        const tl = window.jitterlab.timeline;
        const t = [];
        for (let k = 0; k < 5; k++) t.push(tl.search(k % 2 ? "synth-3" : "pid:5004").ms);
        return Math.min(...t);
      });
      assert(ms < 50, `search over a million slices took ${ms.toFixed(1)} ms (target 50 ms)`);
    });
  },

  async "the view and the selection are in the URL fragment and restored from it"({ browser }) {
    const idx = await (async () => {
      let v = null;
      await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
        await r.eval(() => window.jitterlab.timeline.goTo(182e6, 188e6));
        await r.eval(() => window.jitterlab.timeline.select({ cpu: 1, slice: 1234, reveal: false }));
        await r.page.waitForFunction(() => location.hash.includes("sel=1:1234"), null, { timeout: 3000 });
        v = await r.eval(() => location.hash);
      });
      return v;
    })();
    assert(/t=0\.182000000,0\.188000000/.test(idx), `fragment ${idx}`);
    assert(idx.includes("view=timeline"), `the shell's key kept: ${idx}`);
    await withTimeline(browser, reportPath("disk.html"), idx.replace(/^#/, "").replace(/(^|&)view=timeline/, ""), async (r) => {
      const v = await r.eval(() => window.jitterlab.timeline.view);
      assertEqual([Math.round(v.t0), Math.round(v.t1)], [182e6, 188e6], "view restored");
      const s = await r.eval(() => window.jitterlab.timeline.selection);
      assertEqual([s.cpu, s.index], [1, 1234], "selection restored");
    });
  },

  async "keys zoom, pan and fit; an area gives run time per task"({ browser }) {
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      await r.page.locator("#jl-page-timeline .tl-scroll").focus();
      const v0 = await r.eval(() => window.jitterlab.timeline.view);
      await r.press("w");
      const v1 = await r.eval(() => window.jitterlab.timeline.view);
      assert(v1.t1 - v1.t0 < (v0.t1 - v0.t0) * 0.9, "W zooms in");
      await r.press("d");
      const v2 = await r.eval(() => window.jitterlab.timeline.view);
      assert(v2.t0 > v1.t0, "D pans right");
      await r.press("f");
      const v3 = await r.eval(() => window.jitterlab.timeline.view);
      assertEqual([v3.t0, v3.t1], [v0.t0, v0.t1], "F fits");
      // Shift+drag over both CPUs from 10 % to 30 % of the trace.
      const g = await r.eval(() => {
        const tl = window.jitterlab.timeline;
        const end = window.jitterlab.meta.timeline.end;
        return { x0: tl.geometry.xOf(end * 0.1), x1: tl.geometry.xOf(end * 0.3), y0: tl.geometry.lane(0, "task").y + 5, y1: tl.geometry.lane(1, "task").y + 5, t0: end * 0.1, t1: end * 0.3 };
      });
      const a = await canvasPoint(r, g.x0, g.y0), b = await canvasPoint(r, g.x1, g.y1);
      await r.page.keyboard.down("Shift");
      await r.page.mouse.move(a.x, a.y);
      await r.page.mouse.down();
      await r.page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2);
      await r.page.mouse.move(b.x, b.y);
      await r.page.mouse.up();
      await r.page.keyboard.up("Shift");
      const area = await r.eval(() => window.jitterlab.timeline.area);
      assertEqual(area.cpus, [0, 1], "the area's CPUs");
      assert(Math.abs(area.t0 - g.t0) < (g.t1 - g.t0) * 0.01 && Math.abs(area.t1 - g.t1) < (g.t1 - g.t0) * 0.01, "the area's times");
      const rows = await r.tableRows("#jl-page-timeline .tl-area .tl-table");
      assert(rows.length > 2, "run time per task");
      assert(rows.some((row) => row[0].startsWith("stress-ng-cpu")), "stress-ng-cpu ran in the area");
      // The busiest task's total fits in the area on two CPUs.
      const stats = await r.eval(() => {
        const a = window.jitterlab.timeline.area;
        return window.jitterlab.timeline.setArea(a.t0, a.t1, a.cpus);
      });
      assert(stats.rows[0].total <= (stats.span * 2) + 1, "totals within the area");
      await r.press("f");
      const v4 = await r.eval(() => window.jitterlab.timeline.view);
      assertEqual([Math.round(v4.t0), Math.round(v4.t1)], [Math.round(area.t0), Math.round(area.t1)], "F fits the area");
    });
  },

  async "the task view groups threads by process and opens an instance in the timeline"({ browser }) {
    await withReport(browser, reportPath("disk.html"), { hash: "view=tasks" }, async (r) => {
      await r.eval(() => window.jitterlab.lanes.complete.then(() => true));
      await r.click('#jl-page-tasks .tv-task[data-task]');
      const tv = await r.eval(() => {
        const v = window.jitterlab.views.tasks;
        const p = v.pointAt(0);
        return { n: v.points, p };
      });
      assert(tv.n > 0, "instances drawn");
      const box = await r.page.locator("#jl-page-tasks canvas").boundingBox();
      await r.page.mouse.click(box.x + tv.p.x, box.y + tv.p.y);
      await r.page.waitForFunction(() => window.jitterlab.view() === "timeline");
      await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
      const s = await r.eval(() => window.jitterlab.timeline.selection);
      assertEqual([s.cpu, s.index], [tv.p.cpu, tv.p.slice], "the instance selected in the timeline");
      const v = await r.eval(() => window.jitterlab.timeline.view);
      assert(v.t0 <= s.start && v.t1 >= s.end, "and in view");
      // Execution time instead of latency.
      await r.click("#jl-tab-tasks");
      await r.page.selectOption("#jl-page-tasks .tv-y", "dur");
      const n = await r.eval(() => window.jitterlab.views.tasks.points);
      assert(n >= tv.n, "every instance has an execution time");
    });
  },

  async "what a report left out is said, and its overview drawn"({ browser }) {
    const { file, info } = synthReport(true);
    await withTimeline(browser, file, "", async (r) => {
      const text = await r.text("#jl-page-timeline .tl-leftout");
      for (const s of ["left out", "12345 task slices", "--max-slices", "--from", "--cpu"]) assert(text.includes(s), `left-out text has ${s}: ${text}`);
      const g = await r.eval((end) => {
        const tl = window.jitterlab.timeline;
        tl.fit();
        tl.draw();
        return { x0: tl.geometry.xOf(end * 0.85), x1: tl.geometry.xOf(end * 0.95), lane: tl.geometry.lane(0, "task") };
      }, info.end);
      const box = await r.page.locator("#jl-page-timeline canvas.tl-canvas").boundingBox();
      const png = PNG.sync.read(await r.page.screenshot({ clip: { x: box.x + g.x0, y: box.y + g.lane.y, width: g.x1 - g.x0, height: g.lane.h } }));
      let grey = 0;
      for (let i = 0; i < png.data.length; i += 4) if (Math.abs(png.data[i] - 0x8a) < 8 && Math.abs(png.data[i + 1] - 0x8f) < 8 && Math.abs(png.data[i + 2] - 0x98) < 8) grey++;
      assert(grey > png.width * 2, `the overview's busy bars past the left-out time (${grey} grey pixels)`);
    });
  },

  async "a CPU without slices and latency --break markers"({ browser }) {
    await withTimeline(browser, reportPath("instances.html"), "", async (r) => {
      const c = await r.eval(() => window.jitterlab.timeline.counts());
      assertEqual(c.cpus.map((x) => x.slices), [7, 0], "slices per CPU");
      const m = await r.eval(() => window.jitterlab.meta.timeline.markers.filter((x) => x.break).length);
      assert(m > 0, "break markers");
    });
  },

  async "golden screenshots: the timeline and the task view"({ browser }) {
    await withTimeline(browser, reportPath("disk.html"), "", async (r) => {
      await r.eval(() => window.jitterlab.timeline.select({ cpu: 1, slice: 1234 }));
      await r.page.waitForTimeout(400);
      await r.matchGolden("timeline-disk", { selector: "#jl-page-timeline", tolerance: 0.01 });
    });
    await withReport(browser, reportPath("disk.html"), { hash: "view=tasks" }, async (r) => {
      await r.page.waitForTimeout(300);
      await r.matchGolden("taskview-disk", { selector: "#jl-page-tasks", tolerance: 0.01 });
    });
  },
};
