// experiment.test.mjs: the page of a saved experiment (`jitterlab view experiment.json`,
// the synthetic experiment of crates/render/tests/golden/experiment.rs) against the JSON
// it is drawn from: a strip per cell with a dot per run, the verdicts, the steps, the
// trace links; and its golden screenshots.

import { assert, assertEqual, readReportJson, reportPath, withReport } from "./harness.mjs";

/**
 * What a person sees of the tables and plots of the shown page, as problems in words
 * (none: all well): the page never scrolls sideways; each table lies inside the
 * viewport, or scrolls inside its own box (`.jl-scroll`, overflow-x auto) with its first
 * column sticky, so that scrolled to either end its first column, and at the right end
 * its last, are inside the box; no cell's text overflows its cell; no text of a plot
 * lies outside its plot.
 */
async function layoutProblems(r) {
  return r.eval(() => {
    const problems = [];
    const vw = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > vw + 1) problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px wide in ${vw}`);
    const box = (e) => e.getBoundingClientRect();
    const inside = (b, outer) => b.left >= outer.left - 0.5 && b.right <= outer.right + 0.5;
    const where = (b) => `${Math.round(b.left)}..${Math.round(b.right)}`;
    const page = document.querySelector(".jl-page:not([hidden])");
    const shown = (e) => e.getClientRects().length > 0;
    for (const t of page.querySelectorAll("table")) {
      if (!shown(t)) continue;
      const name = t.id || t.className;
      const cells = [...t.querySelectorAll("th, td")].filter(shown);
      const what = (c) => `${name}: "${c.textContent.trim().slice(0, 40)}"`;
      for (const c of cells) {
        if (c.scrollWidth > c.clientWidth + 1) problems.push(`${what(c)} overflows its cell (${c.scrollWidth} > ${c.clientWidth})`);
      }
      // No row covers another (a sticky header offset over the first row), no cell its
      // neighbour.
      const rows = [...t.rows].filter(shown).map((tr) => [...tr.cells].filter(shown).map((c) => ({ c, b: box(c) })));
      for (let k = 0; k + 1 < rows.length; k++) {
        const bottom = Math.max(...rows[k].map((x) => x.b.bottom)), top = Math.min(...rows[k + 1].map((x) => x.b.top));
        if (bottom > top + 0.5) problems.push(`${what(rows[k + 1][0].c)}: its row is covered by the one above (${Math.round(bottom)} > ${Math.round(top)})`);
      }
      for (const row of rows) {
        const byLeft = [...row].sort((a, b) => a.b.left - b.b.left);
        for (let k = 0; k + 1 < byLeft.length; k++) {
          if (byLeft[k].b.right > byLeft[k + 1].b.left + 0.5) problems.push(`${what(byLeft[k].c)} overlaps ${what(byLeft[k + 1].c)}`);
        }
      }
      const scroller = t.closest(".jl-scroll");
      const viewport = { left: 0, right: vw };
      if (!scroller || scroller.scrollWidth <= scroller.clientWidth + 1) {
        for (const c of cells) if (!inside(box(c), viewport)) problems.push(`${what(c)} at ${where(box(c))}, outside the viewport 0..${vw}`);
        continue;
      }
      // It scrolls inside its box: the box in the viewport, the first column sticky.
      if (!/auto|scroll/.test(getComputedStyle(scroller).overflowX)) problems.push(`${name}: wider than its box, which does not scroll`);
      const frame = box(scroller);
      if (!inside(frame, viewport)) problems.push(`${name}: its box at ${where(frame)}, outside the viewport 0..${vw}`);
      // A group's title spans the row: what must stay in view is its text.
      const firsts = cells.filter((c) => c.cellIndex === 0).map((c) => (c.colSpan > 1 ? c.firstElementChild ?? c : c));
      const lasts = cells.filter((c) => c.colSpan === 1 && c.cellIndex === c.parentElement.cells.length - 1);
      for (const c of firsts) if (getComputedStyle(c).position !== "sticky") problems.push(`${what(c)}: the table scrolls, its first column is not sticky`);
      for (const end of [0, scroller.scrollWidth]) {
        scroller.scrollLeft = end;
        for (const c of firsts) if (!inside(box(c), frame)) problems.push(`${what(c)} at ${where(box(c))} out of its box ${where(frame)} (scrolled to ${scroller.scrollLeft})`);
        if (end) for (const c of lasts) if (!inside(box(c), frame)) problems.push(`${what(c)} at ${where(box(c))} out of its box ${where(frame)} (scrolled to the end)`);
      }
      scroller.scrollLeft = 0;
    }
    for (const svg of page.querySelectorAll("svg")) {
      if (!shown(svg)) continue;
      const b = box(svg);
      for (const t of svg.querySelectorAll("text")) {
        const tb = box(t);
        if (tb.width && (tb.left < b.left - 0.5 || tb.right > b.right + 0.5 || tb.top < b.top - 0.5 || tb.bottom > b.bottom + 0.5)) {
          problems.push(`plot text "${t.textContent.slice(0, 40)}" at ${where(tb)} clipped by its plot ${where(b)}`);
        }
      }
    }
    return problems;
  });
}

/** A verdict in words as jitterlab's text prints it (Verdict's Display in
 * crates/experiment/src/stats/mod.rs). */
function display(v) {
  if (v.verdict === "real") return `${v.better ? "better" : "worse"} (${v.change})`;
  const words = { too_few_runs: "too few runs", not_significant: "not significant", within_noise: "within noise", no_ratio: "baseline median 0", unequal_background: "unequal background" };
  const word = (r) => {
    if (!(r in words)) throw new Error(`a reason this test does not know: ${r}`);
    return words[r];
  };
  return v.reasons.length ? `no real difference (${v.reasons.map(word).join(", ")})` : "no real difference";
}

export const tests = {
  async "every page of the experiment shows without a request or an error"({ browser }) {
    await withReport(browser, reportPath("experiment.html"), async (r) => {
      const tabs = await r.eval(() => window.jitterlab.tabs);
      assertEqual(tabs, ["results", "series", "traces", "runs"], "tabs");
      for (const id of tabs) {
        await r.click(`#jl-tab-${id}`);
        assertEqual(await r.eval(() => window.jitterlab.view()), id, "shown tab");
        assertEqual(await r.count(`#jl-page-${id} .jl-error`), 0, `errors shown on page ${id}`);
      }
    });
  },

  async "the header's line says what the text's first line says"({ browser }) {
    for (const [file, want] of [
      ["experiment-hunt.html", "experiment latency-hunt: 1 cell, 7 metrics, 20 runs (0 warm-up, 0 failed, 20 traced); seed 42"],
      ["experiment-tcp.html", "experiment tcp-affinity: 12 cells, 1 metric, 192 runs (12 warm-up, 0 failed, 12 traced); seed 42"],
    ]) {
      await withReport(browser, reportPath(file), async (r) => assertEqual(await r.text("#jl-source"), want, file));
    }
  },

  async "the answers come first, each with the figures it rests on in small print"({ browser }) {
    const d = readReportJson("experiment.json").data;
    assert(d.answers.length > 1 && d.answers.every((a) => a.basis.length), "the fixture has answers with their basis");
    await withReport(browser, reportPath("experiment.html"), async (r) => {
      assertEqual(await r.eval(() => window.jitterlab.view()), "results", "the page opens on");
      assertEqual(await r.eval(() => document.querySelector("#jl-page-results > *")?.id), "jl-answers", "the first thing on the page");
      const shown = await r.page.$$eval(".jl-answer", (lis) => lis.map((li) => {
        const box = (e) => { const b = e.getBoundingClientRect(); return { top: b.top, bottom: b.bottom, left: b.left, right: b.right, size: parseFloat(getComputedStyle(e).fontSize) }; };
        const text = li.querySelector(".jl-answer-text");
        const basis = [...li.querySelectorAll(".jl-basis li")];
        return { text: text.textContent, basis: basis.map((b) => b.textContent), boxes: [text, ...basis].map(box), small: basis.map((b) => box(b).size < box(text).size) };
      }));
      assertEqual(shown.map((a) => a.text), d.answers.map((a) => a.text), "the sentences");
      assertEqual(shown.map((a) => a.basis), d.answers.map((a) => a.basis), "their basis");
      const vp = await r.eval(() => ({ w: innerWidth, h: innerHeight }));
      for (const a of shown) {
        assert(a.small.every(Boolean), `the basis of "${a.text}" in smaller print`);
        for (const b of a.boxes) {
          assert(b.top >= 0 && b.bottom <= vp.h && b.left >= 0 && b.right <= vp.w && b.bottom > b.top, `"${a.text}" seen without scrolling: ${JSON.stringify(b)}`);
        }
      }
    });
  },

  async "latency-hunt's page shows the blamed spikes by cause near the top"({ browser }) {
    const d = readReportJson("experiment-hunt.json").data;
    assert(d.spike_causes.length > 2, "the fixture's spikes have several causes");
    await withReport(browser, reportPath("experiment-hunt.html"), async (r) => {
      const rows = await r.tableRows("#jl-spike-causes");
      assertEqual(rows.map((x) => x.slice(0, 3)), d.spike_causes.map((c) => [c.cause.replaceAll("_", " "), String(c.spikes), String(c.marked)]), "causes, spikes, stopped a trace");
      // Each cause lists the runs whose spike it was, linked into their traces.
      const links = await r.page.$$eval("#jl-spike-causes tbody tr", (trs) => trs.map((tr) => tr.querySelectorAll("a.jl-trace-link").length));
      assertEqual(links, d.spike_causes.map((c) => c.spikes), "a link per spike");
      // Seen on opening the page, before any metric.
      const where = await r.eval(() => {
        const t = document.querySelector("#jl-spike-causes").getBoundingClientRect();
        const first = document.querySelector("#jl-page-results .jl-strips, #jl-page-results [id^=jl-metric-]");
        return { bottom: t.bottom, top: t.top, h: innerHeight, before: !!(document.querySelector("#jl-spike-causes").compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING) };
      });
      assert(where.top >= 0 && where.bottom <= where.h, `the causes seen without scrolling: ${JSON.stringify(where)}`);
      assert(where.before, "the causes above the metrics");
    });
  },

  async "every table and plot is seen whole at 1400 and 1000 px, tcp-affinity's twelve long-labelled cells too"({ browser }) {
    const d = readReportJson("experiment-tcp.json").data;
    assert(Math.max(...d.cells.map((c) => c.label.length)) > 70, "the fixture's labels are long");
    for (const width of [1400, 1000]) {
      for (const file of ["experiment-tcp.html", "experiment.html", "experiment-hunt.html"]) {
        await withReport(browser, reportPath(file), { viewport: { width, height: 900 } }, async (r) => {
          for (const id of await r.eval(() => window.jitterlab.tabs)) {
            await r.click(`#jl-tab-${id}`);
            const problems = await layoutProblems(r);
            assert(!problems.length, `${file} at ${width} px, page ${id}:\n  ${problems.slice(0, 12).join("\n  ")}${problems.length > 12 ? `\n  (${problems.length - 12} more)` : ""}`);
          }
        });
      }
    }
    // At 1400 px tcp-affinity's tables need no scrolling at all.
    await withReport(browser, reportPath("experiment-tcp.html"), async (r) => {
      const wide = await r.eval(() => [...document.querySelectorAll(".jl-scroll")].filter((s) => s.scrollWidth > s.clientWidth + 1).map((s) => s.querySelector("table")?.id || "?"));
      assertEqual(wide, [], "tables that scroll at 1400 px");
      assert(await r.count(".jl-scroll table") >= 2, "the strip plot and the table are in their boxes");
    });
  },

  async "a strip per cell, a dot per run, the verdict per cell"({ browser }) {
    const d = readReportJson("experiment.json").data;
    await withReport(browser, reportPath("experiment.html"), { hash: "view=results" }, async (r) => {
      const strips = await r.page.$$eval("tr.jl-strip", (gs) => gs.map((g) => ({
        metric: g.dataset.metric, cell: Number(g.dataset.cell),
        dots: g.querySelectorAll("circle.jl-run").length,
        hollow: g.querySelectorAll("circle.jl-run.jl-warmup").length,
        verdict: g.querySelector(".jl-verdict-text")?.textContent ?? null,
      })));
      assertEqual(strips.length, d.metrics.length * d.cells.length, "strips");
      let failedSeen = 0;
      for (const ms of d.stats) {
        const name = ms.metric.name;
        for (let c = 0; c < d.cells.length; c++) {
          const s = strips.find((x) => x.metric === name && x.cell === c);
          assert(s, `a strip of ${name} cell ${c}`);
          const runs = d.runs.filter((x) => x.cell === c);
          failedSeen += runs.filter((x) => x.error !== null).length;
          const drawn = runs.filter((x) => x.error === null && typeof x.values[name] === "number");
          assertEqual(s.dots, drawn.length, `${name} cell ${c}: dots (measured + warm-up)`);
          assertEqual(s.hollow, drawn.filter((x) => x.warmup).length, `${name} cell ${c}: hollow warm-up dots`);
          assert(s.hollow > 0, "the fixture has warm-up runs");
          const cmp = ms.comparisons.find((x) => x.cell === c);
          const expected = cmp ? display(cmp.verdict) : d.baselines[c] === c ? "baseline" : null;
          assertEqual(s.verdict, expected, `${name} cell ${c}: verdict`);
        }
        // The table says the same, in its last column.
        const verdicts = await r.page.$$eval(`#jl-metric-${d.stats.indexOf(ms)} tbody tr[data-cell]`, (trs) => trs.map((tr) => tr.cells[tr.cells.length - 1].querySelector(".jl-verdict-text")?.textContent ?? null));
        assertEqual(verdicts.filter(Boolean).sort(), ms.comparisons.map((x) => display(x.verdict)).sort(), `${name}: verdicts in the table`);
      }
      assert(failedSeen > 0, "the fixture has a failed run (not drawn)");
      assert(d.stats.some((ms) => ms.comparisons.some((x) => x.verdict.reasons?.includes("unequal_background"))), "the fixture has a comparison under unequal background");
    });
  },

  async "which runs a verdict stands on is shown next to it, and runs beside foreign work are warned of"({ browser }) {
    const d = readReportJson("experiment.json").data;
    const words = (b) => ({
      quiet_runs_only: `compared on ${b.cell_runs} and ${b.baseline_runs} quiet runs`,
      unequal: `foreign CPUs ${b.cell_cpus?.toFixed(2)} against ${b.baseline_cpus?.toFixed(2)}`,
    })[b.kind] ?? null;
    const kinds = new Set(d.stats.flatMap((ms) => ms.comparisons.map((x) => x.background.kind)));
    assert(kinds.has("quiet_runs_only") && kinds.has("unequal"), `the fixture has both backgrounds: ${[...kinds]}`);
    await withReport(browser, reportPath("experiment.html"), { hash: "view=results" }, async (r) => {
      for (const [k, ms] of d.stats.entries()) {
        for (const x of ms.comparisons) {
          const want = words(x.background);
          for (const where of [`.jl-strip[data-metric="${ms.metric.name}"][data-cell="${x.cell}"]`, `#jl-metric-${k} tr[data-cell="${x.cell}"]`]) {
            const got = await r.eval((sel) => {
              const verdict = document.querySelector(`${sel} .jl-verdict-text`);
              const note = document.querySelector(`${sel} .jl-bg-note`);
              if (!note) return null;
              note.scrollIntoView({ block: "center" });
              const v = verdict.getBoundingClientRect(), n = note.getBoundingClientRect(), cell = note.closest("td").getBoundingClientRect();
              // In the verdict's cell, under it, seen.
              const seen = n.width > 0 && n.top >= v.bottom - 0.5 && n.left >= cell.left && n.right <= cell.right + 0.5 && n.top >= 0 && n.bottom <= innerHeight && n.right <= innerWidth;
              return { text: note.textContent, seen };
            }, where);
            assertEqual(got?.text ?? null, want, `${ms.metric.name} cell ${x.cell} (${where}): the note`);
            if (got) assert(got.seen, `${where}: the note under its verdict, seen`);
          }
        }
      }
      // The busy runs in words in the header, as the text output says them.
      const notes = await r.texts("#jl-notes li");
      for (const w of d.warnings.filter((x) => x.kind === "busy_runs")) {
        const label = d.cells[w.cell].label;
        const line = notes.find((n) => n.startsWith(`busy: ${label}: ${w.runs} of ${w.of} runs measured beside foreign work (median ${w.foreign_cpus.toFixed(2)} CPUs of other processes, most ${w.top}`));
        assert(line, `a note on the busy runs of ${label}: ${JSON.stringify(notes)}`);
      }
      assert(d.warnings.some((x) => x.kind === "busy_runs"), "the fixture has busy runs");
      for (const w of d.warnings.filter((x) => x.kind === "kernel_messages")) {
        const label = d.cells[w.cell].label;
        const line = notes.find((n) => n.startsWith(`kernel: ${label}: the kernel logged ${w.messages} warning`) && n.endsWith(`first in run ${w.run}: "${w.first}"`));
        assert(line, `a note on the kernel's warnings in ${label}: ${JSON.stringify(notes)}`);
      }
      assert(d.warnings.some((x) => x.kind === "kernel_messages"), "the fixture has the kernel's warnings");
      assert(!notes.some((n) => n.includes("{")), `a warning shown as JSON: ${notes.find((n) => n.includes("{"))}`);
    });
  },

  async "the machine during each cell's runs: per cell, and per CPU its interrupts and softirqs"({ browser }) {
    const d = readReportJson("experiment.json").data;
    assert(d.cell_contexts.length === d.cells.length, "the fixture's cells all have a context");
    // As the text output prints them: Rust's {:.N}, exact ties to even (110.5 is 110).
    const fix = (x, d) => {
      const t = x * 10 ** d, n = Math.floor(t);
      return t - n === 0.5 && n % 2 === 0 ? (n / 10 ** d).toFixed(d) : x.toFixed(d);
    };
    const perS = (x) => (x === 0 ? "0" : x < 10 ? fix(x, 1) : x < 10000 ? fix(x, 0) : `${fix(x / 1e3, 1)}k`);
    assert(d.cell_contexts.some((c) => c.cpus.some((k) => k.softirqs_per_s.some((v) => v.per_s % 1 === 0.5))), "the fixture has a rate halfway between two integers");
    await withReport(browser, reportPath("experiment.html"), { hash: "view=results" }, async (r) => {
      const cells = await r.page.$$eval("#jl-machine-cells tbody tr[data-cell]", (trs) => trs.map((tr) => [Number(tr.dataset.cell), ...[...tr.cells].slice(1).map((c) => c.textContent.trim())]));
      assertEqual(cells.map((x) => x[0]).sort(), d.cell_contexts.map((c) => c.cell).sort(), "a row per cell");
      for (const c of d.cell_contexts) {
        const row = cells.find((x) => x[0] === c.cell);
        assertEqual(row.slice(1), [String(c.runs), String(c.busy_runs), ...[c.foreign_cpus, c.kernel_cpus, c.tools_cpus, c.tested_cpus].map((v) => fix(v, 2)), `${fix(c.steal * 100, 1)}%`], `cell ${c.cell}`);
      }
      const cpus = await r.page.$$eval("#jl-machine-cpus tbody tr[data-cell]", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
      const want = d.cell_contexts.flatMap((c) => c.cpus.map((k) => [String(k.cpu), `${fix(k.busy * 100, 0)}%`, perS(k.local_timer_per_s), perS(k.device_irqs_per_s), perS(k.other_irqs_per_s),
        [...k.softirqs_per_s.slice(0, 3).map((v) => `${v.name} ${perS(v.per_s)}`), ...(k.softirqs_per_s.length > 3 ? [`+${k.softirqs_per_s.length - 3}`] : [])].join(", ")]));
      assertEqual(cpus.map((x) => x.slice(1)).sort(), want.sort(), "a row per cell and CPU: LOC, device and other interrupts, top softirqs a second");
      // Below the metrics, seen once scrolled to (the layout test measures it whole).
      const seen = await r.eval(() => {
        const t = document.querySelector("#jl-machine-cpus");
        t.scrollIntoView();
        const b = t.getBoundingClientRect();
        return b.height > 0 && b.top >= 0 && b.top < innerHeight;
      });
      assert(seen, "the per-CPU table is on the page");
    });
  },

  async "each run says what else the machine did meanwhile"({ browser }) {
    const d = readReportJson("experiment.json").data;
    assert(d.runs.every((x) => x.context), "the fixture's runs have a context");
    await withReport(browser, reportPath("experiment.html"), { hash: "view=runs" }, async (r) => {
      const heads = await r.texts("#jl-runs thead th");
      const col = (name) => heads.indexOf(name);
      assert(col("foreign") > 0 && col("most foreign") > 0 && col("steal") > 0, `columns: ${heads}`);
      const rows = await r.page.$$eval("#jl-runs tbody tr", (trs) => trs.map((tr) => [Number(tr.dataset.seq), ...[...tr.cells].map((c) => c.textContent.trim())]));
      for (const x of d.runs) {
        const row = rows.find((y) => y[0] === x.seq).slice(1);
        const c = x.context;
        assertEqual(row[col("foreign")], (c.foreign_ns / c.wall_ns).toFixed(2), `run ${x.seq}: foreign CPUs`);
        assertEqual(row[col("most foreign")], c.foreign_top[0]?.comm ?? "-", `run ${x.seq}: the foreign process that used most`);
      }
      // The busy ones: a busy loop beside them.
      assert(rows.some((y) => y[1 + col("most foreign")] === "busyloop"), "a run beside the busy loop");
      // A failed run's row is marked to its (sticky) first column.
      const failed = await r.page.$$eval("#jl-runs tr.jl-failed", (trs) => trs.map((tr) => [...tr.cells].map((c) => getComputedStyle(c).backgroundColor)));
      assert(failed.length > 0, "the fixture has a failed run");
      for (const colours of failed) assertEqual(new Set(colours).size, 1, `a failed run's cells all marked: ${colours}`);
    });
  },

  async "an interval unbounded above reads [low, ∞), as the text prints it"({ browser }) {
    const d = readReportJson("experiment.json").data;
    const open = d.stats.flatMap((ms, k) => ms.comparisons.filter((x) => x.ratio && x.ratio.high === null).map((x) => ({ k, ms, x })));
    assert(open.length > 0, "the fixture has a ratio unbounded above");
    await withReport(browser, reportPath("experiment.html"), { hash: "view=results" }, async (r) => {
      for (const { k, ms, x } of open) {
        const want = `${x.ratio.value.toFixed(3)} [${x.ratio.low.toFixed(3)}, ∞)`;
        const cells = (await r.tableRows(`#jl-metric-${k}`)).flat();
        assert(cells.includes(want), `${ms.metric.name} cell ${x.cell}: ${want} in the table (${JSON.stringify(cells)})`);
        const strip = await r.text(`.jl-strip[data-metric="${ms.metric.name}"][data-cell="${x.cell}"] .jl-ratio-text`);
        assert(strip.startsWith(`×${want}`), `${ms.metric.name} cell ${x.cell}: the strip says ${strip}`);
      }
      // No bound reads as a dash or "inf".
      const all = (await r.texts(".jl-table td, .jl-ratio-text")).join("\n");
      assert(!/, -\]|\binf\b/.test(all), `an interval with a dash or inf: ${all.match(/.*(, -\]|\binf\b).*/)?.[0]}`);
    });
  },

  async "the series show the runs of a cell with their steps marked"({ browser }) {
    const d = readReportJson("experiment.json").data;
    const stepped = d.runs.filter((x) => x.series.some((s) => s.steps.length));
    assert(stepped.length > 0, "the fixture has a step");
    const cell = stepped[0].cell;
    await withReport(browser, reportPath("experiment.html"), { hash: "view=series" }, async (r) => {
      const shown = await r.page.$$eval("path.jl-series-run", (ps) => ps.map((p) => Number(p.dataset.seq)));
      assertEqual(shown, d.runs.filter((x) => x.cell === cell && x.series.length).map((x) => x.seq), "a line per run of the stepped cell");
      const marks = await r.page.$$eval("g.jl-step-mark", (gs) => gs.map((g) => [Number(g.dataset.seq), Number(g.dataset.tNs)]));
      const steps = stepped.filter((x) => x.cell === cell).flatMap((x) => x.series.flatMap((s) => s.steps.map((st) => [x.seq, st.t_ns])));
      assertEqual(marks, steps, "a marker per step");
      // Another cell: its runs, no step.
      const other = d.cells.findIndex((_, c) => c !== cell);
      await r.click(`.jl-choice button[data-cell="${other}"]`);
      assertEqual(await r.count("g.jl-step-mark"), 0, "no step in another cell");
      assertEqual(await r.count("path.jl-series-run"), d.runs.filter((x) => x.cell === other && x.series.length).length, "its runs");
    });
  },

  async "each traced run links to its trace's report"({ browser }) {
    const d = readReportJson("experiment.json").data;
    await withReport(browser, reportPath("experiment.html"), { hash: "view=traces" }, async (r) => {
      const links = await r.page.$$eval(".jl-facts a.jl-trace-link", (as) => as.map((a) => a.getAttribute("href")));
      assertEqual(links, d.explanations.filter((e) => e.trace).map((e) => `${e.trace}.html#view=timeline`), "links");
      // Each blamed spike opens its trace's timeline on the wake-up: the cursors on the
      // waking and the switch-in, in seconds from the trace's start.
      const e = d.explanations.find((x) => x.trace && x.spikes.length);
      const spikeLinks = await r.page.$$eval(`.jl-explanation[data-seq="${e.seq}"] table[id^=jl-spikes] a.jl-trace-link`, (as) => as.map((a) => a.getAttribute("href")));
      const secs = (ns) => (ns / 1e9).toFixed(9);
      assertEqual(spikeLinks.map((h) => new URLSearchParams(h.split("#")[1]).get("a")), e.spikes.map((x) => secs(x.t_ns - x.latency_ns)), "cursor A on each waking");
      assertEqual(spikeLinks.map((h) => new URLSearchParams(h.split("#")[1]).get("b")), e.spikes.map((x) => secs(x.t_ns)), "cursor B on each switch-in");
      const threads = await r.tableRows("#jl-threads-0");
      assertEqual(threads.map((row) => Number(row[2])), d.explanations[0].threads.map((t) => t.tid), "threads");
      assertEqual(await r.count("#jl-step-migrations-0 tbody tr"), d.explanations[0].around_steps.flatMap((s) => s.migrations).length, "migrations");
      const spikes = await r.tableRows("#jl-spikes-0");
      assertEqual(spikes.map((row) => row[4]), d.explanations[0].spikes.map((x) => x.verdict), "blamed spikes");
    });
  },

  async "the experiment's pages look as they did (golden screenshots)"({ browser }) {
    for (const view of ["results", "series", "traces", "runs"]) {
      await withReport(browser, reportPath("experiment.html"), { hash: `view=${view}` }, async (r) => {
        await r.matchGolden(`experiment-${view}`, { mask: [".jl-tabs", ".jl-generator"] });
      });
    }
    await withReport(browser, reportPath("experiment.html"), async (r) => {
      await r.matchGolden("experiment-machine", { selector: "#jl-machine" });
    });
    for (const name of ["experiment-hunt", "experiment-tcp"]) {
      await withReport(browser, reportPath(`${name}.html`), async (r) => {
        await r.matchGolden(`${name}-results`, { mask: [".jl-tabs", ".jl-generator"] });
      });
    }
  },
};
