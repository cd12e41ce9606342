// pages.test.mjs: the shell, the analyze sections and the latency pictures, against the
// model they are drawn from (the reports and companions of crates/jitterlab/tests/browser.rs).

import fs from "node:fs";
import path from "node:path";
import { assert, assertEqual, open, readReportFile, readReportJson, reportPath, scratchDir, withReport } from "./harness.mjs";
import { readPage, writePage } from "./timeline-synth.mjs";

/** "41,636" -> 41636. */
const num = (s) => Number(String(s).replace(/,/g, ""));

/** Every tab of the page, clicked in turn; returns their ids. */
async function visitAll(r) {
  const tabs = await r.eval(() => window.jitterlab.tabs);
  for (const id of tabs) {
    await r.click(`#jl-tab-${id}`);
    assertEqual(await r.eval(() => window.jitterlab.view()), id, "shown tab");
    assert(await r.page.locator(`#jl-page-${id}`).isVisible(), `page ${id} visible`);
    const failed = await r.count(`#jl-page-${id} .jl-error`);
    assertEqual(failed, 0, `errors shown on page ${id}`);
  }
  return tabs;
}

/** A copy of a report with `edit(html)` applied, in a scratch directory. */
function edited(name, edit) {
  const dir = scratchDir("pages-");
  const file = path.join(dir, name);
  // A report with data blocks is UTF-16LE: each unit of them stays as it is.
  writePage(file, edit(readPage(reportPath(name))));
  return file;
}

/** The chain rows of `analyze --section irqs` text: [irq, task, wake-ups, via, min, avg, p50, p99, max, max at]. */
function textChains(text) {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => /^IRQ\s+TASK\s+WAKE-UPS/.test(l));
  assert(start >= 0, "a chains table in the text");
  const rows = [];
  for (const l of lines.slice(start + 1)) {
    if (!l.trim() || l.startsWith("(")) break;
    rows.push(l.trim().split(/\s{2,}/));
  }
  return rows;
}

/** A stub timeline: records goTo and select (used while web/timeline.js is not in the
 * report; a real mountTimeline of the report's own takes precedence). */
function stubTimeline() {
  window.__timelineCalls = [];
  window.mountTimeline = (el) => {
    el.textContent = "stub timeline";
    return {
      goTo: (t0, t1) => window.__timelineCalls.push(["goTo", t0, t1]),
      select: (s) => window.__timelineCalls.push(["select", s]),
    };
  };
}

const GOLDEN_PAGES = [
  ["disk.html", ["summary", "cpus", "tasktable", "irqs", "blame"]],
  ["lost.html", ["summary"]],
  ["functions.html", ["functions"]],
  ["latency.html", ["histograms", "percentiles", "overtime", "spikes", "run"]],
];

export const tests = {
  async "every page of every report shows without a request or an error"({ browser }) {
    for (const name of ["disk.html", "idle.html", "instances.html", "lost.html", "functions.html", "saved.html", "latency.html", "latency-old.html"]) {
      await withReport(browser, reportPath(name), async (r) => {
        const tabs = await visitAll(r);
        assert(tabs.length >= 5, `${name}: tabs ${tabs}`);
      });
    }
  },

  async "the tabs are the sections the model has"({ browser }) {
    await withReport(browser, reportPath("disk.html"), async (r) => {
      const tabs = await r.eval(() => window.jitterlab.tabs);
      for (const t of ["summary", "cpus", "tasktable", "irqs", "blame"]) assert(tabs.includes(t), `disk: ${t} in ${tabs}`);
      assert(!tabs.includes("functions"), "disk has no function_graph calls: no Functions tab");
    });
    await withReport(browser, reportPath("functions.html"), async (r) => {
      assert((await r.eval(() => window.jitterlab.tabs)).includes("functions"), "functions tab");
    });
    await withReport(browser, reportPath("latency.html"), async (r) => {
      assertEqual(await r.eval(() => window.jitterlab.tabs), ["histograms", "percentiles", "overtime", "spikes", "run"], "latency tabs");
    });
  },

  async "the summary's numbers are the JSON's"({ browser }) {
    for (const [html, json] of [["disk.html", "disk.json"], ["lost.html", "lost.json"]]) {
      const s = readReportJson(json).data.summary;
      await withReport(browser, reportPath(html), { hash: "view=summary" }, async (r) => {
        assertEqual(num(await r.text('[data-field="events"]')), s.events, `${html}: events`);
        assertEqual(num(await r.text('[data-field="wakeups"]')), s.wakeups, `${html}: wake-ups`);
        assertEqual(num(await r.text('[data-field="tasks"]')), s.tasks, `${html}: tasks`);
        const rows = await r.tableRows("#jl-summary-cpus");
        assertEqual(rows.map((c) => num(c[0])), s.events_per_cpu.map((_, cpu) => cpu), `${html}: CPUs`);
        assertEqual(rows.map((c) => num(c[1])), s.events_per_cpu, `${html}: events per CPU`);
        assertEqual(rows.map((c) => num(c[2])), s.lost_per_cpu, `${html}: lost per CPU`);
      });
    }
  },

  async "lost events are in the header and marked in the table"({ browser }) {
    const s = readReportJson("lost.json").data.summary;
    assert(s.lost_per_cpu.some((l) => l > 0), "the fixture lost events");
    await withReport(browser, reportPath("lost.html"), { hash: "view=summary" }, async (r) => {
      const notes = await r.text("#jl-notes");
      for (const [cpu, l] of s.lost_per_cpu.entries()) {
        if (l > 0) assert(notes.includes(`CPU ${cpu}: ${l.toLocaleString("en-US")}`), `header names CPU ${cpu}'s ${l} lost: ${notes}`);
      }
      assertEqual(await r.count("#jl-summary-cpus tr.jl-lost"), s.lost_per_cpu.filter((l) => l !== 0).length, "rows marked lost");
    });
    await withReport(browser, reportPath("disk.html"), async (r) => {
      assertEqual(await r.count("#jl-notes"), 0, "disk lost nothing: no notes");
    });
  },

  async "the chains table shows the latencies analyze prints"({ browser }) {
    const text = textChains(readReportFile("disk.irqs.txt"));
    await withReport(browser, reportPath("disk.html"), { hash: "view=irqs" }, async (r) => {
      const page = (await r.tableRows("#jl-chains")).map((c) => c.slice(0, 10));
      assertEqual(page.length, text.length, "chains");
      for (let i = 0; i < page.length; i++) {
        const p = [...page[i]];
        p[2] = String(num(p[2])); // the text prints counts without separators
        assertEqual(p, text[i], `chain ${i}`);
      }
      // And one histogram per chain, its bars the JSON's counts.
      const chains = readReportJson("disk.json").data.irqs.chains;
      assertEqual(await r.count("figure.jl-hist[data-irq]"), chains.length, "histograms");
      const bars = await r.page.$$eval("figure.jl-hist:first-child rect.jl-bar", (bs) => bs.map((b) => Number(b.dataset.count)));
      assertEqual(bars, chains[0].histogram.filter((b) => b.count > 0).map((b) => b.count), "first histogram's bars");
    });
  },

  async "a table sorts by a column, numbers as numbers"({ browser }) {
    const chains = readReportJson("disk.json").data.irqs.chains;
    await withReport(browser, reportPath("disk.html"), { hash: "view=irqs" }, async (r) => {
      const tasks = async () => (await r.tableRows("#jl-chains")).map((c) => c[1]);
      const byMax = [...chains].sort((a, b) => b.latency.max_ns - a.latency.max_ns).map((c) => `${c.comm}-${c.tid}`);
      await r.click('#jl-chains th:nth-child(9) button'); // max: a number column sorts descending first
      assertEqual(await r.eval(() => document.querySelector("#jl-chains th:nth-child(9)").getAttribute("aria-sort")), "descending", "aria-sort");
      assertEqual(await tasks(), byMax, "by max, descending");
      await r.click('#jl-chains th:nth-child(9) button');
      assertEqual(await tasks(), [...byMax].reverse(), "by max, ascending");
      // The wake-ups column holds "2,989": sorted as numbers, not as text.
      await r.click('#jl-chains th:nth-child(3) button');
      const counts = (await r.tableRows("#jl-chains")).map((c) => num(c[2]));
      assertEqual(counts, [...chains.map((c) => c.count)].sort((a, b) => b - a), "by wake-ups");
      // Text columns sort ascending first.
      await r.click('#jl-chains th:nth-child(2) button');
      assertEqual(await tasks(), chains.map((c) => `${c.comm}-${c.tid}`).sort((a, b) => a.localeCompare(b, "en", { numeric: true })), "by task");
    });
  },

  async "the tasks page groups threads as the JSON does"({ browser }) {
    const t = readReportJson("disk.json").data.tasks;
    await withReport(browser, reportPath("disk.html"), { hash: "view=tasktable" }, async (r) => {
      assertEqual(await r.count("#jl-tasks tr[data-tid]"), t.tasks.length, "a row per task");
      const multi = t.groups.filter((g) => g.threads.length > 1);
      assertEqual(await r.count("#jl-tasks tr.jl-group-head"), multi.length, "a head row per group of several threads");
      for (const g of multi) {
        const tids = await r.page.$$eval(`#jl-tasks tbody:has(tr[data-group="${g.comm}"]) tr[data-tid]`, (rows) => rows.map((x) => Number(x.dataset.tid)));
        assertEqual([...tids].sort(), [...g.threads].sort(), `group ${g.comm}`);
      }
    });
  },

  async "the tab is in the fragment, beside other keys, and keys move between tabs"({ browser }) {
    await withReport(browser, reportPath("disk.html"), { hash: "t=1,2&view=irqs" }, async (r) => {
      assertEqual(await r.eval(() => window.jitterlab.view()), "irqs", "the fragment's tab");
      await r.click("#jl-tab-cpus");
      const hash = await r.eval(() => location.hash);
      assert(hash.includes("view=cpus") && hash.includes("t=1,2"), `fragment ${hash}`);
      await r.page.focus("#jl-tab-cpus");
      await r.press("ArrowRight");
      assertEqual(await r.eval(() => window.jitterlab.view()), "tasktable", "ArrowRight");
      await r.press("ArrowLeft");
      await r.press("ArrowLeft");
      assertEqual(await r.eval(() => window.jitterlab.view()), "summary", "ArrowLeft twice");
      await r.page.goBack();
      await r.page.waitForFunction(() => window.jitterlab.view() === "cpus");
      await r.eval(() => { location.hash = "view=blame&t=5,6"; });
      await r.page.waitForFunction(() => window.jitterlab.view() === "blame");
    });
  },

  async "blame opens its spike in the timeline"({ browser }) {
    const d = readReportJson("disk.json").data;
    await withReport(browser, reportPath("disk.html"), { hash: "view=blame", init: stubTimeline }, async (r) => {
      const spike = d.blame.spikes[0];
      assert((await r.text(".jl-spike .jl-verdict")) === spike.verdict, "the verdict is shown");
      await r.click(".jl-spike button.jl-link");
      assertEqual(await r.eval(() => window.jitterlab.view()), "timeline", "the timeline is shown");
      assert((await r.eval(() => location.hash)).includes("view=timeline"), "in the fragment");
      const calls = await r.eval(() => window.__timelineCalls);
      if (calls.length) { // the stub, not the report's own timeline
        const origin = await r.eval(() => window.jitterlab.meta.timeline.origin_ns);
        const [, t0, t1] = calls.find((c) => c[0] === "goTo");
        assert(t0 <= spike.waking_ns - origin && t1 >= spike.switch_in_ns - origin, `window ${t0}..${t1} holds the spike`);
        const [, sel] = calls.find((c) => c[0] === "select");
        assertEqual(sel.cpu, spike.cpu, "selected CPU");
        const start = await r.eval(({ cpu, slice }) => window.jitterlab.lanes.find((l) => l.cpu === cpu).slices.start[slice], sel);
        assertEqual(start, spike.switch_in_ns - origin, "the selected slice starts at the switch-in");
      }
    });
  },

  async "a saved analyze result has tables but no timeline"({ browser }) {
    await withReport(browser, reportPath("saved.html"), async (r) => {
      assertEqual(await r.eval(() => window.jitterlab.lanes), null, "no lanes");
      const tabs = await r.eval(() => window.jitterlab.tabs);
      assert(!tabs.includes("timeline") && tabs.includes("summary"), `tabs ${tabs}`);
      assert((await r.text("#jl-notes")).includes("no timeline"), "says so");
    });
  },

  async "the latency histogram has one curve per CPU and marks each maximum"({ browser }) {
    const cpus = readReportJson("latency.json").data.cpus;
    await withReport(browser, reportPath("latency.html"), { hash: "view=histograms" }, async (r) => {
      const curves = await r.page.$$eval("path.jl-hist-curve", (ps) => ps.map((p) => Number(p.dataset.cpu)));
      assertEqual(curves, cpus.map((c) => c.cpu), "a curve per CPU");
      const marks = await r.page.$$eval("g.jl-max", (gs) => gs.map((g) => ({ cpu: Number(g.dataset.cpu), max: Number(g.dataset.maxNs), x: Number(g.querySelector("line").getAttribute("x1")), text: g.querySelector("text").textContent })));
      assertEqual(marks.map((m) => [m.cpu, m.max]), cpus.map((c) => [c.cpu, c.max_ns]), "a maximum per CPU");
      for (const m of marks) assert(m.text.includes(`CPU ${m.cpu} max`), `label ${m.text}`);
      // The marks are where the axis puts them: in order of their values.
      const [a, b] = marks;
      assert((a.max < b.max) === (a.x < b.x), `marks in order: ${JSON.stringify(marks)}`);
      const stats = await r.tableRows("#jl-latency-stats");
      assertEqual(stats.map((c) => num(c[1])), cpus.map((c) => c.samples), "samples per CPU");
      // Zooming to p99 keeps a curve per CPU; a maximum past the axis points off it.
      await r.click('.jl-choice button[data-value="p99_ns"]');
      assertEqual(await r.count("path.jl-hist-curve"), cpus.length, "curves at p99");
      assert((await r.texts("g.jl-max text")).some((t) => t.endsWith("→")), "a maximum past the axis");
    });
  },

  async "the percentile plot has one curve per CPU on the nines"({ browser }) {
    const cpus = readReportJson("latency.json").data.cpus;
    await withReport(browser, reportPath("latency.html"), { hash: "view=percentiles" }, async (r) => {
      assertEqual(await r.page.$$eval("path.jl-pct-curve", (ps) => ps.map((p) => Number(p.dataset.cpu))), cpus.map((c) => c.cpu), "curves");
      assertEqual(await r.count("circle.jl-max-dot"), cpus.length, "a maximum per CPU");
      const ticks = await r.texts("svg.jl-percentiles .jl-axis text");
      for (const t of ["90%", "99%", "99.9%"]) assert(ticks.includes(t), `tick ${t} in ${ticks}`);
    });
  },

  async "latency over time: drawn when recorded, said when not"({ browser }) {
    await withReport(browser, reportPath("latency-old.html"), { hash: "view=overtime" }, async (r) => {
      assert((await r.text("#jl-overtime-missing")).startsWith("not recorded"), "not recorded");
    });
    const cpus = readReportJson("latency.json").data.cpus;
    await withReport(browser, reportPath("latency.html"), { hash: "view=overtime" }, async (r) => {
      assertEqual(await r.page.$$eval("path.jl-overtime-curve", (ps) => ps.map((p) => Number(p.dataset.cpu))), cpus.map((c) => c.cpu), "curves");
    });
  },

  async "the spike ledger lists every spike"({ browser }) {
    const sp = readReportJson("latency.json").data.spikes;
    await withReport(browser, reportPath("latency.html"), { hash: "view=spikes" }, async (r) => {
      assertEqual(await r.count("#jl-spike-table tbody tr"), sp.spikes.length, "rows");
      assertEqual(await r.count("circle.jl-spike-dot"), sp.spikes.length, "dots");
      assertEqual(num(await r.text('[data-field="spikes"]')), sp.spikes.length, "count");
    });
  },

  async "errors are shown on the page"({ browser }) {
    const format = edited("disk.html", (h) => h.replace('{"format":3,', '{"format":4,'));
    const r1 = await open(browser, format, { allowError: true });
    assert((await r1.text(".jl-error")).includes("report format 4"), "a bad format");
    await r1.close();
    // A data block that does not inflate to its size: the tables still show.
    const block = edited("disk.html", (h) => h.replace(/(id="jl-data-0" data-bytes=")(\d+)/, (_, a, n) => `${a}${Number(n) + 1}`));
    const r2 = await open(browser, block, { allowError: true });
    assert((await r2.text(".jl-error")).includes("data block 0"), "a failed inflate");
    assert(await r2.eval(() => window.jitterlab.error.includes("data block 0")), "window.jitterlab.error");
    assert((await r2.eval(() => window.jitterlab.tabs)).includes("summary"), "the tables are still there");
    await r2.close();
    const bytes = edited("disk.html", (h) => h.replace(/(id="jl-data-0" data-bytes="\d+">)([^]{40})/, (_, a, b) => `${a}${"A".repeat(40)}`));
    const r3 = await open(browser, bytes, { allowError: true });
    assert((await r3.text(".jl-error")).includes("could not be read"), "corrupt deflate data");
    await r3.close();
  },

  async "every page looks as it did (golden screenshots)"({ browser }) {
    for (const [name, views] of GOLDEN_PAGES) {
      for (const view of views) {
        await withReport(browser, reportPath(name), { hash: `view=${view}` }, async (r) => {
          // The tab bar changes when other pages join; each page is compared without it.
          await r.matchGolden(`${name.replace(/\.html$/, "")}-${view}`, { mask: [".jl-tabs"] });
        });
      }
    }
  },
};
