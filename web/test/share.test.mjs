// share.test.mjs: keep and share (issue 28, item 6): bookmarks with a note kept in the
// URL fragment (a reload or a shared link brings them back), the timeline as a PNG, and
// any table as CSV, each a file saved from the page without a request.
import fs from "node:fs";
import { PNG } from "pngjs";
import { assert, assertEqual, open, readReportJson, reportPath, withReport } from "./harness.mjs";

async function openTimeline(browser, file, hash = "view=timeline") {
  const r = await open(browser, file, { hash, timeout: 60000 });
  await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
  return r;
}

/** Clicks `selector` and returns the saved file's name and bytes. */
async function saved(r, selector) {
  const [dl] = await Promise.all([r.page.waitForEvent("download"), r.page.click(selector)]);
  return { name: dl.suggestedFilename(), bytes: fs.readFileSync(await dl.path()) };
}

/** A CSV's rows as arrays of fields (quotes as RFC 4180). */
function parseCsv(text) {
  const rows = [];
  let row = [], f = "", q = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (q) {
      if (ch === '"' && text[i + 1] === '"') { f += '"'; i++; } else if (ch === '"') q = false; else f += ch;
    } else if (ch === '"') q = true;
    else if (ch === ",") { row.push(f); f = ""; }
    else if (ch === "\r") continue;
    else if (ch === "\n") { row.push(f); rows.push(row); row = []; f = ""; }
    else f += ch;
  }
  return rows;
}

export const tests = {
  async "bookmarks with notes are kept in the URL and come back with it"({ browser }) {
    let url;
    let marks;
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      await r.eval(() => window.jitterlab.timeline.goTo(100e6, 200e6));
      await r.page.fill("#jl-page-timeline .tl-note", "dd, slow; 2nd");
      await r.click("#jl-page-timeline [data-act=mark]");
      await r.eval(() => window.jitterlab.timeline.goTo(500e6, 510e6));
      // Enter in the note box bookmarks too.
      await r.page.fill("#jl-page-timeline .tl-note", "stress");
      await r.page.press("#jl-page-timeline .tl-note", "Enter");
      // And B, outside a text box, with a note of its own.
      await r.eval(() => window.jitterlab.timeline.goTo(600e6, 700e6));
      await r.eval(() => document.activeElement.blur());
      await r.press("b");
      marks = await r.eval(() => window.jitterlab.timeline.bookmarks);
      assertEqual(marks.map((m) => m.note), ["dd, slow; 2nd", "stress", "view 3"], "notes");
      assertEqual(await r.texts("#jl-page-timeline .tl-bm [data-bm]"), ["dd, slow; 2nd", "stress", "view 3"], "the bookmarks shown");
      await r.page.waitForFunction(() => /[#&]bm=/.test(location.hash), null, { timeout: 5000 });
      url = await r.eval(() => location.href);
      assert(/[#&]bm=/.test(url), `the URL keeps them: ${url}`);
    } finally {
      await r.close();
    }
    // The link opened again: the same bookmarks, and one click goes to its view.
    const r2 = await openTimeline(browser, reportPath("disk.html"), url.split("#")[1]);
    try {
      assertEqual(await r2.eval(() => window.jitterlab.timeline.bookmarks), marks, "bookmarks from the URL");
      await r2.click("#jl-page-timeline .tl-bm [data-bm='0']");
      const v = await r2.eval(() => window.jitterlab.timeline.view);
      assertEqual([v.t0, v.t1], [marks[0].t0, marks[0].t1], "the first bookmark's view");
      await r2.click("#jl-page-timeline .tl-bm [data-bm-del='1']");
      assertEqual((await r2.eval(() => window.jitterlab.timeline.bookmarks)).map((m) => m.note), ["dd, slow; 2nd", "view 3"], "the second removed");
    } finally {
      await r2.close();
    }
  },

  async "the timeline is saved as a PNG of what it shows"({ browser }) {
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      const f = await saved(r, "#jl-page-timeline [data-act=png]");
      assertEqual(f.name, "timeline.png", "file name");
      const png = PNG.sync.read(f.bytes);
      const size = await r.eval(() => { const c = window.jitterlab.timeline.geometry.canvas(); return [c.width, c.height]; });
      assertEqual([png.width, png.height], size, "the canvas's size");
      let ink = 0;
      for (let i = 3; i < png.data.length; i += 4) if (png.data[i] > 0) ink++;
      assert(ink > png.width * 20, `it holds the drawing (${ink} pixels)`);
    } finally {
      await r.close();
    }
  },

  async "a table is saved as CSV: its rows in the order shown, durations in ns"({ browser }) {
    const a = readReportJson("disk.json").data;
    await withReport(browser, reportPath("disk.html"), async (r) => {
      await r.click("#jl-tab-irqs");
      // Sorted by count, descending, as a user would.
      await r.page.click("#jl-chains thead th:nth-child(3) button");
      const f = await saved(r, "#jl-chains caption .jl-csv");
      assertEqual(f.name, "jl-chains.csv", "file name");
      const rows = parseCsv(f.bytes.toString("utf8"));
      const head = rows[0];
      assertEqual(head.slice(0, 5), ["IRQ", "task", "wake-ups", "via", "min (ns)"], "header");
      const shown = await r.texts("#jl-chains tbody tr td:nth-child(2)");
      assertEqual(rows.slice(1).map((x) => x[1]), shown, "rows in the order shown");
      const byTask = new Map(a.irqs.chains.map((c) => [`${c.comm}-${c.tid}`, c]));
      for (const x of rows.slice(1)) {
        const c = byTask.get(x[1]);
        assert(c, `${x[1]} in analyze`);
        assertEqual(Number(x[2]), c.count, `${x[1]}: wake-ups`);
        assertEqual(Number(x[head.indexOf("max (ns)")]), c.latency.max_ns, `${x[1]}: max in ns`);
      }
      // Every table of the report has its CSV button.
      for (const id of await r.eval(() => window.jitterlab.tabs)) {
        if (id === "timeline" || id === "tasks") continue;
        await r.click(`#jl-tab-${id}`);
        const tables = await r.count(`#jl-page-${id} table.jl-table`);
        assertEqual(await r.count(`#jl-page-${id} table.jl-table > caption .jl-csv`), tables, `page ${id}: a CSV button per table`);
      }
    });
  },
};
