// compare.test.mjs: a compare page (`jitterlab view A B`, issue 28 item 5): iperf3 over a
// veth pair idle (A, veth.json) and under stress-ng (B, veth-stress.json). The study's
// question answered from the page alone, as analyze --json measures each trace; both
// timelines seen, one over the other, on one time axis; the keys go to the timeline the
// pointer is over; every table as A, B and B/A.
import { assert, assertEqual, compareGolden, readReportJson, reportPath, rowsOf, withReport } from "./harness.mjs";
import { fmtDur, fmtRatio } from "../tables.js";

const PAGE = "veth-compare.html";

/** Presses `key` with the pointer over side `side`'s timeline; both views after the redraw. */
async function keyOver(r, side, key) {
  const box = await r.page.locator(`.cmp-side[data-side="${side}"] .tl-canvas`).boundingBox();
  await r.page.mouse.move(box.x + box.width * 0.6, box.y + 60);
  await r.page.keyboard.press(key);
  return r.eval(() => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(() => res([window.jitterlab.timeline.view, window.jitterlab.timelineB.view])))));
}

/** The iperf3 threads of a result, busiest first (the page pairs them so). */
function iperf3(a) {
  return a.tasks.tasks.filter((t) => t.comm === "iperf3").sort((x, y) => y.run_ns - x.run_ns);
}

export const tests = {
  async "the iperf3 threads and their CPUs, and NET_RX -> iperf3 p50/p99 in both traces, as analyze --json measures each"({ browser }) {
    const a = readReportJson("veth.json").data;
    const b = readReportJson("veth-stress.json").data;
    const net = (x) => x.irqs.softirq_chains.filter((c) => c.name === "NET_RX" && c.comm === "iperf3");
    assert(net(a).length >= 1 && net(b).length >= 1, "NET_RX -> iperf3 chains in both analyses");
    await withReport(browser, reportPath(PAGE), async (r) => {
      assertEqual(await r.eval(() => window.jitterlab.tabs), ["timeline", "summary", "cpus", "tasktable", "irqs", "blame"], "tabs");
      await r.click("#jl-tab-tasktable");
      const rows = await rowsOf(r, "#jl-tasks", 'tr[data-key="iperf3"]');
      const [ta, tb] = [iperf3(a), iperf3(b)];
      assertEqual(rows.length, Math.max(ta.length, tb.length), "iperf3 rows");
      rows.forEach((row, i) => {
        const cpus = (t) => (t ? t.cpus.map((c) => `${c.cpu}: ${fmtDur(c.run_ns)}`).join("\n") : "-");
        assertEqual(row["CPUs A"], cpus(ta[i]), `iperf3 pair ${i}: A's CPUs`);
        assertEqual(row["CPUs B"], cpus(tb[i]), `iperf3 pair ${i}: B's CPUs`);
        assert(row.task.includes(`iperf3-${(ta[i] ?? tb[i]).tid}`), `iperf3 pair ${i}: named ${row.task}`);
      });
      await r.click("#jl-tab-irqs");
      const chains = await rowsOf(r, "#jl-softirq-chains", 'tr[data-key="NET_RX iperf3"]');
      assertEqual(chains.length, Math.max(net(a).length, net(b).length), "NET_RX -> iperf3 rows");
      const ca = net(a)[0], cb = net(b)[0];
      const row = chains[0];
      assertEqual(
        [row["wake-ups A"], row["wake-ups B"], row["p50 A"], row["p50 B"], row["p99 A"], row["p99 B"]],
        [String(ca.count), String(cb.count), fmtDur(ca.latency.p50_ns), fmtDur(cb.latency.p50_ns), fmtDur(ca.latency.p99_ns), fmtDur(cb.latency.p99_ns)],
        "NET_RX -> iperf3, idle and under stress");
      // The ratio beside each figure: B over A.
      const p99 = [...(await r.page.locator("#jl-softirq-chains thead th").allInnerTexts())].findIndex((h) => h.trim() === "p99 B");
      const ratio = await r.eval(([i]) => document.querySelector('#jl-softirq-chains tbody tr[data-key="NET_RX iperf3"]').children[i + 1].innerText.trim(), [p99]);
      assertEqual(ratio, fmtRatio(cb.latency.p99_ns / ca.latency.p99_ns), "p99 B/A");
    });
  },

  async "both timelines are seen one over the other, on one time axis, each scrolled on its own"({ browser }) {
    await withReport(browser, reportPath(PAGE), async (r) => {
      const boxes = await r.eval(() => [...document.querySelectorAll("#jl-page-timeline .tl-canvas")].map((c) => {
        const b = c.getBoundingClientRect();
        return { top: b.top + window.scrollY, bottom: b.bottom + window.scrollY, width: b.width, height: b.height };
      }));
      assertEqual(boxes.length, 2, "two timelines");
      assert(boxes.every((b) => b.width > 600 && b.height > 150), `both drawn at a usable size: ${JSON.stringify(boxes)}`);
      assert(boxes[0].bottom <= boxes[1].top, `A's timeline above B's, not over it: ${JSON.stringify(boxes)}`);
      assertEqual(await r.eval(() => [...document.querySelectorAll(".cmp-title")].map((h) => h.textContent)), ["A: veth-iperf3.dat", "B: veth-iperf3-stress.dat"], "titles");
      // One time axis: moving A moves B to the same window (each from its own start).
      const v = await r.eval(() => {
        window.jitterlab.timeline.goTo(100e6, 200e6);
        return new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(() => res(window.jitterlab.timelineB.view))));
      });
      assertEqual([Math.round(v.t0), Math.round(v.t1)], [100e6, 200e6], "B follows A");
      // The keys go to the timeline under the pointer: unlinked, W over B zooms B alone.
      await r.click(".cmp-link");
      const after = await keyOver(r, "b", "w");
      assert(after[1].t1 - after[1].t0 < 100e6 * 0.9, `W over B zoomed B in: ${JSON.stringify(after[1])}`);
      assertEqual([Math.round(after[0].t0), Math.round(after[0].t1)], [100e6, 200e6], "A stays when unlinked");
      // Linked again, B takes A's window; and over A, W zooms A and B follows.
      await r.click(".cmp-link");
      const both = await keyOver(r, "a", "w");
      assert(both[0].t1 - both[0].t0 < 100e6 * 0.9, `W over A zoomed A in: ${JSON.stringify(both[0])}`);
      assertEqual(both[1], both[0], "B follows A");
      // B's view is in the fragment under its own keys.
      await r.page.waitForFunction(() => /(^|&)b\.t=/.test(location.hash.slice(1)), null, { timeout: 3000 });
      // Each timeline scrolls on its own: scrolling B's rows leaves A's.
      await r.eval(() => {
        const s = document.querySelector('.cmp-side[data-side="b"] .tl-scroll');
        s.scrollTop = 40;
      });
      assertEqual(await r.eval(() => document.querySelector('.cmp-side[data-side="a"] .tl-scroll').scrollTop), 0, "A's rows not scrolled");
    });
  },

  async "the compare page's timelines and tables as a person sees them"({ browser }) {
    await withReport(browser, reportPath(PAGE), async (r) => {
      await r.eval(() => window.jitterlab.timeline.ready.then(() => window.jitterlab.timelineB.ready));
      // The legends of the tasks in view come once the view has been still a moment.
      await r.page.waitForFunction(() => [...document.querySelectorAll(".cmp .tl-legend")].every((l) => l.textContent.trim() !== ""), null, { timeout: 5000 });
      compareGolden("compare-timelines", await r.page.screenshot({ fullPage: true }));
      await r.click("#jl-tab-irqs");
      // Wide tables scroll sideways rather than being cut.
      const clip = await r.eval(() => {
        const t = document.querySelector("#jl-softirq-chains");
        const style = getComputedStyle(document.scrollingElement);
        return { right: t.getBoundingClientRect().right, scroll: document.scrollingElement.scrollWidth, overflow: style.overflowX };
      });
      assert(clip.scroll >= clip.right - 1 && clip.overflow !== "hidden", `the softirq chains table can be scrolled to: ${JSON.stringify(clip)}`);
      compareGolden("compare-irqs", await r.page.screenshot());
    });
  },
};
