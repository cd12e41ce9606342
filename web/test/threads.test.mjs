// threads.test.mjs: thread rows (issue 28, item 2): a row per pinned thread under the CPU
// rows, from `view --pin`, the search or a click, kept in the URL; where it ran coloured
// by CPU, its wake-up marks, a click on it selecting the slice; and rows that fill the
// window's height, made taller or lower by the user.
import { assert, assertEqual, open, readReportJson, reportPath } from "./harness.mjs";

async function openTimeline(browser, file, hash = "view=timeline") {
  const r = await open(browser, file, { hash, timeout: 60000 });
  await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
  await frames(r);
  return r;
}

async function frames(r) {
  await r.eval(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true)))));
}

/** The colour of the canvas pixel at (x, y) in CSS px, as #rrggbb. */
async function pixel(r, x, y) {
  return r.eval(([x, y]) => {
    const c = window.jitterlab.timeline.geometry.canvas();
    const d = window.devicePixelRatio || 1;
    const p = c.getContext("2d").getImageData(Math.round(x * d), Math.round(y * d), 1, 1).data;
    return "#" + [p[0], p[1], p[2]].map((v) => v.toString(16).padStart(2, "0")).join("");
  }, [x, y]);
}

export const tests = {
  async "view --pin iperf3 opens with a row per iperf3 thread, where it ran coloured by CPU"({ browser }) {
    const a = readReportJson("veth.json").data;
    const iperf = a.tasks.tasks.filter((t) => t.comm === "iperf3");
    const r = await openTimeline(browser, reportPath("veth-pinned.html"));
    try {
      const pins = await r.eval(() => window.jitterlab.timeline.pins.map((k) => window.jitterlab.meta.timeline.tasks[k].tid));
      assertEqual(pins.sort(), iperf.map((t) => t.tid).sort(), "pinned tids");
      for (const t of iperf) {
        // Its longest instance, zoomed to: the row's pixels there are its CPU's colour.
        const probe = await r.eval((tid) => {
          const tl = window.jitterlab.timeline;
          const k = tl.pins.find((x) => window.jitterlab.meta.timeline.tasks[x].tid === tid);
          const tr = tl.state.model.track(k);
          let best = 0;
          for (let j = 1; j < tr.n; j++) if (tr.end[j] - tr.start[j] > tr.end[best] - tr.start[best]) best = j;
          tl.goTo(tr.start[best] - (tr.end[best] - tr.start[best]), tr.end[best] + (tr.end[best] - tr.start[best]));
          return { k, cpu: tr.cpu[best], n: tr.n, mid: (tr.start[best] + tr.end[best]) / 2 };
        }, t.tid);
        assertEqual(probe.n, t.instances.count, `iperf3-${t.tid}: instances in its row`);
        await frames(r);
        const at = await r.eval(([k, mid]) => {
          const tl = window.jitterlab.timeline;
          const lane = tl.geometry.threadLane(k, "task");
          return { x: tl.geometry.xOf(mid), y: lane.y + lane.h / 2 };
        }, [probe.k, probe.mid]);
        const want = await r.eval((cpu) => ["#1f6fd1", "#d1541f", "#2a9d3a", "#9b3dc4", "#b8930a", "#0f9a9a", "#c4356f", "#5d6d7e"][cpu % 8], probe.cpu);
        assertEqual(await pixel(r, at.x, at.y), want, `iperf3-${t.tid}: the colour of CPU ${probe.cpu}`);
        // A click there selects that instance (its details and chain).
        const box = await r.page.locator("#jl-page-timeline canvas.tl-canvas").boundingBox();
        await r.page.mouse.click(box.x + at.x, box.y + at.y);
        const sel = await r.eval(() => window.jitterlab.timeline.selection);
        assertEqual([sel.tid, sel.cpu], [t.tid, probe.cpu], `iperf3-${t.tid}: the click's selection`);
      }
      // The worst wake-up of the server thread is marked in its row's wake-up strip.
      const marked = await r.eval(() => {
        const tl = window.jitterlab.timeline;
        const k = tl.pins.find((x) => window.jitterlab.meta.timeline.tasks[x].tid === 16144);
        const tr = tl.state.model.track(k);
        let best = -1;
        for (let j = 0; j < tr.n; j++) if (tr.lat[j] >= 0 && (best < 0 || tr.lat[j] > tr.lat[best])) best = j;
        tl.goTo(tr.start[best] - 2e6, tr.start[best] + 2e6);
        return { k, t: tr.start[best], lat: tr.lat[best] };
      });
      await frames(r);
      const strip = await r.eval(([k, t]) => {
        const tl = window.jitterlab.timeline;
        const lane = tl.geometry.threadLane(k, "lat");
        return { x: tl.geometry.xOf(t), y: lane.y + lane.h - 2 };
      }, [marked.k, marked.t]);
      assertEqual(await pixel(r, strip.x, strip.y), marked.lat > 100e3 ? "#e0201b" : "#4a78b5", "the worst wake-up's mark");
    } finally {
      await r.close();
    }
  },

  async "the search's tasks and a clicked slice's thread are pinned, and the URL keeps them"({ browser }) {
    let url;
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      await r.page.fill("#jl-page-timeline .tl-search", "dd");
      await r.page.press("#jl-page-timeline .tl-search", "Enter");
      await r.click("#jl-page-timeline [data-act=pin]");
      const dd = await r.eval(() => window.jitterlab.timeline.pins.map((k) => window.jitterlab.meta.timeline.tasks[k].comm));
      assert(dd.length >= 2 && dd.every((c) => c === "dd"), `pinned ${dd}`);
      // A stress-ng slice, clicked, then its thread pinned from the details.
      await r.eval(() => {
        const jl = window.jitterlab;
        const L = jl.lanes[0];
        const i = L.slices.task.findIndex((k) => jl.meta.timeline.tasks[k].comm.startsWith("stress-ng"));
        return jl.timeline.select({ cpu: L.cpu, slice: i });
      });
      await r.click("#jl-page-timeline .tl-details [data-pin-task]");
      const pins = await r.eval(() => window.jitterlab.timeline.pins.map((k) => window.jitterlab.meta.timeline.tasks[k].tid));
      assertEqual(pins.length, dd.length + 1, "one more row");
      // Their rows are drawn under the CPU rows, and the page is taller for them.
      assertEqual(await r.count("#jl-page-timeline .tl-pinned [data-unpin]"), pins.length, "listed with an unpin button");
      await r.page.waitForFunction(() => /[#&]pin=/.test(location.hash), null, { timeout: 5000 });
      url = await r.eval(() => location.href);
      assert(/[#&]pin=/.test(url), url);
      await r.click("#jl-page-timeline .tl-pinned [data-unpin]");
      assertEqual((await r.eval(() => window.jitterlab.timeline.pins)).length, pins.length - 1, "unpinned one");
    } finally {
      await r.close();
    }
    const r2 = await openTimeline(browser, reportPath("disk.html"), url.split("#")[1]);
    try {
      assertEqual((await r2.eval(() => window.jitterlab.timeline.pins)).length >= 3, true, "pins from the URL");
    } finally {
      await r2.close();
    }
  },

  async "the rows fill the window's height, and ▴ ▾ make them taller or lower"({ browser }) {
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      const fill = await r.eval(() => {
        const tl = window.jitterlab.timeline;
        const last = tl.geometry.lane(window.jitterlab.lanes.at(-1).cpu, "lat");
        return { bottom: last.y + last.h, height: tl.state.height, vh: window.innerHeight };
      });
      // 2 CPUs: their rows reach the bottom of a timeline of most of the window.
      assert(fill.height >= 0.6 * fill.vh, `the timeline ${fill.height} px of ${fill.vh}`);
      assert(fill.bottom >= 0.9 * fill.height, `the rows end at ${fill.bottom} of ${fill.height} px`);
      const h0 = await r.eval(() => window.jitterlab.timeline.geometry.lane(0, "task").h);
      await r.click("#jl-page-timeline [data-act=rows-less]");
      await r.click("#jl-page-timeline [data-act=rows-less]");
      const h1 = await r.eval(() => window.jitterlab.timeline.geometry.lane(0, "task").h);
      assert(h1 < h0, `lower: ${h0} -> ${h1}`);
      await r.click("#jl-page-timeline [data-act=rows-more]");
      await r.click("#jl-page-timeline [data-act=rows-more]");
      await r.click("#jl-page-timeline [data-act=rows-more]");
      const h2 = await r.eval(() => window.jitterlab.timeline.geometry.lane(0, "task").h);
      assert(h2 > h0, `taller: ${h0} -> ${h2}`);
    } finally {
      await r.close();
    }
  },
};
