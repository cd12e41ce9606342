// density.test.mjs: zoomed out, a CPU's row says how busy the CPU was (issue 28, item
// 3): each pixel column's shade is the busy fraction of the CPU in it, the load track
// under the slices draws that fraction, and both agree with analyze's busy time.
import { assert, open, readReportJson, reportPath } from "./harness.mjs";

/** Opens `file` at the timeline, every column decoded, the whole trace in view. */
async function openTimeline(browser, file) {
  const r = await open(browser, file, { hash: "view=timeline", timeout: 60000 });
  await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
  await r.eval(() => window.jitterlab.timeline.fit());
  await r.eval(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true)))));
  return r;
}

/** Per CPU: the mean opacity of its task lane's pixels (a line above the idle line),
 * the mean of its load track, over the columns between its first and last event. */
async function shades(r) {
  return r.eval(() => {
    const tl = window.jitterlab.timeline;
    const c = tl.geometry.canvas();
    const d = window.devicePixelRatio || 1;
    const g = c.getContext("2d");
    const out = {};
    for (const L of window.jitterlab.lanes) {
      const lane = tl.geometry.lane(L.cpu, "task");
      const a = Math.max(tl.geometry.gutter, Math.ceil(tl.geometry.xOf(L.first ?? 0)));
      const b = Math.min(tl.state.width, Math.floor(tl.geometry.xOf(L.last ?? 0)));
      const img = g.getImageData(Math.round(a * d), Math.round((lane.y + 3) * d), Math.round((b - a) * d), 1).data;
      let alpha = 0;
      for (let i = 3; i < img.length; i += 4) alpha += img[i] / 255;
      const load = tl.state.loads.get(L.cpu);
      let sum = 0;
      const g0 = a - tl.geometry.gutter, g1 = b - tl.geometry.gutter;
      for (let p = g0; p < g1; p++) sum += load[p];
      out[L.cpu] = { alpha: alpha / (img.length / 4), load: sum / (g1 - g0) };
    }
    return out;
  });
}

/** analyze's busy fraction per CPU (busy time over its span). */
function busy(name) {
  const cpus = readReportJson(name).data.cpus.cpus;
  return Object.fromEntries(cpus.map((c) => [c.cpu, c.busy_ns / c.span_ns]));
}

export const tests = {
  async "an idle CPU of thousands of short slices is drawn faint, a busy one solid, as busy as analyze says"({ browser }) {
    for (const [name, json] of [["idle.html", "idle.json"], ["disk.html", "disk.json"]]) {
      const want = busy(json);
      const r = await openTimeline(browser, reportPath(name));
      try {
        const got = await shades(r);
        for (const [cpu, b] of Object.entries(want)) {
          const g = got[cpu];
          assert(g, `${name}: CPU ${cpu} drawn`);
          // The load track is the busy fraction, column by column.
          assert(Math.abs(g.load - b) < 0.02 + 0.05 * b, `${name} CPU ${cpu}: load track ${g.load.toFixed(3)}, analyze ${b.toFixed(3)}`);
          // What a person sees: the lane's opacity follows it (a faint floor of 1/16
          // keeps a lone short slice visible).
          assert(Math.abs(g.alpha - b) < 0.08 + 0.1 * b, `${name} CPU ${cpu}: opacity ${g.alpha.toFixed(3)}, analyze ${b.toFixed(3)}`);
        }
      } finally {
        await r.close();
      }
    }
  },

  async "the load track's tooltip says the busy fraction under the pointer"({ browser }) {
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      const p = await r.eval(() => {
        const tl = window.jitterlab.timeline;
        const lane = tl.geometry.lane(window.jitterlab.lanes[0].cpu, "load");
        return { x: tl.geometry.gutter + 200, y: lane.y + lane.h / 2 };
      });
      const box = await r.page.locator("#jl-page-timeline canvas.tl-canvas").boundingBox();
      await r.page.mouse.move(box.x + p.x, box.y + p.y);
      await r.page.waitForTimeout(100);
      const tip = await r.text("#jl-page-timeline .tl-tip");
      assert(/busy \d+(\.\d)?%/.test(tip), `tooltip: ${tip}`);
    } finally {
      await r.close();
    }
  },
};
