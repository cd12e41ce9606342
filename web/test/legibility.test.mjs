// legibility.test.mjs: what a person sees is whole and in its place (issue 28, item 1):
// a hidden page shows nothing and takes no key, no "null" is printed, tick labels and
// the search box's placeholder are not cut, a cause chain whose start is off-screen is
// drawn inside the plot with its labels in the wake-up strips, and the task view says
// "no wake-up measured" where there is none instead of "worst 0 ns".
import { assert, assertEqual, open, reportPath, withReport } from "./harness.mjs";

/** Opens `file` at the timeline, every column decoded. */
async function openTimeline(browser, file) {
  const r = await open(browser, file, { hash: "view=timeline", timeout: 60000 });
  await r.eval(() => window.jitterlab.timeline.ready.then(() => true));
  return r;
}

/** Waits for two animation frames: whatever was asked to be drawn is. */
async function frames(r) {
  await r.eval(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true)))));
}

/** The pixels of the canvas's rectangle (CSS px) as a string, to compare two paints. */
async function pixels(r, x, y, w, h) {
  return r.eval(([x, y, w, h]) => {
    const c = document.querySelector("#jl-page-timeline canvas.tl-canvas");
    const d = window.devicePixelRatio || 1;
    const img = c.getContext("2d").getImageData(Math.round(x * d), Math.round(y * d), Math.round(w * d), Math.round(h * d)).data;
    let sum = 0, hash = 0;
    for (let i = 0; i < img.length; i++) { sum += img[i]; hash = (hash * 31 + img[i]) | 0; }
    return `${sum}:${hash}`;
  }, [x, y, w, h]);
}

export const tests = {
  async "a page that is not shown shows nothing of the timeline or the task view, and keys do not move them"({ browser }) {
    await withReport(browser, reportPath("disk.html"), async (r) => {
      await r.eval(() => window.jitterlab.timeline?.ready.then(() => true) ?? true);
      await r.click("#jl-tab-tasks");
      await r.click("#jl-tab-irqs");
      for (const sel of [".tl", ".tv"]) {
        assert(await r.page.locator(sel).count() === 1, `${sel} mounted`);
        assert(!(await r.page.locator(sel).isVisible()), `${sel} hidden on the IRQs page`);
      }
      // The IRQs table is where the page starts, not below the window.
      const box = await r.page.locator("#jl-page-irqs table").first().boundingBox();
      assert(box && box.y < 300, `the IRQs table's top at ${box?.y} px`);
      const before = await r.eval(() => { const v = window.jitterlab.timeline.view; return [v.t0, v.t1]; });
      await r.page.mouse.move(700, 400);
      for (const k of ["w", "w", "a", "d", "s"]) await r.press(k);
      const after = await r.eval(() => { const v = window.jitterlab.timeline.view; return [v.t0, v.t1]; });
      assertEqual(after, before, "the hidden timeline's view after W/A/S/D");
    });
  },

  async "no page prints null"({ browser }) {
    // instances.v7.dat's top buffer has no IRQ, softirq or chain: sections left out.
    for (const name of ["instances.html", "idle.html", "disk.html", "veth.html"]) {
      await withReport(browser, reportPath(name), async (r) => {
        for (const id of await r.eval(() => window.jitterlab.tabs)) {
          await r.click(`#jl-tab-${id}`);
          const text = await r.eval((id) => document.getElementById(`jl-page-${id}`).innerText, id);
          assert(!/\bnull\b|\bundefined\b|NaN/.test(text), `${name}, page ${id}: ${text.match(/.{0,40}\b(null|undefined|NaN)\b.{0,40}/s)?.[0]}`);
        }
      });
    }
  },

  async "tick labels of every plot are whole inside their picture"({ browser }) {
    for (const name of ["disk.html", "veth.html", "latency.html"]) {
      await withReport(browser, reportPath(name), async (r) => {
        for (const id of await r.eval(() => window.jitterlab.tabs)) {
          if (id === "timeline" || id === "tasks") continue;
          await r.click(`#jl-tab-${id}`);
          const cut = await r.eval((id) => {
            const out = [];
            for (const svg of document.querySelectorAll(`#jl-page-${id} svg.jl-plot`)) {
              const s = svg.getBoundingClientRect();
              for (const t of svg.querySelectorAll(".jl-axis text")) {
                const b = t.getBoundingClientRect();
                if (b.width && (b.left < s.left - 0.5 || b.right > s.right + 0.5)) out.push(`${t.textContent} [${b.left.toFixed(0)}, ${b.right.toFixed(0)}] in [${s.left.toFixed(0)}, ${s.right.toFixed(0)}]`);
              }
            }
            return out;
          }, id);
          assertEqual(cut, [], `${name}, page ${id}: labels cut`);
        }
      });
    }
  },

  async "the search box shows its whole placeholder"({ browser }) {
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      const room = await r.eval(() => {
        const box = document.querySelector("#jl-page-timeline .tl-search");
        const cs = getComputedStyle(box);
        const g = document.createElement("canvas").getContext("2d");
        g.font = `${cs.fontSize} ${cs.fontFamily}`;
        const inner = box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        return { text: g.measureText(box.placeholder).width, inner };
      });
      assert(room.text <= room.inner, `placeholder ${room.text.toFixed(0)} px in ${room.inner.toFixed(0)} px`);
    } finally {
      await r.close();
    }
  },

  async "a chain whose waking is off-screen is drawn inside the plot, its labels in the wake-up strips"({ browser }) {
    const r = await openTimeline(browser, reportPath("veth.html"));
    try {
      // iperf3's worst wake-up by the NET_RX softirq.
      const hops = await r.eval(() => {
        const jl = window.jitterlab;
        let best = null;
        for (const L of jl.lanes) {
          const w = L.wakes;
          for (let k = 0; k < w.lat.length; k++) {
            const t = jl.meta.timeline.tasks[L.slices.task[w.slice[k]]];
            if (t.comm.startsWith("iperf3") && w.waker[k] === 2 && (!best || w.lat[k] > best.lat)) best = { cpu: L.cpu, slice: w.slice[k], lat: w.lat[k] };
          }
        }
        return jl.timeline.select(best).wake.hops.map((h) => [h.t0, h.t1]);
      });
      assert(hops.length >= 2, `hops ${hops}`);
      // From the middle of the chain on: its start is left of the plot.
      const span = hops.at(-1)[1] - hops[0][0];
      await r.eval(([a, b]) => window.jitterlab.timeline.goTo(a, b), [hops[0][0] + span / 2, hops.at(-1)[1] + span / 2]);
      await frames(r);
      const L = await r.eval(() => {
        const tl = window.jitterlab.timeline;
        return { gutter: tl.geometry.gutter, width: tl.state.width, height: tl.state.height, labels: tl.state.chainLabels };
      });
      // The CPU names' column is as without the chain.
      const gutter = await pixels(r, 0, 0, L.gutter, L.height);
      await r.press("Escape");
      await frames(r);
      const plain = await pixels(r, 0, 0, L.gutter, L.height);
      assertEqual(gutter, plain, "the gutter's pixels with and without the chain");
      // Each label whole inside the plot, in a wake-up strip, none over another.
      assert(L.labels.length >= 1, "a hop label is drawn");
      const strips = await r.eval(() => window.jitterlab.lanes.map((l) => {
        const g = window.jitterlab.timeline.geometry.lane(l.cpu, "lat");
        return g.y + g.h / 2;
      }));
      for (const [x, y, w, text] of L.labels) {
        assert(x >= L.gutter && x + w <= L.width, `${text} at ${x}..${x + w} in [${L.gutter}, ${L.width}]`);
        assert(strips.some((m) => Math.abs(y + 6.5 - m) < 1), `${text} at y ${y} in a wake-up strip ${strips}`);
      }
      for (let i = 0; i < L.labels.length; i++) {
        for (let j = i + 1; j < L.labels.length; j++) {
          const [a, b] = [L.labels[i], L.labels[j]];
          assert(a[1] !== b[1] || a[0] + a[2] <= b[0] || b[0] + b[2] <= a[0], `labels ${a[3]} and ${b[3]} overlap`);
        }
      }
    } finally {
      await r.close();
    }
  },

  async "the task view says no wake-up measured where there is none, never worst 0 ns"({ browser }) {
    let without = 0;
    for (const name of ["disk.html", "instances.html", "idle.html", "veth.html"]) {
      await withReport(browser, reportPath(name), async (r) => {
        await r.click("#jl-tab-tasks");
        const rows = await r.texts("#jl-page-tasks .tv-task");
        assert(rows.length > 0, `${name}: task rows`);
        assert(!rows.some((t) => /worst 0 ns/.test(t)), `${name}: ${rows.find((t) => /worst 0 ns/.test(t))}`);
        // Each row's word against the model: a worst where a wake-up was measured.
        const measured = await r.eval(() => {
          const jl = window.jitterlab, n = jl.meta.timeline.tasks.length, m = new Array(n).fill(false);
          for (const L of jl.lanes) for (const i of L.wakes.slice) m[L.slices.task[i]] = true;
          return [...document.querySelectorAll("#jl-page-tasks .tv-task")].map((b) => [b.textContent, m[Number(b.dataset.task)]]);
        });
        for (const [text, has] of measured) assertEqual(/worst /.test(text), has, `${name}: ${text}`);
        without += measured.filter(([, has]) => !has).length;
      });
    }
    assert(without > 0, "a task without a measured wake-up in one of the reports");
  },

  async "? opens a help over the timeline with every key and gesture, whole in the window; ? or Esc closes it"({ browser }) {
    const r = await openTimeline(browser, reportPath("disk.html"));
    try {
      const help = r.page.locator("#jl-page-timeline .tl-keys");
      assert(!(await help.isVisible()), "hidden at first");
      await r.press("?");
      assert(await help.isVisible(), "shown by ?");
      const text = await help.innerText();
      for (const k of ["W / S", "A / D", "F", "shift + click", "shift + drag", "N / shift + N", "Esc", "/", "load track"]) assert(text.includes(k), `the help names ${k}`);
      const box = await help.boundingBox();
      const vp = r.page.viewportSize();
      assert(box.x >= 0 && box.y >= 0 && box.x + box.width <= vp.width && box.y + box.height <= vp.height, `whole in the window: ${JSON.stringify(box)}`);
      await r.press("Escape");
      assert(!(await help.isVisible()), "closed by Esc");
      await r.click("#jl-page-timeline .tl-help");
      assert(await help.isVisible(), "shown by the toolbar's button");
      await r.press("?");
      assert(!(await help.isVisible()), "closed by ?");
    } finally {
      await r.close();
    }
  },
};
