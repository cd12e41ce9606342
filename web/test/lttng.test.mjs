// lttng.test.mjs: the page of an LTTng kernel trace folder (issue 30; `jitterlab view DIR`,
// lttng.html, and analyze --json of the same folder, lttng.json): every page shows, the
// timeline has a row per CPU with the tasks named as the state dump names them, and the
// tables are the analysis's.
import { assert, assertEqual, readReportJson, reportPath, rowsOf, withReport } from "./harness.mjs";
import { fmtDur } from "../tables.js";

export const tests = {
  async "an LTTng trace's page: every tab, a row per CPU, the state dump's names, the analysis's chains"({ browser }) {
    const a = readReportJson("lttng.json").data;
    await withReport(browser, reportPath("lttng.html"), async (r) => {
      const tabs = await r.eval(() => window.jitterlab.tabs);
      assertEqual(tabs, ["timeline", "tasks", "summary", "cpus", "tasktable", "irqs", "blame"], "tabs");
      for (const id of tabs) {
        await r.click(`#jl-tab-${id}`);
        assert(await r.page.locator(`#jl-page-${id}`).isVisible(), `page ${id} visible`);
        assertEqual(await r.count(`#jl-page-${id} .jl-error`), 0, `errors shown on page ${id}`);
      }
      assertEqual(await r.text("#jl-source"), `LTTng CTF 1.8 (kernel, 4 streams), 4 CPUs, ${fmtDur(a.summary.span_ns)} from 1412670961.211260 s`, "the source line");
      // The timeline: 4 CPU rows, its tasks named from the events and the state dump.
      await r.click("#jl-tab-timeline");
      const t = await r.eval(() => ({ cpus: window.jitterlab.lanes.map((l) => l.cpu), tasks: window.jitterlab.meta.timeline.tasks }));
      assertEqual(t.cpus, [0, 1, 2, 3], "a row per CPU");
      const byTid = new Map(a.tasks.tasks.map((x) => [x.tid, x]));
      for (const task of t.tasks) {
        if (task.tid === 0) continue;
        assert(task.comm && !task.comm.startsWith("<"), `task ${task.tid} named: ${task.comm}`);
        if (byTid.has(task.tid)) assertEqual(task.comm, byTid.get(task.tid).comm, `task ${task.tid}'s name as analyze's`);
      }
      // eth0 -> sshd through NET_RX, as analyze measures it.
      await r.click("#jl-tab-irqs");
      const c = a.irqs.chains.find((x) => x.irq === 194 && x.comm === "sshd");
      assert(c, "an eth0 -> sshd chain in analyze");
      const [row] = await rowsOf(r, "#jl-chains", `tr[data-irq="194"][data-tid="${c.tid}"]`);
      assert(row, "eth0 -> sshd in the chains table");
      assertEqual([row.IRQ, row["wake-ups"], row.p50, row.p99, row.max], ["194 eth0", String(c.count), fmtDur(c.latency.p50_ns), fmtDur(c.latency.p99_ns), fmtDur(c.latency.max_ns)], "eth0 -> sshd");
      assertEqual(await r.count("#jl-irqs tbody tr"), a.irqs.irqs.length, "IRQ rows");
    });
  },
};
