// audit.test.mjs: the page of a saved audit (`jitterlab view audit.json`: the live quick
// audit of web/test/fixtures/audit-quick.json, and a static audit of the vm2 fixture tree
// written by crates/jitterlab/tests/browser.rs) against the JSON it is drawn from: the
// verdict per RT CPU, every finding by family, the severity filter, the recommendations
// in rank order, the latency phases and their blamed spikes; and golden screenshots.

import { assert, assertEqual, readReportJson, reportPath, withReport } from "./harness.mjs";

const SEVERITIES = ["high", "medium", "low", "info"];

export const tests = {
  async "every page of the audit shows without a request or an error"({ browser }) {
    for (const [html, expected] of [["audit.html", ["verdict", "findings", "recommendations", "measured"]], ["audit-static.html", ["verdict", "findings", "recommendations"]]]) {
      await withReport(browser, reportPath(html), async (r) => {
        const tabs = await r.eval(() => window.jitterlab.tabs);
        assertEqual(tabs, expected, `${html}: tabs`);
        for (const id of tabs) {
          await r.click(`#jl-tab-${id}`);
          assertEqual(await r.eval(() => window.jitterlab.view()), id, "shown tab");
          assertEqual(await r.count(`#jl-page-${id} .jl-error`), 0, `${html}: errors shown on page ${id}`);
        }
      });
    }
  },

  async "the verdict per RT CPU is the JSON's"({ browser }) {
    const d = readReportJson("audit.json").data;
    await withReport(browser, reportPath("audit.html"), { hash: "view=verdict" }, async (r) => {
      const rows = await r.tableRows("#jl-audit-verdicts");
      assertEqual(rows.map((x) => [Number(x[0]), x[1]]), d.verdicts.map((v) => [v.cpu, v.verdict]), "verdicts");
      assertEqual(rows.map((x) => x[2].split(":")[0]), d.verdicts.map((v) => v.limiting ?? "-"), "limiting findings");
    });
  },

  async "every finding is shown by family, and the severity filter hides the others"({ browser }) {
    for (const name of ["audit", "audit-static"]) {
      const d = readReportJson(`${name}.json`).data;
      await withReport(browser, reportPath(`${name}.html`), { hash: "view=findings" }, async (r) => {
        assertEqual(await r.count("#jl-page-findings .jl-finding"), d.findings.length, `${name}: findings`);
        const families = await r.page.$$eval(".jl-family", (gs) => gs.map((g) => [g.dataset.family, g.querySelectorAll(".jl-finding").length]));
        const expected = [...new Set(d.findings.map((f) => f.family))].map((fam) => [fam, d.findings.filter((f) => f.family === fam).length]);
        assertEqual([...families].sort(), [...expected].sort(), `${name}: findings per family`);
        // Each card carries its evidence, why and fix.
        const first = d.findings.find((f) => f.fix);
        const card = `.jl-finding[data-id="${first.id}"]`;
        assert((await r.text(`${card} [data-field=fix]`)).includes(first.fix.apply), `${name}: the fix of ${first.id}`);
        assertEqual(await r.count(`${card} .jl-evidence li`) >= first.evidence.length, true, `${name}: the evidence of ${first.id}`);
        let tried = 0;
        for (const sev of SEVERITIES) {
          const n = d.findings.filter((f) => f.severity === sev).length;
          await r.click(`.jl-severity-filter button[data-severity="${sev}"]`);
          const visible = await r.page.$$eval(".jl-finding", (cs) => cs.filter((c) => c.checkVisibility()).map((c) => c.dataset.severity));
          assertEqual(visible.length, n, `${name}: ${sev} findings shown`);
          assert(visible.every((s) => s === sev), `${name}: only ${sev} shown`);
          assertEqual(await r.eval(() => [...document.querySelectorAll(".jl-family")].filter((g) => !g.hidden).length),
            new Set(d.findings.filter((f) => f.severity === sev).map((f) => f.family)).size, `${name}: families shown for ${sev}`);
          tried += n > 0 && n < d.findings.length ? 1 : 0;
        }
        assert(tried >= 2, `${name}: the filter was tried on at least two severities that hide others`);
        await r.click('.jl-severity-filter button[data-severity="all"]');
        assertEqual(await r.page.$$eval(".jl-finding", (cs) => cs.filter((c) => c.checkVisibility()).length), d.findings.length, `${name}: all shown again`);
      });
    }
  },

  async "the recommendations in rank order with their commands"({ browser }) {
    const d = readReportJson("audit.json").data;
    await withReport(browser, reportPath("audit.html"), { hash: "view=recommendations" }, async (r) => {
      const rows = await r.tableRows("#jl-audit-recs");
      assertEqual(rows.map((x) => Number(x[0])), d.recommendations.map((x) => x.rank), "ranks");
      assertEqual(rows.map((x) => x[1]), d.recommendations.map((x) => x.apply), "commands");
      assertEqual(rows.map((x) => x[4]), d.recommendations.map((x) => x.check), "checks");
    });
  },

  async "the latency phases and their blamed spikes"({ browser }) {
    const d = readReportJson("audit.json").data;
    const m = d.measured;
    assert(m.latency.some((p) => p.blamed), "the fixture has a blamed spike");
    await withReport(browser, reportPath("audit.html"), { hash: "view=measured" }, async (r) => {
      const lat = await r.tableRows("#jl-audit-latency");
      assertEqual(lat.length, m.latency.reduce((n, p) => n + p.cpus.length, 0), "a row per phase and CPU");
      assertEqual(lat.map((x) => x[0]), m.latency.flatMap((p) => p.cpus.map(() => p.load)), "phases");
      const blamed = await r.tableRows("#jl-audit-blamed");
      assertEqual(blamed.map((x) => x[5]), m.latency.map((p) => p.blamed?.verdict ?? p.blame_note), "verdict lines");
      assertEqual(blamed.map((x) => x[4]), m.latency.map((p) => (p.blamed ? p.blamed.cause.replace("_", " ") : "-")), "causes");
      assertEqual(await r.count("#jl-audit-noise tbody tr"), m.noise.length, "a noise row per RT CPU");
      // Each window by half: the worst of the two halves is the window's worst.
      const want = m.latency.flatMap((p) => p.cpus.map((s) => p.halves?.find((h) => h.cpu === s.cpu)));
      assert(want.every(Boolean), "the fixture's phases carry their halves");
      lat.forEach((row, i) => {
        const halves = row[8].split(" / ");
        assertEqual(halves.length, 2, `latency row ${i}: max by half ${row[8]}`);
        const worst = want[i].max_ns[0] >= want[i].max_ns[1] ? 0 : 1;
        assertEqual(halves[worst], row[7], `latency row ${i}: the worse half is the window's max`);
      });
      const noise = await r.tableRows("#jl-audit-noise");
      noise.forEach((row, i) => {
        assertEqual(row[6].split(" / ").length, m.noise[i].halves?.length === 2 ? 2 : 1, `noise row ${i}: longest by half ${row[6]}`);
      });
    });
  },

  async "a noise-bound finding says so where it is shown"({ browser }) {
    const d = readReportJson("audit.json").data;
    const bound = d.findings.filter((f) => f.noise_bound);
    assert(bound.length > 0, "the fixture has a noise-bound finding");
    await withReport(browser, reportPath("audit.html"), { hash: "view=findings" }, async (r) => {
      const marked = await r.page.$$eval(".jl-finding", (cs) => cs.filter((c) => c.querySelector(".jl-noise-bound")?.checkVisibility()).map((c) => c.dataset.id));
      assertEqual(marked.sort(), bound.map((f) => f.id).sort(), "the noise-bound findings, marked and visible");
    });
  },

  async "the blamed spike and the noise gaps link into their traces' timelines, the cursors on them"({ browser }) {
    const m = readReportJson("audit.json").data.measured;
    const idle = m.latency.find((p) => p.trace && p.blamed);
    assert(idle, "the fixture keeps a blamed phase's trace");
    const noise = m.noise.find((n) => n.trace && n.traced);
    assert(noise, "the fixture keeps a noise window's trace");
    let spikeHref;
    let gapHrefs;
    await withReport(browser, reportPath("audit.html"), { hash: "view=measured" }, async (r) => {
      spikeHref = await r.page.$$eval("#jl-audit-blamed tbody tr", (trs) => trs.map((tr) => tr.querySelector("a.jl-trace-link")?.getAttribute("href") ?? null));
      gapHrefs = await r.page.$$eval("#jl-audit-noise-gaps tbody tr", (trs) => trs.map((tr) => tr.querySelector("a.jl-trace-link")?.getAttribute("href") ?? null));
      // The causes of the gaps: a row per cause per CPU, adding up to the noise.
      const causes = await r.tableRows("#jl-audit-noise-causes");
      assertEqual(causes.length, m.noise.reduce((n, x) => n + (x.traced?.by_cause.length ?? 0), 0), "a row per cause");
    });
    // A phase whose trace was not kept has no link.
    assertEqual(spikeHref.map((h) => h !== null), m.latency.map((p) => Boolean(p.trace && p.blamed)), "links where a trace was kept");
    const href = spikeHref[m.latency.indexOf(idle)];
    const [file, hash] = href.split("#");
    assertEqual(file, `${idle.trace}.html`, "the link goes to the trace's report beside the page");
    await withReport(browser, reportPath(file), { hash }, async (r) => {
      assertEqual(await r.eval(() => window.jitterlab.view()), "timeline", "the timeline is shown");
      const c = await r.eval(() => window.jitterlab.timeline.cursors);
      assertEqual(c.delta, idle.blamed.latency_ns, "B − A is the blamed wake-up's latency");
      const v = await r.eval(() => window.jitterlab.timeline.view);
      assert(v.t0 <= c.a && c.b <= v.t1, `the view ${JSON.stringify(v)} holds the cursors ${JSON.stringify(c)}`);
      // The probe's thread is switched in at cursor B on the blamed CPU: the blame and
      // the timeline read the same trace the same way.
      const found = await r.eval(([cpu, tid, b]) => {
        const jl = window.jitterlab;
        const L = jl.lanes.find((l) => l.cpu === cpu);
        for (let k = 0; k < L.slices.start.length; k++) {
          if (L.slices.start[k] === b && jl.meta.timeline.tasks[L.slices.task[k]].tid === tid) return true;
        }
        return false;
      }, [idle.blamed.cpu, idle.blamed.tid, c.b]);
      assert(found, `a slice of tid ${idle.blamed.tid} starts at cursor B on CPU ${idle.blamed.cpu}`);
    });
    // Each of the longest gaps of the kept noise window, in its trace.
    const gaps = noise.traced.gaps;
    assertEqual(gapHrefs.filter(Boolean).length, gaps.length, "a link per gap of the kept window");
    const g = gaps[0];
    const [gfile, ghash] = gapHrefs[0].split("#");
    assertEqual(gfile, `${noise.trace}.html`, "the gap's link goes to its window's trace");
    await withReport(browser, reportPath(gfile), { hash: ghash }, async (r) => {
      const c = await r.eval(() => window.jitterlab.timeline.cursors);
      assertEqual([c.a, c.delta], [g.t_ns, g.ns], "the cursors on the gap");
      if (g.cause === "thread") {
        // What the account names runs in the gap on the timeline too (matched by tid:
        // a thread may rename itself, and the timeline keeps one name per task).
        const name = g.what[0];
        const tid = Number(name.slice(name.lastIndexOf("-") + 1));
        const ran = await r.eval(([cpu, a, b, tid]) => {
          const jl = window.jitterlab;
          const L = jl.lanes.find((l) => l.cpu === cpu);
          let run = 0;
          for (let k = 0; k < L.slices.start.length; k++) {
            const t = jl.meta.timeline.tasks[L.slices.task[k]];
            if (t.tid !== tid) continue;
            const s = L.slices.start[k];
            const e = L.slices.end[k];
            run += Math.max(0, Math.min(e, b) - Math.max(s, a));
          }
          return run;
        }, [noise.cpu, c.a, c.b, tid]);
        // Nearly all of the gap, as the account says.
        assert(ran >= g.traced_ns * 0.9, `${name} runs ${ran} ns of the gap on the timeline (the account: ${g.traced_ns} ns traced)`);
      }
    });
  },

  async "the audit's pages look as they did (golden screenshots)"({ browser }) {
    for (const view of ["verdict", "findings", "recommendations", "measured"]) {
      await withReport(browser, reportPath("audit.html"), { hash: `view=${view}` }, async (r) => {
        await r.matchGolden(`audit-${view}`, { mask: [".jl-tabs", ".jl-generator"] });
      });
    }
  },
};
