// study.test.mjs: the iperf affinity study's questions answered from the page alone, on
// a recording of iperf3 over a veth pair (veth.html, and analyze --json of the same
// trace, veth.json): which CPUs the iperf3 threads ran on, and the NET_RX -> iperf3
// latency (softirq exit -> switch-in) the seed measured with cursors by hand.
import { assert, assertEqual, readReportJson, reportPath, rowsOf, withReport } from "./harness.mjs";
import { fmtDur } from "../tables.js";

export const tests = {
  async "the iperf3 threads, their CPUs, and NET_RX -> iperf3 as analyze --json measures it, from the veth page"({ browser }) {
    const a = readReportJson("veth.json").data;
    const iperf = a.tasks.tasks.filter((t) => t.comm === "iperf3");
    assert(iperf.length >= 2, "iperf3 threads in analyze");
    const net = a.irqs.softirq_chains.filter((c) => c.name === "NET_RX" && c.comm === "iperf3");
    assert(net.length >= 1, "NET_RX -> iperf3 chains in analyze");
    await withReport(browser, reportPath("veth.html"), async (r) => {
      await r.click("#jl-tab-tasktable");
      for (const t of iperf) {
        const [row] = await rowsOf(r, "#jl-tasks", `tr[data-tid="${t.tid}"]`);
        assert(row, `iperf3-${t.tid} in the task table`);
        assertEqual(row.CPUs.split("\n"), t.cpus.map((c) => `${c.cpu}: ${fmtDur(c.run_ns)}`), `iperf3-${t.tid}: CPUs`);
      }
      await r.click("#jl-tab-irqs");
      for (const c of net) {
        const [row] = await rowsOf(r, "#jl-softirq-chains", `tr[data-vec="${c.vec}"][data-tid="${c.tid}"]`);
        assert(row, `NET_RX -> iperf3-${c.tid} in the softirq chains table`);
        assertEqual([row["wake-ups"], row.p50, row.p99, row.max], [String(c.count), fmtDur(c.latency.p50_ns), fmtDur(c.latency.p99_ns), fmtDur(c.latency.max_ns)], `NET_RX -> iperf3-${c.tid}`);
      }
      // Every softirq chain of analyze is a row, and has its histogram.
      assertEqual(await r.count("#jl-softirq-chains tbody tr"), a.irqs.softirq_chains.length, "softirq chain rows");
      assertEqual(await r.count("#jl-page-irqs figure.jl-hist[data-vec]"), a.irqs.softirq_chains.length, "softirq chain histograms");
    });
  },

  async "the worst NET_RX -> iperf3 wake-up's chain in the timeline ends with the softirq exit -> switch-in hop analyze measures"({ browser }) {
    const a = readReportJson("veth.json").data;
    const worst = a.irqs.softirq_chains.filter((c) => c.name === "NET_RX" && c.comm === "iperf3").sort((x, y) => y.latency.max_ns - x.latency.max_ns)[0];
    await withReport(browser, reportPath("veth.html"), async (r) => {
      await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
      const sel = await r.eval(([tid, at]) => {
        const jl = window.jitterlab;
        const origin = jl.meta.timeline.origin_ns;
        for (const L of jl.lanes) {
          const w = L.wakes;
          for (let k = 0; k < w.lat.length; k++) {
            const i = w.slice[k];
            if (jl.meta.timeline.tasks[L.slices.task[i]].tid !== tid || w.waker[k] !== 2) continue;
            // analyze's max_at of a chain is where its latency starts: the softirq's exit.
            const sel = jl.timeline.select({ cpu: L.cpu, slice: i });
            if (sel.wake.hops.at(-1).t0 + origin === at) return sel;
          }
        }
        return null;
      }, [worst.tid, worst.latency.max_at_ns]);
      assert(sel, `a NET_RX wake-up of iperf3-${worst.tid} whose softirq ended at analyze's max_at ${worst.latency.max_at_ns}`);
      const last = sel.wake.hops.at(-1);
      assertEqual(`${last.from} → ${last.to}`, "softirq exit → switch-in", "the last hop");
      assertEqual(last.lat, worst.latency.max_ns, "the hop's latency as analyze's max");
      assertEqual(sel.wake.softirqChainText, fmtDur(worst.latency.max_ns), "the details' softirq chain");
      assertEqual(await r.text("#jl-page-timeline .tl-chain b"), fmtDur(worst.latency.max_ns), "the details panel");
    });
  },
};
